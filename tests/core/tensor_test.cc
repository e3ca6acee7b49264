// The Tensor's metadata and views: views share storage and see each other's writes, each view
// op gives the elements PyTorch's would, and the ones that cannot work say why.
#include "core/allocator.h"
#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;

namespace {

std::vector<double> iota(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return v;
}

}  // namespace

TEST_CASE("a fresh tensor is contiguous with row-major strides", "[cpu]") {
  td::Tensor t = td::empty({2, 3, 4});
  CHECK(t.sizes() == td::Shape{2, 3, 4});
  CHECK(t.strides() == td::Shape{12, 4, 1});
  CHECK(t.dim() == 3);
  CHECK(t.numel() == 24);
  CHECK(t.is_contiguous());
  CHECK(t.dtype() == td::kFloat32);
  CHECK(t.device() == td::Device("cpu:0"));
  CHECK(t.nbytes() == 96);
  CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % td::kCpuAlignment == 0);
  CHECK(t.size(-1) == 4);
  CHECK(t.stride(-3) == 12);
  check_error([&] { t.size(3); }, {"size", "dim 3", "out of range"});
}

TEST_CASE("0-dim and zero-size tensors have consistent metadata", "[cpu]") {
  td::Tensor s = td::full({}, 2.5);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.is_contiguous());
  CHECK(s.item<double>() == 2.5);
  td::Tensor e = td::zeros({3, 0, 2});
  CHECK(e.numel() == 0);
  CHECK(e.is_contiguous());
  CHECK(e.view({0, 6}).sizes() == td::Shape{0, 6});
  CHECK(e.reshape({-1, 2}).sizes() == td::Shape{0, 2});
  CHECK(e.permute({2, 0, 1}).sizes() == td::Shape{2, 3, 0});
  CHECK(s.unsqueeze(0).sizes() == td::Shape{1});
  CHECK(s.view({1, 1}).item<float>() == 2.5f);
}

TEST_CASE("views share storage and see each other's writes", "[cpu]") {
  td::Tensor base = td::zeros({4, 6});
  td::Tensor row = base.select(0, 2);
  td::Tensor col = base.narrow(1, 4, 1);
  td::Tensor flat = base.view({24});
  row.fill_(1);
  col.fill_(2);
  CHECK(base.is_alias_of(row));
  CHECK(flat.select(0, 12).item<float>() == 1);  // base[2][0]
  CHECK(flat.select(0, 16).item<float>() == 2);  // base[2][4]: the column write won
  CHECK(base.select(0, 0).select(0, 4).item<float>() == 2);
  CHECK(td::sum(base).item<double>() == 6 * 1 + 4 * 2 - 1);
}

TEST_CASE("in-place writes bump a version counter that views share", "[cpu]") {
  td::Tensor base = td::zeros({3, 3});
  td::Tensor view = base.t();
  uint32_t v0 = base.version();
  view.add_(1);
  CHECK(base.version() == v0 + 1);
  CHECK(view.version() == base.version());
  td::Tensor copy = base.clone();
  base.mul_(2);
  CHECK(copy.version() == 0);
  // Ops that fill their own fresh outputs do not count as in-place writes.
  CHECK(td::zeros({2}).version() == 0);
  CHECK(td::rand({2}).version() == 0);
  CHECK(td::cat({base, base}).version() == 0);
  CHECK(base.to(td::kFloat64).version() == 0);
  CHECK(td::masked_fill(base, base > 0, 1).version() == 0);
  CHECK(td::scatter_add(base, 0, td::zeros({1, 3}, td::kInt64), base.narrow(0, 0, 1)).version() == 0);
}

TEST_CASE("view splits and merges dims that are contiguous with each other", "[cpu]") {
  td::Tensor t = td::arange(24).view({2, 3, 4});
  CHECK(values(t.view({6, 4})) == iota(24));
  CHECK(values(t.view({-1})) == iota(24));
  CHECK(t.view({2, -1, 2}).sizes() == td::Shape{2, 6, 2});
  td::Tensor tt = t.transpose(1, 2);  // [2, 4, 3] with strides [12, 1, 4]
  CHECK(tt.view({2, 4, 3, 1}).sizes() == td::Shape{2, 4, 3, 1});
  CHECK(t.permute({1, 0, 2}).view({3, 2, 2, 2}).sizes() == td::Shape{3, 2, 2, 2});
  Snapshot before(tt);
  check_error([&] { tt.view({24}); }, {"view", "[2, 4, 3]", "reshape"});
  before.check_unchanged(tt);
  check_error([&] { t.view({5, 5}); }, {"view", "[5, 5]", "size 24"});
  check_error([&] { t.view({-1, -1}); }, {"only one dimension can be inferred"});
}

TEST_CASE("reshape views when it can and copies when it must", "[cpu]") {
  td::Tensor t = td::arange(12).view({3, 4});
  td::Tensor r = t.reshape({4, 3});
  CHECK(r.is_alias_of(t));
  td::Tensor tr = t.t().reshape({12});
  CHECK(!tr.is_alias_of(t));
  CHECK(values(tr) == std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
}

TEST_CASE("permute, transpose and t reorder dims without copying", "[cpu]") {
  td::Tensor t = td::arange(24).view({2, 3, 4});
  td::Tensor p = t.permute({2, 0, 1});
  CHECK(p.sizes() == td::Shape{4, 2, 3});
  CHECK(p.strides() == td::Shape{1, 12, 4});
  CHECK(!p.is_contiguous());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) CHECK(p[i][j][k].item<int64_t>() == j * 12 + k * 4 + i);
  CHECK(t.transpose(0, -1).sizes() == td::Shape{4, 3, 2});
  CHECK(td::arange(6).view({2, 3}).t().strides() == td::Shape{1, 3});
  CHECK(td::arange(3).t().sizes() == td::Shape{3});
  check_error([&] { t.permute({0, 1}); }, {"permute", "number of dims"});
  check_error([&] { t.permute({0, 1, 1}); }, {"permute", "more than once"});
  check_error([&] { t.t(); }, {"t:", "<= 2 dimensions"});
}

TEST_CASE("narrow, slice with step, and select pick the elements Python indexing picks", "[cpu]") {
  td::Tensor t = td::arange(20).view({4, 5});
  CHECK(values(t.narrow(1, 1, 3)) == std::vector<double>{1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18});
  CHECK(values(t.narrow(0, -2, 1)) == std::vector<double>{10, 11, 12, 13, 14});
  CHECK(values(t.slice(1, 0, std::nullopt, 2).select(0, 1)) == std::vector<double>{5, 7, 9});
  CHECK(values(t.slice(1, -3, 100, 2).select(0, 0)) == std::vector<double>{2, 4});  // clipped like Python
  CHECK(t.slice(0, 3, 1).sizes() == td::Shape{0, 5});
  CHECK(t.select(1, -1).sizes() == td::Shape{4});
  CHECK(values(t.select(1, -1)) == std::vector<double>{4, 9, 14, 19});
  CHECK(t[3][4].item<int64_t>() == 19);
  check_error([&] { t.narrow(1, 3, 3); }, {"narrow", "exceeds dim 1 of size 5"});
  check_error([&] { t.select(0, 4); }, {"select", "index 4", "size 4"});
  check_error([&] { t.slice(0, 0, 2, 0); }, {"slice", "step must be positive"});
  check_error([&] { td::full({}, 1).select(0, 0); }, {"select", "0-dim"});
}

TEST_CASE("expand broadcasts with stride 0 and rejects sizes that do not match", "[cpu]") {
  td::Tensor col = td::arange(3).view({3, 1});
  td::Tensor e = col.expand({2, 3, 4});
  CHECK(e.sizes() == td::Shape{2, 3, 4});
  CHECK(e.strides() == td::Shape{0, 1, 0});
  CHECK(e[1][2][3].item<int64_t>() == 2);
  CHECK(col.expand({-1, 5}).sizes() == td::Shape{3, 5});
  check_error([&] { col.expand({4, 4}); }, {"expand", "size 3", "must match 4"});
  check_error([&] { col.expand({4}); }, {"expand", "at least"});
  // PyTorch's strides for new leading dims: size 1 steps over the dims inside it, a broadcast one 0.
  CHECK(td::zeros({3}).expand({1, 3}).strides() == td::Shape{3, 1});
  CHECK(td::zeros({3}).expand({2, 1, 3}).strides() == td::Shape{0, 3, 1});
  CHECK(td::zeros({2, 1}).expand({1, 1, 2, 4}).strides() == td::Shape{2, 2, 1, 0});
  CHECK(td::zeros({}).expand({1, 1}).strides() == td::Shape{0, 0});
}

TEST_CASE("squeeze, unsqueeze, flatten and unflatten reshape as PyTorch's do", "[cpu]") {
  td::Tensor t = td::zeros({1, 3, 1, 2});
  CHECK(t.squeeze().sizes() == td::Shape{3, 2});
  CHECK(t.squeeze(2).sizes() == td::Shape{1, 3, 2});
  CHECK(t.squeeze(1).sizes() == td::Shape{1, 3, 1, 2});  // not size 1: unchanged
  CHECK(t.unsqueeze(-1).sizes() == td::Shape{1, 3, 1, 2, 1});
  CHECK(t.unsqueeze(0).sizes() == td::Shape{1, 1, 3, 1, 2});
  td::Tensor a = td::arange(24).view({2, 3, 4});
  CHECK(a.flatten().sizes() == td::Shape{24});
  CHECK(a.flatten(1).sizes() == td::Shape{2, 12});
  CHECK(a.flatten(0, 1).sizes() == td::Shape{6, 4});
  CHECK(values(a.transpose(0, 2).flatten()) == values(a.transpose(0, 2).contiguous().view({24})));
  CHECK(a.unflatten(2, {2, -1}).sizes() == td::Shape{2, 3, 2, 2});
  CHECK(td::full({}, 1).flatten().sizes() == td::Shape{1});
  CHECK(td::full({}, 1).flatten(-1, 0).sizes() == td::Shape{1});  // a 0-dim tensor counts as one dim
  check_error([] { td::full({}, 1).flatten(1); }, {"flatten: dim 1 is out of range"});
  check_error([] { td::full({}, 1.0).requires_grad_().flatten(0, 1); }, {"flatten: dim 1 is out of range"});
  check_error([&] { a.unflatten(1, {2, 2}); }, {"unflatten", "invalid for input of size 3"});
  check_error([&] { a.unsqueeze(4); }, {"unsqueeze", "out of range"});
  check_error([&] { a.flatten(2, 1); }, {"flatten: start_dim 2 comes after end_dim 1"});
  check_error([&] { a.flatten(0, 3); }, {"flatten: dim 3 is out of range for a tensor of 3 dimensions"});
  check_error([&] { t.squeeze(4); }, {"squeeze: dim 4 is out of range for a tensor of 4 dimensions", "[-4, 3]"});
  check_error([&] { a.transpose(0, -4); }, {"transpose: dim -4 is out of range"});
}

TEST_CASE("split, chunk and unbind return views that cover the tensor", "[cpu]") {
  td::Tensor t = td::arange(10);
  auto parts = t.chunk(3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].numel() == 4);
  CHECK(parts[1].numel() == 4);
  CHECK(parts[2].numel() == 2);
  CHECK(parts[2].is_alias_of(t));
  auto sizes = t.split_with_sizes({3, 7});
  CHECK(values(sizes[1]) == std::vector<double>{3, 4, 5, 6, 7, 8, 9});
  CHECK(t.split(4).size() == 3);
  CHECK(td::arange(6).view({2, 3}).unbind(1).size() == 3);
  check_error([&] { t.split_with_sizes({3, 3}); }, {"split_with_sizes", "add up to 6", "size 10"});
  check_error([&] { t.chunk(0); }, {"chunk", "must be positive"});
  check_error([] { td::ones({}).unbind(0); }, {"unbind: cannot unbind a 0-dim tensor"});
  check_error([&] { t.unbind(1); }, {"unbind: dim 1 is out of range"});
}

TEST_CASE("as_strided builds arbitrary views inside the storage and refuses to leave it", "[cpu]") {
  td::Tensor t = td::arange(10);
  td::Tensor windows = t.as_strided({4, 3}, {2, 1});
  CHECK(values(windows.select(0, 3)) == std::vector<double>{6, 7, 8});
  check_error([&] { t.as_strided({4, 3}, {3, 1}); }, {"as_strided", "reach element 11", "10 elements"});
  check_error([&] { t.as_strided({2}, {1, 1}); }, {"as_strided", "differ in length"});
}

TEST_CASE("shape arithmetic that overflows int64 is refused, never wrapped into a view past the storage", "[cpu]") {
  // 3689348814741910333 * 5 wraps to exactly 49: the view was accepted, and select(0, 1000) read
  // far outside the 49 elements.
  Tensor t = td::zeros({49});
  check_error([&] { t.view({3689348814741910333, 5}); }, {"view", "more elements than an int64"});
  check_error([&] { t.reshape({3689348814741910333, 5}); }, {"reshape", "more elements than an int64"});
  check_error([&] { t.view({3689348814741910333, -1, 5}); }, {"view", "more elements than an int64"});
  Tensor four = td::zeros({4});
  check_error([&] { four.as_strided({3}, {int64_t{1} << 62}); }, {"as_strided", "largest int64"});
  check_error([&] { four.as_strided({int64_t{1} << 62, 4}, {0, 0}); }, {"more elements than an int64"});
  CHECK(four.as_strided({0, 5}, {int64_t{1} << 62, 1}).numel() == 0);  // empty: reaches nothing
  Tensor five = td::zeros({5});
  check_error([&] { five.narrow(0, 2, INT64_MAX); }, {"narrow", "exceeds dim 0 of size 5"});
  // A step past the end keeps one element (its stride cannot be multiplied out).
  Tensor stepped = td::arange(5).view({5, 1}).t().slice(1, 1, std::nullopt, INT64_MAX);
  CHECK(stepped.sizes() == td::Shape{1, 1});
  CHECK(stepped.item<int64_t>() == 1);
  CHECK(td::arange(5).slice(0, 0, std::nullopt, int64_t{1} << 62).sizes() == td::Shape{1});
}

TEST_CASE("an empty tensor is contiguous whatever its strides, as in PyTorch", "[cpu]") {
  CHECK(td::zeros({2, 0, 3}).transpose(0, 2).is_contiguous());
  CHECK(td::zeros({4, 3}).t().slice(0, 0, 0).is_contiguous());
  CHECK_FALSE(td::zeros({4, 3}).t().is_contiguous());
}

TEST_CASE("typed access checks the dtype and item needs exactly one element", "[cpu]") {
  td::Tensor t = td::ones({2, 3});
  CHECK(t.data_ptr<float>()[5] == 1.0f);
  Snapshot before(t);
  check_error([&] { t.data_ptr<double>(); }, {"data_ptr<float64>", "float32"});
  check_error([&] { t.item(); }, {"item", "6 elements", "[2, 3]"});
  before.check_unchanged(t);
  check_error([] { td::Tensor().sizes(); }, {"undefined"});
  CHECK(td::tensor({true}).item<bool>());
  CHECK(td::tensor({7}, td::kUInt8).item<int>() == 7);
  CHECK(td::tensor({0.5}, td::kBFloat16).item<double>() == 0.5);
}

TEST_CASE("a shape whose elements or bytes overflow is an error, not a short allocation", "[cpu]") {
  const int64_t big = int64_t{1} << 62;
  check_error([&] { td::zeros({big}); }, {"empty", "float32", "more bytes than a size_t counts"});
  check_error([&] { td::zeros({big + 16}); }, {"empty", "more bytes"});  // 4 * (2^62 + 16) wraps to 64
  check_error([&] { td::zeros({int64_t{1} << 40, int64_t{1} << 40}); }, {"more elements than an int64 counts"});
  check_error([&] { td::ones({1, 1}).expand({int64_t{1} << 40, int64_t{1} << 40}).numel(); },
              {"[1099511627776, 1099511627776]", "more elements"});
  CHECK(td::zeros({0, big, 4}).numel() == 0);  // empty however large the other sizes
  CHECK(td::zeros({big, 0}).sizes() == td::Shape{big, 0});
}

TEST_CASE("size and stride of a 0-dim tensor are errors, as its dims are none", "[cpu]") {
  Tensor x = td::tensor(3.0);
  check_error([&] { x.size(0); }, {"size", "0-dim tensor"});
  check_error([&] { x.size(-1); }, {"size", "0-dim tensor"});
  check_error([&] { x.stride(0); }, {"stride", "0-dim tensor"});
  check_error([&] { x.unflatten(0, {1}); }, {"unflatten", "0-dim tensor"});
  CHECK(td::ones({2, 3}).size(-1) == 3);
}
