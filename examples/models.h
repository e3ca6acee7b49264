// The two models `tandem train` trains, written as a LibTorch user would: an MLP and a small
// CNN for [C, H, W] images and `classes` classes.
#pragma once

#include "tandem.h"

namespace tandem::examples {

// Flatten, then Linear(C*H*W, 256), ReLU, Linear(256, 256), ReLU, Linear(256, classes); with
// dropout > 0, Dropout(dropout) after each ReLU.
class MlpImpl : public nn::Cloneable<MlpImpl> {
 public:
  MlpImpl(int64_t in_features, int64_t classes, int64_t hidden = 256, double dropout = 0);
  void reset() override;
  Tensor forward(const Tensor& x) override;
  int64_t in_features, classes, hidden;
  double dropout;
  nn::Sequential layers{nullptr};
};
class Mlp : public nn::ModuleHolder<MlpImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// Conv(C, 16, 5, pad 2), ReLU, MaxPool 2; Conv(16, 32, 5, pad 2), ReLU, MaxPool 2;
// Flatten, Linear(32 * H/4 * W/4, 128), ReLU, Linear(128, classes); with dropout > 0,
// Dropout(dropout) before the last Linear.
class CnnImpl : public nn::Cloneable<CnnImpl> {
 public:
  CnnImpl(int64_t channels, int64_t height, int64_t width, int64_t classes, double dropout = 0);
  void reset() override;
  Tensor forward(const Tensor& x) override;
  int64_t channels, height, width, classes;
  double dropout;
  nn::Sequential features{nullptr}, head{nullptr};
};
class Cnn : public nn::ModuleHolder<CnnImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

}  // namespace tandem::examples
