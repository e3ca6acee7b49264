// gradient (numerical derivatives, as numpy's and PyTorch's), renorm, and the small ops PyTorch has
// under other names: inner, equal, multiply, positive, adjoint, inverse and range. Values against
// PyTorch 2.15; errors naming the op; gradients by gradcheck (tests/autograd/gradcheck_cases.cc).
#include <cmath>
#include <limits>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

const Tensor& samples() {
  static const Tensor f = f64({1, 2, 4, 7, 11, 2, 3, 5, 9, 20}).view({2, 5});
  return f;
}

}  // namespace

TEST_CASE("gradient with even spacing: every dim, chosen dims, one spacing per dim, both edge orders", "[cpu]") {
  const Tensor& f = samples();
  std::vector<Tensor> g = td::gradient(f);
  REQUIRE(g.size() == 2);
  check_close(g[0], {1, 1, 1, 2, 9, 1, 1, 1, 2, 9}, 1e-15, 0, "along dim 0");
  check_close(g[1], {1, 1.5, 2.5, 3.5, 4, 1, 1.5, 3, 7.5, 11}, 1e-15, 0, "along dim 1");
  g = td::gradient(f, 2.0, std::vector<int64_t>{1});
  REQUIRE(g.size() == 1);
  check_close(g[0], {0.5, 0.75, 1.25, 1.75, 2, 0.5, 0.75, 1.5, 3.75, 5.5}, 1e-15, 0, "spacing 2");
  g = td::gradient(f, std::vector<double>{0.5, 2.0});
  check_close(g[0], {2, 2, 2, 4, 18, 2, 2, 2, 4, 18}, 1e-15, 0, "spacing 0.5 along dim 0");
  check_close(g[1], {0.5, 0.75, 1.25, 1.75, 2, 0.5, 0.75, 1.5, 3.75, 5.5}, 1e-15, 0, "spacing 2 along dim 1");
  g = td::gradient(f, 1.0, std::vector<int64_t>{1}, 2);
  check_close(g[0], {0.5, 1.5, 2.5, 3.5, 4.5, 0.5, 1.5, 3, 7.5, 14.5}, 1e-15, 0, "edge order 2");
  // A transposed view, spacing 3, second order.
  g = td::gradient(f.t(), 3.0, std::vector<int64_t>{0}, 2);
  check_close(g[0],
              {0.16666666666666666, 0.16666666666666666, 0.5, 0.5, 0.8333333333333334, 1.0, 1.1666666666666667, 2.5,
               1.5, 4.833333333333333},
              1e-15, 0, "a view");
  // Three dims, two of them in the order given.
  const Tensor cube = td::pow(td::arange(24, td::kFloat64).view({2, 3, 4}), 2);
  g = td::gradient(cube, 1.0, std::vector<int64_t>{2, 0});
  REQUIRE(g.size() == 2);
  check_close(g[0], {1, 2, 4, 5, 9, 10, 12, 13, 17, 18, 20, 21, 25, 26, 28, 29, 33, 34, 36, 37, 41, 42, 44, 45}, 1e-15, 0,
              "3-D along dim 2");
  CHECK(td::gradient(td::full({}, 3.0)).empty());
}

TEST_CASE("gradient at coordinates: uneven steps of second order inside, first or second at the ends", "[cpu]") {
  const Tensor& f = samples();
  const Tensor x = f64({0, 1, 1.5, 3.5, 4}), y = f64({0, 2});
  std::vector<Tensor> g = td::gradient(f, std::vector<Tensor>{y, x});
  check_close(g[0], {0.5, 0.5, 0.5, 1.0, 4.5, 0.5, 0.5, 0.5, 1.0, 4.5}, 1e-15, 0, "along dim 0");
  check_close(g[1], {1.0, 3.0, 3.5, 6.7, 8.0, 1.0, 3.0, 3.6, 18.0, 22.0}, 1e-14, 0, "along dim 1");
  g = td::gradient(f, std::vector<Tensor>{x}, std::vector<int64_t>{-1}, 2);
  check_close(g[0], {-1.0, 3.0, 3.5, 6.7, 9.3, -1.0, 3.0, 3.6, 18.0, 26.0}, 1e-14, 0, "edge order 2");
  // Integers give float32.
  g = td::gradient(td::tensor({1, 2, 4, 8}), std::vector<Tensor>{td::tensor({0, 1, 2, 4})});
  CHECK(g[0].dtype() == td::kFloat32);
  check_close(g[0], {1, 1.5, 2, 2}, 0, 0, "integers");
  // Integers past float32's exact range (timestamps): differences are taken before any rounding.
  const Tensor stamps = td::tensor({1700000000, 1700000001, 1700000003, 1700000004});
  g = td::gradient(td::tensor({0, 1, 4, 9}), std::vector<Tensor>{stamps});
  check_close(g[0], {1.0, 1.1666667461395264, 3.8333332538604736, 5.0}, 0, 0, "at timestamps (PyTorch's values)");
  check_close(td::gradient(stamps)[0], {1, 1.5, 1.5, 1}, 0, 0, "timestamps as samples");
  // PyTorch rounds the samples first there and gives -128 and 0 at the ends.
  check_close(td::gradient(stamps, 1.0, std::nullopt, 2)[0], {0.5, 1.5, 1.5, 0.5}, 0, 0, "second order at the ends");
}

TEST_CASE("gradient refuses short dims, other edge orders, mismatched spacing and repeated dims", "[cpu]") {
  const Tensor& f = samples();
  check_error([] { td::gradient(f64({1.0})); }, {"gradient", "edge_order + 1 = 2", "size 1"});
  check_error([] { td::gradient(f64({1.0, 2.0}), 1.0, std::nullopt, 2); }, {"gradient", "edge_order + 1 = 3"});
  check_error([&] { td::gradient(f, 1.0, std::nullopt, 3); }, {"gradient", "edge_order 1 and 2", "3"});
  check_error([&] { td::gradient(f, std::vector<double>{1, 2, 3}); }, {"gradient", "one spacing per dim (2)", "3"});
  check_error([&] { td::gradient(f, std::vector<Tensor>{f64({1, 2})}, std::vector<int64_t>{1}); },
              {"gradient", "1-D of size 5", "[2]"});
  check_error([&] { td::gradient(f, std::vector<Tensor>{td::full({}, 2.0)}, std::vector<int64_t>{1}); },
              {"gradient", "1-D of size 5", "[]"});
  check_error([&] { td::gradient(f, 1.0, std::vector<int64_t>{1, -1}); }, {"gradient", "dim 1", "more than once"});
  check_error([&] { td::gradient(f, 1.0, std::vector<int64_t>{2}); }, {"gradient", "dim"});
  check_error([] { td::gradient(Tensor()); }, {"gradient", "input"});
  check_error([] { td::gradient(td::tensor({1, 2, 3}).to(td::kUInt8)); }, {"gradient", "uint8", "not supported"});
  check_error([] { td::gradient(td::tensor({true, false, true})); }, {"gradient", "bool", "not supported"});
  check_error([] { td::gradient(td::full({}, 1.0), 1.0, std::vector<int64_t>{0}); }, {"gradient", "dim 0", "no dims"});
}

TEST_CASE("renorm scales the slices whose norm exceeds maxnorm, as PyTorch's", "[cpu]") {
  const Tensor w = f64({1, 2, 3, 4, 5, 6, 0.1, 0.1, 0.1}).view({3, 3});
  check_close(td::renorm(w, 2, 0, 5),
              {1, 2, 3, 2.2792115032187334, 2.8490143790234166, 3.4188172548281, 0.1, 0.1, 0.1}, 1e-15, 0, "p 2");
  check_close(td::renorm(w, 1, 1, 5),
              {0.9803921376393698, 1.4084506843880185, 1.6483516302378942, 3.9215685505574793, 3.521126710970046,
               3.2967032604757884, 0.09803921376393698, 0.07042253421940092, 0.05494505434126315},
              1e-15, 0, "p 1 along dim 1");
  check_close(td::renorm(w, kInf, 0, 4),
              {1.0, 2.0, 3.0, 2.666666622222223, 3.3333332777777787, 3.999999933333334, 0.1, 0.1, 0.1}, 1e-15, 0,
              "p inf");
  check_close(w.renorm(3, -1, 2),
              {0.4974200714089526, 0.7836251164365803, 0.9614983792042567, 1.9896802856358105, 1.9590627910914507,
               1.9229967584085135, 0.049742007140895265, 0.03918125582182902, 0.03204994597347523},
              1e-14, 0, "p 3, the method");
  // The gradient runs through the norm too (PyTorch's: 0.1258, 0.0148, -0.0962 in the scaled row).
  Tensor x = w.clone().requires_grad_();
  td::renorm(x, 2, 0, 5).sum().backward();
  check_close(x.grad().select(0, 1), {0.12580063997779214, 0.014800081021069368, -0.09620047793565335}, 1e-13, 0,
              "gradient");
  Tensor y = w.clone();
  y.renorm_(2, 0, 5);
  check_close(y, values(td::renorm(w, 2, 0, 5)), 0, 0, "in place");
  // 16-bit inputs: norms and factors in float32, rounded once (PyTorch's values; [1, 0.0297]'s norm
  // is 1.0004, above maxnorm 1, though 1.0 in float16).
  const Tensor h = td::tensor({1.0, 0.0297, 3, 4, 0.5, 0.5}, td::kFloat16).view({3, 2});
  check_close(td::renorm(h, 2, 0, 1), {0.99951171875, 0.0296783447265625, 0.599609375, 0.7998046875, 0.5, 0.5}, 0, 0,
              "float16");
  check_close(td::renorm(h.to(td::kBFloat16), 2, 0, 1), {1.0, 0.0296630859375, 0.6015625, 0.80078125, 0.5, 0.5}, 0, 0,
              "bfloat16");
  check_error([] { td::renorm(f64({1, 2}), 2, 0, 1); }, {"renorm", "at least 2 dims", "1"});
  check_error([&] { td::renorm(w, 0, 0, 1); }, {"renorm", "positive norm order", "0"});
  check_error([&] { td::renorm(w, 2, 0, -1); }, {"renorm", "maxnorm >= 0", "-1"});
  check_error([] { td::renorm(td::tensor({1, 2}).view({1, 2}), 2, 0, 1); }, {"renorm", "floating", "int64"});
  check_error([&] { td::renorm(w, 2, 2, 1); }, {"renorm", "dim"});
}

TEST_CASE("inner, equal, multiply, positive, adjoint, inverse and range as PyTorch's", "[cpu]") {
  const Tensor a = td::arange(6, td::kFloat64).view({2, 3}), b = td::arange(12, td::kFloat64).view({4, 3});
  const Tensor in = td::inner(a, b);
  REQUIRE(in.sizes() == td::Shape{2, 4});
  check_close(in, values(td::matmul(a, b.t())), 0, 0, "inner of matrices");
  check_close(td::inner(td::full({}, 2.0, td::kFloat64), td::arange(3, td::kFloat64)), {0, 2, 4}, 0, 0, "a number");
  check_error([] { td::inner(td::tensor({1, 2}), td::tensor({3.0, 4.0})); }, {"inner", "same dtype", "int64", "float32"});
  check_close(a.inner(a.select(0, 1)), {14, 50}, 0, 0, "the method");
  check_error([] { td::inner(td::ones({2, 3}), td::ones({3, 2})); }, {"inner", "last dims", "[2, 3]", "[3, 2]"});

  CHECK(td::equal(td::tensor({1, 2}), td::tensor({1, 2}).to(td::kInt32)));
  CHECK(td::equal(td::tensor({1.0, 2.0}), f64({1, 2})));
  CHECK_FALSE(td::equal(f64({1, std::nan("")}), f64({1, std::nan("")})));
  CHECK_FALSE(td::equal(td::tensor({1, 2}), td::tensor({1, 2}).view({1, 2})));
  CHECK(a.equal(a.clone()));
  CHECK(td::equal(td::empty({0, 2}), td::empty({0, 2})));

  check_close(td::multiply(a, 2), values(a * 2), 0, 0, "multiply");
  CHECK(td::positive(a).is_same(a));
  check_error([] { td::positive(td::tensor({true})); }, {"positive", "bool"});
  CHECK(td::adjoint(a).sizes() == td::Shape{3, 2});
  CHECK(a.adjoint().is_alias_of(a));
  check_error([] { td::adjoint(td::arange(3)); }, {"adjoint", "1-dim"});
  const Tensor number = td::full({}, 2.0);
  CHECK(td::adjoint(number).is_same(number));
  const Tensor m = f64({4, 7, 2, 6}).view({2, 2});
  check_close(td::matmul(m, m.inverse()), {1, 0, 0, 1}, 1e-15, 1e-15, "inverse");

  check_close(td::range(0, 1, 0.3), {0, 0.3, 0.6, 0.9}, 1e-7, 0, "range by 0.3");
  check_close(td::range(5, 1, -2), {5, 3, 1}, 0, 0, "range down");
  CHECK(td::range(1, 3).dtype() == td::kFloat32);
  CHECK(td::range(1, 4, 1, td::kInt64).dtype() == td::kInt64);
  check_close(td::range(1, 4), {1, 2, 3, 4}, 0, 0, "range with its end");
  check_close(td::range(0, 1, 0.1), {0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}, 1e-7, 0, "range by 0.1");
  // An integer dtype truncates the bounds and the step first, as PyTorch's.
  check_close(td::range(0, 3, 1.5, td::kInt64), {0, 1, 2, 3}, 0, 0, "integer range, step 1.5");
  check_close(td::range(-0.5, 2, 1, td::kInt64), {0, 1, 2}, 0, 0, "integer range from -0.5");
  check_error([] { td::range(0, 2, 0.5, td::kInt64); }, {"range", "nonzero"});
  check_error([] { td::range(1, 0); }, {"range", "step's sign"});
  check_error([] { td::range(1, 2, 0); }, {"range", "nonzero"});
}
