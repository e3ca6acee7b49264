// Functions composed of the kernels' ops: tests of values (isnan, isinf, ...), logical ops,
// element-wise formulas (square, lerp, xlogy, nan_to_num, ...), and a few more (inner, range,
// renorm, the numerical gradient). Being compositions, they run on every device and autograd
// differentiates them through their parts.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"

namespace tandem {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor all_false(const Tensor& x) { return zeros_like(x, kBool); }

// Each element's truth, as Python's bool(): nonzero, NaN included.
Tensor truth(const Tensor& x) { return x.dtype() == kBool ? x : ne(x, 0); }

}  // namespace

// ---- tests of values: bool results, never differentiable ----

Tensor isnan(const Tensor& x) {
  kernels::check_defined(x, "isnan", "input");
  return is_floating(x.dtype()) ? ne(x, x) : all_false(x);
}

Tensor isinf(const Tensor& x) {
  kernels::check_defined(x, "isinf", "input");
  return is_floating(x.dtype()) ? eq(abs(x.detach()), kInf) : all_false(x);
}

Tensor isposinf(const Tensor& x) {
  kernels::check_defined(x, "isposinf", "input");
  return is_floating(x.dtype()) ? eq(x, kInf) : all_false(x);
}

Tensor isneginf(const Tensor& x) {
  kernels::check_defined(x, "isneginf", "input");
  return is_floating(x.dtype()) ? eq(x, -kInf) : all_false(x);
}

Tensor isfinite(const Tensor& x) {
  kernels::check_defined(x, "isfinite", "input");
  // x - x is 0 for every finite x, NaN for infinities and NaN.
  return is_floating(x.dtype()) ? eq(kernels::sub(x, x), 0) : ones_like(x, kBool);
}

Tensor signbit(const Tensor& x) {
  kernels::check_defined(x, "signbit", "input");
  if (!is_floating(x.dtype())) return x.dtype() == kBool ? all_false(x) : lt(x, 0);
  // The sign bit of -0 and of a negative NaN too, which no comparison sees.
  return lt(kernels::copysign(ones_like(x), x), 0);
}

// ---- logical ops: any dtype, each element's truth; bool results ----

Tensor logical_not(const Tensor& x) {
  kernels::check_defined(x, "logical_not", "input");
  return x.dtype() == kBool ? kernels::bitwise_not(x) : eq(x, 0);
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "logical_and", "input");
  kernels::check_defined(b, "logical_and", "other");
  return kernels::bitwise_and(truth(a), truth(b));
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "logical_or", "input");
  kernels::check_defined(b, "logical_or", "other");
  return kernels::bitwise_or(truth(a), truth(b));
}

Tensor logical_xor(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "logical_xor", "input");
  kernels::check_defined(b, "logical_xor", "other");
  return kernels::bitwise_xor(truth(a), truth(b));
}

// ---- formulas ----

Tensor square(const Tensor& x) {
  kernels::check_defined(x, "square", "input");
  return pow(x.dtype() == kBool ? x.to(kInt64) : x, 2);  // PyTorch squares bools into int64
}

Tensor nan_to_num(const Tensor& x, std::optional<double> nan_value, std::optional<double> posinf_value,
                  std::optional<double> neginf_value) {
  kernels::check_defined(x, "nan_to_num", "input");
  if (!is_floating(x.dtype())) return clone(x);
  const double largest = kernels::largest_finite(x.dtype());
  // The values rounded to x's dtype as a cast rounds them: one beyond its range becomes an infinity.
  const auto in_dtype = [&](double v) { return full({}, v, TensorOptions(kFloat64).device(x.device())).to(x.dtype()); };
  Tensor y = where(isnan(x), in_dtype(nan_value.value_or(0.0)), x);
  y = where(isposinf(x), in_dtype(posinf_value.value_or(largest)), y);
  return where(isneginf(x), in_dtype(neginf_value.value_or(-largest)), y);
}

Tensor xlogy(const Tensor& x_given, const Tensor& y_given) {
  kernels::check_defined(x_given, "xlogy", "input");
  kernels::check_defined(y_given, "xlogy", "other");
  // Both in the result's floating dtype first (log y too, as PyTorch's), each keeping its shape (a
  // 0-dim operand stays one in the type promotion below).
  DType dtype = result_type(x_given, y_given);
  if (!is_floating(dtype)) dtype = kDefaultFloat;
  const Tensor x = x_given.to(dtype), y = y_given.to(dtype);
  // 0 where x is 0 (log y may be -inf there), NaN wherever y is: where x is 0 and log(y) is not
  // finite (y <= 0 or +inf), y is replaced by 1.
  Tensor out;
  {
    NoGradGuard values_only;
    const Tensor replaced = logical_and(eq(x, 0), logical_or(le(y, 0), isposinf(y)));
    // + 0 turns the -0 of a zero x times a negative log into +0, as PyTorch's, and changes nothing else.
    const Tensor product = mul(x, log(where(replaced, 1, y))) + 0.0;
    out = where(isnan(y), std::numeric_limits<double>::quiet_NaN(), product);
  }
  if (!autograd::needs_grad({&x_given, &y_given})) return out;
  // PyTorch's gradients: xlogy(grad, y) to x (0 where the gradient is 0, whatever log y), but 0 where
  // x is 0 and y <= 0; grad * x / y to y (NaN where both are 0, an infinity where only y is).
  const SavedTensor saved_x(x, false), saved_y(y, false);
  autograd::record("XlogyBackward0", {&x_given, &y_given}, {&out},
                   [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                     const Tensor xv = saved_x.unpack("XlogyBackward0"), yv = saved_y.unpack("XlogyBackward0");
                     const Tensor grad_x = where(logical_and(eq(xv, 0), le(yv, 0)), 0, xlogy(g[0], yv));
                     const Tensor grad_y = mul(g[0], div(xv, yv));
                     return {autograd::match_input(autograd::sum_to(grad_x, x_given.sizes()), x_given),
                             autograd::match_input(autograd::sum_to(grad_y, y_given.sizes()), y_given)};
                   });
  return out;
}

Tensor xlogy(const Tensor& x, Scalar y) {
  kernels::check_defined(x, "xlogy", "input");
  return xlogy(x, kernels::detail::scalar_tensor(y, is_floating(x.dtype()) ? x.dtype() : kDefaultFloat, x.device()));
}

Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight) {
  kernels::check_defined(start, "lerp", "input");
  kernels::check_defined(end, "lerp", "end");
  TD_CHECK(start.dtype() == end.dtype() && is_floating(start.dtype()),
           "lerp: expected start and end of one floating dtype, got ", start.dtype(), " and ", end.dtype());
  // Two forms, as PyTorch's: from start for small weights, back from end for large ones, each exact at
  // its own end.
  const double w = weight.to_double();
  const Tensor span = sub(end, start);
  return std::abs(w) < 0.5 ? add(start, mul(span, w)) : sub(end, mul(span, 1 - w));
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  kernels::check_defined(start, "lerp", "input");
  kernels::check_defined(end, "lerp", "end");
  kernels::check_defined(weight, "lerp", "weight");
  TD_CHECK(start.dtype() == end.dtype() && start.dtype() == weight.dtype() && is_floating(start.dtype()),
           "lerp: expected start, end and weight of one floating dtype, got ", start.dtype(), ", ", end.dtype(),
           " and ", weight.dtype());
  const Tensor span = sub(end, start);
  return where(lt(abs(weight.detach()), 0.5), start + span * weight, end - span * (1 - weight));
}

Tensor addcmul(const Tensor& self, const Tensor& a, const Tensor& b, Scalar value) {
  kernels::check_defined(self, "addcmul", "input");
  return add(self, mul(mul(a, b), value));
}

Tensor addcdiv(const Tensor& self, const Tensor& a, const Tensor& b, Scalar value) {
  kernels::check_defined(self, "addcdiv", "input");
  kernels::check_defined(a, "addcdiv", "tensor1");
  kernels::check_defined(b, "addcdiv", "tensor2");
  TD_CHECK(is_floating(a.dtype()) || is_floating(b.dtype()),
           "addcdiv: integer division of tensors is not supported (use div with a rounding mode), got ", a.dtype(),
           " and ", b.dtype());
  return add(self, mul(div(a, b), value));
}

Tensor deg2rad(const Tensor& x) {
  kernels::check_defined(x, "deg2rad", "input");
  return mul(is_floating(x.dtype()) ? x : x.to(kDefaultFloat), std::numbers::pi / 180);
}

Tensor rad2deg(const Tensor& x) {
  kernels::check_defined(x, "rad2deg", "input");
  return mul(is_floating(x.dtype()) ? x : x.to(kDefaultFloat), 180 / std::numbers::pi);
}

Tensor logit(const Tensor& x, std::optional<double> eps) {
  kernels::check_defined(x, "logit", "input");
  // Clamped to [eps, 1 - eps]; the gradient flows within the bounds, the bounds included, as PyTorch's.
  const Tensor p = eps ? where(logical_or(lt(x, *eps), gt(x, 1 - *eps)), clamp(x.detach(), *eps, 1 - *eps), x) : x;
  return log(p / (1 - p));
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  kernels::check_defined(a, "isclose", "input");
  kernels::check_defined(b, "isclose", "other");
  TD_CHECK(a.dtype() == b.dtype(), "isclose: expected two tensors of one dtype, got ", a.dtype(), " and ", b.dtype());
  TD_CHECK(rtol >= 0 && atol >= 0, "isclose: rtol and atol must be non-negative, got ", rtol, " and ", atol);
  const Tensor x = a.detach(), y = b.detach();
  Tensor close = eq(x, y);  // equal infinities too, whose difference is NaN
  if (x.dtype() == kBool) return close;
  // A finite gap within the tolerance: an infinite one is never within an infinite tolerance.
  const Tensor wide_x = x.to(kFloat64), wide_y = y.to(kFloat64);
  const Tensor gap = abs(wide_x - wide_y);
  close = logical_or(close, logical_and(isfinite(gap), le(gap, abs(wide_y) * rtol + atol)));
  if (equal_nan) close = logical_or(close, logical_and(isnan(x), isnan(y)));
  return close;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return all(isclose(a, b, rtol, atol, equal_nan)).item<bool>();
}

// ---- reductions that skip NaN, and pairs of reductions ----

namespace {

// The dims a reduction takes: those given, or (none given) every dim.
Shape reduced_dims(const Tensor& x, IntList dims) {
  if (!dims.empty()) return dims.vec();
  Shape all(static_cast<size_t>(x.dim()));
  std::iota(all.begin(), all.end(), int64_t{0});
  return all;
}

}  // namespace

Tensor nansum(const Tensor& x, IntList dims, bool keepdim) {
  kernels::check_defined(x, "nansum", "input");
  const Tensor numbers = is_floating(x.dtype()) ? where(isnan(x), 0, x) : x;
  return x.dim() == 0 ? sum(numbers) : sum(numbers, reduced_dims(x, dims), keepdim);
}

Tensor nanmean(const Tensor& x, IntList dims, bool keepdim) {
  kernels::check_defined(x, "nanmean", "input");
  TD_CHECK(is_floating(x.dtype()), "nanmean: expected a floating tensor, got dtype ", x.dtype());
  const Tensor counted = logical_not(isnan(x));
  const Tensor count = x.dim() == 0 ? sum(counted) : sum(counted, reduced_dims(x, dims), keepdim);
  return div(nansum(x, dims, keepdim), count);
}

std::tuple<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  kernels::check_defined(x, "aminmax", "input");
  if (!dim) return {amin(x), amax(x)};
  return {amin(x, *dim, keepdim), amax(x, *dim, keepdim)};
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return {var(x, dims, correction, keepdim), x.dim() == 0 ? mean(x) : mean(x, reduced_dims(x, dims), keepdim)};
}

std::tuple<Tensor, Tensor> std_mean(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return {std(x, dims, correction, keepdim), x.dim() == 0 ? mean(x) : mean(x, reduced_dims(x, dims), keepdim)};
}

Tensor ldexp(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "ldexp", "input");
  kernels::check_defined(b, "ldexp", "other");
  return mul(is_floating(a.dtype()) ? a : a.to(kDefaultFloat), exp2(b));
}

namespace {

// v * 2^-e in float64, the power taken in two halves so that neither overflows (a subnormal's
// exponent is -1073).
Tensor scale_down(const Tensor& v, const Tensor& e) {
  const Tensor half = floor(e / 2);
  return v * exp2(-half) * exp2(half - e);
}

}  // namespace

std::tuple<Tensor, Tensor> frexp(const Tensor& x) {
  kernels::check_defined(x, "frexp", "input");
  TD_CHECK(is_floating(x.dtype()), "frexp: only floating-point dtypes are supported, got ", x.dtype());
  Tensor mantissa, exponent;
  {
    NoGradGuard no_grad;
    const Tensor wide = x.detach().to(kFloat64);  // every dtype's values, exactly
    const Tensor regular = logical_and(isfinite(wide), ne(wide, 0));
    const Tensor magnitude = where(regular, abs(wide), 1.0);
    // log2 rounds near powers of two: the estimate is corrected until |x| / 2^e is in [0.5, 1).
    Tensor e = floor(log2(magnitude)) + 1;
    const Tensor m = scale_down(magnitude, e);
    e = where(regular, e + ge(m, 1).to(kFloat64) - lt(m, 0.5).to(kFloat64), 0.0);
    mantissa = scale_down(wide, e).to(x.dtype());  // exact: no more digits than x's
    exponent = e.to(kInt32);
  }
  if (autograd::needs_grad({&x})) {
    // PyTorch's gradient, grad / 2^exponent with the power in float32 (inf below 2^-149's exponents).
    const Tensor power = exp2(exponent.to(kFloat32));
    const DType dtype = x.dtype();
    autograd::record(
        "FrexpBackward0", {&x}, {&mantissa},
        [power, dtype](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {div(g[0], power).to(dtype)}; })
        ->saves_nothing = true;
  }
  return {mantissa, exponent};
}

Tensor true_divide(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor true_divide(const Tensor& a, Scalar b) { return div(a, b); }

Tensor rsub(const Tensor& a, Scalar b, Scalar alpha) {
  kernels::check_defined(a, "rsub", "input");
  TD_CHECK(!b.is_bool() && a.dtype() != kBool,
           "rsub: subtraction with a bool is not supported; use logical_xor or the ~ operator");
  // b as a 0-dim tensor of the result's dtype, so that sub's checks (a bool tensor, a floating
  // alpha with integers) apply as to any subtraction.
  return sub(kernels::detail::scalar_tensor(b, result_type(a, b), a.device()), a, alpha);
}

Tensor frobenius_norm(const Tensor& x, IntList dims, bool keepdim) {
  kernels::check_defined(x, "frobenius_norm", "input");
  TD_CHECK(dims.size() <= 2, "frobenius_norm: expected at most 2 dims, got ", dims.size());
  return norm(x, 2, dims, keepdim);
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  std::vector<Shape> shapes;
  for (const Tensor& t : tensors) {
    kernels::check_defined(t, "broadcast_tensors", "tensors");
    shapes.push_back(t.sizes());
  }
  const Shape shape = broadcast_shapes(shapes);
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(expand(t, shape));
  return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  Shape shape;
  for (const Shape& s : shapes) shape = broadcast_shapes(IntList(shape), IntList(s), "broadcast_shapes");
  return shape;
}

bool is_nonzero(const Tensor& x) {
  kernels::check_defined(x, "is_nonzero", "input");
  TD_CHECK(x.numel() == 1, "is_nonzero: Boolean value of Tensor with ", x.numel() == 0 ? "no values" : "more than one value",
           " is ambiguous (shape ", shape_str(x.sizes()), ")");
  return x.item<double>() != 0;
}

bool is_signed(const Tensor& x) {
  kernels::check_defined(x, "is_signed", "input");
  return x.dtype() != kBool && x.dtype() != kUInt8;
}

Tensor isreal(const Tensor& x) {
  kernels::check_defined(x, "isreal", "input");
  return ones(x.sizes(), TensorOptions(kBool).device(x.device()));
}

Tensor randint_like(const Tensor& x, int64_t low, int64_t high) {
  kernels::check_defined(x, "randint_like", "input");
  return randint(low, high, x.sizes(), TensorOptions(x.dtype()).device(x.device()));
}

Tensor randint_like(const Tensor& x, int64_t high) { return randint_like(x, 0, high); }

Tensor positive(const Tensor& x) {
  kernels::check_defined(x, "positive", "input");
  TD_CHECK(x.dtype() != kBool, "positive: the unary + is not supported for bool tensors");
  return x;
}

Tensor adjoint(const Tensor& x) {
  kernels::check_defined(x, "adjoint", "input");
  if (x.dim() == 0) return x;  // as PyTorch's (which warns that it will refuse it)
  TD_CHECK(x.dim() >= 2, "adjoint: expected a matrix or a batch of matrices, got a ", x.dim(), "-dim tensor");
  return transpose(x, -2, -1);
}

Tensor inverse(const Tensor& x) { return linalg::inv(x); }

Tensor inner(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "inner", "input");
  kernels::check_defined(b, "inner", "other");
  if (a.dim() == 0 || b.dim() == 0) return mul(a, b);
  TD_CHECK(a.dtype() == b.dtype(), "inner: expected both inputs to have the same dtype, got ", a.dtype(), " and ",
           b.dtype());
  TD_CHECK(a.size(-1) == b.size(-1), "inner: the last dims must match, got shapes ", shape_str(a.sizes()), " and ",
           shape_str(b.sizes()));
  return tensordot(a, b, {-1}, {-1});
}

bool equal(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "equal", "input");
  kernels::check_defined(b, "equal", "other");
  TD_CHECK(a.device() == b.device(), "equal: expected both tensors on one device, got ", a.device(), " and ", b.device());
  if (a.sizes() != b.sizes()) return false;
  NoGradGuard values_only;
  return a.numel() == 0 || all(eq(a, b)).item<bool>();
}

Tensor range(double start, double end, double step, TensorOptions options) {
  const DType dtype = options.dtype_or(kDefaultFloat);
  if (!is_floating(dtype)) {
    // As PyTorch's: the bounds and the step are truncated to whole numbers first.
    start = std::trunc(start);
    end = std::trunc(end);
    step = std::trunc(step);
  }
  TD_CHECK(step != 0, "range: step must be nonzero");
  TD_CHECK(std::isfinite(start) && std::isfinite(end), "range: start and end must be finite, got ", start, " and ", end);
  TD_CHECK((step > 0 && end >= start) || (step < 0 && end <= start), "range: the bounds ", start, " and ", end,
           " do not agree with the step's sign (", step, ")");
  const auto count = static_cast<int64_t>(std::floor((end - start) / step)) + 1;
  // start + i step in double, then converted: the last value is end itself where the steps reach it.
  const Tensor steps = arange(count, TensorOptions(kFloat64).device(options.device()));
  return add(mul(steps, step), start).to(dtype);
}

Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm) {
  kernels::check_defined(x, "renorm", "input");
  TD_CHECK(x.dim() >= 2, "renorm: expected at least 2 dims, got ", x.dim());
  TD_CHECK(is_floating(x.dtype()), "renorm: expected a floating tensor, got ", x.dtype());
  TD_CHECK(p > 0, "renorm: expected a positive norm order p, got ", p);
  TD_CHECK(maxnorm >= 0, "renorm: expected maxnorm >= 0, got ", maxnorm);
  const int64_t d = wrap_dim(dim, x.dim(), "renorm");
  std::vector<int64_t> others;
  for (int64_t i = 0; i < x.dim(); ++i) {
    if (i != d) others.push_back(i);
  }
  // A 16-bit input's norms and factors in float32, the factor rounded once, as PyTorch's.
  const bool half = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
  const Tensor norms = linalg::vector_norm(half ? x.to(kFloat32) : x, p, others, true);
  const Tensor factor = where(gt(norms, maxnorm), Scalar(maxnorm) / add(norms, 1e-7), 1.0);
  return mul(x, half ? factor.to(x.dtype()) : factor);
}

namespace {

// One derivative of f along dim d: `step` apart, or at `coordinates` (1-D, f's size along d) where
// defined. Differences are taken in f's (and the coordinates') own dtype before anything is scaled,
// so integer samples past float32's exact range (timestamps) keep their steps.
Tensor derivative_along(const Tensor& f, int64_t d, double step, const Tensor& coordinates, int64_t edge_order) {
  const int64_t n = f.size(d);
  auto at = [&](int64_t start, int64_t length) { return narrow(f, d, start, length); };
  const Tensor first = at(0, 1), second = at(1, 1), last = at(n - 1, 1), before_last = at(n - 2, 1);
  Tensor inside, head, tail;
  if (!coordinates.defined()) {
    inside = div(sub(at(2, n - 2), at(0, n - 2)), 2 * step);
    if (edge_order == 1) {
      head = div(sub(second, first), step);
      tail = div(sub(last, before_last), step);
    } else {
      // -3/2 f0 + 2 f1 - 1/2 f2 as 2 (f1 - f0) - 1/2 (f2 - f0), and its mirror at the end.
      head = div(sub(mul(sub(second, first), 2.0), mul(sub(at(2, 1), first), 0.5)), step);
      tail = div(sub(mul(sub(last, before_last), 2.0), mul(sub(last, at(n - 3, 1)), 0.5)), step);
    }
    return cat({head, inside, tail}, d);
  }
  // The coordinates' steps, shaped to broadcast along d.
  Shape along(static_cast<size_t>(f.dim()), 1);
  auto shaped = [&](const Tensor& t) {
    along[static_cast<size_t>(d)] = t.size(0);
    return reshape(t, along);
  };
  Tensor dx = sub(narrow(coordinates, 0, 1, n - 1), narrow(coordinates, 0, 0, n - 1));
  if (!is_floating(dx.dtype())) dx = dx.to(kDefaultFloat);
  // Inside: the derivative at x_i of the parabola through three neighbours, h1 = x_i - x_(i-1), h2 = x_(i+1) - x_i.
  const Tensor h1 = narrow(dx, 0, 0, n - 2), h2 = narrow(dx, 0, 1, n - 2), span = add(h1, h2);
  const Tensor a = neg(div(h2, mul(h1, span))), b = div(sub(h2, h1), mul(h1, h2)), c = div(h1, mul(h2, span));
  inside = add(add(mul(shaped(a), at(0, n - 2)), mul(shaped(b), at(1, n - 2))), mul(shaped(c), at(2, n - 2)));
  if (edge_order == 1) {
    head = div(sub(second, first), shaped(narrow(dx, 0, 0, 1)));
    tail = div(sub(last, before_last), shaped(narrow(dx, 0, n - 2, 1)));
  } else {
    // The parabola through the first (last) three samples, differentiated at its end.
    const Tensor l1 = narrow(dx, 0, 0, 1), l2 = narrow(dx, 0, 1, 1), ls = add(l1, l2);
    head = add(add(mul(shaped(neg(div(add(mul(l1, 2.0), l2), mul(l1, ls)))), first), mul(shaped(div(ls, mul(l1, l2))), second)),
               mul(shaped(neg(div(l1, mul(l2, ls)))), at(2, 1)));
    const Tensor r1 = narrow(dx, 0, n - 3, 1), r2 = narrow(dx, 0, n - 2, 1), rs = add(r1, r2);
    tail = add(add(mul(shaped(div(r2, mul(r1, rs))), at(n - 3, 1)), mul(shaped(neg(div(rs, mul(r1, r2)))), before_last)),
               mul(shaped(div(add(mul(r2, 2.0), r1), mul(r2, rs))), last));
  }
  return cat({head, inside, tail}, d);
}

// The dims gradient differentiates along: all of f's by default; each once.
std::vector<int64_t> gradient_dims(const Tensor& f, const std::optional<std::vector<int64_t>>& dims) {
  std::vector<int64_t> out;
  if (!dims) {
    for (int64_t i = 0; i < f.dim(); ++i) out.push_back(i);
    return out;
  }
  for (int64_t dim : *dims) {
    TD_CHECK(f.dim() > 0, "gradient: dim ", dim, " given, but the input has no dims");
    const int64_t d = wrap_dim(dim, f.dim(), "gradient");
    TD_CHECK(std::find(out.begin(), out.end(), d) == out.end(), "gradient: dim ", d, " appears more than once");
    out.push_back(d);
  }
  return out;
}

// gradient's checks of f: its dtype, and its sizes against edge_order.
void check_gradient_input(const Tensor& f, const std::vector<int64_t>& dims, int64_t edge_order) {
  TD_CHECK(f.dtype() != kUInt8 && f.dtype() != kBool, "gradient: ", f.dtype(), " input is not supported");
  TD_CHECK(edge_order == 1 || edge_order == 2, "gradient: only edge_order 1 and 2 are supported, got ", edge_order);
  for (int64_t d : dims) {
    TD_CHECK(f.size(d) >= edge_order + 1, "gradient: expected each dim's size to be at least edge_order + 1 = ",
             edge_order + 1, ", got size ", f.size(d), " along dim ", d, " of ", shape_str(f.sizes()));
  }
}

}  // namespace

std::vector<Tensor> gradient(const Tensor& f, double spacing, std::optional<std::vector<int64_t>> dims,
                             int64_t edge_order) {
  kernels::check_defined(f, "gradient", "input");
  return gradient(f, std::vector<double>(gradient_dims(f, dims).size(), spacing), dims, edge_order);
}

std::vector<Tensor> gradient(const Tensor& f, const std::vector<double>& spacing,
                             std::optional<std::vector<int64_t>> dims, int64_t edge_order) {
  kernels::check_defined(f, "gradient", "input");
  const std::vector<int64_t> along = gradient_dims(f, dims);
  TD_CHECK(spacing.size() == along.size(), "gradient: expected one spacing per dim (", along.size(), "), got ",
           spacing.size());
  check_gradient_input(f, along, edge_order);
  std::vector<Tensor> out;
  for (size_t i = 0; i < along.size(); ++i) out.push_back(derivative_along(f, along[i], spacing[i], Tensor(), edge_order));
  return out;
}

std::vector<Tensor> gradient(const Tensor& f, const std::vector<Tensor>& coordinates,
                             std::optional<std::vector<int64_t>> dims, int64_t edge_order) {
  kernels::check_defined(f, "gradient", "input");
  const std::vector<int64_t> along = gradient_dims(f, dims);
  TD_CHECK(coordinates.size() == along.size(), "gradient: expected one tensor of coordinates per dim (", along.size(),
           "), got ", coordinates.size());
  check_gradient_input(f, along, edge_order);
  std::vector<Tensor> out;
  for (size_t i = 0; i < along.size(); ++i) {
    const Tensor& c = coordinates[i];
    kernels::check_defined(c, "gradient", "spacing");
    TD_CHECK(c.dim() == 1 && c.size(0) == f.size(along[i]), "gradient: expected the coordinates along dim ", along[i],
             " to be 1-D of size ", f.size(along[i]), ", got shape ", shape_str(c.sizes()));
    TD_CHECK(c.device() == f.device(), "gradient: expected the coordinates on ", f.device(), ", got ", c.device());
    out.push_back(derivative_along(f, along[i], 1, c, edge_order));
  }
  return out;
}

}  // namespace tandem
