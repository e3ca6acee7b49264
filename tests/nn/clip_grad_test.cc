// Gradient clipping against the arithmetic torch.nn.utils does: the total norm over all
// gradients, the factor max_norm / (total + 1e-6) capped at 1 (rounded as PyTorch's: the
// reciprocal of the total times max_norm), errors that change nothing.
#include <cmath>
#include <limits>

#include "tests/testing.h"

namespace td = tandem;
namespace utils = td::nn::utils;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

// Parameters whose gradients are the given values.
std::vector<Tensor> with_grads(const std::vector<std::vector<double>>& grads) {
  std::vector<Tensor> params;
  for (const auto& g : grads) {
    Tensor p = td::zeros({static_cast<int64_t>(g.size())}, td::kFloat64).requires_grad_();
    p.mutable_grad() = td::tensor(g, td::kFloat64);
    params.push_back(p);
  }
  return params;
}

}  // namespace

TEST_CASE("clip_grad_norm_ scales all gradients by one factor so that their total norm is max_norm", "[cpu]") {
  auto params = with_grads({{3, 0}, {0, 4}, {12}});  // total 2-norm 13
  Tensor unused = td::zeros({2}).requires_grad_();   // no gradient: skipped
  params.push_back(unused);
  Tensor total = utils::clip_grad_norm_(params, 6.5);
  CHECK(total.dim() == 0);
  CHECK(total.item<double>() == 13);
  const double factor = 6.5 / (13 + 1e-6);
  check_close(params[0].grad(), td::tensor({3 * factor, 0.0}, td::kFloat64), 1e-15, 0, "first");
  check_close(params[2].grad(), td::tensor({12 * factor}, td::kFloat64), 1e-15, 0, "third");
  CHECK_FALSE(unused.grad().defined());
  // Within max_norm: unchanged (the factor is capped at 1).
  auto small = with_grads({{0.3, -0.4}});
  CHECK(utils::clip_grad_norm_(small, 1.0).item<double>() == Approx(0.5));
  CHECK(values(small[0].grad()) == std::vector<double>{0.3, -0.4});
}

TEST_CASE("clip_grad_norm_ rounds its factor as PyTorch does, bit for bit in float32", "[cpu]") {
  // PyTorch 2.15: a float32 gradient [7] clipped to 0.7 becomes 0.6999998688697815 (true division
  // would give 0.6999999284744263); [3, -4, 1.5, 2, -0.5] clipped to 0.7 as below.
  Tensor p = td::zeros({1}).requires_grad_();
  p.mutable_grad() = td::tensor({7.0f});
  CHECK(utils::clip_grad_norm_({p}, 0.7).item<double>() == 7.0);
  CHECK(values(p.grad())[0] == 0.6999998688697815);
  Tensor q = td::zeros({5}).requires_grad_();
  q.mutable_grad() = td::tensor({3.0f, -4.0f, 1.5f, 2.0f, -0.5f});
  utils::clip_grad_norm_({q}, 0.7);
  CHECK(values(q.grad()) == std::vector<double>{0.37416568398475647, -0.4988875687122345, 0.18708284199237823,
                                                0.24944378435611725, -0.06236094608902931});
}

TEST_CASE("clip_grad_norm_ of order 1 and infinity", "[cpu]") {
  auto ones = with_grads({{1, -2}, {3}});
  CHECK(utils::clip_grad_norm_(ones, 3.0, 1.0).item<double>() == 6);
  check_close(ones[1].grad(), td::tensor({3 * 3.0 / (6 + 1e-6)}, td::kFloat64), 1e-15, 0, "order 1");
  auto inf = with_grads({{1, -5}, {3}});
  const double infinity = std::numeric_limits<double>::infinity();
  CHECK(utils::clip_grad_norm_(inf, 2.5, infinity).item<double>() == 5);
  check_close(inf[0].grad(), td::tensor({2.5 / (5 + 1e-6), -5 * 2.5 / (5 + 1e-6)}, td::kFloat64), 1e-15, 0, "inf");
  CHECK(utils::clip_grad_norm_({}, 1.0).item<double>() == 0);  // nothing to clip
}

TEST_CASE("get_total_norm and clip_grad_norm_ of negative orders and -infinity, as PyTorch's", "[cpu]") {
  // Over |x| = 1, 2, 3, 0.5, 4: order -1 is 1 / sum(1 / |x|) = 12 / 49, order -2 the root of
  // 1 / sum(1 / x^2), -infinity the smallest |x| (PyTorch 2.15: 0.2449, 0.4294, 0.5).
  const std::vector<Tensor> grads = {td::tensor(std::vector<double>{1, -2, 3}, td::kFloat64),
                                     td::tensor(std::vector<double>{0.5, 4}, td::kFloat64)};
  check_close(utils::get_total_norm(grads, -1), {12.0 / 49}, 1e-15, 0, "order -1");
  check_close(utils::get_total_norm(grads, -2), {1 / std::sqrt(1 + 0.25 + 1.0 / 9 + 4 + 1.0 / 16)}, 1e-15, 0,
              "order -2");
  CHECK(utils::get_total_norm(grads, -std::numeric_limits<double>::infinity()).item<double>() == 0.5);
  // clip_grad_norm_ scales by max_norm / (total + 1e-6) below 1: 0.1 / (12 / 49 + 1e-6) here.
  auto params = with_grads({{1, -2, 3}, {0.5, 4}});
  check_close(utils::clip_grad_norm_(params, 0.1, -1), {12.0 / 49}, 1e-15, 0, "the total");
  check_close(params[1].grad(), {0.5 * 0.1 / (12.0 / 49 + 1e-6), 4 * 0.1 / (12.0 / 49 + 1e-6)}, 1e-15, 0, "clipped");
}

TEST_CASE("clip_grad_norm_ errors name the problem and leave the gradients as they were", "[cpu]") {
  auto params = with_grads({{1, std::nan("")}, {2}});
  check_error([&] { utils::clip_grad_norm_(params, 1.0, 2.0, true); },
              {"clip_grad_norm_", "total norm of order 2", "nan", "error_if_nonfinite"});
  CHECK(values(params[1].grad()) == std::vector<double>{2});
  check_error([&] { utils::clip_grad_norm_(params, 1.0, std::nan("")); }, {"clip_grad_norm_", "norm_type is NaN"});
  check_error([&] { utils::clip_grad_norm_(params, std::nan("")); }, {"clip_grad_norm_", "max_norm is NaN"});
  CHECK(values(params[1].grad()) == std::vector<double>{2});
  // Without the check, a NaN total scales every gradient by NaN, as in PyTorch.
  CHECK(std::isnan(utils::clip_grad_norm_(params, 1.0).item<double>()));
  CHECK(std::isnan(params[1].grad().item<double>()));
}

TEST_CASE("clip_grad_value_ clamps each gradient element to [-clip_value, clip_value]", "[cpu]") {
  auto params = with_grads({{-3, 0.5, 2}, {7}});
  utils::clip_grad_value_(params, 1.0);
  CHECK(values(params[0].grad()) == std::vector<double>{-1, 0.5, 1});
  CHECK(values(params[1].grad()) == std::vector<double>{1});
  check_error([&] { utils::clip_grad_value_(params, std::nan("")); }, {"clip_grad_value_", "NaN"});
}

TEST_CASE("clip_grad_norm_ in a training step: float32 gradients of a Linear", "[cpu]") {
  td::manual_seed(3);
  td::nn::Linear fc(4, 2);
  Tensor x = td::randn({8, 4});
  (fc(x) * 100).sum().backward();
  Tensor total = utils::clip_grad_norm_(fc->parameters(), 0.5);
  double squares = 0;
  for (const Tensor& p : fc->parameters()) squares += td::pow(p.grad().to(td::kFloat64), 2).sum().item<double>();
  CHECK(total.dtype() == td::kFloat32);
  CHECK(total.item<double>() > 0.5);
  CHECK(std::sqrt(squares) == Approx(0.5).epsilon(1e-5));
}

TEST_CASE("clip_grad_norm_ adds the norms up in the widest dtype, and takes order 0 as PyTorch does", "[cpu]") {
  Tensor half = td::zeros({2}, td::kFloat16).requires_grad_(), wide = td::zeros({1}).requires_grad_();
  half.mutable_grad() = td::tensor({3.0, 4.0}, td::kFloat16);
  wide.mutable_grad() = td::tensor({1e5}, td::kFloat32);  // beyond float16's largest
  Tensor total = utils::clip_grad_norm_({half, wide}, 1e10);
  CHECK(total.dtype() == td::kFloat32);
  CHECK(total.item<double>() == Approx(std::sqrt(25.0 + 1e10)).epsilon(1e-6));
  auto counted = with_grads({{0, 2, -1}, {0}});
  // The order-0 norm of the gradients' own order-0 norms (2 and 0), as PyTorch computes it: 1.
  CHECK(utils::clip_grad_norm_(counted, 10.0, 0.0).item<double>() == 1);
}

TEST_CASE("parameters_to_vector and vector_to_parameters flatten and refill parameters in order", "[cpu]") {
  Tensor a = td::tensor(std::vector<double>{1, 2, 3, 4}).view({2, 2}).requires_grad_(true);
  Tensor b = td::tensor(std::vector<double>{5, 6, 7}).requires_grad_(true);
  const Tensor vec = utils::parameters_to_vector({a, b});
  CHECK(values(vec) == std::vector<double>{1, 2, 3, 4, 5, 6, 7});
  (vec * td::arange(7).to(td::kFloat64)).sum().backward();  // differentiable, element by element
  CHECK(values(a.grad()) == std::vector<double>{0, 1, 2, 3});
  CHECK(values(b.grad()) == std::vector<double>{4, 5, 6});
  utils::vector_to_parameters(td::arange(10, 17).to(td::kFloat64), {a, b});
  CHECK(values(a) == std::vector<double>{10, 11, 12, 13});
  CHECK(values(b) == std::vector<double>{14, 15, 16});
  CHECK(a.is_leaf());
  const td::testing::Snapshot before(a);
  check_error([&] { utils::vector_to_parameters(td::zeros({6}, td::kFloat64), {a, b}); },
              {"vector_to_parameters", "7 elements", "[6]"});
  check_error([] { utils::parameters_to_vector({}); }, {"parameters_to_vector", "no parameters"});
  before.check_unchanged(a);
}

TEST_CASE("get_total_norm and clip_grads_with_norm_ are clip_grad_norm_'s two halves", "[cpu]") {
  const std::vector<std::vector<double>> grads = {{3, -4, 1}, {2, 0.5}};
  std::vector<Tensor> params = with_grads(grads), again = with_grads(grads);
  std::vector<Tensor> just_grads;
  for (const Tensor& p : params) just_grads.push_back(p.grad());
  just_grads.push_back(Tensor());  // an undefined tensor is left out, as a parameter without a gradient
  const Tensor total = utils::get_total_norm(just_grads);
  CHECK(total.dim() == 0);
  CHECK(std::abs(total.item<double>() - std::sqrt(9 + 16 + 1 + 4 + 0.25)) < 1e-14);
  CHECK(utils::get_total_norm(just_grads, INFINITY).item<double>() == 4);
  CHECK(utils::get_total_norm(just_grads, 1).item<double>() == 10.5);
  utils::clip_grads_with_norm_(params, 2.0, total);
  const Tensor whole = utils::clip_grad_norm_(again, 2.0);
  CHECK(whole.item<double>() == total.item<double>());
  for (size_t i = 0; i < params.size(); ++i) check_close(params[i].grad(), values(again[i].grad()), 0, 0);
  // The factor caps at 1: a norm within max_norm leaves the gradients as they were.
  std::vector<Tensor> small = with_grads({{0.1, 0.2}});
  utils::clip_grads_with_norm_(small, 5.0, utils::get_total_norm({small[0].grad()}));
  check_close(small[0].grad(), {0.1, 0.2}, 0, 0);
  CHECK(utils::get_total_norm({}).item<double>() == 0);
  // A norm taken elsewhere (over more gradients, say): the factor is max_norm / (norm + 1e-6), a
  // float32 norm scaling float64 gradients.
  std::vector<Tensor> shared = with_grads({{3, -4, 1}});
  utils::clip_grads_with_norm_(shared, 1.0, td::full({}, 20.0, td::kFloat32));
  const double factor = 1.0 / static_cast<double>(20.0f + 1e-6f);
  check_close(shared[0].grad(), {3 * factor, -4 * factor, factor}, 1e-7, 0);
  CHECK(shared[0].grad().dtype() == td::kFloat64);
  const td::testing::Snapshot before(params[0].grad());
  check_error([&] { utils::get_total_norm({td::tensor(std::vector<double>{INFINITY})}, 2, true); },
              {"get_total_norm", "inf", "error_if_nonfinite"});
  check_error([&] { utils::get_total_norm(just_grads, std::nan("")); }, {"get_total_norm", "norm_type is NaN"});
  check_error([&] { utils::clip_grads_with_norm_(params, 1.0, td::ones({2}, td::kFloat64)); },
              {"clip_grads_with_norm_", "one element", "[2]"});
  check_error([&] { utils::clip_grads_with_norm_(params, std::nan(""), total); },
              {"clip_grads_with_norm_", "max_norm is NaN"});
  before.check_unchanged(params[0].grad());
}
