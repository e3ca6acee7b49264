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
  non_differentiable_.insert(non_differentiable_.end(), outputs.begin(), outputs.end());
}

bool AutogradContext::is_non_differentiable(const Tensor& t) const {
  for (const Tensor& n : non_differentiable_) {
    if (n.defined() && n.is_same(t)) return true;
  }
  return false;
}

bool AutogradContext::needs_input_grad(size_t index) const {
  TD_CHECK(index < needs_input_grad_.size(), name_, ": needs_input_grad(", index, ") of a forward with ",
           needs_input_grad_.size(), " arguments");
  return needs_input_grad_[index];
}

void AutogradContext::finish(const std::vector<Tensor>& outputs, const std::vector<bool>& recorded) {
  for (const Tensor& t : to_save_) {
    uint32_t output_nr = 0;
    bool is_output = false;
    for (size_t j = 0; j < outputs.size() && !is_output; ++j) {
      if (!recorded[j]) continue;
      if (t.defined() && t.is_same(outputs[j])) {
        is_output = true;
      } else {
        ++output_nr;
      }
    }
    // An output is kept detached and attached again when unpacked (no cycle through the node).
    saved_.emplace_back(t, is_output, is_output ? output_nr : 0);
  }
  to_save_.clear();
  finished_ = true;
}

namespace detail {

std::string function_name(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                   std::free);
  std::string name = status == 0 ? demangled.get() : type.name();
  if (const size_t colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  return name;
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
    // An input returned unchanged: recording on it would rewrite the input's own history.
    for (const Tensor& in : state.inputs) {
      if (out.is_same(in)) {
        out = out.detach();
        break;
      }
    }
    shapes[i] = {true, out.sizes(), out.options()};
    recorded[i] = is_floating(out.dtype()) && !ctx->is_non_differentiable(out);
    if (recorded[i]) differentiable.push_back(&out);
  }
  std::vector<const Tensor*> inputs;
  std::vector<Shape> input_sizes;
  for (const Tensor& t : state.inputs) {
    inputs.push_back(&t);
    input_sizes.push_back(t.sizes());
  }
  if (!differentiable.empty()) {
    record(name.c_str(), inputs, differentiable,
           [ctx, recorded, shapes, input_sizes, positions = state.positions, arity = state.arity,
            backward](const std::vector<Tensor>& grads) {
             const std::string& name = ctx->name_;
             std::vector<Tensor> all(shapes.size());
             for (size_t i = 0, j = 0; i < shapes.size(); ++i) {
               if (recorded[i]) all[i] = grads[j++];
               if (!all[i].defined() && shapes[i].defined && ctx->materialize_grads_) {
                 all[i] = zeros(shapes[i].sizes, shapes[i].options);
               }
             }
             const std::vector<Tensor> result = backward(ctx.get(), all);
             TD_CHECK(result.size() == arity, name, ": backward returned ", result.size(), " gradients, but forward ",
                      "takes ", arity, " arguments (return one per argument, undefined where there is none)");
             std::vector<Tensor> per_input;
             for (size_t a = 0, k = 0; a < arity; ++a) {
               const bool is_input = k < positions.size() && positions[k] == a;
               if (!is_input) {
                 TD_CHECK(!result[a].defined(), name, ": backward returned a gradient for argument ", a,
                          ", which is not a tensor");
                 continue;
               }
               Tensor g = result[a];
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
               per_input.push_back(g);
               ++k;
             }
             return per_input;
           });
  }
  ctx->finish(outputs, recorded);
}

}  // namespace detail

}  // namespace tandem::autograd
