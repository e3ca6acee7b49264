// The collectives and DataParallel on CUDA devices: each primitive on two CUDA devices gives what
// it gives on two CPU devices (proven there against naive references), and DataParallel over CUDA
// devices trains as one device does. Cases tagged [devices] need two logical CUDA devices; the
// GPU suite runs them on one GPU with TANDEM_VISIBLE_DEVICES=0,0 (and on distinct GPUs where present).
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define TD_TEST_HAS_CUDART 1
#endif

#include "core/device_threads.h"
#include "kernels/elementwise.h"
#include "parallel/nccl.h"
#include "parallel/parallel_apply.h"
#include "tests/testing.h"

namespace td = tandem;
namespace comm = td::parallel::comm;
namespace par = td::parallel;
using td::Device;
using td::Tensor;

namespace {

const Device cpu0("cpu:0"), cpu1("cpu:1"), cuda0("cuda:0"), cuda1("cuda:1");

bool two_cuda_devices() {
  if (td::cuda::device_count() >= 2) return true;
  td::testing::mark_skipped("needs two CUDA devices (TANDEM_VISIBLE_DEVICES=0,0 makes two of one GPU)");
  return false;
}

// Same devices, same dtype, same shapes and values, within the dtype's rounding (integers exactly):
// these primitives only copy and add in a fixed order.
void check_same(const std::vector<Tensor>& on_cuda, const std::vector<Tensor>& on_cpu, const std::string& what) {
  REQUIRE(on_cuda.size() == on_cpu.size());
  for (size_t i = 0; i < on_cuda.size(); ++i) {
    CHECK(on_cuda[i].device() == Device(td::kCUDA, on_cpu[i].device().index()));
    CHECK(on_cuda[i].dtype() == on_cpu[i].dtype());
    const double tol = td::testing::rtol_for(on_cpu[i].dtype());
    td::testing::check_close(on_cuda[i].cpu(), on_cpu[i], tol, tol, what + " #" + std::to_string(i));
  }
}

// The tensor's values on `device`, for each of two devices: CPU twins and CUDA twins hold the same data.
std::pair<std::vector<Tensor>, std::vector<Tensor>> per_device(const td::Shape& shape, td::DType dtype) {
  std::vector<Tensor> cpu, cuda;
  for (int d = 0; d < 2; ++d) {
    Tensor t = td::testing::random_tensor(shape, dtype);
    cpu.push_back(t.to(Device(td::kCPU, d)));
    cuda.push_back(t.to(Device(td::kCUDA, d)));
  }
  return {cpu, cuda};
}

}  // namespace

namespace {

void check_add_n(const std::vector<int64_t>& sizes) {
  td::testing::PoisonGuard poison;  // an element add_n leaves unwritten reads back as NaN or -1
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16, td::kInt64, td::kInt32, td::kUInt8}) {
    for (int64_t n : sizes) {
      for (int count : {1, 2, 5, 17, 40}) {
        std::vector<Tensor> cpu, cuda;
        for (int k = 0; k < count; ++k) {
          cpu.push_back(td::testing::random_tensor({n}, dtype));
          cuda.push_back(cpu.back().to(cuda0));
        }
        Tensor expected = td::empty({n}, dtype), actual = td::empty({n}, td::TensorOptions(dtype).device(cuda0));
        td::kernels::add_n_into(expected, cpu);
        td::kernels::add_n_into(actual, cuda);
        // The same additions in the same order, rounded once (17 inputs take two launches, 40
        // three, whose middle one reads and writes the running sum, kept in float32 between them
        // for 16-bit floats).
        td::testing::check_close(actual.cpu(), expected, 1e-6, 1e-6,
                                 td::detail::str_cat("add_n ", dtype, " n=", n, " inputs=", count));
      }
    }
  }
}

}  // namespace

TEST_CASE("add_n on a CUDA device adds in order as the CPU does, for every numeric dtype", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::testing::reseed(101);
  check_add_n({1, 7, 33});
  td::testing::check_error([] { td::kernels::add_n_into(td::empty({2}, td::TensorOptions().device(cuda0)), {td::ones({2})}); },
                           {"add_n", "cpu:0", "cuda:0"});
}

TEST_CASE("add_n into one of its own inputs, also one that a second launch reads", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::testing::reseed(105);
  for (td::DType dtype : {td::kFloat32, td::kFloat16}) {
    for (size_t into : {size_t{0}, size_t{17}}) {  // read by the first launch, or by the second one
      std::vector<Tensor> cpu, cuda;
      for (int k = 0; k < 20; ++k) {
        cpu.push_back(td::testing::random_tensor({33}, dtype));
        cuda.push_back(cpu.back().to(cuda0));
      }
      Tensor expected = td::empty({33}, dtype);
      td::kernels::add_n_into(expected, cpu);
      td::kernels::add_n_into(cuda[into], cuda);
      td::testing::check_close(cuda[into].cpu(), expected, 1e-6, 1e-6,
                               td::detail::str_cat("add_n ", dtype, " into input ", into));
    }
  }
}

TEST_CASE("parallel_apply makes each replica's GPU the current one while it runs", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (!two_cuda_devices()) return;
#ifdef TD_TEST_HAS_CUDART
  const std::vector<Device> devices = {cuda1, cuda0};
  const auto current = td::parallel::parallel_apply(devices, [&](size_t) {
    int gpu = -1;
    TD_CHECK(cudaGetDevice(&gpu) == cudaSuccess, "cudaGetDevice");
    return gpu;
  });
  CHECK(current[0] == td::cuda::physical_device(1));
  CHECK(current[1] == td::cuda::physical_device(0));
#endif
}

TEST_CASE("backward makes the GPU of a node's gradients the current one while the node and its hooks run",
          "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (!two_cuda_devices()) return;
#ifdef TD_TEST_HAS_CUDART
  // Where cuda:0 and cuda:1 are one GPU this shows only that the guard does no harm; on distinct
  // GPUs the hook would find GPU 0 current without it.
  Tensor a = td::ones({4}, td::TensorOptions().device(cuda1)).requires_grad_();
  Tensor y = a * 2;
  int seen = -1;
  y.register_hook([&](const Tensor&) {
    TD_CHECK(cudaGetDevice(&seen) == cudaSuccess, "cudaGetDevice");
    return Tensor();
  });
  {
    td::cuda::DeviceGuard elsewhere(0);
    y.sum().backward();
  }
  CHECK(seen == td::cuda::physical_device(1));
  CHECK(a.grad().cpu().sum().item<double>() == 8.0);
#endif
}

TEST_CASE("add_n on a CUDA device, a million elements", "[cuda][large]") {
  TD_SKIP_UNLESS_CUDA();
  td::testing::reseed(104);
  check_add_n({1000003});
}

TEST_CASE("every collective gives on two CUDA devices what it gives on two CPU devices", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (!two_cuda_devices()) return;
  td::testing::reseed(102);
  const std::vector<Device> cpus = {cpu0, cpu1}, gpus = {cuda0, cuda1};
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kInt64}) {
    const std::string name = td::detail::str_cat(dtype);
    Tensor t = td::testing::random_tensor({33, 7}, dtype, td::testing::Layout::Permuted);
    check_same(comm::broadcast(t.to(cuda1), gpus), comm::broadcast(t.to(cpu1), cpus), "broadcast " + name);
    check_same(comm::scatter(t.to(cuda0), gpus), comm::scatter(t.to(cpu0), cpus), "scatter " + name);
    check_same(comm::scatter(t, gpus, std::vector<int64_t>{2, 5}, 1), comm::scatter(t, cpus, std::vector<int64_t>{2, 5}, 1),
               "scatter from the host with chunk sizes " + name);
    auto [on_cpu, on_gpu] = per_device({10, 1000003 / 10}, dtype);
    check_same({comm::gather(on_gpu, 0, cuda1)}, {comm::gather(on_cpu, 0, cpu1)}, "gather " + name);
    td::testing::check_close(comm::gather(on_gpu, 1, Device("cpu:0")), comm::gather(on_cpu, 1, cpu0), 0, 0,
                             "gather to the host " + name);
    check_same({comm::reduce_add(on_gpu, cuda1)}, {comm::reduce_add(on_cpu, cpu1)}, "reduce_add " + name);
    check_same(comm::all_gather(on_gpu, 0), comm::all_gather(on_cpu, 0), "all_gather " + name);
    check_same(comm::reduce_scatter(on_gpu, 0), comm::reduce_scatter(on_cpu, 0), "reduce_scatter " + name);
    comm::all_reduce(on_gpu);
    comm::all_reduce(on_cpu);
    check_same(on_gpu, on_cpu, "all_reduce " + name);
  }
  // Many tensors of mixed dtypes at once.
  std::vector<Tensor> tensors = {td::testing::random_tensor({1}, td::kFloat64), td::testing::random_tensor({5, 3}, td::kFloat32),
                                 td::testing::random_tensor({4}, td::kInt64), td::zeros({0, 3})};
  std::vector<Tensor> on_cuda0;
  for (const Tensor& t : tensors) on_cuda0.push_back(t.to(cuda0));
  auto cpu_copies = comm::broadcast_coalesced(tensors, cpus);
  // On GPUs the tensors travel through buffers: one for all, or several small ones.
  for (int64_t buffer_size : {int64_t{16}, comm::kDefaultBufferSize}) {
    auto gpu_copies = comm::broadcast_coalesced(on_cuda0, gpus, buffer_size);
    for (int d = 0; d < 2; ++d) check_same(gpu_copies[d], cpu_copies[d], "broadcast_coalesced");
  }
  std::vector<std::vector<Tensor>> cpu_lists(2), gpu_lists(2);
  for (int d = 0; d < 2; ++d) {
    for (const Tensor& t : tensors) {
      if (t.dtype() == td::kInt64 || t.numel() == 0) continue;
      Tensor v = td::testing::random_tensor(t.sizes(), t.dtype());
      cpu_lists[d].push_back(v.to(Device(td::kCPU, d)));
      gpu_lists[d].push_back(v.to(Device(td::kCUDA, d)));
    }
  }
  for (int64_t buffer_size : {int64_t{16}, comm::kDefaultBufferSize}) {
    check_same(comm::reduce_add_coalesced(gpu_lists, cuda0, buffer_size), comm::reduce_add_coalesced(cpu_lists, cpu0),
               "reduce_add_coalesced");
  }
  auto stats = comm::comm_stats();
  CHECK(stats["all_reduce"].bytes > 0);
}

TEST_CASE("device threads queue GPU work on the caller's current streams", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (!two_cuda_devices()) return;
  const td::cuda::Stream s0 = td::cuda::new_stream(0), s1 = td::cuda::new_stream(1);
  td::cuda::StreamGuard g0(s0), g1(s1);
  std::vector<td::cuda::Stream> seen(2);
  par::parallel_run({cuda0, cuda1}, [&](size_t i) { seen[i] = td::cuda::current_stream(static_cast<int>(i)); });
  CHECK(seen[0] == s0);
  CHECK(seen[1] == s1);
  // A backward's nodes on cuda:1 run on cuda:1's thread (the root is on cuda:0).
  Tensor a = td::ones({4}, td::TensorOptions().device(cuda0)).requires_grad_();
  Tensor b = a.to(cuda1) * 2;
  td::cuda::Stream in_backward;
  const td::Device* thread_device = nullptr;
  b.register_hook([&](const Tensor&) {
    in_backward = td::cuda::current_stream(1);
    thread_device = td::current_device_thread();
    return Tensor();
  });
  b.to(cuda0).sum().backward();
  CHECK(thread_device != nullptr);
  CHECK(in_backward == s1);
  td::testing::check_equal(a.grad().cpu(), {2, 2, 2, 2});
}

namespace {

class SmallMlpImpl : public td::nn::Cloneable<SmallMlpImpl> {
 public:
  SmallMlpImpl() { reset(); }
  void reset() override {
    fc1 = register_module("fc1", td::nn::Linear(5, 16));
    fc2 = register_module("fc2", td::nn::Linear(16, 3));
  }
  Tensor forward(const Tensor& x) override { return fc2(td::tanh(fc1(x))); }
  td::nn::Linear fc1{nullptr}, fc2{nullptr};
};

}  // namespace

TEST_CASE("DataParallel over CUDA devices trains as one device does, in any device order", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (!two_cuda_devices()) return;
  td::testing::reseed(103);
  Tensor x = td::testing::random_tensor({10, 5}, td::kFloat64), y = td::testing::random_tensor({10, 3}, td::kFloat64);
  for (const std::vector<Device>& devices : {std::vector<Device>{cuda0, cuda1}, std::vector<Device>{cuda1, cuda0}}) {
    const std::string what = devices[0].str() + "," + devices[1].str();
    td::manual_seed(7);
    auto model = std::make_shared<SmallMlpImpl>();
    auto reference = std::dynamic_pointer_cast<SmallMlpImpl>(model->clone());
    model->to(devices[0], td::kFloat64);
    reference->to(cpu0, td::kFloat64);
    par::DataParallel dp(model, par::DataParallelOptions(devices));
    td::optim::SGD opt(dp->parameters(), td::optim::SGDOptions(0.1).momentum(0.9));
    td::optim::SGD ref_opt(reference->parameters(), td::optim::SGDOptions(0.1).momentum(0.9));
    for (int step = 0; step < 5; ++step) {
      Tensor out = dp(x);  // scattered from the host straight to the devices
      CHECK(out.device() == devices[0]);
      Tensor loss = td::nn::functional::mse_loss(out, y.to(devices[0]));
      Tensor ref_loss = td::nn::functional::mse_loss(reference->forward(x), y);
      opt.zero_grad();
      ref_opt.zero_grad();
      loss.backward();
      ref_loss.backward();
      dp->step(opt);  // opt.step(), timed as the update phase
      ref_opt.step();
      auto pa = model->named_parameters(), pb = reference->named_parameters();
      for (size_t i = 0; i < pa.size(); ++i) {
        CHECK(pa[i].second.device() == devices[0]);
        td::testing::check_close(pa[i].second.cpu(), pb[i].second, 1e-10, 1e-10,
                                 what + " step " + std::to_string(step) + " " + pa[i].first);
      }
    }
    // The step's phases as the GPUs timed them (events, read here).
    const auto stats = dp->stats();
    REQUIRE(stats.devices.size() == 2);
    for (const auto& d : stats.devices) {
      CHECK(d.device.is_cuda());
      CHECK(d.rows == 5);
      CHECK(d.forward > 0);
      CHECK(d.backward > 0);
      CHECK(d.peak_bytes > 0);
    }
    CHECK(stats.update > 0);
    CHECK(stats.reduce > 0);
    CHECK(stats.comm.at("reduce_add_coalesced").calls == 1);
    CHECK(stats.comm.at("broadcast_coalesced").seconds > 0);
    // NCCL serves the step's collectives exactly where TANDEM_COMM=nccl asks for it and the devices
    // are distinct GPUs; on logical devices of one GPU the kernels do (the GPU suite runs this case
    // both ways).
    const bool by_nccl = comm::nccl_requested() && par::nccl::built_with_nccl() &&
                         td::cuda::physical_device(0) != td::cuda::physical_device(1);
    INFO("TANDEM_COMM=nccl: " << comm::nccl_requested() << ", distinct GPUs: "
                              << (td::cuda::physical_device(0) != td::cuda::physical_device(1)));
    for (const char* name : {"reduce_add_coalesced", "broadcast_coalesced"}) {
      CHECK(stats.comm.at(name).nccl_calls == (by_nccl ? stats.comm.at(name).calls : 0));
    }
    CHECK((stats.table().find("by NCCL") != std::string::npos) == by_nccl);
  }
}

TEST_CASE("NCCL serves distinct GPUs only; on one GPU its collectives are the identity", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  if (!par::nccl::built_with_nccl()) {
    td::testing::mark_skipped("this build has no NCCL");
    return;
  }
  td::testing::reseed(105);
  Tensor t = td::testing::random_tensor({1000, 33}, td::kFloat32).to(cuda0);
  const Tensor before = t.clone();
  CHECK(par::nccl::can_serve({t}));
  CHECK_FALSE(par::nccl::can_serve({t.t()}));  // not contiguous
  CHECK_FALSE(par::nccl::can_serve({t.to(td::kBool)}));
  CHECK_FALSE(par::nccl::can_serve({t.cpu()}));
  par::nccl::all_reduce({t});
  td::testing::check_close(t.cpu(), before.cpu(), 0, 0, "all_reduce over one GPU");
  Tensor out = td::empty({1000, 33}, td::TensorOptions().device(cuda0));
  par::nccl::reduce({t}, out, 0);
  td::testing::check_close(out.cpu(), before.cpu(), 0, 0, "reduce over one GPU");
  par::nccl::broadcast({t}, 0);
  td::testing::check_close(t.cpu(), before.cpu(), 0, 0, "broadcast over one GPU");
  if (td::cuda::device_count() >= 2 &&
      td::cuda::physical_device(0) == td::cuda::physical_device(1)) {
    CHECK_FALSE(par::nccl::can_serve({t, td::zeros({1000, 33}, td::TensorOptions().device(cuda1))}));
  }
}

TEST_CASE("on distinct GPUs, NCCL's collectives equal the kernels'", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (!two_cuda_devices()) return;
  if (td::cuda::physical_device(0) == td::cuda::physical_device(1) || !par::nccl::built_with_nccl()) {
    td::testing::mark_skipped("needs two distinct GPUs and NCCL");
    return;
  }
  td::testing::reseed(106);
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kInt64}) {
    auto [on_cpu, on_gpu] = per_device({4097, 3}, dtype);
    std::vector<Tensor> expected = on_cpu;
    comm::all_reduce(expected);
    par::nccl::all_reduce(on_gpu);
    check_same(on_gpu, expected, td::detail::str_cat("nccl all_reduce ", dtype));
    Tensor sum = td::empty({4097, 3}, td::TensorOptions(dtype).device(cuda1));
    auto [cpu2, gpu2] = per_device({4097, 3}, dtype);
    par::nccl::reduce(gpu2, sum, 1);
    check_same({sum}, {comm::reduce_add(cpu2, cpu1)}, td::detail::str_cat("nccl reduce ", dtype));
    par::nccl::broadcast(gpu2, 0);
    check_same(gpu2, {cpu2[0], cpu2[0].to(cpu1)}, td::detail::str_cat("nccl broadcast ", dtype));
  }
}
