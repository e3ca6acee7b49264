// Kumaraswamy: a Beta-like distribution on [0, 1] whose cdf has a closed form, 1 - (1 - x^a)^b, so
// that draws invert it directly (PyTorch builds it as a uniform pushed through three transforms:
// the same map).
#include <limits>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/special.h"
#include "distributions/distributions.h"
#include "distributions/internal.h"

namespace tandem::distributions {

using internal::broadcast_all;
using internal::check_parameter;
using internal::kEulerGamma;
using internal::promoted;
using internal::shape_of;

namespace {
const char* const kPositive = "GreaterThan(lower_bound=0.0)";
const char* const kUnitInterval = "Interval(lower_bound=0.0, upper_bound=1.0)";
}  // namespace

Kumaraswamy::Kumaraswamy(Param concentration1, Param concentration0, std::optional<bool> validate_args)
    : Kumaraswamy(broadcast_all({concentration1, concentration0}, "Kumaraswamy", {"concentration1", "concentration0"}),
                  validate_args) {}

Kumaraswamy::Kumaraswamy(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), concentration1_(params[0]), concentration0_(params[1]) {
  check_parameter(validates(), "Kumaraswamy", "concentration1", concentration1_, [&] { return concentration1_ > 0; },
                  kPositive);
  check_parameter(validates(), "Kumaraswamy", "concentration0", concentration0_, [&] { return concentration0_ > 0; },
                  kPositive);
}

std::shared_ptr<Distribution> Kumaraswamy::expand(const Shape& batch_shape) const {
  return std::make_shared<Kumaraswamy>(concentration1_.expand(batch_shape), concentration0_.expand(batch_shape),
                                       validates());
}

// x = (1 - u^(1/b))^(1/a) for u uniform on [0, 1), with 1 - u^(1/b) as -expm1(log(u) / b): exact
// where u^(1/b) is close to 1 (a large b). u = 0 is raised to the smallest normal number, where
// log(u) would make b's gradient NaN.
Tensor Kumaraswamy::rsample(IntList sample_shape) const {
  const Tensor u = rand(extended_shape(sample_shape), concentration1_.options())
                       .clamp_min(finfo(concentration1_.dtype()).tiny);
  return (-(u.log() / concentration0_).expm1()).pow(concentration1_.reciprocal());
}

Tensor Kumaraswamy::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & (value <= 1); }, kUnitInterval);
  const auto [v, a] = promoted(value, concentration1_);
  const Tensor b = concentration0_.to(a.dtype());
  return a.log() + b.log() + xlogy(a - 1, v) + special::xlog1py(b - 1, -v.pow(a));
}

// 1 - (1 - x^a)^b = -expm1(b log1p(-x^a)).
Tensor Kumaraswamy::cdf(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & (value <= 1); }, kUnitInterval);
  const auto [v, a] = promoted(value, concentration1_);
  const Tensor b = concentration0_.to(a.dtype());
  return -(b * (-v.pow(a)).log1p()).expm1();
}

Tensor Kumaraswamy::icdf(const Tensor& value) const {
  const auto [p, a] = promoted(value, concentration1_);
  const Tensor b = concentration0_.to(a.dtype());
  return (-((-p).log1p() / b).expm1()).pow(a.reciprocal());
}

// (1 - 1/b) + (1 - 1/a) H_b - log(a b), H_b = digamma(b + 1) + Euler's gamma the harmonic number.
Tensor Kumaraswamy::entropy() const {
  const Tensor& a = concentration1_;
  const Tensor& b = concentration0_;
  const Tensor harmonic = (b + 1).digamma() + kEulerGamma;
  return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log();
}

Tensor Kumaraswamy::moment(double n) const {
  const Tensor& a = concentration1_;
  const Tensor& b = concentration0_;
  const Tensor arg = 1 + n / a;
  return b * (arg.lgamma() + b.lgamma() - (arg + b).lgamma()).exp();
}

// Where the density has a single interior or edge maximum (a >= 1 and b >= 1, not the uniform
// a = b = 1), else NaN. Elsewhere the formula sees a = b = 2, so that no NaN reaches the gradient.
Tensor Kumaraswamy::mode() const {
  const Tensor defined = (concentration1_ >= 1) & (concentration0_ >= 1) & ((concentration1_ > 1) | (concentration0_ > 1));
  const Tensor a = where(defined, concentration1_, 2.0), b = where(defined, concentration0_, 2.0);
  return where(defined, ((a - 1) / (a * b - 1)).pow(a.reciprocal()), std::numeric_limits<double>::quiet_NaN());
}

}  // namespace tandem::distributions
