// The Tensor methods beyond metadata: each forwards to the differentiable op of autograd/ops.h,
// and the autograd accessors (requires_grad, grad, backward, hooks) work on AutogradMeta.
#include <ostream>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/graph.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/copy.h"
#include "kernels/elementwise.h"
#include "kernels/print.h"

namespace tandem {

using kernels::BinaryOp;
using kernels::UnaryOp;

// ---- views and copies ----

Tensor Tensor::view(IntList sizes) const { return tandem::view(*this, sizes); }
Tensor Tensor::as_strided(IntList sizes, IntList strides, std::optional<int64_t> offset) const {
  return tandem::as_strided(*this, sizes, strides, offset);
}
Tensor Tensor::permute(IntList dims) const { return tandem::permute(*this, dims); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return tandem::transpose(*this, dim0, dim1); }
Tensor Tensor::t() const { return tandem::t(*this); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const { return tandem::narrow(*this, dim, start, length); }
Tensor Tensor::narrow_copy(int64_t dim, int64_t start, int64_t length) const {
  return tandem::narrow_copy(*this, dim, start, length);
}
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return tandem::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return tandem::select(*this, dim, index); }
Tensor Tensor::expand(IntList sizes) const { return tandem::expand(*this, sizes); }
Tensor Tensor::squeeze() const { return tandem::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return tandem::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return tandem::unsqueeze(*this, dim); }
Tensor Tensor::unflatten(int64_t dim, IntList sizes) const { return tandem::unflatten(*this, dim, sizes); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return tandem::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::split_with_sizes(IntList split_sizes, int64_t dim) const {
  return tandem::split_with_sizes(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return tandem::chunk(*this, chunks, dim); }
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return tandem::unbind(*this, dim); }
Tensor Tensor::reshape(IntList sizes) const { return tandem::reshape(*this, sizes); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return tandem::flatten(*this, start_dim, end_dim); }
Tensor Tensor::contiguous() const { return tandem::contiguous(*this); }
Tensor Tensor::pin_memory() const { return kernels::pin_memory(*this); }
bool Tensor::is_pinned() const { return kernels::is_pinned(*this); }
Tensor Tensor::clone() const { return tandem::clone(*this); }
Tensor Tensor::to(DType dtype) const { return tandem::to(*this, device(), dtype); }
Tensor Tensor::to(Device device) const { return tandem::to(*this, device, dtype()); }
Tensor Tensor::to(Device device, DType dtype) const { return tandem::to(*this, device, dtype); }
Tensor& Tensor::copy_(const Tensor& src) { return tandem::copy_(*this, src); }
Tensor& Tensor::fill_(Scalar value) { return tandem::fill_(*this, value); }
Tensor& Tensor::zero_() { return tandem::fill_(*this, 0); }
Scalar Tensor::item() const { return kernels::item(*this); }

// ---- element-wise ----

Tensor Tensor::neg() const { return tandem::neg(*this); }
Tensor Tensor::abs() const { return tandem::abs(*this); }
Tensor Tensor::exp() const { return tandem::exp(*this); }
Tensor Tensor::log() const { return tandem::log(*this); }
Tensor Tensor::log1p() const { return tandem::log1p(*this); }
Tensor Tensor::expm1() const { return tandem::expm1(*this); }
Tensor Tensor::sqrt() const { return tandem::sqrt(*this); }
Tensor Tensor::rsqrt() const { return tandem::rsqrt(*this); }
Tensor Tensor::sin() const { return tandem::sin(*this); }
Tensor Tensor::cos() const { return tandem::cos(*this); }
Tensor Tensor::tanh() const { return tandem::tanh(*this); }
Tensor Tensor::sigmoid() const { return tandem::sigmoid(*this); }
Tensor Tensor::relu() const { return tandem::relu(*this); }
Tensor Tensor::gelu(const std::string& approximate) const {
  return tandem::gelu(*this, approximate);
}
Tensor Tensor::silu() const { return tandem::silu(*this); }
Tensor Tensor::sign() const { return tandem::sign(*this); }
Tensor Tensor::floor() const { return tandem::floor(*this); }
Tensor Tensor::ceil() const { return tandem::ceil(*this); }
Tensor Tensor::round() const { return tandem::round(*this); }
Tensor Tensor::trunc() const { return tandem::trunc(*this); }
Tensor Tensor::frac() const { return tandem::frac(*this); }
Tensor Tensor::reciprocal() const { return tandem::reciprocal(*this); }
Tensor Tensor::pow(Scalar exponent) const { return tandem::pow(*this, exponent); }
Tensor Tensor::pow(const Tensor& exponent) const { return tandem::pow(*this, exponent); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const { return tandem::clamp(*this, min, max); }
Tensor Tensor::clamp_min(Scalar min) const { return tandem::clamp(*this, min, std::nullopt); }
Tensor Tensor::clamp_max(Scalar max) const { return tandem::clamp(*this, std::nullopt, max); }

Tensor& Tensor::neg_() { return detail::unary_(UnaryOp::Neg, *this); }
Tensor& Tensor::abs_() { return detail::unary_(UnaryOp::Abs, *this); }
Tensor& Tensor::exp_() { return detail::unary_(UnaryOp::Exp, *this); }
Tensor& Tensor::log_() { return detail::unary_(UnaryOp::Log, *this); }
Tensor& Tensor::log1p_() { return detail::unary_(UnaryOp::Log1p, *this); }
Tensor& Tensor::expm1_() { return detail::unary_(UnaryOp::Expm1, *this); }
Tensor& Tensor::sqrt_() { return detail::unary_(UnaryOp::Sqrt, *this); }
Tensor& Tensor::rsqrt_() { return detail::unary_(UnaryOp::Rsqrt, *this); }
Tensor& Tensor::sin_() { return detail::unary_(UnaryOp::Sin, *this); }
Tensor& Tensor::cos_() { return detail::unary_(UnaryOp::Cos, *this); }
Tensor& Tensor::tanh_() { return detail::unary_(UnaryOp::Tanh, *this); }
Tensor& Tensor::sigmoid_() { return detail::unary_(UnaryOp::Sigmoid, *this); }
Tensor& Tensor::relu_() { return detail::unary_(UnaryOp::Relu, *this); }
Tensor& Tensor::gelu_(const std::string& approximate) { return detail::unary_(kernels::detail::gelu_op(approximate), *this); }
Tensor& Tensor::silu_() { return detail::unary_(UnaryOp::Silu, *this); }
Tensor& Tensor::sign_() { return detail::unary_(UnaryOp::Sign, *this); }
Tensor& Tensor::floor_() { return detail::unary_(UnaryOp::Floor, *this); }
Tensor& Tensor::ceil_() { return detail::unary_(UnaryOp::Ceil, *this); }
Tensor& Tensor::round_() { return detail::unary_(UnaryOp::Round, *this); }
Tensor& Tensor::trunc_() { return detail::unary_(UnaryOp::Trunc, *this); }
Tensor& Tensor::frac_() { return detail::unary_(UnaryOp::Frac, *this); }
Tensor& Tensor::reciprocal_() { return detail::unary_(UnaryOp::Reciprocal, *this); }
Tensor& Tensor::pow_(Scalar exponent) { return detail::binary_(BinaryOp::Pow, *this, exponent); }
Tensor& Tensor::pow_(const Tensor& exponent) { return detail::binary_(BinaryOp::Pow, *this, exponent); }
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) { return detail::clamp_(*this, min, max); }

// ---- more element-wise math ----

Tensor Tensor::tan() const { return tandem::tan(*this); }
Tensor Tensor::asin() const { return tandem::asin(*this); }
Tensor Tensor::acos() const { return tandem::acos(*this); }
Tensor Tensor::atan() const { return tandem::atan(*this); }
Tensor Tensor::sinh() const { return tandem::sinh(*this); }
Tensor Tensor::cosh() const { return tandem::cosh(*this); }
Tensor Tensor::asinh() const { return tandem::asinh(*this); }
Tensor Tensor::acosh() const { return tandem::acosh(*this); }
Tensor Tensor::atanh() const { return tandem::atanh(*this); }
Tensor Tensor::log2() const { return tandem::log2(*this); }
Tensor Tensor::log10() const { return tandem::log10(*this); }
Tensor Tensor::exp2() const { return tandem::exp2(*this); }
Tensor Tensor::erfc() const { return tandem::erfc(*this); }
Tensor Tensor::erfinv() const { return tandem::erfinv(*this); }
Tensor Tensor::bitwise_not() const { return tandem::bitwise_not(*this); }
Tensor& Tensor::tan_() { return detail::unary_(UnaryOp::Tan, *this); }
Tensor& Tensor::asin_() { return detail::unary_(UnaryOp::Asin, *this); }
Tensor& Tensor::acos_() { return detail::unary_(UnaryOp::Acos, *this); }
Tensor& Tensor::atan_() { return detail::unary_(UnaryOp::Atan, *this); }
Tensor& Tensor::sinh_() { return detail::unary_(UnaryOp::Sinh, *this); }
Tensor& Tensor::cosh_() { return detail::unary_(UnaryOp::Cosh, *this); }
Tensor& Tensor::asinh_() { return detail::unary_(UnaryOp::Asinh, *this); }
Tensor& Tensor::acosh_() { return detail::unary_(UnaryOp::Acosh, *this); }
Tensor& Tensor::atanh_() { return detail::unary_(UnaryOp::Atanh, *this); }
Tensor& Tensor::log2_() { return detail::unary_(UnaryOp::Log2, *this); }
Tensor& Tensor::log10_() { return detail::unary_(UnaryOp::Log10, *this); }
Tensor& Tensor::exp2_() { return detail::unary_(UnaryOp::Exp2, *this); }
Tensor& Tensor::erfc_() { return detail::unary_(UnaryOp::Erfc, *this); }
Tensor& Tensor::erfinv_() { return detail::unary_(UnaryOp::Erfinv, *this); }
Tensor& Tensor::bitwise_not_() { return detail::unary_(UnaryOp::BitwiseNot, *this); }
Tensor Tensor::lgamma() const { return tandem::lgamma(*this); }
Tensor Tensor::digamma() const { return tandem::digamma(*this); }
Tensor Tensor::polygamma(int64_t n) const { return tandem::polygamma(n, *this); }
Tensor Tensor::mvlgamma(int64_t p) const { return tandem::mvlgamma(*this, p); }
Tensor Tensor::i0() const { return tandem::i0(*this); }
Tensor& Tensor::lgamma_() { return detail::unary_(UnaryOp::Lgamma, *this); }
Tensor& Tensor::digamma_() { return detail::unary_(UnaryOp::Digamma, *this); }
Tensor& Tensor::i0_() { return detail::unary_(UnaryOp::I0, *this); }
Tensor Tensor::square() const { return tandem::square(*this); }
Tensor Tensor::gcd(const Tensor& other) const { return tandem::gcd(*this, other); }
Tensor Tensor::lcm(const Tensor& other) const { return tandem::lcm(*this, other); }
Tensor Tensor::nextafter(const Tensor& other) const { return tandem::nextafter(*this, other); }
Tensor Tensor::igamma(const Tensor& other) const { return tandem::igamma(*this, other); }
Tensor Tensor::igammac(const Tensor& other) const { return tandem::igammac(*this, other); }
Tensor Tensor::ldexp(const Tensor& other) const { return tandem::ldexp(*this, other); }
std::tuple<Tensor, Tensor> Tensor::frexp() const { return tandem::frexp(*this); }
Tensor Tensor::true_divide(const Tensor& other) const { return tandem::true_divide(*this, other); }
Tensor& Tensor::gcd_(const Tensor& other) { return detail::binary_(BinaryOp::Gcd, *this, other); }
Tensor& Tensor::lcm_(const Tensor& other) { return detail::binary_(BinaryOp::Lcm, *this, other); }
Tensor Tensor::quantile(double q, std::optional<int64_t> dim, bool keepdim, const std::string& interpolation) const {
  return tandem::quantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::quantile(const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                        const std::string& interpolation) const {
  return tandem::quantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::nanquantile(double q, std::optional<int64_t> dim, bool keepdim, const std::string& interpolation) const {
  return tandem::nanquantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::nanquantile(const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                           const std::string& interpolation) const {
  return tandem::nanquantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::histc(int64_t bins, double min, double max) const { return tandem::histc(*this, bins, min, max); }
Tensor Tensor::diag_embed(int64_t offset, int64_t dim1, int64_t dim2) const {
  return tandem::diag_embed(*this, offset, dim1, dim2);
}
Tensor Tensor::deg2rad() const { return tandem::deg2rad(*this); }
Tensor Tensor::rad2deg() const { return tandem::rad2deg(*this); }
Tensor Tensor::logit(std::optional<double> eps) const { return tandem::logit(*this, eps); }
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) const {
  return tandem::nan_to_num(*this, nan, posinf, neginf);
}
namespace {

// The composed forms' in-place versions write their result back (what their graphs saved is not
// self); a result that broadcast beyond self is refused first, naming the op.
Tensor& write_back(Tensor& self, const Tensor& result, const char* op) {
  TD_CHECK(result.sizes() == self.sizes(), op, ": output with shape ", shape_str(self.sizes()),
           " doesn't match the broadcast shape ", shape_str(result.sizes()));
  return tandem::copy_(self, result);
}

}  // namespace

// The composed forms' in-place versions write their result back: what their graphs saved is not self.
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  return tandem::copy_(*this, tandem::nan_to_num(*this, nan, posinf, neginf));
}
Tensor Tensor::isnan() const { return tandem::isnan(*this); }
Tensor Tensor::isinf() const { return tandem::isinf(*this); }
Tensor Tensor::isposinf() const { return tandem::isposinf(*this); }
Tensor Tensor::isneginf() const { return tandem::isneginf(*this); }
Tensor Tensor::isfinite() const { return tandem::isfinite(*this); }
Tensor Tensor::signbit() const { return tandem::signbit(*this); }
Tensor Tensor::logical_not() const { return tandem::logical_not(*this); }
Tensor Tensor::logical_and(const Tensor& other) const { return tandem::logical_and(*this, other); }
Tensor Tensor::logical_or(const Tensor& other) const { return tandem::logical_or(*this, other); }
Tensor Tensor::logical_xor(const Tensor& other) const { return tandem::logical_xor(*this, other); }
Tensor Tensor::div(const Tensor& other, const std::string& rounding_mode) const {
  return tandem::div(*this, other, rounding_mode);
}
Tensor Tensor::div(Scalar other, const std::string& rounding_mode) const {
  return tandem::div(*this, other, rounding_mode);
}
Tensor& Tensor::div_(const Tensor& other, const std::string& rounding_mode) {
  return detail::binary_(kernels::detail::rounded_div_op(rounding_mode), *this, other);
}
Tensor& Tensor::div_(Scalar other, const std::string& rounding_mode) {
  return detail::binary_(kernels::detail::rounded_div_op(rounding_mode), *this, other);
}
Tensor Tensor::floor_divide(const Tensor& other) const { return tandem::floor_divide(*this, other); }
Tensor Tensor::floor_divide(Scalar other) const { return tandem::floor_divide(*this, other); }
Tensor& Tensor::floor_divide_(const Tensor& other) { return detail::binary_(BinaryOp::DivFloor, *this, other); }
Tensor& Tensor::floor_divide_(Scalar other) { return detail::binary_(BinaryOp::DivFloor, *this, other); }
Tensor Tensor::remainder(const Tensor& other) const { return tandem::remainder(*this, other); }
Tensor Tensor::remainder(Scalar other) const { return tandem::remainder(*this, other); }
Tensor& Tensor::remainder_(const Tensor& other) { return detail::binary_(BinaryOp::Remainder, *this, other); }
Tensor& Tensor::remainder_(Scalar other) { return detail::binary_(BinaryOp::Remainder, *this, other); }
Tensor Tensor::fmod(const Tensor& other) const { return tandem::fmod(*this, other); }
Tensor Tensor::fmod(Scalar other) const { return tandem::fmod(*this, other); }
Tensor& Tensor::fmod_(const Tensor& other) { return detail::binary_(BinaryOp::Fmod, *this, other); }
Tensor& Tensor::fmod_(Scalar other) { return detail::binary_(BinaryOp::Fmod, *this, other); }
Tensor Tensor::atan2(const Tensor& other) const { return tandem::atan2(*this, other); }
Tensor& Tensor::atan2_(const Tensor& other) { return detail::binary_(BinaryOp::Atan2, *this, other); }
Tensor Tensor::hypot(const Tensor& other) const { return tandem::hypot(*this, other); }
Tensor& Tensor::hypot_(const Tensor& other) { return detail::binary_(BinaryOp::Hypot, *this, other); }
Tensor Tensor::copysign(const Tensor& other) const { return tandem::copysign(*this, other); }
Tensor Tensor::copysign(Scalar other) const { return tandem::copysign(*this, other); }
Tensor& Tensor::copysign_(const Tensor& other) { return detail::binary_(BinaryOp::Copysign, *this, other); }
Tensor Tensor::logaddexp(const Tensor& other) const { return tandem::logaddexp(*this, other); }
Tensor Tensor::xlogy(const Tensor& other) const { return tandem::xlogy(*this, other); }
Tensor Tensor::xlogy(Scalar other) const { return tandem::xlogy(*this, other); }
Tensor Tensor::fmax(const Tensor& other) const { return tandem::fmax(*this, other); }
Tensor Tensor::fmin(const Tensor& other) const { return tandem::fmin(*this, other); }
Tensor Tensor::lerp(const Tensor& end, Scalar weight) const { return tandem::lerp(*this, end, weight); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const { return tandem::lerp(*this, end, weight); }
Tensor& Tensor::lerp_(const Tensor& end, Scalar weight) {
  return write_back(*this, tandem::lerp(*this, end, weight), "lerp_");
}

Tensor& Tensor::tril_(int64_t diagonal) { return write_back(*this, tandem::tril(*this, diagonal), "tril_"); }
Tensor& Tensor::triu_(int64_t diagonal) { return write_back(*this, tandem::triu(*this, diagonal), "triu_"); }
// A floating result written back into self; computed from a copy, since the write would change what
// the result's graph saved of self.
Tensor& Tensor::polygamma_(int64_t n) {
  TD_CHECK(is_floating(dtype()), "polygamma_: result type ", kDefaultFloat, " can't be cast to the desired output type ",
           dtype());
  return write_back(*this, tandem::polygamma(n, tandem::clone(*this)), "polygamma_");
}
Tensor& Tensor::mvlgamma_(int64_t p) {
  TD_CHECK(is_floating(dtype()), "mvlgamma_: result type ", kDefaultFloat, " can't be cast to the desired output type ",
           dtype());
  return write_back(*this, tandem::mvlgamma(tandem::clone(*this), p), "mvlgamma_");
}
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight) {
  return write_back(*this, tandem::lerp(*this, end, weight), "lerp_");
}
Tensor Tensor::addcmul(const Tensor& a, const Tensor& b, Scalar value) const {
  return tandem::addcmul(*this, a, b, value);
}
Tensor Tensor::addcdiv(const Tensor& a, const Tensor& b, Scalar value) const {
  return tandem::addcdiv(*this, a, b, value);
}
Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, Scalar value) {
  return write_back(*this, tandem::addcmul(*this, a, b, value), "addcmul_");
}
Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, Scalar value) {
  return write_back(*this, tandem::addcdiv(*this, a, b, value), "addcdiv_");
}
Tensor Tensor::bitwise_and(const Tensor& other) const { return tandem::bitwise_and(*this, other); }
Tensor Tensor::bitwise_and(Scalar other) const { return tandem::bitwise_and(*this, other); }
Tensor Tensor::bitwise_or(const Tensor& other) const { return tandem::bitwise_or(*this, other); }
Tensor Tensor::bitwise_or(Scalar other) const { return tandem::bitwise_or(*this, other); }
Tensor Tensor::bitwise_xor(const Tensor& other) const { return tandem::bitwise_xor(*this, other); }
Tensor Tensor::bitwise_xor(Scalar other) const { return tandem::bitwise_xor(*this, other); }
Tensor& Tensor::bitwise_and_(const Tensor& other) { return detail::binary_(BinaryOp::BitwiseAnd, *this, other); }
Tensor& Tensor::bitwise_or_(const Tensor& other) { return detail::binary_(BinaryOp::BitwiseOr, *this, other); }
Tensor& Tensor::bitwise_xor_(const Tensor& other) { return detail::binary_(BinaryOp::BitwiseXor, *this, other); }
Tensor& Tensor::bitwise_and_(Scalar other) { return detail::binary_(BinaryOp::BitwiseAnd, *this, other); }
Tensor& Tensor::bitwise_or_(Scalar other) { return detail::binary_(BinaryOp::BitwiseOr, *this, other); }
Tensor& Tensor::bitwise_xor_(Scalar other) { return detail::binary_(BinaryOp::BitwiseXor, *this, other); }
Tensor Tensor::bitwise_left_shift(const Tensor& other) const { return tandem::bitwise_left_shift(*this, other); }
Tensor Tensor::bitwise_left_shift(Scalar other) const { return tandem::bitwise_left_shift(*this, other); }
Tensor Tensor::bitwise_right_shift(const Tensor& other) const { return tandem::bitwise_right_shift(*this, other); }
Tensor Tensor::bitwise_right_shift(Scalar other) const { return tandem::bitwise_right_shift(*this, other); }
Tensor& Tensor::bitwise_left_shift_(const Tensor& other) { return detail::binary_(BinaryOp::ShiftLeft, *this, other); }
Tensor& Tensor::bitwise_left_shift_(Scalar other) { return detail::binary_(BinaryOp::ShiftLeft, *this, other); }
Tensor& Tensor::bitwise_right_shift_(const Tensor& other) { return detail::binary_(BinaryOp::ShiftRight, *this, other); }
Tensor& Tensor::bitwise_right_shift_(Scalar other) { return detail::binary_(BinaryOp::ShiftRight, *this, other); }
Tensor Tensor::clip(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return tandem::clamp(*this, min, max);
}
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return tandem::isclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return tandem::allclose(*this, other, rtol, atol, equal_nan);
}

// ---- rearranging, joining and indexing ----

Tensor Tensor::roll(IntList shifts, IntList dims) const { return tandem::roll(*this, shifts, dims); }
Tensor Tensor::repeat(IntList repeats) const { return tandem::repeat(*this, repeats); }
Tensor Tensor::tile(IntList reps) const { return tandem::tile(*this, reps); }
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  return tandem::repeat_interleave(*this, repeats, dim);
}
Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim) const {
  return tandem::repeat_interleave(*this, repeats, dim);
}
Tensor Tensor::movedim(IntList source, IntList destination) const {
  return tandem::movedim(*this, source, destination);
}
Tensor Tensor::movedim(int64_t source, int64_t destination) const {
  return tandem::movedim(*this, source, destination);
}
Tensor Tensor::rot90(int64_t k, IntList dims) const { return tandem::rot90(*this, k, dims); }
Tensor Tensor::fliplr() const { return tandem::fliplr(*this); }
Tensor Tensor::flipud() const { return tandem::flipud(*this); }
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return tandem::diagonal(*this, offset, dim1, dim2);
}
Tensor Tensor::diag(int64_t offset) const { return tandem::diag(*this, offset); }
Tensor Tensor::diff(int64_t n, int64_t dim) const { return tandem::diff(*this, n, dim); }
Tensor Tensor::nonzero() const { return tandem::nonzero(*this); }
Tensor Tensor::argwhere() const { return tandem::argwhere(*this); }
Tensor Tensor::masked_select(const Tensor& mask) const { return tandem::masked_select(*this, mask); }
Tensor Tensor::count_nonzero(IntList dims) const { return tandem::count_nonzero(*this, dims); }
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha) const {
  return tandem::index_add(*this, dim, index, source, alpha);
}
Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  return tandem::index_copy(*this, dim, index, source);
}
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, Scalar value) const {
  return tandem::index_fill(*this, dim, index, value);
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                              bool include_self) const {
  return tandem::scatter_reduce(*this, dim, index, src, reduce, include_self);
}
Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                                bool include_self) {
  return write_back(*this, tandem::scatter_reduce(*this, dim, index, src, reduce, include_self), "scatter_reduce_");
}
Tensor Tensor::index_reduce(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                            bool include_self) const {
  return tandem::index_reduce(*this, dim, index, source, reduce, include_self);
}
Tensor& Tensor::index_reduce_(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                              bool include_self) {
  return write_back(*this, tandem::index_reduce(*this, dim, index, source, reduce, include_self), "index_reduce_");
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha) {
  return tandem::copy_(*this, tandem::index_add(*this, dim, index, source, alpha));
}
Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) {
  return tandem::copy_(*this, tandem::index_copy(*this, dim, index, source));
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, Scalar value) {
  return tandem::copy_(*this, tandem::index_fill(*this, dim, index, value));
}
Tensor Tensor::take(const Tensor& index) const { return tandem::take(*this, index); }
Tensor Tensor::put(const Tensor& index, const Tensor& source, bool accumulate) const {
  return tandem::put(*this, index, source, accumulate);
}
Tensor& Tensor::put_(const Tensor& index, const Tensor& source, bool accumulate) {
  return tandem::put_(*this, index, source, accumulate);
}
Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  return tandem::take_along_dim(*this, indices, dim);
}
Tensor Tensor::bincount(const Tensor& weights, int64_t minlength) const {
  return tandem::bincount(*this, weights, minlength);
}
Tensor Tensor::dot(const Tensor& other) const { return tandem::dot(*this, other); }
Tensor Tensor::mv(const Tensor& vec) const { return tandem::mv(*this, vec); }
Tensor Tensor::outer(const Tensor& vec2) const { return tandem::outer(*this, vec2); }
Tensor Tensor::addmv(const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha) const {
  return tandem::addmv(*this, mat, vec, beta, alpha);
}
Tensor Tensor::addr(const Tensor& vec1, const Tensor& vec2, Scalar beta, Scalar alpha) const {
  return tandem::addr(*this, vec1, vec2, beta, alpha);
}
Tensor Tensor::baddbmm(const Tensor& batch1, const Tensor& batch2, Scalar beta, Scalar alpha) const {
  return tandem::baddbmm(*this, batch1, batch2, beta, alpha);
}
Tensor Tensor::addbmm(const Tensor& batch1, const Tensor& batch2, Scalar beta, Scalar alpha) const {
  return tandem::addbmm(*this, batch1, batch2, beta, alpha);
}
Tensor Tensor::nansum(IntList dims, bool keepdim) const { return tandem::nansum(*this, dims, keepdim); }
Tensor Tensor::nanmean(IntList dims, bool keepdim) const { return tandem::nanmean(*this, dims, keepdim); }
std::tuple<Tensor, Tensor> Tensor::aminmax(std::optional<int64_t> dim, bool keepdim) const {
  return tandem::aminmax(*this, dim, keepdim);
}

std::vector<Tensor> Tensor::tensor_split(int64_t sections, int64_t dim) const {
  return tandem::tensor_split(*this, sections, dim);
}
std::vector<Tensor> Tensor::tensor_split(const std::vector<int64_t>& indices, int64_t dim) const {
  return tandem::tensor_split(*this, indices, dim);
}
Tensor Tensor::cross(const Tensor& other, int64_t dim) const { return tandem::cross(*this, other, dim); }
Tensor Tensor::kron(const Tensor& other) const { return tandem::kron(*this, other); }
Tensor Tensor::heaviside(const Tensor& values) const { return tandem::heaviside(*this, values); }
Tensor Tensor::angle() const { return tandem::angle(*this); }
Tensor Tensor::nonzero_static(int64_t size, int64_t fill_value) const {
  return tandem::nonzero_static(*this, size, fill_value);
}
Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const { return tandem::unfold(*this, dim, size, step); }
Tensor Tensor::logaddexp2(const Tensor& other) const { return tandem::logaddexp2(*this, other); }
Tensor Tensor::sinc() const { return tandem::sinc(*this); }
Tensor Tensor::float_power(const Tensor& exponent) const { return tandem::float_power(*this, exponent); }
Tensor Tensor::float_power(Scalar exponent) const { return tandem::float_power(*this, exponent); }
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return tandem::masked_scatter(*this, mask, source);
}
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) {
  return write_back(*this, tandem::masked_scatter(*this, mask, source), "masked_scatter_");
}
Tensor Tensor::index(const std::vector<Tensor>& indices) const { return tandem::index(*this, indices); }
Tensor Tensor::index_put(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) const {
  return tandem::index_put(*this, indices, values, accumulate);
}
Tensor& Tensor::index_put_(const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  return write_back(*this, tandem::index_put(*this, indices, values, accumulate), "index_put_");
}

// ---- sorting ----

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return tandem::sort(*this, dim, descending);
}
Tensor Tensor::argsort(int64_t dim, bool descending) const { return tandem::argsort(*this, dim, descending); }
Tensor Tensor::msort() const { return tandem::msort(*this); }
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest) const {
  return tandem::topk(*this, k, dim, largest);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return tandem::kthvalue(*this, k, dim, keepdim);
}
Tensor Tensor::median() const { return tandem::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const {
  return tandem::median(*this, dim, keepdim);
}
Tensor Tensor::nanmedian() const { return tandem::nanmedian(*this); }
std::tuple<Tensor, Tensor> Tensor::nanmedian(int64_t dim, bool keepdim) const {
  return tandem::nanmedian(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return tandem::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return tandem::cummin(*this, dim); }
Tensor Tensor::logcumsumexp(int64_t dim) const { return tandem::logcumsumexp(*this, dim); }

Tensor Tensor::add(const Tensor& other, Scalar alpha) const { return tandem::add(*this, other, alpha); }
Tensor Tensor::add(Scalar other, Scalar alpha) const { return tandem::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, Scalar alpha) const { return tandem::sub(*this, other, alpha); }
Tensor Tensor::sub(Scalar other, Scalar alpha) const { return tandem::sub(*this, other, alpha); }
Tensor Tensor::mul(const Tensor& other) const { return tandem::mul(*this, other); }
Tensor Tensor::mul(Scalar other) const { return tandem::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return tandem::div(*this, other); }
Tensor Tensor::div(Scalar other) const { return tandem::div(*this, other); }
Tensor Tensor::maximum(const Tensor& other) const { return tandem::maximum(*this, other); }
Tensor Tensor::minimum(const Tensor& other) const { return tandem::minimum(*this, other); }
Tensor& Tensor::add_(const Tensor& other, Scalar alpha) { return detail::binary_(BinaryOp::Add, *this, other, alpha); }
Tensor& Tensor::add_(Scalar other, Scalar alpha) { return detail::binary_(BinaryOp::Add, *this, other, alpha); }
Tensor& Tensor::sub_(const Tensor& other, Scalar alpha) { return detail::binary_(BinaryOp::Sub, *this, other, alpha); }
Tensor& Tensor::sub_(Scalar other, Scalar alpha) { return detail::binary_(BinaryOp::Sub, *this, other, alpha); }
Tensor& Tensor::mul_(const Tensor& other) { return detail::binary_(BinaryOp::Mul, *this, other); }
Tensor& Tensor::mul_(Scalar other) { return detail::binary_(BinaryOp::Mul, *this, other); }
Tensor& Tensor::div_(const Tensor& other) { return detail::binary_(BinaryOp::Div, *this, other); }
Tensor& Tensor::div_(Scalar other) { return detail::binary_(BinaryOp::Div, *this, other); }
Tensor Tensor::eq(const Tensor& other) const { return tandem::eq(*this, other); }
Tensor Tensor::eq(Scalar other) const { return tandem::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return tandem::ne(*this, other); }
Tensor Tensor::ne(Scalar other) const { return tandem::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return tandem::lt(*this, other); }
Tensor Tensor::lt(Scalar other) const { return tandem::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return tandem::le(*this, other); }
Tensor Tensor::le(Scalar other) const { return tandem::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return tandem::gt(*this, other); }
Tensor Tensor::gt(Scalar other) const { return tandem::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return tandem::ge(*this, other); }
Tensor Tensor::ge(Scalar other) const { return tandem::ge(*this, other); }
Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const { return tandem::masked_fill(*this, mask, value); }
Tensor& Tensor::masked_fill_(const Tensor& mask, Scalar value) { return detail::masked_fill_(*this, mask, value); }

Tensor Tensor::sum(std::optional<DType> dtype) const { return tandem::sum(*this, dtype); }
Tensor Tensor::sum(IntList dims, bool keepdim, std::optional<DType> dtype) const {
  return tandem::sum(*this, dims, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return tandem::mean(*this, dtype); }
Tensor Tensor::mean(IntList dims, bool keepdim, std::optional<DType> dtype) const {
  return tandem::mean(*this, dims, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<DType> dtype) const { return tandem::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype) const {
  return tandem::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return tandem::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return tandem::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return tandem::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return tandem::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntList dims, bool keepdim) const { return tandem::amax(*this, dims, keepdim); }
Tensor Tensor::amin(IntList dims, bool keepdim) const { return tandem::amin(*this, dims, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return tandem::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return tandem::argmin(*this, dim, keepdim); }
Tensor Tensor::var(IntList dims, int64_t correction, bool keepdim) const {
  return tandem::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std(IntList dims, int64_t correction, bool keepdim) const {
  return tandem::std(*this, dims, correction, keepdim);
}
Tensor Tensor::norm(double p, IntList dims, bool keepdim) const { return tandem::norm(*this, p, dims, keepdim); }
Tensor Tensor::logsumexp(IntList dims, bool keepdim) const { return tandem::logsumexp(*this, dims, keepdim); }
Tensor Tensor::all() const { return tandem::all(*this); }
Tensor Tensor::all(IntList dims, bool keepdim) const { return tandem::all(*this, dims, keepdim); }
Tensor Tensor::any() const { return tandem::any(*this); }
Tensor Tensor::any(IntList dims, bool keepdim) const { return tandem::any(*this, dims, keepdim); }
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const { return tandem::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const { return tandem::cumprod(*this, dim, dtype); }

Tensor Tensor::mm(const Tensor& other) const { return tandem::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return tandem::bmm(*this, other); }
Tensor Tensor::matmul(const Tensor& other) const { return tandem::matmul(*this, other); }
Tensor Tensor::softmax(int64_t dim, std::optional<DType> dtype) const { return tandem::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<DType> dtype) const {
  return tandem::log_softmax(*this, dim, dtype);
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return tandem::index_select(*this, dim, index); }
Tensor Tensor::flip(IntList dims) const { return tandem::flip(*this, dims); }
Tensor Tensor::tril(int64_t diagonal) const { return tandem::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return tandem::triu(*this, diagonal); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return tandem::gather(*this, dim, index); }
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tandem::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  return tandem::scatter_add_(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tandem::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, Scalar value) const {
  return tandem::scatter(*this, dim, index, value);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  return tandem::scatter_(*this, dim, index, src);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, Scalar value) {
  return tandem::scatter_(*this, dim, index, value);
}

// ---- autograd ----

bool Tensor::requires_grad() const {
  AutogradMeta* m = autograd::current_meta(*this);  // a view of a base written since follows it
  return m && m->requires_grad;
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  AutogradMeta* m = autograd::current_meta(*this);
  if (m && m->grad_fn && requires_grad) return *this;  // a non-leaf requires grad already: nothing to change
  TD_CHECK(!(m && m->grad_fn), "requires_grad_: only leaf tensors can change requires_grad; this one was made by ",
           m ? m->grad_fn->name() : "", " (use detach() to get a leaf)");
  TD_CHECK(!requires_grad || is_floating(dtype()), "requires_grad_: only floating tensors can require gradients, "
           "not ", dtype());
  autograd::ensure_meta(*this).requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  AutogradMeta* m = autograd::meta(*this);
  return m ? m->grad : Tensor();
}

Tensor& Tensor::mutable_grad() { return autograd::ensure_meta(*this).grad; }

std::shared_ptr<Node> Tensor::grad_fn() const {
  AutogradMeta* m = autograd::current_meta(*this);
  return m ? m->grad_fn : nullptr;
}

bool Tensor::is_leaf() const { return grad_fn() == nullptr; }

uint32_t Tensor::output_nr() const {
  AutogradMeta* m = autograd::current_meta(*this);
  return m ? m->output_nr : 0;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph);
}

Tensor Tensor::detach() const {
  return Tensor::make(storage(), sizes(), strides(), storage_offset(), dtype(), this);
}

Tensor& Tensor::detach_() {
  AutogradMeta* m = autograd::meta(*this);
  TD_CHECK(!(m && m->is_view && m->base.defined() && m->base.requires_grad()),
           "detach_: cannot detach a view of a tensor that requires grad in place; use detach()");
  if (m) {
    m->grad_fn = nullptr;
    m->requires_grad = false;
    m->output_nr = 0;
  }
  return *this;
}

void Tensor::retain_grad() {
  TD_CHECK(requires_grad(), "retain_grad: the tensor does not require grad, so it gets no gradient to retain");
  if (is_leaf()) return;  // leaves keep their gradient anyway (requires_grad remade a stale view's history)
  AutogradMeta& m = autograd::ensure_meta(*this);
  m.retains_grad = true;
  // The engine fills it after this output's hooks have run; the node holds it weakly.
  auto& retained = m.grad_fn->retained;
  if (retained.size() < m.grad_fn->num_outputs) retained.resize(m.grad_fn->num_outputs);
  retained[m.output_nr] = impl_ptr();
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = autograd::meta(*this);
  return m && m->retains_grad;
}

int Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) {
  TD_CHECK(requires_grad(), "register_hook: cannot register a hook on a tensor that does not require grad");
  static std::atomic<int> next_handle{0};
  int handle = next_handle.fetch_add(1);
  autograd::current_meta(*this);  // a stale view's hook goes on its current node
  AutogradMeta& m = autograd::ensure_meta(*this);
  if (m.grad_fn) {
    auto& hooks = m.grad_fn->pre_hooks;
    if (hooks.size() < m.grad_fn->num_outputs) hooks.resize(m.grad_fn->num_outputs);
    hooks[m.output_nr].emplace_back(handle, std::move(hook));
  } else {
    m.hooks.emplace_back(handle, std::move(hook));
  }
  return handle;
}

void Tensor::remove_hook(int handle) {
  AutogradMeta* m = autograd::meta(*this);
  if (!m) return;
  auto drop = [handle](std::vector<std::pair<int, TensorHook>>& hooks) {
    std::erase_if(hooks, [handle](const auto& h) { return h.first == handle; });
  };
  drop(m->hooks);
  if (m->grad_fn) {
    for (auto& hooks : m->grad_fn->pre_hooks) drop(hooks);
  }
}

// ---- printing ----

std::string Tensor::str() const {
  std::vector<std::string> suffixes;
  if (defined()) {
    if (auto fn = grad_fn()) {
      suffixes.push_back("grad_fn=<" + fn->name() + ">");
    } else if (requires_grad()) {
      suffixes.push_back("requires_grad=True");
    }
  }
  return kernels::format(*this, suffixes);
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.str(); }

}  // namespace tandem

// ---- PyTorch's other names, and more in-place forms ----

namespace tandem {

namespace {

// A composed op's floating result written back into self, refused (before anything is written)
// where self's dtype cannot hold it, as PyTorch's. The callers compute it from a copy of self:
// the graph of the result may save self, which the write would change.
Tensor& write_back_floating(Tensor& self, const Tensor& result, const char* op) {
  TD_CHECK(result.dtype() == self.dtype() || is_floating(self.dtype()), op, ": result type ", result.dtype(),
           " can't be cast to the desired output type ", self.dtype());
  TD_CHECK(result.sizes() == self.sizes(), op, ": output with shape ", shape_str(self.sizes()),
           " doesn't match the broadcast shape ", shape_str(result.sizes()));
  return tandem::copy_(self, result);
}

}  // namespace

Tensor Tensor::absolute() const { return tandem::abs(*this); }
Tensor Tensor::negative() const { return tandem::neg(*this); }
Tensor Tensor::fix() const { return tandem::trunc(*this); }
Tensor Tensor::sgn() const { return tandem::sign(*this); }
Tensor Tensor::arccos() const { return tandem::acos(*this); }
Tensor Tensor::arcsin() const { return tandem::asin(*this); }
Tensor Tensor::arctan() const { return tandem::atan(*this); }
Tensor Tensor::arccosh() const { return tandem::acosh(*this); }
Tensor Tensor::arcsinh() const { return tandem::asinh(*this); }
Tensor Tensor::arctanh() const { return tandem::atanh(*this); }
Tensor Tensor::arctan2(const Tensor& other) const { return tandem::atan2(*this, other); }
Tensor Tensor::erf() const { return tandem::erf(*this); }
Tensor& Tensor::absolute_() { return abs_(); }
Tensor& Tensor::negative_() { return neg_(); }
Tensor& Tensor::fix_() { return trunc_(); }
Tensor& Tensor::sgn_() { return sign_(); }
Tensor& Tensor::arccos_() { return acos_(); }
Tensor& Tensor::arcsin_() { return asin_(); }
Tensor& Tensor::arctan_() { return atan_(); }
Tensor& Tensor::arccosh_() { return acosh_(); }
Tensor& Tensor::arcsinh_() { return asinh_(); }
Tensor& Tensor::arctanh_() { return atanh_(); }
Tensor& Tensor::arctan2_(const Tensor& other) { return atan2_(other); }
Tensor& Tensor::erf_() { return detail::unary_(UnaryOp::Erf, *this); }
Tensor Tensor::divide(const Tensor& other) const { return tandem::div(*this, other); }
Tensor Tensor::divide(Scalar other) const { return tandem::div(*this, other); }
Tensor Tensor::divide(const Tensor& other, const std::string& rounding_mode) const {
  return tandem::div(*this, other, rounding_mode);
}
Tensor& Tensor::divide_(const Tensor& other) { return div_(other); }
Tensor& Tensor::divide_(Scalar other) { return div_(other); }
Tensor Tensor::subtract(const Tensor& other, Scalar alpha) const { return tandem::sub(*this, other, alpha); }
Tensor Tensor::subtract(Scalar other, Scalar alpha) const { return tandem::sub(*this, other, alpha); }
Tensor& Tensor::subtract_(const Tensor& other, Scalar alpha) { return sub_(other, alpha); }
Tensor& Tensor::subtract_(Scalar other, Scalar alpha) { return sub_(other, alpha); }
Tensor Tensor::greater(const Tensor& other) const { return tandem::gt(*this, other); }
Tensor Tensor::greater(Scalar other) const { return tandem::gt(*this, other); }
Tensor Tensor::greater_equal(const Tensor& other) const { return tandem::ge(*this, other); }
Tensor Tensor::greater_equal(Scalar other) const { return tandem::ge(*this, other); }
Tensor Tensor::less(const Tensor& other) const { return tandem::lt(*this, other); }
Tensor Tensor::less(Scalar other) const { return tandem::lt(*this, other); }
Tensor Tensor::less_equal(const Tensor& other) const { return tandem::le(*this, other); }
Tensor Tensor::less_equal(Scalar other) const { return tandem::le(*this, other); }
Tensor Tensor::not_equal(const Tensor& other) const { return tandem::ne(*this, other); }
Tensor Tensor::not_equal(Scalar other) const { return tandem::ne(*this, other); }
Tensor Tensor::ravel() const { return tandem::ravel(*this); }
Tensor Tensor::moveaxis(IntList source, IntList destination) const {
  return tandem::movedim(*this, source, destination);
}
Tensor Tensor::moveaxis(int64_t source, int64_t destination) const {
  return tandem::movedim(*this, source, destination);
}
Tensor Tensor::broadcast_to(IntList sizes) const { return tandem::expand(*this, sizes); }
Tensor Tensor::dist(const Tensor& other, double p) const { return tandem::dist(*this, other, p); }
Tensor Tensor::diagflat(int64_t offset) const { return tandem::diagflat(*this, offset); }
Tensor Tensor::pinverse(double rcond) const { return tandem::pinverse(*this, rcond); }
bool Tensor::is_nonzero() const { return tandem::is_nonzero(*this); }
bool Tensor::is_same_size(const Tensor& other) const { return tandem::is_same_size(*this, other); }
bool Tensor::is_signed() const { return tandem::is_signed(*this); }
Tensor& Tensor::clamp_min_(Scalar min) { return clamp_(min, std::nullopt); }
Tensor& Tensor::clamp_max_(Scalar max) { return clamp_(std::nullopt, max); }
Tensor& Tensor::clip_(std::optional<Scalar> min, std::optional<Scalar> max) { return clamp_(min, max); }
Tensor& Tensor::square_() { return write_back_floating(*this, tandem::square(tandem::clone(*this)), "square_"); }
Tensor& Tensor::sinc_() { return write_back_floating(*this, tandem::sinc(tandem::clone(*this)), "sinc_"); }
Tensor& Tensor::deg2rad_() { return write_back_floating(*this, tandem::deg2rad(tandem::clone(*this)), "deg2rad_"); }
Tensor& Tensor::rad2deg_() { return write_back_floating(*this, tandem::rad2deg(tandem::clone(*this)), "rad2deg_"); }
Tensor& Tensor::logit_(std::optional<double> eps) {
  return write_back_floating(*this, tandem::logit(tandem::clone(*this), eps), "logit_");
}
Tensor& Tensor::xlogy_(const Tensor& other) { return write_back_floating(*this, tandem::xlogy(tandem::clone(*this), other), "xlogy_"); }
Tensor& Tensor::xlogy_(Scalar other) { return write_back_floating(*this, tandem::xlogy(tandem::clone(*this), other), "xlogy_"); }
Tensor& Tensor::ldexp_(const Tensor& other) { return write_back_floating(*this, tandem::ldexp(tandem::clone(*this), other), "ldexp_"); }
Tensor& Tensor::igamma_(const Tensor& other) { return write_back_floating(*this, tandem::igamma(tandem::clone(*this), other), "igamma_"); }
Tensor Tensor::multiply(const Tensor& other) const { return tandem::mul(*this, other); }
Tensor Tensor::multiply(Scalar other) const { return tandem::mul(*this, other); }
Tensor Tensor::positive() const { return tandem::positive(*this); }
Tensor Tensor::adjoint() const { return tandem::adjoint(*this); }
Tensor Tensor::inverse() const { return tandem::inverse(*this); }
Tensor Tensor::inner(const Tensor& other) const { return tandem::inner(*this, other); }
bool Tensor::equal(const Tensor& other) const { return tandem::equal(*this, other); }
Tensor Tensor::renorm(double p, int64_t dim, double maxnorm) const { return tandem::renorm(*this, p, dim, maxnorm); }
std::tuple<Tensor, Tensor> Tensor::geqrf() const { return tandem::geqrf(*this); }
Tensor Tensor::orgqr(const Tensor& tau) const { return tandem::orgqr(*this, tau); }
Tensor Tensor::ormqr(const Tensor& tau, const Tensor& other, bool left, bool transpose) const {
  return tandem::ormqr(*this, tau, other, left, transpose);
}
Tensor& Tensor::renorm_(double p, int64_t dim, double maxnorm) {
  return write_back_floating(*this, tandem::renorm(tandem::clone(*this), p, dim, maxnorm), "renorm_");
}
Tensor& Tensor::igammac_(const Tensor& other) { return write_back_floating(*this, tandem::igammac(tandem::clone(*this), other), "igammac_"); }

}  // namespace tandem
