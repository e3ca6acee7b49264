#include "parallel/functions.h"

#include <map>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/factory.h"
#include "parallel/comm.h"

namespace tandem::parallel {

Tensor alias_of(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>(t.impl());
  impl->autograd = nullptr;
  return Tensor(std::move(impl));
}

std::vector<std::vector<Tensor>> Broadcast::apply(const std::vector<Tensor>& tensors,
                                                  const std::vector<Device>& devices) {
  std::vector<std::vector<Tensor>> out;
  {
    NoGradGuard no_grad;
    out = comm::broadcast_coalesced(tensors, devices);
  }
  for (auto& per_device : out) {
    for (size_t i = 0; i < per_device.size(); ++i) {
      if (per_device[i].is_same(tensors[i])) per_device[i] = alias_of(tensors[i]);
    }
  }
  connect(tensors, out);
  return out;
}

void Broadcast::connect(const std::vector<Tensor>& tensors, const std::vector<std::vector<Tensor>>& outputs) {
  // Every list is checked before any output loses its autograd state.
  for (size_t d = 0; d < outputs.size(); ++d) {
    const auto& per_device = outputs[d];
    TD_CHECK(per_device.size() == tensors.size(), "Broadcast: ", per_device.size(), " outputs on a device for ",
             tensors.size(), " inputs");
    for (size_t i = 0; i < per_device.size(); ++i) {
      const Tensor& t = per_device[i];
      TD_CHECK(tensors[i].defined() && t.defined(), "Broadcast: input ", i, " or its output in list ", d,
               " is undefined");
      TD_CHECK(t.sizes() == tensors[i].sizes() && t.dtype() == tensors[i].dtype(), "Broadcast: output ", i,
               " in list ", d, " is ", t.dtype(), shape_str(t.sizes()), " but its input is ", tensors[i].dtype(),
               shape_str(tensors[i].sizes()));
      TD_CHECK(t.device() == per_device[0].device(), "Broadcast: the outputs in list ", d,
               " are on several devices (", per_device[0].device(), ", ", t.device(), ")");
    }
  }
  for (const auto& per_device : outputs) {
    for (const Tensor& t : per_device) t.impl().autograd = nullptr;
  }
  std::vector<size_t> differentiable;  // the inputs whose copies carry gradients
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (is_grad_enabled() && tensors[i].requires_grad()) differentiable.push_back(i);
  }
  if (differentiable.empty()) return;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> recorded;  // [d][j] for the differentiable inputs j
  std::vector<Device> sources;
  for (size_t i : differentiable) {
    inputs.push_back(&tensors[i]);
    sources.push_back(tensors[i].device());
  }
  std::vector<std::vector<Tensor>> handles = outputs;  // record() needs mutable handles; they share impls
  for (auto& per_device : handles) {
    for (size_t i : differentiable) recorded.push_back(&per_device[i]);
  }
  const size_t n = differentiable.size(), num_devices = outputs.size();
  std::vector<Device> devices;
  for (const auto& per_device : outputs) devices.push_back(per_device[differentiable[0]].device());
  autograd::record("BroadcastBackward", inputs, recorded, [n, num_devices, sources, devices](const std::vector<Tensor>& g) {
    // Each input's gradient is the sum of its copies' gradients, on the input's device: one
    // coalesced reduction per source device (normally one) for all inputs that got gradients.
    std::vector<Tensor> result(n);
    std::map<Device, std::vector<size_t>> by_source;
    for (size_t j = 0; j < n; ++j) {
      for (size_t d = 0; d < num_devices; ++d) {
        if (g[d * n + j].defined()) {
          by_source[sources[j]].push_back(j);
          break;
        }
      }
    }
    for (const auto& [source, inputs] : by_source) {
      std::vector<std::vector<Tensor>> per_device(num_devices);
      for (size_t j : inputs) {
        Tensor like;
        for (size_t d = 0; d < num_devices && !like.defined(); ++d) like = g[d * n + j];
        for (size_t d = 0; d < num_devices; ++d) {
          const Tensor& gd = g[d * n + j];
          per_device[d].push_back(gd.defined() ? gd : zeros(like.sizes(), TensorOptions(like.dtype()).device(devices[d])));
        }
      }
      std::vector<Tensor> sums = ReduceAddCoalesced::apply(per_device, source);
      for (size_t k = 0; k < inputs.size(); ++k) result[inputs[k]] = sums[k];
    }
    return result;
  });
}

std::vector<Tensor> ReduceAddCoalesced::apply(const std::vector<std::vector<Tensor>>& per_device, Device destination) {
  for (size_t d = 0; d < per_device.size(); ++d) {
    for (const Tensor& t : per_device[d]) {
      TD_CHECK(t.defined() && t.device() == per_device[d][0].device(), "ReduceAddCoalesced: list ", d,
               " must hold tensors of one device, but has ", per_device[d][0].device(), " and ",
               t.defined() ? t.device().str() : std::string("an undefined tensor"));
    }
  }
  std::vector<Tensor> out;
  {
    NoGradGuard no_grad;
    out = comm::reduce_add_coalesced(per_device, destination);
  }
  std::vector<Tensor> all;
  for (const auto& list : per_device) all.insert(all.end(), list.begin(), list.end());
  if (!autograd::needs_grad(all)) return out;
  std::vector<const Tensor*> inputs;
  for (const auto& list : per_device) {
    for (const Tensor& t : list) inputs.push_back(&t);
  }
  std::vector<Tensor*> outputs;
  for (Tensor& t : out) outputs.push_back(&t);
  std::vector<Device> devices;
  for (const auto& list : per_device) devices.push_back(list.empty() ? destination : list[0].device());
  const size_t count = out.size();
  autograd::record("ReduceAddCoalescedBackward", inputs, outputs, [devices, count](const std::vector<Tensor>& g) {
    // Every summand's gradient is the sum's gradient: a broadcast back to the summands' devices.
    std::vector<size_t> defined;
    std::vector<Tensor> grads;
    for (size_t i = 0; i < count; ++i) {
      if (!g[i].defined()) continue;
      defined.push_back(i);
      grads.push_back(g[i]);
    }
    std::vector<Tensor> result(devices.size() * count);
    if (grads.empty()) return result;
    std::vector<std::vector<Tensor>> copies = Broadcast::apply(grads, devices);
    for (size_t d = 0; d < devices.size(); ++d) {
      for (size_t k = 0; k < defined.size(); ++k) result[d * count + defined[k]] = copies[d][k];
    }
    return result;
  });
  return out;
}

std::vector<Tensor> Scatter::apply(const Tensor& input, const std::vector<Device>& devices,
                                   const std::optional<std::vector<int64_t>>& chunk_sizes, int64_t dim) {
  std::vector<Tensor> out;
  {
    NoGradGuard no_grad;
    out = comm::scatter(input, devices, chunk_sizes, dim);
  }
  for (Tensor& t : out) {
    if (t.is_alias_of(input)) t = alias_of(t);  // a view on the input's device: its own autograd state
  }
  if (!autograd::needs_grad({&input})) return out;
  std::vector<Tensor*> outputs;
  for (Tensor& t : out) outputs.push_back(&t);
  const Device source = input.device();
  const int64_t d = wrap_dim(dim, input.dim(), "scatter");
  Shape shape = input.sizes();
  std::vector<int64_t> sizes;
  for (const Tensor& t : out) sizes.push_back(t.sizes()[d]);
  const DType dtype = input.dtype();
  autograd::record("ScatterBackward", {&input}, outputs, [source, d, shape, sizes, dtype](const std::vector<Tensor>& g) {
    std::vector<Tensor> parts;
    for (size_t i = 0; i < g.size(); ++i) {
      if (g[i].defined()) {
        parts.push_back(g[i]);
      } else {
        Shape part = shape;
        part[d] = sizes[i];
        parts.push_back(zeros(part, TensorOptions(dtype).device(source)));
      }
    }
    return std::vector<Tensor>{Gather::apply(parts, source, d)};
  });
  return out;
}

Tensor Gather::apply(const std::vector<Tensor>& inputs, Device destination, int64_t dim) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = comm::gather(inputs, dim, destination);
  }
  if (!autograd::needs_grad(inputs)) return out;
  std::vector<const Tensor*> pointers;
  std::vector<Device> devices;
  std::vector<int64_t> sizes;
  const int64_t d = wrap_dim(dim, inputs[0].dim(), "gather");
  for (const Tensor& t : inputs) {
    pointers.push_back(&t);
    devices.push_back(t.device());
    sizes.push_back(t.sizes()[d]);
  }
  autograd::record("GatherBackward", pointers, {&out}, [devices, sizes, d](const std::vector<Tensor>& g) {
    if (!repeated_device(devices)) return Scatter::apply(g[0], devices, sizes, d);
    // Several inputs from one device: the same split, as differentiable slices and copies.
    std::vector<Tensor> result;
    int64_t start = 0;
    for (size_t i = 0; i < devices.size(); ++i) {
      Tensor part = narrow(g[0], d, start, sizes[i]);
      result.push_back(part.device() == devices[i] ? part : to(part, devices[i], part.dtype()));
      start += sizes[i];
    }
    return result;
  });
  return out;
}

}  // namespace tandem::parallel
