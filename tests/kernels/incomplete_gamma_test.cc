// The regularized incomplete gamma functions: special::gammainc and gammaincc, igamma and igammac,
// the Tensor methods and their in-place forms. Values against mpmath at 60 digits (the table is
// printed by make_incomplete_gamma_table.py), PyTorch 2.15's edges, dtypes, broadcasting, the
// gradient in x (standard_gamma_test.cc checks the one in a) and the errors.
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

struct Row {
  double a, x, p, q;
};

// mpmath's P(a, x) and Q(a, x). PyTorch 2.15 is off at some of them, where tandem is not: by 4e-10
// at (100, 100) and 1e-10 at (1000, 990) and (1e4, 1.02e4), by 8e-5 in Q at a = 1e-12 and a factor
// 3.6 at a = 1e-300 (Q(1e-300, 1) is a E1(1) = 2.19e-301, it gives 7.97e-301), by 5% in P at
// (1.9e7, 1.8911e7). From a = 1e7 near x = a, tandem takes Temme's expansion too (the last rows).
const std::vector<Row> kTable = {
      {0.5, 0.2, 0.47291074313446193, 0.52708925686553807},
      {1.0, 1.0, 0.63212055882855768, 0.36787944117144232},
      {2.0, 3.0, 0.80085172652854423, 0.19914827347145577},
      {3.0, 4.0, 0.76189669444645566, 0.23810330555354434},
      {20.0, 25.0, 0.86642516591434959, 0.13357483408565041},
      {20.0, 15.0, 0.12478121503252482, 0.87521878496747518},
      {100.0, 100.0, 0.51329879827914866, 0.48670120172085134},
      {100.0, 500.0, 1.0, 1.5008794119250894e-106},
      {10000.0, 9000.0, 2.073299202433928e-25, 1.0},
      {0.01, 1.5, 0.99898645697750469, 0.0010135430224953093},
      {0.049, 0.7, 0.98102149235649173, 0.01897850764350827},
      {0.05, 0.05, 0.88224356388566806, 0.11775643611433194},
      {0.999, 1.998, 0.86461487053372387, 0.13538512946627613},
      {9.99, 11.0, 0.660645744238932, 0.339354255761068},
      {10.0, 10.0, 0.54207028552814779, 0.45792971447185221},
      {0.3, 50.0, 1.0, 4.1131434238066614e-24},
      {50.0, 0.3, 1.7589821950329792e-91, 1.0},
      {1000.0, 990.0, 0.37952137853796394, 0.62047862146203606},
      {10000.0, 10200.0, 0.9767126778664012, 0.023287322133598804},
      {2.5, 700.0, 1.0, 1.3765875143943704e-300},
      {200.0, 20.0, 4.6635017890786538e-124, 1.0},
      {1e-05, 1e-05, 0.99989064869904367, 0.00010935130095632986},
      {1e-300, 1.0, 1.0, 2.1938393439552028e-301},
      {1.0022753076319726e-12, 0.9441575901985617, 0.99999999999975832, 2.4167892352985336e-13},
      {16.45157631906217, 2.4334600903080056e-12, 1.1534168381839151e-205, 1.0},
      {1000000.0, 1000010.0, 0.50412231679690957, 0.49587768320309043},
      {1000000.0, 997000.0, 0.0013381041673135997, 0.9986618958326864},
      {302463.0625, 322070.7528540939, 1.0, 2.5672292850668217e-267},
      {18938782.343949243, 18911335.467490602, 1.3961999315392654e-10, 0.99999999986038001},
      {7.5, 1e-40, 7.1253454391645655e-305, 1.0},
      {100000000.0, 100000000.0, 0.50001329807601412, 0.49998670192398588},
      {30000000.0, 29900000.0, 6.2303876936874268e-75, 1.0},
      {500000000.0, 500030000.0, 0.91014181836330047, 0.089858181636699531},
      {1.27e-55, 0.7775, 1.0, 4.1092254870339064e-56},
      {1e-300, 0.5, 1.0, 5.5977359477616083e-301},
};

std::vector<double> column(double Row::*field) {
  std::vector<double> out;
  for (const Row& row : kTable) out.push_back(row.*field);
  return out;
}

}  // namespace

TEST_CASE("gammainc and gammaincc equal mpmath's to 1e-12 from a = 1e-300 to 5e8, both tails too", "[cpu]") {
  const Tensor a = f64(column(&Row::a)), x = f64(column(&Row::x));
  // Relative: the tails reach 1e-305. Over random sweeps against quadruple precision the largest error
  // was 4.5e-13, in tails near 1e-268, where the exponent's rounding is a few ulps of 600.
  check_close(td::special::gammainc(a, x), column(&Row::p), 5e-12, 0, "gammainc");
  check_close(td::special::gammaincc(a, x), column(&Row::q), 5e-12, 0, "gammaincc");
  check_close(td::igamma(a, x), column(&Row::p), 5e-12, 0, "igamma");
  check_close(td::igammac(a, x), column(&Row::q), 5e-12, 0, "igammac");
  check_close(a.igamma(x), column(&Row::p), 5e-12, 0, "Tensor::igamma");
  check_close(a.igammac(x), column(&Row::q), 5e-12, 0, "Tensor::igammac");
}

TEST_CASE("gammainc and gammaincc at zeros, infinities, negative and NaN operands as PyTorch's", "[cpu]") {
  // PyTorch 2.15's grid: a NaN operand gives NaN, except where the other settles it (x = 0, x = inf, a = inf).
  const Tensor a = f64({0, 0, 0, -1, 1, 1, 1, 1, kInf, kInf, 2, kNaN, -0.0, 2, kNaN, kNaN, kInf, 0, kNaN, -1});
  const Tensor x = f64({0, 1, kInf, 1, -1, 0, -0.0, kInf, 1, kInf, kNaN, 1, 1, 1e300, 0, kInf, kNaN, kNaN, -1, kNaN});
  check_close(td::special::gammainc(a, x),
              {kNaN, 1, 1, kNaN, kNaN, 0, 0, 1, 0, kNaN, kNaN, kNaN, 1, 1, 0, 1, 0, kNaN, kNaN, kNaN}, 0, 0, "gammainc");
  check_close(td::special::gammaincc(a, x),
              {kNaN, 0, 0, kNaN, kNaN, 1, 1, 0, 1, kNaN, kNaN, kNaN, 0, 0, 1, 0, 1, kNaN, kNaN, kNaN}, 0, 0, "gammaincc");
  // Never outside [0, 1], where a series' rounding would put P just above 1 (PyTorch gives
  // 1.0000000000000238 at (1e-300, 1)), nor NaN at x = a beyond 2^53 (the continued fraction's x + 1 - a).
  const Tensor p = td::special::gammainc(f64({1e-300, 1.27e-55, 4.2e-18, 1e16, 1e300}), f64({1, 0.7775, 0.741, 1e16, 1e300}));
  CHECK(td::le(p, 1).all().item<bool>());
  check_close(p.slice(0, 3, 5), {0.5000000013298076, 0.5}, 1e-15, 0, "at x = a past 2^53");
}

TEST_CASE("gammainc's dtypes: each floating dtype, promotion, broadcasting; integers alone refuse", "[cpu]") {
  const std::vector<double> a = {0.5, 2, 30}, x = {0.2, 3, 25};
  const std::vector<double> p = {0.47291074313446193, 0.80085172652854423, 0.18210391597745511};
  for (td::DType dtype : {td::kFloat32, td::kFloat16, td::kBFloat16}) {
    INFO(dtype);
    const Tensor got = td::special::gammainc(td::tensor(a, dtype), td::tensor(x, dtype));
    REQUIRE(got.dtype() == dtype);
    // Computed in double from the rounded operands, rounded once: a few of the dtype's ulps of P at
    // the exact operands, mpmath's (PyTorch 2.15: 0.4729004, 0.8007813, 0.1821289 in float16; in
    // float64 it is 1.2e-9 off at (30, 25)).
    check_close(got, p, td::testing::rtol_for(dtype), 0, "each dtype");
  }
  CHECK(td::special::gammainc(td::tensor(a, td::kFloat32), td::tensor(x, td::kFloat64)).dtype() == td::kFloat64);
  CHECK(td::special::gammainc(td::tensor(a, td::kFloat32), td::full({}, 2.0, td::kFloat64)).dtype() == td::kFloat32);
  CHECK(td::special::gammainc(td::tensor({1, 2}), td::tensor(x, td::kFloat32).slice(0, 0, 2)).dtype() ==
        td::kFloat32);
  const Tensor grid = td::special::gammainc(f64({2, 3}).view({2, 1}), f64({1, 2, 3}));
  REQUIRE(grid.sizes() == td::Shape{2, 3});
  check_close(grid,
              {0.26424111765711533, 0.59399415029016189, 0.80085172652854423, 0.080301397071394197,
               0.32332358381693654, 0.57680991887315657},
              1e-14, 0, "broadcast");
  const Tensor ia = td::tensor({1, 2}), ix = td::tensor({1, 3});
  check_error([&] { td::special::gammainc(ia, ix); }, {"igamma", "floating", "int64"});
  check_error([&] { td::special::gammaincc(ia, ix); }, {"igammac", "floating", "int64"});
}

TEST_CASE("gammainc's gradient in x is x^(a-1) e^-x / Gamma(a), gammaincc's its negative; in a it refuses",
          "[cpu]") {
  const Tensor a = f64({2.0, 0.5, 1.0, 30.0, 1.0});
  // PyTorch 2.15's values, NaN at x = 0 for a = 1 included (its formula takes (a - 1) log x there).
  const std::vector<double> want = {0.14936120510359185, 1.0328830949345564, kNaN, 0.05449534215614189,
                                    0.1353352832366127};
  Tensor x = f64({3.0, 0.2, 0.0, 25.0, 2.0}).requires_grad_();
  td::special::gammainc(a, x).sum().backward();
  check_close(x.grad(), want, 1e-14, 0, "gammainc");
  Tensor xc = f64({3.0, 0.2, 0.0, 25.0, 2.0}).requires_grad_();
  Tensor y = td::special::gammaincc(a, xc);
  CHECK(y.grad_fn()->name() == "IgammacBackward0");
  y.sum().backward();
  std::vector<double> negated;
  for (double v : want) negated.push_back(-v);
  check_close(xc.grad(), negated, 1e-14, 0, "gammaincc");

  // The second derivative, through the recorded first (PyTorch's values).
  Tensor x2 = f64({3.0, 0.2, 25.0}).requires_grad_();
  const Tensor first =
      td::autograd::grad({td::special::gammainc(f64({2.0, 0.5, 30.0}), x2).sum()}, {x2}, {}, true, true)[0];
  check_close(td::autograd::grad({first.sum()}, {x2})[0], {-0.0995741367357279, -3.6150908322709476, 0.008719254744982696},
              1e-13, 0, "second derivative");
}

TEST_CASE("igamma_ and igammac_ write the out-of-place values; an integer self refuses, unchanged", "[cpu]") {
  Tensor a = f64({0.5, 2.0, 30.0});
  const Tensor x = f64({0.2, 3.0, 25.0});
  const Tensor p = td::igamma(a, x), q = td::igammac(a, x);
  Tensor b = a.clone();
  a.igamma_(x);
  b.igammac_(x);
  check_close(a, values(p), 0, 0, "igamma_");
  check_close(b, values(q), 0, 0, "igammac_");
  // In place in a leaf's copy, the gradient flows to x through the write.
  Tensor xg = f64({0.2, 3.0, 25.0}).requires_grad_();
  Tensor self = f64({0.5, 2.0, 30.0});
  self.igamma_(xg);
  self.sum().backward();
  check_close(xg.grad(), {1.0328830949345564, 0.14936120510359185, 0.05449534215614189}, 1e-14, 0, "igamma_ gradient");

  Tensor integer = td::tensor({1, 2, 3});
  const Snapshot before(integer);
  check_error([&] { integer.igamma_(x); }, {"igamma_", "can't be cast", "int64"});
  check_error([&] { integer.igammac_(x); }, {"igammac_", "can't be cast", "int64"});
  before.check_unchanged(integer);
  Tensor small = f64({1.0});
  const Snapshot small_before(small);
  check_error([&] { small.igamma_(x); }, {"igamma_", "shape"});
  small_before.check_unchanged(small);
}

TEST_CASE("gammainc refuses undefined operands and shapes that do not broadcast, naming igamma", "[cpu]") {
  const Tensor x = f64({1.0, 2.0});
  check_error([&] { td::special::gammainc(Tensor(), x); }, {"igamma"});
  check_error([&] { td::special::gammaincc(x, Tensor()); }, {"igammac"});
  check_error([&] { td::special::gammainc(x, f64({1.0, 2.0, 3.0})); }, {"igamma", "[2]", "[3]"});
}
