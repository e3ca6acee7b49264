#include "parallel/replicate.h"

#include "autograd/grad_mode.h"
#include "parallel/comm.h"
#include "parallel/functions.h"

namespace tandem::parallel {

namespace {

// Makes `replica` view the same memory as `original`, sharing its version counter, so that
// in-place writes through either are seen by the other and by autograd's checks.
void alias_into(const Tensor& replica, const Tensor& original) {
  TensorImpl& r = replica.impl();
  const TensorImpl& o = original.impl();
  r.storage = o.storage;
  r.sizes = o.sizes;
  r.strides = o.strides;
  r.offset = o.offset;
  r.dtype = o.dtype;
  r.version = o.version;
}

std::vector<Tensor> defined_only(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) {
    if (t.defined()) out.push_back(t);
  }
  return out;
}

}  // namespace

Replicator::Replicator(std::shared_ptr<nn::Module> module, std::vector<Device> devices)
    : module_(std::move(module)), devices_(std::move(devices)) {
  TD_CHECK(module_ != nullptr, "replicate: the module is null");
  TD_CHECK(!devices_.empty(), "replicate: expected at least one device");
  auto twice = repeated_device(devices_);
  TD_CHECK(!twice, "replicate: device ", *twice, " is listed twice");
}

bool Replicator::same_tree() const {
  // Held weakly: a module replaced since is gone, and a new one at its address is not taken for it.
  const std::vector<std::shared_ptr<nn::Module>> now = module_->modules();
  if (now.size() != tree_.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    if (tree_[i].lock() != now[i]) return false;
  }
  return true;
}

bool Replicator::up_to_date() const {
  if (replicas_.empty()) return false;
  std::vector<Tensor> tensors = module_->parameters();
  for (const Tensor& b : defined_only(module_->buffers())) tensors.push_back(b);
  if (tensors.size() != layout_.size() || !same_tree()) return false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].sizes() != layout_[i].first || tensors[i].dtype() != layout_[i].second ||
        tensors[i].device() != layout_devices_[i]) {
      return false;
    }
  }
  return true;
}

void Replicator::build() {
  replicas_.clear();
  layout_.clear();
  layout_devices_.clear();
  const std::vector<std::shared_ptr<nn::Module>> modules = module_->modules();
  tree_.assign(modules.begin(), modules.end());
  std::vector<Tensor> tensors = module_->parameters();
  for (const Tensor& b : defined_only(module_->buffers())) tensors.push_back(b);
  for (const Tensor& t : tensors) {
    layout_.emplace_back(t.sizes(), t.dtype());
    layout_devices_.push_back(t.device());
  }
  NoGradGuard no_grad;
  for (const Device& device : devices_) {
    std::shared_ptr<nn::Module> replica = module_->clone(device);
    for (const auto& m : replica->modules()) m->mark_as_replica();
    replicas_.push_back(std::move(replica));
  }
}

std::vector<std::shared_ptr<nn::Module>> Replicator::refresh(const std::vector<size_t>& which) {
  TD_CHECK(!which.empty(), "replicate: no replicas asked for");
  for (size_t r : which) {
    TD_CHECK(r < devices_.size(), "replicate: replica ", r, " asked of ", devices_.size(), " devices");
  }
  if (!up_to_date()) build();
  const std::vector<Tensor> params = module_->parameters();
  const std::vector<Tensor> buffers = defined_only(module_->buffers());
  std::vector<std::shared_ptr<nn::Module>> chosen;
  std::vector<std::vector<Tensor>> replica_tensors, copied_params, copied_buffers;
  {
    NoGradGuard no_grad;
    for (size_t r : which) {
      chosen.push_back(replicas_[r]);
      std::vector<Tensor> rp = replicas_[r]->parameters();
      std::vector<Tensor> rb = defined_only(replicas_[r]->buffers());
      TD_CHECK(rp.size() == params.size() && rb.size() == buffers.size(), "replicate: the replica on ", devices_[r],
               " has ", rp.size(), " parameters and ", rb.size(), " buffers but the module has ", params.size(),
               " and ", buffers.size(), "; a module's reset() must register the same tensors every time");
      // A replica on the device of the module's tensors uses them in place, no copy.
      const Device home = !params.empty() ? params[0].device() : !buffers.empty() ? buffers[0].device() : devices_[r];
      if (home == devices_[r]) {
        for (size_t i = 0; i < params.size(); ++i) alias_into(rp[i], params[i]);
        for (size_t i = 0; i < buffers.size(); ++i) alias_into(rb[i], buffers[i]);
      } else {
        copied_params.push_back(rp);
        copied_buffers.push_back(rb);
      }
      rp.insert(rp.end(), rb.begin(), rb.end());
      replica_tensors.push_back(std::move(rp));
    }
    if (!copied_params.empty()) comm::broadcast_coalesced_into(params, copied_params);
    if (!copied_buffers.empty()) comm::broadcast_coalesced_into(buffers, copied_buffers);
  }
  // Buffers that require grad (PyTorch allows them) reduce their gradients onto the module's as
  // parameters do; the rest, running statistics say, stay out of the graph.
  std::vector<Tensor> tensors = params;
  tensors.insert(tensors.end(), buffers.begin(), buffers.end());
  Broadcast::connect(tensors, replica_tensors);
  // Modes follow the module, module by module (modules() lists both trees in the same order).
  auto originals = module_->modules();
  for (const auto& replica : chosen) {
    auto copies = replica->modules();
    for (size_t m = 0; m < copies.size() && m < originals.size(); ++m) copies[m]->train(originals[m]->is_training());
  }
  return chosen;
}

std::vector<std::shared_ptr<nn::Module>> replicate(const std::shared_ptr<nn::Module>& module,
                                                   const std::vector<Device>& devices, bool detach) {
  Replicator replicator(module, devices);
  AutoGradMode mode(is_grad_enabled() && !detach);
  std::vector<size_t> all(devices.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return replicator.refresh(all);
}

}  // namespace tandem::parallel
