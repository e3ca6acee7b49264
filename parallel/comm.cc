#include "parallel/comm.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>

#include "core/cuda.h"
#include "core/device_threads.h"
#include "core/device_timer.h"
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
std::map<std::string, PrimitiveStats> g_stats;  // calls and bytes since the start; the seconds are in g_seconds
StatsMark g_reset;                              // where comm_stats() counts from
DeviceSeconds<std::string>& g_seconds() {
  static auto* seconds = new DeviceSeconds<std::string>();  // never destroyed: workers may outlive statics
  return *seconds;
}
// NCCL collectives this thread has launched: a primitive during which the count rose was served
// by NCCL. A primitive that launches them on devices' threads (reduce_scatter) adds one here for
// them.
thread_local int64_t t_nccl_launches = 0;

// Times one primitive call and adds it, with the bytes it moved, to comm_stats(); a null name
// counts nothing. The time is the host's, or, where GPUs take part, the longest any of them spent
// on the call's work (which queues on their streams and may wait there for other devices'). A call
// made on a device's own thread (a replica's synchronised batch norm gathering the others'
// statistics) times that device's stream only: another device's stream also holds what that
// device's thread queued meanwhile, its replica's forward.
class Record {
 public:
  Record(const char* name, const std::vector<Device>& devices)
      : name_(name), start_(std::chrono::steady_clock::now()), nccl_launches_(t_nccl_launches) {
    if (!name_) return;  // a helper's count inside a primitive that counts the whole
    timers_.emplace_back(Device(kCPU));
    const Device* own = current_device_thread();
    for (const Device& d : devices) {
      const bool timed = std::any_of(timers_.begin(), timers_.end(), [&](const DeviceTimer& t) { return t.device() == d; });
      if (d.is_cuda() && !timed && (!own || *own == d)) timers_.emplace_back(d);
    }
  }
  ~Record() {
    if (!name_) return;
    const auto end = std::chrono::steady_clock::now();
    trace::record(name_, "comm", start_, end);
    try {
      for (DeviceTimer& t : timers_) t.stop();
      g_seconds().add(name_, std::move(timers_));
    } catch (...) {
      // A GPU that cannot record an event fails the next op as well; the count goes without its time.
    }
    std::lock_guard lock(g_stats_mutex);
    PrimitiveStats& s = g_stats[name_];
    s.calls += 1;
    s.bytes += bytes_;
    if (t_nccl_launches != nccl_launches_) s.nccl_calls += 1;
  }
  void moved(const Tensor& t, Device from, Device to) {
    if (from != to) bytes_ += static_cast<int64_t>(t.nbytes());
  }

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_;
  std::vector<DeviceTimer> timers_;
  int64_t bytes_ = 0;
  int64_t nccl_launches_;  // this thread's count when the call began
};

std::vector<Device> devices_of(const std::vector<Tensor>& tensors) {
  std::vector<Device> devices;
  for (const Tensor& t : tensors) devices.push_back(t.device());
  return devices;
}

// `devices` and `also`, for a Record.
std::vector<Device> with(std::vector<Device> devices, Device also) {
  devices.push_back(also);
  return devices;
}

}  // namespace

bool nccl_requested() {
  static const bool nccl = [] {
    const char* env = std::getenv("TANDEM_COMM");
    if (env == nullptr || std::string(env) == "kernels") return false;
    TD_CHECK(std::string(env) == "nccl", "TANDEM_COMM='", env, "': expected kernels or nccl");
    return true;
  }();
  return nccl;
}

namespace {

bool use_nccl(const std::vector<Tensor>& tensors) { return nccl_requested() && nccl::can_serve(tensors); }

// With TANDEM_COMM=nccl, where the source and the devices are distinct GPUs: the contiguous
// `tensor` on every device (itself on its own), sent by one NCCL broadcast; otherwise nothing, and
// the caller copies it to each device.
std::vector<Tensor> broadcast_by_nccl(const Tensor& tensor, const std::vector<Device>& devices) {
  if (!nccl_requested()) return {};
  std::vector<Tensor> members{tensor}, probes{kernels::empty_tensor({0}, tensor.dtype(), tensor.device())};
  for (const Device& d : devices) {
    if (d != tensor.device()) probes.push_back(kernels::empty_tensor({0}, tensor.dtype(), d));
  }
  if (!nccl::can_serve(probes)) return {};
  for (const Device& d : devices) {
    if (d != tensor.device()) members.push_back(kernels::empty_tensor(tensor.sizes(), tensor.dtype(), d));
  }
  nccl::broadcast(members, 0);
  ++t_nccl_launches;
  std::vector<Tensor> arrived;
  size_t next = 1;
  for (const Device& d : devices) arrived.push_back(d == tensor.device() ? tensor : members[next++]);
  return arrived;
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
// could deadlock. `moves(d)` says whether device d's task moves data at all (the source's own
// device usually has nothing to copy). Where every device is a CPU device, whose memory is the
// host's, the tasks that move nothing run right here, and so does a lone task that moves
// something, with all of the caller's intra-op threads: a worker woken for it would cost about as
// much as the copy, and the device's share of the cores would leave the others idle.
void on_each_device(const std::vector<Device>& devices, const std::function<void(size_t)>& task,
                    const std::function<bool(size_t)>& moves = nullptr) {
  if (devices.size() == 1 || current_device_thread() != nullptr) {
    for (size_t d = 0; d < devices.size(); ++d) task(d);
    return;
  }
  std::vector<size_t> working;
  const bool all_cpu = std::all_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_cpu(); });
  for (size_t d = 0; d < devices.size(); ++d) {
    if (all_cpu && moves && !moves(d)) {
      task(d);
    } else {
      working.push_back(d);
    }
  }
  if (working.empty()) return;
  if (all_cpu && working.size() == 1) return task(working[0]);
  const std::vector<cuda::Stream> streams = cuda::current_streams();  // the work queues where the caller's would
  // The devices' tasks run at the same time, so each takes its share of the intra-op threads: a
  // copy fanning out over the whole pool would hand half its work to a helper that has to be
  // woken while the other devices' tasks hold the cores.
  const int share = std::max(1, num_threads() / static_cast<int>(working.size()));
  std::vector<Device> workers;
  std::vector<std::function<void()>> tasks;
  for (size_t d : working) {
    workers.push_back(devices[d]);
    tasks.push_back([&task, streams, d, share] {
      cuda::CurrentStreamsGuard current(streams);
      ThreadLimit limit(share);
      task(d);
    });
  }
  for (const std::exception_ptr& e : run_on_device_threads(workers, tasks)) {
    if (e) std::rethrow_exception(e);
  }
}

// Whether a coalesced primitive moves its tensors through flat buffers (detail::*_buffered): where
// GPUs take part, and each list's tensors are on one device. On CPU devices every worker reads
// the sources in place, so a buffer would only add a copy.
bool buffered(const std::vector<std::vector<Tensor>>& lists, const std::vector<Device>& devices) {
  bool gpu = std::any_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_cuda(); });
  for (const std::vector<Tensor>& list : lists) {
    if (list.empty()) return false;
    for (const Tensor& t : list) {
      if (t.device() != list[0].device()) return false;
    }
    gpu = gpu || list[0].is_cuda();
  }
  return gpu;
}

}  // namespace

std::vector<Tensor> broadcast(const Tensor& tensor, const std::vector<Device>& devices) {
  TD_CHECK(tensor.defined(), "broadcast: the tensor is undefined");
  check_devices(devices, "broadcast");
  Record record("broadcast", with(devices, tensor.device()));
  std::vector<Tensor> out(devices.size());
  if (tensor.is_contiguous()) {
    std::vector<Tensor> sent = broadcast_by_nccl(tensor, devices);
    if (!sent.empty()) {
      for (const Device& d : devices) record.moved(tensor, tensor.device(), d);
      return sent;
    }
  }
  on_each_device(
      devices, [&](size_t d) { out[d] = devices[d] == tensor.device() ? tensor : kernels::to(tensor, devices[d]); },
      [&](size_t d) { return devices[d] != tensor.device(); });
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
  Record record("broadcast", with(devices, tensor.device()));
  for (const Device& d : devices) record.moved(tensor, tensor.device(), d);
  auto root = std::find_if(outputs.begin(), outputs.end(), [&](const Tensor& o) { return o.is_same(tensor); });
  if (root != outputs.end() && use_nccl(outputs)) {
    nccl::broadcast(outputs, static_cast<size_t>(root - outputs.begin()));
    ++t_nccl_launches;
    for (const Tensor& o : outputs) {
      if (!o.is_same(tensor)) o.bump_version();
    }
    return;
  }
  on_each_device(
      devices, [&](size_t d) { if (!outputs[d].is_same(tensor)) kernels::copy_(outputs[d], tensor); },
      [&](size_t d) { return !outputs[d].is_same(tensor); });
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
  std::vector<Device> involved = devices;
  for (const Tensor& t : tensors) involved.push_back(t.device());
  Record record("broadcast_coalesced", involved);
  for (const Device& d : devices) {
    for (const Tensor& t : tensors) record.moved(t, t.device(), d);
  }
  if (buffered({tensors}, devices)) return detail::broadcast_coalesced_into_buffered(tensors, outputs, buffer_size);
  on_each_device(
      devices,
      [&](size_t d) {
        for (size_t i = 0; i < tensors.size(); ++i) {
          if (!outputs[d][i].is_same(tensors[i])) kernels::copy_(outputs[d][i], tensors[i]);
        }
      },
      [&](size_t d) {
        for (size_t i = 0; i < tensors.size(); ++i) {
          if (!outputs[d][i].is_same(tensors[i])) return true;
        }
        return false;
      });
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
  Record record("broadcast_coalesced", tensors.empty() ? devices : with(devices, tensors[0].device()));
  for (const Device& d : devices) {
    for (const Tensor& t : tensors) record.moved(t, t.device(), d);
  }
  std::vector<std::vector<Tensor>> out(devices.size(), std::vector<Tensor>(tensors.size()));
  if (buffered({tensors}, devices)) {
    for (size_t d = 0; d < devices.size(); ++d) {
      for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        out[d][i] = devices[d] == t.device() ? t : kernels::empty_tensor(t.sizes(), t.dtype(), devices[d]);
      }
    }
    detail::broadcast_coalesced_into_buffered(tensors, out, buffer_size);
    return out;
  }
  on_each_device(
      devices,
      [&](size_t d) {
        for (size_t i = 0; i < tensors.size(); ++i) {
          out[d][i] = devices[d] == tensors[i].device() ? tensors[i] : kernels::to(tensors[i], devices[d]);
        }
      },
      [&](size_t d) { return tensors.empty() || devices[d] != tensors[0].device(); });
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
  std::vector<Tensor> out(sizes.size());
  std::vector<Device> used(devices.begin(), devices.begin() + static_cast<int64_t>(sizes.size()));
  Record record("scatter", with(used, tensor.device()));
  std::vector<int64_t> starts(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) starts[i] = starts[i - 1] + sizes[i - 1];
  on_each_device(
      used,
      [&](size_t i) {
        Tensor chunk = kernels::narrow(tensor, d, starts[i], sizes[i]);
        out[i] = used[i] == tensor.device() ? chunk : kernels::to(chunk, used[i]);
      },
      [&](size_t i) { return used[i] != tensor.device(); });
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
    ++t_nccl_launches;
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

}  // namespace

namespace detail {

std::vector<std::vector<size_t>> buffer_groups(const std::vector<Tensor>& tensors, int64_t buffer_size) {
  std::vector<std::vector<size_t>> groups;
  std::map<DType, std::pair<size_t, int64_t>> open;  // dtype -> its group still filling, and its bytes
  for (size_t i = 0; i < tensors.size(); ++i) {
    const DType dtype = tensors[i].dtype();
    const int64_t bytes = static_cast<int64_t>(tensors[i].nbytes());
    auto it = open.find(dtype);
    if (it != open.end() && it->second.second + bytes <= buffer_size) {
      groups[it->second.first].push_back(i);
      it->second.second += bytes;
      continue;
    }
    groups.push_back({i});
    open[dtype] = {groups.size() - 1, bytes};
  }
  return groups;
}

namespace {

// The piece of `flat` at `offset` shaped as `like`.
Tensor piece(const Tensor& flat, int64_t offset, const Tensor& like) {
  return kernels::view(kernels::narrow(flat, 0, offset, like.numel()), like.sizes());
}

// The tensors of a group one after another in a fresh 1-D tensor on `device` (theirs).
Tensor flatten_group(const std::vector<Tensor>& tensors, const std::vector<size_t>& group, Device device) {
  int64_t total = 0;
  for (size_t i : group) total += tensors[i].numel();
  Tensor flat = kernels::empty_tensor({total}, tensors[group[0]].dtype(), device);
  int64_t offset = 0;
  for (size_t i : group) {
    kernels::copy_into(piece(flat, offset, tensors[i]), tensors[i]);
    offset += tensors[i].numel();
  }
  return flat;
}

}  // namespace

void broadcast_coalesced_into_buffered(const std::vector<Tensor>& tensors,
                                       const std::vector<std::vector<Tensor>>& outputs, int64_t buffer_size) {
  if (tensors.empty()) return;
  const Device source = tensors[0].device();
  std::vector<Device> devices;
  for (const auto& list : outputs) devices.push_back(list[0].device());
  const bool elsewhere = std::any_of(devices.begin(), devices.end(), [&](const Device& d) { return d != source; });
  // One group at a time, so the source holds at most one buffer (about buffer_size bytes) more.
  for (const std::vector<size_t>& group : buffer_groups(tensors, buffer_size)) {
    const Tensor flat = elsewhere ? flatten_group(tensors, group, source) : Tensor();
    const std::vector<Tensor> sent = elsewhere ? broadcast_by_nccl(flat, devices) : std::vector<Tensor>();
    on_each_device(devices, [&](size_t d) {
      const bool here = devices[d] == source;
      const Tensor arrived = here ? Tensor() : !sent.empty() ? sent[d] : kernels::to(flat, devices[d]);
      int64_t offset = 0;
      for (size_t i : group) {
        const Tensor& out = outputs[d][i];
        if (!out.is_same(tensors[i])) kernels::copy_(out, here ? tensors[i] : piece(arrived, offset, tensors[i]));
        offset += tensors[i].numel();
      }
    });
  }
}

std::vector<Tensor> reduce_add_coalesced_buffered(const std::vector<std::vector<Tensor>>& per_device,
                                                  Device destination, int64_t buffer_size) {
  std::vector<Device> devices;
  for (const auto& list : per_device) devices.push_back(list[0].device());
  const std::vector<Tensor>& first = per_device[0];
  std::vector<Tensor> out(first.size());
  for (const std::vector<size_t>& group : buffer_groups(first, buffer_size)) {
    // Each other device's tensors cross in one buffer; the destination's own are read in place.
    std::vector<Tensor> arrived(devices.size());
    on_each_device(devices, [&](size_t d) {
      if (devices[d] != destination) arrived[d] = flatten_group(per_device[d], group, devices[d]);
    });
    bool nccl = nccl_requested() && devices.size() > 1;
    if (nccl) {  // NCCL's choice depends on the devices and the dtype only
      std::vector<Tensor> probes;
      for (const Device& d : devices) probes.push_back(kernels::empty_tensor({0}, first[group[0]].dtype(), d));
      nccl = nccl::can_serve(probes);
    }
    if (nccl) {
      // NCCL sums whole buffers: the destination's tensors join a buffer too, and the results are
      // views of the summed one.
      for (size_t d = 0; d < devices.size(); ++d) {
        if (!arrived[d].defined()) arrived[d] = flatten_group(per_device[d], group, devices[d]);
      }
      Record uncounted(nullptr, {});  // the primitive counts its bytes itself
      const Tensor sum = sum_on(arrived, destination, uncounted);
      int64_t offset = 0;
      for (size_t i : group) {
        out[i] = piece(sum, offset, first[i]);
        offset += first[i].numel();
      }
      continue;
    }
    for (size_t d = 0; d < devices.size(); ++d) {
      if (arrived[d].defined()) arrived[d] = kernels::to(arrived[d], destination);
    }
    // Each sum is fresh (an optimizer's gradient may keep it as it is), its terms in device order
    // as in the sums of single tensors: the same additions, element by element.
    int64_t offset = 0;
    for (size_t i : group) {
      std::vector<Tensor> terms;
      for (size_t d = 0; d < devices.size(); ++d) {
        terms.push_back(arrived[d].defined() ? piece(arrived[d], offset, first[i])
                                             : kernels::contiguous(per_device[d][i]));
      }
      out[i] = kernels::empty_tensor(first[i].sizes(), first[i].dtype(), destination);
      kernels::add_n_into(out[i], terms);
      offset += first[i].numel();
    }
  }
  return out;
}

}  // namespace detail

Tensor gather(const std::vector<Tensor>& tensors, int64_t dim, Device destination) {
  const int64_t d = check_gather(tensors, dim, "gather");
  Record record("gather", with(devices_of(tensors), destination));
  return concat_on(tensors, d, destination, record);
}

Tensor reduce_add(const std::vector<Tensor>& tensors, std::optional<Device> destination) {
  check_reduce_group(tensors, "reduce_add");
  Record record("reduce_add", with(devices_of(tensors), destination.value_or(tensors[0].device())));
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
  std::vector<Device> targets, involved;  // each tensor's destination; every device taking part
  for (const auto& group : by_tensor) {
    targets.push_back(destination.value_or(group[0].device()));
    involved.push_back(targets.back());
    for (const Tensor& t : group) involved.push_back(t.device());
  }
  Record record("reduce_add_coalesced", involved);
  for (size_t i = 0; i < count; ++i) {
    for (const Tensor& t : by_tensor[i]) record.moved(t, t.device(), targets[i]);
  }
  // Buffered, list 0 is on one device, so every tensor has the same destination.
  if (count > 0 && buffered(per_device, {targets[0]})) {
    return detail::reduce_add_coalesced_buffered(per_device, targets[0], buffer_size);
  }
  // On CPU devices the sums read every source in place, so buffers would only add copies.
  Record uncounted(nullptr, {});  // counted above
  std::vector<Tensor> out;
  for (size_t i = 0; i < count; ++i) out.push_back(sum_on(by_tensor[i], targets[i], uncounted));
  return out;
}

void all_reduce(const std::vector<Tensor>& tensors) {
  check_reduce_group(tensors, "all_reduce");
  for (const Tensor& t : tensors) kernels::check_no_internal_overlap(t, "all_reduce");
  const std::vector<Device> devices = devices_of(tensors);
  Record record("all_reduce", devices);
  if (use_nccl(tensors)) {
    nccl::all_reduce(tensors);
    ++t_nccl_launches;
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
  Record record("all_gather", devices);
  std::vector<Tensor> out(tensors.size());
  std::mutex mutex;
  on_each_device(devices, [&](size_t i) {
    Record uncounted(nullptr, {});  // the totals are counted below
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
  Record record("reduce_scatter", devices);
  const int64_t rows = first.sizes()[d] / n;
  std::vector<Tensor> out(tensors.size());
  // Device i sums chunk i of every tensor into its own memory, on its own thread, whose NCCL
  // launches this thread's record does not see.
  std::atomic<bool> by_nccl = false;
  on_each_device(devices, [&](size_t i) {
    std::vector<Tensor> chunks;
    for (const Tensor& t : tensors) chunks.push_back(kernels::narrow(t, d, static_cast<int64_t>(i) * rows, rows));
    Record uncounted(nullptr, {});  // the totals are counted below
    const int64_t launched = t_nccl_launches;
    out[i] = sum_on(chunks, devices[i], uncounted);
    if (t_nccl_launches != launched) by_nccl = true;
  });
  if (by_nccl) ++t_nccl_launches;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (const Tensor& t : tensors) record.moved(out[i], t.device(), devices[i]);
  }
  return out;
}

StatsMark stats_mark() {
  StatsMark mark;
  mark.seconds = g_seconds().mark();
  std::lock_guard lock(g_stats_mutex);
  mark.counts = g_stats;
  return mark;
}

std::map<std::string, PrimitiveStats> comm_stats_since(const StatsMark& mark) {
  const std::map<std::string, double> seconds = g_seconds().since(mark.seconds);  // waits for the GPUs' share
  std::map<std::string, PrimitiveStats> stats;
  std::lock_guard lock(g_stats_mutex);
  for (const auto& [name, total] : g_stats) {
    PrimitiveStats s = total;
    if (auto before = mark.counts.find(name); before != mark.counts.end()) {
      s.calls -= before->second.calls;
      s.bytes -= before->second.bytes;
      s.nccl_calls -= before->second.nccl_calls;
    }
    if (s.calls == 0) continue;
    if (auto t = seconds.find(name); t != seconds.end()) s.seconds = t->second;
    stats[name] = s;
  }
  return stats;
}

std::map<std::string, PrimitiveStats> comm_stats() {
  StatsMark reset;
  {
    std::lock_guard lock(g_stats_mutex);
    reset = g_reset;
  }
  return comm_stats_since(reset);
}

void reset_comm_stats() {
  StatsMark mark = stats_mark();
  std::lock_guard lock(g_stats_mutex);
  g_reset = std::move(mark);
}

}  // namespace tandem::parallel::comm
