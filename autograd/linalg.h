// torch.linalg's factorizations and what is built on them, differentiable to any order. The
// factorizations run in LAPACK (OpenBLAS's) on the CPU and in cuSOLVER on a GPU; everything else
// is composed of them and of the tensor ops. Inputs are float32 or float64 batches of matrices
// [*, m, n]; float16/bfloat16 and integers are refused, as PyTorch's. Errors name the op as
// PyTorch's do ("linalg.inv: ..."), with the batch element that failed.
//
// Gradients are PyTorch's formulas, but for det's at a singular matrix (the cofactor matrix here,
// zeros in PyTorch's first-order backward) and cholesky_solve's (below). They assume what the factorization needs to be
// smooth: distinct eigenvalues for eigh's vectors, distinct nonzero singular values for svd's
// vectors, a constant rank for pinv. Returned factors may be non-contiguous views (column-major), as
// PyTorch's are.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/tensor.h"

namespace tandem::linalg {

// ---- solving ----
// A^-1; a singular matrix is an error.
Tensor inv(const Tensor& a);
// The _ex forms, as PyTorch's: instead of raising for a singular (or, for cholesky_ex, not
// positive-definite) matrix, they return LAPACK's info per matrix beside the result (int32, A's
// batch shape; 0: success, k > 0: U's k-th diagonal element is zero, or the leading minor of order
// k is not positive-definite), the result then holding what the factorization reached. With
// check_errors they raise as inv, solve, cholesky and lu_factor do.
std::tuple<Tensor, Tensor> inv_ex(const Tensor& a, bool check_errors = false);
std::tuple<Tensor, Tensor> solve_ex(const Tensor& a, const Tensor& b, bool left = true, bool check_errors = false);
std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& a, bool upper = false, bool check_errors = false);
// (LU, pivots, info); pivot must be true (PyTorch's unpivoted LU is GPU-only).
std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& a, bool pivot = true, bool check_errors = false);
// X with A X = B (left) or X A = B (not left). B is a batch of vectors where B is 1-D or has one
// dim fewer than A with A's leading sizes ([*, n]); batch dims broadcast.
Tensor solve(const Tensor& a, const Tensor& b, bool left = true);
// solve for a triangular A (only its upper or lower triangle is read; with unitriangular its
// diagonal is taken as ones). B is [*, n, k] (left) or [*, k, n]; batch dims broadcast.
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left = true, bool unitriangular = false);
// X minimizing ||A X - B|| (of least norm where that leaves a choice), with PyTorch's drivers and
// outputs. gels (the default on a GPU): QR, for A of full rank; rcond is not read. gelsy (the default
// on a CPU), gelsd and gelss: any rank; singular values at or below cut times the largest count as
// zero, the cut being rcond as LAPACK reads it (gelsd: one outside (0, 1) is its epsilon; gelss: a
// negative one is the machine precision, and the cut is at least the smallest normal number; gelsy:
// the rank is at least 1), by default the dtype's epsilon times max(m, n); a NaN or infinite rcond
// is refused. Where that leaves A rank-deficient, X is pinv(A) B (full rank: the QR solution).
// Outputs as PyTorch's: residuals, the squared residual norm of each column of X ([*, k], [*, 1] for
// a vector B), where m > n with gels, and with gelsd and gelss where every matrix also has full
// rank, else empty; rank ([*] int64) from all but gels; singular_values ([*, min(m, n)]) from gelsd
// and gelss. Unlike PyTorch: LAPACK's gelsy estimates the rank from its pivoted QR's condition
// estimate, which can disagree with the singular values where rcond is near their ratio; the
// gradient is the derivative of what is computed (pinv at the cut), where PyTorch's always uses
// pinv at its default tolerance; every driver also runs on a GPU (PyTorch's takes gels only).
struct LstsqResult {
  Tensor solution, residuals, rank, singular_values;
};
LstsqResult lstsq(const Tensor& a, const Tensor& b, std::optional<double> rcond = std::nullopt,
                  std::optional<std::string> driver = std::nullopt);

// ---- determinants ----
Tensor det(const Tensor& a);
// sign (0 for a singular matrix) and log|det A| (-inf for one).
std::tuple<Tensor, Tensor> slogdet(const Tensor& a);

// ---- factorizations ----
// A = P L U with partial pivoting, for any m x n: LU packs L's part below the diagonal (its diagonal
// is ones) and U; pivots (int32 [*, min(m, n)]) are LAPACK's, 1-based: row i was swapped with row
// pivots[i] in turn. A zero on U's diagonal is an error (lu does not check).
std::tuple<Tensor, Tensor> lu_factor(const Tensor& a);
// P [*, m, m], L [*, m, k] and U [*, k, n] (k = min(m, n)) of lu_factor's results; differentiable in LU.
std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& lu, const Tensor& pivots);
std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& a);
// X with A X = B (left) or X A = B from A's LU factors (A square); adjoint solves with A^T instead.
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left = true, bool adjoint = false);
// The lower (or upper) triangular factor of a symmetric positive-definite matrix, from its lower
// (or upper) triangle: A = L L^T = U^T U.
Tensor cholesky(const Tensor& a, bool upper = false);
// mode "reduced" (Q [m, k], R [k, n], k = min(m, n)), "complete" (Q [m, m], R [m, n]) or "r" (R only,
// Q empty: not differentiable).
std::tuple<Tensor, Tensor> qr(const Tensor& a, const std::string& mode = "reduced");
// Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, from its lower ("L")
// or upper ("U") triangle.
std::tuple<Tensor, Tensor> eigh(const Tensor& a, const std::string& uplo = "L");
Tensor eigvalsh(const Tensor& a, const std::string& uplo = "L");
// A = U diag(S) Vh, S descending. full_matrices: U [m, m] and Vh [n, n]; else U [m, k], Vh [k, n].
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices = true);
Tensor svdvals(const Tensor& a);
// The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T, for the Householder vectors v_i
// below the diagonal of a [*, m, n] (a 1 implied on it) and tau [*, k], k <= n <= m: the Q of
// geqrf's factors. Differentiable in a and tau.
Tensor householder_product(const Tensor& a, const Tensor& tau);

// ---- built on them ----
// The pseudo-inverse: singular values at or below max(atol, rtol * largest) count as zero. An unset
// rtol is 0 where atol > 0 is given, else max(m, n) * the dtype's epsilon (PyTorch's rule).
Tensor pinv(const Tensor& a, std::optional<double> atol = std::nullopt, std::optional<double> rtol = std::nullopt);
// The number of singular values above that tolerance (int64).
Tensor matrix_rank(const Tensor& a, std::optional<double> atol = std::nullopt,
                   std::optional<double> rtol = std::nullopt);
// A^n by repeated squaring; n < 0 inverts first, n = 0 gives identities.
Tensor matrix_power(const Tensor& a, int64_t n);
// The product of the matrices, in the order of fewest multiplications; the first may be a 1-D row
// and the last a 1-D column, as torch.linalg.multi_dot.
Tensor multi_dot(const std::vector<Tensor>& tensors);
// ord in {2 (default), inf, -inf, 0, any p}: the vector norm over dims (all when empty).
Tensor vector_norm(const Tensor& x, double ord = 2, IntList dims = {}, bool keepdim = false);
// ord "fro" (default) or "nuc" over the two dims.
Tensor matrix_norm(const Tensor& a, const std::string& ord = "fro", IntList dims = {-2, -1}, bool keepdim = false);
// ord 1, -1 (largest/smallest column sum), inf, -inf (row sum), 2, -2 (largest/smallest singular value).
Tensor matrix_norm(const Tensor& a, double ord, IntList dims = {-2, -1}, bool keepdim = false);
// The 2-norm condition number: the largest singular value over the smallest.
Tensor cond(const Tensor& a);
// sum(x * y) along dim.
Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim = -1);
// ord unset: the 2-norm of every element (or over dims); with a number for ord, the vector norm of a
// 1-D input or over one dim, the matrix norm of a 2-D input or over two dims (torch.linalg.norm).
Tensor norm(const Tensor& x, std::optional<double> ord = std::nullopt,
            std::optional<std::vector<int64_t>> dims = std::nullopt, bool keepdim = false);
// "fro" or "nuc" over two dims (of a 2-D input when dims are unset).
Tensor norm(const Tensor& x, const std::string& ord, std::optional<std::vector<int64_t>> dims = std::nullopt,
            bool keepdim = false);

// ---- matrix functions and tensor equations (matrix_functions.cc) ----
// exp(A) = sum of A^k / k!, by scaling and squaring a Pade approximant.
Tensor matrix_exp(const Tensor& a);
// The Vandermonde matrices [..., x^0, x^1, ..., x^(n-1)] of x along its last dim (n defaults to its size).
Tensor vander(const Tensor& x, std::optional<int64_t> n = std::nullopt);
// The inverse of A for tensordot over its first ind dims: shape A.shape[ind:] + A.shape[:ind].
Tensor tensorinv(const Tensor& a, int64_t ind = 2);
// X with tensordot(A, X, X.dim()) = B; dims of A moved to the end first.
Tensor tensorsolve(const Tensor& a, const Tensor& b, std::optional<std::vector<int64_t>> dims = std::nullopt);

}  // namespace tandem::linalg

namespace tandem {

// log det A: NaN where det A < 0, -inf where it is 0 (torch.logdet).
Tensor logdet(const Tensor& a);
// X with A X = B given A's Cholesky factor (lower, or upper): torch.cholesky_solve(B, L). The
// factor's other triangle is never read, so it gets no gradient (PyTorch's formula gives it one).
Tensor cholesky_solve(const Tensor& b, const Tensor& factor, bool upper = false);
// LAPACK's QR factors of a [*, m, n] (torch.geqrf): R on and above the diagonal, the Householder
// vectors below it, and their scalars tau [*, min(m, n)]. Not differentiable, as PyTorch's.
std::tuple<Tensor, Tensor> geqrf(const Tensor& a);
// householder_product under LAPACK's name.
Tensor orgqr(const Tensor& a, const Tensor& tau);
// Q C (left) or C Q, with Q^T for transpose, for the Q = H_1 ... H_k of the reflectors below the
// diagonal of a [*, mn, k] and tau [*, min(mn, k)]: c [*, mn, n] (left) or [*, n, mn]. Without
// forming Q; differentiable in all three.
Tensor ormqr(const Tensor& a, const Tensor& tau, const Tensor& c, bool left = true, bool transpose = false);
// A^-1 from A's Cholesky factor.
Tensor cholesky_inverse(const Tensor& factor, bool upper = false);
// A rank-q approximation of A's SVD, or of A - M's (M broadcast to A's shape): U [*, m, k], S [*, k],
// V [*, n, k] with A ~ U diag(S) V^T, k = min(q, m, n), by a randomized range finder with niter power
// iterations (torch.svd_lowrank). Exact when A - M has rank at most q. float32 and float64;
// differentiable; the random test matrix comes from the global generator.
std::tuple<Tensor, Tensor, Tensor> svd_lowrank(const Tensor& a, int64_t q = 6, int64_t niter = 2,
                                               const std::optional<Tensor>& m = std::nullopt);
// Principal components: svd_lowrank of A with each column's mean over the rows taken away (center),
// q = min(6, m, n) by default, at most min(m, n) (torch.pca_lowrank). V's columns are the directions,
// S^2 / (m - 1) the variances along them.
std::tuple<Tensor, Tensor, Tensor> pca_lowrank(const Tensor& a, std::optional<int64_t> q = std::nullopt,
                                               bool center = true, int64_t niter = 2);
// torch.pinverse: singular values at or below rcond times the largest count as zero.
inline Tensor pinverse(const Tensor& a, double rcond = 1e-15) { return linalg::pinv(a, 0.0, rcond); }
// torch.nuclear_norm: the sum of the singular values over dims (the last two by default).
inline Tensor nuclear_norm(const Tensor& a, bool keepdim = false) {
  return linalg::matrix_norm(a, "nuc", {-2, -1}, keepdim);
}
inline Tensor nuclear_norm(const Tensor& a, IntList dims, bool keepdim = false) {
  return linalg::matrix_norm(a, "nuc", dims, keepdim);
}

}  // namespace tandem
