// The layers of td::nn with learnable parameters: Linear, Conv1d/2d/3d, ConvTranspose1d/2d/3d,
// BatchNorm1d/2d, LayerNorm, GroupNorm, Embedding. Parameters start as PyTorch initializes them,
// so weights have the same distributions. Each comes as an Impl (the module) and a holder of the
// same name without Impl.
#pragma once

#include <optional>
#include <tuple>
#include <vector>

#include "nn/functional.h"
#include "nn/module.h"

namespace tandem::nn {

struct LinearOptions {
  LinearOptions(int64_t in, int64_t out) : in_features_(in), out_features_(out) {}
  LinearOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t in_features_, out_features_;
  bool bias_ = true;
};

// y = x W^T + b; W [out, in] and b [out] from U(-1/sqrt(in), 1/sqrt(in)).
class LinearImpl : public Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LinearOptions options;
  Tensor weight, bias;
};
class Linear : public ModuleHolder<LinearImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// Conv2d's and Conv3d's options: each size one value per spatial dim (D of them), or one for all.
template <size_t D>
struct ConvOptions {
  ConvOptions(int64_t in, int64_t out, std::vector<int64_t> kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(std::move(kernel)) {}
  ConvOptions(int64_t in, int64_t out, int64_t kernel) : ConvOptions(in, out, std::vector<int64_t>(D, kernel)) {}
  ConvOptions& stride(std::vector<int64_t> s) { stride_ = std::move(s); return *this; }
  ConvOptions& stride(int64_t s) { return stride(std::vector<int64_t>(D, s)); }
  ConvOptions& padding(std::vector<int64_t> p) {
    padding_ = std::move(p);
    padding_name_.reset();
    return *this;
  }
  ConvOptions& padding(int64_t p) { return padding(std::vector<int64_t>(D, p)); }
  ConvOptions& padding(PaddingMode mode) {  // kSame or kValid
    padding_.assign(D, 0);
    padding_name_ = mode;
    return *this;
  }
  // What the padding holds: zeros (kConstant, the default), or the input reflected, replicated
  // or wrapped around (F::pad's modes), padded before the convolution as PyTorch's padding_mode.
  ConvOptions& padding_mode(PadMode mode) { padding_mode_ = mode; return *this; }
  ConvOptions& dilation(std::vector<int64_t> d) { dilation_ = std::move(d); return *this; }
  ConvOptions& dilation(int64_t d) { return dilation(std::vector<int64_t>(D, d)); }
  ConvOptions& groups(int64_t g) { groups_ = g; return *this; }
  ConvOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t in_channels_, out_channels_;
  std::vector<int64_t> kernel_size_, stride_ = std::vector<int64_t>(D, 1), padding_ = std::vector<int64_t>(D, 0),
                                     dilation_ = std::vector<int64_t>(D, 1);
  std::optional<PaddingMode> padding_name_;  // set by padding(kSame or kValid), in place of padding_
  PadMode padding_mode_ = kConstant;
  int64_t groups_ = 1;
  bool bias_ = true;
};
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

// Convolution over D spatial dims: x [N, C, spatial...] (or without N); weight [out, in / groups,
// kernel...] and bias [out] from U(+-1/sqrt(fan_in)), as PyTorch's. Conv2d and Conv3d are its two.
template <size_t D, class Derived>
class ConvNdImpl : public Cloneable<Derived> {
 public:
  ConvNdImpl(int64_t in, int64_t out, int64_t kernel) : ConvNdImpl(ConvOptions<D>(in, out, kernel)) {}
  explicit ConvNdImpl(const ConvOptions<D>& options_) : options(options_) { reset(); }
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  ConvOptions<D> options;
  Tensor weight, bias;
};
class Conv2dImpl : public ConvNdImpl<2, Conv2dImpl> {
 public:
  using ConvNdImpl<2, Conv2dImpl>::ConvNdImpl;
};
class Conv2d : public ModuleHolder<Conv2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class Conv3dImpl : public ConvNdImpl<3, Conv3dImpl> {
 public:
  using ConvNdImpl<3, Conv3dImpl>::ConvNdImpl;
};
class Conv3d : public ModuleHolder<Conv3dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct Conv1dOptions {
  Conv1dOptions(int64_t in, int64_t out, int64_t kernel) : in_channels_(in), out_channels_(out), kernel_size_(kernel) {}
  Conv1dOptions& stride(int64_t s) { stride_ = s; return *this; }
  Conv1dOptions& padding(int64_t p) {
    padding_ = p;
    padding_name_.reset();
    return *this;
  }
  Conv1dOptions& padding(PaddingMode mode) {  // kSame or kValid
    padding_ = 0;
    padding_name_ = mode;
    return *this;
  }
  Conv1dOptions& padding_mode(PadMode mode) { padding_mode_ = mode; return *this; }  // as Conv2d's
  Conv1dOptions& dilation(int64_t d) { dilation_ = d; return *this; }
  Conv1dOptions& groups(int64_t g) { groups_ = g; return *this; }
  Conv1dOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t in_channels_, out_channels_, kernel_size_, stride_ = 1, padding_ = 0, dilation_ = 1;
  std::optional<PaddingMode> padding_name_;  // set by padding(kSame or kValid), in place of padding_
  PadMode padding_mode_ = kConstant;
  int64_t groups_ = 1;
  bool bias_ = true;
};

// Convolution along one dim: x [N, C, L] (or [C, L]); weight [out, in / groups, k] and bias
// [out] start as Conv2d's do.
class Conv1dImpl : public Cloneable<Conv1dImpl> {
 public:
  Conv1dImpl(int64_t in, int64_t out, int64_t kernel) : Conv1dImpl(Conv1dOptions(in, out, kernel)) {}
  explicit Conv1dImpl(const Conv1dOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Conv1dOptions options;
  Tensor weight, bias;
};
class Conv1d : public ModuleHolder<Conv1dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// ConvTranspose2d's and ConvTranspose3d's options: each size one value per spatial dim (D of
// them), or one for all.
template <size_t D>
struct ConvTransposeOptions {
  ConvTransposeOptions(int64_t in, int64_t out, std::vector<int64_t> kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(std::move(kernel)) {}
  ConvTransposeOptions(int64_t in, int64_t out, int64_t kernel)
      : ConvTransposeOptions(in, out, std::vector<int64_t>(D, kernel)) {}
  ConvTransposeOptions& stride(std::vector<int64_t> s) { stride_ = std::move(s); return *this; }
  ConvTransposeOptions& stride(int64_t s) { return stride(std::vector<int64_t>(D, s)); }
  ConvTransposeOptions& padding(std::vector<int64_t> p) { padding_ = std::move(p); return *this; }
  ConvTransposeOptions& padding(int64_t p) { return padding(std::vector<int64_t>(D, p)); }
  ConvTransposeOptions& output_padding(std::vector<int64_t> p) { output_padding_ = std::move(p); return *this; }
  ConvTransposeOptions& output_padding(int64_t p) { return output_padding(std::vector<int64_t>(D, p)); }
  ConvTransposeOptions& dilation(std::vector<int64_t> d) { dilation_ = std::move(d); return *this; }
  ConvTransposeOptions& dilation(int64_t d) { return dilation(std::vector<int64_t>(D, d)); }
  ConvTransposeOptions& groups(int64_t g) { groups_ = g; return *this; }
  ConvTransposeOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t in_channels_, out_channels_;
  std::vector<int64_t> kernel_size_, stride_ = std::vector<int64_t>(D, 1), padding_ = std::vector<int64_t>(D, 0),
                                     output_padding_ = std::vector<int64_t>(D, 0),
                                     dilation_ = std::vector<int64_t>(D, 1);
  int64_t groups_ = 1;
  bool bias_ = true;
};
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

// F::conv_transpose2d or 3d as a layer (an upsampling convolution): weight [in, out / groups,
// kernel...] and bias [out], initialised as PyTorch's (its fan-in is weight.size(1) times the
// kernel's size). ConvTranspose2d and ConvTranspose3d are its two.
template <size_t D, class Derived>
class ConvTransposeNdImpl : public Cloneable<Derived> {
 public:
  ConvTransposeNdImpl(int64_t in, int64_t out, int64_t kernel)
      : ConvTransposeNdImpl(ConvTransposeOptions<D>(in, out, kernel)) {}
  explicit ConvTransposeNdImpl(const ConvTransposeOptions<D>& options_) : options(options_) { reset(); }
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  // With the output's spatial sizes asked for (or its whole shape): the output padding that gives
  // them, as PyTorch's forward(input, output_size). A stride leaves several sizes possible; each
  // must be at most stride - 1 above the smallest.
  Tensor forward(const Tensor& x, const std::vector<int64_t>& output_size);
  std::string extra_repr() const override;
  ConvTransposeOptions<D> options;
  Tensor weight, bias;
};
class ConvTranspose2dImpl : public ConvTransposeNdImpl<2, ConvTranspose2dImpl> {
 public:
  using ConvTransposeNdImpl<2, ConvTranspose2dImpl>::ConvTransposeNdImpl;
};
class ConvTranspose2d : public ModuleHolder<ConvTranspose2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class ConvTranspose3dImpl : public ConvTransposeNdImpl<3, ConvTranspose3dImpl> {
 public:
  using ConvTransposeNdImpl<3, ConvTranspose3dImpl>::ConvTransposeNdImpl;
};
class ConvTranspose3d : public ModuleHolder<ConvTranspose3dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct ConvTranspose1dOptions {
  ConvTranspose1dOptions(int64_t in, int64_t out, int64_t kernel)
      : in_channels_(in), out_channels_(out), kernel_size_(kernel) {}
  ConvTranspose1dOptions& stride(int64_t s) { stride_ = s; return *this; }
  ConvTranspose1dOptions& padding(int64_t p) { padding_ = p; return *this; }
  ConvTranspose1dOptions& output_padding(int64_t p) { output_padding_ = p; return *this; }
  ConvTranspose1dOptions& dilation(int64_t d) { dilation_ = d; return *this; }
  ConvTranspose1dOptions& groups(int64_t g) { groups_ = g; return *this; }
  ConvTranspose1dOptions& bias(bool b) { bias_ = b; return *this; }
  int64_t in_channels_, out_channels_, kernel_size_, stride_ = 1, padding_ = 0, output_padding_ = 0, dilation_ = 1,
      groups_ = 1;
  bool bias_ = true;
};

// F::conv_transpose1d as a layer: weight [in, out / groups, k] and bias [out], initialised as
// PyTorch's. forward(x, output_size) picks the output_padding that gives that length.
class ConvTranspose1dImpl : public Cloneable<ConvTranspose1dImpl> {
 public:
  ConvTranspose1dImpl(int64_t in, int64_t out, int64_t kernel)
      : ConvTranspose1dImpl(ConvTranspose1dOptions(in, out, kernel)) {}
  explicit ConvTranspose1dImpl(const ConvTranspose1dOptions& options);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  Tensor forward(const Tensor& x, int64_t output_size);
  std::string extra_repr() const override;
  ConvTranspose1dOptions options;
  Tensor weight, bias;
};
class ConvTranspose1d : public ModuleHolder<ConvTranspose1dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct BatchNormOptions {
  BatchNormOptions(int64_t features) : num_features_(features) {}
  BatchNormOptions& eps(double e) { eps_ = e; return *this; }
  BatchNormOptions& momentum(std::optional<double> m) { momentum_ = m; return *this; }
  BatchNormOptions& affine(bool a) { affine_ = a; return *this; }
  BatchNormOptions& bias(bool b) { bias_ = b; return *this; }  // with affine: learn a shift too
  BatchNormOptions& track_running_stats(bool t) { track_running_stats_ = t; return *this; }
  int64_t num_features_;
  double eps_ = 1e-5;
  std::optional<double> momentum_ = 0.1;
  bool affine_ = true, bias_ = true, track_running_stats_ = true;
};

// What every BatchNorm has, whatever its dims: its running statistics' reset and momentum (what
// swa_utils::update_bn sets), and a hook through which replicas under DataParallel with
// sync_batchnorm share their batch statistics (empty otherwise).
class AnyBatchNorm {
 public:
  virtual ~AnyBatchNorm() = default;
  // running_mean to 0, running_var to 1, num_batches_tracked to 0 (nothing without them), as PyTorch's.
  virtual void reset_running_stats() = 0;
  // The weight of each batch in the running statistics; none: their cumulative average.
  virtual std::optional<double>& momentum() = 0;
  functional::BatchStatsSync sync;
};

// Batch normalization over dim 1; running_mean, running_var and num_batches_tracked are buffers.
// BatchNorm1d takes [N, C] or [N, C, L], BatchNorm2d [N, C, H, W].
template <typename Derived>
class BatchNormBase : public Cloneable<Derived>, public AnyBatchNorm {
 public:
  BatchNormBase(const BatchNormOptions& options, std::vector<int64_t> input_dims);
  void reset() override;
  void reset_running_stats() override;
  std::optional<double>& momentum() override { return options.momentum_; }
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  BatchNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  std::vector<int64_t> input_dims_;
};
class BatchNorm1dImpl : public BatchNormBase<BatchNorm1dImpl> {
 public:
  explicit BatchNorm1dImpl(const BatchNormOptions& options) : BatchNormBase(options, {2, 3}) {}
};
class BatchNorm2dImpl : public BatchNormBase<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(const BatchNormOptions& options) : BatchNormBase(options, {4}) {}
};
class BatchNorm3dImpl : public BatchNormBase<BatchNorm3dImpl> {  // [N, C, D, H, W]
 public:
  explicit BatchNorm3dImpl(const BatchNormOptions& options) : BatchNormBase(options, {5}) {}
};
class BatchNorm1d : public ModuleHolder<BatchNorm1dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class BatchNorm2d : public ModuleHolder<BatchNorm2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class BatchNorm3d : public ModuleHolder<BatchNorm3dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// InstanceNorm's options, PyTorch's defaults: no affine parameters, no running statistics.
struct InstanceNormOptions {
  InstanceNormOptions(int64_t features) : num_features_(features) {}
  InstanceNormOptions& eps(double e) { eps_ = e; return *this; }
  // None: the running statistics never move, as PyTorch's InstanceNorm (it passes 0 for None).
  InstanceNormOptions& momentum(std::optional<double> m) { momentum_ = m; return *this; }
  InstanceNormOptions& affine(bool a) { affine_ = a; return *this; }
  InstanceNormOptions& track_running_stats(bool t) { track_running_stats_ = t; return *this; }
  int64_t num_features_;
  double eps_ = 1e-5;
  std::optional<double> momentum_ = 0.1;
  bool affine_ = false, track_running_stats_ = false;
};

// functional::instance_norm of each sample's channels; InstanceNorm1d takes [N, C, L] or [C, L],
// 2d [N, C, H, W] or [C, H, W], 3d [N, C, D, H, W] or [C, D, H, W]. With track_running_stats it
// keeps running statistics while training and normalizes with them in eval mode.
template <typename Derived>
class InstanceNormBase : public Cloneable<Derived> {
 public:
  InstanceNormBase(const InstanceNormOptions& options, int64_t spatial_dims);
  void reset() override;
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  InstanceNormOptions options;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  int64_t spatial_dims_;
};
class InstanceNorm1dImpl : public InstanceNormBase<InstanceNorm1dImpl> {
 public:
  explicit InstanceNorm1dImpl(const InstanceNormOptions& options) : InstanceNormBase(options, 1) {}
};
class InstanceNorm2dImpl : public InstanceNormBase<InstanceNorm2dImpl> {
 public:
  explicit InstanceNorm2dImpl(const InstanceNormOptions& options) : InstanceNormBase(options, 2) {}
};
class InstanceNorm3dImpl : public InstanceNormBase<InstanceNorm3dImpl> {
 public:
  explicit InstanceNorm3dImpl(const InstanceNormOptions& options) : InstanceNormBase(options, 3) {}
};
class InstanceNorm1d : public ModuleHolder<InstanceNorm1dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class InstanceNorm2d : public ModuleHolder<InstanceNorm2dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class InstanceNorm3d : public ModuleHolder<InstanceNorm3dImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// functional::local_response_norm with fixed settings (no parameters).
class LocalResponseNormImpl : public Cloneable<LocalResponseNormImpl> {
 public:
  explicit LocalResponseNormImpl(int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t size;
  double alpha, beta, k;
  // What a clone or a replica takes from its original (Module::copy_settings_from).
  auto settings() { return std::tie(size, alpha, beta, k); }
};
class LocalResponseNorm : public ModuleHolder<LocalResponseNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// y = x1^T A_o x2 + b_o for each output o: weight [out, in1, in2] and bias [out], both U(+-1/sqrt(in1))
// at first, as PyTorch's. forward(x1, x2) with x1 [..., in1] and x2 [..., in2].
class BilinearImpl : public Cloneable<BilinearImpl> {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true);
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& x1, const Tensor& x2);
  std::string extra_repr() const override;
  int64_t in1_features, in2_features, out_features;
  bool has_bias;
  Tensor weight, bias;
};
class Bilinear : public ModuleHolder<BilinearImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> shape) : normalized_shape_(std::move(shape)) {}
  LayerNormOptions& eps(double e) { eps_ = e; return *this; }
  LayerNormOptions& elementwise_affine(bool a) { elementwise_affine_ = a; return *this; }
  LayerNormOptions& bias(bool b) { bias_ = b; return *this; }  // with elementwise_affine: learn a shift too
  std::vector<int64_t> normalized_shape_;
  double eps_ = 1e-5;
  bool elementwise_affine_ = true, bias_ = true;
};

class LayerNormImpl : public Cloneable<LayerNormImpl> {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  void reset() override;
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  LayerNormOptions options;
  Tensor weight, bias;
};
class LayerNorm : public ModuleHolder<LayerNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> shape) : normalized_shape_(std::move(shape)) {}
  RMSNormOptions& eps(std::optional<double> e) { eps_ = e; return *this; }
  RMSNormOptions& elementwise_affine(bool a) { elementwise_affine_ = a; return *this; }
  std::vector<int64_t> normalized_shape_;
  std::optional<double> eps_;  // nullopt: machine epsilon (float32's for 16-bit inputs)
  bool elementwise_affine_ = true;
};

// rms_norm over the last dims; with elementwise_affine, a weight (ones) of the normalized shape.
class RMSNormImpl : public Cloneable<RMSNormImpl> {
 public:
  explicit RMSNormImpl(const RMSNormOptions& options);
  void reset() override;
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  RMSNormOptions options;
  Tensor weight;
};
class RMSNorm : public ModuleHolder<RMSNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  GroupNormOptions& eps(double e) { eps_ = e; return *this; }
  GroupNormOptions& affine(bool a) { affine_ = a; return *this; }
  GroupNormOptions& bias(bool b) { bias_ = b; return *this; }  // with affine: learn a shift too
  int64_t num_groups_, num_channels_;
  double eps_ = 1e-5;
  bool affine_ = true, bias_ = true;
};

// group_norm over num_groups groups of num_channels; with affine, weight (ones) and bias (zeros) [C].
class GroupNormImpl : public Cloneable<GroupNormImpl> {
 public:
  explicit GroupNormImpl(const GroupNormOptions& options);
  void reset() override;
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  GroupNormOptions options;
  Tensor weight, bias;
};
class GroupNorm : public ModuleHolder<GroupNormImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// max_norm, norm_type and scale_grad_by_freq as functional::embedding's; _weight: the table
// ([num, dim]; the weight is a new leaf on its storage, not initialised), as PyTorch's.
struct EmbeddingOptions {
  EmbeddingOptions(int64_t num, int64_t dim) : num_embeddings_(num), embedding_dim_(dim) {}
  EmbeddingOptions& padding_idx(std::optional<int64_t> p) { padding_idx_ = p; return *this; }
  EmbeddingOptions& max_norm(std::optional<double> m) { max_norm_ = m; return *this; }
  EmbeddingOptions& norm_type(double p) { norm_type_ = p; return *this; }
  EmbeddingOptions& scale_grad_by_freq(bool s) { scale_grad_by_freq_ = s; return *this; }
  EmbeddingOptions& _weight(Tensor w) { _weight_ = std::move(w); return *this; }
  int64_t num_embeddings_, embedding_dim_;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2;
  bool scale_grad_by_freq_ = false;
  Tensor _weight_;
};

// Embedding::from_pretrained's options: freeze (the table takes no gradient) and the lookup's.
struct EmbeddingFromPretrainedOptions {
  EmbeddingFromPretrainedOptions& freeze(bool f) { freeze_ = f; return *this; }
  EmbeddingFromPretrainedOptions& padding_idx(std::optional<int64_t> p) { padding_idx_ = p; return *this; }
  EmbeddingFromPretrainedOptions& max_norm(std::optional<double> m) { max_norm_ = m; return *this; }
  EmbeddingFromPretrainedOptions& norm_type(double p) { norm_type_ = p; return *this; }
  EmbeddingFromPretrainedOptions& scale_grad_by_freq(bool s) { scale_grad_by_freq_ = s; return *this; }
  bool freeze_ = true;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2;
  bool scale_grad_by_freq_ = false;
};

// weight [num, dim] from N(0, 1), with the padding row zeroed.
class EmbeddingImpl : public Cloneable<EmbeddingImpl> {
 public:
  EmbeddingImpl(int64_t num, int64_t dim) : EmbeddingImpl(EmbeddingOptions(num, dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  void reset() override;
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  EmbeddingOptions options;
  Tensor weight;
};
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  // A layer whose weight shares the storage of `embeddings` [num, dim], trainable unless frozen.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num, int64_t dim) : num_embeddings_(num), embedding_dim_(dim) {}
  EmbeddingBagOptions& mode(functional::EmbeddingBagMode m) { mode_ = m; return *this; }
  EmbeddingBagOptions& include_last_offset(bool i) { include_last_offset_ = i; return *this; }
  EmbeddingBagOptions& padding_idx(std::optional<int64_t> p) { padding_idx_ = p; return *this; }
  EmbeddingBagOptions& max_norm(std::optional<double> m) { max_norm_ = m; return *this; }
  EmbeddingBagOptions& norm_type(double p) { norm_type_ = p; return *this; }
  EmbeddingBagOptions& scale_grad_by_freq(bool s) { scale_grad_by_freq_ = s; return *this; }
  EmbeddingBagOptions& _weight(Tensor w) { _weight_ = std::move(w); return *this; }
  int64_t num_embeddings_, embedding_dim_;
  functional::EmbeddingBagMode mode_ = functional::EmbeddingBagMode::mean;
  bool include_last_offset_ = false;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2;
  bool scale_grad_by_freq_ = false;
  Tensor _weight_;
};

// EmbeddingBag::from_pretrained's options: freeze (the table takes no gradient) and the bags'.
struct EmbeddingBagFromPretrainedOptions {
  EmbeddingBagFromPretrainedOptions& freeze(bool f) { freeze_ = f; return *this; }
  EmbeddingBagFromPretrainedOptions& mode(functional::EmbeddingBagMode m) { mode_ = m; return *this; }
  EmbeddingBagFromPretrainedOptions& include_last_offset(bool i) { include_last_offset_ = i; return *this; }
  EmbeddingBagFromPretrainedOptions& padding_idx(std::optional<int64_t> p) { padding_idx_ = p; return *this; }
  EmbeddingBagFromPretrainedOptions& max_norm(std::optional<double> m) { max_norm_ = m; return *this; }
  EmbeddingBagFromPretrainedOptions& norm_type(double p) { norm_type_ = p; return *this; }
  EmbeddingBagFromPretrainedOptions& scale_grad_by_freq(bool s) { scale_grad_by_freq_ = s; return *this; }
  bool freeze_ = true;
  functional::EmbeddingBagMode mode_ = functional::EmbeddingBagMode::mean;
  bool include_last_offset_ = false;
  std::optional<int64_t> padding_idx_;
  std::optional<double> max_norm_;
  double norm_type_ = 2;
  bool scale_grad_by_freq_ = false;
};

// functional::embedding_bag over weight [num, dim] from N(0, 1), the padding row zeroed, as
// PyTorch's. forward(input, offsets, per_sample_weights).
class EmbeddingBagImpl : public Cloneable<EmbeddingBagImpl> {
 public:
  EmbeddingBagImpl(int64_t num, int64_t dim) : EmbeddingBagImpl(EmbeddingBagOptions(num, dim)) {}
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options);
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights = Tensor());
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  std::string extra_repr() const override;
  EmbeddingBagOptions options;
  Tensor weight;
};
class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  // A layer whose weight shares the storage of `embeddings` [num, dim], trainable unless frozen.
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {});
};

}  // namespace tandem::nn
