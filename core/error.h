// tandem::Error and the check macros: every failure says what was expected and what came.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

[[noreturn]] void throw_error(const std::string& message);

}  // namespace detail

// "[2, 3]": how shapes, strides and dim lists appear in messages.
std::string shape_str(const std::vector<int64_t>& values);
// "2x3": how matrix products name their operands' shapes, as PyTorch does.
std::string dims_str(const std::vector<int64_t>& sizes);

}  // namespace tandem

// TD_CHECK(cond, "op: ", what, ...) throws tandem::Error with the concatenated message.
#define TD_CHECK(cond, ...)                                                  \
  do {                                                                       \
    if (!(cond)) [[unlikely]] {                                              \
      ::tandem::detail::throw_error(::tandem::detail::str_cat(__VA_ARGS__)); \
    }                                                                        \
  } while (0)

#define TD_FAIL(...) ::tandem::detail::throw_error(::tandem::detail::str_cat(__VA_ARGS__))
