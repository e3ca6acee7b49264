// The transforms of vectors, matrices and events (StickBreakingTransform, CorrCholeskyTransform,
// LowerCholeskyTransform, PositiveDefiniteTransform, IndependentTransform, ReshapeTransform,
// SoftmaxTransform), AbsTransform, CumulativeDistributionTransform, the event dims of composed
// and inverted transforms, and LogisticNormal. Values against PyTorch are in distributions_test (the fixture);
// here: the maps' own properties, log |det| against the Jacobian autograd builds, gradcheck, draws,
// shapes and errors.
#include <cmath>
#include <memory>
#include <vector>

#include "tests/distributions/sampling.h"
#include "tests/testing.h"

namespace td = tandem;
namespace D = td::distributions;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

void check_gradients(const td::autograd::TestedFn& fn, const std::vector<Tensor>& inputs, const std::string& what) {
  INFO(what);
  const auto result = td::autograd::gradcheck(fn, inputs, 1e-6, 1e-7, 1e-6);
  INFO(result.report);
  CHECK(result.ok);
}

// For each row of x [B, n]: t's log |det dy/dx| equals the log |det| of the Jacobian autograd
// builds for the map from x's row to the n coordinates of y that determine it (`free`: their flat
// positions in one y).
void check_log_det(const D::Transform& t, const Tensor& x, const Tensor& free) {
  const Tensor ladj = t.log_abs_det_jacobian(x, t(x));
  REQUIRE(ladj.sizes() == Shape{x.size(0)});
  for (int64_t row = 0; row < x.size(0); ++row) {
    INFO("row " << row);
    const Tensor jac = td::autograd::functional::jacobian(
        [&](const Tensor& v) { return t(v).reshape({-1}).index_select(0, free); }, x.select(0, row).contiguous());
    const auto [sign, logabsdet] = td::linalg::slogdet(jac);
    CHECK(std::abs(logabsdet.item<double>() - ladj.select(0, row).item<double>()) < 1e-10);
  }
}

// Every row of y (the last dim) is a point of the simplex with no coordinate 0.
void check_on_simplex(const Tensor& y, const std::string& what) {
  INFO(what);
  CHECK((y > 0).all().item<bool>());
  check_close(y.sum(-1), td::ones(Shape(y.sizes().begin(), y.sizes().end() - 1), td::kFloat64), 0, 1e-12, what);
}

}  // namespace

TEST_CASE("StickBreakingTransform: onto the simplex and back; log |det| is the Jacobian's", "[cpu]") {
  const auto t = std::make_shared<D::StickBreakingTransform>();
  CHECK(t->domain_event_dim() == 1);
  CHECK(t->codomain_event_dim() == 1);
  CHECK(t->forward_shape({2, 4}) == Shape{2, 5});
  CHECK(t->inverse_shape({2, 5}) == Shape{2, 4});

  td::testing::reseed(71);
  const Tensor x = td::randn({3, 4}, td::kFloat64) * 2;
  const Tensor y = (*t)(x);
  REQUIRE(y.sizes() == Shape{3, 5});
  check_on_simplex(y, "y");
  check_close(t->inv(y), x, 1e-12, 1e-12, "inv(y)");
  // x = 0 is the centre; a transposed view gives its own values' image.
  check_close((*t)(td::zeros({4}, td::kFloat64)), std::vector<double>(5, 0.2), 1e-15, 0, "the centre");
  const Tensor xt = td::randn({4, 3}, td::kFloat64).t();
  check_close((*t)(xt), (*t)(xt.contiguous()), 0, 0, "a transposed view");

  // y's first K - 1 coordinates determine the rest.
  check_log_det(*t, x, td::arange(4));

  // Differentiable: the map, its inverse (off the simplex too: the tail sums read any y) and log |det|.
  check_gradients([&](const std::vector<Tensor>& in) { return (*t)(in[0]); }, {x.clone().requires_grad_()}, "forward");
  // The inverse at a point whose smallest coordinate is not tiny: there finite differences of the
  // logs are accurate to the tolerance.
  check_gradients([&](const std::vector<Tensor>& in) { return t->inv(in[0]); }, {(*t)(x * 0.25).requires_grad_()},
                  "inverse");
  check_gradients([&](const std::vector<Tensor>& in) { return t->log_abs_det_jacobian(in[0], (*t)(in[0])); },
                  {x.clone().requires_grad_()}, "log |det|");

  // Far out, where y_0 rounds to 1: the point stays on the simplex and its tail takes it back to
  // x (PyTorch's gives back about 36 for x_0 = 40). A tail of 1e-300 keeps its digits too.
  const Tensor far = f64({40, -40, 30});
  const Tensor y_far = (*t)(far);
  CHECK((y_far > 0).all().item<bool>());
  CHECK(std::abs(y_far.sum().item<double>() - 1) < 1e-15);
  check_close(t->inv(y_far), far, 1e-13, 0, "back from far out");
  const Tensor tail = f64({0.5, 0.5 - 1e-300, 1e-300});
  check_close(t->inv(tail), f64({std::log(2.0), std::log(0.5 - 1e-300) - std::log(1e-300)}), 1e-14, 0, "a small tail");

  check_error([&] { (*t)(td::zeros({}, td::kFloat64)); }, {"StickBreakingTransform", "vectors", "[]"});
  check_error([&] { t->inv(td::ones({3, 1}, td::kFloat64)); }, {"StickBreakingTransform", "at least 2", "[3, 1]"});
  check_error([&] { t->log_abs_det_jacobian(x, x); }, {"StickBreakingTransform", "one longer", "[3, 4]"});
  check_error([&] { t->forward_shape({}); }, {"StickBreakingTransform", "vectors"});
  CHECK(t->in_codomain(y).all().item<bool>());
  CHECK_FALSE(t->in_codomain(f64({0.5, 0.6})).item<bool>());
  CHECK_FALSE(t->sign().has_value());
}

TEST_CASE("Event dims: composed and inverted transforms, IndependentTransform, ReshapeTransform", "[cpu]") {
  const auto stick = std::make_shared<D::StickBreakingTransform>();
  const auto exp = std::make_shared<D::ExpTransform>();
  const auto reshape = std::make_shared<D::ReshapeTransform>(Shape{6}, Shape{2, 3});
  // exp then stick-breaking: the whole takes vectors; exp's term is summed over each vector.
  const D::ComposeTransform exp_stick({exp, stick});
  CHECK(exp_stick.domain_event_dim() == 1);
  CHECK(exp_stick.codomain_event_dim() == 1);
  td::testing::reseed(72);
  const Tensor x = td::randn({2, 3}, td::kFloat64) * 0.5;
  const Tensor y = exp_stick(x);
  check_close(exp_stick.log_abs_det_jacobian(x, y), x.sum(-1) + stick->log_abs_det_jacobian(x.exp(), y), 1e-13, 1e-13,
              "compose's log |det|");
  // reshape then exp: events of 6 in, of 2 x 3 out.
  const D::ComposeTransform reshape_exp({reshape, exp});
  CHECK(reshape_exp.domain_event_dim() == 1);
  CHECK(reshape_exp.codomain_event_dim() == 2);
  const Tensor z = td::randn({4, 6}, td::kFloat64);
  const Tensor w = reshape_exp(z);
  REQUIRE(w.sizes() == Shape{4, 2, 3});
  check_close(reshape_exp.log_abs_det_jacobian(z, w), z.sum(-1), 1e-13, 1e-13, "reshape then exp");
  check_close(reshape_exp.inv(w), z, 1e-13, 1e-13, "back");
  // The inverse swaps the event dims and the shapes.
  const auto back = stick->inv();
  CHECK(back->domain_event_dim() == 1);
  CHECK(back->forward_shape({2, 5}) == Shape{2, 4});
  check_close(back->log_abs_det_jacobian(y, exp_stick.inv(y).exp()), -stick->log_abs_det_jacobian(x.exp(), y),
              1e-13, 1e-13, "the inverse's log |det|");
  // IndependentTransform: the same map over events of its rightmost dims.
  const D::IndependentTransform independent(exp, 2);
  CHECK(independent.domain_event_dim() == 2);
  CHECK(independent.codomain_event_dim() == 2);
  check_close(independent.log_abs_det_jacobian(w, w.exp()), w.sum({1, 2}), 1e-13, 1e-13, "independent");
  check_close(independent(w), w.exp(), 0, 0, "independent's map");
  CHECK(independent.equals(D::IndependentTransform(std::make_shared<D::ExpTransform>(), 2)));
  CHECK_FALSE(independent.equals(D::IndependentTransform(exp, 1)));
  CHECK(independent.codomain() == "IndependentConstraint(GreaterThan(lower_bound=0.0), 2)");
  CHECK(independent.in_codomain(td::ones({4, 2, 3}, td::kFloat64)).sizes() == Shape{4});
  check_error([] { D::IndependentTransform(nullptr, 1); }, {"IndependentTransform", "null"});
  check_error([&] { D::IndependentTransform(exp, -1); }, {"IndependentTransform", "reinterpreted_batch_ndims", "-1"});
  check_error([&] { independent.log_abs_det_jacobian(f64({1}), f64({1})); }, {"IndependentTransform", "2 batch dims"});
  // ReshapeTransform's shapes.
  CHECK(reshape->forward_shape({5, 6}) == Shape{5, 2, 3});
  CHECK(reshape->inverse_shape({5, 2, 3}) == Shape{5, 6});
  check_error([] { D::ReshapeTransform({6}, {4}); }, {"ReshapeTransform", "[6]", "[4]", "different numbers"});
  check_error([&] { (*reshape)(td::zeros({2, 5})); }, {"ReshapeTransform", "[2, 5]", "does not end in [6]"});
  CHECK(reshape->equals(D::ReshapeTransform({6}, {2, 3})));
  CHECK_FALSE(reshape->equals(D::ReshapeTransform({6}, {3, 2})));
}

TEST_CASE("TransformedDistribution with event dims: shapes, log_prob and errors", "[cpu]") {
  // A Normal batch [2, 3] made events of 4 on the simplex.
  const auto normal = std::make_shared<D::Normal>(td::zeros({2, 3}, td::kFloat64), 1.0);
  const D::TransformedDistribution on_simplex(normal, {std::make_shared<D::StickBreakingTransform>()});
  CHECK(on_simplex.batch_shape() == Shape{2});
  CHECK(on_simplex.event_shape() == Shape{4});
  CHECK(on_simplex.sample({5}).sizes() == Shape{5, 2, 4});
  const Tensor y = on_simplex.sample();
  const Tensor x = std::make_shared<D::StickBreakingTransform>()->inv(y);
  const auto stick = D::StickBreakingTransform();
  check_close(on_simplex.log_prob(y), normal->log_prob(x).sum(-1) - stick.log_abs_det_jacobian(x, y), 1e-12, 1e-12,
              "log_prob");
  // expand keeps the event: the base's batch grows by the inverse shape.
  const auto wider = on_simplex.expand({3, 2});
  CHECK(wider->batch_shape() == Shape{3, 2});
  CHECK(wider->event_shape() == Shape{4});
  check_close(wider->log_prob(y), on_simplex.log_prob(y).expand({3, 2}), 0, 0, "expanded log_prob");
  // A value off the simplex, and too few dims for the transforms' events.
  check_error([&] { on_simplex.log_prob(td::full({2, 4}, 0.5, td::kFloat64)); },
              {"TransformedDistribution", "Simplex()"});
  const auto number = std::make_shared<D::Normal>(0.0, 1.0);
  check_error([&] { D::TransformedDistribution(number, {std::make_shared<D::StickBreakingTransform>()}); },
              {"TransformedDistribution", "events of 1 dims", "Normal", "[]"});
  // Not invertible: draws, but no log density; and no cdf without signs.
  const D::TransformedDistribution folded(number, {std::make_shared<D::AbsTransform>()});
  CHECK((folded.sample({100}) >= 0).all().item<bool>());
  check_error([&] { folded.log_prob(td::ones({}, td::kFloat32)); }, {"AbsTransform", "not invertible"});
  check_error([&] { on_simplex.cdf(y); }, {"TransformedDistribution", "cdf", "sign"});
  const D::TransformedDistribution softmax(normal, {std::make_shared<D::SoftmaxTransform>()});
  CHECK(softmax.event_shape() == Shape{3});
  check_close(softmax.sample().sum(-1), td::ones({2}, td::kFloat64), 0, 1e-12, "softmax draws");
  check_error([&] { softmax.log_prob(softmax.sample()); }, {"SoftmaxTransform", "not invertible"});
}

TEST_CASE("LogisticNormal: draws on the simplex whose stick-breaking inverse is Normal(loc, scale)", "[cpu]") {
  const Tensor loc = f64({0.5, -1.0, 0.2}), scale = f64({0.7, 1.5, 0.3});
  const Tensor leaf = loc.clone().requires_grad_();
  const D::LogisticNormal d(leaf, scale);
  CHECK(d.batch_shape() == Shape{});
  CHECK(d.event_shape() == Shape{4});
  CHECK(d.has_rsample());
  td::testing::reseed(73);
  const Tensor draws = d.sample({40000});
  REQUIRE(draws.sizes() == Shape{40000, 4});
  check_on_simplex(draws, "draws");
  const Tensor x = D::StickBreakingTransform().inv(draws);
  CHECK(td::testing::ks_statistic(D::Normal(loc, scale), x) < 2.7);
  // rsample is differentiable in loc: each y_i grows with its own x_i.
  const Tensor y = d.rsample({8});
  y.select(-1, 0).sum().backward();
  REQUIRE(leaf.grad().defined());
  CHECK((leaf.grad().select(0, 0) > 0).item<bool>());
  // Two numbers: the simplex of 2 dims.
  const D::LogisticNormal pair(0.3, 1.4);
  CHECK(pair.event_shape() == Shape{2});
  CHECK(pair.batch_shape() == Shape{});
  CHECK(pair.sample({3}).sizes() == Shape{3, 2});
  const auto expanded = pair.expand({5});
  CHECK(expanded->batch_shape() == Shape{5});
  CHECK(expanded->event_shape() == Shape{2});
  CHECK(std::dynamic_pointer_cast<D::LogisticNormal>(expanded) != nullptr);
  check_close(expanded->log_prob(f64({0.3, 0.7})), pair.log_prob(f64({0.3, 0.7})).expand({5}), 0, 0, "expanded");
  // Errors name LogisticNormal; the inputs stay as they were.
  const Tensor bad_scale = f64({1.0, -2.0, 1.0});
  const td::testing::Snapshot before(bad_scale);
  check_error([&] { D::LogisticNormal(loc, bad_scale); }, {"LogisticNormal", "scale", "GreaterThan(lower_bound=0.0)"});
  before.check_unchanged(bad_scale);
  check_error([&] { D::LogisticNormal(loc, f64({1.0, 2.0})); }, {"LogisticNormal", "loc", "scale", "[3]", "[2]"});
  check_error([&] { d.log_prob(f64({0.5, 0.5, 0.5, 0.5})); }, {"LogisticNormal", "Simplex()"});
  check_error([&] { d.cdf(f64({0.25, 0.25, 0.25, 0.25})); }, {"LogisticNormal", "cdf", "sign"});
  check_close(d.loc(), loc, 0, 0, "loc");
  check_close(d.scale(), scale, 0, 0, "scale");
}

TEST_CASE("CorrCholeskyTransform: onto correlation Cholesky factors and back; log |det| is the Jacobian's", "[cpu]") {
  const auto t = std::make_shared<D::CorrCholeskyTransform>();
  CHECK(t->domain_event_dim() == 1);
  CHECK(t->codomain_event_dim() == 2);
  CHECK(t->forward_shape({5, 6}) == Shape{5, 4, 4});
  CHECK(t->inverse_shape({5, 4, 4}) == Shape{5, 6});
  td::testing::reseed(74);
  const Tensor x = td::randn({2, 6}, td::kFloat64);
  const Tensor y = (*t)(x);
  REQUIRE(y.sizes() == Shape{2, 4, 4});
  CHECK(t->in_codomain(y).all().item<bool>());
  check_close(y.matmul(y.transpose(-2, -1)).diagonal(0, -2, -1), td::ones({2, 4}, td::kFloat64), 0, 1e-14,
              "unit rows");
  check_close(y.triu(1), td::zeros({2, 4, 4}, td::kFloat64), 0, 0, "lower triangular");
  check_close(t->inv(y), x, 1e-12, 1e-12, "inv(y)");
  // y's strict lower triangle determines the rest (row-major positions in 4 x 4, row by row).
  check_log_det(*t, x, td::tensor(std::vector<int64_t>{4, 8, 9, 12, 13, 14}));
  check_gradients([&](const std::vector<Tensor>& in) { return (*t)(in[0]); }, {x.clone().requires_grad_()}, "forward");
  // The inverse where no row's tail is tiny (finite differences of atanh near 1 lose digits).
  check_gradients([&](const std::vector<Tensor>& in) { return t->inv(in[0]); }, {(*t)(x * 0.5).requires_grad_()},
                  "inverse");
  check_gradients([&](const std::vector<Tensor>& in) { return t->log_abs_det_jacobian(in[0], (*t)(in[0])); },
                  {x.clone().requires_grad_()}, "log |det|");
  // A 2 x 2 factor is [[1, 0], [tanh x, sech x]]: sech(15) = 6.1e-7 keeps its digits.
  const Tensor pair = (*t)(f64({15}));
  check_close(pair, f64({1, 0, std::tanh(15.0), 1 / std::cosh(15.0)}).reshape({2, 2}), 1e-14, 0, "x = 15");
  check_error([&] { (*t)(td::zeros({4}, td::kFloat64)); },
              {"CorrCholeskyTransform", "4 numbers", "strict lower triangle"});
  check_error([&] { t->inv(td::zeros({3, 2}, td::kFloat64)); }, {"CorrCholeskyTransform", "square", "[3, 2]"});
  check_error([&] { t->inverse_shape({3}); }, {"CorrCholeskyTransform", "square", "[3]"});
  CHECK_FALSE(t->in_codomain(td::eye(3, -1, td::kFloat64) * 2).item<bool>());
}

TEST_CASE("LowerCholeskyTransform and PositiveDefiniteTransform: onto their matrices and back", "[cpu]") {
  td::testing::reseed(75);
  const Tensor x = td::randn({2, 3, 3}, td::kFloat64);
  const D::LowerCholeskyTransform lower;
  const Tensor l = lower(x);
  CHECK(lower.in_codomain(l).all().item<bool>());
  check_close(l, x.tril(-1) + td::diag_embed(x.diagonal(0, -2, -1).exp()), 0, 0, "lower");
  check_close(lower.inv(l), x.tril(), 1e-14, 1e-14, "back: x's lower triangle");
  check_error([&] { lower.log_abs_det_jacobian(x, l); }, {"LowerCholeskyTransform", "not defined", "upper triangle"});
  check_error([&] { lower(td::zeros({2, 3}, td::kFloat64)); }, {"LowerCholeskyTransform", "square", "[2, 3]"});
  CHECK_FALSE(lower.in_codomain(x).all().item<bool>());
  const D::PositiveDefiniteTransform definite;
  const Tensor p = definite(x);
  CHECK(definite.in_codomain(p).all().item<bool>());
  check_close(p, l.matmul(l.transpose(-2, -1)), 0, 0, "L L^T");
  check_close(definite.inv(p), x.tril(), 1e-12, 1e-12, "back");
  // The identity on lower triangles, differentiably (at a well-conditioned point: finite
  // differences through L L^T and its Cholesky factor lose digits as the condition number grows).
  check_gradients([&](const std::vector<Tensor>& in) { return definite.inv(definite(in[0])); },
                  {(x * 0.3).tril().requires_grad_()}, "through and back");
  check_error([&] { definite.log_abs_det_jacobian(x, p); }, {"PositiveDefiniteTransform", "not defined"});
  check_error([&] { definite.inv(td::zeros({3}, td::kFloat64)); }, {"PositiveDefiniteTransform", "square", "[3]"});
  CHECK(definite.codomain_event_dim() == 2);
}

TEST_CASE("CumulativeDistributionTransform: a distribution through its own cdf is uniform", "[cpu]") {
  const auto normal = std::make_shared<D::Normal>(f64({0.5, -1}), f64({2, 0.3}));
  const auto cdf = std::make_shared<D::CumulativeDistributionTransform>(normal);
  CHECK(cdf->sign().has_value());
  CHECK(cdf->equals(*cdf));
  CHECK_FALSE(cdf->equals(D::CumulativeDistributionTransform(normal)));
  const D::TransformedDistribution uniform(normal, {cdf});
  const Tensor u = f64({0.1, 0.7, 0.95, 0.4}).reshape({2, 2});
  check_close(uniform.log_prob(u), td::zeros({2, 2}, td::kFloat64), 0, 1e-12, "log density 0");
  check_close(uniform.cdf(u), u, 1e-12, 1e-12, "cdf");
  check_close(uniform.icdf(u), u, 1e-12, 1e-12, "icdf");
  td::testing::reseed(76);
  CHECK(td::testing::ks_statistic(D::Uniform(0.0, 1.0), uniform.sample({20000}).to(td::kFloat32)) < 2.7);
  check_error([&] { uniform.log_prob(f64({1.5, 0.5})); }, {"TransformedDistribution", "Interval"});
  check_error([] { D::CumulativeDistributionTransform(nullptr); }, {"CumulativeDistributionTransform", "null"});
  // A distribution with events: its event dims are the transform's.
  const auto dirichlet = std::make_shared<D::Dirichlet>(f64({1, 2, 3}));
  CHECK(D::CumulativeDistributionTransform(dirichlet).domain_event_dim() == 1);
}
