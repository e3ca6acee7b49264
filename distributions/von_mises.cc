// VonMises: the circular normal distribution. Its normaliser is the modified Bessel function I0,
// taken here as log(i0e(k)) + k, exact and finite for any concentration.
#include <cmath>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/special.h"
#include "distributions/distributions.h"
#include "distributions/internal.h"
#include "kernels/factory.h"

namespace tandem::distributions {

using internal::broadcast_all;
using internal::check_parameter;
using internal::is_real;
using internal::joined;
using internal::shape_of;

namespace {
// log I0(k) and I1(k) / I0(k) through the scaled functions, which neither overflow nor lose digits.
Tensor log_bessel_i0(const Tensor& k) { return special::i0e(k).log() + k; }
Tensor bessel_ratio(const Tensor& k) { return special::i1e(k) / special::i0e(k); }
const double kLog2Pi = std::log(2 * std::numbers::pi);
}  // namespace

VonMises::VonMises(Param loc, Param concentration, std::optional<bool> validate_args)
    : VonMises(broadcast_all({loc, concentration}, "VonMises", {"loc", "concentration"}), validate_args) {}

VonMises::VonMises(const std::vector<Tensor>& params, std::optional<bool> validate_args)
    : Distribution(shape_of(params), {}, validate_args), loc_(params[0]), concentration_(params[1]) {
  check_parameter(validates(), "VonMises", "loc", loc_, [&] { return is_real(loc_); }, "Real()");
  check_parameter(validates(), "VonMises", "concentration", concentration_, [&] { return concentration_ > 0; },
                  "GreaterThan(lower_bound=0.0)");
}

std::shared_ptr<Distribution> VonMises::expand(const Shape& batch_shape) const {
  return std::make_shared<VonMises>(loc_.expand(batch_shape), concentration_.expand(batch_shape), validates());
}

// Best and Fisher (1979): a wrapped Cauchy envelope, each element redrawn until one is accepted.
// In float64 whatever the dtype, as PyTorch's: in float32 a concentration near 1e-4 rejects almost
// every draw. Above k = 1e6 the envelope's r - 1 ~ 1 / (2 k) loses its digits (at 1e15 it rounds to 0
// and nothing is ever accepted) and N(loc, 1 / k) is used: within O(1 / k) in total variation, its
// variance within O(1 / k^2).
Tensor VonMises::sample(IntList sample_shape) const {
  constexpr double kLarge = 1e6;
  constexpr int kRounds = 1000;  // each accepts at least 65% of the draws: never reached
  NoGradGuard no_grad;
  const Shape shape = extended_shape(sample_shape);
  const TensorOptions wide = loc_.options().dtype(kFloat64);
  const Tensor given = concentration_.detach().to(kFloat64).expand(shape);
  const Tensor large = given > kLarge;
  const Tensor kappa = where(large, 1.0, given);
  const Tensor tau = 1 + (1 + 4 * kappa.pow(2)).sqrt();
  const Tensor rho = (tau - (2 * tau).sqrt()) / (2 * kappa);
  // The envelope's r; below 1e-5 its closed form cancels, and 1/k + k is its expansion there.
  const Tensor r = where(kappa < 1e-5, kappa.reciprocal() + kappa, (1 + rho.pow(2)) / (2 * rho));
  Tensor angle = randn(shape, wide) * given.rsqrt();
  Tensor done = large.clone();
  for (int round = 0; !done.all().item<bool>(); ++round) {
    TD_CHECK(round < kRounds, "VonMises: sampling accepted no draw in ", kRounds,
             " rounds; the concentration must be positive and not NaN (validation is off)");
    const Tensor u = rand(joined({3}, shape), wide);
    const Tensor u1 = u.select(0, 0), u2 = u.select(0, 1), u3 = u.select(0, 2);
    const Tensor z = (std::numbers::pi * u1).cos();
    const Tensor f = (1 + r * z) / (r + z);
    const Tensor c = kappa * (r - f);
    const Tensor accept = ~done & (((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0));
    angle = where(accept, (u3 - 0.5).sign() * f.acos(), angle);
    done = done | accept;
  }
  const Tensor centred = angle + loc_.detach().to(kFloat64);
  return (remainder(centred + std::numbers::pi, 2 * std::numbers::pi) - std::numbers::pi).to(loc_.dtype());
}

Tensor VonMises::log_prob(const Tensor& value) const {
  check_value(value, [&] { return is_real(value); }, "Real()");
  return concentration_ * (value - loc_).cos() - kLog2Pi - log_bessel_i0(concentration_);
}

// log(2 pi I0(k)) - k I1(k) / I0(k).
Tensor VonMises::entropy() const {
  return kLog2Pi + log_bessel_i0(concentration_) - concentration_ * bessel_ratio(concentration_);
}

Tensor VonMises::variance() const { return 1 - bessel_ratio(concentration_); }

}  // namespace tandem::distributions
