// AdaptiveLogSoftmaxWithLoss: PyTorch's efficient softmax over many classes (Grave et al.), for
// language models whose vocabulary's frequencies fall off: the frequent classes (the shortlist,
// below cutoffs[0]) and one entry per rarer cluster share a head; a cluster's classes get a smaller
// projection of the input (in_features / div_value^(i + 1) wide) and their own softmax.
#pragma once

#include <vector>

#include "nn/layers.h"
#include "nn/modules.h"

namespace tandem::nn {

struct AdaptiveLogSoftmaxWithLossOptions {
  // cutoffs: increasing, unique, each in [1, n_classes - 1]; they split the classes into the
  // shortlist [0, cutoffs[0]) and clusters [cutoffs[i], cutoffs[i + 1]) (the last up to n_classes).
  AdaptiveLogSoftmaxWithLossOptions(int64_t in_features, int64_t n_classes, std::vector<int64_t> cutoffs)
      : in_features_(in_features), n_classes_(n_classes), cutoffs_(std::move(cutoffs)) {}
  AdaptiveLogSoftmaxWithLossOptions& div_value(double v) { div_value_ = v; return *this; }
  AdaptiveLogSoftmaxWithLossOptions& head_bias(bool b) { head_bias_ = b; return *this; }
  int64_t in_features_, n_classes_;
  std::vector<int64_t> cutoffs_;
  double div_value_ = 4.0;
  bool head_bias_ = false;
};

// forward's result: each example's log-probability of its target ([N], or 0-dim for one example)
// and the loss, their negated mean.
struct ASMoutput {
  Tensor output, loss;
};

// Submodules as PyTorch's, so state_dicts are interchangeable: head (Linear to the shortlist and
// one entry per cluster), tail (a ModuleList of Sequential(Linear, Linear) per cluster, no biases).
class AdaptiveLogSoftmaxWithLossImpl : public Cloneable<AdaptiveLogSoftmaxWithLossImpl> {
 public:
  explicit AdaptiveLogSoftmaxWithLossImpl(const AdaptiveLogSoftmaxWithLossOptions& options);
  void reset() override;
  void reset_parameters();
  // input [N, in_features] with target [N] class indices, or input [in_features] with a 0-dim target.
  ASMoutput forward(const Tensor& input, const Tensor& target);
  // The log-probability of every class: [N, n_classes] for input [N, in_features].
  Tensor log_prob(const Tensor& input);
  // Each example's most probable class, [N]: log_prob(input).argmax(1), computing the clusters'
  // probabilities only where the head prefers a cluster.
  Tensor predict(const Tensor& input);

  AdaptiveLogSoftmaxWithLossOptions options;
  int64_t shortlist_size, n_clusters, head_size;
  Linear head{nullptr};
  ModuleList tail{nullptr};

 private:
  Tensor full_log_prob(const Tensor& input, const Tensor& head_output);
};
class AdaptiveLogSoftmaxWithLoss : public ModuleHolder<AdaptiveLogSoftmaxWithLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

}  // namespace tandem::nn
