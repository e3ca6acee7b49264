// CPU convolution as im2col and GEMM, a chunk of images at a time: a chunk's receptive fields
// ([C*kh*kw, images * L], about kChunkBytes) are built and multiplied while they are still in the
// core's cache. Over the whole batch at once, the matrix (20 MiB for the second convolution of
// the default CNN) went out to memory when written and came back for the GEMM, and the input
// gradient's matrix went out from its GEMM and back for col2im. Chunks run on the pool's threads
// when there are enough of them, each GEMM single-threaded; otherwise one after another, each
// GEMM split across the threads. The chunks, and with them the last bits of BLAS's sums, depend
// on the thread count; for a given count every run gives the same bits.
#include <algorithm>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/views.h"

namespace tandem::kernels::cpu {

namespace {

constexpr int64_t kChunkBytes = int64_t{256} << 10;

struct Chunks {
  int64_t images;  // per chunk (the last may have fewer)
  int64_t count;
  bool on_threads;
};

// Chunks of about kChunkBytes of fields. On several threads: at least four chunks a thread where
// the batch allows, so that the threads finish together, and at least two a thread to run them
// there at all; otherwise the chunks keep their size and run one after another.
Chunks chunks_for(int64_t batch, int64_t bytes_per_image) {
  const int threads = in_parallel_region() ? 1 : num_threads();
  const int64_t fit =
      std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(bytes_per_image, 1), 1, std::max<int64_t>(batch, 1));
  if (threads > 1) {
    const int64_t images = std::min(fit, std::max<int64_t>(1, batch / (4 * threads)));
    const int64_t count = (batch + images - 1) / images;
    if (count >= 2 * threads) return {images, count, true};
  }
  return {fit, (batch + fit - 1) / fit, false};
}

// body(first image, images) for each chunk, on the pool's threads or one after another.
template <typename Body>
void for_each_chunk(const Chunks& c, int64_t batch, const Body& body) {
  auto run = [&](int64_t chunk) {
    const int64_t first = chunk * c.images;
    body(first, std::min(c.images, batch - first));
  };
  if (!c.on_threads) {
    for (int64_t chunk = 0; chunk < c.count; ++chunk) run(chunk);
    return;
  }
  parallel_for(0, c.count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) run(chunk);
  });
}

// A chunk's [images, fields, L] over a [fields, ...] matrix whose rows are `row` elements apart,
// the chunk's first column at element `start` of the matrix's storage.
Tensor chunk_view(const Tensor& matrix, int64_t start, int64_t images, int64_t fields, int64_t positions,
                  int64_t row) {
  return as_strided(matrix, {images, fields, positions}, {positions, row, 1}, start);
}

}  // namespace

void conv2d(const Tensor& out, const Tensor& columns, const Tensor& x, const Tensor& weight, const Tensor& bias,
            const Pool2d& p, int64_t groups) {
  const ConvGeometry g = conv_geometry(x.sizes().data(), p);
  const int64_t positions = g.oh * g.ow, fields = g.c * p.kh * p.kw, width = g.n * positions;
  const int64_t out_channels = weight.sizes()[0], group_out = out_channels / groups, group_fields = fields / groups;
  const Chunks chunks = chunks_for(g.n, fields * positions * static_cast<int64_t>(element_size(x.dtype())));
  dispatch_types<float, double>(x.dtype(), "conv2d", [&]<typename T>() {
    const T* w = weight.data_ptr<T>();
    const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
    T* y = out.data_ptr<T>();
    for_each_chunk(chunks, g.n, [&](int64_t first, int64_t images) {
      // The chunk's fields: in the kept matrix, or in a buffer of its own.
      Tensor cols = columns.defined() ? columns : empty_tensor({fields, images * positions}, x.dtype(), x.device());
      const int64_t ld = columns.defined() ? width : images * positions;
      const int64_t offset = columns.defined() ? first * positions : 0;  // of the chunk's first column
      im2col(chunk_view(cols, cols.storage_offset() + offset, images, fields, positions, ld),
             narrow(x, 0, first, images), p);
      const T* c = cols.data_ptr<T>() + offset;
      // The bias goes in as the GEMM's starting value (beta = 1): no pass of its own over the output.
      if (b) {
        for (int64_t o = 0; o < out_channels; ++o) {
          std::fill_n(y + o * width + first * positions, images * positions, b[o]);
        }
      }
      for (int64_t group = 0; group < groups; ++group) {
        gemm<T>(false, false, group_out, images * positions, group_fields, T(1),
                w + group * group_out * group_fields, group_fields, c + group * group_fields * ld, ld, T(b ? 1 : 0),
                y + group * group_out * width + first * positions, width);
      }
    });
  });
}

void conv2d_backward_input(const Tensor& grad_x, const Tensor& grad, int64_t grad_ld, const Tensor& weight,
                           const Pool2d& p, int64_t groups) {
  const ConvGeometry g = conv_geometry(grad_x.sizes().data(), p);
  const int64_t positions = g.oh * g.ow, fields = g.c * p.kh * p.kw;
  const int64_t out_channels = weight.sizes()[0], group_out = out_channels / groups, group_fields = fields / groups;
  const Chunks chunks = chunks_for(g.n, fields * positions * static_cast<int64_t>(element_size(grad_x.dtype())));
  dispatch_types<float, double>(grad_x.dtype(), "conv2d_backward_input", [&]<typename T>() {
    const T* w = weight.data_ptr<T>();
    const T* dy = grad.data_ptr<T>();
    for_each_chunk(chunks, g.n, [&](int64_t first, int64_t images) {
      const int64_t ld = images * positions;
      Tensor cols = empty_tensor({fields, ld}, grad_x.dtype(), grad_x.device());
      T* c = cols.data_ptr<T>();
      for (int64_t group = 0; group < groups; ++group) {
        gemm<T>(true, false, group_fields, ld, group_out, T(1), w + group * group_out * group_fields, group_fields,
                dy + group * group_out * grad_ld + first * positions, grad_ld, T(0), c + group * group_fields * ld,
                ld);
      }
      col2im(narrow(grad_x, 0, first, images), chunk_view(cols, cols.storage_offset(), images, fields, positions, ld),
             p);
    });
  });
}

}  // namespace tandem::kernels::cpu
