// Transforms and TransformedDistribution, as torch.distributions.transforms: a distribution pushed
// through invertible element-wise maps, its log density corrected by each map's log |dy/dx|.
//
//   // A tanh-squashed Gaussian policy (soft actor-critic): actions in (-1, 1).
//   auto tanh = std::make_shared<td::distributions::TanhTransform>(/*cache_size=*/1);
//   td::distributions::TransformedDistribution policy(std::make_shared<Normal>(mu, sigma), {tanh});
//   Tensor a = policy.rsample(), log_pi = policy.log_prob(a);  // the cache gives log_prob atanh's exact input
//
// A transform with cache_size 1 remembers its last (x, y) pair, so that inverting a y it made
// returns that x itself, exactly (atanh(tanh(x)) loses x once tanh(x) rounds to +-1); as PyTorch's,
// the cache is not safe to share between threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributions/distributions.h"

namespace tandem::distributions {

class Transform {
 public:
  explicit Transform(int cache_size = 0);
  virtual ~Transform() = default;
  virtual std::string name() const = 0;  // "TanhTransform"

  Tensor operator()(const Tensor& x) const;  // y
  Tensor inv(const Tensor& y) const;         // x
  virtual Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const = 0;
  // +1 where y grows with x, -1 where it falls (none: a sign that differs by element).
  virtual std::optional<int> sign() const { return 1; }
  // Whether y lies in the transform's codomain, and the codomain's name, for validation.
  virtual Tensor in_codomain(const Tensor& y) const;
  virtual std::string codomain() const { return "Real()"; }
  // The shape of y for an x of `shape` (a transform's parameters may broadcast it), and back.
  virtual Shape forward_shape(const Shape& shape) const { return shape; }
  virtual Shape inverse_shape(const Shape& shape) const { return shape; }
  // The same map (for kl_divergence between transformed distributions): the type and parameters.
  virtual bool equals(const Transform& other) const { return name() == other.name(); }

 protected:
  virtual Tensor forward(const Tensor& x) const = 0;
  virtual Tensor inverse(const Tensor& y) const = 0;

 private:
  int cache_size_;
  mutable Tensor cached_x_, cached_y_;
};

// y = exp(x).
class ExpTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "ExpTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "GreaterThan(lower_bound=0.0)"; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// y = loc + scale x, loc and scale tensors or numbers (which take x's dtype and device).
class AffineTransform : public Transform {
 public:
  AffineTransform(Param loc, Param scale, int cache_size = 0);
  std::string name() const override { return "AffineTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<int> sign() const override;
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;
  bool equals(const Transform& other) const override;

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;

 private:
  Tensor as_tensor(const Param& p, const Tensor& like) const;
  Param loc_, scale_;
};

// y = sigmoid(x), kept within [tiny, 1 - eps] as PyTorch's so that its inverse stays finite.
class SigmoidTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "SigmoidTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "Interval(lower_bound=0.0, upper_bound=1.0)"; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// y = tanh(x); the inverse is atanh (infinite at +-1: use cache_size 1 for samples).
class TanhTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "TanhTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "Interval(lower_bound=-1.0, upper_bound=1.0)"; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// y = log(1 + exp(x)).
class SoftplusTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "SoftplusTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "GreaterThan(lower_bound=0.0)"; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// y = x^exponent on x > 0.
class PowerTransform : public Transform {
 public:
  explicit PowerTransform(double exponent, int cache_size = 0);
  std::string name() const override { return "PowerTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<int> sign() const override { return exponent_ > 0 ? 1 : -1; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "GreaterThan(lower_bound=0.0)"; }
  bool equals(const Transform& other) const override;

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;

 private:
  double exponent_;
};

// A base distribution pushed through transforms (applied in order). Its batch and event shapes are
// the base's (broadcast by the transforms' parameters); log_prob inverts the transforms and
// subtracts each log |dy/dx|; cdf and icdf need transforms of one sign throughout. No closed-form
// moments or entropy, as PyTorch's.
class TransformedDistribution : public Distribution {
 public:
  TransformedDistribution(std::shared_ptr<const Distribution> base,
                          std::vector<std::shared_ptr<const Transform>> transforms,
                          std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "TransformedDistribution"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  bool has_rsample() const override { return base_->has_rsample(); }
  Tensor sample(IntList sample_shape = {}) const override;
  Tensor rsample(IntList sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  const Distribution& base_dist() const { return *base_; }
  const std::vector<std::shared_ptr<const Transform>>& transforms() const { return transforms_; }

 private:
  int monotone_sign(const char* what) const;
  std::shared_ptr<const Distribution> base_;
  std::vector<std::shared_ptr<const Transform>> transforms_;
};

}  // namespace tandem::distributions
