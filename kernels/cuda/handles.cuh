// What the CUDA files that call NVIDIA's libraries share: a check for cuBLAS calls, and handles
// kept per thread and device.
#pragma once

#include <cublas_v2.h>

#include <vector>

#include "core/cuda.h"
#include "core/device.h"
#include "core/error.h"

namespace tandem::kernels::cuda {

// A failed call may leave a CUDA error of its own behind, which the next launch check would blame
// on an innocent kernel: it is cleared.
#define TD_CUBLAS_CHECK(call, ...)                                                                        \
  do {                                                                                                    \
    cublasStatus_t td_status_ = (call);                                                                   \
    if (td_status_ != CUBLAS_STATUS_SUCCESS) (void)cudaGetLastError();                                    \
    TD_CHECK(td_status_ == CUBLAS_STATUS_SUCCESS, __VA_ARGS__, ": cuBLAS error ", cublasGetStatusName(td_status_), \
             " (", cublasGetStatusString(td_status_), ") in " #call);                                     \
  } while (0)

// This thread's value for a logical device, made (with the device current) on first use: one
// handle per device and thread, as a handle must not be used by two threads at once. They live
// as long as the process, as the device threads of DataParallel do.
template <typename T, typename Make>
T per_thread_and_device(Device device, const Make& make) {
  thread_local std::vector<T> values;  // one list per call site (each has its own Make)
  const int d = device.index();
  if (static_cast<int>(values.size()) <= d) values.resize(d + 1, T{});
  if (values[d] == T{}) {
    tandem::cuda::DeviceGuard guard(d);
    values[d] = make();
  }
  return values[d];
}

// This thread's cuBLAS handle for the device, bound to the device's current stream (cuda/blas.cu).
cublasHandle_t cublas_handle(Device device);

}  // namespace tandem::kernels::cuda
