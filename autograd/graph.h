// The autograd graph. Every op that records builds one Node: its backward, a function from the
// gradients of the op's outputs to the gradients of its inputs, plus one Edge per input saying
// where that input's gradient goes next (the node that made the input, or, for a leaf, the
// node that accumulates into its .grad()). backward() walks this graph from the loss.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem {

struct Node;

struct Edge {
  std::shared_ptr<Node> node;  // null: the input needs no gradient
  uint32_t input_nr = 0;       // which of node's gradient inputs (= which output of its op)
  Device device = Device(kCPU);  // the input's: its gradient must be there too
};

using TensorHook = std::function<Tensor(const Tensor&)>;

struct Node : std::enable_shared_from_this<Node> {
  virtual ~Node() = default;
  // PyTorch's name, e.g. "MulBackward0": shown in printing and errors.
  virtual std::string name() const = 0;
  // Gradients of the op's outputs (undefined where an output got none) to those of its inputs,
  // one per next edge (undefined where an input gets none).
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) = 0;
  // Frees what apply needs, after a backward that does not retain the graph.
  virtual void release() {}

  std::vector<Edge> next_edges;
  uint32_t num_outputs = 1;
  uint64_t sequence_nr = 0;  // creation order on its thread: the engine runs later nodes first
  // The intra-op threads its op could use when it was recorded (num_threads() then): its backward
  // gets as many. How a product is split across threads decides its last bits, so a node's share
  // must not depend on what other devices' nodes are doing when it runs.
  int threads = 1;
  // Hooks on the gradient of output i (Tensor::register_hook on a non-leaf), and the tensors
  // that keep that gradient (retain_grad), filled after the hooks have run.
  std::vector<std::vector<std::pair<int, TensorHook>>> pre_hooks;
  std::vector<std::weak_ptr<TensorImpl>> retained;
};

// Accumulates the gradient of a leaf into its .grad(); the leaf holds it weakly.
struct AccumulateGrad : Node {
  explicit AccumulateGrad(const Tensor& leaf) : variable(leaf) {}
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) override;
  // grad as the leaf's hooks leave it (each may replace it).
  Tensor hooked(Tensor grad) const;
  Tensor variable;
};

// A tensor kept for backward. It remembers the tensor's version, so that modifying it in place
// afterwards is caught. An op's own output is kept detached (a node owning its output would be
// a reference cycle) and gets its history back when unpacked: the node being run is its
// grad_fn, which matters when the backward is itself recorded (create_graph).
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output, uint32_t output_nr = 0);
  // Saved only where a needed gradient reads it; an unsaved tensor may be freed, or written in
  // place, before backward.
  static SavedTensor input_if(bool needed, const Tensor& input) {
    return needed ? SavedTensor(input, false) : SavedTensor();
  }
  static SavedTensor output_if(bool needed, const Tensor& output) {
    return needed ? SavedTensor(output, true) : SavedTensor();
  }
  // The tensor as saved; throws if it was modified in place since.
  Tensor unpack(const char* op) const;
  bool defined() const { return defined_; }

 private:
  Tensor data_;
  uint32_t output_nr_ = 0;
  uint32_t version_ = 0;
  bool is_output_ = false, defined_ = false;
};

struct AutogradMeta {
  bool requires_grad = false;  // leaves: set by the user; non-leaves: having a grad_fn
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<Node> grad_accumulator;
  bool retains_grad = false;
  std::vector<std::pair<int, TensorHook>> hooks;  // leaves; non-leaves keep theirs on grad_fn
  // A view (made while grad mode was on) remembers its base, how to remake itself from the base
  // with differentiable ops, and the base's version: after an in-place write to the base or to
  // another view of it, the view's history is remade from the base's new one.
  bool is_view = false;
  Tensor base;
  std::function<Tensor(const Tensor&)> view_fn;
  uint32_t base_version = 0;
  // A view made under NoGradGuard has no history; its root base is kept so that an in-place
  // write through it with grad mode on can be refused (check_inplace), as PyTorch does.
  Tensor no_grad_view_base;
};

namespace autograd {

AutogradMeta* meta(const Tensor& t);          // null if none
// What a tensor hook made of `grad`: `replaced` if defined (of grad's shape, dtype and device,
// or an error, as PyTorch's), grad otherwise.
Tensor hook_result(const Tensor& grad, const Tensor& replaced);
AutogradMeta& ensure_meta(const Tensor& t);
// Where t's gradient goes: its grad_fn, or its leaf accumulator, or nowhere. A view whose base
// was written in place since it was made gets its history remade first.
Edge gradient_edge(const Tensor& t);
// t's meta, null if none; a view whose base was written in place since it was made gets its
// history remade from the base's first (recorded even under NoGradGuard: it is the view's own
// history, not a new op), so that its grad_fn, hooks and retain_grad are its current ones.
AutogradMeta* current_meta(const Tensor& t);
// retain_grad() keeps the gradient of a tensor's latest value, as in PyTorch: when t gets a new
// node (output `output_nr` of `node`), its retained slot moves there from its old node.
void move_retained(AutogradMeta& m, const Tensor& t, Node& node, uint32_t output_nr);
// The node being run by the engine on this thread (null outside backward).
std::shared_ptr<Node> current_node();
class CurrentNodeGuard {
 public:
  explicit CurrentNodeGuard(std::shared_ptr<Node> node);
  ~CurrentNodeGuard();

 private:
  std::shared_ptr<Node> previous_;
};
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
uint64_t next_sequence_nr();

}  // namespace autograd
}  // namespace tandem
