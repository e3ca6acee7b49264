// Runs the fuzzer's seed corpus (tools/fuzz/corpus/safetensors) through the fuzz target on every
// test run, without libFuzzer, and checks each seed's verdict: valid_* files load, bad_* files
// are refused with tandem::Error naming the file.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nn/serialize/safetensors.h"
#include "tests/testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace td = tandem;
namespace fs = std::filesystem;

namespace {

// In the test's runfiles: Bazel runs tests from the workspace's runfiles directory.
const char* kCorpus = "tools/fuzz/corpus/safetensors";

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kCorpus)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("every seed of the fuzz corpus passes through the fuzz target without a crash", "[cpu]") {
  std::vector<fs::path> files = corpus_files();
  // make_corpus.py writes 40 seeds; far fewer means the corpus did not reach the runfiles.
  REQUIRE(files.size() >= 30);
  for (const fs::path& file : files) {
    INFO(file.string());
    std::vector<uint8_t> bytes = read_bytes(file);
    CHECK(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()) == 0);
  }
}

TEST_CASE("valid seeds load and hostile seeds are refused with the file named", "[cpu]") {
  int valid = 0, hostile = 0;
  for (const fs::path& file : corpus_files()) {
    std::string name = file.filename().string();
    INFO(name);
    std::vector<uint8_t> bytes = read_bytes(file);
    if (starts_with(name, "valid_")) {
      ++valid;
      td::StateDict from_file = td::load(file.string());
      td::StateDict from_memory = td::load_from_memory(bytes.data(), bytes.size(), name);
      CHECK(from_file.keys() == from_memory.keys());
      CHECK(from_file.metadata == from_memory.metadata);
    } else if (starts_with(name, "bad_")) {
      ++hostile;
      td::testing::check_error([&] { td::load(file.string()); }, {"cannot load", file.string()});
      td::testing::check_error([&] { td::load_from_memory(bytes.data(), bytes.size(), name); }, {name});
    }
  }
  CHECK(valid >= 5);
  CHECK(hostile >= 25);
}

TEST_CASE("the valid seed with every dtype loads with its values", "[cpu]") {
  td::StateDict state = td::load(std::string(kCorpus) + "/valid_all_dtypes.safetensors");
  CHECK(state.keys() == std::vector<std::string>{"f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool"});
  CHECK(state.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  CHECK(state.at("f32").sizes() == td::Shape{2, 2});
  td::testing::check_equal(state.at("f32"), {1.0, -2.5, NAN, -0.0});
  CHECK(state.at("bf16").data_ptr<td::BFloat16>()[1].bits == 0xFFC1);  // a NaN's payload survives
  CHECK(state.at("i64").data_ptr<int64_t>()[0] == INT64_MIN);
  td::testing::check_equal(state.at("u8"), {0, 128, 255});
  td::testing::check_equal(state.at("bool"), {1, 0});
}
