// CUDA softmax and log_softmax along a dim of a contiguous tensor viewed as [outer, size, inner]. Rows
// (inner = 1) get a warp each when short, a block each when long: one pass keeps a running max and the
// sum rescaled to it, a second writes the outputs. Otherwise one thread per (outer, inner) column. Sums
// are in double and formulas and NaN / inf behaviour follow the CPU's (kernels/cpu/softmax.cc).
#include <cuda_runtime.h>

#include <limits>

#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"

namespace tandem::kernels::cuda {

namespace {

constexpr int64_t kWarpRowMax = 1024;  // longer rows get a block each
constexpr int kRowThreads = 512;       // threads of a block-per-row launch
constexpr int kWarp = 32;

// The running max of the elements seen and the sum of exp(x - max) over them. Each term is the
// CPU's exp(x - max) in op-math (exact 1 for the max itself, NaN for an infinite one); -inf elements
// add nothing while the max is still -inf, so a row of -inf alone leaves sum 0 and outputs NaN.
template <typename M>
struct Online {
  M max = -std::numeric_limits<M>::infinity();
  double sum = 0;

  // The sum scaled to a new max `to` (>= max, or NaN).
  __device__ double scaled_to(M to) const {
    if (max == -std::numeric_limits<M>::infinity()) return 0;
    if (max == to) return sum;
    return sum * exp(static_cast<double>(max) - static_cast<double>(to));
  }

  __device__ void add(M v) {
    if (v > max || v != v) {
      sum = scaled_to(v) + static_cast<double>(fn::Exp{}(v - v));
      max = v;
    } else if (max != -std::numeric_limits<M>::infinity()) {
      sum += static_cast<double>(fn::Exp{}(v - max));
    }
  }

  __device__ void merge(const Online& o) {
    const M m = (o.max > max || o.max != o.max) ? o.max : max;
    sum = scaled_to(m) + o.scaled_to(m);
    max = m;
  }
};

template <typename M>
__device__ Online<M> warp_merge(Online<M> s) {
#pragma unroll
  for (int step = kWarp / 2; step > 0; step /= 2) {
    Online<M> other;
    other.max = __shfl_xor_sync(0xffffffffu, s.max, step);
    other.sum = __shfl_xor_sync(0xffffffffu, s.sum, step);
    s.merge(other);
  }
  return s;
}

// Row outputs as the CPU's softmax_row writes them: x - max - log(sum), or exp(x - max) * (1 / sum).
template <typename T, typename M>
__device__ void write_row(T* out, const T* in, int64_t size, const Online<M>& s, bool log, int64_t first,
                          int64_t step) {
  if (log) {
    const M log_sum = static_cast<M>(::log(s.sum));
    for (int64_t k = first; k < size; k += step) out[k] = static_cast<T>((static_cast<M>(in[k]) - s.max) - log_sum);
  } else {
    const M scale = static_cast<M>(1.0 / s.sum);
    for (int64_t k = first; k < size; k += step) {
      out[k] = static_cast<T>(fn::Exp{}(static_cast<M>(in[k]) - s.max) * scale);
    }
  }
}

template <typename T>
__global__ void softmax_rows_warp(T* out, const T* x, int64_t rows, int64_t size, bool log) {
  using M = opmath_t<T>;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / kWarp;
  // The loop bound is the same for every lane of a warp, so the shuffles see the whole warp.
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; row < rows; row += warps) {
    const T* in = x + row * size;
    Online<M> s;
    for (int64_t k = lane; k < size; k += kWarp) s.add(static_cast<M>(in[k]));
    write_row(out + row * size, in, size, warp_merge(s), log, lane, kWarp);
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_rows_block(T* out, const T* x, int64_t rows, int64_t size, bool log) {
  using M = opmath_t<T>;
  __shared__ M part_max[kRowThreads / kWarp];
  __shared__ double part_sum[kRowThreads / kWarp];
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int warps = static_cast<int>(blockDim.x) / kWarp;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * size;
    Online<M> s;
    for (int64_t k = threadIdx.x; k < size; k += blockDim.x) s.add(static_cast<M>(in[k]));
    s = warp_merge(s);
    if (lane == 0) {
      part_max[warp] = s.max;
      part_sum[warp] = s.sum;
    }
    __syncthreads();
    if (warp == 0) {
      Online<M> p;
      if (lane < warps) {
        p.max = part_max[lane];
        p.sum = part_sum[lane];
      }
      p = warp_merge(p);
      if (lane == 0) {
        part_max[0] = p.max;
        part_sum[0] = p.sum;
      }
    }
    __syncthreads();
    Online<M> total;
    total.max = part_max[0];
    total.sum = part_sum[0];
    __syncthreads();  // every thread has the row's totals before the next row reuses the slots
    write_row(out + row * size, in, size, total, log, threadIdx.x, blockDim.x);
  }
}

// One thread per column (o, i) of an [outer, size, inner] tensor; the CPU's column formulas
// divide by the sum where its row formulas multiply by the reciprocal.
template <typename T>
__global__ void softmax_columns(T* out, const T* x, int64_t columns, int64_t size, int64_t inner, bool log) {
  using M = opmath_t<T>;
  TD_GRID_STRIDE(c, columns) {
    const int64_t base = (c / inner) * size * inner + c % inner;
    const T* in = x + base;
    T* res = out + base;
    Online<M> s;
    for (int64_t k = 0; k < size; ++k) s.add(static_cast<M>(in[k * inner]));
    if (log) {
      const M log_sum = static_cast<M>(::log(s.sum));
      for (int64_t k = 0; k < size; ++k) {
        res[k * inner] = static_cast<T>(static_cast<M>(in[k * inner]) - s.max - log_sum);
      }
    } else {
      const M sum = static_cast<M>(s.sum);
      for (int64_t k = 0; k < size; ++k) {
        res[k * inner] = static_cast<T>(fn::Exp{}(static_cast<M>(in[k * inner]) - s.max) / sum);
      }
    }
  }
}

}  // namespace

void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log) {
  const int64_t size = x.dim() == 0 ? 1 : x.sizes()[dim];
  const int64_t inner = x.dim() == 0 ? 1 : numel_of(Shape(x.sizes().begin() + dim + 1, x.sizes().end()));
  const int64_t outer = size * inner == 0 ? 0 : x.numel() / (size * inner);
  if (x.numel() == 0) return;
  const char* op = log ? "log_softmax" : "softmax";
  dispatch_floating(x.dtype(), op, [&]<typename T>() {
    const T* src = static_cast<const T*>(x.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    if (inner > 1) {
      launch(op, x.device(), outer * inner, softmax_columns<T>, dst, src, outer * inner, size, inner, log);
      return;
    }
    tandem::cuda::DeviceGuard guard(x.device().index());
    const cudaStream_t stream = stream_of(x.device());
    if (size <= kWarpRowMax) {
      softmax_rows_warp<T><<<blocks_for(outer * kWarp), kThreads, 0, stream>>>(dst, src, outer, size, log);
    } else {
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(outer, 65536));
      softmax_rows_block<T><<<blocks, kRowThreads, 0, stream>>>(dst, src, outer, size, log);
    }
    TD_CUDA_CHECK_LAUNCH(op, " on ", x.device());
  });
}

}  // namespace tandem::kernels::cuda
