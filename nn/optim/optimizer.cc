#include "nn/optim/optimizer.h"

#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <typeinfo>

#include <nlohmann/json.hpp>

#include "autograd/grad_mode.h"
#include "autograd/graph.h"
#include "autograd/ops.h"
#include "kernels/elementwise.h"
#include "kernels/factory.h"

namespace tandem::optim {

using nlohmann::json;

// ---- OptimizerParamGroup ----

OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}

OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params, const OptimizerOptions& options)
    : params_(std::move(params)), options_(options.clone()) {}

OptimizerParamGroup::OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
    : params_(std::move(params)), options_(std::move(options)) {}

OptimizerParamGroup::OptimizerParamGroup(const OptimizerParamGroup& other)
    : params_(other.params_), options_(other.options_ ? other.options_->clone() : nullptr),
      initial_lr_(other.initial_lr_) {}

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& other) {
  if (this != &other) {
    params_ = other.params_;
    options_ = other.options_ ? other.options_->clone() : nullptr;
    initial_lr_ = other.initial_lr_;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  TD_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options (it gets the optimizer's "
           "defaults when added to an optimizer)");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  TD_CHECK(options_ != nullptr, "OptimizerParamGroup: this group has no options (it gets the optimizer's "
           "defaults when added to an optimizer)");
  return *options_;
}

void OptimizerOptions::check(bool new_options) const {
  const double lr = get_lr();
  TD_CHECK(std::isfinite(lr) && (lr >= 0 || !new_options), optimizer_name(), ": invalid learning rate lr = ", lr,
           new_options ? " (must be >= 0)" : " (must be finite)");
  validate();
}

// ---- Optimizer ----

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  TD_CHECK(defaults_ != nullptr, "Optimizer: no default options");
  defaults_->check(true);
  size_t count = 0;
  for (const auto& group : param_groups) count += group.params().size();
  TD_CHECK(count > 0, defaults_->optimizer_name(), ": the optimizer got an empty parameter list");
  for (const auto& group : param_groups) add_param_group(group);
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  const char* name = defaults_->optimizer_name();
  // Validate everything before touching param_groups_, so a rejected group leaves no trace.
  std::set<const TensorImpl*> seen;
  for (const auto& existing : param_groups_) {
    for (const auto& p : existing.params()) seen.insert(p.impl_ptr().get());
  }
  for (size_t i = 0; i < group.params().size(); ++i) {
    const Tensor& p = group.params()[i];
    TD_CHECK(p.defined(), name, ": parameter ", i, " of the new group is undefined");
    TD_CHECK(p.is_floating_point(), name, ": can only optimize floating-point tensors, but parameter ", i,
             " of the new group has dtype ", p.dtype());
    TD_CHECK(p.is_leaf(), name, ": can't optimize a non-leaf tensor (parameter ", i, " of the new group was made by ",
             p.grad_fn() ? p.grad_fn()->name() : "an op", "); pass a leaf, e.g. x.detach().requires_grad_()");
    TD_CHECK(seen.insert(p.impl_ptr().get()).second, name, ": parameter ", i,
             " of the new group appears in more than one place (a parameter belongs to one group, once)");
  }
  OptimizerParamGroup added(group.params());
  if (group.has_options()) {
    const OptimizerOptions& options = group.options();
    const OptimizerOptions& defaults = *defaults_;
    TD_CHECK(typeid(options) == typeid(defaults), name, ": a parameter group's options are for ",
             options.optimizer_name(), ", not ", name);
    options.check(true);
    added.set_options(options.clone());
  } else {
    added.set_options(defaults_->clone());
  }
  added.set_initial_lr(group.initial_lr());
  param_groups_.push_back(std::move(added));
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      Tensor& grad = p.mutable_grad();
      if (set_to_none) {
        grad = Tensor();
        continue;
      }
      // As PyTorch: a gradient with history (create_graph=True) stops being part of a graph
      // before it is zeroed, so zeroing it does not write into a graph that might be replayed.
      if (grad.grad_fn()) {
        grad.detach_();
      } else {
        grad.requires_grad_(false);
      }
      grad.zero_();
    }
  }
}

Tensor Optimizer::step(LossClosure closure) {
  Tensor loss;
  if (closure) {
    AutoGradMode enable(true);
    loss = closure();
  }
  NoGradGuard no_grad;
  check_step();
  move_state_to_parameters();
  update();
  return loss;
}

void Optimizer::check_step() const {
  // An assigned mutable_grad() could be anything, and a silent broadcast or promotion would
  // corrupt the parameter; all gradients are checked before any parameter changes.
  const char* name = defaults_->optimizer_name();
  for (const auto& group : param_groups_) group.options().check(false);
  size_t index = 0;
  for (const auto& group : param_groups_) {
    for (const auto& p : group.params()) {
      Tensor grad = p.grad();
      if (grad.defined()) {
        TD_CHECK(grad.sizes() == p.sizes(), name, ".step: parameter ", index, " has shape ", shape_str(p.sizes()),
                 " but its gradient has shape ", shape_str(grad.sizes()));
        TD_CHECK(grad.dtype() == p.dtype() && grad.device() == p.device(), name, ".step: parameter ", index,
                 " is ", p.dtype(), " on ", p.device(), " but its gradient is ", grad.dtype(), " on ", grad.device());
      }
      ++index;
    }
  }
}

void Optimizer::move_state_to_parameters() {
  for (const auto& group : param_groups_) {
    for (const auto& p : group.params()) {
      auto it = state_.find(p.impl_ptr().get());
      if (it != state_.end() && it->second) it->second->follow(p);
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& group : param_groups_) out.insert(out.end(), group.params().begin(), group.params().end());
  return out;
}

size_t Optimizer::size() const {
  size_t n = 0;
  for (const auto& group : param_groups_) n += group.params().size();
  return n;
}

const OptimizerParamState* Optimizer::state_of(const Tensor& param) const {
  if (!param.defined()) return nullptr;
  auto it = state_.find(param.impl_ptr().get());
  return it == state_.end() ? nullptr : it->second.get();
}

// ---- state_dict ----

namespace {

constexpr const char* kKindKey = "optimizer";
constexpr const char* kGroupsKey = "param_groups";

// "state.12.exp_avg" -> (12, "exp_avg"); anything else is not an optimizer state tensor.
bool parse_state_key(const std::string& key, size_t& index, std::string& name) {
  const std::string prefix = "state.";
  if (key.rfind(prefix, 0) != 0) return false;
  size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 == key.size()) return false;
  const char* first = key.data() + prefix.size();
  const char* last = key.data() + dot;
  auto [end, ec] = std::from_chars(first, last, index);
  if (ec != std::errc() || end != last) return false;
  name = key.substr(dot + 1);
  return true;
}

}  // namespace

StateDict Optimizer::state_dict() const {
  StateDict out;
  json groups = json::array();
  size_t index = 0;
  for (const auto& group : param_groups_) {
    json g = json::object();
    group.options().to_json(g);
    if (group.initial_lr()) g["initial_lr"] = *group.initial_lr();
    json indices = json::array();
    json shapes = json::array();
    for (const auto& p : group.params()) {
      if (const OptimizerParamState* s = state_of(p)) s->save(out, "state." + std::to_string(index) + ".");
      indices.push_back(index++);
      shapes.push_back(p.sizes());
    }
    g["params"] = indices;
    g["param_shapes"] = shapes;
    groups.push_back(g);
  }
  out.metadata[kKindKey] = defaults_->optimizer_name();
  out.metadata[kGroupsKey] = groups.dump();
  return out;
}

void Optimizer::load_state_dict(const StateDict& state) {
  const char* name = defaults_->optimizer_name();
  auto kind = state.metadata.find(kKindKey);
  TD_CHECK(kind != state.metadata.end(), name, ".load_state_dict: the state has no '", kKindKey,
           "' metadata (is it an optimizer's state_dict?)");
  TD_CHECK(kind->second == name, name, ".load_state_dict: the state is a ", kind->second, " optimizer's, not ",
           name, "'s");
  auto groups_text = state.metadata.find(kGroupsKey);
  TD_CHECK(groups_text != state.metadata.end(), name, ".load_state_dict: the state has no '", kGroupsKey,
           "' metadata");
  json groups;
  try {
    groups = json::parse(groups_text->second);
  } catch (const json::exception& e) {
    TD_FAIL(name, ".load_state_dict: the '", kGroupsKey, "' metadata is not valid JSON: ", e.what());
  }
  TD_CHECK(groups.is_array(), name, ".load_state_dict: '", kGroupsKey, "' must be a JSON array");
  TD_CHECK(groups.size() == param_groups_.size(), name, ".load_state_dict: the state has ", groups.size(),
           " parameter groups, this optimizer has ", param_groups_.size());

  // Everything is built aside and checked first; the optimizer changes only once all of it loaded.
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  std::vector<std::optional<double>> initial_lrs;
  std::vector<Tensor> params;
  for (size_t gi = 0; gi < param_groups_.size(); ++gi) {
    const json& g = groups[gi];
    const auto& mine = param_groups_[gi].params();
    TD_CHECK(g.is_object(), name, ".load_state_dict: parameter group ", gi, " is not a JSON object");
    auto shapes = g.find("param_shapes");
    TD_CHECK(shapes != g.end() && shapes->is_array(), name, ".load_state_dict: parameter group ", gi,
             " has no 'param_shapes' list");
    TD_CHECK(shapes->size() == mine.size(), name, ".load_state_dict: parameter group ", gi, " has ",
             shapes->size(), " parameters in the state, ", mine.size(), " in this optimizer");
    for (size_t i = 0; i < mine.size(); ++i) {
      Shape saved;
      try {
        saved = (*shapes)[i].get<Shape>();
      } catch (const json::exception& e) {
        TD_FAIL(name, ".load_state_dict: parameter group ", gi, ": a malformed shape: ", e.what());
      }
      TD_CHECK(saved == mine[i].sizes(), name, ".load_state_dict: parameter ", params.size(), " (group ", gi,
               ", position ", i, ") has shape ", shape_str(mine[i].sizes()), " in this optimizer but ",
               shape_str(saved), " in the state");
      params.push_back(mine[i]);
    }
    auto o = defaults_->clone();
    o->from_json(g);
    o->check(false);
    options.push_back(std::move(o));
    std::optional<double> initial_lr;
    if (g.contains("initial_lr")) initial_lr = detail::json_double(g, name, "initial_lr");
    initial_lrs.push_back(initial_lr);
  }

  std::map<size_t, size_t> tensors_per_param;
  for (const auto& [key, tensor] : state) {
    size_t index = 0;
    std::string field;
    TD_CHECK(parse_state_key(key, index, field), name, ".load_state_dict: unexpected tensor '", key,
             "' (optimizer state tensors are named state.<param index>.<name>)");
    TD_CHECK(index < params.size(), name, ".load_state_dict: '", key, "' is for parameter ", index,
             ", but this optimizer has ", params.size(), " parameters");
    ++tensors_per_param[index];
  }
  std::unordered_map<const TensorImpl*, std::unique_ptr<OptimizerParamState>> new_state;
  {
    NoGradGuard no_grad;
    for (const auto& [index, count] : tensors_per_param) {
      const std::string prefix = "state." + std::to_string(index) + ".";
      auto s = make_param_state();
      size_t read = s->load(state, prefix, params[index]);
      TD_CHECK(read == count, name, ".load_state_dict: parameter ", index, " has ", count, " state tensors (",
               prefix, "*), of which ", name, " reads ", read);
      new_state[params[index].impl_ptr().get()] = std::move(s);
    }
  }

  for (size_t gi = 0; gi < param_groups_.size(); ++gi) {
    param_groups_[gi].set_options(std::move(options[gi]));
    param_groups_[gi].set_initial_lr(initial_lrs[gi]);
  }
  state_ = std::move(new_state);
}

// ---- helpers ----

namespace detail {

Tensor load_like_param(const StateDict& in, const std::string& key, const Tensor& param) {
  const Tensor& saved = in.at(key);
  TD_CHECK(saved.sizes() == param.sizes(), "load_state_dict: '", key, "' has shape ", shape_str(saved.sizes()),
           " but its parameter has shape ", shape_str(param.sizes()));
  TD_CHECK(saved.is_floating_point(), "load_state_dict: '", key, "' has dtype ", saved.dtype(),
           "; optimizer state is floating-point");
  // A fresh tensor, so the optimizer's in-place updates never write into the caller's StateDict.
  Tensor out = empty_like(param);
  out.copy_(saved);
  return out;
}

void follow_param(Tensor& state, const Tensor& param) {
  if (state.defined() && (state.device() != param.device() || state.dtype() != param.dtype())) {
    state = state.to(param.device(), param.dtype());
  }
}

namespace {

// t in float32 where it is a 16-bit tensor, where PyTorch's fused element-wise ops compute.
Tensor wide(const Tensor& t) { return is_16bit_float(t.dtype()) ? t.to(kFloat32) : t; }

// The weight as PyTorch's lerp holds it: in float below float64, so that 1 - weight is taken
// from the rounded weight (exact there), not rounded from the double's.
double lerp_weight(const Tensor& self, double weight) {
  return self.dtype() == kFloat64 ? weight : static_cast<double>(static_cast<float>(weight));
}

Tensor lerp(const Tensor& self, const Tensor& end, double weight) {
  weight = lerp_weight(self, weight);
  return std::abs(weight) < 0.5 ? self.add(end.sub(self), weight)       // self + weight * (end - self)
                                : end.sub(end.sub(self), 1 - weight);  // end - (end - self) * (1 - weight)
}

}  // namespace

void lerp_(Tensor& self, const Tensor& end, double weight) {
  if (!is_16bit_float(self.dtype()) && std::abs(lerp_weight(self, weight)) < 0.5) {
    self.add_(end.sub(self), weight);
    return;
  }
  self.copy_(lerp(wide(self), wide(end), weight));
}

void addcmul_(Tensor& self, const Tensor& a, const Tensor& b, double value) {
  if (!is_16bit_float(self.dtype())) {
    kernels::addcmul_(self, a, b, value);  // one fused multiply-add, as PyTorch's
    return;
  }
  self.copy_(wide(self).add(wide(a).mul(value).mul(wide(b))));
}

void addcdiv_(Tensor& self, const Tensor& a, const Tensor& b, double value) {
  if (!is_16bit_float(self.dtype())) {
    self.add_(a.mul(value).div(b));
    return;
  }
  self.copy_(wide(self).add(wide(a).mul(value).div(wide(b))));
}

int64_t load_count(const StateDict& in, const std::string& key) {
  const Tensor& saved = in.at(key);
  TD_CHECK(saved.numel() == 1, "load_state_dict: '", key, "' must hold one number, it has shape ",
           shape_str(saved.sizes()));
  double value = saved.item().to_double();
  TD_CHECK(value >= 0 && value == static_cast<double>(static_cast<int64_t>(value)), "load_state_dict: '", key,
           "' must be a non-negative whole number, it is ", value);
  return static_cast<int64_t>(value);
}

std::tuple<double, double> json_pair(const json& in, const char* who, const char* name) {
  auto pair = in.find(name);
  TD_CHECK(pair != in.end() && pair->is_array() && pair->size() == 2 && (*pair)[0].is_number() &&
               (*pair)[1].is_number(),
           who, ": option '", name, "' must be a list of two numbers");
  return {(*pair)[0].get<double>(), (*pair)[1].get<double>()};
}

void check_non_negative(const char* who, const char* name, double v) {
  // !(x >= 0) also rejects NaN, which would otherwise poison every parameter silently.
  TD_CHECK(std::isfinite(v) && v >= 0, who, ": invalid ", name, " = ", v, " (must be >= 0)");
}

Tensor clone_if_defined(const Tensor& t) { return t.defined() ? t.clone() : Tensor(); }

void check_betas_eps_weight_decay(const char* who, std::tuple<double, double> betas, double eps, double weight_decay) {
  const auto [beta1, beta2] = betas;
  check_non_negative(who, "eps", eps);
  TD_CHECK(beta1 >= 0 && beta1 < 1, who, ": invalid betas[0] = ", beta1, " (betas must be in [0, 1))");
  TD_CHECK(beta2 >= 0 && beta2 < 1, who, ": invalid betas[1] = ", beta2, " (betas must be in [0, 1))");
  check_non_negative(who, "weight_decay", weight_decay);
}

float load_float32(const StateDict& in, const std::string& key) {
  const Tensor& saved = in.at(key);
  TD_CHECK(saved.numel() == 1, "load_state_dict: '", key, "' must hold one number, it has shape ",
           shape_str(saved.sizes()));
  const double value = saved.item().to_double();
  TD_CHECK(std::isfinite(value), "load_state_dict: '", key, "' must be finite, it is ", value);
  return static_cast<float>(value);
}

namespace {
const json& field(const json& in, const char* who, const char* name) {
  TD_CHECK(in.is_object(), who, ": the options must be a JSON object");
  auto it = in.find(name);
  TD_CHECK(it != in.end(), who, ": the options have no '", name, "'");
  return *it;
}
}  // namespace

double json_double(const json& in, const char* who, const char* name) {
  const json& v = field(in, who, name);
  TD_CHECK(v.is_number(), who, ": option '", name, "' must be a number, it is ", v.dump());
  return v.get<double>();
}

bool json_bool(const json& in, const char* who, const char* name) {
  const json& v = field(in, who, name);
  TD_CHECK(v.is_boolean(), who, ": option '", name, "' must be true or false, it is ", v.dump());
  return v.get<bool>();
}

bool json_bool_or_false(const json& in, const char* who, const char* name) {
  return in.contains(name) && json_bool(in, who, name);
}

std::optional<bool> json_optional_bool(const json& in, const char* who, const char* name) {
  if (!in.contains(name) || in.at(name).is_null()) return std::nullopt;
  return json_bool(in, who, name);
}

int64_t json_int(const json& in, const char* who, const char* name) {
  const json& v = field(in, who, name);
  TD_CHECK(v.is_number_integer(), who, ": option '", name, "' must be an integer, it is ", v.dump());
  return v.get<int64_t>();
}

}  // namespace detail

}  // namespace tandem::optim
