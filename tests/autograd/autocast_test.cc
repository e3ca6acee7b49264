// Autocast (amp::AutocastGuard), the spec: on CPUs the ops PyTorch's CPU autocast lists and
// nothing else change dtype (the dtypes below were read off torch.autocast("cpu") with PyTorch
// 2.15), values equal the same op on explicitly cast operands, gradients reach float32 weights in
// float32, the state is per thread and carried into DataParallel's workers, and backward runs in
// the forward's dtypes. The GPU lists are checked in the [cuda] cases at the end.
#include <cmath>
#include <limits>
#include <thread>

#include "tests/testing.h"

namespace td = tandem;
namespace F = td::nn::functional;
using td::Tensor;
using td::amp::AutocastGuard;

namespace {

Tensor rand_f32(td::IntList shape) { return td::testing::random_tensor(td::Shape(shape.vec()), td::kFloat32); }

Tensor leaf(td::IntList shape) { return rand_f32(shape).requires_grad_(); }

// A small MLP made the same way each call.
td::nn::Sequential small_mlp(uint64_t seed) {
  td::manual_seed(seed);
  return td::nn::Sequential(td::nn::Linear(5, 8), td::nn::ReLU(), td::nn::Linear(8, 3));
}

// The same values bit for bit.
void check_identical(const Tensor& actual, const Tensor& expected, const std::string& what) {
  INFO(what);
  REQUIRE(actual.dtype() == expected.dtype());
  td::testing::check_close(actual, expected, 0, 0, what);
}

}  // namespace

TEST_CASE("CPU autocast runs matrix products and convolutions in bfloat16, as PyTorch's", "[cpu]") {
  td::testing::reseed(1);
  Tensor a = rand_f32({4, 6}), b = rand_f32({6, 5}), bias = rand_f32({5}), w = rand_f32({5, 6});
  Tensor a3 = rand_f32({2, 4, 6}), b3 = rand_f32({2, 6, 3});
  Tensor image = rand_f32({2, 3, 7, 7}), kernel = rand_f32({4, 3, 3, 3}), kbias = rand_f32({4});
  auto bf = [](const Tensor& t) { return t.to(td::kBFloat16); };
  AutocastGuard autocast(td::kCPU);
  check_identical(td::mm(a, b), td::mm(bf(a), bf(b)), "mm");
  check_identical(td::matmul(a3, b), td::matmul(bf(a3), bf(b)), "matmul");
  check_identical(td::bmm(a3, b3), td::bmm(bf(a3), bf(b3)), "bmm");
  check_identical(td::addmm(bias, a, b), td::addmm(bf(bias), bf(a), bf(b)), "addmm");
  check_identical(F::linear(a, w, bias), F::linear(bf(a), bf(w), bf(bias)), "linear");
  check_identical(F::conv2d(image, kernel, kbias, 1, 1), F::conv2d(bf(image), bf(kernel), bf(kbias), 1, 1), "conv2d");
  check_identical(F::conv_transpose2d(image, kernel.transpose(0, 1), kbias, 2, 1, 1),
                  F::conv_transpose2d(bf(image), bf(kernel.transpose(0, 1)), bf(kbias), 2, 1, 1),
                  "conv_transpose2d");
  Tensor line = image.flatten(2), line_kernel = kernel.flatten(2);
  check_identical(F::conv1d(line, line_kernel, kbias), F::conv1d(bf(line), bf(line_kernel), bf(kbias)), "conv1d");
  // A layer's bfloat16 output into the next layer's float32 weights, as in a Sequential.
  check_identical(F::conv1d(bf(line), line_kernel, kbias), F::conv1d(bf(line), bf(line_kernel), bf(kbias)),
                  "conv1d of a bfloat16 input and float32 weights");
  check_identical(F::conv1d(bf(line), line_kernel, kbias, 1, td::kSame),
                  F::conv1d(bf(line), bf(line_kernel), bf(kbias), 1, td::kSame), "conv1d with padding='same'");
  // Mixed operands are cast too: one float32 and one bfloat16 matrix.
  check_identical(td::mm(a, bf(b)), td::mm(bf(a), bf(b)), "mm of float32 and bfloat16");
  // float16 when asked for.
  AutocastGuard half(td::kCPU, td::kFloat16);
  check_identical(td::mm(a, b), td::mm(a.to(td::kFloat16), b.to(td::kFloat16)), "mm in float16");
}

TEST_CASE("CPU autocast computes the losses and prod in float32, as PyTorch's", "[cpu]") {
  td::testing::reseed(2);
  auto bf = [](const Tensor& t) { return t.to(td::kBFloat16); };
  Tensor scores = bf(rand_f32({5, 4})), other = bf(rand_f32({5, 4}));
  Tensor labels = td::randint(0, 4, {5});
  Tensor probabilities = bf(td::rand({5, 4})), targets = bf(td::rand({5, 4}));
  Tensor class_weight = rand_f32({4}).abs() + 0.5;
  AutocastGuard autocast(td::kCPU);
  auto f32 = [](const Tensor& t) { return t.to(td::kFloat32); };
  check_identical(F::cross_entropy(scores, labels), F::cross_entropy(f32(scores), labels), "cross_entropy");
  check_identical(F::cross_entropy(scores, labels, bf(class_weight)),
                  F::cross_entropy(f32(scores), labels, f32(bf(class_weight))), "weighted cross_entropy");
  check_identical(F::nll_loss(scores, labels), F::nll_loss(f32(scores), labels), "nll_loss");
  check_identical(F::mse_loss(scores, other), F::mse_loss(f32(scores), f32(other)), "mse_loss");
  check_identical(F::l1_loss(scores, other), F::l1_loss(f32(scores), f32(other)), "l1_loss");
  check_identical(F::smooth_l1_loss(scores, other), F::smooth_l1_loss(f32(scores), f32(other)), "smooth_l1_loss");
  check_identical(F::huber_loss(scores, other), F::huber_loss(f32(scores), f32(other)), "huber_loss");
  check_identical(F::kl_div(scores, targets, td::kBatchMean), F::kl_div(f32(scores), f32(targets), td::kBatchMean),
                  "kl_div");
  check_identical(F::binary_cross_entropy(probabilities, targets),
                  F::binary_cross_entropy(f32(probabilities), f32(targets)), "binary_cross_entropy");
  check_identical(F::binary_cross_entropy_with_logits(scores, targets),
                  F::binary_cross_entropy_with_logits(f32(scores), f32(targets)), "binary_cross_entropy_with_logits");
  check_identical(td::prod(scores), td::prod(scores, td::kFloat32), "prod");
  check_identical(td::prod(scores, 1), td::prod(scores, 1, false, td::kFloat32), "prod along a dim");
  // An explicit dtype is the caller's choice: not overridden.
  CHECK(td::prod(scores, td::kBFloat16).dtype() == td::kBFloat16);
}

TEST_CASE("CPU autocast leaves every other op in its input's dtype, as PyTorch's", "[cpu]") {
  td::testing::reseed(3);
  Tensor h = rand_f32({4, 6}).to(td::kBFloat16);
  AutocastGuard autocast(td::kCPU);
  for (const auto& [name, result] : std::vector<std::pair<std::string, Tensor>>{
           {"softmax", td::softmax(h, 1)},
           {"log_softmax", td::log_softmax(h, 1)},
           {"exp", td::exp(h)},
           {"log", td::log(h.abs())},
           {"pow", td::pow(h, 2)},
           {"sum", h.sum()},
           {"mean", h.mean()},
           {"cumsum", td::cumsum(h, 1)},
           {"cumprod", td::cumprod(h, 1)},
           {"logsumexp", td::logsumexp(h, {1})},
           {"norm", td::norm(h)},
           {"layer_norm", F::layer_norm(h, {6})},
           {"relu", td::relu(h)},
           {"gelu", td::gelu(h)},
           {"1 / h", 1.0 / h},
       }) {
    INFO(name);
    CHECK(result.dtype() == td::kBFloat16);
  }
  // float32 stays float32 off the lists, and promotion is untouched: bfloat16 + float32 is float32.
  CHECK(td::softmax(rand_f32({2, 3}), 1).dtype() == td::kFloat32);
  CHECK((h + rand_f32({4, 6})).dtype() == td::kFloat32);
  CHECK(td::cat({h, rand_f32({4, 6})}).dtype() == td::kFloat32);
  // scatter_add promotes under GPU autocast only: on CPUs PyTorch 2.15 refuses the mixture too.
  td::testing::check_error(
      [&] { (void)td::scatter_add(h, 0, td::zeros({4, 6}, td::kInt64), rand_f32({4, 6})); },
      {"scatter_add", "bfloat16", "float32"});
}

TEST_CASE("autocast never casts float64 or integer tensors, and only on its own device type", "[cpu]") {
  td::testing::reseed(4);
  Tensor a = td::testing::random_tensor({3, 4}, td::kFloat64), b = td::testing::random_tensor({4, 2}, td::kFloat64);
  AutocastGuard autocast(td::kCPU);
  CHECK(td::mm(a, b).dtype() == td::kFloat64);
  Tensor ints = td::randint(0, 5, {3, 4});
  CHECK(td::mm(ints, td::randint(0, 5, {4, 2})).dtype() == td::kInt64);
  // float64 with float32: the float32 operand is cast, the float64 one is not; mm refuses the
  // mixture, as PyTorch's does.
  td::testing::check_error([&] { (void)td::mm(a, rand_f32({4, 2})); }, {"mm", "float64", "bfloat16"});
  // GPU autocast does not touch CPU tensors.
  AutocastGuard cpu_off(td::kCPU, std::nullopt, false);
  AutocastGuard gpu(td::kCUDA);
  CHECK(td::mm(rand_f32({2, 3}), rand_f32({3, 2})).dtype() == td::kFloat32);
}

TEST_CASE("autocast's guards nest and restore, and its state belongs to the thread", "[cpu]") {
  CHECK_FALSE(td::amp::is_autocast_enabled(td::kCPU));
  CHECK(td::amp::autocast_dtype(td::kCPU) == td::kBFloat16);
  CHECK(td::amp::autocast_dtype(td::kCUDA) == td::kFloat16);
  Tensor a = rand_f32({2, 3}), b = rand_f32({3, 2});
  {
    AutocastGuard outer(td::kCPU);
    CHECK(td::mm(a, b).dtype() == td::kBFloat16);
    {
      AutocastGuard off(td::kCPU, std::nullopt, false);
      CHECK(td::mm(a, b).dtype() == td::kFloat32);
      AutocastGuard on_half(td::kCPU, td::kFloat16);
      CHECK(td::mm(a, b).dtype() == td::kFloat16);
    }
    CHECK(td::amp::is_autocast_enabled(td::kCPU));
    CHECK(td::mm(a, b).dtype() == td::kBFloat16);
    td::DType seen = td::kFloat64;
    std::thread other([&] { seen = td::mm(a, b).dtype(); });
    other.join();
    CHECK(seen == td::kFloat32);  // a thread of its own starts without autocast
  }
  CHECK_FALSE(td::amp::is_autocast_enabled(td::kCPU));
  CHECK(td::mm(a, b).dtype() == td::kFloat32);
  td::testing::check_error([] { AutocastGuard bad(td::kCPU, td::kFloat32); }, {"autocast", "float16 or bfloat16",
                                                                               "float32"});
  CHECK_FALSE(td::amp::is_autocast_enabled(td::kCPU));  // the refused guard changed nothing
  CHECK(td::amp::autocast_dtype(td::kCPU) == td::kBFloat16);
}

TEST_CASE("gradients of an autocast forward reach float32 weights in float32, as through explicit casts",
          "[cpu]") {
  td::testing::reseed(5);
  Tensor x = rand_f32({6, 5}), w1 = leaf({8, 5}), b1 = leaf({8}), w2 = leaf({3, 8}), b2 = leaf({3});
  Tensor labels = td::randint(0, 3, {6});
  auto forward = [&](auto cast) {
    Tensor h = td::relu(F::linear(cast(x), cast(w1), cast(b1)));
    return F::cross_entropy(F::linear(cast(h), cast(w2), cast(b2)).to(td::kFloat32), labels);
  };
  Tensor expected = forward([](const Tensor& t) { return t.to(td::kBFloat16); });
  expected.backward();
  std::vector<Tensor> expected_grads;
  for (Tensor* p : {&w1, &b1, &w2, &b2}) {
    expected_grads.push_back(p->grad());
    p->mutable_grad() = Tensor();
  }
  Tensor loss;
  {
    AutocastGuard autocast(td::kCPU);
    loss = forward([](const Tensor& t) { return t; });
  }
  check_identical(loss, expected, "loss");
  loss.backward();
  int i = 0;
  for (Tensor* p : {&w1, &b1, &w2, &b2}) {
    CHECK(p->grad().dtype() == td::kFloat32);
    check_identical(p->grad(), expected_grads[i++], "gradient");
  }
}

TEST_CASE("backward inside an autocast guard runs every op in its forward's dtype", "[cpu]") {
  td::testing::reseed(6);
  Tensor a = leaf({5, 7}), b = leaf({7, 3});
  Tensor y = td::mm(a, b);  // float32: made outside autocast
  y.sum().backward();
  Tensor ga = a.grad(), gb = b.grad();
  a.mutable_grad() = Tensor();
  b.mutable_grad() = Tensor();
  Tensor y2 = td::mm(a, b);
  {
    AutocastGuard autocast(td::kCPU);
    y2.sum().backward();  // MmBackward's products stay float32
  }
  check_identical(a.grad(), ga, "a's gradient");
  check_identical(b.grad(), gb, "b's gradient");
}

TEST_CASE("autocast casts a weight once per guard, again after it is written, and forgets at the end",
          "[cpu]") {
  td::testing::reseed(7);
  Tensor w = leaf({3, 4});
  Tensor first, second;
  {
    AutocastGuard autocast(td::kCPU);
    first = td::amp::to_lower_precision(w);
    CHECK(first.dtype() == td::kBFloat16);
    CHECK(td::amp::to_lower_precision(w).is_same(first));
    {
      AutocastGuard nested(td::kCPU);  // an inner guard's end keeps the outer one's casts
    }
    CHECK(td::amp::to_lower_precision(w).is_same(first));
    {
      td::NoGradGuard no_grad;
      w.mul_(2);  // an optimizer step inside the guard
    }
    second = td::amp::to_lower_precision(w);
    CHECK_FALSE(second.is_same(first));
    check_identical(second, w.detach().to(td::kBFloat16), "the cast after the write");
    // A cast made without grad mode has no graph: it is not handed to a forward that records.
    Tensor other = leaf({2, 2});
    Tensor untracked;
    {
      td::NoGradGuard no_grad;
      untracked = td::amp::to_lower_precision(other);
    }
    Tensor tracked = td::amp::to_lower_precision(other);
    CHECK_FALSE(untracked.requires_grad());
    CHECK(tracked.requires_grad());
    // Not cached: tensors that are not leaves requiring grad, and anything with the cache off.
    Tensor activation = w * 1;
    CHECK_FALSE(td::amp::to_lower_precision(activation).is_same(td::amp::to_lower_precision(activation)));
    AutocastGuard uncached(td::kCPU, std::nullopt, true, false);
    CHECK_FALSE(td::amp::is_autocast_cache_enabled());
    CHECK_FALSE(td::amp::to_lower_precision(w).is_same(second));
    {
      AutocastGuard inner(td::kCPU);  // the cache setting is inherited, as in torch.autocast
      CHECK_FALSE(td::amp::is_autocast_cache_enabled());
      CHECK_FALSE(td::amp::to_lower_precision(w).is_same(second));
    }
  }
  CHECK(td::amp::is_autocast_cache_enabled());
  AutocastGuard again(td::kCPU);
  CHECK_FALSE(td::amp::to_lower_precision(w).is_same(second));
}

TEST_CASE("a bfloat16 input to batch and layer norms with float32 parameters comes back in bfloat16",
          "[cpu]") {
  td::testing::reseed(8);
  Tensor x = rand_f32({6, 4}).to(td::kBFloat16).requires_grad_();
  Tensor weight = leaf({4}), bias = leaf({4});
  Tensor mean = td::zeros({4}), var = td::ones({4});
  Tensor expected_mean = mean.clone(), expected_var = var.clone();
  Tensor expected = F::batch_norm(x.to(td::kFloat32), expected_mean, expected_var, weight, bias, true);
  Tensor out = F::batch_norm(x, mean, var, weight, bias, true);
  check_identical(out, expected.to(td::kBFloat16), "batch_norm");
  check_identical(mean, expected_mean, "running mean");
  check_identical(var, expected_var, "running var");
  check_identical(F::layer_norm(x, {4}, weight, bias), F::layer_norm(x.to(td::kFloat32), {4}, weight, bias)
                                                            .to(td::kBFloat16), "layer_norm");
  out.to(td::kFloat32).sum().backward();
  CHECK(x.grad().dtype() == td::kBFloat16);
  CHECK(weight.grad().dtype() == td::kFloat32);
}

TEST_CASE("DataParallel's replicas run under the caller's autocast, with float32 gradients on the module",
          "[cpu]") {
  td::testing::reseed(9);
  td::nn::Sequential model = small_mlp(3), reference = small_mlp(3);
  td::parallel::DataParallel dp(model, td::parallel::DataParallelOptions({"cpu:0", "cpu:1"}));
  Tensor x = rand_f32({7, 5});
  Tensor labels = td::randint(0, 3, {7});
  Tensor out, expected;
  {
    AutocastGuard autocast(td::kCPU);
    out = dp(x);
    expected = reference->forward(x);
  }
  REQUIRE(out.dtype() == td::kBFloat16);
  // Row by row the same products as one device's, up to the order of float32 additions inside
  // each bfloat16 GEMM.
  td::testing::check_close(out.to(td::kFloat32), expected.to(td::kFloat32), 1e-2, 1e-2, "output");
  F::cross_entropy(out.to(td::kFloat32), labels).backward();
  for (const Tensor& p : model->parameters()) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().dtype() == td::kFloat32);
  }
  // Loss in the replicas: each replica's cross-entropy runs in float32 under autocast.
  Tensor loss;
  {
    AutocastGuard autocast(td::kCPU);
    loss = dp->forward_with_loss(
        [](const Tensor& o, const Tensor& t) { return F::cross_entropy(o, t); }, labels, x);
  }
  CHECK(loss.dtype() == td::kFloat32);
  Tensor reference_loss;
  {
    AutocastGuard autocast(td::kCPU);
    reference_loss = F::cross_entropy(reference->forward(x), labels);
  }
  td::testing::check_close(loss, reference_loss.detach(), 1e-2, 1e-2, "loss");
}

TEST_CASE("inside one guard a weight's cast serves backward after backward, and follows Module::to and load",
          "[cpu]") {
  td::testing::reseed(11);
  td::nn::Linear layer(4, 3);
  Tensor x = rand_f32({5, 4});
  Tensor single;
  {
    AutocastGuard autocast(td::kCPU);
    F::linear(x, layer->weight, layer->bias).to(td::kFloat32).sum().backward();
    single = layer->weight.grad().clone();
    // Gradient accumulation: a second forward and backward with no step between, as when a
    // GradScaler skips a step; the cast's graph node outlives the first backward.
    Tensor cast = td::amp::to_lower_precision(layer->weight);
    F::linear(x, layer->weight, layer->bias).to(td::kFloat32).sum().backward();
    check_identical(layer->weight.grad(), single * 2, "accumulated gradient");
    CHECK(td::amp::to_lower_precision(layer->weight).is_same(cast));
    // Two forwards share the cast, then each has its own backward (two passes of a GAN, towers
    // of one model): the second backward runs through the node the first one went through.
    Tensor first = F::linear(x, layer->weight, layer->bias).to(td::kFloat32).sum();
    Tensor second = F::linear(x, layer->weight, layer->bias).to(td::kFloat32).sum();
    first.backward();
    second.backward();
    check_identical(layer->weight.grad(), single * 4, "after two forwards, then two backwards");

    Tensor before = td::amp::to_lower_precision(layer->weight);
    layer->to(td::Device("cpu:1"));  // new storage in place, no write the version counter sees
    Tensor moved = td::amp::to_lower_precision(layer->weight);
    CHECK(moved.device() == td::Device("cpu:1"));
    layer->to(td::Device("cpu:0"));
    td::StateDict state;
    state.insert("weight", td::zeros({3, 4}));
    state.insert("bias", td::zeros({3}));
    layer->load_state_dict(state);
    check_identical(td::amp::to_lower_precision(layer->weight), td::zeros({3, 4}, td::kBFloat16), "after load");
    CHECK_FALSE(td::amp::to_lower_precision(layer->weight).is_same(before));
  }
}

TEST_CASE("an op that fails under autocast leaves the state as it was", "[cpu]") {
  Tensor a = rand_f32({2, 3});
  AutocastGuard autocast(td::kCPU);
  td::testing::check_error([&] { (void)td::mm(a, a); }, {"mm", "2x3 and 2x3"});
  CHECK(td::amp::is_active(td::kCPU));
  CHECK(td::mm(a, a.t()).dtype() == td::kBFloat16);
  {
    td::amp::SuspendAutocast suspended;
    CHECK_FALSE(td::amp::is_active(td::kCPU));
    // What a worker started from here would be handed: autocast off, as ops here see it.
    CHECK_FALSE(td::amp::autocast_state().cpu_enabled);
    CHECK(td::mm(a, a.t()).dtype() == td::kFloat32);
  }
  CHECK(td::amp::autocast_state().cpu_enabled);
}

TEST_CASE("loss in the replicas with a CrossEntropyLoss module under float16 autocast comes back in float32",
          "[cpu]") {
  td::testing::reseed(12);
  td::nn::Sequential model = small_mlp(4), reference = small_mlp(4);
  td::parallel::DataParallel dp(model, td::parallel::DataParallelOptions({"cpu:0", "cpu:1"}));
  Tensor x = rand_f32({9, 5}) * 30;  // scores large enough that a float16 loss times 65536 is inf
  Tensor labels = td::randint(0, 3, {9});
  for (bool one_device : {false, true}) {
    INFO((one_device ? "one device" : "two devices"));
    td::parallel::DataParallel single(model, td::parallel::DataParallelOptions({"cpu:0"}));
    Tensor loss, expected;
    {
      AutocastGuard autocast(td::kCPU, td::kFloat16);
      td::nn::CrossEntropyLoss criterion;
      loss = one_device ? single->forward_with_loss(criterion, labels, x) : dp->forward_with_loss(criterion, labels, x);
      expected = F::cross_entropy(reference(x), labels);
    }
    REQUIRE(loss.dtype() == td::kFloat32);
    REQUIRE(expected.dtype() == td::kFloat32);
    td::testing::check_close(loss, expected.detach(), 1e-2, 1e-3, "loss");
    REQUIRE(loss.item<double>() > 1);  // so that in float16, times 65536 would be past 65504
    CHECK(std::isfinite((loss * 65536).item<double>()));
  }
}

TEST_CASE("GPU autocast: products in float16; softmax, sums, exp, log, pow, norms and losses in float32",
          "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::testing::reseed(10);
  const td::Device gpu("cuda:0");
  auto on_gpu = [&](const Tensor& t) { return t.to(gpu); };
  Tensor a = on_gpu(rand_f32({4, 6})), b = on_gpu(rand_f32({6, 5})), bias = on_gpu(rand_f32({5}));
  Tensor h = on_gpu(rand_f32({4, 6})).to(td::kFloat16), other = on_gpu(rand_f32({4, 6})).to(td::kFloat16);
  Tensor positive = h.abs() + 0.5;
  Tensor labels = td::randint(0, 6, {4}).to(gpu);
  auto f32 = [](const Tensor& t) { return t.to(td::kFloat32); };
  auto half = [](const Tensor& t) { return t.to(td::kFloat16); };
  AutocastGuard autocast(td::kCUDA);
  check_identical(td::mm(a, b), td::mm(half(a), half(b)), "mm");
  check_identical(td::addmm(bias, a, b), td::addmm(half(bias), half(a), half(b)), "addmm");
  check_identical(F::linear(a, b.t(), bias), F::linear(half(a), half(b.t()), half(bias)), "linear");
  check_identical(td::softmax(h, 1), td::softmax(f32(h), 1), "softmax");
  check_identical(td::log_softmax(h, 1), td::log_softmax(f32(h), 1), "log_softmax");
  check_identical(td::exp(h), td::exp(f32(h)), "exp");
  check_identical(td::log(positive), td::log(f32(positive)), "log");
  check_identical(td::log1p(positive), td::log1p(f32(positive)), "log1p");
  check_identical(td::rsqrt(positive), td::rsqrt(f32(positive)), "rsqrt");
  check_identical(td::reciprocal(positive), td::reciprocal(f32(positive)), "reciprocal");
  check_identical(td::pow(positive, 1.5), td::pow(f32(positive), 1.5), "pow");
  check_identical(td::pow(2.0, h), td::pow(2.0, f32(h)), "pow of a number");
  check_identical(td::pow(positive, h), td::pow(f32(positive), f32(h)), "pow of tensors");
  check_identical(2.0 / positive, 2.0 / f32(positive), "a number over a tensor");
  check_identical(h.sum(), h.sum(td::kFloat32), "sum");
  check_identical(h.sum({1}), h.sum({1}, false, td::kFloat32), "sum along a dim");
  check_identical(td::cumsum(h, 1), td::cumsum(h, 1, td::kFloat32), "cumsum");
  check_identical(td::cumprod(h, 1), td::cumprod(h, 1, td::kFloat32), "cumprod");
  check_identical(td::prod(h), td::prod(h, td::kFloat32), "prod");
  check_identical(td::norm(h), td::norm(f32(h)), "norm");
  check_identical(td::logsumexp(h, {1}), td::logsumexp(f32(h), {1}), "logsumexp");
  check_identical(F::layer_norm(h, {6}), F::layer_norm(f32(h), {6}), "layer_norm");
  check_identical(F::group_norm(h, 2), F::group_norm(f32(h), 2), "group_norm");
  check_identical(F::softplus(h), F::softplus(f32(h)), "softplus");
  check_identical(F::cosine_similarity(h, positive), F::cosine_similarity(f32(h), f32(positive)), "cosine_similarity");
  check_identical(td::expm1(h), td::expm1(f32(h)), "expm1");
  check_identical(F::cross_entropy(h, labels), F::cross_entropy(f32(h), labels), "cross_entropy");
  check_identical(F::mse_loss(h, other), F::mse_loss(f32(h), f32(other)), "mse_loss");
  // Off the lists: the input's dtype.
  CHECK(td::relu(h).dtype() == td::kFloat16);
  CHECK(h.mean().dtype() == td::kFloat16);
  CHECK(td::tanh(h).dtype() == td::kFloat16);
  // CPU tensors are the CPU autocast's business.
  CHECK(td::exp(h.cpu()).dtype() == td::kFloat16);
  CHECK(td::mm(a.cpu(), b.cpu()).dtype() == td::kFloat32);
  // binary_cross_entropy is refused, as PyTorch refuses it: the logits form is the safe one.
  Tensor p = td::sigmoid(h), t = td::sigmoid(other);
  td::testing::check_error([&] { (void)F::binary_cross_entropy(p, t); },
                           {"binary_cross_entropy", "unsafe to autocast", "cuda:0", "with_logits"});
  CHECK(F::binary_cross_entropy_with_logits(h, t).dtype() == td::kFloat32);
}

TEST_CASE("GradScaler finds an inf in a GPU gradient and skips the step", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  const td::Device gpu("cuda:0");
  Tensor w = td::ones({3, 3}, td::TensorOptions().device(gpu)).requires_grad_();
  Tensor c = td::ones({2}).requires_grad_();  // a CPU parameter beside it: one witness per device
  td::optim::SGD opt({w, c}, 0.1);
  td::amp::GradScaler scaler(td::amp::GradScalerOptions{.init_scale = 8.0});
  w.mutable_grad() = td::full({3, 3}, 8.0, td::TensorOptions().device(gpu));
  c.mutable_grad() = td::full({2}, 8.0);
  CHECK(scaler.step(opt));
  td::testing::check_close(w.cpu(), td::full({3, 3}, 0.9), 0, 0, "stepped");
  scaler.update();
  Tensor g = td::full({3, 3}, 8.0, td::TensorOptions().device(gpu));
  g.narrow(0, 2, 1).narrow(1, 2, 1).fill_(std::numeric_limits<double>::infinity());
  w.mutable_grad() = g;
  c.mutable_grad() = td::full({2}, 8.0);
  CHECK_FALSE(scaler.step(opt));
  td::testing::check_close(w.cpu(), td::full({3, 3}, 0.9), 0, 0, "not stepped");
  scaler.update();
  CHECK(scaler.get_scale() == 4.0);
}

TEST_CASE("GPU autocast leaves a float16 model's batch norm in float16, in training and in evaluation", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  const td::Device gpu("cuda:0");
  td::nn::BatchNorm1d bn(6);
  bn->to(gpu, td::kFloat16);
  Tensor h = td::testing::random_tensor({8, 6}, td::kFloat16).to(gpu);
  AutocastGuard autocast(td::kCUDA);
  CHECK(bn(h).dtype() == td::kFloat16);
  bn->eval();
  CHECK(bn(h).dtype() == td::kFloat16);  // the running statistics' rsqrt is not made float32
}

TEST_CASE("GPU autocast adds a float32 source into a float16 tensor in float32 (scatter_add), as PyTorch's",
          "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::testing::reseed(11);
  const td::Device gpu("cuda:0");
  Tensor x = td::testing::random_tensor({5, 3}, td::kFloat16).to(gpu).requires_grad_();
  Tensor src = rand_f32({4, 3}).to(gpu).requires_grad_();
  // No row taken twice in a column: atomic adds in another order could round otherwise.
  Tensor index = td::tensor({{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}}, gpu);
  Tensor expected = td::scatter_add(x.detach().to(td::kFloat32), 0, index, src.detach());
  td::testing::check_error([&] { (void)td::scatter_add(x, 0, index, src); }, {"scatter_add", "float16", "float32"});
  Tensor y;
  {
    AutocastGuard autocast(td::kCUDA);
    y = td::scatter_add(x, 0, index, src);
    // float16 with bfloat16: float32 as well (PyTorch refuses this pair under autocast).
    CHECK(td::scatter_add(x.detach(), 0, index, src.detach().to(td::kBFloat16)).dtype() == td::kFloat32);
    // The in-place form is not autocast, as in PyTorch: the mixture is refused, x unchanged.
    Tensor target = x.detach().clone();
    td::testing::check_error([&] { (void)target.scatter_add_(0, index, src.detach()); }, {"scatter_add"});
    check_identical(target, x.detach(), "x after the refused in-place scatter_add_");
  }
  check_identical(y, expected, "scatter_add under autocast");
  y.sum().backward();
  REQUIRE(x.grad().dtype() == td::kFloat16);
  REQUIRE(src.grad().dtype() == td::kFloat32);
  check_identical(x.grad(), td::ones({5, 3}, td::kFloat16).to(gpu), "x's gradient");
  check_identical(src.grad(), td::ones({4, 3}).to(gpu), "src's gradient");
}
