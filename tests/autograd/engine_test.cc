// The autograd engine and Tensor's autograd API: accumulation, retain_graph, implicit
// gradients, grad mode, detach, hooks, retain_grad, autograd::grad, higher-order gradients,
// and the errors PyTorch gives for in-place writes that would corrupt a gradient.
#include <atomic>
#include <cmath>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "autograd/record.h"
#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

TEST_CASE("backward accumulates d loss / d leaf into every leaf's grad", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0, 3.0}).requires_grad_(true);
  Tensor w = td::tensor({0.5, -1.0, 2.0}).requires_grad_(true);
  Tensor loss = (x * w).sum() + (x * x).sum();
  loss.backward();
  CHECK(values(x.grad()) == std::vector<double>{2.5, 3, 8});  // w + 2x
  CHECK(values(w.grad()) == std::vector<double>{1, 2, 3});
  CHECK(x.is_leaf());
  CHECK(!loss.is_leaf());
  CHECK(loss.grad_fn()->name() == "AddBackward0");
  Tensor again = (x * 2).sum();
  again.backward();
  CHECK(values(x.grad()) == std::vector<double>{4.5, 5, 10});  // accumulated
}

TEST_CASE("a diamond-shaped graph adds the gradients of both paths", "[cpu]") {
  Tensor x = td::tensor({3.0}).requires_grad_(true);
  Tensor a = x * x;       // 2x
  Tensor b = a * 3 + a;   // 4a -> 8x
  Tensor c = b * a;       // 4a^2 -> 16x^3 -> d/dx 48x^2
  c.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{48 * 9});
}

TEST_CASE("a second backward needs retain_graph on the first", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}).requires_grad_(true);
  Tensor y = (x.exp() * x).sum();
  y.backward(Tensor(), true);
  y.backward();
  std::vector<double> g = values(x.grad());
  CHECK(g[0] == Approx(2 * (std::exp(1.0) * 2)));
  check_error([&] { y.backward(); }, {"backward through the graph a second time", "retain_graph"});
}

TEST_CASE("a graph of ops that keep no tensors may be run through again, as in PyTorch", "[cpu]") {
  // PyTorch: y = (a + b).sum(); y.backward(); y.backward() gives a.grad [2, 2]; views, clones,
  // cat, negation and means keep nothing either. A product keeps its operands (x * 3 too).
  Tensor a = td::ones({2}).requires_grad_(true), b = td::ones({2}).requires_grad_(true);
  Tensor y = (a + b).sum();
  y.backward();
  y.backward();
  CHECK(values(a.grad()) == std::vector<double>{2, 2});
  Tensor x = td::ones({4}).requires_grad_(true);
  Tensor z = td::cat({-(x.view({2, 2}).t().clone()), x.narrow(0, 1, 2).unsqueeze(0)}).mean();
  z.backward();
  z.backward();
  const std::vector<double> twice = values(x.grad());  // PyTorch: [-1/3, 0, 0, -1/3]
  CHECK(twice[0] == Approx(-1.0 / 3));
  CHECK(twice[1] == Approx(0).margin(1e-7));
  CHECK(twice[2] == Approx(0).margin(1e-7));
  CHECK(twice[3] == Approx(-1.0 / 3));
  Tensor w = (a * b).sum();
  w.backward();
  check_error([&] { w.backward(); }, {"MulBackward0", "backward through the graph a second time"});
}

TEST_CASE("a non-scalar output needs its gradient, of its shape", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}).requires_grad_(true);
  Tensor y = x * 3;
  check_error([&] { y.backward(); }, {"implicitly", "one element", "[2]"});
  check_error([&] { y.backward(td::ones({3})); }, {"gradient", "[3]", "[2]"});
  y.backward(td::tensor({1.0, 10.0}));
  CHECK(values(x.grad()) == std::vector<double>{3, 30});
  check_error([] { td::ones({2}).sum().backward(); }, {"does not require grad"});

  // A gradient of another dtype is converted to the output's, as in PyTorch: .grad() keeps its
  // tensor's dtype. One on another device is an error, and nothing is accumulated.
  Tensor f = td::tensor({1.0f, 2.0f}).requires_grad_(true);
  Tensor z = f.exp();
  z.backward(td::tensor({1.0, 0.5}), true);
  CHECK(f.grad().dtype() == td::kFloat32);
  check_close(f.grad(), {std::exp(1.0), 0.5 * std::exp(2.0)}, 1e-6, 0);
  check_error([&] { z.backward(td::ones({2}).to(td::Device("cpu:1"))); },
              {"backward: the gradient of output 0 is on cpu:1 but the output is on cpu:0"});
  check_close(f.grad(), {std::exp(1.0), 0.5 * std::exp(2.0)}, 1e-6, 0);
}

TEST_CASE("no-grad mode records nothing; detach cuts history but shares data", "[cpu]") {
  Tensor x = td::ones({2}).requires_grad_(true);
  {
    td::NoGradGuard no_grad;
    Tensor y = x * 2;
    CHECK(!y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
    x.mul_(3);  // in-place on a leaf is fine without recording
  }
  CHECK(values(x) == std::vector<double>{3, 3});
  Tensor d = (x * 2).detach();
  CHECK(!d.requires_grad());
  Tensor e = x.detach();
  e.fill_(7);
  CHECK(values(x) == std::vector<double>{7, 7});
  CHECK(td::is_grad_enabled());
}

TEST_CASE("anomaly detection names the backward node that returned NaN and stops there", "[cpu]") {
  // sqrt at 0 is finite forward; its backward meets 0 / (2 sqrt(0)) = NaN.
  Tensor x = td::tensor(std::vector<double>{0, 4}).requires_grad_(true);
  auto loss = [&] { return (x.sqrt() * 0).sum(); };
  CHECK(!td::autograd::is_anomaly_enabled());
  loss().backward();  // off: the NaN reaches the gradient
  CHECK(std::isnan(values(x.grad())[0]));
  x.mutable_grad() = Tensor();
  {
    td::autograd::DetectAnomalyGuard anomaly;
    CHECK(td::autograd::is_anomaly_enabled());
    check_error([&] { loss().backward(); }, {"Function 'SqrtBackward0' returned nan values in its 0th output."});
    CHECK(!x.grad().defined());  // the backward stopped before x's gradient
    // The graph is released as the backward went: a second backward through it is an error.
    const Tensor kept = loss();
    check_error([&] { kept.backward(); }, {"SqrtBackward0"});
    check_error([&] { kept.backward(); }, {"second time"});
    // A NaN in a gradient no input needs is not an anomaly: xlogy's y here requires none.
    Tensor a = td::tensor(std::vector<double>{0, 0.5}).requires_grad_(true);
    const Tensor b = td::tensor(std::vector<double>{0, 2});
    td::xlogy(a, b).sum().backward();
    check_close(a.grad(), {0, std::log(2.0)}, 1e-15, 0);
    check_error([&] { td::autograd::grad({loss()}, {x}); }, {"SqrtBackward0", "nan"});
    {
      td::autograd::DetectAnomalyGuard without_nan_checks(false);
      CHECK(td::autograd::is_anomaly_enabled());
      CHECK(!td::autograd::is_anomaly_check_nan_enabled());
      CHECK(std::isnan(values(td::autograd::grad({loss()}, {x})[0])[0]));
    }
    CHECK(td::autograd::is_anomaly_check_nan_enabled());
    // A backward without NaN runs as ever.
    Tensor y = td::tensor(std::vector<double>{1, 4}).requires_grad_(true);
    y.sqrt().sum().backward();
    check_close(y.grad(), {0.5, 0.25}, 1e-15, 0);
  }
  CHECK(!td::autograd::is_anomaly_enabled());
  td::autograd::set_detect_anomaly(true);
  CHECK(td::autograd::is_anomaly_enabled());
  td::autograd::set_detect_anomaly(false);
  CHECK(!td::autograd::is_anomaly_check_nan_enabled());
}

TEST_CASE("EnableGradGuard records again inside a NoGradGuard, and the outer mode comes back", "[cpu]") {
  Tensor x = td::ones({2}).requires_grad_(true);
  td::NoGradGuard no_grad;
  {
    td::EnableGradGuard enable_grad;
    CHECK(td::is_grad_enabled());
    Tensor y = x * 2;
    CHECK(y.requires_grad());
    y.sum().backward();
  }
  CHECK(!td::is_grad_enabled());
  CHECK(values(x.grad()) == std::vector<double>{2, 2});
  CHECK(!(x * 2).requires_grad());
}

TEST_CASE("requires_grad is for floating leaves only", "[cpu]") {
  check_error([] { td::tensor({1, 2}).requires_grad_(true); }, {"requires_grad_", "floating", "int64"});
  Tensor x = td::ones({2}).requires_grad_(true);
  Tensor y = x * 2;
  check_error([&] { y.requires_grad_(false); }, {"requires_grad_", "leaf", "MulBackward0"});
  // As PyTorch: asking a non-leaf to require grad changes nothing; retain_grad needs a gradient;
  // grad() needs inputs.
  CHECK(y.requires_grad_(true).grad_fn()->name() == "MulBackward0");
  check_error([] { td::ones({2}).retain_grad(); }, {"retain_grad", "does not require grad"});
  check_error([&] { td::autograd::grad({y.sum()}, {}); }, {"grad: the inputs", "must not be empty"});
  y.sum().backward();  // the graph was not run by the refused grad()
  CHECK(values(x.grad()) == std::vector<double>{2, 2});
  Tensor z = td::ones({2}).requires_grad_(true).requires_grad_(false);
  CHECK(!z.requires_grad());
}

TEST_CASE("integer and bool results of ops on tensors that require grad stay out of the graph", "[cpu]") {
  // As in PyTorch: a cast to an integer dtype, or a copy into an integer tensor, is simply not
  // differentiable; it used to be an error, the copy's after it had written.
  Tensor x = td::tensor(std::vector<double>{1.5, -2.5}).requires_grad_();
  Tensor y = x * 2;
  Tensor rounded = y.to(td::kInt64);
  CHECK_FALSE(rounded.requires_grad());
  CHECK(rounded.grad_fn() == nullptr);
  td::testing::check_equal(rounded, {3, -5});
  Tensor into = td::zeros({2}, td::kInt64);
  into.copy_(y);
  CHECK_FALSE(into.requires_grad());
  td::testing::check_equal(into, {3, -5});
  Tensor slice = td::zeros({4}, td::kInt32).narrow(0, 1, 2);
  slice.copy_(y);  // a view of an integer base
  CHECK_FALSE(slice.requires_grad());
  CHECK((y > 0).grad_fn() == nullptr);
  y.sum().backward();  // the float part of the graph is untouched
  td::testing::check_equal(x.grad(), {2, 2});
}

TEST_CASE("gradients at the kinks are PyTorch's: clamp's bounds pass none, relu passes NaN's", "[cpu]") {
  // PyTorch 2.15: clamp(0, 1) of [0, 1, 0.5, 2, -1, nan] -> [0, 0, 1, 0, 0, 0]; clamp_max(1) of
  // [0, 1, 0.5, 2, -1] -> [1, 0, 1, 0, 1]; clamp_min(0) of [0, 1, 0.5, 2] -> [0, 1, 1, 1]; relu of
  // [nan, 0, -0, 1] -> [1, 0, 0, 1].
  auto grad_of = [](std::vector<double> v, const std::function<Tensor(const Tensor&)>& f) {
    Tensor x = td::tensor(v).requires_grad_();
    f(x).sum().backward();
    return x.grad();
  };
  const double nan = std::nan("");
  td::testing::check_equal(grad_of({0, 1, 0.5, 2, -1, nan}, [](const Tensor& x) { return x.clamp(0, 1); }),
                           {0, 0, 1, 0, 0, 0});
  td::testing::check_equal(grad_of({0, 1, 0.5, 2, -1}, [](const Tensor& x) { return x.clamp_max(1); }),
                           {1, 0, 1, 0, 1});
  td::testing::check_equal(grad_of({0, 1, 0.5, 2}, [](const Tensor& x) { return x.clamp_min(0); }), {0, 1, 1, 1});
  td::testing::check_equal(grad_of({0, 1, 0.5, 2, -1}, [](const Tensor& x) { return x.clone().clamp_(0, 1); }),
                           {0, 0, 1, 0, 0});
  td::testing::check_equal(grad_of({nan, 0, -0.0, 1}, [](const Tensor& x) { return td::relu(x); }), {1, 0, 0, 1});
  td::testing::check_equal(grad_of({nan, 0, -0.0, 1}, [](const Tensor& x) { return x.clone().relu_(); }),
                           {1, 0, 0, 1});
}

TEST_CASE("integer and bool tensors a backward reads are versioned: written in place, backward refuses", "[cpu]") {
  // PyTorch raises "modified by an inplace operation" in each case; the gradient would go to the
  // rows the new indices name.
  const std::vector<std::string> fragments{"modified by an in-place operation", "expected version 0"};
  auto x = [] { return td::tensor(std::vector<double>{1, 5, 3, 2, 4, 0}).view({2, 3}).requires_grad_(); };
  {
    Tensor input = x();
    auto [largest, indices] = td::max(input, 1);
    indices.zero_();
    check_error([&] { largest.sum().backward(); }, fragments);
  }
  {
    Tensor input = x();
    Tensor index = td::tensor(std::vector<int64_t>{0, 1, 2, 0, 1, 2}).view({2, 3});
    Tensor y = input.gather(1, index);
    index.fill_(2);
    check_error([&] { y.sum().backward(); }, fragments);
  }
  {
    Tensor input = x();
    Tensor index = td::tensor(std::vector<int64_t>{1, 0});
    Tensor y = td::index_select(input, 0, index);
    index.fill_(0);
    check_error([&] { y.sum().backward(); }, fragments);
  }
  {
    Tensor input = x();
    Tensor cond = input > 2;
    Tensor y = td::where(cond, input, 0);
    cond.fill_(true);
    check_error([&] { y.sum().backward(); }, fragments);
  }
  {
    Tensor input = x();
    Tensor mask = input > 2;
    Tensor y = input.masked_fill(mask, 0);
    mask.fill_(false);
    check_error([&] { y.sum().backward(); }, fragments);
  }
  {
    Tensor weight = x();
    Tensor rows = td::tensor(std::vector<int64_t>{1, 1, 0});
    Tensor y = td::embedding(weight, rows);
    rows.fill_(0);
    check_error([&] { y.sum().backward(); }, fragments);
  }
  {
    Tensor input = x().view({1, 1, 2, 3});
    auto [pooled, where_from] = td::max_pool2d_with_indices(input, {2, 2}, {1, 1});
    where_from.fill_(0);
    check_error([&] { pooled.sum().backward(); }, fragments);
  }
  // Untouched, they give the gradient as before.
  Tensor input = x();
  auto [largest, indices] = td::max(input, 1);
  largest.sum().backward();
  CHECK(values(input.grad()) == std::vector<double>{0, 1, 0, 0, 1, 0});
}

TEST_CASE("in-place writes that would corrupt a gradient are refused", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}).requires_grad_(true);
  td::testing::Snapshot before(x);
  check_error([&] { x.add_(1); }, {"leaf", "in-place"});
  before.check_unchanged(x);
  Tensor h = x * 1;
  Tensor y = h.exp();  // saves its output
  y.mul_(2);           // ... which is then modified
  check_error([&] { y.sum().backward(); }, {"modified by an in-place operation", "version"});
  check_error([&] { x.narrow(0, 0, 1).mul_(2); }, {"view of a leaf", "in-place"});
}

TEST_CASE("in-place writes through a view reach its base's gradient", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0, 3.0}, td::kFloat64).requires_grad_(true);
  Tensor base = x * 1;
  base.narrow(0, 0, 2).mul_(td::tensor({10.0, 20.0}, td::kFloat64));
  CHECK(values(base) == std::vector<double>{10, 40, 3});
  CHECK(base.grad_fn()->name() == "CopySlices");
  base.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{10, 20, 1});
}

TEST_CASE("detach_ cuts a tensor from its graph in place, and refuses a view of a tensor that requires grad", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0, 3.0}, td::kFloat64).requires_grad_(true);
  Tensor y = x * 2;
  Tensor& same = y.detach_();
  CHECK(&same == &y);
  CHECK_FALSE(y.requires_grad());
  CHECK(y.grad_fn() == nullptr);
  CHECK(values(y) == std::vector<double>{2, 4, 6});
  Tensor v = (x * 1).narrow(0, 0, 2);
  check_error([&] { v.detach_(); }, {"detach_", "view"});
  CHECK(v.requires_grad());
  CHECK(v.grad_fn() != nullptr);
  // as_strided has no gradient here: refused on a tensor that requires grad, allowed without it.
  check_error([&] { x.as_strided({2}, {1}); }, {"as_strided", "gradient is not supported"});
  td::NoGradGuard no_grad;
  CHECK(values(x.as_strided({2}, {2})) == std::vector<double>{1, 3});
}

TEST_CASE("double backward through an in-place op on a view reads its saved output as that view", "[cpu]") {
  // PyTorch 2.15: y = 2x; y[1:3].exp_(); g = grad((y * y).sum(), x, create_graph); g.sum().backward().
  // exp_'s saved output is the view's new value, whose history is the view of the base after the
  // op; it was given the base's whole node (CopySlices), a gradient of the base's shape for a view's.
  auto run = [](const std::function<void(Tensor&)>& op, bool in_place) {
    Tensor x = td::tensor({0.5, -0.3, 0.2, 1.1}, td::kFloat64).requires_grad_(true);
    Tensor y = x * 2;
    if (in_place) {
      Tensor region = y.narrow(0, 1, 2);
      op(region);
    } else {
      Tensor middle = y.narrow(0, 1, 2).clone();
      op(middle);
      y = td::cat({y.narrow(0, 0, 1), middle, y.narrow(0, 3, 1)}, 0);
    }
    Tensor g = td::autograd::grad({(y * y).sum()}, {x}, {}, std::nullopt, true)[0];
    g.sum().backward();
    return std::pair{values(g), values(x.grad())};
  };
  auto [g, second] = run([](Tensor& t) { t.exp_(); }, true);
  check_close(td::tensor(g, td::kFloat64), {4.0, 1.2047768476488088, 8.902163713969871, 8.8}, 1e-12, 1e-12, "g");
  check_close(td::tensor(second, td::kFloat64), {8.0, 4.819107390595235, 35.608654855879486, 8.0}, 1e-12, 1e-12,
              "second order");
  for (const auto& [name, op] : std::vector<std::pair<std::string, std::function<void(Tensor&)>>>{
           {"exp_", [](Tensor& t) { t.exp_(); }},
           {"tanh_", [](Tensor& t) { t.tanh_(); }},
           {"sigmoid_", [](Tensor& t) { t.sigmoid_(); }},
           {"sqrt_", [](Tensor& t) { t.abs_().sqrt_(); }}}) {
    INFO(name);
    auto in_place = run(op, true), out_of_place = run(op, false);
    check_close(td::tensor(in_place.first, td::kFloat64), out_of_place.first, 1e-12, 1e-12, name + " g");
    check_close(td::tensor(in_place.second, td::kFloat64), out_of_place.second, 1e-12, 1e-12, name + " second order");
  }
}

TEST_CASE("a view made under NoGradGuard is not written in place with grad mode on where grad is involved", "[cpu]") {
  // PyTorch 2.15 refuses each of these ("A view was created in no_grad mode and is being modified
  // inplace with grad mode enabled"); tandem wrote through, and the base's history never saw it.
  auto no_grad_view = [](const Tensor& base) {
    td::NoGradGuard no_grad;
    return base.narrow(0, 0, 2);
  };
  Tensor leaf = td::zeros({3}).requires_grad_(true);
  Tensor non_leaf = leaf * 1;
  Tensor plain = td::zeros({3});
  Tensor w = td::ones({2}).requires_grad_(true);
  for (Tensor base : {leaf, non_leaf}) {
    Tensor view = no_grad_view(base);
    Tensor nested;
    {
      td::NoGradGuard no_grad;
      nested = view.narrow(0, 1, 1);
    }
    check_error([&] { view.mul_(2); }, {"NoGradGuard", "in place", "requires grad"});
    check_error([&] { nested.fill_(5); }, {"NoGradGuard", "in place"});
    CHECK(values(base) == std::vector<double>{0, 0, 0});
  }
  Tensor view = no_grad_view(plain);
  check_error([&] { view.copy_(w); }, {"CopyBackwards", "NoGradGuard"});
  check_error([&] { view.mul_(w); }, {"NoGradGuard"});
  CHECK(values(plain) == std::vector<double>{0, 0, 0});
  CHECK_FALSE(plain.requires_grad());
  // Where no gradient is involved, or under NoGradGuard, the write goes through.
  view.add_(1);
  CHECK(values(plain) == std::vector<double>{1, 1, 0});
  {
    td::NoGradGuard no_grad;
    no_grad_view(leaf).add_(1);
    view.copy_(w);
  }
  CHECK(values(leaf) == std::vector<double>{1, 1, 0});
  CHECK(values(plain) == std::vector<double>{1, 1, 0});
}

TEST_CASE("a view made before its base is written in place follows the base's new history", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0, 3.0}, td::kFloat64).requires_grad_(true);
  Tensor y = x * 2;
  Tensor v = y.narrow(0, 1, 2);
  y.mul_(y);  // y = 4 x^2, and v sees it
  v.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 16, 24});
}

TEST_CASE("a view whose base was written since is current everywhere: requires_grad, hooks, no-grad backward",
          "[cpu]") {
  // PyTorch 2.15 in each case.
  {  // A plain buffer that a tensor requiring grad was copied into: its earlier view requires grad too.
    Tensor x = td::ones({4}).requires_grad_(true);
    Tensor buffer = td::zeros({4});
    Tensor head = buffer.narrow(0, 0, 2);
    buffer.copy_(x * 3);
    CHECK(head.requires_grad());
    CHECK(head.grad_fn() != nullptr);
    (head * 2).sum().backward();
    CHECK(values(x.grad()) == std::vector<double>{6, 6, 0, 0});
  }
  {  // backward from such a view under NoGradGuard reaches the base's leaf: [2, 2, 0]
    Tensor x = td::ones({3}).requires_grad_(true);
    Tensor y = x * 1;
    Tensor head = y.narrow(0, 0, 2);
    y.mul_(2);
    {
      td::NoGradGuard no_grad;
      head.backward(td::ones({2}));
    }
    CHECK(values(x.grad()) == std::vector<double>{2, 2, 0});
    CHECK_FALSE(head.is_leaf());
    CHECK(!head.grad().defined());
  }
  {  // a hook and retain_grad on such a view see its gradient: [3, 3], and x.grad [6, 6, 0]
    Tensor x = td::ones({3}).requires_grad_(true);
    Tensor y = x * 1;
    Tensor head = y.narrow(0, 0, 2);
    y.mul_(2);
    std::vector<double> seen;
    head.register_hook([&](const Tensor& g) {
      seen = values(g);
      return Tensor();
    });
    head.retain_grad();
    (head * 3).sum().backward();
    CHECK(seen == std::vector<double>{3, 3});
    CHECK(values(head.grad()) == std::vector<double>{3, 3});
    CHECK(values(x.grad()) == std::vector<double>{6, 6, 0});
  }
}

TEST_CASE("writing a tensor that requires grad into a slice of a plain buffer connects the buffer", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}, td::kFloat64).requires_grad_(true);
  Tensor buffer = td::zeros({3, 2}, td::kFloat64);
  buffer.select(0, 1).copy_(x * 5);
  buffer[2].add_(x);
  CHECK(buffer.requires_grad());
  (buffer * buffer).sum().backward();  // d/dx (25 x^2 + x^2) = 52 x
  CHECK(values(x.grad()) == std::vector<double>{52, 104});
}

TEST_CASE("in-place ops on non-leaves record their own gradient", "[cpu]") {
  Tensor x = td::tensor({0.5, -1.0, 2.0}).requires_grad_(true);
  Tensor y = x * 1;
  y.mul_(x).add_(3).relu_();
  CHECK(y.grad_fn()->name() == "ReluBackward0");
  y.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{1, -2, 4});  // d(x^2)/dx
}

TEST_CASE("in-place mul and div by constants can follow each other: only what backward reads is saved", "[cpu]") {
  Tensor x = td::tensor({0.5, -1.0, 2.0}, td::kFloat64).requires_grad_(true);
  const Tensor t = td::tensor({2.0, 4.0, -8.0}, td::kFloat64);
  Tensor y = x * 1;
  y.div_(t).mul_(t * 3).div_(4.0).mul_(5);  // each op's own input is overwritten by the next
  y.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{3.75, 3.75, 3.75});  // 3 / 4 * 5
  // Where the constant's side needs the gradient, the value from before the write is kept.
  Tensor w = td::tensor({1.0, 2.0, 3.0}, td::kFloat64).requires_grad_(true);
  Tensor z = x * 1;
  z.mul_(w).mul_(2);
  z.sum().backward();
  CHECK(values(w.grad()) == std::vector<double>{1, -2, 4});  // 2 x
}

TEST_CASE("a product keeps each operand only for the other's gradient: a frozen weight keeps no input alive", "[cpu]") {
  // On a device of its own, so that the bytes counted are this case's alone.
  const td::Device dev("cpu:5");
  Tensor x = td::ones({256, 1024}, td::TensorOptions(td::kFloat32).device(dev)).requires_grad_(true);
  Tensor frozen = td::ones({1024, 8}, td::TensorOptions(td::kFloat32).device(dev));
  Tensor bias = td::zeros({8}, td::TensorOptions(td::kFloat32).device(dev));
  for (const std::string op : {"mm", "addmm", "bmm"}) {
    INFO(op);
    Tensor hidden = x * 2;  // 1 MiB, which no gradient of the product reads
    const int64_t hidden_bytes = hidden.numel() * 4;
    Tensor y = op == "mm"      ? td::mm(hidden, frozen)
               : op == "addmm" ? td::addmm(bias, hidden, frozen)
                               : td::bmm(hidden.unsqueeze(0), frozen.unsqueeze(0)).squeeze(0);
    const int64_t with_y = td::memory_stats(dev).allocated;
    hidden = Tensor();
    CHECK(td::memory_stats(dev).allocated == with_y - hidden_bytes);  // hidden's bytes are gone
    y.sum().backward();
    CHECK(values(x.grad().select(0, 0).narrow(0, 0, 3)) == std::vector<double>{16, 16, 16});  // 2 * 8 ones
    x.mutable_grad() = Tensor();
  }
}

TEST_CASE("hooks see and may replace gradients; retain_grad keeps a non-leaf's", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}).requires_grad_(true);
  std::vector<double> seen;
  int h = x.register_hook([&](const Tensor& g) {
    seen = values(g);
    return g * 10;
  });
  Tensor mid = x * 3;
  mid.retain_grad();
  int doubled = mid.register_hook([](const Tensor& g) { return g * 2; });
  (mid * mid).sum().backward();
  CHECK(seen == std::vector<double>{36, 72});      // 2 * mid * 2 (hook) * 3
  CHECK(values(x.grad()) == std::vector<double>{360, 720});
  CHECK(values(mid.grad()) == std::vector<double>{12, 24});  // kept after mid's own hook ran
  x.remove_hook(h);
  mid.remove_hook(doubled);
  x.mutable_grad() = Tensor();
  (x * 1).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{1, 1});
  check_error([] { td::ones({1}).register_hook([](const Tensor& g) { return g; }); }, {"does not require grad"});
}

TEST_CASE("autograd::grad returns gradients without touching .grad()", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}).requires_grad_(true);
  Tensor w = td::tensor({3.0}).requires_grad_(true);
  Tensor unused = td::ones({1}).requires_grad_(true);
  Tensor y = (x * x * w).sum();
  auto grads = td::autograd::grad({y}, {x, w}, {}, true);
  CHECK(values(grads[0]) == std::vector<double>{6, 12});
  CHECK(values(grads[1]) == std::vector<double>{5});
  CHECK(!x.grad().defined());
  check_error([&] { td::autograd::grad({y}, {unused}, {}, true); }, {"was not used", "allow_unused"});
  auto none = td::autograd::grad({y}, {unused}, {}, true, false, true);
  CHECK(!none[0].defined());
  Tensor mid = x * 2;
  Tensor z = (mid * mid).sum();
  CHECK(values(td::autograd::grad({z}, {mid})[0]) == std::vector<double>{4, 8});
}

TEST_CASE("autograd::grad returns an input's gradient as its hooks leave it, as PyTorch does", "[cpu]") {
  // PyTorch: [6, 6] in each case (a hook doubling the gradient of x * 3).
  auto doubled = [](const Tensor& g) { return g * 2; };
  Tensor x = td::ones({2}).requires_grad_(true);
  x.register_hook(doubled);
  CHECK(values(td::autograd::grad({(x * 3).sum()}, {x})[0]) == std::vector<double>{6, 6});
  CHECK(!x.grad().defined());
  Tensor y = td::ones({2}).requires_grad_(true);
  Tensor m = y * 1;
  m.register_hook(doubled);
  CHECK(values(td::autograd::grad({(m * 3).sum()}, {m})[0]) == std::vector<double>{6, 6});
  Tensor n = y * 1;
  n.register_hook(doubled);
  CHECK(values(td::autograd::grad({(n * 3).sum()}, {y})[0]) == std::vector<double>{6, 6});
}

TEST_CASE("retain_grad keeps the gradient of a tensor's latest value, across in-place writes", "[cpu]") {
  // PyTorch: y = x * 2; y.retain_grad(); y.mul_(3); y.sum().backward() -> y.grad [1, 1], x.grad [6, 6].
  Tensor x = td::ones({2}).requires_grad_(true);
  Tensor y = x * 2;
  y.retain_grad();
  y.mul_(3);
  y.sum().backward();
  CHECK(values(y.grad()) == std::vector<double>{1, 1});
  CHECK(values(x.grad()) == std::vector<double>{6, 6});
  // A view written in place: its gradient is that of its new value, where the loss reads it.
  Tensor w = td::ones({4}).requires_grad_(true);
  Tensor base = w * 1;
  Tensor head = base.narrow(0, 0, 2);
  head.retain_grad();
  head.mul_(5);
  (head * 3).sum().backward();
  CHECK(values(head.grad()) == std::vector<double>{3, 3});
  CHECK(values(w.grad()) == std::vector<double>{15, 15, 0, 0});
}

TEST_CASE("a hook that returns a gradient of another shape, dtype or device is an error", "[cpu]") {
  // PyTorch: "hook '<lambda>' has changed the size of value".
  Tensor x = td::ones({2}).requires_grad_(true);
  Tensor m = x * 1;
  m.register_hook([](const Tensor& g) { return g.sum(); });
  check_error([&] { m.sum().backward(); }, {"a hook has changed the gradient", "float32[2]", "returned float32[]"});
  Tensor leaf = td::ones({2}).requires_grad_(true);
  leaf.register_hook([](const Tensor& g) { return g.to(td::kFloat64); });
  check_error([&] { (leaf * 1).sum().backward(); }, {"a hook has changed the gradient", "float64"});
  CHECK(!leaf.grad().defined());
}

TEST_CASE("a gradient a leaf's hook made and also kept is copied into .grad, not taken", "[cpu]") {
  // PyTorch: after two backward passes x.grad is [4, 4] and the hook's first result still [2, 2].
  std::vector<Tensor> kept;
  Tensor x = td::ones({2}).requires_grad_(true);
  x.register_hook([&](const Tensor& g) {
    kept.push_back(g * 2);
    return kept.back();
  });
  (x * 1).sum().backward();
  (x * 1).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{4, 4});
  CHECK(values(kept[0]) == std::vector<double>{2, 2});
  CHECK_FALSE(x.grad().is_same(kept[0]));
}

TEST_CASE("create_graph makes gradients differentiable: a gradient penalty", "[cpu]") {
  // f(x) = sum(tanh(x W)), penalty = ||df/dx||^2: its gradient with respect to W needs the
  // backward pass recorded. Compare with central differences of the penalty.
  td::testing::reseed(200);
  Tensor x = td::randn({4, 3}, td::kFloat64).requires_grad_(true);
  Tensor w = td::randn({3, 2}, td::kFloat64).requires_grad_(true);
  auto penalty = [&](const Tensor& weight) {
    Tensor f = td::tanh(td::matmul(x, weight)).sum();
    Tensor g = td::autograd::grad({f}, {x}, {}, true, true)[0];
    return (g * g).sum();
  };
  Tensor p = penalty(w);
  p.backward();
  std::vector<double> analytical = values(w.grad());
  double* wp = static_cast<double*>(w.data_ptr());
  for (int64_t i = 0; i < w.numel(); ++i) {
    const double eps = 1e-6, saved = wp[i];
    wp[i] = saved + eps;
    double plus = penalty(w.detach().requires_grad_(true)).item<double>();
    wp[i] = saved - eps;
    double minus = penalty(w.detach().requires_grad_(true)).item<double>();
    wp[i] = saved;
    CHECK(analytical[i] == Approx((plus - minus) / (2 * eps)).epsilon(1e-5));
  }
}

TEST_CASE("gradients flow back across cpu devices and dtypes", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}, td::kFloat64).requires_grad_(true);
  Tensor y = x.to(td::Device("cpu:1"), td::kFloat32);
  CHECK(y.device() == td::Device("cpu:1"));
  (y * y).sum().backward();
  CHECK(x.grad().device() == td::Device("cpu:0"));
  CHECK(x.grad().dtype() == td::kFloat64);
  CHECK(values(x.grad()) == std::vector<double>{2, 4});
  Tensor h = td::tensor({1.0, 2.0}, td::kFloat16).requires_grad_(true);
  (h * td::tensor({3.0, 4.0})).sum().backward();  // float16 * float32 computes in float32
  CHECK(h.grad().dtype() == td::kFloat16);
  CHECK(values(h.grad()) == std::vector<double>{3, 4});
}

TEST_CASE("tensors with history print their grad_fn as PyTorch does", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0}).requires_grad_(true);
  CHECK(x.str() == "tensor([1., 2.], requires_grad=True)");
  CHECK((x * 2).str() == "tensor([2., 4.], grad_fn=<MulBackward0>)");
  CHECK(x.sum().str() == "tensor(3., grad_fn=<SumBackward1>)");
  CHECK((x + 1).exp().sum().grad_fn()->name() == "SumBackward1");
}

TEST_CASE("a long chain of ops runs backward and is freed without exhausting the stack", "[cpu]") {
  Tensor x = td::tensor({1.0}, td::kFloat64).requires_grad_(true);
  {
    Tensor y = x;
    for (int i = 0; i < 20000; ++i) y = y * 1.0001;
    y.sum().backward();
  }
  CHECK(x.grad().item<double>() == Approx(std::pow(1.0001, 20000)).epsilon(1e-9));
}

TEST_CASE("backward runs each device's part of the graph on that device's thread, and the sums stay the same",
          "[cpu]") {
  td::Tensor x = td::testing::random_tensor({64, 16}, td::kFloat64).requires_grad_();
  std::mutex mutex;
  std::map<std::string, std::thread::id> threads;
  auto branch = [&](const td::Device& device, double scale) {
    td::Tensor y = x.to(device) * scale;
    y.register_hook([&, device](const td::Tensor& g) {
      std::lock_guard lock(mutex);
      threads[device.str()] = std::this_thread::get_id();
      return g;
    });
    return y.sin().sum().to(td::Device("cpu:0"));
  };
  auto grad_once = [&] {
    x.mutable_grad() = td::Tensor();
    // Built in this order, the cpu:0 branch's nodes run last (nodes run newest first): after
    // the graph has reached cpu:1 and cpu:2.
    td::Tensor on0 = branch(td::Device("cpu:0"), 1.5);
    td::Tensor on1 = branch(td::Device("cpu:1"), 0.25);
    td::Tensor on2 = branch(td::Device("cpu:2"), -3.0);
    (on0 + on1 + on2).backward();
    return x.grad().clone();
  };
  // A graph on one device runs on the calling thread, without hand-offs.
  branch(td::Device("cpu:0"), 2.0).backward();
  CHECK(threads.at("cpu:0") == std::this_thread::get_id());
  threads.clear();
  x.mutable_grad() = td::Tensor();

  td::Tensor first = grad_once();
  // Once the graph has reached other devices, the output's device is served by its own thread
  // too, and the caller only waits.
  const std::set<std::thread::id> serving{threads.at("cpu:0"), threads.at("cpu:1"), threads.at("cpu:2"),
                                          std::this_thread::get_id()};
  CHECK(serving.size() == 4);
  td::Tensor expected = (1.5 * td::cos(1.5 * x) + 0.25 * td::cos(0.25 * x) - 3.0 * td::cos(-3.0 * x)).detach();
  td::testing::check_close(first, expected, 1e-12, 1e-12);
  for (int i = 0; i < 5; ++i) CHECK(td::testing::values(grad_once()) == td::testing::values(first));  // bit for bit

  // A failure on a device thread reaches the caller, and the engine stays usable.
  td::Tensor z = x.to(td::Device("cpu:1")) * 2.0;
  z.register_hook([](const td::Tensor&) -> td::Tensor { TD_FAIL("hook on cpu:1 failed"); });
  td::testing::check_error([&] { z.sum().to(td::Device("cpu:0")).backward(); }, {"hook on cpu:1 failed"});
  CHECK(values(grad_once()) == values(first));
}

TEST_CASE("each node's backward gets the intra-op threads its op had, whatever the other devices are doing",
          "[cpu]") {
  // How a product is split across threads decides its last bits, so a node's share must depend
  // on its own op alone: not on how many devices the graph has reached when it runs, nor on which
  // devices' workers are still running.
  td::testing::ThreadCount pool(4);
  const td::Device cpu0("cpu:0"), cpu1("cpu:1");
  td::Tensor x = td::testing::random_tensor({8}, td::kFloat64).requires_grad_();
  std::mutex mutex;
  std::map<std::string, int> seen;
  std::atomic<bool> cpu0_done = false;
  auto note = [&](const std::string& what) {
    std::lock_guard lock(mutex);
    seen[what] = td::num_threads();
  };
  td::Tensor wide = x.to(cpu1) * 2.0;  // recorded with the whole pool
  td::Tensor narrow;
  {
    td::ThreadLimit one(1);
    narrow = wide.sin();  // recorded under a limit of one thread
  }
  wide.register_hook([&](const td::Tensor& g) {
    note("wide");
    return g;
  });
  narrow.register_hook([&](const td::Tensor& g) {
    // cpu:1's first node: it waits until cpu:0's worker has run its last node and ended.
    while (!cpu0_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    note("narrow");
    return g;
  });
  td::Tensor on0 = x * 3.0;
  on0.register_hook([&](const td::Tensor& g) {
    note("cpu:0");
    cpu0_done = true;
    return g;
  });
  td::Tensor loss = narrow.sum().to(cpu0) + on0.sum();
  loss.backward({}, true);
  CHECK(seen.at("cpu:0") == 4);
  CHECK(seen.at("wide") == 4);
  CHECK(seen.at("narrow") == 1);
  check_close(x.grad(), (2.0 * td::cos(2.0 * x) + 3.0).detach(), 1e-12, 1e-12);

  // A limit around backward caps every node.
  seen.clear();
  cpu0_done = false;
  {
    td::ThreadLimit two(2);
    loss.backward();
  }
  CHECK(seen.at("cpu:0") == 2);
  CHECK(seen.at("wide") == 2);
  CHECK(seen.at("narrow") == 1);
}

TEST_CASE("a failure while gradients from several devices are added is an error, not a crash", "[cpu]") {
  td::Tensor x = td::testing::random_tensor({4}, td::kFloat64).requires_grad_();
  td::Tensor y = x.to(td::Device("cpu:1"));
  // A node whose backward returns a gradient of the wrong shape for y, which y's other use's
  // gradient then meets on cpu:1's thread.
  td::Tensor z = td::zeros({}, td::kFloat64).to(td::Device("cpu:1"));
  td::autograd::record("BadBackward", {&y}, {&z}, [](const std::vector<td::Tensor>& g) {
    return std::vector<td::Tensor>{td::ones({3}, td::kFloat64).to(g[0].device())};
  });
  td::Tensor loss = (z + (y * 2.0).sum()).to(td::Device("cpu:0"));
  CHECK_THROWS_AS(loss.backward(), td::Error);
  // The engine and the device threads still work.
  x.mutable_grad() = td::Tensor();
  (x.to(td::Device("cpu:1")) * 3.0).sum().to(td::Device("cpu:0")).backward();
  check_close(x.grad(), std::vector<double>(4, 3.0), 0, 0);
}

TEST_CASE("a backward that returns a gradient on another device than its input's is an error naming it", "[cpu]") {
  // As conv2d's CPU backward once did: its input on cpu:1, the input's gradient made on cpu:0.
  td::Tensor x = td::testing::random_tensor({4}, td::kFloat64).to(td::Device("cpu:1")).requires_grad_();
  x.mutable_grad() = td::full({4}, 5.0, td::TensorOptions(td::kFloat64).device(td::Device("cpu:1")));
  td::Tensor y = (x * 2.0).detach();
  td::autograd::record("StrayBackward", {&x}, {&y}, [](const std::vector<td::Tensor>& g) {
    return std::vector<td::Tensor>{g[0].to(td::Device("cpu:0"))};
  });
  check_error([&] { y.sum().backward(); }, {"StrayBackward", "input 0", "cpu:0", "cpu:1"});
  // Nothing reached the leaf's gradient.
  CHECK(x.grad().device() == td::Device("cpu:1"));
  check_close(x.grad().to(td::Device("cpu:0")), std::vector<double>(4, 5.0), 0, 0);
}

TEST_CASE("a backward through a graph recorded before its leaves moved to another device is an error", "[cpu]") {
  td::nn::Linear model(3, 2);
  const td::Tensor loss = model(td::testing::random_tensor({4, 3}, td::kFloat64).to(td::kFloat32)).sum();
  model->to(td::Device("cpu:1"));
  check_error([&] { loss.backward(); }, {"leaf tensor on cpu:1", "arrived on cpu:0", "moved"});
  CHECK_FALSE(model->weight.grad().defined());
  CHECK_FALSE(model->bias.grad().defined());
}

TEST_CASE("a leaf's first gradient is taken without a copy only when nothing else can see it", "[cpu]") {
  td::Tensor x = td::ones({3}, td::kFloat64).requires_grad_(), y = td::ones({3}, td::kFloat64).requires_grad_();
  (x + y).sum().backward();  // add's backward hands the same gradient to both
  CHECK_FALSE(x.grad().is_alias_of(y.grad()));
  x.mutable_grad().mul_(5.0);
  check_close(y.grad(), std::vector<double>(3, 1.0), 0, 0);

  td::Tensor kept;
  td::Tensor w = td::ones({2, 2}, td::kFloat64).requires_grad_();
  w.register_hook([&kept](const td::Tensor& g) {
    kept = g;  // the hook holds the gradient: .grad() must be a copy
    return td::Tensor();
  });
  (w * 3.0).sum().backward();
  CHECK_FALSE(w.grad().is_alias_of(kept));
  // A fresh, dense gradient nobody holds is stored as it is (its values are what matter here).
  td::Tensor v = td::ones({4, 4}, td::kFloat64).requires_grad_();
  (v * v).sum().backward();
  check_close(v.grad(), std::vector<double>(16, 2.0), 0, 0);
}
