#include "nn/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include <nlohmann/json.hpp>

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

void LRScheduler::step() {
  auto& groups = optimizer_.param_groups();
  TD_CHECK(groups.size() == base_lrs_.size(), name(), ".step: the optimizer has ", groups.size(),
           " parameter groups, but the scheduler was made for ", base_lrs_.size(),
           " (schedule groups added later with a new scheduler)");
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
  StateDict out;
  out.metadata[kKey] = j.dump();
  return out;
}

void LRScheduler::load_state_dict(const StateDict& state) {
  auto text = state.metadata.find(kKey);
  TD_CHECK(text != state.metadata.end(), name(), ".load_state_dict: the state has no '", kKey,
           "' metadata (is it a scheduler's state_dict?)");
  json j;
  try {
    j = json::parse(text->second);
  } catch (const json::exception& e) {
    TD_FAIL(name(), ".load_state_dict: the '", kKey, "' metadata is not valid JSON: ", e.what());
  }
  TD_CHECK(j.is_object() && j.contains("type") && j["type"].is_string(), name(),
           ".load_state_dict: the state names no scheduler type");
  const std::string type = j["type"].get<std::string>();
  TD_CHECK(type == name(), name(), ".load_state_dict: the state is a ", type, "'s, not a ", name(), "'s");
  // Everything is read and checked before anything changes.
  const int64_t last_epoch = detail::json_int(j, name(), "last_epoch");
  const int64_t step_count = detail::json_int(j, name(), "step_count");
  std::vector<double> base_lrs = json_doubles(j, name(), "base_lrs");
  std::vector<double> last_lr = json_doubles(j, name(), "last_lr");
  const size_t groups = optimizer_.param_groups().size();
  TD_CHECK(base_lrs.size() == groups && last_lr.size() == groups, name(), ".load_state_dict: the state is for ",
           base_lrs.size(), " parameter groups, the optimizer has ", groups);
  TD_CHECK(last_epoch >= 0 && step_count >= 1, name(), ".load_state_dict: invalid counters last_epoch = ",
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
    // The step past the minimum: the ratio form below would divide by 1 + cos(pi) = 0.
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

}  // namespace tandem::optim
