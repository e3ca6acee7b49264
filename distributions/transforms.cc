#include "distributions/transforms.h"

#include <cmath>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "distributions/internal.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::softplus;
using internal::sum_rightmost;

// ---- Transform ----

Transform::Transform(int cache_size) : cache_size_(cache_size) {
  TD_CHECK(cache_size == 0 || cache_size == 1, "Transform: cache_size must be 0 or 1, got ", cache_size);
}

Tensor Transform::through_cache(const Tensor& input, bool is_x,
                                const std::function<Tensor(const Tensor&)>& compute) const {
  if (cache_size_ == 0) return compute(input);
  {
    std::lock_guard lock(cache_mutex_);
    const Tensor& key = is_x ? cached_x_ : cached_y_;
    if (key.defined() && input.is_same(key)) return is_x ? cached_y_ : cached_x_;
  }
  Tensor output = compute(input);
  std::lock_guard lock(cache_mutex_);
  (is_x ? cached_x_ : cached_y_) = input;
  (is_x ? cached_y_ : cached_x_) = output;
  return output;
}

Tensor Transform::operator()(const Tensor& x) const {
  TD_CHECK(x.defined(), name(), ": the input is an undefined tensor");
  return through_cache(x, true, [this](const Tensor& t) { return forward(t); });
}

Tensor Transform::inv(const Tensor& y) const {
  TD_CHECK(y.defined(), name(), ": the value to invert is an undefined tensor");
  return through_cache(y, false, [this](const Tensor& t) { return inverse(t); });
}

std::shared_ptr<const Transform> Transform::inv() const {
  std::shared_ptr<const Transform> self;
  try {
    self = shared_from_this();
  } catch (const std::bad_weak_ptr&) {
    TD_FAIL(name(), ": inv() needs the transform held by a std::shared_ptr (std::make_shared)");
  }
  return std::make_shared<InverseTransform>(self);
}

Tensor Transform::in_domain(const Tensor& x) const { return x == x; }
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

std::optional<Param> AffineTransform::sign() const {
  if (!scale_.is_tensor()) return scale_.number() > 0 ? 1.0 : scale_.number() < 0 ? -1.0 : 0.0;
  return Param(scale_.tensor().detach().sign());
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
  // By value, numbers and tensors alike, broadcasting, as PyTorch's __eq__.
  auto same = [](const Param& a, const Param& b) {
    if (!a.is_tensor() && !b.is_tensor()) return a.number() == b.number();
    NoGradGuard no_grad;
    const Tensor ta = a.is_tensor() ? a.tensor() : full({}, a.number(), b.tensor().options());
    const Tensor tb = b.is_tensor() ? b.tensor() : full({}, b.number(), ta.options());
    Shape shape;
    try {
      shape = broadcast_shapes(ta.sizes(), tb.sizes(), "AffineTransform");
    } catch (const Error&) {
      return false;
    }
    return (ta.to(tb.device()) == tb).all().item<bool>();
  };
  return same(loc_, o->loc_) && same(scale_, o->scale_);
}

Tensor SigmoidTransform::forward(const Tensor& x) const {
  return x.sigmoid().clamp(finfo(x.dtype()).tiny, 1 - finfo(x.dtype()).eps);
}
Tensor SigmoidTransform::inverse(const Tensor& y) const {
  const Tensor kept = y.clamp(finfo(y.dtype()).tiny, 1 - finfo(y.dtype()).eps);
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
Tensor PowerTransform::in_domain(const Tensor& x) const { return x > 0; }
Tensor PowerTransform::in_codomain(const Tensor& y) const { return y > 0; }
bool PowerTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const PowerTransform*>(&other);
  return o && o->exponent_ == exponent_;
}

// ---- InverseTransform and ComposeTransform ----

InverseTransform::InverseTransform(std::shared_ptr<const Transform> of) : of_(std::move(of)) {
  TD_CHECK(of_ != nullptr, "InverseTransform: the transform to invert is null");
}

Tensor InverseTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  return -of_->log_abs_det_jacobian(y, x);
}

bool InverseTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const InverseTransform*>(&other);
  return o && of_->equals(*o->of_);
}

ComposeTransform::ComposeTransform(std::vector<std::shared_ptr<const Transform>> parts, int cache_size)
    : Transform(cache_size), parts_(std::move(parts)) {
  for (size_t i = 0; i < parts_.size(); ++i) TD_CHECK(parts_[i] != nullptr, "ComposeTransform: part ", i, " is null");
}

Tensor ComposeTransform::forward(const Tensor& x) const {
  Tensor y = x;
  for (const auto& t : parts_) y = (*t)(y);
  return y;
}

Tensor ComposeTransform::inverse(const Tensor& y) const {
  Tensor x = y;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) x = (*it)->inv(x);
  return x;
}

Tensor ComposeTransform::log_abs_det_jacobian(const Tensor& x, const Tensor& y) const {
  if (parts_.empty()) return zeros_like(x);
  Tensor total, at = x;
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Tensor next = i + 1 == parts_.size() ? y : (*parts_[i])(at);
    const Tensor term = parts_[i]->log_abs_det_jacobian(at, next);
    total = total.defined() ? total + term : term;
    at = next;
  }
  return total;
}

std::optional<Param> ComposeTransform::sign() const {
  Param product = 1.0;
  for (const auto& t : parts_) {
    const std::optional<Param> s = t->sign();
    if (!s) return std::nullopt;
    if (!product.is_tensor() && !s->is_tensor()) {
      product = product.number() * s->number();
    } else {
      const Tensor a = product.is_tensor() ? product.tensor() : full({}, product.number(), s->tensor().options());
      product = s->is_tensor() ? Param(a * s->tensor()) : Param(a * s->number());
    }
  }
  return product;
}

Tensor ComposeTransform::in_domain(const Tensor& x) const {
  return parts_.empty() ? x == x : parts_.front()->in_domain(x);
}
std::string ComposeTransform::domain() const { return parts_.empty() ? "Real()" : parts_.front()->domain(); }
Tensor ComposeTransform::in_codomain(const Tensor& y) const {
  return parts_.empty() ? y == y : parts_.back()->in_codomain(y);
}
std::string ComposeTransform::codomain() const { return parts_.empty() ? "Real()" : parts_.back()->codomain(); }

Shape ComposeTransform::forward_shape(const Shape& shape) const {
  Shape s = shape;
  for (const auto& t : parts_) s = t->forward_shape(s);
  return s;
}

Shape ComposeTransform::inverse_shape(const Shape& shape) const {
  Shape s = shape;
  for (auto it = parts_.rbegin(); it != parts_.rend(); ++it) s = (*it)->inverse_shape(s);
  return s;
}

bool ComposeTransform::equals(const Transform& other) const {
  const auto* o = dynamic_cast<const ComposeTransform*>(&other);
  if (!o || o->parts_.size() != parts_.size()) return false;
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (!parts_[i]->equals(*o->parts_[i])) return false;
  }
  return true;
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
                   validate_args),
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

Tensor TransformedDistribution::monotonize(const Tensor& p, const char* what) const {
  const std::optional<Param> sign = ComposeTransform(transforms_).sign();
  TD_CHECK(sign.has_value(), "TransformedDistribution: ", what, " needs each transform's sign, and one has none");
  if (!sign->is_tensor() && sign->number() == 1) return p;
  const Tensor s = sign->is_tensor() ? sign->tensor() : full({}, sign->number(), p.options());
  return s * (p - 0.5) + 0.5;
}

Tensor TransformedDistribution::cdf(const Tensor& value) const {
  Tensor x = value;
  for (auto it = transforms_.rbegin(); it != transforms_.rend(); ++it) x = (*it)->inv(x);
  return monotonize(base_->cdf(x), "cdf");
}

Tensor TransformedDistribution::icdf(const Tensor& value) const {
  Tensor x = base_->icdf(monotonize(value, "icdf"));
  for (const auto& t : transforms_) x = (*t)(x);
  return x;
}

}  // namespace tandem::distributions
