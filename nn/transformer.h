// Attention and the Transformer, as PyTorch's: F::scaled_dot_product_attention,
// MultiheadAttention (in_proj_weight [3E, E] or separate projections for other key and value
// sizes, in_proj_bias, bias_k/bias_v, out_proj; PyTorch's initial values and state_dict names),
// TransformerEncoderLayer and TransformerDecoderLayer (post- or pre-norm, relu or gelu),
// TransformerEncoder and TransformerDecoder (copies of one layer, an optional final norm) and
// Transformer (an encoder and a decoder). Composed of differentiable ops, so they run on either
// backend with gradients of any order.
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
  // A learned key and value appended to every sequence of keys and values.
  MultiheadAttentionOptions& add_bias_kv(bool b) {
    add_bias_kv_ = b;
    return *this;
  }
  // A key and value of zeros appended to every head's keys and values.
  MultiheadAttentionOptions& add_zero_attn(bool b) {
    add_zero_attn_ = b;
    return *this;
  }
  // The sizes of the keys' and values' features (embed_dim unless set).
  MultiheadAttentionOptions& kdim(int64_t d) {
    kdim_ = d;
    return *this;
  }
  MultiheadAttentionOptions& vdim(int64_t d) {
    vdim_ = d;
    return *this;
  }
  MultiheadAttentionOptions& batch_first(bool b) {
    batch_first_ = b;
    return *this;
  }
  int64_t embed_dim_, num_heads_;
  double dropout_ = 0;
  bool bias_ = true, add_bias_kv_ = false, add_zero_attn_ = false;
  std::optional<int64_t> kdim_, vdim_;
  bool batch_first_ = false;
};

// Attention of `num_heads` heads of embed_dim / num_heads each. query [L, N, E], key [S, N, kdim]
// and value [S, N, vdim] ([N, L, E] ... batch first; or one sequence, [L, E] ...).
// key_padding_mask [N, S]: true (or -inf) where a key is padding. attn_mask [L, S] or
// [N * num_heads, L, S]: true where a query may NOT attend (PyTorch's sense here, the opposite of
// scaled_dot_product_attention's), or added. is_causal is a hint that attn_mask is the causal mask,
// which must be given (as PyTorch's); the mask is applied as given. Returns the output and, with
// need_weights, the attention weights, [N, L, S'] averaged over the heads or [N, num_heads, L, S'],
// S' counting the keys add_bias_kv and add_zero_attn append.
class MultiheadAttentionImpl : public Cloneable<MultiheadAttentionImpl> {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  void reset() override;
  void reset_parameters();
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = Tensor(), bool need_weights = true,
                                     const Tensor& attn_mask = Tensor(), bool average_attn_weights = true,
                                     bool is_causal = false);
  MultiheadAttentionOptions options;
  // in_proj_weight [3E, E] where keys and values have embed_dim features; else q_proj_weight
  // [E, E], k_proj_weight [E, kdim] and v_proj_weight [E, vdim].
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;
  Tensor bias_k, bias_v;  // [1, 1, E], with add_bias_kv
  NonDynamicallyQuantizableLinear out_proj = nullptr;
};
class MultiheadAttention : public ModuleHolder<MultiheadAttentionImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

enum class TransformerActivation { relu, gelu };

// The options of TransformerEncoderLayer and TransformerDecoderLayer.
struct TransformerLayerOptions {
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerLayerOptions& dim_feedforward(int64_t d) {
    dim_feedforward_ = d;
    return *this;
  }
  TransformerLayerOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  TransformerLayerOptions& activation(TransformerActivation a) {
    activation_ = a;
    return *this;
  }
  TransformerLayerOptions& layer_norm_eps(double e) {
    layer_norm_eps_ = e;
    return *this;
  }
  TransformerLayerOptions& batch_first(bool b) {
    batch_first_ = b;
    return *this;
  }
  TransformerLayerOptions& norm_first(bool b) {
    norm_first_ = b;
    return *this;
  }
  TransformerLayerOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  int64_t d_model_, nhead_, dim_feedforward_ = 2048;
  double dropout_ = 0.1;
  TransformerActivation activation_ = TransformerActivation::relu;
  double layer_norm_eps_ = 1e-5;
  bool batch_first_ = false, norm_first_ = false, bias_ = true;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

// Self-attention and a feed-forward block, each with dropout and a residual connection, normed
// after (PyTorch's default) or before (norm_first). Submodules in PyTorch's order and names.
class TransformerEncoderLayerImpl : public Cloneable<TransformerEncoderLayerImpl> {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerLayerOptions& options);
  void reset() override;
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = Tensor(),
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, Tensor()); }
  TransformerLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr;
};
class TransformerEncoderLayer : public ModuleHolder<TransformerEncoderLayerImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// Self-attention over the target, attention from the target to the encoder's output (memory) and
// a feed-forward block, each with dropout and a residual connection, normed after or before
// (norm_first). Submodules in PyTorch's order and names.
class TransformerDecoderLayerImpl : public Cloneable<TransformerDecoderLayerImpl> {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerLayerOptions& options);
  void reset() override;
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  TransformerLayerOptions options;
  MultiheadAttention self_attn = nullptr, multihead_attn = nullptr;
  Linear linear1 = nullptr, linear2 = nullptr;
  Dropout dropout = nullptr, dropout1 = nullptr, dropout2 = nullptr, dropout3 = nullptr;
  LayerNorm norm1 = nullptr, norm2 = nullptr, norm3 = nullptr;
};
class TransformerDecoderLayer : public ModuleHolder<TransformerDecoderLayerImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// num_layers copies of `layer` (each with parameters of its own, as PyTorch's deep copies), one
// after another, then `norm` if given.
class TransformerEncoderImpl : public Cloneable<TransformerEncoderImpl> {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayer& layer, int64_t num_layers, const LayerNorm& norm = nullptr);
  void reset() override;
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = Tensor(),
                 bool is_causal = false);
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

// num_layers copies of `layer`, each attending to the same memory, then `norm` if given.
class TransformerDecoderImpl : public Cloneable<TransformerDecoderImpl> {
 public:
  TransformerDecoderImpl(const TransformerDecoderLayer& layer, int64_t num_layers, const LayerNorm& norm = nullptr);
  void reset() override;
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  ModuleList layers = nullptr;
  LayerNorm norm = nullptr;

 private:
  TransformerDecoderLayer prototype_;
  int64_t num_layers_;
  LayerNorm prototype_norm_;
};
class TransformerDecoder : public ModuleHolder<TransformerDecoderImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

struct TransformerOptions {
  explicit TransformerOptions(int64_t d_model = 512, int64_t nhead = 8) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions& num_encoder_layers(int64_t n) {
    num_encoder_layers_ = n;
    return *this;
  }
  TransformerOptions& num_decoder_layers(int64_t n) {
    num_decoder_layers_ = n;
    return *this;
  }
  TransformerOptions& dim_feedforward(int64_t d) {
    dim_feedforward_ = d;
    return *this;
  }
  TransformerOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  TransformerOptions& activation(TransformerActivation a) {
    activation_ = a;
    return *this;
  }
  TransformerOptions& layer_norm_eps(double e) {
    layer_norm_eps_ = e;
    return *this;
  }
  TransformerOptions& batch_first(bool b) {
    batch_first_ = b;
    return *this;
  }
  TransformerOptions& norm_first(bool b) {
    norm_first_ = b;
    return *this;
  }
  TransformerOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  // Used instead of the encoder and decoder built from the options above, as copies (as LibTorch's
  // Transformer clones them; PyTorch's Python module keeps the given module itself): train and
  // read the Transformer's own encoder and decoder.
  TransformerOptions& custom_encoder(TransformerEncoder e) {
    custom_encoder_ = std::move(e);
    return *this;
  }
  TransformerOptions& custom_decoder(TransformerDecoder d) {
    custom_decoder_ = std::move(d);
    return *this;
  }
  int64_t d_model_, nhead_, num_encoder_layers_ = 6, num_decoder_layers_ = 6, dim_feedforward_ = 2048;
  double dropout_ = 0.1;
  TransformerActivation activation_ = TransformerActivation::relu;
  double layer_norm_eps_ = 1e-5;
  bool batch_first_ = false, norm_first_ = false, bias_ = true;
  TransformerEncoder custom_encoder_ = nullptr;
  TransformerDecoder custom_decoder_ = nullptr;
};

// An encoder over the source and a decoder over the target that attends to the encoder's output,
// each ending in a LayerNorm; every parameter of two or more dims starts Xavier-uniform, as
// PyTorch's. src [S, N, E] and tgt [T, N, E] ([N, S, E] and [N, T, E] batch first, or unbatched
// [S, E] and [T, E]) give [T, N, E].
class TransformerImpl : public Cloneable<TransformerImpl> {
 public:
  explicit TransformerImpl(const TransformerOptions& options = TransformerOptions());
  void reset() override;
  void reset_parameters();
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = Tensor(),
                 const Tensor& tgt_mask = Tensor(), const Tensor& memory_mask = Tensor(),
                 const Tensor& src_key_padding_mask = Tensor(), const Tensor& tgt_key_padding_mask = Tensor(),
                 const Tensor& memory_key_padding_mask = Tensor(), bool src_is_causal = false,
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  // [size, size]: 0 on and below the diagonal, -inf above it (each position attends to itself and
  // those before it).
  static Tensor generate_square_subsequent_mask(int64_t size, const TensorOptions& options = TensorOptions());
  TransformerOptions options;
  TransformerEncoder encoder = nullptr;
  TransformerDecoder decoder = nullptr;
};
class Transformer : public ModuleHolder<TransformerImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  static Tensor generate_square_subsequent_mask(int64_t size, const TensorOptions& options = TensorOptions()) {
    return TransformerImpl::generate_square_subsequent_mask(size, options);
  }
};

}  // namespace tandem::nn
