#include "nn/modules.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"
#include "nn/functional.h"

namespace tandem::nn {

namespace {

// PyTorch prints pooling sizes as given: an int, or a tuple.
std::string size_str(IntList v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}


}  // namespace

namespace {

// A layer's function, or with `inplace` its in-place form, which writes the input it is given.
template <typename InPlace>
std::function<Tensor(const Tensor&)> in_place_if(bool inplace, std::function<Tensor(const Tensor&)> out_of_place,
                                                 InPlace in_place) {
  if (!inplace) return out_of_place;
  return [in_place](const Tensor& x) {
    Tensor written = x;  // a handle to x itself
    return Tensor(in_place(written));
  };
}

// The layer's settings, with ", inplace=True" where it is set, as PyTorch prints them.
std::string with_inplace(std::string extra, bool inplace) {
  if (!inplace) return extra;
  return extra.empty() ? "inplace=True" : extra + ", inplace=True";
}

}  // namespace

FunctionalImpl::FunctionalImpl(std::string name, std::function<Tensor(const Tensor&)> fn, std::string extra)
    : Cloneable(std::move(name)), fn_(std::move(fn)), extra_(std::move(extra)) {}

IdentityImpl::IdentityImpl() : Cloneable("Identity", [](const Tensor& x) { return x; }) {}
ReLUImpl::ReLUImpl(bool inplace)
    : Cloneable("ReLU", in_place_if(inplace, [](const Tensor& x) { return relu(x); }, functional::relu_),
                with_inplace("", inplace)) {}
ELUImpl::ELUImpl(double alpha, bool inplace)
    : Cloneable("ELU",
                in_place_if(
                    inplace, [alpha](const Tensor& x) { return functional::elu(x, alpha); },
                    [alpha](Tensor& x) -> Tensor& { return functional::elu_(x, alpha); }),
                with_inplace("alpha=" + python_float(alpha), inplace)) {}
SELUImpl::SELUImpl(bool inplace)
    : Cloneable("SELU", in_place_if(inplace, [](const Tensor& x) { return functional::selu(x); }, functional::selu_),
                with_inplace("", inplace)) {}
CELUImpl::CELUImpl(double alpha, bool inplace)
    : Cloneable("CELU",
                in_place_if(
                    inplace, [alpha](const Tensor& x) { return functional::celu(x, alpha); },
                    [alpha](Tensor& x) -> Tensor& { return functional::celu_(x, alpha); }),
                with_inplace("alpha=" + python_float(alpha), inplace)) {}
SoftplusImpl::SoftplusImpl(double beta, double threshold)
    : Cloneable("Softplus", [beta, threshold](const Tensor& x) { return functional::softplus(x, beta, threshold); },
                     "beta=" + python_float(beta) + ", threshold=" + python_float(threshold)) {}
LeakyReLUImpl::LeakyReLUImpl(double negative_slope, bool inplace)
    : Cloneable("LeakyReLU",
                in_place_if(
                    inplace, [negative_slope](const Tensor& x) { return functional::leaky_relu(x, negative_slope); },
                    [negative_slope](Tensor& x) -> Tensor& { return functional::leaky_relu_(x, negative_slope); }),
                with_inplace("negative_slope=" + python_float(negative_slope), inplace)) {}
GELUImpl::GELUImpl(const std::string& approximate)
    : Cloneable("GELU", [approximate](const Tensor& x) { return gelu(x, approximate); },
                     "approximate='" + approximate + "'") {
  TD_CHECK(approximate == "none" || approximate == "tanh", "GELU: approximate must be 'none' or 'tanh', got '",
           approximate, "'");
}
SiLUImpl::SiLUImpl(bool inplace)
    : Cloneable("SiLU", in_place_if(inplace, [](const Tensor& x) { return silu(x); }, functional::silu_),
                with_inplace("", inplace)) {}
TanhImpl::TanhImpl() : Cloneable("Tanh", [](const Tensor& x) { return tanh(x); }) {}
SigmoidImpl::SigmoidImpl() : Cloneable("Sigmoid", [](const Tensor& x) { return sigmoid(x); }) {}
SoftmaxImpl::SoftmaxImpl(int64_t dim)
    : Cloneable("Softmax", [dim](const Tensor& x) { return softmax(x, dim); }, "dim=" + std::to_string(dim)) {}
LogSoftmaxImpl::LogSoftmaxImpl(int64_t dim)
    : Cloneable("LogSoftmax", [dim](const Tensor& x) { return log_softmax(x, dim); },
                     "dim=" + std::to_string(dim)) {}
FlattenImpl::FlattenImpl(int64_t start_dim, int64_t end_dim)
    : Cloneable("Flatten", [start_dim, end_dim](const Tensor& x) { return flatten(x, start_dim, end_dim); },
                     "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim)) {}

CosineSimilarityImpl::CosineSimilarityImpl(CosineSimilarityOptions options)
    : Cloneable("CosineSimilarity"), options(options) {}
Tensor CosineSimilarityImpl::forward(const Tensor& x1, const Tensor& x2) {
  return functional::cosine_similarity(x1, x2, options.dim_, options.eps_);
}

UnflattenImpl::UnflattenImpl(int64_t dim, std::vector<int64_t> unflattened_size)
    : Cloneable("Unflatten", [dim, unflattened_size](const Tensor& x) { return unflatten(x, dim, unflattened_size); },
                     "dim=" + std::to_string(dim) + ", unflattened_size=" + python_tuple(unflattened_size)) {}

MaxPool2dImpl::MaxPool2dImpl(IntList kernel_size, IntList stride, IntList padding, IntList dilation, bool ceil_mode)
    : Cloneable(
          "MaxPool2d",
          [k = kernel_size.vec(), s = stride.vec(), p = padding.vec(), d = dilation.vec(), ceil_mode](const Tensor& x) {
            return max_pool2d(x, k, s, p, d, ceil_mode);
          },
          "kernel_size=" + size_str(kernel_size) + ", stride=" + size_str(stride.empty() ? kernel_size : stride) +
              ", padding=" + size_str(padding) + ", dilation=" + size_str(dilation) +
              ", ceil_mode=" + python_bool(ceil_mode)) {}

AvgPool2dImpl::AvgPool2dImpl(IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                             bool count_include_pad)
    : Cloneable(
          "AvgPool2d",
          [k = kernel_size.vec(), s = stride.vec(), p = padding.vec(), ceil_mode, count_include_pad](const Tensor& x) {
            return avg_pool2d(x, k, s, p, ceil_mode, count_include_pad);
          },
          "kernel_size=" + size_str(kernel_size) + ", stride=" + size_str(stride.empty() ? kernel_size : stride) +
              ", padding=" + size_str(padding)) {}

AdaptiveAvgPool2dImpl::AdaptiveAvgPool2dImpl(IntList output_size)
    : Cloneable(
          "AdaptiveAvgPool2d",
          [o = output_size.vec()](const Tensor& x) { return functional::adaptive_avg_pool2d(x, o); },
          "output_size=" + size_str(output_size)) {}

Softmax2dImpl::Softmax2dImpl()
    : Cloneable("Softmax2d", [](const Tensor& x) {
        TD_CHECK(x.dim() == 3 || x.dim() == 4, "Softmax2d: expected a 3-D or 4-D input ([C, H, W] or [N, C, H, W]), "
                 "got ", shape_str(x.sizes()));
        return softmax(x, -3);
      }) {}

ChannelShuffleImpl::ChannelShuffleImpl(int64_t groups)
    : Cloneable(
          "ChannelShuffle", [groups](const Tensor& x) { return functional::channel_shuffle(x, groups); },
          "groups=" + std::to_string(groups)) {}

MaxPool1dImpl::MaxPool1dImpl(int64_t kernel_size, std::optional<int64_t> stride, int64_t padding, int64_t dilation,
                             bool ceil_mode)
    : Cloneable(
          "MaxPool1d",
          [k = kernel_size, s = stride.value_or(kernel_size), padding, dilation, ceil_mode](const Tensor& x) {
            return functional::max_pool1d(x, k, s, padding, dilation, ceil_mode);
          },
          "kernel_size=" + std::to_string(kernel_size) + ", stride=" + std::to_string(stride.value_or(kernel_size)) +
              ", padding=" + std::to_string(padding) + ", dilation=" + std::to_string(dilation) +
              ", ceil_mode=" + python_bool(ceil_mode)) {}

// AvgPool1d prints its sizes as 1-tuples, as PyTorch's.
AvgPool1dImpl::AvgPool1dImpl(int64_t kernel_size, std::optional<int64_t> stride, int64_t padding, bool ceil_mode,
                             bool count_include_pad)
    : Cloneable(
          "AvgPool1d",
          [k = kernel_size, s = stride.value_or(kernel_size), padding, ceil_mode, count_include_pad](const Tensor& x) {
            return functional::avg_pool1d(x, k, s, padding, ceil_mode, count_include_pad);
          },
          "kernel_size=(" + std::to_string(kernel_size) + ",), stride=(" +
              std::to_string(stride.value_or(kernel_size)) + ",), padding=(" + std::to_string(padding) + ",)") {}

AdaptiveAvgPool1dImpl::AdaptiveAvgPool1dImpl(int64_t output_size)
    : Cloneable(
          "AdaptiveAvgPool1d",
          [output_size](const Tensor& x) { return functional::adaptive_avg_pool1d(x, output_size); },
          "output_size=" + std::to_string(output_size)) {}

AdaptiveMaxPool1dImpl::AdaptiveMaxPool1dImpl(int64_t output_size)
    : Cloneable(
          "AdaptiveMaxPool1d",
          [output_size](const Tensor& x) { return functional::adaptive_max_pool1d(x, output_size); },
          "output_size=" + std::to_string(output_size)) {}

AdaptiveMaxPool2dImpl::AdaptiveMaxPool2dImpl(IntList output_size)
    : Cloneable(
          "AdaptiveMaxPool2d",
          [o = output_size.vec()](const Tensor& x) { return functional::adaptive_max_pool2d(x, o); },
          "output_size=" + size_str(output_size)) {}

MaxPool3dImpl::MaxPool3dImpl(IntList kernel_size, IntList stride, IntList padding, IntList dilation, bool ceil_mode)
    : Cloneable(
          "MaxPool3d",
          [k = kernel_size.vec(), s = stride.vec(), p = padding.vec(), d = dilation.vec(), ceil_mode](const Tensor& x) {
            return functional::max_pool3d(x, k, s, p, d, ceil_mode);
          },
          "kernel_size=" + size_str(kernel_size) + ", stride=" + size_str(stride.empty() ? kernel_size : stride) +
              ", padding=" + size_str(padding) + ", dilation=" + size_str(dilation) +
              ", ceil_mode=" + python_bool(ceil_mode)) {}

AvgPool3dImpl::AvgPool3dImpl(IntList kernel_size, IntList stride, IntList padding, bool ceil_mode,
                             bool count_include_pad, std::optional<int64_t> divisor_override)
    : Cloneable(
          "AvgPool3d",
          [k = kernel_size.vec(), s = stride.vec(), p = padding.vec(), ceil_mode, count_include_pad,
           divisor_override](const Tensor& x) {
            return functional::avg_pool3d(x, k, s, p, ceil_mode, count_include_pad, divisor_override);
          },
          "kernel_size=" + size_str(kernel_size) + ", stride=" + size_str(stride.empty() ? kernel_size : stride) +
              ", padding=" + size_str(padding)) {}

AdaptiveAvgPool3dImpl::AdaptiveAvgPool3dImpl(IntList output_size)
    : Cloneable(
          "AdaptiveAvgPool3d",
          [o = output_size.vec()](const Tensor& x) { return functional::adaptive_avg_pool3d(x, o); },
          "output_size=" + size_str(output_size)) {}

AdaptiveMaxPool3dImpl::AdaptiveMaxPool3dImpl(IntList output_size)
    : Cloneable(
          "AdaptiveMaxPool3d",
          [o = output_size.vec()](const Tensor& x) { return functional::adaptive_max_pool3d(x, o); },
          "output_size=" + size_str(output_size)) {}

FractionalMaxPoolImpl::FractionalMaxPoolImpl(std::string name, int64_t dims, FractionalMaxPoolOptions options_)
    : Module(std::move(name)), options(std::move(options_)), dims_(dims) {
  const std::string& layer = this->name();
  TD_CHECK(options.output_size_.empty() != options.output_ratio_.empty(), layer,
           ": give either an output_size or an output_ratio, not ", options.output_size_.empty() ? "neither" : "both");
  for (int64_t k : options.kernel_size_) {
    TD_CHECK(k > 0, layer, ": kernel_size must be positive, got ", shape_str(options.kernel_size_));
  }
  for (double ratio : options.output_ratio_) {
    TD_CHECK(ratio > 0 && ratio < 1, layer, ": output_ratio must be in (0, 1), got ", python_float(ratio));
  }
  reset();
}

void FractionalMaxPoolImpl::reset() {
  _random_samples = options._random_samples_.defined() ? register_buffer("_random_samples", options._random_samples_)
                                                       : Tensor();
}

std::tuple<Tensor, Tensor> FractionalMaxPoolImpl::forward_with_indices(const Tensor& x) {
  auto pool = dims_ == 2 ? functional::fractional_max_pool2d_with_indices
                         : functional::fractional_max_pool3d_with_indices;
  return pool(x, options.kernel_size_, options.output_size_, options.output_ratio_, _random_samples);
}

Tensor FractionalMaxPoolImpl::forward(const Tensor& x) { return std::get<0>(forward_with_indices(x)); }

namespace {

// LPPool's printing: norm_type as a whole number where it is one (as PyTorch prints an int), the
// sizes as given, stride None unless given.
std::string lp_pool_repr(double norm_type, IntList kernel_size, IntList stride, bool ceil_mode) {
  const bool whole = std::isfinite(norm_type) && norm_type == std::floor(norm_type) && std::abs(norm_type) < 1e15;
  return "norm_type=" + (whole ? std::to_string(static_cast<int64_t>(norm_type)) : python_float(norm_type)) +
         ", kernel_size=" + size_str(kernel_size) + ", stride=" + (stride.empty() ? "None" : size_str(stride)) +
         ", ceil_mode=" + python_bool(ceil_mode);
}

}  // namespace

LPPool1dImpl::LPPool1dImpl(double norm_type, IntList kernel_size, IntList stride, bool ceil_mode)
    : Cloneable(
          "LPPool1d",
          [norm_type, k = kernel_size.vec(), s = stride.vec(), ceil_mode](const Tensor& x) {
            return functional::lp_pool1d(x, norm_type, k, s, ceil_mode);
          },
          lp_pool_repr(norm_type, kernel_size, stride, ceil_mode)) {}

LPPool2dImpl::LPPool2dImpl(double norm_type, IntList kernel_size, IntList stride, bool ceil_mode)
    : Cloneable(
          "LPPool2d",
          [norm_type, k = kernel_size.vec(), s = stride.vec(), ceil_mode](const Tensor& x) {
            return functional::lp_pool2d(x, norm_type, k, s, ceil_mode);
          },
          lp_pool_repr(norm_type, kernel_size, stride, ceil_mode)) {}

LPPool3dImpl::LPPool3dImpl(double norm_type, IntList kernel_size, IntList stride, bool ceil_mode)
    : Cloneable(
          "LPPool3d",
          [norm_type, k = kernel_size.vec(), s = stride.vec(), ceil_mode](const Tensor& x) {
            return functional::lp_pool3d(x, norm_type, k, s, ceil_mode);
          },
          lp_pool_repr(norm_type, kernel_size, stride, ceil_mode)) {}

template <size_t D>
MaxUnpoolImpl<D>::MaxUnpoolImpl(IntList kernel_size_, IntList stride_, IntList padding_) {
  auto expand = [](IntList v, const char* what) {
    TD_CHECK(v.size() == 1 || v.size() == D, "MaxUnpool", D, "d: ", what, " must have one value or ", D, ", got ",
             v.size());
    return v.size() == 1 ? std::vector<int64_t>(D, v[0]) : v.vec();
  };
  kernel_size = expand(kernel_size_, "kernel_size");
  stride = stride_.empty() ? kernel_size : expand(stride_, "stride");
  padding = expand(padding_, "padding");
}

template <size_t D>
Tensor MaxUnpoolImpl<D>::forward(const Tensor& x, const Tensor& indices, IntList output_size) {
  if constexpr (D == 1) return functional::max_unpool1d(x, indices, kernel_size, stride, padding, output_size);
  if constexpr (D == 2) return functional::max_unpool2d(x, indices, kernel_size, stride, padding, output_size);
  if constexpr (D == 3) return functional::max_unpool3d(x, indices, kernel_size, stride, padding, output_size);
}

template <size_t D>
std::string MaxUnpoolImpl<D>::extra_repr() const {
  return "kernel_size=" + python_tuple(kernel_size) + ", stride=" + python_tuple(stride) +
         ", padding=" + python_tuple(padding);
}

template class MaxUnpoolImpl<1>;
template class MaxUnpoolImpl<2>;
template class MaxUnpoolImpl<3>;

RReLUImpl::RReLUImpl(double lower_, double upper_, bool inplace_) : lower(lower_), upper(upper_), inplace(inplace_) {
  TD_CHECK(lower <= upper, "RReLU: lower (", lower, ") must not exceed upper (", upper, ")");
}

Tensor RReLUImpl::forward(const Tensor& x) {
  if (!inplace) return functional::rrelu(x, lower, upper, is_training());
  Tensor written = x;
  return functional::rrelu_(written, lower, upper, is_training());
}

std::string RReLUImpl::extra_repr() const {
  return with_inplace("lower=" + python_float(lower) + ", upper=" + python_float(upper), inplace);
}

PixelShuffleImpl::PixelShuffleImpl(int64_t upscale_factor)
    : Cloneable(
          "PixelShuffle", [upscale_factor](const Tensor& x) { return functional::pixel_shuffle(x, upscale_factor); },
          "upscale_factor=" + std::to_string(upscale_factor)) {}

PixelUnshuffleImpl::PixelUnshuffleImpl(int64_t downscale_factor)
    : Cloneable(
          "PixelUnshuffle",
          [downscale_factor](const Tensor& x) { return functional::pixel_unshuffle(x, downscale_factor); },
          "downscale_factor=" + std::to_string(downscale_factor)) {}

UnfoldImpl::UnfoldImpl(IntList kernel_size, IntList dilation, IntList padding, IntList stride)
    : Cloneable(
          "Unfold",
          [k = kernel_size.vec(), d = dilation.vec(), p = padding.vec(), s = stride.vec()](const Tensor& x) {
            return functional::unfold(x, k, d, p, s);
          },
          "kernel_size=" + size_str(kernel_size) + ", dilation=" + size_str(dilation) + ", padding=" +
              size_str(padding) + ", stride=" + size_str(stride)) {}

FoldImpl::FoldImpl(IntList output_size, IntList kernel_size, IntList dilation, IntList padding, IntList stride)
    : Cloneable(
          "Fold",
          [o = output_size.vec(), k = kernel_size.vec(), d = dilation.vec(), p = padding.vec(),
           s = stride.vec()](const Tensor& x) { return functional::fold(x, o, k, d, p, s); },
          "output_size=" + size_str(output_size) + ", kernel_size=" + size_str(kernel_size) + ", dilation=" +
              size_str(dilation) + ", padding=" + size_str(padding) + ", stride=" + size_str(stride)) {}

DropoutImpl::DropoutImpl(const char* name, double p_, bool inplace_) : p(p_), inplace(inplace_) {
  TD_CHECK(p >= 0 && p <= 1, name, ": probability must be in [0, 1], got ", p);
}

Tensor DropoutImpl::forward(const Tensor& x) { return drop(x, functional::dropout, functional::dropout_); }

// PyTorch prints its dropouts' inplace either way.
std::string DropoutImpl::extra_repr() const {
  return "p=" + python_float(p) + ", inplace=" + (inplace ? "True" : "False");
}

Tensor DropoutImpl::drop(const Tensor& x, Tensor (*out_of_place)(const Tensor&, double, bool),
                         Tensor& (*in_place)(Tensor&, double, bool)) {
  if (!inplace) return out_of_place(x, p, is_training());
  Tensor written = x;  // a handle to x itself
  return in_place(written, p, is_training());
}

Tensor AlphaDropoutImpl::forward(const Tensor& x) {
  return drop(x, functional::alpha_dropout, functional::alpha_dropout_);
}
Tensor FeatureAlphaDropoutImpl::forward(const Tensor& x) {
  return drop(x, functional::feature_alpha_dropout, functional::feature_alpha_dropout_);
}
Tensor Dropout1dImpl::forward(const Tensor& x) { return drop(x, functional::dropout1d, functional::dropout1d_); }
Tensor Dropout2dImpl::forward(const Tensor& x) { return drop(x, functional::dropout2d, functional::dropout2d_); }
Tensor Dropout3dImpl::forward(const Tensor& x) { return drop(x, functional::dropout3d, functional::dropout3d_); }

// ---- containers ----

void SequentialImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

Tensor SequentialImpl::forward(const Tensor& x) {
  Tensor out = x;
  for (auto& m : modules_) out = m->forward(out);
  return out;
}

std::shared_ptr<Module> SequentialImpl::operator[](size_t index) const {
  TD_CHECK(index < modules_.size(), "Sequential: index ", index, " is out of range for ", modules_.size(), " modules");
  return modules_[index];
}

void SequentialImpl::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  Module::replace_module(name, std::move(module));
  modules_.clear();  // the list forward() and [] read
  for (const auto& [n, m] : registered_children()) modules_.push_back(m);
}

namespace {

// Clones of a container's modules, one per distinct module: a module listed twice (weights
// tied) is one module in the copy too, also where it is in two containers nested in the one
// cloned (the outermost container's clone keeps the memo the inner ones use).
class CloneOnce {
 public:
  explicit CloneOnce(std::optional<Device> device) : device_(device) {
    if (t_made == nullptr) t_made = &made_;
  }
  ~CloneOnce() {
    if (t_made == &made_) t_made = nullptr;
  }
  CloneOnce(const CloneOnce&) = delete;
  CloneOnce& operator=(const CloneOnce&) = delete;
  std::shared_ptr<Module> operator()(const std::shared_ptr<Module>& m) {
    std::shared_ptr<Module>& made = (*t_made)[m.get()];
    if (!made) made = m->clone(device_);
    return made;
  }

 private:
  static thread_local std::map<const Module*, std::shared_ptr<Module>>* t_made;
  std::optional<Device> device_;
  std::map<const Module*, std::shared_ptr<Module>> made_;
};

thread_local std::map<const Module*, std::shared_ptr<Module>>* CloneOnce::t_made = nullptr;

}  // namespace

std::shared_ptr<Module> SequentialImpl::clone(std::optional<Device> device) const {
  auto copy = std::make_shared<SequentialImpl>();
  CloneOnce clone_once(device);
  for (const auto& m : modules_) copy->push_back(clone_once(m));
  copy->copy_modes_and_settings_from(*this);
  return copy;
}

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

std::shared_ptr<Module> ModuleListImpl::operator[](size_t index) const {
  TD_CHECK(index < modules_.size(), "ModuleList: index ", index, " is out of range for ", modules_.size(), " modules");
  return modules_[index];
}

void ModuleListImpl::replace_module(const std::string& name, std::shared_ptr<Module> module) {
  Module::replace_module(name, std::move(module));
  modules_.clear();  // the list [] and iteration read
  for (const auto& [n, m] : registered_children()) modules_.push_back(m);
}

std::shared_ptr<Module> ModuleListImpl::clone(std::optional<Device> device) const {
  auto copy = std::make_shared<ModuleListImpl>();
  CloneOnce clone_once(device);
  for (const auto& m : modules_) copy->push_back(clone_once(m));
  copy->copy_modes_and_settings_from(*this);
  return copy;
}

void ModuleDictImpl::insert(const std::string& key, std::shared_ptr<Module> module) {
  // An existing key's module is replaced in its place, as in LibTorch and PyTorch.
  contains(key) ? replace_module(key, std::move(module)) : void(register_module(key, std::move(module)));
}

std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  for (const auto& [name, m] : registered_children()) {
    if (name == key) return m;
  }
  TD_FAIL("ModuleDict: no module under the key '", key, "'");
}

bool ModuleDictImpl::contains(const std::string& key) const {
  for (const auto& [name, m] : registered_children()) {
    if (name == key) return true;
  }
  return false;
}

std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : registered_children()) out.push_back(name);
  return out;
}

std::shared_ptr<Module> ModuleDictImpl::clone(std::optional<Device> device) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  CloneOnce clone_once(device);
  for (const auto& [name, m] : registered_children()) copy->insert(name, clone_once(m));
  copy->copy_modes_and_settings_from(*this);
  return copy;
}

// ---- ParameterList, ParameterDict ----

namespace {

// How PyTorch's containers print a parameter: "Parameter containing: [<type> of size 3x4]", the
// type by dtype (ParameterList) or as torch.typename gives it (ParameterDict), a GPU's device after.
std::string parameter_line(const std::string& key, const Tensor& p, bool legacy_type_name) {
  std::string type = std::string("torch.") + dtype_name(p.dtype());
  if (legacy_type_name) {
    const std::map<DType, std::string> names = {{kFloat32, "Float"}, {kFloat64, "Double"}, {kFloat16, "Half"},
                                                {kBFloat16, "BFloat16"}, {kInt64, "Long"},   {kInt32, "Int"},
                                                {kUInt8, "Byte"},        {kBool, "Bool"}};
    type = std::string(p.is_cuda() ? "torch.cuda." : "torch.") + names.at(p.dtype()) + "Tensor";
  }
  std::string size;
  for (int64_t s : p.sizes()) size += (size.empty() ? "" : "x") + std::to_string(s);
  const std::string device = p.is_cuda() ? " (" + p.device().str() + ")" : "";
  return "  (" + key + "): Parameter containing: [" + type + " of size " + size + device + "]";
}

std::string parameter_lines(const std::vector<std::pair<std::string, Tensor>>& params, bool legacy_type_name) {
  std::string s;
  for (const auto& [key, p] : params) s += (s.empty() ? "" : "\n") + parameter_line(key, p, legacy_type_name);
  return s;
}

}  // namespace

void ParameterListImpl::append(const Tensor& param) {
  TD_CHECK(param.defined(), "ParameterList.append: the parameter is an undefined tensor");
  register_parameter(std::to_string(size()), param, param.requires_grad());
}

void ParameterListImpl::extend(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) append(p);
}

Tensor ParameterListImpl::operator[](size_t index) const {
  TD_CHECK(index < size(), "ParameterList: index ", index, " is out of range for ", size(), " parameters");
  return registered_parameters()[index].second;
}

std::shared_ptr<Module> ParameterListImpl::clone(std::optional<Device> device) const {
  auto copy = std::make_shared<ParameterListImpl>();
  for (const auto& [name, p] : registered_parameters()) {
    NoGradGuard no_grad;
    Tensor c = device ? p.to(*device).clone() : p.clone();
    copy->append(c.requires_grad_(p.requires_grad()));
  }
  copy->copy_modes_and_settings_from(*this);
  return copy;
}

std::string ParameterListImpl::extra_repr() const { return parameter_lines(registered_parameters(), false); }

ParameterDictImpl::ParameterDictImpl(const std::vector<std::pair<std::string, Tensor>>& params) {
  for (const auto& [key, p] : params) insert(key, p);
}

void ParameterDictImpl::insert(const std::string& key, const Tensor& param) {
  TD_CHECK(param.defined(), "ParameterDict.insert: the parameter for '", key, "' is an undefined tensor");
  contains(key) ? replace_parameter(key, param, param.requires_grad())
                : void(register_parameter(key, param, param.requires_grad()));
}

bool ParameterDictImpl::contains(const std::string& key) const {
  const auto& params = registered_parameters();
  return std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == key; });
}

Tensor ParameterDictImpl::operator[](const std::string& key) const {
  for (const auto& [name, p] : registered_parameters()) {
    if (name == key) return p;
  }
  TD_FAIL("ParameterDict: no parameter '", key, "'");
}

Tensor ParameterDictImpl::pop(const std::string& key) {
  const Tensor p = (*this)[key];
  remove_parameter(key);
  return p;
}

std::vector<std::string> ParameterDictImpl::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, p] : registered_parameters()) out.push_back(name);
  return out;
}

std::vector<Tensor> ParameterDictImpl::values() const {
  std::vector<Tensor> out;
  for (const auto& [name, p] : registered_parameters()) out.push_back(p);
  return out;
}

std::shared_ptr<Module> ParameterDictImpl::clone(std::optional<Device> device) const {
  auto copy = std::make_shared<ParameterDictImpl>();
  for (const auto& [name, p] : registered_parameters()) {
    NoGradGuard no_grad;
    Tensor c = device ? p.to(*device).clone() : p.clone();
    copy->insert(name, c.requires_grad_(p.requires_grad()));
  }
  copy->copy_modes_and_settings_from(*this);
  return copy;
}

std::string ParameterDictImpl::extra_repr() const { return parameter_lines(registered_parameters(), true); }

// ---- more activations ----

HardtanhImpl::HardtanhImpl(double min_val, double max_val, bool inplace)
    : Cloneable("Hardtanh",
                in_place_if(
                    inplace, [min_val, max_val](const Tensor& x) { return functional::hardtanh(x, min_val, max_val); },
                    [min_val, max_val](Tensor& x) -> Tensor& { return functional::hardtanh_(x, min_val, max_val); }),
                with_inplace("min_val=" + python_float(min_val) + ", max_val=" + python_float(max_val), inplace)) {
  TD_CHECK(min_val < max_val, "Hardtanh: min_val (", min_val, ") must be below max_val (", max_val, ")");
}
ReLU6Impl::ReLU6Impl(bool inplace)
    : Cloneable("ReLU6",
                in_place_if(inplace, [](const Tensor& x) { return functional::relu6(x); }, functional::relu6_),
                with_inplace("", inplace)) {}
// PyTorch prints neither's inplace.
HardsigmoidImpl::HardsigmoidImpl(bool inplace)
    : Cloneable("Hardsigmoid", in_place_if(
                                   inplace, [](const Tensor& x) { return functional::hardsigmoid(x); },
                                   functional::hardsigmoid_)) {}
HardswishImpl::HardswishImpl(bool inplace)
    : Cloneable("Hardswish", in_place_if(
                                 inplace, [](const Tensor& x) { return functional::hardswish(x); },
                                 functional::hardswish_)) {}
MishImpl::MishImpl(bool inplace)
    : Cloneable("Mish", in_place_if(inplace, [](const Tensor& x) { return functional::mish(x); }, functional::mish_),
                with_inplace("", inplace)) {}
LogSigmoidImpl::LogSigmoidImpl() : Cloneable("LogSigmoid", [](const Tensor& x) { return functional::logsigmoid(x); }) {}
SoftsignImpl::SoftsignImpl() : Cloneable("Softsign", [](const Tensor& x) { return functional::softsign(x); }) {}
TanhshrinkImpl::TanhshrinkImpl() : Cloneable("Tanhshrink", [](const Tensor& x) { return functional::tanhshrink(x); }) {}
HardshrinkImpl::HardshrinkImpl(double lambd)
    : Cloneable(
          "Hardshrink", [lambd](const Tensor& x) { return functional::hardshrink(x, lambd); }, python_float(lambd)) {}
SoftshrinkImpl::SoftshrinkImpl(double lambd)
    : Cloneable(
          "Softshrink", [lambd](const Tensor& x) { return functional::softshrink(x, lambd); }, python_float(lambd)) {
  TD_CHECK(lambd >= 0, "Softshrink: lambd must not be negative, got ", lambd);
}
ThresholdImpl::ThresholdImpl(double threshold, double value, bool inplace)
    : Cloneable("Threshold",
                in_place_if(
                    inplace, [threshold, value](const Tensor& x) { return functional::threshold(x, threshold, value); },
                    [threshold, value](Tensor& x) -> Tensor& { return functional::threshold_(x, threshold, value); }),
                with_inplace("threshold=" + python_float(threshold) + ", value=" + python_float(value), inplace)) {}
GLUImpl::GLUImpl(int64_t dim)
    : Cloneable(
          "GLU", [dim](const Tensor& x) { return functional::glu(x, dim); }, "dim=" + std::to_string(dim)) {}
SoftminImpl::SoftminImpl(int64_t dim)
    : Cloneable(
          "Softmin", [dim](const Tensor& x) { return functional::softmin(x, dim); }, "dim=" + std::to_string(dim)) {}

PReLUImpl::PReLUImpl(int64_t num_parameters, double init)
    : Cloneable("PReLU"), num_parameters_(num_parameters), init_(init) {
  TD_CHECK(num_parameters > 0, "PReLU: num_parameters must be positive, got ", num_parameters);
  reset();
}
void PReLUImpl::reset() { weight = register_parameter("weight", full({num_parameters_}, init_)); }

// ---- upsampling ----

namespace {

// The layer's F::interpolate.
std::function<Tensor(const Tensor&)> upsampling(const char* name, const UpsampleOptions& o, InterpolateMode mode,
                                                std::optional<bool> align_corners) {
  TD_CHECK(o.size_.has_value() != o.scale_factor_.has_value(), name, ": give exactly one of size and scale_factor");
  functional::InterpolateOptions f;
  f.mode(mode).recompute_scale_factor(o.recompute_scale_factor_);
  if (align_corners) f.align_corners(*align_corners);
  if (o.size_) f.size(*o.size_);
  if (o.scale_factor_) f.scale_factor(*o.scale_factor_);
  return [f](const Tensor& x) { return functional::interpolate(x, f); };
}

// UpsamplingNearest2d and UpsamplingBilinear2d fix their mode and align_corners.
const UpsampleOptions& fixed_mode(const char* name, const UpsampleOptions& o, InterpolateMode mode) {
  TD_CHECK(!o.mode_ && !o.align_corners_, name, " always interpolates with mode '",
           functional::interpolate_mode_name(mode), "'", mode == kBilinear ? " and align_corners" : "",
           ": its options set ", o.mode_ ? "mode '" + std::string(functional::interpolate_mode_name(*o.mode_)) + "'"
                                         : std::string("align_corners"),
           " (Upsample takes them)");
  return o;
}

// PyTorch prints a single size or factor bare, and leaves align_corners out.
std::string upsampling_repr(const UpsampleOptions& o, InterpolateMode mode) {
  std::string s;
  if (o.size_) {
    s = "size=" + (o.size_->size() == 1 ? std::to_string(o.size_->front()) : python_tuple(*o.size_));
  } else if (o.scale_factor_) {
    std::string factors;
    for (double v : *o.scale_factor_) factors += (factors.empty() ? "" : ", ") + python_float(v);
    s = "scale_factor=" + (o.scale_factor_->size() == 1 ? factors : "(" + factors + ")");
  }
  return s + ", mode='" + functional::interpolate_mode_name(mode) + "'";
}

}  // namespace

UpsampleImpl::UpsampleImpl(const UpsampleOptions& o)
    : Cloneable("Upsample", upsampling("Upsample", o, o.mode_.value_or(kNearest), o.align_corners_),
                upsampling_repr(o, o.mode_.value_or(kNearest))) {}
UpsamplingNearest2dImpl::UpsamplingNearest2dImpl(const UpsampleOptions& o)
    : Cloneable("UpsamplingNearest2d",
                upsampling("UpsamplingNearest2d", fixed_mode("UpsamplingNearest2d", o, kNearest), kNearest,
                           std::nullopt),
                upsampling_repr(o, kNearest)) {}
UpsamplingBilinear2dImpl::UpsamplingBilinear2dImpl(const UpsampleOptions& o)
    : Cloneable("UpsamplingBilinear2d",
                upsampling("UpsamplingBilinear2d", fixed_mode("UpsamplingBilinear2d", o, kBilinear), kBilinear, true),
                upsampling_repr(o, kBilinear)) {}

// ---- padding ----

namespace {

struct PadKind {
  const char* name;  // without the dims
  PadMode mode;
};
PadKind pad_kind(PadLayer kind) {
  switch (kind) {
    case PadLayer::zero: return {"ZeroPad", kConstant};
    case PadLayer::constant: return {"ConstantPad", kConstant};
    case PadLayer::reflection: return {"ReflectionPad", kReflect};
    case PadLayer::replication: return {"ReplicationPad", kReplicate};
    case PadLayer::circular: return {"CircularPad", kCircular};
  }
  return {"?", kConstant};
}

// padding as 2 * dims values: one number repeated, or the values given.
std::vector<int64_t> pad_sides(const std::string& layer, IntList padding, int dims) {
  if (padding.size() == 1) return std::vector<int64_t>(2 * dims, padding[0]);
  TD_CHECK(padding.size() == static_cast<size_t>(2 * dims), layer, ": padding must be one number or ", 2 * dims,
           " values (before and after each of the last ", dims, " dims), got ", python_tuple(padding.vec()));
  return padding.vec();
}

std::string pad_layer_name(PadLayer kind, int dims) {
  return std::string(pad_kind(kind).name) + std::to_string(dims) + "d";
}

}  // namespace

template <PadLayer Kind, int Dims>
PadImpl<Kind, Dims>::PadImpl(IntList padding)
  requires(Kind != PadLayer::constant)
    : Cloneable<PadImpl<Kind, Dims>, FunctionalImpl>(
          pad_layer_name(Kind, Dims),
          [sides = pad_sides(pad_layer_name(Kind, Dims), padding, Dims)](const Tensor& x) {
            return functional::pad(x, sides, pad_kind(Kind).mode);
          },
          python_tuple(pad_sides(pad_layer_name(Kind, Dims), padding, Dims))) {}

template <PadLayer Kind, int Dims>
PadImpl<Kind, Dims>::PadImpl(IntList padding, double value)
  requires(Kind == PadLayer::constant)
    : Cloneable<PadImpl<Kind, Dims>, FunctionalImpl>(
          pad_layer_name(Kind, Dims),
          [sides = pad_sides(pad_layer_name(Kind, Dims), padding, Dims), value](const Tensor& x) {
            return functional::pad(x, sides, kConstant, value);
          },
          "padding=" + python_tuple(pad_sides(pad_layer_name(Kind, Dims), padding, Dims)) +
              ", value=" + python_float(value)) {}

template class PadImpl<PadLayer::zero, 1>;
template class PadImpl<PadLayer::zero, 2>;
template class PadImpl<PadLayer::zero, 3>;
template class PadImpl<PadLayer::constant, 1>;
template class PadImpl<PadLayer::constant, 2>;
template class PadImpl<PadLayer::constant, 3>;
template class PadImpl<PadLayer::reflection, 1>;
template class PadImpl<PadLayer::reflection, 2>;
template class PadImpl<PadLayer::reflection, 3>;
template class PadImpl<PadLayer::replication, 1>;
template class PadImpl<PadLayer::replication, 2>;
template class PadImpl<PadLayer::replication, 3>;
template class PadImpl<PadLayer::circular, 1>;
template class PadImpl<PadLayer::circular, 2>;
template class PadImpl<PadLayer::circular, 3>;

}  // namespace tandem::nn
