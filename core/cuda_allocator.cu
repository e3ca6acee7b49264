// The CUDA memory of tandem: one BlockPool (core/block_pool.h) per logical device on cudaMalloc,
// registered as the allocator for CUDA tensors, and one for pinned host memory on cudaHostAlloc.
// A block belongs to the stream that was current when it was allocated.
//
// TANDEM_NO_CUDA_MEMORY_CACHING=1 (PyTorch's PYTORCH_NO_CUDA_MEMORY_CACHING) turns the device
// pools off: each tensor is its own cudaMalloc of its size, and cudaFree returns it once the
// device is done. Slow, but compute-sanitizer's memcheck, which knows only cudaMalloc's
// bounds, then sees a kernel that reads or writes past a tensor's end. (The size is rounded up to
// whole 32-bit words: the atomic adds of 8- and 16-bit elements compare-and-swap the word that
// holds the element, as the pools' blocks of whole 512 bytes allow.)
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/allocator.h"
#include "core/block_pool.h"
#include "core/cuda.h"
#include "core/cuda_check.h"

namespace tandem::cuda {

namespace {

std::atomic<int> poison{-1};  // the byte fresh blocks are filled with; -1: none

// Events are recorded on the stream's own GPU.
class StreamDeviceGuard {
 public:
  explicit StreamDeviceGuard(cudaStream_t stream) {
    int device = 0;
    TD_CUDA_CHECK(cudaStreamGetDevice(stream, &device), "finding the device of a stream");
    TD_CUDA_CHECK(cudaGetDevice(&previous_), "finding the current device");
    if (device == previous_) return;
    TD_CUDA_CHECK(cudaSetDevice(device), "selecting GPU ", device);
    changed_ = true;
  }
  ~StreamDeviceGuard() {
    if (changed_) detail::restore_device(previous_);
  }

 private:
  int previous_ = 0;
  bool changed_ = false;
};

class EventBackend : public PoolBackend {
 public:
  void* record_event(void* stream) override {
    StreamDeviceGuard guard(static_cast<cudaStream_t>(stream));
    cudaEvent_t event = nullptr;
    TD_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "memory pool: creating an event");
    if (cudaError_t err = cudaEventRecord(event, static_cast<cudaStream_t>(stream)); err != cudaSuccess) {
      cudaEventDestroy(event);
      TD_CUDA_CHECK(err, "memory pool: recording an event");
    }
    return event;
  }
  bool event_done(void* event) override {
    cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (detail::not_ready(err)) return false;
    TD_CUDA_CHECK(err, "memory pool: event query");
    return true;
  }
  void wait_event(void* event) override {
    TD_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "memory pool: waiting for an event");
  }
  void release_event(void* event) override { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }
};

class DeviceBackend final : public EventBackend {
 public:
  explicit DeviceBackend(int device) : device_(device) {}
  void* raw_alloc(size_t nbytes) override {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, nbytes);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    TD_CUDA_CHECK(err, "cudaMalloc of ", nbytes, " bytes on cuda:", device_);
    return ptr;
  }
  void raw_free(void* ptr) override {
    DeviceGuard guard(device_);
    std::lock_guard lock(detail::free_mutex());
    TD_CUDA_CHECK(cudaFree(ptr), "cudaFree on cuda:", device_);
  }

 private:
  int device_;
};

class PinnedBackend final : public EventBackend {
 public:
  void* raw_alloc(size_t nbytes) override {
    void* ptr = nullptr;
    cudaError_t err = cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;
    }
    TD_CUDA_CHECK(err, "cudaHostAlloc of ", nbytes, " bytes of pinned memory");
    return ptr;
  }
  void raw_free(void* ptr) override {
    std::lock_guard lock(detail::free_mutex());
    TD_CUDA_CHECK(cudaFreeHost(ptr), "cudaFreeHost");
  }
};

struct DevicePool {
  std::once_flag once;
  DeviceBackend* backend = nullptr;
  std::atomic<BlockPool*> pool = nullptr;  // read without the once_flag by empty_cache
};

// Never destroyed: tensors may outlive static destructors.
std::array<DevicePool, Device::kMaxIndex>& device_pools() {
  static auto* pools = new std::array<DevicePool, Device::kMaxIndex>;
  return *pools;
}

BlockPool& pool_of(int device) {
  TD_CHECK(device >= 0 && device < device_count(), "CUDA memory: cuda:", device, " does not exist (",
           device_count(), " CUDA devices)");
  DevicePool& p = device_pools()[device];
  std::call_once(p.once, [&] {
    p.backend = new DeviceBackend(device);
    p.pool.store(new BlockPool(*p.backend, Device(kCUDA, device).str()));
  });
  return *p.pool.load();
}

// Logical devices on one GPU have a pool each: memory one caches is memory the other cannot get.
// Out of memory, a pool first releases its own cache (BlockPool::allocate); then the caches of
// the other pools on its GPU go back too, each released under its own lock only. Returns the
// bytes they gave back.
int64_t release_caches_sharing_gpu(int device) {
  const int gpu = physical_device(device);
  int64_t released = 0;
  for (int d = 0; d < device_count(); ++d) {
    BlockPool* pool = device_pools()[d].pool.load();
    if (d != device && pool && physical_device(d) == gpu) released += pool->empty_cache();
  }
  return released;
}

// A request the device could not serve, retried while the other pools on its GPU give memory
// back: between a release and the retry, another logical device may cache what it frees again.
// The last try throws the error with the facts.
void* allocate_releasing_siblings(BlockPool& pool, int device, size_t nbytes, void* stream) {
  constexpr int kRetries = 4;  // bounds the loop against pools that keep caching as fast
  void* ptr = pool.try_allocate(nbytes, stream);
  for (int i = 0; !ptr && i < kRetries && release_caches_sharing_gpu(device) > 0; ++i) {
    ptr = pool.try_allocate(nbytes, stream);
  }
  return ptr ? ptr : pool.allocate(nbytes, stream);
}

bool caching_disabled() {
  static const bool disabled = [] {
    const char* v = std::getenv("TANDEM_NO_CUDA_MEMORY_CACHING");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return disabled;
}

// The memory of TANDEM_NO_CUDA_MEMORY_CACHING: cudaMalloc and cudaFree per tensor, counted.
class UncachedMemory {
 public:
  void* allocate(size_t nbytes, int device) {
    void* ptr = DeviceBackend(device).raw_alloc((nbytes + 3) & ~size_t{3});  // whole words (above)
    std::lock_guard lock(mutex_);
    TD_CHECK(ptr, "cuda:", device, " is out of memory: tried to allocate ", nbytes, " bytes; tensors hold ",
             allocated_[device], " bytes (TANDEM_NO_CUDA_MEMORY_CACHING is set: nothing is cached)");
    sizes_[ptr] = nbytes;
    allocated_[device] += static_cast<int64_t>(nbytes);
    peak_[device] = std::max(peak_[device], allocated_[device]);
    return ptr;
  }
  void free(void* ptr, int device) {
    {
      std::lock_guard lock(mutex_);
      auto it = sizes_.find(ptr);
      TD_CHECK(it != sizes_.end(), "CUDA memory of cuda:", device, ": free of a pointer it did not hand out");
      allocated_[device] -= static_cast<int64_t>(it->second);
      sizes_.erase(it);
    }
    // Work still queued on any stream of any GPU (a peer copy too) may use the memory: it ends first.
    {
      std::lock_guard lock(detail::free_mutex());  // as a free: not while an NCCL group launches
      for (int d = 0; d < device_count(); ++d) {
        DeviceGuard guard(d);
        TD_CUDA_CHECK(cudaDeviceSynchronize(), "freeing CUDA memory of cuda:", device, " (waiting for cuda:", d, ")");
      }
    }
    DeviceBackend(device).raw_free(ptr);
  }
  MemoryStats stats(int device) {
    std::lock_guard lock(mutex_);
    return MemoryStats{allocated_[device], peak_[device], 0};
  }
  void reset_peak(int device) {
    std::lock_guard lock(mutex_);
    peak_[device] = allocated_[device];
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, size_t> sizes_;
  std::array<int64_t, Device::kMaxIndex> allocated_{}, peak_{};
};

UncachedMemory& uncached() {
  static auto* memory = new UncachedMemory;  // never destroyed, as the pools
  return *memory;
}

BlockPool& pinned_pool() {
  static PinnedBackend* backend = new PinnedBackend;
  static BlockPool* pool = new BlockPool(*backend, "pinned host memory");
  return *pool;
}

class CudaAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device device) override {
    const int index = device.index();
    const Stream stream = current_stream(index);
    if (nbytes == 0) return nullptr;
    void* ptr = nullptr;
    if (caching_disabled()) {
      TD_CHECK(index >= 0 && index < device_count(), "CUDA memory: cuda:", index, " does not exist (",
               device_count(), " CUDA devices)");
      ptr = uncached().allocate(nbytes, index);
    } else {
      ptr = allocate_releasing_siblings(pool_of(index), index, nbytes, stream.handle());
    }
    if (const int byte = poison.load(std::memory_order_relaxed); ptr && byte >= 0) {
      DeviceGuard guard(device.index());
      TD_CUDA_CHECK(cudaMemsetAsync(ptr, byte, nbytes, static_cast<cudaStream_t>(stream.handle())),
                    "poisoning fresh memory on ", device);
    }
    return ptr;
  }
  void deallocate(void* ptr, size_t, Device device) override {
    if (!ptr) return;
    caching_disabled() ? uncached().free(ptr, device.index()) : pool_of(device.index()).free(ptr);
  }
  MemoryStats stats(Device device) const override {
    if (caching_disabled()) return uncached().stats(device.index());
    PoolStats s = pool_of(device.index()).stats();
    return MemoryStats{s.allocated, s.peak_allocated, s.reserved - s.allocated};
  }
  void reset_peak(Device device) override {
    caching_disabled() ? uncached().reset_peak(device.index()) : pool_of(device.index()).reset_peak();
  }
  void empty_cache() override {
    for (int d = 0; d < device_count(); ++d) {
      if (BlockPool* pool = device_pools()[d].pool.load()) pool->empty_cache();
    }
  }
};

// Registered when the program starts (the library is linked whole: alwayslink).
[[maybe_unused]] const bool registered = [] {
  static CudaAllocator* allocator = new CudaAllocator;
  register_allocator(kCUDA, allocator);
  return true;
}();

}  // namespace

void set_poison_allocations(bool on, uint8_t byte) { poison.store(on ? byte : -1); }

bool memory_caching_enabled() { return !caching_disabled(); }

void record_stream(const Storage& storage, const Stream& stream) {
  if (!storage.defined() || !storage.data()) return;
  if (storage.device().is_cuda()) {
    // Without caching, a free waits for all work on the device: nothing to record.
    if (!caching_disabled()) pool_of(storage.device().index()).record_stream(storage.data(), stream.handle());
  } else if (pinned_pool().owns(storage.data())) {
    pinned_pool().record_stream(storage.data(), stream.handle());
  }
}

Storage pinned_storage(size_t nbytes) {
  TD_CHECK(is_available(), "pin_memory: pinned memory needs a CUDA device, and ",
           built_with_cuda() ? "no GPU was found" : "this build of tandem has no CUDA");
  void* ptr = pinned_pool().allocate(nbytes, nullptr);
  return Storage::wrap(ptr, nbytes, Device(kCPU), [](void* p) { pinned_pool().free(p); });
}

bool is_pinned(const Storage& storage) {
  return storage.defined() && storage.data() && is_available() && pinned_pool().owns(storage.data());
}

}  // namespace tandem::cuda
