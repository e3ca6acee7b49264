// `tandem train`: the default model learns the default data to a stated accuracy, the same way
// every run; a resumed run continues bit-exactly; mistakes get exit code 2.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/serialize/safetensors.h"
#include "tests/testing.h"
#include "core/trace.h"
#include "tools/train.h"

namespace td = tandem;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  static const std::string dir = td::testing::scratch_dir("train_test");
  return dir + "/" + name;
}

td::train::Options quiet(td::train::Options o) {
  o.progress = false;
  return o;
}

// Every tensor of two checkpoints the same, bit for bit.
void check_same_tensors(const td::StateDict& x, const td::StateDict& y) {
  REQUIRE(x.size() == y.size());
  for (const auto& [name, t] : x) {
    INFO(name);
    const td::Tensor& u = y.at(name);
    REQUIRE(u.nbytes() == t.nbytes());
    CHECK(std::memcmp(u.data_ptr(), t.data_ptr(), t.nbytes()) == 0);
  }
}

// Runs with o and checks that it stops with a UsageError mentioning fragment.
void usage_error(const td::train::Options& o, const std::string& fragment) {
  std::ostringstream log;
  try {
    td::train::run(quiet(o), log);
    FAIL_CHECK("no error for " << fragment);
  } catch (const td::train::UsageError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains(fragment));
  }
}

}  // namespace

TEST_CASE("the default MLP reaches 93% held-out accuracy on the default data in 3 epochs, every run alike", "[cpu]") {
  std::ostringstream log1, log2;
  td::train::Result a = td::train::run(quiet({}), log1);
  td::train::Result b = td::train::run(quiet({}), log2);
  INFO(log1.str());
  CHECK(a.test_accuracy >= 0.93);
  CHECK(a.steps == 3 * ((20000 + 63) / 64));
  CHECK(a.epoch_losses == b.epoch_losses);  // bit for bit
  CHECK(a.test_accuracy == b.test_accuracy);
  CHECK(a.epoch_losses[2] < a.epoch_losses[0]);
}

TEST_CASE("a checkpoint keeps every device's generator, and resuming puts each back", "[cpu]") {
  const td::Device cpu1("cpu:1");
  td::train::Options o = quiet({});
  o.train_size = 500;
  o.test_size = 100;
  o.epochs = 1;
  o.seed = 3;
  td::rand({3}, cpu1);  // cpu:1's generator is in use: dropout in a replica there would draw from it
  o.save = temp_path("generators.safetensors");
  std::ostringstream log;
  td::train::run(o, log);
  td::StateDict saved = td::load(o.save);
  REQUIRE(saved.metadata.count("run.rng_offset.cpu:1") == 1);
  CHECK(saved.metadata.at("run.rng_seed.cpu:1") == std::to_string(td::device_seed(3, cpu1)));
  CHECK(saved.metadata.count("run.rng_offset.cpu:0") == 0);  // cpu:0's keys are run.rng_seed and run.rng_offset
  saved.metadata["run.rng_offset.cpu:1"] = "12345";
  td::save(saved, o.save);
  o.resume = o.save;
  o.epochs = 2;
  o.save = temp_path("generators_resumed.safetensors");
  td::train::run(o, log);
  CHECK(td::default_generator(cpu1).state().offset == 12345);
  CHECK(td::default_generator(cpu1).state().seed == td::device_seed(3, cpu1));
}

TEST_CASE("a run resumed from a checkpoint ends exactly where the uninterrupted run does", "[cpu]") {
  for (const char* optimizer : {"sgd", "adamw"}) {
    INFO(optimizer);
    td::train::Options o = quiet({});
    o.train_size = 3000;
    o.test_size = 500;
    o.optimizer = optimizer;
    o.epochs = 3;
    o.save = temp_path(std::string("full_") + optimizer + ".safetensors");
    std::ostringstream log;
    td::train::Result full = td::train::run(o, log);

    o.epochs = 1;
    o.save = temp_path(std::string("part_") + optimizer + ".safetensors");
    td::train::run(o, log);
    o.epochs = 3;
    o.resume = o.save;
    o.save = temp_path(std::string("resumed_") + optimizer + ".safetensors");
    td::train::Result resumed = td::train::run(o, log);

    CHECK(resumed.steps == full.steps);
    CHECK(resumed.epoch_losses.back() == full.epoch_losses.back());
    check_same_tensors(td::load(temp_path(std::string("full_") + optimizer + ".safetensors")), td::load(o.save));
  }
}

TEST_CASE("a data-parallel run with dropout, resumed from a checkpoint, ends exactly where the uninterrupted run does",
          "[cpu]") {
  // Each replica's dropout draws from its own device's generator; the checkpoint keeps every one.
  td::train::Options o = quiet({});
  o.train_size = 1200;
  o.test_size = 200;
  o.devices = "cpu:0,cpu:1";
  o.dropout = 0.3;
  o.epochs = 2;
  o.save = temp_path("dropout_full.safetensors");
  std::ostringstream log;
  td::train::Result full = td::train::run(o, log);
  td::train::Options plain = o;
  plain.dropout = 0;
  plain.save = "";
  CHECK(td::train::run(plain, log).epoch_losses != full.epoch_losses);  // the dropout layers are at work

  o.epochs = 1;
  o.save = temp_path("dropout_part.safetensors");
  td::train::run(o, log);
  td::rand({1000}, td::Device("cpu:1"));  // whatever ran in between moved cpu:1's stream
  o.epochs = 2;
  o.resume = o.save;
  o.save = temp_path("dropout_resumed.safetensors");
  td::train::Result resumed = td::train::run(o, log);
  CHECK(resumed.steps == full.steps);
  CHECK(resumed.epoch_losses.back() == full.epoch_losses.back());
  check_same_tensors(td::load(temp_path("dropout_full.safetensors")), td::load(o.save));
}

TEST_CASE("--devices over several CPU devices trains data-parallel to the same model, and ends with the device table",
          "[cpu]") {
  td::train::Options o = quiet({});
  o.epochs = 2;
  o.train_size = 2000;
  o.test_size = 500;
  std::ostringstream single_log, parallel_log;
  td::train::Result single = td::train::run(o, single_log);
  o.devices = "cpu:1,cpu:0,cpu:2";
  td::train::Result parallel = td::train::run(o, parallel_log);
  INFO(parallel_log.str());
  CHECK(parallel.steps == single.steps);
  // float32 sums in another order: close, not bit-equal.
  for (size_t e = 0; e < 2; ++e) CHECK(parallel.epoch_losses[e] == Approx(single.epoch_losses[e]).epsilon(1e-3));
  CHECK(std::abs(parallel.test_accuracy - single.test_accuracy) <= 0.01);
  const std::string log = parallel_log.str();
  CHECK(log.find("data parallel over cpu:1,cpu:0,cpu:2") != std::string::npos);
  for (const char* row : {"cpu:0", "cpu:1", "cpu:2", "reduce_add_coalesced", "backward"}) {
    CHECK(log.find(row, log.find("the last step per device")) != std::string::npos);
  }
}

TEST_CASE("tandem trace prints the phase table and writes a Chrome trace with a row per device", "[cpu]") {
  td::train::TraceOptions o;
  o.devices = "cpu:0,cpu:1";
  o.steps = 2;
  o.batch_size = 64;
  o.trace = temp_path("trace.json");
  std::ostringstream log;
  td::train::trace(o, log);
  td::trace::set_output("");  // stop tracing
  CHECK(log.str().find("step 2") != std::string::npos);
  std::ifstream in(o.trace);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  REQUIRE_FALSE(json.empty());
  auto parsed = nlohmann::json::parse(json);  // well-formed
  std::set<std::string> rows, names;
  for (const auto& e : parsed["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") rows.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") names.insert(e["name"].get<std::string>());
  }
  CHECK(rows == std::set<std::string>{"comm", "cpu:0", "cpu:1"});
  for (const char* name : {"scatter", "forward", "gather", "AddmmBackward0", "reduce_add_coalesced", "update"}) {
    CHECK(names.count(name) == 1);
  }
  CHECK(names.count("broadcast_coalesced") == 0);  // cpu:1's replica reads the parameters in place
}

TEST_CASE("--amp bf16 and fp16 train data-parallel to float32's accuracy, fp16 with loss scaling", "[cpu]") {
  td::train::Options o = quiet({});
  o.epochs = 2;
  o.train_size = 3000;
  o.test_size = 500;
  o.devices = "cpu:0,cpu:1";
  std::ostringstream full_log;
  td::train::Result full = td::train::run(o, full_log);
  for (const char* amp : {"bf16", "fp16"}) {
    INFO(amp);
    o.amp = amp;
    std::ostringstream log;
    td::train::Result mixed = td::train::run(o, log);
    INFO(log.str());
    CHECK(mixed.epoch_losses[1] < mixed.epoch_losses[0]);
    CHECK(mixed.epoch_losses[1] == Approx(full.epoch_losses[1]).epsilon(0.05));
    CHECK(std::abs(mixed.test_accuracy - full.test_accuracy) <= 0.03);
    CHECK(mixed.epoch_losses != full.epoch_losses);  // it did run in 16 bits
    const bool half = std::string(amp) == "fp16";
    CHECK(log.str().find(half ? "autocast float16 with loss scaling" : "autocast bfloat16\n") != std::string::npos);
    CHECK((log.str().find("loss scaling: 0 steps skipped") != std::string::npos) == half);
  }
}

TEST_CASE("an fp16 run resumed from a checkpoint keeps its loss scaler and ends where the uninterrupted run does",
          "[cpu]") {
  td::train::Options o = quiet({});
  o.train_size = 1000;
  o.test_size = 200;
  o.amp = "fp16";
  o.epochs = 2;
  o.save = temp_path("fp16_full.safetensors");
  std::ostringstream log;
  td::train::Result full = td::train::run(o, log);
  o.epochs = 1;
  o.save = temp_path("fp16_part.safetensors");
  td::train::run(o, log);
  td::StateDict part = td::load(o.save);
  CHECK(part.metadata.at("run.amp") == "fp16");
  CHECK(part.metadata.at("scaler.scale") == "65536");
  CHECK(part.metadata.at("scaler._growth_tracker") == std::to_string(full.steps / 2));
  o.epochs = 2;
  o.resume = o.save;
  o.save = temp_path("fp16_resumed.safetensors");
  td::train::Result resumed = td::train::run(o, log);
  CHECK(resumed.epoch_losses.back() == full.epoch_losses.back());
  td::StateDict x = td::load(temp_path("fp16_full.safetensors")), y = td::load(o.save);
  // The tracker counts on from the checkpoint's, not from 0.
  CHECK(y.metadata.at("scaler._growth_tracker") == std::to_string(full.steps));
  CHECK(y.metadata.at("scaler._growth_tracker") == x.metadata.at("scaler._growth_tracker"));
  check_same_tensors(x, y);
  // The scale itself comes back too: a checkpoint whose scaler had backed off to 1024.
  part.metadata["scaler.scale"] = "1024";
  td::save(part, temp_path("fp16_backed_off.safetensors"));
  o.resume = temp_path("fp16_backed_off.safetensors");
  o.save = temp_path("fp16_backed_off_resumed.safetensors");
  td::train::run(o, log);
  CHECK(td::load(o.save).metadata.at("scaler.scale") == "1024");
}

TEST_CASE("bad options, unreadable data and mismatched checkpoints are usage errors", "[cpu]") {
  std::ostringstream log;
  td::train::Options o;
  o.model = "transformer";
  usage_error(o, "--model");
  o = {};
  o.data = "mnist:/nonexistent";
  usage_error(o, "cannot read the data");
  o = {};
  o.data = "imagenet";
  usage_error(o, "--data");
  o = {};
  o.devices = "cpu:0,,cpu:1";
  usage_error(o, "empty entry");
  o = {};
  o.devices = "cpu:0,cpu:0";
  usage_error(o, "twice");
  o = {};
  o.devices = "cuda:7";
  usage_error(o, "not available");
  o = {};
  o.resume = temp_path("missing.safetensors");
  usage_error(o, "cannot resume");
  o = {};
  o.train_size = 200;
  o.test_size = 50;
  o.epochs = 1;
  o.save = temp_path("mlp.safetensors");
  td::train::run(quiet(o), log);
  o.model = "cnn";
  o.resume = o.save;
  o.save = "";
  usage_error(o, "--model mlp");
  o.model = "mlp";
  o.dropout = 0.2;
  usage_error(o, "--dropout 0, not 0.2");
  o.batch_size = 32;
  usage_error(o, "--batch-size 64, not 32");  // as the command line spells it
  o.batch_size = 64;
  o.dropout = 0;
  o.amp = "bf16";
  usage_error(o, "--amp off, not bf16");
  o = {};
  o.amp = "fp8";
  o.data = "mnist:/no/such/folder";  // the flag is checked before any data is read
  usage_error(o, "--amp must be off, bf16 or fp16");

  // Numbers are compared in full: a rate that differs in its 7th digit makes another run.
  o = {};
  o.train_size = 200;
  o.test_size = 50;
  o.epochs = 1;
  o.lr = 0.1234567;
  o.save = temp_path("exact_lr.safetensors");
  td::train::run(quiet(o), log);
  CHECK(td::load(o.save).metadata.at("run.lr") == "0.1234567");
  o.resume = o.save;
  o.save = "";
  o.epochs = 2;
  o.lr = 0.1234571;
  usage_error(o, "--lr 0.1234567, not 0.1234571");
  // A checkpoint made before --dropout existed holds its numbers to 6 digits: still resumed.
  td::StateDict old = td::load(o.resume);
  old.metadata.erase("run.dropout");
  old.metadata.erase("run.amp");  // nor --amp: made without mixed precision
  old.metadata["run.lr"] = "0.123457";
  td::save(old, o.resume);
  o.lr = 0.1234567;
  CHECK_NOTHROW(td::train::run(quiet(o), log));
  o = {};
  o.dropout = 1;
  o.data = "mnist:/no/such/folder";  // the flag is checked before any data is read
  usage_error(o, "--dropout must be in [0, 1)");
  o = {};
  o.lr = std::nan("");
  usage_error(o, "--lr must be a finite number");  // it trained at the default rate
  o = {};
  o.save = "/nonexistent/folder/x.safetensors";
  o.data = "mnist:/no/such/folder";  // checked before any data is read, not after an epoch
  usage_error(o, "--save /nonexistent/folder/x.safetensors: the folder /nonexistent/folder does not exist");
  o.save = td::testing::scratch_dir("train_test");
  usage_error(o, "is a folder, not a file");
}

TEST_CASE("a resume checks its checkpoint's run and counts before it changes anything", "[cpu]") {
  std::ostringstream log;
  td::train::Options o;
  o.train_size = 200;
  o.test_size = 50;
  o.epochs = 1;
  o.save = temp_path("one_epoch.safetensors");
  td::train::run(quiet(o), log);
  const td::StateDict saved = td::load(o.save);
  CHECK(saved.metadata.at("run.lr") == "0.05");  // the rate it ran at, also where it was the default
  CHECK(saved.metadata.at("run.train_size") == "200");
  o.resume = o.save;
  o.save = "";
  // Nothing left to run: it printed a held-out accuracy of 0% and a checkpoint it never wrote.
  usage_error(o, "already holds 1 epochs of training; ask for more with --epochs (1 now)");
  o.epochs = 2;
  o.train_size = 300;  // other generated data: another run
  usage_error(o, "--train-size 200, not 300");
  o.train_size = 200;
  o.lr = 0.05;  // the default, asked for by its value: the same run
  CHECK_NOTHROW(td::train::run(quiet(o), log));
  // A checkpoint of a default rate kept as 0 (before the rate itself was kept) resumes too.
  td::StateDict older = saved;
  older.metadata["run.lr"] = "0";
  older.metadata.erase("run.train_size");
  older.metadata.erase("run.test_size");
  td::save(older, temp_path("older.safetensors"));
  o.resume = temp_path("older.safetensors");
  CHECK_NOTHROW(td::train::run(quiet(o), log));
  // Damaged counters are usage errors (stoull threw past the command's handlers, or wrapped "-5").
  for (const auto& [key, text] : std::vector<std::pair<std::string, std::string>>{
           {"run.next_epoch", "x"}, {"run.steps", "-5"}, {"run.rng_offset", "1e3"}, {"run.next_epoch", ""}}) {
    td::StateDict damaged = saved;
    damaged.metadata[key] = text;
    td::save(damaged, temp_path("damaged.safetensors"));
    o.resume = temp_path("damaged.safetensors");
    usage_error(o, "is damaged (" + key + " is '" + text + "'");
  }
}

TEST_CASE("the tandem command exits with 2 on bad flags and data, 0 on success", "[cpu]") {
  auto status = [](const std::string& args) {
    int rc = std::system(("tools/tandem " + args + " > /dev/null 2>&1").c_str());
    return WEXITSTATUS(rc);
  };
  CHECK(status("train --model foo") == 2);
  CHECK(status("train --epochs 0") == 2);
  CHECK(status("train --dropout 1") == 2);  // [0, 1)
  CHECK(status("train --dropout -0.1") == 2);
  CHECK(status("train --epochs 1 --train-size 64 --test-size 16 --dropout 0.9999999") == 0);
  CHECK(status("train --data cifar10:/nonexistent") == 2);
  CHECK(status("train --amp fp8") == 2);
  CHECK(status("train --epochs 1 --train-size 64 --test-size 16 --amp bf16") == 0);
  CHECK(status("nosuchcommand") == 2);
  CHECK(status("train --epochs 1 --train-size 200 --test-size 50") == 0);
}

TEST_CASE("the tandem command reads numbers in base 10 and says plainly what is wrong with one", "[cpu]") {
  auto run = [](const std::string& args) { return td::testing::run_command("tools/tandem " + args); };
  // CLI11's own messages bounded these with 300-digit numbers.
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"train --epochs 0", "--epochs: must be at least 1, got 0"},
           {"train --epochs abc", "--epochs: 'abc' is not a whole number"},
           {"train --epochs 99999999999999999999", "'99999999999999999999' is too large"},
           {"train --batch-size 0x10", "--batch-size: '0x10' is not a whole number"},
           {"train --seed -1", "--seed: '-1' is not a whole number"},
           {"train --lr 0", "--lr: must be above 0, got 0"},
           {"train --lr nan", "--lr: 'nan' is not a finite number"},
           {"train --dropout 1", "--dropout: must be in [0, 1), got 1"},
           {"trace --steps -2", "--steps: must be at least 1, got -2"},
           {"train --devices cpu:0,", "empty entry"}}) {
    INFO(args);
    auto [rc, output] = run(args);
    CHECK(rc == 2);
    CHECK_THAT(output, Catch::Matchers::Contains(says));
    CHECK_THAT(output, !Catch::Matchers::Contains("1797693"));
  }
  // 010 is ten, not eight: a batch of 10 over 20 examples is 2 steps.
  auto [rc, output] = run("train --epochs 1 --train-size 20 --test-size 10 --batch-size 010 --workers 0");
  CHECK(rc == 0);
  CHECK_THAT(output, Catch::Matchers::Contains("batch 10,"));
}

TEST_CASE("TANDEM_TRACE set when tandem starts writes the trace of a data-parallel run", "[cpu]") {
  const std::string path = temp_path("env_trace.json");
  std::remove(path.c_str());
  const std::string command = "TANDEM_TRACE=" + path +
                              " tools/tandem train --epochs 1 --train-size 256 --test-size 64 --devices cpu:0,cpu:1"
                              " > /dev/null 2>&1";
  REQUIRE(WEXITSTATUS(std::system(command.c_str())) == 0);
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json parsed = nlohmann::json::parse(in);
  std::set<std::string> names;
  for (const auto& e : parsed["traceEvents"]) {
    if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name") names.insert(e["args"]["name"].get<std::string>());
  }
  CHECK(names.count("cpu:0") == 1);
  CHECK(names.count("cpu:1") == 1);
  CHECK(names.count("comm") == 1);
}

TEST_CASE("--devices all trains over every visible CPU device; a TANDEM_COMM of neither kind is an error", "[cpu]") {
  const std::string log = temp_path("devices_all.log");
  auto run = [&](const std::string& env, const std::string& devices) {
    const std::string command = env + " tools/tandem train --epochs 1 --train-size 256 --test-size 64 --devices " +
                                devices + " > " + log + " 2>&1";
    const int rc = WEXITSTATUS(std::system(command.c_str()));
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    return std::pair{rc, text.str()};
  };
  auto [rc, out] = run("TANDEM_CPU_DEVICES=3", "all");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("data parallel over cpu:0,cpu:1,cpu:2") != std::string::npos);
  auto [bad_rc, bad_out] = run("TANDEM_COMM=bogus", "cpu:0,cpu:1");
  INFO(bad_out);
  CHECK(bad_rc == 1);
  CHECK(bad_out.find("TANDEM_COMM='bogus': expected kernels or nccl") != std::string::npos);
}
