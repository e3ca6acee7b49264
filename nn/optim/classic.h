// Adadelta, Rprop and ASGD: PyTorch's torch.optim.Adadelta, Rprop and ASGD (their single-tensor
// algorithms, operation for operation) in LibTorch's spelling.
#pragma once

#include <memory>
#include <tuple>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

// AdadeltaOptions(1.0).rho(0.9).eps(1e-6).weight_decay(0): the defaults. Each step is the
// gradient scaled by the root mean square of the past steps over that of the past gradients.
class AdadeltaOptions : public OptimizerOptions {
 public:
  AdadeltaOptions(double lr = 1.0);

  AdadeltaOptions& lr(double v) { lr_ = v; return *this; }
  AdadeltaOptions& rho(double v) { rho_ = v; return *this; }
  AdadeltaOptions& eps(double v) { eps_ = v; return *this; }
  AdadeltaOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdadeltaOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  double rho() const { return rho_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdadeltaOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "Adadelta"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  double rho_ = 0.9;
  double eps_ = 1e-6;
  double weight_decay_ = 0;
  bool maximize_ = false;
};

struct AdadeltaParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor square_avg, acc_delta;  // running mean squares of the gradients and of the steps

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class Adadelta : public Optimizer {
 public:
  Adadelta(std::vector<Tensor> params, const AdadeltaOptions& defaults = {});
  Adadelta(std::vector<OptimizerParamGroup> param_groups, const AdadeltaOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

// RpropOptions(1e-2).etas({0.5, 1.2}).step_sizes({1e-6, 50}): the defaults. Each element moves by
// its own step size against the sign of its gradient; the step size grows by etaplus while the
// sign holds and shrinks by etaminus when it flips (that step then does not move the element).
// lr is each step size's first value.
class RpropOptions : public OptimizerOptions {
 public:
  RpropOptions(double lr = 1e-2);

  RpropOptions& lr(double v) { lr_ = v; return *this; }
  RpropOptions& etas(std::tuple<double, double> v) { etas_ = v; return *this; }  // (etaminus, etaplus)
  RpropOptions& step_sizes(std::tuple<double, double> v) { step_sizes_ = v; return *this; }  // (min, max) of clamp
  RpropOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  std::tuple<double, double> etas() const { return etas_; }
  std::tuple<double, double> step_sizes() const { return step_sizes_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RpropOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "Rprop"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  std::tuple<double, double> etas_ = {0.5, 1.2};
  std::tuple<double, double> step_sizes_ = {1e-6, 50};
  bool maximize_ = false;
};

struct RpropParamState : OptimizerParamState {
  int64_t step = 0;
  Tensor prev;       // the last step's gradient (0 where it flipped sign)
  Tensor step_size;  // each element's

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class Rprop : public Optimizer {
 public:
  Rprop(std::vector<Tensor> params, const RpropOptions& defaults = {});
  Rprop(std::vector<OptimizerParamGroup> param_groups, const RpropOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

// ASGDOptions(1e-2).lambd(1e-4).alpha(0.75).t0(1e6).weight_decay(0): the defaults. SGD with a
// decaying step size eta = lr / (1 + lambd * lr * step)^alpha, which also keeps ax, the running
// average of the parameter from step t0 on (the parameter itself before).
class ASGDOptions : public OptimizerOptions {
 public:
  ASGDOptions(double lr = 1e-2);

  ASGDOptions& lr(double v) { lr_ = v; return *this; }
  ASGDOptions& lambd(double v) { lambd_ = v; return *this; }
  ASGDOptions& alpha(double v) { alpha_ = v; return *this; }
  ASGDOptions& t0(double v) { t0_ = v; return *this; }
  ASGDOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  ASGDOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  double lambd() const { return lambd_; }
  double alpha() const { return alpha_; }
  double t0() const { return t0_; }
  double weight_decay() const { return weight_decay_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<ASGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "ASGD"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  double lambd_ = 1e-4;
  double alpha_ = 0.75;
  double t0_ = 1e6;
  double weight_decay_ = 0;
  bool maximize_ = false;
};

// eta and mu are float32 numbers, as PyTorch keeps them (0-dim tensors of the default scalar dtype).
struct ASGDParamState : OptimizerParamState {
  int64_t step = 0;
  float eta = 0, mu = 1;  // the step size, and the averaging weight of the next parameter
  Tensor ax;              // the averaged parameter

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

class ASGD : public Optimizer {
 public:
  ASGD(std::vector<Tensor> params, const ASGDOptions& defaults = {});
  ASGD(std::vector<OptimizerParamGroup> param_groups, const ASGDOptions& defaults = {});
  // The averaged parameter of `param` (undefined before its first step), which evaluation uses.
  Tensor averaged(const Tensor& param) const;

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

}  // namespace tandem::optim
