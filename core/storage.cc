#include "core/storage.h"

#include <cstdlib>
#include <atomic>
#include <new>

#include "core/allocator.h"
#include "core/error.h"

namespace tandem {

namespace {

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes, Device) override {
    if (nbytes == 0) return nullptr;
    size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    TD_CHECK(ptr != nullptr, "cpu allocator: out of memory allocating ", nbytes, " bytes");
    return ptr;
  }
  void deallocate(void* ptr, size_t, Device) override { std::free(ptr); }
};

CpuAllocator cpu_allocator;
std::atomic<Allocator*> allocators[2] = {&cpu_allocator, nullptr};

}  // namespace

Allocator& allocator_for(Device device) {
  Allocator* a = allocators[static_cast<int>(device.type())].load(std::memory_order_acquire);
  TD_CHECK(a != nullptr, "no memory allocator for ", device, ": this build of tandem has no ", device.type(),
           " tensor backend");
  return *a;
}

void register_allocator(DeviceType type, Allocator* allocator) {
  allocators[static_cast<int>(type)].store(allocator, std::memory_order_release);
}

Storage Storage::allocate(size_t nbytes, Device device) {
  Allocator& allocator = allocator_for(device);
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = allocator.allocate(nbytes, device);
  s.impl_->nbytes = nbytes;
  s.impl_->device = device;
  s.impl_->allocator = &allocator;
  return s;
}

Storage Storage::wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter) {
  Storage s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->data = data;
  s.impl_->nbytes = nbytes;
  s.impl_->device = device;
  s.impl_->deleter = std::move(deleter);
  return s;
}

Storage::Impl::~Impl() {
  if (allocator) {
    allocator->deallocate(data, nbytes, device);
  } else if (deleter) {
    deleter(data);
  }
}

}  // namespace tandem
