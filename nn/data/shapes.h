// Shapes: tandem's built-in dataset, generated rather than downloaded. 28x28 grayscale images of
// ten kinds of shape, each drawn at a random position, size, thickness, tilt and contrast with
// additive noise: learnable by a small MLP, though not perfectly. Entirely determined by a seed.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "nn/data/dataset.h"

namespace tandem::data {

class ShapesDataset : public TensorDataset {
 public:
  static constexpr int64_t kNumClasses = 10, kRows = 28, kCols = 28;
  // The classes in label order: "horizontal bar", "vertical bar", "diagonal \\", "diagonal /",
  // "square outline", "filled square", "circle outline", "filled disc", "plus", "x".
  static const std::array<std::string, kNumClasses>& class_names();

  // `size` examples: data() [size, 1, 28, 28] float32 in [0, 1], targets() [size] int64. Example i
  // depends only on (seed, i), so a dataset is a prefix of any larger one with the same seed;
  // each run of 10 consecutive examples holds each class once (in shuffled order), so the
  // classes are balanced. Generation runs on tandem's thread pool: the values do not depend on
  // the thread count.
  ShapesDataset(int64_t size, uint64_t seed);

  uint64_t seed() const { return seed_; }

 private:
  ShapesDataset(Example example, uint64_t seed);
  uint64_t seed_;
};

// A training set and a test set drawn from seeds derived from `seed` and different from each
// other: independent draws from the same distribution.
struct ShapesSplit {
  std::shared_ptr<ShapesDataset> train;
  std::shared_ptr<ShapesDataset> test;
};
ShapesSplit shapes_train_test(int64_t train_size = 60000, int64_t test_size = 10000, uint64_t seed = 0);

}  // namespace tandem::data
