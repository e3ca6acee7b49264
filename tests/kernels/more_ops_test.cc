// frexp, put/put_, unravel_index, histogram, narrow_copy and PyTorch's other names (true_divide,
// trapz, row_stack, chain_matmul, vdot, ger): values, gradients and errors as PyTorch 2.15's.
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::check_values;
using td::testing::Snapshot;
using td::testing::values;
using Values = std::vector<double>;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const Values& v) { return td::tensor(v, td::kFloat64); }
Tensor i64(const std::vector<int64_t>& v) { return td::tensor(v); }

}  // namespace

TEST_CASE("frexp splits into a mantissa in [0.5, 1) and an int32 exponent, subnormals too, as PyTorch's", "[cpu]") {
  const Tensor x = f64({1.5, -0.0, 0.0, 8.0, -3.25, kInf, kNaN, 5e-324, 1e-310, 0.75, -kInf}).requires_grad_(true);
  auto [mantissa, exponent] = td::frexp(x);
  CHECK(exponent.dtype() == td::kInt32);
  check_values(mantissa, {0.75, -0.0, 0.0, 0.5, -0.8125, kInf, kNaN, 0.5, 0.5752618031559393, 0.75, -kInf}, 0);
  check_equal(exponent, {1, 0, 0, 4, 2, 0, 0, -1073, -1029, 0, 0});
  // The gradient is 2^-exponent with the power in float32, as PyTorch's (inf for the subnormals).
  REQUIRE(mantissa.grad_fn() != nullptr);
  CHECK(mantissa.grad_fn()->name() == "FrexpBackward0");
  td::autograd::backward({mantissa.sum()});
  check_equal(x.grad(), {0.5, 1, 1, 0.0625, 0.25, 1, 1, kInf, kInf, 1, 1});

  // Each dtype's own range: float32 and bfloat16 subnormals, float16's largest and smallest.
  struct Case {
    td::DType dtype;
    Values x, mantissa;
    std::vector<double> exponent;
  };
  const std::vector<Case> cases = {
      {td::kFloat32,
       {9.99994610111476e-41, 3.0000000054977558e+38, -2.5, 1.0, 0.9999998807907104},
       {0.5444488525390625, 0.8816207647323608, -0.625, 0.5, 0.9999998807907104},
       {-132, 128, 2, 1, 0}},
      {td::kFloat16,
       {5.960464477539063e-08, 65504.0, 0.0999755859375, -1024.0},
       {0.5, 0.99951171875, 0.7998046875, -0.5},
       {-23, 16, -3, 11}},
      {td::kBFloat16,
       {1.0101904577379033e-39, 3.00405527047391e+38, 0.30078125},
       {0.6875, 0.8828125, 0.6015625},
       {-129, 128, -1}},
  };
  for (const Case& c : cases) {
    INFO(c.dtype);
    const auto [m, e] = f64(c.x).to(c.dtype).frexp();
    CHECK(m.dtype() == c.dtype);
    check_equal(m, c.mantissa);
    check_equal(e, c.exponent);
  }
  // mantissa * 2^exponent is x again.
  const Tensor r = td::testing::random_tensor({40}, td::kFloat64, td::testing::Layout::Strided, -1e6, 1e6);
  const auto [m, e] = td::frexp(r);
  check_equal(td::ldexp(m, e.to(td::kFloat64)), values(r));

  const Tensor integers = i64({1, 2});
  check_error([&] { td::frexp(integers); }, {"frexp", "floating"});
}

TEST_CASE("put writes or accumulates at positions of the flattened tensor; put_ in place, gradients as PyTorch's",
          "[cpu]") {
  Tensor t = td::zeros({2, 3}, td::kFloat64);
  CHECK(&t.put_(i64({1, 4, -1}), f64({9, 8, 7})) == &t);
  check_equal(t, {0, 9, 0, 0, 8, 7});
  Tensor acc = td::ones({2, 3}, td::kFloat64);
  acc.put_(i64({1, 1, 5}), f64({9, 8, 7}), true);
  check_equal(acc, {1, 18, 1, 1, 1, 8});
  check_equal(td::put(td::zeros({3}, td::kFloat64), i64({0, 2}), f64({1, 2})), {1, 0, 2});
  // A non-contiguous tensor is written where its elements are (row-major order of its view).
  Tensor base = td::zeros({3, 2}, td::kFloat64);
  Tensor transposed = base.t();
  transposed.put_(i64({1, 3}), f64({5, 6}));
  check_equal(base, {0, 6, 5, 0, 0, 0});  // the view's positions 1 and 3 are base's (1, 0) and (0, 1)

  // Gradients: the overwritten positions pass none to x (all of them with accumulate); source gets its positions'.
  for (bool accumulate : {false, true}) {
    INFO("accumulate " << accumulate);
    const Tensor x = td::testing::random_tensor({3, 2}, td::kFloat64).requires_grad_(true);
    const Tensor source = f64({0.5, -1.5}).requires_grad_(true);
    const Tensor w = f64({1, 2, 3, 4, 5, 6}).view({3, 2});
    td::autograd::backward({(td::put(x, i64({1, 4}), source, accumulate) * w).sum()});
    check_equal(x.grad(), accumulate ? Values{1, 2, 3, 4, 5, 6} : Values{1, 0, 3, 4, 0, 6});
    check_equal(source.grad(), {2, 5});
  }
  // A position written twice (without accumulate) keeps the last value, and as in PyTorch every
  // source element still gets the gradient at its position: index_copy, index_put and put alike
  // (PyTorch 2.15: x.grad [10, 0, 0, 40], source.grad [20, 20, 30]).
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> writers = {
      {"index_copy", [](const Tensor& x, const Tensor& v) { return x.index_copy(0, i64({1, 1, 2}), v); }},
      {"index_put", [](const Tensor& x, const Tensor& v) { return td::index_put(x, {i64({1, 1, 2})}, v); }},
      {"put", [](const Tensor& x, const Tensor& v) { return td::put(x, i64({1, 1, 2}), v); }},
  };
  for (const auto& [name, write] : writers) {
    INFO(name);
    const Tensor x = td::zeros({4}, td::kFloat64).requires_grad_(true);
    const Tensor source = f64({1, 2, 3}).requires_grad_(true);
    const Tensor out = write(x, source);
    check_equal(out, {0, 2, 3, 0});
    td::autograd::backward({(out * f64({10, 20, 30, 40})).sum()});
    check_equal(x.grad(), {10, 0, 0, 40});
    check_equal(source.grad(), {20, 20, 30});
  }
  // In place on a non-leaf: the old values keep their gradient where nothing was written.
  const Tensor leaf = td::ones({4}, td::kFloat64).requires_grad_(true);
  Tensor y = leaf * 2;
  y.put_(i64({2}), f64({7}));
  td::autograd::backward({y.sum()});
  check_equal(leaf.grad(), {2, 2, 0, 2});
  for (bool accumulate : {false, true}) {
    td::autograd::GradcheckResult r = td::autograd::gradcheck(
        // Repeated positions only where they add: written twice, which write stays is unspecified.
        [accumulate](const std::vector<Tensor>& in) {
          return td::put(in[0], i64({3, 0, accumulate ? 3 : 1}), in[1], accumulate);
        },
        {td::testing::random_tensor({2, 2}, td::kFloat64).requires_grad_(true),
         td::testing::random_tensor({3}, td::kFloat64).requires_grad_(true)});
    INFO(r.report);
    CHECK(r.ok);
  }

  Tensor target = td::zeros({2, 3}, td::kFloat64);
  const Snapshot before(target);
  check_error([&] { target.put_(i64({6}), f64({1})); }, {"put", "index 6", "out of range"});
  check_error([&] { target.put_(i64({0, 1}), f64({1})); }, {"put", "2 elements", "1 elements"});
  check_error([&] { target.put_(f64({0}), f64({1})); }, {"put", "integer"});
  check_error([&] { target.put_(i64({0}), f64({1}).to(td::kFloat32)); }, {"put", "float32", "float64"});
  before.check_unchanged(target);
  Tensor leaf_target = td::zeros({2}, td::kFloat64).requires_grad_(true);
  check_error([&] { leaf_target.put_(i64({0}), f64({1})); }, {"put_", "leaf"});
}

TEST_CASE("unravel_index gives each flat index's coordinates, negative ones from the end", "[cpu]") {
  auto coords = td::unravel_index(i64({4, 1, 7}), {2, 4});
  REQUIRE(coords.size() == 2);
  check_equal(coords[0], {1, 0, 1});
  check_equal(coords[1], {0, 1, 3});
  CHECK(coords[0].dtype() == td::kInt64);
  coords = td::unravel_index(i64({-1, -8}), {2, 4});
  check_equal(coords[0], {1, 0});
  check_equal(coords[1], {3, 0});
  coords = td::unravel_index(td::tensor(std::vector<int64_t>{5}).view({}), {3, 2});
  CHECK(coords[0].dim() == 0);
  CHECK(coords[0].item<int64_t>() == 2);
  CHECK(coords[1].item<int64_t>() == 1);
  coords = td::unravel_index(i64({3, 5}).view({1, 2}), {2, 4});
  CHECK(coords[0].sizes() == td::Shape{1, 2});
  check_equal(coords[0], {0, 1});
  check_equal(coords[1], {3, 1});
  CHECK(td::unravel_index(i64({0}), {}).empty());
  CHECK(td::unravel_index(td::zeros({0}, td::kInt64), {0, 4})[1].numel() == 0);
  check_error([] { td::unravel_index(f64({1}), {2, 4}); }, {"unravel_index", "integer"});
  check_error([] { td::unravel_index(i64({0}), {2, -1}); }, {"unravel_index", "negative"});
  check_error([] { td::unravel_index(i64({8}), {2, 4}); }, {"unravel_index", "index 8", "out of range"});
  check_error([] { td::unravel_index(i64({1}), {0, 4}); }, {"unravel_index", "no elements"});
  check_error(
      [] {
        td::unravel_index(i64({1}), {int64_t{1} << 62, 8});
      },
      {"unravel_index", "more elements than int64"});
}

TEST_CASE("histogram counts or weighs elements in equal bins or between edges, as PyTorch's", "[cpu]") {
  const Tensor x = f64({1, 2, 1, 4, 2.5, 0});
  auto [hist, edges] = td::histogram(x, 4);
  check_equal(hist, {1, 2, 2, 1});
  check_equal(edges, {0, 1, 2, 3, 4});
  std::tie(hist, edges) = td::histogram(x, 4, std::pair{0.0, 3.0}, f64({1, 2, 3, 4, 5, 6}), true);
  check_close(hist, {6.0 / 12.75, 4.0 / 12.75, 2.0 / 12.75, 5.0 / 12.75}, 1e-15, 0);  // total 17, widths 0.75
  check_equal(edges, {0, 0.75, 1.5, 2.25, 3});
  std::tie(hist, edges) = td::histogram(x, f64({0, 1, 2.5, 10}));
  check_equal(hist, {1, 3, 2});
  std::tie(hist, edges) = td::histogram(f64({3, 3, 3}), 2);  // one value: widened by 0.5 each side
  check_equal(hist, {0, 3});
  check_equal(edges, {2.5, 3, 3.5});
  std::tie(hist, edges) = td::histogram(td::zeros({0}, td::kFloat32), 2);
  check_equal(hist, {0, 0});
  check_equal(edges, {0, 0.5, 1});
  std::tie(hist, edges) = td::histogram(f64({1, kNaN, 2, kInf}), 2, std::pair{0.0, 4.0});  // outside: left out
  check_equal(hist, {1, 1});
  std::tie(hist, edges) = td::histogram(f64({1, 2, 3, 4}).view({2, 2}).to(td::kFloat32), 2);
  CHECK(hist.dtype() == td::kFloat32);
  check_equal(hist, {2, 2});
  check_equal(edges, {1, 2.5, 4});

  // float32 edges as PyTorch computes them (a fused multiply-add from the nearer end): elements near
  // an edge fall in PyTorch's bins. PyTorch 2.15.
  std::tie(hist, edges) =
      td::histogram(f64({0.49999997, -0.10000001, 1.1000001, 2.9, -1.3}).to(td::kFloat32), 7, std::pair{-1.3, 2.9});
  check_equal(hist, {1, 0, 1, 1, 1, 0, 1});
  check_equal(edges, {-1.2999999523162842, -0.699999988079071, -0.10000002384185791, 0.4999999403953552,
                      1.1000001430511475, 1.7000001668930054, 2.3000001907348633, 2.9000000953674316});
  std::tie(hist, edges) = td::histogram(f64({0.1, 0.37, 0.9, 1.7}).to(td::kFloat32), 5);
  check_equal(hist, {2, 0, 1, 0, 1});
  check_equal(edges, {0.10000000149011612, 0.41999998688697815, 0.7400000095367432, 1.0600000619888306,
                      1.380000114440918, 1.7000000476837158});
  // density divides by the total, then by the widths, to PyTorch's last bit.
  std::tie(hist, edges) =
      td::histogram(f64({0.1, 0.5, 0.9, 1.3, 2.0}), 3, std::nullopt, f64({0.3, 1.7, 2.2, 0.9, 1.1}), true);
  check_equal(hist, {0.5093378607809849, 0.7894736842105264, 0.2801358234295417});
  // A weight of another shape but as many elements is taken, as PyTorch's.
  std::tie(hist, edges) = td::histogram(f64({1, 2, 3}), 3, std::nullopt, f64({1, 2, 3}).view({3, 1}));
  check_equal(hist, {1, 2, 3});

  check_error([&] { td::histogram(x, 0); }, {"histogram", "bins must be > 0"});
  check_error([&] { td::histogram(x.to(td::kBFloat16), 2); }, {"histogram", "float32 or float64", "bfloat16"});
  check_error([&] { td::histogram(x, f64({0, kNaN, 3})); }, {"histogram", "NaN"});
  check_error([&] { td::histogram(x, 2, std::pair{3.0, 1.0}); }, {"histogram", "min should not exceed max"});
  check_error([&] { td::histogram(f64({1, kNaN}), 2); }, {"histogram", "not finite"});
  check_error([&] { td::histogram(x, f64({3, 1})); }, {"histogram", "must not decrease"});
  check_error([&] { td::histogram(x, f64({1})); }, {"histogram", "two edges"});
  check_error([&] { td::histogram(i64({1, 2}), 2); }, {"histogram", "float32 or float64"});
  check_error([&] { td::histogram(x, 2, std::nullopt, f64({1, 2})); }, {"histogram", "weight"});
}

TEST_CASE("histogramdd counts or weighs rows in a grid of bins, as PyTorch's", "[cpu]") {
  // PyTorch 2.15's results on the same rows.
  const Tensor x = f64({0, 0, 1, 1, 0.5, 2, 1, 0.25, 2, 2}).view({5, 2});
  auto [hist, edges] = td::histogramdd(x, {2, 3});
  REQUIRE(hist.sizes() == td::Shape{2, 3});
  check_equal(hist, {1, 0, 1, 1, 1, 1});
  REQUIRE(edges.size() == 2);
  check_equal(edges[0], {0, 1, 2});
  check_close(edges[1], {0, 2.0 / 3, 4.0 / 3, 2}, 1e-15, 0);
  std::tie(hist, edges) = td::histogramdd(x, 2, std::vector<double>{0, 1, 0, 1});  // rows outside left out
  check_equal(hist, {1, 0, 1, 1});
  std::tie(hist, edges) = td::histogramdd(x, {f64({0, 1, 2}), f64({0, 0.5, 2})}, f64({1, 2, 3, 4, 5}), true);
  check_close(hist, {0.13333333333333333, 0.13333333333333333, 0.5333333333333333, 0.3111111111111111}, 1e-15, 0);
  std::tie(hist, edges) = td::histogramdd(td::ones({4, 2}, td::kFloat64), 2);  // one value: widened by 0.5
  check_equal(hist, {0, 0, 0, 4});
  check_equal(edges[1], {0.5, 1, 1.5});
  std::tie(hist, edges) = td::histogramdd(td::zeros({0, 3}, td::kFloat64), 2);  // no rows: [0, 1]
  REQUIRE(hist.sizes() == td::Shape{2, 2, 2});
  check_equal(hist, std::vector<double>(8, 0.0));
  check_equal(edges[2], {0, 0.5, 1});
  std::tie(hist, edges) = td::histogramdd(f64({kNaN, 0.5, 0.5, 0.5}).view({2, 2}), 2, std::vector<double>{0, 1, 0, 1});
  check_equal(hist, {0, 0, 0, 1});  // a NaN row is left out
  // Leading dimensions are rows too; float32 stays float32.
  std::tie(hist, edges) = td::histogramdd(x.view({5, 1, 2}).expand({5, 3, 2}).to(td::kFloat32), {2, 3});
  CHECK(hist.dtype() == td::kFloat32);
  check_equal(hist, {3, 0, 3, 3, 3, 3});

  // Weights with the rows' leading shape, density over equal bins: PyTorch 2.15's values on these rows.
  const Tensor grid = f64({0.1, 0.2, 0.9, 0.4, 0.5, 0.5, 0.3, 0.8, 0.7, 0.1, 0.6, 0.9}).view({2, 3, 2});
  std::tie(hist, edges) = td::histogramdd(grid, {2, 2}, std::nullopt, f64({1, 2, 3, 4, 5, 6}).view({2, 3}), true);
  check_close(hist, {0.29761904761904756, 1.1904761904761902, 2.083333333333333, 2.6785714285714284}, 1e-15, 0,
              "weighted density");
  // Rows of no coordinates: PyTorch's 0-dim 0 and no edges.
  std::tie(hist, edges) = td::histogramdd(td::zeros({3, 0}, td::kFloat64), std::vector<int64_t>{});
  CHECK(hist.dim() == 0);
  CHECK(hist.item<double>() == 0);
  CHECK(edges.empty());

  // Random rows in 3 dimensions against counting by hand, with edges given and weights.
  td::testing::reseed(712);
  const Tensor rows = td::testing::random_tensor({500, 3}, td::kFloat64, td::testing::Layout::Contiguous, -1.2, 1.2);
  const std::vector<Tensor> given = {f64({-1, -0.2, 0.3, 1}), f64({-1, 1}), f64({-0.5, 0, 0.25, 0.5, 1.1})};
  const Tensor w = td::testing::random_tensor({500}, td::kFloat64);
  std::tie(hist, edges) = td::histogramdd(rows, given, w);
  std::vector<double> want(3 * 1 * 4, 0.0);
  const std::vector<double> r = values(rows), wv = values(w);
  auto bin_of = [](const std::vector<double>& e, double v) -> int64_t {
    if (!(v >= e.front() && v <= e.back())) return -1;
    for (size_t i = 0; i + 1 < e.size(); ++i) {
      if (v < e[i + 1] || i + 2 == e.size()) return static_cast<int64_t>(i);
    }
    return -1;
  };
  for (size_t row = 0; row < 500; ++row) {
    const int64_t i = bin_of(values(given[0]), r[3 * row]), j = bin_of(values(given[1]), r[3 * row + 1]),
                  k = bin_of(values(given[2]), r[3 * row + 2]);
    if (i >= 0 && j >= 0 && k >= 0) want[static_cast<size_t>((i * 1 + j) * 4 + k)] += wv[row];
  }
  check_close(hist, want, 1e-13, 1e-13, "against counting by hand");
  // One dimension is histogram.
  const Tensor column = rows.narrow(1, 0, 1);
  check_equal(std::get<0>(td::histogramdd(column, 7)), values(std::get<0>(td::histogram(column, 7))));

  check_error([&] { td::histogramdd(x, {2, 2, 2}); }, {"histogramdd", "3 bin counts", "2 dimensions"});
  check_error([&] { td::histogramdd(x, 0); }, {"histogramdd", "bins must be > 0", "dimension 0"});
  check_error([&] { td::histogramdd(x, 2, std::vector<double>{0, 1}); }, {"histogramdd", "4 elements", "got 2"});
  check_error([&] { td::histogramdd(x, 2, std::vector<double>{1, 0, 0, 1}); },
              {"histogramdd", "min should not exceed max", "dimension 0"});
  check_error([&] { td::histogramdd(x, 2, std::nullopt, f64({1, 1, 1, 1})); }, {"histogramdd", "weight", "[5]", "[4]"});
  check_error([&] { td::histogramdd(f64({1, 2}), 2); }, {"histogramdd", "at least 2 dimensions", "[2]"});
  check_error(
      [&] {
        td::histogramdd(i64({1, 2, 3, 4}).view({2, 2}), 2);
      },
      {"histogramdd", "float32 or float64", "int64"});
  check_error(
      [&] {
        td::histogramdd(f64({kNaN, 1, 1, 1}).view({2, 2}), 2);
      },
      {"histogramdd", "dimension 0", "not finite"});
  check_error([&] { td::histogramdd(x, {f64({0, 1})}); }, {"histogramdd", "1 tensors of bin edges", "2 dimensions"});
  check_error(
      [&] {
        td::histogramdd(x, {f64({1, 0}), f64({0, 1})});
      },
      {"histogramdd", "dimension 0", "must not decrease"});
  check_error([&] { td::histogramdd(x, {f64({0, 1}), f64({0, kNaN})}); }, {"histogramdd", "dimension 1", "NaN"});
  check_error([&] { td::histogramdd(x, {f64({0, 1}), f64({0})}); }, {"histogramdd", "dimension 1", "two edges"});
}

TEST_CASE("narrow_copy and PyTorch's other names: true_divide, trapz, row_stack, chain_matmul, vdot, ger", "[cpu]") {
  const Tensor m = td::arange(6, td::kFloat64).view({2, 3});
  const Tensor part = td::narrow_copy(m, 1, 1, 2);
  check_equal(part, {1, 2, 4, 5});
  CHECK(part.is_contiguous());
  const Tensor rows = m.narrow_copy(0, 1, 1);  // contiguous already: still a copy
  Tensor(rows).fill_(-1);
  check_equal(m, {0, 1, 2, 3, 4, 5});

  check_equal(td::true_divide(i64({3, 4}), i64({2, 8})), {1.5, 0.5});
  check_equal(f64({3, 9}).true_divide(f64({2, 3})), {1.5, 3});
  check_equal(td::trapz(f64({1, 2, 3}), 0.5), values(td::trapezoid(f64({1, 2, 3}), 0.5)));
  check_equal(td::trapz(f64({1, 2, 3}), f64({0, 1, 3})), {6.5});
  check_equal(td::row_stack({f64({1, 2}), f64({3, 4})}), {1, 2, 3, 4});
  check_equal(td::vdot(f64({1, 2}), f64({3, 4})), {11});
  check_equal(td::ger(f64({1, 2}), f64({3, 4})), {3, 4, 6, 8});
  const Tensor a = td::testing::random_tensor({2, 3}, td::kFloat64),
               b = td::testing::random_tensor({3, 4}, td::kFloat64),
               c = td::testing::random_tensor({4, 2}, td::kFloat64);
  check_close(td::chain_matmul({a, b, c}), values(td::matmul(td::matmul(a, b), c)), 1e-14, 1e-14);
  check_equal(td::chain_matmul({a}), values(a));
  check_error([&] { td::chain_matmul({a, f64({1, 2, 3})}); }, {"chain_matmul", "2-D", "[3]"});
  check_error([] { td::chain_matmul({}); }, {"chain_matmul", "none"});
}

TEST_CASE("Tensor::unfold: sliding windows as a view, overlapping ones too; gradients add up", "[cpu]") {
  // PyTorch 2.15's values, shapes and strides.
  const Tensor x = td::arange(7.0, td::kFloat64);
  const Tensor w = x.unfold(0, 3, 2);
  REQUIRE(w.sizes() == td::Shape{3, 3});
  check_equal(w, {0, 1, 2, 2, 3, 4, 4, 5, 6});
  CHECK(w.is_alias_of(x));
  CHECK(x.unfold(0, 0, 1).sizes() == td::Shape{8, 0});
  CHECK(x.unfold(0, 7, 1).sizes() == td::Shape{1, 7});
  check_equal(x.unfold(-1, 2, 3), {0, 1, 3, 4});
  const Tensor scalar = td::full({}, 5.0, td::kFloat64);
  CHECK(scalar.unfold(0, 1, 1).sizes() == td::Shape{1});
  CHECK(scalar.unfold(0, 0, 1).sizes() == td::Shape{0});
  const Tensor m = td::arange(12.0, td::kFloat64).view({3, 4});
  const Tensor rows = m.unfold(1, 2, 1);
  REQUIRE(rows.sizes() == td::Shape{3, 3, 2});
  CHECK(rows.strides() == td::Shape{4, 1, 1});
  check_equal(rows.select(0, 1), {4, 5, 5, 6, 6, 7});
  // Of a transposed (non-contiguous) matrix: the windows follow its strides.
  check_equal(m.t().unfold(0, 2, 2).select(1, 1), {4, 5, 6, 7});
  // A write to the base shows through the windows.
  Tensor base = td::zeros({5}, td::kFloat64);
  const Tensor windows = base.unfold(0, 2, 1);
  base.fill_(3);
  check_equal(windows, std::vector<double>(8, 3.0));

  // The gradient: each element once per window holding it (PyTorch: UnfoldBackward0).
  const Tensor leaf = m.clone().requires_grad_();
  const Tensor y = leaf.unfold(1, 2, 1);
  CHECK(y.grad_fn()->name() == "UnfoldBackward0");
  y.sum().backward();
  check_equal(leaf.grad(), {1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1});
  // Windows with gaps between them leave the gaps' gradient 0.
  const Tensor apart = td::arange(7.0, td::kFloat64).requires_grad_();
  (apart.unfold(0, 2, 3) * 2).sum().backward();
  check_equal(apart.grad(), {2, 2, 0, 2, 2, 0, 0});

  check_error([&] { x.unfold(0, 8, 1); }, {"unfold", "maximum size", "dimension 0 is 7", "size is 8"});
  check_error([&] { x.unfold(0, 2, 0); }, {"unfold", "step is 0"});
  check_error([&] { x.unfold(0, -1, 1); }, {"unfold", "size is -1"});
  check_error([&] { x.unfold(1, 2, 1); }, {"unfold", "1"});
  check_error([&] { scalar.unfold(0, 2, 1); }, {"unfold", "maximum size", "is 1", "size is 2"});
}

TEST_CASE("The *_copy forms own their values; unsafe_chunk and unsafe_split are chunk and split", "[cpu]") {
  const Tensor m = td::arange(24.0, td::kFloat64).view({2, 3, 4});
  struct Copy {
    std::string name;
    Tensor copy, view;
  };
  const std::vector<Copy> copies = {
      {"alias_copy", td::alias_copy(m), m},
      {"diagonal_copy", td::diagonal_copy(m, 1, 1, 2), td::diagonal(m, 1, 1, 2)},
      {"expand_copy", td::expand_copy(m.narrow(0, 0, 1), {3, 3, 4}), m.narrow(0, 0, 1).expand({3, 3, 4})},
      {"permute_copy", td::permute_copy(m, {2, 0, 1}), m.permute({2, 0, 1})},
      {"select_copy", td::select_copy(m, 1, 2), m.select(1, 2)},
      {"slice_copy", td::slice_copy(m, 2, 1, 4, 2), td::slice(m, 2, 1, 4, 2)},
      {"squeeze_copy", td::squeeze_copy(m.narrow(1, 0, 1)), m.narrow(1, 0, 1).squeeze()},
      {"squeeze_copy dim", td::squeeze_copy(m.narrow(1, 0, 1), 1), m.narrow(1, 0, 1).squeeze(1)},
      {"t_copy", td::t_copy(m.select(0, 1)), m.select(0, 1).t()},
      {"transpose_copy", td::transpose_copy(m, 0, 2), m.transpose(0, 2)},
      {"unfold_copy", td::unfold_copy(m, 2, 3, 1), m.unfold(2, 3, 1)},
      {"unsqueeze_copy", td::unsqueeze_copy(m, 1), m.unsqueeze(1)},
      {"view_copy", td::view_copy(m, {6, 4}), m.view({6, 4})},
      {"as_strided_copy", td::as_strided_copy(m, {2, 2}, {1, 4}, 1), td::as_strided(m, {2, 2}, {1, 4}, 1)},
      {"detach_copy", td::detach_copy(m), m},
  };
  for (const Copy& c : copies) {
    INFO(c.name);
    REQUIRE(c.copy.sizes() == c.view.sizes());
    check_equal(c.copy, values(c.view));
    CHECK(c.copy.is_contiguous());
    CHECK_FALSE(c.copy.is_alias_of(m));
  }
  for (const auto& parts : {td::split_copy(m, 2, 2), td::split_with_sizes_copy(m, {1, 3}, 2), td::unbind_copy(m, 1)}) {
    for (const Tensor& part : parts) {
      CHECK(part.is_contiguous());
      CHECK_FALSE(part.is_alias_of(m));
    }
  }
  check_equal(td::split_with_sizes_copy(m, {1, 3}, 2)[1], values(m.narrow(2, 1, 3)));
  check_equal(td::unbind_copy(m, 1)[2], values(m.select(1, 2)));
  // Differentiable as the views (detach_copy is not).
  const Tensor leaf = m.clone().requires_grad_();
  (td::diagonal_copy(leaf, 0, 1, 2) * 3).sum().backward();
  CHECK(leaf.grad().sum().item<double>() == 18);
  CHECK_FALSE(td::detach_copy(leaf).requires_grad());
  // The unsafe_ forms split as the plain ones.
  const auto chunks = td::unsafe_chunk(m, 2, 2), splits = td::unsafe_split(m, 3, 2),
             sized = td::unsafe_split_with_sizes(m, {2, 2}, 2);
  REQUIRE(chunks.size() == 2);
  REQUIRE(splits.size() == 2);
  check_equal(chunks[1], values(m.narrow(2, 2, 2)));
  check_equal(splits[1], values(m.narrow(2, 3, 1)));
  check_equal(sized[0], values(m.narrow(2, 0, 2)));
}

TEST_CASE("angle, the complex forms on real tensors, and nonzero_static, as PyTorch's", "[cpu]") {
  const Tensor x = f64({-2, -0.0, 0, 3, kNaN, -kInf}).requires_grad_();
  const Tensor a = td::angle(x);
  check_values(a, {std::numbers::pi, 0, 0, 0, kNaN, std::numbers::pi}, 0, "angle");
  CHECK(a.grad_fn()->name() == "AngleBackward0");
  a.sum().backward();
  check_equal(x.grad(), {0, 0, 0, 0, 0, 0});
  const Tensor from_int = i64({-1, 0, 2}).angle();
  CHECK(from_int.dtype() == td::kFloat32);
  check_close(from_int, {std::numbers::pi, 0, 0}, 1e-7, 0);
  CHECK(td::angle(td::tensor({-1.0}, td::kFloat16)).dtype() == td::kFloat16);

  const Tensor r = f64({1, 2});
  CHECK(td::conj(r).data_ptr() == r.data_ptr());
  CHECK(r.conj().data_ptr() == r.data_ptr());
  CHECK(r.resolve_conj().data_ptr() == r.data_ptr());
  CHECK(td::real(r).data_ptr() == r.data_ptr());
  CHECK_FALSE(r.is_conj());
  CHECK_FALSE(r.is_complex());
  CHECK_FALSE(td::is_neg(r));

  const Tensor found = td::nonzero_static(i64({0, 3, 0, 4, 5}), 2);
  REQUIRE(found.sizes() == td::Shape{2, 1});
  check_equal(found, {1, 3});
  const Tensor padded = i64({0, 3, 1, 0}).view({2, 2}).nonzero_static(4, -7);
  REQUIRE(padded.sizes() == td::Shape{4, 2});
  check_equal(padded, {0, 1, 1, 0, -7, -7, -7, -7});
  CHECK(td::nonzero_static(i64({0, 0}), 0).sizes() == td::Shape{0, 1});
  check_error([] { td::nonzero_static(i64({1}), -1); }, {"nonzero_static", "size", "-1"});
  check_error([] { td::angle(Tensor()); }, {"angle"});
}
