// sort, argsort, msort, topk, kthvalue, median and nanmedian: values and indices against PyTorch
// 2.15 (NaN, infinities, signed zeros, ties), stability against std::stable_sort on long random
// rows, every dtype and layout, gradients, and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Layout;
using td::testing::check_values;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Equal element for element, NaN to NaN, zeros with their signs.
void check_same(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  check_values(got, want, 0, what);
}

std::vector<double> as_doubles(std::vector<int64_t> v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("sort orders NaN above every number, keeps ties and signed zeros in order, as PyTorch's stable sort",
          "[cpu]") {
  const Tensor x = td::tensor({3.0, kNaN, -1.0, 3.0,  -0.0, 0.0,  kInf, -kInf, 2.0,   kNaN,
                               1.0, 1.0,  1.0,  -2.0, 5.0,  kNaN, 0.5,  0.5,   -kInf, 7.0},
                              td::kFloat64)
                       .view({2, 10});
  auto [up, up_at] = td::sort(x, 1);
  check_same(up, {-kInf, -1.0, -0.0, 0.0, 2.0, 3.0, 3.0, kInf, kNaN, kNaN,
                  -kInf, -2.0, 0.5,  0.5, 1.0, 1.0, 1.0, 5.0,  7.0,  kNaN},
             "ascending");
  CHECK(values(up_at) == as_doubles({7, 2, 4, 5, 8, 0, 3, 6, 1, 9, 8, 3, 6, 7, 0, 1, 2, 4, 9, 5}));
  CHECK(up_at.dtype() == td::kInt64);
  auto [down, down_at] = x.sort(-1, true);
  check_same(down, {kNaN, kNaN, kInf, 3.0, 3.0, 2.0, -0.0, 0.0, -1.0, -kInf,
                    kNaN, 7.0,  5.0,  1.0, 1.0, 1.0, 0.5,  0.5, -2.0, -kInf},
             "descending");
  CHECK(values(down_at) == as_doubles({1, 9, 6, 0, 3, 8, 4, 5, 2, 7, 5, 9, 4, 0, 1, 2, 6, 7, 3, 8}));
  auto [cols, cols_at] = td::sort(x, 0);
  check_same(cols, {1.0, 1.0,  -1.0, -2.0, -0.0, 0.0,  0.5,  -kInf, -kInf, 7.0,
                    3.0, kNaN, 1.0,  3.0,  5.0,  kNaN, kInf, 0.5,   2.0,   kNaN},
             "along dim 0");
  CHECK(values(cols_at) == as_doubles({1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0}));
  CHECK(values(td::argsort(x, 0)) == values(cols_at));
  check_same(td::msort(x), values(cols), "msort");
  // The same in float32, float16 and bfloat16 (every value here is exact in each).
  for (td::DType dtype : {td::kFloat32, td::kFloat16, td::kBFloat16}) {
    auto [v, i] = td::sort(x.to(dtype), 1, true);
    CHECK(v.dtype() == dtype);
    check_same(v, values(down), td::dtype_name(dtype));
    CHECK(values(i) == values(down_at));
  }

  auto [iv, ii] = td::sort(td::tensor({5, -3, 5, 0, -3, 2}), 0, true);
  CHECK(values(iv) == std::vector<double>{5, 5, 2, 0, -3, -3});
  CHECK(values(ii) == as_doubles({0, 2, 5, 3, 1, 4}));
  CHECK(iv.dtype() == td::kInt64);
  auto [bv, bi] = td::sort(td::tensor({true, false, true, false}));
  CHECK(values(bv) == std::vector<double>{0, 0, 1, 1});
  CHECK(values(bi) == as_doubles({1, 3, 0, 2}));
  CHECK(values(std::get<0>(td::sort(td::tensor({200, 7, 255}).to(td::kUInt8)))) == std::vector<double>{7, 200, 255});
}

TEST_CASE("sort of long random rows with many ties equals std::stable_sort in every layout and dtype", "[cpu]") {
  td::testing::reseed(70);
  for (td::DType dtype :
       {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16, td::kInt64, td::kInt32, td::kUInt8}) {
    for (Layout layout : td::testing::all_layouts()) {
      for (td::Shape shape : {td::Shape{1}, td::Shape{7}, td::Shape{5, 33}, td::Shape{3, 1000}, td::Shape{2, 0},
                              td::Shape{4, 1}, td::Shape{}}) {
        // Whole numbers in [0, 20]: ties everywhere.
        const Tensor x = td::round(td::testing::random_tensor(shape, td::kFloat64, layout, 0, 20)).to(dtype);
        for (bool descending : {false, true}) {
          auto [v, i] = td::sort(x, -1, descending);
          REQUIRE(v.sizes() == x.sizes());
          REQUIRE(i.sizes() == x.sizes());
          const int64_t n = x.dim() == 0 ? 1 : x.size(-1);
          const int64_t rows = n == 0 ? 0 : x.numel() / n;
          const std::vector<double> xs = values(x.contiguous()), vs = values(v), is = values(i);
          std::vector<double> want_v, want_i;
          for (int64_t r = 0; r < rows; ++r) {
            std::vector<int64_t> order(static_cast<size_t>(n));
            std::iota(order.begin(), order.end(), int64_t{0});
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
              return descending ? xs[r * n + a] > xs[r * n + b] : xs[r * n + a] < xs[r * n + b];
            });
            for (int64_t k : order) {
              want_v.push_back(xs[r * n + k]);
              want_i.push_back(static_cast<double>(k));
            }
          }
          INFO(td::dtype_name(dtype) << " " << td::testing::layout_name(layout) << " " << td::shape_str(shape)
                                     << (descending ? " descending" : " ascending"));
          CHECK(vs == want_v);
          CHECK(is == want_i);
        }
      }
    }
  }
}

TEST_CASE("topk, kthvalue, median and nanmedian as PyTorch's", "[cpu]") {
  const Tensor y = td::tensor({4., 1., 3., 9., 7., 2., 8., 6., 0., 5.}, td::kFloat64).view({2, 5});
  auto [tv, ti] = td::topk(y, 3, 1);
  CHECK(values(tv) == std::vector<double>{9, 7, 4, 8, 6, 5});
  CHECK(values(ti) == as_doubles({3, 4, 0, 1, 2, 4}));
  auto [sv, si] = y.topk(2, 0, false);
  CHECK(values(sv) == std::vector<double>{2, 1, 3, 0, 5, 4, 8, 6, 9, 7});
  CHECK(values(si) == as_doubles({1, 0, 0, 1, 1, 0, 1, 1, 0, 0}));
  CHECK(std::get<0>(td::topk(y, 0, 1)).sizes() == td::Shape{2, 0});
  auto [kv, ki] = td::kthvalue(y, 2, 1);
  CHECK(values(kv) == std::vector<double>{3, 2});
  CHECK(values(ki) == as_doubles({2, 0}));
  CHECK(std::get<0>(y.kthvalue(2, 1, true)).sizes() == td::Shape{2, 1});
  auto [mv, mi] = td::median(y, 1);
  CHECK(values(mv) == std::vector<double>{4, 5});
  CHECK(values(mi) == as_doubles({0, 4}));
  CHECK(td::median(y).item<double>() == 4);

  const Tensor z =
      td::tensor({1.0, kNaN, 3.0, 2.0, kNaN, kNaN, kNaN, kNaN, 4.0, 1.0, kNaN, 2.0}, td::kFloat64).view({3, 4});
  auto [zv, zi] = z.median(1);
  check_same(zv, {kNaN, kNaN, kNaN}, "median of lines with NaN");
  CHECK(values(zi) == as_doubles({1, 0, 2}));  // the first NaN of each line
  auto [nv, ni] = z.nanmedian(1);
  check_same(nv, {2.0, kNaN, 2.0}, "nanmedian");
  // A line of NaNs only gives its first NaN's index here (PyTorch's is another of its NaNs').
  CHECK(values(ni) == as_doubles({3, 0, 3}));
  CHECK(td::nanmedian(z).item<double>() == 2);
  CHECK(std::isnan(z.median().item<double>()));
  CHECK(values(std::get<0>(td::median(td::tensor({7, 1, 4, 2}), 0))) == std::vector<double>{2});
  CHECK(std::isnan(td::median(td::zeros({0})).item<double>()));  // no elements: NaN, as PyTorch's
  CHECK(std::isnan(td::zeros({2, 0}).nanmedian().item<double>()));
  // 0-dim inputs: the value itself at index 0.
  auto [ov, oi] = td::sort(td::full({}, 2.5));
  CHECK(ov.item<double>() == 2.5);
  CHECK(oi.item<int64_t>() == 0);
  CHECK(std::get<1>(td::topk(td::full({}, 2.5), 1)).item<int64_t>() == 0);
}

TEST_CASE("gradients of sorted values reach the positions they came from, as PyTorch's", "[cpu]") {
  const Tensor y = td::tensor({4., 1., 3., 9., 7., 2., 8., 6., 0., 5.}, td::kFloat64).view({2, 5});
  Tensor g = y.clone().requires_grad_();
  (std::get<0>(td::topk(g, 3, 1)) * td::tensor({1.0, 2.0, 3.0}, td::kFloat64)).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{3, 0, 0, 1, 2, 0, 1, 2, 0, 3});
  g = y.clone().requires_grad_();
  (std::get<0>(td::sort(g, 0, true)) * td::arange(10.0).to(td::kFloat64).view({2, 5})).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{0, 6, 7, 3, 4, 5, 1, 2, 8, 9});
  g = y.clone().requires_grad_();
  (std::get<0>(td::median(g, 1, true)) * td::tensor({2.0, 3.0}, td::kFloat64).view({2, 1})).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{2, 0, 0, 0, 0, 0, 0, 0, 0, 3});
  g = y.clone().requires_grad_();
  std::get<0>(td::kthvalue(g, 4, 1)).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{0, 0, 0, 0, 1, 0, 0, 1, 0, 0});
}

TEST_CASE("sorting refuses what PyTorch refuses and leaves its input as it was", "[cpu]") {
  const Tensor x = td::arange(6.0).view({2, 3});
  td::testing::Snapshot before(x);
  check_error([&] { td::topk(x, 4, 1); }, {"topk", "k (4)", "[0, 3]", "[2, 3]"});
  check_error([&] { td::topk(x, -1); }, {"topk", "k (-1)"});
  check_error([&] { td::kthvalue(x, 0, 1); }, {"kthvalue", "k (0)", "[1, 3]"});
  check_error([&] { td::sort(x, 2); }, {"sort", "dim"});
  check_error([&] { td::median(td::zeros({2, 0}), 1); }, {"median", "empty"});
  check_error([&] { td::median(td::zeros({0}, td::kInt64)); }, {"median", "int64", "no elements"});
  check_error([&] { td::sort(Tensor()); }, {"sort", "input"});
  before.check_unchanged(x);
}

TEST_CASE("cummax, cummin and logcumsumexp as PyTorch's: ties, NaN, extreme values, gradients", "[cpu]") {
  const Tensor x =
      td::tensor({1.0, 3.0, 2.0, 3.0, kNaN, 5.0, kNaN, 0.0, 2.0, 2.0, -1.0, 4.0, 4.0, 1.0, 0.0, 9.0}, td::kFloat64)
          .view({2, 8});
  auto [mv, mi] = td::cummax(x, 1);
  check_same(mv, {1, 3, 3, 3, kNaN, kNaN, kNaN, kNaN, 2, 2, 2, 4, 4, 4, 4, 9}, "cummax");
  CHECK(values(mi) == as_doubles({0, 1, 1, 3, 4, 4, 6, 6, 0, 1, 1, 3, 4, 4, 4, 7}));
  auto [nv, ni] = x.cummin(1);
  check_same(nv, {1, 1, 1, 1, kNaN, kNaN, kNaN, kNaN, 2, 2, -1, -1, -1, -1, -1, -1}, "cummin");
  CHECK(values(ni) == as_doubles({0, 0, 0, 0, 4, 4, 6, 6, 0, 1, 2, 2, 2, 2, 2, 2}));
  auto [iv, ii] = td::cummax(td::tensor({1, 5, 3, 2, 3, 7}).view({3, 2}), 0);
  CHECK(values(iv) == std::vector<double>{1, 5, 3, 5, 3, 7});
  CHECK(values(ii) == as_doubles({0, 0, 1, 0, 2, 2}));
  // Far apart values: no overflow and no underflow to -inf.
  const Tensor y = td::tensor({0.5, -1.0, 1000.0, 2.0, -1000.0, -1001.0, 3.0, 0.0}, td::kFloat64).view({2, 4});
  check_close(td::logcumsumexp(y, 1),
              {0.5, 0.7014132779827524, 1000.0, 1000.0, -1000.0, -999.6867383124818, 3.0, 3.048587351573742}, 1e-15, 0,
              "logcumsumexp");
  Tensor g = y.clone().requires_grad_();
  (td::logcumsumexp(g, 1) * td::tensor({1.0, -2.0, 0.5, 3.0, 2.0, 1.0, -1.0, 0.25}, td::kFloat64).view({2, 4}))
      .sum()
      .backward();
  check_close(g.grad(),
              {-0.6351489523872873, -0.3648510476127127, 3.5000000000001243, 0.0, 2.731058578629925, 0.2689414213699995,
               -0.7618564682943918, 0.011856468294391694},
              1e-12, 1e-15, "logcumsumexp's gradient");
  Tensor m = td::nan_to_num(x).requires_grad_();
  (std::get<0>(td::cummax(m, 1)) * td::arange(16.0).to(td::kFloat64).view({2, 8})).sum().backward();
  CHECK(values(m.grad()) == std::vector<double>{0, 3, 0, 7, 0, 18, 0, 0, 8, 19, 0, 11, 39, 0, 0, 15});
  check_error([] { td::logcumsumexp(td::tensor({1, 2}), 0); }, {"logcumsumexp", "floating", "int64"});
  check_error([&] { td::cummax(x, 2); }, {"cummax", "dim"});
}
