// Reductions (sum, mean, prod, extremes and their indices, var/std, norm, logsumexp, all/any,
// cumsum, cumprod), each checked against a reference computed in double from the input's elements read
// through its strides, over single, negative, sets of and all dims, every layout and dtype.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
namespace tt = td::testing;
using td::Shape;
using td::Tensor;
using tt::check_close;
using tt::check_equal;
using tt::check_error;
using tt::Layout;
using tt::random_tensor;
using tt::rtol_for;
using tt::sign_bits;
using tt::Snapshot;
using tt::values;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

const std::vector<td::DType> kFloating = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16};
const std::vector<td::DType> kExact = {td::kInt64, td::kInt32, td::kUInt8, td::kBool};

using Dims = std::vector<int64_t>;
using Values = std::vector<double>;

struct Case {
  Shape shape;
  Dims dims;  // empty: all dims
};

// Sizes 1, 7 and 33; single, negative, sets of and all dims; a 0-dim input; and shapes whose
// contiguous layout takes the column-wise path ([N, >=16] over dim 0, [A, B, >=16] over dim 1).
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {{}, {}},
      {{}, {0}},
      {{}, {-1}},
      {{1}, {0}},
      {{7}, {0}},
      {{33}, {-1}},
      {{33}, {}},
      {{33, 7}, {0}},
      {{33, 7}, {1}},
      {{7, 33}, {-2}},
      {{7, 33}, {-1}},
      {{33, 7}, {}},
      {{1, 7}, {0}},
      {{4, 5, 6}, {0, 2}},
      {{4, 5, 6}, {1}},
      {{4, 5, 6}, {-1, 0}},
      {{3, 1, 33}, {1}},
      {{4, 5, 6}, {}},
      {{2, 3, 4, 5}, {1, 3}},
      {{2, 3, 4, 5}, {0, 1, 2, 3}},
      {{40, 20}, {0}},
      {{3, 9, 20}, {1}},
      {{3, 4, 20}, {0, 1}},
  };
  return all;
}

std::string describe(const Shape& shape, const Dims& dims, bool keepdim, Layout layout, td::DType dtype) {
  std::ostringstream s;
  s << td::dtype_name(dtype) << " " << td::shape_str(shape) << " " << tt::layout_name(layout) << " over dims "
    << (dims.empty() ? std::string("all") : td::shape_str(dims)) << (keepdim ? " keepdim" : "");
  return s.str();
}

// Half the spacing of the dtype's subnormals: how far rounding moves a result that lands below the
// normal range, where a relative tolerance no longer bounds it (a float16 mean near 1e-6).
double subnormal_atol(td::DType dtype) {
  switch (dtype) {
    case td::kFloat16:
      return std::ldexp(1.0, -25);
    case td::kBFloat16:
      return std::ldexp(1.0, -134);
    case td::kFloat32:
      return std::ldexp(1.0, -150);
    default:
      return 0;
  }
}

void check_near(const Tensor& actual, const Values& expected, double rtol, double atol, const std::string& what = "") {
  check_close(actual, expected, rtol, atol + subnormal_atol(actual.dtype()), what);
}

// Calls body for every case (only single-dim ones when `single_dim`), keepdim, layout and dtype.
void for_each_input(const std::vector<td::DType>& dtypes, bool single_dim, double lo, double hi,
                    const std::function<void(const Tensor&, const Case&, bool, const std::string&)>& body) {
  for (const Case& c : cases()) {
    if (single_dim && c.dims.size() != 1) continue;
    for (td::DType dtype : dtypes) {
      for (Layout layout : tt::all_layouts()) {
        for (bool keepdim : {false, true}) {
          Tensor x = random_tensor(c.shape, dtype, layout, lo, hi);
          std::string what = describe(c.shape, c.dims, keepdim, layout, dtype);
          INFO(what);
          body(x, c, keepdim, what);
        }
      }
    }
  }
}

// The elements each output folds (outputs row-major over the kept dims), each list in row-major
// order over the reduced dims: the order that decides which of tied elements is first.
struct Groups {
  Shape out_shape;
  std::vector<Values> members;
};

Groups group(const Values& v, const Shape& shape, const Dims& dims, bool keepdim) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  std::vector<bool> reduced(shape.size(), dims.empty());
  for (int64_t d : dims) {
    if (ndim > 0) reduced[d < 0 ? d + ndim : d] = true;
  }
  Groups g;
  Shape kept;
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      if (keepdim) g.out_shape.push_back(1);
    } else {
      g.out_shape.push_back(shape[d]);
      kept.push_back(shape[d]);
    }
  }
  g.members.resize(td::numel_of(kept));
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    std::vector<int64_t> index = tt::unravel(i, shape), kept_index;
    for (int64_t d = 0; d < ndim; ++d) {
      if (!reduced[d]) kept_index.push_back(index[d]);
    }
    g.members[tt::ravel(kept_index, kept)].push_back(v[i]);
  }
  return g;
}

Values per_output(const Groups& g, const std::function<double(const Values&)>& f) {
  Values out;
  for (const Values& m : g.members) out.push_back(f(m));
  return out;
}

double largest(const Values& v) {
  double m = 0;
  for (double x : v) {
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  }
  return m;
}

// Neumaier's compensated sum: the reference stays accurate to about one rounding however long
// the fold, so the tolerances measure tandem's error, not the reference's.
class AccurateSum {
 public:
  void add(double x) {
    const double t = s_ + x;
    if (std::isfinite(t)) c_ += std::abs(s_) >= std::abs(x) ? (s_ - t) + x : (x - t) + s_;
    s_ = t;
  }
  double value() const { return std::isfinite(s_) ? s_ + c_ : s_; }

 private:
  double s_ = 0, c_ = 0;
};

double ref_sum(const Values& v) {
  AccurateSum s;
  for (double x : v) s.add(x);
  return s.value();
}

double abs_sum(const Values& v) {
  double s = 0;
  for (double x : v) s += std::abs(x);
  return s;
}

double ref_mean(const Values& v) { return v.empty() ? kNaN : ref_sum(v) / static_cast<double>(v.size()); }

double ref_prod(const Values& v) {
  double p = 1;
  for (double x : v) p *= x;
  return p;
}

// The first maximum (or minimum); the first NaN beats everything.
int64_t ref_arg(const Values& v, bool is_max) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[best])) break;
    if (std::isnan(v[i]) || (is_max ? v[i] > v[best] : v[i] < v[best])) best = i;
  }
  return static_cast<int64_t>(best);
}

double ref_extreme(const Values& v, bool is_max) { return v[ref_arg(v, is_max)]; }

// The corrected two-pass algorithm: squared deviations from the mean, less the square of their
// sum over N (which removes the mean's own rounding), over max(0, N - correction).
double ref_var(const Values& v, int64_t correction) {
  const double n = static_cast<double>(v.size()), mean = ref_mean(v);
  AccurateSum deviations, squares;
  for (double x : v) {
    deviations.add(x - mean);
    squares.add((x - mean) * (x - mean));
  }
  const double m2 = v.empty() ? 0 : squares.value() - deviations.value() * deviations.value() / n;
  return m2 / std::max<double>(0, n - static_cast<double>(correction));
}

double ref_norm(const Values& v, double p) {
  if (std::isinf(p)) {
    double r = p > 0 ? 0 : kInf;
    for (double x : v) {
      if (std::isnan(x)) return kNaN;
      r = p > 0 ? std::max(r, std::abs(x)) : std::min(r, std::abs(x));
    }
    return r;
  }
  AccurateSum s;
  for (double x : v) s.add(p == 0 ? (x != 0 ? 1 : 0) : std::pow(std::abs(x), p));
  return p == 0 || p == 1 ? s.value() : std::pow(s.value(), 1 / p);
}

// NaN is nonzero, so true.
double ref_all(const Values& v) {
  return std::all_of(v.begin(), v.end(), [](double e) { return e != 0; });
}

double ref_any(const Values& v) {
  return std::any_of(v.begin(), v.end(), [](double e) { return e != 0; });
}

// The cases' empty list of dims means every dim; all and any take an empty list as none, as
// PyTorch's do, so they are given every dim by name.
std::vector<int64_t> named_dims(const std::vector<int64_t>& dims, int64_t rank) {
  if (!dims.empty()) return dims;
  std::vector<int64_t> every(rank);
  std::iota(every.begin(), every.end(), int64_t{0});
  return every;
}

double ref_logsumexp(const Values& v) {
  double m = -kInf;
  for (double x : v) {
    if (std::isnan(x)) return kNaN;
    m = std::max(m, x);
  }
  if (std::isinf(m)) return m;  // all -inf (or empty) gives -inf; any +inf gives +inf
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

// Running values along `dim` of row-major values: each position folds its value into the
// running value before it along dim (`start` before the first), and `read` gives the result.
template <typename Acc, typename Fold, typename Read>
Values ref_scan(const Values& v, const Shape& shape, int64_t dim, Acc start, Fold fold, Read read) {
  if (shape.empty()) return v;
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (dim < 0) dim += ndim;
  int64_t stride = 1;
  for (int64_t d = dim + 1; d < ndim; ++d) stride *= shape[d];
  Values out(v.size());
  std::vector<Acc> running(v.size(), start);
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    const int64_t pos = (i / stride) % shape[dim];
    running[i] = fold(pos > 0 ? running[i - stride] : start, v[i]);
    out[i] = read(running[i]);
  }
  return out;
}

// Running sums, summed exactly.
Values ref_cumsum(const Values& v, const Shape& shape, int64_t dim) {
  return ref_scan(
      v, shape, dim, AccurateSum(),
      [](AccurateSum sum, double x) {
        sum.add(x);
        return sum;
      },
      [](const AccurateSum& sum) { return sum.value(); });
}

// Running products in long double: tandem keeps float64.
Values ref_cumprod(const Values& v, const Shape& shape, int64_t dim) {
  return ref_scan(
      v, shape, dim, 1.0L, [](long double p, double x) { return p * x; },
      [](long double p) { return static_cast<double>(p); });
}

// The same for integers, in int64 products that wrap as PyTorch's (and tandem's) do: a uint8
// input drawn below 0 holds 255, and 40 of those pass int64.
Values ref_cumprod_int64(const Values& v, const Shape& shape, int64_t dim) {
  return ref_scan(
      v, shape, dim, uint64_t{1},
      [](uint64_t p, double x) { return p * static_cast<uint64_t>(static_cast<int64_t>(x)); },
      [](uint64_t p) { return static_cast<double>(static_cast<int64_t>(p)); });
}

// Absolute slack for tandem's float64 accumulation, which rounds on the scale of the magnitudes
// summed: it matters where terms cancel. Rounding to narrower dtypes is covered by rtol_for.
double sum_atol(const Groups& g) { return 1e-14 * largest(per_output(g, abs_sum)); }

// The reference's own error: its mean is off by a rounding of the largest element, which var
// sees squared.
double var_atol(const Values& v) {
  const double e = 1e-14 * largest(v);
  return e * e;
}

// A float64 result as the dtype holds it, as far as range goes: float16 overflows to infinity
// past 65504 (a norm of a million elements does), and so must the reference.
Values in_range(Values v, td::DType dtype) {
  if (dtype != td::kFloat16) return v;
  for (double& e : v) {
    if (std::abs(e) >= 65520) e = std::copysign(kInf, e);
  }
  return v;
}

// Zeroes a share of a floating tensor's elements in place (its layout kept), so that all, any
// and the zero-norm see both outcomes.
void sprinkle_zeros(Tensor& x, double below) {
  if (td::is_floating(x.dtype()) && x.numel() > 0) x.masked_fill_(x.abs() < below, 0);
}

std::vector<uint8_t> bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return std::vector<uint8_t>(p, p + c.nbytes());
}


void set_element(const Tensor& x, const std::vector<int64_t>& index, double value) {
  Tensor e = x;
  for (int64_t i : index) e = e.select(0, i);
  e.fill_(value);
}

Tensor sum_of(const Tensor& x, const Dims& dims, bool keepdim) {
  return dims.empty() && !keepdim ? td::sum(x) : td::sum(x, dims, keepdim);
}

// Every reduction that folds x over `dims`, against the reference: used where one input must go
// through all of them (the column-wise path, long folds).
void check_all_reductions(const Tensor& x, const Dims& dims, bool keepdim, const std::string& what) {
  INFO(what);
  const Values v = values(x);
  const Groups g = group(v, x.sizes(), dims, keepdim);
  const td::DType dtype = x.dtype();
  const bool floating = td::is_floating(dtype);
  const double rtol = rtol_for(dtype), atol = sum_atol(g);

  Tensor s = sum_of(x, dims, keepdim);
  CHECK(s.dtype() == (floating ? dtype : td::kInt64));
  REQUIRE(s.sizes() == g.out_shape);
  check_near(s, in_range(per_output(g, ref_sum), dtype), rtol, atol, "sum");

  Tensor hi = td::amax(x, dims, keepdim), lo = td::amin(x, dims, keepdim);
  CHECK(hi.dtype() == dtype);
  REQUIRE(hi.sizes() == g.out_shape);
  check_equal(hi, per_output(g, [](const Values& m) { return ref_extreme(m, true); }), "amax");
  check_equal(lo, per_output(g, [](const Values& m) { return ref_extreme(m, false); }), "amin");

  if (dims.size() == 1) {
    auto [values_max, indices_max] = td::max(x, dims[0], keepdim);
    REQUIRE(indices_max.sizes() == g.out_shape);
    CHECK(indices_max.dtype() == td::kInt64);
    check_equal(values_max, per_output(g, [](const Values& m) { return ref_extreme(m, true); }), "max values");
    check_equal(indices_max, per_output(g, [](const Values& m) { return double(ref_arg(m, true)); }), "max indices");
    check_equal(td::argmin(x, dims[0], keepdim),
                per_output(g, [](const Values& m) { return double(ref_arg(m, false)); }), "argmin");
  }
  if (dims.empty()) {
    check_equal(td::argmax(x), {double(ref_arg(v, true))}, "argmax of all");
    check_equal(td::argmin(x), {double(ref_arg(v, false))}, "argmin of all");
  }

  const Dims logical_dims = named_dims(dims, x.dim());
  Tensor any = td::any(x, logical_dims, keepdim), all = td::all(x, logical_dims, keepdim);
  CHECK(any.dtype() == (dtype == td::kUInt8 ? td::kUInt8 : td::kBool));
  check_equal(any, per_output(g, ref_any), "any");
  check_equal(all, per_output(g, ref_all), "all");

  if (!floating) return;
  check_near(td::mean(x, dims, keepdim), per_output(g, ref_mean), rtol, atol / std::max<double>(1, v.size()), "mean");
  for (int64_t correction : {0, 1, 2}) {
    auto ref = [correction](const Values& m) { return ref_var(m, correction); };
    Values var = per_output(g, ref), sd;
    for (double e : var) sd.push_back(std::sqrt(e));
    check_near(td::var(x, dims, correction, keepdim), var, rtol, var_atol(v),
               "var, correction " + std::to_string(correction));
    check_near(td::std(x, dims, correction, keepdim), sd, rtol, std::sqrt(var_atol(v)),
               "std, correction " + std::to_string(correction));
  }
  for (double p : {2.0, 1.0, 0.0, kInf, -kInf, 3.0}) {
    check_near(td::norm(x, p, dims, keepdim),
               in_range(per_output(g, [p](const Values& m) { return ref_norm(m, p); }), dtype), rtol, 0,
               "norm, p = " + std::to_string(p));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// sum, mean, prod

TEST_CASE(
    "sum over single, negative, sets of and all dims matches a float64 reference in every layout and floating dtype",
    "[cpu]") {
  tt::reseed(1);
  for_each_input(kFloating, false, -2, 2, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    Tensor out = sum_of(x, c.dims, keepdim);
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    CHECK(out.dtype() == x.dtype());
    REQUIRE(out.sizes() == g.out_shape);
    check_near(out, per_output(g, ref_sum), rtol_for(x.dtype()), sum_atol(g), what);
  });
}

TEST_CASE("sum of int64, int32, uint8 and bool tensors is exact and int64", "[cpu]") {
  tt::reseed(2);
  for_each_input(kExact, false, -50, 50, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    Tensor out = sum_of(x, c.dims, keepdim);
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    CHECK(out.dtype() == td::kInt64);
    REQUIRE(out.sizes() == g.out_shape);
    check_equal(out, per_output(g, ref_sum), what);
  });
}

TEST_CASE("sum with a dtype argument converts first and returns that dtype", "[cpu]") {
  tt::reseed(3);
  Tensor x = random_tensor({33, 7}, td::kFloat16, Layout::Permuted);
  Groups g = group(values(x), x.sizes(), {0}, false);
  Tensor out = td::sum(x, {0}, false, td::kFloat64);
  CHECK(out.dtype() == td::kFloat64);
  check_near(out, per_output(g, ref_sum), 1e-12, sum_atol(g));

  Tensor ints = random_tensor({7, 33}, td::kInt32, Layout::Strided, -50, 50);
  Tensor as_float = td::sum(ints, td::kFloat32);
  CHECK(as_float.dtype() == td::kFloat32);
  check_equal(as_float, {ref_sum(values(ints))});
}

TEST_CASE(
    "mean over single, negative, sets of and all dims matches a float64 reference in every layout and floating dtype",
    "[cpu]") {
  tt::reseed(4);
  for_each_input(kFloating, false, -2, 2, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    Tensor out = c.dims.empty() && !keepdim ? td::mean(x) : td::mean(x, c.dims, keepdim);
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    CHECK(out.dtype() == x.dtype());
    REQUIRE(out.sizes() == g.out_shape);
    check_near(out, per_output(g, ref_mean), rtol_for(x.dtype()), sum_atol(g), what);
  });
}

TEST_CASE("mean of an integer tensor raises an error naming the dtype unless a floating dtype is given", "[cpu]") {
  tt::reseed(5);
  for (td::DType dtype : kExact) {
    Tensor x = random_tensor({7, 33}, dtype, Layout::Contiguous, -50, 50);
    Snapshot before(x);
    check_error([&] { td::mean(x); }, {"mean", td::dtype_name(dtype)});
    check_error([&] { td::mean(x, {1}); }, {"mean", td::dtype_name(dtype)});
    before.check_unchanged(x);
    Tensor out = td::mean(x, {1}, false, td::kFloat64);
    CHECK(out.dtype() == td::kFloat64);
    Groups g = group(values(x), x.sizes(), {1}, false);
    check_near(out, per_output(g, ref_mean), 1e-12, 0, td::dtype_name(dtype));
  }
}

TEST_CASE("prod over one dim or all dims matches a float64 reference in every layout and floating dtype", "[cpu]") {
  tt::reseed(6);
  // Factors near 1 keep products of up to 231 of them inside float16's normal range.
  for_each_input(kFloating, false, 0.8, 1.25,
                 [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
                   if (c.dims.size() > 1 || (c.dims.empty() && keepdim)) return;
                   Tensor out = c.dims.empty() ? td::prod(x) : td::prod(x, c.dims[0], keepdim);
                   Groups g = group(values(x), x.sizes(), c.dims, keepdim);
                   CHECK(out.dtype() == x.dtype());
                   REQUIRE(out.sizes() == g.out_shape);
                   check_near(out, per_output(g, ref_prod), rtol_for(x.dtype()), 0, what);
                 });
  Tensor signs = td::tensor({-2.0, 0.5, -1.5, 3.0, 0.0, -1.0}).view({2, 3});
  check_equal(td::prod(signs, 1), {1.5, -0.0});
  check_equal(td::prod(signs, 0), {-6.0, 0.0, 1.5});
}

TEST_CASE("prod of integer and bool tensors is exact and int64", "[cpu]") {
  tt::reseed(7);
  auto body = [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    if (c.dims.size() > 1 || (c.dims.empty() && keepdim)) return;
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    for (const Values& m : g.members) {
      if (m.size() > 33) return;  // 3^33 is the most int64 and the float64 reference both hold exactly
    }
    Tensor out = c.dims.empty() ? td::prod(x) : td::prod(x, c.dims[0], keepdim);
    CHECK(out.dtype() == td::kInt64);
    REQUIRE(out.sizes() == g.out_shape);
    check_equal(out, per_output(g, ref_prod), what);
  };
  for_each_input({td::kInt64, td::kInt32, td::kBool}, false, -3.99, 4, body);
  for_each_input({td::kUInt8}, false, 0, 4, body);
}

// ---------------------------------------------------------------------------------------------
// extremes and their indices

TEST_CASE("amax and amin over single, negative, sets of and all dims return the exact extreme in every dtype",
          "[cpu]") {
  tt::reseed(8);
  std::vector<td::DType> dtypes = kFloating;
  dtypes.insert(dtypes.end(), kExact.begin(), kExact.end());
  for_each_input(dtypes, false, -50, 50, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    Tensor hi = c.dims.empty() && !keepdim ? td::max(x) : td::amax(x, c.dims, keepdim);
    Tensor lo = c.dims.empty() && !keepdim ? td::min(x) : td::amin(x, c.dims, keepdim);
    CHECK(hi.dtype() == x.dtype());
    CHECK(lo.dtype() == x.dtype());
    REQUIRE(hi.sizes() == g.out_shape);
    REQUIRE(lo.sizes() == g.out_shape);
    check_equal(hi, per_output(g, [](const Values& m) { return ref_extreme(m, true); }), "amax " + what);
    check_equal(lo, per_output(g, [](const Values& m) { return ref_extreme(m, false); }), "amin " + what);
  });
}

TEST_CASE("max and min with a dim return the values and int64 indices of the first extreme in every dtype", "[cpu]") {
  tt::reseed(9);
  std::vector<td::DType> dtypes = kFloating;
  dtypes.insert(dtypes.end(), kExact.begin(), kExact.end());
  // A narrow range makes ties common in every dtype, so "first" is exercised.
  for_each_input(dtypes, true, -3, 3, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    for (bool is_max : {true, false}) {
      auto [v, i] = is_max ? td::max(x, c.dims[0], keepdim) : td::min(x, c.dims[0], keepdim);
      std::string name = (is_max ? "max " : "min ") + what;
      CHECK(v.dtype() == x.dtype());
      CHECK(i.dtype() == td::kInt64);
      REQUIRE(v.sizes() == g.out_shape);
      REQUIRE(i.sizes() == g.out_shape);
      check_equal(v, per_output(g, [is_max](const Values& m) { return ref_extreme(m, is_max); }), name);
      check_equal(i, per_output(g, [is_max](const Values& m) { return double(ref_arg(m, is_max)); }), name);
    }
  });
}

TEST_CASE("max and min with a dim return the first of tied extremes, and a NaN with the index of the first NaN",
          "[cpu]") {
  const Values rows = {1,  3,    3,  2,     //
                       5,  kNaN, 7,  kNaN,  //
                       -1, -1,   -1, -1,    //
                       2,  0,    0,  2};
  for (td::DType dtype : kFloating) {
    INFO(td::dtype_name(dtype));
    Tensor x = td::tensor(rows).to(dtype).view({4, 4});
    auto [hv, hi] = td::max(x, 1);
    check_equal(hv, {3, kNaN, -1, 2});
    check_equal(hi, {1, 1, 0, 0});
    auto [lv, li] = td::min(x, -1, true);
    CHECK(li.sizes() == Shape{4, 1});
    check_equal(lv, {1, kNaN, -1, 0});
    check_equal(li, {0, 1, 0, 1});
    // Along dim 0 of the matrix and of its transpose (strided folds).
    auto [cv, ci] = td::max(x, 0);
    check_equal(cv, {5, kNaN, 7, kNaN});
    check_equal(ci, {1, 1, 1, 1});
    auto [tv, ti] = td::min(x.t(), 1);
    check_equal(tv, {-1, kNaN, -1, kNaN});
    check_equal(ti, {2, 1, 2, 1});
    check_equal(td::amax(x, {1}), {3, kNaN, -1, 2});
    check_equal(td::amin(x, {0}), {-1, kNaN, -1, kNaN});
    check_equal(td::argmax(x, 1), {1, 1, 0, 0});
    check_equal(td::argmin(x, 1), {0, 1, 0, 1});
    check_equal(td::argmax(x), {5});
    check_equal(td::argmin(x.t()), {5});
    check_equal(td::max(x), {kNaN});
    check_equal(td::min(x), {kNaN});
  }
}

TEST_CASE("argmax and argmin with and without a dim, with and without keepdim, index the first extreme", "[cpu]") {
  tt::reseed(10);
  std::vector<td::DType> dtypes = kFloating;
  dtypes.insert(dtypes.end(), {td::kInt64, td::kInt32, td::kUInt8});
  for_each_input(dtypes, false, -3, 3, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    const Values v = values(x);
    for (bool is_max : {true, false}) {
      std::string name = (is_max ? "argmax " : "argmin ") + what;
      if (c.dims.size() == 1) {
        Groups g = group(v, x.sizes(), c.dims, keepdim);
        Tensor i = is_max ? td::argmax(x, c.dims[0], keepdim) : td::argmin(x, c.dims[0], keepdim);
        CHECK(i.dtype() == td::kInt64);
        REQUIRE(i.sizes() == g.out_shape);
        check_equal(i, per_output(g, [is_max](const Values& m) { return double(ref_arg(m, is_max)); }), name);
      } else {
        // Without a dim: the index into the row-major flattening, shaped [1, ..., 1] with keepdim.
        Tensor i = is_max ? td::argmax(x, std::nullopt, keepdim) : td::argmin(x, std::nullopt, keepdim);
        CHECK(i.dtype() == td::kInt64);
        CHECK(i.sizes() == (keepdim ? Shape(x.dim(), 1) : Shape{}));
        check_equal(i, {double(ref_arg(v, is_max))}, name);
      }
    }
  });
}

TEST_CASE("ties and NaNs resolve to the first occurrence across the chunks of a long fold and in the column-wise path",
          "[cpu]") {
  for (td::DType dtype :
       {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16, td::kInt64, td::kInt32, td::kUInt8}) {
    INFO(td::dtype_name(dtype));
    const bool floating = td::is_floating(dtype);
    // 40000 elements fold in three fixed chunks; the tied maxima sit in the second and third.
    Tensor x = td::zeros({3, 40000}, dtype);
    set_element(x, {0, 20000}, 1);
    set_element(x, {0, 30000}, 1);
    set_element(x, {1, 39999}, 1);
    set_element(x, {2, 16384}, 1);
    set_element(x, {2, 16383}, 1);
    auto [v, i] = td::max(x, 1);
    check_equal(v, {1, 1, 1});
    check_equal(i, {20000, 39999, 16383});
    check_equal(td::argmin(x, 1), {0, 0, 0});
    check_equal(td::argmax(x[0]), {20000});
    check_equal(td::argmax(x.t(), 0), {20000, 39999, 16383});
    if (floating) {
      set_element(x, {0, 35000}, kNaN);
      set_element(x, {0, 38000}, kNaN);
      set_element(x, {1, 100}, kNaN);
      auto [nv, ni] = td::max(x, 1);
      check_equal(nv, {kNaN, kNaN, 1});
      check_equal(ni, {35000, 100, 16383});
      check_equal(td::argmin(x, 1), {35000, 100, 0});
      check_equal(td::amax(x, {1}), {kNaN, kNaN, 1});
      check_equal(td::argmax(x), {35000});
    }

    // [50, 20] over dim 0: the column-wise path, folding rows in order.
    Tensor m = td::zeros({50, 20}, dtype);
    set_element(m, {10, 3}, 2);
    set_element(m, {40, 3}, 2);
    set_element(m, {49, 5}, 2);
    if (floating) {
      set_element(m, {5, 7}, kNaN);
      set_element(m, {30, 7}, kNaN);
      set_element(m, {45, 7}, 3);
    }
    auto [mv, mi] = td::max(m, 0);
    auto [lv, li] = td::min(m, 0);
    Values hv(20, 0), hi(20, 0), lo_v(20, 0), lo_i(20, 0);
    hv[3] = 2;
    hi[3] = 10;
    hv[5] = 2;
    hi[5] = 49;
    if (floating) {
      hv[7] = lo_v[7] = kNaN;
      hi[7] = lo_i[7] = 5;
    }
    check_equal(mv, hv);
    check_equal(mi, hi);
    check_equal(lv, lo_v);
    check_equal(li, lo_i);

    // [300, 4100] over dim 0: the column-wise path over several blocks of rows and of columns,
    // whose results combine in row order; ties and NaNs fall in different blocks of rows.
    Tensor w = td::ones({300, 4100}, dtype);
    for (int64_t c : {int64_t{2}, int64_t{4099}}) {
      set_element(w, {200, c}, 4);
      set_element(w, {260, c}, 4);
      set_element(w, {10, c}, 0);
      set_element(w, {290, c}, 0);
    }
    if (floating) {
      set_element(w, {150, 4098}, kNaN);
      set_element(w, {20, 4098}, 5);
      set_element(w, {299, 4098}, kNaN);
    }
    auto [wv, wi] = td::max(w, 0);
    auto [wl, wli] = td::min(w, 0);
    for (int64_t c : {int64_t{2}, int64_t{4099}}) {
      check_equal(wv[c], {4});
      check_equal(wi[c], {200});
      check_equal(wl[c], {0});
      check_equal(wli[c], {10});
    }
    check_equal(wi[3], {0});
    if (floating) {
      check_equal(wv[4098], {kNaN});
      check_equal(wi[4098], {150});
      check_equal(wli[4098], {150});
    }
  }
}


TEST_CASE("amax, amin, max, min, maximum and minimum put +0 above -0 wherever the zeros sit in the fold", "[cpu]") {
  tt::ThreadCount threads(2);  // the long folds also split between threads
  for (td::DType dtype : kFloating) {
    INFO(td::dtype_name(dtype));
    // One zero of the other sign at the start, the middle or the end of folds short and long.
    for (int64_t n : {2, 7, 33, 120000}) {
      for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
        INFO("n " << n << ", the odd zero at " << at);
        Tensor negative = td::full({n}, -0.0, dtype), positive = td::zeros({n}, dtype);
        set_element(negative, {at}, 0.0);
        set_element(positive, {at}, -0.0);
        for (const Tensor& x : {negative, positive}) {
          CHECK(sign_bits(td::amax(x, {0})) == std::vector<bool>{false});
          CHECK(sign_bits(td::amin(x, {0})) == std::vector<bool>{true});
          CHECK(sign_bits(td::max(x)) == std::vector<bool>{false});
          CHECK(sign_bits(td::min(x)) == std::vector<bool>{true});
          // With indices, the value is the element at the first index: the first zero, of either sign.
          auto [value, index] = td::max(x, 0);
          CHECK(index.item<int64_t>() == 0);
          CHECK(sign_bits(value) == std::vector<bool>{static_cast<bool>(std::signbit(tt::read(x, 0)))});
        }
      }
    }

    // [300, 4100] of -0 with a +0 in some columns at rows in different blocks: folded over dim 0 (the
    // column-wise path), over dim 1 of the transpose (strided rows) and over dim 1 (contiguous rows).
    Tensor m = td::full({300, 4100}, -0.0, dtype);
    const std::vector<std::pair<int64_t, int64_t>> positive_at = {{0, 0}, {150, 7}, {299, 4099}, {200, 2048}};
    for (auto [row, col] : positive_at) set_element(m, {row, col}, 0.0);
    std::vector<bool> column_signs(4100, true), row_signs(300, true);
    for (auto [row, col] : positive_at) column_signs[col] = row_signs[row] = false;
    CHECK(sign_bits(td::amax(m, {0})) == column_signs);
    CHECK(sign_bits(td::amax(m.t(), {1})) == column_signs);
    CHECK(sign_bits(td::amax(m, {1})) == row_signs);
    CHECK(sign_bits(td::amin(m, {0})) == std::vector<bool>(4100, true));
    std::vector<bool> negated_row_signs = row_signs;
    negated_row_signs.flip();
    CHECK(sign_bits(td::amin(td::neg(m), {1})) == negated_row_signs);

    // Element-wise, in either order of the operands.
    Tensor a = td::tensor({-0.0, 0.0, -0.0, 0.0}).to(dtype), b = td::tensor({0.0, -0.0, -0.0, 0.0}).to(dtype);
    for (auto [p, q] : {std::pair{a, b}, std::pair{b, a}}) {
      CHECK(sign_bits(td::maximum(p, q)) == std::vector<bool>{false, false, true, false});
      CHECK(sign_bits(td::minimum(p, q)) == std::vector<bool>{true, true, true, false});
    }
  }
}

// ---------------------------------------------------------------------------------------------
// var, std, norm, logsumexp

TEST_CASE(
    "var and std with correction 0, 1 and 2 match a two-pass float64 reference in every layout and floating dtype",
    "[cpu]") {
  tt::reseed(11);
  for_each_input(kFloating, false, -2, 2, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    for (int64_t correction : {0, 1, 2}) {
      std::string name = what + ", correction " + std::to_string(correction);
      Values var = per_output(g, [correction](const Values&m) { return ref_var(m, correction); }), sd;
      for (double e : var) sd.push_back(std::sqrt(e));
      Tensor v = td::var(x, c.dims, correction, keepdim), s = td::std(x, c.dims, correction, keepdim);
      CHECK(v.dtype() == x.dtype());
      CHECK(s.dtype() == x.dtype());
      REQUIRE(v.sizes() == g.out_shape);
      REQUIRE(s.sizes() == g.out_shape);
      check_near(v, var, rtol_for(x.dtype()), var_atol(values(x)), "var " + name);
      check_near(s, sd, rtol_for(x.dtype()), std::sqrt(var_atol(values(x))), "std " + name);
    }
  });
}

TEST_CASE("var with the default correction is the unbiased estimate", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0, 3.0, 4.0});
  check_near(td::var(x), {5.0 / 3.0}, 1e-6, 0);
  check_near(td::std(x, {0}, 0), {std::sqrt(1.25)}, 1e-6, 0);
  check_near(td::var(x.view({2, 2}), {1}, 1, true), {0.5, 0.5}, 1e-6, 0);
}

TEST_CASE("norm with p = 2, 1, 0, inf, -inf and 3 matches a float64 reference in every layout and floating dtype",
          "[cpu]") {
  tt::reseed(12);
  for_each_input(kFloating, false, -2, 2, [](const Tensor& x0, const Case& c, bool keepdim, const std::string& what) {
    Tensor x = x0;
    sprinkle_zeros(x, 0.5);
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    for (double p : {2.0, 1.0, 0.0, kInf, -kInf, 3.0}) {
      Tensor out = td::norm(x, p, c.dims, keepdim);
      CHECK(out.dtype() == x.dtype());
      REQUIRE(out.sizes() == g.out_shape);
      check_near(out, per_output(g, [p](const Values& m) { return ref_norm(m, p); }), rtol_for(x.dtype()), 0,
                 what + ", p = " + std::to_string(p));
    }
  });
}

TEST_CASE("norm with an infinite p propagates NaN and the zero-norm counts nonzeros", "[cpu]") {
  Tensor x = td::tensor({{1.0, -4.0, kNaN}, {0.0, -3.0, 2.0}});
  check_equal(td::norm(x, kInf, {1}), {kNaN, 3});
  check_equal(td::norm(x, -kInf, {1}), {kNaN, 0});
  check_equal(td::norm(x[1], 0), {2});
  check_equal(td::norm(x[1], 1), {5});
  check_near(td::norm(x[1], 2), {std::sqrt(13.0)}, 1e-6, 0);
}

TEST_CASE("logsumexp matches a float64 reference in every layout and floating dtype, and of int64 in float32",
          "[cpu]") {
  tt::reseed(13);
  for_each_input(kFloating, false, -2, 2, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    Groups g = group(values(x), x.sizes(), c.dims, keepdim);
    Tensor out = td::logsumexp(x, c.dims, keepdim);
    CHECK(out.dtype() == x.dtype());
    REQUIRE(out.sizes() == g.out_shape);
    // exp, sum, log and + max each round to the dtype: an absolute term on the scale of the inputs.
    const double rtol = rtol_for(x.dtype());
    check_near(out, per_output(g, ref_logsumexp), rtol, rtol * 3, what);
  });
  Tensor ints = random_tensor({7, 33}, td::kInt64, Layout::Permuted, -5, 5);
  Tensor out = td::logsumexp(ints, {1});
  CHECK(out.dtype() == td::kFloat32);
  check_near(out, per_output(group(values(ints), ints.sizes(), {1}, false), ref_logsumexp), 1e-5, 1e-5);
}

TEST_CASE("logsumexp of rows holding -inf and +inf gives the limits without NaN", "[cpu]") {
  const Values rows = {-kInf, -kInf, -kInf,  //
                       1,     kInf,  2,      //
                       -kInf, 0,     1,      //
                       kInf,  kInf,  -kInf,  //
                       kNaN,  1,     2,      //
                       -kInf, -kInf, 3};
  const Values expected = {-kInf, kInf, std::log(1 + std::exp(1.0)), kInf, kNaN, 3};
  for (td::DType dtype : kFloating) {
    INFO(td::dtype_name(dtype));
    Tensor x = td::tensor(rows).to(dtype).view({6, 3});
    const double rtol = rtol_for(dtype);
    check_near(td::logsumexp(x, {1}), expected, rtol, rtol);
    check_near(td::logsumexp(x.t(), {0}, true), expected, rtol, rtol);
    CHECK(td::logsumexp(x.t(), {0}, true).sizes() == Shape{1, 6});
    Values cols(3);
    for (int64_t j = 0; j < 3; ++j)
      cols[j] = ref_logsumexp({rows[j], rows[3 + j], rows[6 + j], rows[9 + j], rows[12 + j], rows[15 + j]});
    check_near(td::logsumexp(x, {0}), cols, rtol, rtol);
  }
}

// ---------------------------------------------------------------------------------------------
// all, any, cumsum, cumprod

TEST_CASE("all and any match a reference in every layout and dtype, giving bool, or uint8 for uint8 input", "[cpu]") {
  tt::reseed(14);
  std::vector<td::DType> dtypes = kFloating;
  dtypes.insert(dtypes.end(), kExact.begin(), kExact.end());
  for (double below : {0.3, 1.7}) {
    for_each_input(dtypes, false, -2, 2,
                   [below](const Tensor& x0, const Case& c, bool keepdim, const std::string& what) {
                     Tensor x = x0;
                     sprinkle_zeros(x, below);
                     Groups g = group(values(x), x.sizes(), c.dims, keepdim);
                     const bool whole = c.dims.empty() && !keepdim;
                     const std::vector<int64_t> dims = named_dims(c.dims, x.dim());
                     Tensor all = whole ? td::all(x) : td::all(x, dims, keepdim);
                     Tensor any = whole ? td::any(x) : td::any(x, dims, keepdim);
                     const td::DType expected = x.dtype() == td::kUInt8 ? td::kUInt8 : td::kBool;
                     CHECK(all.dtype() == expected);
                     CHECK(any.dtype() == expected);
                     REQUIRE(all.sizes() == g.out_shape);
                     REQUIRE(any.sizes() == g.out_shape);
                     check_equal(all, per_output(g, ref_all), "all " + what);
                     check_equal(any, per_output(g, ref_any), "any " + what);
                   });
  }
}

TEST_CASE("all and any treat NaN as true", "[cpu]") {
  Tensor x = td::tensor({{kNaN, 0.0}, {kNaN, 1.0}});
  check_equal(td::all(x, {1}), {0, 1});
  check_equal(td::any(x, {0}), {1, 1});
  check_equal(td::all(x[0][0]), {1});
}

TEST_CASE("all and any over an empty list of dims reduce nothing, as PyTorch's", "[cpu]") {
  // PyTorch 2.15: torch.all(x, dim=()) is x's truth element by element (sum(dim=[]) reduces all).
  Tensor x = td::tensor({{0.0, kNaN}, {3.0, 0.0}}).t();
  for (bool keepdim : {false, true}) {
    Tensor each = td::all(x, {}, keepdim);
    CHECK(each.dtype() == td::kBool);
    CHECK(each.sizes() == td::Shape{2, 2});
    check_equal(each, {0, 1, 1, 0});
    check_equal(td::any(x, {}, keepdim), {0, 1, 1, 0});
  }
  Tensor bytes = td::tensor({0, 2, 3, 0}).to(td::kUInt8);
  CHECK(td::any(bytes, {}).dtype() == td::kUInt8);
  check_equal(td::any(bytes, {}), {0, 1, 1, 0});
  check_equal(x.all({}), {0, 1, 1, 0});
  check_equal(td::all(x), {0});  // without dims: everything, as before
  CHECK(td::sum(x, td::IntList{}).sizes() == td::Shape{});
}

TEST_CASE("cumsum along each dim matches running float64 sums in every layout and floating dtype", "[cpu]") {
  tt::reseed(15);
  for_each_input(kFloating, true, -2, 2, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    if (keepdim) return;
    const Values v = values(x);
    Tensor out = td::cumsum(x, c.dims[0]);
    CHECK(out.dtype() == x.dtype());
    REQUIRE(out.sizes() == x.sizes());
    check_near(out, ref_cumsum(v, x.sizes(), c.dims[0]), rtol_for(x.dtype()), 1e-14 * abs_sum(v), what);
  });
}

TEST_CASE("cumsum of integer and bool tensors accumulates exactly in int64", "[cpu]") {
  tt::reseed(16);
  for_each_input(kExact, true, -50, 50, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    if (keepdim) return;
    Tensor out = td::cumsum(x, c.dims[0]);
    CHECK(out.dtype() == td::kInt64);
    REQUIRE(out.sizes() == x.sizes());
    check_equal(out, ref_cumsum(values(x), x.sizes(), c.dims[0]), what);
  });
  Tensor ints = random_tensor({7, 5}, td::kInt32, Layout::Strided, -50, 50);
  Tensor f = td::cumsum(ints, 1, td::kFloat64);
  CHECK(f.dtype() == td::kFloat64);
  check_equal(f, ref_cumsum(values(ints), ints.sizes(), 1));
}

TEST_CASE("cumprod along each dim matches running products in every layout and floating dtype", "[cpu]") {
  tt::reseed(41);
  // Factors in [-1.25, 1.25): the longest line (40) stays within float16's range.
  for_each_input(kFloating, true, -1.25, 1.25, [](Tensor x, const Case& c, bool keepdim, const std::string& what) {
    if (keepdim) return;
    sprinkle_zeros(x, 0.05);  // a zero ends a line's products; NaN after it would show a 0 * inf
    const Values v = values(x);
    Tensor out = td::cumprod(x, c.dims[0]);
    CHECK(out.dtype() == x.dtype());
    REQUIRE(out.sizes() == x.sizes());
    check_near(out, ref_cumprod(v, x.sizes(), c.dims[0]), rtol_for(x.dtype()), 0, what);
    CHECK(x.cumprod(c.dims[0]).sizes() == x.sizes());
  });
}

TEST_CASE("cumprod of integer and bool tensors multiplies exactly in int64", "[cpu]") {
  tt::reseed(42);
  // Factors drawn in [-2, 3) (a uint8 one below 0 is 255), the reference's products in int64.
  for_each_input(kExact, true, -2, 3, [](const Tensor& x, const Case& c, bool keepdim, const std::string& what) {
    if (keepdim) return;
    Tensor out = td::cumprod(x, c.dims[0]);
    CHECK(out.dtype() == td::kInt64);
    REQUIRE(out.sizes() == x.sizes());
    check_equal(out, ref_cumprod_int64(values(x), x.sizes(), c.dims[0]), what);
  });
  check_equal(td::cumprod(td::tensor({true, true, false, true}), 0), {1, 1, 0, 0});
  Tensor big = td::tensor({int64_t{1} << 40, int64_t{1} << 20, int64_t{3}});
  check_equal(td::cumprod(big, 0), {1099511627776.0, 1152921504606846976.0, 3458764513820540928.0});
  // Past int64 the products wrap, as PyTorch's: cumprod([2^62, 4, 3]) = [2^62, 0, 0], prod 0.
  Tensor past = td::tensor({int64_t{1} << 62, int64_t{4}, int64_t{3}});
  check_equal(td::cumprod(past, 0), {4611686018427387904.0, 0, 0});
  check_equal(td::prod(past), {0});
  check_equal(td::prod(td::tensor({int64_t{1} << 62, int64_t{3}})), {-4611686018427387904.0});
}

TEST_CASE("cumprod keeps special values as a product does: inf, NaN, and 0 * inf", "[cpu]") {
  // PyTorch 2.15: torch.cumprod(torch.tensor([2., inf, 0., 3.]), 0) = [2, inf, nan, nan].
  check_equal(td::cumprod(td::tensor({2.0, kInf, 0.0, 3.0}), 0), {2, kInf, kNaN, kNaN});
  check_equal(td::cumprod(td::tensor({-2.0, kNaN, 0.0}).to(td::kFloat32), 0), {-2, kNaN, kNaN});
  // float64 running products: 1e30 * 1e30 overflows float32 but not the running value.
  check_equal(td::cumprod(td::tensor({1e30, 1e30, 1e-30, 1e-30}).to(td::kFloat32), 0),
              values(td::tensor({1e30, kInf, 1e30, 1.0}).to(td::kFloat32)));
}

TEST_CASE("cumsum and cumprod refuse a dim outside the tensor, naming the op", "[cpu]") {
  Tensor x = td::ones({2, 3});
  Snapshot before(x);
  check_error([&] { td::cumprod(x, 2); }, {"cumprod", "dim", "2"});
  check_error([&] { td::cumprod(x, -3); }, {"cumprod", "dim", "-3"});
  check_error([&] { td::cumsum(x, 2); }, {"cumsum", "dim", "2"});
  check_error([&] { td::cumprod(Tensor(), 0); }, {"cumprod", "undefined"});
  check_error([&] { td::cumsum(Tensor(), 0); }, {"cumsum", "undefined"});
  before.check_unchanged(x);
}

TEST_CASE("sum, prod, cumsum and cumprod with a dtype cast the input to it first, as PyTorch does", "[cpu]") {
  // 2^24 + 1 is 2^24 in float32: summed in float64 first, the third running sum would round to
  // 50331652; PyTorch casts first and gives 3 * 2^24.
  Tensor x = td::tensor({16777217.0, 16777217.0, 16777217.0});
  Tensor running = td::cumsum(x, 0, td::kFloat32);
  CHECK(running.dtype() == td::kFloat32);
  check_equal(running, {16777216.0, 33554432.0, 50331648.0});
  tt::reseed(17);
  Tensor y = random_tensor({9, 6}, td::kFloat64, Layout::Permuted, -2, 2);
  for (td::DType dtype : {td::kFloat32, td::kFloat16, td::kBFloat16, td::kInt32}) {
    const std::string what = td::dtype_name(dtype);
    Tensor cast = y.to(dtype);
    Tensor running_y = td::cumsum(y, 1, dtype);
    CHECK(running_y.dtype() == dtype);
    check_equal(running_y, values(td::cumsum(cast, 1).to(dtype)), "cumsum " + what);
    Tensor products_y = td::cumprod(y, 0, dtype);
    CHECK(products_y.dtype() == dtype);
    check_equal(products_y, values(td::cumprod(cast, 0).to(dtype)), "cumprod " + what);
    check_equal(td::sum(y, {0}, false, dtype), values(td::sum(cast, {0}).to(dtype)), "sum " + what);
    check_equal(td::prod(y, 1, false, dtype), values(td::prod(cast, 1).to(dtype)), "prod " + what);
  }
  Tensor ints = td::tensor({{1, 2}, {3, 4}}).to(td::kInt32);
  check_equal(td::sum(ints, td::kFloat32), {10});
  CHECK(td::prod(ints, td::kInt32).dtype() == td::kInt32);
  check_equal(td::prod(ints, td::kInt32), {24});
  check_equal(td::cumsum(ints.to(td::kBool), 1), {1, 2, 1, 2});
  CHECK(td::cumprod(ints, 0, td::kFloat32).dtype() == td::kFloat32);
  check_equal(td::cumprod(ints, 0, td::kFloat32), {1, 2, 3, 8});
}
// ---------------------------------------------------------------------------------------------
// paths, sizes and threads

TEST_CASE(
    "the column-wise path: reductions over dim 0 of contiguous [N, >=16] matrices and dim 1 of [A, B, C] tensors "
    "match the reference",
    "[cpu]") {
  tt::reseed(17);
  struct Column {
    Shape shape;
    int64_t dim;
  };
  // 300 and 257 columns span more than one block of columns; 2 rows is the shortest fold it takes.
  const std::vector<Column> shapes = {{{2, 16}, 0},  {{33, 16}, 0},    {{7, 33}, 0},     {{1000, 17}, 0},
                                      {{5, 300}, 0}, {{3, 33, 20}, 1}, {{2, 7, 257}, 1}, {{4, 2, 16}, 1}};
  for (const Column& c : shapes) {
    for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16, td::kInt64, td::kUInt8}) {
      for (bool keepdim : {false, true}) {
        Tensor x = random_tensor(c.shape, dtype, Layout::Contiguous, -3, 3);
        REQUIRE(x.is_contiguous());
        sprinkle_zeros(x, 0.2);
        check_all_reductions(x, {c.dim}, keepdim, describe(c.shape, {c.dim}, keepdim, Layout::Contiguous, dtype));
      }
    }
  }
  // The same fold reached through a transposed view: [C, N] with strides [1, C], over dim 1.
  Tensor t = random_tensor({200, 40}, td::kFloat32).t();
  check_all_reductions(t, {1}, false, "transposed [40, 200] over dim 1");
  for (td::DType dtype : kFloating) {
    Tensor factors = random_tensor({33, 20}, dtype, Layout::Contiguous, 0.8, 1.25);
    check_near(td::prod(factors, 0), per_output(group(values(factors), factors.sizes(), {0}, false), ref_prod),
               rtol_for(dtype), 0, std::string("prod over dim 0, ") + td::dtype_name(dtype));
  }
}

TEST_CASE("reductions over expanded dims fold the repeated element once per position", "[cpu]") {
  tt::reseed(21);
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kInt64}) {
    Tensor row = random_tensor({20}, dtype, Layout::Contiguous, -3, 3).expand({50, 20});
    check_all_reductions(row, {0}, false,
                         std::string("a row expanded to [50, 20], over dim 0, ") + td::dtype_name(dtype));
    check_all_reductions(row, {1}, true,
                         std::string("a row expanded to [50, 20], over dim 1, ") + td::dtype_name(dtype));
    Tensor cube = random_tensor({5}, dtype, Layout::Strided, -3, 3).expand({3, 4, 5});
    check_all_reductions(cube, {0, 1}, false,
                         std::string("[5] expanded to [3, 4, 5], over dims 0 and 1, ") + td::dtype_name(dtype));
    Tensor column = random_tensor({3, 1}, dtype, Layout::Contiguous, -3, 3).expand({3, 40000});
    check_all_reductions(column, {1}, false,
                         std::string("[3, 1] expanded to [3, 40000], over dim 1, ") + td::dtype_name(dtype));
  }
}

TEST_CASE("float64 sums, means and norms of long constant folds stay within 1e-12 of the exact result", "[cpu]") {
  // Adding the same inexact value over and over rounds the same way each time: a fold that
  // accumulates element after element drifts by about one ulp per element, past 1e-12 within
  // 200000 elements for these values.
  for (double value : {1.0 / 3.0, 1.9557, 0.7, 1.1, 0.3}) {
    INFO("value " << value);
    for (const Shape& shape : {Shape{16384}, Shape{200000}, Shape{1000003}}) {
      Tensor x = td::full(shape, value, td::kFloat64);
      const std::string what = " over " + td::shape_str(shape);
      const Values exact_sum = {ref_sum(Values(shape[0], value))};
      check_near(td::sum(x), exact_sum, 1e-12, 0, "sum" + what);
      check_near(td::norm(x, 1), exact_sum, 1e-12, 0, "norm 1" + what);
      check_near(td::mean(x), {value}, 1e-12, 0, "mean" + what);
      check_near(td::norm(x, 2), {std::sqrt(static_cast<double>(shape[0])) * value}, 1e-12, 0, "norm 2" + what);
    }
    // The column-wise path, which folds all 200000 rows of each column in one task.
    Tensor m = td::full({200000, 16}, value, td::kFloat64);
    const double column = ref_sum(Values(200000, value));
    check_near(td::sum(m, {0}), Values(16, column), 1e-12, 0, "column sums");
    check_near(td::norm(m, 1, {0}), Values(16, column), 1e-12, 0, "column norms");
    check_near(td::mean(m, {0}), Values(16, value), 1e-12, 0, "column means");
  }
}

TEST_CASE("full reductions of 1000003 elements match a float64 reference, contiguous and strided", "[cpu]") {
  tt::reseed(18);
  for (td::DType dtype : kFloating) {
    for (Layout layout : {Layout::Contiguous, Layout::Strided}) {
      Tensor x = random_tensor({1000003}, dtype, layout);
      std::string what = describe(x.sizes(), {}, false, layout, dtype);
      check_all_reductions(x, {}, false, what);
      check_all_reductions(x, {0}, true, what + " (dim 0)");
      if (dtype == td::kFloat32 || dtype == td::kFloat64) {
        const Values v = values(x);
        check_near(td::logsumexp(x, {0}), {ref_logsumexp(v)}, rtol_for(dtype), rtol_for(dtype) * 3,
                   "logsumexp " + what);
        check_near(td::cumsum(x, 0), ref_cumsum(v, x.sizes(), 0), rtol_for(dtype), 1e-14 * abs_sum(v),
                   "cumsum " + what);
      }
    }
  }
  Tensor ints = random_tensor({1000003}, td::kInt64, Layout::Strided, -1000, 1000);
  check_all_reductions(ints, {}, false, "int64 strided");
}

TEST_CASE("reductions of a 0-dim tensor fold its one value", "[cpu]") {
  for (td::DType dtype : kFloating) {
    INFO(td::dtype_name(dtype));
    Tensor x = td::tensor(-2.5).to(dtype);
    check_equal(td::sum(x), {-2.5});
    check_equal(td::sum(x, {0}, true), {-2.5});
    CHECK(td::sum(x, {0}, true).dim() == 0);
    check_equal(td::mean(x), {-2.5});
    check_equal(td::prod(x, 0), {-2.5});
    check_equal(td::amax(x), {-2.5});
    auto [v, i] = td::max(x, -1);
    CHECK(v.dim() == 0);
    check_equal(v, {-2.5});
    check_equal(i, {0});
    check_equal(td::argmin(x), {0});
    check_equal(td::argmax(x, 0, true), {0});
    check_equal(td::var(x, {}, 0), {0});
    check_equal(td::var(x), {kNaN});
    check_equal(td::std(x, {}, 2), {kNaN});
    check_near(td::norm(x, 3), {2.5}, rtol_for(dtype), 0);
    check_equal(td::norm(x, 0), {1});
    check_equal(td::logsumexp(x, {}), {-2.5});
    check_equal(td::all(x), {1});
    check_equal(td::any(x * 0), {0});
    Tensor c = td::cumsum(x, 0);
    CHECK(c.dim() == 0);
    check_equal(c, {-2.5});
    Tensor p = td::cumprod(x, -1);
    CHECK(p.dim() == 0);
    check_equal(p, {-2.5});
  }
  Tensor n = td::tensor(int64_t{-3});
  check_equal(td::sum(n), {-3});
  check_equal(td::cumsum(td::tensor(true), 0), {1});
  CHECK(td::cumsum(td::tensor(true), 0).dtype() == td::kInt64);
}

TEST_CASE("reductions of empty tensors: sum 0, prod 1, mean and var NaN, and max raises", "[cpu]") {
  for (td::DType dtype : kFloating) {
    INFO(td::dtype_name(dtype));
    Tensor e = td::zeros({0}, dtype), rows = td::zeros({3, 0}, dtype), cols = td::zeros({0, 4}, dtype);
    check_equal(td::sum(e), {0});
    check_equal(td::sum(rows, {1}), {0, 0, 0});
    check_equal(td::sum(cols, {0}, true), {0, 0, 0, 0});
    CHECK(td::sum(cols, {0}, true).sizes() == Shape{1, 4});
    CHECK(td::sum(cols, {1}).sizes() == Shape{0});
    check_equal(td::prod(e), {1});
    check_equal(td::prod(rows, 1), {1, 1, 1});
    check_equal(td::mean(e), {kNaN});
    check_equal(td::mean(rows, {1}), {kNaN, kNaN, kNaN});
    check_equal(td::var(e), {kNaN});
    check_equal(td::norm(rows, 2, {1}), {0, 0, 0});
    check_equal(td::logsumexp(e, {0}), {-kInf});
    check_equal(td::all(e), {1});
    check_equal(td::any(e), {0});
    CHECK(td::cumsum(rows, 1).sizes() == Shape{3, 0});
    CHECK(td::cumprod(rows, 1).sizes() == Shape{3, 0});
    CHECK(td::cumprod(cols, 1).sizes() == Shape{0, 4});
    CHECK(td::amax(rows, {0}).sizes() == Shape{0});  // nothing to fold into no outputs is fine

    Snapshot before(e);
    check_error([&] { td::max(e); }, {"max", "empty"});
    check_error([&] { td::min(e); }, {"min", "empty"});
    check_error([&] { td::amax(cols, {0}); }, {"amax", "empty"});
    check_error([&] { td::amin(rows, {1}); }, {"amin", "empty"});
    check_error([&] { td::max(cols, 0); }, {"max", "empty"});
    check_error([&] { td::argmax(e); }, {"argmax", "empty"});
    check_error([&] { td::argmin(rows, 1); }, {"argmin", "empty"});
    check_error([&] { td::norm(e, kInf); }, {"norm", "empty"});
    before.check_unchanged(e);
  }
  for (td::DType dtype : kExact) {
    Tensor e = td::zeros({2, 0}, dtype);
    CHECK(td::sum(e).dtype() == td::kInt64);
    check_equal(td::sum(e), {0});
    check_equal(td::prod(e, 1), {1, 1});
    CHECK(td::prod(e, 1).dtype() == td::kInt64);
  }
}

TEST_CASE("output dtypes: sum, prod, cumsum and cumprod of integers give int64, all and any give bool or uint8", "[cpu]") {
  for (td::DType dtype : kExact) {
    INFO(td::dtype_name(dtype));
    Tensor x = td::ones({3, 4}, dtype);
    CHECK(td::sum(x).dtype() == td::kInt64);
    CHECK(td::sum(x, {1}).dtype() == td::kInt64);
    CHECK(td::prod(x).dtype() == td::kInt64);
    CHECK(td::prod(x, 0).dtype() == td::kInt64);
    CHECK(td::cumsum(x, 1).dtype() == td::kInt64);
    CHECK(td::cumprod(x, 0).dtype() == td::kInt64);
    CHECK(td::amax(x).dtype() == dtype);
    CHECK(std::get<0>(td::max(x, 1)).dtype() == dtype);
    CHECK(std::get<1>(td::max(x, 1)).dtype() == td::kInt64);
    CHECK(td::all(x).dtype() == (dtype == td::kUInt8 ? td::kUInt8 : td::kBool));
    CHECK(td::any(x, {0}).dtype() == (dtype == td::kUInt8 ? td::kUInt8 : td::kBool));
  }
  for (td::DType dtype : kFloating) {
    Tensor x = td::ones({3, 4}, dtype);
    CHECK(td::all(x).dtype() == td::kBool);
    CHECK(td::sum(x).dtype() == dtype);
    CHECK(td::var(x).dtype() == dtype);
    CHECK(td::norm(x).dtype() == dtype);
    CHECK(td::argmax(x).dtype() == td::kInt64);
  }
}

TEST_CASE("a column-wise sum folds each column's rows in blocks of 128, combined in order, also with outer dims",
          "[cpu]") {
  tt::reseed(23);
  // [2, 300, 40] over dim 1: two outer slices, three blocks of rows (128, 128, 44).
  Tensor x = random_tensor({2, 300, 40}, td::kFloat32);
  const auto v = values(x);
  std::vector<double> expected;
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t c = 0; c < 40; ++c) {
      double total = 0;
      for (int64_t r0 = 0; r0 < 300; r0 += 128) {
        double block = 0;
        for (int64_t r = r0; r < std::min<int64_t>(300, r0 + 128); ++r) {
          block += static_cast<double>(static_cast<float>(v[(o * 300 + r) * 40 + c]));
        }
        total = r0 == 0 ? block : total + block;
      }
      expected.push_back(static_cast<double>(static_cast<float>(total)));
    }
  }
  check_equal(td::sum(x, {1}), expected);  // bit for bit: the same additions in the same order
  // A flag in the last block of rows of one column, in a bool tensor.
  Tensor flags = td::zeros({300, 20}, td::kBool);
  set_element(flags, {290, 7}, 1);
  Values any(20, 0), all(20, 0);
  any[7] = 1;
  check_equal(td::any(flags, 0), any);
  check_equal(td::all(flags, 0), all);
  Tensor set = td::ones({300, 20}, td::kBool);
  set_element(set, {290, 7}, 0);
  Values all_set(20, 1);
  all_set[7] = 0;
  check_equal(td::all(set, 0), all_set);
}

TEST_CASE("reduction results are bitwise identical with 1, 2 and 4 threads", "[cpu]") {
  tt::reseed(19);
  Tensor big = random_tensor({1000003}, td::kFloat32);
  Tensor tall = random_tensor({4096, 33}, td::kFloat32);
  Tensor medium = random_tensor({100003}, td::kFloat32, Layout::Strided);
  Tensor wide = random_tensor({3, 50000}, td::kFloat64);
  Tensor flags = td::ones({1000003}, td::kBool);
  auto run_all = [&] {
    std::vector<Tensor> out = {td::sum(big),     td::sum(tall, {0}),  td::var(medium),
                               td::argmax(big),  td::argmin(wide, 1), td::mean(wide, {1}),
                               td::norm(big, 3), td::std(tall, {0}),  td::all(flags)};
    std::vector<std::vector<uint8_t>> result;
    for (const Tensor& t : out) result.push_back(bytes(t));
    return result;
  };
  std::vector<std::vector<uint8_t>> one;
  {
    tt::ThreadCount threads(1);
    one = run_all();
  }
  for (int n : {2, 4}) {
    tt::ThreadCount threads(n);
    INFO(n << " threads");
    auto many = run_all();
    REQUIRE(many.size() == one.size());
    for (size_t i = 0; i < one.size(); ++i) {
      INFO("result " << i);
      CHECK(many[i] == one[i]);
    }
  }
  // Against the reference too, so that agreeing on a wrong answer fails.
  check_near(td::sum(big), {ref_sum(values(big))}, 1e-5, 0);
  check_equal(td::argmax(big), {double(ref_arg(values(big), true))});
}

TEST_CASE("all and any over long folds are right on every repetition with several threads", "[cpu]") {
  tt::ThreadCount threads(std::max(2, td::num_threads()));
  Tensor ones = td::ones({1000003}, td::kBool);
  Tensor zeros = td::zeros({1000003}, td::kFloat32);
  Tensor rows = td::ones({4, 70000}, td::kUInt8);
  set_element(rows, {2, 69999}, 0);
  for (int rep = 0; rep < 300; ++rep) {
    INFO("repetition " << rep);
    REQUIRE(td::all(ones).item<bool>());
    REQUIRE(!td::any(zeros).item<bool>());
    REQUIRE(tt::values(td::all(rows, {1})) == Values{1, 1, 0, 1});
  }
}

// ---------------------------------------------------------------------------------------------
// bad input

TEST_CASE(
    "out-of-range dims, repeated dims and var of an integer tensor raise errors naming the op and leave the input "
    "unchanged",
    "[cpu]") {
  tt::reseed(20);
  Tensor x = random_tensor({4, 5, 6}, td::kFloat32, Layout::Permuted);
  Snapshot before(x);
  check_error([&] { td::sum(x, {3}); }, {"sum", "out of range"});
  check_error([&] { td::mean(x, {-4}); }, {"mean", "out of range"});
  check_error([&] { td::prod(x, 3); }, {"prod", "out of range"});
  check_error([&] { td::amax(x, {0, 7}); }, {"amax", "out of range"});
  check_error([&] { td::max(x, 3); }, {"max", "out of range"});
  check_error([&] { td::min(x, -4); }, {"min", "out of range"});
  check_error([&] { td::argmax(x, 3); }, {"argmax", "out of range"});
  check_error([&] { td::argmin(x, -5, true); }, {"argmin", "out of range"});
  check_error([&] { td::var(x, {3}); }, {"var", "out of range"});
  check_error([&] { td::std(x, {-9}); }, {"std", "out of range"});
  check_error([&] { td::norm(x, 2, {3}); }, {"norm", "out of range"});
  check_error([&] { td::logsumexp(x, {3}); }, {"logsumexp", "out of range"});
  check_error([&] { td::all(x, {3}); }, {"all", "out of range"});
  check_error([&] { td::any(x, {-4}); }, {"any", "out of range"});
  check_error([&] { td::cumsum(x, 3); }, {"cumsum", "out of range"});
  check_error([&] { td::sum(td::tensor(1.0), {1}); }, {"sum", "out of range"});

  check_error([&] { td::sum(x, {0, 0}); }, {"sum", "more than once"});
  check_error([&] { td::sum(x, {0, -3}); }, {"sum", "more than once"});
  check_error([&] { td::amin(x, {2, -1}); }, {"amin", "more than once"});
  check_error([&] { td::var(x, {1, 1}); }, {"var", "more than once"});
  check_error([&] { td::norm(x, 1, {0, 2, 0}); }, {"norm", "more than once"});
  check_error([&] { td::logsumexp(x, {1, -2}); }, {"logsumexp", "more than once"});
  check_error([&] { td::any(x, {2, 2}); }, {"any", "more than once"});
  check_error([&] { td::var(x, {}, -1); }, {"var", "correction"});
  before.check_unchanged(x);

  for (td::DType dtype : kExact) {
    Tensor ints = random_tensor({7, 5}, dtype, Layout::Strided, -5, 5);
    Snapshot ints_before(ints);
    check_error([&] { td::var(ints); }, {"var", td::dtype_name(dtype)});
    check_error([&] { td::std(ints, {1}); }, {"std", td::dtype_name(dtype)});
    check_error([&] { td::norm(ints); }, {"norm", td::dtype_name(dtype)});
    ints_before.check_unchanged(ints);
  }
}
