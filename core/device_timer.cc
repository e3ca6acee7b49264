#include "core/device_timer.h"

#include "core/error.h"

namespace tandem {

DeviceTimer::DeviceTimer(Device device) : device_(device), started_(true), start_(std::chrono::steady_clock::now()) {
  if (!device.is_cuda()) return;
  stream_ = cuda::current_stream(device.index());
  begin_.emplace(true);
  end_.emplace(true);
  begin_->record(stream_);
}

DeviceTimer DeviceTimer::host_span(Device device, std::chrono::steady_clock::time_point start,
                                   std::chrono::steady_clock::time_point stop) {
  TD_CHECK(!device.is_cuda(), "DeviceTimer::host_span: ", device, " is a GPU, whose work the host's clock does not time");
  DeviceTimer t;
  t.device_ = device;
  t.started_ = t.stopped_ = true;
  t.start_ = start;
  t.stop_ = stop;
  return t;
}

DeviceTimer::DeviceTimer(DeviceTimer&& other) noexcept { *this = std::move(other); }

DeviceTimer& DeviceTimer::operator=(DeviceTimer&& other) noexcept {
  if (this == &other) return *this;
  device_ = other.device_;
  started_ = std::exchange(other.started_, false);
  stopped_ = std::exchange(other.stopped_, false);
  start_ = other.start_;
  stop_ = other.stop_;
  begin_ = std::move(other.begin_);
  end_ = std::move(other.end_);
  stream_ = other.stream_;
  other.begin_.reset();
  other.end_.reset();
  return *this;
}

void DeviceTimer::stop() {
  if (!started_) return;
  if (end_) {
    end_->record(stream_);  // the start's stream, so both events mark one queue
  } else {
    stop_ = std::chrono::steady_clock::now();
  }
  stopped_ = true;  // only once the end is recorded
}

bool DeviceTimer::ready() const { return !end_ || !stopped_ || end_->query(); }

double DeviceTimer::seconds() const {
  if (!stopped_) return 0;
  if (!end_) return std::chrono::duration<double>(stop_ - start_).count();
  end_->synchronize();
  return begin_->elapsed_ms(*end_) / 1e3;
}

}  // namespace tandem
