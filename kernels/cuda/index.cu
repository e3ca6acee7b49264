// CUDA indexing kernels, one thread per element (per 16-byte word of a row for index_select). gather
// and scatter_add view the indexed tensor over the index's shape with stride 0 along `dim`, so the
// element-wise indexer (merged dims, any strides) walks all operands and the index adds the dim offset.
// scatter_add's collisions use atomic adds, as PyTorch's do: its float sums may differ from the
// CPU's, and from run to run, in the last bits.
#include <cuda_runtime.h>

#include <cstring>
#include <type_traits>

#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/functors.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/views.h"

namespace tandem::kernels::cuda {

namespace {

// Calls f.template operator()<W>() with W an unsigned word of `bytes` bytes: index ops move
// elements (or whole rows) as opaque words.
template <typename F>
void dispatch_word(size_t bytes, const char* op, const F& f) {
  switch (bytes) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    case 16: return f.template operator()<uint4>();
    default: TD_FAIL(op, ": unsupported element size ", bytes);
  }
}

template <typename W>
__global__ void index_select_kernel(W* out, const W* x, const int64_t* index, int64_t total, int64_t n, int64_t size,
                                    int64_t row_words) {
  TD_GRID_STRIDE(e, total) {
    const int64_t j = e % row_words, row = e / row_words;
    const int64_t i = row % n, o = row / n;
    out[e] = x[(o * size + index[i]) * row_words + j];
  }
}

// Operands: out, index, x viewed over the index's shape; x_step is x's byte stride along dim.
template <typename W>
__global__ void gather_kernel(Indexer<3> ix, int64_t n, int64_t x_step) {
  TD_GRID_STRIDE(e, n) {
    char* p[3];
    ix.pointers(e, p);
    const int64_t k = *reinterpret_cast<const int64_t*>(p[1]);
    *reinterpret_cast<W*>(p[0]) = *reinterpret_cast<const W*>(p[2] + k * x_step);
  }
}

// The narrow types (bool, uint8, Half, BFloat16) as the low bits of an unsigned, and back.
template <typename T>
__device__ unsigned narrow_bits(T v) {
  if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, bool>) {
    return v;
  } else {
    return v.bits;
  }
}

template <typename T>
__device__ T narrow_from_bits(unsigned b) {
  if constexpr (std::is_same_v<T, bool>) {
    return b != 0;
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<uint8_t>(b);
  } else {
    return T::from_bits(static_cast<uint16_t>(b));
  }
}

// *address = combine(*address, value) atomically, by compare-and-swap of the word that holds it: for
// the narrow types, which have no atomics of their own, the aligned 32-bit word around it
// (allocations are whole words, so the word is always inside one). combine works in op-math.
template <typename T, typename Combine>
__device__ void atomic_combine(T* address, T value, Combine combine) {
  using M = opmath_t<T>;
  const auto next = [&](T current) { return static_cast<T>(combine(static_cast<M>(current), static_cast<M>(value))); };
  if constexpr (sizeof(T) < 4) {
    constexpr unsigned kMask = (1u << (8 * sizeof(T))) - 1;
    const uintptr_t at = reinterpret_cast<uintptr_t>(address);
    unsigned* word = reinterpret_cast<unsigned*>(at & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(at & 3) * 8;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      const T result = next(narrow_from_bits<T>((assumed >> shift) & kMask));
      const unsigned bits = (assumed & ~(kMask << shift)) | (narrow_bits(result) << shift);
      if (bits == assumed) break;  // nothing changes (amax, amin): no write
      old = atomicCAS(word, assumed, bits);
    } while (old != assumed);
  } else {
    using Word = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;
    Word* word = reinterpret_cast<Word*>(address);
    Word old = *word, assumed;
    do {
      assumed = old;
      T current;
      memcpy(&current, &assumed, sizeof(T));
      const T result = next(current);
      Word bits;
      memcpy(&bits, &result, sizeof(T));
      if (bits == assumed) break;
      old = atomicCAS(word, assumed, bits);
    } while (old != assumed);
  }
}

template <typename T>
__device__ void atomic_add(T* address, T value) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    atomicAdd(address, value);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<int*>(address), value);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    // Two's complement: the unsigned sum wraps to the same bits as the CPU's signed one.
    atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(value));
  } else {
    atomic_combine(address, value, fn::Add{});
  }
}

// Operands: index, src viewed over the index's shape, self likewise; self_step is self's byte stride along dim.
template <typename T>
__global__ void scatter_add_kernel(Indexer<3> ix, int64_t n, int64_t self_step) {
  TD_GRID_STRIDE(e, n) {
    char* p[3];
    ix.pointers(e, p);
    const int64_t k = *reinterpret_cast<const int64_t*>(p[0]);
    atomic_add(reinterpret_cast<T*>(p[2] + k * self_step), *reinterpret_cast<const T*>(p[1]));
  }
}

// Operands as scatter_add_kernel's.
template <typename T, typename Combine>
__global__ void scatter_reduce_kernel(Indexer<3> ix, int64_t n, int64_t self_step, Combine combine) {
  TD_GRID_STRIDE(e, n) {
    char* p[3];
    ix.pointers(e, p);
    const int64_t k = *reinterpret_cast<const int64_t*>(p[0]);
    atomic_combine(reinterpret_cast<T*>(p[2] + k * self_step), *reinterpret_cast<const T*>(p[1]), combine);
  }
}

// Operands as scatter_add_kernel's; the element is written whole, as an opaque word.
template <typename W>
__global__ void scatter_kernel(Indexer<3> ix, int64_t n, int64_t self_step) {
  TD_GRID_STRIDE(e, n) {
    char* p[3];
    ix.pointers(e, p);
    const int64_t k = *reinterpret_cast<const int64_t*>(p[0]);
    *reinterpret_cast<W*>(p[2] + k * self_step) = *reinterpret_cast<const W*>(p[1]);
  }
}

__global__ void one_hot_kernel(int64_t* out, const int64_t* indices, int64_t n, int64_t classes) {
  TD_GRID_STRIDE(i, n) { out[i * classes + indices[i]] = 1; }
}

// t seen over `sizes` (no larger than t's own, but along dim) with its strides, and stride 0 along dim:
// the element that the index at each position replaces the dim coordinate of.
Tensor along_index(const Tensor& t, const Shape& sizes, int64_t dim) {
  Shape strides(sizes.size(), 0);
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (static_cast<int64_t>(k) != dim && static_cast<int64_t>(k) < t.dim()) strides[k] = t.strides()[k];
  }
  return as_strided(t, sizes, strides);
}

int64_t dim_step(const Tensor& t, int64_t dim) {
  return t.dim() == 0 ? 0 : t.strides()[dim] * static_cast<int64_t>(t.element_size());
}

}  // namespace

void index_select(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t outer = x.dim() == 0 ? 1 : numel_of(Shape(x.sizes().begin(), x.sizes().begin() + dim));
  const int64_t size = x.dim() == 0 ? 1 : x.sizes()[dim];
  const int64_t inner = x.dim() == 0 ? 1 : numel_of(Shape(x.sizes().begin() + dim + 1, x.sizes().end()));
  const int64_t n = index.numel();
  const size_t row_bytes = static_cast<size_t>(inner) * x.element_size();
  // Rows move as the widest words that divide them and both base addresses.
  const uintptr_t bases = reinterpret_cast<uintptr_t>(x.data_ptr()) | reinterpret_cast<uintptr_t>(out.data_ptr());
  size_t word = 16;
  while (word > x.element_size() && (row_bytes % word != 0 || bases % word != 0)) word /= 2;
  const int64_t row_words = static_cast<int64_t>(row_bytes / word);
  dispatch_word(word, "index_select", [&]<typename W>() {
    launch("index_select", out.device(), outer * n * row_words, index_select_kernel<W>,
           static_cast<W*>(out.data_ptr()), static_cast<const W*>(x.data_ptr()), index.data_ptr<int64_t>(),
           outer * n * row_words, n, size, row_words);
  });
}

void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  if (index.numel() == 0) return;
  const Tensor source = along_index(x, index.sizes(), dim);
  const auto shape = cpu::loop_shape<3>({&out, &index, &source});
  dispatch_word(x.element_size(), "gather", [&]<typename W>() {
    launch("gather", out.device(), shape.numel, gather_kernel<W>, make_indexer<3>(shape), shape.numel,
           dim_step(x, dim));
  });
}

void scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (index.numel() == 0) return;
  const Tensor from = as_strided(src, index.sizes(), src.strides());
  const Tensor target = along_index(self, index.sizes(), dim);
  const auto shape = cpu::loop_shape<3>({&index, &from, &target});
  dispatch_numeric(self.dtype(), "scatter_add", [&]<typename T>() {
    launch("scatter_add", self.device(), shape.numel, scatter_add_kernel<T>, make_indexer<3>(shape), shape.numel,
           dim_step(self, dim));
  });
}

void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (index.numel() == 0) return;
  const Tensor from = as_strided(src, index.sizes(), src.strides());
  const Tensor target = along_index(self, index.sizes(), dim);
  const auto shape = cpu::loop_shape<3>({&index, &from, &target});
  dispatch_word(self.element_size(), "scatter", [&]<typename W>() {
    launch("scatter", self.device(), shape.numel, scatter_kernel<W>, make_indexer<3>(shape), shape.numel,
           dim_step(self, dim));
  });
}

void scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, ScatterReduce kind) {
  if (index.numel() == 0) return;
  const Tensor from = as_strided(src, index.sizes(), src.strides());
  const Tensor target = along_index(self, index.sizes(), dim);
  const auto shape = cpu::loop_shape<3>({&index, &from, &target});
  dispatch_all(self.dtype(), "scatter_reduce", [&]<typename T>() {
    const auto run = [&](auto combine) {
      launch("scatter_reduce", self.device(), shape.numel, scatter_reduce_kernel<T, decltype(combine)>,
             make_indexer<3>(shape), shape.numel, dim_step(self, dim), combine);
    };
    switch (kind) {
      case ScatterReduce::Prod: return run(fn::Mul{});
      case ScatterReduce::Max: return run(fn::Maximum{});
      case ScatterReduce::Min: return run(fn::Minimum{});
    }
  });
}

void one_hot(const Tensor& out, const Tensor& indices) {
  launch("one_hot", out.device(), indices.numel(), one_hot_kernel, out.data_ptr<int64_t>(),
         indices.data_ptr<int64_t>(), indices.numel(), out.sizes()[1]);
}

}  // namespace tandem::kernels::cuda
