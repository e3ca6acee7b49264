// FisherSnedecor, Kumaraswamy, VonMises, ContinuousBernoulli, the relaxed Bernoulli and categorical
// distributions, LowRankMultivariateNormal, Multinomial, Wishart, LKJCholesky, HalfCauchy, InverseGamma,
// GeneralizedPareto and OneHotCategoricalStraightThrough: their values are PyTorch's through
// distributions_test.cc's fixture; here their draws (against their cdf, their moments, or an exact
// property of the sampler), rsample's pathwise gradients, gradcheck where tandem's formulas are its
// own (PyTorch's differ), cross-checks between families, expand, validation and errors.
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "tests/distributions/sampling.h"
#include "tests/testing.h"

namespace td = tandem;
namespace D = td::distributions;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::check_mean;
using td::testing::ks_statistic;
using td::testing::Snapshot;
using td::testing::values;

namespace {

constexpr int64_t kDraws = 40000;
constexpr double kPi = std::numbers::pi;

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

// A float64 leaf of `want` repeated in kDraws rows, so that each draw has its own gradient.
Tensor per_draw(const std::vector<double>& want) {
  return f64(want).expand({kDraws, static_cast<int64_t>(want.size())}).contiguous().requires_grad_(true);
}

// d/dx of f at each element of x (independent elements), by autograd.
std::vector<double> derivative(const std::vector<double>& x, const std::function<Tensor(const Tensor&)>& f) {
  Tensor leaf = f64(x).requires_grad_(true);
  f(leaf).sum().backward();
  return values(leaf.grad());
}

void check_gradients(const td::autograd::TestedFn& fn, const std::vector<Tensor>& inputs, const std::string& what) {
  INFO(what);
  const auto result = td::autograd::gradcheck(fn, inputs, 1e-6, 1e-7, 1e-6);
  INFO(result.report);
  CHECK(result.ok);
}

}  // namespace

TEST_CASE("FisherSnedecor draws have its moments, and their gradients the moments' derivatives", "[cpu]") {
  td::manual_seed(61);
  const std::vector<double> df1 = {5.0, 2.0}, df2 = {12.0, 20.0};
  Tensor d2 = per_draw(df2);
  const D::FisherSnedecor f(f64(df1), d2);
  const Tensor x = f.rsample();
  REQUIRE(x.sizes() == Shape{kDraws, 2});
  CHECK((x > 0).all().item<bool>());
  const D::FisherSnedecor one(f64(df1), f64(df2));
  check_mean(x.detach(), values(one.mean()), "mean df2 / (df2 - 2)");
  check_mean((x.detach() - one.mean()).pow(2), values(one.variance()), "variance");
  // d/d df2 E[x] = -2 / (df2 - 2)^2.
  x.sum().backward();
  check_mean(d2.grad(), {-2 / 100.0, -2 / 324.0}, "d/d df2 E[x]");
  // E[x^2] = df2^2 (df1 + 2) / (df1 (df2 - 2) (df2 - 4)), so d/d df1 E[x^2] = -2 df2^2 / (df1^2 (df2 - 2) (df2 - 4)).
  Tensor d1 = per_draw(df1);
  D::FisherSnedecor(d1, f64(df2)).rsample().pow(2).sum().backward();
  check_mean(d1.grad(), {-2 * 144 / (25 * 10 * 8.0), -2 * 400 / (4 * 18 * 16.0)}, "d/d df1 E[x^2]");
  check_gradients([](const std::vector<Tensor>& in) { return D::FisherSnedecor(in[0], in[1]).log_prob(in[2]); },
                  {f64({0.7, 3.0}).requires_grad_(true), f64({4.5, 1.2}).requires_grad_(true), f64({0.3, 2.5})},
                  "FisherSnedecor log_prob");
}

TEST_CASE("Kumaraswamy draws follow its cdf; pathwise gradients average to the mean's derivatives", "[cpu]") {
  td::manual_seed(62);
  const D::Kumaraswamy k(f64({0.5, 2.0, 5.0}), f64({0.5, 5.0, 1.5}));
  const Tensor draws = k.sample({kDraws});
  CHECK((draws >= 0).all().item<bool>());
  CHECK((draws <= 1).all().item<bool>());
  CHECK(ks_statistic(k, draws) < 2.7);
  check_close(k.cdf(k.icdf(f64({0.1, 0.5, 0.97}))), {0.1, 0.5, 0.97}, 1e-14, 1e-14, "cdf(icdf(p))");
  // d/da E[x] and d/db E[x]: the mean's own derivatives (an exact formula) against the draws'.
  const std::vector<double> as = {0.7, 3.0}, bs = {2.0, 0.6};
  Tensor a = per_draw(as), b = per_draw(bs);
  D::Kumaraswamy(a, b).rsample().sum().backward();
  check_mean(a.grad(), derivative(as, [&](const Tensor& t) { return D::Kumaraswamy(t, f64(bs)).mean(); }), "d/da");
  check_mean(b.grad(), derivative(bs, [&](const Tensor& t) { return D::Kumaraswamy(f64(as), t).mean(); }), "d/db");
  // The variance over the draws, and the mode where the density peaks inside (0, 1).
  check_mean((draws - k.mean()).pow(2), values(k.variance()), "variance");
  const double mode = D::Kumaraswamy(f64({3.0}), f64({4.0})).mode().item<double>();
  const Tensor around = f64({mode - 1e-4, mode, mode + 1e-4});
  const std::vector<double> density = values(D::Kumaraswamy(f64({3.0}), f64({4.0})).log_prob(around));
  CHECK(density[1] > density[0]);
  CHECK(density[1] > density[2]);
  // Where the mode is undefined (NaN), no NaN reaches either concentration's gradient.
  Tensor a_leaf = f64({0.5, 2.0}).requires_grad_(true), b_leaf = f64({3.0, 0.5}).requires_grad_(true);
  const Tensor undefined = D::Kumaraswamy(a_leaf, b_leaf).mode();
  CHECK(td::isnan(undefined).all().item<bool>());
  td::where(td::isnan(undefined), 0.0, undefined).sum().backward();
  check_close(a_leaf.grad(), {0, 0}, 0, 0, "a");
  check_close(b_leaf.grad(), {0, 0}, 0, 0, "b");
  check_gradients(
      [](const std::vector<Tensor>& in) {
        const D::Kumaraswamy d(in[0], in[1]);
        return td::cat({d.log_prob(in[2]), d.cdf(in[2]), d.icdf(in[2]), d.entropy(), d.mode(), d.variance()});
      },
      {f64({1.5, 3.0}).requires_grad_(true), f64({2.0, 1.2}).requires_grad_(true), f64({0.3, 0.8})},
      "Kumaraswamy");
}

TEST_CASE("VonMises draws have its circular moments, and its density integrates to 1", "[cpu]") {
  td::manual_seed(63);
  const std::vector<double> locs = {0.3, -2.0, 3.0, 1.0}, kappas = {1e-4, 0.5, 4.0, 60.0};
  const D::VonMises v(f64(locs), f64(kappas));
  const Tensor draws = v.sample({kDraws});
  REQUIRE(draws.sizes() == Shape{kDraws, 4});
  CHECK((draws >= -kPi).all().item<bool>());
  CHECK((draws < kPi).all().item<bool>());
  // E[cos(x - loc)] = I1(k) / I0(k), E[cos 2(x - loc)] = I2(k) / I0(k) = 1 - 2 I1 / (k I0), E[sin] = 0.
  const Tensor centred = draws - v.loc();
  const std::vector<double> ratio = values(1 - v.variance());
  std::vector<double> second;
  for (size_t i = 0; i < kappas.size(); ++i) second.push_back(1 - 2 * ratio[i] / kappas[i]);
  check_mean(centred.cos(), ratio, "E[cos(x - loc)]");
  check_mean((2 * centred).cos(), second, "E[cos 2(x - loc)]");
  check_mean(centred.sin(), {0, 0, 0, 0}, "E[sin(x - loc)]");
  // float32 parameters draw in float64 inside and return float32.
  const Tensor narrow = D::VonMises(td::tensor({0.5f}), td::tensor({1e-4f})).sample({1000});
  CHECK(narrow.dtype() == td::kFloat32);
  CHECK((narrow.abs() <= static_cast<float>(kPi)).all().item<bool>());

  // The density over one turn sums to 1, and its entropy is -integral p log p: the trapezoid rule
  // is exact to rounding for smooth periodic functions.
  const int64_t points = 20000;
  const Tensor grid = td::arange(points, td::kFloat64) * (2 * kPi / points) - kPi;
  for (const double kappa : {0.01, 1.0, 10.0, 300.0}) {
    INFO("concentration " << kappa);
    const D::VonMises one(0.7, f64({kappa}));
    const Tensor log_p = one.log_prob(grid.unsqueeze(-1));
    const double step = 2 * kPi / points;
    CHECK(std::abs(log_p.exp().sum().item<double>() * step - 1) < 1e-12);
    const double entropy = -(log_p.exp() * log_p).sum().item<double>() * step;
    CHECK(std::abs(one.entropy().item<double>() - entropy) < 1e-11);
  }
  check_gradients(
      [](const std::vector<Tensor>& in) {
        const D::VonMises d(in[0], in[1]);
        return td::cat({d.log_prob(in[2]), d.entropy(), d.variance()});
      },
      {f64({0.3, -1.0, 2.0}).requires_grad_(true), f64({0.02, 3.0, 40.0}).requires_grad_(true), f64({1.0, 0.5, 2.2})},
      "VonMises");
  // Past concentration 1e6 the draws are normal with variance 1 / k; an infinite one gives loc.
  const D::VonMises sharp(f64({1.0, -3.1, 2.0}), f64({1e8, 1e15, INFINITY}));
  const Tensor peaked = sharp.sample({kDraws});
  check_mean((peaked - sharp.loc()).select(1, 0).unsqueeze(-1), {0.0}, "mean at k = 1e8");
  check_mean((peaked - sharp.loc()).select(1, 0).pow(2).unsqueeze(-1) * 1e8, {1.0}, "variance 1 / k");
  CHECK(((peaked.select(1, 1) + 3.1).abs() < 1e-6).all().item<bool>());
  CHECK((peaked.select(1, 2) == 2.0).all().item<bool>());
  check_error([&] { D::VonMises(0.0, f64({NAN}), false).sample(); }, {"VonMises", "accepted no draw"});
  CHECK(!v.has_rsample());
  check_error([&] { v.rsample(); }, {"VonMises", "does not support rsample"});
}

TEST_CASE("ContinuousBernoulli: draws follow its cdf, exact and differentiable at probs 1/2 too", "[cpu]") {
  td::manual_seed(64);
  const D::ContinuousBernoulli cb(f64({0.1, 0.4995, 0.5, 0.8, 0.999}));
  const Tensor draws = cb.sample({kDraws});
  CHECK(ks_statistic(cb, draws) < 2.7);
  check_mean(draws, values(cb.mean()), "mean");
  check_mean((draws - cb.mean()).pow(2), values(cb.variance()), "variance");
  // rsample inverts the cdf: d/d logits E[x] is the mean's derivative (the variance, for an exponential
  // family), at logits 0 and inside PyTorch's band around probs 1/2 as elsewhere.
  const std::vector<double> logits = {0.0, 0.002, -3e-6, 1.5};
  Tensor l = per_draw(logits);
  D::ContinuousBernoulli(l, D::Given::logits).rsample().sum().backward();
  const std::vector<double> want =
      derivative(logits, [](const Tensor& t) { return D::ContinuousBernoulli(t, D::Given::logits).mean(); });
  check_mean(l.grad(), want, "d/d logits E[x]");
  check_close(f64(want), values(D::ContinuousBernoulli(f64(logits), D::Given::logits).variance()), 1e-9, 1e-9,
              "the mean's derivative is the variance");
  // cdf and icdf are inverse to each other on both sides of the expansion's threshold (1e-5).
  for (const double logit : {0.0, 9e-6, 1.1e-5, -0.3, 20.0}) {
    INFO("logits " << logit);
    const D::ContinuousBernoulli d(f64({logit}), D::Given::logits);
    const Tensor u = f64({0.01, 0.3, 0.5, 0.77, 0.999}).unsqueeze(-1);
    check_close(d.cdf(d.icdf(u)), values(u), 1e-14, 1e-14, "cdf(icdf(u))");
  }
  // Large logits: the moments, cdf and icdf take them clamped as the probs are, and stay finite.
  for (const auto dtype : {td::kFloat32, td::kFloat64}) {
    const D::ContinuousBernoulli steep(td::tensor({-300.0, 60.0, 300.0}, dtype), D::Given::logits);
    const Tensor x = steep.rsample({1000});
    CHECK((x >= 0).all().item<bool>());
    CHECK((x <= 1).all().item<bool>());
    CHECK(td::isfinite(steep.cdf(td::full({3}, 0.999, dtype))).all().item<bool>());
    CHECK(td::isfinite(steep.variance()).all().item<bool>());
    CHECK(td::isfinite(steep.mean()).all().item<bool>());
  }
  check_gradients(
      [](const std::vector<Tensor>& in) {
        const D::ContinuousBernoulli d(in[0], D::Given::logits);
        return td::cat({d.cdf(in[1]), d.icdf(in[1]), d.log_prob(in[1]), d.entropy(), d.mean()});
      },
      {f64({-2.0, 3e-4, 0.0, 4e-6, 1.3}).requires_grad_(true), f64({0.2, 0.5, 0.35, 0.9, 0.6})},
      "ContinuousBernoulli");
}

TEST_CASE("RelaxedBernoulli draws exceed 1/2 with probability probs; the logistic law", "[cpu]") {
  td::manual_seed(65);
  const std::vector<double> probs = {0.1, 0.5, 0.85};
  // T x - logits is standard logistic for x ~ LogitRelaxedBernoulli(T, logits), whatever T.
  const D::LogitRelaxedBernoulli logit(f64({0.4}), f64(probs));
  const Tensor x = logit.sample({kDraws});
  const Tensor standard = x * 0.4 - logit.logits();
  CHECK(ks_statistic(D::Uniform(f64({0.0}), f64({1.0})), standard.sigmoid()) < 2.7);
  // sigmoid(x) > 1/2 exactly when the uniform variate exceeds 1 - probs.
  for (const double temperature : {0.1, 1.0, 5.0}) {
    INFO("temperature " << temperature);
    const D::RelaxedBernoulli relaxed(temperature, f64(probs));
    const Tensor y = relaxed.sample({kDraws});
    CHECK((y > 0).all().item<bool>());
    CHECK((y < 1).all().item<bool>());
    check_mean((y > 0.5).to(td::kFloat64), probs, "P(y > 1/2)");
  }
  // Cold draws are nearly Bernoulli draws, and gradients reach the parameters through them.
  Tensor p = f64(probs).requires_grad_(true), t = f64({0.05}).requires_grad_(true);
  const Tensor cold = D::RelaxedBernoulli(t, p).rsample({1000});
  CHECK(((cold < 1e-3) | (cold > 1 - 1e-3)).to(td::kFloat64).mean().item<double>() > 0.8);
  cold.sum().backward();
  CHECK(td::isfinite(p.grad()).all().item<bool>());
  CHECK(td::isfinite(t.grad()).all().item<bool>());
}

TEST_CASE("RelaxedOneHotCategorical draws: points of the simplex whose argmax is Categorical", "[cpu]") {
  td::manual_seed(66);
  const Tensor probs = f64({0.1, 0.2, 0.3, 0.4, 0.5, 0.25, 0.15, 0.1}).view({2, 4});
  for (const double temperature : {0.2, 2.0}) {
    INFO("temperature " << temperature);
    const D::RelaxedOneHotCategorical relaxed(temperature, probs);
    const Tensor y = relaxed.rsample({kDraws});
    REQUIRE(y.sizes() == Shape{kDraws, 2, 4});
    check_close(y.sum(-1), std::vector<double>(2 * kDraws, 1.0), 1e-12, 1e-12, "on the simplex");
    // The Gumbel-max trick: the largest coordinate is a Categorical(probs) draw, at any temperature.
    const Tensor picks = td::one_hot(y.argmax(-1), 4).to(td::kFloat64).reshape({kDraws, 8});
    check_mean(picks, values((probs / probs.sum(-1, true)).reshape({8})), "argmax frequencies");
    // The temperature: t (log y_i - log y_j) - (l_i - l_j) is a difference of two Gumbel variates,
    // standard logistic.
    const Tensor logits = relaxed.logits();
    const Tensor logistic = temperature * (y.select(-1, 0).log() - y.select(-1, 2).log()) -
                            (logits.select(-1, 0) - logits.select(-1, 2));
    CHECK(ks_statistic(D::Uniform(f64({0.0}), f64({1.0})), logistic.sigmoid()) < 2.7);
  }
  check_gradients([](const std::vector<Tensor>& in) { return D::ExpRelaxedCategorical(in[0], in[1]).log_prob(in[2]); },
                  {td::full({}, 0.7, td::kFloat64).requires_grad_(true), f64({0.2, 0.5, 0.3}).requires_grad_(true),
                   f64({-1.2, -0.5, -1.9})},
                  "ExpRelaxedCategorical log_prob");
}

TEST_CASE("LowRankMultivariateNormal equals the MultivariateNormal of its covariance", "[cpu]") {
  td::manual_seed(67);
  const Tensor loc = f64({0.5, -1.0, 2.0, 0.0, 1.0, 0.3, -0.2, 0.8}).view({2, 4});
  const Tensor w = f64({1.0, 0.2, -0.5, 0.7, 0.3, 1.1, 0.0, -0.4}).view({4, 2});
  const Tensor d = f64({0.5, 1.5, 0.2, 0.9});
  const D::LowRankMultivariateNormal low(loc, w, d);
  CHECK(low.batch_shape() == Shape{2});
  CHECK(low.event_shape() == Shape{4});
  const Tensor covariance = w.matmul(w.t()) + td::diag_embed(d);
  const D::MultivariateNormal full(loc, covariance);
  const Tensor x = f64({0.1, 0.2, 0.3, 0.4, -1.0, 2.0, 0.5, 0.0, 3.0, -2.0, 1.0, 1.0}).view({3, 1, 4});
  check_close(low.log_prob(x), values(full.log_prob(x)), 1e-12, 1e-12, "log_prob");
  check_close(low.entropy(), values(full.entropy()), 1e-12, 1e-12, "entropy");
  check_close(low.variance(), values(full.variance()), 1e-12, 1e-12, "variance");
  check_close(low.covariance_matrix(), values(full.covariance_matrix()), 1e-12, 1e-12, "covariance_matrix");
  check_close(low.precision_matrix(), values(full.precision_matrix()), 1e-12, 1e-12, "precision_matrix");
  check_close(low.scale_tril(), values(full.scale_tril()), 1e-12, 1e-12, "scale_tril");
  // KL both ways and between two low-rank ones, against the full matrices' closed form.
  const D::LowRankMultivariateNormal other(f64({0.0, 0.5, 1.0, -1.0}), w * 0.5, d + 0.3);
  const D::MultivariateNormal other_full(other.loc(), other.covariance_matrix());
  check_close(D::kl_divergence(low, other), values(D::kl_divergence(full, other_full)), 1e-12, 1e-12, "KL low || low");
  check_close(D::kl_divergence(full, other), values(D::kl_divergence(full, other_full)), 1e-12, 1e-12, "KL full || low");
  check_close(D::kl_divergence(low, other_full), values(D::kl_divergence(full, other_full)), 1e-12, 1e-12,
              "KL low || full");
  // Draws: their covariance is W W^T + D.
  const Tensor draws = low.sample({kDraws}).select(1, 0);  // [N, 4]
  const Tensor centred = draws - loc.select(0, 0);
  const Tensor products = (centred.unsqueeze(-1) * centred.unsqueeze(-2)).reshape({kDraws, 16});
  check_mean(products, values(covariance.reshape({16})), "covariance of the draws");
  check_gradients(
      [](const std::vector<Tensor>& in) {
        const D::LowRankMultivariateNormal dist(in[0], in[1], in[2]);
        return td::cat({dist.log_prob(in[3]).reshape({1}), dist.entropy().reshape({1})});
      },
      {f64({0.2, -0.3, 0.5}).requires_grad_(true), f64({0.4, -0.2, 0.9, 0.1, 0.3, 0.7}).view({3, 2}).requires_grad_(true),
       f64({0.6, 1.1, 0.4}).requires_grad_(true), f64({1.0, 0.0, -0.5})},
      "LowRankMultivariateNormal");
  // rsample's pathwise gradients: E|x|^2 = |loc|^2 + trace(W W^T) + sum D, so d/dW = 2 W, d/dD = 1.
  Tensor wl = w.expand({kDraws, 4, 2}).contiguous().requires_grad_(true);
  Tensor dl = d.expand({kDraws, 4}).contiguous().requires_grad_(true);
  D::LowRankMultivariateNormal(loc.select(0, 0), wl, dl).rsample().pow(2).sum().backward();
  check_mean(wl.grad().reshape({kDraws, 8}), values((2 * w).reshape({8})), "d/dW E|x|^2");
  check_mean(dl.grad(), {1, 1, 1, 1}, "d/dD E|x|^2");
  // A batch of diagonals beside one factor, against a full Gaussian (PyTorch's KL fails there).
  const D::LowRankMultivariateNormal diagonals(f64({0.0, 0.5, 1.0, -1.0}), w, td::stack({d, d * 2}));
  const D::MultivariateNormal reference(loc.select(0, 1), other.covariance_matrix());
  check_close(D::kl_divergence(diagonals, reference),
              values(D::kl_divergence(D::MultivariateNormal(diagonals.loc(), diagonals.covariance_matrix()), reference)),
              1e-12, 1e-12, "KL with batched cov_diag");
}

TEST_CASE("Multinomial draws count total_count categories; entropy is the enumerated sum", "[cpu]") {
  td::manual_seed(68);
  const Tensor probs = f64({0.2, 0.5, 0.3, 0.6, 0.1, 0.3}).view({2, 3});
  const D::Multinomial m(10, probs);
  const Tensor counts = m.sample({kDraws});
  REQUIRE(counts.sizes() == Shape{kDraws, 2, 3});
  CHECK(counts.dtype() == td::kFloat64);
  CHECK((counts.sum(-1) == 10).all().item<bool>());
  check_mean(counts.reshape({kDraws, 6}), values(m.mean().reshape({6})), "mean n p");
  check_mean((counts - m.mean()).pow(2).reshape({kDraws, 6}), values(m.variance().reshape({6})), "variance");
  // entropy: -sum p log p over every composition of n = 4 into 3 counts.
  const D::Multinomial small(4, probs);
  std::vector<double> compositions;
  for (int a = 0; a <= 4; ++a) {
    for (int b = 0; a + b <= 4; ++b) compositions.insert(compositions.end(), {double(a), double(b), double(4 - a - b)});
  }
  const Tensor all = f64(compositions).view({-1, 1, 3});
  const Tensor log_p = small.log_prob(all);
  check_close(log_p.exp().sum(0), {1.0, 1.0}, 1e-13, 1e-13, "the compositions' probabilities sum to 1");
  check_close(small.entropy(), values(-(log_p.exp() * log_p).sum(0)), 1e-12, 1e-12, "entropy");
  // The draws' distribution, both ways of drawing: up to K = 3 trials category by category, beyond
  // that one binomial per category. Each composition of n comes as often as its probability p,
  // within 5 standard errors sqrt(p (1 - p) / N) (from p: a rare one may come 0 times).
  for (int n : {2, 4}) {
    INFO("total_count " << n);
    std::vector<double> compositions_of_n;
    for (int a = 0; a <= n; ++a) {
      for (int b = 0; a + b <= n; ++b) compositions_of_n.insert(compositions_of_n.end(), {double(a), double(b), double(n - a - b)});
    }
    const Tensor each = f64(compositions_of_n).view({1, -1, 1, 3});
    const D::Multinomial multinomial(n, probs);
    const Tensor hits = (multinomial.sample({kDraws}).unsqueeze(1) == each).all(-1).to(td::kFloat64);  // [N, C, 2]
    const std::vector<double> frequency = values(hits.mean({0}));
    const std::vector<double> p = values(multinomial.log_prob(each.squeeze(0)).exp());
    for (size_t i = 0; i < p.size(); ++i) {
      INFO("composition " << i / 2 << " of batch row " << i % 2 << ": p " << p[i] << ", frequency " << frequency[i]);
      CHECK(std::abs(frequency[i] - p[i]) <= 5 * std::sqrt(p[i] * (1 - p[i]) / kDraws));
    }
  }
  // A trillion trials cost K binomial draws: whole counts, mean n p, none where p is 0.
  const D::Multinomial trillion(1000000000000, f64({0.25, 0.0, 0.75}));
  const Tensor big = trillion.sample({1000});
  CHECK((big >= 0).all().item<bool>());
  CHECK((big == big.floor()).all().item<bool>());
  CHECK((big.select(-1, 1) == 0).all().item<bool>());
  check_mean(big, {2.5e11, 0, 7.5e11}, "n p at n = 1e12");
  CHECK(D::Multinomial(0, probs).sample({2}).sum().item<double>() == 0);
  check_close(D::Multinomial(0, probs).entropy(), {0.0, 0.0}, 1e-15, 1e-15, "no trials");
  CHECK(!m.has_rsample());
}

TEST_CASE("Wishart draws have its mean and variance; their gradients the mean's derivative", "[cpu]") {
  td::manual_seed(69);
  const Tensor a = f64({1.0, 0.3, -0.2, 0.5, 1.2, 0.4, 0.1, -0.6, 0.9}).view({3, 3});
  const Tensor sigma = a.matmul(a.t()) + td::eye(3, -1, td::kFloat64) * 0.5;
  Tensor df = td::full({kDraws}, 5.5, td::kFloat64).requires_grad_(true);
  const D::Wishart w(df, sigma);
  const Tensor x = w.rsample();
  REQUIRE(x.sizes() == Shape{kDraws, 3, 3});
  check_close(x.detach() - x.detach().transpose(-2, -1), std::vector<double>(9 * kDraws, 0.0), 0, 1e-12, "symmetric");
  CHECK((std::get<1>(td::linalg::cholesky_ex(x.detach())) == 0).all().item<bool>());
  const D::Wishart one(5.5, sigma);
  check_mean(x.detach().reshape({kDraws, 9}), values(one.mean().reshape({9})), "mean df Sigma");
  check_mean((x.detach() - one.mean()).pow(2).reshape({kDraws, 9}), values(one.variance().reshape({9})), "variance");
  // d/d df E[sum X] = sum Sigma, per draw through the chi-squared draws.
  x.sum().backward();
  check_mean(df.grad().unsqueeze(-1), {sigma.sum().item<double>()}, "d/d df E[sum X]");
  // A number df beside a batch of matrices.
  const D::Wishart batched(4.0, sigma.expand({2, 3, 3}), D::Wishart::Matrix::covariance);
  CHECK(batched.batch_shape() == Shape{2});
  CHECK(batched.sample({5}).sizes() == Shape{5, 2, 3, 3});
  CHECK(td::isnan(batched.mode()).all().item<bool>());  // df <= p + 1
  check_gradients(
      [](const std::vector<Tensor>& in) {
        // The covariance made symmetric: cholesky reads one triangle, and returns a symmetric gradient.
        const D::Wishart dist(in[0], (in[1] + in[1].transpose(-2, -1)) / 2);
        return td::cat({dist.log_prob(in[2]).reshape({-1}), dist.entropy().reshape({-1})});
      },
      {f64({3.5}).requires_grad_(true), sigma.clone().requires_grad_(true), sigma.matmul(sigma) + td::eye(3, -1, td::kFloat64)},
      "Wishart");
}

TEST_CASE("LKJCholesky draws: correlation factors with the onion method's moments", "[cpu]") {
  td::manual_seed(70);
  for (const int64_t dim : {2, 4}) {
    for (const double eta : {0.5, 1.0, 4.0}) {
      INFO("dim " << dim << ", concentration " << eta);
      const D::LKJCholesky lkj(dim, f64({eta}));
      const Tensor l = lkj.sample({kDraws}).select(1, 0);  // [N, dim, dim]
      CHECK((l.tril() == l).all().item<bool>());
      CHECK((l.diagonal(0, -2, -1) > 0).all().item<bool>());
      check_close(l.pow(2).sum(-1), std::vector<double>(kDraws * dim, 1.0), 1e-12, 1e-12, "unit rows");
      // Every off-diagonal correlation is 2 Beta(b, b) - 1 with b = eta - 1 + dim / 2: mean 0 and
      // mean square 1 / (2 eta + dim - 1), in every row (PyTorch's draws fail this past the first).
      const Tensor corr = l.matmul(l.transpose(-2, -1)).reshape({kDraws, dim * dim});
      std::vector<int64_t> pairs;
      for (int64_t i = 0; i < dim; ++i) {
        for (int64_t j = i + 1; j < dim; ++j) pairs.push_back(i * dim + j);
      }
      const Tensor r = corr.index_select(1, td::tensor(pairs));
      const auto count = static_cast<size_t>(r.size(1));
      check_mean(r, std::vector<double>(count, 0.0), "E[r]");
      check_mean(r.pow(2), std::vector<double>(count, 1 / (2 * eta + static_cast<double>(dim) - 1)), "E[r^2]");
    }
  }
  // For dim 2 the density over r = L[1][0] is (1 - r^2)^(eta - 1) / B(1/2, eta): it integrates to 1
  // (Simpson's rule; eta >= 1 keeps the integrand smooth at the ends).
  const int64_t points = 20001;
  const Tensor r = td::linspace(-1.0, 1.0, points, td::kFloat64);
  Tensor factors = td::zeros({points, 2, 2}, td::kFloat64);
  factors.select(-1, 0).select(-1, 0).fill_(1.0);
  factors.select(-2, 1).select(-1, 0).copy_(r);
  factors.select(-2, 1).select(-1, 1).copy_((1 - r.pow(2)).clamp_min(1e-300).sqrt());
  Tensor weights = td::full({points}, 2.0, td::kFloat64);
  weights.narrow(0, 1, points - 1).view({-1, 2}).select(1, 0).fill_(4.0);
  weights.narrow(0, 0, 1).fill_(1.0);
  weights.narrow(0, points - 1, 1).fill_(1.0);
  for (const double eta : {1.0, 2.0, 3.5}) {
    INFO("concentration " << eta);
    const Tensor density = D::LKJCholesky(2, f64({eta}), false).log_prob(factors.unsqueeze(1)).squeeze(1).exp();
    const double integral = (density * weights).sum().item<double>() * (2.0 / (points - 1)) / 3;
    CHECK(std::abs(integral - 1) < 1e-9);
  }
  check_gradients([](const std::vector<Tensor>& in) { return D::LKJCholesky(3, in[0]).log_prob(in[1]); },
                  {f64({0.7, 2.0}).requires_grad_(true), D::LKJCholesky(3, f64({1.5})).sample({2}).squeeze(1)},
                  "LKJCholesky log_prob");
  CHECK(!D::LKJCholesky(3).has_rsample());
}

TEST_CASE("HalfCauchy, InverseGamma and GeneralizedPareto draws follow their cdf; their gradients", "[cpu]") {
  td::manual_seed(71);
  const D::HalfCauchy half(f64({0.5, 2.0}));
  CHECK(ks_statistic(half, half.sample({kDraws})) < 2.7);
  const D::InverseGamma inverse(f64({0.7, 3.0, 12.0}), f64({1.0, 0.5, 4.0}));
  CHECK(ks_statistic(inverse, inverse.sample({kDraws})) < 2.7);
  // Concentration 0 (the exponential), just beside it on both sides (the series), and both signs.
  const D::GeneralizedPareto gp(f64({0.5, -1.0, 0.0, 2.0, 0.0}), f64({1.0, 2.0, 0.5, 1.5, 1.0}),
                                f64({0.0, 1e-7, -2e-5, 0.3, -0.4}));
  const Tensor gp_draws = gp.sample({kDraws});
  CHECK(ks_statistic(gp, gp_draws) < 2.7);
  CHECK((gp_draws.select(1, 4) <= 2.5).all().item<bool>());  // loc - scale / xi bounds xi < 0
  check_close(gp.cdf(gp.icdf(f64({0.1, 0.5, 0.9, 0.999, 0.3}))), {0.1, 0.5, 0.9, 0.999, 0.3}, 1e-13, 1e-13,
              "cdf(icdf(p))");
  // Pathwise: HalfCauchy's x = scale |c|, so d/d scale x = x / scale per draw; InverseGamma's
  // E[x] = rate / (a - 1); GeneralizedPareto's E[x] = loc + scale / (1 - xi).
  Tensor scale = f64({2.0}).requires_grad_(true);
  const Tensor x = D::HalfCauchy(scale).rsample({1000});
  x.sum().backward();
  check_close(scale.grad(), {x.detach().sum().item<double>() / 2}, 1e-12, 0, "HalfCauchy scale");
  Tensor rate = per_draw({1.5}), a = per_draw({5.0});
  D::InverseGamma(a, rate).rsample().sum().backward();
  check_mean(rate.grad(), {1 / 4.0}, "InverseGamma d/d rate E[x]");
  check_mean(a.grad(), {-1.5 / 16}, "InverseGamma d/da E[x]");
  Tensor xi = per_draw({0.0, 0.2});
  D::GeneralizedPareto(0.5, f64({1.5}), xi).rsample().sum().backward();
  check_mean(xi.grad(), {1.5, 1.5 / 0.64}, "GeneralizedPareto d/d xi E[x]");
  // gradcheck across xi = 0: the series and the closed forms agree to rounding.
  for (const double c : {0.0, 3e-7, -4e-5, 0.25, -0.3}) {
    INFO("concentration " << c);
    check_gradients(
        [](const std::vector<Tensor>& in) {
          const D::GeneralizedPareto d(in[0], in[1], in[2]);
          return td::cat({d.log_prob(in[3]), d.cdf(in[3]), d.icdf(f64({0.2, 0.7})), d.mean(), d.entropy()});
        },
        {f64({0.1, 0.2}).requires_grad_(true), f64({1.3, 0.8}).requires_grad_(true),
         f64({c, c}).requires_grad_(true), f64({0.9, 2.0})},
        "GeneralizedPareto");
  }
  check_gradients([](const std::vector<Tensor>& in) { return D::InverseGamma(in[0], in[1]).log_prob(in[2]); },
                  {f64({0.8, 3.0}).requires_grad_(true), f64({1.2, 0.4}).requires_grad_(true), f64({0.5, 2.0})},
                  "InverseGamma log_prob");
}

TEST_CASE("OneHotCategoricalStraightThrough: one-hot draws, gradients as through probs", "[cpu]") {
  td::manual_seed(72);
  Tensor logits = f64({0.3, -1.0, 2.0, 0.5}).requires_grad_(true);
  const D::OneHotCategoricalStraightThrough st(logits, D::Given::logits);
  const Tensor draws = st.rsample({50});
  CHECK(((draws == 0) | (draws == 1)).all().item<bool>());
  check_close(draws.sum(-1), std::vector<double>(50, 1.0), 0, 0, "one-hot");
  const Tensor weights = td::arange(4, td::kFloat64) + 1;
  (draws * weights).sum().backward();
  Tensor again = f64({0.3, -1.0, 2.0, 0.5}).requires_grad_(true);
  (D::OneHotCategorical(again, D::Given::logits).probs() * weights * 50).sum().backward();
  check_close(logits.grad(), values(again.grad()), 1e-14, 1e-14, "the gradient of 50 probs");
  CHECK(std::dynamic_pointer_cast<D::OneHotCategoricalStraightThrough>(st.expand({3})) != nullptr);
}

TEST_CASE("this file's families expand, keep their kind and score the same values", "[cpu]") {
  const Tensor p = f64({0.6, 1.7});
  const Tensor unit = f64({0.3, 0.8});
  const Tensor row = f64({0.2, 0.5, 0.3});
  const std::vector<std::pair<std::shared_ptr<D::Distribution>, Tensor>> families = {
      {std::make_shared<D::FisherSnedecor>(p, 3.0), p},
      {std::make_shared<D::Kumaraswamy>(p, 2.0), unit},
      {std::make_shared<D::VonMises>(p, 2.0), p},
      {std::make_shared<D::ContinuousBernoulli>(unit), unit},
      {std::make_shared<D::ContinuousBernoulli>(p, D::Given::logits), unit},
      {std::make_shared<D::LogitRelaxedBernoulli>(0.5, unit), p},
      {std::make_shared<D::RelaxedBernoulli>(0.5, p, D::Given::logits), unit},
      {std::make_shared<D::ExpRelaxedCategorical>(0.5, row), row.log()},
      {std::make_shared<D::RelaxedOneHotCategorical>(0.5, row), row},
      {std::make_shared<D::Multinomial>(5, row), f64({1.0, 3.0, 1.0})},
      {std::make_shared<D::LowRankMultivariateNormal>(row, f64({1.0, 0.5, -0.3}).view({3, 1}), row), row},
      {std::make_shared<D::Wishart>(f64({3.0, 4.5}), td::eye(2, -1, td::kFloat64)), td::eye(2, -1, td::kFloat64) * 2},
      {std::make_shared<D::LKJCholesky>(2, p), td::eye(2, -1, td::kFloat64)},
      {std::make_shared<D::HalfCauchy>(p), p},
      {std::make_shared<D::InverseGamma>(p, 2.0), p},
      {std::make_shared<D::GeneralizedPareto>(0.1, p, f64({-0.2, 0.3})), unit},
      {std::make_shared<D::OneHotCategoricalStraightThrough>(row), f64({0.0, 1.0, 0.0})},
  };
  for (const auto& [d, value] : families) {
    INFO(d->name());
    const Shape batch = d->batch_shape().empty() ? Shape{3} : Shape{3, d->batch_shape()[0]};
    const auto wide = d->expand(batch);
    CHECK(wide->name() == d->name());
    CHECK(wide->batch_shape() == batch);
    CHECK(wide->event_shape() == d->event_shape());
    Shape drawn = {2};
    drawn.insert(drawn.end(), batch.begin(), batch.end());
    drawn.insert(drawn.end(), d->event_shape().begin(), d->event_shape().end());
    CHECK(wide->sample({2}).sizes() == drawn);
    check_close(wide->log_prob(value), values(d->log_prob(value).expand(batch)), 0, 0);
  }
  // Numbers alone are float32; the temperature takes the parameters' dtype.
  CHECK(D::Kumaraswamy(2.0, 3.0).sample().dtype() == td::kFloat32);
  CHECK(D::RelaxedBernoulli(0.5, f64({0.3})).temperature().dtype() == td::kFloat64);
}

TEST_CASE("this file's families refuse bad parameters and values, naming them", "[cpu]") {
  const Tensor negative = f64({1.0, -1.0});
  const Tensor row = f64({0.2, 0.5, 0.3});
  const Snapshot before(negative), row_before(row);
  check_error([&] { D::FisherSnedecor(negative, 1.0); }, {"FisherSnedecor", "df1", "[2]", "GreaterThan"});
  check_error([&] { D::FisherSnedecor(1.0, negative); }, {"FisherSnedecor", "df2", "GreaterThan"});
  check_error([&] { D::Kumaraswamy(negative, 1.0); }, {"Kumaraswamy", "concentration1", "GreaterThan"});
  check_error([&] { D::Kumaraswamy(1.0, negative); }, {"Kumaraswamy", "concentration0", "GreaterThan"});
  check_error([&] { D::VonMises(0.0, negative); }, {"VonMises", "concentration", "GreaterThan"});
  check_error([&] { D::VonMises(f64({NAN}), 1.0); }, {"VonMises", "loc", "Real()"});
  check_error([&] { D::ContinuousBernoulli{negative}; }, {"ContinuousBernoulli", "probs", "Interval"});
  check_error([&] { D::ContinuousBernoulli(0.3, D::Given::probs, std::nullopt, {0.6, 0.7}); },
              {"ContinuousBernoulli", "lims", "0.5"});
  check_error([&] { D::LogitRelaxedBernoulli(negative, f64({0.3, 0.3})); },
              {"LogitRelaxedBernoulli", "temperature", "GreaterThan"});
  check_error([&] { D::RelaxedBernoulli(f64({1.0, 2.0, 3.0}), f64({0.3, 0.3})); },
              {"RelaxedBernoulli", "temperature", "[3]", "[2]"});
  check_error([&] { D::RelaxedBernoulli(0.5, f64({1.5})); }, {"RelaxedBernoulli: ", "probs", "Interval"});
  check_error([&] { D::ExpRelaxedCategorical(f64({1.0, 2.0}), row); },
              {"ExpRelaxedCategorical", "temperature", "[2]", "does not broadcast to the batch shape []"});
  check_error([&] { D::RelaxedOneHotCategorical(0.5, f64({0.5}).squeeze()); },
              {"RelaxedOneHotCategorical", "at least one dim"});
  check_error([&] { D::RelaxedOneHotCategorical(-0.5, row); }, {"RelaxedOneHotCategorical", "temperature", "GreaterThan"});
  check_error([&] { D::Multinomial(-1, row); }, {"Multinomial", "total_count", "-1"});
  check_error([&] { D::Multinomial(3, f64({-0.2, 0.5})); }, {"Multinomial", "probs", "Simplex"});
  check_error([&] { D::ExpRelaxedCategorical(0.5, f64({0.2, NAN}), D::Given::logits); },
              {"ExpRelaxedCategorical", "logits", "Real()"});
  check_error([&] { D::LowRankMultivariateNormal(row, f64({1.0, 2.0}).view({2, 1}), row); },
              {"LowRankMultivariateNormal", "cov_factor", "[2, 1]", "n = 3"});
  check_error([&] { D::LowRankMultivariateNormal(row, row.view({3, 1}), f64({1.0, 2.0})); },
              {"LowRankMultivariateNormal", "cov_diag", "n = 3"});
  check_error([&] { D::LowRankMultivariateNormal(row, row.view({3, 1}), -row); },
              {"LowRankMultivariateNormal", "cov_diag", "GreaterThan"});
  check_error([&] { D::LowRankMultivariateNormal(row, row.view({3, 1}).to(td::kFloat32), row); },
              {"LowRankMultivariateNormal", "dtype", "float64", "float32"});
  const Tensor identity = td::eye(3, -1, td::kFloat64);
  check_error([&] { D::Wishart(2.0, identity); }, {"Wishart", "df", "greater than p - 1 = 2"});
  check_error([&] { D::Wishart(4.0, Tensor()); }, {"Wishart", "p, p]", "none"});
  check_error([&] { D::Wishart(f64({NAN}), identity); }, {"Wishart", "df", "not NaN"});
  check_error([&] { D::OneHotCategorical(f64({-0.2, 0.5})); }, {"OneHotCategorical", "probs", "Simplex"});
  check_error([&] { D::Wishart(4.0, identity.narrow(0, 0, 2)); }, {"Wishart", "p, p]", "[2, 3]"});
  check_error([&] { D::Wishart(4.0, -identity); }, {"Wishart", "covariance_matrix", "PositiveDefinite()"});
  check_error([&] { D::Wishart(4.0, identity.t().triu() + 1, D::Wishart::Matrix::scale_tril); },
              {"Wishart", "scale_tril", "LowerCholesky()"});
  check_error([&] { D::Wishart(4.0, identity).log_prob(-identity); }, {"Wishart", "support", "PositiveDefinite()"});
  check_error([&] { D::LKJCholesky(1); }, {"LKJCholesky", "dim", "at least 2", "1"});
  check_error([&] { D::LKJCholesky(3, negative); }, {"LKJCholesky", "concentration", "GreaterThan"});
  check_error([&] { D::LKJCholesky(3).log_prob(identity * 2); }, {"LKJCholesky", "support", "CorrCholesky()"});
  check_error([&] { D::HalfCauchy{negative}; }, {"HalfCauchy", "scale", "GreaterThan"});
  check_error([&] { D::InverseGamma(negative, 1.0); }, {"InverseGamma", "concentration", "GreaterThan"});
  check_error([&] { D::GeneralizedPareto(0.0, negative, 0.1); }, {"GeneralizedPareto", "scale", "GreaterThan"});
  check_error([&] { D::GeneralizedPareto(0.0, 1.0, f64({NAN})); }, {"GeneralizedPareto", "concentration", "Real()"});
  before.check_unchanged(negative);
  row_before.check_unchanged(row);
  check_error([&] { D::InverseGamma(2.0, 1.0).log_prob(f64({0.0})); }, {"InverseGamma", "support", "GreaterThan"});
  check_error([&] { D::GeneralizedPareto(1.0, 1.0, 0.2).log_prob(f64({0.5})); }, {"GeneralizedPareto", "support"});
  check_error([&] { D::GeneralizedPareto(0.0, 1.0, -0.5).cdf(f64({2.5})); }, {"GeneralizedPareto", "support"});
  check_error([&] { D::HalfCauchy(1.0).log_prob(f64({-0.5})); }, {"HalfCauchy", "support"});
  // Values outside the support.
  check_error([&] { D::FisherSnedecor(2.0, 3.0).log_prob(f64({0.0})); }, {"FisherSnedecor", "support", "GreaterThan"});
  check_error([&] { D::Kumaraswamy(2.0, 3.0).cdf(f64({1.5})); }, {"Kumaraswamy", "support", "Interval"});
  check_error([&] { D::ContinuousBernoulli(0.3).log_prob(f64({-0.1})); }, {"ContinuousBernoulli", "support"});
  check_error([&] { D::RelaxedOneHotCategorical(0.5, row).log_prob(f64({0.5, 0.5, 0.5})); },
              {"RelaxedOneHotCategorical", "support", "Simplex()"});
  check_error([&] { D::Multinomial(3, row).log_prob(f64({1.0, 2.0, 1.0})); },
              {"Multinomial", "support", "upper_bound=3"});
  check_error([&] { D::Multinomial(3, row).log_prob(f64({1.5, 0.5, 1.0})); }, {"Multinomial", "support"});
  check_error([&] { D::kl_divergence(D::LowRankMultivariateNormal(row, row.view({3, 1}), row),
                                     D::MultivariateNormal(f64({0.0, 0.0}), td::eye(2, -1, td::kFloat64))); },
              {"kl_divergence", "different event shapes", "[3]", "[2]"});
  check_error([&] { D::kl_divergence(D::VonMises(0.0, 1.0), D::VonMises(0.0, 2.0)); },
              {"kl_divergence", "between VonMises and VonMises"});
  // Without validation the parameters are taken as given.
  CHECK(D::Kumaraswamy(negative, 1.0, false).batch_shape() == Shape{2});
}

TEST_CASE("KL with a ContinuousBernoulli: finite for a Uniform over exactly [0, 1]", "[cpu]") {
  // PyTorch's +inf mask includes the boundary; KL(p || U[0, 1]) = -H(p) and KL(U[0, 1] || q) =
  // E_U[-log q], both finite.
  const D::ContinuousBernoulli cb(f64({0.2, 0.7}));
  const D::Uniform unit(f64({0.0}), f64({1.0}));
  check_close(D::kl_divergence(cb, unit), values(-cb.entropy()), 1e-15, 1e-15, "CB || U[0, 1]");
  const int64_t points = 200001;
  const Tensor grid = td::linspace(0.0, 1.0, points, td::kFloat64).unsqueeze(-1);
  const Tensor minus_log_q = -cb.log_prob(grid);
  // Simpson's rule on the smooth integrand.
  Tensor weights = td::full({points, 1}, 2.0, td::kFloat64);
  weights.narrow(0, 1, points - 1).view({-1, 2}).select(1, 0).fill_(4.0);  // the odd points
  weights.narrow(0, 0, 1).fill_(1.0);
  weights.narrow(0, points - 1, 1).fill_(1.0);
  const Tensor integral = (minus_log_q * weights).sum(0) / (3.0 * (points - 1));
  check_close(D::kl_divergence(unit, cb), values(integral), 1e-12, 1e-12, "U[0, 1] || CB");
}
