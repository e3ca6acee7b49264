#include "examples/models.h"

namespace tandem::examples {

MlpImpl::MlpImpl(int64_t in_features_, int64_t classes_, int64_t hidden_)
    : Cloneable("Mlp"), in_features(in_features_), classes(classes_), hidden(hidden_) {
  reset();
}

void MlpImpl::reset() {
  layers = register_module("layers", nn::Sequential(nn::Flatten(), nn::Linear(in_features, hidden), nn::ReLU(),
                                                    nn::Linear(hidden, hidden), nn::ReLU(),
                                                    nn::Linear(hidden, classes)));
}

Tensor MlpImpl::forward(const Tensor& x) { return layers(x); }

CnnImpl::CnnImpl(int64_t channels_, int64_t height_, int64_t width_, int64_t classes_)
    : Cloneable("Cnn"), channels(channels_), height(height_), width(width_), classes(classes_) {
  reset();
}

void CnnImpl::reset() {
  features = register_module(
      "features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(channels, 16, 5).padding(2)), nn::ReLU(),
                                 nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(16, 32, 5).padding(2)), nn::ReLU(),
                                 nn::MaxPool2d(2)));
  head = register_module("head", nn::Sequential(nn::Flatten(), nn::Linear(32 * (height / 4) * (width / 4), 128),
                                                nn::ReLU(), nn::Linear(128, classes)));
}

Tensor CnnImpl::forward(const Tensor& x) { return head(features(x)); }

}  // namespace tandem::examples
