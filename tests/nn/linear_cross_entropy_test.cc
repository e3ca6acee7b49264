// linear_cross_entropy and LinearCrossEntropyLoss against PyTorch 2.15
// (tests/nn/linear_cross_entropy_fixtures.json, written by
// tests/nn/make_linear_cross_entropy_fixtures.py): the loss and its gradients, chunked and not;
// the chunk sizes the options resolve to; the memory the chunks save; the chunked backward's
// limits; the layer; errors with the operands unchanged.
#include <optional>
#include <string>
#include <vector>

#include "tests/nn/json_fixture.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using nlohmann::json;
using td::Shape;
using td::Tensor;
using td::testing::check_error;
using td::testing::fixture_numbers;
using td::testing::check_values;
using td::testing::Snapshot;
using td::testing::values;

namespace {

const json& fixture() {
  static const json data = td::testing::load_json_fixture("tests/nn/linear_cross_entropy_fixtures.json");
  return data;
}

Tensor from_fixture(const json& list, const Shape& shape, td::DType dtype) {
  return td::tensor(fixture_numbers(list)).reshape(shape).to(dtype);
}

std::optional<nn::LinearCrossEntropyOptions> options_of(const json& given) {
  if (given.is_null()) return std::nullopt;
  nn::LinearCrossEntropyOptions options;
  if (given.contains("batch_chunk_size")) options.batch_chunk_size(given["batch_chunk_size"].get<int64_t>());
  if (given.contains("chunking_method")) {
    options.chunking_method(given["chunking_method"].is_null()
                                ? std::nullopt
                                : std::optional<std::string>(given["chunking_method"].get<std::string>()));
  }
  if (given.contains("acc_policy")) options.acc_policy(given["acc_policy"].get<std::string>());
  if (given.contains("acc_dtype")) options.acc_dtype(td::parse_dtype(given["acc_dtype"]));
  return options;
}

td::Reduction reduction_named(const std::string& name) {
  return name == "mean" ? td::kMean : name == "sum" ? td::kSum : td::kNone;
}

}  // namespace

TEST_CASE("linear_cross_entropy gives PyTorch's loss and gradients, chunked and not", "[cpu]") {
  const json& cases = fixture()["cases"];
  REQUIRE(cases.size() == 16);
  for (const json& c : cases) {
    const std::string name = c["name"];
    INFO(name);
    const td::DType dtype = td::parse_dtype(c["dtype"]);
    const Shape weight_shape = c["weight_shape"];
    const td::DType weight_dtype = td::parse_dtype(c["weight_dtype"]), bias_dtype = td::parse_dtype(c["bias_dtype"]);
    Tensor input = from_fixture(c["input"], c["input_shape"], dtype).requires_grad_();
    Tensor linear_weight = from_fixture(c["linear_weight"], weight_shape, weight_dtype).requires_grad_();
    Tensor bias;
    if (!c["bias"].is_null()) {
      bias = from_fixture(c["bias"], Shape(weight_shape.begin(), weight_shape.end() - 1), bias_dtype).requires_grad_();
    }
    const Shape target_shape = c["target_shape"];
    const Tensor target = c["probabilities"] ? from_fixture(c["target"], target_shape, dtype)
                                             : td::tensor(c["target"].get<std::vector<int64_t>>()).reshape(target_shape);
    const Tensor class_weight =
        c["class_weight"].is_null() ? Tensor() : from_fixture(c["class_weight"], {weight_shape[0]}, dtype);
    const std::optional<int64_t> ignore_index =
        c["ignore_index"].is_null() ? std::nullopt : std::optional<int64_t>(c["ignore_index"].get<int64_t>());
    const Tensor loss = F::linear_cross_entropy(input, linear_weight, target, bias, class_weight,
                                                reduction_named(c["reduction"]), ignore_index,
                                                c["label_smoothing"].get<double>(), options_of(c["options"]));
    CHECK(loss.sizes() == c["loss_shape"].get<Shape>());
    CHECK(loss.dtype() == dtype);
    if (input.dim() == 2) {  // the path PyTorch took (an unbatched result is squeezed on either)
      CHECK((loss.grad_fn()->name() == "LinearCrossEntropyBackward0") == c["chunked"].get<bool>());
    }
    // The chunks sum in another order than PyTorch's. 16-bit: tandem sums the gradients over the
    // chunks in float32 and rounds once, PyTorch in the input's dtype.
    const double rtol = dtype == td::kFloat64 ? 1e-12 : dtype == td::kFloat32 ? 2e-5 : 2e-2;
    check_values(loss, fixture_numbers(c["loss"]), rtol, name + " loss");
    if (c["grad_weight"].is_null()) {
      loss.backward();
    } else {
      (loss * from_fixture(c["grad_weight"], loss.sizes(), dtype)).sum().backward();
    }
    // Gradients near zero: within rtol of the largest.
    auto check_grad = [&](const Tensor& grad, const json& want, td::DType want_dtype, const std::string& what) {
      CHECK(grad.dtype() == want_dtype);
      const std::vector<double> expected = fixture_numbers(want);
      double largest = 0;
      for (double v : expected) largest = std::max(largest, std::abs(v));
      td::testing::check_close(grad, expected, rtol, rtol * largest, name + " " + what);
    };
    check_grad(input.grad(), c["grad_input"], dtype, "input gradient");
    check_grad(linear_weight.grad(), c["grad_linear_weight"], weight_dtype, "linear_weight gradient");
    if (bias.defined()) check_grad(bias.grad(), c["grad_bias"], bias_dtype, "bias gradient");
  }
}

TEST_CASE("linear_cross_entropy's options resolve to PyTorch's chunk sizes and dtypes", "[cpu]") {
  const json& plans = fixture()["plans"];
  REQUIRE(plans.size() == 15);
  for (const json& p : plans) {
    INFO(p.dump());
    auto plan = [&] {
      return nn::linear_cross_entropy_plan(*options_of(p["options"]), p["batch"], p["in_features"], p["classes"],
                                           td::parse_dtype(p["dtype"]), td::Device("cpu:0"), p["probabilities"]);
    };
    if (p.contains("error")) {
      check_error(plan, {"linear_cross_entropy", "give different chunk sizes"});
      continue;
    }
    const nn::LinearCrossEntropyPlan got = plan();
    CHECK(got.batch_chunk_size == p["batch_chunk_size"].get<int64_t>());
    CHECK(got.acc_dtype == td::parse_dtype(p["acc_dtype"]));
  }
  // On a GPU a 16-bit input's policy is "compact" (on the CPU "accurate"), so auto chunks keep
  // within the whole batch's logits: 1000 rows of 512 features over 300 classes, chunks of at most
  // bit_floor(1000 * 300 / (4 * 512)) = 128 rows, where the CPU takes them all.
  const auto options = nn::LinearCrossEntropyOptions();
  const nn::LinearCrossEntropyPlan gpu =
      nn::linear_cross_entropy_plan(options, 1000, 512, 300, td::kBFloat16, td::Device("cuda:0"));
  const nn::LinearCrossEntropyPlan cpu =
      nn::linear_cross_entropy_plan(options, 1000, 512, 300, td::kBFloat16, td::Device("cpu:0"));
  CHECK(gpu.batch_chunk_size == 128);
  CHECK(cpu.batch_chunk_size == 1000);
  CHECK(gpu.acc_dtype == td::kFloat32);
  CHECK(cpu.acc_dtype == td::kFloat32);
}

TEST_CASE("the chunked linear_cross_entropy never holds the whole batch's logits", "[cpu]") {
  // 512 rows, 4096 classes: the logits alone are 8 MiB in float32; chunks of 16 rows, 256 KiB.
  const td::Device cpu("cpu:0");
  td::manual_seed(3);
  const Tensor input = td::randn({512, 64}).requires_grad_();
  const Tensor linear_weight = (td::randn({4096, 64}) * 0.1).requires_grad_();
  const Tensor target = td::randint(0, 4096, {512});
  const int64_t logits_bytes = 512 * 4096 * 4;
  auto peak_of = [&](const std::optional<nn::LinearCrossEntropyOptions>& options) {
    Tensor(input).mutable_grad() = Tensor();
    Tensor(linear_weight).mutable_grad() = Tensor();
    td::reset_peak_memory_stats(cpu);
    const int64_t before = td::memory_stats(cpu).allocated;
    Tensor loss = F::linear_cross_entropy(input, linear_weight, target, Tensor(), Tensor(), td::kMean, std::nullopt,
                                          0, options);
    loss.backward();
    return std::pair{td::memory_stats(cpu).peak_allocated - before, loss.item<double>()};
  };
  const auto [reference_peak, reference_loss] = peak_of(std::nullopt);
  const Tensor reference_grad = input.grad().clone(), reference_weight_grad = linear_weight.grad().clone();
  const auto [chunked_peak, chunked_loss] = peak_of(nn::LinearCrossEntropyOptions().batch_chunk_size(16));
  CHECK(reference_peak >= logits_bytes);
  CHECK(chunked_peak < logits_bytes / 2);
  CHECK(std::abs(chunked_loss - reference_loss) <= 1e-5 * std::abs(reference_loss));
  td::testing::check_close(input.grad(), reference_grad, 1e-4, 1e-7);
  td::testing::check_close(linear_weight.grad(), reference_weight_grad, 1e-4, 1e-7);
}

TEST_CASE("the chunked backward: first derivatives only, once unless allowed again", "[cpu]") {
  const Tensor input = td::testing::sine_ramp({7, 3}, 0.37).requires_grad_();
  const Tensor linear_weight = td::testing::sine_ramp({5, 3}, 0.23).requires_grad_();
  const Tensor bias = td::testing::sine_ramp({5}, 0.41).requires_grad_();
  const Tensor target = td::tensor({0, 4, 2, -100, 1, 3, 3}, td::kInt64);
  const Tensor probabilities = td::testing::sine_ramp({7, 5}, 0.29).softmax(1);
  for (td::Reduction reduction : {td::kMean, td::kSum, td::kNone}) {
    for (const Tensor& t : {target, probabilities}) {
      const auto options = nn::LinearCrossEntropyOptions().batch_chunk_size(3);
      auto loss_of = [&](const std::vector<Tensor>& v) {
        const Tensor loss = F::linear_cross_entropy(v[0], v[1], t, v[2], Tensor(), reduction, std::nullopt, 0, options);
        return reduction == td::kNone ? loss * td::testing::sine_ramp({7}, 0.11) : loss;
      };
      INFO(td::nn::functional::reduction_name(reduction) << (t.dtype() == td::kInt64 ? " indices" : " probabilities"));
      const auto result = td::autograd::gradcheck(loss_of, {input, linear_weight, bias});
      INFO(result.report);
      CHECK(result.ok);
      // With create_graph, as PyTorch's: the same first derivatives, without a graph of their own.
      const Tensor first = td::autograd::grad({loss_of({input, linear_weight, bias}).sum()}, {input})[0];
      const Tensor with_graph =
          td::autograd::grad({loss_of({input, linear_weight, bias}).sum()}, {input}, {}, true, true)[0];
      CHECK(values(with_graph) == values(first));
      CHECK(!with_graph.requires_grad());
    }
  }
  // As PyTorch's: a class weight that requires grad still takes the chunked path, and gets no gradient.
  Tensor class_weight = td::testing::sine_ramp({5}, 0.53).abs().add(0.5).requires_grad_();
  const Tensor weighted = F::linear_cross_entropy(input, linear_weight, target, bias, class_weight, td::kMean,
                                                  std::nullopt, 0, nn::LinearCrossEntropyOptions());
  CHECK(weighted.grad_fn()->name() == "LinearCrossEntropyBackward0");
  weighted.backward();
  CHECK(!class_weight.grad().defined());
  CHECK(input.grad().defined());
  // mean and sum scale the forward's gradients in place: a second backward is refused, unless allowed.
  Tensor loss = F::linear_cross_entropy(input, linear_weight, target, bias, Tensor(), td::kMean, std::nullopt, 0,
                                        nn::LinearCrossEntropyOptions().batch_chunk_size(2));
  const Tensor first = td::autograd::grad({loss}, {input}, {}, true)[0];
  check_error([&] { td::autograd::grad({loss}, {input}, {}, true); },
              {"linear_cross_entropy", "ran already", "allow_retain_graph"});
  loss = F::linear_cross_entropy(input, linear_weight, target, bias, Tensor(), td::kMean, std::nullopt, 0,
                                 nn::LinearCrossEntropyOptions().batch_chunk_size(2).allow_retain_graph(true));
  CHECK(values(td::autograd::grad({loss}, {input}, {}, true)[0]) == values(first));
  CHECK(values(td::autograd::grad({loss}, {input}, {}, true)[0]) == values(first));
}

TEST_CASE("LinearCrossEntropyLoss holds its linear layer and prints as PyTorch's", "[cpu]") {
  nn::LinearCrossEntropyLoss plain(4, 7);
  CHECK(plain->str() ==
        "LinearCrossEntropyLoss(\n"
        "  in_features=4, num_classes=7, out_features=(), bias=False, reduction=mean, ignore_index=None, "
        "label_smoothing=0.0, options=None\n"
        "  (linear): Linear(in_features=4, out_features=7, bias=False)\n)");
  nn::LinearCrossEntropyLoss full(4, 7,
                                  nn::LinearCrossEntropyLossOptions()
                                      .out_features({2, 3})
                                      .bias(true)
                                      .reduction(td::kSum)
                                      .ignore_index(3)
                                      .label_smoothing(0.1)
                                      .options(nn::LinearCrossEntropyOptions().batch_chunk_size(3)));
  CHECK(full->str() ==
        "LinearCrossEntropyLoss(\n"
        "  in_features=4, num_classes=7, out_features=(2, 3), bias=True, reduction=sum, ignore_index=3, "
        "label_smoothing=0.1, options=LinearCrossEntropyOptions(allow_retain_graph=False, batch_chunk_size=3, "
        "chunking_method='auto', acc_policy='auto', acc_dtype=None)\n"
        "  (linear): Linear(in_features=4, out_features=42, bias=True)\n)");
  CHECK(nn::options_repr(nn::LinearCrossEntropyOptions().acc_dtype(td::kFloat32).chunking_method(std::nullopt)) ==
        "LinearCrossEntropyOptions(allow_retain_graph=False, batch_chunk_size=None, chunking_method=None, "
        "acc_policy='auto', acc_dtype=torch.float32)");

  // The class weight is a buffer before the layer's parameters, as in PyTorch's state_dict.
  nn::LinearCrossEntropyLoss weighted(4, 7, nn::LinearCrossEntropyLossOptions().weight(td::ones({7})).bias(true));
  CHECK(weighted->state_dict().keys() == std::vector<std::string>{"weight", "linear.weight", "linear.bias"});

  // forward is the functional form over the layer's reshaped weight, chunked or not.
  const Tensor input = td::testing::sine_ramp({6, 4}, 0.37, td::kFloat32);
  const Tensor target = td::tensor({1, 0, 6, 3, 3, 2}, td::kInt64);
  const Tensor want = F::cross_entropy(F::linear(input, weighted->linear->weight, weighted->linear->bias), target,
                                       weighted->weight);
  CHECK(weighted(input, target).item<double>() == want.item<double>());
  nn::LinearCrossEntropyLoss chunked(
      4, 7, nn::LinearCrossEntropyLossOptions().bias(true).options(nn::LinearCrossEntropyOptions().batch_chunk_size(4)));
  chunked->linear->weight.detach().copy_(weighted->linear->weight);
  chunked->linear->bias.detach().copy_(weighted->linear->bias);
  CHECK(std::abs(chunked(input, target).item<double>() - want.item<double>()) <= 1e-6 * std::abs(want.item<double>()));
  const auto copy = std::dynamic_pointer_cast<nn::LinearCrossEntropyLossImpl>(weighted->clone());
  REQUIRE(copy != nullptr);
  CHECK(copy->forward(input, target).item<double>() == want.item<double>());
}

TEST_CASE("linear_cross_entropy refuses bad operands and options, naming the op; operands unchanged", "[cpu]") {
  const Tensor input = td::testing::sine_ramp({6, 4}, 0.37);
  const Tensor linear_weight = td::testing::sine_ramp({5, 4}, 0.23);
  const Tensor target = td::tensor({1, 0, 4, 3, 3, 2}, td::kInt64);
  const Snapshot input_before(input), weight_before(linear_weight), target_before(target);
  const auto chunks = nn::LinearCrossEntropyOptions().batch_chunk_size(2);
  struct Bad {
    std::function<void()> call;
    std::vector<std::string> fragments;
  };
  const std::vector<Bad> bad = {
      {[&] { F::linear_cross_entropy(input.unsqueeze(0), linear_weight, target); }, {"1 or 2 dims", "[1, 6, 4]"}},
      {[&] { F::linear_cross_entropy(input, linear_weight.select(0, 0), target); }, {"2 or more dims", "[4]"}},
      {[&] { F::linear_cross_entropy(input, linear_weight.narrow(1, 0, 3), target); },
       {"equal last dims (in_features)", "[6, 4]", "[5, 3]"}},
      {[&] { F::linear_cross_entropy(input, linear_weight, target, td::zeros({4}, td::kFloat64)); },
       {"linear_bias of shape [5]", "[4]"}},
      {[&] { F::linear_cross_entropy(input[0], linear_weight.view({5, 1, 4}), target[0]); },
       {"K-dimensional loss", "batched input"}},
      {[&] { F::linear_cross_entropy(input, linear_weight, td::zeros({6, 5}, td::kFloat64), {}, {}, td::kMean, 3); },
       {"ignore_index cannot be given with probability targets"}},
      {[&] { F::linear_cross_entropy(input, linear_weight, target, {}, {}, td::kBatchMean); }, {"batchmean"}},
      {[&] { F::linear_cross_entropy(input, linear_weight, target.narrow(0, 0, 5), {}, {}, td::kMean, {}, 0, chunks); },
       {"needs a target", "[5]"}},
      {[&] { F::linear_cross_entropy(input, linear_weight.to(td::kInt64), target, {}, {}, td::kMean, {}, 0, chunks); },
       {"linear_weight (int64) and linear_bias must be floating"}},
      {[&] { F::linear_cross_entropy(input, linear_weight, target + 1, {}, {}, td::kMean, {}, 0, chunks); },
       {"target 5 is out of bounds for 5 classes"}},
      {[&] { F::linear_cross_entropy(input, linear_weight, target, {}, td::ones({4}, td::kFloat64), td::kMean, {}, 0,
                                     chunks); },
       {"weight must have shape [5]", "[4]"}},
      {[&] {
         F::linear_cross_entropy(input, linear_weight, target, {}, {}, td::kMean, {}, 0,
                                 nn::LinearCrossEntropyOptions().acc_dtype(td::kFloat32));
       },
       {"acc_dtype must be the input's dtype", "float32", "float64"}},
      {[&] { F::linear_cross_entropy(input, linear_weight, target, {}, {}, td::kMean, {}, 0,
                                     nn::LinearCrossEntropyOptions().batch_chunk_size(3).chunking_method("aspect_ratio"));
       },
       {"give different chunk sizes (3 and 4)"}},
      {[] { nn::LinearCrossEntropyOptions().batch_chunk_size(0); },
       {"LinearCrossEntropyOptions", "batch_chunk_size must be positive", "0"}},
      {[] { nn::LinearCrossEntropyOptions().chunking_method("aspect_ratio:0"); },
       {"LinearCrossEntropyOptions", "invalid chunking_method"}},
      {[] { nn::LinearCrossEntropyOptions().chunking_method("rows"); },
       {"LinearCrossEntropyOptions", "invalid chunking_method 'rows'"}},
      {[] { nn::LinearCrossEntropyOptions().acc_policy("fast"); },
       {"LinearCrossEntropyOptions", "invalid acc_policy 'fast'"}},
      {[] { nn::LinearCrossEntropyOptions().acc_dtype(td::kInt32); },
       {"LinearCrossEntropyOptions", "acc_dtype must be a floating dtype"}},
      {[] { nn::LinearCrossEntropyLoss(4, 7, nn::LinearCrossEntropyLossOptions().weight(td::ones({6}))); },
       {"LinearCrossEntropyLoss", "weight of shape [7]", "[6]"}},
      {[] { nn::LinearCrossEntropyLoss(4, 7, nn::LinearCrossEntropyLossOptions().label_smoothing(1.5)); },
       {"LinearCrossEntropyLoss", "label_smoothing must be in [0, 1]", "1.5"}},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> fragments = b.fragments;
    // The options and the layer name themselves; every other error names the functional form.
    if (fragments[0].rfind("LinearCrossEntropy", 0) != 0) fragments.push_back("linear_cross_entropy");
    check_error(b.call, fragments);
  }
  input_before.check_unchanged(input);
  weight_before.check_unchanged(linear_weight);
  target_before.check_unchanged(target);
}
