// td::standard_gamma and its gradient: the draws follow Gamma(alpha, 1) at every regime of the
// sampler (a Kolmogorov-Smirnov test against td::igamma, and the moments), their edges, dtypes,
// views and reproducibility; standard_gamma_grad against mpmath (the table is printed by
// make_standard_gamma_grad_table.py); the reparameterized gradient reproduces the derivatives of
// E[x^2] and E[log x]; igamma's new derivative in a; and the errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kDraws = 200000;

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

// sqrt(N) times the Kolmogorov-Smirnov distance between the draws and Gamma(alpha, 1)'s CDF (our
// igamma, itself tested against mpmath), with ties (draws raised to the smallest normal number)
// compared on both sides of their jump. For the right distribution it exceeds 2.7 with
// probability 1e-6 (Kolmogorov's limit law); a CDF off by 0.006 anywhere moves it past that.
double ks_statistic(const Tensor& draws, double alpha) {
  const Tensor sorted = std::get<0>(td::sort(draws.flatten()));
  const std::vector<double> x = values(sorted);
  const std::vector<double> cdf = values(td::igamma(td::full_like(sorted, alpha), sorted));
  const double n = static_cast<double>(x.size());
  double worst = 0;
  size_t first = 0;  // the first index of the current run of equal values
  for (size_t i = 0; i < x.size(); ++i) {
    if (i > 0 && x[i] != x[i - 1]) first = i;
    if (i + 1 < x.size() && x[i + 1] == x[i]) continue;
    worst = std::max({worst, std::abs(static_cast<double>(i + 1) / n - cdf[i]),
                      std::abs(static_cast<double>(first) / n - cdf[i])});
  }
  return worst * std::sqrt(n);
}

struct GradRow {
  double a, x, grad;
};

// mpmath's dx/da at 80 digits (make_standard_gamma_grad_table.py): both tails, a from 1e-3 to 1e12
// (from a = 1e7 near x = a tandem takes Temme's expansion: the last seven rows).
const std::vector<GradRow> kGradTable = {
      {0.001, 1e-200, 4.5994144666699882e-195},
      {0.001, 0.5, 461.99216718924001},
      {0.01, 1e-30, 6.85166673319527e-27},
      {0.3, 0.01, 0.14920695356145887},
      {0.3, 2.0, 3.5641103212469214},
      {0.9, 0.5, 0.8696255848180528},
      {1.0, 1.0, 1.1735630272247269},
      {1.0, 0.01, 0.05055692236986734},
      {1.0, 30.0, 4.0107027853226684},
      {2.5, 0.1, 0.14054979297366989},
      {2.5, 2.5, 1.0686730199876306},
      {2.5, 3.6, 1.2755885144571808},
      {7.0, 20.0, 1.6529314130988},
      {30.0, 25.0, 0.91668159973565724},
      {30.0, 30.7, 1.0172153320490269},
      {30.0, 60.0, 1.3939072794341447},
      {150.0, 750.0, 2.0138582819340512},
      {1000.0, 1000.5, 1.0004166833342198},
      {1000.0, 2000.0, 1.3865218019984519},
      {10000.0, 9800.0, 0.98994915737493668},
      {10000.0, 10500.0, 1.0246105229355059},
      {100000.0, 100300.0, 1.0015001714113009},
      {1000000.0, 998000.0, 0.99899949916574876},
      {20000000.0, 20003000.0, 1.0000750045842396},
      {20000000.0, 19991000.0, 0.99977497457386224},
      {100000000.0, 100005000.0, 1.0000250012500521},
      {10000000.0, 12500000.0, 1.1157177751355358},
      {10000000.0, 7500000.0, 0.86304623169988208},
      {1000000000000.0, 1001000000000.0, 1.0004998334167834},
      {1000000000000.0, 999500000000.0, 0.99974995832308017},
};

}  // namespace

TEST_CASE("standard_gamma draws follow Gamma(alpha, 1) below 1, at 1 and up to 1e8", "[cpu]") {
  td::manual_seed(31);
  for (double alpha : {0.01, 0.1, 0.5, 0.999, 1.0, 1.5, 3.7, 30.0, 1e4, 1e8}) {
    INFO("alpha " << alpha);
    const Tensor draws = td::standard_gamma(td::full({kDraws}, alpha, td::kFloat64));
    CHECK(ks_statistic(draws, alpha) < 2.7);
    // Mean and variance alpha; the variance's standard error from the fourth central moment,
    // 3 alpha^2 + 6 alpha. Five standard errors each.
    const std::vector<double> v = values(draws);
    double mean = 0, square = 0;
    for (double x : v) mean += x;
    mean /= kDraws;
    for (double x : v) square += (x - mean) * (x - mean);
    const double variance = square / (kDraws - 1);
    CHECK(std::abs(mean - alpha) <= 5 * std::sqrt(alpha / kDraws));
    CHECK(std::abs(variance - alpha) <= 5 * std::sqrt((2 * alpha * alpha + 6 * alpha) / kDraws));
  }
}

TEST_CASE("standard_gamma at its edges: 0 and underflowing draws give the dtype's smallest normal number", "[cpu]") {
  td::manual_seed(3);
  // PyTorch 2.15 gives the smallest normal number for alpha = 0, inf for inf.
  check_close(td::standard_gamma(f64({0.0, kInf})), {std::numeric_limits<double>::min(), kInf}, 0, 0, "edges");
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    INFO(dtype);
    // alpha = 1e-3: u^1000 underflows in every dtype for most draws.
    const Tensor tiny = td::standard_gamma(td::full({2000}, 1e-3, dtype));
    CHECK(tiny.dtype() == dtype);
    const double least = td::finfo(dtype).tiny;
    CHECK(tiny.to(td::kFloat64).min().item<double>() == least);
    CHECK(td::isfinite(tiny).all().item<bool>());
    const Tensor some = td::standard_gamma(td::full({3, 4}, 2.5, dtype));
    CHECK(some.sizes() == td::Shape{3, 4});
    CHECK((some > 0).all().item<bool>());
  }
  CHECK(td::standard_gamma(td::empty({0, 2}, td::kFloat32)).sizes() == td::Shape{0, 2});
}

TEST_CASE("standard_gamma repeats under a seed at any thread count, and reads views in logical order", "[cpu]") {
  const Tensor alpha = td::arange(1, 61, 1, td::kFloat64).view({6, 10}) * 0.13;
  td::manual_seed(99);
  const Tensor first = td::standard_gamma(alpha), second = td::standard_gamma(alpha);
  {
    td::testing::ThreadCount one(1);
    td::manual_seed(99);
    check_close(td::standard_gamma(alpha), values(first), 0, 0, "repeated at one thread");
    check_close(td::standard_gamma(alpha), values(second), 0, 0, "the second call repeated");
  }
  CHECK(td::ne(first, second).any().item<bool>());
  td::manual_seed(5);
  const Tensor from_view = td::standard_gamma(alpha.t());
  td::manual_seed(5);
  check_close(from_view, values(td::standard_gamma(alpha.t().contiguous())), 0, 0, "a view");
}

TEST_CASE("standard_gamma_grad equals mpmath's dx/da from a = 1e-3 to 1e12, both tails; Temme's leading order past 1e20",
          "[cpu]") {
  std::vector<double> a, x, want;
  for (const GradRow& row : kGradTable) {
    a.push_back(row.a);
    x.push_back(row.x);
    want.push_back(row.grad);
  }
  check_close(td::standard_gamma_grad(f64(a), f64(x)), want, 1e-12, 0, "mpmath's");
  // float32 operands compute in double and round once.
  check_close(td::standard_gamma_grad(f64(a).to(td::kFloat32), f64(x).to(td::kFloat32)).to(td::kFloat64),
              values(td::standard_gamma_grad(f64(a).to(td::kFloat32).to(td::kFloat64),
                                             f64(x).to(td::kFloat32).to(td::kFloat64))),
              6e-8, 0, "float32");
  // From a = 1e20, 1 + (x - a) / (2a) to O(1 / a) near x = a; continuous across the switch.
  check_close(td::standard_gamma_grad(f64({1e24, 1e24}), f64({1e24 + 3e12, 1e24 - 5e12})), {1 + 1.5e-12, 1 - 2.5e-12},
              1e-15, 0, "a = 1e24");
  for (double x_at : {1e20 + 3e10, 1e20 - 2e10}) {
    const double below = td::standard_gamma_grad(f64({std::nextafter(1e20, 0.0)}), f64({x_at})).item<double>();
    const double above = td::standard_gamma_grad(f64({1e20}), f64({x_at})).item<double>();
    CHECK(std::abs(below - above) < 1e-12);
  }
  // x = 0 (an underflowed draw) gives 0; alpha <= 0, infinities and NaN give NaN, as PyTorch's.
  check_close(td::standard_gamma_grad(f64({1.0, 0.0, -1.0, kInf, 1.0, kNaN, 2.0}), f64({0.0, 1.0, 1.0, 1.0, kInf, 1.0, kNaN})),
              {0, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}, 0, 0, "edges");
  // It broadcasts, and has no derivative of its own.
  CHECK(td::standard_gamma_grad(f64({2.0}), f64({1.0, 2.0, 3.0})).sizes() == td::Shape{3});
  Tensor alpha = f64({2.0}).requires_grad_();
  const Tensor g = td::standard_gamma_grad(alpha, f64({1.0}));
  check_error([&] { g.sum().backward(); }, {"_standard_gamma_grad", "not differentiable"});
}

TEST_CASE("standard_gamma's gradient is the implicit reparameterization: E[x^2] and E[log x] differentiate right",
          "[cpu]") {
  td::manual_seed(17);
  for (double a : {0.3, 1.0, 4.5, 200.0}) {
    INFO("alpha " << a);
    // d/da E[x^2] = d/da (a (a + 1)) = 2 a + 1, from the mean of 2 x dx/da over the draws.
    Tensor alpha = td::full({kDraws}, a, td::kFloat64).requires_grad_();
    const Tensor x = td::standard_gamma(alpha);
    REQUIRE(x.grad_fn() != nullptr);
    CHECK(x.grad_fn()->name() == "StandardGammaBackward0");
    const Tensor gradient = td::autograd::grad({x.sum()}, {alpha}, {}, true, true)[0];
    // A second derivative is an error, as PyTorch's (the gradient's own derivative is not implemented).
    check_error([&] { td::autograd::grad({gradient.sum()}, {alpha}); }, {"_standard_gamma_grad", "not differentiable"});
    check_close(gradient, values(td::standard_gamma_grad(alpha.detach(), x.detach())), 0, 0, "the node's gradient");
    const std::vector<double> dx_da = values(gradient);
    const std::vector<double> draws = values(x);
    double square = 0, square_sq = 0, logs = 0, logs_sq = 0;
    for (int64_t i = 0; i < kDraws; ++i) {
      const double s = 2 * draws[i] * dx_da[i], l = dx_da[i] / draws[i];
      square += s;
      square_sq += s * s;
      logs += l;
      logs_sq += l * l;
    }
    const double n = kDraws;
    const double square_mean = square / n, logs_mean = logs / n;
    const double square_se = std::sqrt((square_sq / n - square_mean * square_mean) / n);
    const double logs_se = std::sqrt((logs_sq / n - logs_mean * logs_mean) / n);
    CHECK(std::abs(square_mean - (2 * a + 1)) <= 5 * square_se);
    // d/da E[log x] = d/da digamma(a) = trigamma(a).
    const double trigamma = td::polygamma(1, f64({a})).item<double>();
    CHECK(std::abs(logs_mean - trigamma) <= 5 * logs_se);
  }
}

TEST_CASE("igamma and igammac differentiate in a too: gradcheck, and dP/da = -dQ/da", "[cpu]") {
  const Tensor x = f64({0.2, 3.0, 25.0, 1e-3, 800.0});
  for (bool upper : {false, true}) {
    INFO((upper ? "igammac" : "igamma"));
    const Tensor a = f64({0.5, 2.0, 30.0, 0.01, 790.0}).requires_grad_();
    const auto fn = [&](const std::vector<Tensor>& in) { return upper ? td::igammac(in[0], x) : td::igamma(in[0], x); };
    const auto result = td::autograd::gradcheck(fn, {a}, 1e-6, 1e-9, 1e-6);
    INFO(result.report);
    CHECK(result.ok);
  }
  // float32 with a tiny a and a subnormal x: the density overflows float32, the derivative does not.
  Tensor tiny_a = td::tensor(std::vector<double>{1e-3, 0.5}, td::kFloat32).requires_grad_();
  const Tensor tiny_x = td::tensor(std::vector<double>{1e-40, 1e-40}, td::kFloat32);
  td::igamma(tiny_a, tiny_x).sum().backward();
  Tensor wide_a = f64({1e-3, 0.5}).requires_grad_();
  td::igamma(wide_a, tiny_x.to(td::kFloat64)).sum().backward();
  check_close(tiny_a.grad().to(td::kFloat64), values(wide_a.grad()), 1e-6, 0, "float32 against float64");
  CHECK(tiny_a.grad()[0].item<double>() < 0);
  Tensor a = f64({2.0, 3.0}).requires_grad_();
  Tensor b = f64({2.0, 3.0}).requires_grad_();
  td::igamma(a, f64({1.0, 0.0})).sum().backward();
  td::igammac(b, f64({1.0, 0.0})).sum().backward();
  check_close(a.grad(), values(-b.grad()), 0, 0, "dP/da = -dQ/da");
  CHECK(a.grad()[1].item<double>() == 0);  // P(a, 0) = 0 for every a
}

TEST_CASE("standard_gamma refuses bad concentrations without drawing, naming them", "[cpu]") {
  const td::PhiloxState before = td::default_generator().state();
  const Tensor negative = f64({1.0, -1.0});
  const Snapshot negative_before(negative);
  check_error([&] { td::standard_gamma(negative); }, {"standard_gamma", "non-negative"});
  negative_before.check_unchanged(negative);
  check_error([&] { td::standard_gamma(f64({kNaN})); }, {"standard_gamma", "non-negative", "NaN"});
  check_error([&] { td::standard_gamma(td::tensor({1, 2})); }, {"standard_gamma", "floating", "int64"});
  check_error([&] { td::standard_gamma(Tensor()); }, {"standard_gamma", "input"});
  check_error([&] { td::standard_gamma_grad(td::tensor({1, 2}), td::tensor({1, 2})); },
              {"_standard_gamma_grad", "floating", "int64"});
  check_error([&] { td::standard_gamma_grad(f64({1.0, 2.0}), f64({1.0, 2.0, 3.0})); }, {"_standard_gamma_grad", "[2]", "[3]"});
  const td::PhiloxState after = td::default_generator().state();
  CHECK(after.seed == before.seed);
  CHECK(after.offset == before.offset);
}
