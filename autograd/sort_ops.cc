// Sorting and the order statistics taken from it. The kernels give the indices; the values that
// carry gradients are gathered from the input at them, so gradients (of any order) flow back
// through gather to the positions each value came from.
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "autograd/grad_mode.h"
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

namespace tandem {

namespace {

// quantile and nanquantile: x's sorted values along dim (every element when dim is unset), the
// ranks q (n - 1) in them, interpolated between the values below and above; PyTorch's rules.
Tensor quantile_of(const Tensor& x, const Tensor& q_in, std::optional<int64_t> dim, bool keepdim,
                   const std::string& interpolation, bool ignore_nan, const char* op) {
  kernels::check_defined(x, op, "input");
  kernels::check_defined(q_in, op, "q");
  TD_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, op, "() input tensor must be either float or double dtype, ",
           "got ", x.dtype());
  TD_CHECK(x.numel() > 0, op, "() input tensor must be non-empty");
  TD_CHECK(q_in.dim() <= 1, op, "() q must be a scalar or 1D tensor, got shape ", shape_str(q_in.sizes()));
  TD_CHECK(q_in.dtype() == x.dtype(), op, "() q tensor must be same dtype as the input tensor, got ", q_in.dtype(),
           " and ", x.dtype());
  TD_CHECK(interpolation == "linear" || interpolation == "lower" || interpolation == "higher" ||
               interpolation == "midpoint" || interpolation == "nearest",
           op, "() interpolation must be one of linear, lower, higher, midpoint or nearest, but got ", interpolation);
  kernels::common_device(op, {&x, &q_in});
  {
    NoGradGuard no_grad;
    TD_CHECK(q_in.numel() == 0 || all(logical_and(q_in >= 0, q_in <= 1)).item<bool>(), op,
             "() q values must be in the range [0, 1]");
  }
  const int64_t d = dim ? (x.dim() == 0 ? 0 : wrap_dim(*dim, x.dim(), op)) : 0;
  const Tensor in = dim ? (x.dim() == 0 ? reshape(x, {1}) : x) : reshape(x, {-1});
  // The sorted values with dim last; NaN sorts last.
  const Tensor sorted = movedim(std::get<0>(sort(in, d)), d, -1);
  const int64_t n = sorted.sizes().back();
  const Tensor q = reshape(q_in, {-1}).detach();
  Tensor ranks;
  {
    NoGradGuard no_grad;
    const Tensor has_nan = unsqueeze(any(isnan(sorted), {-1}), -1);
    if (ignore_nan) {
      // Among the numbers only; a row of NaN alone takes its last place (NaN).
      const Tensor counted = unsqueeze(sum(logical_not(isnan(sorted)), {-1}), -1).to(x.dtype());
      ranks = where(counted == 0, static_cast<double>(n - 1), q * (counted - 1));
    } else {
      // A row with a NaN gives NaN: its last place.
      ranks = where(has_nan, static_cast<double>(n - 1), q * static_cast<double>(n - 1));
    }
    if (interpolation == "lower") ranks = floor(ranks);
    if (interpolation == "higher") ranks = ceil(ranks);
    if (interpolation == "nearest") ranks = round(ranks);
  }
  const Tensor below_at = floor(ranks).to(kInt64), above_at = ceil(ranks).to(kInt64);
  const Tensor below = gather(sorted, -1, below_at), above = gather(sorted, -1, above_at);
  Tensor values;
  if (interpolation == "midpoint") {
    values = where(below_at == above_at, below, (below + above) * 0.5);
  } else if (interpolation == "linear") {
    values = lerp(below, above, ranks - floor(ranks));
  } else {
    values = below;  // ranks already whole
  }
  // [..., k] -> [k, ...], then the reduced dims back as 1 where asked.
  values = movedim(values, -1, 0);
  if (keepdim) {
    if (dim) {
      if (x.dim() > 0) values = unsqueeze(values, d + 1);
    } else {
      Shape kept{q.numel()};
      kept.insert(kept.end(), static_cast<size_t>(x.dim()), 1);
      values = reshape(values, kept);
    }
  }
  return q_in.dim() == 0 ? squeeze(values, 0) : values;
}

Tensor scalar_q(double q, const Tensor& x, const char* op) {
  kernels::check_defined(x, op, "input");
  TD_CHECK(q >= 0 && q <= 1, op, "() q must be in the range [0, 1] but got ", q);
  return full({}, q, x.options());
}

}  // namespace

Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                const std::string& interpolation) {
  return quantile_of(x, q, dim, keepdim, interpolation, false, "quantile");
}

Tensor quantile(const Tensor& x, double q, std::optional<int64_t> dim, bool keepdim, const std::string& interpolation) {
  return quantile_of(x, scalar_q(q, x, "quantile"), dim, keepdim, interpolation, false, "quantile");
}

Tensor nanquantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   const std::string& interpolation) {
  return quantile_of(x, q, dim, keepdim, interpolation, true, "nanquantile");
}

Tensor nanquantile(const Tensor& x, double q, std::optional<int64_t> dim, bool keepdim,
                   const std::string& interpolation) {
  return quantile_of(x, scalar_q(q, x, "nanquantile"), dim, keepdim, interpolation, true, "nanquantile");
}

}  // namespace tandem
