// The CPU allocator: 64-byte-aligned blocks, with statistics per CPU device index.
//
// Blocks of 128 KiB and more (where malloc turns to fresh pages from the kernel) are cached when
// freed and handed out again for a request of the same size on the same CPU device, as the CUDA
// caching allocator does: a loop whose ops allocate same-sized outputs then reuses warm memory
// instead of page-faulting through fresh pages every iteration (for a 64 MiB output, 16384 faults, which cost more than
// the op; in a small MLP's training step the faults took a tenth of the time). The cache holds at most
// TANDEM_CPU_CACHE_MB (default 1024) and empty_cache(kCPU) releases it. Fresh large blocks ask
// the kernel for huge pages, which makes their first touch cheaper too.
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "core/allocator.h"
#include "core/error.h"

namespace tandem {

namespace {

constexpr size_t kCachedFrom = size_t{128} << 10;
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPage = size_t{4} << 10, kGranule = size_t{64} << 10;

size_t cache_limit() {
  if (const char* env = std::getenv("TANDEM_CPU_CACHE_MB")) {
    char* end = nullptr;
    long mb = std::strtol(env, &end, 10);
    TD_CHECK(end != env && *end == '\0' && mb >= 0, "TANDEM_CPU_CACHE_MB='", env, "' is not a size in MiB");
    return static_cast<size_t>(mb) << 20;
  }
  return size_t{1024} << 20;
}

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return nullptr;
    void* ptr = nbytes >= kCachedFrom ? take_large(round_large(nbytes), device) : take_small(nbytes);
    count(device, static_cast<int64_t>(nbytes));
    return ptr;
  }

  void deallocate(void* ptr, size_t nbytes, Device device) override {
    if (!ptr) return;
    count(device, -static_cast<int64_t>(nbytes));
    if (nbytes < kCachedFrom) {
      std::free(ptr);
      return;
    }
    size_t size = round_large(nbytes);
    std::lock_guard lock(mutex_);
    if (cached_ + size > limit_) {
      std::free(ptr);
      return;
    }
    free_blocks_.emplace(Key{device.index(), size}, ptr);
    cached_ += size;
  }

  MemoryStats stats(Device device) const override {
    const Counters& c = counters_[device.index()];
    std::lock_guard lock(mutex_);
    return MemoryStats{c.allocated.load(), c.peak.load(), static_cast<int64_t>(cached_)};
  }

  void reset_peak(Device device) override {
    Counters& c = counters_[device.index()];
    c.peak.store(c.allocated.load());
  }

  void empty_cache() override {
    std::lock_guard lock(mutex_);
    for (auto& [size, ptr] : free_blocks_) std::free(ptr);
    free_blocks_.clear();
    cached_ = 0;
  }

 private:
  struct Counters {
    std::atomic<int64_t> allocated{0}, peak{0};
  };

  // Sizes are rounded up so that nearly equal requests share blocks, by at most 1/16 of the size.
  static size_t round_large(size_t n) {
    const size_t unit = n < (size_t{1} << 20) ? kPage : kGranule;
    return (n + unit - 1) / unit * unit;
  }

  void* take_small(size_t nbytes) {
    void* ptr = std::aligned_alloc(kCpuAlignment, (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment);
    TD_CHECK(ptr != nullptr, "cpu allocator: out of memory allocating ", nbytes, " bytes");
    return ptr;
  }

  void* take_large(size_t size, Device device) {
    {
      std::lock_guard lock(mutex_);
      auto it = free_blocks_.find(Key{device.index(), size});
      if (it != free_blocks_.end()) {
        void* ptr = it->second;
        free_blocks_.erase(it);
        cached_ -= size;
        return ptr;
      }
    }
    // posix_memalign, unlike aligned_alloc, takes sizes that are not a multiple of the alignment.
    const size_t alignment = size >= kHugePage ? kHugePage : kCpuAlignment;
    void* ptr = nullptr;
    if (posix_memalign(&ptr, alignment, size) != 0) {  // the cache may be what holds the memory
      empty_cache();
      if (posix_memalign(&ptr, alignment, size) != 0) ptr = nullptr;
    }
    TD_CHECK(ptr != nullptr, "cpu allocator: out of memory allocating ", size, " bytes");
    if (size >= kHugePage) madvise(ptr, size, MADV_HUGEPAGE);  // advice only: failure is harmless
    return ptr;
  }

  void count(Device device, int64_t delta) {
    Counters& c = counters_[device.index()];
    int64_t now = c.allocated.fetch_add(delta) + delta;
    int64_t peak = c.peak.load();
    while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
    }
  }

  mutable std::mutex mutex_;
  // Freed blocks by CPU device index and size; a block is kept for its own device. Each CPU
  // device's work runs on its own thread, mostly on one core, and a block that another device's
  // thread has just written sits in that other core's cache, from where every line of it would
  // have to be fetched first (in a data-parallel step of a small MLP over two CPU
  // devices, one cache for both made each replica's forward and backward 5-10% slower).
  using Key = std::pair<int, size_t>;
  std::multimap<Key, void*> free_blocks_;
  size_t cached_ = 0;
  const size_t limit_ = cache_limit();
  std::array<Counters, Device::kMaxIndex> counters_;
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator* allocator = new CpuAllocator;  // never destroyed: tensors may outlive statics
  return *allocator;
}

MemoryStats memory_stats(Device device) { return allocator_for(device).stats(device); }
void reset_peak_memory_stats(Device device) { allocator_for(device).reset_peak(device); }
void empty_cache(DeviceType type) { allocator_for(Device(type)).empty_cache(); }

}  // namespace tandem
