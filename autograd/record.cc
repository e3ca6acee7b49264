#include "autograd/record.h"

#include <optional>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/thread_pool.h"

namespace tandem::autograd {

std::vector<Tensor> FunctionNode::apply(const std::vector<Tensor>& grad_outputs) {
  TD_CHECK(backward != nullptr, op_name, ": trying to backward through the graph a second time (or to use saved "
           "tensors after they were freed); pass retain_graph=true to the first backward to keep them");
  CurrentNodeGuard current(shared_from_this());  // saved outputs unpack with this node as grad_fn
  return backward(grad_outputs);
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t && t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

std::shared_ptr<FunctionNode> record(const char* name, const std::vector<const Tensor*>& inputs,
                                     const std::vector<Tensor*>& outputs, BackwardFn backward) {
  auto node = std::make_shared<FunctionNode>();
  node->op_name = name;
  node->backward = std::move(backward);
  node->sequence_nr = next_sequence_nr();
  node->threads = num_threads();
  node->num_outputs = static_cast<uint32_t>(outputs.size());
  for (const Tensor* in : inputs) {
    node->next_edges.push_back(in && in->defined() && in->requires_grad() ? gradient_edge(*in) : Edge{});
  }
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    // An integer or bool result has no gradient: it stays out of the graph, as in PyTorch
    // (x.to(kInt64) of an x that requires grad, or copy_ into an integer tensor).
    if (!is_floating(outputs[i]->dtype())) continue;
    AutogradMeta& m = ensure_meta(*outputs[i]);
    move_retained(m, *outputs[i], *node, i);
    m.grad_fn = node;
    m.output_nr = i;
    m.requires_grad = true;
  }
  return node;
}

void check_inplace(const Tensor& self, const char* op, bool recording) {
  if (!is_grad_enabled()) return;
  AutogradMeta* m = meta(self);
  if (!m) return;
  TD_CHECK(!(m->no_grad_view_base.defined() && (recording || m->no_grad_view_base.requires_grad())), op,
           ": a view made under NoGradGuard is being written in place with grad mode on, and its base (or what is "
           "written) requires grad; whether the write belongs in the graph is ambiguous, so it is refused, as in "
           "PyTorch: write under td::NoGradGuard, or make the view with grad mode on");
  if (!recording) return;
  TD_CHECK(!(m->requires_grad && !m->grad_fn && !m->is_view), op, ": a leaf tensor that requires grad is being used "
           "in an in-place operation; do it under td::NoGradGuard, or on a clone()");
  TD_CHECK(!(m->is_view && m->base.defined() && m->base.is_leaf() && m->base.requires_grad()), op,
           ": a view of a leaf tensor that requires grad is being used in an in-place operation");
}

void record_inplace(const char* name, Tensor& self, const std::vector<const Tensor*>& others, BackwardFn backward) {
  if (!is_floating(self.dtype())) return;  // no gradient reaches an integer tensor (see record)
  AutogradMeta* m = meta(self);
  if (!(m && m->is_view && m->base.defined())) {
    std::vector<const Tensor*> inputs = {&self};
    inputs.insert(inputs.end(), others.begin(), others.end());
    record(name, inputs, {&self}, std::move(backward));
    return;
  }
  // The base takes the gradient: outside the view's region it passes through unchanged; inside,
  // it goes through the op's backward, which also yields the other inputs' gradients.
  Tensor base = m->base;
  ViewFn view_fn = m->view_fn;
  std::vector<const Tensor*> inputs = {&base};
  inputs.insert(inputs.end(), others.begin(), others.end());
  record("CopySlices", inputs, {&base}, [view_fn, backward](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    std::vector<Tensor> op_grads;
    {
      // The op's saved output is the view's new value: under create_graph it unpacks as that
      // view of this node's output (the base after the op), as in PyTorch, not as the base.
      std::optional<CurrentNodeGuard> as_view;
      if (is_grad_enabled()) {
        Tensor base_after = g[0].detach();  // only its shape matters: the unpacked tensor keeps its saved values
        AutogradMeta& m = ensure_meta(base_after);
        m.grad_fn = current_node();
        m.output_nr = 0;
        m.requires_grad = true;
        as_view.emplace(view_fn(base_after).grad_fn());
      }
      op_grads = backward({view_fn(g[0])});
    }
    Tensor result = clone(g[0]);
    Tensor region = view_fn(result);
    if (op_grads[0].defined()) {
      region.copy_(op_grads[0]);
    } else {
      region.zero_();
    }
    op_grads[0] = result;
    return op_grads;
  });
  Tensor remade = view_fn(base);
  AutogradMeta& r = ensure_meta(remade);
  if (r.grad_fn) move_retained(*m, self, *r.grad_fn, r.output_nr);
  m->grad_fn = r.grad_fn;
  m->output_nr = r.output_nr;
  m->requires_grad = true;
  m->base_version = base.version();
}

void mark_view(Tensor& view, const Tensor& base, ViewFn view_fn) {
  AutogradMeta* base_meta = meta(base);
  AutogradMeta& m = ensure_meta(view);
  m.is_view = true;
  if (base_meta && base_meta->is_view && base_meta->base.defined()) {
    ViewFn outer = base_meta->view_fn;
    m.base = base_meta->base;
    m.view_fn = [outer, view_fn](const Tensor& root) { return view_fn(outer(root)); };
  } else {
    m.base = base;
    m.view_fn = std::move(view_fn);
  }
  m.base_version = m.base.version();
}

void mark_no_grad_view(Tensor& view, const Tensor& base) {
  const AutogradMeta* b = meta(base);
  Tensor root = !b                                     ? base
                : b->is_view && b->base.defined()      ? b->base
                : b->no_grad_view_base.defined()       ? b->no_grad_view_base
                                                       : base;
  ensure_meta(view).no_grad_view_base = std::move(root);
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (!grad.defined() || grad.sizes() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && grad.sizes()[d] != 1)) dims.push_back(d);
  }
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, true);
  return reshape(reduced, shape);
}

Tensor match_input(const Tensor& grad, const Tensor& input) {
  if (!grad.defined()) return grad;
  if (grad.dtype() == input.dtype() && grad.device() == input.device()) return grad;
  return grad.to(input.device(), input.dtype());
}

}  // namespace tandem::autograd
