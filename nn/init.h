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
// Normal(mean, std) draws kept within [a, b]: the inverse CDF of uniform draws between the bounds' CDFs.
Tensor& trunc_normal_(Tensor& t, double mean = 0, double std = 1, double a = -2, double b = 2);
Tensor& eye_(Tensor& t);  // the identity, for a 2-D tensor
// Convolution weights [out, in, k...] (3-5 dims) that pass each of the first channels through: a 1 at
// the kernel's centre for channel i of output i, in each of `groups` groups.
Tensor& dirac_(Tensor& t, int64_t groups = 1);
// A (semi-)orthogonal matrix from a normal draw: the Q of its QR factorisation with R's diagonal
// positive, times gain; t flattened to [size(0), rest].
Tensor& orthogonal_(Tensor& t, double gain = 1);
// A sparse 2-D matrix [rows, cols]: normal(0, std) draws, then in each column ceil(sparsity * rows)
// entries, at rows drawn without replacement, set to zero (Martens' sparse initialisation).
Tensor& sparse_(Tensor& t, double sparsity, double std = 0.01);

}  // namespace tandem::nn::init
