#include "autograd/autocast.h"

#include <array>
#include <unordered_map>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"

namespace tandem::amp {

namespace {

struct CachedCast {
  Tensor source;    // held, so that its address is not reused while the entry lives
  Storage storage;  // held too: Module::to and load_state_dict give a tensor new storage in place
  uint32_t version;  // a write since makes the cast stale
  Tensor cast;
};

// Every op reads these: plain data, so that reading them is a plain thread-local load.
struct ThreadState {
  AutocastState state;
  bool suspended = false;
  int nesting = 0;  // guards open in this thread; the outermost one clears the cache
};

thread_local ThreadState t_amp;
// Casts made without and with grad mode (only the latter lead back to their weight), apart, so
// that an evaluation between training steps does not cast every weight again.
thread_local std::array<std::unordered_map<const TensorImpl*, CachedCast>, 2> t_cache;

bool& enabled_of(DeviceType type) { return type == kCPU ? t_amp.state.cpu_enabled : t_amp.state.cuda_enabled; }
DType& dtype_of(DeviceType type) { return type == kCPU ? t_amp.state.cpu_dtype : t_amp.state.cuda_dtype; }

bool any_active() { return (t_amp.state.cpu_enabled || t_amp.state.cuda_enabled) && !t_amp.suspended; }

// A floating tensor autocast may cast: defined, not float64, of a device type with autocast on.
// The casts themselves do not look at suspension: an op makes them inside its SuspendAutocast.
bool eligible(const Tensor* t) {
  return t && t->defined() && is_floating(t->dtype()) && t->dtype() != kFloat64 && enabled_of(t->device().type());
}

void clear_cache() {
  for (auto& cache : t_cache) cache.clear();
}

void leave() {
  if (--t_amp.nesting == 0) clear_cache();
}

// A cast that is still good: the same weight, unwritten, in the same storage. Its graph node
// (ToCopyBackward0) holds no tensors and survives every backward, so it never goes stale.
bool still_good(const CachedCast& c, const Tensor& t, DType target) {
  return c.cast.dtype() == target && c.version == t.version() && c.storage.is_same(t.storage());
}

}  // namespace

bool is_autocast_enabled(DeviceType type) { return enabled_of(type); }
DType autocast_dtype(DeviceType type) { return dtype_of(type); }
bool is_autocast_cache_enabled() { return t_amp.state.cache_enabled; }
void clear_autocast_cache() { clear_cache(); }
bool is_active(DeviceType type) { return enabled_of(type) && !t_amp.suspended; }

AutocastGuard::AutocastGuard(DeviceType type, std::optional<DType> dtype, bool enabled,
                             std::optional<bool> cache_enabled)
    : type_(type),
      previous_enabled_(enabled_of(type)),
      previous_cache_enabled_(t_amp.state.cache_enabled),
      previous_dtype_(dtype_of(type)) {
  TD_CHECK(!dtype || is_16bit_float(*dtype), "autocast: dtype must be float16 or bfloat16, got ", *dtype);
  enabled_of(type) = enabled;
  if (dtype) dtype_of(type) = *dtype;
  if (cache_enabled) t_amp.state.cache_enabled = *cache_enabled;
  ++t_amp.nesting;
}

AutocastGuard::~AutocastGuard() {
  enabled_of(type_) = previous_enabled_;
  dtype_of(type_) = previous_dtype_;
  t_amp.state.cache_enabled = previous_cache_enabled_;
  leave();
}

AutocastState autocast_state() {
  AutocastState state = t_amp.state;
  if (t_amp.suspended) state.cpu_enabled = state.cuda_enabled = false;  // what ops here see
  return state;
}

AutocastStateGuard::AutocastStateGuard(const AutocastState& state) : previous_(t_amp.state) {
  TD_CHECK(is_16bit_float(state.cpu_dtype) && is_16bit_float(state.cuda_dtype),
           "autocast: dtypes must be float16 or bfloat16, got ", state.cpu_dtype, " and ", state.cuda_dtype);
  t_amp.state = state;
  ++t_amp.nesting;
}

AutocastStateGuard::~AutocastStateGuard() {
  t_amp.state = previous_;
  leave();
}

SuspendAutocast::SuspendAutocast() : previous_(t_amp.suspended) { t_amp.suspended = true; }
SuspendAutocast::~SuspendAutocast() { t_amp.suspended = previous_; }

bool takes_lower_precision(std::initializer_list<const Tensor*> operands) {
  if (!any_active()) return false;
  for (const Tensor* t : operands) {
    if (eligible(t)) return true;
  }
  return false;
}

bool takes_float32(Float32On where, std::initializer_list<const Tensor*> operands) {
  if (!any_active()) return false;
  for (const Tensor* t : operands) {
    if (eligible(t) && (where == Float32On::kAll || t->is_cuda())) return true;
  }
  return false;
}

Tensor to_lower_precision(const Tensor& t) {
  if (!eligible(&t)) return t;
  const DType target = dtype_of(t.device().type());
  if (t.dtype() == target) return t;
  // PyTorch's rule: only float32 leaves that require grad are cached, the weights a forward
  // reads again and again; activations are cast once anyway.
  const bool cacheable = t_amp.state.cache_enabled && t.dtype() == kFloat32 && t.requires_grad() && t.is_leaf();
  if (!cacheable) return t.to(target);
  auto& cache = t_cache[is_grad_enabled() ? 1 : 0];
  auto it = cache.find(t.impl_ptr().get());
  if (it != cache.end() && still_good(it->second, t, target)) return it->second.cast;
  Tensor cast = t.to(target);
  cache[t.impl_ptr().get()] = CachedCast{t, t.storage(), t.version(), cast};
  return cast;
}

Tensor to_float32(const Tensor& t) { return eligible(&t) && is_16bit_float(t.dtype()) ? t.to(kFloat32) : t; }

std::optional<DType> widest_on_cuda(std::initializer_list<const Tensor*> operands) {
  if (!any_active()) return std::nullopt;
  std::optional<DType> widest;
  for (const Tensor* t : operands) {
    if (eligible(t) && t->is_cuda()) widest = widest ? promote_types(*widest, t->dtype()) : t->dtype();
  }
  return widest;
}

Tensor to_widest(const Tensor& t, DType widest) { return eligible(&t) && t.is_cuda() ? t.to(widest) : t; }

}  // namespace tandem::amp
