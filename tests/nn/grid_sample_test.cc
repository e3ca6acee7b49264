// grid_sample and affine_grid against PyTorch 2.15 in float64: every mode, padding mode and
// align_corners, on 4-D and 5-D inputs, with grids reaching outside [-1, 1] (reflected more than
// once); the values and the gradients to the input and the grid. affine_grid's grids and their
// gradients to theta; NaN grid points; errors.
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::sine_ramp;
using td::testing::Snapshot;
using td::testing::values;
using M = F::GridSampleMode;
using P = F::GridSamplePadding;

namespace {

double weighted(const Tensor& t) { return (t.detach() * sine_ramp(t.sizes(), 0.23)).sum().item<double>(); }

}  // namespace

TEST_CASE("grid_sample gives PyTorch's values and gradients in every mode and padding", "[cpu]") {
  // PyTorch 2.15: x = sin(0.37 i) ([2, 3, 5, 7] or [2, 2, 4, 5, 3]), grid = scale * sin(0.71 i)
  // ([2, 4, 6, 2] or [2, 3, 4, 2, 3]); sums weighted by sin(0.23 i) of y and of the gradients of
  // sum(y * sin(0.11 i)) to x and to the grid.
  struct Row {
    M mode;
    int dims;
    P padding;
    bool align_corners;
    double scale, y, x_grad, grid_grad;
  };
  const std::vector<Row> rows = {
      {M::bilinear, 2, P::zeros, false, 1.4, 5.96951244462761, -0.8880267406151341, -1.0745753393519322},
      {M::bilinear, 2, P::zeros, true, 1.4, 2.594926530750332, -1.919620197069384, 6.077473352705757},
      {M::bilinear, 2, P::border, false, 1.4, 5.9253376831193005, -7.5818268049805475, 5.247646504367067},
      {M::bilinear, 2, P::border, true, 1.4, 5.3457548800179815, -7.6698801181183995, 4.143150868769712},
      {M::bilinear, 2, P::reflection, false, 1.4, 4.501559507194843, -8.124992873059576, 7.5950323654142124},
      {M::bilinear, 2, P::reflection, false, 2.6, 4.174737898023549, 0.8096165230410053, -6.327082962608229},
      {M::bilinear, 2, P::reflection, true, 1.4, 3.097555106350838, -7.332372785634516, 1.1775780322741163},
      {M::bilinear, 2, P::reflection, true, 2.6, 0.6714822624937712, 3.5817516482855165, 6.154181368567659},
      {M::nearest, 2, P::zeros, false, 1.4, 8.734624915811368, -0.3943065689196034, 0.0},
      {M::nearest, 2, P::zeros, true, 1.4, 0.5968818445362719, -1.0262159355670482, 0.0},
      {M::nearest, 2, P::border, false, 1.4, 8.591359958473252, -7.117741867541879, 0.0},
      {M::nearest, 2, P::border, true, 1.4, 3.780745246628039, -5.826025530733833, 0.0},
      {M::nearest, 2, P::reflection, false, 1.4, 10.0551256567717, -7.810020695759584, 0.0},
      {M::nearest, 2, P::reflection, false, 2.6, 2.203687701965025, 6.047171885360085, 0.0},
      {M::nearest, 2, P::reflection, true, 1.4, 0.3606710996282363, -7.710305356083337, 0.0},
      {M::nearest, 2, P::reflection, true, 2.6, -3.927532901425402, 6.378426221546485, 0.0},
      {M::bicubic, 2, P::zeros, false, 1.4, 6.444257568577436, -0.6177219333853924, -0.5328907062630011},
      {M::bicubic, 2, P::zeros, true, 1.4, 3.2963904915676876, -1.6833265326445783, 5.965899617868678},
      {M::bicubic, 2, P::border, false, 1.4, 7.1810933119523455, -7.730932755558385, 4.315410869375873},
      {M::bicubic, 2, P::border, true, 1.4, 5.4938124178376295, -7.727327637210554, 3.082998868580121},
      {M::bicubic, 2, P::reflection, false, 1.4, 4.914158420498309, -9.073840732190362, 5.16321690146797},
      {M::bicubic, 2, P::reflection, false, 2.6, 4.977260538160291, 1.04704752610917, -0.23363285491430386},
      {M::bicubic, 2, P::reflection, true, 1.4, 3.8176415037559632, -8.604917242819642, 0.325098437567938},
      {M::bicubic, 2, P::reflection, true, 2.6, 1.0312913609564625, 4.11259991260083, 2.5852051701425047},
      {M::bilinear, 3, P::zeros, false, 1.4, -0.8529831803673852, 2.0221335257136004, -1.7743297398310436},
      {M::bilinear, 3, P::zeros, true, 1.4, -0.20278045708804493, 3.347191739165747, 1.7111004819135518},
      {M::bilinear, 3, P::border, false, 1.4, -1.31869653322183, 3.9809117294044865, 4.35337921769847},
      {M::bilinear, 3, P::border, true, 1.4, -0.6137455672106664, 3.6385853326291473, 1.9899988435141878},
      {M::bilinear, 3, P::reflection, false, 1.4, -1.5305706522226896, 2.769953466807226, 16.839157632350343},
      {M::bilinear, 3, P::reflection, false, 2.6, -4.8178362279304325, 1.585390541780908, -5.736921156671541},
      {M::bilinear, 3, P::reflection, true, 1.4, -0.3117650253084875, 0.8845650242883268, 2.391656876757586},
      {M::bilinear, 3, P::reflection, true, 2.6, -2.6663289807696855, -4.71530137559239, -4.890257519148808},
      {M::nearest, 3, P::zeros, false, 1.4, -0.2107899704705256, 1.9848954608751153, 0.0},
      {M::nearest, 3, P::zeros, true, 1.4, -0.3156629379791335, 4.42008197021986, 0.0},
      {M::nearest, 3, P::border, false, 1.4, -0.8100357990394691, 2.549453435114504, 0.0},
      {M::nearest, 3, P::border, true, 1.4, -0.3350975444978257, 3.8398220118436592, 0.0},
      {M::nearest, 3, P::reflection, false, 1.4, -0.8100357990394691, 2.549453435114504, 0.0},
      {M::nearest, 3, P::reflection, false, 2.6, -6.621072796249903, 1.1399430308986118, 0.0},
      {M::nearest, 3, P::reflection, true, 1.4, -1.3811170668636246, 2.9412954253852144, 0.0},
      {M::nearest, 3, P::reflection, true, 2.6, -2.1322975549666645, -8.638465942642748, 0.0},
  };
  for (const Row& r : rows) {
    INFO("mode " << static_cast<int>(r.mode) << ", " << r.dims << "-D, padding " << static_cast<int>(r.padding)
                 << ", align_corners " << r.align_corners << ", scale " << r.scale);
    Tensor x = sine_ramp(r.dims == 2 ? Shape{2, 3, 5, 7} : Shape{2, 2, 4, 5, 3}, 0.37).requires_grad_(true);
    Tensor grid = (sine_ramp(r.dims == 2 ? Shape{2, 4, 6, 2} : Shape{2, 3, 4, 2, 3}, 0.71) * r.scale)
                      .detach()
                      .requires_grad_(true);
    const Tensor y = F::grid_sample(
        x, grid, F::GridSampleOptions().mode(r.mode).padding_mode(r.padding).align_corners(r.align_corners));
    REQUIRE(y.sizes() == (r.dims == 2 ? Shape{2, 3, 4, 6} : Shape{2, 2, 3, 4, 2}));
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    CHECK(weighted(y) == Approx(r.y).epsilon(1e-12).margin(1e-13));
    CHECK(weighted(x.grad()) == Approx(r.x_grad).epsilon(1e-12).margin(1e-13));
    CHECK(weighted(grid.grad()) == Approx(r.grid_grad).epsilon(1e-11).margin(1e-12));
  }
}

TEST_CASE("grid_sample reads pixel centres exactly; the identity affine grid gives the image back", "[cpu]") {
  const Tensor image = sine_ramp({1, 2, 4, 6}, 0.3);
  for (bool align_corners : {false, true}) {
    const Tensor theta = td::tensor(std::vector<double>{1, 0, 0, 0, 1, 0}).view({1, 2, 3});
    const Tensor grid = F::affine_grid(theta, {1, 2, 4, 6}, align_corners);
    for (M mode : {M::bilinear, M::nearest, M::bicubic}) {
      INFO("align_corners " << align_corners << ", mode " << static_cast<int>(mode));
      check_close(F::grid_sample(image, grid, F::GridSampleOptions().mode(mode).align_corners(align_corners)),
                  values(image), 1e-14, 1e-14);
    }
  }
  // A point halfway between two pixels takes their mean. A NaN point samples zeros: tandem's
  // choice in every mode and padding (PyTorch gives NaN here, zeros or an edge pixel elsewhere).
  const Tensor row = td::tensor(std::vector<double>{1, 3}).view({1, 1, 1, 2});
  const Tensor between = td::tensor(std::vector<double>{0, 0, NAN, 0}).view({1, 1, 2, 2});
  check_close(F::grid_sample(row, between, F::GridSampleOptions().align_corners(true)), {2, 0}, 1e-15, 0);
}

TEST_CASE("grid_sample far outside, in 16 bits, with no points and on one-pixel inputs", "[cpu]") {
  // PyTorch 2.15: bicubic with border padding at x = +-1e10 reads the right (left) edge: 10.18...
  // (7.18...) for the image 1..12 [1, 1, 3, 4] at y = 0.3.
  const Tensor image = td::arange(1, 13).to(td::kFloat64).view({1, 1, 3, 4});
  const auto bicubic_border = F::GridSampleOptions().mode(M::bicubic).padding_mode(P::border);
  check_close(F::grid_sample(image, td::tensor(std::vector<double>{1e10, 0.3}).view({1, 1, 1, 2}), bicubic_border),
              {10.183625000000001}, 1e-14, 0);
  check_close(F::grid_sample(image, td::tensor(std::vector<double>{-1e10, 0.3}).view({1, 1, 1, 2}), bicubic_border),
              {7.183625000000003}, 1e-14, 0);
  CHECK(F::grid_sample(image, td::tensor(std::vector<double>{INFINITY, NAN}).view({1, 1, 1, 2}), bicubic_border)
            .item<double>() == 0);
  // bfloat16 holds whole numbers only up to 256: positions are found in float32 (PyTorch 2.15 reads
  // pixel 300 of 0..599 at x = 2 * 300 / 599 - 1 with align_corners).
  const Tensor wide = td::arange(600).to(td::kBFloat16).view({1, 1, 1, 600});
  const Tensor at_300 = td::tensor(std::vector<double>{2.0 * 300 / 599 - 1, 0}).to(td::kBFloat16).view({1, 1, 1, 2});
  const Tensor read = F::grid_sample(wide, at_300, F::GridSampleOptions().mode(M::nearest).align_corners(true));
  CHECK(read.dtype() == td::kBFloat16);
  CHECK(read.item<double>() == 300);
  // An empty batch gives an empty output.
  CHECK(F::grid_sample(td::ones({0, 2, 3, 4}), td::zeros({0, 5, 6, 2})).sizes() == Shape{0, 2, 5, 6});
  // A one-pixel input reflected with align_corners: the grid's gradient is zeros, as PyTorch's.
  Tensor grid = td::zeros({1, 2, 2, 2}, td::kFloat64).requires_grad_(true);
  F::grid_sample(td::ones({1, 1, 1, 1}, td::kFloat64), grid,
                 F::GridSampleOptions().padding_mode(P::reflection).align_corners(true))
      .sum()
      .backward();
  check_close(grid.grad(), values(td::zeros({1, 2, 2, 2}, td::kFloat64)), 0, 0);
}

TEST_CASE("affine_grid gives PyTorch's grids and theta's gradients", "[cpu]") {
  // PyTorch 2.15: theta = sin(0.9 i) ([2, 2, 3] or [2, 3, 4]), size [2, 3, 4, 5] or [2, 1, 3, 4, 5];
  // the first values, sums weighted by sin(0.23 i) of the grid and of theta's gradient of
  // sum(grid * sin(0.11 i)).
  struct Row {
    bool three_d, align_corners;
    Shape shape;
    std::vector<double> first;
    double grid, theta_grad;
  };
  const std::vector<Row> rows = {
      {false,
       false,
       {2, 4, 5, 2},
       {0.38635244865758256, -0.9875436893810214, 0.38635244865758256, -0.8165917372874896, 0.38635244865758256,
        -0.6456397851939577},
       -1.0194713039943089,
       22.173866550476816},
      {true,
       false,
       {2, 3, 4, 5, 3},
       {-0.8093470559055795, 1.6191541684063793, -2.0946331998162964, -0.8093470559055795, 1.4421459910884382,
        -1.777166054276635},
       -1.0352673106591461,
       -28.712832790385647},
      {false,
       true,
       {2, 4, 5, 2},
       {0.19052072125071173, -0.9623895546040744, 0.19052072125071173, -0.7486996144871594, 0.19052072125071173,
        -0.5350096743702446},
       -0.9565386187428531,
       25.725410996354725},
      {true,
       true,
       {2, 3, 4, 5, 3},
       {-1.3297946602718487, 2.2096289490002863, -2.6332120537113175, -1.3297946602718487, 1.98836872735286,
        -2.236378121786741},
       -0.6451960845286973,
       -37.19517067977801},
  };
  for (const Row& r : rows) {
    INFO((r.three_d ? "3-D" : "2-D") << ", align_corners " << r.align_corners);
    Tensor theta = sine_ramp(r.three_d ? Shape{2, 3, 4} : Shape{2, 2, 3}, 0.9).requires_grad_(true);
    const Tensor grid = F::affine_grid(
        theta, r.three_d ? std::vector<int64_t>{2, 1, 3, 4, 5} : std::vector<int64_t>{2, 3, 4, 5}, r.align_corners);
    REQUIRE(grid.sizes() == r.shape);
    check_close(grid.flatten().narrow(0, 0, 6), r.first, 1e-14, 1e-15);
    (grid * sine_ramp(grid.sizes(), 0.11)).sum().backward();
    CHECK(weighted(grid) == Approx(r.grid).epsilon(1e-12));
    CHECK(weighted(theta.grad()) == Approx(r.theta_grad).epsilon(1e-12));
  }
  // One pixel along a dim sits at 0 (PyTorch: a 1 x 3 grid is (-2/3, 0), (0, 0), (2/3, 0)).
  check_close(F::affine_grid(td::tensor(std::vector<double>{1, 0, 0, 0, 1, 0}).view({1, 2, 3}), {1, 1, 1, 3}),
              {-0.6666666666666666, 0, 0, 0, 0.6666666666666666, 0}, 1e-15, 0);
}

TEST_CASE("grid_sample and affine_grid refuse bad shapes by name, the operands unchanged", "[cpu]") {
  const Tensor x = td::ones({2, 3, 4, 5}), grid = td::zeros({2, 3, 3, 2});
  const Snapshot before_x(x), before_grid(grid);
  check_error([&] { F::grid_sample(x, td::zeros({2, 3, 3, 3})); }, {"grid_sample", "[2, 3, 3, 3]", "H', W', 2"});
  check_error([&] { F::grid_sample(x, td::zeros({1, 3, 3, 2})); }, {"grid_sample", "[1, 3, 3, 2]"});
  check_error([&] { F::grid_sample(x[0], grid); }, {"grid_sample", "4-D or 5-D", "[3, 4, 5]"});
  check_error([&] { F::grid_sample(x, grid.to(td::kFloat64)); }, {"grid_sample", "float32", "float64"});
  check_error(
      [&] {
        F::grid_sample(td::ones({1, 1, 2, 2, 2}), td::zeros({1, 1, 1, 1, 3}), F::GridSampleOptions().mode(M::bicubic));
      },
      {"grid_sample", "bicubic", "4-D"});
  check_error([] { F::affine_grid(td::zeros({2, 2, 3}), {2, 3, 4}); }, {"affine_grid", "[N, C, H, W]"});
  check_error([] { F::affine_grid(td::zeros({2, 3, 4}), {2, 3, 4, 5}); }, {"affine_grid", "[2, 2, 3]", "[2, 3, 4]"});
  check_error([] { F::affine_grid(td::zeros({1, 2, 3}), {1, 3, 0, 5}); }, {"affine_grid", "positive"});
  before_x.check_unchanged(x);
  before_grid.check_unchanged(grid);
}
