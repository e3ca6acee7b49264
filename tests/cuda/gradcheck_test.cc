// Every differentiable op on cuda:0: forward values and gradients equal to the same computation on
// the CPU, and gradcheck and gradgradcheck (float64, central differences) with inputs and outputs on
// the device. [large]: the full sweeps, left out of the compute-sanitizer runs of tools/gpu/run.sh.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/cuda/cuda_testing.h"

namespace td = tandem;
namespace tt = td::testing;
namespace ct = td::cuda_testing;
using td::Tensor;
using td::autograd::gradcheck;
using td::autograd::gradgradcheck;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Input {
  td::Shape shape;
  double lo = -2, hi = 2;
  bool layout_varies = true;  // also try a non-contiguous layout
};

struct Case {
  std::string name;
  std::vector<Input> inputs;
  Fn fn;
  bool second_order = true;
};

// A constant made on the CPU, where `x` lives: each function runs on either device.
Tensor on(const Tensor& x, const Tensor& constant) { return constant.to(x.device()); }

// Float64 inputs requiring grad, on the CPU, in a given layout.
std::vector<Tensor> cpu_inputs(const std::vector<Input>& specs, tt::Layout layout) {
  std::vector<Tensor> inputs;
  for (const Input& in : specs) {
    auto l = in.layout_varies ? layout : tt::Layout::Contiguous;
    inputs.push_back(tt::random_tensor(in.shape, td::kFloat64, l, in.lo, in.hi).requires_grad_(true));
  }
  return inputs;
}

// The same values in the same layouts on the device, requiring grad.
std::vector<Tensor> device_inputs(const std::vector<Tensor>& cpu) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : cpu) inputs.push_back(ct::twin(t.detach()).requires_grad_(true));
  return inputs;
}

// A value away from 0 (where abs, relu, sign... have kinks): uniform magnitude in [0.1, 2].
Input away_from_zero(td::Shape shape) { return {shape, 0.1, 2}; }

const std::vector<Case>& cases() {
  using V = const std::vector<Tensor>&;
  static const std::vector<Case> all = {
      // unary
      {"neg", {{{3, 4}}}, [](V x) { return -x[0]; }},
      {"abs", {away_from_zero({3, 4})},
       [](V x) { return td::abs(x[0] * on(x[0], td::tensor({1.0, -1.0, 1.0, -1.0}, td::kFloat64))); }},
      {"exp", {{{3, 4}}}, [](V x) { return td::exp(x[0]); }},
      {"log", {{{3, 4}, 0.2, 3}}, [](V x) { return td::log(x[0]); }},
      {"log1p", {{{3, 4}, -0.5, 3}}, [](V x) { return td::log1p(x[0]); }},
      {"sqrt", {{{3, 4}, 0.2, 3}}, [](V x) { return td::sqrt(x[0]); }},
      {"rsqrt", {{{3, 4}, 0.2, 3}}, [](V x) { return td::rsqrt(x[0]); }},
      {"sin", {{{3, 4}}}, [](V x) { return td::sin(x[0]); }},
      {"cos", {{{3, 4}}}, [](V x) { return td::cos(x[0]); }},
      {"tanh", {{{3, 4}}}, [](V x) { return td::tanh(x[0]); }},
      {"sigmoid", {{{3, 4}}}, [](V x) { return td::sigmoid(x[0]); }},
      {"relu", {away_from_zero({3, 4})}, [](V x) { return td::relu(x[0] - 1.05); }, false},
      {"gelu", {{{3, 4}}}, [](V x) { return td::gelu(x[0]); }},
      {"gelu tanh", {{{3, 4}}}, [](V x) { return td::gelu(x[0], "tanh"); }},
      {"silu", {{{3, 4}}}, [](V x) { return td::silu(x[0]); }},
      {"sign", {away_from_zero({5})}, [](V x) { return td::sign(x[0] - 1.05) * x[0]; }},
      {"reciprocal", {away_from_zero({3, 4})}, [](V x) { return td::reciprocal(x[0]); }},
      {"erf", {{{3, 4}}}, [](V x) { return td::erf(x[0]); }},
      {"pow scalar", {{{3, 4}, 0.2, 2}}, [](V x) { return td::pow(x[0], 2.5); }},
      {"pow scalar 0", {{{3}}}, [](V x) { return td::pow(x[0], 0) + x[0]; }},
      {"clamp", {{{4, 5}}}, [](V x) { return td::clamp(x[0], -1.0, 1.0); }, false},
      {"clamp min", {{{4, 5}}}, [](V x) { return x[0].clamp_min(0.5); }, false},
      // binary, with broadcasting
      {"add", {{{3, 4}}, {{4}}}, [](V x) { return td::add(x[0], x[1], 2.5); }},
      {"sub", {{{3, 1}}, {{1, 4}}}, [](V x) { return td::sub(x[0], x[1], 0.5); }},
      {"mul", {{{2, 3, 4}}, {{3, 1}}}, [](V x) { return x[0] * x[1]; }},
      {"div", {{{3, 4}}, away_from_zero({4})}, [](V x) { return x[0] / x[1]; }},
      {"pow", {{{3, 4}, 0.3, 2}, {{3, 4}}}, [](V x) { return td::pow(x[0], x[1]); }},
      {"scalar pow", {{{5}}}, [](V x) { return td::pow(2.0, x[0]); }},
      {"maximum", {{{12}}, {{12}}}, [](V x) { return td::maximum(x[0], x[1]); }, false},
      {"minimum", {{{3, 4}}, {{4}}}, [](V x) { return td::minimum(x[0], x[1]); }, false},
      {"scalar operands", {{{3, 4}}}, [](V x) { return (2.0 - x[0]) * 3 + 1 / (x[0] * x[0] + 1); }},
      {"0-dim operand", {{{3, 4}}, {{}}}, [](V x) { return x[0] * x[1] + x[1]; }},
      {"where", {{{3, 4}}, {{4}}}, [](V x) { return td::where(x[0] > 0, x[0], x[1] * 2); }},
      {"masked_fill", {{{3, 4}}}, [](V x) { return td::masked_fill(x[0], x[0] > 0.5, 2.0); }},
      // reductions
      {"sum", {{{3, 4, 5}}}, [](V x) { return x[0].sum(); }},
      {"sum dims", {{{3, 4, 5}}}, [](V x) { return x[0].sum({0, 2}); }},
      {"sum keepdim", {{{3, 4, 5}}}, [](V x) { return x[0].sum({-1}, true); }},
      {"mean", {{{3, 4, 5}}}, [](V x) { return x[0].mean({1}); }},
      {"prod", {{{2, 3}, 0.5, 2}}, [](V x) { return x[0].prod(); }},
      {"prod dim", {{{3, 4}, -2, 2}}, [](V x) { return x[0].prod(1); }},
      {"prod with zero", {{{3, 4}}},
       [](V x) { return td::masked_fill(x[0], on(x[0], td::eye(3, 4, td::kBool)), 0).prod(1); }, false},
      {"amax", {{{3, 4, 5}}}, [](V x) { return x[0].amax({0, 2}); }, false},
      {"amin", {{{3, 4}}}, [](V x) { return x[0].amin(); }, false},
      {"max", {{{3, 4}}}, [](V x) { return x[0].max(); }, false},
      {"max dim", {{{3, 4}}}, [](V x) { return std::get<0>(x[0].max(1)); }, false},
      {"min dim keepdim", {{{3, 4, 2}}}, [](V x) { return std::get<0>(x[0].min(0, true)); }, false},
      {"var", {{{3, 5}}}, [](V x) { return x[0].var({1}); }},
      {"var correction 0", {{{4, 5}}}, [](V x) { return x[0].var({}, 0); }},
      {"std", {{{3, 5}}}, [](V x) { return x[0].std({0}, 1, true); }},
      {"norm 2", {{{3, 4}}}, [](V x) { return x[0].norm(); }},
      {"norm 1", {away_from_zero({3, 4})}, [](V x) { return (x[0] - 1.05).norm(1, {1}); }, false},
      {"norm 3", {away_from_zero({3, 4})}, [](V x) { return x[0].norm(3, {0}); }},
      {"norm inf", {{{3, 4}}}, [](V x) { return x[0].norm(INFINITY, {1}); }, false},
      {"logsumexp", {{{3, 4}}}, [](V x) { return x[0].logsumexp({1}); }},
      {"cumsum", {{{3, 4}}}, [](V x) { return x[0].cumsum(1); }},
      // matrix products
      {"mm", {{{3, 4}}, {{4, 5}}}, [](V x) { return td::mm(x[0], x[1]); }},
      {"mm transposed", {{{4, 3}}, {{5, 4}}}, [](V x) { return td::mm(x[0].t(), x[1].t()); }},
      {"bmm", {{{2, 3, 4}}, {{2, 4, 2}}}, [](V x) { return td::bmm(x[0], x[1]); }},
      {"matmul vector", {{{4}}, {{4}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"matmul 3d 2d", {{{2, 3, 4}}, {{4, 2}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"matmul broadcast", {{{2, 1, 3, 4}}, {{3, 4, 2}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"addmm", {{{1, 5}}, {{3, 4}}, {{4, 5}}}, [](V x) { return td::addmm(x[0], x[1], x[2], 0.5, 2); }},
      {"linear", {{{3, 4}}, {{5, 4}}, {{5}}}, [](V x) { return td::nn::F::linear(x[0], x[1], x[2]); }},
      // views and copies
      {"view", {{{3, 4}, -2, 2, false}}, [](V x) { return x[0].view({2, 6}) * on(x[0], td::arange(6.0)); }},
      {"reshape copy", {{{3, 4}}}, [](V x) { return x[0].t().reshape({12}) * on(x[0], td::arange(12.0)); }},
      {"flatten", {{{2, 3, 4}}}, [](V x) { return x[0].flatten(1) * on(x[0], td::arange(12.0)); }},
      {"unflatten", {{{6, 2}, -2, 2, false}}, [](V x) { return x[0].unflatten(0, {2, 3}).sum(1); }},
      {"permute", {{{2, 3, 4}}},
       [](V x) { return x[0].permute({2, 0, 1}) * on(x[0], td::arange(3.0).view({1, 1, 3})); }},
      {"transpose", {{{3, 4}}}, [](V x) { return x[0].transpose(0, 1) * on(x[0], td::arange(3.0)); }},
      {"narrow", {{{5, 4}}}, [](V x) { return x[0].narrow(0, 1, 3) * 2; }},
      {"slice step", {{{7, 4}}}, [](V x) { return x[0].slice(0, 1, std::nullopt, 2).sum(0); }},
      {"select", {{{3, 4}}}, [](V x) { return x[0].select(1, -1) * x[0].select(0, 0).sum(); }},
      {"expand", {{{3, 1}}}, [](V x) { return x[0].expand({2, 3, 4}) * on(x[0], td::arange(4.0)); }},
      {"squeeze unsqueeze", {{{3, 1, 4}}},
       [](V x) { return x[0].squeeze(1).unsqueeze(0) * on(x[0], td::arange(4.0)); }},
      {"split", {{{7, 2}}},
       [](V x) {
         auto parts = x[0].split(3);
         return parts[0].sum() * 2 + parts[2].sum() * 3;
       }},
      {"chunk unbind", {{{4, 3}}}, [](V x) { return x[0].chunk(2)[1].unbind(1)[2] * 5; }},
      {"clone contiguous", {{{3, 4}}}, [](V x) { return x[0].t().contiguous().clone() * on(x[0], td::arange(3.0)); }},
      {"to the host and back", {{{3, 4}}},
       [](V x) { return (x[0].to(td::Device(td::kCPU)) * 2).to(x[0].device()) * x[0]; }},
      {"copy_ into a clone", {{{3}}, {{3, 3}}},
       [](V x) {
         Tensor y = x[1] * 1;
         y.select(0, 1).copy_(x[0]);
         return y;
       },
       false},
      {"cat", {{{2, 3}}, {{4, 3}}}, [](V x) { return td::cat({x[0], x[1] * 2}) * on(x[0], td::arange(3.0)); }},
      {"stack", {{{3}}, {{3}}}, [](V x) { return td::stack({x[0], x[1]}, 1) * on(x[0], td::arange(2.0)); }},
      {"index_select", {{{4, 3}}},
       [](V x) { return x[0].index_select(0, on(x[0], td::tensor({3, 0, 3}))) * on(x[0], td::arange(3.0)); }},
      {"gather", {{{3, 4}}}, [](V x) { return x[0].gather(1, on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}}))); }},
      {"scatter_add", {{{3, 4}}, {{3, 2}}},
       [](V x) { return x[0].scatter_add(1, on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}})), x[1] * x[1]); }},
      {"embedding", {{{5, 3}}},
       [](V x) { return td::embedding(x[0], on(x[0], td::tensor({{1, 4}, {1, 0}}))) * on(x[0], td::arange(3.0)); }},
      // neural-network ops
      {"softmax", {{{3, 4}}}, [](V x) { return x[0].softmax(1) * on(x[0], td::arange(4.0)); }},
      {"softmax dim 0", {{{3, 4}}}, [](V x) { return x[0].softmax(0) * on(x[0], td::arange(4.0)); }},
      {"log_softmax", {{{3, 4}}}, [](V x) { return x[0].log_softmax(-1) * on(x[0], td::arange(4.0)); }},
      {"max_pool2d", {{{1, 2, 5, 5}}}, [](V x) { return td::max_pool2d(x[0], 2, 2, 1); }, false},
      {"max_pool2d ceil dilation", {{{2, 6, 6}}}, [](V x) { return td::max_pool2d(x[0], 2, 2, 0, 2, true); }, false},
      {"avg_pool2d", {{{1, 2, 5, 5}}}, [](V x) { return td::avg_pool2d(x[0], 3, 2, 1); }},
      {"avg_pool2d options", {{{2, 5, 5}}}, [](V x) { return td::avg_pool2d(x[0], 2, 2, 1, true, false); }},
      {"im2col", {{{1, 2, 4, 5}}}, [](V x) { return td::im2col(x[0], {2, 3}, 1, 1, {2, 1}); }},
      {"col2im", {{{1, 8, 12}}}, [](V x) { return td::col2im(x[0], {4, 5}, 2, 1, 0, 1); }},
      {"im2col_matrix", {{{2, 2, 4, 5}}}, [](V x) { return td::im2col_matrix(x[0], {2, 3}, 1, 1, {2, 1}); }},
      {"col2im_matrix", {{{8, 24}}}, [](V x) { return td::col2im_matrix(x[0], 2, {4, 5}, 2, 1, 0, 1); }},
      {"conv2d", {{{1, 2, 5, 4}}, {{4, 1, 3, 2}}, {{4}}},
       [](V x) { return td::nn::F::conv2d(x[0], x[1], x[2], {2, 1}, 1, 1, 2); }},
      {"cross_entropy", {{{4, 5}}},
       [](V x) {
         return td::nn::F::cross_entropy(x[0], on(x[0], td::tensor({1, 4, 0, 4})), Tensor(), -100, td::kMean, 0.1);
       }},
      {"mse_loss", {{{3, 4}}, {{3, 4}}}, [](V x) { return td::nn::F::mse_loss(x[0], x[1]); }},
      {"layer_norm", {{{3, 5}}, {{5}}, {{5}}}, [](V x) { return td::nn::F::layer_norm(x[0], {5}, x[1], x[2]); }},
      // in-place ops on non-leaves
      {"in-place chain", {{{3, 4}}, {{4}}},
       [](V x) {
         Tensor y = x[0] * 1;
         y.mul_(x[1]).add_(x[1], 2).exp_();
         return y;
       }},
      {"in-place div_ and sigmoid_", {{{3, 4}}, away_from_zero({3, 4})},
       [](V x) {
         Tensor y = x[0] + 0;
         y.div_(x[1]).sigmoid_();
         return y;
       }},
      {"in-place square through an alias", {{{3, 4}}},
       [](V x) {
         Tensor y = x[0] * 2;
         y.mul_(y);
         return y;
       }},
  };
  return all;
}

// Forward and backward of every case on both devices, in one layout per case (the layouts taking
// turns) or, large, in each of three.
void same_as_cpu(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 202 : 102);
  const std::vector<tt::Layout> layouts = {tt::Layout::Contiguous, tt::Layout::Permuted, tt::Layout::Strided};
  for (size_t k = 0; k < cases().size(); ++k) {
    const Case& c = cases()[k];
    for (size_t l = 0; l < layouts.size(); ++l) {
      if (!large && l != k % layouts.size()) continue;
      const tt::Layout layout = layouts[l];
      std::vector<Tensor> cpu = cpu_inputs(c.inputs, layout);
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
  for (size_t k = 0; k < cases().size(); k += stride) {
    const Case& c = cases()[k];
    for (auto layout : layouts) {
      auto inputs = device_inputs(cpu_inputs(c.inputs, layout));
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
  TD_SKIP_UNLESS_CUDA();
  same_as_cpu(false);
}

TEST_CASE("values and gradients on the device equal the CPU's for every differentiable op and layout",
          "[cuda][large]") {
  TD_SKIP_UNLESS_CUDA();
  same_as_cpu(true);
}

TEST_CASE("gradcheck in float64 on the device, every sixth differentiable op", "[cuda][heavy]") {
  TD_SKIP_UNLESS_CUDA();
  gradcheck_cases(6, {tt::Layout::Strided}, 104);
}

TEST_CASE("every differentiable op passes gradcheck in float64 on the device", "[cuda][large]") {
  TD_SKIP_UNLESS_CUDA();
  gradcheck_cases(1, {tt::Layout::Contiguous, tt::Layout::Strided}, 100);
}

TEST_CASE("ops with second derivatives pass gradgradcheck on the device", "[cuda][large]") {
  TD_SKIP_UNLESS_CUDA();
  ct::PoisonGuard poison;
  tt::reseed(101);
  for (const Case& c : cases()) {
    if (!c.second_order) continue;
    auto inputs = device_inputs(cpu_inputs(c.inputs, tt::Layout::Permuted));
    auto result = gradgradcheck(c.fn, inputs);
    INFO(c.name << ": " << result.report);
    CHECK(result.ok);
  }
}

TEST_CASE("gradcheck on the device catches a wrong gradient and names the element", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
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

TEST_CASE("gradcheck of a computation that crosses two CUDA devices", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
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
