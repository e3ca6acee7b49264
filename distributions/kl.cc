// kl_divergence: KL(p || q) for the pairs of distributions PyTorch registers, by their closed
// forms, +inf where p puts mass where q has none.
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "distributions/distributions.h"
#include "distributions/internal.h"
#include "distributions/transforms.h"

namespace tandem::distributions {

using internal::half_log_det;
using internal::joined;
using internal::kEulerGamma;
using internal::mahalanobis;
using internal::softplus;
using internal::sum_rightmost;

namespace {

template <typename D>
const D* as(const Distribution& d) {
  return dynamic_cast<const D*>(&d);
}

const double kInf = std::numeric_limits<double>::infinity();

// A distribution as a base through transforms: a TransformedDistribution, or a LogNormal (a
// Normal through exp).
struct TransformedForm {
  const Distribution* base;
  std::vector<std::shared_ptr<const Transform>> transforms;
};

std::optional<TransformedForm> transformed_form(const Distribution& d) {
  if (const auto* t = as<TransformedDistribution>(d)) return TransformedForm{&t->base_dist(), t->transforms()};
  if (const auto* t = as<LogNormal>(d)) return TransformedForm{&t->base_dist(), {std::make_shared<ExpTransform>()}};
  return std::nullopt;
}

Tensor kl(const Normal& p, const Normal& q) {
  const Tensor var_ratio = (p.scale() / q.scale()).pow(2);
  const Tensor t1 = ((p.loc() - q.loc()) / q.scale()).pow(2);
  return 0.5 * (var_ratio + t1 - 1 - var_ratio.log());
}

Tensor kl(const Uniform& p, const Uniform& q) {
  const Tensor result = ((q.high() - q.low()) / (p.high() - p.low())).log();
  return where((q.low() > p.low()) | (q.high() < p.high()), kInf, result);
}

Tensor kl(const Exponential& p, const Exponential& q) {
  const Tensor ratio = q.rate() / p.rate();
  return -ratio.log() + ratio - 1;
}

Tensor kl(const Laplace& p, const Laplace& q) {
  const Tensor scale_ratio = p.scale() / q.scale();
  const Tensor distance = (p.loc() - q.loc()).abs();
  return -scale_ratio.log() + distance / q.scale() + scale_ratio * (-distance / p.scale()).exp() - 1;
}

Tensor kl(const Bernoulli& p, const Bernoulli& q) {
  Tensor t1 = p.probs() * (softplus(-q.logits()) - softplus(-p.logits()));
  t1 = where(p.probs() == 0, 0.0, where(q.probs() == 0, kInf, t1));
  Tensor t2 = (1 - p.probs()) * (softplus(q.logits()) - softplus(p.logits()));
  t2 = where(p.probs() == 1, 0.0, where(q.probs() == 1, kInf, t2));
  return t1 + t2;
}

Tensor kl(const Categorical& p, const Categorical& q) {
  TD_CHECK(p.num_events() == q.num_events(), "kl_divergence: Categoricals over ", p.num_events(), " and ",
           q.num_events(), " categories");
  Tensor t = p.probs() * (p.logits() - q.logits());
  const std::vector<Tensor> zeros_q = broadcast_tensors({q.probs() == 0, t});
  t = where(zeros_q[0], kInf, t);
  const std::vector<Tensor> zeros_p = broadcast_tensors({p.probs() == 0, t});
  t = where(zeros_p[0], 0.0, t);
  return t.sum(-1);
}

Tensor kl(const MultivariateNormal& p, const MultivariateNormal& q) {
  TD_CHECK(p.event_shape() == q.event_shape(), "kl_divergence: MultivariateNormals of different event shapes ",
           shape_str(p.event_shape()), " and ", shape_str(q.event_shape()));
  const int64_t n = p.event_shape()[0];
  const Tensor& lp = p.unbroadcasted_scale_tril();
  const Tensor& lq = q.unbroadcasted_scale_tril();
  const Shape batch = broadcast_shapes(Shape(lp.sizes().begin(), lp.sizes().end() - 2),
                                       Shape(lq.sizes().begin(), lq.sizes().end() - 2), "kl_divergence");
  const Tensor half_term1 = half_log_det(lq) - half_log_det(lp);
  // trace(Sigma_q^-1 Sigma_p) = |Lq^-1 Lp|_F^2.
  const Tensor solved = linalg::solve_triangular(lq.expand(joined(batch, {n, n})), lp.expand(joined(batch, {n, n})),
                                                 /*upper=*/false);
  const Tensor term2 = solved.pow(2).sum({-2, -1});
  const Tensor term3 = mahalanobis(lq, q.loc() - p.loc());
  return half_term1 + 0.5 * (term2 + term3 - static_cast<double>(n));
}

// The pairs of families PyTorch registers.
Tensor kl(const Laplace& p, const Normal& q) {
  const Tensor var = q.scale().pow(2), ratio = p.scale().pow(2) / var;
  const Tensor t1 = 0.5 * (ratio * (2 / std::numbers::pi)).log();
  const Tensor t2 = 0.5 * p.loc().pow(2) - p.loc() * q.loc() + 0.5 * q.loc().pow(2);
  return -t1 + ratio + t2 / var - 1;
}

Tensor kl(const Normal& p, const Laplace& q) {
  const Tensor diff = p.loc() - q.loc(), z = diff / p.scale();
  const Tensor t2 = std::sqrt(2 / std::numbers::pi) * p.scale() * (-0.5 * z.pow(2)).exp();
  const Tensor t3 = diff * (z * std::sqrt(0.5)).erf();
  return -(p.scale() / q.scale()).log() + (t2 + t3) / q.scale() - 0.5 * (1 + std::log(0.5 * std::numbers::pi));
}

Tensor kl(const Exponential& p, const Normal& q) {
  const Tensor var = q.scale().pow(2), rate_sq = p.rate().pow(2);
  const Tensor t1 = 0.5 * (rate_sq * var * (2 * std::numbers::pi)).log();
  return t1 - 1 + (rate_sq.reciprocal() - q.loc() / p.rate() + q.loc().pow(2) * 0.5) / var;
}

Tensor kl(const Uniform& p, const Normal& q) {
  const Tensor width = p.high() - p.low();
  const Tensor t1 = (std::sqrt(2 * std::numbers::pi) * q.scale() / width).log();
  const Tensor t3 = ((p.high() + p.low() - 2 * q.loc()) / 2).pow(2);
  return t1 + 0.5 * (width.pow(2) / 12 + t3) / q.scale().pow(2);
}

Tensor kl(const Uniform& p, const Exponential& q) {
  const Tensor result = q.rate() * (p.high() + p.low()) / 2 - ((p.high() - p.low()) * q.rate()).log();
  return where(p.low() < 0, kInf, result);
}

Tensor kl(const Cauchy& p, const Cauchy& q) {
  const Tensor t1 = ((p.scale() + q.scale()).pow(2) + (p.loc() - q.loc()).pow(2)).log();
  return t1 - (p.scale() * q.scale() * 4).log();
}

Tensor kl(const Gumbel& p, const Gumbel& q) {
  const Tensor ct1 = p.scale() / q.scale(), ct2 = q.loc() / q.scale(), ct3 = p.loc() / q.scale();
  const Tensor t1 = -ct1.log() - ct2 + ct3, t2 = ct1 * kEulerGamma, t3 = (ct2 + (ct1 + 1).lgamma() - ct3).exp();
  return t1 + t2 + t3 - (1 + kEulerGamma);
}

Tensor kl(const Exponential& p, const Gumbel& q) {
  const Tensor product = p.rate() * q.scale(), ratio = q.loc() / q.scale();
  return product.log() - 1 - ratio + ratio.exp() * product / (product + 1) + product.reciprocal();
}

Tensor kl(const Gumbel& p, const Normal& q) {
  const Tensor ratio = p.scale() / q.scale();
  const Tensor t1 = (ratio / std::sqrt(2 * std::numbers::pi)).log();
  const Tensor t2 = (ratio * (std::numbers::pi * 0.5)).pow(2) / 3;
  const Tensor t3 = ((p.loc() + p.scale() * kEulerGamma - q.loc()) / q.scale()).pow(2) * 0.5;
  return -t1 + t2 + t3 - (kEulerGamma + 1);
}

Tensor kl(const Normal& p, const Gumbel& q) {
  const Tensor mean_ratio = p.loc() / q.scale(), var_ratio = (p.scale() / q.scale()).pow(2);
  const Tensor loc_ratio = q.loc() / q.scale();
  const Tensor t3 = (-mean_ratio + var_ratio * 0.5 + loc_ratio).exp();
  return -var_ratio.log() * 0.5 + mean_ratio - loc_ratio + t3 - 0.5 * (1 + std::log(2 * std::numbers::pi));
}

Tensor kl(const Uniform& p, const Gumbel& q) {
  const Tensor ratio = q.scale() / (p.high() - p.low());
  const Tensor high = (p.high() - q.loc()) / q.scale(), low = (p.low() - q.loc()) / q.scale();
  return ratio.log() + 0.5 * (high + low) - ratio * ((-high).exp() - (-low).exp());
}

Tensor kl(const Poisson& p, const Poisson& q) {
  return p.rate() * (p.rate().log() - q.rate().log()) - (p.rate() - q.rate());
}

Tensor kl(const Geometric& p, const Geometric& q) {
  return -p.entropy() - (-q.probs()).log1p() / p.probs() - q.logits();
}

Tensor kl(const Binomial& p, const Binomial& q) {
  {
    NoGradGuard no_grad;
    TD_CHECK(!(p.total_count() < q.total_count()).any().item<bool>(), "kl_divergence: between Binomials where q's ",
             "total_count exceeds p's: not implemented (as in PyTorch)");
  }
  const Tensor result = p.total_count() * (p.probs() * (p.logits() - q.logits()) + (-p.probs()).log1p() -
                                           (-q.probs()).log1p());
  return where(p.total_count() > q.total_count(), kInf, result);
}

Tensor kl(const Bernoulli& p, const Poisson& q) {
  return -p.entropy() - (p.probs() * q.rate().log() - q.rate());
}

Tensor kl(const Gamma& p, const Gamma& q) {
  const Tensor t1 = q.concentration() * (p.rate() / q.rate()).log();
  const Tensor t2 = q.concentration().lgamma() - p.concentration().lgamma();
  const Tensor t3 = (p.concentration() - q.concentration()) * p.concentration().digamma();
  const Tensor t4 = (q.rate() - p.rate()) * (p.concentration() / p.rate());
  return t1 + t2 + t3 + t4;
}

Tensor kl(const Beta& p, const Beta& q) {
  const Tensor sum_p = p.concentration1() + p.concentration0(), sum_q = q.concentration1() + q.concentration0();
  const Tensor t1 = q.concentration1().lgamma() + q.concentration0().lgamma() + sum_p.lgamma();
  const Tensor t2 = p.concentration1().lgamma() + p.concentration0().lgamma() + sum_q.lgamma();
  const Tensor t3 = (p.concentration1() - q.concentration1()) * p.concentration1().digamma();
  const Tensor t4 = (p.concentration0() - q.concentration0()) * p.concentration0().digamma();
  const Tensor t5 = (sum_q - sum_p) * sum_p.digamma();
  return t1 - t2 + t3 + t4 + t5;
}

Tensor kl(const Dirichlet& p, const Dirichlet& q) {
  TD_CHECK(p.event_shape() == q.event_shape(), "kl_divergence: Dirichlets over ", shape_str(p.event_shape()), " and ",
           shape_str(q.event_shape()), " categories");
  const Tensor sum_p = p.concentration().sum(-1), sum_q = q.concentration().sum(-1);
  const Tensor t1 = sum_p.lgamma() - sum_q.lgamma();
  const Tensor t2 = (p.concentration().lgamma() - q.concentration().lgamma()).sum(-1);
  const Tensor t3 = p.concentration() - q.concentration();
  const Tensor t4 = p.concentration().digamma() - sum_p.digamma().unsqueeze(-1);
  return t1 - t2 + (t3 * t4).sum(-1);
}

Tensor kl(const Pareto& p, const Pareto& q) {
  const Tensor scale_ratio = p.scale() / q.scale(), alpha_ratio = q.alpha() / p.alpha();
  const Tensor result = q.alpha() * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1;
  return where(p.scale() < q.scale(), kInf, result);  // p puts mass below q's support
}

Tensor kl(const Beta& p, const Exponential& q) {
  return -p.entropy() - q.rate().log() + q.rate() * p.mean();
}

Tensor kl(const Beta& p, const Gamma& q) {
  const Tensor t2 = q.concentration().lgamma() - q.concentration() * q.rate().log();
  const Tensor t3 = (q.concentration() - 1) *
                    (p.concentration1().digamma() - (p.concentration1() + p.concentration0()).digamma());
  return -p.entropy() + t2 - t3 + q.rate() * p.mean();
}

Tensor kl(const Beta& p, const Normal& q) {
  const Tensor mean = p.mean(), var = q.scale().pow(2);
  const Tensor t2 = 0.5 * (var * (2 * std::numbers::pi)).log();
  const Tensor t3 = (mean * (1 - mean) / (p.concentration1() + p.concentration0() + 1) + mean.pow(2)) * 0.5;
  return -p.entropy() + t2 + (t3 - q.loc() * mean + q.loc().pow(2) * 0.5) / var;
}

Tensor kl(const Beta& p, const Uniform& q) {
  const Tensor result = -p.entropy() + (q.high() - q.low()).log();
  return where((q.low() > 0) | (q.high() < 1), kInf, result);
}

Tensor kl(const Exponential& p, const Gamma& q) {
  const Tensor ratio = q.rate() / p.rate();
  return -q.concentration() * ratio.log() + ratio + q.concentration().lgamma() + q.concentration() * kEulerGamma -
         (1 + kEulerGamma);
}

Tensor kl(const Gamma& p, const Exponential& q) {
  return -p.entropy() - q.rate().log() + q.rate() * p.concentration() / p.rate();
}

Tensor kl(const Gamma& p, const Gumbel& q) {
  const Tensor product = p.rate() * q.scale(), loc_ratio = q.loc() / q.scale();
  const Tensor& a = p.concentration();
  const Tensor t1 = (a - 1) * a.digamma() - a.lgamma() - a;
  const Tensor t2 = product.log() + a / product;
  const Tensor t3 = loc_ratio.exp() * (1 + product.reciprocal()).pow(-a) - loc_ratio;
  return t1 + t2 + t3;
}

Tensor kl(const Gamma& p, const Normal& q) {
  const Tensor var = q.scale().pow(2), rate_sq = p.rate().pow(2);
  const Tensor& a = p.concentration();
  const Tensor t1 = 0.5 * (rate_sq * var * (2 * std::numbers::pi)).log() - a - a.lgamma();
  const Tensor t2 = 0.5 * (a.pow(2) + a) / rate_sq;
  const Tensor t3 = q.loc() * a / p.rate();
  return t1 + (a - 1) * a.digamma() + (t2 - t3 + 0.5 * q.loc().pow(2)) / var;
}

Tensor kl(const Pareto& p, const Exponential& q) {
  const Tensor product = p.scale() * q.rate();
  const Tensor result = (p.alpha() / product).log() - p.alpha().reciprocal() + p.alpha() * product / (p.alpha() - 1) - 1;
  return where(p.alpha() <= 1, kInf, result);
}

Tensor kl(const Pareto& p, const Gamma& q) {
  const Tensor common = p.scale().log() + p.alpha().reciprocal();
  const Tensor t1 = p.alpha().log() - common;
  const Tensor t2 = q.concentration().lgamma() - q.concentration() * q.rate().log();
  const Tensor t3 = (1 - q.concentration()) * common;
  const Tensor t4 = q.rate() * p.alpha() * p.scale() / (p.alpha() - 1);
  return where(p.alpha() <= 1, kInf, t1 + t2 + t3 + t4 - 1);
}

Tensor kl(const Pareto& p, const Normal& q) {
  const Tensor var = 2 * q.scale().pow(2), common = p.scale() / (p.alpha() - 1);
  const Tensor t1 = (std::sqrt(2 * std::numbers::pi) * q.scale() * p.alpha() / p.scale()).log();
  const Tensor t3 = p.alpha() * common.pow(2) / (p.alpha() - 2);
  const Tensor t4 = (p.alpha() * common - q.loc()).pow(2);
  return where(p.alpha() <= 2, kInf, t1 - p.alpha().reciprocal() + (t3 + t4) / var - 1);
}

// x log x, 0 at x = 0.
Tensor x_log_x(const Tensor& x) { return xlogy(x, x); }

Tensor kl(const Uniform& p, const Beta& q) {
  const Tensor width = p.high() - p.low();
  const Tensor t1 = width.log();
  const Tensor t2 = (q.concentration1() - 1) * (x_log_x(p.high()) - x_log_x(p.low()) - width) / width;
  const Tensor t3 = (q.concentration0() - 1) * (x_log_x(1 - p.high()) - x_log_x(1 - p.low()) + width) / width;
  const Tensor t4 = q.concentration1().lgamma() + q.concentration0().lgamma() -
                    (q.concentration1() + q.concentration0()).lgamma();
  return where((p.high() > 1) | (p.low() < 0), kInf, t3 + t4 - t1 - t2);
}

Tensor kl(const Uniform& p, const Gamma& q) {
  const Tensor width = p.high() - p.low();
  const Tensor t2 = q.concentration().lgamma() - q.concentration() * q.rate().log();
  const Tensor t3 = (1 - q.concentration()) * (x_log_x(p.high()) - x_log_x(p.low()) - width) / width;
  const Tensor t4 = q.rate() * (p.high() + p.low()) / 2;
  return where(p.low() < 0, kInf, -width.log() + t2 + t3 + t4);
}

Tensor kl(const Uniform& p, const Pareto& q) {
  const Tensor width = p.high() - p.low();
  const Tensor t1 = (q.alpha() * q.scale().pow(q.alpha()) * width).log();
  const Tensor t2 = (x_log_x(p.high()) - x_log_x(p.low()) - width) / width;
  return where(p.low() < q.scale(), kInf, t2 * (q.alpha() + 1) - t1);
}

// p's support reaches where q has no density: +inf, shaped as p's parameter.
Tensor infinite_like(const Tensor& t) { return full_like(t, kInf); }

// ContinuousBernoulli, its pairs as PyTorch registers them. +inf where the Uniform's interval misses
// part of [0, 1] (CB || Uniform) or reaches beyond it (Uniform || CB): PyTorch's also where an end is
// exactly 0 or 1.
Tensor kl(const ContinuousBernoulli& p, const ContinuousBernoulli& q) {
  const Tensor t1 = p.mean() * (p.logits() - q.logits());
  return t1 + p.log_normalizer() + (-p.probs()).log1p() - q.log_normalizer() - (-q.probs()).log1p();
}

// -H(p) - E_p[log q(x)] for any p on [0, 1] with mean E_p[x].
Tensor kl_to_continuous_bernoulli(const Tensor& entropy, const Tensor& mean, const ContinuousBernoulli& q) {
  return -entropy - mean * q.logits() - (-q.probs()).log1p() - q.log_normalizer();
}

Tensor kl(const ContinuousBernoulli& p, const Exponential& q) {
  return -p.entropy() - q.rate().log() + q.rate() * p.mean();
}

Tensor kl(const ContinuousBernoulli& p, const Normal& q) {
  const Tensor t2 = 0.5 * (std::log(2 * std::numbers::pi) + (q.loc() / q.scale()).pow(2)) + q.scale().log();
  const Tensor t3 = (p.variance() + p.mean().pow(2) - 2 * q.loc() * p.mean()) / (2 * q.scale().pow(2));
  return -p.entropy() + t2 + t3;
}

Tensor kl(const ContinuousBernoulli& p, const Uniform& q) {
  const Tensor result = -p.entropy() + (q.high() - q.low()).log();
  return where((q.low() > 0) | (q.high() < 1), kInf, result);
}

Tensor kl(const Uniform& p, const ContinuousBernoulli& q) {
  const Tensor result = kl_to_continuous_bernoulli(p.entropy(), p.mean(), q);
  return where((p.low() < 0) | (p.high() > 1), kInf, result);
}

void check_same_event(const Distribution& p, const Distribution& q) {
  TD_CHECK(p.event_shape() == q.event_shape(), "kl_divergence: between ", p.name(), " and ", q.name(),
           " of different event shapes ", shape_str(p.event_shape()), " and ", shape_str(q.event_shape()));
}

// q's support is bounded below (or on both sides), where that of a Normal, Laplace or Gumbel p is not.
bool reaches_below(const Distribution& q) {
  return as<Exponential>(q) || as<Uniform>(q) || as<Gamma>(q) || as<Beta>(q) || as<Pareto>(q) ||
         as<ContinuousBernoulli>(q);
}

}  // namespace

Tensor kl_divergence(const Distribution& p, const Distribution& q) {
  if (const auto* a = as<Normal>(p)) {
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Uniform>(p)) {
    if (const auto* b = as<Uniform>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Exponential>(p)) {
    if (const auto* b = as<Exponential>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Laplace>(p)) {
    if (const auto* b = as<Laplace>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Bernoulli>(p)) {
    if (const auto* b = as<Bernoulli>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Categorical>(p)) {
    if (const auto* b = as<Categorical>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<MultivariateNormal>(p)) {
    if (const auto* b = as<MultivariateNormal>(q)) return kl(*a, *b);
    if (const auto* b = as<LowRankMultivariateNormal>(q)) {
      check_same_event(p, q);
      return internal::kl_low_rank(*a, *b);
    }
  }
  if (const auto* a = as<LowRankMultivariateNormal>(p)) {
    if (const auto* b = as<LowRankMultivariateNormal>(q)) {
      check_same_event(p, q);
      return internal::kl_low_rank(*a, *b);
    }
    if (const auto* b = as<MultivariateNormal>(q)) {
      check_same_event(p, q);
      return internal::kl_low_rank(*a, *b);
    }
  }
  if (const auto* a = as<ContinuousBernoulli>(p)) {
    if (const auto* b = as<ContinuousBernoulli>(q)) return kl(*a, *b);
    if (const auto* b = as<Exponential>(q)) return kl(*a, *b);
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (const auto* b = as<Uniform>(q)) return kl(*a, *b);
    if (as<Pareto>(q)) return infinite_like(a->probs());
  }
  if (const auto* b = as<ContinuousBernoulli>(q)) {
    if (const auto* a = as<Beta>(p)) return kl_to_continuous_bernoulli(a->entropy(), a->mean(), *b);
    if (const auto* a = as<Uniform>(p)) return kl(*a, *b);
    if (const auto* a = as<Exponential>(p)) return infinite_like(a->rate());
    if (const auto* a = as<Gamma>(p)) return infinite_like(a->concentration());
    if (const auto* a = as<Pareto>(p)) return infinite_like(a->scale());
  }
  if (const auto* a = as<Cauchy>(p)) {
    if (const auto* b = as<Cauchy>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<HalfNormal>(p)) {
    if (const auto* b = as<HalfNormal>(q)) return kl(a->base_dist(), b->base_dist());
  }
  if (const auto* a = as<Gumbel>(p)) {
    if (const auto* b = as<Gumbel>(q)) return kl(*a, *b);
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (reaches_below(q)) return infinite_like(a->loc());
  }
  if (const auto* b = as<Gumbel>(q)) {
    if (const auto* a = as<Exponential>(p)) return kl(*a, *b);
    if (const auto* a = as<Normal>(p)) return kl(*a, *b);
    if (const auto* a = as<Uniform>(p)) return kl(*a, *b);
  }
  if (const auto* a = as<Poisson>(p)) {
    if (const auto* b = as<Poisson>(q)) return kl(*a, *b);
    if (as<Bernoulli>(q) || as<Binomial>(q)) return infinite_like(a->rate());
  }
  if (const auto* a = as<Geometric>(p)) {
    if (const auto* b = as<Geometric>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Binomial>(p)) {
    if (const auto* b = as<Binomial>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<OneHotCategorical>(p)) {
    if (const auto* b = as<OneHotCategorical>(q)) return kl(a->categorical(), b->categorical());
  }
  if (const auto* a = as<Bernoulli>(p)) {
    if (const auto* b = as<Poisson>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Laplace>(p)) {
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (reaches_below(q)) return infinite_like(a->loc());
  }
  if (const auto* a = as<Normal>(p)) {
    if (const auto* b = as<Laplace>(q)) return kl(*a, *b);
    if (reaches_below(q)) return infinite_like(a->loc());
  }
  if (const auto* a = as<Exponential>(p)) {
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (const auto* b = as<Gamma>(q)) return kl(*a, *b);
    if (as<Uniform>(q) || as<Beta>(q) || as<Pareto>(q)) return infinite_like(a->rate());
  }
  if (const auto* a = as<Gamma>(p)) {  // Chi2 too
    if (const auto* b = as<Gamma>(q)) return kl(*a, *b);
    if (const auto* b = as<Exponential>(q)) return kl(*a, *b);
    if (const auto* b = as<Gumbel>(q)) return kl(*a, *b);
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (as<Beta>(q) || as<Pareto>(q) || as<Uniform>(q)) return infinite_like(a->concentration());
  }
  if (const auto* a = as<Beta>(p)) {
    if (const auto* b = as<Beta>(q)) return kl(*a, *b);
    if (const auto* b = as<Exponential>(q)) return kl(*a, *b);
    if (const auto* b = as<Gamma>(q)) return kl(*a, *b);
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (const auto* b = as<Uniform>(q)) return kl(*a, *b);
    if (as<Pareto>(q)) return infinite_like(a->concentration1());
  }
  if (const auto* a = as<Dirichlet>(p)) {
    if (const auto* b = as<Dirichlet>(q)) return kl(*a, *b);
  }
  if (const auto* a = as<Pareto>(p)) {
    if (const auto* b = as<Pareto>(q)) return kl(*a, *b);
    if (const auto* b = as<Exponential>(q)) return kl(*a, *b);
    if (const auto* b = as<Gamma>(q)) return kl(*a, *b);
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (as<Beta>(q) || as<Uniform>(q)) return infinite_like(a->scale());
  }
  if (const auto* a = as<Uniform>(p)) {
    if (const auto* b = as<Normal>(q)) return kl(*a, *b);
    if (const auto* b = as<Exponential>(q)) return kl(*a, *b);
    if (const auto* b = as<Beta>(q)) return kl(*a, *b);
    if (const auto* b = as<Gamma>(q)) return kl(*a, *b);
    if (const auto* b = as<Pareto>(q)) return kl(*a, *b);
  }
  // Through the same transforms, the bases' KL, as PyTorch's: exact for invertible maps, an upper
  // bound for a folding one such as abs. A LogNormal is a Normal through exp, as PyTorch defines
  // it, so that it meets TransformedDistribution(Normal, {exp}) here.
  if (const auto a = transformed_form(p)) {
    if (const auto b = transformed_form(q)) {
      bool same = a->transforms.size() == b->transforms.size() && p.event_shape() == q.event_shape();
      for (size_t i = 0; same && i < a->transforms.size(); ++i) same = a->transforms[i]->equals(*b->transforms[i]);
      TD_CHECK(same, "kl_divergence: between ", p.name(), " and ", q.name(),
               " (transformed distributions) only through the same transforms");
      return kl_divergence(*a->base, *b->base);
    }
  }
  if (const auto* a = as<Independent>(p)) {
    if (const auto* b = as<Independent>(q)) {
      TD_CHECK(a->reinterpreted_batch_ndims() == b->reinterpreted_batch_ndims(), "kl_divergence: Independent ",
               "distributions over ", a->reinterpreted_batch_ndims(), " and ", b->reinterpreted_batch_ndims(),
               " reinterpreted dims");
      return sum_rightmost(kl_divergence(a->base(), b->base()), a->reinterpreted_batch_ndims());
    }
  }
  TD_FAIL("kl_divergence: no KL divergence is implemented between ", p.name(), " and ", q.name());
}

}  // namespace tandem::distributions
