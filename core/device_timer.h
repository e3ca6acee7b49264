// How long a device spent on some work, as the device saw it. A CPU device runs ops as they are
// called: its timer is the host's clock from start to stop. A GPU only queues them: its timer is
// a pair of timing events on the device's current stream, so the span runs from when the GPU
// reached the start to when it finished the work queued before the stop, and reading it waits
// for that work. DeviceSeconds adds timers up without waiting until the totals are read.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/cuda.h"
#include "core/device.h"

namespace tandem {

class DeviceTimer {
 public:
  DeviceTimer() = default;  // not started: 0 seconds
  explicit DeviceTimer(Device device);  // starts now
  // Ends the span here; a later stop() moves the end to the later point.
  void stop();
  bool started() const { return started_; }
  // Whether seconds() can be read without waiting.
  bool ready() const;
  // The span up to the last stop() (0 if it never stopped); for a GPU, waits for its work.
  double seconds() const;
  Device device() const { return device_; }

 private:
  Device device_ = Device(kCPU);
  bool started_ = false, stopped_ = false;
  std::chrono::steady_clock::time_point start_, stop_;
  std::optional<cuda::Event> begin_, end_;  // a GPU's
};

// Seconds per key (a device, a primitive's name), added up from timers; thread-safe. A timer
// whose device is still busy is kept and read later, so add() never waits for a device. Nor does
// mark(): a Mark remembers a point in the sequence of timers, and since(mark) adds up those that
// came after it, however late the earlier ones are read.
template <typename Key>
class DeviceSeconds {
 public:
  using Totals = std::map<Key, double>;
  class Mark {
   public:
    Mark() = default;  // before every timer
   private:
    friend class DeviceSeconds;
    struct State {
      uint64_t sequence = 0;  // timers numbered below this came before the mark
      Totals before;          // their seconds, as far as they are read
    };
    std::shared_ptr<State> state_;
  };

  void add(const Key& key, DeviceTimer timer) {
    std::vector<DeviceTimer> one;
    one.push_back(std::move(timer));
    add(key, std::move(one));
  }
  // Work spread over several devices at once: it counts as long as its longest timer.
  void add(const Key& key, std::vector<DeviceTimer> timers) {
    std::lock_guard lock(mutex_);
    pending_.push_back(Pending{next_++, key, std::move(timers)});
    settle(false);
  }
  Mark mark() {
    std::lock_guard lock(mutex_);
    Mark m;
    m.state_ = std::make_shared<typename Mark::State>();
    m.state_->sequence = next_;
    m.state_->before = totals_;
    marks_.push_back(m.state_);
    return m;
  }
  // The totals of the timers added after `mark`, once each has been read (waiting for the devices).
  Totals since(const Mark& mark) {
    std::lock_guard lock(mutex_);
    settle(true);
    Totals out = totals_;
    if (mark.state_) {
      for (const auto& [key, seconds] : mark.state_->before) out[key] -= seconds;
    }
    return out;
  }
  Totals totals() { return since(Mark()); }

 private:
  struct Pending {
    uint64_t sequence;
    Key key;
    std::vector<DeviceTimer> timers;
  };

  // Reads the pending timers that are ready (all of them if `wait`), crediting each to the marks
  // it came before.
  void settle(bool wait) {
    std::erase_if(marks_, [](const auto& m) { return m.expired(); });
    std::vector<Pending> still;
    for (Pending& p : pending_) {
      bool ready = true;
      for (const DeviceTimer& t : p.timers) ready = ready && t.ready();
      if (!wait && !ready) {
        still.push_back(std::move(p));
        continue;
      }
      double longest = 0;
      for (const DeviceTimer& t : p.timers) longest = std::max(longest, t.seconds());
      totals_[p.key] += longest;
      for (const auto& weak : marks_) {
        auto m = weak.lock();
        if (m && p.sequence < m->sequence) m->before[p.key] += longest;
      }
    }
    pending_ = std::move(still);
  }

  std::mutex mutex_;
  uint64_t next_ = 0;
  Totals totals_;
  std::vector<Pending> pending_;
  std::vector<std::weak_ptr<typename Mark::State>> marks_;
};

}  // namespace tandem
