// Differentiable reductions. A reduction's gradient spreads the output gradient back over the
// reduced dims: `expand_back` undoes the reduction's shape, then each op scales what each
// element receives.
#include <cmath>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/factory.h"
#include "kernels/elementwise.h"
#include "kernels/reduce.h"

namespace tandem {

using autograd::needs_grad;
using autograd::record;

namespace {

// The reduced dims as a mask over x's dims (all of them when none are named).
std::vector<bool> reduced_mask(const Tensor& x, IntList dims) {
  return dims.empty() ? std::vector<bool>(x.dim(), true) : dim_mask(dims, x.dim(), "reduce");
}

// g (the gradient of a reduction's output) with the reduced dims back as size 1, then
// broadcast to x's shape.
Tensor expand_back(const Tensor& g, const Shape& x_shape, const std::vector<bool>& reduced, bool keepdim) {
  Tensor r = g;
  if (!keepdim) {
    Shape with_ones;
    for (size_t d = 0; d < x_shape.size(); ++d) {
      with_ones.push_back(reduced[d] ? 1 : x_shape[d]);
    }
    r = reshape(r, with_ones);
  }
  return r.expand(x_shape);
}

// The output with the reduced dims kept (for formulas that need it broadcast against x).
Tensor keep_dims(const Tensor& y, const Shape& x_shape, const std::vector<bool>& reduced, bool keepdim) {
  if (keepdim) return y;
  Shape with_ones;
  for (size_t d = 0; d < x_shape.size(); ++d) with_ones.push_back(reduced[d] ? 1 : x_shape[d]);
  return reshape(y, with_ones);
}

int64_t reduced_count(const Shape& shape, const std::vector<bool>& reduced) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) n *= reduced[d] ? shape[d] : 1;
  return n;
}

Tensor sum_impl(const Tensor& x, IntList dims, bool keepdim, std::optional<DType> dtype, bool is_mean) {
  Tensor y = is_mean ? kernels::mean(x, dims, keepdim, dtype) : kernels::sum(x, dims, keepdim, dtype);
  if (!needs_grad({&x})) return y;
  std::vector<bool> reduced = reduced_mask(x, dims);
  Shape shape = x.sizes();
  DType x_dtype = x.dtype();
  const char* name = is_mean ? "MeanBackward1" : "SumBackward1";
  record(name, {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor grad = expand_back(g[0], shape, reduced, keepdim);
    if (is_mean) grad = grad / static_cast<double>(reduced_count(shape, reduced));
    return {grad.dtype() == x_dtype ? grad : grad.to(x_dtype)};
  })->saves_nothing = true;
  return y;
}

// max/min/amax/amin of values: the gradient goes to the elements equal to the result, shared
// evenly among ties (as PyTorch's amax does).
Tensor extremum_grad(const Tensor& g, const Tensor& x, const Tensor& y, const std::vector<bool>& reduced,
                     bool keepdim) {
  Tensor y_kept = keep_dims(y, x.sizes(), reduced, keepdim);
  Tensor hit = x == y_kept;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (reduced[d]) dims.push_back(static_cast<int64_t>(d));
  }
  Tensor count = dims.empty() ? ones_like(y_kept) : sum(hit, dims, true);
  return where(hit, expand_back(g, x.sizes(), reduced, keepdim) / count, 0);
}

Tensor extremum(const Tensor& x, IntList dims, bool keepdim, bool is_max, const char* name) {
  Tensor y = is_max ? kernels::amax(x, dims, keepdim) : kernels::amin(x, dims, keepdim);
  if (!needs_grad({&x})) return y;
  std::vector<bool> reduced = reduced_mask(x, dims);
  SavedTensor sx(x, false), sy(y, true);
  record(name, {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {extremum_grad(g[0], sx.unpack(name), sy.unpack(name), reduced, keepdim)};
  });
  return y;
}

// max/min along a dim: the gradient goes to the reported index.
std::tuple<Tensor, Tensor> extremum_dim(const Tensor& x, int64_t dim, bool keepdim, bool is_max) {
  auto [values, indices] = is_max ? kernels::max(x, dim, keepdim) : kernels::min(x, dim, keepdim);
  if (!needs_grad({&x})) return {values, indices};
  const char* name = is_max ? "MaxBackward0" : "MinBackward0";
  Shape shape = x.sizes();
  int64_t d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), name);
  SavedTensor saved_indices(indices, false);  // the user's: written in place, backward would misroute
  record(name, {&x}, {&values}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    if (shape.empty()) return {g[0]};
    const Tensor idx = saved_indices.unpack(name);
    Tensor grad = keepdim ? g[0] : g[0].unsqueeze(d);
    Tensor index = keepdim ? idx : idx.unsqueeze(d);
    return {scatter_add(zeros(shape, g[0].options()), d, index, grad)};
  });
  return {values, indices};
}

}  // namespace

// Autocast's float32 list has sum, prod and cumsum (prod on CPUs too): without a dtype of the
// caller's they sum a 16-bit tensor in float32, as if called with dtype float32, as PyTorch does.
static std::optional<DType> float32_if_autocast(amp::Float32On where, const Tensor& x, std::optional<DType> dtype) {
  if (!dtype && is_16bit_float(x.dtype()) && amp::takes_float32(where, {&x})) return kFloat32;
  return dtype;
}

Tensor sum(const Tensor& x, std::optional<DType> dtype) {
  return sum_impl(x, {}, false, float32_if_autocast(amp::Float32On::kCuda, x, dtype), false);
}
Tensor sum(const Tensor& x, IntList dims, bool keepdim, std::optional<DType> dtype) {
  return sum_impl(x, dims, keepdim, float32_if_autocast(amp::Float32On::kCuda, x, dtype), false);
}
Tensor mean(const Tensor& x, std::optional<DType> dtype) { return sum_impl(x, {}, false, dtype, true); }
Tensor mean(const Tensor& x, IntList dims, bool keepdim, std::optional<DType> dtype) {
  return sum_impl(x, dims, keepdim, dtype, true);
}

namespace {

// The products of the elements before each one along d (1 for the first), and after it (1 for
// the last): their product is each element's product of the others, made without a division, so
// it is exact at zeros and differentiable again there (PyTorch's formula for inputs with zeros).
Tensor products_before(const Tensor& x, int64_t d) {
  Shape one = x.sizes();
  one[d] = 1;
  return cat({ones(one, x.options()), cumprod(narrow(x, d, 0, x.sizes()[d] - 1), d)}, d);
}

Tensor products_after(const Tensor& x, int64_t d) { return flip(products_before(flip(x, {d}), d), {d}); }

// The sums of each element and those after it along d (PyTorch's reversed_cumsum).
Tensor sums_from(const Tensor& x, int64_t d) { return flip(cumsum(flip(x, {d}), d), {d}); }

// d prod / d x_i = the product of the others, as PyTorch computes it: y / x_i where no element of
// x is zero; otherwise, for the whole tensor, the products before and after each element (a
// zero's entry is the product of the rest, the others' hold the zero). Which one is decided on
// the host, as PyTorch does: the form not taken would cost its work, and its overflows would
// reach the second derivative as 0 * inf. x is taken in y's dtype, which prod may have widened
// (a dtype asked for, or autocast's float32).
Tensor prod_grad(const Tensor& g, const Tensor& x_in, const Tensor& y, std::optional<int64_t> dim, bool keepdim) {
  const Tensor x = x_in.dtype() == y.dtype() ? x_in : x_in.to(y.dtype());
  std::vector<bool> reduced(x.dim(), !dim.has_value());
  if (dim) reduced[*dim] = true;
  Tensor g_full = expand_back(g, x.sizes(), reduced, keepdim);
  if (x.numel() == 0) return g_full;
  if (!any(x == 0).item<bool>()) return g_full * ((dim ? keep_dims(y, x.sizes(), reduced, keepdim) : y) / x);
  Tensor line = dim ? x : x.reshape({-1});
  return g_full * (products_before(line, dim.value_or(0)) * products_after(line, dim.value_or(0))).reshape(x.sizes());
}

Tensor prod_impl(const Tensor& x, std::optional<int64_t> dim, bool keepdim, std::optional<DType> dtype) {
  Tensor y = dim ? kernels::prod(x, *dim, keepdim, dtype) : kernels::prod(x, dtype);
  if (!needs_grad({&x})) return y;
  std::optional<int64_t> d;
  if (dim && x.dim() > 0) d = wrap_dim(*dim, x.dim(), "prod");
  SavedTensor sx(x, false), sy(y, true);
  DType x_dtype = x.dtype();
  record(dim ? "ProdBackward1" : "ProdBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor grad = prod_grad(g[0], sx.unpack("ProdBackward"), sy.unpack("ProdBackward"), d, keepdim);
    return {grad.dtype() == x_dtype ? grad : grad.to(x_dtype)};
  });
  return y;
}

Tensor var_impl(const Tensor& x, IntList dims, int64_t correction, bool keepdim, bool take_sqrt) {
  Tensor y = take_sqrt ? kernels::std(x, dims, correction, keepdim) : kernels::var(x, dims, correction, keepdim);
  if (!needs_grad({&x})) return y;
  std::vector<bool> reduced = reduced_mask(x, dims);
  std::vector<int64_t> dim_list;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (reduced[d]) dim_list.push_back(static_cast<int64_t>(d));
  }
  SavedTensor sx(x, false), sy(y, true);
  const char* name = take_sqrt ? "StdBackward0" : "VarBackward0";
  record(name, {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor xv = sx.unpack(name);
    double n = static_cast<double>(reduced_count(xv.sizes(), reduced));
    Tensor centered = dim_list.empty() ? xv - mean(xv) : xv - mean(xv, dim_list, true);
    Tensor grad = expand_back(g[0], xv.sizes(), reduced, keepdim) * centered * (2 / (n - static_cast<double>(correction)));
    if (take_sqrt) grad = grad / (keep_dims(sy.unpack(name), xv.sizes(), reduced, keepdim) * 2);
    return {grad};
  });
  return y;
}

}  // namespace

Tensor prod(const Tensor& x, std::optional<DType> dtype) {
  return prod_impl(x, std::nullopt, false, float32_if_autocast(amp::Float32On::kAll, x, dtype));
}
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  return prod_impl(x, dim, keepdim, float32_if_autocast(amp::Float32On::kAll, x, dtype));
}

Tensor max(const Tensor& x) { return extremum(x, {}, false, true, "MaxBackward1"); }
Tensor min(const Tensor& x) { return extremum(x, {}, false, false, "MinBackward1"); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) { return extremum_dim(x, dim, keepdim, true); }
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) { return extremum_dim(x, dim, keepdim, false); }
Tensor amax(const Tensor& x, IntList dims, bool keepdim) { return extremum(x, dims, keepdim, true, "AmaxBackward0"); }
Tensor amin(const Tensor& x, IntList dims, bool keepdim) { return extremum(x, dims, keepdim, false, "AminBackward0"); }
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return kernels::argmax(x, dim, keepdim); }
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) { return kernels::argmin(x, dim, keepdim); }

Tensor var(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return var_impl(x, dims, correction, keepdim, false);
}
Tensor std(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return var_impl(x, dims, correction, keepdim, true);
}

Tensor norm(const Tensor& x, double p, IntList dims, bool keepdim) {
  if (amp::takes_float32(amp::Float32On::kCuda, {&x})) {
    amp::SuspendAutocast inside;
    return norm(amp::to_float32(x), p, dims, keepdim);
  }
  Tensor y = kernels::norm(x, p, dims, keepdim);
  if (!needs_grad({&x})) return y;
  std::vector<bool> reduced = reduced_mask(x, dims);
  SavedTensor sx(x, false), sy(y, true);
  record("NormBackward1", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor xv = sx.unpack("NormBackward1");
    Tensor yk = keep_dims(sy.unpack("NormBackward1"), xv.sizes(), reduced, keepdim);
    Tensor gk = expand_back(g[0], xv.sizes(), reduced, keepdim);
    if (p == 0) return {zeros_like(xv)};
    if (p == 1) return {gk * sign(xv)};
    if (std::isinf(p)) {  // the largest (smallest) magnitudes share the gradient
      Tensor hit = abs(xv) == yk;
      std::vector<int64_t> dim_list;
      for (size_t d = 0; d < reduced.size(); ++d) {
        if (reduced[d]) dim_list.push_back(static_cast<int64_t>(d));
      }
      Tensor count = dim_list.empty() ? ones_like(yk) : sum(hit, dim_list, true);
      return {where(hit, gk * sign(xv) / count, 0)};
    }
    // d||x||_p / dx = sgn(x) |x|^(p-1) / ||x||^(p-1); a zero norm gives zero, and so (below p = 1,
    // where |x|^(p-1) is infinite there) does a zero element, as PyTorch's.
    // The masked places see 1 in place of a zero norm or element: no 0 / 0 or 0 * inf there, in
    // this gradient or in its own (a second derivative).
    const Tensor norm = where(yk == 0, 1, yk);
    if (p == 2) return {where(yk == 0, 0, gk * (xv / norm))};
    const Tensor magnitude = where(xv == 0, 1, abs(xv));
    Tensor scaled = p < 2 ? sign(xv) * pow(magnitude, p - 1) : xv * pow(magnitude, p - 2);
    if (p < 1) scaled = where(xv == 0, 0, scaled);
    return {where(yk == 0, 0, gk * scaled / pow(norm, p - 1))};
  });
  return y;
}

Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim) {
  if (amp::takes_float32(amp::Float32On::kCuda, {&x})) {
    amp::SuspendAutocast inside;
    return logsumexp(amp::to_float32(x), dims, keepdim);
  }
  Tensor y = kernels::logsumexp(x, dims, keepdim);
  if (!needs_grad({&x})) return y;
  std::vector<bool> reduced = reduced_mask(x, dims);
  SavedTensor sx(x, false), sy(y, true);
  record("LogsumexpBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    Tensor xv = sx.unpack("LogsumexpBackward0");
    Tensor yk = keep_dims(sy.unpack("LogsumexpBackward0"), xv.sizes(), reduced, keepdim);
    return {expand_back(g[0], xv.sizes(), reduced, keepdim) * exp(xv - yk)};
  });
  return y;
}

Tensor all(const Tensor& x) { return kernels::all(x); }
Tensor all(const Tensor& x, IntList dims, bool keepdim) { return kernels::all(x, dims, keepdim); }
Tensor any(const Tensor& x) { return kernels::any(x); }
Tensor any(const Tensor& x, IntList dims, bool keepdim) { return kernels::any(x, dims, keepdim); }

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  kernels::check_defined(x, "cumsum", "input");
  Tensor y = kernels::cumsum(x, dim, float32_if_autocast(amp::Float32On::kCuda, x, dtype));
  if (!needs_grad({&x})) return y;
  int64_t d = wrap_dim(dim, x.dim(), "cumsum");
  DType x_dtype = x.dtype();
  record("CumsumBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    // Element i feeds outputs i..n-1: the suffix sum of g, i.e. total - prefix + g.
    Tensor grad = g[0].dim() == 0 ? g[0] : sum(g[0], {d}, true) - cumsum(g[0], d) + g[0];
    return {grad.dtype() == x_dtype ? grad : grad.to(x_dtype)};
  });
  return y;
}

namespace {

// The gradient of cumprod along d where x has zeros, for a double backward: element k feeds
// outputs j >= k with the product of x[0..j] but x[k], that is before[k] * t[k] with before[k]
// the product of x[0..k) and t[k] = g[k] + x[k+1] * t[k+1], run from the end. No division, so it
// is exact at zeros, and it is made of differentiable ops. It takes O(n) small ops along d.
Tensor cumprod_grad_with_zeros_differentiable(const Tensor& g, const Tensor& x, int64_t d) {
  const std::vector<Tensor> gs = unbind(g, d), xs = unbind(x, d);
  std::vector<Tensor> t(gs.size());
  t.back() = gs.back();
  for (size_t k = gs.size() - 1; k-- > 0;) t[k] = gs[k] + xs[k + 1] * t[k + 1];
  return products_before(x, d) * stack(t, d);
}

// The same gradient in a few whole-tensor ops, not differentiable again (PyTorch's first-order
// form). With z the line's first zero and z2 its second (or the end): before z, the division
// form over the outputs before z; at z, the product of x[0..z) times the sum over j in [z, z2)
// of g[j] * x[z+1..j]; after z, 0 (every product there holds x[z]).
Tensor cumprod_grad_with_zeros(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  const Tensor zeros_so_far = cumsum(x == 0, d);
  const Tensor before_first = zeros_so_far == 0, first_segment = zeros_so_far == 1;
  const Tensor first_zero = kernels::mul(x == 0, first_segment);
  const Tensor w = where(before_first, g * y, 0);
  const Tensor before = sums_from(w, d) / x;  // x is not 0 before z
  const Tensor after_zero = where(kernels::mul(first_segment, x != 0), x, 1);  // x[z+1..z2), 1 elsewhere
  const Tensor at_zero = products_before(x, d) * sum(where(first_segment, g, 0) * cumprod(after_zero, d), {d}, true);
  return where(before_first, before, where(first_zero, at_zero, 0));
}

}  // namespace

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  kernels::check_defined(x, "cumprod", "input");
  std::optional<DType> as = float32_if_autocast(amp::Float32On::kCuda, x, dtype);
  if (as && *as != x.dtype() && needs_grad({&x})) {  // the cast is recorded, and the dtype kept
    amp::SuspendAutocast inside;
    return cumprod(x.to(*as), dim, *as);
  }
  Tensor y = kernels::cumprod(x, dim, as);
  if (!needs_grad({&x})) return y;
  const int64_t d = wrap_dim(dim, x.dim(), "cumprod");
  SavedTensor sx(x, false), sy(y, true);
  record("CumprodBackward0", {&x}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor xv = sx.unpack("CumprodBackward0"), yv = sy.unpack("CumprodBackward0");
    if (xv.dim() == 0 || xv.sizes()[d] < 2) return {g[0]};
    // Without zeros, as PyTorch: the suffix sums of g * y, divided by x. Deciding reads one
    // value back from the device, as PyTorch's does.
    if (!any(xv == 0).item<bool>()) return {sums_from(g[0] * yv, d) / xv};
    if (is_grad_enabled()) return {cumprod_grad_with_zeros_differentiable(g[0], xv, d)};
    return {cumprod_grad_with_zeros(g[0], xv, yv, d)};
  });
  return y;
}

}  // namespace tandem
