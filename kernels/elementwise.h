// Element-wise ops, without autograd: unary math, binary arithmetic and comparisons with
// broadcasting and PyTorch's type promotion, where/masked_fill. In-place forms (add_, exp_, ...)
// follow PyTorch's rules: the result must broadcast to the destination's shape, its dtype must
// be castable to the destination's, and the destination may not overlap its inputs partially.
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"
#include "kernels/op_codes.h"

namespace tandem::kernels {

// The dtype an op on these operands computes in (torch.result_type): dimensioned tensors outrank
// 0-dim tensors, which outrank plain numbers, unless a lower rank holds a higher category
// (bool < integer < floating).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, Scalar b);

// ---- unary; integer inputs of the floating functions give float32, as in PyTorch ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);  // exp(x) - 1, exact near 0
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, const std::string& approximate = "none");  // "none" (erf) or "tanh"
Tensor silu(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor erf(const Tensor& x);
// To a whole number: down, up, the nearest (halves to even, as torch.round) and toward zero;
// integers come back as they are. frac: x - trunc(x), floating only.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor frac(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);  // 2^x
Tensor erfc(const Tensor& x);  // 1 - erf(x), exact in the tail
Tensor erfinv(const Tensor& x);
Tensor bitwise_not(const Tensor& x);  // integers and bool only
// Special functions (kernels/special.h); integers give float32.
Tensor lgamma(const Tensor& x);   // log |Gamma(x)|
Tensor digamma(const Tensor& x);  // Gamma'(x) / Gamma(x)
Tensor erfcx(const Tensor& x);    // exp(x^2) erfc(x)
Tensor i0(const Tensor& x);       // modified Bessel functions of the first kind, order 0 and 1,
Tensor i0e(const Tensor& x);      // and scaled by exp(-|x|)
Tensor i1(const Tensor& x);
Tensor i1e(const Tensor& x);
Tensor ndtri(const Tensor& x);  // the inverse of the standard normal CDF
// The Bessel functions of kernels/bessel.h (modified_bessel_i0/i1 are i0/i1 under torch.special's names).
Tensor bessel_j0(const Tensor& x);
Tensor bessel_j1(const Tensor& x);
Tensor bessel_y0(const Tensor& x);
Tensor bessel_y1(const Tensor& x);
Tensor modified_bessel_i0(const Tensor& x);
Tensor modified_bessel_i1(const Tensor& x);
Tensor modified_bessel_k0(const Tensor& x);
Tensor modified_bessel_k1(const Tensor& x);
Tensor scaled_modified_bessel_k0(const Tensor& x);
Tensor scaled_modified_bessel_k1(const Tensor& x);
Tensor spherical_bessel_j0(const Tensor& x);
Tensor airy_ai(const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);

// ---- binary ----
Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);  // a + alpha * b
// out = inputs[0] + inputs[1] + ..., added in that order in one pass over memory (float16 and
// bfloat16 in float32): the reduction step of the collectives. Every operand contiguous, of
// out's shape and dtype (not bool), on out's device (or, for a CPU out, on any CPU device); out may
// be one of the inputs.
void add_n_into(const Tensor& out, const std::vector<Tensor>& inputs);
Tensor add(const Tensor& a, Scalar b, Scalar alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = 1);  // a - alpha * b
Tensor sub(const Tensor& a, Scalar b, Scalar alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give float32
Tensor div(const Tensor& a, Scalar b);
Tensor pow(const Tensor& base, const Tensor& exponent);
Tensor pow(const Tensor& base, Scalar exponent);
Tensor pow(Scalar base, const Tensor& exponent);
// Division rounded: rounding_mode "trunc" (toward zero) or "floor" (toward -inf, as floor_divide);
// integers stay integers, and an integer divisor of 0 is an error.
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode);
Tensor div(const Tensor& a, Scalar b, const std::string& rounding_mode);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, Scalar b);
Tensor remainder(const Tensor& a, const Tensor& b);  // the divisor's sign (Python's %)
Tensor remainder(const Tensor& a, Scalar b);
Tensor fmod(const Tensor& a, const Tensor& b);  // the dividend's sign (C's fmod)
Tensor fmod(const Tensor& a, Scalar b);
Tensor atan2(const Tensor& a, const Tensor& b);  // the angle of (b, a); integers give float32
Tensor hypot(const Tensor& a, const Tensor& b);  // floating only
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, Scalar b);
Tensor logaddexp(const Tensor& a, const Tensor& b);  // log(exp(a) + exp(b)), floating only
Tensor zeta(const Tensor& a, const Tensor& b);  // the Hurwitz zeta function; integers give float32
// torch.special's orthogonal polynomials of x of degree n (kernels/polynomials.h); integers give float32.
Tensor chebyshev_polynomial_t(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_u(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_v(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_w(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, const Tensor& n);
Tensor hermite_polynomial_h(const Tensor& x, const Tensor& n);
Tensor hermite_polynomial_he(const Tensor& x, const Tensor& n);
Tensor laguerre_polynomial_l(const Tensor& x, const Tensor& n);
Tensor legendre_polynomial_p(const Tensor& x, const Tensor& n);
Tensor gcd(const Tensor& a, const Tensor& b);        // integers only; gcd(0, 0) = 0
Tensor lcm(const Tensor& a, const Tensor& b);        // integers only; 0 where either is 0
Tensor nextafter(const Tensor& a, const Tensor& b);  // float32/float64 only
// The regularized incomplete gamma functions P(a, x) and Q(a, x) = 1 - P; floating only.
Tensor igamma(const Tensor& a, const Tensor& x);
Tensor igammac(const Tensor& a, const Tensor& x);
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x);  // d x / d alpha of Gamma(alpha, 1) draws x
Tensor fmax(const Tensor& a, const Tensor& b);       // a NaN gives way to the other operand
Tensor fmin(const Tensor& a, const Tensor& b);
// Integers and bool only.
// a << b and a >> b for integers (not bool): a shift outside [0, bits) gives 0, or a's sign to the right.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, Scalar b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, Scalar b);
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, Scalar b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, Scalar b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, Scalar b);
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, Scalar b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, Scalar b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, Scalar b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, Scalar b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, Scalar b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, Scalar b);

// cond ? a : b, element-wise, all three broadcast; cond must be bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, Scalar a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor where(const Tensor& cond, Scalar a, Scalar b);
// self + (a * value) * b in place (a and b broadcast to self), as PyTorch's addcmul_ on a CPU
// with FMA: a * value rounded, then one fused multiply-add; no autograd (optimizers' use).
Tensor& addcmul_(Tensor& self, const Tensor& a, const Tensor& b, Scalar value);
// x with value wherever mask (bool, broadcast) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);

// ---- in-place forms and helpers ----
namespace detail {
Tensor unary(UnaryOp op, const Tensor& x);
Tensor& unary_(UnaryOp op, Tensor& x);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor binary(BinaryOp op, const Tensor& a, Scalar b, Scalar alpha = 1);
Tensor& binary_(BinaryOp op, Tensor& self, const Tensor& other, Scalar alpha = 1);
Tensor& binary_(BinaryOp op, Tensor& self, Scalar other, Scalar alpha = 1);
Tensor& clamp_(Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor& masked_fill_(Tensor& x, const Tensor& mask, Scalar value);
UnaryOp gelu_op(const std::string& approximate);  // checks the name
BinaryOp rounded_div_op(const std::string& rounding_mode);  // checks the name
// 0-dim tensor holding `value` as `dtype` on `device`.
Tensor scalar_tensor(Scalar value, DType dtype, Device device);
// Whether `tensor op value` in a 16-bit float dtype must take the value in float32: mul and div
// (as in PyTorch) read a number at its float32 value, which the 16-bit dtype may not hold (1e5
// is inf in float16); computed in float32 and rounded once, the results are the same as
// PyTorch's. Where the dtype holds it exactly, the 16-bit kernels give the same results.
bool scalar_in_float32(BinaryOp op, DType dtype, Scalar value);
// Integer tensors to negative integer powers are an error (op: "pow" or "pow_"), as in PyTorch.
void check_pow_exponent(const Tensor& base, Scalar exponent, const char* op);
}  // namespace detail

}  // namespace tandem::kernels
