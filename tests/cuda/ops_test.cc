// Every op of the CUDA backend against its CPU twin on fresh random inputs: 0, 1, 7, 33 and 1000003
// elements, non-contiguous and broadcast layouts, every dtype the op takes, with fresh CUDA memory
// poisoned so that an element a kernel leaves unwritten shows; and mixed devices are an error.
//
// Each sweep runs twice: [cuda] on small inputs whose layouts take turns, light enough for the
// compute-sanitizer runs of tools/gpu/run.sh (which leave out [large]) yet running every kernel and
// dtype; and [cuda][large] on every size, long ones included, in every layout.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/linalg.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/elementwise.h"
#include "kernels/linalg.h"
#include "kernels/nn_ops.h"
#include "tests/cuda/cuda_testing.h"

namespace td = tandem;
namespace tt = td::testing;
namespace ct = td::cuda_testing;
namespace F = td::nn::functional;
namespace nn = td::nn;
using ct::check_close;
using ct::check_equal;
using ct::Layout;
using ct::Pair;
using ct::rtol_for;
using tt::sign_bits;
using td::DType;
using td::Shape;
using td::Tensor;
using Dims = std::vector<int64_t>;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<DType> kAll = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16,
                                 td::kInt64,   td::kInt32,   td::kUInt8,   td::kBool};
const std::vector<DType> kNumeric = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16,
                                     td::kInt64,   td::kInt32,   td::kUInt8};
const std::vector<DType> kFloating = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16};
const std::vector<DType> kIntegers = {td::kInt64, td::kInt32, td::kUInt8};
const std::vector<DType> kSigned = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16, td::kInt64, td::kInt32};
const std::vector<DType> kBitwise = {td::kInt64, td::kInt32, td::kUInt8, td::kBool};

td::TensorOptions on_device(DType dtype) { return td::TensorOptions(dtype).device(ct::device()); }

bool is_big(const Shape& shape) { return td::numel_of(shape) > 100000; }

bool contains(const std::vector<DType>& dtypes, DType t) {
  for (DType d : dtypes) {
    if (d == t) return true;
  }
  return false;
}

bool contains_layout(const std::vector<Layout>& layouts, Layout l) {
  for (Layout k : layouts) {
    if (k == l) return true;
  }
  return false;
}

// The shapes element-wise ops run on: 0-dim (one element), empty, 7 and 33 elements, several dims;
// and, large, also 1 element, more dims and a long vector.
const std::vector<Shape> kSmallShapes = {{}, {0}, {7}, {3, 1, 33}};
const std::vector<Shape> kLargeShapes = {{1}, {33}, {3, 0, 2}, {7, 33}, {3, 1, 7, 5}, {1000003}};

// Every layout for small inputs; for long ones the dense path, the strided path and a broadcast.
std::vector<Layout> layouts_for(const Shape& shape) {
  if (is_big(shape)) return {Layout::Contiguous, Layout::Strided, Layout::Broadcast};
  return ct::all_layouts();
}

// The (shape, layout) pairs of a sweep. Small: every other small shape, each in one layout, shapes
// and layouts taking turns with `turn` (callers advance it per op and dtype). Large: the small and
// the big shapes in every layout of `layouts` that suits their size.
std::vector<std::pair<Shape, Layout>> sweep(bool large, const std::vector<Shape>& small, const std::vector<Shape>& big,
                                            size_t turn, const std::vector<Layout>& layouts = ct::all_layouts()) {
  std::vector<std::pair<Shape, Layout>> out;
  if (!large) {
    for (size_t i = 0; i < small.size(); ++i) {
      if ((i + turn) % 2 == 0) out.push_back({small[i], layouts[(i + turn) % layouts.size()]});
    }
    return out;
  }
  for (const Shape& shape : small) {
    for (Layout layout : layouts) out.push_back({shape, layout});
  }
  for (const Shape& shape : big) {
    for (Layout layout : layouts_for(shape)) {
      if (contains_layout(layouts, layout)) out.push_back({shape, layout});
    }
  }
  return out;
}

std::string describe(const std::string& op, DType dtype, const Shape& shape, Layout layout) {
  std::ostringstream s;
  s << op << " on " << td::dtype_name(dtype) << " " << td::shape_str(shape) << " (" << ct::layout_name(layout) << ")";
  return s.str();
}

// t's whole storage as a 1-D tensor: an in-place op must leave what lies outside its view alone.
Tensor whole(const Tensor& t) {
  return Tensor::make(t.storage(), {static_cast<int64_t>(t.storage().nbytes() / t.element_size())}, {1}, 0, t.dtype());
}

// After an in-place op on a view: everything stored around the view is equal on both devices.
void check_outside_equal(const Tensor& dev, const Tensor& cpu, const std::string& what) {
  Tensor d = whole(dev).clone(), c = whole(cpu).clone();
  d.as_strided(dev.sizes(), dev.strides(), dev.storage_offset()).fill_(0);
  c.as_strided(cpu.sizes(), cpu.strides(), cpu.storage_offset()).fill_(0);
  check_equal(d, c, what + ", outside the view");
}

// Sets about a fraction p of the elements stored under t to `value` (before its twin is made).
void sprinkle(const Tensor& t, double p, double value) {
  Tensor all = whole(t);
  all.masked_fill_(td::rand(all.sizes(), td::kFloat64) < p, value);
}

// A result that is a selection or one correctly rounded operation is equal on both devices;
// otherwise floating results agree to the dtype's tolerance (absolute too: values are about 1).
void compare(const Tensor& dev, const Tensor& cpu, bool exact, const std::string& what) {
  if (exact || !td::is_floating(cpu.dtype())) return check_equal(dev, cpu, what);
  const double r = rtol_for(cpu.dtype());
  check_close(dev, cpu, r, r, what);
}

// ---------------------------------------------------------------------------------------------
// element-wise

using UnaryFn = std::function<Tensor(const Tensor&)>;

struct UnaryCase {
  std::string name;
  UnaryFn fn;
  std::vector<DType> dtypes;
  double lo = -2, hi = 2;
  bool exact = false;
};

const std::vector<UnaryCase>& unary_cases() {
  using T = const Tensor&;
  static const std::vector<UnaryCase> cases = {
      {"neg", [](T x) { return td::neg(x); }, kNumeric, -2, 2, true},
      {"abs", [](T x) { return td::abs(x); }, kNumeric, -2, 2, true},
      {"relu", [](T x) { return td::relu(x); }, kNumeric, -2, 2, true},
      {"sign", [](T x) { return td::sign(x); }, kNumeric, -2, 2, true},
      {"exp", [](T x) { return td::exp(x); }, kAll},
      {"log", [](T x) { return td::log(x); }, kAll, 0.1, 3},
      {"log1p", [](T x) { return td::log1p(x); }, kAll, -0.5, 3},
      {"expm1", [](T x) { return td::expm1(x); }, kAll},
      {"sqrt", [](T x) { return td::sqrt(x); }, kAll, 0, 3},
      {"rsqrt", [](T x) { return td::rsqrt(x); }, kAll, 0.1, 3},
      {"sin", [](T x) { return td::sin(x); }, kAll},
      {"cos", [](T x) { return td::cos(x); }, kAll},
      {"tanh", [](T x) { return td::tanh(x); }, kAll},
      {"sigmoid", [](T x) { return td::sigmoid(x); }, kAll},
      {"gelu", [](T x) { return td::gelu(x); }, kFloating},
      {"gelu tanh", [](T x) { return td::gelu(x, "tanh"); }, kFloating},
      {"silu", [](T x) { return td::silu(x); }, kFloating},
      {"reciprocal", [](T x) { return td::reciprocal(x); }, kAll},
      {"erf", [](T x) { return td::erf(x); }, kAll},
      {"floor", [](T x) { return td::floor(x); }, kNumeric, -3, 3, true},
      {"ceil", [](T x) { return td::ceil(x); }, kNumeric, -3, 3, true},
      {"round", [](T x) { return td::round(x); }, kNumeric, -3, 3, true},
      {"trunc", [](T x) { return td::trunc(x); }, kNumeric, -3, 3, true},
      {"frac", [](T x) { return td::frac(x); }, kFloating, -3, 3, true},
      {"tan", [](T x) { return td::tan(x); }, kAll, -1.2, 1.2},
      {"asin", [](T x) { return td::asin(x); }, kAll, -0.9, 0.9},
      {"acos", [](T x) { return td::acos(x); }, kAll, -0.9, 0.9},
      {"atan", [](T x) { return td::atan(x); }, kAll, -4, 4},
      {"sinh", [](T x) { return td::sinh(x); }, kAll, -4, 4},
      {"cosh", [](T x) { return td::cosh(x); }, kAll, -4, 4},
      {"asinh", [](T x) { return td::asinh(x); }, kAll, -4, 4},
      {"acosh", [](T x) { return td::acosh(x); }, kAll, 1.1, 4},
      {"atanh", [](T x) { return td::atanh(x); }, kAll, -0.9, 0.9},
      {"log2", [](T x) { return td::log2(x); }, kAll, 0.1, 4},
      {"log10", [](T x) { return td::log10(x); }, kAll, 0.1, 4},
      {"exp2", [](T x) { return td::exp2(x); }, kAll, -4, 4},
      {"erfc", [](T x) { return td::erfc(x); }, kAll, -3, 3},
      {"erfinv", [](T x) { return td::erfinv(x); }, kAll, -0.95, 0.95},
      {"bitwise_not", [](T x) { return td::bitwise_not(x); }, kBitwise, -3, 3, true},
      {"nan_to_num", [](T x) { return td::nan_to_num(td::log(x)); }, kFloating, -2, 2, true},
      {"isfinite", [](T x) { return td::isfinite(td::log(x)); }, kFloating, -2, 2, true},
      {"signbit", [](T x) { return td::signbit(x); }, kAll, -2, 2, true},
      {"logical_not", [](T x) { return td::logical_not(x); }, kAll, -2, 2, true},
      {"pow 2.5", [](T x) { return td::pow(x, 2.5); }, kAll, 0, 2},
      {"pow 3", [](T x) { return td::pow(x, 3); }, kNumeric, -3, 4},
      {"clamp", [](T x) { return td::clamp(x, -0.5, 1.25); }, kNumeric, -2, 2, true},
      {"clamp integer bounds", [](T x) { return td::clamp(x, -1, 2); }, kNumeric, -3, 4, true},
      {"clamp_min", [](T x) { return x.clamp_min(0.25); }, kNumeric, -2, 2, true},
      {"clamp_max", [](T x) { return x.clamp_max(-0.25); }, kNumeric, -2, 2, true},
      {"clamp min > max", [](T x) { return td::clamp(x, 1.0, -1.0); }, kNumeric, -2, 2, true},
  };
  return cases;
}

void unary_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 101 : 1);
  size_t turn = 0;
  for (const UnaryCase& c : unary_cases()) {
    for (DType dtype : c.dtypes) {
      for (const auto& [shape, layout] : sweep(large, kSmallShapes, kLargeShapes, turn++)) {
        Pair x = ct::random_pair(shape, dtype, layout, c.lo, c.hi);
        compare(c.fn(x.dev), c.fn(x.cpu), c.exact, describe(c.name, dtype, shape, layout));
      }
    }
  }
}

TEST_CASE("unary ops match the CPU for every dtype", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  unary_sweep(false);
}

TEST_CASE("unary ops match the CPU for every dtype, size and layout", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  unary_sweep(true);
}

TEST_CASE("unary ops treat zeros, infinities, NaN and extreme values as the CPU does", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  const std::vector<double> specials = {0.0,  -0.0,  kInf, -kInf, kNaN, 1,   -1,    0.5,    -0.5,  3,     -3,
                                        1e-3, -1e-3, 20,   -20,   88,   -87, 1e-30, -1e-30, 1e-40, 65504, -65504};
  for (DType dtype : kFloating) {
    Tensor base = td::tensor(specials, td::kFloat64).to(dtype);
    // The smallest normal number: below it, results are subnormal and rounding steps are absolute.
    const double tiny = dtype == td::kFloat64 ? 2.3e-308 : dtype == td::kFloat16 ? 6.2e-5 : 1.2e-38;
    for (Tensor x : {base, base.expand({3, static_cast<int64_t>(specials.size())}).t()}) {
      Tensor dev = ct::twin(x);
      for (const UnaryCase& c : unary_cases()) {
        if (!contains(c.dtypes, dtype)) continue;
        std::string what = c.name + " of special values in " + td::dtype_name(dtype);
        if (c.exact) {
          check_equal(c.fn(dev), c.fn(x), what);
        } else if (c.name.rfind("gelu", 0) == 0) {
          // x * (1 + erf or tanh of about -x): at x = -3 the sum cancels to 0.003, so an ulp of
          // erf or tanh (CUDA's are within 2, the CPU's within 1) is 2e-5 of the result. The
          // error is bounded by |x| times an ulp of 1 instead.
          check_close(c.fn(dev), c.fn(x), rtol_for(dtype), tiny, what, ct::abs64(x));
        } else {
          check_close(c.fn(dev), c.fn(x), rtol_for(dtype), tiny, what);
        }
      }
    }
  }
}

TEST_CASE("exp, sigmoid and silu of float32, float16 and bfloat16 equal the CPU's bit for bit", "[cuda]") {
  // Both run one exp (kernels/functors.h), every multiply-add explicit, so nothing is left to
  // either compiler's choice of fusing.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(60);
  for (DType dtype : {td::kFloat32, td::kFloat16, td::kBFloat16}) {
    Tensor x = td::cat({tt::random_tensor({100003}, td::kFloat32, Layout::Contiguous, -110, 110),
                        tt::random_tensor({1003}, td::kFloat32, Layout::Contiguous, -1e-3, 1e-3),
                        td::tensor({0.0, -0.0, kInf, -kInf, kNaN, 88.7, 88.8, 88.9, -103.9, -104.1}, td::kFloat32)})
                   .to(dtype);
    Tensor dev = x.to(ct::device());
    const std::string name = td::dtype_name(dtype);
    check_equal(td::exp(dev), td::exp(x), "exp of " + name);
    check_equal(td::sigmoid(dev), td::sigmoid(x), "sigmoid of " + name);
    check_equal(td::silu(dev), td::silu(x), "silu of " + name);
  }
}

// In-place forms write through the view only: the rest of the storage is compared afterwards.
void in_place_unary_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 102 : 2);
  using T = Tensor&;
  struct InPlace {
    std::string name;
    std::function<void(Tensor&)> fn;
    std::vector<DType> dtypes;
    double lo = -2, hi = 2;
  };
  const std::vector<InPlace> cases = {
      {"neg_", [](T x) { x.neg_(); }, kNumeric},
      {"abs_", [](T x) { x.abs_(); }, kNumeric},
      {"relu_", [](T x) { x.relu_(); }, kNumeric},
      {"sign_", [](T x) { x.sign_(); }, kNumeric},
      {"exp_", [](T x) { x.exp_(); }, kFloating},
      {"log_", [](T x) { x.log_(); }, kFloating, 0.1, 3},
      {"log1p_", [](T x) { x.log1p_(); }, kFloating},
      {"expm1_", [](T x) { x.expm1_(); }, kFloating},
      {"sqrt_", [](T x) { x.sqrt_(); }, kFloating, 0, 3},
      {"rsqrt_", [](T x) { x.rsqrt_(); }, kFloating, 0.1, 3},
      {"sin_", [](T x) { x.sin_(); }, kFloating},
      {"cos_", [](T x) { x.cos_(); }, kFloating},
      {"tanh_", [](T x) { x.tanh_(); }, kFloating},
      {"sigmoid_", [](T x) { x.sigmoid_(); }, kFloating},
      {"gelu_", [](T x) { x.gelu_(); }, kFloating},
      {"silu_", [](T x) { x.silu_(); }, kFloating},
      {"reciprocal_", [](T x) { x.reciprocal_(); }, kFloating},
      {"tan_", [](T x) { x.tan_(); }, kFloating, -1.2, 1.2},
      {"erfinv_", [](T x) { x.erfinv_(); }, kFloating, -0.9, 0.9},
      {"bitwise_not_", [](T x) { x.bitwise_not_(); }, kBitwise},
      {"remainder_", [](T x) { x.remainder_(3); }, kNumeric},
      {"floor_divide_", [](T x) { x.floor_divide_(-2); }, kSigned},
      {"atan2_", [](T x) { x.atan2_(td::full({}, 0.5, td::TensorOptions(x.dtype()).device(x.device()))); }, kFloating},
      {"lerp_", [](T x) { x.lerp_(td::ones_like(x), 0.25); }, kFloating},
      {"pow_ 2", [](T x) { x.pow_(2); }, kNumeric},
      {"clamp_", [](T x) { x.clamp_(-1, 1); }, kNumeric},
      {"fill_", [](T x) { x.fill_(1.5); }, kAll},
      {"zero_", [](T x) { x.zero_(); }, kAll},
  };
  const std::vector<Layout> writable = {Layout::Contiguous, Layout::Permuted, Layout::Strided, Layout::Offset};
  size_t turn = 0;
  for (const InPlace& c : cases) {
    for (DType dtype : c.dtypes) {
      for (const auto& [shape, layout] :
           sweep(large, {{}, {7, 33}, {2, 0, 3}}, {{1}, {33}, {1000003}}, turn++, writable)) {
        Pair x = ct::random_pair(shape, dtype, layout, c.lo, c.hi);
        const uint32_t version = x.dev.version();
        c.fn(x.cpu);
        c.fn(x.dev);
        std::string what = describe(c.name, dtype, shape, layout);
        CHECK(x.dev.version() == version + 1);
        compare(x.dev, x.cpu, false, what);
        check_outside_equal(x.dev, x.cpu, what);
      }
    }
  }
}

TEST_CASE("in-place unary ops write their view of a non-contiguous tensor and nothing else", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  in_place_unary_sweep(false);
}

TEST_CASE("in-place unary ops write their view of a non-contiguous tensor and nothing else, every size",
          "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  in_place_unary_sweep(true);
}

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

struct BinaryCase {
  std::string name;
  BinaryFn fn;
  std::vector<DType> dtypes;
  double lo_a = -2, hi_a = 2, lo_b = -2, hi_b = 2;
  bool exact = true;  // one correctly rounded operation (or a comparison, a selection)
};

const std::vector<BinaryCase>& binary_cases() {
  using T = const Tensor&;
  static const std::vector<BinaryCase> cases = {
      {"add", [](T a, T b) { return a + b; }, kAll},
      {"sub", [](T a, T b) { return a - b; }, kNumeric},
      {"mul", [](T a, T b) { return a * b; }, kAll},
      {"div", [](T a, T b) { return a / b; }, kAll},
      {"add alpha 2", [](T a, T b) { return td::add(a, b, 2); }, kNumeric},
      {"add alpha 3", [](T a, T b) { return td::add(a, b, 3); }, kNumeric, -2, 2, -2, 2, false},
      {"sub alpha 3", [](T a, T b) { return td::sub(a, b, 3); }, kNumeric, -2, 2, -2, 2, false},
      {"add alpha 0.75", [](T a, T b) { return td::add(a, b, 0.75); }, kFloating, -2, 2, -2, 2, false},
      {"pow", [](T a, T b) { return td::pow(a, b); }, kFloating, 0.1, 2, -2, 2, false},
      {"pow of integers", [](T a, T b) { return td::pow(a, b); }, kIntegers, -3, 4, -2, 5},
      {"maximum", [](T a, T b) { return td::maximum(a, b); }, kAll},
      {"minimum", [](T a, T b) { return td::minimum(a, b); }, kAll},
      {"remainder", [](T a, T b) { return td::remainder(a, b); }, kNumeric, -5, 5, 1, 3},
      {"remainder by negatives", [](T a, T b) { return td::remainder(a, b); }, kSigned, -5, 5, -3, -1},
      {"fmod", [](T a, T b) { return td::fmod(a, b); }, kNumeric, -5, 5, 1, 3},
      {"fmod by negatives", [](T a, T b) { return td::fmod(a, b); }, kSigned, -5, 5, -3, -1},
      {"floor_divide", [](T a, T b) { return td::floor_divide(a, b); }, kNumeric, -5, 5, 1, 3},
      {"floor_divide by negatives", [](T a, T b) { return td::floor_divide(a, b); }, kSigned, -5, 5, -3, -1},
      {"div trunc", [](T a, T b) { return td::div(a, b, "trunc"); }, kSigned, -5, 5, -3, -1},
      {"atan2", [](T a, T b) { return td::atan2(a, b); }, kAll, -2, 2, -2, 2, false},
      {"hypot", [](T a, T b) { return td::hypot(a, b); }, kFloating, -2, 2, -2, 2, false},
      {"logaddexp", [](T a, T b) { return td::logaddexp(a, b); }, kFloating, -2, 2, -2, 2, false},
      {"copysign", [](T a, T b) { return td::copysign(a, b); }, kAll},
      {"fmax", [](T a, T b) { return td::fmax(a, b); }, kAll},
      {"fmin", [](T a, T b) { return td::fmin(a, b); }, kAll},
      {"bitwise_and", [](T a, T b) { return td::bitwise_and(a, b); }, kBitwise, -4, 4, -4, 4},
      {"bitwise_or", [](T a, T b) { return td::bitwise_or(a, b); }, kBitwise, -4, 4, -4, 4},
      {"bitwise_xor", [](T a, T b) { return td::bitwise_xor(a, b); }, kBitwise, -4, 4, -4, 4},
      // Shifts from -2 to 70 bits: outside [0, bits) too, for each integer width.
      {"bitwise_left_shift", [](T a, T b) { return td::bitwise_left_shift(a, b); }, kIntegers, -100, 100, -2, 70},
      {"bitwise_right_shift", [](T a, T b) { return td::bitwise_right_shift(a, b); }, kIntegers, -100, 100, -2, 70},
      {"logical_xor", [](T a, T b) { return td::logical_xor(a, b); }, kAll, -2, 2, -2, 2},
      {"eq", [](T a, T b) { return td::eq(a, b); }, kAll, -3, 3, -3, 3},
      {"ne", [](T a, T b) { return td::ne(a, b); }, kAll, -3, 3, -3, 3},
      {"lt", [](T a, T b) { return td::lt(a, b); }, kAll, -3, 3, -3, 3},
      {"le", [](T a, T b) { return td::le(a, b); }, kAll, -3, 3, -3, 3},
      {"gt", [](T a, T b) { return td::gt(a, b); }, kAll, -3, 3, -3, 3},
      {"ge", [](T a, T b) { return td::ge(a, b); }, kAll, -3, 3, -3, 3},
  };
  return cases;
}

// Operand shapes that broadcast: equal, a 0-dim either side, trailing dims, both sides stretched,
// empty; and, large, long vectors.
const std::vector<std::pair<Shape, Shape>> kSmallPairs = {
    {{}, {}}, {{7}, {7}}, {{33}, {}}, {{}, {33}}, {{7, 1}, {1, 33}}, {{2, 3, 33}, {3, 1}}, {{0}, {1}}};
const std::vector<std::pair<Shape, Shape>> kLargePairs = {
    {{1}, {1}}, {{7, 33}, {33}}, {{3, 0}, {3, 1}}, {{1000003}, {1000003}}, {{1000003}, {1}}};

// Results of the CUDA and CPU ops compared, and for inexact ones scaled by |a| + |alpha b|.
void compare_binary(const BinaryCase& c, const Pair& a, const Pair& b, const std::string& what) {
  Tensor dev = c.fn(a.dev, b.dev), cpu = c.fn(a.cpu, b.cpu);
  if (c.exact || !td::is_floating(cpu.dtype())) return check_equal(dev, cpu, what);
  const double r = rtol_for(cpu.dtype());
  Tensor scale = c.name == "pow" ? ct::abs64(cpu) : ct::abs64(a.cpu) + 3 * ct::abs64(b.cpu);
  check_close(dev, cpu, r, r, what, scale);
}

void binary_sweep(bool large, uint8_t poison_byte = 0xFF) {
  ct::PoisonGuard poison(poison_byte);
  tt::reseed(large ? 103 : 3);
  const std::vector<DType> big_dtypes = {td::kFloat32, td::kFloat64, td::kFloat16, td::kUInt8, td::kBool};
  std::vector<std::pair<Shape, Shape>> pairs = kSmallPairs;
  if (large) pairs.insert(pairs.end(), kLargePairs.begin(), kLargePairs.end());
  size_t turn = 0;
  for (const BinaryCase& c : binary_cases()) {
    for (DType dtype : c.dtypes) {
      for (const auto& [sa, sb] : pairs) {
        if (is_big(sa) && !contains(big_dtypes, dtype)) continue;
        const size_t t = turn++;
        if (!large && t % 2 == 1) continue;  // small: every other pair, taking turns
        const std::vector<Layout> layouts = layouts_for(sa.size() >= sb.size() ? sa : sb);
        // Large: each layout of a against the next one of b; small: one such pair, taking turns.
        const size_t first = large ? 0 : (t / 2) % layouts.size(), last = large ? layouts.size() : first + 1;
        for (size_t i = first; i < last; ++i) {
          Layout la = layouts[i], lb = layouts[(i + 1) % layouts.size()];
          Pair a = ct::random_pair(sa, dtype, la, c.lo_a, c.hi_a);
          Pair b = ct::random_pair(sb, dtype, lb, c.lo_b, c.hi_b);
          std::ostringstream what;
          what << c.name << " of " << td::dtype_name(dtype) << " " << td::shape_str(sa) << " (" << ct::layout_name(la)
               << ") and " << td::shape_str(sb) << " (" << ct::layout_name(lb) << ")";
          compare_binary(c, a, b, what.str());
        }
      }
    }
  }
}

TEST_CASE("binary ops and comparisons match the CPU with broadcasting, every dtype", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  for (uint8_t byte : ct::kPoisonBytes) binary_sweep(false, byte);
}

TEST_CASE("binary ops and comparisons match the CPU with broadcasting, every dtype, size and layout", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  binary_sweep(true);
}

TEST_CASE("binary ops promote mixed dtypes, 0-dim tensors and numbers as on the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(4);
  const std::vector<std::pair<DType, DType>> pairs = {{td::kInt32, td::kFloat16},    {td::kUInt8, td::kInt64},
                                                      {td::kBool, td::kFloat32},     {td::kFloat32, td::kFloat64},
                                                      {td::kBFloat16, td::kFloat16}, {td::kInt64, td::kBFloat16},
                                                      {td::kBool, td::kUInt8},       {td::kInt32, td::kInt64}};
  for (const auto& [ta, tb] : pairs) {
    for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{7, 33}, {33}}, {{33}, {}}, {{}, {7, 1}}}) {
      for (const BinaryCase& c : binary_cases()) {
        if (!c.exact || c.name == "sub" || c.name == "pow of integers") continue;
        // Operands in the case's ranges (no integer division by zero), computed in a dtype the case
        // takes (bitwise ops refuse floats); negative divisors need a signed operand.
        if (c.hi_b <= 0 && (tb == td::kUInt8 || tb == td::kBool)) continue;
        Pair a = ct::random_pair(sa, ta, Layout::Strided, c.lo_a, c.hi_a);
        Pair b = ct::random_pair(sb, tb, Layout::Permuted, c.lo_b, c.hi_b);
        if (!contains(c.dtypes, td::result_type(a.cpu, b.cpu))) continue;
        std::ostringstream what;
        what << c.name << " of " << td::dtype_name(ta) << " " << td::shape_str(sa) << " and " << td::dtype_name(tb)
             << " " << td::shape_str(sb);
        compare_binary(c, a, b, what.str());
      }
    }
  }
  // Numbers, and 0-dim tensors on the device, on either side.
  using T = const Tensor&;
  const std::vector<std::pair<std::string, std::function<Tensor(T)>>> with_numbers = {
      {"x + 2.5", [](T x) { return x + 2.5; }},
      {"x + 3", [](T x) { return x + 3; }},
      {"x * true", [](T x) { return x * true; }},
      {"x - 1.5 alpha 2", [](T x) { return td::sub(x, 1.5, 2); }},
      {"2.0 - x", [](T x) { return 2.0 - x; }},
      {"2.0 / x", [](T x) { return 2.0 / x; }},
      {"x / 4", [](T x) { return x / 4; }},
      // Numbers float16 or bfloat16 cannot hold: those dtypes take them in float32, in one pass.
      {"x * 0.1", [](T x) { return x * 0.1; }},
      {"x / 3.0", [](T x) { return x / 3.0; }},
      {"x * 1e5", [](T x) { return x * 1e5; }},
      {"x > 0.5", [](T x) { return x > 0.5; }},
      {"x == 1", [](T x) { return x == 1; }},
      {"x + 0-dim float64", [](T x) { return x + td::full({}, 0.25, on_device(td::kFloat64)).to(x.device()); }},
      {"0-dim int32 * x", [](T x) { return td::full({}, 3, on_device(td::kInt32)).to(x.device()) * x; }},
      {"maximum(x, 0-dim)",
       [](T x) { return td::maximum(x, td::zeros({}, td::TensorOptions(x.dtype()).device(x.device()))); }},
  };
  for (DType dtype : kAll) {
    for (const Shape& shape : {Shape{}, Shape{33}, Shape{7, 33}}) {
      Pair x = ct::random_pair(shape, dtype, Layout::Strided, -3, 3);
      for (const auto& [name, fn] : with_numbers) {
        check_equal(fn(x.dev), fn(x.cpu), name + " for " + td::dtype_name(dtype) + " " + td::shape_str(shape));
      }
    }
  }
  // The same in place, into views, for the 16-bit floats.
  for (DType dtype : {td::kFloat16, td::kBFloat16}) {
    for (Layout layout : {Layout::Strided, Layout::Permuted, Layout::Offset}) {
      Pair x = ct::random_pair({7, 33}, dtype, layout, -3, 3);
      x.cpu.mul_(0.1).div_(3.0);
      x.dev.mul_(0.1).div_(3.0);
      const std::string what = std::string("mul_(0.1).div_(3.0) of ") + td::dtype_name(dtype) + " (" +
                               ct::layout_name(layout) + ")";
      check_equal(x.dev, x.cpu, what);
      check_outside_equal(x.dev, x.cpu, what);
    }
  }
}

void in_place_binary_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 105 : 5);
  size_t turn = 0;
  using T = Tensor&;
  using C = const Tensor&;
  const std::vector<std::pair<std::string, std::function<void(T, C)>>> ops = {
      {"add_", [](T a, C b) { a.add_(b); }},   {"add_ alpha 2", [](T a, C b) { a.add_(b, 2); }},
      {"sub_", [](T a, C b) { a.sub_(b); }},   {"mul_", [](T a, C b) { a.mul_(b); }},
      {"div_", [](T a, C b) { a.div_(b); }},   {"pow_", [](T a, C b) { a.pow_(b.abs()); }},
      {"copy_", [](T a, C b) { a.copy_(b); }}, {"masked_fill_", [](T a, C b) { a.masked_fill_(b > 0, 7); }},
  };
  // (destination, source): same dtype; a wider source whose result is cast back; an integer into a float.
  const std::vector<std::pair<DType, DType>> dtypes = {{td::kFloat32, td::kFloat32},   {td::kFloat16, td::kFloat32},
                                                       {td::kInt32, td::kInt64},       {td::kFloat64, td::kInt32},
                                                       {td::kBFloat16, td::kBFloat16}, {td::kInt64, td::kUInt8}};
  for (const auto& [name, op] : ops) {
    for (const auto& [td_dst, td_src] : dtypes) {
      const bool integral_result = !td::is_floating(td_dst) && !td::is_floating(td_src);
      if (name == "div_" && !td::is_floating(td_dst)) continue;  // true division gives a float
      for (const auto& [sd, ss] :
           std::vector<std::pair<Shape, Shape>>{{{7, 33}, {33}}, {{33}, {}}, {{5, 4, 3}, {5, 1, 3}}}) {
        const std::vector<Layout> layouts = {Layout::Permuted, Layout::Strided, Layout::Offset};
        const size_t first = large ? 0 : turn % layouts.size(), last = large ? layouts.size() : first + 1;
        ++turn;
        for (size_t l = first; l < last; ++l) {
          const Layout layout = layouts[l];
          Pair a = ct::random_pair(sd, td_dst, layout, -3, 3);
          Pair b = ct::random_pair(ss, td_src, Layout::Broadcast, integral_result ? 1 : -3, 3);
          op(a.cpu, b.cpu);
          op(a.dev, b.dev);
          std::string what = name + " of " + td::dtype_name(td_src) + " " + td::shape_str(ss) + " into " +
                             td::dtype_name(td_dst) + " " + td::shape_str(sd) + " (" + ct::layout_name(layout) + ")";
          compare(a.dev, a.cpu, name != "pow_", what);
          check_outside_equal(a.dev, a.cpu, what);
        }
      }
    }
  }
}

TEST_CASE("integer sums, differences and products that pass the dtype's range wrap as on the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  constexpr int64_t k62 = int64_t{1} << 62;
  const Tensor big = td::full({1000}, k62 + 12345, td::kInt64), near_max = td::full({33}, (1 << 30) + 7, td::kInt32);
  const Tensor dev_big = ct::twin(big), dev_near = ct::twin(near_max);
  check_equal(dev_big + dev_big, big + big, "int64 add");
  check_equal(td::sub(ct::twin(-big), dev_big, 3), td::sub(-big, big, 3), "int64 sub with alpha");
  check_equal(dev_near + dev_near, near_max + near_max, "int32 add");
  check_equal(dev_near * dev_near, near_max * near_max, "int32 mul");
  check_equal(dev_big.sum(), big.sum(), "int64 sum");
  check_equal(dev_near.sum(), near_max.sum(), "int32 sum in int64");
  check_equal(dev_big.cumsum(0), big.cumsum(0), "int64 cumsum");
  check_equal(dev_big.prod(), big.prod(), "int64 prod");
  check_equal(td::add(dev_big, dev_big, 5), td::add(big, big, 5), "int64 add with alpha");
  check_equal(td::arange(int64_t{1} << 62, std::numeric_limits<int64_t>::max(), k62 / 3,
                         td::TensorOptions(td::kInt64).device(dev_big.device())),
              td::arange(int64_t{1} << 62, std::numeric_limits<int64_t>::max(), k62 / 3, td::kInt64), "int64 arange");
  const Tensor m = big.narrow(0, 0, 12).view({3, 4}), n = big.narrow(0, 0, 20).view({4, 5});
  check_equal(td::mm(ct::twin(m), ct::twin(n)), td::mm(m, n), "int64 mm");
  const Tensor bias = big.narrow(0, 0, 15).view({3, 5});
  check_equal(td::addmm(ct::twin(bias), ct::twin(m), ct::twin(n), 3, 7), td::addmm(bias, m, n, 3, 7),
              "int64 addmm with beta and alpha");
  const Tensor a3 = big.narrow(0, 0, 24).view({2, 3, 4}), b3 = big.narrow(0, 0, 40).view({2, 4, 5});
  check_equal(td::bmm(ct::twin(a3), ct::twin(b3)), td::bmm(a3, b3), "int64 bmm");
  const Tensor index = td::zeros({1000}, td::kInt64);
  check_equal(td::zeros({2}, td::kInt64).to(dev_big.device()).scatter_add_(0, ct::twin(index), dev_big),
              td::zeros({2}, td::kInt64).scatter_add_(0, index, big), "int64 scatter_add");
  Tensor sum = td::empty({1000}, td::TensorOptions(td::kInt64).device(dev_big.device()));
  Tensor cpu_sum = td::empty({1000}, td::kInt64);
  td::kernels::add_n_into(sum, {dev_big, dev_big, dev_big});
  td::kernels::add_n_into(cpu_sum, {big, big, big});
  check_equal(sum, cpu_sum, "int64 add_n");
}

TEST_CASE("in-place binary ops, converting and broadcasting into a non-contiguous destination", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  in_place_binary_sweep(false);
}

TEST_CASE("in-place binary ops, converting and broadcasting into a non-contiguous destination, every layout",
          "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  in_place_binary_sweep(true);
}

void where_clamp_sweep(bool large, uint8_t poison_byte = 0xFF) {
  ct::PoisonGuard poison(poison_byte);
  tt::reseed(large ? 106 : 6);
  size_t turn = 0;
  for (DType dtype : kAll) {
    std::vector<std::tuple<Shape, Shape, Shape>> shapes = {
        {{7, 33}, {7, 33}, {7, 33}}, {{33}, {7, 1}, {}}, {{}, {33}, {33}}, {{0, 3}, {3}, {1}}};
    if (large) shapes.push_back({{1000003}, {1000003}, {}});
    for (const auto& [sc, sa, sb] : shapes) {
      const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Strided, Layout::Broadcast};
      const size_t first = large ? 0 : turn % layouts.size(), last = large ? layouts.size() : first + 1;
      ++turn;
      for (size_t l = first; l < last; ++l) {
        const Layout layout = layouts[l];
        Pair c = ct::random_pair(sc, td::kBool, layout);
        Pair a = ct::random_pair(sa, dtype, Layout::Permuted);
        Pair b = ct::random_pair(sb, dtype, layout);
        if (td::is_floating(dtype)) {
          sprinkle(a.cpu, 0.1, kNaN);
          a.dev = ct::twin(a.cpu);
        }
        std::string what = std::string(td::dtype_name(dtype)) + " " + td::shape_str(sc) + " " + td::shape_str(sa) +
                           " " + td::shape_str(sb) + " (" + ct::layout_name(layout) + ")";
        check_equal(td::where(c.dev, a.dev, b.dev), td::where(c.cpu, a.cpu, b.cpu), "where " + what);
        check_equal(td::where(c.dev, a.dev, 2), td::where(c.cpu, a.cpu, 2), "where(c, a, 2) " + what);
        check_equal(td::where(c.dev, 0.5, b.dev), td::where(c.cpu, 0.5, b.cpu), "where(c, 0.5, b) " + what);
        check_equal(td::where(c.dev, 1, 0), td::where(c.cpu, 1, 0), "where(c, 1, 0) " + what);
        if (td::broadcast_shapes(sa, sc, "test") == sa) {
          check_equal(td::masked_fill(a.dev, c.dev, -7), td::masked_fill(a.cpu, c.cpu, -7), "masked_fill " + what);
        }
        if (dtype != td::kBool) {
          check_equal(td::clamp(a.dev, -1, 1), td::clamp(a.cpu, -1, 1), "clamp " + what);
          check_equal(td::clamp(a.dev, std::nullopt, 0.5), td::clamp(a.cpu, std::nullopt, 0.5), "clamp max " + what);
          if (td::is_floating(dtype)) {
            check_equal(td::clamp(a.dev, kNaN, 1.0), td::clamp(a.cpu, kNaN, 1.0), "clamp NaN min " + what);
            check_equal(td::clamp(a.dev, -1.0, kNaN), td::clamp(a.cpu, -1.0, kNaN), "clamp NaN max " + what);
          }
        }
      }
    }
  }
}

TEST_CASE("where, masked_fill and clamp select as on the CPU, NaN included", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  for (uint8_t byte : ct::kPoisonBytes) where_clamp_sweep(false, byte);
}

TEST_CASE("where, masked_fill and clamp select as on the CPU, NaN included, every size and layout", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  where_clamp_sweep(true);
}

void fill_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 107 : 7);
  size_t turn = 0;
  for (DType dtype : kAll) {
    const std::vector<Layout> writable = {Layout::Permuted, Layout::Strided, Layout::Offset};
    for (const auto& [shape, layout] : sweep(large, {{}, {7, 33}, {3, 0}}, {{7}, {1000003}}, turn++, writable)) {
      std::string what = describe("fill", dtype, shape, layout);
      Pair x = ct::random_pair(shape, dtype, layout);
      const double value = dtype == td::kUInt8 ? 1.5 : -1.5;  // uint8 refuses a negative fraction, as PyTorch does
      x.cpu.fill_(value);
      x.dev.fill_(value);
      check_equal(whole(x.dev), whole(x.cpu), what);
      Pair y = ct::random_pair(shape, dtype, layout);
      Pair mask = ct::random_pair(shape.empty() ? Shape{} : Shape{shape.back()}, td::kBool);
      y.cpu.masked_fill_(mask.cpu, true);
      y.dev.masked_fill_(mask.dev, true);
      check_equal(whole(y.dev), whole(y.cpu), "masked_fill_ " + what);
    }
  }
}

TEST_CASE("addcmul_ gives the CPU's fused multiply-adds in a non-contiguous view, broadcasting", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(9);
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    for (Layout layout : {Layout::Permuted, Layout::Strided, Layout::Offset}) {
      for (const Shape& shape : {Shape{7, 33}, Shape{1, 1000003}, Shape{3, 0}}) {
        const std::string what = describe("addcmul_", dtype, shape, layout);
        Pair self = ct::random_pair(shape, dtype, layout);
        Pair a = ct::random_pair(shape, dtype, Layout::Strided);
        Pair b = ct::random_pair({shape.back()}, dtype);
        td::kernels::addcmul_(self.cpu, a.cpu, b.cpu, 0.37);
        td::kernels::addcmul_(self.dev, a.dev, b.dev, 0.37);
        check_equal(whole(self.dev), whole(self.cpu), what);
      }
    }
  }
}

TEST_CASE("fill_ and masked_fill_ write only the elements of a non-contiguous view", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  fill_sweep(false);
}

TEST_CASE("fill_ and masked_fill_ write only the elements of a non-contiguous view, every size", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  fill_sweep(true);
}

// ---------------------------------------------------------------------------------------------
// copies, conversions, factories

// Every dtype's values, including those whose conversion saturates, wraps or rounds: NaN, infinities,
// values beyond the integer ranges, halfway cases.
Tensor conversion_values(DType dtype) {
  Tensor x = tt::random_tensor({1000}, td::kFloat64, tt::Layout::Contiguous, -70000, 70000);
  Tensor special = td::tensor(std::vector<double>{0.0, -0.0, kInf,  -kInf, kNaN, 0.5,   -0.5, 1.5,   2.5,     -2.5, 255,
                                                  256, -129, 65504, 65520, 1e10, -1e10, 3e38, 1e300, 1.0 / 3, 2049});
  return td::cat({x, special}).to(dtype);
}

TEST_CASE("casts between every pair of dtypes give the CPU's values", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(8);
  for (DType from : kAll) {
    Tensor x = conversion_values(from);
    for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
      Tensor src = layout == Layout::Contiguous ? x : x.slice(0, 1, std::nullopt, 3);
      Tensor dev = ct::twin(src);
      for (DType to : kAll) {
        std::string what =
            std::string(td::dtype_name(from)) + " to " + td::dtype_name(to) + " (" + ct::layout_name(layout) + ")";
        check_equal(dev.to(to), src.to(to), what);
        check_equal(src.to(ct::device(), to), src.to(to), what + ", from the host");
        Tensor back = dev.to(td::Device(td::kCPU), to);
        CHECK(back.is_cpu());
        check_equal(back.to(ct::device()), src.to(to), what + ", to the host");
      }
    }
  }
}

TEST_CASE("copy_ between devices, dtypes and layouts, broadcasting, writes only the destination's view", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(9);
  // Destinations are views of a base that lives on either device; sources on either device.
  auto views = [](const Tensor& base) -> std::vector<std::pair<std::string, Tensor>> {
    return {{"whole", base},
            {"transposed", base.t()},
            {"rows with step 2", base.slice(0, 1, std::nullopt, 2)},
            {"columns with step 3 of the transpose", base.t().slice(0, 0, std::nullopt, 3)},
            {"one row", base.select(0, 2)},
            {"narrowed", base.narrow(1, 3, 20)}};
  };
  for (const auto& [dst_dtype, src_dtype] : std::vector<std::pair<DType, DType>>{{td::kFloat32, td::kFloat32},
                                                                                 {td::kFloat16, td::kFloat64},
                                                                                 {td::kInt32, td::kFloat32},
                                                                                 {td::kBool, td::kInt64},
                                                                                 {td::kFloat64, td::kBFloat16},
                                                                                 {td::kUInt8, td::kUInt8}}) {
    for (bool dst_on_device : {true, false}) {
      for (bool src_on_device : {true, false}) {
        if (!dst_on_device && !src_on_device) continue;
        Tensor base_cpu = tt::random_tensor({9, 33}, dst_dtype, tt::Layout::Contiguous, -3, 3);
        const auto cpu_views = views(base_cpu);
        for (size_t v = 0; v < cpu_views.size(); ++v) {
          Tensor ref_base = base_cpu.clone();
          Tensor dev_base = dst_on_device ? ct::twin(base_cpu) : base_cpu.clone();
          Tensor ref_dst = views(ref_base)[v].second, dst = views(dev_base)[v].second;
          for (const Shape& src_shape : {ref_dst.sizes(), Shape{ref_dst.sizes().back()}, Shape{}}) {
            Pair src =
                ct::random_pair(src_shape, src_dtype, src_shape.size() > 1 ? Layout::Permuted : Layout::Strided, -3, 3);
            const uint32_t version = dst.version();
            ref_dst.copy_(src.cpu);
            dst.copy_(src_on_device ? src.dev : src.cpu);
            CHECK(dst.version() == version + 1);
            std::ostringstream what;
            what << td::dtype_name(src_dtype) << " " << td::shape_str(src_shape)
                 << (src_on_device ? " on the device" : " on the host") << " into the " << cpu_views[v].first
                 << " view of " << td::dtype_name(dst_dtype) << " [9, 33]"
                 << (dst_on_device ? " on the device" : " on the host");
            if (dst_on_device) {
              check_equal(dev_base, ref_base, what.str());
            } else {
              check_equal(dev_base.to(ct::device()), ref_base, what.str());
            }
          }
        }
      }
    }
  }
}

void copy_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 110 : 10);
  size_t turn = 0;
  for (DType dtype : kAll) {
    for (const auto& [shape, layout] : sweep(large, {{}, {0}, {7, 33}, {3, 5, 7}}, {{7}, {1000003}}, turn++)) {
      Pair x = ct::random_pair(shape, dtype, layout);
      std::string what = describe("copy", dtype, shape, layout);
      Tensor c = x.dev.contiguous();
      CHECK(c.is_contiguous());
      check_equal(c, x.cpu, "contiguous " + what);
      Tensor k = x.dev.clone();
      CHECK(!k.is_alias_of(x.dev));
      check_equal(k, x.cpu, "clone " + what);
      Tensor back = x.dev.cpu();
      CHECK(back.is_cpu());
      check_equal(back.to(ct::device()), x.cpu, "to the host " + what);
      check_equal(x.dev.reshape({-1}), x.cpu.reshape({-1}), "reshape " + what);
    }
  }
  // The same tensor object when nothing changes, as on the CPU.
  Tensor t = td::ones({3}, on_device(td::kFloat32));
  CHECK(t.to(ct::device()).is_same(t));
  CHECK(t.to(td::kFloat32).is_same(t));
}

TEST_CASE("to(), clone and contiguous of non-contiguous CUDA tensors", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  copy_sweep(false);
}

TEST_CASE("to(), clone and contiguous of non-contiguous CUDA tensors, every size and layout", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  copy_sweep(true);
}

TEST_CASE("to() and copy_ between two CUDA devices, converting and into a transposed view", "[cuda][devices]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  if (td::cuda::device_count() < 2) {
    tt::mark_skipped("needs two CUDA devices (TANDEM_VISIBLE_DEVICES=0,0 makes two of one GPU)");
    return;
  }
  ct::PoisonGuard poison;
  tt::reseed(34);
  const td::Device other(td::kCUDA, 1);
  for (DType dtype : kAll) {
    for (Layout layout : {Layout::Contiguous, Layout::Strided, Layout::Broadcast}) {
      Pair x = ct::random_pair({7, 33}, dtype, layout);
      const std::string what = describe("to cuda:1", dtype, {7, 33}, layout);
      Tensor moved = x.dev.to(other);
      CHECK(moved.device() == other);
      check_equal(moved.to(ct::device()), x.cpu, what);
      Tensor converted = x.dev.to(other, td::kFloat64);
      CHECK(converted.device() == other);
      check_equal(converted.to(ct::device()), x.cpu.to(td::kFloat64), what + " as float64");
      Tensor dst = td::zeros({33, 7}, td::TensorOptions(td::kFloat16).device(other)).t();
      dst.copy_(x.dev);
      check_equal(dst.to(ct::device()), x.cpu.to(td::kFloat16), what + ", copy_ into a transposed float16 view");
      Tensor back = td::zeros({7, 33}, on_device(dtype));
      back.copy_(moved);
      check_equal(back, x.cpu, what + ", and back");
    }
  }
}

TEST_CASE("item() reads one element of every dtype back from the device", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(11);
  for (DType dtype : kAll) {
    Pair x = ct::random_pair({7, 33}, dtype, Layout::Strided, -100, 100);
    for (int64_t i : {0, 3, 6}) {
      const td::Scalar a = x.dev.select(0, i).select(0, 32 - i).item(), e = x.cpu.select(0, i).select(0, 32 - i).item();
      CHECK(a.kind() == e.kind());
      CHECK(a.to_double() == e.to_double());
    }
    CHECK(x.dev.to(td::kInt64).sum().item<int64_t>() == x.cpu.to(td::kInt64).sum().item<int64_t>());
  }
  CHECK(td::full({}, 2.5, on_device(td::kFloat64)).item<double>() == 2.5);
  CHECK(td::full({1, 1}, -7, on_device(td::kInt64)).item<int64_t>() == -7);
  tt::check_error([] { td::zeros({2}, on_device(td::kFloat32)).item(); }, {"item", "2 elements"});
}

TEST_CASE("pinned host memory: to the device and back, and copies into pinned memory", "[cuda]") {
  TD_SKIP_UNLESS_CUDA_ITSELF();
  ct::PoisonGuard poison;
  tt::reseed(12);
  for (DType dtype : {td::kFloat32, td::kFloat16, td::kInt64, td::kBool}) {
    for (const Shape& shape : {Shape{0}, Shape{1}, Shape{7, 33}, Shape{100003}}) {
      Tensor host = tt::random_tensor(shape, dtype, tt::Layout::Strided);
      Tensor pinned = host.pin_memory();
      if (td::numel_of(shape) > 0) CHECK(pinned.is_pinned());  // no memory, nothing pinned
      CHECK(pinned.is_cpu());
      Tensor dev = pinned.to(ct::device());
      Tensor landing = td::empty(shape, td::TensorOptions(dtype)).pin_memory();
      landing.copy_(dev);
      std::string what = describe("pinned", dtype, shape, Layout::Strided);
      check_equal(landing.to(ct::device()), host, what);
      check_equal(dev, host, what);
      // Asynchronous copies from pinned memory, many in flight, then one read back.
      std::vector<Tensor> pieces;
      for (int k = 0; k < 4; ++k) pieces.push_back(host.pin_memory().to(ct::device()));
      for (const Tensor& p : pieces) check_equal(p, host, what + ", one of several copies");
    }
  }
}

void factory_sweep(bool large) {
  ct::PoisonGuard poison;
  const int64_t n = large ? 1000003 : 1003;
  for (DType dtype : kAll) {
    const td::TensorOptions cpu(dtype), dev = on_device(dtype);
    std::string name = td::dtype_name(dtype);
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{7, 33}, Shape{n}}) {
      check_equal(td::zeros(shape, dev), td::zeros(shape, cpu), "zeros " + name);
      check_equal(td::ones(shape, dev), td::ones(shape, cpu), "ones " + name);
      const double value = dtype == td::kUInt8 ? 2.75 : -2.75;  // uint8 refuses a negative fraction
      check_equal(td::full(shape, value, dev), td::full(shape, value, cpu), "full " + name);
    }
    for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {1, 1}, {7, 7}, {7, 33}, {33, 7}}) {
      check_equal(td::eye(n, m, dev), td::eye(n, m, cpu), "eye " + name);
    }
    if (dtype == td::kBool) continue;
    check_equal(td::arange(0, n, 1, dev), td::arange(0, n, 1, cpu), "arange " + name);
    check_equal(td::arange(50, -7, -3, dev), td::arange(50, -7, -3, cpu), "arange down " + name);
    check_equal(td::arange(0, 0, 1, dev), td::arange(0, 0, 1, cpu), "empty arange " + name);
    check_equal(td::arange(-1.5, 2.3, 0.1, dev), td::arange(-1.5, 2.3, 0.1, cpu), "float arange " + name);
    for (int64_t steps : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{7}, int64_t{33}, n}) {
      check_equal(td::linspace(-3, 11.5, steps, dev), td::linspace(-3, 11.5, steps, cpu), "linspace " + name);
    }
  }
  check_equal(td::arange(n, on_device(td::kInt64)), td::arange(n), "arange(n)");
  check_equal(td::arange(0.0, 1.0, 1.0 / 7, on_device(td::kFloat64)), td::arange(0.0, 1.0, 1.0 / 7, td::kFloat64),
              "arange in float64");
  check_equal(td::tensor({{1.5, 2.0}, {3.0, -4.0}}, on_device(td::kFloat16)),
              td::tensor({{1.5, 2.0}, {3.0, -4.0}}, td::kFloat16), "tensor() on the device");
}

TEST_CASE("zeros, ones, full, eye, arange and linspace on the device equal the CPU's", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  factory_sweep(false);
}

TEST_CASE("zeros, ones, full, eye, arange and linspace on the device equal the CPU's, 1000003 elements",
          "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  factory_sweep(true);
}

// ---------------------------------------------------------------------------------------------
// random

void random_sweep(bool large) {
  ct::PoisonGuard poison;
  const uint64_t seed = tt::test_seed() ^ 0x5eed;
  const std::vector<Shape> shapes =
      large ? std::vector<Shape>{{1000003}, {3, 333335}} : std::vector<Shape>{{}, {0}, {1}, {7}, {33}, {7, 33}};
  for (const Shape& shape : shapes) {
    const std::string s = td::shape_str(shape);
    for (DType dtype : kFloating) {
      const std::string what = std::string(td::dtype_name(dtype)) + " " + s;
      // Two fills in a row: the second also starts where the first left the generator.
      ct::manual_seed_as_cpu(seed);
      Tensor c1 = td::rand(shape, dtype), c2 = td::rand(shape, dtype);
      ct::manual_seed_as_cpu(seed);
      Tensor d1 = td::rand(shape, on_device(dtype)), d2 = td::rand(shape, on_device(dtype));
      check_equal(d1, c1, "rand " + what);
      check_equal(d2, c2, "second rand " + what);

      ct::manual_seed_as_cpu(seed);
      Tensor cn = td::randn(shape, dtype);
      ct::manual_seed_as_cpu(seed);
      Tensor dn = td::randn(shape, on_device(dtype));
      // Box-Muller's log, sqrt and sin/cos may differ in the last bit between the host and the device.
      check_close(dn, cn, rtol_for(dtype), rtol_for(dtype), "randn " + what);

      Tensor pc = td::rand(shape, dtype), pd = ct::twin(pc);
      ct::manual_seed_as_cpu(seed);
      Tensor bc = td::bernoulli(pc);
      ct::manual_seed_as_cpu(seed);
      Tensor bd = td::bernoulli(pd);
      check_equal(bd, bc, "bernoulli(p) " + what);
    }
    for (DType dtype : kAll) {
      const std::string what = std::string(td::dtype_name(dtype)) + " " + s;
      const bool narrow = dtype == td::kUInt8 || dtype == td::kBool;  // no negatives; bool only 0 and 1
      const int64_t low = narrow ? 0 : -5, high = narrow ? 2 : 1000;
      ct::manual_seed_as_cpu(seed);
      Tensor c = td::randint(low, high, shape, dtype);
      ct::manual_seed_as_cpu(seed);
      Tensor d = td::randint(low, high, shape, on_device(dtype));
      check_equal(d, c, "randint " + what);
      Tensor like_c = td::empty(shape, dtype);
      Tensor like_d = td::empty(shape, on_device(dtype));
      ct::manual_seed_as_cpu(seed);
      Tensor bc = td::bernoulli(like_c, 0.3);
      ct::manual_seed_as_cpu(seed);
      Tensor bd = td::bernoulli(like_d, 0.3);
      check_equal(bd, bc, "bernoulli(like, 0.3) " + what);
    }
  }
  ct::manual_seed_as_cpu(seed);
  Tensor big = td::randint(std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2, {33, 33});
  ct::manual_seed_as_cpu(seed);
  check_equal(td::randint(std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2, {33, 33},
                          on_device(td::kInt64)),
              big, "randint over a wide range");
}

TEST_CASE("random fills are bit-identical to the CPU's for the same key", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  random_sweep(false);
}

TEST_CASE("random fills of a million elements are bit-identical to the CPU's for the same key", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  random_sweep(true);
}

TEST_CASE("poisson and binomial draw the CPU's variates for the same key: every regime, views, four dtypes",
          "[cuda]") {
  // Each element's draws come from its own Philox stream on both devices, through the same code. The
  // acceptance tests compare logs and lgamma, which may differ by an ulp between host and device; a
  // draw that close to its boundary is rarer than one in 10^12, so the variates are equal.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(79);
  const uint64_t seed = tt::test_seed() ^ 0x9015;
  for (DType dtype : kFloating) {
    const double top = dtype == td::kFloat16 ? 3 : 6;  // rates 10^[-1, top): both samplers
    for (const Shape& shape : std::vector<Shape>{{1}, {7}, {3, 11}, {1000003}}) {
      const std::vector<Layout> layouts = is_big(shape) ? std::vector<Layout>{Layout::Strided} : ct::all_layouts();
      for (Layout layout : layouts) {
        const std::string what = describe("poisson", dtype, shape, layout);
        Tensor rates = ct::random_input(shape, dtype, layout, -1, top);
        whole(rates).copy_(td::pow(10.0, whole(rates).to(td::kFloat64)));
        for (double v : {0.0, kInf}) sprinkle(rates, 0.01, v);
        ct::manual_seed_as_cpu(seed);
        const Tensor want = td::poisson(rates);
        ct::manual_seed_as_cpu(seed);
        check_equal(td::poisson(ct::twin(rates)), want, what);

        // Counts 10^[0, top) against probabilities in [0, 1) (the two tails, both samplers), broadcast.
        Tensor count = ct::random_input(shape, dtype, layout, 0, top);
        whole(count).copy_(td::round(td::pow(10.0, whole(count).to(td::kFloat64))));
        Tensor prob = ct::random_input(shape, dtype, Layout::Contiguous, 0, 1);
        for (double v : {0.0, 1.0, kNaN}) sprinkle(prob, 0.01, v);
        ct::manual_seed_as_cpu(seed);
        const Tensor want_b = td::binomial(count, prob);
        ct::manual_seed_as_cpu(seed);
        check_equal(td::binomial(ct::twin(count), ct::twin(prob)), want_b, describe("binomial", dtype, shape, layout));
      }
    }
  }
}

TEST_CASE("standard_gamma and standard_gamma_grad on the device equal the CPU's, all layouts, four dtypes", "[cuda]") {
  // Each element's draws come from its own Philox stream on both devices, through the same code
  // (kernels/sampling.h). The accepted variate is d (1 + c z)^3 u^(1/alpha) from the GPU's own log,
  // cos, sqrt and exp, an ulp or a few from glibc's: equal within the dtype's tolerance (an acceptance
  // test that close to its boundary is rarer than one in 10^12). The gradient runs the same series
  // and continued fraction in double, with digamma and log carried through a sum of about sqrt(alpha)
  // terms: within 1e-11 in float64.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(81);
  const uint64_t seed = tt::test_seed() ^ 0x6a33;
  for (DType dtype : kFloating) {
    const double r = dtype == td::kFloat64 ? 1e-11 : rtol_for(dtype);
    const double top = dtype == td::kFloat16 ? 3 : 5;  // alpha 10^[-2, top): both regimes
    for (const Shape& shape : std::vector<Shape>{{1}, {7}, {3, 11}, {1000003}}) {
      const std::vector<Layout> layouts = is_big(shape) ? std::vector<Layout>{Layout::Strided} : ct::all_layouts();
      for (Layout layout : layouts) {
        Tensor alpha = ct::random_input(shape, dtype, layout, -2, top);
        whole(alpha).copy_(td::pow(10.0, whole(alpha).to(td::kFloat64)));
        for (double v : {0.0, kInf}) sprinkle(alpha, 0.01, v);
        ct::manual_seed_as_cpu(seed);
        const Tensor want = td::standard_gamma(alpha);
        ct::manual_seed_as_cpu(seed);
        const Tensor got = td::standard_gamma(ct::twin(alpha));
        CHECK(got.device() == ct::device());
        check_close(got, want, r, 0, describe("standard_gamma", dtype, shape, layout));
        check_close(td::standard_gamma_grad(ct::twin(alpha), got.to(dtype)), td::standard_gamma_grad(alpha, want), r, 0,
                    describe("standard_gamma_grad", dtype, shape, layout));
      }
    }
  }
  // Through a distribution: Gamma's rsample on the device has the CPU's gradients.
  Tensor concentration = td::full({1000}, 2.5, td::kFloat64).requires_grad_(true);
  Tensor device_concentration = concentration.detach().to(ct::device()).requires_grad_(true);
  ct::manual_seed_as_cpu(seed);
  td::standard_gamma(concentration).sum().backward();
  ct::manual_seed_as_cpu(seed);
  td::standard_gamma(device_concentration).sum().backward();
  check_close(device_concentration.grad(), concentration.grad(), 1e-11, 0, "StandardGammaBackward0 on the device");
}

TEST_CASE("the in-place samplers and normal(mean, std) draw the CPU's values for the same key", "[cuda]") {
  // The same float64 uniforms on both devices through the same transforms: whole-number samplers are
  // equal, the others within the dtype's tolerance (the GPU's log1p, tan and exp are an ulp or a few off).
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(80);
  const uint64_t seed = tt::test_seed() ^ 0x5a11;
  using Sampler = std::function<void(Tensor&)>;
  struct Case {
    std::string name;
    Sampler sample;
    bool integer_valued;
  };
  const std::vector<Case> cases = {
      {"uniform_", [](Tensor& t) { t.uniform_(-2, 3); }, false},
      {"normal_", [](Tensor& t) { t.normal_(1, 2); }, false},
      {"bernoulli_", [](Tensor& t) { t.bernoulli_(0.3); }, true},
      {"exponential_", [](Tensor& t) { t.exponential_(1.5); }, false},
      {"geometric_", [](Tensor& t) { t.geometric_(0.2); }, true},
      {"cauchy_", [](Tensor& t) { t.cauchy_(1, 2); }, false},
      {"log_normal_", [](Tensor& t) { t.log_normal_(0.5, 0.5); }, false},
      {"random_", [](Tensor& t) { t.random_(-7, 100); }, true},
  };
  for (const Case& c : cases) {
    for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16}) {
      for (const Shape& shape : std::vector<Shape>{{1}, {7}, {3, 11}, {1000003}}) {
        // A transposed view on both devices: the values follow its logical order.
        Tensor cpu = td::zeros(shape.size() == 2 ? Shape{shape[1], shape[0]} : shape, dtype);
        Tensor dev = ct::twin(cpu);
        Tensor cpu_view = shape.size() == 2 ? cpu.t() : cpu, dev_view = shape.size() == 2 ? dev.t() : dev;
        ct::manual_seed_as_cpu(seed);
        c.sample(cpu_view);
        ct::manual_seed_as_cpu(seed);
        c.sample(dev_view);
        const std::string what = describe(c.name, dtype, shape, Layout::Contiguous);
        if (c.integer_valued) {
          check_equal(dev, cpu, what);
        } else {
          check_close(dev, cpu, rtol_for(dtype), rtol_for(dtype), what);
        }
      }
    }
  }
  for (const Shape& shape : std::vector<Shape>{{7}, {1000003}}) {
    const Tensor mean = ct::random_input(shape, td::kFloat32, Layout::Contiguous, -3, 3);
    const Tensor stddev = ct::random_input({1}, td::kFloat64, Layout::Contiguous, 0, 2);
    ct::manual_seed_as_cpu(seed);
    const Tensor want = td::normal(mean, stddev);
    ct::manual_seed_as_cpu(seed);
    check_close(td::normal(ct::twin(mean), ct::twin(stddev)), want, rtol_for(td::kFloat64), rtol_for(td::kFloat64),
                describe("normal(mean, std)", td::kFloat64, shape, Layout::Contiguous));
  }
}

TEST_CASE("in-place random fills of non-contiguous views, and dropout, match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  const uint64_t seed = tt::test_seed() ^ 0xd209;
  tt::reseed(13);
  for (DType dtype : kFloating) {
    for (Layout layout : {Layout::Permuted, Layout::Strided, Layout::Offset}) {
      const std::string what = std::string(td::dtype_name(dtype)) + " " + ct::layout_name(layout);
      Pair x = ct::random_pair({7, 33}, dtype, layout);
      ct::manual_seed_as_cpu(seed);
      td::uniform_(x.cpu, -3, 5);
      Tensor cpu_row = x.cpu.select(0, 1), cpu_column = x.cpu.select(1, 4);
      td::normal_(cpu_row, 2, 0.5);
      td::bernoulli_(cpu_column, 0.25);
      ct::manual_seed_as_cpu(seed);
      td::uniform_(x.dev, -3, 5);
      Tensor row = x.dev.select(0, 1), column = x.dev.select(1, 4);
      td::normal_(row, 2, 0.5);
      td::bernoulli_(column, 0.25);
      // Uniform and Bernoulli exact; the normal row within rounding.
      check_close(whole(x.dev), whole(x.cpu), rtol_for(dtype), rtol_for(dtype), "fills " + what);
      check_equal(x.dev.select(1, 4), x.cpu.select(1, 4), "bernoulli_ column " + what);
      check_equal(x.dev.select(0, 0), x.cpu.select(0, 0), "uniform_ row " + what);

      Pair y = ct::random_pair({7, 33, 5}, dtype, layout);
      for (double p : {0.0, 0.3, 1.0}) {
        ct::manual_seed_as_cpu(seed);
        Tensor c = F::dropout(y.cpu, p, true);
        ct::manual_seed_as_cpu(seed);
        Tensor d = F::dropout(y.dev, p, true);
        check_equal(d == 0, c == 0, "dropout mask " + what);
        check_close(d, c, rtol_for(dtype), 0, "dropout " + what);
        // In place, the same draws write the non-contiguous tensor itself.
        Tensor written = tt::same_layout_on(y.cpu, y.dev.device());  // a copy: y.dev is read again below
        ct::manual_seed_as_cpu(seed);
        F::dropout_(written, p, true);
        CHECK(written.strides() == y.dev.strides());
        check_equal(written, d, "dropout_ " + what);
      }
      td::nn::Dropout module(0.5);
      module->eval();
      check_equal(module(y.dev), y.cpu, "dropout in eval mode " + what);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// reductions

struct ReduceCase {
  Shape shape;
  Dims dims;  // empty: all dims
};

// Sizes 1, 7, 33; single, negative, sets of and all dims; 0-dim and empty inputs; shapes for each
// of the CUDA reduction's strategies: one thread per output, coalesced columns, a group of threads
// per output; and, large, long folds split over blocks.
const std::vector<ReduceCase> kSmallReductions = {
    {{}, {}},           {{}, {0}},
    {{1}, {0}},         {{7}, {0}},
    {{33}, {-1}},       {{33}, {}},
    {{33, 7}, {0}},     {{33, 7}, {1}},
    {{7, 33}, {-1}},    {{33, 7}, {}},
    {{1, 7}, {0}},      {{4, 5, 6}, {0, 2}},
    {{4, 5, 6}, {1}},   {{4, 5, 6}, {-1, 0}},
    {{3, 1, 33}, {1}},  {{2, 3, 4, 5}, {1, 3}},
    {{2, 3, 4, 5}, {}}, {{40, 20}, {0}},
    {{3, 9, 40}, {1}},  {{5, 300}, {1}},
    {{300, 40}, {0}},   {{0, 3}, {0}},
    {{3, 0}, {1}},      {{2, 0, 3}, {}},
};
const std::vector<ReduceCase> kLargeReductions = {
    {{1000003}, {}}, {{3, 100003}, {1}}, {{100003, 3}, {0}}, {{2000, 64}, {0}}, {{2000, 100}, {1}},
};

int64_t fold_of(const ReduceCase& c) {
  int64_t fold = 1;
  if (c.dims.empty() || c.shape.empty()) return td::numel_of(c.shape);
  for (int64_t d : c.dims) fold *= c.shape[d < 0 ? d + static_cast<int64_t>(c.shape.size()) : d];
  return fold;
}

struct ReduceInput {
  Pair x;
  ReduceCase c;
  bool keepdim;
  std::string what;
};

// Calls body for cases and dtypes: small, half of the pairs (each dtype in every other case), each
// in one layout and keepdim or not, taking turns; large, every small case and dtype in every layout
// with and without keepdim, and the long folds in fewer dtypes and layouts. `nonempty`: only cases
// whose folds have elements; `single_dim`: only cases naming one dim.
void for_each_reduction(bool large, const std::vector<DType>& dtypes, double lo, double hi, bool nonempty,
                        bool single_dim, const std::function<void(const ReduceInput&)>& body) {
  const std::vector<DType> big_dtypes = {td::kFloat32, td::kFloat16, td::kInt64, td::kBool};
  std::vector<ReduceCase> cases = kSmallReductions;
  if (large) cases.insert(cases.end(), kLargeReductions.begin(), kLargeReductions.end());
  size_t turn = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ReduceCase& c = cases[i];
    if (nonempty && (fold_of(c) == 0 || td::numel_of(c.shape) == 0)) continue;
    if (single_dim && c.dims.size() != 1) continue;
    const bool big = is_big(c.shape);
    for (size_t j = 0; j < dtypes.size(); ++j) {
      const DType dtype = dtypes[j];
      if (big && !contains(big_dtypes, dtype)) continue;
      if (!large && (i + j) % 2 != 0) continue;
      std::vector<std::pair<Layout, bool>> variants;  // layout, keepdim
      if (!large) {
        variants.push_back({ct::all_layouts()[turn % ct::all_layouts().size()], turn % 2 == 1});
      } else if (big) {
        variants = {{Layout::Contiguous, false}, {c.shape.size() == 1 ? Layout::Strided : Layout::Permuted, false}};
      } else {
        for (Layout layout : ct::all_layouts()) variants.insert(variants.end(), {{layout, false}, {layout, true}});
      }
      ++turn;
      for (const auto& [layout, keepdim] : variants) {
        std::ostringstream what;
        what << td::dtype_name(dtype) << " " << td::shape_str(c.shape) << " (" << ct::layout_name(layout)
             << ") over dims " << (c.dims.empty() ? std::string("all") : td::shape_str(c.dims))
             << (keepdim ? " keepdim" : "");
        INFO(what.str());
        body(ReduceInput{ct::random_pair(c.shape, dtype, layout, lo, hi), c, keepdim, what.str()});
      }
    }
  }
}

// Half the spacing of the dtype's subnormals: how far rounding moves a result below the normal range.
double subnormal_atol(DType dtype) {
  switch (dtype) {
    case td::kFloat16: return std::ldexp(1.0, -25);
    case td::kBFloat16: return std::ldexp(1.0, -134);
    case td::kFloat32: return std::ldexp(1.0, -150);
    default: return 0;
  }
}

void sum_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 114 : 14);
  for_each_reduction(large, kAll, -2, 2, false, false, [](const ReduceInput& in) {
    const Tensor &dev = in.x.dev, &cpu = in.x.cpu;
    const Dims& dims = in.c.dims;
    Tensor s = td::sum(dev, dims, in.keepdim);
    if (td::is_floating(cpu.dtype())) {
      const double r = rtol_for(cpu.dtype()), a = 2 * subnormal_atol(cpu.dtype());
      check_close(s, td::sum(cpu, dims, in.keepdim), r, a, "sum " + in.what, td::sum(ct::abs64(cpu), dims, in.keepdim));
      check_close(td::mean(dev, dims, in.keepdim), td::mean(cpu, dims, in.keepdim), r, a, "mean " + in.what,
                  td::mean(ct::abs64(cpu), dims, in.keepdim));
      check_close(td::sum(dev, dims, in.keepdim, td::kFloat64), td::sum(cpu, dims, in.keepdim, td::kFloat64),
                  rtol_for(td::kFloat64), 0, "sum in float64 " + in.what, td::sum(ct::abs64(cpu), dims, in.keepdim));
    } else {
      check_equal(s, td::sum(cpu, dims, in.keepdim), "sum " + in.what);
      check_equal(td::sum(dev, dims, in.keepdim, td::kInt32), td::sum(cpu, dims, in.keepdim, td::kInt32),
                  "sum in int32 " + in.what);
      check_close(td::mean(dev, dims, in.keepdim, td::kFloat32), td::mean(cpu, dims, in.keepdim, td::kFloat32),
                  rtol_for(td::kFloat32), 0, "mean in float32 " + in.what, td::mean(ct::abs64(cpu), dims, in.keepdim));
    }
  });
}

TEST_CASE("sum and mean over any dims match the CPU within rounding of the sum of |x|", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  sum_sweep(false);
}

TEST_CASE("sum and mean over any dims, every layout and long folds, match the CPU", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  sum_sweep(true);
}

void prod_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 115 : 15);
  // Factors of magnitude near 1 (floats in [0.5, 1.5), integers 0 and 1 with a few 2s) and random
  // signs: products of hundreds of them stay inside every dtype's range.
  auto check = [](const ReduceInput& in) {
    if (is_big(in.c.shape)) return;  // a million factors over- or underflow
    Tensor cpu = in.x.cpu;
    if (!td::is_floating(cpu.dtype())) sprinkle(cpu, 0.02, 2);
    if (cpu.dtype() != td::kUInt8 && cpu.dtype() != td::kBool) {
      Tensor all = whole(cpu);
      all.copy_(td::where(td::rand(all.sizes()) < 0.5, -all, all));
    }
    Tensor dev = ct::twin(cpu);
    const double r = rtol_for(cpu.dtype()), a = 2 * subnormal_atol(cpu.dtype());
    auto same = [&](const Tensor& d, const Tensor& c, const std::string& what) {
      if (td::is_floating(c.dtype())) return check_close(d, c, r, a, what);
      check_equal(d, c, what);
    };
    same(td::prod(dev), td::prod(cpu), "prod of all " + in.what);
    if (in.c.dims.size() == 1) {
      same(td::prod(dev, in.c.dims[0], in.keepdim), td::prod(cpu, in.c.dims[0], in.keepdim), "prod " + in.what);
      same(td::prod(dev, in.c.dims[0], in.keepdim, td::kFloat64), td::prod(cpu, in.c.dims[0], in.keepdim, td::kFloat64),
           "prod in float64 " + in.what);
    }
  };
  for_each_reduction(large, kFloating, 0.5, 1.5, false, false, check);
  for_each_reduction(large, {td::kInt64, td::kInt32, td::kUInt8, td::kBool}, 0.5, 2, false, false, check);
  if (!large) return;
  // A long product that stays exact: factors of +-1 and a few powers of two that cancel.
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kInt64}) {
    Tensor x = td::where(td::rand({1000003}) < 0.5, -1.0, 1.0);
    x.narrow(0, 1000, 10).fill_(2);
    x.narrow(0, 900000, 10).fill_(0.5);
    if (!td::is_floating(dtype)) x.narrow(0, 900000, 10).fill_(1);
    x = x.to(dtype);
    check_equal(td::prod(ct::twin(x)), td::prod(x), std::string("long exact product in ") + td::dtype_name(dtype));
    Tensor square = x.narrow(0, 0, 1009 * 991).view({1009, 991});
    check_equal(td::prod(ct::twin(square), 0), td::prod(square, 0),
                std::string("exact products of columns in ") + td::dtype_name(dtype));
  }
}

TEST_CASE("prod matches the CPU, over all dims and along one", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  prod_sweep(false);
}

TEST_CASE("prod over every layout, and long exact products, match the CPU", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  prod_sweep(true);
}

void extremum_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 116 : 16);
  // Integers in [-3, 4) tie often: the first of equal extremes must win on the device too.
  for_each_reduction(large, kAll, -3, 4, true, false, [](const ReduceInput& in) {
    const Tensor &dev = in.x.dev, &cpu = in.x.cpu;
    const Dims& dims = in.c.dims;
    check_equal(td::amax(dev, dims, in.keepdim), td::amax(cpu, dims, in.keepdim), "amax " + in.what);
    check_equal(td::amin(dev, dims, in.keepdim), td::amin(cpu, dims, in.keepdim), "amin " + in.what);
    if (dims.empty()) {
      check_equal(td::max(dev), td::max(cpu), "max " + in.what);
      check_equal(td::min(dev), td::min(cpu), "min " + in.what);
      check_equal(td::argmax(dev, std::nullopt, in.keepdim), td::argmax(cpu, std::nullopt, in.keepdim),
                  "argmax " + in.what);
      check_equal(td::argmin(dev, std::nullopt, in.keepdim), td::argmin(cpu, std::nullopt, in.keepdim),
                  "argmin " + in.what);
    }
    if (dims.size() == 1) {
      auto [vd, id] = td::max(dev, dims[0], in.keepdim);
      auto [vc, ic] = td::max(cpu, dims[0], in.keepdim);
      check_equal(vd, vc, "max values " + in.what);
      check_equal(id, ic, "max indices " + in.what);
      auto [wd, jd] = td::min(dev, dims[0], in.keepdim);
      auto [wc, jc] = td::min(cpu, dims[0], in.keepdim);
      check_equal(wd, wc, "min values " + in.what);
      check_equal(jd, jc, "min indices " + in.what);
      check_equal(td::argmax(dev, dims[0], in.keepdim), td::argmax(cpu, dims[0], in.keepdim), "argmax " + in.what);
      check_equal(td::argmin(dev, dims[0], in.keepdim), td::argmin(cpu, dims[0], in.keepdim), "argmin " + in.what);
    }
  });
}

TEST_CASE("amax, amin, max and min with indices, argmax and argmin: the same values and first indices",
          "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  extremum_sweep(false);
}

TEST_CASE("amax, amin, max, min, argmax and argmin over every layout and long folds", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  extremum_sweep(true);
}

void var_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 117 : 17);
  for_each_reduction(large, kFloating, -2, 2, false, false, [](const ReduceInput& in) {
    const Tensor &dev = in.x.dev, &cpu = in.x.cpu;
    const Dims& dims = in.c.dims;
    const double r = 4 * rtol_for(cpu.dtype()), a = 2 * subnormal_atol(cpu.dtype());
    Tensor squares = ct::abs64(cpu) * ct::abs64(cpu);
    for (int64_t correction : {0, 1, 2}) {
      // The scale of the squared deviations: sum of x^2 over the divisor.
      Tensor scale =
          td::sum(squares, dims, in.keepdim) / static_cast<double>(std::max<int64_t>(1, fold_of(in.c) - correction));
      std::string what = " with correction " + std::to_string(correction) + " of " + in.what;
      check_close(td::var(dev, dims, correction, in.keepdim), td::var(cpu, dims, correction, in.keepdim), r, a,
                  "var" + what, scale);
      check_close(td::std(dev, dims, correction, in.keepdim), td::std(cpu, dims, correction, in.keepdim), r, a,
                  "std" + what, td::sqrt(scale));
    }
  });
}

TEST_CASE("var and std with corrections 0, 1 and 2 match the CPU", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  var_sweep(false);
}

TEST_CASE("var and std with corrections, every layout and long folds, match the CPU", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  var_sweep(true);
}

void norm_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 118 : 18);
  for_each_reduction(large, kFloating, -2, 2, false, false, [](const ReduceInput& in) {
    const Tensor &dev = in.x.dev, &cpu = in.x.cpu;
    const Dims& dims = in.c.dims;
    const double r = 4 * rtol_for(cpu.dtype()), a = 2 * subnormal_atol(cpu.dtype());
    for (double p : {0.0, 1.0, 2.0, 3.5, kInf, -kInf}) {
      if (std::isinf(p) && (fold_of(in.c) == 0 || td::numel_of(in.c.shape) == 0)) continue;
      std::string what = "norm " + std::to_string(p) + " of " + in.what;
      Tensor d = td::norm(dev, p, dims, in.keepdim), c = td::norm(cpu, p, dims, in.keepdim);
      if (p == 0 || std::isinf(p)) {
        check_equal(d, c, what);  // a count, or one of the |x|
      } else {
        check_close(d, c, r, a, what);
      }
    }
  });
}

TEST_CASE("norm for p in {0, 1, 2, 3.5, inf, -inf} matches the CPU", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  norm_sweep(false);
}

TEST_CASE("norm for every p, every layout and long folds, matches the CPU", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  norm_sweep(true);
}

void logical_sweep(bool large, uint8_t poison_byte = 0xFF) {
  ct::PoisonGuard poison(poison_byte);
  tt::reseed(large ? 119 : 19);
  for (double zeros : large ? std::vector<double>{0.0, 0.02, 0.5, 1.0} : std::vector<double>{0.02, 0.5}) {
    for_each_reduction(large, kAll, 0.5, 2, false, false, [zeros](const ReduceInput& in) {
      // Some elements zero (none, a few, half, all), so every output may go either way.
      Tensor cpu = in.x.cpu;
      sprinkle(cpu, zeros, 0);
      Tensor dev = ct::twin(cpu);
      const Dims& dims = in.c.dims;
      std::string what = in.what + " with zeros at rate " + std::to_string(zeros);
      check_equal(td::all(dev, dims, in.keepdim), td::all(cpu, dims, in.keepdim), "all " + what);
      check_equal(td::any(dev, dims, in.keepdim), td::any(cpu, dims, in.keepdim), "any " + what);
      if (dims.empty()) {
        check_equal(td::all(dev), td::all(cpu), "all() " + what);
        check_equal(td::any(dev), td::any(cpu), "any() " + what);
      }
    });
  }
}

TEST_CASE("all and any match the CPU for every dtype", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  for (uint8_t byte : ct::kPoisonBytes) logical_sweep(false, byte);
}

TEST_CASE("all and any, every layout and long folds, match the CPU", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  logical_sweep(true);
}

// cumsum, or cumprod (`product`), on the GPU against the CPU. Products take factors near 1, so
// that long lines neither overflow nor all underflow, and integers in {-1, 0, 1} ({0, 1} for
// uint8), which cannot overflow.
void scan_sweep(bool large, bool product) {
  ct::PoisonGuard poison;
  tt::reseed((large ? 120 : 20) + (product ? 1 : 0));
  const char* name = product ? "cumprod" : "cumsum";
  const auto scan = [product](const Tensor& t, int64_t dim, std::optional<DType> dtype = std::nullopt) {
    return product ? td::cumprod(t, dim, dtype) : td::cumsum(t, dim, dtype);
  };
  size_t turn = 0;
  for (DType dtype : kAll) {
    const bool long_lines =
        dtype == td::kFloat32 || dtype == td::kInt64 || (dtype == td::kFloat16 && !product);
    const std::vector<Shape> big = long_lines ? std::vector<Shape>{{1000003}, {3, 100003}} : std::vector<Shape>{};
    // {2, 4101}: lines of three of the block scan's 2048-element tiles, in the [shared] set too.
    for (const auto& [shape, layout] :
         sweep(large, {{}, {0}, {33}, {7, 33}, {4, 0, 3}, {3, 5, 7}, {2, 4101}}, big, turn++)) {
      if (is_big(shape) && layout == Layout::Broadcast) continue;
      double lo = -2, hi = 2;
      if (product) {
        lo = td::is_floating(dtype) ? (is_big(shape) ? 0.99 : 0.9) : dtype == td::kUInt8 ? 0 : -1.9;
        hi = td::is_floating(dtype) ? (is_big(shape) ? 1.01 : 1.1) : 1.9;
      }
      Pair x = ct::random_pair(shape, dtype, layout, lo, hi);
      for (int64_t dim = shape.empty() ? 0 : -1; dim < static_cast<int64_t>(shape.size()); ++dim) {
        std::string what = describe(std::string(name) + " along " + std::to_string(dim), dtype, shape, layout);
        Tensor d = scan(x.dev, dim), c = scan(x.cpu, dim);
        if (td::is_floating(dtype)) {
          check_close(d, c, rtol_for(dtype), 2 * subnormal_atol(dtype), what, scan(ct::abs64(x.cpu), dim));
          check_close(scan(x.dev, dim, td::kFloat64), scan(x.cpu, dim, td::kFloat64), rtol_for(td::kFloat64), 0,
                      what + " in float64", scan(ct::abs64(x.cpu), dim));
        } else {
          check_equal(d, c, what);
          // In the input's own dtype (bool included): the scan's narrow output, wrapping as on the CPU.
          check_equal(scan(x.dev, dim, dtype), scan(x.cpu, dim, dtype), what + " in its own dtype");
          check_close(scan(x.dev, dim, td::kFloat32), scan(x.cpu, dim, td::kFloat32), rtol_for(td::kFloat32), 0,
                      what + " in float32", scan(ct::abs64(x.cpu), dim));
        }
      }
    }
  }
}

TEST_CASE("cumsum along every dim matches the CPU", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  scan_sweep(false, false);
}

TEST_CASE("cumsum along every dim matches the CPU, every layout and lines of 100003 and 1000003", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  scan_sweep(true, false);
}

TEST_CASE("cumprod along every dim matches the CPU", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  scan_sweep(false, true);
}

TEST_CASE("cumprod along every dim matches the CPU, every layout and lines of 100003 and 1000003", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  scan_sweep(true, true);
}

void logsumexp_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 121 : 21);
  for (double infinity : large ? std::vector<double>{0.0, -kInf, kInf} : std::vector<double>{-kInf, kInf}) {
    for_each_reduction(large, kAll, -3, 3, false, false, [infinity](const ReduceInput& in) {
      Tensor cpu = in.x.cpu;
      if (infinity != 0 && td::is_floating(cpu.dtype())) sprinkle(cpu, 0.3, infinity);
      Tensor dev = ct::twin(cpu);
      const DType out = td::is_floating(cpu.dtype()) ? cpu.dtype() : td::kFloat32;
      const double r = 4 * rtol_for(out);
      check_close(td::logsumexp(dev, in.c.dims, in.keepdim), td::logsumexp(cpu, in.c.dims, in.keepdim), r, r,
                  "logsumexp " + in.what + " with " + std::to_string(infinity));
    });
  }
}

TEST_CASE("logsumexp matches the CPU, with rows of -inf and +inf", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  logsumexp_sweep(false);
}

TEST_CASE("logsumexp, every layout and long folds, matches the CPU", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  logsumexp_sweep(true);
}

TEST_CASE("one reduction over 10^7 elements matches the CPU", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(22);
  const int64_t n = 10000000;
  Tensor cpu = td::rand({n}) * 4 - 2;
  cpu.narrow(0, 7654321, 1).fill_(3);  // the maximum, twice: the first must win
  cpu.narrow(0, 8765432, 1).fill_(3);
  cpu.narrow(0, 1234567, 1).fill_(-3);
  Tensor dev = cpu.to(ct::device());
  const double r = rtol_for(td::kFloat32);
  check_close(dev.sum(), cpu.sum(), r, 0, "sum", ct::abs64(cpu).sum());
  check_close(dev.mean(), cpu.mean(), r, 0, "mean", ct::abs64(cpu).mean());
  check_equal(dev.amax(), cpu.amax(), "amax");
  check_equal(dev.amin(), cpu.amin(), "amin");
  CHECK(dev.argmax().item<int64_t>() == 7654321);
  CHECK(dev.argmin().item<int64_t>() == 1234567);
  check_close(dev.var(), cpu.var(), 4 * r, 0, "var");
  check_close(dev.std({}, 0), cpu.std({}, 0), 4 * r, 0, "std");
  check_close(dev.norm(), cpu.norm(), 4 * r, 0, "norm");
  check_close(dev.norm(1), cpu.norm(1), 4 * r, 0, "norm 1");
  check_equal(dev.norm(0), cpu.norm(0), "norm 0");
  check_close(dev.logsumexp({0}), cpu.logsumexp({0}), 4 * r, 0, "logsumexp");
  Tensor ints = (cpu * 1000).to(td::kInt64);
  check_equal(ints.to(ct::device()).sum(), ints.sum(), "int64 sum");
  Tensor halves = cpu.to(td::kFloat16);
  check_close(halves.to(ct::device()).sum(), halves.sum(), rtol_for(td::kFloat16), 0, "float16 sum",
              ct::abs64(halves).sum());
  Tensor flags = cpu > -2.9;
  check_equal(flags.to(ct::device()).all(), flags.all(), "all");
  CHECK(!flags.to(ct::device()).all().item<bool>());
  check_equal(flags.to(ct::device()).sum(), flags.sum(), "count of true");
  check_close(dev.view({10, n / 10}).sum({1}), cpu.view({10, n / 10}).sum({1}), r, 0, "sums of ten rows",
              ct::abs64(cpu).view({10, n / 10}).sum({1}));
}

// Folds of 513 to 2048 positions take a group of 64 or 128 threads per output, spanning warps, with
// several outputs to a block: the groups' totals meet in shared memory and must reach their own
// outputs, also in a block the outputs do not fill.
TEST_CASE("reductions whose folds take groups of several warps, several outputs to a block, match the CPU",
          "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(23);
  const std::vector<ReduceCase> cases = {
      {{5, 600}, {1}},              // 64 threads per output, 4 outputs to a block: 2 blocks, the last with 1
      {{9, 1500}, {-1}},            // 128 threads per output, 2 to a block: 5 blocks, the last with 1
      {{600, 5}, {0}},              // 64 threads per output along a strided fold
      {{16, 6, 8, 8}, {0, 2, 3}},   // a bias gradient's sum: 1024 positions over three dims
      {{3, 1030, 7}, {1}},          // 128 threads per output, 21 outputs
  };
  for (const ReduceCase& c : cases) {
    for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kInt64}) {
      for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
        const std::string what = describe("over dims " + td::shape_str(c.dims), dtype, c.shape, layout);
        INFO(what);
        // Integers in [-3, 4) tie often: the first of equal extremes must win on the device too.
        Pair x = ct::random_pair(c.shape, dtype, layout, -3, 4);
        const Dims& dims = c.dims;
        if (dims.size() == 1) {
          auto [vd, id] = td::max(x.dev, dims[0]);
          auto [vc, ic] = td::max(x.cpu, dims[0]);
          check_equal(vd, vc, "max values " + what);
          check_equal(id, ic, "max indices " + what);
        }
        if (!td::is_floating(dtype)) {
          check_equal(td::sum(x.dev, dims), td::sum(x.cpu, dims), "sum " + what);
          check_equal(td::amax(x.dev, dims), td::amax(x.cpu, dims), "amax " + what);
          continue;
        }
        const double r = rtol_for(dtype), a = 2 * subnormal_atol(dtype);
        check_close(td::sum(x.dev, dims), td::sum(x.cpu, dims), r, a, "sum " + what, td::sum(ct::abs64(x.cpu), dims));
        check_equal(td::amin(x.dev, dims), td::amin(x.cpu, dims), "amin " + what);
        Tensor squares = ct::abs64(x.cpu) * ct::abs64(x.cpu);
        check_close(td::var(x.dev, dims, 1), td::var(x.cpu, dims, 1), 4 * r, a, "var " + what,
                    td::sum(squares, dims) / static_cast<double>(fold_of(c) - 1));
        check_close(td::norm(x.dev, 2.0, dims), td::norm(x.cpu, 2.0, dims), 4 * r, a, "norm " + what);
        check_close(td::logsumexp(x.dev, dims), td::logsumexp(x.cpu, dims), 4 * r, 4 * r, "logsumexp " + what);
      }
    }
  }
}

void nan_sweep(bool large, uint8_t poison_byte = 0xFF) {
  ct::PoisonGuard poison(poison_byte);
  tt::reseed(large ? 123 : 23);
  for (double rate : large ? std::vector<double>{0.01, 0.3} : std::vector<double>{0.1}) {
    for_each_reduction(large, kFloating, -2, 2, true, false, [rate](const ReduceInput& in) {
      Tensor cpu = in.x.cpu;
      sprinkle(cpu, rate, kNaN);
      Tensor dev = ct::twin(cpu);
      const Dims& dims = in.c.dims;
      const double r = 4 * rtol_for(cpu.dtype());
      std::string what = in.what + " with NaN";
      check_close(td::sum(dev, dims, in.keepdim), td::sum(cpu, dims, in.keepdim), r, r, "sum " + what,
                  td::sum(ct::abs64(cpu), dims, in.keepdim));
      check_equal(td::amax(dev, dims, in.keepdim), td::amax(cpu, dims, in.keepdim), "amax " + what);
      check_equal(td::amin(dev, dims, in.keepdim), td::amin(cpu, dims, in.keepdim), "amin " + what);
      check_close(td::var(dev, dims, 1, in.keepdim), td::var(cpu, dims, 1, in.keepdim), r, r, "var " + what,
                  td::sum(ct::abs64(cpu) * ct::abs64(cpu), dims, in.keepdim));
      check_equal(td::norm(dev, kInf, dims, in.keepdim), td::norm(cpu, kInf, dims, in.keepdim), "norm inf " + what);
      check_equal(td::any(dev, dims, in.keepdim), td::any(cpu, dims, in.keepdim), "any " + what);
      if (dims.size() == 1) {
        auto [vd, id] = td::max(dev, dims[0], in.keepdim);
        auto [vc, ic] = td::max(cpu, dims[0], in.keepdim);
        check_equal(vd, vc, "max values " + what);
        check_equal(id, ic, "max indices " + what);
        check_equal(td::argmin(dev, dims[0], in.keepdim), td::argmin(cpu, dims[0], in.keepdim), "argmin " + what);
      }
      if (dims.empty()) {
        check_equal(td::argmax(dev), td::argmax(cpu), "argmax " + what);
        check_equal(td::argmin(dev), td::argmin(cpu), "argmin " + what);
      }
    });
  }
  // Spelled out: NaN at half and 7/10 of the elements, the maximum at 9/10.
  const int64_t n = large ? 1000003 : 1003, first = n / 2;
  Tensor x = td::zeros({n}, td::kFloat32);
  x.narrow(0, n / 10 * 9, 1).fill_(5);
  x.narrow(0, n / 10 * 7, 1).fill_(kNaN);
  x.narrow(0, first, 1).fill_(kNaN);
  Tensor d = x.to(ct::device());
  CHECK(d.argmax().item<int64_t>() == first);
  CHECK(d.argmin().item<int64_t>() == first);
  CHECK(std::isnan(d.amax().item<double>()));
  CHECK(std::isnan(d.sum().item<double>()));
  CHECK(std::get<1>(d.view({1, -1}).max(1)).item<int64_t>() == first);
}

TEST_CASE("reductions propagate NaN; max, argmax and argmin report the first NaN", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  for (uint8_t byte : ct::kPoisonBytes) nan_sweep(false, byte);
}

TEST_CASE("reductions propagate NaN over every layout and long folds", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  nan_sweep(true);
}


TEST_CASE("amax, amin, maximum and minimum put +0 above -0 as on the CPU, whichever thread meets which zero",
          "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  for (DType dtype : kFloating) {
    INFO(td::dtype_name(dtype));
    // -0 everywhere but a +0 in a few places, over one long row and over both dims of a matrix (its
    // columns fold across threads of a block, its rows across blocks).
    for (const Shape& shape : {Shape{1000003}, Shape{300, 4100}}) {
      Tensor cpu = td::full(shape, -0.0, dtype);
      Tensor flat = cpu.view({-1});
      for (int64_t at : {int64_t{0}, cpu.numel() / 3, cpu.numel() - 1}) flat.narrow(0, at, 1).fill_(0.0);
      Tensor dev = cpu.to(ct::device());
      for (int64_t dim = 0; dim < cpu.dim(); ++dim) {
        INFO("shape of " << shape.size() << " dims, dim " << dim);
        CHECK(sign_bits(td::amax(dev, {dim})) == sign_bits(td::amax(cpu, {dim})));
        CHECK(sign_bits(td::amin(dev, {dim})) == sign_bits(td::amin(cpu, {dim})));
        CHECK(sign_bits(td::amax(td::neg(dev), {dim})) == sign_bits(td::amax(td::neg(cpu), {dim})));
        CHECK(sign_bits(td::amin(td::neg(dev), {dim})) == sign_bits(td::amin(td::neg(cpu), {dim})));
      }
      CHECK(sign_bits(dev.amax()) == std::vector<bool>{false});
      CHECK(sign_bits(dev.amin()) == std::vector<bool>{true});
    }
    Tensor a = td::tensor({-0.0, 0.0, -0.0, 0.0}).to(ct::device(), dtype);
    Tensor b = td::tensor({0.0, -0.0, -0.0, 0.0}).to(ct::device(), dtype);
    for (auto [p, q] : {std::pair{a, b}, std::pair{b, a}}) {
      CHECK(sign_bits(td::maximum(p, q)) == std::vector<bool>{false, false, true, false});
      CHECK(sign_bits(td::minimum(p, q)) == std::vector<bool>{true, true, true, false});
    }
  }
}

// ---------------------------------------------------------------------------------------------
// matrix products

struct MatmulOperands {
  Pair a, b;
  std::string what;
};

// a [n, k] and b [k, m] stored as themselves, transposed, or as every other row of a larger matrix.
std::vector<MatmulOperands> matmul_operands(int64_t n, int64_t k, int64_t m, DType dtype) {
  auto make = [dtype](int64_t rows, int64_t cols, int form) -> Pair {
    Tensor t;
    if (form == 0) t = tt::random_tensor({rows, cols}, dtype, tt::Layout::Contiguous, -2, 2);
    if (form == 1) t = tt::random_tensor({cols, rows}, dtype, tt::Layout::Contiguous, -2, 2).t();
    if (form == 2) t = tt::random_tensor({rows, cols}, dtype, tt::Layout::Strided, -2, 2);
    return {t, ct::twin(t)};
  };
  const char* names[] = {"plain", "transposed", "strided"};
  std::vector<MatmulOperands> out;
  for (int fa = 0; fa < 3; ++fa) {
    for (int fb = 0; fb < 3; ++fb) {
      if (fa == 2 && fb == 2) continue;
      std::ostringstream what;
      what << td::dtype_name(dtype) << " [" << n << ", " << k << "] (" << names[fa] << ") @ [" << k << ", " << m
           << "] (" << names[fb] << ")";
      out.push_back({make(n, k, fa), make(k, m, fb), what.str()});
    }
  }
  return out;
}

// Floating products agree within rounding of |a| @ |b|; integer ones exactly.
void compare_product(const Tensor& dev, const Tensor& cpu, const Tensor& scale, const std::string& what) {
  if (!td::is_floating(cpu.dtype())) return check_equal(dev, cpu, what);
  const double r = 2 * rtol_for(cpu.dtype());
  check_close(dev, cpu, r, 2 * subnormal_atol(cpu.dtype()), what, scale);
}

void mm_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 124 : 24);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> sizes = {{1, 1, 1}, {7, 33, 1}, {33, 7, 33}, {5, 0, 4}};
  if (large) sizes.insert(sizes.end(), {{1, 7, 33}, {64, 60, 48}, {0, 3, 4}, {300, 257, 129}});
  size_t turn = 0;
  for (DType dtype : kNumeric) {
    for (const auto& [n, k, m] : sizes) {
      ++turn;
      const std::vector<MatmulOperands> operands = matmul_operands(n, k, m, dtype);
      for (size_t i = 0; i < operands.size(); ++i) {
        if (!large && (i + turn) % 3 != 0) continue;  // a third of the operand layouts, taking turns
        const MatmulOperands& o = operands[i];
        Tensor scale = td::mm(ct::abs64(o.a.cpu), ct::abs64(o.b.cpu));
        compare_product(td::mm(o.a.dev, o.b.dev), td::mm(o.a.cpu, o.b.cpu), scale, "mm " + o.what);
        compare_product(td::matmul(o.a.dev, o.b.dev), td::matmul(o.a.cpu, o.b.cpu), scale, "matmul " + o.what);
        // addmm: bias broadcast from a row or given whole; beta 0 ignores a NaN bias.
        for (const Shape& bias_shape : {Shape{m}, Shape{n, m}}) {
          if (!large && (bias_shape.size() + i + turn) % 2 == 0) continue;  // small: one bias shape, taking turns
          Pair bias = ct::random_pair(bias_shape, dtype, Layout::Contiguous, 0, 3);
          const bool floating = td::is_floating(dtype);
          const std::vector<std::pair<td::Scalar, td::Scalar>> coefficients =
              floating ? std::vector<std::pair<td::Scalar, td::Scalar>>{{1, 1}, {0.5, 2.0}, {0, 1.5}}
                       : std::vector<std::pair<td::Scalar, td::Scalar>>{{1, 1}, {2, 3}, {0, 1}};
          for (const auto& [beta, alpha] : coefficients) {
            Tensor bias_dev = bias.dev, bias_cpu = bias.cpu;
            if (beta.to_double() == 0 && floating) {
              bias_cpu = td::full(bias_shape, kNaN, dtype);
              bias_dev = ct::twin(bias_cpu);
            }
            Tensor s = scale * std::abs(alpha.to_double()) + (beta.to_double() == 0
                                                                  ? td::zeros({}, td::kFloat64)
                                                                  : ct::abs64(bias_cpu) * std::abs(beta.to_double()));
            std::ostringstream what;
            what << "addmm beta " << beta.to_double() << " alpha " << alpha.to_double() << " bias "
                 << td::shape_str(bias_shape) << " " << o.what;
            compare_product(td::addmm(bias_dev, o.a.dev, o.b.dev, beta, alpha),
                            td::addmm(bias_cpu, o.a.cpu, o.b.cpu, beta, alpha), s, what.str());
          }
        }
      }
    }
  }
}

TEST_CASE("addmm_out accumulates into a block of rows as on the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(118);
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    for (const auto& [n, k, m] : {std::tuple<int64_t, int64_t, int64_t>{7, 33, 5}, {33, 129, 65}, {1, 7, 1}}) {
      // Rows [2, 2 + n) of a larger matrix, from a transposed and a strided operand.
      Pair whole = ct::random_pair({n + 3, m}, dtype);
      Pair a = ct::random_pair({k, n}, dtype), b = ct::random_pair({k, m}, dtype, Layout::Strided);
      const Tensor old = ct::abs64(whole.cpu);
      td::kernels::addmm_out(whole.dev.narrow(0, 2, n), a.dev.t(), b.dev, 0.5, 3.0);
      td::kernels::addmm_out(whole.cpu.narrow(0, 2, n), a.cpu.t(), b.cpu, 0.5, 3.0);
      const Tensor product = td::mm(ct::abs64(a.cpu.t()), ct::abs64(b.cpu)) * 3 + old.narrow(0, 2, n) * 0.5;
      const Tensor scale = td::cat({old.narrow(0, 0, 2), product, old.narrow(0, 2 + n, 1)}, 0);
      check_close(whole.dev, whole.cpu, 2 * rtol_for(dtype), 0, std::string("addmm_out ") + td::dtype_name(dtype),
                  scale);
    }
  }
}

TEST_CASE("mm and addmm match the CPU for transposed and strided operands, every dtype", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  mm_sweep(false);
}

TEST_CASE("with TF32 allowed, float32 products and convolutions stay within TF32's rounding of the CPU's", "[cuda]") {
  // TF32 keeps 10 of float32's 23 mantissa bits of each operand: truncated, each moves by under
  // 2^-10, a term a b by under 2^-9 of |a| |b|, a sum of them by under 2^-9 of the sum of |a| |b|.
  // The check allows twice that: far less than any wrong result.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(125);
  struct AllowTf32 {
    AllowTf32() { td::cuda::set_allow_tf32(true); }
    ~AllowTf32() { td::cuda::set_allow_tf32(false); }
  } allow;
  REQUIRE(td::cuda::allow_tf32());
  const double tol = std::ldexp(1.0, -8);
  for (const auto& [n, k, m] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{33, 257, 7}, {300, 129, 64}}) {
    Pair a = ct::random_pair({n, k}, td::kFloat32, Layout::Permuted);
    Pair b = ct::random_pair({k, m}, td::kFloat32, Layout::Strided);
    const std::string what = "mm " + td::shape_str({n, k}) + " x " + td::shape_str({k, m});
    check_close(td::mm(a.dev, b.dev), td::mm(a.cpu, b.cpu), tol, 0, what, td::mm(ct::abs64(a.cpu), ct::abs64(b.cpu)));
    Pair bias = ct::random_pair({m}, td::kFloat32);
    check_close(td::addmm(bias.dev, a.dev, b.dev), td::addmm(bias.cpu, a.cpu, b.cpu), tol, 0, "addmm, " + what,
                td::mm(ct::abs64(a.cpu), ct::abs64(b.cpu)) + ct::abs64(bias.cpu));
  }
  Pair x = ct::random_pair({2, 6, 11, 9}, td::kFloat32, Layout::Permuted);
  Pair w = ct::random_pair({8, 3, 3, 2}, td::kFloat32);
  auto conv = [](const Tensor& xi, const Tensor& wi) { return F::conv2d(xi, wi, Tensor(), {1, 2}, {1, 0}, {2, 1}, 2); };
  check_close(conv(x.dev, w.dev), conv(x.cpu, w.cpu), tol, 0, "conv2d", conv(ct::abs64(x.cpu), ct::abs64(w.cpu)));
}

TEST_CASE("mm and addmm match the CPU for every operand layout and larger matrices", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  mm_sweep(true);
}

TEST_CASE("products one thread queues on two streams at once have the bits of the same products run alone",
          "[cuda]") {
  TD_SKIP_UNLESS_CUDA_ITSELF();
  tt::reseed(125);
  // Long sums, which cuBLAS may split over its workspace: first one at a time on the default
  // stream, then three times over on two streams without a wait between.
  std::vector<Pair> as, bs;
  std::vector<Tensor> alone;
  for (int i = 0; i < 8; ++i) {
    as.push_back(ct::random_pair({16, 65536}, td::kFloat32));
    bs.push_back(ct::random_pair({65536, 16}, td::kFloat32, i % 3 == 0 ? Layout::Strided : Layout::Contiguous));
    alone.push_back(td::mm(as[i].dev, bs[i].dev));
    td::cuda::synchronize();
    compare_product(alone[i], td::mm(as[i].cpu, bs[i].cpu), td::mm(ct::abs64(as[i].cpu), ct::abs64(bs[i].cpu)),
                    "product " + std::to_string(i));
  }
  const td::cuda::Stream streams[2] = {td::cuda::new_stream(0), td::cuda::new_stream(0)};
  for (int round = 0; round < 3; ++round) {
    std::vector<Tensor> together;
    for (int i = 0; i < 8; ++i) {
      td::cuda::StreamGuard on(streams[i % 2]);
      together.push_back(td::mm(as[i].dev, bs[i].dev));
    }
    td::cuda::synchronize();
    for (int i = 0; i < 8; ++i) {
      check_equal(together[i], alone[i].cpu(), "product " + std::to_string(i) + " on stream " +
                                                   std::to_string(i % 2) + ", round " + std::to_string(round));
    }
  }
}

TEST_CASE("a Linear layer's addmm (a bias row, beta = alpha = 1) runs through cuBLASLt's bias epilogue", "[cuda]") {
  TD_SKIP_UNLESS_CUDA_ITSELF();
  ct::PoisonGuard poison;
  tt::reseed(25);
  for (DType dtype : {td::kFloat32, td::kFloat16, td::kBFloat16}) {
    int64_t served = 0, fell_back = 0;
    std::string first_fallback;
    for (const auto& [n, k, m] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {1, 1, 1}, {7, 33, 1}, {1, 5, 9}, {2, 2, 2}, {5, 17, 9}, {33, 7, 33}, {64, 64, 64}, {300, 257, 129}}) {
      for (const MatmulOperands& o : matmul_operands(n, k, m, dtype)) {
        for (const Shape& bias_shape : {Shape{m}, Shape{1, m}}) {
          Pair bias = ct::random_pair(bias_shape, dtype, Layout::Contiguous, -3, 3);
          const std::string what = "addmm bias " + td::shape_str(bias_shape) + " " + o.what;
          const int64_t before = td::kernels::cuda::addmm_bias_epilogue_count();
          Tensor out = td::addmm(bias.dev, o.a.dev, o.b.dev);
          const int64_t took = td::kernels::cuda::addmm_bias_epilogue_count() - before;
          if (n == 1 || k == 1 || m == 1) {
            CHECK(took == 0);  // a matrix with one row or column is left to cuBLAS
          } else {
            // cuBLASLt's heuristic may offer no algorithm for some alignments: then cuBLAS runs it.
            CHECK(took <= 1);
            if (took == 0 && fell_back++ == 0) first_fallback = what;
            served += took;
          }
          Tensor scale = td::mm(ct::abs64(o.a.cpu), ct::abs64(o.b.cpu)) + ct::abs64(bias.cpu);
          compare_product(out, td::addmm(bias.cpu, o.a.cpu, o.b.cpu), scale, what);
        }
      }
    }
    if (fell_back > 0) {
      WARN("cuBLASLt's bias epilogue left " << fell_back << " products in " << td::dtype_name(dtype)
                                            << " to cuBLAS, the first: " << first_fallback);
    }
    INFO("the epilogue in " << td::dtype_name(dtype));
    CHECK(served > 0);  // the path runs, and its results were compared above
  }
  // Forms the epilogue does not take, computed by copying the bias in first: a strided bias row,
  // a bias per row, other coefficients, float64, an empty inner dim.
  Pair a = ct::random_pair({5, 4}, td::kFloat32), b = ct::random_pair({4, 3}, td::kFloat32);
  Pair strided = ct::random_pair({3}, td::kFloat32, Layout::Strided), column = ct::random_pair({5, 1}, td::kFloat32);
  const int64_t before = td::kernels::cuda::addmm_bias_epilogue_count();
  Tensor scale = td::mm(ct::abs64(a.cpu), ct::abs64(b.cpu)) + 3;
  compare_product(td::addmm(strided.dev, a.dev, b.dev), td::addmm(strided.cpu, a.cpu, b.cpu), scale, "strided bias");
  compare_product(td::addmm(column.dev, a.dev, b.dev), td::addmm(column.cpu, a.cpu, b.cpu), scale, "bias per row");
  compare_product(td::addmm(strided.dev, a.dev, b.dev, 1, 2), td::addmm(strided.cpu, a.cpu, b.cpu, 1, 2), scale * 2,
                  "alpha 2");
  Pair a64 = ct::random_pair({5, 4}, td::kFloat64), b64 = ct::random_pair({4, 3}, td::kFloat64);
  Pair bias64 = ct::random_pair({3}, td::kFloat64);
  compare_product(td::addmm(bias64.dev, a64.dev, b64.dev), td::addmm(bias64.cpu, a64.cpu, b64.cpu),
                  td::mm(ct::abs64(a64.cpu), ct::abs64(b64.cpu)) + 3, "float64");
  Pair empty_a = ct::random_pair({5, 0}, td::kFloat32), empty_b = ct::random_pair({0, 3}, td::kFloat32);
  Pair row = ct::random_pair({3}, td::kFloat32);
  check_equal(td::addmm(row.dev, empty_a.dev, empty_b.dev), td::addmm(row.cpu, empty_a.cpu, empty_b.cpu),
              "empty inner dim");
  CHECK(td::kernels::cuda::addmm_bias_epilogue_count() == before);
}

void bmm_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 125 : 25);
  size_t turn = 0;
  const std::vector<std::pair<Shape, Shape>> shapes = {{{4}, {4}},
                                                       {{3, 4}, {4}},
                                                       {{4}, {4, 5}},
                                                       {{2, 3, 4}, {4, 5}},
                                                       {{5, 3, 4}, {4}},
                                                       {{4}, {2, 4, 5}},
                                                       {{2, 1, 3, 4}, {3, 4, 5}},
                                                       {{3, 7, 33}, {3, 33, 7}},
                                                       {{1, 7, 33}, {5, 33, 1}},
                                                       {{2, 3, 0}, {2, 0, 4}},
                                                       {{6, 17, 40}, {40, 19}}};
  for (DType dtype : kNumeric) {
    for (const auto& [sa, sb] : shapes) {
      const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Permuted, Layout::Strided, Layout::Broadcast};
      const size_t first = large ? 0 : turn % layouts.size(), last = large ? layouts.size() : first + 1;
      ++turn;
      for (size_t l = first; l < last; ++l) {
        const Layout layout = layouts[l];
        Pair a = ct::random_pair(sa, dtype, layout, dtype == td::kUInt8 ? 0 : -2, 2);
        Pair b = ct::random_pair(sb, dtype, layout == Layout::Permuted ? Layout::Contiguous : Layout::Permuted,
                                 dtype == td::kUInt8 ? 0 : -2, 2);
        std::string what = std::string(td::dtype_name(dtype)) + " " + td::shape_str(sa) + " (" +
                           ct::layout_name(layout) + ") @ " + td::shape_str(sb);
        compare_product(td::matmul(a.dev, b.dev), td::matmul(a.cpu, b.cpu),
                        td::matmul(ct::abs64(a.cpu), ct::abs64(b.cpu)), "matmul " + what);
        if (sa.size() == 3 && sb.size() == 3 && sa[0] == sb[0]) {
          compare_product(td::bmm(a.dev, b.dev), td::bmm(a.cpu, b.cpu), td::bmm(ct::abs64(a.cpu), ct::abs64(b.cpu)),
                          "bmm " + what);
          compare_product(td::bmm(a.dev, b.dev.transpose(1, 2).contiguous().transpose(1, 2)), td::bmm(a.cpu, b.cpu),
                          td::bmm(ct::abs64(a.cpu), ct::abs64(b.cpu)), "bmm with a transposed operand " + what);
        }
      }
    }
  }
  // A batch shared by every product: stride 0 between the matrices of a batch.
  Pair a = ct::random_pair({1, 7, 33}, td::kFloat32);
  Pair b = ct::random_pair({4, 33, 5}, td::kFloat32);
  compare_product(td::bmm(a.dev.expand({4, 7, 33}), b.dev), td::bmm(a.cpu.expand({4, 7, 33}), b.cpu),
                  td::bmm(ct::abs64(a.cpu).expand({4, 7, 33}), ct::abs64(b.cpu)), "bmm with an expanded batch");
}

TEST_CASE("bmm and matmul with batches, vectors and broadcast batch dims match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  bmm_sweep(false);
}

TEST_CASE("bmm and matmul with batches, vectors and broadcast batch dims, every layout", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  bmm_sweep(true);
}

// ---------------------------------------------------------------------------------------------
// indexing

// Indices in [0, size) for every position of `shape`, as int64 or int32 in a given layout.
Pair random_indices(const Shape& shape, int64_t size, DType dtype = td::kInt64, Layout layout = Layout::Contiguous) {
  return ct::random_pair(shape, dtype, layout, 0, static_cast<double>(size));
}

void index_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 126 : 26);
  size_t turn = 0;
  for (DType dtype : kAll) {
    const std::vector<Layout> stored = {Layout::Contiguous, Layout::Permuted, Layout::Strided, Layout::Offset};
    for (const auto& [shape, layout] :
         sweep(large, {{}, {7, 33}, {5, 4, 3}, {3, 0, 2}}, {{7}, {2000, 3, 2}, {100003, 2}}, turn++, stored)) {
      Pair x = ct::random_pair(shape, dtype, layout, -100, 100);
      for (int64_t dim = 0; dim < std::max<int64_t>(1, static_cast<int64_t>(shape.size())); ++dim) {
        const int64_t size = shape.empty() ? 1 : shape[dim];
        for (int64_t count : {0, 1, 7, 40}) {
          if (size == 0 && count > 0) continue;
          if (shape.empty() && count != 1) continue;
          if (!large && count == 1 && !shape.empty()) continue;
          for (DType index_dtype : {td::kInt64, td::kInt32}) {
            if (!large && index_dtype == (count % 2 == 0 ? td::kInt64 : td::kInt32)) continue;
            Pair index = random_indices(count == 1 && shape.empty() ? Shape{} : Shape{count}, size, index_dtype,
                                        count > 1 ? Layout::Strided : Layout::Contiguous);
            std::string what = describe("index_select along " + std::to_string(dim) + " of " + std::to_string(count),
                                        dtype, shape, layout) +
                               " by " + td::dtype_name(index_dtype);
            check_equal(x.dev.index_select(dim, index.dev), x.cpu.index_select(dim, index.cpu), what);
          }
        }
      }
      const std::vector<int64_t> all_dims = shape.size() < 2 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, -1};
      check_equal(x.dev.flip(all_dims), x.cpu.flip(all_dims), describe("flip", dtype, shape, layout));
      if (shape.size() >= 2) {
        check_equal(td::tril(x.dev, 1), td::tril(x.cpu, 1), describe("tril", dtype, shape, layout));
        check_equal(td::triu(x.dev, -1), td::triu(x.cpu, -1), describe("triu", dtype, shape, layout));
      }
    }
    Pair weight = ct::random_pair({10, 33}, dtype, Layout::Offset, -100, 100);
    for (const Shape& ishape : {Shape{}, Shape{5}, Shape{3, 4}, Shape{0}}) {
      Pair indices = random_indices(ishape, 10, td::kInt64, Layout::Permuted);
      check_equal(td::embedding(weight.dev, indices.dev), td::embedding(weight.cpu, indices.cpu),
                  "embedding " + td::shape_str(ishape) + " " + td::dtype_name(dtype));
      check_equal(F::embedding(indices.dev, weight.dev), F::embedding(indices.cpu, weight.cpu),
                  "F::embedding " + td::shape_str(ishape) + " " + td::dtype_name(dtype));
    }
  }
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{7, 5}, Shape{0}, Shape{large ? 1000003 : 1003}}) {
    Pair indices = random_indices(shape, 6, td::kInt64, Layout::Strided);
    if (td::numel_of(shape) > 0) {
      check_equal(td::one_hot(indices.dev), td::one_hot(indices.cpu), "one_hot " + td::shape_str(shape));
    }
    check_equal(td::one_hot(indices.dev, 9), td::one_hot(indices.cpu, 9),
                "one_hot with 9 classes " + td::shape_str(shape));
  }
}

TEST_CASE("index_select, flip, tril, triu, embedding and one_hot copy the CPU's elements exactly", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  index_sweep(false);
}

TEST_CASE("index_select, flip, tril, triu, embedding and one_hot copy the CPU's elements exactly, every layout, size",
          "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  index_sweep(true);
}

void gather_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 127 : 27);
  size_t turn = 0;
  // (input shape, index shape): the index smaller than the input off the dim, or longer along it.
  std::vector<std::pair<Shape, Shape>> shapes = {{{7, 33}, {7, 5}},      {{7, 33}, {3, 40}}, {{5, 4, 3}, {5, 4, 3}},
                                                 {{5, 4, 3}, {2, 6, 1}}, {{33}, {50}},       {{}, {}},
                                                 {{4, 5}, {0, 5}}};
  if (large) shapes.push_back({{300, 400}, {300, 400}});
  for (DType dtype : kAll) {
    for (const auto& [sx, si] : shapes) {
      for (int64_t dim = 0; dim < std::max<int64_t>(1, static_cast<int64_t>(sx.size())); ++dim) {
        const int64_t size = sx.empty() ? 1 : sx[dim];
        bool fits = true;  // off the dim, the index may not exceed the input (gather) or self (scatter)
        for (size_t k = 0; k < si.size(); ++k) fits = fits && (static_cast<int64_t>(k) == dim || si[k] <= sx[k]);
        if (!fits) continue;
        const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Permuted, Layout::Strided};
        const size_t first = large ? 0 : turn % layouts.size(), last = large ? layouts.size() : first + 1;
        ++turn;
        for (size_t l = first; l < last; ++l) {
          const Layout layout = layouts[l];
          if (is_big(sx) && layout == Layout::Strided) continue;
          Pair x = ct::random_pair(sx, dtype, layout, -100, 100);
          Pair index = random_indices(si, size, layout == Layout::Permuted ? td::kInt32 : td::kInt64, layout);
          std::ostringstream what;
          what << td::dtype_name(dtype) << " " << td::shape_str(sx) << " (" << ct::layout_name(layout) << ") by "
               << td::shape_str(si) << " along " << dim;
          check_equal(x.dev.gather(dim, index.dev), x.cpu.gather(dim, index.cpu), "gather " + what.str());
          if (dtype == td::kBool) continue;
          // Collisions add up in some order on the device: float sums within rounding of their terms.
          Pair src = ct::random_pair(si, dtype, Layout::Permuted, -100, 100);
          Tensor d = x.dev.scatter_add(dim, index.dev, src.dev), c = x.cpu.scatter_add(dim, index.cpu, src.cpu);
          const Tensor scale = ct::abs64(x.cpu).scatter_add(dim, index.cpu, ct::abs64(src.cpu));
          if (td::is_floating(dtype)) {
            check_close(d, c, 8 * rtol_for(dtype), 0, "scatter_add " + what.str(), scale);
          } else {
            check_equal(d, c, "scatter_add " + what.str());
          }
          // In place, into a non-contiguous tensor: only its view changes.
          if (layout != Layout::Contiguous) {
            x.cpu.scatter_add_(dim, index.cpu, src.cpu);
            x.dev.scatter_add_(dim, index.dev, src.dev);
            if (td::is_floating(dtype)) {
              check_close(x.dev, x.cpu, 8 * rtol_for(dtype), 0, "scatter_add_ " + what.str(), scale);
            } else {
              check_equal(x.dev, x.cpu, "scatter_add_ " + what.str());
            }
            check_outside_equal(x.dev, x.cpu, "scatter_add_ " + what.str());
          }
        }
      }
    }
  }
}

TEST_CASE("gather and scatter_add along every dim match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  gather_sweep(false);
}

TEST_CASE("gather and scatter_add along every dim match the CPU, every layout and size", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  gather_sweep(true);
}

TEST_CASE("cat and stack on the device, with mixed dtypes and layouts", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(28);
  for (DType dtype : kAll) {
    Pair a = ct::random_pair({3, 5, 7}, dtype, Layout::Permuted);
    Pair b = ct::random_pair({3, 2, 7}, dtype == td::kFloat16 ? td::kInt32 : dtype, Layout::Strided);
    Pair c = ct::random_pair({3, 5, 7}, dtype, Layout::Offset);
    Pair e = ct::random_pair({0}, td::kFloat64);
    std::string name = td::dtype_name(dtype);
    check_equal(td::cat({a.dev, b.dev}, 1), td::cat({a.cpu, b.cpu}, 1), "cat " + name);
    check_equal(td::cat({a.dev, e.dev, c.dev}, -1), td::cat({a.cpu, e.cpu, c.cpu}, -1),
                "cat with an empty tensor " + name);
    check_equal(td::stack({a.dev, c.dev}, 2), td::stack({a.cpu, c.cpu}, 2), "stack " + name);
  }
}

// ---------------------------------------------------------------------------------------------
// softmax, pooling, convolution

void softmax_sweep(bool large, uint8_t poison_byte = 0xFF) {
  ct::PoisonGuard poison(poison_byte);
  tt::reseed(large ? 129 : 29);
  size_t turn = 0;
  std::vector<Shape> shapes = {{}, {33}, {7, 33}, {3, 4, 5}, {0, 5}, {2, 1500}};
  if (large) shapes.insert(shapes.end(), {{1}, {2, 1025, 3}, {3, 2000}, {1000003}});
  for (DType dtype : kFloating) {
    for (const Shape& shape : shapes) {
      const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Permuted, Layout::Strided, Layout::Broadcast};
      const std::vector<double> specials = {0.0, -kInf, kInf, kNaN};
      for (size_t v = 0; v < layouts.size() * specials.size(); ++v, ++turn) {
        // Small: every special value in one layout, the layouts taking turns from shape to shape.
        if (!large && v % layouts.size() != (turn / (layouts.size() * specials.size())) % layouts.size()) continue;
        const Layout layout = layouts[v % layouts.size()];
        const double special = specials[v / layouts.size()];
        if (is_big(shape) && (layout == Layout::Permuted || layout == Layout::Strided)) continue;
        Tensor cpu = ct::random_input(shape, dtype, layout, -5, 5);
        if (special != 0) sprinkle(cpu, special == -kInf ? 0.5 : 0.01, special);
        if (special == -kInf && shape.size() == 2) {  // whole rows of -inf
          whole(cpu).narrow(0, 0, std::min<int64_t>(whole(cpu).numel(), 2 * shape.back())).fill_(-kInf);
        }
        Tensor dev = ct::twin(cpu);
        const double r = 2 * rtol_for(dtype);
        for (int64_t dim = shape.empty() ? 0 : -1; dim < static_cast<int64_t>(shape.size()); ++dim) {
          std::string what =
              describe("along " + std::to_string(dim) + " with " + std::to_string(special), dtype, shape, layout);
          check_close(td::softmax(dev, dim), td::softmax(cpu, dim), r, r, "softmax " + what);
          check_close(td::log_softmax(dev, dim), td::log_softmax(cpu, dim), r, r, "log_softmax " + what);
        }
      }
    }
  }
}

TEST_CASE("softmax and log_softmax along each dim match the CPU, rows of -inf included", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  for (uint8_t byte : ct::kPoisonBytes) softmax_sweep(false, byte);
}

TEST_CASE("softmax and log_softmax along each dim match the CPU, every layout and long rows", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  softmax_sweep(true);
}

TEST_CASE("row kernels whose grids wrap around: softmax, log_softmax, cumsum and cumprod of many rows", "[cuda][large]") {
  // A grid holds at most 65536 blocks: past 524288 rows of up to 1024 (a warp a row), 65536 longer
  // rows (a block a row) and 65536 scanned lines of 32 or more, each block takes a second row.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(130);
  for (const Shape& shape : std::vector<Shape>{{600000, 3}, {65600, 1025}}) {
    for (DType dtype : {td::kFloat32, td::kFloat16}) {
      Pair x = ct::random_pair(shape, dtype, Layout::Contiguous, -5, 5);
      const double r = 2 * rtol_for(dtype);
      const std::string what = describe("along the rows", dtype, shape, Layout::Contiguous);
      check_close(td::softmax(x.dev, 1), td::softmax(x.cpu, 1), r, r, "softmax " + what);
      check_close(td::log_softmax(x.dev, 1), td::log_softmax(x.cpu, 1), r, r, "log_softmax " + what);
    }
  }
  for (DType dtype : {td::kFloat32, td::kInt64}) {
    // Factors near 1 (integers in {-1, 0, 1}) keep 40-long products in range.
    const bool floating = td::is_floating(dtype);
    Pair x = ct::random_pair({70000, 40}, dtype, Layout::Contiguous, floating ? 0.9 : -1.9, floating ? 1.1 : 1.9);
    const std::string what = describe("along the rows", dtype, {70000, 40}, Layout::Contiguous);
    if (floating) {
      const double r = rtol_for(dtype);
      check_close(td::cumsum(x.dev, 1), td::cumsum(x.cpu, 1), r, r, "cumsum " + what, td::cumsum(ct::abs64(x.cpu), 1));
      check_close(td::cumprod(x.dev, 1), td::cumprod(x.cpu, 1), r, r, "cumprod " + what);
    } else {
      check_equal(td::cumsum(x.dev, 1), td::cumsum(x.cpu, 1), "cumsum " + what);
      check_equal(td::cumprod(x.dev, 1), td::cumprod(x.cpu, 1), "cumprod " + what);
    }
  }
}

struct PoolParams {
  Dims kernel, stride, padding, dilation;
  bool ceil_mode;
};

const std::vector<PoolParams>& pool_params() {
  static const std::vector<PoolParams> params = {
      {{2}, {}, {0}, {1}, false},
      {{3}, {2}, {1}, {1}, false},
      {{2, 3}, {1, 2}, {1, 1}, {2, 1}, false},
      {{3}, {2}, {0}, {1}, true},
      {{2}, {2}, {1}, {2}, true},
      {{1}, {1}, {0}, {1}, false},
      {{3, 2}, {3, 1}, {1, 0}, {1, 1}, true},
  };
  return params;
}

std::string describe_pool(const PoolParams& p) {
  std::ostringstream s;
  s << "kernel " << td::shape_str(p.kernel) << " stride " << td::shape_str(p.stride) << " padding "
    << td::shape_str(p.padding) << " dilation " << td::shape_str(p.dilation) << (p.ceil_mode ? " ceil" : "");
  return s.str();
}

void max_pool_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 130 : 30);
  size_t turn = 0;
  for (DType dtype : kNumeric) {
    std::vector<Shape> shapes = {{2, 3, 9, 11}, {3, 7, 8}, {1, 1, 1, 1}};
    if (large) shapes.push_back({1, 2, 64, 257});
    for (const Shape& shape : shapes) {
      for (const PoolParams& p : pool_params()) {
        if (shape[shape.size() - 1] == 1 && p.kernel[0] > 1) continue;
        const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Permuted, Layout::Strided};
        const size_t first = large ? 0 : turn % layouts.size(), last = large ? layouts.size() : first + 1;
        ++turn;
        for (size_t l = first; l < last; ++l) {
          const Layout layout = layouts[l];
          Tensor cpu = ct::random_input(shape, dtype, layout, -3, 4);  // integers tie: the first maximum wins
          if (td::is_floating(dtype)) sprinkle(cpu, 0.05, kNaN);
          Tensor dev = ct::twin(cpu);
          std::string what = describe("max_pool2d " + describe_pool(p), dtype, shape, layout);
          auto [vd, id] = td::max_pool2d_with_indices(dev, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
          auto [vc, ic] = td::max_pool2d_with_indices(cpu, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
          check_equal(vd, vc, what + " values");
          check_equal(id, ic, what + " indices");
          if (!td::is_floating(dtype)) continue;
          // The gradient lands on the maxima; overlapping windows add theirs up.
          Tensor xd = dev.detach().clone().requires_grad_(), xc = cpu.detach().clone().requires_grad_();
          Pair g = ct::random_pair(vc.sizes(), dtype, Layout::Permuted);
          td::max_pool2d(xd, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode).backward(g.dev);
          td::max_pool2d(xc, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode).backward(g.cpu);
          Tensor x64 = cpu.detach().to(td::kFloat64).requires_grad_();
          td::max_pool2d(x64, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode).backward(ct::abs64(g.cpu));
          check_close(xd.grad(), xc.grad(), 4 * rtol_for(dtype), 0, what + " gradient", x64.grad());
        }
      }
    }
  }
}

TEST_CASE("max_pool2d gives the CPU's values and indices, NaN included, and its gradient", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  max_pool_sweep(false);
}

TEST_CASE("max_pool2d gives the CPU's values, indices and gradient in every layout, larger images too",
          "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  max_pool_sweep(true);
}

void avg_pool_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 131 : 31);
  size_t turn = 0;
  for (DType dtype : kFloating) {
    std::vector<Shape> shapes = {{2, 3, 9, 11}, {3, 7, 8}};
    if (large) shapes.push_back({1, 2, 64, 257});
    for (const Shape& shape : shapes) {
      for (const PoolParams& p : pool_params()) {
        bool dilated = false;
        for (int64_t d : p.dilation) dilated = dilated || d != 1;
        if (dilated) continue;
        for (bool count_include_pad : {true, false}) {
          for (std::optional<int64_t> divisor : {std::optional<int64_t>{}, std::optional<int64_t>{5}}) {
            if (!large && turn++ % 3 != 0) continue;  // small: a third of the modes, taking turns
            Pair x = ct::random_pair(shape, dtype, Layout::Strided, -3, 3);
            std::ostringstream what;
            what << describe("avg_pool2d " + describe_pool(p), dtype, shape, Layout::Strided)
                 << (count_include_pad ? " counting padding" : "") << (divisor ? " divisor 5" : "");
            Tensor d = td::avg_pool2d(x.dev, p.kernel, p.stride, p.padding, p.ceil_mode, count_include_pad, divisor);
            Tensor c = td::avg_pool2d(x.cpu, p.kernel, p.stride, p.padding, p.ceil_mode, count_include_pad, divisor);
            check_close(d, c, rtol_for(dtype), 2 * subnormal_atol(dtype), what.str());
            // The backward kernels sum each input's shares in the CPU's order: equal bit for bit.
            Tensor xd = x.dev.detach().clone().requires_grad_(), xc = x.cpu.detach().clone().requires_grad_();
            Pair g = ct::random_pair(c.sizes(), dtype, Layout::Permuted);
            td::avg_pool2d(xd, p.kernel, p.stride, p.padding, p.ceil_mode, count_include_pad, divisor).backward(g.dev);
            td::avg_pool2d(xc, p.kernel, p.stride, p.padding, p.ceil_mode, count_include_pad, divisor).backward(g.cpu);
            check_equal(xd.grad(), xc.grad(), what.str() + " gradient");
          }
        }
      }
    }
  }
}

TEST_CASE("avg_pool2d with padding, ceil_mode, count_include_pad and divisor_override, and its gradient", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  avg_pool_sweep(false);
}

TEST_CASE("avg_pool2d and its gradient in every mode, larger images too", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  avg_pool_sweep(true);
}

// Convolution geometries: plain, padded, strided, dilated, 1x1, and all of them uneven.
struct ConvParams {
  Dims kernel, dilation, padding, stride;
};
const std::vector<ConvParams> kConvParams = {{{3}, {1}, {0}, {1}}, {{3}, {1}, {1}, {1}}, {{2, 3}, {1}, {1}, {2, 1}},
                                             {{3}, {2}, {2}, {2}}, {{1}, {1}, {0}, {1}}, {{5, 2}, {1, 2}, {2, 0}, {1, 3}}};

TEST_CASE("im2col and col2im match the CPU exactly; conv2d through F::conv2d within rounding", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(32);
  for (DType dtype : kAll) {
    for (const Shape& shape : {Shape{2, 3, 9, 11}, Shape{3, 7, 8}}) {
      for (const ConvParams& p : kConvParams) {
        Pair x = ct::random_pair(shape, dtype, Layout::Permuted, -3, 3);
        std::ostringstream what;
        what << td::dtype_name(dtype) << " " << td::shape_str(shape) << " kernel " << td::shape_str(p.kernel)
             << " dilation " << td::shape_str(p.dilation) << " padding " << td::shape_str(p.padding) << " stride "
             << td::shape_str(p.stride);
        Tensor cd = td::im2col(x.dev, p.kernel, p.dilation, p.padding, p.stride);
        Tensor cc = td::im2col(x.cpu, p.kernel, p.dilation, p.padding, p.stride);
        check_equal(cd, cc, "im2col " + what.str());
        if (shape.size() == 4) {
          check_equal(td::im2col_matrix(x.dev, p.kernel, p.dilation, p.padding, p.stride),
                      td::im2col_matrix(x.cpu, p.kernel, p.dilation, p.padding, p.stride), "im2col_matrix " + what.str());
        }
        if (dtype == td::kBool) continue;
        const int64_t h = shape[shape.size() - 2], w = shape.back();
        Pair cols = ct::random_pair(cc.sizes(), dtype, Layout::Strided, -3, 3);
        check_equal(td::col2im(cols.dev, {h, w}, p.kernel, p.dilation, p.padding, p.stride),
                    td::col2im(cols.cpu, {h, w}, p.kernel, p.dilation, p.padding, p.stride), "col2im " + what.str());
        if (shape.size() != 4) continue;
        // Convolution's layout of the same, [C*kh*kw, N*L], from a transposed matrix too.
        for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
          Pair m = ct::random_pair({cc.sizes()[1], shape[0] * cc.sizes()[2]}, dtype, layout, -3, 3);
          check_equal(td::col2im_matrix(m.dev, shape[0], {h, w}, p.kernel, p.dilation, p.padding, p.stride),
                      td::col2im_matrix(m.cpu, shape[0], {h, w}, p.kernel, p.dilation, p.padding, p.stride),
                      "col2im_matrix " + what.str());
        }
      }
    }
  }
  for (DType dtype : kFloating) {
    for (int64_t groups : {1, 2}) {
      for (const ConvParams& p : kConvParams) {
        Pair x = ct::random_pair({2, 4, 9, 10}, dtype, Layout::Permuted);
        Pair w = ct::random_pair({6, 4 / groups, p.kernel[0], p.kernel.back()}, dtype, Layout::Strided);
        Pair b = ct::random_pair({6}, dtype);
        std::ostringstream what;
        what << "conv2d " << td::dtype_name(dtype) << " groups " << groups << " kernel " << td::shape_str(p.kernel)
             << " dilation " << td::shape_str(p.dilation) << " padding " << td::shape_str(p.padding) << " stride "
             << td::shape_str(p.stride);
        Tensor d = F::conv2d(x.dev, w.dev, b.dev, p.stride, p.padding, p.dilation, groups);
        Tensor c = F::conv2d(x.cpu, w.cpu, b.cpu, p.stride, p.padding, p.dilation, groups);
        Tensor scale =
            F::conv2d(ct::abs64(x.cpu), ct::abs64(w.cpu), ct::abs64(b.cpu), p.stride, p.padding, p.dilation, groups);
        check_close(d, c, 2 * rtol_for(dtype), 0, what.str(), scale);
        check_close(
            F::conv2d(x.dev[0], w.dev, Tensor(), p.stride, p.padding, p.dilation, groups),
            F::conv2d(x.cpu[0], w.cpu, Tensor(), p.stride, p.padding, p.dilation, groups), 2 * rtol_for(dtype), 0,
            what.str() + " of one image, no bias",
            F::conv2d(ct::abs64(x.cpu[0]), ct::abs64(w.cpu), Tensor(), p.stride, p.padding, p.dilation, groups));
      }
    }
  }
}

TEST_CASE("conv_transpose2d and conv1d match the CPU within rounding, non-contiguous operands", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(33);
  for (DType dtype : kFloating) {
    for (int64_t groups : {1, 2}) {
      for (const ConvParams& p : kConvParams) {
        // output_padding 1 where the stride or the dilation allows it.
        const std::vector<int64_t> extra = {p.stride[0] > 1 || p.dilation[0] > 1 ? 1 : 0,
                                            p.stride.back() > 1 || p.dilation.back() > 1 ? 1 : 0};
        Pair x = ct::random_pair({2, 4, 5, 7}, dtype, Layout::Permuted);
        Pair w = ct::random_pair({4, 6 / groups, p.kernel[0], p.kernel.back()}, dtype, Layout::Strided);
        Pair b = ct::random_pair({6}, dtype);
        std::ostringstream what;
        what << "conv_transpose2d " << td::dtype_name(dtype) << " groups " << groups << " kernel "
             << td::shape_str(p.kernel) << " dilation " << td::shape_str(p.dilation) << " padding "
             << td::shape_str(p.padding) << " stride " << td::shape_str(p.stride);
        auto run = [&](const Tensor& xi, const Tensor& wi, const Tensor& bi) {
          return F::conv_transpose2d(xi, wi, bi, p.stride, p.padding, extra, groups, p.dilation);
        };
        check_close(run(x.dev, w.dev, b.dev), run(x.cpu, w.cpu, b.cpu), 2 * rtol_for(dtype), 0, what.str(),
                    run(ct::abs64(x.cpu), ct::abs64(w.cpu), ct::abs64(b.cpu)));
        Pair line = ct::random_pair({3, 4, 33}, dtype, Layout::Permuted);
        Pair w1 = ct::random_pair({6, 4 / groups, p.kernel[0]}, dtype, Layout::Strided);
        auto run1d = [&](const Tensor& xi, const Tensor& wi, const Tensor& bi) {
          return F::conv1d(xi, wi, bi, p.stride[0], p.padding[0], p.dilation[0], groups);
        };
        check_close(run1d(line.dev, w1.dev, b.dev), run1d(line.cpu, w1.cpu, b.cpu), 2 * rtol_for(dtype), 0,
                    "conv1d " + what.str(), run1d(ct::abs64(line.cpu), ct::abs64(w1.cpu), ct::abs64(b.cpu)));
      }
    }
  }
}

TEST_CASE("pad in every mode gives the CPU's values, and its gradient the CPU's, non-contiguous inputs", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(34);
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kBFloat16, td::kInt64}) {
    Pair x = ct::random_pair({2, 3, 7, 33}, dtype, Layout::Permuted);
    for (td::PadMode mode : {td::kConstant, td::kReflect, td::kReplicate, td::kCircular}) {
      const std::string what = std::string("pad ") + F::pad_mode_name(mode) + " " + td::dtype_name(dtype);
      const std::vector<int64_t> sides = {5, -2, 3, 6};
      const double value = mode == td::kConstant ? 1.5 : 0;
      check_equal(F::pad(x.dev, sides, mode, value), F::pad(x.cpu, sides, mode, value), what);
      if (!td::is_floating(dtype)) continue;
      Tensor leaf_dev = x.dev.detach().requires_grad_(true), leaf_cpu = x.cpu.detach().requires_grad_(true);
      Pair probe = ct::random_pair(F::pad(x.cpu, sides, mode, value).sizes(), dtype);
      (F::pad(leaf_dev, sides, mode, value) * probe.dev).sum().backward();
      (F::pad(leaf_cpu, sides, mode, value) * probe.cpu).sum().backward();
      check_close(leaf_dev.grad(), leaf_cpu.grad(), 2 * rtol_for(dtype), 0, what + " gradient");
    }
  }
}

TEST_CASE("interpolate in every mode gives the CPU's values and gradients, non-contiguous inputs", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(36);
  const std::vector<std::pair<Shape, F::InterpolateOptions>> cases = {
      {{2, 3, 33}, F::InterpolateOptions().scale_factor({1.7}).mode(td::kLinear)},
      {{2, 3, 7, 33}, F::InterpolateOptions().size({16, 20}).mode(td::kBilinear).align_corners(true)},
      {{2, 3, 7, 33}, F::InterpolateOptions().scale_factor({0.6, 2.5}).mode(td::kBilinear)},
      {{2, 3, 7, 33}, F::InterpolateOptions().scale_factor({2})},
      {{2, 3, 7, 33}, F::InterpolateOptions().size({9, 13}).mode(td::kNearestExact)},
      {{1, 2, 3, 5, 7}, F::InterpolateOptions().scale_factor({1.5}).mode(td::kTrilinear)},
      {{2, 3, 33}, F::InterpolateOptions().scale_factor({1.1})},
      {{1, 2, 3, 5, 7}, F::InterpolateOptions().size({4, 9, 5}).mode(td::kNearestExact)},
      {{2, 3, 7, 33}, F::InterpolateOptions().scale_factor({1.7, 0.6}).mode(td::kBicubic)},
      {{2, 3, 7, 33}, F::InterpolateOptions().size({16, 20}).mode(td::kBicubic).align_corners(true)},
      {{2, 3, 7, 33}, F::InterpolateOptions().size({5, 8}).mode(td::kBicubic).antialias(true)},
      {{2, 3, 7, 33}, F::InterpolateOptions().scale_factor({1.1, 0.3}).mode(td::kBilinear).antialias(true)},
      {{2, 3, 33}, F::InterpolateOptions().size({7}).mode(td::kArea)},
      {{1, 2, 3, 5, 7}, F::InterpolateOptions().size({2, 4, 3}).mode(td::kArea)},
  };
  for (DType dtype : kFloating) {
    for (const auto& [shape, options] : cases) {
      const std::string what = std::string("interpolate ") + F::interpolate_mode_name(options.mode_) +
                               (options.antialias_ ? " antialias " : " ") + td::dtype_name(dtype) + " " +
                               td::shape_str(shape);
      Pair x = ct::random_pair(shape, dtype, Layout::Permuted);
      Tensor leaf_dev = x.dev.detach().requires_grad_(true), leaf_cpu = x.cpu.detach().requires_grad_(true);
      Tensor y_dev = F::interpolate(leaf_dev, options), y_cpu = F::interpolate(leaf_cpu, options);
      check_close(y_dev, y_cpu, 2 * rtol_for(dtype), 2 * rtol_for(dtype), what);
      Pair probe = ct::random_pair(y_cpu.sizes(), dtype);
      (y_dev * probe.dev).sum().backward();
      (y_cpu * probe.cpu).sum().backward();
      check_close(leaf_dev.grad(), leaf_cpu.grad(), 4 * rtol_for(dtype), 4 * rtol_for(dtype), what + " gradient");
    }
  }
}

TEST_CASE("distributions on the device give the CPU's log_prob, entropy, cdf and KL; draws stay there", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(37);
  namespace D = td::distributions;
  const Tensor loc = td::randn({3, 4}, td::kFloat64), scale = td::rand({4}, td::kFloat64) + 0.5;
  const Tensor value = td::randn({2, 3, 4}, td::kFloat64), logits = td::randn({3, 5}, td::kFloat64);
  const Tensor a = td::randn({4, 4}, td::kFloat64), sigma = a.matmul(a.t()) + td::eye(4, -1, td::kFloat64);
  const Tensor picks = td::randint(0, 5, {2, 3}).to(td::kFloat64);
  const D::Normal normal_cpu(loc, scale), normal_dev(ct::twin(loc), ct::twin(scale));
  const D::Laplace laplace_cpu(loc, scale), laplace_dev(ct::twin(loc), ct::twin(scale));
  tt::check_close(normal_dev.log_prob(ct::twin(value)), normal_cpu.log_prob(value), 1e-12, 1e-12, "Normal log_prob");
  tt::check_close(normal_dev.cdf(ct::twin(value)), normal_cpu.cdf(value), 1e-12, 1e-12, "Normal cdf");
  tt::check_close(laplace_dev.entropy(), laplace_cpu.entropy(), 1e-12, 1e-12, "Laplace entropy");
  const D::Normal other_cpu(scale, loc.exp()), other_dev(ct::twin(scale), ct::twin(loc).exp());
  tt::check_close(D::kl_divergence(normal_dev, other_dev), D::kl_divergence(normal_cpu, other_cpu), 1e-12, 1e-12,
                  "Normal KL");
  const D::Categorical cat_cpu(logits, D::Given::logits), cat_dev(ct::twin(logits), D::Given::logits);
  tt::check_close(cat_dev.log_prob(ct::twin(picks)), cat_cpu.log_prob(picks), 1e-12, 1e-12, "Categorical log_prob");
  tt::check_close(cat_dev.entropy(), cat_cpu.entropy(), 1e-12, 1e-12, "Categorical entropy");
  const D::MultivariateNormal mvn_cpu(loc, sigma), mvn_dev(ct::twin(loc), ct::twin(sigma));
  tt::check_close(mvn_dev.log_prob(ct::twin(value)), mvn_cpu.log_prob(value), 1e-10, 1e-10, "MVN log_prob");
  tt::check_close(D::kl_divergence(mvn_dev, mvn_dev), td::zeros({3}, td::kFloat64), 0, 1e-10, "MVN KL to itself");
  for (const Tensor& draws : {normal_dev.rsample({7}), cat_dev.sample({7}), mvn_dev.sample({7}),
                              D::Bernoulli(ct::twin(scale.sigmoid())).sample({7})}) {
    CHECK(draws.device() == ct::device());
    CHECK(draws.size(0) == 7);
  }
  // Categorical draws on the device follow the probabilities.
  const Tensor many = D::Categorical(ct::twin(td::tensor(std::vector<double>{0.2, 0.8}))).sample({20000}).cpu();
  CHECK(std::abs((many == 1).to(td::kFloat64).mean().item<double>() - 0.8) < 0.02);
  // The gamma family: scores, cdf and KL on the device; draws there, Dirichlet's on the simplex.
  const Tensor positive = scale + 0.3, unit = value.sigmoid(), counts = value.abs().round();
  const D::Gamma gamma_cpu(positive, scale), gamma_dev(ct::twin(positive), ct::twin(scale));
  tt::check_close(gamma_dev.log_prob(ct::twin(value.abs())), gamma_cpu.log_prob(value.abs()), 1e-12, 1e-12, "Gamma log_prob");
  tt::check_close(gamma_dev.cdf(ct::twin(value.abs())), gamma_cpu.cdf(value.abs()), 1e-12, 1e-12, "Gamma cdf");
  tt::check_close(gamma_dev.entropy(), gamma_cpu.entropy(), 1e-12, 1e-12, "Gamma entropy");
  const D::Beta beta_cpu(positive, scale), beta_dev(ct::twin(positive), ct::twin(scale));
  tt::check_close(beta_dev.log_prob(ct::twin(unit)), beta_cpu.log_prob(unit), 1e-12, 1e-12, "Beta log_prob");
  tt::check_close(D::kl_divergence(beta_dev, D::Beta(ct::twin(scale), ct::twin(positive))),
                  D::kl_divergence(beta_cpu, D::Beta(scale, positive)), 1e-12, 1e-12, "Beta KL");
  const D::StudentT student_cpu(positive, loc, scale), student_dev(ct::twin(positive), ct::twin(loc), ct::twin(scale));
  tt::check_close(student_dev.log_prob(ct::twin(value)), student_cpu.log_prob(value), 1e-12, 1e-12, "StudentT log_prob");
  const D::NegativeBinomial negative_cpu(positive, scale.sigmoid()), negative_dev(ct::twin(positive), ct::twin(scale.sigmoid()));
  tt::check_close(negative_dev.log_prob(ct::twin(counts)), negative_cpu.log_prob(counts), 1e-12, 1e-12,
                  "NegativeBinomial log_prob");
  const D::Dirichlet dirichlet_dev(ct::twin(positive));
  const Tensor simplex = dirichlet_dev.rsample({7});
  CHECK(simplex.device() == ct::device());
  tt::check_close(simplex.sum(-1).cpu(), td::ones({7}, td::kFloat64), 1e-14, 0, "Dirichlet draws on the simplex");
  for (const Tensor& draws : {gamma_dev.rsample({7}), beta_dev.rsample({7}), student_dev.rsample({7}),
                              negative_dev.sample({7}), D::Chi2(ct::twin(positive)).sample({7}),
                              D::Pareto(ct::twin(scale), ct::twin(positive)).rsample({7}),
                              D::Weibull(ct::twin(scale), ct::twin(positive)).rsample({7})}) {
    CHECK(draws.device() == ct::device());
    CHECK(draws.size(0) == 7);
  }
}

TEST_CASE("low-rank, relaxed, matrix and circular distributions on the device equal the CPU's", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(57);
  namespace D = td::distributions;
  const Tensor loc = td::randn({3, 4}, td::kFloat64), positive = td::rand({4}, td::kFloat64) + 0.5;
  const Tensor unit = td::rand({2, 3, 4}, td::kFloat64), w = td::randn({4, 2}, td::kFloat64);
  const D::LowRankMultivariateNormal low_cpu(loc, w, positive), low_dev(ct::twin(loc), ct::twin(w), ct::twin(positive));
  tt::check_close(low_dev.log_prob(ct::twin(unit)), low_cpu.log_prob(unit), 1e-12, 1e-12, "LowRankMVN log_prob");
  tt::check_close(low_dev.entropy(), low_cpu.entropy(), 1e-12, 1e-12, "LowRankMVN entropy");
  tt::check_close(D::kl_divergence(low_dev, D::MultivariateNormal(ct::twin(loc), low_dev.covariance_matrix())),
                  td::zeros({3}, td::kFloat64), 0, 1e-10, "LowRankMVN KL to its full twin");
  const D::VonMises von_cpu(loc, positive), von_dev(ct::twin(loc), ct::twin(positive));
  tt::check_close(von_dev.log_prob(ct::twin(unit)), von_cpu.log_prob(unit), 1e-12, 1e-12, "VonMises log_prob");
  tt::check_close(von_dev.entropy(), von_cpu.entropy(), 1e-12, 1e-12, "VonMises entropy");
  const D::ContinuousBernoulli cb_cpu(loc, D::Given::logits), cb_dev(ct::twin(loc), D::Given::logits);
  tt::check_close(cb_dev.log_prob(ct::twin(unit)), cb_cpu.log_prob(unit), 1e-12, 1e-12, "ContinuousBernoulli log_prob");
  tt::check_close(cb_dev.icdf(ct::twin(unit)), cb_cpu.icdf(unit), 1e-12, 1e-12, "ContinuousBernoulli icdf");
  const D::Kumaraswamy kuma_cpu(positive, positive + 1), kuma_dev(ct::twin(positive), ct::twin(positive) + 1);
  tt::check_close(kuma_dev.cdf(ct::twin(unit)), kuma_cpu.cdf(unit), 1e-12, 1e-12, "Kumaraswamy cdf");
  const D::FisherSnedecor fisher_cpu(positive, positive + 4), fisher_dev(ct::twin(positive), ct::twin(positive) + 4);
  tt::check_close(fisher_dev.log_prob(ct::twin(unit)), fisher_cpu.log_prob(unit), 1e-12, 1e-12, "FisherSnedecor");
  const Tensor probs = td::rand({3, 5}, td::kFloat64) + 0.1, counts = td::randint(0, 4, {3, 5}).to(td::kFloat64);
  const D::Multinomial multi_cpu(20, probs), multi_dev(20, ct::twin(probs));
  tt::check_close(multi_dev.log_prob(ct::twin(counts)), multi_cpu.log_prob(counts), 1e-12, 1e-12, "Multinomial");
  tt::check_close(multi_dev.entropy(), multi_cpu.entropy(), 1e-12, 1e-12, "Multinomial entropy");
  const D::RelaxedOneHotCategorical relaxed_dev(0.5, ct::twin(probs));
  const Tensor simplex = relaxed_dev.rsample({7});
  tt::check_close(relaxed_dev.log_prob(simplex), D::RelaxedOneHotCategorical(0.5, probs).log_prob(simplex.cpu()),
                  1e-12, 1e-12, "RelaxedOneHotCategorical log_prob");
  const Tensor sigma = w.matmul(w.t()) + td::eye(4, -1, td::kFloat64), x = sigma.matmul(sigma) + sigma;
  const D::Wishart wishart_cpu(positive + 5, sigma), wishart_dev(ct::twin(positive) + 5, ct::twin(sigma));
  tt::check_close(wishart_dev.log_prob(ct::twin(x)), wishart_cpu.log_prob(x), 1e-10, 1e-10, "Wishart log_prob");
  tt::check_close(wishart_dev.entropy(), wishart_cpu.entropy(), 1e-12, 1e-12, "Wishart entropy");
  const D::LKJCholesky lkj_cpu(4, positive), lkj_dev(4, ct::twin(positive));
  const Tensor factors = lkj_dev.sample({3});
  tt::check_close(lkj_dev.log_prob(factors), lkj_cpu.log_prob(factors.cpu()), 1e-12, 1e-12, "LKJCholesky log_prob");
  tt::check_close(factors.pow(2).sum(-1).cpu(), td::ones({3, 4, 4}, td::kFloat64), 1e-12, 1e-12, "LKJ unit rows");
  const D::GeneralizedPareto gp_cpu(loc, positive, positive - 0.9), gp_dev(ct::twin(loc), ct::twin(positive),
                                                                           ct::twin(positive) - 0.9);
  tt::check_close(gp_dev.icdf(ct::twin(unit)), gp_cpu.icdf(unit), 1e-12, 1e-12, "GeneralizedPareto icdf");
  const D::InverseGamma inverse_cpu(positive, positive + 1), inverse_dev(ct::twin(positive), ct::twin(positive) + 1);
  tt::check_close(inverse_dev.cdf(ct::twin(unit + 0.1)), inverse_cpu.cdf(unit + 0.1), 1e-12, 1e-12, "InverseGamma cdf");
  const Tensor many = multi_dev.sample({7});
  CHECK(many.device() == ct::device());
  tt::check_close(many.sum(-1).cpu(), td::full({7, 3}, 20.0, td::kFloat64), 0, 0, "Multinomial draws count 20");
  for (const Tensor& draws : {low_dev.rsample({7}), von_dev.sample({7}), cb_dev.rsample({7}), kuma_dev.rsample({7}),
                              fisher_dev.rsample({7}), simplex, wishart_dev.rsample({7}), lkj_dev.sample({7}),
                              gp_dev.rsample({7}), inverse_dev.rsample({7}),
                              D::HalfCauchy(ct::twin(positive)).rsample({7}),
                              D::RelaxedBernoulli(0.5, ct::twin(positive.sigmoid())).rsample({7})}) {
    CHECK(draws.device() == ct::device());
    CHECK(draws.size(0) == 7);
  }
}

TEST_CASE("vector, matrix, event and slice transforms and LogisticNormal on the device equal the CPU's", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(58);
  namespace D = td::distributions;
  const D::StickBreakingTransform stick;
  const Tensor x = td::randn({4, 3}, td::kFloat64) * 3, x_dev = ct::twin(x);
  const Tensor y = stick(x), y_dev = stick(x_dev);
  CHECK(y_dev.device() == ct::device());
  tt::check_close(y_dev, y, 1e-14, 1e-14, "stick-breaking");
  tt::check_close(stick.inv(y_dev), x, 1e-12, 1e-12, "and back");
  tt::check_close(stick.log_abs_det_jacobian(x_dev, y_dev), stick.log_abs_det_jacobian(x, y), 1e-12, 1e-12,
                  "stick-breaking log |det|");
  const Tensor loc = td::randn({2, 3}, td::kFloat64), scale = td::rand({3}, td::kFloat64) + 0.5;
  const D::LogisticNormal cpu(loc, scale), dev(ct::twin(loc), ct::twin(scale));
  const Tensor draws = dev.rsample({5});
  CHECK(draws.device() == ct::device());
  tt::check_close(draws.sum(-1).cpu(), td::ones({5, 2}, td::kFloat64), 0, 1e-12, "draws on the simplex");
  tt::check_close(dev.log_prob(draws), cpu.log_prob(draws.cpu()), 1e-12, 1e-12, "LogisticNormal log_prob");
  const auto reshape = std::make_shared<D::ReshapeTransform>(td::Shape{6}, td::Shape{2, 3});
  const auto exp = std::make_shared<D::IndependentTransform>(std::make_shared<D::ExpTransform>(), 2);
  const Tensor mu = td::randn({6}, td::kFloat64);
  const D::TransformedDistribution t_cpu(std::make_shared<D::Normal>(mu, 1.0), {reshape, exp});
  const D::TransformedDistribution t_dev(std::make_shared<D::Normal>(ct::twin(mu), 1.0), {reshape, exp});
  const Tensor value = t_dev.sample({3});
  CHECK(value.device() == ct::device());
  tt::check_close(t_dev.log_prob(value), t_cpu.log_prob(value.cpu()), 1e-12, 1e-12, "reshaped, exp log_prob");
  const D::CorrCholeskyTransform corr;
  const Tensor v = td::randn({2, 6}, td::kFloat64), factors = corr(ct::twin(v));
  CHECK(factors.device() == ct::device());
  tt::check_close(factors, corr(v), 1e-14, 1e-14, "CorrCholeskyTransform");
  tt::check_close(corr.inv(factors), v, 1e-12, 1e-12, "and back");
  tt::check_close(corr.log_abs_det_jacobian(ct::twin(v), factors), corr.log_abs_det_jacobian(v, corr(v)), 1e-12, 1e-12,
                  "CorrCholeskyTransform log |det|");
  // Slices through transforms of their own: exp and stick-breaking along the last dim, stacked rows.
  const auto stick_ptr = std::make_shared<D::StickBreakingTransform>();
  const D::CatTransform cat({std::make_shared<D::ExpTransform>(), stick_ptr}, -1, {2, 3});
  const Tensor u = td::randn({3, 5}, td::kFloat64), u_dev = ct::twin(u);
  const Tensor w = cat(u), w_dev = cat(u_dev);
  CHECK(w_dev.device() == ct::device());
  tt::check_close(w_dev, w, 1e-14, 1e-14, "CatTransform");
  tt::check_close(cat.inv(w_dev), u, 1e-12, 1e-12, "and back");
  tt::check_close(cat.log_abs_det_jacobian(u_dev, w_dev), cat.log_abs_det_jacobian(u, w), 1e-12, 1e-12,
                  "CatTransform log |det|");
  const D::StackTransform stack({stick_ptr, stick_ptr}, 0);
  const Tensor s = td::randn({2, 3, 4}, td::kFloat64), s_dev = ct::twin(s);
  tt::check_close(stack(s_dev), stack(s), 1e-14, 1e-14, "StackTransform");
  tt::check_close(stack.log_abs_det_jacobian(s_dev, stack(s_dev)), stack.log_abs_det_jacobian(s, stack(s)), 1e-12,
                  1e-12, "StackTransform log |det|");
}

TEST_CASE("1-D pooling and adaptive max pooling give the CPU's values, indices and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(38);
  using Pool = std::function<std::tuple<Tensor, Tensor>(const Tensor&)>;
  const std::vector<std::pair<std::string, Pool>> pools = {
      {"max_pool1d", [](const Tensor& x) { return F::max_pool1d_with_indices(x, 3, 2, 1, 2, true); }},
      {"avg_pool1d", [](const Tensor& x) { return std::tuple{F::avg_pool1d(x, 3, 2, 1, true, false), Tensor()}; }},
      {"adaptive_avg_pool1d", [](const Tensor& x) { return std::tuple{F::adaptive_avg_pool1d(x, 7), Tensor()}; }},
      {"adaptive_max_pool1d", [](const Tensor& x) { return F::adaptive_max_pool1d_with_indices(x, 7); }},
      {"adaptive_max_pool2d",
       [](const Tensor& x) { return F::adaptive_max_pool2d_with_indices(x.unflatten(-1, {3, 11}), {2, 4}); }},
  };
  for (DType dtype : kFloating) {
    for (const auto& [name, pool] : pools) {
      const std::string what = name + " " + td::dtype_name(dtype);
      Pair x = ct::random_pair({2, 5, 33}, dtype, Layout::Permuted);
      Tensor leaf_dev = x.dev.detach().requires_grad_(true), leaf_cpu = x.cpu.detach().requires_grad_(true);
      const auto [y_dev, i_dev] = pool(leaf_dev);
      const auto [y_cpu, i_cpu] = pool(leaf_cpu);
      check_close(y_dev, y_cpu, 2 * rtol_for(dtype), 2 * rtol_for(dtype), what);
      if (i_cpu.defined()) check_equal(i_dev, i_cpu, what + " indices");
      Pair probe = ct::random_pair(y_cpu.sizes(), dtype);
      (y_dev * probe.dev).sum().backward();
      (y_cpu * probe.cpu).sum().backward();
      check_close(leaf_dev.grad(), leaf_cpu.grad(), 4 * rtol_for(dtype), 4 * rtol_for(dtype), what + " gradient");
    }
  }
}

TEST_CASE("conv3d and conv_transpose3d give the CPU's values and gradients, non-contiguous operands", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(40);
  for (DType dtype : kFloating) {
    for (int64_t groups : {1, 2}) {
      const std::string what = std::string(td::dtype_name(dtype)) + " groups " + std::to_string(groups);
      Pair x = ct::random_pair({2, 4, 5, 6, 7}, dtype, Layout::Permuted);
      Pair w = ct::random_pair({6, 4 / groups, 3, 2, 3}, dtype, Layout::Strided);
      Pair b = ct::random_pair({6}, dtype);
      auto conv = [&](const Tensor& xi, const Tensor& wi, const Tensor& bi) {
        return F::conv3d(xi, wi, bi, {2, 1, 1}, {1, 0, 1}, {1, 2, 1}, groups);
      };
      check_close(conv(x.dev, w.dev, b.dev), conv(x.cpu, w.cpu, b.cpu), 2 * rtol_for(dtype), 0, "conv3d " + what,
                  conv(ct::abs64(x.cpu), ct::abs64(w.cpu), ct::abs64(b.cpu)));
      Pair t = ct::random_pair({2, 4, 3, 4, 5}, dtype, Layout::Permuted);
      Pair wt = ct::random_pair({4, 6 / groups, 3, 2, 3}, dtype, Layout::Strided);
      auto spread = [&](const Tensor& xi, const Tensor& wi, const Tensor& bi) {
        return F::conv_transpose3d(xi, wi, bi, {2, 3, 1}, {1, 0, 1}, {1, 2, 0}, groups, {2, 1, 1});
      };
      check_close(spread(t.dev, wt.dev, b.dev), spread(t.cpu, wt.cpu, b.cpu), 2 * rtol_for(dtype), 0,
                  "conv_transpose3d " + what, spread(ct::abs64(t.cpu), ct::abs64(wt.cpu), ct::abs64(b.cpu)));
      if (dtype != td::kFloat32 && dtype != td::kFloat64) continue;
      Tensor x_dev = x.dev.detach().requires_grad_(true), x_cpu = x.cpu.detach().requires_grad_(true);
      Tensor w_dev = w.dev.detach().requires_grad_(true), w_cpu = w.cpu.detach().requires_grad_(true);
      const Tensor y_cpu = conv(x_cpu, w_cpu, b.cpu);
      Pair probe = ct::random_pair(y_cpu.sizes(), dtype);
      (conv(x_dev, w_dev, b.dev) * probe.dev).sum().backward();
      (y_cpu * probe.cpu).sum().backward();
      check_close(x_dev.grad(), x_cpu.grad(), 4 * rtol_for(dtype), 4 * rtol_for(dtype),
                  "conv3d input gradient " + what);
      check_close(w_dev.grad(), w_cpu.grad(), 4 * rtol_for(dtype), 4 * rtol_for(dtype),
                  "conv3d weight gradient " + what);
    }
  }
}

TEST_CASE("3-D pooling gives the CPU's values, indices and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(41);
  using Pool = std::function<std::tuple<Tensor, Tensor>(const Tensor&)>;
  const std::vector<std::pair<std::string, Pool>> pools = {
      {"max_pool3d",
       [](const Tensor& x) {
         return F::max_pool3d_with_indices(x, 3, 2, 1, {1, 2, 1}, true);
       }},
      {"avg_pool3d",
       [](const Tensor& x) {
         return std::tuple{F::avg_pool3d(x, {2, 3, 2}, {1, 2, 3}, {1, 1, 0}, true, false), Tensor()};
       }},
      {"avg_pool3d divisor",
       [](const Tensor& x) {
         return std::tuple{F::avg_pool3d(x, 3, 2, 1, false, true, 5), Tensor()};
       }},
      {"adaptive_avg_pool3d",
       [](const Tensor& x) {
         return std::tuple{F::adaptive_avg_pool3d(x, {3, 4, 2}), Tensor()};
       }},
      {"adaptive_max_pool3d",
       [](const Tensor& x) {
         return F::adaptive_max_pool3d_with_indices(x, {3, 4, 2});
       }},
  };
  for (DType dtype : kFloating) {
    for (const auto& [name, pool] : pools) {
      const std::string what = name + " " + td::dtype_name(dtype);
      Pair x = ct::random_pair({2, 3, 7, 6, 9}, dtype, Layout::Permuted);
      Tensor leaf_dev = x.dev.detach().requires_grad_(true), leaf_cpu = x.cpu.detach().requires_grad_(true);
      const auto [y_dev, i_dev] = pool(leaf_dev);
      const auto [y_cpu, i_cpu] = pool(leaf_cpu);
      check_close(y_dev, y_cpu, 2 * rtol_for(dtype), 2 * rtol_for(dtype), what);
      if (i_cpu.defined()) check_equal(i_dev, i_cpu, what + " indices");
      Pair probe = ct::random_pair(y_cpu.sizes(), dtype);
      (y_dev * probe.dev).sum().backward();
      (y_cpu * probe.cpu).sum().backward();
      check_close(leaf_dev.grad(), leaf_cpu.grad(), 4 * rtol_for(dtype), 4 * rtol_for(dtype), what + " gradient");
    }
  }
}

TEST_CASE("fractional max pooling gives the CPU's values, indices and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(44);
  for (DType dtype : kFloating) {
    for (int64_t dims : {2, 3}) {
      const std::string what = "fractional_max_pool" + std::to_string(dims) + "d " + td::dtype_name(dtype);
      const Shape shape = dims == 2 ? Shape{2, 3, 33, 17} : Shape{2, 3, 7, 9, 11};
      Pair x = ct::random_pair(shape, dtype, Layout::Permuted);
      // The same samples on both devices; overlapping windows (kernel 3, about two apart).
      Pair samples = ct::random_pair({2, 3, dims}, dtype, Layout::Contiguous, 0, 1);
      const Shape out = dims == 2 ? Shape{15, 8} : Shape{3, 4, 5};
      auto pool = [&](const Tensor& input, const Tensor& given) {
        return dims == 2 ? F::fractional_max_pool2d_with_indices(input, 3, out, {}, given)
                         : F::fractional_max_pool3d_with_indices(input, 3, out, {}, given);
      };
      // A 16-bit input's windows come from float32 arithmetic on a GPU (as PyTorch's CUDA kernels),
      // from its own dtype's on the CPU: the CPU twin pools the same values in float32 (in a dry run,
      // whose device is a CPU, in the dtype itself).
      const DType cpu_dtype = td::is_16bit_float(dtype) && !ct::dry_run() ? td::kFloat32 : dtype;
      Tensor leaf_dev = x.dev.detach().requires_grad_(true);
      Tensor leaf_cpu = x.cpu.to(cpu_dtype).detach().requires_grad_(true);
      const auto [y_dev, i_dev] = pool(leaf_dev, samples.dev);
      const auto [y_cpu, i_cpu] = pool(leaf_cpu, samples.cpu.to(cpu_dtype));
      check_equal(y_dev, y_cpu.to(dtype), what);  // a chosen element of the input, exactly
      check_equal(i_dev, i_cpu, what + " indices");
      Pair probe = ct::random_pair(y_cpu.sizes(), dtype);
      (y_dev * probe.dev).sum().backward();
      (y_cpu * probe.cpu.to(cpu_dtype)).sum().backward();
      check_close(leaf_dev.grad(), leaf_cpu.grad().to(dtype), 4 * rtol_for(dtype), 4 * rtol_for(dtype),
                  what + " gradient");
    }
  }
}

TEST_CASE("chunked linear_cross_entropy gives the CPU's loss and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(45);
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kBFloat16}) {
    for (td::Reduction reduction : {td::kMean, td::kSum, td::kNone}) {
      for (bool probabilities : {false, true}) {
        const std::string what = std::string("linear_cross_entropy ") + td::dtype_name(dtype) + " " +
                                 F::reduction_name(reduction) + (probabilities ? " probabilities" : " indices");
        Pair x = ct::random_pair({37, 16}, dtype, Layout::Strided);
        Pair w = ct::random_pair({301, 16}, dtype, Layout::Permuted, -0.5, 0.5);
        Pair b = ct::random_pair({301}, dtype);
        Pair class_weight = ct::random_pair({301}, dtype, Layout::Contiguous, 0.5, 2);
        Pair t = probabilities ? Pair{} : ct::random_pair({37}, td::kInt64, Layout::Contiguous, 0, 301);
        if (probabilities) {
          const Tensor p = ct::random_input({37, 301}, td::kFloat32).softmax(1).to(dtype);
          t = Pair{p, ct::twin(p)};
        } else {
          t.cpu.narrow(0, 3, 2).fill_(-100);  // ignored rows
          t.dev = ct::twin(t.cpu);
        }
        const auto options = td::nn::LinearCrossEntropyOptions().batch_chunk_size(8);
        auto loss_of = [&](const Tensor& xi, const Tensor& wi, const Tensor& bi, const Tensor& ti, const Tensor& cw) {
          return F::linear_cross_entropy(xi, wi, ti, bi, cw, reduction, std::nullopt, 0, options);
        };
        Tensor x_dev = x.dev.detach().requires_grad_(true), x_cpu = x.cpu.detach().requires_grad_(true);
        Tensor w_dev = w.dev.detach().requires_grad_(true), w_cpu = w.cpu.detach().requires_grad_(true);
        Tensor b_dev = b.dev.detach().requires_grad_(true), b_cpu = b.cpu.detach().requires_grad_(true);
        const Tensor loss_dev = loss_of(x_dev, w_dev, b_dev, t.dev, class_weight.dev);
        const Tensor loss_cpu = loss_of(x_cpu, w_cpu, b_cpu, t.cpu, class_weight.cpu);
        check_close(loss_dev, loss_cpu, 8 * rtol_for(dtype), 8 * rtol_for(dtype), what);
        Pair probe = ct::random_pair(loss_cpu.sizes(), dtype);
        (loss_dev * probe.dev).sum().backward();
        (loss_cpu * probe.cpu).sum().backward();
        check_close(x_dev.grad(), x_cpu.grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype), what + " input gradient");
        check_close(w_dev.grad(), w_cpu.grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype), what + " weight gradient");
        check_close(b_dev.grad(), b_cpu.grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype), what + " bias gradient");
      }
    }
  }
}

TEST_CASE("lp_pool, max_unpool and cdist give the CPU's values and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(43);
  for (DType dtype : kFloating) {
    const std::string what = td::dtype_name(dtype);
    Pair x = ct::random_pair({2, 5, 7, 9}, dtype, Layout::Permuted);
    Tensor leaf_dev = x.dev.detach().requires_grad_(true), leaf_cpu = x.cpu.detach().requires_grad_(true);
    auto pools = [](const Tensor& t) {
      const auto [pooled, indices] = td::max_pool2d_with_indices(t, {3, 3}, {2, 2}, {1, 1});
      return F::lp_pool2d(t.abs() + 0.5, 2.5, {2, 3}, {1, 2}, true).sum() +
             (F::max_unpool2d(pooled, indices, 3, 2, 1, {7, 9}) * t).sum() + F::cdist(t, t.flip({2}), 1.5).sum();
    };
    const Tensor y_dev = pools(leaf_dev), y_cpu = pools(leaf_cpu);
    check_close(y_dev, y_cpu, 8 * rtol_for(dtype), 8 * rtol_for(dtype), "lp_pool, max_unpool, cdist " + what);
    y_dev.backward();
    y_cpu.backward();
    check_close(leaf_dev.grad(), leaf_cpu.grad(), 16 * rtol_for(dtype), 16 * rtol_for(dtype), "gradient " + what);
  }
}

TEST_CASE("grid_sample in every mode and padding gives the CPU's values and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(44);
  using M = F::GridSampleMode;
  using P = F::GridSamplePadding;
  for (DType dtype : {td::kFloat64, td::kFloat32}) {
    for (int dims : {2, 3}) {
      for (M mode : {M::bilinear, M::nearest, M::bicubic}) {
        if (dims == 3 && mode == M::bicubic) continue;
        for (P padding : {P::zeros, P::border, P::reflection}) {
          const std::string what = std::string(td::dtype_name(dtype)) + " " + std::to_string(dims) + "-D mode " +
                                   std::to_string(static_cast<int>(mode)) + " padding " +
                                   std::to_string(static_cast<int>(padding));
          Pair x = ct::random_pair(dims == 2 ? Shape{2, 3, 7, 9} : Shape{2, 3, 4, 5, 6}, dtype, Layout::Permuted);
          Pair grid = ct::random_pair(dims == 2 ? Shape{2, 5, 6, 2} : Shape{2, 3, 4, 5, 3}, dtype);
          Tensor x_dev = x.dev.detach().requires_grad_(true), x_cpu = x.cpu.detach().requires_grad_(true);
          Tensor g_dev = (grid.dev * 1.5).detach().requires_grad_(true);
          Tensor g_cpu = (grid.cpu * 1.5).detach().requires_grad_(true);
          const auto options = F::GridSampleOptions().mode(mode).padding_mode(padding).align_corners(dims == 3);
          const Tensor y_dev = F::grid_sample(x_dev, g_dev, options), y_cpu = F::grid_sample(x_cpu, g_cpu, options);
          check_close(y_dev, y_cpu, 8 * rtol_for(dtype), 8 * rtol_for(dtype), what);
          Pair probe = ct::random_pair(y_cpu.sizes(), dtype);
          (y_dev * probe.dev).sum().backward();
          (y_cpu * probe.cpu).sum().backward();
          check_close(x_dev.grad(), x_cpu.grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype), what + " input gradient");
          check_close(g_dev.grad(), g_cpu.grad(), 16 * rtol_for(dtype), 16 * rtol_for(dtype), what + " grid gradient");
        }
      }
    }
  }
}

TEST_CASE("embedding and embedding_bag with max_norm and scale_grad_by_freq match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(45);
  for (DType dtype : {td::kFloat64, td::kFloat32}) {
    const std::string what = td::dtype_name(dtype);
    Pair table = ct::random_pair({9, 5}, dtype);
    Tensor w_dev = (table.dev * 2).detach().requires_grad_(true), w_cpu = (table.cpu * 2).detach().requires_grad_(true);
    const Tensor ids = td::tensor({{1, 3, 1, 8}, {5, 1, 0, 3}});
    auto run = [&](const Tensor& w) {
      const Tensor on = ids.to(w.device());
      return F::embedding(on, w, 0, 1.3, 2, true).sum() * 2 +
             F::embedding_bag(on, w, Tensor(), F::EmbeddingBagMode::mean, Tensor(), false, std::nullopt, 1.1, 1, true)
                 .pow(2)
                 .sum();
    };
    const Tensor y_dev = run(w_dev), y_cpu = run(w_cpu);
    check_close(y_dev, y_cpu, 4 * rtol_for(dtype), 4 * rtol_for(dtype), "embedding " + what);
    check_close(w_dev.detach(), w_cpu.detach(), 2 * rtol_for(dtype), 2 * rtol_for(dtype), "renormed table " + what);
    y_dev.backward();
    y_cpu.backward();
    check_close(w_dev.grad(), w_cpu.grad(), 4 * rtol_for(dtype), 4 * rtol_for(dtype), "table gradient " + what);
  }
}

TEST_CASE("the margin and likelihood losses give the CPU's values and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(39);
  using Loss = std::function<Tensor(const std::vector<Tensor>&)>;
  const Tensor signs = td::where(td::rand({33, 7}) > 0.5, 1.0, -1.0), labels = td::randint(0, 7, {33});
  const Tensor listed = td::where(td::rand({33, 7}) > 0.3, td::randint(0, 7, {33, 7}), -1);
  auto on = [](const Tensor& constant, const Tensor& like) { return constant.to(like.device(), like.dtype()); };
  const std::vector<std::pair<std::string, Loss>> losses = {
      {"margin_ranking_loss", [&](auto& x) { return F::margin_ranking_loss(x[0], x[1], on(signs, x[0]), 0.2); }},
      {"hinge_embedding_loss", [&](auto& x) { return F::hinge_embedding_loss(x[0], on(signs, x[0]), 0.5); }},
      {"soft_margin_loss", [&](auto& x) { return F::soft_margin_loss(x[0], on(signs, x[0])); }},
      {"cosine_embedding_loss",
       [&](auto& x) { return F::cosine_embedding_loss(x[0], x[1], on(signs.select(1, 0), x[0]), 0.1); }},
      {"triplet_margin_loss", [&](auto& x) { return F::triplet_margin_loss(x[0], x[1], x[2], 1, 2, 1e-6, true); }},
      {"poisson_nll_loss", [&](auto& x) { return F::poisson_nll_loss(x[0], x[1].abs() * 3, true, true); }},
      {"gaussian_nll_loss", [&](auto& x) { return F::gaussian_nll_loss(x[0], x[1], x[2].abs(), true); }},
      {"multilabel_soft_margin_loss",
       [&](auto& x) { return F::multilabel_soft_margin_loss(x[0], on(signs, x[0]).clamp(0)); }},
      {"multi_margin_loss", [&](auto& x) { return F::multi_margin_loss(x[0], labels.to(x[0].device()), 2, 0.7); }},
      {"multilabel_margin_loss", [&](auto& x) { return F::multilabel_margin_loss(x[0], listed.to(x[0].device())); }},
  };
  for (DType dtype : {td::kFloat64, td::kFloat32}) {
    for (const auto& [name, loss] : losses) {
      const std::string what = name + " " + td::dtype_name(dtype);
      std::vector<Tensor> cpu, dev;
      for (int k = 0; k < 3; ++k) {
        Pair x = ct::random_pair({33, 7}, dtype, k == 0 ? Layout::Permuted : Layout::Contiguous);
        cpu.push_back(x.cpu.detach().requires_grad_(true));
        dev.push_back(x.dev.detach().requires_grad_(true));
      }
      const Tensor on_cpu = loss(cpu), on_dev = loss(dev);
      check_close(on_dev, on_cpu, 8 * rtol_for(dtype), 8 * rtol_for(dtype), what);
      on_cpu.backward();
      on_dev.backward();
      for (size_t k = 0; k < cpu.size(); ++k) {
        if (!cpu[k].grad().defined()) continue;
        check_close(dev[k].grad(), cpu[k].grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype),
                    what + " gradient " + std::to_string(k));
      }
    }
  }
}

TEST_CASE("instance norm, local response norm and bilinear give the CPU's values and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(40);
  using Op = std::function<Tensor(const std::vector<Tensor>&)>;
  const std::vector<std::tuple<std::string, std::vector<Shape>, Op>> ops = {
      {"instance_norm", {{2, 3, 33}, {3}, {3}},
       [](const std::vector<Tensor>& x) { return F::instance_norm(x[0], Tensor(), Tensor(), x[1], x[2]); }},
      {"local_response_norm", {{2, 7, 33}},
       [](const std::vector<Tensor>& x) { return F::local_response_norm(x[0], 3, 0.1, 0.75, 2); }},
      {"bilinear", {{33, 3}, {33, 4}, {5, 3, 4}, {5}},
       [](const std::vector<Tensor>& x) { return F::bilinear(x[0], x[1], x[2], x[3]); }},
  };
  for (DType dtype : {td::kFloat64, td::kFloat32}) {
    for (const auto& [name, shapes, op] : ops) {
      const std::string what = name + " " + td::dtype_name(dtype);
      std::vector<Tensor> cpu, dev;
      for (const Shape& shape : shapes) {
        Pair x = ct::random_pair(shape, dtype, shape.size() > 1 ? Layout::Permuted : Layout::Contiguous);
        cpu.push_back(x.cpu.detach().requires_grad_(true));
        dev.push_back(x.dev.detach().requires_grad_(true));
      }
      const Tensor y_cpu = op(cpu), y_dev = op(dev);
      check_close(y_dev, y_cpu, 8 * rtol_for(dtype), 8 * rtol_for(dtype), what);
      Pair probe = ct::random_pair(y_cpu.sizes(), dtype);
      (y_cpu * probe.cpu).sum().backward();
      (y_dev * probe.dev).sum().backward();
      for (size_t k = 0; k < cpu.size(); ++k) {
        check_close(dev[k].grad(), cpu[k].grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype),
                    what + " gradient " + std::to_string(k));
      }
    }
  }
}

TEST_CASE("LSTM and GRU over several layers both ways give the CPU's outputs and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(35);
  td::manual_seed(35);
  for (DType dtype : {td::kFloat64, td::kFloat32}) {
    nn::LSTM lstm(nn::LSTMOptions(5, 7).num_layers(2).bidirectional(true).batch_first(true));
    nn::GRU gru(nn::GRUOptions(5, 7).num_layers(2).bidirectional(true));
    std::vector<std::shared_ptr<nn::Module>> on_cpu = {lstm.ptr(), gru.ptr()};
    for (size_t k = 0; k < on_cpu.size(); ++k) {
      const std::string what = std::string(k == 0 ? "LSTM " : "GRU ") + td::dtype_name(dtype);
      on_cpu[k]->to(dtype);
      auto on_gpu = on_cpu[k]->clone(ct::device());
      Pair x = ct::random_pair({3, 33, 5}, dtype, Layout::Permuted);
      Tensor leaf_cpu = x.cpu.detach().requires_grad_(true), leaf_gpu = x.dev.detach().requires_grad_(true);
      auto run = [&](nn::Module& m, const Tensor& input) {
        if (k == 0) {
          auto [out, state] = dynamic_cast<nn::LSTMImpl&>(m).forward(input);
          return out.sum() + std::get<0>(state).sum() * 2 + std::get<1>(state).sum() * 3;
        }
        auto [out, h] = dynamic_cast<nn::GRUImpl&>(m).forward(input);
        return out.sum() + h.sum() * 2;
      };
      Tensor loss_cpu = run(*on_cpu[k], leaf_cpu), loss_gpu = run(*on_gpu, leaf_gpu);
      check_close(loss_gpu, loss_cpu, 8 * rtol_for(dtype), 0, what);
      loss_cpu.backward();
      loss_gpu.backward();
      check_close(leaf_gpu.grad(), leaf_cpu.grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype), what + " input gradient");
      const auto cpu_params = on_cpu[k]->parameters(), gpu_params = on_gpu->parameters();
      for (size_t i = 0; i < cpu_params.size(); ++i) {
        check_close(gpu_params[i].grad(), cpu_params[i].grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype),
                    what + " parameter " + std::to_string(i));
      }
    }
  }
}

TEST_CASE("an LSTM over a packed, unsorted batch gives the CPU's outputs, states and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(42);
  td::manual_seed(42);
  namespace rnn = nn::utils::rnn;
  for (DType dtype : {td::kFloat64, td::kFloat32}) {
    const std::string what = std::string("packed LSTM ") + td::dtype_name(dtype);
    nn::LSTM on_cpu(nn::LSTMOptions(5, 7).num_layers(2).bidirectional(true));
    on_cpu->to(dtype);
    auto on_gpu = std::dynamic_pointer_cast<nn::LSTMImpl>(on_cpu->clone(ct::device()));
    Pair x = ct::random_pair({9, 6, 5}, dtype, Layout::Permuted);
    Tensor leaf_cpu = x.cpu.detach().requires_grad_(true), leaf_gpu = x.dev.detach().requires_grad_(true);
    const std::vector<int64_t> lengths = {3, 9, 1, 6, 9, 4};
    auto run = [&](nn::LSTMImpl& m, const Tensor& input) {
      auto [out, state] = m.forward_with_packed_input(rnn::pack_padded_sequence(input, lengths, false, false));
      const Tensor padded = std::get<0>(rnn::pad_packed_sequence(out));
      return (padded * padded).sum() + std::get<0>(state).sum() * 2 + std::get<1>(state).sum() * 3;
    };
    Tensor loss_cpu = run(*on_cpu, leaf_cpu), loss_gpu = run(*on_gpu, leaf_gpu);
    check_close(loss_gpu, loss_cpu, 8 * rtol_for(dtype), 0, what);
    loss_cpu.backward();
    loss_gpu.backward();
    check_close(leaf_gpu.grad(), leaf_cpu.grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype), what + " input gradient");
    const auto cpu_params = on_cpu->parameters(), gpu_params = on_gpu->parameters();
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      check_close(gpu_params[i].grad(), cpu_params[i].grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype),
                  what + " parameter " + std::to_string(i));
    }
  }
}

TEST_CASE("a Transformer with a causal mask and padding gives the CPU's outputs and gradients", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(37);
  td::manual_seed(37);
  for (DType dtype : {td::kFloat64, td::kFloat32}) {
    const std::string what = std::string("Transformer ") + td::dtype_name(dtype);
    nn::Transformer on_cpu(
        nn::TransformerOptions(8, 2).num_encoder_layers(2).num_decoder_layers(2).dim_feedforward(16).dropout(0));
    on_cpu->to(dtype);
    auto on_gpu = std::dynamic_pointer_cast<nn::TransformerImpl>(on_cpu->clone(ct::device()));
    Pair src = ct::random_pair({7, 3, 8}, dtype, Layout::Permuted), tgt = ct::random_pair({5, 3, 8}, dtype);
    Tensor src_cpu = src.cpu.detach().requires_grad_(true), src_gpu = src.dev.detach().requires_grad_(true);
    const Tensor causal = nn::Transformer::generate_square_subsequent_mask(5, dtype);
    Tensor padding = td::zeros({3, 7}, td::kBool);
    padding[1].narrow(0, 5, 2).fill_(true);
    auto run = [&](nn::TransformerImpl& m, const Tensor& s, const Tensor& t, td::Device device) {
      const Tensor y = m.forward(s, t, Tensor(), causal.to(device), Tensor(), padding.to(device), Tensor(),
                                 padding.to(device), false, true);
      return (y * y).sum();
    };
    Tensor loss_cpu = run(*on_cpu, src_cpu, tgt.cpu, td::Device("cpu")),
           loss_gpu = run(*on_gpu, src_gpu, tgt.dev, ct::device());
    check_close(loss_gpu, loss_cpu, 8 * rtol_for(dtype), 0, what);
    loss_cpu.backward();
    loss_gpu.backward();
    check_close(src_gpu.grad(), src_cpu.grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype), what + " source gradient");
    const auto cpu_params = on_cpu->parameters(), gpu_params = on_gpu->parameters();
    for (size_t i = 0; i < cpu_params.size(); ++i) {
      check_close(gpu_params[i].grad(), cpu_params[i].grad(), 8 * rtol_for(dtype), 8 * rtol_for(dtype),
                  what + " parameter " + std::to_string(i));
    }
  }
}

// Output and gradients (input, weight, bias) of sum(conv2d(x, w, b) * probe), with cuDNN on or off.
// Sets whether convolutions take cuDNN for the life of a scope, then restores what was.
class CudnnGuard {
 public:
  explicit CudnnGuard(bool enabled) : previous_(td::kernels::cudnn_enabled()) {
    td::kernels::set_cudnn_enabled(enabled);
  }
  ~CudnnGuard() { td::kernels::set_cudnn_enabled(previous_); }
  CudnnGuard(const CudnnGuard&) = delete;
  CudnnGuard& operator=(const CudnnGuard&) = delete;

 private:
  bool previous_;
};

std::vector<Tensor> conv_run(bool cudnn, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& probe,
                             const Dims& stride, const Dims& padding, const Dims& dilation, int64_t groups) {
  CudnnGuard guard(cudnn);
  Tensor xl = x.detach().requires_grad_(true), wl = w.detach().requires_grad_(true), bl = b.detach().requires_grad_(true);
  Tensor out = F::conv2d(xl, wl, bl, stride, padding, dilation, groups);
  const std::string node = F::conv2d(xl, wl, Tensor(), stride, padding, dilation, groups).grad_fn()->name();
  // The path asked for was taken: on the device, cuDNN's node or im2col's ops; on the CPU, its own
  // convolution node for float32 and float64 and im2col's ops for the other dtypes.
  const bool one_node = x.is_cuda() ? cudnn : (x.dtype() == td::kFloat32 || x.dtype() == td::kFloat64);
  CHECK((node == "ConvolutionBackward0") == one_node);
  (out * probe).sum().backward();
  return {out.detach(), xl.grad(), wl.grad(), bl.grad()};
}

// Small: each dtype with two of the geometries (taking turns), light enough for the sanitizer runs;
// large: every geometry, both group counts, every dtype.
void cudnn_conv_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 135 : 35);
  size_t turn = 0;
  for (DType dtype : kFloating) {
    for (int64_t groups : {1, 2}) {
      const size_t pick = turn++ % kConvParams.size();  // small: one geometry for each dtype and group count
      for (size_t i = 0; i < kConvParams.size(); ++i) {
        if (!large && i != pick) continue;
        const ConvParams& p = kConvParams[i];
        Pair x = ct::random_pair({3, 4, 9, 10}, dtype, Layout::Permuted);
        Pair w = ct::random_pair({6, 4 / groups, p.kernel[0], p.kernel.back()}, dtype, Layout::Strided);
        Pair b = ct::random_pair({6}, dtype);
        const Shape out_shape =
            F::conv2d(x.cpu, w.cpu, b.cpu, p.stride, p.padding, p.dilation, groups).sizes();
        Pair probe = ct::random_pair(out_shape, dtype);
        std::ostringstream what;
        what << "cuDNN conv2d " << td::dtype_name(dtype) << " groups " << groups << " kernel "
             << td::shape_str(p.kernel) << " dilation " << td::shape_str(p.dilation) << " padding "
             << td::shape_str(p.padding) << " stride " << td::shape_str(p.stride);
        auto dev = conv_run(true, x.dev, w.dev, b.dev, probe.dev, p.stride, p.padding, p.dilation, groups);
        auto cpu = conv_run(false, x.cpu, w.cpu, b.cpu, probe.cpu, p.stride, p.padding, p.dilation, groups);
        // The magnitudes each result sums: the same problem on |x|, |w|, |b|, |probe| in float64.
        auto scale = conv_run(false, ct::abs64(x.cpu), ct::abs64(w.cpu), ct::abs64(b.cpu), ct::abs64(probe.cpu),
                              p.stride, p.padding, p.dilation, groups);
        const double r = 4 * rtol_for(dtype);
        const char* names[] = {" output", " grad input", " grad weight", " grad bias"};
        for (size_t i = 0; i < dev.size(); ++i) check_close(dev[i], cpu[i], r, 0, what.str() + names[i], scale[i]);
        // And the same on the device without cuDNN (im2col and cuBLAS).
        auto plain = conv_run(false, x.dev, w.dev, b.dev, probe.dev, p.stride, p.padding, p.dilation, groups);
        for (size_t i = 0; i < dev.size(); ++i) {
          check_close(dev[i], plain[i].cpu(), r, 0, what.str() + " against im2col on the device" + names[i],
                      scale[i]);
        }
      }
    }
  }
}

TEST_CASE("conv2d through cuDNN: the CPU's output and gradients, with stride, padding, dilation and groups",
          "[cuda]") {
  TD_SKIP_UNLESS_CUDA_ITSELF();
  REQUIRE(td::kernels::cudnn_enabled());
  cudnn_conv_sweep(false);
}

TEST_CASE("conv2d through cuDNN, every geometry, group count and dtype", "[cuda][large]") {
  TD_SKIP_UNLESS_CUDA_ITSELF();
  REQUIRE(td::kernels::cudnn_enabled());
  cudnn_conv_sweep(true);
}

// ---------------------------------------------------------------------------------------------
// fused layers: layer norm, cross-entropy and dropout, forward and backward

// Gradients of sum(out * probe) for out = f(inputs), inputs made leaves on their device.
std::vector<Tensor> fused_grads(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                                const Tensor& probe, Tensor* out) {
  for (Tensor& t : inputs) t = t.detach().requires_grad_(true);
  *out = f(inputs);
  (*out * probe).sum().backward();
  std::vector<Tensor> grads;
  for (const Tensor& t : inputs) grads.push_back(t.grad());
  return grads;
}

void fused_sweep(bool large) {
  ct::PoisonGuard poison;
  tt::reseed(large ? 134 : 34);
  std::vector<Shape> shapes = {{1, 1}, {7, 33}, {33, 7}, {3, 5, 40}, {0, 6}, {2, 1500}};
  if (large) shapes.insert(shapes.end(), {{1, 1000003}, {5000, 257}, {100003, 3}});
  for (DType dtype : kFloating) {
    const double r = 4 * rtol_for(dtype);
    for (const Shape& shape : shapes) {
      const int64_t cols = shape.back();
      for (Layout layout : {Layout::Contiguous, Layout::Permuted, Layout::Strided}) {
        if (is_big(shape) && layout == Layout::Permuted) continue;
        const std::string what = describe("", dtype, shape, layout);
        Pair x = ct::random_pair(shape, dtype, layout, -3, 5);
        Pair w = ct::random_pair({cols}, dtype, Layout::Contiguous, 0.5, 2);
        Pair b = ct::random_pair({cols}, dtype);
        Pair probe = ct::random_pair(shape, dtype);

        // Layer norm with and without its affine parameters: output and the gradients of x, weight
        // and bias, each within a tolerance scaled by the magnitudes it sums (float64, on the CPU).
        Tensor x64 = x.cpu.to(td::kFloat64), g64 = ct::abs64(probe.cpu);
        Tensor rstd64 = 1 / td::sqrt(x64.var({-1}, 0, true) + 1e-5);
        Tensor xhat = ((x64 - x64.mean({-1}, true)) * rstd64).abs();
        std::vector<int64_t> leading;
        for (int64_t d = 0; d + 1 < static_cast<int64_t>(shape.size()); ++d) leading.push_back(d);
        // Either affine parameter may be absent, and x may need no gradient: the backward kernel
        // then writes only the gradients asked for.
        struct Variant {
          bool weight, bias, x_grad;
          const char* name;
        };
        for (const Variant& v : {Variant{true, true, true, "layer_norm "}, Variant{false, false, true, "layer_norm without affine "},
                                 Variant{true, false, true, "layer_norm with a weight only "},
                                 Variant{false, true, true, "layer_norm with a bias only "},
                                 Variant{true, true, false, "layer_norm of an x that needs no gradient "}}) {
          auto ln = [&](const std::vector<Tensor>& in) {
            return F::layer_norm(v.x_grad ? in[0] : in[0].detach(), {cols}, v.weight ? in[1] : Tensor(),
                                 v.bias ? in[2] : Tensor());
          };
          Tensor y_dev, y_cpu;
          auto g_dev = fused_grads(ln, {x.dev, w.dev, b.dev}, probe.dev, &y_dev);
          auto g_cpu = fused_grads(ln, {x.cpu, w.cpu, b.cpu}, probe.cpu, &y_cpu);
          const Tensor w64 = v.weight ? ct::abs64(w.cpu) : td::ones({cols}, td::kFloat64);
          const Tensor gy = g64 * w64;
          const std::string ln_what = v.name + what;
          check_close(y_dev, y_cpu, r, r, ln_what, v.bias ? xhat * w64 + ct::abs64(b.cpu) : xhat * w64);
          if (v.x_grad) {
            check_close(g_dev[0], g_cpu[0], r, r, "grad x of " + ln_what,
                        (gy + gy.mean({-1}, true) + xhat * (gy * xhat).mean({-1}, true)) * rstd64);
          }
          if (v.weight) check_close(g_dev[1], g_cpu[1], r, r, "grad weight of " + ln_what, (g64 * xhat).sum(leading));
          if (v.bias) check_close(g_dev[2], g_cpu[2], r, r, "grad bias of " + ln_what, g64.sum(leading));
        }

        // Cross-entropy over rows of `cols` classes, with and without class weights, a quarter of
        // the rows ignored, with and without label smoothing: per-row losses, and the gradient
        // within a tolerance scaled by the terms it is made of.
        Pair scores = ct::random_pair({td::numel_of(shape) / std::max<int64_t>(cols, 1), cols}, dtype, layout, -5, 5);
        const int64_t rows = scores.cpu.size(0);
        Tensor t = td::where(td::rand({rows}) < 0.25, -100, td::randint(0, cols, {rows}));
        Tensor kept = (t != -100).to(td::kFloat64).unsqueeze(1);
        Tensor p64 = scores.cpu.to(td::kFloat64).softmax(1);
        Tensor onehot = td::one_hot(td::where(t == -100, 0, t), cols).to(td::kFloat64);
        for (bool weighted : {true, false}) {
          for (double smoothing : {0.0, 0.1}) {
            auto ce = [&](const std::vector<Tensor>& in) {
              const bool on_device = in[0].device() == ct::device();
              Tensor weight = !weighted ? Tensor() : on_device ? w.dev : w.cpu;
              return F::cross_entropy(in[0], on_device ? t.to(ct::device()) : t, weight, -100, td::kNone, smoothing);
            };
            Pair row_probe = ct::random_pair({rows}, dtype);
            Tensor l_dev, l_cpu;
            auto ce_dev = fused_grads(ce, {scores.dev}, row_probe.dev, &l_dev);
            auto ce_cpu = fused_grads(ce, {scores.cpu}, row_probe.cpu, &l_cpu);
            const std::string ce_what =
                what + (weighted ? " weighted" : "") + " smoothing " + std::to_string(smoothing);
            const Tensor w64 = weighted ? ct::abs64(w.cpu) : td::ones({cols}, td::kFloat64);
            Tensor loss_scale = (ct::abs64(scores.cpu).amax({1}) * 2 + std::log(static_cast<double>(cols)) + 1) *
                                w64.amax().item<double>();
            check_close(l_dev, l_cpu, r, r, "cross_entropy " + ce_what, rows > 0 ? loss_scale : Tensor());
            Tensor target_weight = kept * (onehot * w64).sum({1}, true);
            Tensor grad_scale =
                ct::abs64(row_probe.cpu).unsqueeze(1) *
                (target_weight * (p64 + onehot) + kept * (smoothing / cols) * (p64 * w64.sum() + w64));
            check_close(ce_dev[0], ce_cpu[0], r, r * 1e-3, "cross_entropy grad " + ce_what, grad_scale);
          }
        }

        // Dropout: the CPU's mask, values and gradient for the same seed.
        for (double p : {0.1, 0.5, 0.9}) {
          auto drop = [p](const std::vector<Tensor>& in) { return F::dropout(in[0], p, true); };
          Tensor d_dev, d_cpu;
          ct::manual_seed_as_cpu(tt::test_seed() ^ 0xd0);
          auto dd = fused_grads(drop, {x.dev}, probe.dev, &d_dev);
          ct::manual_seed_as_cpu(tt::test_seed() ^ 0xd0);
          auto dc = fused_grads(drop, {x.cpu}, probe.cpu, &d_cpu);
          const std::string d_what = what + " p " + std::to_string(p);
          check_equal(d_dev == 0, d_cpu == 0, "dropout mask " + d_what);
          check_close(d_dev, d_cpu, rtol_for(dtype), 0, "dropout " + d_what);
          check_close(dd[0], dc[0], rtol_for(dtype), 0, "dropout grad " + d_what);
        }
      }
    }
  }
}

TEST_CASE("layer norm, cross-entropy and dropout, forward and backward, match the CPU", "[cuda][shared]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  fused_sweep(false);
}

TEST_CASE("cross-entropy smooths by the option, as the CPU does, also where smoothing / C rounds to 0", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  // 1e-50 / 3 is 0 in float32: the smoothing term is 0 times a sum that holds -inf, NaN on the CPU
  // (and in PyTorch); the GPU once skipped the term when its factor rounded to 0.
  const Tensor x = td::tensor(std::vector<float>{0.5f, -std::numeric_limits<float>::infinity(), 1.0f, 0.2f, 0.3f, 0.4f})
                       .view({2, 3});
  const Tensor t = td::tensor(std::vector<int64_t>{0, 2});
  // The CPU's losses (PyTorch's, tests/nn/loss_test.cc): finite, NaN, inf in the first row.
  for (double smoothing : {0.0, 1e-50, 0.1}) {
    INFO("smoothing " << smoothing);
    const Tensor on_cpu = F::cross_entropy(x, t, {}, -100, td::kNone, smoothing);
    const Tensor on_gpu = F::cross_entropy(x.to(ct::device()), t.to(ct::device()), {}, -100, td::kNone, smoothing);
    check_close(on_gpu, on_cpu, rtol_for(td::kFloat32), 0, "cross_entropy");
  }
}

TEST_CASE("layer norm, cross-entropy and dropout match the CPU on long rows and many rows", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  fused_sweep(true);
}

// ---------------------------------------------------------------------------------------------
// errors

TEST_CASE("an op mixing a CPU and a CUDA tensor is an error naming both devices, and changes nothing", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(33);
  const std::string host = td::Device(td::kCPU).str(), dev = ct::device().str();
  Tensor a = td::randn({3, 4}), b = td::randn({3, 4}).to(ct::device());
  Tensor m_dev = td::randn({4, 5}).to(ct::device()), m_cpu = td::randn({4, 5});
  Tensor mask = td::randn({3, 4}) > 0, index = td::tensor({0, 2}), gather_index = td::tensor({{0, 1}, {2, 3}, {1, 1}});
  Tensor src = td::randn({3, 2}), bias = td::randn({5}), weight = td::randn({6, 4, 3, 3}).to(ct::device());
  Tensor image = td::randn({1, 4, 5, 5});
  const std::vector<Tensor> operands = {a, b, m_dev, m_cpu, mask, index, gather_index, src, bias, weight, image};
  std::vector<ct::Unchanged> before;
  for (const Tensor& t : operands) before.emplace_back(t);

  tt::check_error([&] { td::add(a, b); }, {"add", host, dev});
  tt::check_error([&] { td::mul(b, a); }, {"mul", host, dev});
  tt::check_error([&] { td::maximum(b, a); }, {"maximum", host, dev});
  tt::check_error([&] { td::lt(a, b); }, {"lt", host, dev});
  tt::check_error([&] { a.add_(b); }, {"add", host, dev});
  tt::check_error([&] { b.mul_(a); }, {"mul", host, dev});
  tt::check_error([&] { b.copy_(a.t()); }, {"copy_"});  // a shape error, whatever the devices
  tt::check_error([&] { td::mm(b, m_cpu); }, {"mm", host, dev});
  tt::check_error([&] { td::matmul(a, m_dev); }, {"matmul", host, dev});
  tt::check_error([&] { td::addmm(bias, b, m_dev); }, {"addmm", host, dev});
  tt::check_error([&] { F::linear(a, m_dev.t()); }, {host, dev});
  tt::check_error([&] { td::where(mask, b, b); }, {"where", host, dev});
  tt::check_error([&] { b.masked_fill_(mask, 0); }, {"masked_fill", host, dev});
  tt::check_error([&] { td::masked_fill(b, mask, 0); }, {"masked_fill", host, dev});
  tt::check_error([&] { b.index_select(0, index); }, {"index_select", host, dev});
  tt::check_error([&] { b.gather(1, gather_index); }, {"gather", host, dev});
  tt::check_error([&] { b.scatter_add_(1, gather_index, src); }, {"scatter_add", host, dev});
  tt::check_error([&] { td::embedding(b, index); }, {host, dev});
  tt::check_error([&] { td::cat({a, b}); }, {"cat", host, dev});
  tt::check_error([&] { F::conv2d(image, weight); }, {host, dev});
  for (const ct::Unchanged& u : before) u.check();
}

// Every kernel indexes in 64 bits; this reads elements past 2^31 back through the contiguous
// (vector) path, an odd offset (the scalar path) and a strided view (the offset calculator).
TEST_CASE("element-wise ops, copies, fills and sums reach elements past 2^31", "[cuda][large]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  const int64_t n = (int64_t{1} << 31) + 17;
  Tensor ones = td::full({n}, 1, on_device(td::kUInt8));
  Tensor c = ones + td::full({n}, 2, on_device(td::kUInt8));
  Tensor last = c.narrow(0, n - 3, 3);
  check_equal(last, td::tensor({3, 3, 3}, td::kUInt8), "a + b, the last three elements");
  CHECK(c.sum().item<int64_t>() == 3 * n);
  c.narrow(0, 1, n - 1).copy_(ones.narrow(0, 0, n - 1));  // c: 3, then n - 1 ones
  CHECK(c.sum().item<int64_t>() == n + 2);
  // The odd elements 1, 3, ..., n - 2 through a view of stride 2 whose last offset is past 2^31.
  const int64_t odd = (n - 1) / 2;
  c.narrow(0, 0, n - 1).view({odd, 2}).select(1, 1).fill_(5);
  check_equal(last, td::tensor({1, 5, 1}, td::kUInt8), "the last three after the copy and the fill");
  CHECK(c.sum().item<int64_t>() == n + 2 + 4 * odd);
}

}  // namespace

TEST_CASE("sort, topk, kthvalue and median match the CPU: ties, NaN, every dtype, long and many rows", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(71);
  const std::vector<Shape> shapes = {{1}, {7}, {33, 7}, {3, 1000}, {1000003}, {2000, 33}, {5, 0}, {}};
  for (DType dtype : kAll) {
    for (const Shape& shape : shapes) {
      for (Layout layout : layouts_for(shape)) {
        // Whole numbers: ties everywhere; a stable sort has one answer. The input keeps its layout
        // on the device (the values are rounded in its storage).
        Tensor cpu = ct::random_input(shape, dtype, layout, -20, 20);
        if (td::is_floating(dtype)) {
          whole(cpu).copy_(td::round(whole(cpu)));
          sprinkle(cpu, 0.09, kNaN);
        }
        const Tensor dev = ct::twin(cpu);
        const std::string what = describe("sort", dtype, shape, layout);
        for (int64_t dim = shape.size() >= 2 ? 0 : -1; dim < 0 || dim + 1 < static_cast<int64_t>(shape.size());) {
          for (bool descending : {false, true}) {
            const std::string how = std::string(" along ") + std::to_string(dim) + (descending ? " descending" : "");
            auto [cv, ci] = td::sort(cpu, dim, descending);
            auto [dv, di] = td::sort(dev, dim, descending);
            check_equal(dv, cv, what + how + " values");
            check_equal(di, ci, what + how + " indices");
          }
          if (dim < 0) break;
          dim = -1;  // after dim 0 of a matrix, the last dim
        }
        if (shape.empty() || shape.back() < 3) continue;
        auto [tv, ti] = td::topk(dev, 3, -1);
        check_equal(tv, std::get<0>(td::topk(cpu, 3, -1)), what + " topk");
        check_equal(ti, std::get<1>(td::topk(cpu, 3, -1)), what + " topk indices");
        const auto check_both = [&](const std::tuple<Tensor, Tensor>& d, const std::tuple<Tensor, Tensor>& c,
                                    const std::string& name) {
          check_equal(std::get<0>(d), std::get<0>(c), what + " " + name + " values");
          check_equal(std::get<1>(d), std::get<1>(c), what + " " + name + " indices");
        };
        check_both(td::kthvalue(dev, 2, -1), td::kthvalue(cpu, 2, -1), "kthvalue");
        check_both(td::median(dev, -1), td::median(cpu, -1), "median");
        if (td::is_floating(dtype)) check_both(td::nanmedian(dev, -1), td::nanmedian(cpu, -1), "nanmedian");
      }
    }
  }
}

TEST_CASE("rearranging, indexing and counting compositions match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(72);
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kInt64}) {
    for (const Shape& shape : std::vector<Shape>{{7, 33}, {1, 1000003}, {3, 5, 2}}) {
      for (Layout layout : layouts_for(shape)) {
        Pair x = ct::random_pair(shape, dtype, layout, -3, 3);
        const std::string what = describe("compositions", dtype, shape, layout);
        const int64_t last = static_cast<int64_t>(shape.size()) - 1;
        check_equal(td::roll(x.dev, {3, -1}, {0, last}), td::roll(x.cpu, {3, -1}, {0, last}), what + " roll");
        check_equal(x.dev.repeat(Shape(shape.size(), 2)), x.cpu.repeat(Shape(shape.size(), 2)), what + " repeat");
        check_equal(td::repeat_interleave(x.dev, 3, 0), td::repeat_interleave(x.cpu, 3, 0),
                    what + " repeat_interleave");
        check_equal(td::diagonal(x.dev, 1, 0, last), td::diagonal(x.cpu, 1, 0, last), what + " diagonal");
        check_equal(td::nonzero(x.dev), td::nonzero(x.cpu), what + " nonzero");
        check_equal(td::masked_select(x.dev, x.dev > 0), td::masked_select(x.cpu, x.cpu > 0), what + " masked_select");
        check_equal(x.dev.count_nonzero({0}), x.cpu.count_nonzero({0}), what + " count_nonzero");
        const Tensor index_cpu = td::tensor({2, 0, 0});
        const Tensor index_dev = index_cpu.to(ct::device());
        const Tensor rows_cpu = x.cpu.narrow(0, 0, 1)
                                    .expand([&] {
                                      Shape s3 = shape;
                                      s3[0] = 3;
                                      return s3;
                                    }())
                                    .contiguous();
        const Tensor rows_dev = rows_cpu.to(ct::device());
        if (shape[0] >= 3) {
          check_close(x.dev.index_add(0, index_dev, rows_dev, 2), x.cpu.index_add(0, index_cpu, rows_cpu, 2), 1e-3,
                      1e-3, what + " index_add");
          check_equal(x.dev.index_fill(0, index_dev, 1), x.cpu.index_fill(0, index_cpu, 1), what + " index_fill");
        }
        const Tensor flat_index = td::tensor({0, -1, 5});
        check_equal(td::take(x.dev, flat_index.to(ct::device())), td::take(x.cpu, flat_index), what + " take");
        check_equal(std::get<0>(td::unique(x.dev)), std::get<0>(td::unique(x.cpu)), what + " unique");
        check_equal(std::get<1>(td::unique(x.dev, true)), std::get<1>(td::unique(x.cpu, true)),
                    what + " unique inverse");
        if (td::is_floating(dtype)) {
          check_equal(td::nansum(td::where(x.dev > 2, kNaN, x.dev)).to(td::kFloat64).round(),
                      td::nansum(td::where(x.cpu > 2, kNaN, x.cpu)).to(td::kFloat64).round(), what + " nansum");
        }
      }
    }
  }
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    Pair a = ct::random_pair({3, 5, 4}, dtype, Layout::Permuted, -1, 1);
    Pair b = ct::random_pair({3, 4, 6}, dtype, Layout::Strided, -1, 1);
    const double tol = rtol_for(dtype) * 40;
    check_close(td::einsum("bij,bjk->bki", {a.dev, b.dev}), td::einsum("bij,bjk->bki", {a.cpu, b.cpu}), tol, tol,
                "einsum");
    check_close(td::nn::functional::rms_norm(a.dev, {4}), td::nn::functional::rms_norm(a.cpu, {4}), tol, tol,
                "rms_norm");
    check_close(td::nn::functional::pdist(a.dev.select(0, 0)), td::nn::functional::pdist(a.cpu.select(0, 0)), tol, tol,
                "pdist");
  }
  // Batched rows in every dtype (integers tie often), NaN among floating values, both sides.
  for (DType dtype : kNumeric) {
    Pair rows = ct::random_pair({40, 17}, dtype, Layout::Contiguous, -3, 3);
    const Tensor sorted_rows = std::get<0>(td::sort(rows.cpu, 1));
    Tensor probes = ct::random_pair({40, 1003}, dtype, Layout::Strided, -4, 4).cpu;
    if (td::is_floating(dtype)) sprinkle(probes, 0.01, kNaN);
    for (bool right : {false, true}) {
      check_equal(td::searchsorted(sorted_rows.to(ct::device()), ct::twin(probes), right),
                  td::searchsorted(sorted_rows, probes, right),
                  std::string(right ? "batched searchsorted right, " : "batched searchsorted, ") + td::dtype_name(dtype));
    }
  }
  const Tensor seq = td::tensor({-2.0, -1.0, 0.5, 0.5, 2.0});
  Pair v = ct::random_pair({33, 7}, td::kFloat32, Layout::Strided, -3, 3);
  check_equal(td::searchsorted(seq.to(ct::device()), v.dev, true), td::searchsorted(seq, v.cpu, true), "searchsorted");
  const Tensor ints = td::tensor({0, 3, 3, 1, 7, 0});
  check_equal(td::bincount(ints.to(ct::device()), Tensor(), 9), td::bincount(ints, Tensor(), 9), "bincount");
  const Tensor perm = td::randperm(100003, td::TensorOptions().device(ct::device()));
  CHECK(perm.device() == ct::device());
  check_equal(std::get<0>(td::sort(perm)), td::arange(100003), "randperm is a permutation");
  const Tensor drawn = td::multinomial(td::tensor({1.0, 0.0, 3.0}).to(ct::device()), 1000, true);
  CHECK_FALSE(td::any(drawn == 1).item<bool>());
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    Pair a = ct::random_pair({33}, dtype, Layout::Strided, -1, 1);
    Pair m = ct::random_pair({7, 33}, dtype, Layout::Permuted, -1, 1);
    const double tol = rtol_for(dtype) * 40;
    check_close(td::dot(a.dev, a.dev), td::dot(a.cpu, a.cpu), tol, tol, "dot");
    check_close(td::mv(m.dev, a.dev), td::mv(m.cpu, a.cpu), tol, tol, "mv");
    check_close(td::outer(a.dev, a.dev), td::outer(a.cpu, a.cpu), tol, tol, "outer");
  }
}

TEST_CASE("scatter and scatter_ match the CPU where no place is written twice, every dtype", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(73);
  for (DType dtype : kAll) {
    for (const Shape& shape : std::vector<Shape>{{7, 33}, {3, 1000003 / 3}, {4, 5, 6}}) {
      for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
        Pair x = ct::random_pair(shape, dtype, layout, -5, 5);
        // Distinct positions along the last dim: the first half of a random permutation of each line.
        const int64_t last = static_cast<int64_t>(shape.size()) - 1, n = shape.back();
        const Tensor order = td::argsort(td::rand(shape, td::kFloat64), last).narrow(last, 0, n / 2).contiguous();
        Pair src = ct::random_pair(order.sizes(), dtype, Layout::Strided, -5, 5);
        const std::string what = describe("scatter", dtype, shape, layout);
        check_equal(x.dev.scatter(last, order.to(ct::device()), src.dev), x.cpu.scatter(last, order, src.cpu), what);
        check_equal(x.dev.scatter(last, order.to(ct::device()), 1), x.cpu.scatter(last, order, 1), what + " value");
        x.dev.scatter_(last, order.to(ct::device()), src.dev);
        x.cpu.scatter_(last, order, src.cpu);
        check_equal(x.dev, x.cpu, what + " in place");
        check_outside_equal(x.dev, x.cpu, what + " in place");
      }
    }
  }
}

TEST_CASE("cross, kron, cov, isin, masked_scatter, index and index_put match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(74);
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    const double tol = rtol_for(dtype) * 40;
    Pair a = ct::random_pair({33, 3}, dtype, Layout::Permuted, -2, 2);
    Pair b = ct::random_pair({33, 3}, dtype, Layout::Strided, -2, 2);
    check_close(td::cross(a.dev, b.dev), td::cross(a.cpu, b.cpu), tol, tol, "cross");
    check_close(td::kron(a.dev, b.dev), td::kron(a.cpu, b.cpu), tol, tol, "kron");
    check_close(td::cov(a.dev.t()), td::cov(a.cpu.t()), tol, tol, "cov");
    const Tensor mask_cpu = a.cpu > 0;
    check_equal(a.dev.masked_scatter(mask_cpu.to(ct::device()), b.dev.reshape({-1})),
                a.cpu.masked_scatter(mask_cpu, b.cpu.reshape({-1})), "masked_scatter");
    const Tensor rows = td::tensor({5, 0, 32, 5}), cols = td::tensor({2, 1, 0, 2});
    check_equal(a.dev.index({rows.to(ct::device()), cols.to(ct::device())}), a.cpu.index({rows, cols}), "index");
    check_close(a.dev.index_put({rows.to(ct::device())}, b.dev.narrow(0, 0, 4), true),
                a.cpu.index_put({rows}, b.cpu.narrow(0, 0, 4), true), tol, tol, "index_put accumulating");
  }
  Pair ints = ct::random_pair({7, 33}, td::kInt64, Layout::Strided, -10, 10);
  const Tensor tests = td::tensor({-3, 0, 4, 9});
  check_equal(td::isin(ints.dev, tests.to(ct::device())), td::isin(ints.cpu, tests), "isin");
}

TEST_CASE("cummax, cummin and logcumsumexp match the CPU along every dim, ties and NaN included", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(75);
  for (DType dtype : kAll) {
    for (const Shape& shape : std::vector<Shape>{{7, 33}, {3, 100003}, {4, 5, 6}, {1}}) {
      // Whole numbers (ties), rounded in the storage so that the device's twin keeps the layout.
      Tensor cpu = ct::random_input(shape, dtype, Layout::Permuted, -5, 5);
      if (td::is_floating(dtype)) {
        whole(cpu).copy_(td::round(whole(cpu)));
        sprinkle(cpu, 0.08, kNaN);
      }
      const Tensor dev = ct::twin(cpu);
      for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
        const std::string what = describe("scan", dtype, shape, Layout::Permuted) + " along " + std::to_string(dim);
        auto [cv, ci] = td::cummax(cpu, dim);
        auto [dv, di] = td::cummax(dev, dim);
        check_equal(dv, cv, what + " cummax");
        check_equal(di, ci, what + " cummax indices");
        auto [cmin_v, cmin_i] = td::cummin(cpu, dim);
        auto [dmin_v, dmin_i] = td::cummin(dev, dim);
        check_equal(dmin_v, cmin_v, what + " cummin");
        check_equal(dmin_i, cmin_i, what + " cummin indices");
        if (td::is_floating(dtype)) {
          const double r = rtol_for(dtype) * 4;
          check_close(td::logcumsumexp(dev, dim), td::logcumsumexp(cpu, dim), r, r, what + " logcumsumexp");
        }
      }
    }
  }
}

TEST_CASE("special functions and zeta match the CPU: awkward values, sizes 1 to 1000003, views, three dtypes",
          "[cuda]") {
  // Both devices compute in double (kernels/special.h); the GPU's exp, log, pow, tan, erfc and lgamma differ
  // from glibc's by an ulp or a few, so results agree to testing::rtol_for's tolerance, absolute as well as
  // relative (values about 1 cross zero: lgamma near 1 and 2, digamma near its roots, ndtri near 1/2). Where
  // a sum cancels (polygamma and zeta at a negative argument, digamma by reflection) the tolerance scales with
  // the largest term, |x - round x|^-(n + 1) for polygamma(n, x).
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(77);
  using T = const Tensor&;
  struct SpecialCase {
    std::string name;
    UnaryFn fn;
    double lo, hi;                // the random values: each function's domain and a little beyond
    std::vector<double> awkward;  // each sprinkled over about 1% of the elements
    double pole_order = 0;        // for x < 0, scale the tolerance by |x - round x|^-pole_order
  };
  const std::vector<SpecialCase> cases = {
      {"lgamma", [](T x) { return td::lgamma(x); }, -6, 12, {0.0, -0.0, -1.0, -2.5, 1e-30, 171.5, kInf, -kInf, kNaN}},
      {"digamma", [](T x) { return td::digamma(x); }, -6, 12, {0.0, -0.0, -3.0, -2.5, 1e-30, kInf, -kInf, kNaN}, 1},
      {"polygamma 1", [](T x) { return td::polygamma(1, x); }, -6, 12, {0.0, -0.0, -2.0, -0.5, kInf, -kInf, kNaN}, 2},
      {"polygamma 3", [](T x) { return td::polygamma(3, x); }, -6, 12, {0.0, -0.0, -2.0, -0.5, kInf, -kInf, kNaN}, 4},
      {"mvlgamma 3", [](T x) { return td::mvlgamma(x, 3); }, 1.05, 20, {kInf}},  // every element above 1
      {"erfcx", [](T x) { return td::special::erfcx(x); }, -26, 40, {-30.0, 1e10, 5e7, 0.0, -0.0, kInf, -kInf, kNaN}},
      {"i0", [](T x) { return td::i0(x); }, -30, 30, {700.0, -720.0, 25.0, 1e-5, 0.0, -0.0, kInf, -kInf, kNaN}},
      {"i0e", [](T x) { return td::special::i0e(x); }, -30, 30, {700.0, -720.0, 25.0, 1e-5, 0.0, -0.0, kInf, kNaN}},
      {"i1", [](T x) { return td::special::i1(x); }, -30, 30, {700.0, -720.0, 25.0, -1e-5, 0.0, -0.0, kInf, kNaN}},
      {"i1e", [](T x) { return td::special::i1e(x); }, -30, 30, {700.0, -720.0, 25.0, -1e-5, 0.0, -0.0, -kInf, kNaN}},
      {"ndtri", [](T x) { return td::special::ndtri(x); }, 0, 1, {0.0, 1.0, 0.5, 1e-30, -0.5, 1.5, kInf, kNaN}},
      {"ndtr", [](T x) { return td::special::ndtr(x); }, -10, 10, {-40.0, 40.0, -0.0, kInf, -kInf, kNaN}},
      {"log_ndtr", [](T x) { return td::special::log_ndtr(x); }, -40, 10, {-1.0, -0.0, 40.0, kInf, -kInf, kNaN}},
      {"entr", [](T x) { return td::special::entr(x); }, 0, 5, {0.0, -0.0, 1.0, -1.0, -1e-30, kInf, kNaN}},
      // kernels/bessel.h: awkward values at each method's ends (1e-5 and 25 for J and Y, 1 for K, +-1 for Ai).
      {"bessel_j0", [](T x) { return td::special::bessel_j0(x); }, -40, 40, {0.0, -0.0, 1e-5, 25.0, 1e10, kInf, kNaN}},
      {"bessel_j1",
       [](T x) { return td::special::bessel_j1(x); },
       -40,
       40,
       {0.0, -0.0, -1e-5, 25.0, -1e10, kInf, kNaN}},
      {"bessel_y0", [](T x) { return td::special::bessel_y0(x); }, 0, 40, {0.0, -1.0, 1e-5, 25.0, 1e10, kInf, kNaN}},
      {"bessel_y1", [](T x) { return td::special::bessel_y1(x); }, 0, 40, {0.0, -1.0, 1e-5, 25.0, 1e10, kInf, kNaN}},
      {"modified_bessel_i0", [](T x) { return td::special::modified_bessel_i0(x); }, -30, 30, {700.0, -0.0, kNaN}},
      {"modified_bessel_i1", [](T x) { return td::special::modified_bessel_i1(x); }, -30, 30, {700.0, -0.0, kNaN}},
      {"modified_bessel_k0",
       [](T x) { return td::special::modified_bessel_k0(x); },
       0,
       30,
       {0.0, 1.0, 720.0, -1.0, kInf, kNaN}},
      {"modified_bessel_k1",
       [](T x) { return td::special::modified_bessel_k1(x); },
       0,
       30,
       {0.0, 1.0, 720.0, -1.0, kInf, kNaN}},
      {"scaled_modified_bessel_k0",
       [](T x) { return td::special::scaled_modified_bessel_k0(x); },
       0,
       30,
       {0.0, 1.0, 1e10, -1.0, kInf, kNaN}},
      {"scaled_modified_bessel_k1",
       [](T x) { return td::special::scaled_modified_bessel_k1(x); },
       0,
       30,
       {0.0, 1.0, 1e10, -1.0, kInf, kNaN}},
      {"spherical_bessel_j0",
       [](T x) { return td::special::spherical_bessel_j0(x); },
       -40,
       40,
       {0.0, -0.0, kInf, kNaN}},
      {"airy_ai", [](T x) { return td::special::airy_ai(x); }, -12, 12, {1.0, -1.0, -0.0, 104.0, kInf, kNaN}},
  };
  const std::vector<Shape> shapes = {{1}, {7}, {3, 11}, {1000003}};
  size_t turn = 0;
  // Small sizes in every layout (a broadcast one too); the long one contiguous or strided in turn.
  auto layouts = [&](const Shape& shape) {
    return is_big(shape) ? std::vector<Layout>{turn++ % 2 ? Layout::Strided : Layout::Contiguous} : ct::all_layouts();
  };
  // |x - round x|^-order where x < 0, on the CPU in float64.
  auto pole_term = [](const Tensor& x, const Tensor& order) {
    const Tensor x64 = x.to(td::kFloat64);
    return td::where(x64 < 0, td::pow(td::abs(x64 - td::round(x64)), -order.to(td::kFloat64)), 0.0);
  };
  for (const SpecialCase& c : cases) {
    for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16}) {
      const double r = rtol_for(dtype);
      for (const Shape& shape : shapes) {
        for (Layout layout : layouts(shape)) {
          Tensor cpu = ct::random_input(shape, dtype, layout, c.lo, c.hi);
          for (double v : c.awkward) {
            if (dtype == td::kFloat16 && std::isfinite(v) && std::abs(v) > 65504) continue;  // past float16's range
            sprinkle(cpu, 0.01, v);
          }
          const Tensor want = c.fn(cpu);
          Tensor scale = ct::abs64(want);
          if (c.pole_order > 0) scale = scale + pole_term(cpu, td::full({}, c.pole_order, td::kFloat64));
          check_close(c.fn(ct::twin(cpu)), want, r, r, describe(c.name, dtype, shape, layout), scale);
        }
      }
    }
  }

  // zeta: exponents in [1.1, 8) against q in [0.01, 10), then whole exponents against q in [-4, 4) (the sum
  // cancels there); x = 1, x < 1, q a non-positive integer, infinities and NaN sprinkled in; the number forms.
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16}) {
    const double r = rtol_for(dtype);
    for (const Shape& shape : shapes) {
      for (Layout layout : layouts(shape)) {
        for (bool integral : {false, true}) {
          Tensor x = ct::random_input(shape, dtype, layout, integral ? 1.5 : 1.1, integral ? 5.5 : 8);
          if (integral) whole(x).copy_(td::round(whole(x)));  // the storage: x may be a broadcast view
          Tensor q = ct::random_input(shape, dtype, layout == Layout::Permuted ? Layout::Strided : layout,
                                      integral ? -4 : 0.01, integral ? 4 : 10);
          for (double v : {1.0, 0.5, kInf, kNaN}) sprinkle(x, 0.01, v);
          for (double v : {0.0, -0.0, -2.0, kInf, -kInf, kNaN}) sprinkle(q, 0.01, v);
          const Tensor want = td::special::zeta(x, q);
          const Tensor scale = ct::abs64(want) + pole_term(q, x);
          const std::string what = describe(integral ? "zeta of whole x" : "zeta", dtype, shape, layout);
          check_close(td::special::zeta(ct::twin(x), ct::twin(q)), want, r, r, what, scale);
        }
      }
      const Tensor q = ct::random_input(shape, dtype, Layout::Contiguous, 0.01, 10);
      check_close(td::special::zeta(ct::twin(q) + 1.5, 2.5), td::special::zeta(q + 1.5, 2.5), r, r,
                  describe("zeta by a number", dtype, shape, Layout::Contiguous));
      check_close(td::special::zeta(3.0, ct::twin(q) - 2), td::special::zeta(3.0, q - 2), r, r,
                  describe("zeta of a number", dtype, shape, Layout::Contiguous),
                  ct::abs64(td::special::zeta(3.0, q - 2)) + pole_term(q - 2, td::full({}, 3.0, td::kFloat64)));
    }
  }
}

TEST_CASE("igamma and igammac match the CPU: both tails, a from 1e-6 to 1e4, edges, views, three dtypes",
          "[cuda]") {
  // Both compute in double by the same series and continued fraction; the GPU's exp, log, lgamma and
  // expm1 differ from glibc's by an ulp or a few, which the factor x^a e^-x / Gamma(a + 1) carries
  // into its exponent's size: |a log x| + x + |lgamma(a + 1)| below a = 10, |a log(x/a) + a - x|
  // from there on (kernels/special.h). In float64 the relative tolerance is scaled by that size;
  // rounded to float32 or float16 the two agree to the dtype's tolerance. The absolute tolerance is
  // about the dtype's smallest subnormal, so that the tails (values down to 1e-300) are compared too.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(78);
  const std::vector<Shape> shapes = {{1}, {7}, {3, 11}, {1000003}};
  size_t turn = 0;
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16}) {
    const double r = rtol_for(dtype);
    for (const Shape& shape : shapes) {
      const std::vector<Layout> layouts =
          is_big(shape) ? std::vector<Layout>{turn++ % 2 ? Layout::Strided : Layout::Contiguous} : ct::all_layouts();
      for (Layout layout : layouts) {
        // a = 10^u for u in [-6, 4) (float16: [-2, 2)) and x = a v for v in [0, 2): both tails and x near a.
        // Through the storages (a view may be broadcast); the two share a layout, so they pair up.
        const bool half = dtype == td::kFloat16;
        Tensor a = ct::random_input(shape, dtype, layout, half ? -2 : -6, half ? 2 : 4);
        Tensor x = ct::random_input(shape, dtype, layout, 0, 2);
        whole(a).copy_(td::pow(10.0, whole(a).to(td::kFloat64)));
        whole(x).copy_(whole(x).to(td::kFloat64) * whole(a).to(td::kFloat64));
        for (double v : {0.0, -0.0, -1.0, kInf, kNaN}) sprinkle(a, 0.01, v);
        for (double v : {0.0, -1.0, 1e-30, kInf, kNaN}) sprinkle(x, 0.01, v);
        const Tensor a64 = ct::abs64(a), x64 = ct::abs64(x);
        const Tensor small_a = 1 + td::abs(a64 * td::log(x64)) + x64 + td::abs(td::lgamma(a64 + 1));
        const Tensor large_a = 1 + td::abs(a64 * td::log(x64 / a64) + a64 - x64);
        const Tensor size = dtype == td::kFloat64 ? td::where(a64 < 10, small_a, large_a) : td::ones_like(a64);
        const Tensor finite_size = td::where(td::isfinite(size), size, 1.0);
        const double tiny = dtype == td::kFloat64 ? 1e-300 : (dtype == td::kFloat32 ? 1e-44 : 1.2e-7);
        for (bool upper : {false, true}) {
          const Tensor want = upper ? td::igammac(a, x) : td::igamma(a, x);
          const Tensor got = upper ? td::igammac(ct::twin(a), ct::twin(x)) : td::igamma(ct::twin(a), ct::twin(x));
          check_close(got, want, r, tiny, describe(upper ? "igammac" : "igamma", dtype, shape, layout),
                      ct::abs64(want) * finite_size);
        }
      }
    }
  }
}

TEST_CASE("The orthogonal polynomials match the CPU: degrees 0 to 80, edges, views, three dtypes", "[cuda]") {
  // Both run the same recurrences in double (kernels/polynomials.h), Chebyshev's closed forms from degree
  // 64; the GPU contracts products into fused multiply-adds and its cos, acos and cosh differ by an ulp or
  // so. Either's rounding is within about n ulps of the largest |P_k(x)|, k <= n, on the way: the
  // tolerance's scale is (n + 1) times that, from the recurrence run here on the CPU in float64.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(79);
  using T = const Tensor&;
  using PolyFn = std::function<Tensor(T, T)>;
  struct Poly {
    std::string name;
    PolyFn fn;
    bool shifted;
    char family;                         // 'c' Chebyshev, 'h' Hermite H, 'e' Hermite He, 'l' Laguerre, 'p' Legendre
    double first_slope, first_constant;  // P_1 = first_slope x + first_constant
  };
  namespace sp = td::special;
  const std::vector<Poly> polys = {
      {"chebyshev_polynomial_t", [](T x, T n) { return sp::chebyshev_polynomial_t(x, n); }, false, 'c', 1, 0},
      {"chebyshev_polynomial_u", [](T x, T n) { return sp::chebyshev_polynomial_u(x, n); }, false, 'c', 2, 0},
      {"chebyshev_polynomial_v", [](T x, T n) { return sp::chebyshev_polynomial_v(x, n); }, false, 'c', 2, -1},
      {"chebyshev_polynomial_w", [](T x, T n) { return sp::chebyshev_polynomial_w(x, n); }, false, 'c', 2, 1},
      {"shifted_chebyshev_polynomial_t", [](T x, T n) { return sp::shifted_chebyshev_polynomial_t(x, n); }, true, 'c',
       1, 0},
      {"shifted_chebyshev_polynomial_u", [](T x, T n) { return sp::shifted_chebyshev_polynomial_u(x, n); }, true, 'c',
       2, 0},
      {"shifted_chebyshev_polynomial_v", [](T x, T n) { return sp::shifted_chebyshev_polynomial_v(x, n); }, true, 'c',
       2, -1},
      {"shifted_chebyshev_polynomial_w", [](T x, T n) { return sp::shifted_chebyshev_polynomial_w(x, n); }, true, 'c',
       2, 1},
      {"hermite_polynomial_h", [](T x, T n) { return sp::hermite_polynomial_h(x, n); }, false, 'h', 2, 0},
      {"hermite_polynomial_he", [](T x, T n) { return sp::hermite_polynomial_he(x, n); }, false, 'e', 1, 0},
      {"laguerre_polynomial_l", [](T x, T n) { return sp::laguerre_polynomial_l(x, n); }, false, 'l', -1, 1},
      {"legendre_polynomial_p", [](T x, T n) { return sp::legendre_polynomial_p(x, n); }, false, 'p', 1, 0},
  };
  constexpr int kTop = 80;
  // (n + 1) max_{k <= n} |P_k(x)| on the CPU in float64, for whole degrees up to kTop (others: 1).
  auto scale_of = [&](const Poly& p, const Tensor& x, const Tensor& n) {
    const Tensor x64 = x.to(td::kFloat64);
    Tensor at = p.shifted ? x64 * 2 - 1 : x64;
    at = td::where(td::isfinite(at), at, 0.0);
    const Tensor n64 = n.to(td::kFloat64);
    const Tensor degree = td::trunc(td::where(td::isfinite(n64), n64, 0.0));
    Tensor previous = td::ones_like(at), current = at * p.first_slope + p.first_constant;
    Tensor largest = td::where(degree >= 1, td::abs(current).clamp_min(1.0), 1.0);
    for (int k = 1; k < kTop; ++k) {
      Tensor next;
      const double kd = k;
      switch (p.family) {
        case 'c': next = at * 2 * current - previous; break;
        case 'h': next = at * 2 * current - previous * (2 * kd); break;
        case 'e': next = at * current - previous * kd; break;
        case 'l': next = ((2 * kd + 1 - at) * current - previous * kd) / (kd + 1); break;
        default: next = (at * (2 * kd + 1) * current - previous * kd) / (kd + 1); break;
      }
      previous = current;
      current = next;
      largest = td::where(degree >= k + 1, td::maximum(largest, td::abs(current)), largest);
    }
    return largest * (td::clamp(degree, 0, kTop) + 1);
  };
  const std::vector<Shape> shapes = {{1}, {7}, {3, 11}, {1000003}};
  size_t turn = 0;
  for (const Poly& p : polys) {
    for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16}) {
      const double r = rtol_for(dtype);
      for (const Shape& shape : shapes) {
        const std::vector<Layout> layouts =
            is_big(shape) ? std::vector<Layout>{turn++ % 2 ? Layout::Strided : Layout::Contiguous} : ct::all_layouts();
        for (Layout layout : layouts) {
          Tensor x = ct::random_input(shape, dtype, layout, p.shifted ? -0.1 : -1.2, p.shifted ? 1.1 : 1.2);
          Tensor n = ct::random_input(shape, dtype, layout, 0, kTop + 0.99);
          whole(n).copy_(td::trunc(whole(n).to(td::kFloat64)));
          for (double v : {1.0, -1.0, 0.0, kInf, -kInf, kNaN}) sprinkle(x, 0.01, v);
          for (double v : {-1.0, 2.7, 0.0, 64.0, kNaN}) sprinkle(n, 0.01, v);
          const Tensor want = p.fn(x, n);
          check_close(p.fn(ct::twin(x), ct::twin(n)), want, r, r, describe(p.name, dtype, shape, layout),
                      td::maximum(ct::abs64(want), scale_of(p, x, n)));
        }
      }
    }
  }
}

TEST_CASE("unfold's windows and their gradients match the CPU: overlapping, apart, views", "[cuda]") {
  // A view on either device; its contiguous copy runs the strided copy kernel, its gradient index_add.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  tt::reseed(82);
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
      Pair x = ct::random_pair({5, 33}, dtype, layout);
      for (const auto& [dim, size, step] :
           std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 4, 1}, {1, 3, 7}, {0, 2, 1}}) {
        const std::string what = describe("unfold", dtype, {5, 33}, layout) + " " + std::to_string(size) + "/" +
                                 std::to_string(step);
        check_equal(x.dev.unfold(dim, size, step).contiguous(), x.cpu.unfold(dim, size, step), what);
        const Tensor leaf_dev = x.dev.detach().requires_grad_(), leaf_cpu = x.cpu.detach().requires_grad_();
        const Tensor g = td::testing::random_tensor(x.cpu.unfold(dim, size, step).sizes(), dtype);
        const Tensor grad_dev =
            td::autograd::grad({leaf_dev.unfold(dim, size, step)}, {leaf_dev}, {g.to(ct::device())})[0];
        const Tensor grad_cpu = td::autograd::grad({leaf_cpu.unfold(dim, size, step)}, {leaf_cpu}, {g})[0];
        check_close(grad_dev, grad_cpu, rtol_for(dtype), rtol_for(dtype), what + " gradient");
      }
    }
  }
}

TEST_CASE("svd_lowrank and pca_lowrank on the GPU: exact on low-rank batches, as on the CPU", "[cuda]") {
  // Composed of matmul, cuSOLVER's QR and SVD: the product U diag(S) V^T equals the matrix to the dtype's
  // rounding, and S the CPU's singular values.
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;  // an element cuSOLVER leaves unwritten reads back as NaN
  tt::reseed(80);
  const Tensor a = td::matmul(td::randn({2, 30, 3}, td::kFloat64), td::randn({2, 3, 20}, td::kFloat64));
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    const double r = dtype == td::kFloat64 ? 1e-11 : 1e-4;
    const Tensor dev = ct::twin(a.to(dtype));
    auto [u, s, v] = td::svd_lowrank(dev, 4, 2);
    REQUIRE(u.device() == dev.device());
    CHECK(s.dtype() == dtype);
    const Tensor rebuilt = td::matmul(u * s.unsqueeze(-2), v.transpose(-2, -1)).to(td::kFloat64);  // on the GPU
    const double scale = td::abs(a).max().item<double>();
    check_close(rebuilt, a, 0, r * scale, describe("svd_lowrank", dtype, a.sizes(), Layout::Contiguous));
    const Tensor centred = a - a.mean({-2}, true);
    auto [pu, ps, pv] = td::pca_lowrank(dev, 3);
    check_close(ps.to(td::kFloat64), td::linalg::svdvals(centred).narrow(-1, 0, 3), r, r * scale,
                describe("pca_lowrank", dtype, a.sizes(), Layout::Contiguous));
  }
}

// ---------------------------------------------------------------------------------------------
// linalg: cuSOLVER against LAPACK

namespace {

namespace la = td::linalg;

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

// float64 values as `dtype` on the CPU, stored column by column when `transposed`, and their twin.
Pair as_pair(const Tensor& values64, DType dtype, bool transposed) {
  Tensor cpu = values64.to(dtype).contiguous();
  if (transposed) cpu = mT(mT(cpu).contiguous());
  return {cpu, ct::twin(cpu)};
}

Shape with_matrix(Shape batch, int64_t m, int64_t n) {
  batch.push_back(m);
  batch.push_back(n);
  return batch;
}

// Random [*, m, n] matrices near the identity: entries in [-1, 1] over max(m, n) + 1, plus I.
// Their singular values lie within 0.5 of 1, so every factorization is well-conditioned.
Tensor near_identity(const Shape& batch, int64_t m, int64_t n) {
  return tt::random_tensor(with_matrix(batch, m, n), td::kFloat64, Layout::Contiguous, -1, 1) /
             static_cast<double>(std::max(m, n) + 1) +
         td::eye(m, n, td::kFloat64);
}

// R's diagonal made positive (Q's columns and R's rows flipped with it): unique for full rank.
std::pair<Tensor, Tensor> normalize_qr(const Tensor& q, const Tensor& r) {
  const Tensor d = td::sign(td::diagonal(r, 0, -2, -1));
  return {q * d.unsqueeze(-2), r * d.unsqueeze(-1)};
}

// Q^T Q = I for each matrix of q (on the device).
void check_orthonormal(const Tensor& q, double tol, const std::string& what) {
  const Tensor gram = td::matmul(mT(q), q);
  check_close(gram, td::eye(q.size(-1), q.size(-1), q.dtype()).expand(gram.sizes()).contiguous(), tol, tol,
              what + ": orthonormal columns");
}

}  // namespace

TEST_CASE("linalg on the device matches the CPU: sizes 1, 7 and 33, batches, transposed inputs, both dtypes",
          "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(76);
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    // Square: the solvers, determinants, cholesky and eigh.
    for (int64_t n : {1, 7, 33}) {
      // float32 against float64 stays within a hundredth of this (PyTorch on the CPU, 20 draws).
      const double tol = rtol_for(dtype) * 2 * static_cast<double>(n + 1);
      for (const Shape& batch : std::vector<Shape>{{}, {3}}) {
        for (bool transposed : {false, true}) {
          std::ostringstream name;
          name << td::dtype_name(dtype) << " " << td::shape_str(with_matrix(batch, n, n))
               << (transposed ? " transposed" : "");
          const std::string what = name.str();
          INFO(what);
          const Tensor a64 = near_identity(batch, n, n);
          const Pair a = as_pair(a64, dtype, transposed);
          const Pair b = as_pair(tt::random_tensor(with_matrix(batch, n, 2), td::kFloat64, Layout::Contiguous, -1, 1),
                                 dtype, false);
          check_close(la::inv(a.dev), la::inv(a.cpu), tol, tol, what + " inv");
          check_close(la::solve(a.dev, b.dev), la::solve(a.cpu, b.cpu), tol, tol, what + " solve");
          check_close(la::solve(a.dev, b.dev.select(-1, 0)), la::solve(a.cpu, b.cpu.select(-1, 0)), tol, tol,
                      what + " solve for vectors");
          check_close(la::solve(a.dev, mT(b.dev), false), la::solve(a.cpu, mT(b.cpu), false), tol, tol,
                      what + " solve, left=false");
          check_close(la::det(a.dev), la::det(a.cpu), tol, tol, what + " det");
          auto [sign_dev, log_dev] = la::slogdet(a.dev);
          auto [sign_cpu, log_cpu] = la::slogdet(a.cpu);
          check_equal(sign_dev, sign_cpu, what + " slogdet's sign");
          check_close(log_dev, log_cpu, tol, tol, what + " slogdet's logabsdet");
          for (bool upper : {false, true}) {
            const std::string side = upper ? " upper" : " lower";
            check_close(la::solve_triangular(a.dev, b.dev, upper), la::solve_triangular(a.cpu, b.cpu, upper), tol,
                        tol, what + " solve_triangular" + side);
            check_close(la::solve_triangular(a.dev, mT(b.dev), upper, false, true),
                        la::solve_triangular(a.cpu, mT(b.cpu), upper, false, true), tol, tol,
                        what + " solve_triangular" + side + ", right, unitriangular");
          }
          const Pair spd = as_pair(td::matmul(a64, mT(a64)), dtype, transposed);
          check_close(la::cholesky(spd.dev), la::cholesky(spd.cpu), tol, tol, what + " cholesky");
          check_close(la::cholesky(spd.dev, true), la::cholesky(spd.cpu, true), tol, tol, what + " cholesky upper");
          // eigh of a symmetric matrix with spread eigenvalues: the values, and the vectors through
          // the reconstruction (their signs are free).
          const Tensor r64 = tt::random_tensor(with_matrix(batch, n, n), td::kFloat64, Layout::Contiguous, -1, 1);
          const Pair sym = as_pair((r64 + mT(r64)) / 2, dtype, transposed);
          auto [l_dev, v_dev] = la::eigh(sym.dev);
          auto [l_cpu, v_cpu] = la::eigh(sym.cpu);
          check_close(l_dev, l_cpu, tol, tol, what + " eigh's eigenvalues");
          CHECK(v_dev.sizes() == v_cpu.sizes());
          check_close(td::matmul(v_dev * l_dev.unsqueeze(-2), mT(v_dev)), sym.cpu, tol, tol,
                      what + " eigh's V diag(L) V^T");
          check_orthonormal(v_dev, tol, what + " eigh's vectors");
          check_close(la::eigvalsh(sym.dev, "U"), la::eigvalsh(sym.cpu, "U"), tol, tol, what + " eigvalsh U");
        }
      }
    }
    // Any shape: qr, svd, pinv and lstsq.
    for (const auto& [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 1}, {33, 7}, {7, 33}, {1, 7}}) {
      const double tol = rtol_for(dtype) * 2 * static_cast<double>(std::max(m, n) + 1);
      for (const Shape& batch : std::vector<Shape>{{}, {2}}) {
        for (bool transposed : {false, true}) {
          std::ostringstream name;
          name << td::dtype_name(dtype) << " " << td::shape_str(with_matrix(batch, m, n))
               << (transposed ? " transposed" : "");
          const std::string what = name.str();
          INFO(what);
          const Pair x = as_pair(near_identity(batch, m, n), dtype, transposed);
          auto [q_dev, r_dev] = la::qr(x.dev);
          auto [q_cpu, r_cpu] = la::qr(x.cpu);
          check_close(td::matmul(q_dev, r_dev), x.cpu, tol, tol, what + " qr's Q R");
          check_orthonormal(q_dev, tol, what + " qr's Q");
          auto [qn_dev, rn_dev] = normalize_qr(q_dev, r_dev);
          auto [qn_cpu, rn_cpu] = normalize_qr(q_cpu, r_cpu);
          check_close(qn_dev, qn_cpu, tol, tol, what + " qr's Q, R's diagonal made positive");
          check_close(rn_dev, rn_cpu, tol, tol, what + " qr's R, its diagonal made positive");
          auto [qc_dev, rc_dev] = la::qr(x.dev, "complete");
          CHECK(qc_dev.sizes() == with_matrix(batch, m, m));
          check_close(td::matmul(qc_dev, rc_dev), x.cpu, tol, tol, what + " complete qr's Q R");
          check_orthonormal(qc_dev, tol, what + " complete qr's Q");
          check_close(td::abs(std::get<1>(la::qr(x.dev, "r"))), td::abs(r_cpu), tol, tol, what + " qr's mode r");

          // svd of a random matrix (singular values spread, the smallest perhaps small).
          const Pair g = as_pair(tt::random_tensor(with_matrix(batch, m, n), td::kFloat64, Layout::Contiguous, -1, 1),
                                 dtype, transposed);
          auto [u_dev, s_dev, vh_dev] = la::svd(g.dev, false);
          auto [u_cpu, s_cpu, vh_cpu] = la::svd(g.cpu, false);
          check_close(s_dev, s_cpu, tol, tol, what + " svd's S");
          CHECK(u_dev.sizes() == u_cpu.sizes());
          CHECK(vh_dev.sizes() == vh_cpu.sizes());
          check_close(td::matmul(u_dev * s_dev.unsqueeze(-2), vh_dev), g.cpu, tol, tol, what + " svd's U diag(S) Vh");
          check_orthonormal(u_dev, tol, what + " svd's U");
          check_orthonormal(mT(vh_dev), tol, what + " svd's V");
          auto [uf_dev, sf_dev, vhf_dev] = la::svd(g.dev);
          CHECK(uf_dev.sizes() == with_matrix(batch, m, m));
          CHECK(vhf_dev.sizes() == with_matrix(batch, n, n));
          check_close(sf_dev, s_cpu, tol, tol, what + " full svd's S");
          check_orthonormal(uf_dev, tol, what + " full svd's U");
          check_orthonormal(mT(vhf_dev), tol, what + " full svd's V");
          check_close(la::svdvals(g.dev), s_cpu, tol, tol, what + " svdvals");

          check_close(la::pinv(x.dev), la::pinv(x.cpu), tol, tol, what + " pinv");
          const Pair rhs = as_pair(tt::random_tensor(with_matrix(batch, m, 2), td::kFloat64, Layout::Contiguous, -1, 1),
                                   dtype, false);
          // The GPU's default driver is gels; a dry run's CPU device defaults to gelsy, so it is named there.
          const std::optional<std::string> driver = ct::dry_run() ? std::optional<std::string>("gels") : std::nullopt;
          const la::LstsqResult sol_dev = la::lstsq(x.dev, rhs.dev, std::nullopt, driver),
                                sol_cpu = la::lstsq(x.cpu, rhs.cpu, std::nullopt, "gels");
          check_close(sol_dev.solution, sol_cpu.solution, tol, tol, what + " lstsq's solution");
          // geqrf's factors (cuSOLVER's and LAPACK's Householder vectors are the same), the product
          // of the reflectors and ormqr's Q^T B without forming Q.
          auto [f_dev, tau_dev] = td::geqrf(x.dev);
          auto [f_cpu, tau_cpu] = td::geqrf(x.cpu);
          check_close(f_dev, f_cpu, tol, tol, what + " geqrf's factors");
          check_close(tau_dev, tau_cpu, tol, tol, what + " geqrf's tau");
          if (m >= n) {
            check_close(la::householder_product(f_dev, tau_dev), la::householder_product(f_cpu, tau_cpu), tol, tol,
                        what + " householder_product");
          }
          check_close(td::ormqr(f_dev, tau_dev, rhs.dev, true, true), td::ormqr(f_cpu, tau_cpu, rhs.cpu, true, true),
                      tol, tol, what + " ormqr Q^T B");
          if (m > n) {
            check_close(sol_dev.residuals, sol_cpu.residuals, tol, tol, what + " lstsq's residuals");
          } else {
            CHECK(sol_dev.residuals.numel() == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("linalg on the device: singular and non-positive-definite inputs are errors naming the batch element",
          "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    INFO(td::dtype_name(dtype));
    const Tensor z_cpu =
        td::stack({td::eye(3, 3, td::kFloat64), td::diag(td::tensor({1.0, 2.0, 0.0}, td::kFloat64))}).to(dtype);
    const Tensor z = z_cpu.to(ct::device());
    const Tensor not_pd = td::tensor({{1.0, 2.0}, {2.0, 1.0}}, td::kFloat64).to(dtype).to(ct::device());
    const ct::Unchanged z_before(z), not_pd_before(not_pd);
    tt::check_error([&] { la::inv(z); }, {"linalg.inv", "Batch element 1", "singular"});
    tt::check_error([&] { la::solve(z, td::ones({3, 2}, on_device(dtype))); },
                    {"linalg.solve", "Batch element 1", "singular"});
    tt::check_error([&] { la::cholesky(not_pd); }, {"linalg.cholesky", "positive-definite", "order 2"});
    tt::check_error([&] { la::cholesky(td::stack({td::eye(2, 2, on_device(dtype)), not_pd})); },
                    {"linalg.cholesky", "Batch element 1", "positive-definite"});
    z_before.check();
    not_pd_before.check();
    // det and slogdet of a singular matrix are no error: 0, and sign 0 with log|det| -inf.
    check_close(la::det(z), la::det(z_cpu), 0, 0, "det of a singular matrix");
    check_close(std::get<1>(la::slogdet(z)), std::get<1>(la::slogdet(z_cpu)), 0, 0, "slogdet of a singular matrix");
  }
  const std::string host = td::Device(td::kCPU).str(), dev = ct::device().str();
  tt::check_error([&] { la::solve(td::eye(3, 3, td::kFloat64), td::ones({3, 2}, on_device(td::kFloat64))); },
                  {"linalg.solve", host, dev});
}

TEST_CASE("scatter_reduce and index_reduce match the CPU: every reduction, collisions, every dtype", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(78);
  const std::vector<std::string> reductions = {"sum", "prod", "mean", "amax", "amin"};
  for (DType dtype : kAll) {
    // Few collisions in a wide self, and many (about 300 a place, products near 1) in a narrow one.
    for (const auto& [self_shape, index_shape] : std::vector<std::pair<Shape, Shape>>{
             {{7, 40}, {7, 33}}, {{3, 1000}, {3, 1000003 / 3}}}) {
      const bool many = index_shape[1] > self_shape[1];
      if (many && !td::is_floating(dtype) && dtype != td::kInt64) continue;
      // 16-bit atomics round every partial sum to the dtype: about 300 values near 1 then add up to
      // a total that the order of the additions moves by units. Integers (self in [-5, 5], about 333
      // sources of +-1 a place) keep every partial sum exact, whatever the order: its magnitude
      // stays under 5 + the number of +1s, about 167, below bfloat16's 256 (products stay +-5).
      // mean's count of 333 saturates at 256 in bfloat16, on both devices alike.
      const bool integer_valued = many && td::element_size(dtype) == 2;
      for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
        Pair x = ct::random_pair(self_shape, dtype, layout, -5, 5);
        Pair src = many ? ct::random_pair(index_shape, dtype, Layout::Strided, 0.99, 1.01)
                        : ct::random_pair(index_shape, dtype, Layout::Strided, -5, 5);
        if (integer_valued) {
          whole(x.cpu).copy_(td::round(whole(x.cpu)));
          whole(src.cpu).copy_(td::where(td::rand(whole(src.cpu).sizes()) < 0.5, -1.0, 1.0));
          x.dev = ct::twin(x.cpu);
          src.dev = ct::twin(src.cpu);
        }
        const Tensor index = td::randint(self_shape[1], index_shape);
        for (const std::string& reduce : reductions) {
          if (reduce == "mean" && dtype == td::kBool) continue;
          for (bool include_self : {true, false}) {
            const std::string what =
                describe("scatter_reduce " + reduce + (include_self ? "" : " without self"), dtype, index_shape, layout);
            const Tensor dev = x.dev.scatter_reduce(1, index.to(ct::device()), src.dev, reduce, include_self);
            const Tensor cpu = x.cpu.scatter_reduce(1, index, src.cpu, reduce, include_self);
            // Sums and products of floats add up in another order on the GPU (atomics).
            const bool reordered = td::is_floating(dtype) && (reduce == "sum" || reduce == "mean" || reduce == "prod");
            if (integer_valued && reduce == "mean") {
              check_close(dev, cpu, rtol_for(dtype), 0, what);  // an exact sum, divided once by the count
            } else if (reordered && !integer_valued) {
              const double tol = rtol_for(dtype) * (many ? 64 : 8);
              check_close(dev, cpu, tol, tol, what);
            } else {
              check_equal(dev, cpu, what);
            }
          }
        }
      }
    }
  }
  // NaN wins amax and amin on the GPU too.
  const Tensor nan_src = td::tensor({1.0, std::nan(""), -1.0, 2.0}, td::kFloat32);
  const Tensor at = td::tensor({0, 0, 1, 1});
  check_equal(td::zeros({2}).to(ct::device()).scatter_reduce(0, at.to(ct::device()), nan_src.to(ct::device()), "amax"),
              td::zeros({2}).scatter_reduce(0, at, nan_src, "amax"), "amax with NaN");
  // index_reduce: slices of source along dim 1.
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    const Pair x = ct::random_pair({4, 6, 5}, dtype, Layout::Permuted, 0.5, 2);
    const Pair source = ct::random_pair({4, 9, 5}, dtype, Layout::Contiguous, 0.5, 2);
    const Tensor index = td::randint(6, {9});
    for (const std::string reduce : {"prod", "mean", "amax", "amin"}) {
      const std::string what = "index_reduce " + reduce + " " + td::dtype_name(dtype);
      check_close(x.dev.index_reduce(1, index.to(ct::device()), source.dev, reduce, false),
                  x.cpu.index_reduce(1, index, source.cpu, reduce, false), rtol_for(dtype) * 8, 0, what);
    }
  }
}

TEST_CASE("lu_factor, lu, lu_solve and matrix_exp on the device match the CPU: square, wide, tall, batches",
          "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(79);
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    for (const auto& [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 7}, {33, 33}, {7, 12}, {12, 7}}) {
      const double tol = rtol_for(dtype) * 2 * static_cast<double>(std::max(m, n) + 1);
      for (const Shape& batch : std::vector<Shape>{{}, {3}}) {
        for (bool transposed : {false, true}) {
          std::ostringstream name;
          name << td::dtype_name(dtype) << " " << td::shape_str(with_matrix(batch, m, n))
               << (transposed ? " transposed" : "");
          const std::string what = name.str();
          INFO(what);
          const Pair a = as_pair(tt::random_tensor(with_matrix(batch, m, n), td::kFloat64, Layout::Contiguous, -1, 1),
                                 dtype, transposed);
          auto [lu_dev, pivots_dev] = la::lu_factor(a.dev);
          auto [lu_cpu, pivots_cpu] = la::lu_factor(a.cpu);
          // Random entries have no ties in magnitude: both choose the same pivots.
          check_equal(pivots_dev, pivots_cpu, what + " pivots");
          check_close(lu_dev, lu_cpu, tol, tol, what + " LU");
          auto [p_dev, l_dev, u_dev] = la::lu(a.dev);
          check_close(td::matmul(p_dev, td::matmul(l_dev, u_dev)), a.cpu, tol, tol, what + " P L U");
          if (m == n) {
            const Pair b = as_pair(tt::random_tensor(with_matrix(batch, n, 2), td::kFloat64, Layout::Contiguous, -1, 1),
                                   dtype, false);
            check_close(la::lu_solve(lu_dev, pivots_dev, b.dev), la::lu_solve(lu_cpu, pivots_cpu, b.cpu), tol * 4,
                        tol * 4, what + " lu_solve");
            check_close(la::lu_solve(lu_dev, pivots_dev, mT(b.dev), false, true),
                        la::lu_solve(lu_cpu, pivots_cpu, mT(b.cpu), false, true), tol * 4, tol * 4,
                        what + " lu_solve, right, adjoint");
            const Pair e = as_pair(near_identity(batch, n, n) * 3, dtype, transposed);
            check_close(la::matrix_exp(e.dev), la::matrix_exp(e.cpu), tol * 4, tol * 4, what + " matrix_exp");
          }
        }
      }
    }
  }
}

TEST_CASE("quantile, histc, gcd, lcm, nextafter, diag_embed and the windows match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(80);
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
      Pair x = ct::random_pair({7, 33}, dtype, layout, -3, 3);
      const std::string what = describe("quantile", dtype, {7, 33}, layout);
      const Tensor qs = td::tensor({0.0, 0.3, 0.5, 1.0}, dtype);
      for (const std::string interpolation : {"linear", "lower", "higher", "midpoint", "nearest"}) {
        check_close(td::quantile(x.dev, qs.to(ct::device()), 1, false, interpolation),
                    td::quantile(x.cpu, qs, 1, false, interpolation), rtol_for(dtype), 0, what + " " + interpolation);
      }
      // A NaN in some lines: nanquantile leaves it out.
      x.cpu.select(0, 2).select(0, 5).fill_(std::nan(""));
      x.dev.select(0, 2).select(0, 5).fill_(std::nan(""));
      check_close(td::nanquantile(x.dev, qs.to(ct::device()), 1), td::nanquantile(x.cpu, qs, 1), rtol_for(dtype), 0,
                  what + " nanquantile");
      check_equal(td::histc(x.dev.nan_to_num(0.0), 10, -2, 2), td::histc(x.cpu.nan_to_num(0.0), 10, -2, 2),
                  what + " histc");
      check_close(td::diag_embed(x.dev, 2), td::diag_embed(x.cpu, 2), 0, 0, what + " diag_embed");
      check_close(td::cumulative_trapezoid(x.dev.nan_to_num(0.0)), td::cumulative_trapezoid(x.cpu.nan_to_num(0.0)),
                  rtol_for(dtype) * 8, rtol_for(dtype) * 8, what + " cumulative_trapezoid");
    }
    const td::TensorOptions on_device = td::TensorOptions(dtype).device(ct::device());
    check_close(td::kaiser_window(33, true, 8.0, on_device), td::kaiser_window(33, true, 8.0, dtype), rtol_for(dtype),
                rtol_for(dtype), "kaiser_window");
    check_close(td::hann_window(33, false, on_device), td::hann_window(33, false, dtype), rtol_for(dtype),
                rtol_for(dtype), "hann_window");
    check_close(td::logspace(-3, 3, 33, 10.0, on_device), td::logspace(-3, 3, 33, 10.0, dtype), rtol_for(dtype), 0,
                "logspace");
    const Tensor a = td::rand({1000003}, dtype), b = td::rand({1000003}, dtype) - 0.5;
    check_equal(td::nextafter(a.to(ct::device()), b.to(ct::device())), td::nextafter(a, b), "nextafter");
  }
  for (DType dtype : {td::kInt64, td::kInt32, td::kUInt8}) {
    const Tensor a = td::randint(0, 200, {1000003}).to(dtype), b = td::randint(0, 200, {1000003}).to(dtype);
    check_equal(td::gcd(a.to(ct::device()), b.to(ct::device())), td::gcd(a, b), std::string("gcd ") + td::dtype_name(dtype));
    check_equal(td::lcm(a.to(ct::device()), b.to(ct::device())), td::lcm(a, b), std::string("lcm ") + td::dtype_name(dtype));
  }
}

TEST_CASE("frexp, put, unravel_index, histogram and histogramdd match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  tt::reseed(81);
  for (DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    for (Layout layout : {Layout::Contiguous, Layout::Permuted}) {
      Pair x = ct::random_pair({7, 33}, dtype, layout, -300, 300);
      const std::string what = describe("frexp", dtype, {7, 33}, layout);
      const auto [m_dev, e_dev] = td::frexp(x.dev);
      const auto [m_cpu, e_cpu] = td::frexp(x.cpu);
      check_equal(m_dev, m_cpu, what + " mantissa");
      check_equal(e_dev, e_cpu, what + " exponent");
      const Tensor index = td::randint(-231, 231, {50});
      const Tensor source = td::testing::random_tensor({50}, dtype);
      for (bool accumulate : {false, true}) {
        Tensor written_dev = td::testing::same_layout_on(x.cpu, ct::device()), written_cpu = x.cpu.clone();
        // Distinct positions without accumulate: of two writes to one place, either may stay.
        const Tensor at = accumulate ? index : td::arange(0, 231, 5).narrow(0, 0, 46).to(td::kInt64);
        const Tensor src = source.narrow(0, 0, at.numel());
        written_dev.put_(at.to(ct::device()), src.to(ct::device()), accumulate);
        written_cpu.put_(at, src, accumulate);
        check_close(written_dev, written_cpu, rtol_for(dtype) * 4, rtol_for(dtype) * 4,
                    what + (accumulate ? " put_ accumulate" : " put_"));
      }
      if (dtype == td::kFloat32 || dtype == td::kFloat64) {
        const auto [h_dev, edges_dev] = td::histogram(x.dev, 13, std::pair{-250.0, 250.0});
        const auto [h_cpu, edges_cpu] = td::histogram(x.cpu, 13, std::pair{-250.0, 250.0});
        check_equal(h_dev, h_cpu, what + " histogram");
        check_equal(edges_dev, edges_cpu, what + " histogram edges");
        // x's 33 columns as 11 rows of 3 dimensions (7 x 11 of them), each its own bins and range.
        const auto [hd_dev, dd_edges_dev] = td::histogramdd(x.dev.reshape({-1, 3}), {4, 5, 3});
        const auto [hd_cpu, dd_edges_cpu] = td::histogramdd(x.cpu.reshape({-1, 3}), {4, 5, 3});
        check_equal(hd_dev, hd_cpu, what + " histogramdd");
        for (size_t d = 0; d < 3; ++d) check_equal(dd_edges_dev[d], dd_edges_cpu[d], what + " histogramdd edges");
        // Given edges, weights and density: sums of weights in another order, so close rather than equal.
        const Tensor weight = td::testing::random_tensor({77}, dtype);
        const std::vector<Tensor> given = {td::tensor({-300.0, -20.0, 0.0, 250.0}).to(dtype),
                                           td::tensor({-100.0, 100.0}).to(dtype),
                                           td::tensor({-300.0, 0.0, 1.0, 300.0}).to(dtype)};
        std::vector<Tensor> given_dev;
        for (const Tensor& e : given) given_dev.push_back(e.to(ct::device()));
        const auto [hw_dev, hw_edges_dev] =
            td::histogramdd(x.dev.reshape({-1, 3}), given_dev, weight.to(ct::device()), true);
        const auto [hw_cpu, hw_edges_cpu] = td::histogramdd(x.cpu.reshape({-1, 3}), given, weight, true);
        check_close(hw_dev, hw_cpu, rtol_for(dtype) * 8, rtol_for(dtype) * 8, what + " histogramdd weighted density");
      }
    }
  }
  const Tensor flat = td::randint(-300, 300, {1000});
  const auto dev = td::unravel_index(flat.to(ct::device()), {5, 6, 10});
  const auto cpu = td::unravel_index(flat, {5, 6, 10});
  for (size_t d = 0; d < 3; ++d) check_equal(dev[d], cpu[d], "unravel_index dim " + std::to_string(d));
}

TEST_CASE("the linalg _ex forms' info and results match the CPU", "[cuda]") {
  TD_SKIP_UNLESS_DEVICE_UNDER_TEST();
  ct::PoisonGuard poison;
  // Positive-definite, not (second leading minor negative), and singular matrices in one batch.
  const Tensor a =
      td::tensor(std::vector<double>{4, 2, 0, 2, 3, 1, 0, 1, 2, 1, 2, 3, 2, 1, 0, 3, 0, 1, 1, 2, 3, 2, 4, 6, 0, 1, 1},
                 td::kFloat64)
          .view({3, 3, 3});
  for (DType dtype : {td::kFloat32, td::kFloat64}) {
    const Tensor cpu = a.to(dtype), dev = cpu.to(ct::device());
    const std::string what = td::dtype_name(dtype);
    check_equal(std::get<1>(la::cholesky_ex(dev)), std::get<1>(la::cholesky_ex(cpu)), what + " cholesky_ex info");
    check_close(std::get<0>(la::cholesky_ex(dev)).select(0, 0), std::get<0>(la::cholesky_ex(cpu)).select(0, 0),
                rtol_for(dtype), rtol_for(dtype), what + " cholesky_ex factor");
    check_equal(std::get<1>(la::inv_ex(dev)), std::get<1>(la::inv_ex(cpu)), what + " inv_ex info");
    check_close(std::get<0>(la::inv_ex(dev)).select(0, 0), std::get<0>(la::inv_ex(cpu)).select(0, 0),
                rtol_for(dtype) * 8, rtol_for(dtype) * 8, what + " inv_ex");
    const Tensor b = td::ones({3, 3, 2}, dtype);
    check_equal(std::get<1>(la::solve_ex(dev, b.to(ct::device()))), std::get<1>(la::solve_ex(cpu, b)),
                what + " solve_ex info");
    check_equal(std::get<2>(la::lu_factor_ex(dev)), std::get<2>(la::lu_factor_ex(cpu)), what + " lu_factor_ex info");
  }
}
