#include "tests/testing.h"

namespace td = tandem;
using td::testing::check_error;

namespace {

const td::DType kAll[] = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16,
                          td::kInt64,   td::kInt32,   td::kUInt8,   td::kBool};

}  // namespace

TEST_CASE("dtypes have PyTorch's sizes and names, and parse back from them", "[cpu]") {
  const size_t sizes[] = {4, 8, 2, 2, 8, 4, 1, 1};
  const char* names[] = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"};
  for (int i = 0; i < 8; ++i) {
    CHECK(td::element_size(kAll[i]) == sizes[i]);
    CHECK(std::string(td::dtype_name(kAll[i])) == names[i]);
    CHECK(td::parse_dtype(names[i]) == kAll[i]);
  }
  check_error([] { td::parse_dtype("float8"); }, {"unknown dtype", "float8"});
}

TEST_CASE("promote_types matches torch.promote_types for every pair", "[cpu]") {
  // Rows and columns in the order of kAll, as printed by PyTorch 2.15.
  const char* table[8][8] = {
      {"float32", "float64", "float32", "float32", "float32", "float32", "float32", "float32"},
      {"float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64"},
      {"float32", "float64", "float16", "float32", "float16", "float16", "float16", "float16"},
      {"float32", "float64", "float32", "bfloat16", "bfloat16", "bfloat16", "bfloat16", "bfloat16"},
      {"float32", "float64", "float16", "bfloat16", "int64", "int64", "int64", "int64"},
      {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int32", "int32"},
      {"float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "uint8"},
      {"float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"},
  };
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      INFO(td::dtype_name(kAll[i]) << " with " << td::dtype_name(kAll[j]));
      CHECK(std::string(td::dtype_name(td::promote_types(kAll[i], kAll[j]))) == table[i][j]);
    }
  }
}

TEST_CASE("can_cast matches torch.can_cast for every pair", "[cpu]") {
  const int table[8][8] = {
      {1, 1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 1, 0, 0, 0, 0},
      {1, 1, 1, 1, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1, 1, 0}, {1, 1, 1, 1, 1, 1, 1, 1},
  };
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) CHECK(td::can_cast(kAll[i], kAll[j]) == (table[i][j] == 1));
  }
}

TEST_CASE("result_type ranks dimensioned tensors over 0-dim tensors over numbers", "[cpu]") {
  auto t = [](td::DType d) { return td::zeros({2}, d); };
  auto s = [](td::DType d) { return td::zeros({}, d); };
  // Same category: the higher rank decides.
  CHECK(td::result_type(t(td::kInt32), s(td::kInt64)) == td::kInt32);
  CHECK(td::result_type(t(td::kFloat16), s(td::kFloat64)) == td::kFloat16);
  CHECK(td::result_type(t(td::kUInt8), td::Scalar(1000)) == td::kUInt8);
  CHECK(td::result_type(t(td::kFloat16), td::Scalar(1.5)) == td::kFloat16);
  // A higher category below wins, at its own type (numbers at the default float).
  CHECK(td::result_type(t(td::kInt32), s(td::kFloat64)) == td::kFloat64);
  CHECK(td::result_type(t(td::kInt64), td::Scalar(2.5)) == td::kFloat32);
  CHECK(td::result_type(t(td::kBool), td::Scalar(2)) == td::kInt64);
  CHECK(td::result_type(t(td::kBool), s(td::kUInt8)) == td::kUInt8);
  // Two 0-dim tensors promote normally; 0-dim against a number follows the same ranking.
  CHECK(td::result_type(s(td::kInt32), s(td::kFloat16)) == td::kFloat16);
  CHECK(td::result_type(s(td::kInt32), td::Scalar(7)) == td::kInt32);
  CHECK(td::result_type(s(td::kInt32), td::Scalar(7.5)) == td::kFloat32);
  CHECK(td::result_type(t(td::kFloat32), t(td::kFloat64)) == td::kFloat64);
}

TEST_CASE("scalars keep their kind and convert like tensor casts", "[cpu]") {
  CHECK(td::Scalar(true).is_bool());
  CHECK(td::Scalar(3).is_integral());
  CHECK(td::Scalar(int64_t{1} << 40).to_int() == (int64_t{1} << 40));
  CHECK(td::Scalar(2.5f).is_floating());
  CHECK(td::Scalar(2.7).to<int64_t>() == 2);
  CHECK(td::Scalar(-2.7).to<int32_t>() == -2);
  CHECK(td::Scalar(300).to<uint8_t>() == 44);  // wraps modulo 256, as a tensor cast does
  CHECK(td::Scalar(0.5).to<bool>());
  CHECK(td::Scalar(NAN).to<int64_t>() == INT64_MIN);
  CHECK(td::Scalar(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).to<td::Half>().bits == 0x3c01);
}
