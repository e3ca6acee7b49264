#include "nn/clip_grad.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::nn::utils {

namespace {

std::vector<Tensor> gradients_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

}  // namespace

namespace {

// The norm of order norm_type of `tensors` as one vector (see get_total_norm), checked as `op`.
Tensor total_norm(const char* op, const std::vector<Tensor>& tensors, double norm_type, bool error_if_nonfinite) {
  TD_CHECK(!std::isnan(norm_type), op, ": norm_type is NaN");
  NoGradGuard no_grad;
  std::vector<Tensor> given;
  for (const Tensor& t : tensors) {
    if (t.defined()) given.push_back(t);
  }
  if (given.empty()) return zeros({});
  // The norms meet on the first tensor's device, in the widest of their dtypes (as PyTorch's
  // stack promotes them): a float16 first gradient does not cap a float32 one's norm at 65504.
  const Device device = given[0].device();
  DType dtype = given[0].dtype();
  for (const Tensor& t : given) {
    TD_CHECK(is_floating(t.dtype()), op, ": expected floating tensors, got ", t.dtype());
    dtype = promote_types(dtype, t.dtype());
  }
  std::vector<Tensor> norms;
  for (const Tensor& t : given) norms.push_back(to(linalg::vector_norm(t, norm_type), device, dtype));
  const Tensor total = linalg::vector_norm(stack(norms), norm_type);
  if (error_if_nonfinite) {
    const double value = total.item<double>();
    TD_CHECK(std::isfinite(value), op, ": the total norm of order ", norm_type, " of the gradients is ", value,
             ", so they cannot be clipped (pass error_if_nonfinite = false to scale them anyway)");
  }
  return total;
}

}  // namespace

Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type, bool error_if_nonfinite) {
  return total_norm("get_total_norm", tensors, norm_type, error_if_nonfinite);
}

void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm, const Tensor& total_norm) {
  TD_CHECK(!std::isnan(max_norm), "clip_grads_with_norm_: max_norm is NaN");
  TD_CHECK(total_norm.defined() && total_norm.numel() == 1, "clip_grads_with_norm_: total_norm must be a tensor ",
           "of one element, got ", total_norm.defined() ? shape_str(total_norm.sizes()) : std::string("none"));
  NoGradGuard no_grad;
  // Where the total is within max_norm the factor is 1: the gradients are multiplied all the same,
  // with no wait for the device to say whether they need it.
  // PyTorch's rounding: its max_norm / t is the reciprocal of t times max_norm.
  const Tensor factor = clamp(reciprocal(total_norm.detach() + 1e-6) * max_norm, std::nullopt, 1.0);
  for (Tensor g : gradients_of(parameters)) g.mul_(to(factor, g.device(), factor.dtype()));
}

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  TD_CHECK(!std::isnan(max_norm), "clip_grad_norm_: max_norm is NaN");
  const Tensor total = total_norm("clip_grad_norm_", gradients_of(parameters), norm_type, error_if_nonfinite);
  clip_grads_with_norm_(parameters, max_norm, total);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  TD_CHECK(!std::isnan(clip_value), "clip_grad_value_: clip_value is NaN");
  NoGradGuard no_grad;
  for (Tensor g : gradients_of(parameters)) g.clamp_(-clip_value, clip_value);
}

namespace {

void check_one_device(const char* op, const std::vector<Tensor>& parameters) {
  for (size_t i = 0; i < parameters.size(); ++i) {
    TD_CHECK(parameters[i].defined(), op, ": parameter ", i, " is an undefined tensor");
    TD_CHECK(parameters[i].device() == parameters[0].device(), op, ": parameter ", i, " is on ",
             parameters[i].device(), ", parameter 0 on ", parameters[0].device(), "; they must share a device");
  }
}

}  // namespace

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  TD_CHECK(!parameters.empty(), "parameters_to_vector: no parameters");
  check_one_device("parameters_to_vector", parameters);
  std::vector<Tensor> flat;
  for (const Tensor& p : parameters) flat.push_back(p.reshape({-1}));
  return cat(flat, 0);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  check_one_device("vector_to_parameters", parameters);
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  TD_CHECK(vec.defined() && vec.dim() == 1 && vec.numel() == total, "vector_to_parameters: expected a 1-D vector of ",
           total, " elements (the parameters'), got ", vec.defined() ? shape_str(vec.sizes()) : std::string("none"));
  TD_CHECK(parameters.empty() || vec.device() == parameters[0].device(), "vector_to_parameters: the vector is on ",
           vec.device(), ", the parameters on ", parameters.empty() ? vec.device() : parameters[0].device());
  NoGradGuard no_grad;
  int64_t offset = 0;
  for (const Tensor& p : parameters) {
    Tensor(p).copy_(vec.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
}

}  // namespace tandem::nn::utils
