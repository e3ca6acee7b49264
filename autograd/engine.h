// The backward engine: runs the graph from some outputs back to the leaves (or to chosen inputs).
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "core/device_timer.h"
#include "core/tensor.h"

namespace tandem::autograd {

// Accumulates into the .grad() of every leaf that `outputs` depend on. Each grad_outputs entry is
// the gradient of the matching output (undefined: ones, allowed for one-element outputs).
// retain_graph keeps the saved tensors for another backward (default: create_graph);
// create_graph records the backward computation itself, for higher-order gradients.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// The gradients of `outputs` with respect to `inputs`, returned instead of accumulated (as
// torch.autograd.grad). An input the outputs do not depend on gets an undefined tensor if
// allow_unused, else an error.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                         bool create_graph = false, bool allow_unused = false);

// Seconds the engine spends running backward nodes, per device (the device of the gradients a
// node receives): DataParallel reads these to time each replica's backward. A CPU device's are
// its nodes' times; a GPU's, for each backward, the span from when the device reached its first
// node's work to when it finished its last's. Taking a mark never waits; reading the seconds
// since one waits for all the GPU work timed so far.
using BackwardMark = DeviceSeconds<Device>::Mark;
BackwardMark backward_mark();
std::map<Device, double> backward_seconds_since(const BackwardMark& mark);

}  // namespace tandem::autograd
