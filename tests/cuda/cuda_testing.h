// Helpers for the [cuda] tests, which prove each CUDA kernel against its CPU twin: inputs in the
// same layout on both devices, a comparison of a CUDA result with the CPU's that names the worst
// element, poisoned CUDA allocations for the length of a test, and snapshots of operands on any device.
#pragma once

#include <string>
#include <vector>

#include "tests/testing.h"

namespace tandem::cuda_testing {

// The device under test: cuda:0, or in a dry run the CPU device TANDEM_TEST_DEVICE names.
const Device& device();

// A dry run (TANDEM_TEST_DEVICE=cpu:1, say) proves the [cuda] cases themselves on a machine
// without a GPU: their inputs, CPU references and checks run, each "device" result being the CPU
// kernels' own on that device, so every comparison must hold. It proves the tests, not the kernels.
bool dry_run();

// Skips a case that needs a GPU, unless this is a dry run (for cases that need no CUDA API of their own).
#define TD_SKIP_UNLESS_DEVICE_UNDER_TEST()                                      \
  do {                                                                          \
    if (!::tandem::cuda_testing::dry_run()) TD_SKIP_UNLESS_CUDA();               \
  } while (0)

// Skips a case that needs CUDA itself (streams, pinned memory, cuDNN, cuBLASLt): without a GPU, and
// in a dry run also where there is one (its device under test is a CPU then).
#define TD_SKIP_UNLESS_CUDA_ITSELF()                                                                \
  do {                                                                                             \
    if (::tandem::cuda_testing::dry_run()) {                                                        \
      ::tandem::testing::mark_skipped("needs CUDA itself, and this is a dry run on a CPU device"); \
      return;                                                                                      \
    }                                                                                              \
    TD_SKIP_UNLESS_CUDA();                                                                         \
  } while (0)

// td::manual_seed(seed), then the device under test keyed as cpu:0 is (devices have keys of their
// own): its random kernels then draw the words the CPU's draw, which the tests compare.
void manual_seed_as_cpu(uint64_t seed);

using testing::PoisonGuard;
// Both poisons, for the sweeps whose right answers are often NaN or true (which 0xFF reads as).
inline constexpr uint8_t kPoisonBytes[] = {0xFF, 0x00};

// Layouts of an input: every layout a kernel reads, Broadcast included.
using testing::Layout;
using testing::layout_name;
inline const std::vector<Layout>& all_layouts() { return testing::read_layouts(); }

// `cpu`'s values in the same layout (sizes, strides, storage offset) on the device under test.
Tensor twin(const Tensor& cpu);

// A random input on the CPU and its twin. Values in [lo, hi) (integers truncated, uint8 from
// max(lo, 0), bool: above the midpoint).
struct Pair {
  Tensor cpu, dev;
};
Tensor random_input(const Shape& shape, DType dtype, Layout layout = Layout::Contiguous, double lo = -2, double hi = 2);
Pair random_pair(const Shape& shape, DType dtype, Layout layout = Layout::Contiguous, double lo = -2, double hi = 2);

// Checks a result of the device under test against the CPU's: on that device, of the reference's
// shape and dtype, and every element within atol + rtol * |scale| (scale: the reference itself
// unless given, e.g. the sum of |x| for a sum, on any device). NaN matches NaN and infinities match
// exactly. A failure names the worst element: its index and both values.
void check_close(const Tensor& actual, const Tensor& cpu_ref, double rtol, double atol = 0,
                 const std::string& what = "", const Tensor& scale = Tensor());
// Every element equal (integers compared as int64, floats as doubles, NaN matching NaN).
void check_equal(const Tensor& actual, const Tensor& cpu_ref, const std::string& what = "");

// The relative tolerance for a result of `dtype` computed two ways (testing::rtol_for).
double rtol_for(DType dtype);

// |t| as float64 on the CPU: the magnitudes that scale a tolerance.
Tensor abs64(const Tensor& t);

// An operand on any device, to prove it unchanged after a failed op: its layout, version and values.
class Unchanged {
 public:
  explicit Unchanged(const Tensor& t);
  void check() const;

 private:
  Tensor tensor_;
  uint32_t version_;
  Shape sizes_, strides_;
  testing::Snapshot values_;
};

}  // namespace tandem::cuda_testing
