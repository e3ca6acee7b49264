// Binary element-wise ops: values against float64 references under broadcasting in every
// layout, PyTorch's type promotion, scalar operands, and the rules of the in-place forms.
#include <cmath>

#include <limits>

#include "kernels/elementwise.h"
#include "tests/testing.h"

namespace td = tandem;
using td::Scalar;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Layout;
using td::testing::read;
using td::testing::Snapshot;
using td::testing::values;

namespace {

struct BinaryCase {
  const char* name;
  td::Tensor (*op)(const td::Tensor&, const td::Tensor&);
  double (*ref)(double, double);
  bool comparison;
};

const BinaryCase kCases[] = {
    {"add", [](const td::Tensor& a, const td::Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, false},
    {"sub", [](const td::Tensor& a, const td::Tensor& b) { return a - b; }, [](double a, double b) { return a - b; }, false},
    {"mul", [](const td::Tensor& a, const td::Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, false},
    {"div", [](const td::Tensor& a, const td::Tensor& b) { return a / b; }, [](double a, double b) { return a / b; }, false},
    {"pow", [](const td::Tensor& a, const td::Tensor& b) { return td::pow(a.abs(), b); },
     [](double a, double b) { return std::pow(std::abs(a), b); }, false},
    {"maximum", td::maximum, [](double a, double b) { return std::max(a, b); }, false},
    {"minimum", td::minimum, [](double a, double b) { return std::min(a, b); }, false},
    {"remainder", td::remainder, [](double a, double b) { return a - b * std::floor(a / b); }, false},
    {"fmod", td::fmod, [](double a, double b) { return std::fmod(a, b); }, false},
    {"floor_divide", td::floor_divide, [](double a, double b) { return std::floor(a / b); }, false},
    {"div trunc", [](const td::Tensor& a, const td::Tensor& b) { return td::div(a, b, "trunc"); },
     [](double a, double b) { return std::trunc(a / b); }, false},
    {"atan2", td::atan2, [](double a, double b) { return std::atan2(a, b); }, false},
    {"hypot", td::hypot, [](double a, double b) { return std::hypot(a, b); }, false},
    {"copysign", [](const td::Tensor& a, const td::Tensor& b) { return td::copysign(b, a); },
     [](double a, double b) { return std::copysign(b, a); }, false},
    {"logaddexp", td::logaddexp, [](double a, double b) { return std::log(std::exp(a) + std::exp(b)); }, false},
    {"fmax", td::fmax, [](double a, double b) { return std::max(a, b); }, false},
    {"fmin", td::fmin, [](double a, double b) { return std::min(a, b); }, false},
    {"eq", [](const td::Tensor& a, const td::Tensor& b) { return a == b; }, [](double a, double b) { return double(a == b); }, true},
    {"ne", [](const td::Tensor& a, const td::Tensor& b) { return a != b; }, [](double a, double b) { return double(a != b); }, true},
    {"lt", [](const td::Tensor& a, const td::Tensor& b) { return a < b; }, [](double a, double b) { return double(a < b); }, true},
    {"le", [](const td::Tensor& a, const td::Tensor& b) { return a <= b; }, [](double a, double b) { return double(a <= b); }, true},
    {"gt", [](const td::Tensor& a, const td::Tensor& b) { return a > b; }, [](double a, double b) { return double(a > b); }, true},
    {"ge", [](const td::Tensor& a, const td::Tensor& b) { return a >= b; }, [](double a, double b) { return double(a >= b); }, true},
};

// Pairs of shapes that broadcast, and the shape they give.
struct Broadcast {
  td::Shape a, b, out;
};
const Broadcast kShapes[] = {
    {{7, 33}, {7, 33}, {7, 33}}, {{7, 33}, {33}, {7, 33}},        {{7, 1}, {1, 33}, {7, 33}},
    {{}, {7, 33}, {7, 33}},      {{2, 1, 3}, {4, 1}, {2, 4, 3}},   {{1}, {1}, {1}},
    {{5, 0}, {1}, {5, 0}},       {{3, 1, 7}, {3, 5, 7}, {3, 5, 7}},
};

// The reference result of broadcasting `a` and `b` to `out` and applying f.
std::vector<double> broadcast_ref(const td::Tensor& a, const td::Tensor& b, const td::Shape& out,
                                  double (*f)(double, double)) {
  std::vector<double> result;
  int64_t n = td::numel_of(out);
  for (int64_t i = 0; i < n; ++i) {
    auto idx = td::testing::unravel(i, out);
    auto pick = [&](const td::Tensor& t) {
      std::vector<int64_t> j(idx.end() - t.dim(), idx.end());
      for (int64_t d = 0; d < t.dim(); ++d) {
        if (t.sizes()[d] == 1) j[d] = 0;
      }
      return read(t, td::testing::ravel(j, t.sizes()));
    };
    result.push_back(f(pick(a), pick(b)));
  }
  return result;
}

}  // namespace

TEST_CASE("binary ops broadcast and match float64 references in every layout and floating dtype", "[cpu]") {
  td::testing::reseed(20);
  for (const BinaryCase& c : kCases) {
    for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
      for (const Broadcast& s : kShapes) {
        for (Layout la : td::testing::all_layouts()) {
          Layout lb = td::testing::all_layouts()[(static_cast<int>(la) + 1) % 4];
          td::Tensor a = td::testing::random_tensor(s.a, dtype, la, -3, 3);
          td::Tensor b = td::testing::random_tensor(s.b, dtype, lb, 0.5, 3);
          td::Tensor y = c.op(a, b);
          REQUIRE(y.sizes() == s.out);
          REQUIRE(y.dtype() == (c.comparison ? td::kBool : dtype));
          double rtol = c.comparison ? 0 : td::testing::rtol_for(dtype);
          check_close(y, broadcast_ref(a, b, s.out, c.ref), rtol, rtol,
                      std::string(c.name) + " " + td::dtype_name(dtype) + " " + td::shape_str(s.a) + " with " +
                          td::shape_str(s.b) + " " + td::testing::layout_name(la));
        }
      }
    }
  }
}

TEST_CASE("integer arithmetic is exact and integer division gives float32", "[cpu]") {
  td::testing::reseed(21);
  for (td::DType dtype : {td::kInt64, td::kInt32, td::kUInt8}) {
    td::Tensor a = td::testing::random_tensor({7, 33}, dtype, Layout::Permuted, 0, 15);
    td::Tensor b = td::testing::random_tensor({33}, dtype, Layout::Strided, 1, 15);
    CHECK((a + b).dtype() == dtype);
    check_close(a + b, broadcast_ref(a, b, {7, 33}, [](double x, double y) { return x + y; }), 0, 0);
    check_close(a * b, broadcast_ref(a, b, {7, 33}, [](double x, double y) { return x * y; }), 0, 0);
    check_close(td::pow(b, 2), broadcast_ref(b, b, {33}, [](double x, double) { return x * x; }), 0, 0);
    td::Tensor q = a / b;
    CHECK(q.dtype() == td::kFloat32);
    check_close(q, broadcast_ref(a, b, {7, 33}, [](double x, double y) { return x / y; }), 1e-6, 0);
  }
}

TEST_CASE("a million-element add, mul and comparison match in contiguous and strided layouts", "[cpu]") {
  td::testing::reseed(22);
  for (Layout layout : {Layout::Contiguous, Layout::Strided, Layout::Offset}) {
    td::Tensor a = td::testing::random_tensor({1000003}, td::kFloat32, layout);
    td::Tensor b = td::testing::random_tensor({1000003}, td::kFloat32, Layout::Contiguous);
    check_close(a + b, broadcast_ref(a, b, {1000003}, [](double x, double y) { return x + y; }), 1e-6, 1e-6);
    check_close(a * 3, broadcast_ref(a, a, {1000003}, [](double x, double) { return 3 * x; }), 1e-6, 0);
    check_close(a < b, broadcast_ref(a, b, {1000003}, [](double x, double y) { return double(x < y); }), 0, 0);
  }
}

TEST_CASE("scalar operands promote as Python numbers and work on either side", "[cpu]") {
  td::Tensor i = td::tensor({1, 2, 3});
  CHECK((i + 1).dtype() == td::kInt64);
  CHECK((i + 1.5).dtype() == td::kFloat32);
  CHECK(values(i + 1.5) == std::vector<double>{2.5, 3.5, 4.5});
  CHECK(values(10 - i) == std::vector<double>{9, 8, 7});
  CHECK(values(6 / i) == std::vector<double>{6, 3, 2});
  CHECK(values(2 * i) == std::vector<double>{2, 4, 6});
  td::Tensor h = td::tensor({1.0, 2.0}, td::kFloat16);
  CHECK((h * 2.5).dtype() == td::kFloat16);
  CHECK((h + td::full({}, 1.0, td::kFloat64)).dtype() == td::kFloat16);  // 0-dim does not outrank
  CHECK((td::tensor({1, 2}, td::kInt32) + td::full({}, 1, td::kInt64)).dtype() == td::kInt32);
  CHECK((td::tensor({1, 2}, td::kInt32) + td::full({}, 1.0, td::kFloat64)).dtype() == td::kFloat64);
  CHECK(values(td::pow(2, td::tensor({0.0, 3.0}))) == std::vector<double>{1, 8});
  CHECK(values(td::tensor({true, false}) + td::tensor({true, true})) == std::vector<double>{1, 1});
  CHECK((td::tensor({true}) + td::tensor({true})).dtype() == td::kBool);
  CHECK(values(i.add(i, 2)) == std::vector<double>{3, 6, 9});
  CHECK(values(i.sub(1, 2)) == std::vector<double>{-1, 0, 1});
}

TEST_CASE("maximum and minimum propagate NaN, comparisons with NaN are false", "[cpu]") {
  td::Tensor a = td::tensor({NAN, 1.0, 2.0});
  td::Tensor b = td::tensor({0.0, NAN, 1.0});
  auto mx = values(td::maximum(a, b));
  CHECK(std::isnan(mx[0]));
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 2);
  CHECK(values(a == a) == std::vector<double>{0, 1, 1});
  CHECK(values(a != a) == std::vector<double>{1, 0, 0});
}

TEST_CASE("integer powers: squaring, zero exponent, and negative exponents", "[cpu]") {
  td::Tensor i = td::tensor({-3, -1, 0, 1, 2, 5});
  CHECK(values(td::pow(i, 3)) == std::vector<double>{-27, -1, 0, 1, 8, 125});
  CHECK(values(td::pow(i, 0)) == std::vector<double>{1, 1, 1, 1, 1, 1});
  CHECK(values(td::pow(i, td::tensor({-1, -1, 2, -2, -1, 1}))) == std::vector<double>{0, -1, 0, 1, 0, 5});
  check_error([&] { td::pow(i, -1); }, {"pow", "negative integer powers"});
  {
    td::testing::Snapshot before(i);
    check_error([&] { i.pow_(-2); }, {"pow_", "negative integer powers (-2)"});
    before.check_unchanged(i);
  }
  CHECK(td::pow(i, 0.5).dtype() == td::kFloat32);
}

TEST_CASE("in-place ops write the broadcast result into the destination", "[cpu]") {
  td::testing::reseed(23);
  for (Layout layout : td::testing::all_layouts()) {
    td::Tensor a = td::testing::random_tensor({7, 33}, td::kFloat32, layout);
    td::Tensor b = td::testing::random_tensor({33}, td::kFloat32, Layout::Strided);
    auto expected = broadcast_ref(a, b, {7, 33}, [](double x, double y) { return x - 2 * y; });
    td::Tensor same = a;
    a.sub_(b, 2);
    CHECK(same.is_same(a));
    check_close(a, expected, 1e-6, 1e-6, td::testing::layout_name(layout));
  }
  td::Tensor f = td::ones({3});
  f += td::tensor({1.0, 2.0, 3.0}, td::kFloat64);  // computed in float64, written as float32
  CHECK(values(f) == std::vector<double>{2, 3, 4});
  CHECK(f.dtype() == td::kFloat32);
  td::Tensor x = td::arange(4.0);
  x *= x;  // fully aliased operands are fine
  CHECK(values(x) == std::vector<double>{0, 1, 4, 9});
  td::Tensor d = td::tensor({1.0, 2.0});
  d /= 4;
  CHECK(values(d) == std::vector<double>{0.25, 0.5});
}

TEST_CASE("in-place ops reject what PyTorch rejects and leave the destination unchanged", "[cpu]") {
  td::Tensor a = td::arange(9.0).view({3, 3});
  td::Tensor ints = td::tensor({1, 2, 3});
  td::Tensor row = td::ones({3});
  Snapshot sa(a), si(ints), sr(row);
  check_error([&] { row.add_(a); }, {"add_", "output with shape [3]", "broadcast shape [3, 3]"});
  check_error([&] { ints.add_(td::tensor({0.5, 0.5, 0.5})); }, {"add_", "float32", "can't be cast", "int64"});
  check_error([&] { ints.div_(2); }, {"div_", "float32", "int64"});
  check_error([&] { a.add_(a.t()); }, {"add", "same memory"});
  check_error([&] { a.narrow(0, 0, 2).add_(a.narrow(0, 1, 2)); }, {"add", "same memory"});
  td::Tensor expanded = td::zeros({3}).expand({3, 3});
  check_error([&] { expanded.add_(a); }, {"add", "single memory location"});
  check_error([&] { a.add_(td::ones({2})); }, {"add", "cannot be broadcast", "[3, 3]", "[2]"});
  check_error([&] { ints.add_(ints, 0.5); }, {"add", "alpha"});
  sa.check_unchanged(a);
  si.check_unchanged(ints);
  sr.check_unchanged(row);
}

TEST_CASE("binary ops reject bad operands with the shapes, dtypes or devices in the message", "[cpu]") {
  td::Tensor a = td::ones({2, 3});
  td::Tensor b = td::ones({4});
  Snapshot sa(a), sb(b);
  check_error([&] { a + b; }, {"add", "[2, 3]", "[4]", "cannot be broadcast"});
  check_error([&] { a * b; }, {"mul", "[2, 3]", "[4]"});
  check_error([&] { a + td::ones({2, 3}).to(td::Device("cpu:1")); }, {"add", "cpu:0", "cpu:1"});
  check_error([&] { td::tensor({true}) - td::tensor({false}); }, {"sub", "bool"});
  check_error([&] { a + td::Tensor(); }, {"add", "undefined"});
  sa.check_unchanged(a);
  sb.check_unchanged(b);
}

TEST_CASE("where picks element-wise and broadcasts condition and both branches", "[cpu]") {
  td::testing::reseed(24);
  for (Layout layout : td::testing::all_layouts()) {
    td::Tensor cond = td::testing::random_tensor({7, 1}, td::kBool, layout);
    td::Tensor x = td::testing::random_tensor({7, 33}, td::kFloat32, layout);
    td::Tensor y = td::testing::random_tensor({33}, td::kFloat64, Layout::Strided);
    td::Tensor out = td::where(cond, x, y);
    CHECK(out.dtype() == td::kFloat64);
    std::vector<double> expected;
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 33; ++j) expected.push_back(read(cond, i) ? read(x, i * 33 + j) : read(y, j));
    check_close(out, expected, 0, 0);
  }
  CHECK(values(td::where(td::tensor({true, false}), 1, 2)) == std::vector<double>{1, 2});
  CHECK(td::where(td::tensor({true, false}), 1.5, td::tensor({1, 2})).dtype() == td::kFloat32);
  check_error([] { td::where(td::tensor({1, 0}), td::ones({2}), td::zeros({2})); }, {"where", "bool", "int64"});
  check_error([] { td::where(td::tensor({true, false}), td::ones({3}), td::zeros({2})); }, {"where", "[2]", "[3]"});
}

TEST_CASE("ops with operands broadcast from one element match per element over long contiguous runs", "[cpu]") {
  // Runs longer than the loop's 256-element blocks, and not a multiple of them, with the
  // broadcast operand in every position.
  td::testing::reseed(25);
  const int64_t n = 1000;
  td::Tensor cond = td::testing::random_tensor({n}, td::kBool);
  td::Tensor x = td::testing::random_tensor({n}, td::kFloat32);
  td::Tensor one = td::tensor({0.5f});
  std::vector<double> relu_grad, picked, sums;
  for (int64_t i = 0; i < n; ++i) {
    relu_grad.push_back(read(cond, i) ? read(x, i) : 0.0);
    picked.push_back(read(cond, i) ? 0.5 : read(x, i));
    sums.push_back(static_cast<float>(read(x, i) + 0.5f));
  }
  check_close(td::where(cond, x, 0), relu_grad, 0, 0);
  check_close(td::where(cond, one, x), picked, 0, 0);
  check_close(x + one, sums, 0, 0);
  check_close(one + x, sums, 0, 0);
  std::vector<double> all_broadcast(n);
  for (int64_t i = 0; i < n; ++i) all_broadcast[i] = read(cond, 0) ? 1 : 2;
  check_close(td::where(cond.narrow(0, 0, 1).expand({n}), td::tensor({1.0f}).expand({n}), 2), all_broadcast, 0, 0);
}

TEST_CASE("masked_fill fills where the broadcast mask is true", "[cpu]") {
  td::Tensor x = td::arange(6.0).view({2, 3});
  td::Tensor mask = td::tensor({true, false, true});
  td::Tensor y = x.masked_fill(mask, -1);
  CHECK(values(y) == std::vector<double>{-1, 1, -1, -1, 4, -1});
  CHECK(values(x) == std::vector<double>{0, 1, 2, 3, 4, 5});  // out of place
  td::Tensor z = x.t().contiguous().t();
  z.masked_fill_(mask, 9);
  CHECK(values(z) == std::vector<double>{9, 1, 9, 9, 4, 9});
  CHECK(td::masked_fill(td::zeros({3}), td::tensor({{true}, {false}}), 1).sizes() == td::Shape{2, 3});
  Snapshot before(x);
  check_error([&] { x.masked_fill_(td::tensor({1, 0, 1}), 0); }, {"masked_fill", "bool", "int64"});
  check_error([&] { x.masked_fill_(td::tensor({{true}, {false}, {true}}), 0); }, {"masked_fill", "[3, 1]", "[2, 3]"});
  before.check_unchanged(x);
}

TEST_CASE("integer pow squares only while exponent bits are left, and wraps as PyTorch does", "[cpu]") {
  // 65536^1 fits; squaring the base once more after the last bit overflowed int32 (undefined).
  CHECK(td::pow(td::tensor({65536}, td::kInt32), 1).item<int32_t>() == 65536);
  CHECK(td::pow(td::tensor({-2}, td::kInt32), 31).item<int32_t>() == std::numeric_limits<int32_t>::min());
  CHECK(td::pow(td::tensor({3}), 39).item<int64_t>() == 4052555153018976267);
  CHECK(td::pow(td::tensor({2}, td::kInt32), 32).item<int32_t>() == 0);  // 2^32 wraps to 0
  CHECK(td::pow(td::tensor({3}, td::kUInt8), 5).item<int>() == 243);
}

TEST_CASE("integer products wrap as PyTorch's do, where C++'s signed ones would overflow", "[cpu]") {
  // PyTorch 2.15: int32 2^30 * 4 = 0, -2^31 * -1 = -2^31; uint8 200 * 3 = 88; int8 100 * 3 = 44.
  CHECK((td::tensor({1 << 30}, td::kInt32) * td::tensor({4}, td::kInt32)).item<int32_t>() == 0);
  CHECK((td::tensor({std::numeric_limits<int32_t>::min()}, td::kInt32) * td::tensor({-1}, td::kInt32))
            .item<int32_t>() == std::numeric_limits<int32_t>::min());
  CHECK((td::tensor({200}).to(td::kUInt8) * td::tensor({3}).to(td::kUInt8)).item<int>() == 88);
  CHECK((td::tensor({int64_t{1} << 62}) * td::tensor({int64_t{-4}})).item<int64_t>() == 0);
  Tensor big = td::full({1000}, int64_t{3037000500}, td::kInt64);  // its square passes 2^63
  CHECK((big * big).amax().item<int64_t>() == static_cast<int64_t>(uint64_t{3037000500} * uint64_t{3037000500}));
}

TEST_CASE("integer sums and differences wrap as PyTorch's do, where C++'s signed ones would overflow", "[cpu]") {
  // PyTorch 2.15's values for each line.
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min(), kMax32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t k62 = int64_t{1} << 62;
  CHECK((td::tensor({kMax32}, td::kInt32) + td::tensor({1}, td::kInt32)).item<int32_t>() == kMin32);
  CHECK((td::tensor({kMin32}, td::kInt32) - td::tensor({1}, td::kInt32)).item<int32_t>() == kMax32);
  CHECK((td::tensor({200}).to(td::kUInt8) + td::tensor({100}).to(td::kUInt8)).item<int>() == 44);
  CHECK(td::add(td::tensor({k62}), td::tensor({k62}), 3).item<int64_t>() == 0);
  CHECK(td::add(td::tensor({1}, td::kInt32), td::tensor({1 << 30}, td::kInt32), 4).item<int32_t>() == 1);
  CHECK(td::sub(td::tensor({int64_t{0}}), td::tensor({k62}), 3).item<int64_t>() == k62);
  Tensor a = td::tensor({k62});
  a.add_(td::tensor({k62}));
  CHECK(a.item<int64_t>() == std::numeric_limits<int64_t>::min());
  // Sums and running sums in int64.
  CHECK(td::full({4}, k62, td::kInt64).sum().item<int64_t>() == 0);
  CHECK(td::full({3}, k62, td::kInt64).sum().item<int64_t>() == -k62);
  Tensor running = td::full({3}, k62, td::kInt64).cumsum(0);
  CHECK(running[1].item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(running[2].item<int64_t>() == -k62);
  CHECK(td::full({3}, 1 << 30, td::kInt32).sum().item<int64_t>() == 3 * (int64_t{1} << 30));  // int32 sums in int64
  // scatter_add and the n-way sum the collectives use.
  Tensor into = td::zeros({2}, td::kInt64);
  into.scatter_add_(0, td::tensor({int64_t{0}, 0, 0}), td::full({3}, k62, td::kInt64));
  CHECK(into[0].item<int64_t>() == -k62);
  Tensor sum = td::empty({2}, td::kInt64);
  td::kernels::add_n_into(sum, {td::full({2}, k62, td::kInt64), td::full({2}, k62, td::kInt64)});
  CHECK(sum[1].item<int64_t>() == std::numeric_limits<int64_t>::min());
}

TEST_CASE("float16 and bfloat16 mul and div by a number take it at its float32 value, as PyTorch does", "[cpu]") {
  Tensor x = td::tensor({1000.0}, td::kFloat16);
  // 1e5 is inf in float16, 1e-8 is 0: rounded to the tensor's dtype first, both gave 0.
  CHECK(td::div(x, 1e5).item<double>() == static_cast<double>(td::Half(0.01f)));
  CHECK(td::mul(x, 1e-8).item<double>() == static_cast<double>(td::Half(1e-5f)));
  CHECK(td::mul(td::tensor({0.5}, td::kFloat16), 65536).item<double>() == 32768);  // 65536 is inf in float16
  Tensor y = x.clone();
  y.div_(1e5);
  CHECK(y.item<double>() == static_cast<double>(td::Half(0.01f)));
  td::testing::reseed(41);
  for (td::DType dtype : {td::kFloat16, td::kBFloat16}) {
    INFO(td::dtype_name(dtype));
    Tensor r = td::testing::random_tensor({1000}, dtype);
    for (double s : {0.1, 1.0 / 3, 1e-3}) {
      // Each element: the float32 product, rounded once to the dtype.
      Tensor expected = td::mul(r.to(td::kFloat32), s).to(dtype);
      CHECK(values(td::mul(r, s)) == values(expected));
      CHECK(values(td::div(r, s)) == values(td::div(r.to(td::kFloat32), s).to(dtype)));
      Tensor in_place = r.clone();
      in_place.mul_(s);
      CHECK(values(in_place) == values(expected));
    }
    // A transposed input, and in place into a strided view: the rest of its base stays as it was.
    Tensor m = td::testing::random_tensor({8, 5}, dtype).t();
    CHECK(values(td::div(m, 3.0)) == values(td::div(m.to(td::kFloat32), 3.0).to(dtype)));
    Tensor base = td::testing::random_tensor({6, 4}, dtype);
    const Tensor original = base.clone();
    Tensor view = base.slice(0, 0, 6, 2).t();
    view.mul_(0.1);
    CHECK(values(view) == values(td::mul(original.slice(0, 0, 6, 2).t().to(td::kFloat32), 0.1).to(dtype)));
    CHECK(values(base.slice(0, 1, 6, 2)) == values(original.slice(0, 1, 6, 2)));
    // Gradients flow as through any mul: d(x * s)/dx = s and d(x / s)/dx = 1 / s, in the dtype.
    Tensor leaf = td::testing::random_tensor({5}, dtype).requires_grad_();
    td::mul(leaf, 0.1).sum().backward();
    CHECK(values(leaf.grad()) == values(td::full({5}, 0.1, dtype)));
    Tensor upstream = td::testing::random_tensor({5}, dtype);
    Tensor quotient = td::div(leaf, 3.0);
    CHECK(quotient.grad_fn()->name() == "DivBackward0");
    Tensor grad = td::autograd::grad({quotient}, {leaf}, {upstream})[0];
    CHECK(values(grad) == values(td::div(upstream.to(td::kFloat32), 3.0).to(dtype)));
    // In place on a tensor with history: the gradient reaches the leaf through it.
    Tensor scaled = leaf * 1;
    scaled.div_(3.0).mul_(0.1);
    CHECK(scaled.grad_fn()->name() == "MulBackward0");
    grad = td::autograd::grad({scaled}, {leaf}, {upstream})[0];
    Tensor expected_grad = td::div(td::mul(upstream.to(td::kFloat32), 0.1).to(dtype).to(td::kFloat32), 3.0).to(dtype);
    CHECK(values(grad) == values(expected_grad));
  }
}

TEST_CASE("float16 and bfloat16 add and sub take alpha in the tensors' dtype, as PyTorch's CPU does", "[cpu]") {
  // PyTorch 2.15's add(a, b, alpha=0.3) on 64 contiguous values a = ((37 i) % 29 - 14) / 7 and
  // b = ((11 i) % 23 - 11) / 5 (each rounded to the dtype): alpha is 0.30078125 in bfloat16 and
  // 0.300048828125 in float16, then one multiply-add in float32. With alpha at its double value,
  // 15 of the bfloat16 sums and 9 of the float16 ones differed.
  std::vector<float> av(64), bv(64);
  for (int i = 0; i < 64; ++i) {
    av[i] = static_cast<float>((i * 37) % 29 - 14) / 7.0f;
    bv[i] = static_cast<float>((i * 11) % 23 - 11) / 5.0f;
  }
  const std::vector<double> bf16{
      -2.65625, -0.85546875, 0.94921875, 1.3671875, -0.96875, -0.546875, 1.2578125, 1.6796875, -0.66015625,
      -0.2412109375, 1.5625, -2.15625, -0.353515625, 0.06591796875, 1.875, -1.8515625, -0.044189453125,
      0.373046875, 2.1875, -1.5390625, 0.263671875, 0.6875, -1.6484375, -1.234375, 0.5703125, 2.375, -1.3515625,
      0.458984375, 0.87890625, -1.4609375, -1.0390625, 0.765625, 1.1875, -1.1484375, -0.7265625, 1.078125, 1.5,
      -0.83984375, -0.419921875, 1.3828125, -2.34375, -0.53515625, -0.11279296875, 1.6875, -2.03125, -0.224609375,
      0.1923828125, 2.0, -0.337890625, 0.08251953125, 1.890625, -1.828125, -0.02978515625, 0.388671875, 2.1875,
      -1.53125, 0.27734375, 0.69921875, -1.640625, -1.21875, 0.5859375, 1.0078125, -1.328125, -0.91015625};
  const std::vector<double> f16{
      -2.66015625, -0.85693359375, 0.9453125, 1.369140625, -0.97119140625, -0.54833984375, 1.25390625,
      1.677734375, -0.66259765625, -0.239990234375, 1.5625, -2.158203125, -0.354248046875, 0.068359375,
      1.87109375, -1.8486328125, -0.045654296875, 0.376953125, 2.1796875, -1.5400390625, 0.2626953125,
      0.68603515625, -1.654296875, -1.2314453125, 0.5712890625, 2.373046875, -1.345703125, 0.457275390625,
      0.8798828125, -1.4599609375, -1.037109375, 0.765625, 1.1884765625, -1.1513671875, -0.728515625, 1.07421875,
      1.4970703125, -0.8427734375, -0.420166015625, 1.3828125, -2.337890625, -0.5341796875, -0.111572265625,
      1.69140625, -2.029296875, -0.2257080078125, 0.197021484375, 2.0, -0.340087890625, 0.08282470703125,
      1.88671875, -1.833984375, -0.03125, 0.39111328125, 2.193359375, -1.5263671875, 0.27734375, 0.7001953125,
      -1.6396484375, -1.216796875, 0.5859375, 1.0087890625, -1.3310546875, -0.908203125};
  for (auto [dtype, expected] : {std::pair{td::kBFloat16, bf16}, std::pair{td::kFloat16, f16}}) {
    INFO(td::dtype_name(dtype));
    Tensor a = td::tensor(av).to(dtype), b = td::tensor(bv).to(dtype);
    CHECK(values(td::add(a, b, 0.3)) == expected);
    CHECK(values(td::sub(a, b, -0.3)) == expected);
    Tensor in_place = a.clone();
    in_place.add_(b, 0.3);
    CHECK(values(in_place) == expected);
  }
}

TEST_CASE("bool add takes an integer or bool alpha, and alpha's kind follows PyTorch's rules", "[cpu]") {
  Tensor x = td::tensor({true, false, false}), y = td::tensor({true, true, false});
  // a + alpha * b in bool: any nonzero alpha is true, so the sum is a logical or; zero leaves a.
  for (Scalar alpha : {Scalar(2), Scalar(-1), Scalar(true)}) {
    CHECK(values(td::add(x, y, alpha)) == std::vector<double>{1, 1, 0});
  }
  for (Scalar alpha : {Scalar(0), Scalar(false)}) {
    CHECK(values(td::add(x, y, alpha)) == std::vector<double>{1, 0, 0});
  }
  Tensor z = x.clone();
  z.add_(y, 3);
  CHECK(values(z) == std::vector<double>{1, 1, 0});
  Tensor f = td::ones({2}), i = td::tensor({1, 2});
  Snapshot sx(x), sf(f), si(i);
  check_error([&] { td::add(x, y, 2.5); }, {"add", "bool", "alpha", "floating point"});
  check_error([&] { td::add(f, f, true); }, {"add", "boolean alpha", "float32"});
  check_error([&] { i.add_(i, false); }, {"add", "boolean alpha", "int64"});
  check_error([&] { x.add_(y, 1.0); }, {"add", "alpha"});
  sx.check_unchanged(x);
  sf.check_unchanged(f);
  si.check_unchanged(i);
}

TEST_CASE("addcmul_ adds the scaled product in one fused multiply-add, broadcasting, and refuses bad operands",
          "[cpu]") {
  // PyTorch 2.15's addcmul_: 0.3 + (0.3 * 1) * 0.3 is 0.38999999999999996 (two roundings give 0.39).
  Tensor s = td::tensor({0.3, 0.3}, td::kFloat64);
  td::kernels::addcmul_(s, td::tensor({0.3, 0.3}, td::kFloat64), td::tensor({0.3}, td::kFloat64), 1.0);
  CHECK(values(s) == std::vector<double>{0.38999999999999996, 0.38999999999999996});
  // Each element: fma(float(a * value), b, self), in a transposed view with b broadcast.
  td::testing::reseed(42);
  Tensor base = td::testing::random_tensor({5, 7}, td::kFloat32);
  Tensor self = base.clone().t();
  Tensor a = td::testing::random_tensor({7, 5}, td::kFloat32), b = td::testing::random_tensor({5}, td::kFloat32);
  std::vector<double> expected;
  for (int64_t i = 0; i < 7; ++i) {
    for (int64_t j = 0; j < 5; ++j) {
      const float scaled = a[i][j].item<float>() * 0.37f;
      expected.push_back(std::fma(scaled, b[j].item<float>(), self[i][j].item<float>()));
    }
  }
  td::kernels::addcmul_(self, a, b, 0.37);
  CHECK(values(self) == expected);
  Tensor target = td::ones({2, 3});
  Snapshot before(target);
  check_error([&] { td::kernels::addcmul_(target, td::ones({2, 3}, td::kFloat64), td::ones({3}), 1.0); },
              {"addcmul_", "float32", "float64"});
  check_error([&] { td::kernels::addcmul_(target, td::ones({4, 2, 3}), td::ones({3}), 1.0); },
              {"addcmul_", "[2, 3]", "[4, 2, 3]"});
  Tensor wide = td::ones({3, 3});
  Tensor top = wide.narrow(0, 0, 2);
  Snapshot wide_before(wide);
  check_error([&] { td::kernels::addcmul_(top, wide.narrow(0, 1, 2), td::ones({3}), 1.0); }, {"addcmul_", "same memory"});
  wide_before.check_unchanged(wide);
  check_error([&] { td::kernels::addcmul_(target, td::ones({2, 3}).to(td::Device("cpu:1")), td::ones({3}), 1.0); },
              {"addcmul_", "cpu:0", "cpu:1"});
  before.check_unchanged(target);
}
