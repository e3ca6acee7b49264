// Copies and conversions: to(dtype) with PyTorch's conversion rules, to(device) between CPU
// devices, copy_ with broadcasting, contiguous and clone.
#include <cmath>
#include <limits>

#include "tests/testing.h"

namespace td = tandem;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Layout;
using td::testing::Snapshot;
using td::testing::values;

TEST_CASE("conversions between all dtypes preserve values the target can hold", "[cpu]") {
  const td::DType all[] = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16,
                           td::kInt64,   td::kInt32,   td::kUInt8,   td::kBool};
  td::Tensor small = td::tensor({0, 1, 2, 3, 100, 7});  // every dtype holds these exactly (bool: != 0)
  for (td::DType from : all) {
    td::Tensor x = small.to(from);
    for (td::DType to : all) {
      std::vector<double> expected;
      for (double v : values(x)) expected.push_back(to == td::kBool ? double(v != 0) : v);
      check_close(x.to(to), expected, 0, 0, std::string(td::dtype_name(from)) + " to " + td::dtype_name(to));
    }
  }
}

TEST_CASE("floating to integer truncates toward zero and integers wrap like C casts", "[cpu]") {
  td::Tensor f = td::tensor({-2.7, -0.5, 0.5, 2.7, 300.0});
  CHECK(values(f.to(td::kInt64)) == std::vector<double>{-2, 0, 0, 2, 300});
  CHECK(values(f.to(td::kUInt8)) == std::vector<double>{254, 0, 0, 2, 44});
  CHECK(values(f.to(td::kBool)) == std::vector<double>{1, 1, 1, 1, 1});
  CHECK(values(td::tensor({NAN}).to(td::kInt64)) == std::vector<double>{static_cast<double>(INT64_MIN)});
  // PyTorch 2.15: NaN, infinities and values beyond int32 become int32's minimum (from float32
  // and float64 alike); 2147483647.5 in float32 is 2^31, beyond it too.
  const double int32_min = std::numeric_limits<int32_t>::min();
  CHECK(values(td::tensor({NAN, 3e9f, -3e9f, INFINITY, -INFINITY, 2147483647.5f, -2147483648.0f}).to(td::kInt32)) ==
        std::vector<double>(7, int32_min));
  CHECK(values(td::tensor({NAN, 3e9, -3e9, 2147483647.0, -2147483648.9}, td::kFloat64).to(td::kInt32)) ==
        std::vector<double>{int32_min, int32_min, int32_min, 2147483647, int32_min});
  CHECK(values(td::tensor({NAN, 1e10f, -1.0f}).to(td::kUInt8)) == std::vector<double>{0, 0, 255});
  CHECK(values(td::tensor({0.1}, td::kFloat64).to(td::kFloat16)) == std::vector<double>{static_cast<float>(td::Half::from_double(0.1))});
  CHECK(values(td::tensor({int64_t{1} << 40}).to(td::kFloat32)) == std::vector<double>{std::ldexp(1.0, 40)});
}

TEST_CASE("to() returns the tensor itself when nothing changes and copies otherwise", "[cpu]") {
  td::Tensor x = td::ones({3});
  CHECK(x.to(td::kFloat32).is_same(x));
  CHECK(x.to(td::Device("cpu:0")).is_same(x));
  td::Tensor y = x.to(td::Device("cpu:1"));
  CHECK(y.device() == td::Device("cpu:1"));
  CHECK(!y.is_alias_of(x));
  y.fill_(5);
  CHECK(values(x) == std::vector<double>{1, 1, 1});
  td::Tensor z = y.to(td::Device("cpu:0"), td::kInt32);
  CHECK(z.device() == td::Device("cpu:0"));
  CHECK(values(z) == std::vector<double>{5, 5, 5});
  CHECK(z.cpu().is_same(z));
}

TEST_CASE("contiguous and clone copy any layout into row-major order", "[cpu]") {
  td::testing::reseed(30);
  for (Layout layout : td::testing::all_layouts()) {
    for (td::Shape shape : {td::Shape{7, 33, 2}, td::Shape{1000003}, td::Shape{}, td::Shape{0, 3}}) {
      td::Tensor x = td::testing::random_tensor(shape, td::kFloat32, layout);
      td::Tensor c = x.contiguous();
      CHECK(c.is_contiguous());
      CHECK(values(c) == values(x));
      CHECK(c.is_same(x) == x.is_contiguous());
      td::Tensor k = x.clone();
      CHECK(!k.is_alias_of(x));
      CHECK(values(k) == values(x));
    }
  }
  td::Tensor big = td::arange(4096 * 4096).view({4096, 4096}).t().contiguous();
  CHECK(big.select(0, 1).select(0, 2).item<int64_t>() == 2 * 4096 + 1);
  CHECK(big.select(0, 4095).select(0, 4095).item<int64_t>() == 4096 * 4096 - 1);
}

TEST_CASE("copy_ broadcasts the source and converts its dtype and device", "[cpu]") {
  td::Tensor dst = td::zeros({2, 3}, td::kFloat64);
  dst.copy_(td::tensor({1, 2, 3}, td::kInt32).to(td::Device("cpu:1")));
  CHECK(values(dst) == std::vector<double>{1, 2, 3, 1, 2, 3});
  td::Tensor t = td::zeros({3, 2}).t();
  t.copy_(td::arange(6).view({2, 3}));
  CHECK(values(t) == std::vector<double>{0, 1, 2, 3, 4, 5});
  Snapshot before(dst);
  check_error([&] { dst.copy_(td::ones({3, 2})); }, {"copy_", "[3, 2]", "[2, 3]"});
  check_error([&] { td::zeros({1}).expand({3}).copy_(td::ones({3})); }, {"copy_", "single memory location"});
  before.check_unchanged(dst);
  td::Tensor line = td::arange(6.0);
  Snapshot line_before(line);
  check_error([&] { line.narrow(0, 0, 4).copy_(line.narrow(0, 1, 4)); }, {"copy_", "same memory"});
  line_before.check_unchanged(line);
}

TEST_CASE("fill_ and zero_ write every element of a view and only of the view", "[cpu]") {
  td::Tensor x = td::ones({4, 4});
  x.slice(1, 0, std::nullopt, 2).zero_();
  CHECK(td::sum(x).item<double>() == 8);
  x.select(0, 0).fill_(3.7);
  CHECK(values(x.select(0, 0)) == std::vector<double>(4, static_cast<double>(3.7f)));
  td::Tensor i = td::zeros({2}, td::kInt32);
  i.fill_(2.9);
  CHECK(values(i) == std::vector<double>{2, 2});
}
