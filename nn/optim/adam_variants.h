// Adamax, NAdam and RAdam: PyTorch's torch.optim.Adamax, NAdam and RAdam (their single-tensor
// algorithms, operation for operation) in LibTorch's spelling.
#pragma once

#include <memory>
#include <tuple>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

// AdamaxOptions(2e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0): the defaults. Adam with the
// infinity norm: the step divides by the running max of |grad| instead of the root mean square.
class AdamaxOptions : public OptimizerOptions {
 public:
  AdamaxOptions(double lr = 2e-3);

  AdamaxOptions& lr(double v) { lr_ = v; return *this; }
  AdamaxOptions& betas(std::tuple<double, double> v) { betas_ = v; return *this; }
  AdamaxOptions& eps(double v) { eps_ = v; return *this; }
  AdamaxOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdamaxOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  std::tuple<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamaxOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "Adamax"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  std::tuple<double, double> betas_ = {0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 0;
  bool maximize_ = false;
};

struct AdamaxParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor exp_avg, exp_inf;  // the running mean of the gradient and the running max of its magnitude

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class Adamax : public Optimizer {
 public:
  Adamax(std::vector<Tensor> params, const AdamaxOptions& defaults = {});
  Adamax(std::vector<OptimizerParamGroup> param_groups, const AdamaxOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

// NAdamOptions(2e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0).momentum_decay(4e-3)
// .decoupled_weight_decay(false): the defaults. Adam with Nesterov momentum, whose momentum
// factor warms up with momentum_decay; decoupled_weight_decay decays the parameters as AdamW.
class NAdamOptions : public OptimizerOptions {
 public:
  NAdamOptions(double lr = 2e-3);

  NAdamOptions& lr(double v) { lr_ = v; return *this; }
  NAdamOptions& betas(std::tuple<double, double> v) { betas_ = v; return *this; }
  NAdamOptions& eps(double v) { eps_ = v; return *this; }
  NAdamOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  NAdamOptions& momentum_decay(double v) { momentum_decay_ = v; return *this; }
  NAdamOptions& decoupled_weight_decay(bool v) { decoupled_weight_decay_ = v; return *this; }
  NAdamOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  std::tuple<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  double momentum_decay() const { return momentum_decay_; }
  bool decoupled_weight_decay() const { return decoupled_weight_decay_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<NAdamOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "NAdam"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  std::tuple<double, double> betas_ = {0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 0;
  double momentum_decay_ = 4e-3;
  bool decoupled_weight_decay_ = false;
  bool maximize_ = false;
};

struct NAdamParamState : OptimizerParamState {
  int64_t step = 0;
  float mu_product = 1;  // the product of the momentum factors so far, in float32 as PyTorch keeps it
  Tensor exp_avg, exp_avg_sq;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class NAdam : public Optimizer {
 public:
  NAdam(std::vector<Tensor> params, const NAdamOptions& defaults = {});
  NAdam(std::vector<OptimizerParamGroup> param_groups, const NAdamOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

// RAdamOptions(1e-3).betas({0.9, 0.999}).eps(1e-8).weight_decay(0).decoupled_weight_decay(false):
// the defaults. Adam whose adaptive step is rectified by the variance of its estimate: plain
// momentum for the first steps (while the rectification term is not yet defined).
class RAdamOptions : public OptimizerOptions {
 public:
  RAdamOptions(double lr = 1e-3);

  RAdamOptions& lr(double v) { lr_ = v; return *this; }
  RAdamOptions& betas(std::tuple<double, double> v) { betas_ = v; return *this; }
  RAdamOptions& eps(double v) { eps_ = v; return *this; }
  RAdamOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  RAdamOptions& decoupled_weight_decay(bool v) { decoupled_weight_decay_ = v; return *this; }
  RAdamOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  std::tuple<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool decoupled_weight_decay() const { return decoupled_weight_decay_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RAdamOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "RAdam"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  std::tuple<double, double> betas_ = {0.9, 0.999};
  double eps_ = 1e-8;
  double weight_decay_ = 0;
  bool decoupled_weight_decay_ = false;
  bool maximize_ = false;
};

struct RAdamParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor exp_avg, exp_avg_sq;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class RAdam : public Optimizer {
 public:
  RAdam(std::vector<Tensor> params, const RAdamOptions& defaults = {});
  RAdam(std::vector<OptimizerParamGroup> param_groups, const RAdamOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tandem::optim
