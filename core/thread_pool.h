// Intra-op parallelism: one process-wide pool of worker threads and parallel_for over index ranges.
// The size comes from TANDEM_NUM_THREADS, else the hardware. No thread is created per op.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace tandem {

// The threads an op started on this thread may use: the pool's size, or less under a ThreadLimit.
int num_threads();
// Resizes the pool (joins and restarts its workers). Not to be called while ops run.
void set_num_threads(int n);

// Calls body(begin, end) on disjoint sub-ranges covering [begin, end), each at least `grain`
// long (but the last), on up to num_threads() threads; the caller takes part. A call made from
// inside a parallel_for body runs inline. The first exception a body throws is rethrown here.
// A body must not wait for work on a CPU device's thread (device_threads.h): an idle one may be
// the thread running that body.
void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// Caps the threads ops started on this thread may use, for a scope. DataParallel's device
// workers run under ThreadLimit(1) or a share of the cores, so that several CPU devices divide
// the machine between them instead of all queueing for the whole pool.
class ThreadLimit {
 public:
  explicit ThreadLimit(int max_threads);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int previous_;
};

// For a thread that waits awake for work of its own (a CPU device's worker between the tasks of
// a step): whether a parallel_for has a chunk that no thread has claimed yet, and taking part in
// one. Such a thread is on a core already, so the chunk starts at once, where the pool's worker
// may be asleep and take about as long to wake as the chunk takes to run.
bool parallel_for_waiting();
// Runs the unclaimed chunks of one waiting parallel_for on the calling thread; false if none waited.
bool help_parallel_for();

// Whether the calling thread is running a parallel_for body on a pool worker or as the caller.
bool in_parallel_region();

// Polls ready() until it holds, for at most `limit`, and says whether it held; the thread yields
// its core between polls. For a thread whose wait is likely short (a pool worker between ops, a
// device's worker between the tasks of a step, the caller of a backward that device workers are
// finishing), before it sleeps: being woken costs more (about 45 us on a virtual machine).
bool wait_awake(const std::function<bool()>& ready, std::chrono::microseconds limit);

}  // namespace tandem
