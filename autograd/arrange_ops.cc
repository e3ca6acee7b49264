// Rearranging and joining, composed of views, cat, index_select and scatter_add: roll, repeat,
// tile, repeat_interleave, movedim, rot90, diag, the stacks, meshgrid, diff; masks and indices
// (nonzero, masked_select, index_add/index_fill/index_copy, take); and the products that are
// matmul by another name (dot, mv, outer, addmv, addr, baddbmm, addbmm). Autograd differentiates
// them through their parts.
#include <algorithm>
#include <numeric>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/factory.h"
#include "kernels/sort.h"

namespace tandem {

namespace {

// The dims that a list names, each wrapped and distinct.
Shape wrapped_dims(IntList dims, int64_t ndim, const char* op) {
  Shape out;
  std::vector<bool> seen(static_cast<size_t>(ndim), false);
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, ndim, op);
    TD_CHECK(!seen[d], op, ": dim ", dim, " appears more than once");
    seen[d] = true;
    out.push_back(d);
  }
  return out;
}

// The values of an integer tensor, read on the host.
std::vector<int64_t> host_integers(const Tensor& t, const char* op, const char* arg) {
  TD_CHECK(is_integral(t.dtype(), true), op, ": ", arg, " must be an integer tensor, got dtype ", t.dtype());
  const Tensor host = t.detach().to(Device(kCPU), kInt64).contiguous();
  const int64_t* data = host.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + host.numel());
}

Tensor long_tensor(const std::vector<int64_t>& values, Device device) {
  return tensor(values, TensorOptions(kInt64)).to(device);
}

}  // namespace

// ---- rearranging ----

Tensor roll(const Tensor& x, IntList shifts, IntList dims) {
  kernels::check_defined(x, "roll", "input");
  if (dims.empty()) {
    TD_CHECK(shifts.size() == 1, "roll: without dims, give one shift (the flattened tensor's), got ", shifts.size());
    return reshape(roll(flatten(x), shifts, 0), x.sizes());
  }
  TD_CHECK(shifts.size() == dims.size(), "roll: ", shifts.size(), " shifts for ", dims.size(),
           " dims; give one shift per dim");
  Tensor y = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], std::max<int64_t>(x.dim(), 1), "roll");
    const int64_t n = x.dim() == 0 ? 1 : x.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s != 0) y = cat({narrow(y, d, n - s, s), narrow(y, d, 0, n - s)}, d);
  }
  return y.is_same(x) ? clone(x) : y;
}

Tensor repeat(const Tensor& x, IntList repeats) {
  kernels::check_defined(x, "repeat", "input");
  TD_CHECK(static_cast<int64_t>(repeats.size()) >= x.dim(), "repeat: ", repeats.size(), " repeats for a tensor of ",
           x.dim(), " dims ", shape_str(x.sizes()), "; give at least one per dim");
  for (int64_t r : repeats) TD_CHECK(r >= 0, "repeat: repeats must be non-negative, got ", r);
  // Leading dims of 1 up to the repeats' count, then each dim i seen as [1, n_i] expanded to
  // [r_i, n_i]: the copies of the whole, one after another, merged by reshape.
  const size_t lead = repeats.size() - static_cast<size_t>(x.dim());
  Shape unit, expanded, result;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t n = i < lead ? 1 : x.size(static_cast<int64_t>(i - lead));
    unit.insert(unit.end(), {1, n});
    expanded.insert(expanded.end(), {repeats[i], n});
    result.push_back(repeats[i] * n);
  }
  return reshape(expand(reshape(x, unit), expanded), result);
}

Tensor tile(const Tensor& x, IntList reps) {
  kernels::check_defined(x, "tile", "input");
  Shape all(std::max<int64_t>(0, x.dim() - static_cast<int64_t>(reps.size())), 1);
  all.insert(all.end(), reps.begin(), reps.end());
  return repeat(x, all);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
  kernels::check_defined(x, "repeat_interleave", "input");
  TD_CHECK(repeats >= 0, "repeat_interleave: repeats must be non-negative, got ", repeats);
  if (!dim) return repeat_interleave(flatten(x), repeats, 0);
  const int64_t d = wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave");
  const Tensor line = x.dim() == 0 ? reshape(x, {1}) : x;
  // Each position i taken `repeats` times in a row: index k * repeats + j is position k.
  const int64_t n = line.size(d);
  const Tensor index =
      floor_divide(arange(n * repeats, TensorOptions(kInt64).device(x.device())), std::max<int64_t>(repeats, 1));
  return index_select(line, d, index);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim) {
  kernels::check_defined(x, "repeat_interleave", "input");
  kernels::check_defined(repeats, "repeat_interleave", "repeats");
  if (!dim) return repeat_interleave(flatten(x), repeats, 0);
  const int64_t d = wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave");
  const Tensor line = x.dim() == 0 ? reshape(x, {1}) : x;
  const int64_t n = line.size(d);
  const std::vector<int64_t> counts = host_integers(repeats, "repeat_interleave", "repeats");
  TD_CHECK(repeats.dim() <= 1 && (static_cast<int64_t>(counts.size()) == n || counts.size() == 1),
           "repeat_interleave: repeats must be one number or one per element of dim ", *dim, " (", n, "), got shape ",
           shape_str(repeats.sizes()));
  std::vector<int64_t> index;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t count = counts.size() == 1 ? counts[0] : counts[i];
    TD_CHECK(count >= 0, "repeat_interleave: repeats must be non-negative, got ", count);
    index.insert(index.end(), static_cast<size_t>(count), i);
  }
  return index_select(line, d, long_tensor(index, x.device()));
}

Tensor movedim(const Tensor& x, IntList source, IntList destination) {
  kernels::check_defined(x, "movedim", "input");
  TD_CHECK(source.size() == destination.size(), "movedim: ", source.size(), " source dims for ", destination.size(),
           " destination dims");
  const int64_t n = x.dim();
  const Shape from = wrapped_dims(source, n, "movedim"), to_dims = wrapped_dims(destination, n, "movedim");
  // Each moved dim at its destination; the others fill the free places in their order.
  Shape order(static_cast<size_t>(n), -1);
  std::vector<bool> moved(static_cast<size_t>(n), false);
  for (size_t i = 0; i < from.size(); ++i) {
    order[to_dims[i]] = from[i];
    moved[from[i]] = true;
  }
  int64_t next = 0;
  for (int64_t& slot : order) {
    if (slot >= 0) continue;
    while (moved[next]) ++next;
    slot = next++;
  }
  return permute(x, order);
}

Tensor movedim(const Tensor& x, int64_t source, int64_t destination) {
  return movedim(x, IntList{source}, IntList{destination});
}

Tensor rot90(const Tensor& x, int64_t k, IntList dims) {
  kernels::check_defined(x, "rot90", "input");
  TD_CHECK(dims.size() == 2, "rot90: expected two dims, got ", dims.size());
  TD_CHECK(x.dim() >= 2, "rot90: expected a tensor of at least 2 dims, got shape ", shape_str(x.sizes()));
  const Shape d = wrapped_dims(dims, x.dim(), "rot90");
  switch (((k % 4) + 4) % 4) {
    case 1:
      return transpose(flip(x, {d[1]}), d[0], d[1]);
    case 2:
      return flip(x, {d[0], d[1]});
    case 3:
      return transpose(flip(x, {d[0]}), d[0], d[1]);
    default:
      return clone(x);
  }
}

Tensor fliplr(const Tensor& x) {
  kernels::check_defined(x, "fliplr", "input");
  TD_CHECK(x.dim() >= 2, "fliplr: expected a tensor of at least 2 dims, got shape ", shape_str(x.sizes()));
  return flip(x, {1});
}

Tensor flipud(const Tensor& x) {
  kernels::check_defined(x, "flipud", "input");
  TD_CHECK(x.dim() >= 1, "flipud: expected a tensor of at least 1 dim, got a 0-dim tensor");
  return flip(x, {0});
}

Tensor diag(const Tensor& x, int64_t offset) {
  kernels::check_defined(x, "diag", "input");
  TD_CHECK(x.dim() == 1 || x.dim() == 2, "diag: expected a 1-D or 2-D tensor, got shape ", shape_str(x.sizes()));
  if (x.dim() == 2) return clone(diagonal(x, offset, 0, 1));
  const int64_t n = x.size(0) + std::abs(offset);
  Tensor out = zeros({n, n}, x.options());
  Tensor place = diagonal(out, offset, 0, 1);
  copy_(place, x);
  return out;
}

// The sum of the main diagonal: a Tensor method only, as tandem::trace is the Chrome-trace namespace.
Tensor Tensor::trace() const {
  TD_CHECK(dim() == 2, "trace: expected a 2-D tensor, got shape ", shape_str(sizes()));
  return tandem::sum(tandem::diagonal(*this, 0, 0, 1));
}

// ---- joining ----

Tensor atleast_1d(const Tensor& x) { return x.dim() >= 1 ? x : reshape(x, {1}); }

Tensor atleast_2d(const Tensor& x) {
  if (x.dim() >= 2) return x;
  return x.dim() == 0 ? reshape(x, {1, 1}) : unsqueeze(x, 0);
}

Tensor atleast_3d(const Tensor& x) {
  if (x.dim() >= 3) return x;
  if (x.dim() == 0) return reshape(x, {1, 1, 1});
  if (x.dim() == 1) return reshape(x, {1, x.size(0), 1});
  return unsqueeze(x, 2);
}

namespace {

std::vector<Tensor> each(const std::vector<Tensor>& tensors, Tensor (*f)(const Tensor&), const char* op) {
  TD_CHECK(!tensors.empty(), op, ": expected a non-empty list of tensors");
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) {
    kernels::check_defined(t, op, "tensors");
    out.push_back(f(t));
  }
  return out;
}

}  // namespace

Tensor hstack(const std::vector<Tensor>& tensors) {
  const std::vector<Tensor> parts = each(tensors, atleast_1d, "hstack");
  return cat(parts, parts[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const std::vector<Tensor>& tensors) { return cat(each(tensors, atleast_2d, "vstack"), 0); }

Tensor dstack(const std::vector<Tensor>& tensors) { return cat(each(tensors, atleast_3d, "dstack"), 2); }

Tensor column_stack(const std::vector<Tensor>& tensors) {
  const auto column = [](const Tensor& t) { return t.dim() <= 1 ? reshape(t, {t.numel(), 1}) : t; };
  return cat(each(tensors, +column, "column_stack"), 1);
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
  TD_CHECK(indexing == "ij" || indexing == "xy", "meshgrid: indexing must be \"ij\" or \"xy\", got \"", indexing, "\"");
  TD_CHECK(!tensors.empty(), "meshgrid: expected a non-empty list of tensors");
  Shape shape;
  for (const Tensor& t : tensors) {
    kernels::check_defined(t, "meshgrid", "tensors");
    TD_CHECK(t.dim() <= 1, "meshgrid: expected 0-D or 1-D tensors, got shape ", shape_str(t.sizes()));
    shape.push_back(t.numel());
  }
  // "xy" (Cartesian): the first two outputs' dims swapped, as NumPy's default.
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> grids;
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t at = i;
    if (swap && i < 2) at = 1 - i;
    Shape view_shape(tensors.size(), 1);
    view_shape[at] = tensors[i].numel();
    grids.push_back(expand(reshape(tensors[i], view_shape), shape));
  }
  return grids;
}

Tensor diff(const Tensor& x, int64_t n, int64_t dim) {
  kernels::check_defined(x, "diff", "input");
  TD_CHECK(x.dim() >= 1, "diff: expected a tensor of at least 1 dim, got a 0-dim tensor");
  TD_CHECK(n >= 0, "diff: order must be non-negative, got ", n);
  const int64_t d = wrap_dim(dim, x.dim(), "diff");
  Tensor y = x;
  for (int64_t i = 0; i < n && y.size(d) > 0; ++i) {
    const int64_t len = y.size(d) - 1;
    y = y.dtype() == kBool ? logical_xor(narrow(y, d, 1, len), narrow(y, d, 0, len))
                           : sub(narrow(y, d, 1, len), narrow(y, d, 0, len));
  }
  return y.is_same(x) ? clone(x) : y;
}

// ---- masks and indices ----

Tensor nonzero(const Tensor& x) {
  kernels::check_defined(x, "nonzero", "input");
  // The positions are counted on the host: the output's size depends on the values.
  const Tensor truth = ne(x.detach(), 0).to(Device(kCPU)).contiguous();
  const bool* flags = truth.data_ptr<bool>();
  const int64_t ndim = x.dim();
  std::vector<int64_t> coords;
  std::vector<int64_t> at(static_cast<size_t>(ndim), 0);
  for (int64_t i = 0; i < truth.numel(); ++i) {
    if (flags[i]) coords.insert(coords.end(), at.begin(), at.end());
    for (int64_t d = ndim - 1; d >= 0; --d) {  // the next position, row-major
      if (++at[d] < x.size(d)) break;
      at[d] = 0;
    }
  }
  const int64_t count = ndim == 0 ? (truth.numel() && flags[0] ? 1 : 0) : static_cast<int64_t>(coords.size()) / ndim;
  return reshape(long_tensor(coords, x.device()), {count, ndim});
}

Tensor argwhere(const Tensor& x) { return nonzero(x); }

Tensor nonzero_static(const Tensor& x, int64_t size, int64_t fill_value) {
  kernels::check_defined(x, "nonzero_static", "input");
  TD_CHECK(size >= 0, "nonzero_static: size must be non-negative, got ", size);
  const Tensor found = nonzero(x);
  const int64_t kept = std::min(size, found.size(0));
  const Tensor fill = full({size - kept, found.size(1)}, fill_value, TensorOptions(kInt64).device(x.device()));
  return cat({narrow(found, 0, 0, kept), fill}, 0);
}

std::vector<Tensor> where(const Tensor& condition) {
  kernels::check_defined(condition, "where", "condition");
  const Tensor coords = nonzero(atleast_1d(condition));  // a 0-dim condition counts as one element
  std::vector<Tensor> per_dim;
  for (int64_t d = 0; d < coords.size(1); ++d) per_dim.push_back(contiguous(select(coords, 1, d)));
  return per_dim;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  kernels::check_defined(x, "masked_select", "input");
  kernels::check_defined(mask, "masked_select", "mask");
  TD_CHECK(mask.dtype() == kBool, "masked_select: expected a bool mask, got dtype ", mask.dtype());
  const Shape shape = broadcast_shapes(x.sizes(), mask.sizes(), "masked_select");
  const Tensor flat_mask = reshape(expand(mask, shape), {-1});
  return index_select(reshape(expand(x, shape), {-1}), 0, reshape(nonzero(flat_mask), {-1}));
}

Tensor count_nonzero(const Tensor& x, IntList dims) {
  kernels::check_defined(x, "count_nonzero", "input");
  return dims.empty() ? sum(ne(x, 0)) : sum(ne(x, 0), dims);
}

namespace {

// index (1-D integers, each within dim d of x) checked, as an int64 tensor on x's device.
Tensor checked_index(const Tensor& x, int64_t d, const Tensor& index, const char* op) {
  kernels::check_defined(index, op, "index");
  TD_CHECK(index.dim() <= 1, op, ": index must be 0-D or 1-D, got shape ", shape_str(index.sizes()));
  TD_CHECK(is_integral(index.dtype(), false), op, ": index must be an integer tensor, got dtype ", index.dtype());
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  for (int64_t i : host_integers(index, op, "index")) {
    TD_CHECK(i >= -n && i < n, op, ": index ", i, " is out of range for dim ", d, " of size ", n);
  }
  if (index.numel() == 0) return zeros({0}, TensorOptions(kInt64).device(x.device()));
  const Tensor wrapped = remainder(index.to(kInt64), n);  // negative positions count from the end
  return reshape(wrapped, {-1}).to(x.device());
}

// The positions of dim d that index names, as a bool mask shaped to broadcast against x.
Tensor positions_mask(const Tensor& x, int64_t d, const Tensor& index) {
  const int64_t n = x.size(d);
  Tensor hit = zeros({n}, TensorOptions(kInt64).device(x.device()));
  hit = scatter_add(hit, 0, index, ones_like(index));
  Shape shape(static_cast<size_t>(x.dim()), 1);
  shape[d] = n;
  return reshape(gt(hit, 0), shape);
}

// Checks that source holds one row (along d) of x's shape for each of `count` positions.
void check_source(const Tensor& x, int64_t d, int64_t count, const Tensor& source, const char* op) {
  kernels::check_defined(source, op, "source");
  Shape want = x.sizes();
  want[d] = count;
  TD_CHECK(source.sizes() == want, op, ": source of shape ", shape_str(source.sizes()), " does not match ",
           shape_str(want), " (the input's with index's ", count, " rows along dim ", d, ")");
  TD_CHECK(source.dtype() == x.dtype(), op, ": source has dtype ", source.dtype(), " but the input has ", x.dtype());
}

// source's rows (along d) scattered to the positions of index in zeros shaped like x.
Tensor scattered_rows(const Tensor& x, int64_t d, const Tensor& index, const Tensor& source) {
  Shape index_shape(static_cast<size_t>(x.dim()), 1);
  index_shape[d] = index.numel();
  return scatter_add(zeros_like(x), d, expand(reshape(index, index_shape), source.sizes()), source);
}

}  // namespace

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha) {
  kernels::check_defined(x, "index_add", "input");
  TD_CHECK(x.dim() >= 1, "index_add: expected a tensor of at least 1 dim");
  const int64_t d = wrap_dim(dim, x.dim(), "index_add");
  const Tensor at = checked_index(x, d, index, "index_add");
  check_source(x, d, at.numel(), source, "index_add");
  const Tensor added = scattered_rows(x, d, at, source);
  return add(x, added, alpha);
}

Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
  kernels::check_defined(x, "index_copy", "input");
  TD_CHECK(x.dim() >= 1, "index_copy: expected a tensor of at least 1 dim");
  const int64_t d = wrap_dim(dim, x.dim(), "index_copy");
  const Tensor at = checked_index(x, d, index, "index_copy");
  check_source(x, d, at.numel(), source, "index_copy");
  // A position named twice takes its last row (PyTorch leaves the choice open), so no two rows add up.
  const std::vector<int64_t> positions = host_integers(at, "index_copy", "index");
  std::vector<int64_t> last_row(static_cast<size_t>(x.size(d)), -1);
  for (size_t k = 0; k < positions.size(); ++k) last_row[positions[k]] = static_cast<int64_t>(k);
  std::vector<int64_t> kept_rows, kept_positions;
  for (size_t k = 0; k < positions.size(); ++k) {
    if (last_row[positions[k]] != static_cast<int64_t>(k)) continue;
    kept_rows.push_back(static_cast<int64_t>(k));
    kept_positions.push_back(positions[k]);
  }
  const Tensor kept_at = long_tensor(kept_positions, x.device());
  const Tensor written = positions_mask(x, d, kept_at);
  Tensor out;
  {
    NoGradGuard values_only;
    const Tensor rows = scattered_rows(x, d, kept_at, index_select(source, d, long_tensor(kept_rows, x.device())));
    out = where(written, rows, x);
  }
  if (!autograd::needs_grad({&x, &source})) return out;
  // As PyTorch's: every row of source gets the gradient at its position, a row overwritten by a
  // later one too; x gets it where nothing was written.
  autograd::record("IndexCopyBackward0", {&x, &source}, {&out},
                   [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                     return {where(written, 0, g[0]), index_select(g[0], d, at)};
                   });
  return out;
}

Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, Scalar value) {
  kernels::check_defined(x, "index_fill", "input");
  TD_CHECK(x.dim() >= 1, "index_fill: expected a tensor of at least 1 dim");
  const int64_t d = wrap_dim(dim, x.dim(), "index_fill");
  return masked_fill(x, positions_mask(x, d, checked_index(x, d, index, "index_fill")), value);
}

Tensor take(const Tensor& x, const Tensor& index) {
  kernels::check_defined(x, "take", "input");
  kernels::check_defined(index, "take", "index");
  TD_CHECK(is_integral(index.dtype(), false), "take: index must be an integer tensor, got dtype ", index.dtype());
  const Tensor flat = reshape(x, {-1});
  const Tensor at = checked_index(flat, 0, reshape(index, {-1}), "take");
  return reshape(index_select(flat, 0, at), index.sizes());
}

Tensor put(const Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  kernels::check_defined(x, "put", "input");
  kernels::check_defined(index, "put", "index");
  kernels::check_defined(source, "put", "source");
  TD_CHECK(is_integral(index.dtype(), false), "put: index must be an integer tensor, got dtype ", index.dtype());
  TD_CHECK(index.numel() == source.numel(), "put: index (", index.numel(), " elements) and source (", source.numel(),
           " elements) must have as many elements");
  TD_CHECK(source.dtype() == x.dtype(), "put: source (", source.dtype(), ") must have the input's dtype (", x.dtype(),
           ")");
  const Tensor flat = reshape(x, {-1});
  const Tensor at = checked_index(flat, 0, reshape(index, {-1}), "put");
  return reshape(index_put(flat, {at}, reshape(source, {-1}), accumulate), x.sizes());
}

Tensor& put_(Tensor& x, const Tensor& index, const Tensor& source, bool accumulate) {
  autograd::check_inplace(x, "put_", autograd::needs_grad({&x, &source}));
  const Tensor result = put(x, index, source, accumulate);
  return copy_(x, result);  // x's old values keep the gradient where nothing was written, through result
}

std::vector<Tensor> unravel_index(const Tensor& indices, IntList shape) {
  kernels::check_defined(indices, "unravel_index", "indices");
  TD_CHECK(is_integral(indices.dtype(), false), "unravel_index: expected 'indices' to be an integer tensor, got dtype ",
           indices.dtype());
  int64_t numel = 1;
  for (int64_t s : shape) {
    TD_CHECK(s >= 0, "unravel_index: 'shape' cannot have negative values, got ", dims_str(shape.vec()));
    TD_CHECK(!__builtin_mul_overflow(numel, s, &numel), "unravel_index: 'shape' ", dims_str(shape.vec()),
             " holds more elements than int64 counts");
  }
  std::vector<Tensor> out;
  if (indices.numel() == 0) {
    for (size_t d = 0; d < shape.size(); ++d) {
      out.push_back(zeros(indices.sizes(), TensorOptions(kInt64).device(indices.device())));
    }
    return out;
  }
  TD_CHECK(numel > 0, "unravel_index: 'shape' ", dims_str(shape.vec()),
           " holds no elements, but 'indices' is not empty");
  for (int64_t i : host_integers(indices, "unravel_index", "indices")) {
    TD_CHECK(i >= -numel && i < numel, "unravel_index: index ", i, " is out of range for shape ", dims_str(shape.vec()),
             " (", numel, " elements)");
  }
  Tensor rest = remainder(indices.detach().to(kInt64), numel);  // negative ones from the end
  out.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    out[d] = remainder(rest, shape[d]);
    rest = floor_divide(rest, shape[d]);
  }
  return out;
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  kernels::check_defined(x, "take_along_dim", "input");
  kernels::check_defined(indices, "take_along_dim", "indices");
  if (!dim) return take_along_dim(reshape(x, {-1}), reshape(indices, {-1}), 0);
  TD_CHECK(x.dim() == indices.dim(), "take_along_dim: input and indices must have the same number of dims, got ",
           shape_str(x.sizes()), " and ", shape_str(indices.sizes()));
  const int64_t d = wrap_dim(*dim, x.dim(), "take_along_dim");
  // Every dim but d broadcasts between the two.
  Shape x_shape = x.sizes(), i_shape = indices.sizes();
  x_shape[d] = 1;
  i_shape[d] = 1;
  Shape common = broadcast_shapes(x_shape, i_shape, "take_along_dim");
  Shape x_to = common, i_to = common;
  x_to[d] = x.size(d);
  i_to[d] = indices.size(d);
  return gather(expand(x, x_to), d, expand(indices, i_to));
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  kernels::check_defined(x, "bincount", "input");
  TD_CHECK(x.dim() == 1, "bincount: expected a 1-D tensor, got shape ", shape_str(x.sizes()));
  TD_CHECK(minlength >= 0, "bincount: minlength must be non-negative, got ", minlength);
  int64_t length = minlength;
  for (int64_t v : host_integers(x, "bincount", "input")) {
    TD_CHECK(v >= 0, "bincount: the values must be non-negative, got ", v);
    length = std::max(length, v + 1);
  }
  const Tensor at = x.to(kInt64);
  if (!weights.defined()) {
    return scatter_add(zeros({length}, TensorOptions(kInt64).device(x.device())), 0, at, ones_like(at));
  }
  TD_CHECK(weights.sizes() == x.sizes(), "bincount: weights of shape ", shape_str(weights.sizes()),
           " for an input of shape ", shape_str(x.sizes()));
  const Tensor w = is_floating(weights.dtype()) ? weights : weights.to(kFloat64);
  return scatter_add(zeros({length}, w.options()), 0, at, w);
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right) {
  return kernels::searchsorted(sorted_sequence.detach(), values.detach(), right);
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right) {
  kernels::check_defined(boundaries, "bucketize", "boundaries");
  TD_CHECK(boundaries.dim() == 1, "bucketize: boundaries must be 1-D, got shape ", shape_str(boundaries.sizes()));
  return searchsorted(boundaries, x, right);
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& x, bool return_inverse, bool return_counts) {
  kernels::check_defined(x, "unique", "input");
  // Sorted, then each run of equal values kept once: its first element marks a new value.
  const Tensor flat = reshape(x.detach(), {-1});
  auto [sorted, order] = sort(flat);
  const int64_t n = sorted.numel();
  Tensor starts = ones({n}, TensorOptions(kBool).device(x.device()));
  if (n > 1) {
    const Tensor differs = ne(narrow(sorted, 0, 1, n - 1), narrow(sorted, 0, 0, n - 1));
    starts = cat({ones({1}, TensorOptions(kBool).device(x.device())), differs});
  }
  const Tensor values = masked_select(sorted, starts);
  Tensor inverse, counts;
  if (return_inverse || return_counts) {
    const Tensor group = sub(cumsum(starts, 0), 1);  // each sorted element's unique value
    if (return_inverse) {
      inverse = reshape(scatter_add(zeros({n}, group.options()), 0, order, group), x.sizes());
    }
    if (return_counts) counts = bincount(group, Tensor(), values.numel());
  }
  return {values, inverse, counts};
}

// ---- products that are matmul by another name ----

Tensor dot(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "dot", "input");
  kernels::check_defined(b, "dot", "other");
  TD_CHECK(a.dim() == 1 && b.dim() == 1 && a.size(0) == b.size(0), "dot: expected two 1-D tensors of one size, got ",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  TD_CHECK(a.dtype() == b.dtype(), "dot: expected both vectors to have one dtype, got ", a.dtype(), " and ", b.dtype());
  return matmul(a, b);
}

Tensor mv(const Tensor& m, const Tensor& v) {
  kernels::check_defined(m, "mv", "input");
  kernels::check_defined(v, "mv", "vec");
  TD_CHECK(m.dim() == 2 && v.dim() == 1 && m.size(1) == v.size(0),
           "mv: expected a matrix [n, m] and a vector [m], got ", shape_str(m.sizes()), " and ", shape_str(v.sizes()));
  return matmul(m, v);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  kernels::check_defined(a, "outer", "input");
  kernels::check_defined(b, "outer", "vec2");
  TD_CHECK(a.dim() == 1 && b.dim() == 1, "outer: expected two 1-D tensors, got ", shape_str(a.sizes()), " and ",
           shape_str(b.sizes()));
  return mul(unsqueeze(a, 1), unsqueeze(b, 0));
}

namespace {

// beta * input + alpha * product, with PyTorch's rule that beta 0 ignores input (NaN included).
Tensor scaled_sum(const Tensor& input, const Tensor& product, Scalar beta, Scalar alpha) {
  const Tensor scaled = alpha.to_double() == 1 ? product : mul(product, alpha);
  // The input's values are dropped (a NaN too); its gradient is zero.
  if (beta.to_double() == 0) return add(masked_fill(input, ones_like(input, kBool), 0), scaled);
  return add(beta.to_double() == 1 ? input : mul(input, beta), scaled);
}

}  // namespace

Tensor addmv(const Tensor& input, const Tensor& m, const Tensor& v, Scalar beta, Scalar alpha) {
  kernels::check_defined(input, "addmv", "input");
  return scaled_sum(input, mv(m, v), beta, alpha);
}

Tensor addr(const Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  kernels::check_defined(input, "addr", "input");
  return scaled_sum(input, outer(a, b), beta, alpha);
}

Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  kernels::check_defined(input, "baddbmm", "input");
  return scaled_sum(input, bmm(a, b), beta, alpha);
}

Tensor addbmm(const Tensor& input, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  kernels::check_defined(input, "addbmm", "input");
  return scaled_sum(input, sum(bmm(a, b), {0}), beta, alpha);
}

// ---- einsum ----

namespace {

// An operand of einsum with one label per dim. Letters are labels 0-51; the dims an ellipsis
// covers are labels from 52, aligned on the right across operands, as broadcasting aligns them.
struct Labeled {
  Tensor t;
  std::vector<int> labels;
};

constexpr int kEllipsisLabel = 52;

int letter_label(char c, const std::string& equation) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  TD_FAIL("einsum: '", c, "' in \"", equation, "\" is not a letter, an ellipsis, ',' or '->'");
}

// The labels of one term for an operand of `ndim` dims; `ellipsis_dims` of the widest ellipsis.
std::vector<int> term_labels(const std::string& term, int64_t ndim, int64_t ellipsis_dims, const std::string& equation,
                             const char* what) {
  std::vector<int> labels;
  const size_t dots = term.find("...");
  TD_CHECK(dots == std::string::npos || term.find("...", dots + 3) == std::string::npos, "einsum: ", what, " \"", term,
           "\" has more than one ellipsis");
  int64_t letters = 0;
  for (size_t i = 0; i < term.size(); ++i) {
    if (i == dots) {
      i += 2;
      continue;
    }
    ++letters;
  }
  const bool has_dots = dots != std::string::npos;
  if (ndim >= 0) {
    TD_CHECK(has_dots ? letters <= ndim : letters == ndim, "einsum: ", what, " \"", term, "\" has ", letters,
             " labels but its operand has ", ndim, " dims");
  }
  const int64_t covered = has_dots ? (ndim >= 0 ? ndim - letters : ellipsis_dims) : 0;
  for (size_t i = 0; i < term.size(); ++i) {
    if (has_dots && i == dots) {
      for (int64_t k = 0; k < covered; ++k) {
        labels.push_back(kEllipsisLabel + static_cast<int>(ellipsis_dims - covered + k));
      }
      i += 2;
      continue;
    }
    labels.push_back(letter_label(term[i], equation));
  }
  return labels;
}

// A label that appears twice in one operand takes that operand's diagonal, until each appears once.
void take_diagonals(Labeled& x) {
  for (size_t i = 0; i < x.labels.size(); ++i) {
    for (size_t j = i + 1; j < x.labels.size(); ++j) {
      if (x.labels[i] != x.labels[j]) continue;
      TD_CHECK(x.t.size(static_cast<int64_t>(i)) == x.t.size(static_cast<int64_t>(j)),
               "einsum: a label repeated in one operand spans dims of sizes ", x.t.size(static_cast<int64_t>(i)),
               " and ", x.t.size(static_cast<int64_t>(j)));
      const int label = x.labels[i];
      x.t = diagonal(x.t, 0, static_cast<int64_t>(i), static_cast<int64_t>(j));
      x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(j));
      x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(i));
      x.labels.push_back(label);
      i = static_cast<size_t>(-1);  // start over: the positions moved
      break;
    }
  }
}

// Sums x over its labels that `keep` does not hold.
void sum_unneeded(Labeled& x, const std::vector<bool>& keep) {
  Shape dims;
  std::vector<int> left;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (keep[x.labels[i]]) {
      left.push_back(x.labels[i]);
    } else {
      dims.push_back(static_cast<int64_t>(i));
    }
  }
  if (dims.empty()) return;
  x.t = sum(x.t, dims);
  x.labels = left;
}

int64_t label_size(const Labeled& x, int label) {
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (x.labels[i] == label) return x.t.size(static_cast<int64_t>(i));
  }
  return 1;
}

// x's dims in the order of `labels` (each of x's labels among them), a missing one as a dim of 1,
// expanded to `sizes`.
Tensor arranged(const Labeled& x, const std::vector<int>& labels, const Shape& sizes) {
  Shape order, unit_shape;
  for (int label : labels) {
    for (size_t i = 0; i < x.labels.size(); ++i) {
      if (x.labels[i] == label) order.push_back(static_cast<int64_t>(i));
    }
  }
  Tensor t = permute(x.t, order);
  for (int label : labels) unit_shape.push_back(label_size(x, label));
  return expand(reshape(t, unit_shape), sizes);
}

// a and b contracted over the labels they share that `keep` does not hold; batch labels (shared,
// kept) broadcast. The result's labels: batch, a's own, b's own.
Labeled contract(const Labeled& a, const Labeled& b, const std::vector<bool>& keep, const std::string& equation) {
  auto has = [](const Labeled& x, int label) {
    return std::find(x.labels.begin(), x.labels.end(), label) != x.labels.end();
  };
  std::vector<int> batch, summed, a_own, b_own;
  for (int label : a.labels) {
    if (!has(b, label)) {
      a_own.push_back(label);
    } else {
      (keep[label] ? batch : summed).push_back(label);
    }
  }
  for (int label : b.labels) {
    if (!has(a, label)) b_own.push_back(label);
  }
  auto common = [&](int label) {
    const int64_t sa = label_size(a, label), sb = label_size(b, label);
    TD_CHECK(sa == sb || sa == 1 || sb == 1, "einsum: in \"", equation, "\" a label spans sizes ", sa, " and ", sb,
             ", which do not broadcast");
    return std::max(sa, sb);
  };
  Shape batch_sizes, summed_sizes, a_sizes, b_sizes;
  int64_t batch_n = 1, summed_n = 1, a_n = 1, b_n = 1;
  for (int l : batch) batch_n *= batch_sizes.emplace_back(common(l));
  for (int l : summed) summed_n *= summed_sizes.emplace_back(common(l));
  for (int l : a_own) a_n *= a_sizes.emplace_back(label_size(a, l));
  for (int l : b_own) b_n *= b_sizes.emplace_back(label_size(b, l));
  auto concat = [](std::initializer_list<const std::vector<int>*> parts) {
    std::vector<int> out;
    for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  auto concat_sizes = [](std::initializer_list<const Shape*> parts) {
    Shape out;
    for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  const Tensor left =
      reshape(arranged(a, concat({&batch, &a_own, &summed}), concat_sizes({&batch_sizes, &a_sizes, &summed_sizes})),
              {batch_n, a_n, summed_n});
  const Tensor right =
      reshape(arranged(b, concat({&batch, &summed, &b_own}), concat_sizes({&batch_sizes, &summed_sizes, &b_sizes})),
              {batch_n, summed_n, b_n});
  Labeled out;
  out.t = reshape(bmm(left, right), concat_sizes({&batch_sizes, &a_sizes, &b_sizes}));
  out.labels = concat({&batch, &a_own, &b_own});
  return out;
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ') eq += c;
  }
  TD_CHECK(!operands.empty(), "einsum: no operands");
  const size_t arrow = eq.find("->");
  const std::string inputs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = inputs.find(',', start);
    terms.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  TD_CHECK(terms.size() == operands.size(), "einsum: \"", equation, "\" has ", terms.size(), " input terms for ",
           operands.size(), " operands");
  int64_t ellipsis_dims = 0;  // the most dims any operand's ellipsis covers
  for (size_t k = 0; k < terms.size(); ++k) {
    kernels::check_defined(operands[k], "einsum", "operands");
    TD_CHECK(operands[k].dtype() == operands[0].dtype(), "einsum: operand ", k, " has dtype ", operands[k].dtype(),
             " but operand 0 has ", operands[0].dtype());
    if (terms[k].find("...") != std::string::npos) {
      int64_t letters = static_cast<int64_t>(terms[k].size()) - 3;
      ellipsis_dims = std::max(ellipsis_dims, operands[k].dim() - letters);
    }
  }
  TD_CHECK(ellipsis_dims <= 64, "einsum: an ellipsis covers ", ellipsis_dims, " dims; at most 64 are supported");
  std::vector<Labeled> xs;
  std::vector<int> uses(kEllipsisLabel + 64, 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string what = "the term of operand " + std::to_string(k);
    Labeled x{operands[k], term_labels(terms[k], operands[k].dim(), ellipsis_dims, equation, what.c_str())};
    for (int label : x.labels) ++uses[label];
    xs.push_back(std::move(x));
  }
  // The output's labels: as written, or (no "->") the ellipsis's and then the letters used once, in
  // alphabetical order.
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    out_labels = term_labels(eq.substr(arrow + 2), -1, ellipsis_dims, equation, "the output term");
    for (size_t i = 0; i < out_labels.size(); ++i) {
      TD_CHECK(uses[out_labels[i]] > 0, "einsum: the output of \"", equation, "\" names a label no input has");
      TD_CHECK(std::count(out_labels.begin(), out_labels.end(), out_labels[i]) == 1, "einsum: the output of \"",
               equation, "\" names a label twice");
    }
  } else {
    for (int64_t k = 0; k < ellipsis_dims; ++k) out_labels.push_back(kEllipsisLabel + static_cast<int>(k));
    for (int label = 0; label < kEllipsisLabel; ++label) {
      if (uses[label] == 1) out_labels.push_back(label);
    }
  }
  std::vector<bool> in_output(uses.size(), false);
  for (int label : out_labels) in_output[label] = true;

  // Operand by operand: its diagonals taken, its labels nobody else needs summed away, then
  // contracted with what came before it.
  auto needed_after = [&](size_t k) {  // labels in the output or in operands after k
    std::vector<bool> keep = in_output;
    for (size_t j = k + 1; j < xs.size(); ++j) {
      for (int label : xs[j].labels) keep[label] = true;
    }
    return keep;
  };
  Labeled result = xs[0];
  take_diagonals(result);
  {
    std::vector<bool> keep = needed_after(0);
    sum_unneeded(result, keep);
  }
  for (size_t k = 1; k < xs.size(); ++k) {
    Labeled next = xs[k];
    take_diagonals(next);
    std::vector<bool> keep = needed_after(k);
    // Labels of either side that the other side and everything after do not need are summed first.
    std::vector<bool> keep_result = keep, keep_next = keep;
    for (int label : next.labels) keep_result[label] = true;
    for (int label : result.labels) keep_next[label] = true;
    sum_unneeded(result, keep_result);
    sum_unneeded(next, keep_next);
    result = contract(result, next, keep, equation);
  }
  Shape order;
  for (int label : out_labels) {
    order.push_back(std::find(result.labels.begin(), result.labels.end(), label) - result.labels.begin());
  }
  return permute(result.t, order);
}

// ---- random ----

Tensor randperm(int64_t n, TensorOptions options) {
  TD_CHECK(n >= 0, "randperm: n must be non-negative, got ", n);
  // The order of n uniform float64 draws (a tie, 2^-53 apart, is rarer than one in 10^6 for n = 10^5).
  const Tensor keys = rand({n}, TensorOptions(kFloat64).device(options.device()));
  const Tensor order = argsort(keys);
  const DType dtype = options.dtype_or(kInt64);
  return dtype == kInt64 ? order : order.to(dtype);
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  kernels::check_defined(probs, "multinomial", "input");
  TD_CHECK(probs.dim() == 1 || probs.dim() == 2, "multinomial: expected a 1-D or 2-D tensor of weights, got shape ",
           shape_str(probs.sizes()));
  TD_CHECK(is_floating(probs.dtype()), "multinomial: expected floating weights, got dtype ", probs.dtype());
  const Tensor p = atleast_2d(probs.detach()).to(kFloat64);
  const int64_t categories = p.size(1);
  TD_CHECK(categories > 0, "multinomial: there are no categories to draw from");
  TD_CHECK(num_samples > 0, "multinomial: num_samples must be positive, got ", num_samples);
  TD_CHECK(all(isfinite(p)).item<bool>() && !any(lt(p, 0)).item<bool>(),
           "multinomial: the weights must be finite and non-negative");
  const Tensor nonzero_counts = sum(gt(p, 0), {1});
  TD_CHECK(all(gt(nonzero_counts, 0)).item<bool>(), "multinomial: each row's weights must have a positive sum");
  TD_CHECK(replacement || all(ge(nonzero_counts, num_samples)).item<bool>(), "multinomial: cannot draw ", num_samples,
           " samples without replacement from a row with fewer categories of nonzero weight");
  const int64_t rows = p.size(0);
  Tensor samples;
  if (replacement) {
    // Inverse transform: the first category whose running share exceeds a uniform draw. The last
    // share is exactly 1 (a number divided by itself), so every draw in [0, 1) finds one.
    const Tensor running = cumsum(p, 1);
    const Tensor cdf = div(running, narrow(running, 1, categories - 1, 1));
    const Tensor u = rand({rows, num_samples}, TensorOptions(kFloat64).device(probs.device()));
    samples = searchsorted(cdf, u, true);
  } else {
    // Gumbel top-k: the k largest of log p + Gumbel noise are k draws without replacement.
    const Tensor u = rand({rows, categories}, TensorOptions(kFloat64).device(probs.device()));
    const Tensor keys = sub(log(p), log(neg(log(clamp(u, 1e-300, std::nullopt)))));
    samples = std::get<1>(topk(keys, num_samples, 1));
  }
  return probs.dim() == 1 ? reshape(samples, {num_samples}) : samples;
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  kernels::check_defined(x, "diag_embed", "input");
  TD_CHECK(x.dim() >= 1, "diag_embed: expected a tensor of at least 1 dim, got a 0-dim one");
  const int64_t out_dims = x.dim() + 1;
  const int64_t d1 = wrap_dim(dim1, out_dims, "diag_embed"), d2 = wrap_dim(dim2, out_dims, "diag_embed");
  TD_CHECK(d1 != d2, "diag_embed: diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  // x's last dim becomes the diagonal of a square of side n + |offset| at dims d1 and d2.
  const int64_t side = x.sizes().back() + (offset < 0 ? -offset : offset);
  Shape shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.insert(shape.begin() + std::min(d1, d2), side);
  shape.insert(shape.begin() + std::max(d1, d2), side);
  return diagonal_scatter(zeros(shape, x.options()), x, offset, d1, d2);
}

}  // namespace tandem
