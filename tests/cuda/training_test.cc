// Training on cuda:0 ends where training on the CPU does: an MLP and a CNN, from the same initial
// weights on the same batches, 20 steps of SGD and of Adam, reach the same losses and weights (float32
// within 1e-4 of each tensor's scale, float64 within 1e-10). [large]: left out of the
// compute-sanitizer runs of tools/gpu/run.sh.
#include <memory>
#include <string>
#include <vector>

#include "examples/models.h"
#include "tests/cuda/cuda_testing.h"

namespace td = tandem;
namespace tt = td::testing;
namespace ct = td::cuda_testing;
namespace nn = td::nn;
namespace optim = td::optim;
using td::Device;
using td::DType;
using td::Shape;
using td::Tensor;

namespace {

constexpr int kSteps = 20;
constexpr int64_t kBatch = 8, kClasses = 5;

// The float32 models are smooth (tanh, SiLU, average pooling): a ReLU or a max-pool window whose
// choice flips on a rounding difference between the devices would send a whole gradient elsewhere.
// The examples' ReLU and max-pool models run in float64, where such a flip needs a 1e-16 tie.
class SmoothMlpImpl : public nn::Cloneable<SmoothMlpImpl> {
 public:
  SmoothMlpImpl(int64_t in_features, int64_t classes) : in_features(in_features), classes(classes) { reset(); }
  void reset() override {
    layers = register_module("layers", nn::Sequential(nn::Flatten(), nn::Linear(in_features, 32), nn::Tanh(),
                                                      nn::Linear(32, 32), nn::SiLU(), nn::Linear(32, classes)));
  }
  Tensor forward(const Tensor& x) override { return layers(x); }
  int64_t in_features, classes;
  nn::Sequential layers{nullptr};
};

class SmoothCnnImpl : public nn::Cloneable<SmoothCnnImpl> {
 public:
  SmoothCnnImpl(int64_t channels, int64_t height, int64_t width, int64_t classes)
      : channels(channels), height(height), width(width), classes(classes) {
    reset();
  }
  void reset() override {
    layers = register_module(
        "layers",
        nn::Sequential(nn::Conv2d(nn::Conv2dOptions(channels, 8, 3).padding(1)), nn::SiLU(), nn::AvgPool2d(2),
                       nn::Conv2d(nn::Conv2dOptions(8, 16, 3).padding(1).stride(1)), nn::Tanh(), nn::AvgPool2d(2),
                       nn::Flatten(), nn::Linear(16 * (height / 4) * (width / 4), classes)));
  }
  Tensor forward(const Tensor& x) override { return layers(x); }
  int64_t channels, height, width, classes;
  nn::Sequential layers{nullptr};
};

struct Batch {
  Tensor x, y;  // on the CPU
};

// Fixed batches whose labels a linear teacher gives, so that the models can learn them.
std::vector<Batch> make_batches(const Shape& image, DType dtype) {
  Shape shape{kBatch};
  shape.insert(shape.end(), image.begin(), image.end());
  Tensor teacher = td::randn({td::numel_of(image), kClasses}, td::kFloat64);
  std::vector<Batch> batches;
  for (int b = 0; b < 4; ++b) {
    Tensor x = td::randn(shape, td::kFloat64);
    batches.push_back({x.to(dtype), td::argmax(td::matmul(x.flatten(1), teacher), 1)});
  }
  return batches;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind, const std::vector<Tensor>& params,
                                                 DType dtype) {
  if (kind == "SGD") return std::make_unique<optim::SGD>(params, optim::SGDOptions(0.05).momentum(0.9));
  // Adam's first step is g / (|g| + eps): in float32 a gradient near eps that is mostly rounding
  // noise would move by a good part of lr. With eps 1e-4 float32 training drifts from float64's by
  // about 2e-6 of the weights' scale in 20 steps (1e-5 with eps 1e-5), well inside the tolerance.
  return std::make_unique<optim::Adam>(params, optim::AdamOptions(5e-3).eps(dtype == td::kFloat32 ? 1e-4 : 1e-8));
}

// kSteps optimizer steps of cross-entropy on the batches in turn; the losses, as numbers.
std::vector<double> train(nn::Module& model, optim::Optimizer& optimizer, const std::vector<Batch>& batches,
                          const Device& device) {
  std::vector<double> losses;
  for (int step = 0; step < kSteps; ++step) {
    const Batch& b = batches[step % batches.size()];
    optimizer.zero_grad();
    Tensor loss = nn::F::cross_entropy(model.forward(b.x.to(device)), b.y.to(device));
    REQUIRE(loss.device() == device);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

double max_abs(const Tensor& t) { return ct::abs64(t).amax().item<double>(); }

// Trains copies of `model` (converted to dtype) on the CPU and on the device with each optimizer,
// and checks that the losses and final weights agree within tol (relative to each tensor's scale),
// that every weight moved, and that the loss fell.
void check_same_training(const std::shared_ptr<nn::Module>& model, DType dtype, const Shape& image, double tol,
                         const std::string& name) {
  model->to(dtype);
  const std::vector<Batch> batches = make_batches(image, dtype);
  const Device cpu_device(td::kCPU);
  for (const std::string kind : {"SGD", "Adam"}) {
    INFO(name << " in " << td::dtype_name(dtype) << " with " << kind);
    std::shared_ptr<nn::Module> cpu = model->clone(), dev = model->clone(ct::device());
    const auto cpu_params = cpu->named_parameters(), dev_params = dev->named_parameters();
    REQUIRE(cpu_params.size() == dev_params.size());
    std::vector<Tensor> initial;
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      REQUIRE(dev_params[i].second.device() == ct::device());
      REQUIRE(dev_params[i].second.dtype() == dtype);
      ct::check_equal(dev_params[i].second, cpu_params[i].second, "initial " + cpu_params[i].first);
      initial.push_back(cpu_params[i].second.detach().clone());
    }
    auto cpu_optimizer = make_optimizer(kind, cpu->parameters(), dtype);
    auto dev_optimizer = make_optimizer(kind, dev->parameters(), dtype);
    const std::vector<double> cpu_losses = train(*cpu, *cpu_optimizer, batches, cpu_device);
    const std::vector<double> dev_losses = train(*dev, *dev_optimizer, batches, ct::device());
    for (int step = 0; step < kSteps; ++step) {
      INFO("loss of step " << step);
      CHECK(dev_losses[step] == Approx(cpu_losses[step]).epsilon(tol));
    }
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      const Tensor &c = cpu_params[i].second, &d = dev_params[i].second;
      CHECK(d.device() == ct::device());
      const double scale = max_abs(c);
      ct::check_close(d, c, tol, tol * scale, "final " + cpu_params[i].first);
      CHECK(max_abs(c - initial[i]) > 1e-3 * scale);  // the step did move it
    }
    const double first = (cpu_losses[0] + cpu_losses[1] + cpu_losses[2] + cpu_losses[3]) / 4;
    const double last = (cpu_losses[16] + cpu_losses[17] + cpu_losses[18] + cpu_losses[19]) / 4;
    CHECK(last < first);
  }
}

}  // namespace

TEST_CASE("an MLP trains on the device to the CPU's losses and weights in float32, with SGD and Adam",
          "[cuda][heavy]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(200);
  check_same_training(std::make_shared<SmoothMlpImpl>(3 * 12 * 12, kClasses), td::kFloat32, {3, 12, 12}, 1e-4, "MLP");
}

TEST_CASE("a CNN trains on the device to the CPU's losses and weights in float32, with SGD and Adam", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(201);
  check_same_training(std::make_shared<SmoothCnnImpl>(3, 12, 12, kClasses), td::kFloat32, {3, 12, 12}, 1e-4, "CNN");
}

TEST_CASE("the example MLP and CNN (ReLU, max-pool) train on the device to the CPU's weights in float64",
          "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(202);
  check_same_training(td::examples::Mlp(1 * 12 * 12, kClasses, 64).ptr(), td::kFloat64, {1, 12, 12}, 1e-10,
                      "example MLP");
  check_same_training(td::examples::Cnn(1, 12, 12, kClasses).ptr(), td::kFloat64, {1, 12, 12}, 1e-10, "example CNN");
}

TEST_CASE("LBFGS with the line search trains the smooth MLP on the device to the CPU's weights in float64", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(203);
  auto model = std::make_shared<SmoothMlpImpl>(3 * 4 * 4, kClasses);
  model->to(td::kFloat64);
  const Batch batch = make_batches({3, 4, 4}, td::kFloat64).front();
  const auto options = optim::LBFGSOptions(1).max_iter(8).history_size(4).line_search_fn("strong_wolfe");
  std::vector<std::vector<double>> losses;
  std::vector<std::shared_ptr<nn::Module>> trained;
  for (const Device& device : {Device(td::kCPU), ct::device()}) {
    std::shared_ptr<nn::Module> copy = model->clone(device);
    optim::LBFGS lbfgs(copy->parameters(), options);
    const Tensor x = batch.x.to(device), y = batch.y.to(device);
    std::vector<double> per_step;
    for (int step = 0; step < 3; ++step) {
      per_step.push_back(lbfgs
                             .step([&] {
                               lbfgs.zero_grad();
                               Tensor loss = nn::F::cross_entropy(copy->forward(x), y);
                               loss.backward();
                               return loss;
                             })
                             .item<double>());
    }
    losses.push_back(per_step);
    trained.push_back(copy);
  }
  for (size_t step = 0; step < losses[0].size(); ++step)
    CHECK(losses[1][step] == Approx(losses[0][step]).epsilon(1e-9));
  CHECK(losses[0].back() < losses[0].front());
  const auto cpu_params = trained[0]->named_parameters(), dev_params = trained[1]->named_parameters();
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    ct::check_close(dev_params[i].second, cpu_params[i].second, 1e-8, 1e-8 * max_abs(cpu_params[i].second),
                    "LBFGS final " + cpu_params[i].first);
  }
}

TEST_CASE("a lazy layer moved to the device before its first forward materializes there, as on the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  std::vector<Tensor> outputs, weights;
  for (const Device& device : {Device(td::kCPU), ct::device()}) {
    td::manual_seed(31);
    nn::LazyConv2d conv(nn::Conv2dOptions(0, 4, 3).groups(2));
    conv->to(device, td::kFloat64);
    const Tensor y = conv(tt::sine_ramp({2, 6, 5, 5}, 0.37).to(device));
    CHECK(conv->weight.device() == device);
    CHECK(conv->weight.dtype() == td::kFloat64);
    CHECK(conv->weight.sizes() == Shape{4, 3, 3, 3});
    outputs.push_back(y);
    weights.push_back(conv->weight);
  }
  ct::check_equal(weights[1], weights[0], "lazy weight");
  ct::check_close(outputs[1], outputs[0], 1e-12, 1e-12, "lazy convolution");
}
