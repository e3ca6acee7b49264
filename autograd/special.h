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
// Bessel functions of the first and second kinds, orders 0 and 1 (Y0, Y1: -inf at 0, NaN below).
Tensor bessel_j0(const Tensor& x);
Tensor bessel_j1(const Tensor& x);
Tensor bessel_y0(const Tensor& x);
Tensor bessel_y1(const Tensor& x);
// The modified ones: I0 and I1 (as i0 and i1), K0 and K1 (inf at 0, NaN below), and K scaled by
// exp(x). The scaled K, spherical_bessel_j0 (sin(x) / x) and airy_ai are not differentiable, as in
// PyTorch: their results never require grad.
Tensor modified_bessel_i0(const Tensor& x);
Tensor modified_bessel_i1(const Tensor& x);
Tensor modified_bessel_k0(const Tensor& x);
Tensor modified_bessel_k1(const Tensor& x);
Tensor scaled_modified_bessel_k0(const Tensor& x);
Tensor scaled_modified_bessel_k1(const Tensor& x);
Tensor spherical_bessel_j0(const Tensor& x);
Tensor airy_ai(const Tensor& x);  // the Airy function Ai
// Orthogonal polynomials of x of degree n: Chebyshev's of the first to fourth kinds (T, U, V, W) and
// shifted to [0, 1] (at 2x - 1), Hermite's physicists' H and probabilists' He, Laguerre's L, Legendre's
// P. n is taken toward zero; a negative n gives 0. Not differentiable, as in PyTorch. Integers give
// float32; a number x takes n's floating dtype (or float32).
Tensor chebyshev_polynomial_t(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_t(const Tensor& x, Scalar n);
Tensor chebyshev_polynomial_t(Scalar x, const Tensor& n);
Tensor chebyshev_polynomial_u(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_u(const Tensor& x, Scalar n);
Tensor chebyshev_polynomial_u(Scalar x, const Tensor& n);
Tensor chebyshev_polynomial_v(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_v(const Tensor& x, Scalar n);
Tensor chebyshev_polynomial_v(Scalar x, const Tensor& n);
Tensor chebyshev_polynomial_w(const Tensor& x, const Tensor& n);
Tensor chebyshev_polynomial_w(const Tensor& x, Scalar n);
Tensor chebyshev_polynomial_w(Scalar x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_t(const Tensor& x, Scalar n);
Tensor shifted_chebyshev_polynomial_t(Scalar x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_u(const Tensor& x, Scalar n);
Tensor shifted_chebyshev_polynomial_u(Scalar x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_v(const Tensor& x, Scalar n);
Tensor shifted_chebyshev_polynomial_v(Scalar x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, const Tensor& n);
Tensor shifted_chebyshev_polynomial_w(const Tensor& x, Scalar n);
Tensor shifted_chebyshev_polynomial_w(Scalar x, const Tensor& n);
Tensor hermite_polynomial_h(const Tensor& x, const Tensor& n);
Tensor hermite_polynomial_h(const Tensor& x, Scalar n);
Tensor hermite_polynomial_h(Scalar x, const Tensor& n);
Tensor hermite_polynomial_he(const Tensor& x, const Tensor& n);
Tensor hermite_polynomial_he(const Tensor& x, Scalar n);
Tensor hermite_polynomial_he(Scalar x, const Tensor& n);
Tensor laguerre_polynomial_l(const Tensor& x, const Tensor& n);
Tensor laguerre_polynomial_l(const Tensor& x, Scalar n);
Tensor laguerre_polynomial_l(Scalar x, const Tensor& n);
Tensor legendre_polynomial_p(const Tensor& x, const Tensor& n);
Tensor legendre_polynomial_p(const Tensor& x, Scalar n);
Tensor legendre_polynomial_p(Scalar x, const Tensor& n);
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
