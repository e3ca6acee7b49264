// The distributions over matrices: Wishart (positive definite matrices, the sample covariance of
// Gaussian rows) and LKJCholesky (Cholesky factors of correlation matrices).
#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/linalg.h"
#include "autograd/ops.h"
#include "distributions/distributions.h"
#include "distributions/internal.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::check_parameter;
using internal::half_log_det;
using internal::is_positive_definite;
using internal::joined;

namespace {

Shape leading(const Tensor& t, int64_t trailing) { return Shape(t.sizes().begin(), t.sizes().end() - trailing); }

// sum over i < p of digamma(x - i / 2): the derivative of mvlgamma(x, p).
Tensor mvdigamma(const Tensor& x, int64_t p) {
  const Tensor halves = arange(p, x.options()) / 2;
  return (x.unsqueeze(-1) - halves).digamma().sum(-1);
}

// The Wishart's matrix checked: its event shape [p, p].
Shape wishart_event(const Tensor& matrix) {
  constexpr const char* dist = "Wishart";
  TD_CHECK(matrix.defined() && matrix.dim() >= 2 && matrix.size(-1) == matrix.size(-2), dist,
           ": the matrix must be [..., p, p], got ", matrix.defined() ? shape_str(matrix.sizes()) : "none");
  TD_CHECK(is_floating(matrix.dtype()), dist, ": the matrix must be floating, got ", matrix.dtype());
  return {matrix.size(-2), matrix.size(-1)};
}

// The batch shape of df and the matrix (both checked) broadcast together.
Shape wishart_batch(const Param& df, const Tensor& matrix) {
  constexpr const char* dist = "Wishart";
  wishart_event(matrix);
  if (!df.is_tensor()) return leading(matrix, 2);
  TD_CHECK(df.tensor().defined() && is_floating(df.tensor().dtype()), dist, ": df must be a floating tensor");
  TD_CHECK(df.tensor().device() == matrix.device(), dist, ": df is on ", df.tensor().device(), " but the matrix on ",
           matrix.device());
  return broadcast_shapes(leading(matrix, 2), df.tensor().sizes(), dist);
}

}  // namespace

// ---- Wishart ----

Wishart::Wishart(Param df, const Tensor& matrix, Matrix kind, std::optional<bool> validate_args)
    : Distribution(wishart_batch(df, matrix), wishart_event(matrix), validate_args) {
  constexpr const char* dist = "Wishart";
  const int64_t p = matrix.size(-1);
  df_ = (df.is_tensor() ? df.tensor().to(matrix.dtype()) : full({}, df.number(), matrix.options()))
            .expand(batch_shape());
  {
    NoGradGuard no_grad;
    TD_CHECK((df_ > static_cast<double>(p - 1)).all().item<bool>(), dist, ": df must be greater than p - 1 = ",
             p - 1, " for ", p, " x ", p, " matrices (and not NaN)");
  }
  scale_tril_ = internal::scale_tril_of(matrix, kind, validates(), dist);
}

std::shared_ptr<Distribution> Wishart::expand(const Shape& batch_shape) const {
  return std::make_shared<Wishart>(df_.expand(batch_shape), scale_tril_, Matrix::scale_tril, validates());
}

Tensor Wishart::scale_tril() const { return scale_tril_.expand(joined(batch_shape(), event_shape())); }

Tensor Wishart::covariance_matrix() const {
  return scale_tril_.matmul(scale_tril_.transpose(-2, -1)).expand(joined(batch_shape(), event_shape()));
}

Tensor Wishart::precision_matrix() const {
  return cholesky_inverse(scale_tril_).expand(joined(batch_shape(), event_shape()));
}

Tensor Wishart::mean() const { return df_.unsqueeze(-1).unsqueeze(-1) * covariance_matrix(); }

// NaN where df <= p + 1; the product there is taken with factor 1, so that no NaN reaches the gradient.
Tensor Wishart::mode() const {
  const double p = static_cast<double>(event_shape()[0]);
  const Tensor factor = df_ - p - 1, exists = (factor > 0).unsqueeze(-1).unsqueeze(-1);
  const Tensor mode = where(factor > 0, factor, 1.0).unsqueeze(-1).unsqueeze(-1) * covariance_matrix();
  return where(exists, mode, std::numeric_limits<double>::quiet_NaN());
}

// df (V_ij^2 + V_ii V_jj).
Tensor Wishart::variance() const {
  const Tensor v = covariance_matrix();
  const Tensor diagonal = v.diagonal(0, -2, -1);
  return df_.unsqueeze(-1).unsqueeze(-1) * (v.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2));
}

// Bartlett: X = L A A^T L^T for A lower triangular, its diagonal the roots of chi-squared variates
// with df, df - 1, ..., df - p + 1 degrees of freedom, standard normals below it.
Tensor Wishart::bartlett(IntList sample_shape) const {
  const int64_t p = event_shape()[0];
  const Tensor dfs = df_.unsqueeze(-1) - arange(p, df_.options());
  const double eps = finfo(df_.dtype()).eps;
  const Tensor roots = Chi2(dfs, false).rsample(sample_shape).sqrt().clamp_min(eps);
  const Tensor below = randn(extended_shape(sample_shape), df_.options()).tril(-1);
  const Tensor factor = scale_tril_.matmul(diag_embed(roots) + below);
  return factor.matmul(factor.transpose(-2, -1));
}

Tensor Wishart::rsample(IntList sample_shape) const {
  Tensor draws = bartlett(sample_shape);
  for (int attempt = 0; attempt < 10; ++attempt) {
    Tensor singular;
    {
      NoGradGuard no_grad;
      singular = std::get<1>(linalg::cholesky_ex(draws.detach())) != 0;
      if (!singular.any().item<bool>()) break;
    }
    draws = where(singular.unsqueeze(-1).unsqueeze(-1), bartlett(sample_shape), draws);
  }
  return draws;
}

Tensor Wishart::log_prob(const Tensor& value) const {
  check_value(value, [&] { return is_positive_definite(value); }, "PositiveDefinite()");
  const int64_t p = event_shape()[0];
  const double dims = static_cast<double>(p);
  const Tensor log_det_value = std::get<1>(linalg::slogdet(value));
  // trace(Sigma^-1 X).
  const Tensor trace = cholesky_solve(value, scale_tril_).diagonal(0, -2, -1).sum(-1);
  return -df_ * (dims * std::log(2.0) / 2 + half_log_det(scale_tril_)) - mvlgamma(df_ / 2, p) +
         (df_ - dims - 1) / 2 * log_det_value - trace / 2;
}

Tensor Wishart::entropy() const {
  const int64_t p = event_shape()[0];
  const double dims = static_cast<double>(p);
  return (dims + 1) * (dims * std::log(2.0) / 2 + half_log_det(scale_tril_)) + mvlgamma(df_ / 2, p) -
         (df_ - dims - 1) / 2 * mvdigamma(df_ / 2, p) + df_ * dims / 2;
}

// ---- LKJCholesky ----

namespace {
Tensor lkj_concentration(const Param& concentration) {
  return internal::broadcast_all({concentration}, "LKJCholesky", {"concentration"})[0];
}
}  // namespace

LKJCholesky::LKJCholesky(int64_t dim, Param concentration, std::optional<bool> validate_args)
    : Distribution(lkj_concentration(concentration).sizes(), {dim, dim}, validate_args),
      dim_(dim),
      concentration_(lkj_concentration(concentration)) {
  TD_CHECK(dim >= 2, "LKJCholesky: dim must be at least 2, got ", dim);
  check_parameter(validates(), "LKJCholesky", "concentration", concentration_, [&] { return concentration_ > 0; },
                  "GreaterThan(lower_bound=0.0)");
}

std::shared_ptr<Distribution> LKJCholesky::expand(const Shape& batch_shape) const {
  return std::make_shared<LKJCholesky>(dim_, concentration_.expand(batch_shape), validates());
}

// The onion method: row i (from 1) is sqrt(y_i) u_i on its first i places, u_i uniform on the unit
// sphere and y_i ~ Beta(i / 2, concentration + (dim - 2) / 2 - (i - 1) / 2), and the rest of the
// unit norm on the diagonal.
Tensor LKJCholesky::sample(IntList sample_shape) const {
  NoGradGuard no_grad;
  const Tensor eta = concentration_.detach();
  const TensorOptions options = eta.options();
  // offset i - 1 for row i >= 1; row 0's Beta is a placeholder (its draw is masked out below).
  // PyTorch 2.15 takes i - 1/2 for the first Beta parameter: right for row 1 only, so that its
  // correlations past the first row are too spread (E[r^2] 0.25 against 0.2 at dim 4, eta 1).
  const Tensor offset = cat({zeros({1}, options), arange(dim_ - 1, options)});
  const Tensor marginal = eta + 0.5 * static_cast<double>(dim_ - 2);
  const Beta beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset, false);
  const Tensor y = beta.sample(sample_shape).unsqueeze(-1);
  const Tensor normal = randn(extended_shape(sample_shape), options).tril(-1);
  const double tiny = finfo(eta.dtype()).tiny;
  const Tensor sphere = normal / normal.norm(2, {-1}, true).clamp_min(tiny);  // row 0 stays 0
  const Tensor w = y.sqrt() * sphere;
  const Tensor diagonal = (1 - w.pow(2).sum(-1)).clamp_min(tiny).sqrt();
  return w + diag_embed(diagonal);
}

Tensor LKJCholesky::log_prob(const Tensor& value) const {
  check_value(
      value,
      [&] { return internal::is_corr_cholesky(value); }, "CorrCholesky()");
  const double dm1 = static_cast<double>(dim_ - 1);
  const Tensor diagonal = value.diagonal(0, -2, -1).narrow(-1, 1, dim_ - 1);
  const Tensor order = 2 * (concentration_ - 1).unsqueeze(-1) + static_cast<double>(dim_) -
                       arange(2, dim_ + 1, 1, concentration_.options());
  const Tensor unnormalized = (order * diagonal.log()).sum(-1);
  const Tensor alpha = concentration_ + 0.5 * dm1;
  const Tensor normalizer = 0.5 * dm1 * std::log(std::numbers::pi) + mvlgamma(alpha - 0.5, dim_ - 1) -
                            alpha.lgamma() * dm1;
  return unnormalized - normalizer;
}

// The constraint checks that distributions and transforms share (internal.h).
namespace internal {

Tensor is_on_simplex(const Tensor& value) {
  if (value.dim() < 1) return value != value;
  return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6);
}

Tensor is_real_vector(const Tensor& value) { return value.dim() < 1 ? value != value : is_real(value).all(-1); }
Tensor is_real_matrix(const Tensor& value) {
  return value.dim() < 2 ? value != value : is_real(value).all(-1).all(-1);
}

Tensor is_lower_cholesky(const Tensor& m) {
  if (m.dim() < 2) return m != m;  // no matrix
  return (m.tril() == m).all(-1).all(-1) & (m.diagonal(0, -2, -1) > 0).all(-1);
}

Tensor is_corr_cholesky(const Tensor& m) {
  if (m.dim() < 2) return m != m;
  const double tolerance = finfo(m.dtype()).eps * static_cast<double>(m.size(-1)) * 10;
  return is_lower_cholesky(m) & ((m.detach().norm(2, {-1}) - 1).abs() <= tolerance).all(-1);
}

}  // namespace internal

}  // namespace tandem::distributions
