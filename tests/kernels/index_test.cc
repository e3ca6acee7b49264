// cat, stack, split/chunk, index_select, flip, gather, scatter_add, embedding and one_hot, each checked
// against a naive reference that walks logical indices in double.
#include "tests/testing.h"

#include <algorithm>
#include <cmath>

namespace td = tandem;
namespace tt = td::testing;
using td::Shape;
using td::Tensor;
using tt::check_equal;
using tt::check_error;
using tt::Snapshot;

namespace {

// A tensor holding exactly `v` (row-major): the reference side builds inputs without kernels
// beyond a dtype conversion.
Tensor make(const std::vector<double>& v, const Shape& shape, td::DType dtype) {
  return td::tensor(v).to(dtype).view(shape);
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : tt::values(t)) out.push_back(static_cast<int64_t>(v));
  return out;
}

std::string describe(const std::string& what, int64_t dim, tt::Layout layout) {
  return what + " dim " + std::to_string(dim) + " " + tt::layout_name(layout);
}

int64_t wrapped(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

std::vector<double> ref_cat(const std::vector<Tensor>& parts, int64_t d, const Shape& out_shape) {
  std::vector<std::vector<double>> vals;
  for (const Tensor& p : parts) vals.push_back(tt::values(p));
  std::vector<double> out(td::numel_of(out_shape));
  for (int64_t flat = 0; flat < static_cast<int64_t>(out.size()); ++flat) {
    auto idx = tt::unravel(flat, out_shape);
    size_t p = 0;
    while (idx[d] >= parts[p].sizes()[d]) idx[d] -= parts[p++].sizes()[d];
    out[flat] = vals[p][tt::ravel(idx, parts[p].sizes())];
  }
  return out;
}

std::vector<double> ref_index_select(const Tensor& x, int64_t d, const std::vector<int64_t>& index) {
  Shape shape = x.sizes();
  shape[d] = static_cast<int64_t>(index.size());
  auto xv = tt::values(x);
  std::vector<double> out(td::numel_of(shape));
  for (int64_t flat = 0; flat < static_cast<int64_t>(out.size()); ++flat) {
    auto idx = tt::unravel(flat, shape);
    idx[d] = index[idx[d]];
    out[flat] = xv[tt::ravel(idx, x.sizes())];
  }
  return out;
}

std::vector<double> ref_gather(const Tensor& x, int64_t d, const Tensor& index) {
  auto xv = tt::values(x);
  auto iv = ints(index);
  std::vector<double> out(iv.size());
  for (int64_t flat = 0; flat < static_cast<int64_t>(out.size()); ++flat) {
    auto idx = tt::unravel(flat, index.sizes());
    idx[d] = iv[flat];
    out[flat] = xv[tt::ravel(idx, x.sizes())];
  }
  return out;
}

// Adds in the row-major order of `index`, which is the documented order for repeated targets.
std::vector<double> ref_scatter_add(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src) {
  auto out = tt::values(x);
  auto iv = ints(index);
  auto sv = tt::values(src);
  for (int64_t flat = 0; flat < static_cast<int64_t>(iv.size()); ++flat) {
    auto idx = tt::unravel(flat, index.sizes());
    double value = sv[tt::ravel(idx, src.sizes())];
    idx[d] = iv[flat];
    out[tt::ravel(idx, x.sizes())] += value;
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------- cat

TEST_CASE("cat joins tensors along every dim, negative dims counting from the end", "[cpu]") {
  tt::reseed(1);
  const Shape base = {7, 1, 33};
  for (int64_t dim = -3; dim < 3; ++dim) {
    const int64_t d = wrapped(dim, 3);
    for (tt::Layout layout : tt::all_layouts()) {
      std::vector<Tensor> parts;
      for (int64_t size : {1, 7, 33}) {
        Shape shape = base;
        shape[d] = size;
        parts.push_back(tt::random_tensor(shape, td::kFloat32, layout));
      }
      Tensor out = td::cat(parts, dim);
      Shape expected_shape = base;
      expected_shape[d] = 1 + 7 + 33;
      REQUIRE(out.sizes() == expected_shape);
      CHECK(out.dtype() == td::kFloat32);
      CHECK(out.is_contiguous());
      check_equal(out, ref_cat(parts, d, expected_shape), describe("cat", dim, layout));
    }
  }
}

TEST_CASE("cat promotes its inputs' dtypes as a binary op would", "[cpu]") {
  tt::reseed(2);
  Tensor a = tt::random_tensor({3, 7}, td::kInt32, tt::Layout::Contiguous, -50, 50);
  Tensor b = tt::random_tensor({2, 7}, td::kFloat32);
  Tensor out = td::cat({a, b});
  CHECK(out.dtype() == td::kFloat32);
  check_equal(out, ref_cat({a, b}, 0, {5, 7}), "int32 + float32");

  Tensor c = tt::random_tensor({3, 1}, td::kInt64, tt::Layout::Contiguous, -50, 50);
  Tensor ints_out = td::cat({a, c}, -1);
  CHECK(ints_out.dtype() == td::kInt64);
  check_equal(ints_out, ref_cat({a, c}, 1, {3, 8}), "int32 + int64");

  Tensor h = tt::random_tensor({1, 7}, td::kFloat16);
  Tensor mixed = td::cat({h, b, a});
  CHECK(mixed.dtype() == td::kFloat32);
  check_equal(mixed, ref_cat({h, b, a}, 0, {6, 7}), "float16 + float32 + int32");
}

TEST_CASE("cat skips legacy empty 1-D tensors among tensors of more dims", "[cpu]") {
  tt::reseed(3);
  Tensor a = tt::random_tensor({2, 7}, td::kFloat32);
  Tensor b = tt::random_tensor({2, 1}, td::kFloat32);
  Tensor empty = td::empty({0});
  Tensor out = td::cat({empty, a, empty, b, empty}, 1);
  REQUIRE(out.sizes() == Shape{2, 8});
  check_equal(out, ref_cat({a, b}, 1, {2, 8}));

  // A 1-D empty tensor among 1-D tensors is an ordinary part.
  Tensor v = tt::random_tensor({7}, td::kFloat32);
  Tensor out1 = td::cat({v, empty, v});
  REQUIRE(out1.sizes() == Shape{14});
  check_equal(out1, ref_cat({v, v}, 0, {14}));

  Tensor only_empty = td::cat({empty, empty});
  CHECK(only_empty.sizes() == Shape{0});
  // Only legacy empties: one [0] of their promoted dtype, along any dim, as PyTorch's.
  for (int64_t dim : {1, 5, -3}) {
    Tensor joined = td::cat({empty, td::empty({0}, td::kFloat64)}, dim);
    CHECK(joined.sizes() == Shape{0});
    CHECK(joined.dtype() == td::kFloat64);
  }
  Tensor leaf = td::empty({0}).requires_grad_(true);
  td::cat({leaf, leaf}, 1).sum().backward();
  CHECK(leaf.grad().sizes() == Shape{0});
}

TEST_CASE("cat reads non-contiguous inputs through their strides", "[cpu]") {
  tt::reseed(4);
  Tensor t = tt::random_tensor({33, 7}, td::kFloat64).t();            // [7, 33], transposed
  Tensor s = tt::random_tensor({7, 66}, td::kFloat64).slice(1, 0, std::nullopt, 2);  // stride 2
  Tensor e = tt::random_tensor({7, 1}, td::kFloat64).expand({7, 5});   // stride 0
  REQUIRE_FALSE(t.is_contiguous());
  REQUIRE_FALSE(s.is_contiguous());
  Tensor out = td::cat({t, s, e}, 1);
  REQUIRE(out.sizes() == Shape{7, 71});
  check_equal(out, ref_cat({t, s, e}, 1, {7, 71}));
  Tensor out0 = td::cat({t.t(), s.t()});
  check_equal(out0, ref_cat({t.t(), s.t()}, 0, {66, 7}));
}

// ---------------------------------------------------------------- stack

TEST_CASE("stack inserts a new dim at every position, including after the last", "[cpu]") {
  tt::reseed(5);
  const Shape shape = {7, 33};
  for (int64_t dim = -3; dim < 3; ++dim) {
    const int64_t d = wrapped(dim, 3);
    for (tt::Layout layout : tt::all_layouts()) {
      std::vector<Tensor> parts;
      for (int i = 0; i < 3; ++i) parts.push_back(tt::random_tensor(shape, td::kFloat32, layout));
      Tensor out = td::stack(parts, dim);
      Shape expected_shape = shape;
      expected_shape.insert(expected_shape.begin() + d, 3);
      REQUIRE(out.sizes() == expected_shape);
      std::vector<std::vector<double>> vals;
      for (const Tensor& p : parts) vals.push_back(tt::values(p));
      std::vector<double> expected(td::numel_of(expected_shape));
      for (int64_t flat = 0; flat < static_cast<int64_t>(expected.size()); ++flat) {
        auto idx = tt::unravel(flat, expected_shape);
        int64_t which = idx[d];
        idx.erase(idx.begin() + d);
        expected[flat] = vals[which][tt::ravel(idx, shape)];
      }
      check_equal(out, expected, describe("stack", dim, layout));
    }
  }
  Tensor one = td::stack({tt::random_tensor({1}, td::kInt64, tt::Layout::Contiguous, 0, 9)});
  CHECK(one.sizes() == Shape{1, 1});
}

// ---------------------------------------------------------------- split, chunk

TEST_CASE("split gives equal parts, with a shorter last part when the size does not divide", "[cpu]") {
  tt::reseed(6);
  Tensor x = tt::random_tensor({10, 7}, td::kFloat32);
  auto xv = tt::values(x);
  auto uneven = td::split(x, 3);
  REQUIRE(uneven.size() == 4);
  const int64_t rows[] = {3, 3, 3, 1};
  int64_t start = 0;
  for (size_t i = 0; i < uneven.size(); ++i) {
    REQUIRE(uneven[i].sizes() == Shape{rows[i], 7});
    CHECK(uneven[i].is_alias_of(x));
    check_equal(uneven[i], std::vector<double>(xv.begin() + start * 7, xv.begin() + (start + rows[i]) * 7));
    start += rows[i];
  }

  auto even = x.split(5);
  REQUIRE(even.size() == 2);
  CHECK(even[1].sizes() == Shape{5, 7});

  // Along the last dim, named by a negative dim: 7 columns in pieces of 7 is one piece.
  auto whole = td::split(x, 7, -1);
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].sizes() == Shape{10, 7});
  auto cols = td::split(x, 2, -1);
  REQUIRE(cols.size() == 4);
  CHECK(cols[3].sizes() == Shape{10, 1});
  std::vector<double> last_col;
  for (int64_t r = 0; r < 10; ++r) last_col.push_back(xv[r * 7 + 6]);
  check_equal(cols[3], last_col);
}

TEST_CASE("split_with_sizes cuts at the given sizes, empty parts included", "[cpu]") {
  tt::reseed(7);
  Tensor x = tt::random_tensor({3, 10}, td::kFloat64);
  auto xv = tt::values(x);
  auto parts = x.split_with_sizes({2, 0, 5, 3}, 1);
  REQUIRE(parts.size() == 4);
  const int64_t sizes[] = {2, 0, 5, 3};
  int64_t start = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    REQUIRE(parts[i].sizes() == Shape{3, sizes[i]});
    CHECK(parts[i].is_alias_of(x));
    std::vector<double> expected;
    for (int64_t r = 0; r < 3; ++r) {
      for (int64_t c = start; c < start + sizes[i]; ++c) expected.push_back(xv[r * 10 + c]);
    }
    check_equal(parts[i], expected);
    start += sizes[i];
  }
  check_error([&] { x.split_with_sizes({2, 5}, 1); }, {"split_with_sizes", "add up to 7", "size 10"});
}

TEST_CASE("chunk of 10 rows into 3 gives 4, 4 and 2 rows that share the input's storage", "[cpu]") {
  tt::reseed(8);
  Tensor x = tt::random_tensor({10, 7}, td::kFloat32);
  auto xv = tt::values(x);
  auto parts = td::chunk(x, 3);
  REQUIRE(parts.size() == 3);
  const int64_t rows[] = {4, 4, 2};
  int64_t start = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    REQUIRE(parts[i].sizes() == Shape{rows[i], 7});
    CHECK(parts[i].is_alias_of(x));
    CHECK(parts[i].storage_offset() == x.storage_offset() + start * 7);
    check_equal(parts[i], std::vector<double>(xv.begin() + start * 7, xv.begin() + (start + rows[i]) * 7));
    start += rows[i];
  }
  // A write through a chunk shows in the input.
  parts[2].fill_(42);
  CHECK(tt::read(x, 8 * 7) == 42);
  CHECK(tt::read(x, 10 * 7 - 1) == 42);
  CHECK(tt::read(x, 8 * 7 - 1) == xv[8 * 7 - 1]);

  auto cols = x.chunk(7, 1);
  REQUIRE(cols.size() == 7);
  CHECK(cols[6].sizes() == Shape{10, 1});
  // More chunks than rows: one row each.
  CHECK(td::chunk(x, 33).size() == 10);
  // An empty dim gives as many empty chunks as asked for (PyTorch: 3 tensors of shape [2, 0]).
  const auto empty = td::chunk(td::zeros({2, 0}), 3, 1);
  REQUIRE(empty.size() == 3);
  for (const Tensor& part : empty) CHECK(part.sizes() == Shape{2, 0});
  CHECK(td::chunk(td::zeros({0}).requires_grad_(), 3).size() == 3);  // through autograd too
}

// ---------------------------------------------------------------- index_select

TEST_CASE("index_select picks slices along every dim with int64 and int32 indices", "[cpu]") {
  tt::reseed(9);
  const Shape shape = {7, 1, 33};
  for (td::DType index_dtype : {td::kInt64, td::kInt32}) {
    for (int64_t dim = -3; dim < 3; ++dim) {
      const int64_t d = wrapped(dim, 3);
      for (tt::Layout layout : tt::all_layouts()) {
        Tensor x = tt::random_tensor(shape, td::kFloat32, layout);
        // More picks than the dim holds, so indices repeat.
        Tensor index = td::randint(0, shape[d], {2 * shape[d] + 1}, index_dtype);
        Tensor out = td::index_select(x, dim, index);
        Shape expected_shape = shape;
        expected_shape[d] = 2 * shape[d] + 1;
        REQUIRE(out.sizes() == expected_shape);
        check_equal(out, ref_index_select(x, d, ints(index)),
                    describe(std::string("index_select ") + td::dtype_name(index_dtype), dim, layout));
      }
    }
  }
}

TEST_CASE("index_select with repeated, reversed and non-contiguous indices", "[cpu]") {
  tt::reseed(10);
  Tensor x = tt::random_tensor({7, 33}, td::kInt64, tt::Layout::Strided, -1000, 1000);
  Tensor index = td::tensor({6, 6, 0, 3, 6, 0});
  check_equal(td::index_select(x, 0, index), ref_index_select(x, 0, {6, 6, 0, 3, 6, 0}));
  Tensor rev = td::tensor({32, 31, 30, 2, 1, 0, 0}, td::kInt32);
  check_equal(x.index_select(1, rev), ref_index_select(x, 1, {32, 31, 30, 2, 1, 0, 0}));
  Tensor strided_index = td::randint(0, 33, {20}).slice(0, 0, std::nullopt, 3);
  REQUIRE_FALSE(strided_index.is_contiguous());
  check_equal(x.index_select(-1, strided_index), ref_index_select(x, 1, ints(strided_index)));
  Tensor none = td::index_select(x, 1, td::empty({0}, td::kInt64));
  CHECK(none.sizes() == Shape{7, 0});
}

// x's row-major values with the order along each flipped dim reversed.
std::vector<double> ref_flip(const Tensor& x, const std::vector<bool>& flipped) {
  const std::vector<double> v = tt::values(x);
  const Shape& shape = x.sizes();
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    int64_t rest = i, from = 0, stride = 1;
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      const int64_t at = rest % shape[d];
      rest /= shape[d];
      from += (flipped[d] ? shape[d] - 1 - at : at) * stride;
      stride *= shape[d];
    }
    out[i] = v[from];
  }
  return out;
}

TEST_CASE("flip reverses the named dims in every layout and dtype, into a new tensor", "[cpu]") {
  tt::reseed(43);
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kBFloat16, td::kInt64, td::kUInt8, td::kBool}) {
    for (tt::Layout layout : tt::all_layouts()) {
      Tensor x = tt::random_tensor({4, 1, 5, 3}, dtype, layout, -50, 50);
      const std::string what = std::string(td::dtype_name(dtype)) + " " + tt::layout_name(layout);
      Tensor y = x.flip({0, -1});
      CHECK(y.dtype() == dtype);
      REQUIRE(y.sizes() == x.sizes());
      check_equal(y, ref_flip(x, {true, false, false, true}), what);
      check_equal(td::flip(x, {2, 1}), ref_flip(x, {false, true, true, false}), what);
      check_equal(td::flip(x, {}), tt::values(x), what);
    }
  }
  Tensor x = td::arange(6.0).view({2, 3});
  Tensor same = x.flip({});
  CHECK(same.data_ptr() != x.data_ptr());  // a copy even when nothing moves, as PyTorch's
  check_equal(x.flip({0, 1}), {5, 4, 3, 2, 1, 0});
  check_equal(td::flip(td::tensor(2.5), {0}), {2.5});
  CHECK(td::flip(td::tensor(2.5), {-1}).dim() == 0);
  CHECK(td::flip(td::zeros({0, 3}), {0, 1}).sizes() == Shape{0, 3});
}

TEST_CASE("tril and triu keep one side of a diagonal of the last two dims, in every dtype, NaN zeroed", "[cpu]") {
  // PyTorch 2.15: triu(arange(12).view(3, 4), 1) and tril(..., -1).
  Tensor x = td::arange(12.0).view({3, 4});
  check_equal(x.triu(1), {0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11});
  check_equal(td::tril(x, -1), {0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0});
  check_equal(td::tril(x), {0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0});
  check_equal(td::triu(x, 5), std::vector<double>(12, 0));
  check_equal(td::tril(x, 3), tt::values(x));
  check_equal(td::tril(td::tensor({{NAN, NAN}, {1.0, 2.0}})), {NAN, 0, 1, 2});
  tt::reseed(46);
  for (td::DType dtype : {td::kFloat32, td::kBFloat16, td::kInt64, td::kUInt8, td::kBool}) {
    for (tt::Layout layout : tt::all_layouts()) {
      Tensor batch = tt::random_tensor({2, 3, 5, 4}, dtype, layout, -50, 50);
      const std::vector<double> v = tt::values(batch);
      for (int64_t diagonal : {-2, 0, 1}) {
        std::vector<double> lower(v.size()), upper(v.size());
        for (size_t i = 0; i < v.size(); ++i) {
          const int64_t col = static_cast<int64_t>(i % 4), row = static_cast<int64_t>(i / 4 % 5);
          lower[i] = col - row <= diagonal ? v[i] : 0;
          upper[i] = col - row >= diagonal ? v[i] : 0;
        }
        const std::string what = std::string(td::dtype_name(dtype)) + " " + tt::layout_name(layout);
        Tensor l = td::tril(batch, diagonal);
        CHECK(l.dtype() == dtype);
        check_equal(l, lower, what);
        check_equal(batch.triu(diagonal), upper, what);
      }
    }
  }
  CHECK(td::tril(td::zeros({0, 3})).sizes() == Shape{0, 3});
  Tensor vector = td::ones({3});
  Snapshot before(vector);
  check_error([&] { td::tril(vector); }, {"tril", "at least 2 dims", "[3]"});
  check_error([&] { td::triu(Tensor()); }, {"triu", "undefined"});
  before.check_unchanged(vector);
}

TEST_CASE("flip refuses a dim twice or outside the tensor, leaving it unchanged", "[cpu]") {
  Tensor x = td::arange(6.0).view({2, 3});
  Snapshot before(x);
  check_error([&] { td::flip(x, {0, -2}); }, {"flip", "dim 0 appears more than once"});
  check_error([&] { td::flip(x, {2}); }, {"flip", "dim", "2"});
  check_error([&] { td::flip(Tensor(), {0}); }, {"flip", "undefined"});
  before.check_unchanged(x);
}

TEST_CASE("index_select with a 0-D index keeps the dim with size 1", "[cpu]") {
  tt::reseed(11);
  Tensor x = tt::random_tensor({7, 33}, td::kFloat32, tt::Layout::Permuted);
  Tensor out = td::index_select(x, 1, td::tensor(5));
  REQUIRE(out.sizes() == Shape{7, 1});
  check_equal(out, ref_index_select(x, 1, {5}));
  Tensor out32 = td::index_select(x, 0, td::tensor(6, td::kInt32));
  REQUIRE(out32.sizes() == Shape{1, 33});
  check_equal(out32, ref_index_select(x, 0, {6}));
}

TEST_CASE("index_select of a 0-D tensor takes exactly one index", "[cpu]") {
  Tensor x = td::tensor(2.5);
  Tensor out = td::index_select(x, 0, td::tensor({0}));
  CHECK(out.dim() == 0);
  check_equal(out, {2.5});
  Snapshot before(x);
  check_error([&] { td::index_select(x, 0, td::tensor({0, 0, 0})); }, {"index_select", "3"});
  before.check_unchanged(x);
}

TEST_CASE("index_select and gather of 1000003 elements", "[cpu]") {
  tt::reseed(12);
  const int64_t n = 1000003;
  Tensor x = tt::random_tensor({n}, td::kFloat32, tt::Layout::Offset, -100, 100);
  Tensor index = td::randint(0, n, {n});
  check_equal(td::index_select(x, 0, index), ref_index_select(x, 0, ints(index)), "index_select");
  check_equal(td::gather(x, 0, index), ref_gather(x, 0, index), "gather");
}

// ---------------------------------------------------------------- gather

TEST_CASE("gather reads along every dim from non-contiguous inputs and indices", "[cpu]") {
  tt::reseed(13);
  const Shape shape = {7, 33, 5};
  for (int64_t dim = -3; dim < 3; ++dim) {
    const int64_t d = wrapped(dim, 3);
    for (tt::Layout layout : tt::all_layouts()) {
      for (td::DType index_dtype : {td::kInt64, td::kInt32}) {
        Tensor x = tt::random_tensor(shape, td::kFloat64, layout);
        // The index may be smaller than x in the other dims and any size along dim.
        Shape index_shape = {5, 33, 1};
        index_shape[d] = 9;
        Tensor index = tt::random_tensor(index_shape, index_dtype, layout, 0, static_cast<double>(shape[d]));
        Tensor out = td::gather(x, dim, index);
        REQUIRE(out.sizes() == index_shape);
        check_equal(out, ref_gather(x, d, index), describe("gather", dim, layout));
      }
    }
  }
}

TEST_CASE("gather with a size-1 dim and a one-element index", "[cpu]") {
  tt::reseed(14);
  Tensor x = tt::random_tensor({1, 7}, td::kInt32, tt::Layout::Permuted, -9, 9);
  Tensor index = td::tensor({{0}});
  check_equal(x.gather(0, index), ref_gather(x, 0, index));
  Tensor along1 = td::tensor({{6, 0, 6, 3}});
  check_equal(x.gather(1, along1), ref_gather(x, 1, along1));
}

// ---------------------------------------------------------------- scatter_add

TEST_CASE("scatter_add accumulates repeated indices along dim 1", "[cpu]") {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, td::kFloat32);
  Tensor index = td::tensor({{0, 0, 2, 0}, {1, 1, 1, 2}});
  Tensor src = make({10, 20, 30, 40, 50, 60, 70, 80}, {2, 4}, td::kFloat32);
  Tensor out = td::scatter_add(x, 1, index, src);
  check_equal(out, {1 + 10 + 20 + 40, 2, 3 + 30, 4, 5 + 50 + 60 + 70, 6 + 80});
}

TEST_CASE("scatter_add adds repeated indices in order", "[cpu]") {
  // In float32 1e8 + 1 rounds back to 1e8, so the result shows the order of the additions.
  Tensor x = td::zeros({1, 2});
  Tensor index = td::tensor({{0, 0, 0, 0, 1, 1, 1}});
  std::vector<double> sv = {1e8, 1, -1e8, 1, 1, 1e8, -1e8};
  Tensor src = make(sv, {1, 7}, td::kFloat32);
  Tensor out = td::scatter_add(x, 1, index, src);
  float a = 0, b = 0;
  for (int k = 0; k < 4; ++k) a += static_cast<float>(sv[k]);
  for (int k = 4; k < 7; ++k) b += static_cast<float>(sv[k]);
  REQUIRE(a == 1.0f);  // the reference itself shows the order matters
  REQUIRE(b == 0.0f);
  check_equal(out, {a, b});
}

TEST_CASE("scatter_add matches the reference along every dim with non-contiguous operands", "[cpu]") {
  tt::reseed(15);
  const Shape shape = {7, 33, 5};
  for (int64_t dim = -3; dim < 3; ++dim) {
    const int64_t d = wrapped(dim, 3);
    for (tt::Layout layout : tt::all_layouts()) {
      for (td::DType dtype : {td::kFloat64, td::kInt64, td::kInt32}) {
        Tensor x = tt::random_tensor(shape, dtype, layout, -100, 100);
        Shape index_shape = {5, 33, 1};
        index_shape[d] = 40;  // more than the dim holds: repeats are certain
        Shape src_shape = {7, 33, 5};
        src_shape[d] = 41;  // src may be larger than index
        Tensor index = tt::random_tensor(index_shape, td::kInt64, layout, 0, static_cast<double>(shape[d]));
        Tensor src = tt::random_tensor(src_shape, dtype, layout, -100, 100);
        Tensor out = td::scatter_add(x, dim, index, src);
        REQUIRE(out.sizes() == shape);
        // Same additions in the same order: float64 agrees to the last bit.
        check_equal(out, ref_scatter_add(x, d, index, src), describe(td::dtype_name(dtype), dim, layout));
      }
    }
  }
}

TEST_CASE("scatter_add out of place leaves the input unchanged; scatter_add_ writes in place and bumps the version",
          "[cpu]") {
  tt::reseed(16);
  Tensor x = tt::random_tensor({7, 33}, td::kFloat64, tt::Layout::Strided);
  Tensor index = td::randint(0, 7, {9, 33});
  Tensor src = tt::random_tensor({9, 33}, td::kFloat64);
  auto expected = ref_scatter_add(x, 0, index, src);
  Snapshot before(x);
  Tensor out = x.scatter_add(0, index, src);
  before.check_unchanged(x);
  CHECK_FALSE(out.is_alias_of(x));
  check_equal(out, expected);

  const uint32_t version = x.version();
  Tensor& same = td::scatter_add_(x, 0, index, src);
  CHECK(same.is_same(x));
  CHECK(x.version() == version + 1);
  CHECK(x.sizes() == before.sizes);
  CHECK(x.strides() == before.strides);
  check_equal(x, tt::values(out));
}

// ---------------------------------------------------------------- embedding, one_hot

TEST_CASE("embedding looks up weight rows for a 2-D index tensor", "[cpu]") {
  tt::reseed(17);
  for (td::DType index_dtype : {td::kInt64, td::kInt32}) {
    for (tt::Layout layout : tt::all_layouts()) {
      Tensor weight = tt::random_tensor({33, 7}, td::kFloat32, layout);
      Tensor indices = tt::random_tensor({3, 5}, index_dtype, layout, 0, 33);
      Tensor out = td::embedding(weight, indices);
      REQUIRE(out.sizes() == Shape{3, 5, 7});
      auto wv = tt::values(weight);
      auto iv = ints(indices);
      std::vector<double> expected;
      for (int64_t i : iv) {
        for (int64_t c = 0; c < 7; ++c) expected.push_back(wv[i * 7 + c]);
      }
      check_equal(out, expected, std::string(td::dtype_name(index_dtype)) + " " + tt::layout_name(layout));
    }
  }
  Tensor weight = tt::random_tensor({1, 7}, td::kFloat64);
  Tensor one = td::embedding(weight, td::tensor(0));
  REQUIRE(one.sizes() == Shape{7});
  check_equal(one, tt::values(weight));
}

TEST_CASE("one_hot with explicit and inferred num_classes", "[cpu]") {
  tt::reseed(18);
  Tensor indices = tt::random_tensor({3, 11}, td::kInt64, tt::Layout::Permuted, 0, 7);
  auto iv = ints(indices);
  int64_t max = 0;
  for (int64_t i : iv) max = std::max(max, i);
  for (int64_t classes : {int64_t{7}, int64_t{33}, int64_t{-1}}) {
    const int64_t n = classes == -1 ? max + 1 : classes;
    Tensor out = td::one_hot(indices, classes);
    REQUIRE(out.sizes() == Shape{3, 11, n});
    CHECK(out.dtype() == td::kInt64);
    std::vector<double> expected;
    for (int64_t i : iv) {
      for (int64_t c = 0; c < n; ++c) expected.push_back(c == i ? 1 : 0);
    }
    check_equal(out, expected, "num_classes " + std::to_string(classes));
  }
  Tensor inferred = td::one_hot(td::tensor({2, 0}));
  check_equal(inferred, {0, 0, 1, 1, 0, 0});
  Tensor scalar = td::one_hot(td::tensor(1), 3);
  REQUIRE(scalar.sizes() == Shape{3});
  check_equal(scalar, {0, 1, 0});
}

// ---------------------------------------------------------------- errors

TEST_CASE("an index out of range is rejected before anything is written, naming the op and the index", "[cpu]") {
  Tensor x = td::arange(21, td::kFloat32).view({3, 7});
  Snapshot xs(x);
  for (int64_t bad : {int64_t{-1}, int64_t{7}}) {
    const std::string b = "index " + std::to_string(bad);
    Tensor index1 = td::tensor({0, 3, 0});
    index1.select(0, 1).fill_(bad);
    Snapshot is(index1);
    check_error([&] { td::index_select(x, 1, index1); }, {"index_select", b, "position 1", "size 7"});
    is.check_unchanged(index1);

    Tensor index2 = td::zeros({3, 2}, td::kInt64);
    index2.select(0, 2).select(0, 1).fill_(bad);
    Snapshot is2(index2);
    check_error([&] { td::gather(x, 1, index2); }, {"gather", b, "size 7"});
    Tensor src = td::ones({3, 2});
    Snapshot ss(src);
    check_error([&] { td::scatter_add_(x, 1, index2, src); }, {"scatter_add_", b, "size 7"});
    check_error([&] { td::scatter_add(x, 1, index2, src); }, {"scatter_add", b});
    is2.check_unchanged(index2);
    ss.check_unchanged(src);
  }
  xs.check_unchanged(x);

  Tensor weight = td::ones({5, 4});
  Snapshot ws(weight);
  check_error([&] { td::embedding(weight, td::tensor({{0, 5}})); }, {"embedding", "index 5", "size 5"});
  check_error([&] { td::embedding(weight, td::tensor({{-1, 0}}, td::kInt32)); }, {"embedding", "index -1"});
  ws.check_unchanged(weight);

  Tensor labels = td::tensor({0, 3});
  Snapshot ls(labels);
  check_error([&] { td::one_hot(labels, 3); }, {"one_hot", "index 3", "size 3"});
  check_error([&] { td::one_hot(td::tensor({-1, 0})); }, {"one_hot", "index -1"});
  check_error([&] { td::one_hot(td::tensor({-1, 0}), 4); }, {"one_hot", "index -1"});
  ls.check_unchanged(labels);
}

TEST_CASE("a floating index tensor is rejected", "[cpu]") {
  Tensor x = td::ones({3, 4});
  Tensor findex = td::zeros({3, 4});
  Snapshot xs(x), fs(findex);
  check_error([&] { td::index_select(x, 0, td::zeros({2})); }, {"index_select", "int64 or int32", "float32"});
  check_error([&] { td::gather(x, 0, findex); }, {"gather", "int64 or int32", "float32"});
  check_error([&] { td::scatter_add_(x, 0, findex, x.clone()); }, {"scatter_add_", "int64 or int32", "float32"});
  check_error([&] { td::embedding(x, td::zeros({2}, td::kFloat64)); }, {"embedding", "float64"});
  check_error([&] { td::one_hot(findex, 3); }, {"one_hot", "int64", "float32"});
  xs.check_unchanged(x);
  fs.check_unchanged(findex);
}

TEST_CASE("cat and stack reject mismatched shapes, naming both", "[cpu]") {
  Tensor a = td::ones({2, 3}), b = td::zeros({2, 4}), c = td::zeros({2, 3, 1}), d = td::zeros({3, 2});
  Snapshot as(a), bs(b), cs(c), ds(d);
  check_error([&] { td::cat({a, b}, 0); }, {"cat", "[2, 3]", "[2, 4]", "dim 1"});
  check_error([&] { td::cat({a, c}, 0); }, {"cat", "same number of dimensions", "[2, 3]", "[2, 3, 1]"});
  check_error([&] { td::cat({}, 0); }, {"cat", "non-empty"});
  check_error([&] { td::cat({a, a}, 2); }, {"cat", "dim 2", "out of range"});
  check_error([&] { td::stack({a, d}); }, {"stack", "[2, 3]", "[3, 2]"});
  check_error([&] { td::stack({}); }, {"stack", "non-empty"});
  as.check_unchanged(a);
  bs.check_unchanged(b);
  cs.check_unchanged(c);
  ds.check_unchanged(d);
}

TEST_CASE("gather and scatter_add_ reject an index larger than the input outside dim", "[cpu]") {
  Tensor x = td::ones({3, 4});
  Tensor index = td::zeros({4, 2}, td::kInt64);
  Snapshot xs(x), is(index);
  check_error([&] { td::gather(x, 1, index); }, {"gather", "[4, 2]", "[3, 4]", "dim 0"});
  check_error([&] { td::scatter_add_(x, 1, index, td::ones({4, 2})); }, {"scatter_add_", "[4, 2]", "dim 0"});
  check_error([&] { td::gather(x, 1, td::zeros({3}, td::kInt64)); }, {"gather", "same number of dimensions"});
  xs.check_unchanged(x);
  is.check_unchanged(index);
}

TEST_CASE("scatter_add_ rejects a src of another dtype", "[cpu]") {
  Tensor x = td::zeros({3, 4});
  Tensor index = td::zeros({3, 4}, td::kInt64);
  Tensor src = td::ones({3, 4}, td::kFloat64);
  Snapshot xs(x), is(index), ss(src);
  check_error([&] { td::scatter_add_(x, 0, index, src); }, {"scatter_add_", "float32", "float64"});
  xs.check_unchanged(x);
  is.check_unchanged(index);
  ss.check_unchanged(src);
}

TEST_CASE("scatter_add_ rejects a src or an index that shares memory with self, as PyTorch does", "[cpu]") {
  // Element k of src goes to element index[k] of self: read from self's own memory, the result
  // would depend on the order the elements are visited in (one order on a CPU, another on a GPU).
  Tensor x = td::tensor(std::vector<float>{1, 2, 3});
  Tensor index = td::tensor(std::vector<int64_t>{1, 2, 0});
  Snapshot xs(x);
  check_error([&] { td::scatter_add_(x, 0, index, x); }, {"scatter_add_", "src refers to memory of the written-to"});
  Tensor wide = td::arange(6, td::kFloat32);
  Tensor head = wide.narrow(0, 0, 3);
  Snapshot ws(wide);
  check_error([&] { td::scatter_add_(head, 0, index, wide.narrow(0, 1, 3)); }, {"scatter_add_", "src"});
  // An int64 index inside self would be read after writes had changed it, past the checked range.
  Tensor positions = td::tensor(std::vector<int64_t>{1, 2, 0});
  Snapshot ps(positions);
  check_error([&] { td::scatter_add_(positions, 0, positions, td::ones({3}, td::kInt64)); },
              {"scatter_add_", "index refers to memory of the written-to"});
  xs.check_unchanged(x);
  ws.check_unchanged(wide);
  ps.check_unchanged(positions);
  // Apart, in one storage, they are fine.
  td::scatter_add_(head, 0, index, wide.narrow(0, 3, 3));
  check_equal(wide, {0 + 5, 1 + 3, 2 + 4, 3, 4, 5});
}

TEST_CASE("cat promotes over every tensor, the skipped empty 1-D ones included", "[cpu]") {
  td::Tensor out = td::cat({td::zeros({0}), td::ones({2, 2}, td::kInt32)});
  CHECK(out.dtype() == td::kFloat32);  // as torch.cat
  CHECK(out.sizes() == td::Shape{2, 2});
}

TEST_CASE("scatter and scatter_ write src or a value at index's positions, as PyTorch's; gradients too", "[cpu]") {
  const td::Tensor placed = td::zeros({3, 5}).scatter(0, td::tensor({0, 1, 2, 0, 0, 2, 0, 0, 1, 2}).view({2, 5}),
                                                      td::arange(1.0, 11.0).view({2, 5}));
  CHECK(tt::values(placed) == std::vector<double>{1, 7, 8, 4, 5, 0, 2, 0, 9, 0, 6, 0, 3, 0, 10});
  td::Tensor one_hot = td::zeros({2, 4});
  const uint32_t version = one_hot.version();
  one_hot.scatter_(1, td::tensor({2, 1}).view({2, 1}), 1.25);
  CHECK(tt::values(one_hot) == std::vector<double>{0, 0, 1.25, 0, 0, 1.25, 0, 0});
  CHECK(one_hot.version() == version + 1);
  CHECK(tt::values(td::zeros({3}, td::kBool).scatter(0, td::tensor({1}), true)) == std::vector<double>{0, 1, 0});
  // A place written twice keeps the last write on the CPU.
  CHECK(tt::values(td::zeros({2}).scatter(0, td::tensor({1, 1, 1}), td::tensor({1.0, 2.0, 3.0}))) ==
        std::vector<double>{0, 3});
  // Gradients: the written places lose x's; src's come from them.
  td::Tensor a = td::arange(12.0).to(td::kFloat64).view({3, 4}).requires_grad_();
  td::Tensor s = td::tensor({10.0, 20.0, 60.0, 70.0}, td::kFloat64).view({2, 2}).requires_grad_();
  const td::Tensor y = a.narrow(0, 0, 2).scatter(1, td::tensor({0, 2, 3, 3}).view({2, 2}), s);
  CHECK(tt::values(y) == std::vector<double>{10, 1, 20, 3, 4, 5, 6, 70});
  (y * td::arange(1.0, 9.0).to(td::kFloat64).view({2, 4})).sum().backward();
  CHECK(tt::values(a.grad()) == std::vector<double>{0, 2, 0, 4, 5, 6, 7, 0, 0, 0, 0, 0});
  CHECK(tt::values(s.grad()) == std::vector<double>{1, 3, 8, 8});
  td::Tensor b = td::ones({2, 3}).requires_grad_();
  (b * 1).scatter_(1, td::tensor({0, 2}).view({2, 1}), 5.0).sum().backward();
  CHECK(tt::values(b.grad()) == std::vector<double>{0, 1, 1, 1, 1, 0});

  td::Tensor x = td::zeros({2, 3});
  td::testing::Snapshot before(x);
  check_error([&] { x.scatter_(1, td::tensor({3}).view({1, 1}), 1.0); }, {"scatter_", "index 3", "out of range"});
  check_error(
      [&] {
        x.scatter_(1, td::tensor({0}).view({1, 1}), td::ones({1, 1}, td::kFloat64));
      },
      {"scatter_", "float64", "float32"});
  check_error([&] { x.scatter_(1, td::tensor({0}).view({1, 1}), 1e40); }, {"scatter_", "overflow"});
  before.check_unchanged(x);
}
