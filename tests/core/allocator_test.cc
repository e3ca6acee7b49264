// The CPU allocator: alignment, per-device statistics, and the cache of large blocks.
#include "core/allocator.h"
#include "tests/testing.h"

namespace td = tandem;

TEST_CASE("cpu blocks are 64-byte aligned at every size", "[cpu]") {
  for (int64_t n : {1, 7, 33, 1000, 1 << 18, (1 << 20) + 3, 3 << 20}) {
    td::Tensor t = td::empty({n}, td::kUInt8);
    CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % td::kCpuAlignment == 0);
  }
}

TEST_CASE("memory statistics count the bytes held on each cpu device and their peak", "[cpu]") {
  td::Device dev("cpu:7");
  td::reset_peak_memory_stats(dev);
  td::MemoryStats before = td::memory_stats(dev);
  {
    td::Tensor a = td::zeros({1000}, td::TensorOptions(td::kFloat64).device(dev));
    td::Tensor b = td::zeros({3 << 20}, td::TensorOptions(td::kUInt8).device(dev));
    CHECK(td::memory_stats(dev).allocated == before.allocated + 8000 + (3 << 20));
    CHECK(td::memory_stats(td::Device("cpu:6")).allocated == 0);
  }
  td::MemoryStats after = td::memory_stats(dev);
  CHECK(after.allocated == before.allocated);
  CHECK(after.peak_allocated == before.allocated + 8000 + (3 << 20));
  td::reset_peak_memory_stats(dev);
  CHECK(td::memory_stats(dev).peak_allocated == after.allocated);
}

TEST_CASE("a freed large block is reused for the next request of its size", "[cpu]") {
  void* first;
  {
    td::Tensor t = td::empty({4 << 20}, td::kUInt8);
    first = t.data_ptr();
  }
  CHECK(td::memory_stats(td::Device("cpu:0")).cached >= (4 << 20));
  td::Tensor again = td::empty({4 << 20}, td::kUInt8);
  CHECK(again.data_ptr() == first);
  again = td::Tensor();
  td::empty_cache(td::kCPU);
  CHECK(td::memory_stats(td::Device("cpu:0")).cached == 0);
}

TEST_CASE("a freed large block goes back to the cpu device that freed it", "[cpu]") {
  td::empty_cache(td::kCPU);
  const td::Device cpu0("cpu:0"), cpu1("cpu:1");
  const auto on = [](td::Device d) { return td::TensorOptions(td::kUInt8).device(d); };
  void* first;
  {
    td::Tensor t = td::empty({1 << 20}, on(cpu1));
    first = t.data_ptr();
  }
  CHECK(td::memory_stats(cpu0).cached >= (1 << 20));  // the cache is counted whole, on every device
  td::Tensor elsewhere = td::empty({1 << 20}, on(cpu0));  // the other device's thread would fetch its lines
  CHECK(elsewhere.data_ptr() != first);
  td::Tensor again = td::empty({1 << 20}, on(cpu1));
  CHECK(again.data_ptr() == first);
  CHECK(td::memory_stats(cpu1).allocated >= (1 << 20));
  elsewhere = td::Tensor();
  again = td::Tensor();
  td::empty_cache(td::kCPU);
  CHECK(td::memory_stats(cpu1).cached == 0);
}

TEST_CASE("a storage whose memory cannot be freed says so instead of ending the program", "[cpu]") {
  static float data[4];
  bool called = false;
  {
    td::Storage s = td::Storage::wrap(data, sizeof(data), td::Device("cpu:0"), [&](void*) {
      called = true;
      TD_FAIL("the device refused the free");
    });
  }  // the destructor reports the failure on stderr
  CHECK(called);
}
