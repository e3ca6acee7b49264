// L-BFGS: PyTorch's torch.optim.LBFGS (its algorithm and its strong-Wolfe line search, step for
// step) in LibTorch's spelling. Each step(closure) runs up to max_iter iterations, each a quasi-
// Newton direction from the last history_size curvature pairs, and calls the closure (which
// re-evaluates the model, calls backward and returns the loss) as often as it needs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"

namespace tandem::optim {

// LBFGSOptions(1).max_iter(20).tolerance_grad(1e-7).tolerance_change(1e-9).history_size(100): the
// defaults. max_eval (closure calls per step) defaults to max_iter * 5 / 4 (as the optimizer is
// built: a later max_iter leaves it); line_search_fn is
// unset (a fixed step of lr) or "strong_wolfe". maximize(true) ascends the objective.
class LBFGSOptions : public OptimizerOptions {
 public:
  LBFGSOptions(double lr = 1);

  LBFGSOptions& lr(double v) { lr_ = v; return *this; }
  LBFGSOptions& max_iter(int64_t v) { max_iter_ = v; return *this; }
  LBFGSOptions& max_eval(std::optional<int64_t> v) { max_eval_ = v; return *this; }
  LBFGSOptions& tolerance_grad(double v) { tolerance_grad_ = v; return *this; }
  LBFGSOptions& tolerance_change(double v) { tolerance_change_ = v; return *this; }
  LBFGSOptions& history_size(int64_t v) { history_size_ = v; return *this; }
  LBFGSOptions& line_search_fn(std::optional<std::string> v) { line_search_fn_ = std::move(v); return *this; }
  LBFGSOptions& maximize(bool v) { maximize_ = v; return *this; }
  double lr() const { return lr_; }
  int64_t max_iter() const { return max_iter_; }
  int64_t max_eval() const { return max_eval_.value_or(max_iter_ * 5 / 4); }
  double tolerance_grad() const { return tolerance_grad_; }
  double tolerance_change() const { return tolerance_change_; }
  int64_t history_size() const { return history_size_; }
  const std::optional<std::string>& line_search_fn() const { return line_search_fn_; }
  bool maximize() const { return maximize_; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<LBFGSOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double v) override { lr_ = v; }
  const char* optimizer_name() const override { return "LBFGS"; }
  void validate() const override;
  void to_json(nlohmann::json& out) const override;
  void from_json(const nlohmann::json& in) override;

 private:
  double lr_;
  int64_t max_iter_ = 20;
  std::optional<int64_t> max_eval_;
  double tolerance_grad_ = 1e-7;
  double tolerance_change_ = 1e-9;
  int64_t history_size_ = 100;
  std::optional<std::string> line_search_fn_;
  bool maximize_ = false;
};

// The whole optimizer's state, kept (as PyTorch keeps it) with the first parameter: the last
// direction and step size, the curvature pairs (gradient changes y and steps s, with 1 / y.s),
// the initial inverse Hessian's scale, and the last flat gradient. Vectors are flat: every
// parameter's elements in order.
struct LBFGSParamState : OptimizerParamState {
  explicit LBFGSParamState(int64_t numel) : numel(numel) {}
  int64_t numel;  // of all the parameters together: the length of the flat vectors
  int64_t func_evals = 0, n_iter = 0;
  Tensor d, prev_flat_grad;
  double t = 0, h_diag = 1, prev_loss = 0;
  std::vector<Tensor> old_dirs, old_stps;
  std::vector<double> ro;

  std::unique_ptr<OptimizerParamState> clone() const override;
  void save(StateDict& out, const std::string& prefix) const override;
  size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) override;
  void follow(const Tensor& param) override;
};

// One parameter group only, its parameters of one dtype on one device. step() needs the closure.
// The scalars of the iteration (step sizes, dot products, 1 / y.s) are kept in double: for
// float64 parameters that is PyTorch's arithmetic; for float32 PyTorch keeps some in float32.
class LBFGS : public Optimizer {
 public:
  LBFGS(std::vector<Tensor> params, const LBFGSOptions& defaults = {});
  LBFGS(std::vector<OptimizerParamGroup> param_groups, const LBFGSOptions& defaults = {});

  // Runs the iterations; returns the loss of the closure's first call (before any update).
  Tensor step(LossClosure closure = nullptr) override;

 private:
  void update() override;  // never called: step() runs the whole algorithm
  std::unique_ptr<OptimizerParamState> make_param_state() const override;

  // The flat gradient of every parameter (zeros where none), negated under maximize.
  Tensor flat_grad() const;
  // Adds step * direction to the parameters.
  void add_to_params(double step, const Tensor& direction);
  // The loss (negated under maximize) and flat gradient at params + step * direction; the
  // parameters are then set back to `origin`.
  std::pair<double, Tensor> evaluate_along(const LossClosure& closure, const std::vector<Tensor>& origin,
                                           double step, const Tensor& direction);
  // The closure's loss (checked: one number), with grad mode on, and the gradients it left checked.
  Tensor run_closure(const LossClosure& closure);
  double objective(const Tensor& loss) const;  // the loss as a number, negated under maximize
  int64_t numel() const;
};

}  // namespace tandem::optim
