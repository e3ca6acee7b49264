// Learning-rate schedulers (StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR,
// ConstantLR, PolynomialLR, LambdaLR, MultiplicativeLR, CosineAnnealingWarmRestarts, CyclicLR,
// OneCycleLR, ChainedScheduler, SequentialLR, SWALR, and ReduceLROnPlateau, which steps on a metric): PyTorch's
// torch.optim.lr_scheduler, with its update rules, so that the sequence of learning rates is PyTorch's.
//
// As in PyTorch, constructing a scheduler (all but ReduceLROnPlateau) takes its first step
// (epoch 0), which may already set the optimizer's lr (LinearLR multiplies it by start_factor); call step() after each
// optimizer.step(). To resume: construct the optimizer and the scheduler, then load the
// optimizer's state_dict (it holds the groups' lr) and the scheduler's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "nn/optim/optimizer.h"
#include "nn/state_dict.h"

namespace tandem::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch and writes the new lr of every group into the optimizer.
  void step();
  // The lr of each group after the latest step (also after the constructor's).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  const Optimizer& optimizer() const { return optimizer_; }

  // Metadata only: "lr_scheduler" holds JSON with the kind, the counters, base and last lrs and
  // the hyperparameters. load_state_dict checks the kind and the number of groups, and changes
  // nothing on a mismatch.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Takes the step of epoch 0; each scheduler's constructor calls it once its own fields are
  // set (a base-class constructor cannot reach get_lr()).
  void initial_step();
  // The lr of every group for last_epoch(), mostly from the groups' current lr (PyTorch's get_lr).
  virtual std::vector<double> get_lr() = 0;
  // Whether groups added to the optimizer after the scheduler was made are scheduled too: yes
  // where each lr follows from the group's current one, as in PyTorch (progressive unfreezing);
  // no where it needs the group's initial lr.
  virtual bool schedules_added_groups() const { return false; }
  virtual const char* name() const = 0;
  virtual void hyperparameters_to_json(nlohmann::json& out) const = 0;
  virtual void hyperparameters_from_json(const nlohmann::json& in) = 0;  // validates too

  std::vector<double> group_lrs() const;
  // Writes one lr per group into the optimizer and records them as the last lrs.
  void set_lrs(const std::vector<double>& lrs);
  // The optimizer's groups are the scheduler's (or later ones it schedules too).
  void check_groups() const;
  // The lrs of epoch 0 when SequentialLR starts this scheduler at its milestone (PyTorch's
  // _update_lr(0)): the closed form where PyTorch has one, else get_lr() at epoch 0.
  virtual std::vector<double> restart_lrs() { return get_lr(); }
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool is_initial_ = false;  // inside the constructor's step

 private:
  friend class SequentialLR;
  std::vector<double> last_lr_;
};

// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "StepLR"; }
  std::vector<double> restart_lrs() override;
  bool schedules_added_groups() const override { return true; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma at each milestone epoch (as many times as the milestone is listed).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "MultiStepLR"; }
  std::vector<double> restart_lrs() override;
  bool schedules_added_groups() const override { return true; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "ExponentialLR"; }
  std::vector<double> restart_lrs() override;
  bool schedules_added_groups() const override { return true; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  double gamma_;
};

// lr = base lr * factor(epoch), one function for every group or one per group. The functions
// are not part of state_dict() (as in PyTorch, where lambdas are not saved): a loaded state
// keeps the functions the scheduler was made with.
class LambdaLR : public LRScheduler {
 public:
  using Factor = std::function<double(int64_t epoch)>;
  LambdaLR(Optimizer& optimizer, Factor factor);
  LambdaLR(Optimizer& optimizer, std::vector<Factor> factors);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "LambdaLR"; }
  void hyperparameters_to_json(nlohmann::json&) const override {}
  void hyperparameters_from_json(const nlohmann::json&) override {}
  std::vector<Factor> factors_;
};

// lr follows half a cosine from the base lr down to eta_min over T_max epochs, then back up
// (a period of 2 * T_max), as PyTorch's recursive form computes it.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "CosineAnnealingLR"; }
  std::vector<double> restart_lrs() override;
  bool schedules_added_groups() const override { return true; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  int64_t T_max_;
  double eta_min_;
};

// Linear warm-up (or decay): lr goes from base * start_factor to base * end_factor over
// total_iters epochs, then stays.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "LinearLR"; }
  std::vector<double> restart_lrs() override;
  bool schedules_added_groups() const override { return true; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

// lr *= factor until epoch total_iters, where the factor is undone.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "ConstantLR"; }
  std::vector<double> restart_lrs() override;
  bool schedules_added_groups() const override { return true; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  double factor_;
  int64_t total_iters_;
};

// lr = base lr * (1 - epoch / total_iters)^power, reached by PyTorch's step-by-step ratios; after
// total_iters epochs it stays (at 0 for a full decay).
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "PolynomialLR"; }
  std::vector<double> restart_lrs() override;
  bool schedules_added_groups() const override { return true; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  int64_t total_iters_;
  double power_;
};

// lr *= factor(epoch) every epoch after the first, one function for every group or one per group
// (not saved by state_dict, as LambdaLR's).
class MultiplicativeLR : public LRScheduler {
 public:
  using Factor = std::function<double(int64_t epoch)>;
  MultiplicativeLR(Optimizer& optimizer, Factor factor);
  MultiplicativeLR(Optimizer& optimizer, std::vector<Factor> factors);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "MultiplicativeLR"; }
  void hyperparameters_to_json(nlohmann::json&) const override {}
  void hyperparameters_from_json(const nlohmann::json&) override {}
  std::vector<Factor> factors_;
};

// SGDR: lr follows half a cosine from the base lr down to eta_min over T_i epochs, then restarts
// at the base lr; the first period is T_0 epochs, each next one T_mult times longer.
// step(epoch) sets a fractional epoch (e.g. epoch + batch / batches), as PyTorch's step(epoch).
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0);
  using LRScheduler::step;
  void step(double epoch);
  double T_cur() const { return T_cur_; }  // epochs since the last restart
  int64_t T_i() const { return T_i_; }     // the current period

 private:
  std::vector<double> get_lr() override;
  std::vector<double> cosine_lrs() const;
  const char* name() const override { return "CosineAnnealingWarmRestarts"; }
  std::vector<double> restart_lrs() override;
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  int64_t T_0_, T_mult_;
  double eta_min_;
  double T_cur_ = -1;
  int64_t T_i_;
};

enum class CyclicMode { triangular, triangular2, exp_range };

// CyclicLR's settings, PyTorch's defaults. A list holds one value for every group, or one per group.
struct CyclicLROptions {
  double step_size_up = 2000;                 // steps from base_lr up to max_lr
  std::optional<double> step_size_down;       // steps back down: step_size_up unless set
  CyclicMode mode = CyclicMode::triangular;   // the height of each cycle: constant, halved, gamma^step
  double gamma = 1.0;                         // exp_range's
  // A scale of one's own, of the cycle number (scale_by_cycle) or of the step, instead of mode's.
  std::function<double(double)> scale_fn;
  bool scale_by_cycle = true;
  // Moves the momentum (SGD, RMSprop) or beta1 (the Adam family) against the lr, between
  // max_momentum (at base_lr) and base_momentum (at max_lr).
  bool cycle_momentum = true;
  std::vector<double> base_momentum = {0.8};
  std::vector<double> max_momentum = {0.9};
};

// The cyclical learning-rate policy, stepped once per batch: the lr goes from base_lr up to
// max_lr and back in each cycle of step_size_up + step_size_down steps, the cycle's height scaled
// by the mode. It sets each group's lr to base_lr when made. The scale function is not saved by
// state_dict (a loaded state keeps the scheduler's own).
class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr,
           CyclicLROptions options = {});

 private:
  std::vector<double> get_lr() override;
  double scale(double x) const;
  const char* name() const override { return "CyclicLR"; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  double total_size_, step_ratio_;
  CyclicMode mode_;
  double gamma_;
  std::function<double(double)> scale_fn_;
  bool scale_by_cycle_, cycle_momentum_;
};

// Steps several schedulers of one optimizer together, each on the lr the one before it left
// (a warm-up LinearLR with an ExponentialLR decay, say). It holds references: the schedulers
// must outlive it. state_dict() keeps each one's state.
class ChainedScheduler {
 public:
  explicit ChainedScheduler(std::vector<LRScheduler*> schedulers);
  void step();
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  std::vector<LRScheduler*> schedulers_;
  std::vector<double> last_lr_;
};

// Runs schedulers one after another: schedulers[i + 1] takes over at epoch milestones[i], from
// its own epoch 0 (PyTorch's SequentialLR: a warm-up LinearLR, then a CosineAnnealingLR, say). It
// undoes the constructors' steps of the schedulers it is given (they must have been made on
// `optimizer` just before) and holds references: they must outlive it.
class SequentialLR {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, std::vector<int64_t> milestones);
  void step();
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  std::vector<LRScheduler*> schedulers_;
  std::vector<int64_t> milestones_;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

enum class AnnealStrategy { cos, linear };

// OneCycleLR's settings, PyTorch's defaults. A list holds one value for every group, or one per group.
struct OneCycleLROptions {
  double pct_start = 0.3;  // the share of the steps spent raising the lr
  AnnealStrategy anneal_strategy = AnnealStrategy::cos;
  // Moves the momentum (SGD, RMSprop) or beta1 (Adam, AdamW) against the lr, from max_momentum down to
  // base_momentum while the lr rises, and back.
  bool cycle_momentum = true;
  std::vector<double> base_momentum = {0.85};
  std::vector<double> max_momentum = {0.95};
  double div_factor = 25;         // the starting lr is max_lr / div_factor
  double final_div_factor = 1e4;  // the final lr is the starting lr / final_div_factor
  // Three phases (up, down to the starting lr, down to the final lr) instead of two (up, down to the final lr).
  bool three_phase = false;
};

// The 1cycle policy, stepped once per batch: the lr rises from max_lr / div_factor to max_lr over
// pct_start * total_steps steps, then falls to the final lr by step total_steps - 1 (for E epochs
// of B batches, total_steps = E * B). It replaces each group's lr, and the base lr that later
// schedulers start from, with max_lr / div_factor. Stepping past total_steps is an error, as is
// a phase of no steps (pct_start * total_steps = 1, say) when the schedule reaches it.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, int64_t total_steps, OneCycleLROptions options = {});

 private:
  enum class Lr { initial, peak, final };
  enum class Momentum { base, max };
  // A phase runs from the previous phase's end_step to its own, the lr and the momentum annealed
  // between the values named at its two ends.
  struct Phase {
    double end_step;
    Lr start_lr, end_lr;
    Momentum start_momentum, end_momentum;
  };
  std::vector<double> get_lr() override;
  const char* name() const override { return "OneCycleLR"; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  std::vector<Phase> phases() const;
  double lr_of(size_t group, Lr which) const;
  double momentum_of(size_t group, Momentum which) const;

  int64_t total_steps_;
  double pct_start_;
  AnnealStrategy anneal_strategy_;
  bool cycle_momentum_;
  bool three_phase_;
  std::vector<double> max_lrs_, min_lrs_, base_momentums_, max_momentums_;  // one per group
};

// Stochastic weight averaging's schedule (PyTorch's torch.optim.swa_utils.SWALR): over
// anneal_epochs steps each group's lr is annealed (cosine or linear) from where it was to its
// swa_lr, then held there. swa_lr: one value for every group, or one per group.
class SWALR : public LRScheduler {
 public:
  SWALR(Optimizer& optimizer, std::vector<double> swa_lr, int64_t anneal_epochs = 10,
        AnnealStrategy anneal_strategy = AnnealStrategy::cos);
  const std::vector<double>& swa_lrs() const { return swa_lrs_; }

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "SWALR"; }
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  double anneal(double t) const;

  std::vector<double> swa_lrs_;  // one per group
  int64_t anneal_epochs_;
  AnnealStrategy anneal_strategy_;
};

enum class PlateauMode { min, max };  // whether the metric should fall (a loss) or rise (an accuracy)
enum class ThresholdMode { rel, abs };

// ReduceLROnPlateau's settings, PyTorch's defaults.
struct ReduceLROnPlateauOptions {
  PlateauMode mode = PlateauMode::min;
  double factor = 0.1;    // new lr = max(lr * factor, min_lr)
  int64_t patience = 10;  // epochs without improvement before the lr falls
  // An improvement beats the best by more than threshold: best * (1 -+ threshold) (rel) or best -+ threshold (abs).
  double threshold = 1e-4;
  ThresholdMode threshold_mode = ThresholdMode::rel;
  int64_t cooldown = 0;            // epochs after a reduction that count as neither good nor bad
  // One value for every group, also groups added later (PyTorch's number), or one per group (its
  // list; a group added later is then an error at the next step that reduces the rates).
  std::vector<double> min_lr = {0};
  double eps = 1e-8;                 // a reduction smaller than eps is not made
};

// Lowers every group's lr by `factor` once the metric passed to step() has not improved for more
// than `patience` epochs. Unlike the other schedulers it changes nothing when it is made.
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

  // One epoch's metric (a NaN never improves); the Tensor form takes a one-element tensor, such as a loss.
  void step(double metric);
  void step(const Tensor& metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }

  // The settings and counters as JSON metadata "lr_scheduler", as the other schedulers keep theirs;
  // load_state_dict checks everything before it changes anything.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  bool is_better(double metric) const;

  Optimizer& optimizer_;
  ReduceLROnPlateauOptions options_;
  int64_t last_epoch_ = 0;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t cooldown_counter_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace tandem::optim
