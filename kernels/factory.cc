#include "kernels/factory.h"

#include <cmath>

#include "core/generator.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"
#include "kernels/reduce.h"

namespace tandem {

Tensor empty(IntList sizes, TensorOptions options) {
  return kernels::empty_tensor(sizes, options.dtype_or(kDefaultFloat), options.device());
}

Tensor zeros(IntList sizes, TensorOptions options) { return full(sizes, 0, options.dtype(options.dtype_or(kDefaultFloat))); }

Tensor ones(IntList sizes, TensorOptions options) { return full(sizes, 1, options.dtype(options.dtype_or(kDefaultFloat))); }

Tensor full(IntList sizes, Scalar value, TensorOptions options) {
  const DType dtype = options.dtype_or(value.dtype());
  kernels::check_value_fits(value, dtype, "full");
  Tensor t = kernels::empty_tensor(sizes, dtype, options.device());
  kernels::fill_into(t, value);
  return t;
}

Tensor arange(Scalar end, TensorOptions options) { return arange(0, end, 1, options); }

Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions options) {
  bool floating = start.is_floating() || end.is_floating() || step.is_floating();
  DType dtype = options.dtype_or(floating ? kDefaultFloat : kInt64);
  TD_CHECK(dtype != kBool, "arange: dtype bool is not supported");
  double s = start.to_double(), e = end.to_double(), d = step.to_double();
  TD_CHECK(std::isfinite(s) && std::isfinite(e), "arange: start ", s, " and end ", e, " must be finite");
  TD_CHECK(d != 0, "arange: step must be nonzero");
  TD_CHECK((d > 0 && e >= s) || (d < 0 && e <= s), "arange: upper bound ", e, " and lower bound ", s,
           " are inconsistent with the sign of step ", d);
  // The count as PyTorch computes it (ceil of a double quotient: in long double, (1.1 - 0) / 0.1
  // is just above 11), or exactly in 128-bit integers; checked to fit before it becomes a size.
  const __int128 whole = floating ? 0
                                  : (static_cast<__int128>(end.to_int()) - start.to_int() + step.to_int() -
                                     (step.to_int() > 0 ? 1 : -1)) /
                                        step.to_int();
  const double count = floating ? std::ceil((e - s) / d) : static_cast<double>(whole);
  TD_CHECK(std::isfinite(count) && count < 9.2e18, "arange: from ", start, " to ", end, " in steps of ", step,
           " is more elements than a tensor holds");
  const int64_t n = floating ? static_cast<int64_t>(count) : static_cast<int64_t>(whole);
  Tensor out = kernels::empty_tensor({n}, dtype, options.device());
  out.is_cuda() ? kernels::cuda::arange(out, start, step) : kernels::cpu::arange(out, start, step);
  return out;
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions options) {
  TD_CHECK(steps >= 0, "linspace: number of steps must be non-negative, got ", steps);
  DType dtype = options.dtype_or(kDefaultFloat);
  TD_CHECK(dtype != kBool, "linspace: dtype bool is not supported");
  Tensor out = kernels::empty_tensor({steps}, dtype, options.device());
  out.is_cuda() ? kernels::cuda::linspace(out, start, end) : kernels::cpu::linspace(out, start, end);
  return out;
}

Tensor eye(int64_t n, int64_t m, TensorOptions options) {
  if (m == -1) m = n;  // eye(n)
  TD_CHECK(n >= 0, "eye: n must be non-negative, got ", n);
  TD_CHECK(m >= 0, "eye: m must be non-negative, got ", m);
  Tensor out = zeros({n, m}, options);
  int64_t k = std::min(n, m);
  if (k > 0) kernels::fill_into(out.as_strided({k}, {m + 1}, 0), 1);
  return out;
}

namespace {
TensorOptions like_options(const Tensor& like, TensorOptions options) {
  return TensorOptions(options.dtype_or(like.dtype())).device(options.device_opt().value_or(like.device()));
}
}  // namespace

Tensor empty_like(const Tensor& like, TensorOptions options) { return empty(like.sizes(), like_options(like, options)); }
Tensor zeros_like(const Tensor& like, TensorOptions options) { return zeros(like.sizes(), like_options(like, options)); }
Tensor ones_like(const Tensor& like, TensorOptions options) { return ones(like.sizes(), like_options(like, options)); }
Tensor full_like(const Tensor& like, Scalar value, TensorOptions options) {
  return full(like.sizes(), value, like_options(like, options));
}
Tensor rand_like(const Tensor& like, TensorOptions options) { return rand(like.sizes(), like_options(like, options)); }
Tensor randn_like(const Tensor& like, TensorOptions options) { return randn(like.sizes(), like_options(like, options)); }

// ---- tensor() ----

TensorData::TensorData(std::initializer_list<TensorData> list) : kind_(Kind::List), children_(list) {
  sizes_ = {static_cast<int64_t>(list.size())};
  if (list.size() == 0) return;
  const Shape& inner = children_.front().kind_ == Kind::Scalar ? Shape{} : children_.front().sizes_;
  for (size_t i = 0; i < children_.size(); ++i) {
    const TensorData& c = children_[i];
    const Shape& s = c.kind_ == Kind::Scalar ? Shape{} : c.sizes_;
    TD_CHECK(s == inner && (c.kind_ == Kind::Scalar) == (children_.front().kind_ == Kind::Scalar),
             "tensor: nested lists must be rectangular: element ", i, " has shape ", shape_str(s),
             " but element 0 has shape ", shape_str(inner));
  }
  sizes_.insert(sizes_.end(), inner.begin(), inner.end());
}

void TensorData::flatten_into(std::vector<Scalar>& values) const {
  switch (kind_) {
    case Kind::Scalar: values.push_back(scalar_); return;
    case Kind::List:
      for (const TensorData& c : children_) c.flatten_into(values);
      return;
    case Kind::Vector: TD_FAIL("tensor: a std::vector cannot be nested inside a braced list");
  }
}

Tensor TensorData::to_tensor(TensorOptions options) const {
  if (kind_ == Kind::Vector) {
    Tensor t = kernels::empty_tensor(sizes_, vector_dtype_, Device(kCPU));
    if (!vector_bytes_.empty()) std::memcpy(t.data_ptr(), vector_bytes_.data(), vector_bytes_.size());
    return kernels::to(t, options.device(), options.dtype_or(vector_dtype_));
  }
  std::vector<Scalar> values;
  flatten_into(values);
  bool any_float = false, any_int = false;
  for (const Scalar& v : values) {
    any_float |= v.is_floating();
    any_int |= v.is_integral();
  }
  DType inferred = any_float ? kDefaultFloat : any_int ? kInt64 : values.empty() ? kDefaultFloat : kBool;
  DType dtype = options.dtype_or(inferred);
  Shape sizes = kind_ == Kind::Scalar ? Shape{} : sizes_;
  Tensor t = kernels::empty_tensor(sizes, dtype, Device(kCPU));
  Tensor flat = kernels::view(t, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    // tensor({300}, kUInt8) is an error, as in PyTorch; floats beyond a float dtype become inf there.
    if (is_integral(dtype, false)) kernels::check_value_fits(values[i], dtype, "tensor");
    kernels::fill_into(kernels::select(flat, 0, static_cast<int64_t>(i)), values[i]);
  }
  return kernels::to(t, options.device());
}

Tensor tensor(const TensorData& data, TensorOptions options) { return data.to_tensor(options); }

// ---- from_blob ----

Tensor from_blob(void* data, IntList sizes, TensorOptions options, std::function<void(void*)> deleter) {
  return from_blob(data, sizes, contiguous_strides(sizes), options, std::move(deleter));
}

Tensor from_blob(void* data, IntList sizes, IntList strides, TensorOptions options,
                 std::function<void(void*)> deleter) {
  TD_CHECK(sizes.size() == strides.size(), "from_blob: sizes ", shape_str(sizes.vec()), " and strides ",
           shape_str(strides.vec()), " differ in length");
  DType dtype = options.dtype_or(kDefaultFloat);
  int64_t extent = 1;  // elements from the first to one past the last reachable
  for (size_t i = 0; i < sizes.size(); ++i) {
    TD_CHECK(sizes[i] >= 0 && strides[i] >= 0, "from_blob: negative size or stride in ", shape_str(sizes.vec()),
             " / ", shape_str(strides.vec()));
    if (sizes[i] == 0) extent = 0;
    if (extent > 0) extent += (sizes[i] - 1) * strides[i];
  }
  TD_CHECK(data != nullptr || extent == 0, "from_blob: null data for a non-empty tensor");
  Storage storage = Storage::wrap(data, static_cast<size_t>(extent) * element_size(dtype), options.device(),
                                  std::move(deleter));
  return Tensor::make(std::move(storage), sizes.vec(), strides.vec(), 0, dtype);
}

// ---- random ----

namespace {

// Runs `fill` on a contiguous tensor for `t`, then copies back if t itself is not contiguous,
// so the values follow t's logical order. `in_place` counts the write in t's version.
template <typename Fill>
Tensor& fill_random(Tensor& t, const char* op, Fill fill, bool in_place = true) {
  TD_CHECK(t.defined(), op, ": undefined tensor");
  Tensor target = t.is_contiguous() ? t : kernels::empty_tensor(t.sizes(), t.dtype(), t.device());
  fill(target);
  if (!target.is_same(t)) kernels::copy_into(t, target);
  if (in_place) t.bump_version();
  return t;
}

void check_floating(DType dtype, const char* op) {
  TD_CHECK(is_floating(dtype), op, ": expected a floating dtype, got ", dtype);
}

Tensor& uniform_fill(Tensor& t, double from, double to, bool in_place) {
  check_floating(t.dtype(), "uniform_");
  TD_CHECK(from <= to, "uniform_: expects from <= to, got from=", from, " > to=", to);
  return fill_random(t, "uniform_", [&](const Tensor& out) {
    uint64_t words = static_cast<uint64_t>(out.numel()) * (out.dtype() == kFloat64 ? 2 : 1);
    PhiloxState state = default_generator(out.device()).reserve(words);
    out.is_cuda() ? kernels::cuda::uniform(out, from, to, state) : kernels::cpu::uniform(out, from, to, state);
  }, in_place);
}

Tensor& normal_fill(Tensor& t, double mean, double std, bool in_place) {
  check_floating(t.dtype(), "normal_");
  TD_CHECK(std >= 0, "normal_: std must be non-negative, got ", std);
  return fill_random(t, "normal_", [&](const Tensor& out) {
    uint64_t pairs = (static_cast<uint64_t>(out.numel()) + 1) / 2;
    PhiloxState state = default_generator(out.device()).reserve(pairs * (out.dtype() == kFloat64 ? 4 : 2));
    out.is_cuda() ? kernels::cuda::normal(out, mean, std, state) : kernels::cpu::normal(out, mean, std, state);
  }, in_place);
}

Tensor& bernoulli_fill(Tensor& t, double p, bool in_place) {
  TD_CHECK(p >= 0 && p <= 1, "bernoulli_: p must be in [0, 1], got ", p);
  return fill_random(t, "bernoulli_", [&](const Tensor& out) {
    Tensor prob = full(out.sizes(), p, TensorOptions(kFloat64).device(out.device()));
    PhiloxState state = default_generator(out.device()).reserve(static_cast<uint64_t>(out.numel()));
    out.is_cuda() ? kernels::cuda::bernoulli(out, prob, state) : kernels::cpu::bernoulli(out, prob, state);
  }, in_place);
}

}  // namespace

Tensor& uniform_(Tensor& t, double from, double to) { return uniform_fill(t, from, to, true); }
Tensor& normal_(Tensor& t, double mean, double std) { return normal_fill(t, mean, std, true); }
Tensor& bernoulli_(Tensor& t, double p) { return bernoulli_fill(t, p, true); }

Tensor rand(IntList sizes, TensorOptions options) {
  Tensor t = empty(sizes, options);
  return uniform_fill(t, 0, 1, false);
}

Tensor randn(IntList sizes, TensorOptions options) {
  Tensor t = empty(sizes, options);
  return normal_fill(t, 0, 1, false);
}

Tensor randint(int64_t low, int64_t high, IntList sizes, TensorOptions options) {
  TD_CHECK(low < high, "randint: expects low < high, got low=", low, " >= high=", high);
  const DType dtype = options.dtype_or(kInt64);
  // As PyTorch: every value drawn must be one the dtype holds (they would wrap, and no longer be uniform).
  auto holds = [dtype](int64_t v) {
    if (is_integral(dtype, true)) {
      const auto [lowest, largest] = kernels::integer_range(dtype);
      return v >= lowest && v <= largest;
    }
    return dtype != kFloat16 || (v >= -65504 && v <= 65504);
  };
  TD_CHECK(holds(low), "randint: low=", low, " is out of bounds for ", dtype);
  TD_CHECK(holds(high - 1), "randint: high - 1 = ", high - 1, " is out of bounds for ", dtype);
  Tensor t = kernels::empty_tensor(sizes, dtype, options.device());
  return fill_random(t, "randint", [&](const Tensor& out) {
    PhiloxState state = default_generator(out.device()).reserve(static_cast<uint64_t>(out.numel()) * 2);
    out.is_cuda() ? kernels::cuda::randint(out, low, high, state) : kernels::cpu::randint(out, low, high, state);
  }, false);
}

Tensor randint(int64_t high, IntList sizes, TensorOptions options) { return randint(0, high, sizes, options); }

Tensor bernoulli(const Tensor& p) {
  kernels::check_defined(p, "bernoulli", "p");
  check_floating(p.dtype(), "bernoulli");
  Tensor prob = kernels::contiguous(kernels::to(p, kFloat64));
  TD_CHECK(prob.numel() == 0 || (kernels::item(kernels::amin(prob)).to_double() >= 0 &&
                                 kernels::item(kernels::amax(prob)).to_double() <= 1),
           "bernoulli: every probability must be in [0, 1]");
  Tensor t = empty_like(p);
  return fill_random(t, "bernoulli", [&](const Tensor& out) {
    PhiloxState state = default_generator(out.device()).reserve(static_cast<uint64_t>(out.numel()));
    out.is_cuda() ? kernels::cuda::bernoulli(out, prob, state) : kernels::cpu::bernoulli(out, prob, state);
  }, false);
}

Tensor bernoulli(const Tensor& like, double p) {
  kernels::check_defined(like, "bernoulli", "like");
  Tensor t = empty_like(like);
  return bernoulli_fill(t, p, false);
}

namespace {

// A sampler's parameter as float64, contiguous and of the output's shape (broadcast, copied where needed).
Tensor as_parameter(const Tensor& t, const Shape& shape) {
  return kernels::contiguous(kernels::expand(kernels::to(t, kFloat64), shape));
}

// One Philox block per element: each element's draws come from that block's own stream.
PhiloxState reserve_streams(const Tensor& out) {
  return default_generator(out.device()).reserve(static_cast<uint64_t>(out.numel()) * 4);
}

}  // namespace

namespace kernels {

Tensor poisson(const Tensor& rates) {
  check_defined(rates, "poisson", "input");
  check_floating(rates.dtype(), "poisson");
  const Tensor rate = as_parameter(rates, rates.sizes());
  // !(rate >= 0) also catches NaN.
  TD_CHECK(rate.numel() == 0 || all(ge(rate, 0)).item<bool>(),
           "poisson: invalid rate, expected every rate to be non-negative (and not NaN)");
  Tensor out = empty_tensor(rates.sizes(), rates.dtype(), rates.device());
  if (out.numel() == 0) return out;
  const PhiloxState state = reserve_streams(out);
  out.is_cuda() ? cuda::poisson(out, rate, state) : cpu::poisson(out, rate, state);
  return out;
}

Tensor binomial(const Tensor& count, const Tensor& prob) {
  check_defined(count, "binomial", "count");
  check_defined(prob, "binomial", "prob");
  check_floating(count.dtype(), "binomial");
  TD_CHECK(count.dtype() == prob.dtype(), "binomial: expected count and prob of one dtype, got ", count.dtype(),
           " and ", prob.dtype());
  TD_CHECK(count.device() == prob.device(), "binomial: expected count and prob on one device, got ", count.device(),
           " and ", prob.device());
  const Shape shape = broadcast_shapes(count.sizes(), prob.sizes(), "binomial");
  const Tensor n = as_parameter(count, shape), p = as_parameter(prob, shape);
  Tensor out = empty_tensor(shape, count.dtype(), count.device());
  if (out.numel() == 0) return out;
  const PhiloxState state = reserve_streams(out);
  out.is_cuda() ? cuda::binomial(out, n, p, state) : cpu::binomial(out, n, p, state);
  return out;
}

Tensor standard_gamma(const Tensor& alpha) {
  check_defined(alpha, "standard_gamma", "input");
  check_floating(alpha.dtype(), "standard_gamma");
  const Tensor concentration = as_parameter(alpha, alpha.sizes());
  // !(alpha >= 0) also catches NaN (PyTorch returns its smallest number for both).
  TD_CHECK(concentration.numel() == 0 || all(ge(concentration, 0)).item<bool>(),
           "standard_gamma: invalid concentration, expected every alpha to be non-negative (and not NaN)");
  Tensor out = empty_tensor(alpha.sizes(), alpha.dtype(), alpha.device());
  if (out.numel() == 0) return out;
  const PhiloxState state = reserve_streams(out);
  const double least = finfo(alpha.dtype()).tiny;
  out.is_cuda() ? cuda::standard_gamma(out, concentration, least, state)
                : cpu::standard_gamma(out, concentration, least, state);
  return out;
}

}  // namespace kernels

}  // namespace tandem
