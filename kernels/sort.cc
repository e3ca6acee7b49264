// Entry points of sorting: the dim moved last and each line made a contiguous row, the backend's
// row sort, then the dims put back; topk, kthvalue and median pick from the sorted lines.
#include "kernels/sort.h"

#include <algorithm>

#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"
#include "kernels/index.h"
#include "kernels/op_codes.h"
#include "kernels/reduce.h"
#include "kernels/views.h"

namespace tandem::kernels {

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  check_defined(x, "sort", "input");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "sort");
  if (x.dim() == 0) {
    return {clone(x), zeros({}, TensorOptions(kInt64).device(x.device()))};
  }
  const Tensor last = contiguous(transpose(x, d, -1));
  const int64_t n = last.size(-1), rows = n == 0 ? 0 : last.numel() / n;
  Tensor values = empty_tensor(last.sizes(), x.dtype(), x.device());
  Tensor indices = empty_tensor(last.sizes(), kInt64, x.device());
  const Tensor in = view(last, {rows, n});
  const Tensor out_values = view(values, {rows, n}), out_indices = view(indices, {rows, n});
  x.is_cuda() ? cuda::sort_rows(out_values, out_indices, in, descending)
              : cpu::sort_rows(out_values, out_indices, in, descending);
  return {contiguous(transpose(values, d, -1)), contiguous(transpose(indices, d, -1))};
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  check_defined(x, "topk", "input");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "topk");
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  TD_CHECK(k >= 0 && k <= n, "topk: k (", k, ") must be in [0, ", n, "], the size of dim ", dim, " of the input ",
           shape_str(x.sizes()));
  auto [values, indices] = sort(x, d, largest);
  if (x.dim() == 0) return {values, indices};
  return {contiguous(narrow(values, d, 0, k)), contiguous(narrow(indices, d, 0, k))};
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  check_defined(x, "kthvalue", "input");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), "kthvalue");
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  TD_CHECK(k >= 1 && k <= n, "kthvalue: k (", k, ") must be in [1, ", n, "], the size of dim ", dim, " of the input ",
           shape_str(x.sizes()));
  auto [values, indices] = sort(x, d, false);
  if (x.dim() == 0) return {values, indices};
  Tensor v = select(values, d, k - 1), i = select(indices, d, k - 1);
  if (keepdim) return {unsqueeze(v, d), unsqueeze(i, d)};
  return {contiguous(v), contiguous(i)};
}

std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim, bool skip_nan) {
  const char* name = skip_nan ? "nanmedian" : "median";
  check_defined(x, name, "input");
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  if (x.dim() == 0) return {clone(x), zeros({}, TensorOptions(kInt64).device(x.device()))};
  const int64_t n = x.size(d);
  TD_CHECK(n > 0, name, ": dim ", dim, " of the input ", shape_str(x.sizes()), " is empty");
  auto [values, indices] = sort(x, d, false);
  // NaNs sort last: a line's count of them says where its median lies.
  Shape line_shape = x.sizes();
  line_shape[d] = 1;
  const Tensor nans = is_floating(x.dtype()) ? sum(ne(values, values), {d}, true)
                                             : zeros(line_shape, TensorOptions(kInt64).device(x.device()));
  const Tensor numbers = add(neg(nans), n);
  Tensor position = skip_nan ? floor_divide(sub(numbers, 1), 2) : where(gt(nans, 0), numbers, Scalar((n - 1) / 2));
  position = clamp(position, 0, n - 1);  // a line of NaNs only: its first NaN
  Tensor v = gather(values, d, position), i = gather(indices, d, position);
  if (keepdim) return {v, i};
  return {squeeze(v, d), squeeze(i, d)};
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right) {
  check_defined(sorted_sequence, "searchsorted", "sorted_sequence");
  check_defined(values, "searchsorted", "values");
  const Device device = common_device("searchsorted", {&sorted_sequence, &values});
  TD_CHECK(sorted_sequence.dim() >= 1, "searchsorted: sorted_sequence must have at least 1 dim");
  const bool one_sequence = sorted_sequence.dim() == 1;
  TD_CHECK(
      one_sequence || (values.dim() == sorted_sequence.dim() &&
                       std::equal(values.sizes().begin(), values.sizes().end() - 1, sorted_sequence.sizes().begin())),
      "searchsorted: a batched sorted_sequence ", shape_str(sorted_sequence.sizes()),
      " needs values with the same leading dims, got ", shape_str(values.sizes()));
  TD_CHECK(sorted_sequence.dtype() != kBool && values.dtype() != kBool, "searchsorted: bool tensors are not supported");
  const DType t = result_type(sorted_sequence, values);
  const int64_t n = sorted_sequence.size(-1);
  const int64_t rows =
      one_sequence ? 1 : numel_of(Shape(sorted_sequence.sizes().begin(), sorted_sequence.sizes().end() - 1));
  const int64_t m = one_sequence ? values.numel() : (values.dim() == 0 ? 1 : values.size(-1));
  const Tensor seq = contiguous(to(sorted_sequence, t));
  const Tensor v = contiguous(to(values, t));
  Tensor out = empty_tensor(values.sizes(), kInt64, device);
  if (out.numel() == 0) return out;
  const Tensor seq_rows = view(seq, {rows, n}), value_rows = view(v, {rows, m}), out_rows = view(out, {rows, m});
  device.is_cuda() ? cuda::searchsorted_rows(out_rows, seq_rows, value_rows, right)
                   : cpu::searchsorted_rows(out_rows, seq_rows, value_rows, right);
  return out;
}

namespace {

// values (and, for the extremes, int64 indices) of a row scan of x along dim.
std::tuple<Tensor, Tensor> row_scan(RowScan kind, const Tensor& x, int64_t dim, const char* op) {
  check_defined(x, op, "input");
  if (kind == RowScan::LogSumExp) {
    TD_CHECK(is_floating(x.dtype()), op, ": expected a floating tensor, got dtype ", x.dtype());
  }
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  if (x.dim() == 0) return {clone(x), zeros({}, TensorOptions(kInt64).device(x.device()))};
  const Tensor last = contiguous(transpose(x, d, -1));
  const int64_t n = last.size(-1), rows = n == 0 ? 0 : last.numel() / n;
  Tensor values = empty_tensor(last.sizes(), x.dtype(), x.device());
  Tensor indices = kind == RowScan::LogSumExp ? Tensor() : empty_tensor(last.sizes(), kInt64, x.device());
  const Tensor index_rows = indices.defined() ? view(indices, {rows, n}) : Tensor();
  x.is_cuda() ? cuda::scan_rows(kind, view(values, {rows, n}), index_rows, view(last, {rows, n}))
              : cpu::scan_rows(kind, view(values, {rows, n}), index_rows, view(last, {rows, n}));
  return {contiguous(transpose(values, d, -1)), indices.defined() ? contiguous(transpose(indices, d, -1)) : Tensor()};
}

}  // namespace

std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) { return row_scan(RowScan::Max, x, dim, "cummax"); }

std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) { return row_scan(RowScan::Min, x, dim, "cummin"); }

Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  return std::get<0>(row_scan(RowScan::LogSumExp, x, dim, "logcumsumexp"));
}

}  // namespace tandem::kernels
