// Losses against values PyTorch 2.15 computed for the same float64 inputs (x = 3 sin(0.7 i),
// targets [0, 3, 1, ignored, 2], class weights [0.5, 1, 2, 1.5]), plus gradcheck of each.
#include <cmath>
#include <limits>

#include "tests/testing.h"

namespace td = tandem;
namespace F = td::nn::functional;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

Tensor scores() { return (td::arange(20, td::kFloat64) * 0.7).sin().reshape({5, 4}) * 3; }
Tensor targets() { return td::tensor({0, 3, 1, -100, 2}); }
Tensor class_weights() { return td::tensor({0.5, 1.0, 2.0, 1.5}, td::kFloat64); }
Tensor probabilities() { return td::arange(20, td::kFloat64).cos().reshape({5, 4}).softmax(1); }

double scalar(const Tensor& t) { return t.item<double>(); }

}  // namespace

TEST_CASE("cross_entropy matches PyTorch for index targets with weights, ignore_index and smoothing", "[cpu]") {
  Tensor x = scores(), t = targets(), w = class_weights();
  CHECK(scalar(F::cross_entropy(x, t)) == Approx(3.289153309181816).epsilon(1e-13));
  CHECK(scalar(F::cross_entropy(x, t, w)) == Approx(3.086626278718615).epsilon(1e-13));
  CHECK(scalar(F::cross_entropy(x, t, w, -100, td::kMean, 0.2)) == Approx(2.898196560927279).epsilon(1e-13));
  CHECK(scalar(F::cross_entropy(x, t, Tensor(), -100, td::kMean, 0.1)) == Approx(3.2050090083527665).epsilon(1e-13));
  CHECK(scalar(F::cross_entropy(x, t, Tensor(), -100, td::kSum)) == Approx(13.156613236727264).epsilon(1e-13));
  CHECK(scalar(F::cross_entropy(x, t, w, -100, td::kSum, 0.2)) == Approx(14.490982804636392).epsilon(1e-13));
  check_close(F::cross_entropy(x, t, w, -100, td::kNone),
              {1.8501603138268585, 6.168850050410211, 3.2733307882441376, 0.0, 4.140790241111868}, 1e-13, 0);
  check_close(F::cross_entropy(x, t, w, -100, td::kNone, 0.2),
              {1.8187187283967277, 5.73640019838459, 3.0749968335494167, 0.0, 3.8608670443056585}, 1e-13, 0);
  check_close(F::cross_entropy(x, t, Tensor(), -100, td::kNone, 0.1),
              {3.51335486886309, 3.958067676179047, 3.2010723012488564, 0.0, 2.1475411871200714}, 1e-13, 0);
}

TEST_CASE("cross_entropy with a -inf score: smoothing by the option gives PyTorch's inf and NaN", "[cpu]") {
  // PyTorch 2.15, float32: 0.9741 without smoothing; with 1e-50 (1e-50 / 3 is 0 in float32) the
  // smoothing term is 0 * inf, NaN; with 0.1 it is inf. The second row has no -inf.
  const Tensor x = td::tensor(std::vector<float>{0.5f, -std::numeric_limits<float>::infinity(), 1.0f, 0.2f, 0.3f, 0.4f})
                       .view({2, 3});
  const Tensor t = td::tensor(std::vector<int64_t>{0, 2});
  check_close(F::cross_entropy(x, t, {}, -100, td::kNone, 0.0), {0.9741, 1.0019}, 1e-4, 0);
  check_close(F::cross_entropy(x, t, {}, -100, td::kNone, 1e-50), {std::nan(""), 1.0019}, 1e-4, 0);
  check_close(F::cross_entropy(x, t, {}, -100, td::kNone, 0.1), {std::numeric_limits<double>::infinity(), 1.0119},
              1e-4, 0);
}

TEST_CASE("cross_entropy and nll_loss take uint8 class indices as PyTorch does, and refuse int32", "[cpu]") {
  td::testing::reseed(301);
  const Tensor x = td::randn({4, 3}, td::kFloat64);
  const Tensor t64 = td::tensor(std::vector<int64_t>{0, 2, 1, 2}), t8 = t64.to(td::kUInt8);
  const Tensor w = td::tensor(std::vector<double>{0.5, 1.0, 2.0});
  check_close(F::cross_entropy(x, t8), F::cross_entropy(x, t64), 0, 0);
  check_close(F::cross_entropy(x, t8, w, -100, td::kMean, 0.1), F::cross_entropy(x, t64, w, -100, td::kMean, 0.1), 0, 0);
  check_close(F::nll_loss(x, t8, w), F::nll_loss(x, t64, w), 0, 0);
  check_error([&] { F::cross_entropy(x, t64.to(td::kInt32)); }, {"cross_entropy", "int64 (or uint8)", "int32"});
  check_error([&] { F::nll_loss(x, t64.to(td::kInt32)); }, {"nll_loss", "int64 (or uint8)", "int32"});
}

TEST_CASE("cross_entropy matches PyTorch for probability targets", "[cpu]") {
  Tensor x = scores(), p = probabilities(), w = class_weights();
  CHECK(scalar(F::cross_entropy(x, p, w, -100, td::kMean, 0.3)) == Approx(2.8815389060410124).epsilon(1e-13));
  CHECK(scalar(F::cross_entropy(x, p, w, -100, td::kSum, 0.3)) == Approx(14.407694530205061).epsilon(1e-13));
  check_close(F::cross_entropy(x, p, w, -100, td::kNone, 0.3),
              {1.7455057620104497, 5.012014486793656, 2.052297066886024, 3.2329701403870748, 2.3649070741278595},
              1e-13, 0);
}

TEST_CASE("nll_loss, binary_cross_entropy_with_logits, mse and l1 match PyTorch or their formula", "[cpu]") {
  Tensor x = scores(), t = targets(), w = class_weights();
  CHECK(scalar(F::nll_loss(x.log_softmax(1), t, w)) == Approx(3.086626278718615).epsilon(1e-13));
  CHECK(scalar(F::nll_loss(x.log_softmax(1), t, w, -100, td::kSum)) == Approx(15.433131393593076).epsilon(1e-13));
  Tensor y = (td::arange(20, td::kFloat64).cos() > 0).to(td::kFloat64).reshape({5, 4});
  CHECK(scalar(F::binary_cross_entropy_with_logits(x, y)) == Approx(1.0341249885789179).epsilon(1e-13));
  Tensor pw = td::tensor({1.0, 2.0, 0.5, 3.0}, td::kFloat64);
  CHECK(scalar(F::binary_cross_entropy_with_logits(x, y, w, pw, td::kSum)) == Approx(38.941773703924014).epsilon(1e-13));
  Tensor a = td::tensor({1.0, -2.0, 3.0}, td::kFloat64), b = td::tensor({0.5, 0.0, 5.0}, td::kFloat64);
  CHECK(scalar(F::mse_loss(a, b)) == Approx((0.25 + 4 + 4) / 3));
  CHECK(scalar(F::l1_loss(a, b, td::kSum)) == Approx(0.5 + 2 + 2));
  CHECK(values(F::mse_loss(a, b, td::kNone)) == std::vector<double>{0.25, 4, 4});
  // Large logits stay finite.
  Tensor big = td::tensor({1000.0, -1000.0}, td::kFloat64);
  CHECK(std::isfinite(scalar(F::binary_cross_entropy_with_logits(big, td::tensor({0.0, 1.0}, td::kFloat64)))));
}

TEST_CASE("the loss modules call the functional forms with their options", "[cpu]") {
  Tensor x = scores(), t = targets(), w = class_weights();
  td::nn::CrossEntropyLoss ce(td::nn::CrossEntropyLossOptions().weight(w).label_smoothing(0.2));
  CHECK(scalar(ce(x, t)) == Approx(2.898196560927279).epsilon(1e-13));
  CHECK(ce->named_buffers().size() == 1);
  td::nn::NLLLoss nll(td::nn::NLLLossOptions().weight(w).reduction(td::kSum));
  CHECK(scalar(nll(x.log_softmax(1), t)) == Approx(15.433131393593076).epsilon(1e-13));
  td::nn::MSELoss mse(td::kSum);
  CHECK(scalar(mse(td::ones({2}), td::zeros({2}))) == 2);
}

TEST_CASE("every loss passes gradcheck", "[cpu]") {
  td::testing::reseed(300);
  Tensor x = td::randn({5, 4}, td::kFloat64).requires_grad_(true);
  Tensor t = targets(), w = class_weights(), p = probabilities();
  Tensor y = (td::rand({5, 4}, td::kFloat64) > 0.5).to(td::kFloat64);
  auto check = [&](const char* name, const td::autograd::TestedFn& fn) {
    auto r = td::autograd::gradcheck(fn, {x});
    INFO(name << ": " << r.report);
    CHECK(r.ok);
  };
  check("cross_entropy", [&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], t, w, -100, td::kMean, 0.2); });
  check("cross_entropy probabilities", [&](const std::vector<Tensor>& in) { return F::cross_entropy(in[0], p, w); });
  check("nll_loss", [&](const std::vector<Tensor>& in) { return F::nll_loss(in[0].log_softmax(1), t, w, -100, td::kNone); });
  check("bce", [&](const std::vector<Tensor>& in) { return F::binary_cross_entropy_with_logits(in[0], y, w, w * 2); });
  check("mse", [&](const std::vector<Tensor>& in) { return F::mse_loss(in[0], y); });
}

TEST_CASE("losses reject mismatched shapes and out-of-range targets", "[cpu]") {
  Tensor x = scores();
  check_error([&] { F::cross_entropy(x, td::tensor({0, 1})); }, {"cross_entropy", "[5]", "[2]"});
  check_error([&] { F::cross_entropy(x, td::tensor({0, 1, 2, 3, 4})); }, {"target 4", "out of bounds", "4 classes"});
  check_error([&] { F::nll_loss(x, td::tensor({0.0, 1.0, 2.0, 3.0, 1.0})); }, {"int64"});
  check_error([&] { F::mse_loss(td::ones({2}), td::ones({3})); }, {"mse_loss", "[2]", "[3]"});
  check_error([&] { F::cross_entropy(x, targets(), td::Tensor(), -100, td::kMean, 1.5); }, {"label_smoothing"});
  check_error([&] { F::cross_entropy(x, probabilities().narrow(1, 0, 3)); },
              {"cross_entropy: probability targets must have the input's shape [5, 4], got [5, 3]"});
  check_error([&] { F::cross_entropy(x[0], td::tensor({1})); },
              {"cross_entropy: a 1-D input of class scores takes a 0-dim target, got shape [1]"});
  check_error([&] { F::cross_entropy(x, Tensor()); }, {"cross_entropy: input and target must be defined"});
  check_error([&] { F::nll_loss(x, targets(), td::ones({3}, td::kFloat64)); },
              {"nll_loss: weight must have shape [4], got [3]"});
  check_error([&] { F::l1_loss(td::ones({2}), td::ones({2, 1})); }, {"l1_loss", "[2]", "[2, 1]", "not broadcast"});
  check_error([&] { F::binary_cross_entropy_with_logits(td::ones({3}), td::ones({2})); },
              {"binary_cross_entropy_with_logits: input and target must have the same shape"});
}

TEST_CASE("losses refuse what PyTorch refuses instead of growing, crashing or ignoring an option", "[cpu]") {
  // A [3] weight against [3, 1] logits: PyTorch's "output with shape [3, 1] doesn't match the
  // broadcast shape [3, 3]"; tandem averaged the [3, 3] loss of every pair (0.6095, not 0.4938).
  Tensor logits = td::tensor({0.5, -1.0, 2.0}, td::kFloat64).view({3, 1});
  Tensor labels = td::tensor({1.0, 0.0, 1.0}, td::kFloat64).view({3, 1});
  Tensor w = td::tensor({1.0, 2.0, 3.0}, td::kFloat64);
  check_error([&] { F::binary_cross_entropy_with_logits(logits, labels, w); },
              {"binary_cross_entropy_with_logits", "weight of shape [3]", "input's shape [3, 1]"});
  check_error([&] { F::binary_cross_entropy_with_logits(logits, labels, Tensor(), w); },
              {"binary_cross_entropy_with_logits", "pos_weight of shape [3]"});
  check_error([&] { F::binary_cross_entropy_with_logits(logits.view({3}), labels.view({3}), Tensor(), td::ones({2, 3})); },
              {"pos_weight of shape [2, 3]"});
  // Weights that broadcast to the input's shape are taken: per sample [3, 1], per output [1].
  CHECK(F::binary_cross_entropy_with_logits(logits, labels, w.view({3, 1})).item<double>() ==
        Approx(0.4938).epsilon(1e-3));
  CHECK_NOTHROW(F::binary_cross_entropy_with_logits(logits, labels, Tensor(), td::ones({1}, td::kFloat64)));
  // A 0-dim input of scores is an error (the shape arithmetic erased from an empty list: a crash).
  check_error([] { F::nll_loss(td::zeros({}, td::kFloat64), td::zeros({}, td::kInt64)); }, {"nll_loss", "0-dim"});
  check_error([] { F::cross_entropy(td::zeros({}, td::kFloat64), td::zeros({}, td::kInt64)); }, {"cross_entropy"});
  // Probability targets over no classes: PyTorch's NaN mean, 0 sum (an integer division by 0 trapped).
  CHECK(std::isnan(F::cross_entropy(td::zeros({2, 0}), td::zeros({2, 0})).item<double>()));
  CHECK(F::cross_entropy(td::zeros({2, 0}), td::zeros({2, 0}), Tensor(), -100, td::kSum).item<double>() == 0);
  // ... and with ignore_index or a weight not of one value per class, PyTorch's errors.
  Tensor x = scores();
  check_error([&] { F::cross_entropy(x, probabilities(), Tensor(), 0); },
              {"cross_entropy", "ignore_index (0)", "probability targets"});
  check_error([&] { F::cross_entropy(x, probabilities(), td::ones({1, 4}, td::kFloat64)); },
              {"cross_entropy", "weight of shape [1, 4]", "4 classes"});
}

TEST_CASE("a loss module's class weights are its buffers: to(), load_state_dict and clone act on what it uses",
          "[cpu]") {
  Tensor x = scores(), t = targets(), w = class_weights();
  td::nn::CrossEntropyLoss ce(td::nn::CrossEntropyLossOptions().weight(w));
  const double expected = scalar(F::cross_entropy(x, t, w));
  ce->to(td::Device("cpu:1"));
  Tensor moved = ce(x.to(td::Device("cpu:1")), t.to(td::Device("cpu:1")));
  CHECK(moved.device() == td::Device("cpu:1"));
  CHECK(scalar(moved.cpu()) == Approx(expected).epsilon(1e-14));
  td::StateDict state;
  state.insert("weight", td::ones({4}, td::kFloat64));
  ce->load_state_dict(state);
  CHECK(scalar(ce(x.to(td::Device("cpu:1")), t.to(td::Device("cpu:1"))).cpu()) ==
        Approx(scalar(F::cross_entropy(x, t))).epsilon(1e-14));  // the loaded weights are the ones used
  auto copy = std::dynamic_pointer_cast<td::nn::CrossEntropyLossImpl>(ce->clone(td::Device("cpu:2")));
  REQUIRE(copy != nullptr);
  CHECK(copy->weight.device() == td::Device("cpu:2"));
  CHECK(ce->weight.device() == td::Device("cpu:1"));  // the original stays
  td::nn::NLLLoss nll(td::nn::NLLLossOptions().weight(w));
  nll->to(td::Device("cpu:1"));
  CHECK(nll->weight.device() == td::Device("cpu:1"));
  td::nn::BCEWithLogitsLoss bce(td::nn::BCEWithLogitsLossOptions().weight(w).pos_weight(w));
  bce->to(td::Device("cpu:1"));
  Tensor logits = x.narrow(0, 0, 1).to(td::Device("cpu:1"));
  CHECK(bce(logits, td::ones({1, 4}, td::kFloat64).to(td::Device("cpu:1"))).device() == td::Device("cpu:1"));
}

namespace {

Tensor loss_input() { return (td::arange(12, td::kFloat64) * 0.7).sin().reshape({3, 4}) * 3; }
Tensor loss_target() { return (td::arange(12, td::kFloat64) * 0.3).cos().reshape({3, 4}) * 2; }

}  // namespace

TEST_CASE("smooth_l1_loss and huber_loss give PyTorch's values", "[cpu]") {
  // From PyTorch 2.15: F.smooth_l1_loss(x, t, beta=...) and F.huber_loss(x, t, delta=0.7).
  Tensor x = loss_input(), t = loss_target();
  CHECK(scalar(F::smooth_l1_loss(x, t, td::kMean, 0.5)) == Approx(1.5581240030487693).epsilon(1e-14));
  CHECK(scalar(F::smooth_l1_loss(x, t, td::kSum, 0.5)) == Approx(18.69748803658523).epsilon(1e-14));
  CHECK(scalar(F::smooth_l1_loss(x, t)) == Approx(1.36001591747341).epsilon(1e-14));
  CHECK(scalar(F::smooth_l1_loss(x, t, td::kSum)) == Approx(16.320191009680922).epsilon(1e-14));
  CHECK(scalar(F::smooth_l1_loss(x, t, td::kMean, 0)) == Approx(scalar(F::l1_loss(x, t))).epsilon(1e-15));
  CHECK(scalar(F::huber_loss(x, t, td::kMean, 0.7)) == Approx(1.0339435679039948).epsilon(1e-14));
  CHECK(scalar(F::huber_loss(x, t, td::kSum, 0.7)) == Approx(12.407322814847937).epsilon(1e-14));
  CHECK(F::huber_loss(x, t, td::kNone).sizes() == td::Shape{3, 4});
  td::nn::SmoothL1Loss smooth(td::kMean, 0.5);
  CHECK(scalar(smooth(x, t)) == Approx(1.5581240030487693).epsilon(1e-14));
  td::nn::HuberLoss huber(td::kSum, 0.7);
  CHECK(scalar(huber(x, t)) == Approx(12.407322814847937).epsilon(1e-14));
  check_error([&] { F::smooth_l1_loss(x, t, td::kMean, -1); }, {"smooth_l1_loss", "beta", "-1"});
  check_error([&] { F::huber_loss(x, t, td::kMean, 0); }, {"huber_loss", "delta must be positive, got 0"});
  check_error([&] { F::huber_loss(x, t.narrow(0, 0, 2)); }, {"huber_loss", "[3, 4]", "[2, 4]"});
  check_error([] { td::nn::HuberLoss(td::kMean, -0.5); }, {"HuberLoss", "delta"});
}

TEST_CASE("binary_cross_entropy_with_logits has PyTorch's gradients, at a logit of 0 too", "[cpu]") {
  // PyTorch 2.15, float64, reduction sum, x = [0, 1.5, -2], t = [0, 1, 0.3], pos_weight [2, 0.5, 3].
  auto grads = [](const Tensor& pos_weight) {
    Tensor x = td::tensor(std::vector<double>{0, 1.5, -2}).requires_grad_();
    Tensor t = td::tensor(std::vector<double>{0, 1, 0.3}).requires_grad_();
    F::binary_cross_entropy_with_logits(x, t, {}, pos_weight, td::kSum).backward();
    return std::pair{x.grad(), t.grad()};
  };
  auto [gx, gt] = grads(Tensor());
  check_close(gx, {0.5, -0.1824255238, -0.1807970780}, 1e-9, 0);
  check_close(gt, {0, -1.5, 2}, 1e-12, 0);
  auto [gxp, gtp] = grads(td::tensor(std::vector<double>{2, 0.5, 3}));
  check_close(gxp, {0.5, -0.0912127619, -0.7092753248}, 1e-9, 0);
  check_close(gtp, {0.6931471806, -1.6007066390, 6.2538560221}, 1e-9, 0);
  // Zero logits, a common start: sigmoid(0) - t, scaled by pos_weight where the target is 1.
  Tensor zero = td::zeros({3}, td::kFloat64).requires_grad_();
  const Tensor t = td::tensor(std::vector<double>{0, 1, 0.3});
  F::binary_cross_entropy_with_logits(zero, t, {}, td::full({3}, 2.0, td::kFloat64), td::kSum).backward();
  check_close(zero.grad(), {0.5, -1.0, 0.05}, 1e-12, 0);
  // Gradients of every argument (pos_weight's too, which PyTorch does not offer) and second ones.
  Tensor x = td::testing::random_tensor({2, 3}, td::kFloat64).requires_grad_();
  Tensor target = td::rand({2, 3}, td::kFloat64).requires_grad_();
  Tensor pos = (td::rand({3}, td::kFloat64) + 0.5).requires_grad_();
  Tensor weight = (td::rand({2, 3}, td::kFloat64) + 0.5).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) {
    return F::binary_cross_entropy_with_logits(in[0], in[1], in[3], in[2], td::kMean);
  };
  const auto first = td::autograd::gradcheck(f, {x, target, pos, weight});
  INFO(first.report);
  CHECK(first.ok);
  const auto second = td::autograd::gradgradcheck(f, {x, target, pos, weight});
  INFO(second.report);
  CHECK(second.ok);
}

TEST_CASE("nll_loss leaves ignored rows at 0 whatever their scores, as PyTorch does", "[cpu]") {
  // PyTorch: [[-inf, 0], [-1, -1]] with targets [-100, 1] -> losses [0, 1], mean 1; with NaN too.
  const Tensor t = td::tensor(std::vector<int64_t>{-100, 1});
  for (double bad : {-std::numeric_limits<double>::infinity(), std::nan("")}) {
    const Tensor scores = td::tensor(std::vector<double>{bad, 0, -1, -1}).view({2, 2});
    check_close(F::nll_loss(scores, t, {}, -100, td::kNone), {0, 1}, 0, 0);
    check_close(F::nll_loss(scores, t), {1}, 0, 0);
    check_close(F::nll_loss(scores, t, td::tensor(std::vector<double>{2, 3})), {1}, 0, 0);
  }
}

TEST_CASE("binary_cross_entropy gives PyTorch's values and gradients, at probabilities 0 and 1 too", "[cpu]") {
  Tensor p = td::sigmoid(loss_input());
  p.narrow(0, 0, 1).narrow(1, 0, 1).fill_(0.0);  // a certain wrong answer: log clamped to -100
  p.narrow(0, 1, 1).narrow(1, 1, 1).fill_(1.0);
  Tensor q = (loss_target() / 2 + 1) / 2;
  Tensor w = class_weights();
  Tensor none = F::binary_cross_entropy(p, q, Tensor(), td::kNone);
  // From PyTorch 2.15: F.binary_cross_entropy(p, q, reduction="none") and, with weight w, its
  // mean and the gradients of the mean.
  check_close(none.reshape({-1}).narrow(0, 0, 6),
              td::tensor({100.0, 0.17835770731242453, 0.30888559753876765, 0.5623099902528289, 0.6323328565592069,
                          46.46313991661486}, td::kFloat64),
              1e-14, 0, "bce none");
  Tensor pp = p.clone().requires_grad_(), qq = q.clone().requires_grad_();
  Tensor loss = F::binary_cross_entropy(pp, qq, w);
  CHECK(scalar(loss) == Approx(9.278351607030332).epsilon(1e-14));
  loss.backward();
  check_close(pp.grad().reshape({-1}),
              td::tensor({-41666666833.158455, -0.07855030824017746, 0.13439842007857175, 0.22981617543295563,
                          0.010802095387471898, 38719283418.56034, -0.8345746804726267, -0.5216725460577861,
                          -0.00018005327352372866, 0.1549798139429813, 1.3551571332621133, 2.5313629172407626},
                         td::kFloat64),
              1e-13, 0, "bce input gradient");
  std::vector<double> target_grad = values(qq.grad());
  CHECK(std::isinf(target_grad[0]));
  CHECK(target_grad[0] > 0);
  CHECK(std::isinf(target_grad[5]));
  CHECK(target_grad[5] < 0);
  CHECK(target_grad[1] == Approx(-0.16105442180942278).epsilon(1e-13));
  CHECK(target_grad[11] == Approx(-0.3705630877038752).epsilon(1e-13));
  td::nn::BCELoss module(td::nn::BCELossOptions().weight(w));
  CHECK(scalar(module(p, q)) == Approx(9.278351607030332).epsilon(1e-14));
  Tensor outside = p.clone();
  outside.narrow(0, 2, 1).narrow(1, 3, 1).fill_(1.5);
  check_error([&] { F::binary_cross_entropy(outside, q); }, {"binary_cross_entropy", "input must be between 0 and 1"});
  check_error([&] { F::binary_cross_entropy(q, outside); }, {"binary_cross_entropy", "target must be between 0 and 1"});
  // A small probability of the wrong class costs about itself (log1p), not 0 as log(1 - x) in float32 gives.
  CHECK(F::binary_cross_entropy(td::tensor({1e-8}, td::kFloat32), td::tensor({0.0}, td::kFloat32)).item<double>() ==
        Approx(9.99999993922529e-09).epsilon(1e-6));
  check_error([&] { F::binary_cross_entropy(p, q.narrow(0, 0, 1)); }, {"binary_cross_entropy", "same shape"});
  check_error([&] { F::binary_cross_entropy(p, q, td::ones({3})); }, {"binary_cross_entropy", "[3] and [3, 4]"});
}

TEST_CASE("kl_div gives PyTorch's values and gradients for every reduction, log targets and zero targets", "[cpu]") {
  // PyTorch 2.15, float64: F.kl_div(log_softmax(scores), p) with p = probabilities() but for two
  // zeros, at [1, 2] and [3, 0].
  Tensor x = scores().log_softmax(1);
  Tensor p = probabilities();
  p[1][2].fill_(0.0);
  p[3][0].fill_(0.0);
  CHECK(scalar(F::kl_div(x, p)) == Approx(0.2449411235912194).epsilon(1e-14));
  CHECK(scalar(F::kl_div(x, p, td::kSum)) == Approx(4.898822471824388).epsilon(1e-14));
  CHECK(scalar(F::kl_div(x, p, td::kBatchMean)) == Approx(0.9797644943648776).epsilon(1e-14));
  CHECK(scalar(F::kl_div(x, p.clamp(1e-3, std::nullopt).log(), td::kBatchMean, true)) ==
        Approx(0.9777990647611177).epsilon(1e-14));
  Tensor none = F::kl_div(x, p, td::kNone);
  CHECK(none.sizes() == td::Shape{5, 4});
  CHECK(values(none)[6] == 0);  // 0 * log(0) is 0
  // The input's gradient is -p / 5; the target's log(p) + 1 - x, NaN where p is 0, as PyTorch's.
  Tensor xr = x.clone().requires_grad_(true), pr = p.clone().requires_grad_(true);
  F::kl_div(xr, pr, td::kBatchMean).backward();
  check_close(xr.grad(), values(-p / 5), 1e-15, 1e-15, "input's gradient");
  const std::vector<double> target_grad = values(pr.grad());
  CHECK(target_grad[0] == Approx(0.8003557903760237).epsilon(1e-14));
  CHECK(target_grad[19] == Approx(0.07984253585980014).epsilon(1e-14));
  CHECK(std::isnan(target_grad[6]));
  CHECK(std::isnan(target_grad[12]));
  // float32 as PyTorch's to the last bit or so.
  CHECK(F::kl_div(x.to(td::kFloat32), p.to(td::kFloat32), td::kBatchMean).item<float>() ==
        Approx(0.979764461517334).epsilon(1e-7));
  // A 0-dim input is one sample: batchmean is the sum; empty batches give NaN, as 0 / 0.
  CHECK(scalar(F::kl_div(td::tensor(-1.0).to(td::kFloat64), td::tensor(0.5).to(td::kFloat64), td::kBatchMean)) ==
        Approx(0.5 * (std::log(0.5) + 1)).epsilon(1e-15));
  CHECK(std::isnan(scalar(F::kl_div(td::zeros({0, 3}), td::zeros({0, 3}), td::kBatchMean))));
  td::nn::KLDivLoss module(td::nn::KLDivLossOptions().reduction(td::kBatchMean));
  CHECK(scalar(module(x, p)) == Approx(0.9797644943648776).epsilon(1e-14));
  td::nn::KLDivLoss log_module(td::nn::KLDivLossOptions().reduction(td::kSum).log_target(true));
  CHECK(scalar(log_module(x, x)) == 0);
}

TEST_CASE("kl_div passes gradcheck in both arguments, with probability and log targets", "[cpu]") {
  td::testing::reseed(301);
  Tensor x = td::randn({3, 4}, td::kFloat64).log_softmax(1).detach().requires_grad_(true);
  Tensor p = (td::rand({3, 4}, td::kFloat64) + 0.1).requires_grad_(true);
  for (td::Reduction r : {td::kNone, td::kMean, td::kSum, td::kBatchMean}) {
    for (bool log_target : {false, true}) {
      auto fn = [r, log_target](const std::vector<Tensor>& in) { return F::kl_div(in[0], in[1], r, log_target); };
      auto first = td::autograd::gradcheck(fn, {x, p});
      INFO(F::reduction_name(r) << (log_target ? " log target: " : ": ") << first.report);
      CHECK(first.ok);
      auto second = td::autograd::gradgradcheck(fn, {x, p});
      INFO(second.report);
      CHECK(second.ok);
    }
  }
}

TEST_CASE("kl_div refuses other shapes and integer tensors; batchmean is kl_div's only", "[cpu]") {
  Tensor x = scores(), t = probabilities();
  td::testing::Snapshot before_x(x), before_t(t);
  check_error([&] { F::kl_div(x, t.narrow(0, 0, 2)); }, {"kl_div", "[5, 4]", "[2, 4]", "not broadcast"});
  check_error([&] { F::kl_div(x, t.to(td::kInt64)); }, {"kl_div", "floating", "int64"});
  check_error([&] { F::kl_div(x, Tensor()); }, {"kl_div", "defined"});
  before_x.check_unchanged(x);
  before_t.check_unchanged(t);
  check_error([&] { F::mse_loss(x, t, td::kBatchMean); }, {"mse_loss", "batchmean is kl_div's only"});
  check_error([&] { F::l1_loss(x, t, td::kBatchMean); }, {"l1_loss", "batchmean"});
  check_error([&] { F::smooth_l1_loss(x, t, td::kBatchMean); }, {"smooth_l1_loss", "batchmean"});
  check_error([&] { F::huber_loss(x, t, td::kBatchMean); }, {"huber_loss", "batchmean"});
  check_error([&] { F::binary_cross_entropy(t, t, Tensor(), td::kBatchMean); }, {"binary_cross_entropy", "batchmean"});
  check_error([&] { F::binary_cross_entropy_with_logits(x, t, Tensor(), Tensor(), td::kBatchMean); },
              {"binary_cross_entropy_with_logits", "batchmean"});
  check_error([&] { F::nll_loss(x, targets(), Tensor(), -100, td::kBatchMean); }, {"nll_loss", "batchmean"});
  check_error([&] { F::cross_entropy(x, targets(), Tensor(), -100, td::kBatchMean); }, {"cross_entropy", "batchmean"});
  check_error([&] { F::cross_entropy(x, targets(), class_weights(), -100, td::kBatchMean, 0.1); },
              {"cross_entropy", "batchmean"});
  check_error([&] { F::cross_entropy(x, t, Tensor(), -100, td::kBatchMean); }, {"cross_entropy", "batchmean"});
  CHECK(std::string(F::reduction_name(td::kBatchMean)) == "batchmean");
}
