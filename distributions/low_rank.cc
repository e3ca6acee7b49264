// LowRankMultivariateNormal: a Gaussian whose covariance W W^T + D is a low-rank matrix plus a
// diagonal. Everything goes through the r x r capacitance matrix C = I + W^T D^-1 W:
//   (W W^T + D)^-1 = D^-1 - D^-1 W C^-1 W^T D^-1   (Woodbury)
//   det(W W^T + D) = det(C) det(D)                 (the matrix determinant lemma)
#include <cmath>
#include <numbers>

#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "distributions/distributions.h"
#include "distributions/internal.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::check_parameter;
using internal::is_real;
using internal::joined;

namespace {

constexpr const char* kDist = "LowRankMultivariateNormal";

Shape leading(const Tensor& t, int64_t trailing) { return Shape(t.sizes().begin(), t.sizes().end() - trailing); }

// loc [..., n], cov_factor [..., n, r] and cov_diag [..., n] checked; their broadcast batch shape.
Shape low_rank_batch(const Tensor& loc, const Tensor& cov_factor, const Tensor& cov_diag) {
  TD_CHECK(loc.defined() && cov_factor.defined() && cov_diag.defined(), kDist,
           ": loc, cov_factor and cov_diag must all be defined");
  TD_CHECK(loc.dim() >= 1, kDist, ": loc must be at least one-dimensional [..., n], got shape ",
           shape_str(loc.sizes()));
  const int64_t n = loc.size(-1);
  TD_CHECK(cov_factor.dim() >= 2 && cov_factor.size(-2) == n, kDist, ": cov_factor must be [..., n, r] with n = ", n,
           " (loc's last dim), got ", shape_str(cov_factor.sizes()));
  TD_CHECK(cov_diag.dim() >= 1 && cov_diag.size(-1) == n, kDist, ": cov_diag must be [..., n] with n = ", n,
           " (loc's last dim), got ", shape_str(cov_diag.sizes()));
  TD_CHECK(is_floating(loc.dtype()) && loc.dtype() == cov_factor.dtype() && loc.dtype() == cov_diag.dtype(), kDist,
           ": loc, cov_factor and cov_diag must share a floating dtype, got ", loc.dtype(), ", ", cov_factor.dtype(),
           " and ", cov_diag.dtype());
  TD_CHECK(loc.device() == cov_factor.device() && loc.device() == cov_diag.device(), kDist,
           ": loc, cov_factor and cov_diag must be on one device, got ", loc.device(), ", ", cov_factor.device(),
           " and ", cov_diag.device());
  const Shape batch = broadcast_shapes(leading(loc, 1), leading(cov_factor, 2), kDist);
  return broadcast_shapes(batch, leading(cov_diag, 1), kDist);
}

Shape low_rank_event(const Tensor& loc) {
  TD_CHECK(loc.defined() && loc.dim() >= 1, kDist, ": loc must be at least one-dimensional [..., n]");
  return {loc.size(-1)};
}

Tensor transposed(const Tensor& t) { return t.transpose(-2, -1); }

// W^T D^-1, [..., r, n].
Tensor scaled_factor_t(const Tensor& w, const Tensor& d) { return transposed(w) / d.unsqueeze(-2); }

// The sum of the squares of a matrix's elements: trace(X X^T).
Tensor trace_xxt(const Tensor& x) { return x.pow(2).sum({-2, -1}); }

// C_L^-1 W^T D^-1, C_L the capacitance's Cholesky factor: (W W^T + D)^-1 = D^-1 - A^T A.
Tensor woodbury_factor(const Tensor& capacitance_tril, const Tensor& w, const Tensor& d) {
  return linalg::solve_triangular(capacitance_tril, scaled_factor_t(w, d), /*upper=*/false);
}
Tensor woodbury_factor(const LowRankMultivariateNormal& q) {
  return woodbury_factor(q.capacitance_tril(), q.unbroadcasted_cov_factor(), q.unbroadcasted_cov_diag());
}

}  // namespace

LowRankMultivariateNormal::LowRankMultivariateNormal(const Tensor& loc, const Tensor& cov_factor,
                                                     const Tensor& cov_diag, std::optional<bool> validate_args)
    : Distribution(low_rank_batch(loc, cov_factor, cov_diag), low_rank_event(loc), validate_args),
      cov_factor_(cov_factor),
      cov_diag_(cov_diag) {
  check_parameter(validates(), kDist, "loc", loc, [&] { return is_real(loc); }, "IndependentConstraint(Real(), 1)");
  check_parameter(validates(), kDist, "cov_factor", cov_factor, [&] { return is_real(cov_factor); },
                  "IndependentConstraint(Real(), 2)");
  check_parameter(validates(), kDist, "cov_diag", cov_diag, [&] { return cov_diag > 0; },
                  "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)");
  loc_ = loc.expand(joined(batch_shape(), event_shape()));
  const int64_t rank = cov_factor.size(-1);
  const Tensor capacitance = scaled_factor_t(cov_factor_, cov_diag_).matmul(cov_factor_) +
                             eye(rank, -1, cov_factor.options());
  capacitance_tril_ = linalg::cholesky(capacitance);
}

std::shared_ptr<Distribution> LowRankMultivariateNormal::expand(const Shape& batch_shape) const {
  return std::make_shared<LowRankMultivariateNormal>(loc_.expand(joined(batch_shape, event_shape())), cov_factor_,
                                                     cov_diag_, validates());
}

Tensor LowRankMultivariateNormal::log_det() const {
  return 2 * internal::half_log_det(capacitance_tril_) + cov_diag_.log().sum(-1);
}

// x^T D^-1 x - |C_L^-1 W^T D^-1 x|^2, C_L the capacitance's Cholesky factor.
Tensor LowRankMultivariateNormal::mahalanobis(const Tensor& x) const {
  const Tensor projected = scaled_factor_t(cov_factor_, cov_diag_).matmul(x.unsqueeze(-1)).squeeze(-1);
  return (x.pow(2) / cov_diag_).sum(-1) - internal::mahalanobis(capacitance_tril_, projected);
}

Tensor LowRankMultivariateNormal::rsample(IntList sample_shape) const {
  const Shape shape = extended_shape(sample_shape);
  Shape factor_shape(shape.begin(), shape.end() - 1);
  factor_shape.push_back(cov_factor_.size(-1));
  const Tensor eps_w = randn(factor_shape, loc_.options()), eps_d = randn(shape, loc_.options());
  return loc_ + cov_factor_.matmul(eps_w.unsqueeze(-1)).squeeze(-1) + cov_diag_.sqrt() * eps_d;
}

Tensor LowRankMultivariateNormal::log_prob(const Tensor& value) const {
  check_value(value, [&] { return value.dim() >= 1 ? is_real(value).all(-1) : is_real(value); },
              "IndependentConstraint(Real(), 1)");
  const double n = static_cast<double>(event_shape()[0]);
  return -0.5 * (n * std::log(2 * std::numbers::pi) + log_det() + mahalanobis(value - loc_));
}

Tensor LowRankMultivariateNormal::entropy() const {
  const double n = static_cast<double>(event_shape()[0]);
  return (0.5 * (n * (1 + std::log(2 * std::numbers::pi)) + log_det())).expand(batch_shape());
}

Tensor LowRankMultivariateNormal::variance() const {
  return (cov_factor_.pow(2).sum(-1) + cov_diag_).expand(joined(batch_shape(), event_shape()));
}

Tensor LowRankMultivariateNormal::cov_factor() const {
  return cov_factor_.expand(joined(joined(batch_shape(), event_shape()), {cov_factor_.size(-1)}));
}

Tensor LowRankMultivariateNormal::cov_diag() const { return cov_diag_.expand(joined(batch_shape(), event_shape())); }

// D^(1/2) cholesky(I + D^(-1/2) W W^T D^(-1/2)): an n x n factorisation, only when asked for.
Tensor LowRankMultivariateNormal::scale_tril() const {
  const int64_t n = event_shape()[0];
  const Tensor root = cov_diag_.sqrt().unsqueeze(-1);
  const Tensor scaled = cov_factor_ / root;
  const Tensor k = scaled.matmul(transposed(scaled)) + eye(n, -1, scaled.options());
  return (root * linalg::cholesky(k)).expand(joined(batch_shape(), {n, n}));
}

Tensor LowRankMultivariateNormal::covariance_matrix() const {
  const int64_t n = event_shape()[0];
  return (cov_factor_.matmul(transposed(cov_factor_)) + diag_embed(cov_diag_)).expand(joined(batch_shape(), {n, n}));
}

Tensor LowRankMultivariateNormal::precision_matrix() const {
  const int64_t n = event_shape()[0];
  const Tensor a = woodbury_factor(capacitance_tril_, cov_factor_, cov_diag_);
  return (diag_embed(cov_diag_.reciprocal()) - transposed(a).matmul(a)).expand(joined(batch_shape(), {n, n}));
}

// The three KL divergences with a low-rank side (kl.cc dispatches to them).
namespace internal {

Tensor kl_low_rank(const LowRankMultivariateNormal& p, const LowRankMultivariateNormal& q) {
  const Tensor& pw = p.unbroadcasted_cov_factor();
  const Tensor& pd = p.unbroadcasted_cov_diag();
  const Tensor& qd = q.unbroadcasted_cov_diag();
  const Tensor a = woodbury_factor(q);
  // trace(Sigma_q^-1 Sigma_p) = trace((D_q^-1 - A^T A)(D_p + W_p W_p^T)), term by term.
  const Tensor trace = (pd / qd).sum(-1) + trace_xxt(pw * qd.rsqrt().unsqueeze(-1)) -
                       trace_xxt(a * pd.sqrt().unsqueeze(-2)) - trace_xxt(a.matmul(pw));
  const double n = static_cast<double>(p.event_shape()[0]);
  return 0.5 * (q.log_det() - p.log_det() + trace + q.mahalanobis(q.loc() - p.loc()) - n);
}

Tensor kl_low_rank(const MultivariateNormal& p, const LowRankMultivariateNormal& q) {
  const Tensor& lp = p.unbroadcasted_scale_tril();
  const Tensor a = woodbury_factor(q);
  const Tensor trace = trace_xxt(lp * q.unbroadcasted_cov_diag().rsqrt().unsqueeze(-1)) - trace_xxt(a.matmul(lp));
  const double n = static_cast<double>(p.event_shape()[0]);
  return 0.5 * (q.log_det() - 2 * half_log_det(lp) + trace + q.mahalanobis(q.loc() - p.loc()) - n);
}

Tensor kl_low_rank(const LowRankMultivariateNormal& p, const MultivariateNormal& q) {
  const Tensor& lq = q.unbroadcasted_scale_tril();
  const Tensor& pw = p.unbroadcasted_cov_factor();
  const int64_t n = p.event_shape()[0];
  const Shape batch = broadcast_shapes(broadcast_shapes(leading(lq, 2), leading(pw, 2), "kl_divergence"),
                                       leading(p.unbroadcasted_cov_diag(), 1), "kl_divergence");
  const Tensor lq_b = lq.expand(joined(batch, {n, n}));
  // trace(Sigma_q^-1 (W W^T + D)) = |Lq^-1 W|_F^2 + |Lq^-1 D^(1/2)|_F^2.
  const Tensor trace =
      trace_xxt(linalg::solve_triangular(lq_b, pw.expand(joined(batch, {n, pw.size(-1)})), /*upper=*/false)) +
      trace_xxt(linalg::solve_triangular(lq_b, diag_embed(p.unbroadcasted_cov_diag().sqrt()).expand(joined(batch, {n, n})),
                                         /*upper=*/false));
  return 0.5 * (2 * half_log_det(lq) - p.log_det() + trace + mahalanobis(lq, q.loc() - p.loc()) -
                static_cast<double>(n));
}

}  // namespace internal

}  // namespace tandem::distributions
