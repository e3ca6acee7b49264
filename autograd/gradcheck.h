// gradcheck: compares the gradients backward computes with central finite differences, element
// by element, in float64. The report names the worst element: which input and where, which
// output element, and the two values.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tandem::autograd {

struct GradcheckResult {
  bool ok = true;
  std::string report;  // the worst element, passing or not
  explicit operator bool() const { return ok; }
};

using TestedFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Checks d fn(inputs) / d input for every float64 input that requires grad (the others are
// held constant): |analytical - numerical| <= atol + rtol * |numerical| for every element.
GradcheckResult gradcheck(const TestedFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                          double atol = 1e-5, double rtol = 1e-3);

// The same check on the gradient itself: the backward computation, recorded with
// create_graph, is differentiated against finite differences of backward.
GradcheckResult gradgradcheck(const TestedFn& fn, const std::vector<Tensor>& inputs, double eps = 1e-6,
                              double atol = 1e-5, double rtol = 1e-3);

}  // namespace tandem::autograd
