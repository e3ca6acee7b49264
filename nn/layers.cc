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

// ---- Conv2d, Conv3d ----

namespace {

bool all_positive(const std::vector<int64_t>& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x > 0; });
}

// Conv2d's and Conv3d's options checked, and their parameters registered ([out, in / groups,
// kernel...] and [out]) and initialised.
template <size_t D>
void reset_conv(Module& layer, const char* name, const ConvOptions<D>& o, Tensor& weight, Tensor& bias) {
  TD_CHECK(o.groups_ > 0 && o.in_channels_ % o.groups_ == 0 && o.out_channels_ % o.groups_ == 0, name,
           ": in_channels (", o.in_channels_, ") and out_channels (", o.out_channels_,
           ") must be divisible by groups (", o.groups_, ")");
  for (const auto& [what, values] : {std::pair{"kernel_size", &o.kernel_size_}, std::pair{"stride", &o.stride_},
                                     std::pair{"padding", &o.padding_}, std::pair{"dilation", &o.dilation_}}) {
    TD_CHECK(values->size() == D, name, ": ", what, " must have ", D == 2 ? "two" : "three", " values, got ",
             python_tuple(*values));
  }
  TD_CHECK(all_positive(o.kernel_size_), name, ": kernel_size must be positive, got ", python_tuple(o.kernel_size_));
  TD_CHECK(all_positive(o.stride_), name, ": stride must be positive, got ", python_tuple(o.stride_));
  TD_CHECK(all_positive(o.dilation_), name, ": dilation must be positive, got ", python_tuple(o.dilation_));
  TD_CHECK(std::all_of(o.padding_.begin(), o.padding_.end(), [](int64_t x) { return x >= 0; }), name,
           ": padding must not be negative, got ", python_tuple(o.padding_));
  const bool unit_stride = std::all_of(o.stride_.begin(), o.stride_.end(), [](int64_t x) { return x == 1; });
  TD_CHECK(o.padding_name_ != kSame || unit_stride, name,
           ": padding='same' is not supported for strided convolutions (stride ", python_tuple(o.stride_), ")");
  Shape shape{o.out_channels_, o.in_channels_ / o.groups_};
  shape.insert(shape.end(), o.kernel_size_.begin(), o.kernel_size_.end());
  weight = layer.register_parameter("weight", tandem::empty(shape));
  bias = layer.register_parameter("bias", o.bias_ ? empty({o.out_channels_}) : Tensor());
  default_init(weight, bias);
}

// The (before, after) padding of a convolution's dim: `padding` on both sides, or by name.
std::pair<int64_t, int64_t> conv_sides(const std::optional<PaddingMode>& name, int64_t padding, int64_t kernel,
                                       int64_t dilation) {
  if (!name) return {padding, padding};
  if (*name == kValid) return {0, 0};
  return F::same_padding(kernel, dilation);
}

template <size_t D>
Tensor conv_forward(const ConvOptions<D>& o, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  auto conv = [&](const Tensor& input, auto padding) {
    if constexpr (D == 2) {
      return F::conv2d(input, weight, bias, o.stride_, padding, o.dilation_, o.groups_);
    } else {
      return F::conv3d(input, weight, bias, o.stride_, padding, o.dilation_, o.groups_);
    }
  };
  if (o.padding_mode_ != kConstant) {  // padded first, by F::pad (last dim first), as PyTorch's padding_mode
    std::vector<int64_t> sides;
    for (size_t i = D; i-- > 0;) {
      const auto [before, after] = conv_sides(o.padding_name_, o.padding_[i], o.kernel_size_[i], o.dilation_[i]);
      sides.push_back(before);
      sides.push_back(after);
    }
    return conv(F::pad(x, sides, o.padding_mode_), IntList(0));
  }
  if (o.padding_name_) return conv(x, *o.padding_name_);
  return conv(x, IntList(o.padding_));
}

template <size_t D>
std::string conv_repr(const ConvOptions<D>& o) {
  std::string s = std::to_string(o.in_channels_) + ", " + std::to_string(o.out_channels_) +
                  ", kernel_size=" + python_tuple(o.kernel_size_) + ", stride=" + python_tuple(o.stride_);
  if (o.padding_name_) {
    s += o.padding_name_ == kSame ? ", padding=same" : ", padding=valid";
  } else if (o.padding_ != std::vector<int64_t>(D, 0)) {
    s += ", padding=" + python_tuple(o.padding_);
  }
  if (o.dilation_ != std::vector<int64_t>(D, 1)) s += ", dilation=" + python_tuple(o.dilation_);
  if (o.groups_ != 1) s += ", groups=" + std::to_string(o.groups_);
  if (!o.bias_) s += ", bias=False";
  if (o.padding_mode_ != kConstant) s += std::string(", padding_mode=") + F::pad_mode_name(o.padding_mode_);
  return s;
}

}  // namespace

template <size_t D, class Derived>
void ConvNdImpl<D, Derived>::reset() {
  reset_conv(*this, D == 2 ? "Conv2d" : "Conv3d", options, weight, bias);
}
template <size_t D, class Derived>
void ConvNdImpl<D, Derived>::reset_parameters() {
  default_init(weight, bias);
}
template <size_t D, class Derived>
Tensor ConvNdImpl<D, Derived>::forward(const Tensor& x) {
  return conv_forward(options, x, weight, bias);
}
template <size_t D, class Derived>
std::string ConvNdImpl<D, Derived>::extra_repr() const {
  return conv_repr(options);
}
template class ConvNdImpl<2, Conv2dImpl>;
template class ConvNdImpl<3, Conv3dImpl>;

// ---- Conv1d ----

Conv1dImpl::Conv1dImpl(const Conv1dOptions& options_) : options(options_) { reset(); }

void Conv1dImpl::reset() {
  const auto& o = options;
  TD_CHECK(o.groups_ > 0 && o.in_channels_ % o.groups_ == 0 && o.out_channels_ % o.groups_ == 0,
           "Conv1d: in_channels (", o.in_channels_, ") and out_channels (", o.out_channels_,
           ") must be divisible by groups (", o.groups_, ")");
  TD_CHECK(o.kernel_size_ > 0, "Conv1d: kernel_size must be positive, got ", o.kernel_size_);
  TD_CHECK(o.stride_ > 0, "Conv1d: stride must be positive, got ", o.stride_);
  TD_CHECK(o.dilation_ > 0, "Conv1d: dilation must be positive, got ", o.dilation_);
  TD_CHECK(o.padding_ >= 0, "Conv1d: padding must not be negative, got ", o.padding_);
  TD_CHECK(o.padding_name_ != kSame || o.stride_ == 1,
           "Conv1d: padding='same' is not supported for strided convolutions (stride ", o.stride_, ")");
  weight = register_parameter("weight", empty({o.out_channels_, o.in_channels_ / o.groups_, o.kernel_size_}));
  bias = register_parameter("bias", o.bias_ ? empty({o.out_channels_}) : Tensor());
  reset_parameters();
}

void Conv1dImpl::reset_parameters() { default_init(weight, bias); }

Tensor Conv1dImpl::forward(const Tensor& x) {
  const auto& o = options;
  if (o.padding_mode_ != kConstant) {  // padded first, by F::pad, as PyTorch's padding_mode
    const auto sides = conv_sides(o.padding_name_, o.padding_, o.kernel_size_, o.dilation_);
    return F::conv1d(F::pad(x, {sides.first, sides.second}, o.padding_mode_), weight, bias, o.stride_, 0, o.dilation_,
                     o.groups_);
  }
  if (o.padding_name_) return F::conv1d(x, weight, bias, o.stride_, *o.padding_name_, o.dilation_, o.groups_);
  return F::conv1d(x, weight, bias, o.stride_, o.padding_, o.dilation_, o.groups_);
}

std::string Conv1dImpl::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.in_channels_) + ", " + std::to_string(o.out_channels_) +
                  ", kernel_size=" + python_tuple({o.kernel_size_}) + ", stride=" + python_tuple({o.stride_});
  if (o.padding_name_) {
    s += o.padding_name_ == kSame ? ", padding=same" : ", padding=valid";
  } else if (o.padding_ != 0) {
    s += ", padding=" + python_tuple({o.padding_});
  }
  if (o.dilation_ != 1) s += ", dilation=" + python_tuple({o.dilation_});
  if (o.groups_ != 1) s += ", groups=" + std::to_string(o.groups_);
  if (!o.bias_) s += ", bias=False";
  if (o.padding_mode_ != kConstant) s += std::string(", padding_mode=") + F::pad_mode_name(o.padding_mode_);
  return s;
}

// ---- ConvTranspose2d, ConvTranspose3d ----

namespace {

template <size_t D>
void reset_conv_transpose(Module& layer, const char* name, const ConvTransposeOptions<D>& o, Tensor& weight,
                          Tensor& bias) {
  TD_CHECK(o.groups_ > 0 && o.in_channels_ % o.groups_ == 0 && o.out_channels_ % o.groups_ == 0, name,
           ": in_channels (", o.in_channels_, ") and out_channels (", o.out_channels_,
           ") must be divisible by groups (", o.groups_, ")");
  for (const auto& [what, values] :
       {std::pair{"kernel_size", &o.kernel_size_}, std::pair{"stride", &o.stride_}, std::pair{"padding", &o.padding_},
        std::pair{"output_padding", &o.output_padding_}, std::pair{"dilation", &o.dilation_}}) {
    TD_CHECK(values->size() == D, name, ": ", what, " must have ", D == 2 ? "two" : "three", " values, got ",
             python_tuple(*values));
  }
  TD_CHECK(all_positive(o.kernel_size_), name, ": kernel_size must be positive, got ", python_tuple(o.kernel_size_));
  TD_CHECK(all_positive(o.stride_), name, ": stride must be positive, got ", python_tuple(o.stride_));
  TD_CHECK(all_positive(o.dilation_), name, ": dilation must be positive, got ", python_tuple(o.dilation_));
  TD_CHECK(std::all_of(o.padding_.begin(), o.padding_.end(), [](int64_t x) { return x >= 0; }), name,
           ": padding must not be negative, got ", python_tuple(o.padding_));
  for (size_t i = 0; i < D; ++i) {
    const int64_t extra = o.output_padding_[i];
    TD_CHECK(extra >= 0 && (extra < o.stride_[i] || extra < o.dilation_[i]), name, ": output_padding ",
             python_tuple(o.output_padding_), " must be smaller than the stride ", python_tuple(o.stride_),
             " or the dilation ", python_tuple(o.dilation_));
  }
  Shape shape{o.in_channels_, o.out_channels_ / o.groups_};
  shape.insert(shape.end(), o.kernel_size_.begin(), o.kernel_size_.end());
  weight = layer.register_parameter("weight", tandem::empty(shape));
  bias = layer.register_parameter("bias", o.bias_ ? empty({o.out_channels_}) : Tensor());
  default_init(weight, bias);
}

template <size_t D>
Tensor conv_transpose_forward(const ConvTransposeOptions<D>& o, const Tensor& x, const Tensor& weight,
                              const Tensor& bias, IntList output_padding) {
  if constexpr (D == 2) {
    return F::conv_transpose2d(x, weight, bias, o.stride_, o.padding_, output_padding, o.groups_, o.dilation_);
  } else {
    return F::conv_transpose3d(x, weight, bias, o.stride_, o.padding_, output_padding, o.groups_, o.dilation_);
  }
}

// forward(x, output_size): the output padding that gives the spatial sizes asked for (the last D
// values of output_size, which may also be the output's whole shape), as PyTorch's. A stride
// leaves several sizes possible; each must be at most stride - 1 above the smallest.
template <size_t D>
Tensor conv_transpose_to_size(const char* name, const ConvTransposeOptions<D>& o, const Tensor& x, const Tensor& weight,
                              const Tensor& bias, const std::vector<int64_t>& output_size) {
  const char* layouts[] = {"", "", "3-D [C, H, W] or 4-D [N, C, H, W]", "4-D [C, D, H, W] or 5-D [N, C, D, H, W]"};
  TD_CHECK(x.defined() && (x.dim() == D + 1 || x.dim() == D + 2), name, ": expected a ", layouts[D], " input, got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  TD_CHECK(output_size.size() == D || output_size.size() == static_cast<size_t>(x.dim()), name,
           ": output_size must be ", D == 2 ? "[H, W]" : "[D, H, W]", " or the output's whole shape (", x.dim(),
           " values), got ", python_tuple(output_size));
  const std::vector<int64_t> asked(output_size.end() - D, output_size.end());
  const std::vector<int64_t> in(x.sizes().end() - D, x.sizes().end());
  std::vector<int64_t> smallest(D), largest(D), extra(D);
  for (size_t i = 0; i < D; ++i) {
    smallest[i] =
        F::conv_transpose_output_size(in[i], o.kernel_size_[i], o.stride_[i], o.padding_[i], o.dilation_[i], 0);
    largest[i] = smallest[i] + o.stride_[i] - 1;
    extra[i] = asked[i] - smallest[i];
  }
  for (size_t i = 0; i < D; ++i) {
    TD_CHECK(asked[i] >= smallest[i] && asked[i] <= largest[i], name, ": an output of ", python_tuple(asked),
             " was asked for, but an input of ", python_tuple(in), " gives sizes from ", python_tuple(smallest), " to ",
             python_tuple(largest));
  }
  return conv_transpose_forward(o, x, weight, bias, extra);
}

template <size_t D>
std::string conv_transpose_repr(const ConvTransposeOptions<D>& o) {
  std::string s = std::to_string(o.in_channels_) + ", " + std::to_string(o.out_channels_) +
                  ", kernel_size=" + python_tuple(o.kernel_size_) + ", stride=" + python_tuple(o.stride_);
  if (o.padding_ != std::vector<int64_t>(D, 0)) s += ", padding=" + python_tuple(o.padding_);
  if (o.dilation_ != std::vector<int64_t>(D, 1)) s += ", dilation=" + python_tuple(o.dilation_);
  if (o.output_padding_ != std::vector<int64_t>(D, 0)) s += ", output_padding=" + python_tuple(o.output_padding_);
  if (o.groups_ != 1) s += ", groups=" + std::to_string(o.groups_);
  if (!o.bias_) s += ", bias=False";
  return s;
}

}  // namespace

template <size_t D, class Derived>
void ConvTransposeNdImpl<D, Derived>::reset() {
  reset_conv_transpose(*this, D == 2 ? "ConvTranspose2d" : "ConvTranspose3d", options, weight, bias);
}
template <size_t D, class Derived>
void ConvTransposeNdImpl<D, Derived>::reset_parameters() {
  default_init(weight, bias);
}
template <size_t D, class Derived>
Tensor ConvTransposeNdImpl<D, Derived>::forward(const Tensor& x) {
  return conv_transpose_forward(options, x, weight, bias, options.output_padding_);
}
template <size_t D, class Derived>
Tensor ConvTransposeNdImpl<D, Derived>::forward(const Tensor& x, const std::vector<int64_t>& output_size) {
  return conv_transpose_to_size(D == 2 ? "ConvTranspose2d" : "ConvTranspose3d", options, x, weight, bias,
                                output_size);
}
template <size_t D, class Derived>
std::string ConvTransposeNdImpl<D, Derived>::extra_repr() const {
  return conv_transpose_repr(options);
}
template class ConvTransposeNdImpl<2, ConvTranspose2dImpl>;
template class ConvTransposeNdImpl<3, ConvTranspose3dImpl>;

// ---- ConvTranspose1d ----

ConvTranspose1dImpl::ConvTranspose1dImpl(const ConvTranspose1dOptions& options_) : options(options_) { reset(); }

void ConvTranspose1dImpl::reset() {
  const auto& o = options;
  TD_CHECK(o.groups_ > 0 && o.in_channels_ % o.groups_ == 0 && o.out_channels_ % o.groups_ == 0,
           "ConvTranspose1d: in_channels (", o.in_channels_, ") and out_channels (", o.out_channels_,
           ") must be divisible by groups (", o.groups_, ")");
  TD_CHECK(o.kernel_size_ > 0 && o.stride_ > 0 && o.dilation_ > 0 && o.padding_ >= 0, "ConvTranspose1d: kernel_size (",
           o.kernel_size_, "), stride (", o.stride_, ") and dilation (", o.dilation_, ") must be positive, padding (",
           o.padding_, ") not negative");
  TD_CHECK(o.output_padding_ >= 0 && (o.output_padding_ < o.stride_ || o.output_padding_ < o.dilation_),
           "ConvTranspose1d: output_padding (", o.output_padding_, ") must be smaller than the stride (", o.stride_,
           ") or the dilation (", o.dilation_, ")");
  weight = register_parameter("weight", empty({o.in_channels_, o.out_channels_ / o.groups_, o.kernel_size_}));
  bias = register_parameter("bias", o.bias_ ? empty({o.out_channels_}) : Tensor());
  reset_parameters();
}

void ConvTranspose1dImpl::reset_parameters() { default_init(weight, bias); }

Tensor ConvTranspose1dImpl::forward(const Tensor& x) {
  const auto& o = options;
  return F::conv_transpose1d(x, weight, bias, o.stride_, o.padding_, o.output_padding_, o.groups_, o.dilation_);
}

Tensor ConvTranspose1dImpl::forward(const Tensor& x, int64_t output_size) {
  const auto& o = options;
  TD_CHECK(x.defined() && (x.dim() == 2 || x.dim() == 3), "ConvTranspose1d: expected a 2-D [C, L] or 3-D [N, C, L] ",
           "input, got ", x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  const int64_t smallest =
      F::conv_transpose_output_size(x.size(-1), o.kernel_size_, o.stride_, o.padding_, o.dilation_, 0);
  // PyTorch's range: one more position per stride step at most.
  const int64_t extra = output_size - smallest;
  TD_CHECK(extra >= 0 && extra < o.stride_, "ConvTranspose1d: output_size ", output_size,
           " is not reachable from the input ", shape_str(x.sizes()), ": it must be in [", smallest, ", ",
           smallest + o.stride_ - 1, "]");
  return F::conv_transpose1d(x, weight, bias, o.stride_, o.padding_, extra, o.groups_, o.dilation_);
}

std::string ConvTranspose1dImpl::extra_repr() const {
  const auto& o = options;
  auto single = [](int64_t v) { return "(" + std::to_string(v) + ",)"; };
  std::string s = std::to_string(o.in_channels_) + ", " + std::to_string(o.out_channels_) +
                  ", kernel_size=" + single(o.kernel_size_) + ", stride=" + single(o.stride_);
  if (o.padding_ != 0) s += ", padding=" + single(o.padding_);
  if (o.dilation_ != 1) s += ", dilation=" + single(o.dilation_);
  if (o.output_padding_ != 0) s += ", output_padding=" + single(o.output_padding_);
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
void BatchNormBase<Derived>::reset_running_stats() {
  if (!running_mean.defined()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
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
template class BatchNormBase<BatchNorm3dImpl>;

// ---- InstanceNorm ----

template <typename Derived>
InstanceNormBase<Derived>::InstanceNormBase(const InstanceNormOptions& options_, int64_t spatial_dims)
    : options(options_), spatial_dims_(spatial_dims) {
  reset();
}

template <typename Derived>
void InstanceNormBase<Derived>::reset() {
  const int64_t c = options.num_features_;
  TD_CHECK(c > 0, this->name(), ": num_features must be positive, got ", c);
  weight = this->register_parameter("weight", options.affine_ ? ones({c}) : Tensor());
  bias = this->register_parameter("bias", options.affine_ ? zeros({c}) : Tensor());
  running_mean = this->register_buffer("running_mean", options.track_running_stats_ ? zeros({c}) : Tensor());
  running_var = this->register_buffer("running_var", options.track_running_stats_ ? ones({c}) : Tensor());
  num_batches_tracked =
      this->register_buffer("num_batches_tracked", options.track_running_stats_ ? zeros({}, kInt64) : Tensor());
}

template <typename Derived>
Tensor InstanceNormBase<Derived>::forward(const Tensor& x) {
  const int64_t unbatched = spatial_dims_ + 1;
  TD_CHECK(x.defined() && (x.dim() == unbatched || x.dim() == unbatched + 1), this->name(), ": expected a ",
           unbatched, "-D or ", unbatched + 1, "-D input ([C, ...] or [N, C, ...]), got ",
           x.defined() ? shape_str(x.sizes()) : std::string("an undefined tensor"));
  const Tensor batched = x.dim() == unbatched ? x.unsqueeze(0) : x;
  // Another channel count: PyTorch refuses it with affine parameters (and its batch_norm with
  // running statistics); without either it only warns, and normalizes what it is given.
  TD_CHECK(batched.size(1) == options.num_features_ || (!options.affine_ && !options.track_running_stats_),
           this->name(), ": expected ", options.num_features_, " channels, got the input ", shape_str(x.sizes()));
  const bool use_input_stats = this->is_training() || !options.track_running_stats_;
  const Tensor out = F::instance_norm(batched, running_mean, running_var, weight, bias, use_input_stats,
                                      options.momentum_.value_or(0.0), options.eps_);
  return x.dim() == unbatched ? out.squeeze(0) : out;
}

template <typename Derived>
std::string InstanceNormBase<Derived>::extra_repr() const {
  return std::to_string(options.num_features_) + ", eps=" + python_float(options.eps_) +
         ", momentum=" + (options.momentum_ ? python_float(*options.momentum_) : "None") +
         ", affine=" + python_bool(options.affine_) +
         ", bias=" + python_bool(bias.defined()) + ", track_running_stats=" + python_bool(options.track_running_stats_);
}

template class InstanceNormBase<InstanceNorm1dImpl>;
template class InstanceNormBase<InstanceNorm2dImpl>;
template class InstanceNormBase<InstanceNorm3dImpl>;

// ---- LocalResponseNorm and Bilinear ----

LocalResponseNormImpl::LocalResponseNormImpl(int64_t size_, double alpha_, double beta_, double k_)
    : size(size_), alpha(alpha_), beta(beta_), k(k_) {
  TD_CHECK(size > 0, "LocalResponseNorm: size must be positive, got ", size);
}

Tensor LocalResponseNormImpl::forward(const Tensor& x) { return F::local_response_norm(x, size, alpha, beta, k); }

std::string LocalResponseNormImpl::extra_repr() const {
  return std::to_string(size) + ", alpha=" + python_float(alpha) + ", beta=" + python_float(beta) +
         ", k=" + python_float(k);
}

BilinearImpl::BilinearImpl(int64_t in1, int64_t in2, int64_t out, bool bias_)
    : in1_features(in1), in2_features(in2), out_features(out), has_bias(bias_) {
  TD_CHECK(in1 > 0 && in2 > 0 && out >= 0, "Bilinear: in1_features (", in1, ") and in2_features (", in2,
           ") must be positive, out_features (", out, ") not negative");
  reset();
}

void BilinearImpl::reset() {
  weight = register_parameter("weight", empty({out_features, in1_features, in2_features}));
  bias = register_parameter("bias", has_bias ? empty({out_features}) : Tensor());
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = 1 / std::sqrt(static_cast<double>(in1_features));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& x1, const Tensor& x2) { return F::bilinear(x1, x2, weight, bias); }

std::string BilinearImpl::extra_repr() const {
  return "in1_features=" + std::to_string(in1_features) + ", in2_features=" + std::to_string(in2_features) +
         ", out_features=" + std::to_string(out_features) + ", bias=" + python_bool(has_bias);
}

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

// ---- RMSNorm ----

RMSNormImpl::RMSNormImpl(const RMSNormOptions& options_) : options(options_) { reset(); }

void RMSNormImpl::reset() {
  weight = register_parameter("weight", options.elementwise_affine_ ? ones(options.normalized_shape_) : Tensor());
}

Tensor RMSNormImpl::forward(const Tensor& x) { return F::rms_norm(x, options.normalized_shape_, weight, options.eps_); }

std::string RMSNormImpl::extra_repr() const {
  return python_tuple(options.normalized_shape_) + ", eps=" + (options.eps_ ? python_float(*options.eps_) : "None") +
         ", elementwise_affine=" + python_bool(options.elementwise_affine_);
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

namespace {

// The lookup tables' shared set-up: padding_idx checked and made positive; the weight either the
// table given (shared, checked [num, dim]) or new from N(0, 1) with the padding row zeroed.
Tensor make_table(Module& layer, const char* name, int64_t num, int64_t dim, std::optional<int64_t>& padding_idx,
                  const Tensor& given) {
  TD_CHECK(num >= 0 && dim >= 0, name, ": num_embeddings (", num, ") and embedding_dim (", dim,
           ") must not be negative");
  if (padding_idx) {
    const int64_t p = *padding_idx;
    TD_CHECK(p >= -num && p < num, name, ": padding_idx ", p, " must be within num_embeddings ", num);
    if (p < 0) padding_idx = p + num;
  }
  if (given.defined()) {
    TD_CHECK(given.sizes() == Shape({num, dim}), name, ": _weight must be [", num, ", ", dim, "], got ",
             shape_str(given.sizes()));
    // A new leaf on the table's storage, as PyTorch's Parameter(_weight): the caller's tensor keeps
    // its own requires_grad and gradient, and a clone gets a table of its own.
    return layer.register_parameter("weight", given.detach(), is_floating(given.dtype()));
  }
  Tensor weight = layer.register_parameter("weight", empty({num, dim}));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight[*padding_idx].fill_(0);
  }
  return weight;
}

// The lookup options both layers print, after their sizes.
std::string norm_repr(const std::optional<double>& max_norm, double norm_type, bool scale_grad_by_freq) {
  std::string s;
  if (max_norm) s += ", max_norm=" + python_float(*max_norm);
  if (norm_type != 2) s += ", norm_type=" + python_float(norm_type);
  if (scale_grad_by_freq) s += ", scale_grad_by_freq=True";
  return s;
}

}  // namespace

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) { reset(); }

void EmbeddingImpl::reset() {
  weight = make_table(*this, "Embedding", options.num_embeddings_, options.embedding_dim_, options.padding_idx_,
                      options._weight_);
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return F::embedding(indices, weight, options.padding_idx_, options.max_norm_, options.norm_type_,
                      options.scale_grad_by_freq_);
}

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings_) + ", " + std::to_string(options.embedding_dim_);
  if (options.padding_idx_) s += ", padding_idx=" + std::to_string(*options.padding_idx_);
  return s + norm_repr(options.max_norm_, options.norm_type_, options.scale_grad_by_freq_);
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& o) {
  TD_CHECK(embeddings.defined() && embeddings.dim() == 2, "Embedding::from_pretrained: embeddings must be 2-D [num, ",
           "dim], got ", embeddings.defined() ? shape_str(embeddings.sizes()) : std::string("an undefined tensor"));
  Embedding layer(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                      .padding_idx(o.padding_idx_)
                      .max_norm(o.max_norm_)
                      .norm_type(o.norm_type_)
                      .scale_grad_by_freq(o.scale_grad_by_freq_)
                      ._weight(embeddings));
  layer->weight.requires_grad_(!o.freeze_);
  return layer;
}

// ---- EmbeddingBag ----

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options_) : options(options_) { reset(); }

void EmbeddingBagImpl::reset() {
  weight = make_table(*this, "EmbeddingBag", options.num_embeddings_, options.embedding_dim_, options.padding_idx_,
                      options._weight_);
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return F::embedding_bag(input, weight, offsets, options.mode_, per_sample_weights, options.include_last_offset_,
                          options.padding_idx_, options.max_norm_, options.norm_type_, options.scale_grad_by_freq_);
}

std::string EmbeddingBagImpl::extra_repr() const {
  std::string s = std::to_string(options.num_embeddings_) + ", " + std::to_string(options.embedding_dim_) +
                  norm_repr(options.max_norm_, options.norm_type_, options.scale_grad_by_freq_) + ", mode='" +
                  F::embedding_bag_mode_name(options.mode_) + "'";
  if (options.padding_idx_) s += ", padding_idx=" + std::to_string(*options.padding_idx_);
  return s;
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& o) {
  TD_CHECK(embeddings.defined() && embeddings.dim() == 2, "EmbeddingBag::from_pretrained: embeddings must be 2-D ",
           "[num, dim], got ", embeddings.defined() ? shape_str(embeddings.sizes()) : std::string("an undefined tensor"));
  EmbeddingBag layer(EmbeddingBagOptions(embeddings.size(0), embeddings.size(1))
                         .mode(o.mode_)
                         .include_last_offset(o.include_last_offset_)
                         .padding_idx(o.padding_idx_)
                         .max_norm(o.max_norm_)
                         .norm_type(o.norm_type_)
                         .scale_grad_by_freq(o.scale_grad_by_freq_)
                         ._weight(embeddings));
  layer->weight.requires_grad_(!o.freeze_);
  return layer;
}

}  // namespace tandem::nn
