// The LU decomposition of torch.linalg: lu_factor (LAPACK's packed factors and pivots, with
// PyTorch's gradient for square, wide and tall matrices), lu_unpack, lu and lu_solve (composed of
// triangular solves, so differentiable in the factors and B).
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/factorize.h"
#include "kernels/factory.h"

namespace tandem::linalg {

namespace {

Tensor mT(const Tensor& x) { return transpose(x, -2, -1); }
int64_t rows(const Tensor& a) { return a.sizes()[a.dim() - 2]; }
int64_t cols(const Tensor& a) { return a.sizes()[a.dim() - 1]; }

// LAPACK's pivots (row i swapped with row pivots[i] - 1, in turn) as the permutation they make:
// row i of L U is row order[i] of A (order int64 [*, m], on the pivots' device); `inverse` gives
// the inverse permutation instead. Read on the host, as PyTorch's lu_unpack does on a CPU.
Tensor row_order(const Tensor& pivots, int64_t m, bool inverse, const char* op) {
  NoGradGuard no_grad;
  const Tensor host = pivots.to(Device(kCPU)).contiguous();
  const int64_t k = host.dim() == 0 ? 0 : host.sizes().back();
  Shape shape(host.sizes().begin(), host.sizes().end() - 1);
  int64_t batch = 1;
  for (int64_t s : shape) batch *= s;
  std::vector<int64_t> order(static_cast<size_t>(batch * m));
  const int32_t* swaps = host.data_ptr<int32_t>();
  for (int64_t b = 0; b < batch; ++b) {
    int64_t* o = order.data() + b * m;
    std::iota(o, o + m, int64_t{0});
    for (int64_t i = 0; i < k; ++i) {
      const int64_t j = swaps[b * k + i] - 1;
      TD_CHECK(j >= 0 && j < m, op, ": pivots must be between 1 and the ", m, " rows of LU inclusive, got ", j + 1,
               " at position ", i + 1);
      std::swap(o[i], o[j]);
    }
    if (inverse) {
      std::vector<int64_t> direct(o, o + m);
      for (int64_t i = 0; i < m; ++i) o[direct[i]] = i;
    }
  }
  shape.push_back(m);
  return tensor(order).view(shape).to(pivots.device());
}

// The rows of x [*, m, c] taken in `order` [*, m].
Tensor take_rows(const Tensor& x, const Tensor& order) {
  return gather(x, -2, expand(unsqueeze(order, -1), x.sizes()));
}

// L (unit lower, [*, m, k]) and U (upper, [*, k, n]) of packed factors, differentiable in lu.
std::pair<Tensor, Tensor> unpack_factors(const Tensor& lu) {
  const int64_t m = rows(lu), n = cols(lu), k = std::min(m, n);
  const Tensor l = narrow(tril(lu, -1), -1, 0, k) + eye(m, k, lu.options());
  const Tensor u = narrow(triu(lu), -2, 0, k);
  return {l, u};
}

// The gradient of A = P L U (PyTorch's formulas): with M = L^-1 P^T dA U^-1 on the square part,
// phi collects what each factor's gradient puts on M; the rest of a wide U or a tall L adds its
// own term.
Tensor lu_factor_backward(const Tensor& grad, const Tensor& lu, const Tensor& pivots) {
  const int64_t m = rows(lu), n = cols(lu), k = std::min(m, n);
  auto [l, u] = unpack_factors(lu);
  const Tensor gl = narrow(tril(grad, -1), -1, 0, k), gu = narrow(triu(grad), -2, 0, k);
  const Tensor to_a = row_order(pivots, m, true, "linalg.lu_factor");  // P X: the rows of X put back in A's order
  if (m <= n) {
    // A = P L [U1 | U2].
    const Tensor u1 = narrow(u, -1, 0, m), gu1 = narrow(gu, -1, 0, m);
    Tensor phi = tril(matmul(mT(l), gl), -1) + triu(matmul(gu1, mT(u1)));
    if (n > m) phi = phi - tril(matmul(narrow(gu, -1, m, n - m), mT(narrow(u, -1, m, n - m))), -1);
    Tensor grad_a = solve_triangular(mT(l), solve_triangular(mT(u1), phi, false, false), true, true, true);
    if (n > m) grad_a = cat({grad_a, solve_triangular(mT(l), narrow(gu, -1, m, n - m), true, true, true)}, -1);
    return take_rows(grad_a, to_a);
  }
  // A = P [L1; L2] U.
  const Tensor l1 = narrow(l, -2, 0, n), l2 = narrow(l, -2, n, m - n);
  const Tensor gl1 = narrow(gl, -2, 0, n), gl2 = narrow(gl, -2, n, m - n);
  const Tensor phi = tril(matmul(mT(l1), gl1), -1) + triu(matmul(gu, mT(u)) - matmul(mT(l2), gl2));
  const Tensor top = solve_triangular(mT(l1), solve_triangular(mT(u), phi, false, false), true, true, true);
  const Tensor bottom = solve_triangular(mT(u), gl2, false, false);
  return take_rows(cat({top, bottom}, -2), to_a);
}

// lu_factor without the check for a zero on U's diagonal (linalg.lu's).
std::tuple<Tensor, Tensor, Tensor> factor(const Tensor& a, const char* op) {
  kernels::check_matrices(a, op, false);
  const kernels::LuFactors f = kernels::lu_factor(a);
  Tensor lu = f.lu;
  if (autograd::needs_grad({&a})) {
    SavedTensor slu(lu, true);
    const Tensor pivots = f.pivots;
    autograd::record("LinalgLuFactorExBackward0", {&a}, {&lu},
                     [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                       return {lu_factor_backward(g[0], slu.unpack("LinalgLuFactorExBackward0"), pivots)};
                     });
  }
  return {lu, f.pivots, f.info};
}

// Raises `why(k)` for the first matrix whose info k is positive, after "(Batch element b): " where
// A has a batch.
void raise_first_failure(const Tensor& info, const char* op, const std::function<std::string(int32_t)>& why) {
  if (info.numel() == 0) return;
  const Tensor host = info.to(Device(kCPU)).contiguous();
  const int32_t* values = host.data_ptr<int32_t>();
  for (int64_t b = 0; b < host.numel(); ++b) {
    TD_CHECK(values[b] <= 0, op, ": ", info.dim() > 0 ? "(Batch element " + std::to_string(b) + "): " : "",
             why(values[b]));
  }
}

std::string zero_on_u(int32_t k) {
  return "U[" + std::to_string(k) + "," + std::to_string(k) +
         "] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the "
         "factorization, consider calling linalg.lu(A)";
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& a, bool pivot, bool check_errors) {
  TD_CHECK(pivot, "linalg.lu_factor_ex: pivot = false (LU without row exchanges) is refused: PyTorch offers it on GPUs "
           "only, and tandem always pivots");
  auto result = factor(a, "linalg.lu_factor_ex");
  if (check_errors) raise_first_failure(std::get<2>(result), "linalg.lu_factor_ex", zero_on_u);
  return result;
}

std::tuple<Tensor, Tensor> lu_factor(const Tensor& a) {
  auto [lu, pivots, info] = factor(a, "linalg.lu_factor");
  raise_first_failure(info, "linalg.lu_factor", zero_on_u);
  return {lu, pivots};
}

// A factored once (its own batch), then solved for B by lu_solve (transposed for X A = B), as
// PyTorch's: info and X come from one factorization, and the gradient reaches A through LU's.
std::tuple<Tensor, Tensor> solve_ex(const Tensor& a, const Tensor& b, bool left, bool check_errors) {
  const char* op = "linalg.solve_ex";
  kernels::check_matrices(a, op, true);
  kernels::check_defined(b, op, "B");
  const bool vector =
      b.dim() == 1 || (b.dim() == a.dim() - 1 && b.sizes() == Shape(a.sizes().begin(), a.sizes().end() - 1));
  TD_CHECK(!vector || left, op, ": Incompatible shapes of A and B for the equation XA = B (", shape_str(a.sizes()),
           " and ", shape_str(b.sizes()), "): B is a vector");
  auto [lu, pivots, info] = factor(a, op);
  if (check_errors) {
    raise_first_failure(info, op, [](int32_t) { return "The solver failed because the input matrix is singular."; });
  }
  const Tensor x = lu_solve(lu, pivots, vector ? b.unsqueeze(-1) : b, left);
  return {vector ? x.squeeze(-1) : x, info};
}

std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& lu, const Tensor& pivots) {
  kernels::check_matrices(lu, "lu_unpack", false);
  kernels::check_defined(pivots, "lu_unpack", "pivots");
  const int64_t m = rows(lu), k = std::min(m, cols(lu));
  TD_CHECK(pivots.dtype() == kInt32, "lu_unpack: pivots must be int32 (as lu_factor gives them), got ", pivots.dtype());
  const Shape batch(lu.sizes().begin(), lu.sizes().end() - 2);
  Shape pivot_shape = batch;
  pivot_shape.push_back(k);
  TD_CHECK(pivots.sizes() == pivot_shape, "lu_unpack: pivots of shape ", shape_str(pivots.sizes()),
           " do not match LU of shape ", shape_str(lu.sizes()), " (expected ", shape_str(pivot_shape), ")");
  kernels::common_device("lu_unpack", {&lu, &pivots});
  auto [l, u] = unpack_factors(lu);
  // P's column i is the unit vector of row order[i]: P^T's rows are the identity's in that order.
  Shape square = batch;
  square.insert(square.end(), {m, m});
  const Tensor p =
      mT(take_rows(contiguous(expand(eye(m, m, lu.options()), square)), row_order(pivots, m, false, "lu_unpack")));
  return {contiguous(p), l, u};
}

std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a) {
  auto [lu_packed, pivots, info] = factor(a, "linalg.lu");
  return lu_unpack(lu_packed, pivots);
}

Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  kernels::check_matrices(lu, op, true);
  kernels::check_defined(b, op, "B");
  kernels::check_defined(pivots, op, "pivots");
  TD_CHECK(lu.dtype() == b.dtype(), op, ": Expected LU and B to have the same dtype, but found LU of type ", lu.dtype(),
           " and B of type ", b.dtype(), " instead");
  kernels::common_device(op, {&lu, &pivots, &b});
  const int64_t n = cols(lu);
  TD_CHECK(pivots.dtype() == kInt32, op, ": pivots should be int32 (as lu_factor gives them), got ", pivots.dtype());
  Shape pivot_shape(lu.sizes().begin(), lu.sizes().end() - 1);
  TD_CHECK(pivots.sizes() == pivot_shape, op, ": Expected LU.shape[:-1] and pivots.shape to be the same, but got LU ",
           shape_str(lu.sizes()), " and pivots ", shape_str(pivots.sizes()));
  TD_CHECK(b.dim() >= 2 && (left ? rows(b) : cols(b)) == n, op, ": Incompatible shapes of A and B for the equation ",
           left ? "AX = B" : "XA = B", " (", shape_str(lu.sizes()), " and ", shape_str(b.sizes()), ")");
  // X A = B is A^T X^T = B^T, and X A^T = B is A X^T = B^T.
  if (!left) return mT(lu_solve(lu, pivots, mT(b), true, !adjoint));
  const Shape batch = broadcast_shapes(Shape(lu.sizes().begin(), lu.sizes().end() - 2),
                                       Shape(b.sizes().begin(), b.sizes().end() - 2), op);
  Shape matrix_shape = batch, b_shape = batch;
  matrix_shape.insert(matrix_shape.end(), {n, n});
  pivot_shape = batch;
  pivot_shape.push_back(n);
  b_shape.insert(b_shape.end(), {n, cols(b)});
  const Tensor factors = expand(lu, matrix_shape), bb = expand(b, b_shape);
  auto [l, u] = unpack_factors(factors);
  const Tensor expanded_pivots = contiguous(expand(pivots, pivot_shape));
  if (!adjoint) {
    // A = P L U: X = U^-1 L^-1 P^T B.
    const Tensor y = solve_triangular(l, take_rows(bb, row_order(expanded_pivots, n, false, op)), false, true, true);
    return solve_triangular(u, y, true);
  }
  // A^T = U^T L^T P^T: X = P L^-T U^-T B.
  const Tensor w = solve_triangular(mT(l), solve_triangular(mT(u), bb, false), true, true, true);
  return take_rows(w, row_order(expanded_pivots, n, true, op));
}

}  // namespace tandem::linalg
