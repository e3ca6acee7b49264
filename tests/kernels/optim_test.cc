// The fused optimizer steps (kernels/optim.h) against the op-by-op steps of nn/optim (which match
// PyTorch's arithmetic): the same parameters, bit for bit, after several steps, on the CPU and on
// a GPU. SGD and Adam take the fused step by default; fused(false) gives the op-by-op one.
#include <cmath>
#include <limits>

#include "kernels/optim.h"
#include "tests/cuda/cuda_testing.h"
#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;

namespace {

struct Params {
  std::vector<Tensor> values, grads;
};

// Three parameters of awkward sizes and their gradients for `steps` steps.
std::vector<Params> problem(td::DType dtype, int steps) {
  std::vector<Params> out(steps);
  const std::vector<td::Shape> shapes = {{7}, {33, 5}, {1}};
  std::vector<Tensor> start;
  for (const auto& s : shapes) start.push_back(td::testing::random_tensor(s, dtype));
  for (int k = 0; k < steps; ++k) {
    out[k].values = start;
    for (const auto& s : shapes) out[k].grads.push_back(td::testing::random_tensor(s, dtype));
  }
  return out;
}

std::vector<Tensor> leaves(const std::vector<Tensor>& values, td::Device device) {
  std::vector<Tensor> out;
  for (const Tensor& v : values) out.push_back(v.to(device).clone().requires_grad_(true));
  return out;
}

void set_grads(std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i].to(params[i].device()).clone();
}

// Bit for bit (check_close's report of the worst element, with no tolerance).
void check_same_bits(const Tensor& actual, const Tensor& expected, const std::string& what) {
  CHECK(td::testing::sign_bits(actual) == td::testing::sign_bits(expected));
  td::testing::check_close(actual, expected, 0, 0, what);
}

// `steps` steps, optimizer k % n of each list at step k, both lists' parameters given the same
// random gradients first (shapes: the parameters'), compared bit for bit after each step.
void step_in_turns(std::vector<Tensor>& params, const std::vector<td::optim::Optimizer*>& optimizers,
                   std::vector<Tensor>& reference_params, const std::vector<td::optim::Optimizer*>& references,
                   const std::vector<td::Shape>& shapes, td::DType dtype, int steps) {
  for (int k = 0; k < steps; ++k) {
    std::vector<Tensor> grads;
    for (const auto& s : shapes) grads.push_back(td::testing::random_tensor(s, dtype));
    set_grads(params, grads);
    set_grads(reference_params, grads);
    optimizers[k % optimizers.size()]->step();
    references[k % references.size()]->step();
    for (size_t i = 0; i < params.size(); ++i) {
      check_same_bits(params[i].detach().cpu(), reference_params[i].detach(),
                      td::detail::str_cat(dtype, " step ", k, " param ", i));
    }
  }
}

}  // namespace

TEST_CASE("fused SGD steps give the op-by-op steps' bits for every option", "[cpu]") {
  td::testing::reseed(31);
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    for (double momentum : {0.0, 0.9}) {
      for (double dampening : {0.0, 0.25}) {
        for (bool nesterov : {false, true}) {
          if (nesterov && (momentum == 0 || dampening != 0)) continue;
          for (double weight_decay : {0.0, 0.01}) {
            for (bool maximize : {false, true}) {
              const std::string what = td::detail::str_cat(dtype, " momentum ", momentum, " dampening ", dampening,
                                                            " nesterov ", nesterov, " wd ", weight_decay, " maximize ",
                                                            maximize);
              auto steps = problem(dtype, 3);
              std::vector<Tensor> reference = leaves(steps[0].values, td::Device("cpu"));
              td::optim::SGD sgd(reference, td::optim::SGDOptions(0.1).momentum(momentum).dampening(dampening)
                                                .nesterov(nesterov).weight_decay(weight_decay)
                                                .maximize(maximize).fused(false));
              std::vector<Tensor> fused, bufs;
              for (const Tensor& v : steps[0].values) {
                fused.push_back(v.clone());
                bufs.push_back(td::zeros_like(v));
              }
              for (int k = 0; k < 3; ++k) {
                set_grads(reference, steps[k].grads);
                sgd.step();
                td::kernels::sgd_step_(fused, steps[k].grads, bufs, std::vector<bool>(3, k == 0),
                                       td::kernels::SgdStep{0.1, momentum, dampening, weight_decay, nesterov, maximize});
                for (size_t i = 0; i < fused.size(); ++i) {
                  check_same_bits(fused[i], reference[i].detach(),
                                  what + " step " + std::to_string(k) + " param " + std::to_string(i));
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("fused Adam and AdamW steps give the op-by-op steps' bits, with and without amsgrad", "[cpu]") {
  td::testing::reseed(32);
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    for (bool decoupled : {false, true}) {
      for (bool amsgrad : {false, true}) {
        for (double weight_decay : {0.0, 0.05}) {
          for (double beta1 : {0.9, 0.3}) {  // both of torch.lerp's branches
            for (bool maximize : {false, true}) {
              const std::string what = td::detail::str_cat(dtype, decoupled ? " AdamW" : " Adam", " amsgrad ", amsgrad,
                                                            " wd ", weight_decay, " beta1 ", beta1, " maximize ",
                                                            maximize);
              auto steps = problem(dtype, 4);
              std::vector<Tensor> reference = leaves(steps[0].values, td::Device("cpu"));
              std::unique_ptr<td::optim::Optimizer> opt;
              if (decoupled) {
                opt = std::make_unique<td::optim::AdamW>(
                    reference, td::optim::AdamWOptions(0.01).betas({beta1, 0.99}).weight_decay(weight_decay)
                                   .amsgrad(amsgrad).maximize(maximize).fused(false));
              } else {
                opt = std::make_unique<td::optim::Adam>(
                    reference, td::optim::AdamOptions(0.01).betas({beta1, 0.99}).weight_decay(weight_decay)
                                   .amsgrad(amsgrad).maximize(maximize).fused(false));
              }
              std::vector<Tensor> fused, m, v, v_max;
              for (const Tensor& x : steps[0].values) {
                fused.push_back(x.clone());
                m.push_back(td::zeros_like(x));
                v.push_back(td::zeros_like(x));
                v_max.push_back(td::zeros_like(x));
              }
              for (int k = 0; k < 4; ++k) {
                set_grads(reference, steps[k].grads);
                opt->step();
                td::kernels::adam_step_(fused, steps[k].grads, m, v, v_max, std::vector<int64_t>(3, k + 1),
                                        td::kernels::AdamStep{0.01, beta1, 0.99, 1e-8, weight_decay, decoupled,
                                                              amsgrad, maximize});
                for (size_t i = 0; i < fused.size(); ++i) {
                  check_same_bits(fused[i], reference[i].detach(),
                                  what + " step " + std::to_string(k) + " param " + std::to_string(i));
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("CPU fused steps over tensors that the thread pool splits, empty ones among them", "[cpu]") {
  // The tensors are one range for the pool, in chunks of 16384 elements: chunks end inside
  // tensors and between them, and empty tensors lie on the edges. SGD and Adam by default (the
  // fused step) against fused(false), bit for bit, over several steps of each kind.
  td::testing::reseed(36);
  const std::vector<td::Shape> shapes = {{0}, {1}, {16385}, {0}, {7, 3}, {100003}, {0}};
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    std::vector<Tensor> start;
    for (const auto& s : shapes) start.push_back(td::testing::random_tensor(s, dtype));
    std::vector<Tensor> fused = leaves(start, td::Device("cpu")), op_by_op = leaves(start, td::Device("cpu"));
    td::optim::SGD sgd(fused, td::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01));
    td::optim::SGD sgd_ref(op_by_op,
                           td::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01).fused(false));
    td::optim::AdamW adamw(fused, td::optim::AdamWOptions(0.01).amsgrad(true));
    td::optim::AdamW adamw_ref(op_by_op, td::optim::AdamWOptions(0.01).amsgrad(true).fused(false));
    td::optim::Adam adam(fused, td::optim::AdamOptions(0.01).betas({0.3, 0.99}).weight_decay(0.1).maximize(true));
    td::optim::Adam adam_ref(op_by_op, td::optim::AdamOptions(0.01).betas({0.3, 0.99}).weight_decay(0.1)
                                           .maximize(true).fused(false));
    step_in_turns(fused, {&sgd, &adamw, &adam}, op_by_op, {&sgd_ref, &adamw_ref, &adam_ref}, shapes, dtype, 6);
  }
}

TEST_CASE("CPU fused steps take weight decay where the option is nonzero, also where it rounds to 0", "[cpu]") {
  // 1e-50 is 0 in float32, but the op-by-op step adds 0 * p to the gradient all the same: NaN for
  // an infinite parameter, +0 for a gradient of -0. The fused step decides as it does.
  Tensor start = td::tensor(std::vector<float>{std::numeric_limits<float>::infinity(), 1.0f, -2.0f});
  Tensor grad = td::tensor(std::vector<float>{-0.0f, -0.0f, 1.0f});
  for (bool adam : {false, true}) {
    std::vector<Tensor> fused = leaves({start}, td::Device("cpu")), op_by_op = leaves({start}, td::Device("cpu"));
    std::unique_ptr<td::optim::Optimizer> under_test, reference;
    if (adam) {
      under_test = std::make_unique<td::optim::Adam>(fused, td::optim::AdamOptions(0.1).weight_decay(1e-50));
      reference = std::make_unique<td::optim::Adam>(op_by_op,
                                                    td::optim::AdamOptions(0.1).weight_decay(1e-50).fused(false));
    } else {
      under_test = std::make_unique<td::optim::SGD>(fused, td::optim::SGDOptions(0.1).weight_decay(1e-50));
      reference = std::make_unique<td::optim::SGD>(op_by_op, td::optim::SGDOptions(0.1).weight_decay(1e-50).fused(false));
    }
    set_grads(fused, {grad});
    set_grads(op_by_op, {grad});
    under_test->step();
    reference->step();
    CHECK(std::isnan(td::testing::values(op_by_op[0])[0]));
    check_same_bits(fused[0].detach(), op_by_op[0].detach(), adam ? "Adam" : "SGD");
  }
}

TEST_CASE("fused steps check their lists and change nothing when they refuse", "[cpu]") {
  Tensor p = td::ones({3}), g = td::ones({3}), b = td::zeros({3});
  td::testing::Snapshot before(p);
  td::testing::check_error([&] { td::kernels::sgd_step_({p}, {}, {}, {}, td::kernels::SgdStep{0.1}); },
                           {"sgd_step_", "0 grads for 1 parameters"});
  td::testing::check_error([&] { td::kernels::sgd_step_({p}, {td::ones({4})}, {}, {}, td::kernels::SgdStep{0.1}); },
                           {"sgd_step_", "grads 0", "[4]", "[3]"});
  td::testing::check_error([&] { td::kernels::sgd_step_({p}, {g.to(td::kFloat64)}, {}, {}, td::kernels::SgdStep{0.1}); },
                           {"sgd_step_", "float64"});
  td::testing::check_error(
      [&] { td::kernels::sgd_step_({p.to(td::kInt64)}, {g.to(td::kInt64)}, {}, {}, td::kernels::SgdStep{0.1}); },
      {"sgd_step_", "float32 or float64", "int64"});
  td::testing::check_error([&] { td::kernels::adam_step_({p}, {g}, {b}, {b}, {}, {0}, td::kernels::AdamStep{0.1}); },
                           {"adam_step_", "start at 1"});
  td::testing::check_error(
      [&] { td::kernels::adam_step_({p}, {g}, {b}, {b}, {}, {1}, td::kernels::AdamStep{0.1, 0.9, 0.99, 1e-8, 0, false, true}); },
      {"adam_step_", "0 max_exp_avg_sqs for 1 parameters"});
  before.check_unchanged(p);
}

TEST_CASE("SGD and Adam on a GPU take the fused step and end where the CPU's op-by-op steps do", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  td::testing::reseed(33);
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    auto steps = problem(dtype, 5);
    std::vector<Tensor> cpu = leaves(steps[0].values, td::Device("cpu"));
    std::vector<Tensor> gpu = leaves(steps[0].values, td::cuda_testing::device());
    td::optim::SGD sgd_cpu(cpu, td::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01).fused(false));
    td::optim::SGD sgd_gpu(gpu, td::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01));
    td::optim::AdamW adam_cpu(cpu, td::optim::AdamWOptions(0.01).amsgrad(true).fused(false));
    td::optim::AdamW adam_gpu(gpu, td::optim::AdamWOptions(0.01).amsgrad(true));
    for (int k = 0; k < 5; ++k) {
      set_grads(cpu, steps[k].grads);
      set_grads(gpu, steps[k].grads);
      const uint32_t version = gpu[0].version();
      (k % 2 ? static_cast<td::optim::Optimizer&>(adam_cpu) : sgd_cpu).step();
      (k % 2 ? static_cast<td::optim::Optimizer&>(adam_gpu) : sgd_gpu).step();
      CHECK(gpu[0].version() > version);
      for (size_t i = 0; i < gpu.size(); ++i) {
        CHECK(gpu[i].device() == td::cuda_testing::device());
        check_same_bits(gpu[i].detach().cpu(), cpu[i].detach(), td::detail::str_cat(dtype, " step ", k, " param ", i));
      }
    }
  }
}

TEST_CASE("the fused steps on a GPU give the CPU's fused steps bit for bit", "[cuda]") {
  // One functor on both (kernels/functors.h), every multiply-add an explicit fma, the scalars
  // computed once on the host: nothing is left to either compiler's choice of fusing.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  td::testing::reseed(35);
  const td::Device gpu_device = td::cuda_testing::device();
  auto on_gpu = [&](const std::vector<Tensor>& ts) {
    std::vector<Tensor> out;
    for (const Tensor& t : ts) out.push_back(t.to(gpu_device));
    return out;
  };
  auto check_same = [](const std::vector<Tensor>& gpu, const std::vector<Tensor>& cpu, const std::string& what) {
    for (size_t i = 0; i < cpu.size(); ++i) {
      INFO(what << " tensor " << i);
      CHECK(td::testing::values(gpu[i]) == td::testing::values(cpu[i]));
    }
  };
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    auto steps = problem(dtype, 4);
    std::vector<Tensor> params, bufs, m, v, v_max;
    for (const Tensor& x : steps[0].values) {
      params.push_back(x.clone());
      bufs.push_back(td::zeros_like(x));
      m.push_back(td::zeros_like(x));
      v.push_back(td::zeros_like(x));
      v_max.push_back(td::zeros_like(x));
    }
    std::vector<Tensor> g_params = on_gpu(params), g_bufs = on_gpu(bufs), g_m = on_gpu(m), g_v = on_gpu(v),
                        g_v_max = on_gpu(v_max);
    const td::kernels::SgdStep sgd{0.05, 0.9, 0.25, 0.01, false, false};
    const td::kernels::SgdStep nesterov{0.05, 0.9, 0.0, 0.01, true, true};
    const td::kernels::AdamStep adam{0.01, 0.9, 0.99, 1e-8, 0.05, false, true, false};
    const td::kernels::AdamStep adamw{0.01, 0.3, 0.99, 1e-8, 0.05, true, false, true};
    for (int k = 0; k < 4; ++k) {
      const std::string what = td::detail::str_cat(dtype, " step ", k);
      const std::vector<Tensor>& grads = steps[k].grads;
      const std::vector<Tensor> g_grads = on_gpu(grads);
      const std::vector<bool> first(3, k == 0);
      td::kernels::sgd_step_(params, grads, bufs, first, k % 2 ? nesterov : sgd);
      td::kernels::sgd_step_(g_params, g_grads, g_bufs, first, k % 2 ? nesterov : sgd);
      const std::vector<int64_t> count(3, k + 1);
      td::kernels::adam_step_(params, grads, m, v, v_max, count, k % 2 ? adamw : adam);
      td::kernels::adam_step_(g_params, g_grads, g_m, g_v, g_v_max, count, k % 2 ? adamw : adam);
      check_same(g_params, params, what + " parameters");
      check_same(g_bufs, bufs, what + " momentum");
      check_same(g_m, m, what + " first moment");
      check_same(g_v, v, what + " second moment");
    }
  }
}

TEST_CASE("fused GPU steps over more tensors than one launch takes, of awkward and large sizes", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  td::testing::reseed(34);
  // 20 tensors: two launches (16 a launch); fresh GPU memory poisoned, so a momentum buffer or
  // moment the first step fails to write reads back as NaN.
  td::testing::PoisonGuard poison;
  std::vector<td::Shape> shapes;
  for (int i = 0; i < 19; ++i) shapes.push_back({1 + 7 * i});
  shapes.push_back({1000003});
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    std::vector<Tensor> start;
    for (const auto& s : shapes) start.push_back(td::testing::random_tensor(s, dtype));
    std::vector<Tensor> cpu = leaves(start, td::Device("cpu")), gpu = leaves(start, td::cuda_testing::device());
    // The CPU's op-by-op steps against the GPU's fused ones.
    td::optim::SGD sgd_cpu(cpu,
                           td::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01).fused(false));
    td::optim::SGD sgd_gpu(gpu, td::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.01));
    td::optim::SGD damped_cpu(cpu, td::optim::SGDOptions(0.02).momentum(0.5).dampening(0.3).fused(false));
    td::optim::SGD damped_gpu(gpu, td::optim::SGDOptions(0.02).momentum(0.5).dampening(0.3));
    td::optim::Adam adam_cpu(cpu, td::optim::AdamOptions(0.01).weight_decay(0.1).fused(false));
    td::optim::Adam adam_gpu(gpu, td::optim::AdamOptions(0.01).weight_decay(0.1));
    td::optim::SGD ascend_cpu(cpu,
                              td::optim::SGDOptions(0.02).momentum(0.5).dampening(0.3).maximize(true).fused(false));
    td::optim::SGD ascend_gpu(gpu, td::optim::SGDOptions(0.02).momentum(0.5).dampening(0.3).maximize(true));
    td::optim::Adam adam_ascend_cpu(cpu, td::optim::AdamOptions(0.01).weight_decay(0.1).maximize(true).fused(false));
    td::optim::Adam adam_ascend_gpu(gpu, td::optim::AdamOptions(0.01).weight_decay(0.1).maximize(true));
    // No momentum: the kernel is given no buffers.
    td::optim::SGD plain_cpu(cpu, td::optim::SGDOptions(0.03).weight_decay(0.02).fused(false));
    td::optim::SGD plain_gpu(gpu, td::optim::SGDOptions(0.03).weight_decay(0.02));
    step_in_turns(gpu, {&sgd_gpu, &damped_gpu, &adam_gpu, &ascend_gpu, &adam_ascend_gpu, &plain_gpu}, cpu,
                  {&sgd_cpu, &damped_cpu, &adam_cpu, &ascend_cpu, &adam_ascend_cpu, &plain_cpu}, shapes, dtype, 12);
  }
}
