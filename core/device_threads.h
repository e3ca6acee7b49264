// One persistent worker thread per device, started on first use and kept for the life of the
// program: DataParallel's parallel_apply and the backward engine hand each device its share of a
// step here, instead of creating threads per step. Between its tasks, a CPU device's thread
// helps with other threads' parallel_for (core/thread_pool.h).
#pragma once

#include <exception>
#include <functional>
#include <vector>

#include "core/device.h"

namespace tandem {

// Runs tasks[i] on the worker of devices[i] (devices distinct), all at once, and waits for all of
// them. Returns one exception_ptr per task (null where it succeeded); never throws what a task
// threw. Called on any device's worker (nested work), it runs the tasks right there, one after
// another, so that workers never wait for each other.
std::vector<std::exception_ptr> run_on_device_threads(const std::vector<Device>& devices,
                                                      const std::vector<std::function<void()>>& tasks);

// Starts task on the worker of `device` and returns at once; the task must not throw. Tasks on
// one device run one after another, in the order they were posted.
void post_to_device_thread(Device device, std::function<void()> task);

// The device whose worker is running the calling thread, if it is one.
const Device* current_device_thread();

}  // namespace tandem
