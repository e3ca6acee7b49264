#include "nn/functional.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "autograd/record.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/factory.h"
#include "kernels/nn_ops.h"

namespace tandem::nn::functional {

namespace {

[[noreturn]] void refuse_batchmean(const char* op) {
  TD_FAIL(op, ": reduction batchmean is kl_div's only; use mean or sum");
}

Tensor reduce(const Tensor& loss, Reduction reduction, const char* op) {
  switch (reduction) {
    case kNone: return loss;
    case kSum: return loss.sum();
    case kMean: return loss.mean();
    case kBatchMean: refuse_batchmean(op);
  }
  return loss;
}

// An integer tensor's values on the host, in row-major order (lengths, offsets, indices that
// decide a computation's shape).
std::vector<int64_t> host_integers(const Tensor& t) {
  const Tensor host = t.reshape({-1}).to(Device(kCPU), kInt64).contiguous();
  return std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
}

// A floating tensor's values on the host, as doubles, in row-major order.
std::vector<double> values_as_doubles(const Tensor& t) {
  const Tensor host = t.reshape({-1}).to(Device(kCPU), kFloat64).contiguous();
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
}

// x's values, with `backward` as their gradient (its own derivative, where it has one, taken from
// its ops).
Tensor with_gradient(const char* node, const Tensor& x, const Tensor& values,
                     std::function<Tensor(const Tensor& g, const Tensor& x)> backward) {
  if (!autograd::needs_grad({&x})) return values;
  Tensor y = values;
  SavedTensor saved(x, false);
  autograd::record(node, {&x}, {&y}, [saved, node, backward](const std::vector<Tensor>& g) -> std::vector<Tensor> {
    return {backward(g[0], saved.unpack(node))};
  });
  return y;
}

// The values of an activation, computed without recording a graph.
template <typename F>
Tensor values_of(F f) {
  NoGradGuard no_grad;
  return f();
}

// What an in-place activation keeps for its gradient: x's new values, or a copy of its old ones.
enum class Keeps { result, input };

// Refuses to write x in place where autograd could not follow (a leaf that requires grad, a view of
// one) or where elements overlap (an expanded tensor), naming op, before anything is drawn or written.
void check_in_place(const char* op, const Tensor& x) {
  kernels::check_no_internal_overlap(x, op);
  autograd::check_inplace(x, op, autograd::needs_grad({&x}));
}

// Writes activation(x) into x, with backward(g, kept) as the gradient of the graph node `node`.
Tensor& activate_in_place(const char* op, const char* node, Tensor& x, Keeps keeps,
                          const std::function<Tensor(const Tensor&)>& activation,
                          std::function<Tensor(const Tensor& g, const Tensor& kept)> backward) {
  check_in_place(op, x);
  const bool recording = autograd::needs_grad({&x});
  const Tensor values = values_of([&] { return activation(x); });
  const SavedTensor input = recording && keeps == Keeps::input ? SavedTensor(clone(x), false) : SavedTensor();
  kernels::copy_(x, values);
  if (recording) {
    const SavedTensor kept = keeps == Keeps::result ? SavedTensor(x, true) : input;
    autograd::record_inplace(node, x, {}, [node, kept, backward](const std::vector<Tensor>& g) {
      const Tensor k = kept.unpack(node);
      // 16-bit: in float32 and rounded once, as the out-of-place forms compute.
      if (is_16bit_float(k.dtype())) {
        return std::vector<Tensor>{backward(g[0].to(kFloat32), k.to(kFloat32)).to(k.dtype())};
      }
      return std::vector<Tensor>{backward(g[0], k)};
    });
  }
  return x;
}

// The losses are on autocast's float32 list for every device type.
bool autocast_takes_loss(std::initializer_list<const Tensor*> operands) {
  return amp::takes_float32(amp::Float32On::kAll, operands);
}

// A 16-bit input with float32 parameters or statistics (as autocast leaves a normalization's
// parameters): normalized in float32 and returned in its own dtype, as PyTorch's mixed-type batch
// and layer norms do, instead of promoted to float32.
bool mixed_16bit(const Tensor& x, std::initializer_list<const Tensor*> params) {
  if (!x.defined() || !is_16bit_float(x.dtype())) return false;
  for (const Tensor* p : params) {
    if (p->defined() && p->dtype() == kFloat32) return true;
  }
  return false;
}

// As PyTorch: a layer's input, weight and (optional) bias of one dtype.
void check_one_dtype(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  TD_CHECK(weight.dtype() == x.dtype() && (!bias.defined() || bias.dtype() == x.dtype()), op, ": input (", x.dtype(),
           "), weight (", weight.dtype(), ") and bias (", bias.defined() ? dtype_name(bias.dtype()) : "none",
           ") must have one dtype");
}

// A height and width given as one value for both or as two.
std::array<int64_t, 2> two_values(const char* op, IntList v, const char* name) {
  TD_CHECK(v.size() == 1 || v.size() == 2, op, ": ", name, " must have one or two values, got ", v.size());
  return {v[0], v[v.size() - 1]};
}

// The activations' input: a defined floating tensor.
void check_floating_input(const char* op, const Tensor& x) {
  TD_CHECK(x.defined(), op, ": the input is an undefined tensor");
  TD_CHECK(is_floating(x.dtype()), op, ": expected a floating input, got ", x.dtype());
}

// A loss's optional weight broadcasts to the input's shape, never the loss beyond it (a [N]
// weight against [N, 1] inputs would make an [N, N] loss of every pair), as PyTorch's check.
void check_weight_fits(const char* op, const char* name, const Tensor& weight, const Tensor& input) {
  TD_CHECK(!weight.defined() || broadcast_shapes(weight.sizes(), input.sizes(), op) == input.sizes(), op, ": ", name,
           " of shape ", shape_str(weight.defined() ? weight.sizes() : Shape{}),
           " does not broadcast to the input's shape ", shape_str(input.sizes()));
}

// [1, C, 1, ...] for broadcasting a per-channel vector against x (channels in dim 1).
Shape channel_shape(const Tensor& x, int64_t channels) {
  Shape s(x.dim(), 1);
  s[1] = channels;
  return s;
}

}  // namespace

const char* reduction_name(Reduction r) {
  switch (r) {
    case kNone: return "none";
    case kSum: return "sum";
    case kMean: return "mean";
    case kBatchMean: return "batchmean";
  }
  return "?";
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (amp::takes_lower_precision({&x, &weight, &bias})) {
    amp::SuspendAutocast inside;
    return linear(amp::to_lower_precision(x), amp::to_lower_precision(weight), amp::to_lower_precision(bias));
  }
  TD_CHECK(x.defined() && weight.defined(), "linear: input and weight must be defined");
  TD_CHECK(weight.dim() == 2, "linear: weight must be 2-D [out_features, in_features], got ", shape_str(weight.sizes()));
  TD_CHECK(x.dim() >= 1 && x.sizes().back() == weight.sizes()[1], "linear: input of shape ", shape_str(x.sizes()),
           " does not end in in_features = ", weight.sizes()[1]);
  check_one_dtype("linear", x, weight, bias);
  if (x.dim() == 2 && bias.defined()) return addmm(bias, x, weight.t());
  // A contiguous input of other ranks as PyTorch takes it: one addmm over its rows, so that a
  // 16-bit result is rounded once, with the bias in the product's float32 sum.
  if (bias.defined() && bias.dim() == 1 && x.is_contiguous()) {
    Shape out_shape = x.sizes();
    out_shape.back() = weight.size(0);
    return addmm(bias, x.reshape({-1, weight.size(1)}), weight.t()).view(out_shape);
  }
  Tensor out = matmul(x, weight.t());
  return bias.defined() ? out + bias : out;
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
              IntList dilation, int64_t groups) {
  if (amp::takes_lower_precision({&x, &weight, &bias})) {
    amp::SuspendAutocast inside;
    return conv2d(amp::to_lower_precision(x), amp::to_lower_precision(weight), amp::to_lower_precision(bias), stride,
                  padding, dilation, groups);
  }
  TD_CHECK(x.defined() && weight.defined(), "conv2d: input and weight must be defined");
  TD_CHECK(x.dim() == 3 || x.dim() == 4, "conv2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
           shape_str(x.sizes()));
  TD_CHECK(weight.dim() == 4, "conv2d: weight must be 4-D [out, in / groups, kh, kw], got ", shape_str(weight.sizes()));
  TD_CHECK(groups >= 1, "conv2d: groups must be positive, got ", groups);
  check_one_dtype("conv2d", x, weight, bias);
  Tensor x4 = x.dim() == 3 ? x.unsqueeze(0) : x;
  const int64_t n = x4.size(0), c = x4.size(1);
  const int64_t out_channels = weight.size(0), kh = weight.size(2), kw = weight.size(3);
  TD_CHECK(c == weight.size(1) * groups, "conv2d: input has ", c, " channels but weight ", shape_str(weight.sizes()),
           " with groups=", groups, " expects ", weight.size(1) * groups);
  TD_CHECK(out_channels % groups == 0, "conv2d: out channels ", out_channels, " not divisible by groups ", groups);
  TD_CHECK(!bias.defined() || bias.sizes() == Shape{out_channels}, "conv2d: bias must have shape [", out_channels,
           "], got ", shape_str(bias.defined() ? bias.sizes() : Shape{}));
  // The kernels' own shape checks (stride, dilation, padding, the kernel's fit), before any path.
  const Shape out_shape = kernels::conv2d_output_shape(x4.sizes(), weight.sizes(), groups, stride, padding, dilation);
  if (x.is_cuda() && kernels::cudnn_enabled() && is_floating(x.dtype()) && weight.dtype() == x.dtype() &&
      weight.device() == x.device() && kernels::cudnn_conv_fits(x4.sizes(), weight.sizes(), out_shape)) {
    Tensor out = cudnn_conv2d(x4, weight, stride, padding, dilation, groups);
    if (bias.defined()) out = out + bias.view({1, out_channels, 1, 1});
    return x.dim() == 3 ? out.squeeze(0) : out;
  }
  if (x.device().is_cpu() && (x.dtype() == kFloat32 || x.dtype() == kFloat64) && weight.dtype() == x.dtype() &&
      weight.device().is_cpu() && (!bias.defined() || (bias.dtype() == x.dtype() && bias.device().is_cpu()))) {
    Tensor out = cpu_conv2d(x4, weight, bias, stride, padding, dilation, groups);
    return x.dim() == 3 ? out.squeeze(0) : out;
  }
  // Other dtypes, and a GPU without cuDNN: the receptive fields as [C*kh*kw, N*L], the whole
  // batch one GEMM per group, which BLAS runs far faster than N small ones.
  Tensor columns = im2col_matrix(x4, {kh, kw}, dilation, padding, stride);
  const int64_t per_group_in = c / groups * kh * kw, per_group_out = out_channels / groups;
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < groups; ++g) {
    Tensor wg = weight.narrow(0, g * per_group_out, per_group_out).reshape({per_group_out, per_group_in});
    Tensor columns_g = groups == 1 ? columns : columns.narrow(0, g * per_group_in, per_group_in);
    // The bias inside the GEMM, as PyTorch's CPU convolution adds it: a 16-bit result rounded once.
    parts.push_back(bias.defined() ? addmm(bias.narrow(0, g * per_group_out, per_group_out).view({per_group_out, 1}),
                                           wg, columns_g)
                                   : mm(wg, columns_g));
  }
  Tensor out =
      (groups == 1 ? parts[0] : cat(parts, 0)).view({out_channels, n, out_shape[2], out_shape[3]}).transpose(0, 1);
  return x.dim() == 3 ? out.squeeze(0) : out;
}

std::pair<int64_t, int64_t> same_padding(int64_t kernel, int64_t dilation) {
  const int64_t total = dilation * (kernel - 1);
  return {total / 2, total - total / 2};
}

int64_t conv_transpose_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                                   int64_t output_padding) {
  return (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1;
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, PaddingMode padding,
              IntList dilation, int64_t groups) {
  if (padding == kValid) return conv2d(x, weight, bias, stride, 0, dilation, groups);
  TD_CHECK(weight.defined() && weight.dim() == 4, "conv2d: weight must be 4-D [out, in / groups, kh, kw], got ",
           weight.defined() ? shape_str(weight.sizes()) : std::string("an undefined tensor"));
  const auto strides = two_values("conv2d", stride, "stride"), dilations = two_values("conv2d", dilation, "dilation");
  TD_CHECK(strides[0] == 1 && strides[1] == 1, "conv2d: padding='same' is not supported for strided convolutions (",
           "stride (", strides[0], ", ", strides[1], "))");
  TD_CHECK(dilations[0] > 0 && dilations[1] > 0, "conv2d: dilation must be positive, got (", dilations[0], ", ",
           dilations[1], ")");
  // Each dim padded by its larger half on both sides; where the total is odd, that is one row
  // (column) too many at the start, which the output's first row (column) holds: dropped, and
  // the rest made contiguous, as PyTorch's output is.
  std::array<int64_t, 2> before{}, pad{};
  for (int d = 0; d < 2; ++d) std::tie(before[d], pad[d]) = same_padding(weight.size(2 + d), dilations[d]);
  Tensor out = conv2d(x, weight, bias, 1, pad, dilation, groups);
  for (int d = 0; d < 2; ++d) {
    const int64_t dim = out.dim() - 2 + d;
    if (pad[d] != before[d]) out = out.narrow(dim, 1, out.size(dim) - 1);
  }
  return out.contiguous();
}

const char* pad_mode_name(PadMode mode) {
  switch (mode) {
    case kConstant: return "constant";
    case kReflect: return "reflect";
    case kReplicate: return "replicate";
    case kCircular: return "circular";
  }
  return "?";
}

namespace {

// Where each position of a dim padded by `before` and `after` (either may be negative, a crop)
// reads the input's dim of `size` (checked by pad).
std::vector<int64_t> pad_sources(PadMode mode, int64_t size, int64_t before, int64_t after) {
  std::vector<int64_t> sources;
  // circular wraps around what is left after cropping, [first, first + kept).
  const int64_t first = std::max<int64_t>(-before, 0), kept = size - first - std::max<int64_t>(-after, 0);
  for (int64_t j = 0; j < size + before + after; ++j) {
    int64_t i = j - before;
    switch (mode) {
      case kReflect: i = i < 0 ? -i : i >= size ? 2 * (size - 1) - i : i; break;
      case kReplicate: i = std::clamp<int64_t>(i, 0, size - 1); break;
      case kCircular: i = first + ((j - std::max<int64_t>(before, 0)) % kept + kept) % kept; break;
      case kConstant: break;
    }
    sources.push_back(i);
  }
  return sources;
}

// t cropped or padded with `value` along dim.
Tensor pad_constant(const Tensor& t, int64_t dim, int64_t before, int64_t after, double value) {
  const int64_t size = t.size(dim);
  Tensor kept = t.narrow(dim, std::max<int64_t>(-before, 0),
                         size - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0));
  std::vector<Tensor> parts;
  auto filled = [&](int64_t length) {
    Shape shape = t.sizes();
    shape[dim] = length;
    return full(shape, value, t.options());
  };
  if (before > 0) parts.push_back(filled(before));
  parts.push_back(kept);
  if (after > 0) parts.push_back(filled(after));
  return parts.size() == 1 ? kept : cat(parts, dim);
}

}  // namespace

Tensor pad(const Tensor& x, IntList padding, PadMode mode, double value) {
  TD_CHECK(x.defined(), "pad: the input is an undefined tensor");
  const std::string given = shape_str(padding.vec()), mode_name = pad_mode_name(mode);
  TD_CHECK(padding.size() % 2 == 0, "pad: padding ", given, " must have (before, after) pairs, an even count");
  const int64_t dims = static_cast<int64_t>(padding.size()) / 2;
  TD_CHECK(dims <= x.dim(), "pad: padding ", given, " pads ", dims, " dims but the input ", shape_str(x.sizes()),
           " has ", x.dim());
  TD_CHECK(mode == kConstant || (dims >= 1 && dims <= 3 && (x.dim() == dims + 1 || x.dim() == dims + 2)), "pad: ",
           mode_name, " padding ", given, " pads ", dims, " dims, which takes a ", dims + 1, "-D or ", dims + 2,
           "-D input (1 to 3 dims padded), got ", shape_str(x.sizes()));
  TD_CHECK(mode == kConstant || value == 0, "pad: a value is for constant padding only, not ", mode_name);
  // Every dim is checked before any is padded.
  for (int64_t k = 0; k < dims; ++k) {
    const int64_t dim = x.dim() - 1 - k, before = padding[2 * k], after = padding[2 * k + 1], size = x.size(dim);
    const std::string where = "pad: " + mode_name + " padding (" + std::to_string(before) + ", " +
                              std::to_string(after) + ") of dim " + std::to_string(dim) + " of the input " +
                              shape_str(x.sizes());
    const int64_t cropped = size + std::min<int64_t>(before, 0) + std::min<int64_t>(after, 0);
    const int64_t length = size + before + after;
    // replicate clamps any position into the dim, and reflect (pads below the size) mirrors it
    // there; constant and circular padding read inside what the crops leave.
    if (mode == kConstant) {
      TD_CHECK(cropped >= 0, where, " crops more than the dim's ", size);
      continue;
    }
    if (mode == kCircular) {
      TD_CHECK(length >= 0, where, " leaves a size of ", length);
      if (length == 0) continue;
      TD_CHECK(cropped >= 0, where, " crops more than the dim's ", size);
      TD_CHECK(before <= cropped && after <= cropped, where, " would wrap around more than once (", cropped,
               " values to wrap around)");
      continue;
    }
    TD_CHECK(size > 0, where, ": the dim is empty, there is nothing to ", mode_name);
    TD_CHECK(length > 0, where, " leaves a size of ", length, " (it must be positive)");
    if (mode == kReflect) TD_CHECK(before < size && after < size, where, " must be below the dim's size, ", size);
  }
  Tensor out = x;
  for (int64_t k = 0; k < dims; ++k) {
    const int64_t dim = x.dim() - 1 - k, before = padding[2 * k], after = padding[2 * k + 1];
    if (before == 0 && after == 0) continue;
    if (mode == kConstant) {
      out = pad_constant(out, dim, before, after, value);
    } else {
      const Tensor sources = tensor(pad_sources(mode, out.size(dim), before, after)).to(x.device());
      out = out.index_select(dim, sources);
    }
  }
  return out;
}

const char* interpolate_mode_name(InterpolateMode mode) {
  switch (mode) {
    case kNearest: return "nearest";
    case kNearestExact: return "nearest-exact";
    case kLinear: return "linear";
    case kBilinear: return "bilinear";
    case kTrilinear: return "trilinear";
    case kBicubic: return "bicubic";
    case kArea: return "area";
  }
  return "?";
}

namespace {

// Where output position j of a dim reads the input under the nearest modes, as PyTorch's CPU
// kernels compute it (checked against PyTorch 2.15 over thousands of sizes and scales). `scale` is
// 1 / scale_factor where one is given, else in / out. 'nearest' reads j itself where out == in
// and j / 2 where out == 2 * in on 4-D inputs. float32 and 16-bit inputs index in float:
// j * scale ('nearest') or (j + 0.5) * scale ('nearest-exact'), rounded down; 3-D and 5-D inputs
// round nearest-exact's centre (j + 0.5) * scale - 0.5 half up, in one fused rounding. float64
// inputs index in double, rounded to float before the floor: j * scale, or
// max((j + 0.5) * scale - 0.5, 0) + 0.5 (on 4-D inputs PyTorch still differs at about one size
// in 250, where its product in double lands on a whole number).
int64_t nearest_source(InterpolateMode mode, int64_t j, int64_t in, int64_t out, std::optional<double> scale_factor,
                       int64_t spatial_dims, bool float64) {
  const bool exact = mode == kNearestExact;
  if (spatial_dims == 2 && !exact && out == in) return j;
  if (spatial_dims == 2 && !exact && out == 2 * in) return j / 2;
  float source = 0;
  if (float64) {
    const double scale = scale_factor ? 1.0 / *scale_factor : static_cast<double>(in) / static_cast<double>(out);
    const double index = static_cast<double>(j);
    source = static_cast<float>(exact ? std::max(scale * (index + 0.5) - 0.5, 0.0) + 0.5 : scale * index);
  } else {
    const float scale = scale_factor ? static_cast<float>(1.0 / *scale_factor)
                                     : static_cast<float>(in) / static_cast<float>(out);
    const float position = static_cast<float>(j) + (exact ? 0.5f : 0.0f);
    source = spatial_dims != 2 && exact ? std::fma(scale, position, -0.5f) + 0.5f : position * scale;
  }
  return std::min(static_cast<int64_t>(std::floor(source)), in - 1);
}

// The step in input positions between two output positions, in Real as PyTorch's kernels take
// it: 1 / scale_factor where one is used, else in / out; with align_corners, what puts the first
// and last output positions on the first and last input ones.
template <typename Real>
Real source_step(int64_t in, int64_t out, std::optional<double> scale_factor, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<Real>(in - 1) / static_cast<Real>(out - 1) : Real(0);
  return scale_factor ? static_cast<Real>(1.0 / *scale_factor) : static_cast<Real>(in) / static_cast<Real>(out);
}

// Where output position j of a dim reads the input under the linear modes: indices i0 and i1 and
// the weight of i1, computed in Real, the type PyTorch's kernels compute them in.
struct LinearSources {
  std::vector<int64_t> first, second;
  std::vector<double> weight;
};
template <typename Real>
LinearSources linear_sources(int64_t in, int64_t out, std::optional<double> scale_factor, bool align_corners) {
  const Real scale = source_step<Real>(in, out, scale_factor, align_corners);
  LinearSources s;
  for (int64_t j = 0; j < out; ++j) {
    const Real source = align_corners ? scale * static_cast<Real>(j)
                                      : std::max(scale * (static_cast<Real>(j) + Real(0.5)) - Real(0.5), Real(0));
    const int64_t i0 = std::min(static_cast<int64_t>(source), in - 1);
    s.first.push_back(i0);
    s.second.push_back(i0 + (i0 < in - 1 ? 1 : 0));
    s.weight.push_back(static_cast<double>(std::clamp(source - static_cast<Real>(i0), Real(0), Real(1))));
  }
  return s;
}

// Where output position j of a dim reads the input under 'bicubic': the four input positions from
// the one before the source point's floor (clamped to the dim), with the cubic convolution
// weights (A = -0.75), in Real as PyTorch's kernels compute them. Unlike the linear modes', the
// source point is not clamped at 0, and a dim that keeps its size is resampled all the same.
struct CubicSources {
  std::array<std::vector<int64_t>, 4> index;
  std::array<std::vector<double>, 4> weight;
};
template <typename Real>
CubicSources cubic_sources(int64_t in, int64_t out, std::optional<double> scale_factor, bool align_corners) {
  constexpr Real A = -0.75;
  auto near = [](Real x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };     // |x| <= 1
  auto far = [](Real x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  const Real scale = source_step<Real>(in, out, scale_factor, align_corners);
  CubicSources s;
  for (int64_t j = 0; j < out; ++j) {
    const Real source = align_corners ? scale * static_cast<Real>(j)
                                      : scale * (static_cast<Real>(j) + Real(0.5)) - Real(0.5);
    // Rounded down in float also for float64 inputs, as PyTorch's kernel rounds it (floorf).
    const int64_t floor = std::min(static_cast<int64_t>(std::floor(static_cast<float>(source))), in - 1);
    const Real t = std::clamp(source - static_cast<Real>(floor), Real(0), Real(1)), rest = 1 - t;
    const std::array<Real, 4> weights = {far(t + 1), near(t), near(rest), far(rest + 1)};
    for (int k = 0; k < 4; ++k) {
      s.index[k].push_back(std::clamp<int64_t>(floor - 1 + k, 0, in - 1));
      s.weight[k].push_back(static_cast<double>(weights[k]));
    }
  }
  return s;
}

// Under antialias, each output position j of a dim is a weighted mean of the input positions its
// filter covers: the triangle (bilinear) or the cubic with A = -0.5 (bicubic), two or four input
// steps wide, widened by the step where the dim shrinks; the weights are normalised to sum to 1.
// In Real and in the order of PyTorch's kernels (its position arithmetic partly in double). The
// spread lists (output, input, weight) for every pair with a place under the filter.
struct Spread {
  std::vector<int64_t> output, input;
  std::vector<double> weight;
};
template <typename Real>
Spread antialias_spread(int64_t in, int64_t out, std::optional<double> scale_factor, bool align_corners, bool cubic) {
  auto filter = [cubic](Real x) -> Real {
    x = std::abs(x);
    if (!cubic) return x < 1 ? 1 - x : Real(0);
    constexpr Real A = -0.5;
    if (x < 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * A;
    return 0;
  };
  const Real scale = source_step<Real>(in, out, scale_factor, align_corners);
  const Real half_width = cubic ? 2 : 1;
  const Real support = scale >= 1 ? half_width * scale : half_width;
  const Real inverse = scale >= 1 ? 1 / scale : Real(1);
  Spread s;
  std::vector<Real> weights;
  for (int64_t j = 0; j < out; ++j) {
    const auto center = static_cast<Real>(static_cast<double>(scale) * (static_cast<double>(j) + 0.5));
    const int64_t first = std::max<int64_t>(static_cast<int64_t>(static_cast<double>(center - support) + 0.5), 0);
    const int64_t end = std::min<int64_t>(static_cast<int64_t>(static_cast<double>(center + support) + 0.5), in);
    weights.clear();
    Real total = 0;
    for (int64_t i = first; i < end; ++i) {
      const double offset = static_cast<double>(static_cast<Real>(i) - center) + 0.5;
      weights.push_back(filter(static_cast<Real>(offset * static_cast<double>(inverse))));
      total += weights.back();
    }
    for (int64_t i = first; i < end; ++i) {
      const Real w = weights[static_cast<size_t>(i - first)];
      s.output.push_back(j);
      s.input.push_back(i);
      s.weight.push_back(static_cast<double>(total != 0 ? w / total : w));
    }
  }
  return s;
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateOptions& o) {
  const char* mode_name = interpolate_mode_name(o.mode_);
  TD_CHECK(x.defined(), "interpolate: the input is an undefined tensor");
  TD_CHECK(x.dim() >= 3 && x.dim() <= 5, "interpolate: expected a 3-D, 4-D or 5-D input [N, C, spatial...], got ",
           shape_str(x.sizes()));
  TD_CHECK(is_floating(x.dtype()), "interpolate: expected a floating input, got ", x.dtype());
  const int64_t spatial = x.dim() - 2;
  const bool cubic = o.mode_ == kBicubic;
  const int64_t needs = o.mode_ == kLinear                ? 3
                        : o.mode_ == kBilinear || cubic   ? 4
                        : o.mode_ == kTrilinear           ? 5
                                                          : x.dim();
  TD_CHECK(x.dim() == needs, "interpolate: mode '", mode_name, "' takes a ", needs, "-D input, got ",
           shape_str(x.sizes()));
  TD_CHECK(o.size_.has_value() != o.scale_factor_.has_value(), "interpolate: give exactly one of size and ",
           "scale_factor");
  TD_CHECK(!o.size_ || !o.recompute_scale_factor_, "interpolate: recompute_scale_factor is for a scale_factor, ",
           "not a size (", shape_str(*o.size_), ")");
  const bool linear = o.mode_ == kLinear || o.mode_ == kBilinear || o.mode_ == kTrilinear;
  TD_CHECK(linear || cubic || !o.align_corners_.has_value(),
           "interpolate: align_corners is for the linear modes and bicubic only, not '", mode_name, "'");
  TD_CHECK(!o.antialias_ || o.mode_ == kBilinear || cubic, "interpolate: antialias is for modes 'bilinear' and ",
           "'bicubic' only, not '", mode_name, "'");
  const size_t given = o.size_ ? o.size_->size() : o.scale_factor_->size();
  TD_CHECK(given == 1 || given == static_cast<size_t>(spatial), "interpolate: ", o.size_ ? "size" : "scale_factor",
           " must have one value or ", spatial, " (one per spatial dim), got ", given);
  std::vector<int64_t> in(x.sizes().end() - spatial, x.sizes().end()), out(spatial);
  std::vector<std::optional<double>> scales(spatial);
  for (int64_t d = 0; d < spatial; ++d) {
    const size_t k = given == 1 ? 0 : static_cast<size_t>(d);
    if (o.size_) {
      out[d] = (*o.size_)[k];
    } else {
      const double factor = (*o.scale_factor_)[k];
      TD_CHECK(factor > 0, "interpolate: scale_factor must be positive, got ", factor);
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * factor));
      if (!o.recompute_scale_factor_) scales[d] = factor;
    }
  }
  for (int64_t d = 0; d < spatial; ++d) {
    TD_CHECK(in[d] > 0 && out[d] > 0, "interpolate: input and output sizes must be positive, got input ",
             shape_str(in), " and output ", shape_str(out));
  }
  if (o.mode_ == kArea) {
    return spatial == 1 ? adaptive_avg_pool1d(x, out) : spatial == 2 ? adaptive_avg_pool2d(x, out)
                                                                     : adaptive_avg_pool3d(x, out);
  }
  // 16-bit inputs interpolate in float32, as PyTorch's kernels do, and round once; its 3-D and
  // 5-D linear kernels and its bicubic kernel first round each weight to the input's dtype.
  const bool half = is_16bit_float(x.dtype()), round_weights = half && (spatial != 2 || cubic) && !o.antialias_;
  const bool align = o.align_corners_.value_or(false), float64 = x.dtype() == kFloat64;
  Tensor y = half ? x.to(kFloat32) : x;
  // weights as a tensor along dim (rounded to x's dtype where PyTorch rounds them).
  auto along = [&](const std::vector<double>& weights, int64_t dim) {
    Shape shape(y.dim(), 1);
    shape[dim] = static_cast<int64_t>(weights.size());
    Tensor w = tensor(weights).to(x.device(), y.dtype()).view(shape);
    return round_weights ? w.to(x.dtype()).to(kFloat32) : w;
  };
  auto positions = [&](const std::vector<int64_t>& index) { return tensor(index).to(x.device()); };
  for (int64_t d = spatial - 1; d >= 0; --d) {
    const int64_t dim = 2 + d;
    // PyTorch's shortcut: each position reads itself (for the linear modes whatever the scale).
    if ((linear || o.antialias_) && out[d] == in[d]) continue;
    if (o.antialias_) {
      const Spread s = float64 ? antialias_spread<double>(in[d], out[d], scales[d], align, cubic)
                               : antialias_spread<float>(in[d], out[d], scales[d], align, cubic);
      // Each output position adds up its own terms, in order; no term reads outside the filter, so
      // an infinity there cannot turn the output into NaN through a zero weight.
      const Tensor terms = y.index_select(dim, positions(s.input)) * along(s.weight, dim);
      Shape shape = y.sizes();
      shape[dim] = out[d];
      y = zeros(shape, TensorOptions(y.dtype()).device(y.device())).index_add(dim, positions(s.output), terms);
    } else if (cubic) {
      const CubicSources s = float64 ? cubic_sources<double>(in[d], out[d], scales[d], align)
                                     : cubic_sources<float>(in[d], out[d], scales[d], align);
      Tensor sum = y.index_select(dim, positions(s.index[0])) * along(s.weight[0], dim);
      for (int k = 1; k < 4; ++k) sum = sum + y.index_select(dim, positions(s.index[k])) * along(s.weight[k], dim);
      y = sum;
    } else if (linear) {
      const LinearSources s = float64 ? linear_sources<double>(in[d], out[d], scales[d], align)
                                      : linear_sources<float>(in[d], out[d], scales[d], align);
      Tensor weight = along(s.weight, dim);
      // PyTorch's order: w0 * x[i0] + w1 * x[i1], with w0 = 1 - w1 (rounded as w1 is).
      Tensor keep = 1 - weight;
      if (round_weights) keep = keep.to(x.dtype()).to(kFloat32);
      y = y.index_select(dim, positions(s.first)) * keep + y.index_select(dim, positions(s.second)) * weight;
    } else {
      std::vector<int64_t> sources(out[d]);
      for (int64_t j = 0; j < out[d]; ++j) {
        sources[j] = nearest_source(o.mode_, j, in[d], out[d], scales[d], spatial, float64);
      }
      y = y.index_select(dim, positions(sources));
    }
  }
  if (half) return y.to(x.dtype());
  // Every dim kept as it was: a copy, not the input itself, as PyTorch's.
  return y.is_same(x) ? x.clone() : y;
}

namespace {

// conv1d's operands, checked as conv1d (conv2d runs it, and would name itself and 4-D shapes).
void check_conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups) {
  TD_CHECK(x.defined() && weight.defined(), "conv1d: input and weight must be defined");
  TD_CHECK(x.dim() == 2 || x.dim() == 3, "conv1d: expected a 2-D [C, L] or 3-D [N, C, L] input, got shape ",
           shape_str(x.sizes()));
  TD_CHECK(weight.dim() == 3, "conv1d: weight must be 3-D [out, in / groups, k], got ", shape_str(weight.sizes()));
  TD_CHECK(groups >= 1, "conv1d: groups must be positive, got ", groups);
  check_one_dtype("conv1d", x, weight, bias);
  const int64_t c = x.size(-2), out_channels = weight.size(0);
  TD_CHECK(c == weight.size(1) * groups, "conv1d: input ", shape_str(x.sizes()), " has ", c, " channels but weight ",
           shape_str(weight.sizes()), " with groups=", groups, " expects ", weight.size(1) * groups);
  TD_CHECK(out_channels % groups == 0, "conv1d: out channels ", out_channels, " not divisible by groups ", groups);
  TD_CHECK(!bias.defined() || bias.sizes() == Shape{out_channels}, "conv1d: bias must have shape [", out_channels,
           "], got ", shape_str(bias.defined() ? bias.sizes() : Shape{}));
}

int64_t one_value(IntList v, const char* op, const char* name) {
  TD_CHECK(v.size() == 1, op, ": ", name, " must have one value, got ", v.size());
  return v[0];
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
              IntList dilation, int64_t groups) {
  if (amp::takes_lower_precision({&x, &weight, &bias})) {
    amp::SuspendAutocast inside;
    return conv1d(amp::to_lower_precision(x), amp::to_lower_precision(weight), amp::to_lower_precision(bias), stride,
                  padding, dilation, groups);
  }
  check_conv1d(x, weight, bias, groups);
  const int64_t s = one_value(stride, "conv1d", "stride"), p = one_value(padding, "conv1d", "padding"),
                d = one_value(dilation, "conv1d", "dilation");
  TD_CHECK(s > 0, "conv1d: stride must be positive, got ", s);
  TD_CHECK(d > 0, "conv1d: dilation must be positive, got ", d);
  TD_CHECK(p >= 0, "conv1d: padding must not be negative, got ", p);
  const int64_t length = x.size(-1), span = d * (weight.size(2) - 1) + 1;
  TD_CHECK(length + 2 * p >= span, "conv1d: the kernel (", weight.size(2), ", dilation ", d,
           ") does not fit the padded input ", shape_str(x.sizes()), " (padding ", p, ")");
  return conv2d(x.unsqueeze(-2), weight.unsqueeze(2), bias, {1, s}, {0, p}, {1, d}, groups).squeeze(-2);
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, PaddingMode padding,
              IntList dilation, int64_t groups) {
  TD_CHECK(weight.defined() && weight.dim() == 3, "conv1d: weight must be 3-D [out, in / groups, k], got ",
           weight.defined() ? shape_str(weight.sizes()) : std::string("an undefined tensor"));
  const int64_t s = one_value(stride, "conv1d", "stride"), d = one_value(dilation, "conv1d", "dilation");
  if (padding == kValid) return conv1d(x, weight, bias, s, 0, d, groups);
  TD_CHECK(s == 1, "conv1d: padding='same' is not supported for strided convolutions (stride ", s, ")");
  TD_CHECK(d > 0, "conv1d: dilation must be positive, got ", d);
  // The larger half on both sides; where the total is odd, the first position is one too many.
  const auto [before, after] = same_padding(weight.size(2), d);
  const Tensor out = conv1d(x, weight, bias, 1, after, d, groups);
  return before == after ? out : out.narrow(-1, 1, out.size(-1) - 1).contiguous();
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                        IntList output_padding, int64_t groups, IntList dilation) {
  constexpr const char* op = "conv_transpose1d";
  TD_CHECK(x.defined() && weight.defined(), op, ": input and weight must be defined");
  TD_CHECK(x.dim() == 2 || x.dim() == 3, op, ": expected a 2-D [C, L] or 3-D [N, C, L] input, got shape ",
           shape_str(x.sizes()));
  TD_CHECK(weight.dim() == 3, op, ": weight must be 3-D [in, out / groups, k], got ", shape_str(weight.sizes()));
  TD_CHECK(groups >= 1, op, ": groups must be positive, got ", groups);
  check_one_dtype(op, x, weight, bias);
  const int64_t in_channels = weight.size(0), out_channels = weight.size(1) * groups;
  TD_CHECK(x.size(-2) == in_channels && in_channels % groups == 0, op, ": input ", shape_str(x.sizes()), " has ",
           x.size(-2), " channels; weight ", shape_str(weight.sizes()), " with groups=", groups, " expects ",
           in_channels, " (divisible by groups)");
  TD_CHECK(!bias.defined() || bias.sizes() == Shape{out_channels}, op, ": bias must have shape [", out_channels,
           "], got ", shape_str(bias.defined() ? bias.sizes() : Shape{}));
  const int64_t s = one_value(stride, op, "stride"), p = one_value(padding, op, "padding");
  const int64_t extra = one_value(output_padding, op, "output_padding"), d = one_value(dilation, op, "dilation");
  TD_CHECK(s > 0 && d > 0 && p >= 0, op, ": stride (", s, ") and dilation (", d, ") must be positive, padding (", p,
           ") not negative");
  TD_CHECK(extra >= 0 && (extra < s || extra < d), op, ": output_padding (", extra,
           ") must be smaller than the stride (", s, ") or the dilation (", d, ")");
  TD_CHECK(conv_transpose_output_size(x.size(-1), weight.size(2), s, p, d, extra) > 0, op, ": the input ",
           shape_str(x.sizes()), " gives no output positions");
  return conv_transpose2d(x.unsqueeze(-2), weight.unsqueeze(2), bias, {1, s}, {0, p}, {0, extra}, groups, {1, d})
      .squeeze(-2);
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                        IntList output_padding, int64_t groups, IntList dilation) {
  if (amp::takes_lower_precision({&x, &weight, &bias})) {
    amp::SuspendAutocast inside;
    return conv_transpose2d(amp::to_lower_precision(x), amp::to_lower_precision(weight),
                            amp::to_lower_precision(bias), stride, padding, output_padding, groups, dilation);
  }
  constexpr const char* op = "conv_transpose2d";
  TD_CHECK(x.defined() && weight.defined(), op, ": input and weight must be defined");
  TD_CHECK(x.dim() == 3 || x.dim() == 4, op, ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape ",
           shape_str(x.sizes()));
  TD_CHECK(weight.dim() == 4, op, ": weight must be 4-D [in, out / groups, kh, kw], got ", shape_str(weight.sizes()));
  TD_CHECK(groups >= 1, op, ": groups must be positive, got ", groups);
  check_one_dtype(op, x, weight, bias);
  TD_CHECK(weight.device() == x.device() && (!bias.defined() || bias.device() == x.device()), op, ": input (",
           x.device(), "), weight (", weight.device(), ") and bias (",
           bias.defined() ? bias.device().str() : std::string("none"), ") must be on one device");
  Tensor x4 = x.dim() == 3 ? x.unsqueeze(0) : x;
  const int64_t in_channels = weight.size(0), group_out = weight.size(1), out_channels = group_out * groups;
  TD_CHECK(in_channels % groups == 0, op, ": weight ", shape_str(weight.sizes()), " has ", in_channels,
           " input channels, not divisible by groups ", groups);
  TD_CHECK(x4.size(1) == in_channels, op, ": input ", shape_str(x.sizes()), " has ", x4.size(1),
           " channels but weight ", shape_str(weight.sizes()), " expects ", in_channels);
  TD_CHECK(!bias.defined() || bias.sizes() == Shape{out_channels}, op, ": bias must have shape [", out_channels,
           "], got ", shape_str(bias.defined() ? bias.sizes() : Shape{}));
  const auto s = two_values(op, stride, "stride"), p = two_values(op, padding, "padding");
  const auto extra = two_values(op, output_padding, "output_padding"), d = two_values(op, dilation, "dilation");
  const std::array<int64_t, 2> kernel{weight.size(2), weight.size(3)}, in{x4.size(2), x4.size(3)};
  std::array<int64_t, 2> out{}, blocks{};
  for (int i = 0; i < 2; ++i) {
    TD_CHECK(s[i] > 0, op, ": stride must be positive, got (", s[0], ", ", s[1], ")");
    TD_CHECK(d[i] > 0, op, ": dilation must be positive, got (", d[0], ", ", d[1], ")");
    TD_CHECK(p[i] >= 0, op, ": padding must not be negative, got (", p[0], ", ", p[1], ")");
    TD_CHECK(extra[i] >= 0 && (extra[i] < s[i] || extra[i] < d[i]), op, ": output_padding (", extra[0], ", ",
             extra[1], ") must be smaller than the stride (", s[0], ", ", s[1], ") or the dilation (", d[0], ", ",
             d[1], ")");
    TD_CHECK(in[i] > 0, op, ": the input ", shape_str(x.sizes()), " has no rows or columns to spread");
    out[i] = conv_transpose_output_size(in[i], kernel[i], s[i], p[i], d[i], extra[i]);
    // The kernel positions col2im folds: the input's, and where output_padding reaches past a
    // whole stride (it may, below the dilation), more, whose columns are zeros.
    blocks[i] = ((in[i] - 1) * s[i] + extra[i]) / s[i] + 1;
  }
  TD_CHECK(out[0] > 0 && out[1] > 0, op, ": the input ", shape_str(x.sizes()), " gives an output of ", out[0], "x",
           out[1], ", which is too small");
  for (int i = 0; i < 2; ++i) {
    if (blocks[i] == in[i]) continue;
    Shape zeros_shape = x4.sizes();
    zeros_shape[2 + i] = blocks[i] - in[i];
    x4 = cat({x4, zeros(zeros_shape, x4.options())}, 2 + i);
  }
  // Every image's pixels side by side, [Cin, N*L]: one matrix product per group gives each
  // pixel's patch, [Cout*kh*kw, N*L], which col2im folds into the output, summing where patches
  // overlap (conv2d's gradient with respect to its input, which runs the same steps).
  const int64_t n = x4.size(0), field = group_out * kernel[0] * kernel[1], group_in = in_channels / groups;
  const Tensor pixels = x4.transpose(0, 1).reshape({in_channels, n * blocks[0] * blocks[1]});
  std::vector<Tensor> patches;
  for (int64_t g = 0; g < groups; ++g) {
    const Tensor wg = weight.narrow(0, g * group_in, group_in).reshape({group_in, field});
    patches.push_back(mm(wg.t(), groups == 1 ? pixels : pixels.narrow(0, g * group_in, group_in)));
  }
  Tensor y = col2im_matrix(groups == 1 ? patches[0] : cat(patches, 0), n, {out[0], out[1]}, {kernel[0], kernel[1]},
                           {d[0], d[1]}, {p[0], p[1]}, {s[0], s[1]});
  if (bias.defined()) y = y + bias.view({1, out_channels, 1, 1});
  return x.dim() == 3 ? y.squeeze(0) : y;
}

namespace {

// A depth, height and width given as one value for all three or as three.
std::array<int64_t, 3> three_values(const char* op, IntList v, const char* name) {
  TD_CHECK(v.size() == 1 || v.size() == 3, op, ": ", name, " must have one or three values, got ", v.size());
  return {v[0], v[v.size() / 2], v[v.size() - 1]};
}

// conv3d's and conv_transpose3d's input and weight: 4-D or 5-D, and 5-D, of one dtype and device.
void check_conv3d_operands(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t groups,
                           const char* weight_layout) {
  TD_CHECK(x.defined() && weight.defined(), op, ": input and weight must be defined");
  TD_CHECK(x.dim() == 4 || x.dim() == 5, op, ": expected a 4-D [C, D, H, W] or 5-D [N, C, D, H, W] input, got shape ",
           shape_str(x.sizes()));
  TD_CHECK(weight.dim() == 5, op, ": weight must be 5-D ", weight_layout, ", got ", shape_str(weight.sizes()));
  TD_CHECK(groups >= 1, op, ": groups must be positive, got ", groups);
  check_one_dtype(op, x, weight, bias);
  TD_CHECK(weight.device() == x.device() && (!bias.defined() || bias.device() == x.device()), op, ": input (",
           x.device(), "), weight (", weight.device(), ") and bias (",
           bias.defined() ? bias.device().str() : std::string("none"), ") must be on one device");
}

}  // namespace

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
              IntList dilation, int64_t groups) {
  if (amp::takes_lower_precision({&x, &weight, &bias})) {
    amp::SuspendAutocast inside;
    return conv3d(amp::to_lower_precision(x), amp::to_lower_precision(weight), amp::to_lower_precision(bias), stride,
                  padding, dilation, groups);
  }
  constexpr const char* op = "conv3d";
  check_conv3d_operands(op, x, weight, bias, groups, "[out, in / groups, kd, kh, kw]");
  const Tensor x5 = x.dim() == 4 ? x.unsqueeze(0) : x;
  const int64_t n = x5.size(0), c = x5.size(1), out_channels = weight.size(0);
  TD_CHECK(c == weight.size(1) * groups, op, ": input ", shape_str(x.sizes()), " has ", c, " channels but weight ",
           shape_str(weight.sizes()), " with groups=", groups, " expects ", weight.size(1) * groups);
  TD_CHECK(out_channels % groups == 0, op, ": out channels ", out_channels, " not divisible by groups ", groups);
  TD_CHECK(!bias.defined() || bias.sizes() == Shape{out_channels}, op, ": bias must have shape [", out_channels,
           "], got ", shape_str(bias.defined() ? bias.sizes() : Shape{}));
  const auto s = three_values(op, stride, "stride"), p = three_values(op, padding, "padding");
  const auto d = three_values(op, dilation, "dilation");
  std::array<int64_t, 3> out{};
  for (int i = 0; i < 3; ++i) {
    TD_CHECK(s[i] > 0 && d[i] > 0 && p[i] >= 0, op, ": stride ", shape_str({s[0], s[1], s[2]}), " and dilation ",
             shape_str({d[0], d[1], d[2]}), " must be positive, padding ", shape_str({p[0], p[1], p[2]}),
             " not negative");
    const int64_t in = x5.size(2 + i), span = d[i] * (weight.size(2 + i) - 1) + 1;
    TD_CHECK(in + 2 * p[i] >= span, op, ": the kernel ",
             shape_str(Shape(weight.sizes().begin() + 2, weight.sizes().end())), " (dilation ",
             shape_str({d[0], d[1], d[2]}), ") does not fit the padded input ", shape_str(x.sizes()), " (padding ",
             shape_str({p[0], p[1], p[2]}), ")");
    out[i] = (in + 2 * p[i] - span) / s[i] + 1;
  }
  // Output depth od reads padded depths od * stride + k * dilation for k < kd: those kd slices of
  // every image, side by side as channels (channel c's k-th slice at c * kd + k, so each group's
  // channels stay together), make a conv2d whose weight is [O, C / groups * kd, kh, kw].
  const int64_t kd = weight.size(2);
  std::vector<int64_t> depths;
  for (int64_t od = 0; od < out[0]; ++od) {
    for (int64_t k = 0; k < kd; ++k) depths.push_back(od * s[0] + k * d[0]);
  }
  const Tensor padded = p[0] > 0 ? pad(x5, {0, 0, 0, 0, p[0], p[0]}) : x5;
  const int64_t h = x5.size(3), w = x5.size(4);
  const Tensor slices = padded.index_select(2, tensor(depths).to(x.device()))
                            .view({n, c, out[0], kd, h, w})
                            .permute({0, 2, 1, 3, 4, 5})
                            .reshape({n * out[0], c * kd, h, w});
  const Tensor planar_weight = weight.reshape({out_channels, weight.size(1) * kd, weight.size(3), weight.size(4)});
  const Tensor y = conv2d(slices, planar_weight, bias, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, groups)
                       .view({n, out[0], out_channels, out[1], out[2]})
                       .transpose(1, 2)
                       .contiguous();
  return x.dim() == 4 ? y.squeeze(0) : y;
}

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, PaddingMode padding,
              IntList dilation, int64_t groups) {
  if (padding == kValid) return conv3d(x, weight, bias, stride, 0, dilation, groups);
  TD_CHECK(weight.defined() && weight.dim() == 5, "conv3d: weight must be 5-D [out, in / groups, kd, kh, kw], got ",
           weight.defined() ? shape_str(weight.sizes()) : std::string("an undefined tensor"));
  const auto strides = three_values("conv3d", stride, "stride"),
             dilations = three_values("conv3d", dilation, "dilation");
  TD_CHECK(strides == (std::array<int64_t, 3>{1, 1, 1}), "conv3d: padding='same' is not supported for strided ",
           "convolutions (stride ", shape_str({strides[0], strides[1], strides[2]}), ")");
  // As conv2d's: each dim padded by its larger half, the extra first position dropped.
  std::array<int64_t, 3> before{}, after{};
  for (int i = 0; i < 3; ++i) {
    TD_CHECK(dilations[i] > 0, "conv3d: dilation must be positive, got ",
             shape_str({dilations[0], dilations[1], dilations[2]}));
    std::tie(before[i], after[i]) = same_padding(weight.size(2 + i), dilations[i]);
  }
  Tensor out = conv3d(x, weight, bias, 1, after, dilation, groups);
  for (int i = 0; i < 3; ++i) {
    const int64_t dim = out.dim() - 3 + i;
    if (after[i] != before[i]) out = out.narrow(dim, 1, out.size(dim) - 1);
  }
  return out.contiguous();
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                        IntList output_padding, int64_t groups, IntList dilation) {
  if (amp::takes_lower_precision({&x, &weight, &bias})) {
    amp::SuspendAutocast inside;
    return conv_transpose3d(amp::to_lower_precision(x), amp::to_lower_precision(weight), amp::to_lower_precision(bias),
                            stride, padding, output_padding, groups, dilation);
  }
  constexpr const char* op = "conv_transpose3d";
  check_conv3d_operands(op, x, weight, bias, groups, "[in, out / groups, kd, kh, kw]");
  const Tensor x5 = x.dim() == 4 ? x.unsqueeze(0) : x;
  const int64_t in_channels = weight.size(0), group_out = weight.size(1), out_channels = group_out * groups;
  TD_CHECK(x5.size(1) == in_channels && in_channels % groups == 0, op, ": input ", shape_str(x.sizes()), " has ",
           x5.size(1), " channels; weight ", shape_str(weight.sizes()), " with groups=", groups, " expects ",
           in_channels, " (divisible by groups)");
  TD_CHECK(!bias.defined() || bias.sizes() == Shape{out_channels}, op, ": bias must have shape [", out_channels,
           "], got ", shape_str(bias.defined() ? bias.sizes() : Shape{}));
  const auto s = three_values(op, stride, "stride"), p = three_values(op, padding, "padding");
  const auto extra = three_values(op, output_padding, "output_padding"), d = three_values(op, dilation, "dilation");
  std::array<int64_t, 3> out{};
  for (int i = 0; i < 3; ++i) {
    TD_CHECK(s[i] > 0 && d[i] > 0 && p[i] >= 0, op, ": stride ", shape_str({s[0], s[1], s[2]}), " and dilation ",
             shape_str({d[0], d[1], d[2]}), " must be positive, padding ", shape_str({p[0], p[1], p[2]}),
             " not negative");
    TD_CHECK(extra[i] >= 0 && (extra[i] < s[i] || extra[i] < d[i]), op, ": output_padding ",
             shape_str({extra[0], extra[1], extra[2]}), " must be smaller than the stride ",
             shape_str({s[0], s[1], s[2]}), " or the dilation ", shape_str({d[0], d[1], d[2]}));
    TD_CHECK(x5.size(2 + i) > 0, op, ": the input ", shape_str(x.sizes()), " has nothing to spread");
    out[i] = conv_transpose_output_size(x5.size(2 + i), weight.size(2 + i), s[i], p[i], d[i], extra[i]);
    TD_CHECK(out[i] > 0, op, ": the input ", shape_str(x.sizes()), " gives an output of ",
             shape_str({out[0], out[1], out[2]}), ", which is too small");
  }
  // Every input depth slice spread by one conv_transpose2d whose output channels are (channel,
  // k) for the kd kernel depths: slice id's k-th result lands at depth id * stride + k * dilation
  // of the unpadded output, summed where several land; then the padding is cut off both ends.
  const int64_t n = x5.size(0), depth = x5.size(2), kd = weight.size(2);
  const Tensor planes = x5.transpose(1, 2).reshape({n * depth, in_channels, x5.size(3), x5.size(4)});
  const Tensor planar_weight = weight.reshape({in_channels, group_out * kd, weight.size(3), weight.size(4)});
  Tensor spread = conv_transpose2d(planes, planar_weight, Tensor(), {s[1], s[2]}, {p[1], p[2]}, {extra[1], extra[2]},
                                   groups, {d[1], d[2]});
  spread = spread.view({n, depth, out_channels, kd, out[1], out[2]})
               .permute({0, 2, 1, 3, 4, 5})
               .reshape({n, out_channels, depth * kd, out[1], out[2]});
  std::vector<int64_t> targets;
  for (int64_t id = 0; id < depth; ++id) {
    for (int64_t k = 0; k < kd; ++k) targets.push_back(id * s[0] + k * d[0]);
  }
  const int64_t full_depth = out[0] + 2 * p[0];
  const Tensor where_to = tensor(targets).to(x.device()).view({1, 1, depth * kd, 1, 1}).expand(spread.sizes());
  Tensor y = zeros({n, out_channels, full_depth, out[1], out[2]}, spread.options())
                 .scatter_add(2, where_to.contiguous(), spread);
  if (p[0] > 0) y = y.narrow(2, p[0], out[0]).contiguous();
  if (bias.defined()) y = y + bias.view({1, out_channels, 1, 1, 1});
  return x.dim() == 4 ? y.squeeze(0) : y;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, std::optional<double> momentum, double eps,
                  int64_t batches_tracked, const BatchStatsSync& sync) {
  TD_CHECK(x.defined() && x.dim() >= 2, "batch_norm: expected an input of at least 2 dims [N, C, ...], got ",
           x.defined() ? shape_str(x.sizes()) : "undefined");
  const int64_t channels = x.size(1);
  // Everything is checked before the running statistics change: a failure halfway through
  // their update would leave them scaled by (1 - momentum) and nothing added.
  auto check_per_channel = [&](const Tensor& t, const char* what) {
    if (!t.defined()) return;
    TD_CHECK(t.sizes() == Shape{channels} && is_floating(t.dtype()) && t.device() == x.device(), "batch_norm: ", what,
             " must be a floating tensor of shape [", channels, "] on ", x.device(), " (the input is ",
             shape_str(x.sizes()), "), got ", t.dtype(), " ", shape_str(t.sizes()), " on ", t.device());
  };
  TD_CHECK(running_mean.defined() == running_var.defined(),
           "batch_norm: running_mean and running_var go together, but only one is defined");
  check_per_channel(running_mean, "running_mean");
  check_per_channel(running_var, "running_var");
  check_per_channel(weight, "weight");
  check_per_channel(bias, "bias");
  // One kernel in PyTorch, on none of autocast's lists: the ops it is written with here are not
  // autocast either (rsqrt and the sync's sums would turn float32 on a GPU).
  std::optional<amp::SuspendAutocast> not_autocast;
  if (amp::is_active(x.device().type())) not_autocast.emplace();
  if (mixed_16bit(x, {&running_mean, &running_var, &weight, &bias})) {
    return batch_norm(x.to(kFloat32), running_mean, running_var, weight, bias, training, momentum, eps, batches_tracked,
                      sync)
        .to(x.dtype());
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d != 1) dims.push_back(d);
  }
  const Shape shape = channel_shape(x, channels);
  Tensor out;
  if (training) {
    int64_t per_channel = x.numel() / std::max<int64_t>(channels, 1);
    Tensor mean = x.mean(dims, true);
    Tensor var = x.var(dims, 0, true);
    if (sync) {
      BatchStats total = sync({mean, var, per_channel});
      mean = total.mean;
      var = total.var;
      per_channel = total.count;
    }
    TD_CHECK(per_channel > 1, "batch_norm: expected more than 1 value per channel when training, got input of shape ",
             shape_str(x.sizes()));
    if (running_mean.defined()) {
      NoGradGuard no_grad;
      double m = momentum ? *momentum : 1.0 / static_cast<double>(std::max<int64_t>(batches_tracked, 1));
      Tensor rm = running_mean, rv = running_var;
      rm.mul_(1 - m).add_(mean.detach().reshape({channels}).to(rm.dtype()), m);
      Tensor unbiased = var.detach().reshape({channels}) * (static_cast<double>(per_channel) / (per_channel - 1));
      rv.mul_(1 - m).add_(unbiased.to(rv.dtype()), m);
    }
    out = (x - mean) / sqrt(var + eps);
  } else {
    TD_CHECK(running_mean.defined() && running_var.defined(),
             "batch_norm: evaluation without running statistics (track_running_stats=false) needs training=true");
    out = (x - running_mean.view(shape)) * rsqrt(running_var.view(shape) + eps);
  }
  if (weight.defined()) out = out * weight.view(shape);
  if (bias.defined()) out = out + bias.view(shape);
  return out;
}

Tensor layer_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  TD_CHECK(k >= 1, "layer_norm: normalized_shape must have at least one dim, got []");
  TD_CHECK(x.defined() && x.dim() >= k &&
               Shape(x.sizes().end() - k, x.sizes().end()) == normalized_shape.vec(),
           "layer_norm: input of shape ", x.defined() ? shape_str(x.sizes()) : "undefined",
           " does not end in the normalized shape ", shape_str(normalized_shape.vec()));
  // As PyTorch: the affine parameters have the normalized shape exactly (broadcasting one of
  // another shape, e.g. [1], would hide a mistake).
  for (const auto& [p, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    TD_CHECK(!p->defined() || p->sizes() == normalized_shape.vec(), "layer_norm: expected ", what,
             " of the normalized shape ", shape_str(normalized_shape.vec()), ", got ", shape_str(p->sizes()));
  }
  if (amp::takes_float32(amp::Float32On::kCuda, {&x, &weight, &bias})) {  // on autocast's float32 list for GPUs
    amp::SuspendAutocast inside;
    return layer_norm(amp::to_float32(x), normalized_shape, amp::to_float32(weight), amp::to_float32(bias), eps);
  }
  if (mixed_16bit(x, {&weight, &bias})) return layer_norm(x.to(kFloat32), normalized_shape, weight, bias, eps).to(x.dtype());
  auto fits = [&](const Tensor& p) { return !p.defined() || (p.dtype() == x.dtype() && p.device() == x.device()); };
  // The fused kernel takes the common case; parameters of another dtype or device promote and
  // move as in the op-by-op form below.
  if (k > 0 && numel_of(normalized_shape.vec()) > 0 && is_floating(x.dtype()) && fits(weight) && fits(bias)) {
    return fused_layer_norm(x, k, weight, bias, eps);
  }
  std::vector<int64_t> dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor mean = x.mean(dims, true);
  Tensor var = x.var(dims, 0, true);
  Tensor out = (x - mean) / sqrt(var + eps);
  if (weight.defined()) out = out * weight;
  if (bias.defined()) out = out + bias;
  return out;
}

Tensor rms_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight, std::optional<double> eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  TD_CHECK(x.defined() && x.dim() >= k && Shape(x.sizes().end() - k, x.sizes().end()) == normalized_shape.vec(),
           "rms_norm: input of shape ", x.defined() ? shape_str(x.sizes()) : "undefined",
           " does not end in the normalized shape ", shape_str(normalized_shape.vec()));
  TD_CHECK(is_floating(x.dtype()), "rms_norm: expected a floating input, got dtype ", x.dtype());
  TD_CHECK(!weight.defined() || weight.sizes() == normalized_shape.vec(),
           "rms_norm: expected weight of the normalized shape ", shape_str(normalized_shape.vec()), ", got ",
           shape_str(weight.sizes()));
  // The machine epsilon of the dtype it computes in (float32 for the 16-bit ones), as PyTorch's default.
  const double epsilon = eps ? *eps : x.dtype() == kFloat64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  const bool narrow = x.dtype() == kFloat16 || x.dtype() == kBFloat16;
  const Tensor wide = narrow ? x.to(kFloat32) : x;
  Shape dims;
  for (int64_t d = x.dim() - k; d < x.dim(); ++d) dims.push_back(d);
  Tensor out = k == 0 ? wide * rsqrt(wide * wide + epsilon) : wide * rsqrt((wide * wide).mean(dims, true) + epsilon);
  if (weight.defined()) out = out * weight;
  return narrow && out.dtype() == kFloat32 ? out.to(x.dtype()) : out;
}

Tensor dropout(const Tensor& x, double p, bool training) {
  TD_CHECK(p >= 0 && p <= 1, "dropout: probability must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return x * 0;
  return fused_dropout(x, p);
}

Tensor& dropout_(Tensor& x, double p, bool training) {
  TD_CHECK(p >= 0 && p <= 1, "dropout_: probability must be in [0, 1], got ", p);
  if (!training || p == 0) return x;  // nothing written: a leaf that requires grad may pass, as in PyTorch
  check_in_place("dropout_", x);
  if (p == 1) return x.mul_(0);
  return fused_dropout_(x, p);
}

namespace {

// One draw per channel. A 3-D input to dropout2d is [N, C, L], as PyTorch reads it (for now,
// with a warning there); the other inputs of a dimension PyTorch deprecates are refused. In place,
// x (a handle to the caller's tensor) is written.
Tensor channel_dropout(const char* op, Tensor x, double p, bool training, int64_t spatial_dims, bool in_place) {
  TD_CHECK(p >= 0 && p <= 1, op, ": probability must be in [0, 1], got ", p);
  TD_CHECK(x.defined() && (x.dim() == spatial_dims + 1 || x.dim() == spatial_dims + 2), op, ": expected a ",
           spatial_dims + 1, "-D or ", spatial_dims + 2, "-D input ([C, ...] or [N, C, ...], ", spatial_dims,
           " spatial), got ", x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  TD_CHECK(is_floating(x.dtype()), op, ": expected a floating input, got ", x.dtype());
  if (!training || p == 0) return x;
  if (in_place) check_in_place(op, x);
  if (p == 1) return in_place ? x.mul_(0) : x * 0;
  const bool batched = x.dim() == spatial_dims + 2 || (spatial_dims == 2 && x.dim() == 3);
  Shape channels = x.sizes();
  std::fill(channels.begin() + (batched ? 2 : 1), channels.end(), 1);
  const Tensor keep = bernoulli(empty(channels, TensorOptions(x.dtype()).device(x.device())), 1 - p);
  return in_place ? x.mul_(keep / (1 - p)) : x * (keep / (1 - p));
}

}  // namespace

Tensor dropout1d(const Tensor& x, double p, bool training) {
  return channel_dropout("dropout1d", x, p, training, 1, false);
}
Tensor dropout2d(const Tensor& x, double p, bool training) {
  return channel_dropout("dropout2d", x, p, training, 2, false);
}
Tensor dropout3d(const Tensor& x, double p, bool training) {
  return channel_dropout("dropout3d", x, p, training, 3, false);
}
Tensor& dropout1d_(Tensor& x, double p, bool training) {
  channel_dropout("dropout1d_", x, p, training, 1, true);
  return x;
}
Tensor& dropout2d_(Tensor& x, double p, bool training) {
  channel_dropout("dropout2d_", x, p, training, 2, true);
  return x;
}
Tensor& dropout3d_(Tensor& x, double p, bool training) {
  channel_dropout("dropout3d_", x, p, training, 3, true);
  return x;
}

Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  TD_CHECK(x.defined() && x.dim() >= 3, "pixel_shuffle: expected an input [..., C, H, W], got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  TD_CHECK(r > 0, "pixel_shuffle: upscale_factor must be positive, got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  TD_CHECK(c % (r * r) == 0, "pixel_shuffle: the input ", shape_str(x.sizes()), " has ", c,
           " channels, not divisible by upscale_factor^2 (", r * r, ")");
  const Shape batch(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t d = batch.size();
  Shape split = batch, out = batch;
  for (int64_t v : {c / (r * r), r, r, h, w}) split.push_back(v);
  for (int64_t v : {c / (r * r), h * r, w * r}) out.push_back(v);
  // [..., C, r, r, H, W] -> [..., C, H, r, W, r]
  std::vector<int64_t> order(d);
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t v : {0, 3, 1, 4, 2}) order.push_back(d + v);
  return x.reshape(split).permute(order).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  TD_CHECK(x.defined() && x.dim() >= 3, "pixel_unshuffle: expected an input [..., C, H, W], got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  TD_CHECK(r > 0, "pixel_unshuffle: downscale_factor must be positive, got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  TD_CHECK(h % r == 0 && w % r == 0, "pixel_unshuffle: the input ", shape_str(x.sizes()), "'s height and width must ",
           "be divisible by downscale_factor (", r, ")");
  const Shape batch(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t d = batch.size();
  Shape split = batch, out = batch;
  for (int64_t v : {c, h / r, r, w / r, r}) split.push_back(v);
  for (int64_t v : {c * r * r, h / r, w / r}) out.push_back(v);
  // [..., C, H, r, W, r] -> [..., C, r, r, H, W]
  std::vector<int64_t> order(d);
  std::iota(order.begin(), order.end(), int64_t{0});
  for (int64_t v : {0, 2, 4, 1, 3}) order.push_back(d + v);
  return x.reshape(split).permute(order).reshape(out);
}

Tensor unfold(const Tensor& x, IntList kernel_size, IntList dilation, IntList padding, IntList stride) {
  return im2col(x, kernel_size, dilation, padding, stride);
}

Tensor fold(const Tensor& x, IntList output_size, IntList kernel_size, IntList dilation, IntList padding,
            IntList stride) {
  return col2im(x, output_size, kernel_size, dilation, padding, stride);
}

const char* embedding_bag_mode_name(EmbeddingBagMode mode) {
  switch (mode) {
    case EmbeddingBagMode::sum: return "sum";
    case EmbeddingBagMode::mean: return "mean";
    case EmbeddingBagMode::max: return "max";
  }
  return "?";
}

namespace {

// x, whose gradient is divided by how often `ids` (a row id per row of x's first dims) name each
// row of a table of `rows`.
Tensor scale_grad_by_frequency(const Tensor& x, const std::vector<int64_t>& ids, int64_t rows) {
  std::vector<double> count(static_cast<size_t>(rows), 0), scale;
  for (int64_t id : ids) ++count[static_cast<size_t>(id)];
  for (int64_t id : ids) scale.push_back(1 / count[static_cast<size_t>(id)]);
  Shape shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(1);
  // In float32 for 16-bit tables, rounded once, as PyTorch scales.
  const DType wide = is_16bit_float(x.dtype()) ? kFloat32 : x.dtype();
  const Tensor per_row = tensor(scale).to(x.device(), wide).view(shape);
  return with_gradient("EmbeddingBackward0", x, x.detach(), [per_row](const Tensor& g, const Tensor&) {
    return (g.to(per_row.dtype()) * per_row).to(g.dtype());
  });
}

}  // namespace

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets, EmbeddingBagMode mode,
                     const Tensor& per_sample_weights, bool include_last_offset, std::optional<int64_t> padding_idx,
                     std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
  constexpr const char* op = "embedding_bag";
  TD_CHECK(input.defined() && weight.defined(), op, ": input and weight must be defined");
  TD_CHECK(weight.dim() == 2 && is_floating(weight.dtype()), op, ": weight must be a floating [num, dim], got ",
           shape_str(weight.sizes()), " ", weight.dtype());
  TD_CHECK(input.dtype() == kInt64 || input.dtype() == kInt32, op, ": input must hold int64 or int32 indices, got ",
           input.dtype());
  TD_CHECK(input.dim() == 1 || input.dim() == 2, op, ": input must be [B, L], or [M] with offsets, got ",
           shape_str(input.sizes()));
  TD_CHECK((input.dim() == 1) == offsets.defined(), op, ": ",
           input.dim() == 1 ? "a 1-D input needs offsets (where each bag starts)"
                            : "a 2-D input holds a bag per row: give no offsets");
  TD_CHECK(!per_sample_weights.defined() || mode == EmbeddingBagMode::sum, op,
           ": per_sample_weights are for mode 'sum' only, not '", embedding_bag_mode_name(mode), "'");
  TD_CHECK(!per_sample_weights.defined() || per_sample_weights.sizes() == input.sizes(), op,
           ": per_sample_weights must have the input's shape ", shape_str(input.sizes()), ", got ",
           per_sample_weights.defined() ? shape_str(per_sample_weights.sizes()) : "");
  TD_CHECK(!scale_grad_by_freq || mode != EmbeddingBagMode::max, op,
           ": mode 'max' cannot scale the gradient by the frequency (scale_grad_by_freq)");
  const int64_t rows = weight.size(0), dim = weight.size(1);
  std::optional<int64_t> padding = padding_idx;
  if (padding) {
    TD_CHECK(*padding >= -rows && *padding < rows, op, ": padding_idx ", *padding, " is out of range for ", rows,
             " rows");
    if (*padding < 0) *padding += rows;
  }
  // The indices and the bags' bounds, on the host: bag b holds [bounds[b], bounds[b + 1]).
  const std::vector<int64_t> ids = host_integers(input);
  const int64_t count = static_cast<int64_t>(ids.size());
  for (int64_t id : ids) TD_CHECK(id >= 0 && id < rows, op, ": index ", id, " is out of range for ", rows, " rows");
  std::vector<int64_t> bounds;
  if (input.dim() == 2) {
    for (int64_t b = 0; b <= input.size(0); ++b) bounds.push_back(b * input.size(1));
  } else {
    TD_CHECK(offsets.dim() == 1 && (offsets.dtype() == kInt64 || offsets.dtype() == kInt32), op,
             ": offsets must be a 1-D integer tensor, got ", shape_str(offsets.sizes()), " ", offsets.dtype());
    bounds = host_integers(offsets);
    if (!include_last_offset) bounds.push_back(count);
    TD_CHECK(bounds.size() >= 2 && bounds.front() == 0, op, ": offsets must start at 0",
             include_last_offset ? " and hold the bags' end too" : "");
    // PyTorch leaves what follows a last offset below the input's length undefined: refused here.
    TD_CHECK(bounds.back() == count || !include_last_offset, op, ": with include_last_offset the last offset (",
             bounds.back(), ") must be the input's length, ", count);
    TD_CHECK(std::is_sorted(bounds.begin(), bounds.end()) && bounds.back() <= count, op,
             ": offsets must not decrease nor pass the input's ", count, " indices");
  }
  const int64_t bags = static_cast<int64_t>(bounds.size()) - 1;
  // The elements each bag keeps (padding left out), in order.
  std::vector<int64_t> kept, owner, sizes(bags, 0);
  for (int64_t b = 0; b < bags; ++b) {
    for (int64_t i = bounds[b]; i < bounds[b + 1]; ++i) {
      if (padding && ids[i] == *padding) continue;
      kept.push_back(i);
      owner.push_back(b);
      ++sizes[b];
    }
  }
  // Every argument checked: the rows named may change.
  if (max_norm) embedding_renorm_(weight, input, *max_norm, norm_type);
  const Device device = weight.device();
  const int64_t members = static_cast<int64_t>(kept.size());
  std::vector<int64_t> kept_ids;
  for (int64_t i : kept) kept_ids.push_back(ids[i]);
  Tensor picked = members > 0 ? weight.index_select(0, tensor(kept_ids).to(device))
                              : zeros({0, dim}, weight.options());  // [members, dim]
  // Counted over the rows kept: only the padding row's count, which gets no gradient, differs
  // from PyTorch's count over the whole input.
  if (scale_grad_by_freq && members > 0) picked = scale_grad_by_frequency(picked, kept_ids, rows);
  if (mode != EmbeddingBagMode::max) {
    if (per_sample_weights.defined() && members > 0) {
      picked = picked * per_sample_weights.reshape({-1}).index_select(0, tensor(kept).to(device)).unsqueeze(1);
    }
    Tensor out = zeros({bags, dim}, weight.options());
    if (members > 0) {
      out = out.scatter_add(0, tensor(owner).to(device).unsqueeze(1).expand({members, dim}), picked);
    }
    if (mode == EmbeddingBagMode::sum) return out;
    std::vector<double> divisors;
    for (int64_t n : sizes) divisors.push_back(static_cast<double>(std::max<int64_t>(n, 1)));
    return out / tensor(divisors).to(device, weight.dtype()).unsqueeze(1);
  }
  // max: each bag's rows laid out [bags, longest, dim], the gaps a row of -inf; an empty bag is 0.
  const int64_t longest = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  if (longest == 0) return zeros({bags, dim}, weight.options());
  std::vector<int64_t> layout(bags * longest, members);  // `members` is the -inf row
  for (int64_t k = 0, filled = 0; k < members; ++k) {
    if (k > 0 && owner[k] != owner[k - 1]) filled = 0;
    layout[owner[k] * longest + filled++] = k;
  }
  const Tensor with_gap = cat({picked, full({1, dim}, -std::numeric_limits<double>::infinity(), weight.options())}, 0);
  Tensor laid = with_gap.index_select(0, tensor(layout).to(device)).view({bags, longest, dim});
  // PyTorch's scan keeps a value only where it is greater: a NaN wins as a bag's first entry only.
  std::vector<double> later(longest, 1);
  later[0] = 0;
  const Tensor not_first = tensor(later).to(device).view({1, longest, 1}) > 0;
  laid = where(where(laid != laid, not_first, false),
               full({1}, -std::numeric_limits<double>::infinity(), weight.options()), laid);
  const Tensor maxima = std::get<0>(max(laid, 1));
  std::vector<double> empty;
  for (int64_t n : sizes) empty.push_back(n == 0 ? 1.0 : 0.0);
  return where(tensor(empty).to(device).unsqueeze(1) > 0, zeros_like(maxima), maxima);
}

Tensor embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm, double norm_type) {
  TD_CHECK(weight.defined() && weight.dim() == 2, "embedding_renorm_: weight must be [num, dim]");
  TD_CHECK(indices.defined() && (indices.dtype() == kInt64 || indices.dtype() == kInt32),
           "embedding: indices must be int64 or int32, got ",
           indices.defined() ? dtype_name(indices.dtype()) : "an undefined tensor");
  TD_CHECK(max_norm >= 0, "embedding: max_norm must not be negative, got ", max_norm);
  std::vector<int64_t> ids = host_integers(indices);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int64_t id : ids) {
    TD_CHECK(id >= 0 && id < weight.size(0), "embedding: index ", id, " is out of range for ", weight.size(0),
             " rows");
  }
  if (ids.empty()) return weight;
  NoGradGuard no_grad;
  // Replicas on CPU devices share their parameters, and each looks up its chunk's rows at once:
  // calls on CPU tables take turns, so that a row one call scaled is within max_norm when the
  // next measures it, and is scaled once, as one call over every chunk would scale it. (Replicas
  // on GPUs have copies of their own, and need not wait for each other's norms.)
  static std::mutex renorm_mutex;
  std::unique_lock lock(renorm_mutex, std::defer_lock);
  if (weight.device().is_cpu()) lock.lock();
  // Every named row's norm at once, then the rows above max_norm scaled one by one.
  const std::vector<double> norms =
      values_as_doubles(weight.index_select(0, tensor(ids).to(weight.device())).norm(norm_type, {1}));
  Tensor table = weight;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (norms[i] > max_norm) table.select(0, ids[i]).mul_(max_norm / (norms[i] + 1e-7));
  }
  return weight;
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
  TD_CHECK(weight.defined() && weight.dim() == 2, "embedding: weight must be [num, dim], got ",
           weight.defined() ? shape_str(weight.sizes()) : std::string("an undefined tensor"));
  const int64_t rows = weight.size(0);
  TD_CHECK(!padding_idx || (*padding_idx >= -rows && *padding_idx < rows), "embedding: padding_idx ",
           padding_idx.value_or(0), " is out of range for a weight of ", rows, " rows");
  if (max_norm) embedding_renorm_(weight, indices, *max_norm, norm_type);  // checks the indices first
  Tensor out = tandem::embedding(weight, indices);
  if (scale_grad_by_freq) out = scale_grad_by_frequency(out, host_integers(indices), weight.size(0));
  if (!padding_idx) return out;
  int64_t pad = *padding_idx < 0 ? *padding_idx + rows : *padding_idx;
  // Same values, but no gradient flows to the padding row.
  return where((indices != pad).unsqueeze(-1), out, out.detach());
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size) {
  TD_CHECK(x.defined() && (x.dim() == 3 || x.dim() == 4), "adaptive_avg_pool2d: expected a 3-D or 4-D input");
  auto [oh, ow] = kernels::height_width(output_size, "adaptive_avg_pool2d", "output_size");
  const int64_t h = x.size(-2), w = x.size(-1);
  TD_CHECK(oh > 0 && ow > 0, "adaptive_avg_pool2d: output_size must be positive");
  if (h % oh == 0 && w % ow == 0) return avg_pool2d(x, {h / oh, w / ow});
  // Window i covers [floor(i * h / oh), ceil((i + 1) * h / oh)), as PyTorch's.
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < oh; ++i) {
    int64_t h0 = i * h / oh, h1 = ((i + 1) * h + oh - 1) / oh;
    std::vector<Tensor> cols;
    for (int64_t j = 0; j < ow; ++j) {
      int64_t w0 = j * w / ow, w1 = ((j + 1) * w + ow - 1) / ow;
      cols.push_back(x.narrow(-2, h0, h1 - h0).narrow(-1, w0, w1 - w0).mean({-2, -1}));
    }
    rows.push_back(stack(cols, -1));
  }
  return stack(rows, -2);
}

// ---- instance norm, local response norm, bilinear, channel shuffle ----

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  TD_CHECK(x.defined() && x.dim() >= 3, "instance_norm: expected an input [N, C, ...] with positions, got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  const int64_t batch = x.size(0), channels = x.size(1);
  for (const auto& [t, what] : {std::pair{&running_mean, "running_mean"}, std::pair{&running_var, "running_var"},
                                std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    TD_CHECK(!t->defined() || t->sizes() == Shape{channels}, "instance_norm: ", what, " must be [", channels,
             "] for the input ", shape_str(x.sizes()), ", got ", shape_str(t->sizes()));
  }
  TD_CHECK(running_mean.defined() == running_var.defined(),
           "instance_norm: give both running_mean and running_var, or neither");
  TD_CHECK(use_input_stats || running_mean.defined(),
           "instance_norm: without input statistics the running statistics must be given");
  // Each channel's tensor once per sample, as new tensors (batch_norm updates the statistics in place).
  auto per_instance = [&](const Tensor& t) {
    return t.defined() ? t.unsqueeze(0).expand({batch, channels}).reshape({batch * channels}) : Tensor();
  };
  const Tensor instance_mean = per_instance(running_mean), instance_var = per_instance(running_var);
  Shape one_batch = x.sizes();
  one_batch[0] = 1;
  one_batch[1] = batch * channels;
  const Tensor out = batch_norm(x.reshape(one_batch), instance_mean, instance_var, per_instance(weight),
                                per_instance(bias), use_input_stats, momentum, eps);
  if (use_input_stats && running_mean.defined()) {
    // Each channel's running statistics: the mean of its instances'.
    NoGradGuard no_grad;
    Tensor(running_mean).copy_(instance_mean.view({batch, channels}).mean({0}));
    Tensor(running_var).copy_(instance_var.view({batch, channels}).mean({0}));
  }
  return out.view(x.sizes());
}

Tensor local_response_norm(const Tensor& x, int64_t size, double alpha, double beta, double k) {
  TD_CHECK(x.defined() && x.dim() >= 3, "local_response_norm: expected an input [N, C, ...] of 3 dims or more, got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  TD_CHECK(size > 0, "local_response_norm: size must be positive, got ", size);
  if (x.numel() == 0) return x;
  // The squares' mean over each window of channels: an average pool down the channels of
  // [N, 1, C, positions], zero-padded, as PyTorch's.
  const Shape& sizes = x.sizes();
  Tensor squares = (x * x).reshape({sizes[0], 1, sizes[1], -1});
  squares = pad(squares, {0, 0, size / 2, (size - 1) / 2});
  const Tensor mean = avg_pool2d(squares, {size, 1}, {1, 1}).reshape(sizes);
  return x / (mean * alpha + k).pow(beta);
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  TD_CHECK(x1.defined() && x2.defined() && weight.defined(), "bilinear: x1, x2 and weight must be defined");
  TD_CHECK(weight.dim() == 3, "bilinear: weight must be [out, in1, in2], got ", shape_str(weight.sizes()));
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  TD_CHECK(x1.dim() >= 1 && x2.dim() == x1.dim() && x1.size(-1) == in1 && x2.size(-1) == in2 &&
               Shape(x1.sizes().begin(), x1.sizes().end() - 1) == Shape(x2.sizes().begin(), x2.sizes().end() - 1),
           "bilinear: x1 ", shape_str(x1.sizes()), " and x2 ", shape_str(x2.sizes()),
           " must share their leading dims and end in ", in1, " and ", in2, " (weight ", shape_str(weight.sizes()),
           ")");
  TD_CHECK(!bias.defined() || bias.sizes() == Shape{out}, "bilinear: bias must be [", out, "], got ",
           bias.defined() ? shape_str(bias.sizes()) : "");
  Shape leading(x1.sizes().begin(), x1.sizes().end() - 1);
  const Tensor a = x1.reshape({-1, in1}), b = x2.reshape({-1, in2});
  // (x1 W_o) for every o at once: [rows, out * in2], then the dot with x2.
  const Tensor projected = matmul(a, weight.permute({1, 0, 2}).reshape({in1, out * in2})).view({-1, out, in2});
  Tensor y = (projected * b.unsqueeze(1)).sum({-1});
  if (bias.defined()) y = y + bias;
  leading.push_back(out);
  return y.reshape(leading);
}

Tensor channel_shuffle(const Tensor& x, int64_t groups) {
  TD_CHECK(x.defined() && x.dim() >= 3, "channel_shuffle: expected an input [N, C, ...] of 3 dims or more, got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  TD_CHECK(groups > 0 && x.size(1) % groups == 0, "channel_shuffle: ", x.size(1), " channels of ",
           shape_str(x.sizes()), " do not split into ", groups, " groups");
  Shape split = x.sizes();
  split[1] = x.size(1) / groups;
  split.insert(split.begin() + 1, groups);
  return x.reshape(split).transpose(1, 2).reshape(x.sizes());
}

// ---- 1-D and adaptive max pooling ----

namespace {

void check_pool_input(const char* op, const Tensor& x, int64_t spatial_dims) {
  TD_CHECK(x.defined() && (x.dim() == spatial_dims + 1 || x.dim() == spatial_dims + 2), op, ": expected a ",
           spatial_dims + 1, "-D or ", spatial_dims + 2, "-D input ([C, ...] or [N, C, ...], ", spatial_dims,
           " spatial), got ", x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  for (int64_t d = x.dim() - spatial_dims - 1; d < x.dim(); ++d) {
    TD_CHECK(x.size(d) > 0, op, ": the input ", shape_str(x.sizes()), " must have a non-zero size in every dim but ",
             "the batch's");
  }
}

// A 1-D pooling's window, checked as the op: its kernel, stride (the kernel's unless given),
// padding and dilation as the 2-D op's row of height 1.
struct Window1d {
  std::vector<int64_t> kernel, stride, padding, dilation;
};
Window1d window_1d(const char* op, const Tensor& x, IntList kernel_size, IntList stride, IntList padding,
                   IntList dilation, bool ceil_mode) {
  check_pool_input(op, x, 1);
  const int64_t k = one_value(kernel_size, op, "kernel_size");
  const int64_t s = stride.empty() ? k : one_value(stride, op, "stride");
  const int64_t p = one_value(padding, op, "padding"), d = one_value(dilation, op, "dilation");
  TD_CHECK(k > 0 && s > 0 && d > 0, op, ": kernel_size (", k, "), stride (", s, ") and dilation (", d,
           ") must be positive");
  TD_CHECK(p >= 0 && 2 * p <= d * (k - 1) + 1, op, ": padding (", p, ") must be at least 0 and at most half the ",
           "kernel's span (", d * (k - 1) + 1, ")");
  TD_CHECK(kernels::pooled_size(x.size(-1), k, p, s, d, ceil_mode) > 0, op, ": the input ", shape_str(x.sizes()),
           " is too short for the kernel (", k, ", dilation ", d, ", padding ", p, "): no output position");
  return {{1, k}, {1, s}, {0, p}, {1, d}};
}

// The input positions one output position pools along one dim, and where PyTorch's scan starts
// (the first of them; for a window wholly in the padding, the first kernel position at or past 0,
// outside the input).
struct Window {
  std::vector<int64_t> positions;
  int64_t first;
};
using Windows = std::vector<Window>;

// Output position i of a dim of size `in` pooled to `out` takes [floor(i * in / out),
// ceil((i + 1) * in / out)), as PyTorch's adaptive pooling.
Windows adaptive_windows(int64_t in, int64_t out) {
  Windows windows;
  for (int64_t i = 0; i < out; ++i) {
    Window w{{}, i * in / out};
    for (int64_t j = w.first; j < ((i + 1) * in + out - 1) / out; ++j) w.positions.push_back(j);
    windows.push_back(std::move(w));
  }
  return windows;
}

// Window i starts at i * stride - padding and takes `kernel` positions `dilation` apart: those
// inside the input.
Windows strided_windows(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  Windows windows;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = i * stride - padding;
    Window w{{}, start < 0 ? start + (-start + dilation - 1) / dilation * dilation : start};
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t j = start + k * dilation;
      if (j >= 0 && j < in) w.positions.push_back(j);
    }
    windows.push_back(std::move(w));
  }
  return windows;
}

// Every output position's window over the last along.size() dims of x (the product of its
// windows along each dim), gathered: values [..., out..., longest] with the windows' flat
// positions in those dims (row-major). A shorter window is padded with its own first position
// (an empty one with position 0), whose slot is -1 (a real entry's slot is its place in the
// window). Where some window is empty (a dilated kernel wholly in the padding), `empty` marks the
// cells and `firsts` holds each cell's flat first position.
struct GatheredWindows {
  Tensor values, slots, positions;  // positions: [cells * longest], the table values were gathered by
  Shape out;
  int64_t longest = 0;
  Tensor empty, firsts;
};
GatheredWindows gather_windows(const Tensor& x, const std::vector<Windows>& along) {
  const int64_t dims = static_cast<int64_t>(along.size());
  const std::vector<int64_t> in(x.sizes().end() - dims, x.sizes().end());
  Shape out;
  int64_t longest = 1;
  for (const Windows& windows : along) {
    out.push_back(static_cast<int64_t>(windows.size()));
    size_t widest = 1;
    for (const auto& w : windows) widest = std::max(widest, w.positions.size());
    longest *= static_cast<int64_t>(widest);
  }
  std::vector<int64_t> table;  // [cells * longest]
  std::vector<int64_t> slots;  // each entry's place in its window, -1 for padding
  std::vector<int64_t> empty, firsts;  // per cell
  for (int64_t cell = 0; cell < numel_of(out); ++cell) {
    std::vector<int64_t> flat = {0};  // the window's flat positions
    int64_t first = 0;
    for (int64_t d = 0, rest = cell; d < dims; ++d) {
      const int64_t later = numel_of(Shape(out.begin() + d + 1, out.end()));
      const Window& w = along[d][rest / later];
      rest %= later;
      std::vector<int64_t> next;
      for (int64_t f : flat) {
        for (int64_t j : w.positions) next.push_back(f * in[d] + j);
      }
      flat = std::move(next);
      first = first * in[d] + w.first;
    }
    const int64_t real = static_cast<int64_t>(flat.size());
    for (int64_t k = 0; k < longest; ++k) slots.push_back(k < real ? k : -1);
    flat.resize(longest, real > 0 ? flat.front() : 0);
    table.insert(table.end(), flat.begin(), flat.end());
    empty.push_back(real == 0);
    firsts.push_back(first);
  }
  const Tensor positions = tensor(table).to(x.device());
  Shape windows = out;
  windows.push_back(longest);
  GatheredWindows g{x.flatten(x.dim() - dims).index_select(-1, positions).unflatten(-1, windows),
                    tensor(slots).to(x.device()).view(windows),
                    positions,
                    out,
                    longest,
                    Tensor(),
                    Tensor()};
  if (std::find(empty.begin(), empty.end(), 1) != empty.end()) {
    g.empty = (tensor(empty) > 0).to(x.device()).view(out);
    g.firsts = tensor(firsts).to(x.device()).view(out);
  }
  return g;
}

// The place in each window (values [..., window], slots its entries' places, -1 for padding) of
// its first maximum, or of its last NaN, as PyTorch's kernels keep it (their scan takes every
// NaN it meets).
Tensor first_max_or_last_nan(const Tensor& values, const Tensor& slots) {
  NoGradGuard no_grad;
  const Tensor first_max = std::get<1>(max(values, -1));
  const Tensor last_nan = where(where(values != values, slots >= 0, false), slots, -1).amax({-1});
  return where(last_nan >= 0, last_nan, first_max);
}

// Each window's first maximum, or its last NaN; the padding never counts, and an empty window
// gives -inf at its first position, as PyTorch's scan leaves it. Indices are the input's flat
// spatial positions.
std::tuple<Tensor, Tensor> max_over_windows(const GatheredWindows& g) {
  const Tensor chosen = first_max_or_last_nan(g.values, g.slots);
  Tensor values = g.values.gather(-1, chosen.unsqueeze(-1)).squeeze(-1);
  // The chosen element's entry in the table: its window's start plus its place in the window.
  const Tensor start =
      (arange(numel_of(g.out), TensorOptions(kInt64).device(g.values.device())) * g.longest).view(g.out);
  Tensor indices = g.positions.index_select(0, (chosen + start).flatten()).view(chosen.sizes());
  if (g.empty.defined()) {
    values = where(g.empty, -std::numeric_limits<double>::infinity(), values);
    indices = where(g.empty, g.firsts, indices);
  }
  return {values, indices};
}

// Each window's real entries summed and divided by its cell's divisor ([out...], x's dtype).
Tensor sum_over_windows(const GatheredWindows& g, const Tensor& divisors) {
  return where(g.slots >= 0, g.values, 0).sum({-1}) / divisors;
}

// Spatial sizes (one per entry of output_size, which may be one value for all) checked positive.
std::vector<int64_t> adaptive_sizes(const char* op, const Tensor& x, IntList output_size, int64_t dims) {
  check_pool_input(op, x, dims);
  const char* counts[] = {"one value", "one value or two", "one value or three"};
  TD_CHECK(output_size.size() == 1 || static_cast<int64_t>(output_size.size()) == dims, op, ": output_size must have ",
           counts[dims - 1], ", got ", output_size.size());
  const std::vector<int64_t> out(dims, output_size[0]);
  std::vector<int64_t> sizes = output_size.size() == 1 ? out : output_size.vec();
  const std::vector<int64_t> in(x.sizes().end() - dims, x.sizes().end());
  for (int64_t d = 0; d < dims; ++d) {
    TD_CHECK(sizes[d] > 0 && in[d] > 0, op, ": output_size ", shape_str(sizes), " and the input's spatial sizes ",
             shape_str(in), " must be positive");
  }
  return sizes;
}

// Adaptive max pooling over the last `dims` dims.
std::tuple<Tensor, Tensor> adaptive_max_pool(const char* op, const Tensor& x, IntList output_size, int64_t dims) {
  const std::vector<int64_t> out = adaptive_sizes(op, x, output_size, dims);
  std::vector<Windows> along;
  for (int64_t d = 0; d < dims; ++d) along.push_back(adaptive_windows(x.size(x.dim() - dims + d), out[d]));
  return max_over_windows(gather_windows(x, along));
}

// A 3-D pooling's window, checked as the op: kernel, stride (the kernel's unless given), padding
// (at most half the kernel, as PyTorch's check) and dilation, and the output size, per dim.
struct Window3d {
  std::array<int64_t, 3> kernel, stride, padding, dilation, out;
};
Window3d window_3d(const char* op, const Tensor& x, IntList kernel_size, IntList stride, IntList padding,
                   IntList dilation, bool ceil_mode) {
  check_pool_input(op, x, 3);
  Window3d w{three_values(op, kernel_size, "kernel_size"),
             stride.empty() ? three_values(op, kernel_size, "kernel_size") : three_values(op, stride, "stride"),
             three_values(op, padding, "padding"),
             three_values(op, dilation, "dilation"),
             {}};
  auto str = [](const std::array<int64_t, 3>& v) { return shape_str({v[0], v[1], v[2]}); };
  for (int i = 0; i < 3; ++i) {
    TD_CHECK(w.kernel[i] > 0 && w.stride[i] > 0 && w.dilation[i] > 0, op, ": kernel_size ", str(w.kernel), ", stride ",
             str(w.stride), " and dilation ", str(w.dilation), " must be positive");
    TD_CHECK(w.padding[i] >= 0 && 2 * w.padding[i] <= w.kernel[i], op, ": padding ", str(w.padding),
             " must be at least 0 and at most half the kernel ", str(w.kernel));
    w.out[i] =
        kernels::pooled_size(x.size(x.dim() - 3 + i), w.kernel[i], w.padding[i], w.stride[i], w.dilation[i], ceil_mode);
    TD_CHECK(w.out[i] > 0, op, ": the input ", shape_str(x.sizes()), " is too small for the kernel ", str(w.kernel),
             " (dilation ", str(w.dilation), ", padding ", str(w.padding), "): no output position");
  }
  return w;
}

// The strided windows of a 3-D pooling along each of x's last three dims.
std::vector<Windows> strided_windows_3d(const Tensor& x, const Window3d& w) {
  std::vector<Windows> along;
  for (int i = 0; i < 3; ++i) {
    along.push_back(
        strided_windows(x.size(x.dim() - 3 + i), w.out[i], w.kernel[i], w.stride[i], w.padding[i], w.dilation[i]));
  }
  return along;
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  const Window1d w = window_1d("max_pool1d", x, kernel_size, stride, padding, dilation, ceil_mode);
  auto [values, indices] = max_pool2d_with_indices(x.unsqueeze(-2), w.kernel, w.stride, w.padding, w.dilation,
                                                   ceil_mode);
  return {values.squeeze(-2), indices.squeeze(-2)};  // a row of height 1: the flat index is the position
}

Tensor max_pool1d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  const Window1d w = window_1d("max_pool1d", x, kernel_size, stride, padding, dilation, ceil_mode);
  return max_pool2d(x.unsqueeze(-2), w.kernel, w.stride, w.padding, w.dilation, ceil_mode).squeeze(-2);
}

Tensor avg_pool1d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad) {
  const Window1d w = window_1d("avg_pool1d", x, kernel_size, stride, padding, 1, ceil_mode);
  return avg_pool2d(x.unsqueeze(-2), w.kernel, w.stride, w.padding, ceil_mode, count_include_pad).squeeze(-2);
}

Tensor adaptive_avg_pool1d(const Tensor& x, IntList output_size) {
  check_pool_input("adaptive_avg_pool1d", x, 1);
  const int64_t out = one_value(output_size, "adaptive_avg_pool1d", "output_size");
  TD_CHECK(out > 0 && x.size(-1) > 0, "adaptive_avg_pool1d: output_size (", out, ") and the input's length (",
           x.size(-1), ") must be positive");
  return adaptive_avg_pool2d(x.unsqueeze(-2), {1, out}).squeeze(-2);
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, IntList output_size) {
  return adaptive_max_pool("adaptive_max_pool1d", x, output_size, 1);
}

Tensor adaptive_max_pool1d(const Tensor& x, IntList output_size) {
  return std::get<0>(adaptive_max_pool1d_with_indices(x, output_size));
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, IntList output_size) {
  return adaptive_max_pool("adaptive_max_pool2d", x, output_size, 2);
}

Tensor adaptive_max_pool2d(const Tensor& x, IntList output_size) {
  return std::get<0>(adaptive_max_pool2d_with_indices(x, output_size));
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, IntList kernel_size, IntList stride,
                                                   IntList padding, IntList dilation, bool ceil_mode) {
  const Window3d w = window_3d("max_pool3d", x, kernel_size, stride, padding, dilation, ceil_mode);
  return max_over_windows(gather_windows(x, strided_windows_3d(x, w)));
}

Tensor max_pool3d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, IntList dilation,
                  bool ceil_mode) {
  return std::get<0>(max_pool3d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool3d(const Tensor& x, IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "avg_pool3d";
  const Window3d w = window_3d(op, x, kernel_size, stride, padding, 1, ceil_mode);
  TD_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor_override must not be zero");
  TD_CHECK(is_floating(x.dtype()), op, ": expected a floating input, got ", x.dtype());
  const std::vector<Windows> along = strided_windows_3d(x, w);
  // A window's divisor is the product of its sizes along each dim: inside the input, or inside
  // the padded input (PyTorch's pool_size, which a ceil_mode window may still overrun).
  std::vector<std::vector<double>> sizes(3);
  for (int i = 0; i < 3; ++i) {
    const int64_t in = x.size(x.dim() - 3 + i);
    for (int64_t o = 0; o < w.out[i]; ++o) {
      const int64_t start = o * w.stride[i] - w.padding[i];
      const int64_t end = std::min(start + w.kernel[i], in + w.padding[i]);
      sizes[i].push_back(count_include_pad ? static_cast<double>(end - start)
                                           : static_cast<double>(along[i][o].positions.size()));
    }
  }
  std::vector<double> divisors;
  for (double a : sizes[0]) {
    for (double b : sizes[1]) {
      for (double c : sizes[2])
        divisors.push_back(divisor_override ? static_cast<double>(*divisor_override) : a * b * c);
    }
  }
  const Tensor divisor = tensor(divisors).to(x.dtype()).to(x.device()).view({w.out[0], w.out[1], w.out[2]});
  return sum_over_windows(gather_windows(x, along), divisor);
}

Tensor adaptive_avg_pool3d(const Tensor& x, IntList output_size) {
  constexpr const char* op = "adaptive_avg_pool3d";
  const std::vector<int64_t> out = adaptive_sizes(op, x, output_size, 3);
  TD_CHECK(is_floating(x.dtype()), op, ": expected a floating input, got ", x.dtype());
  std::vector<Windows> along;
  for (int i = 0; i < 3; ++i) along.push_back(adaptive_windows(x.size(x.dim() - 3 + i), out[i]));
  std::vector<double> divisors;
  for (const auto& a : along[0]) {
    for (const auto& b : along[1]) {
      for (const auto& c : along[2]) {
        divisors.push_back(static_cast<double>(a.positions.size() * b.positions.size() * c.positions.size()));
      }
    }
  }
  const Tensor divisor = tensor(divisors).to(x.dtype()).to(x.device()).view(out);
  return sum_over_windows(gather_windows(x, along), divisor);
}

std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, IntList output_size) {
  return adaptive_max_pool("adaptive_max_pool3d", x, output_size, 3);
}

Tensor adaptive_max_pool3d(const Tensor& x, IntList output_size) {
  return std::get<0>(adaptive_max_pool3d_with_indices(x, output_size));
}

namespace {

// Where the windows of a fractional max pooling start along one dim of size `in`: `out` windows
// of `kernel` positions, for each plane's sample u (samples [planes, 1] on the CPU). As PyTorch's
// generate_intervals: window i < out - 1 at trunc((i + u) * alpha) - trunc(u * alpha) with
// alpha = (in - kernel) / (out - 1), each step rounded to `dtype`, and the last at in - kernel.
// Returns int64 [planes, out].
Tensor fractional_starts(const Tensor& samples, DType dtype, int64_t in, int64_t out, int64_t kernel) {
  const Tensor last = full({samples.size(0), std::min<int64_t>(out, 1)}, in - kernel, kInt64);
  if (out <= 1) return last;
  const Tensor alpha = full({}, in - kernel, dtype) / full({}, out - 1, dtype);
  const Tensor steps = arange(out - 1).to(dtype);
  const Tensor u = samples.to(dtype);
  return cat({((steps + u) * alpha).to(kInt64) - (u * alpha).to(kInt64), last}, 1);
}

// Fractional max pooling over x's last `dims` dims: each output position's window gathered from
// its plane ([planes, cells, window], the flat positions of every entry built from the starts
// along each dim), then its first maximum or last NaN, as the other max poolings.
std::tuple<Tensor, Tensor> fractional_max_pool(const char* op, const Tensor& x, IntList kernel_size,
                                               IntList output_size, const std::vector<double>& output_ratio,
                                               const Tensor& random_samples, int64_t dims) {
  check_pool_input(op, x, dims);
  TD_CHECK(is_floating(x.dtype()), op, ": expected a floating input, got ", x.dtype());
  auto per_dim = [&](const auto& values, const char* name) {  // one value for every spatial dim, or one each
    TD_CHECK(values.size() == 1 || static_cast<int64_t>(values.size()) == dims, op, ": ", name,
             " must have one value or ", dims, ", got ", values.size());
    using T = std::decay_t<decltype(values[0])>;
    return values.size() == 1 ? std::vector<T>(dims, values[0]) : std::vector<T>(values.begin(), values.end());
  };
  const std::vector<int64_t> kernel = per_dim(kernel_size, "kernel_size");
  const std::vector<int64_t> in(x.sizes().end() - dims, x.sizes().end());
  // As PyTorch's: output_size where both are given.
  TD_CHECK(!output_size.empty() || !output_ratio.empty(), op, ": give an output_size or an output_ratio");
  std::vector<int64_t> out;
  if (!output_size.empty()) {
    out = per_dim(output_size, "output_size");
  } else {
    const std::vector<double> ratio = per_dim(output_ratio, "output_ratio");
    for (int64_t d = 0; d < dims; ++d) {
      const double size = static_cast<double>(in[d]) * ratio[d];
      TD_CHECK(std::isfinite(size) && size >= 0 && size < 9.2e18, op, ": output_ratio ", ratio[d],
               " gives no output size for ", in[d], " positions");
      out.push_back(static_cast<int64_t>(size));
    }
  }
  for (int64_t d = 0; d < dims; ++d) {
    TD_CHECK(kernel[d] > 0, op, ": kernel_size ", shape_str(kernel), " must be positive");
    TD_CHECK(out[d] >= 0, op, ": the output size ", shape_str(out), " must not be negative");
    // PyTorch's bound: the windows fit in the input, and in 3-D leave at least one position over.
    const int64_t span = out[d] + kernel[d] - 1;
    TD_CHECK(dims == 2 ? span <= in[d] : span < in[d], op, ": the kernel ", shape_str(kernel), " is too large for ",
             shape_str(out), " windows over the input's spatial sizes ", shape_str(in),
             dims == 2 ? "" : " (3-D windows must leave a position over)");
  }
  const int64_t batch = x.dim() == dims + 2 ? x.size(0) : 1, channels = x.size(x.dim() - dims - 1);
  const int64_t planes = batch * channels;
  Tensor samples = random_samples;
  if (samples.defined()) {
    TD_CHECK(samples.dim() == 3 && samples.size(0) >= batch && samples.size(1) == channels &&
                 samples.size(2) == dims,
             op, ": expected random_samples of shape [", batch, " or more, ", channels, ", ", dims, "] for the input ",
             shape_str(x.sizes()), ", got ", shape_str(samples.sizes()));
    TD_CHECK(samples.dtype() == x.dtype() && samples.device() == x.device(), op, ": random_samples (",
             samples.dtype(), ", ", samples.device(), ") must have the input's dtype and device (", x.dtype(), ", ",
             x.device(), ")");
  } else {
    samples = rand({batch, channels, dims}, TensorOptions(x.dtype()).device(x.device()));
  }
  // Every window entry's flat position in its plane, [planes, out..., kernel...]: row-major over
  // the spatial dims, built one dim at a time from where the windows start along it.
  const int64_t rank = 1 + 2 * dims;
  Tensor positions = zeros(Shape(rank, 1), kInt64);
  {
    NoGradGuard no_grad;
    const Tensor on_host = samples.detach().narrow(0, 0, batch).reshape({planes, dims}).to(Device(kCPU));
    // The window arithmetic is in x's dtype, as PyTorch's CPU kernels; its CUDA kernels take a
    // 16-bit input's in float32.
    const DType arithmetic = x.is_cuda() && is_16bit_float(x.dtype()) ? kFloat32 : x.dtype();
    for (int64_t d = 0; d < dims; ++d) {
      // PyTorch's order of the samples: width, height in 2-D; depth, height, width in 3-D.
      const int64_t sample = dims == 2 ? 1 - d : d;
      const Tensor starts = fractional_starts(on_host.narrow(1, sample, 1), arithmetic, in[d], out[d], kernel[d]);
      TD_CHECK(starts.numel() == 0 || (starts.min().item<int64_t>() >= 0 &&
                                       starts.max().item<int64_t>() <= in[d] - kernel[d]),
               op, ": the random samples put a window outside the input along its spatial dim ", d,
               " (the arithmetic rounds in ", arithmetic, ": a 16-bit input on the CPU, or samples far outside [0, 1))");
      Shape window_shape(rank, 1), entry_shape(rank, 1);
      window_shape[0] = planes;
      window_shape[1 + d] = out[d];
      entry_shape[1 + dims + d] = kernel[d];
      positions = positions * in[d] + starts.view(window_shape) + arange(kernel[d]).view(entry_shape);
    }
  }
  const int64_t cells = numel_of(out), window = numel_of(kernel);
  positions = positions.to(x.device()).reshape({planes, cells, window});
  const Tensor values = x.reshape({planes, numel_of(in)}).gather(1, positions.view({planes, cells * window}))
                            .view({planes, cells, window});
  const Tensor chosen = first_max_or_last_nan(values, arange(window, TensorOptions(kInt64).device(x.device())))
                            .unsqueeze(-1);
  Shape shape(x.sizes().begin(), x.sizes().end() - dims);
  shape.insert(shape.end(), out.begin(), out.end());
  return {values.gather(-1, chosen).view(shape), positions.gather(-1, chosen).view(shape)};
}

}  // namespace

std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& x, IntList kernel_size,
                                                              IntList output_size,
                                                              const std::vector<double>& output_ratio,
                                                              const Tensor& random_samples) {
  return fractional_max_pool("fractional_max_pool2d", x, kernel_size, output_size, output_ratio, random_samples, 2);
}

Tensor fractional_max_pool2d(const Tensor& x, IntList kernel_size, IntList output_size,
                             const std::vector<double>& output_ratio, const Tensor& random_samples) {
  return std::get<0>(fractional_max_pool2d_with_indices(x, kernel_size, output_size, output_ratio, random_samples));
}

std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& x, IntList kernel_size,
                                                              IntList output_size,
                                                              const std::vector<double>& output_ratio,
                                                              const Tensor& random_samples) {
  return fractional_max_pool("fractional_max_pool3d", x, kernel_size, output_size, output_ratio, random_samples, 3);
}

Tensor fractional_max_pool3d(const Tensor& x, IntList kernel_size, IntList output_size,
                             const std::vector<double>& output_ratio, const Tensor& random_samples) {
  return std::get<0>(fractional_max_pool3d_with_indices(x, kernel_size, output_size, output_ratio, random_samples));
}

namespace {

void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  TD_CHECK(input.defined() && target.defined(), op, ": input and target must be defined");
  // PyTorch broadcasts them with only a warning ([N] against [N, 1] becomes an [N, N] loss of
  // every pair); tandem refuses, on purpose.
  TD_CHECK(input.sizes() == target.sizes(), op, ": input ", shape_str(input.sizes()), " and target ",
           shape_str(target.sizes()), " must have the same shape (they are not broadcast: reshape one to the other)");
}

}  // namespace

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  TD_CHECK(x.defined() && x.dim() >= 2, "group_norm: expected an input of shape [N, C, ...], got ",
           x.defined() ? shape_str(x.sizes()) : "an undefined tensor");
  // Autocast casts first, as PyTorch's: the dtype rules below then see float32 operands.
  if (amp::takes_float32(amp::Float32On::kCuda, {&x, &weight, &bias})) {  // on autocast's float32 list for GPUs
    amp::SuspendAutocast inside;
    return group_norm(amp::to_float32(x), num_groups, amp::to_float32(weight), amp::to_float32(bias), eps);
  }
  const int64_t channels = x.size(1);
  const int64_t positions = numel_of(Shape(x.sizes().begin() + 2, x.sizes().end()));
  TD_CHECK(channels > 0 && positions > 0, "group_norm: expected channels and positions (the dims after 1), got ",
           shape_str(x.sizes()));
  TD_CHECK(num_groups > 0 && channels % num_groups == 0, "group_norm: ", channels,
           " channels cannot be split into ", num_groups, " groups");
  // PyTorch's check, over the batch and the group's channels and positions together.
  TD_CHECK(x.size(0) * (channels / num_groups) * positions != 1, "group_norm: expected more than 1 value per group, ",
           "got input of shape ", shape_str(x.sizes()), " in ", num_groups, " groups");
  TD_CHECK(is_floating(x.dtype()), "group_norm: expected a floating input, got ", x.dtype());
  // As PyTorch: the parameters of one dtype, the input's, or float32 beside a 16-bit input.
  const DType param_dtype = weight.defined() ? weight.dtype() : bias.defined() ? bias.dtype() : x.dtype();
  for (const auto& [p, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    TD_CHECK(!p->defined() || p->sizes() == Shape{channels}, "group_norm: expected ", what, " of shape [", channels,
             "], got ", shape_str(p->sizes()));
    TD_CHECK(!p->defined() || (p->dtype() == param_dtype &&
                                (param_dtype == x.dtype() || (is_16bit_float(x.dtype()) && param_dtype == kFloat32))),
             "group_norm: input (", x.dtype(), "), weight (", weight.defined() ? dtype_name(weight.dtype()) : "none",
             ") and bias (", bias.defined() ? dtype_name(bias.dtype()) : "none",
             ") must have one dtype, or float32 parameters beside a 16-bit input");
  }
  // 16-bit inputs in float32, rounded once, as PyTorch's kernel keeps its statistics.
  if (is_16bit_float(x.dtype())) {
    auto wide = [](const Tensor& t) { return t.defined() ? t.to(kFloat32) : t; };
    return group_norm(x.to(kFloat32), num_groups, wide(weight), wide(bias), eps).to(x.dtype());
  }
  Tensor out;
  if (x.numel() == 0) {
    out = x.clone();  // an empty batch: nothing to normalize; the parameters below still get (zero) gradients
  } else {
    const Tensor groups = x.reshape({x.size(0), num_groups, -1});
    const Tensor mean = groups.mean({2}, true);
    const Tensor var = groups.var({2}, 0, true);
    out = ((groups - mean) / sqrt(var + eps)).reshape(x.sizes());
  }
  Shape per_channel(x.dim(), 1);
  per_channel[1] = channels;
  if (weight.defined()) out = out * weight.view(per_channel);
  if (bias.defined()) out = out + bias.view(per_channel);
  return out;
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  check_floating_input("softplus", x);
  if (amp::takes_float32(amp::Float32On::kCuda, {&x})) {  // on autocast's float32 list for GPUs
    amp::SuspendAutocast inside;
    return softplus(amp::to_float32(x), beta, threshold);
  }
  if (is_16bit_float(x.dtype())) return softplus(x.to(kFloat32), beta, threshold).to(x.dtype());
  Tensor y;
  {
    NoGradGuard no_grad;
    const Tensor scaled = x * beta;
    const Tensor linear = scaled > threshold;
    y = where(linear, x, log1p(exp(where(linear, 0, scaled))) / beta);  // exp only where it is taken
  }
  if (autograd::needs_grad({&x})) {
    // PyTorch's gradient, z / (z + 1) with z = exp(beta x), also at beta 0 (0.5, where the
    // composite form divides by 0). Above 0 it is sigmoid(beta x), which never overflows (z / (z + 1)
    // is NaN where z is inf, in PyTorch too when the threshold is past 88 in float32); below 0 it is
    // z / (z + 1) itself, which keeps PyTorch's subnormals where sigmoid's 1 / (1 + 1 / z) gives 0.
    // The sigmoid's input stops at the threshold, so that the gradient's own derivative is
    // PyTorch's second derivative: 0 from beta x = threshold on, never an inf, never below 0 (far
    // below 0, z / (z + 1)'s derivative keeps subnormals where PyTorch's gives 0).
    SavedTensor saved_input(x, false);
    autograd::record("SoftplusBackward0", {&x}, {&y},
                     [saved_input, beta, threshold](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                       const Tensor scaled = saved_input.unpack("SoftplusBackward0") * beta;
                       const Tensor below = scaled <= 0;
                       const Tensor z = exp(where(below, scaled, 0));
                       const Tensor rising =
                           where(below, z / (z + 1), sigmoid(where(scaled >= threshold, threshold, scaled)));
                       return {where(scaled > threshold, g[0], g[0] * rising)};
                     });
  }
  return y;
}

namespace {

// x * scale where x > 0, else expm1(x * input_scale) * alpha * scale: PyTorch's elu kernel, which
// elu, selu and celu call with their constants. NaN takes the positive side, as there.
Tensor elu_family(const char* op, const char* node, const Tensor& x, double alpha, double scale, double input_scale) {
  check_floating_input(op, x);
  if (is_16bit_float(x.dtype())) {
    return elu_family(op, node, x.to(kFloat32), alpha, scale, input_scale).to(x.dtype());
  }
  // alpha * scale rounded as the kernel forms it: in float for a float32 input.
  const double negative_scale = x.dtype() == kFloat32
                                    ? static_cast<double>(static_cast<float>(alpha) * static_cast<float>(scale))
                                    : alpha * scale;
  Tensor y;
  {
    NoGradGuard no_grad;
    const Tensor negative = x <= 0;
    // expm1 only where it is taken (it would overflow elsewhere).
    y = where(negative, expm1(where(negative, x, 0) * input_scale) * negative_scale, x * scale);
  }
  if (autograd::needs_grad({&x})) {
    // PyTorch's gradient, exp(x * input_scale) times the coefficients, where the derivative of
    // the expm1 form (y + 1) would cancel: at x = -3 it was 4 ulps off, at -100 it was 0. Its own
    // derivative is 0 at x = 0, as PyTorch's second derivative (x < 0 there, not x <= 0).
    SavedTensor saved_input(x, false);
    auto backward = [saved_input, node, negative_scale, scale, input_scale](const std::vector<Tensor>& g) {
      const Tensor xv = saved_input.unpack(node);
      const Tensor slope = exp(where(xv < 0, xv, 0) * input_scale);
      return std::vector<Tensor>{where(xv <= 0, g[0] * input_scale * negative_scale * slope, g[0] * scale)};
    };
    autograd::record(node, {&x}, {&y}, backward);
  }
  return y;
}

}  // namespace

// PyTorch's node names: selu's gradient is elu's node, celu's has one of its own.
Tensor elu(const Tensor& x, double alpha) { return elu_family("elu", "EluBackward0", x, alpha, 1.0, 1.0); }

Tensor selu(const Tensor& x) {
  return elu_family("selu", "EluBackward0", x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946,
                    1.0);
}

Tensor celu(const Tensor& x, double alpha) {
  TD_CHECK(alpha != 0, "celu: alpha cannot be 0");
  return elu_family("celu", "CeluBackward0", x, alpha, 1.0, 1.0 / alpha);
}

namespace {

// The elu family's gradient from its result y: y + alpha * scale is the negative side's
// derivative times 1 / input_scale, as PyTorch's in-place backward takes it.
Tensor& elu_family_(const char* op, const char* node, Tensor& x, const std::function<Tensor(const Tensor&)>& activation,
                    double alpha, double scale, double input_scale) {
  const double negative_scale = alpha * scale;
  return activate_in_place(op, node, x, Keeps::result, activation, [=](const Tensor& g, const Tensor& y) {
    TD_CHECK(alpha >= 0, node, ": the in-place elu's gradient is taken from its result, which a negative alpha (",
             alpha, ") leaves ambiguous; use the out-of-place form");
    // At y = 0 (x = 0) its derivative in y is 0, as the out-of-place form's and PyTorch's.
    return where(y <= 0, g * input_scale * (where(y < 0, y, 0) + negative_scale), g * scale);
  });
}

}  // namespace

Tensor& elu_(Tensor& x, double alpha) {
  return elu_family_(
      "elu_", "EluBackward1", x, [alpha](const Tensor& v) { return elu(v, alpha); }, alpha, 1.0, 1.0);
}

Tensor& selu_(Tensor& x) {
  return elu_family_(
      "selu_", "EluBackward1", x, [](const Tensor& v) { return selu(v); }, 1.6732632423543772848170429916717,
      1.0507009873554804934193349852946, 1.0);
}

Tensor& celu_(Tensor& x, double alpha) {
  TD_CHECK(alpha != 0, "celu_: alpha cannot be 0");
  return elu_family_(
      "celu_", "CeluBackward1", x, [alpha](const Tensor& v) { return celu(v, alpha); }, alpha, 1.0, 1.0 / alpha);
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  check_floating_input("leaky_relu", x);
  return where(x > 0, x, x * negative_slope);
}

namespace {

// The gradient passes strictly between the bounds only.
Tensor hardtanh_grad(const Tensor& g, const Tensor& x, double min_val, double max_val) {
  return where((x <= min_val) + (x >= max_val), zeros_like(g), g);
}

}  // namespace

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  check_floating_input("hardtanh", x);
  TD_CHECK(min_val <= max_val, "hardtanh: min_val (", min_val, ") must not be above max_val (", max_val, ")");
  const Tensor y = values_of([&] { return x.clamp(min_val, max_val); });
  return with_gradient("HardtanhBackward0", x, y, [min_val, max_val](const Tensor& g, const Tensor& xv) {
    return hardtanh_grad(g, xv, min_val, max_val);
  });
}

namespace {

Tensor hardsigmoid_grad(const Tensor& g, const Tensor& x) {
  // PyTorch's factor: 1/6 rounded to float32, in every dtype.
  return where((x > -3) * (x < 3), g * static_cast<double>(1.0f / 6.0f), zeros_like(g));
}

Tensor hardswish_grad(const Tensor& g, const Tensor& x) {
  return where(x <= -3, zeros_like(g), where(x < 3, g * (x / 3 + 0.5), g));
}

// The derivative of x * tanh(softplus(x)): tanh(s) + x * sigmoid(x) * (1 - tanh(s)^2).
Tensor mish_grad(const Tensor& g, const Tensor& x) {
  const Tensor t = tanh(softplus(x));
  return g * (t + x * sigmoid(x) * (1 - t * t));
}

}  // namespace

Tensor relu6(const Tensor& x) { return hardtanh(x, 0, 6); }

Tensor& relu_(Tensor& x) {
  check_in_place("relu_", x);
  return x.relu_();
}

Tensor& leaky_relu_(Tensor& x, double negative_slope) {
  return activate_in_place(
      "leaky_relu_", "LeakyReluBackward1", x, Keeps::result,
      [=](const Tensor& v) { return leaky_relu(v, negative_slope); },
      [negative_slope](const Tensor& g, const Tensor& y) {
        TD_CHECK(negative_slope >= 0, "LeakyReluBackward1: the in-place leaky_relu's gradient is taken from its ",
                 "result, which a negative slope (", negative_slope, ") leaves ambiguous; use the out-of-place form");
        return where(y > 0, g, g * negative_slope);
      });
}

// The input is kept, as PyTorch keeps it: a 16-bit result at a bound the dtype cannot hold
// (0.7 in bfloat16 is 0.69921875) would not tell a clamped element from one inside.
Tensor& hardtanh_(Tensor& x, double min_val, double max_val) {
  TD_CHECK(min_val <= max_val, "hardtanh_: min_val (", min_val, ") must not be above max_val (", max_val, ")");
  return activate_in_place(
      "hardtanh_", "HardtanhBackward0", x, Keeps::input, [=](const Tensor& v) { return hardtanh(v, min_val, max_val); },
      [min_val, max_val](const Tensor& g, const Tensor& before) { return hardtanh_grad(g, before, min_val, max_val); });
}

Tensor& relu6_(Tensor& x) {
  check_in_place("relu6_", x);
  return hardtanh_(x, 0, 6);
}

Tensor& hardsigmoid_(Tensor& x) {
  return activate_in_place(
      "hardsigmoid_", "HardsigmoidBackward0", x, Keeps::input, [](const Tensor& v) { return hardsigmoid(v); },
      hardsigmoid_grad);
}

Tensor& hardswish_(Tensor& x) {
  return activate_in_place(
      "hardswish_", "HardswishBackward0", x, Keeps::input, [](const Tensor& v) { return hardswish(v); },
      hardswish_grad);
}

Tensor& silu_(Tensor& x) {
  check_in_place("silu_", x);
  return x.silu_();
}

Tensor& mish_(Tensor& x) {
  return activate_in_place(
      "mish_", "MishBackward0", x, Keeps::input, [](const Tensor& v) { return mish(v); }, mish_grad);
}

// The mask of what is at or below the threshold is all that is kept.
Tensor& threshold_(Tensor& x, double threshold, double value) {
  check_floating_input("threshold_", x);
  check_in_place("threshold_", x);
  const Tensor below = values_of([&] { return x <= threshold; });
  return x.masked_fill_(below, value);
}

Tensor hardsigmoid(const Tensor& x) {
  check_floating_input("hardsigmoid", x);
  if (is_16bit_float(x.dtype())) return hardsigmoid(x.to(kFloat32)).to(x.dtype());  // PyTorch's float32 and one rounding
  const Tensor y = values_of([&] { return (x + 3).clamp(0, 6) / 6; });
  return with_gradient("HardsigmoidBackward0", x, y, hardsigmoid_grad);
}

Tensor hardswish(const Tensor& x) {
  check_floating_input("hardswish", x);
  if (is_16bit_float(x.dtype())) return hardswish(x.to(kFloat32)).to(x.dtype());  // PyTorch's float32 and one rounding
  const Tensor y = values_of([&] { return x * (x + 3).clamp(0, 6) / 6; });
  return with_gradient("HardswishBackward0", x, y, hardswish_grad);
}

Tensor mish(const Tensor& x) {
  check_floating_input("mish", x);
  if (is_16bit_float(x.dtype())) return mish(x.to(kFloat32)).to(x.dtype());  // PyTorch's float32 and one rounding
  return x * tanh(softplus(x));
}

Tensor logsigmoid(const Tensor& x) {
  check_floating_input("logsigmoid", x);
  if (is_16bit_float(x.dtype())) return logsigmoid(x.to(kFloat32)).to(x.dtype());  // PyTorch's float32 and one rounding
  const Tensor y = values_of([&] { return minimum(x, zeros_like(x)) - log1p(exp(-abs(x))); });
  // PyTorch's gradient, 1 - z / (1 + z) below 0 and z / (1 + z) from 0 on, z = exp(-|x|).
  return with_gradient("LogSigmoidBackward0", x, y, [](const Tensor& g, const Tensor& xv) {
    const Tensor negative = xv < 0;
    const Tensor z = exp(where(negative, xv, -xv));
    return g * where(negative, 1 - z / (1 + z), z / (1 + z));
  });
}

Tensor softsign(const Tensor& x) {
  check_floating_input("softsign", x);
  return x / (abs(x) + 1);
}

Tensor tanhshrink(const Tensor& x) {
  check_floating_input("tanhshrink", x);
  return x - tanh(x);
}

Tensor hardshrink(const Tensor& x, double lambd) {
  check_floating_input("hardshrink", x);
  return where((x >= -lambd) * (x <= lambd), zeros_like(x), x);
}

Tensor softshrink(const Tensor& x, double lambd) {
  check_floating_input("softshrink", x);
  TD_CHECK(lambd >= 0, "softshrink: lambd must not be negative, got ", lambd);
  // NaN takes the moved branch, as in PyTorch (value NaN, gradient 1).
  return where((x >= -lambd) * (x <= lambd), zeros_like(x), where(x > 0, x - lambd, x + lambd));
}

Tensor threshold(const Tensor& x, double threshold, double value) {
  check_floating_input("threshold", x);
  return where(x <= threshold, full_like(x, value), x);
}

Tensor glu(const Tensor& x, int64_t dim) {
  check_floating_input("glu", x);
  if (is_16bit_float(x.dtype())) return glu(x.to(kFloat32), dim).to(x.dtype());  // PyTorch's float32 and one rounding
  TD_CHECK(x.dim() > 0, "glu: a 0-dim input has no dim to halve");
  const int64_t d = wrap_dim(dim, x.dim(), "glu");
  TD_CHECK(x.size(d) % 2 == 0, "glu: dim ", d, " of ", shape_str(x.sizes()), " has odd size ", x.size(d),
           "; it must halve");
  const std::vector<Tensor> halves = x.chunk(2, d);
  return halves[0] * sigmoid(halves[1]);
}

Tensor softmin(const Tensor& x, int64_t dim) {
  check_floating_input("softmin", x);
  return softmax(-x, dim);
}

Tensor prelu(const Tensor& x, const Tensor& weight) {
  check_floating_input("prelu", x);
  TD_CHECK(weight.defined(), "prelu: the weight is an undefined tensor");
  TD_CHECK(weight.dtype() == x.dtype() && weight.device() == x.device(), "prelu: the weight (", weight.dtype(), " on ",
           weight.device(), ") must have the input's dtype and device (", x.dtype(), " on ", x.device(), ")");
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  TD_CHECK(weight.dim() <= 1 && (weight.numel() == 1 || weight.numel() == channels), "prelu: the weight ",
           shape_str(weight.sizes()), " must have one value or one per channel (", channels, " in the input ",
           shape_str(x.sizes()), ")");
  Tensor w = weight;
  if (weight.numel() == 1) {
    w = weight.reshape({});
  } else {
    Shape per_channel(x.dim(), 1);
    per_channel[1] = channels;
    w = weight.view(per_channel);
  }
  return where(x > 0, x, w * x);
}

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
  check_floating_input("normalize", x);
  const int64_t d = wrap_dim(dim, x.dim(), "normalize");
  return x / x.norm(p, {d}, true).clamp_min(eps);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  TD_CHECK(x1.defined() && x2.defined(), "cosine_similarity: x1 and x2 must be defined");
  TD_CHECK(eps >= 0, "cosine_similarity: eps must not be negative, got ", eps);
  const DType common = promote_types(x1.dtype(), x2.dtype());
  TD_CHECK(is_floating(common), "cosine_similarity: expected floating tensors, got ", x1.dtype(), " and ", x2.dtype());
  if (amp::takes_float32(amp::Float32On::kCuda, {&x1, &x2})) {  // on autocast's float32 list for GPUs
    amp::SuspendAutocast inside;
    return cosine_similarity(amp::to_float32(x1), amp::to_float32(x2), dim, eps);
  }
  const Shape shape = broadcast_shapes(x1.sizes(), x2.sizes(), "cosine_similarity");
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(shape.size()), "cosine_similarity");
  auto prepare = [&](const Tensor& x) { return (is_floating(x.dtype()) ? x : x.to(common)).expand(shape); };
  const Tensor a = prepare(x1), b = prepare(x2);
  // The norms are clamped in place without grad mode, as PyTorch's are: their gradient is the
  // unclamped norm's.
  Tensor norm_a = a.norm(2, {d}, true).clone(), norm_b = b.norm(2, {d}, true).clone();
  {
    NoGradGuard no_grad;
    norm_a.clamp_(eps);
    norm_b.clamp_(eps);
  }
  return ((a / norm_a) * (b / norm_b)).sum({d});
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return mse_loss(amp::to_float32(input), amp::to_float32(target), reduction);
  }
  check_same_shape(input, target, "mse_loss");
  Tensor d = input - target;
  return reduce(d * d, reduction, "mse_loss");
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return l1_loss(amp::to_float32(input), amp::to_float32(target), reduction);
  }
  check_same_shape(input, target, "l1_loss");
  return reduce(abs(input - target), reduction, "l1_loss");
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return smooth_l1_loss(amp::to_float32(input), amp::to_float32(target), reduction, beta);
  }
  check_same_shape(input, target, "smooth_l1_loss");
  TD_CHECK(beta >= 0, "smooth_l1_loss: beta must not be negative, got ", beta);
  if (beta == 0) return l1_loss(input, target, reduction);
  Tensor z = abs(input - target);
  return reduce(where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta), reduction, "smooth_l1_loss");
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return huber_loss(amp::to_float32(input), amp::to_float32(target), reduction, delta);
  }
  check_same_shape(input, target, "huber_loss");
  TD_CHECK(delta > 0, "huber_loss: delta must be positive, got ", delta);
  Tensor z = abs(input - target);
  return reduce(where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta)), reduction, "huber_loss");
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  // PyTorch refuses it under autocast on GPUs: float16 probabilities near 0 and 1 lose the logs.
  TD_CHECK(!(input.defined() && input.is_cuda() && amp::is_active(kCUDA)),
           "binary_cross_entropy: unsafe to autocast on ", input.device(), " (float16 probabilities near 0 and 1 ",
           "lose the loss); use binary_cross_entropy_with_logits (BCEWithLogitsLoss), which combines the sigmoid and ",
           "the loss safely, or suspend autocast around it with amp::AutocastGuard(kCUDA, std::nullopt, false)");
  if (autocast_takes_loss({&input, &target, &weight})) {
    amp::SuspendAutocast inside;
    return binary_cross_entropy(amp::to_float32(input), amp::to_float32(target), amp::to_float32(weight), reduction);
  }
  check_same_shape(input, target, "binary_cross_entropy");
  TD_CHECK(is_floating(input.dtype()) && is_floating(target.dtype()), "binary_cross_entropy: input and target must "
           "be floating, got ", input.dtype(), " and ", target.dtype());
  check_weight_fits("binary_cross_entropy", "weight", weight, input);
  Tensor loss;
  {
    NoGradGuard no_grad;
    auto probabilities = [](const Tensor& t) {
      return t.numel() == 0 || where(ge(t, 0), le(t, 1), false).all().item<bool>();
    };
    TD_CHECK(probabilities(input), "binary_cross_entropy: every element of the input must be between 0 and 1");
    TD_CHECK(probabilities(target), "binary_cross_entropy: every element of the target must be between 0 and 1");
    // PyTorch's form: log1p(-x), exact for a small x where log(1 - x) rounds 1 - x to 1.
    loss = (target - 1) * clamp(log1p(-input), -100, std::nullopt) - target * clamp(log(input), -100, std::nullopt);
  }
  if (autograd::needs_grad({&input, &target})) {
    // PyTorch's gradients: the input's finite also where it is 0 or 1 (log's own would be
    // infinite there), the target's -logit(input).
    SavedTensor saved_input(input, false), saved_target(target, false);
    autograd::record("BinaryCrossEntropyBackward0", {&input, &target}, {&loss},
                     [saved_input, saved_target](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                       Tensor x = saved_input.unpack("BinaryCrossEntropyBackward0");
                       Tensor t = saved_target.unpack("BinaryCrossEntropyBackward0");
                       // PyTorch's floor is the float 1e-12 (9.99999996e-13 as a double).
                       const double floor = static_cast<double>(1e-12f);
                       Tensor grad_input = g[0] * (x - t) / clamp((1 - x) * x, floor, std::nullopt);
                       Tensor grad_target = g[0] * -log(x / (1 - x));  // -logit(x), unclamped as in PyTorch
                       return {grad_input, grad_target};
                     });
  }
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, reduction, "binary_cross_entropy");
}

namespace {

// Batch-first views of a class-scoring input and its index target: [N, C, ...] and [N, ...]
// (a single unbatched [C] input with a 0-dim target becomes a batch of one).
// Class indices as int64: PyTorch also takes uint8 targets.
Tensor class_indices(const Tensor& target) {
  return target.defined() && target.dtype() == kUInt8 ? target.to(kInt64) : target;
}

std::pair<Tensor, Tensor> batch_first(const Tensor& input, const Tensor& target, const char* op) {
  TD_CHECK(input.defined() && target.defined(), op, ": input and target must be defined");
  if (input.dim() == 1) {
    TD_CHECK(target.dim() == 0, op, ": a 1-D input of class scores takes a 0-dim target, got shape ",
             shape_str(target.sizes()));
    return {input.unsqueeze(0), target.unsqueeze(0)};
  }
  TD_CHECK(input.dim() >= 1, op, ": expected an input of class scores of 1 or more dims, got a 0-dim one");
  Shape expected = input.sizes();
  expected.erase(expected.begin() + 1);
  TD_CHECK(target.sizes() == expected, op, ": input of shape ", shape_str(input.sizes()),
           " needs a target of shape ", shape_str(expected), ", got ", shape_str(target.sizes()));
  return {input, target};
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target_in, const Tensor& weight, int64_t ignore_index,
                Reduction reduction) {
  const Tensor target = class_indices(target_in);
  if (autocast_takes_loss({&input, &weight})) {
    amp::SuspendAutocast inside;
    return nll_loss(amp::to_float32(input), target, amp::to_float32(weight), ignore_index, reduction);
  }
  auto [x, t] = batch_first(input, target, "nll_loss");
  TD_CHECK(t.dtype() == kInt64, "nll_loss: expected an int64 (or uint8) target of class indices, got ", t.dtype());
  const int64_t classes = x.size(1);
  TD_CHECK(!weight.defined() || weight.sizes() == Shape{classes}, "nll_loss: weight must have shape [", classes,
           "], got ", shape_str(weight.sizes()));
  Tensor ignored = t == ignore_index;
  Tensor safe = where(ignored, 0, t);
  if (safe.numel() > 0) {
    int64_t lo = safe.amin().item<int64_t>(), hi = safe.amax().item<int64_t>();
    TD_CHECK(lo >= 0 && hi < classes, "nll_loss: target ", lo < 0 ? lo : hi, " is out of bounds for ", classes,
             " classes");
  }
  Tensor picked = x.gather(1, safe.unsqueeze(1)).squeeze(1);
  Tensor w = weight.defined() ? weight.index_select(0, safe.reshape({-1})).view(safe.sizes()).to(x.dtype())
                              : ones_like(picked);
  w = masked_fill(w, ignored, 0);
  // Ignored rows are 0 whatever their scores (-inf times a weight of 0 would be NaN), as in PyTorch.
  Tensor losses = masked_fill(-picked * w, ignored, 0);
  Tensor out;
  switch (reduction) {
    case kNone: out = losses; break;
    case kSum: out = losses.sum(); break;
    case kMean: out = losses.sum() / w.sum(); break;
    case kBatchMean: refuse_batchmean("nll_loss");
  }
  return input.dim() == 1 && reduction == kNone ? out.squeeze(0) : out;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target_in, const Tensor& weight, int64_t ignore_index,
                     Reduction reduction, double label_smoothing) {
  const Tensor target = class_indices(target_in);
  if (autocast_takes_loss({&input, &target, &weight})) {
    amp::SuspendAutocast inside;
    return cross_entropy(amp::to_float32(input), amp::to_float32(target), amp::to_float32(weight), ignore_index, reduction,
                         label_smoothing);
  }
  TD_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "cross_entropy: label_smoothing must be in [0, 1], got ",
           label_smoothing);
  TD_CHECK(input.defined() && target.defined(), "cross_entropy: input and target must be defined");
  TD_CHECK(input.dim() >= 1, "cross_entropy: expected an input of class scores of 1 or more dims, got a 0-dim one");
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(class_dim);
  Shape weight_shape(input.dim(), 1);
  weight_shape[class_dim] = classes;
  if (is_floating(target.dtype())) {  // class probabilities
    TD_CHECK(target.sizes() == input.sizes(), "cross_entropy: probability targets must have the input's shape ",
             shape_str(input.sizes()), ", got ", shape_str(target.sizes()));
    // As PyTorch: no class is left out of a probability target's sum, and the weight has one value per class.
    TD_CHECK(ignore_index == -100, "cross_entropy: ignore_index (", ignore_index,
             ") is not supported for probability targets");
    TD_CHECK(!weight.defined() || weight.sizes() == Shape{classes}, "cross_entropy: weight of shape ",
             shape_str(weight.defined() ? weight.sizes() : Shape{}), " must have one value for each of the ", classes,
             " classes");
    Tensor logp = log_softmax(input, class_dim);
    Tensor q = label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / classes : target;
    Tensor terms = logp * q;
    if (weight.defined()) terms = terms * weight.view(weight_shape);
    Tensor losses = -terms.sum({class_dim});
    // The rows' count; with no classes 0 / 0, a NaN mean as PyTorch's (an integer division trapped).
    if (reduction == kMean) return losses.sum() / (static_cast<double>(input.numel()) / static_cast<double>(classes));
    return reduce(losses, reduction, "cross_entropy");
  }
  auto [scores, classes_of] = batch_first(input, target, "cross_entropy");
  TD_CHECK(classes_of.dtype() == kInt64, "cross_entropy: expected an int64 (or uint8) target of class indices, got ",
           classes_of.dtype());
  const bool weight_fits = !weight.defined() || (weight.sizes() == Shape{classes} && weight.dtype() == input.dtype() &&
                                                 weight.device() == input.device() && !weight.requires_grad());
  if (weight_fits && is_floating(input.dtype())) {
    // Rows of class scores: [N, C, d...] -> [N * d..., C].
    Shape class_last{0};
    for (int64_t d = 2; d < scores.dim(); ++d) class_last.push_back(d);
    class_last.push_back(1);
    Tensor rows = scores.dim() == 2 ? scores : scores.permute(class_last).reshape({-1, classes});
    auto [losses, target_weights] =
        fused_cross_entropy(rows, classes_of.reshape({-1}), weight, ignore_index, label_smoothing);
    switch (reduction) {
      case kNone: return losses.sizes() == target.sizes() ? losses : losses.view(target.sizes());
      case kSum: return losses.sum();
      case kMean: {
        // 16-bit sums of many rows would overflow: both in float32, the quotient rounded once.
        if (!is_16bit_float(input.dtype())) return losses.sum() / target_weights.sum();
        return (losses.sum(kFloat32) / target_weights.sum(kFloat32)).to(input.dtype());
      }
      case kBatchMean: refuse_batchmean("cross_entropy");
    }
  }
  Tensor logp = log_softmax(input, class_dim);
  Tensor nll = nll_loss(logp, target, weight, ignore_index, reduction);
  if (label_smoothing == 0) return nll;
  // PyTorch's smoothing term: the (weighted) sum of -log p over the classes.
  Tensor ignored = target == ignore_index;
  Tensor smooth = -(weight.defined() ? logp * weight.view(weight_shape) : logp).sum({class_dim});
  smooth = masked_fill(smooth, ignored, 0);
  Tensor term;
  switch (reduction) {
    case kNone: term = smooth; break;
    case kSum: term = smooth.sum(); break;
    case kMean:
      if (weight.defined()) {
        Tensor safe = where(ignored, 0, target);
        Tensor w = masked_fill(weight.index_select(0, safe.reshape({-1})).view(safe.sizes()), ignored, 0);
        term = smooth.sum() / w.sum();
      } else {
        term = smooth.sum() / (static_cast<double>(ignored.numel()) - ignored.sum().item<double>());
      }
      break;
    case kBatchMean: refuse_batchmean("cross_entropy");
  }
  return nll * (1 - label_smoothing) + term * (label_smoothing / classes);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  if (autocast_takes_loss({&input, &target, &weight, &pos_weight})) {
    amp::SuspendAutocast inside;
    return binary_cross_entropy_with_logits(amp::to_float32(input), amp::to_float32(target), amp::to_float32(weight),
                                            amp::to_float32(pos_weight), reduction);
  }
  TD_CHECK(input.defined() && target.defined() && input.sizes() == target.sizes(),
           "binary_cross_entropy_with_logits: input and target must have the same shape");
  check_weight_fits("binary_cross_entropy_with_logits", "weight", weight, input);
  check_weight_fits("binary_cross_entropy_with_logits", "pos_weight", pos_weight, input);
  // log(1 + exp(-x)) computed without overflow: log1p(exp(-|x|)) + max(-x, 0).
  auto softplus_neg = [](const Tensor& x) { return log1p(exp(-abs(x))) + relu(-x); };
  Tensor loss;
  {
    NoGradGuard no_grad;
    const Tensor sp = softplus_neg(input);
    loss = pos_weight.defined() ? (1 - target) * input + ((pos_weight - 1) * target + 1) * sp
                                : (1 - target) * input + sp;
  }
  if (autograd::needs_grad({&input, &target, &pos_weight})) {
    // PyTorch's gradients. Autograd through the form above would take the kinks of |x| and
    // max(-x, 0) at x = 0, where their slopes (0 and 0) do not add up to softplus's (-1/2): a
    // logit of exactly 0 got 1 - t instead of sigmoid(0) - t.
    SavedTensor saved_input(input, false), saved_target(target, false), saved_pos(pos_weight, false);
    autograd::record(
        "BinaryCrossEntropyWithLogitsBackward0", {&input, &target, &pos_weight}, {&loss},
        [saved_input, saved_target, saved_pos, softplus_neg](const std::vector<Tensor>& g) -> std::vector<Tensor> {
          const char* name = "BinaryCrossEntropyWithLogitsBackward0";
          const Tensor x = saved_input.unpack(name), t = saved_target.unpack(name);
          if (!saved_pos.defined()) return {g[0] * (sigmoid(x) - t), g[0] * -x, Tensor()};
          const Tensor p = saved_pos.unpack(name), pt = p * t;
          // d/dx: ((p - 1) t + 1) sigmoid(x) - p t; d/dt: (p - 1) softplus(-x) - x; d/dp: t softplus(-x).
          const Tensor grad_input = g[0] * ((pt - t + 1) * sigmoid(x) - pt);
          const Tensor grad_target = g[0] * ((p - 1) * softplus_neg(x) - x);
          const Tensor grad_pos = g[0] * t * softplus_neg(x);
          return {autograd::sum_to(grad_input, x.sizes()), autograd::sum_to(grad_target, t.sizes()),
                  autograd::sum_to(grad_pos, p.sizes())};
        });
  }
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, reduction, "binary_cross_entropy_with_logits");
}

// ---- margin and likelihood losses ----

namespace {

void check_floating_operands(const char* op, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    TD_CHECK(!t->defined() || is_floating(t->dtype()), op, ": expected floating inputs, got ", t->dtype());
  }
}

}  // namespace

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  TD_CHECK(x1.defined() && x2.defined(), "pairwise_distance: x1 and x2 must be defined");
  check_floating_operands("pairwise_distance", {&x1, &x2});
  broadcast_shapes(x1.sizes(), x2.sizes(), "pairwise_distance");
  const Tensor difference = x1 - x2 + eps;
  // Two numbers: the norm of the one difference, as PyTorch's.
  if (difference.dim() == 0) return difference.unsqueeze(0).norm(p, {0});
  return difference.norm(p, {difference.dim() - 1}, keepdim);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           Reduction reduction) {
  if (autocast_takes_loss({&input1, &input2, &target})) {
    amp::SuspendAutocast inside;
    return margin_ranking_loss(amp::to_float32(input1), amp::to_float32(input2), amp::to_float32(target), margin,
                               reduction);
  }
  check_same_shape(input1, input2, "margin_ranking_loss");
  check_same_shape(input1, target, "margin_ranking_loss");
  check_floating_operands("margin_ranking_loss", {&input1, &input2});
  return reduce(clamp(-target * (input1 - input2) + margin, 0), reduction, "margin_ranking_loss");
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin, Reduction reduction) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return hinge_embedding_loss(amp::to_float32(input), amp::to_float32(target), margin, reduction);
  }
  check_same_shape(input, target, "hinge_embedding_loss");
  check_floating_operands("hinge_embedding_loss", {&input});
  const Tensor zero = zeros_like(input);
  const Tensor below_margin = where(target != 1, clamp(margin - input, 0), zero);
  return reduce(below_margin + where(target != -1, input, zero), reduction, "hinge_embedding_loss");
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return soft_margin_loss(amp::to_float32(input), amp::to_float32(target), reduction);
  }
  check_same_shape(input, target, "soft_margin_loss");
  check_floating_operands("soft_margin_loss", {&input});
  return reduce(log1p(exp(-input * target)), reduction, "soft_margin_loss");
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             Reduction reduction) {
  if (autocast_takes_loss({&input1, &input2, &target})) {
    amp::SuspendAutocast inside;
    return cosine_embedding_loss(amp::to_float32(input1), amp::to_float32(input2), amp::to_float32(target), margin,
                                 reduction);
  }
  check_same_shape(input1, input2, "cosine_embedding_loss");
  TD_CHECK(target.defined() && target.dim() <= 1 && input1.dim() == target.dim() + 1 &&
               (target.dim() == 0 || target.size(0) == input1.size(0)),
           "cosine_embedding_loss: expected inputs [N, D] with a target [N], or inputs [D] with a 0-D target, got ",
           shape_str(input1.sizes()), " and ", target.defined() ? shape_str(target.sizes()) : "none");
  check_floating_operands("cosine_embedding_loss", {&input1, &input2});
  // PyTorch's form: a small constant in each squared norm keeps zero vectors finite.
  constexpr double kEpsilon = 1e-12;
  const int64_t dim = target.dim();
  const Tensor products = (input1 * input2).sum({dim});
  const Tensor squares1 = (input1 * input1).sum({dim}) + kEpsilon, squares2 = (input2 * input2).sum({dim}) + kEpsilon;
  const Tensor cosine = products / sqrt(squares1 * squares2), zero = zeros_like(cosine);
  const Tensor loss = where(target == 1, 1 - cosine, zero) + where(target == -1, clamp(cosine - margin, 0), zero);
  return reduce(loss, reduction, "cosine_embedding_loss");
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const DistanceFunction& distance_function, double margin, bool swap,
                                         Reduction reduction) {
  constexpr const char* op = "triplet_margin_with_distance_loss";
  TD_CHECK(anchor.defined() && positive.defined() && negative.defined(), op,
           ": anchor, positive and negative must be defined");
  TD_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(), op, ": anchor ",
           shape_str(anchor.sizes()), ", positive ", shape_str(positive.sizes()), " and negative ",
           shape_str(negative.sizes()), " must have one number of dims");
  TD_CHECK(margin > 0, op, ": margin must be positive, got ", margin);
  const DistanceFunction distance =
      distance_function ? distance_function : [](const Tensor& a, const Tensor& b) { return pairwise_distance(a, b); };
  const Tensor to_positive = distance(anchor, positive);
  Tensor to_negative = distance(anchor, negative);
  if (swap) to_negative = minimum(to_negative, distance(positive, negative));
  return reduce(clamp(margin + to_positive - to_negative, 0), reduction, op);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, Reduction reduction) {
  if (autocast_takes_loss({&anchor, &positive, &negative})) {
    amp::SuspendAutocast inside;
    return triplet_margin_loss(amp::to_float32(anchor), amp::to_float32(positive), amp::to_float32(negative), margin,
                               p, eps, swap, reduction);
  }
  TD_CHECK(anchor.defined() && positive.defined() && negative.defined() && anchor.dim() == positive.dim() &&
               anchor.dim() == negative.dim(),
           "triplet_margin_loss: anchor, positive and negative must be defined, with one number of dims");
  TD_CHECK(margin > 0, "triplet_margin_loss: margin must be positive, got ", margin);
  TD_CHECK(p >= 0, "triplet_margin_loss: the norm p must not be negative, got ", p);
  return triplet_margin_with_distance_loss(
      anchor, positive, negative,
      [p, eps](const Tensor& a, const Tensor& b) { return pairwise_distance(a, b, p, eps); }, margin, swap,
      reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        Reduction reduction) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return poisson_nll_loss(amp::to_float32(input), amp::to_float32(target), log_input, full, eps, reduction);
  }
  check_same_shape(input, target, "poisson_nll_loss");
  check_floating_operands("poisson_nll_loss", {&input});
  // Counts may be integers, as PyTorch's type promotion takes them.
  const Tensor counts = is_floating(target.dtype()) ? target : target.to(input.dtype());
  Tensor loss = log_input ? exp(input) - counts * input : input - counts * log(input + eps);
  if (full) {
    const double two_pi = 2 * std::acos(-1.0);
    const Tensor stirling = counts * log(counts) - counts + 0.5 * log(two_pi * counts);
    loss = loss + where(counts <= 1, zeros_like(stirling), stirling);
  }
  return reduce(loss, reduction, "poisson_nll_loss");
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full, double eps,
                         Reduction reduction) {
  constexpr const char* op = "gaussian_nll_loss";
  if (autocast_takes_loss({&input, &target, &var})) {
    amp::SuspendAutocast inside;
    return gaussian_nll_loss(amp::to_float32(input), amp::to_float32(target), amp::to_float32(var), full, eps,
                             reduction);
  }
  TD_CHECK(input.defined() && target.defined() && var.defined(), op, ": input, target and var must be defined");
  check_floating_operands(op, {&input, &target, &var});
  TD_CHECK(reduction != kBatchMean, op, ": reduction batchmean is kl_div's only; use mean or sum");
  // As PyTorch's: the target broadcasts against the input; var is the input's shape, or lacks its
  // last dim, or has the input's dims with exactly one of them 1 (one variance along that dim).
  broadcast_shapes(input.sizes(), target.sizes(), op);
  const Shape& in = input.sizes();
  Tensor variance = var;
  if (var.sizes() != in) {
    const bool without_last = !in.empty() && var.sizes() == Shape(in.begin(), in.end() - 1);
    int64_t mismatched = 0;
    if (var.dim() == input.dim()) {
      for (int64_t d = 0; d < var.dim(); ++d) mismatched += var.size(d) != input.size(d) ? var.size(d) : 0;
    }
    TD_CHECK(without_last || (var.dim() == input.dim() && mismatched == 1), op, ": var ", shape_str(var.sizes()),
             " must be the input's shape ", shape_str(in),
             ", lack its last dim, or differ from it in one dim of size 1");
    if (without_last) variance = var.unsqueeze(-1);
  }
  {
    NoGradGuard no_grad;
    TD_CHECK(!(var < 0).any().item<bool>(), op, ": var has a negative entry");
  }
  // Clamped in place without grad mode, as PyTorch's: the gradient passes the clamp.
  variance = variance.clone();
  {
    NoGradGuard no_grad;
    variance.clamp_(eps);
  }
  const Tensor difference = input - target;
  Tensor loss = 0.5 * (log(variance) + difference * difference / variance);
  if (full) loss = loss + 0.5 * std::log(2 * std::acos(-1.0));
  return reduce(loss, reduction, op);
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   Reduction reduction) {
  constexpr const char* op = "multilabel_soft_margin_loss";
  if (autocast_takes_loss({&input, &target, &weight})) {
    amp::SuspendAutocast inside;
    return multilabel_soft_margin_loss(amp::to_float32(input), amp::to_float32(target), amp::to_float32(weight),
                                       reduction);
  }
  check_same_shape(input, target, op);
  TD_CHECK(input.dim() >= 1, op, ": expected an input [..., C], got ", shape_str(input.sizes()));
  check_floating_operands(op, {&input, &weight});
  const int64_t classes = input.size(-1);
  const Tensor present = is_floating(target.dtype()) ? target : target.to(input.dtype());
  Tensor loss = -(present * logsigmoid(input) + (1 - present) * logsigmoid(-input));
  if (weight.defined()) {
    TD_CHECK(weight.sizes() == Shape{classes}, op, ": weight must be [", classes, "], got ",
             shape_str(weight.sizes()));
    loss = loss * weight;
  }
  return reduce(loss.sum({-1}) / static_cast<double>(classes), reduction, op);
}

namespace {

// A class-index target for a score input [N, C] (or [C] with a 0-D target), checked as `op`.
void check_class_target(const char* op, const Tensor& input, const Tensor& target, bool per_class) {
  TD_CHECK(input.defined() && target.defined(), op, ": input and target must be defined");
  TD_CHECK(input.dim() == 1 || input.dim() == 2, op, ": expected an input [N, C] or [C], got ",
           shape_str(input.sizes()));
  const Shape expected = per_class ? input.sizes() : Shape(input.sizes().begin(), input.sizes().end() - 1);
  // A [C] input takes a 0-D target, or (as PyTorch) a target of one.
  const bool one = !per_class && input.dim() == 1 && target.sizes() == Shape{1};
  TD_CHECK(one || target.sizes() == expected, op, ": target must be ", shape_str(expected), " for the input ",
           shape_str(input.sizes()), ", got ", shape_str(target.sizes()));
  TD_CHECK(target.dtype() == kInt64, op, ": target must hold int64 class indices, got ", target.dtype());
  check_floating_operands(op, {&input});
  const int64_t classes = input.size(-1);
  NoGradGuard no_grad;
  const bool in_range = target.numel() == 0 || (target.min().item<int64_t>() >= (per_class ? -1 : 0) &&
                                                target.max().item<int64_t>() < classes);
  TD_CHECK(in_range, op, ": target holds a class outside [0, ", classes, ")", per_class ? " (or -1)" : "");
}

}  // namespace

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin, const Tensor& weight,
                         Reduction reduction) {
  constexpr const char* op = "multi_margin_loss";
  if (autocast_takes_loss({&input, &weight})) {
    amp::SuspendAutocast inside;
    return multi_margin_loss(amp::to_float32(input), target, p, margin, amp::to_float32(weight), reduction);
  }
  check_class_target(op, input, target, false);
  TD_CHECK(p == 1 || p == 2, op, ": p must be 1 or 2, got ", p);
  const int64_t classes = input.size(-1);
  TD_CHECK(!weight.defined() || weight.sizes() == Shape{classes}, op, ": weight must be [", classes, "], got ",
           weight.defined() ? shape_str(weight.sizes()) : "");
  const Tensor rows = input.dim() == 1 ? input.unsqueeze(0) : input, labels = target.reshape({-1, 1});
  // Each class's margin violation against the sample's own class, which itself does not count.
  // Only positive violations count, as PyTorch's `if (z > 0)`: a NaN one does not.
  const Tensor z = margin - rows.gather(1, labels) + rows;
  const Tensor counts = where(z > 0, one_hot(labels.squeeze(1), classes) == 0, false);
  Tensor loss = where(counts, p == 1 ? z : z * z, zeros_like(z));
  if (weight.defined()) loss = loss * weight.index_select(0, labels.squeeze(1)).unsqueeze(1);
  loss = loss.sum({1}) / static_cast<double>(classes);
  return reduce(input.dim() == 1 && target.dim() == 0 ? loss.squeeze(0) : loss, reduction, op);
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  constexpr const char* op = "multilabel_margin_loss";
  if (autocast_takes_loss({&input})) {
    amp::SuspendAutocast inside;
    return multilabel_margin_loss(amp::to_float32(input), target, reduction);
  }
  check_class_target(op, input, target, true);
  const int64_t classes = input.size(-1);
  const Tensor rows = input.dim() == 1 ? input.unsqueeze(0) : input;
  const Tensor labels = target.dim() == 1 ? target.unsqueeze(0) : target;
  // The sample's classes: its target entries before the first -1.
  const Tensor listed = cumprod(labels >= 0, 1).to(rows.dtype());                      // [N, C]: entry t counts
  const Tensor classes_of = one_hot(clamp(labels, 0), classes).to(rows.dtype());       // [N, C (t), C]
  const Tensor is_class = (classes_of * listed.unsqueeze(2)).amax({1});               // [N, C]
  // violation[n, t, j] = max(0, 1 - (input[target[n, t]] - input[j])), for listed t and other j.
  const Tensor at_class = rows.gather(1, clamp(labels, 0));
  // Only positive violations of listed pairs count, as PyTorch's `if (z > 0)`: a NaN one does not.
  const Tensor z = 1 - at_class.unsqueeze(2) + rows.unsqueeze(1);
  const Tensor counted = (listed.unsqueeze(2) * (1 - is_class).unsqueeze(1)) > 0;
  const Tensor loss = where(where(counted, z > 0, false), z, zeros_like(z)).sum({1, 2}) / static_cast<double>(classes);
  return reduce(input.dim() == 1 ? loss.squeeze(0) : loss, reduction, op);
}

// ---- CTC ----

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  constexpr const char* op = "ctc_loss";
  if (autocast_takes_loss({&log_probs})) {
    amp::SuspendAutocast inside;
    return ctc_loss(amp::to_float32(log_probs), targets, input_lengths, target_lengths, blank, reduction,
                    zero_infinity);
  }
  TD_CHECK(log_probs.defined() && targets.defined() && input_lengths.defined() && target_lengths.defined(), op,
           ": log_probs, targets, input_lengths and target_lengths must be defined");
  TD_CHECK(log_probs.dim() == 2 || log_probs.dim() == 3, op, ": log_probs must be [T, N, C] or [T, C], got ",
           shape_str(log_probs.sizes()));
  check_floating_operands(op, {&log_probs});
  TD_CHECK(reduction != kBatchMean, op, ": reduction batchmean is kl_div's only; use mean or sum");
  const bool unbatched = log_probs.dim() == 2;
  const Tensor lp = unbatched ? log_probs.unsqueeze(1) : log_probs;
  const int64_t frames = lp.size(0), batch = lp.size(1), classes = lp.size(2);
  TD_CHECK(blank >= 0 && blank < classes, op, ": blank ", blank, " is not one of the ", classes, " classes");
  for (const Tensor* t : {&targets, &input_lengths, &target_lengths}) {
    TD_CHECK(!is_floating(t->dtype()) && t->dtype() != kBool, op, ": targets and lengths must be integers, got ",
             t->dtype());
  }
  const std::vector<int64_t> in_lengths = host_integers(input_lengths), out_lengths = host_integers(target_lengths);
  TD_CHECK(static_cast<int64_t>(in_lengths.size()) == batch && static_cast<int64_t>(out_lengths.size()) == batch, op,
           ": input_lengths and target_lengths need one length per sequence (", batch, "), got ", in_lengths.size(),
           " and ", out_lengths.size());
  // Each sequence's labels: a row of a padded [N, S] target, or its run of a 1-D one.
  const std::vector<int64_t> flat = host_integers(targets);
  const bool padded = targets.dim() == 2 || (unbatched && targets.dim() == 1);
  std::vector<std::vector<int64_t>> labels(batch);
  int64_t next = 0, longest = 0;
  for (int64_t n = 0; n < batch; ++n) {
    TD_CHECK(in_lengths[n] >= 0 && in_lengths[n] <= frames, op, ": input length ", in_lengths[n], " of sequence ", n,
             " is outside [0, ", frames, "]");
    TD_CHECK(out_lengths[n] >= 0, op, ": target length ", out_lengths[n], " of sequence ", n, " is negative");
    const int64_t row = padded ? (unbatched ? static_cast<int64_t>(flat.size()) : targets.size(1)) : out_lengths[n];
    const int64_t start = padded ? n * row : next;
    TD_CHECK(out_lengths[n] <= row && start + out_lengths[n] <= static_cast<int64_t>(flat.size()), op,
             ": target length ", out_lengths[n], " of sequence ", n, " passes the targets ",
             shape_str(targets.sizes()));
    labels[n].assign(flat.begin() + start, flat.begin() + start + out_lengths[n]);
    for (int64_t label : labels[n]) {
      TD_CHECK(label >= 0 && label < classes && label != blank, op, ": target label ", label, " of sequence ", n,
               " must be a class in [0, ", classes, ") other than the blank ", blank);
    }
    next += out_lengths[n];
    longest = std::max(longest, out_lengths[n]);
  }
  // The extended labels (a blank before, between and after the labels), and where a state may be
  // reached from two states back (a label unlike the one before it).
  const int64_t states = 2 * longest + 1;
  std::vector<int64_t> extended(batch * states, blank);
  std::vector<double> skip(batch * states, 0), feasible(batch, 1), last_two(batch * states, 0);
  for (int64_t n = 0; n < batch; ++n) {
    const auto& l = labels[n];
    int64_t repeats = 0;
    for (size_t k = 0; k < l.size(); ++k) {
      extended[n * states + 2 * k + 1] = l[k];
      if (k > 0 && l[k] != l[k - 1]) skip[n * states + 2 * k + 1] = 1;
      if (k > 0 && l[k] == l[k - 1]) ++repeats;
    }
    // A target fits when there are frames for its labels and a blank between each repeat.
    feasible[n] = static_cast<int64_t>(l.size()) + repeats <= in_lengths[n] ? 1 : 0;
    const int64_t end = 2 * static_cast<int64_t>(l.size());
    last_two[n * states + end] = 1;
    if (end > 0) last_two[n * states + end - 1] = 1;
  }
  const Device device = lp.device();
  const TensorOptions options = TensorOptions(lp.dtype()).device(device);
  // Unreachable states hold a very negative finite log-probability instead of -inf, so that no
  // logsumexp sees only -inf (whose gradient is NaN); paths through them contribute exp(-1e30) = 0.
  const double unreachable = -1e30;
  const Tensor gather_index = tensor(extended).to(device).view({batch, states});
  // A frame's emission log-probabilities, -inf ones (masked classes) held at the sentinel too.
  auto emissions = [&](int64_t t) { return clamp(lp[t].gather(1, gather_index), unreachable); };
  const Tensor may_skip = tensor(skip).to(device, lp.dtype()).view({batch, states}) > 0;
  const Tensor wall = full({batch, 1}, unreachable, options);
  // alpha over the states at frame t, each sequence's frozen once its input ends.
  Tensor alpha = full({batch, states}, unreachable, options);
  {
    const Tensor emit = emissions(0);
    const int64_t opening = std::min<int64_t>(2, states);
    const Tensor start = cat({emit.narrow(1, 0, opening), full({batch, states - opening}, unreachable, options)}, 1);
    std::vector<double> live;
    for (int64_t n = 0; n < batch; ++n) live.push_back(in_lengths[n] > 0 ? 1 : 0);
    alpha = where(tensor(live).to(device).unsqueeze(1) > 0, start, alpha);
  }
  for (int64_t t = 1; t < frames; ++t) {
    const Tensor one_back = cat({wall, alpha.narrow(1, 0, states - 1)}, 1);
    const Tensor two_back = where(may_skip, cat({wall, wall, alpha.narrow(1, 0, std::max<int64_t>(states - 2, 0))}, 1)
                                                .narrow(1, 0, states),
                                  full({batch, states}, unreachable, options));
    const Tensor stepped = logsumexp(stack({alpha, one_back, two_back}, 0), {0}) + emissions(t);
    std::vector<double> running;
    for (int64_t n = 0; n < batch; ++n) running.push_back(t < in_lengths[n] ? 1 : 0);
    alpha = where(tensor(running).to(device).unsqueeze(1) > 0, stepped, alpha);
  }
  const Tensor ends = tensor(last_two).to(device).view({batch, states}) > 0;
  Tensor loss = -logsumexp(where(ends, alpha, full({batch, states}, unreachable, options)), {1});
  // No frames and no labels: the empty alignment, probability 1.
  std::vector<double> nothing;
  for (int64_t n = 0; n < batch; ++n) nothing.push_back(in_lengths[n] == 0 && out_lengths[n] == 0 ? 1 : 0);
  loss = where(tensor(nothing).to(device) > 0, zeros_like(loss), loss);
  // Infinite where nothing fits: a target too long for its input, or every path through a class
  // of probability 0 (the sentinel's loss, near 1e30); zero_infinity makes those 0, with no gradient.
  const Tensor infinite = where(tensor(feasible).to(device) > 0, loss > 1e29, true);
  loss = where(infinite, full({batch}, zero_infinity ? 0.0 : std::numeric_limits<double>::infinity(), options), loss);
  if (reduction == kMean) {
    std::vector<double> divisors;
    for (int64_t length : out_lengths) divisors.push_back(static_cast<double>(std::max<int64_t>(length, 1)));
    return (loss / tensor(divisors).to(device, lp.dtype())).mean();
  }
  if (reduction == kSum) return loss.sum();
  return unbatched ? loss.squeeze(0) : loss;
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  if (autocast_takes_loss({&input, &target})) {
    amp::SuspendAutocast inside;
    return kl_div(amp::to_float32(input), amp::to_float32(target), reduction, log_target);
  }
  check_same_shape(input, target, "kl_div");
  TD_CHECK(is_floating(input.dtype()) && is_floating(target.dtype()), "kl_div: input and target must be floating, got ",
           input.dtype(), " and ", target.dtype());
  // PyTorch's forms, so the values and gradients are its own: xlogy(t, t) - t * x, where xlogy
  // is 0 at t = 0 (its gradient in t there is NaN, as PyTorch's); exp(t) * (t - x) for log targets.
  const Tensor loss = log_target ? exp(target) * (target - input)
                                 : where(target == 0, 0, target * log(target)) - target * input;
  if (reduction != kBatchMean) return reduce(loss, reduction, "kl_div");
  // The batch is the first dim; a 0-dim input is one sample.
  return input.dim() == 0 ? loss.sum() : loss.sum() / static_cast<double>(input.size(0));
}

// ---- power-average pooling, max unpooling, alpha dropout, RReLU, cdist ----

namespace {

// One value for every one of `dims` dims, or one each.
std::vector<int64_t> per_dim(const char* op, IntList v, const char* name, size_t dims) {
  TD_CHECK(v.size() == 1 || v.size() == dims, op, ": ", name, " must have one value or ", dims, ", got ", v.size());
  return v.size() == 1 ? std::vector<int64_t>(dims, v[0]) : v.vec();
}

Tensor lp_pool(const char* op, const Tensor& x, double p, IntList kernel_size, IntList stride, bool ceil_mode,
               size_t dims) {
  check_pool_input(op, x, static_cast<int64_t>(dims));
  TD_CHECK(p != 0 && !std::isnan(p), op, ": norm_type must be a non-zero number, got ", p);
  const std::vector<int64_t> kernel = per_dim(op, kernel_size, "kernel_size", dims);
  const std::vector<int64_t> steps = stride.empty() ? kernel : per_dim(op, stride, "stride", dims);
  auto max_pool = [&](const Tensor& t) {
    return dims == 1   ? max_pool1d(t, kernel, steps, 0, 1, ceil_mode)
           : dims == 2 ? max_pool2d(t, kernel, steps, 0, 1, ceil_mode)
                       : max_pool3d(t, kernel, steps, 0, 1, ceil_mode);
  };
  if (std::isinf(p)) return p > 0 ? max_pool(x.abs()) : -max_pool(-x.abs());
  const Tensor powers = x.pow(p);
  const Tensor mean = dims == 1   ? avg_pool1d(powers, kernel, steps, 0, ceil_mode)
                      : dims == 2 ? avg_pool2d(powers, kernel, steps, 0, ceil_mode)
                                  : avg_pool3d(powers, kernel, steps, 0, ceil_mode);
  // sign * relu(|mean|), as PyTorch writes it: a zero window's gradient is zero, not NaN.
  const int64_t window = std::accumulate(kernel.begin(), kernel.end(), int64_t{1}, std::multiplies<>());
  return (sign(mean) * relu(mean.abs())).mul(static_cast<double>(window)).pow(1.0 / p);
}

Tensor max_unpool(const char* op, const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride,
                  IntList padding, IntList output_size, size_t dims) {
  check_pool_input(op, x, static_cast<int64_t>(dims));
  TD_CHECK(indices.defined() && indices.sizes() == x.sizes() && indices.dtype() == kInt64, op,
           ": indices must be int64 of the input's shape ", shape_str(x.sizes()), ", got ",
           indices.defined() ? shape_str(indices.sizes()) + " " + dtype_name(indices.dtype()) : "an undefined tensor");
  const std::vector<int64_t> kernel = per_dim(op, kernel_size, "kernel_size", dims);
  const std::vector<int64_t> steps = stride.empty() ? kernel : per_dim(op, stride, "stride", dims);
  const std::vector<int64_t> pads = per_dim(op, padding, "padding", dims);
  const std::vector<int64_t> in(x.sizes().end() - static_cast<int64_t>(dims), x.sizes().end());
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims; ++d) out.push_back((in[d] - 1) * steps[d] + kernel[d] - 2 * pads[d]);
  if (!output_size.empty()) {
    TD_CHECK(output_size.size() == dims || output_size.size() == dims + 2, op, ": output_size must have ", dims, " or ",
             dims + 2, " values, got ", output_size.size());
    const std::vector<int64_t> asked(output_size.end() - static_cast<int64_t>(dims), output_size.end());
    for (size_t d = 0; d < dims; ++d) {
      TD_CHECK(asked[d] > out[d] - steps[d] && asked[d] < out[d] + steps[d], op, ": output_size ",
               shape_str(output_size.vec()), ": dim ", d, " must be between ", out[d] - steps[d], " and ",
               out[d] + steps[d], " (exclusive)");
    }
    out = asked;
  }
  for (int64_t size : out) TD_CHECK(size > 0, op, ": the output's spatial size ", shape_str(out), " is not positive");
  const int64_t plane = numel_of(out), planes = x.numel() / std::max<int64_t>(1, numel_of(in));
  // Each output element reads the value placed there (the last one in x where several are), or a
  // zero appended after x's values.
  const std::vector<int64_t> where_to = host_integers(indices);
  const int64_t per_plane = numel_of(in), zero = x.numel();
  std::vector<int64_t> source(static_cast<size_t>(planes * plane), zero);
  for (int64_t k = 0; k < planes; ++k) {
    for (int64_t j = 0; j < per_plane; ++j) {
      const int64_t at = where_to[static_cast<size_t>(k * per_plane + j)];
      TD_CHECK(at >= 0 && at < plane, op, ": index ", at, " is outside the output ", shape_str(out));
      source[static_cast<size_t>(k * plane + at)] = k * per_plane + j;
    }
  }
  Shape shape(x.sizes().begin(), x.sizes().end() - static_cast<int64_t>(dims));
  shape.insert(shape.end(), out.begin(), out.end());
  const Tensor placed = values_of([&] {
    return cat({x.reshape({-1}), zeros({1}, x.options())}, 0)
        .index_select(0, tensor(source).to(x.device()))
        .view(shape);
  });
  // Each value's gradient is the output's gradient at its index, a shared index's included, as PyTorch's.
  const int64_t spatial = static_cast<int64_t>(dims);
  return with_gradient(
      dims == 3 ? "MaxUnpool3DBackward0" : "MaxUnpool2DBackward0", x, placed,
      [indices, spatial](const Tensor& g, const Tensor& xv) {
        return g.flatten(g.dim() - spatial).gather(-1, indices.flatten(indices.dim() - spatial)).view(xv.sizes());
      });
}

// PyTorch's alpha dropout: kept elements a * x, dropped ones a * alpha' (alpha' SELU's negative
// saturation), both shifted by a * alpha' * p, with `keep` drawn per element or per channel.
Tensor alpha_dropout_with(const char* op, Tensor x, double p, bool training, bool per_channel, bool in_place) {
  TD_CHECK(p >= 0 && p <= 1, op, ": probability must be in [0, 1], got ", p);
  TD_CHECK(x.defined() && is_floating(x.dtype()), op, ": expected a floating input");
  if (!training || p == 0) return x;
  if (in_place) check_in_place(op, x);
  if (p == 1) return in_place ? x.mul_(0) : x * 0;
  TD_CHECK(!per_channel || x.dim() >= 2, op, ": dropping channels needs an input [N, C, ...], got ",
           shape_str(x.sizes()));
  constexpr double kAlpha = 1.7580993408473766;
  const double a = 1 / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
  Shape noise = x.sizes();
  if (per_channel) std::fill(noise.begin() + 2, noise.end(), 1);
  const Tensor keep = bernoulli(empty(noise, x.options()), 1 - p);
  const Tensor shift = (keep - 1) * (kAlpha * a) + kAlpha * a * p;
  return in_place ? x.mul_(keep * a).add_(shift) : x * (keep * a) + shift;
}

}  // namespace

Tensor lp_pool1d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride, bool ceil_mode) {
  return lp_pool("lp_pool1d", x, norm_type, kernel_size, stride, ceil_mode, 1);
}
Tensor lp_pool2d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride, bool ceil_mode) {
  return lp_pool("lp_pool2d", x, norm_type, kernel_size, stride, ceil_mode, 2);
}
Tensor lp_pool3d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride, bool ceil_mode) {
  return lp_pool("lp_pool3d", x, norm_type, kernel_size, stride, ceil_mode, 3);
}

Tensor max_unpool1d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride, IntList padding,
                    IntList output_size) {
  return max_unpool("max_unpool1d", x, indices, kernel_size, stride, padding, output_size, 1);
}
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride, IntList padding,
                    IntList output_size) {
  return max_unpool("max_unpool2d", x, indices, kernel_size, stride, padding, output_size, 2);
}
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride, IntList padding,
                    IntList output_size) {
  return max_unpool("max_unpool3d", x, indices, kernel_size, stride, padding, output_size, 3);
}

Tensor alpha_dropout(const Tensor& x, double p, bool training) {
  return alpha_dropout_with("alpha_dropout", x, p, training, false, false);
}
Tensor feature_alpha_dropout(const Tensor& x, double p, bool training) {
  return alpha_dropout_with("feature_alpha_dropout", x, p, training, true, false);
}
Tensor& alpha_dropout_(Tensor& x, double p, bool training) {
  alpha_dropout_with("alpha_dropout_", x, p, training, false, true);
  return x;
}
Tensor& feature_alpha_dropout_(Tensor& x, double p, bool training) {
  alpha_dropout_with("feature_alpha_dropout_", x, p, training, true, true);
  return x;
}

namespace {

// Each element's factor in training: its own draw from U(lower, upper) at or below 0, else 1.
Tensor rrelu_factors(const Tensor& x, double lower, double upper) {
  Tensor slopes = empty(x.sizes(), x.options());
  uniform_(slopes, lower, upper);
  return values_of([&] { return where(x <= 0, slopes, 1); });
}

void check_rrelu(const Tensor& x, double lower, double upper) {
  check_floating_input("rrelu", x);
  TD_CHECK(lower <= upper, "rrelu: lower (", lower, ") must not exceed upper (", upper, ")");
}

}  // namespace

Tensor rrelu(const Tensor& x, double lower, double upper, bool training) {
  check_rrelu(x, lower, upper);
  if (!training) return leaky_relu(x, (lower + upper) / 2);
  return x * rrelu_factors(x, lower, upper);
}

Tensor& rrelu_(Tensor& x, double lower, double upper, bool training) {
  check_rrelu(x, lower, upper);
  check_in_place("rrelu_", x);
  if (!training) return leaky_relu_(x, (lower + upper) / 2);
  return x.mul_(rrelu_factors(x, lower, upper));
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p) {
  if (amp::takes_float32(amp::Float32On::kCuda, {&x1, &x2})) {  // on autocast's GPU float32 list
    amp::SuspendAutocast inside;
    return cdist(amp::to_float32(x1), amp::to_float32(x2), p);
  }
  TD_CHECK(x1.defined() && x2.defined(), "cdist: x1 and x2 must be defined");
  TD_CHECK(x1.dim() >= 2 && x2.dim() >= 2 && x1.size(-1) == x2.size(-1), "cdist: expected x1 [..., P, M] and x2 [..., ",
           "R, M] with one M, got ", shape_str(x1.sizes()), " and ", shape_str(x2.sizes()));
  check_floating_operands("cdist", {&x1, &x2});
  TD_CHECK(x1.dtype() == x2.dtype(), "cdist: x1 (", x1.dtype(), ") and x2 (", x2.dtype(), ") must have one dtype");
  TD_CHECK(p >= 0, "cdist: p must be non-negative, got ", p);
  // Every pair's difference [..., P, R, M], and its norm (whose gradient at a zero distance is zero).
  const Tensor difference = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  if (!std::isinf(p)) return norm(difference, p, {-1});
  if (difference.size(-1) == 0) return difference.sum({-1});  // no elements: every distance is 0
  // The largest difference: each element that reaches it takes the whole gradient, as PyTorch's
  // cdist (where a norm would share it among ties).
  const Tensor largest = values_of([&] { return difference.abs().amax({-1}); });
  return with_gradient("CdistBackward0", difference, largest, [](const Tensor& g, const Tensor& d) {
    const Tensor reached = d.abs() == d.abs().amax({-1}, true);
    return where(reached, g.unsqueeze(-1) * sign(d), 0);
  });
}

Tensor pdist(const Tensor& x, double p) {
  TD_CHECK(x.defined() && x.dim() == 2, "pdist: expected a 2-D input [N, M], got ",
           x.defined() ? shape_str(x.sizes()) : "undefined");
  const int64_t n = x.size(0);
  const Tensor upper = triu(ones({n, n}, TensorOptions(kBool).device(x.device())), 1);
  return masked_select(cdist(x, x, p), upper);
}

Tensor gumbel_softmax(const Tensor& logits, double tau, bool hard, int64_t dim) {
  TD_CHECK(logits.defined() && is_floating(logits.dtype()), "gumbel_softmax: expected floating logits, got ",
           logits.defined() ? dtype_name(logits.dtype()) : "undefined");
  TD_CHECK(tau > 0, "gumbel_softmax: tau must be positive, got ", tau);
  // -log(-log(u)) for u uniform in [0, 1) is Gumbel(0, 1) noise (u = 0 gives -inf, a zero weight).
  const DType draw = logits.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const Tensor u = rand_like(logits, TensorOptions(draw).device(logits.device())).to(logits.dtype());
  const Tensor gumbels = -log(-log(u));
  const Tensor soft = softmax((logits + gumbels) / tau, dim);
  if (!hard) return soft;
  const int64_t d = wrap_dim(dim, std::max<int64_t>(logits.dim(), 1), "gumbel_softmax");
  const Tensor one_hot_last = one_hot(soft.detach().argmax(d), soft.dim() == 0 ? 1 : soft.size(d)).to(soft.dtype());
  const Tensor hard_sample = movedim(one_hot_last, -1, d);
  return hard_sample - soft.detach() + soft;  // the forward value is hard_sample, the gradient soft's
}

}  // namespace tandem::nn::functional
