// The matrix factorizations, without autograd (autograd/linalg.h builds torch.linalg on them).
// Inputs are float32/float64 batches of matrices [*, m, n] with any strides; each is copied into
// the column-major layout LAPACK and cuSOLVER work in, and results come back as views of that
// layout (transposed strides), as PyTorch's do. Failures read from the backends' info are errors
// in PyTorch's words, naming the op and, in a batch, the matrix ("(Batch element 1): ...").
#pragma once

#include <tuple>

#include "core/tensor.h"

namespace tandem::kernels {

// A defined float32/float64 tensor of at least 2 dims (square matrices where asked), else an
// error naming op.
void check_matrices(const Tensor& a, const char* op, bool square);

// LU factors with partial pivoting of a [*, m, n]: lu [*, m, n] (unit L below the diagonal, U on and
// above), pivots int32 [*, min(m, n)] (1-based, LAPACK's), info int32 [*] (k > 0: U[k-1, k-1] is 0).
struct LuFactors {
  Tensor lu, pivots, info;
};
LuFactors lu_factor(const Tensor& a);

// X with A X = B for a [*, n, n] and b [*, n, k] of one batch shape. A singular matrix is an
// error of op's: as inv's ("The diagonal element k is zero ...") where inverting, else as solve's.
// Unchecked, a singular matrix gives what dividing by U's zero gives (inf, NaN). With `info`, it
// is unchecked and *info receives LAPACK's info per matrix (int32, the batch's shape; k > 0: U's
// k-th diagonal element is zero).
Tensor solve(const Tensor& a, const Tensor& b, const char* op, bool inverting, bool check = true,
             Tensor* info = nullptr);
// The lower Cholesky factor (zeros above the diagonal) from a's lower triangle; a matrix that is
// not positive-definite is an error of op's, or with `info` is not checked and *info receives
// LAPACK's info per matrix (k > 0: the leading minor of order k is not positive-definite).
Tensor cholesky(const Tensor& a, const char* op, Tensor* info = nullptr);
// op(A)^-1 B (left; b [*, n, k]) or B A^-1 (b [*, k, n]) for a triangular a [*, n, n] of b's batch
// shape, reading only a's upper or lower triangle.
Tensor solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left, bool unitriangular);
// Q and R of a [*, m, n]: reduced (Q [m, k], R [k, n], k = min(m, n)) or complete (Q [m, m], R [m, n]);
// without compute_q, Q is undefined.
std::tuple<Tensor, Tensor> qr(const Tensor& a, bool complete, bool compute_q);
// LAPACK's geqrf of a [*, m, n]: R on and above the diagonal, the Householder vectors (their 1s
// implied) below it, and the reflectors' scalars tau [*, min(m, n)].
std::tuple<Tensor, Tensor> geqrf(const Tensor& a);
// The first n columns of H_1 ... H_k (orgqr) for the reflectors below the diagonal of a [*, m, n]
// and their scalars tau [*, k], k <= n <= m.
Tensor householder_product(const Tensor& a, const Tensor& tau);
// Eigenvalues (ascending) and, with vectors, eigenvectors of symmetric a (its upper or lower triangle).
std::tuple<Tensor, Tensor> eigh(const Tensor& a, bool upper, bool vectors, const char* op);
// U, S (descending), Vh; without vectors only S is defined. full: U [m, m], Vh [n, n].
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full, bool vectors, const char* op);

}  // namespace tandem::kernels
