// Reading safetensors files: the header is parsed as a stream of JSON events (no document tree,
// so a hostile header costs no more than the entries it declares), every claim in it is checked
// against the file, and only then is tensor memory allocated and filled.
//
// This file needs only //core (no kernels), so the fuzzer (tools/fuzz/build.sh) builds it alone.
#include "nn/serialize/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <system_error>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/shape.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "nn/serialize/safetensors_format.h"

namespace tandem {

// The data section holds little-endian bytes and tensors are filled by copying them as they are.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace safetensors {

namespace {

struct Code {
  DType dtype;
  const char* code;
};
constexpr Code kCodes[] = {{kFloat32, "F32"}, {kFloat64, "F64"}, {kFloat16, "F16"}, {kBFloat16, "BF16"},
                           {kInt64, "I64"},   {kInt32, "I32"},   {kUInt8, "U8"},    {kBool, "BOOL"}};

}  // namespace

const char* dtype_code(DType dtype) {
  for (const Code& c : kCodes) {
    if (c.dtype == dtype) return c.code;
  }
  TD_FAIL("safetensors: no code for dtype ", dtype);
}

std::optional<DType> dtype_from_code(std::string_view code) {
  for (const Code& c : kCodes) {
    if (code == c.code) return c.dtype;
  }
  return std::nullopt;
}

std::string supported_codes() {
  std::string out;
  for (const Code& c : kCodes) out += (out.empty() ? "" : ", ") + std::string(c.code);
  return out;
}

}  // namespace safetensors

namespace {

using Json = nlohmann::json;

// Names and numbers in messages come from a possibly hostile file: cut them short so that a
// 100 MB name does not become a 100 MB message.
std::string shown(const std::string& s) {
  constexpr size_t kMax = 120;
  return "'" + (s.size() <= kMax ? s : s.substr(0, kMax) + "...") + "'";
}

std::string shape_text(const Shape& shape) {
  constexpr size_t kMax = 16;
  if (shape.size() <= kMax) return shape_str(shape);
  Shape head(shape.begin(), shape.begin() + kMax);
  std::string s = shape_str(head);
  return s.substr(0, s.size() - 1) + ", ... (" + std::to_string(shape.size()) + " dims)]";
}

template <typename... Args>
[[noreturn]] void fail(const std::string& file, const Args&... args) {
  TD_FAIL("cannot load '", file, "': ", args...);  // the caller's name for it: shown whole
}

// One tensor as the header describes it.
struct Entry {
  std::string name;
  DType dtype = kFloat32;
  Shape shape;
  uint64_t nbytes = 0;  // what the shape and dtype need
  uint64_t begin = 0, end = 0;
  size_t position = 0;  // in the header: orders empty tensors that share an offset
};

struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
};

// Turns the header's JSON events into entries, checking each value where it arrives: a wrong
// type, a duplicate name or field, or a negative or fractional number stops the parse at once.
// Only the layout the format defines is accepted (an object of tensor objects and one object of
// strings), so nesting is at most two levels deep.
class HeaderParser final : public nlohmann::json_sax<Json> {
 public:
  explicit HeaderParser(const std::string& file) : file_(file) {}

  Header take() {
    TD_CHECK(state_ == State::Done, "safetensors: the header parser stopped early");
    return std::move(header_);
  }

  bool null() override {
    if (state_ == State::MetadataValue) {  // "__metadata__": null is no metadata, as the reference reader takes it
      state_ = State::Top;
      return true;
    }
    return unexpected("null");
  }
  bool boolean(bool value) override { return unexpected(value ? "true" : "false"); }
  bool number_integer(number_integer_t value) override {
    if (value >= 0) return number(static_cast<uint64_t>(value));  // "-0" arrives here
    return unexpected("the negative number " + std::to_string(value));
  }
  bool number_unsigned(number_unsigned_t value) override { return number(value); }
  bool number_float(number_float_t, const string_t& text) override {
    return unexpected("the number " + text.substr(0, 40) + " (not an integer in [0, 2^64))");
  }
  bool binary(binary_t&) override { return unexpected("binary data"); }

  bool string(string_t& value) override {
    if (state_ == State::MetadataString) {
      header_.metadata[metadata_key_] = std::move(value);
      state_ = State::Metadata;
      return true;
    }
    if (state_ == State::Dtype) {
      std::optional<DType> dtype = safetensors::dtype_from_code(value);
      if (!dtype) {
        fail(file_, "tensor ", shown(entry().name), " has the dtype ", shown(value),
             ", which tandem does not know (it reads ", safetensors::supported_codes(), ")");
      }
      entry().dtype = *dtype;
      state_ = State::Tensor;
      return true;
    }
    return unexpected("a string");
  }

  bool start_object(std::size_t) override {
    switch (state_) {
      case State::Start: state_ = State::Top; return true;
      case State::MetadataValue: state_ = State::Metadata; return true;
      case State::TensorValue: state_ = State::Tensor; fields_ = 0; return true;
      default: return unexpected("an object");
    }
  }

  bool key(string_t& key) override {
    if (state_ == State::Top) {
      if (!names_.insert(key).second) fail(file_, "the name ", shown(key), " appears twice in the header");
      if (key == "__metadata__") {
        state_ = State::MetadataValue;
        return true;
      }
      if (key.empty()) fail(file_, "a tensor in the header has an empty name");
      Entry e;
      e.name = std::move(key);
      e.position = header_.entries.size();
      header_.entries.push_back(std::move(e));
      state_ = State::TensorValue;
      return true;
    }
    if (state_ == State::Metadata) {
      if (!header_.metadata.emplace(key, std::string()).second) {
        fail(file_, "the metadata key ", shown(key), " appears twice");
      }
      metadata_key_ = std::move(key);
      state_ = State::MetadataString;
      return true;
    }
    // Keys arrive only inside objects, and the only other object is a tensor's.
    int field;
    if (key == "dtype") {
      field = kDtype;
      state_ = State::Dtype;
    } else if (key == "shape") {
      field = kShape;
      state_ = State::ShapeValue;
    } else if (key == "data_offsets") {
      field = kOffsets;
      state_ = State::OffsetsValue;
    } else {
      fail(file_, "tensor ", shown(entry().name), " has the unknown field ", shown(key),
           " (a tensor has dtype, shape and data_offsets)");
    }
    if (fields_ & field) fail(file_, "tensor ", shown(entry().name), " gives ", shown(key), " twice");
    fields_ |= field;
    return true;
  }

  bool end_object() override {
    switch (state_) {
      case State::Top: state_ = State::Done; return true;
      case State::Metadata: state_ = State::Top; return true;
      case State::Tensor: finish_tensor(); state_ = State::Top; return true;
      default: return unexpected("the end of an object");  // unreachable: JSON nests properly
    }
  }

  bool start_array(std::size_t) override {
    if (state_ == State::ShapeValue) {
      state_ = State::Shape;
      return true;
    }
    if (state_ == State::OffsetsValue) {
      state_ = State::Offsets;
      offsets_count_ = 0;
      return true;
    }
    return unexpected("an array");
  }

  bool end_array() override {
    if (state_ == State::Shape) {
      state_ = State::Tensor;
      return true;
    }
    if (state_ == State::Offsets) {
      if (offsets_count_ != 2) {
        fail(file_, "tensor ", shown(entry().name), " has ", offsets_count_,
             " data_offsets; it needs two, [begin, end]");
      }
      state_ = State::Tensor;
      return true;
    }
    return unexpected("the end of an array");  // unreachable: JSON nests properly
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    fail(file_, "the header is not valid JSON: ", error.what());
  }

 private:
  enum class State {
    Start,           // before the top-level object
    Top,             // in the top-level object: a name or its end
    MetadataValue,   // after "__metadata__":
    Metadata,        // in the metadata object: a key or its end
    MetadataString,  // after a metadata key
    TensorValue,     // after a tensor's name
    Tensor,          // in a tensor's object: a field or its end
    Dtype,           // after "dtype":
    ShapeValue,      // after "shape":
    Shape,           // in the shape array
    OffsetsValue,    // after "data_offsets":
    Offsets,         // in the data_offsets array
    Done,            // after the top-level object
  };
  static constexpr int kDtype = 1, kShape = 2, kOffsets = 4;

  Entry& entry() { return header_.entries.back(); }

  bool number(uint64_t value) {
    if (state_ == State::Shape) {
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(file_, "tensor ", shown(entry().name), " has the size ", value, " in its shape, over 2^63-1");
      }
      entry().shape.push_back(static_cast<int64_t>(value));
      return true;
    }
    if (state_ == State::Offsets) {
      if (offsets_count_ == 0) entry().begin = value;
      if (offsets_count_ == 1) entry().end = value;
      if (++offsets_count_ > 2) {
        fail(file_, "tensor ", shown(entry().name), " has more than two data_offsets; it needs [begin, end]");
      }
      return true;
    }
    return unexpected("the number " + std::to_string(value));
  }

  // Every field is present, and the size the shape implies fits in 64 bits (checked without
  // overflowing: a shape like [2^40, 2^40] must not wrap around to a small byte count).
  void finish_tensor() {
    const Entry& e = entry();
    for (auto [bit, name] : {std::pair{kDtype, "dtype"}, {kShape, "shape"}, {kOffsets, "data_offsets"}}) {
      if (!(fields_ & bit)) fail(file_, "tensor ", shown(e.name), " has no ", name);
    }
    // Zero sizes are left out of the product: an empty tensor must still have strides that fit
    // in int64 (they are products of the other sizes).
    uint64_t product = 1;
    bool empty = false;
    constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    auto overflow = [&] {
      fail(file_, "tensor ", shown(e.name), " has the shape ", shape_text(e.shape),
           ", whose size overflows 64-bit arithmetic");
    };
    for (int64_t size : e.shape) {
      if (size == 0) {
        empty = true;
      } else if (__builtin_mul_overflow(product, static_cast<uint64_t>(size), &product) || product > kLimit) {
        overflow();
      }
    }
    uint64_t nbytes;
    if (__builtin_mul_overflow(empty ? 0 : product, element_size(e.dtype), &nbytes) || nbytes > kLimit) overflow();
    entry().nbytes = nbytes;
  }

  // A value of the wrong kind: the message says what was expected where.
  bool unexpected(const std::string& what) {
    auto tensor = [&] { return "tensor " + shown(entry().name) + ": "; };
    switch (state_) {
      case State::Start:
        fail(file_, "the header is not a JSON object (it starts with ", what, ")");
      case State::MetadataValue:
        fail(file_, "__metadata__ must be an object of strings, not ", what);
      case State::MetadataString:
        fail(file_, "the metadata value for ", shown(metadata_key_), " must be a string, not ", what);
      case State::TensorValue:
        fail(file_, tensor(), "it must be described by an object, not ", what);
      case State::Dtype:
        fail(file_, tensor(), "dtype must be a string, not ", what);
      case State::ShapeValue:
        fail(file_, tensor(), "shape must be an array of sizes, not ", what);
      case State::Shape:
        fail(file_, tensor(), "shape must hold sizes (integers >= 0), not ", what);
      case State::OffsetsValue:
        fail(file_, tensor(), "data_offsets must be an array [begin, end], not ", what);
      case State::Offsets:
        fail(file_, tensor(), "data_offsets must hold byte offsets (integers >= 0), not ", what);
      default:
        fail(file_, "the header has ", what, " where it cannot be");
    }
  }

  const std::string& file_;
  State state_ = State::Start;
  Header header_;
  std::set<std::string> names_;
  std::string metadata_key_;
  int fields_ = 0;
  int offsets_count_ = 0;
};

Header parse_header(const char* text, size_t size, const std::string& file) {
  HeaderParser parser(file);
  // Strict: nothing but whitespace may follow the object (the reference pads with spaces).
  Json::sax_parse(text, text + size, &parser, Json::input_format_t::json, /*strict=*/true);
  return parser.take();
}

// Checks the entries against the data section (`data_size` bytes after the header) and sorts
// them by offset. The format requires the tensors to tile the data section exactly: no byte
// outside a tensor, none in two.
void check_layout(Header& header, uint64_t data_size, const std::string& file) {
  for (const Entry& e : header.entries) {
    std::string where = "tensor " + shown(e.name) + " has data_offsets [" + std::to_string(e.begin) + ", " +
                        std::to_string(e.end) + "]";
    if (e.begin > e.end) fail(file, where, ", which run backwards");
    if (e.end > data_size) fail(file, where, " past the end of the data section (", data_size, " bytes)");
    if (e.end - e.begin != e.nbytes) {
      fail(file, where, " (", e.end - e.begin, " bytes), but its shape ", shape_text(e.shape), " of ",
           safetensors::dtype_code(e.dtype), " needs ", e.nbytes, " bytes");
    }
  }
  std::sort(header.entries.begin(), header.entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.position) < std::tie(b.begin, b.end, b.position);
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : header.entries) {
    if (e.begin < covered) {
      fail(file, "tensors ", shown(previous->name), " (bytes [", previous->begin, ", ", previous->end, ")) and ",
           shown(e.name), " (bytes [", e.begin, ", ", e.end, ")) overlap in the data section");
    }
    if (e.begin > covered) {
      fail(file, "bytes [", covered, ", ", e.begin, ") of the data section belong to no tensor (a gap before ",
           shown(e.name), ")");
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size) {
    fail(file, "the data section has ", data_size - covered, " trailing bytes (from byte ", covered,
         ") that belong to no tensor");
  }
}

// Allocates each tensor and fills it through `read(offset in the data section, destination, bytes)`.
StateDict materialize(Header& header, const std::string& file,
                      const std::function<void(uint64_t, void*, uint64_t)>& read) {
  StateDict state;
  for (const Entry& e : header.entries) {
    Storage storage = Storage::allocate(e.nbytes, Device(kCPU));
    if (e.nbytes > 0) read(e.begin, storage.data(), e.nbytes);
    if (e.dtype == kBool) {
      // A bool holding another byte is undefined behaviour in C++: refuse it here.
      const uint8_t* bytes = static_cast<const uint8_t*>(storage.data());
      for (uint64_t i = 0; i < e.nbytes; ++i) {
        if (bytes[i] > 1) {
          fail(file, "tensor ", shown(e.name), " of dtype BOOL holds the byte ", int(bytes[i]), " at element ", i,
               " (booleans are 0 or 1)");
        }
      }
    }
    state.insert(e.name, Tensor::make(std::move(storage), e.shape, contiguous_strides(e.shape), 0, e.dtype));
  }
  state.metadata = std::move(header.metadata);
  return state;
}

uint64_t read_le64(const uint8_t* p) {
  uint64_t value;
  std::memcpy(&value, p, 8);
  return value;
}

// The header length is checked before anything is read or allocated for the header.
void check_header_length(uint64_t header_size, uint64_t file_size, const std::string& file) {
  if (file_size < 8) fail(file, "it is ", file_size, " bytes, too short for the 8-byte header length");
  if (header_size > safetensors::kMaxHeaderBytes) {
    fail(file, "the header length ", header_size, " is over the limit of ", safetensors::kMaxHeaderBytes, " bytes");
  }
  if (header_size > file_size - 8) {
    fail(file, "the header length ", header_size, " runs past the end of the file (", file_size - 8,
         " bytes follow the length)");
  }
}

std::string os_error(int error) { return std::error_code(error, std::generic_category()).message(); }

// Closes a file descriptor on every way out.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// Reads exactly `size` bytes at `offset`; a file that got shorter since it was measured is an error.
void pread_exact(int fd, void* dst, uint64_t size, uint64_t offset, const std::string& file) {
  char* p = static_cast<char*>(dst);
  while (size > 0) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, uint64_t{1} << 30));
    ssize_t got = ::pread(fd, p, chunk, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(file, "reading at byte ", offset, " failed: ", os_error(errno));
    }
    if (got == 0) fail(file, "the file ended at byte ", offset, ", earlier than it did when opened (did it change?)");
    p += got;
    size -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
}

}  // namespace

StateDict load_from_memory(const uint8_t* data, size_t size, const std::string& name_for_errors) {
  const std::string& file = name_for_errors;
  uint64_t header_size = size >= 8 ? read_le64(data) : 0;
  check_header_length(header_size, size, file);
  Header header = parse_header(reinterpret_cast<const char*>(data) + 8, header_size, file);
  check_layout(header, size - 8 - header_size, file);
  const uint8_t* section = data + 8 + header_size;
  return materialize(header, file,
                     [&](uint64_t offset, void* dst, uint64_t n) { std::memcpy(dst, section + offset, n); });
}

StateDict load(const std::string& path) {
  // Read with pread straight into each tensor's memory: a checkpoint is never held twice.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open it: ", os_error(errno));
  FdCloser closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) fail(path, "cannot stat it: ", os_error(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "it is not a regular file");
  uint64_t size = static_cast<uint64_t>(st.st_size);

  uint8_t length[8] = {};
  if (size >= 8) pread_exact(fd, length, 8, 0, path);
  uint64_t header_size = size >= 8 ? read_le64(length) : 0;
  check_header_length(header_size, size, path);
  std::string text(header_size, '\0');
  pread_exact(fd, text.data(), header_size, 8, path);
  Header header = parse_header(text.data(), text.size(), path);
  check_layout(header, size - 8 - header_size, path);
  uint64_t section = 8 + header_size;
  return materialize(header, path,
                     [&](uint64_t offset, void* dst, uint64_t n) { pread_exact(fd, dst, n, section + offset, path); });
}

}  // namespace tandem
