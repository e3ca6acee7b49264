// Module: the base of every layer and model, as in PyTorch/LibTorch. A module owns named
// parameters (tensors to train), buffers (state such as running means) and submodules, in
// registration order; everything that walks a model (parameters(), to(), state_dict(),
// printing) walks that tree. Layers are used through holders: `td::nn::Linear fc(784, 128);`
// then `fc->weight`, `fc(x)`.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"
#include "nn/state_dict.h"

namespace tandem::nn {

class Module : public std::enable_shared_from_this<Module> {
 public:
  // `name` is the type name printing shows ("Linear"); empty: the C++ class name without "Impl".
  explicit Module(std::string name = "");
  virtual ~Module() = default;
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;

  const std::string& name() const;

  // ---- registration (in the constructor, or reset()) ----
  // A leaf tensor is registered as it is, shared with whoever holds it (so another module's
  // parameter registered here is the same parameter: tied weights), its requires_grad set; a
  // computed tensor is detached into a new leaf on the same data.
  Tensor& register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Buffers are saved in state_dict() unless `persistent` is false. A leaf that requires grad is
  // registered itself (shared, as a parameter is); any other tensor is detached into a tensor of
  // the module's own on the same data.
  Tensor& register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  template <typename Holder>
    requires requires(Holder h) { h.ptr(); }
  Holder register_module(const std::string& name, Holder holder) {
    add_child(name, holder.ptr());
    return holder;
  }
  // Replaces a registered submodule (e.g. in a Sequential) keeping its position. Containers
  // that keep their own list of submodules (Sequential, ModuleList) update it too.
  virtual void replace_module(const std::string& name, std::shared_ptr<Module> module);

  // ---- the tree ----
  // Each tensor and module once, under the first name it has, as in PyTorch: a module used in
  // two places (tied weights) is listed once, so an optimizer steps its parameters once.
  // state_dict() keeps every name.
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;  // "0.weight"
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> modules();  // this module first, then every descendant
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules(const std::string& prefix = "");

  // ---- modes, devices, gradients ----
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves (or converts) every parameter and buffer in place: the tensors keep their identity,
  // so optimizers built on parameters() keep working. The dtype must be floating, and changes
  // only floating tensors (BatchNorm's int64 count stays).
  void to(Device device, std::optional<DType> dtype = std::nullopt);
  void to(DType dtype);  // floating tensors to dtype, each on the device it is on
  void zero_grad(bool set_to_none = true);
  // Every parameter's requires_grad (freezing a part of a model: model->encoder->requires_grad_(false)).
  Module& requires_grad_(bool requires_grad = true);
  void apply(const std::function<void(Module&)>& fn);
  // A deep copy: new parameters, buffers and submodules with the same values (see Cloneable).
  virtual std::shared_ptr<Module> clone(std::optional<Device> device = std::nullopt) const;
  // Takes this module's settings from `other`, a module of the same kind and sizes (the original
  // of a clone or of a replica), not its tensors or submodules: what its settings() ties (a
  // Dropout's p, a loss's reduction), or without settings() its `options`. So a clone, and a
  // DataParallel replica at every step, follow a setting changed since the module was made.
  // Cloneable modules do this (a module of your own lists its own:
  // `auto settings() { return std::tie(scale, mode); }`); other modules copy nothing.
  virtual void copy_settings_from(const Module& /*other*/) {}
  // This module's and each descendant's train/eval mode and settings from the module of the same
  // name in `other` (a clone's or a replica's original), children matched by name.
  void copy_modes_and_settings_from(const Module& other);

  // The one-tensor forward that Sequential calls; layers define their own forward.
  virtual Tensor forward(const Tensor& input);

  // A lazy layer before its first forward (nn/lazy.h): parameters without their sizes yet.
  virtual bool has_uninitialized_params() const { return false; }
  // What load_state_dict calls on such a layer: where the checkpoint's tensors under `prefix`
  // ("encoder.0.") give its input size, it materializes as a first input of that size would and
  // returns true; otherwise it changes nothing and returns false.
  virtual bool materialize_from(const StateDict& /*state*/, const std::string& /*prefix*/) { return false; }

  // ---- replicas (td::parallel::replicate marks every module of a replica) ----
  // A replica's parameters are broadcasts of the original module's; their gradients flow back
  // into the original's. So a replica has no gradients of its own to zero or to step.
  void mark_as_replica() { is_replica_ = true; }
  bool is_replica() const { return is_replica_; }

  // ---- checkpoints ----
  // Parameters and persistent buffers under dotted names, as PyTorch's state_dict().
  StateDict state_dict() const;
  struct LoadResult {
    std::vector<std::string> missing_keys, unexpected_keys;
  };
  // Copies values by name (converting dtype/device to the module's). strict: missing or
  // unexpected keys are an error listing them; shape mismatches are always an error. Either
  // error changes nothing. Lazy layers not run yet take their sizes from the checkpoint's
  // weights (a norm's from any of its tensors), as PyTorch's do, and their in_features,
  // in_channels or num_features too, which PyTorch's leave at 0; a layer the checkpoint holds
  // every tensor of draws nothing from the random stream.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

  // ---- printing, as PyTorch prints a module tree ----
  // The text inside the parentheses, e.g. "in_features=784, out_features=128, bias=True".
  virtual std::string extra_repr() const { return ""; }
  std::string str() const;

 protected:
  // Called by Cloneable::clone on the copy: registers fresh parameters, buffers and submodules.
  virtual void reset() {}
  void clear_registrations();
  // Each lazy layer here whose counterpart in `original` (this clone's, matched by name) has
  // materialized, materialized with its sizes: a parent's reset() makes its lazy children afresh.
  void materialize_lazy_like(const Module& original);
  // A lazy layer's part of that: takes the input size of `original`, the same layer of the
  // original, where that one has it. Other modules do nothing.
  virtual void materialize_like(const Module& /*original*/) {}
  void copy_values_from(const Module& other);
  // Every registered child in order, a child registered twice twice (children() lists it once):
  // what a container runs and indexes.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& registered_children() const { return children_; }
  // This module's own parameters in order of registration (ParameterList and ParameterDict index
  // them), and a registered one replaced in its place as register_parameter would take it.
  const std::vector<std::pair<std::string, Tensor>>& registered_parameters() const { return parameters_; }
  void replace_parameter(const std::string& name, Tensor tensor, bool requires_grad);
  void remove_parameter(const std::string& name);
  // For lazy modules, whose parameters take their sizes from the first input. make_uninitialized
  // gives t (registered here) no elements, [0], in its dtype and on its device. adopt moves the
  // data of `fresh`, a tensor registered here, into `kept`, which takes its place in the registry
  // and in `fresh` itself, keeping its own requires_grad: materialized parameters keep the handles
  // handed out before (to an optimizer, say), frozen or not, as PyTorch's materialize() does.
  static void make_uninitialized(const Tensor& t);
  void adopt(Tensor& fresh, const Tensor& kept);
  // The type name printing shows from now on (a lazy module, materialized, prints as its eager one).
  void rename(std::string name) { name_ = std::move(name); }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  // other's child of the name of this module's i-th, looked for at the same place first, or null.
  const Module* counterpart_of_child(size_t i, const Module& other) const;
  void move_tensors(std::optional<Device> device, std::optional<DType> dtype);  // none: as they are
  // Every lazy layer not materialized yet under the prefix of its state_dict keys, under each
  // one where it is registered more than once.
  std::vector<std::pair<std::string, Module*>> lazy_layers();
  void collect_lazy(const std::string& prefix, std::vector<std::pair<std::string, Module*>>& out,
                    std::unordered_set<const Module*>& on_path);
  void collect_modules(const std::string& prefix,
                       std::vector<std::pair<std::string, std::shared_ptr<Module>>>& out,
                       std::unordered_set<const Module*>& seen);
  void collect(const std::string& prefix, bool recurse, bool params, std::vector<std::pair<std::string, Tensor>>& out,
               bool persistent_only = false) const;
  // What state_dict() holds, in PyTorch's order: each module's parameters, then its persistent
  // buffers, then its children's, depth first.
  void collect_state(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  void print(std::ostream& out, int indent) const;

  mutable std::string name_;
  bool training_ = true;
  bool is_replica_ = false;
  std::vector<std::pair<std::string, Tensor>> parameters_, buffers_;
  std::vector<std::string> non_persistent_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& out, const Module& module);

// Values as Python spells them in a module's extra_repr(): True/False, a float as repr() prints
// it, the shortest digits that read back (1e-05, 0.1, 0.3333333333333333, 1000000.0), and a
// tuple of ints ((3, 4), (10,)).
std::string python_bool(bool b);
std::string python_float(double v);
std::string python_tuple(const std::vector<int64_t>& v);

// What makes a module clonable: `struct MyNetImpl : td::nn::Cloneable<MyNetImpl>` with a reset()
// that registers everything (the constructor calls reset()). clone() copies the object, lets
// reset() make fresh tensors and submodules (a lazy one with the sizes its original has taken),
// then copies the values and each module's train/eval mode and settings (copy_settings_from)
// over: a submodule reset() made with the options it was first given takes those its original
// has now. Base is the class Derived extends
// (a module class of its own, or Module), so that a clone is a Derived too.
template <typename Derived, typename Base = Module>
class Cloneable : public Base {
 public:
  using Base::Base;
  std::shared_ptr<Module> clone(std::optional<Device> device = std::nullopt) const override {
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->clear_registrations();
    {
      // reset() initialises parameters that copy_values_from overwrites: its draws are discarded,
      // so that a clone (and DataParallel's first step, which clones the replicas) leaves the
      // random streams where they were.
      DiscardRandomDraws discard;
      copy->reset();
      copy->materialize_lazy_like(*this);
    }
    copy->copy_values_from(*this);
    copy->copy_modes_and_settings_from(*this);
    if (device) copy->to(*device);
    return copy;
  }
  void copy_settings_from(const Module& other) override {
    if (&other == this || typeid(other) != typeid(Derived)) return;
    auto& self = static_cast<Derived&>(*this);
    const auto& from = static_cast<const Derived&>(other);
    if constexpr (requires { self.settings(); }) {
      // A const settings() ties const members, which nothing can assign: it would copy nothing.
      static_assert(requires { self.settings() = self.settings(); },
                    "settings() must tie members a clone can assign: declare it without const, "
                    "auto settings() { return std::tie(a, b); }");
      if constexpr (requires { self.settings() = from.settings(); }) {
        self.settings() = from.settings();  // a const overload as well reads the original
      } else {
        // One non-const declaration serves both: it only ties, so `from` is only read through it.
        self.settings() = const_cast<Derived&>(from).settings();
      }
    } else if constexpr (requires { self.options = from.options; }) {
      self.options = from.options;
    }
  }
};

// A shared handle to a module implementation, as LibTorch's ModuleHolder: `Linear` holds a
// `LinearImpl`; `->` reaches it and `()` calls its forward.
template <typename Impl>
class ModuleHolder {
 public:
  ModuleHolder(std::nullptr_t) {}
  template <typename... Args>
    requires std::is_constructible_v<Impl, Args...>
  explicit ModuleHolder(Args&&... args) : impl_(std::make_shared<Impl>(std::forward<Args>(args)...)) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    TD_CHECK(impl_ != nullptr, "module holder is empty (constructed with nullptr)");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  template <typename... Args>
  auto operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

template <typename Impl>
std::ostream& operator<<(std::ostream& out, const ModuleHolder<Impl>& holder) {
  return out << *holder;
}

}  // namespace tandem::nn
