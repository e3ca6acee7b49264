#include "parallel/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <thread>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "core/allocator.h"
#include "core/cuda.h"
#include "core/device_threads.h"
#include "core/trace.h"
#include "nn/optim/grad_scaler.h"

namespace tandem::parallel {

namespace detail {

double elapsed_since(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace detail

std::vector<Device> visible_devices() {
  std::vector<Device> devices;
  const int gpus = cuda::is_available() ? cuda::device_count() : 0;
  for (int i = 0; i < gpus; ++i) devices.emplace_back(kCUDA, i);
  if (!devices.empty()) return devices;
  int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const char* env = std::getenv("TANDEM_CPU_DEVICES")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    TD_CHECK(end != env && *end == '\0' && n >= 1 && n <= Device::kMaxIndex, "TANDEM_CPU_DEVICES='", env,
             "' is not a device count between 1 and ", Device::kMaxIndex);
    cpus = static_cast<int>(n);
  }
  for (int i = 0; i < cpus; ++i) devices.emplace_back(kCPU, i);
  return devices;
}

std::vector<Device> parse_devices(const std::string& spec) {
  if (spec == "all") return visible_devices();
  std::vector<Device> devices;
  std::stringstream in(spec);
  for (std::string part; std::getline(in, part, ',');) {
    TD_CHECK(!part.empty(), "devices: '", spec, "' has an empty entry; expected e.g. cpu:0,cpu:1 or all");
    devices.emplace_back(part);
  }
  // getline drops a last empty entry: "cpu:0," is as wrong as ",cpu:0".
  TD_CHECK(spec.empty() || spec.back() != ',', "devices: '", spec, "' has an empty entry; expected e.g. cpu:0,cpu:1 or all");
  TD_CHECK(!devices.empty(), "devices: '", spec, "' names no device; expected e.g. cpu:0,cpu:1 or all");
  auto twice = repeated_device(devices);
  TD_CHECK(!twice, "devices: ", *twice, " is listed twice in '", spec, "'");
  return devices;
}

std::string StepStats::table() const {
  std::ostringstream out;
  auto ms = [](double s) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(3) << s * 1e3;
    return o.str();
  };
  out << "step " << step << " (milliseconds)\n";
  out << std::left << std::setw(10) << "device" << std::right << std::setw(8) << "rows" << std::setw(11) << "forward"
      << std::setw(11) << "loss" << std::setw(11) << "backward" << std::setw(13) << "peak MiB" << "\n";
  for (const DeviceStepStats& d : devices) {
    std::ostringstream peak;
    peak << std::fixed << std::setprecision(2) << static_cast<double>(d.peak_bytes) / (1 << 20);
    out << std::left << std::setw(10) << d.device.str() << std::right << std::setw(8) << d.rows << std::setw(11)
        << ms(d.forward) << std::setw(11) << ms(d.loss) << std::setw(11) << ms(d.backward) << std::setw(13)
        << peak.str() << "\n";
  }
  out << "phases: scatter " << ms(scatter) << ", replicate " << ms(replicate) << ", gather " << ms(gather)
      << ", reduce " << ms(reduce) << ", update " << ms(update) << "\n";
  for (const auto& [name, s] : comm) {
    out << "  " << std::left << std::setw(22) << name << std::right << std::setw(4) << s.calls << " calls"
        << std::setw(12) << s.bytes << " bytes" << std::setw(10) << ms(s.seconds) << " ms";
    if (s.nccl_calls > 0) out << " (" << s.nccl_calls << " by NCCL)";
    out << "\n";
  }
  return out.str();
}

namespace {

std::shared_ptr<nn::Module> non_null(std::shared_ptr<nn::Module> module) {
  TD_CHECK(module != nullptr, "DataParallel: the module is null");
  return module;
}

// A GPU that is not there would otherwise fail only inside a step, after the replicas had run
// (and changed BatchNorm's running statistics).
void check_exists(const Device& device, const char* what) {
  if (!device.is_cuda()) return;
  const int gpus = cuda::is_available() ? cuda::device_count() : 0;
  TD_CHECK(device.index() < gpus, "DataParallel: ", what, " ", device, " does not exist (", gpus, " CUDA devices",
           gpus == 0 ? ": " + cuda::unavailable_reason() : std::string(), ")");
}

// The options' device_ids, or every visible device; checked before anything is built on them.
std::vector<Device> device_ids_of(const DataParallelOptions& options) {
  std::vector<Device> ids = options.device_ids_.empty() ? visible_devices() : options.device_ids_;
  auto twice = repeated_device(ids);
  TD_CHECK(!twice, "DataParallel: device ", *twice, " is listed twice in device_ids");
  for (const Device& d : ids) check_exists(d, "device_ids entry");
  if (options.output_device_) check_exists(*options.output_device_, "output_device");
  return ids;
}

}  // namespace

DataParallelBase::DataParallelBase(std::shared_ptr<nn::Module> module, DataParallelOptions options)
    : base_(non_null(std::move(module))),
      options_(std::move(options)),
      device_ids_(device_ids_of(options_)),
      output_device_(options_.output_device_.value_or(device_ids_.front())),
      replicator_(base_, device_ids_, /*share_on_cpus=*/true) {
  check_module_on_first_device();
  // Capped: a wait of milliseconds::max() overflows the clock and would end at once.
  TD_CHECK(options_.sync_batchnorm_timeout_.count() > 0 &&
               options_.sync_batchnorm_timeout_ <= std::chrono::hours(24 * 365),
           "DataParallel: sync_batchnorm_timeout must be positive and at most a year, got ",
           options_.sync_batchnorm_timeout_.count(), " ms");
  if (options_.chunk_sizes_) {
    const auto& sizes = *options_.chunk_sizes_;
    TD_CHECK(sizes.size() == device_ids_.size(), "DataParallel: ", sizes.size(), " chunk_sizes for ",
             device_ids_.size(), " devices");
    for (size_t i = 0; i < sizes.size(); ++i) {
      TD_CHECK(sizes[i] >= 0, "DataParallel: chunk_sizes[", i, "] is negative (", sizes[i], ")");
    }
  }
  seconds_per_row_.assign(device_ids_.size(), 0.0);
}

void DataParallelBase::check_module_on_first_device() const {
  const Device home = device_ids_.front();
  auto elsewhere = [&](const std::vector<Tensor>& tensors) {
    return std::any_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.defined() && t.device() != home; });
  };
  if (!elsewhere(base_->parameters()) && !elsewhere(base_->buffers())) return;  // the common case, without names
  auto check = [&](const std::vector<std::pair<std::string, Tensor>>& tensors, const char* what) {
    for (const auto& [name, t] : tensors) {
      TD_CHECK(t.device() == home, "DataParallel: the module's ", what, " must be on device_ids[0] = ", home,
               ", but '", name, "' is on ", t.device(), "; move the module there first: model->to(td::Device(\"",
               home.str(), "\"))");
    }
  };
  check(base_->named_parameters(), "parameters");
  check(base_->named_buffers(), "buffers");
}

ScatterPlan DataParallelBase::plan(int64_t rows) const {
  ScatterPlan p;
  p.dim = options_.dim_;
  p.rows = rows;
  const int64_t n = static_cast<int64_t>(device_ids_.size());
  std::vector<int64_t> sizes;
  if (options_.chunk_sizes_) {
    sizes = *options_.chunk_sizes_;
    const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
    TD_CHECK(total == rows, "DataParallel: chunk_sizes add up to ", total, " but the batch has ", rows,
             " rows along dim ", p.dim);
  } else if (options_.chunking_ == Chunking::kBalanced &&
             std::all_of(seconds_per_row_.begin(), seconds_per_row_.end(), [](double s) { return s > 0; })) {
    // Rows in proportion to speed (rows per second), by largest remainder; every device keeps at
    // least one row while there are rows enough, so its speed stays measured.
    std::vector<double> speed;
    for (double s : seconds_per_row_) speed.push_back(1.0 / s);
    const double total_speed = std::accumulate(speed.begin(), speed.end(), 0.0);
    const int64_t floor_rows = rows >= n ? 1 : 0;
    const int64_t spare = rows - floor_rows * n;
    std::vector<std::pair<double, int64_t>> remainders;
    int64_t given = 0;
    for (int64_t i = 0; i < n; ++i) {
      double exact = static_cast<double>(spare) * speed[i] / total_speed;
      int64_t whole = static_cast<int64_t>(std::floor(exact));
      sizes.push_back(floor_rows + whole);
      given += floor_rows + whole;
      remainders.emplace_back(-(exact - static_cast<double>(whole)), i);
    }
    std::sort(remainders.begin(), remainders.end());
    for (int64_t k = 0; given < rows; ++k, ++given) sizes[remainders[k % n].second] += 1;
  } else {
    sizes = comm::even_chunk_sizes(rows, n);
    sizes.resize(static_cast<size_t>(n), 0);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (sizes[i] == 0) continue;
    p.devices.push_back(device_ids_[i]);
    p.chunk_sizes.push_back(sizes[i]);
  }
  if (p.devices.empty()) {  // an empty batch: one replica gets it
    p.devices.push_back(device_ids_.front());
    p.chunk_sizes.push_back(0);
  }
  // On a device's thread the replicas run one after another (core/device_threads.h), so the first
  // would wait for the others' batch statistics until it timed out.
  TD_CHECK(!options_.sync_batchnorm_ || p.devices.size() == 1 || current_device_thread() == nullptr,
           "DataParallel: sync_batchnorm needs its replicas to run at once, but this forward runs on the thread of ",
           *current_device_thread(), " (inside another DataParallel's replica or backward), where they run one "
           "after another; use sync_batchnorm on the outer DataParallel only");
  return p;
}

void DataParallelBase::keep_buffers_of_first(const ScatterPlan& plan) {
  if (plan.devices.front() == device_ids_.front()) return;  // the module's own buffers were used
  NoGradGuard no_grad;
  std::vector<Tensor> module_buffers = base_->buffers();
  const std::vector<Tensor> replica_buffers = replicator_.buffers_of(replica_indices(plan).front());
  for (size_t i = 0; i < module_buffers.size() && i < replica_buffers.size(); ++i) {
    // Only what the forward wrote (in eval mode, nothing): a copy is an in-place write to the
    // module's buffer, which the next step would then have to broadcast again.
    const bool written = i >= first_buffer_versions_.size() || replica_buffers[i].version() != first_buffer_versions_[i];
    if (written) module_buffers[i].copy_(replica_buffers[i]);
  }
}

std::vector<size_t> DataParallelBase::replica_indices(const ScatterPlan& plan) const {
  std::vector<size_t> indices;
  for (const Device& d : plan.devices) {
    indices.push_back(static_cast<size_t>(std::find(device_ids_.begin(), device_ids_.end(), d) - device_ids_.begin()));
  }
  return indices;
}

void DataParallelBase::begin_step() {
  check_module_on_first_device();
  // What balanced chunking learns from: each device's seconds per row in the step that just
  // ended, forward, loss and backward, smoothed over steps; each step once, also when the
  // forward after it failed and is tried again.
  if (options_.chunking_ == Chunking::kBalanced && current_.devices.size() >= 2 && learned_step_ != current_.step) {
    for (const DeviceStepStats& d : stats().devices) {
      if (d.rows == 0 || d.forward <= 0) continue;  // no rows, or a forward that did not finish (it threw)
      size_t i = static_cast<size_t>(std::find(device_ids_.begin(), device_ids_.end(), d.device) - device_ids_.begin());
      double per_row = (d.forward + d.loss + d.backward) / static_cast<double>(d.rows);
      seconds_per_row_[i] = seconds_per_row_[i] > 0 ? 0.5 * seconds_per_row_[i] + 0.5 * per_row : per_row;
    }
    learned_step_ = current_.step;
  }
  // Taken now, so that the new step counts its scatter, but the finished step's stats keep theirs
  // until new_step: a forward that fails before it (bad arguments) leaves them as they were.
  next_backward_mark_ = autograd::backward_mark();
  next_comm_mark_ = comm::stats_mark();
}

void DataParallelBase::new_step(const std::vector<Device>& devices, const std::vector<int64_t>& rows) {
  const int64_t step = current_.step + 1;
  current_ = StepStats();
  current_.step = step;
  backward_mark_ = next_backward_mark_;
  comm_mark_ = next_comm_mark_;
  forward_timers_.clear();
  loss_timers_.clear();
  update_timers_.clear();
  for (size_t i = 0; i < devices.size(); ++i) {
    DeviceStepStats d;
    d.device = devices[i];
    d.rows = rows[i];
    current_.devices.push_back(d);
    reset_peak_memory_stats(devices[i]);
  }
}

void DataParallelBase::start_single_step(int64_t rows) { new_step({device_ids_.front()}, {rows}); }

std::vector<std::shared_ptr<nn::Module>> DataParallelBase::start_step(const ScatterPlan& plan, double scatter_seconds) {
  // The replicas first: a forward that fails while they are made (a lazy layer not run yet, a
  // clone that throws) leaves stats() on the last step, as one refused for its arguments does.
  const auto start = std::chrono::steady_clock::now();
  auto replicas = replicator_.refresh(replica_indices(plan));
  std::vector<std::shared_ptr<BatchNormSyncPoint>> sync_points;
  if (options_.sync_batchnorm_) sync_points = sync_batchnorm(replicas, options_.sync_batchnorm_timeout_);
  const double replicate_seconds = detail::elapsed_since(start);
  new_step(plan.devices, plan.chunk_sizes);
  current_.scatter = scatter_seconds;
  current_.replicate = replicate_seconds;
  first_buffer_versions_.clear();
  if (plan.devices.front() != device_ids_.front()) {  // what keep_buffers_of_first() compares with
    for (const Tensor& b : replicator_.buffers_of(replica_indices(plan).front())) {
      first_buffer_versions_.push_back(b.version());
    }
  }
  // The module's buffers this step may write, kept for a step that fails: the replica on
  // device_ids[0] shares them, and keep_buffers_of_first() copies into them. Only those of
  // modules in training mode (BatchNorm writes its statistics then): an eval step copies nothing.
  saved_buffers_.clear();
  NoGradGuard no_grad;
  for (const auto& module : base_->modules()) {
    if (!module->is_training()) continue;
    for (const Tensor& b : module->buffers(/*recurse=*/false)) {
      if (b.defined()) saved_buffers_.push_back({b, b.clone(), b.version()});
    }
  }
  sync_points_ = std::move(sync_points);
  return replicas;
}

void DataParallelBase::restore_buffers() noexcept {
  const std::vector<SavedBuffer> saved = std::move(saved_buffers_);
  saved_buffers_.clear();
  try {
    NoGradGuard no_grad;
    for (const SavedBuffer& s : saved) {
      if (s.buffer.version() != s.version) {
        Tensor buffer = s.buffer;
        buffer.copy_(s.value);
      }
    }
  } catch (...) {
    // The step's own error is the one to report: a device that cannot take the copy back (its
    // context lost to a kernel's fault, say) has failed the step already.
  }
}

void DataParallelBase::finish_forward(std::vector<DeviceTimer> forward, std::vector<DeviceTimer> loss,
                                      double gather_seconds) {
  saved_buffers_.clear();
  forward_timers_ = std::move(forward);
  loss_timers_ = std::move(loss);
  current_.gather = gather_seconds;
}

StepStats DataParallelBase::stats() const {
  StepStats s = current_;
  for (size_t i = 0; i < s.devices.size(); ++i) {
    if (i < forward_timers_.size()) s.devices[i].forward = forward_timers_[i].seconds();
    if (i < loss_timers_.size()) s.devices[i].loss = loss_timers_[i].seconds();
  }
  for (const DeviceTimer& t : update_timers_) s.update += t.seconds();
  const auto backward = autograd::backward_seconds_since(backward_mark_);
  for (DeviceStepStats& d : s.devices) {
    auto it = backward.find(d.device);
    d.backward = it == backward.end() ? 0.0 : it->second;
    d.peak_bytes = memory_stats(d.device).peak_allocated;
  }
  s.comm = comm::comm_stats_since(comm_mark_);
  if (auto it = s.comm.find("reduce_add_coalesced"); it != s.comm.end()) s.reduce = it->second.seconds;
  return s;
}

void DataParallelBase::timed_update(const std::function<void()>& update) {
  const Device home = device_ids_.front();  // where the parameters are
  const auto start = std::chrono::steady_clock::now();
  DeviceTimer timer(home);
  update();
  timer.stop();
  trace::record("update", home.str(), start, std::chrono::steady_clock::now());
  update_timers_.push_back(std::move(timer));
}

void DataParallelBase::step(optim::Optimizer& optimizer) {
  timed_update([&] { optimizer.step(); });
}

bool DataParallelBase::step(amp::GradScaler& scaler, optim::Optimizer& optimizer) {
  bool stepped = false;
  timed_update([&] { stepped = scaler.step(optimizer); });
  return stepped;
}

nn::Module::LoadResult DataParallelBase::load_state_dict(const StateDict& state, bool strict) {
  // Stripped only where every key has the prefix and not every key is the module's own as it
  // stands: a module whose one child is registered as "module" has such keys of its own.
  const std::string prefix = "module.";
  const StateDict own = base_->state_dict();
  bool all_prefixed = !state.empty(), all_own = true;
  for (const auto& [key, t] : state) {
    all_prefixed = all_prefixed && key.starts_with(prefix);
    all_own = all_own && own.contains(key);
  }
  if (!all_prefixed || all_own) return base_->load_state_dict(state, strict);
  StateDict stripped;
  stripped.metadata = state.metadata;
  for (const auto& [key, t] : state) stripped.insert(key.substr(prefix.size()), t);
  return base_->load_state_dict(stripped, strict);
}

std::string DataParallelBase::str() const {
  std::string inner = base_->str();
  std::string indented;
  for (char c : inner) {
    indented += c;
    if (c == '\n') indented += "  ";
  }
  return "DataParallel(\n  (module): " + indented + "\n)";
}

std::ostream& operator<<(std::ostream& out, const DataParallelBase& dp) { return out << dp.str(); }

}  // namespace tandem::parallel
