// td::nn::functional (alias F): the layers' math as functions, as torch.nn.functional.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "core/tensor.h"

namespace tandem {

// How a loss folds its per-element values: not at all, their mean, their sum, or (kl_div only)
// their sum over the batch size, the input's first dim.
enum class Reduction { None, Mean, Sum, BatchMean };
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
inline constexpr Reduction kBatchMean = Reduction::BatchMean;

// A convolution's padding by name: valid, none; same (stride 1 only), as much as keeps the
// output's height and width the input's: dilation * (kernel - 1) zeros per dim, half before
// and half after, the odd one after, as PyTorch pads.
enum class PaddingMode { valid, same };
inline constexpr PaddingMode kValid = PaddingMode::valid;
inline constexpr PaddingMode kSame = PaddingMode::same;

// F::pad's modes, and the convolutions' padding_mode (where kConstant is PyTorch's 'zeros'):
// a constant value; the input mirrored at its edges, the edge itself not repeated (reflect); the
// edge value repeated (replicate); the input's other end (circular).
enum class PadMode { constant, reflect, replicate, circular };
inline constexpr PadMode kConstant = PadMode::constant;
inline constexpr PadMode kReflect = PadMode::reflect;
inline constexpr PadMode kReplicate = PadMode::replicate;
inline constexpr PadMode kCircular = PadMode::circular;

// F::interpolate's modes: the nearest input pixel (PyTorch's 'nearest', which rounds down, and
// 'nearest-exact', which rounds to the nearest), linear interpolation along each dim ('linear'
// for 3-D inputs, 'bilinear' for 4-D, 'trilinear' for 5-D), cubic convolution over the four
// nearest pixels of each dim ('bicubic', 4-D), or the mean over each output pixel's share of
// the input ('area', adaptive average pooling).
enum class InterpolateMode { nearest, nearest_exact, linear, bilinear, trilinear, bicubic, area };
inline constexpr InterpolateMode kNearest = InterpolateMode::nearest;
inline constexpr InterpolateMode kNearestExact = InterpolateMode::nearest_exact;
inline constexpr InterpolateMode kLinear = InterpolateMode::linear;
inline constexpr InterpolateMode kBilinear = InterpolateMode::bilinear;
inline constexpr InterpolateMode kTrilinear = InterpolateMode::trilinear;
inline constexpr InterpolateMode kBicubic = InterpolateMode::bicubic;
inline constexpr InterpolateMode kArea = InterpolateMode::area;

namespace nn::functional {

// The activations that live in td, under F's names too (F::relu(x), as PyTorch's F.relu).
using tandem::gelu;
using tandem::log_softmax;
using tandem::relu;
using tandem::sigmoid;
using tandem::silu;
using tandem::softmax;
using tandem::tanh;

// x @ weight^T + bias, for x of any rank >= 1 (bias may be undefined).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// x [N, C, H, W] (or [C, H, W]) with weight [O, C / groups, kh, kw], through im2col and one
// matrix product per group.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = 1,
              IntList padding = 0, IntList dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, PaddingMode padding,
              IntList dilation = 1, int64_t groups = 1);
// padding='same' along one dim: (before, after) summing to dilation * (kernel - 1), the odd one after.
std::pair<int64_t, int64_t> same_padding(int64_t kernel, int64_t dilation);
// A transposed convolution's output size along one dim: (in - 1) * stride - 2 * padding +
// dilation * (kernel - 1) + output_padding + 1.
int64_t conv_transpose_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                                   int64_t output_padding);
// x [N, C, L] (or [C, L]) with weight [O, C / groups, k]: conv2d over rows of height 1.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = 1,
              IntList padding = 0, IntList dilation = 1, int64_t groups = 1);
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, PaddingMode padding,
              IntList dilation = 1, int64_t groups = 1);
// The adjoint of conv2d (its gradient with respect to its input, as a layer): each input pixel
// spreads over a kernel-sized patch of the output, the patches `stride` apart. x [N, Cin, H, W]
// (or [Cin, H, W]), weight [Cin, Cout / groups, kh, kw], bias [Cout]. Each output side is
// (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1; output_padding, below
// the stride or the dilation, adds rows and columns at the end. PyTorch's argument order.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = 1,
                        IntList padding = 0, IntList output_padding = 0, int64_t groups = 1, IntList dilation = 1);
// conv_transpose2d over rows of height 1: x [N, Cin, L] (or [Cin, L]), weight [Cin, Cout / groups,
// k], bias [Cout]; each output length (L - 1) * stride - 2 * padding + dilation * (k - 1) +
// output_padding + 1.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = 1,
                        IntList padding = 0, IntList output_padding = 0, int64_t groups = 1, IntList dilation = 1);
// x [N, C, D, H, W] (or [C, D, H, W]) with weight [O, C / groups, kd, kh, kw]: for each output
// depth, the kd input slices it reads side by side as channels, one conv2d over them all (cuDNN
// on a GPU). stride, padding and dilation: one value for every dim or three.
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = 1,
              IntList padding = 0, IntList dilation = 1, int64_t groups = 1);
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, IntList stride, PaddingMode padding,
              IntList dilation = 1, int64_t groups = 1);
// The adjoint of conv3d: x [N, Cin, D, H, W] (or [Cin, D, H, W]), weight [Cin, Cout / groups, kd,
// kh, kw], bias [Cout]; each output size as conv_transpose2d's. One conv_transpose2d spreads each
// input slice over the kd output slices it reaches, which are then summed into place.
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), IntList stride = 1,
                        IntList padding = 0, IntList output_padding = 0, int64_t groups = 1, IntList dilation = 1);
const char* pad_mode_name(PadMode mode);  // "constant", "reflect", ...
// PyTorch's F.pad: `padding` holds (before, after) pairs from the last dim backwards: (left,
// right), then (top, bottom), then (front, back). A negative value crops. Constant padding (with
// `value`, converted to the input's dtype) pads any number of dims; the other modes pad the last
// 1, 2 or 3 dims of an input with one or two dims more (a batch of channels, or channels), each
// reflect pad below the dim's size, each circular pad at most the size left after cropping.
Tensor pad(const Tensor& x, IntList padding, PadMode mode = kConstant, double value = 0);
// F::interpolate's arguments, as PyTorch's: exactly one of size and scale_factor (one value for
// every spatial dim, or one each); align_corners for the linear modes and bicubic only (false
// unless set); recompute_scale_factor (with a scale_factor only): index with input / output
// sizes instead of 1 / scale_factor; antialias (bilinear and bicubic only): where a dim shrinks,
// widen the filter by the factor it shrinks by, so that each output pixel averages every input
// pixel it covers instead of sampling a few (PIL's resize; its cubic takes A = -0.5).
struct InterpolateOptions {
  InterpolateOptions& size(std::vector<int64_t> s) { size_ = std::move(s); return *this; }
  InterpolateOptions& scale_factor(std::vector<double> s) { scale_factor_ = std::move(s); return *this; }
  InterpolateOptions& mode(InterpolateMode m) { mode_ = m; return *this; }
  InterpolateOptions& align_corners(bool a) { align_corners_ = a; return *this; }
  InterpolateOptions& recompute_scale_factor(bool r) { recompute_scale_factor_ = r; return *this; }
  InterpolateOptions& antialias(bool a) { antialias_ = a; return *this; }
  std::optional<std::vector<int64_t>> size_;
  std::optional<std::vector<double>> scale_factor_;
  InterpolateMode mode_ = kNearest;
  std::optional<bool> align_corners_;
  bool recompute_scale_factor_ = false;
  bool antialias_ = false;
};
const char* interpolate_mode_name(InterpolateMode mode);  // PyTorch's spelling: "nearest-exact", ...
// Resizes the spatial dims of a floating x [N, C, L], [N, C, H, W] or [N, C, D, H, W]: each output
// position reads the input where PyTorch's CPU kernels place it (the same indices and weights,
// which differ between 4-D inputs and the others), one dim at a time from the last. 16-bit inputs
// run in float32 and round once (bicubic, and linear and trilinear, round their weights to the
// dtype first, as PyTorch's kernels do). With antialias a dim that keeps its size is left as it is;
// a one-column output is right where PyTorch 2.15's CPU kernel repeats the first row.
Tensor interpolate(const Tensor& x, const InterpolateOptions& options);
// grid_sample's interpolation and what it reads outside the input (as PyTorch's: zeros, the
// nearest edge, or the input reflected at its edges).
enum class GridSampleMode { bilinear, nearest, bicubic };
enum class GridSamplePadding { zeros, border, reflection };
struct GridSampleOptions {
  GridSampleOptions& mode(GridSampleMode m) { mode_ = m; return *this; }
  GridSampleOptions& padding_mode(GridSamplePadding p) { padding_mode_ = p; return *this; }
  GridSampleOptions& align_corners(bool a) { align_corners_ = a; return *this; }
  GridSampleMode mode_ = GridSampleMode::bilinear;
  GridSamplePadding padding_mode_ = GridSamplePadding::zeros;
  bool align_corners_ = false;
};
// Samples input [N, C, H, W] (or [N, C, D, H, W]) at the points of grid [N, H', W', 2] (or [N,
// D', H', W', 3]): (x, y[, z]) in [-1, 1] spans the input's width, height (and depth), -1 and 1
// the outer pixels' centres with align_corners, their outer edges without. Returns [N, C, H', W']
// (or [N, C, D', H', W']), differentiable in the input and the grid, as PyTorch's: bilinear
// (trilinear for 5-D) weighs the 2^d neighbours, nearest takes the closest (halves to even),
// bicubic (4-D only) 16 neighbours with A = -0.75. 16-bit inputs are sampled in float32. A NaN
// grid point samples zeros in every mode and padding (PyTorch's differ: NaN, zeros or an edge).
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleOptions& options = {});
// The sampling grid of a batch of affine maps, as PyTorch's: theta [N, 2, 3] and size {N, C, H, W}
// give [N, H, W, 2] (theta [N, 3, 4] and {N, C, D, H, W} give [N, D, H, W, 3]), each output
// pixel's normalized (x, y[, z], 1) mapped by theta.
Tensor affine_grid(const Tensor& theta, IntList size, bool align_corners = false);
// Batch statistics shared by several replicas (DataParallel's sync_batchnorm): given this
// replica's per-channel mean and biased variance over `count` values per channel, returns the
// mean, biased variance and count of the whole batch, differentiably.
struct BatchStats {
  Tensor mean, var;
  int64_t count = 0;
};
using BatchStatsSync = std::function<BatchStats(const BatchStats& local)>;

// Normalizes over every dim but 1. training: batch statistics (the whole batch's, through `sync`
// if given), and running_mean / running_var (if defined) move toward them by `momentum`
// (nullopt: a cumulative average over `batches_tracked` batches); otherwise the running statistics.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, std::optional<double> momentum = 0.1, double eps = 1e-5,
                  int64_t batches_tracked = 0, const BatchStatsSync& sync = nullptr);
// Normalizes over the last normalized_shape.size() dims.
Tensor layer_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x / sqrt(mean(x^2) + eps) over the last normalized_shape.size() dims, times weight (of the
// normalized shape) if given; eps nullopt: the machine epsilon of the dtype it computes in (16-bit
// inputs compute in float32).
Tensor rms_norm(const Tensor& x, IntList normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);
// Normalizes x [N, C, ...] over each group of C / num_groups channels (and all positions) of each
// sample, with biased variance, then applies weight and bias [C] if given. Unlike batch_norm it
// does not depend on the batch: each DataParallel replica computes what one device would.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// Normalizes each channel of each sample of x [N, C, ...] over its positions (batch_norm over
// a batch of one with N * C channels, as PyTorch's). With use_input_stats, running_mean and
// running_var (if defined) move toward the statistics averaged over the samples; without, they
// normalize instead. weight and bias [C] if given.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = Tensor(), const Tensor& running_var = Tensor(),
                     const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);
// x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, x [N, C, ...] with at
// least 3 dims; the window is zero-padded (size / 2 before, (size - 1) / 2 after).
Tensor local_response_norm(const Tensor& x, int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);
// y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o].
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias = Tensor());
// Splits the channels of x [N, C, ...] into `groups` groups and interleaves them.
Tensor channel_shuffle(const Tensor& x, int64_t groups);
// log(1 + exp(beta * x)) / beta, or x where beta * x > threshold (where the two agree to the
// dtype's precision); 16-bit inputs are computed in float32 and rounded once, as PyTorch's.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// x where x > 0, else alpha * (exp(x) - 1); selu scales both sides by its fixed constants (alpha
// 1.6732632423543772, scale 1.0507009873554805); celu takes exp(x / alpha). 16-bit inputs are
// computed in float32 and rounded once, as PyTorch's.
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor selu(const Tensor& x);
Tensor celu(const Tensor& x, double alpha = 1.0);
// x where x > 0, else x * negative_slope (NaN stays NaN), for floating x; the gradient at 0 is
// negative_slope's, as PyTorch's.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
// More of PyTorch's activations, each with PyTorch's values and its gradient at the edges (where
// a piece ends, the gradient is the next piece's, as PyTorch's backward kernels choose; NaN takes
// the piece PyTorch's comparisons send it to):
Tensor hardtanh(const Tensor& x, double min_val = -1, double max_val = 1);  // clamp, gradient 0 from the bounds out
Tensor relu6(const Tensor& x);                                             // hardtanh(x, 0, 6)
Tensor hardsigmoid(const Tensor& x);                                       // clamp(x + 3, 0, 6) / 6
Tensor hardswish(const Tensor& x);                                         // x * hardsigmoid(x)
Tensor mish(const Tensor& x);                                              // x * tanh(softplus(x))
Tensor logsigmoid(const Tensor& x);                                        // log(sigmoid(x)), no overflow
Tensor softsign(const Tensor& x);                                          // x / (1 + |x|)
Tensor tanhshrink(const Tensor& x);                                        // x - tanh(x)
Tensor hardshrink(const Tensor& x, double lambd = 0.5);                    // 0 on [-lambd, lambd], else x
Tensor softshrink(const Tensor& x, double lambd = 0.5);                    // x moved lambd towards 0, 0 near it
Tensor threshold(const Tensor& x, double threshold, double value);        // x above threshold, else value
Tensor glu(const Tensor& x, int64_t dim = -1);                             // a * sigmoid(b), x's halves along dim
Tensor softmin(const Tensor& x, int64_t dim);                              // softmax(-x)
// x where positive, else weight * x; weight has one value or one per channel (x's dim 1).
Tensor prelu(const Tensor& x, const Tensor& weight);
// x / max(||x||_p along dim, eps): slices along dim scaled to unit p-norm; one of zeros stays 0.
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);
// The cosine of the angle between x1 and x2 along dim, the two broadcast to one shape: as
// PyTorch, each is divided by max(its 2-norm, eps) first, so that the result stays in [-1, 1]
// and large norms do not overflow; the clamp to eps does not change the gradient.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
// Zeroes elements with probability p and scales the rest by 1 / (1 - p), in training only.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
// Channel dropout, as PyTorch's dropout1d/2d/3d: each channel of x ([N, C, ...] or [C, ...] with 1,
// 2 or 3 spatial dims) is zeroed whole with probability p, the rest scaled by 1 / (1 - p), in
// training only.
Tensor dropout1d(const Tensor& x, double p = 0.5, bool training = true);
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true);
Tensor dropout3d(const Tensor& x, double p = 0.5, bool training = true);
// [..., C * r^2, H, W] -> [..., C, H * r, W * r]: each pixel's r^2 channels become an r x r block.
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
// The inverse: [..., C, H * r, W * r] -> [..., C * r^2, H, W].
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);
// PyTorch's F.unfold and F.fold: im2col and col2im (autograd/ops.h).
Tensor unfold(const Tensor& x, IntList kernel_size, IntList dilation = 1, IntList padding = 0, IntList stride = 1);
Tensor fold(const Tensor& x, IntList output_size, IntList kernel_size, IntList dilation = 1, IntList padding = 0,
            IntList stride = 1);
// How embedding_bag combines a bag's rows.
enum class EmbeddingBagMode { sum, mean, max };
const char* embedding_bag_mode_name(EmbeddingBagMode mode);  // "sum", "mean", "max"
// The rows of weight [num, dim] for each bag of indices, summed, averaged or maxed (the first
// maximum): input [B, L] (a bag per row), or input [M] with offsets [B] where each bag starts
// (offsets[0] = 0; with include_last_offset, B + 1 offsets, the last where the bags end).
// per_sample_weights (input's shape, mode sum only) scale each row. Entries equal to padding_idx
// are left out of their bag; an empty bag gives zeros. Returns [B, dim]. max_norm, norm_type and
// scale_grad_by_freq as embedding's (scale_grad_by_freq not with mode max).
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets = Tensor(),
                     EmbeddingBagMode mode = EmbeddingBagMode::mean, const Tensor& per_sample_weights = Tensor(),
                     bool include_last_offset = false, std::optional<int64_t> padding_idx = std::nullopt,
                     std::optional<double> max_norm = std::nullopt, double norm_type = 2,
                     bool scale_grad_by_freq = false);
// Rows of weight; rows at padding_idx get no gradient. With max_norm, each row the indices name
// whose norm_type-norm is above it is first scaled (in place, in weight) to max_norm, as
// PyTorch's (by max_norm / (norm + 1e-7)). scale_grad_by_freq divides each row's gradient by how
// often the indices name it.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2,
                 bool scale_grad_by_freq = false);
// The in-place renorm of max_norm: rows of weight named in indices (int64 or int32, each in
// [0, num): PyTorch's direct call also takes a negative one), of norm above max_norm (not
// negative here), scaled to it. Returns weight.
Tensor embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm, double norm_type);
Tensor adaptive_avg_pool2d(const Tensor& x, IntList output_size);
// 1-D pooling of x [N, C, L] (or [C, L]): the 2-D ops over rows of height 1; stride defaults to
// the kernel. Indices are positions along L.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, IntList kernel_size, IntList stride = {},
                                                   IntList padding = 0, IntList dilation = 1, bool ceil_mode = false);
Tensor max_pool1d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                  bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool1d(const Tensor& x, IntList output_size);
// Adaptive max pooling of x [N, C, L] / [N, C, H, W] (or without N) to output_size: output
// position i of a dim of size `in` pooled to `out` takes the max over [floor(i * in / out),
// ceil((i + 1) * in / out)), as PyTorch's (NaN wins). Indices are flat positions in the spatial
// dims of the input (l, or h * W + w).
std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, IntList output_size);
Tensor adaptive_max_pool1d(const Tensor& x, IntList output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, IntList output_size);
Tensor adaptive_max_pool2d(const Tensor& x, IntList output_size);
// 3-D pooling of x [N, C, D, H, W] (or [C, D, H, W]), as PyTorch's: each argument one value for
// every dim or three; stride defaults to the kernel; padding at most half the kernel. Max pooling
// takes the first maximum of each window, or its last NaN; indices are flat positions in the
// input's (D, H, W). Average pooling divides each window's sum by divisor_override, else by the
// window's size inside the padded input (count_include_pad) or inside the input. Each window's
// positions are gathered and reduced, on any device and for any floating dtype.
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, IntList kernel_size, IntList stride = {},
                                                   IntList padding = 0, IntList dilation = 1, bool ceil_mode = false);
Tensor max_pool3d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                  bool ceil_mode = false);
Tensor avg_pool3d(const Tensor& x, IntList kernel_size, IntList stride = {}, IntList padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// Adaptive pooling of x [N, C, D, H, W] (or [C, D, H, W]) to output_size (one value or three), the
// windows of adaptive_max_pool2d along each dim: the mean of each, or its max with indices.
Tensor adaptive_avg_pool3d(const Tensor& x, IntList output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, IntList output_size);
Tensor adaptive_max_pool3d(const Tensor& x, IntList output_size);
// Fractional max pooling (Graham, 2014), as PyTorch's: x [N, C, H, W] (or [C, H, W]) pooled by
// windows of kernel_size (one value or two) to output_size, or to int(in * ratio) positions along
// each spatial dim with output_ratio (output_size where both are given). Along a dim of size
// `in`, window i of `out` starts at trunc((i + u) * a) - trunc(u * a), a = (in - kernel) /
// (out - 1), and the last at in - kernel, with one sample u per plane and dim: random_samples
// [N or more, C, 2] in x's dtype and device, [..., 0] for the width and [..., 1] for the height
// as PyTorch's (uniform in [0, 1) from the device's default generator unless given). The window
// arithmetic is as PyTorch's kernels do it: in x's dtype, rounded at each step, on the CPU; in
// float32 for a 16-bit input on a GPU. Each window's first maximum, or its last NaN; indices are
// flat positions h * W + w. The gradient goes to the chosen positions (summed where windows
// overlap).
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& x, IntList kernel_size,
                                                              IntList output_size = {},
                                                              const std::vector<double>& output_ratio = {},
                                                              const Tensor& random_samples = Tensor());
Tensor fractional_max_pool2d(const Tensor& x, IntList kernel_size, IntList output_size = {},
                             const std::vector<double>& output_ratio = {}, const Tensor& random_samples = Tensor());
// The same over x [N, C, D, H, W] (or [C, D, H, W]); random_samples [N or more, C, 3] for the
// depth, height and width; indices are flat positions in (D, H, W). As PyTorch's, the windows
// must leave a position over along each dim (out + kernel - 1 < in).
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& x, IntList kernel_size,
                                                              IntList output_size = {},
                                                              const std::vector<double>& output_ratio = {},
                                                              const Tensor& random_samples = Tensor());
Tensor fractional_max_pool3d(const Tensor& x, IntList kernel_size, IntList output_size = {},
                             const std::vector<double>& output_ratio = {}, const Tensor& random_samples = Tensor());

// Power-average pooling, as PyTorch's lp_pool1d/2d/3d: (sum over each window of x^p)^(1/p), a
// window of zero sum giving zero gradient; p = +-inf: the max (min) of |x|. No padding; stride
// defaults to the kernel.
Tensor lp_pool1d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride = {}, bool ceil_mode = false);
Tensor lp_pool2d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride = {}, bool ceil_mode = false);
Tensor lp_pool3d(const Tensor& x, double norm_type, IntList kernel_size, IntList stride = {}, bool ceil_mode = false);
// The partial inverse of max pooling: each value of x [N, C, ...] (or [C, ...]) placed at its
// index (a flat position in the output's spatial dims, as max_pool*_with_indices gives), zeros
// elsewhere. The output's spatial size is (in - 1) * stride - 2 * padding + kernel, or
// output_size (the spatial sizes, or the whole shape), which must lie strictly within a stride of
// that. Where two values share an index, the later one in x is kept.
Tensor max_unpool1d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride = {},
                    IntList padding = 0, IntList output_size = {});
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride = {},
                    IntList padding = 0, IntList output_size = {});
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, IntList kernel_size, IntList stride = {},
                    IntList padding = 0, IntList output_size = {});
// Dropout that keeps SELU's mean and variance: a dropped element becomes SELU's negative
// saturation -1.7580993408473766, and every element is then scaled and shifted back to the
// input's statistics (PyTorch's a and b). feature_alpha_dropout drops whole channels of [N, C, ...].
Tensor alpha_dropout(const Tensor& x, double p = 0.5, bool training = false);
Tensor feature_alpha_dropout(const Tensor& x, double p = 0.5, bool training = false);
// Randomized leaky ReLU: in training each element at or below zero is scaled by its own draw from
// U(lower, upper) (the gradient uses the same draw); otherwise leaky_relu with their mean.
Tensor rrelu(const Tensor& x, double lower = 1.0 / 8, double upper = 1.0 / 3, bool training = false);
// In-place forms, as PyTorch's F.relu_, elu_, ... and its inplace=True: x takes the function's
// values and its place in the graph (its version moves on), and is returned. Values, errors and
// gradients are the out-of-place function's, with the same random draws for the same seed. As in
// PyTorch, the gradients of relu_, leaky_relu_, elu_, selu_ and celu_ read the result alone, so
// nothing else is kept: a backward through leaky_relu_ with a negative slope, or elu_/celu_ with a
// negative alpha, is refused (the result does not tell the two sides apart). hardtanh_, relu6_,
// hardsigmoid_, hardswish_ and mish_ keep a copy of the input, threshold_ its mask, the dropouts
// and rrelu_ their draws. A dropout that writes nothing (in evaluation, or p = 0) takes any tensor,
// a leaf that requires grad too, as PyTorch's.
Tensor& relu_(Tensor& x);
Tensor& leaky_relu_(Tensor& x, double negative_slope = 0.01);
Tensor& elu_(Tensor& x, double alpha = 1.0);
Tensor& selu_(Tensor& x);
Tensor& celu_(Tensor& x, double alpha = 1.0);
Tensor& hardtanh_(Tensor& x, double min_val = -1, double max_val = 1);
Tensor& relu6_(Tensor& x);
Tensor& threshold_(Tensor& x, double threshold, double value);
Tensor& rrelu_(Tensor& x, double lower = 1.0 / 8, double upper = 1.0 / 3, bool training = false);
Tensor& hardsigmoid_(Tensor& x);
Tensor& hardswish_(Tensor& x);
Tensor& silu_(Tensor& x);
Tensor& mish_(Tensor& x);
Tensor& dropout_(Tensor& x, double p = 0.5, bool training = true);
Tensor& dropout1d_(Tensor& x, double p = 0.5, bool training = true);
Tensor& dropout2d_(Tensor& x, double p = 0.5, bool training = true);
Tensor& dropout3d_(Tensor& x, double p = 0.5, bool training = true);
Tensor& alpha_dropout_(Tensor& x, double p = 0.5, bool training = false);
Tensor& feature_alpha_dropout_(Tensor& x, double p = 0.5, bool training = false);
// The p-norm distance between every row of x1 [..., P, M] and every row of x2 [..., R, M]
// (batch dims broadcast): [..., P, R]. p >= 0 (0 counts differing elements, inf takes the
// largest difference); the difference is taken directly (PyTorch's default switches to a
// matrix product for p = 2 above 25 rows, which rounds differently).
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2);
// The p-norm distances between the rows of x [N, M], each pair i < j once, in row-major order:
// [N (N - 1) / 2], the upper triangle of cdist(x, x).
Tensor pdist(const Tensor& x, double p = 2);
// A sample of the Gumbel-softmax distribution over dim: softmax((logits + Gumbel noise) / tau).
// hard: one-hot of its argmax in the forward pass, the soft sample's gradient in the backward.
Tensor gumbel_softmax(const Tensor& logits, double tau = 1, bool hard = false, int64_t dim = -1);

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);
// 0.5 * d^2 / beta where |d| < beta, else |d| - 0.5 * beta (d = input - target); beta 0: l1_loss.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean, double beta = 1.0);
// 0.5 * d^2 where |d| < delta, else delta * (|d| - 0.5 * delta); delta positive.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean, double delta = 1.0);
// input and target: probabilities in [0, 1]; -(t * log(x) + (1 - t) * log(1 - x)), each log at least -100
// (so a certain wrong answer costs 100, not inf), times weight if given; PyTorch's gradients.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                            Reduction reduction = kMean);
// input: log-probabilities [N, C] or [N, C, d1, ...]; target: class indices [N] or [N, d1, ...].
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                Reduction reduction = kMean);
// log_softmax then nll_loss; target: class indices, or class probabilities shaped like input.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, Reduction reduction = kMean, double label_smoothing = 0.0);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(), Reduction reduction = kMean);
// The Kullback-Leibler divergence of input from target, element by element: input holds
// log-probabilities, target probabilities (log-probabilities with log_target), of one shape;
// target * (log(target) - input), 0 where target is 0. kBatchMean divides the sum by the batch
// size (the mathematical KL divergence per sample); kMean divides by the element count, as PyTorch's.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = kMean, bool log_target = false);

// The p-norm of x1 - x2 + eps along the last dim (the two broadcast), as PyTorch's.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2, double eps = 1e-6, bool keepdim = false);
// max(0, -target * (input1 - input2) + margin): target 1 where input1 should rank higher, -1
// where input2 should. All three of one shape.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0,
                           Reduction reduction = kMean);
// input where target is 1, max(0, margin - input) where it is -1 (both terms for other values,
// as PyTorch's).
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            Reduction reduction = kMean);
// log(1 + exp(-target * input)), target 1 or -1.
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);
// x1, x2 [N, D] (or [D]) and target [N] (or 0-D) of 1 or -1: 1 - cos(x1, x2) where target is 1,
// max(0, cos(x1, x2) - margin) where it is -1 (cos with 1e-12 added to each squared norm).
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0,
                             Reduction reduction = kMean);
// max(0, margin + d(anchor, positive) - d(anchor, negative)) with d the pairwise_distance of
// norm p; swap: d(anchor, negative) replaced by d(positive, negative) where that is smaller.
// Inputs [N, D] (or [D]), with one number of dims.
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2, double eps = 1e-6, bool swap = false, Reduction reduction = kMean);
// The same with any distance (pairwise_distance unless given).
using DistanceFunction = std::function<Tensor(const Tensor&, const Tensor&)>;
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const DistanceFunction& distance_function = nullptr, double margin = 1.0,
                                         bool swap = false, Reduction reduction = kMean);
// The negative log-likelihood of target under Poisson(rate): exp(input) - target * input with
// log_input, else input - target * log(input + eps); full adds Stirling's approximation of
// log(target!) where target > 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false,
                        double eps = 1e-8, Reduction reduction = kMean);
// The negative log-likelihood of target under N(input, var): 0.5 * (log(var) + (input - target)^2
// / var), var clamped to eps (its gradient passing the clamp, as PyTorch's); full adds
// 0.5 * log(2 pi). var: input's shape, or with the last dim 1 or without it (one variance for
// the whole last dim); no entry may be negative.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full = false,
                         double eps = 1e-6, Reduction reduction = kMean);
// input [N, C] (or [C]) of scores, target of 0 and 1 of the same shape: the mean over classes of
// -(target * log(sigmoid(input)) + (1 - target) * log(sigmoid(-input))), times weight [C] if given.
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                   Reduction reduction = kMean);
// input [N, C] (or [C]), target [N] (or 0-D) class indices: per sample, the sum over the other
// classes j of max(0, margin - input[target] + input[j])^p (p 1 or 2), times weight[target],
// over C.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p = 1, double margin = 1.0,
                         const Tensor& weight = Tensor(), Reduction reduction = kMean);
// input [N, C] (or [C]), target of the same shape holding each sample's classes, then -1 (what
// follows the first -1 is ignored): per sample, the sum over its classes t and the other classes
// j of max(0, 1 - (input[t] - input[j])), over C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = kMean);

// Connectionist temporal classification: the negative log-likelihood of each target sequence
// under the per-frame class log-probabilities, summed over every alignment (blank frames between
// and around labels, repeated labels merged). log_probs [T, N, C] (or [T, C] for one sequence),
// targets [N, S] padded or 1-D (all targets one after another), input_lengths and
// target_lengths [N] (or 0-D). A target no alignment fits has an infinite loss, or 0 (with no
// gradient) under zero_infinity. kMean divides each loss by its target length, then averages.
// The gradient is the loss's own, with respect to log_probs; PyTorch's returns it plus
// exp(log_probs), which a log_softmax before it cancels: through log_softmax both are the same.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0, Reduction reduction = kMean,
                bool zero_infinity = false);

const char* reduction_name(Reduction r);

}  // namespace nn::functional
}  // namespace tandem
