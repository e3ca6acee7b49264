// CIFAR-10: the binary batches of Krizhevsky's 32x32 colour images (plain or gzipped), as float32
// images [N, 3, 32, 32] scaled to [0, 1] and int64 labels [N]. Nothing is downloaded: point it
// at the folder cifar-10-binary.tar.gz unpacks to.
#pragma once

#include <array>
#include <string>

#include "nn/data/dataset.h"

namespace tandem::data {

class CIFAR10 : public TensorDataset {
 public:
  enum class Mode { kTrain, kTest };
  static constexpr int64_t kChannels = 3, kRows = 32, kCols = 32;
  // A record: one label byte, then the red, green and blue planes, each 32x32 row-major.
  static constexpr int64_t kRecordBytes = 1 + kChannels * kRows * kCols;
  static const std::array<std::string, 10>& class_names();  // "airplane", "automobile", ...

  // Reads <root>/data_batch_1.bin .. data_batch_5.bin (kTrain) or <root>/test_batch.bin (kTest),
  // each possibly with a .gz suffix; <root>/cifar-10-batches-bin/ is looked in too.
  explicit CIFAR10(const std::string& root, Mode mode = Mode::kTrain);

  Mode mode() const { return mode_; }

 private:
  CIFAR10(Example example, Mode mode);
  Mode mode_;
};

// One batch file: {images [N, 3, 32, 32] float32 (byte / 255), labels [N] int64}. A size that
// is not a whole number of records, or a label outside 0..9, raises tandem::Error naming the file.
Example read_cifar10_batch(const std::string& path);

}  // namespace tandem::data
