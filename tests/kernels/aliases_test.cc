// PyTorch's other names for tandem's ops (arccos, divide, greater, concat, moveaxis, ...), each the
// op it names; the small ops built on them (rsub, dist, diagflat, pinverse, nuclear_norm,
// frobenius_norm, broadcast_tensors, is_nonzero, randint_like, ...) against PyTorch 2.15's values;
// and the composed ops' in-place forms: the out-of-place op's values and gradients, and errors with
// the operand unchanged.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::check_values;
using td::testing::Snapshot;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor f64(const std::vector<double>& v) { return td::tensor(v); }
Tensor i64(const std::vector<int64_t>& v) { return td::tensor(v); }

}  // namespace

TEST_CASE("PyTorch's other names give the ops' own results", "[cpu]") {
  const Tensor x = f64({0.5, -0.25, 0.75, 0.1, -0.9, 0.3}).view({2, 3});
  const Tensor y = f64({1.5, 2.0, -0.5, 0.7, 1.2, 3.0}).view({2, 3});
  const Tensor wide = x * 3 + 2;  // above 1, for arccosh
  const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> same = {
      {"absolute", {td::absolute(x), x.abs()}},         {"negative", {td::negative(x), x.neg()}},
      {"fix", {td::fix(y * 1.7), (y * 1.7).trunc()}},    {"sgn", {td::sgn(x), x.sign()}},
      {"arccos", {td::arccos(x), x.acos()}},             {"arcsin", {td::arcsin(x), x.asin()}},
      {"arctan", {td::arctan(x), x.atan()}},             {"arccosh", {td::arccosh(wide), wide.acosh()}},
      {"arcsinh", {td::arcsinh(x), x.asinh()}},          {"arctanh", {td::arctanh(x), x.atanh()}},
      {"arctan2", {td::arctan2(x, y), x.atan2(y)}},      {"divide", {td::divide(x, y), x.div(y)}},
      {"divide floor", {td::divide(x, y, "floor"), x.div(y, "floor")}},
      {"subtract", {td::subtract(x, y, 2), x.sub(y, 2)}}, {"greater", {td::greater(x, y), x.gt(y)}},
      {"greater_equal", {td::greater_equal(x, 0.1), x.ge(0.1)}},
      {"less", {td::less(x, y), x.lt(y)}},               {"less_equal", {td::less_equal(x, 0.1), x.le(0.1)}},
      {"not_equal", {td::not_equal(x, 0.5), x.ne(0.5)}},
      {"concat", {td::concat({x, y}, 1), td::cat({x, y}, 1)}},
      {"concatenate", {td::concatenate({x, y}), td::cat({x, y})}},
      {"moveaxis", {td::moveaxis(x.view({2, 3, 1}), 0, 2), x.view({2, 3, 1}).movedim(0, 2)}},
      {"ravel", {td::ravel(x.t()), x.t().reshape({-1})}},
      {"broadcast_to", {td::broadcast_to(f64({1, 2, 3}), {2, 3}), f64({1, 2, 3}).expand({2, 3})}},
      {"Tensor::arccos", {x.arccos(), x.acos()}},        {"Tensor::arctan2", {x.arctan2(y), x.atan2(y)}},
      {"Tensor::divide", {x.divide(2.0), x.div(2.0)}},   {"Tensor::subtract", {x.subtract(y), x.sub(y)}},
      {"Tensor::not_equal", {x.not_equal(y), x.ne(y)}},  {"Tensor::erf", {x.erf(), td::erf(x)}},
      {"Tensor::ravel", {x.ravel(), x.reshape({-1})}},   {"Tensor::moveaxis", {x.moveaxis(0, 1), x.movedim(0, 1)}},
  };
  for (const auto& [name, pair] : same) {
    INFO(name);
    CHECK(pair.first.sizes() == pair.second.sizes());
    CHECK(pair.first.dtype() == pair.second.dtype());
    check_values(pair.first, values(pair.second), 0, name);
  }
  // ravel: x itself flattened where it is contiguous, else a contiguous copy (as PyTorch's).
  CHECK(td::ravel(x).is_alias_of(x));
  const Tensor strided = td::arange(6.0).slice(0, 0, std::nullopt, 2);
  Tensor copied = td::ravel(strided);
  CHECK(!copied.is_alias_of(strided));
  CHECK(copied.is_contiguous());
  copied.fill_(7);
  check_close(strided, {0, 2, 4}, 0, 0, "ravel's source, untouched");
  Tensor expanded = td::ravel(td::ones({1}).expand({3}));
  expanded.add_(1);  // a copy of its own, not three views of one element
  check_close(expanded, {2, 2, 2}, 0, 0, "ravel of an expanded tensor");
}

TEST_CASE("the small ops built on them give PyTorch's values", "[cpu]") {
  const Tensor x = f64({0.5, -0.25, 0.75, 0.1, -0.9, 0.3}).view({2, 3});
  const Tensor y = f64({1.5, 2.0, -0.5, 0.7, 1.2, 3.0}).view({2, 3});
  // PyTorch 2.15's results for these operands.
  check_close(td::dist(x, y), {4.436778110295804}, 1e-15, 0, "dist");
  check_close(x.dist(y, 1), {9.899999999999999}, 1e-15, 0, "dist p 1");
  check_close(td::dist(x, y, INFINITY), {2.7}, 1e-15, 0, "dist p inf");
  check_close(td::dist(x, y, 0), {6}, 0, 0, "dist p 0");
  check_close(td::pinverse(x),
              {0.7414187643020592, -0.2974828375286039, 0.40732265446224264, -1.2128146453089246, 0.9748283752860414,
               -0.20594965675057225},
              1e-13, 1e-15, "pinverse");
  check_close(f64({1.0, 0.0, 0.0, 1e-10}).view({2, 2}).pinverse(1e-5), {1, 0, 0, 0}, 0, 0, "pinverse's rcond");
  check_close(td::nuclear_norm(x), {1.8064259049043359}, 1e-14, 0, "nuclear_norm");
  check_close(td::nuclear_norm(x.unsqueeze(0).expand({2, 2, 3}), {1, 2}), {1.8064259049043359, 1.8064259049043359},
              1e-14, 0, "nuclear_norm over dims");
  check_close(td::frobenius_norm(x, {0, 1}), {1.3360389215887387}, 1e-15, 0, "frobenius_norm");
  check_error([] { td::frobenius_norm(td::ones({2, 2, 2}), {0, 1, 2}); }, {"frobenius_norm", "at most 2 dims", "3"});
  check_close(td::frobenius_norm(x, {1}), {0.9354143466934853, 0.9539392014169457}, 1e-15, 0, "frobenius_norm of rows");
  check_close(td::rsub(x, y, 2), {0.5, 2.5, -2.0, 0.49999999999999994, 3.0, 2.4}, 0, 0, "rsub");
  const Tensor rsub_float = td::rsub(i64({1, 2}), 2.5);
  CHECK(rsub_float.dtype() == td::kFloat32);
  check_close(rsub_float, {1.5, 0.5}, 0, 0, "rsub of an integer tensor from a float");
  const Tensor rsub_int = td::rsub(i64({1, 2}), 3, 2);
  CHECK(rsub_int.dtype() == td::kInt64);
  check_close(rsub_int, {1, -1}, 0, 0, "rsub of integers with alpha");
  // sub's checks, as PyTorch's: a floating alpha with integers, bool operands.
  check_error([] { td::rsub(i64({1, 2}), 3, 2.5); }, {"alpha"});
  check_error([] { td::rsub(td::tensor({true}), 1); }, {"bool"});
  check_error([] { td::rsub(f64({1, 2}), true); }, {"rsub", "bool"});
  const Tensor flat = td::diagflat(i64({1, 2, 3, 4}).view({2, 2}), 1);
  CHECK(flat.sizes() == Shape{5, 5});
  check_close(flat, {0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0}, 0, 0, "diagflat");
  CHECK(td::broadcast_shapes({Shape{3, 1}, Shape{1, 4}, Shape{2, 1, 1}}) == Shape{2, 3, 4});
  for (const Tensor& t : td::broadcast_tensors({td::ones({3, 1}), td::ones({4}), td::ones({2, 1, 1})})) {
    CHECK(t.sizes() == Shape{2, 3, 4});
  }
  check_error([] { td::broadcast_shapes({Shape{3}, Shape{4}}); }, {"broadcast_shapes", "[3]", "[4]"});
  CHECK(!td::is_nonzero(f64({0})));
  CHECK(td::tensor(1.5).is_nonzero());
  CHECK(td::is_nonzero(td::tensor({true}).view({1, 1})));
  check_error([] { td::is_nonzero(f64({})); }, {"is_nonzero", "no values", "ambiguous"});
  check_error([] { td::is_nonzero(f64({1, 2})); }, {"is_nonzero", "more than one value", "ambiguous"});
  CHECK(td::is_same_size(x, y));
  CHECK(!x.is_same_size(y.t()));
  CHECK(!td::is_signed(i64({1}).to(td::kUInt8)));
  CHECK(!td::tensor({true}).is_signed());
  CHECK(x.is_signed());
  CHECK(values(td::isreal(x)) == std::vector<double>(6, 1.0));
  CHECK(td::isreal(x).dtype() == td::kBool);
  td::manual_seed(3);
  const Tensor drawn = td::randint_like(i64({0, 0, 0, 0, 0, 0, 0, 0}).view({2, 4}), 5, 9);
  CHECK(drawn.sizes() == Shape{2, 4});
  CHECK(drawn.dtype() == td::kInt64);
  for (double v : values(drawn)) CHECK((v >= 5 && v < 9));
  td::manual_seed(3);
  CHECK(values(drawn) == values(td::randint(5, 9, {2, 4}, td::kInt64)));
  CHECK(td::randint_like(x, 3).dtype() == td::kFloat64);
}

TEST_CASE("the composed ops' in-place forms write their result, with the gradient of the op", "[cpu]") {
  const Tensor x = f64({0.5, -0.25, 0.75, 0.1});
  using Write = std::function<Tensor&(Tensor&)>;
  using Op = std::function<Tensor(const Tensor&)>;
  const std::vector<std::tuple<std::string, Write, Op>> forms = {
      {"square_", [](Tensor& t) -> Tensor& { return t.square_(); }, [](const Tensor& t) { return td::square(t); }},
      {"sinc_", [](Tensor& t) -> Tensor& { return t.sinc_(); }, [](const Tensor& t) { return td::sinc(t); }},
      {"deg2rad_", [](Tensor& t) -> Tensor& { return t.deg2rad_(); }, [](const Tensor& t) { return td::deg2rad(t); }},
      {"rad2deg_", [](Tensor& t) -> Tensor& { return t.rad2deg_(); }, [](const Tensor& t) { return td::rad2deg(t); }},
      {"logit_", [](Tensor& t) -> Tensor& { return t.abs_().logit_(0.05); },
       [](const Tensor& t) { return td::logit(t.abs(), 0.05); }},
      {"xlogy_", [](Tensor& t) -> Tensor& { return t.xlogy_(f64({2, 3, 0.5, 4})); },
       [](const Tensor& t) { return td::xlogy(t, f64({2, 3, 0.5, 4})); }},
      {"xlogy_ by a number", [](Tensor& t) -> Tensor& { return t.xlogy_(3.0); },
       [](const Tensor& t) { return td::xlogy(t, 3.0); }},
      {"ldexp_", [](Tensor& t) -> Tensor& { return t.ldexp_(i64({1, 2, -1, 0})); },
       [](const Tensor& t) { return td::ldexp(t, i64({1, 2, -1, 0})); }},
      {"clamp_min_", [](Tensor& t) -> Tensor& { return t.clamp_min_(0.2); },
       [](const Tensor& t) { return t.clamp_min(0.2); }},
      {"clamp_max_", [](Tensor& t) -> Tensor& { return t.clamp_max_(0.2); },
       [](const Tensor& t) { return t.clamp_max(0.2); }},
      {"clip_", [](Tensor& t) -> Tensor& { return t.clip_(-0.1, 0.6); }, [](const Tensor& t) { return t.clip(-0.1, 0.6); }},
      {"erf_", [](Tensor& t) -> Tensor& { return t.erf_(); }, [](const Tensor& t) { return td::erf(t); }},
      {"arccos_", [](Tensor& t) -> Tensor& { return t.arccos_(); }, [](const Tensor& t) { return td::acos(t); }},
      {"fix_", [](Tensor& t) -> Tensor& { return t.mul_(7.0).fix_(); }, [](const Tensor& t) { return (t * 7.0).trunc(); }},
  };
  const Tensor w = f64({1.0, -2.0, 0.5, 3.0});
  for (const auto& [name, write, op] : forms) {
    INFO(name);
    // On a non-leaf, as PyTorch allows: the value and the gradient of the out-of-place op.
    const Tensor leaf = x.clone().requires_grad_(true);
    Tensor t = leaf * 1;
    Tensor& written = write(t);
    CHECK(&written == &t);
    check_values(t, values(op(x)), 1e-15, name);
    (t * w).sum().backward();
    const Tensor reference_leaf = x.clone().requires_grad_(true);
    (op(reference_leaf) * w).sum().backward();
    check_values(leaf.grad(), values(reference_leaf.grad()), 1e-15, name + " gradient");
  }
  // 16-bit sinc in float32, rounded once, as PyTorch's (PyTorch 2.15's bfloat16 and float16 values).
  Tensor half_turns = f64({2, 3, 0.5, -1.25, 0}).to(td::kBFloat16);
  half_turns.sinc_();
  check_values(half_turns, {2.782326191663742e-08, -2.5320332497358322e-09, 0.63671875, -0.1796875, 1.0}, 0,
               "bfloat16 sinc_");
  check_values(td::sinc(f64({2, 3, 0.5, -1.25, 0}).to(td::kFloat16)), {0.0, -0.0, 0.63671875, -0.1800537109375, 1.0},
               0, "float16 sinc");
  // A floating result is refused by an integer tensor (as PyTorch's), which stays as it was.
  Tensor integers = i64({1, 2});
  const Snapshot before(integers);
  check_error([&] { integers.sinc_(); }, {"sinc_", "result type float32", "can't be cast", "int64"});
  check_error([&] { integers.deg2rad_(); }, {"deg2rad_", "float32", "int64"});
  before.check_unchanged(integers);
  Tensor squares = i64({1, -3});
  squares.square_();  // an integer result stays
  check_close(squares, {1, 9}, 0, 0, "square_ of integers");
  check_error([&] { Tensor row = f64({1, 2}); row.xlogy_(f64({1, 2, 3, 4}).view({2, 2})); },
              {"xlogy_", "output with shape [2]", "[2, 2]"});
}
