// CPU fused optimizer steps: each tensor's elements updated in one pass by the functors of
// kernels/functors.h, tensors split across the thread pool.
#include "core/dispatch.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_ops.h"

namespace tandem::kernels::cpu {

namespace {

constexpr int64_t kGrain = 16384;

}  // namespace

void sgd_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& bufs,
              const std::vector<bool>& first, const SgdStep& step) {
  dispatch_types<float, double>(params[0].dtype(), "sgd_step_", [&]<typename T>() {
    for (size_t i = 0; i < params.size(); ++i) {
      const auto update = kernels::detail::sgd_update<T>(step, step.momentum != 0 && first[i]);
      T* p = params[i].data_ptr<T>();
      const T* g = grads[i].data_ptr<T>();
      T* buf = step.momentum != 0 ? bufs[i].data_ptr<T>() : nullptr;
      parallel_for(0, params[i].numel(), kGrain, [&](int64_t begin, int64_t end) {
        T unused = 0;
        for (int64_t e = begin; e < end; ++e) update(p[e], g[e], buf ? buf[e] : unused);
      });
    }
  });
}

void adam_step(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& exp_avgs,
               const std::vector<Tensor>& exp_avg_sqs, const std::vector<Tensor>& max_exp_avg_sqs,
               const std::vector<int64_t>& steps, const AdamStep& step) {
  dispatch_types<float, double>(params[0].dtype(), "adam_step_", [&]<typename T>() {
    for (size_t i = 0; i < params.size(); ++i) {
      const auto update = kernels::detail::adam_update<T>(step, steps[i]);
      T* p = params[i].data_ptr<T>();
      const T* g = grads[i].data_ptr<T>();
      T* m = exp_avgs[i].data_ptr<T>();
      T* v = exp_avg_sqs[i].data_ptr<T>();
      T* v_max = step.amsgrad ? max_exp_avg_sqs[i].data_ptr<T>() : nullptr;
      parallel_for(0, params[i].numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t e = begin; e < end; ++e) update(p[e], g[e], m[e], v[e], v_max ? v_max + e : nullptr);
      });
    }
  });
}

}  // namespace tandem::kernels::cpu
