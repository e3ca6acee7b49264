// Shared test helpers: random inputs in every layout the kernels must handle, element access
// that bypasses the kernels (the naive reference side), comparisons that report the worst
// element, and skipping for tests that need a GPU.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tandem.h"

namespace tandem::testing {

// The seed of this run's random inputs: TANDEM_TEST_SEED, or fresh each run (printed at start).
uint64_t test_seed();
// Seeds td's generator from the run's seed and a per-call salt, so inputs differ between calls.
void reseed(uint64_t salt);

// Records the current test as skipped (counted apart from passed in the summary line).
void mark_skipped(const std::string& why);

// ---- the reference side: plain reads through strides, no kernels involved ----
double read(const Tensor& t, int64_t flat_index);  // row-major logical index; CPU tensors only
std::vector<double> values(const Tensor& t);        // all elements, row-major (of a CPU copy)
// The sign bit of each element, row-major: check_equal cannot tell +0 from -0, which compare equal.
std::vector<bool> sign_bits(const Tensor& t);
std::vector<int64_t> unravel(int64_t flat, const Shape& shape);
int64_t ravel(const std::vector<int64_t>& index, const Shape& shape);

// ---- inputs ----
// Layouts a kernel must accept: the same logical values stored differently. Broadcast (the first
// dim of size > 1 expanded from one element, stride 0) can be read but not written, so it is not
// among all_layouts(); read_layouts() adds it.
enum class Layout { Contiguous, Permuted, Strided, Offset, Broadcast };
const std::vector<Layout>& all_layouts();
const std::vector<Layout>& read_layouts();
std::string layout_name(Layout layout);
// A random tensor of `shape` and `dtype` stored in `layout`; values in [lo, hi) (integers truncated).
Tensor random_tensor(const Shape& shape, DType dtype, Layout layout = Layout::Contiguous, double lo = -2,
                     double hi = 2);
// sin(scale * i) over the elements in row-major order, computed in float64 and converted: inputs
// a PyTorch script can make the same way (torch.sin(torch.arange(n) * scale)) for reference values.
Tensor sine_ramp(const Shape& shape, double scale, DType dtype = kFloat64);
// t's values in t's layout (sizes, strides, storage offset) on `device`: the whole storage is
// copied, so a strided or offset view stays one (to() would make it contiguous).
Tensor same_layout_on(const Tensor& t, Device device);

// ---- comparisons ----
// Checks |actual - expected| <= atol + rtol * |expected| everywhere (NaN matches NaN, infinities
// must match exactly), reporting the worst element with its index. Tensors on a GPU are compared
// through CPU copies.
void check_close(const Tensor& actual, const std::vector<double>& expected, double rtol, double atol,
                 const std::string& what = "");
void check_close(const Tensor& actual, const Tensor& expected, double rtol, double atol, const std::string& what = "");
void check_equal(const Tensor& actual, const std::vector<double>& expected, const std::string& what = "");
// Within rtol of want (0: exactly) everywhere, NaN where want is NaN, and infinities and zeros
// exactly, their signs included (which check_equal does not tell apart).
void check_values(const Tensor& actual, const std::vector<double>& want, double rtol, const std::string& what = "");
// Tolerance for results stored in `dtype` after computing in float64.
double rtol_for(DType dtype);

// Runs f and checks it throws tandem::Error whose message contains every fragment.
void check_error(const std::function<void()>& f, const std::vector<std::string>& fragments);
// A deep copy of values, shape and dtype, to prove an operand unchanged after a failed op.
struct Snapshot {
  explicit Snapshot(const Tensor& t);
  void check_unchanged(const Tensor& t) const;
  Shape sizes, strides;
  DType dtype;
  std::vector<double> data;
  uint32_t version;
};

// Sets the pool size for a scope and restores the previous one, also when a check throws.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

// While a guard lives, fresh CUDA memory is filled with `byte`: with 0xFF an output element a
// kernel forgets to write reads back as NaN (floating dtypes), -1 or 255 (integers) or true
// (bool); with 0x00, as zero or false, which catches it where NaN or true was the right answer.
class PoisonGuard {
 public:
  explicit PoisonGuard(uint8_t byte = 0xFF) { cuda::set_poison_allocations(true, byte); }
  ~PoisonGuard() { cuda::set_poison_allocations(false); }
  PoisonGuard(const PoisonGuard&) = delete;
  PoisonGuard& operator=(const PoisonGuard&) = delete;
};

// The text of a data file of the tests (a path from the repository root, such as
// "tests/nn/optim_fixtures.json", declared as data of the test), found in Bazel's runfiles.
std::string read_fixture(const std::string& path);

// A new, empty directory of its own for one test's files, under Bazel's TEST_TMPDIR (or /tmp).
std::string scratch_dir(const std::string& name);

// Runs a shell command; returns its exit status (-1 if it did not exit) and what it printed on
// stdout and stderr.
std::pair<int, std::string> run_command(const std::string& command);

}  // namespace tandem::testing

#define TD_SKIP_UNLESS_CUDA()                                                      \
  do {                                                                             \
    if (!::tandem::cuda::is_available()) {                                         \
      ::tandem::testing::mark_skipped(::tandem::cuda::unavailable_reason());       \
      return;                                                                      \
    }                                                                              \
  } while (0)
