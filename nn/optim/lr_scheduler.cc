#include "nn/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include <nlohmann/json.hpp>

#include "nn/optim/adam.h"
#include "nn/optim/adam_variants.h"
#include "nn/optim/muon.h"
#include "nn/optim/rmsprop.h"
#include "nn/optim/sgd.h"

namespace tandem::optim {

using nlohmann::json;

namespace {

constexpr const char* kKey = "lr_scheduler";

// std::numbers::pi is the double nearest pi, as Python's math.pi.
constexpr double kPi = std::numbers::pi;

void check_step_lr(int64_t step_size, double gamma) {
  TD_CHECK(step_size >= 1, "StepLR: invalid step_size = ", step_size, " (must be >= 1)");
  TD_CHECK(std::isfinite(gamma), "StepLR: invalid gamma = ", gamma);
}

void check_gamma(const char* who, double gamma) {
  TD_CHECK(std::isfinite(gamma), who, ": invalid gamma = ", gamma);
}

void check_cosine(int64_t T_max, double eta_min) {
  TD_CHECK(T_max >= 1, "CosineAnnealingLR: invalid T_max = ", T_max, " (must be >= 1)");
  TD_CHECK(std::isfinite(eta_min), "CosineAnnealingLR: invalid eta_min = ", eta_min);
}

void check_linear(double start_factor, double end_factor, int64_t total_iters) {
  TD_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR: invalid start_factor = ", start_factor,
           " (must be in (0, 1])");
  TD_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR: invalid end_factor = ", end_factor,
           " (must be in [0, 1])");
  TD_CHECK(total_iters >= 1, "LinearLR: invalid total_iters = ", total_iters, " (must be >= 1)");
}

std::vector<double> json_doubles(const json& in, const char* who, const char* name) {
  auto it = in.find(name);
  TD_CHECK(it != in.end() && it->is_array(), who, ".load_state_dict: no list '", name, "'");
  std::vector<double> out;
  for (const auto& v : *it) {
    TD_CHECK(v.is_number(), who, ".load_state_dict: '", name, "' must hold numbers, it holds ", v.dump());
    out.push_back(v.get<double>());
  }
  return out;
}

// The JSON of a scheduler's state_dict, checked to be `who`'s.
json scheduler_json(const StateDict& state, const char* who) {
  auto text = state.metadata.find(kKey);
  TD_CHECK(text != state.metadata.end(), who, ".load_state_dict: the state has no '", kKey,
           "' metadata (is it a scheduler's state_dict?)");
  json j;
  try {
    j = json::parse(text->second);
  } catch (const json::exception& e) {
    TD_FAIL(who, ".load_state_dict: the '", kKey, "' metadata is not valid JSON: ", e.what());
  }
  TD_CHECK(j.is_object() && j.contains("type") && j["type"].is_string(), who,
           ".load_state_dict: the state names no scheduler type");
  const std::string type = j["type"].get<std::string>();
  TD_CHECK(type == who, who, ".load_state_dict: the state is a ", type, "'s, not a ", who, "'s");
  return j;
}

StateDict scheduler_state(const json& j) {
  StateDict out;
  out.metadata[kKey] = j.dump();
  return out;
}

// One value for every group, or one per group: as many values as groups.
std::vector<double> per_group(const char* who, const char* name, std::vector<double> values, size_t groups) {
  TD_CHECK(values.size() == 1 || values.size() == groups, who, ": ", values.size(), " values of ", name, " for ",
           groups, " parameter groups (give one, or one per group)");
  if (values.size() == 1) values.assign(groups, values[0]);
  return values;
}

// The momentum that OneCycleLR and CyclicLR cycle: SGD's and RMSprop's momentum, beta1 of the
// Adam family (Adam, AdamW, Adamax, NAdam, RAdam).
template <typename Options>
bool set_beta1(OptimizerOptions& o, double beta1) {
  auto* options = dynamic_cast<Options*>(&o);
  if (options) options->betas({beta1, std::get<1>(options->betas())});
  return options != nullptr;
}

bool set_momentum(OptimizerOptions& o, double momentum) {
  if (auto* sgd = dynamic_cast<SGDOptions*>(&o)) {
    sgd->momentum(momentum);
    return true;
  }
  if (auto* rmsprop = dynamic_cast<RMSpropOptions*>(&o)) {
    rmsprop->momentum(momentum);
    return true;
  }
  if (auto* muon = dynamic_cast<MuonOptions*>(&o)) {
    muon->momentum(momentum);
    return true;
  }
  return set_beta1<AdamOptions>(o, momentum) || set_beta1<AdamaxOptions>(o, momentum) ||
         set_beta1<NAdamOptions>(o, momentum) || set_beta1<RAdamOptions>(o, momentum);
}

bool has_momentum(const OptimizerOptions& o) {
  auto copy = o.clone();
  return set_momentum(*copy, 0);
}

// A JSON number that may be infinite (JSON has no infinity): a number, or "inf" / "-inf".
json number_or_infinity(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double json_number_or_infinity(const json& in, const char* who, const char* name) {
  auto it = in.find(name);
  if (it != in.end() && it->is_string() && (*it == "inf" || *it == "-inf")) {
    return *it == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  }
  return detail::json_double(in, who, name);
}

}  // namespace

// ---- LRScheduler ----

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}

void LRScheduler::initial_step() {
  // PyTorch's group.setdefault("initial_lr", lr): the first scheduler fixes the base lr. Done
  // here, after the scheduler checked its arguments, so a rejected scheduler leaves no trace.
  std::vector<bool> set_here;
  for (auto& group : optimizer_.param_groups()) {
    set_here.push_back(!group.initial_lr());
    if (!group.initial_lr()) group.set_initial_lr(group.options().get_lr());
    base_lrs_.push_back(*group.initial_lr());
  }
  step_count_ = 0;
  is_initial_ = true;
  try {
    step();
  } catch (...) {  // a LambdaLR function that throws: the optimizer as it was
    for (size_t i = 0; i < set_here.size(); ++i) {
      if (set_here[i]) optimizer_.param_groups()[i].set_initial_lr(std::nullopt);
    }
    throw;
  }
  is_initial_ = false;
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> out;
  for (const auto& group : optimizer_.param_groups()) out.push_back(group.options().get_lr());
  return out;
}

void LRScheduler::check_groups() const {
  const size_t groups = optimizer_.param_groups().size();
  TD_CHECK(groups == base_lrs_.size() || (groups > base_lrs_.size() && schedules_added_groups()), name(),
           ".step: the optimizer has ", groups, " parameter groups, but the scheduler was made for ", base_lrs_.size(),
           " (schedule groups added later with a new scheduler)");
}

void LRScheduler::step() {
  check_groups();
  ++step_count_;
  ++last_epoch_;
  std::vector<double> lrs;
  try {
    lrs = get_lr();
  } catch (...) {  // nothing stepped: the counters as they were
    --step_count_;
    --last_epoch_;
    throw;
  }
  set_lrs(lrs);
}

void LRScheduler::set_lrs(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  TD_CHECK(lrs.size() == groups.size(), name(), ": ", lrs.size(), " learning rates for ", groups.size(),
           " parameter groups");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = group_lrs();
}

StateDict LRScheduler::state_dict() const {
  json j = json::object();
  j["type"] = name();
  j["last_epoch"] = last_epoch_;
  j["step_count"] = step_count_;
  j["base_lrs"] = base_lrs_;
  j["last_lr"] = last_lr_;
  json hyper = json::object();
  hyperparameters_to_json(hyper);
  j["hyperparameters"] = hyper;
  return scheduler_state(j);
}

void LRScheduler::load_state_dict(const StateDict& state) {
  json j = scheduler_json(state, name());
  // Everything is read and checked before anything changes.
  const int64_t last_epoch = detail::json_int(j, name(), "last_epoch");
  const int64_t step_count = detail::json_int(j, name(), "step_count");
  std::vector<double> base_lrs = json_doubles(j, name(), "base_lrs");
  std::vector<double> last_lr = json_doubles(j, name(), "last_lr");
  const size_t groups = optimizer_.param_groups().size();
  // A scheduler that schedules groups added later saved its first groups' base lrs only.
  TD_CHECK(last_lr.size() == groups &&
               (base_lrs.size() == groups || (base_lrs.size() < groups && schedules_added_groups())),
           name(), ".load_state_dict: the state is for ", base_lrs.size(), " parameter groups, the optimizer has ",
           groups);
  // -1: a scheduler SequentialLR has not started yet.
  TD_CHECK(last_epoch >= -1 && step_count >= 1, name(), ".load_state_dict: invalid counters last_epoch = ",
           last_epoch, ", step_count = ", step_count);
  TD_CHECK(j.contains("hyperparameters"), name(), ".load_state_dict: the state has no 'hyperparameters'");
  hyperparameters_from_json(j["hyperparameters"]);  // validates before it assigns
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  base_lrs_ = std::move(base_lrs);
  last_lr_ = std::move(last_lr);
}

// ---- StepLR ----

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  check_step_lr(step_size, gamma);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return group_lrs();
  std::vector<double> out = group_lrs();
  for (double& lr : out) lr = lr * gamma_;
  return out;
}

void StepLR::hyperparameters_to_json(json& out) const {
  out["step_size"] = step_size_;
  out["gamma"] = gamma_;
}

void StepLR::hyperparameters_from_json(const json& in) {
  const int64_t step_size = detail::json_int(in, name(), "step_size");
  const double gamma = detail::json_double(in, name(), "gamma");
  check_step_lr(step_size, gamma);
  step_size_ = step_size;
  gamma_ = gamma;
}

// ---- MultiStepLR ----

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  check_gamma("MultiStepLR", gamma);
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> out = group_lrs();
  const auto times = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (times == 0) return out;
  // PyTorch's gamma ** count, then one product: not gamma applied count times.
  const double factor = std::pow(gamma_, static_cast<double>(times));
  for (double& lr : out) lr = lr * factor;
  return out;
}

void MultiStepLR::hyperparameters_to_json(json& out) const {
  out["milestones"] = milestones_;
  out["gamma"] = gamma_;
}

void MultiStepLR::hyperparameters_from_json(const json& in) {
  auto it = in.find("milestones");
  TD_CHECK(it != in.end() && it->is_array(), name(), ".load_state_dict: no list 'milestones'");
  std::vector<int64_t> milestones;
  for (const auto& v : *it) {
    TD_CHECK(v.is_number_integer(), name(), ".load_state_dict: 'milestones' must hold integers, it holds ", v.dump());
    milestones.push_back(v.get<int64_t>());
  }
  const double gamma = detail::json_double(in, name(), "gamma");
  check_gamma(name(), gamma);
  milestones_ = std::move(milestones);
  gamma_ = gamma;
}

// ---- ExponentialLR ----

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  check_gamma("ExponentialLR", gamma);
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> out = group_lrs();
  if (last_epoch_ == 0) return out;
  for (double& lr : out) lr = lr * gamma_;
  return out;
}

void ExponentialLR::hyperparameters_to_json(json& out) const { out["gamma"] = gamma_; }

void ExponentialLR::hyperparameters_from_json(const json& in) {
  const double gamma = detail::json_double(in, name(), "gamma");
  check_gamma(name(), gamma);
  gamma_ = gamma;
}

// ---- LambdaLR ----

LambdaLR::LambdaLR(Optimizer& optimizer, Factor factor)
    : LambdaLR(optimizer, std::vector<Factor>(optimizer.param_groups().size(), std::move(factor))) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Factor> factors)
    : LRScheduler(optimizer), factors_(std::move(factors)) {
  TD_CHECK(factors_.size() == optimizer.param_groups().size(), "LambdaLR: ", factors_.size(),
           " functions for ", optimizer.param_groups().size(), " parameter groups");
  for (size_t i = 0; i < factors_.size(); ++i) TD_CHECK(factors_[i] != nullptr, "LambdaLR: function ", i, " is empty");
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> out;
  for (size_t i = 0; i < base_lrs_.size(); ++i) out.push_back(base_lrs_[i] * factors_[i](last_epoch_));
  return out;
}

// ---- CosineAnnealingLR ----

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  check_cosine(T_max, eta_min);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> out = group_lrs();
  if (is_initial_) return out;
  const double T = static_cast<double>(T_max_);
  const double epoch = static_cast<double>(last_epoch_);
  // The written order of PyTorch's expressions is kept: a different order rounds differently.
  if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
    // The step past the minimum: the ratio form below would divide by 1 + cos(pi) = 0. It needs
    // each group's base lr, which a group added later has not got (PyTorch fails here too).
    TD_CHECK(out.size() == base_lrs_.size(), name(), ".step: a parameter group added after the scheduler was made "
             "has no base lr for the step past the minimum (epoch ", last_epoch_, "); make a new scheduler");
    for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] + (base_lrs_[i] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    return out;
  }
  for (double& lr : out) {
    lr = (1 + std::cos(kPi * epoch / T)) / (1 + std::cos(kPi * (epoch - 1) / T)) * (lr - eta_min_) + eta_min_;
  }
  return out;
}

void CosineAnnealingLR::hyperparameters_to_json(json& out) const {
  out["T_max"] = T_max_;
  out["eta_min"] = eta_min_;
}

void CosineAnnealingLR::hyperparameters_from_json(const json& in) {
  const int64_t T_max = detail::json_int(in, name(), "T_max");
  const double eta_min = detail::json_double(in, name(), "eta_min");
  check_cosine(T_max, eta_min);
  T_max_ = T_max;
  eta_min_ = eta_min;
}

// ---- LinearLR ----

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  check_linear(start_factor, end_factor, total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> out = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : out) lr = lr * start_factor_;
    return out;
  }
  if (is_initial_ || last_epoch_ > total_iters_) return out;
  const double delta = end_factor_ - start_factor_;
  const double factor =
      1.0 + delta / (static_cast<double>(total_iters_) * start_factor_ + static_cast<double>(last_epoch_ - 1) * delta);
  for (double& lr : out) lr = lr * factor;
  return out;
}

void LinearLR::hyperparameters_to_json(json& out) const {
  out["start_factor"] = start_factor_;
  out["end_factor"] = end_factor_;
  out["total_iters"] = total_iters_;
}

void LinearLR::hyperparameters_from_json(const json& in) {
  const double start_factor = detail::json_double(in, name(), "start_factor");
  const double end_factor = detail::json_double(in, name(), "end_factor");
  const int64_t total_iters = detail::json_int(in, name(), "total_iters");
  check_linear(start_factor, end_factor, total_iters);
  start_factor_ = start_factor;
  end_factor_ = end_factor;
  total_iters_ = total_iters;
}

// ---- ConstantLR ----

namespace {

void check_constant(double factor, int64_t total_iters) {
  TD_CHECK(factor >= 0 && factor <= 1, "ConstantLR: invalid factor = ", factor, " (must be in [0, 1])");
  TD_CHECK(total_iters >= 0, "ConstantLR: invalid total_iters = ", total_iters, " (must be >= 0)");
}

void check_polynomial(int64_t total_iters, double power) {
  TD_CHECK(total_iters >= 0, "PolynomialLR: invalid total_iters = ", total_iters, " (must be >= 0)");
  TD_CHECK(std::isfinite(power), "PolynomialLR: invalid power = ", power);
}

void check_warm_restarts(int64_t T_0, int64_t T_mult, double eta_min) {
  TD_CHECK(T_0 >= 1, "CosineAnnealingWarmRestarts: invalid T_0 = ", T_0, " (must be >= 1)");
  TD_CHECK(T_mult >= 1, "CosineAnnealingWarmRestarts: invalid T_mult = ", T_mult, " (must be >= 1)");
  TD_CHECK(std::isfinite(eta_min), "CosineAnnealingWarmRestarts: invalid eta_min = ", eta_min);
}

}  // namespace

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  check_constant(factor, total_iters);
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> out = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : out) lr = lr * factor_;
  } else if (last_epoch_ == total_iters_) {
    TD_CHECK(factor_ != 0, name(), ": a factor of 0 cannot be undone at total_iters (PyTorch divides by zero there)");
    for (double& lr : out) lr = lr * (1.0 / factor_);
  }
  return out;
}

void ConstantLR::hyperparameters_to_json(json& out) const {
  out["factor"] = factor_;
  out["total_iters"] = total_iters_;
}

void ConstantLR::hyperparameters_from_json(const json& in) {
  const double factor = detail::json_double(in, name(), "factor");
  const int64_t total_iters = detail::json_int(in, name(), "total_iters");
  check_constant(factor, total_iters);
  factor_ = factor;
  total_iters_ = total_iters;
}

// ---- PolynomialLR ----

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer), total_iters_(total_iters), power_(power) {
  check_polynomial(total_iters, power);
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> out = group_lrs();
  if (is_initial_ || last_epoch_ > total_iters_) return out;
  const double epoch = static_cast<double>(last_epoch_), total = static_cast<double>(total_iters_);
  const double decay = std::pow((1.0 - epoch / total) / (1.0 - (epoch - 1) / total), power_);
  for (double& lr : out) lr = lr * decay;
  return out;
}

void PolynomialLR::hyperparameters_to_json(json& out) const {
  out["total_iters"] = total_iters_;
  out["power"] = power_;
}

void PolynomialLR::hyperparameters_from_json(const json& in) {
  const int64_t total_iters = detail::json_int(in, name(), "total_iters");
  const double power = detail::json_double(in, name(), "power");
  check_polynomial(total_iters, power);
  total_iters_ = total_iters;
  power_ = power;
}

// ---- MultiplicativeLR ----

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, Factor factor)
    : MultiplicativeLR(optimizer, std::vector<Factor>(optimizer.param_groups().size(), std::move(factor))) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Factor> factors)
    : LRScheduler(optimizer), factors_(std::move(factors)) {
  TD_CHECK(factors_.size() == optimizer.param_groups().size(), "MultiplicativeLR: ", factors_.size(),
           " functions for ", optimizer.param_groups().size(), " parameter groups");
  for (size_t i = 0; i < factors_.size(); ++i) {
    TD_CHECK(factors_[i] != nullptr, "MultiplicativeLR: function ", i, " is empty");
  }
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> out = group_lrs();
  if (is_initial_) return out;  // (SequentialLR's epoch 0 multiplies by factor(0), as PyTorch's)
  for (size_t i = 0; i < out.size(); ++i) out[i] = out[i] * factors_[i](last_epoch_);
  return out;
}

// ---- CosineAnnealingWarmRestarts ----

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult,
                                                         double eta_min)
    : LRScheduler(optimizer), T_0_(T_0), T_mult_(T_mult), eta_min_(eta_min), T_i_(T_0) {
  check_warm_restarts(T_0, T_mult, eta_min);
  initial_step();
}

std::vector<double> CosineAnnealingWarmRestarts::cosine_lrs() const {
  std::vector<double> out;
  for (double base : base_lrs_) {
    out.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(kPi * T_cur_ / static_cast<double>(T_i_))) / 2);
  }
  return out;
}

// The step without an epoch: one epoch on, restarting when the period is over.
std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  if (is_initial_) {
    T_cur_ = 0;
    T_i_ = T_0_;
  } else {
    T_cur_ += 1;
    if (T_cur_ >= static_cast<double>(T_i_)) {
      T_cur_ -= static_cast<double>(T_i_);
      T_i_ *= T_mult_;
    }
  }
  return cosine_lrs();
}

void CosineAnnealingWarmRestarts::step(double epoch) {
  TD_CHECK(epoch >= 0, name(), ".step: the epoch must not be negative, got ", epoch);
  check_groups();
  const double T_0 = static_cast<double>(T_0_), T_mult = static_cast<double>(T_mult_);
  if (epoch >= T_0) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(epoch, T_0);
      T_i_ = T_0_;
    } else {
      // Python's int(math.log(epoch / T_0 * (T_mult - 1) + 1, T_mult)): log(x) / log(base).
      const int64_t n = static_cast<int64_t>(std::log(epoch / T_0 * (T_mult - 1) + 1) / std::log(T_mult));
      T_cur_ = epoch - T_0 * (std::pow(T_mult, static_cast<double>(n)) - 1) / (T_mult - 1);
      T_i_ = T_0_ * static_cast<int64_t>(std::pow(T_mult, static_cast<double>(n)));
    }
  } else {
    T_i_ = T_0_;
    T_cur_ = epoch;
  }
  last_epoch_ = static_cast<int64_t>(std::floor(epoch));
  ++step_count_;
  set_lrs(cosine_lrs());
}

void CosineAnnealingWarmRestarts::hyperparameters_to_json(json& out) const {
  out["T_0"] = T_0_;
  out["T_mult"] = T_mult_;
  out["eta_min"] = eta_min_;
  out["T_cur"] = T_cur_;
  out["T_i"] = T_i_;
}

void CosineAnnealingWarmRestarts::hyperparameters_from_json(const json& in) {
  const int64_t T_0 = detail::json_int(in, name(), "T_0"), T_mult = detail::json_int(in, name(), "T_mult");
  const double eta_min = detail::json_double(in, name(), "eta_min"), T_cur = detail::json_double(in, name(), "T_cur");
  const int64_t T_i = detail::json_int(in, name(), "T_i");
  check_warm_restarts(T_0, T_mult, eta_min);
  // T_cur may equal T_i: PyTorch's int(log(...)) can round the period's number down by one.
  TD_CHECK(T_i >= T_0 && T_cur >= 0 && T_cur <= static_cast<double>(T_i), name(),
           ".load_state_dict: invalid T_cur = ", T_cur, ", T_i = ", T_i);
  T_0_ = T_0;
  T_mult_ = T_mult;
  eta_min_ = eta_min;
  T_cur_ = T_cur;
  T_i_ = T_i;
}

// ---- CyclicLR ----

namespace {

const char* cyclic_mode_name(CyclicMode mode) {
  switch (mode) {
    case CyclicMode::triangular: return "triangular";
    case CyclicMode::triangular2: return "triangular2";
    case CyclicMode::exp_range: return "exp_range";
  }
  return "?";
}

}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, std::vector<double> base_lr, std::vector<double> max_lr,
                   CyclicLROptions options)
    : LRScheduler(optimizer), mode_(options.mode), gamma_(options.gamma), scale_fn_(options.scale_fn),
      cycle_momentum_(options.cycle_momentum) {
  auto& groups = optimizer.param_groups();
  const std::vector<double> base_lrs = per_group("CyclicLR", "base_lr", std::move(base_lr), groups.size());
  max_lrs_ = per_group("CyclicLR", "max_lr", std::move(max_lr), groups.size());
  for (const std::vector<double>* list : {&base_lrs, static_cast<const std::vector<double>*>(&max_lrs_)}) {
    for (double lr : *list) TD_CHECK(std::isfinite(lr) && lr >= 0, "CyclicLR: invalid lr = ", lr);
  }
  const double up = options.step_size_up, down = options.step_size_down.value_or(up);
  TD_CHECK(up > 0 && down >= 0 && std::isfinite(up + down), "CyclicLR: invalid step_size_up = ", up,
           ", step_size_down = ", down, " (up must be positive)");
  TD_CHECK(std::isfinite(gamma_), "CyclicLR: invalid gamma = ", gamma_);
  total_size_ = up + down;
  step_ratio_ = up / total_size_;
  // The modes' own scales: triangular and triangular2 by cycle, exp_range by step.
  scale_by_cycle_ = scale_fn_ ? options.scale_by_cycle : mode_ != CyclicMode::exp_range;
  if (cycle_momentum_) {
    TD_CHECK(groups.empty() || has_momentum(groups[0].options()), "CyclicLR: cycle_momentum needs an optimizer with a ",
             "momentum (SGD, RMSprop, Muon) or a beta1 (the Adam family), not ", groups[0].options().optimizer_name(),
             "; pass cycle_momentum = false");
    base_momentums_ = per_group("CyclicLR", "base_momentum", options.base_momentum, groups.size());
    max_momentums_ = per_group("CyclicLR", "max_momentum", options.max_momentum, groups.size());
  }
  // PyTorch's: each group starts at its base_lr (and momentum at max_momentum), which is also the
  // initial_lr a later scheduler starts from; undone if the first step fails.
  std::vector<std::unique_ptr<OptimizerOptions>> before;
  for (size_t i = 0; i < groups.size(); ++i) {
    before.push_back(groups[i].options().clone());
    groups[i].options().set_lr(base_lrs[i]);
    if (cycle_momentum_) set_momentum(groups[i].options(), max_momentums_[i]);
  }
  try {
    initial_step();
  } catch (...) {
    for (size_t i = 0; i < groups.size(); ++i) groups[i].set_options(std::move(before[i]));
    throw;
  }
  base_lrs_ = base_lrs;
}

double CyclicLR::scale(double x) const {
  if (scale_fn_) return scale_fn_(x);
  switch (mode_) {
    case CyclicMode::triangular: return 1.0;
    case CyclicMode::triangular2: return 1 / std::pow(2.0, x - 1);
    case CyclicMode::exp_range: return std::pow(gamma_, x);
  }
  return 1.0;
}

std::vector<double> CyclicLR::get_lr() {
  const double epoch = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1 + epoch / total_size_);
  const double x = 1.0 + epoch / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  const double scaled = scale(scale_by_cycle_ ? cycle : epoch);
  // In the constructor's step base_lrs_ still holds the groups' initial lrs (a scheduler made
  // before may have set them), as PyTorch's; the constructor then sets them to base_lr.
  const std::vector<double>& base_lrs = base_lrs_;
  std::vector<double> lrs;
  for (size_t i = 0; i < max_lrs_.size(); ++i) {
    const double base_height = (max_lrs_[i] - base_lrs[i]) * scale_factor;
    lrs.push_back(base_lrs[i] + base_height * scaled);
  }
  if (cycle_momentum_) {
    auto& groups = optimizer_.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const double base_height = (max_momentums_[i] - base_momentums_[i]) * scale_factor;
      set_momentum(groups[i].options(), max_momentums_[i] - base_height * scaled);
    }
  }
  return lrs;
}

void CyclicLR::hyperparameters_to_json(json& out) const {
  out["max_lrs"] = max_lrs_;
  out["total_size"] = total_size_;
  out["step_ratio"] = step_ratio_;
  out["mode"] = cyclic_mode_name(mode_);
  out["gamma"] = gamma_;
  out["scale_by_cycle"] = scale_by_cycle_;
  out["cycle_momentum"] = cycle_momentum_;
  out["base_momentums"] = base_momentums_;
  out["max_momentums"] = max_momentums_;
}

void CyclicLR::hyperparameters_from_json(const json& in) {
  std::vector<double> max_lrs = json_doubles(in, name(), "max_lrs");
  std::vector<double> base_momentums = json_doubles(in, name(), "base_momentums");
  std::vector<double> max_momentums = json_doubles(in, name(), "max_momentums");
  const double total_size = detail::json_double(in, name(), "total_size");
  const double step_ratio = detail::json_double(in, name(), "step_ratio");
  const double gamma = detail::json_double(in, name(), "gamma");
  const bool scale_by_cycle = detail::json_bool(in, name(), "scale_by_cycle");
  const bool cycle_momentum = detail::json_bool(in, name(), "cycle_momentum");
  auto mode = in.find("mode");
  TD_CHECK(mode != in.end() && mode->is_string(), name(), ".load_state_dict: no 'mode'");
  std::optional<CyclicMode> parsed;
  for (CyclicMode m : {CyclicMode::triangular, CyclicMode::triangular2, CyclicMode::exp_range}) {
    if (*mode == cyclic_mode_name(m)) parsed = m;
  }
  TD_CHECK(parsed.has_value(), name(), ".load_state_dict: unknown mode ", mode->dump());
  const size_t groups = optimizer_.param_groups().size();
  TD_CHECK(max_lrs.size() == groups && (!cycle_momentum || (base_momentums.size() == groups &&
                                                            max_momentums.size() == groups)),
           name(), ".load_state_dict: the state is for other parameter groups");
  TD_CHECK(total_size > 0 && step_ratio > 0 && step_ratio <= 1, name(), ".load_state_dict: invalid total_size = ",
           total_size, ", step_ratio = ", step_ratio);
  max_lrs_ = std::move(max_lrs);
  base_momentums_ = std::move(base_momentums);
  max_momentums_ = std::move(max_momentums);
  total_size_ = total_size;
  step_ratio_ = step_ratio;
  gamma_ = gamma;
  scale_by_cycle_ = scale_by_cycle;
  cycle_momentum_ = cycle_momentum;
  mode_ = *parsed;
}

// ---- ChainedScheduler ----

ChainedScheduler::ChainedScheduler(std::vector<LRScheduler*> schedulers) : schedulers_(std::move(schedulers)) {
  TD_CHECK(!schedulers_.empty(), "ChainedScheduler: no schedulers to chain");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    TD_CHECK(schedulers_[i] != nullptr, "ChainedScheduler: scheduler ", i, " is null");
    TD_CHECK(&schedulers_[i]->optimizer() == &schedulers_[0]->optimizer(), "ChainedScheduler: scheduler ", i,
             " steps another optimizer than scheduler 0 (all must step one optimizer)");
  }
  last_lr_ = schedulers_.back()->get_last_lr();
}

void ChainedScheduler::step() {
  for (LRScheduler* s : schedulers_) s->step();
  last_lr_ = schedulers_.back()->get_last_lr();
}

namespace {

// The states of the schedulers a ChainedScheduler or SequentialLR holds: each one's JSON, in order.
json nested_states(const std::vector<LRScheduler*>& schedulers) {
  json each = json::array();
  for (const LRScheduler* s : schedulers) each.push_back(s->state_dict().metadata.at(kKey));
  return each;
}

// Loads what nested_states saved; each scheduler checks its own state, and if one refuses, those
// before it are restored.
void load_nested_states(const std::vector<LRScheduler*>& schedulers, const json& j, const char* who) {
  auto each = j.find("schedulers");
  TD_CHECK(each != j.end() && each->is_array() && each->size() == schedulers.size() &&
               std::all_of(each->begin(), each->end(), [](const json& e) { return e.is_string(); }),
           who, ".load_state_dict: the state is for another number of schedulers (this one has ", schedulers.size(),
           ")");
  std::vector<StateDict> before;
  for (size_t i = 0; i < schedulers.size(); ++i) {
    before.push_back(schedulers[i]->state_dict());
    StateDict one;
    one.metadata[kKey] = (*each)[i].get<std::string>();
    try {
      schedulers[i]->load_state_dict(one);
    } catch (...) {
      for (size_t k = 0; k < i; ++k) schedulers[k]->load_state_dict(before[k]);
      throw;
    }
  }
}

}  // namespace

StateDict ChainedScheduler::state_dict() const {
  json j = json::object();
  j["type"] = "ChainedScheduler";
  j["schedulers"] = nested_states(schedulers_);
  j["last_lr"] = last_lr_;
  return scheduler_state(j);
}

void ChainedScheduler::load_state_dict(const StateDict& state) {
  json j = scheduler_json(state, "ChainedScheduler");
  std::vector<double> last_lr = json_doubles(j, "ChainedScheduler", "last_lr");
  load_nested_states(schedulers_, j, "ChainedScheduler");
  last_lr_ = std::move(last_lr);
}

// ---- epoch 0 in closed form, for SequentialLR ----

std::vector<double> StepLR::restart_lrs() {
  std::vector<double> out;
  for (double base : base_lrs_) {
    out.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_)));
  }
  return out;
}

std::vector<double> MultiStepLR::restart_lrs() {
  std::vector<int64_t> sorted = milestones_;
  std::sort(sorted.begin(), sorted.end());
  const auto passed = std::upper_bound(sorted.begin(), sorted.end(), last_epoch_) - sorted.begin();
  std::vector<double> out;
  for (double base : base_lrs_) out.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return out;
}

std::vector<double> ExponentialLR::restart_lrs() {
  std::vector<double> out;
  for (double base : base_lrs_) out.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return out;
}

std::vector<double> CosineAnnealingLR::restart_lrs() {
  std::vector<double> out;
  for (double base : base_lrs_) {
    out.push_back(eta_min_ + (base - eta_min_) *
                                 (1 + std::cos(kPi * static_cast<double>(last_epoch_) / static_cast<double>(T_max_))) /
                                 2);
  }
  return out;
}

std::vector<double> LinearLR::restart_lrs() {
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  std::vector<double> out;
  for (double base : base_lrs_) {
    out.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * done / static_cast<double>(total_iters_)));
  }
  return out;
}

std::vector<double> ConstantLR::restart_lrs() {
  const double over = last_epoch_ >= total_iters_ ? 1.0 : 0.0;
  std::vector<double> out;
  for (double base : base_lrs_) out.push_back(base * (factor_ + over * (1 - factor_)));
  return out;
}

std::vector<double> PolynomialLR::restart_lrs() {
  TD_CHECK(total_iters_ > 0, name(), ": its closed form divides by total_iters = 0 (as PyTorch's)");
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  std::vector<double> out;
  for (double base : base_lrs_) {
    out.push_back(base * std::pow(1.0 - done / static_cast<double>(total_iters_), power_));
  }
  return out;
}

// No closed form in PyTorch: its get_lr at the period and position the scheduler is at.
std::vector<double> CosineAnnealingWarmRestarts::restart_lrs() { return cosine_lrs(); }

// ---- SequentialLR ----

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<LRScheduler*> schedulers,
                           std::vector<int64_t> milestones)
    : schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  TD_CHECK(!schedulers_.empty(), "SequentialLR: no schedulers to run");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    TD_CHECK(schedulers_[i] != nullptr, "SequentialLR: scheduler ", i, " is null");
    TD_CHECK(&schedulers_[i]->optimizer_ == &optimizer, "SequentialLR: scheduler ", i, " (",
             schedulers_[i]->name(), ") steps another optimizer");
  }
  TD_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: ", schedulers_.size(), " schedulers need ",
           schedulers_.size() - 1, " milestones, got ", milestones_.size());
  TD_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), "SequentialLR: the milestones must be sorted");
  // PyTorch's: every group back at its initial lr, every scheduler's constructor step undone,
  // and the first scheduler's taken again.
  for (auto& group : optimizer.param_groups()) {
    if (group.initial_lr()) group.options().set_lr(*group.initial_lr());
  }
  for (LRScheduler* s : schedulers_) --s->last_epoch_;
  LRScheduler& first = *schedulers_[std::upper_bound(milestones_.begin(), milestones_.end(), 0) - milestones_.begin()];
  first.step_count_ = 0;
  first.is_initial_ = true;
  first.step();
  first.is_initial_ = false;
  last_lr_ = first.get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t index = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LRScheduler& current = *schedulers_[index];
  current.check_groups();
  if (index > 0 && milestones_[index - 1] == last_epoch_) {
    current.last_epoch_ = 0;
    current.set_lrs(current.restart_lrs());
  } else {
    current.step();
  }
  last_lr_ = current.get_last_lr();
}

StateDict SequentialLR::state_dict() const {
  json j = json::object();
  j["type"] = "SequentialLR";
  j["schedulers"] = nested_states(schedulers_);
  j["milestones"] = milestones_;
  j["last_epoch"] = last_epoch_;
  j["last_lr"] = last_lr_;
  return scheduler_state(j);
}

void SequentialLR::load_state_dict(const StateDict& state) {
  json j = scheduler_json(state, "SequentialLR");
  const int64_t last_epoch = detail::json_int(j, "SequentialLR", "last_epoch");
  std::vector<double> last_lr = json_doubles(j, "SequentialLR", "last_lr");
  TD_CHECK(j.contains("milestones") && j["milestones"] == json(milestones_),
           "SequentialLR.load_state_dict: the state has other milestones");
  load_nested_states(schedulers_, j, "SequentialLR");
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last_lr);
}

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lr, int64_t total_steps, OneCycleLROptions options)
    : LRScheduler(optimizer), total_steps_(total_steps), pct_start_(options.pct_start),
      anneal_strategy_(options.anneal_strategy), cycle_momentum_(options.cycle_momentum),
      three_phase_(options.three_phase) {
  auto& groups = optimizer.param_groups();
  TD_CHECK(total_steps >= 1, "OneCycleLR: invalid total_steps = ", total_steps, " (must be >= 1)");
  TD_CHECK(options.pct_start >= 0 && options.pct_start <= 1, "OneCycleLR: invalid pct_start = ", options.pct_start,
           " (must be in [0, 1])");
  TD_CHECK(std::isfinite(options.div_factor) && options.div_factor > 0, "OneCycleLR: invalid div_factor = ",
           options.div_factor, " (must be > 0)");
  TD_CHECK(std::isfinite(options.final_div_factor) && options.final_div_factor > 0,
           "OneCycleLR: invalid final_div_factor = ", options.final_div_factor, " (must be > 0)");
  max_lrs_ = per_group("OneCycleLR", "max_lr", std::move(max_lr), groups.size());
  for (double lr : max_lrs_) TD_CHECK(std::isfinite(lr) && lr >= 0, "OneCycleLR: invalid max_lr = ", lr);
  if (cycle_momentum_) {
    TD_CHECK(groups.empty() || has_momentum(groups[0].options()), "OneCycleLR: cycle_momentum needs an optimizer with "
             "a momentum (SGD, RMSprop, Muon) or a beta1 (Adam, AdamW), not ", groups[0].options().optimizer_name(),
             "; pass cycle_momentum = false");
    base_momentums_ = per_group("OneCycleLR", "base_momentum", options.base_momentum, groups.size());
    max_momentums_ = per_group("OneCycleLR", "max_momentum", options.max_momentum, groups.size());
    for (const auto* list : {&base_momentums_, &max_momentums_}) {
      for (double m : *list) TD_CHECK(std::isfinite(m) && m >= 0, "OneCycleLR: invalid momentum = ", m);
    }
  }
  // Each group starts from max_lr / div_factor, whatever an earlier scheduler set (PyTorch sets
  // group["initial_lr"]), and its momentum from max_momentum; all of it undone if the first step fails.
  std::vector<std::unique_ptr<OptimizerOptions>> saved_options;
  std::vector<std::optional<double>> saved_initial_lrs;
  for (size_t i = 0; i < groups.size(); ++i) {
    saved_options.push_back(groups[i].options().clone());
    saved_initial_lrs.push_back(groups[i].initial_lr());
    const double initial_lr = max_lrs_[i] / options.div_factor;
    groups[i].set_initial_lr(initial_lr);
    min_lrs_.push_back(initial_lr / options.final_div_factor);
    if (cycle_momentum_) set_momentum(groups[i].options(), max_momentums_[i]);
  }
  try {
    initial_step();
  } catch (...) {
    for (size_t i = 0; i < groups.size(); ++i) {
      groups[i].set_options(std::move(saved_options[i]));
      groups[i].set_initial_lr(saved_initial_lrs[i]);
    }
    throw;
  }
}

std::vector<OneCycleLR::Phase> OneCycleLR::phases() const {
  const double total = static_cast<double>(total_steps_);
  if (three_phase_) {
    return {{pct_start_ * total - 1, Lr::initial, Lr::peak, Momentum::max, Momentum::base},
            {2 * pct_start_ * total - 2, Lr::peak, Lr::initial, Momentum::base, Momentum::max},
            {total - 1, Lr::initial, Lr::final, Momentum::max, Momentum::max}};
  }
  return {{pct_start_ * total - 1, Lr::initial, Lr::peak, Momentum::max, Momentum::base},
          {total - 1, Lr::peak, Lr::final, Momentum::base, Momentum::max}};
}

double OneCycleLR::lr_of(size_t group, Lr which) const {
  switch (which) {
    case Lr::initial: return base_lrs_[group];
    case Lr::peak: return max_lrs_[group];
    case Lr::final: return min_lrs_[group];
  }
  return 0;
}

double OneCycleLR::momentum_of(size_t group, Momentum which) const {
  return which == Momentum::base ? base_momentums_[group] : max_momentums_[group];
}

std::vector<double> OneCycleLR::get_lr() {
  TD_CHECK(last_epoch_ <= total_steps_, "OneCycleLR: stepped ", last_epoch_, " times, but total_steps = ",
           total_steps_);
  const auto anneal = [this](double start, double end, double pct) {
    if (anneal_strategy_ == AnnealStrategy::linear) return (end - start) * pct + start;
    return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
  };
  const double step = static_cast<double>(last_epoch_);
  const std::vector<Phase> schedule = phases();
  // The phase this step is in: the first that ends at or after it, or the last.
  double start_step = 0;
  size_t p = 0;
  while (p + 1 < schedule.size() && step > schedule[p].end_step) start_step = schedule[p++].end_step;
  const Phase& phase = schedule[p];
  TD_CHECK(phase.end_step != start_step, "OneCycleLR: step ", last_epoch_, " falls in phase ", p + 1,
           ", which has no steps (total_steps = ", total_steps_, ", pct_start = ", pct_start_, ")");
  const double pct = (step - start_step) / (phase.end_step - start_step);
  std::vector<double> lrs;
  auto& groups = optimizer_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    lrs.push_back(anneal(lr_of(i, phase.start_lr), lr_of(i, phase.end_lr), pct));
    if (cycle_momentum_) {
      set_momentum(groups[i].options(), anneal(momentum_of(i, phase.start_momentum),
                                               momentum_of(i, phase.end_momentum), pct));
    }
  }
  return lrs;
}

void OneCycleLR::hyperparameters_to_json(json& out) const {
  out["total_steps"] = total_steps_;
  out["pct_start"] = pct_start_;
  out["anneal_strategy"] = anneal_strategy_ == AnnealStrategy::cos ? "cos" : "linear";
  out["cycle_momentum"] = cycle_momentum_;
  out["three_phase"] = three_phase_;
  out["max_lrs"] = max_lrs_;
  out["min_lrs"] = min_lrs_;
  out["base_momentums"] = base_momentums_;
  out["max_momentums"] = max_momentums_;
}

void OneCycleLR::hyperparameters_from_json(const json& in) {
  const int64_t total_steps = detail::json_int(in, name(), "total_steps");
  const double pct_start = detail::json_double(in, name(), "pct_start");
  TD_CHECK(total_steps >= 1 && pct_start >= 0 && pct_start <= 1, name(), ".load_state_dict: invalid total_steps = ",
           total_steps, " or pct_start = ", pct_start);
  auto anneal = in.find("anneal_strategy");
  TD_CHECK(anneal != in.end() && (*anneal == "cos" || *anneal == "linear"), name(),
           ".load_state_dict: 'anneal_strategy' must be \"cos\" or \"linear\"");
  const bool cycle_momentum = detail::json_bool(in, name(), "cycle_momentum");
  const bool three_phase = detail::json_bool(in, name(), "three_phase");
  const size_t groups = optimizer_.param_groups().size();
  const auto list = [&](const char* list_name, size_t want) {
    std::vector<double> out = json_doubles(in, name(), list_name);
    TD_CHECK(out.size() == want, name(), ".load_state_dict: '", list_name, "' holds ", out.size(), " values, not ",
             want);
    return out;
  };
  std::vector<double> max_lrs = list("max_lrs", groups), min_lrs = list("min_lrs", groups);
  // Without cycle_momentum there are no momenta.
  std::vector<double> base_momentums = list("base_momentums", cycle_momentum ? groups : 0);
  std::vector<double> max_momentums = list("max_momentums", cycle_momentum ? groups : 0);
  for (const auto* values : {&max_lrs, &min_lrs, &base_momentums, &max_momentums}) {
    for (double v : *values) {
      TD_CHECK(std::isfinite(v) && v >= 0, name(), ".load_state_dict: invalid lr or momentum ", v, " in the state");
    }
  }
  const OptimizerOptions* first = groups > 0 ? &optimizer_.param_groups()[0].options() : nullptr;
  TD_CHECK(!cycle_momentum || !first || has_momentum(*first), name(),
           ".load_state_dict: the state cycles the momentum, but ", first ? first->optimizer_name() : "",
           " has none");
  total_steps_ = total_steps;
  pct_start_ = pct_start;
  anneal_strategy_ = *anneal == "cos" ? AnnealStrategy::cos : AnnealStrategy::linear;
  cycle_momentum_ = cycle_momentum;
  three_phase_ = three_phase;
  max_lrs_ = std::move(max_lrs);
  min_lrs_ = std::move(min_lrs);
  base_momentums_ = std::move(base_momentums);
  max_momentums_ = std::move(max_momentums);
}

// ---- ReduceLROnPlateau ----

namespace {

constexpr const char* kPlateau = "ReduceLROnPlateau";

void check_plateau(const ReduceLROnPlateauOptions& o) {
  TD_CHECK(std::isfinite(o.factor) && o.factor >= 0 && o.factor < 1, kPlateau, ": invalid factor = ", o.factor,
           " (must be in [0, 1))");
  TD_CHECK(o.patience >= 0, kPlateau, ": invalid patience = ", o.patience, " (must be >= 0)");
  TD_CHECK(o.cooldown >= 0, kPlateau, ": invalid cooldown = ", o.cooldown, " (must be >= 0)");
  TD_CHECK(std::isfinite(o.threshold), kPlateau, ": invalid threshold = ", o.threshold);
  TD_CHECK(std::isfinite(o.eps) && o.eps >= 0, kPlateau, ": invalid eps = ", o.eps, " (must be >= 0)");
  TD_CHECK(!o.min_lr.empty(), kPlateau, ": min_lr is empty (give one value, or one per group)");
  for (double lr : o.min_lr) TD_CHECK(std::isfinite(lr) && lr >= 0, kPlateau, ": invalid min_lr = ", lr);
}

double worst(PlateauMode mode) {
  return mode == PlateauMode::min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

}  // namespace

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(optimizer), options_(std::move(options)), best_(worst(options_.mode)) {
  check_plateau(options_);
  const size_t groups = optimizer.param_groups().size();
  TD_CHECK(options_.min_lr.size() == 1 || options_.min_lr.size() == groups, kPlateau, ": ", options_.min_lr.size(),
           " values of min_lr for ", groups, " parameter groups (give one, or one per group)");
  for (const auto& group : optimizer.param_groups()) last_lr_.push_back(group.options().get_lr());
}

bool ReduceLROnPlateau::is_better(double metric) const {
  const double t = options_.threshold;
  if (options_.mode == PlateauMode::min) {
    return options_.threshold_mode == ThresholdMode::rel ? metric < best_ * (1.0 - t) : metric < best_ - t;
  }
  return options_.threshold_mode == ThresholdMode::rel ? metric > best_ * (t + 1.0) : metric > best_ + t;
}

void ReduceLROnPlateau::step(double metric) {
  auto& groups = optimizer_.param_groups();
  const auto& min_lr = options_.min_lr;
  // The step's counts first, so that an error leaves them as they were.
  const bool better = is_better(metric);
  int64_t bad_epochs = better ? 0 : num_bad_epochs_ + 1;
  int64_t cooldown = cooldown_counter_;
  if (cooldown > 0) {
    --cooldown;
    bad_epochs = 0;  // bad epochs in the cooldown do not count
  }
  const bool reduce = bad_epochs > options_.patience;
  // One value serves every group, also groups added since; one per group must still match where
  // the rates are reduced (PyTorch's check, where it looks).
  TD_CHECK(!reduce || min_lr.size() == 1 || min_lr.size() == groups.size(), kPlateau, ".step: the optimizer has ",
           groups.size(), " parameter groups, but min_lr has ", min_lr.size(),
           " values (one per group when it was made)");
  ++last_epoch_;
  if (better) best_ = metric;
  num_bad_epochs_ = bad_epochs;
  cooldown_counter_ = cooldown;
  if (reduce) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].options().get_lr();
      const double new_lr = std::max(old_lr * options_.factor, min_lr.size() == 1 ? min_lr[0] : min_lr[i]);
      if (old_lr - new_lr > options_.eps) groups[i].options().set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& group : groups) last_lr_.push_back(group.options().get_lr());
}

void ReduceLROnPlateau::step(const Tensor& metric) {
  TD_CHECK(metric.defined() && metric.numel() == 1, kPlateau, ".step: the metric must be one number, got ",
           metric.defined() ? shape_str(metric.sizes()) : std::string("an undefined tensor"));
  step(metric.item<double>());
}

StateDict ReduceLROnPlateau::state_dict() const {
  const ReduceLROnPlateauOptions& o = options_;
  json j = json::object();
  j["type"] = kPlateau;
  j["last_epoch"] = last_epoch_;
  j["last_lr"] = last_lr_;
  j["best"] = number_or_infinity(best_);
  j["num_bad_epochs"] = num_bad_epochs_;
  j["cooldown_counter"] = cooldown_counter_;
  j["hyperparameters"] = {{"mode", o.mode == PlateauMode::min ? "min" : "max"},
                          {"factor", o.factor},
                          {"patience", o.patience},
                          {"threshold", o.threshold},
                          {"threshold_mode", o.threshold_mode == ThresholdMode::rel ? "rel" : "abs"},
                          {"cooldown", o.cooldown},
                          {"min_lr", o.min_lr},
                          {"eps", o.eps}};
  return scheduler_state(j);
}

void ReduceLROnPlateau::load_state_dict(const StateDict& state) {
  const json j = scheduler_json(state, kPlateau);
  TD_CHECK(j.contains("hyperparameters") && j["hyperparameters"].is_object(), kPlateau,
           ".load_state_dict: the state has no 'hyperparameters'");
  const json& h = j["hyperparameters"];
  const auto choice = [&](const char* name, const char* a, const char* b) {
    auto it = h.find(name);
    TD_CHECK(it != h.end() && (*it == a || *it == b), kPlateau, ".load_state_dict: '", name, "' must be \"", a,
             "\" or \"", b, "\"");
    return *it == a;
  };
  ReduceLROnPlateauOptions o;
  o.mode = choice("mode", "min", "max") ? PlateauMode::min : PlateauMode::max;
  o.factor = detail::json_double(h, kPlateau, "factor");
  o.patience = detail::json_int(h, kPlateau, "patience");
  o.threshold = detail::json_double(h, kPlateau, "threshold");
  o.threshold_mode = choice("threshold_mode", "rel", "abs") ? ThresholdMode::rel : ThresholdMode::abs;
  o.cooldown = detail::json_int(h, kPlateau, "cooldown");
  o.min_lr = json_doubles(h, kPlateau, "min_lr");
  o.eps = detail::json_double(h, kPlateau, "eps");
  check_plateau(o);
  const size_t groups = optimizer_.param_groups().size();
  std::vector<double> last_lr = json_doubles(j, kPlateau, "last_lr");
  TD_CHECK(last_lr.size() == groups && (o.min_lr.size() == 1 || o.min_lr.size() == groups), kPlateau,
           ".load_state_dict: the state is for ", last_lr.size(), " parameter groups, the optimizer has ", groups);
  const int64_t last_epoch = detail::json_int(j, kPlateau, "last_epoch");
  const int64_t num_bad_epochs = detail::json_int(j, kPlateau, "num_bad_epochs");
  const int64_t cooldown_counter = detail::json_int(j, kPlateau, "cooldown_counter");
  TD_CHECK(last_epoch >= 0 && num_bad_epochs >= 0 && cooldown_counter >= 0, kPlateau,
           ".load_state_dict: invalid counters last_epoch = ", last_epoch, ", num_bad_epochs = ", num_bad_epochs,
           ", cooldown_counter = ", cooldown_counter);
  const double best = json_number_or_infinity(j, kPlateau, "best");
  options_ = std::move(o);
  last_epoch_ = last_epoch;
  best_ = best;
  num_bad_epochs_ = num_bad_epochs;
  cooldown_counter_ = cooldown_counter;
  last_lr_ = std::move(last_lr);
}

// ---- SWALR ----

namespace {

void check_swa(const std::vector<double>& swa_lrs, int64_t anneal_epochs) {
  for (double lr : swa_lrs) TD_CHECK(std::isfinite(lr), "SWALR: invalid swa_lr = ", lr);
  TD_CHECK(anneal_epochs >= 0, "SWALR: invalid anneal_epochs = ", anneal_epochs, " (must be >= 0)");
}

}  // namespace

SWALR::SWALR(Optimizer& optimizer, std::vector<double> swa_lr, int64_t anneal_epochs, AnnealStrategy anneal_strategy)
    : LRScheduler(optimizer),
      swa_lrs_(per_group("SWALR", "swa_lr", std::move(swa_lr), optimizer.param_groups().size())),
      anneal_epochs_(anneal_epochs),
      anneal_strategy_(anneal_strategy) {
  check_swa(swa_lrs_, anneal_epochs);
  initial_step();
}

double SWALR::anneal(double t) const {
  return anneal_strategy_ == AnnealStrategy::linear ? t : (1 - std::cos(std::numbers::pi * t)) / 2;
}

// PyTorch's get_lr: the lr the annealing started from is recovered from the current one and the
// previous step's alpha, then moved to this step's alpha.
std::vector<double> SWALR::get_lr() {
  int64_t step = step_count_ - 1;
  if (anneal_epochs_ == 0) step = std::max<int64_t>(1, step);
  const double span = static_cast<double>(std::max<int64_t>(1, anneal_epochs_));
  const double previous_alpha = anneal(std::clamp(static_cast<double>(step - 1) / span, 0.0, 1.0));
  const double alpha = anneal(std::clamp(static_cast<double>(step) / span, 0.0, 1.0));
  const std::vector<double> lrs = group_lrs();
  std::vector<double> out;
  for (size_t i = 0; i < lrs.size(); ++i) {
    const double swa_lr = swa_lrs_[i];
    const double start = previous_alpha == 1 ? swa_lr : (lrs[i] - previous_alpha * swa_lr) / (1 - previous_alpha);
    out.push_back(swa_lr * alpha + start * (1 - alpha));
  }
  return out;
}

void SWALR::hyperparameters_to_json(json& out) const {
  out["swa_lrs"] = swa_lrs_;
  out["anneal_epochs"] = anneal_epochs_;
  out["anneal_strategy"] = anneal_strategy_ == AnnealStrategy::cos ? "cos" : "linear";
}

void SWALR::hyperparameters_from_json(const json& in) {
  std::vector<double> swa_lrs = json_doubles(in, name(), "swa_lrs");
  TD_CHECK(swa_lrs.size() == optimizer_.param_groups().size(), name(), ".load_state_dict: 'swa_lrs' holds ",
           swa_lrs.size(), " values, not ", optimizer_.param_groups().size());
  const int64_t anneal_epochs = detail::json_int(in, name(), "anneal_epochs");
  auto anneal = in.find("anneal_strategy");
  TD_CHECK(anneal != in.end() && (*anneal == "cos" || *anneal == "linear"), name(),
           ".load_state_dict: 'anneal_strategy' must be \"cos\" or \"linear\"");
  check_swa(swa_lrs, anneal_epochs);
  swa_lrs_ = std::move(swa_lrs);
  anneal_epochs_ = anneal_epochs;
  anneal_strategy_ = *anneal == "cos" ? AnnealStrategy::cos : AnnealStrategy::linear;
}

}  // namespace tandem::optim
