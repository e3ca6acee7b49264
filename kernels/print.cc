// Printing a tensor as PyTorch prints it: tensor([[1.0000, 2.0000], ...], dtype=float64).
// The rules follow torch/_tensor_str.py: one format for all elements (integer-valued floats as
// "1.", fixed with 4 decimals, or scientific when the magnitudes span too much), padded to one
// width, wrapped at 80 columns, and summarised with "..." beyond 1000 elements.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "core/dispatch.h"
#include "kernels/backend.h"
#include "kernels/copy.h"
#include "kernels/print.h"

namespace tandem::kernels {

namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int kLineWidth = 80;

std::string printf_str(const char* format, long double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string python_float(long double v) {  // Python's str() for nan/inf, which printf spells differently
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return "";
}

// The formatter PyTorch builds from the (summarised) values.
class Formatter {
 public:
  Formatter(const std::vector<long double>& values, DType dtype) : floating_(is_floating(dtype)), bool_(dtype == kBool) {
    if (!floating_) {
      for (long double v : values) max_width_ = std::max(max_width_, format_plain(v).size());
      return;
    }
    std::vector<long double> finite;
    for (long double v : values) {
      if (std::isfinite(v) && v != 0) finite.push_back(v);
    }
    if (finite.empty()) return;
    long double lo = std::abs(finite[0]), hi = lo;
    for (long double v : finite) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    bool wide = hi / lo > 1000.0L || hi > 1.0e8L;
    sci_mode_ = int_mode_ ? wide : wide || lo < 1.0e-4L;
    for (long double v : finite) {
      size_t width = sci_mode_ ? sci(v).size() : int_mode_ ? printf_str("%.0Lf", v).size() + 1 : fixed(v).size();
      max_width_ = std::max(max_width_, width);
    }
  }

  size_t width() const { return max_width_; }

  std::string format(long double v) const {
    std::string s;
    if (!floating_) {
      s = format_plain(v);
    } else if (!std::isfinite(v)) {
      s = python_float(v);
    } else if (sci_mode_) {
      s = sci(v);
    } else if (int_mode_) {
      s = printf_str("%.0Lf", v) + ".";
    } else {
      s = fixed(v);
    }
    return std::string(max_width_ > s.size() ? max_width_ - s.size() : 0, ' ') + s;
  }

 private:
  std::string format_plain(long double v) const {
    if (bool_) return v != 0 ? "True" : "False";
    return std::to_string(static_cast<int64_t>(v));
  }
  static std::string sci(long double v) { return printf_str("%.4Le", v); }
  static std::string fixed(long double v) { return printf_str("%.4Lf", v); }

  bool floating_, bool_;
  bool int_mode_ = true, sci_mode_ = false;
  size_t max_width_ = 1;
};

// An element of a CPU tensor; long double holds every int64 and double exactly.
long double element(const Tensor& t, const std::vector<int64_t>& index) {
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
  return dispatch_all(t.dtype(), "print", [&]<typename T>() {
    const T* p = static_cast<const T*>(t.data_ptr()) + offset;
    return static_cast<long double>(static_cast<opmath_t<T>>(*p));
  });
}

// Indices kept along a dim of `size`: all, or the first and last kEdgeItems when summarising.
std::vector<int64_t> kept(int64_t size, bool summarize) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < size; ++i) {
    if (!summarize || size <= 2 * kEdgeItems || i < kEdgeItems || i >= size - kEdgeItems) out.push_back(i);
  }
  return out;
}

void collect(const Tensor& t, bool summarize, std::vector<int64_t>& index, std::vector<long double>& out) {
  size_t d = index.size();
  if (static_cast<int64_t>(d) == t.dim()) {
    out.push_back(element(t, index));
    return;
  }
  for (int64_t i : kept(t.sizes()[d], summarize)) {
    index.push_back(i);
    collect(t, summarize, index, out);
    index.pop_back();
  }
}

std::string format_dims(const Tensor& t, const Formatter& f, bool summarize, std::vector<int64_t>& index,
                        int indent) {
  size_t d = index.size();
  int64_t remaining = t.dim() - static_cast<int64_t>(d);
  if (remaining == 0) return f.format(element(t, index));
  int64_t size = t.sizes()[d];
  bool cut = summarize && size > 2 * kEdgeItems;
  std::vector<int64_t> items = kept(size, summarize);
  if (remaining == 1) {
    size_t per_line = std::max<size_t>(1, (kLineWidth - indent) / (f.width() + 2));
    std::vector<std::string> data;
    for (size_t k = 0; k < items.size(); ++k) {
      if (cut && static_cast<int64_t>(k) == kEdgeItems) data.push_back(" ...");
      index.push_back(items[k]);
      data.push_back(f.format(element(t, index)));
      index.pop_back();
    }
    std::string out = "[";
    for (size_t k = 0; k < data.size(); ++k) {
      if (k > 0) out += k % per_line == 0 ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += data[k];
    }
    return out + "]";
  }
  std::string separator = "," + std::string(remaining - 1, '\n') + std::string(indent + 1, ' ');
  std::string out = "[";
  for (size_t k = 0; k < items.size(); ++k) {
    if (k > 0) out += separator;
    if (cut && static_cast<int64_t>(k) == kEdgeItems) out += "..." + separator;
    index.push_back(items[k]);
    out += format_dims(t, f, summarize, index, indent + 1);
    index.pop_back();
  }
  return out + "]";
}

std::string size_tuple(const Shape& sizes) {
  std::string out = "(";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + (sizes.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string format(const Tensor& self, const std::vector<std::string>& extra_suffixes) {
  if (!self.defined()) return "tensor(undefined)";
  Tensor t = self.is_cpu() ? self : to(self, Device(kCPU));
  const Shape& sizes = self.sizes();
  const DType dtype = self.dtype();
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  if (self.device() != Device(kCPU)) suffixes.push_back("device='" + self.device().str() + "'");
  std::string body;
  bool default_dtype = dtype == kDefaultFloat || dtype == kInt64 || dtype == kBool;
  if (self.numel() == 0) {
    if (self.dim() != 1) suffixes.push_back("size=" + size_tuple(sizes));
    if (dtype != kDefaultFloat) suffixes.push_back(std::string("dtype=") + dtype_name(dtype));
    body = "[]";
  } else {
    if (!default_dtype) suffixes.push_back(std::string("dtype=") + dtype_name(dtype));
    bool summarize = self.numel() > kThreshold;
    std::vector<int64_t> index;
    std::vector<long double> values;
    collect(t, summarize, index, values);
    Formatter f(values, dtype);
    body = format_dims(t, f, summarize, index, indent);
  }
  suffixes.insert(suffixes.end(), extra_suffixes.begin(), extra_suffixes.end());
  std::string out = prefix + body;
  size_t newline = out.rfind('\n');  // Python's len(s) - s.rfind("\n") + 1, where rfind may be -1
  size_t last_line = newline == std::string::npos ? out.size() + 2 : out.size() - newline + 1;
  for (const std::string& s : suffixes) {
    if (last_line + s.size() + 2 > static_cast<size_t>(kLineWidth)) {
      out += ",\n" + std::string(indent, ' ') + s;
      last_line = indent + s.size();
    } else {
      out += ", " + s;
      last_line += s.size() + 2;
    }
  }
  return out + ")";
}

}  // namespace tandem::kernels
