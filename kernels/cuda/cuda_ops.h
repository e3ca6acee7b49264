// The CUDA backend: the same functions as the CPU backend (kernels/cpu/cpu_ops.h), with the same
// contracts, for tensors on one CUDA device (copy: any devices, at least one CUDA). Kernels are
// queued on the device's current stream and return without waiting, except copies to the host.
// In a build without CUDA (kernels/cuda/absent.cc) each raises the "no CUDA kernels" error; no
// tensor can be on a CUDA device there anyway.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"
#include "kernels/op_codes.h"
#include "kernels/optim.h"

namespace tandem::kernels::cuda {

// ---- element-wise (cuda/elementwise.cu); inputs broadcast to `out` ----
void unary(UnaryOp op, const Tensor& out, const Tensor& in);  // same dtype
// a and b share a dtype; out has it too, or bool for comparisons. alpha scales b in Add/Sub.
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, Scalar alpha);
// out = in * value or in / value (Mul, Div) for 16-bit floats, the number kept in float: one pass
// where a number the dtype cannot hold would otherwise take casts to float32 and back.
void binary_float_scalar(BinaryOp op, const Tensor& out, const Tensor& in, Scalar value);
void clamp(const Tensor& out, const Tensor& in, std::optional<Scalar> lo, std::optional<Scalar> hi);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
void addcmul(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b, double value);
void masked_fill(const Tensor& self, const Tensor& mask, Scalar value);  // in place
void copy(const Tensor& dst, const Tensor& src);  // any dtypes and devices (cuda/copy.cu)
void add_n(const Tensor& out, const std::vector<Tensor>& inputs);  // all contiguous, one dtype (cuda/add_n.cu)
void fill(const Tensor& dst, Scalar value);

// ---- creation (cuda/factory.cu); outputs contiguous ----
void arange(const Tensor& out, Scalar start, Scalar step);
void linspace(const Tensor& out, double start, double end);
void uniform(const Tensor& out, double from, double to, PhiloxState state);
void normal(const Tensor& out, double mean, double std, PhiloxState state);
void randint(const Tensor& out, int64_t low, int64_t high, PhiloxState state);
void bernoulli(const Tensor& out, const Tensor& p, PhiloxState state);  // p broadcast to out, float
void poisson(const Tensor& out, const Tensor& rates, PhiloxState state);  // as the CPU's (cpu_ops.h)
void binomial(const Tensor& out, const Tensor& count, const Tensor& prob, PhiloxState state);
void standard_gamma(const Tensor& out, const Tensor& alpha, double least, PhiloxState state);
void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double keep_prob, double scale,
             PhiloxState state);
void keep_scale(const Tensor& out, const Tensor& x, const Tensor& mask, double scale);  // cuda/elementwise.cu

// ---- reductions (cuda/reduce.cu) ----
// `reduced` flags the input dims folded away; outputs are contiguous, one element per combination
// of kept indices in row-major order (keepdim does not change that layout). Accumulation is in
// float64 for every floating dtype and int64 for integers, as on the CPU.
void sum(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced);
void mean(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced);
void prod(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced);
void amax(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced);
void amin(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced);
// values (may be undefined) and int64 indices of the max/min; ties and NaN: the first wins.
void arg_reduce(const Tensor& values, const Tensor& indices, const Tensor& in, const std::vector<bool>& reduced,
                bool is_max);
void var(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, int64_t correction, bool take_sqrt);
void norm(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, double p);
void all(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced);
void any(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced);
void cumsum(const Tensor& out, const Tensor& in, int64_t dim);  // out contiguous, its own dtype
void cumprod(const Tensor& out, const Tensor& in, int64_t dim);  // out contiguous, its own dtype
// Each row of `in` ([rows, n], contiguous) sorted into `values` (in's dtype) and `indices` (int64),
// both contiguous [rows, n]: stable (equal elements keep their order), NaN above everything
// (cpu/sort.cc, cuda/sort.cu).
void sort_rows(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending);
// For each value of row r of `values` ([rows, m]), the position in row r of `sorted` ([rows, n], one
// dtype with values, both contiguous) that keeps it sorted: before equal elements, or after them with
// `right`; NaN sorts above every number. out: int64 [rows, m].
void searchsorted_rows(const Tensor& out, const Tensor& sorted, const Tensor& values, bool right);
// The running maximum or minimum of each row of `in` ([rows, n], contiguous) with the position it
// came from (the latest of equal ones; NaN wins and stays), or the running log-sum-exp (indices
// undefined). values and indices: contiguous [rows, n].
void scan_rows(RowScan kind, const Tensor& values, const Tensor& indices, const Tensor& in);

// ---- matrix products (cuda/blas.cu: cuBLAS) ----
// out[b] = beta * out[b] + alpha * a[b] @ b[b] for each batch b; out is contiguous [B, n, m],
// a is [B, n, k] and b [B, k, m] with any strides, out not empty and k > 0. With beta = 0 out is
// only written.
void bmm(const Tensor& out, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha);
// out = a @ b + bias through cuBLASLt's bias epilogue, for 2-D floating operands and a bias of one
// value per column of out; false (nothing written) where cuBLASLt does not serve the problem.
bool addmm_bias_epilogue(const Tensor& out, const Tensor& bias, const Tensor& a, const Tensor& b);
int64_t addmm_bias_epilogue_count();  // how many addmm calls it served

// ---- factorizations (cuda/solver.cu: cuSOLVER) ----
// Each works in place on a batch of column-major matrices: a contiguous float32/float64 tensor
// [B, cols, rows] holds column j of matrix b at [b, j, :], as LAPACK reads it. info: int32 [B] on
// the matrices' device, LAPACK's (0: done; k > 0: the failure at the k-th pivot or minor).
// a [B, n, m] becomes its LU factors (unit L below the diagonal); pivots: int32 [B, min(m, n)], 1-based.
void lu_factor(const Tensor& a, const Tensor& pivots, const Tensor& info);
// b [B, k, n] becomes A^-1 b (transposed: A^-T b) from a square A's lu_factor results.
void lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool transposed);
// a [B, n, n] (its lower triangle) becomes its lower Cholesky factor there.
void cholesky(const Tensor& a, const Tensor& info);
// b becomes op(A)^-1 b (left: b [B, k, n]) or b op(A)^-1 (b [B, n, k]) for a triangular a [B, n, n]
// (its lower or upper triangle; unit: ones on the diagonal), op transposing a where asked.
void triangular_solve(const Tensor& a, const Tensor& b, bool lower, bool left, bool transposed, bool unit);
// Householder QR of a [B, n, m]: R on and above the diagonal, the reflectors below, their
// scales in tau [B, min(m, n)].
void qr(const Tensor& a, const Tensor& tau);
// q [B, c, m] holding qr's reflectors in its first tau.size(1) columns becomes the first c columns
// of Q.
void qr_q(const Tensor& q, const Tensor& tau);
// The eigenvalues of symmetric a [B, n, n] (its lower triangle) into w [B, n], ascending; with
// vectors, a becomes the eigenvectors (columns).
void eigh(const Tensor& a, const Tensor& w, const Tensor& info, bool vectors);
// a [B, n, m] with m >= n (destroyed): s [B, n] descending; with u and vt defined (u [B, n or m, m],
// vt [B, n, n]) the singular vectors too.
void svd(const Tensor& a, const Tensor& s, const Tensor& u, const Tensor& vt, const Tensor& info);

// ---- indexing (cuda/index.cu); indices already checked to be in range ----
// x contiguous viewed as [outer, size, inner]; out contiguous [outer, index.numel(), inner].
void index_select(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);  // out contiguous
void scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);  // in place
// self[..., index[i], ...] = src[i] along dim, in place; of several writes to one place, the last
// (CPU) or any one (GPU).
void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// self[..., index[i], ...] = op(self[..., index[i], ...], src[i]) along dim, in place: the product, or
// the maximum or minimum (NaN wins), in any order on a GPU (the same result but a product's rounding).
void scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, ScatterReduce kind);
void one_hot(const Tensor& out, const Tensor& indices);  // out zeroed, contiguous [indices.numel(), C]

// ---- softmax, pooling, im2col (cuda/softmax.cu, cuda/pool.cu) ----
void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log);  // x and out contiguous
// x contiguous [planes, H, W]; out (and indices) contiguous [planes, OH, OW].
void max_pool2d(const Tensor& out, const Tensor& indices, const Tensor& x, const Pool2d& p);
void avg_pool2d(const Tensor& out, const Tensor& x, const Pool2d& p, bool count_include_pad,
                std::optional<int64_t> divisor_override);
// grad_input zeroed and contiguous [planes, H, W]; each output's gradient spread over its window.
void avg_pool2d_backward(const Tensor& grad_input, const Tensor& grad, const Pool2d& p, bool count_include_pad,
                         std::optional<int64_t> divisor_override);
// x contiguous [N, C, H, W] -> cols contiguous [N, C*kh*kw, OH*OW], and back (summing overlaps).
void im2col(const Tensor& cols, const Tensor& x, const Pool2d& p);
void col2im(const Tensor& x, const Tensor& cols, const Pool2d& p);  // x zeroed first by the caller

// ---- convolution through cuDNN (cuda/conv.cu) ----
// Whether this build has it (false in a build without CUDA).
bool cudnn_available();
// x contiguous [N, C, H, W], w contiguous [O, C / groups, kh, kw], out contiguous [N, O, OH, OW]; one
// floating dtype, one device. Each writes its first argument.
void conv2d(const Tensor& out, const Tensor& x, const Tensor& w, const Pool2d& p, int64_t groups);
void conv2d_backward_input(const Tensor& grad_x, const Tensor& grad, const Tensor& w, const Pool2d& p, int64_t groups);
void conv2d_backward_weight(const Tensor& grad_w, const Tensor& grad, const Tensor& x, const Pool2d& p,
                            int64_t groups);

// ---- fused layer norm and cross-entropy (cuda/layer_norm.cu, cuda/cross_entropy.cu) ----
void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                const Tensor& bias, double eps);
void layer_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& grad,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);
void cross_entropy(const Tensor& losses, const Tensor& target_weights, const Tensor& lse, const Tensor& x,
                   const Tensor& target, const Tensor& weight, const Tensor& weight_sum, int64_t ignore_index,
                   double smoothing);
void cross_entropy_backward(const Tensor& grad_x, const Tensor& row_scale, const Tensor& x, const Tensor& lse,
                            const Tensor& target, const Tensor& weight, const Tensor& weight_sum,
                            int64_t ignore_index, double smoothing);

// ---- fused optimizer steps (cuda/optim.cu); lists checked by kernels/optim.cc ----
void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& bufs,
              const std::vector<bool>& first, const SgdStep& step);
void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
               const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
               const std::vector<int64_t>& steps, const AdamStep& step);

}  // namespace tandem::kernels::cuda
