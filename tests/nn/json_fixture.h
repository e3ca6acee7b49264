// The JSON fixtures of tests/nn, written by its make_*_fixtures.py scripts from PyTorch's results.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/testing.h"

namespace tandem::testing {

// The fixture at `path` (from the repository root, declared as data of the test), parsed.
inline nlohmann::json load_json_fixture(const std::string& path) { return nlohmann::json::parse(read_fixture(path)); }

// A fixture's list of numbers: JSON's, or "nan", "inf" and "-inf" as strings (JSON has none).
inline std::vector<double> fixture_numbers(const nlohmann::json& list) {
  std::vector<double> out;
  for (const nlohmann::json& v : list) {
    out.push_back(v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>());
  }
  return out;
}

}  // namespace tandem::testing
