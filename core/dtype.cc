#include "core/dtype.h"

#include <limits>
#include <ostream>

#include "core/error.h"
#include "core/scalar.h"

namespace tandem {

size_t element_size(DType t) {
  switch (t) {
    case kFloat32: return 4;
    case kFloat64: return 8;
    case kFloat16: return 2;
    case kBFloat16: return 2;
    case kInt64: return 8;
    case kInt32: return 4;
    case kUInt8: return 1;
    case kBool: return 1;
  }
  TD_FAIL("element_size: unknown dtype ", static_cast<int>(t));
}

const char* dtype_name(DType t) {
  switch (t) {
    case kFloat32: return "float32";
    case kFloat64: return "float64";
    case kFloat16: return "float16";
    case kBFloat16: return "bfloat16";
    case kInt64: return "int64";
    case kInt32: return "int32";
    case kUInt8: return "uint8";
    case kBool: return "bool";
  }
  return "unknown";
}

DType parse_dtype(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == dtype_name(static_cast<DType>(i))) return static_cast<DType>(i);
  }
  TD_FAIL("parse_dtype: unknown dtype '", name,
          "' (expected float32, float64, float16, bfloat16, int64, int32, uint8 or bool)");
}

std::ostream& operator<<(std::ostream& out, DType t) { return out << dtype_name(t); }

namespace {

// Rank within a category; the categories are bool < integral < floating.
int integral_rank(DType t) { return t == kUInt8 ? 0 : t == kInt32 ? 1 : 2; }
int floating_rank(DType t) { return t == kFloat64 ? 2 : t == kFloat32 ? 1 : 0; }

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  if (!fa) return integral_rank(a) >= integral_rank(b) ? a : b;
  // Two different floating types: float16 with bfloat16 meets in float32.
  if (floating_rank(a) == 0 && floating_rank(b) == 0) return kFloat32;
  return floating_rank(a) >= floating_rank(b) ? a : b;
}

FloatInfo finfo(DType t) {
  switch (t) {
    case kFloat64: {
      using L = std::numeric_limits<double>;
      return {L::epsilon(), L::min(), L::lowest(), L::max()};
    }
    case kFloat32: {
      using L = std::numeric_limits<float>;
      return {L::epsilon(), L::min(), L::lowest(), L::max()};
    }
    case kFloat16: return {0x1p-10, 0x1p-14, -65504.0, 65504.0};
    case kBFloat16: return {0x1p-7, 0x1p-126, -0x1.fep127, 0x1.fep127};
    default: TD_FAIL("finfo: expected a floating dtype, got ", t);
  }
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

std::ostream& operator<<(std::ostream& out, const Scalar& s) {
  if (s.is_bool()) return out << (s.to_bool() ? "True" : "False");
  if (s.is_integral()) return out << s.to_int();
  return out << s.to_double();
}

}  // namespace tandem
