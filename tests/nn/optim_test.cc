// Optimizers and schedulers against PyTorch (tests/nn/optim_fixtures.json, written by
// tests/nn/make_optim_fixtures.py), state_dict round trips, and errors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "nn/optim/optim.h"
#include "tests/nn/json_fixture.h"
#include "tests/testing.h"

namespace td = tandem;
namespace optim = tandem::optim;
using nlohmann::json;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::values;

namespace {

const json& fixture() {
  static const json data = td::testing::load_json_fixture("tests/nn/optim_fixtures.json");
  return data;
}

td::Shape shape_of(size_t i) { return fixture()["shapes"][i].get<td::Shape>(); }

td::Tensor from_values(const std::vector<double>& v, const td::Shape& shape, td::DType dtype = td::kFloat64) {
  return td::tensor(v).reshape(shape).to(dtype).clone();
}

// The fixture's starting parameters, as fresh leaves that require grad.
std::vector<td::Tensor> fixture_params(td::DType dtype = td::kFloat64) {
  std::vector<td::Tensor> out;
  const json& params = fixture()["params"];
  for (size_t i = 0; i < params.size(); ++i) {
    out.push_back(from_values(params[i].get<std::vector<double>>(), shape_of(i), dtype).requires_grad_());
  }
  return out;
}

// Gives each parameter step t's gradient from the fixture (or none, where the fixture has null).
void set_fixture_grads(std::vector<td::Tensor>& params, size_t t) {
  const json& grads = fixture()["grads"][t];
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].mutable_grad() = grads[i].is_null() ? td::Tensor()
                                                  : from_values(grads[i].get<std::vector<double>>(), shape_of(i),
                                                                params[i].dtype())
                                                        .to(params[i].device());
  }
}

template <typename Options>
void apply_common(Options& o, const json& j) {
  if (j.contains("lr")) o.lr(j["lr"].get<double>());
  if (j.contains("weight_decay")) o.weight_decay(j["weight_decay"].get<double>());
}

template <typename Options>
Options adam_options_without_amsgrad(const json& j, Options o) {
  apply_common(o, j);
  if (j.contains("betas")) o.betas({j["betas"][0].get<double>(), j["betas"][1].get<double>()});
  if (j.contains("eps")) o.eps(j["eps"].get<double>());
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

template <typename Options>
Options adam_options(const json& j, Options o) {
  o = adam_options_without_amsgrad(j, o);
  if (j.contains("amsgrad")) o.amsgrad(j["amsgrad"].get<bool>());
  return o;
}

optim::SGDOptions sgd_options(const json& j, optim::SGDOptions o) {
  apply_common(o, j);
  if (j.contains("momentum")) o.momentum(j["momentum"].get<double>());
  if (j.contains("dampening")) o.dampening(j["dampening"].get<double>());
  if (j.contains("nesterov")) o.nesterov(j["nesterov"].get<bool>());
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

optim::RMSpropOptions rmsprop_options(const json& j, optim::RMSpropOptions o) {
  apply_common(o, j);
  if (j.contains("alpha")) o.alpha(j["alpha"].get<double>());
  if (j.contains("eps")) o.eps(j["eps"].get<double>());
  if (j.contains("momentum")) o.momentum(j["momentum"].get<double>());
  if (j.contains("centered")) o.centered(j["centered"].get<bool>());
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

optim::AdagradOptions adagrad_options(const json& j, optim::AdagradOptions o) {
  apply_common(o, j);
  if (j.contains("lr_decay")) o.lr_decay(j["lr_decay"].get<double>());
  if (j.contains("initial_accumulator_value")) o.initial_accumulator_value(j["initial_accumulator_value"].get<double>());
  if (j.contains("eps")) o.eps(j["eps"].get<double>());
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

template <typename Options>
Options nadam_like_options(const json& j, Options o) {
  o = adam_options_without_amsgrad(j, o);
  if (j.contains("decoupled_weight_decay")) o.decoupled_weight_decay(j["decoupled_weight_decay"].get<bool>());
  return o;
}

optim::AdadeltaOptions adadelta_options(const json& j, optim::AdadeltaOptions o) {
  apply_common(o, j);
  if (j.contains("rho")) o.rho(j["rho"].get<double>());
  if (j.contains("eps")) o.eps(j["eps"].get<double>());
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

optim::RpropOptions rprop_options(const json& j, optim::RpropOptions o) {
  if (j.contains("lr")) o.lr(j["lr"].get<double>());
  if (j.contains("etas")) o.etas({j["etas"][0].get<double>(), j["etas"][1].get<double>()});
  if (j.contains("step_sizes")) o.step_sizes({j["step_sizes"][0].get<double>(), j["step_sizes"][1].get<double>()});
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

optim::ASGDOptions asgd_options(const json& j, optim::ASGDOptions o) {
  apply_common(o, j);
  if (j.contains("lambd")) o.lambd(j["lambd"].get<double>());
  if (j.contains("alpha")) o.alpha(j["alpha"].get<double>());
  if (j.contains("t0")) o.t0(j["t0"].get<double>());
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

optim::AdafactorOptions adafactor_options(const json& j, optim::AdafactorOptions o) {
  apply_common(o, j);
  if (j.contains("beta2_decay")) o.beta2_decay(j["beta2_decay"].get<double>());
  if (j.contains("eps")) {
    const json& eps = j["eps"];
    o.eps({eps[0].is_null() ? std::nullopt : std::optional<double>(eps[0].get<double>()), eps[1].get<double>()});
  }
  if (j.contains("d")) o.d(j["d"].get<double>());
  if (j.contains("maximize")) o.maximize(j["maximize"].get<bool>());
  return o;
}

optim::MuonOptions muon_options(const json& j, optim::MuonOptions o) {
  apply_common(o, j);
  if (j.contains("momentum")) o.momentum(j["momentum"].get<double>());
  if (j.contains("nesterov")) o.nesterov(j["nesterov"].get<bool>());
  if (j.contains("ns_steps")) o.ns_steps(j["ns_steps"].get<int64_t>());
  if (j.contains("adjust_lr_fn")) {
    const std::string name = j["adjust_lr_fn"];
    o.adjust_lr(name == "match_rms_adamw"      ? optim::MuonAdjustLR::match_rms_adamw
                : name == "spectral_unclamped" ? optim::MuonAdjustLR::spectral_unclamped
                                               : optim::MuonAdjustLR::original);
  }
  return o;
}

// The optimizer of a fixture configuration: its defaults, and its groups with their overrides;
// with `fused`, SGD, Adam and AdamW have fused(*fused) in every group.
std::unique_ptr<optim::Optimizer> make_optimizer(const json& config, const std::vector<td::Tensor>& params,
                                                 std::optional<bool> fused = std::nullopt) {
  const std::string kind = config["optimizer"];
  const json& defaults = config["defaults"];
  auto groups = [&](auto make_options) {
    std::vector<optim::OptimizerParamGroup> out;
    if (config["groups"].is_null()) {
      out.emplace_back(params);
      return out;
    }
    for (const json& g : config["groups"]) {
      std::vector<td::Tensor> members;
      for (const json& i : g["params"]) members.push_back(params[i.get<size_t>()]);
      out.emplace_back(members, make_options(g["options"]));
    }
    return out;
  };
  if (kind == "SGD") {
    auto base = sgd_options(defaults, optim::SGDOptions(defaults["lr"].get<double>()));
    if (fused) base.fused(fused);
    return std::make_unique<optim::SGD>(groups([&](const json& o) { return sgd_options(o, base); }), base);
  }
  if (kind == "Adam") {
    auto base = adam_options(defaults, optim::AdamOptions());
    if (fused) base.fused(fused);
    return std::make_unique<optim::Adam>(groups([&](const json& o) { return adam_options(o, base); }), base);
  }
  if (kind == "RMSprop") {
    auto base = rmsprop_options(defaults, optim::RMSpropOptions());
    return std::make_unique<optim::RMSprop>(groups([&](const json& o) { return rmsprop_options(o, base); }), base);
  }
  if (kind == "Adagrad") {
    auto base = adagrad_options(defaults, optim::AdagradOptions());
    return std::make_unique<optim::Adagrad>(groups([&](const json& o) { return adagrad_options(o, base); }), base);
  }
  if (kind == "Adamax") {
    auto base = adam_options_without_amsgrad(defaults, optim::AdamaxOptions());
    return std::make_unique<optim::Adamax>(groups([&](const json& o) { return adam_options_without_amsgrad(o, base); }),
                                           base);
  }
  if (kind == "NAdam") {
    auto base = nadam_like_options(defaults, optim::NAdamOptions());
    if (defaults.contains("momentum_decay")) base.momentum_decay(defaults["momentum_decay"].get<double>());
    return std::make_unique<optim::NAdam>(groups([&](const json& o) { return nadam_like_options(o, base); }), base);
  }
  if (kind == "RAdam") {
    auto base = nadam_like_options(defaults, optim::RAdamOptions());
    return std::make_unique<optim::RAdam>(groups([&](const json& o) { return nadam_like_options(o, base); }), base);
  }
  if (kind == "Adadelta") {
    auto base = adadelta_options(defaults, optim::AdadeltaOptions());
    return std::make_unique<optim::Adadelta>(groups([&](const json& o) { return adadelta_options(o, base); }), base);
  }
  if (kind == "Rprop") {
    auto base = rprop_options(defaults, optim::RpropOptions());
    return std::make_unique<optim::Rprop>(groups([&](const json& o) { return rprop_options(o, base); }), base);
  }
  if (kind == "ASGD") {
    auto base = asgd_options(defaults, optim::ASGDOptions());
    return std::make_unique<optim::ASGD>(groups([&](const json& o) { return asgd_options(o, base); }), base);
  }
  if (kind == "Adafactor") {
    auto base = adafactor_options(defaults, optim::AdafactorOptions());
    return std::make_unique<optim::Adafactor>(groups([&](const json& o) { return adafactor_options(o, base); }), base);
  }
  if (kind == "Muon") {
    auto base = muon_options(defaults, optim::MuonOptions());
    return std::make_unique<optim::Muon>(groups([&](const json& o) { return muon_options(o, base); }), base);
  }
  REQUIRE(kind == "AdamW");
  auto base = adam_options(defaults, optim::AdamWOptions());
  if (fused) base.fused(fused);
  return std::make_unique<optim::AdamW>(groups([&](const json& o) { return adam_options(o, base); }), base);
}

std::unique_ptr<optim::LRScheduler> make_scheduler(const json& spec, optim::Optimizer& optimizer) {
  if (spec.is_null()) return nullptr;
  const std::string type = spec["type"];
  const json& args = spec["args"];
  if (type == "StepLR") {
    return std::make_unique<optim::StepLR>(optimizer, args["step_size"].get<int64_t>(), args.value("gamma", 0.1));
  }
  if (type == "MultiStepLR") {
    return std::make_unique<optim::MultiStepLR>(optimizer, args["milestones"].get<std::vector<int64_t>>(),
                                                args.value("gamma", 0.1));
  }
  if (type == "ExponentialLR") return std::make_unique<optim::ExponentialLR>(optimizer, args["gamma"].get<double>());
  if (type == "CosineAnnealingLR") {
    return std::make_unique<optim::CosineAnnealingLR>(optimizer, args["T_max"].get<int64_t>(),
                                                      args.value("eta_min", 0.0));
  }
  if (type == "OneCycleLR") {
    // A number or a list, as PyTorch takes them.
    const auto list = [&](const char* name, double fallback) {
      if (!args.contains(name)) return std::vector<double>{fallback};
      return args[name].is_array() ? args[name].get<std::vector<double>>()
                                   : std::vector<double>{args[name].get<double>()};
    };
    optim::OneCycleLROptions o;
    o.pct_start = args.value("pct_start", o.pct_start);
    if (args.value("anneal_strategy", "cos") == "linear") o.anneal_strategy = optim::AnnealStrategy::linear;
    o.cycle_momentum = args.value("cycle_momentum", o.cycle_momentum);
    o.base_momentum = list("base_momentum", 0.85);
    o.max_momentum = list("max_momentum", 0.95);
    o.div_factor = args.value("div_factor", o.div_factor);
    o.final_div_factor = args.value("final_div_factor", o.final_div_factor);
    o.three_phase = args.value("three_phase", o.three_phase);
    return std::make_unique<optim::OneCycleLR>(optimizer, list("max_lr", 0), args["total_steps"].get<int64_t>(), o);
  }
  if (type == "ConstantLR") {
    return std::make_unique<optim::ConstantLR>(optimizer, args.value("factor", 1.0 / 3),
                                               args.value("total_iters", int64_t{5}));
  }
  if (type == "PolynomialLR") {
    return std::make_unique<optim::PolynomialLR>(optimizer, args.value("total_iters", int64_t{5}),
                                                 args.value("power", 1.0));
  }
  if (type == "CosineAnnealingWarmRestarts") {
    return std::make_unique<optim::CosineAnnealingWarmRestarts>(
        optimizer, args["T_0"].get<int64_t>(), args.value("T_mult", int64_t{1}), args.value("eta_min", 0.0));
  }
  if (type == "CyclicLR") {
    const auto list = [&](const char* name, double fallback) {
      if (!args.contains(name)) return std::vector<double>{fallback};
      return args[name].is_array() ? args[name].get<std::vector<double>>()
                                   : std::vector<double>{args[name].get<double>()};
    };
    optim::CyclicLROptions o;
    o.step_size_up = args.value("step_size_up", o.step_size_up);
    if (args.contains("step_size_down")) o.step_size_down = args["step_size_down"].get<double>();
    const std::string mode = args.value("mode", "triangular");
    o.mode = mode == "triangular2" ? optim::CyclicMode::triangular2
             : mode == "exp_range" ? optim::CyclicMode::exp_range
                                   : optim::CyclicMode::triangular;
    o.gamma = args.value("gamma", o.gamma);
    o.base_momentum = list("base_momentum", 0.8);
    o.max_momentum = list("max_momentum", 0.9);
    return std::make_unique<optim::CyclicLR>(optimizer, list("base_lr", 0), list("max_lr", 0), o);
  }
  if (type == "SWALR") {
    const std::vector<double> swa_lr = args["swa_lr"].is_array() ? args["swa_lr"].get<std::vector<double>>()
                                                                 : std::vector<double>{args["swa_lr"].get<double>()};
    return std::make_unique<optim::SWALR>(
        optimizer, swa_lr, args.value("anneal_epochs", int64_t{10}),
        args.value("anneal_strategy", "cos") == "linear" ? optim::AnnealStrategy::linear : optim::AnnealStrategy::cos);
  }
  REQUIRE(type == "LinearLR");
  return std::make_unique<optim::LinearLR>(optimizer, args.value("start_factor", 1.0 / 3),
                                           args.value("end_factor", 1.0), args.value("total_iters", int64_t{5}));
}

// A run of one fixture configuration: parameters, optimizer and scheduler, stepped t steps so far.
struct Run {
  explicit Run(const json& config, td::DType dtype = td::kFloat64) : Run(config, fixture_params(dtype)) {}
  Run(const json& config, std::vector<td::Tensor> start, std::optional<bool> fused = std::nullopt)
      : params(std::move(start)), optimizer(make_optimizer(config, params, fused)),
        scheduler(make_scheduler(config["scheduler"], *optimizer)) {}
  void step() {
    set_fixture_grads(params, t++);
    optimizer->step();
    if (scheduler) scheduler->step();
  }
  std::vector<td::Tensor> params;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LRScheduler> scheduler;
  size_t t = 0;
};

std::vector<td::Tensor> clones(const std::vector<td::Tensor>& params) {
  std::vector<td::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

const json& config_named(const std::string& name) {
  for (const json& c : fixture()["optimizers"]) {
    if (c["name"] == name) return c;
  }
  throw std::runtime_error("no fixture configuration " + name);
}

// Irregular values of mixed signs from a closed form, which the PyTorch scripts behind these tests'
// reference numbers compute the same way.
std::vector<double> closed_form(int64_t n, double salt, double scale) {
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = scale * std::sin(1.3 * k + salt) * (1 + 0.5 * std::cos(0.7 * k));
  return v;
}

}  // namespace

TEST_CASE("every optimizer configuration gives PyTorch's parameters after every step", "[cpu]") {
  REQUIRE(fixture()["torch_version"].get<std::string>().size() > 0);
  INFO("fixture from torch " << fixture()["torch_version"].get<std::string>());
  for (const json& config : fixture()["optimizers"]) {
    Run run(config);
    const size_t steps = config["steps"];
    for (size_t t = 0; t < steps; ++t) {
      run.step();
      for (size_t i = 0; i < run.params.size(); ++i) {
        std::ostringstream what;
        what << config["name"].get<std::string>() << ", step " << t + 1 << ", parameter " << i;
        check_close(run.params[i], config["expected"][t][i].get<std::vector<double>>(), 1e-12, 1e-15, what.str());
      }
    }
    if (!config.contains("averaged")) continue;
    const auto& asgd = dynamic_cast<const optim::ASGD&>(*run.optimizer);
    for (size_t i = 0; i < run.params.size(); ++i) {
      check_close(asgd.averaged(run.params[i]), config["averaged"][i].get<std::vector<double>>(), 1e-12, 1e-15,
                  config["name"].get<std::string>() + " averaged parameter " + std::to_string(i));
    }
  }
}

TEST_CASE("every optimizer configuration steps on another CPU device as on cpu:0, keeping its state there", "[cpu]") {
  // A replica's parameters, or a model moved to cpu:1: the steps give the same values there, and
  // the state made at the first step (momentum buffers, moments) lives there too.
  const td::Device other("cpu:1");
  size_t on_device = 0;  // state tensors found on cpu:1, over all configurations
  for (const json& config : fixture()["optimizers"]) {
    const std::string name = config["name"];
    std::vector<td::Tensor> start;
    for (const td::Tensor& p : fixture_params()) start.push_back(p.detach().to(other).requires_grad_());
    Run run(config, start);
    for (size_t t = 0; t < config["steps"].get<size_t>(); ++t) run.step();
    for (size_t i = 0; i < run.params.size(); ++i) {
      CHECK(run.params[i].device() == other);
      check_close(run.params[i].to(td::Device("cpu:0")), config["expected"].back()[i].get<std::vector<double>>(),
                  1e-12, 1e-15, name + " parameter " + std::to_string(i));
    }
    for (const auto& [param, state] : run.optimizer->state()) {
      (void)param;
      td::StateDict saved;
      state->save(saved, "");
      for (const auto& key : saved.keys()) {
        INFO(name << " state " << key);
        // Counters and scalars are numbers on the host, saved as 0-dim CPU tensors (PyTorch keeps
        // step on the CPU too); the rest is per element, on the parameter's device.
        const bool host_number = key == "step" || key == "eta" || key == "mu" || key == "mu_product";
        CHECK(saved.at(key).device() == (host_number ? td::Device("cpu:0") : other));
        on_device += host_number ? 0 : 1;
      }
    }
  }
  CHECK(on_device > 0);
}

TEST_CASE("float32 parameters follow the float64 results to float32 precision", "[cpu]") {
  for (const char* name : {"sgd_nesterov", "adam_amsgrad", "adamw"}) {
    const json& config = config_named(name);
    Run run(config, td::kFloat32);
    for (size_t t = 0; t < fixture()["steps"].get<size_t>(); ++t) run.step();
    for (size_t i = 0; i < run.params.size(); ++i) {
      CHECK(run.params[i].dtype() == td::kFloat32);
      check_close(run.params[i], config["expected"].back()[i].get<std::vector<double>>(), 1e-5, 1e-6, name);
    }
  }
}

TEST_CASE("schedulers give PyTorch's learning rates, step after step", "[cpu]") {
  for (const json& s : fixture()["schedulers"]) {
    INFO(s["name"].get<std::string>());
    const auto lrs = s["group_lrs"].get<std::vector<double>>();
    td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
    optim::SGD sgd({optim::OptimizerParamGroup({a}), optim::OptimizerParamGroup({b}, optim::SGDOptions(lrs[1]))},
                   optim::SGDOptions(lrs[0]));
    auto scheduler = make_scheduler(json{{"type", s["type"]}, {"args", s["args"]}}, sgd);
    const json& expected = s["lrs"];
    for (size_t t = 0; t < expected.size(); ++t) {
      if (t > 0) {
        sgd.step();
        scheduler->step();
      }
      INFO("epoch " << t);
      const auto want = expected[t].get<std::vector<double>>();
      const auto& got = scheduler->get_last_lr();
      REQUIRE(got.size() == want.size());
      for (size_t g = 0; g < want.size(); ++g) {
        CHECK(got[g] == Approx(want[g]).epsilon(1e-12).margin(0));
        CHECK(sgd.param_groups()[g].options().get_lr() == got[g]);
        if (!s.contains("momentums")) continue;
        const double momentum = static_cast<const optim::SGDOptions&>(sgd.param_groups()[g].options()).momentum();
        CHECK(momentum == Approx(s["momentums"][t][g].get<double>()).epsilon(1e-12).margin(0));
      }
    }
    CHECK(scheduler->last_epoch() == static_cast<int64_t>(expected.size()) - 1);
  }
}

TEST_CASE("an optimizer saved after 3 steps and loaded into a fresh one continues bit-exactly", "[cpu]") {
  for (const json& config : fixture()["optimizers"]) {
    INFO(config["name"].get<std::string>());
    Run straight(config);
    for (int t = 0; t < 5; ++t) straight.step();

    Run first(config);
    for (int t = 0; t < 3; ++t) first.step();
    const td::StateDict saved = first.optimizer->state_dict();
    const td::StateDict saved_scheduler = first.scheduler ? first.scheduler->state_dict() : td::StateDict();
    std::vector<std::vector<double>> saved_values;
    for (const auto& [name, t] : saved) saved_values.push_back(values(t));

    // A fresh run whose parameters are the saved ones (as a model checkpoint would give them). As
    // in PyTorch: the scheduler first (its constructor sets lr), then the states.
    Run resumed(config, clones(first.params));
    resumed.optimizer->load_state_dict(saved);
    if (resumed.scheduler) resumed.scheduler->load_state_dict(saved_scheduler);
    resumed.t = 3;
    for (int t = 0; t < 2; ++t) resumed.step();
    // The original keeps going too: taking a state_dict must not have disturbed it.
    for (int t = 0; t < 2; ++t) first.step();

    for (size_t i = 0; i < straight.params.size(); ++i) {
      const auto want = values(straight.params[i]);
      check_equal(resumed.params[i], want, "resumed parameter " + std::to_string(i));
      check_equal(first.params[i], want, "continued parameter " + std::to_string(i));
    }
    if (straight.scheduler) CHECK(resumed.scheduler->get_last_lr() == straight.scheduler->get_last_lr());
    // The loaded optimizer works on copies: the saved state is as it was.
    size_t k = 0;
    for (const auto& [name, t] : saved) check_equal(t, saved_values[k++], "saved " + name);
  }
}

TEST_CASE("state_dict names state tensors by parameter index and keeps each group's options as JSON", "[cpu]") {
  Run run(config_named("adam_two_groups"));
  run.step();
  run.step();  // parameter 2 had no gradient at step 2, parameter 0 has one at both
  const td::StateDict sd = run.optimizer->state_dict();
  CHECK(sd.metadata.at("optimizer") == "Adam");
  // The groups hold parameters {0, 2} and {1}: state indices follow group order, so 0, 1, 2 are
  // the parameters 0, 2, 1 of the fixture.
  CHECK(sd.at("state.0.step").item<int64_t>() == 2);
  CHECK(sd.at("state.1.step").item<int64_t>() == 1);
  CHECK(sd.at("state.2.step").item<int64_t>() == 2);
  CHECK(sd.at("state.0.exp_avg").sizes() == td::Shape{2, 3});
  CHECK(sd.at("state.1.exp_avg_sq").sizes() == td::Shape{});
  CHECK_FALSE(sd.contains("state.0.max_exp_avg_sq"));
  const json groups = json::parse(sd.metadata.at("param_groups"));
  REQUIRE(groups.size() == 2);
  CHECK(groups[0]["params"] == json({0, 1}));
  CHECK(groups[1]["params"] == json::array({2}));
  CHECK(groups[0]["weight_decay"].get<double>() == 0.05);
  CHECK(groups[1]["lr"].get<double>() == 0.001);
  CHECK(groups[1]["betas"] == json({0.9, 0.999}));
  CHECK(groups[0]["param_shapes"] == json({{2, 3}, json::array()}));

  // SGD keeps a momentum buffer only where momentum is on.
  Run sgd(config_named("sgd_momentum"));
  sgd.step();
  const td::StateDict s = sgd.optimizer->state_dict();
  CHECK(s.keys() == std::vector<std::string>{"state.0.momentum_buffer", "state.1.momentum_buffer",
                                             "state.2.momentum_buffer"});
  Run plain(config_named("sgd_plain"));
  plain.step();
  CHECK(plain.optimizer->state_dict().empty());
}

TEST_CASE("load_state_dict takes the saved hyperparameters, lr included", "[cpu]") {
  td::Tensor w = td::ones({3}, td::kFloat64).requires_grad_();
  optim::SGD a({w}, optim::SGDOptions(0.5).momentum(0.9).weight_decay(0.01));
  td::Tensor v = td::ones({3}, td::kFloat64).requires_grad_();
  optim::SGD b({v}, 0.1);
  b.load_state_dict(a.state_dict());
  const auto& o = static_cast<const optim::SGDOptions&>(b.param_groups()[0].options());
  CHECK(o.lr() == 0.5);
  CHECK(o.momentum() == 0.9);
  CHECK(o.weight_decay() == 0.01);
}

TEST_CASE("load_state_dict rejects a state for other parameters and then leaves the optimizer unchanged", "[cpu]") {
  Run source(config_named("adam_amsgrad"));
  for (int t = 0; t < 3; ++t) source.step();
  const td::StateDict good = source.optimizer->state_dict();

  Run target(config_named("adam_amsgrad"));
  for (int t = 0; t < 2; ++t) target.step();
  Run reference(config_named("adam_amsgrad"));  // the same, never offered a bad state
  for (int t = 0; t < 2; ++t) reference.step();

  // Fewer parameters.
  {
    std::vector<td::Tensor> two = {td::zeros({2, 3}, td::kFloat64), td::zeros({4}, td::kFloat64)};
    optim::Adam other(two, optim::AdamOptions(0.01).amsgrad(true));
    check_error([&] { target.optimizer->load_state_dict(other.state_dict()); },
                {"Adam.load_state_dict", "2 parameters in the state, 3 in this optimizer"});
  }
  // A parameter of another shape.
  {
    std::vector<td::Tensor> shapes = {td::zeros({3, 2}, td::kFloat64), td::zeros({4}, td::kFloat64),
                                      td::zeros({}, td::kFloat64)};
    optim::Adam other(shapes, optim::AdamOptions(0.01).amsgrad(true));
    check_error([&] { target.optimizer->load_state_dict(other.state_dict()); },
                {"parameter 0", "shape [2, 3] in this optimizer but [3, 2] in the state"});
  }
  // Another kind of optimizer, and another number of groups.
  {
    optim::SGD sgd(fixture_params(), 0.1);
    check_error([&] { target.optimizer->load_state_dict(sgd.state_dict()); }, {"is a SGD optimizer's, not Adam's"});
    Run two_groups(config_named("adam_two_groups"));
    check_error([&] { target.optimizer->load_state_dict(two_groups.optimizer->state_dict()); },
                {"the state has 2 parameter groups, this optimizer has 1"});
  }
  // Not an optimizer's state at all, a stray tensor, a state tensor of the wrong shape, a bad option.
  {
    check_error([&] { target.optimizer->load_state_dict(td::StateDict()); }, {"no 'optimizer' metadata"});
    td::StateDict stray = good;
    stray.insert("weight", td::zeros({2}));
    check_error([&] { target.optimizer->load_state_dict(stray); }, {"unexpected tensor 'weight'"});
    td::StateDict extra = good;
    extra.insert("state.1.momentum_buffer", td::zeros({4}, td::kFloat64));
    check_error([&] { target.optimizer->load_state_dict(extra); }, {"parameter 1 has 5 state tensors"});
    td::StateDict far = good;
    far.insert("state.7.exp_avg", td::zeros({4}, td::kFloat64));
    check_error([&] { target.optimizer->load_state_dict(far); }, {"'state.7.exp_avg' is for parameter 7"});
    td::StateDict wrong;
    for (const auto& [name, t] : good) {
      wrong.insert(name, name == "state.1.exp_avg" ? td::zeros({5}, td::kFloat64) : t);
    }
    wrong.metadata = good.metadata;
    check_error([&] { target.optimizer->load_state_dict(wrong); }, {"'state.1.exp_avg' has shape [5]"});
    td::StateDict bad_option = good;
    json groups = json::parse(bad_option.metadata["param_groups"]);
    groups[0]["betas"] = {0.9, 1.5};
    bad_option.metadata["param_groups"] = groups.dump();
    check_error([&] { target.optimizer->load_state_dict(bad_option); }, {"betas[1] = 1.5"});
    groups[0].erase("eps");
    bad_option.metadata["param_groups"] = groups.dump();
    check_error([&] { target.optimizer->load_state_dict(bad_option); }, {"no 'eps'"});
  }

  for (int t = 0; t < 3; ++t) {
    target.step();
    reference.step();
  }
  for (size_t i = 0; i < target.params.size(); ++i) check_equal(target.params[i], values(reference.params[i]));
}

TEST_CASE("invalid options raise errors that name the option", "[cpu]") {
  auto params = [] { return std::vector<td::Tensor>{td::zeros({2}).requires_grad_()}; };
  check_error([&] { optim::SGD(params(), -0.1); }, {"SGD", "lr = -0.1"});
  check_error([&] { optim::SGD(params(), optim::SGDOptions(0.1).momentum(-1)); }, {"momentum = -1"});
  check_error([&] { optim::SGD(params(), optim::SGDOptions(0.1).weight_decay(-0.5)); }, {"weight_decay = -0.5"});
  check_error([&] { optim::SGD(params(), optim::SGDOptions(0.1).nesterov(true)); },
              {"nesterov", "momentum > 0", "momentum = 0"});
  check_error([&] { optim::SGD(params(), optim::SGDOptions(0.1).nesterov(true).momentum(0.9).dampening(0.1)); },
              {"nesterov", "dampening = 0.1"});
  check_error([&] { optim::SGD(params(), std::nan("")); }, {"lr = nan"});
  check_error([&] { optim::Adam(params(), optim::AdamOptions(-1e-3)); }, {"Adam", "lr = -0.001"});
  check_error([&] { optim::Adam(params(), optim::AdamOptions().betas({1.0, 0.999})); }, {"betas[0] = 1", "[0, 1)"});
  check_error([&] { optim::Adam(params(), optim::AdamOptions().betas({0.9, -0.1})); }, {"betas[1] = -0.1"});
  check_error([&] { optim::Adam(params(), optim::AdamOptions().eps(-1e-8)); }, {"eps = -1e-08"});
  check_error([&] { optim::Adam(params(), optim::AdamOptions().weight_decay(-1)); }, {"weight_decay = -1"});
  check_error([&] { optim::AdamW(params(), optim::AdamWOptions().betas({0.9, 1.0})); }, {"AdamW", "betas[1] = 1"});
  check_error([&] { optim::AdamW(params(), optim::AdamWOptions(-1)); }, {"AdamW", "lr = -1"});
  check_error([&] { optim::RMSprop(params(), optim::RMSpropOptions().alpha(-0.5)); }, {"RMSprop", "alpha = -0.5"});
  check_error([&] { optim::RMSprop(params(), optim::RMSpropOptions().momentum(-1)); }, {"RMSprop", "momentum = -1"});
  check_error([&] { optim::RMSprop(params(), optim::RMSpropOptions().eps(std::nan(""))); }, {"RMSprop", "eps = nan"});
  check_error([&] { optim::Adagrad(params(), optim::AdagradOptions().lr_decay(-1)); }, {"Adagrad", "lr_decay = -1"});
  check_error([&] { optim::Adagrad(params(), optim::AdagradOptions().initial_accumulator_value(-0.1)); },
              {"Adagrad", "initial_accumulator_value = -0.1"});
  check_error([&] { optim::Adamax(params(), optim::AdamaxOptions().betas({0.9, 1.0})); }, {"Adamax", "betas[1] = 1"});
  check_error([&] { optim::NAdam(params(), optim::NAdamOptions().momentum_decay(-1)); },
              {"NAdam", "momentum_decay = -1"});
  check_error([&] { optim::RAdam(params(), optim::RAdamOptions().eps(-1)); }, {"RAdam", "eps = -1"});
  check_error([&] { optim::Adadelta(params(), optim::AdadeltaOptions().rho(1.5)); }, {"Adadelta", "rho = 1.5"});
  check_error([&] { optim::Adadelta(params(), optim::AdadeltaOptions(-1)); }, {"Adadelta", "lr = -1"});
  check_error(
      [&] {
        optim::Rprop(params(), optim::RpropOptions().etas({0.5, 0.9}));
      },
      {"Rprop", "etas (0.5, 0.9)", "0 < etaminus < 1 < etaplus"});
  check_error([&] { optim::ASGD(params(), optim::ASGDOptions().alpha(-1)); }, {"ASGD", "alpha = -1"});
  check_error([&] { optim::ASGD(params(), optim::ASGDOptions().weight_decay(-1)); }, {"ASGD", "weight_decay = -1"});
  const auto matrix = [] { return std::vector<td::Tensor>{td::zeros({2, 2}).requires_grad_()}; };
  check_error([&] { optim::Muon(matrix(), optim::MuonOptions().momentum(-0.5)); }, {"Muon", "momentum = -0.5"});
  check_error([&] { optim::Muon(matrix(), optim::MuonOptions().weight_decay(-1)); }, {"Muon", "weight_decay = -1"});
  check_error([&] { optim::Muon(matrix(), optim::MuonOptions().ns_steps(100)); }, {"Muon", "ns_steps = 100"});
  check_error([&] { optim::Muon(matrix(), optim::MuonOptions().eps(-1)); }, {"Muon", "eps = -1"});
  check_error([&] { optim::Muon(matrix(), optim::MuonOptions(-0.1)); }, {"Muon", "lr = -0.1"});
  check_error([&] { optim::Adafactor(params(), optim::AdafactorOptions().beta2_decay(0.5)); },
              {"Adafactor", "beta2_decay = 0.5", "<= 0"});
  check_error(
      [&] {
        optim::Adafactor(params(), optim::AdafactorOptions().eps({-1.0, 1e-3}));
      },
      {"Adafactor", "eps[0] = -1"});
  check_error(
      [&] {
        optim::Adafactor(params(), optim::AdafactorOptions().eps({std::nullopt, -1e-3}));
      },
      {"Adafactor", "eps[1] = -0.001"});
  check_error([&] { optim::Adafactor(params(), optim::AdafactorOptions().d(0.5)); }, {"Adafactor", "d = 0.5", ">= 1"});
  check_error([&] { optim::Adafactor(params(), optim::AdafactorOptions().d(std::nan(""))); }, {"Adafactor", "d = nan"});
  optim::Adafactor unclipped(params(),
                             optim::AdafactorOptions().d(std::numeric_limits<double>::infinity()));  // as PyTorch
  check_error([&] { optim::Adafactor(params(), optim::AdafactorOptions().weight_decay(-1)); },
              {"Adafactor", "weight_decay = -1"});
  // A group's own options are checked too.
  check_error([&] { optim::SGD({optim::OptimizerParamGroup(params(), optim::SGDOptions(-2))}, 0.1); },
              {"lr = -2"});
  // Schedulers.
  optim::SGD sgd(params(), 0.1);
  check_error([&] { optim::StepLR(sgd, 0); }, {"StepLR", "step_size = 0"});
  check_error([&] { optim::CosineAnnealingLR(sgd, 0); }, {"CosineAnnealingLR", "T_max = 0"});
  check_error([&] { optim::LinearLR(sgd, 0.0); }, {"LinearLR", "start_factor = 0"});
  check_error([&] { optim::LinearLR(sgd, 0.5, 1.5); }, {"end_factor = 1.5"});
  check_error([&] { optim::LinearLR(sgd, 0.5, 1.0, 0); }, {"total_iters = 0"});
  check_error([&] { optim::MultiStepLR(sgd, {2}, std::nan("")); }, {"MultiStepLR", "gamma = nan"});
  check_error([&] { optim::ExponentialLR(sgd, INFINITY); }, {"ExponentialLR", "gamma = inf"});
  check_error([&] { optim::LambdaLR(sgd, std::vector<optim::LambdaLR::Factor>{}); },
              {"LambdaLR", "0 functions for 1 parameter groups"});
  check_error([&] { optim::LambdaLR(sgd, optim::LambdaLR::Factor()); }, {"LambdaLR", "function 0 is empty"});
  optim::Adagrad adagrad(params());  // no momentum to cycle
  check_error([&] { optim::OneCycleLR(adagrad, {0.1}, 10); }, {"OneCycleLR", "cycle_momentum", "Adagrad"});
  optim::OneCycleLROptions no_momentum;
  no_momentum.cycle_momentum = false;
  optim::OneCycleLR cycle(adagrad, {0.1}, 10, no_momentum);
  CHECK(cycle.get_last_lr()[0] == Approx(0.1 / 25));
  // A rejected scheduler leaves the optimizer as it was.
  CHECK(sgd.param_groups()[0].options().get_lr() == 0.1);
  CHECK_FALSE(sgd.param_groups()[0].initial_lr().has_value());
}

TEST_CASE("defaults are PyTorch's: Adam without weight decay, AdamW with 0.01", "[cpu]") {
  optim::AdamOptions adam;
  CHECK(adam.lr() == 1e-3);
  CHECK(adam.betas() == optim::betas_t{0.9, 0.999});
  CHECK(adam.eps() == 1e-8);
  CHECK(adam.weight_decay() == 0);
  CHECK_FALSE(adam.amsgrad());
  optim::AdamWOptions adamw;
  CHECK(adamw.weight_decay() == 0.01);
  CHECK(adamw.lr(0.5).amsgrad(true).weight_decay() == 0.01);  // chained setters keep AdamWOptions
  optim::SGDOptions sgd(0.1);
  CHECK(sgd.momentum() == 0);
  CHECK(sgd.dampening() == 0);
  CHECK_FALSE(sgd.nesterov());
  CHECK_FALSE(sgd.maximize());
  optim::RMSpropOptions rmsprop;
  CHECK(rmsprop.lr() == 1e-2);
  CHECK(rmsprop.alpha() == 0.99);
  CHECK(rmsprop.eps() == 1e-8);
  CHECK(rmsprop.momentum() == 0);
  CHECK_FALSE(rmsprop.centered());
  optim::AdagradOptions adagrad;
  CHECK(adagrad.lr() == 1e-2);
  CHECK(adagrad.lr_decay() == 0);
  CHECK(adagrad.initial_accumulator_value() == 0);
  CHECK(adagrad.eps() == 1e-10);
}

TEST_CASE("optimizers reject empty, repeated, integer and non-leaf parameters", "[cpu]") {
  check_error([] { optim::SGD(std::vector<td::Tensor>{}, 0.1); }, {"SGD", "empty parameter list"});
  td::Tensor w = td::zeros({2}).requires_grad_();
  check_error([&] { optim::SGD({w, w}, 0.1); }, {"more than one place"});
  check_error([&] { optim::Adam({optim::OptimizerParamGroup({w}), optim::OptimizerParamGroup({w})}); },
              {"more than one place"});
  check_error([] { optim::SGD({td::zeros({2}, td::kInt64)}, 0.1); }, {"floating-point", "int64"});
  check_error([&] { optim::SGD({w * 2}, 0.1); }, {"non-leaf"});
  check_error([] { optim::SGD({td::Tensor()}, 0.1); }, {"undefined"});
  optim::SGD sgd({w}, 0.1);
  check_error([&] { sgd.add_param_group(optim::OptimizerParamGroup({w})); }, {"more than one place"});
  CHECK(sgd.param_groups().size() == 1);
}

TEST_CASE("a parameter group's options must be of the optimizer's kind", "[cpu]") {
  td::Tensor w = td::zeros({2}).requires_grad_();
  td::Tensor v = td::zeros({2}).requires_grad_();
  optim::Adam adam({w});
  check_error([&] { adam.add_param_group(optim::OptimizerParamGroup({v}, optim::SGDOptions(0.1))); },
              {"Adam", "options are for SGD"});
  check_error([&] { adam.add_param_group(optim::OptimizerParamGroup({v}, optim::AdamWOptions())); },
              {"options are for AdamW, not Adam"});
  adam.add_param_group(optim::OptimizerParamGroup({v}, optim::AdamOptions(0.5)));
  REQUIRE(adam.param_groups().size() == 2);
  CHECK(adam.param_groups()[1].options().get_lr() == 0.5);
  CHECK(adam.size() == 2);
}

TEST_CASE("add_param_group brings new parameters into later steps, with the defaults", "[cpu]") {
  td::Tensor w = td::ones({2}, td::kFloat64).requires_grad_();
  td::Tensor v = td::ones({2}, td::kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.5);
  sgd.add_param_group(optim::OptimizerParamGroup({v}));
  w.mutable_grad() = td::ones({2}, td::kFloat64);
  v.mutable_grad() = td::full({2}, 2.0, td::kFloat64);
  sgd.step();
  check_equal(w, {0.5, 0.5});
  check_equal(v, {0.0, 0.0});
}

TEST_CASE("zero_grad sets gradients to undefined, or to zeros", "[cpu]") {
  td::Tensor w = td::ones({3}).requires_grad_();
  td::Tensor unused = td::ones({3}).requires_grad_();
  optim::SGD sgd({w, unused}, 0.1);
  (w * w).sum().backward();
  REQUIRE(w.grad().defined());
  sgd.zero_grad(false);
  REQUIRE(w.grad().defined());
  check_equal(w.grad(), {0, 0, 0});
  CHECK_FALSE(unused.grad().defined());
  sgd.zero_grad();
  CHECK_FALSE(w.grad().defined());
}

TEST_CASE("step updates leaves under no-grad and minimizes a real loss", "[cpu]") {
  const td::Tensor target = td::tensor({1.0, -2.0, 3.0}).to(td::kFloat64);
  for (const char* kind : {"SGD", "Adam", "AdamW"}) {
    INFO(kind);
    td::Tensor w = td::zeros({3}, td::kFloat64).requires_grad_();
    std::unique_ptr<optim::Optimizer> opt;
    if (std::string(kind) == "SGD") opt = std::make_unique<optim::SGD>(std::vector<td::Tensor>{w},
                                                                       optim::SGDOptions(0.1).momentum(0.5));
    if (std::string(kind) == "Adam") opt = std::make_unique<optim::Adam>(std::vector<td::Tensor>{w},
                                                                        optim::AdamOptions(0.1));
    if (std::string(kind) == "AdamW") opt = std::make_unique<optim::AdamW>(std::vector<td::Tensor>{w},
                                                                          optim::AdamWOptions(0.1).weight_decay(0));
    double first = 0, last = 0;
    for (int t = 0; t < 200; ++t) {
      opt->zero_grad();
      td::Tensor loss = opt->step([&] {
        td::Tensor l = (w - target).pow(2).sum();
        l.backward();
        return l;
      });
      REQUIRE(loss.defined());
      if (t == 0) first = loss.item<double>();
      last = loss.item<double>();
    }
    CHECK(td::is_grad_enabled());
    CHECK(w.is_leaf());
    CHECK(w.requires_grad());
    CHECK(first == 14.0);
    CHECK(last < 1e-4);
    check_close(w, {1.0, -2.0, 3.0}, 0, 1e-2);
  }
}

TEST_CASE("step without a closure returns an undefined tensor and works with grad mode off", "[cpu]") {
  td::Tensor w = td::ones({2}, td::kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.25);
  w.mutable_grad() = td::ones({2}, td::kFloat64);
  td::NoGradGuard no_grad;
  CHECK_FALSE(sgd.step().defined());
  check_equal(w, {0.75, 0.75});
}

TEST_CASE("step rejects a gradient of another shape or dtype and changes no parameter", "[cpu]") {
  td::Tensor a = td::ones({2}, td::kFloat64).requires_grad_();
  td::Tensor b = td::ones({3}, td::kFloat64).requires_grad_();
  optim::SGD sgd({a, b}, 0.5);
  a.mutable_grad() = td::ones({2}, td::kFloat64);
  b.mutable_grad() = td::ones({1}, td::kFloat64);
  check_error([&] { sgd.step(); }, {"SGD.step", "parameter 1 has shape [3] but its gradient has shape [1]"});
  b.mutable_grad() = td::ones({3}, td::kFloat32);
  check_error([&] { sgd.step(); }, {"parameter 1 is float64", "gradient is float32"});
  check_equal(a, {1, 1});
  check_equal(b, {1, 1, 1});
}

TEST_CASE("every optimizer refuses a bad gradient before it changes a parameter or its state", "[cpu]") {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<td::Tensor>)>;
  const std::vector<std::pair<std::string, Make>> makers{
      {"Adam", [](auto p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions(0.1).amsgrad(true)); }},
      {"AdamW", [](auto p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(0.1).fused(false)); }},
      {"RMSprop", [](auto p) { return std::make_unique<optim::RMSprop>(p, optim::RMSpropOptions(0.1).momentum(0.9)); }},
      {"Adagrad", [](auto p) { return std::make_unique<optim::Adagrad>(p, optim::AdagradOptions(0.1)); }},
      {"SGD", [](auto p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1).momentum(0.9)); }},
      {"Adamax", [](auto p) { return std::make_unique<optim::Adamax>(p, optim::AdamaxOptions(0.1)); }},
      {"NAdam", [](auto p) { return std::make_unique<optim::NAdam>(p, optim::NAdamOptions(0.1)); }},
      {"RAdam", [](auto p) { return std::make_unique<optim::RAdam>(p, optim::RAdamOptions(0.1)); }},
      {"Adadelta", [](auto p) { return std::make_unique<optim::Adadelta>(p, optim::AdadeltaOptions()); }},
      {"Rprop", [](auto p) { return std::make_unique<optim::Rprop>(p, optim::RpropOptions()); }},
      {"ASGD", [](auto p) { return std::make_unique<optim::ASGD>(p, optim::ASGDOptions().t0(0)); }},
      {"Adafactor", [](auto p) { return std::make_unique<optim::Adafactor>(p, optim::AdafactorOptions()); }}};
  for (const auto& [name, make] : makers) {
    INFO(name);
    td::Tensor a = td::ones({2}, td::kFloat64).requires_grad_(), b = td::ones({3}, td::kFloat64).requires_grad_();
    auto optimizer = make({a, b});
    a.mutable_grad() = td::full({2}, 0.5, td::kFloat64);
    b.mutable_grad() = td::full({3}, 0.25, td::kFloat64);
    optimizer->step();
    const td::StateDict before = optimizer->state_dict();
    const std::vector<double> a_before = values(a), b_before = values(b);
    b.mutable_grad() = td::ones({1}, td::kFloat64);
    check_error([&] { optimizer->step(); }, {name + ".step", "parameter 1", "[3]", "[1]"});
    b.mutable_grad() = td::ones({3}, td::kFloat32);
    check_error([&] { optimizer->step(); }, {name + ".step", "float64", "float32"});
    b.mutable_grad() = td::ones({3}, td::kFloat64).to(td::Device("cpu:1"));
    check_error([&] { optimizer->step(); }, {name + ".step", "cpu:0", "cpu:1"});
    CHECK(values(a) == a_before);
    CHECK(values(b) == b_before);
    const td::StateDict after = optimizer->state_dict();
    REQUIRE(after.size() == before.size());
    for (const auto& [key, t] : before) {
      INFO(key);
      CHECK(values(after.at(key)) == values(t));
    }
    CHECK(after.metadata == before.metadata);
  }
}

TEST_CASE("a group's lr, changed through param_groups, is used by the next step", "[cpu]") {
  td::Tensor w = td::ones({2}, td::kFloat64).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  sgd.param_groups()[0].options().set_lr(0.5);
  w.mutable_grad() = td::ones({2}, td::kFloat64);
  sgd.step();
  check_equal(w, {0.5, 0.5});
}

TEST_CASE("a second scheduler takes its base lr from the first one's initial_lr", "[cpu]") {
  td::Tensor w = td::ones({2}).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  optim::LinearLR warmup(sgd, 0.5, 1.0, 2);
  CHECK(sgd.param_groups()[0].options().get_lr() == 0.05);
  optim::CosineAnnealingLR cosine(sgd, 10);
  CHECK(cosine.base_lrs() == std::vector<double>{0.1});
  CHECK(cosine.get_last_lr() == std::vector<double>{0.05});
  // initial_lr travels with the optimizer's state.
  td::Tensor v = td::ones({2}).requires_grad_();
  optim::SGD other({v}, 0.3);
  other.load_state_dict(sgd.state_dict());
  CHECK(other.param_groups()[0].initial_lr() == std::optional<double>(0.1));
}

TEST_CASE("optimizers on bfloat16 parameters round as PyTorch's single-tensor steps do", "[cpu]") {
  // PyTorch 2.15, foreach=False, on a bfloat16 parameter of 64 values ((i % 17) - 8) / 8, five
  // steps with gradients (((7 i + s) % 13) - 6) / 16 + s / 32, all exact in bfloat16. Its
  // addcmul_, addcdiv_ and lerp_ compute in float32 and round once; op by op in bfloat16, 7 of
  // Adam's 64 values differed.
  auto run = [](const std::function<std::unique_ptr<optim::Optimizer>(std::vector<td::Tensor>)>& make) {
    std::vector<float> start(64);
    for (int i = 0; i < 64; ++i) start[i] = static_cast<float>(i % 17 - 8) / 8.0f;
    td::Tensor p = td::tensor(start).to(td::kBFloat16).requires_grad_();
    auto optimizer = make({p});
    for (int s = 0; s < 5; ++s) {
      std::vector<float> g(64);
      for (int i = 0; i < 64; ++i) {
        g[i] = static_cast<float>((7 * i + s) % 13 - 6) / 16.0f + static_cast<float>(s) / 32.0f;
      }
      p.mutable_grad() = td::tensor(g).to(td::kBFloat16);
      optimizer->step();
    }
    return values(p.detach());
  };
  const std::vector<double> adam{
      -0.953125, -0.91796875, -0.70703125, -0.671875, -0.462890625, -0.419921875, -0.22265625, -0.162109375,
      0.01318359375, 0.10205078125, 0.2421875, 0.375, 0.466796875, 0.671875, 0.70703125, 0.91796875, 0.953125,
      -0.9609375, -0.9296875, -0.71875, -0.66796875, -0.486328125, -0.3984375, -0.2578125, -0.1240234375,
      -0.033447265625, 0.1708984375, 0.201171875, 0.41796875, 0.451171875, 0.6640625, 0.6953125, 0.90625,
      0.95703125, -0.984375, -0.90234375, -0.75390625, -0.625, -0.53125, -0.330078125, -0.298828125,
      -0.08251953125, -0.049072265625, 0.1630859375, 0.205078125, 0.404296875, 0.462890625, 0.640625, 0.72265625,
      0.87109375, 1.0, -1.03125, -0.828125, -0.79296875, -0.58203125, -0.546875, -0.337890625, -0.294921875,
      -0.0966796875, -0.03759765625, 0.1376953125, 0.2275390625, 0.3671875, 0.5};
  CHECK(run([](std::vector<td::Tensor> ps) { return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.01)); }) ==
        adam);
  // AdamW's decay of these weights over five steps is below bfloat16's resolution here: the same values.
  CHECK(run([](std::vector<td::Tensor> ps) {
          return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(0.01).amsgrad(true));
        }) == adam);
  // RMSprop, centered (its lerp_ and out-of-place addcmul).
  CHECK(run([](std::vector<td::Tensor> ps) {
          return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions(0.01).centered(true));
        }) ==
        std::vector<double>{
            -0.77734375, -1.3046875, -0.56640625, -1.03125, -0.373046875, -0.66796875, -0.208984375, -0.30859375,
            -0.0703125, 0.050537109375, 0.0537109375, 0.427734375, 0.1552734375, 0.84765625, 0.32421875, 1.0546875,
            0.59375, -0.875, -1.1796875, -0.70703125, -0.8125, -0.5703125, -0.453125, -0.443359375,
            -0.0751953125, -0.34765625, 0.34375, -0.17578125, 0.55859375, 0.09326171875, 0.75, 0.451171875,
            0.91796875, 0.8125, -1.0703125, -0.9453125, -0.94140625, -0.578125, -0.84765625, -0.158203125,
            -0.67578125, 0.057861328125, -0.408203125, 0.251953125, -0.044677734375, 0.4140625, 0.314453125, 0.5546875,
            0.671875, 0.68359375, 1.0390625, -1.3515625, -0.65234375, -1.1796875, -0.44140625, -0.90625,
            -0.25, -0.54296875, -0.08447265625, -0.1865234375, 0.054931640625, 0.17578125, 0.1796875, 0.55078125});
  // RMSprop with momentum and SGD with momentum and weight decay: add_(buf, alpha=-lr) takes lr in
  // bfloat16, as PyTorch's add does (with lr at its double value, 11 of RMSprop's 64 values differed).
  CHECK(run([](std::vector<td::Tensor> ps) {
          return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions(0.01).momentum(0.9));
        }) ==
        std::vector<double>{
            -0.2373046875, -2.046875, -0.05517578125, -1.75, 0.087890625, -1.3671875, 0.1748046875, -0.8984375,
            0.1552734375, -0.333984375, 0.0302734375, 0.376953125, -0.31640625, 1.3828125, -0.41796875, 1.5703125,
            -0.12353515625, -0.41015625, -1.8671875, -0.32421875, -1.40625, -0.34375, -0.83203125, -0.470703125,
            -0.12060546875, -0.81640625, 0.8828125, -0.9140625, 1.0625, -0.625, 1.21875, -0.2470703125, 1.3046875,
            0.2197265625, -0.84375, -1.3359375, -0.96484375, -0.625, -1.3125, 0.384765625, -1.4140625, 0.56640625,
            -1.125, 0.71484375, -0.74609375, 0.8046875, -0.27734375, 0.78125, 0.2890625, 0.66015625, 1.0, -1.8125,
            -0.11376953125, -1.9140625, 0.0693359375, -1.625, 0.2138671875, -1.2421875, 0.30078125, -0.77734375,
            0.28125, -0.2080078125, 0.154296875, 0.5});
  CHECK(run([](std::vector<td::Tensor> ps) {
          return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01));
        }) ==
        std::vector<double>{
            -0.66796875, -1.125, -0.50390625, -0.953125, -0.33984375, -0.70703125, -0.173828125, -0.388671875,
            -0.00982666015625, -0.00347900390625, 0.154296875, 0.439453125, 0.3203125, 0.9375, 0.48046875, 1.1015625,
            0.65234375, -0.8359375, -1.2109375, -0.6640625, -0.8828125, -0.50390625, -0.498046875, -0.337890625,
            -0.053955078125, -0.1728515625, 0.443359375, -0.01025390625, 0.609375, 0.1552734375, 0.76953125,
            0.3984375, 0.93359375, 0.71875, -1.0, -0.98828125, -0.828125, -0.55078125, -0.66796875, -0.052978515625,
            -0.50390625, 0.11328125, -0.337890625, 0.279296875, -0.09375, 0.44140625, 0.2275390625, 0.60546875,
            0.61328125, 0.76953125, 1.0625, -1.15625, -0.546875, -0.9921875, -0.3828125, -0.828125, -0.216796875,
            -0.5859375, -0.05126953125, -0.265625, 0.1142578125, 0.11865234375, 0.27734375, 0.55859375});
  CHECK(run([](std::vector<td::Tensor> ps) { return std::make_unique<optim::Adagrad>(ps, optim::AdagradOptions(0.1)); }) ==
        std::vector<double>{
            -0.78125, -1.3046875, -0.56640625, -1.0234375, -0.375, -0.6640625, -0.2099609375, -0.30859375,
            -0.06884765625, 0.051513671875, 0.05712890625, 0.42578125, 0.1572265625, 0.84375, 0.326171875, 1.0546875,
            0.59765625, -0.875, -1.1796875, -0.70703125, -0.80859375, -0.5703125, -0.44921875, -0.443359375,
            -0.07568359375, -0.34375, 0.33984375, -0.169921875, 0.5546875, 0.099609375, 0.75, 0.458984375, 0.921875,
            0.81640625, -1.0703125, -0.9453125, -0.9375, -0.578125, -0.84375, -0.16015625, -0.671875, 0.055908203125,
            -0.400390625, 0.25, -0.041015625, 0.416015625, 0.31640625, 0.5546875, 0.67578125, 0.6875, 1.0390625,
            -1.3359375, -0.65625, -1.1796875, -0.443359375, -0.90234375, -0.251953125, -0.5390625, -0.08447265625,
            -0.1826171875, 0.0546875, 0.1767578125, 0.181640625, 0.55078125});
}

TEST_CASE("Adamax, NAdam, RAdam, Adadelta, Rprop, ASGD and Adafactor on bfloat16 parameters round as PyTorch's",
          "[cpu]") {
  // The same parameter and five gradients as above; PyTorch 2.15 (foreach=False) gave these sums
  // of the final values, plain and weighted by position, which any changed value would move.
  auto run = [](optim::Optimizer& optimizer, td::Tensor& p) {
    for (int s = 0; s < 5; ++s) {
      std::vector<float> g(64);
      for (int i = 0; i < 64; ++i) {
        g[i] = static_cast<float>((7 * i + s) % 13 - 6) / 16.0f + static_cast<float>(s) / 32.0f;
      }
      p.mutable_grad() = td::tensor(g).to(td::kBFloat16).view(p.sizes());
      optimizer.step();
    }
    const td::Tensor final_values = p.detach().to(td::kFloat64).reshape({-1});
    return std::pair{final_values.sum().item<double>(),
                     (final_values * td::arange(64, td::kFloat64)).sum().item<double>()};
  };
  auto parameter = [] {
    std::vector<float> start(64);
    for (int i = 0; i < 64; ++i) start[i] = static_cast<float>(i % 17 - 8) / 8.0f;
    return td::tensor(start).to(td::kBFloat16).requires_grad_();
  };
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<td::Tensor>)>;
  const std::vector<std::tuple<std::string, Make, double, double>> cases{
      {"Adamax", [](auto p) { return std::make_unique<optim::Adamax>(p, optim::AdamaxOptions(0.01)); },
       -3.5013427734375, -18.0509033203125},
      {"NAdam", [](auto p) { return std::make_unique<optim::NAdam>(p, optim::NAdamOptions(0.01).weight_decay(0.1)); },
       -3.92071533203125, -31.951416015625},
      {"RAdam",
       [](auto p) {
         return std::make_unique<optim::RAdam>(p, optim::RAdamOptions(0.01).betas({0.9, 0.6}));
       },
       -3.3612060546875, -13.38580322265625},
      {"Adadelta", [](auto p) { return std::make_unique<optim::Adadelta>(p, optim::AdadeltaOptions(1.0)); },
       -3.6435546875, -22.131622314453125},
      {"Rprop", [](auto p) { return std::make_unique<optim::Rprop>(p, optim::RpropOptions(0.01)); }, -3.9564208984375,
       -31.9190673828125},
      {"ASGD", [](auto p) { return std::make_unique<optim::ASGD>(p, optim::ASGDOptions(0.05).t0(1)); },
       -4.2315673828125, -40.4427490234375},
      {"Adafactor", [](auto p) { return std::make_unique<optim::Adafactor>(p, optim::AdafactorOptions(0.01)); },
       -3.9049072265625, -30.170166015625},
  };
  for (const auto& [name, make, sum, weighted] : cases) {
    INFO(name);
    td::Tensor p = parameter();
    auto optimizer = make({p});
    const auto [got_sum, got_weighted] = run(*optimizer, p);
    CHECK(got_sum == sum);
    CHECK(got_weighted == weighted);
  }
  // The same values as an 8 x 8 matrix, whose second moments Adafactor factors.
  td::Tensor matrix = parameter().detach().view({8, 8}).requires_grad_();
  optim::Adafactor adafactor({matrix}, optim::AdafactorOptions(0.01));
  const auto [matrix_sum, matrix_weighted] = run(adafactor, matrix);
  CHECK(matrix_sum == -3.71514892578125);
  CHECK(matrix_weighted == -24.423828125);
}

TEST_CASE("schedulers that follow each group's lr also schedule groups added later, as PyTorch's do", "[cpu]") {
  // PyTorch 2.15: SGD([a], lr=0.1), the scheduler, then add_param_group({b}, lr=1.0); three steps.
  auto run = [](const std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)>& make) {
    td::Tensor a = td::ones({2}).requires_grad_(), b = td::ones({2}).requires_grad_();
    optim::SGD sgd({a}, 0.1);
    auto scheduler = make(sgd);
    sgd.add_param_group(optim::OptimizerParamGroup({b}, optim::SGDOptions(1.0)));
    std::vector<std::vector<double>> lrs;
    for (int t = 0; t < 3; ++t) {
      scheduler->step();
      lrs.push_back(scheduler->get_last_lr());
    }
    // Its state, with the first group's base lr only, goes back into a scheduler of the same optimizer.
    auto again = make(sgd);
    again->load_state_dict(scheduler->state_dict());
    CHECK(again->get_last_lr() == lrs.back());
    return lrs;
  };
  using Lrs = std::vector<std::vector<double>>;
  CHECK(run([](optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 1, 0.5); }) ==
        Lrs{{0.05, 0.5}, {0.025, 0.25}, {0.0125, 0.125}});
  CHECK(run([](optim::Optimizer& o) { return std::make_unique<optim::ExponentialLR>(o, 0.5); }) ==
        Lrs{{0.05, 0.5}, {0.025, 0.25}, {0.0125, 0.125}});
  CHECK(run([](optim::Optimizer& o) { return std::make_unique<optim::MultiStepLR>(o, std::vector<int64_t>{1}); }) ==
        Lrs{{0.010000000000000002, 0.1}, {0.010000000000000002, 0.1}, {0.010000000000000002, 0.1}});
  CHECK(run([](optim::Optimizer& o) { return std::make_unique<optim::LinearLR>(o, 0.5, 1.0, 2); }) ==
        Lrs{{0.07500000000000001, 1.5}, {0.1, 2.0}, {0.1, 2.0}});
  CHECK(run([](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 10); }) ==
        Lrs{{0.09755282581475769, 0.9755282581475768},
            {0.09045084971874738, 0.9045084971874737},
            {0.07938926261462367, 0.7938926261462366}});
  // A schedule from each group's initial lr cannot take a group that has none.
  td::Tensor a = td::ones({2}).requires_grad_(), b = td::ones({2}).requires_grad_();
  optim::SGD sgd({a}, 0.1);
  optim::LambdaLR lambda(sgd, [](int64_t epoch) { return 1.0 / static_cast<double>(epoch + 1); });
  sgd.add_param_group(optim::OptimizerParamGroup({b}, optim::SGDOptions(1.0)));
  check_error([&] { lambda.step(); }, {"LambdaLR.step: the optimizer has 2 parameter groups", "made for 1"});
  CHECK(lambda.last_epoch() == 0);
}

TEST_CASE("a scheduler refuses another scheduler's state and a state for other groups", "[cpu]") {
  td::Tensor w = td::ones({2}).requires_grad_();
  td::Tensor v = td::ones({2}).requires_grad_();
  optim::SGD sgd({w}, 0.1);
  optim::SGD two({optim::OptimizerParamGroup({w}), optim::OptimizerParamGroup({v})}, 0.1);
  optim::StepLR step(sgd, 2);
  optim::CosineAnnealingLR cosine(sgd, 5);
  optim::StepLR two_step(two, 2);
  for (int t = 0; t < 3; ++t) step.step();
  check_error([&] { cosine.load_state_dict(step.state_dict()); }, {"is a StepLR's, not a CosineAnnealingLR's"});
  check_error([&] { two_step.load_state_dict(step.state_dict()); }, {"for 1 parameter groups, the optimizer has 2"});
  check_error([&] { step.load_state_dict(sgd.state_dict()); }, {"no 'lr_scheduler' metadata"});
  CHECK(two_step.last_epoch() == 0);
  CHECK(cosine.last_epoch() == 0);
  optim::StepLR again(sgd, 7, 0.9);
  again.load_state_dict(step.state_dict());
  CHECK(again.last_epoch() == 3);
  CHECK(again.get_last_lr() == step.get_last_lr());
}

TEST_CASE("an optimizer's state follows its parameters when the module moves to another device or dtype", "[cpu]") {
  // Module::to moves the parameters in place; the momentum buffers and moments made before the
  // move follow them at the next step, which goes on as if the training had never moved.
  auto train = [](bool move, auto make_optimizer) {
    td::manual_seed(5);
    td::nn::Linear model(3, 2);
    auto opt = make_optimizer(model->parameters());
    td::Tensor x = td::testing::random_tensor({4, 3}, td::kFloat32);
    for (int step = 0; step < 4; ++step) {
      if (move && step == 2) {
        model->to(td::Device("cpu:1"), td::kFloat64);
        x = x.to(td::Device("cpu:1"), td::kFloat64);
      }
      opt->zero_grad();
      model(x).pow(2.0).sum().backward();
      opt->step();
    }
    for (const auto& [param, state] : opt->state()) {
      (void)param;
      td::StateDict saved;
      state->save(saved, "");
      for (const auto& key : saved.keys()) {
        if (key == "step") continue;
        CHECK(saved.at(key).device() == (move ? td::Device("cpu:1") : td::Device("cpu:0")));
        CHECK(saved.at(key).dtype() == (move ? td::kFloat64 : td::kFloat32));
      }
    }
    return model->weight.to(td::Device("cpu:0"), td::kFloat64);
  };
  auto sgd = [](std::vector<td::Tensor> p) {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  };
  auto adamw = [](std::vector<td::Tensor> p) {
    return std::make_unique<optim::AdamW>(p, optim::AdamWOptions(0.1).weight_decay(0.1).amsgrad(true));
  };
  // The last two steps run in float64 instead of float32: the same weights to float32's precision.
  check_close(train(true, sgd), train(false, sgd), 1e-5, 1e-5);
  check_close(train(true, adamw), train(false, adamw), 1e-5, 1e-5);
}

TEST_CASE("step checks options changed after construction and changes nothing when they are invalid", "[cpu]") {
  td::Tensor w = td::ones({2}, td::kFloat64).requires_grad_();
  optim::SGD sgd({w}, optim::SGDOptions(0.5).momentum(0.9));
  w.mutable_grad() = td::ones({2}, td::kFloat64);
  sgd.step();
  const td::Tensor weights = w.detach().clone();
  const td::Tensor buffer = static_cast<const optim::SGDParamState*>(sgd.state_of(w))->momentum_buffer.clone();
  sgd.param_groups()[0].options().set_lr(std::nan(""));
  check_error([&] { sgd.step(); }, {"SGD: invalid learning rate lr = nan"});
  sgd.param_groups()[0].options().set_lr(0.5);
  static_cast<optim::SGDOptions&>(sgd.param_groups()[0].options()).momentum(-1);
  check_error([&] { sgd.step(); }, {"SGD: invalid momentum = -1"});
  check_equal(w, values(weights));
  check_equal(static_cast<const optim::SGDParamState*>(sgd.state_of(w))->momentum_buffer, values(buffer));

  td::Tensor v = td::ones({2}, td::kFloat64).requires_grad_();
  optim::Adam adam({v}, 0.1);
  v.mutable_grad() = td::ones({2}, td::kFloat64);
  adam.step();
  static_cast<optim::AdamOptions&>(adam.param_groups()[0].options()).betas({1.5, 0.999});
  check_error([&] { adam.step(); }, {"Adam", "beta"});
  CHECK(static_cast<const optim::AdamParamState*>(adam.state_of(v))->step == 1);
}

TEST_CASE("LambdaLR sets each group's lr to its base lr times its function of the epoch", "[cpu]") {
  td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
  optim::SGD sgd({optim::OptimizerParamGroup({a}), optim::OptimizerParamGroup({b}, optim::SGDOptions(0.02))},
                 optim::SGDOptions(0.1));
  optim::LambdaLR warmup(sgd, {[](int64_t epoch) { return std::min(1.0, (epoch + 1) / 4.0); },
                               [](int64_t epoch) { return std::pow(0.5, static_cast<double>(epoch)); }});
  CHECK(warmup.get_last_lr() == std::vector<double>{0.1 * 0.25, 0.02 * 1.0});  // epoch 0, set by the constructor
  for (int epoch = 1; epoch <= 5; ++epoch) {
    sgd.step();
    warmup.step();
    CHECK(warmup.get_last_lr() ==
          std::vector<double>{0.1 * std::min(1.0, (epoch + 1) / 4.0), 0.02 * std::pow(0.5, static_cast<double>(epoch))});
    CHECK(sgd.param_groups()[1].options().get_lr() == warmup.get_last_lr()[1]);
  }
  // Its state holds the counters, not the functions: a fresh one made with the same functions
  // continues where it left off.
  const td::StateDict saved = warmup.state_dict();
  optim::SGD other(std::vector<td::Tensor>{td::zeros({1}).requires_grad_()}, 0.1);
  optim::LambdaLR same(other, [](int64_t epoch) { return 1.0 / static_cast<double>(epoch + 1); });
  CHECK_THROWS(same.load_state_dict(saved));  // saved for two groups
  optim::LambdaLR resumed(sgd, {[](int64_t epoch) { return std::min(1.0, (epoch + 1) / 4.0); },
                                [](int64_t epoch) { return std::pow(0.5, static_cast<double>(epoch)); }});
  resumed.load_state_dict(saved);
  CHECK(resumed.last_epoch() == 5);
  sgd.step();
  resumed.step();
  CHECK(resumed.get_last_lr() == std::vector<double>{0.1, 0.02 * std::pow(0.5, 6.0)});
  // A function that throws: the error comes through and the optimizer and scheduler are as before.
  optim::SGD fresh(std::vector<td::Tensor>{td::zeros({1}).requires_grad_()}, 0.1);
  check_error([&] { optim::LambdaLR(fresh, [](int64_t epoch) { TD_CHECK(epoch < 0, "no factor"); return 1.0; }); },
              {"no factor"});
  CHECK_FALSE(fresh.param_groups()[0].initial_lr().has_value());
  bool fail = false;
  optim::LambdaLR flaky(fresh, [&](int64_t epoch) -> double {
    TD_CHECK(!fail, "no factor for epoch ", epoch);
    return 0.5;
  });
  fail = true;
  check_error([&] { flaky.step(); }, {"no factor for epoch 1"});
  CHECK(flaky.last_epoch() == 0);
  CHECK(fresh.param_groups()[0].options().get_lr() == 0.05);
  fail = false;
  flaky.step();
  CHECK(flaky.last_epoch() == 1);
}

TEST_CASE("MultiStepLR and ExponentialLR resume from their state_dict, milestones and gamma included", "[cpu]") {
  auto run = [](auto make, int saved_after) {
    td::Tensor a = td::zeros({1}).requires_grad_();
    optim::SGD straight(std::vector<td::Tensor>{a}, 0.1), first(std::vector<td::Tensor>{a}, 0.1);
    auto s_straight = make(straight, true), s_first = make(first, true);
    for (int t = 0; t < saved_after; ++t) {
      straight.step(), s_straight->step();
      first.step(), s_first->step();
    }
    optim::SGD resumed(std::vector<td::Tensor>{a}, 0.1);
    resumed.load_state_dict(first.state_dict());
    auto s_resumed = make(resumed, false);  // made with other hyperparameters: the state's win
    s_resumed->load_state_dict(s_first->state_dict());
    for (int t = 0; t < 6; ++t) {
      straight.step(), s_straight->step();
      resumed.step(), s_resumed->step();
      CHECK(s_resumed->get_last_lr() == s_straight->get_last_lr());
    }
  };
  run([](optim::SGD& o, bool real) {
    return std::make_unique<optim::MultiStepLR>(o, real ? std::vector<int64_t>{2, 4, 4, 7} : std::vector<int64_t>{1},
                                                real ? 0.5 : 0.9);
  }, 3);
  run([](optim::SGD& o, bool real) { return std::make_unique<optim::ExponentialLR>(o, real ? 0.8 : 0.1); }, 2);
}

namespace {

optim::ReduceLROnPlateauOptions plateau_options(const json& args) {
  optim::ReduceLROnPlateauOptions o;
  if (args.value("mode", "min") == "max") o.mode = optim::PlateauMode::max;
  if (args.value("threshold_mode", "rel") == "abs") o.threshold_mode = optim::ThresholdMode::abs;
  o.factor = args.value("factor", o.factor);
  o.patience = args.value("patience", o.patience);
  o.threshold = args.value("threshold", o.threshold);
  o.cooldown = args.value("cooldown", o.cooldown);
  o.eps = args.value("eps", o.eps);
  if (args.contains("min_lr")) o.min_lr = args["min_lr"].get<std::vector<double>>();
  return o;
}

}  // namespace

TEST_CASE("ReduceLROnPlateau gives PyTorch's learning rates for every mode, metric after metric", "[cpu]") {
  for (const json& p : fixture()["plateaus"]) {
    INFO(p["name"].get<std::string>());
    const auto lrs = p["group_lrs"].get<std::vector<double>>();
    const auto metrics = p["metrics"].get<std::vector<double>>();
    td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
    optim::SGD sgd({optim::OptimizerParamGroup({a}), optim::OptimizerParamGroup({b}, optim::SGDOptions(lrs[1]))},
                   optim::SGDOptions(lrs[0]));
    optim::ReduceLROnPlateau plateau(sgd, plateau_options(p["args"]));
    const json& expected = p["lrs"];
    REQUIRE(expected.size() == metrics.size() + 1);
    for (size_t t = 0; t < expected.size(); ++t) {
      if (t > 0) {
        sgd.step();
        plateau.step(metrics[t - 1]);
      }
      INFO("epoch " << t);
      const auto want = expected[t].get<std::vector<double>>();
      REQUIRE(plateau.get_last_lr().size() == want.size());
      for (size_t g = 0; g < want.size(); ++g) {
        CHECK(plateau.get_last_lr()[g] == Approx(want[g]).epsilon(1e-12).margin(0));
        CHECK(sgd.param_groups()[g].options().get_lr() == plateau.get_last_lr()[g]);
      }
    }
    CHECK(plateau.last_epoch() == static_cast<int64_t>(metrics.size()));
  }
}

TEST_CASE("ReduceLROnPlateau takes a loss tensor, never counts NaN as better, and resumes from its state", "[cpu]") {
  td::Tensor a = td::zeros({1}).requires_grad_();
  optim::SGD sgd(std::vector<td::Tensor>{a}, 0.1);
  optim::ReduceLROnPlateauOptions o;
  o.patience = 1;
  optim::ReduceLROnPlateau plateau(sgd, o);
  CHECK(plateau.get_last_lr() == std::vector<double>{0.1});  // made: nothing changes
  CHECK(plateau.best() == std::numeric_limits<double>::infinity());
  plateau.step(td::tensor(2.0, td::kFloat64));
  CHECK(plateau.best() == 2.0);
  plateau.step(std::nan(""));
  CHECK(plateau.num_bad_epochs() == 1);
  CHECK(plateau.best() == 2.0);
  // The saved state holds the best so far and the counters: a copy goes on as the original does.
  optim::SGD other(std::vector<td::Tensor>{td::zeros({1}).requires_grad_()}, 0.1);
  optim::ReduceLROnPlateau resumed(other);  // default options: the state's replace them
  resumed.load_state_dict(plateau.state_dict());
  other.param_groups()[0].options().set_lr(0.1);
  CHECK(resumed.best() == 2.0);
  CHECK(resumed.num_bad_epochs() == 1);
  plateau.step(3.0);
  resumed.step(3.0);
  CHECK(plateau.get_last_lr() == std::vector<double>{0.1 * 0.1});
  CHECK(resumed.get_last_lr() == plateau.get_last_lr());
  // A state saved before any improvement holds an infinite best, which JSON cannot hold as a number.
  optim::ReduceLROnPlateau fresh(other);
  optim::ReduceLROnPlateau reloaded(other);
  reloaded.step(1.0);
  reloaded.load_state_dict(fresh.state_dict());
  CHECK(reloaded.best() == std::numeric_limits<double>::infinity());
  CHECK(reloaded.last_epoch() == 0);

  // Bad metrics and settings, and another scheduler's state: errors, nothing changed.
  check_error([&] { plateau.step(td::ones({2})); }, {"ReduceLROnPlateau", "one number", "[2]"});
  check_error([&] { plateau.step(td::Tensor()); }, {"ReduceLROnPlateau", "undefined"});
  CHECK(plateau.last_epoch() == 3);
  const auto with = [](auto change) {
    optim::ReduceLROnPlateauOptions bad;
    change(bad);
    return bad;
  };
  check_error([&] { optim::ReduceLROnPlateau(sgd, with([](auto& b) { b.factor = 1.0; })); }, {"factor", "[0, 1)"});
  check_error([&] { optim::ReduceLROnPlateau(sgd, with([](auto& b) { b.patience = -1; })); }, {"patience"});
  check_error([&] { optim::ReduceLROnPlateau(sgd, with([](auto& b) { b.cooldown = -2; })); }, {"cooldown"});
  check_error([&] { optim::ReduceLROnPlateau(sgd, with([](auto& b) { b.min_lr = {0, 0.1}; })); },
              {"2 values of min_lr", "1 parameter groups"});
  check_error([&] { optim::ReduceLROnPlateau(sgd, with([](auto& b) { b.min_lr = {-1}; })); }, {"min_lr = -1"});
  optim::StepLR step_lr(other, 2);
  check_error([&] { plateau.load_state_dict(step_lr.state_dict()); }, {"ReduceLROnPlateau", "StepLR's"});
  CHECK(plateau.last_epoch() == 3);
  CHECK(plateau.best() == 2.0);
}

TEST_CASE("ReduceLROnPlateau with one min_lr serves groups added later; one per group must match where it reduces",
          "[cpu]") {
  td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
  optim::SGD sgd(std::vector<td::Tensor>{a}, 0.1);
  optim::ReduceLROnPlateauOptions o;
  o.patience = 0;
  o.min_lr = {0.05};
  optim::ReduceLROnPlateau one(sgd, o);
  sgd.add_param_group(optim::OptimizerParamGroup({b}, optim::SGDOptions(0.2)));
  one.step(1.0);
  one.step(2.0);  // worse: both groups fall, to at least 0.05
  CHECK(one.get_last_lr() == std::vector<double>{0.05, 0.05});  // 0.1 and 0.2 * 0.1 both below 0.05
  // PyTorch 2.15 raises in its reduction only: the improving steps before it run.
  o.min_lr = {0.01, 0.02};
  optim::ReduceLROnPlateau per_group(sgd, o);
  sgd.add_param_group(optim::OptimizerParamGroup({td::zeros({1}).requires_grad_()}, optim::SGDOptions(0.3)));
  for (double metric : {1.0, 0.9, 0.8}) per_group.step(metric);
  CHECK(per_group.get_last_lr() == std::vector<double>{0.05, 0.05, 0.3});
  check_error([&] { per_group.step(0.9); }, {"ReduceLROnPlateau", "3 parameter groups", "2 values"});
  CHECK(per_group.last_epoch() == 3);
  CHECK(per_group.num_bad_epochs() == 0);
  CHECK(sgd.param_groups()[2].options().get_lr() == 0.3);
}

TEST_CASE("OneCycleLR checks its settings and leaves the optimizer as it was when it refuses", "[cpu]") {
  td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
  optim::SGD sgd({optim::OptimizerParamGroup({a}), optim::OptimizerParamGroup({b}, optim::SGDOptions(0.02))},
                 optim::SGDOptions(0.1).momentum(0.5));
  const auto lrs = [&] {
    return std::vector<double>{sgd.param_groups()[0].options().get_lr(), sgd.param_groups()[1].options().get_lr()};
  };
  const auto momentum = [&](size_t g) {
    return static_cast<const optim::SGDOptions&>(sgd.param_groups()[g].options()).momentum();
  };
  check_error([&] { optim::OneCycleLR(sgd, {1.0}, 0); }, {"OneCycleLR", "total_steps = 0"});
  check_error([&] { optim::OneCycleLR(sgd, {1.0, 2.0, 3.0}, 10); }, {"OneCycleLR", "3 values of max_lr", "2"});
  optim::OneCycleLROptions o;
  o.pct_start = 1.5;
  check_error([&] { optim::OneCycleLR(sgd, {1.0}, 10, o); }, {"pct_start = 1.5"});
  o = {};
  o.div_factor = 0;
  check_error([&] { optim::OneCycleLR(sgd, {1.0}, 10, o); }, {"div_factor = 0"});
  o = {};
  o.max_momentum = {0.9, 0.9, 0.9};
  check_error([&] { optim::OneCycleLR(sgd, {1.0}, 10, o); }, {"3 values of max_momentum"});
  // pct_start * total_steps = 1: the first phase has no steps, and step 0 is in it (PyTorch
  // divides by zero there). The constructor's first step fails: lr, momentum, initial_lr unchanged.
  o = {};
  o.pct_start = 0.1;
  check_error([&] { optim::OneCycleLR(sgd, {1.0}, 10, o); }, {"OneCycleLR", "step 0", "phase 1", "no steps"});
  CHECK(lrs() == std::vector<double>{0.1, 0.02});
  CHECK(momentum(0) == 0.5);
  CHECK_FALSE(sgd.param_groups()[0].initial_lr().has_value());

  // A schedule of 4 steps: stepping past step 4 is an error that changes nothing.
  optim::OneCycleLR cycle(sgd, {1.0, 0.5}, 4);
  // Step 0 anneals from the starting lr to the peak at 0%: the starting lr, up to rounding.
  CHECK(lrs()[0] == Approx(1.0 / 25).epsilon(1e-15));
  CHECK(lrs()[1] == Approx(0.5 / 25).epsilon(1e-15));
  CHECK(cycle.base_lrs() == std::vector<double>{1.0 / 25, 0.5 / 25});
  CHECK(momentum(0) == 0.95);
  for (int t = 0; t < 4; ++t) cycle.step();
  const auto last = lrs();
  const double last_momentum = momentum(1);
  check_error([&] { cycle.step(); }, {"OneCycleLR", "stepped 5 times", "total_steps = 4"});
  CHECK(cycle.last_epoch() == 4);
  CHECK(lrs() == last);
  CHECK(momentum(1) == last_momentum);
}

TEST_CASE("OneCycleLR resumes from its state_dict, schedule and momenta included", "[cpu]") {
  const auto make = [](optim::Optimizer& o, bool real) {
    optim::OneCycleLROptions options;
    options.three_phase = real;
    options.anneal_strategy = real ? optim::AnnealStrategy::linear : optim::AnnealStrategy::cos;
    options.base_momentum = {real ? 0.6 : 0.8};
    return std::make_unique<optim::OneCycleLR>(o, std::vector<double>{real ? 0.4 : 0.9}, real ? 12 : 30, options);
  };
  td::Tensor a = td::zeros({1}).requires_grad_();
  optim::Adam straight(std::vector<td::Tensor>{a}, 0.1), first(std::vector<td::Tensor>{a}, 0.1);
  auto s_straight = make(straight, true), s_first = make(first, true);
  for (int t = 0; t < 5; ++t) s_straight->step(), s_first->step();
  optim::Adam resumed(std::vector<td::Tensor>{a}, 0.1);
  auto s_resumed = make(resumed, false);  // other settings: the state's win
  resumed.load_state_dict(first.state_dict());  // the lr and beta1 reached so far
  s_resumed->load_state_dict(s_first->state_dict());
  for (int t = 5; t < 12; ++t) {
    s_straight->step();
    s_resumed->step();
    CHECK(s_resumed->get_last_lr() == s_straight->get_last_lr());
    CHECK(std::get<0>(static_cast<const optim::AdamOptions&>(resumed.param_groups()[0].options()).betas()) ==
          std::get<0>(static_cast<const optim::AdamOptions&>(straight.param_groups()[0].options()).betas()));
  }
  // A state with a negative lr, or cycling a momentum the optimizer lacks: refused, nothing changed.
  std::string text = s_first->state_dict().metadata.at("lr_scheduler");
  td::StateDict bad;
  bad.metadata["lr_scheduler"] = text.replace(text.find("\"max_lrs\":["), 11, "\"max_lrs\":[-");
  check_error([&] { s_resumed->load_state_dict(bad); }, {"OneCycleLR", "invalid lr or momentum"});
  optim::Adagrad adagrad(std::vector<td::Tensor>{td::zeros({1}).requires_grad_()});
  optim::OneCycleLROptions plain;
  plain.cycle_momentum = false;
  optim::OneCycleLR on_adagrad(adagrad, {0.1}, 12, plain);
  check_error([&] { on_adagrad.load_state_dict(s_first->state_dict()); }, {"OneCycleLR", "momentum", "Adagrad"});
  CHECK(on_adagrad.last_epoch() == 0);
}

TEST_CASE("maximize ascends: the step of -loss with maximize is the step of loss without it", "[cpu]") {
  // The fixture checks maximize against PyTorch; this shows what it means.
  for (bool adam : {false, true}) {
    td::Tensor up = td::tensor(std::vector<double>{1.0, -2.0}).requires_grad_();
    td::Tensor down = up.detach().clone().requires_grad_();
    std::unique_ptr<optim::Optimizer> ascend, descend;
    if (adam) {
      ascend = std::make_unique<optim::Adam>(std::vector<td::Tensor>{up}, optim::AdamOptions(0.1).maximize(true));
      descend = std::make_unique<optim::Adam>(std::vector<td::Tensor>{down}, optim::AdamOptions(0.1));
    } else {
      ascend = std::make_unique<optim::SGD>(std::vector<td::Tensor>{up}, optim::SGDOptions(0.1).momentum(0.9).maximize(true));
      descend = std::make_unique<optim::SGD>(std::vector<td::Tensor>{down}, optim::SGDOptions(0.1).momentum(0.9));
    }
    for (int t = 0; t < 3; ++t) {
      ascend->zero_grad();
      descend->zero_grad();
      up.mul(up).sum().neg().backward();  // maximize -|x|^2
      down.mul(down).sum().backward();   // minimize |x|^2
      ascend->step();
      descend->step();
    }
    check_equal(up.detach(), values(down.detach()));
    CHECK(td::testing::values(up.detach())[0] < 1.0);  // it moved toward the maximum of -|x|^2
  }
}

TEST_CASE("fused steps, the default of SGD, Adam and AdamW, give the op-by-op steps' bits", "[cpu]") {
  // Every fixture configuration of the three (groups, a parameter without a gradient at some
  // steps, a 0-dim one, schedulers changing lr), in float32 and float64: unset (the default) and
  // fused(true) against fused(false), which steps op by op.
  int compared = 0;
  for (const json& config : fixture()["optimizers"]) {
    const std::string kind = config["optimizer"];
    if (kind != "SGD" && kind != "Adam" && kind != "AdamW") continue;
    for (td::DType dtype : {td::kFloat32, td::kFloat64}) {
      Run op_by_op(config, fixture_params(dtype), false), by_default(config, fixture_params(dtype)),
          fused(config, fixture_params(dtype), true);
      for (size_t t = 0; t < fixture()["steps"].get<size_t>(); ++t) {
        op_by_op.step();
        by_default.step();
        fused.step();
        for (size_t i = 0; i < op_by_op.params.size(); ++i) {
          const std::string what = td::detail::str_cat(config["name"].get<std::string>(), " ", dtype, ", step ", t + 1,
                                                       ", parameter ", i);
          for (const Run* run : {&by_default, &fused}) {
            INFO(what);
            CHECK(td::testing::sign_bits(run->params[i]) == td::testing::sign_bits(op_by_op.params[i]));
            check_close(run->params[i], op_by_op.params[i], 0, 0, what);
          }
        }
      }
      ++compared;
    }
  }
  CHECK(compared >= 12);
}

TEST_CASE("by default, groups the fused step cannot take step op by op", "[cpu]") {
  // Mixed dtypes in one group, and a non-contiguous parameter: the fused step takes neither.
  auto make = [] {
    return std::vector<td::Tensor>{td::arange(6, td::kFloat64).reshape({2, 3}).requires_grad_(),
                                   td::arange(4, td::kFloat32).requires_grad_(),
                                   td::arange(6, td::kFloat64).reshape({3, 2}).t().detach().requires_grad_()};
  };
  for (bool adam : {false, true}) {
    std::vector<td::Tensor> a = make(), b = make();
    REQUIRE_FALSE(a[2].is_contiguous());
    std::unique_ptr<optim::Optimizer> by_default, op_by_op;
    if (adam) {
      by_default = std::make_unique<optim::Adam>(a, optim::AdamOptions(0.1).weight_decay(0.01));
      op_by_op = std::make_unique<optim::Adam>(b, optim::AdamOptions(0.1).weight_decay(0.01).fused(false));
    } else {
      by_default = std::make_unique<optim::SGD>(a, optim::SGDOptions(0.1).momentum(0.9));
      op_by_op = std::make_unique<optim::SGD>(b, optim::SGDOptions(0.1).momentum(0.9).fused(false));
    }
    for (int t = 0; t < 3; ++t) {
      for (size_t i = 0; i < a.size(); ++i) {
        a[i].mutable_grad() = td::ones_like(a[i]) * (t + 1.5);
        b[i].mutable_grad() = td::ones_like(b[i]) * (t + 1.5);
      }
      by_default->step();
      op_by_op->step();
    }
    for (size_t i = 0; i < a.size(); ++i) {
      check_close(a[i], b[i], 0, 0, td::detail::str_cat(adam ? "Adam" : "SGD", " parameter ", i));
      CHECK(values(a[i]) != values(make()[i]));  // they moved
    }
    // The same groups are the ones fused(true) refuses: the default did step them op by op.
    std::vector<td::Tensor> c = make();
    for (td::Tensor& p : c) p.mutable_grad() = td::ones_like(p);
    std::unique_ptr<optim::Optimizer> required;
    if (adam) {
      required = std::make_unique<optim::Adam>(c, optim::AdamOptions(0.1).fused(true));
    } else {
      required = std::make_unique<optim::SGD>(c, optim::SGDOptions(0.1).fused(true));
    }
    check_error([&] { required->step(); }, {"fused=true", "parameter 1 of its group", "float32 on cpu:0 where the "
                                            "first is float64 on cpu:0"});
    c.erase(c.begin() + 1);
    std::unique_ptr<optim::Optimizer> strided;
    if (adam) {
      strided = std::make_unique<optim::Adam>(c, optim::AdamOptions(0.1).fused(true));
    } else {
      strided = std::make_unique<optim::SGD>(c, optim::SGDOptions(0.1).fused(true));
    }
    check_error([&] { strided->step(); }, {"fused=true", "parameter 1 of its group", "not contiguous"});
  }
}

TEST_CASE("fused(true) where a group cannot take the fused step is an error, and no group changes", "[cpu]") {
  td::Tensor w = td::ones({2, 3}, td::kFloat64).requires_grad_();
  td::Tensor strided = td::ones({3, 2}, td::kFloat64).t().detach().requires_grad_();
  td::Tensor half = td::ones({2}, td::kFloat16).requires_grad_();
  w.mutable_grad() = td::ones({2, 3}, td::kFloat64);
  strided.mutable_grad() = td::ones({2, 3}, td::kFloat64);
  half.mutable_grad() = td::ones({2}, td::kFloat16);
  // Group 0 could take the fused step; group 1 cannot.
  auto make = [&](bool adam, const td::Tensor& second) -> std::unique_ptr<optim::Optimizer> {
    std::vector<optim::OptimizerParamGroup> groups{optim::OptimizerParamGroup({w}),
                                                   optim::OptimizerParamGroup({second})};
    if (adam) return std::make_unique<optim::AdamW>(std::move(groups), optim::AdamWOptions(0.1).fused(true));
    return std::make_unique<optim::SGD>(std::move(groups), optim::SGDOptions(0.1).momentum(0.9).fused(true));
  };
  for (bool adam : {false, true}) {
    const char* name = adam ? "AdamW" : "SGD";
    auto opt = make(adam, strided);
    check_error([&] { opt->step(); }, {name, "fused=true", "parameter 0 of its group", "not contiguous"});
    check_equal(w, std::vector<double>(6, 1.0));  // group 0 did not step either
    check_equal(strided, std::vector<double>(6, 1.0));
    CHECK(opt->state_dict().empty());
    auto with_half = make(adam, half);
    check_error([&] { with_half->step(); }, {name, "fused=true", "float16, not float32 or float64"});
    check_equal(w, std::vector<double>(6, 1.0));
    check_equal(half, {1, 1});
  }
}

TEST_CASE("the fused option is saved with each group and a state saved before it loads as unset", "[cpu]") {
  td::Tensor w = td::ones({2}, td::kFloat64).requires_grad_();
  for (std::optional<bool> fused : {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)}) {
    optim::SGD sgd({w}, optim::SGDOptions(0.1).momentum(0.9).fused(fused));
    optim::AdamW adamw({w}, optim::AdamWOptions(0.1).fused(fused));
    for (optim::Optimizer* saved : {static_cast<optim::Optimizer*>(&sgd), static_cast<optim::Optimizer*>(&adamw)}) {
      const td::StateDict sd = saved->state_dict();
      const json groups = json::parse(sd.metadata.at("param_groups"));
      CHECK(groups[0]["fused"] == (fused ? json(*fused) : json(nullptr)));
    }
    optim::SGD sgd_loaded({w}, optim::SGDOptions(0.5).fused(!fused.value_or(false)));
    sgd_loaded.load_state_dict(sgd.state_dict());
    CHECK(static_cast<const optim::SGDOptions&>(sgd_loaded.param_groups()[0].options()).fused() == fused);
    optim::AdamW adamw_loaded({w}, optim::AdamWOptions(0.5).fused(!fused.value_or(false)));
    adamw_loaded.load_state_dict(adamw.state_dict());
    CHECK(static_cast<const optim::AdamOptions&>(adamw_loaded.param_groups()[0].options()).fused() == fused);
  }
  // A state written before the option existed has no "fused" in its groups.
  optim::SGD old({w}, optim::SGDOptions(0.1).momentum(0.9).fused(true));
  td::StateDict sd = old.state_dict();
  json groups = json::parse(sd.metadata.at("param_groups"));
  groups[0].erase("fused");
  sd.metadata["param_groups"] = groups.dump();
  optim::SGD loaded({w}, optim::SGDOptions(0.5).fused(false));
  loaded.load_state_dict(sd);
  CHECK_FALSE(static_cast<const optim::SGDOptions&>(loaded.param_groups()[0].options()).fused().has_value());
  groups[0]["fused"] = "yes";
  sd.metadata["param_groups"] = groups.dump();
  check_error([&] { loaded.load_state_dict(sd); }, {"SGD", "'fused'", "true or false"});
}

TEST_CASE("optimizer arithmetic to PyTorch's last bit: addcmul's one fused multiply-add, lerp's float weight",
          "[cpu]") {
  // PyTorch 2.15 (single-tensor steps, its AVX2 CPU kernels) on one-element parameters.
  auto state = [](const optim::Optimizer& o, const td::Tensor& p) { return o.state_of(p); };
  {  // Adagrad's sum.addcmul_(g, g): 0.3 + 0.3 * 0.3 rounded once (two roundings gave 0.39)
    td::Tensor w = td::tensor({1.0}, td::kFloat64).requires_grad_();
    optim::Adagrad o({w}, optim::AdagradOptions(0.1).initial_accumulator_value(0.3));
    w.mutable_grad() = td::tensor({0.3}, td::kFloat64);
    o.step();
    CHECK(static_cast<const optim::AdagradParamState*>(state(o, w))->sum.item<double>() == 0.38999999999999996);
    CHECK(w.item<double>() == 0.9519615538661662);
  }
  for (bool fused : {false, true}) {  // Adam's exp_avg_sq, op by op and fused alike
    INFO("fused " << fused);
    td::Tensor w = td::tensor({1.0}, td::kFloat64).requires_grad_();
    optim::Adam o({w}, optim::AdamOptions(1e-3).fused(fused));
    for (int s = 0; s < 2; ++s) {
      w.mutable_grad() = td::tensor({0.1}, td::kFloat64);
      o.step();
    }
    CHECK(static_cast<const optim::AdamParamState*>(state(o, w))->exp_avg_sq.item<double>() == 1.999000000000002e-05);
    CHECK(w.item<double>() == 0.9980000002);
    // beta1 = 0.1: lerp's weight 0.9 in float32, 1 - weight taken from it (-0.10000002384185791)
    td::Tensor v = td::tensor({1.0f}).requires_grad_();
    optim::Adam f({v}, optim::AdamOptions(1e-3).betas({0.1, 0.999}).fused(fused));
    v.mutable_grad() = td::tensor({0.1f});
    f.step();
    CHECK(static_cast<const optim::AdamParamState*>(state(f, v))->exp_avg.item<double>() == 0.08999999612569809);
    CHECK(v.item<double>() == 0.9990000128746033);
  }
  {  // RMSprop's square_avg
    td::Tensor w = td::tensor({1.0}, td::kFloat64).requires_grad_();
    optim::RMSprop o({w}, optim::RMSpropOptions(0.01));
    for (int s = 0; s < 2; ++s) {
      w.mutable_grad() = td::tensor({0.3}, td::kFloat64);
      o.step();
    }
    CHECK(static_cast<const optim::RMSpropParamState*>(state(o, w))->square_avg.item<double>() == 0.0017910000000000016);
    CHECK(w.item<double>() == 0.8291119295829035);
  }
}

TEST_CASE("Adagrad starts every sum from the constructor's initial_accumulator_value, as PyTorch's", "[cpu]") {
  // PyTorch reads the constructor's value for every parameter; a group's own is not read.
  td::Tensor a = td::ones({2}).requires_grad_(), b = td::ones({2}).requires_grad_();
  optim::Adagrad o(std::vector<optim::OptimizerParamGroup>{
                       optim::OptimizerParamGroup({a}, optim::AdagradOptions(0.1).initial_accumulator_value(0.5)),
                       optim::OptimizerParamGroup({b})},
                   optim::AdagradOptions(0.1));
  a.mutable_grad() = td::ones({2});
  b.mutable_grad() = td::ones({2});
  o.step();
  CHECK(a[0].item<double>() == 0.8999999761581421);
  CHECK(static_cast<const optim::AdagradParamState*>(o.state_of(a))->sum[0].item<double>() == 1.0);
}

TEST_CASE("a learning rate a scheduler rounds below zero steps and loads, as in PyTorch", "[cpu]") {
  // LinearLR from 1/3 to 0 over 4 steps ends at -1.8503717077085945e-20 (PyTorch 2.15 too): the
  // next step threw "invalid learning rate", and so did loading the optimizer's state.
  td::Tensor p = td::ones({2}).requires_grad_();
  optim::AdamW opt({p}, optim::AdamWOptions(1e-3));
  optim::LinearLR schedule(opt, 1.0 / 3, 0.0, 4);
  for (int s = 0; s < 5; ++s) {
    p.mutable_grad() = td::full({2}, 0.5);
    opt.step();
    schedule.step();
  }
  CHECK(opt.param_groups()[0].options().get_lr() == -1.8503717077085945e-20);
  CHECK(values(p) == std::vector<double>{0.9991583824157715, 0.9991583824157715});
  td::Tensor q = td::ones({2}).requires_grad_();
  optim::AdamW other({q}, optim::AdamWOptions(1e-3));
  other.load_state_dict(opt.state_dict());
  CHECK(other.param_groups()[0].options().get_lr() == -1.8503717077085945e-20);
  // Made with a negative rate, or stepped with a non-finite one, is still an error.
  check_error([] { optim::AdamW({td::ones({1}).requires_grad_()}, optim::AdamWOptions(-1e-3)); },
              {"AdamW: invalid learning rate lr = -0.001", "must be >= 0"});
  other.param_groups()[0].options().set_lr(INFINITY);
  q.mutable_grad() = td::ones({2});
  check_error([&] { other.step(); }, {"invalid learning rate lr = inf", "must be finite"});
}

TEST_CASE("MultiplicativeLR, ChainedScheduler and fractional warm restarts give PyTorch's lrs", "[cpu]") {
  // PyTorch 2.15 on SGD with two groups (lr 0.1 and 0.02), four steps each.
  auto make = [] {
    td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
    return std::make_unique<optim::SGD>(
        std::vector<optim::OptimizerParamGroup>{optim::OptimizerParamGroup({a}),
                                                optim::OptimizerParamGroup({b}, optim::SGDOptions(0.02))},
        optim::SGDOptions(0.1));
  };
  auto close = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t g = 0; g < want.size(); ++g) CHECK(got[g] == Approx(want[g]).epsilon(1e-12).margin(0));
  };
  {
    auto sgd = make();
    optim::MultiplicativeLR multiplicative(
        *sgd, {[](int64_t) { return 0.9; }, [](int64_t epoch) { return 1.0 / static_cast<double>(epoch + 1); }});
    const std::vector<std::vector<double>> want{{0.1, 0.02},
                                                {0.09000000000000001, 0.01},
                                                {0.08100000000000002, 0.003333333333333333},
                                                {0.07290000000000002, 0.0008333333333333333},
                                                {0.06561000000000002, 0.00016666666666666666}};
    for (size_t t = 0; t < want.size(); ++t) {
      if (t > 0) multiplicative.step();
      close(multiplicative.get_last_lr(), want[t]);
    }
  }
  {
    auto sgd = make();
    optim::ConstantLR constant(*sgd, 0.5, 2);
    optim::ExponentialLR exponential(*sgd, 0.9);
    optim::ChainedScheduler chained({&constant, &exponential});
    const std::vector<std::vector<double>> want{{0.05, 0.01},
                                                {0.045000000000000005, 0.009000000000000001},
                                                {0.08100000000000002, 0.016200000000000003},
                                                {0.07290000000000002, 0.014580000000000003},
                                                {0.06561000000000002, 0.013122000000000003}};
    const td::StateDict at_start = chained.state_dict();
    for (size_t t = 0; t < want.size(); ++t) {
      if (t > 0) chained.step();
      close(chained.get_last_lr(), want[t]);
    }
    // Its state holds each scheduler's: loading the start puts both back at epoch 0.
    chained.load_state_dict(at_start);
    CHECK(constant.last_epoch() == 0);
    CHECK(exponential.last_epoch() == 0);
    close(chained.get_last_lr(), want[0]);
    optim::ExponentialLR other(*make(), 0.5);
    check_error([&] { optim::ChainedScheduler({&constant, &other}); }, {"ChainedScheduler", "another optimizer"});
  }
  {
    auto sgd = make();
    optim::CosineAnnealingWarmRestarts restarts(*sgd, 2, 2, 0.01);
    struct Point {
      double epoch;
      std::vector<double> lrs;
      double T_cur;
      int64_t T_i, last_epoch;
    };
    const std::vector<Point> want{
        {0.5, {0.08681980515339464, 0.01853553390593274}, 0.5, 2, 0},
        {1.75, {0.013425421036992097, 0.010380602337443567}, 1.75, 2, 1},
        {2.0, {0.1, 0.02}, 0.0, 4, 2},
        {3.25, {0.0800006604858821, 0.017777851165098012}, 1.25, 4, 3},
        {6.5, {0.09913533761814537, 0.019903926402016152}, 0.5, 8, 6},
        {13.9, {0.01003469336916747, 0.010003854818796386}, 7.9, 8, 13},
    };
    for (const Point& p : want) {
      INFO("epoch " << p.epoch);
      restarts.step(p.epoch);
      close(restarts.get_last_lr(), p.lrs);
      CHECK(restarts.T_cur() == Approx(p.T_cur).epsilon(1e-12));
      CHECK(restarts.T_i() == p.T_i);
      CHECK(restarts.last_epoch() == p.last_epoch);
    }
    // The period and the position in it are part of the state.
    const td::StateDict saved = restarts.state_dict();
    auto other = make();
    optim::CosineAnnealingWarmRestarts resumed(*other, 2, 2, 0.01);
    resumed.load_state_dict(saved);
    restarts.step();
    resumed.step();
    CHECK(resumed.T_i() == restarts.T_i());
    CHECK(resumed.get_last_lr() == restarts.get_last_lr());
    check_error([&] { restarts.step(-1.0); }, {"CosineAnnealingWarmRestarts", "negative"});
  }
}

TEST_CASE("CyclicLR cycles Adam's beta1; schedulers refuse bad settings and leave the optimizer as it was", "[cpu]") {
  td::Tensor a = td::zeros({1}).requires_grad_();
  optim::Adam adam({a}, optim::AdamOptions(0.1));
  optim::CyclicLROptions options;
  options.step_size_up = 2;
  optim::CyclicLR cyclic(adam, {0.001}, {0.01}, options);
  // PyTorch 2.15: beta1 0.9, 0.85, 0.8, 0.85 over the first three steps; the lr ends at 0.0055.
  auto beta1 = [&] {
    return std::get<0>(static_cast<const optim::AdamOptions&>(adam.param_groups()[0].options()).betas());
  };
  CHECK(beta1() == 0.9);
  for (double want : {0.8500000000000001, 0.8, 0.8500000000000001}) {
    cyclic.step();
    CHECK(beta1() == Approx(want).epsilon(1e-15));
  }
  CHECK(cyclic.get_last_lr()[0] == Approx(0.0055000000000000005).epsilon(1e-15));
  // The Adam family's other members have a beta1 to cycle too.
  optim::NAdam nadam({td::zeros({1}).requires_grad_()});
  optim::CyclicLR cycled(nadam, {0.001}, {0.01}, options);
  CHECK(std::get<0>(static_cast<const optim::NAdamOptions&>(nadam.param_groups()[0].options()).betas()) == 0.9);
  optim::Adagrad adagrad({td::zeros({1}).requires_grad_()}, optim::AdagradOptions(0.5));
  check_error([&] { optim::CyclicLR(adagrad, {0.001}, {0.01}); }, {"CyclicLR", "cycle_momentum", "Adagrad"});
  CHECK(adagrad.param_groups()[0].options().get_lr() == 0.5);
  optim::SGD sgd({td::zeros({1}).requires_grad_()}, optim::SGDOptions(0.1));
  optim::CyclicLROptions bad;
  bad.step_size_up = 0;
  check_error([&] { optim::CyclicLR(sgd, {0.001}, {0.01}, bad); }, {"CyclicLR", "step_size_up = 0"});
  check_error([&] { optim::CyclicLR(sgd, {0.001, 0.002}, {0.01}); }, {"CyclicLR", "2 values of base_lr", "1 param"});
  CHECK(sgd.param_groups()[0].options().get_lr() == 0.1);
  CHECK_FALSE(sgd.param_groups()[0].initial_lr().has_value());
  check_error([&] { optim::ConstantLR(sgd, 1.5); }, {"ConstantLR", "factor = 1.5"});
  check_error([&] { optim::PolynomialLR(sgd, -1); }, {"PolynomialLR", "total_iters = -1"});
  check_error([&] { optim::CosineAnnealingWarmRestarts(sgd, 0); }, {"CosineAnnealingWarmRestarts", "T_0 = 0"});
  check_error([&] { optim::CosineAnnealingWarmRestarts(sgd, 2, 0); }, {"T_mult = 0"});
  check_error([&] { optim::MultiplicativeLR(sgd, optim::MultiplicativeLR::Factor()); },
              {"MultiplicativeLR", "function 0 is empty"});
  CHECK(sgd.param_groups()[0].options().get_lr() == 0.1);
}

TEST_CASE("SequentialLR hands over at its milestones from each scheduler's epoch 0, as PyTorch's", "[cpu]") {
  auto make = [] {
    td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
    return std::make_unique<optim::SGD>(
        std::vector<optim::OptimizerParamGroup>{optim::OptimizerParamGroup({a}),
                                                optim::OptimizerParamGroup({b}, optim::SGDOptions(0.02))},
        optim::SGDOptions(0.1));
  };
  auto close = [](const std::vector<double>& got, const std::vector<double>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t g = 0; g < want.size(); ++g) CHECK(got[g] == Approx(want[g]).epsilon(1e-12).margin(0));
  };
  // PyTorch 2.15: a LinearLR warm-up for 3 epochs, then CosineAnnealingLR(T_max 4, eta_min 0.001).
  const std::vector<std::vector<double>> warm_cosine{{0.025, 0.005},
                                                     {0.05, 0.01},
                                                     {0.07500000000000001, 0.015},
                                                     {0.1, 0.02},
                                                     {0.0855017856687341, 0.0172175144212722},
                                                     {0.0505, 0.010499999999999999},
                                                     {0.0154982143312659, 0.0037824855787277987},
                                                     {0.001, 0.001},
                                                     {0.015498214331265896, 0.003782485578727798},
                                                     {0.05050000000000001, 0.010500000000000002}};
  {
    auto sgd = make();
    optim::LinearLR warm_up(*sgd, 0.25, 1.0, 3);
    optim::CosineAnnealingLR cosine(*sgd, 4, 0.001);
    optim::SequentialLR sequential(*sgd, {&warm_up, &cosine}, {3});
    for (size_t t = 0; t < warm_cosine.size(); ++t) {
      if (t > 0) sequential.step();
      INFO("epoch " << t);
      close(sequential.get_last_lr(), warm_cosine[t]);
      CHECK(sgd->param_groups()[1].options().get_lr() == sequential.get_last_lr()[1]);
    }
  }
  {
    // Saved at epoch 4 and resumed in a fresh optimizer and schedulers, it goes on as PyTorch's.
    auto sgd = make();
    optim::LinearLR warm_up(*sgd, 0.25, 1.0, 3);
    optim::CosineAnnealingLR cosine(*sgd, 4, 0.001);
    optim::SequentialLR sequential(*sgd, {&warm_up, &cosine}, {3});
    for (int t = 0; t < 4; ++t) sequential.step();
    const td::StateDict saved = sequential.state_dict(), saved_optimizer = sgd->state_dict();
    auto other = make();
    optim::LinearLR warm_up2(*other, 0.25, 1.0, 3);
    optim::CosineAnnealingLR cosine2(*other, 4, 0.001);
    optim::SequentialLR resumed(*other, {&warm_up2, &cosine2}, {3});
    other->load_state_dict(saved_optimizer);
    resumed.load_state_dict(saved);
    CHECK(resumed.last_epoch() == 4);
    for (size_t t = 5; t < warm_cosine.size(); ++t) {
      resumed.step();
      INFO("resumed, epoch " << t);
      close(resumed.get_last_lr(), warm_cosine[t]);
    }
  }
  {
    // Three schedulers: ConstantLR(0.5, 2), ExponentialLR(0.9) from epoch 2, StepLR(2, 0.5) from 5.
    auto sgd = make();
    optim::ConstantLR constant(*sgd, 0.5, 2);
    optim::ExponentialLR exponential(*sgd, 0.9);
    optim::StepLR stepped(*sgd, 2, 0.5);
    optim::SequentialLR sequential(*sgd, {&constant, &exponential, &stepped}, {2, 5});
    const std::vector<std::vector<double>> want{{0.05, 0.01},
                                                {0.05, 0.01},
                                                {0.1, 0.02},
                                                {0.09000000000000001, 0.018000000000000002},
                                                {0.08100000000000002, 0.016200000000000003},
                                                {0.1, 0.02},
                                                {0.1, 0.02},
                                                {0.05, 0.01},
                                                {0.05, 0.01}};
    for (size_t t = 0; t < want.size(); ++t) {
      if (t > 0) sequential.step();
      INFO("epoch " << t);
      close(sequential.get_last_lr(), want[t]);
    }
    check_error(
        [&] {
          optim::SequentialLR(*sgd, {&constant, &exponential}, {2, 5});
        },
        {"SequentialLR", "2 schedulers need 1 milestones, got 2"});
    auto other = make();
    check_error([&] { optim::SequentialLR(*other, {&constant}, {}); }, {"SequentialLR", "another optimizer"});
  }
}

TEST_CASE("scheduler edges as PyTorch's: MultiplicativeLR restarted, CyclicLR second, periods at their end", "[cpu]") {
  auto make = [] {
    td::Tensor a = td::zeros({1}).requires_grad_();
    return std::make_unique<optim::SGD>(std::vector<td::Tensor>{a}, optim::SGDOptions(1.0));
  };
  {
    // PyTorch 2.15: SequentialLR([ConstantLR(0.5, 10), MultiplicativeLR(0.9)], [2]) -> 0.5, 0.5,
    // 0.45, 0.405, 0.3645: the hand-over multiplies by factor(0) too.
    auto sgd = make();
    optim::ConstantLR constant(*sgd, 0.5, 10);
    optim::MultiplicativeLR multiplicative(*sgd, [](int64_t) { return 0.9; });
    optim::SequentialLR sequential(*sgd, {&constant, &multiplicative}, {2});
    std::vector<double> got{sequential.get_last_lr()[0]};
    for (int t = 0; t < 4; ++t) {
      sequential.step();
      got.push_back(sequential.get_last_lr()[0]);
    }
    const std::vector<double> want{0.5, 0.5, 0.45, 0.405, 0.3645};
    for (size_t t = 0; t < want.size(); ++t) CHECK(got[t] == Approx(want[t]).epsilon(1e-12));
    // A group added later: the schedulers were made for one, and say so.
    sgd->add_param_group(optim::OptimizerParamGroup({td::zeros({1}).requires_grad_()}));
    check_error([&] { sequential.step(); }, {"parameter groups", "made for 1"});
  }
  {
    // StepLR, then CyclicLR(base 0.01, max 0.1) on lr 0.1: PyTorch's constructor step starts
    // from the initial lr (0.1), the next step from base_lr (0.0325).
    auto sgd = make();
    sgd->param_groups()[0].options().set_lr(0.1);
    optim::StepLR stepped(*sgd, 2);
    optim::CyclicLR cyclic(*sgd, {0.01}, {0.1});
    CHECK(cyclic.get_last_lr()[0] == Approx(0.1).epsilon(1e-15));
    cyclic.step();
    CHECK(cyclic.get_last_lr()[0] == Approx(0.01 + 0.09 / 2000).epsilon(1e-12));
  }
  {
    // CosineAnnealingWarmRestarts(T_0 1, T_mult 10).step(111): PyTorch's int(log(1000, 10)) is 2,
    // so T_cur = T_i = 100 and the lr is eta_min; that state loads and goes on.
    auto sgd = make();
    optim::CosineAnnealingWarmRestarts restarts(*sgd, 1, 10);
    restarts.step(111.0);
    CHECK(restarts.T_cur() == 100.0);
    CHECK(restarts.T_i() == 100);
    auto other = make();
    optim::CosineAnnealingWarmRestarts resumed(*other, 1, 10);
    resumed.load_state_dict(restarts.state_dict());
    resumed.step();
    CHECK(resumed.T_i() == 1000);
  }
  {
    auto sgd = make();
    optim::ConstantLR zero(*sgd, 0.0, 2);
    zero.step();
    check_error([&] { zero.step(); }, {"ConstantLR", "factor of 0", "total_iters"});
    CHECK(zero.last_epoch() == 1);
  }
}

TEST_CASE("Adafactor factors each matrix of a batch and keeps a float32 parameter's machine epsilon", "[cpu]") {
  // PyTorch 2.15 (foreach=False), lr 0.02, weight_decay 0.05, after four steps.
  const std::vector<std::tuple<td::DType, td::Shape, std::vector<double>>> cases = {
      {td::kFloat64, {2, 3, 4}, {0.6772806430830619,  1.6691355591514982,  0.21712107409425774,  -0.8259465829148576,
                                 -0.4280093997241144, 0.3518188574014978,  0.8878800939943507,   -0.038506655465944284,
                                 -1.6491177106496144, -0.8589884811305336, 1.2161222037139923,   1.1282055200159742,
                                 -0.2255989499325585, -0.6558965791247731, -0.19732344189992632, 0.8029247455316068,
                                 0.9736279195892024,  -0.7957865970672444, -1.7805034827273478,  -0.09061914398193192,
                                 1.2393251028536407,  0.5217192381514096,  -0.40256660008057626, -0.6079491057996734}},
      {td::kFloat32,
       {3, 5},
       {0.6806021928787231, 1.674343466758728, 0.22006140649318695, -0.8283029198646545, -0.4222733974456787,
        0.3640599250793457, 0.8730234503746033, -0.06375597417354584, -1.6551976203918457, -0.8875299096107483,
        1.2240139245986938, 1.142279028892517, -0.23536773025989532, -0.6496394276618958, -0.19439630210399628}},
  };
  for (const auto& [dtype, shape, expected] : cases) {
    INFO(dtype);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    td::Tensor p = td::tensor(closed_form(n, 0.4, 1.2), td::kFloat64).to(dtype).view(shape).requires_grad_();
    optim::Adafactor optimizer({p}, optim::AdafactorOptions(0.02).weight_decay(0.05));
    for (int t = 0; t < 4; ++t) {
      p.mutable_grad() = td::tensor(closed_form(n, 1.1 + t, 0.9), td::kFloat64).to(dtype).view(shape);
      optimizer.step();
    }
    check_close(p, expected, dtype == td::kFloat64 ? 1e-12 : 1e-6, 1e-7);
    // One value per row and one per column of each matrix.
    const td::StateDict state = optimizer.state_dict();
    td::Shape rows = shape, columns = shape;
    rows.back() = 1;
    columns[columns.size() - 2] = 1;
    CHECK(state.at("state.0.row_var").sizes() == rows);
    CHECK(state.at("state.0.col_var").sizes() == columns);
    CHECK(!state.contains("state.0.variance"));
    CHECK(state.at("state.0.step").item<int64_t>() == 4);

    // A state whose moments have the wrong shapes is refused, and the optimizer keeps its own.
    td::StateDict wrong;
    wrong.metadata = state.metadata;
    for (const auto& [key, t] : state) wrong.insert(key, key == "state.0.row_var" ? td::zeros(columns, dtype) : t);
    td::Tensor q = p.detach().clone().requires_grad_();
    optim::Adafactor other({q}, optim::AdafactorOptions(0.02));
    check_error([&] { other.load_state_dict(wrong); }, {"row_var", td::shape_str(columns), td::shape_str(rows)});
    CHECK(other.state().empty());
  }
}

TEST_CASE("Muon orthogonalizes tall and wide matrices and scales its lr by their shapes, as PyTorch's", "[cpu]") {
  // PyTorch 2.15, lr 0.02 and the other defaults, after four steps.
  const std::vector<std::tuple<td::DType, td::Shape, optim::MuonAdjustLR, std::vector<double>>> cases = {
      {td::kFloat64,
       {5, 3},
       optim::MuonAdjustLR::original,
       {0.6538805326827418, 1.6482171411758857, 0.21730600867590144, -0.816775747411845, -0.41254388684820315,
        0.34499590083511206, 0.8499229586127364, -0.0629548496703827, -1.6241469125441323, -0.8512008130295178,
        1.1848605274948971, 1.1054617037861583, -0.23084892156981432, -0.6319369863283513, -0.17267207500502413}},
      {td::kFloat32,
       {4, 6},
       optim::MuonAdjustLR::spectral_unclamped,
       {0.6664884090423584,  1.6400781869888306,  0.20757903158664703,  -0.8110968470573425, -0.39785414934158325,
        0.36643925309181213, 0.8486062288284302,  -0.09078192710876465, -1.6212674379348755, -0.8379030227661133,
        1.1905256509780884,  1.100090503692627,   -0.24756386876106262, -0.6233687400817871, -0.1606278270483017,
        0.783879280090332,   0.9601195454597473,  -0.7797002792358398,  -1.7497597932815552, -0.09469945728778839,
        1.2093642950057983,  0.47628214955329895, -0.4183942675590515,  -0.5765496492385864}},
      {td::kFloat64,
       {7, 2},
       optim::MuonAdjustLR::match_rms_adamw,
       {0.676614160682898, 1.6379829858375075, 0.1990050399385973, -0.8136714863741361, -0.40484491943519735,
        0.3611301301938408, 0.851134007108316, -0.0827647640746128, -1.6209496422818324, -0.8226845260234823,
        1.2036662162078764, 1.0941984759328358, -0.2439743491994121, -0.6279711845219415}},
  };
  for (const auto& [dtype, shape, adjust, expected] : cases) {
    INFO(dtype << " " << td::shape_str(shape));
    const int64_t n = shape[0] * shape[1];
    td::Tensor p = td::tensor(closed_form(n, 0.4, 1.2), td::kFloat64).to(dtype).view(shape).requires_grad_();
    optim::Muon optimizer({p}, optim::MuonOptions(0.02).adjust_lr(adjust));
    for (int t = 0; t < 4; ++t) {
      p.mutable_grad() = td::tensor(closed_form(n, 1.1 + t, 0.9), td::kFloat64).to(dtype).view(shape);
      optimizer.step();
    }
    check_close(p, expected, dtype == td::kFloat64 ? 1e-12 : 1e-6, 1e-7);
  }

  // What the iteration is for: singular values near 1 (within PyTorch's documented 0.5 to 1.5),
  // whatever the matrix's scale.
  td::manual_seed(5);
  for (const td::Shape& shape : {td::Shape{24, 10}, td::Shape{10, 24}}) {
    const td::Tensor g = td::randn(shape, td::kFloat32) * 30;
    const td::Tensor o = optim::zeropower_via_newton_schulz(g, {3.4445, -4.7750, 2.0315}, 5, 1e-7);
    CHECK(o.dtype() == td::kBFloat16);
    CHECK(o.sizes() == shape);
    for (double s : values(td::linalg::svdvals(o.to(td::kFloat64)))) {
      CHECK(s > 0.5);
      CHECK(s < 1.5);
    }
  }

  // Matrices only: a vector is refused at construction, and in a group added later at the step,
  // before any parameter changes.
  check_error([] { optim::Muon({td::zeros({3}).requires_grad_()}); }, {"Muon", "2-D", "[3]"});
  td::Tensor w = td::ones({2, 2}, td::kFloat64).requires_grad_(), bias = td::ones({2}, td::kFloat64).requires_grad_();
  optim::Muon optimizer({w}, optim::MuonOptions(0.1));
  optimizer.add_param_group(optim::OptimizerParamGroup({bias}));
  w.mutable_grad() = td::ones({2, 2}, td::kFloat64);
  bias.mutable_grad() = td::ones({2}, td::kFloat64);
  check_error([&] { optimizer.step(); }, {"Muon", "2-D", "[2]"});
  check_equal(w, {1, 1, 1, 1});
  CHECK(optimizer.state().empty());

  // Muon has a momentum, which CyclicLR cycles, as PyTorch's.
  td::Tensor m = td::ones({2, 2}, td::kFloat64).requires_grad_();
  optim::Muon cycled({m}, optim::MuonOptions(0.1));
  optim::CyclicLROptions cyclic;
  cyclic.base_momentum = {0.8};
  cyclic.max_momentum = {0.9};
  optim::CyclicLR scheduler(cycled, {0.01}, {0.1}, cyclic);
  CHECK(static_cast<const optim::MuonOptions&>(cycled.param_groups()[0].options()).momentum() == 0.9);
  scheduler.step();
  CHECK(static_cast<const optim::MuonOptions&>(cycled.param_groups()[0].options()).momentum() < 0.9);
}

TEST_CASE("SWALR refuses bad settings and leaves the optimizer's lr as it was, and resumes from its state", "[cpu]") {
  td::Tensor a = td::zeros({1}).requires_grad_(), b = td::zeros({1}).requires_grad_();
  optim::SGD sgd({optim::OptimizerParamGroup({a}), optim::OptimizerParamGroup({b}, optim::SGDOptions(0.02))}, 0.1);
  check_error([&] { optim::SWALR(sgd, {0.05}, -1); }, {"SWALR", "anneal_epochs = -1"});
  check_error([&] { optim::SWALR(sgd, {0.05, 0.01, 0.3}); }, {"SWALR", "swa_lr", "3", "2"});
  check_error([&] { optim::SWALR(sgd, {std::nan("")}); }, {"SWALR", "swa_lr = nan"});
  CHECK(sgd.param_groups()[0].options().get_lr() == 0.1);
  CHECK(sgd.param_groups()[1].options().get_lr() == 0.02);

  optim::SWALR first(sgd, {0.05, 0.01}, 5, optim::AnnealStrategy::linear);
  first.step();
  first.step();
  const td::StateDict saved = first.state_dict();
  const td::StateDict saved_optimizer = sgd.state_dict();
  first.step();
  const std::vector<double> want = first.get_last_lr();

  td::Tensor c = td::zeros({1}).requires_grad_(), d = td::zeros({1}).requires_grad_();
  optim::SGD other({optim::OptimizerParamGroup({c}), optim::OptimizerParamGroup({d}, optim::SGDOptions(0.02))}, 0.1);
  optim::SWALR resumed(other, {0.5}, 1);
  other.load_state_dict(saved_optimizer);
  resumed.load_state_dict(saved);
  CHECK(resumed.swa_lrs() == std::vector<double>{0.05, 0.01});
  resumed.step();
  CHECK(resumed.get_last_lr() == want);
}

TEST_CASE("Muon on larger float32, bfloat16 and float16 matrices follows PyTorch's within a rounding", "[cpu]") {
  // Through float32, as PyTorch converts float64 to 16 bits (tandem rounds once, PyTorch twice:
  // one float16 value in 2048 of these differed).
  const auto make = [](int64_t n, double salt, double scale, td::DType dtype, const td::Shape& shape) {
    return td::tensor(closed_form(n, salt, scale), td::kFloat64).to(td::kFloat32).to(dtype).view(shape);
  };
  // PyTorch 2.15, lr 0.02 and the other defaults (Nesterov), four steps: the sum of the final
  // values, their sum weighted by position (float32), and the first sixteen. PyTorch's bfloat16
  // GEMM (oneDNN) accumulates in another order than the float32 GEMM tandem rounds from: a few
  // Newton-Schulz elements round the other way, and about 5% of the parameters end one rounding
  // of their dtype apart (float32: within 2e-5; its steps move them by 0.006 on average).
  struct Case {
    td::DType dtype;
    td::Shape shape;
    double sum, weighted, sum_tolerance, element_tolerance;
    std::vector<double> first;
  };
  const std::vector<Case> cases = {
      {td::kFloat32,
       {128, 64},
       1.1700275058974512,
       -3638.1076099977945,
       1e-4,
       2e-5,
       {0.6898331046104431, 1.6340855360031128, 0.18569080531597137, -0.814678430557251, -0.39594292640686035,
        0.3673678934574127, 0.8457412719726562, -0.09423878788948059, -1.6198796033859253, -0.8064147233963013,
        1.2103567123413086, 1.0859217643737793, -0.25441569089889526, -0.6259497404098511, -0.15602225065231323,
        0.7873584032058716}},
      {td::kBFloat16,
       {64, 32},
       2.3184585571289062,
       1452.5841445922852,
       0.05,
       0x1p-7,
       {0.6875, 1.65625, 0.1884765625, -0.8203125, -0.400390625, 0.37109375, 0.8515625, -0.091796875, -1.6328125,
        -0.8203125, 1.2265625, 1.09375, -0.25390625, -0.6328125, -0.15625, 0.79296875}},
      {td::kFloat16,
       {32, 64},
       2.321310043334961,
       1494.7070670127869,
       0.05,
       0x1p-10,
       {0.689453125, 1.6357421875, 0.18701171875, -0.81640625, -0.396240234375, 0.36767578125, 0.8466796875,
        -0.09295654296875, -1.6220703125, -0.81201171875, 1.2109375, 1.087890625, -0.25537109375, -0.625,
        -0.1558837890625, 0.78759765625}},
  };
  for (const Case& c : cases) {
    INFO(c.dtype);
    const int64_t n = c.shape[0] * c.shape[1];
    td::Tensor p = make(n, 0.4, 1.2, c.dtype, c.shape).requires_grad_();
    optim::Muon optimizer({p}, optim::MuonOptions(0.02));
    for (int t = 0; t < 4; ++t) {
      p.mutable_grad() = make(n, 1.1 + t, 0.9, c.dtype, c.shape);
      optimizer.step();
    }
    const td::Tensor final_values = p.detach().to(td::kFloat64).reshape({-1});
    const double sum = final_values.sum().item<double>();
    CHECK(std::abs(sum - c.sum) <= c.sum_tolerance * (c.dtype == td::kFloat32 ? std::abs(c.sum) : 1.0));
    if (c.dtype == td::kFloat32) {
      const double weighted = (final_values * td::arange(n, td::kFloat64)).sum().item<double>();
      CHECK(std::abs(weighted - c.weighted) <= 1e-4 * std::abs(c.weighted));
    }
    check_close(final_values.narrow(0, 0, 16), c.first, 0, c.element_tolerance);
  }

  // Without Newton-Schulz iterations (ns_steps 0) no GEMM rounds: the momentum, the Nesterov
  // direction, the normalization in bfloat16 and the update's promotion (a float16 parameter adds
  // in float32) give PyTorch's values to the bit; a changed rounding anywhere moves these sums.
  const std::vector<std::tuple<td::DType, double, double>> exact = {
      {td::kFloat32, 2.313647973467596, 1459.5666814470896},
      {td::kBFloat16, 2.5218467712402344, 1564.37788772583},
      {td::kFloat16, 2.355189800262451, 1525.8672795295715},
  };
  for (const auto& [dtype, sum, weighted] : exact) {
    INFO(dtype << ", ns_steps 0");
    td::Tensor p = make(2048, 0.4, 1.2, dtype, {32, 64}).requires_grad_();
    optim::Muon optimizer({p}, optim::MuonOptions(0.02).ns_steps(0));
    for (int t = 0; t < 4; ++t) {
      p.mutable_grad() = make(2048, 1.1 + t, 0.9, dtype, {32, 64});
      optimizer.step();
    }
    const td::Tensor final_values = p.detach().to(td::kFloat64).reshape({-1});
    CHECK(final_values.sum().item<double>() == Approx(sum).epsilon(1e-13));
    CHECK((final_values * td::arange(2048, td::kFloat64)).sum().item<double>() == Approx(weighted).epsilon(1e-13));
  }
}

TEST_CASE("Adafactor's default eps1 is the machine epsilon of a group's first parameter, for the whole group",
          "[cpu]") {
  // Gradients small enough for eps1 to bound the second moments: float32's epsilon for the matrix
  // and, from the same group, for the bfloat16 vector (PyTorch 2.15, lr 0.02, three steps).
  td::Tensor matrix =
      td::tensor(closed_form(30, 0.4, 1.2), td::kFloat64).to(td::kFloat32).view({6, 5}).requires_grad_();
  td::Tensor vector = td::tensor(closed_form(7, 0.9, 1.2), td::kFloat64).to(td::kBFloat16).requires_grad_();
  optim::Adafactor optimizer({matrix, vector}, optim::AdafactorOptions(0.02));
  for (int t = 0; t < 3; ++t) {
    matrix.mutable_grad() = td::tensor(closed_form(30, 1.1 + t, 3e-8), td::kFloat64).to(td::kFloat32).view({6, 5});
    vector.mutable_grad() = td::tensor(closed_form(7, 2.1 + t, 3e-3), td::kFloat64).to(td::kBFloat16);
    optimizer.step();
  }
  // The matrix within a float32 rounding (its row and column norms reduce in another order).
  check_close(matrix,
              {0.6885787844657898,  1.6484383344650269, 0.19409698247909546,  -0.8198831081390381, -0.404936820268631,
               0.36538389325141907, 0.8554465174674988, -0.08836501836776733, -1.632698655128479,  -0.8228411078453064,
               1.2158304452896118,  1.0992789268493652, -0.24932508170604706, -0.6319724917411804, -0.16356395184993744,
               0.7908322215080261,  0.9483063220977783, -0.8036860227584839,  -1.7540361881256104, -0.06690912693738937,
               1.2216532230377197,  0.4843178391456604, -0.41362789273262024, -0.5827112197875977, 0.16205498576164246,
               1.3270982503890991,  0.6001563668251038, -1.4487485885620117,  -1.2921907901763916, 0.48765483498573303},
              2e-7, 0);
  check_equal(vector, {1.4140625, 1.3984375, -0.439453125, -0.921875, -0.154296875, 0.5859375, 0.66015625});
}
