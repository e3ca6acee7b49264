#include "nn/data/mnist.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "nn/data/file_io.h"

namespace tandem::data {

namespace {

// An IDX file's sizes and where its data begins. Its magic number is 0x00 0x00, a type byte
// (0x08: unsigned bytes) and the number of dims; then each dim as a big-endian int32.
struct Idx {
  std::vector<int64_t> dims;
  size_t data_offset = 0;
};

Idx parse_idx(const std::vector<uint8_t>& bytes, const std::string& path, int ndims, const char* what) {
  TD_CHECK(bytes.size() >= 4, path, ": truncated: ", bytes.size(), " bytes, too short for an IDX header");
  uint32_t magic = uint32_t{bytes[0]} << 24 | uint32_t{bytes[1]} << 16 | uint32_t{bytes[2]} << 8 | bytes[3];
  uint32_t expected = 0x0800u | static_cast<uint32_t>(ndims);
  if (magic != expected) {
    char text[11], want[11];
    std::snprintf(text, sizeof text, "0x%08x", magic);
    std::snprintf(want, sizeof want, "0x%08x", expected);
    TD_FAIL(path, ": bad magic number ", text, " (an IDX file of ", what, ", unsigned bytes in ", ndims,
            " dims, starts with ", want, ")");
  }
  Idx idx;
  idx.data_offset = 4 + 4 * static_cast<size_t>(ndims);
  TD_CHECK(bytes.size() >= idx.data_offset, path, ": truncated: ", bytes.size(), " bytes, too short for the ",
           idx.data_offset, "-byte IDX header of ", what);
  for (int d = 0; d < ndims; ++d) {
    const uint8_t* p = bytes.data() + 4 + 4 * d;
    idx.dims.push_back(uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]);
  }
  return idx;
}

// The number of data bytes must be exactly what the header announces.
void check_data_size(const std::vector<uint8_t>& bytes, const Idx& idx, int64_t expected, const std::string& path,
                     const char* what) {
  int64_t found = static_cast<int64_t>(bytes.size() - idx.data_offset);
  TD_CHECK(found >= expected, path, ": truncated: the header announces ", idx.dims[0], " ", what, " (", expected,
           " bytes) but only ", found, " bytes follow it");
  TD_CHECK(found == expected, path, ": the header announces ", idx.dims[0], " ", what, " (", expected, " bytes) but ",
           found, " bytes follow it (", found - expected, " too many)");
}

}  // namespace

Tensor read_mnist_images(const std::string& path) {
  std::vector<uint8_t> bytes = detail::read_file(path);
  Idx idx = parse_idx(bytes, path, 3, "images");
  TD_CHECK(idx.dims[1] == MNIST::kRows && idx.dims[2] == MNIST::kCols, path, ": images are ", idx.dims[1], "x",
           idx.dims[2], ", expected ", MNIST::kRows, "x", MNIST::kCols);
  int64_t n = idx.dims[0], pixels = MNIST::kRows * MNIST::kCols;
  check_data_size(bytes, idx, n * pixels, path, "images");
  Tensor images = empty({n, 1, MNIST::kRows, MNIST::kCols}, kFloat32);
  float* out = images.data_ptr<float>();
  const uint8_t* in = bytes.data() + idx.data_offset;
  // Divided, not multiplied by 1/255: the same floats as PyTorch's ToTensor (x.float().div(255)).
  parallel_for(0, n * pixels, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = static_cast<float>(in[i]) / 255.0f;
  });
  return images;
}

Tensor read_mnist_labels(const std::string& path) {
  std::vector<uint8_t> bytes = detail::read_file(path);
  Idx idx = parse_idx(bytes, path, 1, "labels");
  int64_t n = idx.dims[0];
  check_data_size(bytes, idx, n, path, "labels");
  Tensor labels = empty({n}, kInt64);
  int64_t* out = labels.data_ptr<int64_t>();
  const uint8_t* in = bytes.data() + idx.data_offset;
  for (int64_t i = 0; i < n; ++i) {
    TD_CHECK(in[i] <= 9, path, ": label ", int{in[i]}, " at index ", i, " is not a digit 0..9");
    out[i] = in[i];
  }
  return labels;
}

namespace {

Example read_mnist(const std::string& root, MNIST::Mode mode) {
  std::string prefix = root + "/" + (mode == MNIST::Mode::kTrain ? "train" : "t10k");
  std::string images_path = detail::find_file(prefix + "-images-idx3-ubyte", "MNIST");
  std::string labels_path = detail::find_file(prefix + "-labels-idx1-ubyte", "MNIST");
  Tensor images = read_mnist_images(images_path);
  Tensor labels = read_mnist_labels(labels_path);
  TD_CHECK(images.size(0) == labels.size(0), "MNIST: ", images_path, " holds ", images.size(0), " images but ",
           labels_path, " holds ", labels.size(0), " labels");
  return {images, labels};
}

}  // namespace

MNIST::MNIST(const std::string& root, Mode mode) : MNIST(read_mnist(root, mode), mode) {}

MNIST::MNIST(Example example, Mode mode) : TensorDataset(example.data, example.target), mode_(mode) {}

}  // namespace tandem::data
