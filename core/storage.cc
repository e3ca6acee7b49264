#include "core/storage.h"

#include <atomic>
#include <cstdio>
#include <exception>

#include "core/allocator.h"
#include "core/error.h"

namespace tandem {

namespace {

std::atomic<Allocator*> allocators[2] = {nullptr, nullptr};

}  // namespace

Allocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
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
  // A destructor that throws ends the program. A failed free (a CUDA error that a kernel left
  // behind, say) is reported instead, and the memory is given up: the caching allocator never
  // hands out a block it could not order after the streams that used it.
  try {
    if (allocator) {
      allocator->deallocate(data, nbytes, device);
    } else if (deleter) {
      deleter(data);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem: freeing %zu bytes on %s failed: %s\n", nbytes, device.str().c_str(), e.what());
  }
}

}  // namespace tandem
