// DataParallel on CPU devices: one training step of the default MLP (784-256-256-10, batch 512)
// on one device and data-parallel over two, and what each phase of a data-parallel step costs.
// A CPU device computes with its share of the cores: one device alone has them all, two on a
// two-core machine have one each. So two numbers matter: two devices against one device limited
// to one core (how data parallelism scales) and against one device using every core (whether
// data parallelism beats intra-op parallelism on this machine).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "examples/models.h"
#include "nn/optim/sgd.h"
#include "tandem.h"
#include "tools/bench/parallel_benchmarks.h"

namespace td = tandem;

namespace tandem::bench {

std::string& last_data_parallel_table() {
  static std::string table;
  return table;
}

}  // namespace tandem::bench

namespace {

constexpr int64_t kBatch = 512;

struct MlpStep {
  std::shared_ptr<td::examples::MlpImpl> model;
  td::Tensor x, y;
  std::unique_ptr<td::optim::SGD> sgd;
  MlpStep() {
    td::manual_seed(0);
    model = td::examples::Mlp(784, 10).ptr();
    x = td::randn({kBatch, 1, 28, 28});
    y = td::randint(0, 10, {kBatch});
    sgd = std::make_unique<td::optim::SGD>(model->parameters(), td::optim::SGDOptions(0.01).momentum(0.9));
  }
  // One training step on one device, or data-parallel through `dp` (which wraps `model`).
  void step() {
    sgd->zero_grad();
    td::Tensor loss = td::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    sgd->step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  void step(td::parallel::DataParallel<td::examples::MlpImpl>& dp) {
    sgd->zero_grad();
    td::Tensor loss = td::nn::functional::cross_entropy(dp(x), y);
    loss.backward();
    dp->step(*sgd);
    benchmark::DoNotOptimize(loss.data_ptr());
  }
};

void mlp512_one_device(benchmark::State& state) {
  MlpStep s;
  std::optional<td::ThreadLimit> limit;
  if (state.range(0) > 0) limit.emplace(static_cast<int>(state.range(0)));
  for (auto _ : state) s.step();
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void mlp512_data_parallel(benchmark::State& state) {
  MlpStep s;
  std::vector<td::Device> devices;
  for (int64_t i = 0; i < state.range(0); ++i) devices.emplace_back(td::kCPU, i);
  td::parallel::DataParallel dp(s.model, devices);
  for (auto _ : state) s.step(dp);
  state.SetItemsProcessed(state.iterations() * kBatch);
  td::bench::last_data_parallel_table() = dp->stats().table();
}

// The two steps the speed-up compares, taken in turns, eight of one kind then eight of the other,
// each kind on its own copy of the model; the median of each kind goes into counters. On a
// virtual machine whose speed drifts by 10-40% from one second to the next, the benchmarks above
// (each measured in runs of its own, one benchmark after the other) put that drift into their
// ratio; steps in turns share it. The first three steps after a switch are not counted: the first
// data-parallel step after one-core steps took up to 2.7 times as long as the rest of its block
// (idle cores to wake, caches to refill), and the one-core steps settle likewise.
void mlp512_in_turns(benchmark::State& state) {
  constexpr int64_t kBlock = 8, kSettling = 3;
  MlpStep alone, parallel;
  const std::vector<td::Device> devices{td::Device(td::kCPU, 0), td::Device(td::kCPU, 1)};
  td::parallel::DataParallel dp(parallel.model, devices);
  std::vector<double> one_core, data_parallel;
  int64_t step = 0;
  for (auto _ : state) {
    const bool counted = step % kBlock >= kSettling;
    const bool data_parallel_turn = step++ / kBlock % 2 == 1;
    const auto start = std::chrono::steady_clock::now();
    if (data_parallel_turn) {
      parallel.step(dp);
    } else {
      td::ThreadLimit limit(1);
      alone.step();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (counted) (data_parallel_turn ? data_parallel : one_core).push_back(seconds);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  state.counters["one_core_s"] = median(one_core);
  state.counters["data_parallel_s"] = median(data_parallel);
  state.SetItemsProcessed(state.iterations() * kBatch);
}

}  // namespace

// Arg: a thread limit for the single device (0: all threads); the number of devices.
BENCHMARK(mlp512_one_device)->Arg(0)->Arg(1)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(mlp512_data_parallel)->Arg(2)->ArgName("devices")->UseRealTime()->Unit(benchmark::kMillisecond);
// Four turns of each kind per run, whatever --min-time says: a shorter run would have no full turn.
BENCHMARK(mlp512_in_turns)->Iterations(64)->UseRealTime()->Unit(benchmark::kMillisecond);

namespace {

// The collectives of one data-parallel step of the MLP above, alone, over cpu:0 and cpu:1:
// the input batch's scatter, the parameters' broadcast into kept replicas, the gradients' reduce.
std::vector<td::Device> two_cpu_devices() { return {td::Device(td::kCPU, 0), td::Device(td::kCPU, 1)}; }

void comm_cpu_scatter(benchmark::State& state) {
  td::manual_seed(0);
  td::Tensor x = td::randn({kBatch, 784});
  const auto devices = two_cpu_devices();
  for (auto _ : state) {
    auto chunks = td::parallel::comm::scatter(x, devices);
    benchmark::DoNotOptimize(chunks.back().data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * x.nbytes() / 2);
}

void comm_cpu_broadcast_coalesced_into(benchmark::State& state) {
  MlpStep s;
  std::vector<td::Tensor> params = s.model->parameters(), replica;
  for (const td::Tensor& p : params) replica.push_back(td::empty_like(p).to(td::Device(td::kCPU, 1)));
  int64_t bytes = 0;
  for (const td::Tensor& p : params) bytes += p.nbytes();
  for (auto _ : state) td::parallel::comm::broadcast_coalesced_into(params, {params, replica});
  state.SetBytesProcessed(state.iterations() * bytes);
}

void comm_cpu_reduce_add_coalesced(benchmark::State& state) {
  MlpStep s;
  std::vector<td::Tensor> grads = s.model->parameters(), other;
  for (const td::Tensor& g : grads) other.push_back(td::randn(g.sizes()).to(td::Device(td::kCPU, 1)));
  int64_t bytes = 0;
  for (const td::Tensor& g : grads) bytes += g.nbytes();
  for (auto _ : state) {
    auto sums = td::parallel::comm::reduce_add_coalesced({grads, other});
    benchmark::DoNotOptimize(sums.back().data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

}  // namespace

BENCHMARK(comm_cpu_scatter)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(comm_cpu_broadcast_coalesced_into)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(comm_cpu_reduce_add_coalesced)->UseRealTime()->Unit(benchmark::kMicrosecond);
