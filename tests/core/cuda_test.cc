// The CUDA runtime: discovery, streams, events, guards, the caching allocator on a real device,
// pinned memory. Tests tagged [cuda] skip themselves (and are counted as skipped) without a GPU.
#include <thread>

#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define TD_TEST_HAS_CUDART 1
#endif

#include "core/allocator.h"
#include "core/cuda.h"
#include "tests/testing.h"

namespace td = tandem;

TEST_CASE("a build without the CUDA toolkit or a GPU reports no CUDA devices", "[cpu]") {
  if (td::cuda::built_with_cuda()) {
    CHECK(td::cuda::runtime_version() > 0);
  } else {
    CHECK(td::cuda::device_count() == 0);
    CHECK(!td::cuda::is_available());
  }
  CHECK(td::cuda::is_available() == (td::cuda::device_count() > 0));
  // Without devices, the reason is given (a driver older than the runtime looks like no GPU otherwise).
  CHECK(td::cuda::unavailable_reason().empty() == td::cuda::is_available());
  td::testing::check_error([] { td::cuda::get_device_properties(td::cuda::device_count()); }, {"does not exist"});
  if (!td::cuda::is_available() && td::cuda::built_with_cuda()) {
    td::testing::check_error([] { td::zeros({1}, td::Device("cuda:0")); }, {td::cuda::unavailable_reason()});
  }
}

TEST_CASE("without a GPU, CUDA tensors are an error that names the device", "[cpu]") {
  if (td::cuda::is_available()) return;
  td::testing::check_error([] { td::zeros({2}, td::Device("cuda:0")); }, {"cuda:0"});
  td::testing::check_error([] { td::ones({2}).to(td::Device("cuda:0")); }, {"cuda:0"});
}

TEST_CASE("every visible CUDA device reports a name, memory and compute capability", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  CHECK(td::cuda::driver_version() > 0);
  for (int d = 0; d < td::cuda::device_count(); ++d) {
    auto p = td::cuda::get_device_properties(d);
    CHECK(!p.name.empty());
    CHECK(p.total_memory > 0);
    CHECK(p.major >= 5);
    CHECK(p.multiprocessors > 0);
    CHECK(p.physical_index == td::cuda::physical_device(d));
  }
}

#ifdef TD_TEST_HAS_CUDART
TEST_CASE("device guard selects the GPU behind a logical device and restores the previous one", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  // The guard goes back only to a GPU whose context exists (it makes none on a GPU the thread
  // never used): the thread's GPU gets its context first, as any work there would give it.
  REQUIRE(cudaFree(nullptr) == cudaSuccess);
  int before = -1;
  REQUIRE(cudaGetDevice(&before) == cudaSuccess);
  const int last = td::cuda::device_count() - 1;
  {
    td::cuda::DeviceGuard guard(last);
    int now = -1;
    REQUIRE(cudaGetDevice(&now) == cudaSuccess);
    CHECK(now == td::cuda::physical_device(last));
  }
  int after = -1;
  REQUIRE(cudaGetDevice(&after) == cudaSuccess);
  CHECK(after == before);
  td::testing::check_error([] { td::cuda::DeviceGuard g(td::cuda::device_count()); }, {"does not exist"});
}
#endif

TEST_CASE("each thread has its current stream per device; a guard changes it for a scope", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  const td::cuda::Stream def = td::cuda::default_stream(0);
  CHECK(def.handle() != nullptr);  // not CUDA's legacy stream: logical devices must not share it
  CHECK(td::cuda::current_stream(0) == def);
  td::cuda::Stream side = td::cuda::new_stream(0);
  CHECK(!(side == def));
  {
    td::cuda::StreamGuard guard(side);
    CHECK(td::cuda::current_stream(0) == side);
    std::thread other([&] { CHECK(td::cuda::current_stream(0) == def); });
    other.join();
  }
  CHECK(td::cuda::current_stream(0) == def);
}

TEST_CASE("events order work between streams and time it", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::cuda::Stream a = td::cuda::new_stream(0), b = td::cuda::new_stream(0);
  td::Tensor x;
  {
    td::cuda::StreamGuard on_a(a);
    x = td::full({1 << 22}, 3.0f, td::TensorOptions().device("cuda:0"));
  }
  td::cuda::Event start(true), ready(true);
  start.record(a);
  ready.record(a);
  ready.wait(b);
  {
    td::cuda::StreamGuard on_b(b);
    td::Tensor y = (x * 2).sum();
    // item() copies on the current stream: inside the guard, after the sum (outside it, the
    // default stream's copy would not wait for b).
    CHECK(y.item<double>() == Approx(6.0 * (1 << 22)));
  }
  ready.synchronize();
  CHECK(ready.query());
  CHECK(start.elapsed_ms(ready) >= 0.0);
  td::cuda::Event untimed;
  untimed.record(a);
  td::testing::check_error([&] { start.elapsed_ms(untimed); }, {"timing"});
}

TEST_CASE("released events are reused, and a reused event orders and times work as a new one", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::cuda::Stream stream = td::cuda::new_stream(0);
  td::Tensor x;
  auto use_events = [&] {
    td::cuda::StreamGuard on(stream);
    td::cuda::Event begin(true), end(true), untimed;
    begin.record(stream);
    x = td::full({1 << 20}, 1.0f, td::TensorOptions().device("cuda:0")) * 3;
    end.record(stream);
    untimed.record(stream);
    td::cuda::Event moved = std::move(untimed);  // one event, handed back once
    moved.synchronize();
    CHECK(moved.query());
    CHECK(begin.elapsed_ms(end) >= 0.0);
  };
  use_events();  // the pool now holds what one round needs
  const int64_t created = td::cuda::events_created(), pooled = td::cuda::events_pooled();
  for (int i = 0; i < 50; ++i) use_events();
  CHECK(td::cuda::events_created() == created);
  CHECK(td::cuda::events_pooled() == pooled);  // each event handed back once, the moved one too
  CHECK(x.sum().item<double>() == 3.0 * (1 << 20));
  {
    // An event given back while the work before its record is still queued: its next owner's
    // record is what that owner's waits and queries see.
    td::cuda::StreamGuard on(stream);
    td::cuda::Stream other = td::cuda::new_stream(0);
    td::Tensor big = td::full({1 << 24}, 2.0f, td::TensorOptions().device("cuda:0"));
    td::Tensor z = td::full({1 << 22}, 1.0f, td::TensorOptions().device("cuda:0"));
    {
      td::cuda::Event pending;
      for (int i = 0; i < 4; ++i) big.mul_(1.0f);
      pending.record(stream);
    }
    td::cuda::Event reused;
    z.mul_(3.0f);
    reused.record(stream);
    CHECK(td::cuda::events_created() == created);  // it took the one `pending` gave back
    reused.wait(other);
    {
      td::cuda::StreamGuard on_other(other);
      td::Tensor total = z.sum();
      CHECK(total.item<double>() == 3.0 * (1 << 22));  // read on `other`, where the sum ran
    }
    CHECK(reused.query());
  }
  if (td::cuda::device_count() >= 2) {
    // An event moves between logical devices: from one GPU's pool to another's, or kept where
    // both are the same GPU.
    td::cuda::Event e;
    e.record(td::cuda::default_stream(0));
    e.record(td::cuda::default_stream(1));
    e.synchronize();
    CHECK(e.query());
    CHECK(td::cuda::events_created() <= created + 1);
  }
}

TEST_CASE("a query that finds work still queued leaves no error behind for the next launch", "[cuda][heavy]") {
  TD_SKIP_UNLESS_CUDA();
  // CUDA keeps a query's "not ready" as the thread's last error; a launch check that found it
  // would throw for an innocent kernel. About 20 ms of products keep the stream busy while the
  // stream, an event and the allocator (a freed block still used by that stream) are asked.
  // [heavy]: not under compute-sanitizer, whose launches, like frees without the memory cache
  // (each waits for the device), leave nothing queued.
  const td::TensorOptions gpu = td::TensorOptions().device("cuda:0");
  td::cuda::Stream busy = td::cuda::new_stream(0);
  td::Tensor a = td::randn({4096, 4096}, gpu), small = td::full({1000}, 1.0f, gpu);
  td::cuda::synchronize(0);
  td::cuda::Event done;
  {
    td::cuda::StreamGuard on(busy);
    td::Tensor c = a;
    for (int i = 0; i < 8; ++i) c = c.matmul(a) * 1e-4;
    td::cuda::record_stream(small.storage(), busy);
    done.record(busy);
  }
  // Each query is followed at once by a look at the thread's last error: a later query that
  // cleared it would hide the one that left it.
  auto no_error_left = [](const char* after) {
    INFO("after " << after);
#ifdef TD_TEST_HAS_CUDART
    CHECK(cudaPeekAtLastError() == cudaSuccess);
#endif
  };
  const bool pending = td::cuda::memory_caching_enabled();
  CHECK(busy.query() == !pending);
  no_error_left("the stream's query");
  CHECK(done.query() == !pending);
  no_error_left("the event's query");
  small = td::Tensor();  // its block waits for `busy`: the next allocation asks the event
  td::Tensor b = td::full({1000}, 2.0f, gpu);
  no_error_left("the allocator's query");
  td::Tensor sum = b + 1;  // a launch, checked
  CHECK(sum.sum().item<double>() == 3000.0);
  done.synchronize();
  CHECK(busy.query());
}

TEST_CASE("the caching allocator reuses freed blocks and reports statistics per device", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  if (!td::cuda::memory_caching_enabled()) {
    td::testing::mark_skipped("TANDEM_NO_CUDA_MEMORY_CACHING is set: nothing is cached");
    return;
  }
  const td::Device dev("cuda:0");
  td::cuda::synchronize(0);
  td::empty_cache(td::kCUDA);
  td::reset_peak_memory_stats(dev);
  const td::MemoryStats base = td::memory_stats(dev);
  void* first = nullptr;
  {
    td::Tensor t = td::empty({1 << 20}, td::TensorOptions(td::kFloat32).device(dev));  // 4 MiB
    first = t.data_ptr();
    // The block handed out: 4 MiB cut from a new segment, or a free piece of 4 to 5 MiB that an
    // earlier case left in a segment still in use, which the pool hands out whole (it splits a
    // large block only when more than 1 MiB would be left: BlockPool::allocate).
    CHECK(td::memory_stats(dev).allocated >= base.allocated + (4 << 20));
    CHECK(td::memory_stats(dev).allocated <= base.allocated + (5 << 20));
  }
  td::MemoryStats freed = td::memory_stats(dev);
  CHECK(freed.allocated == base.allocated);
  CHECK(freed.cached >= (4 << 20));
  CHECK(freed.peak_allocated >= base.allocated + (4 << 20));
  td::Tensor again = td::empty({1 << 20}, td::TensorOptions(td::kFloat32).device(dev));
  CHECK(again.data_ptr() == first);
  again = td::Tensor();
  td::empty_cache(td::kCUDA);
  CHECK(td::memory_stats(dev).cached < freed.cached);
}

TEST_CASE("without caching each CUDA tensor is its own allocation, counted at its exact size", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  if (td::cuda::memory_caching_enabled()) {
    td::testing::mark_skipped("runs under TANDEM_NO_CUDA_MEMORY_CACHING=1 (the GPU suite's memcheck stage)");
    return;
  }
  const td::Device dev("cuda:0");
  td::cuda::synchronize(0);
  const td::MemoryStats base = td::memory_stats(dev);
  CHECK(base.cached == 0);
  {
    td::Tensor t = td::full({1001}, 3, td::TensorOptions(td::kUInt8).device(dev));  // no block size divides it
    CHECK(td::memory_stats(dev).allocated == base.allocated + 1001);
    CHECK(td::memory_stats(dev).peak_allocated >= base.allocated + 1001);
    CHECK(td::memory_stats(dev).cached == 0);
    CHECK(t.sum().item<double>() == 3003);
    // An atomic add into the last 16-bit element of an odd-length tensor works on the 32-bit word
    // that holds it: the allocation must hold the whole word (memcheck runs this case).
    td::Tensor h = td::zeros({7}, td::TensorOptions(td::kFloat16).device(dev));
    h.scatter_add_(0, td::tensor(std::vector<int64_t>{6, 6}).to(dev), td::full({2}, 1.5, td::kFloat16).to(dev));
    CHECK(h.cpu().narrow(0, 6, 1).item<double>() == 3.0);
  }
  CHECK(td::memory_stats(dev).allocated == base.allocated);  // freed at once, nothing kept
  CHECK(td::memory_stats(dev).cached == 0);
  const int64_t too_many = td::cuda::get_device_properties(0).total_memory * 2;
  td::testing::check_error([&] { td::empty({too_many}, td::TensorOptions(td::kUInt8).device(dev)); },
                           {"cuda:0", "out of memory", "TANDEM_NO_CUDA_MEMORY_CACHING"});
  CHECK(td::memory_stats(dev).allocated == base.allocated);
}

TEST_CASE("the CUDA allocator reports running out of memory with the facts", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  const int64_t too_many = td::cuda::get_device_properties(0).total_memory * 2;
  td::testing::check_error([&] { td::empty({too_many}, td::TensorOptions(td::kUInt8).device("cuda:0")); },
                           {"cuda:0", "out of memory"});
}

TEST_CASE("poisoned allocations fill fresh CUDA memory with NaN, or with the byte asked for", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::Tensor t, ints;
  {
    td::testing::PoisonGuard poison;
    t = td::empty({1000}, td::TensorOptions(td::kFloat32).device("cuda:0"));
  }
  CHECK(td::ne(t, t).all().item<bool>());  // NaN only
  {
    // Filled with 0xFF and given back to the pool first: fresh device memory is often zero anyway,
    // and the pool hands the same block out again.
    td::testing::PoisonGuard poison;
    td::empty({1000}, td::TensorOptions(td::kInt32).device("cuda:0"));
  }
  {
    td::testing::PoisonGuard poison(0x00);
    ints = td::empty({1000}, td::TensorOptions(td::kInt32).device("cuda:0"));
  }
  CHECK(td::eq(ints, 0).all().item<bool>());
}

TEST_CASE("pinned host memory: copies to and from it round-trip, and it is known as pinned", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  td::Tensor host = td::arange(0, 100000, 1, td::kFloat32);
  td::Tensor pinned = host.pin_memory();
  CHECK(pinned.is_pinned());
  CHECK(!host.is_pinned());
  CHECK(pinned.is_cpu());
  td::Tensor dev = pinned.to(td::Device("cuda:0"));
  td::Tensor back = dev.cpu();
  CHECK(td::eq(back, host).all().item<bool>());
  td::testing::check_error([] { td::ones({2}, td::TensorOptions().device("cuda:0")).pin_memory(); },
                           {"pin_memory", "cuda:0"});
}

TEST_CASE("logical devices on one GPU each have their own stream and memory pool", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (td::cuda::device_count() < 2) {
    td::testing::mark_skipped("needs two logical CUDA devices (e.g. TANDEM_VISIBLE_DEVICES=0,0)");
    return;
  }
  CHECK(!(td::cuda::default_stream(0) == td::cuda::default_stream(1)));
  td::Tensor a = td::ones({1 << 20}, td::TensorOptions().device("cuda:0"));
  td::Tensor b = a.to(td::Device("cuda:1"));
  CHECK(b.device() == td::Device("cuda:1"));
  CHECK(td::memory_stats(td::Device("cuda:1")).allocated >= (4 << 20));
  CHECK(b.sum().item<double>() == Approx(1 << 20));
  // Logical devices on one GPU always reach each other; distinct GPUs may not (PCIe across sockets).
  if (td::cuda::physical_device(0) == td::cuda::physical_device(1)) CHECK(td::cuda::can_access_peer(0, 1));
}

TEST_CASE("a logical device out of memory frees what another logical device on its GPU has cached", "[cuda][devices]") {
  TD_SKIP_UNLESS_CUDA();
  if (td::cuda::device_count() < 2 || td::cuda::physical_device(0) != td::cuda::physical_device(1) ||
      !td::cuda::memory_caching_enabled()) {
    td::testing::mark_skipped("needs two logical devices on one GPU (TANDEM_VISIBLE_DEVICES=0,0) and the cache on");
    return;
  }
#ifdef TD_TEST_HAS_CUDART
  td::cuda::synchronize(0);
  td::empty_cache(td::kCUDA);
  size_t free_bytes = 0, total_bytes = 0;
  {
    td::cuda::DeviceGuard guard(0);
    REQUIRE(cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess);
  }
  // 60% of the free memory, twice: the second fits only once the first is out of cuda:0's cache.
  const int64_t bytes = static_cast<int64_t>(free_bytes / 10 * 6);
  td::empty({bytes}, td::TensorOptions(td::kUInt8).device("cuda:0"));  // freed at once, cached
  CHECK(td::memory_stats(td::Device("cuda:0")).cached >= bytes);
  td::Tensor big = td::empty({bytes}, td::TensorOptions(td::kUInt8).device("cuda:1"));
  CHECK(big.device() == td::Device("cuda:1"));
  CHECK(td::memory_stats(td::Device("cuda:0")).cached < bytes);
  big = td::Tensor();
  td::empty_cache(td::kCUDA);  // the GPU as the next cases expect it
#endif
}
