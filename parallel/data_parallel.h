// DataParallel: one module, trained on several devices at once, the way PyTorch's
// nn.DataParallel does it, step by step in view:
//   scatter    the batch is split along `dim`, chunk i to device_ids[i]
//   replicate  the module's current values go to a replica per device (kept across steps)
//   forward    every replica runs its chunk on its device's worker thread
//   gather     the outputs are joined on output_device (or each replica computes its own loss
//              with forward_with_loss, and only the scalars travel)
//   backward   runs back through gather, the replicas and the broadcast, whose backward
//              reduce-adds the replicas' gradients onto the module's own parameters
//   update     the optimizer, built on dp->parameters() (the module's), steps once
// Optimizers are never wrapped in DataParallel: they update the one set of parameters.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "core/device_timer.h"
#include "core/trace.h"
#include "kernels/factory.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"
#include "parallel/chunk_loss.h"
#include "parallel/comm.h"
#include "parallel/parallel_apply.h"
#include "parallel/replicate.h"
#include "parallel/sync_batchnorm.h"
#include "parallel/scatter_gather.h"

namespace tandem::amp {
class GradScaler;
}

namespace tandem::parallel {

// How the batch is split: kEven as evenly as possible (sizes differ by at most one, larger
// first); kBalanced in proportion to each device's measured speed (rows per second of forward
// and backward over the last steps), so a slower device gets fewer rows. To learn from the step
// before, kBalanced reads its times at the start of each step: on GPUs, that waits for the
// previous step's work.
enum class Chunking { kEven, kBalanced };

struct DataParallelOptions {
  DataParallelOptions() = default;
  DataParallelOptions(std::vector<Device> device_ids) : device_ids_(std::move(device_ids)) {}
  // Empty: visible_devices().
  DataParallelOptions& device_ids(std::vector<Device> ids) { device_ids_ = std::move(ids); return *this; }
  // Where outputs are gathered; default device_ids[0].
  DataParallelOptions& output_device(Device d) { output_device_ = d; return *this; }
  DataParallelOptions& dim(int64_t d) { dim_ = d; return *this; }
  // Rows per device, in device_ids order, summing to the batch (CenterTrack's chunk_sizes).
  DataParallelOptions& chunk_sizes(std::vector<int64_t> sizes) { chunk_sizes_ = std::move(sizes); return *this; }
  DataParallelOptions& chunking(Chunking c) { chunking_ = c; return *this; }
  // BatchNorm layers in training mode normalise with the whole batch's statistics, shared across
  // the replicas, instead of each replica's chunk's (PyTorch's DataParallel does the latter).
  DataParallelOptions& sync_batchnorm(bool on) { sync_batchnorm_ = on; return *this; }
  // How long a replica waits at a synchronised BatchNorm for the others before it reports that
  // they did not come (a replica that skipped the layer); 300 s by default.
  DataParallelOptions& sync_batchnorm_timeout(std::chrono::milliseconds t) {
    sync_batchnorm_timeout_ = t;
    return *this;
  }

  std::vector<Device> device_ids_;
  std::optional<Device> output_device_;
  int64_t dim_ = 0;
  std::optional<std::vector<int64_t>> chunk_sizes_;
  Chunking chunking_ = Chunking::kEven;
  bool sync_batchnorm_ = false;
  std::chrono::milliseconds sync_batchnorm_timeout_ = BatchNormSyncPoint::kDefaultTimeout;
};

// The devices DataParallel uses by default: every CUDA device; with none, CPU devices cpu:0 ...
// cpu:n-1, n from TANDEM_CPU_DEVICES or else the hardware's thread count.
std::vector<Device> visible_devices();
// "all", or a comma-separated list such as "cpu:0,cpu:1" or "cuda:1,cuda:0".
std::vector<Device> parse_devices(const std::string& spec);

// One step as DataParallel saw it, in seconds. The per-device times and the update are the
// devices' own (for a GPU, from events around its work: reading stats() waits for that work); so
// are the primitives' times in `comm`, and `reduce` is reduce_add_coalesced's. Scatter, replicate
// and gather are the calling thread's: on GPUs, the time to queue their work.
struct DeviceStepStats {
  Device device = Device(kCPU);
  int64_t rows = 0;
  double forward = 0, loss = 0, backward = 0;
  int64_t peak_bytes = 0;  // the most memory tensors on this device held during the step
};

struct StepStats {
  int64_t step = 0;  // counts forwards from 1
  double scatter = 0, replicate = 0, gather = 0, reduce = 0, update = 0;
  std::vector<DeviceStepStats> devices;
  std::map<std::string, comm::PrimitiveStats> comm;  // this step's calls
  // The per-device phase table that `tandem train --devices` and `tandem trace` print.
  std::string table() const;
};

// What DataParallel does that does not depend on the module's type.
class DataParallelBase {
 public:
  DataParallelBase(std::shared_ptr<nn::Module> module, DataParallelOptions options);
  virtual ~DataParallelBase() = default;

  const std::vector<Device>& device_ids() const { return device_ids_; }
  Device output_device() const { return output_device_; }
  int64_t dim() const { return options_.dim_; }

  // The wrapped module's parameters: what an optimizer steps.
  std::vector<Tensor> parameters(bool recurse = true) const { return base_->parameters(recurse); }
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const {
    return base_->named_parameters(recurse);
  }
  std::vector<Tensor> buffers(bool recurse = true) const { return base_->buffers(recurse); }
  // The module's own keys: no "module." prefix to strip.
  StateDict state_dict() const { return base_->state_dict(); }
  // Accepts the module's keys, or keys saved from a PyTorch DataParallel ("module.fc1.weight").
  nn::Module::LoadResult load_state_dict(const StateDict& state, bool strict = true);
  void zero_grad(bool set_to_none = true) { base_->zero_grad(set_to_none); }
  void train(bool on = true) { base_->train(on); }
  void eval() { train(false); }
  bool is_training() const { return base_->is_training(); }
  // optimizer.step(), timed as this step's update phase.
  void step(optim::Optimizer& optimizer);
  // scaler.step(optimizer) (float16 training: unscale, then step unless a gradient is inf or
  // NaN), timed as the update phase. Returns whether the optimizer stepped.
  bool step(amp::GradScaler& scaler, optim::Optimizer& optimizer);

  // The replicas, one per device_ids entry, built on the first multi-device forward and reused.
  const std::vector<std::shared_ptr<nn::Module>>& replicas() const { return replicator_.replicas(); }

  // The latest step: its forward, and the backward and update that followed it so far.
  StepStats stats() const;
  std::string str() const;

 protected:
  // The devices and chunk sizes for a batch of `rows` (devices whose chunk is empty are left out).
  ScatterPlan plan(int64_t rows) const;
  std::vector<size_t> replica_indices(const ScatterPlan& plan) const;
  // Where device_ids[0] got no rows, its replica (whose buffers are the module's) did not run: the
  // first replica that ran gives its buffers (BatchNorm's running statistics) to the module.
  void keep_buffers_of_first(const ScatterPlan& plan);
  // Starts a step's accounting; returns the replicas for the plan's devices, refreshed.
  std::vector<std::shared_ptr<nn::Module>> start_step(const ScatterPlan& plan, double scatter_seconds);
  // Marks where a step's accounting starts (never waiting for a device); new_step() makes it the
  // current step's.
  void begin_step();
  // A fresh StepStats for a step over these devices, with these rows each.
  void new_step(const std::vector<Device>& devices, const std::vector<int64_t>& rows);
  void start_single_step(int64_t rows);
  // Each replica's forward and loss timers (loss: none, or one per replica).
  void finish_forward(std::vector<DeviceTimer> forward, std::vector<DeviceTimer> loss, double gather_seconds);
  // After a multi-device forward that failed: the module's buffers that the step wrote
  // (BatchNorm's running statistics, which device_ids[0]'s replica shares) get back the values
  // they had before it, as if it had not run. Those of modules in training mode are kept.
  void restore_buffers() noexcept;
  // Runs the rest of a multi-device forward, restoring the buffers where it throws.
  template <typename F>
  auto restoring_buffers(F&& f) {
    try {
      return f();
    } catch (...) {
      restore_buffers();
      throw;
    }
  }
  // Runs one replica's part of a step; if it fails, replicas waiting for it (sync_batchnorm)
  // are released.
  template <typename F>
  auto in_replica(F&& f) {
    try {
      return f();
    } catch (...) {
      for (const auto& point : sync_points_) point->abort();
      throw;
    }
  }

  std::shared_ptr<nn::Module> base_;
  DataParallelOptions options_;
  std::vector<Device> device_ids_;
  Device output_device_;
  Replicator replicator_;

 private:
  // The module's parameters and buffers must all be on device_ids[0], checked at construction and
  // before every forward (PyTorch checks there too): a module moved since would be replicated
  // from elsewhere, and its BatchNorm statistics would be left to a copy.
  void check_module_on_first_device() const;
  // Runs an optimizer's update, timed as the step's update phase.
  void timed_update(const std::function<void()>& update);

  StepStats current_;
  std::vector<DeviceTimer> forward_timers_, loss_timers_, update_timers_;  // read into stats()
  autograd::BackwardMark backward_mark_;  // where this step's backward and comm totals start
  comm::StatsMark comm_mark_;
  autograd::BackwardMark next_backward_mark_;  // the same for the step begin_step() started
  comm::StatsMark next_comm_mark_;
  int64_t learned_step_ = 0;  // the last step balanced chunking learned from
  std::vector<uint32_t> first_buffer_versions_;  // of the first replica's buffers, before its forward
  std::vector<double> seconds_per_row_;  // per device_ids entry, smoothed; 0: not measured yet
  struct SavedBuffer {
    Tensor buffer, value;
    uint32_t version;
  };
  std::vector<SavedBuffer> saved_buffers_;  // the module's, before this step (what restore_buffers() puts back)

 protected:
  std::vector<std::shared_ptr<BatchNormSyncPoint>> sync_points_;  // this step's, with sync_batchnorm
};

std::ostream& operator<<(std::ostream& out, const DataParallelBase& dp);

namespace detail {

// v with every tensor moved to `device` (differentiably), structure kept.
template <typename T>
T move_to(const T& v, Device device) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    return !v.defined() || v.device() == device ? v : to(v, device, v.dtype());
  } else if constexpr (is_vector<U>::value || is_array<U>::value) {
    T out = v;
    for (auto& e : out) e = move_to(e, device);
    return out;
  } else if constexpr (is_map<U>::value) {
    T out;
    for (const auto& [k, e] : v) out.emplace(k, move_to(e, device));
    return out;
  } else if constexpr (is_tuple_like<U>::value) {
    return std::apply([&](const auto&... e) { return T{move_to(e, device)...}; }, v);
  } else if constexpr (is_optional<U>::value) {
    return v ? T(move_to(*v, device)) : T{};
  } else if constexpr (is_variant<U>::value) {
    return std::visit([&](const auto& e) -> T { return move_to(e, device); }, v);
  } else {
    return v;
  }
}

double elapsed_since(const std::chrono::steady_clock::time_point& start);

}  // namespace detail

template <typename Impl>
class DataParallelImpl : public DataParallelBase {
 public:
  explicit DataParallelImpl(std::shared_ptr<Impl> module, DataParallelOptions options = {})
      : DataParallelBase(module, std::move(options)), module_(std::move(module)) {}

  // The wrapped module (PyTorch's dp.module).
  const std::shared_ptr<Impl>& module() const { return module_; }

  // The module's forward on the whole batch, computed as described at the top of this file.
  // Every tensor argument is split along dim; other arguments reach every replica whole.
  template <typename... Args>
  auto forward(const Args&... args) {
    using Result = std::decay_t<decltype(module_->forward(args...))>;
    begin_step();
    const auto start = std::chrono::steady_clock::now();
    std::optional<int64_t> rows = batch_rows(dim(), args...);
    if (!rows || device_ids().size() == 1) {
      // No batch to split, or one device: the module itself runs, as PyTorch does, on its
      // arguments moved to device_ids[0]; its output goes to output_device, and is the module's
      // own output where it is there already (PyTorch's too). Several devices copy even the
      // output of a lone replica, as a gather does.
      start_single_step(rows.value_or(0));
      std::vector<DeviceTimer> forward;
      forward.emplace_back(device_ids().front());
      std::vector<Result> outputs;
      outputs.push_back(module_->forward(detail::move_to(detail::as_argument(args), device_ids().front())...));
      forward[0].stop();
      const auto gather_start = std::chrono::steady_clock::now();
      Result out = gather_outputs(outputs, output_device(), dim());
      finish_forward(std::move(forward), {}, detail::elapsed_since(gather_start));
      return out;
    }
    const ScatterPlan p = plan(*rows);
    auto inputs = scatter_arguments(p, args...);
    auto replicas = start_step(p, detail::elapsed_since(start));
    return restoring_buffers([&] {
      std::vector<DeviceTimer> forward;
      std::vector<Result> outputs = parallel_apply(
          p.devices,
          [&](size_t i) {
            return in_replica([&] {
              return std::apply([&](const auto&... a) { return replica(replicas[i])->forward(a...); }, inputs[i]);
            });
          },
          &forward, "forward", replica_indices(p));
      const auto gather_start = std::chrono::steady_clock::now();
      keep_buffers_of_first(p);
      // Copied even from a lone replica on output_device, as PyTorch's gather copies: the output
      // does not share memory with the chunk a replica returned as it was.
      Result out = gather_outputs(outputs, output_device(), dim(), /*always_copy=*/true);
      finish_forward(std::move(forward), {}, detail::elapsed_since(gather_start));
      return out;
    });
  }

  // The loss computed inside the replicas: replica i runs criterion(forward(chunk i), target
  // chunk i); the result, on output_device, is the loss of the whole batch. Only one or two
  // numbers per replica travel, and no device holds all outputs. The criterion returns either
  // - a 0-dim mean over its chunk: the chunks' means are weighted by their shares of the rows,
  //   exact where every row counts alike (mse, l1, cross-entropy without weight or ignored rows);
  //   a sum must come as a LossSum without a denominator, as weighting would scale it down;
  // - a LossSum (chunk_loss.h): the sum of the chunk's losses and the denominator of its mean;
  // - or it is one of tandem's loss modules: CrossEntropyLoss and NLLLoss, whose sums and
  //   denominators (the targets' class weights, rows with ignore_index left out) are computed
  //   here, and the others that take an output and a target (MSELoss, L1Loss, SmoothL1Loss,
  //   HuberLoss, BCELoss, BCEWithLogitsLoss, KLDivLoss, SoftMarginLoss, HingeEmbeddingLoss,
  //   PoissonNLLLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, MultiLabelMarginLoss), as sums
  //   and counts of elements or samples (rows for KLDivLoss's batchmean); with reduction sum or
  //   mean, and their weight buffers on each chunk's device (a weight with one entry per row of
  //   the batch, the chunk's rows of it): exact in every case. The last three, a loss per sample
  //   over its classes, take a batch split along dim 0 only.
  template <typename Criterion, typename Target, typename... Args>
  Tensor forward_with_loss(Criterion&& criterion, const Target& target, const Args&... args) {
    begin_step();
    const auto start = std::chrono::steady_clock::now();
    std::optional<int64_t> rows = batch_rows(dim(), args...);
    TD_CHECK(rows.has_value(), "DataParallel::forward_with_loss: no tensor among the inputs to split into chunks");
    if (device_ids().size() == 1) {
      // The target is checked as it is on several devices, where it is split by rows: a target
      // that only one device would take, broadcast by the criterion, is refused here too.
      ScatterPlan whole;
      whole.dim = dim();
      whole.rows = *rows;
      detail::check_all_scatterable(whole, target);
      start_single_step(*rows);
      std::vector<DeviceTimer> forward, loss_timer;
      forward.emplace_back(device_ids().front());
      const Device home = device_ids().front();
      auto out = module_->forward(detail::move_to(detail::as_argument(args), home)...);
      forward[0].stop();
      loss_timer.emplace_back(home);
      auto [part, dtype] = chunk_loss(criterion, out, detail::move_to(target, home), {dim(), 0, *rows, *rows});
      Tensor loss = part.denominator.defined() ? part.sum / part.denominator.detach() : part.sum;
      loss = loss.to(dtype);
      loss_timer[0].stop();
      auto gather_start = std::chrono::steady_clock::now();
      loss = detail::move_to(loss, output_device());
      finish_forward(std::move(forward), std::move(loss_timer), detail::elapsed_since(gather_start));
      return loss;
    }
    const ScatterPlan p = plan(*rows);
    detail::check_all_scatterable(p, target);
    auto inputs = scatter_arguments(p, args...);
    auto targets = detail::scatter_value(target, p);
    auto replicas = start_step(p, detail::elapsed_since(start));
    return restoring_buffers([&] {
      std::vector<DeviceTimer> forward(p.devices.size()), loss_timers(p.devices.size());
      std::vector<ChunkLoss> parts = parallel_apply(
          p.devices,
          [&](size_t i) {
            return in_replica([&] {
              auto t0 = std::chrono::steady_clock::now();
              forward[i] = DeviceTimer(p.devices[i]);
              auto out = std::apply([&](const auto&... a) { return replica(replicas[i])->forward(a...); }, inputs[i]);
              forward[i].stop();
              trace::record("forward", p.devices[i].str(), t0, std::chrono::steady_clock::now());
              auto t1 = std::chrono::steady_clock::now();
              loss_timers[i] = DeviceTimer(p.devices[i]);
              const int64_t start = std::accumulate(
                  p.chunk_sizes.begin(), p.chunk_sizes.begin() + static_cast<std::ptrdiff_t>(i), int64_t{0});
              ChunkLoss part = chunk_loss(criterion, out, targets[i], {dim(), start, p.chunk_sizes[i], p.rows});
              loss_timers[i].stop();
              trace::record("loss", p.devices[i].str(), t1, std::chrono::steady_clock::now());
              return part;
            });
          },
          nullptr, nullptr, replica_indices(p));  // traced as forward and loss above
      const auto gather_start = std::chrono::steady_clock::now();
      keep_buffers_of_first(p);
      const DType dtype = parts[0].dtype;
      const bool divided = parts[0].part.denominator.defined();
      std::vector<Tensor> values;  // per replica: its sum, then its denominator if there is one
      for (size_t i = 0; i < parts.size(); ++i) {
        const LossSum& part = parts[i].part;
        TD_CHECK(part.denominator.defined() == divided && parts[i].dtype == dtype,
                 "DataParallel::forward_with_loss: the criterion's results disagree between replicas: replica 0 on ",
                 p.devices[0].str(), " returned a ", dtype_name(dtype), " loss ", divided ? "with" : "without",
                 " a denominator, replica ", i, " on ", p.devices[i].str(), " a ", dtype_name(parts[i].dtype), " loss ",
                 part.denominator.defined() ? "with" : "without", " one");
        // 16-bit sums of many rows could overflow: they travel and add up in float32.
        Tensor sum = part.sum.to(detail::wide(dtype));
        values.push_back(divided ? stack({sum, part.denominator.detach().to(sum.dtype())}) : sum);
      }
      Tensor gathered = gather_outputs(values, output_device(), 0);
      Tensor loss = divided ? gathered.view({-1, 2}).select(1, 0).sum() / gathered.view({-1, 2}).select(1, 1).sum()
                            : gathered.sum();
      loss = loss.to(dtype);
      finish_forward(std::move(forward), std::move(loss_timers), detail::elapsed_since(gather_start));
      return loss;
    });
  }

 private:
  // One chunk's part of the batch's loss (chunk_loss.h); `rows`: where the chunk lies in the batch.
  using ChunkLoss = detail::ChunkLoss;
  template <typename Criterion, typename Output, typename Target>
  static ChunkLoss chunk_loss(Criterion& criterion, const Output& out, const Target& target,
                              const detail::ChunkRows& rows) {
    if constexpr (detail::is_class_loss_module<Criterion>) {
      return detail::class_loss_sum(detail::loss_impl(criterion), out, target);
    } else if constexpr (detail::is_elementwise_loss_module<Criterion>) {
      return detail::elementwise_loss_sum(detail::loss_impl(criterion), out, target, rows);
    } else {
      auto result = criterion(out, target);
      if constexpr (std::is_same_v<decltype(result), LossSum>) {
        TD_CHECK(result.sum.defined() && result.sum.dim() == 0 &&
                     (!result.denominator.defined() || result.denominator.dim() == 0),
                 "DataParallel::forward_with_loss: the criterion's LossSum must hold a 0-dim sum and a 0-dim "
                 "denominator (or none)");
        return {result, result.sum.dtype()};
      } else {
        Tensor loss = result;
        TD_CHECK(loss.defined() && loss.dim() == 0, "DataParallel::forward_with_loss: the criterion must return a "
                 "0-dim loss (the mean over the chunk) or a LossSum, but returned shape ",
                 loss.defined() ? shape_str(loss.sizes()) : std::string("undefined"));
        const double share = rows.share();
        return {{share == 1.0 ? loss : loss * share, Tensor()}, loss.dtype()};
      }
    }
  }

  Impl* replica(const std::shared_ptr<nn::Module>& m) const {
    if constexpr (std::is_same_v<Impl, nn::Module>) return m.get();
    auto* r = dynamic_cast<Impl*>(m.get());
    TD_CHECK(r != nullptr, "DataParallel: clone() of ", base_->name(), " made a ", m->name(),
             "; a module must be Cloneable as its own type to be replicated");
    return r;
  }

  std::shared_ptr<Impl> module_;
};

// A shared handle, used as a module holder is: `td::parallel::DataParallel dp(model);`,
// `dp(x)`, `dp->parameters()`, `dp->stats()`.
template <typename Impl>
class DataParallel {
 public:
  DataParallel(std::shared_ptr<Impl> module, DataParallelOptions options = {})
      : impl_(std::make_shared<DataParallelImpl<Impl>>(std::move(module), std::move(options))) {}
  DataParallel(const nn::ModuleHolder<Impl>& module, DataParallelOptions options = {})
      : DataParallel(module.ptr(), std::move(options)) {}

  DataParallelImpl<Impl>* operator->() const { return impl_.get(); }
  DataParallelImpl<Impl>& operator*() const { return *impl_; }
  template <typename... Args>
  auto operator()(const Args&... args) const {
    return impl_->forward(args...);
  }

 private:
  std::shared_ptr<DataParallelImpl<Impl>> impl_;
};

template <typename Impl>
DataParallel(std::shared_ptr<Impl>) -> DataParallel<Impl>;
template <typename Impl>
DataParallel(std::shared_ptr<Impl>, DataParallelOptions) -> DataParallel<Impl>;
template <typename Impl>
DataParallel(const nn::ModuleHolder<Impl>&) -> DataParallel<Impl>;
template <typename Impl>
DataParallel(const nn::ModuleHolder<Impl>&, DataParallelOptions) -> DataParallel<Impl>;

template <typename Impl>
std::ostream& operator<<(std::ostream& out, const DataParallel<Impl>& dp) {
  return out << *dp;
}

// The functional form (PyTorch's nn.parallel.data_parallel, LibTorch's
// torch::nn::parallel::data_parallel): one data-parallel forward of `module`, with replicas made
// for this call alone. Backward through the result reduces the gradients onto the module's
// parameters, as DataParallel's does. For a training loop, a DataParallel is the better choice: it
// keeps its replicas from step to step and reports what each step did.
// With every option of DataParallel, and any arguments of the module's forward:
template <typename Impl, typename... Args>
auto data_parallel(std::shared_ptr<Impl> module, DataParallelOptions options, const Args&... args) {
  return DataParallelImpl<Impl>(std::move(module), std::move(options)).forward(args...);
}
template <typename Impl, typename... Args>
auto data_parallel(const nn::ModuleHolder<Impl>& module, DataParallelOptions options, const Args&... args) {
  return data_parallel(module.ptr(), std::move(options), args...);
}
// LibTorch's form: `devices` empty: visible_devices(); output_device: devices[0].
template <typename Impl>
auto data_parallel(std::shared_ptr<Impl> module, const Tensor& input, std::vector<Device> devices = {},
                   std::optional<Device> output_device = std::nullopt, int64_t dim = 0) {
  DataParallelOptions options(std::move(devices));
  options.dim(dim);
  if (output_device) options.output_device(*output_device);
  return data_parallel(std::move(module), std::move(options), input);
}
template <typename Impl>
auto data_parallel(const nn::ModuleHolder<Impl>& module, const Tensor& input, std::vector<Device> devices = {},
                   std::optional<Device> output_device = std::nullopt, int64_t dim = 0) {
  return data_parallel(module.ptr(), input, std::move(devices), output_device, dim);
}

}  // namespace tandem::parallel
