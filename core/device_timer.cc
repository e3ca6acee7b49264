#include "core/device_timer.h"

namespace tandem {

DeviceTimer::DeviceTimer(Device device) : device_(device), started_(true), start_(std::chrono::steady_clock::now()) {
  if (!device.is_cuda()) return;
  begin_.emplace(true);
  end_.emplace(true);
  begin_->record(cuda::current_stream(device.index()));
}

void DeviceTimer::stop() {
  if (!started_) return;
  stopped_ = true;
  if (end_) {
    end_->record(cuda::current_stream(device_.index()));
  } else {
    stop_ = std::chrono::steady_clock::now();
  }
}

bool DeviceTimer::ready() const { return !end_ || !stopped_ || end_->query(); }

double DeviceTimer::seconds() const {
  if (!stopped_) return 0;
  if (!end_) return std::chrono::duration<double>(stop_ - start_).count();
  end_->synchronize();
  return begin_->elapsed_ms(*end_) / 1e3;
}

}  // namespace tandem
