// Writing safetensors files atomically: a temporary file beside the target, synced, then renamed
// over it. rename() within one directory replaces the target in one step, so a reader (or a
// crash) sees either the old file or the complete new one, never a torn one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "kernels/copy.h"
#include "nn/serialize/safetensors.h"
#include "nn/serialize/safetensors_format.h"

namespace tandem {

namespace {

using Json = nlohmann::json;

std::string os_error(int error) { return std::error_code(error, std::generic_category()).message(); }

template <typename... Args>
[[noreturn]] void fail(const std::string& path, const Args&... args) {
  TD_FAIL("cannot save '", path, "': ", args...);
}

// A JSON string literal for `s`; JSON text must be UTF-8, so other bytes are an error.
std::string json_string(const std::string& s, const std::string& path, const char* what) {
  try {
    return Json(s).dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::exception&) {
    std::string shown = s.size() <= 120 ? s : s.substr(0, 120) + "...";
    fail(path, "the ", what, " '", shown, "' is not valid UTF-8, which the JSON header needs");
  }
}

// The JSON header in the reference implementation's layout (metadata first, no spaces), with
// tensors in insertion order at consecutive offsets, padded with spaces so that the data section
// starts 8-byte aligned in the file.
std::string make_header(const StateDict& state, const std::string& path) {
  std::string header = "{";
  if (!state.metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : state.metadata) {
      if (!first) header += ",";
      first = false;
      header += json_string(key, path, "metadata key") + ":" + json_string(value, path, "metadata value");
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : state) {
    if (!tensor.defined()) fail(path, "the tensor '", name, "' is undefined");
    if (name == "__metadata__") {
      fail(path, "a tensor may not be named '__metadata__': the format keeps that key for the metadata");
    }
    if (header.size() > 1) header += ",";
    header += json_string(name, path, "tensor name") + ":{\"dtype\":\"" + safetensors::dtype_code(tensor.dtype()) +
              "\",\"shape\":[";
    for (size_t d = 0; d < tensor.sizes().size(); ++d) {
      if (d) header += ",";
      header += std::to_string(tensor.sizes()[d]);
    }
    uint64_t end = offset + tensor.nbytes();
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > safetensors::kMaxHeaderBytes) {
    fail(path, "its header would be ", header.size(), " bytes, over the ", safetensors::kMaxHeaderBytes,
         " bytes that readers accept");
  }
  return header;
}

// The temporary file: removed again unless commit() renamed it over the target.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    size_t slash = target.rfind('/');
    std::string prefix = slash == std::string::npos ? "" : target.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
    if (base.empty() || base == "." || base == "..") fail(target, "the path names a directory, not a file");
    dir_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : target.substr(0, slash));
    // Short enough to stay under NAME_MAX however long the target's name is; unique within the
    // process by the counter and across processes by the pid.
    static std::atomic<uint64_t> counter{0};
    std::string stem = prefix + "." + base.substr(0, 100) + ".tmp-" + std::to_string(::getpid()) + "-";
    for (int attempt = 0;; ++attempt) {
      path_ = stem + std::to_string(counter.fetch_add(1));
      // 0666 so that the process's umask gives the file the permissions a plain create would.
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ >= 0) return;
      int error = errno;
      if (error != EEXIST || attempt == 100) {
        path_.clear();
        fail(target, "cannot create a temporary file in '", dir_, "': ", os_error(error));
      }
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  void write(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      ssize_t done = ::write(fd_, p, std::min<size_t>(size, size_t{1} << 30));
      if (done < 0) {
        if (errno == EINTR) continue;
        fail(target_, "writing the temporary file '", path_, "' failed: ", os_error(errno));
      }
      p += done;
      size -= static_cast<size_t>(done);
    }
  }

  // Data on disk first (fsync), then the name: a crash after rename() must not leave a target
  // whose blocks were never written.
  void commit() {
    if (::fsync(fd_) != 0) fail(target_, "syncing the temporary file '", path_, "' failed: ", os_error(errno));
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(target_, "closing the temporary file '", path_, "' failed: ", os_error(errno));
    if (::rename(path_.c_str(), target_.c_str()) != 0) {
      fail(target_, "renaming the temporary file '", path_, "' over it failed: ", os_error(errno));
    }
    path_.clear();
    // Makes the rename itself durable. Best effort: some file systems refuse fsync on a
    // directory, and the new file is complete and in place either way.
    int dir = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir);
      ::close(dir);
    }
  }

 private:
  std::string target_, dir_, path_;
  int fd_ = -1;
};

}  // namespace

void save(const StateDict& state, const std::string& path) {
  // Everything that can be checked without I/O is checked before the temporary file exists.
  std::string header = make_header(state, path);
  TempFile file(path);
  uint8_t length[8];
  uint64_t header_size = header.size();
  std::memcpy(length, &header_size, 8);  // little-endian: safetensors.cc asserts the host is
  file.write(length, 8);
  file.write(header.data(), header.size());
  for (const auto& [name, tensor] : state) {
    // One tensor's CPU copy at a time: saving a model held on a GPU needs little host memory.
    Tensor data = tensor.is_cpu() ? tensor : kernels::to(tensor, Device(kCPU));
    data = kernels::contiguous(data);
    if (data.nbytes() > 0) file.write(data.data_ptr(), data.nbytes());
  }
  file.commit();
}

}  // namespace tandem
