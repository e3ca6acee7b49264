// The distributions drawn through gamma variates (td::standard_gamma): Gamma, Chi2, Beta,
// Dirichlet, StudentT, NegativeBinomial and FisherSnedecor. The continuous ones' rsample differentiates through the
// gamma draws by the implicit reparameterization; Dirichlet's draws normalise independent gamma
// variates, so their gradient is that of g / sum(g) (PyTorch's differentiates each coordinate's
// marginal Beta instead: the two are different unbiased estimators of the same expected gradients).
#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "distributions/distributions.h"
#include "distributions/internal.h"

namespace tandem::distributions {

using internal::broadcast_all;
using internal::check_parameter;
using internal::is_whole;
using internal::promoted;
using internal::shape_of;
using internal::softplus;

namespace {
const char* const kPositive = "GreaterThan(lower_bound=0.0)";
const char* const kNonNegative = "GreaterThanEq(lower_bound=0.0)";

// Draws that round below the smallest normal number (after a division) are raised to it, as
// PyTorch's, so that log_prob stays finite; the gradient passes through unchanged: value + (tiny -
// value) is exactly tiny for such a value.
Tensor at_least_tiny(const Tensor& value) {
  const double tiny = finfo(value.dtype()).tiny;
  const Tensor kept = value.detach();
  return where(kept < tiny, value + (tiny - kept), value);
}
}  // namespace

// ---- Gamma ----

Gamma::Gamma(Param concentration, Param rate, std::optional<bool> validate_args)
    : Gamma(broadcast_all({concentration, rate}, "Gamma", {"concentration", "rate"}), validate_args, true) {}

Gamma::Gamma(const std::vector<Tensor>& params, std::optional<bool> validate_args, bool check)
    : Distribution(shape_of(params), {}, validate_args), concentration_(params[0]), rate_(params[1]) {
  if (!check) return;
  check_parameter(validates(), "Gamma", "concentration", concentration_, [&] { return concentration_ > 0; }, kPositive);
  check_parameter(validates(), "Gamma", "rate", rate_, [&] { return rate_ > 0; }, kPositive);
}

std::shared_ptr<Distribution> Gamma::expand(const Shape& batch_shape) const {
  return std::make_shared<Gamma>(concentration_.expand(batch_shape), rate_.expand(batch_shape), validates());
}

Tensor Gamma::rsample(IntList sample_shape) const {
  const Shape shape = extended_shape(sample_shape);
  return at_least_tiny(standard_gamma(concentration_.expand(shape)) / rate_.expand(shape));
}

Tensor Gamma::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value >= 0; }, kNonNegative);
  const auto [v, rate] = promoted(value, rate_);
  const Tensor a = concentration_.to(rate.dtype());
  return xlogy(a, rate) + xlogy(a - 1, v) - rate * v - a.lgamma();
}

Tensor Gamma::cdf(const Tensor& value) const {
  check_value(value, [&] { return value >= 0; }, kNonNegative);
  const auto [v, rate] = promoted(value, rate_);
  return igamma(concentration_.to(rate.dtype()), rate * v);
}

Tensor Gamma::entropy() const {
  return concentration_ - rate_.log() + concentration_.lgamma() + (1 - concentration_) * concentration_.digamma();
}

Tensor Gamma::mode() const { return ((concentration_ - 1) / rate_).clamp_min(0); }

// ---- InverseGamma ----

InverseGamma::InverseGamma(Param concentration, Param rate, std::optional<bool> validate_args)
    : Distribution(broadcast_all({concentration, rate}, "InverseGamma", {"concentration", "rate"})[0].sizes(), {},
                   validate_args),
      base_(concentration, rate, false) {
  check_parameter(validates(), "InverseGamma", "concentration", base_.concentration(),
                  [&] { return base_.concentration() > 0; }, kPositive);
  check_parameter(validates(), "InverseGamma", "rate", base_.rate(), [&] { return base_.rate() > 0; }, kPositive);
}

std::shared_ptr<Distribution> InverseGamma::expand(const Shape& batch_shape) const {
  return std::make_shared<InverseGamma>(concentration().expand(batch_shape), rate().expand(batch_shape), validates());
}

// The gamma's density at 1 / x over the Jacobian x^2 of x -> 1 / x.
Tensor InverseGamma::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value > 0; }, kPositive);
  return base_.log_prob(value.reciprocal()) - 2 * value.log();
}

Tensor InverseGamma::cdf(const Tensor& value) const {
  check_value(value, [&] { return value > 0; }, kPositive);
  const auto [v, rate] = promoted(value, this->rate());
  return igammac(concentration().to(rate.dtype()), rate / v);
}

Tensor InverseGamma::entropy() const {
  const Tensor& a = concentration();
  return a + rate().log() + a.lgamma() - (1 + a) * a.digamma();
}

// +inf where the moment does not exist; the formula there sees a safe concentration.
Tensor InverseGamma::mean() const {
  const Tensor exists = concentration() > 1, a = where(exists, concentration(), 2.0);
  return where(exists, rate() / (a - 1), std::numeric_limits<double>::infinity());
}

Tensor InverseGamma::variance() const {
  const Tensor exists = concentration() > 2, a = where(exists, concentration(), 3.0);
  return where(exists, rate().pow(2) / ((a - 1).pow(2) * (a - 2)), std::numeric_limits<double>::infinity());
}

// ---- Chi2 ----

namespace {
std::vector<Tensor> chi2_parameters(const Param& df) {
  const std::vector<Tensor> params = broadcast_all({df, 0.5}, "Chi2", {"df", "rate"});
  return {params[0] * 0.5, params[1]};
}
}  // namespace

Chi2::Chi2(Param df, std::optional<bool> validate_args) : Gamma(chi2_parameters(df), validate_args, false) {
  check_parameter(validates(), "Chi2", "df", concentration_, [&] { return concentration_ > 0; }, kPositive);
}

std::shared_ptr<Distribution> Chi2::expand(const Shape& batch_shape) const {
  return std::make_shared<Chi2>(df().expand(batch_shape), validates());
}

// ---- Dirichlet ----

namespace {
// The concentration's shape split into batch and event, checked first.
std::pair<Shape, Shape> dirichlet_shapes(const Tensor& concentration) {
  TD_CHECK(concentration.defined(), "Dirichlet: the concentration is an undefined tensor");
  TD_CHECK(concentration.dim() >= 1, "Dirichlet: the concentration must be at least one-dimensional, got shape ",
           shape_str(concentration.sizes()));
  TD_CHECK(is_floating(concentration.dtype()), "Dirichlet: the concentration must be a floating tensor, got ",
           concentration.dtype());
  const Shape& sizes = concentration.sizes();
  return {Shape(sizes.begin(), sizes.end() - 1), Shape{sizes.back()}};
}
}  // namespace

Dirichlet::Dirichlet(const Tensor& concentration, std::optional<bool> validate_args)
    : Dirichlet(dirichlet_shapes(concentration), concentration, validate_args) {}

Dirichlet::Dirichlet(const std::pair<Shape, Shape>& shapes, const Tensor& concentration,
                     std::optional<bool> validate_args)
    : Distribution(shapes.first, shapes.second, validate_args),
      concentration_(concentration) {
  check_parameter(validates(), "Dirichlet", "concentration", concentration_, [&] { return concentration_ > 0; },
                  "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)");
}

std::shared_ptr<Distribution> Dirichlet::expand(const Shape& batch_shape) const {
  Shape shape = batch_shape;
  shape.push_back(concentration_.size(-1));
  return std::make_shared<Dirichlet>(concentration_.expand(shape), validates());
}

Tensor Dirichlet::rsample(IntList sample_shape) const {
  const Tensor gammas = standard_gamma(concentration_.expand(extended_shape(sample_shape)));
  return gammas / gammas.sum(-1, true);
}

Tensor Dirichlet::log_prob(const Tensor& value) const {
  check_value(value, [&] { return internal::is_on_simplex(value); }, "Simplex()");
  const auto [v, a] = promoted(value, concentration_);
  return xlogy(a - 1, v).sum(-1) + a.sum(-1).lgamma() - a.lgamma().sum(-1);
}

Tensor Dirichlet::entropy() const {
  const double k = static_cast<double>(concentration_.size(-1));
  const Tensor total = concentration_.sum(-1);
  return concentration_.lgamma().sum(-1) - total.lgamma() - (k - total) * total.digamma() -
         ((concentration_ - 1) * concentration_.digamma()).sum(-1);
}

Tensor Dirichlet::mean() const { return concentration_ / concentration_.sum(-1, true); }

Tensor Dirichlet::mode() const {
  // The interior mode (a - 1)^+ normalised. Where every a < 1 the density is unbounded at every
  // corner, the most steeply at the largest a's: that corner, one-hot (PyTorch 2.15 takes the
  // argmax of a row of NaN and always gives the first).
  const Tensor shifted = (concentration_ - 1).clamp_min(0);
  const Tensor interior = shifted / shifted.sum(-1, true);
  const Tensor corner = one_hot(concentration_.argmax(-1), concentration_.size(-1)).to(concentration_.dtype());
  return where((concentration_ < 1).all({-1}, true), corner, interior);
}

Tensor Dirichlet::variance() const {
  const Tensor total = concentration_.sum(-1, true);
  return concentration_ * (total - concentration_) / (total.pow(2) * (total + 1));
}

// ---- Beta ----

namespace {
Tensor stacked_concentrations(const Param& concentration1, const Param& concentration0) {
  const std::vector<Tensor> both =
      broadcast_all({concentration1, concentration0}, "Beta", {"concentration1", "concentration0"});
  return stack({both[0], both[1]}, -1);
}
}  // namespace

Beta::Beta(Param concentration1, Param concentration0, std::optional<bool> validate_args)
    : Beta(Dirichlet(stacked_concentrations(concentration1, concentration0), false), validate_args) {
  check_parameter(validates(), "Beta", "concentration1", concentration1_, [&] { return concentration1_ > 0; }, kPositive);
  check_parameter(validates(), "Beta", "concentration0", concentration0_, [&] { return concentration0_ > 0; }, kPositive);
}

Beta::Beta(Dirichlet dirichlet, std::optional<bool> validate_args)
    : Distribution(dirichlet.batch_shape(), {}, validate_args),
      dirichlet_(std::move(dirichlet)),
      concentration1_(dirichlet_.concentration().select(-1, 0)),
      concentration0_(dirichlet_.concentration().select(-1, 1)) {}

std::shared_ptr<Distribution> Beta::expand(const Shape& batch_shape) const {
  return std::make_shared<Beta>(concentration1_.expand(batch_shape), concentration0_.expand(batch_shape), validates());
}

Tensor Beta::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & (value <= 1); }, "Interval(lower_bound=0.0, upper_bound=1.0)");
  return dirichlet_.log_prob(stack({value, 1 - value}, -1));
}

Tensor Beta::mean() const { return concentration1_ / (concentration1_ + concentration0_); }

Tensor Beta::variance() const {
  const Tensor total = concentration1_ + concentration0_;
  return concentration1_ * concentration0_ / (total.pow(2) * (total + 1));
}

// ---- StudentT ----

StudentT::StudentT(Param df, Param loc, Param scale, std::optional<bool> validate_args)
    : StudentT(broadcast_all({df, loc, scale}, "StudentT", {"df", "loc", "scale"}), validate_args) {}

StudentT::StudentT(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args),
      df_(params[0]),
      loc_(params[1]),
      scale_(params[2]),
      chi2_(df_, false) {
  check_parameter(validates(), "StudentT", "df", df_, [&] { return df_ > 0; }, kPositive);
  check_parameter(validates(), "StudentT", "loc", loc_, [&] { return loc_ == loc_; }, "Real()");
  check_parameter(validates(), "StudentT", "scale", scale_, [&] { return scale_ > 0; }, kPositive);
}

std::shared_ptr<Distribution> StudentT::expand(const Shape& batch_shape) const {
  return std::make_shared<StudentT>(df_.expand(batch_shape), loc_.expand(batch_shape), scale_.expand(batch_shape),
                                    validates());
}

Tensor StudentT::rsample(IntList sample_shape) const {
  // loc + scale X / sqrt(Z / df), X standard normal and Z chi-square with df degrees of freedom.
  const Tensor x = randn(extended_shape(sample_shape), df_.options());
  const Tensor z = chi2_.rsample(sample_shape);
  return loc_ + scale_ * x * (z / df_).rsqrt();
}

Tensor StudentT::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value == value; }, "Real()");
  const Tensor y = (value - loc_) / scale_;
  const Tensor normalizer = scale_.log() + 0.5 * df_.log() + 0.5 * std::log(std::numbers::pi) +
                            (0.5 * df_).lgamma() - (0.5 * (df_ + 1)).lgamma();
  return -0.5 * (df_ + 1) * (y.pow(2) / df_).log1p() - normalizer;
}

Tensor StudentT::entropy() const {
  const double log_gamma_half = 0.5 * std::log(std::numbers::pi);  // lgamma(1/2) = log(sqrt(pi))
  const Tensor log_beta = (0.5 * df_).lgamma() + log_gamma_half - (0.5 * (df_ + 1)).lgamma();
  return scale_.log() + 0.5 * (df_ + 1) * ((0.5 * (df_ + 1)).digamma() - (0.5 * df_).digamma()) + 0.5 * df_.log() +
         log_beta;
}

Tensor StudentT::mean() const {
  return where(df_ > 1, loc_, std::numeric_limits<double>::quiet_NaN());
}

Tensor StudentT::variance() const {
  // scale^2 df / (df - 2) above 2, inf in (1, 2], NaN at or below 1. The unselected branch divides
  // by 1, so its gradient is not 0/0 at df = 2.
  const Tensor safe_df = where(df_ > 2, df_, 3.0);
  const Tensor finite = scale_.pow(2) * safe_df / (safe_df - 2);
  const Tensor infinite = full_like(df_, std::numeric_limits<double>::infinity());
  return where(df_ > 2, finite, where(df_ > 1, infinite, full_like(df_, std::numeric_limits<double>::quiet_NaN())));
}

// ---- NegativeBinomial ----

NegativeBinomial::NegativeBinomial(Param total_count, Param parameter, Given given,
                                   std::optional<bool> validate_args)
    : NegativeBinomial(broadcast_all({total_count, parameter}, "NegativeBinomial",
                                     {"total_count", given == Given::probs ? "probs" : "logits"}),
                       given, validate_args) {}

NegativeBinomial::NegativeBinomial(const std::vector<Tensor>& params, Given given, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), total_count_(params[0]), given_(given) {
  internal::bernoulli_parameters(params[1], given, probs_, logits_);
  check_parameter(validates(), "NegativeBinomial", "total_count", total_count_, [&] { return total_count_ >= 0; },
                  "GreaterThanEq(lower_bound=0)");
  if (given == Given::probs) {
    check_parameter(validates(), "NegativeBinomial", "probs", probs_, [&] { return (probs_ >= 0) & (probs_ < 1); },
                    "HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)");
  } else {
    check_parameter(validates(), "NegativeBinomial", "logits", logits_, [&] { return logits_ == logits_; }, "Real()");
  }
}

std::shared_ptr<Distribution> NegativeBinomial::expand(const Shape& batch_shape) const {
  const Tensor& given = given_ == Given::probs ? probs_ : logits_;
  return std::make_shared<NegativeBinomial>(total_count_.expand(batch_shape), given.expand(batch_shape), given_,
                                            validates());
}

Tensor NegativeBinomial::sample(IntList sample_shape) const {
  // A Poisson variate whose rate is a Gamma(total_count, e^-logits) variate.
  NoGradGuard no_grad;
  const Gamma rate(total_count_.detach(), logits_.detach().neg().exp(), false);
  return poisson(rate.sample(sample_shape));
}

Tensor NegativeBinomial::log_prob(const Tensor& value) const {
  check_value(value, [&] { return (value >= 0) & is_whole(value); }, "IntegerGreaterThan(lower_bound=0)");
  const auto [v, logits] = promoted(value, logits_);
  const Tensor n = total_count_.to(logits.dtype());
  // n log(1 - p) + k log p, by log sigmoid(x) = -softplus(-x).
  const Tensor unnormalized = -n * softplus(logits) - v * softplus(-logits);
  // 0 where total_count + value = 0 (a point mass at 0 when total_count is 0), as PyTorch's.
  const Tensor normalizer = masked_fill(-(n + v).lgamma() + (v + 1).lgamma() + n.lgamma(), n + v == 0, 0.0);
  return unnormalized - normalizer;
}

Tensor NegativeBinomial::mean() const { return total_count_ * logits_.exp(); }

Tensor NegativeBinomial::mode() const { return ((total_count_ - 1) * logits_.exp()).floor().clamp_min(0); }

Tensor NegativeBinomial::variance() const { return mean() / (-logits_).sigmoid(); }

// ---- FisherSnedecor ----

FisherSnedecor::FisherSnedecor(Param df1, Param df2, std::optional<bool> validate_args)
    : FisherSnedecor(broadcast_all({df1, df2}, "FisherSnedecor", {"df1", "df2"}), validate_args) {}

FisherSnedecor::FisherSnedecor(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), df1_(params[0]), df2_(params[1]) {
  check_parameter(validates(), "FisherSnedecor", "df1", df1_, [&] { return df1_ > 0; }, kPositive);
  check_parameter(validates(), "FisherSnedecor", "df2", df2_, [&] { return df2_ > 0; }, kPositive);
}

std::shared_ptr<Distribution> FisherSnedecor::expand(const Shape& batch_shape) const {
  return std::make_shared<FisherSnedecor>(df1_.expand(batch_shape), df2_.expand(batch_shape), validates());
}

// X1 / X2 for X1 ~ Gamma(df1 / 2, df1) and X2 ~ Gamma(df2 / 2, df2), as PyTorch's.
Tensor FisherSnedecor::rsample(IntList sample_shape) const {
  const Tensor x1 = Gamma(df1_ * 0.5, df1_, false).rsample(sample_shape);
  const Tensor x2 = Gamma(df2_ * 0.5, df2_, false).rsample(sample_shape);
  return at_least_tiny(x1 / x2);
}

Tensor FisherSnedecor::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value > 0; }, kPositive);
  const auto [v, df1] = promoted(value, df1_);
  const Tensor df2 = df2_.to(df1.dtype());
  const Tensor half1 = df1 * 0.5, half2 = df2 * 0.5, ratio = df1 / df2;
  const Tensor log_beta = half1.lgamma() + half2.lgamma() - (half1 + half2).lgamma();
  return half1 * ratio.log() + (half1 - 1) * v.log() - (half1 + half2) * (ratio * v).log1p() - log_beta;
}

// NaN where the moment does not exist; there the formula sees safe parameters, so that no NaN
// reaches the gradient.
Tensor FisherSnedecor::mean() const {
  const Tensor exists = df2_ > 2, df2 = where(exists, df2_, 3.0);
  return where(exists, df2 / (df2 - 2), std::numeric_limits<double>::quiet_NaN());
}

Tensor FisherSnedecor::mode() const {
  const Tensor exists = df1_ > 2, df1 = where(exists, df1_, 3.0);
  return where(exists, (df1 - 2) / df1 * df2_ / (df2_ + 2), std::numeric_limits<double>::quiet_NaN());
}

Tensor FisherSnedecor::variance() const {
  const Tensor exists = df2_ > 4, df2 = where(exists, df2_, 5.0);
  return where(exists, 2 * df2.pow(2) * (df1_ + df2 - 2) / (df1_ * (df2 - 2).pow(2) * (df2 - 4)),
               std::numeric_limits<double>::quiet_NaN());
}

}  // namespace tandem::distributions
