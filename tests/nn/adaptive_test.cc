// AdaptiveLogSoftmaxWithLoss against PyTorch 2.15: structure and printing, forward's output and
// loss, log_prob, predict, gradients, state_dict names; errors.
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::values;

namespace {

// PyTorch's module with 8 inputs, 10 classes, cutoffs {3, 6}, div_value 2 and a head bias, each
// parameter (in named_parameters order, salt 0, 1, ...) set to 0.3 sin(0.7 k + salt).
nn::AdaptiveLogSoftmaxWithLoss reference_module() {
  nn::AdaptiveLogSoftmaxWithLoss m(nn::AdaptiveLogSoftmaxWithLossOptions(8, 10, {3, 6}).div_value(2.0).head_bias(true));
  m->to(td::kFloat64);
  td::NoGradGuard no_grad;
  double salt = 0;
  for (auto& [name, p] : m->named_parameters()) {
    std::vector<double> v(p.numel());
    for (int64_t k = 0; k < p.numel(); ++k) v[k] = 0.3 * std::sin(0.7 * k + salt);
    Tensor(p).copy_(td::tensor(v, td::kFloat64).view(p.sizes()));
    salt += 1;
  }
  return m;
}

Tensor reference_input() {
  std::vector<double> v(48);
  for (int k = 0; k < 48; ++k) v[k] = std::sin(0.37 * k);
  return td::tensor(v, td::kFloat64).view({6, 8});
}

}  // namespace

TEST_CASE("AdaptiveLogSoftmaxWithLoss: PyTorch's structure, output, loss, log_prob, predict and gradients", "[cpu]") {
  nn::AdaptiveLogSoftmaxWithLoss m = reference_module();
  CHECK(m->str() ==
        "AdaptiveLogSoftmaxWithLoss(\n"
        "  (head): Linear(in_features=8, out_features=5, bias=True)\n"
        "  (tail): ModuleList(\n"
        "    (0): Sequential(\n"
        "      (0): Linear(in_features=8, out_features=4, bias=False)\n"
        "      (1): Linear(in_features=4, out_features=3, bias=False)\n"
        "    )\n"
        "    (1): Sequential(\n"
        "      (0): Linear(in_features=8, out_features=2, bias=False)\n"
        "      (1): Linear(in_features=2, out_features=4, bias=False)\n"
        "    )\n"
        "  )\n"
        ")");
  CHECK(m->state_dict().keys() == std::vector<std::string>{"head.weight", "head.bias", "tail.0.0.weight",
                                                           "tail.0.1.weight", "tail.1.0.weight", "tail.1.1.weight"});
  const Tensor x = reference_input().requires_grad_(true);
  const Tensor target = td::tensor(std::vector<int64_t>{0, 4, 9, 2, 6, 5});
  const nn::ASMoutput result = m->forward(x, target);
  check_close(result.output,
              {-1.7849527920609978, -3.053213548877554, -3.3321080062395163, -2.0257556855301555, -3.5030127279646495,
               -3.9610456247711663},
              1e-14, 0, "output");
  CHECK(result.loss.item<double>() == Approx(2.9433480642406735).epsilon(1e-14));
  td::autograd::backward({result.loss});
  check_close(x.grad().select(0, 0),
              {-0.03222240721059746, -0.04930263678490593, -0.04319506590432279, -0.01677218058741382,
               0.017538923332306746, 0.043601197555606694, 0.049157147280999895, 0.031593722538524716},
              1e-12, 1e-15, "input gradient");

  const Tensor log_prob = m->log_prob(reference_input());
  CHECK(log_prob.sizes() == td::Shape{6, 10});
  check_close(log_prob.select(0, 0),
              {-1.7849527920609978, -1.3555434829351691, -1.3002374851780703, -2.635679568413444, -2.6990595322500632,
               -2.9061241406277856, -3.7373209526865683, -3.6136112026668936, -3.5060970455118623, -3.593259047305601},
              1e-14, 0, "log_prob");
  check_close(log_prob.exp().sum(1), std::vector<double>(6, 1.0), 1e-14, 0, "probabilities sum to 1");
  // The output is log_prob at each target.
  check_close(result.output, values(log_prob.gather(1, target.unsqueeze(1)).squeeze(1)), 1e-14, 0,
              "output as log_prob");
  check_equal(m->predict(reference_input()), {2, 0, 2, 0, 2, 0});

  // One example: a 0-dim target and output.
  const nn::ASMoutput one = m->forward(reference_input().select(0, 1), td::tensor(std::vector<int64_t>{4}).view({}));
  CHECK(one.output.dim() == 0);
  CHECK(one.output.item<double>() == Approx(-3.0532135488775545).epsilon(1e-14));
  CHECK(one.loss.item<double>() == Approx(3.0532135488775545).epsilon(1e-14));
}

TEST_CASE("AdaptiveLogSoftmaxWithLoss predicts the argmax of log_prob where the head prefers a cluster", "[cpu]") {
  nn::AdaptiveLogSoftmaxWithLoss m = reference_module();
  {
    td::NoGradGuard no_grad;
    m->head->bias.copy_(td::tensor(std::vector<double>{0, 0, 0, 0.6, 0.2}, td::kFloat64));
  }
  td::manual_seed(4);
  const Tensor x = td::randn({40, 8}, td::kFloat64) * 2;
  const Tensor predicted = m->predict(x);
  const Tensor head_choice = m->head(x).argmax(1);
  CHECK((head_choice >= 3).any().item<bool>());  // some rows go through the clusters
  CHECK((head_choice < 3).any().item<bool>());
  check_equal(predicted, values(m->log_prob(x).argmax(1)));

  // gradcheck of the loss in the input and every parameter.
  const Tensor target = td::randint(0, 10, {12});
  const auto r =
      td::autograd::gradcheck([&](const std::vector<Tensor>& in) { return m->forward(in[0], target).output; },
                              {x.narrow(0, 0, 12).clone().requires_grad_(true)});
  INFO(r.report);
  CHECK(r.ok);
  const Tensor loss = m->forward(x.narrow(0, 0, 12), target).loss;
  td::autograd::backward({loss});
  for (const auto& [name, p] : m->named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
  }
}

TEST_CASE("AdaptiveLogSoftmaxWithLoss refuses bad cutoffs, shapes and targets", "[cpu]") {
  check_error(
      [] {
        nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(8, 10, {6, 3}));
      },
      {"AdaptiveLogSoftmaxWithLoss", "cutoffs", "increasing"});
  check_error(
      [] {
        nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(8, 10, {3, 10}));
      },
      {"cutoffs", "between 1 and n_classes-1"});
  check_error([] { nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(8, 10, {})); },
              {"cutoffs", "larger than 0"});
  nn::AdaptiveLogSoftmaxWithLoss m = reference_module();
  const Tensor x = reference_input();
  check_error(
      [&] {
        m->forward(x.narrow(0, 0, 2), td::tensor(std::vector<int64_t>{0, 10}));
      },
      {"Target values should be in [0, 9]", "[0, 10]"});
  check_error([&] { m->forward(x.narrow(0, 0, 2), td::tensor(std::vector<int64_t>{-1, 2})); }, {"[-1, 2]"});
  check_error([&] { m->forward(x, td::tensor(std::vector<int64_t>{0, 1})); }, {"same size in the batch dimension"});
  check_error([&] { m->forward(x, td::zeros({6, 2}, td::kInt64)); }, {"multi-target not supported"});
  check_error([&] { m->forward(x.unsqueeze(0), td::zeros({6}, td::kInt64)); }, {"1D target tensor expects 2D input"});
  check_error([&] { m->log_prob(x.select(0, 0)); }, {"log_prob", "[N, 8]"});
}
