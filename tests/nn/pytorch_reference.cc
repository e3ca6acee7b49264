#include "tests/nn/pytorch_reference.h"

#include <cmath>

#include "tests/testing.h"

namespace tandem::testing {

void set_sine_parameters(nn::Module& m) {
  m.to(kFloat64);
  NoGradGuard no_grad;
  const auto named = m.named_parameters();
  for (size_t k = 0; k < named.size(); ++k) {
    Tensor p = named[k].second;
    p.copy_(sine_ramp(p.sizes(), 0.1 * static_cast<double>(k + 1) + 0.05) * 0.4);
  }
}

void same_as_pytorch(const Tensor& t, const std::vector<double>& first, double sum, const std::string& what) {
  INFO(what);
  REQUIRE(t.defined());
  const Tensor flat = t.detach().flatten();
  REQUIRE(flat.numel() >= static_cast<int64_t>(first.size()));
  check_close(flat.narrow(0, 0, static_cast<int64_t>(first.size())), first, 1e-12, 1e-14, what);
  CHECK(std::abs(flat.sum().item<double>() - sum) <= 1e-12 * (1 + std::abs(sum)));
}

}  // namespace tandem::testing
