// RMSprop (with momentum, centering and L2 weight decay) and Adagrad (with lr decay): PyTorch's
// torch.optim.RMSprop and torch.optim.Adagrad (their single-tensor algorithms, operation for
// operation) in LibTorch's spelling.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

// RMSpropOptions(1e-2).alpha(0.99).eps(1e-8).weight_decay(0).momentum(0).centered(false): the
// defaults. centered divides by the variance of the gradient (its mean square less its squared
// mean) instead of its mean square; maximize(true) ascends the objective.
class RMSpropOptions : public OptimizerOptions {
 public:
  RMSpropOptions(double lr = 1e-2);

  RMSpropOptions& lr(double v) { lr_ = v; return *this; }
  RMSpropOptions& alpha(double v) { alpha_ = v; return *this; }
  RMSpropOptions& eps(double v) { eps_ = v; return *this; }
  RMSpropOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  RMSpropOptions& momentum(double v) { momentum_ = v; return *this; }
  RMSpropOptions& centered(bool v) { centered_ = v; return *this; }
  RMSpropOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  double alpha() const { return alpha_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  double momentum() const { return momentum_; }
  bool centered() const { return centered_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RMSpropOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "RMSprop"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  double alpha_ = 0.99;
  double eps_ = 1e-8;
  double weight_decay_ = 0;
  double momentum_ = 0;
  bool centered_ = false;
  bool maximize_ = false;
};

// The running mean square; the momentum buffer with momentum > 0, the mean gradient if centered.
struct RMSpropParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor square_avg;
  Tensor momentum_buffer;
  Tensor grad_avg;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults = {});
  RMSprop(std::vector<OptimizerParamGroup> param_groups, const RMSpropOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

// AdagradOptions(1e-2).lr_decay(0).weight_decay(0).initial_accumulator_value(0).eps(1e-10): the
// defaults. Step t uses lr / (1 + (t - 1) * lr_decay); maximize(true) ascends the objective.
class AdagradOptions : public OptimizerOptions {
 public:
  AdagradOptions(double lr = 1e-2);

  AdagradOptions& lr(double v) { lr_ = v; return *this; }
  AdagradOptions& lr_decay(double v) { lr_decay_ = v; return *this; }
  AdagradOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  // The sum of squared gradients starts here, when a parameter takes its first step.
  AdagradOptions& initial_accumulator_value(double v) { initial_accumulator_value_ = v; return *this; }
  AdagradOptions& eps(double v) { eps_ = v; return *this; }
  AdagradOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  double lr_decay() const { return lr_decay_; }
  double weight_decay() const { return weight_decay_; }
  double initial_accumulator_value() const { return initial_accumulator_value_; }
  double eps() const { return eps_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdagradOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "Adagrad"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  double lr_decay_ = 0;
  double weight_decay_ = 0;
  double initial_accumulator_value_ = 0;
  double eps_ = 1e-10;
  bool maximize_ = false;
};

struct AdagradParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor sum;  // of the squared gradients

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults = {});
  Adagrad(std::vector<OptimizerParamGroup> param_groups, const AdagradOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tandem::optim
