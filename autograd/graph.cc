#include "autograd/graph.h"

#include <atomic>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/thread_pool.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/elementwise.h"

namespace tandem {

Tensor AccumulateGrad::hooked(Tensor grad) const {
  AutogradMeta* m = autograd::meta(variable);
  if (!m) return grad;
  for (auto& [handle, hook] : m->hooks) grad = autograd::hook_result(grad, hook(grad));
  return grad;
}

std::vector<Tensor> AccumulateGrad::apply(const std::vector<Tensor>& grad_outputs) {
  const Tensor& incoming = grad_outputs.at(0);
  if (!incoming.defined()) return {};
  // The engine has checked the gradient against the leaf's device when the graph was recorded.
  TD_CHECK(incoming.device() == variable.device(), "backward: the gradient of a leaf tensor on ", variable.device(),
           " arrived on ", incoming.device(), ": the tensor moved after the graph that uses it was recorded (",
           "run the forward again after moving a module)");
  AutogradMeta& m = autograd::ensure_meta(variable);
  Tensor grad = hooked(incoming);
  if (!m.grad.defined()) {
    // The leaf gets a dense tensor of its own (an incoming gradient may be an expanded view);
    // under create_graph the copy is recorded, so the gradient stays differentiable. A fresh
    // dense gradient that nothing else holds (the engine's handle and this one, or only this
    // one where a hook made it: the hook may keep it too; its memory only through it) becomes
    // .grad() as it is: no copy.
    const long holders = grad.is_same(incoming) ? 2 : 1;
    const bool only_here = grad.impl_ptr().use_count() <= holders && grad.storage().use_count() == 1 &&
                           !grad.requires_grad() && kernels::is_non_overlapping_and_dense(grad) &&
                           grad.dtype() == variable.dtype() && grad.device() == variable.device();
    if (is_grad_enabled()) {
      m.grad = clone(grad);
    } else if (only_here) {
      m.grad = grad;
    } else {
      m.grad = kernels::clone(grad);
    }
  } else if (is_grad_enabled()) {
    m.grad = m.grad + grad;  // create_graph: the accumulation itself is differentiable
  } else {
    kernels::detail::binary_(kernels::BinaryOp::Add, m.grad, grad);
  }
  return {};
}

namespace autograd {

Tensor hook_result(const Tensor& grad, const Tensor& replaced) {
  if (!replaced.defined()) return grad;
  TD_CHECK(replaced.sizes() == grad.sizes() && replaced.dtype() == grad.dtype() && replaced.device() == grad.device(),
           "a hook has changed the gradient it was given: it got ", grad.dtype(), shape_str(grad.sizes()), " on ",
           grad.device(), " and returned ", replaced.dtype(), shape_str(replaced.sizes()), " on ", replaced.device(),
           "; a hook may return a gradient of the same shape, dtype and device, or nothing");
  return replaced;
}

}  // namespace autograd

SavedTensor::SavedTensor(const Tensor& t, bool is_output, uint32_t output_nr)
    : output_nr_(output_nr), is_output_(is_output), defined_(t.defined()) {
  if (!defined_) return;
  version_ = t.version();
  data_ = is_output ? t.detach() : t;
}

Tensor SavedTensor::unpack(const char* op) const {
  if (!defined_) return Tensor();
  TD_CHECK(data_.version() == version_, op, ": one of the tensors needed for gradient computation has been modified "
           "by an in-place operation: a ", dtype_name(data_.dtype()), " tensor of shape ", shape_str(data_.sizes()),
           " is at version ", data_.version(), "; expected version ", version_, " instead");
  if (!is_output_) return data_;
  Tensor t = data_.detach();
  if (auto node = autograd::current_node(); node && is_grad_enabled()) {
    AutogradMeta& m = autograd::ensure_meta(t);
    m.grad_fn = node;
    m.output_nr = output_nr_;
    m.requires_grad = true;
  }
  return t;
}

namespace autograd {

AutogradMeta* meta(const Tensor& t) { return t.defined() ? t.impl().autograd.get() : nullptr; }

AutogradMeta& ensure_meta(const Tensor& t) {
  auto& slot = t.impl().autograd;
  if (!slot) slot = std::make_shared<AutogradMeta>();
  return *slot;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& m = ensure_meta(t);
  if (auto existing = m.grad_accumulator.lock()) return existing;
  auto acc = std::make_shared<AccumulateGrad>(t);
  acc->sequence_nr = next_sequence_nr();
  acc->threads = num_threads();
  m.grad_accumulator = acc;
  return acc;
}

void move_retained(AutogradMeta& m, const Tensor& t, Node& node, uint32_t output_nr) {
  if (!m.retains_grad) return;
  if (m.grad_fn && m.output_nr < m.grad_fn->retained.size()) m.grad_fn->retained[m.output_nr].reset();
  if (node.retained.size() < node.num_outputs) node.retained.resize(node.num_outputs);
  node.retained[output_nr] = t.impl_ptr();
}

AutogradMeta* current_meta(const Tensor& t) {
  AutogradMeta* m = meta(t);
  if (m && m->is_view && m->base.defined() && m->base.version() != m->base_version && m->base.requires_grad()) {
    Tensor remade;
    {
      AutoGradMode recording(true);
      remade = m->view_fn(m->base);
    }
    AutogradMeta* r = meta(remade);
    if (r && r->grad_fn) move_retained(*m, t, *r->grad_fn, r->output_nr);
    m->grad_fn = r ? r->grad_fn : nullptr;
    m->output_nr = r ? r->output_nr : 0;
    m->requires_grad = true;
    m->base_version = m->base.version();
  }
  return m;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = current_meta(t);
  if (!m) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr, t.device()};
  if (m->requires_grad) return {grad_accumulator(t), 0, t.device()};
  return {};
}

namespace {
thread_local std::shared_ptr<Node> t_current_node;
}

std::shared_ptr<Node> current_node() { return t_current_node; }

CurrentNodeGuard::CurrentNodeGuard(std::shared_ptr<Node> node) : previous_(std::move(t_current_node)) {
  t_current_node = std::move(node);
}

CurrentNodeGuard::~CurrentNodeGuard() { t_current_node = std::move(previous_); }

// Per thread: replicas recording the same model at the same time on their devices' threads
// number their nodes alike, whatever the timing, so the engine's order of adding gradients
// (by sender number, then device) is the same on every run.
uint64_t next_sequence_nr() {
  thread_local uint64_t counter = 0;
  return counter++;
}

}  // namespace autograd
}  // namespace tandem
