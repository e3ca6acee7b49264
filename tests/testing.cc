#include "tests/testing.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/cuda.h"
#include "core/dispatch.h"

namespace tandem::testing {

uint64_t test_seed() {
  static const uint64_t seed = []() -> uint64_t {
    if (const char* env = std::getenv("TANDEM_TEST_SEED")) return std::stoull(env);
    return (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  }();
  return seed;
}

void reseed(uint64_t salt) { manual_seed(test_seed() ^ (salt * 0x9E3779B97F4A7C15ull)); }

std::set<std::string>& skipped_tests() {
  static std::set<std::string> names;
  return names;
}

void mark_skipped(const std::string& why) {
  std::string name = Catch::getResultCapture().getCurrentTestName();
  skipped_tests().insert(name);
  WARN("skipped: " << why);
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

double read(const Tensor& t, int64_t flat_index) {
  // A GPU's memory is not the host's to read: a test that forgot .cpu() fails here, not by a crash
  // that would end every case after it.
  TD_CHECK(t.is_cpu(), "testing::read: the tensor is on ", t.device(), "; compare .cpu() copies");
  auto index = unravel(flat_index, t.sizes());
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
  return dispatch_all(t.dtype(), "read", [&]<typename T>() {
    const T* p = static_cast<const T*>(t.data_ptr()) + offset;
    return static_cast<double>(static_cast<opmath_t<T>>(*p));
  });
}

std::vector<double> values(const Tensor& t) {
  if (!t.is_cpu()) return values(t.cpu());
  std::vector<double> out(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = read(t, i);
  return out;
}

std::vector<bool> sign_bits(const Tensor& t) {
  std::vector<bool> signs;
  for (double v : values(t)) signs.push_back(std::signbit(v));
  return signs;
}

const std::vector<Layout>& all_layouts() {
  static const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Permuted, Layout::Strided, Layout::Offset};
  return layouts;
}

const std::vector<Layout>& read_layouts() {
  static const std::vector<Layout> layouts = {Layout::Contiguous, Layout::Permuted, Layout::Strided, Layout::Offset,
                                              Layout::Broadcast};
  return layouts;
}

std::string layout_name(Layout layout) {
  switch (layout) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Permuted: return "permuted";
    case Layout::Strided: return "strided";
    case Layout::Offset: return "offset";
    case Layout::Broadcast: return "broadcast";
  }
  return "?";
}

Tensor sine_ramp(const Shape& shape, double scale, DType dtype) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return arange(n, kFloat64).mul(scale).sin().reshape(shape).to(dtype);
}

Tensor random_tensor(const Shape& shape, DType dtype, Layout layout, double lo, double hi) {
  // Drawn in float64 and converted: integers truncate toward zero, bool is "above the midpoint".
  auto make = [&](const Shape& s) -> Tensor {
    Tensor u = rand(s, kFloat64) * (hi - lo) + lo;
    if (dtype == kBool) return u > (lo + hi) / 2;
    return u.to(dtype);
  };
  switch (layout) {
    case Layout::Contiguous: return make(shape);
    case Layout::Permuted: {  // stored with the dims reversed
      Shape reversed(shape.rbegin(), shape.rend());
      Shape order;
      for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) order.push_back(d);
      return make(reversed).permute(order);
    }
    case Layout::Strided: {  // every other element along every dim
      Shape doubled = shape;
      for (auto& s : doubled) s *= 2;
      Tensor t = make(doubled);
      for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) t = t.slice(d, 0, std::nullopt, 2);
      return t;
    }
    case Layout::Offset: {  // a window that starts inside a larger storage
      if (shape.empty()) return make({5}).select(0, 3);
      Shape bigger = shape;
      bigger[0] += 3;
      return make(bigger).narrow(0, 2, shape[0]);
    }
    case Layout::Broadcast: {
      Shape base = shape;
      auto wide = std::find_if(base.begin(), base.end(), [](int64_t s) { return s > 1; });
      if (wide != base.end()) *wide = 1;
      return make(base).expand(shape);
    }
  }
  return Tensor();
}

Tensor same_layout_on(const Tensor& t, Device device) {
  const int64_t elements = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
  Tensor whole = Tensor::make(t.storage(), {elements}, {1}, 0, t.dtype());
  return whole.to(device).as_strided(t.sizes(), t.strides(), t.storage_offset());
}

double rtol_for(DType dtype) {
  switch (dtype) {
    case kFloat64: return 1e-12;
    case kFloat32: return 1e-5;
    case kFloat16: return 2e-3;   // 11-bit significand: half an ulp is 4.9e-4, a few roundings
    case kBFloat16: return 1.6e-2;  // 8-bit significand
    default: return 0;
  }
}

namespace {

std::string index_str(int64_t flat, const Shape& shape) {
  return shape_str(unravel(flat, shape));
}

}  // namespace

void check_close(const Tensor& actual, const std::vector<double>& expected, double rtol, double atol,
                 const std::string& what) {
  if (!actual.is_cpu()) return check_close(actual.cpu(), expected, rtol, atol, what);
  INFO(what);
  REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
  double worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    double a = read(actual, i), e = expected[i];
    bool ok;
    double excess = 0;
    if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
      excess = ok ? 0 : INFINITY;
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
      excess = ok ? 0 : INFINITY;
    } else {
      double err = std::abs(a - e), bound = atol + rtol * std::abs(e);
      ok = err <= bound;
      excess = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0);
    }
    if (!ok && (worst_at < 0 || excess > worst)) {
      worst = excess;
      worst_at = i;
    }
  }
  if (worst_at >= 0) {
    FAIL_CHECK("worst mismatch at " << index_str(worst_at, actual.sizes()) << " of shape "
                                    << shape_str(actual.sizes()) << ": got " << read(actual, worst_at)
                                    << ", expected " << expected[worst_at] << " (rtol " << rtol << ", atol " << atol
                                    << ")");
  } else {
    SUCCEED();
  }
}

void check_close(const Tensor& actual, const Tensor& expected, double rtol, double atol, const std::string& what) {
  REQUIRE(actual.sizes() == expected.sizes());
  check_close(actual, values(expected), rtol, atol, what);
}

void check_equal(const Tensor& actual, const std::vector<double>& expected, const std::string& what) {
  check_close(actual, expected, 0, 0, what);
}

void check_values(const Tensor& actual, const std::vector<double>& want, double rtol, const std::string& what) {
  INFO(what);
  const std::vector<double> v = values(actual);
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i << ": " << v[i] << " against " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(v[i]));
    } else if (std::isinf(want[i]) || want[i] == 0) {
      CHECK(v[i] == want[i]);
      CHECK(std::signbit(v[i]) == std::signbit(want[i]));
    } else {
      CHECK(std::abs(v[i] - want[i]) <= rtol * std::abs(want[i]));
    }
  }
}

void check_error(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
  } catch (const Error& e) {
    std::string message = e.what();
    INFO("message: " << message);
    for (const auto& fragment : fragments) {
      CHECK_THAT(message, Catch::Matchers::Contains(fragment));
    }
    return;
  } catch (const std::exception& e) {
    FAIL_CHECK("expected tandem::Error, got another exception: " << e.what());
    return;
  }
  FAIL_CHECK("expected tandem::Error mentioning " << fragments.front() << ", but nothing was thrown");
}

Snapshot::Snapshot(const Tensor& t)
    : sizes(t.sizes()), strides(t.strides()), dtype(t.dtype()), data(values(t)), version(t.version()) {}

void Snapshot::check_unchanged(const Tensor& t) const {
  CHECK(t.sizes() == sizes);
  CHECK(t.strides() == strides);
  CHECK(t.dtype() == dtype);
  CHECK(t.version() == version);
  std::vector<double> now = values(t);
  REQUIRE(now.size() == data.size());
  for (size_t i = 0; i < now.size(); ++i) {
    bool same = now[i] == data[i] || (std::isnan(now[i]) && std::isnan(data[i]));
    if (!same) {
      FAIL_CHECK("element " << i << " changed from " << data[i] << " to " << now[i]);
      return;
    }
  }
}

std::pair<int, std::string> run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string read_fixture(const std::string& path) {
  // Bazel runs tests in the runfiles tree; TEST_SRCDIR also finds it from elsewhere.
  std::vector<std::string> places = {path};
  if (const char* root = std::getenv("TEST_SRCDIR")) places.push_back(std::string(root) + "/tandem/" + path);
  for (const auto& place : places) {
    std::ifstream in(place);
    if (in) return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  throw std::runtime_error(path + " not found (declare it as data of the test)");
}

std::string scratch_dir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/" + name + ".XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  REQUIRE(::mkdtemp(buffer.data()) != nullptr);
  return buffer.data();
}

}  // namespace tandem::testing
