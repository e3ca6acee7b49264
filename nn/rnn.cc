#include "nn/rnn.h"

#include <cmath>

#include "autograd/ops.h"
#include "kernels/factory.h"
#include "nn/init.h"

namespace tandem::nn {

namespace {

namespace F = functional;
using Kind = RecurrentBase::Kind;

int64_t gate_count(Kind kind) { return kind == Kind::lstm ? 4 : kind == Kind::gru ? 3 : 1; }

// A share of the gates: x W_ih^T + b_ih, or h W_hh^T + b_hh.
Tensor gates_of(const Tensor& x, const Tensor& w, const Tensor& b) {
  return b.defined() ? addmm(b, x, w.t()) : mm(x, w.t());
}

// One step from the input's share of the gates (x W_ih^T + b_ih), in PyTorch's order of
// operations: the hidden share first, the input's added to it.
Tensor simple_step(Kind kind, const Tensor& input_gates, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh) {
  const Tensor pre = gates_of(h, w_hh, b_hh) + input_gates;
  return kind == Kind::rnn_relu ? relu(pre) : tanh(pre);
}

std::tuple<Tensor, Tensor> lstm_step(const Tensor& input_gates, const Tensor& h, const Tensor& c, const Tensor& w_hh,
                                     const Tensor& b_hh) {
  const std::vector<Tensor> gates = (gates_of(h, w_hh, b_hh) + input_gates).chunk(4, 1);
  const Tensor in = sigmoid(gates[0]), forget = sigmoid(gates[1]), cell = tanh(gates[2]), out = sigmoid(gates[3]);
  const Tensor c_next = forget * c + in * cell;
  return {out * tanh(c_next), c_next};
}

Tensor gru_step(const Tensor& input_gates, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh) {
  const std::vector<Tensor> from_x = input_gates.chunk(3, 1), from_h = gates_of(h, w_hh, b_hh).chunk(3, 1);
  const Tensor reset = sigmoid(from_x[0] + from_h[0]), update = sigmoid(from_x[1] + from_h[1]);
  const Tensor candidate = tanh(from_x[2] + from_h[2] * reset);
  return (h - candidate) * update + candidate;  // (1 - update) * candidate + update * h
}

// A cell's operands: x [N, I], states [N, H], weights [G*H, I] and [G*H, H], biases [G*H].
void check_cell(const char* op, int64_t gates, const Tensor& x, std::initializer_list<const Tensor*> states,
                const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  TD_CHECK(x.defined() && w_ih.defined() && w_hh.defined(), op, ": the input and the weights must be defined");
  TD_CHECK(x.dim() == 2, op, ": expected a 2-D input [N, input_size], got ", shape_str(x.sizes()));
  TD_CHECK(w_hh.dim() == 2 && w_hh.size(0) % gates == 0 && w_hh.size(0) / gates == w_hh.size(1), op,
           ": weight_hh must be [", gates, " * hidden_size, hidden_size], got ", shape_str(w_hh.sizes()));
  const int64_t hidden = w_hh.size(1);
  TD_CHECK(w_ih.dim() == 2 && w_ih.size(0) == gates * hidden && w_ih.size(1) == x.size(1), op, ": weight_ih must be [",
           gates * hidden, ", ", x.size(1), "] for the input ", shape_str(x.sizes()), ", got ",
           shape_str(w_ih.sizes()));
  for (const Tensor* b : {&b_ih, &b_hh}) {
    TD_CHECK(!b->defined() || b->sizes() == Shape{gates * hidden}, op, ": the biases must be [", gates * hidden,
             "], got ", shape_str(b->sizes()));
  }
  for (const Tensor* s : states) {
    TD_CHECK(s->defined() && s->sizes() == Shape({x.size(0), hidden}), op, ": the state must be [", x.size(0), ", ",
             hidden, "], got ", s->defined() ? shape_str(s->sizes()) : std::string("an undefined tensor"));
  }
  for (const Tensor* t : {&w_ih, &w_hh, &b_ih, &b_hh}) {
    TD_CHECK(!t->defined() || (t->dtype() == x.dtype() && t->device() == x.device()), op,
             ": the weights must have the input's dtype and device (", x.dtype(), " on ", x.device(), "), got ",
             t->dtype(), " on ", t->device());
  }
}

std::string direction_suffix(int64_t direction) { return direction == 1 ? "_reverse" : ""; }

}  // namespace

// ---- functional cells ----

namespace functional {

Tensor rnn_tanh_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                     const Tensor& b_hh) {
  check_cell("rnn_tanh_cell", 1, x, {&h}, w_ih, w_hh, b_ih, b_hh);
  return simple_step(Kind::rnn_tanh, gates_of(x, w_ih, b_ih), h, w_hh, b_hh);
}

Tensor rnn_relu_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                     const Tensor& b_hh) {
  check_cell("rnn_relu_cell", 1, x, {&h}, w_ih, w_hh, b_ih, b_hh);
  return simple_step(Kind::rnn_relu, gates_of(x, w_ih, b_ih), h, w_hh, b_hh);
}

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& x, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                                     const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  check_cell("lstm_cell", 4, x, {&h, &c}, w_ih, w_hh, b_ih, b_hh);
  return lstm_step(gates_of(x, w_ih, b_ih), h, c, w_hh, b_hh);
}

Tensor gru_cell(const Tensor& x, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh) {
  check_cell("gru_cell", 3, x, {&h}, w_ih, w_hh, b_ih, b_hh);
  return gru_step(gates_of(x, w_ih, b_ih), h, w_hh, b_hh);
}

}  // namespace functional

// ---- RNN, LSTM, GRU ----

RecurrentBase::RecurrentBase(std::string name, Kind kind, RecurrentConfig config)
    : Module(std::move(name)), kind_(kind), config_(config) {
  const auto& c = config_;
  TD_CHECK(c.input_size > 0, this->name(), ": input_size must be positive, got ", c.input_size);
  TD_CHECK(c.hidden_size > 0, this->name(), ": hidden_size must be positive, got ", c.hidden_size);
  TD_CHECK(c.num_layers > 0, this->name(), ": num_layers must be positive, got ", c.num_layers);
  TD_CHECK(c.dropout >= 0 && c.dropout <= 1, this->name(), ": dropout must be a probability in [0, 1], got ",
           c.dropout);
  reset();
}

void RecurrentBase::reset() {
  const auto& c = config_;
  const int64_t gates = gate_count(kind_) * c.hidden_size, directions = c.bidirectional ? 2 : 1;
  weights_.clear();
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const int64_t in = layer == 0 ? c.input_size : c.hidden_size * directions;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const std::string suffix = "_l" + std::to_string(layer) + direction_suffix(direction);
      weights_.push_back(register_parameter("weight_ih" + suffix, empty({gates, in})));
      weights_.push_back(register_parameter("weight_hh" + suffix, empty({gates, c.hidden_size})));
      if (c.bias) {
        weights_.push_back(register_parameter("bias_ih" + suffix, empty({gates})));
        weights_.push_back(register_parameter("bias_hh" + suffix, empty({gates})));
      }
    }
  }
  reset_parameters();
}

void RecurrentBase::reset_parameters() {
  const double bound = 1 / std::sqrt(static_cast<double>(config_.hidden_size));
  for (Tensor& w : weights_) init::uniform_(w, -bound, bound);
}

std::string RecurrentBase::extra_repr() const {
  const auto& c = config_;
  std::string s = std::to_string(c.input_size) + ", " + std::to_string(c.hidden_size);
  if (c.num_layers != 1) s += ", num_layers=" + std::to_string(c.num_layers);
  if (!c.bias) s += ", bias=False";
  if (c.batch_first) s += ", batch_first=True";
  if (c.dropout != 0) s += ", dropout=" + python_float(c.dropout);
  if (c.bidirectional) s += ", bidirectional=True";
  return s;
}

void RecurrentBase::check_input(const Tensor& input) const {
  const std::string op = name();
  TD_CHECK(input.size(-1) == config_.input_size, op, ": the input ", shape_str(input.sizes()), " has ", input.size(-1),
           " features per step but input_size is ", config_.input_size);
  TD_CHECK(is_floating(input.dtype()) && input.dtype() == weights_[0].dtype() && input.device() == weights_[0].device(),
           op, ": the input (", input.dtype(), " on ", input.device(), ") must have the parameters' dtype and device (",
           weights_[0].dtype(), " on ", weights_[0].device(), ")");
}

Tensor RecurrentBase::initial_state(const Tensor& given, const char* which, const Shape& shape,
                                    const Tensor& like) const {
  const auto& c = config_;
  const int64_t states = c.num_layers * (c.bidirectional ? 2 : 1);
  const bool unbatched = shape.size() == 2;
  if (!given.defined()) return zeros({states, unbatched ? 1 : shape[1], c.hidden_size}, like.options());
  TD_CHECK(given.sizes() == shape, name(), ": expected ", which, " of shape ", shape_str(shape), ", got ",
           shape_str(given.sizes()));
  TD_CHECK(given.dtype() == like.dtype() && given.device() == like.device(), name(), ": ", which, " (", given.dtype(),
           " on ", given.device(), ") must have the input's dtype and device");
  return unbatched ? given.unsqueeze(1) : given;
}

RecurrentBase::Result RecurrentBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0) const {
  const auto& c = config_;
  const std::string op = name();
  TD_CHECK(input.defined(), op, ": the input is an undefined tensor");
  TD_CHECK(input.dim() == 2 || input.dim() == 3, op, ": expected a 2-D (one sequence) or 3-D input, got ",
           shape_str(input.sizes()));
  check_input(input);
  const bool unbatched = input.dim() == 2;
  // [T, N, I], time first.
  const Tensor sequence = unbatched ? input.unsqueeze(1) : c.batch_first ? input.transpose(0, 1) : input;
  TD_CHECK(sequence.size(0) > 0, op, ": the input ", shape_str(input.sizes()), " has no steps");
  const int64_t states = c.num_layers * (c.bidirectional ? 2 : 1);
  const Shape state_shape = unbatched ? Shape{states, c.hidden_size} : Shape{states, sequence.size(1), c.hidden_size};
  const Tensor h_start = initial_state(h0, "the hidden state", state_shape, input);
  const Tensor c_start = kind_ == Kind::lstm ? initial_state(c0, "the cell state", state_shape, input) : Tensor();
  Result r = recur(sequence, h_start, c_start, nullptr);
  r.output = unbatched ? r.output.squeeze(1) : c.batch_first ? r.output.transpose(0, 1) : r.output;
  if (unbatched) {
    r.h = r.h.squeeze(1);
    if (r.c.defined()) r.c = r.c.squeeze(1);
  }
  return r;
}

RecurrentBase::PackedResult RecurrentBase::run_packed(const utils::rnn::PackedSequence& input, const Tensor& h0,
                                                      const Tensor& c0) const {
  namespace rnn = utils::rnn;
  const std::string op = name();
  TD_CHECK(input.defined(), op, ": the PackedSequence is empty");
  const std::vector<int64_t> steps = rnn::detail::step_sizes(input.batch_sizes(), op.c_str());
  TD_CHECK(input.data().dim() == 2, op, ": a packed input's data must be 2-D [steps of all sequences, input_size], ",
           "got ", shape_str(input.data().sizes()));
  check_input(input.data());
  // The batch padded, longest sequence first, as the packing orders it; the given states follow.
  const Tensor sequence = rnn::detail::unpack_sorted(input.data(), steps, 0, static_cast<int64_t>(steps.size()));
  const std::vector<int64_t> lengths = rnn::detail::sorted_lengths(steps);
  const auto& c = config_;
  const Shape state_shape{c.num_layers * (c.bidirectional ? 2 : 1), steps.front(), c.hidden_size};
  auto sorted = [&](const Tensor& state) {
    return state.defined() && input.sorted_indices().defined() ? state.index_select(1, input.sorted_indices()) : state;
  };
  auto unsorted = [&](const Tensor& state) {
    return state.defined() && input.unsorted_indices().defined() ? state.index_select(1, input.unsorted_indices())
                                                                 : state;
  };
  const Tensor h_start = sorted(initial_state(h0, "the hidden state", state_shape, input.data()));
  const Tensor c_start =
      kind_ == Kind::lstm ? sorted(initial_state(c0, "the cell state", state_shape, input.data())) : Tensor();
  const Result r = recur(sequence, h_start, c_start, &lengths);
  return {rnn::PackedSequence(rnn::detail::pack_sorted(r.output, steps), input.batch_sizes(), input.sorted_indices(),
                              input.unsorted_indices()),
          unsorted(r.h), unsorted(r.c)};
}

RecurrentBase::Result RecurrentBase::recur(Tensor sequence, const Tensor& h_start, const Tensor& c_start,
                                           const std::vector<int64_t>* lengths) const {
  const auto& c = config_;
  const int64_t steps = sequence.size(0), directions = c.bidirectional ? 2 : 1;
  // running[t]: [N, 1], whether step t lies inside each sequence; past its end a state stays as
  // it was (running forwards), or as it starts (backwards, which begins at the sequence's end).
  Tensor running;
  if (lengths) {
    const TensorOptions long_options = TensorOptions(kInt64).device(sequence.device());
    running = (arange(steps, long_options).view({steps, 1}) < tensor(*lengths).to(sequence.device()).view({1, -1}))
                  .unsqueeze(-1);
  }
  const size_t per_direction = c.bias ? 4 : 2;
  std::vector<Tensor> h_last, c_last;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    std::vector<Tensor> outputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const size_t first = static_cast<size_t>(layer * directions + direction) * per_direction;
      const Tensor& w_ih = weights_[first];
      const Tensor& w_hh = weights_[first + 1];
      const Tensor b_ih = c.bias ? weights_[first + 2] : Tensor(), b_hh = c.bias ? weights_[first + 3] : Tensor();
      // The input's share of every step's gates in one product, [T, N, G*H].
      const Tensor gates_in = F::linear(sequence, w_ih, b_ih);
      Tensor h = h_start[layer * directions + direction];
      Tensor cell = kind_ == Kind::lstm ? c_start[layer * directions + direction] : Tensor();
      std::vector<Tensor> hs(static_cast<size_t>(steps));
      for (int64_t i = 0; i < steps; ++i) {
        const int64_t t = direction == 0 ? i : steps - 1 - i;
        Tensor h_next, c_next;
        if (kind_ == Kind::lstm) {
          std::tie(h_next, c_next) = lstm_step(gates_in[t], h, cell, w_hh, b_hh);
        } else if (kind_ == Kind::gru) {
          h_next = gru_step(gates_in[t], h, w_hh, b_hh);
        } else {
          h_next = simple_step(kind_, gates_in[t], h, w_hh, b_hh);
        }
        h = lengths ? where(running[t], h_next, h) : h_next;
        if (c_next.defined()) cell = lengths ? where(running[t], c_next, cell) : c_next;
        hs[static_cast<size_t>(t)] = h;
      }
      outputs.push_back(stack(hs, 0));
      h_last.push_back(h);
      if (kind_ == Kind::lstm) c_last.push_back(cell);
    }
    sequence = directions == 1 ? outputs[0] : cat(outputs, 2);
    if (c.dropout > 0 && layer + 1 < c.num_layers && is_training()) sequence = F::dropout(sequence, c.dropout, true);
  }
  Result r;
  r.output = sequence;
  r.h = stack(h_last, 0);
  if (kind_ == Kind::lstm) r.c = stack(c_last, 0);
  return r;
}

namespace {

Kind rnn_kind(RNNNonlinearity n) { return n == kReLU ? Kind::rnn_relu : Kind::rnn_tanh; }

}  // namespace

RNNImpl::RNNImpl(const RNNOptions& options_)
    : Cloneable("RNN", rnn_kind(options_.nonlinearity_), options_.config), options(options_) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, const Tensor& hx) {
  Result r = run(input, hx, Tensor());
  return {r.output, r.h};
}

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& input, const Tensor& hx) {
  PackedResult r = run_packed(input, hx, Tensor());
  return {r.output, r.h};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_) : Cloneable("LSTM", Kind::lstm, options_.config), options(options_) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 const std::optional<std::tuple<Tensor, Tensor>>& hx) {
  Result r = hx ? run(input, std::get<0>(*hx), std::get<1>(*hx)) : run(input, Tensor(), Tensor());
  return {r.output, {r.h, r.c}};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& input, const std::optional<std::tuple<Tensor, Tensor>>& hx) {
  PackedResult r = hx ? run_packed(input, std::get<0>(*hx), std::get<1>(*hx)) : run_packed(input, Tensor(), Tensor());
  return {r.output, {r.h, r.c}};
}

GRUImpl::GRUImpl(const GRUOptions& options_) : Cloneable("GRU", Kind::gru, options_.config), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, const Tensor& hx) {
  Result r = run(input, hx, Tensor());
  return {r.output, r.h};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& input, const Tensor& hx) {
  PackedResult r = run_packed(input, hx, Tensor());
  return {r.output, r.h};
}

// ---- cells ----

CellBase::CellBase(std::string name, int64_t gates, RNNCellOptions options_)
    : Module(std::move(name)), options(options_), gates_(gates) {
  TD_CHECK(options.input_size_ > 0, this->name(), ": input_size must be positive, got ", options.input_size_);
  TD_CHECK(options.hidden_size_ > 0, this->name(), ": hidden_size must be positive, got ", options.hidden_size_);
  reset();
}

void CellBase::reset() {
  const int64_t rows = gates_ * options.hidden_size_;
  weight_ih = register_parameter("weight_ih", empty({rows, options.input_size_}));
  weight_hh = register_parameter("weight_hh", empty({rows, options.hidden_size_}));
  bias_ih = register_parameter("bias_ih", options.bias_ ? empty({rows}) : Tensor());
  bias_hh = register_parameter("bias_hh", options.bias_ ? empty({rows}) : Tensor());
  reset_parameters();
}

void CellBase::reset_parameters() {
  const double bound = 1 / std::sqrt(static_cast<double>(options.hidden_size_));
  for (Tensor* w : {&weight_ih, &weight_hh, &bias_ih, &bias_hh}) {
    if (w->defined()) init::uniform_(*w, -bound, bound);
  }
}

std::string CellBase::extra_repr() const {
  std::string s = std::to_string(options.input_size_) + ", " + std::to_string(options.hidden_size_);
  if (!options.bias_) s += ", bias=False";
  if (gates_ == 1 && options.nonlinearity_ == kReLU) s += ", nonlinearity=relu";
  return s;
}

Tensor CellBase::batched_state(const Tensor& x, const Tensor& state, bool& unbatched, const char* which) const {
  const std::string& op = name();
  TD_CHECK(x.defined(), op, ": the input is an undefined tensor");
  TD_CHECK(x.dim() == 1 || x.dim() == 2, op, ": expected a 1-D or 2-D input, got ", shape_str(x.sizes()));
  unbatched = x.dim() == 1;
  const int64_t batch = unbatched ? 1 : x.size(0);
  if (!state.defined()) return zeros({batch, options.hidden_size_}, x.options());
  TD_CHECK(state.dim() == x.dim(), op, ": ", which, " ", shape_str(state.sizes()), " must have the input's ",
           x.dim(), " dims (the input is ", shape_str(x.sizes()), ")");
  return unbatched ? state.unsqueeze(0) : state;
}

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options_) : Cloneable("RNNCell", 1, options_) {}

Tensor RNNCellImpl::forward(const Tensor& x, const Tensor& hx) {
  bool unbatched = false;
  const Tensor h = batched_state(x, hx, unbatched, "hx");
  const Tensor x2 = unbatched ? x.unsqueeze(0) : x;
  const Tensor out = options.nonlinearity_ == kReLU ? F::rnn_relu_cell(x2, h, weight_ih, weight_hh, bias_ih, bias_hh)
                                                    : F::rnn_tanh_cell(x2, h, weight_ih, weight_hh, bias_ih, bias_hh);
  return unbatched ? out.squeeze(0) : out;
}

LSTMCellImpl::LSTMCellImpl(const RNNCellOptions& options_) : Cloneable("LSTMCell", 4, options_) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& x,
                                                 const std::optional<std::tuple<Tensor, Tensor>>& hx) {
  bool unbatched = false;
  const Tensor h = batched_state(x, hx ? std::get<0>(*hx) : Tensor(), unbatched, "h");
  const Tensor c = batched_state(x, hx ? std::get<1>(*hx) : Tensor(), unbatched, "c");
  auto [h_next, c_next] =
      F::lstm_cell(unbatched ? x.unsqueeze(0) : x, h, c, weight_ih, weight_hh, bias_ih, bias_hh);
  if (unbatched) return {h_next.squeeze(0), c_next.squeeze(0)};
  return {h_next, c_next};
}

GRUCellImpl::GRUCellImpl(const RNNCellOptions& options_) : Cloneable("GRUCell", 3, options_) {}

Tensor GRUCellImpl::forward(const Tensor& x, const Tensor& hx) {
  bool unbatched = false;
  const Tensor h = batched_state(x, hx, unbatched, "hx");
  const Tensor out = F::gru_cell(unbatched ? x.unsqueeze(0) : x, h, weight_ih, weight_hh, bias_ih, bias_hh);
  return unbatched ? out.squeeze(0) : out;
}

}  // namespace tandem::nn
