#include "nn/init.h"

#include <cmath>
#include <numbers>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
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

Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b) {
  TD_CHECK(std > 0 && a < b, "trunc_normal_: expected std > 0 and a < b, got std ", std, ", a ", a, ", b ", b);
  const auto cdf = [](double x) { return (1 + std::erf(x / std::numbers::sqrt2)) / 2; };
  const double low = cdf((a - mean) / std), high = cdf((b - mean) / std);
  NoGradGuard no_grad;
  tandem::uniform_(t, 2 * low - 1, 2 * high - 1);
  t.erfinv_();
  t.mul_(std * std::numbers::sqrt2);
  t.add_(mean);
  return t.clamp_(a, b);
}

Tensor& eye_(Tensor& t) {
  TD_CHECK(t.dim() == 2, "eye_: expected a 2-D tensor, got shape ", shape_str(t.sizes()));
  NoGradGuard no_grad;
  t.zero_();
  t.diagonal().fill_(1);
  return t;
}

Tensor& dirac_(Tensor& t, int64_t groups) {
  TD_CHECK(t.dim() >= 3 && t.dim() <= 5, "dirac_: expected a tensor of 3 to 5 dims, got shape ", shape_str(t.sizes()));
  TD_CHECK(groups > 0 && t.size(0) % groups == 0, "dirac_: dim 0 (", t.size(0), ") must divide into ", groups,
           " groups");
  NoGradGuard no_grad;
  t.zero_();
  const int64_t per_group = t.size(0) / groups, channels = std::min(per_group, t.size(1));
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t c = 0; c < channels; ++c) {
      Tensor centre = t.select(0, g * per_group + c).select(0, c);
      while (centre.dim() > 0) centre = centre.select(0, centre.size(0) / 2);
      centre.fill_(1);
    }
  }
  return t;
}

Tensor& orthogonal_(Tensor& t, double gain) {
  TD_CHECK(t.dim() >= 2, "orthogonal_: expected a tensor of at least 2 dims, got shape ", shape_str(t.sizes()));
  if (t.numel() == 0) return t;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  NoGradGuard no_grad;
  Tensor drawn = empty({rows, cols}, TensorOptions(kFloat64).device(t.device()));
  tandem::normal_(drawn, 0, 1);
  // Gram-Schmidt (modified, in float64) on the columns of the tall orientation: its Q is the QR
  // factorisation's with R's diagonal positive, as PyTorch fixes the signs.
  const bool wide = rows < cols;
  const Tensor m = (wide ? drawn.t() : drawn).contiguous().cpu();
  const int64_t n = m.size(0), k = m.size(1);
  std::vector<double> q(m.data_ptr<double>(), m.data_ptr<double>() + n * k);
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t i = 0; i < j; ++i) {
      double dot = 0;
      for (int64_t r = 0; r < n; ++r) dot += q[r * k + i] * q[r * k + j];
      for (int64_t r = 0; r < n; ++r) q[r * k + j] -= dot * q[r * k + i];
    }
    double norm = 0;
    for (int64_t r = 0; r < n; ++r) norm += q[r * k + j] * q[r * k + j];
    norm = std::sqrt(norm);
    for (int64_t r = 0; r < n; ++r) q[r * k + j] /= norm;
  }
  Tensor result = tensor(q, TensorOptions(kFloat64)).view({n, k});
  if (wide) result = result.t();
  t.copy_((result * gain).reshape(t.sizes()));
  return t;
}

Tensor& sparse_(Tensor& t, double sparsity, double std) {
  TD_CHECK(t.dim() == 2, "sparse_: expected a 2-D tensor, got shape ", shape_str(t.sizes()));
  TD_CHECK(sparsity >= 0 && sparsity <= 1, "sparse_: sparsity must be in [0, 1], got ", sparsity);
  TD_CHECK(std >= 0, "sparse_: std must not be negative, got ", std);
  const int64_t rows = t.size(0), cols = t.size(1);
  const auto zeroed = static_cast<int64_t>(std::ceil(sparsity * static_cast<double>(rows)));
  NoGradGuard no_grad;
  tandem::normal_(t, 0, std);
  for (int64_t c = 0; c < cols && zeroed > 0; ++c) {
    const Tensor at = randperm(rows, TensorOptions(kInt64).device(t.device())).narrow(0, 0, zeroed);
    t.select(1, c).index_fill_(0, at, 0);
  }
  return t;
}

}  // namespace tandem::nn::init
