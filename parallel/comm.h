// The communication primitives of data parallelism, over one tensor per device (no autograd:
// parallel/functions.h wraps them for gradients). Their meaning is torch.cuda.comm's and NCCL's:
//   broadcast          one tensor -> a copy on every device (the source device gets the tensor itself)
//   scatter            one tensor -> consecutive chunks along dim, chunk i on device i
//   gather             a tensor per device -> their concatenation along dim on one device
//   reduce_add         a tensor per device -> their sum on one device
//   all_reduce         every device's tensor becomes the sum of all (in place)
//   all_gather         every device gets the concatenation of all
//   reduce_scatter     device i gets chunk i of the sum
// and the _coalesced forms, which move many tensors per call. Where GPUs take part, those move
// tensors of one dtype through flat buffers of up to buffer_size bytes: one copy per buffer and
// device instead of one per tensor. On CPU devices nothing is staged: each destination device's
// worker thread does its own copies and adds, straight from the sources, so there buffer_size
// changes nothing. Every call adds to comm_stats(): bytes that crossed from one device to
// another, and time: the host's, or where GPUs take part the longest of it and of each GPU's time
// on the call's work.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/device_timer.h"
#include "core/tensor.h"

namespace tandem::parallel::comm {

inline constexpr int64_t kDefaultBufferSize = 10 * 1024 * 1024;

// Collectives over GPUs run as copies and add kernels ordered by events (TANDEM_COMM=kernels, the
// default), or through NCCL (TANDEM_COMM=nccl) where the devices are distinct GPUs and the tensors
// suit it; anything NCCL cannot serve falls back to the kernels. Whether TANDEM_COMM asks for NCCL,
// read once; a value other than kernels or nccl is an error.
bool nccl_requested();

std::vector<Tensor> broadcast(const Tensor& tensor, const std::vector<Device>& devices);
// Copies `tensor` into each of `outputs` (same shape and dtype, any devices); an output that is
// `tensor` itself is left alone.
void broadcast_into(const Tensor& tensor, const std::vector<Tensor>& outputs);
// Copies tensors[i] into outputs[d][i] for every device d (outputs[d] all on one device, one
// list per device): how DataParallel refreshes replicas it keeps from step to step.
void broadcast_coalesced_into(const std::vector<Tensor>& tensors, const std::vector<std::vector<Tensor>>& outputs,
                              int64_t buffer_size = kDefaultBufferSize);
// result[d][i]: tensors[i] on devices[d]. All tensors must be on one device.
std::vector<std::vector<Tensor>> broadcast_coalesced(const std::vector<Tensor>& tensors,
                                                     const std::vector<Device>& devices,
                                                     int64_t buffer_size = kDefaultBufferSize);

// chunk_sizes: rows of each chunk along dim (summing to the size of dim); none: as even as
// possible, sizes differing by at most one, larger ones first (10 rows over 3 devices: 4, 3, 3).
// A chunk that is already on its device is a view of `tensor`, not a copy.
std::vector<Tensor> scatter(const Tensor& tensor, const std::vector<Device>& devices,
                            const std::optional<std::vector<int64_t>>& chunk_sizes = std::nullopt, int64_t dim = 0);
std::vector<int64_t> even_chunk_sizes(int64_t size, int64_t chunks);

// Shapes must agree except along dim; dtypes must agree.
Tensor gather(const std::vector<Tensor>& tensors, int64_t dim, Device destination);

// Shapes and dtypes must agree. The destination defaults to tensors[0]'s device.
Tensor reduce_add(const std::vector<Tensor>& tensors, std::optional<Device> destination = std::nullopt);
// per_device[d][i]: tensor i on device d; result[i]: the sum over d, on destination.
std::vector<Tensor> reduce_add_coalesced(const std::vector<std::vector<Tensor>>& per_device,
                                         std::optional<Device> destination = std::nullopt,
                                         int64_t buffer_size = kDefaultBufferSize);

void all_reduce(const std::vector<Tensor>& tensors);  // in place: each becomes the sum
std::vector<Tensor> all_gather(const std::vector<Tensor>& tensors, int64_t dim = 0);
// The sum's size along dim must divide evenly by the number of tensors.
std::vector<Tensor> reduce_scatter(const std::vector<Tensor>& tensors, int64_t dim = 0);

namespace detail {

// The buffered forms of the coalesced primitives, which the primitives use where GPUs take part;
// they run on any devices, so CPU devices prove them too. The tensors of each list are on one
// device, the arguments already checked. reduce_add_coalesced_buffered's sums are fresh tensors
// (views of one summed buffer where NCCL adds, TANDEM_COMM=nccl).
void broadcast_coalesced_into_buffered(const std::vector<Tensor>& tensors,
                                       const std::vector<std::vector<Tensor>>& outputs, int64_t buffer_size);
std::vector<Tensor> reduce_add_coalesced_buffered(const std::vector<std::vector<Tensor>>& per_device,
                                                  Device destination, int64_t buffer_size);
// The buffers: indices of tensors of one dtype, in order, up to buffer_size bytes each; a larger
// tensor has one of its own.
std::vector<std::vector<size_t>> buffer_groups(const std::vector<Tensor>& tensors, int64_t buffer_size);

}  // namespace detail

struct PrimitiveStats {
  int64_t calls = 0;
  int64_t nccl_calls = 0;  // of those, the calls in which NCCL ran at least one collective (TANDEM_COMM=nccl)
  int64_t bytes = 0;       // crossed from one device to another
  double seconds = 0;
};
// Totals per primitive name ("broadcast_coalesced", ...) since the last reset. Reading them waits
// for the GPUs' share of the calls.
std::map<std::string, PrimitiveStats> comm_stats();
void reset_comm_stats();

// A point to count from, taken without waiting for any device (DataParallel marks each step).
struct StatsMark {
  std::map<std::string, PrimitiveStats> counts;  // calls and bytes before the mark
  DeviceSeconds<std::string>::Mark seconds;
};
StatsMark stats_mark();
// The totals of the calls made after `mark`.
std::map<std::string, PrimitiveStats> comm_stats_since(const StatsMark& mark);

}  // namespace tandem::parallel::comm
