#include "core/cuda.h"
#include "tests/testing.h"

namespace td = tandem;

TEST_CASE("a build without the CUDA toolkit reports no CUDA devices", "[cpu]") {
  if (td::cuda::built_with_cuda()) {
    CHECK(td::cuda::runtime_version() > 0);
  } else {
    CHECK(td::cuda::device_count() == 0);
    CHECK(!td::cuda::is_available());
  }
  td::testing::check_error([] { td::cuda::get_device_properties(td::cuda::device_count()); }, {"does not exist"});
}

TEST_CASE("every visible CUDA device reports a name, memory and compute capability", "[cuda]") {
  TD_SKIP_UNLESS_CUDA();
  for (int d = 0; d < td::cuda::device_count(); ++d) {
    auto p = td::cuda::get_device_properties(d);
    CHECK(!p.name.empty());
    CHECK(p.total_memory > 0);
    CHECK(p.major >= 5);
    CHECK(p.multiprocessors > 0);
  }
}

TEST_CASE("tensors cannot be made on CUDA devices until the CUDA backend exists", "[cpu]") {
  td::testing::check_error([] { td::zeros({2}, td::Device("cuda:0")); }, {"cuda:0"});
}
