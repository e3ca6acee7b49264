// Continuous relaxations of the discrete distributions: ContinuousBernoulli (a proper density on
// [0, 1] for values a Bernoulli likelihood is wrongly applied to), and the Concrete / Gumbel-softmax
// family (Maddison et al., 2017; Jang et al., 2017): LogitRelaxedBernoulli and RelaxedBernoulli,
// ExpRelaxedCategorical and RelaxedOneHotCategorical, whose draws tend to Bernoulli and one-hot
// draws as the temperature goes to 0 and are differentiable in the parameters.
#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "distributions/distributions.h"
#include "distributions/internal.h"
#include "distributions/transforms.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::bernoulli_parameters;
using internal::broadcast_all;
using internal::check_parameter;
using internal::check_probs_or_logits;
using internal::clamp_probs;
using internal::is_real;
using internal::probability_tensor;
using internal::softplus;

namespace {

// The temperature as a tensor of `batch`'s dtype and device and shape (the batch shape), which it
// must broadcast to.
Tensor temperature_tensor(const Param& temperature, const Tensor& batch, const char* dist) {
  if (temperature.is_tensor() && temperature.tensor().defined()) {
    const Shape& given = temperature.tensor().sizes();
    bool fits = given.size() <= static_cast<size_t>(batch.dim());
    for (size_t k = 1; fits && k <= given.size(); ++k) {
      const int64_t size = given[given.size() - k];
      fits = size == 1 || size == batch.size(-static_cast<int64_t>(k));
    }
    TD_CHECK(fits, dist, ": the temperature's shape ", shape_str(given), " does not broadcast to the batch shape ",
             shape_str(batch.sizes()));
  }
  return broadcast_all({temperature, batch}, dist, {"temperature", "the batch"})[0].to(batch.dtype());
}

void check_temperature(bool validate, const char* dist, const Tensor& temperature) {
  check_parameter(validate, dist, "temperature", temperature, [&] { return temperature > 0; },
                  "GreaterThan(lower_bound=0.0)");
}

Shape categorical_event(const Tensor& parameter, const char* dist) {
  internal::categorical_batch(parameter, dist);  // checks the parameter's dims
  return {parameter.size(-1)};
}

const char* const kUnitInterval = "Interval(lower_bound=0.0, upper_bound=1.0)";

}  // namespace

// ---- ContinuousBernoulli ----

ContinuousBernoulli::ContinuousBernoulli(Param parameter, Given given, std::optional<bool> validate_args,
                                         std::pair<double, double> lims)
    : Distribution(probability_tensor(parameter, given, "ContinuousBernoulli").sizes(), {}, validate_args),
      given_(given),
      lims_(lims) {
  const Tensor p = probability_tensor(parameter, given, "ContinuousBernoulli");
  TD_CHECK(lims.first < 0.5 && 0.5 < lims.second, "ContinuousBernoulli: lims must enclose 0.5, got (", lims.first,
           ", ", lims.second, ")");
  check_probs_or_logits(validates(), "ContinuousBernoulli", given, p);
  if (given == Given::probs) {
    probs_ = clamp_probs(p);
    logits_ = probs_.log() - (-probs_).log1p();
    natural_ = logits_;
  } else {
    logits_ = p;
    probs_ = clamp_probs(p.sigmoid());
    // The logits of the clamped probs, which the moments and log C describe, without rounding the
    // logits through probs.
    const double eps = finfo(p.dtype()).eps, bound = std::log1p(-eps) - std::log(eps);
    natural_ = p.clamp(-bound, bound);
  }
}

std::shared_ptr<Distribution> ContinuousBernoulli::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs_ : logits_;
  return std::make_shared<ContinuousBernoulli>(given.expand(batch_shape), given_, validates(), lims_);
}

Tensor ContinuousBernoulli::outside_lims() const { return (probs_ <= lims_.first) | (probs_ > lims_.second); }

Tensor ContinuousBernoulli::cut_probs() const { return where(outside_lims(), probs_, lims_.first); }

// log C(p) = log |log1p(-p) - log p| - log |1 - 2p|, and its expansion around p = 1/2.
Tensor ContinuousBernoulli::log_normalizer() const {
  const Tensor cut = cut_probs();
  const Tensor below = where(cut <= 0.5, cut, 0.0), above = where(cut >= 0.5, cut, 1.0);
  const Tensor closed = ((-cut).log1p() - cut.log()).abs().log() -
                        where(cut <= 0.5, (-2 * below).log1p(), (2 * above - 1).log());
  const Tensor x = (probs_ - 0.5).pow(2);
  const Tensor taylor = std::log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x;
  return where(outside_lims(), closed, taylor);
}

Tensor ContinuousBernoulli::mean() const {
  const Tensor cut = cut_probs();
  const Tensor closed = cut / (2 * cut - 1) + ((-cut).log1p() - cut.log()).reciprocal();
  const Tensor x = probs_ - 0.5;
  const Tensor taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x;
  return where(outside_lims(), closed, taylor);
}

// In lambda = logits the variance is 1 / lambda^2 - 1 / (4 sinh^2(lambda / 2)), two terms that
// cancel near 0, so below |lambda| = 0.25 its series takes over (exact to 1e-14 on both sides).
// PyTorch's closed form in probs cancels the same way and loses up to 1e-10 next to its band.
Tensor ContinuousBernoulli::variance() const {
  const Tensor small = natural_.abs() < 0.25;
  const Tensor lambda = where(small, 1.0, natural_);
  const Tensor closed = lambda.pow(-2) - (lambda / 2).sinh().pow(-2) / 4;
  const Tensor x = natural_.pow(2);
  const Tensor series = 1.0 / 12 + x * (-1.0 / 240 + x * (1.0 / 6048 + x * (-1.0 / 172800 + x / 5322240)));
  return where(small, series, closed);
}

Tensor ContinuousBernoulli::rsample(IntList sample_shape) const {
  const Tensor u = rand(extended_shape(sample_shape), probs_.options());
  return icdf(u);
}

// -binary_cross_entropy_with_logits(logits, x) + log C.
Tensor ContinuousBernoulli::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & (value <= 1); }, kUnitInterval);
  return -(softplus(logits_) - logits_ * value) + log_normalizer();
}

// With lambda = logits the density is proportional to e^(lambda x), so the cdf is
// expm1(lambda x) / expm1(lambda) and its inverse log1p(u expm1(lambda)) / lambda: exact for any
// lambda but 0, with no band around p = 1/2. Where |lambda| < 1e-5 the gradient of those forms
// would lose digits (two terms of size 1 / lambda cancel), and their expansions to lambda^2 take
// over, exact to 1e-15 there. PyTorch's cdf and icdf are x and u inside its lims: off by up to
// 1e-3, and with no gradient in the parameter there (rsample's included).
namespace {
constexpr double kExpansion = 1e-5;
Tensor small_logits(const Tensor& lambda) { return lambda.abs() < kExpansion; }
// lambda where it is not small, 1 elsewhere (the closed forms' unused branch stays finite).
Tensor cut_logits(const Tensor& lambda) { return where(small_logits(lambda), 1.0, lambda); }
}  // namespace

Tensor ContinuousBernoulli::cdf(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & (value <= 1); }, kUnitInterval);
  const Tensor lambda = cut_logits(natural_);
  const Tensor closed = (lambda * value).expm1() / lambda.expm1();
  const Tensor expansion = value + natural_ * value * (value - 1) / 2 +
                           natural_.pow(2) * value * (value - 1) * (2 * value - 1) / 12;
  const Tensor inside = where(small_logits(natural_), expansion, closed);
  return where(value <= 0, 0.0, where(value >= 1, 1.0, inside));
}

Tensor ContinuousBernoulli::icdf(const Tensor& value) const {
  const Tensor lambda = cut_logits(natural_);
  const Tensor closed = (value * lambda.expm1()).log1p() / lambda;
  const Tensor expansion = value + natural_ * value * (1 - value) / 2 +
                           natural_.pow(2) * value * (1 - value) * (1 - 2 * value) / 6;
  return where(small_logits(natural_), expansion, closed);
}

Tensor ContinuousBernoulli::entropy() const {
  const Tensor log_q = (-probs_).log1p();
  return mean() * (log_q - probs_.log()) - log_normalizer() - log_q;
}

// ---- LogitRelaxedBernoulli ----

LogitRelaxedBernoulli::LogitRelaxedBernoulli(Param temperature, Param parameter, Given given,
                                             std::optional<bool> validate_args)
    : Distribution(probability_tensor(parameter, given, "LogitRelaxedBernoulli").sizes(), {}, validate_args),
      given_(given) {
  constexpr const char* dist = "LogitRelaxedBernoulli";
  const Tensor p = probability_tensor(parameter, given, dist);
  temperature_ = temperature_tensor(temperature, p, dist);
  check_temperature(validates(), dist, temperature_);
  check_probs_or_logits(validates(), dist, given, p);
  bernoulli_parameters(p, given, probs_, logits_);
}

std::shared_ptr<Distribution> LogitRelaxedBernoulli::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs_ : logits_;
  return std::make_shared<LogitRelaxedBernoulli>(temperature_.expand(batch_shape), given.expand(batch_shape), given_,
                                                 validates());
}

// (logit(u) + logit(p)) / temperature for u uniform, both clamped into [eps, 1 - eps].
Tensor LogitRelaxedBernoulli::rsample(IntList sample_shape) const {
  const Shape shape = extended_shape(sample_shape);
  const Tensor p = clamp_probs(probs_.expand(shape));
  const Tensor u = clamp_probs(rand(shape, probs_.options()));
  return (u.log() - (-u).log1p() + p.log() - (-p).log1p()) / temperature_;
}

Tensor LogitRelaxedBernoulli::log_prob(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  const Tensor diff = logits_ - value * temperature_;
  return temperature_.log() + diff - 2 * softplus(diff);
}

// ---- ExpRelaxedCategorical ----

ExpRelaxedCategorical::ExpRelaxedCategorical(Param temperature, const Tensor& parameter, Given given,
                                             std::optional<bool> validate_args)
    : Distribution(internal::categorical_batch(parameter, "ExpRelaxedCategorical"),
                   categorical_event(parameter, "ExpRelaxedCategorical"), validate_args),
      categorical_(internal::checked_categorical(parameter, given, validate_args, "ExpRelaxedCategorical"), given,
                   validate_args),
      given_(given) {
  constexpr const char* dist = "ExpRelaxedCategorical";
  temperature_ = temperature_tensor(temperature, categorical_.logits().select(-1, 0), dist);
  check_temperature(validates(), dist, temperature_);
}

std::shared_ptr<Distribution> ExpRelaxedCategorical::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs() : logits();
  Shape shape = batch_shape;
  shape.push_back(event_shape()[0]);
  return std::make_shared<ExpRelaxedCategorical>(temperature_.expand(batch_shape), given.expand(shape), given_,
                                                 validates());
}

// log_softmax((logits + g) / temperature), g Gumbel noise -log(-log u).
Tensor ExpRelaxedCategorical::rsample(IntList sample_shape) const {
  const Tensor u = clamp_probs(rand(extended_shape(sample_shape), logits().options()));
  const Tensor scores = (logits() - (-u.log()).log()) / temperature_.unsqueeze(-1);
  return scores - scores.logsumexp({-1}, true);
}

// log (K - 1)! + (K - 1) log t + sum_k (s_k - logsumexp(s)), s = logits - t x.
Tensor ExpRelaxedCategorical::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value.dim() >= 1 ? is_real(value).all(-1) : is_real(value); },
              "IndependentConstraint(Real(), 1)");
  const double k = static_cast<double>(event_shape()[0]);
  const Tensor log_scale = std::lgamma(k) + (k - 1) * temperature_.log();
  const Tensor score = logits() - value * temperature_.unsqueeze(-1);
  return (score - score.logsumexp({-1}, true)).sum(-1) + log_scale;
}

// ---- RelaxedBernoulli ----

namespace {
// The base distributions, their parameters checked first under the outer distribution's name.
std::shared_ptr<const LogitRelaxedBernoulli> logit_base(const Param& temperature, const Param& parameter, Given given,
                                                        std::optional<bool> validate_args) {
  constexpr const char* dist = "RelaxedBernoulli";
  const bool validate = validate_args.value_or(Distribution::default_validate_args());
  const Tensor p = probability_tensor(parameter, given, dist);
  check_temperature(validate, dist, temperature_tensor(temperature, p, dist));
  check_probs_or_logits(validate, dist, given, p);
  return std::make_shared<LogitRelaxedBernoulli>(temperature, parameter, given, validate_args);
}

std::shared_ptr<const ExpRelaxedCategorical> exp_base(const Param& temperature, const Tensor& parameter, Given given,
                                                      std::optional<bool> validate_args) {
  constexpr const char* dist = "RelaxedOneHotCategorical";
  internal::checked_categorical(parameter, given, validate_args, dist);
  const bool validate = validate_args.value_or(Distribution::default_validate_args());
  check_temperature(validate, dist, temperature_tensor(temperature, parameter.select(-1, 0), dist));
  return std::make_shared<ExpRelaxedCategorical>(temperature, parameter, given, validate_args);
}
}  // namespace

RelaxedBernoulli::RelaxedBernoulli(Param temperature, Param parameter, Given given,
                                   std::optional<bool> validate_args)
    : TransformedDistribution(logit_base(temperature, parameter, given, validate_args),
                              {std::make_shared<SigmoidTransform>()}, validate_args),
      given_(given) {}

const LogitRelaxedBernoulli& RelaxedBernoulli::logit_dist() const {
  return static_cast<const LogitRelaxedBernoulli&>(base_dist());
}

std::shared_ptr<Distribution> RelaxedBernoulli::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs() : logits();
  return std::make_shared<RelaxedBernoulli>(temperature().expand(batch_shape), given.expand(batch_shape), given_,
                                            validates());
}

// ---- RelaxedOneHotCategorical ----

RelaxedOneHotCategorical::RelaxedOneHotCategorical(Param temperature, const Tensor& parameter, Given given,
                                                   std::optional<bool> validate_args)
    : TransformedDistribution(exp_base(temperature, parameter, given, validate_args),
                              {std::make_shared<ExpTransform>()}, validate_args),
      given_(given) {}

const ExpRelaxedCategorical& RelaxedOneHotCategorical::log_dist() const {
  return static_cast<const ExpRelaxedCategorical&>(base_dist());
}

std::shared_ptr<Distribution> RelaxedOneHotCategorical::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs() : logits();
  Shape shape = batch_shape;
  shape.push_back(event_shape()[0]);
  return std::make_shared<RelaxedOneHotCategorical>(temperature().expand(batch_shape), given.expand(shape), given_,
                                                    validates());
}

// Checked against the simplex (PyTorch's support), then the exp transform's log density.
Tensor RelaxedOneHotCategorical::log_prob(const Tensor& value) const {
  check_value(value, [&] { return internal::is_on_simplex(value); }, "Simplex()");
  return TransformedDistribution::log_prob(value);
}

}  // namespace tandem::distributions
