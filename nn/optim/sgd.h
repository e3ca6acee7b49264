// SGD with momentum, dampening, weight decay and Nesterov momentum: PyTorch's torch.optim.SGD
// (its single-tensor algorithm, operation for operation) in LibTorch's spelling.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

// SGDOptions(0.1).momentum(0.9).nesterov(true): setters chain, getters share the name.
// maximize(true) ascends the objective: each step uses the gradient's negative. fused(): as
// PyTorch's `fused`, one pass over each tensor instead of an op at a time, with the same result
// to the last bit; unset (the default) takes it wherever the parameters allow (nn/optim/fused.h).
class SGDOptions : public OptimizerOptions {
 public:
  SGDOptions(double lr);  // implicit, as in LibTorch: SGD(params, 0.1)

  SGDOptions& lr(double v) { lr_ = v; return *this; }
  SGDOptions& momentum(double v) { momentum_ = v; return *this; }
  SGDOptions& dampening(double v) { dampening_ = v; return *this; }
  SGDOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  SGDOptions& nesterov(bool v) { nesterov_ = v; return *this; }
  SGDOptions& maximize(bool v) { maximize_ = v; return *this; }
  SGDOptions& fused(std::optional<bool> v) { fused_ = v; return *this; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }
  bool maximize() const { return maximize_; }
  std::optional<bool> fused() const { return fused_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "SGD"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  double momentum_ = 0;
  double dampening_ = 0;
  double weight_decay_ = 0;
  bool nesterov_ = false;
  bool maximize_ = false;
  std::optional<bool> fused_;
};

// Exists only for parameters of groups with momentum != 0, once they had a gradient.
struct SGDParamState : OptimizerParamState {
  Tensor momentum_buffer;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& defaults);
  SGD(std::vector<OptimizerParamGroup> param_groups, const SGDOptions& defaults);

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tandem::optim
