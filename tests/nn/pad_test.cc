// F::pad in its four modes, the padding layers, and the convolutions' padding_mode: PyTorch 2.15's
// values (negative pads, integer inputs and 1-3 padded dims included), gradients, printing, and the
// errors, with the input unchanged.
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;
using Values = std::vector<double>;

namespace {

Tensor counting(const Shape& shape, td::DType dtype = td::kFloat32) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return td::arange(n, dtype).view(shape);
}

Values first(const Tensor& t, int64_t count) { return values(t.flatten().narrow(0, 0, count)); }

}  // namespace

TEST_CASE("pad gives PyTorch's values in every mode, negative pads cropping", "[cpu]") {
  // Each line: PyTorch 2.15's F.pad on the same input.
  const Tensor x = counting({1, 2, 3});
  CHECK(values(F::pad(x, {2, 1}, td::kReflect)) == Values{2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4});
  CHECK(values(F::pad(x, {-1, 1}, td::kReflect)) == Values{1, 2, 1, 4, 5, 4});
  CHECK(values(F::pad(x, {2, 1}, td::kReplicate)) == Values{0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5});
  CHECK(values(F::pad(x, {-1, 4}, td::kReplicate)) == Values{1, 2, 2, 2, 2, 2, 4, 5, 5, 5, 5, 5});
  CHECK(values(F::pad(x, {3, 1}, td::kCircular)) == Values{0, 1, 2, 0, 1, 2, 0, 3, 4, 5, 3, 4, 5, 3});
  CHECK(values(F::pad(x, {-1, 2}, td::kCircular)) == Values{1, 2, 1, 2, 4, 5, 4, 5});  // wraps what is left
  const Tensor cropped = F::pad(x, {1, -2, 1, 1}, td::kConstant, 7);
  CHECK(cropped.sizes() == Shape{1, 4, 2});
  CHECK(values(cropped) == Values{7, 7, 7, 0, 7, 3, 7, 7});
  CHECK(F::pad(x, {-2, -1}).sizes() == Shape{1, 2, 0});
  CHECK(values(F::pad(x, {0, 0, 0, 0, 0, 0})) == values(x));
  // Reflection and replication in original coordinates, past a crop on the other side.
  const Tensor four = counting({1, 1, 4});
  CHECK(values(F::pad(four, {-1, 2}, td::kReflect)) == Values{1, 2, 3, 2, 1});
  CHECK(values(F::pad(four, {-2, 3}, td::kReflect)) == Values{2, 3, 2, 1, 0});
  CHECK(values(F::pad(four, {2, -1}, td::kReflect)) == Values{2, 1, 0, 1, 2});
  CHECK(values(F::pad(four, {-1, 3}, td::kReplicate)) == Values{1, 2, 3, 3, 3, 3});
  CHECK(values(F::pad(four, {0, 4}, td::kCircular)) == Values{0, 1, 2, 3, 0, 1, 2, 3});
  CHECK(F::pad(four, {-4, 0}).sizes() == Shape{1, 1, 0});
  CHECK(values(F::pad(x, {-4, 2}, td::kReplicate)) == Values{2, 5});  // the clamp reaches past the crop
  CHECK(F::pad(x, {-2, -1}, td::kCircular).sizes() == Shape{1, 2, 0});
  CHECK(values(F::pad(x, {-4, 2}, td::kReflect)) == Values{0, 3});  // mirrored from past the crop, as PyTorch
  CHECK(F::pad(x, {-4, 1}, td::kCircular).sizes() == Shape{1, 2, 0});
  CHECK(F::pad(td::zeros({1, 2, 0}), {0, 0}, td::kCircular).sizes() == Shape{1, 2, 0});
  // Two and three padded dims.
  const Tensor r2 = F::pad(counting({2, 3, 4}), {1, 1, 1, 1}, td::kReflect);
  CHECK(r2.sizes() == Shape{2, 5, 6});
  CHECK(first(r2, 12) == Values{5, 4, 5, 6, 7, 6, 1, 0, 1, 2, 3, 2});
  const Tensor p3 = F::pad(counting({1, 2, 3, 4}), {1, 1, 1, 1, 1, 1}, td::kReplicate);
  CHECK(p3.sizes() == Shape{1, 4, 5, 6});
  CHECK(first(p3, 12) == Values{0, 0, 1, 2, 3, 3, 0, 0, 1, 2, 3, 3});
  CHECK(first(F::pad(counting({1, 2, 3, 4}), {1, 1, 1, 1, 1, 1}, td::kReflect), 12) ==
        Values{17, 16, 17, 18, 19, 18, 13, 12, 13, 14, 15, 14});
  // Integers: the value converted to the dtype (2.5 -> 2); an empty batch.
  const Tensor ints = F::pad(counting({1, 2, 3}, td::kInt64), {1, 1}, td::kConstant, 2.5);
  CHECK(ints.dtype() == td::kInt64);
  CHECK(values(ints) == Values{2, 0, 1, 2, 2, 2, 3, 4, 5, 2});
  CHECK(values(F::pad(counting({1, 2, 3}, td::kInt64), {1, 1}, td::kReflect)) == Values{1, 0, 1, 2, 1, 4, 3, 4, 5, 4});
  CHECK(F::pad(td::zeros({0, 1, 4}), {1, 1}, td::kReflect).sizes() == Shape{0, 1, 6});
  // Constant padding of any dims, the first included.
  CHECK(F::pad(td::ones({2, 3}), {0, 0, 1, 2}, td::kConstant, -1).sizes() == Shape{5, 3});
}

TEST_CASE("pad's gradients: each source position gets the sum of the positions that read it", "[cpu]") {
  Tensor x = td::tensor({1.0, 2.0, 3.0, 4.0}, td::kFloat64).view({1, 1, 4}).requires_grad_(true);
  F::pad(x, {2, 3}, td::kReplicate).sum().backward();
  CHECK(values(x.grad()) == Values{3, 1, 1, 4});
  x.mutable_grad() = Tensor();
  F::pad(x, {2, 1}, td::kReflect).sum().backward();
  CHECK(values(x.grad()) == Values{1, 2, 3, 1});
  x.mutable_grad() = Tensor();
  F::pad(x, {3, -1}, td::kCircular).sum().backward();  // [1, 2, 3] wrapped: 1, 2, 3, 1, 2, 3
  CHECK(values(x.grad()) == Values{2, 2, 2, 0});
  x.mutable_grad() = Tensor();
  F::pad(x, {-1, 2}, td::kConstant, 5).sum().backward();
  CHECK(values(x.grad()) == Values{0, 1, 1, 1});
}

TEST_CASE("pad's errors name pad, the mode, the padding and the shape; the input is unchanged", "[cpu]") {
  const Tensor x = counting({1, 2, 3});
  const Snapshot before(x);
  check_error([&] { F::pad(x, {1, 1, 1}); }, {"pad", "[1, 1, 1]", "pairs"});
  check_error([&] { F::pad(x, {1, 1, 1, 1, 1, 1, 1, 1}); }, {"pad", "4 dims", "[1, 2, 3]", "has 3"});
  check_error([&] { F::pad(x, {3, 1}, td::kReflect); }, {"pad", "reflect", "(3, 1)", "dim 2", "below", "3"});
  check_error([&] { F::pad(x, {4, 1}, td::kCircular); }, {"pad", "circular", "(4, 1)", "more than once"});
  check_error([&] { F::pad(x, {-2, 2}, td::kCircular); }, {"pad", "circular", "more than once", "1 values"});
  check_error([&] { F::pad(td::ones({3}), {1, 1}, td::kReflect); }, {"pad", "reflect", "2-D or 3-D", "[3]"});
  check_error([&] { F::pad(counting({1, 2, 3, 4}), {1, 1}, td::kReplicate); },
              {"pad", "replicate", "2-D or 3-D", "[1, 2, 3, 4]"});
  check_error([&] { F::pad(x, {1, 1}, td::kReflect, 2); }, {"pad", "value", "constant", "reflect"});
  check_error([&] { F::pad(x, {-5, 3}); }, {"pad", "constant", "(-5, 3)", "crops more", "3"});
  check_error([&] { F::pad(x, {-2, -2}, td::kReplicate); }, {"pad", "replicate", "size of -1"});
  check_error([&] { F::pad(x, {-4, 4}, td::kCircular); }, {"pad", "circular", "crops more"});
  check_error([&] { F::pad(x, {-1, -2}, td::kReplicate); }, {"pad", "replicate", "size of 0"});
  check_error([&] { F::pad(td::zeros({1, 2, 0}), {1, 1}, td::kReplicate); },
              {"pad", "replicate", "[1, 2, 0]", "empty"});
  check_error([] { F::pad(Tensor(), {1, 1}); }, {"pad", "undefined"});
  before.check_unchanged(x);
}

TEST_CASE("the padding layers pad as F::pad and print as PyTorch's", "[cpu]") {
  CHECK(nn::ZeroPad2d(2)->str() == "ZeroPad2d((2, 2, 2, 2))");
  CHECK(nn::ZeroPad2d(Shape{1, 2, 3, 4})->str() == "ZeroPad2d((1, 2, 3, 4))");
  CHECK(nn::ZeroPad1d(2)->str() == "ZeroPad1d((2, 2))");
  CHECK(nn::ConstantPad2d(1, 3.5)->str() == "ConstantPad2d(padding=(1, 1, 1, 1), value=3.5)");
  CHECK(nn::ConstantPad1d(Shape{1, 2}, -1)->str() == "ConstantPad1d(padding=(1, 2), value=-1.0)");
  CHECK(nn::ReflectionPad2d(1)->str() == "ReflectionPad2d((1, 1, 1, 1))");
  CHECK(nn::ReflectionPad1d(3)->str() == "ReflectionPad1d((3, 3))");
  CHECK(nn::ReplicationPad1d(Shape{1, 2})->str() == "ReplicationPad1d((1, 2))");
  CHECK(nn::CircularPad2d(1)->str() == "CircularPad2d((1, 1, 1, 1))");
  CHECK(nn::ReplicationPad3d(1)->str() == "ReplicationPad3d((1, 1, 1, 1, 1, 1))");
  const Tensor x = counting({1, 2, 3, 4});
  CHECK(values(nn::ReflectionPad2d(Shape{1, 2, 0, 1})(x)) == values(F::pad(x, {1, 2, 0, 1}, td::kReflect)));
  CHECK(values(nn::ConstantPad3d(1, 2.0)(x)) == values(F::pad(x, {1, 1, 1, 1, 1, 1}, td::kConstant, 2)));
  CHECK(values(nn::ZeroPad2d(1)(x)) == values(F::pad(x, {1, 1, 1, 1})));
  CHECK(values(nn::CircularPad1d(2)(x[0])) == values(F::pad(x[0], {2, 2}, td::kCircular)));
  CHECK(values(nn::ReplicationPad2d(1)(x)) == values(F::pad(x, {1, 1, 1, 1}, td::kReplicate)));
  nn::Sequential model(nn::ReflectionPad2d(1), nn::Conv2d(2, 3, 3));
  CHECK(model(x).sizes() == Shape{1, 3, 3, 4});
  auto copy = model->clone();
  CHECK(copy->str() == model->str());
  check_error([] { nn::ZeroPad2d(Shape{1, 2, 3}); }, {"ZeroPad2d", "one number or 4 values", "(1, 2, 3)"});
  check_error([] { nn::ReflectionPad1d(Shape{1, 2, 3, 4}); }, {"ReflectionPad1d", "one number or 2 values"});
}

TEST_CASE("Conv1d and Conv2d with a padding_mode pad by F::pad first, as PyTorch's", "[cpu]") {
  td::testing::reseed(81);
  const Tensor image = td::testing::random_tensor({2, 2, 5, 6}, td::kFloat32);
  for (td::PadMode mode : {td::kReflect, td::kReplicate, td::kCircular}) {
    INFO(F::pad_mode_name(mode));
    nn::Conv2d conv(nn::Conv2dOptions(2, 3, 3).padding({1, 2}).padding_mode(mode));
    const Tensor y = conv(image);
    CHECK(y.sizes() == Shape{2, 3, 5, 8});
    check_close(y, values(F::conv2d(F::pad(image, {2, 2, 1, 1}, mode), conv->weight, conv->bias)), 0, 0);
    CHECK(conv->str() == std::string("Conv2d(2, 3, kernel_size=(3, 3), stride=(1, 1), padding=(1, 2), padding_mode=") +
                             F::pad_mode_name(mode) + ")");
    // padding='same' with an even kernel: the odd pad after, as for zeros.
    nn::Conv2d same(nn::Conv2dOptions(2, 3, {2, 3}).padding(td::kSame).padding_mode(mode));
    check_close(same(image), values(F::conv2d(F::pad(image, {1, 1, 0, 1}, mode), same->weight, same->bias)), 0, 0);
    nn::Conv1d line(nn::Conv1dOptions(2, 3, 3).padding(2).dilation(2).padding_mode(mode).bias(false));
    const Tensor row = image.flatten(2);
    check_close(line(row), values(F::conv1d(F::pad(row, {2, 2}, mode), line->weight, {}, 1, 0, 2)), 0, 0);
    CHECK(line->str() ==
          std::string("Conv1d(2, 3, kernel_size=(3,), stride=(1,), padding=(2,), dilation=(2,), bias=False, "
                      "padding_mode=") +
              F::pad_mode_name(mode) + ")");
  }
  // Zeros, the default, print nothing.
  CHECK(nn::Conv2d(nn::Conv2dOptions(2, 3, 3).padding(1).padding_mode(td::kConstant))->str() ==
        "Conv2d(2, 3, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))");
}
