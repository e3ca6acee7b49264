#include "nn/optim/lbfgs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <utility>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::optim {

// ---- options ----

LBFGSOptions::LBFGSOptions(double lr) : lr_(lr) {}

void LBFGSOptions::validate() const {
  TD_CHECK(max_iter_ > 0, "LBFGS: max_iter must be positive, got ", max_iter_);
  TD_CHECK(!max_eval_ || *max_eval_ > 0, "LBFGS: max_eval must be positive, got ", max_eval_.value_or(0));
  TD_CHECK(history_size_ > 0, "LBFGS: history_size must be positive, got ", history_size_);
  detail::check_non_negative("LBFGS", "tolerance_grad", tolerance_grad_);
  detail::check_non_negative("LBFGS", "tolerance_change", tolerance_change_);
  TD_CHECK(!line_search_fn_ || *line_search_fn_ == "strong_wolfe",
           "LBFGS: line_search_fn must be unset or \"strong_wolfe\", got \"", line_search_fn_.value_or(""), "\"");
}

void LBFGSOptions::to_json(nlohmann::json& out) const {
  out["lr"] = lr_;
  out["max_iter"] = max_iter_;
  out["max_eval"] = max_eval();
  out["tolerance_grad"] = tolerance_grad_;
  out["tolerance_change"] = tolerance_change_;
  out["history_size"] = history_size_;
  out["line_search_fn"] = line_search_fn_ ? nlohmann::json(*line_search_fn_) : nlohmann::json(nullptr);
  out["maximize"] = maximize_;
}

void LBFGSOptions::from_json(const nlohmann::json& in) {
  lr_ = detail::json_double(in, "LBFGS", "lr");
  max_iter_ = detail::json_int(in, "LBFGS", "max_iter");
  max_eval_ = detail::json_int(in, "LBFGS", "max_eval");
  tolerance_grad_ = detail::json_double(in, "LBFGS", "tolerance_grad");
  tolerance_change_ = detail::json_double(in, "LBFGS", "tolerance_change");
  history_size_ = detail::json_int(in, "LBFGS", "history_size");
  const auto search = in.find("line_search_fn");
  TD_CHECK(search != in.end() && (search->is_null() || search->is_string()),
           "LBFGS: option 'line_search_fn' must be null or a string");
  line_search_fn_ = search->is_null() ? std::nullopt : std::optional<std::string>(search->get<std::string>());
  maximize_ = detail::json_bool(in, "LBFGS", "maximize");
}

// ---- state ----

std::unique_ptr<OptimizerParamState> LBFGSParamState::clone() const {
  auto out = std::make_unique<LBFGSParamState>(*this);
  out->d = detail::clone_if_defined(d);
  out->prev_flat_grad = detail::clone_if_defined(prev_flat_grad);
  for (auto* history : {&out->old_dirs, &out->old_stps}) {
    for (Tensor& v : *history) v = v.clone();
  }
  return out;
}

void LBFGSParamState::save(StateDict& out, const std::string& prefix) const {
  out.insert(prefix + "func_evals", tensor(func_evals));
  out.insert(prefix + "n_iter", tensor(n_iter));
  out.insert(prefix + "t", full({}, t, kFloat64));
  out.insert(prefix + "H_diag", full({}, h_diag, kFloat64));
  out.insert(prefix + "prev_loss", full({}, prev_loss, kFloat64));
  if (d.defined()) out.insert(prefix + "d", d.clone());
  if (prev_flat_grad.defined()) out.insert(prefix + "prev_flat_grad", prev_flat_grad.clone());
  if (!ro.empty()) out.insert(prefix + "ro", tensor(ro));
  for (size_t i = 0; i < old_dirs.size(); ++i) {
    out.insert(prefix + "old_dirs." + std::to_string(i), old_dirs[i].clone());
    out.insert(prefix + "old_stps." + std::to_string(i), old_stps[i].clone());
  }
}

namespace {

// A flat vector of the state: `numel` floating values, as a new tensor of param's dtype and device.
Tensor load_flat(const StateDict& in, const std::string& key, const Tensor& param, int64_t numel) {
  const Tensor& saved = in.at(key);
  TD_CHECK(saved.sizes() == Shape{numel}, "load_state_dict: '", key, "' has shape ", shape_str(saved.sizes()),
           " but the parameters have ", numel, " elements in all");
  TD_CHECK(saved.is_floating_point(), "load_state_dict: '", key, "' has dtype ", saved.dtype(),
           "; optimizer state is floating-point");
  return saved.to(param.device(), param.dtype()).clone();
}

double load_number(const StateDict& in, const std::string& key) {
  const Tensor& saved = in.at(key);
  TD_CHECK(saved.numel() == 1, "load_state_dict: '", key, "' must hold one number, it has shape ",
           shape_str(saved.sizes()));
  return saved.item().to_double();
}

}  // namespace

size_t LBFGSParamState::load(const StateDict& in, const std::string& prefix, const Tensor& param) {
  func_evals = detail::load_count(in, prefix + "func_evals");
  n_iter = detail::load_count(in, prefix + "n_iter");
  t = load_number(in, prefix + "t");
  h_diag = load_number(in, prefix + "H_diag");
  prev_loss = load_number(in, prefix + "prev_loss");
  size_t read = 5;
  for (auto [name, slot] : {std::pair{"d", &d}, std::pair{"prev_flat_grad", &prev_flat_grad}}) {
    if (!in.contains(prefix + name)) continue;
    *slot = load_flat(in, prefix + name, param, numel);
    ++read;
  }
  ro.clear();
  old_dirs.clear();
  old_stps.clear();
  if (in.contains(prefix + "ro")) {
    const Tensor& saved = in.at(prefix + "ro");
    TD_CHECK(saved.dim() == 1, "load_state_dict: '", prefix, "ro' must be a vector, it has shape ",
             shape_str(saved.sizes()));
    const Tensor host = saved.to(Device(kCPU), kFloat64).contiguous();
    ro.assign(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
    ++read;
  }
  for (size_t i = 0; i < ro.size(); ++i) {
    old_dirs.push_back(load_flat(in, prefix + "old_dirs." + std::to_string(i), param, numel));
    old_stps.push_back(load_flat(in, prefix + "old_stps." + std::to_string(i), param, numel));
    read += 2;
  }
  return read;
}

void LBFGSParamState::follow(const Tensor& param) {
  detail::follow_param(d, param);
  detail::follow_param(prev_flat_grad, param);
  for (auto* history : {&old_dirs, &old_stps}) {
    for (Tensor& v : *history) detail::follow_param(v, param);
  }
}

// ---- the line search ----

namespace {

double dot_value(const Tensor& a, const Tensor& b) { return (a * b).sum().item<double>(); }

// The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, held within
// `bounds` (the interval between x1 and x2 unless given); the bounds' middle where the cubic has
// no minimum.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [low, high] = bounds ? *bounds : (x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (!(d2_square >= 0)) return (low + high) / 2.0;
  const double d2 = std::sqrt(d2_square);
  const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                  : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(min_pos, low), high);
}

struct LineSearchEnd {
  double loss;
  Tensor flat_grad;
  double step;
  int64_t evaluations;
};

// A step along `direction` (from loss f, gradient g and slope gtd at step 0) that satisfies the
// strong Wolfe conditions: enough decrease (c1) and a slope at most c2 of the first one's. The
// bracketing phase grows the step by cubic interpolation until an interval holds such a point;
// the zoom phase shrinks that interval. At most max_evaluations calls of `at`.
LineSearchEnd strong_wolfe(const std::function<std::pair<double, Tensor>(double)>& at, double t,
                           const Tensor& direction, double f, const Tensor& g, double gtd, int64_t max_evaluations) {
  constexpr double c1 = 1e-4, c2 = 0.9, tolerance_change = 1e-9;  // PyTorch's: LBFGS passes none of them
  const double d_norm = direction.abs().max().item<double>();
  auto [f_new, g_new] = at(t);
  int64_t evaluations = 1;
  double gtd_new = dot_value(g_new, direction);

  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int64_t iterations = 0;
  // The interval's ends (or its one point, once found): step, loss, gradient and slope at each.
  std::array<double, 2> bracket{}, bracket_f{}, bracket_gtd{};
  std::array<Tensor, 2> bracket_g;
  auto hold_interval = [&] {
    bracket = {t_prev, t};
    bracket_f = {f_prev, f_new};
    bracket_g = {g_prev, g_new};
    bracket_gtd = {gtd_prev, gtd_new};
  };
  while (iterations < max_evaluations) {
    if (f_new > f + c1 * t * gtd || (iterations > 1 && f_new >= f_prev)) {
      hold_interval();
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {t, t};
      bracket_f = {f_new, f_new};
      bracket_g = {g_new, g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      hold_interval();
      break;
    }
    const double min_step = t + 0.01 * (t - t_prev), max_step = t * 10, previous = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::pair{min_step, max_step});
    t_prev = previous;
    f_prev = f_new;
    g_prev = g_new;
    gtd_prev = gtd_new;
    std::tie(f_new, g_new) = at(t);
    ++evaluations;
    gtd_new = dot_value(g_new, direction);
    ++iterations;
  }
  if (iterations == max_evaluations) {
    bracket = {0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }

  bool insufficient_progress = false;
  int low = bracket_f[0] <= bracket_f[1] ? 0 : 1, high = 1 - low;
  while (!done && iterations < max_evaluations) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;  // the interval is too small
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    // A point too near an end, twice running or outside, moves a tenth of the interval inside.
    const double top = std::max(bracket[0], bracket[1]), bottom = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (top - bottom);
    if (std::min(top - t, t - bottom) < eps) {
      if (insufficient_progress || t >= top || t <= bottom) {
        t = std::abs(t - top) < std::abs(t - bottom) ? top - eps : bottom + eps;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    std::tie(f_new, g_new) = at(t);
    ++evaluations;
    gtd_new = dot_value(g_new, direction);
    ++iterations;
    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      // Not enough decrease, or no lower than the low end: the new high end.
      bracket[high] = t;
      bracket_f[high] = f_new;
      bracket_g[high] = g_new;
      bracket_gtd[high] = gtd_new;
      std::tie(low, high) = bracket_f[0] <= bracket_f[1] ? std::pair{0, 1} : std::pair{1, 0};
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        bracket[high] = bracket[low];  // the old low end becomes the high one
        bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low];
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t;
      bracket_f[low] = f_new;
      bracket_g[low] = g_new;
      bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], evaluations};
}

}  // namespace

// ---- the optimizer ----

LBFGS::LBFGS(std::vector<Tensor> params, const LBFGSOptions& defaults)
    : LBFGS(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

LBFGS::LBFGS(std::vector<OptimizerParamGroup> param_groups, const LBFGSOptions& defaults)
    : Optimizer(std::move(param_groups), defaults.clone()) {
  TD_CHECK(this->param_groups().size() == 1, "LBFGS: one parameter group only (it has no per-parameter options), got ",
           this->param_groups().size());
  // An unset max_eval is max_iter * 5 / 4 from now on, as PyTorch fixes it at construction.
  for (OptimizerOptions* o : {&this->defaults(), &this->param_groups()[0].options()}) {
    auto& lbfgs = static_cast<LBFGSOptions&>(*o);
    lbfgs.max_eval(lbfgs.max_eval());
  }
}

std::unique_ptr<OptimizerParamState> LBFGS::make_param_state() const {
  return std::make_unique<LBFGSParamState>(numel());
}

void LBFGS::update() { TD_FAIL("LBFGS: step() runs the iterations itself"); }

int64_t LBFGS::numel() const {
  int64_t n = 0;
  for (const auto& p : param_groups()[0].params()) n += p.numel();
  return n;
}

Tensor LBFGS::flat_grad() const {
  std::vector<Tensor> parts;
  for (const auto& p : param_groups()[0].params()) {
    parts.push_back(p.grad().defined() ? p.grad().reshape({-1}) : zeros({p.numel()}, p.options()));
  }
  Tensor flat = cat(parts, 0);
  if (static_cast<const LBFGSOptions&>(param_groups()[0].options()).maximize()) flat = flat.neg();
  return flat;
}

void LBFGS::add_to_params(double step, const Tensor& direction) {
  int64_t offset = 0;
  for (Tensor p : param_groups()[0].params()) {
    p.add_(direction.narrow(0, offset, p.numel()).view(p.sizes()), step);
    offset += p.numel();
  }
}

Tensor LBFGS::run_closure(const LossClosure& closure) {
  Tensor loss;
  {
    AutoGradMode enable(true);
    loss = closure();
  }
  TD_CHECK(loss.defined() && loss.numel() == 1, "LBFGS.step: the closure must return the loss, one number; it gave ",
           loss.defined() ? "a tensor of shape " + shape_str(loss.sizes()) : std::string("an undefined tensor"));
  check_step();
  return loss;
}

double LBFGS::objective(const Tensor& loss) const {
  const double value = loss.item<double>();
  return static_cast<const LBFGSOptions&>(param_groups()[0].options()).maximize() ? -value : value;
}

std::pair<double, Tensor> LBFGS::evaluate_along(const LossClosure& closure, const std::vector<Tensor>& origin,
                                                double step, const Tensor& direction) {
  add_to_params(step, direction);
  const double loss = objective(run_closure(closure));
  Tensor flat = flat_grad();
  for (size_t i = 0; i < origin.size(); ++i) Tensor(param_groups()[0].params()[i]).copy_(origin[i]);
  return {loss, flat};
}

// torch/optim/lbfgs.py, LBFGS.step.
Tensor LBFGS::step(LossClosure closure) {
  TD_CHECK(closure != nullptr, "LBFGS.step: L-BFGS evaluates the model several times a step; give step() a closure ",
           "that zeroes the gradients, computes the loss, calls backward() and returns the loss");
  TD_CHECK(param_groups().size() == 1, "LBFGS: one parameter group only (it has no per-parameter options), got ",
           param_groups().size());
  const auto& params = param_groups()[0].params();
  for (size_t i = 1; i < params.size(); ++i) {
    TD_CHECK(params[i].device() == params[0].device() && params[i].dtype() == params[0].dtype(),
             "LBFGS: every parameter must share one device and dtype: parameter 0 is ", params[0].dtype(), " on ",
             params[0].device(), ", parameter ", i, " is ", params[i].dtype(), " on ", params[i].device());
  }
  check_step();
  NoGradGuard no_grad;
  move_state_to_parameters();
  const auto& o = static_cast<const LBFGSOptions&>(param_groups()[0].options());
  auto& slot = state_slot(params[0]);
  if (!slot) slot = make_param_state();
  auto& state = static_cast<LBFGSParamState&>(*slot);

  // The first evaluation, whose loss step() returns.
  const Tensor first_loss = run_closure(closure);
  double loss = objective(first_loss);
  int64_t current_evals = 1;
  state.func_evals += 1;
  Tensor flat = flat_grad();
  auto optimal = [&](const Tensor& g) { return g.abs().max().item<double>() <= o.tolerance_grad(); };
  bool opt_cond = optimal(flat);
  if (opt_cond) return first_loss;

  Tensor& d = state.d;
  double& t = state.t;
  for (int64_t n_iter = 1; n_iter <= o.max_iter(); ++n_iter) {
    ++state.n_iter;
    // The direction: the steepest descent first, then the L-BFGS two-loop recursion over the
    // curvature pairs kept (a pair joins only where y.s > 1e-10, keeping the estimate positive).
    if (state.n_iter == 1) {
      d = flat.neg();
      state.old_dirs.clear();
      state.old_stps.clear();
      state.ro.clear();
      state.h_diag = 1;
    } else {
      const Tensor y = flat.sub(state.prev_flat_grad), s = d.mul(t);
      const double ys = dot_value(y, s);
      if (ys > 1e-10) {
        if (static_cast<int64_t>(state.old_dirs.size()) == o.history_size()) {
          state.old_dirs.erase(state.old_dirs.begin());
          state.old_stps.erase(state.old_stps.begin());
          state.ro.erase(state.ro.begin());
        }
        state.old_dirs.push_back(y);
        state.old_stps.push_back(s);
        state.ro.push_back(1.0 / ys);
        state.h_diag = ys / dot_value(y, y);  // the initial inverse Hessian's scale
      }
      const size_t kept = state.old_dirs.size();
      std::vector<double> al(kept);
      Tensor q = flat.neg();
      for (size_t i = kept; i-- > 0;) {
        al[i] = dot_value(state.old_stps[i], q) * state.ro[i];
        q.add_(state.old_dirs[i], -al[i]);
      }
      d = q.mul(state.h_diag);
      for (size_t i = 0; i < kept; ++i) {
        const double be_i = dot_value(state.old_dirs[i], d) * state.ro[i];
        d.add_(state.old_stps[i], al[i] - be_i);
      }
    }
    state.prev_flat_grad = flat;
    const double prev_loss = loss;
    state.prev_loss = loss;

    // The step: lr (the first ever scaled down to a unit step in the gradient's 1-norm).
    t = state.n_iter == 1 ? std::min(1.0, 1.0 / flat.abs().sum().item<double>()) * o.lr() : o.lr();
    const double gtd = dot_value(flat, d);
    if (gtd > -o.tolerance_change()) break;  // not a descent direction (any more)

    int64_t ls_func_evals = 0;
    if (o.line_search_fn()) {
      std::vector<Tensor> origin;
      for (const Tensor& p : params) origin.push_back(p.clone());
      const LineSearchEnd end = strong_wolfe([&](double step) { return evaluate_along(closure, origin, step, d); }, t,
                                             d, loss, flat, gtd, o.max_eval() - current_evals);
      loss = end.loss;
      flat = end.flat_grad;
      t = end.step;
      ls_func_evals = end.evaluations;
      add_to_params(t, d);
      opt_cond = optimal(flat);
    } else {
      add_to_params(t, d);
      if (n_iter != o.max_iter()) {
        // Re-evaluated for the next iteration only: after the last, the caller's next batch decides.
        loss = objective(run_closure(closure));
        flat = flat_grad();
        opt_cond = optimal(flat);
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    state.func_evals += ls_func_evals;

    if (n_iter == o.max_iter() || current_evals >= o.max_eval() || opt_cond) break;
    if (d.mul(t).abs().max().item<double>() <= o.tolerance_change()) break;  // the step has become too small
    if (std::abs(loss - prev_loss) < o.tolerance_change()) break;            // and so has the progress
  }
  return first_loss;
}

}  // namespace tandem::optim
