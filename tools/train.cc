#include "tools/train.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>

#include "examples/models.h"
#include "nn/data/cifar10.h"
#include "nn/data/dataloader.h"
#include "nn/data/mnist.h"
#include "nn/data/shapes.h"
#include "nn/optim/optim.h"
#include "nn/serialize/safetensors.h"
#include "parallel/parallel.h"
#include "core/trace.h"
#include "tandem.h"

namespace tandem::train {

namespace {

using Clock = std::chrono::steady_clock;

struct Data {
  std::shared_ptr<data::Dataset> train, test;
  int64_t channels, height, width, classes;
};

Data load_data(const Options& o) {
  try {
    if (o.data == "default") {
      auto split = data::shapes_train_test(o.train_size, o.test_size, o.seed);
      return {split.train, split.test, 1, 28, 28, 10};
    }
    if (o.data.rfind("mnist:", 0) == 0) {
      std::string dir = o.data.substr(6);
      return {std::make_shared<data::MNIST>(dir, data::MNIST::Mode::kTrain),
              std::make_shared<data::MNIST>(dir, data::MNIST::Mode::kTest), 1, 28, 28, 10};
    }
    if (o.data.rfind("cifar10:", 0) == 0) {
      std::string dir = o.data.substr(8);
      return {std::make_shared<data::CIFAR10>(dir, data::CIFAR10::Mode::kTrain),
              std::make_shared<data::CIFAR10>(dir, data::CIFAR10::Mode::kTest), 3, 32, 32, 10};
    }
  } catch (const Error& e) {
    throw UsageError(std::string("cannot read the data: ") + e.what());
  }
  throw UsageError("--data must be default, mnist:DIR or cifar10:DIR, got '" + o.data + "'");
}

std::shared_ptr<nn::Module> make_model(const Options& o, const Data& d) {
  if (o.model == "mlp") return examples::Mlp(d.channels * d.height * d.width, d.classes, 256, o.dropout).ptr();
  if (o.model == "cnn") return examples::Cnn(d.channels, d.height, d.width, d.classes, o.dropout).ptr();
  throw UsageError("--model must be mlp or cnn, got '" + o.model + "'");
}

// --save's file can be made: its folder exists and takes files, and the path is not a folder.
void check_writable(const std::string& path) {
  const std::filesystem::path target(path);
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code error;
  if (std::filesystem::is_directory(target, error)) throw UsageError("--save " + path + " is a folder, not a file");
  if (!std::filesystem::is_directory(folder, error)) {
    throw UsageError("--save " + path + ": the folder " + folder.string() + " does not exist");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw UsageError("--save " + path + ": cannot write in " + folder.string() + " (" + std::strerror(errno) + ")");
  }
}

// Autocast on every device type the run uses: a replica on a GPU beside a CPU first device runs
// under its own type's autocast too.
class RunAutocast {
 public:
  RunAutocast(const std::vector<Device>& devices, std::optional<DType> dtype) {
    if (!dtype) return;
    for (const Device& d : devices) {
      std::optional<amp::AutocastGuard>& guard = d.is_cuda() ? cuda_ : cpu_;
      if (!guard) guard.emplace(d.type(), dtype);
    }
  }

 private:
  std::optional<amp::AutocastGuard> cpu_, cuda_;
};

// --lr, or the optimizer's default where it is 0.
double effective_lr(const Options& o) {
  if (o.lr > 0) return o.lr;
  if (o.optimizer == "sgd") return 0.05;
  if (o.optimizer == "adamw") return 1e-3;
  throw UsageError("--optimizer must be sgd or adamw, got '" + o.optimizer + "'");
}

std::unique_ptr<optim::Optimizer> make_optimizer(const Options& o, const std::vector<Tensor>& params) {
  if (o.optimizer == "sgd") return std::make_unique<optim::SGD>(params, optim::SGDOptions(effective_lr(o)).momentum(0.9));
  if (o.optimizer == "adamw") return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(effective_lr(o)));
  throw UsageError("--optimizer must be sgd or adamw, got '" + o.optimizer + "'");
}

std::vector<Device> parse_device_list(const std::string& spec) {
  std::vector<Device> devices;
  try {
    devices = parallel::parse_devices(spec);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  for (const Device& d : devices) {
    if (d.is_cuda() && (!cuda::is_available() || d.index() >= cuda::device_count())) {
      throw UsageError("--devices: " + d.str() + " is not available (" + std::to_string(cuda::device_count()) +
                       " CUDA devices)");
    }
  }
  return devices;
}

std::string device_list(const std::vector<Device>& devices) {
  std::string out;
  for (const Device& d : devices) {
    if (!out.empty()) out += ',';
    out += d.str();
  }
  return out;
}

// What a checkpoint records besides tensors, so that a resume can check it continues the same run.
const char* const kRunKeys[] = {"model", "data",    "optimizer", "batch_size", "seed",     "lr",
                                "dropout", "amp", "train_size", "test_size"};

// Numbers as the shortest decimal that reads back as the same double, so that a resume with a
// value that differs in any digit is refused. Checkpoints made before --dropout existed held
// them to 6 significant digits (`legacy`).
std::string run_value(const Options& o, const std::string& key, bool legacy = false) {
  if (key == "model") return o.model;
  if (key == "data") return o.data;
  if (key == "optimizer") return o.optimizer;
  if (key == "batch_size") return std::to_string(o.batch_size);
  if (key == "seed") return std::to_string(o.seed);
  if (key == "amp") return o.amp;
  // The generated data's sizes; MNIST and CIFAR-10 have theirs.
  if (key == "train_size") return o.data == "default" ? std::to_string(o.train_size) : "";
  if (key == "test_size") return o.data == "default" ? std::to_string(o.test_size) : "";
  const double number = key == "dropout" ? o.dropout : effective_lr(o);
  if (legacy) {
    std::ostringstream six;
    six << number;
    return six.str();
  }
  char digits[32];
  return std::string(digits, std::to_chars(digits, digits + sizeof digits, number).ptr);
}

// The 16-bit dtype of --amp, or none.
std::optional<DType> amp_dtype(const Options& o) {
  if (o.amp == "off") return std::nullopt;
  if (o.amp == "bf16") return kBFloat16;
  if (o.amp == "fp16") return kFloat16;
  throw UsageError("--amp must be off, bf16 or fp16, got '" + o.amp + "'");
}

// Loss scaling for float16 only: bfloat16 has float32's range, and its gradients do not underflow.
amp::GradScaler make_scaler(const Options& o) {
  return amp::GradScaler(amp::GradScalerOptions{.enabled = amp_dtype(o) == kFloat16});
}

void save_checkpoint(const std::string& path, const Options& o, nn::Module& model, const optim::Optimizer& optimizer,
                     const amp::GradScaler& scaler, int64_t next_epoch, int64_t steps) {
  StateDict state;
  for (const auto& [name, t] : model.state_dict()) state.insert("model." + name, t);
  StateDict opt = optimizer.state_dict();
  for (const auto& [name, t] : opt) state.insert("optimizer." + name, t);
  for (const auto& [key, value] : opt.metadata) state.metadata["optimizer." + key] = value;
  for (const char* key : kRunKeys) state.metadata[std::string("run.") + key] = run_value(o, key);
  for (const auto& [key, value] : scaler.state_dict().metadata) state.metadata["scaler." + key] = value;
  PhiloxState rng = default_generator().state();
  state.metadata["run.next_epoch"] = std::to_string(next_epoch);
  state.metadata["run.steps"] = std::to_string(steps);
  state.metadata["run.rng_seed"] = std::to_string(rng.seed);
  state.metadata["run.rng_offset"] = std::to_string(rng.offset);
  // Other devices' generators too (dropout in a replica draws from its device's).
  for (const auto& [device, other] : generator_states()) {
    if (device == Device(kCPU, 0)) continue;
    state.metadata["run.rng_seed." + device.str()] = std::to_string(other.seed);
    state.metadata["run.rng_offset." + device.str()] = std::to_string(other.offset);
  }
  save(state, path);
}

// Loads a checkpoint into the model and optimizer; returns (next epoch, steps so far).
std::pair<int64_t, int64_t> load_checkpoint(const std::string& path, const Options& o, nn::Module& model,
                                            optim::Optimizer& optimizer, amp::GradScaler& scaler) {
  StateDict state;
  try {
    state = load(path);
  } catch (const Error& e) {
    throw UsageError(std::string("cannot resume: ") + e.what());
  }
  auto meta = [&](const std::string& key) {
    auto it = state.metadata.find(key);
    if (it == state.metadata.end()) throw UsageError("cannot resume: " + path + " is not a tandem train checkpoint (no " + key + ")");
    return it->second;
  };
  // Checkpoints made before --dropout existed were made without it (and with 6-digit numbers);
  // those made before --amp, without mixed precision; before the sizes were kept, with the ones
  // asked for now. Until the effective rate was kept, a default --lr was kept as 0.
  const bool legacy = !state.metadata.count("run.dropout");
  const std::map<std::string, std::string> made_without = {{"dropout", "0"},
                                                           {"amp", "off"},
                                                           {"train_size", run_value(o, "train_size")},
                                                           {"test_size", run_value(o, "test_size")}};
  for (const char* key : kRunKeys) {
    const auto absent = made_without.find(key);
    std::string saved = absent != made_without.end() && !state.metadata.count(std::string("run.") + key)
                            ? absent->second
                            : meta(std::string("run.") + key);
    if (std::string(key) == "lr" && saved == "0") {
      Options default_rate = o;
      default_rate.lr = 0;
      saved = run_value(default_rate, key, legacy);
    }
    if (saved != run_value(o, key, legacy)) {
      std::string flag = key;  // as the command line spells it
      std::replace(flag.begin(), flag.end(), '_', '-');
      throw UsageError("cannot resume: " + path + " was made with --" + flag + " " + saved + ", not " +
                       run_value(o, key));
    }
  }
  StateDict model_state, opt_state, scaler_state;
  for (const auto& [name, t] : state) {
    if (name.rfind("model.", 0) == 0) model_state.insert(name.substr(6), t);
    if (name.rfind("optimizer.", 0) == 0) opt_state.insert(name.substr(10), t);
  }
  for (const auto& [key, value] : state.metadata) {
    if (key.rfind("optimizer.", 0) == 0) opt_state.metadata[key.substr(10)] = value;
    if (key.rfind("scaler.", 0) == 0) scaler_state.metadata[key.substr(7)] = value;
  }
  // Counters as decimal digits only (stoull took "-5" and wrapped it, and threw past main's handlers on "x").
  auto count = [&](const std::string& key) {
    const std::string text = meta(key);
    uint64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
      throw UsageError("cannot resume: " + path + " is damaged (" + key + " is '" + text + "', not a count)");
    }
    return value;
  };
  const auto next_epoch = static_cast<int64_t>(count("run.next_epoch")), steps = static_cast<int64_t>(count("run.steps"));
  if (next_epoch < 0 || steps < 0) throw UsageError("cannot resume: " + path + " is damaged (its counts overflow)");
  if (next_epoch >= o.epochs) {
    throw UsageError("cannot resume: " + path + " already holds " + std::to_string(next_epoch) + " epochs of " +
                     "training; ask for more with --epochs (" + std::to_string(o.epochs) + " now)");
  }
  std::vector<std::pair<Device, PhiloxState>> generators{{Device(kCPU, 0), {count("run.rng_seed"), count("run.rng_offset")}}};
  const std::string offset_prefix = "run.rng_offset.";
  for (const auto& [key, value] : state.metadata) {
    if (!key.starts_with(offset_prefix)) continue;
    const std::string device = key.substr(offset_prefix.size());
    generators.push_back({Device(device), {count("run.rng_seed." + device), count(key)}});
  }
  // Nothing changes until the whole checkpoint has been read and checked.
  model.load_state_dict(model_state);
  optimizer.load_state_dict(opt_state);
  scaler.load_state_dict(scaler_state);
  for (const auto& [device, generator] : generators) default_generator(device).set_state(generator);
  return {next_epoch, steps};
}

// The share of correct predictions of `model` on `dataset`, in eval mode and without gradients.
double accuracy(nn::Module& model, const std::shared_ptr<data::Dataset>& dataset, Device device,
                std::optional<DType> autocast_dtype) {
  NoGradGuard no_grad;
  amp::AutocastGuard autocast(device.type(), autocast_dtype, autocast_dtype.has_value());
  model.eval();
  data::DataLoader loader(dataset, data::DataLoaderOptions().batch_size(500));
  int64_t correct = 0, total = 0;
  for (data::Example& batch : loader) {
    Tensor predicted = model.forward(batch.data.to(device)).argmax(1);
    correct += (predicted == batch.target.to(device)).sum().item<int64_t>();
    total += batch.target.size(0);
  }
  model.train();
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0;
}

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, bool enabled, int64_t epoch, int64_t epochs, int64_t batches)
      : out_(out), enabled_(enabled && isatty(STDOUT_FILENO)), epoch_(epoch), epochs_(epochs), batches_(batches),
        start_(Clock::now()) {}

  void update(int64_t done, double loss, double acc, int64_t samples) {
    if (!enabled_ || (done % 10 != 0 && done != batches_)) return;
    const int width = 24;
    int filled = batches_ ? static_cast<int>(width * done / batches_) : width;
    out_ << "\repoch " << epoch_ + 1 << "/" << epochs_ << " [" << std::string(filled, '#')
         << std::string(width - filled, '-') << "] " << std::setw(3) << (batches_ ? 100 * done / batches_ : 100)
         << "% loss " << std::fixed << std::setprecision(4) << loss << " acc " << std::setprecision(1) << 100 * acc
         << "% " << std::setprecision(0) << samples / seconds() << " samples/s" << std::flush;
  }

  void finish(double loss, double train_acc, double test_acc, int64_t samples) {
    if (enabled_) out_ << "\r" << std::string(100, ' ') << "\r";
    out_ << "epoch " << epoch_ + 1 << "/" << epochs_ << ": loss " << std::fixed << std::setprecision(4) << loss
         << ", train acc " << std::setprecision(1) << 100 * train_acc << "%, held-out acc " << 100 * test_acc << "%, "
         << std::setprecision(0) << samples / seconds() << " samples/s, " << std::setprecision(1) << seconds()
         << " s\n"
         << std::flush;
  }

 private:
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::ostream& out_;
  bool enabled_;
  int64_t epoch_, epochs_, batches_;
  Clock::time_point start_;
};

}  // namespace

Result run(const Options& o, std::ostream& log) {
  if (o.epochs < 1) throw UsageError("--epochs must be at least 1");
  if (o.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  if (!(std::isfinite(o.lr) && o.lr >= 0)) throw UsageError("--lr must be a finite number above 0 (0: the default)");
  if (o.data == "default" && (o.train_size < 1 || o.test_size < 1)) {
    throw UsageError("--train-size and --test-size must be at least 1");
  }
  if (!o.save.empty()) check_writable(o.save);  // before any work: a bad path fails now, not after an epoch
  if (!(o.dropout >= 0 && o.dropout < 1)) throw UsageError("--dropout must be in [0, 1), got " + std::to_string(o.dropout));
  const std::optional<DType> autocast_dtype = amp_dtype(o);
  const std::vector<Device> devices = parse_device_list(o.devices);
  const Device device = devices.front();

  manual_seed(o.seed);
  Data d = load_data(o);
  auto model = make_model(o, d);
  model->to(device);
  // Several devices: DataParallel over them, the module's own parameters on the first.
  std::unique_ptr<parallel::DataParallelImpl<nn::Module>> dp;
  if (devices.size() > 1) dp = std::make_unique<parallel::DataParallelImpl<nn::Module>>(model, devices);
  auto optimizer = make_optimizer(o, model->parameters());
  amp::GradScaler scaler = make_scaler(o);
  int64_t first_epoch = 0;
  Result result;
  if (!o.resume.empty()) {
    std::tie(first_epoch, result.steps) = load_checkpoint(o.resume, o, *model, *optimizer, scaler);
    log << "resumed from " << o.resume << " at epoch " << first_epoch + 1 << "\n";
  }
  log << "training " << model->name() << " (" << model->parameters().size() << " tensors, "
      << [&] {
           int64_t n = 0;
           for (const Tensor& p : model->parameters()) n += p.numel();
           return n;
         }()
      << " parameters) on " << o.data << " (" << d.train->size() << " train / " << d.test->size() << " held out), "
      << o.optimizer << ", batch " << o.batch_size << ", " << (dp ? "data parallel over " : "")
      << device_list(devices) << ", " << num_threads() << " threads"
      << (autocast_dtype ? std::string(", autocast ") + dtype_name(*autocast_dtype) : std::string())
      << (scaler.is_enabled() ? " with loss scaling" : "") << "\n";

  data::DataLoader loader(d.train,
                          data::DataLoaderOptions().batch_size(o.batch_size).shuffle(true).seed(o.seed).num_workers(o.workers));
  for (int64_t epoch = first_epoch; epoch < o.epochs; ++epoch) {
    loader.start_epoch(epoch);
    ProgressBar bar(log, o.progress, epoch, o.epochs, loader.batches_per_epoch());
    double loss_sum = 0;
    int64_t correct = 0, samples = 0, batches = 0;
    for (data::Example& batch : loader) {
      Tensor x = batch.data.to(device), y = batch.target.to(device);
      Tensor logits, loss;
      {
        RunAutocast autocast(devices, autocast_dtype);
        logits = dp ? dp->forward(x) : model->forward(x);
        loss = nn::functional::cross_entropy(logits, y);
      }
      optimizer->zero_grad();
      scaler.scale(loss).backward();
      const bool stepped = dp ? dp->step(scaler, *optimizer) : scaler.step(*optimizer);
      scaler.update();
      result.skipped_steps += !stepped;
      ++result.steps;
      ++batches;
      loss_sum += loss.item<double>();
      {
        NoGradGuard no_grad;
        correct += (logits.argmax(1) == y).sum().item<int64_t>();
      }
      samples += y.size(0);
      bar.update(batches, loss_sum / batches, static_cast<double>(correct) / samples, samples);
    }
    double test_acc = accuracy(*model, d.test, device, autocast_dtype);
    result.epoch_losses.push_back(loss_sum / std::max<int64_t>(batches, 1));
    result.test_accuracy = test_acc;
    bar.finish(result.epoch_losses.back(), static_cast<double>(correct) / std::max<int64_t>(samples, 1), test_acc,
               samples);
    if (!o.save.empty()) save_checkpoint(o.save, o, *model, *optimizer, scaler, epoch + 1, result.steps);
  }
  log << "held-out accuracy: " << std::fixed << std::setprecision(2) << 100 * result.test_accuracy << "% ("
      << d.test->size() << " examples)\n";
  if (scaler.is_enabled()) {
    log << "loss scaling: " << result.skipped_steps << " steps skipped for inf or NaN gradients, scale now "
        << std::defaultfloat << scaler.get_scale() << "\n";
  }
  if (!o.save.empty()) log << "checkpoint: " << o.save << "\n";
  if (dp) log << "data parallel, the last step per device:\n" << dp->stats().table();
  return result;
}

void trace(const TraceOptions& o, std::ostream& log) {
  if (o.steps < 1) throw UsageError("--steps must be at least 1");
  if (o.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  const std::vector<Device> devices = parse_device_list(o.devices);
  if (!o.trace.empty()) trace::set_output(o.trace);
  manual_seed(0);
  auto split = data::shapes_train_test(o.batch_size, 1, 0);
  data::DataLoader loader(split.train, data::DataLoaderOptions().batch_size(o.batch_size));
  data::Example batch = *loader.begin();
  Tensor x = batch.data.to(devices.front()), y = batch.target.to(devices.front());
  Options defaults;
  defaults.model = o.model;
  auto model = make_model(defaults, Data{split.train, split.test, 1, 28, 28, 10});
  model->to(devices.front());
  parallel::DataParallelImpl<nn::Module> dp(model, devices);
  auto optimizer = make_optimizer(defaults, model->parameters());
  log << "tracing " << o.steps << " data-parallel steps of " << model->name() << " (batch " << o.batch_size
      << ") over " << device_list(devices) << "\n";
  for (int64_t step = 0; step < o.steps; ++step) {
    Tensor loss = nn::functional::cross_entropy(dp.forward(x), y);
    optimizer->zero_grad();
    loss.backward();
    dp.step(*optimizer);
  }
  log << dp.stats().table();
  if (trace::enabled()) {
    trace::flush();
    log << "trace: " << (o.trace.empty() ? std::string(std::getenv("TANDEM_TRACE")) : o.trace)
        << " (open it in ui.perfetto.dev or chrome://tracing)\n";
  }
}

}  // namespace tandem::train
