#include "nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::nn {

namespace {

std::string class_name(const Module& m) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(typeid(m).name(), nullptr, nullptr, &status),
                                                   std::free);
  std::string name = status == 0 ? demangled.get() : typeid(m).name();
  if (size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.ends_with("Impl")) name.resize(name.size() - 4);
  return name;
}

// Replaces the data under t's handle (device, dtype, storage) while the handle, its autograd
// flags and anyone holding it stay the same, as PyTorch's `param.data = ...`.
void set_data(const Tensor& t, const Tensor& data) {
  TensorImpl& impl = t.impl();
  impl.storage = data.storage();
  impl.sizes = data.sizes();
  impl.strides = data.strides();
  impl.offset = data.storage_offset();
  impl.dtype = data.dtype();
}

// t (and its gradient) moved in place to `device` (none: where it is) and, if t is floating, to
// `dtype`: integer buffers such as BatchNorm's count keep theirs, as in PyTorch.
void move_tensor(const Tensor& t, std::optional<Device> to_device, std::optional<DType> dtype) {
  if (!t.defined()) return;
  const DType target = dtype && is_floating(t.dtype()) ? *dtype : t.dtype();
  const Device device = to_device.value_or(t.device());
  if (t.device() == device && t.dtype() == target) return;
  NoGradGuard no_grad;
  set_data(t, t.detach().to(device, target));
  Tensor g = t.grad();
  if (g.defined()) set_data(g, g.detach().to(device, target));
}

std::string indent_after_first_line(const std::string& s, int n) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out += std::string(n, ' ');
  }
  return out;
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}

const std::string& Module::name() const {
  if (name_.empty()) name_ = class_name(*this);
  return name_;
}

Tensor& Module::register_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  TD_CHECK(!name.empty() && name.find('.') == std::string::npos, "register_parameter: invalid name '", name,
           "' (non-empty, no dots)");
  for (const auto& [n, t] : parameters_) TD_CHECK(n != name, "register_parameter: '", name, "' is already registered");
  if (tensor.defined()) {
    // A parameter is a leaf: a leaf is registered itself, so that two modules can share one
    // (tied weights, one gradient); a computed tensor becomes a new leaf on its data.
    if (!tensor.is_leaf()) tensor = tensor.detach();
    tensor.requires_grad_(requires_grad);
  }
  parameters_.emplace_back(name, tensor);
  return parameters_.back().second;
}

void Module::replace_parameter(const std::string& name, Tensor tensor, bool requires_grad) {
  for (auto& [n, t] : parameters_) {
    if (n != name) continue;
    if (tensor.defined()) {
      if (!tensor.is_leaf()) tensor = tensor.detach();
      tensor.requires_grad_(requires_grad);
    }
    t = tensor;
    return;
  }
  TD_FAIL("replace_parameter: no parameter '", name, "' is registered");
}

void Module::remove_parameter(const std::string& name) {
  const auto it = std::find_if(parameters_.begin(), parameters_.end(), [&](const auto& p) { return p.first == name; });
  TD_CHECK(it != parameters_.end(), "remove_parameter: no parameter '", name, "' is registered");
  parameters_.erase(it);
}

void Module::make_uninitialized(const Tensor& t) {
  if (t.defined()) set_data(t, empty({0}, TensorOptions(t.dtype()).device(t.device())));
}

void Module::adopt(Tensor& fresh, const Tensor& kept) {
  for (auto* registry : {&parameters_, &buffers_}) {
    for (auto& [name, t] : *registry) {
      if (!t.is_same(fresh)) continue;
      set_data(kept, fresh);
      t = kept;
      fresh = kept;
      return;
    }
  }
  TD_FAIL(this->name(), ": adopt: the tensor is not registered here");
}

Tensor& Module::register_buffer(const std::string& name, Tensor tensor, bool persistent) {
  TD_CHECK(!name.empty() && name.find('.') == std::string::npos, "register_buffer: invalid name '", name,
           "' (non-empty, no dots)");
  for (const auto& [n, t] : buffers_) TD_CHECK(n != name, "register_buffer: '", name, "' is already registered");
  // A leaf that requires grad is registered itself, as a parameter is, so that its gradient is the
  // caller's (PyTorch allows such buffers); any other tensor gets one of its own on the caller's
  // data, so that moving the module does not move the caller's tensor, and a computed one does not
  // keep its graph.
  const bool trainable = tensor.defined() && tensor.is_leaf() && tensor.requires_grad();
  buffers_.emplace_back(name, trainable || !tensor.defined() ? tensor : tensor.detach());
  if (!persistent) non_persistent_.push_back(name);
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  TD_CHECK(!name.empty() && name.find('.') == std::string::npos, "register_module: invalid name '", name,
           "' (non-empty, no dots)");
  TD_CHECK(module != nullptr, "register_module: the module '", name, "' is null");
  for (const auto& [n, m] : children_) TD_CHECK(n != name, "register_module: '", name, "' is already registered");
  children_.emplace_back(name, std::move(module));
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  TD_CHECK(module != nullptr, "replace_module: the module given for '", name, "' is null");
  for (auto& [n, m] : children_) {
    if (n == name) {
      m = std::move(module);
      return;
    }
  }
  TD_FAIL("replace_module: no submodule named '", name, "'");
}

void Module::collect(const std::string& prefix, bool recurse, bool params,
                     std::vector<std::pair<std::string, Tensor>>& out, bool persistent_only) const {
  for (const auto& [name, t] : params ? parameters_ : buffers_) {
    if (!t.defined()) continue;
    if (persistent_only && std::find(non_persistent_.begin(), non_persistent_.end(), name) != non_persistent_.end()) {
      continue;
    }
    out.emplace_back(prefix + name, t);
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", true, params, out, persistent_only);
}

void Module::collect_state(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  collect(prefix, false, true, out);
  collect(prefix, false, false, out, true);
  for (const auto& [name, child] : children_) child->collect_state(prefix + name + ".", out);
}

namespace {

// Each tensor once, under the first name it has: a module used in two places (weights tied)
// lists its tensors once, as PyTorch's named_parameters() does, so that an optimizer steps them
// once. state_dict() keeps every name.
std::vector<std::pair<std::string, Tensor>> first_names(std::vector<std::pair<std::string, Tensor>> items) {
  std::unordered_set<const TensorImpl*> seen;
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& item : items) {
    if (seen.insert(&item.second.impl()).second) out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, true, out);
  return first_names(std::move(out));
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", recurse, false, out);
  return first_names(std::move(out));
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, m] : named_children()) out.push_back(m);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::unordered_set<const Module*> seen;  // a child registered twice: once, under its first name
  for (const auto& child : children_) {
    if (seen.insert(child.second.get()).second) out.push_back(child);
  }
  return out;
}

void Module::collect_modules(const std::string& prefix,
                             std::vector<std::pair<std::string, std::shared_ptr<Module>>>& out,
                             std::unordered_set<const Module*>& seen) {
  if (!seen.insert(this).second) return;  // used in two places: listed once, where it comes first
  out.emplace_back(prefix, shared_from_this());
  for (const auto& [name, child] : children_) {
    child->collect_modules(prefix.empty() ? name : prefix + "." + name, out, seen);
  }
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules(const std::string& prefix) {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::unordered_set<const Module*> seen;
  collect_modules(prefix, out, seen);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules() {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::move_tensors(std::optional<Device> device, std::optional<DType> dtype) {
  for (auto& [name, t] : parameters_) move_tensor(t, device, dtype);
  for (auto& [name, t] : buffers_) move_tensor(t, device, dtype);
  for (auto& [name, child] : children_) child->move_tensors(device, dtype);
}

void Module::to(Device device, std::optional<DType> dtype) {
  TD_CHECK(!dtype || is_floating(*dtype), name(), ".to: only floating dtypes can be asked for (integer tensors ",
           "keep theirs), got ", *dtype);
  move_tensors(device, dtype);
}

void Module::to(DType dtype) {
  TD_CHECK(is_floating(dtype), name(), ".to: only floating dtypes can be asked for (integer tensors keep theirs), "
           "got ", dtype);
  move_tensors(std::nullopt, dtype);  // each tensor stays on its device
}

Module& Module::requires_grad_(bool requires_grad) {
  for (Tensor p : parameters()) p.requires_grad_(requires_grad);
  return *this;
}

void Module::zero_grad(bool set_to_none) {
  TD_CHECK(!is_replica_, "zero_grad: this ", name(), " is a DataParallel replica; its parameters are copies of the "
           "original module's, and backward reduces their gradients into the original's parameters, so call "
           "zero_grad() on the original module (or on the DataParallel)");
  for (Tensor& p : parameters()) {
    Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = Tensor();
    } else {
      NoGradGuard no_grad;
      g = g.detach();
      g.zero_();
    }
  }
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& m : modules()) fn(*m);  // each module once, a shared one too
}

std::shared_ptr<Module> Module::clone(std::optional<Device>) const {
  TD_FAIL("clone: ", name(), " does not derive from td::nn::Cloneable<", name(),
          "Impl>, which a module needs (with a reset() that registers everything) to be cloned");
}

Tensor Module::forward(const Tensor&) {
  TD_FAIL(name(), ": this module has no one-tensor forward(), so it cannot be called inside a Sequential");
}

void Module::clear_registrations() {
  parameters_.clear();
  buffers_.clear();
  non_persistent_.clear();
  children_.clear();
}

void Module::copy_values_from(const Module& other) {
  NoGradGuard no_grad;
  // The copy takes the original's values, dtypes and devices (reset() made default ones), each
  // tensor by its name: reset() registers in its own order, which need not be the original's now
  // (a ParameterDict key removed and inserted again).
  auto copy = [](const std::vector<std::pair<std::string, Tensor>>& to,
                 const std::vector<std::pair<std::string, Tensor>>& from, bool params) {
    TD_CHECK(to.size() == from.size(), "clone: the copy registered ", to.size(), params ? " parameters" : " buffers",
             " but the original has ", from.size(), "; reset() must register the same tensors as the constructor");
    std::unordered_map<std::string, const Tensor*> by_name;
    for (const auto& [name, t] : from) by_name.emplace(name, &t);
    for (const auto& [name, dst] : to) {
      auto it = by_name.find(name);
      TD_CHECK(it != by_name.end(), "clone: the copy registered ", params ? "a parameter" : "a buffer", " '", name,
               "' that the original does not have; reset() must register the same tensors as the constructor");
      const Tensor& src = *it->second;
      TD_CHECK(dst.sizes() == src.sizes(), "clone: ", name, " has shape ", shape_str(src.sizes()),
               " in the original but reset() made it ", shape_str(dst.sizes()));
      set_data(dst, src.detach().clone());
      Tensor(dst).requires_grad_(src.requires_grad());
    }
  };
  copy(named_parameters(), other.named_parameters(), true);
  copy(named_buffers(), other.named_buffers(), false);
}

void Module::copy_modes_and_settings_from(const Module& other) {
  training_ = other.training_;
  copy_settings_from(other);
  // Children by name: each takes the mode and settings of the original's child of that name.
  for (size_t i = 0; i < children_.size(); ++i) {
    if (const Module* theirs = counterpart_of_child(i, other)) children_[i].second->copy_modes_and_settings_from(*theirs);
  }
}

const Module* Module::counterpart_of_child(size_t i, const Module& other) const {
  // Where it usually is, at the same place, first: DataParallel matches every module every step.
  const std::string& name = children_[i].first;
  const auto& theirs = other.children_;
  if (i < theirs.size() && theirs[i].first == name) return theirs[i].second.get();
  for (const auto& [their_name, child] : theirs) {
    if (their_name == name) return child.get();
  }
  return nullptr;
}

void Module::materialize_lazy_like(const Module& original) {
  if (has_uninitialized_params()) materialize_like(original);
  for (size_t i = 0; i < children_.size(); ++i) {
    if (const Module* theirs = counterpart_of_child(i, original)) children_[i].second->materialize_lazy_like(*theirs);
  }
}

std::string python_bool(bool b) { return b ? "True" : "False"; }

std::string python_tuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, d.ddde[+-]x; Python writes them out in full where the
  // decimal point falls within 16 digits of them (-4 < point <= 16), else in exponent form.
  char buf[64];
  char* end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific).ptr;
  std::string text(buf, end);
  const size_t e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (char c : text.substr(0, e)) {
    if (c >= '0' && c <= '9') digits += c;
  }
  const int exponent = std::stoi(text.substr(e + 1));
  const int point = exponent + 1;
  std::string out = negative ? "-" : "";
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out.append("0.").append(-point, '0').append(digits);
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out.append(digits).append(point - digits.size(), '0').append(".0");
    } else {
      out.append(digits, 0, point).append(".").append(digits, point);
    }
    return out;
  }
  out.append(digits, 0, 1);
  if (digits.size() > 1) out.append(".").append(digits, 1);
  const int shown = std::abs(exponent);
  out.append(exponent < 0 ? "e-" : "e+").append(shown < 10 ? "0" : "").append(std::to_string(shown));
  return out;
}

StateDict Module::state_dict() const {
  StateDict out;
  std::vector<std::pair<std::string, Tensor>> items;
  collect_state("", items);
  for (auto& [name, t] : items) out.insert(name, t.detach());
  return out;
}

std::vector<std::pair<std::string, Module*>> Module::lazy_layers() {
  std::vector<std::pair<std::string, Module*>> out;
  std::unordered_set<const Module*> on_path;
  collect_lazy("", out, on_path);
  return out;
}

void Module::collect_lazy(const std::string& prefix, std::vector<std::pair<std::string, Module*>>& out,
                          std::unordered_set<const Module*>& on_path) {
  if (!on_path.insert(this).second) return;  // a module registered inside itself
  if (has_uninitialized_params()) out.emplace_back(prefix, this);
  for (auto& [name, child] : children_) child->collect_lazy(prefix + name + ".", out, on_path);
  on_path.erase(this);
}

namespace {

// The checkpoint's tensors of a lazy layer registered under several names, all under the name
// that sizes it (`prefix`): one that the checkpoint holds under another of its names too, so that
// the layer draws no initial values where the checkpoint gives every one under some name.
StateDict held_under(const std::string& prefix, const Module* layer,
                     const std::vector<std::pair<std::string, Module*>>& lazy, const StateDict& state) {
  StateDict held;
  auto add_under = [&](const std::string& name) {
    for (const auto& [key, t] : state) {
      if (!key.starts_with(name)) continue;
      const std::string renamed = prefix + key.substr(name.size());
      if (!held.contains(renamed)) held.insert(renamed, t);
    }
  };
  add_under(prefix);
  for (const auto& [name, module] : lazy) {
    if (module == layer && name != prefix) add_under(name);
  }
  return held;
}

}  // namespace

Module::LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  // Lazy layers the checkpoint gives sizes to are checked against the shapes a materialized copy
  // of each has, and materialized themselves only once every check has passed. A layer
  // registered under several names takes its sizes under the first that the checkpoint has.
  const std::vector<std::pair<std::string, Module*>> lazy = lazy_layers();
  std::vector<std::pair<std::string, Module*>> sized;  // each once, under the name that sizes it
  std::unordered_map<const TensorImpl*, Shape> planned;
  auto is_sized = [&](const Module* module) {
    return std::any_of(sized.begin(), sized.end(), [&](const auto& entry) { return entry.second == module; });
  };
  for (const auto& [prefix, module] : lazy) {
    if (is_sized(module)) continue;
    std::shared_ptr<Module> copy = module->clone();
    try {
      DiscardRandomDraws discard;
      if (!copy->materialize_from(state, prefix)) continue;
    } catch (const Error& e) {
      const std::string layer = prefix.empty() ? module->name()
                                               : "'" + prefix.substr(0, prefix.size() - 1) + "' (" + module->name() + ")";
      detail::throw_error(
          detail::str_cat("load_state_dict: ", layer, " cannot take the sizes of the checkpoint's tensors: ", e.what()));
    }
    std::vector<std::pair<std::string, Tensor>> mine, materialized;
    module->collect_state("", mine);
    copy->collect_state("", materialized);
    for (const auto& [name, t] : mine) {
      for (const auto& [copy_name, copy_t] : materialized) {
        if (copy_name == name) planned[&t.impl()] = copy_t.sizes();
      }
    }
    sized.emplace_back(prefix, module);
  }
  std::unordered_set<const TensorImpl*> unsized;  // the tensors of lazy layers the checkpoint gives no size
  for (const auto& [prefix, module] : lazy) {
    if (is_sized(module)) continue;
    std::vector<std::pair<std::string, Tensor>> mine;
    module->collect_state("", mine);
    for (const auto& [name, t] : mine) unsized.insert(&t.impl());
  }

  std::vector<std::pair<std::string, Tensor>> expected;
  collect_state("", expected);
  LoadResult result;
  std::vector<std::string> mismatches;
  for (const auto& [name, t] : expected) {
    const Tensor* v = state.find(name);
    const auto plan = planned.find(&t.impl());
    const Shape& sizes = plan != planned.end() ? plan->second : t.sizes();
    if (!v) {
      result.missing_keys.push_back(name);
    } else if (v->sizes() != sizes) {
      mismatches.push_back(name + " (checkpoint " + shape_str(v->sizes()) + ", model " + shape_str(sizes) +
                           (unsized.contains(&t.impl()) ? ": a lazy layer the checkpoint gives no size to; run a forward first"
                                                        : "") +
                           ")");
    }
  }
  for (const auto& [name, t] : state) {
    bool known = std::any_of(expected.begin(), expected.end(), [&](const auto& e) { return e.first == name; });
    if (!known) result.unexpected_keys.push_back(name);
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  TD_CHECK(mismatches.empty(), "load_state_dict: shape mismatch for ", join(mismatches));
  TD_CHECK(!strict || (result.missing_keys.empty() && result.unexpected_keys.empty()),
           "load_state_dict: ", result.missing_keys.empty() ? "" : "missing keys: " + join(result.missing_keys),
           !result.missing_keys.empty() && !result.unexpected_keys.empty() ? "; " : "",
           result.unexpected_keys.empty() ? "" : "unexpected keys: " + join(result.unexpected_keys),
           " (pass strict=false to load the matching keys only)");
  for (const auto& [prefix, module] : sized) module->materialize_from(held_under(prefix, module, lazy, state), prefix);
  NoGradGuard no_grad;
  for (auto& [name, t] : expected) {
    if (const Tensor* v = state.find(name)) {
      Tensor dst = t;
      dst.copy_(*v);
    }
  }
  return result;
}

void Module::print(std::ostream& out, int) const {
  std::vector<std::string> lines;
  std::string extra = extra_repr();
  std::vector<std::string> extra_lines;
  if (!extra.empty()) {
    std::istringstream in(extra);
    for (std::string line; std::getline(in, line);) extra_lines.push_back(line);
  }
  lines = extra_lines;
  for (const auto& [name, child] : children_) lines.push_back("(" + name + "): " + indent_after_first_line(child->str(), 2));
  out << name() << "(";
  if (!lines.empty()) {
    if (extra_lines.size() == 1 && children_.empty()) {
      out << extra_lines[0];
    } else {
      out << "\n";
      for (const std::string& line : lines) out << "  " << line << "\n";
    }
  }
  out << ")";
}

std::string Module::str() const {
  std::ostringstream out;
  print(out, 0);
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Module& module) { return out << module.str(); }

}  // namespace tandem::nn
