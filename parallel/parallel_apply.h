// parallel_apply: runs one function per replica, each on its device's persistent worker thread
// (core/device_threads.h), all at once. Each worker takes the caller's grad mode, its current
// GPU streams and an equal share of the intra-op threads. Failures are re-raised once every worker has finished, as
// tandem::Error "in replica i on device d: <what>" (the first failing replica's). A GPU replica's
// kernels are queued, not waited for: a fault inside one surfaces at a later call that waits,
// unless CUDA_LAUNCH_BLOCKING=1 or tracing makes each replica wait for its own work.
#pragma once

#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/device.h"
#include "core/device_timer.h"
#include "core/error.h"

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

}  // namespace tandem::parallel
