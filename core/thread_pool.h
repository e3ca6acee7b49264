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

// Whether the calling thread is running a parallel_for body on a pool worker or as the caller.
bool in_parallel_region();

// Polls ready() until it holds, for at most `limit`, and says whether it held; the thread yields
// its core between polls. For a thread whose wait is likely short (a pool worker between ops, a
// device's worker between the tasks of a step, the caller of a backward that device workers are
// finishing), before it sleeps: being woken costs more (about 45 us on a virtual machine).
bool wait_awake(const std::function<bool()>& ready, std::chrono::microseconds limit);

}  // namespace tandem
