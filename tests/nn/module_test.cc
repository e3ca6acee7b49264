// td::nn::Module: the registered tree, names, printing as PyTorch prints (texts from PyTorch
// 2.15's repr()), moving, cloning, zeroing gradients, and state_dict round trips.
#include <cmath>
#include <limits>
#include <tuple>

#include "nn/optim/sgd.h"
#include "nn/serialize/module_io.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
using td::Tensor;
using td::testing::check_error;
using td::testing::values;

namespace {

// The CNN of the printing test, as a user would write it in LibTorch style.
struct NetImpl : nn::Cloneable<NetImpl> {
  NetImpl() { reset(); }
  void reset() override {
    features = register_module("features", nn::Sequential(nn::Conv2d(1, 10, 5), nn::BatchNorm2d(10), nn::ReLU(),
                                                          nn::MaxPool2d(2),
                                                          nn::Conv2d(nn::Conv2dOptions(10, 20, 3).stride(2).padding(1).bias(false)),
                                                          nn::GELU(), nn::AdaptiveAvgPool2d(td::Shape{1, 1})));
    head = register_module("head", nn::Sequential(nn::Flatten(), nn::Dropout(0.25), nn::Linear(20, 10),
                                                  nn::LogSoftmax(1)));
  }
  Tensor forward(const Tensor& x) override { return head(features(x)); }
  nn::Sequential features{nullptr}, head{nullptr};
};
struct Net : nn::ModuleHolder<NetImpl> {
  using ModuleHolder::ModuleHolder;
};

// A clone of `net`, checked to leave the random stream where it was: the clone's reset() draws
// initial values that the copy then overwrites.
template <typename Impl>
std::shared_ptr<Impl> clone_without_draws(const std::shared_ptr<Impl>& net) {
  td::manual_seed(9);
  const Tensor expected = td::rand({4});
  td::manual_seed(9);
  auto copy = std::dynamic_pointer_cast<Impl>(net->clone());
  td::testing::check_close(td::rand({4}), expected, 0, 0, "the stream after a clone");
  REQUIRE(copy != nullptr);
  return copy;
}

}  // namespace

TEST_CASE("modules print exactly as PyTorch prints them", "[cpu]") {
  CHECK(nn::Linear(100, 1)->str() == "Linear(in_features=100, out_features=1, bias=True)");
  CHECK(Net()->str() ==
        "Net(\n"
        "  (features): Sequential(\n"
        "    (0): Conv2d(1, 10, kernel_size=(5, 5), stride=(1, 1))\n"
        "    (1): BatchNorm2d(10, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)\n"
        "    (2): ReLU()\n"
        "    (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "    (4): Conv2d(10, 20, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)\n"
        "    (5): GELU(approximate='none')\n"
        "    (6): AdaptiveAvgPool2d(output_size=(1, 1))\n"
        "  )\n"
        "  (head): Sequential(\n"
        "    (0): Flatten(start_dim=1, end_dim=-1)\n"
        "    (1): Dropout(p=0.25, inplace=False)\n"
        "    (2): Linear(in_features=20, out_features=10, bias=True)\n"
        "    (3): LogSoftmax(dim=1)\n"
        "  )\n"
        ")");
  CHECK(nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 256), nn::Tanh(), nn::Linear(256, 10))->str() ==
        "Sequential(\n"
        "  (0): Linear(in_features=784, out_features=256, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Linear(in_features=256, out_features=256, bias=True)\n"
        "  (3): Tanh()\n"
        "  (4): Linear(in_features=256, out_features=10, bias=True)\n"
        ")");
  CHECK(nn::LayerNorm(nn::LayerNormOptions({10}))->str() == "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)");
  CHECK(nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(0))->str() == "Embedding(10, 3, padding_idx=0)");
  CHECK(nn::BatchNorm1d(nn::BatchNormOptions(5).momentum(std::nullopt))->str() ==
        "BatchNorm1d(5, eps=1e-05, momentum=None, affine=True, bias=True, track_running_stats=True)");
  CHECK(nn::AvgPool2d(3, 2, 1)->str() == "AvgPool2d(kernel_size=3, stride=2, padding=1)");
  CHECK(nn::SiLU()->str() == "SiLU()");
  CHECK(nn::Softmax(-1)->str() == "Softmax(dim=-1)");
  CHECK(nn::CrossEntropyLoss()->str() == "CrossEntropyLoss()");
  CHECK(nn::MSELoss()->str() == "MSELoss()");
  CHECK(nn::Conv2d(nn::Conv2dOptions(3, 6, {3, 5}).dilation(2).groups(3))->str() ==
        "Conv2d(3, 6, kernel_size=(3, 5), stride=(1, 1), dilation=(2, 2), groups=3)");
  CHECK(nn::GELU("tanh")->str() == "GELU(approximate='tanh')");
  CHECK(nn::LeakyReLU()->str() == "LeakyReLU(negative_slope=0.01)");
  CHECK(nn::Identity()->str() == "Identity()");
  CHECK(nn::ELU()->str() == "ELU(alpha=1.0)");
  CHECK(nn::ELU(0.5)->str() == "ELU(alpha=0.5)");
  CHECK(nn::SELU()->str() == "SELU()");
  CHECK(nn::CELU(2)->str() == "CELU(alpha=2.0)");
  CHECK(nn::Softplus()->str() == "Softplus(beta=1.0, threshold=20.0)");
  CHECK(nn::Softplus(2, 10)->str() == "Softplus(beta=2.0, threshold=10.0)");
  CHECK(nn::Unflatten(1, std::vector<int64_t>{2, 3})->str() == "Unflatten(dim=1, unflattened_size=(2, 3))");
  CHECK(nn::Unflatten(-1, std::vector<int64_t>{4})->str() == "Unflatten(dim=-1, unflattened_size=(4,))");
  CHECK(nn::LeakyReLU(0.2)->str() == "LeakyReLU(negative_slope=0.2)");
  CHECK(nn::Dropout()->str() == "Dropout(p=0.5, inplace=False)");
  CHECK(nn::MaxPool2d(td::Shape{2, 3})->str() ==
        "MaxPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1, ceil_mode=False)");
  nn::ModuleList list;
  list->push_back(nn::Linear(2, 2));
  list->push_back(nn::ReLU());
  CHECK(list->str() == "ModuleList(\n  (0): Linear(in_features=2, out_features=2, bias=True)\n  (1): ReLU()\n)");
  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(2, 3));
  dict->insert("act", nn::Sigmoid());
  CHECK(dict->str() == "ModuleDict(\n  (enc): Linear(in_features=2, out_features=3, bias=True)\n  (act): Sigmoid()\n)");
  std::ostringstream out;
  out << nn::ReLU();
  CHECK(out.str() == "ReLU()");
  // Without affine parameters there is no bias, and PyTorch says so; floats as Python's repr().
  CHECK(nn::BatchNorm2d(nn::BatchNormOptions(3).affine(false))->str() ==
        "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=True)");
  CHECK(nn::LayerNorm(nn::LayerNormOptions({4}).elementwise_affine(false).eps(1e6))->str() ==
        "LayerNorm((4,), eps=1000000.0, elementwise_affine=False, bias=False)");
  CHECK(nn::BatchNorm1d(nn::BatchNormOptions(3).momentum(1.0 / 3))->str() ==
        "BatchNorm1d(3, eps=1e-05, momentum=0.3333333333333333, affine=True, bias=True, track_running_stats=True)");
  CHECK(nn::Dropout(1.0 / 3)->str() == "Dropout(p=0.3333333333333333, inplace=False)");
}

TEST_CASE("python_float spells a float as Python's repr() does", "[cpu]") {
  // The texts are Python 3's repr() of each value.
  const std::vector<std::pair<double, std::string>> cases{
      {1e-5, "1e-05"}, {0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"}, {1e6, "1000000.0"}, {1e16, "1e+16"},
      {1e15, "1000000000000000.0"}, {123456789012345678.0, "1.2345678901234568e+17"}, {0.0001, "0.0001"},
      {0.00012, "0.00012"}, {-2.5e-7, "-2.5e-07"}, {1.0, "1.0"}, {0.0, "0.0"}, {-0.0, "-0.0"}, {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"}, {100.0, "100.0"}, {12345.678, "12345.678"},
      {std::numeric_limits<double>::infinity(), "inf"}, {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::nan(""), "nan"}};
  for (const auto& [v, text] : cases) CHECK(nn::python_float(v) == text);
}

TEST_CASE("parameters and buffers come in registration order under dotted names", "[cpu]") {
  Net net;
  auto names = net->named_parameters();
  std::vector<std::string> keys;
  for (auto& [k, v] : names) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"features.0.weight", "features.0.bias", "features.1.weight",
                                         "features.1.bias", "features.4.weight", "head.2.weight", "head.2.bias"});
  for (const Tensor& p : net->parameters()) {
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
  }
  auto buffers = net->named_buffers();
  REQUIRE(buffers.size() == 3);
  CHECK(buffers[0].first == "features.1.running_mean");
  CHECK(buffers[2].first == "features.1.num_batches_tracked");
  CHECK(net->children().size() == 2);
  CHECK(net->modules().size() == 1 + 2 + 7 + 4);
  CHECK(net->named_modules()[1].first == "features");
  CHECK(net->named_modules()[2].first == "features.0");
  CHECK(net->parameters(false).empty());
  // state_dict() in PyTorch's order: each module's parameters and buffers before the next module's.
  CHECK(net->state_dict().keys() ==
        std::vector<std::string>{"features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias",
                                 "features.1.running_mean", "features.1.running_var",
                                 "features.1.num_batches_tracked", "features.4.weight", "head.2.weight",
                                 "head.2.bias"});
}

TEST_CASE("a model runs forward and backward, and zero_grad clears the gradients", "[cpu]") {
  td::manual_seed(0);
  Net net;
  Tensor x = td::randn({4, 1, 28, 28});
  Tensor out = net(x);
  CHECK(out.sizes() == td::Shape{4, 10});
  out.sum().backward();
  for (const Tensor& p : net->parameters()) CHECK(p.grad().defined());
  net->zero_grad(false);
  for (const Tensor& p : net->parameters()) CHECK(td::amax(p.grad().abs()).item<float>() == 0);
  net->zero_grad();
  for (const Tensor& p : net->parameters()) CHECK(!p.grad().defined());
}

TEST_CASE("train and eval reach every submodule", "[cpu]") {
  Net net;
  CHECK(net->is_training());
  net->eval();
  for (auto& m : net->modules()) CHECK(!m->is_training());
  net->train();
  for (auto& m : net->modules()) CHECK(m->is_training());
}

TEST_CASE("to() moves and converts parameters in place, keeping their identity", "[cpu]") {
  nn::Linear fc(3, 2);
  Tensor w = fc->weight;
  std::vector<double> before = values(w);
  fc->to(td::Device("cpu:1"), td::kFloat64);
  CHECK(w.device() == td::Device("cpu:1"));  // the same handle sees the move
  CHECK(w.dtype() == td::kFloat64);
  CHECK(fc->parameters()[0].is_same(w));
  CHECK(values(w) == before);
  CHECK(w.requires_grad());
  nn::BatchNorm1d bn(nn::BatchNormOptions(3));
  bn->to(td::kFloat64);
  CHECK(bn->running_mean.dtype() == td::kFloat64);
  CHECK(bn->num_batches_tracked.dtype() == td::kInt64);  // integer buffers keep their dtype
  // A dtype alone leaves every tensor on its device, also in a module without parameters.
  nn::BatchNorm1d plain(nn::BatchNormOptions(3).affine(false));
  plain->to(td::Device("cpu:1"));
  plain->to(td::kFloat64);
  CHECK(plain->running_mean.device() == td::Device("cpu:1"));
  CHECK(plain->running_mean.dtype() == td::kFloat64);
  check_error([&] { fc->to(td::kInt64); }, {"Linear.to", "floating", "int64"});
  check_error([&] { fc->to(td::Device("cpu:0"), td::kInt32); }, {"Linear.to", "int32"});
  CHECK(w.dtype() == td::kFloat64);
  CHECK(w.device() == td::Device("cpu:1"));
}

TEST_CASE("a module used in two places (tied weights) lists its tensors once and trains once", "[cpu]") {
  td::manual_seed(5);
  nn::Linear shared(3, 3);
  nn::Sequential tied(shared, nn::Tanh(), shared);
  CHECK(tied->parameters().size() == 2);  // as PyTorch's parameters(): each tensor once
  CHECK(tied->named_parameters()[0].first == "0.weight");
  CHECK(tied->modules().size() == 3);     // the Sequential, the Linear once, the Tanh
  CHECK(tied->state_dict().size() == 4);  // every name, as PyTorch's state_dict()
  td::optim::SGD opt(tied->parameters(), 0.1);  // two places were one tensor listed twice: refused
  Tensor x = td::randn({4, 3});
  Tensor w = shared->weight.detach().clone(), b = shared->bias.detach().clone();
  tied(x).sum().backward();
  opt.step();
  // The reference: the same function written with one weight used twice.
  Tensor rw = w.clone().requires_grad_(), rb = b.clone().requires_grad_();
  nn::functional::linear(td::tanh(nn::functional::linear(x, rw, rb)), rw, rb).sum().backward();
  td::testing::check_close(shared->weight, (w - 0.1 * rw.grad()), 1e-6, 1e-6, "tied weight after a step");
  // A clone keeps the sharing: one Linear in the copy too.
  auto copy = tied->clone();
  CHECK(copy->parameters().size() == 2);
  CHECK(copy->modules().size() == 3);
  CHECK_FALSE(copy->parameters()[0].is_alias_of(shared->weight));
  // Also in two containers nested in the one cloned.
  nn::Sequential nested(nn::Sequential(shared), nn::Sequential(shared, nn::Tanh()));
  CHECK(nested->parameters().size() == 2);
  CHECK(nested->clone()->parameters().size() == 2);
  // children() and apply() take a shared module once, as PyTorch's do; forward still runs it twice.
  CHECK(tied->children().size() == 2);
  int visits = 0;
  tied->apply([&](nn::Module& m) { visits += m.name() == "Linear"; });
  CHECK(visits == 1);
  CHECK(tied->size() == 3);
}

TEST_CASE("clone makes an independent deep copy with the same values", "[cpu]") {
  Net net;
  auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
  REQUIRE(copy != nullptr);
  auto a = net->named_parameters(), b = copy->named_parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(values(a[i].second) == values(b[i].second));
    CHECK(!a[i].second.is_alias_of(b[i].second));
  }
  {
    td::NoGradGuard no_grad;
    copy->head->named_parameters()[0].second.fill_(0);
  }
  CHECK(td::amax(net->named_parameters()[5].second.abs()).item<float>() > 0);
  CHECK(copy->str() == net->str());
  check_error([] { nn::Module plain; plain.clone(); }, {"clone", "Cloneable"});
  clone_without_draws(net.ptr());
}

namespace {

// A module with a setting of its own, listed in settings() for clones and replicas to take.
struct ScaledImpl : nn::Cloneable<ScaledImpl> {
  ScaledImpl() { reset(); }
  Tensor forward(const Tensor& x) override { return x * scale; }
  double scale = 1.0;
  auto settings() { return std::tie(scale); }
};

// settings() in two overloads: a clone reads its original through the const one.
struct TwoWaySettingsImpl : nn::Cloneable<TwoWaySettingsImpl> {
  TwoWaySettingsImpl() { reset(); }
  double scale = 1.0;
  mutable int const_reads = 0;
  auto settings() { return std::tie(scale); }
  auto settings() const {
    ++const_reads;
    return std::tie(scale);
  }
};

// Submodules whose settings can change after reset() made them.
struct SettingsImpl : nn::Cloneable<SettingsImpl> {
  SettingsImpl() { reset(); }
  void reset() override {
    drop = register_module("drop", nn::Dropout(0.5));
    embed = register_module("embed", nn::Embedding(10, 4));
    norm = register_module("norm", nn::LocalResponseNorm(2));
    loss = register_module("loss", nn::SmoothL1Loss());
    scaled = register_module("scaled", std::make_shared<ScaledImpl>());
    unpool = register_module("unpool", nn::MaxUnpool2d(2));
  }
  Tensor forward(const Tensor& tokens) override {
    const Tensor h = scaled->forward(drop(embed(tokens)));
    return loss(norm(h.unsqueeze(0)).squeeze(0), td::zeros_like(h));
  }
  nn::Dropout drop{nullptr};
  nn::Embedding embed{nullptr};
  nn::LocalResponseNorm norm{nullptr};
  nn::SmoothL1Loss loss{nullptr};
  std::shared_ptr<ScaledImpl> scaled;
  nn::MaxUnpool2d unpool{nullptr};
};

// Submodules that reset() registers in an order of its member's choosing, so that a clone's
// order can differ from its original's.
struct ReorderedImpl : nn::Cloneable<ReorderedImpl> {
  ReorderedImpl() { reset(); }
  void reset() override {
    if (second_first) second = register_module("second", nn::Dropout(0.5));
    first = register_module("first", nn::Dropout(0.5));
    if (!second_first) second = register_module("second", nn::Dropout(0.5));
  }
  bool second_first = false;
  nn::Dropout first{nullptr}, second{nullptr};
};

// A parent whose reset() makes a lazy child: the child takes its sizes from the first input.
struct LazyParentImpl : nn::Cloneable<LazyParentImpl> {
  LazyParentImpl() { reset(); }
  void reset() override {
    fc = register_module("fc", nn::LazyLinear(3));
    norm = register_module("norm", nn::LazyBatchNorm1d());
    bare = register_module("bare", nn::LazyInstanceNorm1d());  // no tensors: its size is all it learns
  }
  Tensor forward(const Tensor& x) override {
    const Tensor h = norm(fc(x));
    return h + bare(h.unsqueeze(0)).squeeze(0);
  }
  nn::LazyLinear fc{nullptr};
  nn::LazyBatchNorm1d norm{nullptr};
  nn::LazyInstanceNorm1d bare{nullptr};
};

}  // namespace

TEST_CASE("a clone takes the settings its original's submodules have now, a module's own settings() too", "[cpu]") {
  auto net = std::make_shared<SettingsImpl>();
  net->drop->p = 0.0;
  net->embed->options.max_norm(1.0);
  net->norm->alpha = 0.5;
  net->loss->beta = 0.25;
  net->scaled->scale = 3.0;
  net->unpool->kernel_size = {3, 3};
  net->unpool->stride = {3, 3};
  auto copy = clone_without_draws(net);
  CHECK(copy->drop->p == 0.0);
  CHECK(copy->embed->options.max_norm_ == std::optional<double>(1.0));
  CHECK(copy->norm->alpha == 0.5);
  CHECK(copy->loss->beta == 0.25);
  CHECK(copy->scaled->scale == 3.0);
  CHECK(copy->unpool->kernel_size == std::vector<int64_t>{3, 3});
  CHECK(copy->unpool->stride == std::vector<int64_t>{3, 3});
  CHECK(copy->str() == net->str());
  CHECK_FALSE(copy->embed->weight.is_same(net->embed->weight));  // still tensors of its own
  const Tensor tokens = td::tensor(std::vector<int64_t>{1, 3, 3, 7});
  td::testing::check_close(copy->forward(tokens), net->forward(tokens), 0, 0, "the clone's loss");
  // A clone's settings are its own from then on.
  copy->drop->p = 0.3;
  CHECK(net->drop->p == 0.0);
  // Where settings() has a const overload too, the original is read through it.
  auto two_way = std::make_shared<TwoWaySettingsImpl>();
  two_way->scale = 4.0;
  auto two_way_copy = std::dynamic_pointer_cast<TwoWaySettingsImpl>(two_way->clone());
  REQUIRE(two_way_copy != nullptr);
  CHECK(two_way_copy->scale == 4.0);
  CHECK(two_way->const_reads == 1);
}

TEST_CASE("a clone's submodules take the settings of the original's of the same name, wherever reset() puts them",
          "[cpu]") {
  auto net = std::make_shared<ReorderedImpl>();
  net->first->p = 0.25;
  net->second->p = 0.75;
  net->second->eval();
  net->second_first = true;  // the clone's reset() registers "second" first
  auto copy = std::dynamic_pointer_cast<ReorderedImpl>(net->clone());
  REQUIRE(copy != nullptr);
  REQUIRE(copy->named_children().front().first == "second");
  CHECK(copy->first->p == 0.25);
  CHECK(copy->second->p == 0.75);
  CHECK(copy->first->is_training());
  CHECK_FALSE(copy->second->is_training());
}

TEST_CASE("a module whose reset() makes a lazy child clones once the child has its sizes", "[cpu]") {
  td::manual_seed(4);
  auto net = std::make_shared<LazyParentImpl>();
  const Tensor x = td::randn({6, 5});
  const Tensor y = net->forward(x);  // fc takes in_features 5, norm 3 features
  net->eval();
  auto copy = clone_without_draws(net);
  CHECK_FALSE(copy->fc->has_uninitialized_params());
  CHECK_FALSE(copy->norm->has_uninitialized_params());
  CHECK_FALSE(copy->bare->has_uninitialized_params());
  CHECK(copy->fc->options.in_features_ == 5);
  CHECK(copy->bare->options.num_features_ == 6);
  CHECK(copy->str() == net->str());
  CHECK_FALSE(copy->fc->weight.is_same(net->fc->weight));
  td::testing::check_close(copy->fc->weight, net->fc->weight, 0, 0, "the clone's weight");
  td::testing::check_close(copy->norm->running_mean, net->norm->running_mean, 0, 0, "the clone's running mean");
  td::testing::check_close(copy->forward(x), net->forward(x), 0, 0, "the clone's output");
  // Still lazy, the child stays lazy in a clone, and takes its sizes from its own first input.
  auto fresh = std::make_shared<LazyParentImpl>();
  auto lazy_copy = std::dynamic_pointer_cast<LazyParentImpl>(fresh->clone());
  REQUIRE(lazy_copy != nullptr);
  CHECK(lazy_copy->fc->has_uninitialized_params());
  CHECK(lazy_copy->forward(td::randn({2, 7})).sizes() == td::Shape{2, 3});
  CHECK(fresh->fc->has_uninitialized_params());
}

TEST_CASE("clone keeps each module's own train or eval mode, as PyTorch's deepcopy does", "[cpu]") {
  // A model training with a frozen BatchNorm: the copy's BatchNorm stays in eval (it would use
  // batch statistics and overwrite its running ones), also through the containers.
  Net net;
  net->train();
  (*net->features)[1]->eval();
  (*net->head)[1]->eval();
  auto copy = net->clone();
  auto original_modules = net->modules(), copied_modules = copy->modules();
  REQUIRE(original_modules.size() == copied_modules.size());
  for (size_t i = 0; i < original_modules.size(); ++i) {
    INFO(original_modules[i]->name());
    CHECK(copied_modules[i]->is_training() == original_modules[i]->is_training());
  }
  CHECK(copy->is_training());
  CHECK_FALSE((*std::dynamic_pointer_cast<NetImpl>(copy)->features)[1]->is_training());
  nn::Sequential seq(nn::Linear(2, 2), nn::BatchNorm1d(2), nn::Dropout(0.5));
  seq->eval();
  (*seq)[2]->train();
  nn::ModuleList list;
  list->push_back(seq);
  nn::ModuleDict dict;
  dict->insert("seq", seq);
  for (const auto& cloned : {seq->clone(), list->clone(), dict->clone()}) {
    auto modes = cloned->modules();
    REQUIRE(modes.size() >= 4);
    CHECK_FALSE(modes[modes.size() - 2]->is_training());  // the BatchNorm
    CHECK(modes.back()->is_training());                   // the Dropout
  }
}

TEST_CASE("a clone of a parameter-free layer is of the layer's own type", "[cpu]") {
  auto same_type = []<typename Impl>(const std::shared_ptr<Impl>& layer) {
    INFO(layer->name());
    auto copy = std::dynamic_pointer_cast<Impl>(layer->clone());
    REQUIRE(copy != nullptr);
    CHECK(copy->str() == layer->str());
    CHECK(copy.get() != layer.get());
  };
  same_type(nn::ReLU().ptr());
  same_type(nn::GELU("tanh").ptr());
  same_type(nn::LeakyReLU(0.2).ptr());
  same_type(nn::Identity().ptr());
  same_type(nn::ELU(0.5).ptr());
  same_type(nn::SELU().ptr());
  same_type(nn::CELU(2).ptr());
  same_type(nn::Softplus(2, 10).ptr());
  same_type(nn::Unflatten(1, std::vector<int64_t>{2, 3}).ptr());
  same_type(nn::SiLU().ptr());
  same_type(nn::Tanh().ptr());
  same_type(nn::Sigmoid().ptr());
  same_type(nn::Softmax(1).ptr());
  same_type(nn::LogSoftmax(1).ptr());
  same_type(nn::Flatten().ptr());
  same_type(nn::MaxPool2d(2).ptr());
  same_type(nn::AvgPool2d(2).ptr());
  same_type(nn::AdaptiveAvgPool2d(td::Shape{1, 1}).ptr());
  // Inside a container too, and the copy computes what the original does.
  nn::Sequential seq(nn::MaxPool2d(2), nn::Flatten());
  auto copy = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  REQUIRE(copy != nullptr);
  CHECK(std::dynamic_pointer_cast<nn::MaxPool2dImpl>((*copy)[0]) != nullptr);
  Tensor x = td::randn({2, 1, 4, 4});
  CHECK(values(copy->forward(x)) == values(seq(x)));
}

TEST_CASE("ModuleDict insert of a key already present replaces its module in place, as LibTorch's does", "[cpu]") {
  nn::ModuleDict dict;
  dict->insert("enc", nn::Linear(2, 3));
  dict->insert("act", nn::ReLU());
  dict->insert("enc", nn::Linear(2, 4));
  CHECK(dict->size() == 2);
  CHECK(dict->keys() == std::vector<std::string>{"enc", "act"});
  CHECK(dict->str() == "ModuleDict(\n  (enc): Linear(in_features=2, out_features=4, bias=True)\n  (act): ReLU()\n)");
  CHECK(dict->named_parameters()[0].second.sizes() == td::Shape{4, 2});
}

TEST_CASE("clone keeps dtypes and devices, and clone(device) moves the copy", "[cpu]") {
  Net net;
  net->to(td::Device("cpu:1"), td::kFloat64);
  auto same = net->clone();
  auto moved = net->clone(td::Device("cpu:2"));
  auto original = net->named_parameters();
  for (size_t i = 0; i < original.size(); ++i) {
    const td::Tensor a = same->named_parameters()[i].second;
    const td::Tensor b = moved->named_parameters()[i].second;
    CHECK(a.dtype() == td::kFloat64);
    CHECK(a.device() == td::Device("cpu:1"));
    CHECK(b.dtype() == td::kFloat64);
    CHECK(b.device() == td::Device("cpu:2"));
    CHECK(values(a) == values(original[i].second));  // float64 values, not rounded through float32
    CHECK(values(b) == values(original[i].second));
  }
}

TEST_CASE("state_dict round-trips into a fresh model and reports mismatches by name", "[cpu]") {
  td::manual_seed(1);
  Net a;
  td::manual_seed(2);
  Net b;
  td::StateDict state = a->state_dict();
  CHECK(state.size() == 7 + 3);
  CHECK(state.keys().front() == "features.0.weight");
  auto result = b->load_state_dict(state);
  CHECK(result.missing_keys.empty());
  CHECK(result.unexpected_keys.empty());
  for (const auto& [name, t] : a->state_dict()) CHECK(values(t) == values(b->state_dict().at(name)));

  td::StateDict partial;
  partial.insert("head.2.bias", td::zeros({10}));
  partial.insert("extra.weight", td::zeros({1}));
  // A strict load that fails changes nothing (a copy: state_dict() shares the module's tensors).
  td::StateDict before_copy;
  for (const auto& [name, t] : b->state_dict()) before_copy.insert(name, t.clone());
  check_error([&] { b->load_state_dict(partial); }, {"missing keys", "features.0.weight", "unexpected keys", "extra.weight"});
  for (const auto& [name, t] : before_copy) {
    INFO(name);
    CHECK(values(b->state_dict().at(name)) == values(t));
  }
  auto loose = b->load_state_dict(partial, false);
  CHECK(loose.unexpected_keys == std::vector<std::string>{"extra.weight"});
  CHECK(loose.missing_keys.size() == 9);
  CHECK(td::amax(b->state_dict().at("head.2.bias").abs()).item<float>() == 0);

  td::StateDict wrong = a->state_dict();
  td::StateDict reshaped;
  for (const auto& [name, t] : wrong) reshaped.insert(name, name == "head.2.weight" ? td::zeros({10, 21}) : t);
  std::vector<double> kept = values(b->state_dict().at("features.0.weight"));
  check_error([&] { b->load_state_dict(reshaped); }, {"shape mismatch", "head.2.weight", "[10, 21]", "[10, 20]"});
  CHECK(values(b->state_dict().at("features.0.weight")) == kept);  // nothing written on failure
}

TEST_CASE("registration rejects bad names and duplicates", "[cpu]") {
  nn::Module m;
  m.register_parameter("w", td::zeros({2}));
  check_error([&] { m.register_parameter("w", td::zeros({2})); }, {"already registered"});
  check_error([&] { m.register_buffer("a.b", td::zeros({2})); }, {"invalid name", "a.b"});
  check_error([&] { m.forward(td::zeros({1})); }, {"no one-tensor forward"});
  CHECK(m.name() == "Module");
}

TEST_CASE("a leaf registered as a parameter is shared: tied weights get one gradient and one update", "[cpu]") {
  struct Tied : nn::Module {
    Tied() {
      encoder = register_module("encoder", nn::Linear(nn::LinearOptions(3, 2).bias(false)));
      decoder_weight = register_parameter("decoder_weight", encoder->weight);  // the encoder's own weight
    }
    Tensor forward(const Tensor& x) override { return td::matmul(encoder(x), decoder_weight); }
    nn::Linear encoder{nullptr};
    Tensor decoder_weight;
  };
  auto tied = std::make_shared<Tied>();
  CHECK(tied->decoder_weight.impl_ptr() == tied->encoder->weight.impl_ptr());
  CHECK(tied->parameters().size() == 1);
  const Tensor x = td::tensor({{1.0, -2.0, 0.5}});
  tied->forward(x).sum().backward();
  // d/dW sum(x W^T W) = W (x^T 1) + ... : both uses reach the one gradient; compare with an
  // untied copy whose two gradients are added.
  const Tensor w = tied->encoder->weight.detach().clone();
  Tensor a = w.clone().requires_grad_(), b = w.clone().requires_grad_();
  td::matmul(td::matmul(x, a.t()), b).sum().backward();
  td::testing::check_close(tied->encoder->weight.grad(), a.grad() + b.grad(), 1e-6, 1e-6);
  td::optim::SGD sgd(tied->parameters(), 0.1);
  sgd.step();
  td::testing::check_close(tied->decoder_weight.detach(), w - 0.1 * (a.grad() + b.grad()), 1e-6, 1e-6);
  // A computed tensor becomes a new leaf on its data.
  nn::Module m;
  Tensor base = td::ones({2}).requires_grad_();
  Tensor computed = base * 1.0;
  Tensor& p = m.register_parameter("p", computed);
  CHECK(p.is_leaf());
  CHECK(p.requires_grad());
  CHECK(p.impl_ptr() != computed.impl_ptr());
  // requires_grad = false clears the flag of the tensor registered.
  Tensor frozen = td::ones({2}).requires_grad_();
  m.register_parameter("frozen", frozen, false);
  CHECK_FALSE(frozen.requires_grad());
}

TEST_CASE("a buffer keeps the requires_grad of a leaf, through clone and to(), and gets its gradient", "[cpu]") {
  struct ScaleImpl : nn::Cloneable<ScaleImpl> {
    ScaleImpl() { reset(); }
    void reset() override {
      scale = register_buffer("scale", td::tensor({2.0, -1.0, 0.5}).requires_grad_());
      shift = register_buffer("shift", td::tensor({1.0, 1.0, 1.0}));
    }
    Tensor forward(const Tensor& x) override { return x * scale + shift; }
    Tensor scale, shift;
  };
  auto m = std::make_shared<ScaleImpl>();
  CHECK(m->scale.requires_grad());
  CHECK_FALSE(m->shift.requires_grad());
  CHECK(m->parameters().empty());  // still a buffer, which optimizers do not step
  auto copy = std::dynamic_pointer_cast<ScaleImpl>(m->clone());
  REQUIRE(copy != nullptr);
  CHECK(copy->scale.requires_grad());
  CHECK_FALSE(copy->shift.requires_grad());
  m->to(td::kFloat64);
  CHECK(m->scale.requires_grad());
  const Tensor x = td::tensor({{1.0, 2.0, 3.0}, {-1.0, 0.0, 4.0}}, td::kFloat64);
  m->forward(x).sum().backward();
  td::testing::check_close(m->scale.grad(), td::tensor({0.0, 2.0, 7.0}, td::kFloat64), 0, 0, "scale's gradient");
  CHECK_FALSE(m->shift.grad().defined());
  // A leaf that requires grad is registered itself: its gradient is the caller's.
  nn::Module holder;
  Tensor mine = td::ones({2}).requires_grad_();
  Tensor& trainable = holder.register_buffer("b", mine);
  CHECK(trainable.impl_ptr() == mine.impl_ptr());
  (trainable * 3.0).sum().backward();
  td::testing::check_close(mine.grad(), td::full({2}, 3.0), 0, 0, "the caller's gradient");
  // Any other tensor is one of the module's own: moving the module leaves the caller's where it was.
  Tensor plain = td::ones({2});
  holder.register_buffer("p", plain);
  holder.to(td::kFloat64);
  CHECK(plain.dtype() == td::kFloat32);
  // A computed tensor is detached: a buffer does not carry its graph.
  Tensor& computed = holder.register_buffer("c", mine * 2.0);
  CHECK(computed.is_leaf());
  CHECK_FALSE(computed.requires_grad());
}

TEST_CASE("replace_module swaps a submodule everywhere: forward, indexing, parameters and state_dict", "[cpu]") {
  nn::Sequential seq(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  const Tensor x = td::tensor({{-1.0, 0.5, 2.0}});
  nn::Linear wider(4, 2);
  seq->replace_module("1", nn::Tanh().ptr());
  seq->replace_module("2", wider.ptr());
  CHECK((*seq)[1]->name() == "Tanh");
  CHECK((*seq)[2] == wider.ptr());
  CHECK(seq->size() == 3);
  const std::vector<Tensor> params = seq->parameters();
  REQUIRE(params.size() == 4);
  CHECK(params[2].is_same(wider->weight));
  CHECK(values(seq->state_dict().at("2.weight")) == values(wider->weight));
  auto first = std::static_pointer_cast<nn::LinearImpl>((*seq)[0]);
  CHECK(values(seq(x)) == values(wider(td::tanh(first->forward(x)))));

  nn::ModuleList list;
  list->push_back(nn::ReLU());
  list->push_back(nn::Linear(2, 2));
  list->replace_module("0", nn::GELU().ptr());
  CHECK((*list)[0]->name() == "GELU");
  CHECK((*list->begin())->name() == "GELU");

  // A null module or an unknown name is an error that leaves the container as it was.
  check_error([&] { seq->replace_module("1", nullptr); }, {"replace_module: the module given for '1' is null"});
  check_error([&] { seq->replace_module("7", nn::ReLU().ptr()); }, {"replace_module: no submodule named '7'"});
  CHECK((*seq)[1]->name() == "Tanh");
  CHECK(seq->children().size() == 3);
}

TEST_CASE("td::save and td::load round-trip a module through a safetensors file", "[cpu]") {
  td::manual_seed(5);
  Net a;
  td::manual_seed(6);
  Net b;
  std::string path = td::testing::scratch_dir("module_test") + "/net.safetensors";
  td::save(*a, path);
  auto result = td::load(*b, path);
  CHECK(result.missing_keys.empty());
  for (const auto& [name, t] : a->state_dict()) CHECK(values(t) == values(b->state_dict().at(name)));
  nn::Linear other(3, 3);
  check_error([&] { td::load(*other, path); }, {"load_state_dict", "missing keys", "unexpected keys"});
}

TEST_CASE("requires_grad_ freezes and unfreezes every parameter of a module and its submodules", "[cpu]") {
  Net net;
  net->features->requires_grad_(false);
  for (const Tensor& p : net->features->parameters()) CHECK_FALSE(p.requires_grad());
  for (const Tensor& p : net->head->parameters()) CHECK(p.requires_grad());
  net->forward(td::randn({2, 1, 12, 12})).sum().backward();
  for (const Tensor& p : net->features->parameters()) CHECK_FALSE(p.grad().defined());  // frozen: no gradient
  CHECK(net->head->parameters()[0].grad().defined());
  CHECK(&net->requires_grad_(true) == net.get());
  for (const Tensor& p : net->parameters()) CHECK(p.requires_grad());
}

TEST_CASE("ParameterList and ParameterDict register, index, print, clone and train as PyTorch's containers",
          "[cpu]") {
  // PyTorch 2.15's repr() of ParameterList([ones(3, 4), zeros(5, float64, requires_grad=False)])
  // and ParameterDict({'a': ..., 'b': ...}) (torch.typename names there), and of a module holding
  // a one-parameter list.
  const Tensor frozen = td::zeros({5}, td::kFloat64);
  nn::ParameterList list(std::vector<Tensor>{td::ones({3, 4}).requires_grad_(true), frozen});
  CHECK(list->str() ==
        "ParameterList(\n"
        "    (0): Parameter containing: [torch.float32 of size 3x4]\n"
        "    (1): Parameter containing: [torch.float64 of size 5]\n"
        ")");
  CHECK(list->size() == 2);
  CHECK((*list)[0].requires_grad());
  CHECK_FALSE((*list)[1].requires_grad());  // a leaf keeps its requires_grad, as LibTorch's append
  CHECK((*list)[1].data_ptr<double>() == frozen.data_ptr<double>());  // registered itself
  CHECK(nn::ParameterList()->str() == "ParameterList()");
  nn::ParameterDict dict(std::vector<std::pair<std::string, Tensor>>{{"a", td::ones({2, 2})}, {"b", td::ones({3})}});
  CHECK_FALSE((*dict)["a"].requires_grad());  // a plain tensor stays as it is (PyTorch would make it trainable)
  CHECK(dict->str() ==
        "ParameterDict(\n"
        "    (a): Parameter containing: [torch.FloatTensor of size 2x2]\n"
        "    (b): Parameter containing: [torch.FloatTensor of size 3]\n"
        ")");
  CHECK(dict->keys() == std::vector<std::string>{"a", "b"});
  // Replacing a key keeps its place; pop removes it.
  dict->insert("a", td::full({4}, 2.0));
  CHECK(dict->keys() == std::vector<std::string>{"a", "b"});
  CHECK((*dict)["a"].sizes() == td::Shape{4});
  CHECK(dict->pop("b").sizes() == td::Shape{3});
  CHECK_FALSE(dict->contains("b"));
  check_error([&] { (*dict)["b"]; }, {"ParameterDict", "'b'"});
  check_error([&] { (*list)[2]; }, {"ParameterList", "index 2", "2 parameters"});

  struct HolderImpl : nn::Cloneable<HolderImpl> {
    HolderImpl() { reset(); }
    void reset() override {
      p = register_module("p", nn::ParameterList(std::vector<Tensor>{td::ones({2})}));
      lin = register_module("lin", nn::Linear(2, 2));
    }
    nn::ParameterList p{nullptr};
    nn::Linear lin{nullptr};
  };
  auto holder = std::make_shared<HolderImpl>();
  CHECK(holder->str() ==
        "Holder(\n"
        "  (p): ParameterList(  (0): Parameter containing: [torch.float32 of size 2])\n"
        "  (lin): Linear(in_features=2, out_features=2, bias=True)\n"
        ")");
  std::vector<std::string> names;
  for (const auto& [name, t] : holder->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"p.0", "lin.weight", "lin.bias"});
  // A clone has its own copies; an optimizer steps the list's parameters.
  auto copy = std::dynamic_pointer_cast<nn::ParameterListImpl>(list->clone());
  REQUIRE(copy);
  CHECK(copy->size() == 2);
  CHECK((*copy)[0].data_ptr<float>() != (*list)[0].data_ptr<float>());
  CHECK(values((*copy)[0]) == values((*list)[0]));
  CHECK_FALSE((*copy)[1].requires_grad());
  Tensor loss = ((*list)[0] * 3).sum();
  loss.backward();
  td::optim::SGD sgd(list->parameters(), td::optim::SGDOptions(0.5));
  sgd.step();
  CHECK(values((*list)[0]) == std::vector<double>(12, -0.5));
  // state_dict round trip.
  nn::ParameterList again(std::vector<Tensor>{td::zeros({3, 4}), td::ones({5}, td::kFloat64)});
  again->load_state_dict(list->state_dict());
  CHECK(values((*again)[0]) == values((*list)[0]));
}
