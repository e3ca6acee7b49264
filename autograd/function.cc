#include "autograd/function.h"

#include <cxxabi.h>

#include <cstdlib>

#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::autograd {

void AutogradContext::save_for_backward(std::vector<Tensor> tensors) {
  TD_CHECK(!finished_, name_, ": save_for_backward is for forward, not after it");
  to_save_ = std::move(tensors);
}

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  if (!finished_) return to_save_;  // inside forward
  std::vector<Tensor> tensors;
  for (const SavedTensor& s : saved_) tensors.push_back(s.unpack(name_.c_str()));
  return tensors;
}

void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& outputs) {
  // Identities only, as LibTorch's raw pointers: the list must not keep the outputs alive.
  non_differentiable_.clear();
  for (const Tensor& t : outputs) {
    if (t.defined()) non_differentiable_.push_back(t.impl_ptr().get());
  }
}

bool AutogradContext::is_non_differentiable(const Tensor& t) const {
  for (const TensorImpl* n : non_differentiable_) {
    if (n == t.impl_ptr().get()) return true;
  }
  return false;
}

bool AutogradContext::needs_input_grad(size_t index) const {
  TD_CHECK(index < needs_input_grad_.size(), name_, ": needs_input_grad(", index, ") of a forward with ",
           needs_input_grad_.size(), " tensor arguments");
  return needs_input_grad_[index];
}

void AutogradContext::finish(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : to_save_) {
    const AutogradMeta* m = meta(t);
    bool is_output = false;
    for (const Tensor& out : outputs) is_output |= t.defined() && out.defined() && t.is_same(out);
    is_output &= m != nullptr && m->grad_fn != nullptr;
    // An output is kept detached and attached again when unpacked, at the output number its
    // recording left (no cycle through the node; a saved view of an output still makes one, as
    // in PyTorch).
    saved_.emplace_back(t, is_output, is_output ? m->output_nr : 0);
  }
  to_save_.clear();
  non_differentiable_.clear();
  finished_ = true;
}

namespace detail {

std::string function_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                   std::free);
  const std::string name = status == 0 ? demangled.get() : type.name();
  // Without its namespaces: the last "::" outside template arguments (Wrap<ns::Foo> stays whole).
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (depth == 0 && name[i] == ':' && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}

void check_unmodified(const std::string& name, const ApplyState& state) {
  for (size_t k = 0; k < state.inputs.size(); ++k) {
    const Tensor& t = state.inputs[k];
    TD_CHECK(!t.requires_grad() || t.version() == state.versions[k], name, ": forward wrote its argument ",
             state.positions[k], " (a tensor that requires grad) in place, which custom functions do not support ",
             "(LibTorch's mark_dirty): compute a new tensor instead");
  }
}

bool any_requires_grad(const ApplyState& state) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : state.inputs) {
    if (t.requires_grad()) return true;
  }
  return false;
}

void record_function(const std::shared_ptr<AutogradContext>& ctx, const ApplyState& state,
                     std::vector<Tensor>& outputs, BackwardCall backward) {
  const std::string& name = ctx->name_;
  struct OutputShape {
    bool defined = false;
    Shape sizes;
    TensorOptions options;
  };
  std::vector<bool> recorded(outputs.size(), false);
  std::vector<OutputShape> shapes(outputs.size());
  std::vector<Tensor*> differentiable;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    if (!out.defined()) continue;
    shapes[i] = {true, out.sizes(), out.options()};
    recorded[i] = is_floating(out.dtype()) && !ctx->is_non_differentiable(out);
    // An input returned unchanged: recording on it would rewrite the input's own history, and
    // not recording would hand back the input (a leaf that requires grad, say). It becomes a view
    // of itself made with grad mode off, which in-place writes refuse (LibTorch's view_as).
    for (const Tensor& in : state.inputs) {
      if (out.is_same(in)) {
        AutoGradMode off(false);
        out = out.view(out.sizes());
        break;
      }
    }
    if (recorded[i]) differentiable.push_back(&out);
  }
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : state.inputs) inputs.push_back(&t);
  if (!differentiable.empty()) {
    // The inputs' metadata only: holding the inputs themselves would keep them alive with the graph.
    std::vector<Shape> input_sizes;
    std::vector<std::pair<Device, DType>> input_places;
    for (const Tensor& t : state.inputs) {
      input_sizes.push_back(t.sizes());
      input_places.emplace_back(t.device(), t.dtype());
    }
    record(name.c_str(), inputs, differentiable,
           [ctx, recorded, shapes, input_sizes, input_places, positions = state.positions,
            tensor_typed = state.tensor_typed, arity = state.arity, backward](const std::vector<Tensor>& grads) {
             const std::string& name = ctx->name_;
             std::vector<Tensor> all(shapes.size());
             for (size_t i = 0, j = 0; i < shapes.size(); ++i) {
               if (recorded[i]) all[i] = grads[j++];
               if (!all[i].defined() && shapes[i].defined && ctx->materialize_grads_) {
                 all[i] = zeros(shapes[i].sizes, shapes[i].options);
               }
             }
             std::vector<Tensor> result = backward(ctx.get(), all);
             // Extra entries at the end are allowed where they are undefined, as LibTorch's.
             while (result.size() > arity && !result.back().defined()) result.pop_back();
             TD_CHECK(result.size() == arity, name, ": backward returned ", result.size(), " gradients, but forward ",
                      "takes ", arity, " arguments (return one per argument, undefined where there is none)");
             std::vector<Tensor> per_input;
             for (size_t a = 0, k = 0, tensor_index = 0; a < arity; ++a) {
               const bool is_input = k < positions.size() && positions[k] == a;
               if (!is_input) {
                 // An undefined Tensor argument's gradient is dropped; any other argument has none.
                 TD_CHECK(tensor_typed[a] || !result[a].defined(), name, ": backward returned a gradient for ",
                          "argument ", a, ", which is not a tensor");
                 tensor_index += tensor_typed[a] ? 1 : 0;
                 continue;
               }
               Tensor g = result[a];
               if (!ctx->needs_input_grad_[tensor_index++]) g = Tensor();  // computed for nothing: dropped
               const Shape& want = input_sizes[k];
               if (g.defined() && g.sizes() != want) {
                 // A gradient of a shape the input broadcasts to is summed down to it, as PyTorch's.
                 bool expands = g.dim() >= static_cast<int64_t>(want.size());
                 for (size_t d = 1; expands && d <= want.size(); ++d) {
                   const int64_t w = want[want.size() - d], have = g.size(-static_cast<int64_t>(d));
                   expands = w == have || w == 1;
                 }
                 TD_CHECK(expands, name, ": backward returned a gradient of shape ", shape_str(g.sizes()),
                          " for argument ", a, ", of shape ", shape_str(want));
                 g = sum_to(g, want);
               }
               const auto& [device, dtype] = input_places[k];
               if (g.defined() && (g.device() != device || g.dtype() != dtype)) g = g.to(device, dtype);
               per_input.push_back(g);
               ++k;
             }
             return per_input;
           });
  }
  ctx->finish(outputs);
}

}  // namespace detail

}  // namespace tandem::autograd
