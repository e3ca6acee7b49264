// The CPU reduction engine: reduces a tensor over a set of dims with an Ops policy.
//
// Each output (one per combination of kept indices, in row-major order) folds the reduced elements
// in row-major order, so an element's position in the fold is its flat index over the reduced
// dims (what argmax reports). Work is split by outputs, by fixed-size chunks of a long fold
// (combined in order afterwards), or, when the innermost dim is kept and contiguous, by columns
// that fold row after row in vector registers. Within a fold, every kReduceBlock elements start
// from init() and are combined in order, so that rounding grows with the block length plus the
// number of blocks rather than with the fold length (a float64 sum of a constant accumulates a
// systematic error of about one ulp per element otherwise). Every split depends on the shape
// alone, never on the thread count, so results are identical for any TANDEM_NUM_THREADS.
//
// Ops provides: using Acc; Acc init(); Acc step(Acc, In value, int64_t position);
// Acc combine(Acc earlier, Acc later); void write(int64_t output, Acc, int64_t count).
// An Ops whose result does not depend on the order of the fold (sums, max, all) sets
// `static constexpr bool kLanes = true`: contiguous runs are then folded in kFoldLanes
// interleaved lanes, which the compiler turns into vector instructions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace tandem::kernels::cpu {

inline constexpr int64_t kReduceChunk = 16384;  // fold length above which a fold is split
inline constexpr int64_t kReduceColumns = 4096;  // columns per task in the column-wise fold
inline constexpr int64_t kReduceBlock = 128;    // elements folded from init() before combining
inline constexpr int kFoldLanes = 16;

template <typename Ops>
concept LaneFoldable = Ops::kLanes;

// A contiguous run p[0, n) folded into acc, in lanes where the Ops allows.
template <typename In, typename Ops>
typename Ops::Acc fold_contiguous(const Ops& ops, typename Ops::Acc acc, const In* p, int64_t n, int64_t pos) {
  int64_t k = 0;
  if constexpr (LaneFoldable<Ops>) {
    if (n >= 2 * kFoldLanes) {
      typename Ops::Acc lanes[kFoldLanes];
      for (int l = 0; l < kFoldLanes; ++l) lanes[l] = ops.init();
      for (; k + kFoldLanes <= n; k += kFoldLanes) {
        for (int l = 0; l < kFoldLanes; ++l) lanes[l] = ops.step(lanes[l], p[k + l], pos + k + l);
      }
      for (int width = kFoldLanes / 2; width > 0; width /= 2) {
        for (int l = 0; l < width; ++l) lanes[l] = ops.combine(lanes[l], lanes[l + width]);
      }
      acc = ops.combine(acc, lanes[0]);
    }
  }
  for (; k < n; ++k) acc = ops.step(acc, p[k], pos + k);
  return acc;
}

struct ReduceDims {
  // Merged dims, outermost first; strides in elements of the input.
  std::vector<int64_t> kept_sizes, kept_strides, reduced_sizes, reduced_strides;
  int64_t outputs = 1, fold = 1;
};

ReduceDims reduce_dims(const Tensor& in, const std::vector<bool>& reduced);

// A scan's lines along `dim` (cumsum, cumprod; the CPU's and the GPU's): how many, how long, the
// stride along them in `in` and in `out`, and where each starts (`kept_offset`, line by line).
struct ScanLines {
  int64_t length, lines, in_stride, out_stride;
  ReduceDims in_starts, out_starts;
};
ScanLines scan_lines(const Tensor& out, const Tensor& in, int64_t dim);

// Offset of output `o` (row-major over kept dims) in the input.
inline int64_t kept_offset(const ReduceDims& d, int64_t o) {
  int64_t offset = 0;
  for (size_t i = d.kept_sizes.size(); i-- > 0;) {
    offset += (o % d.kept_sizes[i]) * d.kept_strides[i];
    o /= d.kept_sizes[i];
  }
  return offset;
}

// Folds reduced positions [begin, end) of the output whose elements start at `base`.
template <typename In, typename Ops>
typename Ops::Acc fold_range(const Ops& ops, typename Ops::Acc acc, const In* base, const ReduceDims& d,
                             int64_t begin, int64_t end) {
  const int nd = static_cast<int>(d.reduced_sizes.size());
  if (begin >= end) return acc;
  if (nd == 0) return ops.step(acc, base[0], 0);
  int64_t index[64];
  int64_t rest = begin;
  for (int i = nd - 1; i >= 0; --i) {
    index[i] = rest % d.reduced_sizes[i];
    rest /= d.reduced_sizes[i];
  }
  const int64_t inner_size = d.reduced_sizes[nd - 1], inner_stride = d.reduced_strides[nd - 1];
  for (int64_t pos = begin; pos < end;) {
    int64_t offset = 0;
    for (int i = 0; i < nd; ++i) offset += index[i] * d.reduced_strides[i];
    const int64_t n = std::min(inner_size - index[nd - 1], end - pos);
    const In* p = base + offset;
    if (inner_stride == 1) {
      acc = fold_contiguous(ops, acc, p, n, pos);
    } else {
      for (int64_t k = 0; k < n; ++k) acc = ops.step(acc, p[k * inner_stride], pos + k);
    }
    pos += n;
    index[nd - 1] += n;
    for (int i = nd - 1; i > 0 && index[i] == d.reduced_sizes[i]; --i) {
      index[i] = 0;
      ++index[i - 1];
    }
  }
  return acc;
}

// Folds reduced positions [begin, end) block by block, combining the blocks in order. A block
// folded in lanes may be kFoldLanes times longer: each lane then still sees kReduceBlock elements.
template <typename In, typename Ops>
typename Ops::Acc fold_blocked(const Ops& ops, const In* base, const ReduceDims& d, int64_t begin, int64_t end) {
  constexpr int64_t block = LaneFoldable<Ops> ? kReduceBlock * kFoldLanes : kReduceBlock;
  const bool one_run = d.reduced_sizes.size() == 1 && d.reduced_strides[0] == 1;
  auto fold_block = [&](int64_t b) {
    const int64_t e = std::min(end, b + block);
    return one_run ? fold_contiguous(ops, ops.init(), base + b, e - b, b) : fold_range(ops, ops.init(), base, d, b, e);
  };
  typename Ops::Acc acc = fold_block(begin);
  for (int64_t b = begin + block; b < end; b += block) acc = ops.combine(acc, fold_block(b));
  return acc;
}

template <typename In, typename Ops>
void reduce(const Tensor& in, const std::vector<bool>& reduced, const Ops& ops) {
  using Acc = typename Ops::Acc;
  const ReduceDims d = reduce_dims(in, reduced);
  const In* data = static_cast<const In*>(in.data_ptr());
  if (d.outputs == 0) return;

  // Column-wise: the input is [outer, fold, columns] contiguous with many columns, as in a sum
  // over dim 0 of a row-major matrix. Each column folds its rows in order, kReduceBlock rows at a
  // time. A task takes one such block of rows across up to kReduceColumns columns, so that it
  // streams through whole rows (the prefetchers follow a long contiguous run, not a narrow strip
  // of each row), and the blocks' results are then combined in order, column by column.
  const bool one_reduced_block = d.reduced_sizes.size() == 1 && !d.kept_sizes.empty() &&
                                 d.kept_strides.back() == 1 && d.reduced_strides[0] == d.kept_sizes.back();
  if (one_reduced_block && d.kept_sizes.back() >= 16 && d.fold > 1) {
    const int64_t columns = d.kept_sizes.back();
    const int64_t outer = d.outputs / columns;
    const int64_t width = std::min(columns, kReduceColumns);
    const int64_t column_blocks = (columns + width - 1) / width;
    const int64_t row_blocks = (d.fold + kReduceBlock - 1) / kReduceBlock;
    struct Slot {  // not a plain Acc: a std::vector<bool> would share words between threads
      Acc acc;
    };
    // partial[(o * row_blocks + b) * columns + c]: rows block b of column c, where there are several
    std::vector<Slot> partial(row_blocks > 1 ? static_cast<size_t>(outer * row_blocks * columns) : 0);
    parallel_for(0, outer * row_blocks * column_blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<Slot> acc(static_cast<size_t>(width));
      for (int64_t task = begin; task < end; ++task) {
        const int64_t o = task / (row_blocks * column_blocks);
        const int64_t b = task / column_blocks % row_blocks, c0 = task % column_blocks * width;
        const int64_t n = std::min(width, columns - c0);
        const int64_t r0 = b * kReduceBlock, r1 = std::min(d.fold, r0 + kReduceBlock);
        const In* base = data + kept_offset(d, o * columns) + c0;
        for (int64_t c = 0; c < n; ++c) acc[c].acc = ops.init();
        for (int64_t r = r0; r < r1; ++r) {
          const In* row = base + r * d.reduced_strides[0];
          for (int64_t c = 0; c < n; ++c) acc[c].acc = ops.step(acc[c].acc, row[c], r);
        }
        if (row_blocks == 1) {
          for (int64_t c = 0; c < n; ++c) ops.write(o * columns + c0 + c, acc[c].acc, d.fold);
        } else {
          Slot* out = partial.data() + (o * row_blocks + b) * columns + c0;
          for (int64_t c = 0; c < n; ++c) out[c] = acc[c];
        }
      }
    });
    if (row_blocks == 1) return;
    parallel_for(0, outer * columns, kReduceColumns, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t o = i / columns, c = i % columns;
        const Slot* column = partial.data() + o * row_blocks * columns + c;
        Acc total = column[0].acc;
        for (int64_t b = 1; b < row_blocks; ++b) total = ops.combine(total, column[b * columns].acc);
        ops.write(i, total, d.fold);
      }
    });
    return;
  }

  if (d.fold <= kReduceChunk) {
    const int64_t grain = std::max<int64_t>(1, kReduceChunk / std::max<int64_t>(d.fold, 1));
    parallel_for(0, d.outputs, grain, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        ops.write(o, fold_blocked(ops, data + kept_offset(d, o), d, 0, d.fold), d.fold);
      }
    });
    return;
  }

  // Long folds: fixed chunks in parallel, then each output combines its chunks in order.
  // Each task writes its own slot; a plain std::vector<Acc> would pack bool accumulators (all,
  // any) into shared words that tasks on different threads then overwrite.
  struct Slot {
    Acc acc;
  };
  const int64_t chunks = (d.fold + kReduceChunk - 1) / kReduceChunk;
  std::vector<Slot> partial(static_cast<size_t>(d.outputs * chunks));
  parallel_for(0, d.outputs * chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / chunks, c = task % chunks;
      const int64_t lo = c * kReduceChunk, hi = std::min(d.fold, lo + kReduceChunk);
      partial[task].acc = fold_blocked(ops, data + kept_offset(d, o), d, lo, hi);
    }
  });
  for (int64_t o = 0; o < d.outputs; ++o) {
    Acc acc = partial[o * chunks].acc;
    for (int64_t c = 1; c < chunks; ++c) acc = ops.combine(acc, partial[o * chunks + c].acc);
    ops.write(o, acc, d.fold);
  }
}

}  // namespace tandem::kernels::cpu
