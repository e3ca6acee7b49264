#include "nn/optim/adafactor.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::optim {

namespace {

// The factored moments' shapes: the gradient's with its last dim 1 (one value per row), or with its
// second-last dim 1 (one per column).
Shape with_size_one(Shape shape, int64_t from_end) {
  shape[shape.size() - from_end] = 1;
  return shape;
}

// load_like_param for a state tensor of another shape than its parameter's.
Tensor load_shaped(const StateDict& in, const std::string& key, const Shape& shape, const Tensor& param) {
  const Tensor& saved = in.at(key);
  TD_CHECK(saved.sizes() == shape, "load_state_dict: '", key, "' has shape ", shape_str(saved.sizes()),
           " but its parameter of shape ", shape_str(param.sizes()), " needs ", shape_str(shape));
  TD_CHECK(saved.is_floating_point(), "load_state_dict: '", key, "' has dtype ", saved.dtype(),
           "; optimizer state is floating-point");
  Tensor out = empty(shape, param.options());
  out.copy_(saved);
  return out;
}

}  // namespace

AdafactorOptions::AdafactorOptions(double lr) : lr_(lr) {}

void AdafactorOptions::validate() const {
  TD_CHECK(beta2_decay_ <= 0, "Adafactor: invalid beta2_decay = ", beta2_decay_, " (must be <= 0)");
  if (eps_.first) detail::check_non_negative("Adafactor", "eps[0]", *eps_.first);
  detail::check_non_negative("Adafactor", "eps[1]", eps_.second);
  // d = inf: no clipping, as PyTorch takes it; !(d >= 1) also rejects NaN.
  TD_CHECK(d_ >= 1, "Adafactor: invalid clipping threshold d = ", d_, " (must be >= 1)");
  detail::check_non_negative("Adafactor", "weight_decay", weight_decay_);
}

void AdafactorOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["beta2_decay"] = beta2_decay_;
  out["eps"] = {eps_.first ? nlohmann::json(*eps_.first) : nlohmann::json(nullptr), eps_.second};
  out["d"] = d_;
  out["weight_decay"] = weight_decay_;
  out["maximize"] = maximize_;
}

void AdafactorOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "Adafactor", "lr");
  beta2_decay_ = detail::json_double(in, "Adafactor", "beta2_decay");
  const auto eps = in.find("eps");
  TD_CHECK(eps != in.end() && eps->is_array() && eps->size() == 2 && ((*eps)[0].is_null() || (*eps)[0].is_number()) &&
               (*eps)[1].is_number(),
           "Adafactor: option 'eps' must be a list of two values, the first a number or null");
  eps_ = {(*eps)[0].is_null() ? std::nullopt : std::optional<double>((*eps)[0].get<double>()), (*eps)[1].get<double>()};
  d_ = detail::json_double(in, "Adafactor", "d");
  weight_decay_ = detail::json_double(in, "Adafactor", "weight_decay");
  maximize_ = detail::json_bool(in, "Adafactor", "maximize");
}

std::unique_ptr<OptimizerParamState> AdafactorParamState::clone() const {
  auto out = std::make_unique<AdafactorParamState>();
  out->step = step;
  out->row_var = detail::clone_if_defined(row_var);
  out->col_var = detail::clone_if_defined(col_var);
  out->variance = detail::clone_if_defined(variance);
  return out;
}

void AdafactorParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "step", tensor(step));
  if (variance.defined()) {
    out.insert(prefix + "variance", variance.clone());
  } else {
    out.insert(prefix + "row_var", row_var.clone());
    out.insert(prefix + "col_var", col_var.clone());
  }
}

size_t AdafactorParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  step = detail::load_count(in, prefix + "step");
  if (param.dim() <= 1) {
    variance = detail::load_like_param(in, prefix + "variance", param);
    return 2;
  }
  row_var = load_shaped(in, prefix + "row_var", with_size_one(param.sizes(), 1), param);
  col_var = load_shaped(in, prefix + "col_var", with_size_one(param.sizes(), 2), param);
  return 3;
}

void AdafactorParamState::follow(const Tensor& param) {
  detail::follow_param(row_var, param);
  detail::follow_param(col_var, param);
  detail::follow_param(variance, param);
}

Adafactor::Adafactor(std::vector<Tensor> params, const AdafactorOptions& defaults)
    : Adafactor(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Adafactor::Adafactor(std::vector<OptimizerParamGroup> param_groups, const AdafactorOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {}

std::unique_ptr<OptimizerParamState> Adafactor::make_param_state() const {
  return std::make_unique<AdafactorParamState>();
}

// torch/optim/_adafactor.py, _single_tensor_adafactor.
void Adafactor::update() {
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const AdafactorOptions&>(group.options());
    // eps1's default is the machine epsilon of the group's first parameter with a gradient, for
    // the whole group, as PyTorch's loop sets it once.
    std::optional<double> eps1 = o.eps().first;
    for (auto& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = grad.neg();
      const bool factored = grad.dim() > 1;
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<AdafactorParamState>();
        if (factored) {
          fresh->row_var = zeros(with_size_one(grad.sizes(), 1), grad.options());
          fresh->col_var = zeros(with_size_one(grad.sizes(), 2), grad.options());
        } else {
          fresh->variance = zeros_like(grad);
        }
        slot = std::move(fresh);
      }
      auto& s = static_cast<AdafactorParamState&>(*slot);
      if (!eps1) eps1 = finfo(p.dtype()).eps;
      s.step += 1;
      const double step = static_cast<double>(s.step);
      const double one_minus_beta2 = std::pow(step, o.beta2_decay());
      const double rho = std::min(o.lr(), 1 / std::pow(step, 0.5));
      const double root_numel = std::pow(static_cast<double>(p.numel()), 0.5);
      const double alpha = std::max(o.eps().second, norm(p).item().to_double() / root_numel) * rho;
      if (o.weight_decay() != 0) p.mul_(1 - o.lr() * o.weight_decay());

      Tensor variance_estimate;
      if (factored) {
        const Tensor row_mean = linalg::vector_norm(grad, 2, {-1}, true).square().div(grad.size(-1));
        detail::lerp_(s.row_var, row_mean, one_minus_beta2);
        const Tensor col_mean = linalg::vector_norm(grad, 2, {-2}, true).square().div(grad.size(-2));
        detail::lerp_(s.col_var, col_mean, one_minus_beta2);
        variance_estimate = matmul(s.row_var, s.col_var);
        variance_estimate.div_(s.row_var.mean({-2}, true).clamp_min(*eps1));
      } else {
        detail::lerp_(s.variance, grad * grad, one_minus_beta2);
        variance_estimate = s.variance;  // read only: the clamp below makes a new tensor
      }
      // eps1 squared under the square root keeps eps1's magnitude.
      Tensor update = variance_estimate.clamp_min(*eps1 * *eps1).rsqrt().mul_(grad);
      const double denominator = std::max(1.0, norm(update).item().to_double() / (root_numel * o.d()));
      p.add_(update, -alpha / denominator);
    }
  }
}

}  // namespace tandem::optim
