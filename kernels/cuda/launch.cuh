// What the CUDA kernels share: the stream and device of a launch, launch checks, the operand
// indexer (broadcast, strided, merged dims, as the CPU loops see them) and the generic
// element-wise kernel that most ops instantiate with a functor from kernels/functors.h.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "core/cuda.h"
#include "core/cuda_check.h"
#include "core/tensor.h"
#include "kernels/cpu/loops.h"

namespace tandem::kernels::cuda {

inline constexpr int kThreads = 256;

inline cudaStream_t stream_of(Device device) {
  return static_cast<cudaStream_t>(tandem::cuda::current_stream(device.index()).handle());
}

// Blocks for a grid-stride loop over n items: enough to fill the GPU, never more than the items need.
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t wanted = (n + threads - 1) / threads;
  return static_cast<unsigned>(wanted < 1 ? 1 : wanted > 65536 ? 65536 : wanted);
}

// Runs kernel<<<blocks_for(n), kThreads>>> on the device's current stream; nothing for n == 0.
template <typename... Params, typename... Args>
void launch(const char* op, Device device, int64_t n, void (*kernel)(Params...), Args&&... args) {
  if (n == 0) return;
  tandem::cuda::DeviceGuard guard(device.index());
  kernel<<<blocks_for(n), kThreads, 0, stream_of(device)>>>(std::forward<Args>(args)...);
  TD_CUDA_CHECK_LAUNCH(op, " on ", device);
}

#define TD_GRID_STRIDE(i, n)                                                                         \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);            \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// N operands (operand 0 the output) broadcast to one shape: the byte offsets of each for the
// i-th element of the shape in row-major order over the merged dims (innermost fastest).
template <int N>
struct Indexer {
  int ndim = 0;
  int64_t sizes[cpu::kMaxLoopDims];
  int64_t strides[cpu::kMaxLoopDims][N];
  char* data[N];

  __device__ void pointers(int64_t i, char* (&ptr)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) ptr[k] = data[k];
    for (int d = 0; d < ndim; ++d) {
      const int64_t index = i % sizes[d];
      i /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) ptr[k] += index * strides[d][k];
    }
  }
};

template <int N>
Indexer<N> make_indexer(const cpu::LoopShape<N>& s) {
  Indexer<N> ix;
  ix.ndim = s.ndim;
  for (int d = 0; d < s.ndim; ++d) {
    ix.sizes[d] = s.sizes[d];
    for (int k = 0; k < N; ++k) ix.strides[d][k] = s.strides[d][k];
  }
  for (int k = 0; k < N; ++k) ix.data[k] = s.data[k];
  return ix;
}

// combine(v of every thread of a block), returned to every thread, in a fixed order (warp shuffles,
// then the warps' results one after another). blockDim.x: a multiple of 32, at most 1024.
template <typename M, typename Combine>
__device__ M block_reduce(M v, const Combine& combine) {
  __shared__ M warp_results[32];
#pragma unroll
  for (int step = 16; step > 0; step /= 2) v = combine(v, __shfl_xor_sync(0xffffffffu, v, step));
  __syncthreads();  // a previous call's readers are done with warp_results
  if (threadIdx.x % 32 == 0) warp_results[threadIdx.x / 32] = v;
  __syncthreads();
  M total = warp_results[0];
  for (unsigned w = 1; w < blockDim.x / 32; ++w) total = combine(total, warp_results[w]);
  return total;
}

template <typename M>
__device__ M block_sum(M v) {
  return block_reduce(v, [](M a, M b) { return a + b; });
}

// The most threads a block that walks rows has. Its kernels say so (__launch_bounds__), so that
// the compiler keeps their registers few enough for a block of that many.
inline constexpr int kMaxRowThreads = 512;

// Threads for a block that walks rows of `cols` elements: a whole number of warps, at most kMaxRowThreads.
inline int row_threads(int64_t cols) {
  constexpr int64_t kMaxWarps = kMaxRowThreads / 32;
  const int64_t warps = (cols + 31) / 32;
  return static_cast<int>(32 * (warps < 1 ? 1 : warps > kMaxWarps ? kMaxWarps : warps));
}

// ---- the generic element-wise kernel ----

namespace detail {

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// All operands contiguous, or (inputs) one element broadcast (step 0): plain indexing, and
// 16-byte vector loads and stores when every operand is contiguous and aligned.
template <int V, typename Out, typename... In, typename F, size_t... I>
__device__ void dense_body(Out* out, const std::tuple<const In*...>& in, const std::array<int, sizeof...(In)>& step,
                           int64_t n, const F& f, std::index_sequence<I...>) {
  if constexpr (V > 1) {
    (void)step;
    const int64_t packs = n / V;
    TD_GRID_STRIDE(p, packs) {
      Pack<Out, V> o;
      std::tuple<Pack<In, V>...> x{reinterpret_cast<const Pack<In, V>*>(std::get<I>(in))[p]...};
#pragma unroll
      for (int j = 0; j < V; ++j) o.v[j] = f(std::get<I>(x).v[j]...);
      reinterpret_cast<Pack<Out, V>*>(out)[p] = o;
    }
    TD_GRID_STRIDE(i, n - packs * V) {
      const int64_t e = packs * V + i;
      out[e] = f(std::get<I>(in)[e]...);
    }
  } else {
    TD_GRID_STRIDE(i, n) { out[i] = f(std::get<I>(in)[i * step[I]]...); }
  }
}

// (CUDA allows one template pack per kernel, and only last: the kernels forward to device functions.)
template <int V, typename F, typename Out, typename... In>
__global__ void elementwise_dense(Out* out, std::tuple<const In*...> in, std::array<int, sizeof...(In)> step,
                                  int64_t n, F f) {
  dense_body<V>(out, in, step, n, f, std::index_sequence_for<In...>{});
}

template <typename Out, typename... In, typename F, size_t... I>
__device__ void strided_body(const Indexer<1 + sizeof...(In)>& ix, int64_t n, const F& f, std::index_sequence<I...>) {
  TD_GRID_STRIDE(i, n) {
    char* p[1 + sizeof...(In)];
    ix.pointers(i, p);
    *reinterpret_cast<Out*>(p[0]) = f(*reinterpret_cast<const In*>(p[I + 1])...);
  }
}

template <typename F, typename Out, typename... In>
__global__ void elementwise_strided(Indexer<1 + sizeof...(In)> ix, int64_t n, F f) {
  strided_body<Out, In...>(ix, n, f, std::index_sequence_for<In...>{});
}

template <typename T>
constexpr int pack_width() {
  return sizeof(T) >= 16 ? 1 : static_cast<int>(16 / sizeof(T));
}

template <typename... T>
constexpr int common_pack_width() {
  int v = 16;
  ((v = pack_width<T>() < v ? pack_width<T>() : v), ...);
  return v;
}

}  // namespace detail

// out[i] = f(in_0[i], ...) over operands laid out by loop_shape({&out, &in_0, ...}) (all on one
// device, inputs broadcast to out). f must be a __host__ __device__ functor object.
template <typename Out, typename... In, typename F>
void elementwise(const char* op, const cpu::LoopShape<1 + sizeof...(In)>& s, Device device, F f) {
  constexpr int N = 1 + sizeof...(In);
  if (s.numel == 0) return;
  using Seq = std::index_sequence_for<In...>;
  constexpr size_t sizes[N] = {sizeof(Out), sizeof(In)...};
  bool dense = s.ndim <= 1;
  std::array<int, sizeof...(In)> step{};
  bool all_contiguous = true;
  for (int k = 0; k < N && dense; ++k) {
    const int64_t stride = s.ndim == 0 ? static_cast<int64_t>(sizes[k]) : s.strides[0][k];
    if (stride == static_cast<int64_t>(sizes[k])) {
      if (k > 0) step[k - 1] = 1;
    } else if (stride == 0 && k > 0) {
      all_contiguous = false;
    } else {
      dense = false;
    }
  }
  tandem::cuda::DeviceGuard guard(device.index());
  const cudaStream_t stream = stream_of(device);
  if (dense) {
    Out* out = reinterpret_cast<Out*>(s.data[0]);
    auto in = [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<const In*...>{reinterpret_cast<const In*>(s.data[I + 1])...};
    }(Seq{});
    constexpr int V = detail::common_pack_width<Out, In...>();
    bool aligned = all_contiguous && s.numel >= 4 * V;
    for (int k = 0; k < N; ++k) aligned = aligned && reinterpret_cast<uintptr_t>(s.data[k]) % 16 == 0;
    if (aligned && V > 1) {
      detail::elementwise_dense<V, F, Out, In...><<<blocks_for(s.numel / V), kThreads, 0, stream>>>(out, in, step,
                                                                                                     s.numel, f);
    } else {
      detail::elementwise_dense<1, F, Out, In...><<<blocks_for(s.numel), kThreads, 0, stream>>>(out, in, step,
                                                                                                s.numel, f);
    }
  } else {
    detail::elementwise_strided<F, Out, In...><<<blocks_for(s.numel), kThreads, 0, stream>>>(make_indexer<N>(s),
                                                                                             s.numel, f);
  }
  TD_CUDA_CHECK_LAUNCH(op, " on ", device);
}

}  // namespace tandem::kernels::cuda
