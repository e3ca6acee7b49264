#include "autograd/grad_mode.h"

#include <atomic>

namespace tandem {

namespace {
thread_local bool t_grad_enabled = true;
std::atomic<bool> g_anomaly_enabled{false}, g_anomaly_check_nan{true};
}  // namespace

bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

AutoGradMode::AutoGradMode(bool enabled) : previous_(t_grad_enabled) { t_grad_enabled = enabled; }
AutoGradMode::~AutoGradMode() { t_grad_enabled = previous_; }

namespace autograd {

void set_detect_anomaly(bool enabled, bool check_nan) {
  g_anomaly_enabled = enabled;
  g_anomaly_check_nan = check_nan;
}
bool is_anomaly_enabled() { return g_anomaly_enabled; }
bool is_anomaly_check_nan_enabled() { return g_anomaly_enabled && g_anomaly_check_nan; }

DetectAnomalyGuard::DetectAnomalyGuard(bool check_nan)
    : previous_enabled_(g_anomaly_enabled), previous_check_nan_(g_anomaly_check_nan) {
  set_detect_anomaly(true, check_nan);
}
DetectAnomalyGuard::~DetectAnomalyGuard() { set_detect_anomaly(previous_enabled_, previous_check_nan_); }

}  // namespace autograd

}  // namespace tandem
