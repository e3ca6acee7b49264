// tandem's ops as users call them: the raw ops of kernels/ plus gradients. Each op records a
// node for backward when grad mode is on and an input requires grad; otherwise it is the
// kernel call alone. Semantics (broadcasting, promotion, dims, errors) are the kernels'; see
// kernels/elementwise.h, reduce.h, linalg.h, index.h, nn_ops.h, views.h and copy.h for the rules.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "kernels/op_codes.h"

namespace tandem {

// ---- element-wise (kernels/elementwise.h) ----
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, Scalar b);
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
// Trigonometric and hyperbolic functions and their inverses, logarithms to 2 and 10, 2^x, erfc and
// erfinv; integers give float32.
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
Tensor exp2(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor erfinv(const Tensor& x);
// Special functions (more in autograd/special.h); integers give float32.
Tensor lgamma(const Tensor& x);                // log |Gamma(x)|
Tensor digamma(const Tensor& x);               // Gamma'(x) / Gamma(x)
Tensor polygamma(int64_t n, const Tensor& x);  // the n-th derivative of digamma
Tensor mvlgamma(const Tensor& x, int64_t p);   // the multivariate log-gamma of dimension p
Tensor i0(const Tensor& x);                    // the modified Bessel function of the first kind, order 0
Tensor square(const Tensor& x);  // x * x; bool gives int64
Tensor deg2rad(const Tensor& x);
Tensor rad2deg(const Tensor& x);
// log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given.
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
// NaN, +inf and -inf replaced: by 0 and the dtype's largest and lowest finite values unless given.
Tensor nan_to_num(const Tensor& x, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = 1);  // a + alpha * b
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
// Division rounded: rounding_mode "trunc" (toward zero) or "floor" (toward -inf, as floor_divide).
// Integers stay integers; an integer divisor of 0 is an error. The gradients are 0.
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode);
Tensor div(const Tensor& a, Scalar b, const std::string& rounding_mode);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, Scalar b);
Tensor remainder(const Tensor& a, const Tensor& b);  // with the divisor's sign, as Python's %
Tensor remainder(const Tensor& a, Scalar b);
Tensor fmod(const Tensor& a, const Tensor& b);  // with the dividend's sign, as C's fmod
Tensor fmod(const Tensor& a, Scalar b);
Tensor atan2(const Tensor& a, const Tensor& b);  // the angle of the point (b, a)
Tensor hypot(const Tensor& a, const Tensor& b);  // floating only
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, Scalar b);
Tensor gcd(const Tensor& a, const Tensor& b);        // integers only; gcd(0, 0) = 0
Tensor lcm(const Tensor& a, const Tensor& b);        // integers only; 0 where either is 0
Tensor nextafter(const Tensor& a, const Tensor& b);  // the next float32/float64 value after a toward b
// The regularized lower incomplete gamma function P(a, x) = (1 / Gamma(a)) integral_0^x t^(a-1) e^-t dt
// and the upper one Q(a, x) = 1 - P(a, x) (special::gammainc and gammaincc); floating operands,
// broadcast. Differentiable in x and (unlike PyTorch's) in a, once.
Tensor igamma(const Tensor& a, const Tensor& x);
Tensor igammac(const Tensor& a, const Tensor& x);
// The derivative d x / d alpha of a draw x of Gamma(alpha, 1) at a fixed quantile, -(dP(alpha, x) /
// d alpha) / density (torch._standard_gamma_grad): standard_gamma's backward. Floating, broadcast;
// 0 at x = 0, NaN for alpha <= 0 or an infinite operand. Not differentiable.
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x);
// a * 2^b (b an integer or floating tensor); integers give float32.
Tensor ldexp(const Tensor& a, const Tensor& b);
// x as mantissa * 2^exponent: the mantissa in x's floating dtype, in [0.5, 1) in magnitude (0, inf and
// NaN as they are, with exponent 0), the exponent int32; differentiable in the mantissa (2^-exponent).
std::tuple<Tensor, Tensor> frexp(const Tensor& x);
Tensor true_divide(const Tensor& a, const Tensor& b);  // div by its older name
Tensor true_divide(const Tensor& a, Scalar b);
Tensor logaddexp(const Tensor& a, const Tensor& b);  // log(exp(a) + exp(b)), floating only
Tensor xlogy(const Tensor& x, const Tensor& y);      // x * log(y), 0 where x is 0 (unless y is NaN)
Tensor xlogy(const Tensor& x, Scalar y);
// start + weight * (end - start), floating.
Tensor lerp(const Tensor& start, const Tensor& end, Scalar weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor addcmul(const Tensor& self, const Tensor& a, const Tensor& b, Scalar value = 1);  // self + value * a * b
Tensor addcdiv(const Tensor& self, const Tensor& a, const Tensor& b, Scalar value = 1);  // self + value * a / b
// fmax and fmin: a NaN operand gives way to the other (NaN only where both are).
Tensor fmax(const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);
// Integers and bool only; not differentiable.
Tensor bitwise_not(const Tensor& x);
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, Scalar b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, Scalar b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, Scalar b);
// a << b and a >> b, integers only (not bool): a shift outside [0, bits) leaves 0, or to the right
// a's sign (0 or -1); the left shift wraps.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, Scalar b);
Tensor bitwise_left_shift(Scalar a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, Scalar b);
Tensor bitwise_right_shift(Scalar a, const Tensor& b);
// Any dtypes, each element's truth (nonzero, NaN included); bool results.
Tensor logical_not(const Tensor& x);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// Tests of each element, bool results; integers are finite and never NaN. signbit sees -0 and -NaN.
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isposinf(const Tensor& x);
Tensor isneginf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor signbit(const Tensor& x);
// |a - b| <= atol + rtol * |b| (or equal, infinities too; NaNs only with equal_nan), of one dtype.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
// NaN propagates; +0 is above -0 (IEEE 754-2019), here and in max, min, amax and amin, so the sign of a
// zero result does not depend on the order of the operands or of a fold.
Tensor maximum(const Tensor& a, const Tensor& b);
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
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, Scalar a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Scalar b);
Tensor where(const Tensor& cond, Scalar a, Scalar b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);

Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, Scalar b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, Scalar b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, Scalar b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, Scalar b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, Scalar b);
// The bitwise operators, as PyTorch's: ~ & | ^ on integers and bool, << >> on integers.
Tensor operator~(const Tensor& x);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, Scalar b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, Scalar b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, Scalar b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, Scalar b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, Scalar b);
Tensor& operator&=(Tensor& a, const Tensor& b);
Tensor& operator&=(Tensor& a, Scalar b);
Tensor& operator|=(Tensor& a, const Tensor& b);
Tensor& operator|=(Tensor& a, Scalar b);
Tensor& operator^=(Tensor& a, const Tensor& b);
Tensor& operator^=(Tensor& a, Scalar b);
Tensor& operator<<=(Tensor& a, const Tensor& b);
Tensor& operator<<=(Tensor& a, Scalar b);
Tensor& operator>>=(Tensor& a, const Tensor& b);
Tensor& operator>>=(Tensor& a, Scalar b);

// ---- reductions (kernels/reduce.h) ----
Tensor sum(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& x, IntList dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, IntList dims, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor max(const Tensor& x);
// With indices: the first extreme's index and that element itself, so of equal zeros the first one.
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& x);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor var(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor norm(const Tensor& x, double p = 2, IntList dims = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim = false);
// all/any without dims reduce everything; with an empty list of dims, nothing (each element's
// truth), as PyTorch's dim=().
Tensor all(const Tensor& x);
Tensor all(const Tensor& x, IntList dims, bool keepdim = false);
Tensor any(const Tensor& x);
Tensor any(const Tensor& x, IntList dims, bool keepdim = false);
// Running sums and products along dim; with a dtype, the input is cast to it first.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- sorting (kernels/sort.h): stable, NaN above every number; int64 indices ----
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor msort(const Tensor& x);  // sorted along dim 0
// The k largest (or smallest) along dim, largest (smallest) first; ties in the order of their positions.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true);
// The k-th smallest along dim (k from 1).
std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
// The lower median, (n - 1) / 2 of the sorted line; NaN where the line holds one. nanmedian skips NaNs.
std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor median(const Tensor& x);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor nanmedian(const Tensor& x);
// The running maximum (minimum) along dim and the position of the element it holds (the latest of
// equal ones; a NaN takes over and stays); logcumsumexp: log(cumsum(exp(x))) without overflow.
// The q-th quantiles (q in [0, 1], a number or a 1-D tensor whose dim comes first in the result) of
// x's elements along dim, or of all of them: the value at rank q (n - 1) of the sorted values, with
// interpolation "linear", "lower", "higher", "midpoint" or "nearest" between its neighbours. A
// line with a NaN gives NaN; nanquantile ranks the numbers alone (NaN for a line of NaN).
Tensor quantile(const Tensor& x, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                const std::string& interpolation = "linear");
Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                const std::string& interpolation = "linear");
Tensor nanquantile(const Tensor& x, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                   const std::string& interpolation = "linear");
Tensor nanquantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                   const std::string& interpolation = "linear");
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
Tensor logcumsumexp(const Tensor& x, int64_t dim);

// Reductions that skip NaN (no dims: all of them), and pairs of reductions in one call.
Tensor nansum(const Tensor& x, IntList dims = {}, bool keepdim = false);
Tensor nanmean(const Tensor& x, IntList dims = {}, bool keepdim = false);
std::tuple<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, IntList dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor count_nonzero(const Tensor& x, IntList dims = {});

// ---- rearranging, joining and indexing composed of views, cat and index ops (autograd/arrange_ops.cc) ----
// Shifted cyclically along dims (none: the flattened tensor, then its shape back).
Tensor roll(const Tensor& x, IntList shifts, IntList dims = {});
Tensor repeat(const Tensor& x, IntList repeats);  // the whole tensor repeated along each dim
Tensor tile(const Tensor& x, IntList reps);       // repeat, with leading 1s for missing reps
// Each element repeated in place (no dim: of the flattened tensor); repeats one number or one per element.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt);
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt);
Tensor movedim(const Tensor& x, IntList source, IntList destination);
Tensor movedim(const Tensor& x, int64_t source, int64_t destination);
Tensor rot90(const Tensor& x, int64_t k = 1, IntList dims = {0, 1});
Tensor fliplr(const Tensor& x);
Tensor flipud(const Tensor& x);
// A view of the offset-th diagonal of dims dim1 and dim2, as the last dim.
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
// x's last dim as the offset-th diagonal of new square dims dim1 and dim2, zeros elsewhere.
Tensor diag_embed(const Tensor& x, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
Tensor diag(const Tensor& x, int64_t offset = 0);  // 1-D: the matrix with x on a diagonal; 2-D: a copy of one
Tensor diff(const Tensor& x, int64_t n = 1, int64_t dim = -1);
Tensor atleast_1d(const Tensor& x);
Tensor atleast_2d(const Tensor& x);
Tensor atleast_3d(const Tensor& x);
Tensor hstack(const std::vector<Tensor>& tensors);
Tensor vstack(const std::vector<Tensor>& tensors);
inline Tensor row_stack(const std::vector<Tensor>& tensors) { return vstack(tensors); }
Tensor dstack(const std::vector<Tensor>& tensors);
Tensor column_stack(const std::vector<Tensor>& tensors);
// Grids of 0-D or 1-D tensors expanded to each other's sizes; "ij" (matrix) or "xy" (Cartesian) indexing.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");
// The positions of the nonzero elements, [count, dims], in row-major order (read on the host).
Tensor nonzero(const Tensor& x);
// nonzero with a fixed number of rows: the first `size` positions, then rows of fill_value.
Tensor nonzero_static(const Tensor& x, int64_t size, int64_t fill_value = -1);
Tensor argwhere(const Tensor& x);
std::vector<Tensor> where(const Tensor& condition);         // nonzero's columns
Tensor masked_select(const Tensor& x, const Tensor& mask);  // 1-D: the elements where mask (broadcast) is true
// x with source's rows added (index_add: alpha times), copied or value filled at index's positions of dim.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha = 1);
Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source);
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
Tensor take(const Tensor& x, const Tensor& index);  // of the flattened x, shaped as index
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);
// take's inverse: x with source's elements written (or with accumulate, added) at index's positions
// of the flattened x (negative ones from the end); index and source have as many elements. Written
// twice without accumulate, one of the values stays, and only it gets a gradient (PyTorch gives
// every one).
Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate = false);
Tensor& put_(Tensor& x, const Tensor& index, const Tensor& source, bool accumulate = false);
// The coordinates in `shape` of flat (row-major) indices: one int64 tensor per dim, shaped as
// indices. Negative indices count from the end; one outside [-numel, numel) is refused (PyTorch
// wraps it around).
std::vector<Tensor> unravel_index(const Tensor& indices, IntList shape);
// Counts (or weight sums) of each value of a 1-D non-negative integer tensor.
Tensor bincount(const Tensor& x, const Tensor& weights = Tensor(), int64_t minlength = 0);
// Where values would go in sorted_sequence (1-D, or batched along the last dim) to keep it sorted:
// before equal elements, or after them with right. bucketize: the same with x's values in boundaries.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right = false);
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right = false);
// The sorted distinct values of x; the inverse (each element's place among them, x's shape) and the
// counts when asked for (undefined otherwise).
std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool return_inverse = false, bool return_counts = false);
// Products that are matmul by another name; add* are beta * input + alpha * product.
Tensor dot(const Tensor& a, const Tensor& b);
Tensor mv(const Tensor& m, const Tensor& v);
Tensor outer(const Tensor& a, const Tensor& b);
inline Tensor ger(const Tensor& a, const Tensor& b) { return outer(a, b); }  // outer's older name
Tensor vdot(const Tensor& a, const Tensor& b);  // dot of two 1-D tensors (real: no conjugate to take)
// The product of 2-D matrices, in the order with the fewest multiplications (linalg::multi_dot).
Tensor chain_matmul(const std::vector<Tensor>& matrices);
Tensor addmv(const Tensor& input, const Tensor& m, const Tensor& v, Scalar beta = 1, Scalar alpha = 1);
Tensor addr(const Tensor& input, const Tensor& a, const Tensor& b, Scalar beta = 1, Scalar alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, Scalar beta = 1, Scalar alpha = 1);
Tensor addbmm(const Tensor& input, const Tensor& a, const Tensor& b, Scalar beta = 1, Scalar alpha = 1);
// Einstein summation, as torch.einsum: "ij,jk->ik", an ellipsis for broadcast dims, repeated labels
// for diagonals; no "->": the ellipsis's dims, then the labels used once in alphabetical order.
// Each pair of operands is contracted by one bmm, left to right.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
// ---- more compositions (autograd/combine_ops.cc) ----
// Views of x cut along dim: into `sections` parts (the first n % sections one longer), or before each index.
std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int64_t dim = 0);
std::vector<Tensor> tensor_split(const Tensor& x, const std::vector<int64_t>& indices, int64_t dim = 0);
std::vector<Tensor> hsplit(const Tensor& x, int64_t sections);  // equal parts along dim 1 (dim 0 for 1-D)
std::vector<Tensor> vsplit(const Tensor& x, int64_t sections);  // along dim 0
std::vector<Tensor> dsplit(const Tensor& x, int64_t sections);  // along dim 2
// The cross product of 3-vectors along dim (of size 3), operands broadcast (torch.linalg.cross).
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1);
Tensor kron(const Tensor& a, const Tensor& b);
// a and b contracted over dims_a / dims_b (pairwise), or a's last `dims` with b's first.
Tensor tensordot(const Tensor& a, const Tensor& b, IntList dims_a, IntList dims_b);
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);
// [2, count] row and column indices of a row x col matrix's lower / upper triangle (from `offset`).
Tensor tril_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions options = {});
Tensor triu_indices(int64_t row, int64_t col, int64_t offset = 0, TensorOptions options = {});
Tensor combinations(const Tensor& x, int64_t r = 2, bool with_replacement = false);  // [count, r], lexicographic
Tensor cartesian_prod(const std::vector<Tensor>& tensors);
Tensor block_diag(const std::vector<Tensor>& tensors);
// The covariance of the rows (variables) of x over its columns (observations), with optional integer
// frequency and real observation weights; corrcoef: normalised to correlations in [-1, 1].
Tensor cov(const Tensor& x, int64_t correction = 1, const Tensor& fweights = Tensor(),
           const Tensor& aweights = Tensor());
Tensor corrcoef(const Tensor& x);
// The trapezoid rule along dim, with a spacing or sample points x.
Tensor trapezoid(const Tensor& y, double dx = 1, int64_t dim = -1);
Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
inline Tensor trapz(const Tensor& y, double dx = 1, int64_t dim = -1) { return trapezoid(y, dx, dim); }
inline Tensor trapz(const Tensor& y, const Tensor& x, int64_t dim = -1) { return trapezoid(y, x, dim); }
// The running trapezoid integrals along dim: one fewer than y's samples.
Tensor cumulative_trapezoid(const Tensor& y, double dx = 1, int64_t dim = -1);
Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
// The counts of x's elements in `bins` equal bins over [min, max] (x's own range when both are 0;
// elements outside are left out), in x's floating dtype.
Tensor histc(const Tensor& x, int64_t bins = 100, double min = 0, double max = 0);
// torch.histogram: (hist, bin_edges) of x's elements (flattened, float32 or float64) in `bins` equal
// bins over `range` (x's own when none; a range of one value widened by 0.5 on each side; empty x:
// [0, 1]), their edges computed as PyTorch's, or in the bins between the given edges (not NaN, not
// decreasing: PyTorch takes those). Each bin holds its left edge, the last its right one too;
// elements outside (NaN included) are left out. weight (as many elements as x) sums instead of
// counting; density divides by the total and the bins' widths. Not differentiable.
std::tuple<Tensor, Tensor> histogram(const Tensor& x, int64_t bins = 100,
                                     std::optional<std::pair<double, double>> range = std::nullopt,
                                     const Tensor& weight = Tensor(), bool density = false);
std::tuple<Tensor, Tensor> histogram(const Tensor& x, const Tensor& bin_edges, const Tensor& weight = Tensor(),
                                     bool density = false);
// torch.histogramdd: the D-dimensional histogram of x's rows, x [..., D] (float32 or float64), and each
// dimension's edges. `bins` equal bins per dimension (one number: the same for every dimension) over
// range {lo0, hi0, lo1, hi1, ...} (each dimension's own min and max when none, widened by 0.5 on each
// side where they meet; empty x: [0, 1]); or the given edges, one increasing tensor per dimension.
// As histogram's, each bin holds its left edges, the last ones their right edges too; rows outside
// (or NaN) are left out; weight [...] (x's shape less its last dim) sums instead of counting; density
// divides by the total and the bins' volumes. Not differentiable. Unlike PyTorch's, edges that decrease
// or are NaN are refused (as histogram's), and weight must have the rows' shape exactly.
std::tuple<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, IntList bins,
                                                    std::optional<std::vector<double>> range = std::nullopt,
                                                    const Tensor& weight = Tensor(), bool density = false);
std::tuple<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, const std::vector<Tensor>& bin_edges,
                                                    const Tensor& weight = Tensor(), bool density = false);
Tensor heaviside(const Tensor& x, const Tensor& values);  // 0, values, 1 for x < 0, = 0, > 0; not differentiable
// The argument of a real number: pi below 0 (not at -0), 0 from 0 on, NaN at NaN; integers give float32.
// Its gradient is 0 (AngleBackward0).
Tensor angle(const Tensor& x);
// The complex-number forms on real tensors, as PyTorch's on them: conj, conj_physical, resolve_conj,
// resolve_neg and real give x itself; is_conj and is_neg are false (tandem has no complex dtypes).
inline Tensor conj(const Tensor& x) { return x; }
inline Tensor conj_physical(const Tensor& x) { return x; }
inline Tensor resolve_conj(const Tensor& x) { return x; }
inline Tensor resolve_neg(const Tensor& x) { return x; }
inline Tensor real(const Tensor& x) { return x; }
inline bool is_complex(const Tensor&) { return false; }
inline bool is_conj(const Tensor&) { return false; }
inline bool is_neg(const Tensor&) { return false; }
Tensor logaddexp2(const Tensor& a, const Tensor& b);
Tensor sinc(const Tensor& x);                          // sin(pi x) / (pi x), 1 at 0
Tensor float_power(const Tensor& a, const Tensor& b);  // pow in float64
Tensor float_power(const Tensor& a, Scalar b);
// Whether each element is among test_elements (not, with invert).
Tensor isin(const Tensor& elements, const Tensor& test_elements, bool invert = false);
// The first of each run of equal consecutive elements (flattened), and optionally each element's run
// and the runs' lengths.
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse = false,
                                                      bool return_counts = false);
// A copy of x with src written into one of its views: a select, a slice or a diagonal.
Tensor select_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t index);
Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
                     std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor diagonal_scatter(const Tensor& x, const Tensor& src, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
// x with source's elements, in order, at the places mask (broadcast) sets.
Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source);
// Advanced indexing of x's leading dims by integer tensors (broadcast together) or bool masks, as
// x[i, j] in PyTorch; index_put writes (or with accumulate, adds) values there.
Tensor index(const Tensor& x, const std::vector<Tensor>& indices);
Tensor index_put(const Tensor& x, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate = false);

// A random permutation of 0..n-1 (int64 unless options say), from the device's generator.
Tensor randperm(int64_t n, TensorOptions options = {});
// num_samples category indices per row of weights (1-D or 2-D), drawn with or without replacement.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
// ---- sampling (random_ops.cc): as in PyTorch, not differentiable in the parameters ----
// A Poisson variate for each rate (floating, >= 0; inf gives inf), in the rates' dtype. Its
// gradient is zero, as PyTorch's (PoissonBackward0).
Tensor poisson(const Tensor& rates);
// A binomial variate for each count (floating, truncated to a whole number) and success probability,
// of one dtype, broadcast: 0 where count or prob <= 0, count where prob >= 1, NaN for NaN or an
// infinite count. Not differentiable: a backward through it is an error, as in PyTorch.
Tensor binomial(const Tensor& count, const Tensor& prob);
// A Gamma(alpha, 1) variate for each concentration alpha (floating, >= 0; inf gives inf), in alpha's
// dtype (torch._standard_gamma), at least the dtype's smallest normal number (so 0 draws and alpha
// = 0 give it, as PyTorch's). Differentiable in alpha by the implicit reparameterization
// d x / d alpha = standard_gamma_grad(alpha, x) (StandardGammaBackward0), once.
Tensor standard_gamma(const Tensor& alpha);
// Normal variates of the given means and standard deviations (>= 0), broadcast, in their promoted
// floating dtype. Their gradients are zero, as PyTorch's: for a differentiable sample write
// mean + std * randn_like(mean).
Tensor normal(const Tensor& mean, const Tensor& std);
Tensor normal(const Tensor& mean, double std);
Tensor normal(double mean, const Tensor& std);
Tensor normal(double mean, double std, IntList sizes, TensorOptions options = {});

// ---- signal windows and logspace (window_ops.cc): factories, float32 unless options say ----
// A periodic window of N points is the first N of the symmetric window of N + 1.
Tensor hann_window(int64_t length, bool periodic = true, TensorOptions options = {});
Tensor hamming_window(int64_t length, bool periodic = true, double alpha = 0.54, double beta = 0.46,
                      TensorOptions options = {});
Tensor blackman_window(int64_t length, bool periodic = true, TensorOptions options = {});
Tensor bartlett_window(int64_t length, bool periodic = true, TensorOptions options = {});
Tensor kaiser_window(int64_t length, bool periodic = true, double beta = 12.0, TensorOptions options = {});
// base^x for `steps` x from start to end, evenly spaced.
Tensor logspace(double start, double end, int64_t steps, double base = 10.0, TensorOptions options = {});

// ---- matrix products (kernels/linalg.h) ----
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
// NumPy's matmul: 1-D operands gain a dim that is dropped again, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, Scalar beta = 1, Scalar alpha = 1);

// ---- views and copies (kernels/views.h, kernels/copy.h); also Tensor methods ----
Tensor view(const Tensor& x, IntList sizes);
Tensor reshape(const Tensor& x, IntList sizes);
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& x, int64_t dim, IntList sizes);
Tensor permute(const Tensor& x, IntList dims);
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& x);
Tensor squeeze(const Tensor& x);
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor expand(const Tensor& x, IntList sizes);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor narrow_copy(const Tensor& x, int64_t dim, int64_t start, int64_t length);  // narrow, contiguous and owned
// Tensor.unfold: the windows of `size` elements along dim, one every `step`: dim becomes the window's
// index and a new last dim walks within each window. A view (windows may overlap); its gradient adds
// each window's part back where it came from.
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step);
Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor select(const Tensor& x, int64_t dim, int64_t index);
Tensor as_strided(const Tensor& x, IntList sizes, IntList strides, std::optional<int64_t> offset = std::nullopt);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& x, IntList split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);
// PyTorch's *_copy forms of the views: the same values in a tensor of their own, contiguous;
// differentiable as the views are (detach_copy is not). The unsafe_ forms of chunk and split are the
// plain ones.
Tensor alias_copy(const Tensor& x);
Tensor as_strided_copy(const Tensor& x, IntList sizes, IntList strides, std::optional<int64_t> offset = std::nullopt);
Tensor detach_copy(const Tensor& x);
Tensor diagonal_copy(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor expand_copy(const Tensor& x, IntList sizes);
Tensor permute_copy(const Tensor& x, IntList dims);
Tensor select_copy(const Tensor& x, int64_t dim, int64_t index);
Tensor slice_copy(const Tensor& x, int64_t dim, std::optional<int64_t> start = std::nullopt,
                  std::optional<int64_t> end = std::nullopt, int64_t step = 1);
std::vector<Tensor> split_copy(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split_with_sizes_copy(const Tensor& x, IntList split_sizes, int64_t dim = 0);
Tensor squeeze_copy(const Tensor& x);
Tensor squeeze_copy(const Tensor& x, int64_t dim);
Tensor t_copy(const Tensor& x);
Tensor transpose_copy(const Tensor& x, int64_t dim0, int64_t dim1);
std::vector<Tensor> unbind_copy(const Tensor& x, int64_t dim = 0);
Tensor unfold_copy(const Tensor& x, int64_t dim, int64_t size, int64_t step);
Tensor unsqueeze_copy(const Tensor& x, int64_t dim);
Tensor view_copy(const Tensor& x, IntList sizes);
std::vector<Tensor> unsafe_chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> unsafe_split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> unsafe_split_with_sizes(const Tensor& x, IntList split_sizes, int64_t dim = 0);
Tensor clone(const Tensor& x);
Tensor contiguous(const Tensor& x);
Tensor to(const Tensor& x, Device device, DType dtype);
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor& fill_(Tensor& self, Scalar value);

// ---- joining and indexing (kernels/index.h) ----
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// x with the elements above (tril) or below (triu) the diagonal-th diagonal of its last two dims
// set to 0; diagonal 0 is the main one, positive ones lie above it.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
// A copy with the elements along each of `dims` in reverse order (not a view, as in PyTorch).
Tensor flip(const Tensor& x, IntList dims);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// src's elements (or value) written at index's positions along dim; of several writes to one place,
// the last on the CPU, any one on a GPU (as PyTorch's).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, Scalar value);
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, Scalar value);
// scatter_reduce: src's elements combined into x at index's positions by reduce ("sum", "prod",
// "mean", "amax", "amin"), x's own element among them or not (kernels/index.h); differentiable in
// x and src as PyTorch's. index_reduce: the slices of source combined into the slices of x that a
// 1-D index names along dim ("prod", "mean", "amax", "amin").
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self = true);
Tensor index_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                    bool include_self = true);
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

// ---- neural-network ops (kernels/nn_ops.h) ----
// With a dtype, x is cast to it first.
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntList kernel_size, IntList stride = {},
                                                   IntList padding = 0, IntList dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                  IntList dilation = 1, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor im2col(const Tensor& x, IntList kernel_size, IntList dilation = 1, IntList padding = 0, IntList stride = 1);
Tensor col2im(const Tensor& cols, IntList output_size, IntList kernel_size, IntList dilation = 1,
              IntList padding = 0, IntList stride = 1);
// Convolution's layout of the same (kernels/nn_ops.h): [N, C, H, W] <-> [C*kh*kw, N*L].
Tensor im2col_matrix(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride);
Tensor col2im_matrix(const Tensor& matrix, int64_t batch, IntList output_size, IntList kernel_size, IntList dilation,
                     IntList padding, IntList stride);

// Fused layers (kernels/nn_ops.h), each one node whose backward is one kernel; under create_graph the
// backward is written in differentiable ops instead, so second derivatives work. nn::functional's
// dropout, layer_norm and cross_entropy check their arguments and take these where they apply.
Tensor fused_dropout(const Tensor& x, double p);  // training, 0 <= p < 1
Tensor& fused_dropout_(Tensor& x, double p);      // in place, with the draws fused_dropout makes
// 2-D convolution without bias through cuDNN (kernels::conv2d_cudnn), x [N, C, H, W] on a CUDA device.
Tensor cudnn_conv2d(const Tensor& x, const Tensor& weight, IntList stride, IntList padding, IntList dilation,
                    int64_t groups);
// 2-D convolution on the CPU (kernels::conv2d_cpu), x [N, C, H, W] float32 or float64; bias [O] or
// undefined.
Tensor cpu_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                  IntList dilation, int64_t groups);
Tensor fused_layer_norm(const Tensor& x, int64_t normalized_dims, const Tensor& weight, const Tensor& bias,
                        double eps);
// {losses, target_weights} of kernels::cross_entropy for x [rows, C]: losses differentiable in x.
std::tuple<Tensor, Tensor> fused_cross_entropy(const Tensor& x, const Tensor& target, const Tensor& weight,
                                               int64_t ignore_index, double smoothing);

// ---- PyTorch's other names for the ops above, and a few small ones built on them ----
inline Tensor absolute(const Tensor& x) { return abs(x); }
inline Tensor negative(const Tensor& x) { return neg(x); }
inline Tensor fix(const Tensor& x) { return trunc(x); }
inline Tensor sgn(const Tensor& x) { return sign(x); }  // sign, for real dtypes
inline Tensor arccos(const Tensor& x) { return acos(x); }
inline Tensor arcsin(const Tensor& x) { return asin(x); }
inline Tensor arctan(const Tensor& x) { return atan(x); }
inline Tensor arccosh(const Tensor& x) { return acosh(x); }
inline Tensor arcsinh(const Tensor& x) { return asinh(x); }
inline Tensor arctanh(const Tensor& x) { return atanh(x); }
inline Tensor arctan2(const Tensor& a, const Tensor& b) { return atan2(a, b); }
inline Tensor divide(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor divide(const Tensor& a, Scalar b) { return div(a, b); }
inline Tensor divide(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  return div(a, b, rounding_mode);
}
inline Tensor divide(const Tensor& a, Scalar b, const std::string& rounding_mode) { return div(a, b, rounding_mode); }
inline Tensor subtract(const Tensor& a, const Tensor& b, Scalar alpha = 1) { return sub(a, b, alpha); }
inline Tensor subtract(const Tensor& a, Scalar b, Scalar alpha = 1) { return sub(a, b, alpha); }
// b - alpha * a, PyTorch's reversed subtraction.
inline Tensor rsub(const Tensor& a, const Tensor& b, Scalar alpha = 1) { return sub(b, a, alpha); }
Tensor rsub(const Tensor& a, Scalar b, Scalar alpha = 1);
inline Tensor greater(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor greater(const Tensor& a, Scalar b) { return gt(a, b); }
inline Tensor greater_equal(const Tensor& a, const Tensor& b) { return ge(a, b); }
inline Tensor greater_equal(const Tensor& a, Scalar b) { return ge(a, b); }
inline Tensor less(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor less(const Tensor& a, Scalar b) { return lt(a, b); }
inline Tensor less_equal(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor less_equal(const Tensor& a, Scalar b) { return le(a, b); }
inline Tensor not_equal(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor not_equal(const Tensor& a, Scalar b) { return ne(a, b); }
inline Tensor concat(const std::vector<Tensor>& tensors, int64_t dim = 0) { return cat(tensors, dim); }
inline Tensor concatenate(const std::vector<Tensor>& tensors, int64_t dim = 0) { return cat(tensors, dim); }
inline Tensor moveaxis(const Tensor& x, IntList source, IntList destination) {
  return movedim(x, source, destination);
}
inline Tensor moveaxis(const Tensor& x, int64_t source, int64_t destination) {
  return movedim(x, source, destination);
}
// x contiguous (itself when it is, else a copy) and flattened, as PyTorch's.
inline Tensor ravel(const Tensor& x) { return reshape(contiguous(x), {-1}); }
inline Tensor broadcast_to(const Tensor& x, IntList sizes) { return expand(x, sizes); }
// Each tensor expanded to the shape they all broadcast to.
std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors);
// The shape shapes broadcast to (an error naming them where they do not).
Shape broadcast_shapes(const std::vector<Shape>& shapes);
// The p-norm of a - b (broadcast), 0-dim.
inline Tensor dist(const Tensor& a, const Tensor& b, double p = 2) { return norm(sub(a, b), p); }
// The flattened x on diagonal `offset` of a square matrix.
inline Tensor diagflat(const Tensor& x, int64_t offset = 0) { return diag(reshape(x, {-1}), offset); }
// The Frobenius norm over one or two dims, as norm with p = 2 there (PyTorch refuses more).
Tensor frobenius_norm(const Tensor& x, IntList dims, bool keepdim = false);
// Whether x's one element is nonzero (an error for no element or more than one, as PyTorch's).
bool is_nonzero(const Tensor& x);
inline bool is_same_size(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes(); }
bool is_signed(const Tensor& x);  // a dtype with negative values: not bool, not uint8
Tensor isreal(const Tensor& x);   // true everywhere: tandem's dtypes are real
inline Tensor multiply(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor multiply(const Tensor& a, Scalar b) { return mul(a, b); }
// x itself (no copy), as PyTorch's unary plus; bool refuses it.
Tensor positive(const Tensor& x);
// The last two dims swapped, a view (the conjugate transpose of a real matrix); at least 2 dims.
Tensor adjoint(const Tensor& x);
// The inverse of a square matrix (or a batch of them), as linalg::inv.
Tensor inverse(const Tensor& x);
// The sum of products over the last dims of a and b (which must match); a number times a tensor
// where either is 0-dim. The result's shape is a's leading dims, then b's.
Tensor inner(const Tensor& a, const Tensor& b);
// Whether a and b have the same shape and equal elements (NaN equals nothing), whatever their dtypes.
bool equal(const Tensor& a, const Tensor& b);
// start, start + step, ... up to end included (PyTorch's deprecated range): float32 unless options
// say, floor((end - start) / step) + 1 values.
Tensor range(double start, double end, double step = 1, TensorOptions options = {});
// Each slice of x along dim (x.select(dim, i)) whose p-norm exceeds maxnorm, scaled to norm
// maxnorm (by maxnorm / (norm + 1e-7), as PyTorch's); the others as they are. Differentiable,
// through the norm too. x floating with at least 2 dims, p > 0 (inf too), maxnorm >= 0.
Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm);
// The numerical derivative of f along each of `dims` (all by default), as numpy's and PyTorch's
// gradient: central differences inside, one-sided ones of first or second order (edge_order) at
// the ends. The samples are `spacing` apart (one number for every dim, or one per dim), or at the
// given coordinates (one 1-D tensor per dim, of that dim's size: second-order differences for
// uneven steps). Integers give float32. Differentiable.
std::vector<Tensor> gradient(const Tensor& f, double spacing = 1,
                             std::optional<std::vector<int64_t>> dims = std::nullopt, int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& f, const std::vector<double>& spacing,
                             std::optional<std::vector<int64_t>> dims = std::nullopt, int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& f, const std::vector<Tensor>& coordinates,
                             std::optional<std::vector<int64_t>> dims = std::nullopt, int64_t edge_order = 1);
// Integers drawn uniformly from [low, high) in x's shape, dtype and device, as randint.
Tensor randint_like(const Tensor& x, int64_t low, int64_t high);
Tensor randint_like(const Tensor& x, int64_t high);

// ---- what the Tensor methods share: in-place forms ----
namespace detail {
Tensor& unary_(kernels::UnaryOp op, Tensor& x);
Tensor binary(kernels::BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha = 1);
Tensor binary(kernels::BinaryOp op, const Tensor& a, Scalar b, Scalar alpha = 1);
Tensor& binary_(kernels::BinaryOp op, Tensor& self, const Tensor& other, Scalar alpha = 1);
Tensor& binary_(kernels::BinaryOp op, Tensor& self, Scalar other, Scalar alpha = 1);
Tensor& clamp_(Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor& masked_fill_(Tensor& x, const Tensor& mask, Scalar value);
}  // namespace detail

}  // namespace tandem
