// Storage: a reference-counted block of device memory that tensors (and their views) point into.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "core/device.h"

namespace tandem {

class Allocator;

class Storage {
 public:
  Storage() = default;
  // `nbytes` fresh bytes from the device's allocator.
  static Storage allocate(size_t nbytes, Device device);
  // Memory owned elsewhere; `deleter` (may be empty) runs when the last reference goes.
  static Storage wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);

  void* data() const { return impl_ ? impl_->data : nullptr; }
  size_t nbytes() const { return impl_ ? impl_->nbytes : 0; }
  Device device() const { return impl_->device; }
  bool defined() const { return impl_ != nullptr; }
  long use_count() const { return impl_.use_count(); }
  bool is_same(const Storage& other) const { return impl_ == other.impl_; }

 private:
  struct Impl {
    void* data = nullptr;
    size_t nbytes = 0;
    Device device{kCPU};
    Allocator* allocator = nullptr;          // set for memory from allocate()
    std::function<void(void*)> deleter;      // set for wrapped memory
    ~Impl();
  };
  std::shared_ptr<Impl> impl_;
};

}  // namespace tandem
