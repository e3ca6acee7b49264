// replicate: copies of a module on several devices whose parameters are autograd-connected
// broadcasts of the original's, so that backward through any replica reduces its gradients onto
// the original parameters. Buffers are broadcast too; those that require grad are connected as
// parameters are. The replica on the module's own device, wherever it is in the list, holds
// aliases of the module's tensors: BatchNorm running statistics it updates are the original's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"

namespace tandem::parallel {

// Replicas kept from step to step: the module tree is cloned once per device; refresh() only
// moves the current values in and reconnects autograd (PyTorch and LibTorch rebuild them on every
// forward). Rebuilt when the module's tensors change name, order, shape, dtype or device, when a
// submodule is replaced (Module::replace_module), and when sharing is turned on or off (below).
// Modes and settings (Module::copy_settings_from) follow the module at every refresh. A value
// the replica already holds is not copied again: the graph of an earlier forward may still hold
// the replica's tensor for its backward (two forwards, then one backward), and a copy would count
// as an in-place write to it.
class Replicator {
 public:
  // share_on_cpus: replicas on CPU devices other than the module's view its parameters' memory
  // instead of copies (CPU devices share one memory; forward and backward only read parameters).
  // Their buffers are still copies. DataParallel shares; the free replicate() copies, since its
  // replicas are the caller's to change.
  Replicator(std::shared_ptr<nn::Module> module, std::vector<Device> devices, bool share_on_cpus = false);

  // Brings the replicas on devices()[i], i in `which`, up to date with the module: values,
  // training modes, settings, and (with grad mode on) one broadcast node joining their parameters to the
  // module's. Returns them, in the order of `which`.
  std::vector<std::shared_ptr<nn::Module>> refresh(const std::vector<size_t>& which);
  const std::vector<std::shared_ptr<nn::Module>>& replicas() const { return replicas_; }
  // Replica r's buffers in the order of the module's buffers() (found by name), as last refreshed.
  std::vector<Tensor> buffers_of(size_t replica) const;
  const std::vector<Device>& devices() const { return devices_; }

 private:
  using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
  // Whether the replicas were built from the module's tensors as they are now (parameters, then
  // buffers): the same names in the same order, kinds, shapes, dtypes and devices, the same
  // modules, and the same choice of sharing.
  bool up_to_date(const NamedTensors& tensors, size_t num_params, bool share_on_cpus) const;
  void build(const NamedTensors& tensors, size_t num_params, bool share_on_cpus);
  bool same_tree() const;  // the module and its descendants are those of the last build
  // Fails, naming two of them, unless the module's parameters and buffers share one device.
  static void check_one_device(const NamedTensors& tensors);

  // What a replica's tensor was last copied from, and its version just after the copy.
  struct CopyStamp {
    std::weak_ptr<const VersionCounter> source_counter;
    const void* source_data = nullptr;
    Shape source_strides;
    uint32_t source_version = 0, replica_version = 0;
    bool holds(const Tensor& source, const Tensor& replica) const;
  };
  // Copies the module's tensors (parameters then buffers) into the replicas `which` that do not
  // hold their current values; `replica_tensors[k]` are replica which[k]'s, in the same order.
  void copy_stale(const std::vector<Tensor>& sources, const std::vector<size_t>& which,
                  const std::vector<std::vector<Tensor>>& replica_tensors, size_t num_params);

  // A module tensor as the replicas were built from it.
  struct Slot {
    std::string name;
    bool parameter;
    Shape sizes;
    DType dtype;
    Device device;
  };

  std::shared_ptr<nn::Module> module_;
  std::vector<Device> devices_;
  bool share_on_cpus_;
  bool built_sharing_ = false;  // whether the replicas were built to share the module's parameters
  std::vector<std::shared_ptr<nn::Module>> replicas_;
  std::vector<Slot> layout_;  // the module's parameters then buffers, when built
  // [replica][slot]: each replica's tensors, found by name: a clone registers them in reset()'s
  // order, which need not be the module's (a ParameterDict key removed and inserted again).
  std::vector<std::vector<Tensor>> replica_tensors_;
  std::vector<std::weak_ptr<nn::Module>> tree_;  // the module and its descendants, when built
  std::vector<std::vector<CopyStamp>> stamps_;   // [replica][tensor], parameters then buffers
};

// Fresh replicas of `module`, one per device (PyTorch's replicate). detach: the replicas'
// parameters are plain copies, not connected to the module's.
std::vector<std::shared_ptr<nn::Module>> replicate(const std::shared_ptr<nn::Module>& module,
                                                   const std::vector<Device>& devices, bool detach = false);

}  // namespace tandem::parallel
