#include "nn/linear_cross_entropy.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/graph.h"
#include "autograd/grad_mode.h"
#include "autograd/record.h"
#include "kernels/factory.h"
#include "kernels/linalg.h"
#include "kernels/nn_ops.h"

namespace tandem::nn {

namespace {

bool valid_chunking_method(const std::string& method) {
  if (method == "auto" || method == "aspect_ratio") return true;
  const std::string prefix = "aspect_ratio:";
  if (method.rfind(prefix, 0) != 0 || method.size() == prefix.size()) return false;
  const std::string factor = method.substr(prefix.size());
  return std::all_of(factor.begin(), factor.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         factor.size() < 10 && std::stoll(factor) > 0;
}

}  // namespace

LinearCrossEntropyOptions& LinearCrossEntropyOptions::allow_retain_graph(bool allow) {
  allow_retain_graph_ = allow;
  return *this;
}

LinearCrossEntropyOptions& LinearCrossEntropyOptions::batch_chunk_size(std::optional<int64_t> rows) {
  TD_CHECK(!rows || *rows > 0, "LinearCrossEntropyOptions: batch_chunk_size must be positive or none, got ", *rows);
  batch_chunk_size_ = rows;
  return *this;
}

LinearCrossEntropyOptions& LinearCrossEntropyOptions::chunking_method(std::optional<std::string> method) {
  TD_CHECK(!method || valid_chunking_method(*method), "LinearCrossEntropyOptions: invalid chunking_method '",
           *method, "' (auto, aspect_ratio, aspect_ratio:K with K positive, or none)");
  chunking_method_ = std::move(method);
  return *this;
}

LinearCrossEntropyOptions& LinearCrossEntropyOptions::acc_policy(std::string policy) {
  TD_CHECK(policy == "auto" || policy == "accurate" || policy == "compact",
           "LinearCrossEntropyOptions: invalid acc_policy '", policy, "'; expected one of auto, accurate, compact");
  acc_policy_ = std::move(policy);
  return *this;
}

LinearCrossEntropyOptions& LinearCrossEntropyOptions::acc_dtype(std::optional<DType> dtype) {
  TD_CHECK(!dtype || is_floating(*dtype), "LinearCrossEntropyOptions: acc_dtype must be a floating dtype or none, got ",
           *dtype);
  acc_dtype_ = dtype;
  return *this;
}

std::string options_repr(const LinearCrossEntropyOptions& o) {
  auto quoted = [](const std::string& s) { return "'" + s + "'"; };
  return "LinearCrossEntropyOptions(allow_retain_graph=" + python_bool(o.allow_retain_graph_) +
         ", batch_chunk_size=" + (o.batch_chunk_size_ ? std::to_string(*o.batch_chunk_size_) : "None") +
         ", chunking_method=" + (o.chunking_method_ ? quoted(*o.chunking_method_) : "None") +
         ", acc_policy=" + quoted(o.acc_policy_) +
         ", acc_dtype=" + (o.acc_dtype_ ? std::string("torch.") + dtype_name(*o.acc_dtype_) : "None") + ")";
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t power_of_two_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

LinearCrossEntropyPlan linear_cross_entropy_plan(const LinearCrossEntropyOptions& o, int64_t batch,
                                                 int64_t in_features, int64_t classes, DType dtype, Device device,
                                                 bool probabilities) {
  const bool cpu_16bit = device.is_cpu() && is_16bit_float(dtype);
  const std::string policy = o.acc_policy_ != "auto" ? o.acc_policy_ : cpu_16bit ? "accurate" : "compact";
  const bool auto_chunking = o.chunking_method_ == "auto";
  std::optional<std::string> method = o.chunking_method_;
  if (auto_chunking) method = o.batch_chunk_size_ ? std::nullopt : std::optional<std::string>("aspect_ratio");
  int64_t rows = o.batch_chunk_size_ ? std::min(*o.batch_chunk_size_, batch) : batch;
  if (method) {
    const size_t colon = method->find(':');
    const int64_t factor = colon == std::string::npos ? 1 : std::stoll(method->substr(colon + 1));
    const int64_t per_row = ceil_div(classes, std::max<int64_t>(in_features, 1));
    rows = std::min(power_of_two_at_least(ceil_div(batch, per_row)) / factor, batch);
    if (auto_chunking && policy == "compact") {
      // The largest power of two of rows whose chunked peak stays within the unchunked one.
      const int64_t within = probabilities ? batch / 2 : batch * classes / (4 * std::max<int64_t>(in_features, 1));
      rows = std::max<int64_t>(
          1, std::min<int64_t>(rows, within >= 1 ? static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(within))) : 1));
    }
    TD_CHECK(!o.batch_chunk_size_ || *o.batch_chunk_size_ == rows, "linear_cross_entropy: batch_chunk_size (", *o.batch_chunk_size_,
             ") and chunking_method '", *method, "' give different chunk sizes (", *o.batch_chunk_size_, " and ",
             rows, "); give only one");
  }
  DType acc = dtype;
  if (o.acc_dtype_) {
    acc = *o.acc_dtype_;
    TD_CHECK(acc == dtype || (acc == kFloat32 && is_16bit_float(dtype)),
             "linear_cross_entropy: acc_dtype must be the input's dtype, or float32 beside a 16-bit input; got ",
             "acc_dtype ", acc, " and a ", dtype, " input");
  } else if (o.acc_policy_ == "auto" && is_16bit_float(dtype)) {
    acc = kFloat32;
  }
  return {std::max<int64_t>(rows, 1), acc};
}

namespace functional {

namespace {

constexpr const char* kOp = "linear_cross_entropy";

// What every chunk shares: the weight, bias and class weight in the arithmetic's dtype.
struct Operands {
  Tensor weight, bias, class_weight;  // [C, in], [C] or undefined, [C] or undefined
  int64_t ignore_index;
  bool probabilities;
  DType acc;
};
Operands operands_in(DType acc, const Tensor& linear_weight, const Tensor& linear_bias, const Tensor& class_weight,
                     int64_t ignore_index, bool probabilities) {
  auto in_acc = [acc](const Tensor& t) { return t.defined() ? t.to(acc) : Tensor(); };
  return {in_acc(linear_weight), in_acc(linear_bias), in_acc(class_weight), ignore_index, probabilities, acc};
}

// One chunk's loss per row (and, with index targets, each row's target weight), and where asked
// the gradient of the rows' summed loss with respect to the chunk's logits, scaled per row by
// row_scale where given.
struct ChunkResult {
  Tensor losses, target_weights, grad_logits;
};
ChunkResult run_chunk(const Operands& in, const Tensor& x, const Tensor& target, bool with_grad,
                      const Tensor& row_scale) {
  const Tensor logits = linear(x, in.weight, in.bias);
  ChunkResult r;
  if (in.probabilities) {
    const Tensor logp = log_softmax(logits, 1);
    const Tensor weighted = in.class_weight.defined() ? target * in.class_weight : target;
    r.losses = -(weighted * logp).sum({1});
    if (with_grad) {
      r.grad_logits = logp.exp() * weighted.sum({1}, true) - weighted;
      if (row_scale.defined()) r.grad_logits = r.grad_logits * row_scale.unsqueeze(1);
    }
    return r;
  }
  Tensor lse;
  std::tie(r.losses, r.target_weights, lse) = kernels::cross_entropy(logits, target, in.class_weight, in.ignore_index, 0);
  if (with_grad) {
    const Tensor scale = row_scale.defined() ? row_scale : ones({x.size(0)}, TensorOptions(in.acc).device(x.device()));
    r.grad_logits = kernels::cross_entropy_backward(scale, logits, lse, target, in.class_weight, in.ignore_index, 0);
  }
  return r;
}

// fn(first_row, x, target) for each chunk of rows: x in the arithmetic's dtype, probability
// targets too.
template <typename Fn>
void for_each_chunk(const Tensor& input, const Tensor& target, const Operands& in, int64_t chunk_rows, Fn&& fn) {
  const int64_t batch = input.size(0);
  for (int64_t first = 0; first < batch; first += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, batch - first);
    const Tensor t = target.narrow(0, first, rows);
    fn(first, input.narrow(0, first, rows).to(in.acc), in.probabilities ? t.to(in.acc) : t);
  }
}

// The gradients the chunks add up: to their rows of the input, to the weight and to the bias.
struct Gradients {
  Tensor input, weight, bias;  // in the arithmetic's dtype; undefined where not wanted
};
Gradients zero_gradients(bool input, bool weight, bool bias, int64_t batch, const Operands& in) {
  const TensorOptions options = TensorOptions(in.acc).device(in.weight.device());
  const Tensor none;
  return {input ? zeros({batch, in.weight.size(1)}, options) : none, weight ? zeros(in.weight.sizes(), options) : none,
          bias ? zeros({in.weight.size(0)}, options) : none};
}
void add_chunk_gradients(Gradients& g, const Tensor& grad_logits, const Tensor& x, const Tensor& weight,
                         int64_t first_row) {
  // Written and accumulated in place: no [C, in_features] temporary per chunk.
  if (g.input.defined()) kernels::addmm_out(g.input.narrow(0, first_row, x.size(0)), grad_logits, weight, 0);
  if (g.weight.defined()) kernels::addmm_out(g.weight, grad_logits.t(), x);
  if (g.bias.defined()) g.bias.add_(grad_logits.sum({0}));
}
// Each gradient in its tensor's dtype.
std::vector<Tensor> in_dtypes(const Gradients& g, DType input, DType weight, DType bias) {
  auto to = [](const Tensor& t, DType dtype) { return t.defined() ? t.to(dtype) : Tensor(); };
  return {to(g.input, input), to(g.weight, weight), to(g.bias, bias)};
}

// The chunked path on input [N, in] and target [N] (indices) or [N, C] (probabilities).
Tensor chunked(const Tensor& input, const Tensor& linear_weight, const Tensor& target, const Tensor& linear_bias,
               const Tensor& class_weight, Reduction reduction, int64_t ignore_index, const LinearCrossEntropyPlan& plan,
               bool allow_retain_graph) {
  const int64_t batch = input.size(0), classes = linear_weight.size(0);
  const bool probabilities = is_floating(target.dtype());
  const bool want_input = autograd::needs_grad({&input}), want_weight = autograd::needs_grad({&linear_weight});
  const bool want_bias = autograd::needs_grad({&linear_bias});
  const bool recording = want_input || want_weight || want_bias;
  const DType input_dtype = input.dtype(), weight_dtype = linear_weight.dtype();
  const DType bias_dtype = linear_bias.defined() ? linear_bias.dtype() : input_dtype;
  Tensor loss;
  Gradients grads;
  {
    NoGradGuard no_grad;
    const Operands in = operands_in(plan.acc_dtype, linear_weight, linear_bias, class_weight, ignore_index,
                                    probabilities);
    if (!probabilities && batch > 0) {
      // One read on the host; the offending value only where there is one.
      const Tensor outside = logical_and(logical_or(target < 0, target >= classes), target != ignore_index);
      if (outside.any().item<bool>()) {
        TD_FAIL(kOp, ": target ", target.masked_select(outside).flatten()[0].item<int64_t>(), " is out of bounds for ",
                classes, " classes");
      }
    }
    // mean and sum keep the gradients now; none recomputes them in backward, scaled per row.
    const bool keep_grads = recording && reduction != kNone;
    if (keep_grads) grads = zero_gradients(want_input, want_weight, want_bias, batch, in);
    const TensorOptions acc_options = TensorOptions(plan.acc_dtype).device(input.device());
    Tensor losses = reduction == kNone ? empty({batch}, acc_options) : Tensor();
    Tensor total = zeros({}, acc_options), total_weight = zeros({}, acc_options);
    for_each_chunk(input, target, in, plan.batch_chunk_size, [&](int64_t first, const Tensor& x, const Tensor& t) {
      const ChunkResult r = run_chunk(in, x, t, keep_grads, Tensor());
      if (losses.defined()) {
        losses.narrow(0, first, x.size(0)).copy_(r.losses);
      } else {
        total.add_(r.losses.sum());
        if (r.target_weights.defined()) total_weight.add_(r.target_weights.sum());
      }
      if (keep_grads) add_chunk_gradients(grads, r.grad_logits, x, in.weight, first);
    });
    // The mean divides by the targets' weights (the rows not ignored, without class weights), or
    // with probability targets by the rows, as cross_entropy's.
    Tensor divisor;
    if (reduction == kMean) divisor = probabilities ? full({}, static_cast<double>(batch), acc_options) : total_weight;
    loss = reduction == kNone ? losses : reduction == kSum ? total : total / divisor;
    loss = loss.to(input_dtype);
    if (keep_grads && reduction == kMean) {
      for (Tensor* g : {&grads.input, &grads.weight, &grads.bias}) {
        if (g->defined()) g->div_(divisor);
      }
    }
  }
  if (!recording) return loss;

  const char* name = "LinearCrossEntropyBackward0";
  if (reduction != kNone) {
    // The gradients of the forward, scaled by the loss's gradient: in place unless a second
    // backward is allowed, after which they are gone.
    auto kept = std::make_shared<Gradients>(std::move(grads));
    autograd::record(name, {&input, &linear_weight, &linear_bias}, {&loss},
                     [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                       // First derivatives only: with create_graph too, gradients without a graph.
                       NoGradGuard first_order;
                       TD_CHECK(kept->input.defined() || kept->weight.defined() || kept->bias.defined(), kOp,
                                ": the chunked backward ran already and used its gradients; set ",
                                "allow_retain_graph in the options to run it again");
                       const Tensor scale = g[0].to(plan.acc_dtype);
                       Gradients scaled;
                       for (auto [from, to] : {std::pair{&kept->input, &scaled.input},
                                               std::pair{&kept->weight, &scaled.weight},
                                               std::pair{&kept->bias, &scaled.bias}}) {
                         if (!from->defined()) continue;
                         *to = allow_retain_graph ? *from * scale : from->mul_(scale);
                       }
                       if (!allow_retain_graph) *kept = Gradients();
                       return in_dtypes(scaled, input_dtype, weight_dtype, bias_dtype);
                     });
    return loss;
  }
  // reduction none: each chunk again, its gradients scaled by its rows' gradients.
  SavedTensor saved_input(input, false), saved_weight(linear_weight, false), saved_target(target, false);
  SavedTensor saved_bias = SavedTensor::input_if(linear_bias.defined(), linear_bias);
  SavedTensor saved_class = SavedTensor::input_if(class_weight.defined(), class_weight);
  autograd::record(name, {&input, &linear_weight, &linear_bias}, {&loss},
                   [=](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                     NoGradGuard first_order;  // first derivatives only, as above
                     const Tensor x_all = saved_input.unpack(name), t_all = saved_target.unpack(name);
                     const Operands in = operands_in(
                         plan.acc_dtype, saved_weight.unpack(name),
                         saved_bias.defined() ? saved_bias.unpack(name) : Tensor(),
                         saved_class.defined() ? saved_class.unpack(name) : Tensor(), ignore_index, probabilities);
                     Gradients out = zero_gradients(want_input, want_weight, want_bias, x_all.size(0), in);
                     const Tensor row_scale = g[0].to(plan.acc_dtype);
                     for_each_chunk(x_all, t_all, in, plan.batch_chunk_size,
                                    [&](int64_t first, const Tensor& x, const Tensor& t) {
                                      const ChunkResult r =
                                          run_chunk(in, x, t, true, row_scale.narrow(0, first, x.size(0)));
                                      add_chunk_gradients(out, r.grad_logits, x, in.weight, first);
                                    });
                     return in_dtypes(out, input_dtype, weight_dtype, bias_dtype);
                   });
  return loss;
}

}  // namespace

Tensor linear_cross_entropy(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                            const Tensor& linear_bias, const Tensor& weight, Reduction reduction,
                            std::optional<int64_t> ignore_index, double label_smoothing,
                            const std::optional<LinearCrossEntropyOptions>& options) {
  TD_CHECK(input.defined() && linear_weight.defined() && target.defined(), kOp,
           ": input, linear_weight and target must be defined");
  TD_CHECK(input.dim() == 1 || input.dim() == 2, kOp, ": expected an input of 1 or 2 dims, got ",
           shape_str(input.sizes()));
  TD_CHECK(linear_weight.dim() >= 2, kOp, ": expected a linear_weight of 2 or more dims, got ",
           shape_str(linear_weight.sizes()));
  const int64_t in_features = input.size(-1), classes = linear_weight.size(0);
  TD_CHECK(linear_weight.size(-1) == in_features, kOp, ": the input ", shape_str(input.sizes()),
           " and linear_weight ", shape_str(linear_weight.sizes()), " must have equal last dims (in_features)");
  const Shape out_features(linear_weight.sizes().begin() + 1, linear_weight.sizes().end() - 1);
  Shape bias_shape{classes};
  bias_shape.insert(bias_shape.end(), out_features.begin(), out_features.end());
  TD_CHECK(!linear_bias.defined() || linear_bias.sizes() == bias_shape, kOp, ": expected linear_bias of shape ",
           shape_str(bias_shape), ", got ", shape_str(linear_bias.sizes()));
  TD_CHECK(out_features.empty() || input.dim() == 2, kOp, ": a K-dimensional loss (linear_weight ",
           shape_str(linear_weight.sizes()), ") needs a batched input [N, ", in_features, "], got ",
           shape_str(input.sizes()));
  TD_CHECK(reduction != kBatchMean, kOp, ": reduction batchmean is for kl_div; use mean, sum or none");
  Shape logits_shape(input.sizes().begin(), input.sizes().end() - 1);
  logits_shape.insert(logits_shape.end(), bias_shape.begin(), bias_shape.end());
  const bool probabilities = target.sizes() == logits_shape;
  TD_CHECK(!(probabilities && ignore_index), kOp, ": ignore_index cannot be given with probability targets");
  const int64_t ignore = ignore_index.value_or(-100);

  // PyTorch's conditions for the chunked path.
  const bool chunkable =
      options && label_smoothing == 0 && out_features.empty() &&
      (target.dtype() == kInt64 ||
       (probabilities && target.dtype() == input.dtype() && !(target.requires_grad() && is_grad_enabled())));
  if (chunkable) {
    TD_CHECK(is_floating(linear_weight.dtype()) && (!linear_bias.defined() || is_floating(linear_bias.dtype())), kOp,
             ": linear_weight (", linear_weight.dtype(), ") and linear_bias must be floating");
    TD_CHECK(linear_weight.device() == input.device() && target.device() == input.device() &&
                 (!linear_bias.defined() || linear_bias.device() == input.device()) &&
                 (!weight.defined() || weight.device() == input.device()),
             kOp, ": every tensor must be on the input's device (", input.device(), ")");
    TD_CHECK(is_floating(input.dtype()), kOp, ": expected a floating input, got ", input.dtype());
    TD_CHECK(!weight.defined() || weight.sizes() == Shape{classes}, kOp, ": weight must have shape [", classes,
             "], got ", shape_str(weight.sizes()));
    const bool batched = input.dim() == 2;
    const Tensor x = batched ? input : input.unsqueeze(0), t = batched ? target : target.unsqueeze(0);
    const Shape target_rows = probabilities ? Shape{x.size(0), classes} : Shape{x.size(0)};
    TD_CHECK(t.sizes() == target_rows, kOp, ": input ", shape_str(input.sizes()), " needs a target of class indices ",
             shape_str(batched ? Shape{x.size(0)} : Shape{}), " or of probabilities ", shape_str(logits_shape),
             ", got ", shape_str(target.sizes()));
    const LinearCrossEntropyPlan plan = linear_cross_entropy_plan(*options, x.size(0), in_features, classes,
                                                                  input.dtype(), input.device(), probabilities);
    const Tensor loss = chunked(x, linear_weight, t, linear_bias, weight, reduction, ignore, plan,
                                options->allow_retain_graph_);
    return !batched && reduction == kNone ? loss.squeeze(0) : loss;
  }
  // The reference: linear over the flattened weight, the logits reshaped to [N, C, d...].
  const int64_t outputs = numel_of(bias_shape);
  const Tensor logits = linear(input, linear_weight.reshape({outputs, in_features}),
                               linear_bias.defined() ? linear_bias.reshape({outputs}) : Tensor())
                            .reshape(logits_shape);
  return cross_entropy(logits, target, weight, ignore, reduction, label_smoothing);
}

}  // namespace functional

LinearCrossEntropyLossImpl::LinearCrossEntropyLossImpl(int64_t in_features_, int64_t num_classes_,
                                                       LinearCrossEntropyLossOptions options_)
    : Cloneable("LinearCrossEntropyLoss"),
      in_features(in_features_),
      num_classes(num_classes_),
      options(std::move(options_)) {
  TD_CHECK(!options.weight_.defined() || options.weight_.sizes() == Shape{num_classes}, "LinearCrossEntropyLoss: ",
           "expected weight of shape [", num_classes, "], got ", shape_str(options.weight_.sizes()));
  TD_CHECK(options.label_smoothing_ >= 0 && options.label_smoothing_ <= 1, "LinearCrossEntropyLoss: ",
           "label_smoothing must be in [0, 1], got ", python_float(options.label_smoothing_));
  reset();
}

void LinearCrossEntropyLossImpl::reset() {
  weight = options.weight_.defined() ? register_buffer("weight", options.weight_) : Tensor();
  const int64_t outputs = num_classes * numel_of(options.out_features_);
  linear = register_module("linear", Linear(LinearOptions(in_features, outputs).bias(options.bias_)));
}

Tensor LinearCrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  Shape weight_shape{num_classes}, bias_shape{num_classes};
  weight_shape.insert(weight_shape.end(), options.out_features_.begin(), options.out_features_.end());
  bias_shape = weight_shape;
  weight_shape.push_back(in_features);
  const Tensor bias = linear->bias.defined() ? linear->bias.reshape(bias_shape) : Tensor();
  return functional::linear_cross_entropy(input, linear->weight.reshape(weight_shape), target, bias, weight,
                                          options.reduction_, options.ignore_index_, options.label_smoothing_,
                                          options.options_);
}

std::string LinearCrossEntropyLossImpl::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", num_classes=" + std::to_string(num_classes) +
         ", out_features=" + python_tuple(options.out_features_) + ", bias=" + python_bool(options.bias_) +
         ", reduction=" + functional::reduction_name(options.reduction_) +
         ", ignore_index=" + (options.ignore_index_ ? std::to_string(*options.ignore_index_) : "None") +
         ", label_smoothing=" + python_float(options.label_smoothing_) +
         ", options=" + (options.options_ ? options_repr(*options.options_) : "None");
}

}  // namespace tandem::nn
