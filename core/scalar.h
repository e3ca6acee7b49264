// Scalar: a number given where a tensor could be (x + 1, full(shape, 2.5), masked_fill(mask, 0)).
// It remembers whether it was a bool, an integer or a floating number, for type promotion.
#pragma once

#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <type_traits>

#include "core/convert.h"
#include "core/dtype.h"

namespace tandem {

class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Float };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}
  template <std::floating_point T>
  Scalar(T v) : kind_(Kind::Float), d_(static_cast<double>(v)) {}
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }

  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? convert<int64_t>(d_) : i_; }  // NaN: INT64_MIN
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0 : i_ != 0; }

  // The value as T, converted as a tensor cast would convert it.
  template <typename T>
  T to() const {
    switch (kind_) {
      case Kind::Bool: return convert<T>(i_ != 0);
      case Kind::Int: return convert<T>(i_);
      case Kind::Float: break;
    }
    return convert<T>(d_);
  }

  // The dtype a Python number of this kind takes in type promotion: bool, int64 or the default float.
  DType dtype() const { return kind_ == Kind::Bool ? kBool : kind_ == Kind::Int ? kInt64 : kDefaultFloat; }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

std::ostream& operator<<(std::ostream& out, const Scalar& s);

}  // namespace tandem
