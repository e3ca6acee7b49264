// The parameter-free layers (activations, dropout, pooling, flatten) and the containers
// (Sequential, ModuleList, ModuleDict) of td::nn, printing as PyTorch's do.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "nn/functional.h"
#include "nn/module.h"

namespace tandem::nn {

// A module computing a fixed function of its input, printed as Name(extra).
class FunctionalImpl : public Cloneable<FunctionalImpl> {
 public:
  FunctionalImpl(std::string name, std::function<Tensor(const Tensor&)> fn, std::string extra = "");
  Tensor forward(const Tensor& x) override { return fn_(x); }
  std::string extra_repr() const override { return extra_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string extra_;
};

// Returns its input itself (a placeholder where a model has an optional layer).
class IdentityImpl : public Cloneable<IdentityImpl, FunctionalImpl> {
 public:
  IdentityImpl();
};
class ReLUImpl : public Cloneable<ReLUImpl, FunctionalImpl> {
 public:
  explicit ReLUImpl(bool inplace = false);
};
class LeakyReLUImpl : public Cloneable<LeakyReLUImpl, FunctionalImpl> {
 public:
  explicit LeakyReLUImpl(double negative_slope = 0.01, bool inplace = false);
};
class ELUImpl : public Cloneable<ELUImpl, FunctionalImpl> {
 public:
  explicit ELUImpl(double alpha = 1.0, bool inplace = false);
};
class SELUImpl : public Cloneable<SELUImpl, FunctionalImpl> {
 public:
  explicit SELUImpl(bool inplace = false);
};
class CELUImpl : public Cloneable<CELUImpl, FunctionalImpl> {
 public:
  explicit CELUImpl(double alpha = 1.0, bool inplace = false);
};
// functional::softplus with these beta and threshold.
class SoftplusImpl : public Cloneable<SoftplusImpl, FunctionalImpl> {
 public:
  explicit SoftplusImpl(double beta = 1.0, double threshold = 20.0);
};
class GELUImpl : public Cloneable<GELUImpl, FunctionalImpl> {
 public:
  explicit GELUImpl(const std::string& approximate = "none");
};
class SiLUImpl : public Cloneable<SiLUImpl, FunctionalImpl> {
 public:
  explicit SiLUImpl(bool inplace = false);
};
class TanhImpl : public Cloneable<TanhImpl, FunctionalImpl> {
 public:
  TanhImpl();
};
class SigmoidImpl : public Cloneable<SigmoidImpl, FunctionalImpl> {
 public:
  SigmoidImpl();
};
class SoftmaxImpl : public Cloneable<SoftmaxImpl, FunctionalImpl> {
 public:
  explicit SoftmaxImpl(int64_t dim);
};
class LogSoftmaxImpl : public Cloneable<LogSoftmaxImpl, FunctionalImpl> {
 public:
  explicit LogSoftmaxImpl(int64_t dim);
};
class FlattenImpl : public Cloneable<FlattenImpl, FunctionalImpl> {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1);
};
// Splits dim into unflattened_size (one entry may be -1), the inverse of Flatten.
class UnflattenImpl : public Cloneable<UnflattenImpl, FunctionalImpl> {
 public:
  UnflattenImpl(int64_t dim, std::vector<int64_t> unflattened_size);
};
class MaxPool2dImpl : public Cloneable<MaxPool2dImpl, FunctionalImpl> {
 public:
  // stride defaults to kernel_size, as in PyTorch.
  explicit MaxPool2dImpl(IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                         bool ceil_mode = false);
};
class AvgPool2dImpl : public Cloneable<AvgPool2dImpl, FunctionalImpl> {
 public:
  explicit AvgPool2dImpl(IntList kernel_size, IntList stride = {}, IntList padding = 0, bool ceil_mode = false,
                         bool count_include_pad = true);
};
class AdaptiveAvgPool2dImpl : public Cloneable<AdaptiveAvgPool2dImpl, FunctionalImpl> {
 public:
  explicit AdaptiveAvgPool2dImpl(IntList output_size);
};

class MaxPool1dImpl : public Cloneable<MaxPool1dImpl, FunctionalImpl> {
 public:
  explicit MaxPool1dImpl(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                         int64_t dilation = 1, bool ceil_mode = false);
};
class AvgPool1dImpl : public Cloneable<AvgPool1dImpl, FunctionalImpl> {
 public:
  explicit AvgPool1dImpl(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                         bool ceil_mode = false, bool count_include_pad = true);
};
class AdaptiveAvgPool1dImpl : public Cloneable<AdaptiveAvgPool1dImpl, FunctionalImpl> {
 public:
  explicit AdaptiveAvgPool1dImpl(int64_t output_size);
};
class AdaptiveMaxPool1dImpl : public Cloneable<AdaptiveMaxPool1dImpl, FunctionalImpl> {
 public:
  explicit AdaptiveMaxPool1dImpl(int64_t output_size);
};
// output_size: one value for both sides, or (height, width).
class AdaptiveMaxPool2dImpl : public Cloneable<AdaptiveMaxPool2dImpl, FunctionalImpl> {
 public:
  explicit AdaptiveMaxPool2dImpl(IntList output_size);
};
// The 3-D poolings of F (max_pool3d, avg_pool3d and the adaptive ones) as layers; sizes one value
// for every dim or three.
class MaxPool3dImpl : public Cloneable<MaxPool3dImpl, FunctionalImpl> {
 public:
  explicit MaxPool3dImpl(IntList kernel_size, IntList stride = {}, IntList padding = 0, IntList dilation = 1,
                         bool ceil_mode = false);
};
class AvgPool3dImpl : public Cloneable<AvgPool3dImpl, FunctionalImpl> {
 public:
  explicit AvgPool3dImpl(IntList kernel_size, IntList stride = {}, IntList padding = 0, bool ceil_mode = false,
                         bool count_include_pad = true, std::optional<int64_t> divisor_override = std::nullopt);
};
class AdaptiveAvgPool3dImpl : public Cloneable<AdaptiveAvgPool3dImpl, FunctionalImpl> {
 public:
  explicit AdaptiveAvgPool3dImpl(IntList output_size);
};
class AdaptiveMaxPool3dImpl : public Cloneable<AdaptiveMaxPool3dImpl, FunctionalImpl> {
 public:
  explicit AdaptiveMaxPool3dImpl(IntList output_size);
};
// Fractional max pooling as a layer (functional::fractional_max_pool2d/3d), with LibTorch's
// options: kernel_size and either output_size or output_ratio (each in (0, 1)). Fresh random
// samples at every forward, unless fixed ones are given as _random_samples: then they are the
// buffer "_random_samples", as PyTorch's. Prints as PyTorch's, "FractionalMaxPool2d()".
struct FractionalMaxPoolOptions {
  FractionalMaxPoolOptions(IntList kernel_size) : kernel_size_(kernel_size.vec()) {}
  FractionalMaxPoolOptions& output_size(IntList v) { output_size_ = v.vec(); return *this; }
  FractionalMaxPoolOptions& output_ratio(std::vector<double> v) { output_ratio_ = std::move(v); return *this; }
  FractionalMaxPoolOptions& _random_samples(Tensor t) { _random_samples_ = std::move(t); return *this; }
  Shape kernel_size_, output_size_;
  std::vector<double> output_ratio_;
  Tensor _random_samples_;
};
using FractionalMaxPool2dOptions = FractionalMaxPoolOptions;
using FractionalMaxPool3dOptions = FractionalMaxPoolOptions;
class FractionalMaxPoolImpl : public Module {
 public:
  FractionalMaxPoolImpl(std::string name, int64_t dims, FractionalMaxPoolOptions options);
  void reset() override;
  Tensor forward(const Tensor& x) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x);
  FractionalMaxPoolOptions options;
  Tensor _random_samples;

 private:
  int64_t dims_;
};
class FractionalMaxPool2dImpl : public Cloneable<FractionalMaxPool2dImpl, FractionalMaxPoolImpl> {
 public:
  explicit FractionalMaxPool2dImpl(FractionalMaxPool2dOptions options)
      : Cloneable("FractionalMaxPool2d", 2, std::move(options)) {}
};
class FractionalMaxPool3dImpl : public Cloneable<FractionalMaxPool3dImpl, FractionalMaxPoolImpl> {
 public:
  explicit FractionalMaxPool3dImpl(FractionalMaxPool3dOptions options)
      : Cloneable("FractionalMaxPool3d", 3, std::move(options)) {}
};
// Power-average pooling (functional::lp_pool1d/2d/3d); stride defaults to the kernel.
class LPPool1dImpl : public Cloneable<LPPool1dImpl, FunctionalImpl> {
 public:
  LPPool1dImpl(double norm_type, IntList kernel_size, IntList stride = {}, bool ceil_mode = false);
};
class LPPool2dImpl : public Cloneable<LPPool2dImpl, FunctionalImpl> {
 public:
  LPPool2dImpl(double norm_type, IntList kernel_size, IntList stride = {}, bool ceil_mode = false);
};
class LPPool3dImpl : public Cloneable<LPPool3dImpl, FunctionalImpl> {
 public:
  LPPool3dImpl(double norm_type, IntList kernel_size, IntList stride = {}, bool ceil_mode = false);
};
// functional::max_unpool1d/2d/3d as layers: forward(x, indices, output_size).
template <size_t D>
class MaxUnpoolImpl : public Module {
 public:
  MaxUnpoolImpl(IntList kernel_size, IntList stride = {}, IntList padding = 0);
  Tensor forward(const Tensor& x, const Tensor& indices, IntList output_size = {});
  std::string extra_repr() const override;
  std::vector<int64_t> kernel_size, stride, padding;
  // What a clone or a replica takes from its original (Module::copy_settings_from).
  auto settings() { return std::tie(kernel_size, stride, padding); }
};
class MaxUnpool1dImpl : public Cloneable<MaxUnpool1dImpl, MaxUnpoolImpl<1>> {
 public:
  using Cloneable::Cloneable;
};
class MaxUnpool2dImpl : public Cloneable<MaxUnpool2dImpl, MaxUnpoolImpl<2>> {
 public:
  using Cloneable::Cloneable;
};
class MaxUnpool3dImpl : public Cloneable<MaxUnpool3dImpl, MaxUnpoolImpl<3>> {
 public:
  using Cloneable::Cloneable;
};
// Randomized leaky ReLU (functional::rrelu): random slopes in training, their mean otherwise.
class RReLUImpl : public Cloneable<RReLUImpl> {
 public:
  explicit RReLUImpl(double lower = 1.0 / 8, double upper = 1.0 / 3, bool inplace = false);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double lower, upper;
  bool inplace;
  // What a clone or a replica takes from its original (Module::copy_settings_from).
  auto settings() { return std::tie(lower, upper, inplace); }
};
// [..., C * r^2, H, W] <-> [..., C, H * r, W * r] (functional::pixel_shuffle, pixel_unshuffle).
class PixelShuffleImpl : public Cloneable<PixelShuffleImpl, FunctionalImpl> {
 public:
  explicit PixelShuffleImpl(int64_t upscale_factor);
};
class PixelUnshuffleImpl : public Cloneable<PixelUnshuffleImpl, FunctionalImpl> {
 public:
  explicit PixelUnshuffleImpl(int64_t downscale_factor);
};
// functional::unfold and fold with fixed sizes.
class UnfoldImpl : public Cloneable<UnfoldImpl, FunctionalImpl> {
 public:
  explicit UnfoldImpl(IntList kernel_size, IntList dilation = 1, IntList padding = 0, IntList stride = 1);
};
class FoldImpl : public Cloneable<FoldImpl, FunctionalImpl> {
 public:
  FoldImpl(IntList output_size, IntList kernel_size, IntList dilation = 1, IntList padding = 0, IntList stride = 1);
};

// softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W].
class Softmax2dImpl : public Cloneable<Softmax2dImpl, FunctionalImpl> {
 public:
  Softmax2dImpl();
};
class ChannelShuffleImpl : public Cloneable<ChannelShuffleImpl, FunctionalImpl> {
 public:
  explicit ChannelShuffleImpl(int64_t groups);
};

struct CosineSimilarityOptions {
  CosineSimilarityOptions& dim(int64_t d) { dim_ = d; return *this; }
  CosineSimilarityOptions& eps(double e) { eps_ = e; return *this; }
  int64_t dim_ = 1;
  double eps_ = 1e-8;
};

// forward(x1, x2): functional::cosine_similarity along options.dim.
class CosineSimilarityImpl : public Cloneable<CosineSimilarityImpl> {
 public:
  explicit CosineSimilarityImpl(CosineSimilarityOptions options = {});
  Tensor forward(const Tensor& x1, const Tensor& x2);
  CosineSimilarityOptions options;
};

// Dropout(p): active in training mode only; with inplace, it writes its input.
class DropoutImpl : public Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(double p = 0.5, bool inplace = false) : DropoutImpl("Dropout", p, inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
  bool inplace;
  // What a clone or a replica takes from its original (Module::copy_settings_from).
  auto settings() { return std::tie(p, inplace); }

 protected:
  DropoutImpl(const char* name, double p, bool inplace);  // name: for the error
  // The function, or with inplace its in-place form, at p in the module's mode.
  Tensor drop(const Tensor& x, Tensor (*out_of_place)(const Tensor&, double, bool),
              Tensor& (*in_place)(Tensor&, double, bool));
};

// Channel dropout (functional::dropout1d, 2d, 3d), active in training mode only.
class Dropout1dImpl : public Cloneable<Dropout1dImpl, DropoutImpl> {
 public:
  explicit Dropout1dImpl(double p = 0.5, bool inplace = false) : Cloneable("Dropout1d", p, inplace) {}
  Tensor forward(const Tensor& x) override;
};
class Dropout2dImpl : public Cloneable<Dropout2dImpl, DropoutImpl> {
 public:
  explicit Dropout2dImpl(double p = 0.5, bool inplace = false) : Cloneable("Dropout2d", p, inplace) {}
  Tensor forward(const Tensor& x) override;
};
// Alpha dropout (functional::alpha_dropout, feature_alpha_dropout), active in training mode only.
class AlphaDropoutImpl : public Cloneable<AlphaDropoutImpl, DropoutImpl> {
 public:
  explicit AlphaDropoutImpl(double p = 0.5, bool inplace = false) : Cloneable("AlphaDropout", p, inplace) {}
  Tensor forward(const Tensor& x) override;
};
class FeatureAlphaDropoutImpl : public Cloneable<FeatureAlphaDropoutImpl, DropoutImpl> {
 public:
  explicit FeatureAlphaDropoutImpl(double p = 0.5, bool inplace = false) : Cloneable("FeatureAlphaDropout", p, inplace) {}
  Tensor forward(const Tensor& x) override;
};
class Dropout3dImpl : public Cloneable<Dropout3dImpl, DropoutImpl> {
 public:
  explicit Dropout3dImpl(double p = 0.5, bool inplace = false) : Cloneable("Dropout3d", p, inplace) {}
  Tensor forward(const Tensor& x) override;
};

class Identity : public ModuleHolder<IdentityImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class ReLU : public ModuleHolder<ReLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Softplus : public ModuleHolder<SoftplusImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class ELU : public ModuleHolder<ELUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class SELU : public ModuleHolder<SELUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class CELU : public ModuleHolder<CELUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Unflatten : public ModuleHolder<UnflattenImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class LeakyReLU : public ModuleHolder<LeakyReLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class GELU : public ModuleHolder<GELUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class SiLU : public ModuleHolder<SiLUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Tanh : public ModuleHolder<TanhImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Sigmoid : public ModuleHolder<SigmoidImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Softmax : public ModuleHolder<SoftmaxImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class LogSoftmax : public ModuleHolder<LogSoftmaxImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Flatten : public ModuleHolder<FlattenImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class MaxPool2d : public ModuleHolder<MaxPool2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class AvgPool2d : public ModuleHolder<AvgPool2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class AdaptiveAvgPool2d : public ModuleHolder<AdaptiveAvgPool2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Dropout : public ModuleHolder<DropoutImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class CosineSimilarity : public ModuleHolder<CosineSimilarityImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// More activations, as PyTorch's modules of the same names (F:: has their math).
class HardtanhImpl : public Cloneable<HardtanhImpl, FunctionalImpl> {
 public:
  explicit HardtanhImpl(double min_val = -1, double max_val = 1, bool inplace = false);
};
class ReLU6Impl : public Cloneable<ReLU6Impl, FunctionalImpl> {
 public:
  explicit ReLU6Impl(bool inplace = false);
};
class HardsigmoidImpl : public Cloneable<HardsigmoidImpl, FunctionalImpl> {
 public:
  explicit HardsigmoidImpl(bool inplace = false);
};
class HardswishImpl : public Cloneable<HardswishImpl, FunctionalImpl> {
 public:
  explicit HardswishImpl(bool inplace = false);
};
class MishImpl : public Cloneable<MishImpl, FunctionalImpl> {
 public:
  explicit MishImpl(bool inplace = false);
};
class LogSigmoidImpl : public Cloneable<LogSigmoidImpl, FunctionalImpl> {
 public:
  LogSigmoidImpl();
};
class SoftsignImpl : public Cloneable<SoftsignImpl, FunctionalImpl> {
 public:
  SoftsignImpl();
};
class TanhshrinkImpl : public Cloneable<TanhshrinkImpl, FunctionalImpl> {
 public:
  TanhshrinkImpl();
};
class HardshrinkImpl : public Cloneable<HardshrinkImpl, FunctionalImpl> {
 public:
  explicit HardshrinkImpl(double lambd = 0.5);
};
class SoftshrinkImpl : public Cloneable<SoftshrinkImpl, FunctionalImpl> {
 public:
  explicit SoftshrinkImpl(double lambd = 0.5);
};
class ThresholdImpl : public Cloneable<ThresholdImpl, FunctionalImpl> {
 public:
  ThresholdImpl(double threshold, double value, bool inplace = false);
};
class GLUImpl : public Cloneable<GLUImpl, FunctionalImpl> {
 public:
  explicit GLUImpl(int64_t dim = -1);
};
class SoftminImpl : public Cloneable<SoftminImpl, FunctionalImpl> {
 public:
  explicit SoftminImpl(int64_t dim);
};
// A learned negative slope: one (num_parameters = 1) or one per channel, starting at `init`.
class PReLUImpl : public Cloneable<PReLUImpl> {
 public:
  explicit PReLUImpl(int64_t num_parameters = 1, double init = 0.25);
  void reset() override;
  Tensor forward(const Tensor& x) override { return functional::prelu(x, weight); }
  std::string extra_repr() const override { return "num_parameters=" + std::to_string(num_parameters_); }
  Tensor weight;

 private:
  int64_t num_parameters_;
  double init_;
};
#define TD_HOLDER(Name)                             \
  class Name : public ModuleHolder<Name##Impl> {    \
   public:                                          \
    using ModuleHolder::ModuleHolder;               \
  };
TD_HOLDER(Softmax2d)
TD_HOLDER(ChannelShuffle)
TD_HOLDER(MaxPool1d)
TD_HOLDER(AvgPool1d)
TD_HOLDER(AdaptiveAvgPool1d)
TD_HOLDER(AdaptiveMaxPool1d)
TD_HOLDER(AdaptiveMaxPool2d)
TD_HOLDER(MaxPool3d)
TD_HOLDER(AvgPool3d)
TD_HOLDER(AdaptiveAvgPool3d)
TD_HOLDER(AdaptiveMaxPool3d)
TD_HOLDER(FractionalMaxPool2d)
TD_HOLDER(FractionalMaxPool3d)
TD_HOLDER(LPPool1d)
TD_HOLDER(LPPool2d)
TD_HOLDER(LPPool3d)
TD_HOLDER(MaxUnpool1d)
TD_HOLDER(MaxUnpool2d)
TD_HOLDER(MaxUnpool3d)
TD_HOLDER(RReLU)
TD_HOLDER(AlphaDropout)
TD_HOLDER(FeatureAlphaDropout)
TD_HOLDER(PixelShuffle)
TD_HOLDER(PixelUnshuffle)
TD_HOLDER(Unfold)
TD_HOLDER(Fold)
TD_HOLDER(Dropout1d)
TD_HOLDER(Dropout2d)
TD_HOLDER(Dropout3d)
TD_HOLDER(Hardtanh)
TD_HOLDER(ReLU6)
TD_HOLDER(Hardsigmoid)
TD_HOLDER(Hardswish)
TD_HOLDER(Mish)
TD_HOLDER(LogSigmoid)
TD_HOLDER(Softsign)
TD_HOLDER(Tanhshrink)
TD_HOLDER(Hardshrink)
TD_HOLDER(Softshrink)
TD_HOLDER(Threshold)
TD_HOLDER(GLU)
TD_HOLDER(Softmin)
TD_HOLDER(PReLU)
#undef TD_HOLDER

// Upsample, as PyTorch's: F::interpolate with a fixed size or scale_factor and mode (nearest by
// default). UpsamplingNearest2d and UpsamplingBilinear2d are Upsample with mode nearest, and with
// mode bilinear and align_corners: they refuse options that set a mode or align_corners.
struct UpsampleOptions {
  UpsampleOptions& size(std::vector<int64_t> s) { size_ = std::move(s); return *this; }
  UpsampleOptions& scale_factor(std::vector<double> s) { scale_factor_ = std::move(s); return *this; }
  UpsampleOptions& mode(InterpolateMode m) { mode_ = m; return *this; }
  UpsampleOptions& align_corners(bool a) { align_corners_ = a; return *this; }
  UpsampleOptions& recompute_scale_factor(bool r) { recompute_scale_factor_ = r; return *this; }
  std::optional<std::vector<int64_t>> size_;
  std::optional<std::vector<double>> scale_factor_;
  std::optional<InterpolateMode> mode_;  // nearest unless set
  std::optional<bool> align_corners_;
  bool recompute_scale_factor_ = false;
};
class UpsampleImpl : public Cloneable<UpsampleImpl, FunctionalImpl> {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options);
};
class UpsamplingNearest2dImpl : public Cloneable<UpsamplingNearest2dImpl, FunctionalImpl> {
 public:
  explicit UpsamplingNearest2dImpl(const UpsampleOptions& options);
};
class UpsamplingBilinear2dImpl : public Cloneable<UpsamplingBilinear2dImpl, FunctionalImpl> {
 public:
  explicit UpsamplingBilinear2dImpl(const UpsampleOptions& options);
};
class Upsample : public ModuleHolder<UpsampleImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class UpsamplingNearest2d : public ModuleHolder<UpsamplingNearest2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class UpsamplingBilinear2d : public ModuleHolder<UpsamplingBilinear2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// The padding layers, as PyTorch's: ZeroPad, ConstantPad (with a value), ReflectionPad,
// ReplicationPad and CircularPad, each in 1d, 2d and 3d: F::pad over the last 1, 2 or 3 dims.
// padding: one number for every side, or (left, right[, top, bottom[, front, back]]), as a
// number or a Shape.
enum class PadLayer { zero, constant, reflection, replication, circular };
template <PadLayer Kind, int Dims>
class PadImpl : public Cloneable<PadImpl<Kind, Dims>, FunctionalImpl> {
 public:
  explicit PadImpl(IntList padding)
    requires(Kind != PadLayer::constant);
  PadImpl(IntList padding, double value)
    requires(Kind == PadLayer::constant);
};
template <PadLayer Kind, int Dims>
class PadHolder : public ModuleHolder<PadImpl<Kind, Dims>> {
 public:
  using ModuleHolder<PadImpl<Kind, Dims>>::ModuleHolder;
};
#define TD_PAD_LAYER(Name, kind, dims)         \
  using Name##Impl = PadImpl<PadLayer::kind, dims>; \
  using Name = PadHolder<PadLayer::kind, dims>;
TD_PAD_LAYER(ZeroPad1d, zero, 1)
TD_PAD_LAYER(ZeroPad2d, zero, 2)
TD_PAD_LAYER(ZeroPad3d, zero, 3)
TD_PAD_LAYER(ConstantPad1d, constant, 1)
TD_PAD_LAYER(ConstantPad2d, constant, 2)
TD_PAD_LAYER(ConstantPad3d, constant, 3)
TD_PAD_LAYER(ReflectionPad1d, reflection, 1)
TD_PAD_LAYER(ReflectionPad2d, reflection, 2)
TD_PAD_LAYER(ReflectionPad3d, reflection, 3)
TD_PAD_LAYER(ReplicationPad1d, replication, 1)
TD_PAD_LAYER(ReplicationPad2d, replication, 2)
TD_PAD_LAYER(ReplicationPad3d, replication, 3)
TD_PAD_LAYER(CircularPad1d, circular, 1)
TD_PAD_LAYER(CircularPad2d, circular, 2)
TD_PAD_LAYER(CircularPad3d, circular, 3)
#undef TD_PAD_LAYER

// Runs its submodules in order, each on the previous one's output; named "0", "1", ...
class SequentialImpl : public Cloneable<SequentialImpl> {
 public:
  SequentialImpl() = default;
  template <typename... Holders>
  explicit SequentialImpl(Holders&&... modules) {
    (push_back(std::forward<Holders>(modules)), ...);
  }
  template <typename Holder>
    requires requires(Holder h) { h.ptr(); }
  void push_back(Holder holder) {
    push_back(std::static_pointer_cast<Module>(holder.ptr()));
  }
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> operator[](size_t index) const;
  size_t size() const { return modules_.size(); }
  std::shared_ptr<Module> clone(std::optional<Device> device = std::nullopt) const override;
  void replace_module(const std::string& name, std::shared_ptr<Module> module) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  Sequential() : ModuleHolder(std::make_shared<SequentialImpl>()) {}
};

// Holds submodules in a list (named "0", "1", ...) so that they are registered; no forward.
class ModuleListImpl : public Cloneable<ModuleListImpl> {
 public:
  ModuleListImpl() = default;
  template <typename Holder>
    requires requires(Holder h) { h.ptr(); }
  void push_back(Holder holder) {
    push_back(std::static_pointer_cast<Module>(holder.ptr()));
  }
  void push_back(std::shared_ptr<Module> module);
  std::shared_ptr<Module> operator[](size_t index) const;
  size_t size() const { return modules_.size(); }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }
  std::shared_ptr<Module> clone(std::optional<Device> device = std::nullopt) const override;
  void replace_module(const std::string& name, std::shared_ptr<Module> module) override;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
class ModuleList : public ModuleHolder<ModuleListImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  ModuleList() : ModuleHolder(std::make_shared<ModuleListImpl>()) {}
};

// Holds submodules by name, in insertion order; no forward.
class ModuleDictImpl : public Cloneable<ModuleDictImpl> {
 public:
  ModuleDictImpl() = default;
  template <typename Holder>
    requires requires(Holder h) { h.ptr(); }
  void insert(const std::string& key, Holder holder) {
    insert(key, std::static_pointer_cast<Module>(holder.ptr()));
  }
  // A key already present keeps its place and takes the new module, as in LibTorch.
  void insert(const std::string& key, std::shared_ptr<Module> module);
  std::shared_ptr<Module> operator[](const std::string& key) const;
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const;
  size_t size() const { return registered_children().size(); }
  std::shared_ptr<Module> clone(std::optional<Device> device = std::nullopt) const override;
};
class ModuleDict : public ModuleHolder<ModuleDictImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  ModuleDict() : ModuleHolder(std::make_shared<ModuleDictImpl>()) {}
};

// Parameters in a list, registered as "0", "1", ...: PyTorch's nn.ParameterList; no forward. A
// leaf is registered itself (shared) and keeps its requires_grad, as LibTorch's append (PyTorch
// makes a plain tensor trainable: pass one that requires grad).
class ParameterListImpl : public Cloneable<ParameterListImpl> {
 public:
  ParameterListImpl() = default;
  explicit ParameterListImpl(const std::vector<Tensor>& params) { extend(params); }
  void append(const Tensor& param);
  void extend(const std::vector<Tensor>& params);
  Tensor operator[](size_t index) const;
  size_t size() const { return registered_parameters().size(); }
  bool is_empty() const { return size() == 0; }
  std::shared_ptr<Module> clone(std::optional<Device> device = std::nullopt) const override;
  std::string extra_repr() const override;
};
class ParameterList : public ModuleHolder<ParameterListImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  ParameterList() : ModuleHolder(std::make_shared<ParameterListImpl>()) {}
};

// Parameters by name, in insertion order: PyTorch's nn.ParameterDict; no forward. Each keeps its
// requires_grad, as ParameterList's; insert() on a key already there replaces it in its place.
class ParameterDictImpl : public Cloneable<ParameterDictImpl> {
 public:
  ParameterDictImpl() = default;
  explicit ParameterDictImpl(const std::vector<std::pair<std::string, Tensor>>& params);
  void insert(const std::string& key, const Tensor& param);
  Tensor operator[](const std::string& key) const;
  bool contains(const std::string& key) const;
  // Removes the key and returns its parameter.
  Tensor pop(const std::string& key);
  std::vector<std::string> keys() const;
  std::vector<Tensor> values() const;
  size_t size() const { return registered_parameters().size(); }
  bool is_empty() const { return size() == 0; }
  std::shared_ptr<Module> clone(std::optional<Device> device = std::nullopt) const override;
  std::string extra_repr() const override;
};
class ParameterDict : public ModuleHolder<ParameterDictImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  ParameterDict() : ModuleHolder(std::make_shared<ParameterDictImpl>()) {}
};

}  // namespace tandem::nn
