// What the safetensors reader and writer share: the format's dtype codes and the error prefix.
// Internal to //nn/serialize.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace tandem::safetensors {

// "F32", "BF16", "BOOL", ...: the format's names for tandem's dtypes.
const char* dtype_code(DType dtype);
// The dtype a code names, or nullopt for codes tandem has no dtype for (I8, U16, F8_E4M3, ...).
std::optional<DType> dtype_from_code(std::string_view code);
// "F32, F64, F16, BF16, I64, I32, U8, BOOL": for messages about unsupported codes.
std::string supported_codes();

}  // namespace tandem::safetensors
