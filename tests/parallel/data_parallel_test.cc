// DataParallel on CPU devices, after PyTorch's own DataParallel tests: where outputs land, that
// outputs, gradients and whole training runs equal single-device ones (float64, tight), how the
// batch is split, what travels through scatter and gather, BatchNorm's buffers, errors, and
// what a user sees inside (stats, printing, state_dict).
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <variant>

#include "core/device_threads.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace par = td::parallel;
using td::Device;
using td::Tensor;

namespace {

const Device cpu0("cpu:0"), cpu1("cpu:1"), cpu2("cpu:2"), cpu3("cpu:3");

class MlpImpl : public nn::Cloneable<MlpImpl> {
 public:
  MlpImpl() { reset(); }
  void reset() override {
    fc1 = register_module("fc1", nn::Linear(5, 8));
    fc2 = register_module("fc2", nn::Linear(8, 3));
  }
  Tensor forward(const Tensor& x) override { return fc2(td::tanh(fc1(x))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
};

class CnnImpl : public nn::Cloneable<CnnImpl> {
 public:
  CnnImpl() { reset(); }
  void reset() override {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(1)));
    fc = register_module("fc", nn::Linear(4 * 4 * 4, 3));
  }
  Tensor forward(const Tensor& x) override {
    return fc(td::flatten(td::max_pool2d(td::relu(conv(x)), {2}), 1));
  }
  nn::Conv2d conv{nullptr};
  nn::Linear fc{nullptr};
};

// GroupNorm normalizes each sample on its own: no statistics cross the replicas.
class GroupNormCnnImpl : public nn::Cloneable<GroupNormCnnImpl> {
 public:
  GroupNormCnnImpl() { reset(); }
  void reset() override {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(1)));
    norm = register_module("norm", nn::GroupNorm(nn::GroupNormOptions(2, 4)));
    fc = register_module("fc", nn::Linear(4 * 8 * 8, 3));
  }
  Tensor forward(const Tensor& x) override { return fc(td::flatten(td::relu(norm(conv(x))), 1)); }
  nn::Conv2d conv{nullptr};
  nn::GroupNorm norm{nullptr};
  nn::Linear fc{nullptr};
};

class BnNetImpl : public nn::Cloneable<BnNetImpl> {
 public:
  BnNetImpl() { reset(); }
  void reset() override {
    fc = register_module("fc", nn::Linear(4, 6));
    bn = register_module("bn", nn::BatchNorm1d(6));
  }
  Tensor forward(const Tensor& x) override { return bn(fc(x)); }
  nn::Linear fc{nullptr};
  nn::BatchNorm1d bn{nullptr};
};

// Tokens through an embedding, a two-layer bidirectional LSTM and self-attention, scaled by a
// ParameterList, decoded by the embedding's own weight (registered in two places) plus a
// ParameterDict's bias, as PyTorch's DataParallel tests replicate RNNs and parameter containers.
class SequenceModelImpl : public nn::Cloneable<SequenceModelImpl> {
 public:
  SequenceModelImpl() { reset(); }
  void reset() override {
    embed = register_module("embed", nn::Embedding(10, 6));
    lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(6, 4).num_layers(2).batch_first(true).bidirectional(true)));
    attention = register_module("attention", nn::MultiheadAttention(nn::MultiheadAttentionOptions(8, 2).batch_first(true)));
    // The containers keep each tensor's requires_grad, as LibTorch's.
    scales = register_module("scales", nn::ParameterList(std::vector<Tensor>{
                                           td::randn({8}).requires_grad_(), td::randn({8}).requires_grad_(),
                                           td::randn({6, 8}).requires_grad_()}));
    named = register_module("named", nn::ParameterDict(std::vector<std::pair<std::string, Tensor>>{
                                         {"bias", td::randn({10}).requires_grad_()}}));
    decoder_weight = register_parameter("decoder_weight", embed->weight);  // tied: the same tensor
  }
  Tensor forward(const Tensor& tokens) override {
    const auto [h, state] = lstm(embed(tokens));
    const Tensor scaled = h * (*scales)[0] + (*scales)[1];
    const auto [attended, weights] = attention(scaled, scaled, scaled);
    const Tensor features = td::tanh(nn::functional::linear(attended, (*scales)[2]));
    return nn::functional::linear(features, decoder_weight, (*named)["bias"]);
  }
  nn::Embedding embed{nullptr};
  nn::LSTM lstm{nullptr};
  nn::MultiheadAttention attention{nullptr};
  nn::ParameterList scales{nullptr};
  nn::ParameterDict named{nullptr};
  Tensor decoder_weight;
};

template <typename Impl>
std::shared_ptr<Impl> make_model(uint64_t seed, Device device) {
  td::manual_seed(seed);
  auto m = std::make_shared<Impl>();
  m->to(device, td::kFloat64);
  return m;
}

std::vector<Device> first_devices(int n) {
  std::vector<Device> d;
  for (int i = 0; i < n; ++i) d.emplace_back(td::kCPU, i);
  return d;
}

void check_same_parameters(const nn::Module& a, const nn::Module& b, double tol, const std::string& what) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    td::testing::check_close(pa[i].second.cpu(), pb[i].second.cpu(), tol, tol, what + " " + pa[i].first);
  }
}

// Five SGD steps (momentum) on the whole batch, under DataParallel and on one device; the
// weights (and BatchNorm's running statistics, if the model has them) must agree after every step.
template <typename Impl>
void check_training_matches(const std::vector<Device>& devices, std::optional<std::vector<int64_t>> chunk_sizes,
                            const Tensor& x, const Tensor& y, const std::string& what, bool sync_batchnorm = false) {
  auto model = make_model<Impl>(7, devices[0]);
  auto reference = make_model<Impl>(7, cpu0);
  par::DataParallelOptions options(devices);
  options.sync_batchnorm(sync_batchnorm);
  if (chunk_sizes) options.chunk_sizes(*chunk_sizes);
  par::DataParallel dp(model, options);
  td::optim::SGD opt(dp->parameters(), td::optim::SGDOptions(0.1).momentum(0.9));
  td::optim::SGD ref_opt(reference->parameters(), td::optim::SGDOptions(0.1).momentum(0.9));
  std::vector<std::shared_ptr<nn::Module>> replicas;
  for (int step = 0; step < 5; ++step) {
    Tensor out = dp(x);
    // Built at the first step and reused after every update: only their values are refreshed.
    if (step == 0) replicas = dp->replicas();
    CHECK(dp->replicas() == replicas);
    CHECK(out.device() == devices[0]);
    Tensor ref_out = reference->forward(x);
    td::testing::check_close(out.cpu(), ref_out, 1e-12, 1e-12, what + " output");
    Tensor loss = td::nn::functional::mse_loss(out, y.to(out.device()));
    Tensor ref_loss = td::nn::functional::mse_loss(ref_out, y);
    opt.zero_grad();
    ref_opt.zero_grad();
    loss.backward();
    ref_loss.backward();
    for (const Tensor& p : model->parameters()) CHECK(p.grad().device() == devices[0]);
    opt.step();
    ref_opt.step();
    check_same_parameters(*model, *reference, 1e-10, what + " step " + std::to_string(step));
  }
  if constexpr (requires { model->bn; }) {
    td::testing::check_close(model->bn->running_mean.cpu(), reference->bn->running_mean, 1e-12, 1e-12, what + " mean");
    td::testing::check_close(model->bn->running_var.cpu(), reference->bn->running_var, 1e-12, 1e-12, what + " var");
    CHECK(model->bn->num_batches_tracked.template item<int64_t>() == 5);
  }
}

}  // namespace

TEST_CASE("DataParallel trains an MLP and a CNN (one with GroupNorm too) exactly as one device does, over 1-4 devices",
          "[cpu]") {
  td::testing::reseed(21);
  Tensor x = td::testing::random_tensor({10, 5}, td::kFloat64), y = td::testing::random_tensor({10, 3}, td::kFloat64);
  Tensor images = td::testing::random_tensor({10, 2, 8, 8}, td::kFloat64);
  const std::vector<std::vector<Device>> orders = {{cpu0}, {cpu0, cpu1}, {cpu1, cpu0}, {cpu0, cpu1, cpu2},
                                                   {cpu2, cpu0, cpu3, cpu1}};
  for (const auto& devices : orders) {
    std::string name;
    for (const Device& d : devices) name += d.str() + " ";
    check_training_matches<MlpImpl>(devices, std::nullopt, x, y, "mlp even over " + name);
    check_training_matches<CnnImpl>(devices, std::nullopt, images, y, "cnn even over " + name);
  }
  check_training_matches<MlpImpl>({cpu0, cpu1, cpu2}, std::vector<int64_t>{2, 4, 4}, x, y, "mlp 2,4,4");
  check_training_matches<CnnImpl>({cpu0, cpu1, cpu2}, std::vector<int64_t>{7, 0, 3}, images, y, "cnn 7,0,3");
  check_training_matches<MlpImpl>({cpu1, cpu3}, std::vector<int64_t>{1, 9}, x, y, "mlp 1,9");
  check_training_matches<GroupNormCnnImpl>({cpu0, cpu1, cpu2}, std::vector<int64_t>{1, 6, 3}, images, y,
                                           "GroupNorm cnn 1,6,3");
}

TEST_CASE("an LSTM, attention, parameter containers and a weight registered twice train as on one device",
          "[cpu]") {
  td::testing::reseed(22);
  const Tensor tokens = td::randint(0, 10, {7, 5});
  const Tensor y = td::testing::random_tensor({7, 5, 10}, td::kFloat64);
  {
    auto model = make_model<SequenceModelImpl>(7, cpu0);
    REQUIRE(model->decoder_weight.is_same(model->embed->weight));
    CHECK(model->parameters().size() == 1 + 16 + 4 + 3 + 1);  // the tied weight once
    for (const Tensor& p : model->parameters()) CHECK(p.requires_grad());
    par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
    dp(tokens);
    for (const auto& replica : dp->replicas()) {
      const auto copy = std::dynamic_pointer_cast<SequenceModelImpl>(replica);
      REQUIRE(copy != nullptr);
      CHECK(copy->decoder_weight.is_same(copy->embed->weight));  // still one tensor in each replica
      CHECK(copy->parameters().size() == model->parameters().size());
    }
  }
  check_training_matches<SequenceModelImpl>({cpu0, cpu1}, std::nullopt, tokens, y, "sequence model 4,3");
  check_training_matches<SequenceModelImpl>({cpu2, cpu0, cpu1}, std::nullopt, tokens, y, "sequence model 3,2,2");
  check_training_matches<SequenceModelImpl>({cpu0, cpu1, cpu2}, std::vector<int64_t>{1, 4, 2}, tokens, y,
                                            "sequence model 1,4,2");
}

TEST_CASE("the batch splits 4,3,3 over three devices, by chunk_sizes when given, and only over the rows there are",
          "[cpu]") {
  auto rows_of = [](const par::StepStats& s) {
    std::vector<int64_t> rows;
    for (const auto& d : s.devices) rows.push_back(d.rows);
    return rows;
  };
  auto model = make_model<MlpImpl>(1, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  dp(td::ones({10, 5}, td::kFloat64));
  CHECK(rows_of(dp->stats()) == std::vector<int64_t>{4, 3, 3});
  Tensor two = dp(td::ones({2, 5}, td::kFloat64));
  CHECK(rows_of(dp->stats()) == std::vector<int64_t>{1, 1});  // two replicas for two rows
  CHECK(two.sizes() == td::Shape{2, 3});

  par::DataParallel sized(model, par::DataParallelOptions(first_devices(3)).chunk_sizes({2, 4, 4}));
  sized(td::ones({10, 5}, td::kFloat64));
  CHECK(rows_of(sized->stats()) == std::vector<int64_t>{2, 4, 4});
  td::testing::check_error([&] { sized(td::ones({9, 5}, td::kFloat64)); }, {"chunk_sizes add up to 10", "9 rows"});
}

TEST_CASE("the output of a lone replica is a copy, as with several; one device returns the module's own", "[cpu]") {
  struct PassThroughImpl : nn::Cloneable<PassThroughImpl> {
    PassThroughImpl() { reset(); }
    void reset() override {}
    Tensor forward(const Tensor& x) override { return x; }
  };
  auto model = std::make_shared<PassThroughImpl>();
  const Tensor one_row = td::testing::random_tensor({1, 4}, td::kFloat64).requires_grad_();
  for (const auto& options : {par::DataParallelOptions(first_devices(3)),
                              par::DataParallelOptions(first_devices(2)).chunk_sizes({1, 0})}) {
    par::DataParallel dp(model, options);
    const Tensor out = dp(one_row);
    REQUIRE(dp->stats().devices.size() == 1);  // one replica ran
    CHECK(out.data_ptr() != one_row.data_ptr());
    CHECK(td::testing::values(out) == td::testing::values(one_row));
    out.sum().backward();
    td::testing::check_close(one_row.grad(), td::ones({1, 4}, td::kFloat64), 0, 0, "gradient");
    one_row.grad().zero_();
  }
  // One device runs the module itself, as PyTorch's DataParallel does: its output as it is.
  par::DataParallel single(model, par::DataParallelOptions({cpu0}));
  CHECK(single(one_row).data_ptr() == one_row.data_ptr());
}

namespace {

// Several inputs, a non-tensor argument, a keyword-style map, and nested outputs.
class MixedImpl : public nn::Cloneable<MixedImpl> {
 public:
  MixedImpl() { reset(); }
  void reset() override { fc = register_module("fc", nn::Linear(3, 2)); }
  std::tuple<Tensor, std::vector<Tensor>, std::map<std::string, Tensor>> forward(
      const Tensor& a, const std::pair<Tensor, Tensor>& pair, double scale, const std::map<std::string, Tensor>& kwargs,
      const std::string& tag) {
    TD_CHECK(tag == "whole", "the string argument arrived as '", tag, "'");
    Tensor h = fc(a) * scale + kwargs.at("bias");
    return {h, {pair.first * 2.0, pair.second.sum(1)}, {{"h2", h * h}}};
  }
  nn::Linear fc{nullptr};
};

}  // namespace

TEST_CASE("DataParallel scatters nested arguments, passes non-tensor ones whole, and keeps the output's structure",
          "[cpu]") {
  td::testing::reseed(22);
  auto model = make_model<MixedImpl>(3, cpu1);
  par::DataParallel dp(model, par::DataParallelOptions({cpu1, cpu0, cpu2}).output_device(cpu2));
  Tensor a = td::testing::random_tensor({7, 3}, td::kFloat64).requires_grad_();
  Tensor p0 = td::testing::random_tensor({7, 2}, td::kFloat64), p1 = td::testing::random_tensor({7, 4}, td::kFloat64);
  std::map<std::string, Tensor> kwargs = {{"bias", td::testing::random_tensor({7, 2}, td::kFloat64)}};
  auto [h, list, map] = dp(a, std::make_pair(p0, p1), 0.5, kwargs, std::string("whole"));
  std::map<std::string, Tensor> kwargs1 = {{"bias", kwargs.at("bias").to(cpu1)}};
  auto [rh, rlist, rmap] = model->forward(a.to(cpu1), std::make_pair(p0.to(cpu1), p1.to(cpu1)), 0.5, kwargs1, "whole");
  CHECK(h.device() == cpu2);
  CHECK(list.size() == 2);
  CHECK(list[1].sizes() == td::Shape{7});
  td::testing::check_close(h.cpu(), rh.detach().cpu(), 1e-12, 1e-12, "h");
  td::testing::check_close(list[0].cpu(), rlist[0].cpu(), 0, 0, "pair.first * 2");
  td::testing::check_close(list[1].cpu(), rlist[1].cpu(), 1e-12, 1e-12, "pair.second summed");
  td::testing::check_close(map.at("h2").cpu(), rmap.at("h2").detach().cpu(), 1e-12, 1e-12, "h2");
  // Gradients reach the input through scatter and gather.
  (h.sum() + map.at("h2").sum()).backward();
  Tensor dp_grad = a.grad().clone();
  a.mutable_grad() = Tensor();
  (rh.sum() + rmap.at("h2").sum()).backward();
  td::testing::check_close(dp_grad, a.grad(), 1e-12, 1e-12, "input gradient");
}

namespace {

class NoInputImpl : public nn::Cloneable<NoInputImpl> {
 public:
  NoInputImpl() { reset(); }
  void reset() override { w = register_parameter("w", td::ones({3})); }
  Tensor forward() { return w * 2.0; }
  Tensor w;
};

// A number of its own for every thread this test program starts: a thread created afresh gets a
// new one (std::thread::id values of joined threads may be reused).
int thread_serial() {
  static std::atomic<int> threads_seen{0};
  thread_local const int serial = ++threads_seen;
  return serial;
}

// Records, per device, whether grad mode was on inside the replica, and on which thread it ran.
class ProbeImpl : public nn::Cloneable<ProbeImpl> {
 public:
  ProbeImpl() { reset(); }
  void reset() override { fc = register_module("fc", nn::Linear(2, 2)); }
  Tensor forward(const Tensor& x) override {
    std::lock_guard lock(*mutex);
    (*grad_mode)[x.device().index()] = td::is_grad_enabled();
    (*threads)[x.device().index()] = thread_serial();
    if (*fail_on && x.device() == **fail_on) TD_FAIL("the input on ", x.device(), " has ", x.size(0), " rows");
    return fc(x);
  }
  nn::Linear fc{nullptr};
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
  std::shared_ptr<std::map<int, bool>> grad_mode = std::make_shared<std::map<int, bool>>();
  std::shared_ptr<std::map<int, int>> threads = std::make_shared<std::map<int, int>>();  // thread_serial()s
  // Shared with the replicas, which copy the module's other members once, when they are built.
  std::shared_ptr<std::optional<Device>> fail_on = std::make_shared<std::optional<Device>>();
};

}  // namespace

TEST_CASE("a forward without tensor inputs runs the module on device_ids[0]", "[cpu]") {
  auto model = std::make_shared<NoInputImpl>();
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  Tensor out = dp->forward();
  td::testing::check_equal(out, {2, 2, 2});
  CHECK(out.device() == cpu0);
}

TEST_CASE("replicas run on persistent per-device threads, with the caller's grad mode", "[cpu]") {
  auto model = std::make_shared<ProbeImpl>();
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  dp(td::ones({6, 2}));
  std::map<int, int> first = *model->threads;
  for (int d = 0; d < 3; ++d) CHECK(model->grad_mode->at(d));
  {
    td::NoGradGuard no_grad;
    Tensor out = dp(td::ones({6, 2}));
    CHECK_FALSE(out.requires_grad());
  }
  for (int d = 0; d < 3; ++d) {
    CHECK_FALSE(model->grad_mode->at(d));
    CHECK(model->threads->at(d) == first.at(d));  // the same worker as the step before
    CHECK(model->threads->at(d) != thread_serial());
  }
  CHECK(dp->replicas().size() == 3);
  auto replica = dp->replicas()[1];
  dp(td::ones({6, 2}));
  CHECK(dp->replicas()[1] == replica);  // built once, refreshed each step
}

TEST_CASE("a step that fails in a replica leaves the module's buffers as they were", "[cpu]") {
  // 4 rows over 3 devices are split 2, 1, 1: BatchNorm in training mode refuses the one-row chunks
  // on cpu:1 and cpu:2, while the replica on cpu:0, whose running statistics are the module's
  // own, updates them.
  auto model = make_model<BnNetImpl>(5, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  dp(td::testing::random_tensor({9, 4}, td::kFloat64));  // statistics that are not the initial ones
  const std::vector<Tensor> before = [&] {
    std::vector<Tensor> values;
    for (const Tensor& b : model->buffers()) values.push_back(b.clone());
    return values;
  }();
  auto check_unchanged = [&](const std::string& what) {
    const std::vector<Tensor> now = model->buffers();
    REQUIRE(now.size() == before.size());
    for (size_t i = 0; i < now.size(); ++i) td::testing::check_close(now[i], before[i], 0, 0, what);
  };
  const Tensor x = td::testing::random_tensor({4, 4}, td::kFloat64);
  td::testing::check_error([&] { dp(x); }, {"in replica 1 on device cpu:1", "more than 1 value per channel"});
  check_unchanged("after a failed forward");
  const Tensor target = td::testing::random_tensor({4, 6}, td::kFloat64);
  td::testing::check_error([&] { dp->forward_with_loss(nn::MSELoss(), target, x); },
                           {"in replica 1 on device cpu:1", "more than 1 value per channel"});
  check_unchanged("after a failed forward_with_loss");
  // device_ids[0] given no rows: the first replica that ran gives the module its statistics, and
  // the gather after that fails (cpu:2's replica returns fewer columns).
  struct NarrowedImpl : nn::Cloneable<NarrowedImpl> {
    NarrowedImpl() { reset(); }
    void reset() override {
      fc = register_module("fc", nn::Linear(4, 6));
      bn = register_module("bn", nn::BatchNorm1d(6));
    }
    Tensor forward(const Tensor& x) override {
      const Tensor h = bn(fc(x));
      return x.device().index() == 2 ? h.narrow(1, 0, 3) : h;
    }
    nn::Linear fc{nullptr};
    nn::BatchNorm1d bn{nullptr};
  };
  auto narrowed = make_model<NarrowedImpl>(6, cpu0);
  const Tensor mean = narrowed->bn->running_mean.clone(), count = narrowed->bn->num_batches_tracked.clone();
  par::DataParallel skewed(narrowed, par::DataParallelOptions(first_devices(3)).chunk_sizes({0, 3, 3}));
  td::testing::check_error([&] { skewed(td::testing::random_tensor({6, 4}, td::kFloat64)); }, {"gather"});
  td::testing::check_close(narrowed->bn->running_mean, mean, 0, 0, "after a gather that failed");
  CHECK(narrowed->bn->num_batches_tracked.item<int64_t>() == count.item<int64_t>());
  // A step after them runs as it would have without them: as a model with the same values does.
  auto reference = make_model<BnNetImpl>(5, cpu0);
  {
    td::NoGradGuard no_grad;
    for (size_t i = 0; i < before.size(); ++i) reference->buffers()[i].copy_(before[i]);
  }
  par::DataParallel reference_dp(reference, par::DataParallelOptions(first_devices(3)));
  const Tensor next = td::testing::random_tensor({6, 4}, td::kFloat64);
  td::testing::check_close(dp(next), reference_dp(next), 0, 0, "the next step's output");
  for (size_t i = 0; i < before.size(); ++i) {
    td::testing::check_close(model->buffers()[i], reference->buffers()[i], 0, 0, "the next step's statistics");
  }
}

TEST_CASE("an exception in a replica is re-raised naming the replica and its device", "[cpu]") {
  auto model = std::make_shared<ProbeImpl>();
  *model->fail_on = cpu1;
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  td::testing::check_error([&] { dp(td::ones({9, 2})); }, {"in replica 1 on device cpu:1", "has 3 rows"});
  // Replicas are numbered as device_ids are, also when some get no rows.
  par::DataParallel skewed(model, par::DataParallelOptions(first_devices(3)).chunk_sizes({0, 9, 0}));
  td::testing::check_error([&] { skewed(td::ones({9, 2})); }, {"in replica 1 on device cpu:1", "has 9 rows"});
  model->fail_on->reset();
  CHECK(dp(td::ones({9, 2})).sizes() == td::Shape{9, 2});  // the workers still serve
  // Exceptions of any kind become a tandem::Error naming the replica: another std::exception
  // keeps its message, anything else says what it was.
  const std::vector<Device> devices{cpu2, cpu0};
  td::testing::check_error(
      [&] {
        par::parallel_apply(devices, [&](size_t i) -> int {
          if (i == 1) throw std::out_of_range("no such key");
          return 0;
        });
      },
      {"in replica 1 on device cpu:0", "no such key"});
  td::testing::check_error(
      [&] {
        par::parallel_apply(devices, [&](size_t i) -> int {
          if (i == 0) throw 42;
          return 0;
        });
      },
      {"in replica 0 on device cpu:2", "an exception that is not a std::exception"});
}

TEST_CASE("replicated BatchNorm: each replica normalises its chunk; the first replica's statistics update the module",
          "[cpu]") {
  td::testing::reseed(23);
  auto model = make_model<BnNetImpl>(5, cpu0);
  auto reference = make_model<BnNetImpl>(5, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}).chunk_sizes({4, 6}));
  Tensor x = td::testing::random_tensor({10, 4}, td::kFloat64);
  Tensor out = dp(x);
  // PyTorch's DataParallel semantics: the same as the module on each chunk separately...
  Tensor first = reference->forward(x.narrow(0, 0, 4));
  auto second_model = make_model<BnNetImpl>(5, cpu0);
  Tensor second = second_model->forward(x.narrow(0, 4, 6));
  td::testing::check_close(out.narrow(0, 0, 4).detach(), first.detach(), 1e-12, 1e-12, "chunk 0");
  td::testing::check_close(out.narrow(0, 4, 6).detach(), second.detach(), 1e-12, 1e-12, "chunk 1");
  // ...and the module's running statistics are those of the first replica's chunk.
  td::testing::check_close(model->bn->running_mean, reference->bn->running_mean, 1e-12, 1e-12, "running_mean");
  td::testing::check_close(model->bn->running_var, reference->bn->running_var, 1e-12, 1e-12, "running_var");
  CHECK(model->bn->num_batches_tracked.item<int64_t>() == 1);
  dp(x);
  CHECK(model->bn->num_batches_tracked.item<int64_t>() == 2);
  // In eval mode every replica uses the module's running statistics.
  dp->eval();
  reference->eval();
  Tensor evaluated = dp(x);
  td::testing::check_close(evaluated.detach(), model->forward(x).detach(), 1e-12, 1e-12, "eval");
  CHECK_FALSE(dp->replicas()[1]->is_training());
}

TEST_CASE("loss in the replicas is the exact mean over the whole batch, also for uneven chunks", "[cpu]") {
  td::testing::reseed(24);
  Tensor x = td::testing::random_tensor({10, 5}, td::kFloat64);
  Tensor labels = td::randint(0, 3, {10});
  auto criterion = [](const Tensor& out, const Tensor& target) { return td::nn::functional::cross_entropy(out, target); };
  for (auto sizes : {std::vector<int64_t>{1, 2, 7}, std::vector<int64_t>{4, 3, 3}, std::vector<int64_t>{0, 10, 0}}) {
    // device_ids in an order of their own, the module on the first of them
    auto model = make_model<MlpImpl>(9, cpu2);
    auto reference = make_model<MlpImpl>(9, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions({cpu2, cpu0, cpu1}).chunk_sizes(sizes));
    Tensor loss = dp->forward_with_loss(criterion, labels, x);
    Tensor expected = criterion(reference->forward(x), labels);
    CHECK(loss.dim() == 0);
    CHECK(loss.device() == cpu2);
    td::testing::check_close(loss, expected.detach(), 1e-13, 1e-13, "loss");
    loss.backward();
    expected.backward();
    check_same_parameters(*model, *reference, 0, "");  // unchanged: no step
    for (const Tensor& p : model->parameters()) CHECK(p.grad().device() == cpu2);
    auto g = model->parameters(), rg = reference->parameters();
    for (size_t i = 0; i < g.size(); ++i) td::testing::check_close(g[i].grad(), rg[i].grad(), 1e-12, 1e-13, "grad");
  }
}

TEST_CASE("gathering 0-dim outputs gives one value per replica", "[cpu]") {
  class MeanImpl : public nn::Cloneable<MeanImpl> {
   public:
    MeanImpl() { reset(); }
    void reset() override {}
    Tensor forward(const Tensor& x) override { return x.sum(); }
  };
  par::DataParallel dp(std::make_shared<MeanImpl>(), par::DataParallelOptions(first_devices(3)));
  Tensor out = dp(td::arange(10, td::kFloat32));
  CHECK(out.sizes() == td::Shape{3});
  td::testing::check_equal(out, {0 + 1 + 2 + 3, 4 + 5 + 6, 7 + 8 + 9});
  // One replica, because of one row or of one device, gives one value too: the shape never
  // depends on how many devices there are.
  Tensor one_row = dp(td::full({1}, 5.0));
  CHECK(one_row.sizes() == td::Shape{1});
  td::testing::check_equal(one_row, {5});
  par::DataParallel single(std::make_shared<MeanImpl>(), par::DataParallelOptions({cpu0}).output_device(cpu1));
  Tensor whole = single(td::arange(10, td::kFloat32));
  CHECK(whole.sizes() == td::Shape{1});
  CHECK(whole.device() == cpu1);
  td::testing::check_equal(whole, {45});
  Tensor x = td::arange(4, td::kFloat64).requires_grad_();
  par::DataParallel here(std::make_shared<MeanImpl>(), par::DataParallelOptions({cpu0}));
  Tensor summed = here(x);
  CHECK(summed.sizes() == td::Shape{1});
  summed.backward();  // one element: its gradient is implicit, as for a 0-dim loss
  td::testing::check_equal(x.grad(), {1, 1, 1, 1});
}

TEST_CASE("state_dict has the module's keys and round-trips between DataParallel and a plain module", "[cpu]") {
  auto model = make_model<MlpImpl>(11, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  td::StateDict state = dp->state_dict();
  CHECK(state.keys() == model->state_dict().keys());
  CHECK(state.contains("fc1.weight"));
  auto plain = make_model<MlpImpl>(12, cpu0);
  plain->load_state_dict(state);
  check_same_parameters(*plain, *model, 0, "plain from dp");
  // Keys saved from a PyTorch DataParallel carry "module."; they load too.
  td::StateDict prefixed;
  auto other = make_model<MlpImpl>(13, cpu0);
  for (const auto& [k, t] : other->state_dict()) prefixed.insert("module." + k, t);
  dp->load_state_dict(prefixed);
  check_same_parameters(*model, *other, 0, "dp from prefixed");

  // Buffers too: BatchNorm's running statistics and its step count, after a training step.
  auto bn_model = make_model<BnNetImpl>(14, cpu0);
  par::DataParallel bn_dp(bn_model, par::DataParallelOptions({cpu0, cpu1}));
  bn_dp(td::testing::random_tensor({6, 4}, td::kFloat64));
  td::StateDict bn_state = bn_dp->state_dict();
  CHECK(bn_state.keys() == bn_model->state_dict().keys());
  CHECK(bn_state.contains("bn.num_batches_tracked"));
  auto bn_plain = make_model<BnNetImpl>(15, cpu0);
  bn_plain->load_state_dict(bn_state);
  check_same_parameters(*bn_plain, *bn_model, 0, "BatchNorm model from dp");
  const auto loaded = bn_plain->named_buffers(), saved = bn_model->named_buffers();
  REQUIRE(loaded.size() == saved.size());
  for (size_t b = 0; b < loaded.size(); ++b) td::testing::check_close(loaded[b].second, saved[b].second, 0, 0, saved[b].first);
  CHECK(bn_plain->bn->num_batches_tracked.item<int64_t>() == 1);
  // Back into the DataParallel: the next step's replicas start from the loaded statistics.
  auto fresh = make_model<BnNetImpl>(16, cpu0);
  bn_dp->load_state_dict(fresh->state_dict());
  td::testing::check_close(bn_model->bn->running_mean, fresh->bn->running_mean, 0, 0, "running_mean loaded");
  CHECK(bn_model->bn->num_batches_tracked.item<int64_t>() == 0);
  bn_dp->eval();
  fresh->eval();
  const Tensor x = td::testing::random_tensor({6, 4}, td::kFloat64);
  td::testing::check_close(bn_dp(x), fresh->forward(x).detach(), 1e-14, 1e-14, "eval output after loading");
}

TEST_CASE("balanced chunking gives a device that is slow in forward or in backward fewer rows", "[cpu]") {
  // Sleeps on cpu:1 in proportion to the rows there: in forward, or in backward (a gradient hook).
  class SlowOnOneImpl : public nn::Cloneable<SlowOnOneImpl> {
   public:
    explicit SlowOnOneImpl(bool in_backward = false) : in_backward(in_backward) { reset(); }
    void reset() override { fc = register_module("fc", nn::Linear(2, 2)); }
    Tensor forward(const Tensor& x) override {
      const bool slow = x.device() == Device("cpu:1");
      const int64_t rows = x.size(0);
      if (slow && !in_backward) std::this_thread::sleep_for(std::chrono::milliseconds(2 * rows));
      Tensor out = fc(x);
      if (slow && in_backward) {
        out.register_hook([rows](const Tensor& g) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2 * rows));
          return g;
        });
      }
      return out;
    }
    nn::Linear fc{nullptr};
    bool in_backward;
  };
  for (bool in_backward : {false, true}) {
    INFO((in_backward ? "slow in backward" : "slow in forward"));
    par::DataParallel dp(std::make_shared<SlowOnOneImpl>(in_backward),
                         par::DataParallelOptions({cpu0, cpu1}).chunking(par::Chunking::kBalanced));
    auto step = [&] { dp(td::ones({32, 2})).sum().backward(); };
    step();
    CHECK(dp->stats().devices[1].rows == 16);  // nothing measured yet: even
    for (int i = 0; i < 3; ++i) step();
    const auto& devices = dp->stats().devices;
    INFO("rows: " << devices[0].rows << ", " << devices[1].rows);
    CHECK(devices[1].rows >= 1);
    CHECK(devices[1].rows < 8);
    CHECK(devices[0].rows + devices[1].rows == 32);
  }
}

TEST_CASE("DataParallel's errors say what is wrong and change nothing", "[cpu]") {
  auto model = make_model<MlpImpl>(14, cpu0);
  td::testing::Snapshot weight(model->fc1->weight);
  td::testing::check_error([&] { par::DataParallel dp(model, par::DataParallelOptions({cpu1, cpu0})); },
                           {"device_ids[0] = cpu:1", "'fc1.weight' is on cpu:0", "model->to(td::Device(\"cpu:1\"))"});
  td::testing::check_error([&] { par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu0})); },
                           {"DataParallel", "cpu:0", "twice", "device_ids"});
  td::testing::check_error([&] { par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}).chunk_sizes({3})); },
                           {"1 chunk_sizes for 2 devices"});
  class TwoInputsImpl : public nn::Cloneable<TwoInputsImpl> {
   public:
    TwoInputsImpl() { reset(); }
    void reset() override {}
    Tensor forward(const Tensor& a, const Tensor& b) { return a + b; }
  };
  par::DataParallel two(std::make_shared<TwoInputsImpl>(), par::DataParallelOptions({cpu0, cpu1}));
  td::testing::check_error([&] { two(td::ones({4, 5}), td::ones({3, 5})); }, {"shape [3, 5]", "4 rows"});
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  dp(td::ones({4, 5}, td::kFloat64));
  td::testing::check_error([&] { dp->replicas()[1]->zero_grad(); }, {"zero_grad", "replica", "original module"});
  td::testing::check_error([&] { dp->replicas()[1]->children()[0]->zero_grad(); },
                           {"zero_grad", "replica", "original module"});  // its submodules too
  weight.check_unchanged(model->fc1->weight);
  // Moved after the DataParallel was made, a part of the module is found at the next forward (and
  // on one device too), before anything runs; moved back, it trains again.
  const par::StepStats before = dp->stats();
  model->fc2->to(cpu1);
  td::testing::check_error([&] { dp(td::ones({4, 5}, td::kFloat64)); },
                           {"device_ids[0] = cpu:0", "'fc2.weight' is on cpu:1"});
  CHECK(dp->stats().step == before.step);
  model->to(cpu1);
  par::DataParallel single(model, par::DataParallelOptions({cpu1}));
  model->to(cpu0);
  td::testing::check_error([&] { single(td::ones({4, 5}, td::kFloat64)); },
                           {"device_ids[0] = cpu:1", "'fc1.weight' is on cpu:0"});
  Tensor out = dp(td::ones({4, 5}, td::kFloat64));
  CHECK(out.device() == cpu0);
  CHECK(dp->stats().step == before.step + 1);
  weight.check_unchanged(model->fc1->weight);
}

namespace {

// A model whose reset() makes its lazy layer: each replica's is made afresh, without sizes.
struct LazyHeadImpl : nn::Cloneable<LazyHeadImpl> {
  LazyHeadImpl() { reset(); }
  void reset() override { head = register_module("head", nn::LazyLinear(2)); }
  Tensor forward(const Tensor& x) override { return head(x).tanh(); }
  nn::LazyLinear head{nullptr};
};

}  // namespace

TEST_CASE("a lazy layer is replicated only once it has its sizes, as PyTorch's", "[cpu]") {
  nn::Sequential model(nn::LazyLinear(3), nn::ReLU(), nn::LazyLinear(2));
  model->to(td::kFloat64);
  par::DataParallel dp(model.ptr(), par::DataParallelOptions({cpu0, cpu1}));
  const Tensor x = td::testing::sine_ramp({4, 5}, 0.37);
  td::testing::check_error([&] { dp(x); }, {"replicate", "'0'", "LazyLinear", "uninitialized parameters",
                                            "run one forward on the module"});
  CHECK(model->parameters()[0].numel() == 0);  // nothing materialized on the way
  const Tensor once = model->forward(x);  // one forward on the module gives every layer its sizes
  td::testing::check_close(dp(x), td::testing::values(once), 1e-15, 1e-15);

  // A lazy layer the model's reset() makes: each replica's takes the sizes the model's has.
  auto head = std::make_shared<LazyHeadImpl>();
  head->to(td::kFloat64);
  par::DataParallel head_dp(head, par::DataParallelOptions({cpu0, cpu1, cpu2}));
  Tensor expected = head->forward(x);
  expected.sum().backward();
  const Tensor expected_grad = head->head->weight.grad().clone();
  head->zero_grad();
  Tensor split = head_dp(x);
  td::testing::check_close(split, td::testing::values(expected), 1e-15, 1e-15);
  split.sum().backward();
  td::testing::check_close(head->head->weight.grad(), expected_grad, 1e-14, 1e-14);
}

TEST_CASE("DataParallel prints as PyTorch prints it, and reports each step's phases", "[cpu]") {
  auto model = make_model<MlpImpl>(15, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  std::ostringstream printed;
  printed << dp;
  CHECK(printed.str() ==
        "DataParallel(\n"
        "  (module): Mlp(\n"
        "    (fc1): Linear(in_features=5, out_features=8, bias=True)\n"
        "    (fc2): Linear(in_features=8, out_features=3, bias=True)\n"
        "  )\n"
        ")");
  td::optim::SGD opt(dp->parameters(), 0.1);
  Tensor loss = dp(td::ones({8, 5}, td::kFloat64)).sum();
  loss.backward();
  dp->step(opt);
  par::StepStats s = dp->stats();
  CHECK(s.step == 1);
  REQUIRE(s.devices.size() == 2);
  for (const auto& d : s.devices) {
    CHECK(d.rows == 4);
    CHECK(d.forward > 0);
    CHECK(d.backward > 0);
    CHECK(d.peak_bytes > 0);
  }
  CHECK(s.update > 0);
  CHECK(s.scatter > 0);
  CHECK(s.replicate > 0);
  CHECK(s.gather > 0);
  // Half the batch went to cpu:1, and in backward half the output's gradient (Gather's backward).
  CHECK(s.comm.at("scatter").bytes == (4 * 5 + 4 * 3) * 8);
  CHECK(s.comm.at("gather").bytes == 4 * 3 * 8);
  // cpu:1's replica reads the parameters where they are (CPU devices share one memory): nothing
  // is broadcast. Its gradients are its own, reduced onto the module's.
  CHECK_FALSE(s.comm.contains("broadcast_coalesced"));
  CHECK(s.comm.at("reduce_add_coalesced").bytes == (5 * 8 + 8 + 8 * 3 + 3) * 8);
  CHECK(s.reduce > 0);
  CHECK(s.table().find("cpu:1") != std::string::npos);
  CHECK(s.comm.at("reduce_add_coalesced").nccl_calls == 0);
  CHECK(s.table().find("NCCL") == std::string::npos);
  // A primitive NCCL served says so in its line.
  s.comm["reduce_add_coalesced"].nccl_calls = 1;
  const std::string table = s.table();
  const size_t line = table.find("  reduce_add_coalesced"), note = table.find("(1 by NCCL)");
  REQUIRE(line != std::string::npos);
  REQUIRE(note != std::string::npos);
  CHECK(note > line);
  CHECK(table.find('\n', line) > note);  // on that line
}

namespace {

class BnMlpImpl : public nn::Cloneable<BnMlpImpl> {
 public:
  BnMlpImpl() { reset(); }
  void reset() override {
    fc1 = register_module("fc1", nn::Linear(5, 6));
    bn = register_module("bn", nn::BatchNorm1d(6));
    fc2 = register_module("fc2", nn::Linear(6, 3));
  }
  Tensor forward(const Tensor& x) override { return fc2(td::tanh(bn(fc1(x)))); }
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::BatchNorm1d bn{nullptr};
};

class BnCnnImpl : public nn::Cloneable<BnCnnImpl> {
 public:
  BnCnnImpl() { reset(); }
  void reset() override {
    conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(2, 3, 3).padding(1)));
    bn = register_module("bn", nn::BatchNorm2d(3));
    fc = register_module("fc", nn::Linear(3 * 8 * 8, 3));
  }
  Tensor forward(const Tensor& x) override { return fc(td::flatten(td::relu(bn(conv(x))), 1)); }
  nn::Conv2d conv{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Linear fc{nullptr};
};

}  // namespace

TEST_CASE("sync_batchnorm: BatchNorm over all replicas' rows makes DataParallel train exactly as one device does",
          "[cpu]") {
  td::testing::reseed(25);
  Tensor x = td::testing::random_tensor({10, 5}, td::kFloat64), y = td::testing::random_tensor({10, 3}, td::kFloat64);
  Tensor images = td::testing::random_tensor({10, 2, 8, 8}, td::kFloat64);
  check_training_matches<BnMlpImpl>({cpu0, cpu1}, std::nullopt, x, y, "mlp 5,5", true);
  check_training_matches<BnMlpImpl>({cpu2, cpu0, cpu1}, std::vector<int64_t>{2, 5, 3}, x, y, "mlp 2,5,3", true);
  check_training_matches<BnCnnImpl>({cpu0, cpu1, cpu2, cpu3}, std::nullopt, images, y, "cnn 3,3,2,2", true);

  // Without it each replica normalises its own chunk, and training differs from one device's.
  auto model = make_model<BnMlpImpl>(17, cpu0);
  auto reference = make_model<BnMlpImpl>(17, cpu0);
  par::DataParallel plain(model, par::DataParallelOptions({cpu0, cpu1}));
  Tensor difference = (plain(x).detach() - reference->forward(x).detach()).abs().max();
  CHECK(difference.item<double>() > 1e-3);
}

TEST_CASE("with sync_batchnorm a failing replica is reported, and the others do not wait for it", "[cpu]") {
  class FailingBnImpl : public nn::Cloneable<FailingBnImpl> {
   public:
    FailingBnImpl() { reset(); }
    void reset() override { bn = register_module("bn", nn::BatchNorm1d(2)); }
    Tensor forward(const Tensor& x) override {
      if (x.device() == Device("cpu:2")) TD_FAIL("no statistics from ", x.device());
      return bn(x);
    }
    nn::BatchNorm1d bn{nullptr};
  };
  par::DataParallel dp(std::make_shared<FailingBnImpl>(), par::DataParallelOptions(first_devices(3)).sync_batchnorm(true));
  td::testing::check_error([&] { dp(td::randn({9, 2})); }, {"in replica 2 on device cpu:2", "no statistics from cpu:2"});
  // Two rows use only cpu:0 and cpu:1; their statistics still meet, and the point is usable again.
  CHECK(dp(td::randn({2, 2})).sizes() == td::Shape{2, 2});
}

TEST_CASE("one device: the module itself runs, and its output still goes to output_device", "[cpu]") {
  auto model = make_model<MlpImpl>(19, cpu1);
  par::DataParallel dp(model, par::DataParallelOptions({cpu1}).output_device(cpu2));
  Tensor x = td::testing::random_tensor({4, 5}, td::kFloat64);
  Tensor out = dp(x.to(cpu1));
  CHECK(out.device() == cpu2);
  td::testing::check_close(out.cpu(), model->forward(x.to(cpu1)).detach().cpu(), 0, 0);
  out.sum().backward();
  CHECK(model->fc1->weight.grad().device() == cpu1);
  CHECK(dp->replicas().empty());  // nothing to replicate
  CHECK(dp->module() == model);
  // Inputs elsewhere go to device_ids[0] first, as they would with several devices (PyTorch
  // scatters to device_ids[0] also when there is only one).
  model->zero_grad();
  Tensor input = x.clone().requires_grad_();
  Tensor moved = dp(input);
  CHECK(moved.device() == cpu2);
  td::testing::check_close(moved.cpu(), out.cpu(), 0, 0, "input moved to cpu:1");
  moved.sum().backward();
  CHECK(input.grad().device() == cpu0);
  Tensor labels = td::tensor({0, 2, 1, 1});
  auto criterion = [](const Tensor& o, const Tensor& t) { return td::nn::functional::cross_entropy(o, t); };
  Tensor loss = dp->forward_with_loss(criterion, labels, x);  // input and target both on cpu:0
  td::testing::check_close(loss.cpu(), criterion(model->forward(x.to(cpu1)), labels.to(cpu1)).detach().cpu(), 0, 0,
                           "loss");
}

TEST_CASE("a gradient penalty (double backward) through DataParallel equals one device's", "[cpu]") {
  td::testing::reseed(26);
  Tensor x = td::testing::random_tensor({9, 5}, td::kFloat64);
  auto penalty_grads = [&](const std::shared_ptr<MlpImpl>& model, auto&& forward) {
    Tensor input = x.clone().requires_grad_();
    Tensor out = forward(input);
    Tensor g = td::autograd::grad({out.pow(2).sum()}, {input}, {}, std::nullopt, true)[0];
    Tensor loss = out.sum() + g.pow(2).sum();
    model->zero_grad();
    loss.backward();
    std::vector<Tensor> grads;
    for (const Tensor& p : model->parameters()) grads.push_back(p.grad().clone());
    return grads;
  };
  auto model = make_model<MlpImpl>(21, cpu0);
  auto reference = make_model<MlpImpl>(21, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1, cpu2}));
  auto got = penalty_grads(model, [&](const Tensor& in) { return dp(in); });
  auto expected = penalty_grads(reference, [&](const Tensor& in) { return reference->forward(in); });
  for (size_t i = 0; i < got.size(); ++i) td::testing::check_close(got[i], expected[i], 1e-11, 1e-12, "double backward");
}

namespace {

// One BatchNorm layer applied twice in a forward: its replicas meet twice, in order.
class TwiceBnImpl : public nn::Cloneable<TwiceBnImpl> {
 public:
  TwiceBnImpl() { reset(); }
  void reset() override {
    fc = register_module("fc", nn::Linear(5, 5));
    bn = register_module("bn", nn::BatchNorm1d(5));
  }
  Tensor forward(const Tensor& x) override { return bn(td::tanh(fc(bn(x)))); }
  nn::Linear fc{nullptr};
  nn::BatchNorm1d bn{nullptr};
};

}  // namespace

TEST_CASE("sync_batchnorm: a layer used twice in a forward, and gradients the same bit for bit on every run",
          "[cpu]") {
  td::testing::reseed(27);
  Tensor x = td::testing::random_tensor({11, 5}, td::kFloat64);
  auto run = [&](bool data_parallel) {
    auto model = make_model<TwiceBnImpl>(29, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1, cpu2}).sync_batchnorm(true));
    Tensor out = data_parallel ? dp(x) : model->forward(x);
    (out * out).sum().backward();
    std::vector<std::vector<double>> grads;
    for (const Tensor& p : model->parameters()) grads.push_back(td::testing::values(p.grad()));
    grads.push_back(td::testing::values(out));
    return grads;
  };
  auto single = run(false);
  auto first = run(true);
  for (size_t i = 0; i < single.size(); ++i) {
    for (size_t k = 0; k < single[i].size(); ++k) {
      INFO("tensor " << i << " element " << k);
      CHECK(first[i][k] == Approx(single[i][k]).epsilon(1e-10).margin(1e-12));
    }
  }
  for (int repeat = 0; repeat < 5; ++repeat) CHECK(run(true) == first);
}

TEST_CASE("a Sequential of library layers replicates and trains as one device does", "[cpu]") {
  td::testing::reseed(28);
  auto build = [] {
    td::manual_seed(31);
    nn::Sequential seq(nn::Linear(5, 7), nn::ReLU(), nn::Dropout(0.0), nn::Linear(7, 3));
    seq->to(cpu0, td::kFloat64);
    return seq;
  };
  nn::Sequential model = build(), reference = build();
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1, cpu2}));
  Tensor x = td::testing::random_tensor({8, 5}, td::kFloat64);
  td::testing::check_close(dp(x).detach(), reference(x).detach(), 1e-12, 1e-12, "output");
  dp(x).sum().backward();
  reference(x).sum().backward();
  auto a = model->parameters(), b = reference->parameters();
  for (size_t i = 0; i < a.size(); ++i) td::testing::check_close(a[i].grad(), b[i].grad(), 1e-12, 1e-12, "grad");
  std::ostringstream printed;
  printed << dp;
  CHECK(printed.str().rfind("DataParallel(\n  (module): Sequential(\n    (0): Linear(", 0) == 0);
}

TEST_CASE("replacing a submodule after the replicas were built rebuilds them, also where no tensor changes",
          "[cpu]") {
  td::testing::reseed(29);
  td::manual_seed(32);
  nn::Sequential model(nn::Linear(4, 6), nn::ReLU(), nn::Linear(6, 2));
  model->to(cpu0, td::kFloat64);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  Tensor x = td::testing::random_tensor({6, 4}, td::kFloat64);
  td::testing::check_close(dp(x), model(x), 1e-12, 1e-12, "with ReLU");
  model->replace_module("1", nn::Tanh().ptr());  // same parameters, same shapes
  td::testing::check_close(dp(x), model(x), 1e-12, 1e-12, "with Tanh");
}

namespace {

// Records the intra-op threads each replica's forward and (one node later) backward may use;
// the replica on cpu:1 holds its backward until the one on cpu:0 has finished its own.
class ThreadShareImpl : public nn::Cloneable<ThreadShareImpl> {
 public:
  ThreadShareImpl() { reset(); }
  void reset() override { fc = register_module("fc", nn::Linear(4, 4)); }
  Tensor forward(const Tensor& x) override {
    const Device device = x.device();
    record("forward", device, td::num_threads());
    Tensor h = fc(x);
    h.register_hook([this, device](const Tensor& g) {
      if (device == cpu0) {
        *cpu0_done = true;  // its last node on cpu:0
      } else {
        record("backward", device, td::num_threads());
      }
      return g;
    });
    Tensor y = td::sin(h);
    y.register_hook([this, device](const Tensor& g) {
      if (device == cpu1) {
        while (!*cpu0_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // cpu:0's worker has ended
      }
      return g;
    });
    return y;
  }
  void record(const std::string& phase, const Device& device, int threads) {
    std::lock_guard lock(*mutex);
    (*seen)[phase + " " + device.str()] = threads;
  }
  nn::Linear fc{nullptr};
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
  std::shared_ptr<std::map<std::string, int>> seen = std::make_shared<std::map<std::string, int>>();
  std::shared_ptr<std::atomic<bool>> cpu0_done = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace

TEST_CASE("a replica's backward gets the threads its forward got, however long the other replicas take", "[cpu]") {
  // The share decides how a product is split across threads, and so its last bits: a share that
  // grew when another replica finished first made data-parallel training differ from run to run.
  td::testing::ThreadCount threads(4);
  auto model = make_model<ThreadShareImpl>(33, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  dp(td::testing::random_tensor({8, 4}, td::kFloat64)).sum().backward();
  const std::map<std::string, int> seen = *model->seen;  // the replicas share the record
  REQUIRE(seen.count("forward cpu:1") == 1);
  REQUIRE(seen.count("backward cpu:1") == 1);
  CHECK(seen.at("forward cpu:0") == 2);
  CHECK(seen.at("forward cpu:1") == 2);
  CHECK(seen.at("backward cpu:1") == 2);
}

namespace {

// a + b, for splitting along a negative dim: a [3, n] and b [n] split along their last dims.
class SumImpl : public nn::Cloneable<SumImpl> {
 public:
  SumImpl() { reset(); }
  void reset() override {}
  Tensor forward(const Tensor& a, const Tensor& b) { return a + b; }
};

// Sums what arrives in a vector, an array and optionals.
class ContainersImpl : public nn::Cloneable<ContainersImpl> {
 public:
  ContainersImpl() { reset(); }
  void reset() override { fc = register_module("fc", nn::Linear(2, 2)); }
  Tensor forward(const std::vector<Tensor>& list, const std::array<Tensor, 2>& pair, const std::optional<Tensor>& some,
                 const std::optional<Tensor>& none) {
    TD_CHECK(!none.has_value(), "an empty optional arrived with a value");
    Tensor out = fc(some.value());
    for (const Tensor& t : list) out = out + t;
    return out * pair[0] - pair[1];
  }
  nn::Linear fc{nullptr};
};

// A module whose one child is registered as "module": its own keys start with "module.".
class WrapperImpl : public nn::Cloneable<WrapperImpl> {
 public:
  WrapperImpl() { reset(); }
  void reset() override { inner = register_module("module", nn::Linear(2, 2)); }
  Tensor forward(const Tensor& x) override { return inner(x); }
  nn::Linear inner{nullptr};
};

}  // namespace

TEST_CASE("a negative dim splits each tensor along its own last dims; a dim out of range is an error", "[cpu]") {
  td::testing::reseed(31);
  Tensor a = td::testing::random_tensor({3, 7}, td::kFloat64), b = td::testing::random_tensor({7}, td::kFloat64);
  par::DataParallel dp(std::make_shared<SumImpl>(), par::DataParallelOptions(first_devices(3)).dim(-1));
  Tensor out = dp(a, b);
  CHECK(out.sizes() == td::Shape{3, 7});
  td::testing::check_close(out, a + b, 0, 0, "a + b split along dim -1");
  std::vector<int64_t> rows;
  for (const auto& d : dp->stats().devices) rows.push_back(d.rows);
  CHECK(rows == std::vector<int64_t>{3, 2, 2});
  par::DataParallel beyond(std::make_shared<SumImpl>(), par::DataParallelOptions(first_devices(2)).dim(2));
  td::testing::check_error([&] { beyond(a, b); }, {"DataParallel", "dim 2 is out of range"});
  par::DataParallel second(std::make_shared<SumImpl>(), par::DataParallelOptions(first_devices(2)).dim(1));
  td::testing::check_error([&] { second(a, b); }, {"DataParallel", "dim 1 is out of range for a tensor of 1"});
}

TEST_CASE("vectors, arrays and optionals among the arguments are scattered element by element", "[cpu]") {
  td::testing::reseed(32);
  auto model = make_model<ContainersImpl>(33, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  auto random = [] { return td::testing::random_tensor({5, 2}, td::kFloat64); };
  std::vector<Tensor> list{random(), random(), random()};
  std::array<Tensor, 2> pair{random(), random()};
  Tensor some = random();
  Tensor out = dp(list, pair, std::optional<Tensor>(some), std::optional<Tensor>());
  Tensor expected = model->forward(list, pair, some, std::nullopt);
  CHECK(out.sizes() == td::Shape{5, 2});
  td::testing::check_close(out, expected.detach(), 1e-14, 1e-14, "containers");
  std::vector<int64_t> rows;
  for (const auto& d : dp->stats().devices) rows.push_back(d.rows);
  CHECK(rows == std::vector<int64_t>{2, 2, 1});
}

TEST_CASE("BatchNorm's statistics reach the module also when device_ids[0] gets no rows", "[cpu]") {
  td::testing::reseed(34);
  Tensor x = td::testing::random_tensor({10, 4}, td::kFloat64);
  auto model = make_model<BnNetImpl>(5, cpu0);
  auto reference = make_model<BnNetImpl>(5, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)).chunk_sizes({0, 4, 6}));
  dp(x);
  reference->forward(x.narrow(0, 0, 4));  // cpu:1's chunk: the first replica that ran
  td::testing::check_close(model->bn->running_mean, reference->bn->running_mean, 1e-12, 1e-12, "running_mean");
  td::testing::check_close(model->bn->running_var, reference->bn->running_var, 1e-12, 1e-12, "running_var");
  CHECK(model->bn->num_batches_tracked.item<int64_t>() == 1);
  auto criterion = [](const Tensor& out, const Tensor&) { return out.pow(2).mean(); };
  dp->forward_with_loss(criterion, x, x);
  reference->forward(x.narrow(0, 0, 4));
  td::testing::check_close(model->bn->running_mean, reference->bn->running_mean, 1e-12, 1e-12, "running_mean, loss");
  CHECK(model->bn->num_batches_tracked.item<int64_t>() == 2);
  // In eval mode the replicas write no statistics, and none are written back.
  dp->eval();
  std::vector<uint32_t> versions;
  for (const Tensor& b : model->buffers()) versions.push_back(b.version());
  dp(x);
  for (size_t i = 0; i < versions.size(); ++i) CHECK(model->buffers()[i].version() == versions[i]);
  CHECK(model->bn->num_batches_tracked.item<int64_t>() == 2);
}

TEST_CASE("loss in the replicas moves one number per replica, and none of the outputs", "[cpu]") {
  td::testing::reseed(35);
  auto model = make_model<MlpImpl>(36, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  Tensor x = td::testing::random_tensor({30, 5}, td::kFloat64);
  Tensor labels = td::randint(0, 3, {30});
  auto criterion = [](const Tensor& out, const Tensor& target) { return td::nn::functional::cross_entropy(out, target); };
  dp->forward_with_loss(criterion, labels, x).backward();
  par::StepStats s = dp->stats();
  CHECK(s.comm.at("gather").calls == 1);
  CHECK(s.comm.at("gather").bytes == 2 * 8);  // the losses of cpu:1 and cpu:2, float64
  for (const auto& d : s.devices) CHECK(d.loss > 0);
  dp(x).sum().backward();
  CHECK(dp->stats().comm.at("gather").bytes == 2 * 10 * 3 * 8);  // a plain forward gathers the outputs
}

TEST_CASE("load_state_dict strips PyTorch's 'module.' prefix only where the keys are not the module's own", "[cpu]") {
  auto model = make_model<WrapperImpl>(37, cpu0);
  auto other = make_model<WrapperImpl>(38, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(2)));
  td::StateDict own = other->state_dict();
  CHECK(own.keys() == std::vector<std::string>{"module.weight", "module.bias"});
  auto loaded = dp->load_state_dict(own);
  CHECK(loaded.missing_keys.empty());
  td::testing::check_close(model->inner->weight, other->inner->weight, 0, 0, "keys of its own");
  td::StateDict prefixed;
  auto third = make_model<WrapperImpl>(39, cpu0);
  for (const auto& [key, t] : third->state_dict()) prefixed.insert("module." + key, t);
  dp->load_state_dict(prefixed);
  td::testing::check_close(model->inner->weight, third->inner->weight, 0, 0, "keys saved from a DataParallel");
}

TEST_CASE("default device_ids: every GPU, or with none TANDEM_CPU_DEVICES CPU devices", "[cpu]") {
  if (td::cuda::is_available()) {
    CHECK(par::visible_devices().size() == static_cast<size_t>(td::cuda::device_count()));
    return;
  }
  // Restores the variable however the test ends.
  struct EnvGuard {
    std::optional<std::string> saved;
    EnvGuard() {
      if (const char* before = std::getenv("TANDEM_CPU_DEVICES")) saved = before;
    }
    ~EnvGuard() { saved ? ::setenv("TANDEM_CPU_DEVICES", saved->c_str(), 1) : ::unsetenv("TANDEM_CPU_DEVICES"); }
  } guard;
  ::setenv("TANDEM_CPU_DEVICES", "3", 1);
  auto model = make_model<MlpImpl>(40, cpu0);
  par::DataParallel dp(model);
  CHECK(dp->device_ids() == first_devices(3));
  CHECK(dp->output_device() == cpu0);
  CHECK(par::parse_devices("all") == first_devices(3));
  CHECK(dp(td::ones({6, 5}, td::kFloat64)).sizes() == td::Shape{6, 3});
  ::setenv("TANDEM_CPU_DEVICES", "0", 1);
  td::testing::check_error([] { par::visible_devices(); }, {"TANDEM_CPU_DEVICES='0'", "between 1 and"});
  ::setenv("TANDEM_CPU_DEVICES", "two", 1);
  td::testing::check_error([] { par::DataParallel bad(std::make_shared<SumImpl>()); }, {"TANDEM_CPU_DEVICES='two'"});
}

TEST_CASE("with sync_batchnorm a replica that skips a BatchNorm layer is reported after the timeout", "[cpu]") {
  class SkippingBnImpl : public nn::Cloneable<SkippingBnImpl> {
   public:
    SkippingBnImpl() { reset(); }
    void reset() override { bn = register_module("bn", nn::BatchNorm1d(2)); }
    Tensor forward(const Tensor& x) override { return x.device() == cpu1 && x.size(0) > 2 ? x : bn(x); }
    nn::BatchNorm1d bn{nullptr};
  };
  auto options = par::DataParallelOptions(first_devices(2)).sync_batchnorm(true).sync_batchnorm_timeout(
      std::chrono::milliseconds(1000));
  par::DataParallel dp(std::make_shared<SkippingBnImpl>(), options);
  const auto start = std::chrono::steady_clock::now();
  td::testing::check_error([&] { dp(td::randn({6, 2})); },
                           {"in replica 0 on device cpu:0", "waited 1000 ms", "the same BatchNorm layers"});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  // Both replicas run the layer and meet: the same DataParallel runs again after a timeout. (A
  // second is long enough for the two replicas of a busy machine to reach the layer.)
  CHECK(dp(td::randn({4, 2})).sizes() == td::Shape{4, 2});
  td::testing::check_error(
      [] {
        par::DataParallel bad(std::make_shared<SkippingBnImpl>(),
                              par::DataParallelOptions(first_devices(2)).sync_batchnorm_timeout(std::chrono::milliseconds(0)));
      },
      {"sync_batchnorm_timeout must be positive and at most a year, got 0 ms"});
}

TEST_CASE("data_parallel, the functional form, gives one device's outputs and gradients", "[cpu]") {
  auto model = make_model<MlpImpl>(23, cpu0);
  auto reference = make_model<MlpImpl>(23, cpu0);
  Tensor x = td::testing::random_tensor({10, 5}, td::kFloat64);
  Tensor out = par::data_parallel(model, x, {cpu0, cpu1, cpu2});
  CHECK(out.device() == cpu0);
  Tensor ref_out = reference->forward(x);
  td::testing::check_close(out, ref_out, 1e-12, 1e-12, "output");
  // The replicas were made for the call and are gone; the graph to the module's parameters is not.
  (out * out).sum().backward();
  (ref_out * ref_out).sum().backward();
  auto params = model->named_parameters(), ref_params = reference->named_parameters();
  REQUIRE(params.size() == ref_params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    CHECK(params[i].second.grad().device() == cpu0);
    td::testing::check_close(params[i].second.grad(), ref_params[i].second.grad(), 1e-12, 1e-12, params[i].first);
  }
  // output_device, and every visible device by default.
  CHECK(par::data_parallel(model, x, {cpu0, cpu1}, cpu2).device() == cpu2);
  td::testing::check_close(par::data_parallel(model, x).detach(), ref_out.detach(), 1e-12, 1e-12, "default devices");
  // The options form: any option and any arguments of the forward.
  class TwoInputsImpl : public nn::Cloneable<TwoInputsImpl> {
   public:
    TwoInputsImpl() { reset(); }
    void reset() override {}
    Tensor forward(const Tensor& a, double scale) { return a * scale; }
  };
  Tensor y = td::testing::random_tensor({10, 3}, td::kFloat64);
  Tensor scaled = par::data_parallel(std::make_shared<TwoInputsImpl>(),
                                     par::DataParallelOptions({cpu1, cpu0}).chunk_sizes({3, 7}).output_device(cpu0),
                                     y, 2.0);
  CHECK(scaled.device() == cpu0);
  td::testing::check_close(scaled, y * 2.0, 0, 0, "two arguments");
  // A module holder.
  td::manual_seed(5);
  nn::Linear linear(4, 6);
  linear->to(td::kFloat64);
  Tensor z = td::testing::random_tensor({3, 4}, td::kFloat64);
  td::testing::check_close(par::data_parallel(linear, z, {cpu0, cpu1}).detach(), linear(z).detach(), 1e-12, 1e-12,
                           "Linear");
  // Errors as DataParallel's, the module unchanged.
  td::testing::Snapshot weight(model->fc1->weight);
  td::testing::check_error([&] { par::data_parallel(model, x, {cpu1, cpu0}); },
                           {"device_ids[0] = cpu:1", "'fc1.weight' is on cpu:0"});
  td::testing::check_error([&] { par::data_parallel(model, x, {cpu0, cpu1}, std::nullopt, 2); },
                           {"DataParallel", "dim 2 is out of range"});
  weight.check_unchanged(model->fc1->weight);
}

TEST_CASE("a buffer that requires grad gets through DataParallel the gradient one device gives it", "[cpu]") {
  // After PyTorch's test_data_parallel_buffers_requiring_grad.
  class ScaleShiftImpl : public nn::Cloneable<ScaleShiftImpl> {
   public:
    ScaleShiftImpl() { reset(); }
    void reset() override {
      scale = register_buffer("scale", td::testing::random_tensor({6}, td::kFloat64).requires_grad_());
      shift = register_buffer("shift", td::testing::random_tensor({6}, td::kFloat64));
    }
    Tensor forward(const Tensor& x) override { return x * scale + shift; }
    Tensor scale, shift;
  };
  td::testing::reseed(41);
  auto model = std::make_shared<ScaleShiftImpl>();
  auto reference = std::dynamic_pointer_cast<ScaleShiftImpl>(model->clone());
  Tensor x = td::testing::random_tensor({7, 6}, td::kFloat64).requires_grad_();
  Tensor ref_x = x.detach().clone().requires_grad_();
  // Uneven chunks, devices out of order, and replicas kept across two steps.
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu2, cpu1}).chunk_sizes({3, 1, 3}));
  for (int step = 0; step < 2; ++step) {
    Tensor out = dp(x);
    Tensor ref_out = reference->forward(ref_x);
    td::testing::check_close(out, ref_out, 1e-12, 1e-12, "output");
    (out * out).sum().backward();
    (ref_out * ref_out).sum().backward();
    REQUIRE(model->scale.grad().defined());
    CHECK(model->scale.grad().device() == cpu0);
    td::testing::check_close(model->scale.grad(), reference->scale.grad(), 1e-12, 1e-12, "scale's gradient");
    td::testing::check_close(x.grad(), ref_x.grad(), 1e-12, 1e-12, "input's gradient");
    CHECK_FALSE(model->shift.grad().defined());
    CHECK_FALSE(model->shift.requires_grad());
  }
  // Finite differences through the functional form, with respect to the input and the buffer.
  auto fn = [&](const std::vector<Tensor>& in) { return par::data_parallel(model, in[0], {cpu0, cpu1, cpu2}); };
  auto result = td::autograd::gradcheck(fn, {x, model->scale});
  INFO(result.report);
  CHECK(result);
  // Without grad mode nothing is recorded, and the buffer's gradient is not touched.
  Tensor before = model->scale.grad().clone();
  {
    td::NoGradGuard no_grad;
    CHECK_FALSE(dp(x).requires_grad());
  }
  td::testing::check_close(model->scale.grad(), before, 0, 0, "scale's gradient after a no-grad forward");
}

TEST_CASE("dropout in the replicas is the same on every run, whichever replica draws first", "[cpu]") {
  // Each device draws from its own generator: the masks do not depend on which replica's thread
  // reaches its dropout first, and two replicas do not drop the same units.
  class DropNetImpl : public nn::Cloneable<DropNetImpl> {
   public:
    explicit DropNetImpl(std::shared_ptr<std::atomic<int>> slow_device) : slow_device_(std::move(slow_device)) {
      reset();
    }
    void reset() override {
      fc = register_module("fc", nn::Linear(5, 64));
      drop = register_module("drop", nn::Dropout(0.5));
    }
    Tensor forward(const Tensor& x) override {
      Tensor h = fc(x);
      if (x.device().index() == slow_device_->load()) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      return drop(h);
    }
    nn::Linear fc{nullptr};
    nn::Dropout drop{nullptr};

   private:
    std::shared_ptr<std::atomic<int>> slow_device_;  // shared with the replicas
  };
  auto slow_device = std::make_shared<std::atomic<int>>(-1);
  td::manual_seed(31);
  auto model = std::make_shared<DropNetImpl>(slow_device);
  model->to(td::kFloat64);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  const Tensor x = td::ones({4, 5}, td::kFloat64);  // the same rows in both chunks
  auto run = [&](int slow) {
    slow_device->store(slow);
    model->zero_grad();
    td::manual_seed(77);
    Tensor out = dp(x);
    out.pow(2).sum().backward();
    return std::make_pair(out.detach(), model->fc->weight.grad().clone());
  };
  const auto [first_out, first_grad] = run(0);   // cpu:1's replica draws first
  const auto [second_out, second_grad] = run(1);  // cpu:0's replica draws first
  td::testing::check_close(second_out, first_out, 0, 0, "outputs");
  td::testing::check_close(second_grad, first_grad, 0, 0, "gradients");
  // Equal rows, different masks: the two replicas' chunks differ where one dropped and one kept.
  CHECK(td::testing::values(first_out.narrow(0, 0, 2) == 0) != td::testing::values(first_out.narrow(0, 2, 2) == 0));
}

TEST_CASE("parallel_apply, LibTorch's form, runs each module on its input's device", "[cpu]") {
  // After PyTorch's test_parallel_apply and test_parallel_apply_passes_exception.
  td::testing::reseed(51);
  nn::Linear l1(10, 5), l2(10, 5);
  l1->to(cpu0, td::kFloat64);
  l2->to(cpu1, td::kFloat64);
  const Tensor i1 = td::testing::random_tensor({2, 10}, td::kFloat64);
  const Tensor i2 = td::testing::random_tensor({3, 10}, td::kFloat64).to(cpu1);
  const Tensor e1 = l1(i1).detach(), e2 = l2(i2).detach();
  std::vector<Tensor> outs = par::parallel_apply(std::vector<nn::Linear>{l1, l2}, std::vector<Tensor>{i1, i2});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].device() == cpu0);
  CHECK(outs[1].device() == cpu1);
  td::testing::check_close(outs[0], e1, 0, 0, "module 0");
  td::testing::check_close(outs[1], e2, 0, 0, "module 1");
  // The outputs carry gradients back to each module, on its device.
  (outs[0].sum() + outs[1].sum().to(cpu0)).backward();
  CHECK(l2->weight.grad().device() == cpu1);
  td::testing::check_close(l2->weight.grad().cpu(), i2.cpu().sum(0, true).expand({5, 10}), 1e-12, 1e-12,
                           "module 1's weight gradient");
  // Implementations by shared_ptr, inputs as tuples of arguments, devices given.
  auto tupled = par::parallel_apply(std::vector<std::shared_ptr<nn::LinearImpl>>{l1.ptr(), l2.ptr()},
                                    std::vector<std::tuple<Tensor>>{{i1}, {i2}}, std::vector<Device>{cpu0, cpu1});
  td::testing::check_close(tupled[1], e2, 0, 0, "tuple input");
  class AddImpl : public nn::Cloneable<AddImpl> {
   public:
    AddImpl() { reset(); }
    void reset() override {}
    Tensor forward(const Tensor& a, double b) {
      TD_CHECK(a.device() != cpu1 || b >= 0, "wonderful");  // fails on cpu:1 for a negative b
      return a + b;
    }
  };
  auto add0 = std::make_shared<AddImpl>(), add1 = std::make_shared<AddImpl>();
  using Args = std::tuple<Tensor, double>;
  auto sums = par::parallel_apply(std::vector<std::shared_ptr<AddImpl>>{add0, add1},
                                  std::vector<Args>{{i1, 1.0}, {i2, 2.0}});
  td::testing::check_close(sums[1], i2 + 2.0, 0, 0, "two arguments");
  CHECK(par::parallel_apply(std::vector<nn::Linear>{}, std::vector<Tensor>{}).empty());
  // What goes wrong is said, and nothing runs.
  td::testing::Snapshot weight(l1->weight);
  td::testing::check_error([&] { par::parallel_apply(std::vector<nn::Linear>{l1, l2}, std::vector<Tensor>{i1}); },
                           {"parallel_apply", "2 modules but 1 inputs"});
  td::testing::check_error(
      [&] { par::parallel_apply(std::vector<nn::Linear>{l1, l2}, std::vector<Tensor>{i1, i2}, std::vector<Device>{cpu0}); },
      {"parallel_apply", "1 devices for 2 modules"});
  td::testing::check_error([&] { par::parallel_apply(std::vector<nn::Linear>{l1, l1}, std::vector<Tensor>{i1, i1}); },
                           {"parallel_apply", "cpu:0 is given two modules"});
  class CountImpl : public nn::Cloneable<CountImpl> {
   public:
    CountImpl() { reset(); }
    void reset() override {}
    Tensor forward(const std::vector<Tensor>& xs) { return td::full({}, static_cast<double>(xs.size())); }
  };
  td::testing::check_error(
      [&] {
        par::parallel_apply(std::vector<std::shared_ptr<CountImpl>>{std::make_shared<CountImpl>()},
                            std::vector<std::vector<Tensor>>{{}});
      },
      {"parallel_apply", "input 0 holds no tensor", "pass devices"});
  td::testing::check_error(
      [&] { par::parallel_apply(std::vector<nn::Linear>{l1, nn::Linear(nullptr)}, std::vector<Tensor>{i1, i2}); },
      {"parallel_apply", "module 1 is empty"});
  td::testing::check_error(
      [&] { par::parallel_apply(std::vector<std::shared_ptr<AddImpl>>{add0, nullptr}, std::vector<Args>{{i1, 1.0}, {i2, 1.0}}); },
      {"parallel_apply", "module 1 is null"});
  // An exception in a module is raised after both finished, naming the replica and its device.
  td::testing::check_error(
      [&] {
        par::parallel_apply(std::vector<std::shared_ptr<AddImpl>>{add0, add1}, std::vector<Args>{{i1, -1.0}, {i2, -1.0}});
      },
      {"in replica 1 on device cpu:1", "wonderful"});
  weight.check_unchanged(l1->weight);
}

TEST_CASE("two forwards before one backward (a GAN's real and fake batches) give one device's gradients", "[cpu]") {
  // The kept replicas are refreshed at each forward. A forward's graph holds the replicas'
  // weights for its backward, so a second forward must not write them again while they are
  // unchanged; once the module's values change (a step, an in-place write, load_state_dict)
  // the next forward must see the new ones.
  auto model = make_model<MlpImpl>(11, cpu0);
  auto reference = make_model<MlpImpl>(11, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1, cpu2}));
  td::manual_seed(12);
  const Tensor real = td::randn({7, 5}, td::kFloat64), fake = td::randn({5, 5}, td::kFloat64);
  auto loss_of = [](const Tensor& a, const Tensor& b) { return a.pow(2).sum() + td::tanh(b).sum(); };
  Tensor loss = loss_of(dp(real), dp(fake));
  Tensor ref_loss = loss_of(reference->forward(real), reference->forward(fake));
  loss.backward();
  ref_loss.backward();
  td::testing::check_close(loss, ref_loss, 1e-12, 1e-12, "loss");
  for (size_t i = 0; i < model->parameters().size(); ++i) {
    td::testing::check_close(model->parameters()[i].grad(), reference->parameters()[i].grad(), 1e-12, 1e-12,
                             "gradient " + std::to_string(i));
  }

  auto check_outputs = [&](const std::string& what) {
    td::NoGradGuard no_grad;
    td::testing::check_close(dp(real), reference->forward(real), 1e-12, 1e-12, what);
  };
  td::optim::SGD opt(dp->parameters(), td::optim::SGDOptions(0.1));
  td::optim::SGD ref_opt(reference->parameters(), td::optim::SGDOptions(0.1));
  opt.step();
  ref_opt.step();
  check_outputs("after a step");
  {
    td::NoGradGuard no_grad;
    model->fc2->weight.mul_(0.5);
    reference->fc2->weight.mul_(0.5);
  }
  check_outputs("after an in-place write");
  auto other = make_model<MlpImpl>(13, cpu0);
  model->load_state_dict(other->state_dict());
  reference->load_state_dict(other->state_dict());
  check_outputs("after load_state_dict");

  // A step between the two forwards writes weights the first forward's graph needs (PyTorch: the
  // same error, from device_ids[0]'s replica, which is the module itself there as here).
  Tensor first = dp(real);
  opt.step();
  Tensor second = dp(fake);
  CHECK_THROWS_WITH(loss_of(first, second).backward(), Catch::Contains("modified by an in-place operation"));
}

TEST_CASE("loss in the replicas is the batch's loss also with class weights, ignored rows and label smoothing",
          "[cpu]") {
  // A chunk's mean divides by its own targets' class weights (or its rows not ignored), so
  // weighting chunks by rows would be wrong here; forward_with_loss adds up sums and denominators.
  td::testing::reseed(41);
  Tensor x = td::testing::random_tensor({10, 5}, td::kFloat64);
  // cpu:0's 4 rows: 1 ignored; cpu:1's 3 rows: all ignored (a mean of its own would be 0/0)
  Tensor labels = td::tensor(std::vector<int64_t>{2, -100, 0, 1, -100, -100, -100, 2, 0, 1});
  Tensor soft = td::softmax(td::testing::random_tensor({10, 3}, td::kFloat64), 1);
  Tensor weight = td::tensor(std::vector<double>{0.2, 1.5, 3.0});
  auto check = [&](auto&& criterion, const Tensor& target, const std::string& what) {
    INFO(what);
    auto model = make_model<MlpImpl>(42, cpu0);
    auto reference = make_model<MlpImpl>(42, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)).chunk_sizes({4, 3, 3}));
    Tensor loss = dp->forward_with_loss(criterion, target, x);
    Tensor expected;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(criterion)>, nn::CrossEntropyLossImpl>) {
      expected = criterion.forward(reference->forward(x), target);
    } else if constexpr (std::is_same_v<decltype(criterion(x, target)), par::LossSum>) {
      par::LossSum whole = criterion(reference->forward(x), target);
      expected = whole.sum / whole.denominator;
    } else {
      expected = criterion(reference->forward(x), target);
    }
    CHECK(loss.dim() == 0);
    td::testing::check_close(loss, expected.detach(), 1e-13, 1e-13, what + " loss");
    loss.backward();
    expected.backward();
    auto g = model->parameters(), rg = reference->parameters();
    for (size_t i = 0; i < g.size(); ++i) td::testing::check_close(g[i].grad(), rg[i].grad(), 1e-12, 1e-13, what);
  };
  using Options = nn::CrossEntropyLossOptions;
  check(nn::CrossEntropyLoss(Options().weight(weight)), td::where(labels >= 0, labels, 1), "class weights");
  check(nn::CrossEntropyLoss(Options().weight(weight)), td::where(labels >= 0, labels, 1).to(td::kUInt8),
        "class weights, uint8 targets");
  check(nn::CrossEntropyLoss(), labels, "ignored rows");
  check(nn::CrossEntropyLoss(Options().weight(weight).label_smoothing(0.1)), labels, "weights, ignored, smoothing");
  check(nn::CrossEntropyLoss(Options().weight(weight).reduction(td::kSum)), labels, "reduction sum");
  check(nn::CrossEntropyLoss(Options().weight(weight)), soft, "class probabilities");
  check(nn::NLLLoss(nn::NLLLossOptions().weight(weight)),
        labels, "NLLLoss");  // of raw scores: a loss all the same
  nn::CrossEntropyLossImpl impl(Options().ignore_index(1));
  check(impl, td::where(labels >= 0, labels, 1), "a module by reference, its own ignore_index");
  // A criterion of one's own gives the sum and the denominator itself.
  check([](const Tensor& out, const Tensor& target) {
    Tensor counted = target != -100;
    return par::LossSum{td::nn::functional::cross_entropy(out, target, {}, -100, td::kSum), counted.sum().to(td::kFloat64)};
  }, labels, "LossSum");

  // The replicas' results must be of one kind: a denominator from some chunks only is an error
  // (cpu:1's rows are all ignored here), and the next step runs as usual.
  {
    auto model = make_model<MlpImpl>(42, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)).chunk_sizes({4, 3, 3}));
    auto sometimes = [](const Tensor& out, const Tensor& target) {
      Tensor counted = target != -100;
      Tensor sum = td::nn::functional::cross_entropy(out, target, {}, -100, td::kSum);
      if (counted.sum().item<int64_t>() == 0) return par::LossSum{sum, Tensor()};
      return par::LossSum{sum, counted.sum().to(td::kFloat64)};
    };
    CHECK_THROWS_WITH(dp->forward_with_loss(sometimes, labels, x),
                      Catch::Contains("disagree between replicas") &&
                          Catch::Contains("replica 0 on cpu:0 returned a float64 loss with a denominator, replica 1 "
                                          "on cpu:1 a float64 loss without one"));
    Tensor loss = dp->forward_with_loss(nn::CrossEntropyLoss(), labels, x);
    td::testing::check_close(loss, nn::CrossEntropyLoss()(model->forward(x), labels).detach(), 1e-13, 1e-13,
                             "after the error");
  }

  // A denominator carries no gradient, on one device as on several.
  {
    auto by_squares = [](const Tensor& out, const Tensor&) { return par::LossSum{out.sum(), (out * out).sum()}; };
    std::vector<std::vector<Tensor>> grads;
    for (int n : {1, 3}) {
      auto model = make_model<MlpImpl>(42, cpu0);
      par::DataParallel dp(model, par::DataParallelOptions(first_devices(n)));
      dp->forward_with_loss(by_squares, labels, x).backward();
      grads.emplace_back();
      for (const Tensor& p : model->parameters()) grads.back().push_back(p.grad());
    }
    auto reference = make_model<MlpImpl>(42, cpu0);
    Tensor out = reference->forward(x);
    (out.sum() / (out * out).sum().detach()).backward();
    auto rp = reference->parameters();
    for (size_t i = 0; i < rp.size(); ++i) {
      td::testing::check_close(grads[0][i], rp[i].grad(), 1e-12, 1e-13, "detached denominator, 1 device");
      td::testing::check_close(grads[1][i], rp[i].grad(), 1e-12, 1e-13, "detached denominator, 3 devices");
    }
  }

  // A loss per row cannot be added up over replicas: an error, on one device as on several.
  for (int n : {1, 3}) {
    auto model = make_model<MlpImpl>(42, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(n)));
    CHECK_THROWS_WITH(dp->forward_with_loss(nn::CrossEntropyLoss(Options().reduction(td::kNone)), labels, x),
                      Catch::Contains("reduction none"));
    auto per_row = [](const Tensor& out, const Tensor&) { return out.sum(1); };
    CHECK_THROWS_WITH(dp->forward_with_loss(per_row, labels, x), Catch::Contains("must return a 0-dim loss"));
  }
}

TEST_CASE("element-wise loss modules in the replicas give the batch's loss: sums stay sums, weights follow the chunks",
          "[cpu]") {
  // A sum returned as a 0-dim tensor would be weighted by the chunk's rows like a mean (about a
  // third of the batch's sum over three devices); BCE's weight and pos_weight, on cpu:0, would
  // meet the chunks of cpu:1 and cpu:2 on another device.
  class ProbabilitiesImpl : public nn::Cloneable<ProbabilitiesImpl> {
   public:
    ProbabilitiesImpl() { reset(); }
    void reset() override { mlp = register_module("mlp", std::make_shared<MlpImpl>()); }
    Tensor forward(const Tensor& x) override { return td::sigmoid(mlp->forward(x)); }
    std::shared_ptr<MlpImpl> mlp;
  };
  td::testing::reseed(43);
  const Tensor x = td::testing::random_tensor({10, 5}, td::kFloat64);
  const Tensor target = td::rand({10, 3}, td::kFloat64);
  const Tensor weight = td::tensor(std::vector<double>{0.2, 1.5, 3.0});
  const Tensor pos_weight = td::tensor(std::vector<double>{2.0, 0.5, 1.0});
  auto check = [&](auto&& criterion, const std::string& what, const Tensor& other_target = Tensor()) {
    const Tensor& y = other_target.defined() ? other_target : target;
    for (int n : {1, 3}) {
      INFO(what << " over " << n << " devices");
      auto model = make_model<ProbabilitiesImpl>(44, cpu0);
      auto reference = make_model<ProbabilitiesImpl>(44, cpu0);
      par::DataParallelOptions options(first_devices(n));
      if (n == 3) options.chunk_sizes({4, 3, 3});
      par::DataParallel dp(model, options);
      Tensor loss = dp->forward_with_loss(criterion, y, x);
      Tensor expected;
      if constexpr (requires { criterion.forward(x, y); }) {
        expected = criterion.forward(reference->forward(x), y);
      } else {
        expected = criterion(reference->forward(x), y);
      }
      CHECK(loss.dim() == 0);
      CHECK(loss.device() == cpu0);
      td::testing::check_close(loss, expected.detach(), 1e-13, 1e-13, what + " loss");
      loss.backward();
      expected.backward();
      auto g = model->parameters(), rg = reference->parameters();
      for (size_t i = 0; i < g.size(); ++i) td::testing::check_close(g[i].grad(), rg[i].grad(), 1e-12, 1e-13, what);
    }
  };
  check(nn::MSELoss(td::kSum), "MSELoss sum");
  check(nn::MSELoss(), "MSELoss mean");
  check(nn::L1Loss(td::kSum), "L1Loss sum");
  check(nn::SmoothL1Loss(td::kSum, 0.05), "SmoothL1Loss sum");
  check(nn::HuberLoss(td::kMean, 0.05), "HuberLoss mean");
  check(nn::BCELoss(nn::BCELossOptions().weight(weight).reduction(td::kSum)), "BCELoss weight, sum");
  check(nn::BCELoss(nn::BCELossOptions().weight(weight)), "BCELoss weight, mean");
  using LogitsOptions = nn::BCEWithLogitsLossOptions;
  check(nn::BCEWithLogitsLoss(LogitsOptions().weight(weight).pos_weight(pos_weight).reduction(td::kSum)),
        "BCEWithLogitsLoss weights, sum");
  check(nn::BCEWithLogitsLoss(LogitsOptions().pos_weight(pos_weight)), "BCEWithLogitsLoss pos_weight, mean");
  // A weight per row of the batch: each chunk takes its own rows of it (whole, it would not fit).
  const Tensor per_row = td::rand({10, 1}, td::kFloat64), per_element = td::rand({10, 3}, td::kFloat64);
  check(nn::BCELoss(nn::BCELossOptions().weight(per_row)), "BCELoss weight per row, mean");
  check(nn::BCEWithLogitsLoss(LogitsOptions().weight(per_element).pos_weight(per_element * 2).reduction(td::kSum)),
        "BCEWithLogitsLoss weights per element, sum");
  // kl_div's input as the model gives it (any numbers do): batchmean divides the sum by the 10 rows.
  check(nn::KLDivLoss(nn::KLDivLossOptions().reduction(td::kBatchMean)), "KLDivLoss batchmean");
  check(nn::KLDivLoss(), "KLDivLoss mean");
  check(nn::KLDivLoss(nn::KLDivLossOptions().reduction(td::kSum).log_target(true)), "KLDivLoss log target, sum");
  nn::MSELossImpl by_reference(td::kSum);
  check(by_reference, "a module by reference");
  // The margin and count losses, and those with a loss per sample and weights per class.
  const Tensor signs = td::where(td::rand({10, 3}, td::kFloat64) > 0.5, 1.0, -1.0).to(td::kFloat64);
  check(nn::SoftMarginLoss(td::kSum), "SoftMarginLoss sum", signs);
  check(nn::SoftMarginLoss(), "SoftMarginLoss mean", signs);
  check(nn::HingeEmbeddingLoss(nn::HingeEmbeddingLossOptions().margin(0.7).reduction(td::kSum)),
        "HingeEmbeddingLoss sum", signs);
  const Tensor counts = td::floor(td::rand({10, 3}, td::kFloat64) * 4);
  check(nn::PoissonNLLLoss(nn::PoissonNLLLossOptions().log_input(false).full(true).reduction(td::kSum)),
        "PoissonNLLLoss sum", counts);
  check(nn::PoissonNLLLoss(), "PoissonNLLLoss mean", counts);
  const Tensor labels = td::where(td::rand({10, 3}, td::kFloat64) > 0.5, 1.0, 0.0).to(td::kFloat64);
  check(nn::MultiLabelSoftMarginLoss(nn::MultiLabelSoftMarginLossOptions().weight(weight).reduction(td::kSum)),
        "MultiLabelSoftMarginLoss weight, sum", labels);
  check(nn::MultiLabelSoftMarginLoss(nn::MultiLabelSoftMarginLossOptions().weight(weight)),
        "MultiLabelSoftMarginLoss weight, mean", labels);
  const Tensor classes = td::randint(0, 3, {10});
  check(nn::MultiMarginLoss(nn::MultiMarginLossOptions().p(2).margin(0.9).weight(weight).reduction(td::kSum)),
        "MultiMarginLoss weight, sum", classes);
  check(nn::MultiMarginLoss(nn::MultiMarginLossOptions().weight(weight)), "MultiMarginLoss weight, mean", classes);
  const Tensor label_lists = td::tensor(std::vector<int64_t>{2, 0, -1, 1, -1, 0, 0, 1, 2, 2, -1, -1, 1, 2, -1,
                                                             0, -1, -1, 2, 1, 0, 1, 0, -1, 0, 2, -1, 2, -1, 1})
                                 .view({10, 3});
  check(nn::MultiLabelMarginLoss(td::kSum), "MultiLabelMarginLoss sum", label_lists);
  check(nn::MultiLabelMarginLoss(), "MultiLabelMarginLoss mean", label_lists);
  {
    // Split along dim 1, each replica would hold some of every sample's classes.
    struct ScaleImpl : nn::Cloneable<ScaleImpl> {
      ScaleImpl() { reset(); }
      void reset() override { scale = register_parameter("scale", td::ones({}, td::kFloat64)); }
      Tensor forward(const Tensor& x) override { return x * scale; }
      Tensor scale;
    };
    par::DataParallel dp(std::make_shared<ScaleImpl>(), par::DataParallelOptions(first_devices(3)).dim(1));
    CHECK_THROWS_WITH(dp->forward_with_loss(nn::MultiLabelSoftMarginLoss(), labels, x.narrow(1, 0, 3)),
                      Catch::Contains("MultiLabelSoftMarginLoss has a loss per sample") &&
                          Catch::Contains("split along dim 1"));
  }

  // A loss per element cannot be added up over replicas: an error, before anything runs.
  for (int n : {1, 3}) {
    auto model = make_model<ProbabilitiesImpl>(44, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(n)));
    CHECK_THROWS_WITH(dp->forward_with_loss(nn::MSELoss(td::kNone), target, x),
                      Catch::Contains("MSELoss has reduction none"));
    CHECK_THROWS_WITH(dp->forward_with_loss(nn::BCEWithLogitsLoss(LogitsOptions().reduction(td::kNone)), target, x),
                      Catch::Contains("BCEWithLogitsLoss has reduction none"));
    CHECK_THROWS_WITH(dp->forward_with_loss(nn::MSELoss(td::kBatchMean), target, x),
                      Catch::Contains("MSELoss: reduction batchmean is KLDivLoss's only"));
  }
}

TEST_CASE("KLDivLoss's batchmean in the replicas divides by the batch's size(0), whatever dim splits the batch",
          "[cpu]") {
  // [time, batch, features] split along dim 1: every chunk has the whole size(0), 4 time steps.
  class TimeMajorImpl : public nn::Cloneable<TimeMajorImpl> {
   public:
    TimeMajorImpl() { reset(); }
    void reset() override { fc = register_module("fc", nn::Linear(5, 3)); }
    Tensor forward(const Tensor& x) override { return td::log_softmax(fc(x), -1); }
    nn::Linear fc{nullptr};
  };
  td::testing::reseed(50);
  const Tensor x = td::testing::random_tensor({4, 8, 5}, td::kFloat64);
  const Tensor target = td::softmax(td::testing::random_tensor({4, 8, 3}, td::kFloat64), -1);
  const nn::KLDivLoss criterion(nn::KLDivLossOptions().reduction(td::kBatchMean));
  for (int n : {1, 3}) {
    INFO(n << " devices");
    auto model = make_model<TimeMajorImpl>(51, cpu0);
    auto reference = make_model<TimeMajorImpl>(51, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(n)).dim(1));
    Tensor loss = dp->forward_with_loss(criterion, target, x);
    Tensor expected = nn::functional::kl_div(reference->forward(x), target, td::kBatchMean);
    td::testing::check_close(loss, expected.detach(), 1e-13, 1e-14, "loss");
    loss.backward();
    expected.backward();
    auto g = model->parameters(), rg = reference->parameters();
    for (size_t i = 0; i < g.size(); ++i) td::testing::check_close(g[i].grad(), rg[i].grad(), 1e-12, 1e-13, "grad");
  }
}

TEST_CASE("a loss weight per row of a batch split along dim 1 gives each replica its own rows", "[cpu]") {
  // [time, batch, features] split along dim 1; a weight of [batch, 1] broadcasts against it.
  class TimeMajorImpl : public nn::Cloneable<TimeMajorImpl> {
   public:
    TimeMajorImpl() { reset(); }
    void reset() override { fc = register_module("fc", nn::Linear(5, 3)); }
    Tensor forward(const Tensor& x) override { return fc(x); }
    nn::Linear fc{nullptr};
  };
  td::testing::reseed(52);
  const Tensor x = td::testing::random_tensor({4, 8, 5}, td::kFloat64);
  const Tensor target = td::rand({4, 8, 3}, td::kFloat64);
  const Tensor per_sample = td::rand({8, 1}, td::kFloat64);
  const nn::BCEWithLogitsLoss criterion(nn::BCEWithLogitsLossOptions().weight(per_sample));
  for (const auto& sizes : std::vector<std::vector<int64_t>>{{3, 3, 2}, {5, 0, 3}}) {
    INFO(sizes[0] << "," << sizes[1] << "," << sizes[2]);
    auto model = make_model<TimeMajorImpl>(53, cpu0);
    auto reference = make_model<TimeMajorImpl>(53, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)).dim(1).chunk_sizes(sizes));
    Tensor loss = dp->forward_with_loss(criterion, target, x);
    Tensor expected = nn::functional::binary_cross_entropy_with_logits(reference->forward(x), target, per_sample);
    td::testing::check_close(loss, expected.detach(), 1e-13, 1e-14, "loss");
    loss.backward();
    expected.backward();
    auto g = model->parameters(), rg = reference->parameters();
    for (size_t i = 0; i < g.size(); ++i) td::testing::check_close(g[i].grad(), rg[i].grad(), 1e-12, 1e-13, "grad");
  }
}

TEST_CASE("one device refuses a target without the batch's rows, as several do, before the forward runs", "[cpu]") {
  const Tensor x = td::testing::random_tensor({6, 4}, td::kFloat64);
  const Tensor one_row = td::zeros({1, 6}, td::kFloat64);  // the criterion alone would broadcast it
  auto criterion = [](const Tensor& out, const Tensor& target) { return td::nn::functional::mse_loss(out, target); };
  for (int n : {1, 2}) {
    INFO(n << " devices");
    auto model = make_model<BnNetImpl>(45, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(n)));
    td::testing::Snapshot mean(model->bn->running_mean), tracked(model->bn->num_batches_tracked);
    const int64_t steps = dp->stats().step;
    td::testing::check_error([&] { dp->forward_with_loss(criterion, one_row, x); },
                             {"shape [1, 6]", "the batch has 6 rows"});
    mean.check_unchanged(model->bn->running_mean);
    tracked.check_unchanged(model->bn->num_batches_tracked);
    CHECK(dp->stats().step == steps);
    CHECK(dp->forward_with_loss(criterion, td::zeros({6, 6}, td::kFloat64), x).dim() == 0);  // and then it runs
  }
}

TEST_CASE("a device_ids entry or output_device that does not exist is refused when the DataParallel is made",
          "[cpu]") {
  const int gpus = td::cuda::is_available() ? td::cuda::device_count() : 0;
  const Device missing(td::kCUDA, gpus);
  auto model = make_model<BnNetImpl>(46, cpu0);
  td::testing::check_error(
      [&] { par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}).output_device(missing)); },
      {"DataParallel: output_device " + missing.str() + " does not exist", std::to_string(gpus) + " CUDA devices"});
  td::testing::check_error([&] { par::DataParallel dp(model, par::DataParallelOptions({cpu0, missing})); },
                           {"DataParallel: device_ids entry " + missing.str() + " does not exist"});
  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}).output_device(cpu2));  // CPU devices: any index
  CHECK(dp(td::testing::random_tensor({4, 4}, td::kFloat64)).device() == cpu2);
}

namespace {

// Class scores plus a learned bias per class: a model whose loss has its scores' dtype.
class ShiftImpl : public nn::Cloneable<ShiftImpl> {
 public:
  ShiftImpl() { reset(); }
  void reset() override { bias = register_parameter("bias", td::zeros({4})); }
  Tensor forward(const Tensor& scores) { return scores + bias; }
  Tensor bias;
};

}  // namespace

TEST_CASE("loss in the replicas of 16-bit scores adds up in float32: past float16's range, exact counts", "[cpu]") {
  // 8193 rows, every fifth ignored, each a loss of about 21 (its class 20 below the others):
  // cpu:0's chunk holds 3278 counted rows, a sum of about 69000, past float16's largest value
  // (65504), and a count bfloat16 cannot hold (it rounds to 3280).
  td::testing::reseed(47);
  const int64_t rows = 8193;
  std::vector<int64_t> labels(rows), classes(rows);
  for (int64_t i = 0; i < rows; ++i) {
    classes[i] = i % 4;
    labels[i] = i % 5 == 4 ? -100 : classes[i];
  }
  const Tensor target = td::tensor(labels);
  const Tensor scores = td::one_hot(td::tensor(classes), 4).to(td::kFloat64) * -20.0 +
                        td::testing::random_tensor({rows, 4}, td::kFloat64) * 0.5;
  for (td::DType dtype : {td::kFloat16, td::kBFloat16}) {
    for (int n : {1, 2}) {
      INFO(td::dtype_name(dtype) << " over " << n << " devices");
      const Tensor x = scores.to(dtype);
      auto model = std::make_shared<ShiftImpl>();
      model->to(cpu0, dtype);
      par::DataParallel dp(model, par::DataParallelOptions(first_devices(n)));
      Tensor loss = dp->forward_with_loss(nn::CrossEntropyLoss(), target, x);
      CHECK(loss.dtype() == dtype);
      // The batch's mean in float64 from the same 16-bit scores.
      auto reference = std::make_shared<ShiftImpl>();
      reference->to(cpu0, td::kFloat64);
      Tensor expected = nn::CrossEntropyLoss()(reference->forward(x.to(td::kFloat64)), target);
      td::testing::check_close(loss.to(td::kFloat64), expected.detach(), td::testing::rtol_for(dtype), 0, "loss");
      // The module on the whole batch, which also sums in float32, agrees.
      Tensor direct = nn::CrossEntropyLoss()(model->forward(x), target);
      td::testing::check_close(loss.to(td::kFloat64), direct.to(td::kFloat64).detach(), td::testing::rtol_for(dtype),
                               0, "the module on the whole batch");
      loss.backward();
      expected.backward();
      td::testing::check_close(model->bias.grad().to(td::kFloat64), reference->bias.grad(),
                               td::testing::rtol_for(dtype), 1e-4, "gradient");
    }
  }
}

namespace {

// Keyword-style arguments of mixed kinds, and outputs in unordered maps and variants.
class KeywordsImpl : public nn::Cloneable<KeywordsImpl> {
 public:
  using Kwargs = std::unordered_map<std::string, std::variant<Tensor, double>>;
  KeywordsImpl() { reset(); }
  void reset() override { fc = register_module("fc", nn::Linear(3, 2)); }
  std::tuple<std::unordered_map<std::string, Tensor>, std::variant<Tensor, int64_t>, Tensor> forward(
      const Kwargs& kwargs) {
    const Tensor h = fc(std::get<Tensor>(kwargs.at("x"))) * std::get<double>(kwargs.at("scale"));
    return {{{"h", h}, {"h2", h * h}}, h.sum(1), Tensor()};
  }
  nn::Linear fc{nullptr};
};

}  // namespace

TEST_CASE("unordered maps and variants are scattered and gathered element by element; None stays None", "[cpu]") {
  td::testing::reseed(43);
  auto model = make_model<KeywordsImpl>(44, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  const Tensor x = td::testing::random_tensor({7, 3}, td::kFloat64);
  auto [maps, sums, none] = dp(KeywordsImpl::Kwargs{{"x", x}, {"scale", 0.5}});
  auto [rmaps, rsums, rnone] = model->forward(KeywordsImpl::Kwargs{{"x", x}, {"scale", 0.5}});
  std::vector<int64_t> rows;
  for (const auto& d : dp->stats().devices) rows.push_back(d.rows);
  CHECK(rows == std::vector<int64_t>{3, 2, 2});  // x was split, 0.5 given whole
  CHECK(maps.size() == 2);
  td::testing::check_close(maps.at("h"), rmaps.at("h").detach(), 1e-14, 1e-14, "h");
  td::testing::check_close(maps.at("h2"), rmaps.at("h2").detach(), 1e-14, 1e-14, "h2");
  REQUIRE(std::holds_alternative<Tensor>(sums));
  td::testing::check_close(std::get<Tensor>(sums), std::get<Tensor>(rsums).detach(), 1e-14, 1e-14, "variant");
  CHECK_FALSE(none.defined());  // every replica returned None

  // On one device the tensor inside the variant goes to that device as well.
  auto on_cpu1 = make_model<KeywordsImpl>(44, cpu1);
  par::DataParallel one(on_cpu1, par::DataParallelOptions(std::vector<Device>{cpu1}));
  auto [maps1, sums1, none1] = one(KeywordsImpl::Kwargs{{"x", x}, {"scale", 0.5}});
  CHECK(maps1.at("h").device() == cpu1);
  td::testing::check_close(maps1.at("h").to(cpu0), rmaps.at("h").detach(), 1e-14, 1e-14, "h on one device");
}

TEST_CASE("gather says where the replicas' outputs do not match, whichever replica is the odd one", "[cpu]") {
  const Tensor t = td::ones({2}), u = td::ones({2}).to(cpu1);
  auto fails = [](auto outputs, const std::string& message) {
    CHECK_THROWS_WITH(par::gather_outputs(outputs, cpu0), Catch::Contains(message));
  };
  fails(std::vector<Tensor>{Tensor(), u}, "1 of 2 replicas returned an undefined tensor");
  fails(std::vector<Tensor>{t, Tensor()}, "1 of 2 replicas returned an undefined tensor");
  fails(std::vector<std::vector<Tensor>>{{}, {u}}, "lists of different lengths (0 and 1)");
  fails(std::vector<std::map<std::string, Tensor>>{{}, {{"a", u}}}, "maps with different keys");
  fails(std::vector<std::map<std::string, Tensor>>{{{"a", t}}, {{"b", u}}}, "maps with different keys");
  fails(std::vector<std::optional<Tensor>>{std::nullopt, u}, "some replicas returned a value and others none");
  fails(std::vector<std::variant<Tensor, int>>{3, u}, "different alternatives of a variant (1 and 0)");
  CHECK_FALSE(par::gather_outputs(std::vector<std::optional<Tensor>>{std::nullopt, std::nullopt}, cpu0).has_value());
  CHECK(std::get<int>(par::gather_outputs(std::vector<std::variant<Tensor, int>>{3, 4}, cpu0)) == 3);
  CHECK(par::gather_outputs(std::vector<std::variant<Tensor, int>>{t, u}, cpu0).index() == 0);
}

TEST_CASE("replicate, the free function, gives connected or detached replicas with the module's values", "[cpu]") {
  // After PyTorch's test_replicate and test_replicate_buffers.
  td::testing::reseed(45);
  auto model = make_model<BnNetImpl>(46, cpu0);
  {
    td::NoGradGuard no_grad;
    model->bn->running_mean.add_(td::testing::random_tensor({6}, td::kFloat64));
    model->bn->running_var.mul_(td::testing::random_tensor({6}, td::kFloat64).abs() + 0.5);
    model->bn->num_batches_tracked.fill_(7);
  }
  model->eval();  // the outputs read the running statistics, which no forward changes
  const Tensor x = td::testing::random_tensor({4, 4}, td::kFloat64);
  const Tensor expected = model->forward(x);
  for (bool detach : {false, true}) {
    INFO("detach " << detach);
    auto replicas = par::replicate(model, {cpu0, cpu2}, detach);
    REQUIRE(replicas.size() == 2);
    for (size_t r = 0; r < 2; ++r) {
      const Device device = r == 0 ? cpu0 : cpu2;
      auto named = replicas[r]->named_parameters();
      for (const auto& [name, t] : replicas[r]->named_buffers()) named.emplace_back(name, t);
      for (const auto& [name, t] : named) {
        CHECK(t.device() == device);
        CHECK(t.requires_grad() == (!detach && t.is_floating_point() && name.find("running") == std::string::npos &&
                                    name.find("num_batches") == std::string::npos));
      }
      const auto buffers = replicas[r]->named_buffers(), originals = model->named_buffers();
      REQUIRE(buffers.size() == 3);
      for (size_t b = 0; b < buffers.size(); ++b) {
        CHECK(buffers[b].first == originals[b].first);
        CHECK(buffers[b].second.dtype() == originals[b].second.dtype());
        td::testing::check_close(buffers[b].second.cpu(), originals[b].second, 0, 0, buffers[b].first);
      }
      Tensor out = replicas[r]->forward(x.to(device));
      td::testing::check_close(out.cpu(), expected.detach(), 1e-14, 1e-14, "output");
    }
    // Connected replicas send their gradients to the module's parameters; detached ones do not.
    model->zero_grad();
    Tensor loss = replicas[0]->forward(x).sum() + replicas[1]->forward(x.to(cpu2)).sum().to(cpu0);
    if (detach) {
      CHECK_FALSE(loss.requires_grad());
      continue;
    }
    loss.backward();
    Tensor single_grad = td::autograd::grad({model->forward(x).sum()}, {model->fc->weight})[0];
    td::testing::check_close(model->fc->weight.grad(), single_grad * 2, 1e-12, 1e-12, "two replicas' gradients");
  }
}

TEST_CASE("an empty batch, a batch split along dim 1, and the loss on another output_device", "[cpu]") {
  td::testing::reseed(47);
  auto model = make_model<MlpImpl>(48, cpu0);
  auto reference = make_model<MlpImpl>(48, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)).output_device(cpu2));

  // No rows: one replica runs them, and the output has no rows either (PyTorch: the same).
  Tensor empty = dp(td::zeros({0, 5}, td::kFloat64));
  CHECK(empty.sizes() == td::Shape{0, 3});
  CHECK(empty.device() == cpu2);
  CHECK(dp->stats().devices.size() == 1);
  empty.sum().backward();
  for (const Tensor& p : model->parameters()) td::testing::check_close(p.grad(), p.grad() * 0, 0, 0, "no gradient");

  // The loss in the replicas lands on output_device, equal to one device's.
  Tensor x = td::testing::random_tensor({7, 5}, td::kFloat64);
  Tensor labels = td::randint(0, 3, {7});
  Tensor loss = dp->forward_with_loss(nn::CrossEntropyLoss(), labels, x);
  Tensor expected = td::nn::functional::cross_entropy(reference->forward(x), labels);
  CHECK(loss.device() == cpu2);
  td::testing::check_close(loss.cpu(), expected.detach(), 1e-13, 1e-13, "loss");

  // dim 1: a [time, batch, features] input is split along the batch, and so is the output.
  class TimeMajorImpl : public nn::Cloneable<TimeMajorImpl> {
   public:
    TimeMajorImpl() { reset(); }
    void reset() override { fc = register_module("fc", nn::Linear(5, 3)); }
    Tensor forward(const Tensor& x) override { return td::tanh(fc(x)).cumsum(0); }  // runs along time
    nn::Linear fc{nullptr};
  };
  auto time_major = make_model<TimeMajorImpl>(49, cpu0);
  par::DataParallel by_batch(time_major, par::DataParallelOptions(first_devices(3)).dim(1));
  Tensor sequence = td::testing::random_tensor({4, 8, 5}, td::kFloat64);
  Tensor out = by_batch(sequence);
  std::vector<int64_t> rows;
  for (const auto& d : by_batch->stats().devices) rows.push_back(d.rows);
  CHECK(rows == std::vector<int64_t>{3, 3, 2});
  td::testing::check_close(out, time_major->forward(sequence).detach(), 1e-14, 1e-14, "dim 1");
}

namespace {

// reset() fails on the call that brings this count to zero: a clone (which calls reset()) that
// fails, as one would for want of memory on its device.
std::atomic<int> g_resets_before_failure{0};

class FailingCloneImpl : public nn::Cloneable<FailingCloneImpl> {
 public:
  FailingCloneImpl() { reset(); }
  void reset() override {
    if (g_resets_before_failure > 0 && --g_resets_before_failure == 0) TD_FAIL("no memory left for the clone");
    fc = register_module("fc", nn::Linear(5, 3));
  }
  Tensor forward(const Tensor& x) override { return fc(x); }
  nn::Linear fc{nullptr};
};

class TwoInputsImpl : public nn::Cloneable<TwoInputsImpl> {
 public:
  TwoInputsImpl() { reset(); }
  void reset() override { fc = register_module("fc", nn::Linear(5, 3)); }
  Tensor forward(const Tensor& a, const Tensor& b) { return fc(a + b); }
  nn::Linear fc{nullptr};
};

class TaggedImpl : public nn::Cloneable<TaggedImpl> {
 public:
  TaggedImpl() { reset(); }
  void reset() override {}
  Tensor forward(const Tensor& x, const std::string& tag) { return tag == "double" ? x * 2 : x; }
};

}  // namespace

TEST_CASE("a clone that fails while the replicas are built leaves none half-built: the next forward builds all",
          "[cpu]") {
  td::testing::reseed(50);
  auto model = make_model<FailingCloneImpl>(51, cpu0);
  const Tensor x = td::testing::random_tensor({6, 5}, td::kFloat64);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  g_resets_before_failure = 2;  // the clone for cpu:1, after cpu:0's
  td::testing::check_error([&] { dp(x); }, {"no memory left for the clone"});
  CHECK(dp->replicas().empty());
  Tensor out = dp(x);
  REQUIRE(dp->replicas().size() == 3);
  out.sum().backward();
  auto reference = make_model<FailingCloneImpl>(51, cpu0);
  Tensor expected = reference->forward(x);
  expected.sum().backward();
  td::testing::check_close(out, expected.detach(), 1e-14, 1e-14, "output");
  td::testing::check_close(model->fc->weight.grad(), reference->fc->weight.grad(), 1e-13, 1e-13, "gradient");
  // The failed forward started no step: the stats count the one that ran.
  CHECK(dp->stats().step == 1);
}

TEST_CASE("replicas that renormalize embedding rows in forward (max_norm) each write rows of their own", "[cpu]") {
  struct RenormImpl : nn::Cloneable<RenormImpl> {
    RenormImpl() { reset(); }
    void reset() override { emb = register_module("emb", nn::Embedding(nn::EmbeddingOptions(10, 4).max_norm(1.0))); }
    Tensor forward(const Tensor& tokens) override { return emb(tokens).sum(1); }
    nn::Embedding emb{nullptr};
  };
  // Every chunk looks up row 3: on one device it is renormalized once, and so it is on the
  // module through the replica on device_ids[0]; the other replicas renormalize copies (as
  // PyTorch's replicas on other GPUs do), so no row is scaled twice.
  const Tensor tokens = td::full({6, 5}, 3, td::kInt64);
  for (uint64_t seed = 60; seed < 80; ++seed) {
    auto model = make_model<RenormImpl>(seed, cpu0);
    auto reference = make_model<RenormImpl>(seed, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
    const Tensor out = dp(tokens);
    const Tensor expected = reference->forward(tokens);
    td::testing::check_close(out, expected.detach(), 1e-14, 1e-14, "output");
    CHECK(td::testing::values(model->emb->weight) == td::testing::values(reference->emb->weight));
    const auto replica = std::dynamic_pointer_cast<RenormImpl>(dp->replicas()[1]);
    REQUIRE(replica != nullptr);
    CHECK(replica->emb->weight.data_ptr() != model->emb->weight.data_ptr());
  }
}

TEST_CASE("replicas sharing a table that functional::embedding renormalizes scale each row once", "[cpu]") {
  // The module's own parameter, looked up through the functional form: the replicas on CPU
  // devices share it (nothing marks the module as one that writes its parameters), and every
  // chunk renormalizes row 3 of the one table.
  struct TableImpl : nn::Cloneable<TableImpl> {
    TableImpl() { reset(); }
    void reset() override { table = register_parameter("table", td::randn({10, 4}) * 4); }
    Tensor forward(const Tensor& tokens) override {
      return nn::functional::embedding(tokens, table, std::nullopt, 1.0).sum(1);
    }
    Tensor table;
  };
  const Tensor tokens = td::full({8, 5}, 3, td::kInt64);
  for (uint64_t seed = 60; seed < 100; ++seed) {
    INFO("seed " << seed);
    auto model = make_model<TableImpl>(seed, cpu0);
    auto reference = make_model<TableImpl>(seed, cpu0);
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(4)));
    const Tensor out = dp(tokens);
    td::testing::check_close(out, reference->forward(tokens).detach(), 1e-14, 1e-14, "output");
    CHECK(td::testing::values(model->table) == td::testing::values(reference->table));
  }
}

TEST_CASE("max_norm set on an embedding after the replicas were built gives them rows of their own", "[cpu]") {
  struct LookupImpl : nn::Cloneable<LookupImpl> {
    LookupImpl() { reset(); }
    void reset() override { emb = register_module("emb", nn::Embedding(10, 4)); }
    Tensor forward(const Tensor& tokens) override { return emb(tokens).sum(1); }
    nn::Embedding emb{nullptr};
  };
  const Tensor tokens = td::full({6, 5}, 3, td::kInt64);
  auto model = make_model<LookupImpl>(81, cpu0);
  auto reference = make_model<LookupImpl>(81, cpu0);
  {
    td::NoGradGuard no_grad;  // rows well past the max_norm set below
    model->emb->weight.mul_(4);
    reference->emb->weight.mul_(4);
  }
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  dp(tokens);  // built sharing the module's parameters
  CHECK(dp->replicas()[1]->parameters()[0].data_ptr() == model->emb->weight.data_ptr());
  model->emb->options.max_norm(1.0);
  reference->emb->options.max_norm(1.0);
  const Tensor out = dp(tokens);
  td::testing::check_close(out, reference->forward(tokens).detach(), 1e-14, 1e-14, "output");
  CHECK(td::testing::values(model->emb->weight) == td::testing::values(reference->emb->weight));
  CHECK(dp->replicas()[1]->parameters()[0].data_ptr() != model->emb->weight.data_ptr());
  // Without max_norm again, the replicas share once more.
  model->emb->options.max_norm_ = std::nullopt;
  dp(tokens);
  CHECK(dp->replicas()[1]->parameters()[0].data_ptr() == model->emb->weight.data_ptr());
}

TEST_CASE("a setting changed after the replicas were built (Dropout's p, a module's own) reaches every replica",
          "[cpu]") {
  struct ScaledDropoutImpl : nn::Cloneable<ScaledDropoutImpl> {
    ScaledDropoutImpl() { reset(); }
    void reset() override {
      fc = register_module("fc", nn::Linear(5, 3));
      drop = register_module("drop", nn::Dropout(0.0));
    }
    Tensor forward(const Tensor& x) override { return drop(fc(x)) * scale; }
    auto settings() { return std::tie(scale); }
    nn::Linear fc{nullptr};
    nn::Dropout drop{nullptr};
    double scale = 1.0;
  };
  const Tensor x = td::testing::random_tensor({7, 5}, td::kFloat64);
  auto model = make_model<ScaledDropoutImpl>(83, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  td::testing::check_close(dp(x), model->forward(x).detach(), 1e-14, 1e-14, "built");
  model->scale = 2.5;
  td::testing::check_close(dp(x), model->forward(x).detach(), 1e-14, 1e-14, "scale 2.5");
  model->drop->p = 1.0;  // drops every unit, in every replica
  CHECK(td::testing::values(dp(x)) == std::vector<double>(21, 0.0));
  model->drop->p = 0.0;
  model->eval();
  td::testing::check_close(dp(x), model->forward(x).detach(), 1e-14, 1e-14, "p 0 again, eval");
}

TEST_CASE("a parameter that changes places in the module reaches the replicas under its own name", "[cpu]") {
  // A ParameterDict's weight and bias; removing a key and inserting it again moves it to the end,
  // where a clone's reset() registers it first: replicas and clones must match them by name.
  struct DictLinearImpl : nn::Cloneable<DictLinearImpl> {
    DictLinearImpl() { reset(); }
    void reset() override {
      named = register_module("named", nn::ParameterDict(std::vector<std::pair<std::string, Tensor>>{
                                           {"weight", td::randn({3, 4}).requires_grad_()},
                                           {"bias", td::randn({3}).requires_grad_()}}));
    }
    Tensor forward(const Tensor& x) override {
      return nn::functional::linear(x, (*named)["weight"], (*named)["bias"]);
    }
    nn::ParameterDict named{nullptr};
  };
  const Tensor x = td::testing::random_tensor({6, 4}, td::kFloat64);
  auto model = make_model<DictLinearImpl>(82, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  td::testing::check_close(dp(x), model->forward(x).detach(), 1e-14, 1e-14, "before");
  const Tensor weight = model->named->pop("weight");
  model->named->insert("weight", weight);
  REQUIRE(model->named->keys() == std::vector<std::string>{"bias", "weight"});
  const auto clone = std::dynamic_pointer_cast<DictLinearImpl>(model->clone());
  REQUIRE(clone != nullptr);
  CHECK(td::testing::values((*clone->named)["weight"]) == td::testing::values(weight));
  const Tensor out = dp(x);
  td::testing::check_close(out, model->forward(x).detach(), 1e-14, 1e-14, "after the key moved");
  out.sum().backward();
  td::testing::check_close(weight.grad(), td::ones({6, 3}, td::kFloat64).t().mm(x), 1e-12, 1e-12,
                           "the weight's gradient");
  td::testing::check_close((*model->named)["bias"].grad(), td::full({3}, 6.0, td::kFloat64), 1e-12, 1e-12,
                           "the bias's gradient");
}

TEST_CASE("a forward refused for its arguments leaves the last step's stats as they were", "[cpu]") {
  auto model = std::make_shared<TwoInputsImpl>();
  model->to(td::kFloat64);
  par::DataParallel two(model, par::DataParallelOptions({cpu0, cpu1}).chunk_sizes({1, 3}));
  const Tensor a = td::ones({4, 5}, td::kFloat64), b = td::ones({4, 5}, td::kFloat64);
  two(a, b).sum().backward();
  const par::StepStats before = two->stats();
  REQUIRE(before.comm.contains("scatter"));
  REQUIRE(before.devices.size() == 2);
  REQUIRE(before.devices[1].backward > 0);
  // The second tensor's rows do not match; then the batch does not match chunk_sizes.
  td::testing::check_error([&] { two(a, td::ones({3, 5}, td::kFloat64)); }, {"shape [3, 5]", "4 rows"});
  td::testing::check_error([&] { two(td::ones({5, 5}, td::kFloat64), td::ones({5, 5}, td::kFloat64)); },
                           {"chunk_sizes add up to 4", "5 rows"});
  const par::StepStats after = two->stats();
  CHECK(after.step == before.step);
  REQUIRE(after.devices.size() == before.devices.size());
  for (size_t i = 0; i < after.devices.size(); ++i) {
    CHECK(after.devices[i].rows == before.devices[i].rows);
    CHECK(after.devices[i].forward == before.devices[i].forward);
    CHECK(after.devices[i].backward == before.devices[i].backward);
  }
  REQUIRE(after.comm.size() == before.comm.size());
  for (const auto& [name, s] : before.comm) {
    INFO(name);
    REQUIRE(after.comm.contains(name));
    CHECK(after.comm.at(name).calls == s.calls);
    CHECK(after.comm.at(name).bytes == s.bytes);
  }
  two(a, b);
  CHECK(two->stats().step == before.step + 1);
}

TEST_CASE("the loss in the replicas of an empty batch is the criterion's own, as on one device", "[cpu]") {
  auto model = make_model<MlpImpl>(52, cpu0);
  auto sum_of_squares = [](const Tensor& out, const Tensor& target) { return (out - target).pow(2).sum(); };
  const Tensor x = td::zeros({0, 5}, td::kFloat64), target = td::zeros({0, 3}, td::kFloat64);
  for (int n : {1, 3}) {
    INFO(n << " devices");
    par::DataParallel dp(model, par::DataParallelOptions(first_devices(n)));
    Tensor loss = dp->forward_with_loss(sum_of_squares, target, x);
    CHECK(loss.item<double>() == 0.0);
  }
}

TEST_CASE("sync_batchnorm inside a device's thread, where replicas run one after another, is refused at once",
          "[cpu]") {
  auto model = make_model<BnNetImpl>(53, cpu0);
  // A short timeout: should the forward wait for the other replica after all, it fails fast too.
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(2)).sync_batchnorm(true).sync_batchnorm_timeout(
                                  std::chrono::milliseconds(2000)));
  const Tensor x = td::testing::random_tensor({6, 4}, td::kFloat64);
  td::testing::Snapshot mean(model->bn->running_mean);
  auto errors = td::run_on_device_threads({cpu2}, {[&] { dp(x); }});
  REQUIRE(errors[0]);
  td::testing::check_error([&] { std::rethrow_exception(errors[0]); },
                           {"DataParallel: sync_batchnorm", "thread of cpu:2", "one after another"});
  mean.check_unchanged(model->bn->running_mean);
  CHECK(dp(x).sizes() == td::Shape{6, 6});  // from the caller's thread it runs
}

TEST_CASE("replicate refuses a module whose tensors are on two devices, naming them", "[cpu]") {
  auto model = make_model<MlpImpl>(54, cpu0);
  model->fc2->to(cpu1);
  td::testing::check_error([&] { par::replicate(model, {cpu0, cpu2}); },
                           {"replicate", "one device", "'fc1.weight' is on cpu:0", "'fc2.weight' on cpu:1"});
  td::testing::check_error([&] { par::DataParallel<MlpImpl> dp{std::shared_ptr<MlpImpl>()}; },
                           {"DataParallel: the module is null"});
}

TEST_CASE("string literals among the arguments reach every replica, and non-contiguous batches split", "[cpu]") {
  td::testing::reseed(55);
  const Tensor x = td::testing::random_tensor({5, 6}, td::kFloat64).t();  // [6, 5], columns contiguous
  REQUIRE_FALSE(x.is_contiguous());
  for (int n : {1, 2}) {
    INFO(n << " devices");
    par::DataParallel tagged(std::make_shared<TaggedImpl>(), par::DataParallelOptions(first_devices(n)));
    td::testing::check_close(tagged(x, "double"), x * 2, 0, 0, "tagged");
    td::testing::check_close(tagged(x, "same"), x, 0, 0, "untagged");
  }
  auto model = make_model<MlpImpl>(56, cpu0);
  auto reference = make_model<MlpImpl>(56, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  Tensor out = dp(x);
  out.sum().backward();
  Tensor expected = reference->forward(x);
  expected.sum().backward();
  td::testing::check_close(out, expected.detach(), 1e-14, 1e-14, "output");
  td::testing::check_close(model->fc1->weight.grad(), reference->fc1->weight.grad(), 1e-13, 1e-13, "gradient");
}

TEST_CASE("a penalty on the parameters' gradients (double backward through the reduction) equals one device's",
          "[cpu]") {
  td::testing::reseed(57);
  const Tensor x = td::testing::random_tensor({9, 5}, td::kFloat64);
  auto penalty_grads = [&](const std::shared_ptr<MlpImpl>& model, auto&& forward) {
    Tensor out = forward(x);
    const std::vector<Tensor> params = model->parameters();
    std::vector<Tensor> grads = td::autograd::grad({out.pow(2).sum()}, params, {}, std::nullopt, true);
    Tensor loss = out.sum();
    for (const Tensor& g : grads) loss = loss + g.pow(2).sum();
    model->zero_grad();
    loss.backward();
    std::vector<Tensor> result;
    for (const Tensor& p : params) result.push_back(p.grad().clone());
    return result;
  };
  auto model = make_model<MlpImpl>(58, cpu0);
  auto reference = make_model<MlpImpl>(58, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  auto got = penalty_grads(model, [&](const Tensor& in) { return dp(in); });
  auto expected = penalty_grads(reference, [&](const Tensor& in) { return reference->forward(in); });
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) td::testing::check_close(got[i], expected[i], 1e-11, 1e-12, "penalty");
}

namespace {

// Fails at once on cpu:0; on the other devices works 100 ms, then says so.
class SlowOthersImpl : public nn::Cloneable<SlowOthersImpl> {
 public:
  SlowOthersImpl() { reset(); }
  void reset() override {}
  Tensor forward(const Tensor& x) override {
    if (x.device() == cpu0) TD_FAIL("replica on cpu:0 gives up");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ++*finished_count;
    return x;
  }
  std::shared_ptr<std::atomic<int>> finished_count = std::make_shared<std::atomic<int>>(0);
};

}  // namespace

TEST_CASE("a replica's exception reaches the caller only after every other replica has finished", "[cpu]") {
  auto model = std::make_shared<SlowOthersImpl>();
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  td::testing::check_error([&] { dp(td::ones({6, 2})); }, {"in replica 0 on device cpu:0", "gives up"});
  // The replicas share the module's counter (clone() copies the pointer).
  CHECK(*model->finished_count == 2);
}

TEST_CASE("each step's peak memory is that step's, per device", "[cpu]") {
  auto model = make_model<MlpImpl>(59, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(2)));
  {
    Tensor out = dp(td::ones({100000, 5}, td::kFloat64));  // cpu:1's chunk alone is 2 MB
    out.sum().backward();
  }
  const par::StepStats big = dp->stats();
  {
    Tensor out = dp(td::ones({8, 5}, td::kFloat64));
    out.sum().backward();
  }
  const par::StepStats small = dp->stats();
  REQUIRE(big.devices.size() == 2);
  REQUIRE(small.devices.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    INFO(big.devices[i].device);
    CHECK(big.devices[i].peak_bytes > 50000 * 5 * 8);
    CHECK(small.devices[i].peak_bytes < big.devices[i].peak_bytes / 10);
  }
}

TEST_CASE("replicas on other CPU devices read the module's parameters in place and keep copies of its buffers",
          "[cpu]") {
  auto model = make_model<BnMlpImpl>(60, cpu0);
  par::DataParallel dp(model, par::DataParallelOptions(first_devices(3)));
  td::optim::SGD opt(dp->parameters(), 0.1);
  for (int step = 0; step < 2; ++step) {
    dp(td::testing::random_tensor({9, 5}, td::kFloat64)).sum().backward();
    dp->step(opt);
    opt.zero_grad();
  }
  const auto module_params = model->named_parameters();
  const auto module_buffers = model->named_buffers();
  for (size_t r = 1; r < 3; ++r) {
    const Device device(td::kCPU, static_cast<int>(r));
    INFO(device);
    const auto params = dp->replicas()[r]->named_parameters();
    const auto buffers = dp->replicas()[r]->named_buffers();
    REQUIRE(params.size() == module_params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      INFO(params[i].first);
      CHECK(params[i].second.device() == device);
      CHECK(params[i].second.data_ptr() == module_params[i].second.data_ptr());
    }
    REQUIRE(buffers.size() == module_buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      INFO(buffers[i].first);
      CHECK(buffers[i].second.device() == device);
      CHECK(buffers[i].second.data_ptr() != module_buffers[i].second.data_ptr());
    }
  }
  // The free replicate() gives the caller replicas of its own: copies.
  auto replicas = par::replicate(model, {cpu0, cpu1});
  CHECK(replicas[1]->parameters()[0].data_ptr() != model->parameters()[0].data_ptr());
  td::testing::check_close(replicas[1]->parameters()[0], model->parameters()[0], 0, 0, "copied");
}

namespace {

// Writes its input in place (scales and shifts it) before a Linear saves it for backward.
class InPlaceInputImpl : public nn::Cloneable<InPlaceInputImpl> {
 public:
  InPlaceInputImpl() { reset(); }
  void reset() override { fc = register_module("fc", nn::Linear(5, 3)); }
  Tensor forward(const Tensor& x) override {
    Tensor input = x;
    input.mul_(2).add_(1);
    return fc(input);
  }
  nn::Linear fc{nullptr};
};

}  // namespace

TEST_CASE("replicas that write their inputs in place do not disturb each other's backward", "[cpu]") {
  // Each replica's chunk has a version counter of its own (on another device it is a copy): one
  // replica's in-place write must not fail another's check of the chunk it saved, whatever order
  // the threads run in.
  td::testing::reseed(61);
  auto model = make_model<InPlaceInputImpl>(61, cpu0);
  auto reference = make_model<InPlaceInputImpl>(61, cpu0);
  par::DataParallel dp(model, first_devices(3));
  for (int run = 0; run < 30; ++run) {
    const Tensor x = td::testing::random_tensor({9, 5}, td::kFloat64);
    const Tensor x_reference = x.clone();
    model->zero_grad();
    reference->zero_grad();
    dp(x).sum().backward();
    reference->forward(x_reference).sum().backward();
    td::testing::check_close(model->fc->weight.grad(), reference->fc->weight.grad(), 1e-13, 1e-13,
                             "weight gradient, run " + std::to_string(run));
  }
}

TEST_CASE("DataParallel refuses bad chunk sizes, buffers away from device_ids[0], bad LossSums and bad state, "
          "changing nothing", "[cpu]") {
  auto model = make_model<BnNetImpl>(60, cpu0);
  td::testing::check_error(
      [&] { par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}).chunk_sizes({5, -1})); },
      {"DataParallel: chunk_sizes[1] is negative (-1)"});
  // A module whose only tensors elsewhere are buffers: BatchNorm without affine parameters.
  class StatsOnlyImpl : public nn::Cloneable<StatsOnlyImpl> {
   public:
    StatsOnlyImpl() { reset(); }
    void reset() override { bn = register_module("bn", nn::BatchNorm1d(nn::BatchNormOptions(3).affine(false))); }
    Tensor forward(const Tensor& x) override { return bn(x); }
    nn::BatchNorm1d bn{nullptr};
  };
  auto stats_only = std::make_shared<StatsOnlyImpl>();
  stats_only->to(cpu1);
  td::testing::check_error([&] { par::DataParallel dp(stats_only, par::DataParallelOptions({cpu0, cpu1})); },
                           {"the module's buffers must be on device_ids[0] = cpu:0", "'bn.running_mean' is on cpu:1"});

  par::DataParallel dp(model, par::DataParallelOptions({cpu0, cpu1}));
  const Tensor x = td::testing::random_tensor({6, 4}, td::kFloat64);
  td::testing::Snapshot weight(model->fc->weight);
  // (The replicas' forward has run by the time the criterion's result is seen: BatchNorm's
  // statistics have moved, as they would for any criterion that throws.)
  auto per_row = [](const Tensor& out, const Tensor&) { return par::LossSum{out.sum(1), Tensor()}; };
  td::testing::check_error([&] { dp->forward_with_loss(per_row, td::zeros({6, 6}, td::kFloat64), x); },
                           {"in replica 0 on device cpu:0", "LossSum must hold a 0-dim sum"});
  weight.check_unchanged(model->fc->weight);

  // load_state_dict checks every entry before it writes any, with or without the "module." prefix.
  const td::StateDict state = make_model<BnNetImpl>(61, cpu0)->state_dict();
  td::StateDict wrong_shape, missing;
  for (const auto& [key, t] : state) {
    wrong_shape.insert(key, key == "fc.weight" ? td::zeros({3, 3}, td::kFloat64) : t);
    if (key != "bn.running_var") missing.insert("module." + key, t);
  }
  td::testing::Snapshot bias(model->fc->bias), mean(model->bn->running_mean);
  td::testing::check_error([&] { dp->load_state_dict(wrong_shape); },
                           {"load_state_dict: shape mismatch for fc.weight", "[3, 3]", "[6, 4]"});
  td::testing::check_error([&] { dp->load_state_dict(missing); },
                           {"load_state_dict: missing keys: bn.running_var"});
  weight.check_unchanged(model->fc->weight);
  bias.check_unchanged(model->fc->bias);
  mean.check_unchanged(model->bn->running_mean);
  dp->load_state_dict(state);  // the whole state loads
  td::testing::check_close(model->fc->weight, state.at("fc.weight"), 0, 0, "loaded");
}
