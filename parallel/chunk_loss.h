// What DataParallel::forward_with_loss makes of a criterion's result in one replica: that
// chunk's part of the whole batch's loss. A batch's mean is a sum over rows divided by a
// denominator that is a sum over rows too: the rows themselves for most losses, but the class
// weights of the targets for cross-entropy with `weight`, and only the rows not ignored with
// `ignore_index`. Weighting each chunk's mean by its rows is exact only in the first case; adding
// up the chunks' sums and denominators is exact in all. tandem's loss modules are computed here as
// sums and denominators, their weight buffers moved to the chunk's device.
#pragma once

#include <type_traits>

#include "core/error.h"
#include "nn/loss.h"

namespace tandem::parallel {

// A criterion for forward_with_loss may return one of these instead of a 0-dim mean: the sum of
// the chunk's losses and what its mean would divide them by. The batch's loss is the sum of all
// chunks' sums over the sum of their denominators; without a denominator, the sum of the sums
// (a loss with reduction sum).
struct LossSum {
  Tensor sum;
  Tensor denominator;  // 0-dim; undefined: the sums are added up as they are
};

namespace detail {

// The module a criterion names: the Impl a holder points to, or the Impl itself.
template <typename C>
const auto& loss_impl(const C& criterion) {
  if constexpr (requires { criterion.get(); }) {
    return *criterion.get();
  } else {
    return criterion;
  }
}

// Whether C, without reference and const, is one of Modules.
template <typename C, typename... Modules>
constexpr bool is_one_of = (std::is_same_v<std::remove_cvref_t<C>, Modules> || ...);

// Whether forward_with_loss computes this criterion's chunk sums itself: cross-entropy and
// negative log-likelihood modules, whose means divide by the targets' class weights.

template <typename C>
constexpr bool is_class_loss_module =
    is_one_of<C, nn::CrossEntropyLoss, nn::CrossEntropyLossImpl, nn::NLLLoss, nn::NLLLossImpl>;

// The weight of each target's class summed over the targets not ignored: the denominator of
// cross-entropy's and NLL's mean over class indices.
inline Tensor target_weight_sum(const Tensor& target_in, const Tensor& weight, int64_t ignore_index, DType dtype) {
  const Tensor target = target_in.dtype() == kUInt8 ? target_in.to(kInt64) : target_in;  // as the losses take it
  Tensor counted = target != ignore_index;
  if (!weight.defined()) return counted.sum().to(dtype);
  Tensor classes = where(counted, target, 0).reshape({-1});
  Tensor w = weight.to(target.device()).index_select(0, classes).view(target.sizes()).to(dtype);
  return where(counted, w, 0).sum();
}

inline void check_reduction(Reduction reduction, const char* name, bool batchmean_allowed = false) {
  TD_CHECK(reduction != Reduction::None, "DataParallel::forward_with_loss: ", name,
           " has reduction none, a loss per row; forward_with_loss needs a reduced loss (mean or sum)");
  TD_CHECK(reduction != Reduction::BatchMean || batchmean_allowed, "DataParallel::forward_with_loss: ", name,
           ": reduction batchmean is KLDivLoss's only; use mean or sum");
}

// One chunk's part of the batch's loss, and the dtype the batch's loss takes: the criterion's
// (float32 under autocast, whatever the scores' dtype); a 16-bit loss's sums are float32.
struct ChunkLoss {
  LossSum part;
  DType dtype;
};

// A chunk's sum and denominator of a 16-bit loss are kept in float32, so that they neither
// overflow nor round over many rows.
inline DType wide(DType dtype) { return is_16bit_float(dtype) ? kFloat32 : dtype; }
inline Tensor wide_sum(const Tensor& losses) { return losses.sum(wide(losses.dtype())); }

// A module's weight buffer on the chunk's device.
inline Tensor on_device_of(const Tensor& buffer, const Tensor& out) {
  return buffer.defined() ? buffer.to(out.device()) : buffer;
}

// Where a chunk lies in the batch: rows [start, start + length) of the batch's `total`, split
// along `dim`.
struct ChunkRows {
  int64_t dim = 0;
  int64_t start = 0, length = 0, total = 0;
  // The chunk's rows over the batch's; an empty batch is one empty chunk, all of it.
  double share() const { return total == 0 ? 1.0 : static_cast<double>(length) / static_cast<double>(total); }
};

// An element-wise loss module's weight for one chunk, on its device. A weight broadcast against
// the batch's output that holds one entry per row along the split dim (BCELoss's weight per
// sample) gives the chunk its own rows; any other (per class, one for all) is taken whole.
inline Tensor chunk_weight(const Tensor& weight, const Tensor& out, const ChunkRows& rows) {
  if (!weight.defined()) return weight;
  Tensor w = weight;
  if (out.dim() > 0 && rows.total > 1 && rows.length != rows.total) {
    const int64_t dim = rows.dim < 0 ? rows.dim + out.dim() : rows.dim;
    const int64_t axis = dim - (out.dim() - w.dim());  // broadcasting aligns the last dims
    if (dim >= 0 && dim < out.dim() && out.size(dim) == rows.length && axis >= 0 && axis < w.dim() &&
        w.size(axis) == rows.total) {
      w = w.narrow(axis, rows.start, rows.length);
    }
  }
  return w.to(out.device());
}

// Cross-entropy over one chunk, the module's weight on the chunk's device.
inline ChunkLoss class_loss_sum(const nn::CrossEntropyLossImpl& criterion, const Tensor& out, const Tensor& target) {
  const auto& o = criterion.options;
  check_reduction(o.reduction_, "CrossEntropyLoss");
  const Tensor weight = on_device_of(criterion.weight, out);
  const Tensor losses = nn::functional::cross_entropy(out, target, weight, o.ignore_index_, kNone, o.label_smoothing_);
  const Tensor sum = wide_sum(losses);
  if (o.reduction_ == kSum) return {{sum, Tensor()}, losses.dtype()};
  if (is_floating(target.dtype())) {  // class probabilities: the mean is over rows (and positions)
    const int64_t classes = out.size(out.dim() == 1 ? 0 : 1);
    return {{sum, full({}, static_cast<double>(out.numel() / classes), TensorOptions(sum.dtype()).device(sum.device()))},
            losses.dtype()};
  }
  return {{sum, target_weight_sum(target, weight, o.ignore_index_, sum.dtype())}, losses.dtype()};
}

// Negative log-likelihood over one chunk, the module's weight on the chunk's device.
inline ChunkLoss class_loss_sum(const nn::NLLLossImpl& criterion, const Tensor& out, const Tensor& target) {
  const auto& o = criterion.options;
  check_reduction(o.reduction_, "NLLLoss");
  const Tensor weight = on_device_of(criterion.weight, out);
  const Tensor losses = nn::functional::nll_loss(out, target, weight, o.ignore_index_, kNone);
  const Tensor sum = wide_sum(losses);
  if (o.reduction_ == kSum) return {{sum, Tensor()}, losses.dtype()};
  return {{sum, target_weight_sum(target, weight, o.ignore_index_, sum.dtype())}, losses.dtype()};
}

// Whether forward_with_loss computes this criterion's chunk sums itself: every other loss module
// of tandem's that takes an output and a target, whose reduction none gives a loss per element
// (or per sample), and whose mean is over those. A chunk's 0-dim result alone cannot say whether
// it is a mean or a sum: weighting it by the chunk's rows, right for a mean, would scale a sum down.
template <typename C>
constexpr bool is_elementwise_loss_module =
    is_one_of<C, nn::MSELoss, nn::MSELossImpl, nn::L1Loss, nn::L1LossImpl, nn::SmoothL1Loss, nn::SmoothL1LossImpl,
              nn::HuberLoss, nn::HuberLossImpl, nn::BCELoss, nn::BCELossImpl, nn::BCEWithLogitsLoss,
              nn::BCEWithLogitsLossImpl, nn::KLDivLoss, nn::KLDivLossImpl, nn::SoftMarginLoss, nn::SoftMarginLossImpl,
              nn::HingeEmbeddingLoss, nn::HingeEmbeddingLossImpl, nn::PoissonNLLLoss, nn::PoissonNLLLossImpl,
              nn::MultiLabelSoftMarginLoss, nn::MultiLabelSoftMarginLossImpl, nn::MultiMarginLoss,
              nn::MultiMarginLossImpl, nn::MultiLabelMarginLoss, nn::MultiLabelMarginLossImpl>;

// A chunk's losses per element as a sum and, for a mean, their count (`count`, for kl_div's
// batchmean: the chunk's part of the batch's size).
inline ChunkLoss elementwise_part(const Tensor& losses, Reduction reduction, const char* name,
                                  std::optional<double> count = std::nullopt) {
  check_reduction(reduction, name, count.has_value());
  const Tensor sum = wide_sum(losses);
  if (reduction == kSum) return {{sum, Tensor()}, losses.dtype()};
  return {{sum, full({}, count.value_or(static_cast<double>(losses.numel())),
                     TensorOptions(sum.dtype()).device(sum.device()))},
          losses.dtype()};
}

inline ChunkLoss elementwise_loss_sum(const nn::MSELossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows&) {
  return elementwise_part(nn::functional::mse_loss(out, target, kNone), c.reduction, "MSELoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::L1LossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows&) {
  return elementwise_part(nn::functional::l1_loss(out, target, kNone), c.reduction, "L1Loss");
}
inline ChunkLoss elementwise_loss_sum(const nn::SmoothL1LossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows&) {
  return elementwise_part(nn::functional::smooth_l1_loss(out, target, kNone, c.beta), c.reduction, "SmoothL1Loss");
}
inline ChunkLoss elementwise_loss_sum(const nn::HuberLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows&) {
  return elementwise_part(nn::functional::huber_loss(out, target, kNone, c.delta), c.reduction, "HuberLoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::BCELossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows& rows) {
  return elementwise_part(nn::functional::binary_cross_entropy(out, target, chunk_weight(c.weight, out, rows), kNone),
                          c.options.reduction_, "BCELoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::BCEWithLogitsLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows& rows) {
  const Tensor losses = nn::functional::binary_cross_entropy_with_logits(
      out, target, chunk_weight(c.weight, out, rows), chunk_weight(c.pos_weight, out, rows), kNone);
  return elementwise_part(losses, c.options.reduction_, "BCEWithLogitsLoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::SoftMarginLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows&) {
  return elementwise_part(nn::functional::soft_margin_loss(out, target, kNone), c.reduction, "SoftMarginLoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::HingeEmbeddingLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows&) {
  return elementwise_part(nn::functional::hinge_embedding_loss(out, target, c.options.margin_, kNone),
                          c.options.reduction_, "HingeEmbeddingLoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::PoissonNLLLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows&) {
  const auto& o = c.options;
  return elementwise_part(nn::functional::poisson_nll_loss(out, target, o.log_input_, o.full_, o.eps_, kNone),
                          o.reduction_, "PoissonNLLLoss");
}
// The three below give a loss per sample (a row of the output, over its classes), whose mean is
// over the samples; their weights are per class. A batch split along another dim than 0 would
// give each chunk some of every sample's classes: refused.
inline void check_split_into_samples(const Tensor& out, const ChunkRows& rows, const char* name) {
  const int64_t dim = rows.dim < 0 ? rows.dim + out.dim() : rows.dim;
  TD_CHECK(rows.length == rows.total || dim == 0, "DataParallel::forward_with_loss: ", name,
           " has a loss per sample (a row of the output), but the batch is split along dim ", rows.dim,
           ", which would give each replica some of every sample's classes; split along dim 0");
}
inline ChunkLoss elementwise_loss_sum(const nn::MultiLabelSoftMarginLossImpl& c, const Tensor& out,
                                      const Tensor& target, const ChunkRows& rows) {
  check_split_into_samples(out, rows, "MultiLabelSoftMarginLoss");
  return elementwise_part(nn::functional::multilabel_soft_margin_loss(out, target, on_device_of(c.weight, out), kNone),
                          c.options.reduction_, "MultiLabelSoftMarginLoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::MultiMarginLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows& rows) {
  check_split_into_samples(out, rows, "MultiMarginLoss");
  const auto& o = c.options;
  return elementwise_part(
      nn::functional::multi_margin_loss(out, target, o.p_, o.margin_, on_device_of(c.weight, out), kNone),
      o.reduction_, "MultiMarginLoss");
}
inline ChunkLoss elementwise_loss_sum(const nn::MultiLabelMarginLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows& rows) {
  check_split_into_samples(out, rows, "MultiLabelMarginLoss");
  return elementwise_part(nn::functional::multilabel_margin_loss(out, target, kNone), c.reduction,
                          "MultiLabelMarginLoss");
}
// kl_div's batchmean divides the batch's sum by the batch's size(0). Split along dim 0, a chunk's
// part of that is its own size(0); split along another dim, every chunk has the whole size(0),
// and its part is size(0) times its share of the split rows. A 0-dim output is one sample.
inline ChunkLoss elementwise_loss_sum(const nn::KLDivLossImpl& c, const Tensor& out, const Tensor& target,
                                      const ChunkRows& rows) {
  const Tensor losses = nn::functional::kl_div(out, target, kNone, c.options.log_target_);
  if (c.options.reduction_ != kBatchMean) return elementwise_part(losses, c.options.reduction_, "KLDivLoss");
  const bool split_along_0 = out.dim() > 0 && (rows.dim == 0 || rows.dim + out.dim() == 0);
  const double batch = out.dim() == 0 ? 1.0 : static_cast<double>(out.size(0));
  return elementwise_part(losses, kBatchMean, "KLDivLoss", split_along_0 ? batch : batch * rows.share());
}

}  // namespace detail
}  // namespace tandem::parallel
