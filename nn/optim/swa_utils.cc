#include "nn/optim/swa_utils.h"

#include <utility>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "kernels/factory.h"
#include "nn/layers.h"
#include "nn/optim/optimizer.h"

namespace tandem::optim::swa_utils {

namespace {

void check_decay(double decay) {
  TD_CHECK(decay >= 0 && decay <= 1, "swa_utils: invalid decay = ", decay, " (must be in [0, 1])");
}

// averaged moved towards current by `weight` with torch.lerp's rounding.
Tensor lerped(const Tensor& averaged, const Tensor& current, double weight) {
  Tensor out = averaged.clone();
  detail::lerp_(out, current, weight);
  return out;
}

}  // namespace

AverageFn get_swa_avg_fn() {
  return [](const Tensor& averaged, const Tensor& current, int64_t n) {
    return averaged + (current - averaged) / static_cast<double>(n + 1);
  };
}

AverageFn get_ema_avg_fn(double decay) {
  check_decay(decay);
  return [decay](const Tensor& averaged, const Tensor& current, int64_t) {
    return averaged * decay + current * (1 - decay);
  };
}

// Integer tensors take the single-tensor formulas (PyTorch's multi-tensor SWA refuses them).
AverageFn get_swa_multi_avg_fn() {
  return [](const Tensor& averaged, const Tensor& current, int64_t n) {
    if (!averaged.is_floating_point()) return get_swa_avg_fn()(averaged, current, n);
    return lerped(averaged, current, static_cast<double>(1.0f / static_cast<float>(n + 1)));
  };
}

AverageFn get_ema_multi_avg_fn(double decay) {
  check_decay(decay);
  return [decay](const Tensor& averaged, const Tensor& current, int64_t n) {
    if (!averaged.is_floating_point()) return get_ema_avg_fn(decay)(averaged, current, n);
    return lerped(averaged, current, 1 - decay);
  };
}

AveragedModelImpl::AveragedModelImpl(const std::shared_ptr<nn::Module>& model, std::optional<Device> device,
                                     AverageFn avg_fn_, bool use_buffers_)
    : module(model), avg_fn(avg_fn_ ? std::move(avg_fn_) : get_swa_avg_fn()), use_buffers(use_buffers_) {
  TD_CHECK(model != nullptr, "AveragedModel: the model is empty");
  reset();
  if (device) to(*device);
}

// A fresh copy of `module` (the model at construction, the original's copy when cloned).
void AveragedModelImpl::reset() {
  module = register_module("module", module->clone());
  n_averaged = register_buffer("n_averaged", zeros({}, kInt64));
}

int64_t AveragedModelImpl::averaged_count() const { return n_averaged.item<int64_t>(); }

void AveragedModelImpl::update_parameters(const nn::Module& model) {
  const auto tensors_of = [this](const nn::Module& m) {
    std::vector<Tensor> out = m.parameters();
    if (use_buffers) {
      for (const Tensor& b : m.buffers()) out.push_back(b);
    }
    return out;
  };
  std::vector<Tensor> mine = tensors_of(*module);
  const std::vector<Tensor> theirs = tensors_of(model);
  const std::vector<Tensor> my_buffers = use_buffers ? std::vector<Tensor>{} : module->buffers();
  const std::vector<Tensor> their_buffers = use_buffers ? std::vector<Tensor>{} : model.buffers();
  // Everything is checked before anything is written.
  const auto check_pairs = [](const std::vector<Tensor>& a, const std::vector<Tensor>& b, const char* what) {
    TD_CHECK(a.size() == b.size(), "AveragedModel.update_parameters: the averaged copy has ", a.size(), " ", what,
             " but the model has ", b.size(), "; it must be the model the AveragedModel was made from");
    for (size_t i = 0; i < a.size(); ++i) {
      TD_CHECK(a[i].sizes() == b[i].sizes(), "AveragedModel.update_parameters: ", what, " ", i, " has shape ",
               shape_str(b[i].sizes()), " in the model but ", shape_str(a[i].sizes()), " in the averaged copy");
    }
  };
  check_pairs(mine, theirs, use_buffers ? "parameters and buffers" : "parameters");
  check_pairs(my_buffers, their_buffers, "buffers");

  NoGradGuard no_grad;
  const int64_t n = averaged_count();
  for (size_t i = 0; i < mine.size(); ++i) {
    const Tensor current = theirs[i].detach().to(mine[i].device());
    Tensor averaged = mine[i].detach();
    averaged.copy_(n == 0 ? current : avg_fn(averaged, current, n));
  }
  for (size_t i = 0; i < my_buffers.size(); ++i) {
    Tensor buffer = my_buffers[i].detach();
    buffer.copy_(their_buffers[i].detach().to(buffer.device()));
  }
  n_averaged.add_(1);
}

namespace {

// Runs `for_each_input(forward)` with every BatchNorm reset and averaging cumulatively, in training
// mode; restores the momenta and the mode after, also when a forward throws.
void recompute_batch_norm(nn::Module& model, const std::function<void(const std::function<void(const Tensor&)>&)>&
                                                  for_each_input,
                          std::optional<Device> device) {
  std::vector<std::pair<nn::AnyBatchNorm*, std::optional<double>>> momenta;
  for (const auto& m : model.modules()) {
    if (auto* bn = dynamic_cast<nn::AnyBatchNorm*>(m.get())) momenta.emplace_back(bn, bn->momentum());
  }
  if (momenta.empty()) return;
  for (auto& [bn, momentum] : momenta) bn->reset_running_stats();
  const bool was_training = model.is_training();
  struct Restore {
    ~Restore() {
      for (auto& [bn, momentum] : momenta) bn->momentum() = momentum;
      model.train(was_training);
    }
    std::vector<std::pair<nn::AnyBatchNorm*, std::optional<double>>>& momenta;
    nn::Module& model;
    bool was_training;
  } restore{momenta, model, was_training};
  model.train();
  for (auto& [bn, momentum] : momenta) bn->momentum() = std::nullopt;
  NoGradGuard no_grad;
  for_each_input([&](const Tensor& input) { model.forward(device ? input.to(*device) : input); });
}

}  // namespace

void update_bn(const std::vector<Tensor>& inputs, nn::Module& model, std::optional<Device> device) {
  recompute_batch_norm(
      model, [&](const auto& forward) {
        for (const Tensor& input : inputs) forward(input);
      },
      device);
}

void update_bn(data::DataLoader& loader, nn::Module& model, std::optional<Device> device) {
  recompute_batch_norm(
      model, [&](const auto& forward) {
        for (const data::Example& batch : loader) forward(batch.data);
      },
      device);
}

}  // namespace tandem::optim::swa_utils
