// MNIST: LeCun's handwritten digits from their IDX files (plain or gzipped), as float32 images
// [N, 1, 28, 28] scaled to [0, 1] and int64 labels [N]. Nothing is downloaded: point it at a
// folder holding the files.
#pragma once

#include <string>

#include "nn/data/dataset.h"

namespace tandem::data {

class MNIST : public TensorDataset {
 public:
  enum class Mode { kTrain, kTest };
  static constexpr int64_t kRows = 28, kCols = 28;

  // Reads <root>/train-images-idx3-ubyte and <root>/train-labels-idx1-ubyte (kTrain) or the
  // t10k-* pair (kTest); either file may instead carry a .gz suffix.
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);

  Mode mode() const { return mode_; }

 private:
  MNIST(Example example, Mode mode);
  Mode mode_;
};

// One IDX file each, plain or gzipped (detected by content, not by name). Malformed files (bad
// magic number, images that are not 28x28, a size that disagrees with the header, labels
// outside 0..9) raise tandem::Error naming the file and the fault.
Tensor read_mnist_images(const std::string& path);  // [N, 1, 28, 28] float32, pixel / 255
Tensor read_mnist_labels(const std::string& path);  // [N] int64

}  // namespace tandem::data
