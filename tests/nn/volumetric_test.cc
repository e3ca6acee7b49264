// Convolution and pooling over depth, height and width: conv3d against a direct loop in double,
// conv_transpose3d as its adjoint, Conv3d/ConvTranspose3d and the 3-D poolings against PyTorch
// 2.15's values, indices and gradients, NaN and -inf windows, printing, and the errors (operands
// unchanged).
#include <cmath>
#include <tuple>

#include "tests/nn/pytorch_reference.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::same_as_pytorch;
using td::testing::sine_ramp;
using td::testing::Snapshot;
using td::testing::values;

namespace {

struct Geometry3d {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
};

// conv3d in double, one product at a time: output (od, oh, ow) of channel o reads input
// (od * s - p + k * d, ...) of the channels of o's group.
Tensor direct_conv3d(const Tensor& x, const Tensor& w, const Tensor& b, const Geometry3d& g) {
  const std::vector<double> xv = values(x), wv = values(w);
  const int64_t n = x.size(0), c = x.size(1), out_channels = w.size(0), group_in = w.size(1);
  const int64_t group_out = out_channels / g.groups;
  std::array<int64_t, 3> in{x.size(2), x.size(3), x.size(4)}, k{w.size(2), w.size(3), w.size(4)}, out{};
  for (int i = 0; i < 3; ++i) {
    out[i] = (in[i] + 2 * g.padding[i] - g.dilation[i] * (k[i] - 1) - 1) / g.stride[i] + 1;
  }
  std::vector<double> y(static_cast<size_t>(n * out_channels * out[0] * out[1] * out[2]), 0.0);
  size_t at = 0;
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t od = 0; od < out[0]; ++od)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow, ++at) {
            double sum = b.defined() ? values(b)[static_cast<size_t>(o)] : 0.0;
            for (int64_t ci = 0; ci < group_in; ++ci)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t bb = 0; bb < k[1]; ++bb)
                  for (int64_t cc = 0; cc < k[2]; ++cc) {
                    const int64_t id = od * g.stride[0] - g.padding[0] + a * g.dilation[0];
                    const int64_t ih = oh * g.stride[1] - g.padding[1] + bb * g.dilation[1];
                    const int64_t iw = ow * g.stride[2] - g.padding[2] + cc * g.dilation[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                    const int64_t channel = (o / group_out) * group_in + ci;
                    sum += xv[static_cast<size_t>((((ni * c + channel) * in[0] + id) * in[1] + ih) * in[2] + iw)] *
                           wv[static_cast<size_t>((((o * group_in + ci) * k[0] + a) * k[1] + bb) * k[2] + cc)];
                  }
            y[at] = sum;
          }
  return td::tensor(y).view({n, out_channels, out[0], out[1], out[2]});
}

double weighted(const Tensor& t) { return (t.detach() * sine_ramp(t.sizes(), 0.23)).sum().item<double>(); }

}  // namespace

TEST_CASE("conv3d equals a direct convolution for every geometry; conv_transpose3d is its adjoint", "[cpu]") {
  td::testing::reseed(83);
  const std::vector<Geometry3d> geometries = {
      {{1, 1, 1}, {0, 0, 0}, {1, 1, 1}, 1}, {{2, 1, 2}, {1, 0, 2}, {1, 2, 1}, 2}, {{1, 3, 1}, {2, 1, 0}, {2, 1, 1}, 1},
      {{3, 2, 1}, {0, 1, 1}, {1, 1, 2}, 3}, {{2, 2, 2}, {1, 1, 1}, {2, 2, 1}, 1},
  };
  for (const Geometry3d& g : geometries) {
    for (td::DType dtype : {td::kFloat64, td::kFloat32}) {
      INFO("stride " << td::shape_str(g.stride) << " padding " << td::shape_str(g.padding) << " dilation "
                     << td::shape_str(g.dilation) << " groups " << g.groups << " " << td::dtype_name(dtype));
      // A non-contiguous input: the transpose of a [2, C, W, H, D] tensor.
      const Tensor x = td::testing::random_tensor({2, 2 * g.groups, 6, 7, 5}, dtype).transpose(2, 4);
      const Tensor w = td::testing::random_tensor({2 * g.groups, 2, 3, 2, 3}, dtype);
      const Tensor b = td::testing::random_tensor({2 * g.groups}, dtype);
      const Tensor y = F::conv3d(x, w, b, g.stride, g.padding, g.dilation, g.groups);
      const Tensor expected = direct_conv3d(x, w, b, g);
      REQUIRE(y.sizes() == expected.sizes());
      CHECK(y.dtype() == dtype);
      const double tolerance = dtype == td::kFloat64 ? 1e-13 : 2e-5;
      check_close(y, values(expected), tolerance, tolerance);
      // Unbatched [C, D, H, W].
      check_close(F::conv3d(x[1], w, b, g.stride, g.padding, g.dilation, g.groups), values(y[1]), tolerance, tolerance);
      // <conv3d(x), probe> == <x, conv_transpose3d(probe)>, with the output padding that gives
      // back the input's sizes.
      const Tensor probe = td::testing::random_tensor(y.sizes(), dtype);
      std::vector<int64_t> extra;
      for (int i = 0; i < 3; ++i) {
        extra.push_back(x.size(2 + i) - F::conv_transpose_output_size(y.size(2 + i), w.size(2 + i), g.stride[i],
                                                                      g.padding[i], g.dilation[i], 0));
      }
      const Tensor back = F::conv_transpose3d(probe, w, {}, g.stride, g.padding, extra, g.groups, g.dilation);
      REQUIRE(back.sizes() == x.sizes());
      const double forward_dot =
          (F::conv3d(x, w, {}, g.stride, g.padding, g.dilation, g.groups).to(td::kFloat64) * probe.to(td::kFloat64))
              .sum()
              .item<double>();
      const double backward_dot = (x.to(td::kFloat64) * back.to(td::kFloat64)).sum().item<double>();
      // Within a few roundings of the dtype per product, against the sum of the products'
      // magnitudes (the two sums cancel: their own size says little about their error).
      const Tensor x64 = x.to(td::kFloat64).abs(), w64 = w.to(td::kFloat64).abs();
      const double magnitude = (F::conv3d(x64, w64, {}, g.stride, g.padding, g.dilation, g.groups) *
                                probe.to(td::kFloat64).abs())
                                   .sum()
                                   .item<double>();
      CHECK(std::abs(backward_dot - forward_dot) <= td::testing::rtol_for(dtype) * magnitude);
    }
  }
}

TEST_CASE("Conv3d and ConvTranspose3d give PyTorch's outputs and gradients", "[cpu]") {
  // PyTorch 2.15: each layer's parameters set by name, x = sin(0.37 i); sums weighted by
  // sin(0.23 i) of y and of the gradients of sum(y * sin(0.11 i)).
  struct Case {
    const char* name;
    std::function<std::shared_ptr<nn::Module>()> make;
    Shape input, output;
    std::vector<double> weighted_sums;  // y, x.grad, then each parameter's gradient
  };
  const std::vector<Case> cases = {
      {"Conv3d strided, padded, dilated, grouped",
       [] {
         return nn::Conv3d(nn::Conv3dOptions(4, 6, {3, 2, 3})
                               .stride({2, 1, 2})
                               .padding({1, 0, 2})
                               .dilation({1, 2, 1})
                               .groups(2))
             .ptr();
       },
       {2, 4, 5, 6, 7},
       {2, 6, 3, 4, 5},
       {0.3156634992737122, -7.227313970491448, 2.8319375704436007, 7.555019873335093}},
      {"Conv3d padding same, odd total",
       [] {
         return nn::Conv3d(nn::Conv3dOptions(3, 2, {2, 3, 2}).padding(td::kSame).dilation({3, 1, 1})).ptr();
       },
       {2, 3, 6, 5, 4},
       {2, 2, 6, 5, 4},
       {-2.17283480006095, 50.72758957964477, -13.03393442950522, 2.080599187763377}},
      {"Conv3d reflect",
       [] {
         return nn::Conv3d(nn::Conv3dOptions(3, 2, 3).padding({1, 2, 1}).padding_mode(td::kReflect)).ptr();
       },
       {1, 3, 4, 5, 6},
       {1, 2, 4, 7, 6},
       {3.4264213927425398, -87.63159469709245, 72.06258167351746, 0.43607809828546357}},
      {"Conv3d circular without bias",
       [] { return nn::Conv3d(nn::Conv3dOptions(2, 4, 2).padding(1).padding_mode(td::kCircular).bias(false)).ptr(); },
       {3, 2, 3, 4, 3},
       {3, 4, 4, 5, 4},
       {-3.185391138388637, -143.14877571417952, 82.92453488456407}},
      {"ConvTranspose3d strided, padded, dilated, grouped",
       [] {
         return nn::ConvTranspose3d(nn::ConvTranspose3dOptions(4, 6, {3, 2, 3})
                                        .stride({2, 3, 1})
                                        .padding({1, 0, 2})
                                        .output_padding({1, 2, 0})
                                        .groups(2)
                                        .dilation({2, 1, 1}))
             .ptr();
       },
       {2, 4, 3, 4, 5},
       {2, 6, 8, 13, 3},
       {-56.81247554820835, -8.871842583263604, -15.461421867752874, 6.639868968196916}},
      {"ConvTranspose3d plain",
       [] { return nn::ConvTranspose3d(3, 2, 2).ptr(); },
       {1, 3, 2, 3, 2},
       {1, 2, 3, 4, 3},
       {-20.48692220546875, -0.6839268820048254, 4.467986936744943, -1.4752738389621847}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const auto layer = c.make();
    td::testing::set_sine_parameters(*layer);
    Tensor x = sine_ramp(c.input, 0.37).requires_grad_(true);
    const Tensor y = layer->forward(x);
    REQUIRE(y.sizes() == c.output);
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    std::vector<double> sums = {weighted(y), weighted(x.grad())};
    for (const auto& [name, p] : layer->named_parameters()) sums.push_back(weighted(p.grad()));
    REQUIRE(sums.size() == c.weighted_sums.size());
    for (size_t i = 0; i < sums.size(); ++i) CHECK(sums[i] == Approx(c.weighted_sums[i]).epsilon(1e-12));
  }
}

TEST_CASE("Conv3d and ConvTranspose3d print as PyTorch's and take an output_size", "[cpu]") {
  CHECK(nn::Conv3d(nn::Conv3dOptions(16, 33, 3).stride(2))->str() ==
        "Conv3d(16, 33, kernel_size=(3, 3, 3), stride=(2, 2, 2))");
  CHECK(nn::Conv3d(nn::Conv3dOptions(16, 33, {3, 5, 2}).stride({2, 1, 1}).padding({4, 2, 0}))->str() ==
        "Conv3d(16, 33, kernel_size=(3, 5, 2), stride=(2, 1, 1), padding=(4, 2, 0))");
  CHECK(nn::Conv3d(nn::Conv3dOptions(2, 4, 2).padding(1).padding_mode(td::kCircular).bias(false))->str() ==
        "Conv3d(2, 4, kernel_size=(2, 2, 2), stride=(1, 1, 1), padding=(1, 1, 1), bias=False, padding_mode=circular)");
  CHECK(
      nn::ConvTranspose3d(nn::ConvTranspose3dOptions(16, 33, {3, 5, 2}).stride({2, 1, 1}).padding({0, 4, 2}))->str() ==
      "ConvTranspose3d(16, 33, kernel_size=(3, 5, 2), stride=(2, 1, 1), padding=(0, 4, 2))");
  nn::Conv3d conv(nn::Conv3dOptions(4, 6, {3, 1, 2}).groups(2));
  CHECK(conv->weight.sizes() == Shape{6, 2, 3, 1, 2});
  CHECK(conv->bias.sizes() == Shape{6});
  nn::ConvTranspose3d up(nn::ConvTranspose3dOptions(4, 6, 3).stride({2, 3, 1}).groups(2));
  CHECK(up->weight.sizes() == Shape{4, 3, 3, 3, 3});
  const Tensor x = sine_ramp({2, 4, 3, 2, 4}, 0.3, td::kFloat32);
  // Sizes from (2 * 2 + 3, 1 * 3 + 3, 3 + 3) up to a stride - 1 more each.
  CHECK(up(x).sizes() == Shape{2, 6, 7, 6, 6});
  CHECK(up->forward(x, {8, 8, 6}).sizes() == Shape{2, 6, 8, 8, 6});
  CHECK(up->forward(x[0], {6, 8, 7, 6}).sizes() == Shape{6, 8, 7, 6});
  check_close(up->forward(x, {7, 7, 6}),
              values(F::conv_transpose3d(x, up->weight, up->bias, {2, 3, 1}, 0, {0, 1, 0}, 2)), 0, 0);
  check_error([&] { up->forward(x, {9, 6, 6}); }, {"ConvTranspose3d", "(9, 6, 6)", "(7, 6, 6)", "(8, 8, 6)"});
}

TEST_CASE("conv3d and conv_transpose3d refuse bad operands by name, the operands unchanged", "[cpu]") {
  const Tensor x = td::ones({2, 4, 5, 6, 7}), w = td::ones({6, 2, 3, 3, 3});
  const Snapshot before_x(x), before_w(w);
  check_error(
      [&] {
        F::conv3d(td::ones({2, 3, 5, 6, 7}), w, {}, 1, 0, 1, 2);
      },
      {"conv3d", "[2, 3, 5, 6, 7]", "3 channels", "[6, 2, 3, 3, 3]", "expects 4"});
  check_error([&] { F::conv3d(x[0][0], w); }, {"conv3d", "4-D", "5-D", "[5, 6, 7]"});
  check_error([&] { F::conv3d(x, w[0]); }, {"conv3d", "weight", "5-D", "[2, 3, 3, 3]"});
  check_error([&] { F::conv3d(x, w, td::ones({5}), 1, 0, 1, 2); }, {"conv3d", "bias", "[6]", "[5]"});
  check_error(
      [&] {
        F::conv3d(x, w, {}, 1, 0, {3, 1, 1}, 2);
      },
      {"conv3d", "kernel", "does not fit", "[2, 4, 5, 6, 7]"});
  check_error([&] { F::conv3d(x, w, {}, {1, 0, 1}, 0, 1, 2); }, {"conv3d", "stride", "positive"});
  check_error([&] { F::conv3d(x, w, {}, {1, 1}, 0, 1, 2); }, {"conv3d", "stride", "one or three values"});
  check_error([&] { F::conv3d(x, w, {}, 2, td::kSame, 1, 2); }, {"conv3d", "padding='same'", "strided"});
  check_error([&] { F::conv3d(x, w.to(td::kFloat64), {}, 1, 0, 1, 2); }, {"conv3d", "one dtype"});
  check_error([&] { F::conv_transpose3d(x, w.narrow(0, 0, 3)); },
              {"conv_transpose3d", "4 channels", "[3, 2, 3, 3, 3]"});
  check_error(
      [&] {
        F::conv_transpose3d(x, td::ones({4, 2, 3, 3, 3}), {}, 2, 0, 2);
      },
      {"conv_transpose3d", "output_padding [2, 2, 2]", "stride [2, 2, 2]"});
  check_error([&] { F::conv_transpose3d(x, td::ones({4, 2, 3, 3, 3}), {}, 1, 4); }, {"conv_transpose3d", "too small"});
  check_error([] { nn::Conv3d(nn::Conv3dOptions(3, 4, 3).groups(2)); }, {"Conv3d", "in_channels (3)", "groups (2)"});
  check_error([] { nn::Conv3d(nn::Conv3dOptions(3, 4, {3, 3})); }, {"Conv3d", "kernel_size", "three values", "(3, 3)"});
  check_error([] { nn::Conv3d(nn::Conv3dOptions(4, 4, 3).stride(2).padding(td::kSame)); },
              {"Conv3d", "padding='same'", "strided"});
  check_error([] { nn::ConvTranspose3d(nn::ConvTranspose3dOptions(4, 4, 3).output_padding(1)); },
              {"ConvTranspose3d", "output_padding (1, 1, 1)", "stride (1, 1, 1)"});
  before_x.check_unchanged(x);
  before_w.check_unchanged(w);
}

TEST_CASE("3-D pooling gives PyTorch's values, indices and gradients", "[cpu]") {
  // PyTorch 2.15: y (and indices) of x = sin(0.37 i), and x's gradient of sum(y * sin(0.11 i)).
  struct Case {
    const char* name;
    Shape input;
    std::function<std::tuple<Tensor, Tensor>(const Tensor&)> pool;
    Shape output;
    std::vector<double> first;
    double sum;
    std::vector<double> first_indices;  // where the op gives them: the first 24, and the sum
    int64_t indices_sum;
    std::vector<double> grad_first;
    double grad_sum;
  };
  auto no_indices = [](Tensor y) { return std::tuple<Tensor, Tensor>{std::move(y), Tensor()}; };
  const std::vector<Case> cases = {
      {"max_pool3d k3 s2 p1 dilation (1, 2, 1) ceil",
       {2, 2, 6, 7, 5},
       [](const Tensor& x) {
         return F::max_pool3d_with_indices(x, 3, 2, 1, {1, 2, 1}, true);
       },
       {2, 2, 4, 3, 3},
       {0.9612752029752999, 0.7965654722360868, 0.9046015706259687, 0.9612752029752999, 0.7965654722360868,
        0.9046015706259687, 0.17388948538043356, 0.6892432612306632},
       126.27735028501749,
       {5, 6, 54, 5, 6, 54, 25, 53, 54, 40, 123, 123, 40, 123, 123, 121, 123, 123, 191, 191, 123, 191, 191, 123},
       16781,
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.32404302839486837, 0.5357177659031744, 0.0},
       18.150258638824216},
      {"max_pool3d k (2, 3, 2), unbatched",
       {3, 5, 7, 6},
       [](const Tensor& x) {
         return F::max_pool3d_with_indices(x, {2, 3, 2});
       },
       {3, 2, 2, 3},
       {0.9975263011148543, 0.9554405263552675, 0.99588084453764, 0.9979821684924207, 0.9964756147406005,
        0.9593748338928642, 0.9513287387867827, 0.9993419970813103},
       35.38172060420921,
       {55, 56, 4, 72, 21, 22, 90, 140, 89, 157, 158, 106, 49, 15, 16, 66, 32, 65, 133, 134, 100, 151, 117, 118},
       3006,
       {0.0, 0.0, 0.0, 0.0, 0.21822962308086932, 0.0, 0.0, 0.0},
       15.653093254626782},
      {"avg_pool3d k3 s2 p1 ceil",
       {2, 2, 6, 7, 5},
       [&](const Tensor& x) { return no_indices(F::avg_pool3d(x, 3, 2, 1, true)); },
       {2, 2, 4, 4, 3},
       {0.16587683426878105, 0.24054427468810163, 0.11471572035441797, -0.05163034598525797, -0.09318799961112463,
        -0.057072548336444005, 0.06396759351257145, 0.08301968187332755},
       -0.8477173403703756,
       {},
       0,
       {0.0, 0.004065862993969437, 0.004065862993969437, 0.012148441626594227, 0.00808257863262479,
        0.012001593644254384, 0.03184299238140899, 0.019841398737154608},
       12.582463198687996},
      {"avg_pool3d k3 s2 p1 ceil, padding not counted",
       {2, 2, 6, 7, 5},
       [&](const Tensor& x) { return no_indices(F::avg_pool3d(x, 3, 2, 1, true, false)); },
       {2, 2, 4, 4, 3},
       {0.559834315657136, 0.5412246180482286, 0.38716555619616067, -0.11616827846683042, -0.13978199941668695,
        -0.128413233756999, 0.14392708540328578, 0.12452952280999131},
       -1.6194326680593263,
       {},
       0,
       {0.0, 0.009148191736431234, 0.009148191736431234, 0.0364268946215399, 0.027278702885108665, 0.027003585699572365,
        0.05981508105078136, 0.03281149535120899},
       14.547376837783993},
      {"avg_pool3d k (2, 3, 2) s (1, 2, 3) divisor 5",
       {3, 5, 7, 6},
       [&](const Tensor& x) {
         return no_indices(F::avg_pool3d(x, {2, 3, 2}, {1, 2, 3}, {1, 1, 0}, false, true, 5));
       },
       {3, 6, 4, 2},
       {0.33644504917766493, 0.2348897451532582, 0.08190084405961665, 0.0428452453835527, -0.028944990585972996,
        0.056053995669652815, -0.05962843820650658, 0.28208715050935107},
       -0.038069740961337376,
       {},
       0,
       {0.15414777577979386, 0.15414777577979386, 0.0, 0.1891608558875391, 0.1891608558875391, 0.0, 0.3760351724082548,
        0.3760351724082548},
       55.49774739389842},
      {"adaptive_avg_pool3d (3, 4, 2)",
       {2, 2, 7, 6, 5},
       [&](const Tensor& x) {
         return no_indices(F::adaptive_avg_pool3d(x, {3, 4, 2}));
       },
       {2, 2, 3, 4, 2},
       {-0.03947772143297026, 0.12465542579102729, 0.23015140899630937, 0.1531599832192158, -0.18199077552718412,
        -0.03792235090722128, 0.18768701128627677, 0.2299762810424449},
       0.9669157661532202,
       {},
       0,
       {0.0, 0.0, 0.006098794490954156, 0.006098794490954156, 0.006098794490954156, 0.012123867948937184,
        0.012123867948937184, 0.03622505290627291},
       13.366923634121598},
      {"adaptive_max_pool3d (3, 4, 2)",
       {2, 2, 7, 6, 5},
       [](const Tensor& x) {
         return F::adaptive_max_pool3d_with_indices(x, {3, 4, 2});
       },
       {2, 2, 3, 4, 2},
       {0.9612752029752999, 0.9970241087570002, 0.9979821684924207, 0.9979821684924207, 0.9964756147406005,
        0.9593748338928642, 0.9975263011148543, 0.9983916897192832},
       94.85488205529121,
       {5, 38, 72, 72, 21, 22, 55, 89, 90, 123, 72, 72, 140, 107, 140, 89, 157, 157, 191, 157, 140, 174, 140, 208},
       9987,
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
       13.366923634121596},
      {"adaptive_max_pool3d 2, unbatched",
       {3, 5, 4, 3},
       [](const Tensor& x) { return F::adaptive_max_pool3d_with_indices(x, 2); },
       {3, 2, 2, 2},
       {0.99588084453764, 0.99588084453764, 0.9964756147406005, 0.9593748338928642, 0.9574299115788811,
        0.9970241087570002, 0.9975263011148543, 0.9975263011148543},
       23.487972254635707,
       {4, 4, 21, 22, 39, 38, 55, 55, 12, 29, 30, 11, 28, 29, 46, 46, 3, 4, 21, 20, 37, 37, 54, 55},
       700,
       {0.0, 0.0, 0.0, 0.0, 0.10977830083717481, 0.0, 0.0, 0.0},
       16.804361879770333},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor x = sine_ramp(c.input, 0.37).requires_grad_(true);
    const auto [y, indices] = c.pool(x);
    REQUIRE(y.sizes() == c.output);
    same_as_pytorch(y, c.first, c.sum, std::string(c.name) + " values");
    if (!c.first_indices.empty()) {
      REQUIRE(indices.sizes() == c.output);
      CHECK(indices.dtype() == td::kInt64);
      check_close(indices.flatten().narrow(0, 0, 24), c.first_indices, 0, 0, std::string(c.name) + " indices");
      CHECK(indices.sum().item<int64_t>() == c.indices_sum);
    }
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    same_as_pytorch(x.grad(), c.grad_first, c.grad_sum, std::string(c.name) + " gradient");
  }
}

TEST_CASE("max_pool3d lets the last NaN win and gives an all -inf window its first position", "[cpu]") {
  // PyTorch 2.15: a 2x2x2 window holding NaN at flat positions 1, 2 and 5 gives NaN at 5; ties
  // (5 at 0, 2, 4, 6, 7) give the first; a 3x3x3 input of -inf, kernel 3, stride 2, padding 1,
  // gives each window's first real position.
  Tensor nans = td::tensor({1.0, NAN, NAN, 2.0, 3.0, NAN, 5.0, 5.0}).view({1, 1, 2, 2, 2}).requires_grad_(true);
  const auto [value, index] = F::max_pool3d_with_indices(nans, 2);
  CHECK(std::isnan(value.item<double>()));
  CHECK(index.item<int64_t>() == 5);
  value.sum().backward();
  check_close(nans.grad(), {0, 0, 0, 0, 0, 1, 0, 0}, 0, 0);
  const Tensor ties = td::tensor({5.0, 1.0, 5.0, 2.0, 5.0, 1.0, 5.0, 5.0}).view({1, 1, 2, 2, 2});
  CHECK(std::get<1>(F::max_pool3d_with_indices(ties, 2)).item<int64_t>() == 0);
  for (td::DType dtype : {td::kFloat64, td::kFloat32}) {
    const Tensor negative = td::full({1, 1, 3, 3, 3}, -INFINITY, dtype);
    const auto [lows, where] = F::max_pool3d_with_indices(negative, 3, 2, 1);
    check_close(where, {0, 1, 3, 4, 9, 10, 12, 13}, 0, 0);
    CHECK(lows.dtype() == dtype);
  }
  check_close(std::get<1>(F::adaptive_max_pool3d_with_indices(nans.detach().view({1, 2, 2, 2}), 1)), {5}, 0, 0);
  // A dilated window wholly in the padding: -inf at PyTorch's first scan position (outside the
  // input), here for every window (PyTorch 2.15: x = sin(i) [1, 1, 2, 4, 4], kernel 2, stride 1,
  // padding 1, dilation 3; and [1, 1, 2, 5, 6], kernel 2, padding 1, dilation (3, 2, 2)).
  const auto [outside, outside_at] =
      F::max_pool3d_with_indices(td::arange(32).to(td::kFloat64).sin().view({1, 1, 2, 4, 4}), 2, 1, 1, 3);
  REQUIRE(outside.sizes() == Shape{1, 1, 1, 3, 3});
  check_close(outside, values(td::full({1, 1, 1, 3, 3}, -INFINITY, td::kFloat64)), 0, 0);
  check_close(outside_at, {42, 40, 41, 34, 32, 33, 38, 36, 37}, 0, 0);
  const auto [wide_outside, wide_at] =
      F::max_pool3d_with_indices(td::arange(60).to(td::kFloat64).sin().view({1, 1, 2, 5, 6}), 2, 1, 1, {3, 2, 2});
  REQUIRE(wide_outside.sizes() == Shape{1, 1, 1, 5, 6});
  check_close(wide_at.flatten().narrow(0, 0, 12), {67, 66, 67, 68, 69, 70, 61, 60, 61, 62, 63, 64}, 0, 0);
  // float32 pools float32's own values: the float64 result rounded, exactly.
  const Tensor wide = sine_ramp({2, 3, 5, 6, 7}, 0.3);
  check_close(F::max_pool3d(wide.to(td::kFloat32), {2, 3, 2}, 1, {1, 0, 1}),
              values(F::max_pool3d(wide, {2, 3, 2}, 1, {1, 0, 1}).to(td::kFloat32)), 0, 0);
  // A divisible adaptive size is a pooling with kernel and stride in / out.
  check_close(F::adaptive_avg_pool3d(wide.narrow(4, 0, 6), {5, 2, 3}),
              values(F::avg_pool3d(wide.narrow(4, 0, 6), {1, 3, 2})), 1e-15, 1e-15);
  check_close(F::adaptive_max_pool3d(wide.narrow(4, 0, 6), {5, 2, 3}),
              values(F::max_pool3d(wide.narrow(4, 0, 6), {1, 3, 2})), 0, 0);
}

TEST_CASE("the 3-D pooling layers print as PyTorch's; the poolings refuse bad input by name", "[cpu]") {
  CHECK(nn::MaxPool3d(3, 2)->str() == "MaxPool3d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::MaxPool3d(std::vector<int64_t>{2, 3, 2})->str() ==
        "MaxPool3d(kernel_size=(2, 3, 2), stride=(2, 3, 2), padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::AvgPool3d(2)->str() == "AvgPool3d(kernel_size=2, stride=2, padding=0)");
  CHECK(nn::AvgPool3d(std::vector<int64_t>{2, 1, 2}, 1, std::vector<int64_t>{1, 0, 1}, false, true, 3)->str() ==
        "AvgPool3d(kernel_size=(2, 1, 2), stride=1, padding=(1, 0, 1))");
  CHECK(nn::AdaptiveAvgPool3d(std::vector<int64_t>{2, 3, 1})->str() == "AdaptiveAvgPool3d(output_size=(2, 3, 1))");
  CHECK(nn::AdaptiveMaxPool3d(3)->str() == "AdaptiveMaxPool3d(output_size=3)");
  const Tensor x = sine_ramp({2, 3, 4, 5, 6}, 0.3);
  check_close(nn::MaxPool3d(2, 1)(x), values(F::max_pool3d(x, 2, 1)), 0, 0);
  check_close(nn::AvgPool3d(std::vector<int64_t>{2, 1, 2}, 1, std::vector<int64_t>{1, 0, 1}, false, true, 3)(x),
              values(F::avg_pool3d(x, {2, 1, 2}, 1, {1, 0, 1}, false, true, 3)), 0, 0);
  check_close(nn::AdaptiveAvgPool3d(std::vector<int64_t>{2, 3, 1})(x), values(F::adaptive_avg_pool3d(x, {2, 3, 1})), 0,
              0);
  check_close(nn::AdaptiveMaxPool3d(3)(x), values(F::adaptive_max_pool3d(x, 3)), 0, 0);
  const Snapshot before(x);
  check_error([&] { F::max_pool3d(x[0][0], 2); }, {"max_pool3d", "4-D or 5-D", "[4, 5, 6]"});
  check_error([&] { F::max_pool3d(x, {2, 2}); }, {"max_pool3d", "kernel_size", "one or three values"});
  check_error([&] { F::max_pool3d(x, 3, 1, 2); }, {"max_pool3d", "padding [2, 2, 2]", "half the kernel [3, 3, 3]"});
  check_error([&] { F::max_pool3d(x, 5); }, {"max_pool3d", "[2, 3, 4, 5, 6]", "too small", "[5, 5, 5]"});
  check_error([&] { F::max_pool3d(x, 2, 0); }, {"max_pool3d", "stride [0, 0, 0]", "positive"});
  check_error([&] { F::avg_pool3d(x, 2, {}, 0, false, true, 0); }, {"avg_pool3d", "divisor_override", "zero"});
  check_error([&] { F::avg_pool3d(td::ones({1, 2, 2, 2}, td::kInt64), 2); }, {"avg_pool3d", "floating", "int64"});
  check_error([&] { F::adaptive_avg_pool3d(x, {2, 2}); }, {"adaptive_avg_pool3d", "one value or three", "got 2"});
  check_error([&] { F::adaptive_max_pool3d(x, 0); }, {"adaptive_max_pool3d", "positive", "[0, 0, 0]"});
  check_error([&] { F::adaptive_max_pool3d(x[0][0], 2); }, {"adaptive_max_pool3d", "4-D or 5-D"});
  check_error([] { F::max_pool3d(td::ones({1, 1, 0, 3, 3}), 2, 1, 1); }, {"max_pool3d", "[1, 1, 0, 3, 3]", "non-zero"});
  check_error([] { F::avg_pool3d(td::ones({1, 0, 2, 3, 3}), 2, 1, 1); }, {"avg_pool3d", "[1, 0, 2, 3, 3]", "non-zero"});
  CHECK(F::max_pool3d(td::ones({0, 1, 2, 3, 3}), 2, 1, 1).sizes() == Shape{0, 1, 3, 4, 4});
  before.check_unchanged(x);
}
