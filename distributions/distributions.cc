#include "distributions/distributions.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "distributions/internal.h"
#include "distributions/transforms.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::broadcast_all;
using internal::check_parameter;
using internal::is_real;
using internal::is_whole;
using internal::joined;
using internal::kEulerGamma;
using internal::promoted;
using internal::shape_of;
using internal::softplus;
using internal::sum_rightmost;

namespace {

std::atomic<bool> g_validate{true};

const double kLogSqrt2Pi = 0.5 * std::log(2 * std::numbers::pi);
const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

namespace internal {

std::vector<Tensor> broadcast_all(const std::vector<Param>& params, const char* dist,
                                  const std::vector<const char*>& names) {
  const Tensor* first = nullptr;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].is_tensor()) continue;
    const Tensor& t = params[i].tensor();
    TD_CHECK(t.defined(), dist, ": parameter ", names[i], " is an undefined tensor");
    TD_CHECK(is_floating(t.dtype()), dist, ": parameter ", names[i], " must be a floating tensor, got ", t.dtype());
    if (!first) first = &t;
    TD_CHECK(t.device() == first->device(), dist, ": parameter ", names[i], " is on ", t.device(), " but the others on ",
             first->device());
  }
  const TensorOptions options = first ? first->options() : TensorOptions(kFloat32);
  std::vector<Tensor> tensors;
  for (const Param& p : params) tensors.push_back(p.is_tensor() ? p.tensor() : full({}, p.number(), options));
  if (first) {
    DType dtype = first->dtype();
    for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
    for (Tensor& t : tensors) t = t.to(dtype);
  }
  std::vector<Shape> shapes;
  for (const Tensor& t : tensors) shapes.push_back(t.sizes());
  try {
    broadcast_shapes(shapes);
  } catch (const Error& e) {
    std::string listed;
    for (const char* name : names) listed += (listed.empty() ? "" : ", ") + std::string(name);
    TD_FAIL(dist, ": parameters ", listed, " do not broadcast: ", e.what());
  }
  return broadcast_tensors(tensors);
}

void check_parameter(bool validate, const char* dist, const char* name, const Tensor& t,
                     const std::function<Tensor()>& ok, const char* constraint) {
  if (!validate) return;
  NoGradGuard no_grad;
  TD_CHECK(ok().all().item<bool>(), dist, ": expected parameter ", name, " (shape ", shape_str(t.sizes()),
           ") to satisfy the constraint ", constraint, ", but found invalid values");
}

Shape joined(IntList a, IntList b) {
  Shape s = a.vec();
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

std::pair<Tensor, Tensor> promoted(const Tensor& value, const Tensor& parameter) {
  const DType dtype = is_floating(value.dtype()) ? promote_types(value.dtype(), parameter.dtype()) : parameter.dtype();
  return {value.to(dtype), parameter.to(dtype)};
}

}  // namespace internal

// ---- Distribution ----

void Distribution::set_default_validate_args(bool validate) { g_validate = validate; }
bool Distribution::default_validate_args() { return g_validate; }

Distribution::Distribution(Shape batch_shape, Shape event_shape, std::optional<bool> validate_args)
    : batch_shape_(std::move(batch_shape)),
      event_shape_(std::move(event_shape)),
      validate_(validate_args.value_or(g_validate)) {}

Shape Distribution::extended_shape(IntList sample_shape) const {
  return joined(joined(sample_shape, batch_shape_), event_shape_);
}

Tensor Distribution::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  return rsample(sample_shape).detach();
}

Tensor Distribution::rsample(IntList) const {
  TD_FAIL(name(), " does not support rsample: its draws are not differentiable in its parameters (use sample)");
}

void Distribution::not_implemented(const char* what) const {
  TD_FAIL(name(), ": ", what, " is not implemented for this distribution");
}

Tensor Distribution::cdf(const Tensor&) const { not_implemented("cdf"); }
Tensor Distribution::icdf(const Tensor&) const { not_implemented("icdf"); }
Tensor Distribution::entropy() const { not_implemented("entropy"); }
Tensor Distribution::mean() const { not_implemented("mean"); }
Tensor Distribution::mode() const { not_implemented("mode"); }
Tensor Distribution::variance() const { not_implemented("variance"); }
Tensor Distribution::enumerate_support(bool) const { not_implemented("enumerate_support"); }

void Distribution::check_value(const Tensor& value, const std::function<Tensor()>& in_support,
                               const std::string& support) const {
  TD_CHECK(value.defined(), name(), ": the value is an undefined tensor");
  if (!validate_) return;
  const Shape expected = joined(batch_shape_, event_shape_);
  const size_t event = event_shape_.size();
  const Shape& actual = value.sizes();
  bool fits = actual.size() >= event && Shape(actual.end() - static_cast<int64_t>(event), actual.end()) == event_shape_;
  // From the right, each size equals the expected one or one of them is 1 (broadcastable).
  for (size_t k = 1; fits && k <= std::min(actual.size(), expected.size()); ++k) {
    const int64_t a = actual[actual.size() - k], e = expected[expected.size() - k];
    fits = a == e || a == 1 || e == 1;
  }
  TD_CHECK(fits, name(), ": the value's shape ", shape_str(actual), " does not broadcast with batch_shape + ",
           "event_shape ", shape_str(expected));
  NoGradGuard no_grad;
  TD_CHECK(in_support().all().item<bool>(), name(), ": expected the value (shape ", shape_str(actual),
           ") to be within the support (", support, ") of the distribution, but found invalid values");
}

// ---- LocationScale ----

namespace {
std::vector<Tensor> loc_scale(const Param& loc, const Param& scale, const char* dist) {
  return broadcast_all({loc, scale}, dist, {"loc", "scale"});
}
}  // namespace

LocationScale::LocationScale(const char* family, Param loc, Param scale, std::optional<bool> validate_args)
    : LocationScale(family, loc_scale(loc, scale, family), validate_args) {}

LocationScale::LocationScale(const char* family, const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), loc_(params[0]), scale_(params[1]) {
  check_parameter(validates(), family, "loc", loc_, [&] { return is_real(loc_); }, "Real()");
  check_parameter(validates(), family, "scale", scale_, [&] { return scale_ > 0; }, "GreaterThan(lower_bound=0.0)");
}

// ---- Normal ----

Normal::Normal(Param loc, Param scale, std::optional<bool> validate_args)
    : LocationScale("Normal", std::move(loc), std::move(scale), validate_args) {}

std::shared_ptr<Distribution> Normal::expand(const Shape& batch_shape) const {
  return std::make_shared<Normal>(loc_.expand(batch_shape), scale_.expand(batch_shape), validates());
}

Tensor Normal::rsample(IntList sample_shape) const {
  const Tensor eps = randn(extended_shape(sample_shape), loc_.options());
  return loc_ + eps * scale_;
}

Tensor Normal::log_prob(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  const Tensor var = scale_.pow(2);
  return -(value - loc_).pow(2) / (var * 2) - scale_.log() - kLogSqrt2Pi;
}

Tensor Normal::cdf(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  return ((value - loc_) * scale_.reciprocal() / std::numbers::sqrt2).erf().add(1).mul(0.5);
}

Tensor Normal::icdf(const Tensor& value) const {
  return loc_ + scale_ * (value * 2 - 1).erfinv() * std::numbers::sqrt2;
}

Tensor Normal::entropy() const { return scale_.log() + (0.5 + kLogSqrt2Pi); }

// ---- Uniform ----

Uniform::Uniform(Param low, Param high, std::optional<bool> validate_args)
    : Uniform(broadcast_all({low, high}, "Uniform", {"low", "high"}), validate_args) {}

Uniform::Uniform(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), low_(params[0]), high_(params[1]) {
  check_parameter(validates(), "Uniform", "low", low_, [&] { return low_ < high_; }, "LessThan(high) (low < high everywhere)");
}

std::shared_ptr<Distribution> Uniform::expand(const Shape& batch_shape) const {
  return std::make_shared<Uniform>(low_.expand(batch_shape), high_.expand(batch_shape), validates());
}

Tensor Uniform::rsample(IntList sample_shape) const {
  const Tensor u = rand(extended_shape(sample_shape), low_.options());
  return low_ + u * (high_ - low_);
}

Tensor Uniform::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= low_) & (value <= high_); }, "Interval(low, high)");
  const Tensor inside = (low_ <= value).to(low_.dtype()) * (high_ > value).to(low_.dtype());
  return inside.log() - (high_ - low_).log();
}

Tensor Uniform::cdf(const Tensor& value) const {
  check_value(value, [&] { return (value >= low_) & (value <= high_); }, "Interval(low, high)");
  return ((value - low_) / (high_ - low_)).clamp(0, 1);
}

Tensor Uniform::icdf(const Tensor& value) const { return value * (high_ - low_) + low_; }
Tensor Uniform::entropy() const { return (high_ - low_).log(); }
Tensor Uniform::mean() const { return (high_ + low_) / 2; }
Tensor Uniform::mode() const { return full_like(high_, std::numeric_limits<double>::quiet_NaN()); }
Tensor Uniform::variance() const { return (high_ - low_).pow(2) / 12; }

// ---- Exponential ----

Exponential::Exponential(Param rate, std::optional<bool> validate_args)
    : Exponential(broadcast_all({rate}, "Exponential", {"rate"}), validate_args) {}

Exponential::Exponential(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), rate_(params[0]) {
  check_parameter(validates(), "Exponential", "rate", rate_, [&] { return rate_ > 0; }, "GreaterThan(lower_bound=0.0)");
}

std::shared_ptr<Distribution> Exponential::expand(const Shape& batch_shape) const {
  return std::make_shared<Exponential>(rate_.expand(batch_shape), validates());
}

Tensor Exponential::rsample(IntList sample_shape) const {
  Tensor draws = empty(extended_shape(sample_shape), rate_.options());
  {
    NoGradGuard no_grad;
    draws.exponential_();
  }
  return draws / rate_;
}

Tensor Exponential::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value >= 0; }, "GreaterThanEq(lower_bound=0.0)");
  return rate_.log() - rate_ * value;
}

Tensor Exponential::cdf(const Tensor& value) const {
  check_value(value, [&] { return value >= 0; }, "GreaterThanEq(lower_bound=0.0)");
  return 1 - (-rate_ * value).exp();
}

Tensor Exponential::icdf(const Tensor& value) const { return -(-value).log1p() / rate_; }
Tensor Exponential::entropy() const { return 1.0 - rate_.log(); }
Tensor Exponential::mode() const { return zeros_like(rate_); }

// ---- Pareto ----

Pareto::Pareto(Param scale, Param alpha, std::optional<bool> validate_args)
    : Pareto(broadcast_all({scale, alpha}, "Pareto", {"scale", "alpha"}), validate_args) {}

Pareto::Pareto(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), scale_(params[0]), alpha_(params[1]) {
  check_parameter(validates(), "Pareto", "scale", scale_, [&] { return scale_ > 0; }, "GreaterThan(lower_bound=0.0)");
  check_parameter(validates(), "Pareto", "alpha", alpha_, [&] { return alpha_ > 0; }, "GreaterThan(lower_bound=0.0)");
}

std::shared_ptr<Distribution> Pareto::expand(const Shape& batch_shape) const {
  return std::make_shared<Pareto>(scale_.expand(batch_shape), alpha_.expand(batch_shape), validates());
}

Tensor Pareto::rsample(IntList sample_shape) const {
  Tensor draws = empty(extended_shape(sample_shape), alpha_.options());
  {
    NoGradGuard no_grad;
    draws.exponential_();
  }
  return scale_ * (draws / alpha_).exp();
}

// As PyTorch's, through the exponential variate y = log(x / scale) it is made of.
Tensor Pareto::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value >= scale_; }, "GreaterThanEq(lower_bound=scale)");
  const Tensor y = (value / scale_).log();
  return alpha_.log() - alpha_ * y - scale_.log() - y;
}

Tensor Pareto::cdf(const Tensor& value) const {
  check_value(value, [&] { return value >= scale_; }, "GreaterThanEq(lower_bound=scale)");
  return 1 - (-alpha_ * (value / scale_).log()).exp();
}

Tensor Pareto::icdf(const Tensor& value) const { return scale_ * (-(-value).log1p() / alpha_).exp(); }
Tensor Pareto::entropy() const { return (scale_ / alpha_).log() + (1 + alpha_.reciprocal()); }

Tensor Pareto::mean() const {
  const Tensor a = alpha_.clamp_min(1);  // inf at alpha <= 1
  return a * scale_ / (a - 1);
}

Tensor Pareto::variance() const {
  const Tensor a = alpha_.clamp_min(2);  // inf at alpha <= 2
  return scale_.pow(2) * a / ((a - 1).pow(2) * (a - 2));
}

// ---- GeneralizedPareto ----

namespace {
// Where |t| < 1e-3 (t = xi z) the closed forms divide by xi and their gradients lose digits as xi
// goes to 0; these series of log1p(t) / t and expm1(t) / t take over there, exact to rounding.
constexpr double kSeries = 1e-3;
Tensor log1p_over(const Tensor& t) { return 1 + t * (-1.0 / 2 + t * (1.0 / 3 + t * (-1.0 / 4 + t / 5))); }
Tensor expm1_over(const Tensor& t) { return 1 + t * (1.0 / 2 + t * (1.0 / 6 + t * (1.0 / 24 + t / 120))); }
}  // namespace

GeneralizedPareto::GeneralizedPareto(Param loc, Param scale, Param concentration, std::optional<bool> validate_args)
    : GeneralizedPareto(broadcast_all({loc, scale, concentration}, "GeneralizedPareto", {"loc", "scale", "concentration"}),
                        validate_args) {}

GeneralizedPareto::GeneralizedPareto(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), loc_(params[0]), scale_(params[1]), concentration_(params[2]) {
  constexpr const char* dist = "GeneralizedPareto";
  check_parameter(validates(), dist, "loc", loc_, [&] { return is_real(loc_); }, "Real()");
  check_parameter(validates(), dist, "scale", scale_, [&] { return scale_ > 0; }, "GreaterThan(lower_bound=0.0)");
  check_parameter(validates(), dist, "concentration", concentration_, [&] { return is_real(concentration_); },
                  "Real()");
}

std::shared_ptr<Distribution> GeneralizedPareto::expand(const Shape& batch_shape) const {
  return std::make_shared<GeneralizedPareto>(loc_.expand(batch_shape), scale_.expand(batch_shape),
                                             concentration_.expand(batch_shape), validates());
}

void GeneralizedPareto::check_support(const Tensor& value) const {
  check_value(
      value,
      [&] {
        const Tensor upper = where(concentration_ < 0, loc_ - scale_ / concentration_,
                                   std::numeric_limits<double>::infinity());
        return (value >= loc_) & (value <= upper);
      },
      "Interval(lower_bound=loc, upper_bound=loc - scale / concentration where concentration < 0)");
}

Tensor GeneralizedPareto::rsample(IntList sample_shape) const {
  return icdf(rand(extended_shape(sample_shape), loc_.options()));
}

// -log scale - (1/xi + 1) log1p(xi z). At xi = -1 the density is uniform (its coefficient 0 kept
// away from log1p(-1) = -inf at the upper end, as PyTorch's). Each branch sees safe inputs where
// the other is taken, so that no NaN reaches the gradient.
Tensor GeneralizedPareto::log_prob(const Tensor& value) const {
  check_support(value);
  const Tensor z = (value - loc_) / scale_, t = concentration_ * z, small = t.abs() < kSeries;
  const Tensor ts = where(small, t, 0.0), xi = where(small, 1.0, concentration_);
  const Tensor series = z * log1p_over(ts) + ts.log1p();
  const Tensor closed = where(concentration_ == -1, 0.0, (xi.reciprocal() + 1) * where(small, 0.0, t).log1p());
  return -scale_.log() - where(small, series, closed);
}

// 1 - (1 + xi z)^(-1/xi) = -expm1(-log1p(xi z) / xi).
Tensor GeneralizedPareto::cdf(const Tensor& value) const {
  check_support(value);
  const Tensor z = (value - loc_) / scale_, t = concentration_ * z, small = t.abs() < kSeries;
  const Tensor ts = where(small, t, 0.0), xi = where(small, 1.0, concentration_);
  const Tensor log_survival = where(small, -z * log1p_over(ts), -where(small, 0.0, t).log1p() / xi);
  return -log_survival.expm1();
}

// loc + scale expm1(xi L) / xi for L = -log1p(-p); +inf at p = 1 for xi = 0 too (where xi L is
// 0 times infinity).
Tensor GeneralizedPareto::icdf(const Tensor& value) const {
  const Tensor l = -(-value).log1p(), t = concentration_ * l, small = t.abs() < kSeries;
  const Tensor ts = where(small, t, 0.0), xi = where(small, 1.0, concentration_);
  const Tensor x = loc_ + scale_ * where(small, l * expm1_over(ts), where(small, 0.0, t).expm1() / xi);
  return where((value == 1) & (concentration_ == 0), std::numeric_limits<double>::infinity(), x);
}

Tensor GeneralizedPareto::mean() const {
  const Tensor exists = concentration_ < 1, xi = where(exists, concentration_, 0.5);
  return where(exists, loc_ + scale_ / (1 - xi), std::numeric_limits<double>::quiet_NaN());
}

Tensor GeneralizedPareto::variance() const {
  const Tensor exists = concentration_ < 0.5, xi = where(exists, concentration_, 0.25);
  return where(exists, scale_.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi)), std::numeric_limits<double>::quiet_NaN());
}

// ---- Weibull ----

Weibull::Weibull(Param scale, Param concentration, std::optional<bool> validate_args)
    : Weibull(broadcast_all({scale, concentration}, "Weibull", {"scale", "concentration"}), validate_args) {}

Weibull::Weibull(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), scale_(params[0]), concentration_(params[1]) {
  check_parameter(validates(), "Weibull", "scale", scale_, [&] { return scale_ > 0; }, "GreaterThan(lower_bound=0.0)");
  check_parameter(validates(), "Weibull", "concentration", concentration_, [&] { return concentration_ > 0; },
                  "GreaterThan(lower_bound=0.0)");
}

std::shared_ptr<Distribution> Weibull::expand(const Shape& batch_shape) const {
  return std::make_shared<Weibull>(scale_.expand(batch_shape), concentration_.expand(batch_shape), validates());
}

Tensor Weibull::rsample(IntList sample_shape) const {
  Tensor draws = empty(extended_shape(sample_shape), scale_.options());
  {
    NoGradGuard no_grad;
    draws.exponential_();
  }
  return scale_ * draws.pow(concentration_.reciprocal());
}

// As PyTorch's, through the exponential variate e = (x / scale)^k it is made of: its density e^-e
// over the Jacobian of x = scale e^(1/k).
Tensor Weibull::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value > 0; }, "GreaterThan(lower_bound=0.0)");
  const Tensor e = (value / scale_).pow(concentration_);
  const Tensor jacobian = (concentration_.reciprocal() * (value / scale_) / e).abs().log() + scale_.log();
  return -e - jacobian;
}

Tensor Weibull::cdf(const Tensor& value) const {
  // PyTorch checks the exponential variate here, which may be 0.
  check_value(value, [&] { return value >= 0; }, "GreaterThanEq(lower_bound=0.0)");
  return 1 - (-(value / scale_).pow(concentration_)).exp();
}

Tensor Weibull::icdf(const Tensor& value) const {
  return scale_ * (-(-value).log1p()).pow(concentration_.reciprocal());
}

Tensor Weibull::entropy() const {
  const Tensor inverse = concentration_.reciprocal();
  return kEulerGamma * (1 - inverse) + (scale_ * inverse).log() + 1;
}

Tensor Weibull::mean() const { return scale_ * (1 + concentration_.reciprocal()).lgamma().exp(); }

Tensor Weibull::mode() const {
  return scale_ * ((concentration_ - 1) / concentration_).pow(concentration_.reciprocal());
}

Tensor Weibull::variance() const {
  const Tensor inverse = concentration_.reciprocal();
  return scale_.pow(2) * ((1 + 2 * inverse).lgamma().exp() - (2 * (1 + inverse).lgamma()).exp());
}

// ---- Laplace ----

Laplace::Laplace(Param loc, Param scale, std::optional<bool> validate_args)
    : LocationScale("Laplace", std::move(loc), std::move(scale), validate_args) {}

std::shared_ptr<Distribution> Laplace::expand(const Shape& batch_shape) const {
  return std::make_shared<Laplace>(loc_.expand(batch_shape), scale_.expand(batch_shape), validates());
}

Tensor Laplace::rsample(IntList sample_shape) const {
  // u uniform on (-1, 1), open at -1 as PyTorch draws it, so that log1p(-|u|) stays finite.
  Tensor u = empty(extended_shape(sample_shape), loc_.options());
  {
    NoGradGuard no_grad;
    u.uniform_(finfo(loc_.dtype()).eps - 1, 1);
  }
  return loc_ - scale_ * u.sign() * (-u.abs()).log1p();
}

Tensor Laplace::log_prob(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  return -(scale_ * 2).log() - (value - loc_).abs() / scale_;
}

Tensor Laplace::cdf(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  const Tensor d = value - loc_;
  return 0.5 - 0.5 * d.sign() * (-d.abs() / scale_).expm1();
}

Tensor Laplace::icdf(const Tensor& value) const {
  const Tensor term = value - 0.5;
  return loc_ - scale_ * term.sign() * (term.abs() * -2).log1p();
}

Tensor Laplace::entropy() const { return (scale_ * 2).log() + 1; }
Tensor Laplace::stddev() const { return scale_ * std::numbers::sqrt2; }

// ---- Cauchy ----

Cauchy::Cauchy(Param loc, Param scale, std::optional<bool> validate_args)
    : LocationScale("Cauchy", std::move(loc), std::move(scale), validate_args) {}

std::shared_ptr<Distribution> Cauchy::expand(const Shape& batch_shape) const {
  return std::make_shared<Cauchy>(loc_.expand(batch_shape), scale_.expand(batch_shape), validates());
}

Tensor Cauchy::rsample(IntList sample_shape) const {
  Tensor eps = empty(extended_shape(sample_shape), loc_.options());
  {
    NoGradGuard no_grad;
    eps.cauchy_();
  }
  return loc_ + eps * scale_;
}

Tensor Cauchy::log_prob(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  return -std::log(std::numbers::pi) - scale_.log() - ((value - loc_) / scale_).pow(2).log1p();
}

Tensor Cauchy::cdf(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  return ((value - loc_) / scale_).atan() / std::numbers::pi + 0.5;
}

Tensor Cauchy::icdf(const Tensor& value) const { return ((value - 0.5) * std::numbers::pi).tan() * scale_ + loc_; }
Tensor Cauchy::entropy() const { return scale_.log() + std::log(4 * std::numbers::pi); }
Tensor Cauchy::mean() const { return full(batch_shape(), kNaN, loc_.options()); }
Tensor Cauchy::variance() const {
  return full(batch_shape(), std::numeric_limits<double>::infinity(), loc_.options());
}

// ---- LogNormal ----

// The base Normal is not validated itself: LogNormal checks its parameters and values, and names
// itself in the errors.
LogNormal::LogNormal(Param loc, Param scale, std::optional<bool> validate_args)
    : Distribution(loc_scale(loc, scale, "LogNormal")[0].sizes(), {}, validate_args), base_(loc, scale, false) {
  check_parameter(validates(), "LogNormal", "loc", base_.loc(), [&] { return is_real(base_.loc()); }, "Real()");
  check_parameter(validates(), "LogNormal", "scale", base_.scale(), [&] { return base_.scale() > 0; },
                  "GreaterThan(lower_bound=0.0)");
}

std::shared_ptr<Distribution> LogNormal::expand(const Shape& batch_shape) const {
  return std::make_shared<LogNormal>(loc().expand(batch_shape), scale().expand(batch_shape), validates());
}

Tensor LogNormal::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value > 0; }, "GreaterThan(lower_bound=0.0)");
  const Tensor log_value = value.log();
  return base_.log_prob(log_value) - log_value;
}

Tensor LogNormal::cdf(const Tensor& value) const {
  // 0 included (cdf 0), as PyTorch's, which checks only that log(value) is not NaN.
  check_value(value, [&] { return value >= 0; }, "GreaterThanEq(lower_bound=0.0)");
  return base_.cdf(value.log());
}

Tensor LogNormal::mean() const { return (loc() + scale().pow(2) / 2).exp(); }
Tensor LogNormal::mode() const { return (loc() - scale().pow(2)).exp(); }
Tensor LogNormal::variance() const {
  const Tensor scale_sq = scale().pow(2);
  return scale_sq.expm1() * (loc() * 2 + scale_sq).exp();
}

// ---- Gumbel ----

Gumbel::Gumbel(Param loc, Param scale, std::optional<bool> validate_args)
    : LocationScale("Gumbel", std::move(loc), std::move(scale), validate_args) {}

std::shared_ptr<Distribution> Gumbel::expand(const Shape& batch_shape) const {
  return std::make_shared<Gumbel>(loc_.expand(batch_shape), scale_.expand(batch_shape), validates());
}

Tensor Gumbel::rsample(IntList sample_shape) const {
  // u uniform on [tiny, 1 - eps], as PyTorch's base Uniform, so that both logarithms stay finite.
  const double low = finfo(loc_.dtype()).tiny, high = 1 - finfo(loc_.dtype()).eps;
  const Tensor u = rand(extended_shape(sample_shape), loc_.options()) * (high - low) + low;
  return loc_ - scale_ * (-u.log()).log();
}

Tensor Gumbel::log_prob(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  const Tensor y = (loc_ - value) / scale_;
  return (y - y.exp()) - scale_.log();
}

Tensor Gumbel::cdf(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  return (-(-(value - loc_) / scale_).exp()).exp();
}

Tensor Gumbel::icdf(const Tensor& value) const {
  // Through the same uniform on [tiny, 1 - eps] the draws come from, as PyTorch's: finite at 0 and 1.
  const double low = finfo(loc_.dtype()).tiny, high = 1 - finfo(loc_.dtype()).eps;
  const Tensor u = value * (high - low) + low;
  return loc_ - scale_ * (-u.log()).log();
}
Tensor Gumbel::entropy() const { return scale_.log() + (1 + kEulerGamma); }
Tensor Gumbel::mean() const { return loc_ + scale_ * kEulerGamma; }
Tensor Gumbel::stddev() const { return scale_ * (std::numbers::pi / std::sqrt(6.0)); }

// ---- HalfNormal and HalfCauchy ----

template <typename Base>
Folded<Base>::Folded(const char* family, Param scale, std::optional<bool> validate_args)
    : Folded(family, broadcast_all({std::move(scale)}, family, {"scale"}), validate_args) {}

template <typename Base>
Folded<Base>::Folded(const char* family, const std::vector<Tensor>& scale, std::optional<bool> validate_args)
    : Distribution(scale[0].sizes(), {}, validate_args), base_(0.0, scale[0], false) {
  check_parameter(validates(), family, "scale", scale[0], [&] { return scale[0] > 0; }, "GreaterThan(lower_bound=0.0)");
}

template <typename Base>
Tensor Folded<Base>::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value >= 0; }, "GreaterThanEq(lower_bound=0.0)");
  return where(value >= 0, base_.log_prob(value) + std::numbers::ln2, -std::numeric_limits<double>::infinity());
}

template <typename Base>
Tensor Folded<Base>::cdf(const Tensor& value) const {
  check_value(value, [&] { return value >= 0; }, "GreaterThanEq(lower_bound=0.0)");
  return base_.cdf(value) * 2 - 1;
}

template <typename Base>
Tensor Folded<Base>::entropy() const {
  return base_.entropy() - std::numbers::ln2;
}

template <typename Base>
Tensor Folded<Base>::mode() const {
  return zeros_like(scale());
}

template class Folded<Normal>;
template class Folded<Cauchy>;

std::shared_ptr<Distribution> HalfNormal::expand(const Shape& batch_shape) const {
  return std::make_shared<HalfNormal>(scale().expand(batch_shape), validates());
}
Tensor HalfNormal::mean() const { return scale() * std::sqrt(2 / std::numbers::pi); }
Tensor HalfNormal::variance() const { return scale().pow(2) * (1 - 2 / std::numbers::pi); }

std::shared_ptr<Distribution> HalfCauchy::expand(const Shape& batch_shape) const {
  return std::make_shared<HalfCauchy>(scale().expand(batch_shape), validates());
}
Tensor HalfCauchy::mean() const { return full_like(scale(), std::numeric_limits<double>::infinity()); }

// ---- Poisson ----

Poisson::Poisson(Param rate, std::optional<bool> validate_args)
    : Poisson(broadcast_all({rate}, "Poisson", {"rate"}), validate_args) {}

Poisson::Poisson(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), rate_(params[0]) {
  check_parameter(validates(), "Poisson", "rate", rate_, [&] { return rate_ >= 0; }, "GreaterThanEq(lower_bound=0.0)");
}

std::shared_ptr<Distribution> Poisson::expand(const Shape& batch_shape) const {
  return std::make_shared<Poisson>(rate_.expand(batch_shape), validates());
}

Tensor Poisson::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  return poisson(rate_.detach().expand(extended_shape(sample_shape)).contiguous());
}

Tensor Poisson::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & is_whole(value); }, "IntegerGreaterThan(lower_bound=0)");
  const auto [v, rate] = promoted(value, rate_);
  return xlogy(v, rate) - rate - (v + 1).lgamma();
}

// ---- Bernoulli ----

namespace internal {

Tensor clamp_probs(const Tensor& p) {
  const double eps = finfo(p.dtype()).eps;
  return p.clamp(eps, 1 - eps);
}

Tensor probability_tensor(const Param& parameter, Given given, const char* dist) {
  return broadcast_all({parameter}, dist, {given == Given::probs ? "probs" : "logits"})[0];
}

void check_probs_or_logits(bool validate, const char* dist, Given given, const Tensor& parameter) {
  if (given == Given::probs) {
    check_parameter(validate, dist, "probs", parameter, [&] { return (parameter >= 0) & (parameter <= 1); },
                    "Interval(lower_bound=0.0, upper_bound=1.0)");
  } else {
    check_parameter(validate, dist, "logits", parameter, [&] { return is_real(parameter); }, "Real()");
  }
}

void bernoulli_parameters(const Tensor& parameter, Given given, Tensor& probs, Tensor& logits) {
  if (given == Given::probs) {
    probs = parameter;
    const Tensor clamped = clamp_probs(parameter);
    logits = clamped.log() - (-clamped).log1p();
  } else {
    logits = parameter;
    probs = parameter.sigmoid();
  }
}

}  // namespace internal

using internal::bernoulli_parameters;
using internal::check_probs_or_logits;
using internal::clamp_probs;
using internal::probability_tensor;

Bernoulli::Bernoulli(Param parameter, Given given, std::optional<bool> validate_args)
    : Distribution(probability_tensor(parameter, given, "Bernoulli").sizes(), {}, validate_args), given_(given) {
  const Tensor p = probability_tensor(parameter, given, "Bernoulli");
  check_probs_or_logits(validates(), "Bernoulli", given, p);
  bernoulli_parameters(p, given, probs_, logits_);
}

std::shared_ptr<Distribution> Bernoulli::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs_ : logits_;
  return std::make_shared<Bernoulli>(given.expand(batch_shape), given_, validates());
}

Tensor Bernoulli::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  return bernoulli(probs_.detach().expand(extended_shape(sample_shape)).contiguous());
}

Tensor Bernoulli::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value == 0) | (value == 1); }, "Boolean()");
  // -binary_cross_entropy_with_logits(logits, value), stable for logits of any size.
  return -(softplus(logits_) - logits_ * value.to(logits_.dtype()));
}

Tensor Bernoulli::entropy() const { return softplus(logits_) - logits_ * probs_; }

Tensor Bernoulli::mode() const {
  const Tensor rounded = (probs_ >= 0.5).to(probs_.dtype());
  return where(probs_ == 0.5, std::numeric_limits<double>::quiet_NaN(), rounded);
}

Tensor Bernoulli::enumerate_support(bool expand) const {
  Shape shape(batch_shape().size() + 1, 1);
  shape[0] = 2;
  const Tensor values = arange(2, probs_.options()).view(shape);
  return expand ? values.expand(joined({2}, batch_shape())) : values;
}

// ---- Categorical ----

namespace internal {

Shape categorical_batch(const Tensor& parameter, const char* dist) {
  TD_CHECK(parameter.defined() && parameter.dim() >= 1, dist, ": the parameter must have at least one dim ",
           "(the categories, last), got ", parameter.defined() ? shape_str(parameter.sizes()) : std::string("none"));
  return Shape(parameter.sizes().begin(), parameter.sizes().end() - 1);
}

void check_categorical(bool validate, const char* dist, Given given, const Tensor& parameter) {
  TD_CHECK(is_floating(parameter.dtype()), dist, ": ", given == Given::probs ? "probs" : "logits",
           " must be a floating tensor, got ", parameter.dtype());
  TD_CHECK(parameter.size(-1) > 0, dist, ": the parameter has no categories (its last dim is 0)");
  if (given == Given::probs) {
    check_parameter(
        validate, dist, "probs", parameter,
        [&] { return (parameter >= 0).all(-1) & (parameter.sum(-1) > 0) & parameter.sum(-1).isfinite(); },
        "Simplex() (after scaling each row to sum to 1)");
  } else {
    // Checked normalised, as PyTorch's: an infinite logit makes the row NaN.
    check_parameter(validate, dist, "logits", parameter,
                    [&] { return is_real(parameter - parameter.logsumexp({-1}, true)); },
                    "IndependentConstraint(Real(), 1) (after normalising each row)");
  }
}

const Tensor& checked_categorical(const Tensor& parameter, Given given, std::optional<bool> validate_args,
                                  const char* dist) {
  categorical_batch(parameter, dist);
  check_categorical(validate_args.value_or(Distribution::default_validate_args()), dist, given, parameter);
  return parameter;
}

}  // namespace internal

using internal::categorical_batch;

Categorical::Categorical(const Tensor& parameter, Given given, std::optional<bool> validate_args)
    : Distribution(categorical_batch(parameter, "Categorical"), {}, validate_args), given_(given) {
  internal::check_categorical(validates(), "Categorical", given, parameter);
  if (given == Given::probs) {
    probs_ = parameter / parameter.sum(-1, true);
    logits_ = clamp_probs(probs_).log();
  } else {
    logits_ = parameter - parameter.logsumexp({-1}, true);
    probs_ = logits_.softmax(-1);
  }
}

Tensor Categorical::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  const int64_t count = numel_of(sample_shape);
  const Shape shape = extended_shape(sample_shape);
  if (count == 0) return zeros(shape, TensorOptions(kInt64).device(probs_.device()));
  const Tensor rows = probs_.detach().reshape({-1, num_events()});
  return multinomial(rows, count, /*replacement=*/true).t().reshape(shape);
}

std::shared_ptr<Distribution> Categorical::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs_ : logits_;
  Shape shape = batch_shape;
  shape.push_back(num_events());
  return std::make_shared<Categorical>(given.expand(shape), given_, validates());
}

Tensor Categorical::log_prob(const Tensor& value) const {
  check_value(
      value,
      [&] {
        const Tensor wide = value.to(kFloat64);
        return (wide == wide.floor()) & (wide >= 0) & (wide <= static_cast<double>(num_events() - 1));
      },
      "IntegerInterval(lower_bound=0, upper_bound=" + std::to_string(num_events() - 1) + ")");
  std::vector<Tensor> both = broadcast_tensors({value.to(kInt64).unsqueeze(-1), logits_});
  const Tensor index = both[0].narrow(-1, 0, 1);
  return both[1].gather(-1, index).squeeze(-1);
}

Tensor Categorical::entropy() const {
  const Tensor logits = logits_.clamp_min(finfo(logits_.dtype()).min);
  return -(logits * probs_).sum(-1);
}

Tensor Categorical::mean() const {
  return full(batch_shape(), std::numeric_limits<double>::quiet_NaN(), probs_.options());
}
Tensor Categorical::variance() const { return mean(); }
Tensor Categorical::mode() const { return probs_.argmax(-1); }

Tensor Categorical::enumerate_support(bool expand) const {
  Shape shape(batch_shape().size() + 1, 1);
  shape[0] = num_events();
  const Tensor values = arange(num_events(), TensorOptions(kInt64).device(probs_.device())).view(shape);
  return expand ? values.expand(joined({num_events()}, batch_shape())) : values;
}

// ---- Geometric ----

Geometric::Geometric(Param parameter, Given given, std::optional<bool> validate_args)
    : Distribution(probability_tensor(parameter, given, "Geometric").sizes(), {}, validate_args), given_(given) {
  bernoulli_parameters(probability_tensor(parameter, given, "Geometric"), given, probs_, logits_);
  if (given == Given::probs) {
    check_parameter(validates(), "Geometric", "probs", probs_, [&] { return (probs_ > 0) & (probs_ <= 1); },
                    "Interval(lower_bound=0.0, upper_bound=1.0), and positive");
  } else {
    check_parameter(validates(), "Geometric", "logits", logits_, [&] { return is_real(logits_); }, "Real()");
  }
}

std::shared_ptr<Distribution> Geometric::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs_ : logits_;
  return std::make_shared<Geometric>(given.expand(batch_shape), given_, validates());
}

Tensor Geometric::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  const Tensor u = rand(extended_shape(sample_shape), probs_.options()).clamp_min(finfo(probs_.dtype()).tiny);
  return (u.log() / (-probs_.detach()).log1p()).floor();
}

Tensor Geometric::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & is_whole(value); }, "IntegerGreaterThan(lower_bound=0)");
  const auto [v, p] = promoted(value, probs_);
  // 0 * log(0) where probs is 1 and no failure was seen: 0, not NaN.
  const Tensor probs = where((p == 1) & (v == 0), 0.0, p);
  return v * (-probs).log1p() + p.log();
}

Tensor Geometric::entropy() const { return (softplus(logits_) - logits_ * probs_) / probs_; }
Tensor Geometric::mode() const { return zeros_like(probs_); }

// ---- Binomial ----

namespace {
// total_count and the probabilities broadcast together; an integer total_count takes their dtype.
std::vector<Tensor> binomial_parameters(const Param& total_count, const Tensor& parameter, Given given) {
  const char* name = given == Given::probs ? "probs" : "logits";
  const bool integral_count = total_count.is_tensor() && total_count.tensor().defined() &&
                              !is_floating(total_count.tensor().dtype());
  const Param count = integral_count && parameter.defined() ? Param(total_count.tensor().to(parameter.dtype()))
                                                            : total_count;
  return broadcast_all({count, parameter}, "Binomial", {"total_count", name});
}
}  // namespace

Binomial::Binomial(Param total_count, const Tensor& parameter, Given given, std::optional<bool> validate_args)
    : Distribution(binomial_parameters(total_count, parameter, given)[0].sizes(), {}, validate_args), given_(given) {
  const std::vector<Tensor> both = binomial_parameters(total_count, parameter, given);
  total_count_ = both[0];
  bernoulli_parameters(both[1], given, probs_, logits_);
  check_parameter(validates(), "Binomial", "total_count", total_count_,
                  [&] { return (total_count_ >= 0) & is_whole(total_count_); }, "IntegerGreaterThan(lower_bound=0)");
  check_probs_or_logits(validates(), "Binomial", given, given == Given::probs ? probs_ : logits_);
}

std::shared_ptr<Distribution> Binomial::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs_ : logits_;
  return std::make_shared<Binomial>(total_count_.expand(batch_shape), given.expand(batch_shape), given_, validates());
}

Tensor Binomial::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  const Shape shape = extended_shape(sample_shape);
  return binomial(total_count_.detach().expand(shape).contiguous(), probs_.detach().expand(shape).contiguous());
}

Tensor Binomial::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & (value <= total_count_) & is_whole(value); },
              "IntegerInterval(lower_bound=0, upper_bound=total_count)");
  const auto [v, logits] = promoted(value, logits_);
  const Tensor n = total_count_.to(logits.dtype());
  // k log p + (n - k) log(1 - p) = k logit - n softplus(logit), stable for any logit.
  const Tensor normalizer = n * softplus(logits) - (n + 1).lgamma();
  return v * logits - (v + 1).lgamma() - (n - v + 1).lgamma() - normalizer;
}

int64_t Binomial::homogeneous_count(const char* what) const {
  NoGradGuard no_grad;
  const double most = total_count_.max().item<double>(), least = total_count_.min().item<double>();
  TD_CHECK(most == least, "Binomial: ", what, " needs one total_count for the whole batch, got ", least, " to ", most);
  return static_cast<int64_t>(most);
}

Tensor Binomial::entropy() const {
  const Tensor log_prob = this->log_prob(enumerate_support(false));
  return -(log_prob.exp() * log_prob).sum(0);
}

Tensor Binomial::mode() const { return ((total_count_ + 1) * probs_).floor().minimum(total_count_); }

Tensor Binomial::enumerate_support(bool expand) const {
  const int64_t count = homogeneous_count("enumerate_support");
  Shape shape(batch_shape().size() + 1, 1);
  shape[0] = count + 1;
  const Tensor values = arange(count + 1, probs_.options()).view(shape);
  return expand ? values.expand(joined({count + 1}, batch_shape())) : values;
}

// ---- OneHotCategorical ----

namespace {
Shape one_hot_event(const Tensor& parameter, const char* dist = "OneHotCategorical") {
  categorical_batch(parameter, dist);  // checks the parameter's dims
  return {parameter.size(-1)};
}
}  // namespace

OneHotCategorical::OneHotCategorical(const Tensor& parameter, Given given, std::optional<bool> validate_args)
    : Distribution(categorical_batch(parameter, "OneHotCategorical"), one_hot_event(parameter), validate_args),
      categorical_(internal::checked_categorical(parameter, given, validate_args, "OneHotCategorical"), given,
                   validate_args),
      given_(given) {}

std::shared_ptr<Distribution> OneHotCategorical::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs() : logits();
  return std::make_shared<OneHotCategorical>(given.expand(joined(batch_shape, event_shape())), given_, validates());
}

Tensor OneHotCategorical::sample(IntList sample_shape) const {
  const Tensor picks = categorical_.sample(sample_shape);
  return one_hot(picks, categorical_.num_events()).to(probs().dtype());
}

Tensor OneHotCategorical::log_prob(const Tensor& value) const {
  check_value(
      value,
      [&] { return (value.dim() >= 1 ? ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1) : value == 2); },
      "OneHot()");
  return categorical_.log_prob(value.argmax(-1));
}

Tensor OneHotCategorical::mode() const {
  return one_hot(probs().argmax(-1), categorical_.num_events()).to(probs().dtype());
}

Tensor OneHotCategorical::enumerate_support(bool expand) const {
  const int64_t k = categorical_.num_events();
  Shape shape(batch_shape().size() + 2, 1);
  shape.front() = k;
  shape.back() = k;
  const Tensor values = eye(k, -1, probs().options()).view(shape);
  return expand ? values.expand(joined(joined({k}, batch_shape()), {k})) : values;
}

// ---- Multinomial ----

Multinomial::Multinomial(int64_t total_count, const Tensor& parameter, Given given, std::optional<bool> validate_args)
    : Distribution(categorical_batch(parameter, "Multinomial"), one_hot_event(parameter, "Multinomial"), validate_args),
      total_count_(total_count),
      categorical_(internal::checked_categorical(parameter, given, validate_args, "Multinomial"), given, validate_args),
      given_(given) {
  TD_CHECK(total_count >= 0, "Multinomial: total_count must be >= 0, got ", total_count);
}

std::shared_ptr<Distribution> Multinomial::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs() : logits();
  return std::make_shared<Multinomial>(total_count_, given.expand(joined(batch_shape, event_shape())), given_,
                                       validates());
}

// Up to K trials: total_count categories drawn from the Categorical, counted into their slots.
// Beyond: one binomial per category, n_i ~ Binomial(what the ones before left, p_i / (p_i + ... +
// p_K)), the last taking the rest; O(K) draws per sample at any total_count, counted in float64
// (whole up to 2^53) and returned in the probabilities' dtype (float32 counts round above 2^24,
// as PyTorch's).
Tensor Multinomial::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  const Shape shape = extended_shape(sample_shape);
  const int64_t categories = shape.back();
  if (total_count_ == 0 || numel_of(shape) == 0) return zeros(shape, probs().options());
  if (total_count_ <= categories) {
    Tensor counts = zeros(shape, TensorOptions(kInt64).device(probs().device()));
    const Tensor picks = categorical_.sample(joined({total_count_}, sample_shape));  // [n] + sample + batch
    std::vector<int64_t> order;  // the draws' dim moved last
    for (int64_t d = 1; d < picks.dim(); ++d) order.push_back(d);
    order.push_back(0);
    const Tensor index = picks.permute(order);
    scatter_add_(counts, -1, index, ones_like(index));
    return counts.to(probs().dtype());
  }
  const Tensor p = probs().to(kFloat64).expand(shape);
  const Tensor tail = p.flip({-1}).cumsum(-1).flip({-1});  // p_i + ... + p_K
  // Where the tail is 0 so is every count from there on; the last positive p_i gets ratio 1.
  const Tensor ratio = where(tail > 0, (p / tail).clamp(0.0, 1.0), 0.0);
  Tensor left = full(Shape(shape.begin(), shape.end() - 1), static_cast<double>(total_count_), p.options());
  std::vector<Tensor> counts;
  for (int64_t i = 0; i + 1 < categories; ++i) {
    counts.push_back(binomial(left, ratio.select(-1, i).contiguous()));
    left = left - counts.back();
  }
  counts.push_back(left);
  return stack(counts, -1).to(probs().dtype());
}

Tensor Multinomial::log_prob(const Tensor& value) const {
  check_value(
      value,
      [&] {
        const Tensor whole = value.dim() >= 1 ? ((value >= 0) & is_whole(value)).all(-1) : value == -1;
        return whole & (value.sum(-1) <= static_cast<double>(total_count_));
      },
      "Multinomial(upper_bound=" + std::to_string(total_count_) + ")");
  const auto [v, logits] = promoted(value, this->logits());
  // A category of probability 0 that was never drawn adds nothing (0 * -inf would be NaN).
  const Tensor terms = where((v == 0) & (logits == -std::numeric_limits<double>::infinity()), 0.0, logits) * v;
  return (v.sum(-1) + 1).lgamma() - (v + 1).lgamma().sum(-1) + terms.sum(-1);
}

// n H(categorical) - log n! + sum over categories of E[log x_k!], each x_k ~ Binomial(n, p_k).
Tensor Multinomial::entropy() const {
  const double n = static_cast<double>(total_count_);
  const Tensor outer = categorical_.entropy() * n - std::lgamma(n + 1);
  if (total_count_ == 0) return outer;
  Shape shape(batch_shape().size() + 2, 1);
  shape[0] = total_count_;
  const Tensor support = arange(1, total_count_ + 1, 1, probs().options()).view(shape);  // [n, 1..., 1]
  const Tensor binomial_probs = Binomial(n, probs(), Given::probs, false).log_prob(support).exp();
  return outer + (binomial_probs * (support + 1).lgamma()).sum({0, -1});
}

// ---- OneHotCategoricalStraightThrough ----

std::shared_ptr<Distribution> OneHotCategoricalStraightThrough::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs() : logits();
  return std::make_shared<OneHotCategoricalStraightThrough>(given.expand(joined(batch_shape, event_shape())), given_,
                                                            validates());
}

Tensor OneHotCategoricalStraightThrough::rsample(IntList sample_shape) const {
  return sample(sample_shape) + (probs() - probs().detach());
}

// ---- MultivariateNormal ----

namespace {

const char* matrix_name(MultivariateNormal::Matrix kind) {
  switch (kind) {
    case MultivariateNormal::Matrix::covariance: return "covariance_matrix";
    case MultivariateNormal::Matrix::precision: return "precision_matrix";
    case MultivariateNormal::Matrix::scale_tril: return "scale_tril";
  }
  return "?";
}

// [n], loc's last dim (checked: the base's shapes are worked out before the constructor's body).
Shape mvn_event(const Tensor& loc) {
  TD_CHECK(loc.defined(), "MultivariateNormal: loc must be defined");
  TD_CHECK(loc.dim() >= 1, "MultivariateNormal: loc must be at least one-dimensional [..., n], got shape ",
           shape_str(loc.sizes()));
  return {loc.size(-1)};
}

Shape mvn_batch(const Tensor& loc, const Tensor& matrix, MultivariateNormal::Matrix kind) {
  constexpr const char* dist = "MultivariateNormal";
  const int64_t n = mvn_event(loc)[0];
  TD_CHECK(matrix.defined(), dist, ": ", matrix_name(kind), " must be defined");
  TD_CHECK(matrix.dim() >= 2 && matrix.size(-1) == n && matrix.size(-2) == n, dist, ": ", matrix_name(kind),
           " must be [..., n, n] with n = ", n, " (loc's last dim), got ", shape_str(matrix.sizes()));
  TD_CHECK(is_floating(loc.dtype()) && loc.dtype() == matrix.dtype(), dist, ": loc and ", matrix_name(kind),
           " must share a floating dtype, got ", loc.dtype(), " and ", matrix.dtype());
  TD_CHECK(loc.device() == matrix.device(), dist, ": loc is on ", loc.device(), " but ", matrix_name(kind), " on ",
           matrix.device());
  return broadcast_shapes(Shape(matrix.sizes().begin(), matrix.sizes().end() - 2),
                          Shape(loc.sizes().begin(), loc.sizes().end() - 1), dist);
}

}  // namespace

namespace internal {

// The Cholesky factor of P with rows and columns reversed, flipped back and transposed, is the
// inverse of L (PyTorch's route): P itself is never inverted.
Tensor precision_to_scale_tril(const Tensor& p) {
  const Tensor lf = linalg::cholesky(p.flip({-2, -1}));
  const Tensor l_inverse = lf.flip({-2, -1}).transpose(-2, -1);
  const Tensor identity = eye(p.size(-1), -1, p.options()).expand(l_inverse.sizes());
  return linalg::solve_triangular(l_inverse, identity, /*upper=*/false);
}

// Where x has more batch dims than L and its last ones are L's (many values against one
// distribution, say), the extra ones become columns of one right-hand side, so L is not copied
// once per value.
Tensor mahalanobis(const Tensor& l, const Tensor& x) {
  const int64_t n = x.size(-1), l_batch = l.dim() - 2, x_batch = x.dim() - 1, outer = x_batch - l_batch;
  const Shape l_dims(l.sizes().begin(), l.sizes().end() - 2);
  if (outer > 0 && Shape(x.sizes().begin() + outer, x.sizes().end() - 1) == l_dims) {
    // x [outer..., L's batch..., n] -> [L's batch..., n, outer...] -> [L's batch..., n, columns].
    std::vector<int64_t> order;
    for (int64_t d = outer; d < x.dim(); ++d) order.push_back(d);
    for (int64_t d = 0; d < outer; ++d) order.push_back(d);
    const Shape outer_dims(x.sizes().begin(), x.sizes().begin() + outer);
    const Tensor columns = x.permute(order).reshape(joined(joined(l_dims, {n}), {-1}));
    const Tensor squares = linalg::solve_triangular(l, columns, /*upper=*/false).pow(2).sum(-2);  // [L's batch..., P]
    // [L's batch..., outer...] -> [outer..., L's batch...].
    std::vector<int64_t> back;
    for (int64_t d = l_batch; d < l_batch + outer; ++d) back.push_back(d);
    for (int64_t d = 0; d < l_batch; ++d) back.push_back(d);
    return squares.reshape(joined(l_dims, outer_dims)).permute(back);
  }
  const Shape batch = broadcast_shapes(l_dims, Shape(x.sizes().begin(), x.sizes().end() - 1), "MultivariateNormal");
  const Tensor lb = l.expand(joined(batch, {n, n})), xb = x.expand(joined(batch, {n})).unsqueeze(-1);
  return linalg::solve_triangular(lb, xb, /*upper=*/false).squeeze(-1).pow(2).sum(-1);
}

Tensor half_log_det(const Tensor& l) { return l.diagonal(0, -2, -1).log().sum(-1); }

// Symmetric as torch.isclose(M, M^T) tells it (atol 1e-6, rtol 1e-5), and with a Cholesky factor.
Tensor is_positive_definite(const Tensor& m) {
  const Tensor transposed = m.transpose(-2, -1);
  const Tensor symmetric = ((m - transposed).abs() <= transposed.abs() * 1e-5 + 1e-6).all(-1).all(-1);
  return symmetric & (std::get<1>(linalg::cholesky_ex(m.detach())) == 0);
}

Tensor scale_tril_of(const Tensor& matrix, MultivariateNormal::Matrix kind, bool validate, const char* dist) {
  using Matrix = MultivariateNormal::Matrix;
  if (kind == Matrix::scale_tril) {
    check_parameter(
        validate, dist, "scale_tril", matrix,
        [&] { return (matrix.tril() == matrix).all() & (matrix.diagonal(0, -2, -1) > 0).all(); }, "LowerCholesky()");
    return matrix;
  }
  check_parameter(validate, dist, matrix_name(kind), matrix, [&] { return is_positive_definite(matrix); },
                  "PositiveDefinite()");
  return kind == Matrix::covariance ? linalg::cholesky(matrix) : precision_to_scale_tril(matrix);
}

}  // namespace internal

using internal::half_log_det;
using internal::mahalanobis;

MultivariateNormal::MultivariateNormal(const Tensor& loc, const Tensor& matrix, Matrix kind,
                                       std::optional<bool> validate_args)
    : Distribution(mvn_batch(loc, matrix, kind), mvn_event(loc), validate_args) {
  constexpr const char* dist = "MultivariateNormal";
  const int64_t n = loc.size(-1);
  check_parameter(validates(), dist, "loc", loc, [&] { return is_real(loc); }, "IndependentConstraint(Real(), 1)");
  scale_tril_ = internal::scale_tril_of(matrix, kind, validates(), dist);
  loc_ = loc.expand(joined(batch_shape(), {n}));
}

std::shared_ptr<Distribution> MultivariateNormal::expand(const Shape& batch_shape) const {
  return std::make_shared<MultivariateNormal>(loc_.expand(joined(batch_shape, event_shape())), scale_tril_,
                                              Matrix::scale_tril, validates());
}

Tensor MultivariateNormal::rsample(IntList sample_shape) const {
  const Tensor eps = randn(extended_shape(sample_shape), loc_.options());
  return loc_ + scale_tril_.matmul(eps.unsqueeze(-1)).squeeze(-1);
}

Tensor MultivariateNormal::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value.dim() >= 1 ? is_real(value).all(-1) : is_real(value); },
              "IndependentConstraint(Real(), 1)");
  const double n = static_cast<double>(event_shape()[0]);
  const Tensor m = mahalanobis(scale_tril_, value - loc_);
  return -0.5 * (m + n * std::log(2 * std::numbers::pi)) - half_log_det(scale_tril_);
}

Tensor MultivariateNormal::entropy() const {
  const double n = static_cast<double>(event_shape()[0]);
  const Tensor h = half_log_det(scale_tril_) + 0.5 * n * (1.0 + std::log(2 * std::numbers::pi));
  return h.expand(batch_shape());
}

Tensor MultivariateNormal::variance() const {
  return scale_tril_.pow(2).sum(-1).expand(joined(batch_shape(), event_shape()));
}

Tensor MultivariateNormal::scale_tril() const {
  const int64_t n = event_shape()[0];
  return scale_tril_.expand(joined(batch_shape(), {n, n}));
}

Tensor MultivariateNormal::covariance_matrix() const {
  const int64_t n = event_shape()[0];
  return scale_tril_.matmul(scale_tril_.transpose(-2, -1)).expand(joined(batch_shape(), {n, n}));
}

Tensor MultivariateNormal::precision_matrix() const {
  const int64_t n = event_shape()[0];
  return cholesky_inverse(scale_tril_).expand(joined(batch_shape(), {n, n}));
}

// ---- Independent ----

namespace {
std::pair<Shape, Shape> independent_shapes(const std::shared_ptr<const Distribution>& base, int64_t n) {
  TD_CHECK(base != nullptr, "Independent: the base distribution is null");
  const Shape& batch = base->batch_shape();
  TD_CHECK(n >= 0 && n <= static_cast<int64_t>(batch.size()), "Independent: reinterpreted_batch_ndims (", n,
           ") must be in [0, ", batch.size(), "], the dims of ", base->name(), "'s batch_shape ", shape_str(batch));
  const auto cut = batch.end() - n;
  return {Shape(batch.begin(), cut), joined(Shape(cut, batch.end()), base->event_shape())};
}
}  // namespace

Independent::Independent(std::shared_ptr<const Distribution> base, int64_t reinterpreted_batch_ndims,
                         std::optional<bool> validate_args)
    : Distribution(independent_shapes(base, reinterpreted_batch_ndims).first,
                   independent_shapes(base, reinterpreted_batch_ndims).second,
                   validate_args.value_or(base ? base->validates() : default_validate_args())),
      base_(std::move(base)),
      ndims_(reinterpreted_batch_ndims) {}

std::shared_ptr<Distribution> Independent::expand(const Shape& batch_shape) const {
  const Shape& base_batch = base_->batch_shape();
  const Shape kept(base_batch.end() - ndims_, base_batch.end());
  return std::make_shared<Independent>(base_->expand(joined(batch_shape, kept)), ndims_, validates());
}

Tensor Independent::log_prob(const Tensor& value) const { return sum_rightmost(base_->log_prob(value), ndims_); }

Tensor Independent::enumerate_support(bool expand) const {
  TD_CHECK(has_enumerate_support(), "Independent: enumerate_support needs a base that has one and no ",
           "reinterpreted dims (", ndims_, " here)");
  return base_->enumerate_support(expand);
}
Tensor Independent::entropy() const { return sum_rightmost(base_->entropy(), ndims_); }

// ---- MixtureSameFamily ----

namespace {
Shape mixture_batch(const std::shared_ptr<const Categorical>& mixture,
                    const std::shared_ptr<const Distribution>& component) {
  TD_CHECK(mixture != nullptr && component != nullptr, "MixtureSameFamily: the mixture and the component ",
           "distributions must not be null");
  const Shape& components = component->batch_shape();
  TD_CHECK(!components.empty(), "MixtureSameFamily: the component distribution needs a batch dim of components ",
           "(its last), got batch_shape []");
  TD_CHECK(components.back() == mixture->num_events(), "MixtureSameFamily: the mixture has ", mixture->num_events(),
           " categories but the component distribution ", components.back(), " components (its batch_shape ",
           shape_str(components), ")");
  const Shape batch(components.begin(), components.end() - 1);
  const Shape& weights = mixture->batch_shape();
  TD_CHECK(broadcast_shapes(weights, batch, "MixtureSameFamily") == batch, "MixtureSameFamily: the mixture's ",
           "batch_shape ", shape_str(weights), " does not broadcast to the components' ", shape_str(batch));
  return batch;
}
}  // namespace

MixtureSameFamily::MixtureSameFamily(std::shared_ptr<const Categorical> mixture,
                                     std::shared_ptr<const Distribution> component, std::optional<bool> validate_args)
    : Distribution(mixture_batch(mixture, component), component ? component->event_shape() : Shape{}, validate_args),
      mixture_(std::move(mixture)),
      component_(std::move(component)) {}

std::shared_ptr<Distribution> MixtureSameFamily::expand(const Shape& batch_shape) const {
  Shape with_components = batch_shape;
  with_components.push_back(mixture_->num_events());
  return std::make_shared<MixtureSameFamily>(std::dynamic_pointer_cast<const Categorical>(mixture_->expand(batch_shape)),
                                             component_->expand(with_components), validates());
}

Tensor MixtureSameFamily::weights(const Tensor& probs) const {
  Shape shape = probs.sizes();
  shape.insert(shape.end(), event_shape().size(), 1);
  return probs.view(shape);
}

Tensor MixtureSameFamily::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  const int64_t k_dim = static_cast<int64_t>(sample_shape.size() + batch_shape().size());
  // The mixture expanded to the whole batch first, so that each batch element picks on its own.
  const Tensor picks = mixture_->expand(batch_shape())->sample(sample_shape);  // [S, B]
  const Tensor draws = component_->sample(sample_shape);                                           // [S, B, K, E]
  Shape index_shape = picks.sizes();
  index_shape.push_back(1);
  index_shape.insert(index_shape.end(), event_shape().size(), 1);
  Shape full = index_shape;
  for (size_t e = 0; e < event_shape().size(); ++e) full[full.size() - event_shape().size() + e] = event_shape()[e];
  const Tensor index = picks.reshape(index_shape).expand(full).contiguous();
  return draws.gather(k_dim, index).squeeze(k_dim);
}

Tensor MixtureSameFamily::log_prob(const Tensor& value) const {
  // The shape is checked here; the support by the component distribution's own validation.
  check_value(value, [&] { return value == value; }, "Real()");
  const int64_t pad = -1 - static_cast<int64_t>(event_shape().size());
  const Tensor per_component = component_->log_prob(value.unsqueeze(pad));  // [S, B, K]
  return (per_component + mixture_->logits().log_softmax(-1)).logsumexp({-1});
}

Tensor MixtureSameFamily::cdf(const Tensor& value) const {
  const int64_t pad = -1 - static_cast<int64_t>(event_shape().size());
  return (component_->cdf(value.unsqueeze(pad)) * mixture_->probs()).sum(-1);
}

Tensor MixtureSameFamily::mean() const {
  const int64_t k_dim = -1 - static_cast<int64_t>(event_shape().size());
  return (weights(mixture_->probs()) * component_->mean()).sum(k_dim);
}

Tensor MixtureSameFamily::variance() const {
  // The law of total variance: E[Var(Y | X)] + Var(E[Y | X]).
  const int64_t k_dim = -1 - static_cast<int64_t>(event_shape().size());
  const Tensor w = weights(mixture_->probs());
  const Tensor spread = (component_->mean() - mean().unsqueeze(k_dim)).pow(2);
  return (w * component_->variance()).sum(k_dim) + (w * spread).sum(k_dim);
}

}  // namespace tandem::distributions
