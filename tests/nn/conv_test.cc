// conv1d / Conv1d and conv_transpose2d / ConvTranspose2d: against direct
// references in double, PyTorch 2.15's values, the adjoint identity that
// defines a transposed convolution, PyTorch's output_size rule, printing, and
// the errors (operands unchanged).
#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "tests/nn/pytorch_reference.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::read;
using td::testing::Snapshot;
using td::testing::values;
using td::testing::sine_ramp;  // the inputs the PyTorch reference values were computed on

namespace {

struct Geometry {
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups;
};

// Direct transposed convolution in double: input pixel (ih, iw) of channel ci
// adds x * w[ci, co, a, b] at output (ih * s - p + a * d, iw * s - p + b * d)
// of channel co of its group.
Tensor direct_transpose(const Tensor& x, const Tensor& w, const Tensor& b, const Geometry& g) {
  const int64_t n = x.size(0), cin = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t group_in = cin / g.groups, group_out = w.size(1), kh = w.size(2), kw = w.size(3);
  const int64_t oh = (h - 1) * g.stride[0] - 2 * g.padding[0] + g.dilation[0] * (kh - 1) + g.output_padding[0] + 1;
  const int64_t ow = (wd - 1) * g.stride[1] - 2 * g.padding[1] + g.dilation[1] * (kw - 1) + g.output_padding[1] + 1;
  const int64_t cout = group_out * g.groups;
  std::vector<double> out(static_cast<size_t>(n * cout * oh * ow), 0.0);
  auto at = [](const Tensor& t, std::initializer_list<int64_t> idx) {
    return read(t, td::testing::ravel(std::vector<int64_t>(idx), t.sizes()));
  };
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < wd; ++j)
          for (int64_t co = 0; co < group_out; ++co)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t bb = 0; bb < kw; ++bb) {
                const int64_t y = i * g.stride[0] - g.padding[0] + a * g.dilation[0];
                const int64_t xx = j * g.stride[1] - g.padding[1] + bb * g.dilation[1];
                if (y < 0 || y >= oh || xx < 0 || xx >= ow) continue;
                const int64_t channel = (ci / group_in) * group_out + co;
                out[static_cast<size_t>(((ni * cout + channel) * oh + y) * ow + xx)] +=
                    at(x, {ni, ci, i, j}) * at(w, {ci, co, a, bb});
              }
  Tensor result = td::tensor(out).view({n, cout, oh, ow});
  return b.defined() ? result + b.to(td::kFloat64).view({1, cout, 1, 1}) : result;
}

}  // namespace

TEST_CASE(
    "conv_transpose2d equals a direct transposed convolution for every "
    "geometry",
    "[cpu]") {
  td::testing::reseed(71);
  const std::vector<Geometry> geometries = {
      {{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1}, {{2, 2}, {0, 0}, {1, 1}, {1, 1}, 1}, {{2, 1}, {1, 0}, {1, 0}, {1, 2}, 2},
      {{3, 2}, {1, 1}, {2, 0}, {1, 1}, 1}, {{1, 1}, {0, 1}, {1, 1}, {2, 2}, 1},  // output_padding past the stride
      {{2, 3}, {2, 1}, {0, 2}, {3, 1}, 3}, {{1, 2}, {1, 2}, {0, 1}, {2, 1}, 1},
  };
  for (const Geometry& g : geometries) {
    for (td::DType dtype : {td::kFloat64, td::kFloat32}) {
      INFO("stride " << td::shape_str(g.stride) << " padding " << td::shape_str(g.padding) << " output_padding "
                     << td::shape_str(g.output_padding) << " dilation " << td::shape_str(g.dilation) << " groups "
                     << g.groups << " " << td::dtype_name(dtype));
      const Tensor x = td::testing::random_tensor({2, 3 * g.groups, 4, 3}, dtype);
      const Tensor w = td::testing::random_tensor({3 * g.groups, 2, 3, 2}, dtype);
      const Tensor b = td::testing::random_tensor({2 * g.groups}, dtype);
      const Tensor y = F::conv_transpose2d(x, w, b, g.stride, g.padding, g.output_padding, g.groups, g.dilation);
      const Tensor expected = direct_transpose(x, w, b, g);
      CHECK(y.sizes() == expected.sizes());
      CHECK(y.dtype() == dtype);
      const double tol = dtype == td::kFloat64 ? 1e-13 : 1e-5;
      check_close(y.to(td::kFloat64), values(expected), tol, tol);
      // Unbatched: the same for one image.
      check_close(F::conv_transpose2d(x[1], w, b, g.stride, g.padding, g.output_padding, g.groups, g.dilation),
                  values(y[1]), tol, tol);
    }
  }
}

TEST_CASE(
    "conv_transpose2d is conv2d's adjoint: <conv2d(y, w), x> = <y, "
    "conv_transpose2d(x, w)>",
    "[cpu]") {
  td::testing::reseed(72);
  for (int64_t groups : {1, 2}) {
    // conv2d maps [N, 4, 9, 8] to [N, 2 * groups, 4, 4] with stride (2, 3),
    // padding (1, 2), dilation (2, 1); its transpose maps back (output_padding
    // (0, 1) makes up the 8).
    const Tensor w = td::testing::random_tensor({2 * groups, 4 / groups, 3, 2}, td::kFloat64);
    const Tensor y = td::testing::random_tensor({2, 4, 9, 8}, td::kFloat64);
    const Tensor forward = F::conv2d(y, w, {}, {2, 3}, {1, 2}, {2, 1}, groups);
    REQUIRE(forward.sizes() == Shape{2, 2 * groups, 4, 4});
    const Tensor x = td::testing::random_tensor(forward.sizes(), td::kFloat64);
    const Tensor back = F::conv_transpose2d(x, w, {}, {2, 3}, {1, 2}, {0, 1}, groups, {2, 1});
    REQUIRE(back.sizes() == y.sizes());
    const double left = (forward * x).sum().item<double>(), right = (y * back).sum().item<double>();
    CHECK(std::abs(left - right) <= 1e-12 * std::abs(left));
  }
}

TEST_CASE(
    "conv_transpose2d gives PyTorch's values; output_padding rows take "
    "values where padding cut them",
    "[cpu]") {
  // PyTorch 2.15: F.conv_transpose2d(x, w, b, stride=(2, 1), padding=(1, 0),
  // output_padding=(1, 0), groups=2, dilation=(1, 2)) with x = sin(0.7 i) [1,
  // 4, 2, 3], w = sin(1.3 i) [4, 1, 3, 2], b = sin(0.4 i) + 0.5 [2]; its first
  // 10 of 40 values, in float64.
  const Tensor x = sine_ramp({1, 4, 2, 3}, 0.7), w = sine_ramp({4, 1, 3, 2}, 1.3), b = sine_ramp({2}, 0.4) + 0.5;
  const std::vector<double> first = {1.2215134942177417,  1.6453953788754574, 2.194706350272263,   0.8055416383682561,
                                     0.30325583927142186, 0.1505819987735303, 0.17409827799457767, 0.32796243154350746,
                                     0.20155132867561643, 0.066396528750363};
  for (td::DType dtype : {td::kFloat64, td::kFloat32}) {
    const Tensor y = F::conv_transpose2d(x.to(dtype), w.to(dtype), b.to(dtype), {2, 1}, {1, 0}, {1, 0}, 2, {1, 2});
    CHECK(y.sizes() == Shape{1, 2, 4, 5});
    const double tol = dtype == td::kFloat64 ? 1e-14 : 1e-6;
    check_close(y.flatten().narrow(0, 0, 10).to(td::kFloat64), first, tol, tol);
  }
  // An input of 1x1 spread by a 2x2 kernel, stride 3, padding 1: without
  // output_padding nothing is left (0x0); with output_padding 1 the one output
  // pixel is x * w[1, 1], as in PyTorch.
  const Tensor one = td::tensor({2.0}).view({1, 1, 1, 1}), k = td::tensor({1.0, 2.0, 3.0, 5.0}).view({1, 1, 2, 2});
  CHECK(values(F::conv_transpose2d(one, k, {}, 3, 1, 1)) == std::vector<double>{10.0});
}

TEST_CASE(
    "conv_transpose2d in 16 bits: float32's values rounded, within the "
    "dtype's rounding",
    "[cpu]") {
  td::testing::reseed(73);
  const Tensor x = td::testing::random_tensor({2, 4, 5, 3}, td::kFloat32);
  const Tensor w = td::testing::random_tensor({4, 3, 3, 3}, td::kFloat32),
               b = td::testing::random_tensor({6}, td::kFloat32);
  const Tensor reference = F::conv_transpose2d(x, w, b.to(td::kFloat32), 2, 1, 1, 2);
  for (td::DType dtype : {td::kFloat16, td::kBFloat16}) {
    INFO(td::dtype_name(dtype));
    const Tensor y = F::conv_transpose2d(x.to(dtype), w.to(dtype), b.to(dtype), 2, 1, 1, 2);
    CHECK(y.dtype() == dtype);
    // Inputs rounded to the dtype, then a few roundings of sums of up to 12
    // products.
    const double tol = 8 * td::testing::rtol_for(dtype);
    check_close(y.to(td::kFloat32), values(reference), tol, tol * 4);
  }
}

TEST_CASE(
    "conv_transpose2d's errors name the op and the shapes, and leave the "
    "operands unchanged",
    "[cpu]") {
  const Tensor x = td::ones({1, 4, 3, 3}), w = td::ones({4, 1, 2, 2});
  const Snapshot before_x(x), before_w(w);
  check_error(
      [&] {
        F::conv_transpose2d(x, td::ones({4, 1, 2, 2}), {}, 1, 0, 0, 3);
      },
      {"conv_transpose2d", "[4, 1, 2, 2]", "not divisible by groups 3"});
  check_error(
      [&] {
        F::conv_transpose2d(td::ones({1, 3, 3, 3}), w);
      },
      {"conv_transpose2d", "[1, 3, 3, 3]", "3 channels", "expects 4"});
  check_error([&] { F::conv_transpose2d(x, w, td::ones({3}), 1, 0, 0, 2); },
              {"conv_transpose2d", "bias", "[2]", "[3]"});
  check_error([&] { F::conv_transpose2d(x, w, {}, 0); }, {"conv_transpose2d", "stride", "positive"});
  check_error([&] { F::conv_transpose2d(x, w, {}, 1, -1); }, {"conv_transpose2d", "padding", "negative"});
  check_error([&] { F::conv_transpose2d(x, w, {}, 1, 0, 0, 1, 0); }, {"conv_transpose2d", "dilation", "positive"});
  check_error([&] { F::conv_transpose2d(x, w, {}, 2, 0, 2); },
              {"conv_transpose2d", "output_padding (2, 2)", "stride (2, 2)", "dilation (1, 1)"});
  check_error(
      [&] {
        F::conv_transpose2d(x, w, {}, 1, {1, 2, 3});
      },
      {"conv_transpose2d", "padding", "one or two values", "3"});
  check_error(
      [&] {
        F::conv_transpose2d(td::ones({1, 1, 1, 1}), td::ones({1, 1, 1, 1}), {}, 1, 1);
      },
      {"conv_transpose2d", "[1, 1, 1, 1]", "-1x-1", "too small"});
  check_error([&] { F::conv_transpose2d(td::ones({4, 3}), w); }, {"conv_transpose2d", "3-D", "4-D", "[4, 3]"});
  check_error([&] { F::conv_transpose2d(x, td::ones({4, 1, 2})); }, {"conv_transpose2d", "weight", "4-D", "[4, 1, 2]"});
  check_error([&] { F::conv_transpose2d(x, w.to(td::kFloat64)); },
              {"conv_transpose2d", "float32", "float64", "one dtype"});
  check_error([&] { F::conv_transpose2d(x, w.to(td::Device("cpu:1"))); }, {"conv_transpose2d", "cpu:1", "one device"});
  check_error([&] { F::conv_transpose2d(td::ones({1, 4, 0, 3}), w); }, {"conv_transpose2d", "[1, 4, 0, 3]"});
  check_error([&] { F::conv_transpose2d(Tensor(), w); }, {"conv_transpose2d", "defined"});
  before_x.check_unchanged(x);
  before_w.check_unchanged(w);
}

TEST_CASE(
    "ConvTranspose2d: PyTorch's parameter shapes, initial bounds, "
    "printing and output_size",
    "[cpu]") {
  td::testing::reseed(74);
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(16, 32, 3).groups(2));
  CHECK(up->weight.sizes() == Shape{16, 16, 3, 3});
  CHECK(up->bias.sizes() == Shape{32});
  // Fan-in weight.size(1) * 3 * 3 = 144: kaiming_uniform(a = sqrt 5) and the
  // bias within 1 / 12.
  CHECK(up->weight.abs().max().item<double>() <= 1.0 / 12);
  CHECK(up->bias.abs().max().item<double>() <= 1.0 / 12);
  CHECK(up->weight.abs().max().item<double>() > 0.9 / 12);
  CHECK(up->str() == "ConvTranspose2d(16, 32, kernel_size=(3, 3), stride=(1, 1), groups=2)");
  CHECK(nn::ConvTranspose2d(16, 33, 3)->str() == "ConvTranspose2d(16, 33, kernel_size=(3, 3), stride=(1, 1))");
  nn::ConvTranspose2d full(nn::ConvTranspose2dOptions(16, 33, {3, 5})
                               .stride({2, 1})
                               .padding({4, 2})
                               .output_padding({1, 0})
                               .bias(false)
                               .dilation({1, 2}));
  CHECK(full->str() ==
        "ConvTranspose2d(16, 33, kernel_size=(3, 5), stride=(2, "
        "1), padding=(4, 2), dilation=(1, 2), "
        "output_padding=(1, 0), bias=False)");
  CHECK_FALSE(full->bias.defined());
  CHECK(full->parameters().size() == 1);
  // A stride of 2 allows outputs of 25 or 26 from 12 (PyTorch's rule and
  // message's numbers).
  nn::ConvTranspose2d strided(nn::ConvTranspose2dOptions(16, 32, 3).stride(2));
  const Tensor x = td::randn({1, 16, 12, 12});
  CHECK(strided(x).sizes() == Shape{1, 32, 25, 25});
  CHECK(strided->forward(x, {26, 26}).sizes() == Shape{1, 32, 26, 26});
  CHECK(strided->forward(x, {1, 32, 26, 25}).sizes() == Shape{1, 32, 26, 25});
  check_close(strided->forward(x, {26, 26}), values(F::conv_transpose2d(x, strided->weight, strided->bias, 2, 0, 1)), 0,
              0);
  check_error(
      [&] {
        strided->forward(x, {27, 27});
      },
      {"ConvTranspose2d", "(27, 27)", "(12, 12)", "(25, 25)", "(26, 26)"});
  check_error([&] { strided->forward(x, {1, 26, 26}); }, {"ConvTranspose2d", "output_size", "(1, 26, 26)"});
  // A clone is a ConvTranspose2d with the same values in tensors of its own.
  auto copy = std::dynamic_pointer_cast<nn::ConvTranspose2dImpl>(strided->clone());
  REQUIRE(copy != nullptr);
  check_close(copy->weight, values(strided->weight), 0, 0);
  CHECK_FALSE(copy->weight.is_alias_of(strided->weight));
  check_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 3).groups(2)); },
              {"ConvTranspose2d", "in_channels (3)", "groups (2)"});
  check_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2, 4, 3).stride(2).output_padding(2)); },
              {"ConvTranspose2d", "output_padding (2, 2)", "stride (2, 2)"});
  check_error(
      [] {
        nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2, 4, {3, 3, 3}));
      },
      {"ConvTranspose2d", "kernel_size", "two values"});
}

TEST_CASE(
    "an autoencoder with ConvTranspose2d trains as PyTorch's does, step "
    "for step",
    "[cpu]") {
  // The same model, starting values, images and Adam steps in PyTorch 2.15
  // (float64): the loss at steps 0, 50 and 199.
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).stride(2).padding(1)), nn::ReLU(),
                       nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 1, 3).stride(2).padding(1).output_padding(1)));
  model->to(td::kFloat64);
  auto conv = std::dynamic_pointer_cast<nn::Conv2dImpl>((*model)[0]);
  auto up = std::dynamic_pointer_cast<nn::ConvTranspose2dImpl>((*model)[2]);
  REQUIRE((conv && up));
  {
    td::NoGradGuard no_grad;
    conv->weight.copy_(sine_ramp({4, 1, 3, 3}, 0.37) * 0.3);
    conv->bias.copy_(sine_ramp({4}, 0.5) * 0.1);
    up->weight.copy_(sine_ramp({4, 1, 3, 3}, 0.71) * 0.3);
    up->bias.copy_(sine_ramp({1}, 0.9) * 0.1 + 0.05);
  }
  const Tensor images = (sine_ramp({8, 1, 8, 8}, 0.13) + 1) / 2;
  td::optim::Adam opt(model->parameters(), td::optim::AdamOptions(0.01));
  std::vector<double> losses;
  for (int step = 0; step < 200; ++step) {
    Tensor loss = F::mse_loss(model(images), images);
    losses.push_back(loss.item<double>());
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  check_close(td::tensor({losses[0], losses[50], losses[199]}, td::kFloat64),
              {0.49778627012358556, 0.03421112505841736, 0.009278670140296324}, 1e-9, 0);
}

TEST_CASE(
    "conv1d equals conv2d over rows of height 1 and PyTorch's values; "
    "Conv1d prints as PyTorch",
    "[cpu]") {
  // PyTorch 2.15 float32: F.conv1d(x, w, b, stride=2, padding=1, dilation=2,
  // groups=2) with x = sin(0.3 i) [2, 4, 7], w = sin(0.9 i) [6, 2, 3], b =
  // sin(0.2 i) [6]; its first 9 of 36.
  const Tensor x = sine_ramp({2, 4, 7}, 0.3, td::kFloat32), w = sine_ramp({6, 2, 3}, 0.9, td::kFloat32);
  const Tensor b = sine_ramp({6}, 0.2, td::kFloat32);
  const Tensor y = F::conv1d(x, w, b, 2, 1, 2, 2);
  CHECK(y.sizes() == Shape{2, 6, 3});
  check_close(y.flatten().narrow(0, 0, 9),
              {0.557474672794342, 2.243817090988159, 1.0375008583068848, 1.0391429662704468, 1.6909042596817017,
               -0.43538612127304077, 0.8988289833068848, 0.039823055267333984, -1.4529434442520142},
              1e-6, 1e-6);
  check_close(y, values(F::conv2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2}, {0, 1}, {1, 2}, 2).squeeze(2)), 0, 0);
  // padding='same' keeps the length (PyTorch: [2, 6, 7], first values below).
  const Tensor same = F::conv1d(x, w, {}, 1, td::kSame, 2, 2);
  CHECK(same.sizes() == Shape{2, 6, 7});
  check_close(same.flatten().narrow(0, 0, 4),
              {-0.24988876283168793, 0.557474672794342, 1.6839587688446045, 2.243817090988159}, 1e-6, 1e-6);
  // An odd total (kernel 2, dilation 3): the extra zero after, as PyTorch (float64 values).
  const Tensor even = F::conv1d(sine_ramp({2, 4, 7}, 0.3), sine_ramp({6, 2, 2}, 0.9), {}, 1, td::kSame, 3, 2);
  CHECK(even.sizes() == Shape{2, 6, 7});
  check_close(even.flatten().narrow(0, 0, 8),
              {0.6249532057576345, 1.5145472961526396, 1.3204721791175769, 1.008443215019809, 0.6063330219215486,
               -0.15362027052263866, -0.43094748531786037, -0.5447691006812954},
              1e-14, 1e-15);
  // Unbatched [C, L].
  check_close(F::conv1d(x[1], w, b, 2, 1, 2, 2), values(y[1]), 0, 0);
  CHECK(nn::Conv1d(16, 33, 3)->str() == "Conv1d(16, 33, kernel_size=(3,), stride=(1,))");
  CHECK(nn::Conv1d(nn::Conv1dOptions(16, 33, 3).stride(2))->str() == "Conv1d(16, 33, kernel_size=(3,), stride=(2,))");
  CHECK(nn::Conv1d(nn::Conv1dOptions(4, 8, 3).padding(td::kSame).dilation(2).groups(2).bias(false))->str() ==
        "Conv1d(4, 8, kernel_size=(3,), stride=(1,), "
        "padding=same, dilation=(2,), groups=2, bias=False)");
  nn::Conv1d layer(nn::Conv1dOptions(4, 6, 3).padding(1));
  CHECK(layer->weight.sizes() == Shape{6, 4, 3});
  CHECK(layer(x).sizes() == Shape{2, 6, 7});
  check_close(layer(x), values(F::conv1d(x, layer->weight, layer->bias, 1, 1)), 0, 0);
}

TEST_CASE(
    "conv1d's errors name conv1d and the 3-D shapes, and leave the "
    "operands unchanged",
    "[cpu]") {
  const Tensor x = td::ones({2, 4, 7}), w = td::ones({6, 2, 3});
  const Snapshot before_x(x), before_w(w);
  check_error(
      [&] {
        F::conv1d(td::ones({2, 3, 7}), w, {}, 1, 0, 1, 2);
      },
      {"conv1d", "[2, 3, 7]", "3 channels", "[6, 2, 3]", "expects 4"});
  check_error([&] { F::conv1d(td::ones({1, 4, 7, 1}), w); }, {"conv1d", "2-D", "3-D", "[1, 4, 7, 1]"});
  check_error([&] { F::conv1d(x, td::ones({6, 4, 3, 1})); }, {"conv1d", "weight", "3-D", "[6, 4, 3, 1]"});
  check_error([&] { F::conv1d(x, w, td::ones({5}), 1, 0, 1, 2); }, {"conv1d", "bias", "[6]", "[5]"});
  check_error([&] { F::conv1d(x, w, {}, 1, 0, 4, 2); }, {"conv1d", "kernel", "does not fit", "[2, 4, 7]"});
  check_error([&] { F::conv1d(x, w, {}, 0, 0, 1, 2); }, {"conv1d", "stride", "positive"});
  check_error([&] { F::conv1d(x, w, {}, {1, 1}, 0, 1, 2); }, {"conv1d", "stride", "one value"});
  check_error([&] { F::conv1d(x, w, {}, 2, td::kSame, 1, 2); }, {"conv1d", "padding='same'", "strided"});
  check_error([&] { F::conv1d(x, w.to(td::kFloat64), {}, 1, 0, 1, 2); }, {"conv1d", "one dtype"});
  check_error([] { nn::Conv1d(nn::Conv1dOptions(3, 4, 3).groups(2)); }, {"Conv1d", "in_channels (3)", "groups (2)"});
  check_error([] { nn::Conv1d(nn::Conv1dOptions(4, 4, 3).stride(2).padding(td::kSame)); },
              {"Conv1d", "padding='same'", "strided"});
  before_x.check_unchanged(x);
  before_w.check_unchanged(w);
}

TEST_CASE("ConvTranspose1d gives PyTorch's output and gradients, prints as PyTorch's, takes output_size", "[cpu]") {
  // PyTorch 2.15: ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
  // dilation=2), parameters set by name, on x = sin(0.37 i) [2, 4, 5]; sums weighted by sin(0.23 i)
  // of y and of the gradients of sum(y * sin(0.11 i)).
  nn::ConvTranspose1d layer(
      nn::ConvTranspose1dOptions(4, 6, 3).stride(2).padding(1).output_padding(1).groups(2).dilation(2));
  CHECK(layer->str() ==
        "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), dilation=(2,), output_padding=(1,), "
        "groups=2)");
  CHECK(nn::ConvTranspose1d(3, 4, 3)->str() == "ConvTranspose1d(3, 4, kernel_size=(3,), stride=(1,))");
  td::testing::set_sine_parameters(*layer);
  Tensor x = td::testing::sine_ramp({2, 4, 5}, 0.37).requires_grad_(true);
  const Tensor y = layer(x);
  REQUIRE(y.sizes() == Shape{2, 6, 12});
  (y * td::testing::sine_ramp(y.sizes(), 0.11)).sum().backward();
  auto weighted = [](const Tensor& t) {
    return (t.detach() * td::testing::sine_ramp(t.sizes(), 0.23)).sum().item<double>();
  };
  CHECK(weighted(y) == Approx(2.0948382113266124).epsilon(1e-12));
  CHECK(weighted(x.grad()) == Approx(1.9251884744046879).epsilon(1e-12));
  CHECK(weighted(layer->weight.grad()) == Approx(1.1593147702678865).epsilon(1e-12));
  CHECK(weighted(layer->bias.grad()) == Approx(7.01897615614848).epsilon(1e-12));
  // The same as conv_transpose2d over rows of height 1.
  check_close(y, values(F::conv_transpose2d(x.unsqueeze(2), layer->weight.unsqueeze(2), layer->bias, {1, 2}, {0, 1},
                                            {0, 1}, 2, {1, 2})
                            .squeeze(2)),
              1e-15, 1e-15);
  CHECK(layer->forward(x, 11).sizes() == Shape{2, 6, 11});
  CHECK(layer->forward(x[0], 12).sizes() == Shape{6, 12});
  check_error([&] { layer->forward(x, 13); }, {"ConvTranspose1d", "output_size 13", "[11, 12]"});
  // PyTorch's range is one stride wide, whatever the dilation: stride 1, dilation 2 gives one size.
  nn::ConvTranspose1d dilated(nn::ConvTranspose1dOptions(4, 6, 3).dilation(2));
  check_error([&] { dilated->forward(x, 10); }, {"ConvTranspose1d", "output_size 10", "[9, 9]"});
  check_error([&] { F::conv_transpose1d(x, layer->weight.narrow(0, 0, 3)); },
              {"conv_transpose1d", "4 channels", "[3, 3, 3]"});
  check_error([&] { F::conv_transpose1d(x, layer->weight, Tensor(), 2, 0, 2); },
              {"conv_transpose1d", "output_padding (2)", "stride (2)"});
  check_error([&] { F::conv_transpose1d(x.unsqueeze(0), layer->weight); }, {"conv_transpose1d", "2-D", "3-D"});
}

TEST_CASE("convolutions on another CPU device give their gradients there, equal to cpu:0's", "[cpu]") {
  // A replica of DataParallel runs on cpu:1: every gradient its layers pass back must be there.
  td::testing::reseed(61);
  const td::Device other("cpu:1");
  using Conv = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::tuple<std::string, Shape, Shape, Conv>> convs = {
      {"conv2d", {2, 4, 7, 6}, {6, 2, 3, 2},
       [](const Tensor& x, const Tensor& w) { return F::conv2d(x, w, Tensor(), {2, 1}, {1, 0}, {1, 2}, 2); }},
      {"conv_transpose2d", {2, 4, 5, 6}, {4, 3, 3, 2},
       [](const Tensor& x, const Tensor& w) { return F::conv_transpose2d(x, w, Tensor(), {2, 1}, {1, 0}); }},
      {"conv3d", {2, 4, 5, 6, 7}, {6, 2, 3, 2, 3},
       [](const Tensor& x, const Tensor& w) { return F::conv3d(x, w, Tensor(), {2, 1, 1}, {1, 0, 1}, {1, 2, 1}, 2); }},
  };
  for (const auto& [name, x_shape, w_shape, conv] : convs) {
    INFO(name);
    const Tensor x = td::testing::random_tensor(x_shape, td::kFloat64), w = td::testing::random_tensor(w_shape, td::kFloat64);
    std::vector<Tensor> grads[2];
    for (int on_other : {0, 1}) {
      const td::Device device = on_other ? other : td::Device("cpu:0");
      Tensor xl = x.to(device).detach().requires_grad_(), wl = w.to(device).detach().requires_grad_();
      const Tensor y = conv(xl, wl);
      CHECK(y.device() == device);
      y.pow(2.0).sum().backward();
      CHECK(xl.grad().device() == device);
      CHECK(wl.grad().device() == device);
      grads[on_other] = {xl.grad().to(td::Device("cpu:0")), wl.grad().to(td::Device("cpu:0"))};
    }
    check_close(grads[1][0], grads[0][0], 0, 0);
    check_close(grads[1][1], grads[0][1], 0, 0);
  }
}
