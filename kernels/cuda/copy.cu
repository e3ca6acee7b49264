// Copies that involve a CUDA device: within one device (a memcpy, or the element-wise kernel when
// layouts or dtypes differ), between devices (peer-to-peer when the GPUs allow it, ordered with
// events on both streams), and to or from the host. Layout and dtype changes happen on the
// device when the device is the destination and on the host when the host is, so a transfer
// always moves one dense block. A copy with the host waits for the transfer, as PyTorch's
// blocking copies do (pinned memory makes the transfer itself faster).
#include "core/convert.h"
#include "core/dispatch.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace tandem::kernels::cuda {

namespace {

template <typename To, typename From>
struct Convert {
  TD_INLINE To operator()(From x) const { return convert<To>(x); }
};

// A copy that is one dense block of bytes: same dtype, same shape, both contiguous.
bool is_plain_copy(const Tensor& dst, const Tensor& src) {
  return dst.dtype() == src.dtype() && dst.sizes() == src.sizes() && dst.is_contiguous() && src.is_contiguous();
}

Tensor empty_like_layout(const Tensor& like, DType dtype, Device device) {
  const int64_t n = numel_of(like.sizes());
  Storage storage = Storage::allocate(static_cast<size_t>(n) * element_size(dtype), device);
  return Tensor::make(std::move(storage), like.sizes(), contiguous_strides(like.sizes()), 0, dtype);
}

void copy_on_device(const Tensor& dst, const Tensor& src) {
  const Device d = dst.device();
  if (is_plain_copy(dst, src)) {
    if (dst.nbytes() == 0 || dst.data_ptr() == src.data_ptr()) return;
    tandem::cuda::DeviceGuard guard(d.index());
    TD_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), dst.nbytes(), cudaMemcpyDeviceToDevice, stream_of(d)),
                  "copy_ on ", d);
    return;
  }
  auto s = cpu::loop_shape<2>({&dst, &src});
  dispatch_all(dst.dtype(), "copy_", [&]<typename To>() {
    dispatch_all(src.dtype(), "copy_", [&]<typename From>() { elementwise<To, From>("copy_", s, d, Convert<To, From>{}); });
  });
}

// The destination's stream waits for the source's work; afterwards the source's stream waits
// for the copy, so neither reuses its memory early.
void copy_between_devices(const Tensor& dst, const Tensor& src) {
  const Device from = src.device(), to = dst.device();
  // Make the data one dense block in dst's dtype on the source device, move it, then lay it out.
  Tensor block = src;
  if (!(src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous())) {
    block = empty_like_layout(dst, dst.dtype(), from);
    copy_on_device(block, src);
  }
  Tensor landing = dst.is_contiguous() ? dst : empty_like_layout(dst, dst.dtype(), to);
  const tandem::cuda::Stream src_stream = tandem::cuda::current_stream(from.index());
  const tandem::cuda::Stream dst_stream = tandem::cuda::current_stream(to.index());
  tandem::cuda::Event ready;
  ready.record(src_stream);
  ready.wait(dst_stream);
  if (block.nbytes() > 0) {
    tandem::cuda::DeviceGuard guard(to.index());
    const int src_gpu = tandem::cuda::physical_device(from.index()), dst_gpu = tandem::cuda::physical_device(to.index());
    auto stream = static_cast<cudaStream_t>(dst_stream.handle());
    if (src_gpu == dst_gpu || tandem::cuda::can_access_peer(to.index(), from.index())) {
      TD_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), block.data_ptr(), block.nbytes(), cudaMemcpyDeviceToDevice,
                                    stream),
                    "copy_ from ", from, " to ", to);
    } else {  // the driver stages it through the host
      TD_CUDA_CHECK(cudaMemcpyPeerAsync(landing.data_ptr(), dst_gpu, block.data_ptr(), src_gpu, block.nbytes(), stream),
                    "copy_ from ", from, " to ", to);
    }
  }
  if (!landing.is_same(dst)) copy_on_device(dst, landing);
  tandem::cuda::Event done;
  done.record(dst_stream);
  done.wait(src_stream);
}

void copy_from_host(const Tensor& dst, const Tensor& src) {
  const Device d = dst.device();
  Tensor staged = src;
  if (!is_plain_copy(dst, src)) {  // lay the data out on the host, in dst's dtype
    staged = empty_like_layout(dst, dst.dtype(), Device(kCPU));
    cpu::copy(staged, src);
  }
  Tensor landing = dst.is_contiguous() ? dst : empty_like_layout(dst, dst.dtype(), d);
  const tandem::cuda::Stream stream = tandem::cuda::current_stream(d.index());
  if (staged.nbytes() > 0) {
    tandem::cuda::DeviceGuard guard(d.index());
    TD_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), staged.data_ptr(), staged.nbytes(), cudaMemcpyHostToDevice,
                                  static_cast<cudaStream_t>(stream.handle())),
                  "copy_ from cpu to ", d);
  }
  if (!landing.is_same(dst)) copy_on_device(dst, landing);
  stream.synchronize();  // the caller may reuse or change the host memory next
}

void copy_to_host(const Tensor& dst, const Tensor& src) {
  const Device d = src.device();
  Tensor block = src;
  if (!(src.dtype() == dst.dtype() && src.sizes() == dst.sizes() && src.is_contiguous())) {
    block = empty_like_layout(dst, dst.dtype(), d);
    copy_on_device(block, src);
  }
  Tensor landing = dst.is_contiguous() ? dst : empty_like_layout(dst, dst.dtype(), Device(kCPU));
  const tandem::cuda::Stream stream = tandem::cuda::current_stream(d.index());
  if (block.nbytes() > 0) {
    tandem::cuda::DeviceGuard guard(d.index());
    TD_CUDA_CHECK(cudaMemcpyAsync(landing.data_ptr(), block.data_ptr(), block.nbytes(), cudaMemcpyDeviceToHost,
                                  static_cast<cudaStream_t>(stream.handle())),
                  "copy_ from ", d, " to cpu");
  }
  stream.synchronize();  // the host reads the data next
  if (!landing.is_same(dst)) cpu::copy(dst, landing);
}

}  // namespace

void copy(const Tensor& dst, const Tensor& src) {
  if (dst.is_cuda() && src.is_cuda()) {
    return dst.device() == src.device() ? copy_on_device(dst, src) : copy_between_devices(dst, src);
  }
  return dst.is_cuda() ? copy_from_host(dst, src) : copy_to_host(dst, src);
}

}  // namespace tandem::kernels::cuda
