// polygamma, mvlgamma and torch.special's compositions and aliases (the kernels' special
// functions are in elementwise_ops.cc).
#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "autograd/special.h"
#include "kernels/backend.h"
#include "kernels/factory.h"

namespace tandem {

namespace {

Tensor floating(const Tensor& x) { return is_floating(x.dtype()) ? x : x.to(kDefaultFloat); }

}  // namespace

Tensor polygamma(int64_t n, const Tensor& x) {
  kernels::check_defined(x, "polygamma", "input");
  TD_CHECK(n >= 0, "polygamma(n, x) does not support negative n, got n = ", n);
  if (n == 0) return digamma(x);
  // psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x); its gradient, through zeta's, is psi^(n+1)(x).
  const double factorial = std::tgamma(static_cast<double>(n) + 1);
  return special::zeta(static_cast<double>(n + 1), floating(x)) * (n % 2 == 1 ? factorial : -factorial);
}

Tensor mvlgamma(const Tensor& x, int64_t p) {
  kernels::check_defined(x, "mvlgamma", "input");
  TD_CHECK(p >= 1, "mvlgamma: p has to be greater than or equal to 1, got ", p);
  const Tensor xf = floating(x);
  const double bound = 0.5 * static_cast<double>(p - 1);
  TD_CHECK(xf.numel() == 0 || all(xf > bound).item<bool>(),
           "mvlgamma: All elements of the input must be greater than (p-1)/2 = ", bound);
  // log Gamma_p(x) = p (p - 1) / 4 log pi + sum over j < p of lgamma(x - j / 2).
  const Tensor halves = arange(static_cast<double>(p), TensorOptions(xf.dtype()).device(xf.device())) * 0.5;
  const double constant = 0.25 * static_cast<double>(p * (p - 1)) * std::log(std::numbers::pi);
  return sum(lgamma(unsqueeze(xf, -1) - halves), {-1}) + constant;
}

namespace special {

Tensor gammaln(const Tensor& x) { return lgamma(x); }
Tensor digamma(const Tensor& x) { return tandem::digamma(x); }
Tensor psi(const Tensor& x) { return tandem::digamma(x); }
Tensor polygamma(int64_t n, const Tensor& x) { return tandem::polygamma(n, x); }
Tensor multigammaln(const Tensor& x, int64_t p) { return mvlgamma(x, p); }
Tensor erf(const Tensor& x) { return tandem::erf(x); }
Tensor erfc(const Tensor& x) { return tandem::erfc(x); }
Tensor erfinv(const Tensor& x) { return tandem::erfinv(x); }
Tensor i0(const Tensor& x) { return tandem::i0(x); }
Tensor expit(const Tensor& x) { return sigmoid(x); }
Tensor logit(const Tensor& x, std::optional<double> eps) { return tandem::logit(x, eps); }
Tensor exp2(const Tensor& x) { return tandem::exp2(x); }
Tensor expm1(const Tensor& x) { return tandem::expm1(x); }
Tensor log1p(const Tensor& x) { return tandem::log1p(x); }
Tensor sinc(const Tensor& x) { return tandem::sinc(x); }
Tensor round(const Tensor& x) { return tandem::round(x); }
Tensor logsumexp(const Tensor& x, IntList dims, bool keepdim) { return tandem::logsumexp(x, dims, keepdim); }
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) { return tandem::softmax(x, dim, dtype); }
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return tandem::log_softmax(x, dim, dtype);
}
Tensor xlogy(const Tensor& x, const Tensor& y) { return tandem::xlogy(x, y); }
Tensor gammainc(const Tensor& a, const Tensor& x) { return tandem::igamma(a, x); }
Tensor gammaincc(const Tensor& a, const Tensor& x) { return tandem::igammac(a, x); }

Tensor ndtr(const Tensor& x) {
  kernels::check_defined(x, "special.ndtr", "input");
  return tandem::erfc(floating(x) * -std::numbers::sqrt2 * 0.5) * 0.5;
}

Tensor log_ndtr(const Tensor& x) {
  kernels::check_defined(x, "special.log_ndtr", "input");
  const Tensor xf = floating(x);
  // Below -1, log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 keeps the far tail, where ndtr underflows; above,
  // log1p(-ndtr(-x)). Each branch sees a harmless stand-in where the other is taken, so no inf or
  // NaN of the branch not taken reaches the gradients.
  const Tensor lower = xf < -1;
  const Tensor xl = where(lower, xf, -1), xu = where(lower, 0, xf);
  const double inv_sqrt2 = 0.5 * std::numbers::sqrt2;
  const Tensor tail = log(erfcx(xl * -inv_sqrt2) * 0.5) - xl * xl * 0.5;
  const Tensor body = tandem::log1p(tandem::erfc(xu * inv_sqrt2) * -0.5);
  return where(lower, tail, body);
}

Tensor entr(const Tensor& x) {
  kernels::check_defined(x, "special.entr", "input");
  const Tensor xf = floating(x);
  Tensor y;
  {
    NoGradGuard no_grad;
    const Tensor positive = xf > 0;
    const Tensor at_or_below_zero =
        where(xf == 0, zeros_like(xf), full_like(xf, -std::numeric_limits<double>::infinity()));
    y = where(positive, -xf * tandem::log(where(positive, xf, 1)), at_or_below_zero);
    y = where(isnan(xf), xf, y);
  }
  if (!autograd::needs_grad({&xf})) return y;
  SavedTensor sx(xf, false);
  // -(1 + log x): +inf at 0 and NaN below, as PyTorch's.
  autograd::record("SpecialEntrBackward0", {&xf}, {&y}, [sx](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {g[0] * -(tandem::log(sx.unpack("SpecialEntrBackward0")) + 1)};
  });
  return y;
}

Tensor xlog1py(const Tensor& x, const Tensor& y) {
  kernels::check_defined(x, "special.xlog1py", "input");
  kernels::check_defined(y, "special.xlog1py", "other");
  // As xlogy: 0 where x is 0 (y is replaced by 0 there where log1p(y) is not finite, so the
  // gradients stay finite), NaN wherever y is.
  const Tensor replaced = logical_and(x == 0, logical_or(y <= -1, isposinf(y)));
  // + 0 turns the -0 of a zero x times a negative log into +0, as PyTorch's, and changes nothing else.
  const Tensor product = x * tandem::log1p(where(replaced, 0, y)) + 0.0;
  return where(isnan(y), std::numeric_limits<double>::quiet_NaN(), product);
}

}  // namespace special

}  // namespace tandem
