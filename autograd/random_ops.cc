// Random sampling with autograd: Poisson, binomial and gamma variates, normal(mean, std) with tensor
// parameters, and the in-place samplers of Tensor (uniform_, normal_, bernoulli_, exponential_,
// geometric_, cauchy_, log_normal_, random_). As in PyTorch, a sample is not differentiable in its
// parameters (gamma variates excepted: theirs is the implicit reparameterization gradient): poisson
// and normal give them zero gradients, binomial refuses a backward, and an in-place sample gives the
// overwritten value a zero gradient.
#include <cmath>
#include <limits>
#include <numbers>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"

namespace tandem {

namespace {

// A node for a sample's parameters: zero gradients, each in its parameter's shape.
void record_zero_gradients(const char* name, const std::vector<const Tensor*>& parameters, Tensor& out) {
  bool any = false;
  for (const Tensor* p : parameters) any = any || autograd::needs_grad({p});
  if (!any) return;
  std::vector<Shape> shapes;
  for (const Tensor* p : parameters) shapes.push_back(p->defined() ? p->sizes() : Shape{});
  autograd::record(name, parameters, {&out}, [shapes, out_options = out.options()](const std::vector<Tensor>&) {
    std::vector<Tensor> grads;
    for (const Shape& shape : shapes) grads.push_back(zeros(shape, out_options));
    return grads;
  });
}

// Writes `values` (computed by `draw` for self's shape) into self: checks first that self may be
// written, then records the write, whose gradient for self's old value is zero.
template <typename Draw>
Tensor& sample_into(Tensor& self, const char* op, const char* node, Draw draw) {
  kernels::check_defined(self, op, "self");
  kernels::check_no_internal_overlap(self, op);
  const bool recording = autograd::needs_grad({&self});
  autograd::check_inplace(self, node, recording);
  {
    NoGradGuard values_only;
    draw(self);
  }
  if (recording) {
    autograd::record_inplace(node, self, {},
                             [](const std::vector<Tensor>& g) -> std::vector<Tensor> { return {zeros_like(g[0])}; });
  }
  return self;
}

// The continuous distributions need a floating self, as PyTorch's.
void check_continuous(const Tensor& self, const char* distribution) {
  TD_CHECK(is_floating(self.dtype()), distribution,
           " distribution is a continuous probability distribution: dtype must be floating, got ", self.dtype());
}

// Uniforms in [0, 1), float64, in self's shape on its device: what each inverse transform reads.
Tensor uniforms_for(const Tensor& self) { return rand(self.sizes(), TensorOptions(kFloat64).device(self.device())); }

// Writes computed values into self, converting to its dtype, and counts the write in self's
// version (so that a graph that saved self's old values refuses to use them).
void write(Tensor& self, const Tensor& values) {
  kernels::copy_into(self, values);
  self.bump_version();
}

// The largest whole number a floating dtype counts to without a gap: 2^(mantissa bits + 1).
int64_t exact_integers(DType dtype) {
  switch (dtype) {
    case kFloat64: return int64_t{1} << 53;
    case kFloat32: return int64_t{1} << 24;
    case kFloat16: return int64_t{1} << 11;
    case kBFloat16: return int64_t{1} << 8;
    default: TD_FAIL("random_: ", dtype, " is not floating");
  }
}

// Integers in [from, to] (inclusive, so that int64's whole range is one draw) in self's shape.
Tensor integers_between(const Tensor& self, int64_t from, int64_t to) {
  const TensorOptions int64_on = TensorOptions(kInt64).device(self.device());
  if (to < std::numeric_limits<int64_t>::max()) return randint(from, to + 1, self.sizes(), int64_on);
  // [from, 2^63 - 1], wider than randint draws: 63 random bits from 31 high ones and 32 low ones,
  // then reduced modulo the range's width (as PyTorch's, a bias below 2^-63 per value); from
  // INT64_MIN, a 64th bit for the sign.
  TD_CHECK(from >= 0 || from == std::numeric_limits<int64_t>::min(), "random_: from=", from,
           " without `to` (up to 2^63 - 1) is not supported; give `to`, or from >= 0 or the lowest int64");
  const Tensor high = randint(0, int64_t{1} << 31, self.sizes(), int64_on);
  const Tensor low = randint(0, int64_t{1} << 32, self.sizes(), int64_on);
  const Tensor bits = add(mul(high, int64_t{1} << 32), low);
  if (from == 0) return bits;
  if (from > 0) return add(remainder(bits, std::numeric_limits<int64_t>::max() - from + 1), from);
  return add(bits, mul(randint(0, 2, self.sizes(), int64_on), std::numeric_limits<int64_t>::min()));
}

// Each distribution's values for self's shape, from float64 uniforms (or normals) by its inverse
// transform: bit-identical draws on every device, the transforms within an ulp or a few.
Tensor exponential_values(const Tensor& self, double lambd) {
  return div(neg(log1p(neg(uniforms_for(self)))), lambd);  // -log(1 - u) / lambda
}
Tensor geometric_values(const Tensor& self, double p) {
  // The trials up to the first success, floor(log(1 - u) / log(1 - p)) + 1: at least 1.
  return add(floor(div(log1p(neg(uniforms_for(self))), std::log1p(-p))), 1);
}
Tensor cauchy_values(const Tensor& self, double median, double sigma) {
  // median + sigma tan(pi (u - 1/2))
  return add(mul(tan(mul(sub(uniforms_for(self), 0.5), std::numbers::pi)), sigma), median);
}
Tensor log_normal_values(const Tensor& self, double mean, double std) {
  return exp(add(mul(randn(self.sizes(), TensorOptions(kFloat64).device(self.device())), std), mean));
}

}  // namespace

// ---- variates ----

Tensor poisson(const Tensor& rates) {
  Tensor out = kernels::poisson(rates);
  record_zero_gradients("PoissonBackward0", {&rates}, out);
  return out;
}

Tensor binomial(const Tensor& count, const Tensor& prob) {
  Tensor out = kernels::binomial(count, prob);
  if (autograd::needs_grad({&count, &prob})) {
    autograd::record("BinomialBackward0", {&count, &prob}, {&out}, [](const std::vector<Tensor>&) -> std::vector<Tensor> {
      TD_FAIL("binomial: the derivative is not implemented, as in PyTorch (the variate is not differentiable)");
    });
  }
  return out;
}

Tensor standard_gamma(const Tensor& alpha) {
  Tensor out = kernels::standard_gamma(alpha);
  if (autograd::needs_grad({&alpha})) {
    autograd::record("StandardGammaBackward0", {&alpha}, {&out},
                     [alpha, x = out.detach()](const std::vector<Tensor>& grads) -> std::vector<Tensor> {
                       // Through td::standard_gamma_grad of alpha itself, whose own backward refuses:
                       // a second derivative is an error, as PyTorch's, not dx/da taken as a constant.
                       return {grads[0] * standard_gamma_grad(alpha, x)};
                     });
  }
  return out;
}

Tensor normal(const Tensor& mean, const Tensor& std) {
  kernels::check_defined(mean, "normal", "mean");
  kernels::check_defined(std, "normal", "std");
  TD_CHECK(is_floating(mean.dtype()) && is_floating(std.dtype()), "normal: expected floating mean and std, got ",
           mean.dtype(), " and ", std.dtype());
  TD_CHECK(mean.device() == std.device(), "normal: expected mean and std on one device, got ", mean.device(), " and ",
           std.device());
  Tensor out;
  {
    NoGradGuard values_only;
    // !(std >= 0) also catches NaN.
    TD_CHECK(std.numel() == 0 || all(ge(std, 0)).item<bool>(), "normal: expected every element of std >= 0");
    const Shape shape = broadcast_shapes(mean.sizes(), std.sizes(), "normal");
    // mean's dtype, as PyTorch's.
    out = add(mean, mul(std, randn(shape, TensorOptions(mean.dtype()).device(mean.device())))).to(mean.dtype());
  }
  record_zero_gradients("NormalBackward3", {&mean, &std}, out);
  return out;
}

Tensor normal(const Tensor& mean, double std) {
  kernels::check_defined(mean, "normal", "mean");
  TD_CHECK(is_floating(mean.dtype()), "normal: expected a floating mean, got ", mean.dtype());
  TD_CHECK(std >= 0, "normal: expected std >= 0, got ", std);
  Tensor out;
  {
    NoGradGuard values_only;
    out = add(mean, mul(randn(mean.sizes(), TensorOptions(kFloat64).device(mean.device())), std)).to(mean.dtype());
  }
  record_zero_gradients("NormalBackward1", {&mean}, out);
  return out;
}

Tensor normal(double mean, const Tensor& std) {
  kernels::check_defined(std, "normal", "std");
  TD_CHECK(is_floating(std.dtype()), "normal: expected a floating std, got ", std.dtype());
  Tensor out;
  {
    NoGradGuard values_only;
    TD_CHECK(std.numel() == 0 || all(ge(std, 0)).item<bool>(), "normal: expected every element of std >= 0");
    out = add(mul(randn(std.sizes(), TensorOptions(std.dtype()).device(std.device())), std), mean);
  }
  record_zero_gradients("NormalBackward2", {&std}, out);
  return out;
}

Tensor normal(double mean, double std, IntList sizes, TensorOptions options) {
  TD_CHECK(std >= 0, "normal: expected std >= 0, got ", std);
  Tensor out = randn(sizes, options);
  return out.mul_(std).add_(mean);
}

// ---- in place ----

Tensor& Tensor::uniform_(double from, double to) {
  return sample_into(*this, "uniform_", "UniformBackward0", [&](Tensor& self) { tandem::uniform_(self, from, to); });
}

Tensor& Tensor::normal_(double mean, double std) {
  return sample_into(*this, "normal_", "NormalBackward0", [&](Tensor& self) { tandem::normal_(self, mean, std); });
}

Tensor& Tensor::bernoulli_(double p) {
  return sample_into(*this, "bernoulli_", "BernoulliBackward2", [&](Tensor& self) { tandem::bernoulli_(self, p); });
}

Tensor& Tensor::bernoulli_(const Tensor& p) {
  return sample_into(*this, "bernoulli_", "BernoulliBackward1", [&](Tensor& self) {
    kernels::check_defined(p, "bernoulli_", "p");
    TD_CHECK(is_floating(p.dtype()), "bernoulli_: expected floating probabilities, got ", p.dtype());
    TD_CHECK(p.device() == self.device(), "bernoulli_: expected p on ", self.device(), ", got ", p.device());
    const Shape shape = self.sizes();
    TD_CHECK(broadcast_shapes(p.sizes(), shape, "bernoulli_") == shape, "bernoulli_: p of shape ",
             shape_str(p.sizes()), " does not broadcast to self's ", shape_str(shape));
    write(self, tandem::bernoulli(kernels::contiguous(kernels::expand(p.detach(), shape))));
  });
}

Tensor& Tensor::exponential_(double lambd) {
  return sample_into(*this, "exponential_", "ExponentialBackward0", [&](Tensor& self) {
    check_continuous(self, "Exponential");
    TD_CHECK(lambd > 0, "exponential_: expected lambda > 0, got ", lambd);
    write(self, exponential_values(self, lambd));
  });
}

Tensor& Tensor::geometric_(double p) {
  return sample_into(*this, "geometric_", "GeometricBackward0", [&](Tensor& self) {
    TD_CHECK(self.dtype() != kBool, "geometric_: not supported for bool tensors");
    TD_CHECK(p > 0 && p < 1, "geometric_: expected p in (0, 1), got ", p);
    write(self, geometric_values(self, p));
  });
}

Tensor& Tensor::cauchy_(double median, double sigma) {
  return sample_into(*this, "cauchy_", "CauchyBackward0", [&](Tensor& self) {
    check_continuous(self, "Cauchy");
    TD_CHECK(sigma > 0, "cauchy_: expected sigma > 0, got ", sigma);
    write(self, cauchy_values(self, median, sigma));
  });
}

Tensor& Tensor::log_normal_(double mean, double std) {
  return sample_into(*this, "log_normal_", "LogNormalBackward0", [&](Tensor& self) {
    check_continuous(self, "LogNormal");
    TD_CHECK(std > 0, "log_normal_: expected std > 0, got ", std);
    write(self, log_normal_values(self, mean, std));
  });
}

namespace {

// random_'s three forms, each its own node as in PyTorch.
Tensor& random_between(Tensor& self, int64_t from, std::optional<int64_t> to, const char* node) {
  return sample_into(self, "random_", node, [&](Tensor& out) {
    const DType dtype = out.dtype();
    int64_t last;  // the largest value drawn
    if (to) {
      TD_CHECK(from < *to, "random_: expected from < to, got from=", from, " >= to=", *to);
      last = *to - 1;
    } else {
      last = is_floating(dtype) ? exact_integers(dtype) : kernels::integer_range(dtype).second;
      TD_CHECK(from <= last, "random_: from=", from, " is above the largest value drawn for ", dtype, " (", last, ")");
    }
    if (is_floating(dtype)) {
      // Beyond the dtype's gap-free whole numbers the draws would not be uniform (PyTorch warns there).
      const int64_t bound = exact_integers(dtype);
      TD_CHECK(from >= -bound && last <= bound, "random_: [", from, ", ", last, "] reaches beyond [", -bound, ", ",
               bound, "], where ", dtype, " holds every whole number");
    } else {
      const auto [lowest, largest] = kernels::integer_range(dtype);
      TD_CHECK(from >= lowest && from <= largest, "random_: from=", from, " is out of bounds for ", dtype);
      TD_CHECK(last >= lowest && last <= largest, "random_: to - 1 = ", last, " is out of bounds for ", dtype);
    }
    write(out, integers_between(out, from, last));
  });
}

}  // namespace

Tensor& Tensor::random_(int64_t from, std::optional<int64_t> to) { return random_between(*this, from, to, "RandomBackward0"); }

Tensor& Tensor::random_(int64_t to) { return random_between(*this, 0, to, "RandomBackward1"); }

Tensor& Tensor::random_() { return random_between(*this, 0, std::nullopt, "RandomBackward2"); }

}  // namespace tandem
