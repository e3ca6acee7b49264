// CPU kernels that create values: ranges and the Philox-based random fills. Sums of a product
// are written as explicit fma, as in the CUDA kernels, so both backends give the same bits
// whatever the compiler would contract on its own.
// A random element's value depends only on the seed, the offset and its index: element e takes
// its words from block offset + e / per_block, so threads can split the blocks any way.
#include <cmath>
#include <numbers>

#include "core/convert.h"
#include "core/dispatch.h"
#include "core/philox.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/functors.h"
#include "kernels/sampling.h"

namespace tandem::kernels::cpu {

namespace {

constexpr int64_t kBlockGrain = 4096;

// Calls f(block_words, first_element, count) for each Philox block of the fill, where the block
// serves `per_block` consecutive elements.
template <typename F>
void for_each_block(int64_t numel, int per_block, PhiloxState state, const F& f) {
  int64_t blocks = (numel + per_block - 1) / per_block;
  parallel_for(0, blocks, kBlockGrain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      PhiloxBlock words = philox_block(state.seed, state.offset + static_cast<uint64_t>(b));
      int64_t first = b * per_block;
      f(words, first, std::min<int64_t>(per_block, numel - first));
    }
  });
}

}  // namespace

void arange(const Tensor& out, Scalar start, Scalar step) {
  dispatch_numeric(out.dtype(), "arange", [&]<typename T>() {
    T* data = out.data_ptr<T>();
    parallel_for(0, out.numel(), 1 << 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if constexpr (is_floating_type_v<T>) {
          data[i] = convert<T>(std::fma(static_cast<double>(i), step.to_double(), start.to_double()));
        } else {
          data[i] = static_cast<T>(fn::sum(start.to_int(), fn::product(i, step.to_int())));
        }
      }
    });
  });
}

void linspace(const Tensor& out, double start, double end) {
  const int64_t steps = out.numel();
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  dispatch_numeric(out.dtype(), "linspace", [&]<typename T>() {
    T* data = out.data_ptr<T>();
    // Both ends exact: the first half counts up from start, the second down from end.
    for (int64_t i = 0; i < steps; ++i) {
      double v = (i < steps / 2 || steps == 1) ? std::fma(step, static_cast<double>(i), start)
                                               : std::fma(-step, static_cast<double>(steps - 1 - i), end);
      data[i] = convert<T>(v);
    }
  });
}

void uniform(const Tensor& out, double from, double to, PhiloxState state) {
  dispatch_floating(out.dtype(), "uniform", [&]<typename T>() {
    T* data = out.data_ptr<T>();
    if constexpr (std::is_same_v<T, double>) {
      for_each_block(out.numel(), 2, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
        for (int64_t k = 0; k < count; ++k) data[first + k] = std::fma(to - from, uniform_double(w.w[2 * k], w.w[2 * k + 1]), from);
      });
    } else {
      const float lo = static_cast<float>(from), span = static_cast<float>(to - from);
      for_each_block(out.numel(), 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
        for (int64_t k = 0; k < count; ++k) data[first + k] = static_cast<T>(std::fma(span, uniform_float(w.w[k]), lo));
      });
    }
  });
}

void normal(const Tensor& out, double mean, double std, PhiloxState state) {
  // Box-Muller: each pair of uniforms (u1 in (0, 1], u2 in [0, 1)) gives two normals.
  dispatch_floating(out.dtype(), "normal", [&]<typename T>() {
    T* data = out.data_ptr<T>();
    if constexpr (std::is_same_v<T, double>) {
      for_each_block(out.numel(), 2, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
        double u1 = 1.0 - uniform_double(w.w[0], w.w[1]), u2 = uniform_double(w.w[2], w.w[3]);
        double r = std::sqrt(-2.0 * std::log(u1)), theta = 2.0 * std::numbers::pi * u2;
        data[first] = std::fma(std * r, std::cos(theta), mean);
        if (count > 1) data[first + 1] = std::fma(std * r, std::sin(theta), mean);
      });
    } else {
      const float m = static_cast<float>(mean), sd = static_cast<float>(std);
      for_each_block(out.numel(), 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
        for (int64_t pair = 0; pair * 2 < count; ++pair) {
          float u1 = 1.0f - uniform_float(w.w[2 * pair]), u2 = uniform_float(w.w[2 * pair + 1]);
          float r = std::sqrt(-2.0f * std::log(u1)), theta = 2.0f * std::numbers::pi_v<float> * u2;
          data[first + 2 * pair] = static_cast<T>(std::fma(sd * r, std::cos(theta), m));
          if (2 * pair + 1 < count) data[first + 2 * pair + 1] = static_cast<T>(std::fma(sd * r, std::sin(theta), m));
        }
      });
    }
  });
}

void randint(const Tensor& out, int64_t low, int64_t high, PhiloxState state) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  dispatch_all(out.dtype(), "randint", [&]<typename T>() {
    T* data = out.data_ptr<T>();
    for_each_block(out.numel(), 2, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
      for (int64_t k = 0; k < count; ++k) {
        uint64_t bits = static_cast<uint64_t>(w.w[2 * k + 1]) << 32 | w.w[2 * k];
        data[first + k] = convert<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + bits % range));
      }
    });
  });
}

void bernoulli(const Tensor& out, const Tensor& p, PhiloxState state) {
  const double* prob = p.data_ptr<double>();
  dispatch_all(out.dtype(), "bernoulli", [&]<typename T>() {
    T* data = out.data_ptr<T>();
    for_each_block(out.numel(), 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
      for (int64_t k = 0; k < count; ++k) {
        data[first + k] = convert<T>(static_cast<double>(uniform_float(w.w[k])) < prob[first + k]);
      }
    });
  });
}

namespace {

// out[i] = draw(i, element i's stream), in parallel: a variate takes a varying number of draws.
template <typename Draw>
void sample_each(const Tensor& out, const char* op, PhiloxState state, const Draw& draw) {
  dispatch_floating(out.dtype(), op, [&]<typename T>() {
    T* data = out.data_ptr<T>();
    parallel_for(0, out.numel(), 1 << 12, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        fn::ElementStream stream(state.seed, state.offset + static_cast<uint64_t>(i));
        data[i] = convert<T>(draw(i, stream));
      }
    });
  });
}

}  // namespace

void poisson(const Tensor& out, const Tensor& rates, PhiloxState state) {
  const double* rate = rates.data_ptr<double>();
  sample_each(out, "poisson", state, [&](int64_t i, fn::ElementStream& s) { return fn::sample_poisson(rate[i], s); });
}

void binomial(const Tensor& out, const Tensor& count, const Tensor& prob, PhiloxState state) {
  const double *n = count.data_ptr<double>(), *p = prob.data_ptr<double>();
  sample_each(out, "binomial", state,
              [&](int64_t i, fn::ElementStream& s) { return fn::sample_binomial(n[i], p[i], s); });
}

void standard_gamma(const Tensor& out, const Tensor& alpha, double least, PhiloxState state) {
  const double* a = alpha.data_ptr<double>();
  sample_each(out, "standard_gamma", state, [&](int64_t i, fn::ElementStream& s) {
    const double x = fn::sample_gamma(a[i], s);
    return x < least ? least : x;  // NaN stays NaN
  });
}

void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double keep_prob, double scale,
             PhiloxState state) {
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
    using M = opmath_t<T>;
    const fn::KeepScale<T, M> keep_scale{static_cast<M>(scale)};
    const T* in = x.data_ptr<T>();
    T* res = out.data_ptr<T>();
    bool* keep = mask.data_ptr<bool>();
    for_each_block(x.numel(), 4, state, [&](const PhiloxBlock& w, int64_t first, int64_t count) {
      for (int64_t k = 0; k < count; ++k) {
        const bool kept = static_cast<double>(uniform_float(w.w[k])) < keep_prob;
        keep[first + k] = kept;
        res[first + k] = keep_scale(in[first + k], kept);
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
