// Optimizer: the base of SGD, Adam and AdamW, in LibTorch's shape: parameter groups with their own
// hyperparameters, per-parameter state, zero_grad/step, and a state_dict that resumes bit-exactly.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/tensor.h"
#include "nn/state_dict.h"

namespace tandem::optim {

// The hyperparameters of one optimizer kind (SGDOptions, AdamOptions, ...). Every kind has a
// learning rate, which is what schedulers read and write through get_lr/set_lr.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // The optimizer these options belong to ("SGD", "Adam", ...): messages and state_dict name it.
  virtual const char* optimizer_name() const = 0;
  // Throws tandem::Error naming the first invalid option (betas outside [0, 1), ...), the
  // learning rate aside: check() adds it.
  virtual void validate() const = 0;
  // validate(), and a finite learning rate, not negative where the options are new (given to a
  // constructor or add_param_group), as PyTorch checks it. At a step or a load it may be
  // negative, as PyTorch lets it be: LinearLR down to an end_factor of 0 rounds to -2e-18.
  void check(bool new_options) const;
  // Every hyperparameter as a JSON object, and back: the metadata of Optimizer::state_dict().
  // from_json throws tandem::Error naming a missing or mistyped field.
  virtual void to_json(nlohmann::json& out) const = 0;
  virtual void from_json(const nlohmann::json& in) = 0;
};

// What an optimizer remembers about one parameter between steps (momentum buffer, moments).
class OptimizerParamState {
 public:
  virtual ~OptimizerParamState() = default;
  virtual std::unique_ptr<OptimizerParamState> clone() const = 0;  // deep: tensors are cloned
  // Adds copies of the state's tensors as "<prefix><name>" (prefix is "state.<param index>.").
  virtual void save(StateDict& out, const std::string& prefix) const = 0;
  // Reads what save() wrote, checked against `param` (shape) and converted to its dtype and device.
  // Returns how many tensors it read, so the optimizer can reject tensors that nothing reads.
  virtual size_t load(const StateDict& in, const std::string& prefix, const Tensor& param) = 0;
  // Moves the state's tensors to `param`'s device and dtype where they differ: Module::to moves a
  // parameter in place, and its state follows at the next step.
  virtual void follow(const Tensor& param) = 0;
};

// A set of parameters that share hyperparameters. A group built without options takes the
// optimizer's defaults when it joins the optimizer.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params);  // implicit, as in LibTorch: {tensors} is a group
  OptimizerParamGroup(std::vector<Tensor> params, const OptimizerOptions& options);
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options);
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

  // The lr the first scheduler attached to this group started from (PyTorch's group["initial_lr"]):
  // a second scheduler on the same optimizer takes its base lr from here, not from the lr the
  // first one has already changed.
  std::optional<double> initial_lr() const { return initial_lr_; }
  void set_initial_lr(std::optional<double> lr) { initial_lr_ = lr; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  std::optional<double> initial_lr_;
};

class Optimizer {
 public:
  // Re-evaluates the model and returns the loss, for optimizers that need it more than once a step.
  using LossClosure = std::function<Tensor()>;

  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  // Appends a group; its options, if any, must be this optimizer's kind and valid. A parameter
  // may belong to one group only.
  void add_param_group(const OptimizerParamGroup& group);

  // Resets every parameter's gradient: to undefined (the default, as in PyTorch 2), or to zeros.
  void zero_grad(bool set_to_none = true);

  // One update of every parameter whose grad() is defined, under no-grad. With a closure, the
  // closure runs first (with grad mode on) and its loss is returned; otherwise the result is undefined.
  // LBFGS, which calls its closure several times a step, overrides it.
  virtual Tensor step(LossClosure closure = nullptr);

  std::vector<OptimizerParamGroup>& param_groups() { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const { return param_groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  OptimizerOptions& defaults() { return *defaults_; }
  // All parameters, group after group: the order of the indices in state_dict().
  std::vector<Tensor> parameters() const;
  size_t size() const;  // the number of parameters

  // Per-parameter state, keyed by the parameter's TensorImpl (present once a step has touched it).
  const std::unordered_map<const TensorImpl*, std::unique_ptr<OptimizerParamState>>& state() const { return state_; }
  const OptimizerParamState* state_of(const Tensor& param) const;

  // A snapshot (copies, not views) of the state and of every group's hyperparameters: tensors
  // "state.<param index>.<name>", metadata "optimizer" (the kind) and "param_groups" (JSON: each
  // group's options, its parameters' indices and shapes). load_state_dict checks that the kind,
  // the groups and the parameters' count and shapes match, then takes the state and the
  // hyperparameters (lr included); on any mismatch it throws and changes nothing.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state);

 protected:
  Optimizer(std::vector<OptimizerParamGroup> param_groups, std::unique_ptr<OptimizerOptions> defaults);

  // The update itself, for every parameter whose grad() is defined (the others are skipped);
  // runs under no-grad, after step() checked that each gradient matches its parameter.
  virtual void update() = 0;
  // An empty state of this optimizer's kind, for load_state_dict to fill.
  virtual std::unique_ptr<OptimizerParamState> make_param_state() const = 0;

  // Where the state of `param` lives: null until update() creates it.
  std::unique_ptr<OptimizerParamState>& state_slot(const Tensor& param) { return state_[param.impl_ptr().get()]; }

  // Before a step changes anything: every group's options are valid (set_lr and options() can
  // change them after they were checked), and every defined gradient has its parameter's shape,
  // dtype and device.
  void check_step() const;
  void move_state_to_parameters();

 private:

  std::vector<OptimizerParamGroup> param_groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, std::unique_ptr<OptimizerParamState>> state_;
};

namespace detail {
// Helpers for OptimizerParamState::load: the tensor `key` of `in`, which must have `param`'s shape,
// as a new tensor of param's dtype and device; and a 0-dim counter as an integer.
Tensor load_like_param(const StateDict& in, const std::string& key, const Tensor& param);
// `state`, if defined and not on `param`'s device or of its dtype, converted to them.
void follow_param(Tensor& state, const Tensor& param);
int64_t load_count(const StateDict& in, const std::string& key);
// A 0-dim state number kept in float32, as PyTorch keeps NAdam's mu_product and ASGD's eta and mu.
float load_float32(const StateDict& in, const std::string& key);
// PyTorch's lerp_, addcmul_ and addcdiv_ as the op-by-op steps use them: self.lerp_(end, weight)
// with torch.lerp's formula, whose two branches keep the result exact at both ends of the weight;
// self += (value * a) * b; self += (value * a) / b. Each is one op: for float16 and bfloat16 it is
// computed in float32 and rounded once, as PyTorch's (in their own dtype each product would be
// rounded too); float32 and float64 keep the roundings the fused steps match bit for bit.
void lerp_(Tensor& self, const Tensor& end, double weight);
void addcmul_(Tensor& self, const Tensor& a, const Tensor& b, double value);
void addcdiv_(Tensor& self, const Tensor& a, const Tensor& b, double value);
// Reads field `name` of a JSON object as T, or throws tandem::Error naming `who` and the field.
double json_double(const nlohmann::json& in, const char* who, const char* name);
bool json_bool(const nlohmann::json& in, const char* who, const char* name);
// A boolean option added later: false where a state saved before it has no field.
bool json_bool_or_false(const nlohmann::json& in, const char* who, const char* name);
// An option that may be unset: null or no field (a state saved before it) reads as unset.
std::optional<bool> json_optional_bool(const nlohmann::json& in, const char* who, const char* name);
int64_t json_int(const nlohmann::json& in, const char* who, const char* name);
// An option that is a list of two numbers ("betas", "etas", ...), naming `who` if it is not.
std::tuple<double, double> json_pair(const nlohmann::json& in, const char* who, const char* name);
// Throws naming `who` and the option unless v is finite and not negative (NaN included).
void check_non_negative(const char* who, const char* name, double v);
// A copy of a state tensor, or undefined where it is (a buffer an option has not made yet).
Tensor clone_if_defined(const Tensor& t);
// The Adam family's checks of betas (in [0, 1)), eps and weight_decay (finite, not negative),
// naming `who`.
void check_betas_eps_weight_decay(const char* who, std::tuple<double, double> betas, double eps, double weight_decay);
}  // namespace detail

}  // namespace tandem::optim
