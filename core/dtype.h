// DType: the element types of a tensor, their sizes and names, and PyTorch's type promotion.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "core/half.h"

namespace tandem {

enum class DType : int8_t { Float32, Float64, Float16, BFloat16, Int64, Int32, UInt8, Bool };

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kBool = DType::Bool;
// LibTorch's other spellings.
inline constexpr DType kFloat = kFloat32;
inline constexpr DType kDouble = kFloat64;
inline constexpr DType kHalf = kFloat16;
inline constexpr DType kLong = kInt64;
inline constexpr DType kInt = kInt32;
inline constexpr DType kByte = kUInt8;

inline constexpr int kNumDTypes = 8;

size_t element_size(DType t);
const char* dtype_name(DType t);  // "float32", "bfloat16", ...
DType parse_dtype(const std::string& name);
std::ostream& operator<<(std::ostream& out, DType t);

constexpr bool is_floating(DType t) {
  return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16;
}
// The 16-bit floating dtypes, whose sums over many elements overflow (float16 past 65504) or
// round (bfloat16 counts past 256): reductions of them accumulate in float32.
constexpr bool is_16bit_float(DType t) { return t == kFloat16 || t == kBFloat16; }
constexpr bool is_integral(DType t, bool include_bool) {
  return t == kInt64 || t == kInt32 || t == kUInt8 || (include_bool && t == kBool);
}

// The dtype `a op b` computes in, as torch.promote_types.
DType promote_types(DType a, DType b);
// Whether a result of dtype `from` may be written into a tensor of dtype `to` (torch.can_cast):
// no float into an integer, no number into bool.
bool can_cast(DType from, DType to);

// A floating dtype's limits, as torch.finfo: the machine epsilon, the smallest normal number, and
// the most negative and the largest finite values.
struct FloatInfo {
  double eps, tiny, min, max;
};
FloatInfo finfo(DType t);  // an error for a dtype that is not floating

// The floating dtype factories use when none is given (PyTorch's default dtype).
inline constexpr DType kDefaultFloat = kFloat32;

template <typename T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = kFloat32; };
template <> struct DTypeOf<double> { static constexpr DType value = kFloat64; };
template <> struct DTypeOf<Half> { static constexpr DType value = kFloat16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = kBFloat16; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = kInt64; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = kInt32; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = kUInt8; };
template <> struct DTypeOf<bool> { static constexpr DType value = kBool; };
template <typename T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

// The type arithmetic on T happens in: float for the 16-bit floats, T otherwise.
template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <typename T>
using opmath_t = typename OpMath<T>::type;

}  // namespace tandem
