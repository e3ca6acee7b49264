// Checks for CUDA runtime calls (for .cu files and others that include the CUDA headers): a
// failure becomes a tandem::Error naming the op, the device and CUDA's own message.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>

#include "core/error.h"

namespace tandem::cuda::detail {

[[noreturn]] void fail(cudaError_t err, const char* what, const char* call, const char* file, int line);

// Whether a stream or event query answered "not ready". That is an answer, not a failure, but the
// runtime also leaves it as the thread's last error, where the next launch check would find it and
// blame an innocent kernel: it is cleared here.
inline bool not_ready(cudaError_t err) {
  if (err != cudaErrorNotReady) return false;
  (void)cudaGetLastError();
  return true;
}

// Held around every call that frees CUDA or pinned memory and around the launch of an NCCL group.
// A free waits for the GPU and holds the driver's lock meanwhile; an NCCL kernel already running on
// one GPU waits for its peers' kernels, which the launching thread could then never launch: both
// would hang. With the mutex, a free comes before or after a group's launch, never in the middle.
std::mutex& free_mutex();

// Makes `physical` the thread's current GPU again after a guard, where its context exists: selecting
// a GPU creates its context (hundreds of MiB), and a fresh thread's current GPU is 0, which may be
// one the process was told not to use (TANDEM_VISIBLE_DEVICES=1). Never throws: a failure is
// cleared, so that the next launch check does not blame an innocent kernel.
void restore_device(int physical) noexcept;

}  // namespace tandem::cuda::detail

// TD_CUDA_CHECK(cudaMalloc(...), "empty on cuda:0"): `what` says which op on which device.
#define TD_CUDA_CHECK(call, ...)                                                                        \
  do {                                                                                                  \
    cudaError_t td_cuda_err_ = (call);                                                                  \
    if (td_cuda_err_ != cudaSuccess) {                                                                  \
      ::tandem::cuda::detail::fail(td_cuda_err_, ::tandem::detail::str_cat(__VA_ARGS__).c_str(), #call, \
                                   __FILE__, __LINE__);                                                 \
    }                                                                                                   \
  } while (0)

// After a kernel launch: a bad launch configuration shows up here, faults later at a synchronising call.
#define TD_CUDA_CHECK_LAUNCH(...) TD_CUDA_CHECK(cudaGetLastError(), __VA_ARGS__)
