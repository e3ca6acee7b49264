// The element-wise math beyond arithmetic: rounded division and remainders, atan2, hypot,
// copysign, logaddexp, fmax/fmin, the inverse trigonometric and hyperbolic functions, erfinv,
// bitwise and logical ops, tests of values, and composed formulas (nan_to_num, xlogy, lerp, ...).
// Values at signed zeros, infinities and NaN, dtypes, gradients and errors against PyTorch 2.15.
#include <cmath>
#include <limits>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::check_values;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<bool> bools(const Tensor& t) {
  REQUIRE(t.dtype() == td::kBool);
  std::vector<bool> out;
  for (double v : values(t)) out.push_back(v != 0);
  return out;
}

Tensor f64(std::vector<double> v) { return td::tensor(v, td::kFloat64); }

}  // namespace

TEST_CASE(
    "rounded division, remainders, atan2, hypot, copysign, logaddexp, fmax and fmin at signed divisors, "
    "zeros, infinities and NaN, as PyTorch's",
    "[cpu]") {
  const Tensor a = f64({5.5, -5.5, 5.5, -5.5, -0.0, 0.0, 7.0, 1e20, kInf, 3.0, kNaN, 4.0});
  const Tensor b = f64({2.0, 2.0, -2.0, -2.0, 1.0, -1.0, 0.0, 3.0, 2.0, kInf, 1.0, -0.0});
  check_values(td::remainder(a, b), {1.5, 0.5, -0.5, -1.5, -0.0, 0.0, kNaN, 1.0, kNaN, 3.0, kNaN, kNaN}, 0,
               "remainder");
  check_values(td::fmod(a, b), {1.5, -1.5, 1.5, -1.5, -0.0, 0.0, kNaN, 1.0, kNaN, 3.0, kNaN, kNaN}, 0, "fmod");
  const std::vector<double> floors = {2.0,  -3.0, -3.0, 2.0,  -0.0, -0.0, kInf, 3.333333333333333e+19,
                                      kNaN, 0.0,  kNaN, -kInf};
  check_values(td::floor_divide(a, b), floors, 0, "floor_divide");
  check_values(td::div(a, b, "floor"), floors, 0, "div floor");
  check_values(td::div(a, b, "trunc"),
               {2.0, -2.0, -2.0, 2.0, -0.0, -0.0, kInf, 3.333333333333333e+19, kInf, 0.0, kNaN, -kInf}, 0, "div trunc");
  check_values(
      td::atan2(a, b),
      {1.2220253232109897, -1.2220253232109897, 1.9195673303788037, -1.9195673303788037, -0.0, 3.141592653589793,
       1.5707963267948966, 1.5707963267948966, 1.5707963267948966, 0.0, kNaN, 1.5707963267948966},
      1e-15, "atan2");
  check_values(td::hypot(a, b),
               {5.852349955359813, 5.852349955359813, 5.852349955359813, 5.852349955359813, 1.0, 1.0, 7.0, 1e+20, kInf,
                kInf, kNaN, 4.0},
               1e-15, "hypot");
  check_values(td::copysign(a, b), {5.5, 5.5, -5.5, -5.5, 0.0, -0.0, 7.0, 1e+20, kInf, 3.0, kNaN, -4.0}, 0, "copysign");
  check_values(td::logaddexp(a, b),
               {5.529750418272621, 2.0005529314753607, 5.500552931475361, -1.9702495817273795, 1.3132616875182228,
                0.31326168751822286, 7.000911466453775, 1e+20, kInf, kInf, kNaN, 4.0181499279178094},
               1e-15, "logaddexp");
  check_values(td::fmax(a, b), {5.5, 2.0, 5.5, -2.0, 1.0, 0.0, 7.0, 1e+20, kInf, kInf, 1.0, 4.0}, 0, "fmax");
  check_values(td::fmin(a, b), {2.0, -5.5, -2.0, -5.5, -0.0, -1.0, 0.0, 3.0, 2.0, 3.0, 1.0, -0.0}, 0, "fmin");
  check_values(td::fmax(f64({kNaN}), f64({kNaN})), {kNaN}, 0, "fmax of two NaNs");
  // Equal infinities: their difference would be NaN.
  check_values(td::logaddexp(td::tensor({kInf, -kInf, -kInf, 1000.0}), td::tensor({kInf, -kInf, 1.0, 1000.0})),
               {kInf, -kInf, 1.0, 1000.6931762695312}, 0, "logaddexp of infinities, float32");
  // Numbers as divisors, and the dtypes: integers stay integers, atan2 and copysign promote them.
  check_values(td::remainder(td::tensor({7, -7, 3}), 2.5), {2.0, 0.5, 0.5}, 0, "remainder by a float number");
  CHECK(td::remainder(td::tensor({7, -7, 3}), 2.5).dtype() == td::kFloat32);
  CHECK(td::atan2(td::tensor({1, 2}), td::tensor({3, 4})).dtype() == td::kFloat32);
  CHECK(td::copysign(td::tensor({true, false}), td::tensor({true, true})).dtype() == td::kFloat32);
  CHECK(td::fmax(td::tensor({true, false}), td::tensor({false, false})).dtype() == td::kBool);
  check_values(td::fmod(td::tensor({5.5, -5.5}, td::kFloat16), td::tensor({2.0, 2.0}, td::kFloat16)), {1.5, -1.5}, 0,
               "fmod float16");
}

TEST_CASE("integer division rounds, wraps and refuses a zero divisor as PyTorch's", "[cpu]") {
  const Tensor a = td::tensor({7, -7, 7, -7, 0, -9, 5});
  const Tensor b = td::tensor({2, 2, -2, -2, 3, -1, 5});
  CHECK(values(td::remainder(a, b)) == std::vector<double>{1, 1, -1, -1, 0, 0, 0});
  CHECK(values(td::fmod(a, b)) == std::vector<double>{1, -1, 1, -1, 0, 0, 0});
  CHECK(values(td::floor_divide(a, b)) == std::vector<double>{3, -4, -4, 3, 0, 9, 1});
  CHECK(values(td::div(a, b, "trunc")) == std::vector<double>{3, -3, -3, 3, 0, 9, 1});
  CHECK(td::floor_divide(a, b).dtype() == td::kInt64);
  CHECK(values(td::floor_divide(a, 2)) == std::vector<double>{3, -4, 3, -4, 0, -5, 2});
  const Tensor u = td::tensor({200, 7, 255}).to(td::kUInt8), v = td::tensor({7, 200, 2}).to(td::kUInt8);
  CHECK(values(td::remainder(u, v)) == std::vector<double>{4, 7, 1});
  CHECK(values(td::floor_divide(u, v)) == std::vector<double>{28, 0, 127});
  CHECK(values(td::fmod(td::tensor({-7, 7}, td::kInt32), td::tensor({3, -3}, td::kInt32))) ==
        std::vector<double>{-1, 1});
  // The most negative int64 divided by -1 overflows; it wraps to itself, as its negation does (PyTorch's
  // CPU kernel traps on it).
  const Tensor lowest = td::full({1}, std::numeric_limits<int64_t>::min(), td::kInt64);
  CHECK(td::floor_divide(lowest, -1).item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(td::div(lowest, -1, "trunc").item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(td::remainder(lowest, -1).item<int64_t>() == 0);

  Tensor x = td::tensor({7, 8, 9});
  const Tensor zero_inside = td::tensor({1, 0, 2});
  Snapshot before(x);
  for (const char* op : {"remainder", "fmod", "floor_divide", "div"}) {
    check_error(
        [&] {
          const std::string name = op;
          if (name == "remainder") x.remainder_(zero_inside);
          if (name == "fmod") x.fmod_(zero_inside);
          if (name == "floor_divide") x.floor_divide_(zero_inside);
          if (name == "div") x.div_(zero_inside, "trunc");
        },
        {op, "division by zero"});
    before.check_unchanged(x);
  }
  check_error([&] { td::remainder(x, 0); }, {"remainder", "division by zero"});
  check_values(td::floor_divide(td::tensor({1.0, -1.0}), 0.0), {kInf, -kInf}, 0,
               "float division by zero is not refused");
  check_error([&] { td::remainder(td::tensor({true}), td::tensor({true})); }, {"remainder", "bool"});
  check_error([&] { td::hypot(td::tensor({1}), td::tensor({2})); }, {"hypot", "floating", "int64"});
  check_error([&] { td::logaddexp(td::tensor({1}), td::tensor({2})); }, {"logaddexp", "floating", "int64"});
  check_error([&] { td::div(x, x, "round"); }, {"div", "rounding_mode", "\"trunc\" or \"floor\"", "round"});
  Tensor f = td::tensor({1.5, 2.5});
  Snapshot before_f(f);
  check_error([&] { f.remainder_(td::tensor({1.0, 2.0}, td::kFloat64).view({2, 1})); }, {"remainder_", "[2]"});
  before_f.check_unchanged(f);
  check_error([&] { x.fmod_(td::tensor({1.5, 2.0, 1.0})); }, {"fmod_", "float32", "int64"});
  before.check_unchanged(x);
}

TEST_CASE("trigonometric, hyperbolic, logarithmic and error functions at zeros, infinities and NaN, as PyTorch's",
          "[cpu]") {
  const Tensor s = f64({0.0, -0.0, kInf, -kInf, kNaN, 1.0, -2.5});
  struct Expected {
    const char* name;
    Tensor (*op)(const Tensor&);
    std::vector<double> want;
  };
  const Expected cases[] = {
      {"tan", td::tan, {0.0, -0.0, kNaN, kNaN, kNaN, 1.5574077246549023, 0.7470222972386603}},
      {"asin", td::asin, {0.0, -0.0, kNaN, kNaN, kNaN, 1.5707963267948966, kNaN}},
      {"acos", td::acos, {1.5707963267948966, 1.5707963267948966, kNaN, kNaN, kNaN, 0.0, kNaN}},
      {"atan",
       td::atan,
       {0.0, -0.0, 1.5707963267948966, -1.5707963267948966, kNaN, 0.7853981633974483, -1.1902899496825317}},
      {"sinh", td::sinh, {0.0, -0.0, kInf, -kInf, kNaN, 1.1752011936438014, -6.0502044810397875}},
      {"cosh", td::cosh, {1.0, 1.0, kInf, kInf, kNaN, 1.5430806348152437, 6.132289479663686}},
      {"asinh", td::asinh, {0.0, -0.0, kInf, -kInf, kNaN, 0.881373587019543, -1.6472311463710958}},
      {"acosh", td::acosh, {kNaN, kNaN, kInf, kNaN, kNaN, 0.0, kNaN}},
      {"atanh", td::atanh, {0.0, -0.0, kNaN, kNaN, kNaN, kInf, kNaN}},
      {"log2", td::log2, {-kInf, -kInf, kInf, kNaN, kNaN, 0.0, kNaN}},
      {"log10", td::log10, {-kInf, -kInf, kInf, kNaN, kNaN, 0.0, kNaN}},
      {"exp2", td::exp2, {1.0, 1.0, kInf, 0.0, kNaN, 2.0, 0.1767766952966369}},
      {"erfc", td::erfc, {1.0, 1.0, 0.0, 2.0, kNaN, 0.15729920705028513, 1.999593047982555}},
  };
  for (const Expected& c : cases) check_values(c.op(s), c.want, 1e-15, c.name);
  check_values(td::erfinv(f64({1.0, -1.0, 1.5, kNaN, -0.0})), {kInf, -kInf, kNaN, kNaN, -0.0}, 0, "erfinv's ends");
  const std::vector<double> near_ends = {-0.999, -0.5, -0.1, 0.0, 0.3, 0.9, 0.999999};
  check_values(td::erfinv(f64(near_ends)),
               {-2.3267537655135246, -0.4769362762044699, -0.08885599049425769, 0.0, 0.2724627147267543,
                1.1630871536766743, 3.458910737275499},
               4e-16, "erfinv float64");
  check_values(td::erfinv(td::tensor(near_ends, td::kFloat32)),
               {-2.326756238937378, -0.4769362807273865, -0.08885598927736282, 0.0, 0.27246272563934326,
                1.1630871295928955, 3.4570746421813965},
               3e-7, "erfinv float32");
  // Integer and bool inputs give float32.
  CHECK(td::tan(td::tensor({1, 2})).dtype() == td::kFloat32);
  check_values(td::atanh(td::tensor({true, false})), {kInf, 0.0}, 0, "atanh of bool");
  check_values(td::exp2(td::tensor({7, -7, 3})), {128, 0.0078125, 8}, 0, "exp2 of int64");
}

TEST_CASE("bitwise and logical ops: integers and bool, each element's truth, PyTorch's promotion", "[cpu]") {
  const Tensor a = td::tensor({12, 10, -1}), b = td::tensor({10, 6, 7});
  CHECK(values(td::bitwise_and(a, b)) == std::vector<double>{8, 2, 7});
  CHECK(values(td::bitwise_or(a, b)) == std::vector<double>{14, 14, -1});
  CHECK(values(td::bitwise_xor(a, b)) == std::vector<double>{6, 12, -8});
  CHECK(values(td::bitwise_not(td::tensor({0, 5, -6}))) == std::vector<double>{-1, -6, 5});
  CHECK(values(td::bitwise_not(td::tensor({0, 5, 255}).to(td::kUInt8))) == std::vector<double>{255, 250, 0});
  CHECK(values(a.bitwise_and(3)) == std::vector<double>{0, 2, 3});
  const Tensor u8_or_bool = td::bitwise_or(td::tensor({1, 2}).to(td::kUInt8), td::tensor({true, false}));
  CHECK(u8_or_bool.dtype() == td::kUInt8);
  CHECK(values(u8_or_bool) == std::vector<double>{1, 2});
  CHECK(bools(td::bitwise_xor(td::tensor({true, false, true}), td::tensor({true, true, false}))) ==
        std::vector<bool>{false, true, true});
  CHECK(bools(td::bitwise_not(td::tensor({true, false}))) == std::vector<bool>{false, true});
  // Broadcast, in place.
  Tensor m = td::tensor({1, 2, 3, 4}).view({2, 2});
  m.bitwise_xor_(td::tensor({1, 1}));
  CHECK(values(m) == std::vector<double>{0, 3, 2, 5});
  check_error([] { td::bitwise_and(td::tensor({1.5}), td::tensor({1.0})); },
              {"bitwise_and", "integer or bool", "float32"});
  check_error([] { td::bitwise_not(td::tensor({1.5})); }, {"bitwise_not", "integer or bool", "float32"});
  // The operators.
  CHECK(values(a & b) == std::vector<double>{8, 2, 7});
  CHECK(values(a | 1) == std::vector<double>{13, 11, -1});
  CHECK(values(a ^ b) == std::vector<double>{6, 12, -8});
  CHECK(values(~a) == std::vector<double>{-13, -11, 0});
  Tensor c = a.clone();
  c &= 6;
  c |= td::tensor({1, 1, 1});
  c ^= 2;
  CHECK(values(c) == std::vector<double>{7, 1, 5});
}

TEST_CASE("bitwise shifts as PyTorch's: shifts past the width, negative shifts, wrapping, every integer dtype",
          "[cpu]") {
  // PyTorch 2.15's values.
  const Tensor a = td::tensor({-8, 5, 1});
  CHECK(values(a << 2) == std::vector<double>{-32, 20, 4});
  CHECK(values(a >> 1) == std::vector<double>{-4, 2, 0});
  CHECK(values(td::bitwise_left_shift(a, 63)) ==
        std::vector<double>{0, -9223372036854775808.0, -9223372036854775808.0});
  CHECK(values(td::bitwise_left_shift(a, 64)) == std::vector<double>{0, 0, 0});
  CHECK(values(td::bitwise_right_shift(a, 64)) == std::vector<double>{-1, 0, 0});
  CHECK(values(td::bitwise_left_shift(a, -1)) == std::vector<double>{0, 0, 0});
  CHECK(values(td::bitwise_right_shift(a, -1)) == std::vector<double>{-1, 0, 0});
  const Tensor u = td::tensor({200, 3}).to(td::kUInt8);
  CHECK(values(u << 1) == std::vector<double>{144, 6});
  CHECK(values(u >> 9) == std::vector<double>{0, 0});
  CHECK(values(td::bitwise_left_shift(u, td::tensor({9, 1}).to(td::kUInt8))) == std::vector<double>{0, 6});
  CHECK((u << 3).dtype() == td::kUInt8);
  const Tensor i = td::tensor({1, -1}).to(td::kInt32);
  CHECK(values(i << 31) == std::vector<double>{-2147483648.0, -2147483648.0});
  CHECK(values(i << 32) == std::vector<double>{0, 0});
  CHECK(values(i >> 40) == std::vector<double>{0, -1});
  // Promotion, the number first, broadcasting, in place.
  CHECK(td::bitwise_left_shift(i, td::tensor({1})).dtype() == td::kInt64);
  CHECK(values(td::bitwise_left_shift(5, td::tensor({1, 2}))) == std::vector<double>{10, 20});
  CHECK(values(td::bitwise_right_shift(-64, td::tensor({1, 70}))) == std::vector<double>{-32, -1});
  CHECK(values(td::tensor({1, 2}).view({2, 1}) << td::tensor({0, 1, 2})) == std::vector<double>{1, 2, 4, 2, 4, 8});
  Tensor t = td::tensor({1, 2});
  t.bitwise_left_shift_(3);
  CHECK(values(t) == std::vector<double>{8, 16});
  t >>= td::tensor({1, 2});
  CHECK(values(t) == std::vector<double>{4, 4});
  t <<= 1;
  CHECK(values(t) == std::vector<double>{8, 8});
  CHECK(values(a.bitwise_right_shift(td::tensor({1, 1, 1}))) == std::vector<double>{-4, 2, 0});
  // Floats and bool refuse, naming the op; a failed in-place shift leaves self as it was.
  check_error([] { td::bitwise_left_shift(td::tensor({1.5}), 2); }, {"bitwise_left_shift", "integer", "float32"});
  check_error([] { td::bitwise_right_shift(td::tensor({true}), td::tensor({true})); },
              {"bitwise_right_shift", "integer", "bool"});
  Tensor small = td::tensor({1, 2}).to(td::kInt32);
  const Snapshot before(small);
  check_error([&] { small.bitwise_left_shift_(td::tensor({1.0, 2.0})); }, {"bitwise_left_shift", "integer", "float32"});
  before.check_unchanged(small);

  const Tensor f = td::tensor({1.5, -2.0, 0.0, kNaN});
  const Tensor g = td::tensor({1.0, 0.0, 2.0, 0.0});
  CHECK(bools(td::logical_and(f, g)) == std::vector<bool>{true, false, false, false});
  CHECK(bools(td::logical_or(f, g)) == std::vector<bool>{true, true, true, true});
  CHECK(bools(td::logical_xor(f, g)) == std::vector<bool>{false, true, true, true});
  CHECK(bools(td::logical_not(f)) == std::vector<bool>{false, false, true, false});  // NaN is true
  CHECK(bools(td::logical_not(td::tensor({0, 3}))) == std::vector<bool>{true, false});
  CHECK(bools(td::logical_and(td::tensor({1, 0}).view({2, 1}), td::tensor({true, false}))) ==
        std::vector<bool>{true, false, false, false});
}

TEST_CASE("isnan, isinf, isposinf, isneginf, isfinite and signbit, on floats, integers and bool", "[cpu]") {
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    INFO(td::dtype_name(dtype));
    const Tensor x = td::tensor({0.0, -0.0, -1.0, kNaN, -kNaN, kInf, -kInf}, dtype);
    CHECK(bools(td::isnan(x)) == std::vector<bool>{false, false, false, true, true, false, false});
    CHECK(bools(td::isinf(x)) == std::vector<bool>{false, false, false, false, false, true, true});
    CHECK(bools(td::isposinf(x)) == std::vector<bool>{false, false, false, false, false, true, false});
    CHECK(bools(td::isneginf(x)) == std::vector<bool>{false, false, false, false, false, false, true});
    CHECK(bools(td::isfinite(x)) == std::vector<bool>{true, true, true, false, false, false, false});
    CHECK(bools(td::signbit(x)) == std::vector<bool>{false, true, true, false, true, false, true});
  }
  const Tensor ints = td::tensor({-3, 0, 4});
  CHECK(bools(ints.isnan()) == std::vector<bool>{false, false, false});
  CHECK(bools(ints.isinf()) == std::vector<bool>{false, false, false});
  CHECK(bools(ints.isfinite()) == std::vector<bool>{true, true, true});
  CHECK(bools(ints.signbit()) == std::vector<bool>{true, false, false});
  CHECK(bools(td::tensor({true}).signbit()) == std::vector<bool>{false});
  // A non-contiguous input.
  const Tensor t = td::tensor({1.0, kNaN, kInf, 2.0}).view({2, 2}).t();
  CHECK(bools(t.isfinite()) == std::vector<bool>{true, false, false, true});
}

TEST_CASE("nan_to_num, xlogy, lerp, addcmul, addcdiv, logit, square, deg2rad and isclose as PyTorch's", "[cpu]") {
  const Tensor specials = td::tensor({kNaN, kInf, -kInf, 1.5});
  check_values(td::nan_to_num(specials), {0.0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1.5}, 0,
               "nan_to_num float32");
  check_values(td::nan_to_num(specials.to(td::kFloat16)), {0.0, 65504.0, -65504.0, 1.5}, 0, "nan_to_num float16");
  check_values(specials.nan_to_num(2.0, 9.0, -9.0), {2.0, 9.0, -9.0, 1.5}, 0, "nan_to_num with values");
  Tensor in_place = specials.clone();
  in_place.nan_to_num_(2.0);
  check_values(in_place, {2.0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1.5}, 0, "nan_to_num_");
  CHECK(values(td::nan_to_num(td::tensor({1, 2}))) == std::vector<double>{1, 2});
  // Replacements beyond the dtype's range round to infinities, as a cast does.
  check_values(td::nan_to_num(specials.to(td::kFloat16), 1e6, 1e10, -1e10), {kInf, kInf, -kInf, 1.5}, 0,
               "nan_to_num float16 with values beyond its range");

  check_values(td::xlogy(td::tensor({0.0, 0.0, 2.0, 3.0, 0.0}), td::tensor({0.0, kNaN, 3.0, 0.0, -1.0})),
               {0.0, kNaN, 2.1972246170043945, -kInf, 0.0}, 1e-7, "xlogy");
  CHECK(td::xlogy(td::tensor({1, 2}), td::tensor({3, 4})).dtype() == td::kFloat32);
  check_values(td::xlogy(f64({2.0, 0.0}), 3.0), {2.1972245773362196, 0.0}, 1e-15, "xlogy by a number");

  const Tensor start = f64({1.3, -0.7, 2.2}), end = f64({2.0, 1.0, -1.0});
  check_values(td::lerp(start, end, f64({0.25, 0.75, -0.3})), {1.475, 0.575, 3.16}, 1e-15, "lerp");
  check_values(td::lerp(start, end, 0.7), {1.79, 0.48999999999999994, -0.03999999999999981}, 1e-15, "lerp by a number");
  check_values(td::addcdiv(start, end, f64({0.25, 0.75, -0.3}), 0.5), {5.3, -0.033333333333333326, 3.866666666666667},
               1e-15, "addcdiv");
  check_values(start.addcmul(end, end, -2), {-6.7, -2.7, 0.2}, 1e-14, "addcmul");
  Tensor ema = start.clone();
  ema.lerp_(end, 0.7);
  check_values(ema, {1.79, 0.48999999999999994, -0.03999999999999981}, 1e-15, "lerp_");
  check_values(td::logit(f64({0.0, 0.25, 0.9, 1.0}), 0.1),
               {-2.197224577336219, -1.0986122886681098, 2.1972245773362196, 2.1972245773362196}, 1e-15,
               "logit with eps");
  check_values(td::logit(f64({0.0, 1.0, 0.5})), {-kInf, kInf, 0.0}, 0, "logit at its ends");

  CHECK(td::square(td::tensor({true, false})).dtype() == td::kInt64);
  CHECK(values(td::square(td::tensor({-3, 4}, td::kInt32))) == std::vector<double>{9, 16});
  CHECK(td::square(td::tensor({-3, 4}, td::kInt32)).dtype() == td::kInt32);
  check_values(td::deg2rad(td::tensor({180, -90})), {3.1415927410125732, -1.5707963705062866}, 1e-7,
               "deg2rad of int64");
  check_values(td::rad2deg(f64({M_PI})), {180.0}, 1e-15, "rad2deg");

  CHECK(bools(td::isclose(td::tensor({1.0, 1.0, kNaN, kInf, 1e-9, 100.0}),
                          td::tensor({1.00001, 1.0001, kNaN, kInf, 0.0, 100.001}))) ==
        std::vector<bool>{false, false, false, true, true, true});
  CHECK(bools(td::isclose(td::tensor({kNaN}), td::tensor({kNaN}), 1e-5, 1e-8, true)) == std::vector<bool>{true});
  // An infinite gap is never within an infinite tolerance.
  CHECK(bools(td::isclose(td::tensor({1.0, -kInf, kInf}), td::tensor({kInf, kInf, kInf}))) ==
        std::vector<bool>{false, false, true});
  CHECK_FALSE(td::allclose(td::tensor({1.0}), td::tensor({kInf})));
  CHECK(bools(td::isclose(td::tensor({100, 100}), td::tensor({101, 100}), 0.02)) == std::vector<bool>{true, true});
  CHECK(td::allclose(td::tensor({1.0, 2.0}), td::tensor({1.0, 2.000001})));
  CHECK_FALSE(td::tensor({1.0, 2.0}).allclose(td::tensor({1.0, 2.1})));
  check_error([] { td::isclose(td::tensor({1.0}), td::tensor({1})); }, {"isclose", "float32", "int64"});
  check_error([] { td::isclose(td::tensor({1.0}), td::tensor({1.0}), -1); }, {"isclose", "non-negative"});
  check_error([] { td::lerp(td::tensor({1.0}), td::tensor({1.0}, td::kFloat64), 0.5); },
              {"lerp", "float32", "float64"});
  check_error([] { td::addcdiv(td::tensor({1}), td::tensor({1}), td::tensor({2})); }, {"addcdiv", "integer"});
}

TEST_CASE("gradients of the new element-wise ops equal PyTorch's", "[cpu]") {
  const Tensor w = f64({0.3, -0.2, 0.5});
  auto grads = [&](const std::function<Tensor(const Tensor&, const Tensor&)>& f, const Tensor& a0, const Tensor& b0) {
    Tensor a = a0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    (f(a, b) * w).sum().backward();
    return std::make_pair(a.grad(), b.grad());
  };
  const Tensor A = f64({1.3, -0.7, 2.2}), B = f64({0.4, -1.1, 0.9});
  struct BinaryGrad {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> f;
    std::vector<double> ga, gb;
  };
  const BinaryGrad binary[] = {
      {"remainder",
       [](const Tensor& a, const Tensor& b) { return td::remainder(a, b); },
       {0.3, -0.2, 0.5},
       {-0.9, 0.0, -1.0}},
      {"fmod", [](const Tensor& a, const Tensor& b) { return td::fmod(a, b); }, {0.3, -0.2, 0.5}, {-0.9, 0.0, -1.0}},
      {"atan2",
       [](const Tensor& a, const Tensor& b) { return td::atan2(a, b); },
       {0.06486486486486485, 0.12941176470588234, 0.07964601769911504},
       {-0.2108108108108108, -0.08235294117647057, -0.1946902654867257}},
      {"hypot",
       [](const Tensor& a, const Tensor& b) { return td::hypot(a, b); },
       {0.286733702616585, 0.10737509843863186, 0.46277347810283836},
       {0.08822575465125691, 0.16873229754642152, 0.18931642286025205}},
      {"copysign",
       [](const Tensor& a, const Tensor& b) { return td::copysign(a, b); },
       {0.3, -0.2, 0.5},
       {0.0, 0.0, 0.0}},
      {"logaddexp",
       [](const Tensor& a, const Tensor& b) { return td::logaddexp(a, b); },
       {0.21328485078750117, -0.11973753202249042, 0.3929174915212793},
       {0.0867151492124988, -0.0802624679775096, 0.10708250847872067}},
      {"fmax", [](const Tensor& a, const Tensor& b) { return td::fmax(a, b); }, {0.3, -0.2, 0.5}, {0.0, 0.0, 0.0}},
      {"fmin", [](const Tensor& a, const Tensor& b) { return td::fmin(a, b); }, {0.0, 0.0, 0.0}, {0.3, -0.2, 0.5}},
      {"xlogy",
       [](const Tensor& a, const Tensor& b) { return td::xlogy(a, b.abs()); },
       {-0.2748872195622465, -0.01906203596086499, -0.05268025782891314},
       {0.975, -0.12727272727272726, 1.2222222222222223}},
      {"floor_divide", [](const Tensor& a, const Tensor& b) { return td::floor_divide(a, b); }, {0, 0, 0}, {0, 0, 0}},
  };
  for (const BinaryGrad& c : binary) {
    auto [ga, gb] = grads(c.f, A, B);
    check_close(ga, c.ga, 1e-14, 1e-15, std::string(c.name) + " input");
    check_close(gb, c.gb, 1e-14, 1e-15, std::string(c.name) + " other");
  }
  struct UnaryGradCase {
    const char* name;
    Tensor (*op)(const Tensor&);
    std::vector<double> g;
  };
  const UnaryGradCase unary[] = {
      {"tan", td::tan, {0.3287066745967641, -0.2936086345055915, 1.030077779082378}},
      {"asin", td::asin, {0.31448545101657543, -0.25, 0.8333333333333335}},
      {"acos", td::acos, {-0.31448545101657543, 0.25, -0.8333333333333335}},
      {"atan", td::atan, {0.2752293577981651, -0.1470588235294118, 0.3048780487804878}},
      {"sinh", td::sinh, {0.31360155423865815, -0.23709304364845352, 0.6687174731524224}},
      {"cosh", td::cosh, {0.09135608803414277, 0.12733071642964824, 0.4440529910938115}},
      {"asinh", td::asinh, {0.2873478855663454, -0.17149858514250887, 0.39043440472151514}},
      {"atanh", td::atanh, {0.32967032967032966, -0.3125, 1.3888888888888893}},
      {"log2", td::log2, {1.4426950408889634, 0.48089834696298783, 0.9016844005556022}},
      {"log10", td::log10, {0.4342944819032518, 0.14476482730108395, 0.27143405118953234}},
      {"exp2", td::exp2, {0.25600928369164694, -0.09146131880787756, 0.6034196684835806}},
      {"erfc", td::erfc, {-0.3093782728856889, 0.15744868634285747, -0.29749289312873445}},
      {"erfinv", td::erfinv, {0.2863561076521648, -0.25257248562823686, 1.0072841909667944}},
  };
  const Tensor X = f64({0.3, -0.6, 0.8});
  for (const UnaryGradCase& c : unary) {
    Tensor x = X.clone().requires_grad_();
    (c.op(x) * w).sum().backward();
    check_close(x.grad(), c.g, 1e-14, 1e-15, c.name);
    // The in-place form records the same gradient.
    Tensor leaf = X.clone().requires_grad_();
    Tensor y = leaf * 1;
    if (std::string(c.name) == "tan") y.tan_();
    if (std::string(c.name) == "erfinv") y.erfinv_();
    if (std::string(c.name) == "log2") y.log2_();
    if (std::string(c.name) == "asin") y.asin_();
    (y * w).sum().backward();
    if (std::string(c.name) == "tan" || std::string(c.name) == "erfinv" || std::string(c.name) == "log2" ||
        std::string(c.name) == "asin") {
      check_close(leaf.grad(), c.g, 1e-14, 1e-15, std::string(c.name) + "_");
    }
  }
  Tensor x = f64({0.3, -0.6, 0.8}).requires_grad_();
  (td::acosh(x + 2) * w).sum().backward();
  check_close(x.grad(), {0.14484136487558028, -0.20412414523193154, 0.19117977822546817}, 1e-14, 1e-15, "acosh");

  Tensor start = f64({1.3, -0.7, 2.2}).requires_grad_(), end = f64({2.0, 1.0, -1.0}).requires_grad_();
  Tensor weight = f64({0.25, 0.75, -0.3}).requires_grad_();
  (td::lerp(start, end, weight) * w).sum().backward();
  check_close(start.grad(), {0.22499999999999998, -0.05, 0.65}, 1e-14, 1e-15, "lerp start");
  check_close(end.grad(), {0.075, -0.15000000000000002, -0.15}, 1e-14, 1e-15, "lerp end");
  check_close(weight.grad(), {0.21, -0.34, -1.6}, 1e-14, 1e-15, "lerp weight");

  // xlogy at x = 0: x's gradient is log y where that is finite, 0 where y <= 0 (PyTorch's).
  Tensor xs = f64({0.0, 0.0, 1.0, 0.0}).requires_grad_(), ys = f64({2.0, 0.0, 3.0, -1.0});
  td::xlogy(xs, ys).sum().backward();
  check_close(xs.grad(), {0.6931471805599453, 0.0, 1.0986122886681098, 0.0}, 1e-15, 0, "xlogy's gradient at x = 0");
  // And y's, x / y (PyTorch 2.15: x.grad [0, log 3, nan, -inf, 0, inf, 0], y.grad [nan, 0, nan,
  // inf, -0, 0, -0]).
  Tensor xz = f64({0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0}).requires_grad_();
  Tensor yz = f64({0.0, 3.0, kNaN, 0.0, -1.0, kInf, -kInf}).requires_grad_();
  td::xlogy(xz, yz).sum().backward();
  check_values(xz.grad(), {0.0, 1.0986122886681098, kNaN, -kInf, 0.0, kInf, 0.0}, 1e-15, "xlogy's x gradient");
  check_values(yz.grad(), {kNaN, 0.0, kNaN, kInf, -0.0, 0.0, -0.0}, 0, "xlogy's y gradient");
  // Where the gradient is 0, x's is 0 whatever log y (PyTorch 2.15: [0, 0, 1.0986, 0]).
  Tensor xm = f64({1.0, 1.0, 2.0, 0.0}).requires_grad_(), ym = f64({0.0, kInf, 3.0, 0.0});
  (td::xlogy(xm, ym) * f64({0, 0, 1, 0})).sum().backward();
  check_values(xm.grad(), {0.0, 0.0, 1.0986122886681098, 0.0}, 1e-15, "xlogy's x gradient under a zero gradient");
  // In the result's dtype, log y too: float64 x with float32 y; a 0-dim float64 y beside float32 x
  // gives float32, as PyTorch's type promotion.
  Tensor xd = f64({1.0}).requires_grad_();
  const Tensor promoted = td::xlogy(xd, td::tensor({3.0f}));
  CHECK(promoted.dtype() == td::kFloat64);
  check_values(promoted, {1.0986122886681098}, 1e-15, "xlogy of float64 and float32");
  promoted.sum().backward();
  check_values(xd.grad(), {1.0986122886681098}, 1e-15, "xlogy's x gradient, float64");
  Tensor scalar_y = td::tensor(3.0, td::kFloat64).requires_grad_();
  const Tensor narrow_result = td::xlogy(td::tensor({1.0f, 2.0f}), scalar_y);
  CHECK(narrow_result.dtype() == td::kFloat32);
  check_values(narrow_result, {1.0986123085021973, 2.1972246170043945}, 0, "xlogy with a 0-dim float64 other");
  narrow_result.sum().backward();
  CHECK(scalar_y.grad().dtype() == td::kFloat64);
  check_values(scalar_y.grad(), {1.0}, 0, "xlogy's gradient to a 0-dim other");
  // Broadcast operands get their gradients summed back to their shapes.
  Tensor row = f64({1.0, 2.0}).requires_grad_(), column = f64({3.0, 4.0, 5.0}).view({3, 1}).requires_grad_();
  td::xlogy(row, column).sum().backward();
  check_close(row.grad(), {std::log(60.0), std::log(60.0)}, 1e-15, 0, "xlogy's broadcast x gradient");
  check_close(column.grad(), {1.0, 0.75, 0.6}, 1e-15, 0, "xlogy's broadcast y gradient");
  // logit with eps passes the gradient within the bounds, the bounds included.
  Tensor ps = f64({0.1, 0.05, 0.5, 0.9, 0.95}).requires_grad_();
  td::logit(ps, 0.1).sum().backward();
  check_close(ps.grad(), {11.111111111111109, 0.0, 4.0, 11.111111111111112, 0.0}, 1e-14, 0, "logit's gradient");
  // remainder, fmod and copysign save only what their gradients read: an operand written in place
  // afterwards (x's, when only it needs a gradient) does not break backward, in place or not.
  for (const char* op : {"remainder", "fmod", "copysign"}) {
    INFO(op);
    Tensor h = f64({1.5, 2.5}).requires_grad_();
    Tensor other = f64({1.0, -1.0});
    const std::string name = op;
    Tensor y = name == "remainder" ? td::remainder(h * 1, other)
               : name == "fmod"    ? td::fmod(h * 1, other)
                                   : td::copysign(h * 1, other);
    other.add_(1);  // written after: its gradient is not needed, so nothing of it is saved
    y.sum().backward();
    CHECK(values(h.grad()) == (name == "copysign" ? std::vector<double>{1, -1} : std::vector<double>{1, 1}));
    Tensor in_place_leaf = f64({1.5, 2.5}).requires_grad_();
    Tensor z = in_place_leaf * 1;
    if (name == "remainder") z.remainder_(2.0);
    if (name == "fmod") z.fmod_(2.0);
    z.mul_(2);
    z.sum().backward();
    if (name != "copysign") CHECK(values(in_place_leaf.grad()) == std::vector<double>{2, 2});
  }

  // nan_to_num passes the gradient where the input was finite only; atan2_ in place keeps self's old value.
  Tensor s = td::tensor({kNaN, kInf, 1.5}, td::kFloat64).requires_grad_();
  td::nan_to_num(s).sum().backward();
  CHECK(values(s.grad()) == std::vector<double>{0, 0, 1});
  Tensor p = f64({1.3, -0.7, 2.2}).requires_grad_();
  Tensor q = p * 1;
  q.atan2_(B);
  (q * w).sum().backward();
  check_close(p.grad(), {0.06486486486486485, 0.12941176470588234, 0.07964601769911504}, 1e-14, 1e-15, "atan2_");
}
