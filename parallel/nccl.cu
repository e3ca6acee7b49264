// The NCCL collectives of nccl.h. Host code only: it is compiled by nvcc because NCCL comes with
// the CUDA toolkit here, and built from nccl_absent.cc where there is none.
#include <nccl.h>

#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "core/cuda.h"
#include "core/cuda_check.h"
#include "core/dtype.h"
#include "core/error.h"
#include "parallel/nccl.h"

namespace tandem::parallel::nccl {

namespace {

// NCCL's last error says what failed inside it (a socket, a sysfs file, a peer), which the result
// code alone ("unhandled system error") does not.
#define TD_NCCL_CHECK(call, ...)                                                                              \
  do {                                                                                                        \
    ncclResult_t td_nccl_result_ = (call);                                                                    \
    TD_CHECK(td_nccl_result_ == ncclSuccess, __VA_ARGS__, ": NCCL error ", ncclGetErrorString(td_nccl_result_), \
             " in " #call, " (", ncclGetLastError(nullptr), ")");                                           \
  } while (0)

std::optional<ncclDataType_t> nccl_type(DType t) {
  switch (t) {
    case kFloat32: return ncclFloat32;
    case kFloat64: return ncclFloat64;
    case kFloat16: return ncclFloat16;
    case kBFloat16: return ncclBfloat16;
    case kInt64: return ncclInt64;
    case kInt32: return ncclInt32;
    case kUInt8: return ncclUint8;
    default: return std::nullopt;
  }
}

// The communicators made so far, by list of logical devices (used with one_collective_at_a_time
// held); kept to the end.
std::map<std::vector<int>, std::vector<ncclComm_t>>& all_communicators() {
  static auto* all = new std::map<std::vector<int>, std::vector<ncclComm_t>>;
  return *all;
}

// One communicator per GPU for each list of logical devices, in the list's order (called with
// one_collective_at_a_time held).
const std::vector<ncclComm_t>& communicators(const std::vector<int>& devices) {
  auto* all = &all_communicators();
  auto it = all->find(devices);
  if (it != all->end()) return it->second;
  std::vector<int> gpus;
  for (int d : devices) gpus.push_back(tandem::cuda::physical_device(d));
  std::vector<ncclComm_t> comms(devices.size());
  TD_NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(gpus.size()), gpus.data()),
                "NCCL: creating a communicator for ", devices.size(), " GPUs");
  return all->emplace(devices, std::move(comms)).first->second;
}

std::vector<int> device_indices(const std::vector<Tensor>& tensors) {
  std::vector<int> devices;
  for (const Tensor& t : tensors) devices.push_back(t.device().index());
  return devices;
}

std::mutex& one_collective_at_a_time() {
  static std::mutex mutex;  // one for every kind of collective: grouped() is a template
  return mutex;
}

// NCCL's kernels run on a stream of their own per GPU, made for it and kept to the end (called
// with one_collective_at_a_time held). On the devices' current streams, another thread may queue
// a wait for work of another GPU (a copy between devices) while ncclGroupEnd is still launching
// the group GPU by GPU; a collective queued behind such a wait could never start while its peer,
// already running, waits for it, and both GPUs would hang. One stream per GPU, not per logical
// device, also keeps the collectives of two communicators that share GPUs in one order there.
tandem::cuda::Stream nccl_stream(int device) {
  static auto* streams = new std::map<int, tandem::cuda::Stream>;  // by GPU
  const int gpu = tandem::cuda::physical_device(device);
  auto it = streams->find(gpu);
  if (it != streams->end()) return it->second;
  tandem::cuda::DeviceGuard guard(device);
  cudaStream_t handle = nullptr;
  TD_CUDA_CHECK(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "NCCL: creating a stream on cuda:", device);
  return streams->emplace(gpu, tandem::cuda::Stream(device, handle)).first->second;
}

// Runs one NCCL call per device inside a group, each with that device current and on its GPU's
// NCCL stream, which first waits for the work queued on the device's current stream and which the
// current stream then waits for: to the caller the collective is queued on its current streams.
// One collective at a time in the process: a communicator must not be used by two threads at once,
// and every GPU of a set must see the set's collectives in the same order (two device threads that
// each ran a reduce with another root could leave them crossed and hung).
template <typename Call>
void grouped(const std::vector<Tensor>& tensors, const char* op, Call call) {
  std::lock_guard lock(one_collective_at_a_time());
  const auto& comms = communicators(device_indices(tensors));
  // What could throw inside the group besides NCCL (a device switch, a stream, an event), done
  // first: a group cut short by such a throw would launch on some GPUs only and hang there.
  std::vector<tandem::cuda::Stream> current, side;
  for (const Tensor& t : tensors) {
    const int d = t.device().index();
    tandem::cuda::DeviceGuard guard(d);
    current.push_back(tandem::cuda::current_stream(d));
    side.push_back(nccl_stream(d));
    tandem::cuda::Event queued;
    queued.record(current.back());
    queued.wait(side.back());
  }
  std::lock_guard no_free(tandem::cuda::detail::free_mutex());  // see free_mutex()
  TD_NCCL_CHECK(ncclGroupStart(), op);
  try {
    for (size_t i = 0; i < tensors.size(); ++i) {
      tandem::cuda::DeviceGuard guard(tensors[i].device().index());
      call(i, comms[i], static_cast<cudaStream_t>(side[i].handle()));
    }
  } catch (...) {
    // Closes the group: left open, it would take in every later NCCL call on this thread. NCCL
    // reports the failed call's error here again and launches nothing of the group.
    (void)ncclGroupEnd();
    throw;
  }
  const ncclResult_t ended = ncclGroupEnd();
  // Ordered back also after a failure: NCCL may have launched on some GPUs, and the tensors must
  // not return to their current streams' memory pools while its kernels may still use them.
  for (size_t i = 0; i < tensors.size(); ++i) {
    tandem::cuda::Event done;
    done.record(side[i]);
    done.wait(current[i]);
  }
  if (ended != ncclSuccess) {
    // A communicator that failed may not serve again: the next collective over these devices
    // makes new ones.
    auto& all = all_communicators();
    if (auto it = all.find(device_indices(tensors)); it != all.end()) {
      for (ncclComm_t comm : it->second) (void)ncclCommAbort(comm);
      all.erase(it);
    }
    TD_NCCL_CHECK(ended, op, " over ", tensors.size(), " GPUs");
  }
}

}  // namespace

bool built_with_nccl() { return true; }

bool can_serve(const std::vector<Tensor>& tensors) {
  std::set<int> gpus;
  for (const Tensor& t : tensors) {
    if (!t.defined() || !t.is_cuda() || !t.is_contiguous() || !nccl_type(t.dtype())) return false;
    if (!gpus.insert(tandem::cuda::physical_device(t.device().index())).second) return false;
  }
  return !tensors.empty();
}

void all_reduce(const std::vector<Tensor>& tensors) {
  TD_CHECK(can_serve(tensors), "nccl::all_reduce: the tensors must be contiguous, on distinct GPUs");
  const ncclDataType_t type = *nccl_type(tensors[0].dtype());
  grouped(tensors, "nccl::all_reduce", [&](size_t i, ncclComm_t comm, cudaStream_t stream) {
    const Tensor& t = tensors[i];
    TD_NCCL_CHECK(
        ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), type, ncclSum, comm, stream),
                  "nccl::all_reduce on ", t.device());
  });
}

void broadcast(const std::vector<Tensor>& outputs, size_t root) {
  TD_CHECK(can_serve(outputs) && root < outputs.size(), "nccl::broadcast: the tensors must be contiguous, on ",
           "distinct GPUs, and the root one of them");
  const ncclDataType_t type = *nccl_type(outputs[0].dtype());
  grouped(outputs, "nccl::broadcast", [&](size_t i, ncclComm_t comm, cudaStream_t stream) {
    const Tensor& t = outputs[i];
    TD_NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()), type, static_cast<int>(root),
                                comm, stream),
                  "nccl::broadcast on ", t.device());
  });
}

void reduce(const std::vector<Tensor>& inputs, const Tensor& output, size_t root) {
  TD_CHECK(can_serve(inputs) && root < inputs.size() && output.device() == inputs[root].device() &&
               output.is_contiguous() && output.numel() == inputs[root].numel(),
           "nccl::reduce: the inputs must be contiguous, on distinct GPUs, and the output beside input ", root);
  const ncclDataType_t type = *nccl_type(inputs[0].dtype());
  grouped(inputs, "nccl::reduce", [&](size_t i, ncclComm_t comm, cudaStream_t stream) {
    const Tensor& t = inputs[i];
    TD_NCCL_CHECK(ncclReduce(t.data_ptr(), i == root ? output.data_ptr() : nullptr, static_cast<size_t>(t.numel()), type,
                             ncclSum, static_cast<int>(root), comm, stream),
                  "nccl::reduce on ", t.device());
  });
}

}  // namespace tandem::parallel::nccl
