// The transforms of vectors, matrices, events and slices (StickBreakingTransform,
// CorrCholeskyTransform, LowerCholeskyTransform, PositiveDefiniteTransform, IndependentTransform,
// ReshapeTransform, SoftmaxTransform, CatTransform, StackTransform), AbsTransform,
// CumulativeDistributionTransform, the event dims of composed and inverted transforms, and
// LogisticNormal. Values against PyTorch are in distributions_test (the fixture); here: the maps'
// own properties, log |det| against the Jacobian autograd builds, gradcheck, draws, shapes and
// errors.
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
  // AffineTransform over events of 2 dims: log |scale| summed over each event's 6 elements, a
  // 0-dim tensor scale counted once per element (PyTorch's counts it once per event).
  const D::AffineTransform affine(0.5, td::full({}, -2.0, td::kFloat64), 2);
  CHECK(affine.domain_event_dim() == 2);
  CHECK(affine.codomain_event_dim() == 2);
  check_close(affine.log_abs_det_jacobian(w, affine(w)), std::vector<double>(4, 6 * std::log(2.0)), 1e-14, 0,
              "affine's log |det| per event");
  CHECK_FALSE(affine.equals(D::AffineTransform(0.5, -2.0)));
  CHECK(affine.equals(D::AffineTransform(0.5, -2.0, 2)));
  CHECK(affine.in_codomain(w).sizes() == Shape{4});
  CHECK(affine.domain() == "IndependentConstraint(Real(), 2)");
  check_error([] { D::AffineTransform(0.0, 1.0, -1); }, {"AffineTransform", "event_dim", "-1"});
  check_error([&] { affine.log_abs_det_jacobian(f64({1}), f64({1})); }, {"AffineTransform", "events of 2", "[1]"});
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

TEST_CASE("CatTransform: slices along dim through transforms of their own, concatenated", "[cpu]") {
  const auto exp = std::make_shared<D::ExpTransform>();
  const auto affine = std::make_shared<D::AffineTransform>(0.5, 2.0);
  const auto tanh = std::make_shared<D::TanhTransform>();
  const auto stick = std::make_shared<D::StickBreakingTransform>();
  td::testing::reseed(74);

  // Element-wise parts along the last dim of a transposed view: y is each part on its slice, and
  // log |dy/dx|, element by element, is the log of the derivative autograd finds.
  const D::CatTransform elementwise({exp, affine, tanh}, -1, {2, 1, 2});
  CHECK(elementwise.domain_event_dim() == 0);
  CHECK(elementwise.codomain_event_dim() == 0);
  const Tensor x = td::randn({5, 3}, td::kFloat64).t();
  const Tensor x_before = x.clone();
  const Tensor y = elementwise(x);
  REQUIRE(y.sizes() == Shape{3, 5});
  check_close(y.narrow(-1, 0, 2), x.narrow(-1, 0, 2).exp(), 0, 0, "exp's slice");
  check_close(y.narrow(-1, 2, 1), x.narrow(-1, 2, 1) * 2 + 0.5, 0, 0, "affine's slice");
  check_close(y.narrow(-1, 3, 2), x.narrow(-1, 3, 2).tanh(), 0, 0, "tanh's slice");
  check_close(elementwise.inv(y), x, 1e-13, 1e-13, "inv(y)");
  const Tensor leaf = x.clone().requires_grad_();
  elementwise(leaf).sum().backward();
  check_close(elementwise.log_abs_det_jacobian(x, y), leaf.grad().abs().log(), 1e-13, 1e-13, "log |dy/dx|");
  REQUIRE(elementwise.sign().has_value());
  CHECK(elementwise.sign()->number() == 1.0);
  CHECK_FALSE(D::CatTransform({exp, std::make_shared<D::AffineTransform>(0.0, -1.0)}).sign().has_value());
  CHECK(elementwise.codomain() ==
        "Cat([GreaterThan(lower_bound=0.0), Real(), Interval(lower_bound=-1.0, upper_bound=1.0)], dim=-1, "
        "lengths=[2, 1, 2])");
  CHECK(elementwise.in_codomain(y).all().item<bool>());
  const Tensor outside = y.clone();
  outside.select(0, 1).select(0, 4).fill_(2.0);  // tanh's slice, row 1
  CHECK(values(elementwise.in_codomain(outside).select(0, 1).to(td::kFloat64)) == std::vector<double>{1, 1, 1, 1, 0});

  // A part that lengthens its slice (stick-breaking, on the last dim): the whole takes vectors of
  // 5 to vectors of 6, and its log |det| is the parts' summed over each vector. PyTorch's
  // CatTransform keeps every slice's length, and fails here.
  const auto onto_simplex_ptr = std::make_shared<D::CatTransform>(std::vector<std::shared_ptr<const D::Transform>>{exp, stick}, -1,
                                                                   std::vector<int64_t>{2, 3});
  const D::CatTransform& onto_simplex = *onto_simplex_ptr;
  CHECK(onto_simplex.domain_event_dim() == 1);
  CHECK(onto_simplex.forward_shape({4, 5}) == Shape{4, 6});
  CHECK(onto_simplex.inverse_shape({4, 6}) == Shape{4, 5});
  const Tensor u = td::randn({4, 5}, td::kFloat64);
  const Tensor v = onto_simplex(u);
  REQUIRE(v.sizes() == Shape{4, 6});
  check_on_simplex(v.narrow(-1, 2, 4), "stick-breaking's slice");
  check_close(onto_simplex.inv(v), u, 1e-12, 1e-12, "back");
  check_close(onto_simplex.log_abs_det_jacobian(u, v),
              u.narrow(-1, 0, 2).sum(-1) + stick->log_abs_det_jacobian(u.narrow(-1, 2, 3), v.narrow(-1, 2, 4)), 1e-13,
              1e-13, "log |det| over each vector");
  CHECK(onto_simplex.in_codomain(v).sizes() == Shape{4});
  check_gradients([&](const std::vector<Tensor>& in) { return onto_simplex(in[0]); }, {u.clone().requires_grad_()},
                  "forward");
  check_gradients([&](const std::vector<Tensor>& in) { return onto_simplex.inv(in[0]); },
                  {onto_simplex(u * 0.25).requires_grad_()}, "inverse");
  check_gradients([&](const std::vector<Tensor>& in) { return onto_simplex.log_abs_det_jacobian(in[0], onto_simplex(in[0])); },
                  {u.clone().requires_grad_()}, "log |det|");

  // With an affine map of vectors in place of exp: its membership checks reduce over the vectors too.
  const D::CatTransform affine_simplex({std::make_shared<D::AffineTransform>(0.0, 2.0, 1), stick}, -1, {2, 3});
  CHECK(affine_simplex.in_codomain(affine_simplex(u)).sizes() == Shape{4});
  CHECK(affine_simplex.in_domain(u).sizes() == Shape{4});
  // A Normal through it: events of 6, log_prob the base's over the 5 numbers less log |det|.
  const auto normal = std::make_shared<D::Normal>(td::zeros({4, 5}, td::kFloat64), 1.0);
  const D::TransformedDistribution pushed(normal, {onto_simplex_ptr});
  CHECK(pushed.batch_shape() == Shape{4});
  CHECK(pushed.event_shape() == Shape{6});
  check_close(pushed.log_prob(v), normal->log_prob(u).sum(-1) - onto_simplex.log_abs_det_jacobian(u, v), 1e-12, 1e-12,
              "log_prob");

  // Along a batch dim, parts of vectors: rows 0 and 1-2 of x each onto the simplex, log |det| one
  // per row, concatenated.
  const D::CatTransform rows({stick, stick}, 0, {1, 2});
  const Tensor r = td::randn({3, 4}, td::kFloat64);
  check_close(rows(r), (*stick)(r), 0, 0, "rows");
  CHECK(rows.forward_shape({3, 4}) == Shape{3, 5});
  CHECK(rows.inverse_shape({3, 5}) == Shape{3, 4});
  check_close(rows.inv(rows(r)), r, 1e-12, 1e-12, "rows back");
  check_close(rows.log_abs_det_jacobian(r, rows(r)), stick->log_abs_det_jacobian(r, (*stick)(r)), 0, 0, "rows' log |det|");
  CHECK(rows.equals(D::CatTransform({std::make_shared<D::StickBreakingTransform>(), stick}, 0, {1, 2})));
  CHECK_FALSE(rows.equals(D::CatTransform({stick, stick}, 0, {2, 1})));
  CHECK_FALSE(rows.equals(D::CatTransform({stick, stick}, 1, {1, 2})));

  check_error([] { D::CatTransform({}); }, {"CatTransform", "at least one"});
  check_error([&] { D::CatTransform({exp, nullptr}); }, {"CatTransform", "part 1", "null"});
  check_error([&] { D::CatTransform({exp, tanh}, 0, {1}); }, {"CatTransform", "1 lengths", "2 transforms"});
  check_error([&] { D::CatTransform({exp, tanh}, 0, {1, 0}); }, {"CatTransform", "lengths", ">= 1", "[1, 0]"});
  check_error([&] { elementwise(td::zeros({3, 4}, td::kFloat64)); },
              {"CatTransform", "[3, 4]", "has 4 along dim -1", "[2, 1, 2]", "add up to 5"});
  check_error([&] { elementwise(td::zeros({}, td::kFloat64)); }, {"CatTransform", "dim -1", "out of range", "0 dims"});
  check_error([&] { onto_simplex.inv(td::zeros({4, 5}, td::kFloat64)); },
              {"CatTransform", "[4, 5]", "not an image", "[4, 6]"});
  check_error([&] { onto_simplex.log_abs_det_jacobian(u, u); }, {"CatTransform", "[4, 6]", "[4, 5]"});
  const D::CatTransform reshaping({std::make_shared<D::ReshapeTransform>(Shape{2}, Shape{1, 2})}, -1, {2});
  check_error([&] { reshaping(td::zeros({3, 2}, td::kFloat64)); },
              {"CatTransform", "part 0", "ReshapeTransform", "[3, 2]", "[3, 1, 2]", "only the length"});
  check_error([&] { D::CatTransform({stick, exp}, 0, {1, 2})(r); },
              {"CatTransform", "part 1", "ExpTransform", "[2, 4]", "batch dim", "agree", "[1, 5]"});
  check_close(x, x_before, 0, 0, "x after the calls");
}

TEST_CASE("StackTransform: slices along a batch dim through transforms of their own, stacked", "[cpu]") {
  const auto exp = std::make_shared<D::ExpTransform>();
  const auto flip = std::make_shared<D::AffineTransform>(0.0, -3.0);
  const auto stick = std::make_shared<D::StickBreakingTransform>();
  td::testing::reseed(75);

  // Rows 0 and 1: exp and -3x.
  const D::StackTransform rows({exp, flip}, 0);
  const Tensor x = td::randn({2, 3}, td::kFloat64);
  const Tensor y = rows(x);
  check_close(y.select(0, 0), x.select(0, 0).exp(), 0, 0, "row 0");
  check_close(y.select(0, 1), x.select(0, 1) * -3, 0, 0, "row 1");
  check_close(rows.inv(y), x, 1e-13, 1e-13, "inv(y)");
  const Tensor ladj = rows.log_abs_det_jacobian(x, y);
  REQUIRE(ladj.sizes() == Shape{2, 3});
  check_close(ladj.select(0, 0), x.select(0, 0), 0, 0, "exp's log |det|");
  check_close(ladj.select(0, 1), std::vector<double>(3, std::log(3.0)), 1e-15, 0, "-3x's log |det|");
  CHECK_FALSE(rows.sign().has_value());
  CHECK(rows.domain() == "Stack([Real(), Real()], dim=0)");

  // The last dim of element-wise parts, a transposed view: a batch dim, so log_prob works
  // (PyTorch's counts it as an event dim and its log_prob fails).
  const auto columns_ptr = std::make_shared<D::StackTransform>(std::vector<std::shared_ptr<const D::Transform>>{exp, flip}, -1);
  const D::StackTransform& columns = *columns_ptr;
  const Tensor xt = td::randn({2, 4}, td::kFloat64).t();
  const Tensor yt = columns(xt);
  check_close(yt, rows(xt.t()).t(), 0, 0, "columns");
  check_close(columns.log_abs_det_jacobian(xt, yt), rows.log_abs_det_jacobian(xt.t(), rows(xt.t())).t(), 0, 0,
              "columns' log |det|");
  const auto normal = std::make_shared<D::Normal>(td::zeros({4, 2}, td::kFloat64), 1.0);
  const D::TransformedDistribution pushed(normal, {columns_ptr});
  CHECK(pushed.batch_shape() == Shape{4, 2});
  CHECK(pushed.event_shape() == Shape{});
  check_close(pushed.log_prob(yt), normal->log_prob(xt) - columns.log_abs_det_jacobian(xt, yt), 1e-13, 1e-13,
              "log_prob");

  // Parts of vectors, stacked along dim 0 of [2, 3, 4]: events of 4 onto the simplex.
  const D::StackTransform sticks({stick, stick}, 0);
  CHECK(sticks.domain_event_dim() == 1);
  CHECK(sticks.forward_shape({2, 3, 4}) == Shape{2, 3, 5});
  CHECK(sticks.inverse_shape({2, 3, 5}) == Shape{2, 3, 4});
  const Tensor u = td::randn({2, 3, 4}, td::kFloat64);
  const Tensor v = sticks(u);
  check_close(v, (*stick)(u), 0, 0, "sticks");
  check_close(sticks.log_abs_det_jacobian(u, v), stick->log_abs_det_jacobian(u, v), 0, 0, "sticks' log |det|");
  CHECK(sticks.in_codomain(v).sizes() == Shape{2, 3});
  check_gradients([&](const std::vector<Tensor>& in) { return sticks(in[0]); }, {u.clone().requires_grad_()}, "forward");
  check_gradients([&](const std::vector<Tensor>& in) { return sticks.inv(in[0]); }, {sticks(u * 0.25).requires_grad_()},
                  "inverse");
  check_gradients([&](const std::vector<Tensor>& in) { return sticks.log_abs_det_jacobian(in[0], sticks(in[0])); },
                  {u.clone().requires_grad_()}, "log |det|");
  CHECK(sticks.equals(D::StackTransform({std::make_shared<D::StickBreakingTransform>(), stick}, 0)));
  // Parts from vectors to matrices, a negative dim: -2 is x's dim 1 (left of its vectors) and
  // y's dim 1 too (left of its matrices), both ways.
  const auto corr = std::make_shared<D::CorrCholeskyTransform>();
  const auto scaled = std::make_shared<D::ComposeTransform>(
      std::vector<std::shared_ptr<const D::Transform>>{std::make_shared<D::AffineTransform>(0.0, 0.5, 1), corr});
  const D::StackTransform factors({corr, scaled}, -2);
  const Tensor z = td::randn({2, 2, 3}, td::kFloat64);
  const Tensor l = factors(z);
  REQUIRE(l.sizes() == Shape{2, 2, 3, 3});
  check_close(l.select(1, 0), (*corr)(z.select(1, 0)), 0, 0, "slice 0");
  check_close(l.select(1, 1), (*scaled)(z.select(1, 1)), 0, 0, "slice 1");
  check_close(factors.inv(l), z, 1e-12, 1e-12, "back");
  check_close(factors.log_abs_det_jacobian(z, l).select(1, 1),
              scaled->log_abs_det_jacobian(z.select(1, 1), l.select(1, 1)), 0, 0, "log |det| of slice 1");
  CHECK(factors.inverse_shape({2, 2, 3, 3}) == Shape{2, 2, 3});
  CHECK_FALSE(sticks.equals(D::StackTransform({stick, stick}, 1)));
  CHECK_FALSE(sticks.equals(D::StackTransform({stick, stick, stick}, 0)));
  // A cat of the same parts along the same dim is another transform (one with lengths).
  CHECK_FALSE(sticks.equals(D::CatTransform({stick, stick}, 0)));
  CHECK_FALSE(D::CatTransform({stick, stick}, 0).equals(sticks));

  const Tensor u_before = u.clone();
  check_error([] { D::StackTransform({}); }, {"StackTransform", "at least one"});
  check_error([&] { D::StackTransform({exp, nullptr}); }, {"StackTransform", "part 1", "null"});
  check_error([&] { rows(td::zeros({3, 3}, td::kFloat64)); }, {"StackTransform", "[3, 3]", "3 slices", "2 transforms"});
  check_error([&] { rows(td::zeros({}, td::kFloat64)); }, {"StackTransform", "dim 0", "out of range", "[]"});
  check_error([&] { D::StackTransform({stick, stick}, -1)(u); },
              {"StackTransform", "dim -1", "[2, 3, 4]", "event", "IndependentTransform"});
  check_error([&] { D::StackTransform({exp, stick}, 0)(u); },
              {"StackTransform", "part 1", "StickBreakingTransform", "[3, 5]", "[3, 4]"});
  check_error([&] { D::StackTransform({exp, stick}, 0).forward_shape({2, 3, 4}); },
              {"StackTransform", "part 1", "[3, 4]", "[3, 5]"});
  check_close(u, u_before, 0, 0, "u after the calls");
}
