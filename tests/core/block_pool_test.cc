// The caching allocator's bookkeeping (core/block_pool.h), on a fake device backed by host memory
// with events the test completes by hand: sizes, splitting, merging, reuse per stream, streams
// that must finish before reuse, out-of-memory recovery, statistics, and concurrent use.
#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "core/block_pool.h"
#include "tests/testing.h"

namespace td = tandem;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Memory from malloc up to `capacity` bytes; each event is done once the test says so.
class FakeDevice : public td::PoolBackend {
 public:
  explicit FakeDevice(size_t capacity = size_t{1} << 40) : capacity(capacity) {}
  ~FakeDevice() override {
    for (auto& [ptr, size] : live) std::free(ptr);
  }
  void* raw_alloc(size_t nbytes) override {
    if (used + nbytes > capacity) return nullptr;
    void* p = std::malloc(nbytes);
    live[p] = nbytes;
    used += nbytes;
    ++raw_allocs;
    return p;
  }
  void raw_free(void* ptr) override {
    used -= live.at(ptr);
    live.erase(ptr);
    std::free(ptr);
    ++raw_frees;
  }
  void* record_event(void* stream) override {
    events.push_back({stream, false});
    return reinterpret_cast<void*>(events.size());  // 1-based ids
  }
  bool event_done(void* event) override { return events[reinterpret_cast<size_t>(event) - 1].done; }
  void wait_event(void* event) override {
    events[reinterpret_cast<size_t>(event) - 1].done = true;  // the stream's work, finished
    ++waits;
  }
  void release_event(void* event) override { released.insert(reinterpret_cast<size_t>(event)); }
  void finish_all() {
    for (auto& e : events) e.done = true;
  }

  struct Event {
    void* stream;
    bool done;
  };
  size_t capacity, used = 0;
  int raw_allocs = 0, raw_frees = 0, waits = 0;
  std::map<void*, size_t> live;
  std::vector<Event> events;
  std::set<size_t> released;
};

void* const kStreamA = reinterpret_cast<void*>(0x10);
void* const kStreamB = reinterpret_cast<void*>(0x20);

}  // namespace

TEST_CASE("block pool: requests are rounded to 512 bytes and segments sized by request", "[cpu]") {
  CHECK(td::BlockPool::round_size(1) == 512);
  CHECK(td::BlockPool::round_size(512) == 512);
  CHECK(td::BlockPool::round_size(513) == 1024);
  CHECK(td::BlockPool::segment_size(512) == 2 * kMiB);
  CHECK(td::BlockPool::segment_size(kMiB) == 2 * kMiB);
  CHECK(td::BlockPool::segment_size(kMiB + 512) == 20 * kMiB);
  CHECK(td::BlockPool::segment_size(10 * kMiB) == 10 * kMiB);
  CHECK(td::BlockPool::segment_size(10 * kMiB + 512) == 12 * kMiB);
}

TEST_CASE("block pool: small blocks are cut from one segment and freed blocks merge back", "[cpu]") {
  FakeDevice device;
  td::BlockPool pool(device, "fake:0");
  CHECK(pool.allocate(0, kStreamA) == nullptr);
  char* a = static_cast<char*>(pool.allocate(1000, kStreamA));
  char* b = static_cast<char*>(pool.allocate(3000, kStreamA));
  char* c = static_cast<char*>(pool.allocate(512, kStreamA));
  CHECK(device.raw_allocs == 1);
  CHECK(b == a + 1024);  // the tail of a's segment
  CHECK(c == b + 3072);
  CHECK(pool.block_size(b) == 3072);
  td::PoolStats s = pool.stats();
  CHECK(s.allocated == 1024 + 3072 + 512);
  CHECK(s.reserved == static_cast<int64_t>(2 * kMiB));
  CHECK(s.segments == 1);
  CHECK(s.allocations == 3);

  pool.free(a);
  pool.free(c);
  CHECK(pool.empty_cache() == 0);  // b still holds part of the segment: nothing goes back
  CHECK(device.raw_frees == 0);
  pool.free(b);  // merges with both neighbours into the whole segment
  CHECK(pool.stats().allocated == 0);
  CHECK(pool.stats().segments == 1);
  void* whole = pool.allocate(kMiB, kStreamA);  // the largest small request, cut from the merged segment
  CHECK(whole == a);
  CHECK(device.raw_allocs == 1);
  pool.free(whole);
  CHECK(pool.empty_cache() == static_cast<int64_t>(2 * kMiB));  // the bytes given back
  CHECK(device.raw_frees == 1);
  CHECK(pool.stats().reserved == 0);
  CHECK(pool.stats().segments == 0);
}

TEST_CASE("block pool: a freed block is reused on its stream only", "[cpu]") {
  FakeDevice device;
  td::BlockPool pool(device, "fake:0");
  void* a = pool.allocate(4 * kMiB, kStreamA);
  pool.free(a);
  void* on_b = pool.allocate(4 * kMiB, kStreamB);
  CHECK(on_b != a);  // another stream may still be using a: it gets its own segment
  void* again = pool.allocate(4 * kMiB, kStreamA);
  CHECK(again == a);
  CHECK(device.raw_allocs == 2);
  pool.free(on_b);
  pool.free(again);
}

TEST_CASE("block pool: large requests split only when more than 1 MiB is left", "[cpu]") {
  FakeDevice device;
  td::BlockPool pool(device, "fake:0");
  void* a = pool.allocate(5 * kMiB, kStreamA);  // a 20 MiB segment, 15 MiB left free
  void* b = pool.allocate(14 * kMiB + kMiB / 2, kStreamA);  // fits the rest; the last 0.5 MiB stays with it
  CHECK(device.raw_allocs == 1);
  CHECK(pool.block_size(b) == 15 * kMiB);
  void* c = pool.allocate(30 * kMiB, kStreamA);  // its own segment, rounded to 2 MiB
  CHECK(device.raw_allocs == 2);
  CHECK(pool.stats().reserved == static_cast<int64_t>(50 * kMiB));
  for (void* p : {a, b, c}) pool.free(p);
  pool.empty_cache();
  CHECK(device.live.empty());
}

TEST_CASE("block pool: a block used on another stream waits for that stream's work", "[cpu]") {
  FakeDevice device;
  td::BlockPool pool(device, "fake:0");
  void* a = pool.allocate(4096, kStreamA);
  pool.record_stream(a, kStreamB);
  pool.record_stream(a, kStreamB);  // recorded once
  pool.record_stream(a, kStreamA);  // its own stream needs nothing
  pool.free(a);
  REQUIRE(device.events.size() == 1);
  CHECK(device.events[0].stream == kStreamB);
  void* while_busy = pool.allocate(4096, kStreamA);
  CHECK(while_busy != a);  // stream B may still read a
  device.finish_all();
  void* after = pool.allocate(4096, kStreamA);
  CHECK(after == a);
  CHECK(device.released.count(1) == 1);
  pool.free(while_busy);
  pool.free(after);
}

TEST_CASE("block pool: out of memory releases the cache, then fails with the facts", "[cpu]") {
  FakeDevice device(24 * kMiB);
  td::BlockPool pool(device, "fake:3");
  void* a = pool.allocate(2 * kMiB, kStreamA);  // a 20 MiB segment
  pool.free(a);                                  // cached
  void* big = pool.allocate(12 * kMiB, kStreamB);  // needs the cache given back first
  CHECK(device.raw_frees == 1);
  td::PoolStats before = pool.stats();
  td::testing::check_error([&] { pool.allocate(16 * kMiB, kStreamB); },
                           {"fake:3", "out of memory", "16 MiB", "12 MiB"});
  td::PoolStats after = pool.stats();
  CHECK(after.allocated == before.allocated);
  CHECK(after.reserved == before.reserved);
  pool.free(big);
}

TEST_CASE("block pool: out of memory waits for the streams still using freed blocks, then reuses them", "[cpu]") {
  FakeDevice device(24 * kMiB);
  td::BlockPool pool(device, "fake:2");
  void* a = pool.allocate(12 * kMiB, kStreamA);
  pool.record_stream(a, kStreamB);
  pool.free(a);  // stream B's work on it has not finished
  void* small = pool.allocate(4096, kStreamA);  // nothing is waited for while memory lasts
  CHECK(device.waits == 0);
  pool.free(small);
  void* big = pool.allocate(16 * kMiB, kStreamA);  // fits only once a's segment is given back
  CHECK(device.waits == 1);
  CHECK(device.released.count(1) == 1);
  CHECK(pool.stats().reserved == static_cast<int64_t>(16 * kMiB));
  pool.free(big);
  // empty_cache waits too: a block freed while another stream uses it is given back.
  void* c = pool.allocate(4 * kMiB, kStreamA);
  pool.record_stream(c, kStreamB);
  pool.free(c);
  pool.empty_cache();
  CHECK(device.waits == 2);
  CHECK(device.live.empty());
}

TEST_CASE("block pool: out of memory, a block other streams were using serves the request within its segment",
          "[cpu]") {
  FakeDevice device(24 * kMiB);
  td::BlockPool pool(device, "fake:4");
  void* x = pool.allocate(4 * kMiB, kStreamA);  // a 20 MiB segment: x, then 16 MiB free
  void* y = pool.allocate(4 * kMiB, kStreamA);  // y, then 12 MiB free
  pool.record_stream(y, kStreamB);
  pool.free(y);  // pending: its 4 MiB and the 12 behind it make 16 once stream B is done
  // 14 MiB: no free block fits, no new segment fits, and x keeps the segment from being given back.
  void* big = pool.allocate(14 * kMiB, kStreamA);
  CHECK(big == y);
  CHECK(device.waits == 1);
  CHECK(device.raw_allocs == 1);
  pool.free(big);
  pool.free(x);
}

TEST_CASE("block pool: try_allocate returns null when out of memory, and succeeds once another pool's cache is freed",
          "[cpu]") {
  // Two pools on one device, as two logical devices share one GPU.
  FakeDevice device(24 * kMiB);
  td::BlockPool first(device, "fake:0"), second(device, "fake:1");
  first.free(first.allocate(2 * kMiB, kStreamA));  // 20 MiB cached by the first pool
  const td::PoolStats before = second.stats();
  CHECK(second.try_allocate(12 * kMiB, kStreamB) == nullptr);
  CHECK(second.stats().allocated == before.allocated);
  CHECK(second.stats().reserved == before.reserved);
  CHECK(second.try_allocate(0, kStreamB) == nullptr);  // 0 bytes: null, as allocate gives
  CHECK(first.empty_cache() == static_cast<int64_t>(20 * kMiB));
  void* big = second.try_allocate(12 * kMiB, kStreamB);
  REQUIRE(big != nullptr);
  CHECK(second.stats().allocated == 12 * kMiB);
  second.free(big);
}

TEST_CASE("block pool: errors for pointers it did not hand out", "[cpu]") {
  FakeDevice device;
  td::BlockPool pool(device, "fake:0");
  int x = 0;
  td::testing::check_error([&] { pool.free(&x); }, {"fake:0", "did not hand out"});
  td::testing::check_error([&] { pool.record_stream(&x, kStreamB); }, {"fake:0", "not an allocated block"});
  CHECK(!pool.owns(&x));
  void* a = pool.allocate(100, kStreamA);
  CHECK(pool.owns(a));
  pool.free(a);
  CHECK(!pool.owns(a));
}

TEST_CASE("block pool: peak statistics and their reset", "[cpu]") {
  FakeDevice device;
  td::BlockPool pool(device, "fake:0");
  void* a = pool.allocate(3 * kMiB, kStreamA);
  void* b = pool.allocate(3 * kMiB, kStreamA);
  pool.free(b);
  td::PoolStats s = pool.stats();
  CHECK(s.allocated == static_cast<int64_t>(3 * kMiB));
  CHECK(s.peak_allocated == static_cast<int64_t>(6 * kMiB));
  pool.reset_peak();
  CHECK(pool.stats().peak_allocated == static_cast<int64_t>(3 * kMiB));
  pool.free(a);
}

TEST_CASE("block pool: threads allocating and freeing at once leave it consistent", "[cpu]") {
  FakeDevice device;
  td::BlockPool pool(device, "fake:0");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      std::vector<void*> held;
      for (int i = 0; i < 2000; ++i) {
        held.push_back(pool.allocate(static_cast<size_t>((i * 7919 + t) % 300000 + 1), t % 2 ? kStreamA : kStreamB));
        if (held.size() > 8) {
          pool.free(held.front());
          held.erase(held.begin());
        }
      }
      for (void* p : held) pool.free(p);
    });
  }
  for (auto& th : threads) th.join();
  CHECK(pool.stats().allocated == 0);
  pool.empty_cache();
  CHECK(device.live.empty());
  CHECK(pool.stats().reserved == 0);
}

TEST_CASE("block pool: a block whose streams could not be ordered by an event is never handed out again", "[cpu]") {
  // The event for stream B fails (a CUDA error, say): nothing can tell when B is done with the
  // block, so the free reports the error and the block stays out of the pool, also once the
  // event recorded for another stream has completed.
  struct FailingEvents : FakeDevice {
    void* record_event(void* stream) override {
      if (stream == kStreamB) TD_FAIL("recording an event failed");
      return FakeDevice::record_event(stream);
    }
  } device;
  td::BlockPool pool(device, "fake:0");
  void* const stream_c = reinterpret_cast<void*>(0x30);
  void* a = pool.allocate(4096, kStreamA);
  pool.record_stream(a, stream_c);  // its event is recorded, then B's fails
  pool.record_stream(a, kStreamB);
  td::testing::check_error([&] { pool.free(a); }, {"recording an event failed"});
  REQUIRE(device.events.size() == 1);
  CHECK(pool.stats().allocated == 0);
  device.finish_all();
  void* next = pool.allocate(4096, kStreamA);
  CHECK(next != a);
  pool.free(next);
  pool.empty_cache();  // the segment holding the lost block stays
  CHECK(pool.stats().reserved > 0);
}
