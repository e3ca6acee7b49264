// td::poisson and td::binomial: their distributions (a chi-square test against the probability mass
// function and the moments, at each regime of the samplers: the small-mean loops and the transformed
// rejection), their edges, dtypes, broadcasting and views, reproducibility, the gradient and errors.
#include <algorithm>
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

// The same statistic for a distribution too wide to sum its mass function term by term (rates and
// n p q past 1e8): 60 bins over mean -+ 6 sd, each bin's mass from the normal approximation with a
// continuity correction (the distributions' skewness, 1 / sqrt(rate), is below 1e-4 there, far
// below what 200000 draws resolve), the tails pooled into the end bins.
double chi_square_z_normal(const std::vector<double>& draws, double mean, double sd) {
  constexpr int kBins = 60;
  const double width = std::ceil(12 * sd / kBins), first = std::floor(mean - 6 * sd);
  std::vector<double> observed(kBins, 0), expected(kBins, 0);
  int64_t fractional = 0;
  for (double v : draws) {
    if (v != std::floor(v)) ++fractional;
    const double bin = std::floor((v - first) / width);
    observed[static_cast<size_t>(std::clamp(bin, 0.0, kBins - 1.0))] += 1;
  }
  CHECK(fractional == 0);
  const auto below = [&](double edge) { return 0.5 * std::erfc(-(edge - 0.5 - mean) / (sd * std::sqrt(2.0))); };
  const double n = static_cast<double>(draws.size());
  for (int b = 0; b < kBins; ++b) {
    const double lo = b == 0 ? 0 : below(first + b * width), hi = b == kBins - 1 ? 1 : below(first + (b + 1) * width);
    expected[static_cast<size_t>(b)] = n * (hi - lo);
  }
  double chi2 = 0;
  for (int b = 0; b < kBins; ++b) {
    const double d = observed[static_cast<size_t>(b)] - expected[static_cast<size_t>(b)];
    chi2 += d * d / expected[static_cast<size_t>(b)];
  }
  return (chi2 - (kBins - 1)) / std::sqrt(2.0 * (kBins - 1));
}

// The mass functions in long double: lgamma(1e12) is 2.6e13, and its double rounding (0.004) would
// skew the expected counts by that much.
double poisson_pmf(double rate, double k) {
  const long double r = rate, j = k;
  return static_cast<double>(std::exp(j * std::log(r) - r - std::lgamma(j + 1)));
}

double binomial_pmf(double n, double p, double k) {
  const long double m = n, j = k, q = p;
  return static_cast<double>(
      std::exp(std::lgamma(m + 1) - std::lgamma(j + 1) - std::lgamma(m - j + 1) + j * std::log(q) + (m - j) * std::log1p(-q)));
}

}  // namespace

TEST_CASE("poisson draws follow the Poisson distribution below 10, at 10 and up to 1e15", "[cpu]") {
  td::manual_seed(1234);
  for (double rate : {0.5, 3.0, 9.9, 10.0, 30.0, 1000.0, 1e6, 1e12, 1e15}) {
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
    const double z = rate > 1e8 ? chi_square_z_normal(draws, rate, std::sqrt(rate))
                                : chi_square_z(draws, std::max(0.0, std::floor(rate - spread)), std::ceil(rate + spread),
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
  // Huge n too: 1e13 trials with a mean of 12, and 1e15 with p = 1/2.
  for (const Case& c : std::vector<Case>{{20, 0.3}, {100, 0.05}, {200, 0.0499}, {200, 0.0501}, {30, 0.34},
                                          {1000, 0.5}, {50, 0.9}, {1e6, 0.3}, {1, 0.5}, {1e13, 1.2e-12}, {1e15, 0.5}}) {
    INFO("n " << c.n << ", p " << c.p);
    const std::vector<double> draws =
        values(td::binomial(td::full({kDraws}, c.n, td::kFloat64), td::full({kDraws}, c.p, td::kFloat64)));
    double mean = 0;
    for (double v : draws) mean += v;
    mean /= kDraws;
    CHECK(std::abs(mean - c.n * c.p) <= 5 * std::sqrt(c.n * c.p * (1 - c.p) / kDraws));
    const double sd = std::sqrt(c.n * c.p * (1 - c.p));
    const double lo = std::max(0.0, std::floor(c.n * c.p - 8 * sd - 5)), hi = std::min(c.n, std::ceil(c.n * c.p + 8 * sd + 5));
    const double z = sd > 1e4 ? chi_square_z_normal(draws, c.n * c.p, sd)
                              : chi_square_z(draws, lo, hi, [&](double k) { return binomial_pmf(c.n, c.p, k); });
    CHECK(std::abs(z) < 5);
  }
}

TEST_CASE("poisson and binomial at their edges", "[cpu]") {
  check_close(td::poisson(f64({0.0, kInf, 0.0})), {0, kInf, 0}, 0, 0, "poisson of 0 and inf");
  // PyTorch 2.15's edges: 0 where count or prob <= 0 (whatever the other), count itself where prob >= 1,
  // else NaN for a NaN operand or an infinite count.
  const Tensor count = f64({0, -1, 5, 5, 5, 5, kNaN, 5, kInf, 7.9, -1, kNaN, 0, kInf, kInf});
  const Tensor prob = f64({0.3, 0.5, 0, -0.5, 1, 1.5, 0.5, kNaN, 0.5, 1, kNaN, 0, kNaN, 0, 1});
  check_close(td::binomial(count, prob), {0, 0, 0, 0, 5, 5, kNaN, kNaN, kNaN, 7.9, 0, 0, 0, 0, kInf}, 0, 0,
              "binomial edges");
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

namespace {

struct Moments {
  double mean, variance;
};

Moments moments_of(const Tensor& t) {
  const std::vector<double> v = values(t);
  double mean = 0, square = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) square += (x - mean) * (x - mean);
  return {mean, square / static_cast<double>(v.size() - 1)};
}

// The sample's mean and variance within five standard errors of the distribution's: of the mean
// sqrt(var / N), of the variance sqrt((mu4 - var^2) / N) from the fourth central moment mu4.
void check_moments(const Tensor& t, double mean, double variance, double mu4, const std::string& what) {
  INFO(what);
  const double n = static_cast<double>(t.numel());
  const Moments m = moments_of(t);
  CHECK(std::abs(m.mean - mean) <= 5 * std::sqrt(variance / n));
  CHECK(std::abs(m.variance - variance) <= 5 * std::sqrt((mu4 - variance * variance) / n));
}

}  // namespace

TEST_CASE("the in-place samplers draw their distributions", "[cpu]") {
  td::manual_seed(2026);
  const auto sample = [] { return td::empty({kDraws}, td::kFloat64); };
  Tensor u = sample();
  u.uniform_(2, 5);
  check_moments(u, 3.5, 0.75, 81.0 / 80, "uniform_(2, 5)");  // mu4 = (b - a)^4 / 80
  CHECK(u.min().item<double>() >= 2);
  CHECK(u.max().item<double>() < 5);
  Tensor n = sample();
  n.normal_(1, 2);
  check_moments(n, 1, 4, 48, "normal_(1, 2)");
  Tensor b = sample();
  b.bernoulli_(0.3);
  check_moments(b, 0.3, 0.21, 0.3 * 0.7 * (1 - 3 * 0.21), "bernoulli_(0.3)");
  Tensor e = sample();
  e.exponential_(2);
  check_moments(e, 0.5, 0.25, 9.0 / 16, "exponential_(2)");  // mu4 = 9 / lambda^4
  CHECK(e.min().item<double>() >= 0);
  Tensor g = sample();
  g.geometric_(0.2);
  // mu4 = var^2 (3 + 6 + p^2 / q), its excess kurtosis 6 + p^2 / q.
  check_moments(g, 5, 20, 400 * (9 + 0.04 / 0.8), "geometric_(0.2)");
  CHECK(g.min().item<double>() == 1);
  const double z = chi_square_z(values(g), 1, 80, [](double k) { return std::pow(0.8, k - 1) * 0.2; });
  CHECK(std::abs(z) < 5);
  Tensor l = sample();
  l.log_normal_(0.5, 0.25);
  check_moments(td::log(l), 0.5, 0.0625, 3 * 0.0625 * 0.0625, "log of log_normal_(0.5, 0.25)");
  // Cauchy has no mean: its quartiles are median -+ sigma, its median the median.
  Tensor c = sample();
  c.cauchy_(1, 2);
  const Tensor sorted = std::get<0>(td::sort(c));
  const double quarter = sorted[kDraws / 4].item<double>(), half = sorted[kDraws / 2].item<double>(),
               three_quarters = sorted[3 * kDraws / 4].item<double>();
  // The standard error of a quantile q is sqrt(q (1 - q) / N) / density there: 0.0122 at the quartiles
  // (density 1 / (4 pi)), 0.0070 at the median (1 / (2 pi)) for sigma = 2. Six of them.
  CHECK(std::abs(quarter + 1) < 0.075);
  CHECK(std::abs(half - 1) < 0.042);
  CHECK(std::abs(three_quarters - 3) < 0.075);
}

TEST_CASE("bernoulli_ with a tensor of probabilities, and normal with tensor parameters", "[cpu]") {
  td::manual_seed(77);
  Tensor t = td::empty({kDraws / 4, 4}, td::kInt64);
  t.bernoulli_(f64({0.0, 0.25, 0.5, 1.0}));
  const std::vector<double> column_means = values(t.to(td::kFloat64).mean(std::vector<int64_t>{0}));
  CHECK(column_means[0] == 0);
  CHECK(std::abs(column_means[1] - 0.25) < 5 * std::sqrt(0.1875 / (kDraws / 4)));
  CHECK(std::abs(column_means[2] - 0.5) < 5 * std::sqrt(0.25 / (kDraws / 4)));
  CHECK(column_means[3] == 1);

  // mean [N, 1] against std [2]: each column has its own spread.
  const Tensor mean = td::full({kDraws / 2, 1}, 3.0, td::kFloat64);
  const Tensor draws = td::normal(mean, f64({0.5, 2.0}));
  REQUIRE(draws.sizes() == td::Shape{kDraws / 2, 2});
  check_moments(draws.select(1, 0), 3, 0.25, 3 * 0.0625, "normal, std 0.5");
  check_moments(draws.select(1, 1), 3, 4, 48, "normal, std 2");
  check_moments(td::normal(f64({-1.0}).expand({kDraws}), 3.0), -1, 9, 243, "normal(mean, 3)");
  check_moments(td::normal(2.0, td::full({kDraws}, 1.0, td::kFloat32)), 2, 1, 3, "normal(2, std)");
  const Tensor fixed = td::normal(5.0, 0.5, {kDraws}, td::kFloat64);
  CHECK(fixed.dtype() == td::kFloat64);
  check_moments(fixed, 5, 0.25, 3 * 0.0625, "normal(5, 0.5, sizes)");
  // mean's dtype, as PyTorch's; a large std with a float16 mean.
  CHECK(td::normal(td::full({2}, 0.0, td::kFloat32), td::full({2}, 1.0, td::kFloat64)).dtype() == td::kFloat32);
  CHECK(td::normal(td::full({2}, 0.0, td::kFloat64), td::full({2}, 1.0, td::kFloat32)).dtype() == td::kFloat64);
  CHECK(td::normal(td::full({2}, 0.0, td::kFloat16), 1e4).dtype() == td::kFloat16);
  // A standard deviation of 0 gives the mean itself.
  check_close(td::normal(f64({1.5, -2.0}), f64({0.0, 0.0})), {1.5, -2.0}, 0, 0, "std 0");
}

TEST_CASE("random_ draws whole numbers uniform in its range, for every dtype", "[cpu]") {
  td::manual_seed(31);
  Tensor r = td::empty({kDraws}, td::kInt64);
  r.random_(3, 10);
  CHECK(r.min().item<int64_t>() == 3);
  CHECK(r.max().item<int64_t>() == 9);
  CHECK(std::abs(chi_square_z(values(r), 3, 9, [](double) { return 1.0 / 7; })) < 5);
  Tensor f = td::empty({kDraws}, td::kFloat32);
  f.random_(10);
  CHECK(f.min().item<double>() == 0);
  CHECK(f.max().item<double>() == 9);
  CHECK(std::abs(chi_square_z(values(f), 0, 9, [](double) { return 0.1; })) < 5);
  // Without `to`: up to the dtype's largest whole number with no gap below it, inclusive.
  Tensor h = td::empty({kDraws}, td::kFloat16);
  h.random_();
  CHECK(h.max().item<double>() <= 2048);
  CHECK(h.max().item<double>() > 2000);
  Tensor bytes = td::empty({kDraws}, td::kUInt8);
  bytes.random_();
  CHECK(bytes.max().item<int64_t>() == 255);
  CHECK(bytes.min().item<int64_t>() == 0);
  Tensor flags = td::empty({1000}, td::kBool);
  flags.random_();
  CHECK(flags.any().item<bool>());
  CHECK(!flags.all().item<bool>());
  // int64's whole range [0, 2^63 - 1]: its mean is about 2^62.
  Tensor wide = td::empty({kDraws}, td::kInt64);
  wide.random_();
  CHECK(wide.min().item<int64_t>() >= 0);
  const double wide_mean = wide.to(td::kFloat64).mean().item<double>();
  CHECK(std::abs(wide_mean / std::ldexp(1.0, 62) - 1) < 5 * std::sqrt(1.0 / 3 / kDraws));
  // Without `to`, from a positive start or from the lowest int64 (the whole range: about half negative).
  Tensor upper = td::empty({1000}, td::kInt64);
  upper.random_(int64_t{1} << 62, std::nullopt);
  CHECK(upper.min().item<int64_t>() >= int64_t{1} << 62);
  Tensor whole = td::empty({kDraws}, td::kInt64);
  whole.random_(std::numeric_limits<int64_t>::min(), std::nullopt);
  const double negative_share = td::lt(whole, 0).to(td::kFloat64).mean().item<double>();
  CHECK(std::abs(negative_share - 0.5) < 5 * std::sqrt(0.25 / kDraws));
  Tensor negative = td::empty({kDraws}, td::kInt32);
  negative.random_(-5, -2);
  CHECK(negative.min().item<int64_t>() == -5);
  CHECK(negative.max().item<int64_t>() == -3);
}

TEST_CASE("in-place samples write a view in its logical order and record a zero gradient", "[cpu]") {
  // A transposed view and a contiguous tensor of its shape get the same values from the same seed.
  for (int which = 0; which < 4; ++which) {
    INFO("sampler " << which);
    const auto draw = [which](Tensor t) {
      switch (which) {
        case 0: t.exponential_(1.5); break;
        case 1: t.cauchy_(); break;
        case 2: t.random_(0, 100); break;
        default: t.geometric_(0.3); break;
      }
      return t;
    };
    Tensor base = td::zeros({4, 3}, td::kFloat64);
    td::manual_seed(8);
    draw(base.t());
    td::manual_seed(8);
    const Tensor contiguous = draw(td::zeros({3, 4}, td::kFloat64));
    check_close(base.t(), values(contiguous), 0, 0, "a transposed view");
  }
  Tensor x = f64({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x * 2;
  y.exponential_();
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() == "ExponentialBackward0");
  (y * x).sum().backward();
  // Only the second factor's path: d(y x)/dx with y a fresh sample is y itself.
  check_close(x.grad(), values(y.detach()), 0, 0, "the sample's own gradient is zero");
  // A sample as the only path: zeros, as PyTorch's (not an undefined gradient).
  Tensor only = f64({1.0, 2.0}).requires_grad_();
  Tensor z = only * 1;
  z.cauchy_();
  z.sum().backward();
  REQUIRE(only.grad().defined());
  check_close(only.grad(), {0, 0}, 0, 0, "zeros through a sample");
  // PyTorch's node names.
  const auto node_of = [](const std::function<void(Tensor&)>& sample) {
    Tensor leaf = f64({0.5, 0.5}).requires_grad_();
    Tensor t = leaf * 1;
    sample(t);
    return t.grad_fn()->name();
  };
  CHECK(node_of([](Tensor& t) { t.bernoulli_(0.5); }) == "BernoulliBackward2");
  CHECK(node_of([](Tensor& t) { t.bernoulli_(f64({0.5, 0.5})); }) == "BernoulliBackward1");
  CHECK(node_of([](Tensor& t) { t.random_(); }) == "RandomBackward2");
  CHECK(node_of([](Tensor& t) { t.random_(5); }) == "RandomBackward1");
  CHECK(node_of([](Tensor& t) { t.random_(1, 5); }) == "RandomBackward0");
  Tensor m = f64({0.0, 1.0}).requires_grad_();
  CHECK(td::normal(m, 1.0).grad_fn()->name() == "NormalBackward1");
  CHECK(td::normal(1.0, m + 1).grad_fn()->name() == "NormalBackward2");

  // Each sampler counts its write in the version: a graph that saved the old values refuses them.
  const std::vector<std::function<void(Tensor&)>> samplers = {
      [](Tensor& t) { t.exponential_(); },       [](Tensor& t) { t.geometric_(0.5); },
      [](Tensor& t) { t.cauchy_(); },            [](Tensor& t) { t.log_normal_(); },
      [](Tensor& t) { t.random_(0, 5); },        [](Tensor& t) { t.bernoulli_(f64({0.5, 0.5})); },
      [](Tensor& t) { t.uniform_(); },           [](Tensor& t) { t.normal_(); },
      [](Tensor& t) { t.bernoulli_(0.5); }};
  for (size_t i = 0; i < samplers.size(); ++i) {
    INFO("sampler " << i);
    Tensor w = f64({1.0, 2.0}).requires_grad_();
    Tensor a = f64({1.0, 1.0});
    const Tensor product = (w * a).sum();  // saves a
    const uint32_t version = a.version();
    samplers[i](a);
    CHECK(a.version() > version);
    check_error([&] { product.backward(); }, {"modified by an in-place operation"});
  }
  Tensor mean = f64({0.0, 1.0}).requires_grad_(), std = f64({1.0, 2.0}).requires_grad_();
  Tensor out = td::normal(mean, std);
  CHECK(out.grad_fn()->name() == "NormalBackward3");
  out.sum().backward();
  check_close(mean.grad(), {0, 0}, 0, 0, "normal's mean");
  check_close(std.grad(), {0, 0}, 0, 0, "normal's std");
}

TEST_CASE("the in-place samplers refuse bad parameters, dtypes and leaves, changing nothing", "[cpu]") {
  Tensor t = f64({1.0, 2.0, 3.0});
  Tensor ints = td::tensor({1, 2, 3});
  const Snapshot t_before(t), ints_before(ints);
  const td::PhiloxState before = td::default_generator().state();
  check_error([&] { t.uniform_(2, 1); }, {"uniform_", "from"});
  check_error([&] { ints.uniform_(); }, {"uniform_", "floating", "int64"});
  check_error([&] { t.normal_(0, -1); }, {"normal_", "std"});
  check_error([&] { t.bernoulli_(1.5); }, {"bernoulli_", "[0, 1]"});
  check_error([&] { t.bernoulli_(f64({0.5, 0.5})); }, {"bernoulli_", "[2]", "[3]"});
  check_error([&] { t.bernoulli_(f64({0.5, 1.5, 0.5})); }, {"bernoulli", "[0, 1]"});
  check_error([&] { t.bernoulli_(td::tensor({0, 1, 0})); }, {"bernoulli_", "floating", "int64"});
  check_error([&] { t.exponential_(0); }, {"exponential_", "lambda > 0"});
  check_error([&] { ints.exponential_(); }, {"Exponential", "continuous", "int64"});
  check_error([&] { t.geometric_(1); }, {"geometric_", "(0, 1)"});
  check_error([&] { t.geometric_(0); }, {"geometric_", "(0, 1)"});
  check_error([&] { t.cauchy_(0, 0); }, {"cauchy_", "sigma > 0"});
  check_error([&] { ints.cauchy_(); }, {"Cauchy", "continuous", "int64"});
  check_error([&] { t.log_normal_(1, 0); }, {"log_normal_", "std > 0"});
  check_error([&] { ints.log_normal_(); }, {"LogNormal", "continuous", "int64"});
  check_error([&] { t.random_(5, 3); }, {"random_", "from < to"});
  check_error([&] { t.random_(0, int64_t{1} << 54); }, {"random_", "every whole number"});
  check_error([&] { td::empty({2}, td::kFloat32).random_(0, (int64_t{1} << 24) + 2); }, {"random_", "float32"});
  check_error([&] { td::empty({2}, td::kUInt8).random_(-1, 3); }, {"random_", "from=-1", "uint8"});
  check_error([&] { td::empty({2}, td::kUInt8).random_(0, 257); }, {"random_", "256", "uint8"});
  check_error([&] { td::normal(f64({0.0}), f64({-1.0})); }, {"normal", "std >= 0"});
  check_error([&] { td::normal(f64({0.0}), kNaN); }, {"normal", "std >= 0"});
  check_error([&] { td::empty({2}, td::kFloat16).random_(5000, std::nullopt); }, {"random_", "from=5000", "2048"});
  check_error([&] { td::empty({2}, td::kInt64).random_(-5, std::nullopt); }, {"random_", "from=-5", "give `to`"});
  check_error([&] { td::empty({2}, td::kBool).geometric_(0.5); }, {"geometric_", "bool"});
  check_error([&] { td::zeros({1}, td::kFloat64).expand({3}).exponential_(); }, {"exponential_", "single memory location"});
  check_error([&] { td::normal(td::tensor({0, 1}), f64({1.0, 1.0})); }, {"normal", "floating", "int64"});
  check_error([&] { td::normal(f64({0.0, 1.0}), f64({1.0, 1.0, 1.0})); }, {"normal", "[2]", "[3]"});
  Tensor undefined;
  check_error([&] { undefined.exponential_(); }, {"exponential_", "self"});
  Tensor leaf = f64({1.0, 2.0}).requires_grad_();
  const Snapshot leaf_before(leaf);
  check_error([&] { leaf.normal_(); }, {"leaf", "in-place"});
  check_error([&] { leaf.random_(0, 5); }, {"leaf", "in-place"});
  leaf_before.check_unchanged(leaf);
  t_before.check_unchanged(t);
  ints_before.check_unchanged(ints);
  const td::PhiloxState after = td::default_generator().state();
  CHECK(after.offset == before.offset);
}
