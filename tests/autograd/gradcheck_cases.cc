#include "tests/autograd/gradcheck_cases.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/linalg.h"
#include "autograd/special.h"

namespace tandem::testing {

namespace {

namespace td = tandem;
using Input = GradcheckInput;
constexpr bool kCpuOnly = true;

// A constant made on the CPU, moved to where `x` lives: each case runs on either device.
Tensor on(const Tensor& x, const Tensor& constant) { return constant.to(x.device()); }

// A value away from 0 (where abs, relu, sign... have kinks): uniform magnitude in [0.1, 2].
Input away_from_zero(Shape shape) { return {shape, 0.1, 2}; }

// x plus `by` on the diagonal of each matrix: with entries in [-1, 1] and `by` 4, a 3 by 3 matrix is
// strictly diagonally dominant by at least 1, far from singular.
Tensor plus_identity(const Tensor& x, double by) {
  return x + on(x, td::eye(x.size(-2), x.size(-1), td::kFloat64)) * by;
}

// x x^T + 3 I: symmetric positive-definite.
Tensor spd_of(const Tensor& x) { return plus_identity(td::matmul(x, x.transpose(-2, -1)), 3); }

// x + x^T + diag(0, 3, 6) for x [*, 3, 3] in [-0.2, 0.2]: symmetric, its eigenvalues at least 0.6 apart
// (the smooth part of eigh's vectors' derivatives divides by their gaps).
Tensor symmetric_apart(const Tensor& x) {
  return x + x.transpose(-2, -1) + on(x, td::diag(td::tensor({0.0, 3.0, 6.0}, td::kFloat64)));
}

// x in [-0.2, 0.2] plus a [4, 3] (or, for a wide x, [3, 4]) matrix of singular values 6, 4 and 2:
// singular values at least 0.6 apart and above 1.3, a constant rank.
Tensor singular_values_apart(const Tensor& x) {
  const Tensor base = td::tensor({{6.0, 0.0, 0.0}, {0.0, 4.0, 0.0}, {0.0, 0.0, 2.0}, {0.0, 0.0, 0.0}}, td::kFloat64);
  return x + on(x, x.size(-2) >= x.size(-1) ? base : base.t());
}

// An in-place form applied to a copy of x (x is a leaf that requires grad, which may not be
// written), and to the middle columns of another copy, a view, whose base takes the gradient.
Tensor written(const Tensor& x, const std::function<void(Tensor&)>& in_place) {
  Tensor whole = x * 1;
  in_place(whole);
  Tensor base = x * 1;
  Tensor middle = base.narrow(-1, 1, 2);
  in_place(middle);
  return td::cat({whole, base});
}

// Each eigen- or singular vector (a column of v) times its own sum: blind to the vector's sign,
// which a factorization is free to choose, yet smooth.
Tensor sign_blind(const Tensor& v) { return v * v.sum(-2, true); }

// Q and R with R's diagonal made positive: unique, whichever signs LAPACK or cuSOLVER chose.
Tensor qr_normalized(const Tensor& x) {
  auto [q, r] = td::linalg::qr(x);
  const Tensor d = td::sign(td::diagonal(r, 0, -2, -1));
  return td::cat({(q * d.unsqueeze(-2)).flatten(), (r * d.unsqueeze(-1)).flatten()});
}

}  // namespace

std::vector<Tensor> gradcheck_inputs(const std::vector<GradcheckInput>& specs, Layout layout) {
  std::vector<Tensor> inputs;
  for (const GradcheckInput& in : specs) {
    Tensor t = random_tensor(in.shape, kFloat64, in.layout_varies ? layout : Layout::Contiguous, in.lo, in.hi);
    for (double kink : in.kinks) {
      Tensor near = abs(t - kink) < 0.01;
      t.copy_(where(near, where(t < kink, t - 0.02, t + 0.02), t));
    }
    if (in.distinct) {
      // Each value's rank, 0.1 apart (offset by 0.025 so that no two have one magnitude), plus
      // its own value as noise below 0.005: the order stays random, no two come close.
      const std::vector<double> drawn = values(t);
      std::vector<int64_t> order(drawn.size());
      std::iota(order.begin(), order.end(), int64_t{0});
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return drawn[a] < drawn[b]; });
      std::vector<double> spread(drawn.size());
      const double middle = static_cast<double>(drawn.size()) / 2;
      for (size_t rank = 0; rank < order.size(); ++rank) {
        spread[order[rank]] = (static_cast<double>(rank) - middle) * 0.1 + 0.025 + drawn[order[rank]] / (in.hi - in.lo) * 0.005;
      }
      t.copy_(tensor(spread, kFloat64).view(in.shape).to(t.device()));
    }
    if (!in.zero_at.empty()) {
      std::vector<double> drawn = values(t);
      for (int64_t at : in.zero_at) drawn.at(static_cast<size_t>(at)) = 0;
      t.copy_(tensor(drawn, kFloat64).view(in.shape).to(t.device()));
    }
    inputs.push_back(t.requires_grad_(true));
  }
  return inputs;
}

const std::vector<GradcheckCase>& gradcheck_cases() {
  using V = const std::vector<Tensor>&;
  static const std::vector<GradcheckCase> all = {
      // unary
      {"neg", {{{3, 4}}}, [](V x) { return -x[0]; }},
      {"abs", {away_from_zero({3, 4})},
       [](V x) { return td::abs(x[0] * on(x[0], td::tensor({1.0, -1.0, 1.0, -1.0}, td::kFloat64))); }},
      {"exp", {{{3, 4}}}, [](V x) { return td::exp(x[0]); }},
      {"expm1", {{{3, 4}}}, [](V x) { return td::expm1(x[0]); }},
      {"log", {{{3, 4}, 0.2, 3}}, [](V x) { return td::log(x[0]); }},
      {"log1p", {{{3, 4}, -0.5, 3}}, [](V x) { return td::log1p(x[0]); }},
      {"sqrt", {{{3, 4}, 0.2, 3}}, [](V x) { return td::sqrt(x[0]); }},
      {"rsqrt", {{{3, 4}, 0.2, 3}}, [](V x) { return td::rsqrt(x[0]); }},
      {"sin", {{{3, 4}}}, [](V x) { return td::sin(x[0]); }},
      {"cos", {{{3, 4}}}, [](V x) { return td::cos(x[0]); }},
      {"tanh", {{{3, 4}}}, [](V x) { return td::tanh(x[0]); }},
      {"sigmoid", {{{3, 4}}}, [](V x) { return td::sigmoid(x[0]); }},
      {"relu", {{{3, 4}, 0.1, 2, true, {1.05}}}, [](V x) { return td::relu(x[0] - 1.05); }},
      {"leaky_relu", {{{3, 4}, -2, 2, true, {0}}}, [](V x) { return td::nn::F::leaky_relu(x[0], 0.2); }},
      {"elu", {{{3, 4}, -2, 2, true, {0}}}, [](V x) { return td::nn::F::elu(x[0], 0.7); }},
      {"selu", {{{3, 4}, -2, 2, true, {0}}}, [](V x) { return td::nn::F::selu(x[0]); }},
      // beta 2, threshold 1.5: both sides, away from the switch at x = 0.75.
      {"softplus", {{{3, 4}, -2, 2, true, {0.75}}}, [](V x) { return td::nn::F::softplus(x[0], 2, 1.5); }},
      {"celu", {{{3, 4}, -2, 2, true, {0}}}, [](V x) { return td::nn::F::celu(x[0], 1.5); }},
      {"gelu", {{{3, 4}}}, [](V x) { return td::gelu(x[0]); }},
      {"gelu tanh", {{{3, 4}}}, [](V x) { return td::gelu(x[0], "tanh"); }},
      {"silu", {{{3, 4}}}, [](V x) { return td::silu(x[0]); }},
      {"sign", {{{5}, 0.1, 2, true, {1.05}}}, [](V x) { return td::sign(x[0] - 1.05) * x[0]; }},
      {"reciprocal", {away_from_zero({3, 4})}, [](V x) { return td::reciprocal(x[0]); }},
      {"erf", {{{3, 4}}}, [](V x) { return td::erf(x[0]); }},
      {"tan", {{{3, 4}, -1.2, 1.2}}, [](V x) { return td::tan(x[0]); }},
      {"asin", {{{3, 4}, -0.9, 0.9}}, [](V x) { return td::asin(x[0]); }},
      {"acos", {{{3, 4}, -0.9, 0.9}}, [](V x) { return td::acos(x[0]); }},
      {"atan", {{{3, 4}}}, [](V x) { return td::atan(x[0]); }},
      {"sinh", {{{3, 4}}}, [](V x) { return td::sinh(x[0]); }},
      {"cosh", {{{3, 4}}}, [](V x) { return td::cosh(x[0]); }},
      {"asinh", {{{3, 4}}}, [](V x) { return td::asinh(x[0]); }},
      {"acosh", {{{3, 4}, 1.2, 3}}, [](V x) { return td::acosh(x[0]); }},
      {"atanh", {{{3, 4}, -0.9, 0.9}}, [](V x) { return td::atanh(x[0]); }},
      {"log2", {{{3, 4}, 0.2, 3}}, [](V x) { return td::log2(x[0]); }},
      {"log10", {{{3, 4}, 0.2, 3}}, [](V x) { return td::log10(x[0]); }},
      {"exp2", {{{3, 4}}}, [](V x) { return td::exp2(x[0]); }},
      {"erfc", {{{3, 4}}}, [](V x) { return td::erfc(x[0]); }},
      {"erfinv", {{{3, 4}, -0.9, 0.9}}, [](V x) { return td::erfinv(x[0]); }},
      // special functions (autograd/special.h), away from their poles
      {"lgamma", {{{3, 4}, 0.2, 4}}, [](V x) { return td::lgamma(x[0]); }},
      {"lgamma digamma between poles", {{{3, 4}, -1.8, -1.2}},
       [](V x) { return td::lgamma(x[0]) + td::digamma(x[0]); }},
      {"digamma", {{{3, 4}, 0.2, 4}}, [](V x) { return td::digamma(x[0]); }},
      {"polygamma 1 and 3", {{{3, 4}, 0.5, 4}},
       [](V x) { return td::polygamma(1, x[0]) + td::polygamma(3, x[0]) * 0.1; }},
      {"mvlgamma", {{{3, 4}, 1.2, 4}}, [](V x) { return td::mvlgamma(x[0], 3) + x[0].mvlgamma(1); }},
      // zeta's gradient in q only: x is a constant (PyTorch has no derivative in x either)
      {"zeta in q", {{{3, 4}, 0.5, 3}},
       [](V x) {
         return td::special::zeta(on(x[0], td::tensor({2.0, 3.5, 1.5, 4.0}, td::kFloat64)), x[0]) +
                td::special::zeta(3.0, x[0]);
       }},
      // Householder products: Q from reflectors, and Q C / C Q^T without forming Q
      {"householder_product", {{{5, 3}}, {{3}, 0.5, 1.8}},
       [](V x) { return td::linalg::householder_product(x[0], x[1]); }},
      // ormqr: Q C, Q^T C and C^T Q (each order of the reflectors), with a batch of one
      {"ormqr", {{{1, 5, 3}}, {{1, 3}, 0.5, 1.8}, {{1, 5, 2}}},
       [](V x) {
         return td::ormqr(x[0], x[1], x[2]) + td::ormqr(x[0], x[1], x[2], true, true) * 0.5 +
                td::ormqr(x[0], x[1], x[2].transpose(-2, -1), false, false).transpose(-2, -1) * 0.25;
       }},
      // renorm: some rows above maxnorm (scaled, through their norm), some below
      {"renorm p 2", {{{4, 3}, -2, 2}}, [](V x) { return td::renorm(x[0], 2, 0, 1.5); }},
      {"renorm p 3 along dim 1", {{{3, 4}, -2, 2}}, [](V x) { return td::renorm(x[0], 3, 1, 1.2); }},
      // numerical derivatives: even steps, coordinates, both edge orders
      {"gradient", {{{4, 5}}},
       [](V x) {
         const std::vector<Tensor> g = td::gradient(x[0], std::vector<double>{0.5, 2.0}, std::nullopt, 2);
         return g[0] + g[1];
       }},
      {"gradient at coordinates", {{{3, 5}}},
       [](V x) {
         const Tensor at = on(x[0], td::tensor({0.0, 1.0, 1.5, 3.5, 4.0}, td::kFloat64));
         return td::gradient(x[0], std::vector<Tensor>{at}, std::vector<int64_t>{1}, 2)[0] +
                td::gradient(x[0], std::vector<Tensor>{at}, std::vector<int64_t>{1}, 1)[0];
       }},
      // the incomplete gamma functions' gradient in x only, as PyTorch's
      {"gammainc and gammaincc in x", {{{3, 4}, 0.2, 6}},
       [](V x) {
         const Tensor a = on(x[0], td::arange(12, td::kFloat64).view({3, 4}) * 0.4 + 0.3);
         return td::special::gammainc(a, x[0]) + td::special::gammaincc(a * 2, x[0]) * 0.5;
       }},
      {"erfcx", {{{3, 4}, -2, 6}}, [](V x) { return td::special::erfcx(x[0]); }},
      {"i0", {{{3, 4}, -3, 3}}, [](V x) { return td::i0(x[0]); }},
      {"i0e", {{{3, 4}, -3, 3, true, {0}}}, [](V x) { return td::special::i0e(x[0]); }},
      // i1 and i1e through exactly 0, where their gradients are 1/2 by a formula of their own
      {"i1", {{{5}, -3, 3, true, {}, false, {2}}}, [](V x) { return td::special::i1(x[0]); }},
      {"i1e", {{{5}, -3, 3, true, {0}, false, {2}}}, [](V x) { return td::special::i1e(x[0]); }},
      {"i0e i1e asymptotic", {{{5}, 26, 40}}, [](V x) { return td::special::i0e(x[0]) + td::special::i1e(-x[0]); }},
      {"ndtri", {{{3, 4}, 0.05, 0.95}}, [](V x) { return td::special::ndtri(x[0]); }},
      // Each method's range: J and Y switch to Hankel's expansions at 25, K to its integral at 1.
      {"bessel_j0 bessel_j1", {{{3, 4}, -35, 35}},
       [](V x) { return td::special::bessel_j0(x[0]) + td::special::bessel_j1(x[0]) * 0.5; }},
      {"bessel_y0 bessel_y1", {{{3, 4}, 0.3, 35}},
       [](V x) { return td::special::bessel_y0(x[0]) + td::special::bessel_y1(x[0]) * 0.5; }},
      {"modified_bessel_i0 modified_bessel_i1", {{{3, 4}, -3, 3}},
       [](V x) { return td::special::modified_bessel_i0(x[0]) + td::special::modified_bessel_i1(x[0]) * 0.5; }},
      {"modified_bessel_k0 modified_bessel_k1", {{{3, 4}, 0.3, 6}},
       [](V x) { return td::special::modified_bessel_k0(x[0]) + td::special::modified_bessel_k1(x[0]) * 0.5; }},
      {"ndtr log_ndtr", {{{3, 4}, -3, 3}}, [](V x) { return td::special::ndtr(x[0]) + td::special::log_ndtr(x[0]); }},
      {"log_ndtr left tail", {{{5}, -30, -5}}, [](V x) { return td::special::log_ndtr(x[0]); }},
      {"entr", {{{3, 4}, 0.1, 3}}, [](V x) { return td::special::entr(x[0]); }},
      {"xlog1py", {{{3, 4}}, {{3, 4}, -0.8, 2}}, [](V x) { return td::special::xlog1py(x[0], x[1]); }},
      {"square", {{{3, 4}}}, [](V x) { return td::square(x[0]); }},
      {"deg2rad rad2deg", {{{3, 4}}}, [](V x) { return td::deg2rad(x[0]) + td::rad2deg(x[0]); }},
      {"logit", {{{3, 4}, 0.1, 0.9}}, [](V x) { return td::logit(x[0]); }},
      {"logit eps", {{{3, 4}, 0.05, 0.95, true, {0.2, 0.8}}}, [](V x) { return td::logit(x[0], 0.2); }},
      // log of the negative elements is NaN, replaced: their gradient is 0.
      {"nan_to_num", {{{3, 4}, -2, 2, true, {0}}}, [](V x) { return td::nan_to_num(td::log(x[0]), 0.5); }},
      {"pow scalar", {{{3, 4}, 0.2, 2}}, [](V x) { return td::pow(x[0], 2.5); }},
      {"pow scalar 0", {{{3}}}, [](V x) { return td::pow(x[0], 0) + x[0]; }},
      {"clamp", {{{4, 5}, -2, 2, true, {-1, 1}}}, [](V x) { return td::clamp(x[0], -1.0, 1.0); }},
      {"clamp min", {{{4, 5}, -2, 2, true, {0.5}}}, [](V x) { return x[0].clamp_min(0.5); }},
      {"clamp max", {{{4, 5}, -2, 2, true, {0.5}}},
       [](V x) { return x[0].clamp_max(0.5) + td::clamp(x[0], std::nullopt, 0.5) * 2; }},
      // binary, with broadcasting
      {"add", {{{3, 4}}, {{4}}}, [](V x) { return td::add(x[0], x[1], 2.5); }},
      {"sub", {{{3, 1}}, {{1, 4}}}, [](V x) { return td::sub(x[0], x[1], 0.5); }},
      {"mul", {{{2, 3, 4}}, {{3, 1}}}, [](V x) { return x[0] * x[1]; }},
      {"div", {{{3, 4}}, away_from_zero({4})}, [](V x) { return x[0] / x[1]; }},
      {"pow", {{{3, 4}, 0.3, 2}, {{3, 4}}}, [](V x) { return td::pow(x[0], x[1]); }},
      {"scalar pow", {{{5}}}, [](V x) { return td::pow(2.0, x[0]); }},
      {"maximum", {{{12}}, {{12}}}, [](V x) { return td::maximum(x[0], x[1]); }},
      {"minimum", {{{3, 4}}, {{4}}}, [](V x) { return td::minimum(x[0], x[1]); }},
      // a / b in (0.05, 0.82) and in (-0.82, -0.05): away from the jumps at whole quotients.
      {"remainder", {{{3, 4}, 0.1, 0.9}, {{4}, 1.1, 2}}, [](V x) { return td::remainder(x[0], x[1]); }},
      {"remainder of negatives", {{{3, 4}, -0.9, -0.1}, {{4}, 1.1, 2}},
       [](V x) { return td::remainder(x[0], x[1]) + td::remainder(x[0], 0.75); }},
      {"fmod", {{{3, 4}, -0.9, 0.9}, {{4}, 1.1, 2}}, [](V x) { return td::fmod(x[0], x[1]) + td::fmod(x[0] * 3, x[1]); }},
      {"atan2", {{{3, 4}}, {{4}, 0.5, 2}}, [](V x) { return td::atan2(x[0], x[1]) + td::atan2(x[1], x[0]); }},
      {"hypot", {away_from_zero({3, 4}), {{3, 4}}}, [](V x) { return td::hypot(x[0], x[1]); }},
      {"copysign", {away_from_zero({3, 4}), {{4}, -2, 2, true, {0}}}, [](V x) { return td::copysign(x[0], x[1]); }},
      {"logaddexp", {{{3, 4}}, {{4}}}, [](V x) { return td::logaddexp(x[0], x[1]); }},
      // b shifted 3 up or down, element by element: each operand wins somewhere, never a tie.
      {"fmax fmin", {{{3, 4}, -1, 1}, {{3, 4}, -1, 1}},
       [](V x) {
         Tensor shift = on(x[0], td::tensor({3.0, -3.0, 3.0, -3.0}, td::kFloat64));
         return td::fmax(x[0], x[1] + shift) + td::fmin(x[0], x[1] - shift) * 2;
       }},
      {"xlogy", {{{3, 4}}, {{3, 4}, 0.2, 2}}, [](V x) { return td::xlogy(x[0], x[1]); }},
      {"lerp", {{{3, 4}}, {{4}}, {{3, 4}, -1, 1, true, {-0.5, 0.5}}},
       [](V x) { return td::lerp(x[0], x[1].expand({3, 4}), x[2]) + td::lerp(x[0], x[1].expand({3, 4}), 0.7); }},
      {"addcmul addcdiv", {{{3, 4}}, {{4}}, away_from_zero({3, 1})},
       [](V x) { return td::addcmul(x[0], x[1], x[2], 0.5) + td::addcdiv(x[0], x[1], x[2], -2); }},
      {"scalar operands", {{{3, 4}}}, [](V x) { return (2.0 - x[0]) * 3 + 1 / (x[0] * x[0] + 1); }},
      {"0-dim operand", {{{3, 4}}, {{}}}, [](V x) { return x[0] * x[1] + x[1]; }},
      {"where", {{{3, 4}, -2, 2, true, {0}}, {{4}}}, [](V x) { return td::where(x[0] > 0, x[0], x[1] * 2); }},
      {"masked_fill", {{{3, 4}, -2, 2, true, {0.5}}}, [](V x) { return td::masked_fill(x[0], x[0] > 0.5, 2.0); }},
      {"where with numbers", {{{3, 4}, -2, 2, true, {0}}},
       [](V x) { return td::where(x[0] > 0, 1.5, x[0] * 2) + td::where(x[0] > 0, x[0], -0.5); }},
      {"masked_fill broadcast beyond x", {{{3, 4}}},
       [](V x) { return td::masked_fill(x[0], on(x[0], td::tensor({true, false})).view({2, 1, 1}), 2.0); }},
      // rearranging, joining and indexing compositions
      {"roll repeat tile", {{{3, 4}}},
       [](V x) { return td::roll(x[0], {1, -2}, {0, 1}) + x[0].repeat({2, 1}).narrow(0, 1, 3) + x[0].tile({1, 1}); }},
      {"repeat_interleave", {{{3, 2}}},
       [](V x) {
         return td::repeat_interleave(x[0], 2, 0).sum(0) +
                td::repeat_interleave(x[0], on(x[0], td::tensor({1, 0})), 1).sum(1).sum();
       }},
      {"movedim rot90 flips", {{{2, 3, 4}}},
       [](V x) {
         return td::movedim(x[0], 0, 2).sum(2) + td::rot90(x[0], 1, {1, 2}).sum(0).t() + x[0].fliplr().sum(0);
       }},
      {"diagonal diag trace", {{{3, 4}}, {{3}}},
       [](V x) {
         return td::diagonal(x[0], 1).sum() + td::diag(x[1], -1).sum(0) * x[0].diag(0).sum() +
                x[0].narrow(1, 0, 3).trace();
       }},
      {"diff", {{{3, 5}}}, [](V x) { return td::diff(x[0], 2, 1); }},
      {"stacks meshgrid", {{{3}}, {{3}}},
       [](V x) {
         auto grids = td::meshgrid({x[0], x[1]}, "xy");
         return td::hstack({x[0], x[1]}).sum() + td::vstack({x[0], x[1]}).prod(0) + grids[0] * grids[1];
       }},
      {"masked_select", {{{3, 4}, -2, 2, true, {0}}}, [](V x) { return td::masked_select(x[0], x[0].detach() > 0); }},
      {"index_add index_copy index_fill", {{{4, 3}}, {{2, 3}}},
       [](V x) {
         const Tensor index = on(x[0], td::tensor({2, 0}));
         return x[0].index_add(0, index, x[1], 0.5) + x[0].index_copy(0, index, x[1]) * 2 +
                x[0].index_fill(1, index, 1.5);
       }},
      {"take take_along_dim", {{{3, 4}}},
       [](V x) {
         return td::take(x[0], on(x[0], td::tensor({0, 11, -1, 5}))) +
                td::take_along_dim(x[0], on(x[0], td::tensor({1, 0, 2, 2}).view({1, 4})), 0).view({4});
       }},
      {"dot mv outer", {{{3}}, {{3, 3}}},
       [](V x) { return td::dot(x[0], x[0] * 2) + td::mv(x[1], x[0]) + td::outer(x[0], x[0]).sum(0); }},
      {"addmv addr baddbmm addbmm", {{{2}}, {{2, 3}}, {{2, 3, 2}}},
       [](V x) {
         const Tensor vec = x[1].select(0, 0);
         return td::addmv(x[0], x[1], vec, 0.5, 2) + td::addr(x[1], x[0], vec, 2, -1).sum(1) +
                td::baddbmm(x[1].unsqueeze(2).narrow(1, 0, 2).expand({2, 2, 2}).contiguous(), x[2].transpose(1, 2),
                            x[2], 1.5, 0.5)
                    .sum({0, 2}) +
                td::addbmm(x[0].unsqueeze(1).expand({2, 2}), x[2].transpose(1, 2), x[2]).sum(1);
       }},
      {"einsum", {{{2, 3, 4}}, {{2, 4, 3}}, {{4}}},
       [](V x) {
         const Tensor product = td::einsum("bij,bjk->bik", {x[0], x[1]});
         return product + td::einsum("bii->bi", {product}).unsqueeze(2) +
                td::einsum("...j,j->...", {x[0], x[2]}).unsqueeze(2);
       }},
      {"cross kron tensordot", {{{2, 3}}, {{2, 3}}, {{3, 2}}},
       [](V x) {
         return td::cross(x[0], x[1]) + td::kron(x[0], x[2]).sum(1).narrow(0, 0, 2).unsqueeze(1) +
                td::tensordot(x[0], x[2], {1}, {0}).sum(1, true);
       }},
      {"cov corrcoef trapezoid", {{{3, 5}}},
       [](V x) {
         return td::cov(x[0]).sum(1) + td::corrcoef(x[0]).sum(0) + td::trapezoid(x[0]) +
                td::trapezoid(x[0], on(x[0], td::tensor({0.0, 0.5, 1.5, 2.0, 4.0}, td::kFloat64)));
       }},
      {"logaddexp2 sinc", {{{3, 4}}, {{3, 4}}}, [](V x) { return td::logaddexp2(x[0], x[1]) + td::sinc(x[0]); }},
      {"scatter forms", {{{3, 4}}, {{4}}, {{3}}},
       [](V x) {
         return td::select_scatter(x[0], x[1], 0, 1) +
                td::slice_scatter(x[0], x[1].view({1, 4}).expand({2, 4}), 0, 0, 3, 2) +
                td::diagonal_scatter(x[0], x[2]) +
                x[0].masked_scatter(on(x[0], td::tensor({true, false, true, true})), x[1].repeat({3}) * 2);
       }},
      {"index index_put", {{{4, 3}}, {{2, 3}}},
       [](V x) {
         const Tensor rows = on(x[0], td::tensor({2, 0}));
         return x[0].index({rows, on(x[0], td::tensor({1, 1}))}).sum() * x[0] +
                x[0].index_put({rows}, x[1]) + x[0].index_put({on(x[0], td::tensor({1, 1}))}, x[1], true);
       }},
      {"block_diag cartesian_prod combinations", {{{2}}, {{3}}},
       [](V x) {
         return td::block_diag({x[0], x[1]}).sum(0).narrow(0, 0, 3) + td::cartesian_prod({x[0], x[1]}).sum(0).sum() +
                td::combinations(x[1]).prod(1);
       }},
      {"nansum nanmean var_mean", {{{3, 4}}},
       [](V x) {
         const Tensor holes = td::where(on(x[0], td::tensor({true, false, false, true})), NAN, x[0]);
         return td::nansum(holes, {1}) + td::nanmean(holes, {1}) + std::get<0>(td::var_mean(x[0], {1})) +
                std::get<1>(td::std_mean(x[0], {1}));
       }},
      // reductions
      {"sum", {{{3, 4, 5}}}, [](V x) { return x[0].sum(); }},
      {"sum dims", {{{3, 4, 5}}}, [](V x) { return x[0].sum({0, 2}); }},
      {"sum keepdim", {{{3, 4, 5}}}, [](V x) { return x[0].sum({-1}, true); }},
      {"mean", {{{3, 4, 5}}}, [](V x) { return x[0].mean({1}); }},
      {"prod", {{{2, 3}, 0.5, 2}}, [](V x) { return x[0].prod(); }},
      {"prod dim", {{{3, 4}, -2, 2}}, [](V x) { return x[0].prod(1); }},
      {"prod keepdim", {{{3, 4}, -2, 2}}, [](V x) { return x[0].prod(0, true); }},
      {"prod with zero", {{{3, 4}}},
       [](V x) { return td::masked_fill(x[0], on(x[0], td::eye(3, 4, td::kBool)), 0).prod(1); }},
      {"amax", {{{3, 4, 5}, -2, 2, true, {}, true}}, [](V x) { return x[0].amax({0, 2}); }},
      {"amin", {{{3, 4}, -2, 2, true, {}, true}}, [](V x) { return x[0].amin(); }},
      {"amax amin keepdim", {{{3, 4}, -2, 2, true, {}, true}}, [](V x) { return x[0].amax({1}, true) + x[0].amin({1}, true) * 2; }},
      {"sort", {{{3, 4}, -2, 2, true, {}, true}},
       [](V x) { return std::get<0>(td::sort(x[0], 1)) + std::get<0>(td::sort(x[0], 0, true)).sum(0); }},
      {"topk", {{{3, 5}, -2, 2, true, {}, true}}, [](V x) { return std::get<0>(td::topk(x[0], 2, 1)); }},
      {"cummax cummin", {{{3, 5}, -2, 2, true, {}, true}},
       [](V x) { return std::get<0>(td::cummax(x[0], 1)) + std::get<0>(x[0].cummin(0)) * 2; }},
      {"logcumsumexp", {{{3, 5}}}, [](V x) { return td::logcumsumexp(x[0], 1) + td::logcumsumexp(x[0], 0); }},
      {"kthvalue median", {{{3, 5}, -2, 2, true, {}, true}},
       [](V x) { return std::get<0>(td::kthvalue(x[0], 2, 1)) + std::get<0>(td::median(x[0], 1)) + x[0].median(); }},
      {"max", {{{3, 4}, -2, 2, true, {}, true}}, [](V x) { return x[0].max(); }},
      {"min", {{{3, 4}, -2, 2, true, {}, true}}, [](V x) { return x[0].min(); }},
      {"max dim", {{{3, 4}, -2, 2, true, {}, true}}, [](V x) { return std::get<0>(x[0].max(1)); }},
      {"min dim keepdim", {{{3, 4, 2}, -2, 2, true, {}, true}}, [](V x) { return std::get<0>(x[0].min(0, true)); }},
      {"var", {{{3, 5}}}, [](V x) { return x[0].var({1}); }},
      {"var correction 0", {{{4, 5}}}, [](V x) { return x[0].var({}, 0); }},
      {"mean var keepdim", {{{3, 4, 2}}}, [](V x) { return x[0].mean({0, 2}, true) + x[0].var({1}, 1, true).sum(); }},
      {"std", {{{3, 5}}}, [](V x) { return x[0].std({0}, 1, true); }},
      {"norm 2", {{{3, 4}}}, [](V x) { return x[0].norm(); }},
      {"norm 1", {{{3, 4}, 0.1, 2, true, {1.05}}}, [](V x) { return (x[0] - 1.05).norm(1, {1}); }},
      {"norm 3", {away_from_zero({3, 4})}, [](V x) { return x[0].norm(3, {0}); }},
      {"norm inf", {{{3, 4}, -2, 2, true, {}, true}}, [](V x) { return x[0].norm(INFINITY, {1}); }},
      {"norm -inf", {{{3, 4}, -2, 2, true, {}, true}}, [](V x) { return x[0].norm(-INFINITY, {1}); }},
      {"norm 0.5 keepdim", {away_from_zero({3, 4})}, [](V x) { return x[0].norm(0.5, {0}, true); }},
      {"norm 2 keepdim", {{{3, 4}}}, [](V x) { return x[0].norm(2, {1}, true); }},
      {"logsumexp", {{{3, 4}}}, [](V x) { return x[0].logsumexp({1}); }},
      {"logsumexp dims keepdim", {{{3, 4, 5}}}, [](V x) { return x[0].logsumexp({0, 2}, true); }},
      {"cumsum", {{{3, 4}}}, [](V x) { return x[0].cumsum(1); }},
      {"cumprod", {{{3, 5}}}, [](V x) { return x[0].cumprod(1); }},
      {"cumprod dim 0", {{{4, 3}}}, [](V x) { return x[0].cumprod(-2); }},
      // Row 0 with a zero inside, row 1 with two side by side, row 2 with one last.
      {"cumprod with zeros", {{{3, 5}, -2, 2, true, {}, false, {1, 7, 8, 14}}}, [](V x) { return x[0].cumprod(1); }},
      {"cumprod with a zero first", {{{2, 4}, -2, 2, true, {}, false, {0}}}, [](V x) { return x[0].cumprod(1); }},
      // Row 0 with one zero, row 1 with two: the second derivative across two zeros is the
      // product of the rest.
      {"prod dim with zeros", {{{3, 4}, -2, 2, true, {}, false, {1, 4, 6}}}, [](V x) { return x[0].prod(1); }},
      {"prod with one zero", {{{2, 3}, -2, 2, true, {}, false, {2}}}, [](V x) { return x[0].prod(); }},
      {"prod with two zeros", {{{2, 3}, -2, 2, true, {}, false, {0, 5}}}, [](V x) { return x[0].prod(); }},
      // matrix products
      {"mm", {{{3, 4}}, {{4, 5}}}, [](V x) { return td::mm(x[0], x[1]); }},
      {"mm transposed", {{{4, 3}}, {{5, 4}}}, [](V x) { return td::mm(x[0].t(), x[1].t()); }},
      {"bmm", {{{2, 3, 4}}, {{2, 4, 2}}}, [](V x) { return td::bmm(x[0], x[1]); }},
      {"matmul vector", {{{4}}, {{4}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"matmul matrix vector", {{{3, 4}}, {{4}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"matmul vector matrix", {{{4}}, {{4, 3}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"matmul 3d 2d", {{{2, 3, 4}}, {{4, 2}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"matmul broadcast", {{{2, 1, 3, 4}}, {{3, 4, 2}}}, [](V x) { return td::matmul(x[0], x[1]); }},
      {"addmm", {{{1, 5}}, {{3, 4}}, {{4, 5}}}, [](V x) { return td::addmm(x[0], x[1], x[2], 0.5, 2); }},
      {"cosine_similarity", {{{3, 4}}, {{4}}}, [](V x) { return td::nn::F::cosine_similarity(x[0], x[1], -1); }},
      {"normalize", {{{3, 4}}}, [](V x) { return td::nn::F::normalize(x[0]); }},
      {"group_norm", {{{2, 4, 3}}, {{4}}, {{4}}},
       [](V x) { return td::nn::F::group_norm(x[0], 2, x[1], x[2]); }},
      {"linear", {{{3, 4}}, {{5, 4}}, {{5}}}, [](V x) { return td::nn::F::linear(x[0], x[1], x[2]); }},
      {"linear 3-D transposed input", {{{4, 3, 5}}, {{2, 5}}, {{2}}},
       [](V x) { return td::nn::F::linear(x[0].transpose(0, 1), x[1], x[2]); }},
      {"linear 3-D without bias", {{{2, 3, 5}}, {{2, 5}}}, [](V x) { return td::nn::F::linear(x[0], x[1]); }},
      // linalg (autograd/linalg.h): inputs kept away from where the factorizations stop being smooth
      {"linalg.inv", {{{2, 3, 3}, -1, 1}}, [](V x) { return td::linalg::inv(plus_identity(x[0], 4)); }},
      {"linalg.inv_ex solve_ex cholesky_ex", {{{2, 3, 3}, -1, 1}, {{2, 3, 2}}},
       [](V x) {
         const Tensor a = plus_identity(x[0], 4);
         return std::get<0>(td::linalg::inv_ex(a)).narrow(-1, 0, 2) + std::get<0>(td::linalg::solve_ex(a, x[1])) +
                std::get<0>(td::linalg::cholesky_ex(spd_of(x[0]))).narrow(-1, 1, 2);
       }},
      {"linalg.solve", {{{2, 3, 3}, -1, 1}, {{3, 2}}},
       [](V x) {
         const Tensor a = plus_identity(x[0], 4);
         return td::linalg::solve(a, x[1]) + td::linalg::solve(a, x[1].select(1, 0)).unsqueeze(-1);
       }},
      {"linalg.solve left=false", {{{3, 3}, -1, 1}, {{2, 3}}},
       [](V x) { return td::linalg::solve(plus_identity(x[0], 4), x[1], false); }},
      {"linalg.solve_triangular", {{{3, 3}, -1, 1}, {{3, 2}}},
       [](V x) {
         const Tensor a = plus_identity(x[0], 4);
         return td::linalg::solve_triangular(a, x[1], true) + td::linalg::solve_triangular(a, x[1], false) +
                td::linalg::solve_triangular(x[0], x[1].t(), false, false, true).t();
       }},
      {"linalg.det", {{{2, 3, 3}, -1, 1}}, [](V x) { return td::linalg::det(plus_identity(x[0], 4)); }},
      {"linalg.slogdet logdet", {{{3, 3}, -1, 1}},
       [](V x) {
         const Tensor negative = x[0] + on(x[0], td::diag(td::tensor({4.0, -4.0, 4.0}, td::kFloat64)));
         return std::get<1>(td::linalg::slogdet(negative)) + td::logdet(plus_identity(x[0], 4));
       }},
      {"linalg.cholesky", {{{2, 3, 3}, -1, 1}},
       [](V x) { return td::linalg::cholesky(spd_of(x[0])) + td::linalg::cholesky(spd_of(x[0]), true); }},
      // The factor as tril() makes it: the gradient reaches the triangle that is read.
      {"cholesky_solve cholesky_inverse", {{{3, 3}, -1, 1}, {{3, 2}}},
       [](V x) {
         const Tensor factor = td::tril(plus_identity(x[0], 3));
         return td::cholesky_solve(x[1], factor) + td::cholesky_solve(x[1], factor.t(), true) +
                td::cholesky_inverse(factor).narrow(1, 0, 2) + td::cholesky_inverse(factor.t(), true).narrow(1, 1, 2);
       }},
      {"linalg.qr tall", {{{4, 3}, -1, 1}}, [](V x) { return qr_normalized(plus_identity(x[0], 4)); }},
      {"linalg.qr square", {{{3, 3}, -1, 1}}, [](V x) { return qr_normalized(plus_identity(x[0], 4)); }},
      {"linalg.qr wide", {{{3, 4}, -1, 1}}, [](V x) { return qr_normalized(plus_identity(x[0], 4)); }},
      {"linalg.eigh eigvalsh", {{{2, 3, 3}, -0.2, 0.2}},
       [](V x) {
         auto [l, v] = td::linalg::eigh(symmetric_apart(x[0]));
         return l.unsqueeze(-2) + sign_blind(v) + td::linalg::eigvalsh(symmetric_apart(x[0]), "U").unsqueeze(-1);
       }},
      {"linalg.svd tall", {{{4, 3}, -0.2, 0.2}},
       [](V x) {
         auto [u, s, vh] = td::linalg::svd(singular_values_apart(x[0]), false);
         return td::cat({s, td::matmul(u, vh).flatten(), sign_blind(u).flatten(), sign_blind(vh.t()).flatten()});
       }},
      {"linalg.svd wide", {{{3, 4}, -0.2, 0.2}},
       [](V x) {
         auto [u, s, vh] = td::linalg::svd(singular_values_apart(x[0]), false);
         return td::cat({s, td::matmul(u, vh).flatten(), sign_blind(u).flatten(), sign_blind(vh.t()).flatten()});
       }},
      {"linalg.svdvals matrix_norm cond", {{{4, 3}, -0.2, 0.2}},
       [](V x) {
         const Tensor a = singular_values_apart(x[0]);
         return td::linalg::svdvals(a) + td::linalg::matrix_norm(a, "nuc") + td::linalg::matrix_norm(a, 2.0) +
                td::linalg::matrix_norm(a, -2.0) + td::linalg::matrix_norm(a) + td::linalg::cond(a);
       }},
      {"linalg.pinv", {{{4, 3}, -0.2, 0.2}}, [](V x) { return td::linalg::pinv(singular_values_apart(x[0])); }},
      {"linalg.pinv wide", {{{3, 4}, -0.2, 0.2}}, [](V x) { return td::linalg::pinv(singular_values_apart(x[0])); }},
      {"linalg.matrix_power", {{{3, 3}, -1, 1}},
       [](V x) {
         const Tensor a = plus_identity(x[0], 4);
         return td::linalg::matrix_power(a, -2) + td::linalg::matrix_power(a, 3) * 0.01;
       }},
      {"linalg.lstsq tall", {{{4, 3}, -0.2, 0.2}, {{4, 2}}},
       [](V x) {
         const td::linalg::LstsqResult r = td::linalg::lstsq(singular_values_apart(x[0]), x[1], std::nullopt, "gels");
         return td::cat({r.solution.flatten(), r.residuals});
       }},
      {"linalg.lstsq gelsd, rank-deficient", {{{4, 3}, -0.2, 0.2}, {{4, 2}}},
       [](V x) {
         // The third column the sum of the first two: rank 2 whatever x is, the solution pinv(A) B.
         const Tensor two = singular_values_apart(x[0]).narrow(1, 0, 2);
         const Tensor a = td::cat({two, two.sum(1, true)}, 1);
         const td::linalg::LstsqResult r = td::linalg::lstsq(a, x[1], 1e-10, "gelsd");
         return r.solution;
       }},
      {"linalg.lstsq wide", {{{3, 4}, -0.2, 0.2}, {{3, 2}}},
       [](V x) { return td::linalg::lstsq(singular_values_apart(x[0]), x[1]).solution; }},
      {"linalg.multi_dot vector_norm vecdot", {{{3}}, {{3, 4}}, {{4, 2}}, {{2}}},
       [](V x) {
         return td::linalg::multi_dot({x[0], x[1], x[2], x[3]}) + td::linalg::multi_dot({x[1].t(), x[0]}) * 0.5 +
                td::linalg::vector_norm(x[1], 3) + td::linalg::vector_norm(x[1], 2, {0}) +
                td::linalg::vecdot(x[1], x[1] * 0.5, 0);
       }},
      // Distinct values: the sort's order (and so which values a quantile takes) stays put.
      {"quantile nanquantile", {{{3, 5}, -2, 2, true, {}, true}},
       [](V x) {
         const Tensor qs = on(x[0], td::tensor({0.2, 0.7}, td::kFloat64));
         return td::quantile(x[0], qs, 1) + td::nanquantile(x[0], qs, 1, false, "midpoint") +
                td::quantile(x[0], 0.5, 1, false, "nearest").unsqueeze(0);
       }},
      {"cumulative_trapezoid diag_embed ldexp", {{{2, 4}}, {{4}}},
       [](V x) {
         return td::cat({td::cumulative_trapezoid(x[0], x[1]).flatten(), td::cumulative_trapezoid(x[0], 0.5, 0).flatten(),
                         td::diag_embed(x[0], 1).flatten(), td::ldexp(x[1], on(x[1], td::tensor({2, -1, 0, 3})))});
       }},
      // The diagonal lifted well above the rest: the pivots stay put under the finite differences.
      {"linalg.lu_factor square wide tall", {{{2, 3, 3}, -1, 1}, {{3, 5}, -1, 1}, {{5, 3}, -1, 1}},
       [](V x) {
         return td::cat({std::get<0>(td::linalg::lu_factor(plus_identity(x[0], 4))).flatten(),
                         std::get<0>(td::linalg::lu_factor(plus_identity(x[1], 4))).flatten(),
                         std::get<0>(td::linalg::lu_factor(plus_identity(x[2], 4))).flatten()});
       }},
      {"linalg.lu lu_solve", {{{3, 3}, -1, 1}, {{3, 2}}},
       [](V x) {
         auto [lu, pivots] = td::linalg::lu_factor(plus_identity(x[0], 4));
         auto [p, l, u] = td::linalg::lu(plus_identity(x[0], 4));
         return td::cat({td::linalg::lu_solve(lu, pivots, x[1]).flatten(),
                         td::linalg::lu_solve(lu, pivots, x[1].t(), false, true).flatten(), l.flatten(), u.flatten()});
       }},
      {"linalg.matrix_exp", {{{2, 3, 3}, -1, 1}},
       [](V x) { return td::linalg::matrix_exp(x[0]) + td::linalg::matrix_exp(x[0] * 4) * 0.01; }},
      {"linalg.vander tensorsolve", {{{3}}, {{6, 6}, -1, 1}, {{2, 3}}},
       [](V x) {
         return td::cat({td::linalg::vander(x[0], 4).flatten(),
                         td::linalg::tensorsolve(plus_identity(x[1], 4).view({2, 3, 6}), x[2])});
       }},
      // views and copies
      {"view", {{{3, 4}, -2, 2, false}}, [](V x) { return x[0].view({2, 6}) * on(x[0], td::arange(6.0)); }},
      {"reshape copy", {{{3, 4}}}, [](V x) { return x[0].t().reshape({12}) * on(x[0], td::arange(12.0)); }},
      {"flatten", {{{2, 3, 4}}}, [](V x) { return x[0].flatten(1) * on(x[0], td::arange(12.0)); }},
      {"unflatten", {{{6, 2}, -2, 2, false}}, [](V x) { return x[0].unflatten(0, {2, 3}).sum(1); }},
      {"permute", {{{2, 3, 4}}},
       [](V x) { return x[0].permute({2, 0, 1}) * on(x[0], td::arange(3.0)).view({1, 1, 3}); }},
      {"transpose", {{{3, 4}}}, [](V x) { return x[0].transpose(0, 1) * on(x[0], td::arange(3.0)); }},
      {"narrow", {{{5, 4}}}, [](V x) { return x[0].narrow(0, 1, 3) * 2; }},
      {"slice step", {{{7, 4}}}, [](V x) { return x[0].slice(0, 1, std::nullopt, 2).sum(0); }},
      {"select", {{{3, 4}}}, [](V x) { return x[0].select(1, -1) * x[0].select(0, 0).sum(); }},
      {"expand", {{{3, 1}}}, [](V x) { return x[0].expand({2, 3, 4}) * on(x[0], td::arange(4.0)); }},
      {"squeeze unsqueeze", {{{3, 1, 4}}},
       [](V x) { return x[0].squeeze(1).unsqueeze(0) * on(x[0], td::arange(4.0)); }},
      {"squeeze all", {{{1, 3, 1, 4}}}, [](V x) { return x[0].squeeze() * on(x[0], td::arange(4.0)); }},
      {"split", {{{7, 2}}}, [](V x) {
         auto parts = x[0].split(3);
         return parts[0].sum() * 2 + parts[2].sum() * 3;
       }},
      {"chunk unbind", {{{4, 3}}}, [](V x) { return x[0].chunk(2)[1].unbind(1)[2] * 5; }},
      {"clone contiguous", {{{3, 4}}}, [](V x) { return x[0].t().contiguous().clone() * on(x[0], td::arange(3.0)); }},
      {"to another cpu device", {{{3, 4}}},
       [](V x) { return (x[0].to(td::Device("cpu:1")) * 2).to(td::Device("cpu:0")); }, kCpuOnly},
      {"to the host and back", {{{3, 4}}},
       [](V x) { return (x[0].to(td::Device(td::kCPU)) * 2).to(x[0].device()) * x[0]; }},
      {"copy_ into a clone", {{{3}}, {{3, 3}}}, [](V x) {
         Tensor y = x[1] * 1;
         y.select(0, 1).copy_(x[0]);
         return y;
       }},
      {"cat", {{{2, 3}}, {{4, 3}}}, [](V x) { return td::cat({x[0], x[1] * 2}) * on(x[0], td::arange(3.0)); }},
      {"stack", {{{3}}, {{3}}}, [](V x) { return td::stack({x[0], x[1]}, 1) * on(x[0], td::arange(2.0)); }},
      {"tril triu", {{{2, 3, 4}}}, [](V x) { return td::tril(x[0], 1) * 2 + x[0].triu(-1); }},
      {"flip", {{{3, 4, 2}}}, [](V x) { return x[0].flip({0, -1}) * on(x[0], td::arange(2.0)); }},
      {"index_select", {{{4, 3}}},
       [](V x) { return x[0].index_select(0, on(x[0], td::tensor({3, 0, 3}))) * on(x[0], td::arange(3.0)); }},
      {"gather", {{{3, 4}}}, [](V x) { return x[0].gather(1, on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}}))); }},
      {"gather of a 0-dim input by a 1-D index", {{{}}},
       [](V x) { return x[0].gather(0, on(x[0], td::tensor({0, 0, 0}))) * on(x[0], td::arange(1.0, 4.0)); }},
      {"gather of a 1-D input by a 0-dim index", {{{4}}},
       [](V x) { return x[0].gather(0, on(x[0], td::tensor({2}).reshape({}))); }},
      {"scatter_add", {{{3, 4}}, {{3, 2}}}, [](V x) {
         return x[0].scatter_add(1, on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}})), x[1] * x[1]);
       }},
      {"scatter_add of a larger src", {{{3, 4}}, {{4, 5}}}, [](V x) {
         return x[0].scatter_add(1, on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}})), x[1]);  // only src[:3, :2] is added
       }},
      {"scatter", {{{3, 4}}, {{3, 2}}}, [](V x) {
         return x[0].scatter(1, on(x[0], td::tensor({{0, 2}, {3, 1}, {2, 0}})), x[1] * x[1]) +
                x[0].scatter(0, on(x[0], td::tensor({{1, 0, 2, 1}})), 0.5);
       }},
      {"scatter_reduce sum mean prod", {{{3, 4}}, {{3, 2}, -2, 2, true, {}, false, {1}}}, [](V x) {
         const Tensor index = on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}}));
         return x[0].scatter_reduce(1, index, x[1], "sum") + x[0].scatter_reduce(1, index, x[1], "mean", false) +
                x[0].scatter_reduce(1, index, x[1], "prod") + x[0].scatter_reduce(1, index, x[1], "prod", false);
       }},
      {"scatter_reduce amax amin", {{{3, 4}, -2, 2, true, {}, true}, {{3, 2}, -2, 2, true, {}, true}}, [](V x) {
         const Tensor index = on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}}));
         return x[0].scatter_reduce(1, index, x[1], "amax") + x[0].scatter_reduce(1, index, x[1], "amin", false);
       }},
      {"index_reduce", {{{4, 3}, 0.5, 2, true, {}, true}, {{3, 3}, 0.5, 2, true, {}, true}}, [](V x) {
         const Tensor index = on(x[0], td::tensor({0, 2, 0}));
         return x[0].index_reduce(0, index, x[1], "prod") + x[0].index_reduce(0, index, x[1], "mean", false) +
                x[0].index_reduce(0, index, x[1], "amax");
       }},
      {"embedding", {{{5, 3}}},
       [](V x) { return td::embedding(x[0], on(x[0], td::tensor({{1, 4}, {1, 0}}))) * on(x[0], td::arange(3.0)); }},
      // neural-network ops
      {"softmax", {{{3, 4}}}, [](V x) { return x[0].softmax(1) * on(x[0], td::arange(4.0)); }},
      {"softmax dim 0", {{{3, 4}}}, [](V x) { return x[0].softmax(0) * on(x[0], td::arange(4.0)); }},
      {"log_softmax", {{{3, 4}}}, [](V x) { return x[0].log_softmax(-1) * on(x[0], td::arange(4.0)); }},
      {"max_pool2d", {{{1, 2, 5, 5}, -2, 2, true, {}, true}}, [](V x) { return td::max_pool2d(x[0], 2, 2, 1); }},
      {"max_pool2d ceil dilation", {{{2, 6, 6}, -2, 2, true, {}, true}}, [](V x) { return td::max_pool2d(x[0], 2, 2, 0, 2, true); }},
      {"avg_pool2d", {{{1, 2, 5, 5}}}, [](V x) { return td::avg_pool2d(x[0], 3, 2, 1); }},
      {"avg_pool2d options", {{{2, 5, 5}}}, [](V x) { return td::avg_pool2d(x[0], 2, 2, 1, true, false); }},
      {"avg_pool2d divisor_override", {{{1, 2, 5, 5}}}, [](V x) { return td::avg_pool2d(x[0], 3, 2, 1, false, true, 5); }},
      {"avg_pool2d ceil counting padding", {{{2, 5, 5}}}, [](V x) { return td::avg_pool2d(x[0], 2, 2, 1, true, true); }},
      {"im2col", {{{1, 2, 4, 5}}}, [](V x) { return td::im2col(x[0], {2, 3}, 1, 1, {2, 1}); }},
      {"col2im", {{{1, 8, 12}}}, [](V x) { return td::col2im(x[0], {4, 5}, 2, 1, 0, 1); }},
      {"im2col_matrix", {{{2, 2, 4, 5}}}, [](V x) { return td::im2col_matrix(x[0], {2, 3}, 1, 1, {2, 1}); }},
      {"col2im_matrix", {{{8, 24}}}, [](V x) { return td::col2im_matrix(x[0], 2, {4, 5}, 2, 1, 0, 1); }},
      {"col2im_matrix of a transposed matrix", {{{24, 8}}},
       [](V x) { return td::col2im_matrix(x[0].t(), 2, {4, 5}, 2, 1, 0, 1); }},
      {"conv2d", {{{1, 2, 5, 4}}, {{4, 1, 3, 2}}, {{4}}},
       [](V x) { return td::nn::F::conv2d(x[0], x[1], x[2], {2, 1}, 1, 1, 2); }},
      {"conv1d", {{{2, 4, 6}}, {{6, 2, 3}}, {{6}}},
       [](V x) { return td::nn::F::conv1d(x[0], x[1], x[2], 2, 1, 2, 2); }},
      {"conv_transpose2d", {{{1, 4, 3, 2}}, {{4, 1, 3, 2}}, {{2}}},
       [](V x) { return td::nn::F::conv_transpose2d(x[0], x[1], x[2], {2, 1}, {1, 0}, {1, 0}, 2, {1, 2}); }},
      {"conv_transpose2d with output_padding past the stride", {{{2, 2, 2, 3}}, {{2, 3, 2, 2}}},
       [](V x) { return td::nn::F::conv_transpose2d(x[0], x[1], Tensor(), 1, 1, 1, 1, 2); }},
      {"pad reflect", {{{2, 3, 4}}}, [](V x) { return td::nn::F::pad(x[0], {2, -1, 1, 2}, td::kReflect); }},
      {"pad replicate", {{{1, 2, 3}}}, [](V x) { return td::nn::F::pad(x[0], {3, 1}, td::kReplicate); }},
      {"pad circular", {{{1, 2, 3, 4}}}, [](V x) { return td::nn::F::pad(x[0], {-1, 3, 2, 1}, td::kCircular); }},
      {"pad constant", {{{2, 3, 4}}}, [](V x) { return td::nn::F::pad(x[0], {1, -2, 0, 0, 2, 1}, td::kConstant, 3); }},
      {"lstm_cell", {{{2, 3}}, {{2, 4}}, {{2, 4}}, {{16, 3}}, {{16, 4}}, {{16}}, {{16}}},
       [](V x) {
         auto [h, c] = td::nn::F::lstm_cell(x[0], x[1], x[2], x[3], x[4], x[5], x[6]);
         return h + c * 2;
       }},
      {"gru_cell", {{{2, 3}}, {{2, 4}}, {{12, 3}}, {{12, 4}}, {{12}}, {{12}}},
       [](V x) { return td::nn::F::gru_cell(x[0], x[1], x[2], x[3], x[4], x[5]); }},
      {"rnn_tanh_cell without biases", {{{2, 3}}, {{2, 4}}, {{4, 3}}, {{4, 4}}},
       [](V x) { return td::nn::F::rnn_tanh_cell(x[0], x[1], x[2], x[3]); }},
      {"interpolate bilinear", {{{1, 2, 3, 4}}},
       [](V x) {
         return td::nn::F::interpolate(x[0],
                                       td::nn::F::InterpolateOptions().scale_factor({1.7, 0.8}).mode(td::kBilinear));
       }},
      {"interpolate trilinear with corners", {{{1, 1, 2, 3, 2}}},
       [](V x) {
         return td::nn::F::interpolate(
             x[0], td::nn::F::InterpolateOptions().size({3, 2, 4}).mode(td::kTrilinear).align_corners(true));
       }},
      {"interpolate nearest", {{{2, 2, 5}}},
       [](V x) { return td::nn::F::interpolate(x[0], td::nn::F::InterpolateOptions().size({7})); }},
      {"interpolate bicubic", {{{1, 2, 3, 4}}},
       [](V x) {
         return td::nn::F::interpolate(x[0],
                                       td::nn::F::InterpolateOptions().scale_factor({1.7, 0.8}).mode(td::kBicubic));
       }},
      {"interpolate bicubic antialias, a kept size", {{{1, 2, 4, 9}}},
       [](V x) {
         return td::nn::F::interpolate(
             x[0], td::nn::F::InterpolateOptions().scale_factor({1.1, 0.4}).mode(td::kBicubic).antialias(true));
       }},
      {"interpolate bilinear antialias with corners", {{{1, 2, 7, 3}}},
       [](V x) {
         return td::nn::F::interpolate(
             x[0],
             td::nn::F::InterpolateOptions().size({3, 5}).mode(td::kBilinear).align_corners(true).antialias(true));
       }},
      {"interpolate area", {{{1, 2, 3, 5, 7}}},
       [](V x) {
         return td::nn::F::interpolate(x[0], td::nn::F::InterpolateOptions().size({2, 3, 4}).mode(td::kArea));
       }},
      {"scaled_dot_product_attention with an added mask", {{{2, 3, 4}}, {{2, 5, 4}}, {{2, 5, 3}}, {{3, 5}}},
       [](V x) { return td::nn::F::scaled_dot_product_attention(x[0], x[1], x[2], x[3]); }},
      {"MultiheadAttention with kdim, vdim, bias_kv and zero_attn", {{{3, 2, 4}}, {{5, 2, 3}}, {{5, 2, 2}}},
       [](V x) {
         // The module's parameters are constants here, the same at every call (copies of one kept
         // on the CPU, so that none outlives a GPU): the gradients are the inputs'.
         static const td::nn::MultiheadAttention kept = [] {
           td::nn::MultiheadAttention m(
               td::nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(2).add_bias_kv(true).add_zero_attn(true));
           m->to(kFloat64);
           return m;
         }();
         const auto attention = std::dynamic_pointer_cast<td::nn::MultiheadAttentionImpl>(kept->clone(x[0].device()));
         Tensor padding = on(x[0], td::tensor(std::vector<double>{0, 0, 0, 0, 1, 0, 1, 0, 0, 0}).view({2, 5}) > 0.5);
         return std::get<0>(attention->forward(x[0], x[1], x[2], padding));
       }},
      {"GRU over a packed, unsorted batch, both ways", {{{4, 3, 2}}, {{2, 3, 3}}},
       [](V x) {
         static const td::nn::GRU kept = [] {
           td::nn::GRU m(td::nn::GRUOptions(2, 3).bidirectional(true));
           m->to(kFloat64);
           return m;
         }();
         const auto gru = std::dynamic_pointer_cast<td::nn::GRUImpl>(kept->clone(x[0].device()));
         namespace rnn = td::nn::utils::rnn;
         auto [out, h] = gru->forward_with_packed_input(
             rnn::pack_padded_sequence(x[0], std::vector<int64_t>{2, 4, 1}, false, false), x[1]);
         return std::get<0>(rnn::pad_packed_sequence(out)).sum(2) + h.sum(0).sum(1).unsqueeze(0);
       }},
      {"max_pool1d ceil dilation", {{{2, 3, 11}, -2, 2, true, {}, true}},
       [](V x) { return td::nn::F::max_pool1d(x[0], 3, 2, 1, 2, true); }},
      {"avg_pool1d without padding in the count", {{{2, 3, 10}}},
       [](V x) { return td::nn::F::avg_pool1d(x[0], 3, 2, 1, true, false); }},
      {"adaptive_avg_pool1d", {{{2, 3, 10}}}, [](V x) { return td::nn::F::adaptive_avg_pool1d(x[0], 4); }},
      {"adaptive_max_pool2d", {{{2, 2, 7, 6}, -2, 2, true, {}, true}},
       [](V x) { return td::nn::F::adaptive_max_pool2d(x[0], {3, 4}); }},
      {"pixel_shuffle", {{{2, 8, 2, 3}}}, [](V x) { return td::nn::F::pixel_shuffle(x[0], 2); }},
      {"fold", {{{2, 12, 6}}}, [](V x) { return td::nn::F::fold(x[0], {3, 4}, {2, 2}); }},
      {"instance_norm with weight and bias", {{{2, 3, 4}}, {{3}}, {{3}}},
       [](V x) { return td::nn::F::instance_norm(x[0], Tensor(), Tensor(), x[1], x[2]); }},
      {"local_response_norm", {{{2, 5, 3}}}, [](V x) { return td::nn::F::local_response_norm(x[0], 3, 0.1, 0.75, 2); }},
      {"bilinear", {{{2, 3}}, {{2, 4}}, {{5, 3, 4}}, {{5}}},
       [](V x) { return td::nn::F::bilinear(x[0], x[1], x[2], x[3]); }},
      {"channel_shuffle", {{{2, 6, 2}}}, [](V x) { return td::nn::F::channel_shuffle(x[0], 3); }},
      {"embedding_bag sum with per-sample weights", {{{6, 3}}, {{5}}},
       [](V x) {
         return td::nn::F::embedding_bag(on(x[0], td::tensor({1, 2, 4, 1, 5})), x[0], on(x[0], td::tensor({0, 2, 2})),
                                         td::nn::F::EmbeddingBagMode::sum, x[1]);
       }},
      {"embedding_bag max with padding", {{{6, 3}, -2, 2, true, {}, true}},
       [](V x) {
         return td::nn::F::embedding_bag(on(x[0], td::tensor({{1, 2, 4}, {3, 0, 5}})), x[0], Tensor(),
                                         td::nn::F::EmbeddingBagMode::max, Tensor(), false, 0);
       }},
      {"ctc_loss", {{{6, 2, 4}}},
       [](V x) {
         return td::nn::F::ctc_loss(x[0].log_softmax(2), on(x[0], td::tensor({{1, 2}, {3, 3}})),
                                    on(x[0], td::tensor({6, 5})), on(x[0], td::tensor({2, 2})));
       }},
      {"conv_transpose1d strided, dilated, grouped", {{{2, 4, 5}}, {{4, 3, 3}}, {{6}}},
       [](V x) { return td::nn::F::conv_transpose1d(x[0], x[1], x[2], 2, 1, 1, 2, 2); }},
      {"conv3d strided, padded, dilated, grouped", {{{1, 4, 3, 5, 3}}, {{4, 2, 2, 3, 2}}, {{4}}},
       [](V x) { return td::nn::F::conv3d(x[0], x[1], x[2], {2, 1, 1}, {1, 0, 1}, {1, 2, 1}, 2); }},
      {"conv_transpose3d strided, padded, dilated, grouped", {{{1, 4, 2, 3, 2}}, {{4, 2, 2, 2, 3}}, {{4}}},
       [](V x) { return td::nn::F::conv_transpose3d(x[0], x[1], x[2], {2, 1, 2}, {1, 0, 1}, {1, 0, 1}, 2, {1, 2, 1}); }},
      {"max_pool3d ceil dilation", {{{1, 2, 4, 5, 4}, -2, 2, true, {}, true}},
       [](V x) { return td::nn::F::max_pool3d(x[0], 3, 2, 1, {1, 2, 1}, true); }},
      {"avg_pool3d without padding in the count", {{{1, 2, 4, 5, 4}}},
       [](V x) { return td::nn::F::avg_pool3d(x[0], 3, 2, 1, true, false); }},
      {"adaptive_avg_pool3d", {{{1, 2, 5, 4, 3}}}, [](V x) { return td::nn::F::adaptive_avg_pool3d(x[0], {3, 2, 2}); }},
      {"adaptive_max_pool3d", {{{1, 2, 5, 4, 3}, -2, 2, true, {}, true}},
       [](V x) { return td::nn::F::adaptive_max_pool3d(x[0], {3, 2, 2}); }},
      {"fractional_max_pool2d overlapping windows", {{{2, 2, 7, 6}, -2, 2, true, {}, true}},
       [](V x) {
         const Tensor samples = td::tensor({0.1, 0.8, 0.5, 0.35, 0.95, 0.0, 0.6, 0.2}, td::kFloat64).view({2, 2, 2});
         return td::nn::F::fractional_max_pool2d(x[0], 3, {4, 3}, {}, on(x[0], samples));
       }},
      {"fractional_max_pool3d unbatched", {{{2, 5, 4, 6}, -2, 2, true, {}, true}},
       [](V x) {
         const Tensor samples = td::tensor({0.3, 0.7, 0.15, 0.55, 0.05, 0.9}, td::kFloat64).view({1, 2, 3});
         return td::nn::F::fractional_max_pool3d(x[0], 2, {3, 2, 4}, {}, on(x[0], samples));
       }},
      {"lp_pool2d p 3 ceil", {{{2, 2, 5, 6}, 0.1, 2}},
       [](V x) { return td::nn::F::lp_pool2d(x[0], 3, {2, 3}, {1, 2}, true); }},
      {"max_unpool2d (windows apart: each index once)", {{{2, 2, 3, 3}}},
       [](V x) {
         const Tensor image = on(x[0], td::arange(144).to(kFloat64).sin().view({2, 2, 6, 6}));
         const Tensor where_from = std::get<1>(td::max_pool2d_with_indices(image, {2, 2}));
         return td::nn::F::max_unpool2d(x[0], where_from, 2);
       }},
      // Overlapping windows (their gradients add) and windows with gaps; the copies as their views.
      {"unfold", {{{3, 7}}}, [](V x) { return td::cat({x[0].unfold(1, 3, 1).flatten(), x[0].unfold(0, 2, 1).flatten(), x[0].unfold(1, 2, 3).flatten()}); }},
      {"unfold_copy diagonal_copy expand_copy", {{{3, 4}}},
       [](V x) {
         return td::cat({td::unfold_copy(x[0], 1, 2, 1).flatten(), td::diagonal_copy(x[0], 1),
                         td::expand_copy(x[0].narrow(0, 0, 1), {2, 4}).flatten()});
       }},
      {"cdist p 2", {{{2, 4, 3}}, {{2, 5, 3}}}, [](V x) { return td::nn::F::cdist(x[0], x[1]); }},
      // The grid's kinks: where a coordinate crosses a whole pixel, the weights' slopes jump, so the
      // second derivatives do (gradgradcheck failed once on a grid value 1e-6 from one). Bilinear
      // without aligned corners: x = (k + 0.5) / 2.5 - 1 for the width of 5, y = (k + 0.5) / 2 - 1
      // for the height of 4.
      {"grid_sample bilinear",
       {{{2, 2, 4, 5}}, {{2, 3, 2, 2}, -0.9, 0.9, true, {-0.8, -0.75, -0.4, -0.25, 0, 0.25, 0.4, 0.75, 0.8}}},
       [](V x) { return td::nn::F::grid_sample(x[0], x[1]); }},
      // Aligned corners: x = k / 2 - 1 (width 5), y = k - 1 (height 3).
      {"grid_sample bicubic, corners aligned", {{{1, 2, 4, 5}}, {{1, 2, 3, 2}, -0.9, 0.9, true, {-0.5, 0, 0.5}}},
       [](V x) {
         return td::nn::F::grid_sample(
             x[0], x[1],
             td::nn::F::GridSampleOptions().mode(td::nn::F::GridSampleMode::bicubic).align_corners(true));
       }},
      // Depth and width 3: (k + 0.5) / 1.5 - 1; height 4 as above.
      {"grid_sample trilinear",
       {{{1, 2, 3, 4, 3}}, {{1, 2, 2, 1, 3}, -0.9, 0.9, true, {-0.75, -2.0 / 3, -0.25, 0, 0.25, 2.0 / 3, 0.75}}},
       [](V x) { return td::nn::F::grid_sample(x[0], x[1]); }},
      {"affine_grid", {{{2, 2, 3}}}, [](V x) { return td::nn::F::affine_grid(x[0], {2, 1, 3, 4}); }},
      {"cdist p 1.5", {{{4, 3}}, {{5, 3}}}, [](V x) { return td::nn::F::cdist(x[0], x[1], 1.5); }},
      {"hardtanh", {{{3, 4}, -2, 2, true, {-0.5, 1.5}}}, [](V x) { return td::nn::F::hardtanh(x[0], -0.5, 1.5); }},
      {"hardsigmoid", {{{3, 4}, -4, 4, true, {-3, 3}}}, [](V x) { return td::nn::F::hardsigmoid(x[0]); }},
      {"hardswish", {{{3, 4}, -4, 4, true, {-3, 3}}}, [](V x) { return td::nn::F::hardswish(x[0]); }},
      {"mish", {{{3, 4}, -3, 3}}, [](V x) { return td::nn::F::mish(x[0]); }},
      {"logsigmoid", {{{3, 4}, -3, 3}}, [](V x) { return td::nn::F::logsigmoid(x[0]); }},
      {"softsign", {{{3, 4}, -2, 2, true, {0}}}, [](V x) { return td::nn::F::softsign(x[0]); }},
      {"tanhshrink", {{{3, 4}}}, [](V x) { return td::nn::F::tanhshrink(x[0]); }},
      {"softshrink", {{{3, 4}, -2, 2, true, {-0.5, 0.5}}}, [](V x) { return td::nn::F::softshrink(x[0]); }},
      {"hardshrink", {{{3, 4}, -2, 2, true, {-0.5, 0.5}}}, [](V x) { return td::nn::F::hardshrink(x[0]); }},
      {"threshold", {{{3, 4}, -2, 2, true, {0.3}}}, [](V x) { return td::nn::F::threshold(x[0], 0.3, -1); }},
      {"glu", {{{3, 4}}}, [](V x) { return td::nn::F::glu(x[0], 1); }},
      {"softmin", {{{3, 4}}}, [](V x) { return td::nn::F::softmin(x[0], 1); }},
      {"prelu", {{{2, 3, 4}, -2, 2, true, {0}}, {{3}}}, [](V x) { return td::nn::F::prelu(x[0], x[1]); }},
      {"relu_", {{{3, 4}, -2, 2, true, {0}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::relu_(y); }); }},
      {"leaky_relu_", {{{3, 4}, -2, 2, true, {0}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::leaky_relu_(y, 0.2); }); }},
      {"elu_", {{{3, 4}, -2, 2, true, {0}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::elu_(y, 0.7); }); }},
      {"selu_", {{{3, 4}, -2, 2, true, {0}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::selu_(y); }); }},
      {"celu_", {{{3, 4}, -2, 2, true, {0}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::celu_(y, 1.5); }); }},
      {"hardtanh_", {{{3, 4}, -2, 2, true, {-0.5, 1.5}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::hardtanh_(y, -0.5, 1.5); }); }},
      {"relu6_", {{{3, 4}, -1, 7, true, {0, 6}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::relu6_(y); }); }},
      {"threshold_", {{{3, 4}, -2, 2, true, {0.3}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::threshold_(y, 0.3, -1); }); }},
      {"rrelu_ in evaluation", {{{3, 4}, -2, 2, true, {0}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::rrelu_(y, 0.1, 0.3); }); }},
      {"hardsigmoid_", {{{3, 4}, -4, 4, true, {-3, 3}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::hardsigmoid_(y); }); }},
      {"hardswish_", {{{3, 4}, -4, 4, true, {-3, 3}}},
       [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::hardswish_(y); }); }},
      {"silu_", {{{3, 4}}}, [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::silu_(y); }); }},
      {"mish_", {{{3, 4}, -3, 3}}, [](V x) { return written(x[0], [](Tensor& y) { td::nn::F::mish_(y); }); }},
      // The mantissa jumps at each power of two: the inputs keep away from them.
      {"frexp mantissa", {{{3, 4}, 0.2, 7, true, {0.25, 0.5, 1, 2, 4}}},
       [](V x) { return std::get<0>(td::frexp(x[0])); }},
      {"put", {{{3, 4}}, {{3}}}, [](V x) { return td::put(x[0], on(x[0], td::tensor({1, 5, -1})), x[1]); }},
      {"put accumulate", {{{3, 4}}, {{3}}},
       [](V x) { return td::put(x[0], on(x[0], td::tensor({1, 5, 1})), x[1], true); }},
      {"cross_entropy", {{{4, 5}}},
       [](V x) {
         return td::nn::F::cross_entropy(x[0], on(x[0], td::tensor({1, 4, 0, 4})), Tensor(), -100, td::kMean, 0.1);
       }},
      {"mse_loss", {{{3, 4}}, {{3, 4}}}, [](V x) { return td::nn::F::mse_loss(x[0], x[1]); }},
      {"l1_loss", {away_from_zero({3, 4}), {{3, 4}}},  // x0 + 3 - x1 >= 1.1: away from the kink
       [](V x) { return td::nn::F::l1_loss(x[0] + 3, x[1], td::kSum); }},
      {"smooth_l1_loss of a target", {{{3, 4}, -2, 2, true, {-0.5, 0.5}}, {{3, 4}}},
       [](V x) { return td::nn::F::smooth_l1_loss(x[0], x[1] * 1e-3, td::kMean, 0.5); }},
      {"huber_loss of a target", {{{3, 4}, -2, 2, true, {-0.7, 0.7}}, {{3, 4}}},
       [](V x) { return td::nn::F::huber_loss(x[0], x[1] * 1e-3, td::kSum, 0.7); }},
      {"cross_entropy with a weight requiring grad", {{{4, 5}}, {{5}, 0.5, 2}},
       [](V x) {
         return td::nn::F::cross_entropy(x[0], on(x[0], td::tensor({1, -100, 0, 4})), x[1], -100, td::kMean, 0.2);
       }},
      {"cross_entropy of probabilities", {{{3, 4}}, {{3, 4}}, {{4}, 0.5, 2}},
       [](V x) { return td::nn::F::cross_entropy(x[0], x[1].softmax(1), x[2], -100, td::kMean, 0.2); }},
      {"nll_loss spatial", {{{2, 3, 2}}, {{3}, 0.5, 2}},
       [](V x) {
         return td::nn::F::nll_loss(x[0].log_softmax(1), on(x[0], td::tensor({{2, 0}, {1, -100}})), x[1]);
       }},
      {"binary_cross_entropy_with_logits", {{{3, 4}}, {{3, 4}, 0, 1}, {{4}, 0.5, 2}},
       [](V x) { return td::nn::F::binary_cross_entropy_with_logits(x[0], x[1], x[2]); }},
      {"binary_cross_entropy_with_logits none", {{{3, 4}}, {{3, 4}, 0, 1}},
       [](V x) { return td::nn::F::binary_cross_entropy_with_logits(x[0], x[1], Tensor(), Tensor(), td::kNone); }},
      {"batch_norm eval", {{{4, 3, 2}}, {{3}}, {{3}}},
       [](V x) {
         return td::nn::F::batch_norm(x[0], on(x[0], td::tensor({0.1, -0.2, 0.3}, td::kFloat64)),
                                      on(x[0], td::tensor({1.5, 0.7, 2.0}, td::kFloat64)), x[1], x[2], false);
       }},
      {"batch_norm [N, C] without affine", {{{5, 3}}},
       [](V x) { return td::nn::F::batch_norm(x[0], Tensor(), Tensor(), Tensor(), Tensor(), true); }},
      {"smooth_l1_loss", {{{3, 4}, -2, 2, true, {-0.5, 0.5}}},  // kinks of the second derivative at +-beta
       [](V x) { return td::nn::F::smooth_l1_loss(x[0], on(x[0], td::zeros({3, 4}, td::kFloat64)), td::kSum, 0.5); }},
      {"huber_loss", {{{3, 4}, -2, 2, true, {-0.7, 0.7}}},
       [](V x) { return td::nn::F::huber_loss(x[0], on(x[0], td::zeros({3, 4}, td::kFloat64)), td::kMean, 0.7); }},
      {"binary_cross_entropy", {{{3, 4}, 0.05, 0.95}, {{3, 4}, 0, 1}, {{4}, 0.5, 2}},
       [](V x) { return td::nn::F::binary_cross_entropy(x[0], x[1], x[2]); }},
      {"layer_norm", {{{3, 5}}, {{5}}, {{5}}}, [](V x) { return td::nn::F::layer_norm(x[0], {5}, x[1], x[2]); }},
      {"rms_norm", {{{3, 5}}, {{5}}}, [](V x) { return td::nn::F::rms_norm(x[0], {5}, x[1], 1e-3); }},
      {"pdist", {{{4, 3}, -2, 2, true, {}, true}},
       [](V x) { return td::nn::F::pdist(x[0]) + td::nn::F::pdist(x[0], 1.5); }},
      // in-place ops on non-leaves
      {"in-place chain", {{{3, 4}}, {{4}}}, [](V x) {
         Tensor y = x[0] * 1;
         y.mul_(x[1]).add_(x[1], 2).exp_();
         return y;
       }},
      {"in-place div_ and sigmoid_", {{{3, 4}}, away_from_zero({3, 4})}, [](V x) {
         Tensor y = x[0] + 0;
         y.div_(x[1]).sigmoid_();
         return y;
       }},
      {"in-place square through an alias", {{{3, 4}}}, [](V x) {
         Tensor y = x[0] * 2;
         y.mul_(y);
         return y;
       }},
      // in-place ops whose backward reads their input (kept before it was overwritten)
      {"abs_", {away_from_zero({3, 4})},
       [](V x) { return (x[0] * on(x[0], td::tensor({1.0, -1.0, 1.0, -1.0}, td::kFloat64))).abs_(); }},
      {"log_", {{{3, 4}, 0.2, 3}}, [](V x) { return (x[0] * 1).log_(); }},
      {"log1p_", {{{3, 4}, -0.5, 3}}, [](V x) { return (x[0] * 1).log1p_(); }},
      {"sin_ cos_", {{{3, 4}}}, [](V x) { return (x[0] * 1).sin_() + (x[0] * 2).cos_(); }},
      {"gelu_ silu_", {{{3, 4}}},
       [](V x) { return (x[0] * 1).gelu_() + (x[0] * 1).gelu_("tanh") + (x[0] * 1).silu_(); }},
      {"sqrt_ rsqrt_ reciprocal_", {{{3, 4}, 0.2, 3}}, [](V x) {
         return (x[0] * 1).sqrt_() + (x[0] * 1).rsqrt_() + (x[0] * 1).reciprocal_();
       }},
      {"neg_ tanh_", {{{3, 4}}}, [](V x) { return (x[0] * 1).neg_().tanh_(); }},
      // expm1_ reads its output, as exp_ does
      {"expm1_", {{{3, 4}}}, [](V x) { return (x[0] * 1).expm1_() * 2; }},
      {"relu_", {{{3, 4}, 0.1, 2, true, {1.05}}}, [](V x) { return (x[0] - 1.05).relu_(); }},
      {"clamp_", {{{4, 5}, -2, 2, true, {-1, 1}}}, [](V x) { return (x[0] * 1).clamp_(-1.0, 1.0); }},
      {"pow_ scalar", {{{3, 4}, 0.2, 2}}, [](V x) { return (x[0] * 1).pow_(2.5); }},
      {"pow_ tensor", {{{3, 4}, 0.3, 2}, {{4}}}, [](V x) { return (x[0] * 1).pow_(x[1]); }},
      {"sub_", {{{3, 4}}, {{4}}}, [](V x) { return (x[0] * 1).sub_(x[1], 0.5).sub_(2.0); }},
      {"masked_fill_", {{{3, 4}, -2, 2, true, {0.5}}},
       [](V x) { return (x[0] * 1).masked_fill_(x[0] > 0.5, 2.0) * x[0]; }},
      {"scatter_add_", {{{3, 4}}, {{3, 2}}}, [](V x) {
         return (x[0] * 1).scatter_add_(1, on(x[0], td::tensor({{0, 0}, {3, 1}, {2, 2}})), x[1] * x[1]);
       }},
      {"fill_ zero_ of a region", {{{4, 3}}}, [](V x) {
         Tensor y = x[0] * 1;
         y.select(0, 1).fill_(2.0);
         y.narrow(0, 3, 1).zero_();
         return y * x[0];
       }},
      {"copy_ into a whole tensor", {{{3, 4}}, {{4}}}, [](V x) {
         Tensor y = x[0] * 1;
         y.copy_(x[1] * x[1]);  // broadcast: y no longer depends on x[0]
         return y + x[0];
       }},
  };
  return all;
}

}  // namespace tandem::testing
