// Stochastic weight averaging and exponential moving averages of a model's weights, as PyTorch's
// torch.optim.swa_utils: AveragedModel keeps the running average of a model's parameters (and,
// with use_buffers, of its buffers); update_bn recomputes BatchNorm statistics for averaged
// weights; SWALR (nn/optim/lr_scheduler.h) is the learning rate to train with meanwhile.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "nn/data/dataloader.h"
#include "nn/module.h"
#include "nn/optim/lr_scheduler.h"

namespace tandem::optim::swa_utils {

using optim::SWALR;

// How an average takes in the model's current value, as PyTorch's avg_fn: the new average, given
// the number of values averaged so far (at least 1: the first update copies), which
// update_parameters writes into the averaged tensor (an integer one, a BatchNorm's count with
// use_buffers, truncating a floating result, as PyTorch's copy_ does).
using AverageFn = std::function<Tensor(const Tensor& averaged, const Tensor& current, int64_t n_averaged)>;
// The running mean: averaged + (current - averaged) / (n + 1), AveragedModel's default (the
// formula of PyTorch's default on CPUs; its GPU default lerps, which may round differently).
AverageFn get_swa_avg_fn();
// decay * averaged + (1 - decay) * current, decay in [0, 1].
AverageFn get_ema_avg_fn(double decay = 0.999);
// The same averages as torch.lerp computes them: lerp(averaged, current, 1 / (n + 1)) with the
// weight in float32 (PyTorch divides by the int64 count tensor), and lerp(averaged, current,
// 1 - decay): the forms of PyTorch's get_*_multi_avg_fn.
AverageFn get_swa_multi_avg_fn();
AverageFn get_ema_multi_avg_fn(double decay = 0.999);

// A copy of `model` (on `device` if given) whose parameters are the average of the values
// update_parameters() has seen; forward runs the copy. Without use_buffers the copy's buffers
// follow the model's at each update (run update_bn before evaluating a model with BatchNorm);
// with it, buffers are averaged too. Its state_dict holds "n_averaged" (how many updates it has
// taken) and the copy's under "module.".
class AveragedModelImpl : public nn::Cloneable<AveragedModelImpl> {
 public:
  explicit AveragedModelImpl(const std::shared_ptr<nn::Module>& model, std::optional<Device> device = std::nullopt,
                             AverageFn avg_fn = nullptr, bool use_buffers = false);
  template <typename Holder>
    requires requires(Holder h) { h.ptr(); }
  explicit AveragedModelImpl(const Holder& model, std::optional<Device> device = std::nullopt,
                             AverageFn avg_fn = nullptr, bool use_buffers = false)
      : AveragedModelImpl(std::static_pointer_cast<nn::Module>(model.ptr()), device, std::move(avg_fn),
                          use_buffers) {}

  Tensor forward(const Tensor& x) override { return module->forward(x); }
  // Takes in model's current parameters (and buffers): copied at the first update, averaged
  // after. The model must have the copy's structure (as many tensors, of the same shapes); if
  // it has not, nothing changes (an avg_fn that throws midway leaves the tensors before it
  // averaged, and the count as it was).
  void update_parameters(const nn::Module& model);
  template <typename Holder>
    requires requires(Holder h) { h.ptr(); }
  void update_parameters(const Holder& model) {
    update_parameters(*model.ptr());
  }
  int64_t averaged_count() const;

  std::shared_ptr<nn::Module> module;
  Tensor n_averaged;  // int64, 0-dim
  AverageFn avg_fn;
  bool use_buffers;

  void reset() override;  // a fresh copy of `module`, as clone() needs
};

class AveragedModel : public nn::ModuleHolder<AveragedModelImpl> {
 public:
  using ModuleHolder::ModuleHolder;
};

// Recomputes the running statistics of every BatchNorm in `model` from one pass over `inputs`
// (each moved to `device` if given): each is reset, then given the cumulative average of the
// batches' statistics (momentum none), in training mode; the momenta are restored after, and every
// module is set to the mode the model itself was in (model.train(was_training)), as PyTorch does.
// A model without BatchNorm is not run.
void update_bn(const std::vector<Tensor>& inputs, nn::Module& model, std::optional<Device> device = std::nullopt);
// The same over a loader's batches (their data).
void update_bn(data::DataLoader& loader, nn::Module& model, std::optional<Device> device = std::nullopt);

}  // namespace tandem::optim::swa_utils
