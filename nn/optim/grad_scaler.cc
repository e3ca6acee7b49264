#include "nn/optim/grad_scaler.h"

#include <charconv>
#include <cmath>
#include <map>
#include <string>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"

namespace tandem::amp {

namespace {

// The scale is a float32 number, as PyTorch keeps it in a float32 tensor: every new value is
// rounded to float, and a product that overflows float is not taken.
double as_float(double value) { return static_cast<double>(static_cast<float>(value)); }

void check_growth_factor(double f) { TD_CHECK(f > 1.0, "GradScaler: growth_factor must be > 1, got ", f); }
void check_backoff_factor(double f) {
  TD_CHECK(f > 0.0 && f < 1.0, "GradScaler: backoff_factor must be in (0, 1), got ", f);
}
void check_growth_interval(int64_t n) { TD_CHECK(n > 0, "GradScaler: growth_interval must be positive, got ", n); }

// A number that is finite exactly when every element of g is, in one read of g and no copy: the
// float64 sum of finite float32 or 16-bit values cannot overflow (|sum| <= numel * 3.4e38).
// float64 values can overflow a float64 sum; g * 0 is 0 exactly where g is finite.
Tensor nonfinite_witness(const Tensor& g) { return g.dtype() == kFloat64 ? (g * 0.0).sum() : g.sum(kFloat64); }

std::string shortest(double v) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, end);
}

template <typename T>
T parse(const StateDict& state, const char* key) {
  auto it = state.metadata.find(key);
  TD_CHECK(it != state.metadata.end(), "GradScaler::load_state_dict: the state has no \"", key, "\"");
  T value{};
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  TD_CHECK(ec == std::errc() && end == text.data() + text.size(), "GradScaler::load_state_dict: \"", key,
           "\" is not a number: \"", text, "\"");
  return value;
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options), scale_(as_float(options.init_scale)) {
  TD_CHECK(std::isfinite(scale_) && scale_ > 0, "GradScaler: init_scale must be a positive float, got ",
           options.init_scale);
  check_growth_factor(options.growth_factor);
  check_backoff_factor(options.backoff_factor);
  check_growth_interval(options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& outputs) const {
  if (!options_.enabled) return outputs;
  TD_CHECK(outputs.defined() && is_floating(outputs.dtype()), "GradScaler::scale: expected a floating tensor, got ",
           outputs.defined() ? dtype_name(outputs.dtype()) : "an undefined tensor");
  // A 0-dim float32 factor, as PyTorch's: a 0-dim 16-bit loss is promoted to float32 (65536 times
  // a float16 loss of 1 or more would be inf), a loss with dims keeps its dtype.
  return outputs * full({}, scale_, TensorOptions(kFloat32).device(outputs.device()));
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) const {
  std::vector<Tensor> scaled;
  scaled.reserve(outputs.size());
  for (const Tensor& t : outputs) scaled.push_back(scale(t));
  return scaled;
}

void GradScaler::unscale_(optim::Optimizer& optimizer, bool allow_fp16) {
  if (!options_.enabled) return;
  auto it = per_optimizer_.find(&optimizer);
  if (it != per_optimizer_.end()) {
    TD_CHECK(it->second.stage != Stage::kUnscaled,
             "GradScaler::unscale_: already called on this optimizer since the last update()");
    TD_CHECK(it->second.stage != Stage::kStepped, "GradScaler::unscale_: called after step(); call update() first");
  }
  std::vector<Tensor> grads;
  for (const Tensor& p : optimizer.parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    TD_CHECK(allow_fp16 || g.dtype() != kFloat16, "GradScaler::unscale_: a parameter of shape ", shape_str(p.sizes()),
             " has a float16 gradient, whose unscaled values may underflow: keep parameters in float32 and let ",
             "autocast cast them");
    grads.push_back(g);
  }
  // One witness per device, read once: the only wait of an unscale.
  std::map<Device, Tensor> witness;
  NoGradGuard no_grad;
  for (const Tensor& g : grads) {
    Tensor w = nonfinite_witness(g);
    auto [entry, fresh] = witness.try_emplace(g.device(), w);
    if (!fresh) entry->second = entry->second + w;
  }
  bool found_inf = false;
  for (const auto& [device, w] : witness) found_inf = found_inf || !std::isfinite(w.item<double>());
  const double inv_scale = static_cast<double>(static_cast<float>(1.0 / scale_));
  for (Tensor& g : grads) g.mul_(inv_scale);
  per_optimizer_[&optimizer] = PerOptimizer{Stage::kUnscaled, found_inf, !grads.empty()};
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  auto it = per_optimizer_.find(&optimizer);
  TD_CHECK(it == per_optimizer_.end() || it->second.stage != Stage::kStepped,
           "GradScaler::step: already called on this optimizer since the last update()");
  if (it == per_optimizer_.end() || it->second.stage == Stage::kReady) unscale_(optimizer);
  PerOptimizer& state = per_optimizer_.at(&optimizer);
  // As PyTorch: a step with nothing checked is a mistake (backward did not reach the parameters).
  TD_CHECK(state.checked, "GradScaler::step: none of the optimizer's parameters has a gradient to check");
  const bool stepped = !state.found_inf;
  if (stepped) optimizer.step();
  state.stage = Stage::kStepped;
  return stepped;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!options_.enabled) return;
  if (new_scale) {
    const double s = as_float(*new_scale);
    TD_CHECK(std::isfinite(s) && s > 0, "GradScaler::update: new_scale must be a positive float, got ", *new_scale);
    scale_ = s;
  } else {
    bool checked = false, found_inf = false;
    for (const auto& [optimizer, state] : per_optimizer_) {
      checked = checked || state.checked;
      found_inf = found_inf || state.found_inf;
    }
    TD_CHECK(checked, "GradScaler::update: no gradient was checked (by step() or unscale_()) since the last update()");
    if (found_inf) {
      scale_ = as_float(scale_ * options_.backoff_factor);
      growth_tracker_ = 0;
    } else if (++growth_tracker_ >= options_.growth_interval) {  // >=: the interval may have been lowered
      const double grown = as_float(scale_ * options_.growth_factor);
      if (std::isfinite(grown)) scale_ = grown;
      growth_tracker_ = 0;
    }
  }
  per_optimizer_.clear();
}

double GradScaler::get_scale() const { return options_.enabled ? scale_ : 1.0; }

void GradScaler::set_growth_factor(double factor) {
  check_growth_factor(factor);
  options_.growth_factor = factor;
}

void GradScaler::set_backoff_factor(double factor) {
  check_backoff_factor(factor);
  options_.backoff_factor = factor;
}

void GradScaler::set_growth_interval(int64_t interval) {
  check_growth_interval(interval);
  options_.growth_interval = interval;
}

StateDict GradScaler::state_dict() const {
  StateDict state;
  if (!options_.enabled) return state;
  state.metadata["scale"] = shortest(scale_);
  state.metadata["growth_factor"] = shortest(options_.growth_factor);
  state.metadata["backoff_factor"] = shortest(options_.backoff_factor);
  state.metadata["growth_interval"] = std::to_string(options_.growth_interval);
  state.metadata["_growth_tracker"] = std::to_string(growth_tracker_);
  return state;
}

void GradScaler::load_state_dict(const StateDict& state) {
  if (!options_.enabled) return;  // as PyTorch: a disabled scaler keeps nothing
  TD_CHECK(!state.metadata.empty(), "GradScaler::load_state_dict: the state is empty (saved from a disabled scaler?)");
  const double scale = parse<double>(state, "scale");
  const double growth = parse<double>(state, "growth_factor");
  const double backoff = parse<double>(state, "backoff_factor");
  const int64_t interval = parse<int64_t>(state, "growth_interval");
  const int64_t tracker = parse<int64_t>(state, "_growth_tracker");
  TD_CHECK(std::isfinite(scale) && scale > 0 && as_float(scale) == scale,
           "GradScaler::load_state_dict: scale must be a positive float, got ", scale);
  check_growth_factor(growth);
  check_backoff_factor(backoff);
  check_growth_interval(interval);
  TD_CHECK(tracker >= 0, "GradScaler::load_state_dict: _growth_tracker must not be negative, got ", tracker);
  scale_ = scale;
  options_.growth_factor = growth;
  options_.backoff_factor = backoff;
  options_.growth_interval = interval;
  growth_tracker_ = tracker;
}

}  // namespace tandem::amp
