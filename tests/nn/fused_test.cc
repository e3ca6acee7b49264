// The fused layers (dropout, layer norm, cross-entropy with index targets, the CPU's chunked
// convolution) against the op-by-op forms they replace, written here in plain ops: values and gradients in float64 to rounding, the
// same dropout mask as bernoulli for the same seed, first and second derivatives by gradcheck, and
// the kernels' entry points refusing bad arguments with their inputs left as they were.
#include <cmath>
#include <vector>

#include "kernels/nn_ops.h"
#include "tests/testing.h"

namespace td = tandem;
namespace tt = td::testing;
namespace F = td::nn::functional;
namespace k = td::kernels;
using td::Shape;
using td::Tensor;
using tt::check_close;
using tt::check_error;

namespace {

Tensor leaf(const Shape& shape, td::DType dtype = td::kFloat64, tt::Layout layout = tt::Layout::Contiguous) {
  return tt::random_tensor(shape, dtype, layout).requires_grad_(true);
}

// Gradients of sum(out * probe) with respect to each input, where out = f(inputs).
std::vector<Tensor> grads_of(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                             const Tensor& probe) {
  for (Tensor& t : inputs) t = t.detach().requires_grad_(true);
  (f(inputs) * probe).sum().backward();
  std::vector<Tensor> grads;
  for (const Tensor& t : inputs) grads.push_back(t.grad());
  return grads;
}

void check_grads(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected, double tol,
                 const std::string& what) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    check_close(actual[i], expected[i], tol, tol, what + " gradient " + std::to_string(i));
  }
}

void check_derivatives(const char* name, const td::autograd::TestedFn& fn, const std::vector<Tensor>& inputs) {
  auto once = td::autograd::gradcheck(fn, inputs);
  INFO(name << ": " << once.report);
  CHECK(once.ok);
  auto twice = td::autograd::gradgradcheck(fn, inputs);
  INFO(name << " (second order): " << twice.report);
  CHECK(twice.ok);
}

// ---- references in plain ops ----

Tensor layer_norm_reference(const Tensor& x, int64_t dims, const Tensor& w, const Tensor& b, double eps) {
  std::vector<int64_t> last;
  for (int64_t d = x.dim() - dims; d < x.dim(); ++d) last.push_back(d);
  Tensor out = (x - x.mean(last, true)) / td::sqrt(x.var(last, 0, true) + eps);
  if (w.defined()) out = out * w;
  if (b.defined()) out = out + b;
  return out;
}

// Cross-entropy of [N, C] scores, per row, with PyTorch's definition of weights and smoothing.
Tensor cross_entropy_rows_reference(const Tensor& x, const Tensor& t, const Tensor& w, int64_t ignore, double s) {
  const int64_t classes = x.size(1);
  Tensor logp = x.log_softmax(1);
  Tensor kept = (t != ignore).to(x.dtype());
  Tensor safe = td::where(t == ignore, 0, t);
  Tensor wt = (w.defined() ? w.index_select(0, safe) : td::ones_like(kept)) * kept;
  Tensor nll = -logp.gather(1, safe.unsqueeze(1)).squeeze(1) * wt;
  Tensor smooth = -(w.defined() ? logp * w : logp).sum({1}) * kept;
  return nll * (1 - s) + smooth * (s / static_cast<double>(classes));
}

// A convolution as im2col_matrix and one matrix product per group, in ops (the form the CPU's
// chunked convolution replaces): [N, O, OH, OW].
Tensor conv2d_reference(const Tensor& x, const Tensor& w, int64_t stride, int64_t pad, int64_t dil, int64_t groups) {
  const int64_t n = x.size(0), out_channels = w.size(0), kh = w.size(2), kw = w.size(3);
  const int64_t oh = (x.size(2) + 2 * pad - dil * (kh - 1) - 1) / stride + 1;
  const int64_t ow = (x.size(3) + 2 * pad - dil * (kw - 1) - 1) / stride + 1;
  Tensor cols = td::im2col_matrix(x, {kh, kw}, dil, pad, stride);
  const int64_t group_out = out_channels / groups, group_fields = w.size(1) * kh * kw;
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < groups; ++g) {
    parts.push_back(td::mm(w.narrow(0, g * group_out, group_out).reshape({group_out, group_fields}),
                           cols.narrow(0, g * group_fields, group_fields)));
  }
  return td::cat(parts, 0).view({out_channels, n, oh, ow}).transpose(0, 1);
}

// d sum(conv2d(x, w, stride 1, padding 1, groups 2)) / dx, through the reference form.
Tensor conv_input_grad_reference(const Tensor& x, const Tensor& w) {
  Tensor leaf_x = x.detach().requires_grad_(true);
  conv2d_reference(leaf_x, w, 1, 1, 1, 2).sum().backward();
  return leaf_x.grad();
}

}  // namespace

TEST_CASE("fused dropout draws bernoulli's mask and scales as the op-by-op form", "[cpu]") {
  const uint64_t seed = tt::test_seed() ^ 0x5eed;
  for (td::DType dtype : {td::kFloat64, td::kFloat32}) {
    for (tt::Layout layout : tt::all_layouts()) {
      Tensor x = tt::random_tensor({9, 31, 5}, dtype, layout);
      for (double p : {0.1, 0.5, 0.9}) {
        td::manual_seed(seed);
        Tensor y = F::dropout(x, p, true);
        td::manual_seed(seed);
        Tensor keep = td::bernoulli(x, 1 - p);
        Tensor expected = x * keep * (1 / (1 - p));
        INFO(td::dtype_name(dtype) << " " << tt::layout_name(layout) << " p=" << p);
        tt::check_equal(y, tt::values(expected), "dropout");
        // The generator moved on by as many words as bernoulli takes.
        Tensor after = td::rand({3});
        td::manual_seed(seed);
        td::bernoulli(x, 1 - p);
        tt::check_equal(after, tt::values(td::rand({3})), "generator after dropout");
      }
    }
  }
  // Non-finite inputs propagate through a kept or a dropped element alike, as x * mask does.
  td::manual_seed(seed);
  std::vector<double> specials;
  for (int i = 0; i < 200; ++i) specials.insert(specials.end(), {INFINITY, -INFINITY, NAN, 1.0, -0.0});
  Tensor special = td::tensor(specials);
  Tensor y = F::dropout(special, 0.5, true);
  td::manual_seed(seed);
  Tensor expected = special * td::bernoulli(special, 0.5) * 2.0;
  tt::check_equal(y, tt::values(expected), "non-finite dropout");
}

TEST_CASE("fused dropout's gradient is the mask times the scale, and twice differentiable", "[cpu]") {
  tt::reseed(501);
  Tensor x = leaf({6, 7});
  td::manual_seed(77);
  Tensor y = F::dropout(x, 0.4, true);
  Tensor g = td::randn({6, 7}, td::kFloat64);
  y.backward(g);
  Tensor expected = (y != 0).to(td::kFloat64) * g / 0.6;
  check_close(x.grad(), expected, 1e-15, 0, "dropout gradient");
  CHECK(y.grad_fn()->name() == "NativeDropoutBackward0");
  check_derivatives("dropout", [](const std::vector<Tensor>& in) {
    td::manual_seed(78);  // the same mask on every evaluation
    return F::dropout(in[0], 0.3, true);
  }, {leaf({4, 5})});
}

TEST_CASE("fused layer norm equals the op-by-op form, forward and backward", "[cpu]") {
  tt::reseed(502);
  struct Case {
    Shape shape;
    int64_t dims;
    bool weight, bias;
  };
  const std::vector<Case> cases = {{{3, 5}, 1, true, true},     {{2, 3, 4}, 2, true, false},
                                   {{7, 1}, 1, false, true},    {{4, 33}, 1, false, false},
                                   {{2, 2, 300}, 1, true, true}, {{0, 6}, 1, true, true},
                                   {{5}, 1, true, true},        {{2, 3, 4}, 2, false, false},
                                   {{3, 2, 2}, 3, false, true}, {{0, 6}, 1, false, false}};
  for (const Case& c : cases) {
    for (tt::Layout layout : tt::all_layouts()) {
      INFO("shape " << td::shape_str(c.shape) << " over " << c.dims << " dims, " << tt::layout_name(layout));
      Shape normalized(c.shape.end() - c.dims, c.shape.end());
      Tensor x = tt::random_tensor(c.shape, td::kFloat64, layout, -3, 5);
      Tensor w = c.weight ? tt::random_tensor(normalized, td::kFloat64) : Tensor();
      Tensor b = c.bias ? tt::random_tensor(normalized, td::kFloat64) : Tensor();
      Tensor y = F::layer_norm(x, normalized, w, b, 1e-5);
      check_close(y, layer_norm_reference(x, c.dims, w, b, 1e-5), 1e-12, 1e-12, "layer_norm");
      std::vector<Tensor> inputs = {x};
      if (w.defined()) inputs.push_back(w);
      if (b.defined()) inputs.push_back(b);
      auto unpack = [&](const std::vector<Tensor>& in) {
        return std::make_tuple(in[0], c.weight ? in[1] : Tensor(), c.bias ? in[c.weight ? 2 : 1] : Tensor());
      };
      Tensor probe = td::randn(c.shape, td::kFloat64);
      auto fused = grads_of([&](const std::vector<Tensor>& in) {
        auto [xi, wi, bi] = unpack(in);
        return F::layer_norm(xi, normalized, wi, bi, 1e-5);
      }, inputs, probe);
      auto reference = grads_of([&](const std::vector<Tensor>& in) {
        auto [xi, wi, bi] = unpack(in);
        return layer_norm_reference(xi, c.dims, wi, bi, 1e-5);
      }, inputs, probe);
      check_grads(fused, reference, 1e-11, "layer_norm");
    }
  }
  // float32 against the float64 result.
  Tensor x = tt::random_tensor({16, 100}, td::kFloat32, tt::Layout::Strided);
  Tensor w = tt::random_tensor({100}, td::kFloat32), b = tt::random_tensor({100}, td::kFloat32);
  check_close(F::layer_norm(x, {100}, w, b), layer_norm_reference(x.to(td::kFloat64), 1, w.to(td::kFloat64),
                                                                 b.to(td::kFloat64), 1e-5),
              2e-5, 2e-5, "float32 layer_norm");
  // A weight of another dtype takes the op-by-op form, with promotion (the fused kernel refuses it).
  Tensor y = F::layer_norm(x, {100}, w.to(td::kFloat64), Tensor());
  CHECK(y.dtype() == td::kFloat64);
}

TEST_CASE("fused layer norm passes gradcheck and gradgradcheck", "[cpu]") {
  tt::reseed(503);
  auto fn = [](const std::vector<Tensor>& in) { return F::layer_norm(in[0], {3, 4}, in[1], in[2]); };
  Tensor x = leaf({2, 3, 4}), w = leaf({3, 4}), b = leaf({3, 4});
  CHECK(fn({x, w, b}).grad_fn()->name() == "NativeLayerNormBackward0");
  check_derivatives("layer_norm", fn, {x, w, b});
  check_derivatives("layer_norm without affine", [](const std::vector<Tensor>& in) {
    return F::layer_norm(in[0], {5}, Tensor(), Tensor());
  }, {leaf({3, 5}, td::kFloat64, tt::Layout::Permuted)});
}

TEST_CASE("CPU convolution in chunks of images equals im2col_matrix and mm, forward and backward, on 1 to 3 threads",
          "[cpu]") {
  tt::reseed(510);
  struct Geometry {
    int64_t in, out, k, stride, pad, dil, groups, h, w;
  };
  const Geometry geometries[] = {{3, 4, 3, 1, 1, 1, 1, 9, 8}, {4, 6, 3, 2, 1, 1, 2, 10, 7}, {2, 4, 2, 1, 2, 2, 2, 8, 9},
                                 {1, 3, 5, 1, 2, 1, 1, 12, 12}};
  int64_t compared = 0;
  for (td::DType dtype : {td::kFloat64, td::kFloat32}) {
    const double tol = dtype == td::kFloat64 ? 1e-12 : 2e-5;
    for (const Geometry& c : geometries) {
      // On 2 or 3 threads, 1 and 3 images go one chunk after another, 13 and 40 in chunks on the threads.
      for (int64_t batch : {1, 3, 13, 40}) {
        Tensor x = tt::random_tensor({batch, c.in, c.h, c.w}, dtype);
        Tensor w = tt::random_tensor({c.out, c.in / c.groups, c.k, c.k}, dtype);
        Tensor b = tt::random_tensor({c.out}, dtype);
        auto conv = [&](const std::vector<Tensor>& in) {
          return F::conv2d(in[0], in[1], in[2], c.stride, c.pad, c.dil, c.groups);
        };
        auto reference = [&](const std::vector<Tensor>& in) {
          return conv2d_reference(in[0], in[1], c.stride, c.pad, c.dil, c.groups) + in[2].view({1, c.out, 1, 1});
        };
        const std::string what = td::detail::str_cat(dtype, " batch ", batch, " in ", c.in, " out ", c.out, " k ", c.k,
                                                      " stride ", c.stride, " pad ", c.pad, " dil ", c.dil, " groups ",
                                                      c.groups);
        INFO(what);
        const Tensor expected = reference({x, w, b});
        const Tensor probe = tt::random_tensor(expected.sizes(), dtype);
        const std::vector<Tensor> expected_grads = grads_of(reference, {x, w, b}, probe);
        for (int threads : {1, 2, 3}) {
          tt::ThreadCount count(threads);
          const std::string on = what + " on " + std::to_string(threads) + " threads";
          Tensor out = conv({x, w, b});
          CHECK(out.grad_fn() == nullptr);  // nothing requires grad
          check_close(out, expected, tol, tol, on);
          std::vector<Tensor> grads = grads_of(conv, {x, w, b}, probe);
          check_grads(grads, expected_grads, tol, on);
          // The same bits on every run (the chunks, and so BLAS's sums, depend on the thread count).
          tt::check_equal(conv({x, w, b}), tt::values(out), on + ", again");
          const std::vector<Tensor> again = grads_of(conv, {x, w, b}, probe);
          for (size_t i = 0; i < grads.size(); ++i) tt::check_equal(again[i], tt::values(grads[i]), on + ", again");
          ++compared;
        }
      }
    }
  }
  CHECK(compared == 2 * 4 * 4 * 3);
}

TEST_CASE("CPU convolution: one ConvolutionBackward0 node, its kept columns, empty batches and channels, and "
          "second derivatives", "[cpu]") {
  tt::reseed(511);
  Tensor x = leaf({2, 4, 6, 5}), w = leaf({6, 2, 3, 3});
  Tensor y = F::conv2d(x, w, {}, 1, 1, 1, 2);
  REQUIRE(y.grad_fn() != nullptr);
  CHECK(y.grad_fn()->name() == "ConvolutionBackward0");
  auto [out, columns] = k::conv2d_cpu(x.detach(), w.detach(), Tensor(), {2}, {1}, {1}, 2, true);
  tt::check_equal(columns, tt::values(td::im2col_matrix(x.detach(), {3, 3}, 1, 1, 2)));
  auto [same, none] = k::conv2d_cpu(x.detach(), w.detach(), Tensor(), {2}, {1}, {1}, 2, false);
  CHECK_FALSE(none.defined());
  tt::check_equal(same, tt::values(out));
  check_derivatives("conv2d", [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], 2, 1, 2, 2); },
                    {leaf({2, 4, 7, 6}), leaf({4, 2, 2, 3}), leaf({4})});
  // Gradients only for what requires them: the bias alone, or the input alone.
  Tensor fixed_x = x.detach(), fixed_w = w.detach(), only_b = leaf({6});
  F::conv2d(fixed_x, fixed_w, only_b, 1, 1, 1, 2).sum().backward();
  tt::check_close(only_b.grad(), tt::values(td::full({6}, 2.0 * 6 * 5, td::kFloat64)), 1e-12, 1e-12, "bias");
  Tensor only_x = leaf({2, 4, 6, 5});
  F::conv2d(only_x, fixed_w, {}, 1, 1, 1, 2).sum().backward();
  tt::check_close(only_x.grad(), conv_input_grad_reference(only_x.detach(), fixed_w), 1e-12, 1e-12, "input alone");
  // An empty batch: empty gradients for x, zeros for the weight and the bias.
  Tensor empty_batch = leaf({0, 4, 6, 5}), w2 = leaf({6, 2, 3, 3}), b2 = leaf({6});
  Tensor e = F::conv2d(empty_batch, w2, b2, 1, 1, 1, 2);
  CHECK(e.sizes() == Shape{0, 6, 6, 5});
  e.sum().backward();
  CHECK(empty_batch.grad().sizes() == empty_batch.sizes());
  tt::check_equal(w2.grad(), std::vector<double>(6 * 2 * 3 * 3, 0.0));
  tt::check_equal(b2.grad(), std::vector<double>(6, 0.0));
  // Inputs with no channels: nothing to sum, the bias alone, and zero gradients for the bias's
  // partners. No output channels: an empty output.
  Tensor no_channels = leaf({2, 0, 4, 4}), no_fields = leaf({3, 0, 2, 2}), bias = leaf({3});
  Tensor only_bias = F::conv2d(no_channels, no_fields, bias);
  CHECK(only_bias.sizes() == Shape{2, 3, 3, 3});
  std::vector<double> expected;
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t o = 0; o < 3; ++o) expected.insert(expected.end(), 9, tt::values(bias)[static_cast<size_t>(o)]);
  }
  tt::check_equal(only_bias, expected);
  only_bias.sum().backward();
  CHECK(no_channels.grad().sizes() == no_channels.sizes());
  tt::check_equal(bias.grad(), std::vector<double>(3, 18.0));
  Tensor no_outputs = F::conv2d(x, leaf({0, 4, 3, 3}), {}, 1, 1);
  CHECK(no_outputs.sizes() == Shape{2, 0, 6, 5});
}

TEST_CASE("CPU convolution whose chunks run one after another splits each chunk's GEMM across the threads", "[cpu]") {
  tt::reseed(512);
  tt::ThreadCount threads(2);
  // 2 images on 2 threads: too few chunks for the threads, and each image's GEMM ([32, 72] x
  // [72, 1024]) is large enough to split.
  Tensor x = tt::random_tensor({2, 8, 32, 32}, td::kFloat32), w = tt::random_tensor({32, 8, 3, 3}, td::kFloat32);
  Tensor b = tt::random_tensor({32}, td::kFloat32);
  auto conv = [](const std::vector<Tensor>& in) { return F::conv2d(in[0], in[1], in[2], 1, 1); };
  auto reference = [](const std::vector<Tensor>& in) {
    return conv2d_reference(in[0], in[1], 1, 1, 1, 1) + in[2].view({1, 32, 1, 1});
  };
  const Tensor expected = reference({x, w, b});
  check_close(conv({x, w, b}), expected, 1e-5, 1e-5, "forward");
  const Tensor probe = tt::random_tensor(expected.sizes(), td::kFloat32);
  check_grads(grads_of(conv, {x, w, b}, probe), grads_of(reference, {x, w, b}, probe), 1e-4, "backward");
}

TEST_CASE("fused cross-entropy equals the op-by-op form for every reduction, weight, ignore_index and smoothing",
          "[cpu]") {
  tt::reseed(504);
  const int64_t ignore = -100;
  for (Shape shape : {Shape{6, 4}, Shape{3, 5, 2, 3}, Shape{1, 1}, Shape{40, 1000}}) {
    const int64_t classes = shape[1];
    Shape target_shape = shape;
    target_shape.erase(target_shape.begin() + 1);
    Tensor t = td::randint(0, classes, target_shape);
    t = td::where(td::rand(target_shape) < 0.25, ignore, t);  // about a quarter ignored, never all
    t.view({-1})[0].fill_(classes - 1);
    for (bool weighted : {false, true}) {
      for (double s : {0.0, 0.3}) {
        Tensor x = tt::random_tensor(shape, td::kFloat64, tt::Layout::Permuted, -4, 4);
        Tensor w = weighted ? td::rand({classes}, td::kFloat64) + 0.5 : Tensor();
        // The reference over rows [M, C] with the class dim last.
        auto rows_of = [&](const Tensor& v) {
          if (v.dim() == 2) return v;
          return v.permute({0, 2, 3, 1}).reshape({-1, classes});
        };
        Tensor flat_t = t.reshape({-1});
        Tensor ref_rows = cross_entropy_rows_reference(rows_of(x), flat_t, w, ignore, s);
        Tensor kept_weight = (w.defined() ? w.index_select(0, td::where(flat_t == ignore, 0, flat_t))
                                          : td::ones({flat_t.numel()}, td::kFloat64)) *
                             (flat_t != ignore).to(td::kFloat64);
        INFO("shape " << td::shape_str(shape) << (weighted ? " weighted" : "") << " smoothing " << s);
        check_close(F::cross_entropy(x, t, w, ignore, td::kNone, s), ref_rows.view(target_shape), 1e-12, 1e-12,
                    "none");
        check_close(F::cross_entropy(x, t, w, ignore, td::kSum, s), ref_rows.sum(), 1e-12, 1e-12, "sum");
        check_close(F::cross_entropy(x, t, w, ignore, td::kMean, s), ref_rows.sum() / kept_weight.sum(), 1e-12,
                    1e-12, "mean");
        for (td::Reduction r : {td::kNone, td::kSum, td::kMean}) {
          Tensor probe = r == td::kNone ? td::randn(target_shape, td::kFloat64) : td::randn({}, td::kFloat64);
          auto fused = grads_of([&](const std::vector<Tensor>& in) {
            return F::cross_entropy(in[0], t, w, ignore, r, s);
          }, {x}, probe);
          auto reference = grads_of([&](const std::vector<Tensor>& in) {
            Tensor rows = cross_entropy_rows_reference(rows_of(in[0]), flat_t, w, ignore, s);
            if (r == td::kNone) return rows.view(target_shape);
            return r == td::kSum ? rows.sum() : rows.sum() / kept_weight.sum();
          }, {x}, probe);
          check_grads(fused, reference, 1e-12, std::string("reduction ") + F::reduction_name(r));
        }
      }
    }
  }
}

TEST_CASE("fused cross-entropy: a 1-D input, float32, and second derivatives", "[cpu]") {
  tt::reseed(505);
  Tensor x = td::randn({7}, td::kFloat64);
  Tensor one = F::cross_entropy(x, td::tensor(int64_t{3}), Tensor(), -100, td::kNone, 0.2);
  CHECK(one.dim() == 0);
  check_close(one, cross_entropy_rows_reference(x.unsqueeze(0), td::tensor({int64_t{3}}), Tensor(), -100, 0.2)
                       .squeeze(0),
              1e-13, 1e-13, "1-D");
  Tensor x32 = tt::random_tensor({64, 33}, td::kFloat32, tt::Layout::Strided, -10, 10);
  Tensor t = td::randint(0, 33, {64});
  check_close(F::cross_entropy(x32, t), cross_entropy_rows_reference(x32.to(td::kFloat64), t, Tensor(), -100, 0)
                                            .mean(),
              1e-5, 1e-5, "float32");
  Tensor w = td::tensor({0.5, 1.0, 2.0, 1.5, 0.7}, td::kFloat64);
  Tensor targets = td::tensor({0, 4, -100, 2});
  auto fn = [&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], targets, w, -100, td::kMean, 0.2); };
  Tensor xs = leaf({4, 5});
  CHECK(F::cross_entropy(xs, targets, w, -100, td::kNone, 0.2).grad_fn()->name() == "CrossEntropyLossBackward0");
  check_derivatives("cross_entropy", fn, {xs});
  check_derivatives("cross_entropy per element", [&](const std::vector<Tensor>& in) {
    return F::cross_entropy(in[0], td::tensor({{1, 0}, {2, 2}}), Tensor(), -100, td::kNone, 0.0);
  }, {leaf({2, 3, 2})});
}

// Second derivatives differentiate the create_graph form of each backward; that form must give the
// kernels' first derivatives.
TEST_CASE("the create_graph backward of layer norm and cross-entropy equals the kernels'", "[cpu]") {
  tt::reseed(506);
  auto both = [](const Tensor& out, const std::vector<Tensor>& inputs, const std::string& what) {
    Tensor probe = td::randn(out.sizes(), td::kFloat64);
    auto plain = td::autograd::grad({out}, inputs, {probe}, true, false);
    auto graphed = td::autograd::grad({out}, inputs, {probe}, true, true);
    REQUIRE(plain.size() == graphed.size());
    CHECK(graphed[0].requires_grad());  // (a bias's gradient, the probe summed, depends on nothing)
    for (size_t i = 0; i < plain.size(); ++i) {
      check_close(graphed[i].detach(), plain[i], 1e-12, 1e-12, what + " input " + std::to_string(i));
    }
  };
  for (bool affine : {false, true}) {
    Tensor x = leaf({3, 4, 6}, td::kFloat64, tt::Layout::Strided), w = leaf({4, 6}), b = leaf({4, 6});
    Tensor y = F::layer_norm(x, {4, 6}, affine ? w : Tensor(), affine ? b : Tensor());
    both(y, affine ? std::vector<Tensor>{x, w, b} : std::vector<Tensor>{x}, affine ? "layer_norm" : "layer_norm bare");
  }
  Tensor x = leaf({6, 5}), w = td::rand({5}, td::kFloat64) + 0.5;
  Tensor t = td::tensor({0, 4, -100, 2, 2, 1});
  for (double s : {0.0, 0.3}) {
    both(F::cross_entropy(x, t, w, -100, td::kNone, s), {x}, "cross_entropy weighted");
    both(F::cross_entropy(x, t, Tensor(), -100, td::kNone, s), {x}, "cross_entropy");
  }
}

TEST_CASE("fused layers in float16 and bfloat16 stay within their rounding of the float64 result", "[cpu]") {
  tt::reseed(507);
  for (td::DType dtype : {td::kFloat16, td::kBFloat16}) {
    const double tol = 4 * tt::rtol_for(dtype);
    INFO(td::dtype_name(dtype));
    Tensor x = tt::random_tensor({17, 300}, dtype, tt::Layout::Permuted, -3, 3);
    Tensor w = tt::random_tensor({300}, dtype, tt::Layout::Contiguous, 0.5, 2), b = tt::random_tensor({300}, dtype);
    Tensor x64 = x.to(td::kFloat64), w64 = w.to(td::kFloat64), b64 = b.to(td::kFloat64);
    // Normalized values are O(1) and the affine map scales them by at most 2: a tolerance on that scale.
    check_close(F::layer_norm(x, {300}, w, b).to(td::kFloat64), layer_norm_reference(x64, 1, w64, b64, 1e-5), tol,
                tol * 8, "layer_norm");
    Tensor t = td::randint(0, 300, {17});
    check_close(F::cross_entropy(x, t, w, -100, td::kNone, 0.1).to(td::kFloat64),
                cross_entropy_rows_reference(x64, t, w64, -100, 0.1), tol, tol * 8, "cross_entropy");
    // The mean of many rows sums in float32: 70000 rows of loss ~ log(2) would overflow float16.
    Tensor many = td::zeros({70000, 2}, dtype);
    Tensor zero_targets = td::zeros({70000}, td::kInt64);
    check_close(F::cross_entropy(many, zero_targets).to(td::kFloat64), std::vector<double>{std::log(2.0)}, tol, 0,
                "mean over 70000 rows");
  }
}

TEST_CASE("conv2d in float16 and bfloat16 (im2col_matrix and mm on the CPU) stays within their rounding of float64",
          "[cpu]") {
  tt::reseed(513);
  for (td::DType dtype : {td::kFloat16, td::kBFloat16}) {
    INFO(td::dtype_name(dtype));
    Tensor x = leaf({3, 4, 7, 6}, dtype), w = leaf({6, 2, 3, 3}, dtype), b = leaf({6}, dtype);
    Tensor y = F::conv2d(x, w, b, 2, 1, 1, 2);
    CHECK(y.dtype() == dtype);
    CHECK(y.grad_fn()->name() != "ConvolutionBackward0");  // the op-by-op form
    Tensor x64 = x.detach().to(td::kFloat64), w64 = w.detach().to(td::kFloat64), b64 = b.detach().to(td::kFloat64);
    // The inputs are exact in float64; what differs is the roundings of the results (sums of up
    // to 18 products of values up to 2, O(5), in the forward; of up to 36 positions in the
    // weight's gradient), so the absolute tolerances are on those scales.
    const double r = tt::rtol_for(dtype);
    check_close(y.to(td::kFloat64), F::conv2d(x64, w64, b64, 2, 1, 1, 2), r, 4 * r, "forward");
    y.sum().backward();
    Tensor x64l = x64.requires_grad_(true), w64l = w64.requires_grad_(true), b64l = b64.requires_grad_(true);
    F::conv2d(x64l, w64l, b64l, 2, 1, 1, 2).sum().backward();
    check_close(x.grad().to(td::kFloat64), x64l.grad(), r, 4 * r, "input gradient");
    check_close(w.grad().to(td::kFloat64), w64l.grad(), r, 16 * r, "weight gradient");
    check_close(b.grad().to(td::kFloat64), b64l.grad(), r, r, "bias gradient");
  }
}

TEST_CASE("cross-entropy over only ignored rows: a NaN mean and zero gradients, as PyTorch's", "[cpu]") {
  Tensor x = leaf({3, 4});
  Tensor t = td::full({3}, -100, td::kInt64);
  Tensor loss = F::cross_entropy(x, t, td::rand({4}, td::kFloat64), -100, td::kMean, 0.2);
  CHECK(std::isnan(loss.item<double>()));
  loss.backward();
  tt::check_equal(x.grad(), std::vector<double>(12, 0.0), "gradient");
  CHECK(F::cross_entropy(x, t, Tensor(), -100, td::kSum).item<double>() == 0);
}

TEST_CASE("a NaN score makes its row's loss and gradient NaN and leaves the other rows alone", "[cpu]") {
  // Rows of 19 classes: two blocks of the row kernels' 8 lanes and a tail of 3; the NaN sits in
  // the first lane, a middle lane, the last lane of a block and the tail, one row each.
  const std::vector<int64_t> nan_at = {0, 5, 15, 17};
  const int64_t rows = static_cast<int64_t>(nan_at.size()) + 1, classes = 19;
  for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
    Tensor x = td::testing::random_tensor({rows, classes}, dtype);
    for (size_t r = 0; r < nan_at.size(); ++r) x.select(0, static_cast<int64_t>(r)).select(0, nan_at[r]).fill_(NAN);
    x.requires_grad_();
    Tensor t = td::randint(0, classes, {rows});
    Tensor losses = F::cross_entropy(x, t, Tensor(), -100, td::kNone);
    const auto loss = tt::values(losses);
    for (size_t r = 0; r < nan_at.size(); ++r) CHECK(std::isnan(loss[r]));
    CHECK(std::isfinite(loss.back()));
    losses.sum().backward();
    const auto grad = tt::values(x.grad());
    for (int64_t k = 0; k < rows * classes; ++k) {
      INFO(td::dtype_name(dtype) << " gradient element " << k);
      CHECK(std::isnan(grad[static_cast<size_t>(k)]) == (k < (rows - 1) * classes));
    }
  }
}

TEST_CASE("a target changed in place before backward is an error, not a wrong gradient", "[cpu]") {
  Tensor x = leaf({3, 4});
  Tensor t = td::tensor({0, 3, 1});
  Tensor loss = F::cross_entropy(x, t);
  t.fill_(-1);
  check_error([&] { loss.backward(); }, {"CrossEntropyLossBackward0", "modified by an in-place operation"});
  Tensor w = td::ones({4}, td::kFloat64).requires_grad_(true);
  check_error([&] { td::fused_cross_entropy(x, td::tensor({0, 3, 1}), w, -100, 0); },
              {"cross_entropy", "weight", "gradient"});
  // Through nn::functional a weight that requires grad takes the op-by-op form and gets its gradient.
  F::cross_entropy(x, td::tensor({0, 3, 1}), w).backward();
  CHECK(w.grad().defined());
}

TEST_CASE("the fused kernels refuse bad arguments and leave their inputs unchanged", "[cpu]") {
  Tensor x = td::randn({4, 5}), w = td::randn({5});
  tt::Snapshot xs(x), ws(w);
  const auto generator = td::default_generator().state();
  check_error([&] { k::dropout(x, 1.0); }, {"dropout", "[0, 1)", "1"});
  check_error([&] { k::dropout(td::ones({3}, td::kInt64), 0.5); }, {"dropout", "floating", "int64"});
  CHECK(td::default_generator().state().offset == generator.offset);
  check_error([&] { k::dropout_backward(x, td::ones({4, 5}), 2); }, {"dropout_backward", "bool"});
  check_error([&] { k::layer_norm(x, 1, td::randn({4}), Tensor(), 1e-5); }, {"layer_norm", "weight", "[5]", "[4]"});
  check_error([&] { k::layer_norm(x, 1, w.to(td::kFloat64), Tensor(), 1e-5); }, {"layer_norm", "float64"});
  check_error([&] { k::layer_norm(x, 3, w, Tensor(), 1e-5); }, {"layer_norm", "last 3 dims", "[4, 5]"});
  check_error([&] { k::layer_norm(td::ones({3}, td::kInt64), 1, Tensor(), Tensor(), 1e-5); }, {"layer_norm", "int64"});
  check_error([&] { k::cross_entropy(x, td::tensor({0, 1, 2}), Tensor(), -100, 0); },
              {"cross_entropy", "[4, 5]", "[4]", "[3]"});
  check_error([&] { k::cross_entropy(x, td::tensor({0, 1, 5, 2}), Tensor(), -100, 0); },
              {"cross_entropy", "target 5", "out of bounds", "5 classes"});
  check_error([&] { k::cross_entropy(x, td::tensor({0, 1, 3, 2}), Tensor(), -100, 1.5); },
              {"cross_entropy", "label_smoothing", "1.5"});
  check_error([&] { k::cross_entropy(x, td::tensor({0.0, 1.0, 3.0, 2.0}), Tensor(), -100, 0); },
              {"cross_entropy", "int64", "float32"});
  check_error([&] { F::cross_entropy(x, td::tensor({0, 1})); }, {"cross_entropy", "[4, 5]", "[4]", "[2]"});
  Tensor image = td::randn({1, 2, 5, 5}), filter = td::randn({3, 2, 3, 3});
  tt::Snapshot image_before(image);
  check_error([&] { k::conv2d_cudnn(image, filter, {1}, {0}, {1}, 1); },
              {"conv2d", "cuDNN", "CUDA device", "cpu"});
  check_error([&] { k::conv2d_cpu(image.to(td::kInt32), filter.to(td::kInt32), Tensor(), {1}, {0}, {1}, 1, false); },
              {"conv2d", "float32 or float64", "int32"});
  check_error([&] { k::conv2d_cpu(image, filter.to(td::kFloat64), Tensor(), {1}, {0}, {1}, 1, false); },
              {"conv2d", "float32", "float64"});
  check_error([&] { k::conv2d_cpu(image, td::randn({3, 1, 3, 3}), Tensor(), {1}, {0}, {1}, 1, false); },
              {"conv2d", "[1, 2, 5, 5]", "[3, 1, 3, 3]", "groups=1"});
  check_error([&] { k::conv2d_cpu(image, td::randn({3, 2, 7, 7}), Tensor(), {1}, {0}, {1}, 1, false); },
              {"conv2d", "does not fit"});
  check_error([&] { k::conv2d_cpu(image, filter, td::ones({2}), {1}, {0}, {1}, 1, false); },
              {"conv2d", "bias", "[3]", "[2]"});
  check_error([&] { k::conv2d_cpu(image, filter, td::ones({3}, td::kFloat64), {1}, {0}, {1}, 1, false); },
              {"conv2d", "float32", "float64"});
  check_error([&] { k::conv2d_cpu_backward_input(td::ones({1, 3, 2, 2}), filter, {1, 2, 5, 5}, {1}, {0}, {1}, 1); },
              {"conv2d_backward_input", "[1, 3, 2, 2]", "[1, 3, 3, 3]"});
  check_error([&] { k::conv2d_cpu_backward_weight(td::ones({1, 3, 3, 3}), td::ones({18, 8}), {3, 2, 3, 3}, 1); },
              {"conv2d_backward_weight", "[18, 8]", "[3, 2, 3, 3]"});
  image_before.check_unchanged(image);
  xs.check_unchanged(x);
  ws.check_unchanged(w);
}
