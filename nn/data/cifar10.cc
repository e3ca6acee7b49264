#include "nn/data/cifar10.h"

#include <cstdint>
#include <string>
#include <vector>

#include "nn/data/file_io.h"

namespace tandem::data {

const std::array<std::string, 10>& CIFAR10::class_names() {
  static const std::array<std::string, 10> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                    "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

namespace {

constexpr int64_t kPixels = CIFAR10::kChannels * CIFAR10::kRows * CIFAR10::kCols;

// A batch file's bytes, checked: a whole, non-zero number of records with labels 0..9.
std::vector<uint8_t> read_checked(const std::string& path) {
  std::vector<uint8_t> bytes = detail::read_file(path);
  int64_t size = static_cast<int64_t>(bytes.size());
  TD_CHECK(size > 0, path, ": the file is empty (a CIFAR-10 batch holds records of ", CIFAR10::kRecordBytes, " bytes)");
  TD_CHECK(size % CIFAR10::kRecordBytes == 0, path, ": truncated or malformed: ", size,
           " bytes is not a whole number of ", CIFAR10::kRecordBytes, "-byte records (", size / CIFAR10::kRecordBytes,
           " records and ", size % CIFAR10::kRecordBytes, " bytes over)");
  for (int64_t r = 0; r < size / CIFAR10::kRecordBytes; ++r) {
    uint8_t label = bytes[static_cast<size_t>(r * CIFAR10::kRecordBytes)];
    TD_CHECK(label <= 9, path, ": record ", r, " has label ", int{label}, ", not a class 0..9");
  }
  return bytes;
}

// Decodes the records of one file into rows [first, ...) of images and labels.
void decode(const std::vector<uint8_t>& bytes, int64_t first, float* images, int64_t* labels) {
  int64_t records = static_cast<int64_t>(bytes.size()) / CIFAR10::kRecordBytes;
  // Divided, not multiplied by 1/255: the same floats as PyTorch's ToTensor (x.float().div(255)).
  parallel_for(0, records, 256, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const uint8_t* record = bytes.data() + r * CIFAR10::kRecordBytes;
      labels[first + r] = record[0];
      float* out = images + (first + r) * kPixels;
      for (int64_t i = 0; i < kPixels; ++i) out[i] = static_cast<float>(record[1 + i]) / 255.0f;
    }
  });
}

Example read_batches(const std::vector<std::string>& paths) {
  std::vector<std::vector<uint8_t>> files;
  int64_t total = 0;
  for (const auto& path : paths) {
    files.push_back(read_checked(path));
    total += static_cast<int64_t>(files.back().size()) / CIFAR10::kRecordBytes;
  }
  Tensor images = empty({total, CIFAR10::kChannels, CIFAR10::kRows, CIFAR10::kCols}, kFloat32);
  Tensor labels = empty({total}, kInt64);
  int64_t first = 0;
  for (const auto& bytes : files) {
    decode(bytes, first, images.data_ptr<float>(), labels.data_ptr<int64_t>());
    first += static_cast<int64_t>(bytes.size()) / CIFAR10::kRecordBytes;
  }
  return {images, labels};
}

Example read_cifar10(const std::string& root, CIFAR10::Mode mode) {
  std::vector<std::string> names;
  if (mode == CIFAR10::Mode::kTrain) {
    for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  // The official archive unpacks into cifar-10-batches-bin/; accept its parent as the root too.
  std::string dir = root;
  auto present = [](const std::string& path) { return detail::file_exists(path) || detail::file_exists(path + ".gz"); };
  if (!present(dir + "/" + names[0]) && present(root + "/cifar-10-batches-bin/" + names[0])) {
    dir = root + "/cifar-10-batches-bin";
  }
  std::vector<std::string> paths;
  for (const auto& name : names) paths.push_back(detail::find_file(dir + "/" + name, "CIFAR10"));
  return read_batches(paths);
}

}  // namespace

Example read_cifar10_batch(const std::string& path) { return read_batches({path}); }

CIFAR10::CIFAR10(const std::string& root, Mode mode) : CIFAR10(read_cifar10(root, mode), mode) {}

CIFAR10::CIFAR10(Example example, Mode mode) : TensorDataset(example.data, example.target), mode_(mode) {}

}  // namespace tandem::data
