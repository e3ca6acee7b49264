// Creating tensors: fills, ranges, eye, the _like forms, tensor() from C++ values and
// from_blob around foreign memory.
#include <cmath>
#include <limits>
#include <optional>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;

TEST_CASE("zeros, ones and full fill every element and infer dtypes as PyTorch does", "[cpu]") {
  CHECK(values(td::zeros({2, 3})) == std::vector<double>(6, 0));
  CHECK(values(td::ones({7}, td::kInt32)) == std::vector<double>(7, 1));
  CHECK(td::zeros({2}).dtype() == td::kFloat32);
  CHECK(td::full({2}, 3).dtype() == td::kInt64);
  CHECK(td::full({2}, 3.5).dtype() == td::kFloat32);
  CHECK(td::full({2}, true).dtype() == td::kBool);
  CHECK(values(td::full({1000003}, 2.5, td::kFloat16)) == std::vector<double>(1000003, 2.5));
  CHECK(td::full({3}, 1, td::Device("cpu:2")).device() == td::Device("cpu:2"));
  CHECK(td::empty({0, 4}).numel() == 0);
  check_error([] { td::zeros({2, -1}); }, {"negative size", "[2, -1]"});
}

TEST_CASE("arange counts from start by step up to but excluding end", "[cpu]") {
  CHECK(values(td::arange(5)) == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(td::arange(5).dtype() == td::kInt64);
  CHECK(values(td::arange(1, 10, 3)) == std::vector<double>{1, 4, 7});
  CHECK(values(td::arange(5, 0, -2)) == std::vector<double>{5, 3, 1});
  CHECK(td::arange(0.0, 1.0, 0.25).dtype() == td::kFloat32);
  CHECK(values(td::arange(0.0, 1.0, 0.25)) == std::vector<double>{0, 0.25, 0.5, 0.75});
  CHECK(td::arange(0, 1, 0.1).numel() == 10);
  CHECK(td::arange(3, 3).numel() == 0);
  CHECK(td::arange(4, td::kFloat64).dtype() == td::kFloat64);
  check_error([] { td::arange(0, 5, 0); }, {"arange", "step must be nonzero"});
  check_error([] { td::arange(0, 5, -1); }, {"arange", "inconsistent with the sign of step"});
}

TEST_CASE("linspace includes both ends exactly and eye puts ones on the diagonal", "[cpu]") {
  td::Tensor l = td::linspace(-1, 1, 5);
  CHECK(values(l) == std::vector<double>{-1, -0.5, 0, 0.5, 1});
  td::Tensor l7 = td::linspace(0.1, 0.7, 7, td::kFloat64);
  CHECK(values(l7).front() == 0.1);
  CHECK(values(l7).back() == 0.7);
  CHECK(td::linspace(0, 1, 1).item<float>() == 0);
  CHECK(td::linspace(0, 1, 0).numel() == 0);
  td::Tensor e = td::eye(3, 4);
  CHECK(values(e) == std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});
  CHECK(td::eye(2, -1, td::kInt64).dtype() == td::kInt64);
  check_error([] { td::linspace(0, 1, -1); }, {"linspace", "non-negative"});
  check_error([] { td::eye(3, -2); }, {"eye", "m must be non-negative", "-2"});  // -1 alone means square
}

TEST_CASE("the _like forms copy shape, dtype and device unless told otherwise", "[cpu]") {
  td::Tensor x = td::zeros({2, 3}, td::TensorOptions(td::kFloat64).device(td::Device("cpu:1")));
  td::Tensor o = td::ones_like(x);
  CHECK(o.sizes() == x.sizes());
  CHECK(o.dtype() == td::kFloat64);
  CHECK(o.device() == td::Device("cpu:1"));
  CHECK(td::zeros_like(x, td::kInt32).dtype() == td::kInt32);
  CHECK(td::full_like(x, 7)[1][2].item<double>() == 7);
  CHECK(td::empty_like(x, td::Device("cpu:0")).device() == td::Device("cpu:0"));
  CHECK(td::rand_like(x).dtype() == td::kFloat64);
  CHECK(td::randn_like(x).device() == td::Device("cpu:1"));
}

TEST_CASE("tensor() builds from numbers, nested braced lists and vectors", "[cpu]") {
  td::Tensor m = td::tensor({{1.5, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  CHECK(m.sizes() == td::Shape{3, 2});
  CHECK(m.dtype() == td::kFloat32);
  CHECK(values(m) == std::vector<double>{1.5, 2, 3, 4, 5, 6});
  CHECK(td::tensor({1, 2}).dtype() == td::kInt64);
  CHECK(td::tensor({1, 2.5}).dtype() == td::kFloat32);
  CHECK(td::tensor({true, false}).dtype() == td::kBool);
  CHECK(td::tensor(4).dim() == 0);
  CHECK(td::tensor({4}).sizes() == td::Shape{1});
  CHECK(td::tensor({{{1}, {2}}}).sizes() == td::Shape{1, 2, 1});
  CHECK(td::tensor({1, 2}, td::kFloat64).dtype() == td::kFloat64);
  CHECK(td::tensor(std::vector<double>{0.1, 0.2}).dtype() == td::kFloat64);
  CHECK(td::tensor(std::vector<int>{3, 4}).dtype() == td::kInt32);
  CHECK(td::tensor(std::vector<bool>{true, false, true}).sum().item<int64_t>() == 2);
  CHECK(values(td::tensor(std::vector<float>{0.5f, 1.5f}, td::kFloat16)) == std::vector<double>{0.5, 1.5});
  CHECK(td::tensor(std::vector<float>{}).sizes() == td::Shape{0});
  check_error([] { td::tensor({{1, 2}, {3}}); }, {"tensor", "rectangular", "[1]", "[2]"});
  check_error([] { td::tensor({{1, 2}, 3}); }, {"tensor", "rectangular"});
  // A value the asked-for dtype cannot hold is refused, as PyTorch's checked conversion does
  // (300 became 44 in uint8); -1 in uint8 wraps to 255 there too.
  check_error([] { td::tensor({300}, td::kUInt8); }, {"tensor", "300", "uint8"});
  check_error([] { td::tensor(int64_t{1} << 40, td::kInt32); }, {"tensor", "int32"});
  check_error([] { td::tensor({std::nan("")}, td::kInt64); }, {"tensor", "int64"});
  CHECK(td::tensor({-1}, td::kUInt8).item<int>() == 255);
  CHECK(std::isinf(td::tensor({1e40}, td::kFloat32).item<float>()));
}

TEST_CASE("from_blob wraps memory without copying and runs the deleter at the end", "[cpu]") {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  bool deleted = false;
  {
    td::Tensor t = td::from_blob(data.data(), {2, 3}, td::kFloat32, [&](void*) { deleted = true; });
    t.mul_(2);
    CHECK(data[5] == 12);
    td::Tensor col = td::from_blob(data.data(), {2}, {3}, td::kFloat32);
    CHECK(values(col) == std::vector<double>{2, 8});
    CHECK(!deleted);
  }
  CHECK(deleted);
  check_error([] { td::from_blob(nullptr, {2}); }, {"from_blob", "null"});
  check_error([&] { td::from_blob(data.data(), {2}, {1, 1}); }, {"from_blob", "differ in length"});
}

TEST_CASE("clamp of integers drops a bound beyond the dtype's range and refuses one that excludes it all", "[cpu]") {
  // PyTorch 2.15, uint8 [0, 5, 255]: clamp(-1) and clamp(-300) and clamp(max=300) change nothing;
  // clamp(max=-1) and clamp(300) are errors; int32 clamp(max=2**32) changes nothing, clamp(2**40)
  // is an error.
  Tensor bytes = td::tensor({0, 5, 255}, td::kUInt8);
  Snapshot before(bytes);
  td::testing::check_equal(bytes.clamp(-1), {0, 5, 255});
  td::testing::check_equal(bytes.clamp(-300), {0, 5, 255});
  td::testing::check_equal(bytes.clamp(std::nullopt, 300), {0, 5, 255});
  td::testing::check_equal(bytes.clamp(-1, 4), {0, 4, 4});
  CHECK(bytes.clamp(-1).dtype() == td::kUInt8);
  check_error([&] { bytes.clamp(std::nullopt, -1); }, {"clamp: max value -1 is outside the range of uint8"});
  check_error([&] { bytes.clamp(300); }, {"clamp: min value 300 is outside the range of uint8"});
  check_error([&] { bytes.clamp_(2, -1); }, {"clamp: max value -1"});
  before.check_unchanged(bytes);
  Tensor ints = td::tensor({1, 2}, td::kInt32);
  td::testing::check_equal(ints.clamp(std::nullopt, int64_t{1} << 32), {1, 2});
  td::testing::check_equal(ints.clamp(-(int64_t{1} << 40)), {1, 2});
  check_error([&] { ints.clamp(int64_t{1} << 40); }, {"clamp: min value 1099511627776", "int32"});
  td::testing::check_equal(bytes.clone().clamp_(-1, 7), {0, 5, 7});
}

TEST_CASE("fill_, full, masked_fill and clamp refuse a value the dtype cannot hold, as PyTorch does", "[cpu]") {
  Tensor bytes = td::tensor({1, 2}, td::kUInt8);
  Snapshot before(bytes);
  check_error([&] { bytes.fill_(-256); }, {"fill_", "-256", "uint8", "without overflow"});
  check_error([&] { bytes.fill_(256); }, {"fill_", "256", "uint8"});
  check_error([&] { bytes.fill_(-1.5); }, {"fill_", "-1.5", "uint8"});  // a negative non-integer never wraps
  check_error([&] { bytes.masked_fill_(td::tensor({true, false}), 300); }, {"masked_fill_", "300", "uint8"});
  before.check_unchanged(bytes);
  check_error([] { td::full({2}, 300, td::kUInt8); }, {"full", "300", "uint8"});
  check_error([] { td::zeros({2}, td::kInt32).fill_(std::nan("")); }, {"fill_", "nan", "int32"});
  // where with a number beside an integer tensor (PyTorch: an error for 2**40 with int32 and 300
  // with uint8; -1 with uint8 wraps to 255).
  const Tensor cond = td::tensor({true, false});
  check_error([&] { td::where(cond, td::tensor({1, 2}, td::kInt32), int64_t{1} << 40); }, {"where", "int32"});
  check_error([&] { td::where(cond, 300, td::tensor({1, 2}, td::kUInt8)); }, {"where", "300", "uint8"});
  CHECK(values(td::where(cond, td::tensor({1, 2}, td::kUInt8), -1)) == std::vector<double>{1, 255});
  check_error([] { td::zeros({2}, td::kInt64).fill_(1e19); }, {"fill_", "int64"});
  check_error([] { td::zeros({2}, td::kFloat16).masked_fill(td::tensor({true, false}), -1e9); },
              {"masked_fill", "float16", "without overflow"});
  check_error([] { td::full({1}, 1e39, td::kFloat32); }, {"full", "float32"});
  // What fits: in range, infinities and NaN in floating dtypes, a fraction truncated into an integer.
  CHECK(values(td::zeros({2}, td::kInt32).fill_(2.5)) == std::vector<double>{2, 2});
  CHECK(td::full({1}, 255, td::kUInt8).item<int>() == 255);
  CHECK(td::full({1}, std::numeric_limits<int64_t>::min()).item<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(std::isinf(td::zeros({1}, td::kFloat16).fill_(INFINITY).item<double>()));
  CHECK(std::isnan(td::full({1}, NAN, td::kBFloat16).item<double>()));
  CHECK(td::full({1}, 65504, td::kFloat16).item<double>() == 65504);
  CHECK(values(bytes.clamp(0, 1)) == std::vector<double>{1, 1});
  // uint8 takes the integers -255 to -1 as PyTorch does: they wrap.
  CHECK(values(td::zeros({2}, td::kUInt8).fill_(-1)) == std::vector<double>{255, 255});
  CHECK(td::full({1}, -255, td::kUInt8).item<int>() == 1);
}

TEST_CASE("arange with more elements than a tensor holds is an error", "[cpu]") {
  check_error([] { td::arange(0.0, 1e300, 1e-300); }, {"arange", "more elements than a tensor holds"});
  check_error([] { td::arange(-(int64_t{1} << 62), int64_t{1} << 62, 1); }, {"arange", "more elements"});
  CHECK(td::arange(std::numeric_limits<int64_t>::max() - 2, std::numeric_limits<int64_t>::max(), 1).numel() == 2);
  CHECK(td::arange(0.0, 1.1, 0.1).numel() == 11);  // ceil of the double quotient, exactly 11, as in PyTorch
  CHECK(td::arange(0.0, 1.0, 0.1).numel() == 10);
}
