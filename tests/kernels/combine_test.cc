// tensor_split and the h/v/dsplits, cross, kron, tensordot, tril/triu_indices, combinations,
// cartesian_prod, block_diag, cov, corrcoef, trapezoid, heaviside, logaddexp2, sinc, float_power,
// isin, unique_consecutive, the *_scatter forms, masked_scatter, index and index_put: values and
// gradients against PyTorch 2.15, and errors.
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

void check_is(const Tensor& t, const std::vector<double>& want, const td::Shape& shape, const std::string& what) {
  INFO(what);
  CHECK(t.sizes() == shape);
  CHECK(values(t) == want);
}

// sin(scale * i), i in row-major order, float64.
Tensor sine(int64_t n, const td::Shape& shape, double scale) {
  return td::sin(td::arange(static_cast<double>(n)).to(td::kFloat64) * scale).view(shape);
}

}  // namespace

TEST_CASE("tensor_split, hsplit, vsplit and dsplit cut views as PyTorch's", "[cpu]") {
  const Tensor x = td::arange(7.0);
  const auto three = td::tensor_split(x, 3);
  REQUIRE(three.size() == 3);
  check_is(three[0], {0, 1, 2}, {3}, "first part");
  check_is(three[2], {5, 6}, {2}, "last part");
  CHECK(three[1].is_alias_of(x));
  const auto cut = x.tensor_split(std::vector<int64_t>{1, 5, 9});
  REQUIRE(cut.size() == 4);
  check_is(cut[1], {1, 2, 3, 4}, {4}, "between cuts");
  check_is(cut[3], {}, {0}, "past the end");
  const Tensor m = td::arange(24.0).view({2, 4, 3});
  CHECK(td::hsplit(m, 2)[1].sizes() == td::Shape{2, 2, 3});
  CHECK(td::vsplit(m, 2)[0].sizes() == td::Shape{1, 4, 3});
  CHECK(td::dsplit(m, 3)[2].sizes() == td::Shape{2, 4, 1});
  check_error([&] { td::hsplit(m, 3); }, {"hsplit", "size 4", "3 equal parts"});
  check_error([&] { td::dsplit(td::ones({2, 2}), 1); }, {"dsplit", "3 dims"});
}

TEST_CASE("cross, kron and tensordot as PyTorch's, with cross's gradients", "[cpu]") {
  const Tensor a = sine(6, {2, 3}, 0.7), b = sine(6, {2, 3}, 1.9);
  check_close(td::cross(a, b),
              {-1.3267008413208685, 0.0, 0.0, 0.31435525187383795, 0.25804240317120086, 1.0199904582936687}, 1e-14,
              1e-15, "cross");
  check_is(td::kron(td::tensor({1, 2, 3, 4}).view({2, 2}), td::tensor({0, 1, 1, 0}).view({2, 2})),
           {0, 1, 0, 2, 1, 0, 2, 0, 0, 3, 0, 4, 3, 0, 4, 0}, {4, 4}, "kron");
  check_close(td::tensordot(sine(24, {2, 3, 4}, 0.3), sine(12, {3, 4}, 0.5)), {1.72428220316651, -3.9258161721743683},
              1e-14, 1e-15, "tensordot of 2 dims");
  check_close(td::tensordot(sine(24, {2, 3, 4}, 0.3), sine(6, {3, 2}, 0.5), {1, 0}, {0, 1}),
              {0.02543358221981462, -0.015187000280896812, -0.05445097327721771, -0.08885100299936108}, 1e-14, 1e-15,
              "tensordot of paired dims");
  Tensor ga = a.clone().requires_grad_(), gb = b.clone().requires_grad_();
  (td::cross(ga, gb) * sine(6, {2, 3}, 0.3)).sum().backward();
  check_close(ga.grad(), {0.7151375924645242, 0.0, 0.0, 1.035538801911486, 0.4904381729900859, -1.2714579752381403},
              1e-14, 1e-15, "cross's gradient to a");
  check_close(gb.grad(), {-0.07253236046616815, 0.0, 0.0, -0.6610926792607482, 1.1358249573171766, -0.5421396366663123},
              1e-14, 1e-15, "cross's gradient to b");
  check_error([&] { td::cross(td::ones({2, 4}), td::ones({2, 4})); }, {"cross", "size 3"});
  check_error([&] { td::tensordot(td::ones({2, 3}), td::ones({2, 3}), {1}, {1, 0}); }, {"tensordot", "1 dims", "2"});
  check_error([&] { td::tensordot(td::ones({2, 3}), td::ones({2, 3}), {1}, {0}); }, {"tensordot", "sizes 3 and 2"});
}

TEST_CASE("tril/triu_indices, combinations, cartesian_prod and block_diag as PyTorch's", "[cpu]") {
  check_is(td::tril_indices(3, 4, 1), {0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 1, 0, 1, 2, 0, 1, 2, 3}, {2, 9}, "tril_indices");
  check_is(td::triu_indices(3, 3, -1), {0, 0, 0, 1, 1, 1, 2, 2, 0, 1, 2, 0, 1, 2, 1, 2}, {2, 8}, "triu_indices");
  check_is(td::combinations(td::tensor({1, 2, 3})), {1, 2, 1, 3, 2, 3}, {3, 2}, "combinations");
  check_is(td::combinations(td::tensor({1, 2, 3}), 2, true), {1, 1, 1, 2, 1, 3, 2, 2, 2, 3, 3, 3}, {6, 2},
           "combinations with replacement");
  CHECK(td::combinations(td::tensor({1, 2, 3, 4}), 3).sizes() == td::Shape{4, 3});
  check_is(td::cartesian_prod({td::tensor({1, 2}), td::tensor({3, 4, 5})}), {1, 3, 1, 4, 1, 5, 2, 3, 2, 4, 2, 5},
           {6, 2}, "cartesian_prod");
  check_is(td::block_diag({td::tensor({1, 2}).view({1, 2}), td::tensor(3), td::tensor({4, 5})}),
           {1, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 4, 5}, {3, 5}, "block_diag");
  check_error([] { td::combinations(td::ones({2, 2})); }, {"combinations", "1-D"});
  check_error([] { td::block_diag({td::ones({1, 1, 1})}); }, {"block_diag", "at most 2 dims"});
}

TEST_CASE("cov, corrcoef and trapezoid as PyTorch's, with cov's gradient", "[cpu]") {
  const Tensor c = sine(12, {3, 4}, 0.9);
  check_close(
      td::cov(c),
      {0.1838547710830558, -0.10756545230988807, 0.009065678248307183, -0.10756545230988807, 0.18836396169822675,
       -0.23026848366396754, 0.009065678248307183, -0.23026848366396754, 0.40392472323602285},
      1e-14, 1e-15, "cov");
  check_close(
      td::cov(c, 0, td::tensor({1, 2, 1, 3}), td::tensor({0.5, 1.0, 2.0, 1.0}, td::kFloat64)),
      {0.08058853192588586, -0.08893615357018421, 0.07891995653501205, -0.08893615357018422, 0.18759855531267586,
       -0.24752501316735417, 0.07891995653501205, -0.24752501316735415, 0.36502032108707905},
      1e-13, 1e-15, "cov with weights");
  check_close(td::corrcoef(c),
              {1.0, -0.5780114579469664, 0.03326692285832203, -0.5780114579469665, 1.0, -0.8348056410405033,
               0.03326692285832203, -0.8348056410405033, 1.0},
              1e-14, 1e-15, "corrcoef");
  check_close(td::trapezoid(c), {1.9708644806225935, -1.9631478766263355, 1.550074281123759}, 1e-14, 1e-15,
              "trapezoid");
  check_close(td::trapezoid(c, 0.5, 0),
              {-0.022843255685137953, -0.05046087871440608, -0.03989071474800565, 0.000867946856801971}, 1e-13, 1e-15,
              "trapezoid with dx along dim 0");
  check_close(td::trapezoid(c, td::tensor({0.0, 1.0, 3.0, 6.0}, td::kFloat64)),
              {4.250679261987457, -3.594245766308515, 2.1956610206336156}, 1e-14, 1e-15, "trapezoid at points");
  Tensor g = c.clone().requires_grad_();
  (td::cov(g) * sine(9, {3, 3}, 0.4)).sum().backward();
  check_close(g.grad(),
              {0.21375749025135762, 0.05990842872884997, -0.1088534340710274, -0.16481248490918016,
               -0.02191352761986016, 0.03969997062868059, 0.028731585285201092, -0.04651802829402152,
               -0.22563811619060073, -0.09071998825976987, 0.10436891143893195, 0.21198919301143868},
              1e-13, 1e-15, "cov's gradient");
  check_error([&] { td::cov(c, 1, td::tensor({1.5, 1.0, 1.0, 1.0})); }, {"cov", "fweights", "integers"});
  check_error([&] { td::cov(c, 1, td::tensor({1, 2})); }, {"cov", "fweights", "one weight per observation"});
}

TEST_CASE("heaviside, logaddexp2, sinc, float_power, isin and unique_consecutive as PyTorch's", "[cpu]") {
  check_is(td::heaviside(td::tensor({-1.5, 0.0, 2.0}), td::tensor({0.5, 0.5, 0.5})), {0, 0.5, 1}, {3}, "heaviside");
  check_close(td::logaddexp2(sine(6, {2, 3}, 0.7), sine(6, {2, 3}, 1.9)),
              {1.0, 1.8031510231441734, 1.3974108385531874, 1.3229526905036362, 1.6858886198149774, 0.793605402744376},
              1e-14, 1e-15, "logaddexp2");
  check_close(td::sinc(td::tensor({0.0, 0.5, -1.25}, td::kFloat64)), {1.0, 0.6366197723675814, -0.18006326323142122},
              1e-15, 0, "sinc");
  Tensor z = td::tensor({0.0, 0.5}, td::kFloat64).requires_grad_();
  td::sinc(z).sum().backward();
  CHECK(values(z.grad())[0] == 0);  // sinc is flat at 0
  const Tensor p = td::float_power(td::tensor({2, 3}), td::tensor({0.5, 2.0}));
  CHECK(p.dtype() == td::kFloat64);
  check_close(p, {1.4142135623730951, 9.0}, 1e-16, 0, "float_power");
  CHECK(values(td::isin(td::tensor({1, 2, 3, 4}).view({2, 2}), td::tensor({2, 3, 7}))) ==
        std::vector<double>{0, 1, 1, 0});
  CHECK(values(td::isin(td::tensor({1.5, 2.0}), td::tensor({2}), true)) == std::vector<double>{1, 0});
  CHECK(values(td::isin(td::tensor({1, 2}), td::zeros({0}, td::kInt64))) == std::vector<double>{0, 0});
  auto [v, inverse, counts] = td::unique_consecutive(td::tensor({1, 1, 2, 2, 3, 1, 1, 2}), true, true);
  check_is(v, {1, 2, 3, 1, 2}, {5}, "unique_consecutive values");
  check_is(inverse, {0, 0, 1, 1, 2, 3, 3, 4}, {8}, "unique_consecutive inverse");
  check_is(counts, {2, 2, 1, 2, 1}, {5}, "unique_consecutive counts");
  check_error([] { td::heaviside(td::tensor({1.0}), td::tensor({1})); }, {"heaviside", "float32", "int64"});
}

TEST_CASE("the scatter forms, masked_scatter, index and index_put as PyTorch's, gradients through them", "[cpu]") {
  check_is(td::select_scatter(td::zeros({2, 3}), td::ones({3}), 0, 1), {0, 0, 0, 1, 1, 1}, {2, 3}, "select_scatter");
  check_is(td::slice_scatter(td::zeros({4, 2}), td::ones({2, 2}), 0, 0, 4, 2), {1, 1, 0, 0, 1, 1, 0, 0}, {4, 2},
           "slice_scatter");
  check_is(td::diagonal_scatter(td::zeros({3, 3}), td::tensor({1.0, 2.0}), 1), {0, 1, 0, 0, 0, 2, 0, 0, 0}, {3, 3},
           "diagonal_scatter");
  const Tensor mask = td::tensor({true, false, true, false, true, true}).view({2, 3});
  check_is(td::zeros({2, 3}).masked_scatter(mask, td::arange(1.0, 7.0)), {1, 0, 2, 0, 3, 4}, {2, 3}, "masked_scatter");
  const Tensor x = td::arange(24.0).view({4, 3, 2});
  check_is(x.index({td::tensor({0, 3, -1}), td::tensor({1, 0, 2})}), {2, 3, 18, 19, 22, 23}, {3, 2}, "index by two");
  check_is(x.index({td::tensor({true, false, true, false})}), {0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17}, {2, 3, 2},
           "index by a mask");
  CHECK(x.index({td::tensor({0, 1, 2, 3}).view({2, 2})}).sizes() == td::Shape{2, 2, 3, 2});
  Tensor y = td::zeros({3, 2});
  y.index_put_({td::tensor({0, 2, 0})}, td::tensor({1.0, 2.0}), true);
  check_is(y, {2, 4, 0, 0, 1, 2}, {3, 2}, "index_put accumulating");
  check_is(td::zeros({3, 2}).index_put({td::tensor({1, 2}), td::tensor({0, 1})}, td::tensor(5.0)), {0, 0, 5, 0, 0, 5},
           {3, 2}, "index_put of one value");
  // Gradients: what was overwritten gets none; the written values get theirs.
  Tensor base = td::ones({2, 3}).requires_grad_(), src = td::tensor({2.0, 3.0, 4.0}).requires_grad_();
  (td::select_scatter(base, src, 0, 1) * td::arange(6.0).view({2, 3})).sum().backward();
  CHECK(values(base.grad()) == std::vector<double>{0, 1, 2, 0, 0, 0});
  CHECK(values(src.grad()) == std::vector<double>{3, 4, 5});
  Tensor picked = td::arange(6.0).view({2, 3}).requires_grad_();
  (picked.index({td::tensor({1, 1, 0}), td::tensor({2, 2, 0})}) * td::tensor({1.0, 2.0, 3.0})).sum().backward();
  CHECK(values(picked.grad()) == std::vector<double>{3, 0, 0, 0, 0, 3});
  Tensor source = td::arange(1.0, 7.0).requires_grad_();
  (td::zeros({2, 3}).masked_scatter(mask, source) * td::arange(6.0).view({2, 3})).sum().backward();
  CHECK(values(source.grad()) == std::vector<double>{0, 2, 4, 5, 0, 0});

  check_error([&] { td::select_scatter(td::zeros({2, 3}), td::ones({2}), 0, 1); }, {"select_scatter", "[2]", "[3]"});
  check_error([&] { td::zeros({2, 3}).masked_scatter(mask, td::ones({3})); }, {"masked_scatter", "4 places", "3"});
  check_error([&] { x.index({td::tensor({4})}); }, {"index", "out of range", "size 4"});
  check_error([&] { x.index({td::tensor({0.5})}); }, {"index", "integer or bool", "float32"});
  check_error(
      [&] {
        x.index({td::tensor({0}), td::tensor({0}), td::tensor({0}), td::tensor({0})});
      },
      {"index", "too many indices"});
}

TEST_CASE("indexing checks masks, tensor_split cuts back, cross and trapezoid follow PyTorch's rules", "[cpu]") {
  // A mask must match the dims it covers; uint8 indices are masks.
  const Tensor v = td::arange(4.0);
  check_error([&] { v.index({td::tensor({true, false, true})}); }, {"index", "mask of shape [3]", "[4]"});
  check_is(v.index({td::tensor({1, 0, 1, 0}).to(td::kUInt8)}), {0, 2}, {2}, "a uint8 mask");
  const Tensor m = td::arange(6.0).view({2, 3});
  // A 0-dim mask, as PyTorch's: a new dim of size 1 where it stands, kept whole (true) or emptied.
  check_is(m.index({td::tensor(true)}), {0, 1, 2, 3, 4, 5}, {1, 2, 3}, "a true 0-dim mask");
  check_is(m.index({td::tensor(false)}), {}, {0, 2, 3}, "a false 0-dim mask");
  check_is(m.index({td::tensor(true).to(td::kUInt8)}), {0, 1, 2, 3, 4, 5}, {1, 2, 3}, "a 0-dim uint8 mask");
  check_is(m.index({td::tensor({1, 0}), td::tensor(true)}), {3, 4, 5, 0, 1, 2}, {2, 3}, "rows, then a 0-dim mask");
  check_is(m.index({td::tensor(true), td::tensor({1, 0})}), {3, 4, 5, 0, 1, 2}, {2, 3}, "a 0-dim mask, then rows");
  check_is(m.index({td::tensor(true), td::tensor(true)}), {0, 1, 2, 3, 4, 5}, {1, 2, 3}, "two 0-dim masks");
  check_is(m.index_put({td::tensor(true)}, td::tensor({7.0, 8.0, 9.0})), {7, 8, 9, 7, 8, 9}, {2, 3},
           "index_put through a true 0-dim mask");
  check_is(m.index_put({td::tensor(false)}, td::tensor(5.0)), {0, 1, 2, 3, 4, 5}, {2, 3},
           "index_put through a false 0-dim mask");
  check_is(m.index_put({td::tensor({1}), td::tensor(true)}, td::tensor(-1.0)), {0, 1, 2, -1, -1, -1}, {2, 3},
           "index_put through rows and a 0-dim mask");
  check_error([] { td::arange(2.0).index({td::tensor({1}), td::tensor({0}), td::tensor(true)}); },
              {"index", "too many indices (3)", "1 dims"});
  Tensor leaf = td::arange(6.0).view({2, 3}).detach().requires_grad_(true);
  (leaf.index({td::tensor(true)}) * 2).sum().backward();
  check_is(leaf.grad(), {2, 2, 2, 2, 2, 2}, {2, 3}, "the gradient through a 0-dim mask");
  check_is(m.index({td::tensor({true, false, true, false, true, true}).view({2, 3})}), {0, 2, 4, 5}, {4},
           "a mask over two dims");
  // index_put: values must broadcast to the indexed shape and share the input's dtype.
  Tensor target = td::zeros({3, 2});
  td::testing::Snapshot before(target);
  check_error(
      [&] {
        target.index_put_({td::tensor({0, 1})}, td::ones({3}));
      },
      {"index_put", "[3]", "cannot be broadcast", "[2, 2]"});
  check_error(
      [&] {
        target.index_put_({td::tensor({0})}, td::ones({1, 2}, td::kFloat64));
      },
      {"index_put", "float64", "float32"});
  before.check_unchanged(target);
  // A cut below the one before it: an empty part, and the next part starts at the lower cut.
  const auto parts = td::tensor_split(td::arange(5), std::vector<int64_t>{3, 1});
  REQUIRE(parts.size() == 3);
  check_is(parts[1], {}, {0}, "an empty part");
  check_is(parts[2], {1, 2, 3, 4}, {4}, "from the lower cut");
  check_error([] { td::cross(td::ones({3}), td::ones({3, 3})); }, {"cross", "one number of dims"});
  // trapezoid: integers integrate in float32; x with fewer dims than y counts its missing dims as 1.
  CHECK(td::trapezoid(td::tensor({1, 2, 3}).view({1, 3}), 1.0, 0).dtype() == td::kFloat32);
  const Tensor y = sine(24, {2, 3, 4}, 0.6), points = td::cumsum(td::exp(sine(12, {3, 4}, 0.2)), 0);
  check_close(td::trapezoid(y, points, 1), values(td::trapezoid(y, points.expand({2, 3, 4}), 1)), 1e-15, 1e-15,
              "x broadcast from fewer dims");
  check_error([] { td::trapezoid(td::ones({4}), td::ones({3})); }, {"trapezoid", "one x value for each sample"});
  // masked_scatter out of place broadcasts the input and the mask together.
  const Tensor spread = td::zeros({3}).masked_scatter(td::ones({2, 3}, td::kBool), td::arange(6.0));
  check_is(spread, {0, 1, 2, 3, 4, 5}, {2, 3}, "masked_scatter broadcast");
}
