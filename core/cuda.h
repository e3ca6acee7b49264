// The CUDA runtime as tandem sees it: devices, streams, events and guards. In a build without the
// CUDA toolkit, or on a machine without a GPU or driver, there are no devices: is_available() is
// false and nothing else changes. The header names no CUDA type, so plain C++ can include it.
//
// Logical devices: cuda:N is the N-th entry of TANDEM_VISIBLE_DEVICES (a comma-separated list of
// the GPUs the CUDA runtime shows, itself narrowed by CUDA_VISIBLE_DEVICES). An entry may repeat:
// "0,0" makes cuda:0 and cuda:1 two logical devices sharing GPU 0, each with its own streams and
// memory pool, so data parallelism can be exercised on one GPU. Unset, cuda:N is GPU N.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/storage.h"

namespace tandem::cuda {

bool is_available();
int device_count();  // logical devices
// Why there are no CUDA devices ("" when there are some): no CUDA in this build, or what the
// runtime said, e.g. that the driver is older than the runtime this program was built with.
std::string unavailable_reason();

struct DeviceProperties {
  std::string name;
  int64_t total_memory = 0;  // bytes
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  int physical_index = 0;    // the GPU (as the CUDA runtime numbers it) behind the logical device
};
DeviceProperties get_device_properties(int device);

// How this build was made: whether CUDA code was compiled in, and the runtime version (e.g. 13000).
bool built_with_cuda();
int runtime_version();
int driver_version();  // 0 without a driver

// The CUDA runtime's ordinal of the GPU behind logical device `device`.
int physical_device(int device);

// Waits for all work queued on every stream of `device` (or of every device).
void synchronize(int device);
void synchronize();

// An ordered queue of work on one logical device. Each logical device has a default stream of
// its own (not CUDA's legacy stream: logical devices sharing a GPU must not serialise on it).
class Stream {
 public:
  Stream() = default;
  Stream(int device, void* handle) : device_(device), handle_(handle) {}
  int device() const { return device_; }
  void* handle() const { return handle_; }  // a cudaStream_t
  bool query() const;                       // true when all queued work is done
  void synchronize() const;
  friend bool operator==(const Stream& a, const Stream& b) = default;

 private:
  int device_ = 0;
  void* handle_ = nullptr;
};

Stream default_stream(int device);
// The stream this thread queues work on for `device`: the default stream unless a StreamGuard says otherwise.
Stream current_stream(int device);
// A new stream on `device`, kept until the process ends (streams come from a small pool per device).
Stream new_stream(int device);

// Makes `stream` current for its device on this thread until the guard goes.
class StreamGuard {
 public:
  explicit StreamGuard(Stream stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// The streams StreamGuards made current on this thread (empty: every device's default stream).
// A thread doing another's work (a device thread running a replica, a backward, a collective)
// makes the caller's current with CurrentStreamsGuard, so the work is queued where the caller's
// own would be, after what the caller queued before.
std::vector<Stream> current_streams();
class CurrentStreamsGuard {
 public:
  explicit CurrentStreamsGuard(std::vector<Stream> streams);
  ~CurrentStreamsGuard();
  CurrentStreamsGuard(const CurrentStreamsGuard&) = delete;
  CurrentStreamsGuard& operator=(const CurrentStreamsGuard&) = delete;

 private:
  std::vector<Stream> previous_;
};

// Makes the GPU behind logical `device` the runtime's current one on this thread until the guard goes.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_physical_ = -1;
};

// A marker in a stream: other streams (or the host) can wait until the work before it is done.
class Event {
 public:
  explicit Event(bool timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void wait(const Stream& stream) const;  // `stream` waits (on the GPU) for the recorded work
  bool query() const;                     // true when the recorded work is done (or nothing was recorded)
  void synchronize() const;               // the host waits
  double elapsed_ms(const Event& end) const;  // both recorded with timing = true

 private:
  void release();  // hands the event back to the pool of its GPU's events

  void* handle_ = nullptr;  // a cudaEvent_t, taken from the pool on first record
  int device_ = -1;         // logical, as recorded
  int physical_ = -1;       // the GPU behind device_, whose pool the event returns to
  bool timing_ = false;
};

// How many CUDA events the process has created, and how many of them wait in the pools: Events
// reuse released ones, so a loop that makes and drops Events keeps both flat.
int64_t events_created();
int64_t events_pooled();

// Whether logical device `device` can read and write `peer`'s memory directly (always true for
// logical devices on the same GPU). Peer access is enabled on first use.
bool can_access_peer(int device, int peer);

// float32 matrix products may use TF32 tensor cores (10-bit mantissa inputs, float32
// accumulation): faster, less exact. Off by default, as PyTorch's allow_tf32.
void set_allow_tf32(bool allow);
bool allow_tf32();

// Memory: statistics per logical device come from tandem::memory_stats(Device(kCUDA, d)).
// Fresh device blocks are filled with `byte` while this is on (0xFF: NaN in every floating
// dtype), so a kernel that leaves an output element unwritten is caught by tests.
void set_poison_allocations(bool on, uint8_t byte = 0xFF);
// False under TANDEM_NO_CUDA_MEMORY_CACHING=1 (read once, at the first use): every CUDA tensor is
// then its own cudaMalloc of its exact size, freed at once, so that compute-sanitizer sees its bounds.
bool memory_caching_enabled();

// `storage` (memory of a CUDA device, or pinned host memory) is also used by work queued on
// `stream`: the allocator does not hand it out again until that work is done.
void record_stream(const Storage& storage, const Stream& stream);

// Host memory locked in RAM ("pinned"), from a caching pool: copies from and to it run
// asynchronously and faster. Its storage is on cpu:0.
Storage pinned_storage(size_t nbytes);
bool is_pinned(const Storage& storage);

}  // namespace tandem::cuda
