// LBFGS against PyTorch 2.15's torch.optim.LBFGS (float64): the Rosenbrock function with the
// strong-Wolfe line search until it stalls at the minimum, and a small MLP with fixed steps, with
// the line search, and with max_eval cutting the iterations short; each step's returned loss,
// parameters, closure calls and iterations. Also: maximize, a state_dict that resumes exactly,
// schedulers, and the errors.
#include <cmath>

#include "nn/optim/optim.h"
#include "tests/nn/pytorch_reference.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace optim = td::optim;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::sine_ramp;
using td::testing::Snapshot;
using td::testing::values;

namespace {

const optim::LBFGSParamState& lbfgs_state(const optim::LBFGS& opt, const Tensor& first) {
  return static_cast<const optim::LBFGSParamState&>(*opt.state_of(first));
}

// The reference scripts' MLP: Linear(3, 4), Tanh, Linear(4, 1) with the sine parameters,
// regressing sin(0.53 i) [8, 1] on sin(0.37 i) [8, 3] by mean squared error.
struct Regression {
  nn::Sequential model{nn::Linear(3, 4), nn::Tanh(), nn::Linear(4, 1)};
  Tensor inputs = sine_ramp({8, 3}, 0.37), targets = sine_ramp({8, 1}, 0.53);
  Regression() { td::testing::set_sine_parameters(*model); }
  // The loss times `sign`, its gradients left in the parameters, for `opt`.
  optim::Optimizer::LossClosure closure(optim::Optimizer& opt, double sign = 1) {
    return [this, &opt, sign] {
      opt.zero_grad();
      Tensor loss = (model(inputs) - targets).pow(2).mean() * sign;
      loss.backward();
      return loss;
    };
  }
  double weighted_parameters() const {
    double sum = 0;
    for (const Tensor& p : model->parameters()) sum += (p.detach() * sine_ramp(p.sizes(), 0.23)).sum().item<double>();
    return sum;
  }
};

struct StepRecord {
  double loss, weighted;
  int64_t func_evals, n_iter, pairs;
  double t;
};

}  // namespace

TEST_CASE("LBFGS with the strong-Wolfe line search follows PyTorch's path down the Rosenbrock valley", "[cpu]") {
  // PyTorch 2.15: x = (-1.5, 2), LBFGS([x], lr=1, max_iter=7, history_size=4,
  // line_search_fn="strong_wolfe"); after each step: the returned loss, x, func_evals, n_iter, t.
  struct Row {
    double loss, x0, x1;
    int64_t func_evals, n_iter;
    double t;
  };
  const std::vector<Row> rows = {
      {12.5, -1.3967404883554402, 1.9336229141312, 8, 6, 1.0},
      {5.77415944879044, -0.932692275860377, 0.8599445528837695, 16, 12, 1.0},
      {3.7452401783414446, -0.200111270879252, 0.008755048881265687, 24, 18, 1.0},
      {1.5381701673668937, 0.25278907160367536, 0.0367223696570959, 33, 24, 0.40763853950216433},
      {0.6321991128893665, 0.693248424000776, 0.46093115159324016, 41, 30, 1.0},
      {0.1327568416652286, 0.9911135537752447, 0.9803971450950903, 49, 37, 1.0},
      {0.0004433708285874545, 0.9999977072046986, 0.9999953704522627, 56, 43, 1.0},
      // At the minimum the direction no longer descends: each step evaluates once and stops.
      {5.450179479806927e-12, 0.9999977072046986, 0.9999953704522627, 57, 44, 1.0},
      {5.450179479806927e-12, 0.9999977072046986, 0.9999953704522627, 58, 45, 1.0},
  };
  Tensor x = td::tensor(std::vector<double>{-1.5, 2.0}).requires_grad_(true);
  optim::LBFGS opt({x}, optim::LBFGSOptions(1).max_iter(7).history_size(4).line_search_fn("strong_wolfe"));
  auto rosenbrock = [&] {
    opt.zero_grad();
    Tensor loss = (1 - x[0]).pow(2) + 100 * (x[1] - x[0].pow(2)).pow(2);
    loss.backward();
    return loss;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("step " << i);
    const Tensor loss = opt.step(rosenbrock);
    const auto& state = lbfgs_state(opt, x);
    CHECK(loss.item<double>() == Approx(rows[i].loss).epsilon(1e-9).margin(1e-20));
    check_close(x, {rows[i].x0, rows[i].x1}, 1e-9, 1e-12);
    CHECK(state.func_evals == rows[i].func_evals);
    CHECK(state.n_iter == rows[i].n_iter);
    CHECK(state.t == Approx(rows[i].t).epsilon(1e-9));
  }
}

TEST_CASE("LBFGS trains an MLP as PyTorch's: fixed steps, the line search, and max_eval", "[cpu]") {
  // PyTorch 2.15, the Regression above; after each of four steps: the returned loss, the
  // parameters' sum weighted by sin(0.23 i), func_evals, n_iter, the curvature pairs kept, t.
  struct Case {
    const char* name;
    optim::LBFGSOptions options;
    std::vector<StepRecord> steps;
  };
  const std::vector<Case> cases = {
      {"fixed steps",
       optim::LBFGSOptions(0.5).max_iter(6).history_size(3),
       {{0.694017611805813, 2.696163379463769, 6, 6, 3, 0.5},
        {0.14292010480404765, 2.601623100102723, 12, 12, 3, 0.5},
        {0.1044582670388534, 2.8786592323150293, 18, 18, 3, 0.5},
        {0.100886736450324, 3.6659871896012746, 24, 24, 3, 0.5}}},
      {"strong Wolfe",
       optim::LBFGSOptions(1).max_iter(5).history_size(3).line_search_fn("strong_wolfe"),
       {{0.694017611805813, 2.359659514096142, 6, 5, 3, 1.0},
        {0.1435040866619495, 2.1115640572996766, 12, 10, 3, 1.0},
        {0.10508886204988008, 2.922002391742381, 19, 15, 3, 0.3151148043421865},
        {0.0949397994866012, 3.2382835413494124, 25, 20, 3, 1.0}}},
      {"strong Wolfe, max_eval 7",
       optim::LBFGSOptions(1).max_iter(10).max_eval(7).history_size(2).line_search_fn("strong_wolfe"),
       {{0.694017611805813, 2.388243933191445, 7, 6, 2, 1.0},
        {0.1429412101847694, 2.309996305154906, 14, 12, 2, 1.0},
        {0.10393468212386316, 3.3174096803678923, 21, 17, 2, 0.48771962199302843},
        {0.08641217645511583, 3.9563911629548913, 28, 22, 2, 1.0}}},
  };
  for (const Case& c : cases) {
    for (bool maximize : {false, true}) {
      INFO(c.name << (maximize ? ", maximizing the negated loss" : ""));
      Regression r;
      optim::LBFGS opt(r.model->parameters(), optim::LBFGSOptions(c.options).maximize(maximize));
      const auto closure = r.closure(opt, maximize ? -1 : 1);
      for (size_t i = 0; i < c.steps.size(); ++i) {
        INFO("step " << i);
        const StepRecord& want = c.steps[i];
        const double loss = opt.step(closure).item<double>() * (maximize ? -1 : 1);
        const auto& state = lbfgs_state(opt, r.model->parameters()[0]);
        CHECK(loss == Approx(want.loss).epsilon(1e-10));
        CHECK(r.weighted_parameters() == Approx(want.weighted).epsilon(1e-10));
        CHECK(state.func_evals == want.func_evals);
        CHECK(state.n_iter == want.n_iter);
        CHECK(static_cast<int64_t>(state.old_dirs.size()) == want.pairs);
        CHECK(state.t == Approx(want.t).epsilon(1e-10));
      }
    }
  }
}

TEST_CASE("LBFGS resumes from its state_dict exactly; a scheduler sets its lr", "[cpu]") {
  const auto options = optim::LBFGSOptions(1).max_iter(4).history_size(3).line_search_fn("strong_wolfe");
  Regression straight;
  optim::LBFGS uninterrupted(straight.model->parameters(), options);
  for (int i = 0; i < 4; ++i) uninterrupted.step(straight.closure(uninterrupted));

  Regression first_half;
  optim::LBFGS before(first_half.model->parameters(), options);
  for (int i = 0; i < 2; ++i) before.step(first_half.closure(before));
  const td::StateDict saved = before.state_dict();
  CHECK(saved.contains("state.0.old_dirs.0"));
  CHECK(saved.contains("state.0.prev_flat_grad"));
  CHECK(saved.metadata.at("optimizer") == "LBFGS");
  Regression resumed;
  {
    td::NoGradGuard no_grad;
    const auto from = first_half.model->parameters(), to = resumed.model->parameters();
    for (size_t i = 0; i < from.size(); ++i) Tensor(to[i]).copy_(from[i]);
  }
  optim::LBFGS after(resumed.model->parameters(), optim::LBFGSOptions(0.1));
  after.load_state_dict(saved);
  CHECK(static_cast<const optim::LBFGSOptions&>(after.param_groups()[0].options()).lr() == 1);
  for (int i = 0; i < 2; ++i) after.step(resumed.closure(after));
  const auto want = straight.model->parameters(), got = resumed.model->parameters();
  for (size_t i = 0; i < want.size(); ++i) check_close(got[i], values(want[i]), 0, 0);

  // A state for other parameters is refused, the optimizer unchanged.
  Regression other;
  optim::LBFGS wrong({other.model->parameters()[0]});
  check_error([&] { wrong.load_state_dict(saved); }, {"LBFGS", "load_state_dict"});
  CHECK(wrong.state().empty());

  optim::StepLR schedule(after, 1, 0.5);
  schedule.step();
  CHECK(after.param_groups()[0].options().get_lr() == 0.5);
}

TEST_CASE("LBFGS refuses a step without a closure, parameter groups, mixed dtypes and bad options", "[cpu]") {
  Regression r;
  optim::LBFGS opt(r.model->parameters());
  const Snapshot before(r.model->parameters()[0]);
  check_error([&] { opt.step(); }, {"LBFGS.step", "closure"});
  check_error([&] { opt.step([] { return td::zeros({2}); }); }, {"LBFGS.step", "one number", "[2]"});
  before.check_unchanged(r.model->parameters()[0]);
  const auto params = r.model->parameters();
  check_error(
      [&] {
        optim::LBFGS({optim::OptimizerParamGroup({params[0]}), optim::OptimizerParamGroup({params[1]})});
      },
      {"LBFGS", "one parameter group", "got 2"});
  Tensor single = td::zeros({2}, td::kFloat32).requires_grad_(true);
  optim::LBFGS mixed({params[0], single});
  check_error([&] { mixed.step(r.closure(mixed)); }, {"LBFGS", "one device and dtype", "float32"});
  check_error([&] { optim::LBFGS({single}, optim::LBFGSOptions().max_iter(0)); }, {"LBFGS", "max_iter", "positive"});
  check_error([&] { optim::LBFGS({single}, optim::LBFGSOptions().history_size(0)); }, {"LBFGS", "history_size"});
  check_error([&] { optim::LBFGS({single}, optim::LBFGSOptions().line_search_fn("backtracking")); },
              {"LBFGS", "line_search_fn", "strong_wolfe", "backtracking"});
  check_error([&] { optim::LBFGS({single}, optim::LBFGSOptions(-1)); }, {"LBFGS", "learning rate"});
  // The default max_eval is max_iter * 5 / 4, fixed as the optimizer is built (PyTorch 2.15: built
  // with max_iter 4, then given max_iter 40, a step stops at 5 evaluations, 4 iterations).
  CHECK(optim::LBFGSOptions().max_iter(9).max_eval() == 11);
  Regression fixed;
  optim::LBFGS four(fixed.model->parameters(), optim::LBFGSOptions(0.5).max_iter(4));
  static_cast<optim::LBFGSOptions&>(four.param_groups()[0].options()).max_iter(40);
  four.step(fixed.closure(four));
  CHECK(lbfgs_state(four, fixed.model->parameters()[0]).func_evals == 5);
  CHECK(lbfgs_state(four, fixed.model->parameters()[0]).n_iter == 4);
}
