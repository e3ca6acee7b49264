// Entry points of sorting: the dim moved last and each line made a contiguous row, the backend's
// row sort, then the dims put back; topk, kthvalue and median pick from the sorted lines.
#include "kernels/sort.h"

#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"
#include "kernels/index.h"
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

}  // namespace tandem::kernels
