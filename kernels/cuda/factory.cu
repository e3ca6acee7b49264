// CUDA kernels that create values: ranges and the Philox-based random fills, value for value those of
// kernels/cpu/factory.cc. One thread per Philox block reproduces the CPU's layout (element e takes block
// offset + e / per_block). The CPU build (GCC, -march=x86-64-v3, contraction on) fuses every a + b * c
// there into one FMA, so the same sums are written as explicit fma here: ranges and uniforms match bit for bit.
#include <cuda_runtime.h>

#include <numbers>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/philox.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/functors.h"
#include "kernels/sampling.h"

namespace tandem::kernels::cuda {

namespace {

// The CPU's for_each_block as a grid-stride loop: f(words, first_element, count) for each Philox block
// of a fill of n elements, per_block elements to a block.
template <typename F>
__device__ void for_each_block(int64_t n, int per_block, PhiloxState state, const F& f) {
  TD_GRID_STRIDE(b, (n + per_block - 1) / per_block) {
    const int64_t first = b * per_block;
    f(philox_block(state.seed, state.offset + static_cast<uint64_t>(b)), first, min(int64_t{per_block}, n - first));
  }
}

int64_t philox_blocks(int64_t numel, int per_block) { return (numel + per_block - 1) / per_block; }

template <typename T>
__global__ void arange_float_kernel(T* out, int64_t n, double start, double step) {
  TD_GRID_STRIDE(i, n) { out[i] = convert<T>(fma(static_cast<double>(i), step, start)); }
}

template <typename T>
__global__ void arange_int_kernel(T* out, int64_t n, int64_t start, int64_t step) {
  // Wrapping, as the CPU's, where signed arithmetic would overflow (undefined).
  TD_GRID_STRIDE(i, n) { out[i] = static_cast<T>(fn::sum(start, fn::product(i, step))); }
}

template <typename T>
__global__ void linspace_kernel(T* out, int64_t steps, double start, double end, double step) {
  TD_GRID_STRIDE(i, steps) {
    // Both ends exact: the first half counts up from start, the second down from end.
    const double v = (i < steps / 2 || steps == 1) ? fma(step, static_cast<double>(i), start)
                                                   : fma(-step, static_cast<double>(steps - 1 - i), end);
    out[i] = convert<T>(v);
  }
}

__global__ void uniform_double_kernel(double* out, int64_t n, double from, double span, PhiloxState state) {
  for_each_block(n, 2, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
    for (int64_t k = 0; k < count; ++k) out[first + k] = fma(span, uniform_double(w.w[2 * k], w.w[2 * k + 1]), from);
  });
}

template <typename T>
__global__ void uniform_float_kernel(T* out, int64_t n, float lo, float span, PhiloxState state) {
  for_each_block(n, 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
    for (int64_t k = 0; k < count; ++k) out[first + k] = static_cast<T>(fmaf(span, uniform_float(w.w[k]), lo));
  });
}

// Box-Muller: each pair of uniforms (u1 in (0, 1], u2 in [0, 1)) gives two normals. The device's
// log, sqrt and trigonometry may differ from the host's by an ulp; normals are compared with a tolerance.
__global__ void normal_double_kernel(double* out, int64_t n, double mean, double sd, PhiloxState state) {
  for_each_block(n, 2, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
    const double u1 = 1.0 - uniform_double(w.w[0], w.w[1]), u2 = uniform_double(w.w[2], w.w[3]);
    const double r = sqrt(-2.0 * log(u1)), theta = 2.0 * std::numbers::pi * u2;
    double s, c;
    sincos(theta, &s, &c);
    out[first] = fma(sd * r, c, mean);
    if (count > 1) out[first + 1] = fma(sd * r, s, mean);
  });
}

template <typename T>
__global__ void normal_float_kernel(T* out, int64_t n, float mean, float sd, PhiloxState state) {
  for_each_block(n, 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
    for (int64_t pair = 0; pair * 2 < count; ++pair) {
      const float u1 = 1.0f - uniform_float(w.w[2 * pair]), u2 = uniform_float(w.w[2 * pair + 1]);
      const float r = sqrtf(-2.0f * logf(u1)), theta = 2.0f * std::numbers::pi_v<float> * u2;
      float s, c;
      sincosf(theta, &s, &c);
      out[first + 2 * pair] = static_cast<T>(fmaf(sd * r, c, mean));
      if (2 * pair + 1 < count) out[first + 2 * pair + 1] = static_cast<T>(fmaf(sd * r, s, mean));
    }
  });
}

template <typename T>
__global__ void randint_kernel(T* out, int64_t n, int64_t low, uint64_t range, PhiloxState state) {
  for_each_block(n, 2, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
    for (int64_t k = 0; k < count; ++k) {
      const uint64_t bits = static_cast<uint64_t>(w.w[2 * k + 1]) << 32 | w.w[2 * k];
      out[first + k] = convert<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + bits % range));
    }
  });
}

template <typename T>
__global__ void bernoulli_kernel(T* out, int64_t n, const double* prob, PhiloxState state) {
  for_each_block(n, 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
    for (int64_t k = 0; k < count; ++k) {
      out[first + k] = convert<T>(static_cast<double>(uniform_float(w.w[k])) < prob[first + k]);
    }
  });
}

template <typename T>
__global__ void poisson_kernel(T* out, int64_t n, const double* rate, PhiloxState state) {
  TD_GRID_STRIDE(i, n) {
    fn::ElementStream stream(state.seed, state.offset + static_cast<uint64_t>(i));
    out[i] = convert<T>(fn::sample_poisson(rate[i], stream));
  }
}

template <typename T>
__global__ void binomial_kernel(T* out, int64_t n, const double* count, const double* prob, PhiloxState state) {
  TD_GRID_STRIDE(i, n) {
    fn::ElementStream stream(state.seed, state.offset + static_cast<uint64_t>(i));
    out[i] = convert<T>(fn::sample_binomial(count[i], prob[i], stream));
  }
}

template <typename T>
__global__ void standard_gamma_kernel(T* out, int64_t n, const double* alpha, double least, PhiloxState state) {
  TD_GRID_STRIDE(i, n) {
    fn::ElementStream stream(state.seed, state.offset + static_cast<uint64_t>(i));
    const double x = fn::sample_gamma(alpha[i], stream);
    out[i] = convert<T>(x < least ? least : x);  // NaN stays NaN
  }
}

template <typename T>
__global__ void dropout_kernel(T* out, bool* keep, const T* x, int64_t n, double keep_prob, fn::KeepScale<T, opmath_t<T>> f,
                               PhiloxState state) {
  for_each_block(n, 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
    for (int64_t k = 0; k < count; ++k) {
      const bool kept = static_cast<double>(uniform_float(w.w[k])) < keep_prob;
      keep[first + k] = kept;
      out[first + k] = f(x[first + k], kept);
    }
  });
}

}  // namespace

void arange(const Tensor& out, Scalar start, Scalar step) {
  dispatch_numeric(out.dtype(), "arange", [&]<typename T>() {
    if constexpr (is_floating_type_v<T>) {
      launch("arange", out.device(), out.numel(), arange_float_kernel<T>, out.data_ptr<T>(), out.numel(),
             start.to_double(), step.to_double());
    } else {
      launch("arange", out.device(), out.numel(), arange_int_kernel<T>, out.data_ptr<T>(), out.numel(),
             start.to_int(), step.to_int());
    }
  });
}

void linspace(const Tensor& out, double start, double end) {
  const int64_t steps = out.numel();
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  dispatch_numeric(out.dtype(), "linspace", [&]<typename T>() {
    launch("linspace", out.device(), steps, linspace_kernel<T>, out.data_ptr<T>(), steps, start, end, step);
  });
}

void uniform(const Tensor& out, double from, double to, PhiloxState state) {
  const int64_t n = out.numel();
  dispatch_floating(out.dtype(), "uniform", [&]<typename T>() {
    if constexpr (std::is_same_v<T, double>) {
      launch("uniform", out.device(), philox_blocks(n, 2), uniform_double_kernel, out.data_ptr<double>(), n, from,
             to - from, state);
    } else {
      launch("uniform", out.device(), philox_blocks(n, 4), uniform_float_kernel<T>, out.data_ptr<T>(), n,
             static_cast<float>(from), static_cast<float>(to - from), state);
    }
  });
}

void normal(const Tensor& out, double mean, double std, PhiloxState state) {
  const int64_t n = out.numel();
  dispatch_floating(out.dtype(), "normal", [&]<typename T>() {
    if constexpr (std::is_same_v<T, double>) {
      launch("normal", out.device(), philox_blocks(n, 2), normal_double_kernel, out.data_ptr<double>(), n, mean, std,
             state);
    } else {
      launch("normal", out.device(), philox_blocks(n, 4), normal_float_kernel<T>, out.data_ptr<T>(), n,
             static_cast<float>(mean), static_cast<float>(std), state);
    }
  });
}

void randint(const Tensor& out, int64_t low, int64_t high, PhiloxState state) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const int64_t n = out.numel();
  dispatch_all(out.dtype(), "randint", [&]<typename T>() {
    launch("randint", out.device(), philox_blocks(n, 2), randint_kernel<T>, out.data_ptr<T>(), n, low, range, state);
  });
}

// p: float64, contiguous, one probability per element of out, on out's device (kernels/factory.cc).
void bernoulli(const Tensor& out, const Tensor& p, PhiloxState state) {
  const int64_t n = out.numel();
  // The kernel reads p in place: a host tensor here would be an illegal address on the device.
  TD_CHECK(p.device() == out.device() && p.is_contiguous() && p.numel() == n, "bernoulli: expected p contiguous on ",
           out.device(), " with ", n, " elements, got ", p.numel(), " on ", p.device());
  const double* prob = p.data_ptr<double>();
  dispatch_all(out.dtype(), "bernoulli", [&]<typename T>() {
    launch("bernoulli", out.device(), philox_blocks(n, 4), bernoulli_kernel<T>, out.data_ptr<T>(), n, prob, state);
  });
}

// The parameters: float64, contiguous, one per element of out, on out's device (kernels/factory.cc).
void poisson(const Tensor& out, const Tensor& rates, PhiloxState state) {
  const int64_t n = out.numel();
  TD_CHECK(rates.device() == out.device() && rates.is_contiguous() && rates.numel() == n,
           "poisson: expected the rates contiguous on ", out.device(), " with ", n, " elements");
  dispatch_floating(out.dtype(), "poisson", [&]<typename T>() {
    launch("poisson", out.device(), n, poisson_kernel<T>, out.data_ptr<T>(), n, rates.data_ptr<double>(), state);
  });
}

void binomial(const Tensor& out, const Tensor& count, const Tensor& prob, PhiloxState state) {
  const int64_t n = out.numel();
  TD_CHECK(count.device() == out.device() && prob.device() == out.device() && count.is_contiguous() &&
               prob.is_contiguous() && count.numel() == n && prob.numel() == n,
           "binomial: expected count and prob contiguous on ", out.device(), " with ", n, " elements");
  dispatch_floating(out.dtype(), "binomial", [&]<typename T>() {
    launch("binomial", out.device(), n, binomial_kernel<T>, out.data_ptr<T>(), n, count.data_ptr<double>(),
           prob.data_ptr<double>(), state);
  });
}

void standard_gamma(const Tensor& out, const Tensor& alpha, double least, PhiloxState state) {
  const int64_t n = out.numel();
  TD_CHECK(alpha.device() == out.device() && alpha.is_contiguous() && alpha.numel() == n,
           "standard_gamma: expected the concentrations contiguous on ", out.device(), " with ", n, " elements");
  dispatch_floating(out.dtype(), "standard_gamma", [&]<typename T>() {
    launch("standard_gamma", out.device(), n, standard_gamma_kernel<T>, out.data_ptr<T>(), n,
           alpha.data_ptr<double>(), least, state);
  });
}

// x, out and mask contiguous on one device (kernels/nn_ops.cc).
void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double keep_prob, double scale,
             PhiloxState state) {
  const int64_t n = x.numel();
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
    using M = opmath_t<T>;
    launch("dropout", x.device(), philox_blocks(n, 4), dropout_kernel<T>, out.data_ptr<T>(), mask.data_ptr<bool>(),
           x.data_ptr<T>(), n, keep_prob, fn::KeepScale<T, M>{static_cast<M>(scale)}, state);
  });
}

}  // namespace tandem::kernels::cuda
