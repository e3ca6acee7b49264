// td::nn::init: filling parameters in place with PyTorch's initializations (under no-grad).
#pragma once

#include <string>

#include "core/tensor.h"

namespace tandem::nn::init {

enum class FanMode { FanIn, FanOut };

// The recommended gain for a nonlinearity: "linear", "conv2d", "sigmoid" 1; "tanh" 5/3;
// "relu" sqrt(2); "leaky_relu" sqrt(2 / (1 + param^2)); "selu" 3/4.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// fan_in and fan_out of a weight [out, in, *receptive field].
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor& uniform_(Tensor& t, double a = 0, double b = 1);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1);
Tensor& constant_(Tensor& t, Scalar value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
Tensor& kaiming_uniform_(Tensor& t, double a = 0, FanMode mode = FanMode::FanIn,
                         const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& t, double a = 0, FanMode mode = FanMode::FanIn,
                        const std::string& nonlinearity = "leaky_relu");
Tensor& xavier_uniform_(Tensor& t, double gain = 1);
Tensor& xavier_normal_(Tensor& t, double gain = 1);

}  // namespace tandem::nn::init
