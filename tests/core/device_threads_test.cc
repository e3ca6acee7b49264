// The per-device worker threads: one persistent thread per device, tasks on several devices at
// once, failures handed back per task, and nesting that cannot deadlock.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "core/device_threads.h"
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
