#include "nn/layers.h"

#include <algorithm>
#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace tandem::nn {

namespace F = functional;

namespace {

// PyTorch's default for weights with fan_in: kaiming_uniform_(a = sqrt(5)), i.e. U(+-1/sqrt(fan_in)),
// and the same bound for the bias.
void default_init(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(weight);
    double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

}  // namespace

// ---- Linear ----

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) { reset(); }

void LinearImpl::reset() {
  TD_CHECK(options.in_features_ >= 0 && options.out_features_ >= 0, "Linear: feature counts must be non-negative");
  weight = register_parameter("weight", empty({options.out_features_, options.in_features_}));
  bias = register_parameter("bias", options.bias_ ? empty({options.out_features_}) : Tensor());
  reset_parameters();
}

void LinearImpl::reset_parameters() { default_init(weight, bias); }

Tensor LinearImpl::forward(const Tensor& x) { return F::linear(x, weight, bias); }

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(options.in_features_) + ", out_features=" +
         std::to_string(options.out_features_) + ", bias=" + python_bool(options.bias_);
}

// ---- Conv2d ----

Conv2dImpl::Conv2dImpl(const Conv2dOptions& options_) : options(options_) { reset(); }

void Conv2dImpl::reset() {
  const auto& o = options;
  TD_CHECK(o.groups_ > 0 && o.in_channels_ % o.groups_ == 0 && o.out_channels_ % o.groups_ == 0,
           "Conv2d: in_channels (", o.in_channels_, ") and out_channels (", o.out_channels_,
           ") must be divisible by groups (", o.groups_, ")");
  TD_CHECK(o.kernel_size_.size() == 2, "Conv2d: kernel_size must have two values");
  auto positive = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x > 0; });
  };
  TD_CHECK(positive(o.kernel_size_), "Conv2d: kernel_size must be positive, got ", python_tuple(o.kernel_size_));
  TD_CHECK(positive(o.stride_), "Conv2d: stride must be positive, got ", python_tuple(o.stride_));
  TD_CHECK(positive(o.dilation_), "Conv2d: dilation must be positive, got ", python_tuple(o.dilation_));
  TD_CHECK(std::all_of(o.padding_.begin(), o.padding_.end(), [](int64_t x) { return x >= 0; }),
           "Conv2d: padding must not be negative, got ", python_tuple(o.padding_));
  const bool unit_stride = std::all_of(o.stride_.begin(), o.stride_.end(), [](int64_t x) { return x == 1; });
  TD_CHECK(o.padding_mode_ != kSame || unit_stride,
           "Conv2d: padding='same' is not supported for strided convolutions (stride ", python_tuple(o.stride_), ")");
  weight = register_parameter(
      "weight", empty({o.out_channels_, o.in_channels_ / o.groups_, o.kernel_size_[0], o.kernel_size_[1]}));
  bias = register_parameter("bias", o.bias_ ? empty({o.out_channels_}) : Tensor());
  reset_parameters();
}

void Conv2dImpl::reset_parameters() { default_init(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& x) {
  if (options.padding_mode_) {
    return F::conv2d(x, weight, bias, options.stride_, *options.padding_mode_, options.dilation_, options.groups_);
  }
  return F::conv2d(x, weight, bias, options.stride_, options.padding_, options.dilation_, options.groups_);
}

std::string Conv2dImpl::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.in_channels_) + ", " + std::to_string(o.out_channels_) +
                  ", kernel_size=" + python_tuple(o.kernel_size_) + ", stride=" + python_tuple(o.stride_);
  if (o.padding_mode_) {
    s += o.padding_mode_ == kSame ? ", padding=same" : ", padding=valid";
  } else if (o.padding_ != std::vector<int64_t>{0, 0}) {
    s += ", padding=" + python_tuple(o.padding_);
  }
  if (o.dilation_ != std::vector<int64_t>{1, 1}) s += ", dilation=" + python_tuple(o.dilation_);
  if (o.groups_ != 1) s += ", groups=" + std::to_string(o.groups_);
  if (!o.bias_) s += ", bias=False";
  return s;
}

// ---- BatchNorm ----

template <typename Derived>
BatchNormBase<Derived>::BatchNormBase(const BatchNormOptions& options_, std::vector<int64_t> input_dims)
    : options(options_), input_dims_(std::move(input_dims)) {
  reset();
}

template <typename Derived>
void BatchNormBase<Derived>::reset() {
  const int64_t c = options.num_features_;
  TD_CHECK(c > 0, "BatchNorm: num_features must be positive, got ", c);
  weight = this->register_parameter("weight", options.affine_ ? ones({c}) : Tensor());
  bias = this->register_parameter("bias", options.affine_ && options.bias_ ? zeros({c}) : Tensor());
  running_mean = this->register_buffer("running_mean", options.track_running_stats_ ? zeros({c}) : Tensor());
  running_var = this->register_buffer("running_var", options.track_running_stats_ ? ones({c}) : Tensor());
  num_batches_tracked =
      this->register_buffer("num_batches_tracked", options.track_running_stats_ ? zeros({}, kInt64) : Tensor());
}

template <typename Derived>
Tensor BatchNormBase<Derived>::forward(const Tensor& x) {
  bool rank_ok = false;
  for (int64_t d : input_dims_) rank_ok |= x.dim() == d;
  TD_CHECK(rank_ok, this->name(), ": expected an input of ", input_dims_.size() == 1 ? "" : "2 or ",
           input_dims_.back(), " dims, got shape ", shape_str(x.sizes()));
  TD_CHECK(x.size(1) == options.num_features_, this->name(), ": expected ", options.num_features_,
           " channels in dim 1, got shape ", shape_str(x.sizes()));
  const bool use_batch_stats = this->is_training() || !running_mean.defined();
  const bool count = this->is_training() && num_batches_tracked.defined();
  // The count is read on the host only where it is needed (momentum None): on a GPU, item()
  // waits for the device.
  const bool cumulative = count && !options.momentum_;
  const int64_t tracked = cumulative ? num_batches_tracked.template item<int64_t>() + 1 : 0;
  Tensor out = F::batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats, options.momentum_,
                             options.eps_, tracked, this->is_training() ? sync : nullptr);
  if (count) {  // a batch that failed is not counted
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return out;
}

template <typename Derived>
std::string BatchNormBase<Derived>::extra_repr() const {
  return std::to_string(options.num_features_) + ", eps=" + python_float(options.eps_) +
         ", momentum=" + (options.momentum_ ? python_float(*options.momentum_) : "None") +
         ", affine=" + python_bool(options.affine_) + ", bias=" + python_bool(bias.defined()) +
         ", track_running_stats=" + python_bool(options.track_running_stats_);
}

template class BatchNormBase<BatchNorm1dImpl>;
template class BatchNormBase<BatchNorm2dImpl>;

// ---- LayerNorm ----

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) { reset(); }

void LayerNormImpl::reset() {
  weight = register_parameter("weight", options.elementwise_affine_ ? ones(options.normalized_shape_) : Tensor());
  bias = register_parameter("bias", options.elementwise_affine_ && options.bias_ ? zeros(options.normalized_shape_)
                                                                                 : Tensor());
}

Tensor LayerNormImpl::forward(const Tensor& x) {
  return F::layer_norm(x, options.normalized_shape_, weight, bias, options.eps_);
}

std::string LayerNormImpl::extra_repr() const {
  return python_tuple(options.normalized_shape_) + ", eps=" + python_float(options.eps_) +
         ", elementwise_affine=" + python_bool(options.elementwise_affine_) + ", bias=" + python_bool(bias.defined());
}

// ---- GroupNorm ----

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : options(options_) {
  TD_CHECK(options.num_groups_ > 0 && options.num_channels_ >= 0 && options.num_channels_ % options.num_groups_ == 0,
           "GroupNorm: num_channels (", options.num_channels_, ") must be divisible by num_groups (",
           options.num_groups_, "), a positive number");
  reset();
}

void GroupNormImpl::reset() {
  weight = register_parameter("weight", options.affine_ ? ones({options.num_channels_}) : Tensor());
  bias = register_parameter("bias", options.affine_ && options.bias_ ? zeros({options.num_channels_}) : Tensor());
}

Tensor GroupNormImpl::forward(const Tensor& x) {
  return F::group_norm(x, options.num_groups_, weight, bias, options.eps_);
}

std::string GroupNormImpl::extra_repr() const {
  return std::to_string(options.num_groups_) + ", " + std::to_string(options.num_channels_) +
         ", eps=" + python_float(options.eps_) + ", affine=" + python_bool(options.affine_) +
         ", bias=" + python_bool(bias.defined());
}

// ---- Embedding ----

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) { reset(); }

void EmbeddingImpl::reset() {
  if (options.padding_idx_) {
    int64_t p = *options.padding_idx_;
    TD_CHECK(p >= -options.num_embeddings_ && p < options.num_embeddings_, "Embedding: padding_idx ", p,
             " must be within num_embeddings ", options.num_embeddings_);
    if (p < 0) options.padding_idx_ = p + options.num_embeddings_;
  }
  weight = register_parameter("weight", empty({options.num_embeddings_, options.embedding_dim_}));
  init::normal_(weight);
  if (options.padding_idx_) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx_).zero_();
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) { return F::embedding(indices, weight, options.padding_idx_); }

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings_) + ", " + std::to_string(options.embedding_dim_);
  if (options.padding_idx_) s += ", padding_idx=" + std::to_string(*options.padding_idx_);
  return s;
}

}  // namespace tandem::nn
