// DataParallel on CPU devices: one training step of the default MLP (784-256-256-10, batch 512)
// on one device and data-parallel over two, and what each phase of a data-parallel step costs.
// A CPU device computes with its share of the cores: one device alone has them all, two on a
// two-core machine have one each. So two numbers matter: two devices against one device limited
// to one core (how data parallelism scales) and against one device using every core (whether
// data parallelism beats intra-op parallelism on this machine).
#include <benchmark/benchmark.h>

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
};

void mlp512_one_device(benchmark::State& state) {
  MlpStep s;
  std::optional<td::ThreadLimit> limit;
  if (state.range(0) > 0) limit.emplace(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    s.sgd->zero_grad();
    td::Tensor loss = td::nn::functional::cross_entropy(s.model->forward(s.x), s.y);
    loss.backward();
    s.sgd->step();
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void mlp512_data_parallel(benchmark::State& state) {
  MlpStep s;
  std::vector<td::Device> devices;
  for (int64_t i = 0; i < state.range(0); ++i) devices.emplace_back(td::kCPU, i);
  td::parallel::DataParallel dp(s.model, devices);
  for (auto _ : state) {
    s.sgd->zero_grad();
    td::Tensor loss = td::nn::functional::cross_entropy(dp(s.x), s.y);
    loss.backward();
    dp->step(*s.sgd);
    benchmark::DoNotOptimize(loss.data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  td::bench::last_data_parallel_table() = dp->stats().table();
}

}  // namespace

// Arg: a thread limit for the single device (0: all threads); the number of devices.
BENCHMARK(mlp512_one_device)->Arg(0)->Arg(1)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(mlp512_data_parallel)->Arg(2)->ArgName("devices")->UseRealTime()->Unit(benchmark::kMillisecond);
