// parallel_apply: runs one function per replica, each on its device's persistent worker thread
// (core/device_threads.h), all at once. Each worker takes the caller's grad mode, its current
// GPU streams and an equal share of the intra-op threads. Failures are re-raised once every worker has finished, as
// tandem::Error "in replica i on device d: <what>" (the first failing replica's). A GPU replica's
// kernels are queued, not waited for: a fault inside one surfaces at a later call that waits,
// unless CUDA_LAUNCH_BLOCKING=1 or tracing makes each replica wait for its own work.
#pragma once

#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/device.h"
#include "core/device_timer.h"
#include "core/error.h"
#include "parallel/scatter_gather.h"

namespace tandem::parallel {

// Thrown in a replica that stopped because another failed; parallel_run reports the other.
class ReplicaAborted : public Error {
 public:
  using Error::Error;
};

// Calls fn(i) on the worker of devices[i], with the caller's grad mode and current streams, and
// devices[i]'s GPU the current one for CUDA code of its own; timers (if given) receive each call's time on its
// device (a GPU's is read once its work is done), and a trace (TANDEM_TRACE) shows each call as
// `what` (unless null) on its device's row (while tracing, a GPU worker waits for its work, so
// that its span is the device's). Errors name call i "replica replica_numbers[i]" (default: i).
void parallel_run(const std::vector<Device>& devices, const std::function<void(size_t)>& fn,
                  std::vector<DeviceTimer>* timers = nullptr, const char* what = "forward",
                  const std::vector<size_t>& replica_numbers = {});

template <typename F>
auto parallel_apply(const std::vector<Device>& devices, F&& fn, std::vector<DeviceTimer>* timers = nullptr,
                    const char* what = "forward", const std::vector<size_t>& replica_numbers = {}) {
  using R = std::invoke_result_t<F&, size_t>;
  std::vector<std::optional<R>> results(devices.size());
  parallel_run(devices, [&](size_t i) { results[i].emplace(fn(i)); }, timers, what, replica_numbers);
  std::vector<R> out;
  out.reserve(results.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

// LibTorch's form (torch::nn::parallel::parallel_apply): modules[i]'s forward on inputs[i], on
// devices[i], all at once; the outputs in order. By default devices[i] is the device of the first
// tensor in inputs[i]. An input is the forward's one argument (a tensor, or a structure of them)
// or a std::tuple (or std::pair) of its arguments. The inputs are not moved: each should be on its
// module's device already, as in LibTorch. One module per device (a device's worker runs one at a
// time).
template <typename ModulePtr, typename Input>
auto parallel_apply(const std::vector<ModulePtr>& modules, const std::vector<Input>& inputs,
                    const std::optional<std::vector<Device>>& devices = std::nullopt) {
  auto call = [](auto& module, const Input& input) {
    if constexpr (detail::is_tuple_like<Input>::value) {
      return std::apply([&](const auto&... args) { return module.forward(args...); }, input);
    } else {
      return module.forward(input);
    }
  };
  using R = std::decay_t<decltype(call(*modules[0], inputs[0]))>;
  TD_CHECK(modules.size() == inputs.size(), "parallel_apply: ", modules.size(), " modules but ", inputs.size(),
           " inputs");
  TD_CHECK(!devices || devices->size() == modules.size(), "parallel_apply: ", devices ? devices->size() : 0,
           " devices for ", modules.size(), " modules");
  std::vector<Device> where;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (devices) {
      where.push_back((*devices)[i]);
      continue;
    }
    std::optional<Device> first;
    detail::for_each_tensor(inputs[i], [&](const Tensor& t) {
      if (!first && t.defined()) first = t.device();
    });
    TD_CHECK(first.has_value(), "parallel_apply: input ", i, " holds no tensor to take a device from; pass devices");
    where.push_back(*first);
  }
  auto twice = repeated_device(where);
  TD_CHECK(!twice, "parallel_apply: device ", *twice, " is given two modules; give each device one");
  for (size_t i = 0; i < modules.size(); ++i) {
    if constexpr (std::is_constructible_v<bool, const ModulePtr&>) {
      TD_CHECK(static_cast<bool>(modules[i]), "parallel_apply: module ", i, " is null");
    } else {
      TD_CHECK(!modules[i].is_empty(), "parallel_apply: module ", i, " is empty");
    }
  }
  if (modules.empty()) return std::vector<R>{};
  return parallel_apply(where, [&](size_t i) -> R { return call(*modules[i], inputs[i]); });
}

}  // namespace tandem::parallel
