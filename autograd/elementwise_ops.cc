// Differentiable element-wise ops: the kernel, then (when recording) a node whose closure
// computes the input gradients from the output gradient. Gradients of broadcast inputs are
// summed back to their shapes; promoted ones are converted back to their dtypes. The formulas
// are written with differentiable ops, so gradients of gradients work too.
#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/autocast.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "autograd/special.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"

namespace tandem {

using autograd::match_input;
using autograd::needs_grad;
using autograd::record;
using autograd::sum_to;
namespace kd = kernels::detail;
using kernels::BinaryOp;
using kernels::UnaryOp;

namespace {

// ---- unary ----

// g times d(op)/dx, from the input x and/or the output y (whichever the formula uses).
struct UnaryGrad {
  const char* node;
  bool uses_input, uses_output;
  Tensor (*fn)(const Tensor& g, const Tensor& x, const Tensor& y);
};

Tensor gelu_tanh_grad(const Tensor& g, const Tensor& x, const Tensor&) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Tensor t = tanh((x + x * x * x * 0.044715) * k);
  Tensor inner_grad = (x * x * (3 * 0.044715) + 1) * k;
  return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * inner_grad);
}

Tensor gelu_erf_grad(const Tensor& g, const Tensor& x, const Tensor&) {
  Tensor cdf = (erf(x * (1 / std::numbers::sqrt2)) + 1) * 0.5;
  Tensor pdf = exp(x * x * -0.5) * (1 / std::sqrt(2 * std::numbers::pi));
  return g * (cdf + x * pdf);
}

UnaryGrad unary_grad(UnaryOp op) {
  using T = const Tensor&;
  switch (op) {
    case UnaryOp::Neg: return {"NegBackward0", false, false, [](T g, T, T) { return -g; }};
    case UnaryOp::Abs: return {"AbsBackward0", true, false, [](T g, T x, T) { return g * sign(x); }};
    case UnaryOp::Exp: return {"ExpBackward0", false, true, [](T g, T, T y) { return g * y; }};
    case UnaryOp::Log: return {"LogBackward0", true, false, [](T g, T x, T) { return g / x; }};
    case UnaryOp::Log1p: return {"Log1PBackward0", true, false, [](T g, T x, T) { return g / (x + 1); }};
    case UnaryOp::Expm1: return {"Expm1Backward0", false, true, [](T g, T, T y) { return g * (y + 1); }};
    case UnaryOp::Sqrt: return {"SqrtBackward0", false, true, [](T g, T, T y) { return g / (y * 2); }};
    case UnaryOp::Rsqrt: return {"RsqrtBackward0", false, true, [](T g, T, T y) { return g * (y * y * y * -0.5); }};
    case UnaryOp::Sin: return {"SinBackward0", true, false, [](T g, T x, T) { return g * cos(x); }};
    case UnaryOp::Cos: return {"CosBackward0", true, false, [](T g, T x, T) { return g * -sin(x); }};
    case UnaryOp::Tanh: return {"TanhBackward0", false, true, [](T g, T, T y) { return g * (1 - y * y); }};
    case UnaryOp::Sigmoid: return {"SigmoidBackward0", false, true, [](T g, T, T y) { return g * (y * (1 - y)); }};
    // Zero where y <= 0, g elsewhere: NaN passes its gradient, as in PyTorch's threshold_backward.
    case UnaryOp::Relu: return {"ReluBackward0", false, true, [](T g, T, T y) { return where(y <= 0, 0, g); }};
    case UnaryOp::GeluErf: return {"GeluBackward0", true, false, gelu_erf_grad};
    case UnaryOp::GeluTanh: return {"GeluBackward0", true, false, gelu_tanh_grad};
    case UnaryOp::Silu:
      return {"SiluBackward0", true, false, [](T g, T x, T) {
                Tensor s = sigmoid(x);
                return g * (s * (x * (1 - s) + 1));
              }};
    case UnaryOp::Sign: return {"SignBackward0", false, false, [](T g, T, T) { return zeros_like(g); }};
    case UnaryOp::Floor: return {"FloorBackward0", false, false, [](T g, T, T) { return zeros_like(g); }};
    case UnaryOp::Ceil: return {"CeilBackward0", false, false, [](T g, T, T) { return zeros_like(g); }};
    case UnaryOp::Round: return {"RoundBackward0", false, false, [](T g, T, T) { return zeros_like(g); }};
    case UnaryOp::Trunc: return {"TruncBackward0", false, false, [](T g, T, T) { return zeros_like(g); }};
    case UnaryOp::Frac: return {"FracBackward0", false, false, [](T g, T, T) { return g; }};
    case UnaryOp::Reciprocal: return {"ReciprocalBackward0", false, true, [](T g, T, T y) { return g * -(y * y); }};
    case UnaryOp::Erf:
      return {"ErfBackward0", true, false,
              [](T g, T x, T) { return g * exp(-(x * x)) * (2 / std::sqrt(std::numbers::pi)); }};
    case UnaryOp::Erfc:
      return {"ErfcBackward0", true, false,
              [](T g, T x, T) { return g * exp(-(x * x)) * (-2 / std::sqrt(std::numbers::pi)); }};
    case UnaryOp::Erfinv:
      return {"ErfinvBackward0", false, true,
              [](T g, T, T y) { return g * exp(y * y) * (std::sqrt(std::numbers::pi) / 2); }};
    case UnaryOp::Tan: return {"TanBackward0", false, true, [](T g, T, T y) { return g * (y * y + 1); }};
    case UnaryOp::Asin: return {"AsinBackward0", true, false, [](T g, T x, T) { return g * rsqrt(1 - x * x); }};
    case UnaryOp::Acos: return {"AcosBackward0", true, false, [](T g, T x, T) { return g * -rsqrt(1 - x * x); }};
    case UnaryOp::Atan: return {"AtanBackward0", true, false, [](T g, T x, T) { return g / (x * x + 1); }};
    case UnaryOp::Sinh: return {"SinhBackward0", true, false, [](T g, T x, T) { return g * cosh(x); }};
    case UnaryOp::Cosh: return {"CoshBackward0", true, false, [](T g, T x, T) { return g * sinh(x); }};
    case UnaryOp::Asinh: return {"AsinhBackward0", true, false, [](T g, T x, T) { return g * rsqrt(x * x + 1); }};
    case UnaryOp::Acosh: return {"AcoshBackward0", true, false, [](T g, T x, T) { return g * rsqrt(x * x - 1); }};
    case UnaryOp::Atanh: return {"AtanhBackward0", true, false, [](T g, T x, T) { return g / (1 - x * x); }};
    case UnaryOp::Log2:
      return {"Log2Backward0", true, false, [](T g, T x, T) { return g / (x * std::numbers::ln2); }};
    case UnaryOp::Log10:
      return {"Log10Backward0", true, false, [](T g, T x, T) { return g / (x * std::numbers::ln10); }};
    case UnaryOp::Exp2: return {"Exp2Backward0", false, true, [](T g, T, T y) { return g * y * std::numbers::ln2; }};
    case UnaryOp::Lgamma: return {"LgammaBackward0", true, false, [](T g, T x, T) { return g * digamma(x); }};
    case UnaryOp::Digamma: return {"DigammaBackward0", true, false, [](T g, T x, T) { return g * polygamma(1, x); }};
    case UnaryOp::Erfcx:
      return {"SpecialErfcxBackward0", true, true, [](T g, T x, T y) {
                return g * (x * y * 2 - 2 / std::sqrt(std::numbers::pi));
              }};
    case UnaryOp::I0: return {"I0Backward0", true, false, [](T g, T x, T) { return g * special::i1(x); }};
    case UnaryOp::I0e:
      return {"SpecialI0EBackward0", true, true, [](T g, T x, T y) { return g * (special::i1e(x) - sign(x) * y); }};
    // I1'(x) = I0(x) - I1(x) / x, 1/2 at 0; the division sees 1 there, so no 0 / 0 reaches a
    // second derivative.
    case UnaryOp::I1:
      return {"SpecialI1Backward0", true, true, [](T g, T x, T y) {
                const Tensor at_zero = x == 0;
                return g * where(at_zero, 0.5, i0(x) - y / where(at_zero, 1, x));
              }};
    case UnaryOp::I1e:
      return {"SpecialI1EBackward0", true, true, [](T g, T x, T y) {
                const Tensor at_zero = x == 0;
                return g * where(at_zero, 0.5, special::i0e(x) - y * (sign(x) + 1 / where(at_zero, 1, x)));
              }};
    case UnaryOp::BesselJ0:
      return {"SpecialBesselJ0Backward0", true, false, [](T g, T x, T) { return g * -special::bessel_j1(x); }};
    // J1' = J0 - J1 / x, 1/2 at 0 (the division sees 1 there, as I1's).
    case UnaryOp::BesselJ1:
      return {"SpecialBesselJ1Backward0", true, true, [](T g, T x, T y) {
                const Tensor at_zero = x == 0;
                return g * where(at_zero, 0.5, special::bessel_j0(x) - y / where(at_zero, 1, x));
              }};
    case UnaryOp::BesselY0:
      return {"SpecialBesselY0Backward0", true, false, [](T g, T x, T) { return g * -special::bessel_y1(x); }};
    // Y1' = Y0 - Y1 / x: +inf at 0, the limit of 2 / (pi x^2) (the formula gives -inf + inf there).
    case UnaryOp::BesselY1:
      return {"SpecialBesselY1Backward0", true, true, [](T g, T x, T y) {
                const Tensor at_zero = x == 0;
                return g * where(at_zero, std::numeric_limits<double>::infinity(),
                                 special::bessel_y0(x) - y / where(at_zero, 1, x));
              }};
    case UnaryOp::ModifiedBesselI0:
      return {"SpecialModifiedBesselI0Backward0", true, false,
              [](T g, T x, T) { return g * special::modified_bessel_i1(x); }};
    case UnaryOp::ModifiedBesselI1:
      return {"SpecialModifiedBesselI1Backward0", true, true, [](T g, T x, T y) {
                const Tensor at_zero = x == 0;
                return g * where(at_zero, 0.5, special::modified_bessel_i0(x) - y / where(at_zero, 1, x));
              }};
    case UnaryOp::ModifiedBesselK0:
      return {"SpecialModifiedBesselK0Backward0", true, false,
              [](T g, T x, T) { return g * -special::modified_bessel_k1(x); }};
    // K1' = -K0 - K1 / x: -inf at 0 as it stands (-inf - inf / 0), the limit of -1 / x^2, and its own
    // derivative +inf there, as PyTorch's.
    case UnaryOp::ModifiedBesselK1:
      return {"SpecialModifiedBesselK1Backward0", true, true,
              [](T g, T x, T y) { return g * -(special::modified_bessel_k0(x) + y / x); }};
    // Not differentiable in PyTorch; their entry points below call the kernels directly.
    case UnaryOp::ScaledModifiedBesselK0:
    case UnaryOp::ScaledModifiedBesselK1:
    case UnaryOp::SphericalBesselJ0:
    case UnaryOp::AiryAi: break;
    case UnaryOp::Ndtri:
      return {"SpecialNdtriBackward0", false, true, [](T g, T, T y) {
                return g * exp(y * y * 0.5) * std::sqrt(2 * std::numbers::pi);
              }};
    // Integers and bool: never differentiated (their in-place form asks for the node's name).
    case UnaryOp::BitwiseNot: return {"BitwiseNotBackward0", false, false, [](T g, T, T) { return zeros_like(g); }};
  }
  TD_FAIL("unary: unknown op");
}

Tensor unary(UnaryOp op, const Tensor& x) {
  Tensor y = kd::unary(op, x);
  if (!needs_grad({&x})) return y;
  UnaryGrad grad = unary_grad(op);
  SavedTensor sx = SavedTensor::input_if(grad.uses_input, x);
  SavedTensor sy = SavedTensor::output_if(grad.uses_output, y);
  record(grad.node, {&x}, {&y}, [grad, sx, sy](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {grad.fn(g[0], sx.unpack(grad.node), sy.unpack(grad.node))};
  })->saves_nothing = !sx.defined() && !sy.defined();
  return y;
}

// exp, expm1, log, log1p, rsqrt and reciprocal are on autocast's float32 list for GPUs.
Tensor float32_unary(UnaryOp op, const Tensor& x) {
  if (amp::takes_float32(amp::Float32On::kCuda, {&x})) {
    amp::SuspendAutocast inside;
    return unary(op, amp::to_float32(x));
  }
  return unary(op, x);
}

}  // namespace

namespace detail {

Tensor& unary_(UnaryOp op, Tensor& x) {
  UnaryGrad grad = unary_grad(op);
  const bool recording = needs_grad({&x});
  autograd::check_inplace(x, grad.node, recording);
  SavedTensor before = recording && grad.uses_input ? SavedTensor(clone(x), false) : SavedTensor();
  kd::unary_(op, x);
  if (recording) {
    SavedTensor after = SavedTensor::output_if(grad.uses_output, x);
    autograd::record_inplace(grad.node, x, {}, [grad, before, after](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {grad.fn(g[0], before.unpack(grad.node), after.unpack(grad.node))};
    });
  }
  return x;
}

}  // namespace detail

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
Tensor exp(const Tensor& x) { return float32_unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return float32_unary(UnaryOp::Log, x); }
Tensor log1p(const Tensor& x) { return float32_unary(UnaryOp::Log1p, x); }
Tensor expm1(const Tensor& x) { return float32_unary(UnaryOp::Expm1, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return float32_unary(UnaryOp::Rsqrt, x); }
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor gelu(const Tensor& x, const std::string& approximate) { return unary(kd::gelu_op(approximate), x); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }
Tensor reciprocal(const Tensor& x) { return float32_unary(UnaryOp::Reciprocal, x); }
Tensor erf(const Tensor& x) { return unary(UnaryOp::Erf, x); }
Tensor floor(const Tensor& x) { return unary(UnaryOp::Floor, x); }
Tensor ceil(const Tensor& x) { return unary(UnaryOp::Ceil, x); }
Tensor round(const Tensor& x) { return unary(UnaryOp::Round, x); }
Tensor trunc(const Tensor& x) { return unary(UnaryOp::Trunc, x); }
Tensor frac(const Tensor& x) { return unary(UnaryOp::Frac, x); }
// tan, asin, acos, sinh, cosh, log2, log10 and erfinv are on autocast's float32 list for GPUs too.
Tensor tan(const Tensor& x) { return float32_unary(UnaryOp::Tan, x); }
Tensor asin(const Tensor& x) { return float32_unary(UnaryOp::Asin, x); }
Tensor acos(const Tensor& x) { return float32_unary(UnaryOp::Acos, x); }
Tensor atan(const Tensor& x) { return unary(UnaryOp::Atan, x); }
Tensor sinh(const Tensor& x) { return float32_unary(UnaryOp::Sinh, x); }
Tensor cosh(const Tensor& x) { return float32_unary(UnaryOp::Cosh, x); }
Tensor asinh(const Tensor& x) { return unary(UnaryOp::Asinh, x); }
Tensor acosh(const Tensor& x) { return unary(UnaryOp::Acosh, x); }
Tensor atanh(const Tensor& x) { return unary(UnaryOp::Atanh, x); }
Tensor log2(const Tensor& x) { return float32_unary(UnaryOp::Log2, x); }
Tensor log10(const Tensor& x) { return float32_unary(UnaryOp::Log10, x); }
Tensor exp2(const Tensor& x) { return unary(UnaryOp::Exp2, x); }
Tensor erfc(const Tensor& x) { return unary(UnaryOp::Erfc, x); }
Tensor erfinv(const Tensor& x) { return float32_unary(UnaryOp::Erfinv, x); }
Tensor bitwise_not(const Tensor& x) { return kernels::bitwise_not(x); }
Tensor lgamma(const Tensor& x) { return unary(UnaryOp::Lgamma, x); }
Tensor digamma(const Tensor& x) { return unary(UnaryOp::Digamma, x); }
Tensor i0(const Tensor& x) { return unary(UnaryOp::I0, x); }

namespace special {
Tensor erfcx(const Tensor& x) { return unary(UnaryOp::Erfcx, x); }
Tensor i0e(const Tensor& x) { return unary(UnaryOp::I0e, x); }
Tensor i1(const Tensor& x) { return unary(UnaryOp::I1, x); }
Tensor i1e(const Tensor& x) { return unary(UnaryOp::I1e, x); }
Tensor ndtri(const Tensor& x) { return unary(UnaryOp::Ndtri, x); }
Tensor bessel_j0(const Tensor& x) { return unary(UnaryOp::BesselJ0, x); }
Tensor bessel_j1(const Tensor& x) { return unary(UnaryOp::BesselJ1, x); }
Tensor bessel_y0(const Tensor& x) { return unary(UnaryOp::BesselY0, x); }
Tensor bessel_y1(const Tensor& x) { return unary(UnaryOp::BesselY1, x); }
Tensor modified_bessel_i0(const Tensor& x) { return unary(UnaryOp::ModifiedBesselI0, x); }
Tensor modified_bessel_i1(const Tensor& x) { return unary(UnaryOp::ModifiedBesselI1, x); }
Tensor modified_bessel_k0(const Tensor& x) { return unary(UnaryOp::ModifiedBesselK0, x); }
Tensor modified_bessel_k1(const Tensor& x) { return unary(UnaryOp::ModifiedBesselK1, x); }
Tensor scaled_modified_bessel_k0(const Tensor& x) { return kernels::scaled_modified_bessel_k0(x); }
Tensor scaled_modified_bessel_k1(const Tensor& x) { return kernels::scaled_modified_bessel_k1(x); }
Tensor spherical_bessel_j0(const Tensor& x) { return kernels::spherical_bessel_j0(x); }
Tensor airy_ai(const Tensor& x) { return kernels::airy_ai(x); }
}  // namespace special

// ---- clamp ----

namespace {

// Where x lies strictly within the bounds: the gradient passes there. At a bound it is 0, as in
// PyTorch (clamp, clamp_min, clamp_max and their in-place forms).
Tensor within(const Tensor& x, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Tensor inside = lo ? x > *lo : ones_like(x, kBool);
  if (hi) inside = kernels::mul(inside, x < *hi);
  return inside;
}

}  // namespace

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  Tensor y = kernels::clamp(x, lo, hi);
  if (!needs_grad({&x})) return y;
  SavedTensor sx(x, false);
  record("ClampBackward1", {&x}, {&y}, [sx, lo, hi](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {where(within(sx.unpack("ClampBackward1"), lo, hi), g[0], 0)};
  });
  return y;
}

namespace detail {

Tensor& clamp_(Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  const bool recording = needs_grad({&x});
  autograd::check_inplace(x, "ClampBackward1", recording);
  SavedTensor before = recording ? SavedTensor(clone(x), false) : SavedTensor();
  kd::clamp_(x, lo, hi);
  if (recording) {
    autograd::record_inplace("ClampBackward1", x, {}, [before, lo, hi](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {where(within(before.unpack("ClampBackward1"), lo, hi), g[0], 0)};
    });
  }
  return x;
}

}  // namespace detail

// ---- binary ----

namespace {

// The gradients of a binary op's two inputs, from g and the saved operands and output.
struct BinaryGrads {
  Tensor a, b;
};

BinaryGrads binary_grads(BinaryOp op, const Tensor& g, const Tensor& a, const Tensor& b, const Tensor& y,
                         Scalar alpha, bool need_a, bool need_b) {
  switch (op) {
    case BinaryOp::Add: return {need_a ? g : Tensor(), need_b ? (alpha.to_double() == 1 ? g : g * alpha) : Tensor()};
    case BinaryOp::Sub: return {need_a ? g : Tensor(), need_b ? g * -alpha.to_double() : Tensor()};
    case BinaryOp::Mul: return {need_a ? g * b : Tensor(), need_b ? g * a : Tensor()};
    case BinaryOp::Div: return {need_a ? g / b : Tensor(), need_b ? -g * a / (b * b) : Tensor()};
    case BinaryOp::Pow:
      return {need_a ? where(b == 0, 0, g * b * pow(a, b - 1)) : Tensor(),
              need_b ? where(kernels::mul(a == 0, b >= 0), 0, g * y * log(a)) : Tensor()};
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      // Ties share the gradient, as in PyTorch.
      Tensor shared = where(a == b, g / 2, g);
      bool is_max = op == BinaryOp::Maximum;
      return {need_a ? masked_fill(shared, is_max ? a < b : a > b, 0) : Tensor(),
              need_b ? masked_fill(shared, is_max ? a > b : a < b, 0) : Tensor()};
    }
    case BinaryOp::Fmax:
    case BinaryOp::Fmin: {
      // The operand taken gets all of it, a on ties, as in PyTorch.
      Tensor a_taken = kernels::bitwise_or(op == BinaryOp::Fmax ? a >= b : a <= b, b != b);
      return {need_a ? where(a_taken, g, 0) : Tensor(), need_b ? where(a_taken, 0, g) : Tensor()};
    }
    // Piecewise constant: zero almost everywhere, as PyTorch's div with a rounding mode.
    case BinaryOp::DivTrunc:
    case BinaryOp::DivFloor: return {need_a ? zeros_like(g) : Tensor(), need_b ? zeros_like(g) : Tensor()};
    case BinaryOp::Remainder: return {need_a ? g : Tensor(), need_b ? -g * floor_divide(a, b) : Tensor()};
    case BinaryOp::Fmod: return {need_a ? g : Tensor(), need_b ? -g * div(a, b, "trunc") : Tensor()};
    case BinaryOp::Atan2: {
      Tensor scale = g / (a * a + b * b);
      return {need_a ? scale * b : Tensor(), need_b ? scale * -a : Tensor()};
    }
    case BinaryOp::Hypot: return {need_a ? g * a / y : Tensor(), need_b ? g * b / y : Tensor()};
    // y / a is +-1, the sign change; at a == 0 the gradient is 0, as in PyTorch.
    case BinaryOp::Copysign:
      return {need_a ? g * masked_fill(y / a, a == 0, 0) : Tensor(), need_b ? zeros_like(g) : Tensor()};
    case BinaryOp::LogAddExp:
      return {need_a ? g / (exp(b - a) + 1) : Tensor(), need_b ? g / (exp(a - b) + 1) : Tensor()};
    // d/dq zeta(x, q) = -x zeta(x + 1, q); PyTorch has no derivative in x either.
    case BinaryOp::Zeta:
      TD_CHECK(!need_a, "zeta: there is no derivative with respect to x (the exponent), as in PyTorch; only q's");
      return {Tensor(), need_b ? -g * a * special::zeta(a + 1, b) : Tensor()};
    // dP/dx = x^(a-1) e^-x / Gamma(a) = -dQ/dx, by PyTorch's formula (so NaN at x = 0 for a = 1, as
    // there). dP/da = -(dx/da of a Gamma(a) draw at x) times that density (special::standard_gamma_grad
    // holds the derivation), 0 at x = 0; PyTorch has no derivative in a. It is not differentiable again.
    case BinaryOp::Igamma:
    case BinaryOp::Igammac: {
      const Tensor density = exp((a - 1) * log(b) - b - lgamma(a));
      Tensor grad_a, grad_b;
      if (need_a) {
        // In float64: for tiny a and x the float32 density overflows where the product does not.
        // P(a, x) is 0 at x = 0 and 1 at x = inf for every a.
        const Tensor a64 = a.to(kFloat64), b64 = b.to(kFloat64);
        const Tensor density64 = exp((a64 - 1) * log(b64) - b64 - lgamma(a64));
        const Tensor d_lower =
            masked_fill(-standard_gamma_grad(a64, b64) * density64, (b64 == 0) | isinf(b64), 0).to(g.dtype());
        grad_a = op == BinaryOp::Igamma ? g * d_lower : -g * d_lower;
      }
      if (need_b) grad_b = op == BinaryOp::Igamma ? g * density : -g * density;
      return {grad_a, grad_b};
    }
    default: TD_FAIL(kernels::op_name(op), " is not differentiable");
  }
}

const char* binary_node(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "AddBackward0";
    case BinaryOp::Sub: return "SubBackward0";
    case BinaryOp::Mul: return "MulBackward0";
    case BinaryOp::Div: return "DivBackward0";
    case BinaryOp::Pow: return "PowBackward1";
    case BinaryOp::Maximum: return "MaximumBackward0";
    case BinaryOp::Minimum: return "MinimumBackward0";
    case BinaryOp::Fmax: return "FmaxBackward0";
    case BinaryOp::Fmin: return "FminBackward0";
    case BinaryOp::DivTrunc:
    case BinaryOp::DivFloor: return "DivBackward2";
    case BinaryOp::Remainder: return "RemainderBackward0";
    case BinaryOp::Fmod: return "FmodBackward0";
    case BinaryOp::Atan2: return "Atan2Backward0";
    case BinaryOp::Hypot: return "HypotBackward0";
    case BinaryOp::Copysign: return "CopysignBackward0";
    case BinaryOp::LogAddExp: return "LogaddexpBackward0";
    case BinaryOp::Zeta: return "SpecialZetaBackward0";
    case BinaryOp::Igamma: return "IgammaBackward0";
    case BinaryOp::Igammac: return "IgammacBackward0";
    default: return "BinaryBackward";
  }
}

// Which values one input's gradient reads: a, b, the output y (binary_grads' formulas).
struct GradReads {
  bool a = false, b = false, y = false;
};

GradReads grad_reads(BinaryOp op, bool for_a) {
  switch (op) {
    case BinaryOp::Mul: return for_a ? GradReads{false, true} : GradReads{true, false};
    case BinaryOp::Div: return for_a ? GradReads{false, true} : GradReads{true, true};
    case BinaryOp::Pow: return for_a ? GradReads{true, true} : GradReads{true, true, true};
    case BinaryOp::Maximum:
    case BinaryOp::Minimum:
    case BinaryOp::Fmax:
    case BinaryOp::Fmin:
    case BinaryOp::Atan2:
    case BinaryOp::LogAddExp: return {true, true};
    case BinaryOp::Remainder:
    case BinaryOp::Fmod: return for_a ? GradReads{} : GradReads{true, true};
    case BinaryOp::Hypot: return for_a ? GradReads{true, false, true} : GradReads{false, true, true};
    case BinaryOp::Zeta: return for_a ? GradReads{} : GradReads{true, true};
    case BinaryOp::Igamma:
    case BinaryOp::Igammac: return {true, true};
    case BinaryOp::Copysign: return for_a ? GradReads{true, false, true} : GradReads{};
    default: return {};  // add, sub, the rounded divisions: constants
  }
}

// What the needed gradients read, together.
GradReads needed_reads(BinaryOp op, bool need_a, bool need_b) {
  const GradReads ra = grad_reads(op, true), rb = grad_reads(op, false);
  return {(need_a && ra.a) || (need_b && rb.a), (need_a && ra.b) || (need_b && rb.b),
          (need_a && ra.y) || (need_b && rb.y)};
}

// Records y = op(a, b); for an in-place op y is a itself, and a_value and b_value are the
// operands' values from before the write (b may alias a).
void record_binary(BinaryOp op, const Tensor& a, const Tensor& a_value, const Tensor& b, const Tensor& b_value,
                   Tensor& y, Scalar alpha, bool in_place) {
  const char* node = binary_node(op);
  const bool need_a = a.requires_grad(), need_b = b.defined() && b.requires_grad();
  // Only what the needed gradients read is saved: a saved tensor written in place afterwards fails
  // backward (x.div_(t).mul_(2) with a constant t must work, and so must h.remainder_(2).mul_(2)).
  const GradReads save = needed_reads(op, need_a, need_b);
  SavedTensor sa = SavedTensor::input_if(save.a, a_value);
  SavedTensor sb = SavedTensor::input_if(save.b, b_value);
  SavedTensor sy = SavedTensor::output_if(save.y, y);
  Shape a_shape = a.sizes(), b_shape = b.sizes();
  DType a_dtype = a.dtype(), b_dtype = b.dtype();
  autograd::BackwardFn backward = [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
           BinaryGrads grads = binary_grads(op, g[0], sa.unpack(node), sb.unpack(node), sy.unpack(node), alpha,
                                            need_a, need_b);
           auto back = [](const Tensor& grad, const Shape& shape, DType dtype) {
             if (!grad.defined()) return grad;
             Tensor r = sum_to(grad, shape);
             return r.dtype() == dtype ? r : r.to(dtype);
           };
           return {back(grads.a, a_shape, a_dtype), back(grads.b, b_shape, b_dtype)};
         };
  if (in_place) {
    autograd::record_inplace(node, y, {&b}, std::move(backward));
  } else {
    // Add and sub keep no tensors: a later backward may run through them again, as in PyTorch.
    record(node, {&a, &b}, {&y}, std::move(backward))->saves_nothing = !sa.defined() && !sb.defined() && !sy.defined();
  }
}

bool differentiable(BinaryOp op) { return !kernels::is_comparison(op); }

}  // namespace

namespace detail {

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha) {
  Tensor y = kd::binary(op, a, b, alpha);
  if (differentiable(op) && needs_grad({&a, &b})) record_binary(op, a, a, b, b, y, alpha, false);
  return y;
}

Tensor binary(BinaryOp op, const Tensor& a, Scalar b, Scalar alpha) {
  kernels::check_defined(a, kernels::op_name(op), "input");
  const DType common = result_type(a, b);
  if (kd::scalar_in_float32(op, common, b)) {  // b kept in float32, rounded once (see kernels/elementwise.h)
    Tensor y = kd::binary(op, a, b);
    // d(a * b)/da = b and d(a / b)/da = 1 / b: the gradient is the same op with the same number.
    if (needs_grad({&a})) {
      record(binary_node(op), {&a}, {&y}, [op, b](const std::vector<Tensor>& g) -> std::vector<Tensor> {
        return {binary(op, g[0], b)};
      })->saves_nothing = true;
    }
    return y;
  }
  return binary(op, a, kd::scalar_tensor(b, common, a.device()), alpha);
}

Tensor& binary_(BinaryOp op, Tensor& self, const Tensor& other, Scalar alpha) {
  const bool recording = differentiable(op) && needs_grad({&self, &other});
  autograd::check_inplace(self, binary_node(op), recording);
  // The gradients of mul, div, pow and the like need the operands' values from before the write:
  // self's, and other's too when it shares self's memory (x.mul_(x)). The copies are recorded, so
  // the gradient stays differentiable.
  const GradReads reads = needed_reads(op, self.requires_grad(), other.requires_grad());
  Tensor before = recording && reads.a ? clone(self) : Tensor();
  Tensor other_before = recording && reads.b && other.is_alias_of(self) ? clone(other) : other;
  kd::binary_(op, self, other, alpha);
  if (recording) record_binary(op, self, before.defined() ? before : self, other, other_before, self, alpha, true);
  return self;
}

Tensor& binary_(BinaryOp op, Tensor& self, Scalar other, Scalar alpha) {
  kernels::check_defined(self, kernels::op_name(op), "self");
  if (op == BinaryOp::Pow) kd::check_pow_exponent(self, other, "pow_");
  const DType common = result_type(self, other);
  if (kd::scalar_in_float32(op, common, other) && common == self.dtype()) {
    const char* node = binary_node(op);
    const bool recording = needs_grad({&self});
    autograd::check_inplace(self, node, recording);
    kd::binary_(op, self, other);
    if (recording) {
      autograd::record_inplace(node, self, {}, [op, other](const std::vector<Tensor>& g) -> std::vector<Tensor> {
        return {binary(op, g[0], other)};
      });
    }
    return self;
  }
  return binary_(op, self, kd::scalar_tensor(other, common, self.device()), alpha);
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
// The three pows and a number divided by a tensor (PyTorch's __rdiv__, which is reciprocal's work)
// are on autocast's float32 list for GPUs.
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  return detail::binary(kd::rounded_div_op(rounding_mode), a, b);
}
Tensor div(const Tensor& a, Scalar b, const std::string& rounding_mode) {
  return detail::binary(kd::rounded_div_op(rounding_mode), a, b);
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
namespace special {
namespace {
// A number x beside a tensor of degrees: x takes n's floating dtype, or the default one.
Tensor polynomial_of_number(BinaryOp op, Scalar x, const Tensor& n) {
  kernels::check_defined(n, kernels::op_name(op), "n");
  return kd::binary(op, kd::scalar_tensor(x, is_floating(n.dtype()) ? n.dtype() : kDefaultFloat, n.device()), n);
}
}  // namespace

Tensor chebyshev_polynomial_t(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::ChebyshevT, x, n); }
Tensor chebyshev_polynomial_t(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::ChebyshevT, x, n); }
Tensor chebyshev_polynomial_t(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::ChebyshevT, x, n); }
Tensor chebyshev_polynomial_u(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::ChebyshevU, x, n); }
Tensor chebyshev_polynomial_u(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::ChebyshevU, x, n); }
Tensor chebyshev_polynomial_u(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::ChebyshevU, x, n); }
Tensor chebyshev_polynomial_v(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::ChebyshevV, x, n); }
Tensor chebyshev_polynomial_v(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::ChebyshevV, x, n); }
Tensor chebyshev_polynomial_v(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::ChebyshevV, x, n); }
Tensor chebyshev_polynomial_w(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::ChebyshevW, x, n); }
Tensor chebyshev_polynomial_w(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::ChebyshevW, x, n); }
Tensor chebyshev_polynomial_w(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::ChebyshevW, x, n); }
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, const Tensor& n) {
  return kd::binary(BinaryOp::ShiftedChebyshevT, x, n);
}
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, Scalar n) {
  return kd::binary(BinaryOp::ShiftedChebyshevT, x, n);
}
Tensor shifted_chebyshev_polynomial_t(Scalar x, const Tensor& n) {
  return polynomial_of_number(BinaryOp::ShiftedChebyshevT, x, n);
}
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, const Tensor& n) {
  return kd::binary(BinaryOp::ShiftedChebyshevU, x, n);
}
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, Scalar n) {
  return kd::binary(BinaryOp::ShiftedChebyshevU, x, n);
}
Tensor shifted_chebyshev_polynomial_u(Scalar x, const Tensor& n) {
  return polynomial_of_number(BinaryOp::ShiftedChebyshevU, x, n);
}
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, const Tensor& n) {
  return kd::binary(BinaryOp::ShiftedChebyshevV, x, n);
}
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, Scalar n) {
  return kd::binary(BinaryOp::ShiftedChebyshevV, x, n);
}
Tensor shifted_chebyshev_polynomial_v(Scalar x, const Tensor& n) {
  return polynomial_of_number(BinaryOp::ShiftedChebyshevV, x, n);
}
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, const Tensor& n) {
  return kd::binary(BinaryOp::ShiftedChebyshevW, x, n);
}
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, Scalar n) {
  return kd::binary(BinaryOp::ShiftedChebyshevW, x, n);
}
Tensor shifted_chebyshev_polynomial_w(Scalar x, const Tensor& n) {
  return polynomial_of_number(BinaryOp::ShiftedChebyshevW, x, n);
}
Tensor hermite_polynomial_h(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::HermiteH, x, n); }
Tensor hermite_polynomial_h(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::HermiteH, x, n); }
Tensor hermite_polynomial_h(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::HermiteH, x, n); }
Tensor hermite_polynomial_he(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::HermiteHe, x, n); }
Tensor hermite_polynomial_he(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::HermiteHe, x, n); }
Tensor hermite_polynomial_he(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::HermiteHe, x, n); }
Tensor laguerre_polynomial_l(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::LaguerreL, x, n); }
Tensor laguerre_polynomial_l(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::LaguerreL, x, n); }
Tensor laguerre_polynomial_l(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::LaguerreL, x, n); }
Tensor legendre_polynomial_p(const Tensor& x, const Tensor& n) { return kd::binary(BinaryOp::LegendreP, x, n); }
Tensor legendre_polynomial_p(const Tensor& x, Scalar n) { return kd::binary(BinaryOp::LegendreP, x, n); }
Tensor legendre_polynomial_p(Scalar x, const Tensor& n) { return polynomial_of_number(BinaryOp::LegendreP, x, n); }
Tensor zeta(const Tensor& x, const Tensor& q) { return detail::binary(BinaryOp::Zeta, x, q); }
Tensor zeta(const Tensor& x, Scalar q) { return detail::binary(BinaryOp::Zeta, x, q); }
Tensor zeta(Scalar x, const Tensor& q) {
  kernels::check_defined(q, "zeta", "other");
  return zeta(kd::scalar_tensor(x, is_floating(q.dtype()) ? q.dtype() : kDefaultFloat, q.device()), q);
}
}  // namespace special
Tensor fmax(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Fmax, a, b); }
Tensor gcd(const Tensor& a, const Tensor& b) { return kernels::gcd(a, b); }
Tensor lcm(const Tensor& a, const Tensor& b) { return kernels::lcm(a, b); }
// Not differentiable, as PyTorch's: a backward through it is an error.
Tensor nextafter(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Nextafter, a, b); }
Tensor igamma(const Tensor& a, const Tensor& x) { return detail::binary(BinaryOp::Igamma, a, x); }
Tensor igammac(const Tensor& a, const Tensor& x) { return detail::binary(BinaryOp::Igammac, a, x); }
// Not differentiable, as PyTorch's.
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x) {
  return detail::binary(BinaryOp::StandardGammaGrad, alpha, x);
}
Tensor fmin(const Tensor& a, const Tensor& b) { return detail::binary(BinaryOp::Fmin, a, b); }
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return kernels::bitwise_and(a, b); }
Tensor bitwise_and(const Tensor& a, Scalar b) { return kernels::bitwise_and(a, b); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return kernels::bitwise_or(a, b); }
Tensor bitwise_or(const Tensor& a, Scalar b) { return kernels::bitwise_or(a, b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return kernels::bitwise_xor(a, b); }
Tensor bitwise_xor(const Tensor& a, Scalar b) { return kernels::bitwise_xor(a, b); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return kernels::bitwise_left_shift(a, b); }
Tensor bitwise_left_shift(const Tensor& a, Scalar b) { return kernels::bitwise_left_shift(a, b); }
Tensor bitwise_left_shift(Scalar a, const Tensor& b) {
  kernels::check_defined(b, "bitwise_left_shift", "other");
  return kernels::bitwise_left_shift(kd::scalar_tensor(a, result_type(b, a), b.device()), b);
}
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return kernels::bitwise_right_shift(a, b); }
Tensor bitwise_right_shift(const Tensor& a, Scalar b) { return kernels::bitwise_right_shift(a, b); }
Tensor bitwise_right_shift(Scalar a, const Tensor& b) {
  kernels::check_defined(b, "bitwise_right_shift", "other");
  return kernels::bitwise_right_shift(kd::scalar_tensor(a, result_type(b, a), b.device()), b);
}

Tensor pow(const Tensor& base, const Tensor& exponent) {
  if (amp::takes_float32(amp::Float32On::kCuda, {&base, &exponent})) {
    amp::SuspendAutocast inside;
    return pow(amp::to_float32(base), amp::to_float32(exponent));
  }
  return detail::binary(BinaryOp::Pow, base, exponent);
}

Tensor pow(const Tensor& base, Scalar exponent) {
  if (amp::takes_float32(amp::Float32On::kCuda, {&base})) {
    amp::SuspendAutocast inside;
    return pow(amp::to_float32(base), exponent);
  }
  Tensor y = kernels::pow(base, exponent);
  if (!needs_grad({&base})) return y;
  SavedTensor sx(base, false);
  record("PowBackward0", {&base}, {&y}, [sx, exponent](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    if (exponent.to_double() == 0) return {zeros_like(g[0])};
    Tensor x = sx.unpack("PowBackward0");
    return {g[0] * exponent * pow(x, exponent.to_double() - 1)};
  });
  return y;
}

Tensor pow(Scalar base, const Tensor& exponent) {
  if (amp::takes_float32(amp::Float32On::kCuda, {&exponent})) {
    amp::SuspendAutocast inside;
    return pow(base, amp::to_float32(exponent));
  }
  Tensor y = kernels::pow(base, exponent);
  if (!needs_grad({&exponent})) return y;
  SavedTensor sy(y, true);
  SavedTensor se(exponent, false);
  record("PowBackward2", {&exponent}, {&y}, [sy, se, base](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor grad = g[0] * sy.unpack("PowBackward2") * std::log(base.to_double());
    if (base.to_double() == 0) grad = where(se.unpack("PowBackward2") >= 0, 0, grad);
    return {grad};
  });
  return y;
}

Tensor eq(const Tensor& a, const Tensor& b) { return kernels::eq(a, b); }
Tensor eq(const Tensor& a, Scalar b) { return kernels::eq(a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return kernels::ne(a, b); }
Tensor ne(const Tensor& a, Scalar b) { return kernels::ne(a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return kernels::lt(a, b); }
Tensor lt(const Tensor& a, Scalar b) { return kernels::lt(a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return kernels::le(a, b); }
Tensor le(const Tensor& a, Scalar b) { return kernels::le(a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return kernels::gt(a, b); }
Tensor gt(const Tensor& a, Scalar b) { return kernels::gt(a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return kernels::ge(a, b); }
Tensor ge(const Tensor& a, Scalar b) { return kernels::ge(a, b); }
DType result_type(const Tensor& a, const Tensor& b) { return kernels::result_type(a, b); }
DType result_type(const Tensor& a, Scalar b) { return kernels::result_type(a, b); }

// ---- where, masked_fill ----

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor y = kernels::where(cond, a, b);
  if (!needs_grad({&a, &b})) return y;
  // Integer and bool tensors a backward reads are saved with their version too, as in PyTorch:
  // one written in place since would route the gradient wrongly.
  SavedTensor saved_cond(cond, false);
  Shape a_shape = a.sizes(), b_shape = b.sizes();
  DType a_dtype = a.dtype(), b_dtype = b.dtype();
  record("WhereBackward0", {&a, &b}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor c = saved_cond.unpack("WhereBackward0");
    Tensor ga = sum_to(where(c, g[0], 0), a_shape), gb = sum_to(where(c, 0, g[0]), b_shape);
    return {ga.dtype() == a_dtype ? ga : ga.to(a_dtype), gb.dtype() == b_dtype ? gb : gb.to(b_dtype)};
  });
  return y;
}

Tensor where(const Tensor& cond, Scalar a, const Tensor& b) {
  kernels::check_defined(b, "where", "other");
  kernels::check_value_fits(a, result_type(b, a), "where");  // 2**40 beside an int32 tensor would wrap
  return where(cond, kd::scalar_tensor(a, result_type(b, a), b.device()), b);
}

Tensor where(const Tensor& cond, const Tensor& a, Scalar b) {
  kernels::check_defined(a, "where", "input");
  kernels::check_value_fits(b, result_type(a, b), "where");
  return where(cond, a, kd::scalar_tensor(b, result_type(a, b), a.device()));
}

Tensor where(const Tensor& cond, Scalar a, Scalar b) { return kernels::where(cond, a, b); }

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  Tensor y = kernels::masked_fill(x, mask, value);
  if (!needs_grad({&x})) return y;
  SavedTensor saved_mask(mask, false);
  Shape shape = x.sizes();
  record("MaskedFillBackward0", {&x}, {&y}, [saved_mask, shape](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {sum_to(where(saved_mask.unpack("MaskedFillBackward0"), 0, g[0]), shape)};
  });
  return y;
}

namespace detail {

Tensor& masked_fill_(Tensor& x, const Tensor& mask, Scalar value) {
  const bool recording = needs_grad({&x});
  autograd::check_inplace(x, "MaskedFillBackward0", recording);
  kd::masked_fill_(x, mask, value);
  if (recording) {
    SavedTensor saved_mask(mask, false);
    autograd::record_inplace("MaskedFillBackward0", x, {}, [saved_mask](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {where(saved_mask.unpack("MaskedFillBackward0"), 0, g[0])};
    });
  }
  return x;
}

}  // namespace detail

// ---- operators ----

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, Scalar b) { return add(a, b); }
Tensor operator+(Scalar a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, Scalar b) { return sub(a, b); }
Tensor operator-(Scalar a, const Tensor& b) {
  kernels::check_defined(b, "sub", "other");
  return sub(kd::scalar_tensor(a, result_type(b, a), b.device()), b);
}
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, Scalar b) { return mul(a, b); }
Tensor operator*(Scalar a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, Scalar b) { return div(a, b); }
Tensor operator/(Scalar a, const Tensor& b) {
  kernels::check_defined(b, "div", "other");
  if (amp::takes_float32(amp::Float32On::kCuda, {&b})) {
    amp::SuspendAutocast inside;
    return a / amp::to_float32(b);
  }
  return div(kd::scalar_tensor(a, result_type(b, a), b.device()), b);
}
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, Scalar b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, Scalar b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, Scalar b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, Scalar b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, Scalar b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, Scalar b) { return ge(a, b); }
Tensor& operator+=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::Add, a, b); }
Tensor& operator+=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::Add, a, b); }
Tensor& operator-=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::Sub, a, b); }
Tensor& operator-=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::Sub, a, b); }
Tensor& operator*=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::Mul, a, b); }
Tensor& operator*=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::Mul, a, b); }
Tensor& operator/=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::Div, a, b); }
Tensor& operator/=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::Div, a, b); }
Tensor operator~(const Tensor& x) { return bitwise_not(x); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator&(const Tensor& a, Scalar b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator|(const Tensor& a, Scalar b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator^(const Tensor& a, Scalar b) { return bitwise_xor(a, b); }
Tensor operator<<(const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }
Tensor operator<<(const Tensor& a, Scalar b) { return bitwise_left_shift(a, b); }
Tensor operator>>(const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }
Tensor operator>>(const Tensor& a, Scalar b) { return bitwise_right_shift(a, b); }
Tensor& operator&=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::BitwiseAnd, a, b); }
Tensor& operator&=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::BitwiseAnd, a, b); }
Tensor& operator|=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::BitwiseOr, a, b); }
Tensor& operator|=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::BitwiseOr, a, b); }
Tensor& operator^=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::BitwiseXor, a, b); }
Tensor& operator^=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::BitwiseXor, a, b); }
Tensor& operator<<=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::ShiftLeft, a, b); }
Tensor& operator<<=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::ShiftLeft, a, b); }
Tensor& operator>>=(Tensor& a, const Tensor& b) { return detail::binary_(BinaryOp::ShiftRight, a, b); }
Tensor& operator>>=(Tensor& a, Scalar b) { return detail::binary_(BinaryOp::ShiftRight, a, b); }

}  // namespace tandem
