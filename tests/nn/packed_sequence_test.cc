// Packed sequences against PyTorch 2.15's torch.nn.utils.rnn: the packing's data, batch sizes and
// orders, padding back (batch first, total_length, padding values), pad_sequence on both sides;
// LSTM, GRU and RNN over packed batches (values, last states and gradients), each sequence equal
// to running it alone; the errors.
#include <numeric>

#include "tests/nn/pytorch_reference.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace rnn = td::nn::utils::rnn;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::sine_ramp;
using td::testing::Snapshot;
using td::testing::values;

namespace {

double weighted(const Tensor& t) { return (t.detach() * sine_ramp(t.sizes(), 0.23)).sum().item<double>(); }

}  // namespace

TEST_CASE("pack_padded_sequence and pad_packed_sequence lay out and restore a batch as PyTorch's", "[cpu]") {
  // PyTorch 2.15: x = sin(0.37 i) [4, 3, 2], lengths (2, 4, 1), enforce_sorted=False.
  Tensor x = sine_ramp({4, 3, 2}, 0.37).requires_grad_(true);
  const rnn::PackedSequence packed = rnn::pack_padded_sequence(x, std::vector<int64_t>{2, 4, 1}, false, false);
  check_close(packed.data().flatten(),
              {0.674287911628145, 0.8956986856800476, 0.0, 0.361615431964962, 0.99588084453764, 0.9612752029752999,
               0.18059626789423291, -0.18729466354290317, 0.7965654722360868, 0.5240443416872761, -0.8926476794282346,
               -0.669239857276262, 0.8987080958116269, 0.9964756147406005},
              0, 0);
  check_close(packed.batch_sizes(), {3, 2, 1, 1}, 0, 0);
  CHECK(packed.batch_sizes().device().is_cpu());
  check_close(packed.sorted_indices(), {1, 0, 2}, 0, 0);
  check_close(packed.unsorted_indices(), {1, 0, 2}, 0, 0);
  // Batch first, padded with -1 to 5 steps: [3, 5, 2], the lengths in the batch's order.
  const auto [padded, lengths] = rnn::pad_packed_sequence(packed, true, -1, 5);
  REQUIRE(padded.sizes() == Shape{3, 5, 2});
  check_close(padded.flatten().narrow(0, 0, 12),
              {0.0, 0.361615431964962, 0.7965654722360868, 0.5240443416872761, -1, -1, -1, -1, -1, -1,
               0.674287911628145, 0.8956986856800476},
              0, 0);
  CHECK(padded.sum().item<double>() == Approx(-10.464034331091481).epsilon(1e-14));
  check_close(lengths, {2, 4, 1}, 0, 0);
  CHECK(lengths.dtype() == td::kInt64);
  // The round trip keeps every element inside the sequences, and the gradient reaches only them.
  const auto [back, back_lengths] = rnn::pad_packed_sequence(packed);
  const Tensor inside = td::arange(4).view({4, 1}) < back_lengths.view({1, 3});
  check_close(back, values(td::where(inside.unsqueeze(-1), x.detach(), 0)), 0, 0);
  back.sum().backward();
  check_close(x.grad(), values(inside.unsqueeze(-1).expand({4, 3, 2}).to(td::kFloat64)), 0, 0);
  // A sorted batch keeps its order: no indices.
  const rnn::PackedSequence sorted = rnn::pack_padded_sequence(x.detach(), td::tensor({4, 2, 2}));
  CHECK_FALSE(sorted.sorted_indices().defined());
  check_close(sorted.batch_sizes(), {3, 3, 1, 1}, 0, 0);
}

TEST_CASE("pad_sequence pads on either side; pack_sequence packs a list", "[cpu]") {
  // PyTorch 2.15: pad_sequence([sin(0.3 i) [2, 2], sin(0.5 i) [3, 2]], batch_first=True,
  // padding_value=7, padding_side="left").
  const std::vector<Tensor> sequences = {sine_ramp({2, 2}, 0.3), sine_ramp({3, 2}, 0.5)};
  check_close(rnn::pad_sequence(sequences, true, 7, "left"),
              {7.0, 7.0, 0.0, 0.29552020666133955, 0.5646424733950354, 0.7833269096274833, 0.0, 0.479425538604203,
               0.8414709848078965, 0.9974949866040544, 0.9092974268256817, 0.5984721441039565},
              0, 0);
  const Tensor right = rnn::pad_sequence(sequences);
  REQUIRE(right.sizes() == Shape{3, 2, 2});
  check_close(right.select(1, 0).narrow(0, 0, 2), values(sequences[0]), 0, 0);
  check_close(right.select(1, 0)[2], {0, 0}, 0, 0);
  const rnn::PackedSequence packed = rnn::pack_sequence(sequences, false);
  check_close(packed.batch_sizes(), {2, 2, 1}, 0, 0);
  check_close(packed.sorted_indices(), {1, 0}, 0, 0);
  check_close(std::get<0>(rnn::pad_packed_sequence(packed)), values(right), 0, 0);
  check_error([&] { rnn::pack_sequence(sequences); }, {"pack_padded_sequence", "[2, 3]", "enforce_sorted"});
  check_error(
      [&] {
        rnn::pad_sequence({sequences[0], td::ones({2, 3}, td::kFloat64)});
      },
      {"pad_sequence", "sequence 1", "[2, 3]"});
  check_error([&] { rnn::pad_sequence(sequences, false, 0, "middle"); }, {"pad_sequence", "padding_side", "middle"});
}

TEST_CASE("unpad_sequence and unpack_sequence give the sequences back, in their order", "[cpu]") {
  const std::vector<Tensor> sequences = {sine_ramp({2, 3}, 0.3), sine_ramp({4, 3}, 0.5), sine_ramp({1, 3}, 0.7)};
  for (bool batch_first : {false, true}) {
    INFO("batch_first " << batch_first);
    const Tensor padded = rnn::pad_sequence(sequences, batch_first, -9);
    const std::vector<Tensor> back = rnn::unpad_sequence(padded, td::tensor(std::vector<int64_t>{2, 4, 1}), batch_first);
    REQUIRE(back.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(back[i].sizes() == sequences[i].sizes());
      check_close(back[i], values(sequences[i]), 0, 0);
    }
    CHECK(!back[1].is_alias_of(padded));  // copies, as PyTorch's masked selection makes them
    CHECK(padded.size(0) == (batch_first ? 3 : 4));  // the batch itself left as it was
  }
  // Packed unsorted, unpacked in the list's order; gradients reach each sequence.
  std::vector<Tensor> leaves;
  for (const Tensor& s : sequences) leaves.push_back(s.detach().requires_grad_(true));
  const std::vector<Tensor> unpacked = rnn::unpack_sequence(rnn::pack_sequence(leaves, false));
  REQUIRE(unpacked.size() == 3);
  for (size_t i = 0; i < 3; ++i) check_close(unpacked[i], values(sequences[i]), 0, 0);
  (unpacked[1] * 2).sum().backward();
  check_close(leaves[1].grad(), values(td::full({4, 3}, 2.0, td::kFloat64)), 0, 0);
  CHECK((!leaves[0].grad().defined() || values(leaves[0].grad()) == std::vector<double>(6, 0.0)));
  const Tensor padded = rnn::pad_sequence(sequences);
  const td::testing::Snapshot before(padded);
  check_error([&] { rnn::unpad_sequence(padded, std::vector<int64_t>{2, 4}); },
              {"unpad_sequence", "2 lengths", "batch of 3", "[4, 3, 3]"});
  check_error([&] { rnn::unpad_sequence(padded, std::vector<int64_t>{2, 5, 1}); },
              {"unpad_sequence", "length 5", "sequence 1", "4 steps"});
  check_error([&] { rnn::unpad_sequence(padded, td::tensor(std::vector<double>{2, 4, 1})); },
              {"unpad_sequence", "integer"});
  check_error([&] { rnn::unpad_sequence(td::ones({3}), std::vector<int64_t>{1}); }, {"unpad_sequence", "[3]"});
  before.check_unchanged(padded);
}

TEST_CASE("LSTM, GRU and RNN over packed batches give PyTorch's outputs, last states and gradients", "[cpu]") {
  // PyTorch 2.15: each layer's parameters set by name; x = sin(0.37 i) packed with the lengths;
  // loss = sum(padded output * sin(0.11 i)) + sum over the last states of sum(h * sin(0.07 i));
  // sums weighted by sin(0.23 i) of the padded output, each last state, x's gradient, the first
  // parameter's gradient and the packed data.
  struct Case {
    const char* name;
    std::shared_ptr<nn::Module> layer;
    std::vector<int64_t> lengths;
    bool enforce_sorted, batch_first;
    Tensor hx;
    std::vector<double> expected;  // y, each state, x.grad, first parameter's grad, packed data
  };
  const std::vector<Case> cases = {
      {"LSTM, two layers both ways, unsorted",
       nn::LSTM(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true)).ptr(),
       {3, 5, 2, 4},
       false,
       false,
       Tensor(),
       {0.10511480815449731, -3.3729082412369635, -9.433731850236148, 0.9223656656394824, -3.5474559768760874,
        -0.013307309675144874}},
      {"GRU, sorted, with a hidden state",
       nn::GRU(3, 5).ptr(),
       {4, 3, 1},
       true,
       false,
       sine_ramp({1, 3, 5}, 0.9),
       {-4.639835275930732, -2.8007253917375285, -1.448712548531077, -1.0718304695242464, -4.340722396370069}},
      {"RNN relu, batch first, both ways, unsorted",
       nn::RNN(nn::RNNOptions(2, 3).nonlinearity(nn::kReLU).batch_first(true).bidirectional(true)).ptr(),
       {2, 4, 3},
       false,
       true,
       Tensor(),
       {12.712843232906259, 6.022426166097149, -2.140096098419343, 15.603202086763728, 0.04787539013647579}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    td::testing::set_sine_parameters(*c.layer);
    const int64_t steps = *std::max_element(c.lengths.begin(), c.lengths.end());
    const int64_t batch = static_cast<int64_t>(c.lengths.size());
    const int64_t features = c.layer->named_parameters()[0].second.size(1);
    Tensor x = sine_ramp(c.batch_first ? Shape{batch, steps, features} : Shape{steps, batch, features}, 0.37)
                   .requires_grad_(true);
    const rnn::PackedSequence packed = rnn::pack_padded_sequence(x, c.lengths, c.batch_first, c.enforce_sorted);
    rnn::PackedSequence out;
    std::vector<Tensor> states;
    if (auto* lstm = dynamic_cast<nn::LSTMImpl*>(c.layer.get())) {
      auto [o, hc] = lstm->forward_with_packed_input(packed);
      out = o;
      states = {std::get<0>(hc), std::get<1>(hc)};
    } else if (auto* gru = dynamic_cast<nn::GRUImpl*>(c.layer.get())) {
      auto [o, h] = gru->forward_with_packed_input(packed, c.hx);
      out = o;
      states = {h};
    } else {
      auto [o, h] = dynamic_cast<nn::RNNImpl&>(*c.layer).forward_with_packed_input(packed);
      out = o;
      states = {h};
    }
    const Tensor y = std::get<0>(rnn::pad_packed_sequence(out, c.batch_first));
    Tensor loss = (y * sine_ramp(y.sizes(), 0.11)).sum();
    for (const Tensor& s : states) loss = loss + (s * sine_ramp(s.sizes(), 0.07)).sum();
    loss.backward();
    std::vector<double> got = {weighted(y)};
    for (const Tensor& s : states) got.push_back(weighted(s));
    got.push_back(weighted(x.grad()));
    got.push_back(weighted(c.layer->named_parameters()[0].second.grad()));
    got.push_back(weighted(out.data()));
    REQUIRE(got.size() == c.expected.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(c.expected[i]).epsilon(1e-12));
  }
}

TEST_CASE("a packed LSTM runs each sequence as if alone: its outputs, and its last states at its own end", "[cpu]") {
  td::testing::reseed(90);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  lstm->to(td::kFloat64);
  const std::vector<int64_t> lengths = {2, 6, 4, 1, 6};
  std::vector<Tensor> sequences;
  for (int64_t length : lengths) sequences.push_back(td::testing::random_tensor({length, 3}, td::kFloat64));
  const Tensor h0 = td::testing::random_tensor({4, 5, 4}, td::kFloat64);
  const Tensor c0 = td::testing::random_tensor({4, 5, 4}, td::kFloat64);
  auto [out, states] = lstm->forward_with_packed_input(rnn::pack_sequence(sequences, false), std::tuple{h0, c0});
  const auto [padded, got_lengths] = rnn::pad_packed_sequence(out, true);
  check_close(got_lengths, {2, 6, 4, 1, 6}, 0, 0);
  for (size_t b = 0; b < lengths.size(); ++b) {
    INFO("sequence " << b);
    const int64_t i = static_cast<int64_t>(b);
    auto [alone, alone_states] =
        lstm->forward(sequences[b], std::tuple{h0.select(1, i).contiguous(), c0.select(1, i).contiguous()});
    check_close(padded[i].narrow(0, 0, lengths[b]), values(alone), 1e-14, 1e-14);
    if (lengths[b] < 6)
      check_close(padded[i].narrow(0, lengths[b], 6 - lengths[b]), values(td::zeros({6 - lengths[b], 8}, td::kFloat64)),
                  0, 0);
    check_close(std::get<0>(states).select(1, i), values(std::get<0>(alone_states)), 1e-14, 1e-14);
    check_close(std::get<1>(states).select(1, i), values(std::get<1>(alone_states)), 1e-14, 1e-14);
  }
}

TEST_CASE("packing refuses bad lengths and states by name, its input unchanged", "[cpu]") {
  const Tensor x = sine_ramp({4, 3, 2}, 0.3);
  const Snapshot before(x);
  check_error(
      [&] {
        rnn::pack_padded_sequence(x, std::vector<int64_t>{2, 4, 1});
      },
      {"pack_padded_sequence", "[2, 4, 1]", "enforce_sorted"});
  check_error(
      [&] {
        rnn::pack_padded_sequence(x, std::vector<int64_t>{4, 2});
      },
      {"pack_padded_sequence", "a length per sequence (3", "got 2"});
  check_error(
      [&] {
        rnn::pack_padded_sequence(x, std::vector<int64_t>{5, 2, 1});
      },
      {"pack_padded_sequence", "[1, 4]", "[5, 2, 1]"});
  check_error([&] { rnn::pack_padded_sequence(x, std::vector<int64_t>{4, 0, 0}); }, {"pack_padded_sequence", "[1, 4]"});
  check_error([&] { rnn::pack_padded_sequence(x, td::tensor({4.0, 2.0, 1.0})); }, {"pack_padded_sequence", "integer"});
  check_error([&] { rnn::pack_padded_sequence(x[0], std::vector<int64_t>{1}); }, {"pack_padded_sequence", "[3, 2]"});
  check_error(
      [] {
        rnn::pack_padded_sequence(td::ones({3, 0, 2}), std::vector<int64_t>{});
      },
      {"pack_padded_sequence", "empty", "[3, 0, 2]"});
  check_error(
      [] {
        rnn::pack_padded_sequence(td::ones({3, 2, 0}), std::vector<int64_t>{3, 3});
      },
      {"pack_padded_sequence", "empty", "[3, 2, 0]"});
  const rnn::PackedSequence packed = rnn::pack_padded_sequence(x, std::vector<int64_t>{4, 2, 1});
  check_error([&] { rnn::pad_packed_sequence(packed, false, 0, 3); },
              {"pad_packed_sequence", "total_length (3)", "(4)"});
  nn::GRU gru(2, 5);
  gru->to(td::kFloat64);
  check_error(
      [&] {
        gru->forward_with_packed_input(packed, td::zeros({1, 2, 5}, td::kFloat64));
      },
      {"GRU", "hidden state", "[1, 3, 5]", "[1, 2, 5]"});
  check_error(
      [&] {
        gru->forward_with_packed_input(rnn::pack_padded_sequence(x.to(td::kFloat32), std::vector<int64_t>{4, 2, 1}));
      },
      {"GRU", "float32", "float64"});
  check_error(
      [] {
        rnn::PackedSequence(td::ones({5, 2}), td::tensor({3, 3}));
      },
      {"PackedSequence", "sum to 6", "5 rows"});
  check_error(
      [&] {
        gru->forward_with_packed_input(rnn::PackedSequence(td::ones({5, 1, 2}, td::kFloat64), td::tensor({2, 2, 1})));
      },
      {"GRU", "2-D", "[5, 1, 2]"});
  check_error([] { rnn::PackedSequence(td::ones({5, 2}), td::tensor({2, 3})); }, {"PackedSequence", "not", "increase"});
  before.check_unchanged(x);
}
