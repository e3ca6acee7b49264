// NCCL collectives for tensors on distinct GPUs of one process: one communicator per list of
// GPUs (ncclCommInitAll, made on first use and kept), calls grouped so that one thread drives all
// devices, each on a stream of its GPU's own, ordered after and before the device's current stream. comm.h uses them when TANDEM_COMM=nccl and the
// devices allow it; logical devices that share a GPU cannot join one communicator.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace tandem::parallel::nccl {

// Whether this build has NCCL.
bool built_with_nccl();
// Whether NCCL can run a collective over these tensors: NCCL in the build, every tensor contiguous
// and on a CUDA device, the devices' GPUs distinct, a dtype NCCL adds (not bool).
bool can_serve(const std::vector<Tensor>& tensors);

// tensors[i] += every other tensor, on every device (sum in place).
void all_reduce(const std::vector<Tensor>& tensors);
// outputs[i] = outputs[root] for every i.
void broadcast(const std::vector<Tensor>& outputs, size_t root);
// outputs[root] = the sum of inputs (inputs[root] may be outputs[root]); one input per device, in
// the devices' order.
void reduce(const std::vector<Tensor>& inputs, const Tensor& output, size_t root);

}  // namespace tandem::parallel::nccl
