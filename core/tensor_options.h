// TensorOptions: the dtype and device a factory makes its tensor with (LibTorch's spelling).
#pragma once

#include <optional>

#include "core/device.h"
#include "core/dtype.h"

namespace tandem {

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType dtype) : dtype_(dtype) {}
  TensorOptions(Device device) : device_(device) {}
  TensorOptions(DeviceType type) : device_(Device(type)) {}

  TensorOptions dtype(DType d) const {
    TensorOptions o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }

  std::optional<DType> dtype_opt() const { return dtype_; }
  DType dtype_or(DType fallback) const { return dtype_.value_or(fallback); }
  std::optional<Device> device_opt() const { return device_; }
  Device device() const { return device_.value_or(Device(kCPU)); }

 private:
  std::optional<DType> dtype_;
  std::optional<Device> device_;
};

}  // namespace tandem
