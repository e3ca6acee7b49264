// Transforms and TransformedDistribution, as torch.distributions.transforms: a distribution pushed
// through invertible maps, its log density corrected by each map's log |det dy/dx|. Most maps act
// element by element; StickBreakingTransform and CorrCholeskyTransform map vectors, the Cholesky
// and positive-definite transforms matrices, IndependentTransform and ReshapeTransform treat
// rightmost dims as one event, and CatTransform and StackTransform send slices of x through
// transforms of their own.
//
//   // A tanh-squashed Gaussian policy (soft actor-critic): actions in (-1, 1).
//   auto tanh = std::make_shared<td::distributions::TanhTransform>(/*cache_size=*/1);
//   td::distributions::TransformedDistribution policy(std::make_shared<Normal>(mu, sigma), {tanh});
//   Tensor a = policy.rsample(), log_pi = policy.log_prob(a);  // the cache gives log_prob atanh's exact input
//
// A transform with cache_size 1 remembers its last (x, y) pair, so that inverting a y it made
// returns that x itself, exactly (atanh(tanh(x)) loses x once tanh(x) rounds to +-1). The pair is
// guarded by a lock, so threads may share a transform; but one thread's draw can replace the
// pair another is about to invert, so give each thread (each DataParallel replica) its own
// cached transforms.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "distributions/distributions.h"

namespace tandem::distributions {

class Transform : public std::enable_shared_from_this<Transform> {
 public:
  explicit Transform(int cache_size = 0);
  virtual ~Transform() = default;
  virtual std::string name() const = 0;  // "TanhTransform"

  Tensor operator()(const Tensor& x) const;  // y
  Tensor inv(const Tensor& y) const;         // x
  // The inverse map as a transform (PyTorch's t.inv): a transform held by a shared_ptr only.
  std::shared_ptr<const Transform> inv() const;
  virtual Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const = 0;
  // +1 where y grows with x, -1 where it falls, 0 where it is constant: a number, or a tensor of
  // one sign per element (an affine map's scale); none where a transform has no sign (the default).
  virtual std::optional<Param> sign() const { return std::nullopt; }
  // Whether x lies in the domain and y in the codomain, with their names, for validation.
  virtual Tensor in_domain(const Tensor& x) const;
  virtual std::string domain() const { return "Real()"; }
  virtual Tensor in_codomain(const Tensor& y) const;
  virtual std::string codomain() const { return "Real()"; }
  // The shape of y for an x of `shape` (a transform's parameters may broadcast it), and back.
  virtual Shape forward_shape(const Shape& shape) const { return shape; }
  virtual Shape inverse_shape(const Shape& shape) const { return shape; }
  // How many rightmost dims make one point of the domain and of the codomain: 0 for the
  // element-wise maps, 1 for a map of vectors. log_abs_det_jacobian has x's shape less the
  // domain's event dims.
  virtual int64_t domain_event_dim() const { return 0; }
  virtual int64_t codomain_event_dim() const { return 0; }
  // The same map (for kl_divergence between transformed distributions). By default only the
  // same object, as PyTorch's; the transforms here compare their type and parameters.
  virtual bool equals(const Transform& other) const { return this == &other; }

 protected:
  virtual Tensor forward(const Tensor& x) const = 0;
  virtual Tensor inverse(const Tensor& y) const = 0;
  // For equals: the other transform is of this one's class.
  template <typename T>
  static bool same_class(const Transform& other) {
    return dynamic_cast<const T*>(&other) != nullptr;
  }

 private:
  // The other half of the cached pair where `input` is its x (is_x) or y; else compute, and cache.
  Tensor through_cache(const Tensor& input, bool is_x, const std::function<Tensor(const Tensor&)>& compute) const;
  int cache_size_;
  mutable std::mutex cache_mutex_;
  mutable Tensor cached_x_, cached_y_;
};

// y = exp(x).
class ExpTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "ExpTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override { return 1.0; }
  bool equals(const Transform& other) const override { return same_class<ExpTransform>(other); }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "GreaterThan(lower_bound=0.0)"; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// y = loc + scale x, loc and scale tensors or numbers (which take x's dtype and device), over
// events of x's `event_dim` rightmost dims: log |dy/dx| sums log |scale| over each event, scale
// broadcast to x first (PyTorch sums a tensor scale over its own dims, so a 0-dim scale counts
// once per event, not once per element).
class AffineTransform : public Transform {
 public:
  AffineTransform(Param loc, Param scale, int64_t event_dim = 0, int cache_size = 0);
  std::string name() const override { return "AffineTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override;
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override;
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return domain(); }
  int64_t domain_event_dim() const override { return event_dim_; }
  int64_t codomain_event_dim() const override { return event_dim_; }
  bool equals(const Transform& other) const override;

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;

 private:
  Tensor as_tensor(const Param& p, const Tensor& like) const;
  Param loc_, scale_;
  int64_t event_dim_;
};

// y = sigmoid(x), kept within [tiny, 1 - eps] as PyTorch's so that its inverse stays finite.
class SigmoidTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "SigmoidTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override { return 1.0; }
  bool equals(const Transform& other) const override { return same_class<SigmoidTransform>(other); }
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
  std::optional<Param> sign() const override { return 1.0; }
  bool equals(const Transform& other) const override { return same_class<TanhTransform>(other); }
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
  std::optional<Param> sign() const override { return 1.0; }
  bool equals(const Transform& other) const override { return same_class<SoftplusTransform>(other); }
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
  std::optional<Param> sign() const override { return exponent_ > 0 ? 1.0 : -1.0; }
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override { return "GreaterThan(lower_bound=0.0)"; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "GreaterThan(lower_bound=0.0)"; }
  bool equals(const Transform& other) const override;

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;

 private:
  double exponent_;
};

// y = |x|: not invertible (inv gives y itself, as PyTorch's), so it has no log |dy/dx|; a
// TransformedDistribution with it can sample but not give log_prob.
class AbsTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "AbsTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  bool equals(const Transform& other) const override { return same_class<AbsTransform>(other); }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "GreaterThan(lower_bound=0.0)"; }

 protected:
  Tensor forward(const Tensor& x) const override { return x.abs(); }
  Tensor inverse(const Tensor& y) const override { return y; }
};

// The stick-breaking map from vectors of K - 1 reals onto the simplex of K dims: y_i takes the
// fraction z_i = sigmoid(x_i - log(K - 1 - i)) of what the earlier ones left, and y_K the rest, so
// x = 0 maps to the centre. A bijection of vectors (event_dim 1 on both sides), as PyTorch's
// StickBreakingTransform, but exact where PyTorch's loses x: its inverse reads what is left from
// the tail sums of y, not from 1 - cumsum(y), and the forward map keeps y_i's tail where y_i
// rounds to 1 (PyTorch's gives back at most about 36 in float64 for any larger x_i).
class StickBreakingTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "StickBreakingTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  bool equals(const Transform& other) const override { return same_class<StickBreakingTransform>(other); }
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override { return "IndependentConstraint(Real(), 1)"; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "Simplex()"; }
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;
  int64_t domain_event_dim() const override { return 1; }
  int64_t codomain_event_dim() const override { return 1; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// y = softmax(x) over the last dim, onto the simplex. Not invertible: inv gives log y, one of the
// x that map to y, and there is no log |det dy/dx| (PyTorch's neither).
class SoftmaxTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "SoftmaxTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  bool equals(const Transform& other) const override { return same_class<SoftmaxTransform>(other); }
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override { return "IndependentConstraint(Real(), 1)"; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "Simplex()"; }
  int64_t domain_event_dim() const override { return 1; }
  int64_t codomain_event_dim() const override { return 1; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override { return y.log(); }
};

// The map from vectors of D (D - 1) / 2 reals onto the Cholesky factors of D x D correlation
// matrices (lower triangular, a positive diagonal, rows of unit norm), as PyTorch's
// CorrCholeskyTransform: tanh takes each x into (-1, 1), those fill the strict lower triangle row
// by row, and stick-breaking along each row makes it a unit vector. event_dim 1 in, 2 out. The
// forward map takes sqrt(1 - tanh(x)^2) as 1 / cosh(x), so the diagonal keeps its digits where
// tanh(x) nears 1 (PyTorch's clamps tanh below 1 - eps, which floors each factor near 2e-8); the
// inverse reads each row's remaining norm from tail sums of y^2, not 1 - cumsum.
class CorrCholeskyTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "CorrCholeskyTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  bool equals(const Transform& other) const override { return same_class<CorrCholeskyTransform>(other); }
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override { return "IndependentConstraint(Real(), 1)"; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "CorrCholesky()"; }
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;
  int64_t domain_event_dim() const override { return 1; }
  int64_t codomain_event_dim() const override { return 2; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// Square matrices onto lower-triangular ones with a positive diagonal: x's strict lower triangle
// and the exp of its diagonal (PyTorch's LowerCholeskyTransform). It ignores x's upper triangle,
// so it has no log |det dy/dx| (PyTorch's neither).
class LowerCholeskyTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "LowerCholeskyTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  bool equals(const Transform& other) const override { return same_class<LowerCholeskyTransform>(other); }
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override { return "IndependentConstraint(Real(), 2)"; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "LowerCholesky()"; }
  int64_t domain_event_dim() const override { return 2; }
  int64_t codomain_event_dim() const override { return 2; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// Square matrices onto positive-definite ones: L L^T for L = LowerCholeskyTransform(x); the
// inverse takes y's Cholesky factor back. No log |det dy/dx|, as LowerCholeskyTransform.
class PositiveDefiniteTransform : public Transform {
 public:
  using Transform::Transform;
  std::string name() const override { return "PositiveDefiniteTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  bool equals(const Transform& other) const override { return same_class<PositiveDefiniteTransform>(other); }
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override { return "IndependentConstraint(Real(), 2)"; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "PositiveDefinite()"; }
  int64_t domain_event_dim() const override { return 2; }
  int64_t codomain_event_dim() const override { return 2; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
};

// y = distribution.cdf(x), onto [0, 1]; the inverse is its icdf and log |dy/dx| its log density
// (PyTorch's CumulativeDistributionTransform). A TransformedDistribution of a distribution through
// its own cdf is uniform. Equal only to itself, as PyTorch's.
class CumulativeDistributionTransform : public Transform {
 public:
  explicit CumulativeDistributionTransform(std::shared_ptr<const Distribution> distribution, int cache_size = 0);
  std::string name() const override { return "CumulativeDistributionTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override { return 1.0; }
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override { return "Interval(lower_bound=0.0, upper_bound=1.0)"; }
  int64_t domain_event_dim() const override { return static_cast<int64_t>(distribution_->event_shape().size()); }
  int64_t codomain_event_dim() const override { return domain_event_dim(); }
  const Distribution& distribution() const { return *distribution_; }

 protected:
  Tensor forward(const Tensor& x) const override { return distribution_->cdf(x); }
  Tensor inverse(const Tensor& y) const override { return distribution_->icdf(y); }

 private:
  std::shared_ptr<const Distribution> distribution_;
};

// A transform whose `reinterpreted_batch_ndims` rightmost batch dims join its event: the same map,
// its log |dy/dx| summed over them (PyTorch's IndependentTransform).
class IndependentTransform : public Transform {
 public:
  IndependentTransform(std::shared_ptr<const Transform> base, int64_t reinterpreted_batch_ndims, int cache_size = 0);
  std::string name() const override { return "IndependentTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override { return base_->sign(); }
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override;
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override;
  Shape forward_shape(const Shape& shape) const override { return base_->forward_shape(shape); }
  Shape inverse_shape(const Shape& shape) const override { return base_->inverse_shape(shape); }
  int64_t domain_event_dim() const override { return base_->domain_event_dim() + ndims_; }
  int64_t codomain_event_dim() const override { return base_->codomain_event_dim() + ndims_; }
  bool equals(const Transform& other) const override;
  const Transform& base() const { return *base_; }
  int64_t reinterpreted_batch_ndims() const { return ndims_; }

 protected:
  Tensor forward(const Tensor& x) const override { return (*base_)(x); }
  Tensor inverse(const Tensor& y) const override { return base_->inv(y); }

 private:
  std::shared_ptr<const Transform> base_;
  int64_t ndims_;
};

// Reshapes the rightmost dims of x, an event of in_shape, to out_shape (as many elements);
// log |dy/dx| is 0 (PyTorch's ReshapeTransform).
class ReshapeTransform : public Transform {
 public:
  ReshapeTransform(Shape in_shape, Shape out_shape, int cache_size = 0);
  std::string name() const override { return "ReshapeTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override { return 1.0; }
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;
  int64_t domain_event_dim() const override { return static_cast<int64_t>(in_shape_.size()); }
  int64_t codomain_event_dim() const override { return static_cast<int64_t>(out_shape_.size()); }
  bool equals(const Transform& other) const override;

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;

 private:
  // `shape` with its rightmost `from` dims replaced by `to` (named for errors as `what`).
  Shape replaced(const Shape& shape, const Shape& from, const Shape& to, const char* what) const;
  Shape in_shape_, out_shape_;
};

// What CatTransform and StackTransform share: transforms (the parts) applied to slices of x along
// `dim`. The event has the most dims of any part's; the sign is the parts' where they all have
// the same number; the constraints list the parts' ("Cat([Real(), Positive()], dim=0, ...)"), and
// two such transforms are equal where their kind, arguments and parts are.
class PartwiseTransform : public Transform {
 public:
  std::optional<Param> sign() const override;
  std::string domain() const override { return constraint(true); }
  std::string codomain() const override { return constraint(false); }
  int64_t domain_event_dim() const override;
  int64_t codomain_event_dim() const override;
  bool equals(const Transform& other) const override;

 protected:
  // Refuses no parts or a null one, naming the transform as `kind` ("CatTransform").
  PartwiseTransform(std::vector<std::shared_ptr<const Transform>> parts, int64_t dim, int cache_size,
                    const char* kind);
  // What the constraints show after the parts: "dim=-1, lengths=[2, 3]".
  virtual std::string arguments() const;
  std::vector<std::shared_ptr<const Transform>> parts_;
  int64_t dim_;

 private:
  std::string constraint(bool of_domain) const;
};

// Transforms applied to consecutive slices of x along `dim`, part i to lengths[i] of them (1 each
// by default), the results concatenated (PyTorch's CatTransform). The event has the most dims of
// any part's. Where dim lies left of it, a batch dim, the parts may change the sizes of their
// event dims alike but not their number (stick-breaking rows, not vectors to matrices), and their
// log |dy/dx| are concatenated along dim; where dim lies inside it, a part may change its slice's
// length along dim only (stick-breaking, with dim the last; PyTorch's keeps every length) and the
// parts' log |dy/dx| add up. The sign is the parts' where they all have the same number.
class CatTransform : public PartwiseTransform {
 public:
  CatTransform(std::vector<std::shared_ptr<const Transform>> parts, int64_t dim = 0, std::vector<int64_t> lengths = {},
               int cache_size = 0);
  std::string name() const override { return "CatTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Tensor in_domain(const Tensor& x) const override;
  Tensor in_codomain(const Tensor& y) const override;
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;
  std::string arguments() const override;

 private:
  // dim as an index into a tensor of `rank` dims, checked.
  int64_t dim_in(int64_t rank, const char* what) const;
  // Whether dim (an index into `rank` dims) lies left of every part's event.
  bool dim_is_batch(int64_t dim, int64_t rank) const;
  // Each part's length along dim in the codomain, for an x of `shape`, its images checked.
  std::vector<int64_t> codomain_lengths(const Shape& shape, int64_t dim) const;
  // Per-part results (log |dy/dx| or membership), each reduced over the whole's event of
  // `event_dim` dims: concatenated along dim where it is left of the event, else combined (added,
  // or all true). rank: the dims of the tensor they came from.
  Tensor join(std::vector<Tensor> pieces, int64_t dim, int64_t rank, int64_t event_dim, bool add) const;
  std::vector<int64_t> lengths_;
};

// Transforms applied to the slices x.select(dim, i), part i to slice i, the results stacked
// along dim (PyTorch's StackTransform). dim must be a batch dim: left of the parts' event dims.
// So the event is the parts' (the most dims of any), and log |dy/dx| is theirs stacked along dim.
// A negative dim counts from the right of x, and names the same batch dim of y where the parts
// change the number of event dims.
// PyTorch counts a negative dim as an event dim, and its log_prob then fails (stacking along -1
// of element-wise parts); here that dim stays a batch dim: wrap the transform in
// IndependentTransform to make it one event.
class StackTransform : public PartwiseTransform {
 public:
  explicit StackTransform(std::vector<std::shared_ptr<const Transform>> parts, int64_t dim = 0, int cache_size = 0);
  std::string name() const override { return "StackTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  Tensor in_domain(const Tensor& x) const override;
  Tensor in_codomain(const Tensor& y) const override;
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;

 private:
  // dim as an index into a tensor of `shape` whose rightmost `event_dim` dims are the event,
  // checked: inside the shape, left of the event, as long as there are parts.
  int64_t dim_in(const Shape& shape, int64_t event_dim, const char* what) const;
  // apply(i, slice i of t) for each part i, stacked along dim.
  Tensor stacked(const Tensor& t, int64_t event_dim, const char* what,
                 const std::function<Tensor(size_t, const Tensor&)>& apply) const;
  Shape stacked_shape(const Shape& shape, bool forward) const;
};

// The inverse of a transform (Transform::inv()): its forward is the other's inverse, and its log
// |dy/dx| the other's negated at the swapped pair.
class InverseTransform : public Transform {
 public:
  explicit InverseTransform(std::shared_ptr<const Transform> of);
  std::string name() const override { return of_->name() + ".inv"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override { return of_->sign(); }
  Tensor in_domain(const Tensor& x) const override { return of_->in_codomain(x); }
  std::string domain() const override { return of_->codomain(); }
  Tensor in_codomain(const Tensor& y) const override { return of_->in_domain(y); }
  std::string codomain() const override { return of_->domain(); }
  Shape forward_shape(const Shape& shape) const override { return of_->inverse_shape(shape); }
  Shape inverse_shape(const Shape& shape) const override { return of_->forward_shape(shape); }
  int64_t domain_event_dim() const override { return of_->codomain_event_dim(); }
  int64_t codomain_event_dim() const override { return of_->domain_event_dim(); }
  bool equals(const Transform& other) const override;
  const Transform& of() const { return *of_; }

 protected:
  Tensor forward(const Tensor& x) const override { return of_->inv(x); }
  Tensor inverse(const Tensor& y) const override { return (*of_)(y); }

 private:
  std::shared_ptr<const Transform> of_;
};

// Transforms applied in order as one (PyTorch's ComposeTransform): log |dy/dx| adds up along the
// way (each part's summed over the dims the whole takes as one event), and the sign multiplies.
class ComposeTransform : public Transform {
 public:
  explicit ComposeTransform(std::vector<std::shared_ptr<const Transform>> parts, int cache_size = 0);
  std::string name() const override { return "ComposeTransform"; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const override;
  std::optional<Param> sign() const override;
  Tensor in_domain(const Tensor& x) const override;
  std::string domain() const override;
  Tensor in_codomain(const Tensor& y) const override;
  std::string codomain() const override;
  Shape forward_shape(const Shape& shape) const override;
  Shape inverse_shape(const Shape& shape) const override;
  int64_t domain_event_dim() const override;
  int64_t codomain_event_dim() const override;
  bool equals(const Transform& other) const override;
  const std::vector<std::shared_ptr<const Transform>>& parts() const { return parts_; }

 protected:
  Tensor forward(const Tensor& x) const override;
  Tensor inverse(const Tensor& y) const override;

 private:
  std::vector<std::shared_ptr<const Transform>> parts_;
};

// A base distribution pushed through transforms (applied in order). Its shape is the transforms'
// forward_shape of the base's (broadcast by their parameters); its event has the base's dims or
// the transforms' codomain event dims, whichever is more (StickBreakingTransform makes a
// Normal's batch of K - 1 numbers one event of K). A base whose event has fewer dims than the
// transforms' domain takes its rightmost batch dims as event dims (Independent). log_prob inverts
// the transforms and subtracts each log |det dy/dx|; cdf and icdf need every transform's sign (a
// decreasing map turns p into 1 - p, element by element for an affine map's tensor scale). No
// closed-form moments or entropy, as PyTorch's. validate_args defaults to the global setting, not
// the base's.
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
  // The base as the transforms take it (expanded, its batch dims made event dims as they need),
  // and the shapes of the result.
  struct Prepared {
    std::shared_ptr<const Distribution> base;
    Shape batch, event;
  };
  static Prepared prepare(std::shared_ptr<const Distribution> base,
                          const std::vector<std::shared_ptr<const Transform>>& transforms);
  TransformedDistribution(Prepared prepared, const std::vector<std::shared_ptr<const Transform>>& transforms,
                          std::optional<bool> validate_args);
  // The transforms' product of signs, which cdf and icdf (`what`) need.
  Param sign(const char* what) const;
  // p made increasing in the value: sign (p - 1/2) + 1/2.
  static Tensor monotonize(const Tensor& p, const Param& sign);
  std::shared_ptr<const Distribution> base_;
  std::vector<std::shared_ptr<const Transform>> transforms_;
};

// RelaxedBernoulli(temperature, probs | logits): the sigmoid of a LogitRelaxedBernoulli draw, on
// (0, 1), differentiable in the parameters; as the temperature goes to 0 its draws become
// Bernoulli draws.
class RelaxedBernoulli : public TransformedDistribution {
 public:
  RelaxedBernoulli(Param temperature, Param parameter, Given given = Given::probs,
                   std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "RelaxedBernoulli"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  const Tensor& temperature() const { return logit_dist().temperature(); }
  const Tensor& probs() const { return logit_dist().probs(); }
  const Tensor& logits() const { return logit_dist().logits(); }

 private:
  const LogitRelaxedBernoulli& logit_dist() const;
  Given given_;
};

// LogisticNormal(loc, scale): the stick-breaking map (StickBreakingTransform) of a Normal(loc,
// scale) vector of K - 1 numbers, a point of the simplex of K dims: event_shape [K] for loc and
// scale broadcast to [..., K - 1]; two numbers give K = 2.
class LogisticNormal : public TransformedDistribution {
 public:
  LogisticNormal(Param loc, Param scale, std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "LogisticNormal"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  const Tensor& loc() const { return normal().loc(); }
  const Tensor& scale() const { return normal().scale(); }

 private:
  const Normal& normal() const;
};

// RelaxedOneHotCategorical(temperature, probs | logits): the exp of an ExpRelaxedCategorical draw,
// a point of the simplex (event_shape [K]): the Gumbel-softmax. log_prob checks its value against
// the simplex, as PyTorch's.
class RelaxedOneHotCategorical : public TransformedDistribution {
 public:
  RelaxedOneHotCategorical(Param temperature, const Tensor& parameter, Given given = Given::probs,
                           std::optional<bool> validate_args = std::nullopt);
  std::string name() const override { return "RelaxedOneHotCategorical"; }
  std::shared_ptr<Distribution> expand(const Shape& batch_shape) const override;
  Tensor log_prob(const Tensor& value) const override;
  const Tensor& temperature() const { return log_dist().temperature(); }
  const Tensor& probs() const { return log_dist().probs(); }
  const Tensor& logits() const { return log_dist().logits(); }

 private:
  const ExpRelaxedCategorical& log_dist() const;
  Given given_;
};

}  // namespace tandem::distributions
