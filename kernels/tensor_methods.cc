// Tensor's math methods: each forwards to the free function that holds the op's rules.
#include "kernels/elementwise.h"
#include "kernels/index.h"
#include "kernels/linalg.h"
#include "kernels/nn_ops.h"
#include "kernels/reduce.h"

namespace tandem {

Tensor Tensor::neg() const { return detail::unary(UnaryOp::Neg, *this); }
Tensor Tensor::abs() const { return detail::unary(UnaryOp::Abs, *this); }
Tensor Tensor::exp() const { return detail::unary(UnaryOp::Exp, *this); }
Tensor Tensor::log() const { return detail::unary(UnaryOp::Log, *this); }
Tensor Tensor::log1p() const { return detail::unary(UnaryOp::Log1p, *this); }
Tensor Tensor::sqrt() const { return detail::unary(UnaryOp::Sqrt, *this); }
Tensor Tensor::rsqrt() const { return detail::unary(UnaryOp::Rsqrt, *this); }
Tensor Tensor::sin() const { return detail::unary(UnaryOp::Sin, *this); }
Tensor Tensor::cos() const { return detail::unary(UnaryOp::Cos, *this); }
Tensor Tensor::tanh() const { return detail::unary(UnaryOp::Tanh, *this); }
Tensor Tensor::sigmoid() const { return detail::unary(UnaryOp::Sigmoid, *this); }
Tensor Tensor::relu() const { return detail::unary(UnaryOp::Relu, *this); }
Tensor Tensor::gelu(const std::string& approximate) const {
  return detail::unary(detail::gelu_op(approximate), *this);
}
Tensor Tensor::silu() const { return detail::unary(UnaryOp::Silu, *this); }
Tensor Tensor::sign() const { return detail::unary(UnaryOp::Sign, *this); }
Tensor Tensor::reciprocal() const { return detail::unary(UnaryOp::Reciprocal, *this); }
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
Tensor& Tensor::sqrt_() { return detail::unary_(UnaryOp::Sqrt, *this); }
Tensor& Tensor::rsqrt_() { return detail::unary_(UnaryOp::Rsqrt, *this); }
Tensor& Tensor::sin_() { return detail::unary_(UnaryOp::Sin, *this); }
Tensor& Tensor::cos_() { return detail::unary_(UnaryOp::Cos, *this); }
Tensor& Tensor::tanh_() { return detail::unary_(UnaryOp::Tanh, *this); }
Tensor& Tensor::sigmoid_() { return detail::unary_(UnaryOp::Sigmoid, *this); }
Tensor& Tensor::relu_() { return detail::unary_(UnaryOp::Relu, *this); }
Tensor& Tensor::gelu_(const std::string& approximate) { return detail::unary_(detail::gelu_op(approximate), *this); }
Tensor& Tensor::silu_() { return detail::unary_(UnaryOp::Silu, *this); }
Tensor& Tensor::sign_() { return detail::unary_(UnaryOp::Sign, *this); }
Tensor& Tensor::reciprocal_() { return detail::unary_(UnaryOp::Reciprocal, *this); }
Tensor& Tensor::pow_(Scalar exponent) { return detail::binary_(BinaryOp::Pow, *this, exponent); }
Tensor& Tensor::pow_(const Tensor& exponent) { return detail::binary_(BinaryOp::Pow, *this, exponent); }
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) { return detail::clamp_(*this, min, max); }

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

Tensor Tensor::mm(const Tensor& other) const { return tandem::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return tandem::bmm(*this, other); }
Tensor Tensor::matmul(const Tensor& other) const { return tandem::matmul(*this, other); }
Tensor Tensor::softmax(int64_t dim) const { return tandem::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return tandem::log_softmax(*this, dim); }
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return tandem::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return tandem::gather(*this, dim, index); }
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return tandem::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  return tandem::scatter_add_(*this, dim, index, src);
}

}  // namespace tandem
