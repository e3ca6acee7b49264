// mm, bmm, matmul and addmm against a triple loop in double over the operands' elements read
// through their strides: every dtype, operands contiguous, transposed, sliced with a step and in
// every random_tensor layout, sizes down to 1 and an empty inner dim, and the errors.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/linalg.h"
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
using tt::Snapshot;
using tt::values;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

using Values = std::vector<double>;

const std::vector<td::DType> kDTypes = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16, td::kInt64};
const std::vector<td::DType> kFloating = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16};

struct Size {
  int64_t n, k, m;
};

const std::vector<Size> kSizes = {{1, 1, 1},   {1, 7, 1}, {7, 1, 7},    {7, 33, 1}, {1, 33, 7},
                                  {33, 7, 33}, {7, 7, 7}, {33, 33, 33}, {33, 1, 7}, {5, 64, 3}};

// Values in [-2, 2), integers in [-10, 10): exact in every dtype's products and the reference.
Tensor operand(const Shape& shape, td::DType dtype, Layout layout = Layout::Contiguous) {
  return td::is_floating(dtype) ? random_tensor(shape, dtype, layout) : random_tensor(shape, dtype, layout, -10, 10);
}

// How a [rows, cols] operand is stored.
enum class Form { Contiguous, Transposed, RowStep, ColumnStep, Permuted, Strided, Offset };

std::string form_name(Form f) {
  switch (f) {
    case Form::Contiguous:
      return "contiguous";
    case Form::Transposed:
      return "transposed";
    case Form::RowStep:
      return "rows with step 2";
    case Form::ColumnStep:
      return "columns with step 2";
    case Form::Permuted:
      return "permuted";
    case Form::Strided:
      return "strided";
    case Form::Offset:
      return "offset";
  }
  return "?";
}

Tensor matrix(int64_t rows, int64_t cols, td::DType dtype, Form form) {
  switch (form) {
    case Form::Contiguous:
      return operand({rows, cols}, dtype);
    case Form::Transposed:
      return operand({cols, rows}, dtype).t();
    case Form::RowStep:
      return operand({2 * rows, cols}, dtype).slice(0, 0, std::nullopt, 2);
    case Form::ColumnStep:
      return operand({rows, 2 * cols}, dtype).slice(1, 1, std::nullopt, 2);
    case Form::Permuted:
      return operand({rows, cols}, dtype, Layout::Permuted);
    case Form::Strided:
      return operand({rows, cols}, dtype, Layout::Strided);
    case Form::Offset:
      return operand({rows, cols}, dtype, Layout::Offset);
  }
  return Tensor();
}

double max_abs(const Values& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

struct Tol {
  double rtol, atol;
};

// float64 products against the float64 reference to ~1e-12; float32 to 1e-5 plus rounding that
// grows like sqrt(K) on the scale of the products; float16/bfloat16 compute in float32 and round
// once, so rtol_for(dtype) plus the float32 term; integers exactly. `extra` adds a magnitude the
// result also carries (beta * bias).
Tol product_tol(td::DType dtype, int64_t k, double amax, double bmax, double extra = 0) {
  const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(k, 1))) * amax * bmax + extra;
  switch (dtype) {
    case td::kFloat64:
      return {1e-12, scale * 1e-14};
    case td::kFloat32:
      return {1e-5, scale * 1e-6};
    case td::kFloat16:  // plus half the subnormal spacing: a tiny product rounds on that absolute grid
      return {rtol_for(dtype), scale * 1e-6 + std::ldexp(1.0, -25)};
    case td::kBFloat16:
      return {rtol_for(dtype), scale * 1e-6};
    default:
      return {0, 0};
  }
}

// c[i, j] = sum_p a[i, p] * b[p, j] on row-major [n, k] and [k, m] values, summed in long double:
// summed in order in float64, the reference's own rounding over k = 10^6 terms reached the
// tolerance a float64 product is held to (seed 2892009325660444271 failed the 10^6 dot product).
Values ref_mm(const Values& a, const Values& b, int64_t n, int64_t k, int64_t m) {
  Values c(n * m, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      long double s = 0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<long double>(a[i * k + p]) * b[p * m + j];
      c[i * m + j] = static_cast<double>(s);
    }
  }
  return c;
}

struct Product {
  Shape shape;
  Values values;
};

// NumPy's matmul on the operands' values: 1-D operands gain a dim that is dropped again, batch
// dims broadcast.
Product ref_matmul(const Tensor& a, const Tensor& b) {
  Shape sa = a.sizes(), sb = b.sizes();
  const Values va = values(a), vb = values(b);
  const bool a_vector = sa.size() == 1, b_vector = sb.size() == 1;
  if (a_vector) sa.insert(sa.begin(), 1);
  if (b_vector) sb.push_back(1);
  const int64_t n = sa[sa.size() - 2], k = sa.back(), m = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t nb = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), nb - ba.size(), 1);
  bb.insert(bb.begin(), nb - bb.size(), 1);
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) batch[i] = std::max(ba[i], bb[i]);
  Product p;
  p.shape = batch;
  if (!a_vector) p.shape.push_back(n);
  if (!b_vector) p.shape.push_back(m);
  for (int64_t flat = 0; flat < td::numel_of(batch); ++flat) {
    std::vector<int64_t> index = tt::unravel(flat, batch), ia(nb), ib(nb);
    for (size_t i = 0; i < nb; ++i) {
      ia[i] = ba[i] == 1 ? 0 : index[i];
      ib[i] = bb[i] == 1 ? 0 : index[i];
    }
    const int64_t oa = tt::ravel(ia, ba) * n * k, ob = tt::ravel(ib, bb) * k * m;
    Values block = ref_mm(Values(va.begin() + oa, va.begin() + oa + n * k),
                          Values(vb.begin() + ob, vb.begin() + ob + k * m), n, k, m);
    p.values.insert(p.values.end(), block.begin(), block.end());
  }
  return p;
}

void check_product(const Tensor& out, const Product& expected, td::DType dtype, int64_t k, double amax, double bmax,
                   const std::string& what, double extra = 0) {
  INFO(what);
  CHECK(out.dtype() == dtype);
  REQUIRE(out.sizes() == expected.shape);
  Tol tol = product_tol(dtype, k, amax, bmax, extra);
  check_close(out, expected.values, tol.rtol, tol.atol, what);
}

std::string describe(td::DType dtype, const Size& s, const std::string& forms) {
  std::ostringstream o;
  o << td::dtype_name(dtype) << " [" << s.n << ", " << s.k << "] @ [" << s.k << ", " << s.m << "] " << forms;
  return o.str();
}

// mm over every dtype and size with a stored as `fa` and b as `fb`.
void check_mm_forms(Form fa, Form fb) {
  for (td::DType dtype : kDTypes) {
    for (const Size& s : kSizes) {
      Tensor a = matrix(s.n, s.k, dtype, fa), b = matrix(s.k, s.m, dtype, fb);
      REQUIRE(a.sizes() == Shape{s.n, s.k});
      REQUIRE(b.sizes() == Shape{s.k, s.m});
      const Values va = values(a), vb = values(b);
      Snapshot sa(a), sb(b);
      Tensor out = td::mm(a, b);
      check_product(out, {{s.n, s.m}, ref_mm(va, vb, s.n, s.k, s.m)}, dtype, s.k, max_abs(va), max_abs(vb),
                    describe(dtype, s, form_name(fa) + " x " + form_name(fb)));
      sa.check_unchanged(a);
      sb.check_unchanged(b);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// mm

TEST_CASE("mm of contiguous operands matches a triple-loop reference for every dtype and size", "[cpu]") {
  tt::reseed(101);
  check_mm_forms(Form::Contiguous, Form::Contiguous);
}

TEST_CASE("mm of transposed operands, as a.t() gives them, matches the reference", "[cpu]") {
  tt::reseed(102);
  check_mm_forms(Form::Transposed, Form::Contiguous);
  check_mm_forms(Form::Contiguous, Form::Transposed);
  check_mm_forms(Form::Transposed, Form::Transposed);
}

TEST_CASE("mm of operands sliced with a step along rows or columns matches the reference", "[cpu]") {
  tt::reseed(103);
  for (Form fa : {Form::RowStep, Form::ColumnStep}) {
    for (Form fb : {Form::Contiguous, Form::Transposed, Form::RowStep, Form::ColumnStep}) {
      check_mm_forms(fa, fb);
      check_mm_forms(fb, fa);
    }
  }
}

TEST_CASE("mm of operands in every random_tensor layout matches the reference", "[cpu]") {
  tt::reseed(104);
  const std::vector<Form> layouts = {Form::Contiguous, Form::Permuted, Form::Strided, Form::Offset};
  for (Form fa : layouts) {
    for (Form fb : layouts) check_mm_forms(fa, fb);
  }
}

TEST_CASE("products big enough to be split across threads, by rows or by columns, match the reference", "[cpu]") {
  tt::reseed(106);
  tt::ThreadCount threads(3);  // an odd count: bands of uneven size on any machine
  // [n, k] @ [k, m]: tall (split by rows), wide (split by columns), and a band count not
  // dividing evenly, with a last band shorter than the rest.
  const std::vector<Size> sizes = {{300, 70, 90}, {40, 100, 333}, {129, 64, 65}};
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    for (const Size& s : sizes) {
      for (Form fa : {Form::Contiguous, Form::Transposed}) {
        for (Form fb : {Form::Contiguous, Form::Transposed}) {
          Tensor a = matrix(s.n, s.k, dtype, fa), b = matrix(s.k, s.m, dtype, fb);
          const Values va = values(a), vb = values(b);
          check_product(td::mm(a, b), {{s.n, s.m}, ref_mm(va, vb, s.n, s.k, s.m)}, dtype, s.k, max_abs(va),
                        max_abs(vb), describe(dtype, s, form_name(fa) + " x " + form_name(fb)));
        }
      }
    }
    // Many products in a batch go one per thread.
    Tensor a = operand({7, 70, 30}, dtype), b = operand({7, 30, 50}, dtype);
    const Values va = values(a), vb = values(b);
    Values expected;
    for (int64_t i = 0; i < 7; ++i) {
      Values block = ref_mm(Values(va.begin() + i * 70 * 30, va.begin() + (i + 1) * 70 * 30),
                            Values(vb.begin() + i * 30 * 50, vb.begin() + (i + 1) * 30 * 50), 70, 30, 50);
      expected.insert(expected.end(), block.begin(), block.end());
    }
    check_product(td::bmm(a, b), {{7, 70, 50}, expected}, dtype, 30, max_abs(va), max_abs(vb), "bmm, 7 batches");
  }
}

TEST_CASE("mm with an empty inner dim gives zeros, and with an empty outer dim an empty result", "[cpu]") {
  for (td::DType dtype : kDTypes) {
    INFO(td::dtype_name(dtype));
    Tensor out = td::mm(td::zeros({3, 0}, dtype), td::zeros({0, 4}, dtype));
    CHECK(out.dtype() == dtype);
    REQUIRE(out.sizes() == Shape{3, 4});
    check_equal(out, Values(12, 0.0));
    CHECK(td::mm(operand({0, 5}, dtype), operand({5, 4}, dtype)).sizes() == Shape{0, 4});
    CHECK(td::mm(operand({3, 5}, dtype), operand({5, 0}, dtype)).sizes() == Shape{3, 0});
    Tensor batched = td::bmm(td::zeros({2, 3, 0}, dtype), td::zeros({2, 0, 4}, dtype));
    REQUIRE(batched.sizes() == Shape{2, 3, 4});
    check_equal(batched, Values(24, 0.0));
    Tensor dot = td::matmul(td::zeros({0}, dtype), td::zeros({0}, dtype));
    CHECK(dot.dim() == 0);
    check_equal(dot, {0});
  }
}

TEST_CASE("a [1, 1000003] x [1000003, 1] product matches a float64 dot product", "[cpu]") {
  tt::reseed(105);
  const int64_t k = 1000003;
  for (td::DType dtype : kDTypes) {
    for (bool stepped : {false, true}) {
      // Stepped: row and column every other element of a larger storage.
      Tensor a = stepped ? operand({1, 2 * k}, dtype).slice(1, 0, std::nullopt, 2) : operand({1, k}, dtype);
      Tensor b = stepped ? operand({2 * k, 1}, dtype).slice(0, 1, std::nullopt, 2) : operand({k, 1}, dtype);
      const Values va = values(a), vb = values(b);
      check_product(td::mm(a, b), {{1, 1}, ref_mm(va, vb, 1, k, 1)}, dtype, k, max_abs(va), max_abs(vb),
                    std::string(td::dtype_name(dtype)) + (stepped ? " stepped" : " contiguous"));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// bmm

TEST_CASE("bmm matches per-batch triple-loop products for every dtype, layout and a transposed or sliced batch",
          "[cpu]") {
  tt::reseed(106);
  for (td::DType dtype : kDTypes) {
    for (int64_t batch : {1, 3}) {
      for (const Size& s : {Size{1, 1, 1}, Size{7, 33, 1}, Size{33, 7, 33}, Size{1, 33, 7}, Size{7, 7, 7}}) {
        std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> inputs;
        for (Layout la : tt::all_layouts()) {
          for (Layout lb : tt::all_layouts()) {
            inputs.push_back({tt::layout_name(la) + " x " + tt::layout_name(lb),
                              {operand({batch, s.n, s.k}, dtype, la), operand({batch, s.k, s.m}, dtype, lb)}});
          }
        }
        inputs.push_back(
            {"transposed x transposed",
             {operand({batch, s.k, s.n}, dtype).transpose(1, 2), operand({batch, s.m, s.k}, dtype).transpose(1, 2)}});
        inputs.push_back({"batch step 2 x column step 2",
                          {operand({2 * batch, s.n, s.k}, dtype).slice(0, 0, std::nullopt, 2),
                           operand({batch, s.k, 2 * s.m}, dtype).slice(2, 0, std::nullopt, 2)}});
        for (const auto& [forms, operands] : inputs) {
          const Tensor& a = operands.first;
          const Tensor& b = operands.second;
          Snapshot sa(a), sb(b);
          Product expected = ref_matmul(a, b);
          CHECK(expected.shape == Shape{batch, s.n, s.m});
          check_product(td::bmm(a, b), expected, dtype, s.k, max_abs(values(a)), max_abs(values(b)),
                        "bmm batch " + std::to_string(batch) + " " + describe(dtype, s, forms));
          sa.check_unchanged(a);
          sb.check_unchanged(b);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// matmul

namespace {

// matmul of operands of these shapes, in the given layout, for every dtype.
void check_matmul(const Shape& sa, const Shape& sb, const Shape& expected_shape) {
  for (td::DType dtype : kDTypes) {
    for (Layout layout : tt::all_layouts()) {
      Tensor a = operand(sa, dtype, layout), b = operand(sb, dtype, layout);
      Snapshot before_a(a), before_b(b);
      Product expected = ref_matmul(a, b);
      REQUIRE(expected.shape == expected_shape);
      const int64_t k = sa.back();
      std::ostringstream what;
      what << td::dtype_name(dtype) << " " << td::shape_str(sa) << " @ " << td::shape_str(sb) << " "
           << tt::layout_name(layout);
      check_product(td::matmul(a, b), expected, dtype, k, max_abs(values(a)), max_abs(values(b)), what.str());
      check_product(a.matmul(b), expected, dtype, k, max_abs(values(a)), max_abs(values(b)), what.str() + " (method)");
      before_a.check_unchanged(a);
      before_b.check_unchanged(b);
    }
  }
}

}  // namespace

TEST_CASE("matmul of two 1-D operands is their dot product as a 0-dim tensor", "[cpu]") {
  tt::reseed(107);
  check_matmul({1}, {1}, {});
  check_matmul({7}, {7}, {});
  check_matmul({33}, {33}, {});
}

TEST_CASE("matmul of a 2-D and a 1-D operand, and of a 1-D and a 2-D operand, drops the vector's dim", "[cpu]") {
  tt::reseed(108);
  check_matmul({7, 33}, {33}, {7});
  check_matmul({1, 7}, {7}, {1});
  check_matmul({33}, {33, 7}, {7});
  check_matmul({7}, {7, 1}, {1});
}

TEST_CASE("matmul of two 2-D operands is mm", "[cpu]") {
  tt::reseed(109);
  check_matmul({7, 33}, {33, 1}, {7, 1});
  check_matmul({33, 7}, {7, 33}, {33, 33});
}

TEST_CASE("matmul of a 3-D and a 2-D or 1-D operand folds the batch into rows", "[cpu]") {
  tt::reseed(110);
  check_matmul({3, 7, 33}, {33, 5}, {3, 7, 5});
  check_matmul({2, 3, 7, 4}, {4, 6}, {2, 3, 7, 6});
  check_matmul({3, 7, 33}, {33}, {3, 7});
  check_matmul({4, 1, 7}, {7, 1}, {4, 1, 1});
}

TEST_CASE("matmul of a 2-D and a 3-D operand broadcasts the matrix over the batch", "[cpu]") {
  tt::reseed(111);
  check_matmul({7, 33}, {3, 33, 5}, {3, 7, 5});
  check_matmul({1, 4}, {2, 4, 6}, {2, 1, 6});
}

TEST_CASE("matmul broadcasts batch dims: [2, 1, 3, 4] @ [5, 4, 6] gives [2, 5, 3, 6]", "[cpu]") {
  tt::reseed(112);
  check_matmul({2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6});
  check_matmul({3, 1, 7, 4}, {1, 2, 4, 5}, {3, 2, 7, 5});
  check_matmul({2, 3, 5, 7}, {2, 3, 7, 4}, {2, 3, 5, 4});
}

TEST_CASE("matmul of a 1-D and a 3-D operand gives one row per batch", "[cpu]") {
  tt::reseed(113);
  check_matmul({33}, {3, 33, 7}, {3, 7});
  check_matmul({4}, {2, 5, 4, 6}, {2, 5, 6});
  check_matmul({3, 5, 4}, {4}, {3, 5});
}

// ---------------------------------------------------------------------------------------------
// addmm

TEST_CASE("addmm gives beta * bias + alpha * a @ b with the bias broadcast, for every dtype and operand form",
          "[cpu]") {
  tt::reseed(114);
  struct Coefficients {
    double beta, alpha;
  };
  for (td::DType dtype : kDTypes) {
    const bool floating = td::is_floating(dtype);
    // Coefficients exact in every dtype.
    const std::vector<Coefficients> coefficients =
        floating ? std::vector<Coefficients>{{1, 1}, {0.5, -2}, {-1.5, 0.25}, {2, 0}}
                 : std::vector<Coefficients>{{1, 1}, {2, -3}, {-1, 0}};
    for (const Size& s : {Size{1, 1, 1}, Size{7, 33, 1}, Size{33, 7, 33}, Size{1, 33, 7}, Size{7, 1, 7}}) {
      for (const Shape& bias_shape : {Shape{s.n, s.m}, Shape{s.m}, Shape{1, s.m}, Shape{s.n, 1}, Shape{}}) {
        for (Form form : {Form::Contiguous, Form::Transposed, Form::ColumnStep, Form::Strided}) {
          for (const Coefficients& c : coefficients) {
            Tensor bias = operand(bias_shape, dtype, form == Form::Strided ? Layout::Strided : Layout::Contiguous);
            Tensor a = matrix(s.n, s.k, dtype, form), b = matrix(s.k, s.m, dtype, form);
            const Values va = values(a), vb = values(b), vbias = values(bias);
            Snapshot before_bias(bias), before_a(a), before_b(b);
            Product expected{{s.n, s.m}, ref_mm(va, vb, s.n, s.k, s.m)};
            for (int64_t i = 0; i < s.n; ++i) {
              for (int64_t j = 0; j < s.m; ++j) {
                // The bias element that broadcasts to (i, j).
                int64_t at = 0;
                if (bias_shape.size() == 1) at = j;
                if (bias_shape.size() == 2)
                  at = (bias_shape[0] == 1 ? 0 : i) * bias_shape[1] + (bias_shape[1] == 1 ? 0 : j);
                double& e = expected.values[i * s.m + j];
                e = c.beta * vbias[at] + c.alpha * e;
              }
            }
            std::ostringstream what;
            what << "addmm beta " << c.beta << " alpha " << c.alpha << " bias " << td::shape_str(bias_shape) << " "
                 << describe(dtype, s, form_name(form));
            Tensor out = floating ? td::addmm(bias, a, b, c.beta, c.alpha)
                                  : td::addmm(bias, a, b, static_cast<int64_t>(c.beta), static_cast<int64_t>(c.alpha));
            check_product(out, expected, dtype, s.k, std::abs(c.alpha) * max_abs(va), max_abs(vb), what.str(),
                          std::abs(c.beta) * max_abs(vbias));
            before_bias.check_unchanged(bias);
            before_a.check_unchanged(a);
            before_b.check_unchanged(b);
          }
        }
      }
    }
  }
}

TEST_CASE("integer products and sums in mm and addmm wrap as PyTorch's do", "[cpu]") {
  // PyTorch 2.15's values; in signed arithmetic these would overflow, which is undefined.
  constexpr int64_t k62 = int64_t{1} << 62;
  const Tensor a = td::tensor({k62, 3, 1, 2}).view({2, 2}), b = td::tensor({4, 1, k62, 5}).view({2, 2});
  const Tensor p = td::mm(a, b);
  CHECK(p[0][0].item<int64_t>() == -k62);
  CHECK(p[0][1].item<int64_t>() == k62 + 15);
  CHECK(p[1][0].item<int64_t>() == std::numeric_limits<int64_t>::min() + 4);
  CHECK(p[1][1].item<int64_t>() == 11);
  CHECK(td::mm(td::full({1, 2}, 1 << 30, td::kInt32), td::full({2, 1}, 2, td::kInt32)).item<int32_t>() == 0);
  CHECK(td::addmm(td::tensor({k62}).view({1, 1}), td::tensor({k62}).view({1, 1}), td::tensor({int64_t{1}}).view({1, 1}),
                  2, 3)
            .item<int64_t>() == k62);
}

TEST_CASE("addmm with beta = 0 ignores a NaN bias, also where the product is a vector", "[cpu]") {
  tt::reseed(115);
  for (td::DType dtype : kFloating) {
    for (const Size& s : {Size{7, 33, 5}, Size{33, 7, 1}, Size{1, 33, 7}, Size{4, 0, 3}}) {
      Tensor bias = td::full({s.n, s.m}, kNaN, dtype);
      Tensor a = operand({s.n, s.k}, dtype), b = operand({s.k, s.m}, dtype);
      const Values va = values(a), vb = values(b);
      Values expected = ref_mm(va, vb, s.n, s.k, s.m);
      for (double& e : expected) e *= 2;
      check_product(td::addmm(bias, a, b, 0, 2), {{s.n, s.m}, expected}, dtype, s.k, 2 * max_abs(va), max_abs(vb),
                    describe(dtype, s, "NaN bias, beta 0, alpha 2"));
      check_product(td::addmm(bias[0], a.t().t(), b, 0.0, 2.0), {{s.n, s.m}, expected}, dtype, s.k, 2 * max_abs(va),
                    max_abs(vb), describe(dtype, s, "NaN row bias, beta 0.0, alpha 2.0"));
    }
  }
}

TEST_CASE("addmm_out accumulates into a block of rows in place; beta 0 ignores its NaNs; bad out refused", "[cpu]") {
  tt::reseed(117);
  for (td::DType dtype : kDTypes) {
    for (const Size& s : {Size{7, 33, 5}, Size{1, 7, 33}, Size{33, 1, 1}, Size{4, 0, 3}}) {
      // Rows [2, 2 + n) of a larger matrix; its other rows must stay as they are.
      Tensor whole = operand({s.n + 3, s.m}, dtype);
      const Tensor before = whole.clone();
      const Tensor block = whole.narrow(0, 2, s.n);
      const Tensor a = matrix(s.n, s.k, dtype, Form::Contiguous), b = matrix(s.k, s.m, dtype, Form::Transposed);
      const Values va = values(a), vb = values(b), old = values(block);
      const bool floating = td::is_floating(dtype);
      Values expected = ref_mm(va, vb, s.n, s.k, s.m);
      for (size_t i = 0; i < expected.size(); ++i) expected[i] = (floating ? 0.5 : 2) * old[i] + 3 * expected[i];
      floating ? td::kernels::addmm_out(block, a, b, 0.5, 3.0) : td::kernels::addmm_out(block, a, b, 2, 3);
      check_product(block, {{s.n, s.m}, expected}, dtype, s.k, 3 * max_abs(va), max_abs(vb),
                    describe(dtype, s, "into a block of rows"), 2 * max_abs(old));
      check_equal(whole.narrow(0, 0, 2), values(before.narrow(0, 0, 2)));
      check_equal(whole.narrow(0, 2 + s.n, 1), values(before.narrow(0, 2 + s.n, 1)));
      if (!floating) continue;
      Tensor nan = td::full({s.n, s.m}, kNaN, dtype);
      td::kernels::addmm_out(nan, a, b, 0, 1);
      check_product(nan, {{s.n, s.m}, ref_mm(va, vb, s.n, s.k, s.m)}, dtype, s.k, max_abs(va), max_abs(vb),
                    describe(dtype, s, "beta 0 over NaN"));
    }
  }
  const Tensor a = operand({3, 4}, td::kFloat32), b = operand({4, 5}, td::kFloat32);
  Tensor out = td::zeros({5, 3}, td::kFloat32);
  const Snapshot kept(out);
  check_error([&] { td::kernels::addmm_out(out.t(), a, b); }, {"addmm_out", "contiguous [3, 5] float32", "not contiguous"});
  check_error([&] { td::kernels::addmm_out(out, a, b); }, {"addmm_out", "[5, 3]"});
  check_error([&] { td::kernels::addmm_out(td::zeros({3, 5}, td::kFloat64), a, b); }, {"addmm_out", "float64"});
  check_error([&] { td::kernels::addmm_out(out, a, b.t()); }, {"addmm_out", "[3, 4] and [5, 4]"});
  kept.check_unchanged(out);
}

TEST_CASE("addmm with an empty inner dim gives beta * bias", "[cpu]") {
  tt::reseed(116);
  for (td::DType dtype : kDTypes) {
    INFO(td::dtype_name(dtype));
    const bool floating = td::is_floating(dtype);
    Tensor bias = operand({3, 4}, dtype, Layout::Permuted);
    Tensor a = td::zeros({3, 0}, dtype), b = td::zeros({0, 4}, dtype);
    const double beta = floating ? 0.5 : 2;
    Values expected = values(bias);
    for (double& e : expected) e *= beta;
    Tensor out = floating ? td::addmm(bias, a, b, beta, 3.0) : td::addmm(bias, a, b, 2, 3);
    CHECK(out.dtype() == dtype);
    REQUIRE(out.sizes() == Shape{3, 4});
    check_close(out, expected, rtol_for(dtype), 0);
    Values row = values(bias[1]);
    Values row_expected;
    for (int64_t i = 0; i < 3; ++i) {
      for (double e : row) row_expected.push_back(beta * e);
    }
    Tensor broadcast = floating ? td::addmm(bias[1], a, b, beta, 1.0) : td::addmm(bias[1], a, b, 2, 1);
    check_close(broadcast, row_expected, rtol_for(dtype), 0);
    check_equal(td::addmm(bias, a, b, 0, 1), Values(12, 0.0));
  }
}

// ---------------------------------------------------------------------------------------------
// errors

TEST_CASE("mm, bmm, matmul and addmm reject mismatched inner dims with both shapes in the message", "[cpu]") {
  tt::reseed(117);
  Tensor a = operand({2, 3}, td::kFloat32), b = operand({4, 5}, td::kFloat32, Layout::Permuted);
  Tensor a3 = operand({2, 2, 3}, td::kFloat32), b3 = operand({2, 4, 5}, td::kFloat32);
  Tensor bias = operand({2, 5}, td::kFloat32);
  Snapshot sa(a), sb(b), sa3(a3), sb3(b3), sbias(bias);
  check_error([&] { td::mm(a, b); }, {"mm", "2x3 and 4x5"});
  check_error([&] { td::matmul(a, b); }, {"2x3 and 4x5"});
  check_error([&] { td::bmm(a3, b3); }, {"bmm", "2x2x3 and 2x4x5"});
  check_error([&] { td::bmm(a3, operand({3, 3, 5}, td::kFloat32)); }, {"bmm", "2x2x3 and 3x3x5"});
  check_error([&] { td::matmul(a3, b); }, {"matmul", "2x2x3 and 4x5"});
  check_error([&] { td::matmul(a, b3); }, {"matmul", "2x3 and 2x4x5"});
  check_error([&] { td::matmul(operand({3}, td::kFloat32), operand({4}, td::kFloat32)); }, {"matmul", "3", "4"});
  check_error([&] { td::matmul(a, operand({4}, td::kFloat32)); }, {"2x3 and 4)"});
  check_error([&] { td::addmm(bias, a, b); }, {"addmm", "2x3 and 4x5"});
  check_error([&] { td::addmm(operand({3, 5}, td::kFloat32), a, operand({3, 5}, td::kFloat32)); }, {"addmm", "[3, 5]"});
  check_error([&] { td::matmul(operand({2, 2, 3}, td::kFloat32), operand({3, 3, 4}, td::kFloat32)); }, {"matmul"});
  sa.check_unchanged(a);
  sb.check_unchanged(b);
  sa3.check_unchanged(a3);
  sb3.check_unchanged(b3);
  sbias.check_unchanged(bias);
}

TEST_CASE("mismatched dtypes, 1-D operands to mm and bool operands raise errors and leave the operands unchanged",
          "[cpu]") {
  tt::reseed(118);
  Tensor f = operand({2, 3}, td::kFloat32), d = operand({3, 4}, td::kFloat64), h = operand({3, 4}, td::kFloat16);
  Tensor v = operand({3}, td::kFloat32), m = operand({3, 4}, td::kFloat32);
  Tensor p = td::ones({2, 3}, td::kBool), q = td::ones({3, 4}, td::kBool);
  Tensor bias64 = operand({2, 4}, td::kFloat64);
  std::vector<std::pair<Tensor, Snapshot>> before;
  for (const Tensor& t : {f, d, h, v, m, p, q, bias64}) before.emplace_back(t, Snapshot(t));

  check_error([&] { td::mm(f, d); }, {"mm", "float32", "float64"});
  check_error([&] { td::mm(f, h); }, {"mm", "float32", "float16"});
  check_error([&] { td::matmul(f, d); }, {"matmul", "float32", "float64"});
  check_error([&] { td::bmm(f.unsqueeze(0), d.unsqueeze(0)); }, {"bmm", "float32", "float64"});
  check_error([&] { td::addmm(bias64, f, m); }, {"addmm", "bias", "float64", "float32"});
  check_error([&] { td::addmm(operand({2, 4}, td::kFloat32), f, d); }, {"addmm", "float32", "float64"});

  check_error([&] { td::mm(v, m); }, {"mm", "2-D", "[3]"});
  check_error([&] { td::mm(f, v); }, {"mm", "2-D", "[3]"});
  check_error([&] { td::bmm(f, m); }, {"bmm", "3-D"});
  check_error([&] { td::addmm(bias64.to(td::kFloat32), v, m); }, {"addmm", "2-D"});
  check_error([&] { td::matmul(td::tensor(2.0f), m); }, {"matmul", "1 dimension"});

  check_error([&] { td::mm(p, q); }, {"mm", "bool"});
  check_error([&] { td::matmul(p, q); }, {"matmul", "bool"});
  check_error([&] { td::bmm(p.unsqueeze(0), q.unsqueeze(0)); }, {"bmm", "bool"});
  check_error([&] { td::addmm(td::ones({2, 4}, td::kBool), p, q); }, {"addmm", "bool"});

  for (auto& [t, snapshot] : before) snapshot.check_unchanged(t);
}

TEST_CASE("matmul of a batch with an empty inner dim gives zeros, and its gradient is empty", "[cpu]") {
  Tensor a = td::zeros({2, 3, 0}, td::kFloat64).requires_grad_();
  Tensor out = td::matmul(a, td::zeros({0, 4}, td::kFloat64));
  REQUIRE(out.sizes() == Shape{2, 3, 4});
  check_equal(out, Values(24, 0.0));
  Tensor by_vector = td::matmul(a, td::zeros({0}, td::kFloat64));
  REQUIRE(by_vector.sizes() == Shape{2, 3});
  check_equal(by_vector, Values(6, 0.0));
  out.sum().backward();
  CHECK(a.grad().sizes() == Shape{2, 3, 0});
}

TEST_CASE("a product with a size over 2^31 - 1 is refused before the BLAS sees it cut to 32 bits", "[cpu]") {
  const int64_t big = int64_t{1} << 31;
  float one = 1, out = 0;
  // The check comes first: no memory of that size is read (the pointers are to one float).
  check_error([&] { td::kernels::cpu::gemm<float>(false, false, 1, 1, big, 1.0f, &one, big, &one, 1, 0.0f, &out, 1); },
              {"matmul", "2147483648", "over 2^31 - 1"});
  check_error([&] { td::kernels::cpu::gemm<double>(false, false, 1, 1, 1, 1.0, nullptr, 1, nullptr, big, 0.0, nullptr, 1); },
              {"matmul", "leading dims 1, 2147483648, 1"});
  CHECK(out == 0);
}

TEST_CASE("the CPU BLAS runs kernels for the CPU's instructions, also where OpenBLAS does not know the CPU",
          "[cpu]") {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) {
    td::testing::mark_skipped("OPENBLAS_CORETYPE chooses the kernels");
    return;
  }
  const std::string blas = td::kernels::cpu::blas_description();
  INFO(blas);
  __builtin_cpu_init();
  // OpenBLAS's fallback for a CPU it does not know: SSE3 kernels, several times slower.
  if (__builtin_cpu_supports("avx2")) CHECK(blas.find("Prescott") == std::string::npos);
  if (__builtin_cpu_supports("avx512bf16")) CHECK(blas.find("Haswell") == std::string::npos);
}
