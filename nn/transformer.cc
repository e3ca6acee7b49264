#include "nn/transformer.h"

#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"
#include "nn/functional.h"
#include "nn/init.h"

namespace tandem::nn {

namespace F = functional;

namespace functional {

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale) {
  constexpr const char* op = "scaled_dot_product_attention";
  TD_CHECK(q.defined() && k.defined() && v.defined(), op, ": query, key and value must be defined");
  TD_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op, ": query, key and value need at least 2 dims, got ",
           shape_str(q.sizes()), ", ", shape_str(k.sizes()), ", ", shape_str(v.sizes()));
  TD_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
           ": query, key and value must have one floating dtype, got ", q.dtype(), ", ", k.dtype(), ", ", v.dtype());
  TD_CHECK(q.size(-1) == k.size(-1), op, ": query ", shape_str(q.sizes()), " and key ", shape_str(k.sizes()),
           " must have one embedding size (last dim)");
  TD_CHECK(k.size(-2) == v.size(-2), op, ": key ", shape_str(k.sizes()), " and value ", shape_str(v.sizes()),
           " must have one sequence length (dim -2)");
  TD_CHECK(!is_causal || !attn_mask.defined(), op, ": is_causal makes the mask; give no attn_mask with it");
  TD_CHECK(dropout_p >= 0 && dropout_p <= 1, op, ": dropout_p must be a probability, got ", dropout_p);
  const int64_t queries = q.size(-2), keys = k.size(-2);
  const double factor = std::sqrt(scale.value_or(1 / std::sqrt(static_cast<double>(q.size(-1)))));
  Tensor scores = matmul(q * factor, (k * factor).transpose(-2, -1));  // [..., L, S]
  Tensor allowed;  // bool, where a query may attend; undefined: everywhere
  if (is_causal) {
    allowed = tril(ones({queries, keys}, TensorOptions(kBool).device(q.device())));
  } else if (attn_mask.defined() && attn_mask.dtype() == kBool) {
    allowed = attn_mask;
  } else if (attn_mask.defined()) {
    TD_CHECK(attn_mask.dtype() == q.dtype(), op, ": a floating attn_mask must have the query's dtype (", q.dtype(),
             "), got ", attn_mask.dtype());
    scores = scores + attn_mask;
  }
  if (allowed.defined()) scores = where(allowed, scores, -std::numeric_limits<double>::infinity());
  // A row with nowhere to attend gives zeros, not NaN (PyTorch's safe softmax); its scores are
  // replaced before the softmax so that no NaN reaches the gradient either.
  const Tensor nowhere = (scores == -std::numeric_limits<double>::infinity()).all({-1}, true);
  Tensor weights = where(nowhere, zeros_like(scores), softmax(where(nowhere, zeros_like(scores), scores), -1));
  if (dropout_p > 0) weights = dropout(weights, dropout_p, true);
  return matmul(weights, v);
}

}  // namespace functional

// ---- MultiheadAttention ----

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_) : options(options_) {
  const auto& o = options;
  TD_CHECK(o.embed_dim_ > 0 && o.num_heads_ > 0, "MultiheadAttention: embed_dim (", o.embed_dim_, ") and num_heads (",
           o.num_heads_, ") must be positive");
  TD_CHECK(o.embed_dim_ % o.num_heads_ == 0, "MultiheadAttention: embed_dim (", o.embed_dim_,
           ") must be divisible by num_heads (", o.num_heads_, ")");
  TD_CHECK(o.dropout_ >= 0 && o.dropout_ <= 1, "MultiheadAttention: dropout must be a probability, got ", o.dropout_);
  reset();
}

void MultiheadAttentionImpl::reset() {
  const int64_t e = options.embed_dim_;
  in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
  in_proj_bias = register_parameter("in_proj_bias", options.bias_ ? empty({3 * e}) : Tensor());
  out_proj = register_module("out_proj", NonDynamicallyQuantizableLinear(LinearOptions(e, e).bias(options.bias_)));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  // PyTorch's: Xavier for the packed projections, zero biases; out_proj's weight keeps Linear's.
  init::xavier_uniform_(in_proj_weight);
  NoGradGuard no_grad;
  if (in_proj_bias.defined()) in_proj_bias.zero_();
  if (out_proj->bias.defined()) out_proj->bias.zero_();
}

namespace {

// A mask as scores to add: bool true -> -inf (PyTorch's sense for MultiheadAttention), floating as is.
Tensor additive(const Tensor& mask, DType dtype, const char* what) {
  if (mask.dtype() == kBool) {
    return zeros(mask.sizes(), TensorOptions(dtype).device(mask.device()))
        .masked_fill(mask, -std::numeric_limits<double>::infinity());
  }
  TD_CHECK(mask.dtype() == dtype, "MultiheadAttention: a floating ", what, " must have the query's dtype (", dtype,
           "), got ", mask.dtype());
  return mask;
}

}  // namespace

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                           const Tensor& key_padding_mask, bool need_weights,
                                                           const Tensor& attn_mask, bool average_attn_weights) {
  const int64_t e = options.embed_dim_, heads = options.num_heads_, head_dim = e / heads;
  TD_CHECK(query.defined() && key.defined() && value.defined(),
           "MultiheadAttention: query, key and value must be defined");
  TD_CHECK((query.dim() == 2 || query.dim() == 3) && key.dim() == query.dim() && value.dim() == query.dim(),
           "MultiheadAttention: query, key and value must all be 3-D (or 2-D, one sequence), got ",
           shape_str(query.sizes()), ", ", shape_str(key.sizes()), ", ", shape_str(value.sizes()));
  const bool unbatched = query.dim() == 2;
  // [L, N, E], time first.
  auto time_first = [&](const Tensor& t) {
    return unbatched ? t.unsqueeze(1) : options.batch_first_ ? t.transpose(0, 1) : t;
  };
  const Tensor q_in = time_first(query), k_in = time_first(key), v_in = time_first(value);
  const int64_t queries = q_in.size(0), batch = q_in.size(1), keys = k_in.size(0);
  TD_CHECK(q_in.size(2) == e && k_in.size(2) == e && v_in.size(2) == e, "MultiheadAttention: query ",
           shape_str(query.sizes()), ", key ", shape_str(key.sizes()), " and value ", shape_str(value.sizes()),
           " must end in embed_dim ", e);
  TD_CHECK(k_in.size(1) == batch && v_in.size(1) == batch && v_in.size(0) == keys, "MultiheadAttention: key ",
           shape_str(key.sizes()), " and value ", shape_str(value.sizes()),
           " must match each other and the query's batch");
  TD_CHECK(query.dtype() == in_proj_weight.dtype() && query.device() == in_proj_weight.device(),
           "MultiheadAttention: the query (", query.dtype(), " on ", query.device(),
           ") must have the parameters' dtype and device (", in_proj_weight.dtype(), " on ", in_proj_weight.device(),
           ")");
  // The packed projections: rows [0, E) for queries, [E, 2E) keys, [2E, 3E) values.
  auto project = [&](const Tensor& x, int64_t part) {
    const Tensor w = in_proj_weight.narrow(0, part * e, e);
    const Tensor b = in_proj_bias.defined() ? in_proj_bias.narrow(0, part * e, e) : Tensor();
    return F::linear(x, w, b);
  };
  // [N * heads, length, head_dim]
  auto split_heads = [&](const Tensor& x) { return x.reshape({x.size(0), batch * heads, head_dim}).transpose(0, 1); };
  const Tensor q = split_heads(project(q_in, 0)), k = split_heads(project(k_in, 1)), v = split_heads(project(v_in, 2));
  Tensor mask;  // added to the scores, [N * heads or 1, L, S]
  if (attn_mask.defined()) {
    const Shape two{queries, keys}, three{batch * heads, queries, keys};
    TD_CHECK(attn_mask.sizes() == two || attn_mask.sizes() == three, "MultiheadAttention: attn_mask must be ",
             shape_str(two), " or ", shape_str(three), ", got ", shape_str(attn_mask.sizes()));
    mask = additive(attn_mask, query.dtype(), "attn_mask");
    if (mask.dim() == 2) mask = mask.unsqueeze(0);
  }
  if (key_padding_mask.defined()) {
    const Shape expected = unbatched ? Shape{keys} : Shape{batch, keys};
    TD_CHECK(key_padding_mask.sizes() == expected, "MultiheadAttention: key_padding_mask must be ", shape_str(expected),
             ", got ", shape_str(key_padding_mask.sizes()));
    const Tensor padding = additive(key_padding_mask, query.dtype(), "key_padding_mask")
                               .reshape({batch, 1, 1, keys})
                               .expand({batch, heads, 1, keys})
                               .reshape({batch * heads, 1, keys});
    mask = mask.defined() ? mask + padding : padding;
  }
  // PyTorch's order: q scaled by 1 / sqrt(head_dim), the mask added in one baddbmm, softmax,
  // dropout, the values, the output projection.
  const Tensor scaled = q * std::sqrt(1.0 / static_cast<double>(head_dim));
  Tensor scores = matmul(scaled, k.transpose(1, 2));
  if (mask.defined()) scores = mask + scores;
  Tensor weights = softmax(scores, -1);
  if (options.dropout_ > 0 && is_training()) weights = F::dropout(weights, options.dropout_, true);
  Tensor out = matmul(weights, v).transpose(0, 1).reshape({queries * batch, e});
  out = out_proj(out).view({queries, batch, e});
  out = unbatched ? out.squeeze(1) : options.batch_first_ ? out.transpose(0, 1) : out;
  if (!need_weights) return {out, Tensor()};
  Tensor per_head = weights.view({batch, heads, queries, keys});
  Tensor shown = average_attn_weights ? per_head.mean({1}) : per_head;
  return {out, unbatched ? shown.squeeze(0) : shown};
}

// ---- TransformerEncoderLayer ----

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options_)
    : options(options_) {
  TD_CHECK(options.dim_feedforward_ > 0, "TransformerEncoderLayer: dim_feedforward must be positive, got ",
           options.dim_feedforward_);
  reset();
}

void TransformerEncoderLayerImpl::reset() {
  const auto& o = options;
  self_attn = register_module("self_attn", MultiheadAttention(MultiheadAttentionOptions(o.d_model_, o.nhead_)
                                                                  .dropout(o.dropout_)
                                                                  .bias(o.bias_)
                                                                  .batch_first(o.batch_first_)));
  linear1 = register_module("linear1", Linear(LinearOptions(o.d_model_, o.dim_feedforward_).bias(o.bias_)));
  dropout = register_module("dropout", Dropout(o.dropout_));
  linear2 = register_module("linear2", Linear(LinearOptions(o.dim_feedforward_, o.d_model_).bias(o.bias_)));
  const auto norm = LayerNormOptions({o.d_model_}).eps(o.layer_norm_eps_).bias(o.bias_);
  norm1 = register_module("norm1", LayerNorm(norm));
  norm2 = register_module("norm2", LayerNorm(norm));
  dropout1 = register_module("dropout1", Dropout(o.dropout_));
  dropout2 = register_module("dropout2", Dropout(o.dropout_));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask) {
  auto attention = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask)));
  };
  auto feed_forward = [&](const Tensor& x) {
    const Tensor hidden = linear1(x);
    const Tensor active = options.activation_ == TransformerActivation::gelu ? gelu(hidden) : relu(hidden);
    return dropout2(linear2(dropout(active)));
  };
  Tensor x = src;
  if (options.norm_first_) {
    x = x + attention(norm1(x));
    return x + feed_forward(norm2(x));
  }
  x = norm1(x + attention(x));
  return norm2(x + feed_forward(x));
}

// ---- TransformerEncoder ----

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers,
                                               const LayerNorm& norm_)
    : prototype_(layer), num_layers_(num_layers), prototype_norm_(norm_) {
  TD_CHECK(!layer.is_empty(), "TransformerEncoder: the layer is empty");
  TD_CHECK(num_layers > 0, "TransformerEncoder: num_layers must be positive, got ", num_layers);
  reset();
}

void TransformerEncoderImpl::reset() {
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers_; ++i) layers->push_back(prototype_->clone());
  norm = prototype_norm_.is_empty()
             ? LayerNorm(nullptr)
             : register_module("norm", LayerNorm(std::dynamic_pointer_cast<LayerNormImpl>(prototype_norm_->clone())));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask) {
  Tensor x = src;
  for (const auto& layer : *layers) {
    x = std::static_pointer_cast<TransformerEncoderLayerImpl>(layer)->forward(x, mask, src_key_padding_mask);
  }
  return norm.is_empty() ? x : norm(x);
}

}  // namespace tandem::nn
