// Adam (with L2 weight decay and AMSGrad) and AdamW (decoupled weight decay): PyTorch's
// torch.optim.Adam and AdamW (their single-tensor algorithm, operation for operation) in
// LibTorch's spelling.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

using betas_t = std::tuple<double, double>;

// AdamOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0).amsgrad(false): the defaults.
// weight_decay adds weight_decay * param to the gradient (L2), as torch.optim.Adam does;
// maximize(true) ascends the objective: each step uses the gradient's negative. fused(): as
// PyTorch's `fused`, one pass over each tensor instead of an op at a time, with the same result
// to the last bit; unset (the default) takes it wherever the parameters allow (nn/optim/fused.h).
class AdamOptions : public OptimizerOptions {
 public:
  AdamOptions(double lr = 1e-3);

  AdamOptions& lr(double v) { lr_ = v; return *this; }
  AdamOptions& betas(const betas_t& v) { betas_ = v; return *this; }
  AdamOptions& eps(double v) { eps_ = v; return *this; }
  AdamOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdamOptions& amsgrad(bool v) { amsgrad_ = v; return *this; }
  AdamOptions& maximize(bool v) { maximize_ = v; return *this; }
  AdamOptions& fused(std::optional<bool> v) { fused_ = v; return *this; }
  double lr() const { return lr_; }
  const betas_t& betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool amsgrad() const { return amsgrad_; }
  bool maximize() const { return maximize_; }
  std::optional<bool> fused() const { return fused_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "Adam"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 protected:
  AdamOptions(double lr, double weight_decay) : lr_(lr), weight_decay_(weight_decay) {}

  double lr_;
  betas_t betas_ = {0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 0;
  bool amsgrad_ = false;
  bool maximize_ = false;
  std::optional<bool> fused_;
};

// The same options with weight decay decoupled from the gradient (param *= 1 - lr * weight_decay
// before the Adam step) and, as in PyTorch, on by default: weight_decay = 0.01.
class AdamWOptions : public AdamOptions {
 public:
  AdamWOptions(double lr = 1e-3) : AdamOptions(lr, 1e-2) {}

  // The setters again, returning AdamWOptions& so that chains keep their type.
  AdamWOptions& lr(double v) { lr_ = v; return *this; }
  AdamWOptions& betas(const betas_t& v) { betas_ = v; return *this; }
  AdamWOptions& eps(double v) { eps_ = v; return *this; }
  AdamWOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdamWOptions& amsgrad(bool v) { amsgrad_ = v; return *this; }
  AdamWOptions& maximize(bool v) { maximize_ = v; return *this; }
  AdamWOptions& fused(std::optional<bool> v) { fused_ = v; return *this; }
  using AdamOptions::amsgrad;
  using AdamOptions::betas;
  using AdamOptions::eps;
  using AdamOptions::fused;
  using AdamOptions::lr;
  using AdamOptions::maximize;
  using AdamOptions::weight_decay;

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamWOptions>(*this); }
  const char* optimizer_name() const override { return "AdamW"; }
};

// A parameter's step count and moment estimates; max_exp_avg_sq only with amsgrad.
struct AdamParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor exp_avg;
  Tensor exp_avg_sq;
  Tensor max_exp_avg_sq;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& defaults = {});
  Adam(std::vector<OptimizerParamGroup> param_groups, const AdamOptions& defaults = {});

 protected:
  Adam(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults, bool decoupled);

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
  bool decoupled_weight_decay_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults = {});
  AdamW(std::vector<OptimizerParamGroup> param_groups, const AdamWOptions& defaults = {});
};

}  // namespace tandem::optim
