// torch.autograd.functional's API: vjp, jvp, jacobian (both strategies), hessian, vhp and hvp
// against closed forms on random inputs; their shapes for several inputs and outputs and for
// 0-dim tensors; create_graph (the results differentiate again, into the caller's leaves);
// strict mode; the inputs left as they were; errors that name the function.
#include <string>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
namespace AF = td::autograd::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;
using Strategy = AF::JacobianStrategy;

namespace {

constexpr double kTol = 1e-12;

// The Jacobian of softmax (and the Hessian of logsumexp): diag(s) - s s^T.
Tensor softmax_jacobian(const Tensor& x) {
  const Tensor s = x.softmax(0);
  return td::diag(s) - s.unsqueeze(1) * s.unsqueeze(0);
}

}  // namespace

TEST_CASE("jacobian, vjp and jvp of a function of one tensor match its closed form", "[cpu]") {
  const Tensor a = td::randn({3, 4}, td::kFloat64), x = td::randn({4}, td::kFloat64);
  // f(x) = A x + sin(x[:3]): J = A + [diag(cos(x[:3])) | 0].
  auto f = [&](const Tensor& t) { return a.matmul(t) + t.narrow(0, 0, 3).sin(); };
  const Tensor want = a + td::cat({td::diag(x.narrow(0, 0, 3).cos()), td::zeros({3, 1}, td::kFloat64)}, 1);
  for (Strategy strategy : {Strategy::reverse_mode, Strategy::forward_mode}) {
    const Tensor j = AF::jacobian(f, x, false, false, strategy);
    CHECK(j.sizes() == Shape{3, 4});
    CHECK(!j.requires_grad());
    check_close(j, want, kTol, kTol);
  }
  const Tensor v = td::randn({3}, td::kFloat64), u = td::randn({4}, td::kFloat64);
  const auto [out, product] = AF::vjp(f, x, v);
  check_close(out, f(x), kTol, kTol);
  check_close(product, v.matmul(want), kTol, kTol);
  const auto [out2, forward] = AF::jvp(f, x, u);
  check_close(out2, f(x), kTol, kTol);
  check_close(forward, want.matmul(u), kTol, kTol);
  check_close(AF::jacobian([](const Tensor& t) { return t.softmax(0); }, x), softmax_jacobian(x), kTol, kTol);
}

TEST_CASE("jacobian's shape is the output's then the input's; 0-dim tensors have none", "[cpu]") {
  const Tensor x = td::randn({3, 2}, td::kFloat64);
  for (Strategy strategy : {Strategy::reverse_mode, Strategy::forward_mode}) {
    // y = 2 x^T: dy[a, b] / dx[c, d] = 2 where c == b and d == a.
    const Tensor j = AF::jacobian([](const Tensor& t) { return t.t() * 2; }, x, false, false, strategy);
    REQUIRE(j.sizes() == Shape{2, 3, 3, 2});
    std::vector<double> want;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        for (int c = 0; c < 3; ++c)
          for (int d = 0; d < 2; ++d) want.push_back(c == b && d == a ? 2 : 0);
    check_close(j, want, 0, 0);
    const Tensor s = td::full({}, 1.5, td::kFloat64);
    const Tensor js = AF::jacobian([](const Tensor& t) { return t * t; }, s, false, false, strategy);
    CHECK(js.dim() == 0);
    CHECK(js.item<double>() == 3.0);
    const Tensor sum = AF::jacobian([](const Tensor& t) { return t.sum(); }, x, false, false, strategy);
    CHECK(sum.sizes() == Shape{3, 2});
    check_close(sum, td::ones({3, 2}, td::kFloat64), 0, 0);
  }
}

TEST_CASE("several inputs and outputs: result[i][j] is d output i / d input j; unused pairs are zeros",
          "[cpu]") {
  const Tensor x = td::randn({3}, td::kFloat64), y = td::randn({3}, td::kFloat64);
  auto f = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * in[1], in[0].sum(), in[1].exp()};
  };
  for (Strategy strategy : {Strategy::reverse_mode, Strategy::forward_mode}) {
    INFO((strategy == Strategy::reverse_mode ? "reverse" : "forward"));
    const auto j = AF::jacobian(f, {x, y}, false, false, strategy);
    REQUIRE(j.size() == 3);
    REQUIRE(j[0].size() == 2);
    check_close(j[0][0], td::diag(y), kTol, kTol);
    check_close(j[0][1], td::diag(x), kTol, kTol);
    CHECK(j[1][0].sizes() == Shape{3});
    check_close(j[1][0], td::ones({3}, td::kFloat64), 0, 0);
    check_close(j[1][1], td::zeros({3}, td::kFloat64), 0, 0);
    check_close(j[2][0], td::zeros({3, 3}, td::kFloat64), 0, 0);
    check_close(j[2][1], td::diag(y.exp()), kTol, kTol);
    // Reverse mode meets (1, 1) first, row by row; forward mode (2, 0), column by column.
    const bool reverse = strategy == Strategy::reverse_mode;
    check_error([&] { AF::jacobian(f, {x, y}, false, true, strategy); },
                {"jacobian", reverse ? "output 1" : "output 2", reverse ? "independent of input 1" : "input 0",
                 "strict"});
  }
  const Tensor w0 = td::randn({3}, td::kFloat64), w1 = td::full({}, 0.7, td::kFloat64),
               w2 = td::randn({3}, td::kFloat64);
  const auto [outs, products] = AF::vjp(f, {x, y}, {w0, w1, w2});
  REQUIRE(outs.size() == 3);
  check_close(products[0], w0 * y + 0.7, kTol, kTol);
  check_close(products[1], w0 * x + w2 * y.exp(), kTol, kTol);
  const Tensor u0 = td::randn({3}, td::kFloat64), u1 = td::randn({3}, td::kFloat64);
  const auto [outs2, forward] = AF::jvp(f, {x, y}, {u0, u1});
  REQUIRE(forward.size() == 3);
  check_close(forward[0], u0 * y + x * u1, kTol, kTol);
  check_close(forward[1], u0.sum(), kTol, kTol);
  check_close(forward[2], y.exp() * u1, kTol, kTol);
}

TEST_CASE("hessian, vhp and hvp match closed forms", "[cpu]") {
  const Tensor x = td::randn({5}, td::kFloat64), y = td::randn({5}, td::kFloat64);
  for (Strategy strategy : {Strategy::reverse_mode, Strategy::forward_mode}) {
    check_close(AF::hessian([](const Tensor& t) { return t.logsumexp(0); }, x, false, false, strategy),
                softmax_jacobian(x), kTol, kTol);
    // f = sum(x y) + sum(x^3): H = [[diag(6x), I], [I, 0]].
    auto f = [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{(in[0] * in[1]).sum() + in[0].pow(3).sum()};
    };
    const auto h = AF::hessian(f, {x, y}, false, false, strategy);
    check_close(h[0][0], td::diag(x * 6), kTol, kTol);
    check_close(h[0][1], td::eye(5, -1, td::kFloat64), kTol, kTol);
    check_close(h[1][0], td::eye(5, -1, td::kFloat64), kTol, kTol);
    check_close(h[1][1], td::zeros({5, 5}, td::kFloat64), 0, 0);
    check_error([&] { AF::hessian(f, {x, y}, false, true, strategy); },
                {"hessian", "independent of input 1", "strict"});
  }
  const Tensor v = td::randn({5}, td::kFloat64);
  auto g = [](const Tensor& t) { return t.logsumexp(0) + t.pow(4).sum() / 12; };
  const Tensor h = softmax_jacobian(x) + td::diag(x * x);
  const auto [out, left] = AF::vhp(g, x, v);
  check_close(out, g(x), kTol, kTol);
  check_close(left, v.matmul(h), kTol, kTol);
  const auto [out2, right] = AF::hvp(g, x, v);
  check_close(out2, g(x), kTol, kTol);
  check_close(right, h.matmul(v), kTol, kTol);
  // A linear function has no second derivatives: zeros, or an error in strict mode.
  auto linear = [](const Tensor& t) { return t.sum() * 3; };
  check_close(AF::hvp(linear, x, v).second, td::zeros({5}, td::kFloat64), 0, 0);
  check_close(AF::vhp(linear, x, v).second, td::zeros({5}, td::kFloat64), 0, 0);
  check_close(AF::hessian(linear, x), td::zeros({5, 5}, td::kFloat64), 0, 0);
  check_error([&] { AF::hvp(linear, x, v, false, true); }, {"hvp", "input 0", "strict"});
  check_error([&] { AF::hessian(linear, x, false, true); },
              {"hessian", "gradient with respect to input 0", "independent", "strict"});
}

TEST_CASE("strict mode refuses outputs that need no input, and constant results under create_graph", "[cpu]") {
  const Tensor x = td::randn({3}, td::kFloat64), v = td::randn({3}, td::kFloat64);
  auto with_constant = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * 2, td::ones({2}, td::kFloat64)};
  };
  const std::vector<Tensor> weights = {v, td::ones({2}, td::kFloat64)};
  check_error([&] { AF::vjp(with_constant, {x}, weights, false, true); },
              {"vjp", "output 1", "does not require grad", "strict"});
  check_error([&] { AF::jvp(with_constant, {x}, {v}, false, true); }, {"jvp", "output 1", "strict"});
  check_error([&] { AF::jacobian(with_constant, {x}, false, true); }, {"jacobian", "output 1", "strict"});
  check_close(AF::vjp(with_constant, {x}, weights).second[0], values(v * 2), 0, 0);  // not strict: fine
  // A linear function's derivatives are constants: with create_graph and strict, an error.
  auto linear = [](const Tensor& t) { return t * 2; };
  check_error([&] { AF::vjp(linear, x, v, true, true); }, {"vjp", "input 0", "constant", "strict"});
  check_error([&] { AF::jvp(linear, x, v, true, true); }, {"jvp", "output 0", "constant", "strict"});
  for (Strategy strategy : {Strategy::reverse_mode, Strategy::forward_mode}) {
    check_error([&] { AF::jacobian(linear, x, true, true, strategy); }, {"jacobian", "constant", "strict"});
  }
  auto quadratic = [](const Tensor& t) { return (t * t).sum(); };
  check_error([&] { AF::vhp(quadratic, x, v, true, true); }, {"vhp", "input 0", "constant", "strict"});
  check_error([&] { AF::hvp(quadratic, x, v, true, true); }, {"hvp", "input 0", "constant", "strict"});
  check_close(AF::hvp(quadratic, x, v, false, true).second, values(v * 2), 1e-15, 0);  // fine without create_graph
  check_close(AF::jacobian(linear, x, true), values(td::eye(3, -1, td::kFloat64) * 2), 0, 0);
}

TEST_CASE("with create_graph the results differentiate again, into the caller's leaves", "[cpu]") {
  Tensor x = td::randn({4}, td::kFloat64).requires_grad_(true);
  // J of x^3 is diag(3 x^2): d sum(J) / dx = 6x.
  const Tensor j = AF::jacobian([](const Tensor& t) { return t.pow(3); }, x, true);
  CHECK(j.requires_grad());
  j.sum().backward();
  check_close(x.grad(), values(x.detach() * 6), kTol, kTol);
  x.mutable_grad() = Tensor();
  // H of sum(x^4) is diag(12 x^2): d sum(H) / dx = 24x.
  const Tensor h = AF::hessian([](const Tensor& t) { return t.pow(4).sum(); }, x, true);
  h.sum().backward();
  check_close(x.grad(), values(x.detach() * 24), kTol, kTol);
  x.mutable_grad() = Tensor();
  // jvp of sin along v: cos(x) v, whose derivative in x along the sum is -sin(x) v.
  const Tensor v = td::randn({4}, td::kFloat64);
  const auto [out, forward] = AF::jvp([](const Tensor& t) { return t.sin(); }, x, v, true);
  CHECK(out.requires_grad());
  forward.sum().backward();
  check_close(x.grad(), values(-x.detach().sin() * v), kTol, kTol);
  x.mutable_grad() = Tensor();
  const auto [out2, product] = AF::hvp([](const Tensor& t) { return t.pow(3).sum(); }, x, v, true);
  product.sum().backward();  // H v = 6 x v
  check_close(x.grad(), values(v * 6), kTol, kTol);
}

TEST_CASE("without create_graph the inputs are left as they were and the results are detached", "[cpu]") {
  Tensor x = td::randn({4}, td::kFloat64).requires_grad_(true);
  const Tensor plain = td::randn({4}, td::kFloat64);
  const Snapshot before(x), before_plain(plain);
  auto f = [](const Tensor& t) { return t.exp(); };
  const Tensor j = AF::jacobian(f, x);
  const auto [out, product] = AF::vjp(f, x, td::ones({4}, td::kFloat64));
  const auto [out2, forward] = AF::jvp(f, plain, td::ones({4}, td::kFloat64));
  const Tensor h = AF::hessian([](const Tensor& t) { return t.exp().sum(); }, plain);
  for (const Tensor& t : {j, out, product, out2, forward, h}) CHECK(!t.requires_grad());
  CHECK(!x.grad().defined());
  CHECK(x.is_leaf());
  CHECK(!plain.requires_grad());
  before.check_unchanged(x);
  before_plain.check_unchanged(plain);
  // Inside the function grad mode is on, whatever the caller's.
  td::NoGradGuard no_grad;
  check_close(AF::jacobian(f, plain), td::diag(plain.exp()), kTol, kTol);
}

TEST_CASE("the functional API's errors name the function and the shapes; inputs unchanged", "[cpu]") {
  const Tensor x = td::randn({3}, td::kFloat64);
  const Snapshot before(x);
  auto f = [](const Tensor& t) { return t * 2; };
  check_error([&] { AF::vjp(f, x); }, {"vjp", "v may be left out", "one element", "output 0", "[3]"});
  check_error([&] { AF::vjp(f, x, td::ones({2}, td::kFloat64)); }, {"vjp", "v[0]", "[2]", "output 0", "[3]"});
  check_error([&] { AF::jvp(f, x); }, {"jvp", "v may be left out", "input 0", "[3]"});
  check_error([&] { AF::jvp(f, x, td::ones({3, 1}, td::kFloat64)); }, {"jvp", "v[0]", "[3, 1]", "input 0"});
  check_error([&] { AF::hessian(f, x); }, {"hessian", "one tensor of one element", "[3]"});
  check_error([&] { AF::hvp(f, x, x); }, {"hvp", "one tensor of one element", "[3]"});
  check_error([&] { AF::vhp([](const Tensor& t) { return t.sum(); }, x, td::ones({2}, td::kFloat64)); },
              {"vhp", "v[0]", "[2]", "input 0", "[3]"});
  check_error([&] { AF::jacobian(f, td::ones({3}, td::kInt64)); }, {"jacobian", "input 0", "floating", "int64"});
  check_error([&] { AF::jacobian([](const Tensor&) { return Tensor(); }, x); },
              {"jacobian", "output 0", "undefined"});
  check_error([&] { AF::jacobian(AF::Function([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; }), {x}); },
              {"jacobian", "no outputs"});
  auto constant = [](const Tensor&) { return td::ones({2}, td::kFloat64); };
  check_error([&] { AF::vjp(constant, x, td::ones({2}, td::kFloat64), false, true); },
              {"vjp", "output 0", "does not require grad", "strict"});
  check_error([&] { AF::jvp(constant, x, x, false, true); }, {"jvp", "output 0", "does not require grad", "strict"});
  auto first_only = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2}; };
  check_error([&] { AF::vjp(first_only, {x, x}, {x}, false, true); }, {"vjp", "independent of input 1", "strict"});
  check_error([&] { AF::jvp(first_only, {x, x}, {x, x}, false, true); }, {"jvp", "independent of input 1", "strict"});
  check_close(AF::vjp(constant, x, td::ones({2}, td::kFloat64)).second, td::zeros({3}, td::kFloat64), 0, 0);
  check_close(AF::jvp(constant, x, x).second, td::zeros({2}, td::kFloat64), 0, 0);
  before.check_unchanged(x);
}
