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

}  // namespace tandem
