#include "nn/optim/muon.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::optim {

namespace {

const char* adjust_lr_name(MuonAdjustLR adjust) {
  switch (adjust) {
    case MuonAdjustLR::original: return "original";
    case MuonAdjustLR::match_rms_adamw: return "match_rms_adamw";
    case MuonAdjustLR::spectral_unclamped: return "spectral_unclamped";
  }
  return "?";
}

// lr scaled for a weight of shape [rows, columns].
double adjusted_lr(double lr, MuonAdjustLR adjust, int64_t rows, int64_t columns) {
  const double a = static_cast<double>(rows), b = static_cast<double>(columns);
  switch (adjust) {
    case MuonAdjustLR::original: return lr * std::sqrt(std::max(1.0, a / b));
    case MuonAdjustLR::match_rms_adamw: return lr * (0.2 * std::sqrt(std::max(a, b)));
    case MuonAdjustLR::spectral_unclamped: return lr * std::sqrt(a / b);
  }
  return lr;
}

void check_matrix(const Tensor& t, const char* what) {
  TD_CHECK(t.dim() == 2, "Muon: only 2-D parameters are supported; a ", what, " has shape ", shape_str(t.sizes()),
           " (give biases and other parameters to another optimizer)");
}

}  // namespace

Tensor zeropower_via_newton_schulz(const Tensor& matrix, std::array<double, 3> coefficients, int64_t steps,
                                   double eps) {
  TD_CHECK(matrix.dim() == 2, "zeropower_via_newton_schulz: expected a matrix, got shape ", shape_str(matrix.sizes()));
  TD_CHECK(steps >= 0 && steps < 100, "zeropower_via_newton_schulz: steps must be in [0, 100), got ", steps);
  const auto [a, b, c] = coefficients;
  const bool tall = matrix.size(0) > matrix.size(1);
  Tensor x = matrix.to(kBFloat16).clone();
  if (tall) x = x.t();
  x.div_(norm(x).clamp_min(eps));
  for (int64_t i = 0; i < steps; ++i) {
    const Tensor gram = mm(x, x.t());
    const Tensor gram_update = addmm(gram, gram, gram, b, c);
    x = addmm(x, gram_update, x, a);
  }
  return tall ? x.t() : x;
}

MuonOptions::MuonOptions(double lr) : lr_(lr) {}

void MuonOptions::validate() const {
  detail::check_non_negative("Muon", "momentum", momentum_);
  detail::check_non_negative("Muon", "weight_decay", weight_decay_);
  detail::check_non_negative("Muon", "eps", eps_);
  TD_CHECK(ns_steps_ >= 0 && ns_steps_ < 100, "Muon: invalid ns_steps = ", ns_steps_, " (must be in [0, 100))");
  for (double coefficient : ns_coefficients_) {
    TD_CHECK(std::isfinite(coefficient), "Muon: invalid ns_coefficients: ", coefficient, " is not finite");
  }
}

void MuonOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["weight_decay"] = weight_decay_;
  out["momentum"] = momentum_;
  out["nesterov"] = nesterov_;
  out["ns_coefficients"] = ns_coefficients_;
  out["eps"] = eps_;
  out["ns_steps"] = ns_steps_;
  out["adjust_lr_fn"] = adjust_lr_name(adjust_lr_);
}

void MuonOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "Muon", "lr");
  weight_decay_ = detail::json_double(in, "Muon", "weight_decay");
  momentum_ = detail::json_double(in, "Muon", "momentum");
  nesterov_ = detail::json_bool(in, "Muon", "nesterov");
  const auto coefficients = in.find("ns_coefficients");
  TD_CHECK(coefficients != in.end() && coefficients->is_array() && coefficients->size() == 3 &&
               std::all_of(coefficients->begin(), coefficients->end(), [](const auto& v) { return v.is_number(); }),
           "Muon: option 'ns_coefficients' must be a list of three numbers");
  ns_coefficients_ = {(*coefficients)[0].get<double>(), (*coefficients)[1].get<double>(),
                      (*coefficients)[2].get<double>()};
  eps_ = detail::json_double(in, "Muon", "eps");
  ns_steps_ = detail::json_int(in, "Muon", "ns_steps");
  const auto adjust = in.find("adjust_lr_fn");
  TD_CHECK(adjust != in.end() && adjust->is_string(), "Muon: option 'adjust_lr_fn' must be a string");
  const std::string name = adjust->get<std::string>();
  if (name == "original") {
    adjust_lr_ = MuonAdjustLR::original;
  } else if (name == "match_rms_adamw") {
    adjust_lr_ = MuonAdjustLR::match_rms_adamw;
  } else {
    TD_CHECK(name == "spectral_unclamped", "Muon: unknown adjust_lr_fn '", name,
             "' (original, match_rms_adamw or spectral_unclamped)");
    adjust_lr_ = MuonAdjustLR::spectral_unclamped;
  }
}

std::unique_ptr<OptimizerParamState> MuonParamState::clone() const {
  auto out = std::make_unique<MuonParamState>();
  out->momentum_buffer = detail::clone_if_defined(momentum_buffer);
  return out;
}

void MuonParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "momentum_buffer", momentum_buffer.clone());
}

size_t MuonParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  momentum_buffer = detail::load_like_param(in, prefix + "momentum_buffer", param);
  return 1;
}

void MuonParamState::follow(const Tensor& param) { detail::follow_param(momentum_buffer, param); }

Muon::Muon(std::vector<Tensor> params, const MuonOptions& defaults)
    : Muon(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

Muon::Muon(std::vector<OptimizerParamGroup> param_groups, const MuonOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {
  for (const auto& group : this->param_groups()) {
    for (const auto& p : group.params()) check_matrix(p, "parameter");
  }
}

std::unique_ptr<OptimizerParamState> Muon::make_param_state() const { return std::make_unique<MuonParamState>(); }

// torch/optim/_muon.py, _single_tensor_muon.
void Muon::update() {
  for (const auto& group : param_groups()) {
    for (const auto& p : group.params()) {
      if (p.grad().defined()) check_matrix(p, "parameter (of a group added later)");
    }
  }
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const MuonOptions&>(group.options());
    for (auto& p : group.params()) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      auto& slot = state_slot(p);
      if (!slot) {
        auto fresh = std::make_unique<MuonParamState>();
        fresh->momentum_buffer = zeros_like(grad);
        slot = std::move(fresh);
      }
      auto& s = static_cast<MuonParamState&>(*slot);
      detail::lerp_(s.momentum_buffer, grad, 1 - o.momentum());
      Tensor direction = s.momentum_buffer;
      if (o.nesterov()) {  // grad.lerp(buf, momentum), one rounding as PyTorch's
        direction = grad.clone();
        detail::lerp_(direction, s.momentum_buffer, o.momentum());
      }
      const Tensor orthogonal = zeropower_via_newton_schulz(direction, o.ns_coefficients(), o.ns_steps(), o.eps());
      p.mul_(1 - o.lr() * o.weight_decay());
      // The bfloat16 update is added as PyTorch promotes it: in float32 for a float16 parameter.
      p.add_(orthogonal, -adjusted_lr(o.lr(), o.adjust_lr(), p.size(0), p.size(1)));
    }
  }
}

}  // namespace tandem::optim
