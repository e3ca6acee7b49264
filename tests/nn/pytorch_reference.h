// Comparing a module with PyTorch's on the same parameter values: the values a reference script
// sets by name, and a check of a result against the first values and the sum the script printed.
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"

namespace tandem::testing {

// Converts m to float64 and sets parameter k (in named_parameters() order) to
// 0.4 sin((0.1 (k + 1) + 0.05) i), as the reference scripts do.
void set_sine_parameters(nn::Module& m);

// t's first values (row-major) and the sum of all of them against the reference's, in float64.
void same_as_pytorch(const Tensor& t, const std::vector<double>& first, double sum, const std::string& what);

}  // namespace tandem::testing
