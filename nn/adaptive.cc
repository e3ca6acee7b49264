#include "nn/adaptive.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::nn {

namespace F = functional;

AdaptiveLogSoftmaxWithLossImpl::AdaptiveLogSoftmaxWithLossImpl(const AdaptiveLogSoftmaxWithLossOptions& options_)
    : options(options_) {
  const std::vector<int64_t>& c = options.cutoffs_;
  TD_CHECK(!c.empty(), "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of length larger than 0");
  bool valid = c.front() > 0 && c.back() <= options.n_classes_ - 1;
  for (size_t i = 1; i < c.size(); ++i) valid = valid && c[i] > c[i - 1];
  TD_CHECK(valid,
           "AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of unique, positive integers sorted in an "
           "increasing order, where each value is between 1 and n_classes-1; got ",
           dims_str(c), " for ", options.n_classes_, " classes");
  TD_CHECK(options.in_features_ > 0, "AdaptiveLogSoftmaxWithLoss: in_features must be positive, got ",
           options.in_features_);
  TD_CHECK(std::isfinite(options.div_value_) && options.div_value_ > 0,
           "AdaptiveLogSoftmaxWithLoss: div_value must be positive, got ", options.div_value_);
  shortlist_size = c.front();
  n_clusters = static_cast<int64_t>(c.size());
  head_size = shortlist_size + n_clusters;
  reset();
}

void AdaptiveLogSoftmaxWithLossImpl::reset() {
  head = register_module("head", Linear(LinearOptions(options.in_features_, head_size).bias(options.head_bias_)));
  tail = register_module("tail", ModuleList());
  std::vector<int64_t> edges = options.cutoffs_;
  edges.push_back(options.n_classes_);
  for (int64_t i = 0; i < n_clusters; ++i) {
    // PyTorch's width: in_features // div_value^(i + 1), a float floor division.
    const auto hidden = static_cast<int64_t>(std::floor(static_cast<double>(options.in_features_) /
                                                        std::pow(options.div_value_, static_cast<double>(i + 1))));
    tail->push_back(Sequential(Linear(LinearOptions(options.in_features_, hidden).bias(false)),
                               Linear(LinearOptions(hidden, edges[i + 1] - edges[i]).bias(false))));
  }
}

void AdaptiveLogSoftmaxWithLossImpl::reset_parameters() {
  head->reset_parameters();
  for (const auto& cluster : *tail) {
    for (const auto& layer : cluster->children()) std::static_pointer_cast<LinearImpl>(layer)->reset_parameters();
  }
}

ASMoutput AdaptiveLogSoftmaxWithLossImpl::forward(const Tensor& input_, const Tensor& target_) {
  const char* op = "AdaptiveLogSoftmaxWithLoss";
  TD_CHECK(input_.defined() && target_.defined(), op, ": input and target must be defined");
  TD_CHECK(target_.dim() <= 1, op, ": 0D or 1D target tensor expected, multi-target not supported, got ",
           shape_str(target_.sizes()));
  TD_CHECK(!is_floating(target_.dtype()) && target_.dtype() != kBool, op, ": target must hold class indices, got ",
           target_.dtype());
  if (target_.dim() == 1) {
    TD_CHECK(input_.dim() == 2, op, ": 1D target tensor expects 2D input tensors, but found inputs with size ",
             shape_str(input_.sizes()));
    TD_CHECK(input_.size(0) == target_.size(0), op,
             ": Input and target should have the same size in the batch dimension, got ", shape_str(input_.sizes()),
             " and ", shape_str(target_.sizes()));
  } else {
    TD_CHECK(input_.dim() == 1, op, ": 0D target tensor expects 1D input tensors, but found inputs with size ",
             shape_str(input_.sizes()));
  }
  const bool batched = target_.dim() == 1;
  const Tensor input = batched ? input_ : input_.unsqueeze(0);
  const Tensor target = (batched ? target_ : target_.unsqueeze(0)).to(kInt64);
  if (target.numel() > 0) {
    NoGradGuard no_grad;
    const int64_t low = target.min().item<int64_t>(), high = target.max().item<int64_t>();
    TD_CHECK(low >= 0 && high < options.n_classes_, op, ": Target values should be in [0, ", options.n_classes_ - 1,
             "], but values in range [", low, ", ", high, "] were found.");
  }
  std::vector<int64_t> edges = options.cutoffs_;
  edges.push_back(options.n_classes_);
  // Each example's log-probability within its cluster (0 for the shortlist's), and the head entry
  // that adds the cluster's (the class itself for the shortlist's).
  Tensor output = zeros({target.size(0)}, input.options());
  Tensor head_entry = target;
  for (int64_t i = 0; i < n_clusters; ++i) {
    const Tensor rows = nonzero(logical_and(target >= edges[i], target < edges[i + 1])).flatten();
    if (rows.numel() == 0) continue;
    const Tensor relative = target.index_select(0, rows) - edges[i];
    const Tensor logprob = log_softmax((*tail)[i]->forward(input.index_select(0, rows)), 1);
    output = output.index_copy(0, rows, logprob.gather(1, relative.unsqueeze(1)).squeeze(1));
    head_entry = head_entry.index_fill(0, rows, shortlist_size + i);
  }
  const Tensor head_logprob = log_softmax(head(input), 1);
  output = output + head_logprob.gather(1, head_entry.unsqueeze(1)).squeeze(1);
  const Tensor loss = (-output).mean();
  return {batched ? output : output.squeeze(0), loss};
}

Tensor AdaptiveLogSoftmaxWithLossImpl::full_log_prob(const Tensor& input, const Tensor& head_output) {
  const Tensor head_logprob = log_softmax(head_output, 1);
  std::vector<Tensor> parts = {head_logprob.narrow(1, 0, shortlist_size)};
  for (int64_t i = 0; i < n_clusters; ++i) {
    parts.push_back(log_softmax((*tail)[i]->forward(input), 1) + head_logprob.narrow(1, shortlist_size + i, 1));
  }
  return cat(parts, 1);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::log_prob(const Tensor& input) {
  TD_CHECK(input.defined() && input.dim() == 2 && input.size(1) == options.in_features_,
           "AdaptiveLogSoftmaxWithLoss.log_prob: expected an input [N, ", options.in_features_, "], got ",
           input.defined() ? shape_str(input.sizes()) : std::string("an undefined tensor"));
  return full_log_prob(input, head(input));
}

Tensor AdaptiveLogSoftmaxWithLossImpl::predict(const Tensor& input) {
  TD_CHECK(input.defined() && input.dim() == 2 && input.size(1) == options.in_features_,
           "AdaptiveLogSoftmaxWithLoss.predict: expected an input [N, ", options.in_features_, "], got ",
           input.defined() ? shape_str(input.sizes()) : std::string("an undefined tensor"));
  const Tensor head_output = head(input);
  Tensor output = head_output.argmax(1);
  const Tensor in_cluster = output >= shortlist_size;
  const Tensor rows = nonzero(in_cluster).flatten();
  if (rows.numel() == 0) return output;
  const Tensor best = full_log_prob(input.index_select(0, rows), head_output.index_select(0, rows)).argmax(1);
  return output.index_copy(0, rows, best);
}

}  // namespace tandem::nn
