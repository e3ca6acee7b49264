// Allocator: where device memory comes from. One per device type; the CPU one hands out
// 64-byte-aligned blocks, the CUDA backend registers its caching allocator.
#pragma once

#include <cstddef>

#include "core/device.h"

namespace tandem {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
};

inline constexpr size_t kCpuAlignment = 64;

// The allocator for `device`; throws tandem::Error if that device type has none (CUDA in a CPU build).
Allocator& allocator_for(Device device);
void register_allocator(DeviceType type, Allocator* allocator);

}  // namespace tandem
