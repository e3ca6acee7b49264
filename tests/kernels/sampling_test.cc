// td::poisson and td::binomial: their distributions (a chi-square test against the probability mass
// function and the moments, at each regime of the samplers: the small-mean loops and the transformed
// rejection), their edges, dtypes, broadcasting and views, reproducibility, the gradient and errors.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

// Pearson's chi-square statistic of draws against a probability mass function, over bins of at least
// 20 expected draws (neighbours pooled), as a z-score: (chi2 - dof) / sqrt(2 dof). For a sampler of
// the right distribution it is about standard normal; a wrong one (a mean off by a tenth of a
// standard deviation, a variance 5% off, a missing tail) moves it by tens at 200000 draws.
double chi_square_z(const std::vector<double>& draws, double lo, double hi, const std::function<double(double)>& pmf) {
  std::vector<double> counts(static_cast<size_t>(hi - lo + 1), 0);
  double outside = 0;
  int64_t fractional = 0;
  for (double v : draws) {
    if (v != std::floor(v)) ++fractional;
    if (v < lo || v > hi) {
      outside += 1;
    } else {
      counts[static_cast<size_t>(v - lo)] += 1;
    }
  }
  CHECK(fractional == 0);  // every variate a whole number
  const double n = static_cast<double>(draws.size());
  std::vector<double> observed, expected;
  double pooled_o = outside, pooled_e = 0, in_range = 0;
  for (double k = lo; k <= hi; k += 1) {
    const double e = n * pmf(k);
    in_range += e;
    pooled_o += counts[static_cast<size_t>(k - lo)];
    pooled_e += e;
    if (pooled_e >= 20) {
      observed.push_back(pooled_o);
      expected.push_back(pooled_e);
      pooled_o = pooled_e = 0;
    }
  }
  REQUIRE(!expected.empty());
  observed.back() += pooled_o;
  expected.back() += pooled_e + (n - in_range);  // the mass outside [lo, hi], expected almost 0
  double chi2 = 0;
  for (size_t i = 0; i < observed.size(); ++i) chi2 += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  const double dof = static_cast<double>(observed.size()) - 1;
  return (chi2 - dof) / std::sqrt(2 * dof);
}

double poisson_pmf(double rate, double k) { return std::exp(k * std::log(rate) - rate - std::lgamma(k + 1)); }

double binomial_pmf(double n, double p, double k) {
  return std::exp(std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1) + k * std::log(p) +
                  (n - k) * std::log1p(-p));
}

}  // namespace

TEST_CASE("poisson draws follow the Poisson distribution below 10, at 10 and up to 1e12", "[cpu]") {
  td::manual_seed(1234);
  for (double rate : {0.5, 3.0, 9.9, 10.0, 30.0, 1000.0, 1e6, 1e12}) {
    INFO("rate " << rate);
    const std::vector<double> draws = values(td::poisson(td::full({kDraws}, rate, td::kFloat64)));
    double mean = 0, square = 0;
    for (double v : draws) mean += v;
    mean /= kDraws;
    for (double v : draws) square += (v - mean) * (v - mean);
    const double variance = square / (kDraws - 1);
    // Five standard errors: of the mean sqrt(rate / N), of the variance sqrt((rate + 2 rate^2) / N).
    CHECK(std::abs(mean - rate) <= 5 * std::sqrt(rate / kDraws));
    CHECK(std::abs(variance - rate) <= 5 * std::sqrt((rate + 2 * rate * rate) / kDraws));
    const double spread = 8 * std::sqrt(rate) + 10;
    const double z = chi_square_z(draws, std::max(0.0, std::floor(rate - spread)), std::ceil(rate + spread),
                                  [&](double k) { return poisson_pmf(rate, k); });
    CHECK(std::abs(z) < 5);
  }
}

TEST_CASE("binomial draws follow the binomial distribution in both samplers and both tails", "[cpu]") {
  td::manual_seed(4321);
  struct Case {
    double n, p;
  };
  // n p below 10 (waiting times) and from 10 on (transformed rejection), p above 1/2 (by symmetry).
  for (const Case& c : std::vector<Case>{{20, 0.3}, {100, 0.05}, {200, 0.0499}, {200, 0.0501}, {30, 0.34},
                                          {1000, 0.5}, {50, 0.9}, {1e6, 0.3}, {1, 0.5}}) {
    INFO("n " << c.n << ", p " << c.p);
    const std::vector<double> draws =
        values(td::binomial(td::full({kDraws}, c.n, td::kFloat64), td::full({kDraws}, c.p, td::kFloat64)));
    double mean = 0;
    for (double v : draws) mean += v;
    mean /= kDraws;
    CHECK(std::abs(mean - c.n * c.p) <= 5 * std::sqrt(c.n * c.p * (1 - c.p) / kDraws));
    const double sd = std::sqrt(c.n * c.p * (1 - c.p));
    const double lo = std::max(0.0, std::floor(c.n * c.p - 8 * sd - 5)), hi = std::min(c.n, std::ceil(c.n * c.p + 8 * sd + 5));
    const double z = chi_square_z(draws, lo, hi, [&](double k) { return binomial_pmf(c.n, c.p, k); });
    CHECK(std::abs(z) < 5);
  }
}

TEST_CASE("poisson and binomial at their edges", "[cpu]") {
  check_close(td::poisson(f64({0.0, kInf, 0.0})), {0, kInf, 0}, 0, 0, "poisson of 0 and inf");
  // count truncated to whole trials; prob outside (0, 1) clamps; NaN and an infinite count give NaN.
  const Tensor count = f64({0, -1, 5, 5, 5, 5, kNaN, 5, kInf, 7.9});
  const Tensor prob = f64({0.3, 0.5, 0, -0.5, 1, 1.5, 0.5, kNaN, 0.5, 1});
  check_close(td::binomial(count, prob), {0, 0, 0, 0, 5, 5, kNaN, kNaN, kNaN, 7}, 0, 0, "binomial edges");
  // 10.7 trials are 10: the mean of B(10, 1/2) is 5.
  td::manual_seed(7);
  const double mean = td::binomial(td::full({kDraws}, 10.7, td::kFloat64), td::full({1}, 0.5, td::kFloat64))
                          .mean()
                          .item<double>();
  CHECK(std::abs(mean - 5) < 5 * std::sqrt(2.5 / kDraws));
}

TEST_CASE("poisson and binomial keep the dtype and shape, broadcast, read views, and repeat under a seed", "[cpu]") {
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    INFO(dtype);
    const Tensor rates = td::full({3, 4}, 4.5, dtype);
    const Tensor p = td::poisson(rates);
    CHECK(p.dtype() == dtype);
    CHECK(p.sizes() == td::Shape{3, 4});
    const Tensor b = td::binomial(td::full({2, 1}, 12.0, dtype), td::full({3}, 0.25, dtype));
    CHECK(b.dtype() == dtype);
    CHECK(b.sizes() == td::Shape{2, 3});
  }
  // The same seed gives the same draws, at one thread or two; the next call gives others.
  const Tensor rates = td::arange(0, 60, 1, td::kFloat64).view({6, 10}) * 0.7;
  td::manual_seed(99);
  const Tensor first = td::poisson(rates), second = td::poisson(rates);
  const Tensor bin = td::binomial(rates.round() * 3, td::full({10}, 0.4, td::kFloat64));
  {
    td::testing::ThreadCount one(1);
    td::manual_seed(99);
    check_close(td::poisson(rates), values(first), 0, 0, "repeated at one thread");
    check_close(td::poisson(rates), values(second), 0, 0, "the second call repeated");
    check_close(td::binomial(rates.round() * 3, td::full({10}, 0.4, td::kFloat64)), values(bin), 0, 0,
                "binomial repeated");
  }
  CHECK(td::ne(first, second).any().item<bool>());
  // A transposed view draws element by element in its logical order, as its contiguous copy.
  td::manual_seed(5);
  const Tensor from_view = td::poisson(rates.t());
  td::manual_seed(5);
  check_close(from_view, values(td::poisson(rates.t().contiguous())), 0, 0, "a view");
  CHECK(td::poisson(td::empty({0, 3}, td::kFloat32)).sizes() == td::Shape{0, 3});
}

TEST_CASE("poisson's gradient is zero; binomial's backward refuses, naming it", "[cpu]") {
  Tensor rates = f64({2.0, 30.0}).requires_grad_();
  Tensor y = td::poisson(rates);
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() == "PoissonBackward0");
  (y * 3).sum().backward();
  check_close(rates.grad(), {0, 0}, 0, 0, "poisson's gradient");
  Tensor count = f64({10.0}).requires_grad_();
  Tensor b = td::binomial(count, f64({0.3}));
  REQUIRE(b.grad_fn() != nullptr);
  check_error([&] { b.sum().backward(); }, {"binomial", "not implemented"});
  CHECK(td::binomial(f64({10.0}), f64({0.3})).grad_fn() == nullptr);
}

TEST_CASE("poisson and binomial refuse bad parameters without drawing", "[cpu]") {
  const td::PhiloxState before = td::default_generator().state();
  const Tensor negative = f64({1.0, -1.0});
  const Snapshot negative_before(negative);
  check_error([&] { td::poisson(negative); }, {"poisson", "non-negative"});
  negative_before.check_unchanged(negative);
  check_error([&] { td::poisson(f64({kNaN})); }, {"poisson", "non-negative", "NaN"});
  check_error([&] { td::poisson(td::tensor({1, 2})); }, {"poisson", "floating", "int64"});
  check_error([&] { td::poisson(Tensor()); }, {"poisson", "input"});
  check_error([&] { td::binomial(td::tensor({10}), td::tensor({0.5})); }, {"binomial", "floating", "int64"});
  check_error([&] { td::binomial(f64({10.0}), td::tensor({0.5})); }, {"binomial", "one dtype", "float64", "float32"});
  check_error([&] { td::binomial(f64({10.0, 3.0}), f64({0.5, 0.5, 0.5})); }, {"binomial", "[2]", "[3]"});
  check_error([&] { td::binomial(Tensor(), f64({0.5})); }, {"binomial", "count"});
  const td::PhiloxState after = td::default_generator().state();
  CHECK(after.seed == before.seed);
  CHECK(after.offset == before.offset);
}
