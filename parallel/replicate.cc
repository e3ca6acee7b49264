#include "parallel/replicate.h"

#include <algorithm>
#include <map>

#include "autograd/grad_mode.h"
#include "nn/layers.h"
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

// Makes `replica`, a tensor of the CPU device `device`, view `original`'s memory on another CPU
// device: CPU devices share one memory, so a replica's parameters need no copy. The storage is a
// new handle over the same bytes, labelled with `device` and keeping the original's alive.
void alias_across_cpus(const Tensor& replica, const Tensor& original, Device device) {
  TensorImpl& r = replica.impl();
  const TensorImpl& o = original.impl();
  if (!r.storage.defined() || r.storage.data() != o.storage.data() || r.storage.nbytes() != o.storage.nbytes()) {
    r.storage = Storage::wrap(o.storage.data(), o.storage.nbytes(), device, [keep = o.storage](void*) {});
  }
  r.sizes = o.sizes;
  r.strides = o.strides;
  r.offset = o.offset;
  r.dtype = o.dtype;
  r.version = o.version;
}

// Whether a module of the tree writes its parameters in forward: an embedding with max_norm
// renormalizes the rows it looks up, in place. Replicas on other CPU devices then get copies, as
// on GPUs, and each renormalizes its own (sharing, they would write the same rows at once).
bool writes_parameters_in_forward(nn::Module& module) {
  for (const auto& m : module.modules()) {
    const auto* embedding = dynamic_cast<const nn::EmbeddingImpl*>(m.get());
    const auto* bag = dynamic_cast<const nn::EmbeddingBagImpl*>(m.get());
    if ((embedding && embedding->options.max_norm_) || (bag && bag->options.max_norm_)) return true;
  }
  return false;
}

// A module's parameters, then its buffers (an unset one is not listed).
struct NamedTensorList {
  std::vector<std::pair<std::string, Tensor>> tensors;
  size_t num_params;
};
NamedTensorList parameters_then_buffers(const nn::Module& module) {
  NamedTensorList out{module.named_parameters(), 0};
  out.num_params = out.tensors.size();
  for (auto& named : module.named_buffers()) out.tensors.push_back(std::move(named));
  return out;
}

}  // namespace

Replicator::Replicator(std::shared_ptr<nn::Module> module, std::vector<Device> devices, bool share_on_cpus)
    : module_(std::move(module)), devices_(std::move(devices)), share_on_cpus_(share_on_cpus) {
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

bool Replicator::up_to_date(const NamedTensors& tensors, size_t num_params, bool share_on_cpus) const {
  if (replicas_.empty() || share_on_cpus != built_sharing_ || tensors.size() != layout_.size() || !same_tree()) {
    return false;
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    const Slot& slot = layout_[i];
    if (name != slot.name || (i < num_params) != slot.parameter || t.sizes() != slot.sizes ||
        t.dtype() != slot.dtype || t.device() != slot.device) {
      return false;
    }
  }
  return true;
}

void Replicator::build(const NamedTensors& tensors, size_t num_params, bool share_on_cpus) {
  for (const auto& [name, m] : module_->named_modules()) {
    TD_CHECK(!m->has_uninitialized_params(), "replicate: ", name.empty() ? std::string("the module") : "'" + name + "'",
             " (", m->name(), ") has uninitialized parameters: run one forward on the module before replicating it ",
             "(each replica would take sizes and values of its own)");
  }
  check_one_device(tensors);
  // Cloned first and kept only once every clone is made: a clone that throws leaves the last
  // complete set (or none) in place, never a part of one taken for all.
  std::vector<std::shared_ptr<nn::Module>> replicas;
  std::vector<std::vector<Tensor>> replica_tensors;
  {
    NoGradGuard no_grad;
    for (const Device& device : devices_) {
      std::shared_ptr<nn::Module> replica = module_->clone(device);
      for (const auto& m : replica->modules()) m->mark_as_replica();
      const auto [own, own_params] = parameters_then_buffers(*replica);
      TD_CHECK(own_params == num_params && own.size() == tensors.size(), "replicate: the replica on ", device, " has ",
               own_params, " parameters and ", own.size() - own_params, " buffers but the module has ", num_params,
               " and ", tensors.size() - num_params, "; a module's reset() must register the same tensors every time");
      std::map<std::string, size_t> position;
      for (size_t i = 0; i < own.size(); ++i) position.emplace(own[i].first, i);
      std::vector<Tensor> in_module_order;
      for (size_t i = 0; i < tensors.size(); ++i) {
        auto it = position.find(tensors[i].first);
        TD_CHECK(it != position.end() && (it->second < num_params) == (i < num_params), "replicate: the replica on ",
                 device, " has no ", i < num_params ? "parameter" : "buffer", " '", tensors[i].first,
                 "'; a module's reset() must register the same tensors under the same names every time");
        in_module_order.push_back(own[it->second].second);
      }
      replicas.push_back(std::move(replica));
      replica_tensors.push_back(std::move(in_module_order));
    }
  }
  replicas_ = std::move(replicas);
  replica_tensors_ = std::move(replica_tensors);
  built_sharing_ = share_on_cpus;
  const std::vector<std::shared_ptr<nn::Module>> modules = module_->modules();
  tree_.assign(modules.begin(), modules.end());
  layout_.clear();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    layout_.push_back({name, i < num_params, t.sizes(), t.dtype(), t.device()});
  }
  stamps_.assign(devices_.size(), {});
}

std::vector<Tensor> Replicator::buffers_of(size_t replica) const {
  TD_CHECK(replica < replica_tensors_.size(), "replicate: replica ", replica, " asked of ", replica_tensors_.size(),
           " built");
  std::vector<Tensor> out;
  for (size_t i = 0; i < layout_.size(); ++i) {
    if (!layout_[i].parameter) out.push_back(replica_tensors_[replica][i]);
  }
  return out;
}

void Replicator::check_one_device(const NamedTensors& tensors) {
  for (const auto& [name, t] : tensors) {
    TD_CHECK(t.device() == tensors[0].second.device(), "replicate: the module's tensors must be on one device, but '",
             tensors[0].first, "' is on ", tensors[0].second.device(), " and '", name, "' on ", t.device(),
             "; move the module to one device first: model->to(td::Device(\"", tensors[0].second.device().str(),
             "\"))");
  }
}

bool Replicator::CopyStamp::holds(const Tensor& source, const Tensor& replica) const {
  return source_counter.lock() == source.impl().version && source_data == source.data_ptr() &&
         source_strides == source.strides() && source_version == source.version() &&
         replica_version == replica.version();
}

void Replicator::copy_stale(const std::vector<Tensor>& sources, const std::vector<size_t>& which,
                            const std::vector<std::vector<Tensor>>& replica_tensors, size_t num_params) {
  // Replicas that lack the same tensors (normally all of them, or none) get them in one coalesced
  // broadcast of parameters and one of buffers.
  std::map<std::vector<size_t>, std::vector<size_t>> replicas_by_stale;  // tensor indices -> positions in which
  for (size_t k = 0; k < which.size(); ++k) {
    std::vector<CopyStamp>& stamps = stamps_[which[k]];
    stamps.resize(sources.size());
    std::vector<size_t> stale;
    for (size_t i = 0; i < sources.size(); ++i) {
      if (!stamps[i].holds(sources[i], replica_tensors[k][i])) stale.push_back(i);
    }
    if (!stale.empty()) replicas_by_stale[stale].push_back(k);
  }
  for (const auto& [stale, replicas] : replicas_by_stale) {
    for (const bool params : {true, false}) {
      std::vector<Tensor> from;
      std::vector<std::vector<Tensor>> into(replicas.size());
      for (size_t i : stale) {
        if ((i < num_params) != params) continue;
        from.push_back(sources[i]);
        for (size_t j = 0; j < replicas.size(); ++j) into[j].push_back(replica_tensors[replicas[j]][i]);
      }
      if (!from.empty()) comm::broadcast_coalesced_into(from, into);
    }
    for (size_t k : replicas) {
      for (size_t i : stale) {
        const Tensor &source = sources[i], &replica = replica_tensors[k][i];
        stamps_[which[k]][i] = {source.impl().version, source.data_ptr(), source.strides(), source.version(),
                                replica.version()};
      }
    }
  }
}

std::vector<std::shared_ptr<nn::Module>> Replicator::refresh(const std::vector<size_t>& which) {
  TD_CHECK(!which.empty(), "replicate: no replicas asked for");
  for (size_t r : which) {
    TD_CHECK(r < devices_.size(), "replicate: replica ", r, " asked of ", devices_.size(), " devices");
  }
  const auto [named, num_params] = parameters_then_buffers(*module_);
  // Sharing is decided at every step: max_norm may be set on an embedding after the replicas were
  // built, and replicas that viewed the module's memory must then be built again with their own.
  // It matters only where a replica is on a CPU device other than the module's.
  const Device home = !named.empty() ? named[0].second.device() : devices_[0];
  const bool other_cpus = home.is_cpu() && std::any_of(devices_.begin(), devices_.end(), [&](const Device& d) {
                            return d.is_cpu() && d != home;
                          });
  const bool share_on_cpus = share_on_cpus_ && other_cpus && !writes_parameters_in_forward(*module_);
  if (!up_to_date(named, num_params, share_on_cpus)) build(named, num_params, share_on_cpus);
  std::vector<Tensor> tensors;
  for (const auto& [name, t] : named) tensors.push_back(t);
  const std::vector<Tensor> buffers(tensors.begin() + static_cast<std::ptrdiff_t>(num_params), tensors.end());
  std::vector<std::shared_ptr<nn::Module>> chosen;
  std::vector<std::vector<Tensor>> replica_tensors, copied_tensors, copied_buffers;
  std::vector<size_t> copied, buffers_copied;
  {
    NoGradGuard no_grad;
    for (size_t r : which) {
      chosen.push_back(replicas_[r]);
      const std::vector<Tensor>& rt = replica_tensors_[r];
      if (tensors.empty() || home == devices_[r]) {
        // A replica on the device of the module's tensors uses them in place, no copy.
        for (size_t i = 0; i < tensors.size(); ++i) alias_into(rt[i], tensors[i]);
      } else if (share_on_cpus && devices_[r].is_cpu()) {
        // Another CPU device: the same memory, so the parameters, which forward and backward only
        // read, are shared too. The buffers are copied: a replica's BatchNorm writes its own.
        for (size_t i = 0; i < num_params; ++i) alias_across_cpus(rt[i], tensors[i], devices_[r]);
        buffers_copied.push_back(r);
        copied_buffers.emplace_back(rt.begin() + static_cast<std::ptrdiff_t>(num_params), rt.end());
      } else {
        copied.push_back(r);
        copied_tensors.push_back(rt);
      }
      replica_tensors.push_back(rt);
    }
    copy_stale(tensors, copied, copied_tensors, num_params);
    copy_stale(buffers, buffers_copied, copied_buffers, 0);
  }
  // Buffers that require grad (PyTorch allows them) reduce their gradients onto the module's as
  // parameters do; the rest, running statistics say, stay out of the graph.
  Broadcast::connect(tensors, replica_tensors);
  // Modes and settings (a Dropout's p changed since the build, say) follow the module, module by
  // module, each submodule matched by name.
  for (const auto& replica : chosen) replica->copy_modes_and_settings_from(*module_);
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
