// 1-D and adaptive max pooling, LP pooling, max unpooling, channel and alpha dropout, rrelu, cdist,
// pixel shuffle and fold/unfold against PyTorch
// 2.15: values, indices and gradients in float64; the layers' printing; errors with the input
// unchanged.
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

TEST_CASE("1-D and adaptive max pooling give PyTorch's values, indices and gradients", "[cpu]") {
  // PyTorch 2.15: y (and indices) of x = sin(0.37 i), and x's gradient of sum(y * sin(0.11 i)).
  struct Case {
    const char* name;
    Shape input;
    std::function<std::tuple<Tensor, Tensor>(const Tensor&)> pool;
    Shape output;
    std::vector<double> first;
    double sum;
    std::vector<double> indices;  // where the op gives them
    std::vector<double> grad_first;
    double grad_sum;
  };
  const std::vector<Case> cases = {
      {"max_pool1d k3 s2 p1 d2 ceil",
       {2, 3, 11},
       [](const Tensor& x) { return F::max_pool1d_with_indices(x, 3, 2, 1, 2, true); },
       {2, 3, 5},
       {0.8956986856800476, 0.9612752029752999, 0.9612752029752999, 0.9612752029752999, 0.5240443416872761,
        -0.8926476794282346, -0.35525355998804264, 0.36796051057238466},
       11.346686152936893,
       {3, 5, 5, 5, 7, 3, 5, 7, 9, 9, 1, 1, 3, 5, 9, 3, 5, 5, 5, 7, 1, 5, 7, 9, 9, 1, 1, 3, 5, 7},
       {0.0, 0.0, 0.0, 0.0, 0.0, 0.6520509523129125, 0.0, 0.4259394650659996},
       18.128648515640542},
      {"max_pool1d k4",
       {3, 10},
       [](const Tensor& x) { return F::max_pool1d_with_indices(x, 4); },
       {3, 2},
       {0.8956986856800476, 0.99588084453764, -0.5298361409084934, 0.006814640074770176, 0.9964756147406005,
        0.5182282059209767},
       2.883261850045542,
       {3, 4, 0, 7, 1, 4},
       {0.0, 0.0, 0.0, 0.0, 0.10977830083717481, 0.0, 0.0, 0.0},
       1.6006776463095713},
      {"avg_pool1d k3 s2 p1 ceil no pad",
       {2, 3, 10},
       [](const Tensor& x) {
         return std::tuple<Tensor, Tensor>{F::avg_pool1d(x, 3, 2, 1, true, false), Tensor()};
       },
       {2, 3, 6},
       {0.180807715982481, 0.6438673430910516, 0.9509515777309958, 0.760628338966221, 0.17244864867953527,
        -0.18729466354290317, -0.6652514615421555, -0.9196791795060989},
       2.7022410278768576,
       {},
       {0.0, 0.036592766945724935, 0.036592766945724935, 0.10933597463934805, 0.07274320769362311, 0.18075755049191256,
        0.10801434279828946, 0.249994164486956},
       15.653093254626778},
      {"avg_pool1d k4 s3",
       {2, 2, 11},
       [](const Tensor& x) {
         return std::tuple<Tensor, Tensor>{F::avg_pool1d(x, 4, 3), Tensor()};
       },
       {2, 2, 3},
       {0.4829005073182887, 0.9123550513572686, 0.3284778545686732, -0.9129213044866329, -0.4775816141544423,
        0.4881969746508991, 0.6109799237757008, -0.34010727993780554},
       1.8511040431540517,
       {},
       {0.0, 0.0, 0.0, 0.027444575209293703, 0.027444575209293703, 0.027444575209293703, 0.08200198097951103,
        0.05455740577021733},
       6.343517956024673},
      {"adaptive_avg_pool1d 4 of 10",
       {2, 3, 10},
       [](const Tensor& x) {
         return std::tuple<Tensor, Tensor>{F::adaptive_avg_pool1d(x, 4), Tensor()};
       },
       {2, 3, 4},
       {0.3453011145310357, 0.8552891472819443, 0.760628338966221, 0.17244864867953527, -0.7645446178858758,
        -0.950339478590238, -0.3392262590631781, 0.35135993426398987},
       2.2101680804374926,
       {},
       {0.0, 0.0, 0.036592766945724935, 0.036592766945724935, 0.036592766945724935, 0.07274320769362311,
        0.07274320769362311, 0.18075755049191256},
       16.804361879770333},
      {"adaptive_max_pool1d 4 of 10",
       {2, 3, 10},
       [](const Tensor& x) { return F::adaptive_max_pool1d_with_indices(x, 4); },
       {2, 3, 4},
       {0.674287911628145, 0.99588084453764, 0.9612752029752999, 0.5240443416872761, -0.5298361409084934,
        -0.8926476794282346, 0.006814640074770176, 0.6793046521448148},
       7.815814115018684,
       {2, 4, 5, 7, 0, 4, 7, 9, 1, 2, 5, 7, 2, 4, 7, 8, 0, 2, 5, 9, 2, 4, 5, 7},
       {0.0, 0.0, 0.0, 0.0, 0.10977830083717481, 0.21822962308086932, 0.0, 0.32404302839486837},
       16.804361879770333},
      {"adaptive_max_pool2d 3x4 of 7x6",
       {2, 2, 7, 6},
       [](const Tensor& x) {
         return F::adaptive_max_pool2d_with_indices(x, {3, 4});
       },
       {2, 2, 3, 4},
       {0.7965654722360868, 0.674287911628145, 0.99588084453764, 0.99588084453764, 0.6793046521448148,
        0.8987080958116269, 0.9964756147406005, 0.9593748338928642},
       42.81600627360404,
       {6, 2, 4, 4, 19, 20, 21, 22, 37, 38, 39, 40, 13, 13, 15, 11, 13, 13, 15, 29, 30, 31, 28, 29,
        6, 7, 4, 5, 24, 20, 22, 22, 24, 38, 39, 40, 13, 14, 15, 16, 13, 14, 15, 16, 31, 31, 33, 29},
       {0.0, 0.0, 0.10977830083717481, 0.0, 0.5422726514757377, 0.0, 0.0, 0.0},
       4.620816108844705},
      {"adaptive_max_pool2d 5 of 5x7",
       {3, 5, 7},
       [](const Tensor& x) { return F::adaptive_max_pool2d_with_indices(x, 5); },
       {3, 5, 5},
       {0.361615431964962, 0.674287911628145, 0.99588084453764, 0.99588084453764, 0.9612752029752999,
        0.5240443416872761, 0.18059626789423291, -0.18729466354290317},
       11.579204288448414,
       {1, 2, 4, 4, 5, 7, 8, 9, 11, 12, 15, 16, 18, 19, 20, 21, 22, 23, 25, 26, 28, 29, 32, 33, 34,
        1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 15, 16, 18, 19, 20, 21, 22, 23, 25, 26, 28, 30, 32, 33, 34,
        1, 2, 2, 4, 5, 7, 8, 9, 12, 13, 15, 16, 18, 19, 19, 21, 22, 23, 25, 26, 29, 30, 32, 33, 34},
       {0.0, 0.0, 0.10977830083717481, 0.0, 0.5422726514757377, 0.4259394650659996, 0.0, 0.5226872289306592},
       12.12370116529934},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor x = sine_ramp(c.input, 0.37).requires_grad_(true);
    const auto [y, indices] = c.pool(x);
    REQUIRE(y.sizes() == c.output);
    same_as_pytorch(y, c.first, c.sum, std::string(c.name) + " values");
    if (!c.indices.empty()) {
      CHECK(indices.dtype() == td::kInt64);
      check_close(indices, c.indices, 0, 0, std::string(c.name) + " indices");
    }
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    same_as_pytorch(x.grad(), c.grad_first, c.grad_sum, std::string(c.name) + " gradient");
  }
}

TEST_CASE("adaptive max pooling lets the last NaN win, as PyTorch's; float32 gives float32's values", "[cpu]") {
  // PyTorch 2.15: F.adaptive_max_pool1d([1, nan, 3, 0.5, 2, 7], 2) -> ([nan, 7], [1, 5]).
  const Tensor x = td::tensor({1.0f, NAN, 3.0f, 0.5f, 2.0f, 7.0f}).view({1, 1, 6});
  const auto [y, indices] = F::adaptive_max_pool1d_with_indices(x, 2);
  CHECK(std::isnan(y.flatten()[0].item<double>()));
  CHECK(y.flatten()[1].item<double>() == 7);
  check_close(indices, {1, 5}, 0, 0);
  // A window of several NaNs: PyTorch's scan keeps the last ([1, nan, 3, nan, 2, 7] -> index 3,
  // also as a 2 x 3 image), and the gradient goes there.
  Tensor two = td::tensor({1.0, NAN, 3.0, NAN, 2.0, 7.0}).view({1, 1, 6}).requires_grad_(true);
  const auto [nan_value, nan_index] = F::adaptive_max_pool1d_with_indices(two, 1);
  check_close(nan_index, {3}, 0, 0);
  nan_value.sum().backward();
  check_close(two.grad(), {0, 0, 0, 1, 0, 0}, 0, 0);
  check_close(std::get<1>(F::adaptive_max_pool2d_with_indices(two.detach().view({1, 1, 2, 3}), 1)), {3}, 0, 0);
  const Tensor wide = sine_ramp({2, 3, 9, 7}, 0.3);
  check_close(F::adaptive_max_pool2d(wide.to(td::kFloat32), {4, 3}),
              values(F::adaptive_max_pool2d(wide, {4, 3}).to(td::kFloat32)), 0, 0);
  // A divisible size is max_pool2d with kernel and stride in / out.
  check_close(F::adaptive_max_pool2d(wide.narrow(2, 0, 8).narrow(3, 0, 6), {4, 3}),
              values(td::max_pool2d(wide.narrow(2, 0, 8).narrow(3, 0, 6), {2, 2})), 0, 0);
}

TEST_CASE("channel dropout zeroes whole channels and scales the rest, in training only", "[cpu]") {
  td::manual_seed(11);
  const Tensor x = td::ones({8, 16, 5, 3});
  const Tensor y = F::dropout2d(x, 0.25);
  const Tensor per_channel = y.amax({2, 3});
  // Each channel all 0 or all 1 / 0.75.
  check_close(y.amin({2, 3}), values(per_channel), 0, 0);
  const Tensor kept = per_channel > 0;
  check_close(td::where(kept, per_channel, td::ones_like(per_channel) / 0.75), values(td::full({8, 16}, 1 / 0.75)),
              1e-7, 0);
  const double dropped = 1 - kept.to(td::kFloat64).mean().item<double>();
  CHECK(dropped > 0.12);  // 128 channels at p = 0.25: 32 expected, a standard deviation of 4.9
  CHECK(dropped < 0.38);
  check_close(F::dropout2d(x, 0.25, false), values(x), 0, 0);
  check_close(F::dropout1d(x[0], 1.0), values(td::zeros({16, 5, 3})), 0, 0);
  CHECK(F::dropout3d(td::ones({2, 3, 4, 5, 6}), 0.5).sizes() == Shape{2, 3, 4, 5, 6});
  // A 3-D input to dropout2d is [N, C, L], as PyTorch reads it: one draw per (sample, channel).
  const Tensor rows = F::dropout2d(td::ones({16, 8, 5}), 0.5);
  check_close(rows.amin({2}), values(rows.amax({2})), 0, 0);
  CHECK(values(rows.amax({2})[0]) != values(rows.amax({2})[1]));
  nn::Dropout2d layer(0.25);
  CHECK(layer->str() == "Dropout2d(p=0.25, inplace=False)");
  layer->eval();
  check_close(layer(x), values(x), 0, 0);
  layer->train();
  CHECK(values(layer(x)) != values(x));
  const Snapshot before(x);
  check_error([&] { F::dropout2d(x[0][0], 0.5); }, {"dropout2d", "3-D or 4-D", "[5, 3]"});
  check_error([&] { F::dropout1d(x, 1.5); }, {"dropout1d", "probability", "1.5"});
  check_error([] { nn::Dropout3d(1.5); }, {"Dropout3d", "probability", "1.5"});
  check_error([] { F::unfold(td::ones({2, 3}), 2); }, {"unfold", "[2, 3]"});
  check_error([] { F::fold(td::ones({2, 3, 4, 5}), {4, 4}, 2); }, {"fold", "2-D or 3-D"});
  before.check_unchanged(x);
}

TEST_CASE("pixel_shuffle and pixel_unshuffle move values as PyTorch's and undo each other", "[cpu]") {
  // PyTorch 2.15: F.pixel_shuffle(arange(96).view(2, 8, 2, 3), 2), first 12 values.
  const Tensor x = td::arange(96, td::kFloat64).view({2, 8, 2, 3});
  const Tensor up = F::pixel_shuffle(x, 2);
  CHECK(up.sizes() == Shape{2, 2, 4, 6});
  check_close(up.flatten().narrow(0, 0, 12), {0, 6, 1, 7, 2, 8, 12, 18, 13, 19, 14, 20}, 0, 0);
  check_close(F::pixel_unshuffle(up, 2), values(x), 0, 0);
  // F.pixel_unshuffle(arange(48).view(1, 2, 4, 6), 2), first 12 values.
  const Tensor down = F::pixel_unshuffle(td::arange(48, td::kFloat64).view({1, 2, 4, 6}), 2);
  CHECK(down.sizes() == Shape{1, 8, 2, 3});
  check_close(down.flatten().narrow(0, 0, 12), {0, 2, 4, 12, 14, 16, 1, 3, 5, 13, 15, 17}, 0, 0);
  CHECK(F::pixel_shuffle(td::ones({3, 2, 18, 2, 2}), 3).sizes() == Shape{3, 2, 2, 6, 6});
  CHECK(nn::PixelShuffle(2)->str() == "PixelShuffle(upscale_factor=2)");
  CHECK(nn::PixelUnshuffle(3)->str() == "PixelUnshuffle(downscale_factor=3)");
  check_error([] { F::pixel_shuffle(td::ones({1, 6, 2, 2}), 2); }, {"pixel_shuffle", "6 channels", "4"});
  check_error([] { F::pixel_unshuffle(td::ones({1, 1, 5, 4}), 2); }, {"pixel_unshuffle", "[1, 1, 5, 4]", "2"});
}

TEST_CASE("the pooling, fold and unfold layers print and compute as PyTorch's", "[cpu]") {
  CHECK(nn::MaxPool1d(3)->str() == "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
  CHECK(nn::MaxPool1d(3, 2, 1, 2, true)->str() ==
        "MaxPool1d(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)");
  CHECK(nn::AvgPool1d(3)->str() == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))");
  CHECK(nn::AvgPool1d(3, 2, 1)->str() == "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
  CHECK(nn::AdaptiveAvgPool1d(5)->str() == "AdaptiveAvgPool1d(output_size=5)");
  CHECK(nn::AdaptiveMaxPool1d(5)->str() == "AdaptiveMaxPool1d(output_size=5)");
  CHECK(nn::AdaptiveMaxPool2d(Shape{2, 3})->str() == "AdaptiveMaxPool2d(output_size=(2, 3))");
  CHECK(nn::AdaptiveMaxPool2d(4)->str() == "AdaptiveMaxPool2d(output_size=4)");
  CHECK(nn::Unfold(3)->str() == "Unfold(kernel_size=3, dilation=1, padding=0, stride=1)");
  CHECK(nn::Fold(Shape{4, 5}, 2)->str() == "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)");
  const Tensor x = sine_ramp({2, 3, 10}, 0.37);
  check_close(nn::MaxPool1d(3, 2, 1)(x), values(F::max_pool1d(x, 3, 2, 1)), 0, 0);
  check_close(nn::AvgPool1d(4, 3)(x), values(F::avg_pool1d(x, 4, 3)), 0, 0);
  check_close(nn::AdaptiveAvgPool1d(4)(x), values(F::adaptive_avg_pool1d(x, 4)), 0, 0);
  check_close(nn::AdaptiveMaxPool1d(4)(x), values(F::adaptive_max_pool1d(x, 4)), 0, 0);
  const Tensor image = sine_ramp({2, 3, 6, 5}, 0.37);
  check_close(nn::AdaptiveMaxPool2d(Shape{3, 2})(image), values(F::adaptive_max_pool2d(image, {3, 2})), 0, 0);
  // fold(unfold(x)) counts each pixel once per window that holds it.
  const Tensor cols = nn::Unfold(Shape{2, 3})(image);
  CHECK(cols.sizes() == Shape{2, 18, 15});
  const Tensor back = nn::Fold(Shape{6, 5}, Shape{2, 3})(cols);
  const Tensor counts = F::fold(F::unfold(td::ones_like(image), {2, 3}), {6, 5}, {2, 3});
  check_close(back, values(image * counts), 1e-15, 1e-15);
  CHECK(counts.max().item<double>() == 6);
}

TEST_CASE("1-D pooling with ceil_mode keeps a last partial window, as PyTorch's", "[cpu]") {
  // PyTorch 2.15: F.max_pool1d([[[1, 5]]], 3, 2, ceil_mode=True) -> [5] at 1; avg_pool1d -> [3].
  const Tensor x = td::tensor({1.0, 5.0}).view({1, 1, 2});
  const auto [y, indices] = F::max_pool1d_with_indices(x, 3, 2, 0, 1, true);
  check_close(y, {5}, 0, 0);
  check_close(indices, {1}, 0, 0);
  check_close(F::avg_pool1d(x, 3, 2, 0, true), {3}, 0, 0);
}

TEST_CASE("1-D and adaptive pooling refuse bad input, naming the op; the input is unchanged", "[cpu]") {
  const Tensor x = td::ones({2, 3, 5});
  const Snapshot before(x);
  check_error([&] { F::max_pool1d(x, 6); }, {"max_pool1d", "[2, 3, 5]", "too short"});
  check_error([&] { F::max_pool1d(x, 2, 1, 2); }, {"max_pool1d", "padding (2)", "half"});
  check_error([&] { F::max_pool1d(x, {2, 2}); }, {"max_pool1d", "kernel_size", "one value", "2"});
  check_error([&] { F::avg_pool1d(x, 0); }, {"avg_pool1d", "kernel_size (0)", "positive"});
  check_error([&] { F::max_pool1d(td::ones({5}), 2); }, {"max_pool1d", "2-D or 3-D", "[5]"});
  check_error([&] { F::adaptive_avg_pool1d(x, 0); }, {"adaptive_avg_pool1d", "output_size (0)"});
  check_error([&] { F::adaptive_max_pool1d(x, {2, 2}); }, {"adaptive_max_pool1d", "output_size", "one value"});
  check_error([&] { F::adaptive_max_pool2d(x, {2, 0}); }, {"adaptive_max_pool2d", "[2, 0]", "positive"});
  check_error([&] { F::adaptive_max_pool2d(td::ones({5, 5}), 2); }, {"adaptive_max_pool2d", "3-D or 4-D", "[5, 5]"});
  before.check_unchanged(x);
}

TEST_CASE("lp_pool gives PyTorch's values and gradients, zero windows a zero gradient", "[cpu]") {
  // PyTorch 2.15: y of x = sin(0.37 i) (|x| where marked), and x's gradient of sum(y * sin(0.11 i)).
  struct Case {
    const char* name;
    Shape input;
    bool absolute;
    std::function<Tensor(const Tensor&)> pool;
    Shape output;
    std::vector<double> first;
    double sum;
    std::vector<double> grad_first;
    double grad_sum;
  };
  const std::vector<Case> cases = {
      {"lp_pool2d p2 k (2, 3) s (1, 2) ceil",
       {2, 2, 5, 6},
       false,
       [](const Tensor& x) {
         return F::lp_pool2d(x, 2, {2, 3}, {1, 2}, true);
       },
       {2, 2, 4, 3},
       {1.2357928402420557, 1.6115643390803833, 2.0631125652753863, 1.912249307857933, 1.311231328645606,
        1.2538212572947407, 2.0296475972582795, 2.0228561298809464},
       81.33126609058726,
       {0.0, 0.0, 0.04593188085548267, 0.06101418192968702, 0.22585026188556848, 0.15252104666011113,
        0.13498317760005518, 0.08880270725984023},
       8.770350752322294},
      {"lp_pool1d p3 k3",
       {2, 3, 10},
       true,
       [](const Tensor& x) { return F::lp_pool1d(x, 3, 3); },
       {2, 3, 3},
       {0.7073121066412763, 1.3741087183022789, 0.868559945848405, 1.1586470818124592, 1.2592502553213092,
        0.45573742661549094, 1.3747757928519528, 0.8626844957911618},
       17.90710761395515,
       {0.0, 0.0, 0.0, 0.04664425792211464, 0.05766191639955279, 0.053724179697886766, 0.18355112993927167,
        0.07944200183349705},
       16.313210546264536},
      {"lp_pool1d p1.5 k2 s1",
       {2, 3, 7},
       true,
       [](const Tensor& x) { return F::lp_pool1d(x, 1.5, 2, 1); },
       {2, 3, 6},
       {0.361615431964962, 0.8409268520483123, 1.252295051399816, 1.5024004851371962, 1.5535171973002577,
        1.3982614294791278, 0.5925317705797573, 0.29201942599937514},
       37.30277850460608,
       {0.0, 0.07198812666180024, 0.2584353031580976, 0.43476360610075476, 0.6048542705295479, 0.7684358586589597,
        0.39451038388745485, 0.5765957680172139},
       23.60068548869778},
      {"lp_pool3d p2 k2",
       {1, 2, 4, 5, 4},
       false,
       [](const Tensor& x) { return F::lp_pool3d(x, 2, 2); },
       {1, 2, 2, 2, 2},
       {2.0361808151034566, 2.009706720615521, 2.031587048022382, 2.0216865402648456, 1.9848287135686071,
        2.0320850292272503, 1.9736727217512222, 2.0236552805063264},
       32.04202727279031,
       {0.0, 0.0, 0.036832330038142964, 0.04892668107609798, 0.0, 0.0, 0.043511624432870995, 0.028625419223430506},
       -0.455501306058341},
      {"lp_pool2d p inf",
       {2, 2, 4, 6},
       false,
       [](const Tensor& x) { return F::lp_pool2d(x, INFINITY, 2); },
       {2, 2, 2, 3},
       {0.7965654722360868, 0.8956986856800476, 0.99588084453764, 0.9952398257691627, 0.9964756147406005,
        0.9593748338928642, 0.9945525882039892, 0.6641607235200951},
       21.93199969642436,
       {0.0, 0.0, 0.0, 0.10977830083717481, 0.21822962308086932, 0.0, 0.0, 0.0},
       0.9024581814549371},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor ramp = sine_ramp(c.input, 0.37);
    Tensor x = (c.absolute ? ramp.abs() : ramp).requires_grad_(true);
    const Tensor y = c.pool(x);
    REQUIRE(y.sizes() == c.output);
    same_as_pytorch(y, c.first, c.sum, std::string(c.name) + " values");
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    same_as_pytorch(x.grad(), c.grad_first, c.grad_sum, std::string(c.name) + " gradient");
  }
  // A window of zeros: the value 0 and, as PyTorch's, a zero gradient (not NaN).
  Tensor zero = td::zeros({1, 1, 4}, td::kFloat64).requires_grad_(true);
  F::lp_pool1d(zero, 2, 2).sum().backward();
  check_close(zero.grad(), {0, 0, 0, 0}, 0, 0);
  CHECK(nn::LPPool2d(2, 3)->str() == "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)");
  CHECK(nn::LPPool1d(1.5, 2, 1)->str() == "LPPool1d(norm_type=1.5, kernel_size=2, stride=1, ceil_mode=False)");
  CHECK(nn::LPPool2d(2, std::vector<int64_t>{2, 3}, std::vector<int64_t>{}, true)->str() ==
        "LPPool2d(norm_type=2, kernel_size=(2, 3), stride=None, ceil_mode=True)");
  CHECK(nn::LPPool3d(2, 2)->str() == "LPPool3d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)");
  const Tensor plain = sine_ramp({2, 2, 5, 6}, 0.37);
  check_close(nn::LPPool2d(2, std::vector<int64_t>{2, 3}, std::vector<int64_t>{1, 2}, true)(plain),
              values(F::lp_pool2d(plain, 2, {2, 3}, {1, 2}, true)), 0, 0);
  check_error([&] { F::lp_pool2d(plain, 0, 2); }, {"lp_pool2d", "norm_type", "non-zero"});
  check_error([&] { F::lp_pool1d(plain, 2, 2); }, {"lp_pool1d", "2-D or 3-D", "[2, 2, 5, 6]"});
}

TEST_CASE("max_unpool places each value at its index as PyTorch's, gradients at shared indices too", "[cpu]") {
  // PyTorch 2.15: x = sin(0.37 i) [2, 2, 5, 6] max-pooled (kernel 3, stride 2, padding 1) with
  // indices, unpooled to [5, 6]; sums weighted by sin(0.23 i) and y's gradient of sum(u * sin(0.11 i)).
  const Tensor x = sine_ramp({2, 2, 5, 6}, 0.37);
  auto [pooled, indices] = td::max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1});
  check_close(indices.flatten().narrow(0, 0, 12), {6, 3, 4, 6, 21, 21, 19, 21, 21, 7, 8, 9}, 0, 0);
  Tensor y = pooled.detach().requires_grad_(true);
  const Tensor u = F::max_unpool2d(y, indices, 3, 2, 1, {5, 6});
  REQUIRE(u.sizes() == Shape{2, 2, 5, 6});
  CHECK((u * sine_ramp(u.sizes(), 0.23)).sum().item<double>() == Approx(2.0662814458948837).epsilon(1e-13));
  (u * sine_ramp(u.sizes(), 0.11)).sum().backward();
  // Index 21 is shared by four values: each takes the whole gradient there, as PyTorch's.
  same_as_pytorch(y.grad(),
                  {0.6131168519734338, 0.32404302839486837, 0.4259394650659996, 0.6131168519734338, 0.7390052780594708,
                   0.7390052780594708, 0.8682145834456126, 0.7390052780594708},
                  0.32573087105729037, "max_unpool2d gradient");
  // Every element not indexed is zero; every indexed one holds its value.
  const Tensor placed = (u != 0).sum();
  CHECK(placed.item<int64_t>() <= pooled.numel());
  check_close(u.flatten(2).gather(2, indices.flatten(2)), values(pooled.flatten(2)), 0, 0);
  // 1-D and 3-D, against PyTorch's weighted sums.
  const Tensor line = sine_ramp({2, 3, 8}, 0.37);
  auto [line_pooled, line_indices] = F::max_pool1d_with_indices(line, 3, 2);
  const Tensor line_back = F::max_unpool1d(line_pooled, line_indices, 3, 2);
  REQUIRE(line_back.sizes() == Shape{2, 3, 7});
  CHECK((line_back * sine_ramp(line_back.sizes(), 0.23)).sum().item<double>() ==
        Approx(1.120923605102578).epsilon(1e-13));
  const Tensor volume = sine_ramp({1, 2, 4, 5, 4}, 0.37);
  auto [volume_pooled, volume_indices] = F::max_pool3d_with_indices(volume, 2);
  const Tensor volume_back = F::max_unpool3d(volume_pooled, volume_indices, 2, {}, 0, {1, 2, 5, 5, 4});
  REQUIRE(volume_back.sizes() == Shape{1, 2, 5, 5, 4});
  CHECK((volume_back * sine_ramp(volume_back.sizes(), 0.23)).sum().item<double>() ==
        Approx(-2.1861473454194953).epsilon(1e-13));
  nn::MaxUnpool2d layer(2);
  CHECK(layer->str() == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))");
  CHECK(nn::MaxUnpool1d(3, 2, 1)->str() == "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))");
  CHECK(nn::MaxUnpool3d(std::vector<int64_t>{2, 2, 1})->str() ==
        "MaxUnpool3d(kernel_size=(2, 2, 1), stride=(2, 2, 1), padding=(0, 0, 0))");
  const Snapshot before(pooled);
  check_error([&] { F::max_unpool2d(pooled, indices, 3, 2, 1); }, {"max_unpool2d", "outside the output [5, 5]"});
  check_error(
      [&] {
        F::max_unpool2d(pooled, indices, 3, 2, 1, {7, 6});
      },
      {"max_unpool2d", "output_size [7, 6]", "between 3 and 7"});
  check_error([] { F::max_unpool2d(td::ones({1, 1, 1, 1}), td::zeros({1, 1, 1, 1}, td::kInt64), 1, 1, 1); },
              {"max_unpool2d", "[-1, -1]", "not positive"});
  check_error([&] { F::max_unpool2d(pooled, indices.to(td::kInt32), 3, 2, 1, {5, 6}); }, {"max_unpool2d", "int64"});
  before.check_unchanged(pooled);
}

TEST_CASE("alpha dropout keeps SELU's statistics; rrelu draws slopes in training; cdist as PyTorch's", "[cpu]") {
  td::manual_seed(5);
  // Alpha dropout: a standard normal input keeps mean 0 and variance 1; kept elements are a * x +
  // alpha' a p, dropped ones -alpha' a + alpha' a p (a = ((alpha'^2 p + 1)(1 - p))^-1/2).
  const double p = 0.2, alpha = 1.7580993408473766, a = 1 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  const Tensor x = td::randn({200000}, td::kFloat64);
  const Tensor y = F::alpha_dropout(x, p, true);
  const Tensor dropped = td::abs(y - (x * a + alpha * a * p)) > 1e-12;
  check_close(td::where(dropped, y, -alpha * a + alpha * a * p),
              values(td::full({200000}, -alpha * a + alpha * a * p, td::kFloat64)), 1e-12, 1e-12);
  const double share = dropped.to(td::kFloat64).mean().item<double>();
  CHECK(std::abs(share - p) < 0.01);  // 200000 draws: a standard deviation of 0.0009
  CHECK(std::abs(y.mean().item<double>()) < 0.02);
  CHECK(std::abs(y.var().item<double>() - 1) < 0.02);
  check_close(F::alpha_dropout(x, p, false), values(x), 0, 0);
  // Per channel: each channel of [N, C, L] all kept or all dropped.
  const Tensor channels = F::feature_alpha_dropout(td::ones({16, 8, 5}, td::kFloat64), 0.5, true);
  check_close(channels.amin({2}), values(channels.amax({2})), 0, 0);
  CHECK(nn::AlphaDropout(0.2)->str() == "AlphaDropout(p=0.2, inplace=False)");
  CHECK(nn::FeatureAlphaDropout(0.3)->str() == "FeatureAlphaDropout(p=0.3, inplace=False)");
  check_error([] { F::feature_alpha_dropout(td::ones({4}), 0.5, true); }, {"feature_alpha_dropout", "[N, C, ...]"});
  check_close(F::feature_alpha_dropout(td::ones({4}), 0.5, false), {1, 1, 1, 1}, 0, 0);  // evaluation: as it is

  // rrelu: evaluation is leaky_relu with the mean slope (PyTorch: [-2, 3] -> [-0.4, 3] for 0.1..0.3).
  check_close(F::rrelu(td::tensor(std::vector<double>{-2.0, 3.0}), 0.1, 0.3), {-0.4, 3.0}, 1e-15, 0);
  Tensor z = td::full({10000}, -1.0, td::kFloat64).requires_grad_(true);
  const Tensor slopes = -F::rrelu(z, 0.1, 0.3, true);
  CHECK(slopes.min().item<double>() >= 0.1);
  CHECK(slopes.max().item<double>() <= 0.3);
  CHECK(std::abs(slopes.mean().item<double>() - 0.2) < 0.005);
  slopes.sum().backward();
  check_close(z.grad(), values(-slopes.detach()), 0, 0);  // the gradient is each element's own slope
  nn::RReLU layer;
  CHECK(layer->str() == "RReLU(lower=0.125, upper=0.3333333333333333)");
  layer->eval();
  check_close(layer(td::tensor({-3.0})), {-3.0 * (0.125 + 1.0 / 3) / 2}, 1e-15, 0);

  // cdist: PyTorch 2.15's torch.cdist(compute_mode='donot_use_mm_for_euclid_dist') of
  // x1 = sin(0.3 i) [3, 4, 5] and x2 = sin(0.7 i) [3, 6, 5]: first values, sum, and the inputs'
  // gradients of sum(d * sin(0.11 i)) weighted by sin(0.23 i).
  struct Row {
    double p;
    std::vector<double> first;
    double sum, grad1, grad2;
  };
  const std::vector<Row> rows = {
      {2,
       {0.8133386177078573, 2.591790336265018, 1.7020943316648895, 2.1044317601416203},
       150.286129007875,
       18.107825080635227,
       2.6490510070891515},
      {1,
       {1.446438130002488, 5.394793025766597, 3.40233782312498, 4.349346467593369},
       293.2484365505752,
       41.54435667382991,
       7.86832568458761},
      {0, {4.0, 5.0, 5.0, 5.0}, 359.0, 0.0, 0.0},
      {3.5,
       {0.6635352334451307, 1.9550774346449455, 1.3794131600893926, 1.5973054699926499},
       118.19322096730686,
       13.229096521040114,
       2.072217660950626},
      {INFINITY,
       {0.5970509358113212, 1.547095086019368, 1.298518215219153, 1.274697935812657},
       98.43417596613378,
       9.051193692556051,
       2.1030344471451636},
      {0.5,
       {5.264859955867933, 25.628454506494606, 16.01717693508705, 20.545141832211748},
       1305.9576415458207,
       277.8862164697762,
       77.70675660667818},
  };
  for (const Row& r : rows) {
    INFO("cdist p " << r.p);
    Tensor x1 = sine_ramp({3, 4, 5}, 0.3).requires_grad_(true), x2 = sine_ramp({3, 6, 5}, 0.7).requires_grad_(true);
    const Tensor d = F::cdist(x1, x2, r.p);
    REQUIRE(d.sizes() == Shape{3, 4, 6});
    same_as_pytorch(d, r.first, r.sum, "distances");
    (d * sine_ramp(d.sizes(), 0.11)).sum().backward();
    CHECK((x1.grad() * sine_ramp({3, 4, 5}, 0.23)).sum().item<double>() ==
          Approx(r.grad1).epsilon(1e-12).margin(1e-14));
    CHECK((x2.grad() * sine_ramp({3, 6, 5}, 0.23)).sum().item<double>() ==
          Approx(r.grad2).epsilon(1e-12).margin(1e-14));
  }
  // A zero distance has a zero gradient, as PyTorch's.
  Tensor same = td::tensor(std::vector<double>{0, 0, 1, 1}).view({2, 2}).requires_grad_(true);
  F::cdist(same, td::zeros({1, 2}, td::kFloat64)).sum().backward();
  check_close(same.grad(), {0, 0, 0.7071067811865475, 0.7071067811865475}, 1e-14, 0);
  // p = inf: every element that reaches the largest difference takes the whole gradient, as
  // PyTorch's cdist (PyTorch 2.15: x1 [[1, -1, 0.5]], x2 [[0, 0, 0]] -> [1, -1, 0]).
  Tensor tied = td::tensor(std::vector<double>{1, -1, 0.5}).view({1, 3}).requires_grad_(true);
  F::cdist(tied, td::zeros({1, 3}, td::kFloat64), INFINITY).sum().backward();
  check_close(tied.grad(), {1, -1, 0}, 0, 0);
  // Zero distances (cdist(x, x), rows 0 and 2 equal): PyTorch 2.15's first and second derivatives
  // of sum(cdist(x, x)), the second that of the sum of the first's squares; finite, no NaN.
  const std::vector<std::tuple<double, std::vector<double>, std::vector<double>>> twice = {
      {2.0,
       {-1.9402850002906638, 0.48507125007266594, 3.8805700005813275, -0.9701425001453319, -1.9402850002906638,
        0.48507125007266594},
       {0, 0, 0, 0, 0, 0}},
      {1.5,
       {-1.9229994270765445, 0.9614997135382721, 3.845998854153089, -1.9229994270765443, -1.9229994270765445,
        0.9614997135382721},
       {0.61632113275612, 2.465284531024478, -1.23264226551224, -4.930569062048955, 0.61632113275612,
        2.465284531024478}},
      {3.0,
       {-1.9794342196130745, 0.12371463872581716, 3.958868439226149, -0.24742927745163432, -1.9794342196130745,
        0.12371463872581716},
       {-0.271257218984438, -1.0850288759377538, 0.542514437968876, 2.1700577518755075, -0.271257218984438,
        -1.0850288759377538}},
      {0.5, {-3.0, 6.000000000000001, 6.0, -12.000000000000002, -3.0, 6.000000000000001},
       {-31.5, -126.00000000000009, 63.0, 252.0000000000001, -31.5, -126.00000000000009}},
  };
  for (const auto& [p, first, second] : twice) {
    INFO("cdist twice, p " << p);
    Tensor points = td::tensor(std::vector<double>{0, 1, 2, 0.5, 0, 1}).view({3, 2}).requires_grad_(true);
    const Tensor g = td::autograd::grad({F::cdist(points, points, p).sum()}, {points}, {}, true, true)[0];
    check_close(g, first, 1e-13, 1e-14);
    check_close(td::autograd::grad({g.pow(2).sum()}, {points})[0], second, 1e-12, 1e-13);
  }
  check_error([] { F::cdist(td::ones({2, 3}), td::ones({2, 3}, td::kFloat64)); }, {"cdist", "one dtype"});
  check_error([] { F::cdist(td::ones({2, 3}), td::ones({2, 4})); }, {"cdist", "[2, 3]", "[2, 4]"});
  check_error([] { F::cdist(td::ones({2, 3}), td::ones({2, 3}), -1); }, {"cdist", "non-negative"});
}
