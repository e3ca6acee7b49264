// What every differentiable op does after computing its result: decide whether to record, and
// if so make a node whose backward is a closure over what it saved (micrograd's idea), wire
// its edges to the inputs' gradient edges and make it the outputs' grad_fn.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "autograd/graph.h"

namespace tandem::autograd {

using BackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs)>;

struct FunctionNode : Node {
  std::string op_name;
  BackwardFn backward;
  // The backward holds no tensors, so there is nothing to free: release() keeps it and, as in
  // PyTorch, a later backward may run through the node again (an autocast weight cast that
  // several forwards share, each with a backward of its own).
  bool saves_nothing = false;
  std::string name() const override { return op_name; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) override;
  void release() override {
    if (!saves_nothing) backward = nullptr;
  }
};

// Whether an op on these inputs records: grad mode is on and some input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// Makes `outputs` the results of a node named `name` whose backward is `backward`; gradients
// flow to `inputs` (an undefined input, or one not requiring grad, gets none).
std::shared_ptr<FunctionNode> record(const char* name, const std::vector<const Tensor*>& inputs,
                                     const std::vector<Tensor*>& outputs, BackwardFn backward);

using ViewFn = std::function<Tensor(const Tensor&)>;

// For in-place ops, called with grad mode on or off, whether the op records or not: checks,
// before anything is written, that `self` may be modified (while recording, not a leaf that
// requires grad, nor a view of one; never a view made under NoGradGuard whose base requires
// grad or whose write would be recorded).
void check_inplace(const Tensor& self, const char* op, bool recording);
// Records an in-place op on self (self is both an input and the output; `others` are the other
// inputs; `backward` returns gradients for self's old value and for each of `others`). When
// self is a view, the write changes its base too: the base's history becomes the old history
// with the view's region run through the op, and the view's history is remade from the base.
void record_inplace(const char* name, Tensor& self, const std::vector<const Tensor*>& others, BackwardFn backward);
// Marks `view`, made from `base` by `view_fn` (a differentiable view op), as a view of base's
// own base, if any: in-place writes then reach the base's history.
void mark_view(Tensor& view, const Tensor& base, ViewFn view_fn);
// Marks `view`, made from `base` under NoGradGuard, with base's root (see check_inplace).
void mark_no_grad_view(Tensor& view, const Tensor& base);

// grad summed over the dims it was broadcast along, down to `shape` (the input's).
Tensor sum_to(const Tensor& grad, const Shape& shape);
// grad converted to the input's dtype and device, when promotion or a copy changed them.
Tensor match_input(const Tensor& grad, const Tensor& input);

}  // namespace tandem::autograd
