// The engine in three steps: find the nodes reachable from the outputs and count, for each, the
// edges that lead into it; run a node once all of those have delivered their gradient (later
// nodes first), adding up the gradients each input receives; hand each node's results on along
// its edges. AccumulateGrad nodes at the leaves write .grad(); autograd::grad() instead captures
// the gradient arriving at the requested inputs.
#include "autograd/engine.h"

#include <chrono>
#include <map>
#include <mutex>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/grad_mode.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::autograd {

namespace {

std::mutex g_seconds_mutex;
std::map<Device, double> g_seconds_by_device;

struct Capture {
  Edge edge;
  Tensor grad;
};

struct Run {
  std::vector<Edge> roots;
  std::vector<Tensor> root_grads;
  std::vector<Capture> captures;  // autograd::grad: where to stop and collect
  bool accumulate = true;         // backward: run the leaves' AccumulateGrad nodes
  bool keep_graph = false;
  bool create_graph = false;
};

Tensor add_gradients(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

void check_root(const Tensor& out, size_t i) {
  TD_CHECK(out.defined(), "backward: output ", i, " is an undefined tensor");
  TD_CHECK(out.requires_grad(), "backward: element ", i, " of the outputs does not require grad and has no grad_fn");
}

Tensor root_gradient(const Tensor& out, const std::vector<Tensor>& given, size_t i) {
  if (i < given.size() && given[i].defined()) {
    const Tensor& g = given[i];
    TD_CHECK(g.sizes() == out.sizes(), "backward: the gradient of output ", i, " has shape ", shape_str(g.sizes()),
             " but the output has shape ", shape_str(out.sizes()));
    return g;
  }
  TD_CHECK(out.numel() == 1, "backward: a gradient can be created implicitly only for outputs of one element, but "
           "output ", i, " has shape ", shape_str(out.sizes()), "; pass its gradient");
  return ones_like(out);
}

void execute(Run& run) {
  // Which nodes run: all reachable ones, or for grad() only those on a path to a capture.
  std::unordered_map<Node*, int> dependencies;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& e : run.roots) {
    if (e.node && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.node) continue;
      ++dependencies[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  // For grad(): the nodes that lead to a captured edge, found by walking the reverse graph.
  std::unordered_set<Node*> needed;
  if (!run.captures.empty()) {
    std::unordered_map<Node*, std::vector<Node*>> parents;
    for (Node* n : seen) {
      for (const Edge& e : n->next_edges) {
        if (e.node) parents[e.node.get()].push_back(n);
      }
    }
    std::vector<Node*> work;
    for (const Capture& c : run.captures) {
      if (c.edge.node) work.push_back(c.edge.node.get());
    }
    while (!work.empty()) {
      Node* n = work.back();
      work.pop_back();
      for (Node* p : parents[n]) {
        if (needed.insert(p).second) work.push_back(p);
      }
    }
  }

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto deliver = [&](const Edge& e, const Tensor& g) {
    if (!e.node || !g.defined()) return;
    auto& buffer = buffers[e.node.get()];
    if (buffer.size() < e.node->num_outputs) buffer.resize(e.node->num_outputs);
    buffer[e.input_nr] = add_gradients(buffer[e.input_nr], g);
  };
  auto cmp = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(cmp)> ready(cmp);
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;  // keep nodes alive while they wait
  for (size_t i = 0; i < run.roots.size(); ++i) {
    const Edge& e = run.roots[i];
    deliver(e, run.root_grads[i]);
    if (e.node) owners[e.node.get()] = e.node;
  }
  for (const Edge& e : run.roots) {
    if (e.node && dependencies[e.node.get()] == 0 && owners.count(e.node.get())) {
      ready.push(e.node.get());
      dependencies[e.node.get()] = -1;  // queued once
    }
  }

  AutoGradMode mode(run.create_graph);
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[node]);
    buffers.erase(node);
    grads.resize(node->num_outputs);
    for (Capture& c : run.captures) {
      if (c.edge.node.get() == node) c.grad = add_gradients(c.grad, grads[c.edge.input_nr]);
    }
    bool any_gradient = false;
    for (const Tensor& g : grads) any_gradient |= g.defined();
    bool is_leaf_node = dynamic_cast<AccumulateGrad*>(node) != nullptr;
    bool run_node = any_gradient && (run.captures.empty() ? (run.accumulate || !is_leaf_node)
                                                          : needed.count(node) && !is_leaf_node);
    std::vector<Tensor> outputs;
    if (run_node) {
      for (uint32_t i = 0; i < node->pre_hooks.size() && i < grads.size(); ++i) {
        for (auto& [handle, hook] : node->pre_hooks[i]) {
          if (!grads[i].defined()) continue;
          Tensor changed = hook(grads[i]);
          if (changed.defined()) grads[i] = changed;
        }
      }
      for (uint32_t i = 0; i < node->retained.size() && i < grads.size(); ++i) {
        auto impl = node->retained[i].lock();
        if (!impl || !grads[i].defined()) continue;
        AutogradMeta& m = ensure_meta(Tensor(impl));
        m.grad = m.grad.defined() ? m.grad + grads[i] : (run.create_graph ? clone(grads[i]) : grads[i].detach().clone());
      }
      const auto start = std::chrono::steady_clock::now();
      outputs = node->apply(grads);
      if (!run.keep_graph) node->release();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      for (const Tensor& g : grads) {
        if (!g.defined()) continue;
        std::lock_guard lock(g_seconds_mutex);
        g_seconds_by_device[g.device()] += seconds;
        break;
      }
    }
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.node) continue;
      if (run_node && i < outputs.size()) deliver(e, outputs[i]);
      owners[e.node.get()] = e.node;
      if (--dependencies[e.node.get()] == 0) ready.push(e.node.get());
    }
    owners.erase(node);
  }
}

}  // namespace

std::map<Device, double> backward_seconds_by_device() {
  std::lock_guard lock(g_seconds_mutex);
  return g_seconds_by_device;
}

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  TD_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "backward: got ", grad_outputs.size(),
           " gradients for ", outputs.size(), " outputs");
  Run run;
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_root(outputs[i], i);
    run.roots.push_back(gradient_edge(outputs[i]));
    run.root_grads.push_back(root_gradient(outputs[i], grad_outputs, i));
  }
  run.keep_graph = retain_graph.value_or(create_graph);
  run.create_graph = create_graph;
  execute(run);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  TD_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "grad: got ", grad_outputs.size(),
           " gradients for ", outputs.size(), " outputs");
  Run run;
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_root(outputs[i], i);
    run.roots.push_back(gradient_edge(outputs[i]));
    run.root_grads.push_back(root_gradient(outputs[i], grad_outputs, i));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    TD_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad: input ", i, " does not require grad");
    run.captures.push_back({gradient_edge(inputs[i]), Tensor()});
  }
  run.accumulate = false;
  run.keep_graph = retain_graph.value_or(create_graph);
  run.create_graph = create_graph;
  execute(run);
  std::vector<Tensor> result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor g = run.captures[i].grad;
    TD_CHECK(g.defined() || allow_unused, "grad: input ", i, " was not used in computing the outputs; pass "
             "allow_unused=true to get an undefined gradient for it");
    result.push_back(g);
  }
  return result;
}

}  // namespace tandem::autograd
