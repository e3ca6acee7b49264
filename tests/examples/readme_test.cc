// The model and training step the README shows, kept compiling and working.
#include <cmath>

#include "tests/testing.h"  // includes tandem.h

namespace td = tandem;

namespace {

// --- as in the README ---
class NetImpl : public td::nn::Cloneable<NetImpl> {
 public:
  NetImpl() { reset(); }
  void reset() override {
    fc1 = register_module("fc1", td::nn::Linear(784, 128));
    fc2 = register_module("fc2", td::nn::Linear(128, 10));
  }
  td::Tensor forward(const td::Tensor& x) override { return fc2(td::relu(fc1(x.flatten(1)))); }
  td::nn::Linear fc1{nullptr}, fc2{nullptr};
};
class Net : public td::nn::ModuleHolder<NetImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
// ---

}  // namespace

TEST_CASE("the README's model trains on the shapes data, and td::save / td::load carry it over", "[cpu]") {
  td::manual_seed(0);
  td::data::ShapesDataset data(256, 7);
  const td::Tensor images = data.data(), labels = data.targets();

  Net net;
  td::optim::SGD opt(net->parameters(), td::optim::SGDOptions(0.05).momentum(0.9));
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    td::Tensor loss = td::nn::functional::cross_entropy(net(images), labels);
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.5 * first);

  const std::string path = td::testing::scratch_dir("readme_test") + "/net.safetensors";
  td::save(*net, path);
  td::manual_seed(1);
  Net restored;
  td::load(*restored, path);
  td::NoGradGuard no_grad;
  CHECK(td::testing::values(restored(images)) == td::testing::values(net(images)));
}

TEST_CASE("the README's data-parallel step trains the same model over two CPU devices", "[cpu]") {
  td::manual_seed(0);
  td::data::ShapesDataset data(256, 7);
  const td::Tensor images = data.data(), labels = data.targets();
  Net net;
  td::manual_seed(0);
  Net single;

  // --- as in the README ---
  td::parallel::DataParallel dp(net, td::parallel::DataParallelOptions({"cpu:0", "cpu:1"}));
  td::optim::SGD opt(dp->parameters(), 0.05);   // the module's parameters: never wrap the optimizer
  td::Tensor loss = td::nn::functional::cross_entropy(dp(images), labels);
  opt.zero_grad();
  loss.backward();                              // the replicas' gradients add up on net's parameters
  dp->step(opt);
  std::ostringstream table;
  table << dp->stats().table();                 // rows, forward/backward time, bytes moved, per device
  // ---

  td::optim::SGD single_opt(single->parameters(), 0.05);
  td::nn::functional::cross_entropy(single(images), labels).backward();
  single_opt.step();
  auto a = net->parameters(), b = single->parameters();
  for (size_t i = 0; i < a.size(); ++i) td::testing::check_close(a[i], b[i], 1e-5, 1e-6);
  CHECK(table.str().find("cpu:1") != std::string::npos);
  td::Tensor in_replicas = dp->forward_with_loss(
      [](const td::Tensor& out, const td::Tensor& y) { return td::nn::functional::cross_entropy(out, y); }, labels,
      images);
  CHECK(in_replicas.item<double>() ==
        Approx(td::nn::functional::cross_entropy(net(images), labels).item<double>()).epsilon(1e-5));
  td::Tensor functional = td::parallel::data_parallel(net, images, {"cpu:0", "cpu:1"});
  td::testing::check_close(functional.detach(), net(images).detach(), 1e-5, 1e-6);
}

TEST_CASE("the README's mixed-precision step trains data-parallel in float16 with loss scaling", "[cpu]") {
  td::manual_seed(0);
  td::data::ShapesDataset data(256, 7);
  const td::Tensor images = data.data(), labels = data.targets();
  Net net;
  td::parallel::DataParallel dp(net, td::parallel::DataParallelOptions({"cpu:0", "cpu:1"}));
  td::optim::SGD opt(dp->parameters(), td::optim::SGDOptions(0.05).momentum(0.9));
  double first = 0, last = 0;
  int skipped = 0;
  // --- as in the README ---
  td::amp::GradScaler scaler;                    // once; float16 needs it, bfloat16 does not
  // ---
  for (int step = 0; step < 40; ++step) {
    // --- as in the README ---
    td::Tensor loss;
    {
      td::amp::AutocastGuard autocast(td::kCPU, td::kFloat16);   // default: bfloat16 on CPUs, float16 on GPUs
      loss = td::nn::functional::cross_entropy(dp(images), labels);  // linear in float16, the loss in float32
    }
    opt.zero_grad();
    scaler.scale(loss).backward();
    bool stepped = dp->step(scaler, opt);          // unscales; skips the step if a gradient is inf or NaN
    scaler.update();                               // halves the scale after a skip, doubles it after 2000 clean steps
    // ---
    skipped += !stepped;
    CHECK(loss.dtype() == td::kFloat32);
    (step == 0 ? first : last) = loss.item<double>();
  }
  INFO("loss " << first << " -> " << last << ", " << skipped << " steps skipped");
  CHECK(last < 0.5 * first);
  CHECK(skipped < 10);
  CHECK(scaler.get_scale() == std::ldexp(65536.0, -skipped));  // halved at each skip, not grown yet
  for (const td::Tensor& p : net->parameters()) CHECK(p.dtype() == td::kFloat32);
}
