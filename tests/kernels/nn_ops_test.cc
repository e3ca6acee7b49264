// softmax/log_softmax, max and average pooling, im2col/col2im, each checked against a naive
// reference computed in double from the logical values of the inputs.
#include "tests/testing.h"

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "kernels/nn_ops.h"

namespace td = tandem;
namespace tt = td::testing;
using td::Shape;
using td::Tensor;
using tt::check_close;
using tt::check_equal;
using tt::check_error;
using tt::Snapshot;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor make(const std::vector<double>& v, const Shape& shape, td::DType dtype) {
  return td::tensor(v).to(dtype).view(shape);
}

// ---- softmax ----

std::vector<double> ref_softmax(const Tensor& x, int64_t d, bool log) {
  const auto v = tt::values(x);
  const Shape& shape = x.sizes();
  const int64_t size = shape[d];
  const int64_t inner = td::numel_of(Shape(shape.begin() + d + 1, shape.end()));
  const int64_t outer = static_cast<int64_t>(v.size()) / (size * inner);
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * size + k) * inner + i; };
      double max = -kInf;
      for (int64_t k = 0; k < size; ++k) max = std::max(max, v[at(k)]);
      double sum = 0;
      for (int64_t k = 0; k < size; ++k) sum += std::exp(v[at(k)] - max);
      for (int64_t k = 0; k < size; ++k) {
        out[at(k)] = log ? v[at(k)] - max - std::log(sum) : std::exp(v[at(k)] - max) / sum;
      }
    }
  }
  return out;
}

Tensor run_softmax(const Tensor& x, int64_t dim, bool log) {
  return log ? td::log_softmax(x, dim) : td::softmax(x, dim);
}

// ---- pooling ----

struct Pool {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

std::string describe(const Pool& p, const Shape& shape, const std::string& extra = "") {
  std::ostringstream out;
  out << "input " << td::shape_str(shape) << " kernel " << p.kh << "x" << p.kw << " stride " << p.sh << "x" << p.sw
      << " padding " << p.ph << "x" << p.pw << " dilation " << p.dh << "x" << p.dw
      << (p.ceil_mode ? " ceil" : " floor") << " " << extra;
  return out.str();
}

// The documented size: floor or ceil of (in + 2p - d(k-1) - 1) / s, plus 1, where a ceil-mode
// window must still start inside the input or the left padding.
int64_t ref_pooled(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double q = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(q) : std::floor(q)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct MaxPoolRef {
  Shape shape;
  std::vector<double> values, indices;
  bool empty_window = false;
};

// The first maximum in row-major window order wins; a NaN beats everything, and the last NaN is
// reported (PyTorch's order).
MaxPoolRef ref_max_pool(const Tensor& x, const Pool& p) {
  const auto v = tt::values(x);
  const int64_t h = x.sizes()[x.dim() - 2], w = x.sizes()[x.dim() - 1];
  const int64_t oh = ref_pooled(h, p.kh, p.sh, p.ph, p.dh, p.ceil_mode);
  const int64_t ow = ref_pooled(w, p.kw, p.sw, p.pw, p.dw, p.ceil_mode);
  MaxPoolRef r;
  r.shape = Shape(x.sizes().begin(), x.sizes().end() - 2);
  r.shape.push_back(oh);
  r.shape.push_back(ow);
  const int64_t planes = static_cast<int64_t>(v.size()) / (h * w);
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        bool found = false;
        double best = 0;
        int64_t best_at = -1;
        for (int64_t a = 0; a < p.kh; ++a) {
          for (int64_t b = 0; b < p.kw; ++b) {
            const int64_t y = i * p.sh - p.ph + a * p.dh, xw = j * p.sw - p.pw + b * p.dw;
            if (y < 0 || y >= h || xw < 0 || xw >= w) continue;
            const double value = v[plane * h * w + y * w + xw];
            if (!found || std::isnan(value) || (!std::isnan(best) && value > best)) {
              found = true;
              best = value;
              best_at = y * w + xw;
            }
          }
        }
        r.empty_window |= !found;
        r.values.push_back(best);
        r.indices.push_back(static_cast<double>(best_at));
      }
    }
  }
  return r;
}

std::vector<double> ref_avg_pool(const Tensor& x, const Pool& p, bool count_include_pad,
                                 std::optional<int64_t> divisor_override) {
  const auto v = tt::values(x);
  const int64_t h = x.sizes()[x.dim() - 2], w = x.sizes()[x.dim() - 1];
  const int64_t oh = ref_pooled(h, p.kh, p.sh, p.ph, 1, p.ceil_mode);
  const int64_t ow = ref_pooled(w, p.kw, p.sw, p.pw, 1, p.ceil_mode);
  const int64_t planes = static_cast<int64_t>(v.size()) / (h * w);
  std::vector<double> out;
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        double sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t y = i * p.sh - p.ph; y < i * p.sh - p.ph + p.kh; ++y) {
          for (int64_t xw = j * p.sw - p.pw; xw < j * p.sw - p.pw + p.kw; ++xw) {
            // Positions past the right/bottom padding (ceil mode) count for nothing.
            if (y >= h + p.ph || xw >= w + p.pw) continue;
            ++padded;
            if (y < 0 || y >= h || xw < 0 || xw >= w) continue;
            ++inside;
            sum += v[plane * h * w + y * w + xw];
          }
        }
        const int64_t divisor = divisor_override ? *divisor_override : count_include_pad ? padded : inside;
        out.push_back(sum / static_cast<double>(divisor));
      }
    }
  }
  return out;
}

// Every (kernel, stride, padding, dilation, ceil_mode) combination the pooling tests run;
// padding is 0 or half the kernel, the largest allowed.
std::vector<Pool> pool_cases(bool with_dilation) {
  std::vector<Pool> cases;
  const std::pair<int64_t, int64_t> kernels[] = {{1, 1}, {2, 2}, {3, 3}, {2, 3}, {3, 1}};
  const std::pair<int64_t, int64_t> strides[] = {{0, 0}, {1, 1}, {2, 2}, {2, 1}};  // 0: the kernel
  const std::pair<int64_t, int64_t> dilations[] = {{1, 1}, {2, 2}, {1, 2}};
  for (auto [kh, kw] : kernels) {
    for (auto [sh, sw] : strides) {
      for (bool half_padding : {false, true}) {
        for (auto [dh, dw] : dilations) {
          if (!with_dilation && (dh != 1 || dw != 1)) continue;
          for (bool ceil_mode : {false, true}) {
            cases.push_back(Pool{kh, kw, sh ? sh : kh, sw ? sw : kw, half_padding ? kh / 2 : 0,
                                 half_padding ? kw / 2 : 0, dh, dw, ceil_mode});
          }
        }
      }
    }
  }
  return cases;
}

// ---- im2col ----

int64_t ref_conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// The window positions [OH, OW] of p over an H x W image.
std::pair<int64_t, int64_t> ref_conv_out(int64_t h, int64_t w, const Pool& p) {
  return {ref_conv_out(h, p.kh, p.sh, p.ph, p.dh), ref_conv_out(w, p.kw, p.sw, p.pw, p.dw)};
}

// x as [N, C, H, W] (a 3-D x is one image).
std::vector<double> ref_im2col(const Tensor& x, const Pool& p) {
  const auto v = tt::values(x);
  const int64_t h = x.sizes()[x.dim() - 2], w = x.sizes()[x.dim() - 1], c = x.sizes()[x.dim() - 3];
  const int64_t n = x.dim() == 4 ? x.sizes()[0] : 1;
  const auto [oh, ow] = ref_conv_out(h, w, p);
  std::vector<double> out;
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t a = 0; a < p.kh; ++a) {
        for (int64_t b = 0; b < p.kw; ++b) {
          for (int64_t i = 0; i < oh; ++i) {
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t y = i * p.sh - p.ph + a * p.dh, xw = j * p.sw - p.pw + b * p.dw;
              const bool inside = y >= 0 && y < h && xw >= 0 && xw < w;
              out.push_back(inside ? v[((img * c + ch) * h + y) * w + xw] : 0);
            }
          }
        }
      }
    }
  }
  return out;
}

std::vector<double> ref_col2im(const Tensor& cols, int64_t n, int64_t c, int64_t h, int64_t w, const Pool& p) {
  const auto v = tt::values(cols);
  const auto [oh, ow] = ref_conv_out(h, w, p);
  std::vector<double> out(n * c * h * w, 0.0);
  int64_t k = 0;
  for (int64_t img = 0; img < n; ++img) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t a = 0; a < p.kh; ++a) {
        for (int64_t b = 0; b < p.kw; ++b) {
          for (int64_t i = 0; i < oh; ++i) {
            for (int64_t j = 0; j < ow; ++j, ++k) {
              const int64_t y = i * p.sh - p.ph + a * p.dh, xw = j * p.sw - p.pw + b * p.dw;
              if (y >= 0 && y < h && xw >= 0 && xw < w) out[((img * c + ch) * h + y) * w + xw] += v[k];
            }
          }
        }
      }
    }
  }
  return out;
}

std::vector<Pool> conv_cases() {
  std::vector<Pool> cases;
  const std::pair<int64_t, int64_t> kernels[] = {{1, 1}, {2, 3}, {3, 2}, {3, 3}};
  const std::pair<int64_t, int64_t> dilations[] = {{1, 1}, {2, 1}, {2, 2}};
  const std::pair<int64_t, int64_t> paddings[] = {{0, 0}, {1, 2}, {3, 0}};
  const std::pair<int64_t, int64_t> strides[] = {{1, 1}, {2, 1}, {2, 3}};
  for (auto [kh, kw] : kernels) {
    for (auto [dh, dw] : dilations) {
      for (auto [ph, pw] : paddings) {
        for (auto [sh, sw] : strides) cases.push_back(Pool{kh, kw, sh, sw, ph, pw, dh, dw, false});
      }
    }
  }
  return cases;
}

Tensor run_im2col(const Tensor& x, const Pool& p) {
  return td::im2col(x, {p.kh, p.kw}, {p.dh, p.dw}, {p.ph, p.pw}, {p.sh, p.sw});
}

Tensor run_col2im(const Tensor& cols, int64_t h, int64_t w, const Pool& p) {
  return td::col2im(cols, {h, w}, {p.kh, p.kw}, {p.dh, p.dw}, {p.ph, p.pw}, {p.sh, p.sw});
}

}  // namespace

// ---------------------------------------------------------------- softmax

TEST_CASE("softmax and log_softmax match the reference along every dim, in every layout and floating dtype",
          "[cpu]") {
  tt::reseed(101);
  // Along dims 0, 1, 2 the rows have 1, 7 and 33 elements.
  const Shape shape = {1, 7, 33};
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    for (tt::Layout layout : tt::all_layouts()) {
      Tensor x = tt::random_tensor(shape, dtype, layout, -4, 4);
      Snapshot before(x);
      for (int64_t dim = -3; dim < 3; ++dim) {
        const int64_t d = dim < 0 ? dim + 3 : dim;
        for (bool log : {false, true}) {
          Tensor out = run_softmax(x, dim, log);
          REQUIRE(out.sizes() == shape);
          CHECK(out.dtype() == dtype);
          check_close(out, ref_softmax(x, d, log), tt::rtol_for(dtype), 0,
                      std::string(log ? "log_softmax " : "softmax ") + td::dtype_name(dtype) + " " +
                          tt::layout_name(layout) + " dim " + std::to_string(dim));
        }
      }
      before.check_unchanged(x);
    }
  }
}

TEST_CASE("softmax of a single row of 1000003 elements", "[cpu]") {
  tt::reseed(102);
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kBFloat16, td::kFloat16}) {
    Tensor x = tt::random_tensor({1000003}, dtype, tt::Layout::Offset, -4, 4);
    for (bool log : {false, true}) {
      // Probabilities near 1e-6 are subnormal in float16, where no relative tolerance holds.
      if (dtype == td::kFloat16 && !log) continue;
      check_close(run_softmax(x, 0, log), ref_softmax(x, 0, log), tt::rtol_for(dtype), 0,
                  std::string(log ? "log_softmax " : "softmax ") + td::dtype_name(dtype));
    }
  }
}

TEST_CASE("softmax and log_softmax of values of magnitude 1000 neither overflow nor underflow to NaN", "[cpu]") {
  const std::vector<double> v = {1000, 999, -1000, 0, -1000, -1000, -999, -1000, 1000, -1000, 1000, 1000};
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    Tensor x = make(v, {3, 4}, dtype);
    for (int64_t dim : {0, 1}) {
      for (bool log : {false, true}) {
        Tensor out = run_softmax(x, dim, log);
        auto expected = ref_softmax(x, dim, log);
        for (double e : expected) REQUIRE(std::isfinite(e));
        check_close(out, expected, tt::rtol_for(dtype), 0,
                    std::string(log ? "log_softmax " : "softmax ") + td::dtype_name(dtype) + " dim " +
                        std::to_string(dim));
      }
    }
  }
}

TEST_CASE("a -inf in a row gets probability 0 and log-probability -inf", "[cpu]") {
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    Tensor x = make({-kInf, 1, 2, 0.5, -kInf, -3}, {2, 3}, dtype);
    Tensor p = td::softmax(x, 1);
    check_close(p, ref_softmax(x, 1, false), tt::rtol_for(dtype), 0, td::dtype_name(dtype));
    CHECK(tt::read(p, 0) == 0);
    Tensor lp = td::log_softmax(x, -1);
    check_close(lp, ref_softmax(x, 1, true), tt::rtol_for(dtype), 0, td::dtype_name(dtype));
    CHECK(tt::read(lp, 4) == -kInf);
    // Along dim 0 the -inf sits beside a finite value in every column.
    check_close(td::softmax(x, 0), ref_softmax(x, 0, false), tt::rtol_for(dtype), 0, td::dtype_name(dtype));
  }
}

TEST_CASE("a NaN anywhere in a row makes its softmax all NaN and leaves the other rows alone", "[cpu]") {
  // Rows of 19: two blocks of the row kernels' 8 lanes and a tail of 3; the NaN sits in the
  // first lane, a middle lane, the last lane of a block and the tail, one row each.
  const int64_t n = 19;
  const std::vector<int64_t> nan_at = {0, 5, 15, 17};
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kBFloat16}) {
    tt::reseed(106);
    Tensor x = tt::random_tensor({static_cast<int64_t>(nan_at.size()) + 1, n}, dtype);
    for (size_t r = 0; r < nan_at.size(); ++r) x.select(0, static_cast<int64_t>(r)).select(0, nan_at[r]).fill_(kNaN);
    for (bool log : {false, true}) {
      const auto out = tt::values(run_softmax(x, 1, log));
      const std::string what = std::string(log ? "log_softmax " : "softmax ") + td::dtype_name(dtype);
      for (size_t r = 0; r < nan_at.size(); ++r) {
        for (int64_t k = 0; k < n; ++k) {
          INFO(what << " row " << r << " column " << k);
          CHECK(std::isnan(out[r * n + static_cast<size_t>(k)]));
        }
      }
      const Tensor clean = x.select(0, static_cast<int64_t>(nan_at.size())).unsqueeze(0);
      check_close(run_softmax(clean, 1, log), ref_softmax(clean, 1, log), tt::rtol_for(dtype), 0, what);
    }
  }
}

TEST_CASE("softmax of an integer tensor raises", "[cpu]") {
  Tensor x = td::arange(6).view({2, 3});
  Snapshot before(x);
  check_error([&] { td::softmax(x, 1); }, {"softmax", "floating", "int64"});
  check_error([&] { td::log_softmax(x.to(td::kInt32), 0); }, {"log_softmax", "floating", "int32"});
  check_error([&] { td::softmax(td::ones({2, 3}), 2); }, {"softmax", "dim 2"});
  before.check_unchanged(x);
}

TEST_CASE("softmax and log_softmax with a dtype cast the input first; the gradient comes back in its dtype", "[cpu]") {
  tt::reseed(44);
  const Tensor x = tt::random_tensor({3, 5}, td::kBFloat16, tt::Layout::Permuted);
  for (bool log : {false, true}) {
    INFO((log ? "log_softmax" : "softmax"));
    auto run = [log](const Tensor& t, std::optional<td::DType> dtype = std::nullopt) {
      return log ? t.log_softmax(-1, dtype) : td::softmax(t, -1, dtype);
    };
    Tensor wide = run(x, td::kFloat32);
    CHECK(wide.dtype() == td::kFloat32);
    check_equal(wide, tt::values(run(x.to(td::kFloat32))));
    check_equal(run(x, td::kFloat64), tt::values(run(x.to(td::kFloat64))));
    // Integers softmax once cast, as PyTorch's: softmax(arange(3), dtype=float64).
    check_equal(run(td::arange(3), td::kFloat64), tt::values(run(td::arange(3.0).to(td::kFloat64))));
    Tensor leaf = x.detach().requires_grad_(true);
    Tensor weights = td::arange(15.0).view({3, 5});
    (run(leaf, td::kFloat32) * weights).sum().backward();
    REQUIRE(leaf.grad().defined());
    CHECK(leaf.grad().dtype() == td::kBFloat16);
    Tensor reference = x.to(td::kFloat32).requires_grad_(true);
    (run(reference) * weights).sum().backward();
    check_equal(leaf.grad(), tt::values(reference.grad().to(td::kBFloat16)));
    check_error([&] { run(td::arange(3), td::kInt32); }, {log ? "log_softmax" : "softmax", "floating", "int32"});
    check_error([&] { run(Tensor(), td::kFloat32); }, {log ? "log_softmax" : "softmax", "undefined"});
    check_error([&] { log ? x.log_softmax(2, td::kFloat32) : x.softmax(2, td::kFloat32); },
                {log ? "log_softmax" : "softmax", "dim 2"});
  }
}

// ---------------------------------------------------------------- max pooling

TEST_CASE("max_pool2d_with_indices matches the reference over kernel, stride, padding, dilation and ceil_mode",
          "[cpu]") {
  tt::reseed(103);
  const std::vector<Shape> shapes = {{2, 3, 8, 9}, {3, 7, 33}, {1, 1, 1, 7}, {1, 5, 6}};
  int64_t compared = 0;
  for (const Shape& shape : shapes) {
    for (tt::Layout layout : tt::all_layouts()) {
      // Few distinct integers make ties common; the float input has none.
      for (td::DType dtype : {td::kFloat32, td::kInt32}) {
        Tensor x = dtype == td::kInt32 ? tt::random_tensor(shape, dtype, layout, 0, 3)
                                       : tt::random_tensor(shape, dtype, layout);
        Snapshot before(x);
        for (const Pool& p : pool_cases(true)) {
          const std::string what = describe(p, shape, tt::layout_name(layout) + " " + td::dtype_name(dtype));
          INFO(what);
          const int64_t h = shape[shape.size() - 2], w = shape.back();
          const bool too_small = ref_pooled(h, p.kh, p.sh, p.ph, p.dh, p.ceil_mode) < 1 ||
                                 ref_pooled(w, p.kw, p.sw, p.pw, p.dw, p.ceil_mode) < 1;
          auto run = [&] {
            return td::max_pool2d_with_indices(x, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw},
                                               p.ceil_mode);
          };
          if (too_small) {
            check_error(run, {"max_pool2d", "too small"});
            continue;
          }
          MaxPoolRef ref = ref_max_pool(x, p);
          // A dilated window can fall wholly into the padding; what it yields is not specified.
          if (ref.empty_window) continue;
          auto [out, indices] = run();
          REQUIRE(out.sizes() == ref.shape);
          REQUIRE(indices.sizes() == ref.shape);
          CHECK(out.dtype() == dtype);
          CHECK(indices.dtype() == td::kInt64);
          check_equal(out, ref.values, what);
          check_equal(indices, ref.indices, what + " indices");
          ++compared;
        }
        before.check_unchanged(x);
      }
    }
  }
  CHECK(compared > 1000);
}

TEST_CASE("max_pool2d in ceil mode keeps a partial last window but none that starts in the padding", "[cpu]") {
  tt::reseed(104);
  Tensor x = tt::random_tensor({1, 1, 8, 8}, td::kFloat64);
  CHECK(td::max_pool2d(x, 3, 2, 1, 1, false).sizes() == Shape{1, 1, 4, 4});
  Tensor ceil = td::max_pool2d(x, 3, 2, 1, 1, true);
  REQUIRE(ceil.sizes() == Shape{1, 1, 5, 5});
  // The last window covers row 7 (and the padding row 8) only.
  check_equal(ceil, ref_max_pool(x, Pool{3, 3, 2, 2, 1, 1, 1, 1, true}).values);
  // (5 + 2 - 1 - 1) / 2 rounds up to 3, so 4 windows, but the 4th would start in the padding.
  Tensor y = tt::random_tensor({2, 5, 5}, td::kFloat32);
  CHECK(td::max_pool2d(y, 2, 2, 1, 1, true).sizes() == Shape{2, 3, 3});
  CHECK(td::avg_pool2d(y, 2, 2, 1, true).sizes() == Shape{2, 3, 3});
}

TEST_CASE("max_pool2d indices are flat h*W+w within the plane and the first maximum wins on ties", "[cpu]") {
  // Plane 0 is all equal: every window reports its top-left element. Plane 1 has two 9s.
  std::vector<double> v(2 * 4 * 5, 1.0);
  v[20 + 1 * 5 + 3] = 9;
  v[20 + 2 * 5 + 2] = 9;
  Tensor x = make(v, {1, 2, 4, 5}, td::kFloat32);
  auto [out, indices] = td::max_pool2d_with_indices(x, 2, 2);
  REQUIRE(indices.sizes() == Shape{1, 2, 2, 2});
  check_equal(indices, {0, 2, 10, 12, 0, 8, 10, 12});
  check_equal(out, {1, 1, 1, 1, 1, 9, 1, 9});
  auto [out3, indices3] = td::max_pool2d_with_indices(x.select(1, 1), 3, 1);
  // Windows starting in column 0 miss (1, 3); the others hold both 9s, and (1, 3) comes first.
  check_equal(indices3, {12, 8, 8, 12, 8, 8});
  check_equal(out3, {9, 9, 9, 9, 9, 9});
  // Of two NaNs in a window, the last in row-major order is reported, as PyTorch 2.15 does
  // (indices [3] with stride 2, [3, 1, 3, 8] with stride 1, [3] for the 3x3 window), by the
  // 2x2 windows of stride 2 and by the general loops alike.
  for (td::DType dtype : {td::kFloat32, td::kBFloat16}) {
    Tensor nans = make({1, kNaN, 5, kNaN, 2, 1, 3, 0, 4}, {1, 1, 3, 3}, dtype);
    auto [out2, indices2] = td::max_pool2d_with_indices(nans, 2, 2);
    check_equal(indices2, {3});
    CHECK(std::isnan(tt::values(out2)[0]));
    auto [out3x3, indices3x3] = td::max_pool2d_with_indices(nans, 3, 1);
    check_equal(indices3x3, {3});
    auto [out_s1, indices_s1] = td::max_pool2d_with_indices(nans, 2, 1);
    check_equal(indices_s1, {3, 1, 3, 8});
    const auto values_s1 = tt::values(out_s1);
    CHECK((std::isnan(values_s1[0]) && std::isnan(values_s1[1]) && std::isnan(values_s1[2])));
    CHECK(values_s1[3] == 4);
  }
}

TEST_CASE("max_pool2d propagates NaN", "[cpu]") {
  tt::reseed(105);
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kBFloat16}) {
    Tensor x = tt::random_tensor({1, 2, 6, 7}, dtype);
    x.select(1, 0).select(1, 2).select(1, 3).fill_(kNaN);  // (2, 3) of plane 0
    x.select(1, 1).select(1, 5).select(1, 6).fill_(kNaN);  // the last element of plane 1
    x.select(1, 1).select(1, 4).select(1, 6).fill_(kNaN);
    for (const Pool& p : {Pool{2, 2, 2, 2, 0, 0, 1, 1, false}, Pool{3, 3, 1, 1, 1, 1, 1, 1, true}}) {
      INFO(describe(p, x.sizes(), td::dtype_name(dtype)));
      auto [out, indices] = td::max_pool2d_with_indices(x, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, 1, p.ceil_mode);
      MaxPoolRef ref = ref_max_pool(x, p);
      check_equal(out, ref.values);
      // Wherever the result is NaN, the index must point at a NaN of the input.
      const auto xv = tt::values(x);
      const int64_t per_plane = out.numel() / 2;
      int64_t nans = 0;
      for (int64_t k = 0; k < out.numel(); ++k) {
        if (!std::isnan(tt::read(out, k))) continue;
        ++nans;
        const int64_t at = static_cast<int64_t>(tt::read(indices, k));
        CHECK(std::isnan(xv[(k / per_plane) * 42 + at]));
      }
      CHECK(nans > 0);
    }
  }
}

TEST_CASE("max_pool2d_backward adds each gradient at its index, overlapping windows included, as autograd's ops do",
          "[cpu]") {
  tt::reseed(115);
  int64_t compared = 0;
  for (const Shape& shape : {Shape{2, 3, 8, 9}, Shape{3, 7, 33}}) {
    for (td::DType dtype : {td::kFloat64, td::kFloat32, td::kBFloat16, td::kInt32}) {
      Tensor x = tt::random_tensor(shape, dtype);
      for (const Pool& p : pool_cases(true)) {
        const std::string what = describe(p, shape, td::dtype_name(dtype));
        INFO(what);
        const int64_t h = shape[shape.size() - 2], w = shape.back();
        if (ref_pooled(h, p.kh, p.sh, p.ph, p.dh, p.ceil_mode) < 1 ||
            ref_pooled(w, p.kw, p.sw, p.pw, p.dw, p.ceil_mode) < 1 || ref_max_pool(x, p).empty_window) {
          continue;
        }
        auto [out, indices] =
            td::max_pool2d_with_indices(x, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw}, p.ceil_mode);
        Tensor g = tt::random_tensor(out.sizes(), dtype, tt::Layout::Contiguous, -3, 3);
        // Reference: each gradient added at its index, in output order, in float64. Beside it the sum of
        // the magnitudes and the count, which bound the rounding of a sum taken in float32.
        const auto gv = tt::values(g), iv = tt::values(indices);
        const int64_t plane = h * w, out_plane = out.size(-2) * out.size(-1);
        std::vector<double> expected(static_cast<size_t>(x.numel()), 0.0), magnitude(expected), count(expected);
        for (size_t k = 0; k < gv.size(); ++k) {
          const auto at =
              static_cast<size_t>(static_cast<int64_t>(k) / out_plane * plane + static_cast<int64_t>(iv[k]));
          expected[at] += gv[k];
          magnitude[at] += std::abs(gv[k]);
          count[at] += 1;
        }
        Snapshot g_before(g), indices_before(indices);
        Tensor grad = td::kernels::max_pool2d_backward(g, indices, x.sizes());
        REQUIRE(grad.sizes() == x.sizes());
        CHECK(grad.dtype() == dtype);
        if (dtype == td::kFloat64 || dtype == td::kInt32) {
          check_equal(grad, expected, what);
        } else {
          // n terms summed in float32 are within gamma(n - 1) sum|g| of the exact sum, gamma(k) = k u / (1 - k u)
          // with u = 2^-24; bfloat16 sums in float32 and rounds once more, by at most 2^-8 of that sum.
          const auto got = tt::values(grad);
          const double u = std::ldexp(1.0, -24), last_rounding = dtype == td::kBFloat16 ? std::ldexp(1.0, -8) : 0.0;
          for (size_t i = 0; i < got.size(); ++i) {
            const double k = std::max(count[i] - 1, 0.0);
            const double summing = k * u / (1 - k * u) * magnitude[i];
            const double bound = summing + last_rounding * (std::abs(expected[i]) + summing);
            if (std::abs(got[i] - expected[i]) > bound) {
              FAIL_CHECK("element " << i << ": got " << got[i] << ", expected " << expected[i] << " within " << bound);
              break;
            }
          }
        }
        g_before.check_unchanged(g);
        indices_before.check_unchanged(indices);
        if (dtype == td::kFloat64) {  // autograd: the kernel without create_graph, scatter_add with it
          Tensor leaf = x.clone().requires_grad_();
          Tensor y = td::max_pool2d(leaf, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw}, p.ceil_mode);
          Tensor plain = td::autograd::grad({y}, {leaf}, {g}, true, false)[0];
          Tensor through_ops = td::autograd::grad({y}, {leaf}, {g}, true, true)[0];
          check_equal(plain, expected, what + " autograd");
          check_equal(through_ops.detach(), expected, what + " autograd, create_graph");
        }
        ++compared;
      }
    }
  }
  CHECK(compared > 300);
}

TEST_CASE("max_pool2d_backward skips index -1, rejects indices outside the plane, of another dtype or shape, and "
          "changes nothing",
          "[cpu]") {
  Tensor x = td::arange(32.0).reshape({1, 2, 4, 4});
  auto [out, indices] = td::max_pool2d_with_indices(x, 2);
  Tensor g = td::ones(out.sizes());
  Snapshot g_before(g), indices_before(indices);
  Tensor bad = indices.clone();
  bad.view({-1})[3].fill_(16);
  check_error([&] { td::kernels::max_pool2d_backward(g, bad, x.sizes()); },
              {"max_pool2d_backward", "index 16", "4x4"});
  check_error([&] { td::kernels::max_pool2d_backward(g, indices.to(td::kInt32), x.sizes()); },
              {"max_pool2d_backward", "int64", "int32"});
  check_error([&] { td::kernels::max_pool2d_backward(g.narrow(3, 0, 1), indices, x.sizes()); },
              {"max_pool2d_backward", "[1, 2, 2, 1]", "[1, 2, 2, 2]"});
  check_error([&] { td::kernels::max_pool2d_backward(g, indices, {1, 3, 4, 4}); },
              {"max_pool2d_backward", "[1, 2, 2, 2]", "[1, 3, 4, 4]"});
  check_error([&] { td::kernels::max_pool2d_backward(Tensor(), indices, x.sizes()); }, {"max_pool2d_backward", "grad"});
  Tensor below = indices.clone();
  below.view({-1})[5].fill_(-2);
  check_error([&] { td::kernels::max_pool2d_backward(g, below, x.sizes()); }, {"max_pool2d_backward", "index -2"});
  // -1 (a window wholly in the padding) passes nothing on; the rest land at their indices.
  Tensor none = indices.clone();
  none.view({-1})[0].fill_(-1);
  Tensor grad = td::kernels::max_pool2d_backward(g * 2, none, x.sizes());
  std::vector<double> expected(32, 0.0);
  const auto at = tt::values(none);
  for (size_t k = 1; k < at.size(); ++k) expected[k / 4 * 16 + static_cast<size_t>(at[k])] = 2;
  check_equal(grad, expected);
  g_before.check_unchanged(g);
  indices_before.check_unchanged(indices);
}

// ---------------------------------------------------------------- average pooling

TEST_CASE("avg_pool2d matches the reference with count_include_pad, divisor_override and ceil_mode", "[cpu]") {
  tt::reseed(106);
  const std::vector<Shape> shapes = {{2, 3, 8, 9}, {3, 7, 33}, {1, 1, 1, 7}};
  for (const Shape& shape : shapes) {
    for (tt::Layout layout : tt::all_layouts()) {
      for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
        Tensor x = tt::random_tensor(shape, dtype, layout);
        for (const Pool& p : pool_cases(false)) {
          for (bool include_pad : {true, false}) {
            for (std::optional<int64_t> divisor : {std::optional<int64_t>{}, std::optional<int64_t>{5}}) {
              const std::string what =
                  describe(p, shape,
                           tt::layout_name(layout) + " " + td::dtype_name(dtype) +
                               (include_pad ? " include_pad" : " exclude_pad") +
                               (divisor ? " divisor " + std::to_string(*divisor) : ""));
              INFO(what);
              const int64_t h = shape[shape.size() - 2], w = shape.back();
              auto run = [&] {
                return td::avg_pool2d(x, {p.kh, p.kw}, {p.sh, p.sw}, {p.ph, p.pw}, p.ceil_mode, include_pad, divisor);
              };
              if (ref_pooled(h, p.kh, p.sh, p.ph, 1, p.ceil_mode) < 1 ||
                  ref_pooled(w, p.kw, p.sw, p.pw, 1, p.ceil_mode) < 1) {
                check_error(run, {"avg_pool2d", "too small"});
                continue;
              }
              check_close(run(), ref_avg_pool(x, p, include_pad, divisor), tt::rtol_for(dtype), 0, what);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("avg_pool2d on a 3x3 image, worked by hand", "[cpu]") {
  Tensor x = td::arange(9, td::kFloat64).view({1, 3, 3});
  check_equal(td::avg_pool2d(x, 2, 2, 0, true), {2, 3.5, 6.5, 8});
  check_equal(td::avg_pool2d(x, 2, 2, 1, false, true), {0, 0.75, 2.25, 6});
  check_equal(td::avg_pool2d(x, 2, 2, 1, false, false), {0, 1.5, 4.5, 6});
  check_equal(td::avg_pool2d(x, 2, 2, 1, false, true, 3), {0, 1, 3, 8});
}

// ---------------------------------------------------------------- pooling errors

TEST_CASE("pooling rejects too much padding, too small an output and a 2-D input", "[cpu]") {
  Tensor x = td::ones({1, 1, 8, 8});
  Tensor small = td::ones({1, 1, 2, 2});
  Tensor flat = td::ones({8, 8});
  Snapshot xs(x), ss(small), fs(flat);
  check_error([&] { td::max_pool2d(x, 3, 1, 2); }, {"max_pool2d", "padding", "half"});
  check_error([&] { td::max_pool2d(x, {2, 4}, 1, {1, 3}); }, {"max_pool2d", "padding", "[1, 3]"});
  check_error([&] { td::avg_pool2d(x, 2, 2, 2); }, {"avg_pool2d", "padding", "half"});
  check_error([&] { td::max_pool2d_with_indices(small, 3); }, {"max_pool2d", "too small", "[1, 1, 2, 2]"});
  check_error([&] { td::avg_pool2d(small, 3); }, {"avg_pool2d", "too small"});
  check_error([&] { td::max_pool2d(small, 2, 1, 0, 2); }, {"max_pool2d", "too small"});
  check_error([&] { td::max_pool2d(flat, 2); }, {"max_pool2d", "3-D", "[8, 8]"});
  check_error([&] { td::avg_pool2d(flat, 2); }, {"avg_pool2d", "3-D", "[8, 8]"});
  check_error([&] { td::avg_pool2d(td::ones({1, 4, 4}, td::kInt64), 2); }, {"avg_pool2d", "floating", "int64"});
  check_error([&] { td::avg_pool2d(x, 2, 2, 0, false, true, 0); }, {"avg_pool2d: divisor_override must not be zero"});
  xs.check_unchanged(x);
  ss.check_unchanged(small);
  fs.check_unchanged(flat);
}

// ---------------------------------------------------------------- im2col, col2im

TEST_CASE("im2col matches the reference with padding, stride, dilation and non-square kernels", "[cpu]") {
  tt::reseed(107);
  const std::vector<Shape> shapes = {{2, 3, 7, 9}, {3, 7, 9}, {1, 1, 1, 7}};
  for (const Shape& shape : shapes) {
    for (tt::Layout layout : tt::all_layouts()) {
      for (td::DType dtype : {td::kFloat32, td::kInt64}) {
        Tensor x = tt::random_tensor(shape, dtype, layout, -100, 100);
        Snapshot before(x);
        for (const Pool& p : conv_cases()) {
          const std::string what = describe(p, shape, tt::layout_name(layout) + " " + td::dtype_name(dtype));
          INFO(what);
          const int64_t h = shape[shape.size() - 2], w = shape.back(), c = shape[shape.size() - 3];
          const auto [oh, ow] = ref_conv_out(h, w, p);
          if (h + 2 * p.ph < p.dh * (p.kh - 1) + 1 || w + 2 * p.pw < p.dw * (p.kw - 1) + 1) {
            check_error([&] { run_im2col(x, p); }, {"im2col", "does not fit"});
            continue;
          }
          Tensor cols = run_im2col(x, p);
          Shape expected_shape = {c * p.kh * p.kw, oh * ow};
          if (shape.size() == 4) expected_shape.insert(expected_shape.begin(), shape[0]);
          REQUIRE(cols.sizes() == expected_shape);
          CHECK(cols.dtype() == dtype);
          check_equal(cols, ref_im2col(x, p), what);
        }
        before.check_unchanged(x);
      }
    }
  }
}

TEST_CASE("col2im sums overlapping fields as the reference does", "[cpu]") {
  tt::reseed(108);
  for (const Pool& p : conv_cases()) {
    const int64_t n = 2, c = 3, h = 7, w = 9;
    const auto [oh, ow] = ref_conv_out(h, w, p);
    if (oh < 1 || ow < 1) continue;
    for (tt::Layout layout : tt::all_layouts()) {
      Tensor cols = tt::random_tensor({n, c * p.kh * p.kw, oh * ow}, td::kFloat64, layout);
      const std::string what = describe(p, {n, c, h, w}, tt::layout_name(layout));
      Tensor out = run_col2im(cols, h, w, p);
      REQUIRE(out.sizes() == Shape{n, c, h, w});
      // At most kh*kw terms of magnitude 2 meet in a pixel: rounding stays far below 1e-13.
      check_close(out, ref_col2im(cols, n, c, h, w, p), tt::rtol_for(td::kFloat64), 1e-13, what);
      Tensor out2 = run_col2im(cols.select(0, 1), h, w, p);
      REQUIRE(out2.sizes() == Shape{c, h, w});
      check_close(out2, ref_col2im(cols.select(0, 1), 1, c, h, w, p), tt::rtol_for(td::kFloat64), 1e-13, what);
    }
  }
}

TEST_CASE("col2im is the adjoint of im2col", "[cpu]") {
  tt::reseed(109);
  const int64_t n = 2, c = 3, h = 7, w = 9;
  for (const Pool& p : conv_cases()) {
    const auto [oh, ow] = ref_conv_out(h, w, p);
    if (oh < 1 || ow < 1) continue;
    INFO(describe(p, {n, c, h, w}));
    Tensor x = tt::random_tensor({n, c, h, w}, td::kFloat64);
    Tensor y = tt::random_tensor({n, c * p.kh * p.kw, oh * ow}, td::kFloat64);
    const auto ax = tt::values(run_im2col(x, p)), yv = tt::values(y);
    const auto xv = tt::values(x), aty = tt::values(run_col2im(y, h, w, p));
    REQUIRE(ax.size() == yv.size());
    REQUIRE(xv.size() == aty.size());
    double lhs = 0, rhs = 0;
    for (size_t k = 0; k < ax.size(); ++k) lhs += ax[k] * yv[k];
    for (size_t k = 0; k < xv.size(); ++k) rhs += xv[k] * aty[k];
    CHECK(std::abs(lhs - rhs) <= 1e-10);
  }
}

TEST_CASE("im2col_matrix and col2im_matrix are im2col and col2im with the batch beside the positions", "[cpu]") {
  tt::reseed(110);
  const int64_t n = 3, c = 2, h = 7, w = 9;
  for (const Pool& p : conv_cases()) {
    const auto [oh, ow] = ref_conv_out(h, w, p);
    if (oh < 1 || ow < 1) continue;
    const int64_t fields = c * p.kh * p.kw, width = oh * ow;
    for (tt::Layout layout : tt::all_layouts()) {
      const std::string what = describe(p, {n, c, h, w}, tt::layout_name(layout));
      INFO(what);
      Tensor x = tt::random_tensor({n, c, h, w}, td::kFloat32, layout);
      Snapshot before(x);
      Tensor matrix = td::im2col_matrix(x, {p.kh, p.kw}, {p.dh, p.dw}, {p.ph, p.pw}, {p.sh, p.sw});
      REQUIRE(matrix.sizes() == Shape{fields, n * width});
      // Element (r, k * L + l) of the matrix is element (k, r, l) of im2col's columns.
      const std::vector<double> ref = ref_im2col(x, p);
      std::vector<double> expected;
      for (int64_t r = 0; r < fields; ++r) {
        for (int64_t k = 0; k < n; ++k) {
          for (int64_t l = 0; l < width; ++l) expected.push_back(ref[(k * fields + r) * width + l]);
        }
      }
      check_equal(matrix, expected, what);
      before.check_unchanged(x);

      Tensor m = tt::random_tensor({fields, n * width}, td::kFloat64, layout);
      Snapshot m_before(m);
      Tensor out = td::col2im_matrix(m, n, {h, w}, {p.kh, p.kw}, {p.dh, p.dw}, {p.ph, p.pw}, {p.sh, p.sw});
      REQUIRE(out.sizes() == Shape{n, c, h, w});
      Tensor as_cols = m.view({fields, n, width}).transpose(0, 1).contiguous();
      check_close(out, ref_col2im(as_cols, n, c, h, w, p), tt::rtol_for(td::kFloat64), 1e-13, what);
      m_before.check_unchanged(m);
      if (layout != tt::Layout::Contiguous) continue;
      // Columns of a wider matrix: rows apart by more than N*L, read in place.
      Tensor wide = tt::random_tensor({fields, n * width + 5}, td::kFloat64);
      Tensor part = wide.narrow(1, 2, n * width);
      Tensor from_part = td::col2im_matrix(part, n, {h, w}, {p.kh, p.kw}, {p.dh, p.dw}, {p.ph, p.pw}, {p.sh, p.sw});
      check_close(from_part, ref_col2im(part.contiguous().view({fields, n, width}).transpose(0, 1).contiguous(), n, c,
                                        h, w, p),
                  tt::rtol_for(td::kFloat64), 1e-13, what + " narrowed");
    }
  }
  // An empty batch.
  Tensor none = td::im2col_matrix(td::zeros({0, 2, 5, 5}), 3, 1, 1, 1);
  CHECK(none.sizes() == Shape{18, 0});
  CHECK(td::col2im_matrix(none, 0, {5, 5}, 3, 1, 1, 1).sizes() == Shape{0, 2, 5, 5});
  // Bad input: the op, the shapes and what was expected.
  check_error([&] { td::im2col_matrix(td::zeros({2, 5, 5}), 3, 1, 1, 1); }, {"im2col_matrix", "4-D", "[2, 5, 5]"});
  check_error([&] { td::im2col_matrix(td::zeros({1, 1, 2, 2}), 3, 1, 0, 1); }, {"im2col_matrix", "does not fit"});
  check_error([&] { td::col2im_matrix(td::zeros({18, 49}), 2, {5, 5}, 3, 1, 1, 1); },
              {"col2im_matrix", "[18, 49]", "2*25"});
  check_error([&] { td::col2im_matrix(td::zeros({17, 50}), 2, {5, 5}, 3, 1, 1, 1); }, {"col2im_matrix", "[17, 50]"});
  check_error([&] { td::col2im_matrix(td::zeros({9, 0}), 2, {2, 2}, 3, 1, 0, 1); }, {"col2im_matrix", "does not fit"});
}

TEST_CASE("col2im of im2col of all-ones counts the windows covering each pixel", "[cpu]") {
  const int64_t h = 7, w = 9;
  for (const Pool& p : conv_cases()) {
    const auto [oh, ow] = ref_conv_out(h, w, p);
    if (oh < 1 || ow < 1) continue;
    const std::string what = describe(p, {2, h, w});
    std::vector<double> count(h * w, 0.0);
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        for (int64_t a = 0; a < p.kh; ++a) {
          for (int64_t b = 0; b < p.kw; ++b) {
            const int64_t y = i * p.sh - p.ph + a * p.dh, xw = j * p.sw - p.pw + b * p.dw;
            if (y >= 0 && y < h && xw >= 0 && xw < w) count[y * w + xw] += 1;
          }
        }
      }
    }
    std::vector<double> expected = count;
    expected.insert(expected.end(), count.begin(), count.end());  // two channels
    Tensor ones = td::ones({2, h, w});
    check_equal(run_col2im(run_im2col(ones, p), h, w, p), expected, what);
  }
}

TEST_CASE("im2col and col2im reject a kernel that does not fit and a wrong column count", "[cpu]") {
  Tensor x = td::ones({1, 1, 3, 3});
  Snapshot xs(x);
  check_error([&] { td::im2col(x, 5); }, {"im2col", "does not fit", "[1, 1, 3, 3]", "5x5"});
  check_error([&] { td::im2col(x, 2, 3); }, {"im2col", "does not fit"});
  check_error([&] { td::im2col(td::ones({3, 3}), 2); }, {"im2col", "3-D", "[3, 3]"});
  CHECK(td::im2col(x, 5, 1, 1).sizes() == Shape{1, 25, 1});
  xs.check_unchanged(x);

  // 4x4 with a 2x2 kernel has 3x3 = 9 windows.
  Tensor cols = td::ones({1, 4, 10});
  Snapshot cs(cols);
  check_error([&] { td::col2im(cols, {4, 4}, 2); }, {"col2im", "10 columns", "3x3 = 9"});
  check_error([&] { td::col2im(td::ones({1, 5, 9}), {4, 4}, 2); }, {"col2im", "divisible", "2x2 = 4"});
  cs.check_unchanged(cols);
}

TEST_CASE("a max-pool window that lies wholly in the padding gives -inf and index -1", "[cpu]") {
  // H = W = 1, kernel 2 dilated by 2, padding 1: the window's taps fall at -1 and 1, both padding.
  auto [out, idx] = td::max_pool2d_with_indices(td::ones({1, 1, 1, 1}), 2, 1, 1, 2);
  REQUIRE(out.numel() == 1);
  CHECK(out.item<float>() == -INFINITY);
  CHECK(idx.item<int64_t>() == -1);
}
