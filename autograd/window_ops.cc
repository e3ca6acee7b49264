// The signal windows of torch (hann, hamming, blackman, bartlett, kaiser) and logspace: factories,
// computed in float64 and given the dtype asked for (float32 by default). A periodic window of N
// points is the first N of the symmetric window of N + 1.
#include <cmath>
#include <numbers>
#include <string>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/backend.h"
#include "kernels/factory.h"

namespace tandem {

namespace {

// The window's dtype and device, checked; op names the window.
TensorOptions window_options(int64_t length, TensorOptions options, const char* op) {
  TD_CHECK(length >= 0, op, " requires non-negative window_length, got window_length=", length);
  const DType dtype = options.dtype_or(kDefaultFloat);
  TD_CHECK(is_floating(dtype), op, " expects floating point dtypes, got: ", dtype);
  return options;
}

// 2 pi n / (M - 1) for n = 0 .. length - 1, M the symmetric window's length, in float64; nothing
// for a window of fewer than 2 points (those are all ones).
Tensor phases(int64_t length, bool periodic, Device device) {
  const int64_t m = periodic ? length + 1 : length;
  return arange(static_cast<double>(length), TensorOptions(kFloat64).device(device)) *
         (2 * std::numbers::pi / static_cast<double>(m - 1));
}

Tensor finish(const Tensor& values64, TensorOptions options) {
  return values64.to(options.dtype_or(kDefaultFloat)).to(options.device());
}

Tensor ones_window(int64_t length, TensorOptions options) {
  return ones({length}, TensorOptions(options.dtype_or(kDefaultFloat)).device(options.device()));
}

}  // namespace

Tensor hann_window(int64_t length, bool periodic, TensorOptions options) {
  return hamming_window(length, periodic, 0.5, 0.5, window_options(length, options, "hann_window"));
}

Tensor hamming_window(int64_t length, bool periodic, double alpha, double beta, TensorOptions options) {
  window_options(length, options, "hamming_window");
  if (length <= 1) return ones_window(length, options);
  NoGradGuard no_grad;
  return finish(alpha - beta * cos(phases(length, periodic, options.device())), options);
}

Tensor blackman_window(int64_t length, bool periodic, TensorOptions options) {
  window_options(length, options, "blackman_window");
  if (length <= 1) return ones_window(length, options);
  NoGradGuard no_grad;
  const Tensor phase = phases(length, periodic, options.device());
  return finish(0.42 - 0.5 * cos(phase) + 0.08 * cos(phase * 2), options);
}

Tensor bartlett_window(int64_t length, bool periodic, TensorOptions options) {
  window_options(length, options, "bartlett_window");
  if (length <= 1) return ones_window(length, options);
  NoGradGuard no_grad;
  // 1 - |2n / (M - 1) - 1|
  return finish(1 - abs(phases(length, periodic, options.device()) / std::numbers::pi - 1), options);
}

Tensor kaiser_window(int64_t length, bool periodic, double beta, TensorOptions options) {
  window_options(length, options, "kaiser_window");
  TD_CHECK(beta >= 0, "kaiser_window: beta must be non-negative, got ", beta);
  if (length <= 1) return ones_window(length, options);
  NoGradGuard no_grad;
  // I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)
  const Tensor centred = phases(length, periodic, options.device()) / std::numbers::pi - 1;
  const Tensor scale = full({}, beta, TensorOptions(kFloat64).device(options.device()));
  return finish(i0(sqrt(clamp(1 - centred * centred, 0.0)) * beta) / i0(scale), options);
}

Tensor logspace(double start, double end, int64_t steps, double base, TensorOptions options) {
  TD_CHECK(steps >= 0, "logspace: number of steps must be non-negative, got ", steps);
  NoGradGuard no_grad;
  const Tensor exponents = linspace(start, end, steps, TensorOptions(kFloat64).device(options.device()));
  return finish(pow(full({}, base, TensorOptions(kFloat64).device(options.device())), exponents), options);
}

}  // namespace tandem
