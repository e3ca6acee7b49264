// Tests of the built-in shapes dataset: determinism, balance, value range, and that it is
// learnable but not trivially.
#include "nn/data/shapes.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>

#include "nn/data/dataloader.h"
#include "tests/testing.h"

namespace td = tandem;
namespace data = tandem::data;
using td::testing::values;

TEST_CASE("the shapes dataset is determined by its seed", "[cpu]") {
  data::ShapesDataset a(500, 42), b(500, 42), c(500, 43);
  CHECK(values(a.data()) == values(b.data()));
  CHECK(values(a.targets()) == values(b.targets()));
  CHECK(values(a.data()) != values(c.data()));
  CHECK(values(a.targets()) != values(c.targets()));
  CHECK(a.seed() == 42);
  // Example i depends on (seed, i) only: a smaller dataset is a prefix of a larger one.
  data::ShapesDataset prefix(137, 42);
  CHECK(values(prefix.data()) == values(a.data().narrow(0, 0, 137)));
  CHECK(values(prefix.targets()) == values(a.targets().narrow(0, 0, 137)));
  // ... whatever the number of threads that generated it.
  int threads = td::num_threads();
  td::set_num_threads(1);
  data::ShapesDataset serial(500, 42);
  td::set_num_threads(threads);
  CHECK(values(serial.data()) == values(a.data()));
  // The labels come from integer arithmetic alone, so they are pinned down: a change here would
  // silently change every seeded run. (The pixels go through sin, cos and sqrt, whose last bits
  // may differ between C libraries.)
  CHECK(values(data::ShapesDataset(20, 0).targets()) ==
        std::vector<double>{7, 9, 8, 5, 4, 2, 1, 3, 0, 6, 2, 7, 9, 6, 4, 1, 0, 8, 5, 3});
}

TEST_CASE("the shapes dataset has balanced classes, float32 images in [0, 1] and int64 labels", "[cpu]") {
  data::ShapesDataset shapes(1003, 7);
  CHECK(shapes.size() == 1003);
  CHECK(shapes.data().sizes() == td::Shape{1003, 1, 28, 28});
  CHECK(shapes.data().dtype() == td::kFloat32);
  CHECK(shapes.targets().sizes() == td::Shape{1003});
  CHECK(shapes.targets().dtype() == td::kInt64);
  std::vector<double> labels = values(shapes.targets());
  std::vector<int64_t> counts(10, 0);
  for (double label : labels) {
    REQUIRE(label >= 0);
    REQUIRE(label <= 9);
    ++counts[static_cast<size_t>(label)];
  }
  for (int64_t k = 0; k < 10; ++k) {
    INFO("class " << k << " (" << data::ShapesDataset::class_names()[k] << ")");
    CHECK(counts[k] >= 100);
    CHECK(counts[k] <= 101);
  }
  // Each block of ten holds each class once, in an order that varies from block to block.
  std::vector<double> first(labels.begin(), labels.begin() + 10), second(labels.begin() + 10, labels.begin() + 20);
  CHECK(std::set<double>(first.begin(), first.end()).size() == 10);
  CHECK(first != second);
  std::vector<double> pixels = values(shapes.data());
  CHECK(*std::min_element(pixels.begin(), pixels.end()) >= 0.0);
  CHECK(*std::max_element(pixels.begin(), pixels.end()) <= 1.0);
  // Images are not blank: every one has bright shape pixels and a darker background.
  for (int64_t i = 0; i < shapes.size(); ++i) {
    auto begin = pixels.begin() + i * 784, end = begin + 784;
    double lo = *std::min_element(begin, end), hi = *std::max_element(begin, end);
    if (hi - lo < 0.3) FAIL("image " << i << " spans only [" << lo << ", " << hi << "]");
  }
  CHECK(data::ShapesDataset(0, 1).size() == 0);
  td::testing::check_error([] { data::ShapesDataset(-1, 1); }, {"ShapesDataset", "-1"});
}

TEST_CASE("the shapes train and test sets come from different seeds", "[cpu]") {
  data::ShapesSplit split = data::shapes_train_test(300, 100, 5);
  CHECK(split.train->size() == 300);
  CHECK(split.test->size() == 100);
  CHECK(split.train->seed() != split.test->seed());
  CHECK(values(split.train->data().narrow(0, 0, 100)) != values(split.test->data()));
  data::ShapesSplit again = data::shapes_train_test(300, 100, 5);
  CHECK(values(again.test->data()) == values(split.test->data()));
  CHECK(data::shapes_train_test(10, 10, 6).train->seed() != split.train->seed());
}

TEST_CASE("generating 60000 shapes takes well under two seconds", "[cpu][slow]") {
  auto start = std::chrono::steady_clock::now();
  data::ShapesDataset shapes(60000, 0);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("60000 shapes generated in " << seconds << " s on " << td::num_threads() << " threads");
  CHECK(shapes.size() == 60000);
  CHECK(seconds < 2.0);
}

TEST_CASE("a small MLP learns the shapes well but not perfectly", "[cpu]") {
  // 784 -> 64 -> 10 and SGD with momentum, a few epochs: the smallest model worth the name gets
  // far above chance, while the noise and the look-alike classes (squares and circles, filled
  // or not) keep it from 100%.
  data::ShapesSplit split = data::shapes_train_test(20000, 2000, 0);
  td::manual_seed(0);
  td::Tensor w1 = (td::randn({784, 64}) * (1.0 / 28)).requires_grad_();
  td::Tensor b1 = td::zeros({64}).requires_grad_();
  td::Tensor w2 = (td::randn({64, 10}) * 0.125).requires_grad_();
  td::Tensor b2 = td::zeros({10}).requires_grad_();
  std::vector<td::Tensor> params = {w1, b1, w2, b2}, velocity;
  for (const auto& p : params) velocity.push_back(td::zeros_like(p));
  auto forward = [&](const td::Tensor& x) { return td::relu(x.flatten(1).matmul(w1) + b1).matmul(w2) + b2; };
  data::DataLoader loader(split.train, data::DataLoaderOptions().batch_size(64).shuffle(true).seed(1).num_workers(1));
  for (int epoch = 0; epoch < 5; ++epoch) {
    for (data::Example& batch : loader) {
      td::Tensor loss = -forward(batch.data).log_softmax(1).gather(1, batch.target.unsqueeze(1)).mean();
      loss.backward();
      td::NoGradGuard no_grad;
      for (size_t i = 0; i < params.size(); ++i) {
        velocity[i].mul_(0.9).add_(params[i].grad());
        params[i].sub_(velocity[i], 0.02);
        params[i].mutable_grad() = td::Tensor();
      }
    }
  }
  td::NoGradGuard no_grad;
  auto accuracy = [&](const data::ShapesDataset& d) {
    return forward(d.data()).argmax(1).eq(d.targets()).to(td::kFloat64).mean().item<double>();
  };
  double train_accuracy = accuracy(*split.train), test_accuracy = accuracy(*split.test);
  INFO("train accuracy " << train_accuracy << ", test accuracy " << test_accuracy);
  CHECK(test_accuracy > 0.85);
  CHECK(test_accuracy < 0.99);
  WARN("shapes MLP: train accuracy " << train_accuracy << ", test accuracy " << test_accuracy);
}
