// CUDA fused optimizer steps: up to kMaxTensors tensors per launch, blockIdx.y picking the tensor
// and the x dimension striding over its elements, each element updated by the functors of
// kernels/functors.h (the same as the CPU's).
#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace tandem::kernels::cuda {

namespace {

constexpr int kMaxTensors = 16;

template <typename T, typename Update>
struct TensorList {
  T* p[kMaxTensors];
  const T* g[kMaxTensors];
  T* a[kMaxTensors];  // SGD: momentum buffer; Adam: exp_avg
  T* b[kMaxTensors];  // Adam: exp_avg_sq
  T* c[kMaxTensors];  // Adam with amsgrad: max_exp_avg_sq
  int64_t numel[kMaxTensors];
  Update update[kMaxTensors];
};

template <typename T>
__global__ void sgd_kernel(TensorList<T, fn::SgdUpdate<T>> list) {
  const int t = blockIdx.y;
  T unused = 0;
  TD_GRID_STRIDE(e, list.numel[t]) { list.update[t](list.p[t][e], list.g[t][e], list.a[t] ? list.a[t][e] : unused); }
}

template <typename T>
__global__ void adam_kernel(TensorList<T, fn::AdamUpdate<T>> list) {
  const int t = blockIdx.y;
  TD_GRID_STRIDE(e, list.numel[t]) {
    list.update[t](list.p[t][e], list.g[t][e], list.a[t][e], list.b[t][e], list.c[t] ? list.c[t] + e : nullptr);
  }
}

// Launches `kernel` over params in groups of kMaxTensors, fill(list, slot, i) describing tensor i.
template <typename List, typename Fill>
void for_each_group(const char* op, const std::vector<Tensor>& params, void (*kernel)(List), Fill fill) {
  const Device device = params[0].device();
  tandem::cuda::DeviceGuard guard(device.index());
  for (size_t first = 0; first < params.size(); first += kMaxTensors) {
    List list{};
    int count = 0;
    int64_t largest = 0;
    for (size_t i = first; i < std::min(params.size(), first + kMaxTensors); ++i, ++count) {
      fill(list, count, i);
      list.numel[count] = params[i].numel();
      largest = std::max(largest, params[i].numel());
    }
    if (largest == 0) continue;
    const dim3 grid(blocks_for(largest), static_cast<unsigned>(count));
    kernel<<<grid, kThreads, 0, stream_of(device)>>>(list);
    TD_CUDA_CHECK_LAUNCH(op, " on ", device);
  }
}

}  // namespace

void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& bufs,
              const std::vector<bool>& first, const SgdStep& step) {
  dispatch_types<float, double>(params[0].dtype(), "sgd_step_", [&]<typename T>() {
    using List = TensorList<T, fn::SgdUpdate<T>>;
    for_each_group("sgd_step_", params, sgd_kernel<T>, [&](List& list, int slot, size_t i) {
      list.p[slot] = params[i].data_ptr<T>();
      list.g[slot] = grads[i].data_ptr<T>();
      list.a[slot] = step.momentum != 0 ? bufs[i].data_ptr<T>() : nullptr;
      list.update[slot] = kernels::detail::sgd_update<T>(step, step.momentum != 0 && first[i]);
    });
  });
}

void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
               const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
               const std::vector<int64_t>& steps, const AdamStep& step) {
  dispatch_types<float, double>(params[0].dtype(), "adam_step_", [&]<typename T>() {
    using List = TensorList<T, fn::AdamUpdate<T>>;
    for_each_group("adam_step_", params, adam_kernel<T>, [&](List& list, int slot, size_t i) {
      list.p[slot] = params[i].data_ptr<T>();
      list.g[slot] = grads[i].data_ptr<T>();
      list.a[slot] = exp_avgs[i].data_ptr<T>();
      list.b[slot] = exp_avg_sqs[i].data_ptr<T>();
      list.c[slot] = step.amsgrad ? max_exp_avg_sqs[i].data_ptr<T>() : nullptr;
      list.update[slot] = kernels::detail::adam_update<T>(step, steps[i]);
    });
  });
}

}  // namespace tandem::kernels::cuda
