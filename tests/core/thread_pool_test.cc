#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;

TEST_CASE("parallel_for visits every index exactly once in chunks of at least the grain", "[cpu]") {
  for (int threads : {1, 2, 3}) {
    int before = td::num_threads();
    td::set_num_threads(threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(n);
      std::atomic<int64_t> smallest{n};
      std::atomic<int> chunks{0};
      td::parallel_for(0, n, 100, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        if (e < n) smallest = std::min<int64_t>(smallest.load(), e - b);
        chunks.fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
      CHECK(chunks.load() <= threads);
      if (n > 100) CHECK(smallest.load() >= 100);
    }
    td::set_num_threads(before);
  }
}

TEST_CASE("a parallel_for inside a parallel_for body runs inline", "[cpu]") {
  std::atomic<int64_t> total{0};
  td::parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      td::parallel_for(0, 1000, 1, [&](int64_t b2, int64_t e2) {
        CHECK(td::in_parallel_region());
        total.fetch_add(e2 - b2);
      });
    }
  });
  CHECK(total.load() == 4000);
  CHECK(!td::in_parallel_region());
}

TEST_CASE("an exception thrown in a parallel_for body reaches the caller", "[cpu]") {
  CHECK_THROWS_AS(td::parallel_for(0, 100000, 10,
                                   [](int64_t b, int64_t) {
                                     if (b > 0) throw td::Error("boom");
                                   }),
                  td::Error);
  std::atomic<int64_t> after{0};
  td::parallel_for(0, 100000, 10, [&](int64_t b, int64_t e) { after.fetch_add(e - b); });
  CHECK(after.load() == 100000);  // the pool still works
}

TEST_CASE("parallel_for may be called from several threads at once", "[cpu]") {
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 50; ++rep) {
        td::parallel_for(0, 10000, 100, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
      }
    });
  }
  for (auto& c : callers) c.join();
  CHECK(total.load() == 4 * 50 * 10000);
}

TEST_CASE("set_num_threads rejects counts outside 1..1024", "[cpu]") {
  td::testing::check_error([] { td::set_num_threads(0); }, {"set_num_threads", "0"});
}

TEST_CASE("a ThreadLimit caps the threads ops started on this thread may use, for its scope", "[cpu]") {
  int before = td::num_threads();
  td::set_num_threads(3);
  {
    td::ThreadLimit limit(1);
    CHECK(td::num_threads() == 1);
    std::atomic<int> calls{0};
    std::thread::id who;
    td::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
      CHECK(b == 0);
      CHECK(e == 1000);
      who = std::this_thread::get_id();
      ++calls;
    });
    CHECK(calls == 1);
    CHECK(who == std::this_thread::get_id());
    {
      td::ThreadLimit two(2);
      CHECK(td::num_threads() == 2);
      std::atomic<int> chunks{0};
      td::parallel_for(0, 1000, 1, [&](int64_t, int64_t) { ++chunks; });
      CHECK(chunks == 2);
    }
    CHECK(td::num_threads() == 1);
  }
  CHECK(td::num_threads() == 3);
  std::thread other([] { CHECK(td::num_threads() == 3); });  // per thread: others are not limited
  other.join();
  td::testing::check_error([] { td::ThreadLimit none(0); }, {"ThreadLimit", "0"});
  td::set_num_threads(before);
}

TEST_CASE("wait_awake returns once another thread makes ready() hold, or says it timed out", "[cpu]") {
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    flag = true;
  });
  CHECK(td::wait_awake([&] { return flag.load(); }, std::chrono::seconds(10)));
  CHECK(flag);
  setter.join();

  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(td::wait_awake([] { return false; }, std::chrono::microseconds(500)));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::microseconds(500));
  CHECK(td::wait_awake([] { return true; }, std::chrono::microseconds(0)));
}

TEST_CASE("a pool thread is named, as a debugger or perf shows it", "[cpu]") {
  const int size = td::num_threads();
  td::set_num_threads(2);
  std::mutex mutex;
  std::set<std::string> names;
  // Two chunks on two threads; each waits for the other to start, so the pool's thread takes one
  // whatever else the machine is doing (the deadline only keeps a broken pool from hanging).
  std::atomic<int> started{0};
  td::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    char buffer[16] = {};
    pthread_getname_np(pthread_self(), buffer, sizeof(buffer));
    {
      std::lock_guard lock(mutex);
      names.insert(buffer);
    }
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  td::set_num_threads(size);
  CHECK(names.count("tandem-pool") == 1);
}
