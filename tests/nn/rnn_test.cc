// RNN, LSTM and GRU and their cells against PyTorch 2.15 (float64, the same parameter values set
// by name): outputs, final states and gradients through layers, directions, batch_first and
// unbatched inputs; parameter names and shapes, printing, cloning, training and the errors.
#include <cmath>

#include "tests/nn/pytorch_reference.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::same_as_pytorch;
using td::testing::values;
using td::testing::sine_ramp;  // the inputs the PyTorch reference values were computed on

TEST_CASE("LSTM, two layers both ways, batch first, with given states: PyTorch's outputs and gradients", "[cpu]") {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  std::vector<std::string> names;
  for (const auto& [name, p] : lstm->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                          "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                                          "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1",
                                          "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse",
                                          "bias_ih_l1_reverse", "bias_hh_l1_reverse"});
  CHECK(lstm->named_parameters()[8].second.sizes() == Shape{16, 8});  // layer 1 reads both directions
  td::testing::set_sine_parameters(*lstm);
  Tensor x = sine_ramp({2, 5, 3}, 0.3).requires_grad_(true);
  const Tensor h0 = sine_ramp({4, 2, 4}, 0.7) * 0.5, c0 = sine_ramp({4, 2, 4}, 0.9) * 0.5;
  auto [out, state] = lstm(x, std::make_tuple(h0, c0));
  auto [h, c] = state;
  CHECK(out.sizes() == Shape{2, 5, 8});
  CHECK(h.sizes() == Shape{4, 2, 4});
  ((out * sine_ramp(out.sizes(), 0.11)).sum() + h.sum() * 0.5 + c.sum() * 0.25).backward();
  same_as_pytorch(out, {0.030126305784399534, -0.30227684210548694, -0.06366320619222417, -0.08386476716001433, -0.13213296439262534, 0.5441944517129486, 0.026473041734662753, -0.10497721656174558}, -0.6769662941053338, "lstm out");
  same_as_pytorch(h, {-0.15658938215033277, -0.15642405622861502, -0.0955540770709399, -0.07839756265458685, -0.12061927994665114, -0.19406996039671534, -0.3062976615258897, -0.4792457176667459}, -0.36364136270376135, "lstm h");
  same_as_pytorch(c, {-0.34174508902989903, -0.4894379878531203, -0.34122405913986087, -0.24818524162275907, -0.651911430506237, -1.1884702787734929, -1.3294250970228874, -1.1729216980723813}, -3.3044043246438197, "lstm c");
  same_as_pytorch(x.grad(), {0.028701739601357044, 0.0661040831472298, 0.07491814285615031, -0.029665594545121642, -0.003869926901813668, 0.010001719719406346, -0.09108632718716728, -0.06148742835108918}, -2.696432200927351, "lstm gx");
  same_as_pytorch(lstm->named_parameters()[13].second.grad(), {-0.009324645436044571, -0.12142812686277991, -0.023528406123382205, 0.012516193610532678, 0.045081949188361836, 0.2162811398697117, 0.04231846011462767, -0.025656180441841436}, 3.666914426368243, "lstm gw");
  same_as_pytorch(lstm->named_parameters()[2].second.grad(), {-0.1284775421659554, -0.12448989200789169, -0.07614156651427487, -0.06797868995111075, -0.10259327012197471, -0.2093901072835507, -0.2840636708455739, -0.30007954398969705}, 0.7897173683384535, "lstm gb");
}

TEST_CASE("GRU, two layers, time first, zero initial state: PyTorch's outputs and gradients", "[cpu]") {
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2));
  td::testing::set_sine_parameters(*gru);
  Tensor x = sine_ramp({5, 2, 3}, 0.3).requires_grad_(true);
  auto [out, h] = gru(x);
  CHECK(out.sizes() == Shape{5, 2, 4});
  ((out * sine_ramp(out.sizes(), 0.11)).sum() + h.sum() * 0.5).backward();
  same_as_pytorch(out, {-0.003965449546913319, 0.13429651479560412, 0.5042801314402089, 0.1770942009676184, -0.0048632432008013805, 0.09650400353860414, 0.542571738218002, 0.16058685065581818}, 9.320871034857737, "gru out");
  same_as_pytorch(h, {0.09937328798510908, -0.0381857068588648, -0.19247903458037285, -0.40217277317846845, 0.04058094273806151, -0.16006636022453646, -0.3688426268600583, -0.5802269256203122}, 0.27998671316288626, "gru h");
  same_as_pytorch(x.grad(), {-0.033585589415723, -0.031081728322216156, -0.027879838618822757, -0.01142984446604857, -0.015493760036486438, -0.019209719159069546, -0.022538902503933974, -0.023183595258956375}, -1.8921858653542207, "gru gx");
  same_as_pytorch(gru->named_parameters()[1].second.grad(), {0.00044436262564684397, 0.0013941792810780863, 0.002126144186036019, 0.003198918572344907, -0.0022635966817786167, -0.0014278395031528703, -0.0003676520069208017, 0.0024633872632563738}, 0.46917322398517963, "gru gw");
}

TEST_CASE("RNN with relu and no bias on one unbatched sequence: PyTorch's outputs and gradients", "[cpu]") {
  nn::RNN rnn(nn::RNNOptions(3, 4).nonlinearity(nn::kReLU).bias(false));
  CHECK(rnn->parameters().size() == 2);
  td::testing::set_sine_parameters(*rnn);
  Tensor x = sine_ramp({5, 3}, 0.3).requires_grad_(true);
  auto [out, h] = rnn(x);
  CHECK(out.sizes() == Shape{5, 4});
  CHECK(h.sizes() == Shape{1, 4});
  (out * sine_ramp(out.sizes(), 0.11)).sum().backward();
  same_as_pytorch(out, {0.0844100992876614, 0.2206981823395885, 0.313043978276709, 0.34306090395684535, 0.3490354384692223, 0.9908860181991266, 1.167412802169836, 0.9482100443570168}, 15.28228786866441, "rnn out");
  same_as_pytorch(h, {0.32902075692481947, 1.0745327802936675, 0.4936104101154808, 0.0}, 1.8971639473339679, "rnn h");
  same_as_pytorch(x.grad(), {1.4866998248756564, 1.7451054640659316, 1.9643197967574402, 1.795692787392454, 2.125078604498536, 2.4067397375452217, 2.0240533147299646, 2.3571711030690907}, 23.611681009598733, "rnn gx");
  same_as_pytorch(rnn->named_parameters()[0].second.grad(), {3.894638526278833, 3.7624291276652846, 3.294133140536509, 4.1832828512787685, 4.041340888768036, 3.538397980792059, 4.273132206007014, 4.105234166840968}, 47.195259464334285, "rnn gw");
}

TEST_CASE("LSTMCell, GRUCell and RNNCell give PyTorch's step, batched and not", "[cpu]") {
  const Tensor x = sine_ramp({2, 3}, 0.3);
  nn::LSTMCell lstm(3, 4);
  td::testing::set_sine_parameters(*lstm);
  auto [h, c] = lstm(x, std::make_tuple(sine_ramp({2, 4}, 0.7) * 0.5, sine_ramp({2, 4}, 0.9) * 0.5));
  same_as_pytorch(h, {0.01997980796527989, -0.08100460337233169, -0.17374425668799234, -0.24263294920009254, -0.09876208580866884, -0.1708222274264853, -0.2716354631708816, -0.39415962640898333}, -1.4127814041101558, "lstmcell h");
  same_as_pytorch(c, {0.0683932662568192, -0.18461976935853197, -0.3341090049918021, -0.48603776358296513, -0.552364549810369, -0.9331774093456631, -0.9273734266874929, -0.7654767209818638}, -4.114765378501868, "lstmcell c");
  nn::GRUCell gru(3, 4);
  td::testing::set_sine_parameters(*gru);
  same_as_pytorch(gru(x, sine_ramp({2, 4}, 0.7) * 0.5), {0.011098635987102257, 0.016409243045923283, 0.061394057435839255, -0.002270109258567077, 0.08729843473856069, -0.27624851000064443, -0.5744831452750297, -0.7092302218472784}, -1.3860316151740941, "grucell");
  nn::RNNCell rnn(3, 4);
  td::testing::set_sine_parameters(*rnn);
  same_as_pytorch(rnn(x), {0.08421019319508345, 0.4867890246563429, 0.7084483428280712, 0.7933175627389865, 0.17190095189641957, 0.7305535457411978, 0.90724538787462, 0.9480965762442816}, 4.830561585175003, "rnncell");
  same_as_pytorch(rnn(x[0]), {0.08421019319508345, 0.4867890246563429, 0.7084483428280712, 0.7933175627389865}, 2.0727651234184843, "rnncell unbatched");
  CHECK(rnn(x[0]).sizes() == Shape{4});
  // Sequential calls a cell's one-tensor forward (zero state).
  nn::Sequential seq(nn::RNNCell(3, 4));
  CHECK(seq(x.to(td::kFloat32)).sizes() == Shape{2, 4});
}

TEST_CASE("recurrent layers: shapes of every state, printing, cloning, dropout only while training", "[cpu]") {
  td::testing::reseed(91);
  td::manual_seed(91);
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(3).dropout(0.5));
  // U(-1/sqrt(5), 1/sqrt(5)) for every parameter.
  for (const Tensor& p : lstm->parameters()) CHECK(p.abs().max().item<double>() <= 1 / std::sqrt(5.0));
  const Tensor x = td::randn({7, 2, 3});
  lstm->eval();
  auto [out1, s1] = lstm(x);
  auto [out2, s2] = lstm(x);
  check_close(out1, values(out2), 0, 0);  // no dropout in eval mode
  lstm->train();
  auto [out3, s3] = lstm(x);
  CHECK(std::get<1>(s3).sizes() == Shape{3, 2, 5});
  // Dropout acts between layers only: layer 0 runs as in eval mode, the layers above it see
  // dropped inputs, and the last layer's output itself is not dropped.
  check_close(std::get<0>(s3)[0], values(std::get<0>(s1)[0]), 0, 0);
  check_close(std::get<1>(s3)[0], values(std::get<1>(s1)[0]), 0, 0);
  CHECK(values(std::get<0>(s3)[1]) != values(std::get<0>(s1)[1]));
  CHECK(values(out3) != values(out1));
  CHECK((out3 == 0).sum().item<int64_t>() == 0);
  auto copy = std::dynamic_pointer_cast<nn::LSTMImpl>(lstm->clone());
  REQUIRE(copy != nullptr);
  copy->eval();
  check_close(std::get<0>(copy->forward(x)), values(out1), 0, 0);
  CHECK_FALSE(copy->all_weights()[0].is_alias_of(lstm->all_weights()[0]));
  CHECK(copy->all_weights().size() == 12);
  CHECK(nn::LSTM(10, 20)->str() == "LSTM(10, 20)");
  CHECK(nn::LSTM(nn::LSTMOptions(10, 20).num_layers(2).bias(false).batch_first(true).dropout(0.5).bidirectional(true))
            ->str() == "LSTM(10, 20, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)");
  CHECK(nn::GRU(nn::GRUOptions(3, 4).num_layers(2))->str() == "GRU(3, 4, num_layers=2)");
  CHECK(nn::RNN(10, 20)->str() == "RNN(10, 20)");
  CHECK(nn::LSTMCell(10, 20)->str() == "LSTMCell(10, 20)");
  CHECK(nn::GRUCell(nn::RNNCellOptions(3, 4).bias(false))->str() == "GRUCell(3, 4, bias=False)");
  CHECK(nn::RNNCell(nn::RNNCellOptions(3, 4).nonlinearity(nn::kReLU))->str() == "RNNCell(3, 4, nonlinearity=relu)");
  // A GRU over a batch of sequences, both ways: output [T, N, 2H], h_n [2, N, H], its last step's
  // forward half the forward direction's final state.
  nn::GRU both(nn::GRUOptions(3, 4).bidirectional(true));
  auto [seq, h_n] = both(x);
  CHECK(seq.sizes() == Shape{7, 2, 8});
  check_close(seq[6].narrow(1, 0, 4), values(h_n[0]), 0, 0);
  check_close(seq[0].narrow(1, 4, 4), values(h_n[1]), 0, 0);
}

TEST_CASE("an LSTM classifier learns which of two patterns a sequence follows", "[cpu]") {
  td::testing::reseed(92);
  td::manual_seed(92);
  // Sequences of 6 steps: rising (label 1) or falling (label 0), with noise.
  const Tensor labels = td::randint(0, 2, {64});
  const Tensor steps = td::arange(6, td::kFloat32).view({1, 6, 1}) / 5;
  const Tensor rising = labels.to(td::kFloat32).view({64, 1, 1});
  const Tensor x = rising * steps + (1 - rising) * (1 - steps) + td::randn({64, 6, 1}) * 0.1;
  nn::LSTM lstm(nn::LSTMOptions(1, 8).batch_first(true));
  nn::Linear head(8, 2);
  std::vector<Tensor> params = lstm->parameters();
  for (const Tensor& p : head->parameters()) params.push_back(p);
  td::optim::Adam opt(params, td::optim::AdamOptions(0.05));
  double loss_value = 0;
  for (int step = 0; step < 60; ++step) {
    auto [out, state] = lstm(x);
    Tensor loss = F::cross_entropy(head(std::get<0>(state)[0]), labels);
    loss_value = loss.item<double>();
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
  auto [out, state] = lstm(x);
  const Tensor predicted = head(std::get<0>(state)[0]).argmax(1);
  CHECK((predicted == labels).to(td::kFloat32).mean().item<double>() == 1.0);
  CHECK(loss_value < 0.1);
}

TEST_CASE("recurrent layers' errors name the layer and the shapes; inputs unchanged", "[cpu]") {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  const Tensor x = td::ones({5, 2, 3});
  const Snapshot before(x);
  check_error([&] { lstm(td::ones({5, 2, 4})); }, {"LSTM", "[5, 2, 4]", "4 features", "input_size is 3"});
  check_error([&] { lstm(x, std::make_tuple(td::zeros({4, 2, 4}), td::zeros({3, 2, 4}))); },
              {"LSTM", "cell state", "[4, 2, 4]", "[3, 2, 4]"});
  check_error([&] { lstm(x, std::make_tuple(td::zeros({2, 4}), td::zeros({4, 2, 4}))); },
              {"LSTM", "hidden state", "[4, 2, 4]", "[2, 4]"});
  check_error([&] { lstm(td::ones({0, 2, 3})); }, {"LSTM", "[0, 2, 3]", "no steps"});
  check_error([&] { lstm(td::ones({5, 2, 3}, td::kFloat64)); }, {"LSTM", "float64", "float32"});
  check_error([&] { lstm(td::ones({1, 5, 2, 3})); }, {"LSTM", "3-D", "[1, 5, 2, 3]"});
  check_error([] { nn::LSTM(3, 0); }, {"LSTM", "hidden_size", "0"});
  check_error([] { nn::GRU(nn::GRUOptions(3, 4).num_layers(0)); }, {"GRU", "num_layers", "0"});
  check_error([] { nn::RNN(nn::RNNOptions(3, 4).dropout(1.5)); }, {"RNN", "dropout", "1.5"});
  nn::GRUCell cell(3, 4);
  check_error([&] { cell(td::ones({2, 3}), td::zeros({3, 4})); }, {"gru_cell", "state", "[2, 4]", "[3, 4]"});
  check_error([&] { cell(td::ones({2, 5}), Tensor()); }, {"gru_cell", "weight_ih", "[12, 5]", "[2, 5]"});
  check_error([&] { cell(td::ones({2, 2, 3}), Tensor()); }, {"GRUCell", "1-D or 2-D", "[2, 2, 3]"});
  check_error([] { F::lstm_cell(td::ones({2, 3}), td::zeros({2, 4}), td::zeros({2, 4}), td::ones({12, 3}),
                                td::ones({12, 4})); },
              {"lstm_cell", "weight_hh", "[4 * hidden_size, hidden_size]", "[12, 4]"});
  before.check_unchanged(x);
}
