// DeviceTimer and DeviceSeconds: the time a device spent on some work (the host's clock on a CPU
// device, events on a GPU), added up per key without waiting for a busy device.
#include <thread>

#include "core/device_timer.h"
#include "tests/testing.h"

namespace td = tandem;
using namespace std::chrono_literals;

namespace {

td::DeviceTimer cpu_timer_of(std::chrono::milliseconds work) {
  td::DeviceTimer timer(td::Device("cpu:1"));
  std::this_thread::sleep_for(work);
  timer.stop();
  return timer;
}

}  // namespace

TEST_CASE("a CPU device's timer is the host's time from its start to its last stop", "[cpu]") {
  td::DeviceTimer idle;
  CHECK_FALSE(idle.started());
  CHECK(idle.ready());
  CHECK(idle.seconds() == 0);

  td::DeviceTimer timer(td::Device("cpu:1"));
  CHECK(timer.started());
  CHECK(timer.device() == td::Device("cpu:1"));
  CHECK(timer.seconds() == 0);  // not stopped yet
  std::this_thread::sleep_for(20ms);
  timer.stop();
  const double first = timer.seconds();
  CHECK(first >= 0.020);
  CHECK(timer.seconds() == first);  // read again: the same span
  std::this_thread::sleep_for(10ms);
  timer.stop();  // a later stop ends the span later
  CHECK(timer.seconds() >= first + 0.010);
  CHECK(timer.ready());
}

TEST_CASE("a CPU device's timer can be made from two readings of the host's clock", "[cpu]") {
  const auto start = std::chrono::steady_clock::now();
  td::DeviceTimer span = td::DeviceTimer::host_span(td::Device("cpu:2"), start, start + 25ms);
  CHECK(span.started());
  CHECK(span.ready());
  CHECK(span.device() == td::Device("cpu:2"));
  CHECK(span.seconds() == Approx(0.025).epsilon(1e-12));
  td::testing::check_error([&] { td::DeviceTimer::host_span(td::Device("cuda:0"), start, start); },
                           {"DeviceTimer::host_span", "cuda:0", "GPU"});
}

TEST_CASE("DeviceSeconds adds timers per key; work on several devices counts as its longest timer", "[cpu]") {
  td::DeviceSeconds<std::string> ledger;
  td::DeviceTimer a = cpu_timer_of(5ms), b = cpu_timer_of(15ms), c = cpu_timer_of(1ms);
  const double sa = a.seconds(), sb = b.seconds(), sc = c.seconds();
  ledger.add("one", std::move(a));
  std::vector<td::DeviceTimer> group;
  group.push_back(std::move(b));
  group.push_back(std::move(c));
  ledger.add("group", std::move(group));
  auto totals = ledger.totals();
  CHECK(totals.size() == 2);
  CHECK(totals.at("one") == sa);
  CHECK(totals.at("group") == std::max(sb, sc));
}

TEST_CASE("DeviceSeconds counts from a mark only the timers added after it", "[cpu]") {
  td::DeviceSeconds<int> ledger;
  td::DeviceTimer early = cpu_timer_of(2ms), late = cpu_timer_of(3ms), other = cpu_timer_of(1ms);
  const double se = early.seconds(), sl = late.seconds(), so = other.seconds();
  ledger.add(0, std::move(early));
  auto mark = ledger.mark();
  ledger.add(0, std::move(late));
  ledger.add(1, std::move(other));
  auto since = ledger.since(mark);
  CHECK(since.at(0) == Approx(sl).margin(1e-12));
  CHECK(since.at(1) == so);
  auto all = ledger.totals();
  CHECK(all.at(0) == Approx(se + sl).margin(1e-12));
  CHECK(ledger.since(ledger.mark()).at(0) == 0);  // a fresh mark: nothing after it yet
}

TEST_CASE("a GPU timer spans the work queued between start and stop; reading it waits for that work", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  const td::Device gpu("cuda:0");
  td::Tensor a = td::randn({2048, 2048}, td::TensorOptions().device(gpu));
  td::cuda::synchronize(0);
  td::DeviceTimer empty(gpu);
  empty.stop();
  td::DeviceTimer busy(gpu);
  td::Tensor c = a;
  for (int i = 0; i < 8; ++i) c = c.matmul(a) * 1e-3;
  busy.stop();
  const double seconds = busy.seconds();  // waits
  CHECK(busy.ready());
  CHECK(td::cuda::current_stream(0).query());  // the work before the stop is done
  CHECK(seconds > 0);
  CHECK(seconds < 10);
  CHECK(empty.seconds() >= 0);
  CHECK(empty.seconds() < seconds);
}

TEST_CASE("a mark taken while a GPU timer is still pending does not count it", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  const td::Device gpu("cuda:0");
  td::Tensor a = td::randn({4096, 4096}, td::TensorOptions().device(gpu));
  td::cuda::synchronize(0);
  td::DeviceSeconds<td::Device> ledger;
  td::DeviceTimer pending(gpu);
  td::Tensor c = a;
  for (int i = 0; i < 4; ++i) c = c.matmul(a) * 1e-4;
  pending.stop();
  ledger.add(gpu, std::move(pending));  // returns without waiting for the product
  auto mark = ledger.mark();
  td::DeviceTimer after(gpu);
  td::Tensor d = a + 1;
  after.stop();
  ledger.add(gpu, std::move(after));
  const double since = ledger.since(mark).at(gpu);
  const double total = ledger.totals().at(gpu);
  CHECK(since > 0);
  CHECK(since < total);
}
