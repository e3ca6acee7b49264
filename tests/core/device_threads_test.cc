// The per-device worker threads: one persistent thread per device, tasks on several devices at
// once, failures handed back per task, nesting that cannot deadlock, and help with parallel_for.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/device_threads.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "tests/testing.h"

namespace td = tandem;

namespace {

const td::Device cpu0("cpu:0"), cpu1("cpu:1"), cpu2("cpu:2");

}  // namespace

TEST_CASE("each device has one persistent thread, and tasks on several devices run at the same time", "[cpu]") {
  std::mutex mutex;
  std::map<std::string, std::thread::id> first, second;
  auto record = [&](std::map<std::string, std::thread::id>& into, td::Device d) {
    return [&into, &mutex, d] {
      std::lock_guard lock(mutex);
      into[d.str()] = std::this_thread::get_id();
      CHECK(td::current_device_thread() != nullptr);
      CHECK(*td::current_device_thread() == d);
    };
  };
  td::run_on_device_threads({cpu0, cpu1, cpu2}, {record(first, cpu0), record(first, cpu1), record(first, cpu2)});
  td::run_on_device_threads({cpu2, cpu0}, {record(second, cpu2), record(second, cpu0)});
  CHECK(std::set<std::thread::id>{first["cpu:0"], first["cpu:1"], first["cpu:2"], std::this_thread::get_id()}.size() == 4);
  CHECK(second["cpu:0"] == first["cpu:0"]);
  CHECK(second["cpu:2"] == first["cpu:2"]);
  CHECK(td::current_device_thread() == nullptr);

  // Two tasks that each wait for the other finish only if they run at once.
  std::atomic<int> arrived{0};
  auto meet = [&] {
    ++arrived;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    CHECK(arrived == 2);
  };
  td::run_on_device_threads({cpu0, cpu1}, {meet, meet});
}

TEST_CASE("a device's thread is named after its device, as a debugger or perf shows it", "[cpu]") {
  std::string name;
  td::run_on_device_threads({cpu2}, {[&] {
                              char buffer[16] = {};
                              pthread_getname_np(pthread_self(), buffer, sizeof(buffer));
                              name = buffer;
                            }});
  CHECK(name == "tandem-cpu:2");
}

TEST_CASE("a failing task is reported for itself; the others still run", "[cpu]") {
  std::atomic<int> ran{0};
  auto errors = td::run_on_device_threads({cpu0, cpu1, cpu2}, {[&] { ++ran; }, [] { TD_FAIL("task on cpu:1 failed"); },
                                                               [&] { ++ran; }});
  REQUIRE(errors.size() == 3);
  CHECK(errors[0] == nullptr);
  CHECK(errors[2] == nullptr);
  REQUIRE(errors[1] != nullptr);
  td::testing::check_error([&] { std::rethrow_exception(errors[1]); }, {"task on cpu:1 failed"});
  CHECK(ran == 2);
  td::testing::check_error([] { td::run_on_device_threads({cpu0, cpu0}, {[] {}, [] {}}); }, {"cpu:0", "twice"});
  td::testing::check_error([] { td::run_on_device_threads({cpu0}, {}); }, {"0 tasks for 1 devices"});
}

TEST_CASE("tasks started from device threads run there, so devices never wait for each other", "[cpu]") {
  // Each device's task hands work to both devices: waiting for the other's thread would deadlock.
  std::atomic<int> inner{0};
  auto nested = [&] {
    auto errors = td::run_on_device_threads({cpu0, cpu1}, {[&] { ++inner; }, [&] { ++inner; }});
    for (const auto& e : errors) CHECK(e == nullptr);
  };
  for (int i = 0; i < 20; ++i) td::run_on_device_threads({cpu0, cpu1}, {nested, nested});
  CHECK(inner == 20 * 4);
}

namespace {

// One parallel_for of two chunks, each of which waits (at most a while) for the other to start,
// so that a second thread has to take one for both to run at once; then `after(chunk)` runs.
void two_chunks(const std::function<void(int64_t)>& after) {
  std::atomic<int> started{0};
  td::parallel_for(0, 2, 1, [&](int64_t begin, int64_t end) {
    (void)end;  // chunks of one index each
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (started < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    after(begin);
  });
}

// Keeps the threads of cpu:0 and cpu:1 in a task (which first runs note(device)) until a
// parallel_for has a chunk waiting, for at most 100 ms: they then look for work at once, awake,
// while the pool's own worker is only being woken. Counts finished tasks in `done`.
void busy_until_queued(const std::function<void(td::Device)>& note, std::atomic<int>& done) {
  for (td::Device d : {cpu0, cpu1}) {
    td::post_to_device_thread(d, [note, d, &done] {
      note(d);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      while (!td::parallel_for_waiting() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      ++done;
    });
  }
}

void wait_for(const std::atomic<int>& done, int count) {
  while (done < count) std::this_thread::yield();
}

}  // namespace

TEST_CASE("between its tasks, a CPU device's thread takes chunks of other threads' parallel_for", "[cpu]") {
  const int threads = td::num_threads();
  td::set_num_threads(2);
  std::map<std::thread::id, std::string> device_of;  // the device threads' ids
  std::mutex mutex;
  auto note = [&](td::Device d) {
    std::lock_guard lock(mutex);
    device_of[std::this_thread::get_id()] = d.str();
  };
  // One chunk a device thread takes shows both things: that it helps (outside its own work) and
  // that a chunk failing there fails the parallel_for, the device working on. The pool's own
  // worker may take the chunk first; a device thread, looking at once, usually does. Attempts go
  // on for up to 20 s: under the sanitizers, with other tests on both cores, 50 of them once all
  // went to the pool's worker.
  bool helped = false;
  std::atomic<bool> outside_own_work{true};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int attempt = 0; (attempt < 50 || std::chrono::steady_clock::now() < give_up) && !helped; ++attempt) {
    std::atomic<int> done{0};
    busy_until_queued(note, done);
    try {
      two_chunks([&](int64_t) {
        std::lock_guard lock(mutex);
        if (!device_of.contains(std::this_thread::get_id())) return;
        // The chunk is another thread's work, not its device's.
        if (td::current_device_thread() != nullptr) outside_own_work = false;
        TD_FAIL("a chunk failed on a device's thread");
      });
    } catch (const td::Error& e) {
      CHECK(std::string(e.what()).find("a chunk failed on a device's thread") != std::string::npos);
      helped = true;
    }
    wait_for(done, 2);
  }
  CHECK(helped);
  CHECK(outside_own_work);
  CHECK(td::current_device_thread() == nullptr);
  std::atomic<int> ran{0};
  auto errors = td::run_on_device_threads({cpu0, cpu1}, {[&] { ++ran; }, [&] { ++ran; }});
  CHECK(ran == 2);
  for (const auto& e : errors) CHECK(e == nullptr);
  td::set_num_threads(threads);
  CHECK(!td::parallel_for_waiting());
}

TEST_CASE("the pool may be replaced while device threads wait awake for work to help with", "[cpu]") {
  const int threads = td::num_threads();
  for (int i = 0; i < 50; ++i) {
    if (i % 2 == 0) {
      td::run_on_device_threads({cpu0, cpu1}, {[] {}, [] {}});  // awake, polling the pool
    } else {
      // Every thread asleep: the caller runs every chunk itself before the pool's worker wakes.
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    std::atomic<int64_t> sum{0};
    td::parallel_for(0, 1000, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) sum += k;
    });
    CHECK(sum == 999 * 1000 / 2);
    td::set_num_threads(i % 2 == 0 ? 2 : 3);
    // What the old pool still had queued (chunks its callers ran themselves) waits for no one.
    CHECK(!td::parallel_for_waiting());
  }
  td::set_num_threads(threads);
}
