// The recurrent layers of td::nn, as PyTorch's: RNN (tanh or relu), LSTM and GRU over whole
// sequences (several layers, either direction, batch first or not, dropout between layers), and
// RNNCell, LSTMCell and GRUCell for one step. Parameters have PyTorch's names, shapes, gate order
// (LSTM: input, forget, cell, output; GRU: reset, update, new) and initial distribution,
// U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), so a state_dict moves between the two. Batches of
// sequences of different lengths go in as a PackedSequence (nn/packed_sequence.h).
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "nn/functional.h"
#include "nn/module.h"
#include "nn/packed_sequence.h"

namespace tandem::nn {

enum class RNNNonlinearity { tanh, relu };
inline constexpr RNNNonlinearity kTanh = RNNNonlinearity::tanh;
inline constexpr RNNNonlinearity kReLU = RNNNonlinearity::relu;

// What an RNN, LSTM or GRU is made of; the three Options below set these.
struct RecurrentConfig {
  int64_t input_size, hidden_size, num_layers = 1;
  bool bias = true, batch_first = false;
  double dropout = 0;  // after each layer but the last, while training
  bool bidirectional = false;
};

template <typename Derived>
struct RecurrentOptions {
  RecurrentOptions(int64_t input_size, int64_t hidden_size) : config{input_size, hidden_size} {}
  Derived& num_layers(int64_t n) { config.num_layers = n; return self(); }
  Derived& bias(bool b) { config.bias = b; return self(); }
  Derived& batch_first(bool b) { config.batch_first = b; return self(); }
  Derived& dropout(double p) { config.dropout = p; return self(); }
  Derived& bidirectional(bool b) { config.bidirectional = b; return self(); }
  RecurrentConfig config;

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};
struct RNNOptions : RecurrentOptions<RNNOptions> {
  using RecurrentOptions::RecurrentOptions;
  RNNOptions& nonlinearity(RNNNonlinearity n) { nonlinearity_ = n; return *this; }
  RNNNonlinearity nonlinearity_ = kTanh;
};
struct LSTMOptions : RecurrentOptions<LSTMOptions> {
  using RecurrentOptions::RecurrentOptions;
};
struct GRUOptions : RecurrentOptions<GRUOptions> {
  using RecurrentOptions::RecurrentOptions;
};

// What RNN, LSTM and GRU share: their parameters, per layer and direction weight_ih_l{k}[_reverse]
// [gates * hidden, in], weight_hh_l{k}[_reverse] [gates * hidden, hidden] and the two biases
// [gates * hidden] (in: input_size for layer 0, hidden_size times the directions above it), and
// the pass over layers and time. An input is [T, N, input_size] ([N, T, input_size] batch first)
// or one sequence, [T, input_size]; the states are [num_layers * directions, N, hidden_size] (or
// without N), zeros when not given.
class RecurrentBase : public Module {
 public:
  enum class Kind { rnn_tanh, rnn_relu, lstm, gru };
  RecurrentBase(std::string name, Kind kind, RecurrentConfig config);
  void reset() override;
  void reset_parameters();
  std::string extra_repr() const override;
  // Each layer's and direction's weight_ih, weight_hh and (with bias) bias_ih, bias_hh, in order.
  const std::vector<Tensor>& all_weights() const { return weights_; }

 protected:
  struct Result {
    Tensor output, h, c;  // c: LSTM only
  };
  Result run(const Tensor& input, const Tensor& h0, const Tensor& c0) const;
  // A packed batch (the states [num_layers * directions, B, hidden_size] in the batch's order):
  // the output packed as the input, each sequence's last states taken at its own end.
  struct PackedResult {
    utils::rnn::PackedSequence output;
    Tensor h, c;
  };
  PackedResult run_packed(const utils::rnn::PackedSequence& input, const Tensor& h0, const Tensor& c0) const;

 private:
  void check_input(const Tensor& input) const;
  // A given initial state checked against `shape` (zeros of [layers * directions, batch, hidden]
  // where none is given), with a batch dim.
  Tensor initial_state(const Tensor& given, const char* which, const Shape& shape, const Tensor& like) const;
  // The layers over a time-major batch [T, N, input_size] from states [layers * directions, N,
  // hidden]; with lengths (of each of the N sequences), a sequence's states stop at its end.
  Result recur(Tensor sequence, const Tensor& h_start, const Tensor& c_start,
               const std::vector<int64_t>* lengths) const;

  Kind kind_;
  RecurrentConfig config_;
  std::vector<Tensor> weights_;
};

class RNNImpl : public Cloneable<RNNImpl, RecurrentBase> {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  // (output [T, N, directions * hidden_size], h_n)
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = Tensor());
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                          const Tensor& hx = Tensor());
  RNNOptions options;
};
class LSTMImpl : public Cloneable<LSTMImpl, RecurrentBase> {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  // (output, (h_n, c_n)), as LibTorch's.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(
      const Tensor& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt);
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& input, const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt);
  LSTMOptions options;
};
class GRUImpl : public Cloneable<GRUImpl, RecurrentBase> {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = Tensor());
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                          const Tensor& hx = Tensor());
  GRUOptions options;
};
class RNN : public ModuleHolder<RNNImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class LSTM : public ModuleHolder<LSTMImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class GRU : public ModuleHolder<GRUImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// ---- one step ----

struct RNNCellOptions {
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  RNNCellOptions& bias(bool b) { bias_ = b; return *this; }
  RNNCellOptions& nonlinearity(RNNNonlinearity n) { nonlinearity_ = n; return *this; }  // RNNCell only
  int64_t input_size_, hidden_size_;
  bool bias_ = true;
  RNNNonlinearity nonlinearity_ = kTanh;
};

// The cells' weight_ih [gates * hidden, input], weight_hh [gates * hidden, hidden], bias_ih and
// bias_hh [gates * hidden]. x is [N, input_size] or [input_size]; a state not given is zeros.
class CellBase : public Module {
 public:
  CellBase(std::string name, int64_t gates, RNNCellOptions options);
  void reset() override;
  void reset_parameters();
  std::string extra_repr() const override;
  RNNCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  // x and the states checked, with a batch dim (added where x has none); `unbatched` says so.
  Tensor batched_state(const Tensor& x, const Tensor& state, bool& unbatched, const char* which) const;

 private:
  int64_t gates_;
};
class RNNCellImpl : public Cloneable<RNNCellImpl, CellBase> {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  Tensor forward(const Tensor& x, const Tensor& hx);
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }
};
class LSTMCellImpl : public Cloneable<LSTMCellImpl, CellBase> {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const RNNCellOptions& options);
  // (h', c')
  std::tuple<Tensor, Tensor> forward(const Tensor& x,
                                     const std::optional<std::tuple<Tensor, Tensor>>& hx = std::nullopt);
};
class GRUCellImpl : public Cloneable<GRUCellImpl, CellBase> {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const RNNCellOptions& options);
  Tensor forward(const Tensor& x, const Tensor& hx);
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }
};
class RNNCell : public ModuleHolder<RNNCellImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class LSTMCell : public ModuleHolder<LSTMCellImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};
class GRUCell : public ModuleHolder<GRUCellImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

namespace functional {

// One step of each cell in PyTorch's form (torch.rnn_tanh_cell, lstm_cell, gru_cell): x [N, I],
// h and c [N, H]; the biases may be undefined.
Tensor rnn_tanh_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
Tensor rnn_relu_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
std::tuple<Tensor, Tensor> lstm_cell(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                                     const Tensor& w_hh, const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih = Tensor(),
                const Tensor& b_hh = Tensor());

}  // namespace functional

}  // namespace tandem::nn
