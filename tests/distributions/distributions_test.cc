// td::distributions against torch.distributions 2.15 (tests/distributions/distributions_fixtures.json,
// written by tests/distributions/make_distributions_fixtures.py): log_prob and its gradients,
// cdf, icdf, entropy and the moments of every distribution, kl_divergence and its gradients;
// then draws (shapes, moments over many samples, rsample's gradients), validation and errors.
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "tests/nn/json_fixture.h"
#include "tests/testing.h"

namespace td = tandem;
namespace D = td::distributions;
using nlohmann::json;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::fixture_numbers;
using td::testing::values;

namespace {

constexpr double kTol = 1e-12;

const json& fixture() {
  static const json data = td::testing::load_json_fixture("tests/distributions/distributions_fixtures.json");
  return data;
}

Tensor from(const json& j) { return td::tensor(fixture_numbers(j["values"])).reshape(j["shape"].get<Shape>()); }

// A distribution from a fixture's parameters; each tensor parameter a leaf in `leaves`, by name.
std::shared_ptr<D::Distribution> make(const json& c, std::map<std::string, Tensor>& leaves) {
  const json& params = c["params"];
  auto param = [&](const std::string& name) -> D::Param {
    const json& p = params[name];
    if (p.contains("number")) return p["number"].get<double>();
    return leaves[name] = from(p).requires_grad_(true);
  };
  auto tensor_param = [&](const std::string& name) { return param(name).tensor(); };
  const std::string dist = c["dist"].get<std::string>();
  if (dist == "Normal") return std::make_shared<D::Normal>(param("loc"), param("scale"));
  if (dist == "Uniform") return std::make_shared<D::Uniform>(param("low"), param("high"));
  if (dist == "Exponential") return std::make_shared<D::Exponential>(param("rate"));
  if (dist == "Laplace") return std::make_shared<D::Laplace>(param("loc"), param("scale"));
  if (dist == "Cauchy") return std::make_shared<D::Cauchy>(param("loc"), param("scale"));
  if (dist == "LogNormal") return std::make_shared<D::LogNormal>(param("loc"), param("scale"));
  if (dist == "Gumbel") return std::make_shared<D::Gumbel>(param("loc"), param("scale"));
  if (dist == "HalfNormal") return std::make_shared<D::HalfNormal>(param("scale"));
  if (dist == "Poisson") return std::make_shared<D::Poisson>(param("rate"));
  if (dist == "Gamma") return std::make_shared<D::Gamma>(param("concentration"), param("rate"));
  if (dist == "Chi2") return std::make_shared<D::Chi2>(param("df"));
  if (dist == "Beta") return std::make_shared<D::Beta>(param("concentration1"), param("concentration0"));
  if (dist == "Dirichlet") return std::make_shared<D::Dirichlet>(tensor_param("concentration"));
  if (dist == "StudentT") return std::make_shared<D::StudentT>(param("df"), param("loc"), param("scale"));
  if (dist == "Pareto") return std::make_shared<D::Pareto>(param("scale"), param("alpha"));
  if (dist == "Weibull") return std::make_shared<D::Weibull>(param("scale"), param("concentration"));
  if (dist == "HalfCauchy") return std::make_shared<D::HalfCauchy>(param("scale"));
  if (dist == "InverseGamma") return std::make_shared<D::InverseGamma>(param("concentration"), param("rate"));
  if (dist == "GeneralizedPareto") {
    const D::Param loc = param("loc"), scale = param("scale");
    return std::make_shared<D::GeneralizedPareto>(loc, scale, param("concentration"));
  }
  if (dist == "FisherSnedecor") return std::make_shared<D::FisherSnedecor>(param("df1"), param("df2"));
  if (dist == "Kumaraswamy") return std::make_shared<D::Kumaraswamy>(param("concentration1"), param("concentration0"));
  if (dist == "VonMises") return std::make_shared<D::VonMises>(param("loc"), param("concentration"));
  if (dist == "Wishart") {
    using Matrix = D::Wishart::Matrix;
    const D::Param df = param("df");
    for (const auto& [key, kind] : {std::pair{"covariance_matrix", Matrix::covariance},
                                    std::pair{"precision_matrix", Matrix::precision},
                                    std::pair{"scale_tril", Matrix::scale_tril}}) {
      if (params.contains(key)) return std::make_shared<D::Wishart>(df, tensor_param(key), kind);
    }
  }
  if (dist == "LogisticNormal") return std::make_shared<D::LogisticNormal>(param("loc"), param("scale"));
  if (dist == "LKJCholesky") {
    const auto dim = static_cast<int64_t>(params["dim"]["number"].get<double>());
    return std::make_shared<D::LKJCholesky>(dim, param("concentration"));
  }
  if (dist == "LowRankMultivariateNormal") {
    return std::make_shared<D::LowRankMultivariateNormal>(tensor_param("loc"), tensor_param("cov_factor"),
                                                          tensor_param("cov_diag"));
  }
  const bool probs = params.contains("probs");
  const D::Given given = probs ? D::Given::probs : D::Given::logits;
  const char* const given_name = probs ? "probs" : "logits";
  if (dist == "OneHotCategoricalStraightThrough") {
    return std::make_shared<D::OneHotCategoricalStraightThrough>(tensor_param(given_name), given);
  }
  if (dist == "ContinuousBernoulli") return std::make_shared<D::ContinuousBernoulli>(param(given_name), given);
  if (dist == "Multinomial") {
    const auto count = static_cast<int64_t>(params["total_count"]["number"].get<double>());
    return std::make_shared<D::Multinomial>(count, tensor_param(given_name), given);
  }
  if (dist == "LogitRelaxedBernoulli") {
    const D::Param temperature = param("temperature");
    return std::make_shared<D::LogitRelaxedBernoulli>(temperature, param(given_name), given);
  }
  if (dist == "RelaxedBernoulli") {
    const D::Param temperature = param("temperature");
    return std::make_shared<D::RelaxedBernoulli>(temperature, param(given_name), given);
  }
  if (dist == "ExpRelaxedCategorical") {
    const D::Param temperature = param("temperature");
    return std::make_shared<D::ExpRelaxedCategorical>(temperature, tensor_param(given_name), given);
  }
  if (dist == "RelaxedOneHotCategorical") {
    const D::Param temperature = param("temperature");
    return std::make_shared<D::RelaxedOneHotCategorical>(temperature, tensor_param(given_name), given);
  }
  if (dist == "Bernoulli") return std::make_shared<D::Bernoulli>(tensor_param(probs ? "probs" : "logits"), given);
  if (dist == "Categorical") return std::make_shared<D::Categorical>(tensor_param(probs ? "probs" : "logits"), given);
  if (dist == "Geometric") return std::make_shared<D::Geometric>(tensor_param(probs ? "probs" : "logits"), given);
  if (dist == "OneHotCategorical") {
    return std::make_shared<D::OneHotCategorical>(tensor_param(probs ? "probs" : "logits"), given);
  }
  if (dist == "NegativeBinomial") {
    const D::Param count = param("total_count");
    return std::make_shared<D::NegativeBinomial>(count, param(probs ? "probs" : "logits"), given);
  }
  if (dist == "Binomial") {
    const D::Param count = param("total_count");
    return std::make_shared<D::Binomial>(count, tensor_param(probs ? "probs" : "logits"), given);
  }
  if (dist == "MultivariateNormal") {
    using Matrix = D::MultivariateNormal::Matrix;
    for (const auto& [key, kind] : {std::pair{"covariance_matrix", Matrix::covariance},
                                    std::pair{"precision_matrix", Matrix::precision},
                                    std::pair{"scale_tril", Matrix::scale_tril}}) {
      if (params.contains(key)) return std::make_shared<D::MultivariateNormal>(tensor_param("loc"), tensor_param(key), kind);
    }
  }
  if (dist == "IndependentNormal") {
    return std::make_shared<D::Independent>(std::make_shared<D::Normal>(param("loc"), param("scale")), 1);
  }
  FAIL("unknown distribution " << dist);
  return nullptr;
}

void check_tensor(const Tensor& got, const json& want, const std::string& what) {
  INFO(what);
  REQUIRE(got.sizes() == want["shape"].get<Shape>());
  check_close(got.to(td::kFloat64), fixture_numbers(want["values"]), kTol, kTol, what);
}

void check_grads(const std::map<std::string, Tensor>& leaves, const json& want, const std::string& what) {
  for (const auto& [name, leaf] : leaves) {
    INFO(what << " gradient of " << name);
    const json& g = want[name];
    if (g.is_null()) {
      CHECK((!leaf.grad().defined() || values(leaf.grad()) == std::vector<double>(leaf.numel(), 0.0)));
      continue;
    }
    REQUIRE(leaf.grad().defined());
    check_close(leaf.grad(), fixture_numbers(g), kTol, kTol, what + " gradient of " + name);
  }
}

// What every fixture case holds: the shapes, log_prob (and its gradients, where recorded), cdf
// and icdf.
void check_scores(const D::Distribution& dist, const json& c, const std::map<std::string, Tensor>& leaves,
                  const std::string& name) {
  CHECK(dist.batch_shape() == c["batch_shape"].get<Shape>());
  CHECK(dist.event_shape() == c["event_shape"].get<Shape>());
  const Tensor value = from(c["value"]);
  const Tensor log_prob = dist.log_prob(value);
  check_tensor(log_prob, c["log_prob"], name + " log_prob");
  if (c.contains("log_prob_grad")) {
    log_prob.sum().backward();
    check_grads(leaves, c["log_prob_grad"], name + " log_prob");
  }
  if (c.contains("cdf")) check_close(dist.cdf(value), fixture_numbers(c["cdf"]), kTol, kTol, name + " cdf");
  if (c.contains("icdf")) {
    check_close(dist.icdf(from(c["icdf_at"])), fixture_numbers(c["icdf"]), kTol, kTol, name + " icdf");
  }
}

}  // namespace

TEST_CASE("every distribution's log_prob, gradients, cdf, icdf, entropy and moments are PyTorch's", "[cpu]") {
  int checked = 0;
  for (const json& c : fixture()["cases"]) {
    const std::string name = c["dist"].get<std::string>() + " " + c["params"].dump().substr(0, 60);
    INFO(name);
    std::map<std::string, Tensor> leaves;
    const auto dist = make(c, leaves);
    check_scores(*dist, c, leaves, name);
    if (c.contains("entropy")) check_tensor(dist->entropy(), c["entropy"], name + " entropy");
    if (c.contains("mean")) check_tensor(dist->mean(), c["mean"], name + " mean");
    if (c.contains("mode")) check_tensor(dist->mode(), c["mode"], name + " mode");
    if (c.contains("variance")) check_tensor(dist->variance(), c["variance"], name + " variance");
    if (c.contains("stddev")) check_tensor(dist->stddev(), c["stddev"], name + " stddev");
    ++checked;
  }
  CHECK(checked == 73);
}

TEST_CASE("kl_divergence and its gradients are PyTorch's, +inf where p has mass q lacks", "[cpu]") {
  int checked = 0;
  for (const json& c : fixture()["kl"]) {
    const std::string name = c["p"]["dist"].get<std::string>() + " || " + c["q"]["dist"].get<std::string>();
    INFO(name);
    std::map<std::string, Tensor> p_leaves, q_leaves;
    const auto p = make(c["p"], p_leaves);
    const auto q = make(c["q"], q_leaves);
    const Tensor kl = D::kl_divergence(*p, *q);
    check_tensor(kl, c["kl"], name);
    if (c.contains("grad_p")) {
      kl.sum().backward();
      check_grads(p_leaves, c["grad_p"], name + " p");
      check_grads(q_leaves, c["grad_q"], name + " q");
    }
    ++checked;
  }
  CHECK(checked == 73);
  const D::Normal normal(0.0, 1.0);
  const D::Bernoulli coin(0.5);
  check_error([&] { D::kl_divergence(coin, normal); }, {"kl_divergence", "between Bernoulli and Normal"});
  const D::Categorical three(td::ones({3}, td::kFloat64)), four(td::ones({4}, td::kFloat64));
  check_error([&] { D::kl_divergence(three, four); }, {"kl_divergence", "3", "4", "categories"});
}

namespace {

std::vector<std::shared_ptr<const D::Transform>> transforms_of(const json& spec) {
  std::vector<std::shared_ptr<const D::Transform>> out;
  auto param = [](const json& p) -> D::Param {
    if (p.contains("number")) return p["number"].get<double>();
    return from(p);
  };
  for (const json& t : spec) {
    const std::string name = t["name"].get<std::string>();
    if (name == "exp") out.push_back(std::make_shared<D::ExpTransform>());
    if (name == "affine") {
      out.push_back(std::make_shared<D::AffineTransform>(param(t["loc"]), param(t["scale"]),
                                                         t.value("event_dim", int64_t{0})));
    }
    if (name == "sigmoid") out.push_back(std::make_shared<D::SigmoidTransform>());
    if (name == "tanh") out.push_back(std::make_shared<D::TanhTransform>());
    if (name == "softplus") out.push_back(std::make_shared<D::SoftplusTransform>());
    if (name == "power") out.push_back(std::make_shared<D::PowerTransform>(t["exponent"].get<double>()));
    if (name == "stick_breaking") out.push_back(std::make_shared<D::StickBreakingTransform>());
    if (name == "independent") {
      out.push_back(std::make_shared<D::IndependentTransform>(transforms_of(json::array({t["base"]}))[0],
                                                              t["ndims"].get<int64_t>()));
    }
    if (name == "reshape") {
      out.push_back(std::make_shared<D::ReshapeTransform>(t["in_shape"].get<Shape>(), t["out_shape"].get<Shape>()));
    }
    if (name == "inv") out.push_back(transforms_of(json::array({t["of"]}))[0]->inv());
    if (name == "corr_cholesky") out.push_back(std::make_shared<D::CorrCholeskyTransform>());
    if (name == "cat") {
      out.push_back(std::make_shared<D::CatTransform>(transforms_of(t["parts"]), t["dim"].get<int64_t>(),
                                                      t["lengths"].get<std::vector<int64_t>>()));
    }
    if (name == "stack") {
      out.push_back(std::make_shared<D::StackTransform>(transforms_of(t["parts"]), t["dim"].get<int64_t>()));
    }
    if (name == "cdf") {
      std::map<std::string, Tensor> unused;  // the distribution's parameters: constants here
      out.push_back(std::make_shared<D::CumulativeDistributionTransform>(make(t, unused)));
    }
  }
  REQUIRE(out.size() == spec.size());
  return out;
}

}  // namespace

TEST_CASE("TransformedDistribution's log_prob, gradients, cdf and icdf are PyTorch's", "[cpu]") {
  int checked = 0;
  for (const json& c : fixture()["transformed"]) {
    const std::string name = c["base"]["dist"].get<std::string>() + " through " + c["transforms"].dump();
    INFO(name);
    std::map<std::string, Tensor> leaves;
    const D::TransformedDistribution dist(make(c["base"], leaves), transforms_of(c["transforms"]));
    REQUIRE(c.contains("log_prob_grad"));
    check_scores(dist, c, leaves, name);
    ++checked;
  }
  CHECK(checked == 19);
  const json& k = fixture()["transformed_kl"];
  std::map<std::string, Tensor> leaves;
  json p_spec = json::object(), q_spec = json::object();
  p_spec["dist"] = q_spec["dist"] = "Normal";
  p_spec["params"] = k["p"];
  q_spec["params"] = k["q"];
  const D::TransformedDistribution p(make(p_spec, leaves), transforms_of(k["transforms"]));
  const D::TransformedDistribution q(make(q_spec, leaves), transforms_of(k["transforms"]));
  check_close(D::kl_divergence(p, q), fixture_numbers(k["kl"]), kTol, kTol, "KL through the same transforms");
  const D::TransformedDistribution other(std::make_shared<D::Normal>(0.0, 1.0), {std::make_shared<D::TanhTransform>()});
  check_error([&] { D::kl_divergence(p, other); }, {"kl_divergence", "same transforms"});
  // Equal transforms by value (numbers and tensors alike), unequal ones refused.
  auto normal = std::make_shared<D::Normal>(0.0, 1.0), wider = std::make_shared<D::Normal>(0.5, 2.0);
  const D::TransformedDistribution a1(normal, {std::make_shared<D::AffineTransform>(0.5, 2.0)});
  const D::TransformedDistribution a2(wider, {std::make_shared<D::AffineTransform>(td::full({}, 0.5f),
                                                                                   td::full({}, 2.0f))});
  const D::TransformedDistribution a3(wider, {std::make_shared<D::AffineTransform>(0.5, 3.0)});
  check_close(D::kl_divergence(a1, a2), values(D::kl_divergence(*normal, *wider)), 0, 0);
  check_error([&] { D::kl_divergence(a1, a3); }, {"kl_divergence", "same transforms"});
  // A LogNormal is a Normal through exp, as in PyTorch: KL against TransformedDistribution(Normal,
  // {exp}) either way is the Normals'.
  const auto exp = std::make_shared<D::ExpTransform>();
  const Tensor loc = td::tensor(std::vector<double>{0.3, -0.2}, td::kFloat64);
  const Tensor scale = td::tensor(std::vector<double>{0.8, 1.5}, td::kFloat64);
  const D::LogNormal log_normal(loc, scale);
  const D::TransformedDistribution through_exp(wider, {exp});
  const D::Normal normal_pair(loc, scale);
  check_close(D::kl_divergence(log_normal, through_exp), values(D::kl_divergence(normal_pair, *wider)), 0, 0,
              "LogNormal to a Normal through exp");
  check_close(D::kl_divergence(through_exp, log_normal), values(D::kl_divergence(*wider, normal_pair)), 0, 0,
              "a Normal through exp to LogNormal");
  check_close(D::kl_divergence(log_normal, D::LogNormal(0.5, 2.0)), values(D::kl_divergence(normal_pair, *wider)), 0,
              0, "LogNormal to LogNormal");
  check_error([&] { D::kl_divergence(log_normal, other); }, {"kl_divergence", "LogNormal", "same transforms"});
  check_error([&] { D::kl_divergence(log_normal, D::Gamma(1.0, 1.0)); }, {"kl_divergence", "LogNormal", "Gamma"});
}

TEST_CASE("inverse and composed transforms: the logistic distribution, and a log-normal", "[cpu]") {
  // Logistic(a, b) = Uniform(0, 1) through the sigmoid's inverse, then y = a + b x, as in PyTorch's
  // documentation: log p(y) = -z - 2 log(1 + e^-z) - log b, z = (y - a) / b.
  const double a = 0.5, b = 2.0;
  const auto sigmoid = std::make_shared<D::SigmoidTransform>();
  const D::TransformedDistribution logistic(
      std::make_shared<D::Uniform>(td::zeros({}, td::kFloat64), 1.0),
      {sigmoid->inv(), std::make_shared<D::AffineTransform>(a, b)});
  const Tensor y = td::tensor(std::vector<double>{-3, 0.2, 4});
  const Tensor z = (y - a) / b;
  check_close(logistic.log_prob(y), values(-z - (-z).exp().log1p() * 2 - std::log(b)), 1e-12, 1e-12);
  check_close(logistic.cdf(y), values(z.sigmoid()), 1e-12, 1e-12);
  CHECK(sigmoid->inv()->name() == "SigmoidTransform.inv");
  CHECK(sigmoid->inv()->equals(*sigmoid->inv()));
  CHECK(!sigmoid->inv()->equals(*sigmoid));
  // exp through a composition equals the two transforms in a row.
  const auto base = std::make_shared<D::Normal>(td::zeros({3}, td::kFloat64), 1.0);
  const auto affine = std::make_shared<D::AffineTransform>(0.5, 2.0);
  const auto exp = std::make_shared<D::ExpTransform>();
  const D::TransformedDistribution in_a_row(base, {affine, exp});
  const D::TransformedDistribution composed(base, {std::make_shared<D::ComposeTransform>(
                                                      std::vector<std::shared_ptr<const D::Transform>>{affine, exp})});
  const Tensor v = td::tensor(std::vector<double>{0.3, 1.0, 7.0});
  check_close(composed.log_prob(v), values(in_a_row.log_prob(v)), 1e-14, 1e-14);
  check_close(composed.cdf(v), values(in_a_row.cdf(v)), 1e-14, 1e-14);
  // The log of exp's inverse: a LogNormal's log is Normal.
  const D::TransformedDistribution back(std::make_shared<D::LogNormal>(0.0, 1.0), {exp->inv()});
  check_close(back.log_prob(td::full({}, 0.7)), values(D::Normal(0.0, 1.0).log_prob(td::full({}, 0.7))), 1e-6, 0);
  D::TanhTransform unmanaged;
  check_error([&] { unmanaged.inv(); }, {"TanhTransform", "inv()", "shared_ptr"});
}

TEST_CASE("MixtureSameFamily's log_prob, gradients, moments and cdf are PyTorch's", "[cpu]") {
  int checked = 0;
  for (const json& c : fixture()["mixtures"]) {
    const std::string name = "mixture of " + c["component"]["dist"].get<std::string>();
    INFO(name);
    std::map<std::string, Tensor> mix_leaves, comp_leaves;
    json mix_spec = json::object();
    mix_spec["dist"] = "Categorical";
    mix_spec["params"] = c["mixture"];
    const auto mixture = std::dynamic_pointer_cast<D::Categorical>(make(mix_spec, mix_leaves));
    const D::MixtureSameFamily dist(mixture, make(c["component"], comp_leaves));
    CHECK(dist.batch_shape() == c["batch_shape"].get<Shape>());
    CHECK(dist.event_shape() == c["event_shape"].get<Shape>());
    const Tensor value = from(c["value"]);
    const Tensor log_prob = dist.log_prob(value);
    check_tensor(log_prob, c["log_prob"], name + " log_prob");
    log_prob.sum().backward();
    check_grads(mix_leaves, c["mixture_grad"], name + " log_prob, mixture");
    check_grads(comp_leaves, c["component_grad"], name + " log_prob, components");
    check_tensor(dist.mean(), c["mean"], name + " mean");
    check_tensor(dist.variance(), c["variance"], name + " variance");
    if (c.contains("cdf")) check_close(dist.cdf(value), fixture_numbers(c["cdf"]), kTol, kTol, name + " cdf");
    ++checked;
  }
  CHECK(checked == 3);
  // Draws: shapes, and the mixture's mean and variance over many of them.
  td::manual_seed(12);
  const auto mixture = std::make_shared<D::Categorical>(td::tensor(std::vector<double>{0.3, 0.7}));
  const auto components = std::make_shared<D::Normal>(td::tensor(std::vector<double>{-2, 3}),
                                                      td::tensor(std::vector<double>{0.5, 1}));
  const D::MixtureSameFamily bimodal(mixture, components);
  const Tensor draws = bimodal.sample({40000});
  REQUIRE(draws.sizes() == Shape{40000});
  CHECK(std::abs(draws.mean().item<double>() - bimodal.mean().item<double>()) < 0.05);
  CHECK(std::abs(draws.var().item<double>() / bimodal.variance().item<double>() - 1) < 0.03);
  // P(draw < 0.5) = 0.3 + 0.7 Phi(-2.5) = 0.30435.
  CHECK((draws < 0.5).to(td::kFloat64).mean().item<double>() == Approx(0.30435).margin(0.01));
  CHECK(!bimodal.has_rsample());
  // Vector events: each drawn row comes whole from one component (means -10 and +10 everywhere).
  const Tensor means = td::tensor(std::vector<double>{-10, -10, -10, 10, 10, 10}).view({2, 3});
  const auto mvn = std::make_shared<D::MultivariateNormal>(means, td::eye(3, -1, td::kFloat64));
  const D::MixtureSameFamily vectors(mixture, mvn);
  const Tensor rows = vectors.sample({4000});
  REQUIRE(rows.sizes() == Shape{4000, 3});
  const Tensor low = (rows < 0).all(1), high = (rows > 0).all(1);
  CHECK((low | high).all().item<bool>());
  CHECK(low.to(td::kFloat64).mean().item<double>() == Approx(0.3).margin(0.03));
  CHECK(vectors.expand({4})->sample().sizes() == Shape{4, 3});
  // A mixture without a batch over components with one: each batch element picks on its own.
  const D::MixtureSameFamily shared_weights(
      mixture, std::make_shared<D::Normal>(td::tensor(std::vector<double>{-10, 10, -10, 10}).view({2, 2}), 1.0));
  CHECK(shared_weights.batch_shape() == Shape{2});
  const Tensor pairs = shared_weights.sample({4000});
  REQUIRE(pairs.sizes() == Shape{4000, 2});
  const Tensor first_low = pairs.select(1, 0) < 0, second_low = pairs.select(1, 1) < 0;
  const double both = (first_low & second_low).to(td::kFloat64).mean().item<double>();
  CHECK(both == Approx(0.09).margin(0.02));  // independent: 0.3 * 0.3
  check_error([&] { D::MixtureSameFamily(std::make_shared<D::Categorical>(td::ones({3})), components); },
              {"MixtureSameFamily", "3 categories", "2 components"});
  check_error([&] { D::MixtureSameFamily(mixture, std::make_shared<D::Normal>(0.0, 1.0)); },
              {"MixtureSameFamily", "batch dim of components"});
}

TEST_CASE("a tanh-squashed Gaussian with a cached transform scores its own draws exactly", "[cpu]") {
  // loc 12: tanh of the draws rounds to 1 in float32, where atanh is infinite.
  Tensor loc = td::full({4}, 12.0f).requires_grad_(true);
  const auto base = std::make_shared<D::Normal>(loc, 0.5);
  const D::TransformedDistribution cached(base, {std::make_shared<D::TanhTransform>(1)});
  td::manual_seed(9);
  const Tensor x = base->rsample().detach();  // the draw the transformed rsample below makes again
  td::manual_seed(9);
  const Tensor action = cached.rsample();
  CHECK(values(action) == std::vector<double>(4, 1.0));
  const Tensor log_pi = cached.log_prob(action);
  // The pre-tanh draw scored by hand: log N(x) - log(1 - tanh(x)^2), the latter 2 (log 2 - x - softplus(-2x)).
  const Tensor by_hand =
      base->log_prob(x) - (std::log(2.0f) - x - td::logaddexp(x * -2, td::zeros_like(x))) * 2;
  check_close(log_pi, values(by_hand), 1e-6, 1e-5, "cached score");
  CHECK(td::isfinite(log_pi).all().item<bool>());
  log_pi.sum().backward();
  CHECK(td::isfinite(loc.grad()).all().item<bool>());
  // Without the cache, atanh(1) is infinite and the score is lost.
  const D::TransformedDistribution uncached(base, {std::make_shared<D::TanhTransform>()}, false);
  CHECK(!td::isfinite(uncached.log_prob(action.detach())).all().item<bool>());
  // Shapes, expand, rsample, and cdf errors for transforms of mixed sign.
  const D::TransformedDistribution affine(std::make_shared<D::Normal>(td::zeros({3}, td::kFloat64), 1.0),
                                          {std::make_shared<D::AffineTransform>(td::zeros({2, 1}, td::kFloat64), 2.0),
                                           std::make_shared<D::ExpTransform>()});
  CHECK(affine.batch_shape() == Shape{2, 3});
  CHECK(affine.has_rsample());
  CHECK(affine.sample({5}).sizes() == Shape{5, 2, 3});
  CHECK((affine.sample({5}) > 0).all().item<bool>());
  const auto expanded = std::dynamic_pointer_cast<D::TransformedDistribution>(affine.expand({4, 2, 3}));
  CHECK(expanded->batch_shape() == Shape{4, 2, 3});
  CHECK(expanded->base_dist().batch_shape() == Shape{4, 2, 3});
  // A scale of mixed signs: each element's cdf is monotonized by its own sign, as PyTorch's.
  const D::TransformedDistribution mixed(
      std::make_shared<D::Normal>(td::zeros({2}, td::kFloat64), 1.0),
      {std::make_shared<D::AffineTransform>(0.0, td::tensor(std::vector<double>{1, -1}))});
  const double phi1 = 0.5 * std::erfc(-1 / std::sqrt(2.0));
  check_close(mixed.cdf(td::ones({2}, td::kFloat64)), {phi1, phi1}, 1e-15, 0);
  check_close(mixed.icdf(td::full({2}, phi1, td::kFloat64)), {1, 1}, 1e-12, 1e-12);
  // A transform with no sign (a user's that does not say) cannot give a cdf.
  struct Unsigned : D::Transform {
    std::string name() const override { return "Unsigned"; }
    Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override { return td::zeros_like(x); }
    Tensor forward(const Tensor& x) const override { return x; }
    Tensor inverse(const Tensor& y) const override { return y; }
  };
  const D::TransformedDistribution unsigned_dist(std::make_shared<D::Normal>(0.0, 1.0),
                                                 {std::make_shared<Unsigned>()});
  check_error([&] { unsigned_dist.cdf(td::zeros({})); }, {"TransformedDistribution", "cdf", "sign"});
  // A sample scored through the cache too.
  const D::TransformedDistribution squashed(std::make_shared<D::Normal>(td::full({3}, 12.0f), 0.5),
                                            {std::make_shared<D::TanhTransform>(1)});
  CHECK(td::isfinite(squashed.log_prob(squashed.sample())).all().item<bool>());
  check_error([&] { affine.log_prob(td::full({2, 3}, -1.0, td::kFloat64)); },
              {"TransformedDistribution", "support", "GreaterThan(lower_bound=0.0)"});
  check_error([&] { D::TanhTransform(2); }, {"cache_size", "0 or 1"});
  check_error([&] { D::PowerTransform(0.0); }, {"PowerTransform", "exponent"});
}

TEST_CASE("draws have shape sample + batch + event and the distribution's moments", "[cpu]") {
  td::manual_seed(3);
  const Tensor loc = td::tensor(std::vector<double>{-1, 0.5, 2}), scale = td::tensor(std::vector<double>{0.5, 1, 2});
  const int64_t n = 40000;
  auto check_moments = [&](const D::Distribution& d, const std::string& what) {
    INFO(what);
    const Tensor draws = d.sample({n});
    REQUIRE(draws.sizes()[0] == n);
    const Tensor mean = draws.to(td::kFloat64).mean({0}), var = draws.to(td::kFloat64).var({0});
    const Tensor sd_of_mean = (d.variance() / static_cast<double>(n)).sqrt();
    // Within 5 standard errors of the mean; the variance within 5%.
    CHECK(((mean - d.mean()).abs() <= sd_of_mean * 5).all().item<bool>());
    check_close(var, values(d.variance()), 0.05, 0, what + " variance");
  };
  check_moments(D::Normal(loc, scale), "Normal");
  check_moments(D::Uniform(loc, loc + scale), "Uniform");
  check_moments(D::Exponential(scale), "Exponential");
  check_moments(D::Laplace(loc, scale), "Laplace");
  check_moments(D::Bernoulli(td::tensor(std::vector<double>{0.1, 0.5, 0.8})), "Bernoulli");
  check_moments(D::LogNormal(loc * 0.5, scale * 0.3), "LogNormal");
  check_moments(D::Gumbel(loc, scale), "Gumbel");
  check_moments(D::HalfNormal(scale), "HalfNormal");
  check_moments(D::Poisson(scale * 3), "Poisson");
  check_moments(D::Geometric(td::tensor(std::vector<double>{0.2, 0.5, 0.9})), "Geometric");
  check_moments(D::Binomial(12.0, td::tensor(std::vector<double>{0.2, 0.5, 0.9})), "Binomial");
  check_moments(D::OneHotCategorical(td::tensor(std::vector<double>{0.2, 0.3, 0.5})), "OneHotCategorical");
  // Cauchy has no mean: half of the draws fall below loc, a quarter below loc - scale.
  const Tensor cauchy = D::Cauchy(loc, scale).sample({n});
  const Tensor below = (cauchy < loc).to(td::kFloat64).mean({0}), far_below = (cauchy < loc - scale).to(td::kFloat64).mean({0});
  const double share_sd = std::sqrt(0.25 / n);
  CHECK(((below - 0.5).abs() <= 5 * share_sd).all().item<bool>());
  CHECK(((far_below - 0.25).abs() <= 5 * share_sd).all().item<bool>());
  // Categorical: each category's share within 5 standard errors.
  const Tensor probs = td::tensor(std::vector<double>{0.1, 0.2, 0.3, 0.4});
  const Tensor picks = D::Categorical(probs * 3).sample({n});  // unnormalised: scaled to sum to 1
  CHECK(picks.dtype() == td::kInt64);
  for (int64_t k = 0; k < 4; ++k) {
    const double share = (picks == k).to(td::kFloat64).mean().item<double>(), p = values(probs)[k];
    CHECK(std::abs(share - p) <= 5 * std::sqrt(p * (1 - p) / n));
  }
  // MultivariateNormal: the draws' covariance is Sigma.
  const Tensor sigma = td::tensor(std::vector<double>{2, 0.6, 0.6, 1}).view({2, 2});
  const D::MultivariateNormal mvn(td::tensor(std::vector<double>{1, -1}), sigma);
  const Tensor draws = mvn.sample({n});
  REQUIRE(draws.sizes() == Shape{n, 2});
  const Tensor centred = draws - draws.mean({0});
  check_close(centred.t().matmul(centred) / static_cast<double>(n - 1), values(sigma), 0.05, 0.03, "covariance");
  // Shapes: sample_shape + batch_shape + event_shape.
  const D::Normal batch(td::zeros({2, 3}, td::kFloat64), 1.0);
  CHECK(batch.sample({4, 5}).sizes() == Shape{4, 5, 2, 3});
  CHECK(batch.sample().sizes() == Shape{2, 3});
  const D::MultivariateNormal mvn_batch(td::zeros({3, 2}, td::kFloat64), sigma);
  CHECK(mvn_batch.batch_shape() == Shape{3});
  CHECK(mvn_batch.event_shape() == Shape{2});
  CHECK(mvn_batch.rsample({4}).sizes() == Shape{4, 3, 2});
  CHECK(D::Categorical(td::ones({2, 5}, td::kFloat64)).sample({7}).sizes() == Shape{7, 2});
  CHECK(D::OneHotCategorical(td::ones({2, 5}, td::kFloat64)).sample({7}).sizes() == Shape{7, 2, 5});
  CHECK(D::Binomial(td::full({2, 1}, 5.0, td::kFloat64), td::full({3}, 0.5, td::kFloat64)).sample({4}).sizes() ==
        Shape{4, 2, 3});
  const D::Independent diagonal(std::make_shared<D::Normal>(td::zeros({2, 3}, td::kFloat64), 1.0), 1);
  CHECK(diagonal.batch_shape() == Shape{2});
  CHECK(diagonal.event_shape() == Shape{3});
  CHECK(diagonal.sample({4}).sizes() == Shape{4, 2, 3});
  CHECK(diagonal.log_prob(td::zeros({2, 3}, td::kFloat64)).sizes() == Shape{2});
}

TEST_CASE("rsample is differentiable in the parameters; sample records nothing", "[cpu]") {
  td::manual_seed(4);
  Tensor loc = td::tensor(std::vector<double>{0.5, -1}).requires_grad_(true);
  Tensor scale = td::tensor(std::vector<double>{2, 0.5}).requires_grad_(true);
  const D::Normal normal(loc, scale);
  const Tensor x = normal.rsample({1000});
  CHECK(x.requires_grad());
  x.sum().backward();
  // x = loc + eps scale: d sum / d loc = the draws' count, d sum / d scale = sum of eps.
  check_close(loc.grad(), {1000, 1000}, 0, 0);
  check_close(scale.grad(), values(((x.detach() - loc.detach()) / scale.detach()).sum({0})), 1e-10, 1e-10);
  CHECK(!normal.sample({3}).requires_grad());
  Tensor rate = td::tensor(std::vector<double>{2.0}).requires_grad_(true);
  const Tensor e = D::Exponential(rate).rsample({5});
  e.sum().backward();  // x = draw / rate: d / d rate = -x / rate
  check_close(rate.grad(), {-(e.detach().sum().item<double>()) / 2}, 1e-12, 0);
  // The location families move with loc: d sum / d loc is the number of draws; LogNormal's draws
  // are exp of them, so d sum / d loc is their sum; HalfNormal's scale them: d / d scale = x / scale.
  for (const std::string family : {"Cauchy", "Gumbel", "Laplace"}) {
    INFO(family);
    Tensor l = td::zeros({2}, td::kFloat64).requires_grad_(true);
    const std::shared_ptr<D::Distribution> d =
        family == "Cauchy" ? std::shared_ptr<D::Distribution>(std::make_shared<D::Cauchy>(l, 2.0))
        : family == "Gumbel" ? std::shared_ptr<D::Distribution>(std::make_shared<D::Gumbel>(l, 2.0))
                             : std::shared_ptr<D::Distribution>(std::make_shared<D::Laplace>(l, 2.0));
    d->rsample({50}).sum().backward();
    check_close(l.grad(), {50, 50}, 0, 0);
  }
  Tensor m = td::zeros({2}, td::kFloat64).requires_grad_(true);
  const Tensor lognormal = D::LogNormal(m, 0.5).rsample({50});
  lognormal.sum().backward();
  check_close(m.grad(), values(lognormal.detach().sum({0})), 1e-12, 0);
  Tensor s = td::full({2}, 2.0, td::kFloat64).requires_grad_(true);
  const Tensor half = D::HalfNormal(s).rsample({50});
  half.sum().backward();
  check_close(s.grad(), values(half.detach().sum({0}) / 2), 1e-12, 0);
  for (const D::Distribution* d : std::initializer_list<const D::Distribution*>{
           new D::Bernoulli(td::full({2}, 0.5)), new D::Categorical(td::ones({3})), new D::Poisson(2.0),
           new D::Geometric(0.5), new D::Binomial(4.0, td::full({}, 0.5)), new D::OneHotCategorical(td::ones({3}))}) {
    CHECK(!d->has_rsample());
    check_error([&] { d->rsample(); }, {d->name(), "does not support rsample"});
    CHECK(!d->sample().requires_grad());
    delete d;
  }
}

TEST_CASE("expand gives the same distribution over a larger batch, its parameters views", "[cpu]") {
  const Tensor loc = td::tensor(std::vector<double>{0.5, -1});
  const D::Normal normal(loc, 2.0);
  const auto wide = normal.expand({3, 2});
  CHECK(wide->batch_shape() == Shape{3, 2});
  CHECK(wide->sample({4}).sizes() == Shape{4, 3, 2});
  check_close(wide->log_prob(td::zeros({3, 2}, td::kFloat64)),
              values(normal.log_prob(td::zeros({2}, td::kFloat64)).expand({3, 2})), 0, 0);
  CHECK(std::dynamic_pointer_cast<D::Normal>(wide)->loc().is_alias_of(loc));
  const D::Categorical die(td::ones({6}, td::kFloat64));
  const auto dice = die.expand({5});
  CHECK(dice->batch_shape() == Shape{5});
  CHECK(dice->sample({2}).sizes() == Shape{2, 5});
  const D::MultivariateNormal mvn(td::zeros({2}, td::kFloat64), td::eye(2, -1, td::kFloat64));
  const auto mvns = mvn.expand({4});
  CHECK(mvns->batch_shape() == Shape{4});
  CHECK(mvns->event_shape() == Shape{2});
  CHECK(mvns->rsample({3}).sizes() == Shape{3, 4, 2});
  const D::Independent diagonal(std::make_shared<D::Normal>(td::zeros({3}, td::kFloat64), 1.0), 1);
  const auto diagonals = diagonal.expand({2});
  CHECK(diagonals->batch_shape() == Shape{2});
  CHECK(diagonals->event_shape() == Shape{3});
  const D::Bernoulli coins(td::full({1}, 0.3));
  CHECK(coins.expand({4})->sample().sizes() == Shape{4});
  CHECK(D::Independent(std::make_shared<D::Bernoulli>(td::full({2}, 0.3)), 0).has_enumerate_support());
  CHECK(!D::Independent(std::make_shared<D::Bernoulli>(td::full({2}, 0.3)), 1).has_enumerate_support());
  check_error([&] { normal.expand({3}); }, {"expand"});
  // Every family expands to the same distributions over the larger batch.
  const Tensor p = td::tensor(std::vector<double>{0.3, 0.6});
  const std::vector<std::shared_ptr<D::Distribution>> families = {
      std::make_shared<D::Cauchy>(p, 1.0),      std::make_shared<D::LogNormal>(p, 1.0),
      std::make_shared<D::Gumbel>(p, 1.0),      std::make_shared<D::HalfNormal>(p),
      std::make_shared<D::Poisson>(p),          std::make_shared<D::Geometric>(p),
      std::make_shared<D::Binomial>(5.0, p),    std::make_shared<D::Exponential>(p),
      std::make_shared<D::Laplace>(p, 1.0),     std::make_shared<D::Uniform>(p, 1.0),
      std::make_shared<D::Bernoulli>(p)};
  const Tensor at = td::tensor(std::vector<double>{1, 0.5});
  for (const auto& d : families) {
    INFO(d->name());
    const auto wide = d->expand({3, 2});
    CHECK(wide->name() == d->name());
    CHECK(wide->batch_shape() == Shape{3, 2});
    CHECK(wide->sample({2}).sizes() == Shape{2, 3, 2});
    const Tensor value = d->name() == "Bernoulli" ? td::tensor(std::vector<double>{1, 0}) : at.round().clamp_min(1);
    check_close(wide->log_prob(value), values(d->log_prob(value).expand({3, 2})), 0, 0);
  }
  const D::OneHotCategorical one_hot(td::tensor(std::vector<double>{0.2, 0.8}));
  CHECK(one_hot.expand({3})->sample().sizes() == Shape{3, 2});
  CHECK(one_hot.enumerate_support().sizes() == Shape{2, 2});
  check_close(one_hot.enumerate_support(), {1, 0, 0, 1}, 0, 0);
  const D::OneHotCategorical one_hots(td::ones({3, 4}));
  CHECK(one_hots.enumerate_support().sizes() == Shape{4, 3, 4});
  CHECK(one_hots.enumerate_support(false).sizes() == Shape{4, 1, 4});
  const D::Binomial binomial(3.0, td::full({2}, 0.5, td::kFloat64));
  CHECK(binomial.enumerate_support().sizes() == Shape{4, 2});
  check_close(binomial.enumerate_support(false), {0, 1, 2, 3}, 0, 0);
}

TEST_CASE("numbers take the dtype and device of the tensors beside them, float32 alone", "[cpu]") {
  const D::Normal standard(0.0, 1.0);
  CHECK(standard.loc().dtype() == td::kFloat32);
  CHECK(standard.batch_shape().empty());
  CHECK(standard.sample().dtype() == td::kFloat32);
  const D::Normal wide(td::zeros({3}, td::kFloat64), 2.0);
  CHECK(wide.scale().dtype() == td::kFloat64);
  CHECK(wide.scale().sizes() == Shape{3});
  check_close(wide.perplexity(), values(wide.entropy().exp()), 0, 0);
  // Bernoulli and Categorical enumerate their supports.
  const D::Bernoulli coin(td::full({3}, 0.3));
  CHECK(coin.enumerate_support().sizes() == Shape{2, 3});
  check_close(coin.enumerate_support(false), {0, 1}, 0, 0);
  const D::Categorical die(td::ones({2, 6}));
  CHECK(die.enumerate_support().sizes() == Shape{6, 2});
  CHECK(die.num_events() == 6);
  check_error([&] { coin.cdf(td::zeros({3})); }, {"Bernoulli", "cdf", "not implemented"});
  check_error([&] { die.icdf(td::zeros({2})); }, {"Categorical", "icdf", "not implemented"});
}

TEST_CASE("validation names the distribution, the argument, its shape and the constraint", "[cpu]") {
  const Tensor bad_scale = td::tensor(std::vector<double>{1, 0, 2});
  check_error([&] { D::Normal(0.0, bad_scale); }, {"Normal", "parameter scale", "[3]", "GreaterThan(lower_bound=0.0)"});
  check_error([&] { D::Normal(td::tensor(std::vector<double>{NAN}), 1.0); }, {"Normal", "parameter loc", "Real()"});
  check_error([&] { D::Uniform(1.0, 1.0); }, {"Uniform", "low", "low < high"});
  check_error([&] { D::Exponential(-1.0); }, {"Exponential", "rate", "GreaterThan"});
  check_error([&] { D::Bernoulli(td::full({2}, 1.5)); }, {"Bernoulli", "probs", "Interval"});
  check_error([&] { D::Categorical(td::tensor(std::vector<double>{0.5, -0.1})); }, {"Categorical", "probs", "Simplex"});
  check_error([&] { D::Categorical(td::zeros({2, 0})); }, {"Categorical", "no categories"});
  check_error([&] { D::Categorical(td::tensor(std::vector<double>{0, INFINITY}), D::Given::logits); },
              {"Categorical", "logits", "Real()"});
  check_error([&] { D::Normal(Tensor(), 1.0); }, {"Normal", "parameter loc", "undefined"});
  check_error([&] { D::LogNormal(0.0, -1.0); }, {"LogNormal", "scale", "GreaterThan"});
  check_error([&] { D::LogNormal(0.0, 1.0).log_prob(td::zeros({})); }, {"LogNormal", "support", "GreaterThan"});
  check_error([&] { D::Poisson(-1.0); }, {"Poisson", "rate", "GreaterThanEq"});
  check_error([&] { D::Poisson(1.0).log_prob(td::full({}, 0.5)); }, {"Poisson", "IntegerGreaterThan"});
  check_error([&] { D::Poisson(1.0).log_prob(td::full({}, INFINITY)); }, {"Poisson", "IntegerGreaterThan"});
  check_error([&] { D::Binomial(INFINITY, td::full({}, 0.5)); }, {"Binomial", "total_count"});
  check_error([&] { D::Binomial(2.0, td::ones({2}, td::kInt64), D::Given::logits); },
              {"Binomial", "logits", "floating"});
  // An integer total_count takes the probabilities' dtype; a float64 value is not rounded to float32.
  const D::Binomial counted(td::tensor(std::vector<int64_t>{4, 6}), td::full({2}, 0.5));
  CHECK(counted.total_count().dtype() == td::kFloat32);
  CHECK(D::Poisson(td::full({}, 2.0)).log_prob(td::full({}, 3.0, td::kFloat64)).dtype() == td::kFloat64);
  CHECK(D::LogNormal(0.0, 1.0).cdf(td::zeros({})).item<double>() == 0);
  check_error([&] { D::Geometric(0.0); }, {"Geometric", "probs", "positive"});
  check_error([&] { D::Binomial(2.5, td::full({}, 0.5)); }, {"Binomial", "total_count", "IntegerGreaterThan"});
  check_error([&] { D::Binomial(3.0, td::full({}, 0.5)).log_prob(td::full({}, 4.0)); },
              {"Binomial", "IntegerInterval"});
  check_error([&] { D::Binomial(td::tensor(std::vector<double>{2, 3}), td::full({2}, 0.5)).entropy(); },
              {"Binomial", "one total_count", "2", "3"});
  check_error([&] { D::OneHotCategorical(td::ones({3})).log_prob(td::ones({3})); }, {"OneHotCategorical", "OneHot()"});
  check_error(
      [&] {
        D::kl_divergence(D::Binomial(3.0, td::full({}, 0.5)), D::Binomial(4.0, td::full({}, 0.5)));
      },
      {"kl_divergence", "Binomials", "total_count"});
  check_error([&] { D::Exponential{Tensor()}; }, {"Exponential", "rate", "undefined"});
  // Symmetric within torch.isclose's tolerance: a float32 covariance off by 2e-5 is taken.
  const Tensor nearly = td::tensor(std::vector<double>{100, 50, 50.00002, 100}).view({2, 2}).to(td::kFloat32);
  CHECK(D::MultivariateNormal(td::zeros({2}), nearly).batch_shape().empty());
  check_error([&] { D::Normal(td::ones({2}, td::kInt64), 1.0); }, {"Normal", "loc", "floating", "int64"});
  check_error([&] { D::Normal(td::ones({2}), td::ones({3})); }, {"[2]", "[3]"});
  const Tensor not_spd = td::tensor(std::vector<double>{1, 2, 2, 1}).view({2, 2});
  check_error([&] { D::MultivariateNormal(td::zeros({2}, td::kFloat64), not_spd); },
              {"MultivariateNormal", "covariance_matrix", "PositiveDefinite"});
  check_error(
      [&] {
        D::MultivariateNormal(td::zeros({2}, td::kFloat64), td::ones({2, 2}, td::kFloat64),
                              D::MultivariateNormal::Matrix::scale_tril);
      },
      {"MultivariateNormal", "scale_tril", "LowerCholesky"});
  check_error([&] { D::MultivariateNormal(td::zeros({3}, td::kFloat64), td::eye(2, -1, td::kFloat64)); },
              {"MultivariateNormal", "[..., n, n] with n = 3", "[2, 2]"});
  check_error([&] { D::MultivariateNormal(td::zeros({}, td::kFloat64), td::eye(2, -1, td::kFloat64)); },
              {"MultivariateNormal", "loc", "one-dimensional"});
  check_error([&] { D::Independent(std::make_shared<D::Normal>(td::zeros({2}), 1.0), 2); },
              {"Independent", "reinterpreted_batch_ndims (2)", "[0, 1]"});
  // Values outside the support, or of a shape that does not broadcast.
  const D::Exponential exponential(td::ones({3}));
  check_error([&] { exponential.log_prob(td::full({3}, -1.0)); },
              {"Exponential", "value", "[3]", "support", "GreaterThanEq(lower_bound=0.0)"});
  check_error([&] { exponential.log_prob(td::ones({2})); }, {"Exponential", "[2]", "does not broadcast", "[3]"});
  check_error([&] { D::Bernoulli(td::full({2}, 0.5)).log_prob(td::full({2}, 0.5)); }, {"Bernoulli", "Boolean()"});
  check_error([&] { D::Categorical(td::ones({3})).log_prob(td::full({}, 3.0)); },
              {"Categorical", "IntegerInterval(lower_bound=0, upper_bound=2)"});
  // validate_args = false, for one distribution or by default.
  CHECK(std::isnan(D::Normal(0.0, -1.0, false).log_prob(td::zeros({})).item<double>()));
  D::Distribution::set_default_validate_args(false);
  const double outside = D::Exponential(1.0).log_prob(td::full({}, -1.0)).item<double>();
  D::Distribution::set_default_validate_args(true);
  CHECK(outside == 1.0);  // log(1) - 1 * (-1): the formula, unchecked
  CHECK(D::Distribution::default_validate_args());
}
