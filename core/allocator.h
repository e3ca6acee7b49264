// Allocator: where device memory comes from. One per device type; the CPU one is built in
// (core/cpu_allocator.cc) and the CUDA backend registers its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace tandem {

// Bytes held by tensors on one device, the most ever held (since the last reset), and the
// bytes an allocator keeps cached for reuse beyond that.
struct MemoryStats {
  int64_t allocated = 0;
  int64_t peak_allocated = 0;
  int64_t cached = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes, Device device) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, Device device) = 0;
  virtual MemoryStats stats(Device device) const = 0;
  virtual void reset_peak(Device device) = 0;
  virtual void empty_cache() = 0;  // returns cached blocks to the system
};

inline constexpr size_t kCpuAlignment = 64;

// The allocator for `device`; throws tandem::Error if that device type has none (CUDA in a CPU build).
Allocator& allocator_for(Device device);
void register_allocator(DeviceType type, Allocator* allocator);
Allocator& cpu_allocator();

MemoryStats memory_stats(Device device);
void reset_peak_memory_stats(Device device);
void empty_cache(DeviceType type);

}  // namespace tandem
