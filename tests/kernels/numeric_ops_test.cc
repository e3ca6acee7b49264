// quantile and nanquantile, histc, cumulative_trapezoid, diag_embed, tril_/triu_, gcd, lcm,
// nextafter, ldexp, the signal windows and logspace: values (and gradients) against PyTorch 2.15.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::values;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const std::vector<double>& v, const Shape& shape) { return td::tensor(v, td::kFloat64).view(shape); }

}  // namespace

TEST_CASE("quantile and nanquantile as PyTorch's: every interpolation, NaN, shapes, gradients, errors", "[cpu]") {
  const Tensor x = f64({3, 1, 4, 1, 5, 9, 2, 6, kNaN, 3}, {2, 5});
  const Tensor numbers = x.index_select(1, td::tensor({0, 1, 2, 4}));
  const Tensor qs = f64({0.25, 0.625}, {2});
  struct Case {
    std::string interpolation;
    std::vector<double> quantile, nanquantile;
  };
  const std::vector<Case> cases{
      {"linear", {2.5, 2.75, 3.875, 5.625}, {1.0, 2.75, 3.5, 5.625}},
      {"lower", {1.0, 2.0, 3.0, 3.0}, {1.0, 2.0, 3.0, 3.0}},
      {"higher", {3.0, 3.0, 4.0, 6.0}, {1.0, 3.0, 4.0, 6.0}},
      {"midpoint", {2.0, 2.5, 3.5, 4.5}, {1.0, 2.5, 3.5, 4.5}},
      {"nearest", {3.0, 3.0, 4.0, 6.0}, {1.0, 3.0, 3.0, 6.0}},
  };
  for (const Case& c : cases) {
    const Tensor q = td::quantile(numbers, qs, 1, false, c.interpolation);
    CHECK(q.sizes() == Shape{2, 2});
    check_close(q, c.quantile, 1e-15, 0, c.interpolation + ": quantile");
    check_close(x.nanquantile(qs, 1, false, c.interpolation), c.nanquantile, 1e-15, 0,
                c.interpolation + ": nanquantile");
  }
  check_equal(td::quantile(x, 0.4, 1), {2.2, kNaN}, "a line with a NaN gives NaN");
  check_close(td::quantile(x.select(0, 0), 0.3), {1.4}, 1e-15, 0, "every element");
  check_close(td::nanquantile(x, 0.7), {4.6}, 1e-15, 0, "every number");
  check_equal(td::nanquantile(td::full({3}, kNaN, td::TensorOptions(td::kFloat64)), 0.5), {kNaN}, "only NaN");
  const Tensor three = x.narrow(1, 0, 3);
  CHECK(td::quantile(three, qs, std::nullopt, true).sizes() == Shape{2, 1, 1});
  CHECK(td::quantile(three, 0.3, 0, true).sizes() == Shape{1, 3});

  Tensor g = f64({3, 1, 4, 1.5, 5, 9, 2, 6, -1, 3}, {2, 5}).requires_grad_(true);
  (td::quantile(g, qs, 1) * f64({1, 2}, {2, 1})).sum().backward();
  check_close(g.grad(), {1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0}, 1e-15, 0, "gradient");

  check_error([&] { td::quantile(x, 1.5); }, {"quantile", "[0, 1]", "1.5"});
  check_error([&] { td::quantile(x, f64({0.5, -0.1}, {2})); }, {"quantile", "[0, 1]"});
  check_error([] { td::quantile(td::tensor({1, 2}), 0.5); }, {"quantile", "float or double", "int64"});
  check_error([] { td::quantile(td::zeros({0}, td::kFloat64), 0.5); }, {"quantile", "non-empty"});
  check_error([&] { td::nanquantile(x, 0.5, 1, false, "cubic"); }, {"nanquantile", "interpolation", "cubic"});
  check_error([&] { td::quantile(x, qs.to(td::kFloat32)); }, {"quantile", "same dtype"});
}

TEST_CASE("histc, cumulative_trapezoid and diag_embed as PyTorch's", "[cpu]") {
  const Tensor y = f64({1, 2.5, -1, 4, 0.5, 3}, {6});
  check_close(td::histc(y, 4), {1.0, 2.0, 1.0, 2.0}, 0, 0, "histc over the data's range");
  check_close(y.histc(3, 0, 3), {1.0, 1.0, 2.0}, 0, 0, "histc over [0, 3]");
  CHECK(td::histc(y.to(td::kFloat32), 4).dtype() == td::kFloat32);
  check_error([&] { td::histc(y, 0); }, {"histc", "bins"});
  check_error([&] { td::histc(y, 4, 3, 1); }, {"histc", "max must be larger than min"});
  check_error([] { td::histc(td::tensor({1, 2}), 4); }, {"histc", "floating"});

  check_close(td::cumulative_trapezoid(y.view({2, 3})), {1.75, 2.5, 2.25, 4.0}, 1e-15, 0, "cumulative_trapezoid");
  check_close(td::cumulative_trapezoid(y.view({2, 3}), 0.5, 0), {1.25, 0.75, 0.5}, 1e-15, 0, "along dim 0 with dx");
  check_close(td::cumulative_trapezoid(y, f64({0, 1, 3, 4, 7, 8}, {6})), {1.75, 3.25, 4.75, 11.5, 13.25}, 1e-15, 0,
              "with x");
  CHECK(td::cumulative_trapezoid(y.narrow(0, 0, 1)).sizes() == Shape{0});
  Tensor w = y.clone().requires_grad_(true);
  td::cumulative_trapezoid(w).sum().backward();
  check_close(w.grad(), {2.5, 4.5, 3.5, 2.5, 1.5, 0.5}, 1e-15, 0, "cumulative_trapezoid's gradient");

  check_close(td::diag_embed(f64({1, 2, 3, 4}, {2, 2})), {1.0, 0.0, 0.0, 2.0, 3.0, 0.0, 0.0, 4.0}, 0, 0, "diag_embed");
  CHECK(td::ones({2, 3}).diag_embed(1, 0, 2).sizes() == Shape{4, 2, 4});
  check_close(td::diag_embed(f64({1, 2}, {2}), -1), {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0}, 0, 0,
              "below the diagonal");
  Tensor e = f64({1, 2}, {2}).requires_grad_(true);
  (td::diag_embed(e) * f64({1, 2, 3, 4}, {2, 2})).sum().backward();
  check_close(e.grad(), {1.0, 4.0}, 0, 0, "diag_embed's gradient");
  check_error([] { td::diag_embed(td::ones({2}), 0, 0, 0); }, {"diag_embed", "identical"});

  Tensor t = td::arange(12.0).view({3, 4});
  t.tril_(1);
  check_close(t, {0.0, 1.0, 0.0, 0.0, 4.0, 5.0, 6.0, 0.0, 8.0, 9.0, 10.0, 11.0}, 0, 0, "tril_");
  Tensor u = td::arange(12.0).view({3, 4});
  u.triu_(-1);
  check_close(u, {0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0.0, 9.0, 10.0, 11.0}, 0, 0, "triu_");
}

TEST_CASE("gcd, lcm, nextafter and ldexp as PyTorch's", "[cpu]") {
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  const Tensor a = td::tensor(std::vector<int64_t>{12, -18, 0, 7, lowest, 0});
  const Tensor b = td::tensor(std::vector<int64_t>{18, 12, 5, 0, 6, 0});
  // gcd(lowest, 6) is 2 (PyTorch's -2 comes from |lowest| overflowing).
  check_equal(td::gcd(a, b), {6, 6, 5, 7, 2, 0}, "gcd");
  check_equal(td::lcm(td::tensor({4, -6, 0, 7}), td::tensor({6, 4, 5, 3})), {12, 12, 0, 21}, "lcm");
  check_equal(td::gcd(td::tensor({12}).to(td::kInt32), td::tensor({8}).to(td::kInt32)), {4}, "int32");
  check_equal(td::gcd(td::tensor({200}).to(td::kUInt8), td::tensor({150}).to(td::kUInt8)), {50}, "uint8");
  Tensor in_place = td::tensor({12, 9});
  in_place.gcd_(td::tensor({8, 6}));
  check_equal(in_place, {4, 3}, "gcd_");
  check_error([] { td::gcd(td::ones({2}), td::ones({2})); }, {"gcd", "integer", "float32"});
  check_error([] { td::lcm(td::tensor({true}), td::tensor({true})); }, {"lcm", "integer", "bool"});

  check_equal(td::nextafter(f64({1, 0, -1, std::numeric_limits<double>::infinity()}, {4}), f64({2, -1, 0, 0}, {4})),
             {1.0000000000000002, -5e-324, -0.9999999999999999, 1.7976931348623157e+308}, "nextafter");
  check_equal(td::nextafter(td::tensor({1.0f, 0.0f}), td::tensor({2.0f, 1.0f})),
             {1.0000001192092896, 1.401298464324817e-45}, "nextafter in float32");
  check_error([] { td::nextafter(td::ones({1}, td::kFloat16), td::ones({1}, td::kFloat16)); },
              {"nextafter", "float16"});
  Tensor n = td::ones({2}, td::kFloat64).requires_grad_(true);
  check_error([&] { td::nextafter(n, td::zeros({2}, td::kFloat64)).sum().backward(); },
              {"nextafter", "not differentiable"});

  check_close(td::ldexp(f64({1.5, -3, 0.25}, {3}), td::tensor({2, -1, 10})), {6.0, -1.5, 256.0}, 0, 0, "ldexp");
  CHECK(td::ldexp(td::tensor({3}), td::tensor({2})).dtype() == td::kFloat32);
  Tensor m = f64({1.5, -3}, {2}).requires_grad_(true);
  m.ldexp(td::tensor({2, -1})).sum().backward();
  check_close(m.grad(), {4.0, 0.5}, 0, 0, "ldexp's gradient");
}

TEST_CASE("the signal windows and logspace as PyTorch's", "[cpu]") {
  const td::TensorOptions f64_options(td::kFloat64);
  struct Case {
    std::string name;
    std::function<Tensor(int64_t, bool)> make;
    std::vector<double> periodic7, symmetric6;
  };
  const std::vector<Case> cases{
      {"hann",
       [&](int64_t n, bool p) { return td::hann_window(n, p, f64_options); },
       {0.0, 0.1882550990706332, 0.6112604669781572, 0.9504844339512095, 0.9504844339512095, 0.6112604669781573,
        0.1882550990706333},
       {0.0, 0.3454915028125263, 0.9045084971874737, 0.9045084971874737, 0.3454915028125264, 0.0}},
      {"hamming",
       [&](int64_t n, bool p) { return td::hamming_window(n, p, 0.54, 0.46, f64_options); },
       {0.08000000000000002, 0.25319469114498255, 0.6423596296199047, 0.9544456792351128, 0.9544456792351128,
        0.6423596296199048, 0.25319469114498266},
       {0.08000000000000002, 0.3978521825875242, 0.9121478174124757, 0.912147817412476, 0.3978521825875243,
        0.08000000000000002}},
      {"blackman",
       [&](int64_t n, bool p) { return td::blackman_window(n, p, f64_options); },
       {0.0, 0.09045342435412806, 0.4591829575459636, 0.9203636180999082, 0.9203636180999082, 0.4591829575459638,
        0.09045342435412812},
       {0.0, 0.20077014326253045, 0.8492298567374694, 0.8492298567374696, 0.20077014326253056, 0.0}},
      {"bartlett",
       [&](int64_t n, bool p) { return td::bartlett_window(n, p, f64_options); },
       {0.0, 0.2857142857142857, 0.5714285714285714, 0.8571428571428571, 0.8571428571428572, 0.5714285714285716,
        0.2857142857142858},
       {0.0, 0.4, 0.8, 0.7999999999999998, 0.3999999999999999, 0.0}},
      {"kaiser",
       [&](int64_t n, bool p) { return td::kaiser_window(n, p, 12.0, f64_options); },
       {5.2773441320097665e-05, 0.03276828844175176, 0.33089863665707414, 0.8888676640466582, 0.8888676640466582,
        0.33089863665707414, 0.03276828844175176},
       {5.2773441320097665e-05, 0.10171968770956323, 0.7929398341014605, 0.7929398341014605, 0.10171968770956323,
        5.2773441320097665e-05}},
  };
  for (const Case& c : cases) {
    check_close(c.make(7, true), c.periodic7, 1e-14, 1e-15, c.name + " periodic");
    check_close(c.make(6, false), c.symmetric6, 1e-14, 1e-15, c.name + " symmetric");
    check_close(c.make(1, true), {1.0}, 0, 0, c.name + " of one point");
    CHECK(c.make(0, true).sizes() == Shape{0});
  }
  CHECK(td::hann_window(5).dtype() == td::kFloat32);
  check_close(td::hann_window(7),
              {0.0, 0.1882550990706332, 0.6112604669781572, 0.9504844339512095, 0.9504844339512095, 0.6112604669781573,
               0.1882550990706333},
              1e-6, 1e-7, "hann in float32");
  check_error([] { td::hann_window(-1); }, {"hann_window", "non-negative"});
  check_error([] { td::kaiser_window(4, true, 1.0, td::kInt64); }, {"kaiser_window", "floating"});

  check_close(td::logspace(-2, 3, 6, 10.0, f64_options), {0.01, 0.1, 1.0, 10.0, 100.0, 1000.0}, 1e-15, 0, "logspace");
  check_close(td::logspace(0, 1, 5, 2.0, f64_options),
              {1.0, 1.189207115002721, 1.4142135623730951, 1.681792830507429, 2.0}, 1e-15, 0, "logspace in base 2");
  CHECK(td::logspace(0, 1, 3).dtype() == td::kFloat32);
}
