// The GPU benchmarks `tandem bench` runs beside PyTorch on cuda:0 (tools/bench/torch_bench.py
// times the same operations under the same names when PyTorch sees a GPU). Each iteration queues
// a batch of calls between two CUDA events, behind one untimed call that keeps the GPU busy while
// the host queues the rest, and reports the GPU time per call: host overhead is hidden the way it
// is in real training (the host runs ahead of the GPU). The memory-bound benchmarks
// name the bytes they must move, which `tandem bench` divides by the time and compares with the
// device's measured copy bandwidth (cuda_copy).
#include "tools/bench/cuda_benchmarks.h"

#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <string>

#include "core/cuda.h"
#include "examples/models.h"
#include "nn/optim/sgd.h"
#include "tandem.h"

namespace td = tandem;

namespace tandem::bench {

namespace {

constexpr int kCallsPerIteration = 10;
const td::Device kGpu("cuda:0");
// Seconds per repetition: Google Benchmark counts the time an iteration reports, one call's, so a
// batch-timed benchmark asks for kCallsPerIteration times less to run as long as the others.
double g_min_time = 0.1;

// A benchmark whose setup or calls throw (out of memory, a CUDA error) reports the error and
// lets the others run: Google Benchmark does not catch exceptions, and one would end the program.
std::function<void(benchmark::State&)> guarded(std::function<void(benchmark::State&)> body) {
  return [body = std::move(body)](benchmark::State& state) {
    try {
      body(state);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
    }
  };
}

std::map<std::string, double>& bytes_table() {
  static std::map<std::string, double> table;
  return table;
}

// Times `call` on cuda:0's current stream; `bytes` per call (0: not memory-bound).
void gpu_timed(benchmark::State& state, const std::function<void()>& call, double bytes) {
  call();  // warm the allocator's cache and the handles
  td::cuda::synchronize(0);
  const td::cuda::Stream stream = td::cuda::current_stream(0);
  td::cuda::Event start(true), end(true);
  for (auto _ : state) {
    call();  // the GPU is busy when it reaches `start`: the host's first launch is not timed
    start.record(stream);
    for (int i = 0; i < kCallsPerIteration; ++i) call();
    end.record(stream);
    end.synchronize();
    state.SetIterationTime(start.elapsed_ms(end) / 1e3 / kCallsPerIteration);
  }
  if (bytes > 0) state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}

td::TensorOptions on_gpu(td::DType dtype = td::kFloat32) { return td::TensorOptions(dtype).device(kGpu); }

// Registers a benchmark whose body times its calls with gpu_timed.
void register_batch_timed(const std::string& name, std::function<void(benchmark::State&)> body,
                          benchmark::TimeUnit unit) {
  benchmark::RegisterBenchmark(name.c_str(), guarded(std::move(body)))
      ->UseManualTime()
      ->MinTime(g_min_time / kCallsPerIteration)
      ->Unit(unit);
}

void add_memory_bound(const std::string& name, int64_t mib, double bytes_per_element_moved,
                      std::function<std::function<void()>(int64_t elements)> make) {
  const int64_t elements = (mib << 20) / 4;  // float32 elements in the operand
  const std::string full = name + "/MiB:" + std::to_string(mib);
  const double bytes = bytes_per_element_moved * 4.0 * static_cast<double>(elements);
  bytes_table()[full] = bytes;
  register_batch_timed(full, [make, elements, bytes](benchmark::State& state) {
    std::function<void()> call = make(elements);
    gpu_timed(state, call, bytes);
  }, benchmark::kMicrosecond);
}

void add_gemm(const std::string& name, td::DType dtype, bool tf32) {
  for (int64_t n : {4096, 8192}) {
    const std::string full = name + "/" + std::to_string(n);
    register_batch_timed(full, [n, dtype, tf32](benchmark::State& state) {
      td::manual_seed(0);
      td::Tensor a = td::randn({n, n}, on_gpu(dtype)), b = td::randn({n, n}, on_gpu(dtype));
      struct Tf32 {  // set for this benchmark only, also when it throws
        explicit Tf32(bool on) { td::cuda::set_allow_tf32(on); }
        ~Tf32() { td::cuda::set_allow_tf32(false); }
      } tf32_for_this(tf32);
      gpu_timed(state, [&] { benchmark::DoNotOptimize(a.mm(b).data_ptr()); }, 0);
      state.counters["TFLOP/s"] = benchmark::Counter(2.0 * n * n * n / 1e12, benchmark::Counter::kIsIterationInvariantRate);
    }, benchmark::kMillisecond);
  }
}

// One step: forward, cross-entropy, backward, SGD with momentum, on a fixed batch on cuda:0.
template <typename Model>
void train_step(benchmark::State& state, Model& model, int64_t batch) {
  td::manual_seed(0);
  model->to(kGpu);
  td::Tensor x = td::randn({batch, 1, 28, 28}, on_gpu()), y = td::randint(0, 10, {batch}, on_gpu(td::kInt64));
  td::optim::SGD sgd(model->parameters(), td::optim::SGDOptions(0.01).momentum(0.9));
  gpu_timed(state, [&] {
    sgd.zero_grad();
    td::Tensor loss = td::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    sgd.step();
  }, 0);
  state.SetItemsProcessed(state.iterations() * kCallsPerIteration * batch);
}

// Work across devices: each call ends with every device synchronised, timed on the host clock.
void wall_timed(benchmark::State& state, const std::function<void()>& call, double bytes) {
  call();
  td::cuda::synchronize();
  for (auto _ : state) {
    call();
    td::cuda::synchronize();
  }
  if (bytes > 0) state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}

// Data parallelism on GPUs (two or more CUDA devices: distinct GPUs, or logical devices of one
// with TANDEM_VISIBLE_DEVICES=0,0): the collectives' bandwidth and a DataParallel training step.
void register_data_parallel_benchmarks() {
  const std::vector<td::Device> two = {kGpu, td::Device("cuda:1")};
  // 1 GiB, whose copy (cuda_copy/MiB:1024, timed with events) is the ceiling: these are timed on
  // the host, with a synchronisation of every device, which adds tens of microseconds to about
  // half a millisecond of copying on an H200.
  const int64_t mib = 1024, n = (mib << 20) / 4;
  const std::string size = "/MiB:" + std::to_string(mib);
  // One copy into the other device: read once, written once.
  bytes_table()["cuda_comm_broadcast" + size] = 2.0 * 4 * n;
  benchmark::RegisterBenchmark(("cuda_comm_broadcast" + size).c_str(), guarded([n, two](benchmark::State& state) {
    td::Tensor t = td::randn({n}, on_gpu());
    std::vector<td::Tensor> outputs = {t, td::empty({n}, td::TensorOptions().device(two[1]))};
    wall_timed(state, [&] { td::parallel::comm::broadcast_into(t, outputs); }, 2.0 * 4 * n);
  }))->UseRealTime()->MinTime(g_min_time)->Unit(benchmark::kMicrosecond);
  // The other device's tensor copied over (read, written), then both read and the sum written.
  bytes_table()["cuda_comm_reduce_add" + size] = 5.0 * 4 * n;
  benchmark::RegisterBenchmark(("cuda_comm_reduce_add" + size).c_str(), guarded([n, two](benchmark::State& state) {
    std::vector<td::Tensor> parts = {td::randn({n}, on_gpu()), td::randn({n}, td::TensorOptions().device(two[1]))};
    wall_timed(state, [&] { benchmark::DoNotOptimize(td::parallel::comm::reduce_add(parts, kGpu).data_ptr()); },
               5.0 * 4 * n);
  }))->UseRealTime()->MinTime(g_min_time)->Unit(benchmark::kMicrosecond);
  // The default MLP, batch 512, SGD with momentum: one device, then DataParallel over two.
  for (int devices : {1, 2}) {
    const std::string name = "cuda_dp_mlp512_step/devices:" + std::to_string(devices);
    benchmark::RegisterBenchmark(name.c_str(), guarded([devices, two](benchmark::State& state) {
      td::manual_seed(0);
      td::examples::Mlp mlp(784, 10);
      mlp->to(kGpu);
      td::Tensor x = td::randn({512, 1, 28, 28}, on_gpu()), y = td::randint(0, 10, {512}, on_gpu(td::kInt64));
      td::optim::SGD sgd(mlp->parameters(), td::optim::SGDOptions(0.01).momentum(0.9));
      td::parallel::DataParallel dp(mlp.ptr(), std::vector<td::Device>(two.begin(), two.begin() + devices));
      wall_timed(state, [&] {
        sgd.zero_grad();
        td::Tensor loss = td::nn::functional::cross_entropy(dp(x), y);
        loss.backward();
        dp->step(sgd);
      }, 0);
      state.SetItemsProcessed(state.iterations() * 512);
    }))->UseRealTime()->MinTime(g_min_time)->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

double cuda_bytes_per_call(const std::string& name) {
  auto it = bytes_table().find(name);
  return it == bytes_table().end() ? 0 : it->second;
}

void register_cuda_benchmarks(double min_time) {
  static bool done = false;
  if (done || !td::cuda::is_available()) return;
  done = true;
  g_min_time = min_time;
  namespace F = td::nn::functional;
  for (int64_t mib : {64, 1024}) {
    // The ceiling: a device-to-device copy, bytes read plus bytes written.
    add_memory_bound("cuda_copy", mib, 2, [](int64_t n) {
      td::Tensor x = td::randn({n}, on_gpu()), y = td::empty({n}, on_gpu());
      return [x, y]() mutable { y.copy_(x); };
    });
    add_memory_bound("cuda_add", mib, 3, [](int64_t n) {
      td::Tensor a = td::randn({n}, on_gpu()), b = td::randn({n}, on_gpu());
      return [a, b] { benchmark::DoNotOptimize((a + b).data_ptr()); };
    });
    add_memory_bound("cuda_mul", mib, 3, [](int64_t n) {
      td::Tensor a = td::randn({n}, on_gpu()), b = td::randn({n}, on_gpu());
      return [a, b] { benchmark::DoNotOptimize((a * b).data_ptr()); };
    });
    add_memory_bound("cuda_gelu", mib, 2, [](int64_t n) {
      td::Tensor a = td::randn({n}, on_gpu());
      return [a] { benchmark::DoNotOptimize(a.gelu().data_ptr()); };
    });
    add_memory_bound("cuda_sum_rows", mib, 1, [](int64_t n) {
      td::Tensor a = td::randn({n / 4096, 4096}, on_gpu());
      return [a] { benchmark::DoNotOptimize(a.sum(1).data_ptr()); };
    });
    add_memory_bound("cuda_sum_cols", mib, 1, [](int64_t n) {
      td::Tensor a = td::randn({n / 4096, 4096}, on_gpu());
      return [a] { benchmark::DoNotOptimize(a.sum(0).data_ptr()); };
    });
    add_memory_bound("cuda_softmax", mib, 2, [](int64_t n) {
      td::Tensor a = td::randn({n / 4096, 4096}, on_gpu());
      return [a] { benchmark::DoNotOptimize(a.softmax(1).data_ptr()); };
    });
    add_memory_bound("cuda_layernorm", mib, 2, [](int64_t n) {
      td::Tensor a = td::randn({n / 4096, 4096}, on_gpu());
      td::Tensor w = td::ones({4096}, on_gpu()), b = td::zeros({4096}, on_gpu());
      return [a, w, b] { benchmark::DoNotOptimize(F::layer_norm(a, {4096}, w, b).data_ptr()); };
    });
    add_memory_bound("cuda_cross_entropy", mib, 1, [](int64_t n) {
      td::Tensor logits = td::randn({n / 1024, 1024}, on_gpu());
      td::Tensor target = td::randint(0, 1024, {n / 1024}, on_gpu(td::kInt64));
      return [logits, target] { benchmark::DoNotOptimize(F::cross_entropy(logits, target).data_ptr()); };
    });
  }
  add_gemm("cuda_gemm_f32", td::kFloat32, false);
  add_gemm("cuda_gemm_tf32", td::kFloat32, true);
  add_gemm("cuda_gemm_bf16", td::kBFloat16, false);
  register_batch_timed("cuda_mlp_train_step", [](benchmark::State& state) {
    td::manual_seed(0);
    td::examples::Mlp mlp(784, 10);
    train_step(state, mlp, 128);
  }, benchmark::kMillisecond);
  register_batch_timed("cuda_cnn_train_step", [](benchmark::State& state) {
    td::manual_seed(0);
    td::examples::Cnn cnn(1, 28, 28, 10);
    train_step(state, cnn, 64);
  }, benchmark::kMillisecond);
  if (td::cuda::device_count() >= 2) register_data_parallel_benchmarks();
}

}  // namespace tandem::bench
