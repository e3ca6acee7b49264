// Learning-rate schedulers (StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LinearLR,
// LambdaLR): PyTorch's torch.optim.lr_scheduler,
// with its recursive update rules, so that the sequence of learning rates is PyTorch's.
//
// As in PyTorch, constructing a scheduler takes its first step (epoch 0), which may already set
// the optimizer's lr (LinearLR multiplies it by start_factor); call step() after each
// optimizer.step(). To resume: construct the optimizer and the scheduler, then load the
// optimizer's state_dict (it holds the groups' lr) and the scheduler's.
#pragma once

#include <cstdint>
#include <functional>
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
  virtual const char* name() const = 0;
  virtual void hyperparameters_to_json(nlohmann::json& out) const = 0;
  virtual void hyperparameters_from_json(const nlohmann::json& in) = 0;  // validates too

  std::vector<double> group_lrs() const;
  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool is_initial_ = false;  // inside the constructor's step

 private:
  std::vector<double> last_lr_;
};

// lr *= gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 private:
  std::vector<double> get_lr() override;
  const char* name() const override { return "StepLR"; }
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
  void hyperparameters_to_json(nlohmann::json& out) const override;
  void hyperparameters_from_json(const nlohmann::json& in) override;
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

}  // namespace tandem::optim
