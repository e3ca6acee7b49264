// The CUDA runtime in a build made without the CUDA toolkit: there are no CUDA devices, and
// anything that needs one says so.
#include <atomic>

#include "core/cuda.h"
#include "core/error.h"

namespace tandem::cuda {

namespace {

[[noreturn]] void no_cuda(const char* op) { TD_FAIL(op, ": this build of tandem has no CUDA"); }

}  // namespace

int device_count() { return 0; }
bool is_available() { return false; }
std::string unavailable_reason() { return "this build of tandem has no CUDA"; }

DeviceProperties get_device_properties(int device) {
  TD_FAIL("cuda::get_device_properties: device ", device, " does not exist (this build of tandem has no CUDA)");
}

bool built_with_cuda() { return false; }
int runtime_version() { return 0; }
int driver_version() { return 0; }
int physical_device(int) { no_cuda("cuda::physical_device"); }
void synchronize(int) { no_cuda("cuda::synchronize"); }
void synchronize() {}

bool Stream::query() const { no_cuda("cuda::Stream::query"); }
void Stream::synchronize() const { no_cuda("cuda::Stream::synchronize"); }
Stream default_stream(int) { no_cuda("cuda::default_stream"); }
Stream current_stream(int) { no_cuda("cuda::current_stream"); }
Stream new_stream(int) { no_cuda("cuda::new_stream"); }
StreamGuard::StreamGuard(Stream) { no_cuda("cuda::StreamGuard"); }
StreamGuard::~StreamGuard() = default;
std::vector<Stream> current_streams() { return {}; }
CurrentStreamsGuard::CurrentStreamsGuard(std::vector<Stream>) {}
CurrentStreamsGuard::~CurrentStreamsGuard() = default;
DeviceGuard::DeviceGuard(int) { no_cuda("cuda::DeviceGuard"); }
DeviceGuard::~DeviceGuard() = default;

Event::Event(bool timing) : timing_(timing) {}
Event::~Event() = default;
Event::Event(Event&& other) noexcept : timing_(other.timing_) {}
Event& Event::operator=(Event&& other) noexcept {
  timing_ = other.timing_;
  return *this;
}
void Event::record(const Stream&) { no_cuda("cuda::Event::record"); }
void Event::wait(const Stream&) const { no_cuda("cuda::Event::wait"); }
bool Event::query() const { return true; }
void Event::synchronize() const {}
double Event::elapsed_ms(const Event&) const { no_cuda("cuda::Event::elapsed_ms"); }
int64_t events_created() { return 0; }
int64_t events_pooled() { return 0; }

bool can_access_peer(int, int) { no_cuda("cuda::can_access_peer"); }
void set_poison_allocations(bool, uint8_t) {}
bool memory_caching_enabled() { return true; }
void record_stream(const Storage&, const Stream&) {}
Storage pinned_storage(size_t) { no_cuda("pin_memory"); }
bool is_pinned(const Storage&) { return false; }

namespace {
std::atomic<bool> tf32{false};
}  // namespace

void set_allow_tf32(bool allow) { tf32.store(allow); }
bool allow_tf32() { return tf32.load(); }

}  // namespace tandem::cuda
