// The CPU benchmarks `tandem bench` runs beside PyTorch (tools/bench/torch_bench.py times the
// same operations under the same names). Inputs are made outside the timed loop.
#include <benchmark/benchmark.h>

#include "tandem.h"

namespace td = tandem;

namespace {

constexpr int64_t k16M = int64_t{1} << 24;

void keep(const td::Tensor& t) { benchmark::DoNotOptimize(t.data_ptr()); }

void add_f32_16M(benchmark::State& state) {
  td::Tensor a = td::randn({k16M}), b = td::randn({k16M});
  for (auto _ : state) keep(a + b);
  state.SetBytesProcessed(state.iterations() * 3 * 4 * k16M);
}

void exp_f32_16M(benchmark::State& state) {
  td::Tensor a = td::randn({k16M});
  for (auto _ : state) keep(a.exp());
  state.SetBytesProcessed(state.iterations() * 2 * 4 * k16M);
}

void sum_rows_4096(benchmark::State& state) {
  td::Tensor a = td::randn({4096, 4096});
  for (auto _ : state) keep(a.sum(1));
  state.SetBytesProcessed(state.iterations() * 4 * 4096 * 4096);
}

void sum_cols_4096(benchmark::State& state) {
  td::Tensor a = td::randn({4096, 4096});
  for (auto _ : state) keep(a.sum(0));
  state.SetBytesProcessed(state.iterations() * 4 * 4096 * 4096);
}

void softmax_rows_4096(benchmark::State& state) {
  td::Tensor a = td::randn({4096, 4096});
  for (auto _ : state) keep(a.softmax(1));
  state.SetBytesProcessed(state.iterations() * 2 * 4 * 4096 * 4096);
}

void sgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  td::Tensor a = td::randn({n, n}), b = td::randn({n, n});
  for (auto _ : state) keep(a.mm(b));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void add_1elem(benchmark::State& state) {
  td::Tensor a = td::ones({1}), b = td::ones({1});
  for (auto _ : state) keep(a + b);
}

}  // namespace

BENCHMARK(add_f32_16M)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(exp_f32_16M)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(sum_rows_4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(sum_cols_4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(softmax_rows_4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(sgemm)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(add_1elem)->UseRealTime()->Unit(benchmark::kMicrosecond);
