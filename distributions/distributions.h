// Probability distributions, as torch.distributions: parameters that broadcast into a batch of
// distributions, draws (sample, and rsample where the draw is a differentiable function of the
// parameters: the reparameterization trick), log densities, moments, entropies and the KL
// divergence between two distributions of a family.
//
//   td::distributions::Normal policy(mu, sigma);      // mu, sigma: tensors (or numbers)
//   Tensor a = policy.rsample();                      // gradients reach mu and sigma
//   Tensor loss = -policy.log_prob(a).sum();
//
// Shapes as PyTorch's: a distribution has a batch_shape (the parameters' broadcast shape) and an
// event_shape (the shape of one draw: [] for scalar distributions, [n] for MultivariateNormal);
// sample(sample_shape) returns sample_shape + batch_shape + event_shape, and log_prob(value)
// takes a value that broadcasts against batch_shape + event_shape and returns its batch part.
//
// Validation, as PyTorch's (on unless set_default_validate_args(false) or validate_args =
// false): parameters outside their constraint are an error at construction, and values outside
// the support an error in log_prob and cdf, naming the distribution, the argument, its shape and
// the constraint. Checking reads the tensors back to the host.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"  // the operators the inline members use
#include "core/tensor.h"

namespace tandem::distributions {

// A parameter: a tensor, or a number, which takes the device of the tensors given with it and
// their dtype (float32 on the CPU where all are numbers), as PyTorch's broadcast_all. Unlike
// PyTorch, tensor parameters of different floating dtypes are promoted to the widest.
class Param {
 public:
  Param(Tensor t) : tensor_(std::move(t)), is_tensor_(true) {}  // NOLINT: implicit, as a number is
  Param(double v) : number_(v) {}                               // NOLINT
  bool is_tensor() const { return is_tensor_; }
  const Tensor& tensor() const { return tensor_; }
  double number() const { return number_; }

 private:
  Tensor tensor_;
  double number_ = 0;
  bool is_tensor_ = false;
};

class Distribution {
 public:
  virtual ~Distribution() = default;

  // PyTorch's default: on.
  static void set_default_validate_args(bool validate);
  static bool default_validate_args();

  virtual std::string name() const = 0;  // "Normal"
  const Shape& batch_shape() const { return batch_shape_; }
  const Shape& event_shape() const { return event_shape_; }

  // Draws of shape sample_shape + batch_shape + event_shape: sample records no gradient; rsample
  // (for the distributions with has_rsample()) is differentiable in the parameters.
  virtual bool has_rsample() const { return false; }
  virtual Tensor sample(IntList sample_shape = {}) const;
  virtual Tensor rsample(IntList sample_shape = {}) const;

  virtual Tensor log_prob(const Tensor& value) const = 0;
  virtual Tensor cdf(const Tensor& value) const;
  virtual Tensor icdf(const Tensor& value) const;
  virtual Tensor entropy() const;
  Tensor perplexity() const { return entropy().exp(); }

  virtual Tensor mean() const;
  virtual Tensor mode() const;
  virtual Tensor variance() const;
  virtual Tensor stddev() const { return variance().sqrt(); }

  // Every value of a discrete distribution's support, along a new first dim ([K] + batch_shape
  // with expand, else [K] + ones; OneHotCategorical's rows also keep their event dim [K]), for
  // Bernoulli, Binomial, Categorical and OneHotCategorical.
  virtual bool has_enumerate_support() const { return false; }
  virtual Tensor enumerate_support(bool expand = true) const;

  // The same distribution with its parameters expanded (views) to a batch_shape they broadcast to.
  virtual std::shared_ptr<Distribution> expand(const Shape& batch_shape) const = 0;

  bool validates() const { return validate_; }

 protected:
  Distribution(Shape batch_shape, Shape event_shape, std::optional<bool> validate_args);
  Shape extended_shape(IntList sample_shape) const;  // sample_shape + batch_shape + event_shape
  // Where validation is on: `value` broadcasts against batch_shape + event_shape and every
  // element lies in the support (`in_support` makes a bool tensor of value's shape, or of its
  // batch part for vector events; only when validating), which `support` names.
  void check_value(const Tensor& value, const std::function<Tensor()>& in_support, const std::string& support) const;
  [[noreturn]] void not_implemented(const char* what) const;

 private:
  Shape batch_shape_, event_shape_;
  bool validate_;
};

// What Normal, Laplace, Cauchy and Gumbel share: a location (real) and a scale (> 0), broadcast
// together into the batch, checked, and named in errors after `family`.
class LocationScale : public Distribution {
 public:
  const Tensor& loc() const { return loc_; }
  const Tensor& scale() const { return scale_; }

 protected:
  LocationScale(const char* family, Param loc, Param scale, std::optional<bool> validate_args);
  Tensor loc_, scale_;

 private:
  LocationScale(const char* family, const std::vector<Tensor>& params, std::optional<bool> validate_args);
};

// N(loc, scale^2). Parameters: loc real, scale > 0.
class Normal : public LocationScale {
 public:
  Normal(Param loc, Param scale, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Normal"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  Tensor variance() const override { return scale_.pow(2); }
  Tensor stddev() const override { return scale_; }
};

// Uniform on [low, high). Parameters: low < high.
class Uniform : public Distribution {
 public:
  Uniform(Param low, Param high, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Uniform"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override;  // NaN: every point of the interval is one
  Tensor variance() const override;
  const Tensor& low() const { return low_; }
  const Tensor& high() const { return high_; }

 private:
  Uniform(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor low_, high_;
};

// Exponential(rate): density rate e^(-rate x) on x >= 0. Parameter: rate > 0.
class Exponential : public Distribution {
 public:
  explicit Exponential(Param rate, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Exponential"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return rate_.reciprocal(); }
  Tensor mode() const override;
  Tensor variance() const override { return rate_.pow(-2); }
  Tensor stddev() const override { return rate_.reciprocal(); }
  const Tensor& rate() const { return rate_; }

 private:
  Exponential(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor rate_;
};

// Laplace(loc, scale): density e^(-|x - loc| / scale) / (2 scale). Parameters: loc real, scale > 0.
class Laplace : public LocationScale {
 public:
  Laplace(Param loc, Param scale, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Laplace"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  Tensor variance() const override { return scale_.pow(2) * 2; }
  Tensor stddev() const override;
};

// Cauchy(loc, scale): density 1 / (pi scale (1 + ((x - loc) / scale)^2)). No mean or variance
// (NaN and +inf, as PyTorch's). Parameters: loc real, scale > 0.
class Cauchy : public LocationScale {
 public:
  Cauchy(Param loc, Param scale, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Cauchy"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
};

// LogNormal(loc, scale): exp of N(loc, scale^2), on x > 0. Parameters: loc real, scale > 0.
class LogNormal : public Distribution {
 public:
  LogNormal(Param loc, Param scale, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "LogNormal"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override { return base_.rsample(sample_shape).exp(); }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override { return base_.icdf(value).exp(); }
  Tensor entropy() const override { return base_.entropy() + base_.loc(); }
  Tensor mean() const override;
  Tensor mode() const override;
  Tensor variance() const override;
  const Tensor& loc() const { return base_.loc(); }
  const Tensor& scale() const { return base_.scale(); }
  const Normal& base_dist() const { return base_; }

 private:
  Normal base_;
};

// Gumbel(loc, scale): the largest of many draws; cdf exp(-exp(-(x - loc) / scale)). Parameters:
// loc real, scale > 0.
class Gumbel : public LocationScale {
 public:
  Gumbel(Param loc, Param scale, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Gumbel"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override { return loc_; }
  Tensor variance() const override { return stddev().pow(2); }
  Tensor stddev() const override;
};

// |X| for X symmetric about 0 (a Normal or Cauchy of loc 0): what HalfNormal and HalfCauchy share.
// On x >= 0 its density is twice the base's and its cdf 2 F(x) - 1; its entropy is the base's
// less log 2, its mode 0.
template <typename Base>
class Folded : public Distribution {
 public:
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override { return base_.rsample(sample_shape).abs(); }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override { return base_.icdf((value + 1) / 2); }
  Tensor entropy() const override;
  Tensor mode() const override;
  const Tensor& scale() const { return base_.scale(); }
  const Base& base_dist() const { return base_; }

 protected:
  // family: the distribution's name, for errors.
  Folded(const char* family, Param scale, std::optional<bool> validate_args);

 private:
  Folded(const char* family, const std::vector<Tensor>& scale, std::optional<bool> validate_args);
  Base base_;
};
extern template class Folded<Normal>;  // instantiated in distributions.cc
extern template class Folded<Cauchy>;

// HalfNormal(scale): |N(0, scale^2)|, on x >= 0. Parameter: scale > 0.
class HalfNormal : public Folded<Normal> {
 public:
  explicit HalfNormal(Param scale, std::optional<bool> validate_args = std::nullopt)
      : Folded("HalfNormal", std::move(scale), validate_args) {}
  std::string name() const override { return "HalfNormal"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor mean() const override;
  Tensor variance() const override;
};

// HalfCauchy(scale): |Cauchy(0, scale)|, on x >= 0. No mean (+inf) or variance (+inf), as
// PyTorch's. Parameter: scale > 0.
class HalfCauchy : public Folded<Cauchy> {
 public:
  explicit HalfCauchy(Param scale, std::optional<bool> validate_args = std::nullopt)
      : Folded("HalfCauchy", std::move(scale), validate_args) {}
  std::string name() const override { return "HalfCauchy"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor mean() const override;
  Tensor variance() const override { return base_dist().variance(); }
};

// Poisson(rate): k events with probability rate^k e^-rate / k!. Parameter: rate >= 0.
class Poisson : public Distribution {
 public:
  explicit Poisson(Param rate, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Poisson"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override { return rate_; }
  Tensor mode() const override { return rate_.floor(); }
  Tensor variance() const override { return rate_; }
  const Tensor& rate() const { return rate_; }

 private:
  Poisson(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor rate_;
};

// Which parameter a Bernoulli or Categorical is given; the other is derived from it.
enum class Given { probs, logits };

// Bernoulli: 1 with probability probs, else 0. Given probs in [0, 1], or logits (log-odds, real).
class Bernoulli : public Distribution {
 public:
  Bernoulli(Param parameter, Given given = Given::probs, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Bernoulli"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return probs_; }
  Tensor mode() const override;  // NaN where probs is exactly 0.5
  Tensor variance() const override { return probs_ * (1 - probs_); }
  bool has_enumerate_support() const override { return true; }
  Tensor enumerate_support(bool expand = true) const override;
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }

 private:
  Tensor probs_, logits_;
  Given given_;
};

// Categorical over {0, ..., K - 1}, K the last dim of the parameter: probs (non-negative, scaled
// to sum to 1 along the last dim) or logits (normalised by their logsumexp). batch_shape is the
// parameter's shape without its last dim.
class Categorical : public Distribution {
 public:
  Categorical(const Tensor& parameter, Given given = Given::probs, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Categorical"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;      // NaN, as PyTorch's (no order on the categories)
  Tensor mode() const override;      // the most probable category
  Tensor variance() const override;  // NaN
  bool has_enumerate_support() const override { return true; }
  Tensor enumerate_support(bool expand = true) const override;
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }
  int64_t num_events() const { return probs_.size(-1); }

 private:
  Tensor probs_, logits_;
  Given given_;
};

// Geometric: the number of failures before the first success, each trial a success with
// probability probs (in (0, 1]) or by logits. Draws count failures from 0 (Tensor::geometric_
// counts trials from 1).
class Geometric : public Distribution {
 public:
  Geometric(Param parameter, Given given = Given::probs, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Geometric"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return 1.0 / probs_ - 1.0; }
  Tensor mode() const override;
  Tensor variance() const override { return (1.0 / probs_ - 1.0) / probs_; }
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }

 private:
  Tensor probs_, logits_;
  Given given_;
};

// Binomial(total_count, probs | logits): successes in total_count trials (a whole number >= 0,
// a number or a tensor, integer or floating, that broadcasts with the probabilities). entropy and enumerate_support
// need one total_count for the whole batch, as PyTorch's.
class Binomial : public Distribution {
 public:
  Binomial(Param total_count, const Tensor& parameter, Given given = Given::probs,
           std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Binomial"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return total_count_ * probs_; }
  Tensor mode() const override;
  Tensor variance() const override { return total_count_ * probs_ * (1 - probs_); }
  bool has_enumerate_support() const override { return true; }
  Tensor enumerate_support(bool expand = true) const override;
  const Tensor& total_count() const { return total_count_; }
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }

 private:
  int64_t homogeneous_count(const char* what) const;
  Tensor total_count_, probs_, logits_;
  Given given_;
};

// OneHotCategorical: Categorical's draws as one-hot vectors [..., K] (event_shape [K]). Its
// validate_args reaches the Categorical inside too (PyTorch's always validates the parameter).
class OneHotCategorical : public Distribution {
 public:
  OneHotCategorical(const Tensor& parameter, Given given = Given::probs,
                    std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "OneHotCategorical"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return categorical_.entropy(); }
  Tensor mean() const override { return categorical_.probs(); }
  Tensor mode() const override;
  Tensor variance() const override { return categorical_.probs() * (1 - categorical_.probs()); }
  bool has_enumerate_support() const override { return true; }
  Tensor enumerate_support(bool expand = true) const override;
  const Tensor& probs() const { return categorical_.probs(); }
  const Tensor& logits() const { return categorical_.logits(); }
  const Categorical& categorical() const { return categorical_; }

 protected:
  Categorical categorical_;
  Given given_;
};

// OneHotCategorical whose rsample passes gradients straight through (Bengio et al., 2013): the
// one-hot draw in value, probs - probs.detach() added, so the gradient reaches probs as if the
// draw were probs.
class OneHotCategoricalStraightThrough : public OneHotCategorical {
 public:
  using OneHotCategorical::OneHotCategorical;
  std::string name() const override { return "OneHotCategoricalStraightThrough"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
};

// Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Gamma(a) on x >= 0, a the
// concentration. Parameters: concentration > 0, rate > 0. rsample differentiates through the draws
// by the implicit reparameterization (td::standard_gamma).
class Gamma : public Distribution {
 public:
  Gamma(Param concentration, Param rate, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Gamma"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return concentration_ / rate_; }
  Tensor mode() const override;  // (a - 1) / rate, 0 for a < 1
  Tensor variance() const override { return concentration_ / rate_.pow(2); }
  const Tensor& concentration() const { return concentration_; }
  const Tensor& rate() const { return rate_; }

 protected:
  // The broadcast parameters; `check` validates them as Gamma's (Chi2 checks its own df).
  Gamma(const std::vector<Tensor>& params, std::optional<bool> validate_args, bool check);
  Tensor concentration_, rate_;
};

// InverseGamma(concentration, rate): 1 / x for x ~ Gamma(concentration, rate), on x > 0, with
// rsample through the gamma draws. Mean +inf for concentration <= 1, variance +inf for <= 2, as
// PyTorch's. Parameters: concentration > 0, rate > 0.
class InverseGamma : public Distribution {
 public:
  InverseGamma(Param concentration, Param rate, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "InverseGamma"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override { return base_.rsample(sample_shape).reciprocal(); }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override { return rate() / (concentration() + 1); }
  Tensor variance() const override;
  const Tensor& concentration() const { return base_.concentration(); }
  const Tensor& rate() const { return base_.rate(); }
  const Gamma& base_dist() const { return base_; }

 private:
  Gamma base_;
};

// Chi2(df): the sum of df squared standard normals, Gamma(df / 2, 1 / 2). Parameter: df > 0.
class Chi2 : public Gamma {
 public:
  explicit Chi2(Param df, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Chi2"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor df() const { return concentration_ * 2; }
};

// Dirichlet(concentration): over the probability simplex of K categories, concentration [..., K]
// (each > 0); event_shape [K]. Draws normalise K independent gamma variates, differentiably.
class Dirichlet : public Distribution {
 public:
  explicit Dirichlet(const Tensor& concentration, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Dirichlet"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override;  // one-hot at the largest concentration where all are below 1
  Tensor variance() const override;
  const Tensor& concentration() const { return concentration_; }

 private:
  Dirichlet(const std::pair<Shape, Shape>& shapes, const Tensor& concentration, std::optional<bool> validate_args);
  Tensor concentration_;
};

// Beta(concentration1, concentration0): density x^(a-1) (1-x)^(b-1) / B(a, b) on [0, 1], a =
// concentration1, b = concentration0 (each > 0). A Dirichlet over (x, 1 - x), as PyTorch's.
class Beta : public Distribution {
 public:
  Beta(Param concentration1, Param concentration0, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Beta"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override { return dirichlet_.rsample(sample_shape).select(-1, 0); }
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return dirichlet_.entropy(); }
  Tensor mean() const override;
  Tensor mode() const override { return dirichlet_.mode().select(-1, 0); }
  Tensor variance() const override;
  const Tensor& concentration1() const { return concentration1_; }
  const Tensor& concentration0() const { return concentration0_; }

 private:
  Beta(Dirichlet dirichlet, std::optional<bool> validate_args);
  Dirichlet dirichlet_;
  Tensor concentration1_, concentration0_;
};

// Student's t with df degrees of freedom, shifted by loc and scaled by scale. Parameters: df > 0,
// loc real, scale > 0. The mean is NaN for df <= 1; the variance inf for 1 < df <= 2, NaN below.
class StudentT : public Distribution {
 public:
  explicit StudentT(Param df, Param loc = 0.0, Param scale = 1.0, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "StudentT"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
  const Tensor& df() const { return df_; }
  const Tensor& loc() const { return loc_; }
  const Tensor& scale() const { return scale_; }

 private:
  StudentT(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor df_, loc_, scale_;
  Chi2 chi2_;
};

// NegativeBinomial(total_count, probs | logits): the successes before total_count failures (a real
// number >= 0), each trial succeeding with probability probs (in [0, 1)) or by logits. Draws are
// Poisson variates of Gamma-distributed rates, not differentiable.
class NegativeBinomial : public Distribution {
 public:
  NegativeBinomial(Param total_count, Param parameter, Given given = Given::probs,
                   std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "NegativeBinomial"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override;
  Tensor mode() const override;
  Tensor variance() const override;
  const Tensor& total_count() const { return total_count_; }
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }

 private:
  NegativeBinomial(const std::vector<Tensor>& params, Given given, std::optional<bool> validate_args);
  Tensor total_count_, probs_, logits_;
  Given given_;
};

// Pareto(scale, alpha): density alpha scale^alpha / x^(alpha + 1) on x >= scale, scale e^(E /
// alpha) for E ~ Exponential(1). Parameters: scale > 0, alpha > 0. The mean is inf for alpha <= 1,
// the variance inf for alpha <= 2.
class Pareto : public Distribution {
 public:
  Pareto(Param scale, Param alpha, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Pareto"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override { return scale_; }
  Tensor variance() const override;
  const Tensor& scale() const { return scale_; }
  const Tensor& alpha() const { return alpha_; }

 private:
  Pareto(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor scale_, alpha_;
};

// GeneralizedPareto(loc, scale, concentration): survival (1 + xi z)^(-1/xi) for z = (x - loc) /
// scale, xi the concentration; xi = 0 is the exponential e^(-z). Support x >= loc, and x <= loc -
// scale / xi where xi < 0. Mean NaN for xi >= 1, variance NaN for xi >= 1/2, as PyTorch's.
// Parameters: loc real, scale > 0, concentration real. Near xi = 0 the closed forms go through
// log1p(t) / t and expm1(t) / t, expanded for |t| < 1e-3, so values and gradients are exact on both
// sides (PyTorch switches to the exponential at |xi| <= 1e-8 and loses the gradient's digits
// before that).
class GeneralizedPareto : public Distribution {
 public:
  GeneralizedPareto(Param loc, Param scale, Param concentration, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "GeneralizedPareto"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override { return (scale_.log() + concentration_ + 1).expand(batch_shape()); }
  Tensor mean() const override;
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
  const Tensor& loc() const { return loc_; }
  const Tensor& scale() const { return scale_; }
  const Tensor& concentration() const { return concentration_; }

 private:
  GeneralizedPareto(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  void check_support(const Tensor& value) const;
  Tensor loc_, scale_, concentration_;
};

// Weibull(scale, concentration): cdf 1 - e^(-(x / scale)^k) on x > 0, k the concentration, scale
// E^(1 / k) for E ~ Exponential(1). Parameters: scale > 0, concentration > 0.
class Weibull : public Distribution {
 public:
  Weibull(Param scale, Param concentration, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Weibull"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  // scale ((k - 1) / k)^(1 / k), PyTorch's formula: 0 at k = 1, NaN for most k < 1 (a negative
  // base), a real power where 1 / k is a whole number.
  Tensor mode() const override;
  Tensor variance() const override;
  const Tensor& scale() const { return scale_; }
  const Tensor& concentration() const { return concentration_; }

 private:
  Weibull(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor scale_, concentration_;
};

// FisherSnedecor(df1, df2): the ratio (X1 / df1) / (X2 / df2) of chi-squared variates with df1 and
// df2 degrees of freedom, on x > 0. Parameters: df1 > 0, df2 > 0. As PyTorch's, the mean is NaN for
// df2 <= 2, the variance NaN for df2 <= 4 and the mode NaN for df1 <= 2.
class FisherSnedecor : public Distribution {
 public:
  FisherSnedecor(Param df1, Param df2, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "FisherSnedecor"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override;
  Tensor mode() const override;
  Tensor variance() const override;
  const Tensor& df1() const { return df1_; }
  const Tensor& df2() const { return df2_; }

 private:
  FisherSnedecor(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor df1_, df2_;
};

// Kumaraswamy(concentration1, concentration0): density a b x^(a-1) (1 - x^a)^(b-1) on [0, 1], a =
// concentration1, b = concentration0 (each > 0); cdf 1 - (1 - x^a)^b, so draws invert it. The mode
// is ((a - 1) / (a b - 1))^(1 / a) where a >= 1 and b >= 1 (but not both 1), else NaN; PyTorch's
// formula gives NaN almost everywhere.
class Kumaraswamy : public Distribution {
 public:
  Kumaraswamy(Param concentration1, Param concentration0, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Kumaraswamy"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return moment(1); }
  Tensor mode() const override;
  Tensor variance() const override { return moment(2) - moment(1).pow(2); }
  const Tensor& concentration1() const { return concentration1_; }
  const Tensor& concentration0() const { return concentration0_; }

 private:
  Kumaraswamy(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor moment(double n) const;  // E[x^n] = b B(1 + n / a, b)
  Tensor concentration1_, concentration0_;
};

// VonMises(loc, concentration): the circular normal, density e^(k cos(x - loc)) / (2 pi I0(k)) for
// angles x (any real number, taken modulo 2 pi), k the concentration. Parameters: loc real, k > 0.
// Draws lie in [-pi, pi) (Best and Fisher's rejection sampler, in float64 as PyTorch's; a narrower
// dtype may round one to pi; above concentration 1e6, where the sampler's envelope rounds away,
// the normal approximation N(loc, 1 / k): within O(1 / k) in total variation, its variance
// within O(1 / k^2)). The mean
// and the mode are loc; the variance the circular one, 1 - I1(k) / I0(k). Bessel functions are
// exact here (PyTorch's polynomial fits are within about 1e-7), and entropy is implemented
// (PyTorch has none).
class VonMises : public Distribution {
 public:
  VonMises(Param loc, Param concentration, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "VonMises"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
  const Tensor& loc() const { return loc_; }
  const Tensor& concentration() const { return concentration_; }

 private:
  VonMises(const std::vector<Tensor>& params, std::optional<bool> validate_args);  // broadcast
  Tensor loc_, concentration_;
};

// ContinuousBernoulli(probs | logits): density C(p) p^x (1 - p)^(1-x) on [0, 1], C the normalising
// constant (Loaiza-Ganem and Cunningham, 2019). probs in [0, 1] (clamped to [eps, 1 - eps], as
// PyTorch's) or logits, real (the moments, cdf and icdf take them clamped the same way). Near
// p = 1/2 (inside `lims`) the closed forms of log C and the mean cancel, and Taylor expansions take
// over, as PyTorch's. The variance, cdf and icdf are exact there too, through their own expansions
// in the logits (PyTorch's variance expansion has a wrong fourth-order sign, and its cdf and icdf
// are the uniform's inside lims), so rsample, which inverts the cdf, is differentiable at p = 1/2.
class ContinuousBernoulli : public Distribution {
 public:
  ContinuousBernoulli(Param parameter, Given given = Given::probs, std::optional<bool> validate_args = std::nullopt,
                      std::pair<double, double> lims = {0.499, 0.501});
  std::string name() const override { return "ContinuousBernoulli"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor variance() const override;
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }
  // log C(p), the log normalising constant.
  Tensor log_normalizer() const;

 private:
  Tensor outside_lims() const;  // where the closed forms hold
  Tensor cut_probs() const;     // probs, and lims.first inside the lims (kept finite for the gradient)
  Tensor probs_, logits_;
  Tensor natural_;  // the logits of the clamped probs: what the moments, cdf and icdf use
  Given given_;
  std::pair<double, double> lims_;
};

// LogitRelaxedBernoulli(temperature, probs | logits): the logit of a RelaxedBernoulli draw, (logit(u)
// + logits) / temperature for u uniform (Maddison et al., 2017), on the real line. temperature: a
// number or a tensor (> 0) that broadcasts to the batch shape. probs in [0, 1], or logits.
class LogitRelaxedBernoulli : public Distribution {
 public:
  LogitRelaxedBernoulli(Param temperature, Param parameter, Given given = Given::probs,
                        std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "LogitRelaxedBernoulli"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  const Tensor& temperature() const { return temperature_; }
  const Tensor& probs() const { return probs_; }
  const Tensor& logits() const { return logits_; }

 private:
  Tensor temperature_, probs_, logits_;
  Given given_;
};

// ExpRelaxedCategorical(temperature, probs | logits): the log of a RelaxedOneHotCategorical draw, a
// point of the simplex's log, event_shape [K]: log_softmax((logits + Gumbel noise) / temperature).
// probs and logits as Categorical's; temperature a number or a tensor (> 0) that broadcasts to the
// batch shape.
class ExpRelaxedCategorical : public Distribution {
 public:
  ExpRelaxedCategorical(Param temperature, const Tensor& parameter, Given given = Given::probs,
                        std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "ExpRelaxedCategorical"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  const Tensor& temperature() const { return temperature_; }
  const Tensor& probs() const { return categorical_.probs(); }
  const Tensor& logits() const { return categorical_.logits(); }

 private:
  Categorical categorical_;
  Tensor temperature_;
  Given given_;
};

// Multinomial(total_count, probs | logits): the counts of total_count draws from a Categorical over
// K, event_shape [K]. log_prob takes whole counts >= 0 of any total up to total_count (PyTorch's
// support; it does not check that they are whole), its factorials from their own sum; sample and
// entropy use total_count.
class Multinomial : public Distribution {
 public:
  explicit Multinomial(int64_t total_count, const Tensor& parameter, Given given = Given::probs,
                       std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Multinomial"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return probs() * static_cast<double>(total_count_); }
  Tensor variance() const override { return probs() * (1 - probs()) * static_cast<double>(total_count_); }
  int64_t total_count() const { return total_count_; }
  const Tensor& probs() const { return categorical_.probs(); }
  const Tensor& logits() const { return categorical_.logits(); }

 private:
  int64_t total_count_;
  Categorical categorical_;
  Given given_;
};

// N(loc, Sigma) over vectors of n: loc [..., n] with exactly one of covariance_matrix (positive
// definite), precision_matrix (its inverse, positive definite) or scale_tril (the lower
// Cholesky factor L of Sigma = L L^T, positive diagonal), [..., n, n]. event_shape [n].
class MultivariateNormal : public Distribution {
 public:
  enum class Matrix { covariance, precision, scale_tril };
  MultivariateNormal(const Tensor& loc, const Tensor& matrix, Matrix kind = Matrix::covariance,
                     std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "MultivariateNormal"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
  const Tensor& loc() const { return loc_; }
  Tensor scale_tril() const;
  Tensor covariance_matrix() const;
  Tensor precision_matrix() const;
  // L before broadcasting to the batch: what the computations use.
  const Tensor& unbroadcasted_scale_tril() const { return scale_tril_; }

 private:
  Tensor loc_, scale_tril_;
};

// N(loc, W W^T + diag(D)) over vectors of n, a covariance of low rank r plus a diagonal: loc [..., n],
// cov_factor W [..., n, r], cov_diag D [..., n] (> 0), broadcast together. log_prob and entropy go
// through the r x r capacitance matrix I + W^T D^-1 W (the Woodbury identity and the matrix
// determinant lemma), so nothing n x n is factored.
class LowRankMultivariateNormal : public Distribution {
 public:
  LowRankMultivariateNormal(const Tensor& loc, const Tensor& cov_factor, const Tensor& cov_diag,
                            std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "LowRankMultivariateNormal"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc_; }
  Tensor mode() const override { return loc_; }
  Tensor variance() const override;
  const Tensor& loc() const { return loc_; }
  Tensor cov_factor() const;  // broadcast to batch_shape + [n, r]
  Tensor cov_diag() const;    // broadcast to batch_shape + [n]
  Tensor scale_tril() const;
  Tensor covariance_matrix() const;
  Tensor precision_matrix() const;
  // The parameters before broadcasting, and the capacitance matrix's Cholesky factor: what the
  // computations (and kl_divergence) use.
  const Tensor& unbroadcasted_cov_factor() const { return cov_factor_; }
  const Tensor& unbroadcasted_cov_diag() const { return cov_diag_; }
  const Tensor& capacitance_tril() const { return capacitance_tril_; }
  // log det(W W^T + D), and x^T (W W^T + D)^-1 x over x's last dim.
  Tensor log_det() const;
  Tensor mahalanobis(const Tensor& x) const;

 private:
  Tensor loc_, cov_factor_, cov_diag_, capacitance_tril_;
};

// Wishart(df, Sigma): the distribution of X^T X for df rows X drawn from N(0, Sigma), over p x p
// positive definite matrices (event_shape [p, p]). Sigma given as a covariance matrix, a
// precision matrix or its lower Cholesky factor, [..., p, p], as MultivariateNormal's; df (> p - 1:
// an error always, as PyTorch's) broadcasts with the matrix's batch. rsample is Bartlett's
// decomposition, differentiable through its chi-squared draws; a draw that is not positive
// definite (df near p - 1, in low precision) is drawn again, up to 10 times, as PyTorch's.
class Wishart : public Distribution {
 public:
  using Matrix = MultivariateNormal::Matrix;
  Wishart(Param df, const Tensor& matrix, Matrix kind = Matrix::covariance,
          std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Wishart"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return true; }
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override;  // (df - p - 1) Sigma, NaN where df <= p + 1
  Tensor variance() const override;
  const Tensor& df() const { return df_; }
  Tensor scale_tril() const;
  Tensor covariance_matrix() const;
  Tensor precision_matrix() const;
  const Tensor& unbroadcasted_scale_tril() const { return scale_tril_; }

 private:
  Tensor bartlett(IntList sample_shape) const;  // one round of draws
  Tensor df_, scale_tril_;
};

// LKJCholesky(dim, concentration): over the lower Cholesky factors L of dim x dim correlation
// matrices (event_shape [dim, dim]), with density proportional to det(L L^T)^(concentration - 1):
// uniform over correlation matrices at concentration 1, concentrated near the identity above.
// Draws by the onion method (Lewandowski, Kurowicka and Joe, 2009), not differentiable; PyTorch's
// takes a wrong Beta parameter past the first row, so that its draws do not follow its own density
// from dim 3. dim >= 2; concentration > 0.
class LKJCholesky : public Distribution {
 public:
  LKJCholesky(int64_t dim, Param concentration = 1.0, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "LKJCholesky"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  int64_t dim() const { return dim_; }
  const Tensor& concentration() const { return concentration_; }

 private:
  int64_t dim_;
  Tensor concentration_;
};

// Reinterprets the last `reinterpreted_batch_ndims` batch dims of a distribution as event dims:
// log_prob and entropy sum over them (a diagonal Normal over vectors: Independent(Normal, 1)).
class Independent : public Distribution {
 public:
  Independent(std::shared_ptr<const Distribution> base, int64_t reinterpreted_batch_ndims,
              std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "Independent"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return base_->has_rsample(); }
  Tensor sample(IntList sample_shape = {}) const override { return base_->sample(sample_shape); }
  Tensor rsample(IntList sample_shape = {}) const override { return base_->rsample(sample_shape); }
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return base_->mean(); }
  Tensor mode() const override { return base_->mode(); }
  Tensor variance() const override { return base_->variance(); }
  // Only where no dim is reinterpreted, as PyTorch's.
  bool has_enumerate_support() const override { return ndims_ == 0 && base_->has_enumerate_support(); }
  Tensor enumerate_support(bool expand = true) const override;
  const Distribution& base() const { return *base_; }
  int64_t reinterpreted_batch_ndims() const { return ndims_; }

 private:
  std::shared_ptr<const Distribution> base_;
  int64_t ndims_;
};

// A mixture of K distributions of one family: `mixture` (a Categorical over K, of batch shape B or
// broadcasting to it) picks one of the K components of `component` (batch shape B + [K]).
// log_prob is the log of the weighted sum of the components' densities; mean and variance the
// mixture's (total variance: the weighted variances plus the spread of the means); cdf the
// weighted sum of the components' (for events of one value). Draws pick a component, then a
// value from it, and are not differentiable. Values are checked against the components' support
// by the component distribution's own validation. A mixture batch larger than the components'
// is refused (PyTorch broadcasts it).
class MixtureSameFamily : public Distribution {
 public:
  MixtureSameFamily(std::shared_ptr<const Categorical> mixture, std::shared_ptr<const Distribution> component,
                    std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "MixtureSameFamily"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor mean() const override;
  Tensor variance() const override;
  const Categorical& mixture_distribution() const { return *mixture_; }
  const Distribution& component_distribution() const { return *component_; }

 private:
  // The mixture's probabilities shaped to weigh the components' [..., K, event...] results.
  Tensor weights(const Tensor& probs) const;
  std::shared_ptr<const Categorical> mixture_;
  std::shared_ptr<const Distribution> component_;
};

// KL(p || q), of p's and q's broadcast batch shape, by PyTorch's formulas:
// - Two of the same family: every family here but StudentT, NegativeBinomial, Weibull,
//   FisherSnedecor, Kumaraswamy, VonMises, Multinomial, Wishart, LKJCholesky and the relaxed ones
//   (as PyTorch's). Independent of those with the same reinterpreted dims; Binomials with q's
//   total_count at most p's; Chi2 counts as a Gamma.
// - The pairs of families PyTorch registers: Laplace || Normal, Normal || Laplace, Exponential ||
//   Normal, Uniform || Normal, Uniform || Exponential, Gumbel || Normal, Exponential, Normal or
//   Uniform || Gumbel, Bernoulli || Poisson, Beta || Exponential, Gamma, Normal or Uniform,
//   Exponential || Gamma, Gamma || Exponential, Gumbel or Normal, Pareto || Exponential, Gamma or
//   Normal, Uniform || Beta, Gamma or Pareto; MultivariateNormal and LowRankMultivariateNormal
//   either way; ContinuousBernoulli || Exponential, Normal or Uniform; Beta or Uniform ||
//   ContinuousBernoulli. +inf where the Uniform's interval misses part of [0, 1] (CB || Uniform)
//   or reaches beyond it (Uniform || CB); PyTorch's also where an end is exactly 0 or 1.
// - +inf (of p's shape) where p's support reaches past q's: Normal, Laplace or Gumbel || Uniform,
//   Exponential, Gamma, Beta, Pareto or ContinuousBernoulli; Exponential or Gamma || Uniform, Beta,
//   Pareto or ContinuousBernoulli; Beta || Pareto; Pareto || Beta, Uniform or ContinuousBernoulli;
//   ContinuousBernoulli || Pareto; Poisson || Bernoulli or Binomial.
// +inf where p puts mass q does not, broadcast (PyTorch's masking fails where q's batch is the
// larger). Any other pair is an error naming both.
Tensor kl_divergence(const Distribution& p, const Distribution& q);

}  // namespace tandem::distributions
