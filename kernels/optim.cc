#include "kernels/optim.h"

#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"

namespace tandem::kernels {

namespace {

// Every list as long as params, every tensor beside its parameter: same device, dtype, shape,
// contiguous; the dtype float32 or float64.
void check_lists(const char* op, const std::vector<Tensor>& params,
                 std::initializer_list<std::pair<const char*, const std::vector<Tensor>*>> lists) {
  if (params.empty()) return;
  const Device device = params[0].device();
  const DType dtype = params[0].dtype();
  TD_CHECK(dtype == kFloat32 || dtype == kFloat64, op, ": fused steps take float32 or float64 parameters, got ", dtype);
  for (const auto& [name, list] : lists) {
    TD_CHECK(list->size() == params.size(), op, ": ", list->size(), " ", name, " for ", params.size(), " parameters");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    for (const auto& [name, list] : lists) {
      const Tensor& t = (*list)[i];
      check_defined(t, op, name);
      TD_CHECK(t.device() == device && t.dtype() == dtype && t.sizes() == params[i].sizes() && t.is_contiguous(), op,
               ": ", name, " ", i, " is ", t.dtype(), shape_str(t.sizes()), " on ", t.device(),
               t.is_contiguous() ? "" : " (not contiguous)", " but parameter 0 is ", dtype, " on ", device,
               " and parameter ", i, " has shape ", shape_str(params[i].sizes()), "; all must match, contiguous");
    }
  }
}

}  // namespace

void sgd_step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& bufs,
               const std::vector<bool>& first, const SgdStep& step) {
  const bool momentum = step.momentum != 0;
  if (momentum) {
    check_lists("sgd_step_", params, {{"params", &params}, {"grads", &grads}, {"bufs", &bufs}});
    TD_CHECK(first.size() == params.size(), "sgd_step_: ", first.size(), " first-step flags for ", params.size(),
             " parameters");
  } else {
    check_lists("sgd_step_", params, {{"params", &params}, {"grads", &grads}});
  }
  if (params.empty()) return;
  params[0].is_cuda() ? cuda::sgd_step(params, grads, bufs, first, step) : cpu::sgd_step(params, grads, bufs, first, step);
  for (const Tensor& p : params) p.bump_version();
  if (momentum) {
    for (const Tensor& b : bufs) b.bump_version();
  }
}

void adam_step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                const std::vector<Tensor>& max_exp_avg_sqs, const std::vector<int64_t>& steps, const AdamStep& step) {
  if (step.amsgrad) {
    check_lists("adam_step_", params, {{"params", &params}, {"grads", &grads}, {"exp_avgs", &exp_avgs},
                                       {"exp_avg_sqs", &exp_avg_sqs}, {"max_exp_avg_sqs", &max_exp_avg_sqs}});
  } else {
    check_lists("adam_step_", params,
                {{"params", &params}, {"grads", &grads}, {"exp_avgs", &exp_avgs}, {"exp_avg_sqs", &exp_avg_sqs}});
  }
  TD_CHECK(steps.size() == params.size(), "adam_step_: ", steps.size(), " step counts for ", params.size(),
           " parameters");
  for (int64_t s : steps) TD_CHECK(s >= 1, "adam_step_: step counts start at 1, got ", s);
  if (params.empty()) return;
  params[0].is_cuda() ? cuda::adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, step)
                      : cpu::adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, step);
  for (const auto* list : {&params, &exp_avgs, &exp_avg_sqs}) {
    for (const Tensor& t : *list) t.bump_version();
  }
  if (step.amsgrad) {
    for (const Tensor& t : max_exp_avg_sqs) t.bump_version();
  }
}

}  // namespace tandem::kernels
