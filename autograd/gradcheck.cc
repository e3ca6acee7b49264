#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/factory.h"
#include "kernels/views.h"

namespace tandem::autograd {

namespace {

// Element `flat` (row-major) of a float64 tensor on any device, read and perturbed in place
// (not counted as an in-place write: the tested function sees the same tensor, nudged).
class Element {
 public:
  Element(const Tensor& t, int64_t flat) {
    int64_t offset = t.storage_offset();
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      offset += (flat % t.sizes()[d]) * t.strides()[d];
      flat /= t.sizes()[d];
    }
    view_ = kernels::as_strided(t, {}, {}, offset);
  }
  double get() const { return kernels::item(view_).to_double(); }
  void set(double value) const { kernels::fill_into(view_, value); }

 private:
  Tensor view_;
};

std::vector<double> flat_values(const Tensor& t) {
  Tensor c = kernels::contiguous(kernels::to(t.detach(), Device(kCPU), kFloat64));
  const double* p = static_cast<const double*>(c.data_ptr());
  return std::vector<double>(p, p + c.numel());
}

std::string index_str(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(index);
}

}  // namespace

GradcheckResult gradcheck(const TestedFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                          double rtol) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    TD_CHECK(inputs[i].dtype() == kFloat64, "gradcheck: input ", i, " has dtype ", inputs[i].dtype(),
             "; finite differences need float64");
    checked.push_back(i);
  }
  TD_CHECK(!checked.empty(), "gradcheck: no input requires grad");

  Tensor y = fn(inputs);
  TD_CHECK(y.defined() && is_floating(y.dtype()), "gradcheck: the function must return a floating tensor");
  const int64_t n_out = y.numel();

  // Analytical: one vector-Jacobian product per output element.
  std::vector<Tensor> wrt;
  for (size_t i : checked) wrt.push_back(inputs[i]);
  std::vector<std::vector<std::vector<double>>> analytical(checked.size());  // [input][out][in]
  for (int64_t j = 0; j < n_out; ++j) {
    Tensor seed = zeros(y.sizes(), TensorOptions(y.dtype()).device(y.device()));
    Element(seed, j).set(1);
    std::vector<Tensor> grads;
    if (y.requires_grad()) grads = grad({y}, wrt, {seed}, true, false, true);
    for (size_t c = 0; c < checked.size(); ++c) {
      const Tensor& g = c < grads.size() ? grads[c] : Tensor();
      if (g.defined()) {
        TD_CHECK(g.sizes() == wrt[c].sizes(), "gradcheck: the gradient of input ", checked[c], " has shape ",
                 shape_str(g.sizes()), " but the input has shape ", shape_str(wrt[c].sizes()));
        analytical[c].push_back(flat_values(g));
      } else {
        analytical[c].push_back(std::vector<double>(wrt[c].numel(), 0.0));
      }
    }
  }

  // Numerical: central differences, one input element at a time, perturbed in place.
  GradcheckResult result;
  double worst = -1;
  NoGradGuard no_grad;
  for (size_t c = 0; c < checked.size(); ++c) {
    const Tensor& x = inputs[checked[c]];
    for (int64_t k = 0; k < x.numel(); ++k) {
      const Element v(x, k);
      const double saved = v.get();
      v.set(saved + eps);
      std::vector<double> plus = flat_values(fn(inputs));
      v.set(saved - eps);
      std::vector<double> minus = flat_values(fn(inputs));
      v.set(saved);
      for (int64_t j = 0; j < n_out; ++j) {
        double numerical = (plus[j] - minus[j]) / (2 * eps);
        double a = analytical[c][j][k];
        double excess = std::abs(a - numerical) / (atol + rtol * std::abs(numerical));
        if (std::isnan(a) != std::isnan(numerical)) excess = INFINITY;
        if (excess > worst) {
          worst = excess;
          std::ostringstream out;
          out << "input " << checked[c] << " element " << index_str(k, x.sizes()) << ", output element "
              << index_str(j, y.sizes()) << ": analytical " << a << ", numerical " << numerical << " (atol " << atol
              << ", rtol " << rtol << ")";
          result.report = out.str();
        }
        if (!(excess <= 1)) result.ok = false;
      }
    }
  }
  result.report = (result.ok ? "gradcheck passed; worst element: " : "gradcheck failed; worst element: ") + result.report;
  return result;
}

GradcheckResult gradgradcheck(const TestedFn& fn, const std::vector<Tensor>& inputs, double eps, double atol,
                              double rtol) {
  // The tested function of (inputs, grad_output): the gradients of fn, flattened and joined.
  Tensor y = fn(inputs);
  Tensor grad_output = kernels::to(randn(y.sizes(), kFloat64), y.device(), y.dtype()).requires_grad_(true);
  std::vector<Tensor> all = inputs;
  all.push_back(grad_output);
  const size_t n = inputs.size();
  std::vector<size_t> differentiable;
  for (size_t i = 0; i < n; ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) differentiable.push_back(i);
  }
  auto backward_of_fn = [&fn, n, differentiable](const std::vector<Tensor>& args) {
    AutoGradMode enable(true);  // the numerical pass runs this under no-grad: backward needs a graph
    std::vector<Tensor> ins(args.begin(), args.begin() + static_cast<int64_t>(n));
    Tensor out = fn(ins);
    std::vector<Tensor> wrt;
    for (size_t i : differentiable) wrt.push_back(ins[i]);
    std::vector<Tensor> grads = grad({out}, wrt, {args[n]}, true, true, true);
    // Joined on the output's device (inputs may live on several).
    std::vector<Tensor> parts;
    for (size_t i = 0; i < grads.size(); ++i) {
      parts.push_back(grads[i].defined() ? to(grads[i].reshape({-1}), out.device(), kFloat64)
                                         : zeros({wrt[i].numel()}, TensorOptions(kFloat64).device(out.device())));
    }
    return cat(parts);
  };
  return gradcheck(backward_of_fn, all, eps, atol, rtol);
}

}  // namespace tandem::autograd
