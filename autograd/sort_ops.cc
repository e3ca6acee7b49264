// Sorting and the order statistics taken from it. The kernels give the indices; the values that
// carry gradients are gathered from the input at them, so gradients (of any order) flow back
// through gather to the positions each value came from.
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/factory.h"
#include "kernels/sort.h"

namespace tandem {

namespace {

// values, or (when x needs a gradient) the same values gathered from x at `indices` along dim.
Tensor differentiable_values(const Tensor& x, int64_t dim, const Tensor& values, const Tensor& indices, bool squeezed) {
  if (!autograd::needs_grad({&x})) return values;
  if (x.dim() == 0) return x * 1;
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (!squeezed) return gather(x, d, indices);
  return squeeze(gather(x, d, unsqueeze(indices, d)), d);
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  auto [values, indices] = kernels::sort(x, dim, descending);
  return {differentiable_values(x, dim, values, indices, false), indices};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return std::get<1>(kernels::sort(x, dim, descending)); }

Tensor msort(const Tensor& x) { return std::get<0>(sort(x, 0)); }

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  auto [values, indices] = kernels::topk(x, k, dim, largest);
  return {differentiable_values(x, dim, values, indices, false), indices};
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  auto [values, indices] = kernels::kthvalue(x, k, dim, keepdim);
  return {differentiable_values(x, dim, values, indices, !keepdim), indices};
}

std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  auto [values, indices] = kernels::median(x, dim, keepdim);
  return {differentiable_values(x, dim, values, indices, !keepdim), indices};
}

std::tuple<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim) {
  auto [values, indices] = kernels::median(x, dim, keepdim, true);
  return {differentiable_values(x, dim, values, indices, !keepdim), indices};
}

namespace {

// The median of no elements: NaN for floating dtypes, as PyTorch's; integers have no NaN.
Tensor empty_median(const Tensor& x, const char* op) {
  TD_CHECK(is_floating(x.dtype()), op, ": the input ", shape_str(x.sizes()), " of dtype ", x.dtype(),
           " has no elements");
  return full({}, std::numeric_limits<double>::quiet_NaN(), x.options());
}

}  // namespace

Tensor median(const Tensor& x) {
  kernels::check_defined(x, "median", "input");
  if (x.numel() == 0) return empty_median(x, "median");
  return std::get<0>(median(reshape(x, {-1}), 0));
}

Tensor nanmedian(const Tensor& x) {
  kernels::check_defined(x, "nanmedian", "input");
  if (x.numel() == 0) return empty_median(x, "nanmedian");
  return std::get<0>(nanmedian(reshape(x, {-1}), 0));
}

std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  auto [values, indices] = kernels::cummax(x, dim);
  return {differentiable_values(x, dim, values, indices, false), indices};
}

std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  auto [values, indices] = kernels::cummin(x, dim);
  return {differentiable_values(x, dim, values, indices, false), indices};
}

namespace {

// flip(logcumsumexp(flip(z))) along d: the log-sum-exp of each element and those after it.
Tensor reverse_logcumsumexp(const Tensor& z, int64_t d) { return flip(logcumsumexp(flip(z, {d}), d), {d}); }

}  // namespace

Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  Tensor y = kernels::logcumsumexp(x, dim);
  if (!autograd::needs_grad({&x})) return y;
  const int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "logcumsumexp");
  SavedTensor sx(x, false), sy(y, true);
  autograd::record("LogcumsumexpBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor xs = sx.unpack("LogcumsumexpBackward0"), ys = sy.unpack("LogcumsumexpBackward0");
    if (xs.dim() == 0) return {g[0]};
    // dy_i/dx_j = exp(x_j - y_i) for j <= i; summed against g in log space, the positive and the
    // negative parts of g apart, so no exp overflows. An element of the other sign weighs half the
    // dtype's lowest value there, set by where: its exp is 0, and unlike a log of 0 (-inf) it keeps
    // the second derivative finite (-inf - -inf would be NaN).
    const double nothing = -0.5 * kernels::largest_finite(xs.dtype());
    const auto part = [&](const Tensor& positive, const Tensor& magnitude) {
      const Tensor log_weight = where(positive, log(where(positive, magnitude, 1)), nothing);
      return exp(xs + reverse_logcumsumexp(log_weight - ys, d));
    };
    return {part(g[0] > 0, g[0]) - part(g[0] < 0, -g[0])};
  });
  return y;
}

}  // namespace tandem
