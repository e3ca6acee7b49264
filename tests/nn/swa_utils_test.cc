// swa_utils: AveragedModel's running averages (SWA and EMA, parameters and buffers), its copy,
// state_dict, clone and device; update_bn's recomputed BatchNorm statistics; refusals that leave
// everything as it was.
#include <cmath>
#include <map>

#include "nn/optim/optim.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace swa = td::optim::swa_utils;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::values;
using Values = std::vector<double>;

namespace {

// A float64 Linear(3, 2) whose weight and bias hold `value + 0.1 * i` (i the flat position).
void set_linear(nn::Linear& layer, double value) {
  td::NoGradGuard no_grad;
  layer->weight.copy_(td::arange(6, td::kFloat64).view({2, 3}) * 0.1 + value);
  layer->bias.copy_(td::arange(2, td::kFloat64) * 0.1 + value);
}

nn::Linear float64_linear() {
  nn::Linear layer(3, 2);
  layer->to(td::kFloat64);
  return layer;
}

Values all_values(const nn::Module& m) {
  Values out;
  for (const Tensor& p : m.parameters()) {
    const Values v = values(p);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

TEST_CASE("AveragedModel keeps a copy whose parameters are the running mean of the updates", "[cpu]") {
  nn::Linear model = float64_linear();
  set_linear(model, 1.0);
  swa::AveragedModel averaged(model);
  CHECK(averaged->averaged_count() == 0);
  const auto copy = averaged->module->parameters();
  REQUIRE(copy.size() == 2);
  CHECK(!copy[0].is_same(model->weight));  // a copy, not the model's own tensors
  check_equal(copy[0], values(model->weight));

  std::vector<Values> seen;
  for (double v : {1.0, -2.0, 4.5, 0.25}) {
    set_linear(model, v);
    averaged->update_parameters(model);
    seen.push_back(all_values(*model));
  }
  CHECK(averaged->averaged_count() == 4);
  Values mean(seen[0].size(), 0.0);
  for (const Values& s : seen) {
    for (size_t i = 0; i < s.size(); ++i) mean[i] += s[i] / 4;
  }
  check_close(td::cat({averaged->module->parameters()[0].flatten(), averaged->module->parameters()[1]}), mean, 1e-15,
              1e-15);
  // The model changing does not reach the average until the next update.
  set_linear(model, 100);
  check_close(averaged->module->parameters()[1], {mean[6], mean[7]}, 1e-15, 1e-15);
  // forward runs the averaged copy.
  const Tensor x = td::testing::random_tensor({5, 3}, td::kFloat64);
  check_equal(averaged(x), values(td::nn::functional::linear(x, averaged->module->parameters()[0],
                                                             averaged->module->parameters()[1])));
}

TEST_CASE("the averaging functions give PyTorch's averages to the bit: SWA and EMA, single and multi-tensor forms",
          "[cpu]") {
  // PyTorch 2.15: AveragedModel over Linear(3, 2) set to weight arange(6) * 0.1 + v, bias arange(2)
  // * 0.1 + v for v = 0.5, 2, -1, 3, 0.7; the averaged weight and bias, flattened. The multi-tensor
  // SWA form lerps with the weight 1 / (n + 1) in float32, hence its float64 values.
  using Cases = std::vector<std::pair<const char*, Values>>;
  const std::vector<std::tuple<td::DType, Cases>> expected = {
      {td::kFloat64,
       {{"swa",
         {1.04, 1.1400000000000001, 1.2400000000000002, 1.3399999999999999, 1.44, 1.54, 1.04, 1.1400000000000001}},
        {"swa multi",
         {1.0399999853223563, 1.1399999853223564, 1.2399999853223564, 1.339999985322356, 1.4399999853223562,
          1.5399999853223563, 1.0399999853223563, 1.1399999853223564}},
        {"ema",
         {0.7328499999999999, 0.83285, 0.93285, 1.0328499999999998, 1.13285, 1.2328499999999998, 0.7328499999999999,
          0.83285}},
        {"ema multi",
         {0.7328499999999999, 0.83285, 0.93285, 1.03285, 1.1328500000000001, 1.23285, 0.7328499999999999, 0.83285}}}},
      {td::kFloat32,
       {{"swa",
         {1.0399999618530273, 1.1399998664855957, 1.2400000095367432, 1.3399999141693115, 1.440000057220459,
          1.5399999618530273, 1.0399999618530273, 1.1399998664855957}},
        {"swa multi",
         {1.0399999618530273, 1.1399998664855957, 1.2400000095367432, 1.3399999141693115, 1.440000057220459,
          1.5399999618530273, 1.0399999618530273, 1.1399998664855957}},
        {"ema",
         {0.7328500151634216, 0.8328499794006348, 0.9328498840332031, 1.032849907875061, 1.132849931716919,
          1.2328498363494873, 0.7328500151634216, 0.8328499794006348}},
        {"ema multi",
         {0.7328500151634216, 0.8328499794006348, 0.9328499436378479, 1.0328500270843506, 1.1328500509262085,
          1.2328500747680664, 0.7328500151634216, 0.8328499794006348}}}},
      {td::kBFloat16,
       {{"swa", {1.0390625, 1.1328125, 1.2421875, 1.3359375, 1.4453125, 1.5390625, 1.0390625, 1.1328125}},
        {"swa multi", {1.0390625, 1.1328125, 1.2421875, 1.3359375, 1.4453125, 1.5390625, 1.0390625, 1.1328125}},
        {"ema", {0.73046875, 0.8359375, 0.93359375, 1.03125, 1.125, 1.2265625, 0.73046875, 0.8359375}},
        {"ema multi", {0.73046875, 0.83203125, 0.93359375, 1.03125, 1.1328125, 1.234375, 0.73046875, 0.83203125}}}},
  };
  const std::map<std::string, swa::AverageFn> functions = {{"swa", swa::get_swa_avg_fn()},
                                                           {"swa multi", swa::get_swa_multi_avg_fn()},
                                                           {"ema", swa::get_ema_avg_fn(0.9)},
                                                           {"ema multi", swa::get_ema_multi_avg_fn(0.9)}};
  for (const auto& [dtype, cases] : expected) {
    for (const auto& [name, want] : cases) {
      INFO(dtype << " " << name);
      nn::Linear model(3, 2);
      model->to(dtype);
      swa::AveragedModel averaged(model, std::nullopt, functions.at(name));
      for (double v : {0.5, 2.0, -1.0, 3.0, 0.7}) {
        td::NoGradGuard no_grad;
        // To 16 bits through float32, as PyTorch converts float64.
        const td::DType via = dtype == td::kFloat64 ? td::kFloat64 : td::kFloat32;
        model->weight.copy_((td::arange(6, td::kFloat64).view({2, 3}) * 0.1 + v).to(via));
        model->bias.copy_((td::arange(2, td::kFloat64) * 0.1 + v).to(via));
        averaged->update_parameters(model);
      }
      check_equal(td::cat({averaged->module->parameters()[0].flatten(), averaged->module->parameters()[1]}), want);
    }
  }
  check_error([] { swa::get_ema_avg_fn(1.5); }, {"decay = 1.5", "[0, 1]"});
  check_error([] { swa::get_ema_multi_avg_fn(-0.1); }, {"decay = -0.1"});
}

TEST_CASE("AveragedModel's buffers follow the model, or with use_buffers are averaged too", "[cpu]") {
  auto make = [] {
    nn::Sequential model(nn::Linear(3, 4), nn::BatchNorm1d(nn::BatchNormOptions(4)));
    model->to(td::kFloat64);
    return model;
  };
  const auto bn = [](const std::shared_ptr<nn::Module>& m) {
    return std::dynamic_pointer_cast<nn::BatchNorm1dImpl>(
        std::dynamic_pointer_cast<nn::SequentialImpl>(m)->operator[](1));
  };
  for (bool use_buffers : {false, true}) {
    INFO("use_buffers " << use_buffers);
    nn::Sequential model = make();
    swa::AveragedModel averaged(model, std::nullopt, nullptr, use_buffers);
    std::vector<Values> means;
    std::vector<int64_t> counts;
    for (int step = 0; step < 3; ++step) {
      for (int k = 0; k <= step; ++k) model(td::testing::random_tensor({6, 3}, td::kFloat64));
      averaged->update_parameters(model);
      means.push_back(values(bn(model.ptr())->running_mean));
      counts.push_back(bn(model.ptr())->num_batches_tracked.item<int64_t>());
    }
    const auto copy = bn(averaged->module);
    if (!use_buffers) {
      check_equal(copy->running_mean, means.back());
      CHECK(copy->num_batches_tracked.item<int64_t>() == counts.back());
    } else {
      Values mean(4, 0.0);
      for (const Values& m : means) {
        for (size_t i = 0; i < 4; ++i) mean[i] += m[i] / 3;
      }
      check_close(copy->running_mean, mean, 1e-14, 1e-15);
      // The count (1, 3, 6 batches) averaged in floating point, truncated: 1, then 1 + (3 - 1) / 2 = 2,
      // then 2 + (6 - 2) / 3 = 3.33 -> 3.
      CHECK(counts == std::vector<int64_t>{1, 3, 6});
      CHECK(copy->num_batches_tracked.item<int64_t>() == 3);
    }
  }
}

TEST_CASE("AveragedModel's state_dict, clone and device, and a mismatched model refused", "[cpu]") {
  nn::Linear model = float64_linear();
  set_linear(model, 0.5);
  swa::AveragedModel averaged(model, td::Device("cpu:1"));
  CHECK(averaged->module->parameters()[0].device() == td::Device("cpu:1"));
  CHECK(averaged->n_averaged.device() == td::Device("cpu:1"));
  averaged->update_parameters(model);
  set_linear(model, 1.5);
  averaged->update_parameters(model);

  const td::StateDict state = averaged->state_dict();
  CHECK(state.keys() == std::vector<std::string>{"n_averaged", "module.weight", "module.bias"});
  CHECK(state.at("n_averaged").item<int64_t>() == 2);

  nn::Linear other = float64_linear();
  swa::AveragedModel restored(other);
  restored->load_state_dict(state);
  CHECK(restored->averaged_count() == 2);
  check_equal(restored->module->parameters()[0], values(averaged->module->parameters()[0]));

  const auto copy = std::dynamic_pointer_cast<swa::AveragedModelImpl>(averaged->clone());
  REQUIRE(copy);
  CHECK(copy->averaged_count() == 2);
  CHECK(!copy->module->parameters()[0].is_same(averaged->module->parameters()[0]));
  set_linear(model, 2.5);
  copy->update_parameters(model);
  CHECK(copy->averaged_count() == 3);
  CHECK(averaged->averaged_count() == 2);

  // Another structure: refused before anything is written.
  const Values before = all_values(*averaged->module);
  nn::Linear wider(3, 3);
  wider->to(td::kFloat64);
  check_error([&] { averaged->update_parameters(wider); }, {"AveragedModel.update_parameters", "[3, 3]", "[2, 3]"});
  check_error([&] { averaged->update_parameters(nn::Sequential(float64_linear(), float64_linear())); },
              {"AveragedModel.update_parameters", "2 parameters", "4"});
  check_equal(td::cat({averaged->module->parameters()[0].flatten(), averaged->module->parameters()[1]}), before);
  CHECK(averaged->averaged_count() == 2);
}

TEST_CASE("update_bn recomputes BatchNorm statistics as the cumulative average over the inputs", "[cpu]") {
  auto model = nn::Sequential(nn::Linear(3, 4), nn::BatchNorm1d(nn::BatchNormOptions(4).momentum(0.3)));
  model->to(td::kFloat64);
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm1dImpl>(model->operator[](1));
  auto linear = std::dynamic_pointer_cast<nn::LinearImpl>(model->operator[](0));
  for (int k = 0; k < 4; ++k)
    model(td::testing::random_tensor({5, 3}, td::kFloat64, td::testing::Layout::Contiguous, 3, 9));
  model->eval();

  std::vector<Tensor> inputs;
  for (int k = 0; k < 3; ++k) inputs.push_back(td::testing::random_tensor({8, 3}, td::kFloat64));
  swa::update_bn(inputs, *model);

  Values mean(4, 0.0), var(4, 0.0);
  for (const Tensor& x : inputs) {
    const Tensor h = linear->forward(x).detach();
    const Values m = values(h.mean({0})), v = values(h.var({0}));  // the running variance is unbiased
    for (size_t i = 0; i < 4; ++i) {
      mean[i] += m[i] / 3;
      var[i] += v[i] / 3;
    }
  }
  check_close(bn->running_mean, mean, 1e-13, 1e-15);
  check_close(bn->running_var, var, 1e-13, 1e-15);
  CHECK(bn->num_batches_tracked.item<int64_t>() == 3);
  CHECK(bn->options.momentum_ == 0.3);  // restored
  CHECK(!model->is_training());
  CHECK(!bn->is_training());

  // The same over a loader's batches.
  const Tensor stacked = td::cat(inputs);
  td::data::DataLoader loader(std::make_shared<td::data::TensorDataset>(stacked, td::zeros({24}, td::kInt64)),
                              td::data::DataLoaderOptions(8));
  const Values by_list = values(bn->running_var);
  bn->running_var.detach().fill_(7);
  swa::update_bn(loader, *model);
  check_close(bn->running_var, by_list, 1e-15, 0);

  // A forward that throws still restores the momentum and the mode.
  check_error([&] { swa::update_bn({td::zeros({2, 5}, td::kFloat64)}, *model); }, {"linear"});
  CHECK(bn->options.momentum_ == 0.3);
  CHECK(!model->is_training());
}
