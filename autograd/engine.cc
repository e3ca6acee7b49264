// The engine in three steps: find the nodes reachable from the outputs and count, for each, the
// edges that lead into it; run a node once all of those have delivered their gradient (later
// nodes first), adding up the gradients each input receives; hand each node's results on along
// its edges. AccumulateGrad nodes at the leaves write .grad(); autograd::grad() instead captures
// the gradient arriving at the requested inputs.
#include "autograd/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "core/cuda.h"
#include "core/device_threads.h"
#include "core/device_timer.h"
#include "core/thread_pool.h"
#include "core/trace.h"
#include "kernels/factory.h"

namespace tandem::autograd {

namespace {

// How long the caller of a backward spread over devices waits awake for their workers to finish.
constexpr auto kAwake = std::chrono::microseconds(2000);

// Each CPU device's time is the sum of its nodes' times; a GPU's is, for each backward, the span
// from its first node's work to the end of its last's, read when asked for.
DeviceSeconds<Device>& backward_seconds() {
  static auto* seconds = new DeviceSeconds<Device>();  // never destroyed: workers may outlive statics
  return *seconds;
}

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
  bool check_nan = is_anomaly_check_nan_enabled();  // anomaly detection, as it was when the run began
};

// Anomaly detection: a node whose results hold NaN stops the backward, named as PyTorch names it.
// Only the results that go on along an edge count: a gradient some backward computes for an input
// that needs none is thrown away (PyTorch does not compute it at all).
void check_for_nan(const Node& node, const std::vector<Tensor>& outputs) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < outputs.size() && i < node.next_edges.size(); ++i) {
    const Tensor& g = outputs[i];
    if (!node.next_edges[i].node || !g.defined() || !is_floating(g.dtype())) continue;
    TD_CHECK(!any(isnan(g)).item<bool>(), "Function '", node.name(), "' returned nan values in its ", i,
             "th output.");
  }
}

// A gradient goes where its input is: a backward that made one on another device (an op's
// bug) is named here, before the gradient reaches a .grad() or an op that would take it.
void check_devices(const Node& node, const std::vector<Tensor>& outputs) {
  for (size_t i = 0; i < outputs.size() && i < node.next_edges.size(); ++i) {
    const Edge& e = node.next_edges[i];
    if (!e.node || !outputs[i].defined()) continue;
    TD_CHECK(outputs[i].device() == e.device, "Function '", node.name(), "' returned the gradient of its input ", i,
             " on ", outputs[i].device(), ", but that input is on ", e.device);
  }
}

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
    TD_CHECK(g.device() == out.device(), "backward: the gradient of output ", i, " is on ", g.device(),
             " but the output is on ", out.device());
    // As PyTorch: a gradient of another dtype is converted to the output's, so that .grad()
    // always has its tensor's dtype.
    return g.dtype() == out.dtype() ? g : g.to(out.dtype());
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

  // Gradients arriving for each node input, kept with the sequence number of the node that sent
  // them and added up in that order (then by device) when the node runs: the same sums whatever
  // order threads deliver in.
  using Arrivals = std::vector<std::pair<uint64_t, Tensor>>;
  std::unordered_map<Node*, std::vector<Arrivals>> buffers;
  auto deliver = [&](const Edge& e, const Tensor& g, uint64_t from) {
    if (!e.node || !g.defined()) return;
    auto& buffer = buffers[e.node.get()];
    if (buffer.size() < e.node->num_outputs) buffer.resize(e.node->num_outputs);
    buffer[e.input_nr].emplace_back(from, g);
  };
  auto collect = [&](Node* node) {
    std::vector<Tensor> grads(node->num_outputs);
    auto it = buffers.find(node);
    if (it == buffers.end()) return grads;
    for (size_t i = 0; i < it->second.size() && i < grads.size(); ++i) {
      Arrivals& arrivals = it->second[i];
      std::sort(arrivals.begin(), arrivals.end(), [](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first > b.first;
        return a.second.device() < b.second.device();
      });
      for (auto& [from, g] : arrivals) grads[i] = add_gradients(grads[i], g);
    }
    buffers.erase(it);
    return grads;
  };

  // Each ready node runs on the thread of the device its gradients are on. The calling thread
  // serves the device of the first output (home) until the graph reaches another device; from
  // then on every device, home included, is served by its own worker while the caller waits. So
  // the replicas of a DataParallel model run their backward at the same time, each on its own
  // device's thread, and no more threads compute than there are devices: a caller computing
  // beside the workers could share a core with one of them for a whole scheduler slice (on two
  // cores, the replicas' backward then ran one after the other), as the scheduler does not move
  // a thread that has just run to a core that has just gone idle.
  auto cmp = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  using ReadyQueue = std::priority_queue<Node*, std::vector<Node*>, decltype(cmp)>;
  struct Ready {
    ReadyQueue queue;
    bool worker_running = false;
  };
  const Device home = run.root_grads.empty() ? Device(kCPU) : run.root_grads[0].device();
  std::map<Device, Ready> ready;
  std::mutex mutex;
  // The caller waits only once the graph has spread, and then it serves no device: only the
  // last worker's end can give it anything to do. Waking it for each node would make it take
  // a worker's core for a moment each time (about 10 us a node, on two cores).
  std::condition_variable workers_done;
  int64_t pending = 0;  // nodes queued or running
  std::atomic<int> workers{0};  // device workers still running (changed under the lock; polled without it)
  std::exception_ptr error;
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;  // keep nodes alive while they wait
  // Each node runs with the intra-op threads its op had (Node::threads), never more than the
  // caller may use: a replica's nodes keep their share of the cores, whatever the other
  // replicas are doing, and the split of each product stays the same from run to run.
  const int caller_threads = num_threads();
  auto threads_for = [&](const Node* node) { return std::clamp(node->threads, 1, caller_threads); };
  // A backward started on a device's own thread (inside a replica's forward) runs every node
  // right there: the other devices' threads may be waiting for this one.
  const bool on_device_thread = current_device_thread() != nullptr;
  bool spread = false;  // the graph has reached a device other than home (under the lock)
  auto served_by_caller = [&](const Device& device) { return on_device_thread || (device == home && !spread); };
  // The device workers queue GPU work on the caller's streams, after what the caller queued.
  const std::vector<cuda::Stream> caller_streams = cuda::current_streams();
  std::map<Device, DeviceTimer> gpu_spans;  // this backward's, per GPU (entries added under the lock)

  std::function<void(Device)> run_queue;  // drains a device's queue (declared for enqueue)
  auto start_worker = [&](const Device& device, Ready& r) {  // under the lock
    if (served_by_caller(device) || r.worker_running || r.queue.empty()) return;
    r.worker_running = true;
    ++workers;
    try {
      post_to_device_thread(device, [&run_queue, &caller_streams, device] {
        cuda::CurrentStreamsGuard streams(caller_streams);
        run_queue(device);
      });
    } catch (...) {
      r.worker_running = false;  // no worker will run: the caller must not wait for one
      --workers;
      throw;
    }
  };
  auto enqueue = [&](Node* node, const Device& device) {  // under the lock
    Ready& r = ready.try_emplace(device, Ready{ReadyQueue(cmp)}).first->second;
    r.queue.push(node);
    ++pending;
    if (!served_by_caller(device) && !spread) {  // home's nodes go to its worker from now on
      spread = true;
      if (auto h = ready.find(home); h != ready.end()) start_worker(home, h->second);
    }
    start_worker(device, r);
  };
  auto device_of = [&](Node* node) {  // under the lock: where its incoming gradients are
    auto it = buffers.find(node);
    if (it != buffers.end()) {
      for (const Arrivals& arrivals : it->second) {
        if (!arrivals.empty()) return arrivals.front().second.device();
      }
    }
    return home;
  };

  // Runs one node (without the lock), then hands its results on (with it). Called and returns
  // with the lock held, and never throws: a failure is kept in `error` for the caller to raise
  // once every thread has stopped using this function's state.
  auto process = [&](Node* node, std::unique_lock<std::mutex>& lock) {
    std::exception_ptr failure;
    std::vector<Tensor> grads;
    try {
      grads = collect(node);
    } catch (...) {
      failure = std::current_exception();
    }
    bool any_gradient = false;
    for (const Tensor& g : grads) any_gradient |= g.defined();
    auto* leaf = dynamic_cast<AccumulateGrad*>(node);
    const bool run_node = !failure && any_gradient &&
                          (run.captures.empty() ? (run.accumulate || !leaf) : needed.count(node) && !leaf);
    // grad() takes an input's gradient as its hooks leave it, as PyTorch does: the node's hooks
    // run also where only the capture needs them, and a captured leaf's own hooks (which run in
    // AccumulateGrad otherwise).
    const bool captured = !failure && any_gradient &&
                          std::any_of(run.captures.begin(), run.captures.end(),
                                      [&](const Capture& c) { return c.edge.node.get() == node; });
    std::vector<Tensor> outputs;
    std::optional<Device> device;  // of the gradients the node receives
    for (const Tensor& g : grads) {
      if (g.defined() && !device) device = g.device();
    }
    DeviceTimer* gpu_span = nullptr;
    if (run_node && device && device->is_cuda()) {
      try {
        gpu_span = &gpu_spans.try_emplace(*device, *device).first->second;
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if ((run_node || captured) && !failure) {
      lock.unlock();
      try {
        // CUDA code of the user's in a hook or a custom backward finds the GPU of the gradients it
        // receives current, as in a replica's forward (tandem's own launches choose theirs).
        std::optional<cuda::DeviceGuard> gpu;
        if (device && device->is_cuda()) gpu.emplace(device->index());
        const auto start = std::chrono::steady_clock::now();  // hooks count as the node's time
        for (uint32_t i = 0; i < node->pre_hooks.size() && i < grads.size(); ++i) {
          for (auto& [handle, hook] : node->pre_hooks[i]) {
            if (grads[i].defined()) grads[i] = hook_result(grads[i], hook(grads[i]));
          }
        }
        if (captured) {
          if (leaf && grads[0].defined()) grads[0] = leaf->hooked(grads[0]);  // a leaf never runs in grad()
          // Without the lock: only this thread runs this node, and only it adds to its captures.
          for (Capture& c : run.captures) {
            if (c.edge.node.get() == node) c.grad = add_gradients(c.grad, grads[c.edge.input_nr]);
          }
        }
        if (run_node) {
          for (uint32_t i = 0; i < node->retained.size() && i < grads.size(); ++i) {
            auto impl = node->retained[i].lock();
            if (!impl || !grads[i].defined()) continue;
            AutogradMeta& m = ensure_meta(Tensor(impl));
            m.grad = m.grad.defined() ? m.grad + grads[i]
                                      : (run.create_graph ? clone(grads[i]) : grads[i].detach().clone());
          }
          outputs = node->apply(grads);
          if (!run.keep_graph) node->release();  // before the checks, which may stop the run, as PyTorch's
          check_devices(*node, outputs);
          if (run.check_nan) check_for_nan(*node, outputs);
          const auto end = std::chrono::steady_clock::now();
          if (device && trace::enabled()) trace::record(node->name(), device->str(), start, end);
          if (gpu_span) {
            gpu_span->stop();
          } else if (device) {
            backward_seconds().add(*device, DeviceTimer::host_span(*device, start, end));
          }
        }
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
    }
    if (failure && !error) error = failure;
    try {
      for (size_t i = 0; i < node->next_edges.size(); ++i) {
        const Edge& e = node->next_edges[i];
        if (!e.node) continue;
        if (run_node && !failure && i < outputs.size()) deliver(e, outputs[i], node->sequence_nr);
        owners[e.node.get()] = e.node;
        if (--dependencies[e.node.get()] == 0 && !error) enqueue(e.node.get(), device_of(e.node.get()));
      }
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    owners.erase(node);
    --pending;
  };

  run_queue = [&](Device device) {
    AutoGradMode mode(run.create_graph);
    amp::SuspendAutocast no_autocast;  // every backward op in its forward op's dtype
    std::unique_lock lock(mutex);
    Ready& r = ready.at(device);
    while (!r.queue.empty() && !error) {
      Node* node = r.queue.top();
      r.queue.pop();
      ThreadLimit limit(threads_for(node));
      process(node, lock);
    }
    r.worker_running = false;
    if (--workers == 0) workers_done.notify_all();
  };

  std::unique_lock lock(mutex);
  for (size_t i = 0; i < run.roots.size(); ++i) {
    const Edge& e = run.roots[i];
    deliver(e, run.root_grads[i], UINT64_MAX);
    if (e.node) owners[e.node.get()] = e.node;
  }
  try {
    for (const Edge& e : run.roots) {
      if (e.node && dependencies[e.node.get()] == 0 && owners.count(e.node.get())) {
        dependencies[e.node.get()] = -1;  // queued once
        enqueue(e.node.get(), device_of(e.node.get()));
      }
    }
  } catch (...) {
    error = std::current_exception();
  }
  // The calling thread serves the home device until every node has run and every worker is done.
  AutoGradMode mode(run.create_graph);
  amp::SuspendAutocast no_autocast;
  auto next_for_caller = [&]() -> Node* {
    for (auto& [device, r] : ready) {
      if (!served_by_caller(device) || r.queue.empty()) continue;
      Node* node = r.queue.top();
      r.queue.pop();
      return node;
    }
    return nullptr;
  };
  for (;;) {
    if (Node* node = error ? nullptr : next_for_caller()) {
      ThreadLimit limit(threads_for(node));
      process(node, lock);
      continue;
    }
    if ((pending == 0 || error) && workers == 0) break;
    // The workers' end is often a moment away, and waking the caller from a sleep would add
    // about 45 us to each data-parallel step of a small model: it waits awake for a while first.
    lock.unlock();
    wait_awake([&] { return workers.load() == 0; }, kAwake);
    lock.lock();
    workers_done.wait(lock, [&] { return workers == 0; });
  }
  try {
    for (auto& [device, span] : gpu_spans) backward_seconds().add(device, std::move(span));
  } catch (...) {
    if (!error) error = std::current_exception();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace

BackwardMark backward_mark() { return backward_seconds().mark(); }

std::map<Device, double> backward_seconds_since(const BackwardMark& mark) { return backward_seconds().since(mark); }

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
  // As PyTorch: without inputs it would run (and free) the graph for nothing.
  TD_CHECK(!inputs.empty(), "grad: the inputs to take gradients with respect to must not be empty");
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
