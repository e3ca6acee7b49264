// Safetensors checkpoints: bit-exact round trips of every dtype and layout, the file layout the
// reference writer produces, atomic saves, refusal of hostile files, and files exchanged with
// PyTorch's safetensors package.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "nn/serialize/safetensors.h"
#include "tests/testing.h"

namespace td = tandem;
namespace fs = std::filesystem;
using td::testing::check_error;

namespace {

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

td::StateDict load_bytes(const std::string& bytes, const std::string& name = "hostile.safetensors") {
  return td::load_from_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
}

// The stored bytes of t's elements in row-major order, read through its strides: the reference
// side, with no kernel involved.
std::string element_bytes(const td::Tensor& t) {
  size_t size = t.element_size();
  std::string out(static_cast<size_t>(t.numel()) * size, '\0');
  const char* base = static_cast<const char*>(t.data_ptr());
  for (int64_t i = 0; i < t.numel(); ++i) {
    std::vector<int64_t> index = td::testing::unravel(i, t.sizes());
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * t.strides()[d];
    std::memcpy(&out[static_cast<size_t>(i) * size], base + offset * static_cast<int64_t>(size), size);
  }
  return out;
}

// A contiguous tensor holding exactly `bytes`.
td::Tensor from_bytes(td::DType dtype, const td::Shape& shape, const void* bytes) {
  td::Tensor t = td::empty(shape, td::TensorOptions(dtype));
  if (t.nbytes() > 0) std::memcpy(t.data_ptr(), bytes, t.nbytes());
  return t;
}

template <typename T>
td::Tensor from_bits(td::DType dtype, const std::vector<T>& bits) {
  REQUIRE(td::element_size(dtype) == sizeof(T));
  return from_bytes(dtype, {static_cast<int64_t>(bits.size())}, bits.data());
}

// Random bit patterns (so every float class turns up: NaNs with payloads, infinities,
// subnormals); bools get 0 or 1, the only bytes a bool may hold.
td::Tensor random_bits(const td::Shape& shape, td::DType dtype) {
  static std::mt19937_64 rng(td::testing::test_seed());
  td::Tensor t = td::empty(shape, td::TensorOptions(dtype));
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(dtype == td::kBool ? rng() & 1 : rng());
  return t;
}

// Bit patterns a float checkpoint must keep: quiet and signalling NaNs with payloads, signed
// zeros, infinities, subnormals. Integers: their extremes.
td::Tensor special_values(td::DType dtype) {
  switch (dtype) {
    case td::kFloat32:
      return from_bits<uint32_t>(dtype, {0x7FC00001, 0x7F800001, 0xFFC12345, 0x80000000, 0x00000000, 0x7F800000,
                                         0xFF800000, 0x00000001, 0x807FFFFF});
    case td::kFloat64:
      return from_bits<uint64_t>(dtype, {0x7FF8000000000001, 0x7FF0000000000001, 0xFFF8DEAD0000BEEF,
                                         0x8000000000000000, 0x7FF0000000000000, 0x0000000000000001});
    case td::kFloat16:
      return from_bits<uint16_t>(dtype, {0x7E01, 0x7C01, 0xFE55, 0x8000, 0x0001, 0x7C00, 0xFC00, 0x83FF});
    case td::kBFloat16:
      return from_bits<uint16_t>(dtype, {0x7FC1, 0x7F81, 0xFFC5, 0x8000, 0x0001, 0x7F80, 0xFF80, 0x807F});
    case td::kInt64:
      return from_bits<int64_t>(dtype, {INT64_MIN, INT64_MAX, -1, 0});
    case td::kInt32:
      return from_bits<int32_t>(dtype, {INT32_MIN, INT32_MAX, -1, 0});
    case td::kUInt8:
      return from_bits<uint8_t>(dtype, {0, 1, 127, 128, 255});
    case td::kBool:
      return from_bits<uint8_t>(dtype, {1, 0, 1});
  }
  return td::Tensor();
}

const std::vector<td::DType> kAllDTypes = {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16,
                                           td::kInt64,   td::kInt32,   td::kUInt8,   td::kBool};

// `loaded` holds the same names in the same order, the same metadata, and tensors of the same
// dtype, shape and element bits as `saved`, each contiguous on the CPU.
void check_same(const td::StateDict& loaded, const td::StateDict& saved) {
  REQUIRE(loaded.keys() == saved.keys());
  CHECK(loaded.metadata == saved.metadata);
  for (const auto& [name, tensor] : saved) {
    INFO("tensor " << name);
    const td::Tensor& back = loaded.at(name);
    CHECK(back.dtype() == tensor.dtype());
    CHECK(back.sizes() == tensor.sizes());
    CHECK(back.is_contiguous());
    CHECK(back.device() == td::Device(td::kCPU));
    CHECK(element_bytes(back) == element_bytes(tensor));
  }
}

// A safetensors file from header text and data, padded as the reference writer pads.
std::string st_file(std::string header, const std::string& data = "", bool pad = true) {
  if (pad) header.append((8 - header.size() % 8) % 8, ' ');
  uint64_t size = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &size, 8);
  return out + header + data;
}

std::string with_length(uint64_t length, const std::string& rest) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &length, 8);
  return out + rest;
}

std::string f32_bytes(std::vector<float> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// Checks that `bytes` is refused with a message naming the file and every fragment.
void refused(const std::string& bytes, std::vector<std::string> fragments) {
  fragments.insert(fragments.begin(), "cannot load 'hostile.safetensors': ");
  check_error([&] { load_bytes(bytes); }, fragments);
}

}  // namespace

TEST_CASE("every dtype round-trips bit for bit, NaN payloads and signed zeros included", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  td::StateDict state;
  for (td::DType dtype : kAllDTypes) {
    state.insert(std::string("special_") + td::dtype_name(dtype), special_values(dtype));
    state.insert(std::string("random_") + td::dtype_name(dtype), random_bits({3, 5, 7}, dtype));
  }
  std::string path = dir + "/model.safetensors";
  td::save(state, path);
  check_same(td::load(path), state);
  check_same(load_bytes(read_file(path)), state);
  CHECK(entries(dir) == std::vector<std::string>{"model.safetensors"});
}

TEST_CASE("views, 0-dim, zero-size and cpu:1 tensors are saved as their contiguous values", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  for (td::DType dtype : kAllDTypes) {
    INFO(td::dtype_name(dtype));
    // Random bits with the special patterns first, so that every view below copies NaN
    // payloads, signalling NaNs and signed zeros through the strided path.
    td::Tensor base = random_bits({4, 8}, dtype);
    td::Tensor special = special_values(dtype);
    std::memcpy(base.data_ptr(), special.data_ptr(), std::min(special.nbytes(), base.nbytes()));
    td::StateDict state;
    state.insert("transposed", base.t());
    state.insert("strided", base.slice(1, 1, std::nullopt, 2));
    state.insert("offset", base.narrow(0, 1, 2));
    state.insert("row", base.select(0, 3));
    state.insert("column", base.select(1, 1));
    state.insert("broadcast", base.select(0, 0).expand({3, 8}));
    state.insert("scalar", base.select(0, 0).select(0, 1));
    state.insert("empty", td::empty({0}, td::TensorOptions(dtype)));
    state.insert("empty_3d", td::empty({3, 0, 2}, td::TensorOptions(dtype)));
    state.insert("empty_view", base.narrow(1, 2, 0));
    state.insert("on_cpu1", base.to(td::Device("cpu:1")).t());
    REQUIRE_FALSE(state.at("transposed").is_contiguous());
    REQUIRE(state.at("on_cpu1").device() == td::Device("cpu:1"));
    std::string path = dir + "/" + td::dtype_name(dtype) + ".safetensors";
    td::save(state, path);
    td::StateDict loaded = td::load(path);
    check_same(loaded, state);
    CHECK(loaded.at("scalar").dim() == 0);
    CHECK(loaded.at("empty_3d").sizes() == td::Shape{3, 0, 2});
  }
}

TEST_CASE("names, metadata and insertion order survive a round trip", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  td::StateDict state;
  // Not sorted, and with characters JSON must escape.
  for (std::string name : {"z", "a", "layer.0.weight", "with \"quotes\", \\ and\nnewline", "\xc3\xbc" "ber"}) {
    state.insert(name, random_bits({2}, td::kFloat32));
  }
  state.metadata = {{"format", "pt"}, {"empty", ""}, {"json", "{\"not\": \"parsed\"}"}, {"\xe2\x9c\x93", "\t"}};
  td::save(state, dir + "/a.safetensors");
  check_same(td::load(dir + "/a.safetensors"), state);

  td::StateDict nothing;
  td::save(nothing, dir + "/empty.safetensors");
  td::StateDict back = td::load(dir + "/empty.safetensors");
  CHECK(back.empty());
  CHECK(back.metadata.empty());

  td::StateDict only_metadata;
  only_metadata.metadata["epoch"] = "3";
  td::save(only_metadata, dir + "/meta.safetensors");
  check_same(td::load(dir + "/meta.safetensors"), only_metadata);
}

TEST_CASE("saved files have the reference layout: length, space-padded JSON header, data in order", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  td::StateDict state;
  state.insert("b", td::tensor({1, 2, 3}, td::kUInt8));
  state.insert("a", td::tensor({1.5f, -2.0f}));
  state.metadata["k"] = "v";
  td::save(state, dir + "/x.safetensors");
  std::string file = read_file(dir + "/x.safetensors");
  REQUIRE(file.size() >= 8);
  uint64_t n;
  std::memcpy(&n, file.data(), 8);
  std::string expected_header =
      R"({"__metadata__":{"k":"v"},"b":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[3,11]}})";
  CHECK((8 + n) % 8 == 0);  // the data section starts 8-byte aligned
  REQUIRE(file.size() == 8 + n + 11);
  std::string header = file.substr(8, n);
  CHECK(header.substr(0, expected_header.size()) == expected_header);
  CHECK(header.find_first_not_of(' ', expected_header.size()) == std::string::npos);
  CHECK(file.substr(8 + n) == std::string("\x01\x02\x03", 3) + f32_bytes({1.5f, -2.0f}));
}

TEST_CASE("a save replaces an existing file with a file of ordinary permissions", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  std::string path = dir + "/model.safetensors";
  td::StateDict first, second;
  first.insert("w", td::tensor({1.0f, 2.0f}));
  second.insert("v", td::tensor({3, 4, 5}));
  td::save(first, path);
  td::save(second, path);
  check_same(td::load(path), second);
  CHECK(entries(dir) == std::vector<std::string>{"model.safetensors"});
  // The temporary file is created 0666 less the umask, as a plain open() would create the file.
  mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
}

TEST_CASE("a failed save leaves the existing file as it was and no temporary file behind", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  std::string path = dir + "/model.safetensors";
  td::StateDict original;
  original.insert("w", td::tensor({1.0f, 2.0f, 3.0f}));
  td::save(original, path);
  const std::string original_bytes = read_file(path);
  td::StateDict big;
  big.insert("a", random_bits({64, 1024}, td::kFloat32));
  big.insert("b", random_bits({64, 1024}, td::kFloat32));

  SECTION("a tensor named __metadata__ is refused before anything is written") {
    td::StateDict bad;
    bad.insert("w", td::ones({2}));
    bad.insert("__metadata__", td::ones({2}));
    check_error([&] { td::save(bad, path); }, {"cannot save '" + path + "'", "__metadata__"});
  }
  SECTION("a name that is not UTF-8 is refused before anything is written") {
    td::StateDict bad;
    bad.insert("w\xff", td::ones({2}));
    check_error([&] { td::save(bad, path); }, {"cannot save '" + path + "'", "not valid UTF-8"});
  }
  SECTION("a write that fails part way, at the file size limit, is undone") {
    // RLIMIT_FSIZE makes write() fail with EFBIG once the temporary file reaches 64 KiB (root
    // included, unlike permissions); SIGXFSZ is ignored so that the failure is an error return.
    check_error(
        [&] {
          struct rlimit old_limit;
          REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
          struct rlimit limit = old_limit;
          limit.rlim_cur = 64 * 1024;
          auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
          REQUIRE(::setrlimit(RLIMIT_FSIZE, &limit) == 0);
          struct Restore {
            struct rlimit limit;
            void (*handler)(int);
            ~Restore() {
              ::setrlimit(RLIMIT_FSIZE, &limit);
              ::signal(SIGXFSZ, handler);
            }
          } restore{old_limit, old_handler};
          td::save(big, path);
        },
        {"cannot save '" + path + "'", "writing the temporary file", "File too large"});
  }
  SECTION("a rename that fails after every byte was written is undone") {
    // The target is a directory that is not empty: rename() refuses to replace it.
    std::string target = dir + "/occupied";
    REQUIRE(::mkdir(target.c_str(), 0777) == 0);
    write_file(target + "/keep", "x");
    check_error([&] { td::save(big, target); }, {"cannot save '" + target + "'", "renaming", "Is a directory"});
    CHECK(entries(target) == std::vector<std::string>{"keep"});
    REQUIRE(::unlink((target + "/keep").c_str()) == 0);
    REQUIRE(::rmdir(target.c_str()) == 0);
  }
  CHECK(read_file(path) == original_bytes);
  CHECK(entries(dir) == std::vector<std::string>{"model.safetensors"});
  check_same(td::load(path), original);
}

TEST_CASE("saving where it cannot names the path and the OS error", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  td::StateDict state;
  state.insert("w", td::ones({2}));
  check_error([&] { td::save(state, dir + "/missing/x.safetensors"); },
              {"cannot save '" + dir + "/missing/x.safetensors'", "temporary file", "No such file or directory"});
  check_error([&] { td::save(state, dir + "/"); }, {"names a directory"});
  CHECK(entries(dir).empty());
}

TEST_CASE("loading a missing file or a directory names the path and the problem", "[cpu]") {
  std::string dir = td::testing::scratch_dir("serialize_test");
  check_error([&] { td::load(dir + "/absent.safetensors"); },
              {"cannot load '" + dir + "/absent.safetensors'", "No such file or directory"});
  check_error([&] { td::load(dir); }, {"cannot load '" + dir + "'", "not a regular file"});
}

TEST_CASE("tensors listed out of offset order load in the order of their data", "[cpu]") {
  std::string bytes =
      st_file(R"({"second":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
              R"("empty":{"dtype":"I64","shape":[0,2],"data_offsets":[4,4]},)"
              R"("first":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
              f32_bytes({1.0f, 2.0f}));
  td::StateDict state = load_bytes(bytes);
  CHECK(state.keys() == std::vector<std::string>{"first", "empty", "second"});
  td::testing::check_equal(state.at("first"), {1.0});
  td::testing::check_equal(state.at("second"), {2.0});
  CHECK(state.at("empty").sizes() == td::Shape{0, 2});
  CHECK(state.at("empty").dtype() == td::kInt64);
  // Whitespace anywhere JSON allows it, and no padding.
  td::StateDict spaced = load_bytes(
      st_file(" {\n \"x\" : { \"shape\" : [ ] , \"data_offsets\" : [ 0 , 4 ] , \"dtype\" : \"F32\" } }\t",
              f32_bytes({5.0f}), false));
  td::testing::check_equal(spaced.at("x"), {5.0});
  CHECK(spaced.at("x").dim() == 0);
}

TEST_CASE("malformed lengths and non-JSON headers are refused with the file named", "[cpu]") {
  refused("abc", {"3 bytes, too short for the 8-byte header length"});
  refused("", {"0 bytes, too short"});
  refused(with_length(4096, "{}      "), {"the header length 4096 runs past the end of the file (8 bytes follow"});
  refused(with_length(UINT64_MAX, "{}      "),
          {"the header length 18446744073709551615 is over the limit of 100000000"});
  refused(with_length(100'000'001, "{}      "), {"is over the limit"});
  refused(with_length(0, ""), {"the header is not valid JSON"});
  refused(st_file(R"({"w": {"dtype": "F32",)"), {"the header is not valid JSON", "parse error"});
  refused(st_file("{} {}"), {"the header is not valid JSON"});
  refused(st_file("{\"\xff\": 1}"), {"the header is not valid JSON"});
  refused(st_file("[1, 2]"), {"the header is not a JSON object (it starts with an array)"});
  refused(st_file("\"text\""), {"not a JSON object (it starts with a string)"});
  refused(st_file(std::string(5000, '[') + std::string(5000, ']')), {"not a JSON object"});
  // Through a file too: the path is the name in the message.
  std::string dir = td::testing::scratch_dir("serialize_test");
  write_file(dir + "/bad.safetensors", with_length(1000, "{}"));
  check_error([&] { td::load(dir + "/bad.safetensors"); },
              {"cannot load '" + dir + "/bad.safetensors'", "runs past the end"});
}

TEST_CASE("tensor entries with a bad dtype, shape or offsets are refused with the tensor named", "[cpu]") {
  auto one = [](const std::string& entry, const std::string& data = f32_bytes({1.0f})) {
    return st_file(R"({"w":)" + entry + "}", data);
  };
  refused(one(R"({"dtype":"I8","shape":[1],"data_offsets":[0,1]})", "\x01"),
          {"tensor 'w' has the dtype 'I8', which tandem does not know", "BF16"});
  refused(one(R"({"dtype":1,"shape":[1],"data_offsets":[0,4]})"), {"tensor 'w'", "dtype must be a string"});
  refused(one(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})"),
          {"tensor 'w'", "shape must hold sizes", "the negative number -1"});
  refused(one(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})"), {"tensor 'w'", "shape", "1.5"});
  refused(one(R"({"dtype":"F32","shape":[[1]],"data_offsets":[0,4]})"), {"tensor 'w'", "shape", "an array"});
  refused(one(R"({"dtype":"F32","shape":{},"data_offsets":[0,4]})"), {"shape must be an array", "an object"});
  refused(one(R"({"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,4]})"),
          {"tensor 'w' has the size 18446744073709551615 in its shape, over 2^63-1"});
  refused(one(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})"),
          {"tensor 'w' has the shape [4294967296, 4294967296], whose size overflows"});
  refused(one(R"({"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,4]})"), {"overflows"});
  // Empty, yet its strides would overflow: refused too.
  refused(one(R"({"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]})", ""),
          {"overflows"});
  refused(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})"),
          {"tensor 'w' has data_offsets [0, 4] (4 bytes), but its shape [2] of F32 needs 8 bytes"});
  refused(one(R"({"dtype":"U8","shape":[0],"data_offsets":[4,0]})"), {"data_offsets [4, 0], which run backwards"});
  refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,-4]})"), {"data_offsets", "the negative number -4"});
  refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":[4]})"), {"has 1 data_offsets; it needs two"});
  refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})"), {"more than two data_offsets"});
  refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":"0,4"})"), {"data_offsets must be an array"});
  refused(one(R"({"dtype":"F32","shape":[1]})"), {"tensor 'w' has no data_offsets"});
  refused(one(R"({"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]})"), {"tensor 'w' gives 'dtype' twice"});
  refused(one(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":0})"), {"tensor 'w' has the unknown field 'x'"});
  refused(one("null"), {"tensor 'w'", "described by an object, not null"});
  refused(st_file(R"({"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "\x01"), {"empty name"});
  refused(one(R"({"dtype":"BOOL","shape":[3],"data_offsets":[0,3]})", std::string("\x01\x00\x02", 3)),
          {"tensor 'w' of dtype BOOL holds the byte 2 at element 2"});
  // A hostile name is shown cut short, not repeated in full.
  std::string long_name(100000, 'n');
  try {
    load_bytes(st_file("{\"" + long_name + R"(":{"dtype":"I8","shape":[0],"data_offsets":[0,0]}})"));
    FAIL("expected an error");
  } catch (const td::Error& e) {
    CHECK(std::string(e.what()).size() < 1000);
    CHECK_THAT(e.what(), Catch::Matchers::Contains("nnn..."));
  }
}

TEST_CASE("data sections that tensors do not tile exactly are refused", "[cpu]") {
  // A shape claiming a terabyte in a small file is refused before any allocation.
  int64_t allocated = td::memory_stats(td::Device(td::kCPU)).allocated;
  refused(st_file(R"({"w":{"dtype":"U8","shape":[1099511627776],"data_offsets":[0,1099511627776]}})", "\x01"),
          {"tensor 'w' has data_offsets [0, 1099511627776] past the end of the data section (1 bytes)"});
  CHECK(td::memory_stats(td::Device(td::kCPU)).allocated == allocated);
  refused(st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                  f32_bytes({1, 2})),
          {"tensors 'a' (bytes [0, 8)) and 'b' (bytes [4, 8)) overlap in the data section"});
  refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                  f32_bytes({1, 2, 3})),
          {"bytes [4, 8) of the data section belong to no tensor (a gap before 'b')"});
  refused(st_file(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32_bytes({1, 2})),
          {"bytes [0, 4) of the data section belong to no tensor"});
  refused(st_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32_bytes({1}) + "junk"),
          {"the data section has 4 trailing bytes (from byte 4) that belong to no tensor"});
  refused(st_file("{}", "x"), {"1 trailing bytes"});
}

TEST_CASE("a null __metadata__ is no metadata, as the reference reader takes it", "[cpu]") {
  td::StateDict loaded =
      load_bytes(st_file(R"({"__metadata__":null,"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "\x07"));
  CHECK(loaded.metadata.empty());
  REQUIRE(loaded.size() == 1);
  CHECK(td::testing::values(loaded.at("a")) == std::vector<double>{7});
  refused(st_file(R"({"a":null})"), {"tensor 'a'", "not null"});
}

TEST_CASE("bad metadata and repeated names are refused", "[cpu]") {
  refused(st_file(R"({"__metadata__":{"epoch":3}})"),
          {"the metadata value for 'epoch' must be a string, not the number 3"});
  refused(st_file(R"({"__metadata__":{"a":{"b":"c"}}})"), {"metadata value for 'a'", "not an object"});
  refused(st_file(R"({"__metadata__":["a"]})"), {"__metadata__ must be an object of strings, not an array"});
  refused(st_file(R"({"__metadata__":{"k":"a","k":"b"}})"), {"the metadata key 'k' appears twice"});
  refused(st_file(R"({"__metadata__":{},"__metadata__":{}})"), {"the name '__metadata__' appears twice"});
  refused(st_file(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                  R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                  "\x01\x02"),
          {"the name 'w' appears twice in the header"});
}

namespace {

// The venv tools/setup.sh makes: $TANDEM_VENV, else ~/.cache/tandem/venv. Empty if absent.
std::string venv_python() {
  std::string venv;
  if (const char* v = std::getenv("TANDEM_VENV"); v && *v) {
    venv = v;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    venv = std::string(home) + "/.cache/tandem/venv";
  } else {
    return "";
  }
  std::string python = venv + "/bin/python";
  return ::access(python.c_str(), X_OK) == 0 ? python : "";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}


}  // namespace

TEST_CASE("PyTorch's safetensors reads the files tandem writes, and tandem reads PyTorch's", "[cpu]") {
  std::string python = venv_python();
  if (python.empty()) {
    td::testing::mark_skipped("no Python venv with PyTorch ($TANDEM_VENV or ~/.cache/tandem/venv; tools/setup.sh)");
    return;
  }
  const std::string script = "tests/nn/safetensors_interop.py";  // in the runfiles
  REQUIRE(fs::exists(script));
  std::string dir = td::testing::scratch_dir("serialize_test");
  std::string prefix = shell_quote(python) + " " + shell_quote(script) + " ";

  // PyTorch writes; tandem reads.
  std::string from_torch = dir + "/from_torch.safetensors";
  auto [write_status, write_output] = td::testing::run_command(prefix + "write " + shell_quote(from_torch));
  std::cout << "safetensors_interop.py write: " << write_output << std::flush;
  INFO(write_output);
  REQUIRE(write_status == 0);
  td::StateDict t = td::load(from_torch);
  CHECK(t.size() == 11);
  CHECK(t.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"source", "pytorch"}});
  CHECK(t.at("f32").sizes() == td::Shape{2, 3});
  td::testing::check_equal(t.at("f32"), {0.5, -1.25, 3.0, static_cast<double>(1e-30f), -0.0, INFINITY});
  CHECK(std::signbit(t.at("f32").data_ptr<float>()[4]));
  td::testing::check_equal(t.at("f64"), {1.0 / 3, -1e300, 5e-324});
  CHECK(t.at("f16").dtype() == td::kFloat16);
  td::testing::check_equal(t.at("f16"), {0.5, -1.5, 65504.0, 6.103515625e-05, 5.960464477539063e-08});
  CHECK(t.at("bf16").dtype() == td::kBFloat16);
  td::testing::check_equal(t.at("bf16"), {1.0, -2.5, 3.140625, 0.0078125, 65280.0, -INFINITY});
  const int64_t* i64 = t.at("i64").data_ptr<int64_t>();
  CHECK(i64[0] == (int64_t{1} << 62) + 1);
  CHECK(i64[1] == INT64_MIN);
  CHECK(i64[2] == 7);
  td::testing::check_equal(t.at("i32"), {-2147483648.0, 2147483647.0, 0});
  CHECK(t.at("i32").dtype() == td::kInt32);
  td::testing::check_equal(t.at("u8"), {0, 1, 128, 255});
  CHECK(t.at("bool").dtype() == td::kBool);
  td::testing::check_equal(t.at("bool"), {1, 0, 1, 1});
  CHECK(t.at("scalar").dim() == 0);
  td::testing::check_equal(t.at("scalar"), {42.5});
  CHECK(t.at("empty").sizes() == td::Shape{0, 4});
  CHECK(t.at("matrix").sizes() == td::Shape{3, 4});
  td::testing::check_equal(t.at("matrix"), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});

  // tandem writes; PyTorch reads and checks (safetensors_interop.py holds the same values).
  td::StateDict mine;
  mine.insert("f32_bits",
              from_bits<uint32_t>(td::kFloat32, {0x7FC00001, 0x80000000, 0x7F800000, 0x00000001, 0x3F800000}));
  mine.insert("bf16_bits", from_bits<uint16_t>(td::kBFloat16, {0x3F80, 0xC020, 0x7FC1, 0x8000}));
  mine.insert("f16_bits", from_bits<uint16_t>(td::kFloat16, {0x3C00, 0x7BFF, 0x0001, 0xFC00}));
  mine.insert("f64", from_bits<double>(td::kFloat64, {0.1, -2.5e-300}));
  mine.insert("i64", from_bits<int64_t>(td::kInt64, {INT64_MIN, INT64_MAX, 3}));
  mine.insert("i32", from_bits<int32_t>(td::kInt32, {INT32_MIN, 123456}));
  mine.insert("u8", from_bits<uint8_t>(td::kUInt8, {0, 255, 7}));
  mine.insert("bool", from_bits<uint8_t>(td::kBool, {1, 0}));
  mine.insert("transposed", td::arange(6, td::kFloat32).view({2, 3}).t());
  mine.insert("scalar", td::tensor(int64_t{-9}));
  mine.insert("empty", td::empty({2, 0}, td::kFloat64));
  mine.metadata = {{"writer", "tandem"}, {"note", "\xc3\xbcn\xc3\xaf" "code \xe2\x9c\x93"}};
  REQUIRE(mine.at("scalar").dtype() == td::kInt64);
  std::string from_tandem = dir + "/from_tandem.safetensors";
  td::save(mine, from_tandem);
  auto [check_status, check_output] = td::testing::run_command(prefix + "check " + shell_quote(from_tandem));
  std::cout << "safetensors_interop.py check: " << check_output << std::flush;
  INFO(check_output);
  CHECK(check_status == 0);
}
