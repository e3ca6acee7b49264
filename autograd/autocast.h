// Automatic mixed precision, as torch.autocast: inside an AutocastGuard for a device type, matrix
// products and convolutions of that type's tensors run in a 16-bit float (bfloat16 on CPUs,
// float16 on GPUs, unless chosen) and ops that need float32's range run in float32 (the losses;
// on GPUs also softmax, sums, exp, log, ...), with PyTorch's lists. The state is per thread, as
// grad mode is; DataParallel's workers take the caller's; backward runs without it, so every
// backward op runs in its forward op's dtype.
#pragma once

#include <initializer_list>
#include <optional>

#include "core/device.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace tandem::amp {

// Whether autocast is on for tensors of `type` in this thread, and the 16-bit float it casts to.
bool is_autocast_enabled(DeviceType type);
DType autocast_dtype(DeviceType type);
// Casts of float32 leaf tensors that require grad (weights) are kept until the outermost guard
// ends, so a weight used twice is cast once; a cast is made again once its weight is written (an
// optimizer step inside the guard) or given new storage (Module::to, load_state_dict).
bool is_autocast_cache_enabled();
void clear_autocast_cache();

// torch.autocast(device_type, dtype, enabled, cache_enabled) for a scope. dtype: float16 or
// bfloat16 (default: the type's current one, at first bfloat16 on CPUs and float16 on GPUs).
// `enabled = false` turns autocast off for that type inside an enabled scope. cache_enabled
// (default: the current setting, at first on): whether weights' casts are kept.
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType type, std::optional<DType> dtype = std::nullopt, bool enabled = true,
                         std::optional<bool> cache_enabled = std::nullopt);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType type_;
  bool previous_enabled_, previous_cache_enabled_;
  DType previous_dtype_;
};

// The state ops in this thread see (off inside a SuspendAutocast), for code that runs work on other
// threads for it (DataParallel's device workers): an AutocastStateGuard there sets it for a scope.
struct AutocastState {
  bool cpu_enabled = false, cuda_enabled = false;
  DType cpu_dtype = kBFloat16, cuda_dtype = kFloat16;
  bool cache_enabled = true;
};
AutocastState autocast_state();

class AutocastStateGuard {
 public:
  explicit AutocastStateGuard(const AutocastState& state);
  ~AutocastStateGuard();
  AutocastStateGuard(const AutocastStateGuard&) = delete;
  AutocastStateGuard& operator=(const AutocastStateGuard&) = delete;

 private:
  AutocastState previous_;
};

// ---- for the ops on PyTorch's lists ----
//
// An op on a list asks whether autocast takes the call (autocast is on for an operand's device
// type); if so it calls itself on the casts inside a SuspendAutocast scope, so that its own inner
// ops are not cast again, as PyTorch runs an autocast op's body with autocast off:
//
//   if (amp::takes_lower_precision({&a, &b})) {
//     amp::SuspendAutocast inside;
//     return mm(amp::to_lower_precision(a), amp::to_lower_precision(b));
//   }
//
// Float64 tensors, integer tensors and tensors of a device type without autocast are never cast.
// The casts follow the state and not the suspension, so they may be made inside the scope.

// Which device types an op casts to float32 on: every loss on both; softmax, sums, exp, log, pow,
// layer_norm, ... on GPUs only, where float16's range is narrow (bfloat16 has float32's range).
enum class Float32On { kAll, kCuda };

bool takes_lower_precision(std::initializer_list<const Tensor*> operands);
bool takes_float32(Float32On where, std::initializer_list<const Tensor*> operands);
Tensor to_lower_precision(const Tensor& t);  // to the 16-bit dtype of t's device type
Tensor to_float32(const Tensor& t);          // a 16-bit t to float32

// PyTorch's third list, of ops that take mixed floating dtypes and run in the widest; on GPUs only,
// and of tandem's ops scatter_add and grid_sample have it (cat, stack and the binary ops promote
// anyway). The
// widest dtype of the GPU operands autocast may cast, or nullopt when autocast does not take the
// call. float16 with bfloat16 gives float32, where PyTorch refuses the pair.
std::optional<DType> widest_on_cuda(std::initializer_list<const Tensor*> operands);
Tensor to_widest(const Tensor& t, DType widest);  // t cast when autocast may cast it, else t
// Whether ops on `type`'s tensors are autocast here (on, and not suspended).
bool is_active(DeviceType type);

// Autocast suspended for a scope, its state and cache kept: the body of an op on a list, and
// every node of a backward.
class SuspendAutocast {
 public:
  SuspendAutocast();
  ~SuspendAutocast();
  SuspendAutocast(const SuspendAutocast&) = delete;
  SuspendAutocast& operator=(const SuspendAutocast&) = delete;

 private:
  bool previous_;
};

}  // namespace tandem::amp
