// Datasets: indexed collections of (data, target) examples that a DataLoader batches, and
// TensorDataset, the one for data already held in tensors.
#pragma once

#include <cstdint>
#include <span>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/generator.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "kernels/factory.h"

namespace tandem::data {

// One example, or (from DataLoader) one batch: its examples stacked along a new dim 0.
struct Example {
  Tensor data;
  Tensor target;
};

// An indexed dataset. get() may be called from several DataLoader worker threads at once, so
// an implementation must be safe to call concurrently (const, no unguarded mutable state), and
// deterministic: the same index gives the same example, which is what makes the loader's batches
// the same whatever the number of workers.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual Example get(int64_t index) const = 0;
  virtual int64_t size() const = 0;

  // The examples at `indices`, stacked along a new dim 0. The default calls get() per index and
  // stacks; a dataset whose examples lie in one tensor overrides it with one gather.
  virtual Example get_batch(std::span<const int64_t> indices) const;
};

// A dataset over two tensors whose dim 0 runs over the examples: example i is (data[i],
// targets[i]). get() returns views that share storage with the dataset, as in PyTorch: writing
// into them writes into the dataset.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor targets);

  Example get(int64_t index) const override;
  int64_t size() const override { return size_; }
  Example get_batch(std::span<const int64_t> indices) const override;

  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_;
  Tensor targets_;
  int64_t size_;
};

}  // namespace tandem::data
