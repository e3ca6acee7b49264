// gradcheck (float64, central differences) for every differentiable op of the shared table
// (tests/autograd/gradcheck_cases.h), on random inputs with broadcasting and non-contiguous
// layouts, and gradgradcheck for each of them too.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/autograd/gradcheck_cases.h"
#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::autograd::gradcheck;
using td::autograd::gradgradcheck;

TEST_CASE("every differentiable op passes gradcheck in float64", "[cpu]") {
  td::testing::reseed(100);
  for (const auto& c : td::testing::gradcheck_cases()) {
    for (auto layout : {td::testing::Layout::Contiguous, td::testing::Layout::Strided}) {
      auto inputs = td::testing::gradcheck_inputs(c.inputs, layout);
      auto result = gradcheck(c.fn, inputs);
      INFO(c.name << " (" << td::testing::layout_name(layout) << "): " << result.report);
      CHECK(result.ok);
    }
  }
}

TEST_CASE("ops with second derivatives pass gradgradcheck", "[cpu]") {
  td::testing::reseed(101);
  for (const auto& c : td::testing::gradcheck_cases()) {
    auto inputs = td::testing::gradcheck_inputs(c.inputs, td::testing::Layout::Permuted);
    auto result = gradgradcheck(c.fn, inputs);
    INFO(c.name << ": " << result.report);
    CHECK(result.ok);
  }
}

TEST_CASE("gradcheck reports the worst element when a gradient is wrong", "[cpu]") {
  // A function whose recorded backward is deliberately wrong: x * 2 with the grad of x * 3.
  td::testing::reseed(102);
  Tensor x = td::randn({3}, td::kFloat64).requires_grad_(true);
  auto wrong = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 2;
    if (y.requires_grad()) y.register_hook([](const Tensor& g) { return g * 1.5; });
    return y;
  };
  auto result = gradcheck(wrong, {x});
  CHECK(!result.ok);
  CHECK_THAT(result.report, Catch::Matchers::Contains("input 0 element"));
  CHECK_THAT(result.report, Catch::Matchers::Contains("analytical 3"));
  CHECK_THAT(result.report, Catch::Matchers::Contains("numerical 2"));
  td::testing::check_error([&] { gradcheck(wrong, {x.detach().to(td::kFloat32).requires_grad_(true)}); },
                           {"gradcheck", "float64"});
}

TEST_CASE("gradients where finite differences cannot look: ties share evenly, max(dim) picks its index, a zero norm",
          "[cpu]") {
  // PyTorch 2.15's gradients at each of these points.
  auto grad_of = [](const Tensor& leaf, const std::function<Tensor(const Tensor&)>& f) {
    Tensor x = leaf.detach().clone().requires_grad_(true);
    f(x).sum().backward();
    return td::testing::values(x.grad());
  };
  CHECK(grad_of(td::tensor({1.0, 3.0, 3.0}), [](const Tensor& x) { return x.max(); }) ==
        std::vector<double>{0, 0.5, 0.5});
  CHECK(grad_of(td::tensor({{3.0, 3.0}, {1.0, 2.0}}), [](const Tensor& x) { return x.amax({1}); }) ==
        std::vector<double>{0.5, 0.5, 0, 1});
  CHECK(grad_of(td::tensor({{3.0, 3.0}, {1.0, 2.0}}), [](const Tensor& x) { return x.amin({0}); }) ==
        std::vector<double>{0, 0, 1, 1});
  const Tensor tied = td::tensor({{1.0, 5.0}, {1.0, 0.0}, {0.0, 5.0}});
  CHECK(td::testing::values(std::get<1>(tied.max(0))) == std::vector<double>{0, 0});
  CHECK(grad_of(tied, [](const Tensor& x) { return std::get<0>(x.max(0)); }) == std::vector<double>{1, 1, 0, 0, 0, 0});
  CHECK(grad_of(td::zeros({3}), [](const Tensor& x) { return x.norm(); }) == std::vector<double>{0, 0, 0});
  CHECK(grad_of(td::zeros({3}), [](const Tensor& x) { return x.norm(1); }) == std::vector<double>{0, 0, 0});
  CHECK(grad_of(td::tensor({2.0, -2.0, 1.0}), [](const Tensor& x) { return x.norm(INFINITY); }) ==
        std::vector<double>{0.5, -0.5, 0});
  // A zero element of a p-norm: a zero gradient, also below p = 2 where |x|^(p-2) is infinite.
  const Tensor with_zero = td::tensor(std::vector<double>{0.0, 1.5, -2.0, 0.5});
  const std::vector<std::pair<double, std::vector<double>>> p_norms = {
      {0.5, {0.0, 2.7320508075688776, -2.3660254037844384, 4.732050807568877}},
      {1.5, {0.0, 0.715325558807779, -0.8259868078717816, 0.4129934039358908}},
      {3, {0.0, 0.4416219230355002, -0.7851056409520003, 0.04906910255950002}},
  };
  for (const auto& [p, expected] : p_norms) {
    INFO("p " << p);
    td::testing::check_close(td::tensor(grad_of(with_zero, [p](const Tensor& x) { return x.norm(p); })), expected,
                             1e-14, 0);
  }
  // 0^x for x > 0 is 0 and so is its derivative (its second is NaN in PyTorch too: 0 * log(0)).
  CHECK(grad_of(td::tensor({0.7, 1.3}, td::kFloat64), [](const Tensor& x) { return td::pow(0.0, x); }) ==
        std::vector<double>{0, 0});
}

TEST_CASE("cumprod and prod at exact zeros: first and second derivatives are PyTorch's", "[cpu]") {
  // PyTorch 2.15, float64: the gradient of cumprod(x, 1) against g, then the gradient of the sum
  // of that gradient; and prod's (of all elements, and along dim 1) the same way.
  const Tensor x0 = td::tensor({{2.0, 0.0, 3.0, -1.5}, {0.0, 4.0, 0.0, 0.5}});
  const Tensor g = td::tensor({{1.0, -2.0, 0.5, 3.0}, {2.0, 1.0, -1.0, 0.25}});
  auto first_and_second = [](const Tensor& leaf, const std::function<Tensor(const Tensor&)>& f, const Tensor& seed) {
    Tensor x = leaf.clone().requires_grad_(true);
    Tensor gx = td::autograd::grad({f(x)}, {x}, {seed}, true, true)[0];
    Tensor ggx = td::autograd::grad({gx.sum()}, {x})[0];
    return std::pair{td::testing::values(gx), td::testing::values(ggx)};
  };
  auto [gc, ggc] = first_and_second(x0, [](const Tensor& x) { return x.cumprod(1); }, g);
  CHECK(gc == std::vector<double>{1, -28, 0, 0, 6, 0, 0, 0});
  CHECK(ggc == std::vector<double>{-14, -4, -8, 18, -2.5, 1, -3.5, 0});
  // Without create_graph the gradient takes a form of whole-tensor ops: the same values.
  Tensor leaf = x0.clone().requires_grad_(true);
  leaf.cumprod(1).backward(g);
  CHECK(td::testing::values(leaf.grad()) == std::vector<double>{1, -28, 0, 0, 6, 0, 0, 0});

  const Tensor p0 = td::tensor({{2.0, 0.0, 3.0}, {0.0, 4.0, 0.0}});
  auto [gp, ggp] = first_and_second(p0, [](const Tensor& x) { return x.prod(1); }, td::ones({2}));
  CHECK(gp == std::vector<double>{0, 6, 0, 0, 0, 0});
  CHECK(ggp == std::vector<double>{3, 5, 2, 4, 0, 4});
  // One zero in the whole tensor: each other element's gradient holds it, and its own
  // derivative along the zero is the product of the rest.
  const Tensor q0 = td::tensor({{2.0, 0.0, 3.0}, {-1.0, 4.0, 0.5}});
  auto [gq, ggq] = first_and_second(q0, [](const Tensor& x) { return x.prod(); }, td::ones({}));
  CHECK(gq == std::vector<double>{0, -12, 0, 0, 0, 0});
  CHECK(ggq == std::vector<double>{-6, -25, -4, 12, -3, -24});
}

TEST_CASE("prod's gradient is taken in the product's dtype, and a form not taken leaves no NaN behind", "[cpu]") {
  // PyTorch 2.15: float16 [300, 300, 0.001, 0] multiplied in float32; its products of the others
  // pass 65504 on the way (300 * 300 * 0.001 is 90.06, but 300 * 300 is not a float16).
  Tensor h = td::tensor({300.0, 300.0, 0.001, 0.0}).to(td::kFloat16).requires_grad_(true);
  h.prod(td::kFloat32).backward();
  CHECK(h.grad().dtype() == td::kFloat16);
  CHECK(td::testing::values(h.grad()) == std::vector<double>{0, 0, 0, 90.0625});
  // No zero: the division is the gradient. The products before each element (1e40 after two)
  // overflow float32 but are not made, so the second derivative along x[0] and x[1] stays finite.
  Tensor x = td::tensor({1e20, 1e20, 1e-20, 1e-20}).requires_grad_(true);
  Tensor g = td::autograd::grad({x.prod()}, {x}, {}, true, true)[0];
  const std::vector<double> gg = td::testing::values(td::autograd::grad({g.sum()}, {x})[0]);
  CHECK(gg[0] == Approx(2).epsilon(1e-5));
  CHECK(gg[1] == Approx(2).epsilon(1e-5));
}

TEST_CASE("cumprod's first-order gradient with zeros equals its differentiable form, lines of many zeros", "[cpu]") {
  td::testing::reseed(45);
  for (int64_t dim : {0, 1}) {
    INFO("dim " << dim);
    Tensor x = td::testing::random_tensor({7, 40}, td::kFloat64, td::testing::Layout::Strided, -1.5, 1.5);
    x = td::where(x.abs() < 0.4, 0.0, x).detach();  // about a quarter zeros: none, one or several a line
    const Tensor g = td::testing::random_tensor({7, 40}, td::kFloat64);
    Tensor plain = x.clone().requires_grad_(true), graph = x.clone().requires_grad_(true);
    plain.cumprod(dim).backward(g);
    const Tensor differentiable = td::autograd::grad({graph.cumprod(dim)}, {graph}, {g}, true, true)[0];
    td::testing::check_close(plain.grad(), td::testing::values(differentiable), 1e-12, 1e-12);
  }
}

TEST_CASE("cumprod with a dtype and grad keeps the dtype; the gradient comes back in the input's", "[cpu]") {
  Tensor x = td::tensor({1.5, -2.0, 0.5}).requires_grad_(true);
  Tensor y = x.cumprod(0, td::kFloat64);
  CHECK(y.dtype() == td::kFloat64);
  CHECK(td::testing::values(y) == std::vector<double>{1.5, -3, -1.5});
  y.sum().backward();
  CHECK(x.grad().dtype() == td::kFloat32);
  // d/dx0 = 1 + x1 + x1 x2, d/dx1 = x0 + x0 x2, d/dx2 = x0 x1.
  CHECK(td::testing::values(x.grad()) == std::vector<double>{-2, 2.25, -3});
}
