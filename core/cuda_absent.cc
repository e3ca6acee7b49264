// Device discovery in a build made without the CUDA toolkit: there are no CUDA devices.
#include "core/cuda.h"
#include "core/error.h"

namespace tandem::cuda {

int device_count() { return 0; }
bool is_available() { return false; }

DeviceProperties get_device_properties(int device) {
  TD_FAIL("cuda::get_device_properties: device ", device, " does not exist (this build of tandem has no CUDA)");
}

bool built_with_cuda() { return false; }
int runtime_version() { return 0; }

}  // namespace tandem::cuda
