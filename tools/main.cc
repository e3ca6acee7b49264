// The `tandem` command line: train, trace, demo, devices, bench.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <charconv>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>

#include "core/cuda.h"
#include "tandem.h"
#include "tools/bench/bench.h"
#include "tools/demo.h"
#include "tools/train.h"

namespace td = tandem;

namespace {

int devices() {
  fmt::print("cpu:N   any index; {} intra-op threads (TANDEM_NUM_THREADS)\n", td::num_threads());
  std::string visible;
  for (const td::Device& d : td::parallel::visible_devices()) {
    if (!visible.empty()) visible += ',';
    visible += d.str();
  }
  fmt::print("data parallel over all devices (--devices all): {}\n", visible);
  if (!td::cuda::built_with_cuda()) {
    fmt::print("cuda    this build has no CUDA support\n");
    return 0;
  }
  int n = td::cuda::device_count();
  fmt::print("cuda    {} device{} (CUDA runtime {}, driver {}){}\n", n, n == 1 ? "" : "s", td::cuda::runtime_version(),
             td::cuda::driver_version(), n == 0 ? ": " + td::cuda::unavailable_reason() : "");
  for (int d = 0; d < n; ++d) {
    auto p = td::cuda::get_device_properties(d);
    fmt::print("cuda:{}  {} (GPU {}), {:.1f} GiB, compute capability {}.{}, {} SMs\n", d, p.name, p.physical_index,
               static_cast<double>(p.total_memory) / (1 << 30), p.major, p.minor, p.multiprocessors);
  }
  return 0;
}

// Whole numbers in base 10, at least `least`. CLI11 alone reads 010 as octal and 0x10 as hex,
// lets a value beyond the type saturate, and words its range errors with 300-digit bounds; the
// text is rewritten (a transform, not a check) as the plain decimal that CLI11 then converts.
template <typename Int>
CLI::Validator whole_number(Int least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        Int value{};
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc::result_out_of_range) return "'" + text + "' is too large";
        if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
          return "'" + text + "' is not a whole number";
        }
        if (value < least) return "must be at least " + std::to_string(least) + ", got " + text;
        text = std::to_string(value);
        return "";
      },
      "");
}

// A finite number above `least` (or from it, with least_included) and below `most`, said as `range`.
CLI::Validator number(double least, bool least_included, double most, const std::string& range) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
          return "'" + text + "' is not a finite number";
        }
        if (!((least_included ? value >= least : value > least) && value < most)) {
          return "must be " + range + ", got " + text;
        }
        return "";
      },
      "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tandem: a C++ tensor and autograd engine with data parallelism built in"};
  app.require_subcommand(1);

  td::train::Options train_options;
  auto* train = app.add_subcommand("train", "train a model on the built-in data (or MNIST, CIFAR-10)");
  train->add_option("--model", train_options.model, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
  train->add_option("--data", train_options.data, "default (generated shapes), mnist:DIR or cifar10:DIR");
  train->add_option("--epochs", train_options.epochs, "passes over the training data")
      ->transform(whole_number<int64_t>(1));
  train->add_option("--batch-size", train_options.batch_size, "examples per step")->transform(whole_number<int64_t>(1));
  train->add_option("--lr", train_options.lr, "learning rate (default: SGD 0.05, AdamW 0.001)")
      ->check(number(0, false, std::numeric_limits<double>::infinity(), "above 0"));
  train->add_option("--optimizer", train_options.optimizer, "sgd (momentum 0.9) or adamw")
      ->check(CLI::IsMember({"sgd", "adamw"}));
  train->add_option("--dropout", train_options.dropout, "probability of the model's Dropout layers (0: none)")
      ->check(number(0, true, 1, "in [0, 1)"));
  train->add_option("--amp", train_options.amp,
                    "mixed precision: off, bf16 (autocast to bfloat16) or fp16 (float16 with loss scaling)")
      ->check(CLI::IsMember({"off", "bf16", "fp16"}));
  train->add_option("--devices", train_options.devices,
                    "cpu:0 (one device), a list such as cpu:0,cpu:1 or all: data parallel over them");
  train->add_option("--seed", train_options.seed, "seed of the initial weights, the data order and the default data")
      ->transform(whole_number<uint64_t>(0));
  train->add_option("--save", train_options.save, "write a checkpoint here after every epoch");
  train->add_option("--resume", train_options.resume, "continue the run saved in this checkpoint");
  train->add_option("--workers", train_options.workers, "data loader threads")->transform(whole_number<int64_t>(0));
  train->add_option("--train-size", train_options.train_size, "default data: training examples to generate")
      ->transform(whole_number<int64_t>(1));
  train->add_option("--test-size", train_options.test_size, "default data: held-out examples to generate")
      ->transform(whole_number<int64_t>(1));

  td::train::TraceOptions trace_options;
  auto* trace = app.add_subcommand("trace", "a few data-parallel steps of the default model, and their phase table");
  trace->add_option("--devices", trace_options.devices, "devices to run over: a list such as cpu:0,cpu:1, or all");
  trace->add_option("--model", trace_options.model, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
  trace->add_option("--steps", trace_options.steps, "steps to run")->transform(whole_number<int64_t>(1));
  trace->add_option("--batch-size", trace_options.batch_size, "examples per step")->transform(whole_number<int64_t>(1));
  trace->add_option("--trace", trace_options.trace, "write a Chrome / Perfetto trace here (or set TANDEM_TRACE)");

  auto* demo = app.add_subcommand("demo", "a tour of the tensor library: creation, views, ops, printing");
  auto* devs = app.add_subcommand("devices", "list the CPU and CUDA devices tandem can use");

  td::bench::Options bench_options;
  auto* bench = app.add_subcommand("bench", "benchmark tandem beside PyTorch and print the ratios");
  bench->add_option("--filter", bench_options.filter, "regex selecting benchmarks by name");
  bench->add_option("--threads", bench_options.threads, "intra-op threads for both sides (default: all)")
      ->transform(whole_number<int>(1) & CLI::Range(1, 1024));
  bench->add_option("--python", bench_options.python, "Python with PyTorch (default: tools/setup.sh's venv)");
  bench->add_option("--min-time", bench_options.min_time, "seconds per benchmark and side")
      ->check(number(0, false, std::numeric_limits<double>::infinity(), "above 0"));
  bench->add_option("--repetitions", bench_options.repetitions, "batches per benchmark; the median is reported")
      ->transform(whole_number<int>(1) & CLI::Range(1, 100));
  bench->add_option("--json", bench_options.json, "also write the results to this file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    if (*train) {
      td::train::run(train_options, std::cout);
      return 0;
    }
    if (*trace) {
      td::train::trace(trace_options, std::cout);
      return 0;
    }
    if (*demo) return td::demo::run();
    if (*devs) return devices();
    if (*bench) return td::bench::run(bench_options, argv[0]);
  } catch (const td::train::UsageError& e) {
    fmt::print(stderr, "tandem: {}\n", e.what());
    return 2;
  } catch (const td::Error& e) {
    fmt::print(stderr, "tandem: {}\n", e.what());
    return 1;
  }
  return 0;
}
