// Cross-entropy of a linear layer's logits, as PyTorch's F.linear_cross_entropy and
// nn.LinearCrossEntropyLoss: loss = cross_entropy(linear(input, linear_weight, linear_bias), target).
// With options, the batch is taken a chunk of rows at a time, so the [N, C] logits of a large
// vocabulary never exist whole: each chunk's logits give its losses and (for mean and sum) the
// gradients at once, which backward only scales.
#pragma once

#include <optional>
#include <string>

#include "nn/functional.h"
#include "nn/layers.h"
#include "nn/module.h"

namespace tandem::nn {

// How the chunked path runs, with PyTorch's fields and defaults (each checked when set).
struct LinearCrossEntropyOptions {
  // mean and sum keep their gradients from the forward and backward scales them in place, so a
  // second backward through the same loss is refused; true keeps them (a copy per backward).
  // reduction none recomputes each chunk in backward and always allows it.
  LinearCrossEntropyOptions& allow_retain_graph(bool allow);
  // Rows per chunk (positive); none: from chunking_method.
  LinearCrossEntropyOptions& batch_chunk_size(std::optional<int64_t> rows);
  // "auto" (the default: aspect_ratio, or batch_chunk_size where given), "aspect_ratio" (chunks
  // whose [rows, C] logits hold about as much as the [N, in_features] input: the next power of
  // two of ceil(N / ceil(C / in_features)) rows), "aspect_ratio:K" (that divided by K), or none
  // (batch_chunk_size, else the whole batch). A batch_chunk_size and a method giving another
  // size is an error.
  LinearCrossEntropyOptions& chunking_method(std::optional<std::string> method);
  // "auto", "accurate" or "compact", as PyTorch's: "auto" is "accurate" for a 16-bit input on the
  // CPU and "compact" otherwise; "auto" chunking under "compact" keeps each chunk's logits within
  // the whole batch's (at most a power of two of N C / (4 in_features) rows, N / 2 with
  // probability targets), and "auto" alone picks float32 as a 16-bit input's acc_dtype.
  LinearCrossEntropyOptions& acc_policy(std::string policy);
  // The dtype each chunk's logits, softmax and gradients are computed in: the input's, or
  // float32 beside a 16-bit input; none: as acc_policy says.
  LinearCrossEntropyOptions& acc_dtype(std::optional<DType> dtype);

  bool allow_retain_graph_ = false;
  std::optional<int64_t> batch_chunk_size_;
  std::optional<std::string> chunking_method_ = "auto";
  std::string acc_policy_ = "auto";
  std::optional<DType> acc_dtype_;
};
// As PyTorch prints them: LinearCrossEntropyOptions(allow_retain_graph=False, ...).
std::string options_repr(const LinearCrossEntropyOptions& options);

// What the chunked path takes for a batch of `batch` rows of an input of `dtype` on `device`:
// rows per chunk and the dtype of each chunk's arithmetic, resolved from the options as PyTorch
// resolves its own (an error where batch_chunk_size and chunking_method disagree).
struct LinearCrossEntropyPlan {
  int64_t batch_chunk_size;
  DType acc_dtype;
};
LinearCrossEntropyPlan linear_cross_entropy_plan(const LinearCrossEntropyOptions& options, int64_t batch,
                                                 int64_t in_features, int64_t num_classes, DType dtype, Device device,
                                                 bool probability_target = false);

namespace functional {

// input [N, in_features] (or [in_features]); linear_weight [C, in_features], or
// [C, d1, ..., dK, in_features] for a K-dimensional loss over [N, C, d1, ..., dK] logits (batched
// input only); linear_bias [C] (or [C, d1, ..., dK]); target: class indices (int64 [N, d...]) or
// probabilities of the logits' shape; weight, reduction, label_smoothing as cross_entropy's;
// ignore_index none is -100 (given with probability targets, an error). Without options: linear,
// then cross_entropy, differentiable to any order. With options, where the chunked path applies
// (no label smoothing; index targets, or probabilities of the input's dtype not requiring grad; a
// 2-D linear_weight), the chunked path, as PyTorch's: first derivatives only (with create_graph
// too, gradients without a graph of their own), none for the class weight; linear_weight and
// linear_bias may have other floating dtypes than the input (a float32 weight beside bfloat16
// activations), each chunk computed in acc_dtype and each gradient returned in its tensor's
// dtype. 16-bit gradients are summed over the chunks in float32 and rounded once (PyTorch's sum
// in the input's dtype, a little less exactly). Elsewhere PyTorch warns and takes the reference
// path, as tandem does without the warning.
Tensor linear_cross_entropy(const Tensor& input, const Tensor& linear_weight, const Tensor& target,
                            const Tensor& linear_bias = Tensor(), const Tensor& weight = Tensor(),
                            Reduction reduction = kMean, std::optional<int64_t> ignore_index = std::nullopt,
                            double label_smoothing = 0.0,
                            const std::optional<LinearCrossEntropyOptions>& options = std::nullopt);

}  // namespace functional

struct LinearCrossEntropyLossOptions {
  LinearCrossEntropyLossOptions& out_features(Shape dims) { out_features_ = std::move(dims); return *this; }
  LinearCrossEntropyLossOptions& bias(bool b) { bias_ = b; return *this; }
  LinearCrossEntropyLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  LinearCrossEntropyLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  LinearCrossEntropyLossOptions& ignore_index(std::optional<int64_t> i) { ignore_index_ = i; return *this; }
  LinearCrossEntropyLossOptions& label_smoothing(double s) { label_smoothing_ = s; return *this; }
  LinearCrossEntropyLossOptions& options(std::optional<LinearCrossEntropyOptions> o) {
    options_ = std::move(o);
    return *this;
  }
  Shape out_features_;
  bool bias_ = false;
  Reduction reduction_ = kMean;
  Tensor weight_;
  std::optional<int64_t> ignore_index_;
  double label_smoothing_ = 0;
  std::optional<LinearCrossEntropyOptions> options_;
};

// The loss with its linear layer, as PyTorch's: the submodule "linear" holds the weight as
// [C * d1 * ... * dK, in_features] (and the bias flat), reshaped for each forward; the class
// weight is the buffer "weight". forward(input, target) as functional::linear_cross_entropy.
class LinearCrossEntropyLossImpl : public Cloneable<LinearCrossEntropyLossImpl> {
 public:
  LinearCrossEntropyLossImpl(int64_t in_features, int64_t num_classes, LinearCrossEntropyLossOptions options = {});
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& target);
  std::string extra_repr() const override;

  int64_t in_features, num_classes;
  LinearCrossEntropyLossOptions options;
  Linear linear = nullptr;
  Tensor weight;  // the registered buffer (options.weight_ is what it was made from)
};
class LinearCrossEntropyLoss : public ModuleHolder<LinearCrossEntropyLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

}  // namespace tandem::nn
