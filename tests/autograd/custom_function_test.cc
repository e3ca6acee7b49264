// Custom differentiable functions (autograd::Function, as LibTorch's): gradients, gradcheck and
// gradgradcheck through a user's backward, saved tensors (inputs and outputs, and in-place writes
// to them), saved_data, needs_input_grad, non-differentiable outputs, materialized gradients,
// inputs returned unchanged, and the errors a wrong backward gets.
#include <cmath>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Shape;
using td::Tensor;
using td::autograd::AutogradContext;
using td::autograd::Function;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

// x^3, its backward through the saved input: differentiable again.
struct Cube : Function<Cube> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& g) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * x * x * 3};
  }
};

// exp(x) * scale, its backward through the saved output and a number kept in saved_data.
struct ScaledExp : Function<ScaledExp> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x, double scale) {
    Tensor y = x.exp() * scale;
    ctx->save_for_backward({y});
    ctx->saved_data["scale"] = scale;
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& g) {
    const Tensor y = ctx->get_saved_variables()[0];
    CHECK(std::any_cast<double>(ctx->saved_data["scale"]) != 0);
    return {g[0] * y, Tensor()};
  }
};

// a * b + c with a non-tensor argument between them; records which tensor arguments need
// gradients (indexed among the tensors, as LibTorch's).
std::vector<bool> g_needs;
struct MulAdd : Function<MulAdd> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, int64_t, const Tensor& b, const Tensor& c) {
    g_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad(2)};
    ctx->save_for_backward({a, b});
    return a * b + c;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& g) {
    const auto saved = ctx->get_saved_variables();
    return {g[0] * saved[1], Tensor(), g[0] * saved[0], g[0]};
  }
};

// The sorted values and their indices: the indices are not differentiable.
bool g_materialize = true;
std::vector<bool> g_defined;
struct SortValues : Function<SortValues> {
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x) {
    auto [sorted, indices] = x.sort(0);
    ctx->mark_non_differentiable({indices});
    ctx->save_for_backward({indices});
    ctx->set_materialize_grads(g_materialize);
    return {sorted, indices, sorted * 2};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, const std::vector<Tensor>& g) {
    g_defined = {g[0].defined(), g[1].defined(), g[2].defined()};
    const Tensor indices = ctx->get_saved_variables()[0];
    Tensor total = g[0].defined() ? g[0] : td::zeros_like(indices, td::kFloat64);
    if (g[2].defined()) total = total + g[2] * 2;
    return {td::zeros_like(total).index_add(0, indices, total)};
  }
};

struct Identity : Function<Identity> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0]}; }
};

// Doubles x; the mask (x > 0) is a float output marked non-differentiable.
struct DoubleAndMask : Function<DoubleAndMask> {
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x) {
    Tensor mask = (x > 0).to(x.dtype());
    ctx->mark_non_differentiable({mask});
    return {x * 2, mask};
  }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0] * 2}; }
};
struct IdentityNotDifferentiable : Function<IdentityNotDifferentiable> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->mark_non_differentiable({x});
    return x;
  }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0]}; }
};
struct WritesInput : Function<WritesInput> {
  static Tensor forward(AutogradContext*, const Tensor& x) {
    Tensor(x).mul_(2);
    return x * 1;
  }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0]}; }
};
// A float32 gradient for a float64 input, two undefined extra entries, and a wrong-shaped
// gradient for an argument that needs none: all taken as LibTorch takes them.
struct Lenient : Function<Lenient> {
  static Tensor forward(AutogradContext*, const Tensor& x, const Tensor& y) { return x * y; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) {
    return {g[0].to(td::kFloat32), td::ones({7}), Tensor(), Tensor()};
  }
};
namespace inner {
struct Mark {};
}  // namespace inner
template <typename Tag>
struct Tagged : Function<Tagged<Tag>> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x * 1; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0]}; }
};

struct TooFew : Function<TooFew> {
  static Tensor forward(AutogradContext*, const Tensor& x, double) { return x * 2; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0]}; }
};
struct GradForNumber : Function<GradForNumber> {
  static Tensor forward(AutogradContext*, const Tensor& x, double) { return x * 2; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0], g[0]}; }
};
struct WrongShape : Function<WrongShape> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x.sum(); }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>&) {
    return {td::ones({5}, td::kFloat64)};
  }
};
// A gradient of the shape the input broadcasts to is summed down to the input's.
struct Broadcasting : Function<Broadcasting> {
  static Tensor forward(AutogradContext*, const Tensor& x) { return x.expand({2, 3}) + 0; }
  static std::vector<Tensor> backward(AutogradContext*, const std::vector<Tensor>& g) { return {g[0]}; }
};

}  // namespace

TEST_CASE("a custom Function's gradients pass gradcheck and gradgradcheck", "[cpu]") {
  Tensor x = td::randn({5}, td::kFloat64).requires_grad_(true);
  const Tensor y = Cube::apply(x);
  CHECK(y.grad_fn()->name() == "CubeBackward");
  check_close(y, values(x.detach().pow(3)), 1e-15, 0);
  y.sum().backward();
  check_close(x.grad(), values(x.detach().pow(2) * 3), 1e-14, 0);
  auto cube = [](const std::vector<Tensor>& in) { return Cube::apply(in[0]); };
  CHECK(td::autograd::gradcheck(cube, {x}).ok);
  CHECK(td::autograd::gradgradcheck(cube, {x}).ok);
  // A saved output comes back attached to the node: exp's second derivative is exp again.
  auto scaled = [](const std::vector<Tensor>& in) { return ScaledExp::apply(in[0], 1.5); };
  CHECK(td::autograd::gradcheck(scaled, {x}).ok);
  CHECK(td::autograd::gradgradcheck(scaled, {x}).ok);
  const Tensor g = td::autograd::grad({ScaledExp::apply(x, 2.0).sum()}, {x}, {}, std::nullopt, true)[0];
  check_close(td::autograd::grad({g.sum()}, {x})[0], values(x.detach().exp() * 2), 1e-14, 0);
}

TEST_CASE("needs_input_grad counts every argument; gradients reach each tensor argument", "[cpu]") {
  Tensor a = td::randn({3}, td::kFloat64).requires_grad_(true), c = td::randn({3}, td::kFloat64).requires_grad_(true);
  const Tensor b = td::randn({3}, td::kFloat64);
  MulAdd::apply(a, int64_t{7}, b, c).sum().backward();
  CHECK(g_needs == std::vector<bool>{true, false, true});
  check_close(a.grad(), values(b), 0, 0);
  check_close(c.grad(), {1, 1, 1}, 0, 0);
  {
    td::NoGradGuard no_grad;
    const Tensor off = MulAdd::apply(a, int64_t{7}, b, c);
    CHECK(!off.requires_grad());
    CHECK(g_needs == std::vector<bool>{false, false, false});
  }
  const Tensor plain = MulAdd::apply(b, int64_t{1}, b, b);  // nothing requires grad: nothing recorded
  CHECK(!plain.requires_grad());
  CHECK(plain.grad_fn() == nullptr);
}

TEST_CASE("non-differentiable outputs get no gradient function; missing gradients arrive as zeros", "[cpu]") {
  Tensor x = td::tensor(std::vector<double>{3, 1, 2}).requires_grad_(true);
  for (bool materialize : {true, false}) {
    INFO("materialize " << materialize);
    g_materialize = materialize;
    x.mutable_grad() = Tensor();
    const std::vector<Tensor> out = SortValues::apply(x);
    CHECK(out[0].requires_grad());
    CHECK(!out[1].requires_grad());
    CHECK(out[1].grad_fn() == nullptr);
    out[0].sum().backward();  // the third output gets no gradient
    CHECK(g_defined == std::vector<bool>{true, materialize, materialize});
    check_close(x.grad(), {1, 1, 1}, 0, 0);
  }
  g_materialize = true;
  // A float output marked non-differentiable, and an input returned so marked: no gradient.
  const std::vector<Tensor> doubled = DoubleAndMask::apply(x);
  CHECK(doubled[0].requires_grad());
  CHECK(!doubled[1].requires_grad());
  CHECK(doubled[1].grad_fn() == nullptr);
  const Tensor same = IdentityNotDifferentiable::apply(x);
  CHECK(!same.requires_grad());
}

TEST_CASE("a saved tensor written in place after forward stops backward; an input returned is not changed", "[cpu]") {
  Tensor x = td::randn({4}, td::kFloat64).requires_grad_(true);
  Tensor h = x * 1;
  const Tensor y = Cube::apply(h);
  h.mul_(2);
  check_error([&] { y.sum().backward(); }, {"CubeBackward", "modified by an in-place operation"});
  // Identity returns its input: the output is a new tensor with the function's node; the input
  // stays a leaf, and an in-place write through the output (which would change the leaf) is refused.
  Tensor same = Identity::apply(x);
  CHECK(!same.is_same(x));
  CHECK(x.is_leaf());
  CHECK(same.grad_fn()->name() == "IdentityBackward");
  const std::vector<double> before = values(x);
  CHECK_THROWS_AS(same.mul_(2), td::Error);
  CHECK(values(x) == before);
  same.sum().backward();
  check_close(x.grad(), {1, 1, 1, 1}, 0, 0);
  // forward may not write an input that requires grad in place.
  Tensor leaf = td::randn({3}, td::kFloat64).requires_grad_(true);
  Tensor nonleaf = leaf * 1;
  check_error([&] { WritesInput::apply(nonleaf); }, {"WritesInputBackward", "argument 0", "in place", "mark_dirty"});
}

TEST_CASE("a wrong backward gets an error naming the function; broadcast gradients are summed", "[cpu]") {
  Tensor x = td::randn({3}, td::kFloat64).requires_grad_(true);
  check_error([&] { TooFew::apply(x, 1.0).sum().backward(); },
              {"TooFewBackward", "returned 1 gradients", "2 arguments"});
  check_error([&] { GradForNumber::apply(x, 1.0).sum().backward(); },
              {"GradForNumberBackward", "argument 1", "not a tensor"});
  check_error([&] { WrongShape::apply(x).backward(); }, {"WrongShapeBackward", "[5]", "argument 0", "[3]"});
  x.mutable_grad() = Tensor();
  Broadcasting::apply(x).sum().backward();
  check_close(x.grad(), {2, 2, 2}, 0, 0);
  // Converted to the input's dtype; extra undefined entries and a gradient nobody needs ignored.
  x.mutable_grad() = Tensor();
  Lenient::apply(x, td::full({3}, 2.0, td::kFloat64)).sum().backward();
  CHECK(x.grad().dtype() == td::kFloat64);
  check_close(x.grad(), {1, 1, 1}, 0, 0);  // what Lenient's backward returns, converted
  // The node's name keeps template arguments whole.
  const std::string name = Tagged<inner::Mark>::apply(x).grad_fn()->name();
  CHECK(name.rfind("Tagged<", 0) == 0);
  CHECK(name.find("Mark>Backward") != std::string::npos);
}
