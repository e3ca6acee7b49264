#include "core/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace tandem {

namespace {

thread_local bool t_in_parallel = false;
thread_local int t_thread_limit = 0;  // 0: no limit

// Ops come back to back, and waking a sleeping thread (a futex call on each side) costs more than
// a small op itself; so a thread that waits for work, or for its helpers to finish, first polls
// this long. Longer would only burn a core the rest of the program could use.
constexpr auto kPoll = std::chrono::microseconds(50);

// The pool's queue length, readable without its lock by threads that poll it (the pool's workers,
// and idle CPU device workers through parallel_for_waiting).
std::atomic<int64_t> g_waiting{0};

// One parallel_for call: its chunks are claimed one at a time by whichever thread is free.
struct Job {
  const std::function<void(int64_t, int64_t)>* body;
  int64_t begin, end, chunk;
  int64_t num_chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mutex;
  std::condition_variable finished;
  std::exception_ptr error;

  // Runs chunks until none is left to claim.
  void work() {
    bool was_parallel = t_in_parallel;
    t_in_parallel = true;
    for (int64_t c; (c = next.fetch_add(1)) < num_chunks;) {
      int64_t b = begin + c * chunk, e = std::min(end, b + chunk);
      try {
        (*body)(b, e);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
      }
      if (done.fetch_add(1) + 1 == num_chunks) {
        std::lock_guard lock(mutex);
        finished.notify_all();
      }
    }
    t_in_parallel = was_parallel;
  }
};

class ThreadPool {
 public:
  explicit ThreadPool(int size) : size_(size) {
    for (int i = 0; i + 1 < size; ++i) workers_.emplace_back([this] { loop(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      // Entries of jobs whose chunks their callers ran themselves: no longer waiting for anyone.
      g_waiting.fetch_sub(static_cast<int64_t>(queue_.size()));
      queue_.clear();
    }
    stopping_flag_.store(true);  // ends the polling
    wake_.notify_all();
    for (auto& w : workers_) w.join();
  }

  int size() const { return size_; }

  // A waiting job for a thread outside the pool to help with, or null.
  std::shared_ptr<Job> take() {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) return nullptr;
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    g_waiting.fetch_sub(1);
    return job;
  }

  void run(const std::shared_ptr<Job>& job) {
    int64_t helpers = std::min<int64_t>(job->num_chunks - 1, static_cast<int64_t>(workers_.size()));
    {
      std::lock_guard lock(mutex_);
      for (int64_t i = 0; i < helpers; ++i) queue_.push_back(job);
      g_waiting.fetch_add(helpers);
    }
    for (int64_t i = 0; i < helpers; ++i) wake_.notify_one();
    job->work();
    if (wait_awake([&] { return job->done.load() == job->num_chunks; }, kPoll)) return;
    std::unique_lock lock(job->mutex);
    job->finished.wait(lock, [&] { return job->done.load() == job->num_chunks; });
  }

 private:
  void loop() {
    pthread_setname_np(pthread_self(), "tandem-pool");  // as seen by a debugger, perf or top
    for (;;) {
      std::shared_ptr<Job> job;
      wait_awake([&] { return g_waiting.load(std::memory_order_relaxed) > 0 || stopping_flag_.load(); }, kPoll);
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        g_waiting.fetch_sub(1);
      }
      job->work();
    }
  }

  int size_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::atomic<bool> stopping_flag_{false};  // stopping_, readable without the lock while polling
};

int default_num_threads() {
  if (const char* env = std::getenv("TANDEM_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    TD_CHECK(end != env && *end == '\0' && n >= 1 && n <= 1024, "TANDEM_NUM_THREADS='", env,
             "' is not a thread count between 1 and 1024");
    return static_cast<int>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::mutex g_pool_mutex;
// Never destroyed at exit: a CPU device's thread, never stopped either, may be taking a job then.
ThreadPool* g_pool = nullptr;

ThreadPool& pool() {
  std::lock_guard lock(g_pool_mutex);
  if (!g_pool) g_pool = new ThreadPool(default_num_threads());
  return *g_pool;
}

}  // namespace

int num_threads() {
  int size = pool().size();
  return t_thread_limit > 0 ? std::min(size, t_thread_limit) : size;
}

ThreadLimit::ThreadLimit(int max_threads) : previous_(t_thread_limit) {
  TD_CHECK(max_threads >= 1, "ThreadLimit: ", max_threads, " is not a thread count of at least 1");
  t_thread_limit = max_threads;
}

ThreadLimit::~ThreadLimit() { t_thread_limit = previous_; }

void set_num_threads(int n) {
  TD_CHECK(n >= 1 && n <= 1024, "set_num_threads: ", n, " is not a thread count between 1 and 1024");
  std::lock_guard lock(g_pool_mutex);
  delete g_pool;
  g_pool = new ThreadPool(n);
}

bool in_parallel_region() { return t_in_parallel; }

bool parallel_for_waiting() { return g_waiting.load(std::memory_order_relaxed) > 0; }

bool help_parallel_for() {
  if (!parallel_for_waiting()) return false;
  std::shared_ptr<Job> job;
  {
    // Taken under the lock that set_num_threads replaces the pool under; run after it.
    std::lock_guard lock(g_pool_mutex);
    if (g_pool) job = g_pool->take();
  }
  if (!job) return false;
  job->work();
  return true;
}

// It yields between polls instead of pausing: a pause loop keeps its core for the scheduler's
// whole slice, even from a thread with work that waits behind it on that core (the scheduler
// does not move a thread that has just run to another core at once), while a yield hands the
// core over and costs one system call where nobody needs it.
bool wait_awake(const std::function<bool()>& ready, std::chrono::microseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    if (i % 8 == 0 && std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
}

void parallel_for(int64_t begin, int64_t end, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (begin >= end) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t n = end - begin;
  if (n <= grain || t_in_parallel || t_thread_limit == 1) {
    body(begin, end);
    return;
  }
  ThreadPool& p = pool();
  int64_t chunks = std::min<int64_t>(num_threads(), (n + grain - 1) / grain);
  if (chunks <= 1) {
    body(begin, end);
    return;
  }
  auto job = std::make_shared<Job>();
  job->body = &body;
  job->begin = begin;
  job->end = end;
  job->chunk = (n + chunks - 1) / chunks;
  job->num_chunks = (n + job->chunk - 1) / job->chunk;
  p.run(job);
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace tandem
