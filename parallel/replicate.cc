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

std::vector<Tensor> defined_only(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) {
    if (t.defined()) out.push_back(t);
  }
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
  for (const auto& [name, m] : module_->named_modules()) {
    TD_CHECK(!m->has_uninitialized_params(), "replicate: ", name.empty() ? std::string("the module") : "'" + name + "'",
             " (", m->name(), ") has uninitialized parameters: run one forward on the module before replicating it ",
             "(each replica would take sizes and values of its own)");
  }
  std::vector<Tensor> tensors = module_->parameters();
  for (const Tensor& b : defined_only(module_->buffers())) tensors.push_back(b);
  check_one_device(tensors);
  // Cloned first and kept only once every clone is made: a clone that throws leaves the last
  // complete set (or none) in place, never a part of one taken for all.
  std::vector<std::shared_ptr<nn::Module>> replicas;
  {
    NoGradGuard no_grad;
    for (const Device& device : devices_) {
      std::shared_ptr<nn::Module> replica = module_->clone(device);
      for (const auto& m : replica->modules()) m->mark_as_replica();
      replicas.push_back(std::move(replica));
    }
  }
  replicas_ = std::move(replicas);
  const std::vector<std::shared_ptr<nn::Module>> modules = module_->modules();
  tree_.assign(modules.begin(), modules.end());
  layout_.clear();
  layout_devices_.clear();
  for (const Tensor& t : tensors) {
    layout_.emplace_back(t.sizes(), t.dtype());
    layout_devices_.push_back(t.device());
  }
  stamps_.assign(devices_.size(), {});
}

void Replicator::check_one_device(const std::vector<Tensor>& tensors) const {
  if (std::all_of(tensors.begin(), tensors.end(), [&](const Tensor& t) { return t.device() == tensors[0].device(); })) {
    return;  // the common case, without names
  }
  std::vector<std::pair<std::string, Tensor>> named = module_->named_parameters();
  for (const auto& [name, t] : module_->named_buffers()) {
    if (t.defined()) named.emplace_back(name, t);
  }
  for (const auto& [name, t] : named) {
    TD_CHECK(t.device() == named[0].second.device(), "replicate: the module's tensors must be on one device, but '",
             named[0].first, "' is on ", named[0].second.device(), " and '", name, "' on ", t.device(),
             "; move the module to one device first: model->to(td::Device(\"", named[0].second.device().str(), "\"))");
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
  if (!up_to_date()) build();
  const std::vector<Tensor> params = module_->parameters();
  const std::vector<Tensor> buffers = defined_only(module_->buffers());
  std::vector<Tensor> tensors = params;
  tensors.insert(tensors.end(), buffers.begin(), buffers.end());
  const bool share_on_cpus = share_on_cpus_ && !writes_parameters_in_forward(*module_);
  std::vector<std::shared_ptr<nn::Module>> chosen;
  std::vector<std::vector<Tensor>> replica_tensors, copied_tensors, copied_buffers;
  std::vector<size_t> copied, buffers_copied;
  {
    NoGradGuard no_grad;
    for (size_t r : which) {
      chosen.push_back(replicas_[r]);
      std::vector<Tensor> rt = replicas_[r]->parameters();
      const size_t num_params = rt.size();
      for (const Tensor& b : defined_only(replicas_[r]->buffers())) rt.push_back(b);
      TD_CHECK(num_params == params.size() && rt.size() == tensors.size(), "replicate: the replica on ", devices_[r],
               " has ", num_params, " parameters and ", rt.size() - num_params, " buffers but the module has ",
               params.size(), " and ", buffers.size(), "; a module's reset() must register the same tensors every time");
      const Device home = !tensors.empty() ? tensors[0].device() : devices_[r];
      if (home == devices_[r]) {
        // A replica on the device of the module's tensors uses them in place, no copy.
        for (size_t i = 0; i < tensors.size(); ++i) alias_into(rt[i], tensors[i]);
      } else if (share_on_cpus && home.is_cpu() && devices_[r].is_cpu()) {
        // Another CPU device: the same memory, so the parameters, which forward and backward only
        // read, are shared too. The buffers are copied: a replica's BatchNorm writes its own.
        for (size_t i = 0; i < num_params; ++i) alias_across_cpus(rt[i], tensors[i], devices_[r]);
        buffers_copied.push_back(r);
        copied_buffers.emplace_back(rt.begin() + static_cast<std::ptrdiff_t>(num_params), rt.end());
      } else {
        copied.push_back(r);
        copied_tensors.push_back(rt);
      }
      replica_tensors.push_back(std::move(rt));
    }
    copy_stale(tensors, copied, copied_tensors, params.size());
    copy_stale(buffers, buffers_copied, copied_buffers, 0);
  }
  // Buffers that require grad (PyTorch allows them) reduce their gradients onto the module's as
  // parameters do; the rest, running statistics say, stay out of the graph.
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
