#include "core/device_threads.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/thread_pool.h"

namespace tandem {

namespace {

thread_local const Device* t_worker_device = nullptr;

constexpr auto kAwake = std::chrono::microseconds(2000);

class DeviceThread {
 public:
  explicit DeviceThread(Device device) : device_(device), thread_([this] { loop(); }) {}
  ~DeviceThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    queued_.fetch_add(1);  // ends the polling
    wake_.notify_one();
    thread_.join();
  }

  void post(std::function<void()> task) {
    enqueue(std::move(task));
    wake();
  }
  // Queuing and waking apart: a thread that wakes another may lose its core to it at once, so
  // a caller handing out work to several devices queues it everywhere before waking anyone
  // (a worker still polling takes its task without being woken).
  void enqueue(std::function<void()> task) {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1);
  }
  void wake() { wake_.notify_one(); }

 private:
  void loop() {
    t_worker_device = &device_;
    // Named after its device, so that a debugger, perf or top shows whose work a thread is doing.
    pthread_setname_np(pthread_self(), ("tandem-" + device_.str()).substr(0, 15).c_str());
    // A GPU's thread stays out of the CPU's work: it must be free to queue its device's next kernels.
    const bool helps = device_.is_cpu();
    for (;;) {
      std::function<void()> task;
      // A step hands each device several tasks in a row (scatter, broadcast, forward, backward)
      // with gaps of a few hundred microseconds between them (loss, reduction, update), and
      // waking a sleeping thread costs about as much on a virtual machine. So a thread waits
      // awake for a while, then sleeps. Awake, a CPU device's thread takes chunks of the ops
      // that fill those gaps (parallel_for): it is on a core already, where the pool's worker
      // may have to be woken first. In pairs of data-parallel MLP steps on two CPU devices,
      // taken in turns in one process, steps with this help took 1-4% less time.
      const bool ready = wait_awake(
          [&] { return queued_.load(std::memory_order_relaxed) != 0 || (helps && parallel_for_waiting()); }, kAwake);
      if (ready && queued_.load() == 0) {
        t_worker_device = nullptr;  // a chunk of another thread's op is not this device's work
        if (!help_parallel_for()) std::this_thread::yield();  // another thread took it first
        t_worker_device = &device_;
        continue;
      }
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
        queued_.fetch_sub(1);
      }
      task();
    }
  }

  Device device_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int64_t> queued_{0};  // queue_.size(), readable without the lock while polling
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the members it uses exist
};

std::mutex g_threads_mutex;

DeviceThread& thread_for(Device device) {
  // Never destroyed: a worker may be running when static destructors run at exit.
  static auto* threads = new std::map<Device, std::unique_ptr<DeviceThread>>();
  std::lock_guard lock(g_threads_mutex);
  auto& slot = (*threads)[device];
  if (!slot) slot = std::make_unique<DeviceThread>(device);
  return *slot;
}

}  // namespace

const Device* current_device_thread() { return t_worker_device; }

void post_to_device_thread(Device device, std::function<void()> task) { thread_for(device).post(std::move(task)); }

std::vector<std::exception_ptr> run_on_device_threads(const std::vector<Device>& devices,
                                                      const std::vector<std::function<void()>>& tasks) {
  TD_CHECK(devices.size() == tasks.size(), "run_on_device_threads: ", tasks.size(), " tasks for ", devices.size(),
           " devices");
  auto twice = repeated_device(devices);
  TD_CHECK(!twice, "run_on_device_threads: device ", *twice, " is listed twice");
  std::vector<std::exception_ptr> errors(tasks.size());
  // On a device's own thread (work started inside another device task) everything runs right
  // here, one task after another: waiting for other devices' threads, which may themselves be
  // waiting for this one, could deadlock.
  if (t_worker_device) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      try {
        tasks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    return errors;
  }
  // Every thread exists before any task is queued, so nothing below can fail halfway.
  std::vector<DeviceThread*> threads;
  for (const Device& d : devices) threads.push_back(&thread_for(d));
  // Shared with the queued closures, tasks included: a worker may still be unlocking after the
  // caller returns, or (if queuing failed midway) run after the caller has unwound.
  struct State {
    std::vector<std::function<void()>> tasks;
    std::vector<std::exception_ptr> errors;
    std::mutex mutex;
    std::condition_variable finished;
    size_t remaining = 0;
  };
  auto state = std::make_shared<State>();
  state->tasks = tasks;
  state->errors = std::move(errors);
  state->remaining = tasks.size();
  for (size_t i = 0; i < tasks.size(); ++i) {
    threads[i]->enqueue([state, i] {
      try {
        state->tasks[i]();
      } catch (...) {
        state->errors[i] = std::current_exception();
      }
      std::lock_guard lock(state->mutex);
      if (--state->remaining == 0) state->finished.notify_all();
    });
  }
  for (DeviceThread* t : threads) t->wake();
  std::unique_lock lock(state->mutex);
  state->finished.wait(lock, [&] { return state->remaining == 0; });
  return std::move(state->errors);
}

}  // namespace tandem
