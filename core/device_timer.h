// How long a device spent on some work, as the device saw it. A CPU device runs ops as they are
// called: its timer is the host's clock from start to stop. A GPU only queues them: its timer is
// a pair of timing events on the stream current at the start, so the span runs from when the GPU
// reached the start to when it finished the work queued there before the stop, and reading it
// waits for that work. DeviceSeconds adds timers up without waiting until the totals are read.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
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
  // A CPU device's span between two readings of the host's clock that the caller already took.
  static DeviceTimer host_span(Device device, std::chrono::steady_clock::time_point start,
                               std::chrono::steady_clock::time_point stop);
  DeviceTimer(DeviceTimer&& other) noexcept;  // the source is left not started
  DeviceTimer& operator=(DeviceTimer&& other) noexcept;
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
  cuda::Stream stream_;                     // a GPU's: where both events are recorded
};

// Seconds per key (a device, a primitive's name), added up from timers; thread-safe. A timer
// whose device is still busy is kept and read later, so add() never waits for a device. Nor does
// mark(): a Mark remembers a point in the sequence of timers, and since(mark) adds up those that
// came after it, however late the earlier ones are read. A timer that cannot be read (a GPU
// error) counts 0.
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
    // Those already done are read now (no waiting), so the pending list stays short.
    std::vector<Pending> still;
    for (Pending& p : pending_) {
      if (ready(p.timers)) {
        credit(p.sequence, p.key, longest(p.timers));
      } else {
        still.push_back(std::move(p));
      }
    }
    pending_ = std::move(still);
  }
  Mark mark() {
    std::lock_guard lock(mutex_);
    Mark m;
    m.state_ = std::make_shared<typename Mark::State>();
    m.state_->sequence = next_;
    m.state_->before = totals_;
    std::erase_if(marks_, [](const auto& weak) { return weak.expired(); });
    marks_.push_back(m.state_);
    return m;
  }
  // The totals of the timers added after `mark`, once every timer added so far has been read:
  // this waits for the devices, without holding the lock (add() goes on meanwhile).
  Totals since(const Mark& mark) {
    std::unique_lock lock(mutex_);
    std::vector<Pending> reading = std::move(pending_);
    pending_.clear();
    ++readers_;
    lock.unlock();
    std::vector<double> seconds;
    for (const Pending& p : reading) seconds.push_back(longest(p.timers));
    lock.lock();
    for (size_t i = 0; i < reading.size(); ++i) credit(reading[i].sequence, reading[i].key, seconds[i]);
    --readers_;
    read_.notify_all();
    read_.wait(lock, [&] { return readers_ == 0; });  // timers another caller took are credited too
    Totals out = totals_;
    if (mark.state_) {
      for (const auto& [key, s] : mark.state_->before) out[key] -= s;
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

  static bool ready(const std::vector<DeviceTimer>& timers) {
    try {
      return std::all_of(timers.begin(), timers.end(), [](const DeviceTimer& t) { return t.ready(); });
    } catch (...) {
      return true;  // unreadable: read now, as 0
    }
  }

  static double longest(const std::vector<DeviceTimer>& timers) {
    double most = 0;
    for (const DeviceTimer& t : timers) {
      try {
        most = std::max(most, t.seconds());
      } catch (...) {
        // unreadable (its device failed): counts 0; the failure surfaces in the device's next op
      }
    }
    return most;
  }

  // Under the lock: the seconds of timer `sequence`, also to every mark it came before.
  void credit(uint64_t sequence, const Key& key, double seconds) {
    totals_[key] += seconds;
    for (const auto& weak : marks_) {
      auto m = weak.lock();
      if (m && sequence < m->sequence) m->before[key] += seconds;
    }
  }

  std::mutex mutex_;
  std::condition_variable read_;
  int readers_ = 0;  // since() calls reading timers outside the lock
  uint64_t next_ = 0;
  Totals totals_;
  std::vector<Pending> pending_;
  std::vector<std::weak_ptr<typename Mark::State>> marks_;
};

}  // namespace tandem
