// Lazy layers, as PyTorch's LazyLinear, LazyConv1d/2d/3d, LazyConvTranspose1d/2d/3d,
// LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d: the layer's input size (in_features,
// in_channels, num_features) comes from its first input, or from a checkpoint loaded before it.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nn/layers.h"

namespace tandem::nn {

// What makes `Eager` (LinearImpl, Conv2dImpl, ...) lazy. Until its first forward (or
// initialize_parameters) its input size is 0, its parameters and running statistics have no
// elements ([0]), and it prints as PyTorch's lazy layer ("LazyLinear(in_features=0, ...)"). The
// first input gives the size: the tensors are materialized in place (the same handles, so an
// optimizer made from parameters() before keeps them) and initialized as the eager layer
// initializes its own, drawing from the generator then and not at construction; from then on the
// layer is the eager one and prints as it. A checkpoint loaded before the first forward gives
// the size too (Module::load_state_dict). Unlike PyTorch's, a norm layer without parameters or
// statistics takes its size too.
template <typename Derived, typename Eager>
class Lazy : public Cloneable<Derived, Eager> {
 public:
  bool has_uninitialized_params() const override { return !materialized_; }
  // Takes the size from x and materializes; nothing once materialized. Refuses an input the
  // layer cannot take (its rank, no channels for a norm, channels a convolution's groups do not
  // divide) before changing anything.
  void initialize_parameters(const Tensor& x) {
    if (materialized_) return;
    materialize(static_cast<const Derived&>(*this).input_size_of(x));
  }
  // The size from the checkpoint's weight (or a norm's statistics); a size the layer cannot take
  // is refused before anything changes. The values a checkpoint holds replace the initial ones:
  // where it holds all of them, none is drawn, as in PyTorch.
  bool materialize_from(const StateDict& state, const std::string& prefix) override {
    if (materialized_) return false;
    const std::optional<int64_t> size = static_cast<const Derived&>(*this).input_size_in(state, prefix);
    if (!size) return false;
    const auto own = own_tensors();
    const bool holds_all = std::all_of(own.begin(), own.end(),
                                       [&](const auto& named) { return state.find(prefix + named.first) != nullptr; });
    std::optional<DiscardRandomDraws> discard;
    if (holds_all) discard.emplace();
    materialize(*size);
    return true;
  }
  Tensor forward(const Tensor& x) override {
    initialize_parameters(x);
    return Eager::forward(x);
  }
  // The size of the original's layer, where it has one (a clone's, made afresh by its parent's
  // reset()); the draws are the clone's to discard.
  void materialize_like(const Module& original) override {
    const auto* other = dynamic_cast<const Derived*>(&original);
    if (materialized_ || other == nullptr || !static_cast<const Lazy*>(other)->materialized_) return;
    materialize(other->input_size());
  }
  // Only between layers both lazy or both materialized: a lazy layer's sizes are its own to learn.
  void copy_settings_from(const Module& other) override {
    const auto* lazy = dynamic_cast<const Lazy*>(&other);
    if (lazy != nullptr && lazy->materialized_ == materialized_) Cloneable<Derived, Eager>::copy_settings_from(other);
  }
  // A clone's registration: the eager layer's once materialized, the empty tensors before.
  void reset() override {
    if (materialized_) return Eager::reset();
    {
      DiscardRandomDraws discard;
      static_cast<Derived&>(*this).set_input_size(static_cast<Derived&>(*this).placeholder_size());
      Eager::reset();
    }
    uninitialize();
  }

 protected:
  // The layer's own parameters, then its own buffers (those that are set: an unset one is not listed).
  std::vector<std::pair<std::string, Tensor>> own_tensors() const {
    std::vector<std::pair<std::string, Tensor>> own = this->named_parameters(false);
    for (auto& named : this->named_buffers(false)) own.push_back(std::move(named));
    return own;
  }
  // Builds the eager layer from `options` (whose input size is a placeholder its checks take)
  // without drawing; each lazy layer's constructor then calls uninitialize().
  template <typename Options>
  Lazy(std::string eager_name, const Options& options)
      : Cloneable<Derived, Eager>(without_draws(options)), eager_name_(std::move(eager_name)) {}
  // Called by the most derived constructor, once Derived is whole. Counts (integer buffers such
  // as num_batches_tracked) keep their value; the floating tensors have no elements.
  void uninitialize() {
    static_cast<Derived&>(*this).set_input_size(0);
    for (Tensor* t : static_cast<Derived&>(*this).lazy_tensors()) {
      if (t->defined() && is_floating(t->dtype())) Module::make_uninitialized(*t);
    }
  }
  // The size of `name` (a registered tensor's name) in the checkpoint along `dim`, if it holds
  // a tensor of `dims` dims there.
  static std::optional<int64_t> size_in(const StateDict& state, const std::string& name, int64_t dims, int64_t dim) {
    const Tensor* t = state.find(name);
    if (t == nullptr || !t->defined() || t->dim() != dims) return std::nullopt;
    return t->size(dim);
  }

 private:
  void materialize(int64_t size) {
    Derived& self = static_cast<Derived&>(*this);
    std::vector<Tensor> kept;
    for (Tensor* t : self.lazy_tensors()) kept.push_back(*t);
    self.set_input_size(size);
    this->clear_registrations();
    Eager::reset();  // registers and initializes as the eager layer's constructor
    // On the device and in the dtype the layer was moved to before.
    for (const Tensor& t : kept) {
      if (t.defined()) {
        this->to(t.device(), t.dtype());
        break;
      }
    }
    const std::vector<Tensor*> fresh = self.lazy_tensors();
    for (size_t i = 0; i < fresh.size(); ++i) {
      if (kept[i].defined() && fresh[i]->defined()) this->adopt(*fresh[i], kept[i]);
    }
    materialized_ = true;
    this->rename(eager_name_);
  }
  // The guard lives until the end of the full expression: the eager layer's construction.
  template <typename Options>
  static const Options& without_draws(const Options& options, DiscardRandomDraws&& = DiscardRandomDraws()) {
    return options;
  }
  std::string eager_name_;
  bool materialized_ = false;
};

// The channels of x [N, C, spatial...] or [C, spatial...] (spatial_dims of them), as PyTorch's
// lazy layers read them, or an error naming the layer.
int64_t lazy_channels(const std::string& layer, const Tensor& x, int64_t spatial_dims);
// A batch norm's channels, dim 1 of an input of one of `ranks`, or an error naming the layer.
int64_t lazy_batch_norm_channels(const std::string& layer, const Tensor& x, std::vector<int64_t> ranks);

class LazyLinearImpl : public Lazy<LazyLinearImpl, LinearImpl> {
 public:
  explicit LazyLinearImpl(int64_t out_features, bool bias = true);
  int64_t input_size_of(const Tensor& x) const;
  void set_input_size(int64_t size) { options.in_features_ = size; }
  int64_t input_size() const { return options.in_features_; }
  static constexpr int64_t kPlaceholder = 1;
  int64_t placeholder_size() const { return kPlaceholder; }
  std::vector<Tensor*> lazy_tensors() { return {&weight, &bias}; }
  // A checkpoint's weight [out_features, in_features].
  std::optional<int64_t> input_size_in(const StateDict& state, const std::string& prefix) const {
    return size_in(state, prefix + "weight", 2, 1);
  }
};

// A lazy convolution: Eager's options without their in_channels (any value given is replaced).
template <typename Derived, typename Eager, typename Options, int64_t SpatialDims>
class LazyConvolution : public Lazy<Derived, Eager> {
 public:
  int64_t input_size_of(const Tensor& x) const {
    return divisible_by_groups(lazy_channels(this->name(), x, SpatialDims));
  }
  void set_input_size(int64_t size) { this->options.in_channels_ = size; }
  int64_t input_size() const { return this->options.in_channels_; }
  int64_t placeholder_size() const { return this->options.groups_; }
  std::vector<Tensor*> lazy_tensors() { return {&this->weight, &this->bias}; }
  // A checkpoint's weight: [out, in / groups, kernel...], transposed [in, out / groups, kernel...].
  // A transposed weight's channels are checked against groups here, before anything changes.
  std::optional<int64_t> input_size_in(const StateDict& state, const std::string& prefix) const {
    constexpr bool transposed = requires(const Options& o) { o.output_padding_; };
    const std::optional<int64_t> size = this->size_in(state, prefix + "weight", SpatialDims + 2, transposed ? 0 : 1);
    if (!size) return size;
    return transposed ? divisible_by_groups(*size) : *size * this->options.groups_;
  }

 protected:
  LazyConvolution(std::string eager_name, Options options)
      : Lazy<Derived, Eager>(std::move(eager_name), with_placeholder(std::move(options))) {}

 private:
  int64_t divisible_by_groups(int64_t channels) const {
    TD_CHECK(channels % this->options.groups_ == 0, this->name(), ": in_channels (", channels,
             ") must be divisible by groups (", this->options.groups_, ")");
    return channels;
  }
  static Options with_placeholder(Options options) {
    options.in_channels_ = options.groups_;
    return options;
  }
};

class LazyConv1dImpl : public LazyConvolution<LazyConv1dImpl, Conv1dImpl, Conv1dOptions, 1> {
 public:
  LazyConv1dImpl(int64_t out_channels, int64_t kernel_size) : LazyConv1dImpl(Conv1dOptions(0, out_channels, kernel_size)) {}
  explicit LazyConv1dImpl(Conv1dOptions options) : LazyConvolution("Conv1d", std::move(options)) { uninitialize(); }
};
class LazyConv2dImpl : public LazyConvolution<LazyConv2dImpl, Conv2dImpl, Conv2dOptions, 2> {
 public:
  LazyConv2dImpl(int64_t out_channels, int64_t kernel_size) : LazyConv2dImpl(Conv2dOptions(0, out_channels, kernel_size)) {}
  explicit LazyConv2dImpl(Conv2dOptions options) : LazyConvolution("Conv2d", std::move(options)) { uninitialize(); }
};
class LazyConv3dImpl : public LazyConvolution<LazyConv3dImpl, Conv3dImpl, Conv3dOptions, 3> {
 public:
  LazyConv3dImpl(int64_t out_channels, int64_t kernel_size) : LazyConv3dImpl(Conv3dOptions(0, out_channels, kernel_size)) {}
  explicit LazyConv3dImpl(Conv3dOptions options) : LazyConvolution("Conv3d", std::move(options)) { uninitialize(); }
};

// The transposed ones also take forward(x, output_size), materializing first as forward(x) does.
class LazyConvTranspose1dImpl
    : public LazyConvolution<LazyConvTranspose1dImpl, ConvTranspose1dImpl, ConvTranspose1dOptions, 1> {
 public:
  LazyConvTranspose1dImpl(int64_t out_channels, int64_t kernel_size)
      : LazyConvTranspose1dImpl(ConvTranspose1dOptions(0, out_channels, kernel_size)) {}
  explicit LazyConvTranspose1dImpl(ConvTranspose1dOptions options)
      : LazyConvolution("ConvTranspose1d", std::move(options)) { uninitialize(); }
  using LazyConvolution::forward;
  Tensor forward(const Tensor& x, int64_t output_size) {
    initialize_parameters(x);
    return ConvTranspose1dImpl::forward(x, output_size);
  }
};
template <typename Derived, typename Eager, typename Options, int64_t SpatialDims>
class LazyConvTransposeNd : public LazyConvolution<Derived, Eager, Options, SpatialDims> {
 public:
  using LazyConvolution<Derived, Eager, Options, SpatialDims>::forward;
  Tensor forward(const Tensor& x, const std::vector<int64_t>& output_size) {
    this->initialize_parameters(x);
    return Eager::forward(x, output_size);
  }

 protected:
  using LazyConvolution<Derived, Eager, Options, SpatialDims>::LazyConvolution;
};
class LazyConvTranspose2dImpl
    : public LazyConvTransposeNd<LazyConvTranspose2dImpl, ConvTranspose2dImpl, ConvTranspose2dOptions, 2> {
 public:
  LazyConvTranspose2dImpl(int64_t out_channels, int64_t kernel_size)
      : LazyConvTranspose2dImpl(ConvTranspose2dOptions(0, out_channels, kernel_size)) {}
  explicit LazyConvTranspose2dImpl(ConvTranspose2dOptions options)
      : LazyConvTransposeNd("ConvTranspose2d", std::move(options)) { uninitialize(); }
};
class LazyConvTranspose3dImpl
    : public LazyConvTransposeNd<LazyConvTranspose3dImpl, ConvTranspose3dImpl, ConvTranspose3dOptions, 3> {
 public:
  LazyConvTranspose3dImpl(int64_t out_channels, int64_t kernel_size)
      : LazyConvTranspose3dImpl(ConvTranspose3dOptions(0, out_channels, kernel_size)) {}
  explicit LazyConvTranspose3dImpl(ConvTranspose3dOptions options)
      : LazyConvTransposeNd("ConvTranspose3d", std::move(options)) { uninitialize(); }
};

// A lazy norm layer: num_features from the input's channels; its options' num_features ignored.
template <typename Derived, typename Eager, typename Options, int64_t SpatialDims>
class LazyNorm : public Lazy<Derived, Eager> {
 public:
  int64_t input_size_of(const Tensor& x) const {
    return positive_channels(lazy_channels(this->name(), x, SpatialDims));
  }
  void set_input_size(int64_t size) { this->options.num_features_ = size; }
  int64_t input_size() const { return this->options.num_features_; }
  int64_t placeholder_size() const { return 1; }
  std::vector<Tensor*> lazy_tensors() {
    return {&this->weight, &this->bias, &this->running_mean, &this->running_var, &this->num_batches_tracked};
  }
  // The length of the checkpoint's first per-channel tensor of those the layer has.
  std::optional<int64_t> input_size_in(const StateDict& state, const std::string& prefix) const {
    for (const auto& [name, t] : this->own_tensors()) {
      if (!is_floating(t.dtype())) continue;
      const std::optional<int64_t> size = this->size_in(state, prefix + name, 1, 0);
      if (size && *size > 0) return size;
    }
    return std::nullopt;
  }

 protected:
  // A norm layer needs channels: refused before anything changes.
  int64_t positive_channels(int64_t channels) const {
    TD_CHECK(channels > 0, this->name(), ": expected an input with channels, got none");
    return channels;
  }
  LazyNorm(std::string eager_name, Options options)
      : Lazy<Derived, Eager>(std::move(eager_name), with_placeholder(std::move(options))) {}

 private:
  static Options with_placeholder(Options options) {
    options.num_features_ = 1;
    return options;
  }
};

// Batch norms take batched inputs only: BatchNorm1d [N, C] or [N, C, L], 2d [N, C, H, W], 3d
// [N, C, D, H, W]; the channels are dim 1.
class LazyBatchNorm1dImpl : public LazyNorm<LazyBatchNorm1dImpl, BatchNorm1dImpl, BatchNormOptions, 1> {
 public:
  explicit LazyBatchNorm1dImpl(BatchNormOptions options = BatchNormOptions(0))
      : LazyNorm("BatchNorm1d", std::move(options)) { uninitialize(); }
  int64_t input_size_of(const Tensor& x) const {
    return positive_channels(lazy_batch_norm_channels(name(), x, {2, 3}));
  }
};
class LazyBatchNorm2dImpl : public LazyNorm<LazyBatchNorm2dImpl, BatchNorm2dImpl, BatchNormOptions, 2> {
 public:
  explicit LazyBatchNorm2dImpl(BatchNormOptions options = BatchNormOptions(0))
      : LazyNorm("BatchNorm2d", std::move(options)) { uninitialize(); }
  int64_t input_size_of(const Tensor& x) const { return positive_channels(lazy_batch_norm_channels(name(), x, {4})); }
};
class LazyBatchNorm3dImpl : public LazyNorm<LazyBatchNorm3dImpl, BatchNorm3dImpl, BatchNormOptions, 3> {
 public:
  explicit LazyBatchNorm3dImpl(BatchNormOptions options = BatchNormOptions(0))
      : LazyNorm("BatchNorm3d", std::move(options)) { uninitialize(); }
  int64_t input_size_of(const Tensor& x) const { return positive_channels(lazy_batch_norm_channels(name(), x, {5})); }
};

// PyTorch's lazy instance norms default to affine parameters and running statistics (the eager
// ones to neither): LazyInstanceNormOptions().eps(1e-3) keeps both. An unbatched input's channels
// are its dim 0 (PyTorch's take dim 1 there, and then refuse it).
struct LazyInstanceNormOptions : InstanceNormOptions {
  LazyInstanceNormOptions() : InstanceNormOptions(0) {
    affine_ = true;
    track_running_stats_ = true;
  }
};
class LazyInstanceNorm1dImpl : public LazyNorm<LazyInstanceNorm1dImpl, InstanceNorm1dImpl, InstanceNormOptions, 1> {
 public:
  explicit LazyInstanceNorm1dImpl(InstanceNormOptions options = LazyInstanceNormOptions())
      : LazyNorm("InstanceNorm1d", std::move(options)) { uninitialize(); }
};
class LazyInstanceNorm2dImpl : public LazyNorm<LazyInstanceNorm2dImpl, InstanceNorm2dImpl, InstanceNormOptions, 2> {
 public:
  explicit LazyInstanceNorm2dImpl(InstanceNormOptions options = LazyInstanceNormOptions())
      : LazyNorm("InstanceNorm2d", std::move(options)) { uninitialize(); }
};
class LazyInstanceNorm3dImpl : public LazyNorm<LazyInstanceNorm3dImpl, InstanceNorm3dImpl, InstanceNormOptions, 3> {
 public:
  explicit LazyInstanceNorm3dImpl(InstanceNormOptions options = LazyInstanceNormOptions())
      : LazyNorm("InstanceNorm3d", std::move(options)) { uninitialize(); }
};

#define TD_LAZY_HOLDER(Name)                      \
  class Name : public ModuleHolder<Name##Impl> { \
   public:                                       \
    using ModuleHolder::ModuleHolder;            \
  };
TD_LAZY_HOLDER(LazyLinear)
TD_LAZY_HOLDER(LazyConv1d)
TD_LAZY_HOLDER(LazyConv2d)
TD_LAZY_HOLDER(LazyConv3d)
TD_LAZY_HOLDER(LazyConvTranspose1d)
TD_LAZY_HOLDER(LazyConvTranspose2d)
TD_LAZY_HOLDER(LazyConvTranspose3d)
TD_LAZY_HOLDER(LazyBatchNorm1d)
TD_LAZY_HOLDER(LazyBatchNorm2d)
TD_LAZY_HOLDER(LazyBatchNorm3d)
TD_LAZY_HOLDER(LazyInstanceNorm1d)
TD_LAZY_HOLDER(LazyInstanceNorm2d)
TD_LAZY_HOLDER(LazyInstanceNorm3d)
#undef TD_LAZY_HOLDER

}  // namespace tandem::nn
