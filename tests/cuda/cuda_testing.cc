#include "tests/cuda/cuda_testing.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tandem::cuda_testing {

namespace {

// The CPU device TANDEM_TEST_DEVICE names for a dry run (not cpu:0, the references' device), or cuda:0.
Device device_under_test() {
  const char* name = std::getenv("TANDEM_TEST_DEVICE");
  if (name == nullptr || *name == '\0') return Device(kCUDA, 0);
  const Device d(name);
  TD_CHECK(d.is_cpu() && d.index() != 0, "TANDEM_TEST_DEVICE: a dry run of the [cuda] tests takes a CPU device "
           "other than cpu:0 (cpu:1, say), got ", name);
  std::fprintf(stderr, "tandem-tests: a dry run, the device under test is %s\n", name);
  return d;
}

}  // namespace

const Device& device() {
  static const Device d = device_under_test();
  return d;
}

bool dry_run() { return device().is_cpu(); }

void manual_seed_as_cpu(uint64_t seed) {
  manual_seed(seed);
  default_generator(device()).manual_seed(default_generator().initial_seed());
}

Tensor twin(const Tensor& cpu) {
  REQUIRE(cpu.is_cpu());
  return testing::same_layout_on(cpu, device());
}

Tensor random_input(const Shape& shape, DType dtype, Layout layout, double lo, double hi) {
  if (dtype == kUInt8 && lo < 0) lo = 0;
  return testing::random_tensor(shape, dtype, layout, lo, hi);
}

Pair random_pair(const Shape& shape, DType dtype, Layout layout, double lo, double hi) {
  Tensor cpu = random_input(shape, dtype, layout, lo, hi);
  return {cpu, twin(cpu)};
}

double rtol_for(DType dtype) { return testing::rtol_for(dtype); }

Tensor abs64(const Tensor& t) { return t.detach().to(Device(kCPU), kFloat64).abs(); }

namespace {

// The values of t on the host, contiguous, as `as` (float64 or int64).
Tensor host(const Tensor& t, DType as) { return t.detach().to(Device(kCPU), as).contiguous(); }

std::string index_str(int64_t flat, const Shape& shape) { return shape_str(testing::unravel(flat, shape)); }

}  // namespace

void check_close(const Tensor& actual, const Tensor& cpu_ref, double rtol, double atol, const std::string& what,
                 const Tensor& scale) {
  INFO(what);
  REQUIRE(actual.defined());
  REQUIRE(cpu_ref.defined());
  CHECK(actual.device() == device());
  REQUIRE(actual.sizes() == cpu_ref.sizes());
  CHECK(actual.dtype() == cpu_ref.dtype());
  const int64_t n = actual.numel();
  const bool exact_integers = rtol == 0 && atol == 0 && !is_floating(actual.dtype()) && !is_floating(cpu_ref.dtype());
  if (exact_integers) {  // int64 values beyond 2^53 would merge as doubles
    Tensor a = host(actual, kInt64), e = host(cpu_ref, kInt64);
    const int64_t* pa = a.data_ptr<int64_t>();
    const int64_t* pe = e.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (pa[i] != pe[i]) {
        int64_t mismatches = 0;
        for (int64_t j = i; j < n; ++j) mismatches += pa[j] != pe[j];
        FAIL_CHECK("first mismatch at " << index_str(i, actual.sizes()) << " of shape " << shape_str(actual.sizes())
                                        << ": got " << pa[i] << ", expected " << pe[i] << " (" << mismatches << " of "
                                        << n << " elements differ)");
        return;
      }
    }
    SUCCEED();
    return;
  }
  Tensor a = host(actual, kFloat64), e = host(cpu_ref, kFloat64);
  Tensor s = scale.defined() ? host(scale.expand(actual.sizes()), kFloat64) : Tensor();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  const double* ps = s.defined() ? s.data_ptr<double>() : nullptr;
  double worst = 0;
  int64_t worst_at = -1, mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = pa[i], y = pe[i];
    double excess = 0;
    if (x == y || (std::isnan(x) && std::isnan(y))) {
      continue;
    } else if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) {
      excess = INFINITY;
    } else {
      const double bound = atol + rtol * std::abs(ps ? ps[i] : y);
      const double err = std::abs(x - y);
      if (err <= bound) continue;
      excess = bound > 0 ? err / bound : INFINITY;
    }
    ++mismatches;
    if (worst_at < 0 || excess > worst) {
      worst = excess;
      worst_at = i;
    }
  }
  if (worst_at >= 0) {
    std::ostringstream bound;
    bound << "rtol " << rtol << ", atol " << atol;
    if (ps) bound << ", scale " << ps[worst_at];
    FAIL_CHECK("worst mismatch at " << index_str(worst_at, actual.sizes()) << " of shape " << shape_str(actual.sizes())
                                    << ": got " << pa[worst_at] << ", expected " << pe[worst_at] << " (" << bound.str()
                                    << "; " << mismatches << " of " << n << " elements out of tolerance)");
  } else {
    SUCCEED();
  }
}

void check_equal(const Tensor& actual, const Tensor& cpu_ref, const std::string& what) {
  check_close(actual, cpu_ref, 0, 0, what);
}

Unchanged::Unchanged(const Tensor& t)
    : tensor_(t), version_(t.version()), sizes_(t.sizes()), strides_(t.strides()), values_(t.cpu()) {}

void Unchanged::check() const {
  CHECK(tensor_.version() == version_);
  CHECK(tensor_.sizes() == sizes_);
  CHECK(tensor_.strides() == strides_);
  values_.check_unchanged(tensor_.cpu());
}

}  // namespace tandem::cuda_testing
