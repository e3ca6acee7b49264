// The CUDA runtime behind core/cuda.h (cudart linked statically). A machine without a GPU or a
// driver answers cudaGetDeviceCount with an error: that means "no devices", not a failure.
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "core/cuda.h"
#include "core/cuda_check.h"
#include "core/error.h"

namespace tandem::cuda {

namespace detail {

void fail(cudaError_t err, const char* what, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  TD_FAIL(what, ": CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ") in ", call, " at ", file,
          ":", line);
}

std::mutex& free_mutex() {
  static auto* mutex = new std::mutex;  // kept to the end: a free may come during static destruction
  return *mutex;
}

namespace {

// Whether the GPU's primary context exists, by the driver's own query, looked up at run time as
// tandem links the runtime alone. Where the query cannot be had or fails: true, as restoring was.
bool has_context(int physical) {
  using Query = int (*)(int device, unsigned int* flags, int* active);  // cuDevicePrimaryCtxGetState
  static const Query query = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return Query{nullptr};
    }
    return reinterpret_cast<Query>(fn);
  }();
  if (query == nullptr) return true;
  unsigned int flags = 0;
  int active = 0;
  return query(physical, &flags, &active) != 0 || active != 0;
}

}  // namespace

void restore_device(int physical) noexcept {
  if (!has_context(physical)) return;
  if (cudaSetDevice(physical) != cudaSuccess) (void)cudaGetLastError();
}

}  // namespace detail

namespace {

constexpr int kStreamsPerDevice = 32;

// What cudaGetDeviceCount said when it found no GPU, kept for the messages that say there is none.
std::string& no_gpu_reason() {
  static std::string reason;
  return reason;
}

const std::vector<int>& logical_map() {
  static const std::vector<int> map = [] {
    int gpus = 0;
    if (const cudaError_t err = cudaGetDeviceCount(&gpus); err != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no device" error
      gpus = 0;
      no_gpu_reason() = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    } else if (gpus == 0) {
      no_gpu_reason() = "the CUDA runtime found no GPU";
    }
    if (const char* env = std::getenv("TANDEM_VISIBLE_DEVICES"); env && gpus > 0) {
      return parse_visible_devices(env, gpus);
    }
    std::vector<int> identity(gpus);
    for (int i = 0; i < gpus; ++i) identity[i] = i;
    return identity;
  }();
  return map;
}

void check_device(int device, const char* op) {
  TD_CHECK(device >= 0 && device < device_count(), op, ": cuda:", device, " does not exist (", device_count(),
           " CUDA devices", device_count() == 0 ? ": " + unavailable_reason() : std::string(), ")");
}

struct DeviceStreams {
  std::once_flag once;
  cudaStream_t default_stream = nullptr;
  std::mutex mutex;
  std::vector<cudaStream_t> pool;
  int next = 0;
};

DeviceStreams& streams_of(int device) {
  static std::array<DeviceStreams, Device::kMaxIndex>* all = new std::array<DeviceStreams, Device::kMaxIndex>;
  return (*all)[device];
}

cudaStream_t create_stream(int device) {
  DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  TD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a stream on cuda:", device);
  return s;
}

// This thread's current stream per device, when a StreamGuard set one.
thread_local std::vector<Stream> t_current_streams;

}  // namespace

int device_count() { return static_cast<int>(logical_map().size()); }

bool is_available() { return device_count() > 0; }

std::string unavailable_reason() {
  if (is_available()) return "";
  return no_gpu_reason().empty() ? "TANDEM_VISIBLE_DEVICES names no GPU" : no_gpu_reason();
}

int physical_device(int device) {
  check_device(device, "cuda::physical_device");
  return logical_map()[device];
}

DeviceProperties get_device_properties(int device) {
  check_device(device, "cuda::get_device_properties");
  const int physical = logical_map()[device];
  cudaDeviceProp prop{};
  TD_CUDA_CHECK(cudaGetDeviceProperties(&prop, physical), "cuda::get_device_properties(", device, ")");
  return DeviceProperties{prop.name, static_cast<int64_t>(prop.totalGlobalMem), prop.major, prop.minor,
                          prop.multiProcessorCount, physical};
}

bool built_with_cuda() { return true; }

int runtime_version() {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v;
}

int driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}

void synchronize(int device) {
  check_device(device, "cuda::synchronize");
  DeviceGuard guard(device);
  TD_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize on cuda:", device);
}

void synchronize() {
  for (int d = 0; d < device_count(); ++d) synchronize(d);
}

// ---- streams ----

bool Stream::query() const {
  cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(handle_));
  if (detail::not_ready(err)) return false;
  TD_CUDA_CHECK(err, "stream query on cuda:", device_);
  return true;
}

void Stream::synchronize() const {
  TD_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)), "stream synchronize on cuda:", device_);
}

Stream default_stream(int device) {
  check_device(device, "cuda::default_stream");
  DeviceStreams& s = streams_of(device);
  std::call_once(s.once, [&] { s.default_stream = create_stream(device); });
  return Stream(device, s.default_stream);
}

Stream current_stream(int device) {
  if (device < static_cast<int>(t_current_streams.size()) && t_current_streams[device].handle()) {
    return t_current_streams[device];
  }
  return default_stream(device);
}

Stream new_stream(int device) {
  check_device(device, "cuda::new_stream");
  DeviceStreams& s = streams_of(device);
  std::lock_guard lock(s.mutex);
  if (static_cast<int>(s.pool.size()) < kStreamsPerDevice) s.pool.push_back(create_stream(device));
  cudaStream_t handle = s.pool[s.next];
  s.next = (s.next + 1) % kStreamsPerDevice;
  return Stream(device, handle);
}

StreamGuard::StreamGuard(Stream stream) {
  const int d = stream.device();
  check_device(d, "cuda::StreamGuard");
  if (static_cast<int>(t_current_streams.size()) <= d) t_current_streams.resize(d + 1);
  previous_ = t_current_streams[d];
  if (!previous_.handle()) previous_ = Stream(d, nullptr);
  t_current_streams[d] = stream;
}

StreamGuard::~StreamGuard() { t_current_streams[previous_.device()] = previous_; }

std::vector<Stream> current_streams() { return t_current_streams; }

CurrentStreamsGuard::CurrentStreamsGuard(std::vector<Stream> streams) : previous_(std::move(streams)) {
  std::swap(previous_, t_current_streams);
}

CurrentStreamsGuard::~CurrentStreamsGuard() { std::swap(previous_, t_current_streams); }

DeviceGuard::DeviceGuard(int device) {
  const int physical = physical_device(device);
  TD_CUDA_CHECK(cudaGetDevice(&previous_physical_), "DeviceGuard for cuda:", device);
  if (previous_physical_ == physical) {
    previous_physical_ = -1;
    return;
  }
  TD_CUDA_CHECK(cudaSetDevice(physical), "DeviceGuard: selecting cuda:", device);
}

DeviceGuard::~DeviceGuard() {
  if (previous_physical_ >= 0) detail::restore_device(previous_physical_);
}

// ---- events ----

namespace {

// Events are made once and reused: a training step records dozens (its timers, the caching
// allocator's cross-stream frees, the collectives' ordering), and creating and destroying each
// would cost two driver calls. An event may come back with recorded work still pending; that is
// harmless, as its next owner records it again before reading it, and a stream that waits for
// it keeps waiting for the record that was current when the wait was queued.
class EventPool {
 public:
  cudaEvent_t take(int physical, bool timing) {
    {
      std::lock_guard lock(mutex_);
      std::vector<cudaEvent_t>& free = free_[{physical, timing}];
      if (!free.empty()) {
        cudaEvent_t e = free.back();
        free.pop_back();
        --free_count_;
        return e;
      }
    }
    cudaEvent_t e = nullptr;  // the caller has made `physical` the current GPU
    TD_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
                  "creating an event on GPU ", physical);
    created_.fetch_add(1);
    return e;
  }
  // Called from destructors: never throws (an event it cannot keep is destroyed).
  void give_back(cudaEvent_t e, int physical, bool timing) noexcept {
    try {
      std::lock_guard lock(mutex_);
      free_[{physical, timing}].push_back(e);
      ++free_count_;
    } catch (...) {
      cudaEventDestroy(e);
    }
  }
  int64_t created() const { return created_.load(); }
  int64_t free_count() {
    std::lock_guard lock(mutex_);
    return free_count_;
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<int, bool>, std::vector<cudaEvent_t>> free_;
  int64_t free_count_ = 0;  // events in free_, for tests
  std::atomic<int64_t> created_{0};
};

EventPool& event_pool() {
  static auto* pool = new EventPool;  // never destroyed: events may be released during exit
  return *pool;
}

}  // namespace

int64_t events_created() { return event_pool().created(); }
int64_t events_pooled() { return event_pool().free_count(); }

Event::Event(bool timing) : timing_(timing) {}

Event::~Event() { release(); }

Event::Event(Event&& other) noexcept { *this = std::move(other); }

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    release();
    handle_ = std::exchange(other.handle_, nullptr);
    device_ = std::exchange(other.device_, -1);
    physical_ = std::exchange(other.physical_, -1);
    timing_ = other.timing_;
  }
  return *this;
}

void Event::release() {
  if (!handle_) return;
  event_pool().give_back(static_cast<cudaEvent_t>(handle_), physical_, timing_);
  handle_ = nullptr;
  device_ = physical_ = -1;
}

void Event::record(const Stream& stream) {
  DeviceGuard guard(stream.device());
  const int physical = physical_device(stream.device());
  if (handle_ && physical_ != physical) release();  // an event belongs to one GPU
  if (!handle_) handle_ = event_pool().take(physical, timing_);
  device_ = stream.device();
  physical_ = physical;
  TD_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(handle_), static_cast<cudaStream_t>(stream.handle())),
                "recording an event on cuda:", device_);
}

void Event::wait(const Stream& stream) const {
  if (!handle_) return;
  DeviceGuard guard(stream.device());
  TD_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream.handle()), static_cast<cudaEvent_t>(handle_), 0),
                "cuda:", stream.device(), " waiting for an event of cuda:", device_);
}

bool Event::query() const {
  if (!handle_) return true;
  cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(handle_));
  if (detail::not_ready(err)) return false;
  TD_CUDA_CHECK(err, "event query on cuda:", device_);
  return true;
}

void Event::synchronize() const {
  if (!handle_) return;
  TD_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)), "event synchronize on cuda:", device_);
}

double Event::elapsed_ms(const Event& end) const {
  TD_CHECK(timing_ && end.timing_ && handle_ && end.handle_,
           "Event::elapsed_ms: both events must be created with timing = true and recorded");
  float ms = 0;
  TD_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(handle_), static_cast<cudaEvent_t>(end.handle_)),
                "Event::elapsed_ms on cuda:", device_);
  return ms;
}

// ---- peers ----

bool can_access_peer(int device, int peer) {
  const int a = physical_device(device), b = physical_device(peer);
  if (a == b) return true;
  static std::mutex mutex;
  static std::vector<std::vector<int8_t>> known;  // -1 unknown, 0 no, 1 enabled
  std::lock_guard lock(mutex);
  const int gpus = [] {
    int n = 0;
    cudaGetDeviceCount(&n);
    return n;
  }();
  if (known.empty()) known.assign(gpus, std::vector<int8_t>(gpus, -1));
  int8_t& state = known[a][b];
  if (state < 0) {
    int can = 0;
    TD_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b), "peer access query cuda:", device, " -> cuda:", peer);
    if (can) {
      DeviceGuard guard(device);
      // Already enabled counts as enabled. Any other failure (too many peers, a virtualised
      // machine that reports peers it cannot map) leaves copies to go through the host's staging
      // (cudaMemcpyPeerAsync), as between GPUs that are not peers at all.
      cudaError_t err = cudaDeviceEnablePeerAccess(b, 0);
      if (err != cudaSuccess) (void)cudaGetLastError();
      if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled) can = 0;
    }
    state = can ? 1 : 0;
  }
  return state == 1;
}

namespace {
std::atomic<bool> tf32{false};
}  // namespace

void set_allow_tf32(bool allow) { tf32.store(allow); }
bool allow_tf32() { return tf32.load(); }

}  // namespace tandem::cuda
