// The sum of several tensors in one pass (the reduction step of the collectives): each element
// reads every input once and is written once, added in the order of the inputs, so a sum over
// devices is the same on every run. More inputs than one launch takes are added in groups, each
// onto the running sum of the groups before.
#include "core/dispatch.h"
#include "kernels/functors.h"
#include "kernels/backend.h"
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

// One group of inputs: the first group starts from its first input, a later one from the running
// sum (kept in `partial`, in op-math); the last group writes out. With one group, partial is null.
template <typename T>
__global__ void add_n_kernel(T* out, opmath_t<T>* partial, Inputs<T> in, bool first, bool last, int64_t n) {
  using Acc = opmath_t<T>;
  TD_GRID_STRIDE(i, n) {
    Acc acc = first ? static_cast<Acc>(in.data[0][i]) : partial[i];
    for (int k = first ? 1 : 0; k < in.count; ++k) acc = fn::sum(acc, static_cast<Acc>(in.data[k][i]));
    if (last) {
      out[i] = static_cast<T>(acc);
    } else {
      partial[i] = acc;
    }
  }
}

}  // namespace

void add_n(const Tensor& out, const std::vector<Tensor>& inputs) {
  dispatch_numeric(out.dtype(), "add_n", [&]<typename T>() {
    using Acc = opmath_t<T>;
    // Sums of more inputs than one launch takes carry their running sum in a temporary between
    // launches: in float32 for float16/bfloat16, so they round once, as the CPU's do; and apart
    // from out, which may also be a later input that the sum must not overwrite before it is read.
    Tensor running;
    if (inputs.size() > kMaxInputs) {
      running = empty_tensor({out.numel()}, dtype_of<Acc>, out.device());
    }
    Acc* partial = running.defined() ? static_cast<Acc*>(running.data_ptr()) : nullptr;
    for (size_t first = 0; first < inputs.size(); first += kMaxInputs) {
      Inputs<T> group{};
      group.count = static_cast<int>(std::min<size_t>(kMaxInputs, inputs.size() - first));
      for (int k = 0; k < group.count; ++k) group.data[k] = static_cast<const T*>(inputs[first + k].data_ptr());
      const bool last = first + kMaxInputs >= inputs.size();
      launch("add_n", out.device(), out.numel(), add_n_kernel<T>, static_cast<T*>(out.data_ptr()), partial, group,
             first == 0, last, out.numel());
    }
  });
}

}  // namespace tandem::kernels::cuda
