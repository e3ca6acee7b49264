// torch.linalg on the factorizations of kernels/factorize.h. Each factorization records a node
// whose backward is composed of differentiable ops (solve, triangular solves, matmul), so
// gradients of any order flow through it; the rest is composed of them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/factorize.h"
#include "kernels/factory.h"

namespace tandem {

using autograd::needs_grad;
using autograd::record;
using autograd::sum_to;

namespace {

Tensor mT(const Tensor& x) { return transpose(x, -2, -1); }

int64_t rows(const Tensor& a) { return a.sizes()[a.dim() - 2]; }
int64_t cols(const Tensor& a) { return a.sizes()[a.dim() - 1]; }

Shape batch_of(const Tensor& a) { return Shape(a.sizes().begin(), a.sizes().end() - 2); }

Shape with(Shape shape, std::initializer_list<int64_t> more) {
  shape.insert(shape.end(), more);
  return shape;
}

Tensor identity(int64_t n, const Tensor& like) { return eye(n, n, like.options()); }

// The gradient given, or zeros shaped as the output it belongs to.
Tensor or_zeros(const Tensor& grad, const Tensor& output) { return grad.defined() ? grad : zeros_like(output); }

// b's checks against A for the solvers: defined, A's dtype and device.
void check_right_side(const Tensor& a, const Tensor& b, const char* op) {
  kernels::check_defined(b, op, "B");
  TD_CHECK(a.dtype() == b.dtype(), op, ": Expected A and B to have the same dtype, but found A of type ", a.dtype(),
           " and B of type ", b.dtype(), " instead");
  kernels::common_device(op, {&a, &b});
}

// a [*, n, n] and b [*, r, c] with their batch dims broadcast to one shape.
std::pair<Tensor, Tensor> broadcast_batches(const Tensor& a, const Tensor& b, const char* op) {
  const Shape batch = broadcast_shapes(batch_of(a), batch_of(b), op);
  return {expand(a, with(batch, {rows(a), cols(a)})), expand(b, with(batch, {rows(b), cols(b)}))};
}

// A X = B for matrices B, batch dims broadcast; differentiable in A and B.
// With `info`, a singular matrix is not an error: *info receives each matrix's (the _ex forms').
Tensor solve_matrices(const Tensor& a, const Tensor& b, const char* op, bool inverting, Tensor* info = nullptr) {
  TD_CHECK(b.dim() >= 2 && rows(b) == cols(a), op, ": Incompatible shapes of A and B for the equation AX = B (",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()), ")");
  auto [ab, bb] = broadcast_batches(a, b, op);
  Tensor x = kernels::solve(ab, bb, op, inverting, true, info);
  if (!needs_grad({&a, &b})) return x;
  const Shape a_shape = a.sizes(), b_shape = b.sizes();
  const bool a_needs = a.requires_grad();
  // An _ex form's backward leaves a failed matrix's gradient what dividing by zero gives (inf,
  // NaN) instead of raising, as PyTorch's: the others' are still right.
  const bool checked = info == nullptr;
  SavedTensor sa(a, false), sx = SavedTensor::output_if(a_needs, x);
  record("LinalgSolveBackward0", {&a, &b}, {&x}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor av = sa.unpack("LinalgSolveBackward0");
    Tensor unchecked;
    const Tensor grad_b = solve_matrices(mT(av), g[0], op, false, checked ? nullptr : &unchecked);
    Tensor grad_a;
    if (a_needs) grad_a = sum_to(-matmul(grad_b, mT(sx.unpack("LinalgSolveBackward0"))), a_shape);
    return {grad_a, sum_to(grad_b, b_shape)};
  });
  return x;
}

// Whether b is a (batch of) vector(s) for A, as torch.linalg.solve decides: 1-D, or A's leading
// sizes without its last.
bool is_vector_side(const Tensor& a, const Tensor& b) {
  if (b.dim() == 1) return true;
  if (b.dim() != a.dim() - 1) return false;
  return b.sizes() == Shape(a.sizes().begin(), a.sizes().end() - 1);
}

// The default tolerances of pinv and matrix_rank: singular values at or below
// max(atol, rtol * largest) count as zero.
Tensor tolerance(const Tensor& s, int64_t m, int64_t n, std::optional<double> atol, std::optional<double> rtol) {
  const double eps = s.dtype() == kFloat64 ? std::numeric_limits<double>::epsilon()
                                           : static_cast<double>(std::numeric_limits<float>::epsilon());
  // An rtol left unset is 0 where a positive atol is given (PyTorch's rule), else the default.
  const double relative = rtol ? *rtol : (atol && *atol > 0 ? 0.0 : eps * static_cast<double>(std::max(m, n)));
  const Tensor largest =
      s.size(-1) == 0 ? zeros(with(batch_of(unsqueeze(s, -1)), {1}), s.options()) : narrow(s, -1, 0, 1);
  return maximum(largest * relative, full({}, atol.value_or(0.0), s.options()));
}

// Exclusive products: out[i] = prod of s[j] for j != i, along the last dim.
Tensor products_of_others(const Tensor& s) {
  const int64_t k = s.size(-1);
  if (k == 0) return s;
  const Tensor one = ones_like(narrow(s, -1, 0, 1));
  const Tensor before = cat({one, narrow(cumprod(s, -1), -1, 0, k - 1)}, -1);
  const Tensor after = flip(cat({one, narrow(cumprod(flip(s, {-1}), -1), -1, 0, k - 1)}, -1), {-1});
  return before * after;
}

// det's gradient: g det A^-T, or, where some matrix is singular, g times the cofactor matrix
// U diag(prod of the other singular values) Vh det(U Vh), which holds for singular matrices too.
Tensor det_backward(const Tensor& g, const Tensor& a, const Tensor& det) {
  const Tensor scale = unsqueeze(unsqueeze(g * det, -1), -1);
  const bool singular = [&] {
    NoGradGuard no_grad;
    return any(det == 0).item<bool>();
  }();
  if (!singular) return scale * mT(linalg::inv(a));
  auto [u, s, vh] = linalg::svd(a, false);
  Tensor orientation;
  {
    NoGradGuard no_grad;
    orientation = linalg::det(u) * linalg::det(vh);
  }
  const Tensor cofactors = matmul(u * unsqueeze(products_of_others(s), -2), vh);
  return unsqueeze(unsqueeze(g * orientation, -1), -1) * cofactors;
}

// QR's gradient for m >= n (Q [m, n], R [n, n]).
Tensor qr_backward_tall(const Tensor& q, const Tensor& r, const Tensor& gq, const Tensor& gr) {
  const Tensor m = matmul(r, mT(gr)) - matmul(mT(gq), q);
  const Tensor lower_copied = tril(m) + mT(tril(m, -1));
  return linalg::solve_triangular(mT(r), gq + matmul(q, lower_copied), false, false);
}

Tensor symmetric_part(const Tensor& x) { return (x + mT(x)) * 0.5; }

}  // namespace

namespace {

// The reflector H_i's scalar tau_i [*, 1, 1] and vector v_i [*, m, 1]: a's column i below the
// diagonal, 1 on it, 0 above.
std::pair<Tensor, Tensor> reflector(const Tensor& a, const Tensor& tau, int64_t i) {
  const int64_t m = rows(a);
  const Tensor row = arange(m, TensorOptions(kInt64).device(a.device())).view({m, 1});
  const Tensor v = add(where(gt(row, i), narrow(a, -1, i, 1), 0.0), eq(row, i).to(a.dtype()));
  return {unsqueeze(narrow(tau, -1, i, 1), -1), v};
}

// x with the reflectors i in `order` applied one after another: H_i x from the left, x H_i from the
// right. Each is a rank-one update x - tau v (v^T x), so Q is never formed; differentiable.
Tensor apply_reflectors(const Tensor& a, const Tensor& tau, Tensor x, bool left, bool ascending) {
  const int64_t k = tau.sizes().back();
  for (int64_t step = 0; step < k; ++step) {
    const int64_t i = ascending ? step : k - 1 - step;
    const auto [t, v] = reflector(a, tau, i);
    x = left ? sub(x, mul(t, matmul(v, matmul(mT(v), x)))) : sub(x, mul(t, matmul(matmul(x, v), mT(v))));
  }
  return x;
}

// householder_product's and ormqr's checks of a and tau (PyTorch's words).
void check_reflectors(const Tensor& a, const Tensor& tau, const char* op) {
  kernels::check_defined(a, op, "input");
  kernels::check_defined(tau, op, "tau");
  TD_CHECK(a.dim() >= 2, op, ": input must have at least 2 dimensions, got shape ", shape_str(a.sizes()));
  TD_CHECK(is_floating(a.dtype()) && a.dtype() != kFloat16 && a.dtype() != kBFloat16, op,
           ": expected a float32 or float64 input, got ", a.dtype());
  TD_CHECK(tau.dtype() == a.dtype(), op, ": tau dtype ", tau.dtype(), " does not match input dtype ", a.dtype());
  kernels::common_device(op, {&a, &tau});
  TD_CHECK(tau.dim() == a.dim() - 1, op, ": expected tau to have one dimension less than input, got shapes ",
           shape_str(tau.sizes()), " and ", shape_str(a.sizes()));
  const Shape batch = batch_of(a);
  TD_CHECK(Shape(tau.sizes().begin(), tau.sizes().end() - 1) == batch, op,
           ": expected the batch dims of tau to equal input's, got shapes ", shape_str(tau.sizes()), " and ",
           shape_str(a.sizes()));
  TD_CHECK(cols(a) >= tau.sizes().back(), op, ": input.shape[-1] (", cols(a), ") must be at least tau.shape[-1] (",
           tau.sizes().back(), ")");
}

}  // namespace

namespace linalg {

Tensor householder_product(const Tensor& a, const Tensor& tau) {
  const char* op = "linalg.householder_product";
  check_reflectors(a, tau, op);
  TD_CHECK(rows(a) >= cols(a), op, ": input.shape[-2] (", rows(a), ") must be at least input.shape[-1] (", cols(a), ")");
  if (!needs_grad({&a, &tau})) return kernels::householder_product(a, tau);
  // With gradients: the reflectors applied to the first n columns of the identity, by recorded ops.
  const Tensor identity = expand(eye(rows(a), cols(a), a.options()), with(batch_of(a), {rows(a), cols(a)}));
  if (tau.sizes().back() == 0) return add(identity, mul(add(sum(a), sum(tau)), 0.0));  // no reflector: I, in the graph
  return apply_reflectors(a, tau, identity, true, false);
}

}  // namespace linalg

std::tuple<Tensor, Tensor> geqrf(const Tensor& a) {
  kernels::check_matrices(a, "geqrf", false);
  auto [factors, tau] = kernels::geqrf(a);
  if (needs_grad({&a})) {
    record("GeqrfBackward0", {&a}, {&factors, &tau}, [](const std::vector<Tensor>&) -> std::vector<Tensor> {
      TD_FAIL("geqrf: the derivative is not implemented, as in PyTorch; use linalg.qr, which has one");
    });
  }
  return {factors, tau};
}

Tensor orgqr(const Tensor& a, const Tensor& tau) { return linalg::householder_product(a, tau); }

Tensor ormqr(const Tensor& a, const Tensor& tau, const Tensor& c, bool left, bool transpose) {
  const char* op = "ormqr";
  check_reflectors(a, tau, op);
  kernels::check_defined(c, op, "other");
  TD_CHECK(c.dtype() == a.dtype(), op, ": other dtype ", c.dtype(), " does not match input dtype ", a.dtype());
  kernels::common_device(op, {&a, &c});
  TD_CHECK(c.dim() == a.dim(), op, ": expected other to have as many dims as input, got shapes ", shape_str(c.sizes()),
           " and ", shape_str(a.sizes()));
  TD_CHECK(batch_of(c) == batch_of(a), op, ": expected the batch dims of other to equal input's, got shapes ",
           shape_str(c.sizes()), " and ", shape_str(a.sizes()));
  const int64_t along = left ? rows(c) : cols(c);
  TD_CHECK(along == rows(a), op, ": other.shape[", left ? -2 : -1, "] (", along, ") must equal input.shape[-2] (",
           rows(a), ")");
  TD_CHECK(tau.sizes().back() == std::min(along, cols(a)), op, ": tau.shape[-1] (", tau.sizes().back(),
           ") must equal min(other.shape[", left ? -2 : -1, "], input.shape[-1]) (", std::min(along, cols(a)), ")");
  // Q = H_1 ... H_k: Q C applies H_k first, Q^T C H_1 first; C Q applies H_1 first, C Q^T H_k first.
  return apply_reflectors(a, tau, c, left, left == transpose);
}

namespace linalg {

namespace {

Tensor solve_with(const Tensor& a, const Tensor& b, bool left, const char* op, Tensor* info) {
  kernels::check_matrices(a, op, true);
  check_right_side(a, b, op);
  if (is_vector_side(a, b)) {
    TD_CHECK(left, op, ": Incompatible shapes of A and B for the equation XA = B (", shape_str(a.sizes()), " and ",
             shape_str(b.sizes()), "): B is a vector");
    return squeeze(solve_matrices(a, unsqueeze(b, -1), op, false, info), -1);
  }
  if (!left) return mT(solve_matrices(mT(a), mT(b), op, false, info));
  return solve_matrices(a, b, op, false, info);
}

Tensor inv_with(const Tensor& a, const char* op, Tensor* info) {
  kernels::check_matrices(a, op, true);
  return solve_matrices(a, expand(identity(cols(a), a), a.sizes()), op, true, info);
}

// check_errors: a failure found in info is raised by the checked form, with its message.
bool failed(const Tensor& info) { return info.numel() > 0 && any(ne(info, 0)).item<bool>(); }

}  // namespace

Tensor solve(const Tensor& a, const Tensor& b, bool left) { return solve_with(a, b, left, "linalg.solve", nullptr); }

Tensor inv(const Tensor& a) { return inv_with(a, "linalg.inv", nullptr); }

std::tuple<Tensor, Tensor> inv_ex(const Tensor& a, bool check_errors) {
  Tensor info;
  Tensor inverse = inv_with(a, "linalg.inv_ex", &info);
  if (check_errors && failed(info)) inv_with(a, "linalg.inv_ex", nullptr);
  return {inverse, info};
}

Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left, bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  kernels::check_matrices(a, op, true);
  check_right_side(a, b, op);
  TD_CHECK(b.dim() >= 2 && (left ? rows(b) : cols(b)) == cols(a), op,
           ": Incompatible shapes of A and B for the equation ", left ? "AX = B" : "XA = B", " (", shape_str(a.sizes()),
           " and ", shape_str(b.sizes()), ")");
  auto [ab, bb] = broadcast_batches(a, b, op);
  Tensor x = kernels::solve_triangular(ab, bb, upper, left, unitriangular);
  if (!needs_grad({&a, &b})) return x;
  const Shape a_shape = a.sizes(), b_shape = b.sizes();
  const bool a_needs = a.requires_grad();
  SavedTensor sa(a, false), sx = SavedTensor::output_if(a_needs, x);
  record("LinalgSolveTriangularBackward0", {&a, &b}, {&x}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor av = sa.unpack("LinalgSolveTriangularBackward0");
    const Tensor grad_b = solve_triangular(mT(av), g[0], !upper, left, unitriangular);
    Tensor grad_a;
    if (a_needs) {
      const Tensor xv = sx.unpack("LinalgSolveTriangularBackward0");
      grad_a = left ? -matmul(grad_b, mT(xv)) : -matmul(mT(xv), grad_b);
      const int64_t diagonal = unitriangular ? 1 : 0;
      grad_a = sum_to(upper ? triu(grad_a, diagonal) : tril(grad_a, -diagonal), a_shape);
    }
    return {grad_a, sum_to(grad_b, b_shape)};
  });
  return x;
}

namespace {

// The relative cut below which a driver counts singular values as zero, as LAPACK reads rcond:
// gelsd takes one outside (0, 1) as its epsilon (2^-53 in float64), gelss a negative one as the
// machine precision (2^-52); gelsy (whose rank is at least 1, see lstsq) as it is. Unset: PyTorch's
// default, the dtype's epsilon times max(m, n).
double lstsq_cut(const std::string& driver, std::optional<double> rcond, DType dtype, int64_t m, int64_t n) {
  const double eps = dtype == kFloat64 ? 0x1p-52 : 0x1p-23;
  if (!rcond) return eps * static_cast<double>(std::max(m, n));
  if (driver == "gelsd" && (*rcond <= 0 || *rcond >= 1)) return eps / 2;
  if (driver == "gelss" && *rcond < 0) return eps;
  if (driver == "gelsy") return std::min(*rcond, 1 - eps);  // a cut of 1 or more keeps the largest
  return *rcond;
}

}  // namespace

LstsqResult lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond, std::optional<std::string> driver) {
  const char* op = "linalg.lstsq";
  kernels::check_matrices(a, op, false);
  check_right_side(a, b, op);
  const std::string how = driver.value_or(a.is_cuda() ? "gels" : "gelsy");
  TD_CHECK(how == "gels" || how == "gelsy" || how == "gelsd" || how == "gelss", op,
           ": parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got '", how, "'");
  TD_CHECK(how == "gels" || !rcond || std::isfinite(*rcond), op, ": rcond must be finite, got ", *rcond);
  const double cut = lstsq_cut(how, rcond, a.dtype(), rows(a), cols(a));
  // gelss never cuts below the dtype's smallest normal number.
  const double floor = how != "gelss"          ? 0.0
                       : a.dtype() == kFloat64 ? std::numeric_limits<double>::min()
                                               : static_cast<double>(std::numeric_limits<float>::min());
  const bool vector = b.dim() == a.dim() - 1;
  const Tensor bm = vector ? unsqueeze(b, -1) : b;
  TD_CHECK(bm.dim() >= 2 && rows(bm) == rows(a), op, ": Incompatible shapes of A and B for the equation AX = B (",
           shape_str(a.sizes()), " and ", shape_str(b.sizes()), ")");
  broadcast_shapes(batch_of(a), batch_of(bm), op);
  const int64_t m = rows(a), n = cols(a);
  const TensorOptions integers = TensorOptions(kInt64).device(a.device());
  LstsqResult out{Tensor(), empty({0}, a.options()), empty({0}, integers), empty({0}, a.options())};
  bool full_rank = true;
  if (how != "gels") {
    NoGradGuard no_grad;
    const Tensor s = std::get<1>(kernels::svd(a, false, false, op));
    out.rank = sum(s > tolerance(s, m, n, floor, cut), {-1}).to(kInt64);
    full_rank = a.numel() == 0 || all(eq(out.rank, std::min(m, n))).item<bool>();
    if (how != "gelsy") out.singular_values = s;
  }
  if (!full_rank) {
    out.solution = matmul(pinv(a, floor, cut), bm);
  } else if (m >= n) {
    auto [q, r] = qr(a);
    out.solution = solve_triangular(r, matmul(mT(q), bm), true);
  } else {
    auto [q, r] = qr(mT(a));
    out.solution = matmul(q, solve_triangular(mT(r), bm, false));
  }
  if (m > n && full_rank && how != "gelsy") out.residuals = sum(square(matmul(a, out.solution) - bm), {-2});
  // A vector B keeps its residuals' last dim (of size 1), as PyTorch's.
  if (vector) out.solution = squeeze(out.solution, -1);
  return out;
}

Tensor det(const Tensor& a) {
  kernels::check_matrices(a, "linalg.det", true);
  Tensor y;
  {
    NoGradGuard no_grad;
    const kernels::LuFactors f = kernels::lu_factor(a);
    const Tensor positions = arange(1, cols(a) + 1, 1, TensorOptions(kInt32).device(a.device()));
    const Tensor swaps = prod(where(f.pivots != positions, -1.0, 1.0).to(a.dtype()), -1);
    y = prod(diagonal(f.lu, 0, -2, -1), -1) * swaps;
  }
  if (!needs_grad({&a})) return y;
  SavedTensor sa(a, false), sy(y, true);
  record("LinalgDetBackward0", {&a}, {&y}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {det_backward(g[0], sa.unpack("LinalgDetBackward0"), sy.unpack("LinalgDetBackward0"))};
  });
  return y;
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& a) {
  kernels::check_matrices(a, "linalg.slogdet", true);
  Tensor sign_of, log_abs;
  {
    NoGradGuard no_grad;
    const kernels::LuFactors f = kernels::lu_factor(a);
    const Tensor positions = arange(1, cols(a) + 1, 1, TensorOptions(kInt32).device(a.device()));
    const Tensor swaps = prod(where(f.pivots != positions, -1.0, 1.0).to(a.dtype()), -1);
    const Tensor d = diagonal(f.lu, 0, -2, -1);
    sign_of = prod(sign(d), -1) * swaps;
    log_abs = sum(log(abs(d)), {-1});
  }
  if (!needs_grad({&a})) return {sign_of, log_abs};
  SavedTensor sa(a, false), ssign(sign_of, false);
  record("LinalgSlogdetBackward0", {&a}, {&log_abs}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor av = sa.unpack("LinalgSlogdetBackward0");
    const Tensor id = expand(identity(cols(av), av), av.sizes());
    Tensor inverse_t;
    const bool singular = [&] {
      NoGradGuard no_grad;
      return any(ssign.unpack("LinalgSlogdetBackward0") == 0).item<bool>();
    }();
    if (singular) {
      // log|det| falls to -inf at a singular matrix: its gradient is what A^-T's division by zero
      // gives there (inf, NaN), as PyTorch's, not an error.
      inverse_t = kernels::solve(mT(av), id, "linalg.slogdet", true, false);
    } else {
      inverse_t = solve_matrices(mT(av), id, "linalg.slogdet", true);
    }
    return {unsqueeze(unsqueeze(g[0], -1), -1) * inverse_t};
  });
  return {sign_of, log_abs};
}

namespace {

Tensor cholesky_with(const Tensor& a, bool upper, const char* op, Tensor* info) {
  kernels::check_matrices(a, op, true);
  // U = L^T reads A's upper triangle: the lower one of A^T.
  Tensor l = kernels::cholesky(upper ? mT(a) : a, op, info);
  if (needs_grad({&a})) {
    SavedTensor sl(l, true);
    record("LinalgCholeskyBackward0", {&a}, {&l}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      const Tensor lv = sl.unpack("LinalgCholeskyBackward0");
      // A = L L^T: grad_A = sym(L^-T phi(L^T grad_L) L^-1), phi keeping the lower triangle with its
      // diagonal halved.
      const Tensor m = matmul(mT(lv), tril(g[0]));
      const Tensor phi = tril(m, -1) + m * identity(cols(m), m) * 0.5;
      const Tensor right = solve_triangular(lv, phi, false, false);
      const Tensor grad = symmetric_part(solve_triangular(mT(lv), right, true));
      return {upper ? mT(grad) : grad};
    });
  }
  return upper ? mT(l) : l;
}

}  // namespace

Tensor cholesky(const Tensor& a, bool upper) { return cholesky_with(a, upper, "linalg.cholesky", nullptr); }

std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& a, bool upper, bool check_errors) {
  Tensor info;
  Tensor l = cholesky_with(a, upper, "linalg.cholesky_ex", &info);
  if (check_errors && failed(info)) cholesky_with(a, upper, "linalg.cholesky_ex", nullptr);
  return {l, info};
}

std::tuple<Tensor, Tensor> qr(const Tensor& a, const std::string& mode) {
  TD_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "linalg.qr: qr received unrecognized mode '", mode,
           "' but expected one of 'reduced' (default), 'r', or 'complete'");
  kernels::check_matrices(a, "linalg.qr", false);
  const bool complete = mode == "complete";
  auto [q, r] = kernels::qr(a, complete, mode != "r");
  if (mode == "r") q = empty({0}, a.options());
  if (!needs_grad({&a})) return {q, r};
  const int64_t m = rows(a), n = cols(a);
  if (mode == "r" || (complete && m > n)) {
    const std::string why = mode == "r" ? "The derivative of linalg.qr depends on Q, which is not computed when "
                                          "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                                          "differentiate through linalg.qr."
                                        : "The QR decomposition is not differentiable when mode='complete' and "
                                          "nrows > ncols.";
    record("LinalgQrBackward0", {&a}, {&q, &r}, [why](const std::vector<Tensor>&) -> std::vector<Tensor> {
      TD_CHECK(false, "linalg.qr: ", why);
      return {};
    });
    return {q, r};
  }
  SavedTensor sq(q, true, 0), sr(r, true, 1), sa = SavedTensor::input_if(m < n, a);
  record("LinalgQrBackward0", {&a}, {&q, &r}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor qv = sq.unpack("LinalgQrBackward0"), rv = sr.unpack("LinalgQrBackward0");
    const Tensor gq = or_zeros(g[0], qv), gr = or_zeros(g[1], rv);
    if (m >= n) return {qr_backward_tall(qv, rv, gq, gr)};
    // A = [X | Y] with X square: X = Q U and Y = Q V for R = [U | V].
    const Tensor y = narrow(sa.unpack("LinalgQrBackward0"), -1, m, n - m);
    const Tensor gu = narrow(gr, -1, 0, m), gv = narrow(gr, -1, m, n - m);
    const Tensor grad_x = qr_backward_tall(qv, narrow(rv, -1, 0, m), gq + matmul(y, mT(gv)), gu);
    return {cat({grad_x, matmul(qv, gv)}, -1)};
  });
  return {q, r};
}

namespace {

// eigh, its errors named as op's.
std::tuple<Tensor, Tensor> recorded_eigh(const Tensor& a, const std::string& uplo, const char* op) {
  TD_CHECK(uplo == "L" || uplo == "U", op, ": Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  kernels::check_matrices(a, op, true);
  auto [w, v] = kernels::eigh(a, uplo == "U", true, op);
  if (!needs_grad({&a})) return {w, v};
  SavedTensor sw(w, true, 0), sv(v, true, 1);
  record("LinalgEighBackward0", {&a}, {&w, &v}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    const Tensor wv = sw.unpack("LinalgEighBackward0"), vv = sv.unpack("LinalgEighBackward0");
    const Tensor id = identity(cols(vv), vv);
    // grad_A = V (diag(grad_w) + (V^T grad_V) / E) V^T, E[i][j] = w[j] - w[i] off the diagonal.
    Tensor inner = g[0].defined() ? id * unsqueeze(g[0], -2) : zeros_like(vv);
    if (g[1].defined()) {
      const Tensor gaps = unsqueeze(wv, -2) - unsqueeze(wv, -1) + id;
      inner = inner + matmul(mT(vv), g[1]) / gaps * (1 - id);
    }
    return {symmetric_part(matmul(matmul(vv, inner), mT(vv)))};
  });
  return {w, v};
}

}  // namespace

std::tuple<Tensor, Tensor> eigh(const Tensor& a, const std::string& uplo) {
  return recorded_eigh(a, uplo, "linalg.eigh");
}

Tensor eigvalsh(const Tensor& a, const std::string& uplo) {
  TD_CHECK(uplo == "L" || uplo == "U", "linalg.eigvalsh: Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  kernels::check_matrices(a, "linalg.eigvalsh", true);
  if (needs_grad({&a})) return std::get<0>(recorded_eigh(a, uplo, "linalg.eigvalsh"));  // the gradient needs V
  return std::get<0>(kernels::eigh(a, uplo == "U", false, "linalg.eigvalsh"));
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices) {
  kernels::check_matrices(a, "linalg.svd", false);
  auto [u, s, vh] = kernels::svd(a, full_matrices, true, "linalg.svd");
  if (!needs_grad({&a})) return {u, s, vh};
  const int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  SavedTensor su(u, true, 0), ss(s, true, 1), svh(vh, true, 2);
  record("LinalgSvdBackward0", {&a}, {&u, &s, &vh}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    // full_matrices: the columns past k carry no gradient (they are not unique).
    const Tensor uv = narrow(su.unpack("LinalgSvdBackward0"), -1, 0, k);
    const Tensor sv = ss.unpack("LinalgSvdBackward0");
    const Tensor vhv = narrow(svh.unpack("LinalgSvdBackward0"), -2, 0, k);
    const Tensor gu = g[0].defined() ? narrow(g[0], -1, 0, k) : Tensor();
    const Tensor gv = g[2].defined() ? mT(narrow(g[2], -2, 0, k)) : Tensor();
    const Tensor id = identity(k, sv);
    Tensor inner = g[1].defined() ? id * unsqueeze(g[1], -2) : zeros(with(batch_of(uv), {k, k}), sv.options());
    if (!gu.defined() && !gv.defined()) return {matmul(matmul(uv, inner), vhv)};
    const Tensor v = mT(vhv);
    const auto skew = [](const Tensor& x) { return x - mT(x); };
    const Tensor s2 = square(sv);
    const Tensor gaps = unsqueeze(s2, -2) - unsqueeze(s2, -1) + id;
    Tensor mixed = zeros_like(inner);
    if (gu.defined()) mixed = mixed + skew(matmul(mT(uv), gu)) * unsqueeze(sv, -2);
    if (gv.defined()) mixed = mixed + unsqueeze(sv, -1) * skew(matmul(mT(v), gv));
    Tensor grad = matmul(matmul(uv, inner + mixed / gaps), vhv);
    if (m > k && gu.defined()) grad = grad + matmul((gu - matmul(uv, matmul(mT(uv), gu))) / unsqueeze(sv, -2), vhv);
    if (n > k && gv.defined()) grad = grad + matmul(uv, mT((gv - matmul(v, matmul(mT(v), gv))) / unsqueeze(sv, -2)));
    return {grad};
  });
  return {u, s, vh};
}

Tensor svdvals(const Tensor& a) {
  kernels::check_matrices(a, "linalg.svdvals", false);
  if (needs_grad({&a})) return std::get<1>(svd(a, false));  // the gradient needs the vectors
  return std::get<1>(kernels::svd(a, false, false, "linalg.svdvals"));
}

Tensor pinv(const Tensor& a, std::optional<double> atol, std::optional<double> rtol) {
  kernels::check_matrices(a, "linalg.pinv", false);
  Tensor p;
  {
    NoGradGuard no_grad;
    auto [u, s, vh] = kernels::svd(a, false, true, "linalg.pinv");
    const Tensor kept = s > tolerance(s, rows(a), cols(a), atol, rtol);
    const Tensor inverse = where(kept, 1 / where(kept, s, 1), 0);
    p = matmul(mT(vh), unsqueeze(inverse, -1) * mT(u));
  }
  if (!needs_grad({&a})) return p;
  SavedTensor sa(a, false), sp(p, true);
  record("LinalgPinvBackward0", {&a}, {&p}, [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    // The derivative of the pseudo-inverse where the rank stays constant (Golub and Pereyra).
    const Tensor av = sa.unpack("LinalgPinvBackward0"), pv = sp.unpack("LinalgPinvBackward0");
    const Tensor pt = mT(pv), gt = mT(g[0]);
    const Tensor left_null = identity(rows(av), av) - matmul(av, pv);
    const Tensor right_null = identity(cols(av), av) - matmul(pv, av);
    return {-matmul(matmul(pt, g[0]), pt) + matmul(matmul(left_null, gt), matmul(pv, pt)) +
            matmul(matmul(pt, pv), matmul(gt, right_null))};
  });
  return p;
}

Tensor matrix_rank(const Tensor& a, std::optional<double> atol, std::optional<double> rtol) {
  kernels::check_matrices(a, "linalg.matrix_rank", false);
  NoGradGuard no_grad;
  const Tensor s = std::get<1>(kernels::svd(a, false, false, "linalg.matrix_rank"));
  return sum(s > tolerance(s, rows(a), cols(a), atol, rtol), {-1});
}

Tensor matrix_power(const Tensor& a, int64_t n) {
  kernels::check_defined(a, "linalg.matrix_power", "A");
  TD_CHECK(a.dim() >= 2 && rows(a) == cols(a), "linalg.matrix_power: A must be batches of square matrices, got shape ",
           shape_str(a.sizes()));
  if (n == 0) {
    Tensor y = contiguous(expand(identity(cols(a), a), a.sizes()));
    // Constant in A, but connected to it, as PyTorch's: a backward through it gives zeros.
    if (needs_grad({&a})) {
      autograd::record("LinalgMatrixPowerBackward0", {&a}, {&y},
                       [](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {zeros_like(g[0])}; })
          ->saves_nothing = true;
    }
    return y;
  }
  Tensor base = n < 0 ? inv(a) : a;
  if (n == 1 || n == -1) return n == 1 ? clone(base) : base;
  Tensor result;
  for (uint64_t e = n < 0 ? -static_cast<uint64_t>(n) : static_cast<uint64_t>(n); e > 0; e >>= 1) {
    if (e & 1) result = result.defined() ? matmul(result, base) : base;
    if (e > 1) base = matmul(base, base);
  }
  return result;
}

Tensor multi_dot(const std::vector<Tensor>& tensors) {
  const size_t count = tensors.size();
  TD_CHECK(count >= 2, "multi_dot(): expected at least 2 tensors but got ", count);
  std::vector<Tensor> chain;
  for (size_t i = 0; i < count; ++i) {
    const Tensor& t = tensors[i];
    kernels::check_defined(t, "multi_dot", "tensor");
    const bool end = i == 0 || i == count - 1;
    TD_CHECK(t.dim() == 2 || (end && t.dim() == 1), "multi_dot(): tensor ", i, " must be 2D", end ? " or 1D" : "",
             " but got ", t.dim(), "D");
    TD_CHECK(t.dtype() == tensors[0].dtype(), "multi_dot(): all tensors must have the same dtype, got ",
             tensors[0].dtype(), " and ", t.dtype());
    chain.push_back(t.dim() == 2 ? t : (i == 0 ? unsqueeze(t, 0) : unsqueeze(t, 1)));
    if (i > 0) {
      TD_CHECK(cols(chain[i - 1]) == rows(chain[i]), "multi_dot(): tensors ", i - 1, " and ", i, " with shapes ",
               shape_str(tensors[i - 1].sizes()), " and ", shape_str(t.sizes()), " cannot be multiplied");
    }
  }
  // The order of fewest scalar multiplications (the matrix-chain problem): cost[i][j] for the
  // product of chain[i..j], split[i][j] its last multiplication's split.
  std::vector<int64_t> dims{rows(chain[0])};
  for (const Tensor& t : chain) dims.push_back(cols(t));
  std::vector<std::vector<int64_t>> cost(count, std::vector<int64_t>(count, 0)), split = cost;
  for (size_t length = 1; length < count; ++length) {
    for (size_t i = 0; i + length < count; ++i) {
      const size_t j = i + length;
      cost[i][j] = std::numeric_limits<int64_t>::max();
      for (size_t k = i; k < j; ++k) {
        const int64_t c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1];
        if (c < cost[i][j]) {
          cost[i][j] = c;
          split[i][j] = static_cast<int64_t>(k);
        }
      }
    }
  }
  std::function<Tensor(size_t, size_t)> product = [&](size_t i, size_t j) -> Tensor {
    if (i == j) return chain[i];
    const auto k = static_cast<size_t>(split[i][j]);
    return mm(product(i, k), product(k + 1, j));
  };
  Tensor out = product(0, count - 1);
  if (tensors.back().dim() == 1) out = squeeze(out, 1);
  if (tensors.front().dim() == 1) out = squeeze(out, 0);
  return out;
}

}  // namespace linalg

Tensor chain_matmul(const std::vector<Tensor>& matrices) {
  for (const Tensor& m : matrices) {
    kernels::check_defined(m, "chain_matmul", "matrix");
    TD_CHECK(m.dim() == 2, "chain_matmul: every tensor must be 2-D, got ", shape_str(m.sizes()));
  }
  TD_CHECK(!matrices.empty(), "chain_matmul: expected one matrix or more, got none");
  return matrices.size() == 1 ? clone(matrices[0]) : linalg::multi_dot(matrices);
}

Tensor vdot(const Tensor& a, const Tensor& b) { return dot(a, b); }

namespace linalg {

Tensor vector_norm(const Tensor& x, double ord, IntList dims, bool keepdim) {
  kernels::check_defined(x, "linalg.vector_norm", "x");
  TD_CHECK(is_floating(x.dtype()), "linalg.vector_norm: Expected a floating point tensor as input. Got ", x.dtype());
  return tandem::norm(x, ord, dims, keepdim);
}

namespace {

// The two matrix dims of matrix_norm, wrapped, distinct.
std::pair<int64_t, int64_t> matrix_dims(const Tensor& a, IntList dims, const char* op) {
  kernels::check_defined(a, op, "A");
  TD_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions (got shape ", shape_str(a.sizes()),
           ")");
  TD_CHECK(is_floating(a.dtype()), op, ": Expected a floating point tensor as input. Got ", a.dtype());
  TD_CHECK(dims.size() == 2, op, ": dim must be a 2-tuple. Got ", dims.size(), " dims");
  const int64_t d0 = wrap_dim(dims[0], a.dim(), op), d1 = wrap_dim(dims[1], a.dim(), op);
  TD_CHECK(d0 != d1, op, ": dims must be different. Got (", dims[0], ", ", dims[1], ")");
  return {d0, d1};
}

// A norm of the matrices that has the two dims at the end, reduced away, with the dims put back
// (as size 1) where keepdim asks.
Tensor keep_matrix_dims(Tensor y, int64_t d0, int64_t d1, bool keepdim) {
  if (!keepdim) return y;
  y = unsqueeze(y, std::min(d0, d1));
  return unsqueeze(y, std::max(d0, d1));
}

Tensor singular_value_norm(const Tensor& a, int64_t d0, int64_t d1, bool keepdim, bool largest, bool nuclear) {
  const Tensor s = svdvals(movedim(a, {d0, d1}, {-2, -1}));
  const Tensor y = nuclear ? sum(s, {-1}) : (largest ? amax(s, {-1}) : amin(s, {-1}));
  return keep_matrix_dims(y, d0, d1, keepdim);
}

}  // namespace

Tensor matrix_norm(const Tensor& a, const std::string& ord, IntList dims, bool keepdim) {
  const auto [d0, d1] = matrix_dims(a, dims, "linalg.matrix_norm");
  TD_CHECK(ord == "fro" || ord == "nuc", "linalg.matrix_norm: Order ", ord, " not supported.");
  if (ord == "nuc") return singular_value_norm(a, d0, d1, keepdim, true, true);
  return tandem::norm(a, 2, {d0, d1}, keepdim);
}

Tensor matrix_norm(const Tensor& a, double ord, IntList dims, bool keepdim) {
  const auto [d0, d1] = matrix_dims(a, dims, "linalg.matrix_norm");
  const bool infinite = std::isinf(ord);
  TD_CHECK(ord == 1 || ord == -1 || ord == 2 || ord == -2 || infinite, "linalg.matrix_norm: Order ", ord,
           " not supported.");
  if (ord == 2 || ord == -2) return singular_value_norm(a, d0, d1, keepdim, ord > 0, false);
  // 1: the largest column sum (down d0, then across d1); inf: the largest row sum.
  const int64_t summed = infinite ? d1 : d0, other = infinite ? d0 : d1;
  const Tensor sums = sum(abs(a), {summed}, true);
  const Tensor y = ord > 0 ? amax(sums, {other}, true) : amin(sums, {other}, true);
  return keepdim ? y : squeeze(squeeze(y, std::max(d0, d1)), std::min(d0, d1));
}

Tensor cond(const Tensor& a) {
  kernels::check_matrices(a, "linalg.cond", false);
  const Tensor s = svdvals(a);
  if (s.size(-1) == 0) return zeros(batch_of(a), a.options());  // as PyTorch's
  return select(s, -1, 0) / select(s, -1, s.size(-1) - 1);
}

Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim) {
  kernels::check_defined(x, "linalg.vecdot", "x");
  kernels::check_defined(y, "linalg.vecdot", "y");
  TD_CHECK(x.dtype() == y.dtype(), "linalg.vecdot: Expected x and y to have the same dtype, but found x of type ",
           x.dtype(), " and y of type ", y.dtype(), " instead");
  return sum(x * y, {dim});
}

}  // namespace linalg

Tensor logdet(const Tensor& a) {
  kernels::check_matrices(a, "logdet", true);
  auto [sign_of, log_abs] = linalg::slogdet(a);
  return where(sign_of < 0, std::numeric_limits<double>::quiet_NaN(), log_abs);
}

Tensor cholesky_solve(const Tensor& b, const Tensor& factor, bool upper) {
  kernels::check_matrices(factor, "cholesky_solve", true);
  check_right_side(factor, b, "cholesky_solve");
  TD_CHECK(b.dim() >= 2, "cholesky_solve: b should have at least 2 dimensions, but has ", b.dim(),
           " dimensions instead");
  TD_CHECK(rows(b) == cols(factor), "cholesky_solve: Incompatible shapes of A and B for the equation AX = B (",
           shape_str(factor.sizes()), " and ", shape_str(b.sizes()), ")");
  // A = L L^T (or U^T U): two triangular solves.
  const Tensor lower = upper ? mT(factor) : factor;
  return linalg::solve_triangular(mT(lower), linalg::solve_triangular(lower, b, false), true);
}

Tensor cholesky_inverse(const Tensor& factor, bool upper) {
  kernels::check_matrices(factor, "cholesky_inverse", true);
  return cholesky_solve(expand(identity(cols(factor), factor), factor.sizes()), factor, upper);
}

}  // namespace tandem
