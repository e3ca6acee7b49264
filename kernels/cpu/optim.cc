// CPU fused optimizer steps: each element read and written once by the functors of
// kernels/functors.h, in a file built without implicit fused multiply-adds (kernels/BUILD), so
// that the results are the op-by-op steps' to the bit. All the tensors of a call are one index
// range for the thread pool (one fork and join per step, not one per tensor), and each tensor's
// span runs a loop with the step's options as constants, so that the loop has no branches and
// vectorizes (all but amsgrad's in float64, where GCC 12 leaves the NaN-aware maximum scalar).
#include <algorithm>

#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem::kernels::cpu {

namespace {

constexpr int64_t kGrain = 16384;

// f.template operator()<b0, b1, ...>() for the runtime values of the bools given.
template <bool... Known, typename F>
void with_constants(F&& f) {
  f.template operator()<Known...>();
}
template <bool... Known, typename F, typename... Rest>
void with_constants(F&& f, bool next, Rest... rest) {
  if (next) {
    with_constants<Known..., true>(f, rest...);
  } else {
    with_constants<Known..., false>(f, rest...);
  }
}

// body(i, begin, end) for the elements [begin, end) of tensor i, over the elements of all the
// tensors as one range split across the pool.
template <typename Body>
void for_each_span(const std::vector<Tensor>& tensors, const Body& body) {
  std::vector<int64_t> starts{0};
  for (const Tensor& t : tensors) starts.push_back(starts.back() + t.numel());
  parallel_for(0, starts.back(), kGrain, [&](int64_t begin, int64_t end) {
    size_t i = std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin() - 1;
    for (; begin < end; ++i) {
      const int64_t stop = std::min(end, starts[i + 1]);
      if (stop > begin) body(i, begin - starts[i], stop - starts[i]);
      begin = stop;
    }
  });
}

// The elements [begin, end) of one tensor, the step's options as constants. Each instance is a
// function of its own with the functor inlined into it: inlined into their callers, or calling
// the functor, some of the loops did not vectorize.
template <typename T, bool kMaximize, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
[[gnu::noinline, gnu::flatten]] void sgd_span(fn::SgdUpdate<T> u, T* p, const T* g, T* buf, int64_t begin,
                                              int64_t end) {
  u.maximize = kMaximize;
  u.has_weight_decay = kDecay;
  u.has_momentum = kMomentum;
  u.first = kFirst;
  u.nesterov = kNesterov;
  for (int64_t e = begin; e < end; ++e) {
    T b = kMomentum && !kFirst ? buf[e] : T(0);  // a first step writes the buffer without reading it
    u(p[e], g[e], b);
    if (kMomentum) buf[e] = b;
  }
}

template <typename T, bool kMaximize, bool kDecay, bool kDecoupled, bool kFromStart, bool kAmsgrad>
[[gnu::noinline, gnu::flatten]] void adam_span(fn::AdamUpdate<T> u, T* p, const T* g, T* m, T* v, T* v_max,
                                               int64_t begin, int64_t end) {
  u.maximize = kMaximize;
  u.has_weight_decay = kDecay;
  u.decoupled = kDecoupled;
  u.lerp_from_start = kFromStart;
  u.amsgrad = kAmsgrad;
  for (int64_t e = begin; e < end; ++e) u(p[e], g[e], m[e], v[e], kAmsgrad ? v_max + e : nullptr);
}

}  // namespace

void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& bufs,
              const std::vector<bool>& first, const SgdStep& step) {
  dispatch_types<float, double>(params[0].dtype(), "sgd_step_", [&]<typename T>() {
    for_each_span(params, [&](size_t i, int64_t begin, int64_t end) {
      const auto update = kernels::detail::sgd_update<T>(step, step.momentum != 0 && first[i]);
      T* p = params[i].data_ptr<T>();
      const T* g = grads[i].data_ptr<T>();
      T* buf = update.has_momentum ? bufs[i].data_ptr<T>() : nullptr;
      with_constants(
          [&]<bool... kOptions>() { sgd_span<T, kOptions...>(update, p, g, buf, begin, end); },
          update.maximize, update.has_weight_decay, update.has_momentum, update.first, update.nesterov);
    });
  });
}

void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
               const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
               const std::vector<int64_t>& steps, const AdamStep& step) {
  dispatch_types<float, double>(params[0].dtype(), "adam_step_", [&]<typename T>() {
    for_each_span(params, [&](size_t i, int64_t begin, int64_t end) {
      const auto update = kernels::detail::adam_update<T>(step, steps[i]);
      T* p = params[i].data_ptr<T>();
      const T* g = grads[i].data_ptr<T>();
      T* m = exp_avgs[i].data_ptr<T>();
      T* v = exp_avg_sqs[i].data_ptr<T>();
      T* v_max = update.amsgrad ? max_exp_avg_sqs[i].data_ptr<T>() : nullptr;
      with_constants(
          [&]<bool... kOptions>() { adam_span<T, kOptions...>(update, p, g, m, v, v_max, begin, end); },
          update.maximize, update.has_weight_decay, update.decoupled, update.lerp_from_start, update.amsgrad);
    });
  });
}

}  // namespace tandem::kernels::cpu
