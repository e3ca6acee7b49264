// The sum of several tensors in one pass (the reduction step of the collectives): each element
// reads every input once and is written once, added in the order of the inputs, so a sum over
// devices is the same on every run. More inputs than one launch takes are added in groups, the
// later groups onto the output.
#include "core/dispatch.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace tandem::kernels::cuda {

namespace {

constexpr int kMaxInputs = 16;

template <typename T>
struct Inputs {
  const T* data[kMaxInputs];
  int count;
};

template <typename T>
__global__ void add_n_kernel(T* out, Inputs<T> in, bool onto_out, int64_t n) {
  using Acc = opmath_t<T>;
  TD_GRID_STRIDE(i, n) {
    Acc acc = onto_out ? static_cast<Acc>(out[i]) : static_cast<Acc>(in.data[0][i]);
    for (int k = onto_out ? 0 : 1; k < in.count; ++k) acc = static_cast<Acc>(acc + static_cast<Acc>(in.data[k][i]));
    out[i] = static_cast<T>(acc);
  }
}

}  // namespace

void add_n(const Tensor& out, const std::vector<Tensor>& inputs) {
  dispatch_numeric(out.dtype(), "add_n", [&]<typename T>() {
    for (size_t first = 0; first < inputs.size(); first += kMaxInputs) {
      Inputs<T> group{};
      group.count = static_cast<int>(std::min<size_t>(kMaxInputs, inputs.size() - first));
      for (int k = 0; k < group.count; ++k) group.data[k] = static_cast<const T*>(inputs[first + k].data_ptr());
      launch("add_n", out.device(), out.numel(), add_n_kernel<T>, static_cast<T*>(out.data_ptr()), group, first > 0,
             out.numel());
    }
  });
}

}  // namespace tandem::kernels::cuda
