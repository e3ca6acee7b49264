#include "autograd/grad_mode.h"

namespace tandem {

namespace {
thread_local bool t_grad_enabled = true;
}

bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

AutoGradMode::AutoGradMode(bool enabled) : previous_(t_grad_enabled) { t_grad_enabled = enabled; }
AutoGradMode::~AutoGradMode() { t_grad_enabled = previous_; }

}  // namespace tandem
