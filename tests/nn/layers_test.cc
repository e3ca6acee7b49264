// The layers against plain references: Linear, Conv2d (direct convolution), BatchNorm (running
// statistics), LayerNorm, Embedding, Dropout, pooling; PyTorch's initial distributions; and
// gradcheck through the functional forms.
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::read;
using td::testing::Snapshot;
using td::testing::values;

namespace {

// Direct 2-D convolution in double: the reference for F::conv2d.
std::vector<double> direct_conv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t pad,
                                int64_t dil, int64_t groups, int64_t& oh, int64_t& ow) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), wi = x.size(3);
  const int64_t o = w.size(0), cg = w.size(1), kh = w.size(2), kw = w.size(3);
  oh = (h + 2 * pad - dil * (kh - 1) - 1) / stride + 1;
  ow = (wi + 2 * pad - dil * (kw - 1) - 1) / stride + 1;
  std::vector<double> out;
  auto at = [](const Tensor& t, std::initializer_list<int64_t> idx) {
    return read(t, td::testing::ravel(std::vector<int64_t>(idx), t.sizes()));
  };
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b.defined() ? read(b, oc) : 0;
          int64_t g = oc / (o / groups);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t bb = 0; bb < kw; ++bb) {
                int64_t y = i * stride - pad + a * dil, xx = j * stride - pad + bb * dil;
                if (y < 0 || y >= h || xx < 0 || xx >= wi) continue;
                acc += at(x, {ni, g * cg + ci, y, xx}) * at(w, {oc, ci, a, bb});
              }
          out.push_back(acc);
        }
  (void)c;
  return out;
}

// Values within two float32 ulps of PyTorch's (or atol), with its NaNs, infinities and signs of zero.
void same_as_pytorch(const std::vector<double>& got, const std::vector<double>& expected, double atol = 1e-45) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " against " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(std::signbit(got[i]) == std::signbit(expected[i]));
      CHECK(std::abs(got[i] - expected[i]) <= 2.4e-7 * std::abs(expected[i]) + atol);
    }
  }
}

}  // namespace

TEST_CASE("Linear computes x W^T + b for inputs of any rank", "[cpu]") {
  td::testing::reseed(400);
  nn::Linear fc(4, 3);
  Tensor x = td::randn({2, 5, 4});
  Tensor y = fc(x);
  CHECK(y.sizes() == td::Shape{2, 5, 3});
  std::vector<double> expected;
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t o = 0; o < 3; ++o) {
      double acc = read(fc->bias, o);
      for (int64_t i = 0; i < 4; ++i) acc += read(x, r * 4 + i) * read(fc->weight, o * 4 + i);
      expected.push_back(acc);
    }
  check_close(y, expected, 1e-5, 1e-6);
  nn::Linear no_bias(nn::LinearOptions(4, 3).bias(false));
  CHECK(!no_bias->bias.defined());
  CHECK(no_bias->parameters().size() == 1);
  check_error([&] { fc(td::randn({2, 5})); }, {"linear", "[2, 5]", "in_features = 4"});
}

TEST_CASE("16-bit Linear and Conv2d round once, the bias inside the product's float32 sum, as PyTorch's CPU does",
          "[cpu]") {
  // Multiples of 1/8 up to 2.5: every product and sum is exact in float32 and float64 but needs
  // more bits than float16/bfloat16 keep. The float64 result rounded once is PyTorch's (its
  // addmm over the flattened rows, its convolution's bias in the GEMM); the product rounded and
  // then the bias added differed in about a quarter of the elements.
  auto eighths = [](td::Shape shape, int salt) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((7 * i + salt) % 41 - 20) / 8.0;
    return td::tensor(v).view(shape);
  };
  for (td::DType dtype : {td::kBFloat16, td::kFloat16}) {
    INFO(td::dtype_name(dtype));
    Tensor x = eighths({4, 6, 24}, 1), w = eighths({10, 24}, 2), b = eighths({10}, 3);
    auto lower = [&](const Tensor& t) { return t.to(dtype); };
    const Tensor exact = F::linear(x, w, b).to(dtype);
    CHECK(values(F::linear(lower(x), lower(w), lower(b))) == values(exact));
    CHECK(values(F::linear(lower(x).select(0, 1).select(0, 2), lower(w), lower(b))) ==
          values(exact.select(0, 1).select(0, 2)));  // a 1-D input
    {
      td::amp::AutocastGuard autocast(td::kCPU, dtype);
      CHECK(values(F::linear(x.to(td::kFloat32), w.to(td::kFloat32), b.to(td::kFloat32))) == values(exact));
    }
    // The gradients reach every operand through the flattened rows.
    Tensor xl = lower(x).requires_grad_(), wl = lower(w).requires_grad_(), bl = lower(b).requires_grad_();
    F::linear(xl, wl, bl).sum().backward();
    CHECK(values(bl.grad()) == std::vector<double>(10, 24));
    CHECK(xl.grad().sizes() == x.sizes());
    CHECK(wl.grad().sizes() == w.sizes());
    Tensor image = eighths({2, 4, 7, 6}, 4), filter = eighths({6, 2, 3, 3}, 5), bias = eighths({6}, 6);
    CHECK(values(F::conv2d(lower(image), lower(filter), lower(bias), 1, 1, 1, 2)) ==
          values(F::conv2d(image, filter, bias, 1, 1, 1, 2).to(dtype)));
  }
  Tensor x = td::ones({2, 3}), w = td::ones({4, 3});
  check_error([&] { F::linear(x, w, td::ones({4}, td::kFloat64)); }, {"linear", "float32", "float64", "one dtype"});
  check_error([&] { F::conv2d(td::ones({1, 2, 3, 3}), td::ones({1, 2, 1, 1}, td::kBFloat16)); },
              {"conv2d", "float32", "bfloat16", "one dtype"});
}

TEST_CASE("Conv2d matches a direct convolution with stride, padding, dilation and groups", "[cpu]") {
  td::testing::reseed(401);
  struct Case {
    int64_t in, out, k, stride, pad, dil, groups;
  };
  for (Case c : {Case{3, 4, 3, 1, 0, 1, 1}, Case{2, 6, 3, 2, 1, 1, 2}, Case{4, 4, 2, 1, 2, 2, 4}, Case{1, 2, 5, 3, 2, 1, 1}}) {
    nn::Conv2d conv(nn::Conv2dOptions(c.in, c.out, c.k).stride(c.stride).padding(c.pad).dilation(c.dil).groups(c.groups));
    Tensor x = td::randn({2, c.in, 9, 8});
    int64_t oh = 0, ow = 0;
    std::vector<double> expected = direct_conv(x, conv->weight, conv->bias, c.stride, c.pad, c.dil, c.groups, oh, ow);
    Tensor y = conv(x);
    CHECK(y.sizes() == td::Shape{2, c.out, oh, ow});
    check_close(y, expected, 1e-4, 1e-5);
  }
  nn::Conv2d conv(1, 2, 3);
  CHECK(conv(td::randn({1, 5, 5})).sizes() == td::Shape{2, 3, 3});  // unbatched input
  check_error([&] { conv(td::randn({1, 3, 5, 5})); }, {"conv2d", "3 channels"});
}

TEST_CASE("Conv2d with padding='same' keeps height and width, the odd row and column of padding after, as PyTorch",
          "[cpu]") {
  td::testing::reseed(409);
  struct Case {
    int64_t in, out, kh, kw, dh, dw, groups;
  };
  // Even kernels (odd totals), a dilated even kernel, a dilated odd one, groups.
  for (Case c : {Case{1, 2, 2, 3, 1, 1, 1}, Case{2, 2, 4, 4, 1, 2, 1}, Case{2, 4, 3, 3, 2, 2, 2}}) {
    INFO("kernel " << c.kh << "x" << c.kw << " dilation " << c.dh << "x" << c.dw);
    nn::Conv2d conv(nn::Conv2dOptions(c.in, c.out, {c.kh, c.kw}).padding(td::kSame).dilation({c.dh, c.dw})
                        .groups(c.groups));
    Tensor x = td::randn({2, c.in, 7, 6}, td::kFloat64);
    conv->to(td::kFloat64);
    Tensor y = conv(x);
    REQUIRE(y.sizes() == td::Shape{2, c.out, 7, 6});
    CHECK(y.is_contiguous());  // as PyTorch's: y.view(...) works
    // out[i, j] takes its window from row i - before_h, column j - before_w, before = total / 2.
    const int64_t before_h = c.dh * (c.kh - 1) / 2, before_w = c.dw * (c.kw - 1) / 2;
    const int64_t per_group = c.in / c.groups, outs_per_group = c.out / c.groups;
    std::vector<double> expected;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t o = 0; o < c.out; ++o)
        for (int64_t i = 0; i < 7; ++i)
          for (int64_t j = 0; j < 6; ++j) {
            double acc = read(conv->bias, o);
            for (int64_t ci = 0; ci < per_group; ++ci)
              for (int64_t a = 0; a < c.kh; ++a)
                for (int64_t b = 0; b < c.kw; ++b) {
                  const int64_t r = i - before_h + a * c.dh, q = j - before_w + b * c.dw;
                  if (r < 0 || r >= 7 || q < 0 || q >= 6) continue;
                  const int64_t channel = o / outs_per_group * per_group + ci;
                  acc += read(x, ((n * c.in + channel) * 7 + r) * 6 + q) *
                         read(conv->weight, ((o * per_group + ci) * c.kh + a) * c.kw + b);
                }
            expected.push_back(acc);
          }
    check_close(y, expected, 1e-12, 1e-12);
    CHECK(conv(x[0]).sizes() == td::Shape{c.out, 7, 6});  // unbatched
  }
  // Gradients (and second order) through the cropped output.
  auto same = [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], 1, td::kSame, {1, 2}); };
  std::vector<Tensor> inputs = {td::testing::random_tensor({1, 2, 5, 4}, td::kFloat64).requires_grad_(),
                                td::testing::random_tensor({3, 2, 2, 2}, td::kFloat64).requires_grad_(),
                                td::testing::random_tensor({3}, td::kFloat64).requires_grad_()};
  auto first = td::autograd::gradcheck(same, inputs);
  INFO(first.report);
  CHECK(first.ok);
  auto second = td::autograd::gradgradcheck(same, inputs);
  INFO(second.report);
  CHECK(second.ok);

  nn::Conv2d valid(nn::Conv2dOptions(1, 2, 3).padding(td::kValid));
  CHECK(valid(td::randn({1, 1, 5, 5})).sizes() == td::Shape{1, 2, 3, 3});
  CHECK(valid->extra_repr() == "1, 2, kernel_size=(3, 3), stride=(1, 1), padding=valid");
  nn::Conv2d same_module(nn::Conv2dOptions(1, 2, {2, 3}).padding(td::kSame));
  CHECK(same_module->extra_repr() == "1, 2, kernel_size=(2, 3), stride=(1, 1), padding=same");
  nn::Conv2d numbers(nn::Conv2dOptions(1, 2, 3).padding(td::kSame).padding(1));  // the last setter wins
  CHECK(numbers->extra_repr() == "1, 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)");
  check_error([] { nn::Conv2d(nn::Conv2dOptions(1, 2, 3).padding(td::kSame).stride(2)); },
              {"Conv2d", "padding='same'", "strided", "(2, 2)"});
  check_error([] { F::conv2d(td::randn({1, 1, 5, 5}), td::randn({1, 1, 3, 3}), {}, {1, 2}, td::kSame); },
              {"conv2d", "padding='same'", "strided", "(1, 2)"});
  check_error([] { F::conv2d(td::randn({1, 1, 5, 5}), td::randn({1, 3, 3}), {}, 1, td::kSame); },
              {"conv2d", "4-D", "[1, 3, 3]"});
}

TEST_CASE("BatchNorm normalizes with batch statistics and updates its running ones", "[cpu]") {
  td::testing::reseed(402);
  nn::BatchNorm2d bn(nn::BatchNormOptions(3));
  Tensor x = td::randn({4, 3, 5, 5}, td::kFloat32) * 2 + 1;
  Tensor y = bn(x);
  Tensor per_channel_mean = y.mean({0, 2, 3});
  Tensor per_channel_var = y.var({0, 2, 3}, 0);
  check_close(per_channel_mean, std::vector<double>(3, 0.0), 0, 1e-5);
  check_close(per_channel_var, std::vector<double>(3, 1.0), 1e-3, 0);
  std::vector<double> mean = values(x.mean({0, 2, 3})), var = values(x.var({0, 2, 3}, 1));
  std::vector<double> rm, rv;
  for (int c = 0; c < 3; ++c) {
    rm.push_back(0.1 * mean[c]);
    rv.push_back(0.9 + 0.1 * var[c]);
  }
  check_close(bn->running_mean, rm, 1e-5, 1e-7);
  check_close(bn->running_var, rv, 1e-5, 1e-7);
  CHECK(bn->num_batches_tracked.item<int64_t>() == 1);
  bn->eval();
  Tensor z = bn(x);
  std::vector<double> expected;
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = (i / 25) % 3;
    expected.push_back((read(x, i) - rm[c]) / std::sqrt(rv[c] + 1e-5));
  }
  check_close(z, expected, 1e-5, 1e-5);
  CHECK(bn->num_batches_tracked.item<int64_t>() == 1);  // eval leaves the statistics alone

  nn::BatchNorm1d cumulative(nn::BatchNormOptions(2).momentum(std::nullopt));
  Tensor a = td::randn({8, 2}), b = td::randn({8, 2});
  cumulative(a);
  cumulative(b);
  check_close(cumulative->running_mean, values((a.mean({0}) + b.mean({0})) / 2), 1e-5, 1e-7);
  check_error([&] { bn(td::randn({4, 2, 3, 3})); }, {"BatchNorm2d", "3 channels"});

  // A batch that fails changes neither the running statistics nor the count of batches.
  bn->train();
  const std::vector<double> mean_before = values(bn->running_mean), var_before = values(bn->running_var);
  auto unchanged = [&] {
    CHECK(values(bn->running_mean) == mean_before);
    CHECK(values(bn->running_var) == var_before);
    CHECK(bn->num_batches_tracked.item<int64_t>() == 1);
  };
  check_error([&] { bn(td::randn({1, 3, 1, 1})); }, {"more than 1 value per channel"});
  unchanged();
  check_error([&] { bn(td::randn({4, 3, 2, 2}).to(td::Device("cpu:1"))); },
              {"batch_norm: running_mean must be a floating tensor of shape [3] on cpu:1", "float32 [3] on cpu:0"});
  unchanged();
}

TEST_CASE("F::batch_norm checks its running statistics and affine parameters before it updates anything", "[cpu]") {
  const Tensor x = td::randn({4, 3});
  Tensor mean = td::zeros({3}), var = td::ones({3});
  auto untouched = [&] {
    CHECK(values(mean) == std::vector<double>(3, 0.0));
    CHECK(values(var) == std::vector<double>(3, 1.0));
  };
  check_error([&] { F::batch_norm(x, mean, td::ones({4}), {}, {}, true, 0.1, 1e-5); },
              {"batch_norm: running_var must be a floating tensor of shape [3]", "got float32 [4] on cpu:0"});
  untouched();
  check_error([&] { F::batch_norm(x, mean, Tensor(), {}, {}, true, 0.1, 1e-5); },
              {"running_mean and running_var go together"});
  check_error([&] { F::batch_norm(x, mean, td::ones({3}, td::kInt64), {}, {}, true, 0.1, 1e-5); },
              {"running_var must be a floating tensor", "got int64 [3]"});
  check_error([&] { F::batch_norm(x, mean, var, td::ones({3}).to(td::Device("cpu:1")), {}, true, 0.1, 1e-5); },
              {"batch_norm: weight must be a floating tensor of shape [3] on cpu:0", "on cpu:1"});
  check_error([&] { F::batch_norm(x, mean, var, {}, td::zeros({2}), true, 0.1, 1e-5); },
              {"batch_norm: bias must be", "[2]"});
  untouched();
  check_error([&] { F::batch_norm(x, Tensor(), Tensor(), {}, {}, false, 0.1, 1e-5); },
              {"evaluation without running statistics"});
}

TEST_CASE("layers and their functional forms refuse bad arguments with errors that name the op", "[cpu]") {
  const Tensor image = td::randn({1, 2, 5, 5}), filter = td::randn({4, 2, 3, 3});
  // A stride of 0 divided the output size by zero before anything checked it.
  check_error([&] { F::conv2d(image, filter, {}, 0); }, {"conv2d: stride must be positive", "[0]"});
  check_error([&] { F::conv2d(image, filter, {}, {1, -1}); }, {"conv2d: stride must be positive", "[1, -1]"});
  check_error([&] { F::conv2d(image, filter, {}, 1, 0, 0); }, {"conv2d: dilation must be positive", "[0]"});
  check_error([&] { F::conv2d(image, filter, {}, 1, -1); }, {"conv2d: padding must not be negative", "[-1]"});
  check_error([&] { F::conv2d(td::randn({5, 5}), filter); }, {"conv2d", "3-D", "4-D", "[5, 5]"});
  check_error([&] { F::conv2d(image, td::randn({4, 2, 3})); }, {"conv2d: weight must be 4-D", "[4, 2, 3]"});
  check_error([&] { F::conv2d(image, filter, {}, 1, 0, 1, 0); }, {"conv2d: groups must be positive, got 0"});
  check_error([&] { F::conv2d(image, td::randn({3, 1, 3, 3}), {}, 1, 0, 1, 2); },
              {"conv2d: out channels 3 not divisible by groups 2"});
  check_error([&] { F::conv2d(image, filter, td::zeros({3})); }, {"conv2d: bias must have shape [4], got [3]"});
  check_error([] { nn::Conv2d(nn::Conv2dOptions(2, 4, 0)); }, {"Conv2d: kernel_size must be positive", "(0, 0)"});
  check_error([] { nn::Conv2d(nn::Conv2dOptions(2, 4, 3).stride({0, 1})); }, {"Conv2d: stride must be positive"});
  check_error([] { nn::Conv2d(nn::Conv2dOptions(2, 4, 3).dilation({1, 0})); }, {"Conv2d: dilation must be positive"});
  check_error([] { nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding({-1, 0})); }, {"Conv2d: padding must not be negative"});
  check_error([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)); }, {"Conv2d", "divisible by groups (2)"});

  check_error([] { F::linear(td::randn({2, 3}), td::randn({3})); }, {"linear: weight must be 2-D", "[3]"});
  check_error([] { F::linear(td::randn({2, 3}), Tensor()); }, {"linear: input and weight must be defined"});
  check_error([] { nn::Linear(-1, 2); }, {"Linear: feature counts must be non-negative"});
  check_error([] { nn::BatchNorm1d(0); }, {"BatchNorm: num_features must be positive, got 0"});

  const Tensor table = td::randn({5, 3});
  check_error([&] { F::embedding(td::tensor({0, 1}), table, 5); }, {"embedding: padding_idx 5", "weight of 5 rows"});
  check_error([&] { F::embedding(td::tensor({0, 1}), table, -6); }, {"embedding: padding_idx -6"});
  CHECK(values(F::embedding(td::tensor({4}), table, -1)) == values(table.narrow(0, 4, 1)));
  check_error([] { nn::Embedding(nn::EmbeddingOptions(5, 3).padding_idx(5)); }, {"Embedding: padding_idx 5"});

  check_error([] { F::dropout(td::ones({2}), 1.5); }, {"dropout: probability must be in [0, 1], got 1.5"});
  check_error([] { F::dropout(td::ones({2}), -0.1); }, {"dropout: probability must be in [0, 1]"});
  check_error([] { nn::Dropout(2.0); }, {"Dropout: probability must be in [0, 1], got 2"});
  check_error([] { nn::GELU("fast"); }, {"GELU: approximate must be 'none' or 'tanh', got 'fast'"});
  check_error([] { F::adaptive_avg_pool2d(td::ones({4, 4}), {2}); }, {"adaptive_avg_pool2d: expected a 3-D or 4-D"});
  check_error([] { F::adaptive_avg_pool2d(td::ones({1, 4, 4}), {0, 2}); }, {"output_size must be positive"});
  check_error([] { F::adaptive_avg_pool2d(td::ones({1, 4, 4}), {1, 2, 2}); },
              {"adaptive_avg_pool2d: output_size must be one value or two (height, width), got [1, 2, 2]"});
  check_error([] { td::max_pool2d(td::ones({1, 4, 4}), {2, 2, 2}); },
              {"max_pool2d: kernel_size must be one value or two (height, width), got [2, 2, 2]"});
  // PyTorch bounds the padding by half the window, not by half its dilated span.
  Tensor ones = td::ones({1, 1, 1, 1});
  Snapshot ones_before(ones);
  check_error([&] { td::max_pool2d(ones, 2, 1, 2, 3); }, {"max_pool2d", "padding [2]", "half of the kernel size [2]"});
  check_error([&] { nn::MaxPool2d(3, 1, 2, 2)(td::ones({1, 1, 5, 5})); }, {"max_pool2d", "padding [2]"});
  ones_before.check_unchanged(ones);
  CHECK(td::max_pool2d(td::ones({1, 1, 4, 4}), 2, 1, 1, 3).sizes() == td::Shape{1, 1, 3, 3});

  nn::Sequential seq{nn::ReLU()};
  nn::ModuleList list;
  nn::ModuleDict dict;
  dict->insert("act", nn::ReLU());
  check_error([&] { (*seq)[1]; }, {"Sequential: index 1 is out of range for 1 modules"});
  check_error([&] { (*list)[0]; }, {"ModuleList: index 0 is out of range for 0 modules"});
  check_error([&] { (*dict)["enc"]; }, {"ModuleDict: no module under the key 'enc'"});
  CHECK(dict->size() == 1);
  CHECK((*dict)["act"]->name() == "ReLU");
}

TEST_CASE("LayerNorm normalizes the last dims and applies its affine parameters", "[cpu]") {
  td::testing::reseed(403);
  nn::LayerNorm ln(nn::LayerNormOptions({4}));
  {
    td::NoGradGuard no_grad;
    ln->weight.copy_(td::tensor({1.0, 2.0, 3.0, 4.0}));
    ln->bias.fill_(0.5);
  }
  Tensor x = td::randn({3, 4});
  Tensor y = ln(x);
  std::vector<double> expected;
  for (int64_t r = 0; r < 3; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < 4; ++i) m += read(x, r * 4 + i) / 4;
    for (int64_t i = 0; i < 4; ++i) v += std::pow(read(x, r * 4 + i) - m, 2) / 4;
    for (int64_t i = 0; i < 4; ++i) expected.push_back((read(x, r * 4 + i) - m) / std::sqrt(v + 1e-5) * (i + 1) + 0.5);
  }
  check_close(y, expected, 1e-5, 1e-6);
  check_error([&] { ln(td::randn({3, 5})); }, {"layer_norm", "[3, 5]", "[4]"});
  // As PyTorch, affine parameters of another shape are refused rather than broadcast.
  namespace F = td::nn::functional;
  check_error([&] { F::layer_norm(x, {4}, td::ones({1})); }, {"layer_norm: expected weight", "[4]", "got [1]"});
  check_error([&] { F::layer_norm(x, {4}, td::ones({3, 4})); }, {"layer_norm: expected weight", "got [3, 4]"});
  check_error([&] { F::layer_norm(x, {4}, {}, td::ones({1})); }, {"layer_norm: expected bias", "got [1]"});
  // An empty normalized shape is refused, as in PyTorch (it normalised the whole batch as one).
  check_error([&] { F::layer_norm(x, {}); }, {"layer_norm", "normalized_shape", "at least one dim"});
  check_error([&] { nn::LayerNorm(nn::LayerNormOptions({}))(x); }, {"layer_norm", "normalized_shape"});
}

TEST_CASE("Embedding looks up rows and gives the padding row no gradient", "[cpu]") {
  nn::Embedding emb(nn::EmbeddingOptions(5, 3).padding_idx(1));
  CHECK(values(emb->weight[1]) == std::vector<double>{0, 0, 0});
  Tensor idx = td::tensor({{1, 2}, {4, 1}});
  Tensor y = emb(idx);
  CHECK(y.sizes() == td::Shape{2, 2, 3});
  CHECK(values(y[0][1]) == values(emb->weight[2]));
  y.sum().backward();
  CHECK(values(emb->weight.grad()[1]) == std::vector<double>{0, 0, 0});
  CHECK(values(emb->weight.grad()[2]) == std::vector<double>{1, 1, 1});
  CHECK(values(emb->weight.grad()[0]) == std::vector<double>{0, 0, 0});
}

TEST_CASE("Dropout zeroes about p of the elements in training and nothing in eval", "[cpu]") {
  td::testing::reseed(404);
  nn::Dropout drop(0.3);
  Tensor x = td::ones({100000});
  Tensor y = drop(x);
  double zero_fraction = (y == 0).to(td::kFloat64).mean().item<double>();
  CHECK(std::abs(zero_fraction - 0.3) < 6 * std::sqrt(0.3 * 0.7 / 100000));
  CHECK(td::amax(y).item<float>() == Approx(1 / 0.7));
  drop->eval();
  CHECK(drop(x).is_same(x));
}

TEST_CASE("pooling modules and adaptive average pooling match their definitions", "[cpu]") {
  Tensor x = td::arange(2 * 5 * 7, td::kFloat32).reshape({1, 2, 5, 7});
  CHECK(nn::MaxPool2d(2)(x).sizes() == td::Shape{1, 2, 2, 3});
  CHECK(nn::AvgPool2d(3, 2, 1)(x).sizes() == td::Shape{1, 2, 3, 4});
  Tensor a = nn::AdaptiveAvgPool2d(td::Shape{2, 3})(x);
  CHECK(a.sizes() == td::Shape{1, 2, 2, 3});
  // Window (1, 2): rows [2, 5), columns [4, 7) of channel 0.
  double expected = 0;
  for (int r = 2; r < 5; ++r)
    for (int c = 4; c < 7; ++c) expected += r * 7 + c;
  CHECK(a[0][0][1][2].item<float>() == Approx(expected / 9));
  CHECK(nn::AdaptiveAvgPool2d(td::Shape{1, 1})(x).sizes() == td::Shape{1, 2, 1, 1});
  CHECK(nn::Flatten()(x).sizes() == td::Shape{1, 70});
}

TEST_CASE("the initialisers refuse what PyTorch refuses and leave the tensor and the random stream alone", "[cpu]") {
  namespace init = td::nn::init;
  Tensor vector = td::ones({3}), ints = td::ones({3}, td::kInt64), bytes = td::zeros({3}, td::kUInt8);
  Snapshot vector_before(vector), ints_before(ints), bytes_before(bytes);
  const auto offset = td::default_generator().state().offset;
  // PyTorch: "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions".
  check_error([&] { init::kaiming_uniform_(vector); }, {"fan in and fan out", "at least 2 dims", "[3]"});
  check_error([&] { init::kaiming_normal_(vector); }, {"fan in and fan out", "[3]"});
  check_error([&] { init::xavier_uniform_(vector); }, {"fan in and fan out", "[3]"});
  check_error([&] { init::xavier_normal_(vector); }, {"fan in and fan out", "[3]"});
  check_error([&] { init::uniform_(ints); }, {"uniform_", "int64"});
  check_error([&] { init::normal_(ints); }, {"normal_", "int64"});
  check_error([&] { init::uniform_(vector, 2, 1); }, {"uniform_", "2", "1"});
  check_error([&] { init::normal_(vector, 0, -1); }, {"normal_", "-1"});
  check_error([&] { init::constant_(bytes, 300); }, {"300", "uint8"});
  check_error([&] { td::bernoulli(vector, 1.5); }, {"bernoulli", "1.5"});
  check_error([&] { td::bernoulli(vector, -0.1); }, {"bernoulli", "-0.1"});
  CHECK(td::default_generator().state().offset == offset);
  vector_before.check_unchanged(vector);
  ints_before.check_unchanged(ints);
  bytes_before.check_unchanged(bytes);
  // A tensor without elements is left as it is (PyTorch warns that this does nothing).
  Tensor none = td::empty({0, 5});
  CHECK_NOTHROW(init::kaiming_uniform_(none));
}

TEST_CASE("parameters start with PyTorch's distributions", "[cpu]") {
  td::testing::reseed(405);
  // A float32 sample may equal the lower end as float32 holds it, and float(-0.05) is a little below -0.05.
  auto within = [](const Tensor& t, double bound) {
    return td::amax(t.abs()).item<double>() <= static_cast<double>(static_cast<float>(bound));
  };
  nn::Linear fc(400, 300);
  double bound = 1 / std::sqrt(400.0);
  CHECK(within(fc->weight, bound));
  double std_dev = fc->weight.std().item<double>();
  CHECK(std::abs(std_dev - bound / std::sqrt(3.0)) < 0.01 * bound);
  CHECK(within(fc->bias, bound));
  nn::Conv2d conv(8, 16, 3);
  CHECK(within(conv->weight, 1 / std::sqrt(8.0 * 9)));
  Tensor t = td::empty({300, 200});
  td::nn::init::kaiming_normal_(t, 0, td::nn::init::FanMode::FanIn, "relu");
  CHECK(std::abs(t.std().item<double>() - std::sqrt(2.0 / 200)) < 0.02 * std::sqrt(2.0 / 200));
  td::nn::init::xavier_uniform_(t);
  CHECK(within(t, std::sqrt(6.0 / 500)));
  CHECK(td::nn::init::calculate_gain("tanh") == Approx(5.0 / 3));
  // PyTorch's gain of 1 for every linear map it names, and leaky_relu's default slope of 0.01.
  for (const char* linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                             "conv_transpose3d", "sigmoid"}) {
    CHECK(td::nn::init::calculate_gain(linear) == 1);
  }
  CHECK(td::nn::init::calculate_gain("leaky_relu") == Approx(1.4141428569978354));
  check_error([] { td::nn::init::calculate_gain("swish"); }, {"unknown nonlinearity", "swish"});
}

TEST_CASE("leaky_relu scales what is not above 0, with PyTorch's values in every floating dtype", "[cpu]") {
  // PyTorch 2.15: F.leaky_relu(x.to(dtype), slope) for these x; NaN stays NaN, -0 stays -0.
  const std::vector<double> x = {-3.7, -0.3, -0.0, 0.0, 0.1, 2.5, NAN, -INFINITY, -1e-39};
  struct Expected {
    td::DType dtype;
    double slope;
    std::vector<double> y;
  };
  const std::vector<Expected> cases = {
      {td::kFloat32, 0.01, {-0.03700000047683716, -0.003000000026077032, -0.0, 0.0, 0.10000000149011612, 2.5, NAN,
                            -INFINITY, -9.999665841421895e-42}},
      {td::kFloat32, -0.5, {1.850000023841858, 0.15000000596046448, 0.0, -0.0, 0.10000000149011612, 2.5, NAN, INFINITY,
                            5.000001076526666e-40}},
      {td::kBFloat16, 0.2, {-0.7421875, -0.06005859375, -0.0, 0.0, 0.10009765625, 2.5, NAN, -INFINITY,
                            -1.8367099231598242e-40}},
      {td::kFloat16, 3.0, {-11.09375, -0.900390625, -0.0, 0.0, 0.0999755859375, 2.5, NAN, -INFINITY, -0.0}},
      {td::kFloat64, 0.01, {-0.037000000000000005, -0.003, -0.0, 0.0, 0.1, 2.5, NAN, -INFINITY, -1e-41}},
  };
  for (const Expected& c : cases) {
    INFO(td::dtype_name(c.dtype) << " slope " << c.slope);
    Tensor y = F::leaky_relu(td::tensor(x, td::kFloat64).to(c.dtype), c.slope);
    CHECK(y.dtype() == c.dtype);
    const std::vector<double> got = values(y);
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("x = " << x[i]);
      CHECK(std::isnan(got[i]) == std::isnan(c.y[i]));
      if (!std::isnan(c.y[i])) {
        CHECK(got[i] == c.y[i]);
        CHECK(std::signbit(got[i]) == std::signbit(c.y[i]));
      }
    }
  }
  nn::LeakyReLU layer(0.2);
  CHECK(values(layer(td::tensor({-1.0, 2.0}))) == std::vector<double>{-0.2f, 2.0});
  // The gradient at 0 is the slope's, as PyTorch's.
  Tensor leaf = td::tensor({-1.0, 0.0, 2.0}, td::kFloat64).requires_grad_(true);
  F::leaky_relu(leaf, 0.2).sum().backward();
  CHECK(values(leaf.grad()) == std::vector<double>{0.2, 0.2, 1.0});
  Tensor ints = td::tensor({1, -2});
  td::testing::Snapshot before(ints);
  check_error([&] { F::leaky_relu(ints); }, {"leaky_relu", "floating", "int64"});
  check_error([] { F::leaky_relu(Tensor()); }, {"leaky_relu", "undefined"});
  before.check_unchanged(ints);
}

TEST_CASE("cosine_similarity and normalize give PyTorch's values and gradients", "[cpu]") {
  // PyTorch 2.15, float64: a = 3 sin(0.7 i) as [3, 4], b = cos(1.3 i) as [4], broadcast against a.
  auto list = [](const Tensor& t) { return values(t); };
  const Tensor a = (td::arange(12, td::kFloat64) * 0.7).sin().view({3, 4}) * 3;
  const Tensor b = (td::arange(4, td::kFloat64) * 1.3).cos();
  td::testing::check_close(F::cosine_similarity(a, b), {-0.5824533773936619, 0.7955611171648533, -0.9288905184802823},
                           1e-15, 0);
  td::testing::check_close(F::cosine_similarity(a, a.flip({0}), 0),
                           {0.21972556572492483, 0.2688084560100293, 0.950106972444299, 0.994188401728098}, 1e-15, 0);
  // In float32 within a few ulps: PyTorch's norm of row 0 is one ulp below the correctly rounded
  // 4.3796486854553223 that tandem's (summed in float64) gives.
  td::testing::check_close(F::cosine_similarity(a.to(td::kFloat32), b.to(td::kFloat32)),
                           {-0.5824534893035889, 0.7955611944198608, -0.9288904666900635}, 1e-6, 0);
  Tensor ar = a.clone().requires_grad_(true), br = b.clone().requires_grad_(true);
  F::cosine_similarity(ar, br).sum().backward();
  td::testing::check_close(ar.grad(), {0.14949365259560263, 0.09867564988760875, -0.03832795490425027,
                                       -0.02988652248529418, 0.11056223058851876, 0.08915636016841058,
                                       -0.015658132633917285, 0.019756403625553767, 0.054184051140334505,
                                       0.04631196605805898, -0.026541319718129244, 0.051472197369358944},
                           1e-13, 1e-16);
  td::testing::check_close(br.grad(), {0.15601767320945775, 0.21514354245358458, 0.09144206873992924,
                                       0.18626067159648282}, 1e-13, 1e-16);
  // A norm below eps: the value divides by eps, the gradient is the unclamped norm's, as PyTorch's.
  Tensor tiny = td::tensor({1e-10, 2e-10, 0.0}, td::kFloat64).view({1, 3}).requires_grad_(true);
  Tensor other = td::tensor({1.0, -1.0, 0.5}, td::kFloat64).view({1, 3}).requires_grad_(true);
  F::cosine_similarity(tiny, other).sum().backward();
  td::testing::check_close(tiny.grad(), {66964809.063666634, -66070381.87266672, 33333333.333333332}, 1e-12, 0);
  td::testing::check_close(other.grad(), {0.00962962962962963, 0.010370370370370372, 0.0014814814814814814}, 1e-12,
                           0);
  CHECK(list(F::cosine_similarity(td::zeros({2, 3}), td::ones({2, 3}))) == std::vector<double>{0, 0});
  CHECK(F::cosine_similarity(td::tensor({1.0, 2.0}), td::tensor({3.0, 4.0}), 0).dim() == 0);
  // Integers are taken where the other operand is floating, as PyTorch's: 1 / sqrt(14).
  CHECK(F::cosine_similarity(td::tensor({1, 2, 3}), td::tensor({1.0, 0.0, 0.0}, td::kFloat64), 0).item<double>() ==
        Approx(0.26726124191242440).epsilon(1e-15));
  nn::CosineSimilarity module(nn::CosineSimilarityOptions().dim(0));
  CHECK(module->str() == "CosineSimilarity()");
  td::testing::check_close(module(a, a.flip({0})), list(F::cosine_similarity(a, a.flip({0}), 0)), 0, 0);

  td::testing::check_close(F::normalize(a), {0.0, 0.4412803918336924, 0.6750197201916749, 0.5912867266694356,
                                             0.23926971831923924, -0.2505515614249239, -0.6225345268548043,
                                             -0.7017297769345616, -0.4696206722470419, 0.012508431104753285,
                                             0.4887546238583555, 0.7351318800097106},
                           1e-15, 1e-16);
  td::testing::check_close(F::normalize(a, 1, 0), {0.0, 0.636695250380959, 0.39198289043601314, 0.3046087103748158,
                                                   0.3466871826213598, -0.3466871826213598, -0.34668718262135967,
                                                   -0.3466871826213597, -0.6533128173786402, 0.016617566997681205,
                                                   0.26132992694262724, 0.34870410700382437},
                           1e-15, 1e-16);
  // A row of zeros stays 0; its gradient is 1 / eps, as PyTorch's.
  Tensor rows = td::tensor({3.0, 4.0, 0.0, 0.0}, td::kFloat64).view({2, 2}).requires_grad_(true);
  Tensor unit = F::normalize(rows);
  CHECK(list(unit) == std::vector<double>{0.6, 0.8, 0, 0});
  unit.sum().backward();
  td::testing::check_close(rows.grad(), {0.032, -0.024, 1e12, 1e12}, 1e-12, 0);

  Tensor ints = td::tensor({1, 2, 3});
  td::testing::Snapshot before(ints);
  check_error([&] { F::cosine_similarity(ints, ints, 0); }, {"cosine_similarity", "floating", "int64"});
  check_error([&] { F::cosine_similarity(a, b, 1, -1); }, {"cosine_similarity", "eps must not be negative, got -1"});
  check_error([&] { F::cosine_similarity(td::ones({2, 3}), td::ones({2, 4})); },
              {"cosine_similarity", "[2, 3]", "[2, 4]"});
  check_error([&] { F::cosine_similarity(td::ones({2, 3}), td::ones({3}), 2); }, {"cosine_similarity", "dim 2"});
  check_error([&] { F::normalize(ints, 2, 0); }, {"normalize", "floating", "int64"});
  check_error([&] { F::normalize(td::ones({3}), 2, 1); }, {"normalize", "dim 1"});
  check_error([] { F::normalize(Tensor()); }, {"normalize", "undefined"});
  before.check_unchanged(ints);
}

TEST_CASE("GroupNorm normalizes groups of channels per sample with PyTorch's values and gradients", "[cpu]") {
  // PyTorch 2.15, float64: x = 3 sin(0.7 i) as [2, 6, 2, 2], 3 groups, weight linspace(0.5, 2, 6),
  // bias linspace(-1, 1, 6); the gradients of sum(y * cos(i)).
  const Tensor x = (td::arange(48, td::kFloat64) * 0.7).sin().view({2, 6, 2, 2}) * 3;
  const Tensor w = td::linspace(0.5, 2, 6, td::kFloat64), b = td::linspace(-1, 1, 6, td::kFloat64);
  const std::vector<double> y = values(F::group_norm(x, 3, w, b));
  const std::vector<double> first = {-1.0547779228559377, -0.6016686229955073, -0.3616637068875481, -0.4476412367578953,
                                     -0.31066341899609934, -1.082401035110974, -1.668478567565542, -1.793254595132363};
  const std::vector<double> last = {1.5225470306207227, -0.17627677390278787, -1.3926405535607032, -1.554469416571569,
                                    -0.39488555295957445, 1.5390116535745517, 3.35747964354307, 4.2052645069176435};
  for (size_t i = 0; i < 8; ++i) {
    CHECK(y[i] == Approx(first[i]).epsilon(1e-14));
    CHECK(y[40 + i] == Approx(last[i]).epsilon(1e-14));
  }
  const std::vector<double> y32 = values(F::group_norm(x.to(td::kFloat32), 3, w.to(td::kFloat32), b.to(td::kFloat32)));
  const std::vector<double> first32 = {-1.0547778606414795, -0.6016685366630554, -0.36166366934776306,
                                       -0.44764119386672974, -0.3106634020805359, -1.0824010372161865,
                                       -1.6684784889221191, -1.7932546138763428};
  for (size_t i = 0; i < 8; ++i) CHECK(y32[i] == Approx(first32[i]).epsilon(1e-6));

  nn::GroupNorm layer(nn::GroupNormOptions(3, 6));
  CHECK(layer->str() == "GroupNorm(3, 6, eps=1e-05, affine=True, bias=True)");
  CHECK(nn::GroupNorm(nn::GroupNormOptions(3, 6).eps(1e-3).affine(false))->str() ==
        "GroupNorm(3, 6, eps=0.001, affine=False, bias=False)");
  CHECK(layer->parameters().size() == 2);
  CHECK(nn::GroupNorm(nn::GroupNormOptions(3, 6).bias(false))->parameters().size() == 1);
  layer->to(td::kFloat64);
  layer->weight.detach().copy_(w);
  layer->bias.detach().copy_(b);
  Tensor xr = x.clone().requires_grad_(true);
  (layer(xr) * td::arange(48, td::kFloat64).view({2, 6, 2, 2}).cos()).sum().backward();
  td::testing::check_close(layer->weight.grad(), {-3.798714813018177, -4.1433323615950615, 0.9856675199840802,
                                                  4.647900189234702, 2.447305821799223, -2.6229438728650556},
                           1e-13, 1e-14);
  td::testing::check_close(layer->bias.grad(), {1.9043253055158267, 0.7024215172828332, -2.8225919933743535,
                                                2.987516984256872, -1.082950844588046, -1.571789161709197},
                           1e-13, 1e-14);
  const std::vector<double> gx = values(xr.grad());
  const std::vector<double> gx_expected = {0.1488489140877311, 0.1952948402109308, 0.05274479567932333,
                                           -0.11105655305187487};
  for (size_t i = 0; i < 4; ++i) CHECK(gx[i] == Approx(gx_expected[i]).epsilon(1e-12));
  // One sample normalizes alike whatever the batch: a replica's chunk gets what the batch does.
  td::testing::check_close(F::group_norm(x.narrow(0, 1, 1), 3, w, b), values(F::group_norm(x, 3, w, b).narrow(0, 1, 1)),
                           0, 0);
  CHECK(F::group_norm(td::zeros({0, 6, 3}), 2).sizes() == td::Shape{0, 6, 3});
  // One value a group in each of two samples: enough for PyTorch, which counts the batch too.
  CHECK(F::group_norm(td::randn({2, 6}), 6).sizes() == td::Shape{2, 6});
  // Without affine parameters the layer takes any channel count the groups divide, as PyTorch's.
  CHECK(nn::GroupNorm(nn::GroupNormOptions(3, 6).affine(false))(td::randn({2, 9, 3})).sizes() == td::Shape{2, 9, 3});
  // bfloat16 with the statistics in float32 and one rounding, as PyTorch's: a large mean beside a
  // small spread loses several percent where every step rounds to bfloat16.
  const Tensor shifted = (x + 20).to(td::kBFloat16);
  const std::vector<double> bf = values(F::group_norm(shifted, 3, w.to(td::kBFloat16), b.to(td::kBFloat16)));
  const std::vector<double> bf_expected = {-1.0546875, -0.6171875, -0.35546875, -0.443359375, -0.31640625, -1.0625,
                                           -1.671875, -1.8046875, -1.453125, -0.408203125, 0.703125, 1.2578125};
  for (size_t i = 0; i < bf_expected.size(); ++i) CHECK(bf[i] == bf_expected[i]);
  const Tensor mixed = F::group_norm(shifted, 3, w.to(td::kFloat32), b.to(td::kFloat32));
  CHECK(mixed.dtype() == td::kBFloat16);
  CHECK(values(mixed)[4] == -0.314453125);  // PyTorch's, the float32 parameters not rounded

  td::testing::Snapshot before(x);
  check_error([&] { F::group_norm(x, 4); }, {"group_norm", "6 channels", "4 groups"});
  check_error([&] { F::group_norm(x, 3, td::ones({5}, td::kFloat64)); }, {"group_norm", "weight of shape [6]", "[5]"});
  check_error([&] { F::group_norm(td::ones({6}), 3); }, {"group_norm", "[N, C, ...]", "[6]"});
  check_error([&] { F::group_norm(td::ones({2, 6}, td::kInt64), 3); }, {"group_norm", "floating", "int64"});
  check_error([&] { layer(td::ones({2, 5, 3})); }, {"group_norm", "5 channels", "3 groups"});
  check_error([&] { F::group_norm(td::ones({2, 6, 0}), 2); }, {"group_norm", "channels and positions", "[2, 6, 0]"});
  check_error([&] { F::group_norm(td::ones({2, 0, 3}), 1); }, {"group_norm", "channels and positions", "[2, 0, 3]"});
  check_error([&] { F::group_norm(td::ones({1, 6}), 6); }, {"group_norm", "more than 1 value per group"});
  check_error([&] { F::group_norm(td::ones({2, 6, 3}), 2, td::ones({6}, td::kFloat64)); },
              {"group_norm", "float32", "float64", "one dtype"});
  const Tensor half_weight = td::ones({6}, td::kBFloat16);
  check_error([&] { F::group_norm(td::ones({2, 6, 3}, td::kBFloat16), 2, half_weight, td::zeros({6})); },
              {"group_norm", "one dtype"});
  check_error([] { nn::GroupNorm(nn::GroupNormOptions(4, 6)); }, {"GroupNorm", "num_channels (6)", "num_groups (4)"});
  check_error([] { nn::GroupNorm(nn::GroupNormOptions(0, 6)); }, {"GroupNorm", "num_groups (0)"});
  before.check_unchanged(x);
}

TEST_CASE("softplus gives PyTorch's values and gradients, linear past the threshold, extremes included", "[cpu]") {
  // PyTorch 2.15, float32, beta 1 (and -1), threshold 20.
  const Tensor x = td::tensor({-100.0, -20.0, -1.0, 0.0, 1e-3, 5.0, 19.9, 20.0, 20.1, 100.0, NAN, INFINITY, -INFINITY});
  Tensor leaf = x.clone().requires_grad_(true);
  Tensor y = F::softplus(leaf);
  same_as_pytorch(values(y), {3.783505853677006e-44, 2.06115369216775e-09, 0.3132616877555847, 0.6931471824645996,
                              0.6936473250389099, 5.006715297698975, 19.899999618530273, 20.0, 20.100000381469727,
                              100.0, NAN, INFINITY, 0.0});
  y.sum().backward();
  // Below 0 the gradient is PyTorch's z / (z + 1), subnormal at -100 (sigmoid gives 0 there).
  same_as_pytorch(values(leaf.grad()),
                  {3.783505853677006e-44, 2.06115369216775e-09, 0.2689414322376251, 0.5, 0.5002500414848328,
                   0.9933071732521057, 1.0, 1.0, 1.0, 1.0, NAN, 1.0, 0.0});
  Tensor negative = x.clone().requires_grad_(true);
  Tensor z = F::softplus(negative, -1.0);
  same_as_pytorch(values(z), {-100.0, -20.0, -1.31326162815094, -0.6931471824645996, -0.6926472783088684,
                              -0.006715348456054926, -2.2779278463502806e-09, -2.06115369216775e-09,
                              -1.8650081479165692e-09, -3.783505853677006e-44, NAN, -0.0, -INFINITY});
  z.sum().backward();
  same_as_pytorch(values(negative.grad()),
                  {1.0, 1.0, 0.7310585975646973, 0.5, 0.4997499883174896, 0.006692850962281227, 2.2779278463502806e-09,
                   2.06115369216775e-09, 1.8650081479165692e-09, 3.783505853677006e-44, NAN, 0.0, 1.0});
  // With a threshold past 88, PyTorch's float32 z / (z + 1) is inf / inf = NaN at 90; sigmoid gives 1.
  Tensor high = td::tensor({90.0}).requires_grad_(true);
  F::softplus(high, 1, 100).sum().backward();
  CHECK(high.grad().item<double>() == 1.0);
  // bfloat16 in float32, rounded once: PyTorch's F.softplus(x.bfloat16(), 1.5).
  const std::vector<double> bf = values(F::softplus(x.to(td::kBFloat16), 1.5));
  const std::vector<double> bf_expected = {0.0, 6.217248937900877e-14, 0.1337890625, 0.462890625, 0.462890625,
                                           5.0, 19.875, 20.0, 20.125, 100.0, NAN, INFINITY, 0.0};
  for (size_t i = 0; i < bf.size(); ++i) {
    INFO("bfloat16 element " << i);
    CHECK((std::isnan(bf_expected[i]) ? std::isnan(bf[i]) : bf[i] == bf_expected[i]));
  }
  nn::Softplus layer(2, 5);
  same_as_pytorch(values(layer(td::tensor({-1.0, 2.6}))), values(F::softplus(td::tensor({-1.0, 2.6}), 2, 5)));
  // beta 0: PyTorch's inf, and its gradient 0.5 (the composite form divided 0 by 0).
  Tensor flat = td::tensor({1.0, -2.0}).requires_grad_(true);
  Tensor at_zero = F::softplus(flat, 0.0);
  CHECK(values(at_zero) == std::vector<double>{INFINITY, INFINITY});
  at_zero.sum().backward();
  CHECK(values(flat.grad()) == std::vector<double>{0.5, 0.5});
  // PyTorch's first and second derivatives (float64, beta 2, threshold 1.5): the second is 0 from
  // beta x = threshold on.
  Tensor around = td::tensor({0.75, 0.5, 9.95, -3.0}, td::kFloat64).requires_grad_(true);
  const Tensor slope = td::autograd::grad({F::softplus(around, 2, 1.5).sum()}, {around}, {}, true, true)[0];
  td::testing::check_close(slope, {0.8175744761936437, 0.7310585786300049, 1.0, 0.0024726231566347748}, 1e-15, 0);
  td::testing::check_close(td::autograd::grad({slope.sum()}, {around})[0],
                           {0.0, 0.3932238664829637, 0.0, 0.004933018582720096}, 1e-14, 0);
  check_error([] { F::softplus(td::tensor({1, 2})); }, {"softplus", "floating", "int64"});
  check_error([] { F::softplus(Tensor()); }, {"softplus", "undefined"});
}

TEST_CASE("elu, selu and celu give PyTorch's values and gradients, NaN and infinities included", "[cpu]") {
  // PyTorch 2.15, float32; NaN's gradient is the positive side's, as PyTorch's (x <= 0 is false).
  const Tensor x = td::tensor({-100.0, -3.0, -1e-6, -0.0, 0.0, 1e-6, 0.7, 100.0, NAN, INFINITY, -INFINITY});
  struct Case {
    std::string name;
    std::function<Tensor(const Tensor&)> f;
    std::vector<double> y, grad;
  };
  const std::vector<Case> cases = {
      {"elu", [](const Tensor& t) { return F::elu(t); },
       {-1.0, -0.9502129554748535, -9.999995427278918e-07, -0.0, 0.0, 9.999999974752427e-07, 0.699999988079071, 100.0,
        NAN, INFINITY, -1.0},
       {3.783505853677006e-44, 0.049787066876888275, 0.9999989867210388, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0}},
      {"elu 0.5", [](const Tensor& t) { return F::elu(t, 0.5); },
       {-0.5, -0.47510647773742676, -4.999997713639459e-07, -0.0, 0.0, 9.999999974752427e-07, 0.699999988079071,
        100.0, NAN, INFINITY, -0.5},
       {1.961817850054744e-44, 0.024893533438444138, 0.4999994933605194, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0}},
      {"selu", [](const Tensor& t) { return F::selu(t); },
       {-1.7580993175506592, -1.6705687046051025, -1.7580985058884835e-06, -0.0, 0.0, 1.0507010301807895e-06,
        0.7354906797409058, 105.07009887695312, NAN, INFINITY, -1.7580993175506592},
       {6.58610278232664e-44, 0.08753060549497604, 1.758097529411316, 1.7580993175506592, 1.7580993175506592,
        1.0507010221481323, 1.0507010221481323, 1.0507010221481323, 1.0507010221481323, 1.0507010221481323, 0.0}},
      {"celu 2", [](const Tensor& t) { return F::celu(t, 2.0); },
       {-2.0, -1.5537396669387817, -9.999997701015673e-07, -0.0, 0.0, 9.999999974752427e-07, 0.699999988079071, 100.0,
        NAN, INFINITY, -2.0},
       {1.9287498933537385e-22, 0.22313016653060913, 0.9999995231628418, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor leaf = x.clone().requires_grad_(true);
    Tensor y = c.f(leaf);
    same_as_pytorch(values(y), c.y);
    y.sum().backward();
    same_as_pytorch(values(leaf.grad()), c.grad);
  }
  // float64, and bfloat16 computed in float32 and rounded once: PyTorch's F.selu.
  same_as_pytorch(values(F::selu(x.to(td::kFloat64))),
                  {-1.7580993408473766, -1.6705687287671118, -1.7580984573592296e-06, -0.0, 0.0,
                   1.0507009847027154e-06, 0.7354906786235045, 105.07009873554804, NAN, INFINITY, -1.7580993408473766});
  const std::vector<double> bf = values(F::selu(x.to(td::kBFloat16)));
  const std::vector<double> bf_expected = {-1.7578125, -1.671875, -1.7583370208740234e-06, -0.0, 0.0,
                                           1.0505318641662598e-06, 0.734375, 105.0, NAN, INFINITY, -1.7578125};
  for (size_t i = 0; i < bf.size(); ++i) {
    INFO("bfloat16 element " << i);
    CHECK((std::isnan(bf_expected[i]) ? std::isnan(bf[i]) : bf[i] == bf_expected[i]));
  }
  // expm1 keeps what exp(x) - 1 cancels: PyTorch's expm1(1e-10) in float32.
  CHECK(td::expm1(td::tensor({1e-10})).item<double>() == Approx(1.000000013351432e-10).epsilon(1e-7));
  CHECK(values(nn::ELU(0.5)(td::tensor({-3.0, 2.0}))) == values(F::elu(td::tensor({-3.0, 2.0}), 0.5)));
  check_error([] { F::celu(td::ones({2}), 0); }, {"celu", "alpha cannot be 0"});
  nn::CELU flat(0.0);  // constructed, as PyTorch's; its forward refuses
  CHECK(flat->str() == "CELU(alpha=0.0)");
  check_error([&] { flat(td::ones({2})); }, {"celu", "alpha cannot be 0"});
  // PyTorch's node names, and its second derivative at 0: 0, the negative side's only below it.
  Tensor at = td::tensor({-1.0, -0.0, 0.0, 1.0}, td::kFloat64).requires_grad_(true);
  CHECK(F::celu(at, 1.5).grad_fn()->name() == "CeluBackward0");
  CHECK(F::selu(at).grad_fn()->name() == "EluBackward0");
  const Tensor first = td::autograd::grad({F::elu(at, 0.7).sum()}, {at}, {}, true, true)[0];
  const std::vector<double> second = values(td::autograd::grad({first.sum()}, {at})[0]);
  CHECK(second[0] == Approx(0.7 * std::exp(-1.0)).epsilon(1e-15));
  CHECK(second[1] == 0);
  CHECK(second[2] == 0);
  CHECK(second[3] == 0);
  check_error([] { F::elu(td::tensor({1, 2})); }, {"elu", "floating", "int64"});
  check_error([] { F::selu(Tensor()); }, {"selu", "undefined"});
}

TEST_CASE("Identity returns its input itself; Unflatten splits a dim as unflatten does", "[cpu]") {
  const Tensor x = td::randn({2, 6});
  CHECK(nn::Identity()(x).is_same(x));
  nn::Unflatten unflatten(1, std::vector<int64_t>{2, -1});
  Tensor y = unflatten(x);
  CHECK(y.sizes() == td::Shape{2, 2, 3});
  CHECK(values(y) == values(x));
  check_error([&] { nn::Unflatten(1, std::vector<int64_t>{4, 2})(x); }, {"unflatten"});
}

TEST_CASE("the functional layers pass gradcheck", "[cpu]") {
  td::testing::reseed(406);
  auto check = [](const char* name, const td::autograd::TestedFn& fn, const std::vector<Tensor>& inputs) {
    auto r = td::autograd::gradcheck(fn, inputs);
    INFO(name << ": " << r.report);
    CHECK(r.ok);
  };
  auto leaf = [](td::Shape s) { return td::randn(s, td::kFloat64).requires_grad_(true); };
  check("conv2d groups", [](const std::vector<Tensor>& v) { return F::conv2d(v[0], v[1], v[2], 2, 1, 1, 2); },
        {leaf({1, 4, 5, 5}), leaf({4, 2, 3, 3}), leaf({4})});
  check("batch_norm", [](const std::vector<Tensor>& v) {
          return F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true);
        },
        {leaf({3, 2, 2, 2}), leaf({2}), leaf({2})});
  check("layer_norm", [](const std::vector<Tensor>& v) { return F::layer_norm(v[0], {3}, v[1], v[2]); },
        {leaf({2, 3}), leaf({3}), leaf({3})});
  check("linear", [](const std::vector<Tensor>& v) { return F::linear(v[0], v[1], v[2]); },
        {leaf({2, 3, 4}), leaf({5, 4}), leaf({5})});
  check("adaptive_avg_pool2d", [](const std::vector<Tensor>& v) { return F::adaptive_avg_pool2d(v[0], {2, 3}); },
        {leaf({1, 5, 7})});
  check("cosine_similarity", [](const std::vector<Tensor>& v) { return F::cosine_similarity(v[0], v[1], -1); },
        {leaf({3, 4}), leaf({4})});
  check("normalize", [](const std::vector<Tensor>& v) { return F::normalize(v[0], 3, 0); }, {leaf({3, 4})});
  check("group_norm", [](const std::vector<Tensor>& v) { return F::group_norm(v[0], 2, v[1], v[2]); },
        {leaf({2, 4, 3}), leaf({4}), leaf({4})});
}
