// The collectives as differentiable functions, each the other's backward (as PyTorch's
// torch.nn.parallel._functions): a broadcast's gradient is the sum of its copies' gradients,
// a scatter's is the gather of its chunks' gradients, and the reverse. Backwards are written
// with these same functions, so they record when create_graph asks for it: double backward
// works through them.
#pragma once

#include <optional>
#include <vector>

#include "core/tensor.h"

namespace tandem::parallel {

struct Broadcast {
  // result[d][i]: tensors[i] on devices[d]; on the tensors' own device, an alias of the tensor.
  static std::vector<std::vector<Tensor>> apply(const std::vector<Tensor>& tensors, const std::vector<Device>& devices);
  // Makes outputs[d][i] (which already hold tensors[i]'s values) the results of one broadcast
  // node: their gradients are reduce-added onto tensors[i]. Their old autograd state is dropped.
  // Inputs that do not require grad (or grad mode off) leave their outputs plain tensors.
  static void connect(const std::vector<Tensor>& tensors, const std::vector<std::vector<Tensor>>& outputs);
};

struct ReduceAddCoalesced {
  // result[i]: the sum over d of per_device[d][i], on destination.
  static std::vector<Tensor> apply(const std::vector<std::vector<Tensor>>& per_device, Device destination);
};

struct Scatter {
  static std::vector<Tensor> apply(const Tensor& input, const std::vector<Device>& devices,
                                   const std::optional<std::vector<int64_t>>& chunk_sizes = std::nullopt,
                                   int64_t dim = 0);
};

struct Gather {
  static Tensor apply(const std::vector<Tensor>& inputs, Device destination, int64_t dim = 0);
};

// A tensor with the same data, dtype, layout and version counter as t, and no autograd state.
Tensor alias_of(const Tensor& t);

}  // namespace tandem::parallel
