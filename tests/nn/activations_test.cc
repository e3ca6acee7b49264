// The activations added after the first ones (hardtanh to prelu): PyTorch 2.15's values, first and
// second derivatives in float64 at the points where their pieces meet, at both sides of them and
// at NaN; the modules' printing; PReLU's learned slopes; errors.
#include <cmath>
#include <iomanip>

#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;
using Values = std::vector<double>;

namespace {

// Equal within rtol and atol, NaN matching NaN; with no atol, zeros with their signs.
void same_values(const Tensor& got, const Values& expected, const std::string& what, double rtol, double atol = 0) {
  INFO(what);
  const Values v = values(got);
  REQUIRE(v.size() == expected.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i << ": " << std::setprecision(17) << v[i] << " against " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(v[i]));
    } else {
      CHECK(std::abs(v[i] - expected[i]) <= rtol * std::abs(expected[i]) + atol);
      if (expected[i] == 0 && atol == 0) CHECK(std::signbit(v[i]) == std::signbit(expected[i]));
    }
  }
}

struct Activation {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  Values y, grad, grad_grad;  // grad_grad empty: PyTorch has none
};

}  // namespace

TEST_CASE("the activations give PyTorch's values and derivatives where their pieces meet and at NaN", "[cpu]") {
  // PyTorch 2.15, float64, at x = -4, -3, -1, 0, 1, 3, 4, 6, 7, NaN: f(x), f'(x) and f''(x), each
  // from autograd (the derivatives of sum(f(x))).
  const std::vector<Activation> activations = {
      {"hardtanh",
       [](const Tensor& x) { return F::hardtanh(x); },
       {-1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, NAN},
       {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0},
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
      {"relu6",
       [](const Tensor& x) { return F::relu6(x); },
       {0.0, 0.0, 0.0, 0.0, 1.0, 3.0, 4.0, 6.0, 6.0, NAN},
       {0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0},
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
      {"hardsigmoid",
       [](const Tensor& x) { return F::hardsigmoid(x); },
       {0.0, 0.0, 0.3333333333333333, 0.5, 0.6666666666666666, 1.0, 1.0, 1.0, 1.0, NAN},
       // PyTorch's kernels multiply by 1/6 rounded to float32, in float64 too.
       {0.0, 0.0, 0.1666666716337204, 0.1666666716337204, 0.1666666716337204, 0.0, 0.0, 0.0, 0.0, 0.0},
       {}},
      {"hardswish",
       [](const Tensor& x) { return F::hardswish(x); },
       {-0.0, -0.0, -0.3333333333333333, 0.0, 0.6666666666666666, 3.0, 4.0, 6.0, 7.0, NAN},
       {0.0, 0.0, 0.16666666666666669, 0.5, 0.8333333333333333, 1.0, 1.0, 1.0, 1.0, 1.0},
       {0.0, 0.0, 0.3333333333333333, 0.3333333333333333, 0.3333333333333333, 0.0, 0.0, 0.0, 0.0, 0.0}},
      {"mish",
       [](const Tensor& x) { return F::mish(x); },
       {-0.07259174079202535, -0.1456474612756246, -0.30340146137410895, 0.0, 0.8650983882673103, 2.9865350049679575,
        3.9974128069762385, 5.999926634065252, 6.999988379809741, NAN},
       {-0.053773209793480325, -0.09339311453232084, 0.059216755877395, 0.6, 1.0490362200997922, 1.0211069109294435,
        1.00443287690375, 1.0001341405062103, 1.0000215591608892, NAN},
       {-0.03462003174925449, -0.03992871324212924, 0.34970567367064487, 0.64, 0.1846857644733283,
        -0.030266496639326814, -0.007338967565869757, -0.000242857626120053, -3.9740783778037287e-05, NAN}},
      {"logsigmoid",
       [](const Tensor& x) { return F::logsigmoid(x); },
       {-4.0181499279178094, -3.048587351573742, -1.3132616875182228, -0.6931471805599453, -0.31326168751822286,
        -0.04858735157374206, -0.018149927917809738, -0.0024756851377304495, -0.0009114664537742447, NAN},
       {0.9820137900379085, 0.9525741268224333, 0.7310585786300049, 0.5, 0.2689414213699951, 0.04742587317756679,
        0.017986209962091555, 0.0024726231566347748, 0.0009110511944006454, NAN},
       {-0.017662706213291118, -0.04517665973091214, -0.19661193324148185, -0.25, -0.19661193324148185,
        -0.045176659730912, -0.017662706213291107, -0.002466509291359931, -0.000910221180121784, NAN}},
      {"softsign",
       [](const Tensor& x) { return F::softsign(x); },
       {-0.8, -0.75, -0.5, 0.0, 0.5, 0.75, 0.8, 0.8571428571428571, 0.875, NAN},
       {0.04000000000000001, 0.0625, 0.25, 1.0, 0.25, 0.0625, 0.04000000000000001, 0.020408163265306117, 0.015625, NAN},
       {0.016, 0.03125, 0.25, -0.0, -0.25, -0.03125, -0.016, -0.005830903790087463, -0.00390625, NAN}},
      {"tanhshrink",
       [](const Tensor& x) { return F::tanhshrink(x); },
       {-3.000670700260933, -2.0049452463132695, -0.23840584404423515, 0.0, 0.23840584404423515, 2.0049452463132695,
        3.000670700260933, 5.000012288349204, 6.0000016630560555, NAN},
       {0.9986590493169741, 0.9901339628345598, 0.5800256583859739, 0.0, 0.5800256583859739, 0.9901339628345598,
        0.9986590493169741, 0.9999754234525947, 0.9999966738906552, NAN},
       {-0.0026801026141058254, -0.019634494363042387, -0.6397000084492246, 0.0, 0.6397000084492246,
        0.019634494363042387, 0.0026801026141058254, 4.9152490800212435e-05, 6.6522076267251e-06, NAN}},
      {"hardshrink",
       [](const Tensor& x) { return F::hardshrink(x, 1.0); },
       {-4.0, -3.0, 0.0, 0.0, 0.0, 3.0, 4.0, 6.0, 7.0, NAN},
       {1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0},
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
      {"softshrink",
       [](const Tensor& x) { return F::softshrink(x, 1.0); },
       {-3.0, -2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 5.0, 6.0, NAN},
       {1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0},
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
      {"threshold",
       [](const Tensor& x) { return F::threshold(x, 1.0, -2.0); },
       {-2.0, -2.0, -2.0, -2.0, -2.0, 3.0, 4.0, 6.0, 7.0, NAN},
       {0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0},
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
      {"hardtanh(-2, 3)",
       [](const Tensor& x) { return F::hardtanh(x, -2, 3); },
       {-2.0, -2.0, -1.0, 0.0, 1.0, 3.0, 3.0, 3.0, 3.0, NAN},
       {0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0},
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
  };
  for (const Activation& a : activations) {
    Tensor x = td::tensor(Values{-4, -3, -1, 0, 1, 3, 4, 6, 7, NAN}, td::kFloat64).requires_grad_(true);
    const Tensor y = a.fn(x);
    same_values(y, a.y, std::string(a.name) + " values", 4e-16);
    const Tensor g = td::autograd::grad({y.sum()}, {x}, {}, true, true)[0];
    // Derivatives that compose several ops round differently from PyTorch's closed forms.
    same_values(g, a.grad, std::string(a.name) + " gradient", 1e-14);
    if (a.grad_grad.empty()) continue;
    // A gradient that does not depend on x (piecewise constant) has the second derivative 0.
    const Tensor gg = g.requires_grad() ? td::autograd::grad({g.sum()}, {x}, {}, false, false, true)[0] : Tensor();
    // A second derivative in the tails is a small difference of terms near 1: rounding of those
    // terms (1e-15) bounds its error, not its own size.
    same_values(gg.defined() ? gg : td::zeros_like(x), a.grad_grad, std::string(a.name) + " second derivative",
                1e-13, 1e-15);
  }
}

TEST_CASE("glu, softmin and prelu: values and gradients as their definitions give", "[cpu]") {
  td::testing::reseed(95);
  const Tensor x = td::testing::random_tensor({2, 6, 3}, td::kFloat64);
  check_close(F::glu(x, 1), values(x.narrow(1, 0, 3) * td::sigmoid(x.narrow(1, 3, 3))), 0, 0);
  check_close(F::glu(x.transpose(1, 2)),
              values(x.transpose(1, 2).narrow(2, 0, 3) * td::sigmoid(x.transpose(1, 2).narrow(2, 3, 3))), 0, 0);
  check_close(F::softmin(x, 1), values(td::softmax(-x, 1)), 0, 0);
  // PReLU: one slope, or one per channel, learned: the slope's gradient sums x * g where x <= 0.
  nn::PReLU one;
  CHECK(one->str() == "PReLU(num_parameters=1)");
  CHECK(values(one->weight) == Values{0.25});
  nn::PReLU per_channel(6, 0.1);
  CHECK(per_channel->str() == "PReLU(num_parameters=6)");
  per_channel->to(td::kFloat64);  // 0.1 in float32, widened
  const Tensor slope = per_channel->weight.detach().view({1, 6, 1});
  Tensor leaf = x.clone().requires_grad_(true);
  const Tensor y = per_channel(leaf);
  check_close(y, values(td::where(x > 0, x, x * slope)), 0, 0);
  y.sum().backward();
  check_close(per_channel->weight.grad(), values(td::where(x > 0, td::zeros_like(x), x).sum({0, 2})), 1e-15, 0);
  check_close(leaf.grad(), values(td::where(x > 0, td::ones_like(x), slope.expand(x.sizes()))), 0, 0);
  auto copy = std::dynamic_pointer_cast<nn::PReLUImpl>(per_channel->clone());
  REQUIRE(copy != nullptr);
  CHECK_FALSE(copy->weight.is_alias_of(per_channel->weight));
  check_close(copy->weight, values(per_channel->weight), 0, 0);
}

TEST_CASE("the activation modules print as PyTorch's and compute F::'s", "[cpu]") {
  CHECK(nn::Hardtanh()->str() == "Hardtanh(min_val=-1.0, max_val=1.0)");
  CHECK(nn::Hardtanh(-2.5, 3.0)->str() == "Hardtanh(min_val=-2.5, max_val=3.0)");
  CHECK(nn::ReLU6()->str() == "ReLU6()");
  CHECK(nn::Hardsigmoid()->str() == "Hardsigmoid()");
  CHECK(nn::Hardswish()->str() == "Hardswish()");
  CHECK(nn::Mish()->str() == "Mish()");
  CHECK(nn::LogSigmoid()->str() == "LogSigmoid()");
  CHECK(nn::Softsign()->str() == "Softsign()");
  CHECK(nn::Tanhshrink()->str() == "Tanhshrink()");
  CHECK(nn::Hardshrink()->str() == "Hardshrink(0.5)");
  CHECK(nn::Softshrink(0.3)->str() == "Softshrink(0.3)");
  CHECK(nn::Threshold(0.1, 20)->str() == "Threshold(threshold=0.1, value=20.0)");
  CHECK(nn::GLU()->str() == "GLU(dim=-1)");
  CHECK(nn::Softmin(1)->str() == "Softmin(dim=1)");
  const Tensor x = td::testing::random_tensor({4, 6}, td::kFloat32);
  check_close(nn::Hardswish()(x), values(F::hardswish(x)), 0, 0);
  check_close(nn::Threshold(0.1, 20)(x), values(F::threshold(x, 0.1, 20)), 0, 0);
  check_close(nn::Hardtanh(-0.5, 0.5)(x), values(F::hardtanh(x, -0.5, 0.5)), 0, 0);
  nn::Sequential model(nn::Linear(6, 6), nn::Mish(), nn::GLU(), nn::PReLU(), nn::Linear(3, 2), nn::LogSigmoid());
  CHECK(model(x).sizes() == Shape{4, 2});
  CHECK(model->clone()->str() == model->str());
}

TEST_CASE("the activations' errors name the op", "[cpu]") {
  check_error([] { F::hardtanh(td::ones({2}), 1, -1); }, {"hardtanh", "min_val (1)", "max_val (-1)"});
  check_error([] { nn::Hardtanh(1, -1); }, {"Hardtanh", "min_val"});
  check_error([] { nn::Hardtanh(1, 1); }, {"Hardtanh", "below"});
  check_error([] { F::prelu(td::ones({2, 3}), td::ones({1, 1})); }, {"prelu", "[1, 1]"});
  check_error([] { F::glu(td::ones({2, 3})); }, {"glu", "dim 1", "[2, 3]", "odd size 3"});
  check_error([] { F::glu(td::ones({2, 4}), 2); }, {"glu", "dim"});
  check_error([] { F::softshrink(td::ones({2}), -1); }, {"softshrink", "lambd", "-1"});
  check_error([] { F::mish(td::ones({2}, td::kInt64)); }, {"mish", "floating", "int64"});
  check_error([] { F::prelu(td::ones({2, 3}), td::ones({2})); }, {"prelu", "[2]", "one per channel", "3", "[2, 3]"});
  check_error([] { F::prelu(td::ones({2, 3}), td::ones({3}, td::kFloat64)); }, {"prelu", "float64", "float32"});
  check_error([] { nn::PReLU(0); }, {"PReLU", "num_parameters", "0"});
}
