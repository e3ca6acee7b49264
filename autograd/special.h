// torch.special: the special functions, differentiable (but zeta in its exponent, as PyTorch's).
// Integers give float32; the kernels compute in double for every floating dtype (kernels/special.h).
// PyTorch's aliases (expit, gammaln, psi, ...) are here under their special names too.
#pragma once

#include <optional>

#include "core/tensor.h"

namespace tandem::special {

Tensor gammaln(const Tensor& x);                  // log |Gamma(x)|, as lgamma
Tensor digamma(const Tensor& x);                  // Gamma'(x) / Gamma(x); -inf at +0, NaN at negative integers
Tensor psi(const Tensor& x);                      // digamma
Tensor polygamma(int64_t n, const Tensor& x);     // the n-th derivative of digamma
Tensor multigammaln(const Tensor& x, int64_t p);  // the multivariate log-gamma of dimension p
// The Hurwitz zeta function sum over k >= 0 of (k + q)^-x.
Tensor zeta(const Tensor& x, const Tensor& q);
Tensor zeta(const Tensor& x, Scalar q);
Tensor zeta(Scalar x, const Tensor& q);
// The regularized incomplete gamma functions: P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P.
Tensor gammainc(const Tensor& a, const Tensor& x);
Tensor gammaincc(const Tensor& a, const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor erfcx(const Tensor& x);  // exp(x^2) erfc(x), without overflow
Tensor erfinv(const Tensor& x);
Tensor ndtr(const Tensor& x);      // the standard normal CDF
Tensor ndtri(const Tensor& x);     // its inverse
Tensor log_ndtr(const Tensor& x);  // log ndtr(x), exact in both tails
Tensor i0(const Tensor& x);        // modified Bessel functions of the first kind, order 0 and 1,
Tensor i0e(const Tensor& x);       // and scaled by exp(-|x|)
Tensor i1(const Tensor& x);
Tensor i1e(const Tensor& x);
Tensor entr(const Tensor& x);                      // -x log x; 0 at 0, -inf below
Tensor xlogy(const Tensor& x, const Tensor& y);    // x log y, 0 where x is 0
Tensor xlog1py(const Tensor& x, const Tensor& y);  // x log1p(y), 0 where x is 0
Tensor expit(const Tensor& x);                     // sigmoid
Tensor logit(const Tensor& x, std::optional<double> eps = std::nullopt);
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sinc(const Tensor& x);
Tensor round(const Tensor& x);
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

}  // namespace tandem::special
