#include "kernels/factorize.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"
#include "kernels/views.h"

namespace tandem::kernels {

namespace {

Shape batch_shape(const Tensor& a) { return Shape(a.sizes().begin(), a.sizes().end() - 2); }

int64_t count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape with(Shape shape, std::initializer_list<int64_t> more) {
  shape.insert(shape.end(), more);
  return shape;
}

// A copy of a [*, r, c] in the backends' layout: contiguous [B, c, r], column j of matrix b at [b, j, :].
// Always a copy: the backends write their results over it.
Tensor column_major(const Tensor& a) {
  const int64_t r = a.sizes()[a.dim() - 2], c = a.sizes()[a.dim() - 1];
  Tensor buffer = empty_tensor(with(batch_shape(a), {c, r}), a.dtype(), a.device());
  copy_into(buffer, transpose(a, -2, -1));
  return view(buffer, {count(batch_shape(a)), c, r});
}

// The matrices [*batch, r, c] of a column-major buffer [B, c, r], as a view.
Tensor matrices(const Tensor& buffer, const Shape& batch) {
  return transpose(view(buffer, with(batch, {buffer.sizes()[1], buffer.sizes()[2]})), -2, -1);
}

Tensor int32_tensor(IntList sizes, Device device) { return empty_tensor(sizes, kInt32, device); }

// Raises op's error for the first failed matrix, as fail(info) words it; "(Batch element i): "
// goes before it where there is a batch. A negative info (an invalid argument) that fail leaves
// unworded ("") is an internal error.
void check_info(const Tensor& info, const Shape& batch, const char* op,
                const std::function<std::string(int32_t)>& fail) {
  if (info.numel() == 0) return;
  const Tensor host = info.is_cpu() ? info : to(info, Device(kCPU));
  const int32_t* values = host.data_ptr<int32_t>();
  for (int64_t b = 0; b < host.numel(); ++b) {
    if (values[b] == 0) continue;
    const std::string why = fail(values[b]);
    TD_CHECK(why.empty(), op, ": ", batch.empty() ? "" : "(Batch element " + std::to_string(b) + "): ", why);
    TD_CHECK(false, op, ": argument ", -values[b], " of the backend's routine was invalid (an internal error)");
  }
}

// m with the elements outside its upper (or lower) triangle zeroed, as a new tensor.
Tensor keep_triangle(const Tensor& m, bool upper) {
  const int64_t r = m.sizes()[m.dim() - 2], c = m.sizes()[m.dim() - 1];
  const TensorOptions options = TensorOptions(kInt64).device(m.device());
  const Tensor rows = view(arange(r, options), {r, 1}), cols = arange(c, options);
  return where(upper ? ge(cols, rows) : le(cols, rows), m, 0);
}

Tensor identities(const Shape& batch, int64_t r, int64_t c, const Tensor& like) {
  Tensor out = empty_tensor(with(batch, {r, c}), like.dtype(), like.device());
  copy_into(out, expand(eye(r, c, TensorOptions(like.dtype()).device(like.device())), with(batch, {r, c})));
  return out;
}

}  // namespace

void check_matrices(const Tensor& a, const char* op, bool square) {
  check_defined(a, op, "A");
  TD_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions (got shape ", shape_str(a.sizes()),
           ")");
  TD_CHECK(a.dtype() != kFloat16 && a.dtype() != kBFloat16, op, ": Low precision dtypes not supported. Got ",
           a.dtype());
  TD_CHECK(a.dtype() == kFloat32 || a.dtype() == kFloat64, op, ": Expected a floating point tensor as input. Got ",
           a.dtype());
  const int64_t r = a.sizes()[a.dim() - 2], c = a.sizes()[a.dim() - 1];
  TD_CHECK(!square || r == c, op, ": A must be batches of square matrices, but they are ", r, " by ", c, " matrices");
}

LuFactors lu_factor(const Tensor& a) {
  check_matrices(a, "linalg.lu_factor", false);
  const Shape batch = batch_shape(a);
  const int64_t k = std::min(a.sizes()[a.dim() - 2], a.sizes()[a.dim() - 1]);
  Tensor buffer = column_major(a);
  Tensor pivots = int32_tensor({buffer.sizes()[0], k}, a.device());
  Tensor info = int32_tensor({buffer.sizes()[0]}, a.device());
  fill_into(info, 0);
  if (a.numel() > 0) {
    a.is_cuda() ? cuda::lu_factor(buffer, pivots, info) : cpu::lu_factor(buffer, pivots, info);
  }
  return {matrices(buffer, batch), view(pivots, with(batch, {k})), view(info, batch)};
}

Tensor solve(const Tensor& a, const Tensor& b, const char* op, bool inverting, bool check, Tensor* info_out) {
  const Shape batch = batch_shape(a);
  const int64_t n = a.sizes().back(), k = b.sizes().back();
  Tensor lu = column_major(a), x = column_major(b);
  Tensor pivots = int32_tensor({lu.sizes()[0], n}, a.device()), info = int32_tensor({lu.sizes()[0]}, a.device());
  fill_into(info, 0);
  if (a.numel() > 0) {
    a.is_cuda() ? cuda::lu_factor(lu, pivots, info) : cpu::lu_factor(lu, pivots, info);
    if (check && !info_out) {
      check_info(info, batch, op, [&](int32_t i) -> std::string {
        if (i < 0) return "";
        if (inverting) {
          return "The diagonal element " + std::to_string(i) +
                 " is zero, the inversion could not be completed because the input matrix is singular.";
        }
        return "The solver failed because the input matrix is singular.";
      });
    }
    if (k > 0) a.is_cuda() ? cuda::lu_solve(lu, pivots, x, false) : cpu::lu_solve(lu, pivots, x, false);
  }
  if (info_out) *info_out = view(info, batch);
  return matrices(x, batch);
}

Tensor cholesky(const Tensor& a, const char* op, Tensor* info_out) {
  const Shape batch = batch_shape(a);
  Tensor buffer = column_major(a);
  Tensor info = int32_tensor({buffer.sizes()[0]}, a.device());
  fill_into(info, 0);
  if (info_out) *info_out = view(info, batch);
  if (a.numel() > 0) {
    a.is_cuda() ? cuda::cholesky(buffer, info) : cpu::cholesky(buffer, info);
    if (!info_out) {
      check_info(info, batch, op, [](int32_t i) -> std::string {
        if (i < 0) return "";
        return "The factorization could not be completed because the input is not positive-definite (the leading "
               "minor of order " +
               std::to_string(i) + " is not positive-definite).";
      });
    }
  }
  return keep_triangle(matrices(buffer, batch), false);
}

Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left, bool unitriangular) {
  const Shape batch = batch_shape(a);
  Tensor triangle = column_major(a), x = column_major(b);
  if (b.numel() > 0) {
    a.is_cuda() ? cuda::triangular_solve(triangle, x, !upper, left, false, unitriangular)
                : cpu::triangular_solve(triangle, x, !upper, left, false, unitriangular);
  }
  return matrices(x, batch);
}

std::tuple<Tensor, Tensor> qr(const Tensor& a, bool complete, bool compute_q) {
  const Shape batch = batch_shape(a);
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1], k = std::min(m, n);
  const int64_t q_cols = complete ? m : k, r_rows = complete ? m : k;
  if (count(batch) == 0 || k == 0) {
    Tensor r = empty_tensor(with(batch, {r_rows, n}), a.dtype(), a.device());
    fill_into(r, 0);
    return {compute_q ? identities(batch, m, q_cols, a) : Tensor(), r};
  }
  Tensor buffer = column_major(a);
  Tensor tau = empty_tensor({buffer.sizes()[0], k}, a.dtype(), a.device());
  a.is_cuda() ? cuda::qr(buffer, tau) : cpu::qr(buffer, tau);
  Tensor r = keep_triangle(narrow(matrices(buffer, batch), -2, 0, r_rows), true);
  if (!compute_q) return {Tensor(), r};
  // Q's first k columns hold the reflectors; orgqr writes the rest.
  Tensor q = empty_tensor({buffer.sizes()[0], q_cols, m}, a.dtype(), a.device());
  copy_into(narrow(q, 1, 0, k), narrow(buffer, 1, 0, k));
  a.is_cuda() ? cuda::qr_q(q, tau) : cpu::qr_q(q, tau);
  return {matrices(q, batch), r};
}

std::tuple<Tensor, Tensor> geqrf(const Tensor& a) {
  const Shape batch = batch_shape(a);
  const int64_t k = std::min(a.sizes()[a.dim() - 2], a.sizes()[a.dim() - 1]);
  Tensor buffer = column_major(a);
  Tensor tau = empty_tensor({buffer.sizes()[0], k}, a.dtype(), a.device());
  if (count(batch) > 0 && k > 0) a.is_cuda() ? cuda::qr(buffer, tau) : cpu::qr(buffer, tau);
  return {matrices(buffer, batch), view(tau, with(batch, {k}))};
}

Tensor householder_product(const Tensor& a, const Tensor& tau) {
  const Shape batch = batch_shape(a);
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1], k = tau.sizes().back();
  if (count(batch) == 0 || n == 0) return empty_tensor(with(batch, {m, n}), a.dtype(), a.device());
  if (k == 0) return identities(batch, m, n, a);
  Tensor q = column_major(a);
  const Tensor scalars = view(contiguous(tau), {count(batch), k});
  a.is_cuda() ? cuda::qr_q(q, scalars) : cpu::qr_q(q, scalars);
  return matrices(q, batch);
}

std::tuple<Tensor, Tensor> eigh(const Tensor& a, bool upper, bool vectors, const char* op) {
  const Shape batch = batch_shape(a);
  const int64_t n = a.sizes().back();
  // The backends read the lower triangle: the upper one is the lower one of A^T.
  Tensor buffer = column_major(upper ? transpose(a, -2, -1) : a);
  Tensor w = empty_tensor({buffer.sizes()[0], n}, a.dtype(), a.device());
  Tensor info = int32_tensor({buffer.sizes()[0]}, a.device());
  fill_into(info, 0);
  if (a.numel() > 0) {
    a.is_cuda() ? cuda::eigh(buffer, w, info, vectors) : cpu::eigh(buffer, w, info, vectors);
    check_info(info, batch, op, [](int32_t i) -> std::string {
      if (i < 0) return "";
      return "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated "
             "eigenvalues (error code: " +
             std::to_string(i) + ").";
    });
  }
  return {view(w, with(batch, {n})), vectors ? matrices(buffer, batch) : Tensor()};
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full, bool vectors, const char* op) {
  const Shape batch = batch_shape(a);
  const int64_t m = a.sizes()[a.dim() - 2], n = a.sizes()[a.dim() - 1], k = std::min(m, n);
  // The backends take m >= n (cuSOLVER's gesvd needs it): a wide matrix is factored as its
  // transpose, A^T = U' S V'^T, so U = V' and Vh = U'^T.
  if (m < n) {
    auto [u, s, vh] = svd(transpose(a, -2, -1), full, vectors, op);
    if (!vectors) return {Tensor(), s, Tensor()};
    return {transpose(vh, -2, -1), s, transpose(u, -2, -1)};
  }
  const int64_t u_cols = full ? m : k;
  if (count(batch) == 0 || k == 0) {
    Tensor s = empty_tensor(with(batch, {k}), a.dtype(), a.device());
    if (!vectors) return {Tensor(), s, Tensor()};
    return {identities(batch, m, u_cols, a), s, identities(batch, k, n, a)};
  }
  Tensor buffer = column_major(a);
  const int64_t b = buffer.sizes()[0];
  Tensor s = empty_tensor({b, k}, a.dtype(), a.device());
  Tensor u = vectors ? empty_tensor({b, u_cols, m}, a.dtype(), a.device()) : Tensor();
  Tensor vt = vectors ? empty_tensor({b, n, n}, a.dtype(), a.device()) : Tensor();
  Tensor info = int32_tensor({b}, a.device());
  fill_into(info, 0);
  a.is_cuda() ? cuda::svd(buffer, s, u, vt, info) : cpu::svd(buffer, s, u, vt, info);
  check_info(info, batch, op, [](int32_t i) -> std::string {
    // LAPACK's gesdd takes a matrix with a NaN for an invalid argument (info -4).
    if (i == -4) return "The algorithm failed to converge because the input matrix contained non-finite values.";
    if (i < 0) return "";
    return "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated "
           "singular values (error code: " +
           std::to_string(i) + ").";
  });
  if (!vectors) return {Tensor(), view(s, with(batch, {k})), Tensor()};
  return {matrices(u, batch), view(s, with(batch, {k})), matrices(vt, batch)};
}

}  // namespace tandem::kernels
