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
  TD_CHECK(o.kdim_.value_or(1) > 0 && o.vdim_.value_or(1) > 0, "MultiheadAttention: kdim (", o.kdim_.value_or(0),
           ") and vdim (", o.vdim_.value_or(0), ") must be positive");
  TD_CHECK(o.dropout_ >= 0 && o.dropout_ <= 1, "MultiheadAttention: dropout must be a probability, got ", o.dropout_);
  reset();
}

void MultiheadAttentionImpl::reset() {
  const int64_t e = options.embed_dim_, kdim = options.kdim_.value_or(e), vdim = options.vdim_.value_or(e);
  const bool packed = kdim == e && vdim == e;
  in_proj_weight = register_parameter("in_proj_weight", packed ? empty({3 * e, e}) : Tensor());
  q_proj_weight = register_parameter("q_proj_weight", packed ? Tensor() : empty({e, e}));
  k_proj_weight = register_parameter("k_proj_weight", packed ? Tensor() : empty({e, kdim}));
  v_proj_weight = register_parameter("v_proj_weight", packed ? Tensor() : empty({e, vdim}));
  in_proj_bias = register_parameter("in_proj_bias", options.bias_ ? empty({3 * e}) : Tensor());
  bias_k = register_parameter("bias_k", options.add_bias_kv_ ? empty({1, 1, e}) : Tensor());
  bias_v = register_parameter("bias_v", options.add_bias_kv_ ? empty({1, 1, e}) : Tensor());
  out_proj = register_module("out_proj", NonDynamicallyQuantizableLinear(LinearOptions(e, e).bias(options.bias_)));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  // PyTorch's: Xavier for the projections, zero biases, Xavier-normal bias_k and bias_v;
  // out_proj's weight keeps Linear's.
  for (Tensor* w : {&in_proj_weight, &q_proj_weight, &k_proj_weight, &v_proj_weight}) {
    if (w->defined()) init::xavier_uniform_(*w);
  }
  for (Tensor* b : {&bias_k, &bias_v}) {
    if (b->defined()) init::xavier_normal_(*b);
  }
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
                                                           const Tensor& attn_mask, bool average_attn_weights,
                                                           bool is_causal) {
  const int64_t e = options.embed_dim_, heads = options.num_heads_, head_dim = e / heads;
  const int64_t kdim = options.kdim_.value_or(e), vdim = options.vdim_.value_or(e);
  TD_CHECK(query.defined() && key.defined() && value.defined(),
           "MultiheadAttention: query, key and value must be defined");
  TD_CHECK((query.dim() == 2 || query.dim() == 3) && key.dim() == query.dim() && value.dim() == query.dim(),
           "MultiheadAttention: query, key and value must all be 3-D (or 2-D, one sequence), got ",
           shape_str(query.sizes()), ", ", shape_str(key.sizes()), ", ", shape_str(value.sizes()));
  TD_CHECK(!is_causal || attn_mask.defined(), "MultiheadAttention: is_causal is a hint that attn_mask is the ",
           "causal mask: give the mask too (Transformer::generate_square_subsequent_mask makes one)");
  const bool unbatched = query.dim() == 2;
  // [L, N, E], time first.
  auto time_first = [&](const Tensor& t) {
    return unbatched ? t.unsqueeze(1) : options.batch_first_ ? t.transpose(0, 1) : t;
  };
  const Tensor q_in = time_first(query), k_in = time_first(key), v_in = time_first(value);
  const int64_t queries = q_in.size(0), batch = q_in.size(1), keys = k_in.size(0);
  TD_CHECK(q_in.size(2) == e && k_in.size(2) == kdim && v_in.size(2) == vdim, "MultiheadAttention: query ",
           shape_str(query.sizes()), ", key ", shape_str(key.sizes()), " and value ", shape_str(value.sizes()),
           " must end in embed_dim ", e, ", kdim ", kdim, " and vdim ", vdim);
  TD_CHECK(k_in.size(1) == batch && v_in.size(1) == batch && v_in.size(0) == keys, "MultiheadAttention: key ",
           shape_str(key.sizes()), " and value ", shape_str(value.sizes()),
           " must match each other and the query's batch");
  TD_CHECK(query.dtype() == out_proj->weight.dtype() && query.device() == out_proj->weight.device(),
           "MultiheadAttention: the query (", query.dtype(), " on ", query.device(),
           ") must have the parameters' dtype and device (", out_proj->weight.dtype(), " on ",
           out_proj->weight.device(), ")");
  // The projections: in_proj_weight's rows [0, E) for queries, [E, 2E) keys, [2E, 3E) values,
  // or the three weights of their own; in_proj_bias's parts likewise.
  auto project = [&](const Tensor& x, int64_t part) {
    const Tensor& own = part == 0 ? q_proj_weight : part == 1 ? k_proj_weight : v_proj_weight;
    const Tensor w = in_proj_weight.defined() ? in_proj_weight.narrow(0, part * e, e) : own;
    const Tensor b = in_proj_bias.defined() ? in_proj_bias.narrow(0, part * e, e) : Tensor();
    return F::linear(x, w, b);
  };
  Tensor q_p = project(q_in, 0), k_p = project(k_in, 1), v_p = project(v_in, 2);
  int64_t appended = 0;  // keys added after the given ones, which every query may attend to
  if (bias_k.defined()) {
    k_p = cat({k_p, bias_k.expand({1, batch, e})}, 0);
    v_p = cat({v_p, bias_v.expand({1, batch, e})}, 0);
    ++appended;
  }
  // [N * heads, length, head_dim]
  auto split_heads = [&](const Tensor& x) { return x.reshape({x.size(0), batch * heads, head_dim}).transpose(0, 1); };
  Tensor q = split_heads(q_p), k = split_heads(k_p), v = split_heads(v_p);
  if (options.add_zero_attn_) {
    const Tensor zero = zeros({batch * heads, 1, head_dim}, TensorOptions(q.dtype()).device(q.device()));
    k = cat({k, zero}, 1);
    v = cat({v, zero}, 1);
    ++appended;
  }
  Tensor mask;  // added to the scores, [N * heads or 1, L or 1, S]
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
  if (mask.defined() && appended > 0) mask = F::pad(mask, {0, appended});
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
  Tensor per_head = weights.view({batch, heads, queries, keys + appended});
  Tensor shown = average_attn_weights ? per_head.mean({1}) : per_head;
  return {out, unbatched ? shown.squeeze(0) : shown};
}

// ---- the layers ----

namespace {

MultiheadAttention layer_attention(const TransformerLayerOptions& o) {
  return MultiheadAttention(
      MultiheadAttentionOptions(o.d_model_, o.nhead_).dropout(o.dropout_).bias(o.bias_).batch_first(o.batch_first_));
}

LayerNorm layer_norm(const TransformerLayerOptions& o) {
  return LayerNorm(LayerNormOptions({o.d_model_}).eps(o.layer_norm_eps_).bias(o.bias_));
}

// linear2(dropout(activation(linear1(x)))), the layers' feed-forward block.
Tensor feed_forward(const TransformerLayerOptions& o, const Linear& linear1, const Dropout& dropout,
                    const Linear& linear2, const Tensor& x) {
  const Tensor hidden = linear1(x);
  return linear2(dropout(o.activation_ == TransformerActivation::gelu ? gelu(hidden) : relu(hidden)));
}

void check_layer_options(const char* layer, const TransformerLayerOptions& o) {
  TD_CHECK(o.dim_feedforward_ > 0, layer, ": dim_feedforward must be positive, got ", o.dim_feedforward_);
}

}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerLayerOptions& options_) : options(options_) {
  check_layer_options("TransformerEncoderLayer", options);
  reset();
}

void TransformerEncoderLayerImpl::reset() {
  const auto& o = options;
  self_attn = register_module("self_attn", layer_attention(o));
  linear1 = register_module("linear1", Linear(LinearOptions(o.d_model_, o.dim_feedforward_).bias(o.bias_)));
  dropout = register_module("dropout", Dropout(o.dropout_));
  linear2 = register_module("linear2", Linear(LinearOptions(o.dim_feedforward_, o.d_model_).bias(o.bias_)));
  norm1 = register_module("norm1", layer_norm(o));
  norm2 = register_module("norm2", layer_norm(o));
  dropout1 = register_module("dropout1", Dropout(o.dropout_));
  dropout2 = register_module("dropout2", Dropout(o.dropout_));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask, bool is_causal) {
  auto attention = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
  };
  auto feed = [&](const Tensor& x) { return dropout2(feed_forward(options, linear1, dropout, linear2, x)); };
  Tensor x = src;
  if (options.norm_first_) {
    x = x + attention(norm1(x));
    return x + feed(norm2(x));
  }
  x = norm1(x + attention(x));
  return norm2(x + feed(x));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerLayerOptions& options_) : options(options_) {
  check_layer_options("TransformerDecoderLayer", options);
  reset();
}

void TransformerDecoderLayerImpl::reset() {
  const auto& o = options;
  self_attn = register_module("self_attn", layer_attention(o));
  multihead_attn = register_module("multihead_attn", layer_attention(o));
  linear1 = register_module("linear1", Linear(LinearOptions(o.d_model_, o.dim_feedforward_).bias(o.bias_)));
  dropout = register_module("dropout", Dropout(o.dropout_));
  linear2 = register_module("linear2", Linear(LinearOptions(o.dim_feedforward_, o.d_model_).bias(o.bias_)));
  norm1 = register_module("norm1", layer_norm(o));
  norm2 = register_module("norm2", layer_norm(o));
  norm3 = register_module("norm3", layer_norm(o));
  dropout1 = register_module("dropout1", Dropout(o.dropout_));
  dropout2 = register_module("dropout2", Dropout(o.dropout_));
  dropout3 = register_module("dropout3", Dropout(o.dropout_));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                            bool memory_is_causal) {
  TD_CHECK(memory.defined(), "TransformerDecoderLayer: memory (the encoder's output) must be defined");
  auto self_attention = [&](const Tensor& x) {
    return dropout1(
        std::get<0>(self_attn->forward(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)));
  };
  auto memory_attention = [&](const Tensor& x) {
    return dropout2(std::get<0>(multihead_attn->forward(x, memory, memory, memory_key_padding_mask, false, memory_mask,
                                                        true, memory_is_causal)));
  };
  auto feed = [&](const Tensor& x) { return dropout3(feed_forward(options, linear1, dropout, linear2, x)); };
  Tensor x = tgt;
  if (options.norm_first_) {
    x = x + self_attention(norm1(x));
    x = x + memory_attention(norm2(x));
    return x + feed(norm3(x));
  }
  x = norm1(x + self_attention(x));
  x = norm2(x + memory_attention(x));
  return norm3(x + feed(x));
}

// ---- TransformerEncoder and TransformerDecoder ----

namespace {

// The stacks' layers (copies of one) and final norm (a copy, if given).
ModuleList layer_copies(const Module& layer, int64_t n) {
  ModuleList layers;
  for (int64_t i = 0; i < n; ++i) layers->push_back(layer.clone());
  return layers;
}

LayerNorm norm_copy(const LayerNorm& norm) {
  return norm.is_empty() ? LayerNorm(nullptr) : LayerNorm(std::dynamic_pointer_cast<LayerNormImpl>(norm->clone()));
}

}  // namespace

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers,
                                               const LayerNorm& norm_)
    : prototype_(layer), num_layers_(num_layers), prototype_norm_(norm_) {
  TD_CHECK(!layer.is_empty(), "TransformerEncoder: the layer is empty");
  TD_CHECK(num_layers > 0, "TransformerEncoder: num_layers must be positive, got ", num_layers);
  reset();
}

void TransformerEncoderImpl::reset() {
  layers = register_module("layers", layer_copies(*prototype_, num_layers_));
  norm = norm_copy(prototype_norm_);
  if (!norm.is_empty()) register_module("norm", norm);
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                       bool is_causal) {
  Tensor x = src;
  for (const auto& layer : *layers) {
    x = std::static_pointer_cast<TransformerEncoderLayerImpl>(layer)->forward(x, mask, src_key_padding_mask, is_causal);
  }
  return norm.is_empty() ? x : norm(x);
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderLayer& layer, int64_t num_layers,
                                               const LayerNorm& norm_)
    : prototype_(layer), num_layers_(num_layers), prototype_norm_(norm_) {
  TD_CHECK(!layer.is_empty(), "TransformerDecoder: the layer is empty");
  TD_CHECK(num_layers > 0, "TransformerDecoder: num_layers must be positive, got ", num_layers);
  reset();
}

void TransformerDecoderImpl::reset() {
  layers = register_module("layers", layer_copies(*prototype_, num_layers_));
  norm = norm_copy(prototype_norm_);
  if (!norm.is_empty()) register_module("norm", norm);
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                       bool memory_is_causal) {
  Tensor x = tgt;
  for (const auto& layer : *layers) {
    x = std::static_pointer_cast<TransformerDecoderLayerImpl>(layer)->forward(
        x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
        memory_is_causal);
  }
  return norm.is_empty() ? x : norm(x);
}

// ---- Transformer ----

TransformerImpl::TransformerImpl(const TransformerOptions& options_) : options(options_) {
  const auto& o = options;
  TD_CHECK(o.num_encoder_layers_ > 0 && o.num_decoder_layers_ > 0, "Transformer: num_encoder_layers (",
           o.num_encoder_layers_, ") and num_decoder_layers (", o.num_decoder_layers_, ") must be positive");
  reset();
}

void TransformerImpl::reset() {
  const auto& o = options;
  const auto layer = TransformerLayerOptions(o.d_model_, o.nhead_)
                         .dim_feedforward(o.dim_feedforward_)
                         .dropout(o.dropout_)
                         .activation(o.activation_)
                         .layer_norm_eps(o.layer_norm_eps_)
                         .batch_first(o.batch_first_)
                         .norm_first(o.norm_first_)
                         .bias(o.bias_);
  encoder = o.custom_encoder_.is_empty()
                ? TransformerEncoder(TransformerEncoderLayer(layer), o.num_encoder_layers_, layer_norm(layer))
                : TransformerEncoder(std::dynamic_pointer_cast<TransformerEncoderImpl>(o.custom_encoder_->clone()));
  decoder = o.custom_decoder_.is_empty()
                ? TransformerDecoder(TransformerDecoderLayer(layer), o.num_decoder_layers_, layer_norm(layer))
                : TransformerDecoder(std::dynamic_pointer_cast<TransformerDecoderImpl>(o.custom_decoder_->clone()));
  register_module("encoder", encoder);
  register_module("decoder", decoder);
  reset_parameters();
}

void TransformerImpl::reset_parameters() {
  for (Tensor& p : parameters()) {
    if (p.dim() > 1) init::xavier_uniform_(p);
  }
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask,
                                bool src_is_causal, bool tgt_is_causal, bool memory_is_causal) {
  TD_CHECK(src.defined() && tgt.defined(), "Transformer: src and tgt must be defined");
  TD_CHECK((src.dim() == 3 && tgt.dim() == 3) || (src.dim() == 2 && tgt.dim() == 2),
           "Transformer: src and tgt must both be 3-D (or 2-D, one sequence), got ", shape_str(src.sizes()), " and ",
           shape_str(tgt.sizes()));
  const int64_t batch_dim = options.batch_first_ ? 0 : 1;
  TD_CHECK(src.dim() == 2 || src.size(batch_dim) == tgt.size(batch_dim), "Transformer: src ", shape_str(src.sizes()),
           " and tgt ", shape_str(tgt.sizes()), " must have one batch size (dim ", batch_dim, ")");
  TD_CHECK(src.size(-1) == options.d_model_ && tgt.size(-1) == options.d_model_, "Transformer: src ",
           shape_str(src.sizes()), " and tgt ", shape_str(tgt.sizes()), " must end in d_model ", options.d_model_);
  const Tensor memory = encoder->forward(src, src_mask, src_key_padding_mask, src_is_causal);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                          tgt_is_causal, memory_is_causal);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t size, const TensorOptions& options) {
  TD_CHECK(size >= 0, "Transformer::generate_square_subsequent_mask: the size must not be negative, got ", size);
  const DType dtype = options.dtype_or(kDefaultFloat);
  TD_CHECK(is_floating(dtype), "Transformer::generate_square_subsequent_mask: the mask is floating (0 and -inf), not ",
           dtype);
  return triu(full({size, size}, -std::numeric_limits<double>::infinity(), options.dtype(dtype)), 1);
}

}  // namespace tandem::nn
