// Lazy layers: printed as PyTorch 2.15 prints them before and after the first forward, the sizes
// taken from the first input, the same parameters and random draws as the eager layer built
// with those sizes, the handles an optimizer took before kept, clones, and refused inputs leaving
// the layer lazy.
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/optim/adam.h"
#include "nn/optim/sgd.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
using td::Shape;
using td::Tensor;
using td::testing::check_error;
using td::testing::values;

namespace {

// The eager layer built after the same seed: every parameter and buffer equal, and the output.
void check_same_as_eager(nn::Module& lazy, nn::Module& eager, const Tensor& lazy_out, const Tensor& eager_out,
                         const std::string& what) {
  INFO(what);
  const auto lazy_state = lazy.state_dict(), eager_state = eager.state_dict();
  REQUIRE(lazy_state.keys() == eager_state.keys());
  for (const auto& key : lazy_state.keys()) {
    INFO(key);
    CHECK(lazy_state.at(key).sizes() == eager_state.at(key).sizes());
    CHECK(values(lazy_state.at(key)) == values(eager_state.at(key)));
  }
  CHECK(values(lazy_out) == values(eager_out));
  CHECK(lazy.str() == eager.str());
}

// Each lazy layer beside the eager layer it becomes, and an input it takes.
struct LazyCase {
  std::string name;
  std::function<std::shared_ptr<nn::Module>()> lazy, eager;
  Tensor input;
};
std::vector<LazyCase> lazy_cases() {
  return {
    {"Linear", [] { return nn::LazyLinear(5).ptr(); }, [] { return nn::Linear(3, 5).ptr(); },
     td::testing::sine_ramp({2, 3}, 0.37, td::kFloat32)},
    {"Linear without bias", [] { return nn::LazyLinear(5, false).ptr(); },
     [] { return nn::Linear(nn::LinearOptions(3, 5).bias(false)).ptr(); },
     td::testing::sine_ramp({2, 4, 3}, 0.37, td::kFloat32)},
    {"Conv1d", [] { return nn::LazyConv1d(nn::Conv1dOptions(0, 4, 3).groups(2).padding(1)).ptr(); },
     [] { return nn::Conv1d(nn::Conv1dOptions(6, 4, 3).groups(2).padding(1)).ptr(); },
     td::testing::sine_ramp({2, 6, 7}, 0.37, td::kFloat32)},
    {"Conv2d", [] { return nn::LazyConv2d(4, 3).ptr(); }, [] { return nn::Conv2d(3, 4, 3).ptr(); },
     td::testing::sine_ramp({2, 3, 5, 6}, 0.37, td::kFloat32)},
    {"Conv3d", [] { return nn::LazyConv3d(2, 2).ptr(); }, [] { return nn::Conv3d(3, 2, 2).ptr(); },
     td::testing::sine_ramp({3, 4, 3, 5}, 0.37, td::kFloat32)},
    {"ConvTranspose1d", [] { return nn::LazyConvTranspose1d(3, 2).ptr(); },
     [] { return nn::ConvTranspose1d(5, 3, 2).ptr(); }, td::testing::sine_ramp({2, 5, 4}, 0.37, td::kFloat32)},
    {"ConvTranspose2d", [] { return nn::LazyConvTranspose2d(nn::ConvTranspose2dOptions(0, 4, 3).groups(2)).ptr(); },
     [] { return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(6, 4, 3).groups(2)).ptr(); },
     td::testing::sine_ramp({1, 6, 3, 3}, 0.37, td::kFloat32)},
    {"ConvTranspose3d", [] { return nn::LazyConvTranspose3d(2, 2).ptr(); },
     [] { return nn::ConvTranspose3d(3, 2, 2).ptr(); }, td::testing::sine_ramp({1, 3, 2, 3, 2}, 0.37, td::kFloat32)},
    {"BatchNorm1d", [] { return nn::LazyBatchNorm1d().ptr(); },
     [] { return nn::BatchNorm1d(nn::BatchNormOptions(4)).ptr(); },
     td::testing::sine_ramp({5, 4, 3}, 0.37, td::kFloat32)},
    {"BatchNorm2d", [] { return nn::LazyBatchNorm2d(nn::BatchNormOptions(0).affine(false)).ptr(); },
     [] { return nn::BatchNorm2d(nn::BatchNormOptions(3).affine(false)).ptr(); },
     td::testing::sine_ramp({2, 3, 2, 2}, 0.37, td::kFloat32)},
    {"BatchNorm1d without statistics",
     [] { return nn::LazyBatchNorm1d(nn::BatchNormOptions(0).track_running_stats(false)).ptr(); },
     [] { return nn::BatchNorm1d(nn::BatchNormOptions(4).track_running_stats(false)).ptr(); },
     td::testing::sine_ramp({5, 4}, 0.37, td::kFloat32)},
    {"BatchNorm3d", [] { return nn::LazyBatchNorm3d().ptr(); },
     [] { return nn::BatchNorm3d(nn::BatchNormOptions(2)).ptr(); },
     td::testing::sine_ramp({2, 2, 2, 2, 3}, 0.37, td::kFloat32)},
    {"InstanceNorm2d", [] { return nn::LazyInstanceNorm2d().ptr(); },
     [] { return nn::InstanceNorm2d(nn::InstanceNormOptions(3).affine(true).track_running_stats(true)).ptr(); },
     td::testing::sine_ramp({2, 3, 4, 4}, 0.37, td::kFloat32)},
    {"InstanceNorm3d", [] { return nn::LazyInstanceNorm3d(nn::InstanceNormOptions(0)).ptr(); },
     [] { return nn::InstanceNorm3d(nn::InstanceNormOptions(2)).ptr(); },
     td::testing::sine_ramp({2, 2, 2, 3, 2}, 0.37, td::kFloat32)},
  };
}

}  // namespace

TEST_CASE("lazy layers print as PyTorch's before the first forward and as the eager layer after", "[cpu]") {
  nn::LazyLinear linear(5);
  CHECK(linear->str() == "LazyLinear(in_features=0, out_features=5, bias=True)");
  CHECK(linear->has_uninitialized_params());
  linear(td::zeros({2, 3}));
  CHECK(linear->str() == "Linear(in_features=3, out_features=5, bias=True)");
  CHECK(!linear->has_uninitialized_params());

  nn::LazyConv2d conv(nn::Conv2dOptions(0, 8, 3).groups(2));
  CHECK(conv->str() == "LazyConv2d(0, 8, kernel_size=(3, 3), stride=(1, 1), groups=2)");
  nn::LazyConvTranspose2d up(nn::ConvTranspose2dOptions(0, 4, 3).stride(2));
  up(td::zeros({1, 6, 4, 4}));
  CHECK(up->str() == "ConvTranspose2d(6, 4, kernel_size=(3, 3), stride=(2, 2))");
  CHECK(up->weight.sizes() == Shape{6, 4, 3, 3});
  nn::LazyConv1d conv1(4, 3);
  conv1(td::zeros({6, 10}));  // unbatched: the channels are dim 0
  CHECK(conv1->str() == "Conv1d(6, 4, kernel_size=(3,), stride=(1,))");
  CHECK(conv1->weight.sizes() == Shape{4, 6, 3});
  CHECK(nn::LazyConvTranspose1d(3, 2)->str() == "LazyConvTranspose1d(0, 3, kernel_size=(2,), stride=(1,))");

  nn::LazyBatchNorm1d norm;
  CHECK(norm->str() == "LazyBatchNorm1d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
  norm(td::testing::sine_ramp({4, 3}, 0.37, td::kFloat32));
  CHECK(norm->str() == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
  CHECK(norm->num_batches_tracked.item<int64_t>() == 1);
  CHECK(norm->running_mean.sizes() == Shape{3});
  CHECK(nn::LazyBatchNorm2d()->str() ==
        "LazyBatchNorm2d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
  // PyTorch's lazy instance norms default to affine parameters and running statistics, also
  // where another option is given.
  CHECK(nn::LazyInstanceNorm3d()->str() ==
        "LazyInstanceNorm3d(0, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
  CHECK(nn::LazyInstanceNorm2d(nn::LazyInstanceNormOptions().eps(1e-3))->str() ==
        "LazyInstanceNorm2d(0, eps=0.001, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
  nn::LazyInstanceNorm1d instance;
  instance(td::testing::sine_ramp({3, 5}, 0.37, td::kFloat32));  // unbatched: 3 channels
  CHECK(instance->str() ==
        "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
}

TEST_CASE("a lazy layer draws nothing until its first forward, then what the eager layer draws", "[cpu]") {
  for (const LazyCase& c : lazy_cases()) {
    INFO(c.name);
    td::manual_seed(21);
    const auto lazy = c.lazy();
    const Tensor after_construction = td::rand({4});
    td::manual_seed(21);
    CHECK(values(after_construction) == values(td::rand({4})));  // the lazy layer drew nothing

    td::manual_seed(22);
    const Tensor lazy_out = lazy->forward(c.input);
    const Tensor lazy_next = td::rand({4});
    td::manual_seed(22);
    const auto eager = c.eager();
    const Tensor eager_out = eager->forward(c.input);
    CHECK(values(lazy_next) == values(td::rand({4})));  // materializing drew what constructing does
    check_same_as_eager(*lazy, *eager, lazy_out, eager_out, c.name);
  }
}

TEST_CASE("a lazy layer keeps its handles, frozen or not, and its count; a stateful optimizer made before works",
          "[cpu]") {
  // Frozen before the first forward: still frozen after, as PyTorch's.
  nn::LazyLinear frozen(2);
  frozen->weight.requires_grad_(false);
  frozen(td::zeros({1, 3}));
  CHECK(!frozen->weight.requires_grad());
  CHECK(frozen->bias.requires_grad());
  // A norm's count (an integer buffer) is the same tensor before and after.
  nn::LazyBatchNorm1d norm;
  const Tensor count = norm->num_batches_tracked;
  norm(td::testing::sine_ramp({4, 3}, 0.37, td::kFloat32));
  CHECK(norm->num_batches_tracked.is_same(count));
  CHECK(count.item<int64_t>() == 1);
  // Adam keeps per-parameter state, made at its first step: of the materialized sizes.
  nn::LazyLinear adam_layer(2);
  td::optim::Adam adam(adam_layer->parameters(), td::optim::AdamOptions(0.1));
  adam_layer(td::testing::sine_ramp({4, 3}, 0.37, td::kFloat32)).square().sum().backward();
  const std::vector<double> before_step = values(adam_layer->weight);
  adam.step();
  const std::vector<double> after_step = values(adam_layer->weight);
  for (size_t i = 0; i < before_step.size(); ++i) CHECK(std::abs(after_step[i] - before_step[i]) > 0.05);
}

TEST_CASE("a lazy layer's parameters keep their handles: an optimizer made before the first forward steps them",
          "[cpu]") {
  nn::LazyLinear linear(2);
  const std::vector<Tensor> before = linear->parameters();
  REQUIRE(before.size() == 2);
  CHECK(before[0].sizes() == Shape{0});  // no elements until the first input
  td::optim::SGD sgd(linear->parameters(), td::optim::SGDOptions(0.5));
  const Tensor x = td::testing::sine_ramp({4, 3}, 0.37, td::kFloat32);
  const Tensor loss = linear(x).square().sum();
  CHECK(before[0].is_same(linear->weight));
  CHECK(before[1].is_same(linear->bias));
  CHECK(linear->weight.sizes() == Shape{2, 3});
  CHECK(linear->weight.requires_grad());
  const std::vector<double> weight_before = values(linear->weight);
  loss.backward();
  const std::vector<double> grad = values(linear->weight.grad());
  sgd.step();
  const std::vector<double> weight_after = values(linear->weight);
  for (size_t i = 0; i < grad.size(); ++i) CHECK(weight_after[i] == static_cast<float>(weight_before[i] - 0.5 * grad[i]));
}

TEST_CASE("lazy layers clone before and after their first forward; refused inputs leave them lazy", "[cpu]") {
  nn::LazyConv2d conv(nn::Conv2dOptions(0, 4, 3).groups(2));
  const auto unmaterialized = std::dynamic_pointer_cast<nn::LazyConv2dImpl>(conv->clone());
  REQUIRE(unmaterialized != nullptr);
  CHECK(unmaterialized->has_uninitialized_params());
  CHECK(unmaterialized->str() == conv->str());

  check_error([&] { conv(td::zeros({1, 3, 5, 5})); }, {"LazyConv2d", "in_channels (3) must be divisible by groups (2)"});
  check_error([&] { conv(td::zeros({5, 5})); },
              {"Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of size: [5, 5]"});
  CHECK(conv->has_uninitialized_params());
  CHECK(conv->weight.sizes() == Shape{0});
  CHECK(conv->str() == "LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1), groups=2)");
  check_error([] { nn::LazyLinear(3)(td::tensor(1.0)); }, {"LazyLinear", "1 or more dims"});
  check_error([] { nn::LazyBatchNorm2d()(td::zeros({3, 4, 4})); }, {"LazyBatchNorm2d", "4 dims", "[3, 4, 4]"});
  // No channels: refused before anything changes, every registration kept.
  nn::LazyBatchNorm1d norm;
  const std::vector<Tensor> registered = norm->parameters();
  check_error([&] { norm(td::zeros({4, 0})); }, {"LazyBatchNorm1d", "expected an input with channels"});
  CHECK(norm->has_uninitialized_params());
  REQUIRE(norm->parameters().size() == 2);
  CHECK(norm->parameters()[0].is_same(registered[0]));
  CHECK(norm->state_dict().keys() == std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                                               "num_batches_tracked"});
  check_error([] { nn::LazyInstanceNorm2d()(td::zeros({0, 4, 4})); }, {"LazyInstanceNorm2d", "with channels"});

  const Tensor x = td::testing::sine_ramp({2, 4, 5, 5}, 0.37, td::kFloat32);
  const Tensor y = conv(x);
  const auto copy = std::dynamic_pointer_cast<nn::LazyConv2dImpl>(conv->clone());
  REQUIRE(copy != nullptr);
  CHECK(!copy->has_uninitialized_params());
  CHECK(copy->str() == "Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), groups=2)");
  CHECK(values(copy->forward(x)) == values(y));
  // The unmaterialized clone takes its own sizes from its own first input.
  unmaterialized->forward(td::zeros({6, 5, 5}));
  CHECK(unmaterialized->weight.sizes() == Shape{4, 3, 3, 3});
  // Moved or converted before the first forward: materialized there.
  nn::LazyBatchNorm1d wide;
  wide->to(td::kFloat64);
  wide(td::testing::sine_ramp({4, 3}, 0.37));
  CHECK(wide->weight.dtype() == td::kFloat64);
  CHECK(wide->running_var.dtype() == td::kFloat64);
  // initialize_parameters materializes without a forward; a second call does nothing.
  nn::LazyLinear linear(3);
  linear->initialize_parameters(td::zeros({7}));
  CHECK(linear->weight.sizes() == Shape{3, 7});
  const std::vector<double> weight = values(linear->weight);
  linear->initialize_parameters(td::zeros({9}));
  CHECK(values(linear->weight) == weight);
}

TEST_CASE("a checkpoint loads into lazy layers not run yet: their sizes from its tensors, no draws", "[cpu]") {
  for (const LazyCase& c : lazy_cases()) {
    INFO(c.name);
    td::manual_seed(31);
    const auto eager = c.eager();
    eager->forward(c.input);  // running statistics and a count that are not the initial ones
    eager->eval();
    const auto lazy = c.lazy();
    lazy->eval();
    const std::vector<Tensor> handles = lazy->parameters();
    const td::StateDict checkpoint = eager->state_dict();
    td::manual_seed(32);
    const auto result = lazy->load_state_dict(checkpoint);
    CHECK(result.missing_keys.empty());
    CHECK(result.unexpected_keys.empty());
    const Tensor next = td::rand({4});
    td::manual_seed(32);
    CHECK(values(next) == values(td::rand({4})));  // every value came from the checkpoint: nothing drawn
    // A norm without affine parameters or statistics has nothing in its checkpoint to give a size.
    CHECK(lazy->has_uninitialized_params() == checkpoint.keys().empty());
    if (checkpoint.keys().empty()) continue;
    const std::vector<Tensor> loaded = lazy->parameters();
    REQUIRE(loaded.size() == handles.size());
    for (size_t i = 0; i < loaded.size(); ++i) CHECK(loaded[i].is_same(handles[i]));
    check_same_as_eager(*lazy, *eager, lazy->forward(c.input), eager->forward(c.input), c.name);
  }
}

TEST_CASE("a checkpoint into lazy layers in a model: prefixes, part of the tensors, and refusals that change nothing",
          "[cpu]") {
  td::manual_seed(41);
  nn::Sequential eager(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  const Tensor x = td::testing::sine_ramp({5, 3}, 0.37, td::kFloat32);
  nn::Sequential lazy(nn::LazyLinear(4), nn::ReLU(), nn::LazyLinear(2));
  lazy->load_state_dict(eager->state_dict());
  CHECK(lazy->str() == eager->str());
  CHECK(values(lazy(x)) == values(eager(x)));

  // Only the weight (strict=false): the bias is drawn as the eager layer's constructor draws it.
  td::manual_seed(42);
  nn::Linear drawn(3, 4);
  nn::LazyLinear part(4);
  td::StateDict weight_only;
  weight_only.insert("weight", eager->state_dict().at("0.weight"));
  td::manual_seed(42);
  const auto result = part->load_state_dict(weight_only, false);
  CHECK(result.missing_keys == std::vector<std::string>{"bias"});
  CHECK(values(part->weight) == values(eager->state_dict().at("0.weight")));
  CHECK(values(part->bias) == values(drawn->bias));

  // A second layer's shape that does not fit: refused with the materialized shape, and the first
  // layer, whose size was fine, is still lazy.
  nn::Sequential refused(nn::LazyLinear(4), nn::ReLU(), nn::LazyLinear(3));
  check_error([&] { refused->load_state_dict(eager->state_dict()); },
              {"load_state_dict: shape mismatch for 2.weight (checkpoint [2, 4], model [3, 4])", "2.bias"});
  for (const auto& m : refused->children()) CHECK(!m->has_uninitialized_params() == (m->name() == "ReLU"));
  CHECK(refused->parameters()[0].sizes() == Shape{0});
  // A missing key under strict: refused, nothing materialized.
  nn::LazyLinear strict(4);
  check_error([&] { strict->load_state_dict(weight_only); }, {"load_state_dict: missing keys: bias"});
  CHECK(strict->has_uninitialized_params());
  CHECK(strict->str() == "LazyLinear(in_features=0, out_features=4, bias=True)");
  // A size the layer cannot take: a transposed weight of 3 input channels under 2 groups.
  nn::LazyConvTranspose2d odd(nn::ConvTranspose2dOptions(0, 4, 3).groups(2));
  td::StateDict three;
  three.insert("weight", td::zeros({3, 2, 3, 3}));
  three.insert("bias", td::zeros({4}));
  check_error([&] { odd->load_state_dict(three); },
              {"load_state_dict: LazyConvTranspose2d cannot take the sizes of the checkpoint's tensors", "in_channels (3)"});
  CHECK(odd->has_uninitialized_params());
  CHECK(odd->weight.sizes() == Shape{0});
  check_error([&] { odd->materialize_from(three, ""); }, {"LazyConvTranspose2d: in_channels (3) must be divisible"});
  CHECK(odd->state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  CHECK(odd->str() == "LazyConvTranspose2d(0, 4, kernel_size=(3, 3), stride=(1, 1), groups=2)");
  // A checkpoint without the weight gives no size: the bias cannot be loaded, and the error says why.
  td::StateDict bias_only;
  bias_only.insert("bias", td::zeros({4}));
  nn::LazyLinear unsized(4);
  check_error([&] { unsized->load_state_dict(bias_only, false); },
              {"shape mismatch for bias (checkpoint [4], model [0]: a lazy layer the checkpoint gives no size to"});
  CHECK(unsized->has_uninitialized_params());

  // A layer registered under two names takes its sizes from the one the checkpoint holds, here
  // only the second (strict=false: the first's keys are missing).
  nn::LazyLinear shared(4);
  nn::Sequential twice(shared, shared);
  td::StateDict second_only;
  second_only.insert("1.weight", eager->state_dict().at("0.weight"));
  second_only.insert("1.bias", eager->state_dict().at("0.bias"));
  const auto twice_result = twice->load_state_dict(second_only, false);
  CHECK(twice_result.missing_keys == std::vector<std::string>{"0.weight", "0.bias"});
  CHECK(twice_result.unexpected_keys.empty());
  CHECK_FALSE(shared->has_uninitialized_params());
  CHECK(values(shared->weight) == values(eager->state_dict().at("0.weight")));
  CHECK(values(shared->bias) == values(eager->state_dict().at("0.bias")));
  // The weight under one name and the bias under the other: every value comes from the
  // checkpoint, so nothing is drawn.
  nn::LazyLinear split(4);
  nn::Sequential split_twice(split, split);
  td::StateDict split_halves;
  split_halves.insert("0.weight", eager->state_dict().at("0.weight"));
  split_halves.insert("1.bias", eager->state_dict().at("0.bias"));
  td::manual_seed(43);
  const auto split_result = split_twice->load_state_dict(split_halves, false);
  const Tensor next_draw = td::rand({4});
  td::manual_seed(43);
  CHECK(values(next_draw) == values(td::rand({4})));
  CHECK(split_result.missing_keys == std::vector<std::string>{"0.bias", "1.weight"});
  CHECK(values(split->weight) == values(eager->state_dict().at("0.weight")));
  CHECK(values(split->bias) == values(eager->state_dict().at("0.bias")));
  // Under both names with different sizes: the first name sizes it, and the second is refused.
  nn::LazyLinear shared_again(4);
  nn::Sequential twice_again(shared_again, shared_again);
  td::StateDict both;
  both.insert("0.weight", td::zeros({4, 3}));
  both.insert("0.bias", td::zeros({4}));
  both.insert("1.weight", td::zeros({4, 5}));
  both.insert("1.bias", td::zeros({4}));
  check_error([&] { twice_again->load_state_dict(both); },
              {"shape mismatch for 1.weight (checkpoint [4, 5], model [4, 3])"});
  CHECK(shared_again->has_uninitialized_params());

  // Moved and converted before the load: the checkpoint's float32 values land in float64.
  nn::LazyLinear wide(4);
  wide->to(td::kFloat64);
  td::StateDict first_layer;
  first_layer.insert("weight", eager->state_dict().at("0.weight"));
  first_layer.insert("bias", eager->state_dict().at("0.bias"));
  wide->load_state_dict(first_layer);
  CHECK(wide->weight.dtype() == td::kFloat64);
  CHECK(wide->weight.sizes() == td::Shape{4, 3});
  CHECK(values(wide->weight) == values(eager->state_dict().at("0.weight")));

  // Inside DataParallel, from a checkpoint with PyTorch's "module." prefix.
  td::manual_seed(43);
  nn::Sequential unrun_model(nn::LazyLinear(4), nn::ReLU(), nn::LazyLinear(2));
  td::parallel::DataParallel dp(unrun_model.ptr(), td::parallel::DataParallelOptions({td::Device("cpu:0"), td::Device("cpu:1")}));
  td::StateDict prefixed;
  for (const auto& key : eager->state_dict().keys()) prefixed.insert("module." + key, eager->state_dict().at(key));
  dp->load_state_dict(prefixed);
  CHECK(values(dp(x)) == values(eager(x)));

  // A lazy layer's own checkpoint before its first forward holds no sizes: it stays lazy.
  nn::LazyLinear unrun(4), other(4);
  other->load_state_dict(unrun->state_dict());
  CHECK(other->has_uninitialized_params());
  other(x);
  CHECK(other->weight.sizes() == Shape{4, 3});
}
