// What CUDA devices this process sees. In a build without the CUDA toolkit, or on a machine
// without a GPU or driver, there are none: is_available() is false and nothing else changes.
#pragma once

#include <cstdint>
#include <string>

namespace tandem::cuda {

bool is_available();
int device_count();

struct DeviceProperties {
  std::string name;
  int64_t total_memory = 0;  // bytes
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
};
DeviceProperties get_device_properties(int device);

// How this build was made: whether CUDA code was compiled in, and the runtime version (e.g. 13000).
bool built_with_cuda();
int runtime_version();

}  // namespace tandem::cuda
