// Helpers the distributions and the transforms share (not part of the API).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "core/tensor.h"
#include "distributions/distributions.h"
#include "kernels/factory.h"

namespace tandem::distributions::internal {

// The parameters as tensors of one floating dtype on one device, broadcast to one shape: numbers
// take the tensors' dtype and device (float32 on the CPU where all are numbers); errors name `dist`
// and the parameter (`names`, in order).
std::vector<Tensor> broadcast_all(const std::vector<Param>& params, const char* dist,
                                  const std::vector<const char*>& names);
inline Shape shape_of(const std::vector<Tensor>& broadcast) { return broadcast[0].sizes(); }

// Where validation is on: every element of `ok()` (a bool tensor) holds, else an error naming the
// distribution, the parameter and its constraint, as PyTorch's.
void check_parameter(bool validate, const char* dist, const char* name, const Tensor& t,
                     const std::function<Tensor()>& ok, const char* constraint);

inline Tensor is_real(const Tensor& t) { return t == t; }  // PyTorch's real: anything but NaN
// Finite and whole (PyTorch's value % 1 == 0, which infinity fails).
inline Tensor is_whole(const Tensor& t) { return t.isfinite() & (t == t.floor()); }

Shape joined(IntList a, IntList b);  // a's sizes, then b's

// value and a parameter in their promoted floating dtype: a float64 count against a float32 rate
// is not rounded to float32 (the parameter is converted instead, as PyTorch's promotion does).
std::pair<Tensor, Tensor> promoted(const Tensor& value, const Tensor& parameter);

// PyTorch's clamp_probs: into [eps, 1 - eps], so that logs and logits of them stay finite.
Tensor clamp_probs(const Tensor& p);

// A Bernoulli-type parameter (probs or logits) as a tensor, errors naming `dist`; where validation
// is on, probs must lie in [0, 1] and logits be real.
Tensor probability_tensor(const Param& parameter, Given given, const char* dist);
void check_probs_or_logits(bool validate, const char* dist, Given given, const Tensor& parameter);

// A Bernoulli-type parameter and the other one derived from it: logits from probs clamped to
// [eps, 1 - eps] (PyTorch's probs_to_logits), probs from logits by the sigmoid.
void bernoulli_parameters(const Tensor& parameter, Given given, Tensor& probs, Tensor& logits);

// A Categorical-type parameter [..., K]: its batch shape (the parameter checked to have a dim), and
// Categorical's checks (a floating dtype, K > 0; where `validate_args`, or the default, asks: probs
// that scale to a simplex, logits real once normalised), errors naming `dist`. checked_categorical
// returns the parameter, for the distributions that hold a Categorical to check it under their name.
Shape categorical_batch(const Tensor& parameter, const char* dist);
void check_categorical(bool validate, const char* dist, Given given, const Tensor& parameter);
const Tensor& checked_categorical(const Tensor& parameter, Given given, std::optional<bool> validate_args,
                                  const char* dist);

// |L^-1 x|^2 over the last dim, L (lower triangular) and x broadcast against each other.
Tensor mahalanobis(const Tensor& l, const Tensor& x);
// log det(L L^T) / 2 for a lower-triangular L with a positive diagonal.
Tensor half_log_det(const Tensor& l);
// The lower Cholesky factor L of P^-1 (L L^T = P^-1) from a precision matrix P.
Tensor precision_to_scale_tril(const Tensor& p);
// Whether each matrix [..., n, n] is positive definite (PyTorch's PositiveDefinite(): symmetric
// within torch.isclose's tolerances, with a Cholesky factor); a bool tensor of the batch shape.
Tensor is_positive_definite(const Tensor& m);
// PyTorch's Simplex(): each vector (the last dim) non-negative and summing to 1 within 1e-6.
// PyTorch's real vectors and matrices: no NaN in each vector, or in each matrix (the last two
// dims). A value with too few dims is in none of them.
Tensor is_on_simplex(const Tensor& value);
Tensor is_real_vector(const Tensor& value);
Tensor is_real_matrix(const Tensor& value);
// Whether each matrix [..., n, n] is lower triangular with a positive diagonal (PyTorch's
// LowerCholesky()), and also has rows of unit norm within 10 eps per element (CorrCholesky()): a
// bool tensor of the batch shape.
Tensor is_lower_cholesky(const Tensor& m);
Tensor is_corr_cholesky(const Tensor& m);
// The lower Cholesky factor of a covariance matrix, a precision matrix or the factor itself
// (checked where `validate` asks, errors naming `dist`), as MultivariateNormal and Wishart take them.
Tensor scale_tril_of(const Tensor& matrix, MultivariateNormal::Matrix kind, bool validate, const char* dist);

inline constexpr double kEulerGamma = 0.57721566490153286060651209008240243;

// log(1 + e^x) through logaddexp, whose gradient is the sigmoid everywhere (0 included).
inline Tensor softplus(const Tensor& x) { return logaddexp(x, zeros_like(x)); }

// The sum over the last n dims.
inline Tensor sum_rightmost(const Tensor& t, int64_t n) {
  if (n == 0) return t;
  Shape shape(t.sizes().begin(), t.sizes().end() - n);
  shape.push_back(-1);
  return t.reshape(shape).sum(-1);
}

// KL divergences with a low-rank Gaussian on either side (low_rank.cc).
Tensor kl_low_rank(const LowRankMultivariateNormal& p, const LowRankMultivariateNormal& q);
Tensor kl_low_rank(const MultivariateNormal& p, const LowRankMultivariateNormal& q);
Tensor kl_low_rank(const LowRankMultivariateNormal& p, const MultivariateNormal& q);

}  // namespace tandem::distributions::internal
