// The loss modules of td::nn: module forms of the losses in nn/functional.h (forward(input, target)).
#pragma once

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
};

class L1LossImpl : public Cloneable<L1LossImpl> {
 public:
  explicit L1LossImpl(Reduction reduction = kMean) : Cloneable("L1Loss"), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target) {
    return functional::l1_loss(input, target, reduction);
  }
  Reduction reduction;
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
