// amp::GradScaler, the spec: PyTorch's GradScaler arithmetic (the scale is a float32 number that
// halves on an inf or NaN and doubles after growth_interval clean steps), skipped steps leave the
// parameters and the optimizer's state as they were, small float16 gradients survive with it and
// vanish without it, and misuse is refused with nothing changed.
#include <cmath>
#include <limits>

#include "tests/testing.h"

namespace td = tandem;
namespace F = td::nn::functional;
using td::Tensor;
using td::amp::GradScaler;
using td::amp::GradScalerOptions;

namespace {

Tensor param(td::IntList shape) { return td::testing::random_tensor(td::Shape(shape.vec()), td::kFloat32).requires_grad_(); }

void set_grad(Tensor& p, const Tensor& g) { p.mutable_grad() = g.clone(); }

void check_identical(const Tensor& actual, const Tensor& expected, const std::string& what) {
  td::testing::check_close(actual, expected, 0, 0, what);
}

}  // namespace

TEST_CASE("scale multiplies by the scale, 65536 at first; a disabled scaler changes nothing", "[cpu]") {
  GradScaler scaler;
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.is_enabled());
  Tensor loss = td::tensor({0.25, -3.0}).to(td::kFloat32).requires_grad_();
  Tensor scaled = scaler.scale(loss);
  td::testing::check_equal(scaled, {16384.0, -196608.0}, "scaled");
  scaled.sum().backward();
  td::testing::check_equal(loss.grad(), {65536.0, 65536.0}, "its gradient");
  auto pair = scaler.scale(std::vector<Tensor>{loss, loss * 2});
  td::testing::check_equal(pair[1], {32768.0, -393216.0}, "a vector's second");

  // A 0-dim float16 loss comes back in float32, as PyTorch's (in float16, 65536 * 2 is inf); its
  // gradient is the loss's dtype (as in PyTorch, 65536 is inf there: the first step backs off).
  Tensor half_loss = td::full({}, 2.0, td::TensorOptions(td::kFloat16)).requires_grad_();
  Tensor half_scaled = scaler.scale(half_loss);
  CHECK(half_scaled.dtype() == td::kFloat32);
  CHECK(half_scaled.item<double>() == 131072.0);
  GradScaler smaller(GradScalerOptions{.init_scale = 1024.0});
  Tensor half_smaller = smaller.scale(half_loss);
  CHECK(half_smaller.dtype() == td::kFloat32);
  half_smaller.backward();
  CHECK(half_loss.grad().dtype() == td::kFloat16);
  CHECK(half_loss.grad().item<double>() == 1024.0);
  CHECK(scaler.scale(td::full({2}, 0.5, td::TensorOptions(td::kFloat16))).dtype() == td::kFloat16);

  GradScaler off(GradScalerOptions{.enabled = false});
  CHECK(off.scale(loss).is_same(loss));
  CHECK(off.get_scale() == 1.0);
  CHECK(off.state_dict().metadata.empty());
  td::testing::check_error([&] { (void)scaler.scale(td::randint(0, 3, {2})); }, {"GradScaler::scale", "floating"});
}

TEST_CASE("a step with finite gradients unscales them and steps as on the true gradients", "[cpu]") {
  td::testing::reseed(1);
  Tensor w = param({3, 4}), b = param({4});
  Tensor w_ref = w.detach().clone().requires_grad_(), b_ref = b.detach().clone().requires_grad_();
  Tensor gw = td::testing::random_tensor({3, 4}, td::kFloat32), gb = td::testing::random_tensor({4}, td::kFloat32);
  td::optim::SGD opt({w, b}, td::optim::SGDOptions(0.1).momentum(0.9));
  td::optim::SGD ref({w_ref, b_ref}, td::optim::SGDOptions(0.1).momentum(0.9));
  GradScaler scaler;
  for (int step = 0; step < 3; ++step) {
    set_grad(w, gw * scaler.get_scale());
    set_grad(b, gb * scaler.get_scale());
    set_grad(w_ref, gw);
    set_grad(b_ref, gb);
    CHECK(scaler.step(opt));
    ref.step();
    scaler.update();
    check_identical(w.grad(), gw, "w's unscaled gradient");
    check_identical(w, w_ref, "w after step " + std::to_string(step));
    check_identical(b, b_ref, "b after step " + std::to_string(step));
  }
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.growth_tracker() == 3);
}

TEST_CASE("a step with an inf or NaN in any gradient is skipped, and update halves the scale", "[cpu]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (double bad : {inf, -inf, nan}) {
    for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kBFloat16}) {
      td::testing::reseed(2);
      Tensor w = param({5, 7}).detach().to(dtype).requires_grad_(), b = param({7});
      Tensor w_ref = w.detach().clone().requires_grad_(), b_ref = b.detach().clone().requires_grad_();
      td::optim::SGD opt({w, b}, td::optim::SGDOptions(0.1).momentum(0.9));
      td::optim::SGD ref({w_ref, b_ref}, td::optim::SGDOptions(0.1).momentum(0.9));  // never sees the bad step
      GradScaler scaler(GradScalerOptions{.init_scale = 1024.0});
      set_grad(w, td::full({5, 7}, 1024.0, dtype));
      set_grad(b, td::full({7}, 1024.0));
      scaler.step(opt);  // one good step: the momentum buffers exist
      scaler.update();
      set_grad(w_ref, td::ones({5, 7}, dtype));
      set_grad(b_ref, td::ones({7}));
      ref.step();
      CHECK(scaler.growth_tracker() == 1);
      Tensor w_before = w.detach().clone(), b_before = b.detach().clone();
      Tensor gw = td::ones({5, 7}, dtype);
      gw.narrow(0, 4, 1).narrow(1, 6, 1).fill_(bad);  // the last element only
      set_grad(w, gw);
      set_grad(b, td::ones({7}));
      INFO(bad << " in a " << td::dtype_name(dtype) << " gradient");
      CHECK_FALSE(scaler.step(opt));
      check_identical(w, w_before, "w");
      check_identical(b, b_before, "b");
      scaler.update();
      CHECK(scaler.get_scale() == 512.0);
      CHECK(scaler.growth_tracker() == 0);
      // The momentum buffers did not move either: the next clean step is the reference's second.
      set_grad(w, td::full({5, 7}, 512.0, dtype));
      set_grad(b, td::full({7}, 512.0));
      REQUIRE(scaler.step(opt));
      set_grad(w_ref, td::ones({5, 7}, dtype));
      set_grad(b_ref, td::ones({7}));
      ref.step();
      check_identical(w, w_ref, "w after the next clean step");
      check_identical(b, b_ref, "b after the next clean step");
    }
  }
}

TEST_CASE("the scale grows by growth_factor after growth_interval clean steps, within float's range",
          "[cpu]") {
  Tensor p = param({2});
  td::optim::SGD opt({p}, 0.1);
  auto clean_step = [&](GradScaler& scaler) {
    set_grad(p, td::ones({2}));
    REQUIRE(scaler.step(opt));
    scaler.update();
  };
  GradScaler scaler(GradScalerOptions{.init_scale = 8.0, .growth_factor = 3.0, .growth_interval = 3});
  std::vector<double> scales;
  for (int i = 0; i < 7; ++i) {
    clean_step(scaler);
    scales.push_back(scaler.get_scale());
  }
  CHECK(scales == std::vector<double>{8, 8, 24, 24, 24, 72, 72});
  // A product float cannot hold is not taken; the count starts again.
  GradScaler top(GradScalerOptions{.init_scale = std::ldexp(1.0, 127), .growth_interval = 1});
  clean_step(top);
  CHECK(top.get_scale() == std::ldexp(1.0, 127));
  CHECK(top.growth_tracker() == 0);
  // The scale is a float32 number, as PyTorch keeps it.
  CHECK(GradScaler(GradScalerOptions{.init_scale = 0.1}).get_scale() == static_cast<double>(0.1f));
  GradScaler set(GradScalerOptions{});
  set.update(3.3);
  CHECK(set.get_scale() == static_cast<double>(3.3f));
  // An interval lowered below the count so far: the next clean step grows the scale.
  GradScaler lowered(GradScalerOptions{.init_scale = 2.0, .growth_interval = 10});
  for (int i = 0; i < 5; ++i) clean_step(lowered);
  lowered.set_growth_interval(3);
  clean_step(lowered);
  CHECK(lowered.get_scale() == 4.0);
  CHECK(lowered.growth_tracker() == 0);
}

TEST_CASE("float16 training: small gradients vanish without the scaler and survive with it", "[cpu]") {
  td::testing::reseed(3);
  Tensor x = td::testing::random_tensor({8, 6}, td::kFloat32, td::testing::Layout::Contiguous, 0.5, 1.5);
  Tensor w = param({4, 6});
  // A loss whose gradient at the float16 output (1e-9 per element) is below float16's smallest
  // number (6e-8).
  auto loss_of = [&] {
    td::amp::AutocastGuard autocast(td::kCPU, td::kFloat16);
    Tensor out = F::linear(x, w);
    REQUIRE(out.dtype() == td::kFloat16);
    return out.to(td::kFloat32).sum() * 1e-9;
  };
  loss_of().backward();
  CHECK(w.grad().abs().max().item<double>() == 0);
  w.mutable_grad() = Tensor();

  GradScaler scaler;
  td::optim::SGD opt({w}, 0.0);
  scaler.scale(loss_of()).backward();
  scaler.unscale_(opt);
  // The true gradient: 1e-9 times each column's sum of x.
  Tensor expected = (x.sum({0}) * 1e-9).unsqueeze(0).expand({4, 6});
  td::testing::check_close(w.grad(), expected, 2e-3, 0, "unscaled gradient");
  CHECK(scaler.step(opt));
  scaler.update();
}

TEST_CASE("GradScaler's misuse is refused and changes nothing", "[cpu]") {
  Tensor p = param({3});
  td::optim::SGD opt({p}, 0.5);
  GradScaler scaler;
  set_grad(p, td::full({3}, 65536.0));
  scaler.unscale_(opt);
  td::testing::check_error([&] { scaler.unscale_(opt); }, {"unscale_", "already", "update()"});
  td::testing::check_equal(p.grad(), {1, 1, 1}, "unscaled once");
  Tensor unstepped = p.detach().clone();
  CHECK(scaler.step(opt));  // steps on the gradient unscale_ left, not unscaled again
  td::testing::check_close(p, unstepped - 0.5, 0, 0, "stepped once, by the unscaled gradient");
  td::testing::check_error([&] { scaler.unscale_(opt); }, {"unscale_", "after step()"});
  td::testing::check_error([&] { scaler.step(opt); }, {"step", "already", "update()"});
  scaler.update();
  td::testing::check_error([&] { scaler.update(); }, {"update", "no gradient was checked"});
  CHECK(scaler.get_scale() == 65536.0);
  td::testing::check_error([&] { scaler.update(-1.0); }, {"new_scale", "positive"});
  CHECK(scaler.get_scale() == 65536.0);
  // After the refusals the scaler works as before.
  set_grad(p, td::full({3}, 65536.0));
  Tensor before = p.detach().clone();
  CHECK(scaler.step(opt));
  td::testing::check_close(p, before - 0.5, 0, 0, "stepped");

  // float16 gradients: refused unless allowed, with no gradient touched.
  Tensor h = td::ones({4}, td::kFloat16).requires_grad_();
  td::optim::SGD half_opt({h}, 0.1);
  set_grad(h, td::full({4}, 2048.0, td::kFloat16));
  GradScaler other(GradScalerOptions{.init_scale = 1024.0});
  td::testing::check_error([&] { other.unscale_(half_opt); }, {"unscale_", "float16 gradient", "[4]"});
  td::testing::check_equal(h.grad(), {2048, 2048, 2048, 2048}, "untouched");
  other.unscale_(half_opt, true);
  td::testing::check_equal(h.grad(), {2, 2, 2, 2}, "unscaled when allowed");

  // An optimizer whose parameters have no gradient: nothing to check is a mistake, as in PyTorch.
  Tensor orphan = param({2});
  td::optim::SGD orphan_opt({orphan}, 0.1);
  GradScaler third;
  td::testing::check_error([&] { third.step(orphan_opt); }, {"step", "no", "gradient"});
  td::testing::check_error([&] { third.update(); }, {"update", "no gradient was checked"});
  CHECK(third.get_scale() == 65536.0);

  td::testing::check_error([] { GradScaler bad(GradScalerOptions{.growth_factor = 1.0}); }, {"growth_factor", "> 1"});
  td::testing::check_error([] { GradScaler bad(GradScalerOptions{.backoff_factor = 1.0}); }, {"backoff_factor"});
  td::testing::check_error([] { GradScaler bad(GradScalerOptions{.growth_interval = 0}); }, {"growth_interval"});
  td::testing::check_error([] { GradScaler bad(GradScalerOptions{.init_scale = 0}); }, {"init_scale"});
  td::testing::check_error([&] { other.set_growth_factor(0.5); }, {"growth_factor"});
  CHECK(other.get_growth_factor() == 2.0);
}

TEST_CASE("with several optimizers each steps on its own gradients, and an inf in any backs off the scale",
          "[cpu]") {
  Tensor a = param({2}), b = param({2});
  td::optim::SGD opt_a({a}, 0.1), opt_b({b}, 0.1);
  GradScaler scaler(GradScalerOptions{.init_scale = 4.0});
  set_grad(a, td::full({2}, 4.0));
  Tensor bad = td::ones({2});
  bad.fill_(std::numeric_limits<double>::quiet_NaN());
  set_grad(b, bad);
  Tensor a_before = a.detach().clone(), b_before = b.detach().clone();
  CHECK(scaler.step(opt_a));
  CHECK_FALSE(scaler.step(opt_b));
  td::testing::check_close(a, a_before - 0.1, 0, 0, "a stepped");
  check_identical(b, b_before, "b did not");
  scaler.update();
  CHECK(scaler.get_scale() == 2.0);
}

TEST_CASE("state_dict holds PyTorch's keys and round-trips; a bad state is refused whole", "[cpu]") {
  GradScaler scaler(GradScalerOptions{.init_scale = 0.1, .growth_factor = 1.5, .backoff_factor = 0.25,
                                      .growth_interval = 7});
  Tensor p = param({2});
  td::optim::SGD opt({p}, 0.1);
  for (int i = 0; i < 3; ++i) {
    set_grad(p, td::ones({2}));
    scaler.step(opt);
    scaler.update();
  }
  td::StateDict state = scaler.state_dict();
  CHECK(state.metadata.at("scale") == "0.10000000149011612");
  CHECK(state.metadata.at("growth_factor") == "1.5");
  CHECK(state.metadata.at("backoff_factor") == "0.25");
  CHECK(state.metadata.at("growth_interval") == "7");
  CHECK(state.metadata.at("_growth_tracker") == "3");
  GradScaler loaded;
  loaded.load_state_dict(state);
  CHECK(loaded.get_scale() == scaler.get_scale());
  CHECK(loaded.get_growth_factor() == 1.5);
  CHECK(loaded.get_backoff_factor() == 0.25);
  CHECK(loaded.get_growth_interval() == 7);
  CHECK(loaded.growth_tracker() == 3);

  GradScaler fresh;
  auto refused = [&](const std::string& key, const std::string& value, std::vector<std::string> fragments) {
    td::StateDict bad = state;
    if (value.empty()) {
      bad.metadata.erase(key);
    } else {
      bad.metadata[key] = value;
    }
    td::testing::check_error([&] { fresh.load_state_dict(bad); }, fragments);
    CHECK(fresh.get_scale() == 65536.0);
    CHECK(fresh.get_growth_interval() == 2000);
    CHECK(fresh.growth_tracker() == 0);
  };
  refused("scale", "", {"load_state_dict", "\"scale\""});
  refused("scale", "big", {"\"scale\"", "not a number"});
  refused("scale", "-2", {"scale", "positive"});
  refused("_growth_tracker", "-1", {"_growth_tracker", "negative", "-1"});
  refused("growth_factor", "0.5", {"growth_factor"});
  td::testing::check_error([&] { fresh.load_state_dict(td::StateDict()); }, {"empty", "disabled"});
  // A disabled scaler takes nothing and says nothing, as PyTorch's.
  GradScaler off(GradScalerOptions{.enabled = false});
  off.load_state_dict(state);
  CHECK(off.get_scale() == 1.0);
  CHECK(off.state_dict().metadata.empty());
}

TEST_CASE("float16 autocast with loss scaling over two CPU devices trains as one device does", "[cpu]") {
  td::testing::reseed(4);
  // A smooth activation: with ReLU, a pre-activation near 0 that float16's rounding puts on the
  // other side in one run sends the two runs' weights apart, by chance of the data, not by a fault.
  auto build = [] {
    td::manual_seed(5);
    return td::nn::Sequential(td::nn::Linear(6, 16), td::nn::Tanh(), td::nn::Linear(16, 4));
  };
  Tensor x = td::testing::random_tensor({12, 6}, td::kFloat32);
  Tensor labels = td::randint(0, 4, {12});
  // One float16 step, scaled, on a module under DataParallel (or the module itself).
  struct Run {
    td::nn::Sequential model;
    std::optional<td::parallel::DataParallel<td::nn::SequentialImpl>> dp;
    td::optim::SGD opt;
    GradScaler scaler;
    Run(td::nn::Sequential m, bool parallel, double init_scale)
        : model(m), opt(m->parameters(), td::optim::SGDOptions(0.05).momentum(0.9)),
          scaler(GradScalerOptions{.init_scale = init_scale, .growth_interval = 1000}) {
      if (parallel) dp.emplace(model, td::parallel::DataParallelOptions({"cpu:0", "cpu:1"}));
    }
    std::pair<double, bool> step(const Tensor& x, const Tensor& labels) {
      Tensor loss;
      {
        td::amp::AutocastGuard autocast(td::kCPU, td::kFloat16);
        loss = F::cross_entropy(dp ? (*dp)(x) : model(x), labels);
      }
      REQUIRE(loss.dtype() == td::kFloat32);
      opt.zero_grad();
      scaler.scale(loss).backward();
      const bool stepped = dp ? (*dp)->step(scaler, opt) : scaler.step(opt);
      scaler.update();
      return {loss.item<double>(), stepped};
    }
  };
  SECTION("a scale float16 can carry: every step is taken, and the weights follow one device's") {
    Run parallel(build(), true, 256), single(build(), false, 256);
    for (int step = 0; step < 8; ++step) {
      auto [loss, stepped] = parallel.step(x, labels);
      auto [ref_loss, ref_stepped] = single.step(x, labels);
      CHECK(stepped);
      CHECK(ref_stepped);
      CHECK(loss == Approx(ref_loss).epsilon(1e-2));
    }
    CHECK(parallel.scaler.get_scale() == 256);
    auto a = parallel.model->parameters(), b = single.model->parameters();
    for (size_t i = 0; i < a.size(); ++i) td::testing::check_close(a[i], b[i], 1e-2, 5e-4, "parameter");
    CHECK((*parallel.dp)->stats().update > 0);
  }
  SECTION("a scale that overflows float16: steps are skipped and the scale backs off until they are not") {
    Run parallel(build(), true, std::ldexp(1.0, 24));
    auto [first_loss, first_stepped] = parallel.step(x, labels);
    CHECK_FALSE(first_stepped);  // gradients of about 2^24 / 12 are past float16's 65504
    CHECK(parallel.scaler.get_scale() == std::ldexp(1.0, 23));
    int taken = 0;
    double last_loss = first_loss;
    for (int step = 0; step < 14; ++step) {
      auto [loss, stepped] = parallel.step(x, labels);
      taken += stepped;
      last_loss = loss;
    }
    CHECK(taken > 0);
    CHECK(parallel.scaler.get_scale() < std::ldexp(1.0, 23));
    CHECK(last_loss < first_loss);
  }
}
