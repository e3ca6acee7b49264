// Grad mode: whether ops record what backward needs. Per thread, on by default.
#pragma once

namespace tandem {

bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// Turns recording off (on) for a scope: `td::NoGradGuard no_grad;` around optimizer updates.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled);
  ~AutoGradMode();
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool previous_;
};

class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

// Turns recording back on for a scope inside a NoGradGuard (torch.enable_grad).
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};

namespace autograd {

// Anomaly detection, as torch.autograd.set_detect_anomaly (process-wide, as PyTorch's): while on
// with check_nan, every backward node's results are checked as it runs, and the first that holds
// a NaN stops the backward with an error naming the node ("Function 'SqrtBackward0' returned nan
// values in its 0th output"), whose name says which forward op it undoes. Each check reads the
// result back to the host: for debugging, not for training runs.
void set_detect_anomaly(bool enabled, bool check_nan = true);
bool is_anomaly_enabled();
bool is_anomaly_check_nan_enabled();

// Anomaly detection on for a scope (torch.autograd.detect_anomaly), then as it was.
class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool check_nan = true);
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool previous_enabled_, previous_check_nan_;
};

}  // namespace autograd

}  // namespace tandem
