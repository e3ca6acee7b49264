// CPU cross-entropy over the rows of contiguous class scores [rows, C] with index targets: the
// forward reads each row twice (max, then the sum of exp), keeping only its log-sum-exp; the
// backward rebuilds the softmax from it and writes the gradient in one pass, without the
// [rows, C] log-probabilities, one-hot targets and products the op-by-op form allocates.
#include <algorithm>
#include <cmath>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/rows.h"
#include "kernels/functors.h"

namespace tandem::kernels::cpu {

namespace {

// What the forward and the backward read: the operands and the formula's constants.
template <typename T>
struct Problem {
  using M = opmath_t<T>;
  const T* scores;
  const int64_t* target;
  const T* weight;  // null: every class weighs 1
  int64_t rows, classes;
  M total_weight, keep, spread;  // sum of the weights, 1 - s, s / C

  Problem(const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& weight_sum, double smoothing)
      : scores(x.data_ptr<T>()),
        target(t.data_ptr<int64_t>()),
        weight(w.defined() ? w.data_ptr<T>() : nullptr),
        rows(t.numel()),
        classes(x.numel() / rows),  // rows > 0: the kernels return before making a Problem otherwise
        total_weight(*weight_sum.data_ptr<M>()),
        keep(static_cast<M>(1 - smoothing)),
        spread(static_cast<M>(smoothing / static_cast<double>(classes))) {}

  M class_weight(int64_t c) const { return weight ? static_cast<M>(weight[c]) : M(1); }
  int64_t grain() const { return std::max<int64_t>(1, 16384 / classes); }
};

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
  if (target.numel() == 0) return;
  dispatch_floating(x.dtype(), "cross_entropy", [&]<typename T>() {
    using M = opmath_t<T>;
    const Problem<T> p(x, target, weight, weight_sum, smoothing);
    T* loss = losses.data_ptr<T>();
    T* tw = target_weights.data_ptr<T>();
    M* row_lse = lse.data_ptr<M>();
    const fn::Exp exp_fn;
    parallel_for(0, p.rows, p.grain(), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = p.scores + r * p.classes;
        const M max = row_max<M>(p.classes, [&](int64_t c) { return static_cast<M>(in[c]); });
        const double sum = row_sum(p.classes, [&](int64_t c) { return exp_fn(static_cast<M>(in[c]) - max); });
        const double weighted =
            smoothing == 0 ? 0
            : p.weight ? row_sum(p.classes, [&](int64_t c) { return static_cast<M>(p.weight[c]) * static_cast<M>(in[c]); })
                       : row_sum(p.classes, [&](int64_t c) { return static_cast<M>(in[c]); });
        const M l = max + static_cast<M>(std::log(sum));
        row_lse[r] = l;
        const int64_t t = p.target[r];
        if (t == ignore_index) {
          loss[r] = T(0);
          tw[r] = T(0);
          continue;
        }
        const M wt = p.class_weight(t);
        M value = p.keep * wt * (l - static_cast<M>(in[t]));
        if (smoothing > 0) value = value + p.spread * (p.total_weight * l - static_cast<M>(weighted));
        loss[r] = static_cast<T>(value);
        tw[r] = static_cast<T>(wt);
      }
    });
  });
}

void cross_entropy_backward(const Tensor& grad_x, const Tensor& row_scale, const Tensor& x, const Tensor& lse,
                            const Tensor& target, const Tensor& weight, const Tensor& weight_sum,
                            int64_t ignore_index, double smoothing) {
  if (target.numel() == 0) return;
  dispatch_floating(x.dtype(), "cross_entropy_backward", [&]<typename T>() {
    using M = opmath_t<T>;
    const Problem<T> p(x, target, weight, weight_sum, smoothing);
    const M* scale = row_scale.data_ptr<M>();
    const M* row_lse = lse.data_ptr<M>();
    T* out = grad_x.data_ptr<T>();
    const fn::Exp exp_fn;
    parallel_for(0, p.rows, p.grain(), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = p.scores + r * p.classes;
        T* g = out + r * p.classes;
        const int64_t t = p.target[r];
        if (t == ignore_index) {
          std::fill(g, g + p.classes, T(0));
          continue;
        }
        const M s = scale[r], l = row_lse[r];
        const M hit = p.keep * p.class_weight(t);  // the target's share of the probability mass
        const M mass = hit + p.spread * p.total_weight;
        gradient_row(g, in, p.weight, p.classes, s, mass, l, p.spread);
        g[t] = static_cast<T>(s * (mass * exp_fn(static_cast<M>(in[t]) - l) - p.spread * p.class_weight(t) - hit));
      }
    });
  });
}

}  // namespace tandem::kernels::cpu
