#include "parallel/comm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>

#include "core/device_threads.h"
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "core/trace.h"
#include "kernels/backend.h"
#include "kernels/elementwise.h"
#include "kernels/index.h"
#include "kernels/views.h"
#include "parallel/nccl.h"

namespace tandem::parallel::comm {

namespace {

std::mutex g_stats_mutex;
std::map<std::string, PrimitiveStats> g_stats;

// Times one primitive call and adds it, with the bytes it moved, to comm_stats(); a null name
// counts nothing.
class Record {
 public:
  explicit Record(const char* name) : name_(name), start_(std::chrono::steady_clock::now()) {}
  ~Record() {
    if (!name_) return;  // a helper's count inside a primitive that counts the whole
    const auto end = std::chrono::steady_clock::now();
    trace::record(name_, "comm", start_, end);
    double seconds = std::chrono::duration<double>(end - start_).count();
    std::lock_guard lock(g_stats_mutex);
    PrimitiveStats& s = g_stats[name_];
    s.calls += 1;
    s.bytes += bytes_;
    s.seconds += seconds;
  }
  void moved(const Tensor& t, Device from, Device to) {
    if (from != to) bytes_ += static_cast<int64_t>(t.nbytes());
  }

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_;
  int64_t bytes_ = 0;
};

// Collectives over GPUs run as copies and add kernels ordered by events (TANDEM_COMM=kernels, the
// default), or through NCCL (TANDEM_COMM=nccl) where the devices are distinct GPUs and the tensors
// suit it; anything NCCL cannot serve falls back to the kernels.
bool use_nccl(const std::vector<Tensor>& tensors) {
  static const bool nccl = [] {
    const char* env = std::getenv("TANDEM_COMM");
    if (env == nullptr || std::string(env) == "kernels") return false;
    TD_CHECK(std::string(env) == "nccl", "TANDEM_COMM='", env, "': expected kernels or nccl");
    return true;
  }();
  return nccl && nccl::can_serve(tensors);
}

void check_tensors(const std::vector<Tensor>& tensors, const char* op) {
  TD_CHECK(!tensors.empty(), op, ": expected at least one tensor");
  for (size_t i = 0; i < tensors.size(); ++i) {
    TD_CHECK(tensors[i].defined(), op, ": tensor ", i, " is undefined");
  }
}

void check_devices(const std::vector<Device>& devices, const char* op) {
  TD_CHECK(!devices.empty(), op, ": expected at least one device");
  auto twice = repeated_device(devices);
  TD_CHECK(!twice, op, ": device ", *twice, " is listed twice");
}

// Tensors on distinct devices with one shape and dtype (the inputs of the reductions).
void check_same_layout(const std::vector<Tensor>& tensors, const char* op, bool distinct_devices) {
  check_tensors(tensors, op);
  const Tensor& first = tensors[0];
  for (size_t i = 1; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    TD_CHECK(t.sizes() == first.sizes(), op, ": tensor ", i, " on ", t.device(), " has shape ", shape_str(t.sizes()),
             " but tensor 0 on ", first.device(), " has shape ", shape_str(first.sizes()));
    TD_CHECK(t.dtype() == first.dtype(), op, ": tensor ", i, " on ", t.device(), " has dtype ", t.dtype(),
             " but tensor 0 on ", first.device(), " has dtype ", first.dtype());
    if (!distinct_devices) continue;
    for (size_t j = 0; j < i; ++j) {
      TD_CHECK(t.device() != tensors[j].device(), op, ": tensors ", j, " and ", i, " are both on ", t.device(),
               "; expected one tensor per device");
    }
  }
}

// Runs task(d) for each device on that device's worker thread, rethrowing the first failure.
// Called on a device's thread (a collective inside a replica's forward or backward), it does all
// the work right there: waiting for other devices' threads, which may be waiting for this one,
// could deadlock.
void on_each_device(const std::vector<Device>& devices, const std::function<void(size_t)>& task) {
  if (devices.size() == 1 || current_device_thread() != nullptr) {
    for (size_t d = 0; d < devices.size(); ++d) task(d);
    return;
  }
  std::vector<std::function<void()>> tasks;
  for (size_t d = 0; d < devices.size(); ++d) tasks.push_back([&task, d] { task(d); });
  for (const std::exception_ptr& e : run_on_device_threads(devices, tasks)) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

std::vector<Tensor> broadcast(const Tensor& tensor, const std::vector<Device>& devices) {
  TD_CHECK(tensor.defined(), "broadcast: the tensor is undefined");
  check_devices(devices, "broadcast");
  Record record("broadcast");
  std::vector<Tensor> out(devices.size());
  on_each_device(devices, [&](size_t d) {
    out[d] = devices[d] == tensor.device() ? tensor : kernels::to(tensor, devices[d]);
  });
  for (const Device& d : devices) record.moved(tensor, tensor.device(), d);
  return out;
}

void broadcast_into(const Tensor& tensor, const std::vector<Tensor>& outputs) {
  TD_CHECK(tensor.defined(), "broadcast_into: the tensor is undefined");
  check_tensors(outputs, "broadcast_into");
  std::vector<Device> devices;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    TD_CHECK(o.sizes() == tensor.sizes() && o.dtype() == tensor.dtype(), "broadcast_into: output ", i, " on ",
             o.device(), " is ", o.dtype(), shape_str(o.sizes()), " but the tensor is ", tensor.dtype(),
             shape_str(tensor.sizes()));
    devices.push_back(o.device());
  }
  check_devices(devices, "broadcast_into");
  Record record("broadcast");
  for (const Device& d : devices) record.moved(tensor, tensor.device(), d);
  auto root = std::find_if(outputs.begin(), outputs.end(), [&](const Tensor& o) { return o.is_same(tensor); });
  if (root != outputs.end() && use_nccl(outputs)) {
    nccl::broadcast(outputs, static_cast<size_t>(root - outputs.begin()));
    for (const Tensor& o : outputs) {
      if (!o.is_same(tensor)) o.bump_version();
    }
    return;
  }
  on_each_device(devices, [&](size_t d) {
    if (!outputs[d].is_same(tensor)) kernels::copy_(outputs[d], tensor);
  });
}

void broadcast_coalesced_into(const std::vector<Tensor>& tensors, const std::vector<std::vector<Tensor>>& outputs,
                              int64_t buffer_size) {
  TD_CHECK(buffer_size > 0, "broadcast_coalesced: buffer_size must be positive, got ", buffer_size);
  std::vector<Device> devices;
  for (size_t d = 0; d < outputs.size(); ++d) {
    TD_CHECK(outputs[d].size() == tensors.size(), "broadcast_coalesced: ", outputs[d].size(), " outputs in list ", d,
             " for ", tensors.size(), " tensors");
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor &t = tensors[i], &o = outputs[d][i];
      TD_CHECK(t.defined() && o.defined(), "broadcast_coalesced: tensor ", i, " or its output in list ", d,
               " is undefined");
      TD_CHECK(o.sizes() == t.sizes() && o.dtype() == t.dtype(), "broadcast_coalesced: output ", i, " in list ", d,
               " is ", o.dtype(), shape_str(o.sizes()), " but tensor ", i, " is ", t.dtype(), shape_str(t.sizes()));
      TD_CHECK(o.device() == outputs[d][0].device(), "broadcast_coalesced: the outputs in list ", d,
               " are on several devices (", outputs[d][0].device(), ", ", o.device(), ")");
    }
    if (!outputs[d].empty()) devices.push_back(outputs[d][0].device());
  }
  if (devices.size() != outputs.size()) return;  // no tensors
  check_devices(devices, "broadcast_coalesced");
  Record record("broadcast_coalesced");
  on_each_device(devices, [&](size_t d) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!outputs[d][i].is_same(tensors[i])) kernels::copy_(outputs[d][i], tensors[i]);
    }
  });
  for (const Device& d : devices) {
    for (const Tensor& t : tensors) record.moved(t, t.device(), d);
  }
}

std::vector<std::vector<Tensor>> broadcast_coalesced(const std::vector<Tensor>& tensors,
                                                     const std::vector<Device>& devices, int64_t buffer_size) {
  check_devices(devices, "broadcast_coalesced");
  TD_CHECK(buffer_size > 0, "broadcast_coalesced: buffer_size must be positive, got ", buffer_size);
  for (size_t i = 0; i < tensors.size(); ++i) {
    TD_CHECK(tensors[i].defined(), "broadcast_coalesced: tensor ", i, " is undefined");
    TD_CHECK(tensors[i].device() == tensors[0].device(), "broadcast_coalesced: all tensors must be on one device, "
             "but tensor 0 is on ", tensors[0].device(), " and tensor ", i, " on ", tensors[i].device());
  }
  Record record("broadcast_coalesced");
  std::vector<std::vector<Tensor>> out(devices.size(), std::vector<Tensor>(tensors.size()));
  // On CPU devices a buffer would only add a copy: each device's worker copies the tensors
  // straight into its own memory; buffer_size matters to the device backends that stage.
  on_each_device(devices, [&](size_t d) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      out[d][i] = devices[d] == tensors[i].device() ? tensors[i] : kernels::to(tensors[i], devices[d]);
    }
  });
  for (const Device& d : devices) {
    for (const Tensor& t : tensors) record.moved(t, t.device(), d);
  }
  return out;
}

std::vector<int64_t> even_chunk_sizes(int64_t size, int64_t chunks) {
  TD_CHECK(chunks >= 1, "scatter: the number of chunks must be at least 1, got ", chunks);
  TD_CHECK(size >= 0, "scatter: size ", size, " is negative");
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < chunks; ++i) {
    int64_t rows = size / chunks + (i < size % chunks ? 1 : 0);
    if (rows > 0) sizes.push_back(rows);
  }
  if (sizes.empty()) sizes.push_back(0);  // an empty batch still goes to one device
  return sizes;
}

std::vector<Tensor> scatter(const Tensor& tensor, const std::vector<Device>& devices,
                            const std::optional<std::vector<int64_t>>& chunk_sizes, int64_t dim) {
  TD_CHECK(tensor.defined(), "scatter: the tensor is undefined");
  check_devices(devices, "scatter");
  TD_CHECK(tensor.dim() > 0, "scatter: a 0-dim tensor cannot be split along a dim");
  const int64_t d = wrap_dim(dim, tensor.dim(), "scatter");
  const int64_t size = tensor.sizes()[d];
  std::vector<int64_t> sizes;
  if (chunk_sizes) {
    sizes = *chunk_sizes;
    TD_CHECK(sizes.size() == devices.size(), "scatter: ", sizes.size(), " chunk sizes for ", devices.size(),
             " devices");
    int64_t total = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      TD_CHECK(sizes[i] >= 0, "scatter: chunk size ", i, " is negative (", sizes[i], ")");
      total += sizes[i];
    }
    TD_CHECK(total == size, "scatter: chunk sizes add up to ", total, " but the tensor of shape ",
             shape_str(tensor.sizes()), " has ", size, " along dim ", d);
  } else {
    sizes = even_chunk_sizes(size, static_cast<int64_t>(devices.size()));
  }
  Record record("scatter");
  std::vector<Tensor> out(sizes.size());
  std::vector<Device> used(devices.begin(), devices.begin() + static_cast<int64_t>(sizes.size()));
  std::vector<int64_t> starts(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) starts[i] = starts[i - 1] + sizes[i - 1];
  on_each_device(used, [&](size_t i) {
    Tensor chunk = kernels::narrow(tensor, d, starts[i], sizes[i]);
    out[i] = used[i] == tensor.device() ? chunk : kernels::to(chunk, used[i]);
  });
  for (size_t i = 0; i < out.size(); ++i) record.moved(out[i], tensor.device(), used[i]);
  return out;
}

namespace {

// Checks gather's inputs; returns the wrapped dim.
int64_t check_gather(const std::vector<Tensor>& tensors, int64_t dim, const char* op) {
  check_tensors(tensors, op);
  const Tensor& first = tensors[0];
  TD_CHECK(first.dim() > 0, op, ": 0-dim tensors cannot be joined along a dim; unsqueeze them first");
  const int64_t d = wrap_dim(dim, first.dim(), op);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    TD_CHECK(t.dtype() == first.dtype(), op, ": tensor ", i, " on ", t.device(), " has dtype ", t.dtype(),
             " but tensor 0 has ", first.dtype());
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.sizes()[k] == first.sizes()[k];
    TD_CHECK(same, op, ": tensor ", i, " on ", t.device(), " has shape ", shape_str(t.sizes()),
             " but tensor 0 has shape ", shape_str(first.sizes()), "; they may differ only along dim ", d);
  }
  return d;
}

Tensor concat_on(const std::vector<Tensor>& tensors, int64_t d, Device destination, Record& record) {
  Shape shape = tensors[0].sizes();
  shape[d] = 0;
  for (const Tensor& t : tensors) shape[d] += t.sizes()[d];
  Tensor out = kernels::empty_tensor(shape, tensors[0].dtype(), destination);
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    kernels::copy_into(kernels::narrow(out, d, start, t.sizes()[d]), t);
    start += t.sizes()[d];
    record.moved(t, t.device(), destination);
  }
  return out;
}

// The sum of one tensor per device, on destination, added in the order of the group in one pass.
// A CPU destination reads CPU devices' tensors where they are (their memory is the host's); a GPU
// destination first copies each other device's tensor into its own memory (peer to peer where
// the GPUs allow), ordered after that device's work by events.
Tensor sum_on(const std::vector<Tensor>& group, Device destination, Record& record) {
  auto root = std::find_if(group.begin(), group.end(), [&](const Tensor& t) { return t.device() == destination; });
  if (root != group.end() && use_nccl(group)) {
    for (const Tensor& t : group) record.moved(t, t.device(), destination);
    Tensor sum = kernels::empty_tensor(group[0].sizes(), group[0].dtype(), destination);
    nccl::reduce(group, sum, static_cast<size_t>(root - group.begin()));
    return sum;
  }
  std::vector<Tensor> inputs;
  for (const Tensor& t : group) {
    const bool readable = t.device() == destination || (t.is_cpu() && destination.is_cpu());
    inputs.push_back(kernels::contiguous(readable ? t : kernels::to(t, destination)));
    record.moved(t, t.device(), destination);
  }
  Tensor sum = kernels::empty_tensor(group[0].sizes(), group[0].dtype(), destination);
  kernels::add_n_into(sum, inputs);
  return sum;
}

void check_reduce_group(const std::vector<Tensor>& group, const char* op) {
  check_same_layout(group, op, true);
  TD_CHECK(group[0].dtype() != kBool, op, ": bool tensors cannot be added");
}

std::vector<Device> devices_of(const std::vector<Tensor>& tensors) {
  std::vector<Device> devices;
  for (const Tensor& t : tensors) devices.push_back(t.device());
  return devices;
}

}  // namespace

Tensor gather(const std::vector<Tensor>& tensors, int64_t dim, Device destination) {
  const int64_t d = check_gather(tensors, dim, "gather");
  Record record("gather");
  return concat_on(tensors, d, destination, record);
}

Tensor reduce_add(const std::vector<Tensor>& tensors, std::optional<Device> destination) {
  check_reduce_group(tensors, "reduce_add");
  Record record("reduce_add");
  return sum_on(tensors, destination.value_or(tensors[0].device()), record);
}

std::vector<Tensor> reduce_add_coalesced(const std::vector<std::vector<Tensor>>& per_device,
                                         std::optional<Device> destination, int64_t buffer_size) {
  TD_CHECK(!per_device.empty(), "reduce_add_coalesced: expected tensors from at least one device");
  TD_CHECK(buffer_size > 0, "reduce_add_coalesced: buffer_size must be positive, got ", buffer_size);
  const size_t count = per_device[0].size();
  std::vector<std::vector<Tensor>> by_tensor(count);  // [tensor][device]
  for (size_t d = 0; d < per_device.size(); ++d) {
    TD_CHECK(per_device[d].size() == count, "reduce_add_coalesced: device list ", d, " has ", per_device[d].size(),
             " tensors but list 0 has ", count);
    for (size_t i = 0; i < count; ++i) by_tensor[i].push_back(per_device[d][i]);
  }
  for (const auto& group : by_tensor) check_reduce_group(group, "reduce_add_coalesced");
  Record record("reduce_add_coalesced");
  // On CPU devices the sums read every source in place, so buffers would only add copies.
  std::vector<Tensor> out;
  for (const auto& group : by_tensor) out.push_back(sum_on(group, destination.value_or(group[0].device()), record));
  return out;
}

void all_reduce(const std::vector<Tensor>& tensors) {
  check_reduce_group(tensors, "all_reduce");
  for (const Tensor& t : tensors) kernels::check_no_internal_overlap(t, "all_reduce");
  Record record("all_reduce");
  const std::vector<Device> devices = devices_of(tensors);
  if (use_nccl(tensors)) {
    nccl::all_reduce(tensors);
    for (const Tensor& t : tensors) {
      t.bump_version();
      record.moved(t, t.device(), devices[0]);  // each tensor's share crosses once each way
      record.moved(t, devices[0], t.device());
    }
    return;
  }
  Tensor sum = sum_on(tensors, devices[0], record);
  on_each_device(devices, [&](size_t d) { kernels::copy_(tensors[d], sum); });
  for (const Device& d : devices) record.moved(sum, devices[0], d);
}

std::vector<Tensor> all_gather(const std::vector<Tensor>& tensors, int64_t dim) {
  const int64_t d = check_gather(tensors, dim, "all_gather");
  const std::vector<Device> devices = devices_of(tensors);
  check_devices(devices, "all_gather");
  Record record("all_gather");
  std::vector<Tensor> out(tensors.size());
  std::mutex mutex;
  on_each_device(devices, [&](size_t i) {
    Record uncounted(nullptr);  // the totals are counted below
    Tensor joined = concat_on(tensors, d, devices[i], uncounted);
    std::lock_guard lock(mutex);
    out[i] = joined;
  });
  for (const Device& dest : devices) {
    for (const Tensor& t : tensors) record.moved(t, t.device(), dest);
  }
  return out;
}

std::vector<Tensor> reduce_scatter(const std::vector<Tensor>& tensors, int64_t dim) {
  check_reduce_group(tensors, "reduce_scatter");
  const Tensor& first = tensors[0];
  TD_CHECK(first.dim() > 0, "reduce_scatter: 0-dim tensors cannot be split along a dim");
  const int64_t d = wrap_dim(dim, first.dim(), "reduce_scatter");
  const int64_t n = static_cast<int64_t>(tensors.size());
  TD_CHECK(first.sizes()[d] % n == 0, "reduce_scatter: size ", first.sizes()[d], " along dim ", d, " of shape ",
           shape_str(first.sizes()), " does not divide evenly into ", n, " chunks");
  const std::vector<Device> devices = devices_of(tensors);
  Record record("reduce_scatter");
  const int64_t rows = first.sizes()[d] / n;
  std::vector<Tensor> out(tensors.size());
  // Device i sums chunk i of every tensor into its own memory.
  on_each_device(devices, [&](size_t i) {
    std::vector<Tensor> chunks;
    for (const Tensor& t : tensors) chunks.push_back(kernels::narrow(t, d, static_cast<int64_t>(i) * rows, rows));
    Record uncounted(nullptr);  // the totals are counted below
    out[i] = sum_on(chunks, devices[i], uncounted);
  });
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (const Tensor& t : tensors) record.moved(out[i], t.device(), devices[i]);
  }
  return out;
}

std::map<std::string, PrimitiveStats> comm_stats() {
  std::lock_guard lock(g_stats_mutex);
  return g_stats;
}

void reset_comm_stats() {
  std::lock_guard lock(g_stats_mutex);
  g_stats.clear();
}

}  // namespace tandem::parallel::comm
