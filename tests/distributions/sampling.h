// Statistical checks of draws, shared by the distributions' tests: a Kolmogorov-Smirnov statistic
// against a distribution's cdf, and means within a few standard errors.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace tandem::testing {

// sqrt(N) times the Kolmogorov-Smirnov distance between each column of draws [N, B] and the
// distribution's cdf, the largest over the columns. For the right distribution a column exceeds
// 2.7 with probability 1e-6; at N = 40000 draws a cdf off by 0.014 anywhere moves it past that.
inline double ks_statistic(const distributions::Distribution& d, const Tensor& draws) {
  const Tensor sorted = std::get<0>(sort(draws, 0));
  const std::vector<double> cdf = values(d.cdf(sorted));
  const int64_t n = draws.size(0), columns = draws.numel() / n;
  double worst = 0;
  for (int64_t c = 0; c < columns; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      const double f = cdf[i * columns + c];
      worst = std::max({worst, std::abs(static_cast<double>(i + 1) / n - f), std::abs(static_cast<double>(i) / n - f)});
    }
  }
  return worst * std::sqrt(static_cast<double>(n));
}

// The mean over the draws of `per_draw` (a tensor [N, B]), within five standard errors of `want` [B].
inline void check_mean(const Tensor& per_draw, const std::vector<double>& want, const std::string& what) {
  INFO(what);
  const double n = static_cast<double>(per_draw.size(0));
  const std::vector<double> mean = values(per_draw.mean({0})), se = values((per_draw.var({0}) / n).sqrt());
  REQUIRE(mean.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": mean " << mean[i] << ", want " << want[i] << ", standard error " << se[i]);
    CHECK(std::abs(mean[i] - want[i]) <= 5 * se[i]);
  }
}

}  // namespace tandem::testing
