// Rearranging, joining and indexing composed of views, cat and the index ops: roll, repeat, tile,
// repeat_interleave, movedim, rot90, diagonal, diag, trace, diff, the stacks, meshgrid, nonzero,
// masked_select, index_add/copy/fill, take, take_along_dim, bincount, searchsorted, unique; the
// matmul-like products; nansum/nanmean and the paired reductions; randperm and multinomial. Values
// and gradients against PyTorch 2.15.
#include <algorithm>
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Values and shape, exactly.
void check_is(const Tensor& t, const std::vector<double>& want, const td::Shape& shape, const std::string& what) {
  INFO(what);
  CHECK(t.sizes() == shape);
  CHECK(values(t) == want);
}

Tensor grid() { return td::arange(12.0).to(td::kFloat64).view({3, 4}); }

}  // namespace

TEST_CASE("roll, repeat, tile, repeat_interleave, movedim, rot90 and the flips as PyTorch's", "[cpu]") {
  const Tensor x = grid();
  check_is(td::roll(x, 1, 1), {3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10}, {3, 4}, "roll");
  check_is(x.roll({-1, 2}, {0, 1}), {6, 7, 4, 5, 10, 11, 8, 9, 2, 3, 0, 1}, {3, 4}, "roll two dims");
  check_is(td::roll(x, 5), {7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6}, {3, 4}, "roll flattened");
  check_is(td::roll(x, 4, 1), values(x), {3, 4}, "a whole turn");
  check_is(td::tensor({1, 2, 3}).repeat({2, 2}), {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}, {2, 6}, "repeat");
  check_is(x.narrow(0, 0, 2).narrow(1, 0, 2).repeat({2, 1, 2}), {0, 1, 0, 1, 4, 5, 4, 5, 0, 1, 0, 1, 4, 5, 4, 5},
           {2, 2, 4}, "repeat with a new leading dim, of a strided view");
  check_is(td::tensor({1, 2, 3, 4}).view({2, 2}).tile({2}), {1, 2, 1, 2, 3, 4, 3, 4}, {2, 4}, "tile");
  check_is(td::tensor({1, 2, 3, 4}).view({2, 2}).repeat_interleave(2), {1, 1, 2, 2, 3, 3, 4, 4}, {8},
           "repeat_interleave");
  check_is(td::tensor({1, 2, 3, 4}).view({2, 2}).repeat_interleave(td::tensor({1, 3}), 0), {1, 2, 3, 4, 3, 4, 3, 4},
           {4, 2}, "repeat_interleave by counts");
  const Tensor y = td::arange(24).view({2, 3, 4});
  check_is(td::movedim(y, 0, 2).contiguous(),
           {0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23}, {3, 4, 2},
           "movedim");
  CHECK(y.movedim({0, 1}, {2, 0}).sizes() == td::Shape{3, 4, 2});
  check_is(td::rot90(x).contiguous(), {3, 7, 11, 2, 6, 10, 1, 5, 9, 0, 4, 8}, {4, 3}, "rot90");
  check_is(x.rot90(-1).contiguous(), {8, 4, 0, 9, 5, 1, 10, 6, 2, 11, 7, 3}, {4, 3}, "rot90 -1");
  check_is(x.rot90(2), {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, {3, 4}, "rot90 2");
  check_is(x.fliplr(), {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}, {3, 4}, "fliplr");
  check_is(x.flipud(), {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}, {3, 4}, "flipud");
  CHECK(x.swapaxes(0, 1).sizes() == td::Shape{4, 3});

  check_error([&] { td::roll(x, {1, 2}, {0}); }, {"roll", "2 shifts for 1 dims"});
  check_error([&] { x.repeat({2}); }, {"repeat", "1 repeats", "2 dims"});
  check_error([&] { td::movedim(y, {0, 0}, {1, 2}); }, {"movedim", "more than once"});
  check_error([&] { td::rot90(x, 1, {0, 0}); }, {"rot90", "more than once"});
  check_error([&] { td::repeat_interleave(x, td::tensor({1, 2}), 0); }, {"repeat_interleave", "one per element"});
  check_error([&] { td::repeat_interleave(x, -1); }, {"repeat_interleave", "non-negative"});
}

TEST_CASE("diagonal is a view; diag, trace, diff, the stacks and meshgrid as PyTorch's", "[cpu]") {
  const Tensor y = td::arange(24).view({2, 3, 4});
  const Tensor d = td::diagonal(y, 1, 1, 2);
  check_is(d.contiguous(), {1, 6, 11, 13, 18, 23}, {2, 3}, "diagonal");
  CHECK(d.is_alias_of(y));
  Tensor x = grid();
  check_is(x.diagonal(-1).contiguous(), {4, 9}, {2}, "a diagonal below");
  check_is(x.diagonal(5), {}, {0}, "past the matrix");
  x.diagonal().fill_(-1);  // writes through
  CHECK(values(x).at(5) == -1);
  x = grid();
  check_is(td::diag(td::tensor({1.0, 2.0}), -1), {0, 0, 0, 1, 0, 0, 0, 2, 0}, {3, 3}, "diag of a vector");
  const Tensor taken = x.diag(1);
  check_is(taken, {1, 6, 11}, {3}, "diag of a matrix");
  CHECK_FALSE(taken.is_alias_of(x));
  CHECK(x.trace().item<double>() == 15);
  check_is(td::diff(td::tensor({1, 4, 9, 16, 25}), 2), {2, 2, 2}, {3}, "diff twice");
  check_is(x.diff(1, 0), {4, 4, 4, 4, 4, 4, 4, 4}, {2, 4}, "diff along dim 0");
  check_is(td::hstack({td::tensor({1, 2}), td::tensor({3})}), {1, 2, 3}, {3}, "hstack");
  check_is(td::vstack({td::tensor({1, 2}), td::tensor({3, 4})}), {1, 2, 3, 4}, {2, 2}, "vstack");
  check_is(td::dstack({td::tensor({1, 2}), td::tensor({3, 4})}), {1, 3, 2, 4}, {1, 2, 2}, "dstack");
  check_is(td::column_stack({td::tensor({1, 2}), td::tensor({3, 5, 4, 6}).view({2, 2})}), {1, 3, 5, 2, 4, 6}, {2, 3},
           "column_stack");
  const auto xy = td::meshgrid({td::tensor({1, 2, 3}), td::tensor({4, 5})}, "xy");
  check_is(xy[0].contiguous(), {1, 2, 3, 1, 2, 3}, {2, 3}, "meshgrid xy first");
  check_is(xy[1].contiguous(), {4, 4, 4, 5, 5, 5}, {2, 3}, "meshgrid xy second");
  const auto ij = td::meshgrid({td::tensor({1, 2, 3}), td::tensor({4, 5})});
  check_is(ij[0].contiguous(), {1, 1, 2, 2, 3, 3}, {3, 2}, "meshgrid ij");

  check_error([&] { td::diagonal(x, 0, 1, -1); }, {"diagonal", "cannot be the same"});
  check_error([&] { td::diag(y); }, {"diag", "1-D or 2-D", "[2, 3, 4]"});
  check_error([&] { y.trace(); }, {"trace", "2-D"});
  check_error([&] { td::meshgrid({td::tensor({1})}, "ji"); }, {"meshgrid", "\"ij\" or \"xy\""});
}

TEST_CASE("nonzero, masked_select, the index ops, take, bincount, searchsorted and unique as PyTorch's", "[cpu]") {
  const Tensor m = td::tensor({0.0, 1.5, 0.0, 2.0, 0.0, -1.0}).view({2, 3});
  check_is(td::nonzero(m), {0, 1, 1, 0, 1, 2}, {3, 2}, "nonzero");
  CHECK(td::nonzero(td::zeros({2, 3})).sizes() == td::Shape{0, 2});
  const auto per_dim = td::where(m);
  check_is(per_dim[0], {0, 1, 1}, {3}, "where's rows");
  check_is(per_dim[1], {1, 0, 2}, {3}, "where's columns");
  const Tensor x = grid();
  check_is(td::masked_select(x.narrow(0, 0, 2).narrow(1, 0, 3), m != 0), {1, 4, 6}, {3}, "masked_select");
  check_is(td::masked_select(x, td::tensor({true, false, false, true})), {0, 3, 4, 7, 8, 11}, {6},
           "masked_select with a broadcast mask");
  check_is(m.count_nonzero({0}), {1, 1, 1}, {3}, "count_nonzero");
  check_is(
      td::zeros({3, 2}).index_add(0, td::tensor({0, 2, 0}), td::tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).view({3, 2}), 2),
      {12, 16, 0, 0, 6, 8}, {3, 2}, "index_add");
  check_is(td::zeros({2, 3}).index_copy(1, td::tensor({2, 0}), td::tensor({1.0, 2.0, 3.0, 4.0}).view({2, 2})),
           {2, 0, 1, 4, 0, 3}, {2, 3}, "index_copy");
  check_is(x.index_fill(1, td::tensor({0, -1}), -5.0), {-5, 1, 2, -5, -5, 5, 6, -5, -5, 9, 10, -5}, {3, 4},
           "index_fill");
  Tensor in_place = td::zeros({3, 2});
  in_place.index_add_(0, td::tensor({1}), td::ones({1, 2}));
  check_is(in_place, {0, 0, 1, 1, 0, 0}, {3, 2}, "index_add_");
  check_is(td::take(x, td::tensor({0, 11, -1, 5}).view({2, 2})), {0, 11, 11, 5}, {2, 2}, "take");
  check_is(x.take_along_dim(td::tensor({1, 0, 3}).view({3, 1}), 1), {1, 4, 11}, {3, 1}, "take_along_dim");
  check_is(td::bincount(td::tensor({0, 3, 3, 1}), Tensor(), 6), {1, 1, 0, 2, 0, 0}, {6}, "bincount");
  check_is(td::bincount(td::tensor({0, 3, 3, 1}), td::tensor({0.5, 1.0, 2.0, 4.0})), {0.5, 4, 0, 3}, {4},
           "bincount with weights");
  const Tensor seq = td::tensor({1.0, 3.0, 5.0, 7.0, 9.0});
  check_is(td::searchsorted(seq, td::tensor({3.0, 6.0, 9.0, 0.0, 10.0, 5.0}).view({2, 3})), {1, 3, 4, 0, 5, 2}, {2, 3},
           "searchsorted");
  check_is(td::searchsorted(seq, td::tensor({3.0, 6.0, 9.0}), true), {2, 3, 5}, {3}, "searchsorted right");
  check_is(
      td::searchsorted(td::tensor({1.0, 3.0, 5.0, 2.0, 4.0, 6.0}).view({2, 3}), td::tensor({4.0, 4.0}).view({2, 1})),
      {2, 1}, {2, 1}, "searchsorted batched");
  check_is(td::bucketize(td::tensor({3.0, 6.0, 9.0}), seq), {1, 3, 4}, {3}, "bucketize");
  auto [uv, ui, uc] = td::unique(td::tensor({2, 1, 2, 5, 1, 0}).view({2, 3}), true, true);
  check_is(uv, {0, 1, 2, 5}, {4}, "unique values");
  check_is(ui, {2, 1, 2, 3, 1, 0}, {2, 3}, "unique inverse");
  check_is(uc, {1, 2, 2, 1}, {4}, "unique counts");
  CHECK_FALSE(std::get<1>(td::unique(td::tensor({1, 1}))).defined());
  // A position named twice by index_copy takes one row (the last), never their sum.
  check_is(td::zeros({3}).index_copy(0, td::tensor({0, 0}), td::tensor({1.0, 2.0})), {2, 0, 0}, {3},
           "index_copy with a repeated position");
  // Empty indices and empty dims give empty results, not errors.
  CHECK(td::take(td::zeros({2, 0}), td::zeros({0}, td::kInt64)).numel() == 0);
  check_is(td::zeros({2, 0}).index_fill(1, td::zeros({0}, td::kInt64), 1.0), {}, {2, 0}, "index_fill of an empty dim");
  check_is(td::ones({2}).index_add(0, td::zeros({0}, td::kInt64), td::zeros({0})), {1, 1}, {2}, "index_add of nothing");
  CHECK(td::remainder(td::zeros({0}, td::kInt64), 0).numel() == 0);
  // A 0-dim condition counts as one element.
  const auto yes = td::where(td::tensor(true)), no = td::where(td::tensor(false));
  REQUIRE(yes.size() == 1);
  check_is(yes[0], {0}, {1}, "where of a true 0-dim condition");
  REQUIRE(no.size() == 1);
  CHECK(no[0].numel() == 0);
  // NaN sorts above every number: its place is the end.
  check_is(td::searchsorted(td::tensor({1.0, 2.0, 3.0}), td::tensor({kNaN, 2.0}), true), {3, 2}, {2},
           "searchsorted of NaN, right");
  check_is(td::searchsorted(td::tensor({1.0, 2.0, 3.0}), td::tensor({kNaN, 2.0})), {3, 1}, {2}, "searchsorted of NaN");

  td::testing::Snapshot before(x);
  check_error(
      [&] {
        x.index_add(0, td::tensor({3}), td::ones({1, 4}).to(td::kFloat64));
      },
      {"index_add", "index 3", "out of range"});
  check_error(
      [&] {
        x.index_copy(0, td::tensor({0}), td::ones({2, 4}).to(td::kFloat64));
      },
      {"index_copy", "[2, 4]", "[1, 4]"});
  check_error([&] { x.index_fill(0, td::tensor({0.5}), 1); }, {"index_fill", "integer", "float32"});
  check_error([&] { x.take(td::tensor({12})); }, {"take", "index 12", "out of range"});
  check_error([&] { td::bincount(td::tensor({-1, 2})); }, {"bincount", "non-negative", "-1"});
  check_error([&] { td::masked_select(x, td::tensor({1, 0, 0, 1})); }, {"masked_select", "bool", "int64"});
  before.check_unchanged(x);
}

TEST_CASE("dot, mv, outer, addmv, addr, baddbmm and addbmm as PyTorch's", "[cpu]") {
  const Tensor a = td::tensor({1.0, 2.0, 3.0}, td::kFloat64), b = td::tensor({4.0, -5.0, 6.0}, td::kFloat64);
  const Tensor x = grid();
  CHECK(td::dot(a, b).item<double>() == 12);
  check_is(td::outer(a, b.narrow(0, 0, 2)), {4, -5, 8, -10, 12, -15}, {3, 2}, "outer");
  check_is(x.narrow(1, 0, 3).mv(a), {8, 32, 56}, {3}, "mv");
  check_is(td::addmv(td::ones({3}, td::kFloat64), x.narrow(1, 0, 3), a, 0.5, 2), {16.5, 64.5, 112.5}, {3}, "addmv");
  check_is(td::addr(td::ones({3, 2}, td::kFloat64), a, b.narrow(0, 0, 2), 2, -1), {-2, 7, -6, 12, -10, 17}, {3, 2},
           "addr");
  const Tensor b1 = td::arange(12.0).to(td::kFloat64).view({2, 2, 3}),
               b2 = td::arange(6.0).to(td::kFloat64).view({2, 3, 1});
  check_is(td::baddbmm(td::ones({2, 2, 1}, td::kFloat64), b1, b2, 0.5, 2), {10.5, 28.5, 172.5, 244.5}, {2, 2, 1},
           "baddbmm");
  check_is(td::addbmm(td::ones({2, 1}, td::kFloat64), b1, b2), {92, 137}, {2, 1}, "addbmm");
  // beta 0 ignores the input, NaN included.
  Tensor ignored = td::full({3}, kNaN, td::kFloat64).requires_grad_();
  const Tensor product = td::addmv(ignored, x.narrow(1, 0, 3), a, 0);
  check_is(product, {8, 32, 56}, {3}, "addmv beta 0");
  product.sum().backward();
  check_is(ignored.grad(), {0, 0, 0}, {3}, "the ignored input's gradient: zeros");
  check_error([&] { td::dot(a, b.narrow(0, 0, 2)); }, {"dot", "[3]", "[2]"});
  check_error([&] { td::mv(x, a); }, {"mv", "[3, 4]", "[3]"});
}

TEST_CASE("nansum, nanmean, aminmax, var_mean and std_mean as PyTorch's", "[cpu]") {
  const Tensor n = td::tensor({1.0, kNaN, 3.0, kNaN, kNaN, 2.0}).view({2, 3});
  CHECK(td::nansum(n).item<double>() == 6);
  check_is(n.nansum({1}), {4, 2}, {2}, "nansum along a dim");
  const std::vector<double> means = values(td::nanmean(n, {0}));
  CHECK(means[0] == 1);
  CHECK(std::isnan(means[1]));
  CHECK(means[2] == 2.5);
  CHECK(n.nanmean().item<double>() == 2);
  CHECK(td::nansum(td::tensor({1, 2})).item<int64_t>() == 3);
  const Tensor x = grid();
  auto [lo, hi] = x.aminmax(0);
  check_is(lo, {0, 1, 2, 3}, {4}, "aminmax min");
  check_is(hi, {8, 9, 10, 11}, {4}, "aminmax max");
  CHECK(std::get<1>(td::aminmax(x)).item<double>() == 11);
  auto [v, mean] = td::var_mean(x, {1});
  check_close(v, {1.6666666666666667, 1.6666666666666667, 1.6666666666666667}, 1e-15, 0, "var_mean var");
  check_is(mean, {1.5, 5.5, 9.5}, {3}, "var_mean mean");
  auto [s, m0] = td::std_mean(x, {0}, 1, true);
  check_is(s, {4, 4, 4, 4}, {1, 4}, "std_mean std");
  check_is(m0, {4, 5, 6, 7}, {1, 4}, "std_mean mean");
  check_error([] { td::nanmean(td::tensor({1, 2})); }, {"nanmean", "floating", "int64"});
}

TEST_CASE("gradients through roll, repeat, diagonal, index_fill and masked_select are PyTorch's", "[cpu]") {
  const Tensor w = td::arange(1.0, 13.0).to(td::kFloat64).view({3, 4});
  Tensor g = grid().requires_grad_();
  (td::roll(g, {1, -1}, {0, 1}) * w).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{8, 5, 6, 7, 12, 9, 10, 11, 4, 1, 2, 3});
  g = grid().requires_grad_();
  (g.repeat({2, 1}) * td::arange(24.0).to(td::kFloat64).view({6, 4})).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
  g = grid().requires_grad_();
  (td::diagonal(g, 1) * td::tensor({1.0, 2.0, 3.0}, td::kFloat64)).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3});
  g = grid().requires_grad_();
  (g.index_fill(1, td::tensor({0}), 0.0) * w).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{0, 2, 3, 4, 0, 6, 7, 8, 0, 10, 11, 12});
  g = grid().requires_grad_();
  td::masked_select(g, g > 5).pow(2).sum().backward();
  CHECK(values(g.grad()) == std::vector<double>{0, 0, 0, 0, 0, 0, 12, 14, 16, 18, 20, 22});
  // diag's vector gradient comes back from the diagonal it was written to.
  Tensor v = td::tensor({1.0, 2.0}, td::kFloat64).requires_grad_();
  (td::diag(v, 1) * td::arange(9.0).to(td::kFloat64).view({3, 3})).sum().backward();
  CHECK(values(v.grad()) == std::vector<double>{1, 5});
}

TEST_CASE("randperm is a permutation from the generator; multinomial draws in proportion", "[cpu]") {
  td::manual_seed(7);
  const Tensor p = td::randperm(1000);
  CHECK(p.dtype() == td::kInt64);
  std::vector<double> sorted = values(p);
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) REQUIRE(sorted[i] == static_cast<double>(i));
  CHECK(values(p) != sorted);  // 1/1000! to be sorted already
  td::manual_seed(7);
  CHECK(values(td::randperm(1000)) == values(p));  // the same seed, the same permutation
  CHECK(td::randperm(0).numel() == 0);

  // 40000 draws from weights 1:2:0:5: each share within 4 standard deviations of 1/8, 2/8, 0, 5/8.
  const Tensor weights = td::tensor({1.0, 2.0, 0.0, 5.0});
  const Tensor draws = td::multinomial(weights, 40000, true);
  CHECK(draws.sizes() == td::Shape{40000});
  const std::vector<double> counts = values(td::bincount(draws, Tensor(), 4));
  const double total = 40000;
  for (int k = 0; k < 4; ++k) {
    const double share = values(weights)[k] / 8, sd = std::sqrt(share * (1 - share) / total);
    INFO("category " << k << ": " << counts[k]);
    CHECK(std::abs(counts[k] / total - share) <= 4 * sd + 1e-12);
  }
  // Without replacement: distinct categories, never a zero-weight one.
  const Tensor rows = td::tensor({1.0, 0.0, 3.0, 2.0, 5.0, 1.0, 1.0, 0.0}).view({2, 4});
  for (int trial = 0; trial < 50; ++trial) {
    const Tensor picked = td::multinomial(rows, 3, false);
    CHECK(picked.sizes() == td::Shape{2, 3});
    const std::vector<double> first = values(picked.select(0, 0)), second = values(picked.select(0, 1));
    CHECK(std::find(first.begin(), first.end(), 1.0) == first.end());
    CHECK(std::find(second.begin(), second.end(), 3.0) == second.end());
    std::vector<double> f = first;
    std::sort(f.begin(), f.end());
    CHECK(std::adjacent_find(f.begin(), f.end()) == f.end());
  }
  check_error([&] { td::multinomial(rows, 4, false); }, {"multinomial", "without replacement"});
  check_error([&] { td::multinomial(td::tensor({1.0, -1.0}), 1); }, {"multinomial", "non-negative"});
  check_error([&] { td::multinomial(td::tensor({0.0, 0.0}), 1, true); }, {"multinomial", "positive sum"});
}

namespace {

// sin(scale * i), i in row-major order: a float64 input that PyTorch's script builds the same way.
Tensor sine(int64_t n, const td::Shape& shape, double scale) {
  return td::sin(td::arange(static_cast<double>(n)).to(td::kFloat64) * scale).view(shape);
}

}  // namespace

TEST_CASE("einsum contracts, broadcasts ellipses, takes diagonals and sums as torch.einsum", "[cpu]") {
  const Tensor a = sine(6, {2, 3}, 0.7), b = sine(12, {3, 4}, 1.3), c = sine(24, {2, 3, 4}, 0.9),
               d = sine(8, {2, 4}, 0.4);
  struct Case {
    std::string equation;
    std::vector<Tensor> operands;
    std::vector<double> want;
    td::Shape shape;
  };
  const Case cases[] = {
      {"ij,jk->ik",
       {a, b},
       {-1.3849184855251653, -0.6123124158241172, 1.0573327775546797, 1.1779829747486346, -0.005559200073549209,
        1.1711061588480334, 0.6320982514473272, -0.8329350751724138},
       {2, 4}},
      {"ij,jk",
       {a, b},
       {-1.3849184855251653, -0.6123124158241172, 1.0573327775546797, 1.1779829747486346, -0.005559200073549209,
        1.1711061588480334, 0.6320982514473272, -0.8329350751724138},
       {2, 4}},
      {"bij,bjk->bik",
       {c.narrow(2, 0, 3), c.transpose(1, 2).narrow(1, 0, 3)},
       {1.561980255513617, -1.5182805115715912, 1.161081398702261, -1.5182805115715912, 1.7485544269038784,
        -1.6177812859171774, 1.161081398702261, -1.6177812859171774, 1.7404365691659551, 1.5439853789235882,
        -1.265442769419772, 0.7256075288091548, -1.265442769419772, 1.3130805570107733, -1.0895893122285094,
        0.7256075288091548, -1.0895893122285094, 1.2285892433681476},
       {2, 3, 3}},
      {"ii->i", {b.narrow(1, 0, 3)}, {0.0, 0.21511998808781552, 0.4201670368266409}, {3}},
      {"ii", {b.narrow(1, 0, 3)}, {0.6352870249144564}, {}},
      {"i,j->ij",
       {a.select(0, 0), d.select(0, 1)},
       {0.0, 0.0, 0.0, 0.0, 0.6439429947752443, 0.5857854853208243, 0.4351453279888772, 0.21580529134546927,
        0.9850295372208434, 0.8960669037445697, 0.6656350088912779, 0.33011398212047},
       {3, 4}},
      {"ijk->", {c}, {1.801354459899971}, {}},
      {"...j,j->...",
       {c, d.select(0, 0)},
       {1.4019721491853574, -0.9193442575180809, 0.24688725169025488, 0.47654781584039474, -1.1015837809713132,
        1.49916123792604},
       {2, 3}},
      {"ij,jk,kl->il",
       {a, b, d.t()},
       {1.6179645972109986, -0.8323023661631994, 0.13316170363499102, 1.207262702444135},
       {2, 2}},
      {"ij,ij->ij",
       {a, a},
       {0.0, 0.41501642854987947, 0.971111170334329, 0.74513041067035, 0.11221706074487522, 0.12304887282834767},
       {2, 3}},
      {"iij->ij",
       {sine(18, {3, 3, 2}, 0.5)},
       {0.0, 0.479425538604203, -0.7568024953079282, -0.977530117665097, 0.9893582466233818, 0.7984871126234903},
       {3, 2}},
  };
  for (const Case& k : cases) {
    const Tensor y = td::einsum(k.equation, k.operands);
    INFO(k.equation);
    CHECK(y.sizes() == k.shape);
    check_close(y, k.want, 1e-14, 1e-15, k.equation);
  }
  const Tensor t = td::einsum("ijk->kji", {c});
  CHECK(t.sizes() == td::Shape{4, 3, 2});
  check_close(t, values(c.permute({2, 1, 0}).contiguous()), 0, 0, "a transpose");
  const Tensor attention = td::einsum("b q d, b k d -> b q k", {c, c});
  check_close(attention, values(td::bmm(c, c.transpose(1, 2))), 1e-14, 1e-15, "spaces and a batched product");

  Tensor ga = a.clone().requires_grad_(), gb = b.clone().requires_grad_();
  (td::einsum("ij,jk->ik", {ga, gb}) * sine(8, {2, 4}, 0.2)).sum().backward();
  check_close(ga.grad(),
              {0.003833164312444237, 0.6117653269264043, 0.569411344864647, 0.6135147067469963, 0.7924024718522564,
               0.12899283013782292},
              1e-14, 1e-15, "einsum's gradient to a");
  check_close(gb.grad(),
              {0.6192284968870891, 0.7263656358494286, 0.8045448690897649, 0.8506494372876426, 0.24030578989350246,
               0.40986910542051913, 0.5630922331311761, 0.6938666504471898, -0.2516364849685429, -0.09939526966909581,
               0.05680852137214665, 0.2107475359359376},
              1e-14, 1e-15, "einsum's gradient to b");

  check_error([&] { td::einsum("ij,jk->ik", {a}); }, {"einsum", "2 input terms for 1 operands"});
  check_error([&] { td::einsum("ijk->i", {a}); }, {"einsum", "3 labels", "2 dims"});
  check_error([&] { td::einsum("ij,jk->ik", {a, a}); }, {"einsum", "sizes 3 and 2"});
  check_error([&] { td::einsum("ij->iz", {a}); }, {"einsum", "no input has"});
  check_error([&] { td::einsum("i1->i", {a}); }, {"einsum", "'1'", "not a letter"});
  check_error([&] { td::einsum("ij,jk->ik", {a, b.to(td::kFloat32)}); }, {"einsum", "float32", "float64"});
}
