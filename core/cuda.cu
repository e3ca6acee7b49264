// Device discovery through the CUDA runtime (linked statically). A machine without a GPU or a
// driver answers cudaGetDeviceCount with an error: that means "no devices", not a failure.
#include <cuda_runtime_api.h>

#include "core/cuda.h"
#include "core/error.h"

namespace tandem::cuda {

int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no device" error
      return 0;
    }
    return n;
  }();
  return count;
}

bool is_available() { return device_count() > 0; }

DeviceProperties get_device_properties(int device) {
  TD_CHECK(device >= 0 && device < device_count(), "cuda::get_device_properties: device ", device,
           " does not exist (", device_count(), " CUDA devices)");
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, device);
  TD_CHECK(err == cudaSuccess, "cuda::get_device_properties(", device, "): ", cudaGetErrorString(err));
  return DeviceProperties{prop.name, static_cast<int64_t>(prop.totalGlobalMem), prop.major, prop.minor,
                          prop.multiProcessorCount};
}

bool built_with_cuda() { return true; }

int runtime_version() {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v;
}

}  // namespace tandem::cuda
