// CUDA cross-entropy over the rows of contiguous class scores [rows, C] with index targets (the
// contract of kernels/cpu/cross_entropy.cc). Forward: a block per row finds the max, the sum of
// exp(x - max) (and, with label smoothing, the weighted sum of the scores) and writes the row's loss,
// target weight and log-sum-exp. Backward: one thread per score, the softmax rebuilt from the
// log-sum-exp, so nothing of size [rows, C] is kept between the passes but the gradient itself.
#include <cuda_runtime.h>

#include <limits>

#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"

namespace tandem::kernels::cuda {

namespace {

template <typename T, typename M>
__device__ M class_weight(const T* w, int64_t c) {
  return w ? static_cast<M>(w[c]) : M(1);
}

template <typename T, typename M>
__global__ void __launch_bounds__(kMaxRowThreads)
    cross_entropy_kernel(T* losses, T* target_weights, M* lse, const T* x, const int64_t* target, const T* w,
                         const M* weight_sum, int64_t rows, int64_t classes, int64_t ignore_index, M keep, M spread,
                         bool smoothed) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * classes;
    M max = -std::numeric_limits<M>::infinity();
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) max = fn::Maximum{}(max, static_cast<M>(in[c]));
    max = block_reduce(max, fn::Maximum{});
    double sum = 0, weighted = 0;  // in double, as the CPU's
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const M v = static_cast<M>(in[c]);
      sum += static_cast<double>(fn::Exp{}(v - max));
      if (smoothed) weighted += static_cast<double>(class_weight<T, M>(w, c) * v);
    }
    sum = block_sum(sum);
    if (smoothed) weighted = block_sum(weighted);
    if (threadIdx.x != 0) continue;
    const M l = max + static_cast<M>(::log(sum));
    lse[r] = l;
    const int64_t t = target[r];
    if (t == ignore_index) {
      losses[r] = T(0);
      target_weights[r] = T(0);
      continue;
    }
    const M wt = class_weight<T, M>(w, t);
    M value = keep * wt * (l - static_cast<M>(in[t]));
    if (smoothed) value = value + spread * (*weight_sum * l - static_cast<M>(weighted));
    losses[r] = static_cast<T>(value);
    target_weights[r] = static_cast<T>(wt);
  }
}

template <typename T, typename M>
__global__ void cross_entropy_backward_kernel(T* grad_x, const M* row_scale, const T* x, const M* lse,
                                              const int64_t* target, const T* w, const M* weight_sum, int64_t rows,
                                              int64_t classes, int64_t ignore_index, M keep, M spread) {
  TD_GRID_STRIDE(i, rows * classes) {
    const int64_t r = i / classes, c = i % classes, t = target[r];
    if (t == ignore_index) {
      grad_x[i] = T(0);
      continue;
    }
    const M hit = keep * class_weight<T, M>(w, t);  // the target's share of the probability mass
    const M p = fn::Exp{}(static_cast<M>(x[i]) - lse[r]);
    M d = (hit + spread * *weight_sum) * p - spread * class_weight<T, M>(w, c);
    if (c == t) d = d - hit;
    grad_x[i] = static_cast<T>(row_scale[r] * d);
  }
}

}  // namespace

void cross_entropy(const Tensor& losses, const Tensor& target_weights, const Tensor& lse, const Tensor& x,
                   const Tensor& target, const Tensor& weight, const Tensor& weight_sum, int64_t ignore_index,
                   double smoothing) {
  const int64_t rows = target.numel();
  if (rows == 0) return;
  const int64_t classes = x.numel() / rows;
  dispatch_floating(x.dtype(), "cross_entropy", [&]<typename T>() {
    using M = opmath_t<T>;
    tandem::cuda::DeviceGuard guard(x.device().index());
    const unsigned blocks = static_cast<unsigned>(rows < 65536 ? rows : 65536);
    cross_entropy_kernel<T, M><<<blocks, row_threads(classes), 0, stream_of(x.device())>>>(
        losses.data_ptr<T>(), target_weights.data_ptr<T>(), lse.data_ptr<M>(), x.data_ptr<T>(),
        target.data_ptr<int64_t>(), weight.data_ptr_or_null<T>(), weight_sum.data_ptr<M>(), rows, classes, ignore_index,
        static_cast<M>(1 - smoothing), static_cast<M>(smoothing / static_cast<double>(classes)),
        // Decided on the option, as on the CPU: smoothing / C may round to 0 in M.
        smoothing > 0);
    TD_CUDA_CHECK_LAUNCH("cross_entropy on ", x.device());
  });
}

void cross_entropy_backward(const Tensor& grad_x, const Tensor& row_scale, const Tensor& x, const Tensor& lse,
                            const Tensor& target, const Tensor& weight, const Tensor& weight_sum,
                            int64_t ignore_index, double smoothing) {
  const int64_t rows = target.numel();
  if (rows == 0) return;
  const int64_t classes = x.numel() / rows;
  dispatch_floating(x.dtype(), "cross_entropy_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    launch("cross_entropy_backward", x.device(), rows * classes, cross_entropy_backward_kernel<T, M>,
           grad_x.data_ptr<T>(), row_scale.data_ptr<M>(), x.data_ptr<T>(), lse.data_ptr<M>(),
           target.data_ptr<int64_t>(), weight.data_ptr_or_null<T>(), weight_sum.data_ptr<M>(), rows, classes,
           ignore_index, static_cast<M>(1 - smoothing), static_cast<M>(smoothing / static_cast<double>(classes)));
  });
}

}  // namespace tandem::kernels::cuda
