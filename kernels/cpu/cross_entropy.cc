// CPU cross-entropy over the rows of contiguous class scores [rows, C] with index targets: the
// forward reads each row twice (max, then the sum of exp), keeping only its log-sum-exp; the
// backward rebuilds the softmax from it and writes the gradient in one pass, without the
// [rows, C] log-probabilities, one-hot targets and products the op-by-op form allocates.
#include <cmath>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/rows.h"
#include "kernels/functors.h"

namespace tandem::kernels::cpu {

namespace {

// The weight of class c, 1 without weights.
template <typename T, typename M>
M class_weight(const T* w, int64_t c) {
  return w ? static_cast<M>(w[c]) : M(1);
}

// Every class's gradient as if it were not the target: s * (mass * exp(x - lse) - spread * w). A
// function of its own, branch-free, so that GCC vectorizes it (inside the dispatch lambdas it did not).
template <typename T, typename M>
void gradient_row(T* g, const T* in, const T* w, int64_t n, M s, M mass, M lse, M spread) {
  const fn::Exp exp_fn;
  if (w) {
    for (int64_t c = 0; c < n; ++c) {
      g[c] = static_cast<T>(s * (mass * exp_fn(static_cast<M>(in[c]) - lse) - spread * static_cast<M>(w[c])));
    }
  } else {
    for (int64_t c = 0; c < n; ++c) g[c] = static_cast<T>(s * (mass * exp_fn(static_cast<M>(in[c]) - lse) - spread));
  }
}

}  // namespace

void cross_entropy(const Tensor& losses, const Tensor& target_weights, const Tensor& lse, const Tensor& x,
                   const Tensor& target, const Tensor& weight, const Tensor& weight_sum, int64_t ignore_index,
                   double smoothing) {
  const int64_t rows = target.numel();
  if (rows == 0) return;
  const int64_t classes = x.numel() / rows;
  dispatch_floating(x.dtype(), "cross_entropy", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* scores = x.data_ptr<T>();
    const int64_t* t = target.data_ptr<int64_t>();
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    const M total_weight = *weight_sum.data_ptr<M>();
    const M keep = static_cast<M>(1 - smoothing), spread = static_cast<M>(smoothing / static_cast<double>(classes));
    T* loss = losses.data_ptr<T>();
    T* tw = target_weights.data_ptr<T>();
    M* row_lse = lse.data_ptr<M>();
    const fn::Exp exp_fn;
    parallel_for(0, rows, std::max<int64_t>(1, 16384 / classes), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = scores + r * classes;
        const M max = row_max<M>(classes, [&](int64_t c) { return static_cast<M>(in[c]); });
        const double sum = row_sum(classes, [&](int64_t c) { return exp_fn(static_cast<M>(in[c]) - max); });
        const double weighted =
            smoothing == 0 ? 0
            : w            ? row_sum(classes, [&](int64_t c) { return static_cast<M>(w[c]) * static_cast<M>(in[c]); })
                           : row_sum(classes, [&](int64_t c) { return static_cast<M>(in[c]); });
        const M l = max + static_cast<M>(std::log(sum));
        row_lse[r] = l;
        if (t[r] == ignore_index) {
          loss[r] = T(0);
          tw[r] = T(0);
          continue;
        }
        const M wt = class_weight<T, M>(w, t[r]);
        M value = keep * wt * (l - static_cast<M>(in[t[r]]));
        if (smoothing > 0) value = value + spread * (total_weight * l - static_cast<M>(weighted));
        loss[r] = static_cast<T>(value);
        tw[r] = static_cast<T>(wt);
      }
    });
  });
}

void cross_entropy_backward(const Tensor& grad_x, const Tensor& row_scale, const Tensor& x, const Tensor& lse,
                            const Tensor& target, const Tensor& weight, const Tensor& weight_sum,
                            int64_t ignore_index, double smoothing) {
  const int64_t rows = target.numel();
  if (rows == 0) return;
  const int64_t classes = x.numel() / rows;
  dispatch_floating(x.dtype(), "cross_entropy_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const T* scores = x.data_ptr<T>();
    const int64_t* t = target.data_ptr<int64_t>();
    const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
    const M total_weight = *weight_sum.data_ptr<M>();
    const M keep = static_cast<M>(1 - smoothing), spread = static_cast<M>(smoothing / static_cast<double>(classes));
    const M* scale = row_scale.data_ptr<M>();
    const M* row_lse = lse.data_ptr<M>();
    T* out = grad_x.data_ptr<T>();
    const fn::Exp exp_fn;
    parallel_for(0, rows, std::max<int64_t>(1, 16384 / classes), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = scores + r * classes;
        T* g = out + r * classes;
        if (t[r] == ignore_index) {
          for (int64_t c = 0; c < classes; ++c) g[c] = T(0);
          continue;
        }
        const M s = scale[r], l = row_lse[r];
        const M hit = keep * class_weight<T, M>(w, t[r]);  // the target's share of the probability mass
        const M mass = hit + spread * total_weight;
        gradient_row(g, in, w, classes, s, mass, l, spread);
        const int64_t c = t[r];
        g[c] = static_cast<T>(s * (mass * exp_fn(static_cast<M>(in[c]) - l) - spread * class_weight<T, M>(w, c) - hit));
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
