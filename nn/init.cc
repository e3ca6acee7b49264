#include "nn/init.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "kernels/factory.h"

namespace tandem::nn::init {

double calculate_gain(const std::string& nonlinearity, double param) {
  for (const char* identity : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                               "conv_transpose3d", "sigmoid"}) {
    if (nonlinearity == identity) return 1;
  }
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4;
  TD_FAIL("calculate_gain: unknown nonlinearity '", nonlinearity, "'");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  TD_CHECK(t.dim() >= 2, "init: fan in and fan out need a tensor of at least 2 dims, got shape ", shape_str(t.sizes()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

namespace {

int64_t fan(const Tensor& t, FanMode mode) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return mode == FanMode::FanIn ? in : out;
}

}  // namespace

Tensor& uniform_(Tensor& t, double a, double b) {
  NoGradGuard no_grad;
  return tandem::uniform_(t, a, b);
}

Tensor& normal_(Tensor& t, double mean, double std) {
  NoGradGuard no_grad;
  return tandem::normal_(t, mean, std);
}

Tensor& constant_(Tensor& t, Scalar value) {
  NoGradGuard no_grad;
  return t.fill_(value);
}

Tensor& zeros_(Tensor& t) { return constant_(t, 0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1); }

Tensor& kaiming_uniform_(Tensor& t, double a, FanMode mode, const std::string& nonlinearity) {
  double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode)));
  return init::uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a, FanMode mode, const std::string& nonlinearity) {
  return init::normal_(t, 0, calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode))));
}

Tensor& xavier_uniform_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return init::uniform_(t, -bound, bound);
}

Tensor& xavier_normal_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return init::normal_(t, 0, gain * std::sqrt(2.0 / static_cast<double>(in + out)));
}

}  // namespace tandem::nn::init
