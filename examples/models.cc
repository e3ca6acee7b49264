#include "examples/models.h"

namespace tandem::examples {

MlpImpl::MlpImpl(int64_t in_features_, int64_t classes_, int64_t hidden_, double dropout_)
    : Cloneable("Mlp"), in_features(in_features_), classes(classes_), hidden(hidden_), dropout(dropout_) {
  reset();
}

void MlpImpl::reset() {
  // Without dropout the layers (and so the state_dict's keys) are those of the model before it.
  nn::Sequential s(nn::Flatten(), nn::Linear(in_features, hidden), nn::ReLU());
  if (dropout > 0) s->push_back(nn::Dropout(dropout));
  s->push_back(nn::Linear(hidden, hidden));
  s->push_back(nn::ReLU());
  if (dropout > 0) s->push_back(nn::Dropout(dropout));
  s->push_back(nn::Linear(hidden, classes));
  layers = register_module("layers", s);
}

Tensor MlpImpl::forward(const Tensor& x) { return layers(x); }

CnnImpl::CnnImpl(int64_t channels_, int64_t height_, int64_t width_, int64_t classes_, double dropout_)
    : Cloneable("Cnn"), channels(channels_), height(height_), width(width_), classes(classes_), dropout(dropout_) {
  reset();
}

void CnnImpl::reset() {
  features = register_module(
      "features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(channels, 16, 5).padding(2)), nn::ReLU(),
                                 nn::MaxPool2d(2), nn::Conv2d(nn::Conv2dOptions(16, 32, 5).padding(2)), nn::ReLU(),
                                 nn::MaxPool2d(2)));
  nn::Sequential h(nn::Flatten(), nn::Linear(32 * (height / 4) * (width / 4), 128), nn::ReLU());
  if (dropout > 0) h->push_back(nn::Dropout(dropout));
  h->push_back(nn::Linear(128, classes));
  head = register_module("head", h);
}

Tensor CnnImpl::forward(const Tensor& x) { return head(features(x)); }

}  // namespace tandem::examples
