#include "distributions/transforms.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "distributions/internal.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::machine_epsilon;
using internal::softplus;
using internal::sum_rightmost;
using internal::tiniest;

// ---- Transform ----

Transform::Transform(int cache_size) : cache_size_(cache_size) {
  TD_CHECK(cache_size == 0 || cache_size == 1, "Transform: cache_size must be 0 or 1, got ", cache_size);
}

Tensor Transform::operator()(const Tensor& x) const {
  TD_CHECK(x.defined(), name(), ": the input is an undefined tensor");
  if (cache_size_ == 1 && cached_x_.defined() && x.is_same(cached_x_)) return cached_y_;
  Tensor y = forward(x);
  if (cache_size_ == 1) {
    cached_x_ = x;
    cached_y_ = y;
  }
  return y;
}

Tensor Transform::inv(const Tensor& y) const {
  TD_CHECK(y.defined(), name(), ": the value to invert is an undefined tensor");
  if (cache_size_ == 1 && cached_y_.defined() && y.is_same(cached_y_)) return cached_x_;
  Tensor x = inverse(y);
  if (cache_size_ == 1) {
    cached_x_ = x;
    cached_y_ = y;
  }
  return x;
}

Tensor Transform::in_codomain(const Tensor& y) const { return y == y; }

// ---- the transforms ----

Tensor ExpTransform::forward(const Tensor& x) const { return x.exp(); }
Tensor ExpTransform::inverse(const Tensor& y) const { return y.log(); }
Tensor ExpTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const { return x; }
Tensor ExpTransform::in_codomain(const Tensor& y) const { return y > 0; }

AffineTransform::AffineTransform(Param loc, Param scale, int cache_size)
    : Transform(cache_size), loc_(std::move(loc)), scale_(std::move(scale)) {
  for (const Param* p : {&loc_, &scale_}) {
    TD_CHECK(!p->is_tensor() || (p->tensor().defined() && is_floating(p->tensor().dtype())),
             "AffineTransform: loc and scale must be floating tensors or numbers");
  }
}

Tensor AffineTransform::as_tensor(const Param& p, const Tensor& like) const {
  return p.is_tensor() ? p.tensor() : full({}, p.number(), like.options());
}

Tensor AffineTransform::forward(const Tensor& x) const { return as_tensor(loc_, x) + as_tensor(scale_, x) * x; }
Tensor AffineTransform::inverse(const Tensor& y) const { return (y - as_tensor(loc_, y)) / as_tensor(scale_, y); }

Tensor AffineTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  const Tensor result = as_tensor(scale_, x).abs().log();
  return result.expand(broadcast_shapes(result.sizes(), x.sizes(), "AffineTransform"));
}

std::optional<int> AffineTransform::sign() const {
  if (!scale_.is_tensor()) return scale_.number() > 0 ? 1 : scale_.number() < 0 ? -1 : 0;
  NoGradGuard no_grad;
  if ((scale_.tensor() > 0).all().item<bool>()) return 1;
  if ((scale_.tensor() < 0).all().item<bool>()) return -1;
  return std::nullopt;
}

Shape AffineTransform::forward_shape(const Shape& shape) const {
  Shape s = shape;
  for (const Param* p : {&loc_, &scale_}) {
    if (p->is_tensor()) s = broadcast_shapes(s, p->tensor().sizes(), "AffineTransform");
  }
  return s;
}

Shape AffineTransform::inverse_shape(const Shape& shape) const { return forward_shape(shape); }

bool AffineTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const AffineTransform*>(&other);
  if (!o) return false;
  auto same = [](const Param& a, const Param& b) {
    if (a.is_tensor() != b.is_tensor()) return false;
    if (!a.is_tensor()) return a.number() == b.number();
    NoGradGuard no_grad;
    return a.tensor().sizes() == b.tensor().sizes() && (a.tensor() == b.tensor()).all().item<bool>();
  };
  return same(loc_, o->loc_) && same(scale_, o->scale_);
}

Tensor SigmoidTransform::forward(const Tensor& x) const {
  return x.sigmoid().clamp(tiniest(x.dtype()), 1 - machine_epsilon(x.dtype()));
}
Tensor SigmoidTransform::inverse(const Tensor& y) const {
  const Tensor kept = y.clamp(tiniest(y.dtype()), 1 - machine_epsilon(y.dtype()));
  return kept.log() - (-kept).log1p();
}
Tensor SigmoidTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return -softplus(-x) - softplus(x);
}
Tensor SigmoidTransform::in_codomain(const Tensor& y) const { return (y >= 0) & (y <= 1); }

Tensor TanhTransform::forward(const Tensor& x) const { return x.tanh(); }
Tensor TanhTransform::inverse(const Tensor& y) const { return y.atanh(); }
// log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable where tanh(x) rounds to 1.
Tensor TanhTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const {
  return (std::numbers::ln2 - x - softplus(x * -2)) * 2;
}
Tensor TanhTransform::in_codomain(const Tensor& y) const { return (y >= -1) & (y <= 1); }

Tensor SoftplusTransform::forward(const Tensor& x) const { return softplus(x); }
Tensor SoftplusTransform::inverse(const Tensor& y) const { return y + (-(-y).expm1()).log(); }
Tensor SoftplusTransform::log_abs_det_jacobian(const Tensor& x, const Tensor&) const { return -softplus(-x); }
Tensor SoftplusTransform::in_codomain(const Tensor& y) const { return y > 0; }

PowerTransform::PowerTransform(double exponent, int cache_size) : Transform(cache_size), exponent_(exponent) {
  TD_CHECK(exponent != 0 && std::isfinite(exponent), "PowerTransform: the exponent must be finite and not 0, got ",
           exponent);
}
Tensor PowerTransform::forward(const Tensor& x) const { return x.pow(exponent_); }
Tensor PowerTransform::inverse(const Tensor& y) const { return y.pow(1 / exponent_); }
Tensor PowerTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  return (y * exponent_ / x).abs().log();
}
Tensor PowerTransform::in_codomain(const Tensor& y) const { return y > 0; }
bool PowerTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const PowerTransform*>(&other);
  return o && o->exponent_ == exponent_;
}

// ---- TransformedDistribution ----

namespace {

struct Shapes {
  Shape batch, event;
};

Shapes transformed_shapes(const std::shared_ptr<const Distribution>& base,
                          const std::vector<std::shared_ptr<const Transform>>& transforms) {
  TD_CHECK(base != nullptr, "TransformedDistribution: the base distribution is null");
  for (size_t i = 0; i < transforms.size(); ++i) {
    TD_CHECK(transforms[i] != nullptr, "TransformedDistribution: transform ", i, " is null");
  }
  Shape shape = base->batch_shape();
  shape.insert(shape.end(), base->event_shape().begin(), base->event_shape().end());
  for (const auto& t : transforms) shape = t->forward_shape(shape);
  const size_t event = base->event_shape().size();
  const Shape batch(shape.begin(), shape.end() - static_cast<int64_t>(event));
  return {batch, base->event_shape()};
}

}  // namespace

TransformedDistribution::TransformedDistribution(std::shared_ptr<const Distribution> base,
                                                 std::vector<std::shared_ptr<const Transform>> transforms,
                                                 std::optional<bool> validate_args)
    : Distribution(transformed_shapes(base, transforms).batch, transformed_shapes(base, transforms).event,
                   validate_args.value_or(base ? base->validates() : default_validate_args())),
      base_(std::move(base)),
      transforms_(std::move(transforms)) {
  // A transform's parameters may widen the batch: the base is expanded to it, as PyTorch's.
  if (base_->batch_shape() != batch_shape()) base_ = base_->expand(batch_shape());
}

std::shared_ptr<Distribution> TransformedDistribution::expand(const Shape& batch_shape) const {
  return std::make_shared<TransformedDistribution>(base_->expand(batch_shape), transforms_, validates());
}

Tensor TransformedDistribution::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  Tensor x = base_->sample(sample_shape);
  for (const auto& t : transforms_) x = (*t)(x);
  return x;
}

Tensor TransformedDistribution::rsample(IntList sample_shape) const {
  Tensor x = base_->rsample(sample_shape);
  for (const auto& t : transforms_) x = (*t)(x);
  return x;
}

Tensor TransformedDistribution::log_prob(const Tensor& value) const {
  const std::string support = transforms_.empty() ? "the base's support" : transforms_.back()->codomain();
  check_value(value, [&] { return transforms_.empty() ? value == value : transforms_.back()->in_codomain(value); },
              support);
  const int64_t event_dims = static_cast<int64_t>(event_shape().size());
  Tensor correction;  // the sum of every log |dy/dx|
  Tensor y = value;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) {
    const Tensor x = (*it)->inv(y);
    const Tensor term = sum_rightmost((*it)->log_abs_det_jacobian(x, y), event_dims);
    correction = correction.defined() ? correction + term : term;
    y = x;
  }
  const Tensor base = base_->log_prob(y);
  return correction.defined() ? base - correction : base;
}

int TransformedDistribution::monotone_sign(const char* what) const {
  int sign = 1;
  for (const auto& t : transforms_) {
    const std::optional<int> s = t->sign();
    TD_CHECK(s.has_value() && *s != 0, "TransformedDistribution: ", what, " needs monotone transforms, but ", t->name(),
             " has a sign that differs by element");
    sign *= *s;
  }
  return sign;
}

Tensor TransformedDistribution::cdf(const Tensor& value) const {
  const int sign = monotone_sign("cdf");
  Tensor x = value;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) x = (*it)->inv(x);
  const Tensor p = base_->cdf(x);
  return sign == 1 ? p : 1 - p;
}

Tensor TransformedDistribution::icdf(const Tensor& value) const {
  const int sign = monotone_sign("icdf");
  Tensor x = base_->icdf(sign == 1 ? value : 1 - value);
  for (const auto& t : transforms_) x = (*t)(x);
  return x;
}

}  // namespace tandem::distributions
