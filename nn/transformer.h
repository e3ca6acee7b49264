// Attention and the Transformer encoder, as PyTorch's: F::scaled_dot_product_attention,
// MultiheadAttention (in_proj_weight [3E, E], in_proj_bias, out_proj; PyTorch's initial values
// and state_dict names), TransformerEncoderLayer (post- or pre-norm, relu or gelu) and
// TransformerEncoder (copies of one layer, an optional final norm). Composed of differentiable
// ops, so they run on either backend with gradients of any order.
#pragma once

#include <optional>
#include <string>
#include <tuple>

#include "nn/layers.h"
#include "nn/module.h"
#include "nn/modules.h"

namespace tandem::nn {

namespace functional {

// softmax(q k^T * scale + mask) v over the last two dims, q [..., L, E], k [..., S, E], v [..., S,
// Ev]: scale defaults to 1 / sqrt(E) and is applied as sqrt(scale) to q and to k, as PyTorch's
// math kernel does. attn_mask broadcasts to [..., L, S]: a bool mask says where to attend (true)
// and a floating one is added. is_causal attends to positions up to one's own (no mask then). A
// row that may attend nowhere gives zeros, as PyTorch's safe softmax; dropout_p drops weights
// (training).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

}  // namespace functional

// The output projection of MultiheadAttention: a Linear under PyTorch's name for it.
class NonDynamicallyQuantizableLinearImpl : public Cloneable<NonDynamicallyQuantizableLinearImpl, LinearImpl> {
 public:
  using Cloneable::Cloneable;
};
class NonDynamicallyQuantizableLinear : public ModuleHolder<NonDynamicallyQuantizableLinearImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  MultiheadAttentionOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }  // on the weights, while training
  MultiheadAttentionOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  MultiheadAttentionOptions& batch_first(bool b) {
    batch_first_ = b;
    return *this;
  }
  int64_t embed_dim_, num_heads_;
  double dropout_ = 0;
  bool bias_ = true, batch_first_ = false;
};

// Attention of `num_heads` heads of embed_dim / num_heads each. query [L, N, E], key and value
// [S, N, E] ([N, L, E] and [N, S, E] batch first; or one sequence, [L, E] and [S, E]).
// key_padding_mask [N, S]: true (or -inf) where a key is padding. attn_mask [L, S] or
// [N * num_heads, L, S]: true where a query may NOT attend (PyTorch's sense here, the opposite of
// scaled_dot_product_attention's), or added. Returns the output and, with need_weights, the
// attention weights, [N, L, S] averaged over the heads or [N, num_heads, L, S].
class MultiheadAttentionImpl : public Cloneable<MultiheadAttentionImpl> {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  void reset() override;
  void reset_parameters();
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = Tensor(), bool need_weights = true,
                                     const Tensor& attn_mask = Tensor(), bool average_attn_weights = true);
  MultiheadAttentionOptions options;
  Tensor in_proj_weight, in_proj_bias;
  NonDynamicallyQuantizableLinear out_proj = nullptr;
};
class MultiheadAttention : public ModuleHolder<MultiheadAttentionImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

enum class TransformerActivation { relu, gelu };

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerEncoderLayerOptions& dim_feedforward(int64_t d) {
    dim_feedforward_ = d;
    return *this;
  }
  TransformerEncoderLayerOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  TransformerEncoderLayerOptions& activation(TransformerActivation a) {
    activation_ = a;
    return *this;
  }
  TransformerEncoderLayerOptions& layer_norm_eps(double e) {
    layer_norm_eps_ = e;
    return *this;
  }
  TransformerEncoderLayerOptions& batch_first(bool b) {
    batch_first_ = b;
    return *this;
  }
  TransformerEncoderLayerOptions& norm_first(bool b) {
    norm_first_ = b;
    return *this;
  }
  TransformerEncoderLayerOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  int64_t d_model_, nhead_, dim_feedforward_ = 2048;
  double dropout_ = 0.1;
  TransformerActivation activation_ = TransformerActivation::relu;
  double layer_norm_eps_ = 1e-5;
  bool batch_first_ = false, norm_first_ = false, bias_ = true;
};

// Self-attention and a feed-forward block, each with dropout and a residual connection, normed
// after (PyTorch's default) or before (norm_first). Submodules in PyTorch's order and names.
class TransformerEncoderLayerImpl : public Cloneable<TransformerEncoderLayerImpl> {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  void reset() override;
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = Tensor());
  Tensor forward(const Tensor& src) override { return forward(src, Tensor()); }
  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr;
};
class TransformerEncoderLayer : public ModuleHolder<TransformerEncoderLayerImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// num_layers copies of `layer` (each with parameters of its own, as PyTorch's deep copies), one
// after another, then `norm` if given.
class TransformerEncoderImpl : public Cloneable<TransformerEncoderImpl> {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers, const LayerNorm& norm = nullptr);
  void reset() override;
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = Tensor());
  Tensor forward(const Tensor& src) override { return forward(src, Tensor()); }
  ModuleList layers = nullptr;
  LayerNorm norm = nullptr;

 private:
  TransformerEncoderLayer prototype_;
  int64_t num_layers_;
  LayerNorm prototype_norm_;
};
class TransformerEncoder : public ModuleHolder<TransformerEncoderImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

}  // namespace tandem::nn
