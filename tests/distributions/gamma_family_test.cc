// The distributions drawn through gamma variates, and Pareto and Weibull: their values are PyTorch's
// through distributions_test.cc's fixture; here their draws (a Kolmogorov-Smirnov test against
// their own cdf where they have one, the moments otherwise), rsample's pathwise gradients (their
// means over many draws are the derivatives of the expectations), expand, validation and errors,
// and the KLs PyTorch cannot broadcast.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
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
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

}  // namespace

TEST_CASE("Gamma, Chi2, Pareto and Weibull draws follow their cdf; Beta, Dirichlet, StudentT and NegativeBinomial "
          "their moments",
          "[cpu]") {
  td::manual_seed(41);
  const Tensor concentration = f64({0.3, 1.0, 4.5}), rate = f64({2.0, 0.5, 1.0});
  const D::Gamma gamma(concentration, rate);
  const Tensor gamma_draws = gamma.sample({kDraws});
  REQUIRE(gamma_draws.sizes() == Shape{kDraws, 3});
  CHECK(ks_statistic(gamma, gamma_draws) < 2.7);
  const D::Chi2 chi2(f64({0.5, 3.0, 40.0}));
  CHECK(ks_statistic(chi2, chi2.sample({kDraws})) < 2.7);
  const D::Pareto pareto(f64({0.5, 2.0, 1.0}), f64({0.7, 2.5, 9.0}));
  CHECK(ks_statistic(pareto, pareto.sample({kDraws})) < 2.7);
  const D::Weibull weibull(f64({0.5, 2.0, 1.0}), f64({0.6, 1.0, 4.0}));
  CHECK(ks_statistic(weibull, weibull.sample({kDraws})) < 2.7);

  // Beta (a, b) and the Dirichlet's coordinates: means a / (a + b), variances through the squared
  // deviations, whose mean is the variance.
  const D::Beta beta(f64({0.5, 2.0, 7.0}), f64({0.5, 5.0, 1.5}));
  const Tensor beta_draws = beta.sample({kDraws});
  CHECK(((beta_draws >= 0) & (beta_draws <= 1)).all().item<bool>());
  check_mean(beta_draws, values(beta.mean()), "Beta mean");
  check_mean((beta_draws - beta.mean()).pow(2), values(beta.variance()), "Beta variance");
  const D::Dirichlet dirichlet(f64({0.4, 1.0, 2.5, 6.0}));
  const Tensor dirichlet_draws = dirichlet.sample({kDraws});
  REQUIRE(dirichlet_draws.sizes() == Shape{kDraws, 4});
  check_close(dirichlet_draws.sum(-1), std::vector<double>(kDraws, 1.0), 1e-14, 0, "on the simplex");
  check_mean(dirichlet_draws, values(dirichlet.mean()), "Dirichlet mean");
  check_mean((dirichlet_draws - dirichlet.mean()).pow(2), values(dirichlet.variance()), "Dirichlet variance");
  // The covariance of two coordinates, -a_i a_j / (a0^2 (a0 + 1)).
  const Tensor centred = dirichlet_draws - dirichlet.mean();
  check_mean((centred.select(1, 0) * centred.select(1, 3)).unsqueeze(1), {-0.4 * 6 / (99.0 * 10.9)}, "covariance");
  // StudentT: df 5 and up, where the variance is finite and the squared deviations have a variance.
  const D::StudentT student(f64({5.0, 8.0, 30.0}), f64({-1.0, 0.0, 2.0}), f64({0.5, 1.0, 3.0}));
  const Tensor student_draws = student.sample({kDraws});
  check_mean(student_draws, values(student.mean()), "StudentT mean");
  check_mean((student_draws - student.mean()).pow(2), values(student.variance()), "StudentT variance");
  // NegativeBinomial: whole numbers with the mean r p / (1 - p) and variance mean / (1 - p).
  const D::NegativeBinomial negative(f64({0.5, 3.0, 20.0}), f64({0.3, 0.5, 0.8}));
  const Tensor counts = negative.sample({kDraws});
  CHECK((counts == counts.floor()).all().item<bool>());
  CHECK((counts >= 0).all().item<bool>());
  check_mean(counts, values(negative.mean()), "NegativeBinomial mean");
  check_mean((counts - negative.mean()).pow(2), values(negative.variance()), "NegativeBinomial variance");
}

TEST_CASE("rsample's pathwise gradients average to the derivatives of the expectations", "[cpu]") {
  td::manual_seed(43);
  {
    // Gamma: d/da E[x] = 1 / rate and d/d rate E[x] = -a / rate^2, summed over the draws.
    Tensor a = f64({0.3, 2.0, 9.0}).requires_grad_(true), rate = f64({1.5, 0.5, 2.0}).requires_grad_(true);
    const Tensor x = D::Gamma(a, rate).rsample({kDraws});
    REQUIRE(x.requires_grad());
    x.sum().backward();
    // The rate's gradient is exact per draw: x = g / rate, so d/d rate = -x / rate.
    check_close(rate.grad(), values(-(x.detach() / rate.detach()).sum({0})), 1e-10, 0, "Gamma rate");
    // dx/da = standard_gamma_grad(a, g) / rate for each draw g = x rate.
    const Tensor per_draw = td::standard_gamma_grad(a.detach().expand({kDraws, 3}), x.detach() * rate.detach()) /
                            rate.detach();
    check_close(a.grad(), values(per_draw.sum({0})), 1e-10, 0, "Gamma concentration, per draw");
    check_mean(per_draw, {1 / 1.5, 1 / 0.5, 1 / 2.0}, "Gamma: d/da E[x] = 1 / rate");
  }
  {
    // Chi2: E[x] = df, so the mean of dx/d df is 1.
    Tensor df = f64({0.7, 4.0}).expand({kDraws, 2}).contiguous().requires_grad_(true);
    D::Chi2(df).rsample().sum().backward();
    check_mean(df.grad(), {1, 1}, "Chi2 d/d df E[x]");
  }
  {
    // Beta (a, b): d/da E[x] = b / (a + b)^2, d/db E[x] = -a / (a + b)^2, one draw at a time.
    const std::vector<double> as = {0.5, 2.0, 6.0}, bs = {1.5, 2.0, 0.8};
    Tensor a = f64(as).expand({kDraws, 3}).contiguous().requires_grad_(true);
    Tensor b = f64(bs).expand({kDraws, 3}).contiguous().requires_grad_(true);
    D::Beta(a, b).rsample().sum().backward();
    std::vector<double> da, db;
    for (size_t i = 0; i < 3; ++i) {
      da.push_back(bs[i] / ((as[i] + bs[i]) * (as[i] + bs[i])));
      db.push_back(-as[i] / ((as[i] + bs[i]) * (as[i] + bs[i])));
    }
    check_mean(a.grad(), da, "Beta d/da E[x]");
    check_mean(b.grad(), db, "Beta d/db E[x]");
  }
  {
    // Dirichlet: d/d a_j E[x_0] = (delta_0j a0 - a_0) / a0^2, from the first coordinate's draws.
    const std::vector<double> alpha = {1.5, 0.5, 3.0};
    const double total = 5.0;
    Tensor a = f64(alpha).expand({kDraws, 3}).contiguous().requires_grad_(true);
    D::Dirichlet(a).rsample().select(-1, 0).sum().backward();
    check_mean(a.grad(), {(total - 1.5) / (total * total), -1.5 / (total * total), -1.5 / (total * total)},
               "Dirichlet d/da E[x_0]");
  }
  {
    // StudentT: E[(x - loc)^2] = scale^2 df / (df - 2), whose derivative in df is -2 scale^2 / (df - 2)^2.
    Tensor df = td::full({kDraws, 2}, 0.0, td::kFloat64);
    df.select(1, 0).fill_(5.0);
    df.select(1, 1).fill_(9.0);
    df.requires_grad_(true);
    const Tensor x = D::StudentT(df, 1.0, 2.0).rsample();
    (x - 1).pow(2).sum().backward();
    check_mean(df.grad(), {-2 * 4 / 9.0, -2 * 4 / 49.0}, "StudentT d/d df E[(x - loc)^2]");
  }
  {
    // Pareto x = scale e^(E / alpha) and Weibull x = scale E^(1 / k): d/d scale is x / scale per draw;
    // d/d alpha E[x] = -scale / (alpha - 1)^2, d/dk E[x] = -scale Gamma(1 + 1/k) digamma(1 + 1/k) / k^2.
    Tensor scale = f64({2.0}).requires_grad_(true), alpha = td::full({kDraws, 1}, 3.0, td::kFloat64).requires_grad_(true);
    const Tensor x = D::Pareto(scale, alpha).rsample();
    x.sum().backward();
    check_close(scale.grad(), {x.detach().sum().item<double>() / 2}, 1e-10, 0, "Pareto scale");
    check_mean(alpha.grad(), {-2.0 / 4}, "Pareto d/d alpha E[x]");
    Tensor k = td::full({kDraws, 1}, 2.0, td::kFloat64).requires_grad_(true);
    D::Weibull(1.5, k).rsample().sum().backward();
    const double digamma = td::digamma(f64({1.5})).item<double>();
    check_mean(k.grad(), {-1.5 * std::tgamma(1.5) * digamma / 4}, "Weibull d/dk E[x]");
  }
  // NegativeBinomial's draws are not differentiable.
  const D::NegativeBinomial negative(2.0, f64({0.5}));
  CHECK(!negative.has_rsample());
  check_error([&] { negative.rsample(); }, {"NegativeBinomial", "does not support rsample"});
}

TEST_CASE("the new families expand, keep their kind, and score the same values", "[cpu]") {
  const Tensor p = f64({0.6, 1.7});
  const std::vector<std::shared_ptr<D::Distribution>> families = {
      std::make_shared<D::Gamma>(p, 2.0),      std::make_shared<D::Chi2>(p),
      std::make_shared<D::Beta>(p, 1.5),       std::make_shared<D::StudentT>(p, 0.5, 2.0),
      std::make_shared<D::NegativeBinomial>(p, f64({0.3})),
      std::make_shared<D::Pareto>(f64({0.5}), p), std::make_shared<D::Weibull>(2.0, p)};
  const Tensor at = f64({0.75, 2.0});
  for (const auto& d : families) {
    INFO(d->name());
    const auto wide = d->expand({3, 2});
    CHECK(wide->name() == d->name());
    CHECK(wide->batch_shape() == Shape{3, 2});
    CHECK(wide->sample({2}).sizes() == Shape{2, 3, 2});
    const Tensor value = d->name() == "Beta" ? at / 3 : d->name() == "NegativeBinomial" ? at.round() : at;
    check_close(wide->log_prob(value), values(d->log_prob(value).expand({3, 2})), 0, 0);
  }
  CHECK(std::dynamic_pointer_cast<D::Chi2>(D::Chi2(p).expand({4, 2})) != nullptr);
  check_close(D::Chi2(p).df(), {0.6, 1.7}, 1e-15, 0);
  const D::Dirichlet dirichlet(f64({0.5, 1.0, 2.0}));
  const auto dirichlets = dirichlet.expand({4});
  CHECK(dirichlets->batch_shape() == Shape{4});
  CHECK(dirichlets->event_shape() == Shape{3});
  CHECK(dirichlets->rsample({2}).sizes() == Shape{2, 4, 3});
  // Numbers alone are float32; a tensor beside them sets the dtype.
  CHECK(D::Gamma(2.0, 3.0).sample().dtype() == td::kFloat32);
  CHECK(D::Beta(2.0, 3.0).batch_shape().empty());
  CHECK(D::StudentT(f64({3.0})).sample().dtype() == td::kFloat64);
  // A Gamma draw that rounds below the smallest normal number is raised to it; the gradient passes.
  Tensor tiny = f64({1e-3}).expand({1000}).contiguous().requires_grad_(true);
  const Tensor x = D::Gamma(tiny, 1.0).rsample();
  CHECK(x.min().item<double>() == std::numeric_limits<double>::min());
  CHECK(td::isfinite(D::Gamma(tiny, 1.0).log_prob(x)).all().item<bool>());
  x.sum().backward();
  CHECK(td::isfinite(tiny.grad()).all().item<bool>());
}

TEST_CASE("the new families refuse parameters and values outside their constraints, naming them", "[cpu]") {
  const Tensor negative = f64({1.0, -1.0});
  const Snapshot before(negative);
  check_error([&] { D::Gamma(negative, 1.0); }, {"Gamma", "concentration", "[2]", "GreaterThan(lower_bound=0.0)"});
  check_error([&] { D::Gamma(1.0, negative); }, {"Gamma", "rate", "GreaterThan(lower_bound=0.0)"});
  check_error([&] { D::Chi2{negative}; }, {"Chi2", "df", "GreaterThan(lower_bound=0.0)"});
  check_error([&] { D::Beta(negative, 1.0); }, {"Beta", "concentration1", "GreaterThan"});
  check_error([&] { D::Beta(1.0, negative); }, {"Beta", "concentration0", "GreaterThan"});
  check_error([&] { D::Dirichlet{negative}; }, {"Dirichlet", "concentration", "IndependentConstraint"});
  check_error([&] { D::Dirichlet(f64({1.0}).squeeze()); }, {"Dirichlet", "one-dimensional", "[]"});
  check_error([&] { D::Dirichlet(td::tensor({1, 2})); }, {"Dirichlet", "floating", "int64"});
  check_error([&] { D::StudentT{negative}; }, {"StudentT", "df", "GreaterThan"});
  check_error([&] { D::StudentT(1.0, 0.0, negative); }, {"StudentT", "scale", "GreaterThan"});
  check_error([&] { D::NegativeBinomial(negative, f64({0.5})); }, {"NegativeBinomial", "total_count", "GreaterThanEq"});
  check_error([&] { D::NegativeBinomial(2.0, f64({1.0})); }, {"NegativeBinomial", "probs", "HalfOpenInterval"});
  check_error([&] { D::Pareto(negative, 1.0); }, {"Pareto", "scale", "GreaterThan"});
  check_error([&] { D::Weibull(1.0, negative); }, {"Weibull", "concentration", "GreaterThan"});
  before.check_unchanged(negative);
  check_error([&] { D::Gamma(2.0, 1.0).log_prob(f64({-0.5})); }, {"Gamma", "support", "GreaterThanEq(lower_bound=0.0)"});
  check_error([&] { D::Beta(2.0, 1.0).log_prob(f64({1.5})); }, {"Beta", "support", "Interval"});
  check_error([&] { D::Dirichlet(f64({1.0, 2.0})).log_prob(f64({0.3, 0.3})); }, {"Dirichlet", "support", "Simplex()"});
  check_error([&] { D::Dirichlet(f64({1.0, 2.0})).log_prob(f64({0.3, 0.3, 0.4})); }, {"Dirichlet", "[3]", "[2]"});
  check_error([&] { D::Pareto(2.0, 1.0).log_prob(f64({1.5})); }, {"Pareto", "support", "lower_bound=scale"});
  check_error([&] { D::Weibull(2.0, 1.0).log_prob(f64({0.0})); }, {"Weibull", "support", "GreaterThan"});
  check_error([&] { D::NegativeBinomial(2.0, f64({0.5})).log_prob(f64({1.5})); }, {"NegativeBinomial", "support"});
  // Without validation the parameters are taken as given.
  CHECK(D::Gamma(negative, 1.0, false).batch_shape() == Shape{2});
  // Families with no cdf say so.
  check_error([&] { D::Beta(2.0, 1.0).cdf(f64({0.5})); }, {"Beta", "cdf", "not implemented"});
  check_error([&] { D::StudentT(3.0).cdf(f64({0.5})); }, {"StudentT", "cdf", "not implemented"});
}

TEST_CASE("KL divergences against families of narrower support broadcast their infinities", "[cpu]") {
  // PyTorch 2.15 masks with p's shape and fails where q's batch is larger; here p's [3] against q's
  // [2, 3] gives each row of q its own value, +inf where p's alpha is at most 1.
  const D::Pareto p(f64({1.0, 1.5, 2.0}), f64({0.8, 1.6, 3.5}));
  const D::Gamma q(f64({1.2, 2.0, 0.7, 3.0, 1.1, 0.4}).view({2, 3}), f64({0.8, 1.1, 1.3}));
  const Tensor kl = D::kl_divergence(p, q);
  REQUIRE(kl.sizes() == Shape{2, 3});
  for (int64_t row = 0; row < 2; ++row) {
    const D::Gamma q_row(q.concentration().select(0, row), q.rate().select(0, row));
    check_close(kl.select(0, row), values(D::kl_divergence(p, q_row)), 1e-15, 0, "row");
  }
  CHECK(kl[0][0].item<double>() == kInf);
  CHECK(std::isfinite(kl[1][2].item<double>()));
  // Chi2 is a Gamma for KL; a Dirichlet pair needs one number of categories.
  check_close(D::kl_divergence(D::Chi2(f64({4.0})), D::Gamma(2.0, f64({0.5}))), std::vector<double>{0.0}, 0.0, 1e-15);
  check_error([&] { D::kl_divergence(D::Dirichlet(f64({1.0, 2.0})), D::Dirichlet(f64({1.0, 2.0, 3.0}))); },
              {"kl_divergence", "Dirichlet", "[2]", "[3]"});
  check_error([&] { D::kl_divergence(D::StudentT(3.0), D::Normal(0.0, 1.0)); },
              {"kl_divergence", "between StudentT and Normal"});
}
