// Muon: PyTorch's torch.optim.Muon (its single-tensor algorithm, operation for operation) in
// LibTorch's spelling. An optimizer for the 2-D weights of hidden layers: each step is the
// momentum of the gradient made (nearly) orthogonal by a few Newton-Schulz iterations, so that
// every direction of the matrix moves by about the same amount. Biases, embeddings and other
// parameters belong to another optimizer (AdamW, say).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

// How the learning rate scales with a weight's shape [A, B]: by sqrt(max(1, A / B)) (original,
// the default), by 0.2 * sqrt(max(A, B)) to match AdamW's update size (match_rms_adamw), or by
// sqrt(A / B) (spectral_unclamped).
enum class MuonAdjustLR { original, match_rms_adamw, spectral_unclamped };

// MuonOptions(1e-3).weight_decay(0.1).momentum(0.95).nesterov(true).ns_coefficients({3.4445,
// -4.775, 2.0315}).eps(1e-7).ns_steps(5).adjust_lr(original): the defaults. The momentum buffer
// moves towards the gradient by 1 - momentum; with nesterov the step's direction is the gradient
// moved towards the buffer by momentum. That direction, in bfloat16 and divided by its norm (at
// least eps), takes ns_steps iterations X <- a X + (b G + c G^2) X with G = X X^T (on the
// transpose of a tall matrix). The parameter is multiplied by 1 - lr * weight_decay, then moves
// by the adjusted lr times the result.
class MuonOptions : public OptimizerOptions {
 public:
  MuonOptions(double lr = 1e-3);

  MuonOptions& lr(double v) { lr_ = v; return *this; }
  MuonOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  MuonOptions& momentum(double v) { momentum_ = v; return *this; }
  MuonOptions& nesterov(bool v) { nesterov_ = v; return *this; }
  MuonOptions& ns_coefficients(std::array<double, 3> v) { ns_coefficients_ = v; return *this; }
  MuonOptions& eps(double v) { eps_ = v; return *this; }
  MuonOptions& ns_steps(int64_t v) { ns_steps_ = v; return *this; }
  MuonOptions& adjust_lr(MuonAdjustLR v) { adjust_lr_ = v; return *this; }
  double lr() const { return lr_; }
  double weight_decay() const { return weight_decay_; }
  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }
  std::array<double, 3> ns_coefficients() const { return ns_coefficients_; }
  double eps() const { return eps_; }
  int64_t ns_steps() const { return ns_steps_; }
  MuonAdjustLR adjust_lr() const { return adjust_lr_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<MuonOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "Muon"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  double weight_decay_ = 0.1;
  double momentum_ = 0.95;
  bool nesterov_ = true;
  std::array<double, 3> ns_coefficients_ = {3.4445, -4.7750, 2.0315};
  double eps_ = 1e-7;
  int64_t ns_steps_ = 5;
  MuonAdjustLR adjust_lr_ = MuonAdjustLR::original;
};

struct MuonParamState : OptimizerParamState {
  Tensor momentum_buffer;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

// Every parameter must be a matrix (2-D), at construction and when a step finds one with a
// gradient (a group added later); the step then changes nothing.
class Muon : public Optimizer {
 public:
  Muon(std::vector<Tensor> params, const MuonOptions& defaults = {});
  Muon(std::vector<OptimizerParamGroup> param_groups, const MuonOptions& defaults = {});

 private:
  void update() override;
  std::unique_ptr<OptimizerParamState> make_param_state() const override;
};

// The Newton-Schulz orthogonalization of a matrix as Muon takes it: in bfloat16, the result has
// (nearly) the matrix's singular vectors and singular values near 1.
Tensor zeropower_via_newton_schulz(const Tensor& matrix, std::array<double, 3> coefficients, int64_t steps,
                                   double eps);

}  // namespace tandem::optim
