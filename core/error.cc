#include "core/error.h"

namespace tandem {

namespace detail {
void throw_error(const std::string& message) { throw Error(message); }
}  // namespace detail

std::string shape_str(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  return out + "]";
}

std::string dims_str(const std::vector<int64_t>& sizes) {
  std::string out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(sizes[i]);
  }
  return out;
}

}  // namespace tandem
