// CUDA reductions: one generic kernel, instantiated with an Ops policy per reduction (as the CPU engine).
// A group of threads folds each output (1 thread for short folds or coalesced columns, a warp up to a
// block for long folds) and combines its lanes with shuffles and shared memory; when few outputs have
// long folds, blocks also split the fold and a second kernel combines their partials in order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/storage.h"
#include "kernels/cpu/reduce_engine.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"

namespace tandem::kernels::cuda {

namespace {

inline constexpr int kMaxReduceDims = 64;  // as the CPU's; kernel parameters stay under 4 KiB
inline constexpr int64_t kSmallFold = 64;          // shorter folds: one thread per output
inline constexpr int64_t kTargetBlocks = 1024;     // enough blocks to fill a GPU; splits aim for it
inline constexpr int64_t kMinSplitPerThread = 64;  // fold positions per thread below which splitting does not pay
inline constexpr int64_t kGroupGrain = 16;         // fold positions per thread a group aims for as it grows
inline constexpr int kWarp = 32;

// Floating types accumulate in double, integers (and bool) in int64, as on the CPU: a float
// total would overflow or underflow where the result does not (a norm of 1e20s, a product that
// comes back into range) and drift over long folds. The kernels wait on memory, not on the adds.
template <typename T>
using acc_t = std::conditional_t<is_floating_type_v<T>, double, int64_t>;

template <typename In>
TD_INLINE auto op_value(In x) {
  return static_cast<opmath_t<In>>(x);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Merged dims (outermost first), strides in elements: the offset of the i-th index in row-major order.
struct Strided {
  int ndim = 0;
  int64_t sizes[kMaxReduceDims];
  int64_t strides[kMaxReduceDims];

  __device__ int64_t offset(int64_t i) const {
    int64_t offset = 0;
    for (int d = ndim - 1; d > 0; --d) {
      offset += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return ndim > 0 ? offset + i * strides[0] : 0;  // i < sizes[0]: the outermost dim needs no modulo
  }
};

Strided make_strided(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, const char* op) {
  TD_CHECK(sizes.size() <= static_cast<size_t>(kMaxReduceDims), op, ": the CUDA reduction supports at most ",
           kMaxReduceDims, " kept and ", kMaxReduceDims, " reduced dims after merging, got ", sizes.size());
  Strided s;
  s.ndim = static_cast<int>(sizes.size());
  for (int d = 0; d < s.ndim; ++d) {
    s.sizes[d] = sizes[d];
    s.strides[d] = strides[d];
  }
  return s;
}

struct ReduceGeometry {
  Strided kept, reduced;
  int64_t outputs = 1, fold = 1;
  int threads_per_output = 1;  // a power of two up to kThreads
  int64_t chunk = 1;           // fold positions per split; gridDim.y splits
};
static_assert(sizeof(ReduceGeometry) + 512 <= 4096, "a kernel's parameters must fit in 4 KiB");

// ---- the generic kernel ----

// Shuffles any trivially copyable accumulator word by word.
template <typename T>
__device__ T shuffle_down(const T& value, int offset, int width) {
  constexpr int kWords = (sizeof(T) + 3) / 4;
  uint32_t words[kWords] = {};
  memcpy(words, &value, sizeof(T));
#pragma unroll
  for (int k = 0; k < kWords; ++k) words[k] = __shfl_down_sync(0xffffffffu, words[k], offset, width);
  T result;
  memcpy(&result, words, sizeof(T));
  return result;
}

// Combines the accumulators of each group of `tpo` consecutive threads. Returns, in the one thread that
// then holds a group's total in `acc`, the group's index in the block; -1 elsewhere. Every thread of the
// block must call it (it synchronises when groups span warps).
template <typename Ops, typename Acc>
__device__ int combine_groups(const Ops& ops, Acc& acc, int tpo, Acc* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int width = tpo < kWarp ? tpo : kWarp;
  for (int offset = width / 2; offset > 0; offset /= 2) acc = ops.combine(acc, shuffle_down(acc, offset, width));
  if (tpo <= kWarp) return threadIdx.x % tpo == 0 ? static_cast<int>(threadIdx.x) / tpo : -1;
  if (lane == 0) shared[warp] = acc;
  __syncthreads();
  if (warp != 0) return -1;
  const int warps = blockDim.x / kWarp, per_group = tpo / kWarp;
  acc = lane < warps ? shared[lane] : ops.init();
  for (int offset = per_group / 2; offset > 0; offset /= 2) {
    acc = ops.combine(acc, shuffle_down(acc, offset, per_group));
  }
  return lane < warps && lane % per_group == 0 ? lane / per_group : -1;
}

// Block x holds kThreads / tpo consecutive outputs; block y folds positions [y * chunk, (y + 1) * chunk).
// With one split the totals are written, otherwise partial[output * splits + split] keeps them.
template <typename In, typename Ops>
__global__ void reduce_kernel(const In* data, ReduceGeometry g, Ops ops, typename Ops::Acc* partial) {
  using Acc = typename Ops::Acc;
  __shared__ alignas(Acc) unsigned char shared[(kThreads / kWarp) * sizeof(Acc)];
  const int tpo = g.threads_per_output;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpo);
  const int64_t o = first + threadIdx.x / tpo;
  const int64_t begin = blockIdx.y * g.chunk;
  const int64_t end = begin + g.chunk < g.fold ? begin + g.chunk : g.fold;
  Acc acc = ops.init();
  if (o < g.outputs) {
    const In* base = data + g.kept.offset(o);
    for (int64_t pos = begin + threadIdx.x % tpo; pos < end; pos += tpo) {
      acc = ops.step(acc, base[g.reduced.offset(pos)], pos);
    }
  }
  const int group = combine_groups(ops, acc, tpo, reinterpret_cast<Acc*>(shared));
  if (group < 0 || first + group >= g.outputs) return;
  if (gridDim.y == 1) {
    ops.write(first + group, acc, g.fold);
  } else {
    partial[(first + group) * gridDim.y + blockIdx.y] = acc;
  }
}

template <typename Ops>
__global__ void reduce_finish(Ops ops, const typename Ops::Acc* partial, int64_t outputs, int64_t splits,
                              int64_t fold) {
  TD_GRID_STRIDE(o, outputs) {
    typename Ops::Acc acc = partial[o * splits];
    for (int64_t s = 1; s < splits; ++s) acc = ops.combine(acc, partial[o * splits + s]);
    ops.write(o, acc, fold);
  }
}

// Adjacent outputs adjacent in memory (a sum over the rows of a row-major matrix) fold one per thread,
// so that a warp reads each row coalesced; other folds spread over a group sized to their length.
int threads_per_output(const cpu::ReduceDims& d) {
  const bool reduced_inner = !d.reduced_strides.empty() && d.reduced_strides.back() == 1;
  const bool columns = !reduced_inner && !d.kept_strides.empty() && d.kept_strides.back() == 1 &&
                       d.kept_sizes.back() >= kWarp;
  if (d.fold < kSmallFold || columns) return 1;
  int tpo = kWarp;
  while (tpo < kThreads && tpo * kGroupGrain < d.fold) tpo *= 2;
  return tpo;
}

template <typename In, typename Ops>
void reduce(const char* op, const Tensor& in, const std::vector<bool>& reduced, const Ops& ops) {
  using Acc = typename Ops::Acc;
  const cpu::ReduceDims d = cpu::reduce_dims(in, reduced);
  if (d.outputs == 0) return;
  ReduceGeometry g;
  g.kept = make_strided(d.kept_sizes, d.kept_strides, op);
  g.reduced = make_strided(d.reduced_sizes, d.reduced_strides, op);
  g.outputs = d.outputs;
  g.fold = d.fold;
  g.threads_per_output = threads_per_output(d);

  // Splits depend on the shape alone, so results are the same on every GPU.
  const int64_t blocks = ceil_div(d.outputs, kThreads / g.threads_per_output);
  TD_CHECK(blocks <= INT32_MAX, op, ": too many outputs for one CUDA launch: ", d.outputs);
  int64_t splits = 1;
  if (blocks < kTargetBlocks) {
    splits = std::min(ceil_div(kTargetBlocks, blocks), ceil_div(d.fold, g.threads_per_output * kMinSplitPerThread));
    splits = std::max<int64_t>(splits, 1);
  }
  g.chunk = ceil_div(d.fold, splits);
  splits = g.chunk == 0 ? 1 : ceil_div(d.fold, g.chunk);  // no empty split

  const Device device = in.device();
  tandem::cuda::DeviceGuard guard(device.index());
  const cudaStream_t stream = stream_of(device);
  const In* data = static_cast<const In*>(in.data_ptr());
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(splits));
  if (splits == 1) {
    reduce_kernel<In, Ops><<<grid, kThreads, 0, stream>>>(data, g, ops, nullptr);
    TD_CUDA_CHECK_LAUNCH(op, " on ", device);
    return;
  }
  // Freed when this returns, after both kernels are queued: the allocator orders reuse on the stream.
  Storage partial = Storage::allocate(static_cast<size_t>(d.outputs * splits) * sizeof(Acc), device);
  Acc* acc = static_cast<Acc*>(partial.data());
  reduce_kernel<In, Ops><<<grid, kThreads, 0, stream>>>(data, g, ops, acc);
  TD_CUDA_CHECK_LAUNCH(op, " on ", device);
  launch(op, device, d.outputs, reduce_finish<Ops>, ops, static_cast<const Acc*>(acc), d.outputs, splits, d.fold);
}

// ---- the Ops policies ----

// An output of any dtype, chosen at run time: one kernel per input dtype instead of one per pair.
struct AnyOut {
  void* data;
  DType dtype;

  template <typename V, typename T, typename... Rest>
  __device__ void store_as(int64_t o, V v) const {
    if (dtype == dtype_of<T>) {
      static_cast<T*>(data)[o] = convert<T>(v);
    } else if constexpr (sizeof...(Rest) > 0) {
      store_as<V, Rest...>(o, v);
    }
  }
  template <typename V>
  __device__ void store(int64_t o, V v) const {
    store_as<V, float, double, Half, BFloat16, int64_t, int32_t, uint8_t, bool>(o, v);
  }
};

template <typename In>
struct SumOps {
  using Acc = acc_t<In>;
  AnyOut out;
  bool mean;
  __device__ Acc init() const { return 0; }
  __device__ Acc step(Acc a, In x, int64_t) const { return fn::sum(a, static_cast<Acc>(op_value(x))); }
  __device__ Acc combine(Acc a, Acc b) const { return fn::sum(a, b); }
  __device__ void write(int64_t o, Acc a, int64_t n) const {
    if (mean) {
      out.store(o, static_cast<double>(a) / static_cast<double>(n));
    } else {
      out.store(o, a);
    }
  }
};

template <typename In>
struct ProdOps {
  using Acc = acc_t<In>;
  AnyOut out;
  __device__ Acc init() const { return 1; }
  __device__ Acc step(Acc a, In x, int64_t) const { return fn::product(a, static_cast<Acc>(op_value(x))); }
  __device__ Acc combine(Acc a, Acc b) const { return fn::product(a, b); }
  __device__ void write(int64_t o, Acc a, int64_t) const { out.store(o, a); }
};

// max (is_max) or min of the values, NaN propagating, +0 above -0; an empty fold writes 0 as on the CPU.
template <typename In>
struct ExtremumOps {
  using M = opmath_t<In>;
  struct Acc {
    M value;
    bool empty = true;
  };
  In* out;
  bool is_max;
  __device__ Acc init() const { return Acc{M(0), true}; }
  __device__ Acc pick(Acc a, M x) const {
    if (a.empty) return Acc{x, false};
    if (fn::is_nan(a.value)) return a;
    if (fn::is_nan(x) || (is_max ? fn::above(x, a.value) : fn::above(a.value, x))) return Acc{x, false};
    return a;
  }
  __device__ Acc step(Acc a, In x, int64_t) const { return pick(a, op_value(x)); }
  __device__ Acc combine(Acc a, Acc b) const { return b.empty ? a : pick(a, b.value); }
  __device__ void write(int64_t o, Acc a, int64_t) const { out[o] = static_cast<In>(a.value); }
};

template <typename In>
struct ArgOps {
  using M = opmath_t<In>;
  struct Acc {
    M value;
    int64_t index = -1;  // -1: nothing folded yet
  };
  In* values;  // may be null
  int64_t* indices;
  bool is_max;
  __device__ Acc init() const { return Acc{M(0), -1}; }
  // Whether x wins over y. Lanes meet in no particular order, so equal values (and two NaNs, which stick)
  // compare positions: the first wins, as in the CPU's sequential fold.
  __device__ bool wins(const Acc& x, const Acc& y) const {
    if (x.index < 0) return false;
    if (y.index < 0) return true;
    const bool x_nan = fn::is_nan(x.value), y_nan = fn::is_nan(y.value);
    if (x_nan || y_nan) return x_nan && y_nan ? x.index < y.index : x_nan;
    if (x.value == y.value) return x.index < y.index;
    return is_max ? x.value > y.value : x.value < y.value;
  }
  __device__ Acc step(Acc a, In x, int64_t position) const {
    const Acc b{op_value(x), position};
    return wins(b, a) ? b : a;
  }
  __device__ Acc combine(Acc a, Acc b) const { return wins(b, a) ? b : a; }
  __device__ void write(int64_t o, Acc a, int64_t) const {
    if (values) values[o] = static_cast<In>(a.value);
    indices[o] = a.index;
  }
};

// Welford's running mean and squared deviation; lanes and splits merge with Chan's formula.
template <typename In>
struct VarOps {
  using F = acc_t<In>;
  struct Acc {
    F mean = 0, m2 = 0;
    int64_t n = 0;
  };
  In* out;
  int64_t correction;
  bool take_sqrt;
  __device__ Acc init() const { return Acc{}; }
  __device__ Acc step(Acc a, In xin, int64_t) const {
    const F x = static_cast<F>(op_value(xin));
    a.n += 1;
    const F delta = x - a.mean;
    a.mean += delta / static_cast<F>(a.n);
    a.m2 += delta * (x - a.mean);
    return a;
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const int64_t n = a.n + b.n;
    const F delta = b.mean - a.mean, b_share = static_cast<F>(b.n) / static_cast<F>(n);
    return Acc{a.mean + delta * b_share, a.m2 + b.m2 + delta * delta * static_cast<F>(a.n) * b_share, n};
  }
  __device__ void write(int64_t o, Acc a, int64_t) const {
    const F divisor = static_cast<F>(a.n - correction > 0 ? a.n - correction : 0);
    const F v = a.m2 / divisor;
    out[o] = convert<In>(take_sqrt ? fn::math::sqrt(v) : v);
  }
};

enum class NormKind { Zero, One, Two, Inf, NegInf, P };

// The kind is a run-time member: one kernel per dtype rather than six, for a branch that every thread
// takes the same way.
template <typename In>
struct NormOps {
  using Acc = acc_t<In>;
  In* out;
  NormKind kind;
  Acc p;
  // The larger (or smaller) of two magnitudes, NaN sticking.
  __device__ Acc pick(Acc a, Acc x, bool larger) const {
    if (fn::is_nan(a) || fn::is_nan(x)) return fn::is_nan(a) ? a : x;
    return (larger ? x > a : x < a) ? x : a;
  }
  __device__ Acc init() const { return kind == NormKind::NegInf ? Acc(INFINITY) : Acc(0); }
  __device__ Acc step(Acc a, In xin, int64_t) const {
    const Acc x = fn::math::fabs(static_cast<Acc>(op_value(xin)));
    switch (kind) {
      case NormKind::Zero: return a + (x != 0 ? 1 : 0);
      case NormKind::One: return a + x;
      case NormKind::Two: return a + x * x;
      case NormKind::Inf: return pick(a, x, true);
      case NormKind::NegInf: return pick(a, x, false);
      case NormKind::P: return a + fn::math::pow(x, p);
    }
    return a;
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (kind == NormKind::Inf || kind == NormKind::NegInf) return pick(a, b, kind == NormKind::Inf);
    return a + b;
  }
  __device__ void write(int64_t o, Acc a, int64_t) const {
    Acc v = a;
    if (kind == NormKind::Two) v = fn::math::sqrt(a);
    if (kind == NormKind::P) v = fn::math::pow(a, Acc(1) / p);
    out[o] = convert<In>(v);
  }
};

template <typename In, typename Out>
struct LogicalOps {
  using Acc = bool;
  Out* out;
  bool is_all;
  __device__ Acc init() const { return is_all; }
  __device__ Acc step(Acc a, In x, int64_t) const { return is_all ? (a && convert<bool>(x)) : (a || convert<bool>(x)); }
  __device__ Acc combine(Acc a, Acc b) const { return is_all ? (a && b) : (a || b); }
  __device__ void write(int64_t o, Acc a, int64_t) const { out[o] = static_cast<Out>(a); }
};

void sum_or_mean(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, bool mean) {
  const AnyOut o{out.data_ptr(), out.dtype()};
  dispatch_all(in.dtype(), "sum", [&]<typename In>() {
    reduce<In>(mean ? "mean" : "sum", in, reduced, SumOps<In>{o, mean});
  });
}

void logical(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, bool is_all) {
  const char* op = is_all ? "all" : "any";
  dispatch_all(in.dtype(), op, [&]<typename In>() {
    dispatch_types<bool, uint8_t>(out.dtype(), op, [&]<typename Out>() {
      reduce<In>(op, in, reduced, LogicalOps<In, Out>{static_cast<Out*>(out.data_ptr()), is_all});
    });
  });
}

// The running sum or product of a scan (cumsum, cumprod) is kept as the CPU keeps it (float64 for
// floating outputs, int64 for integers), so each output rounds nearly the same value: in float32 a
// line of 10^6 elements would drift from the CPU's by far more than one rounding.
template <typename Out>
using scan_acc_t = std::conditional_t<is_floating_type_v<Out>, double, int64_t>;

template <bool kProduct, typename Acc>
__device__ Acc scan_step(Acc a, Acc b) {
  return kProduct ? fn::product(a, b) : fn::sum(a, b);
}

// Short lines, and many strided ones: one thread per line, scanning it in order.
template <bool kProduct, typename In, typename Out>
__global__ void scan_kernel(Out* out, const In* in, Strided out_lines, Strided in_lines, int64_t lines,
                            int64_t length, int64_t out_stride, int64_t in_stride) {
  using Acc = scan_acc_t<Out>;
  TD_GRID_STRIDE(line, lines) {
    const In* s = in + in_lines.offset(line);
    Out* t = out + out_lines.offset(line);
    Acc acc = kProduct ? 1 : 0;
    for (int64_t i = 0; i < length; ++i) {
      acc = scan_step<kProduct>(acc, convert<Acc>(op_value(s[i * in_stride])));
      t[i * out_stride] = convert<Out>(acc);
    }
  }
}

// Long lines, contiguous or few: one block per line, walking it in tiles of
// kScanThreads * kScanItems elements. Each thread scans its kScanItems consecutive elements, the
// warps scan the threads' totals with shuffles, one warp scans the warps' totals, and the tile's
// total carries into the next tile. A line of 10^6 elements on one thread took a million
// dependent steps. A product scan groups the factors otherwise than the CPU's left-to-right
// loop, which in float64 changes the last bit at most now and then.
constexpr int kScanThreads = 512;
constexpr int kScanWarps = kScanThreads / 32;
constexpr int kScanItems = 4;
constexpr int64_t kScanBlockFrom = 32;  // the shortest line scanned by a block
// Lines that are not contiguous go one thread each while there are this many: neighbouring
// threads then read neighbouring lines (coalesced), where a block would read along a stride.
constexpr int64_t kScanThreadLines = 4096;

template <bool kProduct, typename Acc>
__device__ Acc warp_inclusive_scan(Acc v, int lane) {
#pragma unroll
  for (int step = 1; step < 32; step *= 2) {
    const Acc before = __shfl_up_sync(0xffffffffu, v, step);
    if (lane >= step) v = scan_step<kProduct>(before, v);
  }
  return v;
}

template <bool kProduct, typename In, typename Out>
__global__ void __launch_bounds__(kScanThreads)
    scan_lines_kernel(Out* out, const In* in, Strided out_lines, Strided in_lines, int64_t lines, int64_t length,
                      int64_t out_stride, int64_t in_stride) {
  using Acc = scan_acc_t<Out>;
  constexpr Acc kIdentity = kProduct ? 1 : 0;
  __shared__ Acc warp_totals[kScanWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const In* s = in + in_lines.offset(line);
    Out* t = out + out_lines.offset(line);
    Acc carry = kIdentity;  // the sum or product of the line's tiles before this one
    for (int64_t tile = 0; tile < length; tile += int64_t{kScanThreads} * kScanItems) {
      const int64_t first = tile + int64_t{threadIdx.x} * kScanItems;
      Acc mine[kScanItems];
      Acc total = kIdentity;
#pragma unroll
      for (int k = 0; k < kScanItems; ++k) {
        if (first + k < length) total = scan_step<kProduct>(total, convert<Acc>(op_value(s[(first + k) * in_stride])));
        mine[k] = total;
      }
      const Acc through_me = warp_inclusive_scan<kProduct>(total, lane);
      Acc before_me = __shfl_up_sync(0xffffffffu, through_me, 1);
      if (lane == 0) before_me = kIdentity;
      if (lane == 31) warp_totals[warp] = through_me;
      __syncthreads();
      if (warp == 0) {
        const Acc w = warp_inclusive_scan<kProduct>(lane < kScanWarps ? warp_totals[lane] : kIdentity, lane);
        __syncwarp();  // every lane has read warp_totals before any writes it
        if (lane < kScanWarps) warp_totals[lane] = w;
      }
      __syncthreads();
      const Acc offset =
          scan_step<kProduct>(scan_step<kProduct>(carry, warp > 0 ? warp_totals[warp - 1] : kIdentity), before_me);
#pragma unroll
      for (int k = 0; k < kScanItems; ++k)
        if (first + k < length) t[(first + k) * out_stride] = convert<Out>(scan_step<kProduct>(offset, mine[k]));
      carry = scan_step<kProduct>(carry, warp_totals[kScanWarps - 1]);
      __syncthreads();  // the next tile writes warp_totals again
    }
  }
}

template <bool kProduct>
void scan(const char* op, const Tensor& out, const Tensor& in, int64_t dim) {
  const cpu::ScanLines s = cpu::scan_lines(out, in, dim);
  const int64_t length = s.length, lines = s.lines, in_stride = s.in_stride, out_stride = s.out_stride;
  const Strided in_lines = make_strided(s.in_starts.kept_sizes, s.in_starts.kept_strides, op);
  const Strided out_lines = make_strided(s.out_starts.kept_sizes, s.out_starts.kept_strides, op);
  if (lines == 0) return;
  dispatch_all(in.dtype(), op, [&]<typename In>() {
    dispatch_sum_output<In>(out.dtype(), op, [&]<typename Out>() {
      Out* dst = static_cast<Out*>(out.data_ptr());
      const In* src = static_cast<const In*>(in.data_ptr());
      const bool by_block = length >= kScanBlockFrom && (in_stride == 1 || lines < kScanThreadLines);
      if (!by_block) {
        launch(op, in.device(), lines, scan_kernel<kProduct, In, Out>, dst, src, out_lines, in_lines, lines, length,
               out_stride, in_stride);
        return;
      }
      tandem::cuda::DeviceGuard guard(in.device().index());
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(lines, 65536));
      scan_lines_kernel<kProduct, In, Out><<<blocks, kScanThreads, 0, stream_of(in.device())>>>(
          dst, src, out_lines, in_lines, lines, length, out_stride, in_stride);
      TD_CUDA_CHECK_LAUNCH(op, " on ", in.device());
    });
  });
}

}  // namespace

void sum(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  sum_or_mean(out, in, reduced, false);
}

void mean(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  sum_or_mean(out, in, reduced, true);
}

void prod(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  const AnyOut o{out.data_ptr(), out.dtype()};
  dispatch_all(in.dtype(), "prod", [&]<typename In>() { reduce<In>("prod", in, reduced, ProdOps<In>{o}); });
}

void amax(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  dispatch_all(in.dtype(), "amax", [&]<typename In>() {
    reduce<In>("amax", in, reduced, ExtremumOps<In>{static_cast<In*>(out.data_ptr()), true});
  });
}

void amin(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) {
  dispatch_all(in.dtype(), "amin", [&]<typename In>() {
    reduce<In>("amin", in, reduced, ExtremumOps<In>{static_cast<In*>(out.data_ptr()), false});
  });
}

void arg_reduce(const Tensor& values, const Tensor& indices, const Tensor& in, const std::vector<bool>& reduced,
                bool is_max) {
  const char* op = is_max ? "argmax" : "argmin";
  dispatch_all(in.dtype(), "argmax", [&]<typename In>() {
    In* v = values.defined() ? static_cast<In*>(values.data_ptr()) : nullptr;
    reduce<In>(op, in, reduced, ArgOps<In>{v, indices.data_ptr<int64_t>(), is_max});
  });
}

void var(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, int64_t correction, bool take_sqrt) {
  dispatch_floating(in.dtype(), "var", [&]<typename In>() {
    reduce<In>(take_sqrt ? "std" : "var", in, reduced,
               VarOps<In>{static_cast<In*>(out.data_ptr()), correction, take_sqrt});
  });
}

void norm(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced, double p) {
  NormKind kind = NormKind::P;
  if (p == 0) kind = NormKind::Zero;
  if (p == 1) kind = NormKind::One;
  if (p == 2) kind = NormKind::Two;
  if (std::isinf(p)) kind = p > 0 ? NormKind::Inf : NormKind::NegInf;
  dispatch_floating(in.dtype(), "norm", [&]<typename In>() {
    using Acc = acc_t<In>;
    reduce<In>("norm", in, reduced, NormOps<In>{static_cast<In*>(out.data_ptr()), kind, static_cast<Acc>(p)});
  });
}

void all(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) { logical(out, in, reduced, true); }

void any(const Tensor& out, const Tensor& in, const std::vector<bool>& reduced) { logical(out, in, reduced, false); }

void cumsum(const Tensor& out, const Tensor& in, int64_t dim) { scan<false>("cumsum", out, in, dim); }

void cumprod(const Tensor& out, const Tensor& in, int64_t dim) { scan<true>("cumprod", out, in, dim); }

}  // namespace tandem::kernels::cuda
