// The loss modules of td::nn: module forms of the losses in nn/functional.h (forward(input, target)).
#pragma once

#include <tuple>

#include "nn/functional.h"
#include "nn/module.h"

namespace tandem::nn {

class MSELossImpl : public Cloneable<MSELossImpl> {
 public:
  explicit MSELossImpl(Reduction reduction = kMean) : Cloneable("MSELoss"), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::mse_loss(input, target, reduction);
  }
  Reduction reduction;
  // What a clone or a replica takes from its original (Module::copy_settings_from).
  auto settings() { return std::tie(reduction); }
};

class L1LossImpl : public Cloneable<L1LossImpl> {
 public:
  explicit L1LossImpl(Reduction reduction = kMean) : Cloneable("L1Loss"), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::l1_loss(input, target, reduction);
  }
  Reduction reduction;
  auto settings() { return std::tie(reduction); }
};

struct CrossEntropyLossOptions {
  CrossEntropyLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  CrossEntropyLossOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  CrossEntropyLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  CrossEntropyLossOptions& label_smoothing(double s) { label_smoothing_ = s; return *this; }
  Tensor weight_;
  int64_t ignore_index_ = -100;
  Reduction reduction_ = kMean;
  double label_smoothing_ = 0;
};

class CrossEntropyLossImpl : public Cloneable<CrossEntropyLossImpl> {
 public:
  explicit CrossEntropyLossImpl(CrossEntropyLossOptions options = {})
      : Cloneable("CrossEntropyLoss"), options(std::move(options)) {
    reset();
  }
  void reset() override {
    weight = options.weight_.defined() ? register_buffer("weight", options.weight_) : Tensor();
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::cross_entropy(input, target, weight, options.ignore_index_, options.reduction_,
                                     options.label_smoothing_);
  }
  CrossEntropyLossOptions options;
  // The registered buffer, which to(), load_state_dict() and clone() act on; options.weight_ is
  // only what it was made from.
  Tensor weight;
};

struct NLLLossOptions {
  NLLLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  NLLLossOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  NLLLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_;
  int64_t ignore_index_ = -100;
  Reduction reduction_ = kMean;
};

class NLLLossImpl : public Cloneable<NLLLossImpl> {
 public:
  explicit NLLLossImpl(NLLLossOptions options = {}) : Cloneable("NLLLoss"), options(std::move(options)) { reset(); }
  void reset() override {
    weight = options.weight_.defined() ? register_buffer("weight", options.weight_) : Tensor();
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::nll_loss(input, target, weight, options.ignore_index_, options.reduction_);
  }
  NLLLossOptions options;
  Tensor weight;  // the registered buffer (see CrossEntropyLossImpl)
};

struct BCEWithLogitsLossOptions {
  BCEWithLogitsLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  BCEWithLogitsLossOptions& pos_weight(Tensor w) { pos_weight_ = std::move(w); return *this; }
  BCEWithLogitsLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_, pos_weight_;
  Reduction reduction_ = kMean;
};

class BCEWithLogitsLossImpl : public Cloneable<BCEWithLogitsLossImpl> {
 public:
  explicit BCEWithLogitsLossImpl(BCEWithLogitsLossOptions options = {})
      : Cloneable("BCEWithLogitsLoss"), options(std::move(options)) {
    reset();
  }
  void reset() override {
    weight = options.weight_.defined() ? register_buffer("weight", options.weight_) : Tensor();
    pos_weight = options.pos_weight_.defined() ? register_buffer("pos_weight", options.pos_weight_) : Tensor();
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::binary_cross_entropy_with_logits(input, target, weight, pos_weight, options.reduction_);
  }
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;  // the registered buffers (see CrossEntropyLossImpl)
};

class SmoothL1LossImpl : public Cloneable<SmoothL1LossImpl> {
 public:
  explicit SmoothL1LossImpl(Reduction reduction = kMean, double beta = 1.0)
      : Cloneable("SmoothL1Loss"), reduction(reduction), beta(beta) {
    TD_CHECK(beta >= 0, "SmoothL1Loss: beta must not be negative, got ", beta);
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::smooth_l1_loss(input, target, reduction, beta);
  }
  Reduction reduction;
  double beta;
  auto settings() { return std::tie(reduction, beta); }
};

class HuberLossImpl : public Cloneable<HuberLossImpl> {
 public:
  explicit HuberLossImpl(Reduction reduction = kMean, double delta = 1.0)
      : Cloneable("HuberLoss"), reduction(reduction), delta(delta) {
    TD_CHECK(delta > 0, "HuberLoss: delta must be positive, got ", delta);
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::huber_loss(input, target, reduction, delta);
  }
  Reduction reduction;
  double delta;
  auto settings() { return std::tie(reduction, delta); }
};

struct BCELossOptions {
  BCELossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  BCELossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_;
  Reduction reduction_ = kMean;
};

class BCELossImpl : public Cloneable<BCELossImpl> {
 public:
  explicit BCELossImpl(BCELossOptions options = {}) : Cloneable("BCELoss"), options(std::move(options)) { reset(); }
  void reset() override {
    weight = options.weight_.defined() ? register_buffer("weight", options.weight_) : Tensor();
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::binary_cross_entropy(input, target, weight, options.reduction_);
  }
  BCELossOptions options;
  Tensor weight;  // the registered buffer (see CrossEntropyLossImpl)
};

struct KLDivLossOptions {
  KLDivLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  KLDivLossOptions& log_target(bool l) { log_target_ = l; return *this; }
  Reduction reduction_ = kMean;
  bool log_target_ = false;
};

// kl_div of the input's log-probabilities from the target's distribution; use
// reduction(kBatchMean) for the divergence per sample.
class KLDivLossImpl : public Cloneable<KLDivLossImpl> {
 public:
  explicit KLDivLossImpl(KLDivLossOptions options = {}) : Cloneable("KLDivLoss"), options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::kl_div(input, target, options.reduction_, options.log_target_);
  }
  KLDivLossOptions options;
};

// ---- margin and likelihood losses (functional:: forms in nn/functional.h) ----

struct MarginLossOptions {
  MarginLossOptions& margin(double m) { margin_ = m; return *this; }
  MarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  double margin_ = 0;
  Reduction reduction_ = kMean;
};
using MarginRankingLossOptions = MarginLossOptions;
using CosineEmbeddingLossOptions = MarginLossOptions;

class MarginRankingLossImpl : public Cloneable<MarginRankingLossImpl> {
 public:
  explicit MarginRankingLossImpl(MarginLossOptions options = {}) : Cloneable("MarginRankingLoss"), options(options) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
    return functional::margin_ranking_loss(input1, input2, target, options.margin_, options.reduction_);
  }
  MarginLossOptions options;
};

class CosineEmbeddingLossImpl : public Cloneable<CosineEmbeddingLossImpl> {
 public:
  explicit CosineEmbeddingLossImpl(MarginLossOptions options = {})
      : Cloneable("CosineEmbeddingLoss"), options(options) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
    return functional::cosine_embedding_loss(input1, input2, target, options.margin_, options.reduction_);
  }
  MarginLossOptions options;
};

// margin 1 by default, as PyTorch's.
struct HingeEmbeddingLossOptions {
  HingeEmbeddingLossOptions& margin(double m) { margin_ = m; return *this; }
  HingeEmbeddingLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  double margin_ = 1.0;
  Reduction reduction_ = kMean;
};

class HingeEmbeddingLossImpl : public Cloneable<HingeEmbeddingLossImpl> {
 public:
  explicit HingeEmbeddingLossImpl(HingeEmbeddingLossOptions options = {})
      : Cloneable("HingeEmbeddingLoss"), options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::hinge_embedding_loss(input, target, options.margin_, options.reduction_);
  }
  HingeEmbeddingLossOptions options;
};

class SoftMarginLossImpl : public Cloneable<SoftMarginLossImpl> {
 public:
  explicit SoftMarginLossImpl(Reduction reduction = kMean) : Cloneable("SoftMarginLoss"), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::soft_margin_loss(input, target, reduction);
  }
  Reduction reduction;
  auto settings() { return std::tie(reduction); }
};

struct TripletMarginLossOptions {
  TripletMarginLossOptions& margin(double m) { margin_ = m; return *this; }
  TripletMarginLossOptions& p(double p) { p_ = p; return *this; }
  TripletMarginLossOptions& eps(double e) { eps_ = e; return *this; }
  TripletMarginLossOptions& swap(bool s) { swap_ = s; return *this; }
  TripletMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  double margin_ = 1.0, p_ = 2, eps_ = 1e-6;
  bool swap_ = false;
  Reduction reduction_ = kMean;
};

class TripletMarginLossImpl : public Cloneable<TripletMarginLossImpl> {
 public:
  explicit TripletMarginLossImpl(TripletMarginLossOptions options = {})
      : Cloneable("TripletMarginLoss"), options(options) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
    return functional::triplet_margin_loss(anchor, positive, negative, options.margin_, options.p_, options.eps_,
                                           options.swap_, options.reduction_);
  }
  TripletMarginLossOptions options;
};

struct TripletMarginWithDistanceLossOptions {
  TripletMarginWithDistanceLossOptions& distance_function(functional::DistanceFunction f) {
    distance_function_ = std::move(f);
    return *this;
  }
  TripletMarginWithDistanceLossOptions& margin(double m) { margin_ = m; return *this; }
  TripletMarginWithDistanceLossOptions& swap(bool s) { swap_ = s; return *this; }
  TripletMarginWithDistanceLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  functional::DistanceFunction distance_function_;  // pairwise_distance unless set
  double margin_ = 1.0;
  bool swap_ = false;
  Reduction reduction_ = kMean;
};

class PairwiseDistanceImpl;

// Without a distance function it measures with a PairwiseDistance submodule, as PyTorch's (which
// prints it).
class TripletMarginWithDistanceLossImpl : public Cloneable<TripletMarginWithDistanceLossImpl> {
 public:
  explicit TripletMarginWithDistanceLossImpl(TripletMarginWithDistanceLossOptions options = {});
  void reset() override;
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  TripletMarginWithDistanceLossOptions options;
  // Not the distance function: a clone or a replica keeps the one it was copied with (the
  // original's when it was cloned or the replicas were built).
  auto settings() { return std::tie(options.margin_, options.swap_, options.reduction_); }
};

struct PoissonNLLLossOptions {
  PoissonNLLLossOptions& log_input(bool l) { log_input_ = l; return *this; }
  PoissonNLLLossOptions& full(bool f) { full_ = f; return *this; }
  PoissonNLLLossOptions& eps(double e) { eps_ = e; return *this; }
  PoissonNLLLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  bool log_input_ = true, full_ = false;
  double eps_ = 1e-8;
  Reduction reduction_ = kMean;
};

class PoissonNLLLossImpl : public Cloneable<PoissonNLLLossImpl> {
 public:
  explicit PoissonNLLLossImpl(PoissonNLLLossOptions options = {}) : Cloneable("PoissonNLLLoss"), options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::poisson_nll_loss(input, target, options.log_input_, options.full_, options.eps_,
                                        options.reduction_);
  }
  PoissonNLLLossOptions options;
};

struct GaussianNLLLossOptions {
  GaussianNLLLossOptions& full(bool f) { full_ = f; return *this; }
  GaussianNLLLossOptions& eps(double e) { eps_ = e; return *this; }
  GaussianNLLLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  bool full_ = false;
  double eps_ = 1e-6;
  Reduction reduction_ = kMean;
};

class GaussianNLLLossImpl : public Cloneable<GaussianNLLLossImpl> {
 public:
  explicit GaussianNLLLossImpl(GaussianNLLLossOptions options = {}) : Cloneable("GaussianNLLLoss"), options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var) {
    return functional::gaussian_nll_loss(input, target, var, options.full_, options.eps_, options.reduction_);
  }
  GaussianNLLLossOptions options;
};

struct MultiLabelSoftMarginLossOptions {
  MultiLabelSoftMarginLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  MultiLabelSoftMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  Tensor weight_;
  Reduction reduction_ = kMean;
};

class MultiLabelSoftMarginLossImpl : public Cloneable<MultiLabelSoftMarginLossImpl> {
 public:
  explicit MultiLabelSoftMarginLossImpl(MultiLabelSoftMarginLossOptions options = {})
      : Cloneable("MultiLabelSoftMarginLoss"), options(std::move(options)) {
    reset();
  }
  void reset() override {
    weight = options.weight_.defined() ? register_buffer("weight", options.weight_) : Tensor();
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::multilabel_soft_margin_loss(input, target, weight, options.reduction_);
  }
  MultiLabelSoftMarginLossOptions options;
  Tensor weight;  // the registered buffer (see CrossEntropyLossImpl)
};

struct MultiMarginLossOptions {
  MultiMarginLossOptions& p(int64_t p) { p_ = p; return *this; }
  MultiMarginLossOptions& margin(double m) { margin_ = m; return *this; }
  MultiMarginLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  MultiMarginLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  int64_t p_ = 1;
  double margin_ = 1.0;
  Tensor weight_;
  Reduction reduction_ = kMean;
};

class MultiMarginLossImpl : public Cloneable<MultiMarginLossImpl> {
 public:
  explicit MultiMarginLossImpl(MultiMarginLossOptions options = {})
      : Cloneable("MultiMarginLoss"), options(std::move(options)) {
    TD_CHECK(this->options.p_ == 1 || this->options.p_ == 2, "MultiMarginLoss: p must be 1 or 2, got ",
             this->options.p_);
    reset();
  }
  void reset() override {
    weight = options.weight_.defined() ? register_buffer("weight", options.weight_) : Tensor();
  }
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::multi_margin_loss(input, target, options.p_, options.margin_, weight, options.reduction_);
  }
  MultiMarginLossOptions options;
  Tensor weight;  // the registered buffer (see CrossEntropyLossImpl)
};

class MultiLabelMarginLossImpl : public Cloneable<MultiLabelMarginLossImpl> {
 public:
  explicit MultiLabelMarginLossImpl(Reduction reduction = kMean)
      : Cloneable("MultiLabelMarginLoss"), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::multilabel_margin_loss(input, target, reduction);
  }
  Reduction reduction;
  auto settings() { return std::tie(reduction); }
};

struct PairwiseDistanceOptions {
  PairwiseDistanceOptions& p(double p) { p_ = p; return *this; }
  PairwiseDistanceOptions& eps(double e) { eps_ = e; return *this; }
  PairwiseDistanceOptions& keepdim(bool k) { keepdim_ = k; return *this; }
  double p_ = 2, eps_ = 1e-6;
  bool keepdim_ = false;
};

class PairwiseDistanceImpl : public Cloneable<PairwiseDistanceImpl> {
 public:
  explicit PairwiseDistanceImpl(PairwiseDistanceOptions options = {})
      : Cloneable("PairwiseDistance"), options(options) {}
  Tensor forward(const Tensor& x1, const Tensor& x2) {
    return functional::pairwise_distance(x1, x2, options.p_, options.eps_, options.keepdim_);
  }
  PairwiseDistanceOptions options;
};

inline TripletMarginWithDistanceLossImpl::TripletMarginWithDistanceLossImpl(
    TripletMarginWithDistanceLossOptions options_)
    : Cloneable("TripletMarginWithDistanceLoss"), options(std::move(options_)) {
  reset();
}

inline void TripletMarginWithDistanceLossImpl::reset() {
  if (!options.distance_function_) register_module("distance_function", std::make_shared<PairwiseDistanceImpl>());
}

inline Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                                         const Tensor& negative) {
  functional::DistanceFunction distance = options.distance_function_;
  if (!distance) {
    auto pairwise = std::static_pointer_cast<PairwiseDistanceImpl>(registered_children().front().second);
    distance = [pairwise](const Tensor& a, const Tensor& b) { return pairwise->forward(a, b); };
  }
  return functional::triplet_margin_with_distance_loss(anchor, positive, negative, distance, options.margin_,
                                                       options.swap_, options.reduction_);
}

struct CTCLossOptions {
  CTCLossOptions& blank(int64_t b) { blank_ = b; return *this; }
  CTCLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  CTCLossOptions& zero_infinity(bool z) { zero_infinity_ = z; return *this; }
  int64_t blank_ = 0;
  Reduction reduction_ = kMean;
  bool zero_infinity_ = false;
};

class CTCLossImpl : public Cloneable<CTCLossImpl> {
 public:
  explicit CTCLossImpl(CTCLossOptions options = {}) : Cloneable("CTCLoss"), options(options) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths) {
    return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, options.blank_,
                                options.reduction_, options.zero_infinity_);
  }
  CTCLossOptions options;
};

#define TD_LOSS_HOLDER(Name)                     \
  class Name : public ModuleHolder<Name##Impl> { \
   public:                                       \
    using ModuleHolder::ModuleHolder;            \
  };
TD_LOSS_HOLDER(MarginRankingLoss)
TD_LOSS_HOLDER(CosineEmbeddingLoss)
TD_LOSS_HOLDER(HingeEmbeddingLoss)
TD_LOSS_HOLDER(SoftMarginLoss)
TD_LOSS_HOLDER(TripletMarginLoss)
TD_LOSS_HOLDER(TripletMarginWithDistanceLoss)
TD_LOSS_HOLDER(PoissonNLLLoss)
TD_LOSS_HOLDER(GaussianNLLLoss)
TD_LOSS_HOLDER(MultiLabelSoftMarginLoss)
TD_LOSS_HOLDER(MultiMarginLoss)
TD_LOSS_HOLDER(MultiLabelMarginLoss)
TD_LOSS_HOLDER(PairwiseDistance)
TD_LOSS_HOLDER(CTCLoss)
#undef TD_LOSS_HOLDER

class MSELoss : public ModuleHolder<MSELossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class L1Loss : public ModuleHolder<L1LossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class CrossEntropyLoss : public ModuleHolder<CrossEntropyLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class NLLLoss : public ModuleHolder<NLLLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class BCEWithLogitsLoss : public ModuleHolder<BCEWithLogitsLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class SmoothL1Loss : public ModuleHolder<SmoothL1LossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class HuberLoss : public ModuleHolder<HuberLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class BCELoss : public ModuleHolder<BCELossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class KLDivLoss : public ModuleHolder<KLDivLossImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

}  // namespace tandem::nn
