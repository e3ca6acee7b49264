// The table of differentiable ops that gradcheck and gradgradcheck go through, shared by the CPU
// tests (tests/autograd/gradcheck_test.cc) and the [cuda] ones (tests/cuda/gradcheck_test.cc):
// each case is a function of float64 inputs of given shapes, written to run on whichever device
// its inputs are on.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace tandem::testing {

struct GradcheckInput {
  Shape shape;
  double lo = -2, hi = 2;
  bool layout_varies = true;  // also try a non-contiguous layout
  // Where the op has a kink (clamp's bounds, say): values closer than 0.01 are moved 0.02 away,
  // as a central difference across a kink is no derivative (an input drawn 5e-7 from clamp's
  // bound of 1 failed gradcheck once).
  std::vector<double> kinks = {};
  // Values at least 0.09 apart, for max-like ops: two values within the finite difference's step
  // of each other make its derivative fractional (max_pool2d failed so once in about 10^4 runs).
  bool distinct = false;
  // Elements (row-major positions) set to exactly 0, where an op's gradient takes another
  // formula (prod, cumprod): the finite differences then step across the zero.
  std::vector<int64_t> zero_at = {};
};

struct GradcheckCase {
  std::string name;
  std::vector<GradcheckInput> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  bool cpu_only = false;  // moves data between CPU devices
};

const std::vector<GradcheckCase>& gradcheck_cases();

// Float64 inputs requiring grad, on the CPU, in `layout` where the input allows it.
std::vector<Tensor> gradcheck_inputs(const std::vector<GradcheckInput>& specs, Layout layout);

}  // namespace tandem::testing
