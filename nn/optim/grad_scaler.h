// GradScaler: dynamic loss scaling for float16 training, as torch.amp.GradScaler. Gradients of a
// float16 forward underflow where they are small; the loss is multiplied by a large scale before
// backward and the gradients divided by it before the step. A step whose gradients hold an inf or
// a NaN (the scale was too large) is skipped and the scale halved; after growth_interval steps in
// a row without one, the scale doubles.
//
//   td::amp::GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.step(optimizer);  // unscales (unless unscale_ did), steps unless a gradient is not finite
//   scaler.update();
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"
#include "nn/optim/optimizer.h"
#include "nn/state_dict.h"

namespace tandem::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;  // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  int64_t growth_interval = 2000;  // > 0
  bool enabled = true;  // false: every method is a no-op but step(), which steps
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // outputs times the scale (itself when disabled); differentiable, on the outputs' devices. The
  // scale is a 0-dim float32 tensor, so a 0-dim float16 or bfloat16 loss comes back in float32.
  Tensor scale(const Tensor& outputs) const;
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs) const;

  // Divides the gradients of the optimizer's parameters by the scale, in place, and records
  // whether any is inf or NaN. Once per optimizer between update()s, before step(); call it to clip
  // or inspect true gradients. float16 gradients are refused unless allow_fp16 (their unscaled
  // values may underflow): keep parameters in float32 and let autocast cast them.
  void unscale_(optim::Optimizer& optimizer, bool allow_fp16 = false);

  // unscale_ if not done, then optimizer.step() unless a gradient was not finite. Returns whether
  // it stepped. Once per optimizer between update()s; an optimizer none of whose parameters has a
  // gradient is an error, as in PyTorch.
  bool step(optim::Optimizer& optimizer);

  // The scale for the next iteration: backoff_factor times it if any optimizer's step found an
  // inf or NaN, growth_factor times it after growth_interval clean steps in a row. Or new_scale.
  // Unlike PyTorch, which grows only when the count of clean steps equals growth_interval, a
  // count already past a lowered interval (set_growth_interval, load_state_dict) grows at once
  // instead of never again.
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const;  // 1 when disabled
  double get_growth_factor() const { return options_.growth_factor; }
  double get_backoff_factor() const { return options_.backoff_factor; }
  int64_t get_growth_interval() const { return options_.growth_interval; }
  int64_t growth_tracker() const { return growth_tracker_; }  // clean steps since the last change
  bool is_enabled() const { return options_.enabled; }
  void set_growth_factor(double factor);
  void set_backoff_factor(double factor);
  void set_growth_interval(int64_t interval);

  // PyTorch's keys, as metadata: scale, growth_factor, backoff_factor, growth_interval,
  // _growth_tracker; empty when disabled. load_state_dict checks them all before taking any, and
  // does nothing on a disabled scaler.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct PerOptimizer {
    Stage stage = Stage::kReady;
    bool found_inf = false;
    bool checked = false;  // some gradient was looked at
  };

  GradScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  std::unordered_map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace tandem::amp
