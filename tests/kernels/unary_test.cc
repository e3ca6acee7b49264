// Unary element-wise ops against float64 references, in every layout, at awkward sizes, for
// every dtype each op accepts; integer inputs of the floating functions promote to float32.
#include <cmath>

#include <limits>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Layout;
using td::testing::Snapshot;
using td::testing::values;

namespace {

struct UnaryCase {
  const char* name;
  td::Tensor (*op)(const td::Tensor&);
  double (*ref)(double);
  double lo, hi;  // input range
  bool integers;  // defined on integer inputs without promotion
};

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
// erf's inverse by bisection: exact to the last bit of a double, slow, independent of the op's method.
double erfinv_by_bisection(double y) {
  if (std::abs(y) == 1) return std::copysign(INFINITY, y);  // 0.999 is 1 in bfloat16
  double lo = -6, hi = 6;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

const UnaryCase kCases[] = {
    {"neg", td::neg, [](double x) { return -x; }, -3, 3, true},
    {"abs", td::abs, [](double x) { return std::abs(x); }, -3, 3, true},
    {"exp", td::exp, [](double x) { return std::exp(x); }, -10, 10, false},
    {"log", td::log, [](double x) { return std::log(x); }, 0.01, 10, false},
    {"log1p", td::log1p, [](double x) { return std::log1p(x); }, -0.9, 10, false},
    {"expm1", td::expm1, [](double x) { return std::expm1(x); }, -10, 10, false},
    {"sqrt", td::sqrt, [](double x) { return std::sqrt(x); }, 0, 10, false},
    {"rsqrt", td::rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.01, 10, false},
    {"sin", td::sin, [](double x) { return std::sin(x); }, -6, 6, false},
    {"cos", td::cos, [](double x) { return std::cos(x); }, -6, 6, false},
    {"tanh", td::tanh, [](double x) { return std::tanh(x); }, -5, 5, false},
    {"sigmoid", td::sigmoid, sigmoid, -10, 10, false},
    {"relu", td::relu, [](double x) { return x < 0 ? 0.0 : x; }, -3, 3, true},
    {"gelu", [](const td::Tensor& x) { return td::gelu(x); }, gelu_erf, -5, 5, false},
    {"gelu_tanh", [](const td::Tensor& x) { return td::gelu(x, "tanh"); }, gelu_tanh, -5, 5, false},
    {"silu", td::silu, [](double x) { return x * sigmoid(x); }, -10, 10, false},
    {"sign", td::sign, [](double x) { return static_cast<double>((x > 0) - (x < 0)); }, -3, 3, true},
    {"reciprocal", td::reciprocal, [](double x) { return 1 / x; }, 0.1, 4, false},
    {"floor", td::floor, [](double x) { return std::floor(x); }, -5, 5, true},
    {"ceil", td::ceil, [](double x) { return std::ceil(x); }, -5, 5, true},
    {"round", td::round, [](double x) { return std::nearbyint(x); }, -5, 5, true},
    {"trunc", td::trunc, [](double x) { return std::trunc(x); }, -5, 5, true},
    {"frac", td::frac, [](double x) { return x - std::trunc(x); }, -5, 5, false},
    {"tan", td::tan, [](double x) { return std::tan(x); }, -1.4, 1.4, false},
    {"asin", td::asin, [](double x) { return std::asin(x); }, -0.99, 0.99, false},
    {"acos", td::acos, [](double x) { return std::acos(x); }, -0.99, 0.99, false},
    {"atan", td::atan, [](double x) { return std::atan(x); }, -10, 10, false},
    {"sinh", td::sinh, [](double x) { return std::sinh(x); }, -8, 8, false},
    {"cosh", td::cosh, [](double x) { return std::cosh(x); }, -8, 8, false},
    {"asinh", td::asinh, [](double x) { return std::asinh(x); }, -20, 20, false},
    {"acosh", td::acosh, [](double x) { return std::acosh(x); }, 1.01, 20, false},
    {"atanh", td::atanh, [](double x) { return std::atanh(x); }, -0.95, 0.95, false},
    {"log2", td::log2, [](double x) { return std::log2(x); }, 0.01, 100, false},
    {"log10", td::log10, [](double x) { return std::log10(x); }, 0.01, 100, false},
    {"exp2", td::exp2, [](double x) { return std::exp2(x); }, -15, 15, false},  // 2^16 is inf in float16
    {"erfc", td::erfc, [](double x) { return std::erfc(x); }, -3, 3, false},
    {"erfinv", td::erfinv, erfinv_by_bisection, -0.999, 0.999, false},
};

const td::DType kFloating[] = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16};

// Functions whose output can be much smaller than their input (sin near pi) need an absolute
// term: a few ulps of the input's magnitude in the result's dtype.
double atol_for(td::DType dtype, double hi) { return td::testing::rtol_for(dtype) * std::max(1.0, std::abs(hi)); }

}  // namespace

TEST_CASE("unary ops match float64 references in every layout, size and floating dtype", "[cpu]") {
  td::testing::reseed(10);
  for (const UnaryCase& c : kCases) {
    for (td::DType dtype : kFloating) {
      for (Layout layout : td::testing::all_layouts()) {
        for (td::Shape shape : {td::Shape{1}, td::Shape{7}, td::Shape{33, 7}, td::Shape{3, 1, 11}, td::Shape{},
                                td::Shape{0}, td::Shape{4, 0, 3}}) {
          td::Tensor x = td::testing::random_tensor(shape, dtype, layout, c.lo, c.hi);
          td::Tensor y = c.op(x);
          REQUIRE(y.dtype() == dtype);
          REQUIRE(y.sizes() == x.sizes());
          std::vector<double> expected;
          for (double v : values(x)) expected.push_back(c.ref(v));
          check_close(y, expected, td::testing::rtol_for(dtype), atol_for(dtype, c.hi),
                      std::string(c.name) + " " + td::dtype_name(dtype) + " " + td::testing::layout_name(layout) +
                          " " + td::shape_str(shape));
        }
      }
    }
  }
}

TEST_CASE("unary ops handle a million elements contiguous and strided", "[cpu]") {
  td::testing::reseed(11);
  for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
    td::Tensor x = td::testing::random_tensor({1000003}, td::kFloat32, layout, -5, 5);
    for (const UnaryCase& c : kCases) {
      if (c.lo > -1) continue;  // log, sqrt and the like are not defined on [-5, 5]
      std::vector<double> expected;
      for (double v : values(x)) expected.push_back(c.ref(v));
      check_close(c.op(x), expected, 1e-5, 1e-5, c.name);
    }
  }
}

TEST_CASE("integer inputs: neg, abs, relu and sign stay integers, the rest give float32", "[cpu]") {
  td::testing::reseed(12);
  for (td::DType dtype : {td::kInt64, td::kInt32, td::kUInt8}) {
    td::Tensor x = td::testing::random_tensor({33}, dtype, Layout::Strided, dtype == td::kUInt8 ? 0 : -50, 50);
    for (const UnaryCase& c : kCases) {
      std::string name = c.name;
      if (name == "gelu" || name == "gelu_tanh" || name == "silu" || name == "frac") {
        check_error([&] { c.op(x); }, {name == "gelu_tanh" ? "gelu" : name, "floating", td::dtype_name(dtype)});
        continue;
      }
      if (name == "log" || name == "rsqrt" || name == "reciprocal" || name == "log1p" || name == "sqrt" ||
          name == "asin" || name == "acos" || name == "acosh" || name == "atanh" || name == "log2" || name == "log10" ||
          name == "erfinv" || name == "exp2" || name == "sinh" || name == "cosh" || name == "erfc") {
        continue;  // undefined, or beyond float32's range, on most integers in [-50, 50]
      }
      td::Tensor y = c.op(x);
      CHECK(y.dtype() == (c.integers ? dtype : td::kFloat32));
      std::vector<double> expected;
      for (double v : values(x)) {
        double r = c.ref(v);
        if (dtype == td::kUInt8 && name == "neg") r = std::fmod(256 - v, 256);  // uint8 wraps
        expected.push_back(r);
      }
      check_close(y, expected, 1e-6, 0, name + " on " + td::dtype_name(dtype));
    }
  }
}

TEST_CASE("special values: NaN passes through relu and clamp, sign of NaN is 0", "[cpu]") {
  td::Tensor x = td::tensor({NAN, INFINITY, -INFINITY, -0.0, 0.0});
  CHECK(std::isnan(values(td::relu(x))[0]));
  CHECK(values(td::relu(x))[1] == INFINITY);
  CHECK(values(td::relu(x))[2] == 0);
  CHECK(values(td::sign(x)) == std::vector<double>{0, 1, -1, 0, 0});
  CHECK(values(td::sigmoid(x)).at(2) == 0);
  CHECK(values(td::exp(x)).at(2) == 0);
  CHECK(std::isnan(values(td::clamp(x, -1, 1))[0]));
  CHECK(values(td::clamp(x, -1, 1))[1] == 1);
}

TEST_CASE("floor, ceil, round, trunc and frac at halves, signed zeros, huge values, inf and NaN, as PyTorch's",
          "[cpu]") {
  // PyTorch 2.15, float64 and float32 alike: round takes halves to the even neighbour; the
  // signs of zeros stay (frac(-0) is +0: -0 - -0); inf and NaN pass (frac of inf is NaN).
  const std::vector<double> x = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.0, 0.49999999999999994, 1e20, -3.75, 3.75,
                                 INFINITY, -INFINITY, NAN};
  const std::vector<double> floors = {-3, -2, -1, 0, 1, 2, -0.0, 0, 1e20, -4, 3, INFINITY, -INFINITY, NAN};
  const std::vector<double> ceils = {-2, -1, -0.0, 1, 2, 3, -0.0, 1, 1e20, -3, 4, INFINITY, -INFINITY, NAN};
  const std::vector<double> rounds = {-2, -2, -0.0, 0, 2, 2, -0.0, 0, 1e20, -4, 4, INFINITY, -INFINITY, NAN};
  const std::vector<double> truncs = {-2, -1, -0.0, 0, 1, 2, -0.0, 0, 1e20, -3, 3, INFINITY, -INFINITY, NAN};
  const std::vector<double> fracs = {-0.5, -0.5, -0.5, 0.5, 0.5, 0.5, 0.0, 0.49999999999999994, 0, -0.75, 0.75,
                                     NAN, NAN, NAN};
  auto same_bits = [](const Tensor& got, std::vector<double> want, const std::string& what) {
    INFO(what);
    const std::vector<double> v = values(got);
    if (got.dtype() == td::kFloat32) want[8] = static_cast<float>(want[8]);  // 1e20 in float32
    REQUIRE(v.size() == want.size());
    for (size_t i = 0; i < v.size(); ++i) {
      INFO("element " << i);
      if (std::isnan(want[i])) {
        CHECK(std::isnan(v[i]));
      } else {
        CHECK(v[i] == want[i]);
        CHECK(std::signbit(v[i]) == std::signbit(want[i]));
      }
    }
  };
  for (td::DType dtype : {td::kFloat64, td::kFloat32}) {
    Tensor t = td::tensor(x, dtype);
    std::vector<double> frac_want = fracs;
    if (dtype == td::kFloat32) frac_want[7] = 0.5;  // 0.49999999999999994 is 0.5 in float32
    std::vector<double> round_want = rounds;
    if (dtype == td::kFloat32) round_want[7] = 0;  // 0.5 rounds to the even 0
    same_bits(td::floor(t), floors, std::string("floor ") + td::dtype_name(dtype));
    same_bits(td::ceil(t), ceils, std::string("ceil ") + td::dtype_name(dtype));
    same_bits(td::round(t), round_want, std::string("round ") + td::dtype_name(dtype));
    same_bits(td::trunc(t), truncs, std::string("trunc ") + td::dtype_name(dtype));
    same_bits(td::frac(t), frac_want, std::string("frac ") + td::dtype_name(dtype));
  }
  // Their gradients: zero for the four roundings, one for frac; in place too.
  Tensor leaf = td::tensor(std::vector<double>{-1.25, 0.5, 2.75}).requires_grad_(true);
  (td::floor(leaf) + td::ceil(leaf) * 2 + td::round(leaf) * 3 + td::trunc(leaf) * 4 + td::frac(leaf) * 5)
      .sum()
      .backward();
  CHECK(values(leaf.grad()) == std::vector<double>{5, 5, 5});
  Tensor in_place = td::tensor(std::vector<double>{-1.25, 0.5, 2.75});
  in_place.floor_();
  CHECK(values(in_place) == std::vector<double>{-2, 0, 2});
  in_place.frac_();
  CHECK(values(in_place) == std::vector<double>{0, 0, 0});
  check_error([] { td::floor(td::tensor({true, false})); }, {"floor", "bool"});
  check_error([] { td::tensor({1, 2}).frac_(); }, {"frac", "floating", "int64"});
}

TEST_CASE("clamp limits below, above or both, promoting like PyTorch", "[cpu]") {
  td::testing::reseed(13);
  for (Layout layout : td::testing::all_layouts()) {
    td::Tensor x = td::testing::random_tensor({7, 33}, td::kFloat32, layout, -3, 3);
    std::vector<double> both, lo, hi;
    for (double v : values(x)) {
      both.push_back(std::min(std::max(v, -1.0), 0.5));
      lo.push_back(std::max(v, -1.0));
      hi.push_back(std::min(v, 0.5));
    }
    check_close(td::clamp(x, -1, 0.5), both, 0, 0);
    check_close(x.clamp_min(-1), lo, 0, 0);
    check_close(x.clamp_max(0.5), hi, 0, 0);
  }
  td::Tensor ints = td::tensor({-5, 0, 5});
  CHECK(td::clamp(ints, -2, 2).dtype() == td::kInt64);
  CHECK(values(td::clamp(ints, -2, 2)) == std::vector<double>{-2, 0, 2});
  CHECK(td::clamp(ints, 0.5).dtype() == td::kFloat32);  // a float bound promotes, as in PyTorch
  CHECK(values(td::clamp(ints, 3, 1)) == std::vector<double>{1, 1, 1});  // min > max gives max
  check_error([&] { td::clamp(ints, std::nullopt, std::nullopt); }, {"clamp", "at least one"});
}

TEST_CASE("in-place unary ops write through views and refuse to change the dtype", "[cpu]") {
  td::Tensor base = td::full({4, 4}, -2.0);
  td::Tensor diag = base.as_strided({4}, {5});
  diag.abs_();
  CHECK(td::sum(base).item<double>() == -2 * 12 + 2 * 4);
  td::Tensor ints = td::tensor({1, 2, 3});
  Snapshot before(ints);
  check_error([&] { ints.exp_(); }, {"exp_", "float32", "int64"});
  check_error([&] { ints.clamp_(0.5); }, {"clamp_: result type float32 can't be cast to the desired output type int64"});
  before.check_unchanged(ints);
  td::Tensor expanded = td::zeros({1, 3}).expand({4, 3});
  check_error([&] { expanded.relu_(); }, {"relu", "single memory location"});
  td::Tensor h = td::tensor({0.5, 4.0}, td::kFloat16);
  h.sqrt_();
  CHECK(values(h) == std::vector<double>{static_cast<float>(td::Half(std::sqrt(0.5f))), 2});
  td::Tensor g = td::tensor({1.0, -1.0});
  g.gelu_("tanh");
  check_close(g, {gelu_tanh(1), gelu_tanh(-1)}, 1e-6, 0);
  check_error([&] { g.gelu_("fast"); }, {"gelu", "\"none\" or \"tanh\""});
}

TEST_CASE("bool tensors are rejected by arithmetic unary ops with a hint, and sign of a bool is itself", "[cpu]") {
  td::Tensor b = td::tensor({true, false});
  check_error([&] { td::neg(b); }, {"neg", "bool", "logical_not"});
  check_error([&] { td::abs(b); }, {"abs", "bool"});
  CHECK(td::exp(b).dtype() == td::kFloat32);
  // sign of a bool is the bool itself, as in PyTorch.
  td::Tensor strided = td::tensor({true, false, false, true, true, false}).slice(0, 0, 6, 2);
  CHECK(td::sign(strided).dtype() == td::kBool);
  CHECK(values(td::sign(strided)) == std::vector<double>{1, 0, 1});
  td::Tensor in_place = b.clone();
  in_place.sign_();
  CHECK(values(in_place) == std::vector<double>{1, 0});
}

TEST_CASE("neg and abs of the most negative integer give it back, with no signed overflow", "[cpu]") {
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  const int32_t min32 = std::numeric_limits<int32_t>::min();
  CHECK(td::neg(td::tensor({min64})).item<int64_t>() == min64);
  CHECK(td::abs(td::tensor({min64})).item<int64_t>() == min64);
  CHECK(td::neg(td::tensor({min32}, td::kInt32)).item<int32_t>() == min32);
  CHECK(td::abs(td::tensor({min32, -5}, td::kInt32)).sizes() == td::Shape{2});
  CHECK(values(td::abs(td::tensor({min32, -5}, td::kInt32)))[1] == 5);
  CHECK(td::neg(td::tensor({3}, td::kUInt8)).item<int>() == 253);  // uint8 wraps, as in PyTorch
}
