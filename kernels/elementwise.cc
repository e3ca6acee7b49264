// Entry points of the element-wise ops: validate, promote, broadcast, allocate, then dispatch
// to the backend of the operands' device.
#include "kernels/elementwise.h"

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/reduce.h"

namespace tandem::kernels {

// ---- type promotion ----

namespace {

int category(DType t) { return t == kBool ? 0 : is_floating(t) ? 2 : 1; }

// Promotion within one rank (dimensioned tensors, 0-dim tensors, or numbers).
struct Rank {
  std::optional<DType> dtype;
  void add(DType t) { dtype = dtype ? promote_types(*dtype, t) : t; }
};

// PyTorch's rule for letting a lower rank in: only when it holds a higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (category(*lower) > category(*higher)) return promote_types(*higher, *lower);
  return higher;
}

struct Promotion {
  Rank dimensioned, zero_dim, number;
  void add(const Tensor& t) { (t.dim() > 0 ? dimensioned : zero_dim).add(t.dtype()); }
  void add(Scalar s) { number.add(s.dtype()); }
  DType result() const { return *combine(dimensioned.dtype, combine(zero_dim.dtype, number.dtype)); }
};

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  Promotion p;
  p.add(a);
  p.add(b);
  return p.result();
}

DType result_type(const Tensor& a, Scalar b) {
  Promotion p;
  p.add(a);
  p.add(b);
  return p.result();
}

namespace detail {

Tensor scalar_tensor(Scalar value, DType dtype, Device device) {
  Tensor t = empty_tensor({}, dtype, device);
  fill_into(t, value);
  return t;
}

bool scalar_in_float32(BinaryOp op, DType dtype, Scalar value) {
  if ((op != BinaryOp::Mul && op != BinaryOp::Div) || (dtype != kFloat16 && dtype != kBFloat16)) return false;
  const float wide = value.to<float>();
  const float narrow =
      dtype == kFloat16 ? static_cast<float>(value.to<Half>()) : static_cast<float>(value.to<BFloat16>());
  return !(wide == narrow || (wide != wide && narrow != narrow));  // NaN stays NaN either way
}

}  // namespace detail

// ---- several operands ----

void add_n_into(const Tensor& out, const std::vector<Tensor>& inputs) {
  check_defined(out, "add_n", "out");
  TD_CHECK(!inputs.empty(), "add_n: no tensors to add");
  TD_CHECK(out.is_contiguous(), "add_n: the output must be contiguous");
  TD_CHECK(out.dtype() != kBool, "add_n: bool tensors cannot be added");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    check_defined(t, "add_n", "inputs");
    TD_CHECK(t.sizes() == out.sizes() && t.dtype() == out.dtype() && t.is_contiguous(), "add_n: input ", i, " is ",
             t.dtype(), shape_str(t.sizes()), t.is_contiguous() ? "" : " (not contiguous)", " but the output is ",
             out.dtype(), shape_str(out.sizes()), " and every operand must match it, contiguous");
    TD_CHECK(t.device() == out.device() || (t.is_cpu() && out.is_cpu()), "add_n: input ", i, " is on ", t.device(),
             " but the output is on ", out.device());
  }
  out.is_cuda() ? cuda::add_n(out, inputs) : cpu::add_n(out, inputs);
}

// ---- unary ----

namespace {

enum class UnaryKind { Floating, FloatingOnly, Numeric, Integral, Any };

UnaryKind unary_kind(UnaryOp op) {
  switch (op) {
    case UnaryOp::Sign: return UnaryKind::Any;  // sign of a bool is itself, as in PyTorch
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Relu:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc: return UnaryKind::Numeric;
    case UnaryOp::GeluErf:
    case UnaryOp::GeluTanh:
    case UnaryOp::Silu:
    case UnaryOp::Frac: return UnaryKind::FloatingOnly;
    case UnaryOp::BitwiseNot: return UnaryKind::Integral;
    default: return UnaryKind::Floating;
  }
}

// The dtype `op` computes in for an input of dtype t.
DType unary_dtype(UnaryOp op, DType t) {
  const char* name = op_name(op);
  switch (unary_kind(op)) {
    case UnaryKind::Numeric:
      TD_CHECK(t != kBool, name, ": not supported for bool tensors",
               op == UnaryOp::Neg ? " (use logical_not for the negation of a bool tensor)" : "");
      return t;
    case UnaryKind::FloatingOnly:
      TD_CHECK(is_floating(t), name, ": expected a floating tensor, got dtype ", t);
      return t;
    case UnaryKind::Integral:
      TD_CHECK(!is_floating(t), name, ": expected an integer or bool tensor, got dtype ", t);
      return t;
    case UnaryKind::Floating: return is_floating(t) ? t : kDefaultFloat;
    case UnaryKind::Any: return t;
  }
  return t;
}

void run_unary(UnaryOp op, const Tensor& out, const Tensor& in) {
  out.is_cuda() ? cuda::unary(op, out, in) : cpu::unary(op, out, in);
}

}  // namespace

namespace detail {

Tensor unary(UnaryOp op, const Tensor& x) {
  check_defined(x, op_name(op), "input");
  DType t = unary_dtype(op, x.dtype());
  Tensor out = empty_tensor(x.sizes(), t, x.device());
  run_unary(op, out, to(x, t));
  return out;
}

Tensor& unary_(UnaryOp op, Tensor& x) {
  check_defined(x, op_name(op), "self");
  DType t = unary_dtype(op, x.dtype());
  TD_CHECK(t == x.dtype(), op_name(op), "_: result type ", t, " can't be cast to the desired output type ", x.dtype());
  check_no_internal_overlap(x, op_name(op));
  run_unary(op, x, x);
  x.bump_version();
  return x;
}

}  // namespace detail

Tensor neg(const Tensor& x) { return detail::unary(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return detail::unary(UnaryOp::Abs, x); }
Tensor exp(const Tensor& x) { return detail::unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return detail::unary(UnaryOp::Log, x); }
Tensor log1p(const Tensor& x) { return detail::unary(UnaryOp::Log1p, x); }
Tensor expm1(const Tensor& x) { return detail::unary(UnaryOp::Expm1, x); }
Tensor sqrt(const Tensor& x) { return detail::unary(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return detail::unary(UnaryOp::Rsqrt, x); }
Tensor sin(const Tensor& x) { return detail::unary(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return detail::unary(UnaryOp::Cos, x); }
Tensor tanh(const Tensor& x) { return detail::unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return detail::unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return detail::unary(UnaryOp::Relu, x); }
Tensor silu(const Tensor& x) { return detail::unary(UnaryOp::Silu, x); }
Tensor sign(const Tensor& x) { return detail::unary(UnaryOp::Sign, x); }
Tensor reciprocal(const Tensor& x) { return detail::unary(UnaryOp::Reciprocal, x); }
Tensor erf(const Tensor& x) { return detail::unary(UnaryOp::Erf, x); }
Tensor floor(const Tensor& x) { return detail::unary(UnaryOp::Floor, x); }
Tensor ceil(const Tensor& x) { return detail::unary(UnaryOp::Ceil, x); }
Tensor round(const Tensor& x) { return detail::unary(UnaryOp::Round, x); }
Tensor trunc(const Tensor& x) { return detail::unary(UnaryOp::Trunc, x); }
Tensor frac(const Tensor& x) { return detail::unary(UnaryOp::Frac, x); }
Tensor tan(const Tensor& x) { return detail::unary(UnaryOp::Tan, x); }
Tensor asin(const Tensor& x) { return detail::unary(UnaryOp::Asin, x); }
Tensor acos(const Tensor& x) { return detail::unary(UnaryOp::Acos, x); }
Tensor atan(const Tensor& x) { return detail::unary(UnaryOp::Atan, x); }
Tensor sinh(const Tensor& x) { return detail::unary(UnaryOp::Sinh, x); }
Tensor cosh(const Tensor& x) { return detail::unary(UnaryOp::Cosh, x); }
Tensor asinh(const Tensor& x) { return detail::unary(UnaryOp::Asinh, x); }
Tensor acosh(const Tensor& x) { return detail::unary(UnaryOp::Acosh, x); }
Tensor atanh(const Tensor& x) { return detail::unary(UnaryOp::Atanh, x); }
Tensor log2(const Tensor& x) { return detail::unary(UnaryOp::Log2, x); }
Tensor log10(const Tensor& x) { return detail::unary(UnaryOp::Log10, x); }
Tensor exp2(const Tensor& x) { return detail::unary(UnaryOp::Exp2, x); }
Tensor erfc(const Tensor& x) { return detail::unary(UnaryOp::Erfc, x); }
Tensor erfinv(const Tensor& x) { return detail::unary(UnaryOp::Erfinv, x); }
Tensor bitwise_not(const Tensor& x) { return detail::unary(UnaryOp::BitwiseNot, x); }
Tensor lgamma(const Tensor& x) { return detail::unary(UnaryOp::Lgamma, x); }
Tensor digamma(const Tensor& x) { return detail::unary(UnaryOp::Digamma, x); }
Tensor erfcx(const Tensor& x) { return detail::unary(UnaryOp::Erfcx, x); }
Tensor i0(const Tensor& x) { return detail::unary(UnaryOp::I0, x); }
Tensor i0e(const Tensor& x) { return detail::unary(UnaryOp::I0e, x); }
Tensor i1(const Tensor& x) { return detail::unary(UnaryOp::I1, x); }
Tensor i1e(const Tensor& x) { return detail::unary(UnaryOp::I1e, x); }
Tensor ndtri(const Tensor& x) { return detail::unary(UnaryOp::Ndtri, x); }
Tensor bessel_j0(const Tensor& x) { return detail::unary(UnaryOp::BesselJ0, x); }
Tensor bessel_j1(const Tensor& x) { return detail::unary(UnaryOp::BesselJ1, x); }
Tensor bessel_y0(const Tensor& x) { return detail::unary(UnaryOp::BesselY0, x); }
Tensor bessel_y1(const Tensor& x) { return detail::unary(UnaryOp::BesselY1, x); }
Tensor modified_bessel_i0(const Tensor& x) { return detail::unary(UnaryOp::ModifiedBesselI0, x); }
Tensor modified_bessel_i1(const Tensor& x) { return detail::unary(UnaryOp::ModifiedBesselI1, x); }
Tensor modified_bessel_k0(const Tensor& x) { return detail::unary(UnaryOp::ModifiedBesselK0, x); }
Tensor modified_bessel_k1(const Tensor& x) { return detail::unary(UnaryOp::ModifiedBesselK1, x); }
Tensor scaled_modified_bessel_k0(const Tensor& x) { return detail::unary(UnaryOp::ScaledModifiedBesselK0, x); }
Tensor scaled_modified_bessel_k1(const Tensor& x) { return detail::unary(UnaryOp::ScaledModifiedBesselK1, x); }
Tensor spherical_bessel_j0(const Tensor& x) { return detail::unary(UnaryOp::SphericalBesselJ0, x); }
Tensor airy_ai(const Tensor& x) { return detail::unary(UnaryOp::AiryAi, x); }

namespace detail {
UnaryOp gelu_op(const std::string& approximate) {
  TD_CHECK(approximate == "none" || approximate == "tanh", "gelu: approximate must be \"none\" or \"tanh\", got \"",
           approximate, "\"");
  return approximate == "none" ? UnaryOp::GeluErf : UnaryOp::GeluTanh;
}
}  // namespace detail

Tensor gelu(const Tensor& x, const std::string& approximate) { return detail::unary(detail::gelu_op(approximate), x); }

// ---- clamp ----

namespace {

// The dtype clamp computes in. For integers the bounds follow PyTorch's rule: a min below the
// dtype's range or a max above it bounds nothing and is dropped; a min above the range or a max
// below it is an error (the general rule of check_value_fits would let uint8 take -1 as 255).
DType clamp_dtype(const Tensor& x, std::optional<Scalar>& lo, std::optional<Scalar>& hi) {
  check_defined(x, "clamp", "input");
  TD_CHECK(lo || hi, "clamp: at least one of min and max must be given");
  Promotion p;
  p.add(x);
  if (lo) p.add(*lo);
  if (hi) p.add(*hi);
  DType t = p.result();
  TD_CHECK(t != kBool, "clamp: not supported for bool tensors");
  if (!is_integral(t, false)) {
    if (lo) check_value_fits(*lo, t, "clamp");
    if (hi) check_value_fits(*hi, t, "clamp");
    return t;
  }
  const auto [lowest, largest] = integer_range(t);
  if (lo) {
    const int64_t v = lo->to_int();
    TD_CHECK(v <= largest, "clamp: min value ", v, " is outside the range of ", t);
    if (v < lowest) lo.reset();
  }
  if (hi) {
    const int64_t v = hi->to_int();
    TD_CHECK(v >= lowest, "clamp: max value ", v, " is outside the range of ", t);
    if (v > largest) hi.reset();
  }
  return t;
}

void run_clamp(const Tensor& out, const Tensor& in, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  out.is_cuda() ? cuda::clamp(out, in, lo, hi) : cpu::clamp(out, in, lo, hi);
}

}  // namespace

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  DType t = clamp_dtype(x, lo, hi);
  Tensor out = empty_tensor(x.sizes(), t, x.device());
  run_clamp(out, to(x, t), lo, hi);
  return out;
}

namespace detail {

Tensor& clamp_(Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  DType t = clamp_dtype(x, lo, hi);
  TD_CHECK(can_cast(t, x.dtype()), "clamp_: result type ", t, " can't be cast to the desired output type ",
           x.dtype());
  check_no_internal_overlap(x, "clamp_");
  run_clamp(x, x, lo, hi);
  x.bump_version();
  return x;
}

}  // namespace detail

// ---- binary ----

namespace {

// Checks what `op` allows on operands promoted to `common`; returns the dtype it computes in.
DType binary_compute_dtype(BinaryOp op, DType common, Scalar alpha) {
  const char* name = op_name(op);
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
      if (op == BinaryOp::Sub) {
        TD_CHECK(common != kBool, "sub: subtraction of bool tensors is not supported (use logical_xor)");
      }
      // PyTorch's rules: a bool alpha only for a bool result, a floating one only for a floating result.
      TD_CHECK(!alpha.is_bool() || common == kBool, name, ": a boolean alpha is only supported for a boolean result, got ",
               common);
      TD_CHECK(is_floating(common) || !alpha.is_floating(), name, ": for ", common,
               " tensors alpha must not be a floating point number, got ", alpha.to_double());
      return common;
    case BinaryOp::Div:
    case BinaryOp::Atan2:
    case BinaryOp::Zeta:
    case BinaryOp::ChebyshevT:
    case BinaryOp::ChebyshevU:
    case BinaryOp::ChebyshevV:
    case BinaryOp::ChebyshevW:
    case BinaryOp::ShiftedChebyshevT:
    case BinaryOp::ShiftedChebyshevU:
    case BinaryOp::ShiftedChebyshevV:
    case BinaryOp::ShiftedChebyshevW:
    case BinaryOp::HermiteH:
    case BinaryOp::HermiteHe:
    case BinaryOp::LaguerreL:
    case BinaryOp::LegendreP:
    case BinaryOp::Copysign: return is_floating(common) ? common : kDefaultFloat;
    case BinaryOp::Pow:
    case BinaryOp::DivTrunc:
    case BinaryOp::DivFloor:
    case BinaryOp::Remainder:
    case BinaryOp::Fmod: TD_CHECK(common != kBool, name, ": not supported for bool tensors"); return common;
    case BinaryOp::Hypot:
    case BinaryOp::LogAddExp:
    case BinaryOp::Igamma:
    case BinaryOp::Igammac:
    case BinaryOp::StandardGammaGrad:
      TD_CHECK(is_floating(common), name, ": expected floating tensors, got dtype ", common);
      return common;
    case BinaryOp::Gcd:
    case BinaryOp::Lcm:
    case BinaryOp::ShiftLeft:
    case BinaryOp::ShiftRight:
      TD_CHECK(!is_floating(common) && common != kBool, name, ": expected integer tensors, got dtype ", common);
      return common;
    case BinaryOp::Nextafter:
      TD_CHECK(common == kFloat32 || common == kFloat64, name, ": expected float32 or float64 tensors, got dtype ",
               common);
      return common;
    case BinaryOp::BitwiseAnd:
    case BinaryOp::BitwiseOr:
    case BinaryOp::BitwiseXor:
      TD_CHECK(!is_floating(common), name, ": expected integer or bool tensors, got dtype ", common);
      return common;
    default: return common;
  }
}

// alpha as the operands' dtype holds it: PyTorch's CPU add takes it in float16/bfloat16 for those
// dtypes (0.3 is 0.30078125 in bfloat16), then one multiply-add in float32.
Scalar alpha_in(DType t, Scalar alpha) {
  if (t == kFloat16) return Scalar(alpha.to<Half>());
  if (t == kBFloat16) return Scalar(alpha.to<BFloat16>());
  return alpha;
}

bool divides(BinaryOp op) {
  return op == BinaryOp::DivTrunc || op == BinaryOp::DivFloor || op == BinaryOp::Remainder || op == BinaryOp::Fmod;
}

// Integer division by zero is an error, as PyTorch's ZeroDivisionError (on a GPU too, where
// PyTorch leaves the result undefined); it waits for the divisor's values.
void check_integer_divisor(BinaryOp op, const Tensor& divisor) {
  if (!divides(op) || is_floating(divisor.dtype()) || divisor.numel() == 0) return;
  TD_CHECK(!any(eq(divisor, 0)).item<bool>(), op_name(op), ": integer division by zero (ZeroDivisionError)");
}

void run_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha) {
  if (out.numel() > 0) check_integer_divisor(op, b);  // an empty result divides nothing
  alpha = alpha_in(a.dtype(), alpha);
  out.is_cuda() ? cuda::binary(op, out, a, b, alpha) : cpu::binary(op, out, a, b, alpha);
}

void run_binary_float_scalar(BinaryOp op, const Tensor& out, const Tensor& in, Scalar value) {
  out.is_cuda() ? cuda::binary_float_scalar(op, out, in, value) : cpu::binary_float_scalar(op, out, in, value);
}

Tensor binary_with(BinaryOp op, const Tensor& a, const Tensor& b, DType common, Scalar alpha) {
  const char* name = op_name(op);
  Device device = common_device(name, {&a, &b});
  DType compute = binary_compute_dtype(op, common, alpha);
  Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  Tensor out = empty_tensor(shape, is_comparison(op) ? kBool : compute, device);
  run_binary(op, out, to(a, compute), to(b, compute), alpha);
  return out;
}

Tensor& binary_into(BinaryOp op, Tensor& self, const Tensor& other, DType common, Scalar alpha) {
  const char* name = op_name(op);
  common_device(name, {&self, &other});
  DType compute = binary_compute_dtype(op, common, alpha);
  DType result = is_comparison(op) ? kBool : compute;
  TD_CHECK(can_cast(result, self.dtype()), name, "_: result type ", result,
           " can't be cast to the desired output type ", self.dtype());
  Shape shape = broadcast_shapes(self.sizes(), other.sizes(), name);
  TD_CHECK(shape == self.sizes(), name, "_: output with shape ", shape_str(self.sizes()),
           " doesn't match the broadcast shape ", shape_str(shape));
  check_no_internal_overlap(self, name);
  check_no_partial_overlap(self, other, name);
  if (result == self.dtype()) {
    run_binary(op, self, to(self, compute), to(other, compute), alpha);
  } else {
    Tensor tmp = empty_tensor(shape, result, self.device());
    run_binary(op, tmp, to(self, compute), to(other, compute), alpha);
    copy_into(self, tmp);
  }
  self.bump_version();
  return self;
}

}  // namespace

namespace detail {

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha) {
  check_defined(a, op_name(op), "input");
  check_defined(b, op_name(op), "other");
  return binary_with(op, a, b, result_type(a, b), alpha);
}

Tensor binary(BinaryOp op, const Tensor& a, Scalar b, Scalar alpha) {
  check_defined(a, op_name(op), "input");
  DType common = result_type(a, b);
  if (scalar_in_float32(op, common, b)) {
    Tensor out = empty_tensor(a.sizes(), common, a.device());
    run_binary_float_scalar(op, out, to(a, common), b);
    return out;
  }
  return binary_with(op, a, scalar_tensor(b, common, a.device()), common, alpha);
}

Tensor& binary_(BinaryOp op, Tensor& self, const Tensor& other, Scalar alpha) {
  check_defined(self, op_name(op), "self");
  check_defined(other, op_name(op), "other");
  return binary_into(op, self, other, result_type(self, other), alpha);
}

void check_pow_exponent(const Tensor& base, Scalar exponent, const char* op) {
  TD_CHECK(!(is_integral(base.dtype(), true) && exponent.is_integral() && exponent.to_int() < 0), op, ": ",
           base.dtype(), " tensors to negative integer powers (", exponent.to_int(), ") are not allowed");
}

Tensor& binary_(BinaryOp op, Tensor& self, Scalar other, Scalar alpha) {
  check_defined(self, op_name(op), "self");
  if (op == BinaryOp::Pow) check_pow_exponent(self, other, "pow_");
  DType common = result_type(self, other);
  if (scalar_in_float32(op, common, other) && common == self.dtype()) {
    check_no_internal_overlap(self, op_name(op));
    run_binary_float_scalar(op, self, self, other);
    self.bump_version();
    return self;
  }
  Tensor b = scalar_tensor(other, common, self.device());
  return binary_into(op, self, b, common, alpha);
}

}  // namespace detail

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) { return detail::binary(BinaryOp::Add, a, b, alpha); }
Tensor add(const Tensor& a, Scalar b, Scalar alpha) { return detail::binary(BinaryOp::Add, a, b, alpha); }
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) { return detail::binary(BinaryOp::Sub, a, b, alpha); }
Tensor sub(const Tensor& a, Scalar b, Scalar alpha) { return detail::binary(BinaryOp::Sub, a, b, alpha); }
Tensor mul(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Mul, a, b); }
Tensor mul(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Div, a, b); }
Tensor div(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Div, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Minimum, a, b); }
Tensor pow(const Tensor& base, const Tensor& exponent) { return detail::binary(BinaryOp::Pow, base, exponent); }

BinaryOp detail::rounded_div_op(const std::string& rounding_mode) {
  TD_CHECK(rounding_mode == "trunc" || rounding_mode == "floor",
           "div: rounding_mode must be \"trunc\" or \"floor\" (or none, for true division), got \"", rounding_mode,
           "\"");
  return rounding_mode == "trunc" ? BinaryOp::DivTrunc : BinaryOp::DivFloor;
}
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  return detail::binary(detail::rounded_div_op(rounding_mode), a, b);
}
Tensor div(const Tensor& a, Scalar b, const std::string& rounding_mode) {
  return detail::binary(detail::rounded_div_op(rounding_mode), a, b);
}
Tensor floor_divide(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::DivFloor, a, b); }
Tensor floor_divide(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::DivFloor, a, b); }
Tensor remainder(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Remainder, a, b); }
Tensor remainder(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Remainder, a, b); }
Tensor fmod(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Fmod, a, b); }
Tensor fmod(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Fmod, a, b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Atan2, a, b); }
Tensor hypot(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Hypot, a, b); }
Tensor copysign(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Copysign, a, b); }
Tensor copysign(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Copysign, a, b); }
Tensor logaddexp(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::LogAddExp, a, b); }
Tensor zeta(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Zeta, a, b); }
Tensor gcd(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Gcd, a, b); }
Tensor lcm(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Lcm, a, b); }
Tensor nextafter(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Nextafter, a, b); }
Tensor igamma(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Igamma, a, b); }
Tensor igammac(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Igammac, a, b); }
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x) {
  return detail::binary(BinaryOp::StandardGammaGrad, alpha, x);
}
Tensor chebyshev_polynomial_t(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::ChebyshevT, x, n); }
Tensor chebyshev_polynomial_u(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::ChebyshevU, x, n); }
Tensor chebyshev_polynomial_v(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::ChebyshevV, x, n); }
Tensor chebyshev_polynomial_w(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::ChebyshevW, x, n); }
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, const Tensor& n) {
  return detail::binary(BinaryOp::ShiftedChebyshevT, x, n);
}
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, const Tensor& n) {
  return detail::binary(BinaryOp::ShiftedChebyshevU, x, n);
}
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, const Tensor& n) {
  return detail::binary(BinaryOp::ShiftedChebyshevV, x, n);
}
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, const Tensor& n) {
  return detail::binary(BinaryOp::ShiftedChebyshevW, x, n);
}
Tensor hermite_polynomial_h(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::HermiteH, x, n); }
Tensor hermite_polynomial_he(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::HermiteHe, x, n); }
Tensor laguerre_polynomial_l(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::LaguerreL, x, n); }
Tensor legendre_polynomial_p(const Tensor& x, const Tensor& n) { return detail::binary(BinaryOp::LegendreP, x, n); }
Tensor fmax(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Fmax, a, b); }
Tensor fmin(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Fmin, a, b); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::ShiftLeft, a, b); }
Tensor bitwise_left_shift(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::ShiftLeft, a, b); }
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::ShiftRight, a, b); }
Tensor bitwise_right_shift(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::ShiftRight, a, b); }
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::BitwiseAnd, a, b); }
Tensor bitwise_and(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::BitwiseAnd, a, b); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::BitwiseOr, a, b); }
Tensor bitwise_or(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::BitwiseOr, a, b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::BitwiseXor, a, b); }
Tensor bitwise_xor(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::BitwiseXor, a, b); }

Tensor pow(const Tensor& base, Scalar exponent) {
  check_defined(base, "pow", "input");
  detail::check_pow_exponent(base, exponent, "pow");
  return detail::binary(BinaryOp::Pow, base, exponent);
}

Tensor pow(Scalar base, const Tensor& exponent) {
  check_defined(exponent, "pow", "exponent");
  DType common = result_type(exponent, base);
  return binary_with(BinaryOp::Pow, detail::scalar_tensor(base, common, exponent.device()), exponent, common, 1);
}

Tensor eq(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Eq, a, b); }
Tensor eq(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Ne, a, b); }
Tensor ne(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Lt, a, b); }
Tensor lt(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Le, a, b); }
Tensor le(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Gt, a, b); }
Tensor gt(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Ge, a, b); }
Tensor ge(const Tensor& a, Scalar b) { return detail::binary(BinaryOp::Ge, a, b); }

// ---- where, masked_fill ----

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined(cond, "where", "condition");
  check_defined(a, "where", "input");
  check_defined(b, "where", "other");
  Device device = common_device("where", {&cond, &a, &b});
  TD_CHECK(cond.dtype() == kBool, "where: expected a bool condition, got dtype ", cond.dtype());
  DType t = result_type(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes(), "where"), b.sizes(), "where");
  Tensor out = empty_tensor(shape, t, device);
  Tensor at = to(a, t), bt = to(b, t);
  device.is_cuda() ? cuda::where(out, cond, at, bt) : cpu::where(out, cond, at, bt);
  return out;
}

Tensor where(const Tensor& cond, Scalar a, const Tensor& b) {
  check_defined(b, "where", "other");
  check_value_fits(a, result_type(b, a), "where");  // 2**40 beside an int32 tensor would wrap
  return where(cond, detail::scalar_tensor(a, result_type(b, a), b.device()), b);
}

Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  check_defined(a, "where", "input");
  check_value_fits(b, result_type(a, b), "where");
  return where(cond, a, detail::scalar_tensor(b, result_type(a, b), a.device()));
}

Tensor where(const Tensor& cond, Scalar a, Scalar b) {
  check_defined(cond, "where", "condition");
  DType t = promote_types(a.dtype(), b.dtype());
  return where(cond, detail::scalar_tensor(a, t, cond.device()), detail::scalar_tensor(b, t, cond.device()));
}

Tensor& addcmul_(Tensor& self, const Tensor& a, const Tensor& b, Scalar value) {
  check_defined(self, "addcmul_", "self");
  check_defined(a, "addcmul_", "tensor1");
  check_defined(b, "addcmul_", "tensor2");
  common_device("addcmul_", {&self, &a, &b});
  TD_CHECK(is_floating(self.dtype()) && a.dtype() == self.dtype() && b.dtype() == self.dtype(),
           "addcmul_: expected three tensors of one floating dtype, got ", self.dtype(), ", ", a.dtype(), " and ",
           b.dtype());
  Shape shape = broadcast_shapes(broadcast_shapes(a.sizes(), b.sizes(), "addcmul_"), self.sizes(), "addcmul_");
  TD_CHECK(shape == self.sizes(), "addcmul_: output with shape ", shape_str(self.sizes()),
           " doesn't match the broadcast shape ", shape_str(shape));
  check_no_internal_overlap(self, "addcmul_");
  check_no_partial_overlap(self, a, "addcmul_");
  check_no_partial_overlap(self, b, "addcmul_");
  const double v = value.to_double();
  self.is_cuda() ? cuda::addcmul(self, self, a, b, v) : cpu::addcmul(self, self, a, b, v);
  self.bump_version();
  return self;
}

namespace {

Tensor& masked_fill_into(Tensor& x, const Tensor& mask, Scalar value, bool in_place) {
  check_defined(x, "masked_fill_", "self");
  check_defined(mask, "masked_fill_", "mask");
  Device device = common_device("masked_fill_", {&x, &mask});
  TD_CHECK(mask.dtype() == kBool, "masked_fill_: expected a bool mask, got dtype ", mask.dtype());
  Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_fill_");
  TD_CHECK(shape == x.sizes(), "masked_fill_: mask of shape ", shape_str(mask.sizes()),
           " does not broadcast to the shape ", shape_str(x.sizes()), " of the tensor filled");
  check_no_internal_overlap(x, "masked_fill_");
  check_no_partial_overlap(x, mask, "masked_fill_");
  check_value_fits(value, x.dtype(), in_place ? "masked_fill_" : "masked_fill");
  device.is_cuda() ? cuda::masked_fill(x, mask, value) : cpu::masked_fill(x, mask, value);
  if (in_place) x.bump_version();
  return x;
}

}  // namespace

namespace detail {
Tensor& masked_fill_(Tensor& x, const Tensor& mask, Scalar value) { return masked_fill_into(x, mask, value, true); }
}  // namespace detail

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  check_defined(x, "masked_fill", "input");
  check_defined(mask, "masked_fill", "mask");
  Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_fill");
  TD_CHECK(mask.dtype() == kBool, "masked_fill: expected a bool mask, got dtype ", mask.dtype());
  Tensor out = clone(expand(x, shape));
  return masked_fill_into(out, mask, value, false);
}

// ---- names ----

const char* op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "neg";
    case UnaryOp::Abs: return "abs";
    case UnaryOp::Exp: return "exp";
    case UnaryOp::Expm1: return "expm1";
    case UnaryOp::Log: return "log";
    case UnaryOp::Log1p: return "log1p";
    case UnaryOp::Sqrt: return "sqrt";
    case UnaryOp::Rsqrt: return "rsqrt";
    case UnaryOp::Sin: return "sin";
    case UnaryOp::Cos: return "cos";
    case UnaryOp::Tanh: return "tanh";
    case UnaryOp::Sigmoid: return "sigmoid";
    case UnaryOp::Relu: return "relu";
    case UnaryOp::GeluErf: return "gelu";
    case UnaryOp::GeluTanh: return "gelu";
    case UnaryOp::Silu: return "silu";
    case UnaryOp::Sign: return "sign";
    case UnaryOp::Reciprocal: return "reciprocal";
    case UnaryOp::Erf: return "erf";
    case UnaryOp::Floor: return "floor";
    case UnaryOp::Ceil: return "ceil";
    case UnaryOp::Round: return "round";
    case UnaryOp::Trunc: return "trunc";
    case UnaryOp::Frac: return "frac";
    case UnaryOp::Tan: return "tan";
    case UnaryOp::Asin: return "asin";
    case UnaryOp::Acos: return "acos";
    case UnaryOp::Atan: return "atan";
    case UnaryOp::Sinh: return "sinh";
    case UnaryOp::Cosh: return "cosh";
    case UnaryOp::Asinh: return "asinh";
    case UnaryOp::Acosh: return "acosh";
    case UnaryOp::Atanh: return "atanh";
    case UnaryOp::Log2: return "log2";
    case UnaryOp::Log10: return "log10";
    case UnaryOp::Exp2: return "exp2";
    case UnaryOp::Erfc: return "erfc";
    case UnaryOp::Erfinv: return "erfinv";
    case UnaryOp::Lgamma: return "lgamma";
    case UnaryOp::Digamma: return "digamma";
    case UnaryOp::Erfcx: return "erfcx";
    case UnaryOp::I0: return "i0";
    case UnaryOp::I0e: return "i0e";
    case UnaryOp::I1: return "i1";
    case UnaryOp::I1e: return "i1e";
    case UnaryOp::Ndtri: return "ndtri";
    case UnaryOp::BesselJ0: return "bessel_j0";
    case UnaryOp::BesselJ1: return "bessel_j1";
    case UnaryOp::BesselY0: return "bessel_y0";
    case UnaryOp::BesselY1: return "bessel_y1";
    case UnaryOp::ModifiedBesselI0: return "modified_bessel_i0";
    case UnaryOp::ModifiedBesselI1: return "modified_bessel_i1";
    case UnaryOp::ModifiedBesselK0: return "modified_bessel_k0";
    case UnaryOp::ModifiedBesselK1: return "modified_bessel_k1";
    case UnaryOp::ScaledModifiedBesselK0: return "scaled_modified_bessel_k0";
    case UnaryOp::ScaledModifiedBesselK1: return "scaled_modified_bessel_k1";
    case UnaryOp::SphericalBesselJ0: return "spherical_bessel_j0";
    case UnaryOp::AiryAi: return "airy_ai";
    case UnaryOp::BitwiseNot: return "bitwise_not";
  }
  return "unary";
}

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Maximum: return "maximum";
    case BinaryOp::Minimum: return "minimum";
    case BinaryOp::DivTrunc: return "div";
    case BinaryOp::DivFloor: return "floor_divide";
    case BinaryOp::Remainder: return "remainder";
    case BinaryOp::Fmod: return "fmod";
    case BinaryOp::Atan2: return "atan2";
    case BinaryOp::Hypot: return "hypot";
    case BinaryOp::Copysign: return "copysign";
    case BinaryOp::LogAddExp: return "logaddexp";
    case BinaryOp::Zeta: return "zeta";
    case BinaryOp::Gcd: return "gcd";
    case BinaryOp::ShiftLeft: return "bitwise_left_shift";
    case BinaryOp::ShiftRight: return "bitwise_right_shift";
    case BinaryOp::Lcm: return "lcm";
    case BinaryOp::Nextafter: return "nextafter";
    case BinaryOp::Igamma: return "igamma";
    case BinaryOp::Igammac: return "igammac";
    case BinaryOp::StandardGammaGrad: return "_standard_gamma_grad";
    case BinaryOp::ChebyshevT: return "chebyshev_polynomial_t";
    case BinaryOp::ChebyshevU: return "chebyshev_polynomial_u";
    case BinaryOp::ChebyshevV: return "chebyshev_polynomial_v";
    case BinaryOp::ChebyshevW: return "chebyshev_polynomial_w";
    case BinaryOp::ShiftedChebyshevT: return "shifted_chebyshev_polynomial_t";
    case BinaryOp::ShiftedChebyshevU: return "shifted_chebyshev_polynomial_u";
    case BinaryOp::ShiftedChebyshevV: return "shifted_chebyshev_polynomial_v";
    case BinaryOp::ShiftedChebyshevW: return "shifted_chebyshev_polynomial_w";
    case BinaryOp::HermiteH: return "hermite_polynomial_h";
    case BinaryOp::HermiteHe: return "hermite_polynomial_he";
    case BinaryOp::LaguerreL: return "laguerre_polynomial_l";
    case BinaryOp::LegendreP: return "legendre_polynomial_p";
    case BinaryOp::Fmax: return "fmax";
    case BinaryOp::Fmin: return "fmin";
    case BinaryOp::BitwiseAnd: return "bitwise_and";
    case BinaryOp::BitwiseOr: return "bitwise_or";
    case BinaryOp::BitwiseXor: return "bitwise_xor";
    case BinaryOp::Eq: return "eq";
    case BinaryOp::Ne: return "ne";
    case BinaryOp::Lt: return "lt";
    case BinaryOp::Le: return "le";
    case BinaryOp::Gt: return "gt";
    case BinaryOp::Ge: return "ge";
  }
  return "binary";
}

}  // namespace tandem::kernels
