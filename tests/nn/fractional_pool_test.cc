// Fractional max pooling (2-D and 3-D) against PyTorch 2.15 (tests/nn/fractional_pool_fixtures.json,
// written by tests/nn/make_fractional_pool_fixtures.py): values, indices and gradients in every
// floating dtype, the window arithmetic of 16-bit inputs included; fresh samples from the
// generator; the layers; errors with the input unchanged.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tests/nn/json_fixture.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using nlohmann::json;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::fixture_numbers;
using td::testing::check_values;
using td::testing::Snapshot;
using td::testing::values;

namespace {

const json& fixture() {
  static const json data = td::testing::load_json_fixture("tests/nn/fractional_pool_fixtures.json");
  return data;
}

// A fixture's tensor: float64 values that are exact in `dtype`.
Tensor from_fixture(const json& c, const char* key, const char* shape_key, td::DType dtype) {
  return td::tensor(fixture_numbers(c[key])).reshape(c[shape_key].get<Shape>()).to(dtype);
}

using Pool = std::tuple<Tensor, Tensor> (*)(const Tensor&, td::IntList, td::IntList, const std::vector<double>&,
                                            const Tensor&);
Pool pool_of(int64_t dims) {
  return dims == 2 ? F::fractional_max_pool2d_with_indices : F::fractional_max_pool3d_with_indices;
}

// The same values with the last two dims stored transposed: a non-contiguous input.
Tensor transposed_layout(const Tensor& x) { return x.transpose(-1, -2).contiguous().transpose(-1, -2); }

}  // namespace

TEST_CASE("fractional max pooling gives PyTorch's values, indices and gradients", "[cpu]") {
  const json& cases = fixture()["cases"];
  REQUIRE(cases.size() == 15);
  for (const json& c : cases) {
    const std::string name = c["name"];
    const td::DType dtype = td::parse_dtype(c["dtype"]);
    const int64_t dims = c["dims"];
    const Tensor samples = from_fixture(c, "samples", "samples_shape", dtype);
    const Shape kernel = c["kernel_size"], output_size = c["output_size"];
    const std::vector<double> ratio = c["output_ratio"];
    for (bool contiguous : {true, false}) {
      const std::string what = name + (contiguous ? "" : " (non-contiguous)");
      INFO(what);
      const Tensor given = from_fixture(c, "input", "input_shape", dtype);
      Tensor x = (contiguous ? given : transposed_layout(given)).detach().requires_grad_(c.contains("grad"));
      if (c.contains("error")) {
        const Snapshot before(x);
        check_error([&] { pool_of(dims)(x, kernel, output_size, ratio, samples); },
                    {dims == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d", "outside the input",
                     "16-bit"});
        before.check_unchanged(x);
        continue;
      }
      const auto [y, indices] = pool_of(dims)(x, kernel, output_size, ratio, samples);
      CHECK(y.sizes() == c["output_shape"].get<Shape>());
      CHECK(y.dtype() == dtype);
      CHECK(indices.dtype() == td::kInt64);
      check_values(y, fixture_numbers(c["output"]), 0, what);  // a chosen input element, exactly
      CHECK(values(indices) == c["indices"].get<std::vector<double>>());
      if (!c.contains("grad")) continue;
      (y * from_fixture(c, "grad_weight", "output_shape", dtype)).sum().backward();
      // Overlapping windows sum their gradients, maybe in another order than PyTorch's: 16-bit sums
      // may round differently, within a rounding of the largest.
      const std::vector<double> grad = fixture_numbers(c["grad"]);
      double largest = 0;
      for (double v : grad) largest = std::max(largest, std::abs(v));
      const double rtol = dtype == td::kFloat64 ? 1e-15 : dtype == td::kFloat32 ? 1e-6 : 1e-2;
      check_close(x.grad(), grad, rtol, dtype == td::kFloat64 || dtype == td::kFloat32 ? 0 : rtol * largest,
                  what + " gradient");
    }
  }
}

TEST_CASE("fractional max pooling draws its samples from the default generator, fresh each call", "[cpu]") {
  const Tensor x = td::testing::sine_ramp({2, 3, 20, 17}, 0.37);
  td::manual_seed(11);
  const auto [drawn, drawn_indices] = F::fractional_max_pool2d_with_indices(x, 2, {9, 11});
  td::manual_seed(11);
  const Tensor samples = td::rand({2, 3, 2}, td::kFloat64);
  const auto [given, given_indices] = F::fractional_max_pool2d_with_indices(x, 2, {9, 11}, {}, samples);
  CHECK(values(drawn_indices) == values(given_indices));
  CHECK(values(drawn) == values(given));
  const Tensor next = F::fractional_max_pool2d(x, 2, {9, 11});
  CHECK(values(next) != values(drawn));  // the generator moved on: other windows
  // Samples in 3-D: one per plane and dim; an unbatched input draws for a batch of one.
  td::manual_seed(12);
  const Tensor volume = td::testing::sine_ramp({3, 9, 8, 10}, 0.37, td::kFloat32);
  const Tensor pooled = F::fractional_max_pool3d(volume, {2, 3, 2}, {}, {0.5, 0.6, 0.7});
  td::manual_seed(12);
  const Tensor volume_samples = td::rand({1, 3, 3}, td::kFloat32);
  CHECK(pooled.sizes() == Shape{3, 4, 4, 7});
  CHECK(values(pooled) == values(F::fractional_max_pool3d(volume, {2, 3, 2}, {4, 4, 7}, {}, volume_samples)));
}

TEST_CASE("fractional max pooling takes output_size over output_ratio, empty outputs and batches", "[cpu]") {
  const Tensor x = td::testing::sine_ramp({2, 3, 8, 9}, 0.37);
  const Tensor samples = td::rand({2, 3, 2}, td::kFloat64);
  // As PyTorch's functional form: with both, output_size.
  CHECK(values(F::fractional_max_pool2d(x, 2, {3, 4}, {0.5}, samples)) ==
        values(F::fractional_max_pool2d(x, 2, {3, 4}, {}, samples)));
  CHECK(values(F::fractional_max_pool2d(x, 2, {}, {0.5}, samples)) ==
        values(F::fractional_max_pool2d(x, 2, {4, 4}, {}, samples)));
  // No output positions along a dim, or no batch: empty results of the right shape.
  const auto [none, none_indices] = F::fractional_max_pool2d_with_indices(x, 2, {0, 3}, {}, samples);
  CHECK(none.sizes() == Shape{2, 3, 0, 3});
  CHECK(none_indices.sizes() == Shape{2, 3, 0, 3});
  Tensor empty_batch = td::zeros({0, 3, 8, 9}, td::kFloat64).requires_grad_();
  const Tensor pooled = F::fractional_max_pool2d(empty_batch, 2, {3, 3});
  CHECK(pooled.sizes() == Shape{0, 3, 3, 3});
  pooled.sum().backward();
  CHECK(empty_batch.grad().sizes() == Shape{0, 3, 8, 9});
  CHECK(F::fractional_max_pool3d(td::zeros({0, 2, 5, 5, 5}), 2, 3).sizes() == Shape{0, 2, 3, 3, 3});
}

TEST_CASE("the fractional max pooling layers print, keep fixed samples and compute as PyTorch's", "[cpu]") {
  nn::FractionalMaxPool2d pool(nn::FractionalMaxPool2dOptions(3).output_size({4, 5}));
  CHECK(pool->str() == "FractionalMaxPool2d()");
  CHECK(pool->state_dict().empty());  // no samples kept: fresh ones each forward
  const Tensor x = td::testing::sine_ramp({2, 3, 11, 12}, 0.37);
  td::manual_seed(5);
  const auto [y, indices] = pool->forward_with_indices(x);
  td::manual_seed(5);
  CHECK(values(pool(x)) == values(y));
  td::manual_seed(5);
  CHECK(values(indices) == values(std::get<1>(F::fractional_max_pool2d_with_indices(x, 3, {4, 5}))));

  // Fixed samples: a buffer under PyTorch's name, converted and cloned with the layer.
  const Tensor samples =
      td::tensor({0.1, 0.7, 0.4, 0.2, 0.9, 0.5, 0.3, 0.8, 0.6, 0.05, 0.45, 0.95}, td::kFloat64).view({2, 3, 2});
  nn::FractionalMaxPool2d fixed(nn::FractionalMaxPool2dOptions({3, 2}).output_ratio({0.5}).
                                _random_samples(samples));
  REQUIRE(fixed->state_dict().size() == 1);
  CHECK(fixed->state_dict().begin()->first == "_random_samples");
  const Tensor want = F::fractional_max_pool2d(x, {3, 2}, {5, 6}, {}, samples);
  CHECK(values(fixed(x)) == values(want));
  CHECK(values(fixed(x)) == values(want));  // the same windows every time
  const auto copy = std::dynamic_pointer_cast<nn::FractionalMaxPool2dImpl>(fixed->clone());
  REQUIRE(copy != nullptr);
  CHECK(values(copy->forward(x)) == values(want));
  fixed->to(td::kFloat32);
  CHECK(fixed->_random_samples.dtype() == td::kFloat32);
  CHECK(fixed(x.to(td::kFloat32)).dtype() == td::kFloat32);
  CHECK(copy->_random_samples.dtype() == td::kFloat64);  // the clone's own buffer

  nn::FractionalMaxPool3d volume_pool(nn::FractionalMaxPool3dOptions({2, 2, 3}).output_size(3));
  CHECK(volume_pool->str() == "FractionalMaxPool3d()");
  const Tensor volume = td::testing::sine_ramp({2, 2, 6, 7, 8}, 0.37);
  td::manual_seed(6);
  const Tensor pooled = volume_pool(volume);
  td::manual_seed(6);
  CHECK(values(pooled) == values(F::fractional_max_pool3d(volume, {2, 2, 3}, 3)));
}

TEST_CASE("fractional max pooling refuses bad input, naming the op; the input is unchanged", "[cpu]") {
  const Tensor x = td::testing::sine_ramp({2, 3, 8, 9}, 0.37);
  const Snapshot before(x);
  const Tensor samples = td::rand({2, 3, 2}, td::kFloat64);
  using Args = std::tuple<Tensor, Shape, Shape, std::vector<double>, Tensor>;
  const std::vector<std::pair<Args, std::vector<std::string>>> bad = {
      {{td::testing::sine_ramp({8, 9}, 0.37), {2}, {3}, {}, Tensor()}, {"3-D or 4-D input", "[8, 9]"}},
      {{td::zeros({2, 0, 8, 9}), {2}, {3}, {}, Tensor()}, {"non-zero size"}},
      {{x.to(td::kInt64), {2}, {3}, {}, Tensor()}, {"floating input", "int64"}},
      {{x, {0}, {3}, {}, samples}, {"kernel_size [0, 0] must be positive"}},
      {{x, {2, 2, 2}, {3}, {}, samples}, {"kernel_size must have one value or 2, got 3"}},
      {{x, {2}, {}, {}, samples}, {"give an output_size or an output_ratio"}},
      {{x, {2}, {}, {std::nan("")}, samples}, {"output_ratio nan gives no output size for 8 positions"}},
      {{x, {2}, {-1, 3}, {}, samples}, {"output size [-1, 3] must not be negative"}},
      {{x, {2}, {8, 3}, {}, samples}, {"kernel [2, 2] is too large for [8, 3] windows", "[8, 9]"}},
      {{x, {2}, {3}, {}, samples.narrow(0, 0, 1)}, {"random_samples of shape [2 or more, 3, 2]", "[1, 3, 2]"}},
      {{x, {2}, {3}, {}, samples.narrow(2, 0, 1)}, {"random_samples of shape", "[2, 3, 1]"}},
      {{x, {2}, {3}, {}, samples.to(td::kFloat32)}, {"random_samples (float32, cpu:0)", "input's dtype"}},
  };
  for (const auto& [args, fragments] : bad) {
    const auto& [input, kernel, output_size, ratio, given] = args;
    check_error([&] { F::fractional_max_pool2d(input, kernel, output_size, ratio, given); },
                [&] {
                  std::vector<std::string> all = {"fractional_max_pool2d"};
                  all.insert(all.end(), fragments.begin(), fragments.end());
                  return all;
                }());
  }
  check_error([&] { F::fractional_max_pool3d(x[0], 2, 2); }, {"fractional_max_pool3d", "4-D or 5-D input"});
  const Tensor volume = td::testing::sine_ramp({1, 2, 5, 8, 9}, 0.37);
  check_error([&] { F::fractional_max_pool3d(volume, 2, 2, {}, samples); },
              {"fractional_max_pool3d", "random_samples of shape [1 or more, 2, 3]", "[2, 3, 2]"});
  // As PyTorch's: 3-D windows must leave a position over along each dim; 2-D ones may fill it.
  check_error([&] { F::fractional_max_pool3d(volume, 2, {4, 3, 3}); },
              {"fractional_max_pool3d", "kernel [2, 2, 2] is too large for [4, 3, 3] windows", "[5, 8, 9]"});
  check_error([&] { F::fractional_max_pool3d(volume, 2, {3, 7, 3}); }, {"fractional_max_pool3d", "too large"});
  CHECK(F::fractional_max_pool3d(volume, 2, {3, 6, 7}).sizes() == Shape{1, 2, 3, 6, 7});
  CHECK(F::fractional_max_pool2d(x, 2, {7, 8}).sizes() == Shape{2, 3, 7, 8});
  before.check_unchanged(x);

  check_error([] { nn::FractionalMaxPool3d(nn::FractionalMaxPool3dOptions({2, 0, 2}).output_size(2)); },
              {"FractionalMaxPool3d", "kernel_size must be positive", "[2, 0, 2]"});
  check_error([] { nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2)); },
              {"FractionalMaxPool2d", "either an output_size or an output_ratio"});
  check_error([] { nn::FractionalMaxPool3d(nn::FractionalMaxPool3dOptions(2).output_size(2).output_ratio({0.5})); },
              {"FractionalMaxPool3d", "not both"});
  check_error([] { nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2).output_ratio({0.5, 1.5})); },
              {"FractionalMaxPool2d", "output_ratio must be in (0, 1), got 1.5"});
}
