// The in-place activations and dropouts (F::relu_, elu_, ..., the layers' inplace option): each
// writes its out-of-place form's values into the tensor it is given, in any layout, returns that
// tensor, moves its version on, and gives the out-of-place gradient; the random ones draw as their
// out-of-place forms do. Refusals leave the tensor as it was.
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::Layout;
using td::testing::random_tensor;
using td::testing::Snapshot;
using td::testing::values;

namespace {

struct InPlace {
  const char* name;
  std::function<Tensor&(Tensor&)> in_place;
  std::function<Tensor(const Tensor&)> out_of_place;
  const char* node;  // the graph node that the written tensor gets
};

const std::vector<InPlace>& activations() {
  static const std::vector<InPlace> table = {
      {"relu_", [](Tensor& x) -> Tensor& { return F::relu_(x); }, [](const Tensor& x) { return F::relu(x); },
       "ReluBackward0"},
      {"leaky_relu_", [](Tensor& x) -> Tensor& { return F::leaky_relu_(x, 0.2); },
       [](const Tensor& x) { return F::leaky_relu(x, 0.2); }, "LeakyReluBackward1"},
      {"elu_", [](Tensor& x) -> Tensor& { return F::elu_(x, 0.7); }, [](const Tensor& x) { return F::elu(x, 0.7); },
       "EluBackward1"},
      {"selu_", [](Tensor& x) -> Tensor& { return F::selu_(x); }, [](const Tensor& x) { return F::selu(x); },
       "EluBackward1"},
      {"celu_", [](Tensor& x) -> Tensor& { return F::celu_(x, 1.5); }, [](const Tensor& x) { return F::celu(x, 1.5); },
       "CeluBackward1"},
      {"hardtanh_", [](Tensor& x) -> Tensor& { return F::hardtanh_(x, -0.5, 1.5); },
       [](const Tensor& x) { return F::hardtanh(x, -0.5, 1.5); }, "HardtanhBackward0"},
      {"relu6_", [](Tensor& x) -> Tensor& { return F::relu6_(x); }, [](const Tensor& x) { return F::relu6(x); },
       "HardtanhBackward0"},
      {"threshold_", [](Tensor& x) -> Tensor& { return F::threshold_(x, 0.3, -1); },
       [](const Tensor& x) { return F::threshold(x, 0.3, -1); }, "MaskedFillBackward0"},
      {"rrelu_ in evaluation", [](Tensor& x) -> Tensor& { return F::rrelu_(x, 0.1, 0.3); },
       [](const Tensor& x) { return F::rrelu(x, 0.1, 0.3); }, "LeakyReluBackward1"},
      {"hardsigmoid_", [](Tensor& x) -> Tensor& { return F::hardsigmoid_(x); },
       [](const Tensor& x) { return F::hardsigmoid(x); }, "HardsigmoidBackward0"},
      {"hardswish_", [](Tensor& x) -> Tensor& { return F::hardswish_(x); },
       [](const Tensor& x) { return F::hardswish(x); }, "HardswishBackward0"},
      {"silu_", [](Tensor& x) -> Tensor& { return F::silu_(x); }, [](const Tensor& x) { return F::silu(x); },
       "SiluBackward0"},
      {"mish_", [](Tensor& x) -> Tensor& { return F::mish_(x); }, [](const Tensor& x) { return F::mish(x); },
       "MishBackward0"},
  };
  return table;
}

// Values on every side of the activations' pieces: -4 to 8 and the points where pieces meet.
Tensor awkward_input(td::DType dtype, Layout layout) {
  Tensor x = random_tensor({5, 9}, dtype, layout, -4, 8);
  const std::vector<double> edges = {-3, -0.5, 0, 0.3, 1.5, 3, 6, NAN};
  td::NoGradGuard no_grad;
  for (size_t i = 0; i < edges.size(); ++i) x.select(0, 1).select(0, static_cast<int64_t>(i)).fill_(edges[i]);
  return x;
}

}  // namespace

TEST_CASE("each in-place activation writes its out-of-place values into the tensor it returns", "[cpu]") {
  for (const InPlace& a : activations()) {
    for (td::DType dtype : {td::kFloat64, td::kFloat32, td::kBFloat16, td::kFloat16}) {
      for (Layout layout : td::testing::all_layouts()) {
        INFO(a.name << " " << dtype << " " << td::testing::layout_name(layout));
        Tensor x = awkward_input(dtype, layout);
        const Tensor expected = a.out_of_place(x);
        const auto strides = x.strides();
        const void* data = x.data_ptr();
        const uint32_t version = x.version();
        Tensor& returned = a.in_place(x);
        CHECK(&returned == &x);
        CHECK(x.data_ptr() == data);
        CHECK(x.strides() == strides);
        CHECK(x.version() > version);
        check_equal(x, values(expected));
      }
    }
  }
}

TEST_CASE("the in-place activations' gradients are the out-of-place ones, through a view too", "[cpu]") {
  for (const InPlace& a : activations()) {
    INFO(a.name);
    const Tensor x = awkward_input(td::kFloat64, Layout::Contiguous).requires_grad_(true);
    const Tensor w = random_tensor({5, 9}, td::kFloat64);
    td::autograd::backward({(a.out_of_place(x) * w).sum()});
    const Tensor expected = x.grad().clone();
    x.grad().zero_();

    Tensor y = x * 1;
    a.in_place(y);
    REQUIRE(y.grad_fn() != nullptr);
    CHECK(y.grad_fn()->name() == a.node);
    td::autograd::backward({(y * w).sum()});
    // The result-based formulas (elu's y + alpha) round differently from the input-based ones.
    check_close(x.grad(), expected, 1e-13, 1e-15, "whole");

    // Written through a view: the base takes the gradient, the view's elements through the activation.
    x.grad().zero_();
    Tensor base = x * 1;
    Tensor rows = base.narrow(0, 1, 3);
    a.in_place(rows);
    td::autograd::backward({(base * w).sum()});
    Tensor mixed = w.clone();
    mixed.narrow(0, 1, 3).copy_(expected.narrow(0, 1, 3));
    check_close(x.grad(), mixed, 1e-13, 1e-15, "view");
  }
}

TEST_CASE("the in-place activations keep PyTorch's refusals, and leave the tensor as it was", "[cpu]") {
  for (const InPlace& a : activations()) {
    INFO(a.name);
    Tensor leaf = random_tensor({3, 4}, td::kFloat64).requires_grad_(true);
    const Snapshot before(leaf);
    check_error([&] { a.in_place(leaf); }, {"leaf", "in-place"});
    before.check_unchanged(leaf);

    // A tensor a backward still needs (y * y keeps y) is refused at the backward, not silently used.
    const Tensor x = random_tensor({3, 4}, td::kFloat64).requires_grad_(true);
    Tensor y = x * 1;
    const Tensor square = y * y;
    a.in_place(y);
    check_error([&] { td::autograd::backward({square.sum()}); }, {"modified by an in-place operation"});
  }
  Tensor integers = td::tensor({1.0, -2.0}).to(td::kInt64);
  const Snapshot integers_before(integers);
  check_error([&] { F::elu_(integers); }, {"elu", "floating"});
  check_error([&] { F::hardswish_(integers); }, {"hardswish", "floating"});
  check_error([&] { F::threshold_(integers, 0, 1); }, {"threshold_", "floating"});
  check_error([&] { F::rrelu_(integers); }, {"rrelu", "floating"});
  integers_before.check_unchanged(integers);
  F::relu_(integers);  // relu_ takes integers, as PyTorch's
  check_equal(integers, {1, 0});

  Tensor bounds = random_tensor({3}, td::kFloat64);
  const Snapshot bounds_before(bounds);
  check_error([&] { F::hardtanh_(bounds, 1, -1); }, {"hardtanh", "min_val"});
  check_error([&] { F::celu_(bounds, 0); }, {"celu", "alpha"});
  check_error([&] { F::rrelu_(bounds, 0.4, 0.2, true); }, {"rrelu", "lower"});
  bounds_before.check_unchanged(bounds);
}

TEST_CASE("a negative slope or alpha in place has no gradient from the result: the backward says so", "[cpu]") {
  const Tensor x = td::tensor(std::vector<double>{-1.0, 2.0}, td::kFloat64).requires_grad_(true);
  Tensor y = x * 1;
  F::leaky_relu_(y, -0.1);
  check_equal(y, {0.1, 2.0});
  check_error([&] { td::autograd::backward({y.sum()}); }, {"LeakyReluBackward1", "negative slope", "out-of-place"});
  Tensor z = x * 1;
  F::elu_(z, -1);
  check_error([&] { td::autograd::backward({z.sum()}); }, {"EluBackward1", "negative alpha", "out-of-place"});
  // A slope of 0 is no ambiguity: relu's gradient.
  Tensor r = x * 1;
  F::leaky_relu_(r, 0);
  td::autograd::backward({r.sum()});
  check_equal(x.grad(), {0, 1});
  // Without a graph there is nothing to refuse.
  Tensor plain = td::tensor(std::vector<double>{-1.0, 2.0}, td::kFloat64);
  F::elu_(plain, -1);
  check_close(plain, {std::expm1(-1.0) * -1, 2.0}, 1e-15, 0);
}

TEST_CASE("the in-place dropouts and rrelu draw as their out-of-place forms, with the same gradients", "[cpu]") {
  struct RandomInPlace {
    const char* name;
    std::function<Tensor&(Tensor&, bool)> in_place;
    std::function<Tensor(const Tensor&, bool)> out_of_place;
    Shape shape;
  };
  const std::vector<RandomInPlace> table = {
      {"dropout_", [](Tensor& x, bool t) -> Tensor& { return F::dropout_(x, 0.3, t); },
       [](const Tensor& x, bool t) { return F::dropout(x, 0.3, t); }, {4, 3, 2, 5}},
      {"dropout1d_", [](Tensor& x, bool t) -> Tensor& { return F::dropout1d_(x, 0.3, t); },
       [](const Tensor& x, bool t) { return F::dropout1d(x, 0.3, t); }, {4, 3, 10}},
      {"dropout2d_", [](Tensor& x, bool t) -> Tensor& { return F::dropout2d_(x, 0.3, t); },
       [](const Tensor& x, bool t) { return F::dropout2d(x, 0.3, t); }, {4, 3, 2, 5}},
      {"dropout3d_", [](Tensor& x, bool t) -> Tensor& { return F::dropout3d_(x, 0.3, t); },
       [](const Tensor& x, bool t) { return F::dropout3d(x, 0.3, t); }, {4, 3, 2, 5, 6}},
      {"alpha_dropout_", [](Tensor& x, bool t) -> Tensor& { return F::alpha_dropout_(x, 0.3, t); },
       [](const Tensor& x, bool t) { return F::alpha_dropout(x, 0.3, t); }, {4, 3, 2, 5}},
      {"feature_alpha_dropout_", [](Tensor& x, bool t) -> Tensor& { return F::feature_alpha_dropout_(x, 0.3, t); },
       [](const Tensor& x, bool t) { return F::feature_alpha_dropout(x, 0.3, t); }, {4, 3, 2, 5}},
      {"rrelu_", [](Tensor& x, bool t) -> Tensor& { return F::rrelu_(x, 0.1, 0.3, t); },
       [](const Tensor& x, bool t) { return F::rrelu(x, 0.1, 0.3, t); }, {4, 3, 2, 5}},
  };
  for (const RandomInPlace& r : table) {
    INFO(r.name);
    const Tensor x = random_tensor(r.shape, td::kFloat64, Layout::Permuted).requires_grad_(true);
    const Tensor w = random_tensor(r.shape, td::kFloat64);
    td::manual_seed(11);
    const Tensor expected = r.out_of_place(x, true);
    td::autograd::backward({(expected * w).sum()});
    const Tensor expected_grad = x.grad().clone();
    x.grad().zero_();

    td::manual_seed(11);
    Tensor y = x * 1;
    CHECK(&r.in_place(y, true) == &y);
    check_equal(y, values(expected));
    td::autograd::backward({(y * w).sum()});
    check_equal(x.grad(), values(expected_grad));

    // Out of training nothing is written (rrelu's is leaky_relu with the mean slope).
    Tensor evaluated = x.detach().clone();
    const uint32_t version = evaluated.version();
    r.in_place(evaluated, false);
    check_equal(evaluated, values(r.out_of_place(x.detach(), false)));
    if (std::string(r.name) != "rrelu_") CHECK(evaluated.version() == version);

    Tensor leaf = x.detach().clone().requires_grad_(true);
    const Snapshot before(leaf);
    check_error([&] { r.in_place(leaf, true); }, {r.name, "leaf"});
    before.check_unchanged(leaf);
  }
  Tensor x = random_tensor({3, 4}, td::kFloat64);
  const Snapshot before(x);
  check_error([&] { F::dropout_(x, 1.5); }, {"dropout", "[0, 1]"});
  check_error([&] { F::dropout2d_(x, 0.5); }, {"dropout2d_", "3-D or 4-D"});
  before.check_unchanged(x);
  F::dropout_(x, 1);
  check_equal(x, std::vector<double>(12, 0.0));
}

TEST_CASE("a layer with inplace writes its input and prints as PyTorch's", "[cpu]") {
  Tensor x = random_tensor({2, 3}, td::kFloat64);
  const Tensor expected = F::elu(x, 0.5);
  const Tensor out = nn::ELU(0.5, true)(x);
  CHECK(out.is_same(x));
  check_equal(x, values(expected));
  Tensor kept = random_tensor({2, 3}, td::kFloat64);
  const Snapshot kept_before(kept);
  CHECK(!nn::ELU(0.5)(kept).is_same(kept));
  kept_before.check_unchanged(kept);

  CHECK(nn::ReLU(true)->str() == "ReLU(inplace=True)");
  CHECK(nn::ReLU()->str() == "ReLU()");
  CHECK(nn::LeakyReLU(0.2, true)->str() == "LeakyReLU(negative_slope=0.2, inplace=True)");
  CHECK(nn::ELU(1.0, true)->str() == "ELU(alpha=1.0, inplace=True)");
  CHECK(nn::SELU(true)->str() == "SELU(inplace=True)");
  CHECK(nn::CELU(1.0, true)->str() == "CELU(alpha=1.0, inplace=True)");
  CHECK(nn::Hardtanh(-1, 1, true)->str() == "Hardtanh(min_val=-1.0, max_val=1.0, inplace=True)");
  CHECK(nn::ReLU6(true)->str() == "ReLU6(inplace=True)");
  CHECK(nn::SiLU(true)->str() == "SiLU(inplace=True)");
  CHECK(nn::Mish(true)->str() == "Mish(inplace=True)");
  CHECK(nn::Hardswish(true)->str() == "Hardswish()");  // PyTorch prints neither's inplace
  CHECK(nn::Hardsigmoid(true)->str() == "Hardsigmoid()");
  CHECK(nn::RReLU(0.125, 0.25, true)->str() == "RReLU(lower=0.125, upper=0.25, inplace=True)");
  CHECK(nn::Threshold(0.1, 20, true)->str() == "Threshold(threshold=0.1, value=20.0, inplace=True)");
  CHECK(nn::Dropout(0.5, true)->str() == "Dropout(p=0.5, inplace=True)");
  CHECK(nn::Dropout(0.5)->str() == "Dropout(p=0.5, inplace=False)");
  CHECK(nn::AlphaDropout(0.2, true)->str() == "AlphaDropout(p=0.2, inplace=True)");
  CHECK(nn::Dropout2d(0.5, true)->str() == "Dropout2d(p=0.5, inplace=True)");

  // Every in-place layer writes its input; a clone keeps the setting.
  const std::vector<std::shared_ptr<nn::Module>> layers = {
      nn::ReLU(true).ptr(),       nn::LeakyReLU(0.2, true).ptr(), nn::ELU(1.0, true).ptr(),
      nn::SELU(true).ptr(),       nn::CELU(1.0, true).ptr(),      nn::Hardtanh(-1, 1, true).ptr(),
      nn::ReLU6(true).ptr(),      nn::SiLU(true).ptr(),           nn::Mish(true).ptr(),
      nn::Hardswish(true).ptr(),  nn::Hardsigmoid(true).ptr(),    nn::RReLU(0.1, 0.3, true).ptr(),
      nn::Threshold(0.1, 20, true).ptr(), nn::Dropout(0.5, true).ptr(), nn::AlphaDropout(0.5, true).ptr(),
      nn::FeatureAlphaDropout(0.5, true).ptr(), nn::Dropout1d(0.5, true).ptr(), nn::Dropout2d(0.5, true).ptr(),
      nn::Dropout3d(0.5, true).ptr()};
  for (const auto& layer : layers) {
    for (const auto& module : {layer, layer->clone()}) {
      INFO(module->str());
      const Shape shape = module->str().rfind("Dropout1d", 0) == 0 ? Shape{2, 3, 4} : Shape{2, 3, 2, 2};
      Tensor input = random_tensor(shape, td::kFloat64, Layout::Contiguous, 0.5, 2);
      const uint32_t version = input.version();
      CHECK(module->forward(input).is_same(input));
      CHECK(input.version() > version);
    }
  }
}

TEST_CASE("F names the activations that live in td", "[cpu]") {
  const Tensor x = random_tensor({4, 5}, td::kFloat64);
  check_equal(F::relu(x), values(td::relu(x)));
  check_equal(F::gelu(x, "tanh"), values(td::gelu(x, "tanh")));
  check_equal(F::silu(x), values(td::silu(x)));
  check_equal(F::sigmoid(x), values(td::sigmoid(x)));
  check_equal(F::tanh(x), values(td::tanh(x)));
  check_equal(F::softmax(x, 1), values(td::softmax(x, 1)));
  check_equal(F::log_softmax(x, 0), values(td::log_softmax(x, 0)));
}

TEST_CASE("in-place activations at their edges: 16-bit bounds, second derivatives at 0, overlapping tensors",
          "[cpu]") {
  // 0.7 is 0.69921875 in bfloat16: an input of 1 is clamped there, and still gets no gradient.
  for (td::DType dtype : {td::kBFloat16, td::kFloat16}) {
    INFO(dtype);
    const Tensor x = td::tensor(std::vector<double>{1.0, -1.0, 0.5}, td::kFloat64).to(dtype).requires_grad_(true);
    Tensor y = x * 1;
    F::hardtanh_(y, -0.7, 0.7);
    td::autograd::backward({y.sum()});
    check_equal(x.grad(), {0, 0, 1});
  }

  // elu_'s second derivative at exactly 0 is 0 (x < 0 is the exponential side), as elu's.
  for (const InPlace& a : activations()) {
    const std::string name = a.name;
    if (name != "elu_" && name != "selu_" && name != "celu_") continue;
    INFO(a.name);
    const Tensor x = td::tensor(std::vector<double>{0.0, -0.5, 0.5}, td::kFloat64).requires_grad_(true);
    const auto second = [&](bool in_place) {
      Tensor y = x * 1;
      if (in_place) {
        a.in_place(y);
      } else {
        y = a.out_of_place(y);
      }
      const Tensor g = td::autograd::grad({y.sum()}, {x}, {}, true, true)[0];
      return td::autograd::grad({g.sum()}, {x})[0];
    };
    check_close(second(true), values(second(false)), 1e-12, 1e-15);
  }

  // An expanded tensor cannot be written element by element: refused under the op's name, with no draw.
  Tensor expanded = td::ones({1, 3}, td::kFloat64).expand({4, 3});
  td::manual_seed(3);
  check_error([&] { F::dropout_(expanded, 0.5); }, {"dropout_", "single memory location"});
  check_error([&] { F::rrelu_(expanded, 0.1, 0.3, true); }, {"rrelu_", "single memory location"});
  check_error([&] { F::mish_(expanded); }, {"mish_", "single memory location"});
  const Tensor draw = td::rand({2}, td::kFloat64);
  td::manual_seed(3);
  check_equal(draw, values(td::rand({2}, td::kFloat64)));
}

TEST_CASE("a dropout that writes nothing takes a leaf that requires grad, as PyTorch's", "[cpu]") {
  Tensor leaf = random_tensor({4, 3, 5}, td::kFloat32).requires_grad_(true);
  const Snapshot before(leaf);
  CHECK(&F::dropout_(leaf, 0.5, false) == &leaf);
  F::dropout_(leaf, 0.0, true);
  F::dropout1d_(leaf, 0.5, false);
  F::alpha_dropout_(leaf, 0.5, false);
  F::feature_alpha_dropout_(leaf, 0.0, true);
  before.check_unchanged(leaf);
  // The input-gradient pattern: an evaluated model with an in-place dropout, differentiated in its input.
  auto model = nn::Sequential(nn::Dropout(0.5, true), nn::Linear(5, 1));
  model->eval();
  td::autograd::backward({model->forward(leaf).sum()});
  REQUIRE(leaf.grad().defined());
  CHECK(leaf.grad().sizes() == leaf.sizes());
}
