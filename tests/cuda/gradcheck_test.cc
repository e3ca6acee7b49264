// Every differentiable op on cuda:0: forward values and gradients equal to the same computation on
// the CPU, and gradcheck and gradgradcheck (float64, central differences) with inputs and outputs on
// the device, for the cases of the shared table (tests/autograd/gradcheck_cases.h) that run on a GPU.
// [large]: the full sweeps, left out of the compute-sanitizer runs of tools/gpu/run.sh.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/autograd/gradcheck_cases.h"
#include "tests/cuda/cuda_testing.h"

namespace td = tandem;
namespace tt = td::testing;
namespace ct = td::cuda_testing;
using td::Tensor;
using td::autograd::gradcheck;
using td::autograd::gradgradcheck;

namespace {

// The same values in the same layouts on the device, requiring grad.
std::vector<Tensor> device_inputs(const std::vector<Tensor>& cpu) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : cpu) inputs.push_back(ct::twin(t.detach()).requires_grad_(true));
  return inputs;
}

// The shared table's cases that can run on a GPU.
std::vector<tt::GradcheckCase> cases() {
  std::vector<tt::GradcheckCase> out;
  for (const auto& c : tt::gradcheck_cases()) {
    if (!c.cpu_only) out.push_back(c);
  }
  return out;
}

// Forward and backward of every case on both devices, in one layout per case (the layouts taking
// turns) or, large, in each of three.
void same_as_cpu(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 202 : 102);
  const std::vector<tt::Layout> layouts = {tt::Layout::Contiguous, tt::Layout::Permuted, tt::Layout::Strided};
  const std::vector<tt::GradcheckCase> all = cases();
  for (size_t k = 0; k < all.size(); ++k) {
    const tt::GradcheckCase& c = all[k];
    for (size_t l = 0; l < layouts.size(); ++l) {
      if (!large && l != k % layouts.size()) continue;
      const tt::Layout layout = layouts[l];
      std::vector<Tensor> cpu = tt::gradcheck_inputs(c.inputs, layout);
      std::vector<Tensor> dev = device_inputs(cpu);
      const std::string what = c.name + " (" + tt::layout_name(layout) + ")";
      Tensor y_cpu = c.fn(cpu), y_dev = c.fn(dev);
      ct::check_close(y_dev, y_cpu, 1e-10, 1e-10, what + ": value");
      Tensor g = td::randn(y_cpu.sizes(), td::kFloat64);
      y_cpu.backward(g);
      y_dev.backward(g.to(ct::device()));
      for (size_t i = 0; i < cpu.size(); ++i) {
        INFO(what << ": gradient of input " << i);
        REQUIRE(cpu[i].grad().defined() == dev[i].grad().defined());
        if (!cpu[i].grad().defined()) continue;
        ct::check_close(dev[i].grad(), cpu[i].grad(), 1e-10, 1e-10, what + ": gradient of input " + std::to_string(i));
      }
    }
  }
}

// gradcheck of every `stride`-th case (all with stride 1), in the layouts given.
void gradcheck_cases(size_t stride, const std::vector<tt::Layout>& layouts, uint64_t salt) {
  ct::PoisonGuard poison;
  tt::reseed(salt);
  const std::vector<tt::GradcheckCase> all = cases();
  for (size_t k = 0; k < all.size(); k += stride) {
    const tt::GradcheckCase& c = all[k];
    for (auto layout : layouts) {
      auto inputs = device_inputs(tt::gradcheck_inputs(c.inputs, layout));
      INFO(c.name << " (" << tt::layout_name(layout) << ")");
      REQUIRE(c.fn(inputs).device() == ct::device());  // the op runs on the device, not behind its back
      auto result = gradcheck(c.fn, inputs);
      INFO(result.report);
      CHECK(result.ok);
    }
  }
}

}  // namespace

// First: they need no gradcheck, whose failures could stop the run.
TEST_CASE("values and gradients on the device equal the CPU's for every differentiable op", "[cuda][heavy]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  same_as_cpu(false);
}

TEST_CASE("values and gradients on the device equal the CPU's for every differentiable op and layout",
          "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  same_as_cpu(true);
}

TEST_CASE("gradcheck in float64 on the device, every sixth differentiable op", "[cuda][heavy]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  gradcheck_cases(6, {tt::Layout::Strided}, 104);
}

TEST_CASE("every differentiable op passes gradcheck in float64 on the device", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  gradcheck_cases(1, {tt::Layout::Contiguous, tt::Layout::Strided}, 100);
}

TEST_CASE("ops with second derivatives pass gradgradcheck on the device", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(101);
  for (const tt::GradcheckCase& c : cases()) {
    auto inputs = device_inputs(tt::gradcheck_inputs(c.inputs, tt::Layout::Permuted));
    auto result = gradgradcheck(c.fn, inputs);
    INFO(c.name << ": " << result.report);
    CHECK(result.ok);
  }
}

TEST_CASE("gradcheck on the device catches a wrong gradient and names the element", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(103);
  Tensor x = td::randn({3}, td::TensorOptions(td::kFloat64).device(ct::device())).requires_grad_(true);
  auto wrong = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 2;
    if (y.requires_grad()) y.register_hook([](const Tensor& g) { return g * 1.5; });
    return y;
  };
  auto result = gradcheck(wrong, {x});
  CHECK(!result.ok);
  CHECK_THAT(result.report, Catch::Matchers::Contains("input 0 element"));
  CHECK_THAT(result.report, Catch::Matchers::Contains("analytical 3"));
  CHECK_THAT(result.report, Catch::Matchers::Contains("numerical 2"));
  // The perturbations leave the input as it was.
  Tensor before = x.detach().cpu().clone();
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return in[0].exp(); }, {x}).ok);
  ct::check_equal(x.detach(), before, "input after gradcheck");
}

TEST_CASE("autograd::functional's Jacobians, Hessians and products on the device equal the CPU's", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(104);
  namespace AF = td::autograd::functional;
  const Tensor x_cpu = td::randn({5}, td::kFloat64), v_cpu = td::randn({5}, td::kFloat64);
  const Tensor x = ct::twin(x_cpu), v = ct::twin(v_cpu);
  auto f = [](const Tensor& t) { return t.softmax(0) * t.sin(); };
  auto g = [](const Tensor& t) { return t.logsumexp(0) + t.pow(3).sum(); };
  for (auto strategy : {AF::JacobianStrategy::reverse_mode, AF::JacobianStrategy::forward_mode}) {
    const Tensor j = AF::jacobian(f, x, false, false, strategy), h = AF::hessian(g, x, false, false, strategy);
    CHECK(j.device() == ct::device());
    tt::check_close(j, AF::jacobian(f, x_cpu, false, false, strategy), 1e-12, 1e-12, "jacobian");
    tt::check_close(h, AF::hessian(g, x_cpu, false, false, strategy), 1e-12, 1e-12, "hessian");
  }
  tt::check_close(AF::jvp(f, x, v).second, AF::jvp(f, x_cpu, v_cpu).second, 1e-12, 1e-12, "jvp");
  tt::check_close(AF::vjp(f, x, v).second, AF::vjp(f, x_cpu, v_cpu).second, 1e-12, 1e-12, "vjp");
  tt::check_close(AF::hvp(g, x, v).second, AF::hvp(g, x_cpu, v_cpu).second, 1e-12, 1e-12, "hvp");
  tt::check_close(AF::vhp(g, x, v).second, AF::vhp(g, x_cpu, v_cpu).second, 1e-12, 1e-12, "vhp");
}

TEST_CASE("gradcheck of a computation that crosses two CUDA devices", "[cuda][devices]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  if (td::cuda::device_count() < 2) {
    tt::mark_skipped("needs two CUDA devices (TANDEM_VISIBLE_DEVICES=0,0 makes two of one GPU)");
    return;
  }
  tt::reseed(105);
  Tensor a = td::randn({3, 4}, td::TensorOptions(td::kFloat64).device(ct::device())).requires_grad_(true);
  Tensor b = td::randn({4, 2}, td::TensorOptions(td::kFloat64).device(td::Device(td::kCUDA, 1))).requires_grad_(true);
  auto across = [](const std::vector<Tensor>& in) {
    Tensor there = td::mm(in[0].to(in[1].device()).exp(), in[1]);
    return there.to(in[0].device()) * in[0].sum(1, true);
  };
  auto r = gradcheck(across, {a, b});
  INFO(r.report);
  CHECK(r.ok);
  Tensor y = across({a, b});
  CHECK(y.device() == ct::device());
  y.sum().backward();
  CHECK(a.grad().device() == ct::device());
  CHECK(b.grad().device() == td::Device(td::kCUDA, 1));
}
