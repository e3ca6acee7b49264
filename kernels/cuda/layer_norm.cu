// CUDA layer norm over the rows of a contiguous [rows, cols] tensor (the contract of
// kernels/cpu/layer_norm.cc). A block per row: the mean, then the variance about it (two sums,
// as the CPU's, rather than one pass of sum and sum of squares that cancels badly), then the outputs;
// the row is re-read from cache. Sums are in double, as the CPU's: in float a long row's mean is off
// by ~1e-4 of its magnitude, and the kernel is bound by memory, not by the adds. The backward's weight and bias gradients are column sums: blocks of
// 32 columns by a chunk of rows (kChunkRows, more when the grid would be too tall) write partial sums, which a second kernel adds in chunk order.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/dispatch.h"
#include "core/storage.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"

namespace tandem::kernels::cuda {

namespace {

constexpr int64_t kChunkRows = 256;  // rows summed by one block of the column sums (at least)
constexpr int64_t kMaxChunks = 65535;  // the grid's y limit
constexpr int kColumnRows = 8;       // threads of such a block along the rows (32 along the columns)

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>(rows < 65536 ? rows : 65536); }

template <typename T, typename M>
__global__ void __launch_bounds__(kMaxRowThreads)
    layer_norm_kernel(T* out, M* mean, M* rstd, const T* x, const T* w, const T* b, int64_t rows, int64_t cols,
                      double eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * cols;
    double s = 0;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) s += static_cast<double>(static_cast<M>(in[k]));
    const double m = block_sum(s) / static_cast<double>(cols);
    double q = 0;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      const double d = static_cast<double>(static_cast<M>(in[k])) - m;
      q += d * d;
    }
    const double var = block_sum(q) / static_cast<double>(cols);
    const M mu = static_cast<M>(m), rs = static_cast<M>(1.0 / ::sqrt(var + eps));
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    T* res = out + r * cols;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      M y = (static_cast<M>(in[k]) - mu) * rs;
      if (w) y = y * static_cast<M>(w[k]);
      if (b) y = y + static_cast<M>(b[k]);
      res[k] = static_cast<T>(y);
    }
  }
}

template <typename T, typename M>
__global__ void __launch_bounds__(kMaxRowThreads)
    layer_norm_grad_input(T* grad_x, const T* grad, const T* x, const M* mean, const M* rstd, const T* w, int64_t rows,
                          int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* g = grad + r * cols;
    const T* in = x + r * cols;
    const M mu = mean[r], rs = rstd[r];
    double sum_gy = 0, sum_gy_xhat = 0;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      const M gy = w ? static_cast<M>(g[k]) * static_cast<M>(w[k]) : static_cast<M>(g[k]);
      sum_gy += static_cast<double>(gy);
      sum_gy_xhat += static_cast<double>(gy * ((static_cast<M>(in[k]) - mu) * rs));
    }
    const M a = static_cast<M>(block_sum(sum_gy) / static_cast<double>(cols));
    const M c = static_cast<M>(block_sum(sum_gy_xhat) / static_cast<double>(cols));
    T* out = grad_x + r * cols;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
      const M gy = w ? static_cast<M>(g[k]) * static_cast<M>(w[k]) : static_cast<M>(g[k]);
      const M xhat = (static_cast<M>(in[k]) - mu) * rs;
      out[k] = static_cast<T>(rs * (gy - a - xhat * c));
    }
  }
}

// Block (32, kColumnRows) at (column tile, row chunk): partial[chunk][col] = sums over the chunk's rows.
template <typename T, typename M>
__global__ void layer_norm_column_partials(double* partial_w, double* partial_b, const T* grad, const T* x, const M* mean,
                                           const M* rstd, int64_t rows, int64_t cols, int64_t chunk_rows) {
  __shared__ double sw[kColumnRows][32], sb[kColumnRows][32];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t last = first + chunk_rows < rows ? first + chunk_rows : rows;
  double acc_w = 0, acc_b = 0;
  if (col < cols) {
    for (int64_t r = first + threadIdx.y; r < last; r += kColumnRows) {
      const M g = static_cast<M>(grad[r * cols + col]);
      acc_w += static_cast<double>(g * ((static_cast<M>(x[r * cols + col]) - mean[r]) * rstd[r]));
      acc_b += static_cast<double>(g);
    }
  }
  sw[threadIdx.y][threadIdx.x] = acc_w;
  sb[threadIdx.y][threadIdx.x] = acc_b;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    for (int i = 1; i < kColumnRows; ++i) {
      acc_w += sw[i][threadIdx.x];
      acc_b += sb[i][threadIdx.x];
    }
    partial_w[blockIdx.y * cols + col] = acc_w;
    partial_b[blockIdx.y * cols + col] = acc_b;
  }
}

template <typename T>
__global__ void layer_norm_column_totals(T* grad_w, T* grad_b, const double* partial_w, const double* partial_b,
                                         int64_t chunks, int64_t cols) {
  TD_GRID_STRIDE(col, cols) {
    double total_w = 0, total_b = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      total_w += partial_w[c * cols + col];
      total_b += partial_b[c * cols + col];
    }
    if (grad_w) grad_w[col] = static_cast<T>(total_w);
    if (grad_b) grad_b[col] = static_cast<T>(total_b);
  }
}

}  // namespace

void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                const Tensor& bias, double eps) {
  const int64_t rows = mean.numel();
  if (rows == 0) return;
  const int64_t cols = x.numel() / rows;
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    using M = opmath_t<T>;
    tandem::cuda::DeviceGuard guard(x.device().index());
    layer_norm_kernel<T, M><<<row_blocks(rows), row_threads(cols), 0, stream_of(x.device())>>>(
        out.data_ptr<T>(), mean.data_ptr<M>(), rstd.data_ptr<M>(), x.data_ptr<T>(), weight.data_ptr_or_null<T>(),
        bias.data_ptr_or_null<T>(), rows, cols, eps);
    TD_CUDA_CHECK_LAUNCH("layer_norm on ", x.device());
  });
}

void layer_norm_backward(const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& grad,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  const int64_t rows = mean.numel();
  const Tensor& param_grad = grad_weight.defined() ? grad_weight : grad_bias;
  const int64_t cols = rows == 0 ? (param_grad.defined() ? param_grad.numel() : 0) : x.numel() / rows;
  if (cols == 0) return;
  dispatch_floating(x.dtype(), "layer_norm_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    tandem::cuda::DeviceGuard guard(x.device().index());
    const cudaStream_t stream = stream_of(x.device());
    if (grad_x.defined() && rows > 0) {
      layer_norm_grad_input<T, M><<<row_blocks(rows), row_threads(cols), 0, stream>>>(
          grad_x.data_ptr<T>(), grad.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<M>(), rstd.data_ptr<M>(),
          weight.data_ptr_or_null<T>(), rows, cols);
      TD_CUDA_CHECK_LAUNCH("layer_norm_backward on ", x.device());
    }
    if (!param_grad.defined()) return;
    const int64_t chunk_rows = std::max(kChunkRows, (rows + kMaxChunks - 1) / kMaxChunks);
    const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
    // Two planes of partial sums (weight, bias); with no rows, the totals are zeros. Freed when this
    // returns, after both kernels are queued: the allocator orders reuse on the stream.
    Storage partial =
        Storage::allocate(static_cast<size_t>(2 * std::max<int64_t>(chunks, 1) * cols) * sizeof(double), x.device());
    double* partial_w = static_cast<double*>(partial.data());
    double* partial_b = partial_w + chunks * cols;
    if (chunks > 0) {
      const dim3 blocks(static_cast<unsigned>((cols + 31) / 32), static_cast<unsigned>(chunks));
      layer_norm_column_partials<T, M><<<blocks, dim3(32, kColumnRows), 0, stream>>>(
          partial_w, partial_b, grad.data_ptr<T>(), x.data_ptr<T>(), mean.data_ptr<M>(), rstd.data_ptr<M>(), rows,
          cols, chunk_rows);
      TD_CUDA_CHECK_LAUNCH("layer_norm_backward on ", x.device());
    }
    layer_norm_column_totals<T><<<blocks_for(cols), kThreads, 0, stream>>>(
        grad_weight.data_ptr_or_null<T>(), grad_bias.data_ptr_or_null<T>(), partial_w, partial_b, chunks, cols);
    TD_CUDA_CHECK_LAUNCH("layer_norm_backward on ", x.device());
  });
}

}  // namespace tandem::kernels::cuda
