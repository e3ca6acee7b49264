#include "parallel/parallel_apply.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <string>

#include "autograd/autocast.h"
#include "autograd/grad_mode.h"
#include "core/cuda.h"
#include "core/device_threads.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "core/trace.h"

namespace tandem::parallel {

namespace {

bool is_aborted(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ReplicaAborted&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

void parallel_run(const std::vector<Device>& devices, const std::function<void(size_t)>& fn,
                  std::vector<DeviceTimer>* timers, const char* what, const std::vector<size_t>& replica_numbers) {
  const bool grad_mode = is_grad_enabled();
  const amp::AutocastState autocast = amp::autocast_state();
  const int threads = std::max<int>(1, num_threads() / static_cast<int>(std::max<size_t>(devices.size(), 1)));
  if (timers) {
    timers->clear();
    timers->resize(devices.size());
  }
  const std::vector<cuda::Stream> streams = cuda::current_streams();
  std::vector<std::function<void()>> tasks;
  for (size_t i = 0; i < devices.size(); ++i) {
    tasks.push_back([&, streams, i] {
      AutoGradMode mode(grad_mode);
      amp::AutocastStateGuard autocast_mode(autocast);
      ThreadLimit limit(threads);
      cuda::CurrentStreamsGuard current(streams);
      // tandem's own launches select their device themselves; this is for CUDA code of the
      // user's inside a replica, which expects its replica's GPU to be the current one.
      std::optional<cuda::DeviceGuard> gpu;
      if (devices[i].is_cuda()) gpu.emplace(devices[i].index());
      const auto start = std::chrono::steady_clock::now();
      DeviceTimer timer(devices[i]);
      fn(i);
      timer.stop();
      if (what && trace::enabled()) {
        // A GPU's work is only queued when fn returns: the span waits for it, so that it shows the
        // device's work and not the launches'.
        if (devices[i].is_cuda()) cuda::current_stream(devices[i].index()).synchronize();
        trace::record(what, devices[i].str(), start, std::chrono::steady_clock::now());
      }
      if (timers) (*timers)[i] = std::move(timer);
    });
  }
  std::vector<std::exception_ptr> errors = run_on_device_threads(devices, tasks);
  // The first replica that failed on its own; one that only stopped for it comes last.
  std::optional<size_t> failed;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (errors[i] && (!failed || (!is_aborted(errors[i]) && is_aborted(errors[*failed])))) failed = i;
  }
  if (!failed) return;
  std::string message;
  try {
    std::rethrow_exception(errors[*failed]);
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "an exception that is not a std::exception";
  }
  const size_t replica = *failed < replica_numbers.size() ? replica_numbers[*failed] : *failed;
  TD_FAIL("in replica ", replica, " on device ", devices[*failed], ": ", message);
}

}  // namespace tandem::parallel
