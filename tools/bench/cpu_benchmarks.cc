// The CPU benchmarks `tandem bench` runs beside PyTorch (tools/bench/torch_bench.py times the
// same operations under the same names). Inputs are made outside the timed loop.
#include <optional>

#include <benchmark/benchmark.h>

#include "examples/models.h"
#include "nn/optim/adam.h"
#include "nn/optim/sgd.h"
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

// float16 times a number float16 cannot hold exactly (0.1): the number is taken in float32.
void mul_f16_scalar_16M(benchmark::State& state) {
  td::Tensor a = td::randn({k16M}).to(td::kFloat16);
  for (auto _ : state) keep(a * 0.1);
  state.SetBytesProcessed(state.iterations() * 2 * 2 * k16M);
}

// The same in bfloat16, whose conversions are bit shifts with rounding.
void mul_bf16_scalar_16M(benchmark::State& state) {
  td::Tensor a = td::randn({k16M}).to(td::kBFloat16);
  for (auto _ : state) keep(a * 0.1);
  state.SetBytesProcessed(state.iterations() * 2 * 2 * k16M);
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

// The fused layers, forward and backward: layer norm over rows of 1024 with its affine parameters,
// cross-entropy over 1000 classes (mean), dropout of 16M elements (forward only).
void layernorm_fwd_bwd_4096x1024(benchmark::State& state) {
  td::Tensor x = td::randn({4096, 1024}).requires_grad_(true);
  td::Tensor w = td::ones({1024}).requires_grad_(true), b = td::zeros({1024}).requires_grad_(true);
  td::Tensor g = td::randn({4096, 1024});
  for (auto _ : state) {
    auto grads = td::autograd::grad({td::nn::functional::layer_norm(x, {1024}, w, b)}, {x, w, b}, {g});
    keep(grads[0]);
  }
  state.SetBytesProcessed(state.iterations() * 5 * 4 * 4096 * 1024);  // x, out; grad, x, grad_x
}

void cross_entropy_fwd_bwd_4096x1000(benchmark::State& state) {
  td::Tensor logits = td::randn({4096, 1000}).requires_grad_(true);
  td::Tensor target = td::randint(0, 1000, {4096});
  for (auto _ : state) {
    auto grads = td::autograd::grad({td::nn::functional::cross_entropy(logits, target)}, {logits});
    keep(grads[0]);
  }
  state.SetBytesProcessed(state.iterations() * 3 * 4 * 4096 * 1000);  // logits twice, grad once
}

// A classifier head of 8192 classes over 1024 rows of 128 features, forward and backward to the
// input and the weight: linear then cross_entropy, and the chunked form (the default options:
// chunks of 16 rows here), which never holds the [1024, 8192] logits whole.
void linear_cross_entropy(benchmark::State& state, bool chunked) {
  td::Tensor x = td::randn({1024, 128}).requires_grad_(true);
  td::Tensor w = (td::randn({8192, 128}) * 0.05).requires_grad_(true);
  td::Tensor target = td::randint(0, 8192, {1024});
  std::optional<td::nn::LinearCrossEntropyOptions> options;
  if (chunked) options = td::nn::LinearCrossEntropyOptions();
  for (auto _ : state) {
    auto loss = td::nn::functional::linear_cross_entropy(x, w, target, {}, {}, td::kMean, std::nullopt, 0, options);
    keep(td::autograd::grad({loss}, {x, w})[1]);
  }
  state.counters["GFLOP/s"] = benchmark::Counter(3 * 2.0 * 1024 * 128 * 8192, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
void linear_cross_entropy_1024x128x8192(benchmark::State& state) { linear_cross_entropy(state, false); }
void linear_cross_entropy_chunked_1024x128x8192(benchmark::State& state) { linear_cross_entropy(state, true); }

void dropout_f32_16M(benchmark::State& state) {
  td::Tensor a = td::randn({k16M});
  for (auto _ : state) keep(td::nn::functional::dropout(a, 0.1, true));
  state.SetBytesProcessed(state.iterations() * 2 * 4 * k16M);
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

// One training step (forward, cross-entropy, backward, SGD with momentum) on a fixed batch; with
// `autocast`, the forward and the loss run under autocast to that dtype.
void train_step(benchmark::State& state, td::nn::Module& model, const td::Tensor& x, const td::Tensor& y,
                std::optional<td::DType> autocast = std::nullopt) {
  td::optim::SGD sgd(model.parameters(), td::optim::SGDOptions(0.01).momentum(0.9));
  for (auto _ : state) {
    sgd.zero_grad();
    td::Tensor loss;
    {
      td::amp::AutocastGuard guard(td::kCPU, autocast, autocast.has_value());
      loss = td::nn::functional::cross_entropy(model.forward(x), y);
    }
    loss.backward();
    sgd.step();
    keep(loss);
  }
  state.SetItemsProcessed(state.iterations() * x.size(0));
}

void mlp_train_step(benchmark::State& state) {  // 784-256-256-10, batch 128
  td::manual_seed(0);
  td::examples::Mlp mlp(784, 10);
  train_step(state, *mlp, td::randn({128, 1, 28, 28}), td::randint(0, 10, {128}));
}

void mlp_train_step_bf16(benchmark::State& state) {  // the same under autocast to bfloat16
  td::manual_seed(0);
  td::examples::Mlp mlp(784, 10);
  train_step(state, *mlp, td::randn({128, 1, 28, 28}), td::randint(0, 10, {128}), td::kBFloat16);
}

void cnn_train_step(benchmark::State& state) {  // two convolutions, two linear layers, batch 64
  td::manual_seed(0);
  td::examples::Cnn cnn(1, 28, 28, 10);
  train_step(state, *cnn, td::randn({64, 1, 28, 28}), td::randint(0, 10, {64}));
}

// One optimizer step over the MLP's parameters (784-256-256-10: 269,322 values) and gradients
// fixed beforehand: the update phase of a training step, alone.
void optimizer_step(benchmark::State& state, td::optim::Optimizer& optimizer) {
  for (auto _ : state) optimizer.step();
}

std::vector<td::Tensor> mlp_parameters_with_grads(td::nn::Module& model) {
  std::vector<td::Tensor> params = model.parameters();
  for (td::Tensor& p : params) p.mutable_grad() = td::randn(p.sizes());
  return params;
}

void sgd_step_mlp(benchmark::State& state) {  // momentum 0.9
  td::manual_seed(0);
  td::examples::Mlp mlp(784, 10);
  td::optim::SGD sgd(mlp_parameters_with_grads(*mlp), td::optim::SGDOptions(0.01).momentum(0.9));
  optimizer_step(state, sgd);
}

void adamw_step_mlp(benchmark::State& state) {  // the defaults
  td::manual_seed(0);
  td::examples::Mlp mlp(784, 10);
  td::optim::AdamW adamw(mlp_parameters_with_grads(*mlp), td::optim::AdamWOptions(1e-3));
  optimizer_step(state, adamw);
}

}  // namespace

BENCHMARK(mlp_train_step)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(mlp_train_step_bf16)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(cnn_train_step)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(sgd_step_mlp)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(adamw_step_mlp)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(add_f32_16M)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(exp_f32_16M)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(mul_f16_scalar_16M)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(mul_bf16_scalar_16M)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(sum_rows_4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(sum_cols_4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(softmax_rows_4096)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(layernorm_fwd_bwd_4096x1024)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(cross_entropy_fwd_bwd_4096x1000)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(linear_cross_entropy_1024x128x8192)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(linear_cross_entropy_chunked_1024x128x8192)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(dropout_f32_16M)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(sgemm)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(add_1elem)->UseRealTime()->Unit(benchmark::kMicrosecond);
