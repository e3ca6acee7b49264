// Adafactor: PyTorch's torch.optim.Adafactor (its single-tensor algorithm, operation for operation)
// in LibTorch's spelling. Its second moment of a matrix is kept factored, one value per row and one
// per column, so the state of an m x n weight is m + n numbers instead of Adam's 2mn.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

// AdafactorOptions(1e-2).beta2_decay(-0.8).eps({std::nullopt, 1e-3}).d(1).weight_decay(0): the
// defaults. At step t the second moment moves towards the squared gradient by t^beta2_decay (1 at
// the first step); the update, grad / sqrt(second moment) (each under eps1, which defaults to the
// machine epsilon of the dtype of the group's first parameter with a gradient, as PyTorch's), is
// scaled down to a root mean square of at most d (inf: never), then
// times max(eps2, the parameter's root mean square) * min(lr, 1 / sqrt(t)). weight_decay
// multiplies the parameter by 1 - lr * weight_decay first.
class AdafactorOptions : public OptimizerOptions {
 public:
  AdafactorOptions(double lr = 1e-2);

  AdafactorOptions& lr(double v) { lr_ = v; return *this; }
  AdafactorOptions& beta2_decay(double v) { beta2_decay_ = v; return *this; }
  AdafactorOptions& eps(std::pair<std::optional<double>, double> v) { eps_ = v; return *this; }
  AdafactorOptions& d(double v) { d_ = v; return *this; }
  AdafactorOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdafactorOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  double beta2_decay() const { return beta2_decay_; }
  std::pair<std::optional<double>, double> eps() const { return eps_; }
  double d() const { return d_; }
  double weight_decay() const { return weight_decay_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdafactorOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "Adafactor"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  double beta2_decay_ = -0.8;
  std::pair<std::optional<double>, double> eps_ = {std::nullopt, 1e-3};
  double d_ = 1;
  double weight_decay_ = 0;
  bool maximize_ = false;
};

// A parameter of two or more dims keeps row_var (its shape with the last dim 1) and col_var (the
// second-last dim 1): the running means of the squared gradient along each row and each column of
// every matrix; a vector or a number keeps variance, its own shape.
struct AdafactorParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor row_var, col_var, variance;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class Adafactor : public Optimizer {
 public:
  Adafactor(std::vector<Tensor> params, const AdafactorOptions& defaults = {});
  Adafactor(std::vector<OptimizerParamGroup> param_groups, const AdafactorOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tandem::optim
