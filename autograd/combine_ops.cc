// More compositions: splitting at sections, products of whole tensors (cross, kron, tensordot),
// index sets (tril/triu_indices, combinations, cartesian_prod), block_diag, covariance and
// correlation, the trapezoid rule, a few element-wise formulas, membership (isin), consecutive
// runs, writes of one tensor into a view of a copy of another (the *_scatter forms,
// masked_scatter), and indexing by integer or bool tensors (index, index_put). Autograd
// differentiates them through their parts.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/factory.h"

namespace tandem {

namespace {

Tensor long_tensor(const std::vector<int64_t>& values, Device device) {
  return tensor(values, TensorOptions(kInt64)).to(device);
}

}  // namespace

// ---- splitting ----

std::vector<Tensor> tensor_split(const Tensor& x, int64_t sections, int64_t dim) {
  kernels::check_defined(x, "tensor_split", "input");
  TD_CHECK(x.dim() >= 1, "tensor_split: expected a tensor of at least 1 dim, got a 0-dim tensor");
  TD_CHECK(sections > 0, "tensor_split: sections must be positive, got ", sections);
  const int64_t d = wrap_dim(dim, x.dim(), "tensor_split"), n = x.size(d);
  // The first n % sections parts take one more element than the rest.
  std::vector<Tensor> parts;
  for (int64_t k = 0, start = 0; k < sections; ++k) {
    const int64_t length = n / sections + (k < n % sections ? 1 : 0);
    parts.push_back(narrow(x, d, start, length));
    start += length;
  }
  return parts;
}

std::vector<Tensor> tensor_split(const Tensor& x, const std::vector<int64_t>& indices, int64_t dim) {
  kernels::check_defined(x, "tensor_split", "input");
  TD_CHECK(x.dim() >= 1, "tensor_split: expected a tensor of at least 1 dim, got a 0-dim tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "tensor_split"), n = x.size(d);
  // Part k is x[cut[k-1]:cut[k]] along dim, each cut clamped to the dim as Python slices clamp
  // (a cut below the one before it gives an empty part, and the next part starts there).
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t cut : indices) {
    cut = std::clamp(cut < 0 ? cut + n : cut, int64_t{0}, n);
    parts.push_back(narrow(x, d, start, std::max<int64_t>(cut - start, 0)));
    start = cut;
  }
  parts.push_back(narrow(x, d, start, n - start));
  return parts;
}

namespace {

std::vector<Tensor> split_evenly(const Tensor& x, int64_t sections, int64_t dim, const char* op) {
  TD_CHECK(sections > 0 && x.size(dim) % sections == 0, op, ": dim ", dim, " of size ", x.size(dim),
           " does not split into ", sections, " equal parts");
  return tensor_split(x, sections, dim);
}

}  // namespace

std::vector<Tensor> hsplit(const Tensor& x, int64_t sections) {
  kernels::check_defined(x, "hsplit", "input");
  TD_CHECK(x.dim() >= 1, "hsplit: expected a tensor of at least 1 dim, got a 0-dim tensor");
  return split_evenly(x, sections, x.dim() == 1 ? 0 : 1, "hsplit");
}

std::vector<Tensor> vsplit(const Tensor& x, int64_t sections) {
  kernels::check_defined(x, "vsplit", "input");
  TD_CHECK(x.dim() >= 2, "vsplit: expected a tensor of at least 2 dims, got shape ", shape_str(x.sizes()));
  return split_evenly(x, sections, 0, "vsplit");
}

std::vector<Tensor> dsplit(const Tensor& x, int64_t sections) {
  kernels::check_defined(x, "dsplit", "input");
  TD_CHECK(x.dim() >= 3, "dsplit: expected a tensor of at least 3 dims, got shape ", shape_str(x.sizes()));
  return split_evenly(x, sections, 2, "dsplit");
}

// ---- products of whole tensors ----

Tensor cross(const Tensor& a, const Tensor& b, int64_t dim) {
  kernels::check_defined(a, "cross", "input");
  kernels::check_defined(b, "cross", "other");
  TD_CHECK(a.dim() == b.dim() && a.dim() >= 1, "cross: inputs must have one number of dims (at least 1), got ",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), "cross");
  const int64_t d = wrap_dim(dim, a.dim(), "cross");
  TD_CHECK(a.size(d) == 3 && b.size(d) == 3, "cross: dim ", dim, " must have size 3 in both inputs, got ",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  const Tensor x = expand(a, shape), y = expand(b, shape);
  auto at = [&](const Tensor& t, int64_t k) { return narrow(t, d, k, 1); };
  return cat({at(x, 1) * at(y, 2) - at(x, 2) * at(y, 1), at(x, 2) * at(y, 0) - at(x, 0) * at(y, 2),
              at(x, 0) * at(y, 1) - at(x, 1) * at(y, 0)},
             d);
}

Tensor kron(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "kron", "input");
  kernels::check_defined(b, "kron", "other");
  // Both seen with one number of dims; a's dim k as [n_k, 1] and b's as [1, m_k], multiplied to
  // [n_k, m_k] and merged: element (i, j) of each pair lands at i * m_k + j.
  const int64_t ndim = std::max(a.dim(), b.dim());
  Shape a_pairs, b_pairs, merged;
  for (int64_t k = 0; k < ndim; ++k) {
    const int64_t n = k < ndim - a.dim() ? 1 : a.size(k - (ndim - a.dim()));
    const int64_t m = k < ndim - b.dim() ? 1 : b.size(k - (ndim - b.dim()));
    a_pairs.insert(a_pairs.end(), {n, 1});
    b_pairs.insert(b_pairs.end(), {1, m});
    merged.push_back(n * m);
  }
  return reshape(mul(reshape(a, a_pairs), reshape(b, b_pairs)), merged);
}

Tensor tensordot(const Tensor& a, const Tensor& b, IntList dims_a, IntList dims_b) {
  kernels::check_defined(a, "tensordot", "input");
  kernels::check_defined(b, "tensordot", "other");
  TD_CHECK(dims_a.size() == dims_b.size(), "tensordot: ", dims_a.size(), " dims of the first tensor for ",
           dims_b.size(), " of the second");
  std::vector<bool> a_contracted(static_cast<size_t>(a.dim()), false),
      b_contracted(static_cast<size_t>(b.dim()), false);
  Shape a_order, b_order, out_shape;
  int64_t summed = 1;
  for (size_t k = 0; k < dims_a.size(); ++k) {
    const int64_t da = wrap_dim(dims_a[k], a.dim(), "tensordot"), db = wrap_dim(dims_b[k], b.dim(), "tensordot");
    TD_CHECK(!a_contracted[da] && !b_contracted[db], "tensordot: a dim is contracted twice");
    TD_CHECK(a.size(da) == b.size(db), "tensordot: contracted dims of sizes ", a.size(da), " and ", b.size(db));
    a_contracted[da] = b_contracted[db] = true;
    summed *= a.size(da);
  }
  int64_t a_free = 1, b_free = 1;
  for (int64_t k = 0; k < a.dim(); ++k) {
    if (a_contracted[k]) continue;
    a_order.push_back(k);
    out_shape.push_back(a.size(k));
    a_free *= a.size(k);
  }
  for (size_t k = 0; k < dims_a.size(); ++k) a_order.push_back(wrap_dim(dims_a[k], a.dim(), "tensordot"));
  for (size_t k = 0; k < dims_b.size(); ++k) b_order.push_back(wrap_dim(dims_b[k], b.dim(), "tensordot"));
  for (int64_t k = 0; k < b.dim(); ++k) {
    if (b_contracted[k]) continue;
    b_order.push_back(k);
    out_shape.push_back(b.size(k));
    b_free *= b.size(k);
  }
  const Tensor left = reshape(permute(a, a_order), {a_free, summed});
  const Tensor right = reshape(permute(b, b_order), {summed, b_free});
  return reshape(matmul(left, right), out_shape);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  kernels::check_defined(a, "tensordot", "input");
  kernels::check_defined(b, "tensordot", "other");
  TD_CHECK(dims >= 0 && dims <= a.dim() && dims <= b.dim(), "tensordot: cannot contract ", dims, " dims of tensors of ",
           a.dim(), " and ", b.dim(), " dims");
  Shape dims_a, dims_b;
  for (int64_t k = 0; k < dims; ++k) {
    dims_a.push_back(a.dim() - dims + k);
    dims_b.push_back(k);
  }
  return tensordot(a, b, dims_a, dims_b);
}

// ---- index sets ----

namespace {

Tensor triangle_indices(int64_t rows, int64_t cols, int64_t offset, bool upper, TensorOptions options, const char* op) {
  TD_CHECK(rows >= 0 && cols >= 0, op, ": row and col must be non-negative, got ", rows, " and ", cols);
  std::vector<int64_t> r, c;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      if (upper ? j - i >= offset : j - i <= offset) {
        r.push_back(i);
        c.push_back(j);
      }
    }
  }
  r.insert(r.end(), c.begin(), c.end());
  const Tensor out = reshape(long_tensor(r, options.device()), {2, static_cast<int64_t>(c.size())});
  const DType dtype = options.dtype_or(kInt64);
  return dtype == kInt64 ? out : out.to(dtype);
}

}  // namespace

Tensor tril_indices(int64_t row, int64_t col, int64_t offset, TensorOptions options) {
  return triangle_indices(row, col, offset, false, options, "tril_indices");
}

Tensor triu_indices(int64_t row, int64_t col, int64_t offset, TensorOptions options) {
  return triangle_indices(row, col, offset, true, options, "triu_indices");
}

Tensor combinations(const Tensor& x, int64_t r, bool with_replacement) {
  kernels::check_defined(x, "combinations", "input");
  TD_CHECK(x.dim() == 1, "combinations: expected a 1-D tensor, got shape ", shape_str(x.sizes()));
  TD_CHECK(r >= 0, "combinations: r must be non-negative, got ", r);
  const int64_t n = x.size(0);
  if (r == 0) return empty({0}, x.options());
  // The index tuples in lexicographic order (as itertools.combinations), one column per place.
  std::vector<std::vector<int64_t>> columns(static_cast<size_t>(r));
  std::vector<int64_t> pick(static_cast<size_t>(r));
  const auto visit = [&](auto&& self, int64_t place, int64_t from) -> void {
    if (place == r) {
      for (int64_t k = 0; k < r; ++k) columns[k].push_back(pick[k]);
      return;
    }
    for (int64_t i = from; i < n; ++i) {
      pick[place] = i;
      self(self, place + 1, with_replacement ? i : i + 1);
    }
  };
  visit(visit, 0, 0);
  std::vector<Tensor> parts;
  for (const auto& column : columns) parts.push_back(index_select(x, 0, long_tensor(column, x.device())));
  return stack(parts, 1);
}

Tensor cartesian_prod(const std::vector<Tensor>& tensors) {
  TD_CHECK(!tensors.empty(), "cartesian_prod: expected a non-empty list of tensors");
  for (const Tensor& t : tensors) {
    kernels::check_defined(t, "cartesian_prod", "tensors");
    TD_CHECK(t.dim() == 1, "cartesian_prod: expected 1-D tensors, got shape ", shape_str(t.sizes()));
  }
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> columns;
  for (const Tensor& grid : meshgrid(tensors, "ij")) columns.push_back(reshape(grid, {-1}));
  return stack(columns, 1);
}

Tensor block_diag(const std::vector<Tensor>& tensors) {
  // Each block (0-D: 1 x 1, 1-D: one row) between zeros to its left and right, the rows stacked.
  std::vector<Tensor> blocks;
  int64_t width = 0;
  for (const Tensor& t : tensors) {
    kernels::check_defined(t, "block_diag", "tensors");
    TD_CHECK(t.dim() <= 2, "block_diag: expected tensors of at most 2 dims, got shape ", shape_str(t.sizes()));
    blocks.push_back(t.dim() == 0 ? reshape(t, {1, 1}) : t.dim() == 1 ? unsqueeze(t, 0) : t);
    width += blocks.back().size(1);
  }
  if (blocks.empty()) return empty({1, 0});
  DType dtype = blocks[0].dtype();
  for (const Tensor& b : blocks) dtype = promote_types(dtype, b.dtype());
  std::vector<Tensor> rows;
  int64_t left = 0;
  for (const Tensor& b : blocks) {
    const TensorOptions options = TensorOptions(dtype).device(b.device());
    const int64_t h = b.size(0), w = b.size(1);
    rows.push_back(cat({zeros({h, left}, options), b.to(dtype), zeros({h, width - left - w}, options)}, 1));
    left += w;
  }
  return cat(rows, 0);
}

// ---- covariance, correlation, integration ----

Tensor cov(const Tensor& x, int64_t correction, const Tensor& fweights, const Tensor& aweights) {
  kernels::check_defined(x, "cov", "input");
  TD_CHECK(x.dim() <= 2, "cov: expected a tensor of at most 2 dims (variables by observations), got shape ",
           shape_str(x.sizes()));
  const Tensor obs = x.dim() < 2 ? reshape(x, {1, -1}) : x;
  const Tensor values = is_floating(obs.dtype()) ? obs : obs.to(kDefaultFloat);
  const int64_t n = values.size(1);
  Tensor w;
  for (const auto& [weights, name] : {std::pair{&fweights, "fweights"}, std::pair{&aweights, "aweights"}}) {
    if (!weights->defined()) continue;
    TD_CHECK(weights->dim() <= 1 && weights->numel() == n, "cov: ", name,
             " must be 1-D with one weight per observation (", n, "), got shape ", shape_str(weights->sizes()));
    TD_CHECK(name == std::string("aweights") || is_integral(weights->dtype(), false), "cov: fweights must be integers");
    TD_CHECK(!any(lt(*weights, 0)).item<bool>(), "cov: ", name, " must be non-negative");
    const Tensor as_values = weights->to(values.dtype()).reshape({n});
    w = w.defined() ? w * as_values : as_values;
  }
  // The weighted mean, then the sum of weighted products of deviations over the corrected weight sum.
  const Tensor weight_sum = w.defined() ? sum(w) : full({}, static_cast<double>(n), values.options());
  const Tensor mean_ = w.defined() ? sum(values * w, {1}, true) / weight_sum : mean(values, {1}, true);
  Tensor norm = weight_sum;
  if (correction != 0) {
    norm = aweights.defined() ? weight_sum - correction * sum(w * aweights.to(values.dtype()).reshape({n})) / weight_sum
                              : weight_sum - static_cast<double>(correction);
  }
  norm = clamp(norm, 0, std::nullopt);  // PyTorch's: too few observations give inf or NaN, not a sign flip
  const Tensor deviation = values - mean_;
  const Tensor weighted = w.defined() ? deviation * w : deviation;
  const Tensor c = matmul(weighted, deviation.t()) / norm;
  return x.dim() < 2 ? reshape(c, {}) : c;
}

Tensor corrcoef(const Tensor& x) {
  kernels::check_defined(x, "corrcoef", "input");
  const Tensor c = cov(x);
  if (c.dim() == 0) return c / c;
  const Tensor d = sqrt(diagonal(c, 0, 0, 1));
  return clamp(c / unsqueeze(d, 1) / unsqueeze(d, 0), -1, 1);
}

namespace {

// y as the trapezoid rules integrate it: floating (integers give float32), at least 1-D; its dim
// and length.
std::tuple<Tensor, int64_t, int64_t> samples(const Tensor& y, int64_t dim, const char* op) {
  kernels::check_defined(y, op, "y");
  TD_CHECK(y.dim() >= 1, op, ": y must have at least 1 dim, got a 0-dim tensor");
  const int64_t d = wrap_dim(dim, y.dim(), op);
  return {is_floating(y.dtype()) ? y : y.to(kDefaultFloat), d, y.size(d)};
}

// The spacing between the n samples of v along d given by x: one point per sample (1-D), or a
// tensor that broadcasts against v, missing leading dims counting as 1.
Tensor spacing_of(const Tensor& x, const Tensor& v, int64_t d, int64_t n, const char* op) {
  kernels::check_defined(x, op, "x");
  TD_CHECK(x.dim() != 1 || x.size(0) == n, op, ": there must be one x value for each sample point; x has ",
           x.size(0), " for ", n);
  TD_CHECK(x.dim() <= v.dim(), op, ": x ", shape_str(x.sizes()), " has more dims than y ", shape_str(v.sizes()));
  if (x.dim() == 1) {
    Shape along(static_cast<size_t>(v.dim()), 1);
    along[d] = n - 1;
    return reshape(diff(x), along);
  }
  Shape padded(static_cast<size_t>(v.dim() - x.dim()), 1);
  padded.insert(padded.end(), x.sizes().begin(), x.sizes().end());
  return diff(reshape(x, padded), 1, d);
}

// The sums of neighbouring samples, one per interval.
Tensor interval_sums(const Tensor& v, int64_t d, int64_t n) {
  return add(narrow(v, d, 1, n - 1), narrow(v, d, 0, n - 1));
}

}  // namespace

Tensor trapezoid(const Tensor& y, double dx, int64_t dim) {
  const auto [v, d, n] = samples(y, dim, "trapezoid");
  if (n <= 1) return sum(mul(v, 0), {d});
  return mul(sum(interval_sums(v, d, n), {d}), dx / 2);
}

Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const auto [v, d, n] = samples(y, dim, "trapezoid");
  if (n <= 1) {
    spacing_of(x, v, d, 1, "trapezoid");  // its checks
    return sum(mul(v, 0), {d});
  }
  return sum(mul(interval_sums(v, d, n), spacing_of(x, v, d, n, "trapezoid")), {d}) / 2;
}

Tensor cumulative_trapezoid(const Tensor& y, double dx, int64_t dim) {
  const auto [v, d, n] = samples(y, dim, "cumulative_trapezoid");
  if (n <= 1) return narrow(mul(v, 0), d, 0, 0);
  return cumsum(mul(interval_sums(v, d, n), dx / 2), d);
}

Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const auto [v, d, n] = samples(y, dim, "cumulative_trapezoid");
  if (n <= 1) {
    spacing_of(x, v, d, 1, "cumulative_trapezoid");
    return narrow(mul(v, 0), d, 0, 0);
  }
  return cumsum(mul(interval_sums(v, d, n), spacing_of(x, v, d, n, "cumulative_trapezoid")), d) / 2;
}

Tensor histc(const Tensor& x, int64_t bins, double min, double max) {
  kernels::check_defined(x, "histc", "input");
  TD_CHECK(is_floating(x.dtype()), "torch.histc: input tensor must be floating, got ", x.dtype());
  TD_CHECK(bins > 0, "torch.histc: bins must be > 0, but got ", bins);
  TD_CHECK(!(min > max), "torch.histc: max must be larger than min, got min ", min, " and max ", max);
  NoGradGuard no_grad;
  double lo = min, hi = max;
  if (lo == hi && x.numel() > 0) {
    lo = amin(x).item<double>();
    hi = amax(x).item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TD_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  // Each element within [lo, hi] counts in bin floor((x - lo) bins / (hi - lo)); hi itself in the last.
  const Tensor values = reshape(x, {-1}).to(kFloat64);
  const Tensor inside = logical_and(values >= lo, values <= hi);
  const Tensor taken = masked_select(values, inside);
  const Tensor at = clamp(floor((taken - lo) * (static_cast<double>(bins) / (hi - lo))), 0, bins - 1).to(kInt64);
  return bincount(at, Tensor(), bins).to(x.dtype());
}

namespace {

// histogram's counting, given its edges (1-D, increasing): each element's bin by binary search, its
// right edge belonging to the last bin, the elements outside (and NaN) left out.
std::tuple<Tensor, Tensor> histogram_in(const Tensor& x, const Tensor& edges, const Tensor& weight, bool density) {
  const int64_t bins = edges.numel() - 1;
  const Tensor values = reshape(x, {-1});
  const Tensor inside = logical_and(ge(values, select(edges, 0, 0)), le(values, select(edges, 0, bins)));
  const Tensor taken = masked_select(values, inside);
  const Tensor at = (searchsorted(edges, taken, true) - 1).clamp_max(bins - 1);
  const Tensor counted = weight.defined() ? masked_select(reshape(weight, {-1}), inside) : ones_like(taken);
  Tensor hist = zeros({bins}, x.options()).index_add(0, at, counted);
  // PyTorch's two divisions, by the total and then by each bin's width.
  if (density) hist = hist / hist.sum() / (narrow(edges, 0, 1, bins) - narrow(edges, 0, 0, bins));
  return {hist, edges};
}

// `bins` equal bins' edges as PyTorch's histogram makes them: in the dtype T, the step
// (hi - lo) / bins, each edge one fused multiply-add from the nearer end.
template <typename T>
std::vector<double> equal_edges(double lo, double hi, int64_t bins) {
  const T start = static_cast<T>(lo), end = static_cast<T>(hi);
  const T step = (end - start) / static_cast<T>(bins);
  std::vector<double> edges(bins + 1);
  for (int64_t i = 0; i <= bins; ++i) {
    edges[i] = i < (bins + 1) / 2 ? std::fma(step, static_cast<T>(i), start)
                                  : std::fma(-step, static_cast<T>(bins - i), end);
  }
  return edges;
}

// PyTorch computes histograms in float32 and float64 only: a 16-bit count would stall (256 + 1
// is 256 in bfloat16).
void check_histogram(const Tensor& x, const Tensor& weight) {
  kernels::check_defined(x, "histogram", "input");
  TD_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, "histogram: input must be float32 or float64, got ",
           x.dtype());
  TD_CHECK(!weight.defined() || (weight.numel() == x.numel() && weight.dtype() == x.dtype()),
           "histogram: weight must have the input's ", x.numel(), " elements and dtype ", x.dtype(), ", got ",
           weight.defined() ? shape_str(weight.sizes()) : "", " ", weight.defined() ? dtype_name(weight.dtype()) : "");
}

}  // namespace

std::tuple<Tensor, Tensor> histogram(const Tensor& x, int64_t bins, std::optional<std::pair<double, double>> range,
                                     const Tensor& weight, bool density) {
  check_histogram(x, weight);
  TD_CHECK(bins > 0, "histogram: bins must be > 0, got ", bins);
  NoGradGuard no_grad;
  double lo = 0, hi = 1;
  if (range) {
    std::tie(lo, hi) = *range;
  } else if (x.numel() > 0) {
    lo = amin(x).item<double>();
    hi = amax(x).item<double>();
  }
  TD_CHECK(std::isfinite(lo) && std::isfinite(hi), "histogram: the range [", lo, ", ", hi, "] is not finite");
  TD_CHECK(lo <= hi, "histogram: min should not exceed max, got min ", lo, " and max ", hi);
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  const std::vector<double> edges =
      x.dtype() == kFloat32 ? equal_edges<float>(lo, hi, bins) : equal_edges<double>(lo, hi, bins);
  return histogram_in(x.detach(), tensor(edges, kFloat64).to(x.device(), x.dtype()), weight, density);
}

std::tuple<Tensor, Tensor> histogram(const Tensor& x, const Tensor& bin_edges, const Tensor& weight, bool density) {
  check_histogram(x, weight);
  kernels::check_defined(bin_edges, "histogram", "bins");
  TD_CHECK(bin_edges.dim() == 1 && bin_edges.numel() >= 2 && bin_edges.dtype() == x.dtype(),
           "histogram: bins must be a 1-D tensor of at least two edges of the input's dtype, got ",
           shape_str(bin_edges.sizes()), " ", bin_edges.dtype());
  NoGradGuard no_grad;
  const Tensor edges = bin_edges.detach().to(x.device()).contiguous();
  TD_CHECK(!any(isnan(edges)).item<bool>(), "histogram: bin edges must not be NaN");
  TD_CHECK(all(le(narrow(edges, 0, 0, edges.numel() - 1), narrow(edges, 0, 1, edges.numel() - 1))).item<bool>(),
           "histogram: bin edges must not decrease");
  return histogram_in(x.detach(), edges.clone(), weight, density);
}

namespace {

// PyTorch's checks of histogramdd's input and weight; the number of dimensions D.
int64_t check_histogramdd(const Tensor& x, const Tensor& weight) {
  kernels::check_defined(x, "histogramdd", "input");
  TD_CHECK(x.dim() >= 2, "histogramdd: input should have at least 2 dimensions [..., D], got shape ",
           shape_str(x.sizes()));
  TD_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, "histogramdd: input must be float32 or float64, got ",
           x.dtype());
  if (weight.defined()) {
    const Shape rows(x.sizes().begin(), x.sizes().end() - 1);
    TD_CHECK(weight.sizes() == rows && weight.dtype() == x.dtype(),
             "histogramdd: weight must have the input's shape less its last dimension, ", shape_str(rows),
             ", and its dtype ", x.dtype(), ", got ", shape_str(weight.sizes()), " ", weight.dtype());
  }
  return x.size(-1);
}

// histogramdd's counting, given each dimension's edges: each row's bin along each dimension by binary
// search (a right edge in the last bin), the bins' flat index counted by index_add; rows outside any
// dimension's edges, or NaN there, left out.
std::tuple<Tensor, std::vector<Tensor>> histogramdd_in(const Tensor& x, std::vector<Tensor> edges, const Tensor& weight,
                                                       bool density) {
  const int64_t dims = x.size(-1);
  if (dims == 0) {  // rows of no coordinates: PyTorch's 0-dim hist of 0 (NaN with density) and no edges
    const Tensor none = zeros({}, x.options());
    return {density ? none / none.sum() : none, {}};
  }
  const Tensor rows = reshape(x, {-1, dims});
  Tensor inside = ones({rows.size(0)}, TensorOptions(kBool).device(x.device()));
  Tensor flat = zeros({rows.size(0)}, TensorOptions(kInt64).device(x.device()));
  Shape bins;
  for (int64_t d = 0; d < dims; ++d) {
    const Tensor column = select(rows, 1, d), e = edges[d];
    const int64_t count = e.numel() - 1;
    bins.push_back(count);
    inside = logical_and(inside, logical_and(ge(column, select(e, 0, 0)), le(column, select(e, 0, count))));
    flat = add(mul(flat, count), (searchsorted(e, column, true) - 1).clamp(0, count - 1));
  }
  const Tensor taken = masked_select(flat, inside);
  const Tensor counted =
      weight.defined() ? masked_select(reshape(weight, {-1}), inside) : ones(taken.sizes(), x.options());
  Tensor hist = zeros({numel_of(bins)}, x.options()).index_add(0, taken, counted).view(bins);
  if (density) {  // as histogram's: by the total, then by each dimension's widths
    hist = hist / hist.sum();
    for (int64_t d = 0; d < dims; ++d) {
      Shape along(static_cast<size_t>(dims), 1);
      along[static_cast<size_t>(d)] = bins[static_cast<size_t>(d)];
      const Tensor widths = narrow(edges[d], 0, 1, bins[d]) - narrow(edges[d], 0, 0, bins[d]);
      hist = hist / widths.view(along);
    }
  }
  return {hist, std::move(edges)};
}

}  // namespace

std::tuple<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, IntList bins,
                                                    std::optional<std::vector<double>> range, const Tensor& weight,
                                                    bool density) {
  const int64_t dims = check_histogramdd(x, weight);
  TD_CHECK(bins.size() == 1 || static_cast<int64_t>(bins.size()) == dims, "histogramdd: ", bins.size(),
           " bin counts for the ", dims, " dimensions of the input's rows (the size of its last dimension)");
  TD_CHECK(!range || static_cast<int64_t>(range->size()) == 2 * dims, "histogramdd: for a ", dims,
           "-dimensional histogram range should have ", 2 * dims, " elements, got ", range ? range->size() : 0);
  NoGradGuard no_grad;
  const Tensor rows = dims == 0 ? x.detach() : reshape(x.detach(), {-1, dims});
  std::vector<Tensor> edges;
  for (int64_t d = 0; d < dims; ++d) {
    const int64_t count = bins[bins.size() == 1 ? 0 : static_cast<size_t>(d)];
    TD_CHECK(count > 0, "histogramdd: bins must be > 0, got ", count, " for dimension ", d);
    double lo = 0, hi = 1;
    if (range) {
      lo = (*range)[2 * d];
      hi = (*range)[2 * d + 1];
    } else if (rows.size(0) > 0) {
      lo = amin(select(rows, 1, d)).item<double>();
      hi = amax(select(rows, 1, d)).item<double>();
    }
    TD_CHECK(std::isfinite(lo) && std::isfinite(hi), "histogramdd: dimension ", d, "'s range [", lo, ", ", hi,
             "] is not finite");
    TD_CHECK(lo <= hi, "histogramdd: min should not exceed max, got min ", lo, " and max ", hi, " for dimension ", d);
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    const std::vector<double> e =
        x.dtype() == kFloat32 ? equal_edges<float>(lo, hi, count) : equal_edges<double>(lo, hi, count);
    edges.push_back(tensor(e, kFloat64).to(x.device(), x.dtype()));
  }
  return histogramdd_in(x.detach(), std::move(edges), weight.defined() ? weight.detach() : weight, density);
}

std::tuple<Tensor, std::vector<Tensor>> histogramdd(const Tensor& x, const std::vector<Tensor>& bin_edges,
                                                    const Tensor& weight, bool density) {
  const int64_t dims = check_histogramdd(x, weight);
  TD_CHECK(static_cast<int64_t>(bin_edges.size()) == dims, "histogramdd: ", bin_edges.size(),
           " tensors of bin edges for the ", dims, " dimensions of the input's rows (the size of its last dimension)");
  NoGradGuard no_grad;
  std::vector<Tensor> edges;
  for (int64_t d = 0; d < dims; ++d) {
    const Tensor& given = bin_edges[static_cast<size_t>(d)];
    kernels::check_defined(given, "histogramdd", "bins");
    TD_CHECK(given.dim() == 1 && given.numel() >= 2 && given.dtype() == x.dtype(), "histogramdd: dimension ", d,
             "'s bins must be a 1-D tensor of at least two edges of the input's dtype, got ", shape_str(given.sizes()),
             " ", given.dtype());
    const Tensor e = given.detach().to(x.device()).contiguous();
    TD_CHECK(!any(isnan(e)).item<bool>(), "histogramdd: dimension ", d, "'s bin edges must not be NaN");
    TD_CHECK(all(le(narrow(e, 0, 0, e.numel() - 1), narrow(e, 0, 1, e.numel() - 1))).item<bool>(),
             "histogramdd: dimension ", d, "'s bin edges must not decrease");
    edges.push_back(e.clone());
  }
  return histogramdd_in(x.detach(), std::move(edges), weight.defined() ? weight.detach() : weight, density);
}

// ---- element-wise formulas ----

Tensor heaviside(const Tensor& x, const Tensor& values) {
  kernels::check_defined(x, "heaviside", "input");
  kernels::check_defined(values, "heaviside", "values");
  TD_CHECK(x.dtype() == values.dtype(), "heaviside: input (", x.dtype(), ") and values (", values.dtype(),
           ") must have one dtype");
  const Tensor step = gt(x.detach(), 0).to(x.dtype());
  return where(eq(x.detach(), 0), values.detach(), step);
}

Tensor angle(const Tensor& x) {
  kernels::check_defined(x, "angle", "input");
  const Tensor v = is_floating(x.dtype()) ? x : x.to(kDefaultFloat);
  Tensor y = where(lt(v.detach(), 0), std::numbers::pi, where(isnan(v.detach()), v.detach(), 0.0));
  if (autograd::needs_grad({&x})) {
    autograd::record("AngleBackward0", {&x}, {&y},
                     [](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {zeros_like(g[0])}; });
  }
  return y;
}

Tensor logaddexp2(const Tensor& a, const Tensor& b) {
  return div(logaddexp(mul(a, std::numbers::ln2), mul(b, std::numbers::ln2)), std::numbers::ln2);
}

Tensor sinc(const Tensor& x) {
  kernels::check_defined(x, "sinc", "input");
  // 16-bit inputs in float32, rounded once, as PyTorch's (pi x rounded to 16 bits loses sin's zeros).
  if (is_16bit_float(x.dtype())) return sinc(x.to(kFloat32)).to(x.dtype());
  // sin(pi x) / (pi x), 1 at 0; x is replaced by 1 there so the branch not taken stays finite.
  const Tensor at_zero = eq(x, 0);
  const Tensor angle = mul(where(at_zero, 1, x), std::numbers::pi);
  return where(at_zero, 1.0, div(sin(angle), angle));
}

Tensor float_power(const Tensor& a, const Tensor& b) { return pow(a.to(kFloat64), b.to(kFloat64)); }

Tensor float_power(const Tensor& a, Scalar b) { return pow(a.to(kFloat64), b.to_double()); }

Tensor isin(const Tensor& elements, const Tensor& test_elements, bool invert) {
  kernels::check_defined(elements, "isin", "elements");
  kernels::check_defined(test_elements, "isin", "test_elements");
  const DType t = result_type(elements, test_elements);
  if (test_elements.numel() == 0) return full(elements.sizes(), invert, TensorOptions(kBool).device(elements.device()));
  // Each element's place in the sorted test elements holds it, or nothing does.
  const Tensor sorted = std::get<0>(sort(reshape(test_elements.detach(), {-1}).to(t)));
  const Tensor e = elements.detach().to(t);
  const Tensor at = clamp(searchsorted(sorted, e), std::nullopt, sorted.numel() - 1);
  const Tensor found = eq(reshape(index_select(sorted, 0, reshape(at, {-1})), e.sizes()), e);
  return invert ? logical_not(found) : found;
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& x, bool return_inverse, bool return_counts) {
  kernels::check_defined(x, "unique_consecutive", "input");
  const Tensor flat = reshape(x.detach(), {-1});
  const int64_t n = flat.numel();
  Tensor starts = ones({n}, TensorOptions(kBool).device(x.device()));
  if (n > 1) {
    starts = cat(
        {ones({1}, TensorOptions(kBool).device(x.device())), ne(narrow(flat, 0, 1, n - 1), narrow(flat, 0, 0, n - 1))});
  }
  const Tensor values = masked_select(flat, starts);
  const Tensor group = sub(cumsum(starts, 0), 1);
  Tensor inverse, counts;
  if (return_inverse) inverse = reshape(group, x.sizes());
  if (return_counts) counts = bincount(group, Tensor(), values.numel());
  return {values, inverse, counts};
}

// ---- one tensor written into a view of a copy of another ----

namespace {

// A copy of x with src written where `place` views it; x's gradient there is zero, src's is the view's.
Tensor scattered_copy(const Tensor& x, const Tensor& src, const std::function<Tensor(const Tensor&)>& place,
                      const char* op) {
  kernels::check_defined(x, op, "input");
  kernels::check_defined(src, op, "src");
  Tensor out = clone(x);
  Tensor view_of_out = place(out);
  TD_CHECK(src.sizes() == view_of_out.sizes(), op, ": src of shape ", shape_str(src.sizes()),
           " does not match the place it goes to, ", shape_str(view_of_out.sizes()));
  copy_(view_of_out, src);
  return out;
}

}  // namespace

Tensor select_scatter(const Tensor& x, const Tensor& src, int64_t dim, int64_t index) {
  return scattered_copy(
      x, src, [&](const Tensor& t) { return select(t, dim, index); }, "select_scatter");
}

Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  return scattered_copy(
      x, src, [&](const Tensor& t) { return slice(t, dim, start, end, step); }, "slice_scatter");
}

Tensor diagonal_scatter(const Tensor& x, const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) {
  return scattered_copy(
      x, src, [&](const Tensor& t) { return diagonal(t, offset, dim1, dim2); }, "diagonal_scatter");
}

Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  kernels::check_defined(x, "masked_scatter", "input");
  kernels::check_defined(mask, "masked_scatter", "mask");
  kernels::check_defined(source, "masked_scatter", "source");
  TD_CHECK(mask.dtype() == kBool, "masked_scatter: expected a bool mask, got dtype ", mask.dtype());
  TD_CHECK(source.dtype() == x.dtype(), "masked_scatter: source has dtype ", source.dtype(), " but the input has ",
           x.dtype());
  // Out of place, x and mask broadcast together.
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_scatter");
  const Tensor m = expand(mask, shape), base = expand(x, shape);
  // The k-th set place (row-major) takes source's k-th element.
  const Tensor rank = sub(cumsum(reshape(m, {-1}), 0), 1);
  const int64_t count = m.numel() == 0 ? 0 : rank.numel() == 0 ? 0 : select(rank, 0, -1).item<int64_t>() + 1;
  TD_CHECK(count <= source.numel(), "masked_scatter: the mask sets ", count, " places but source has only ",
           source.numel(), " elements");
  if (count == 0) return clone(base);
  const Tensor position = where(reshape(m, {-1}), rank, 0);
  const Tensor taken = reshape(index_select(reshape(source, {-1}), 0, position), shape);
  return where(m, taken, base);
}

// ---- indexing by tensors ----

namespace {

// The flat position, in the leading indices.size() dims of x, that the (broadcast) index tensors
// name; bool indices stand for the positions they set. Returns the positions and their shape.
std::pair<Tensor, Shape> flat_positions(const Tensor& x, const std::vector<Tensor>& indices, const char* op) {
  TD_CHECK(!indices.empty(), op, ": no index tensors");
  std::vector<Tensor> per_dim;
  for (const Tensor& given : indices) {
    kernels::check_defined(given, op, "indices");
    // uint8 indices are masks, as PyTorch (still) reads them.
    const Tensor index = given.dtype() == kUInt8 ? given.to(kBool) : given;
    if (index.dtype() == kBool) {
      // A mask covers index.dim() dims, which it must match (a 0-dim one is unfolded by the callers).
      const int64_t at = static_cast<int64_t>(per_dim.size());
      TD_CHECK(at + index.dim() <= x.dim() &&
                   Shape(x.sizes().begin() + at, x.sizes().begin() + at + index.dim()) == index.sizes(),
               op, ": the mask of shape ", shape_str(index.sizes()), " at dim ", at,
               " does not match the shape of the indexed tensor ", shape_str(x.sizes()));
      for (const Tensor& column : where(index)) per_dim.push_back(column);
    } else {
      TD_CHECK(is_integral(index.dtype(), false), op, ": indices must be integer or bool tensors, got dtype ",
               index.dtype());
      per_dim.push_back(index.to(kInt64));
    }
  }
  TD_CHECK(static_cast<int64_t>(per_dim.size()) <= x.dim(), op, ": too many indices (", per_dim.size(),
           ") for a tensor of ", x.dim(), " dims");
  Shape shape = per_dim[0].sizes();
  for (const Tensor& p : per_dim) shape = broadcast_shapes(shape, p.sizes(), op);
  Tensor flat = zeros(shape, TensorOptions(kInt64).device(x.device()));
  for (size_t k = 0; k < per_dim.size(); ++k) {
    const int64_t n = x.size(static_cast<int64_t>(k));
    const Tensor p = per_dim[k].to(x.device());
    TD_CHECK(p.numel() == 0 || (all(ge(p, -n)).item<bool>() && all(lt(p, n)).item<bool>()), op,
             ": an index is out of range for dim ", k, " of size ", n);
    flat = add(mul(flat, n), p.numel() == 0 ? p : remainder(p, n));
  }
  return {flat, shape};
}

// x seen as [positions of the leading k dims, the rest...].
Tensor leading_merged(const Tensor& x, size_t k) {
  Shape shape = {numel_of(Shape(x.sizes().begin(), x.sizes().begin() + static_cast<int64_t>(k)))};
  shape.insert(shape.end(), x.sizes().begin() + static_cast<int64_t>(k), x.sizes().end());
  return reshape(x, shape);
}

size_t indexed_dims(const std::vector<Tensor>& indices) {
  size_t k = 0;
  for (const Tensor& index : indices) {
    const bool mask = index.dtype() == kBool || index.dtype() == kUInt8;
    k += mask ? static_cast<size_t>(index.dim()) : 1;
  }
  return k;
}

// As PyTorch reads a 0-dim bool (or uint8) index: a new dim of size 1 in x where it stands, which it
// indexes as a 1-D mask (true keeps it, false leaves nothing).
std::pair<Tensor, std::vector<Tensor>> unfold_scalar_masks(const Tensor& x, const std::vector<Tensor>& indices,
                                                           const char* op) {
  Tensor unfolded = x;
  std::vector<Tensor> out;
  int64_t dim = 0;  // the dim of x the next index starts at
  for (const Tensor& index : indices) {
    const bool mask = index.defined() && (index.dtype() == kBool || index.dtype() == kUInt8);
    if (mask && index.dim() == 0) {
      TD_CHECK(dim <= unfolded.dim(), op, ": too many indices (", indices.size(), ") for a tensor of ", x.dim(),
               " dims");
      unfolded = unsqueeze(unfolded, dim);
      out.push_back(reshape(index, {1}));
      dim += 1;
    } else {
      out.push_back(index);
      dim += mask ? index.dim() : 1;
    }
  }
  return {unfolded, out};
}

}  // namespace

Tensor index(const Tensor& x_given, const std::vector<Tensor>& indices_given) {
  kernels::check_defined(x_given, "index", "input");
  const auto [x, indices] = unfold_scalar_masks(x_given, indices_given, "index");
  const auto [flat, shape] = flat_positions(x, indices, "index");
  const size_t k = indexed_dims(indices);
  Shape out_shape = shape;
  out_shape.insert(out_shape.end(), x.sizes().begin() + static_cast<int64_t>(k), x.sizes().end());
  return reshape(index_select(leading_merged(x, k), 0, reshape(flat, {-1})), out_shape);
}

Tensor index_put(const Tensor& x_given, const std::vector<Tensor>& indices_given, const Tensor& values,
                 bool accumulate) {
  kernels::check_defined(x_given, "index_put", "input");
  kernels::check_defined(values, "index_put", "values");
  TD_CHECK(values.dtype() == x_given.dtype(), "index_put: values have dtype ", values.dtype(), " but the input has ",
           x_given.dtype(), "; they must match");
  const auto [x, indices] = unfold_scalar_masks(x_given, indices_given, "index_put");
  const auto [flat, shape] = flat_positions(x, indices, "index_put");
  const size_t k = indexed_dims(indices);
  Shape rows_shape = shape;
  rows_shape.insert(rows_shape.end(), x.sizes().begin() + static_cast<int64_t>(k), x.sizes().end());
  TD_CHECK(broadcast_shapes(values.sizes(), rows_shape, "index_put") == rows_shape, "index_put: values of shape ",
           shape_str(values.sizes()), " cannot be broadcast to the indexing result of shape ", shape_str(rows_shape));
  const Tensor merged = leading_merged(x, k);
  Shape source_shape = merged.sizes();
  source_shape[0] = flat.numel();
  const Tensor source = reshape(expand(values, rows_shape), source_shape);
  const Tensor positions = reshape(flat, {-1});
  const Tensor out = accumulate ? index_add(merged, 0, positions, source) : index_copy(merged, 0, positions, source);
  return reshape(out, x_given.sizes());
}

}  // namespace tandem
