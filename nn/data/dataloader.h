// DataLoader: cuts a Dataset into batches, epoch after epoch. The order of an epoch depends only
// on (seed, epoch), so a run stopped anywhere resumes on exactly the batches it would have seen;
// worker threads may assemble batches ahead, without changing what comes out or in what order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "nn/data/dataset.h"

namespace tandem::data {

// LibTorch-style chained options: DataLoaderOptions().batch_size(64).shuffle(true).num_workers(2).
class DataLoaderOptions {
 public:
  DataLoaderOptions() = default;
  explicit DataLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}

  // Examples per batch; the last batch of an epoch may be smaller unless drop_last.
  DataLoaderOptions& batch_size(int64_t value) {
    batch_size_ = value;
    return *this;
  }
  int64_t batch_size() const { return batch_size_; }
  // Whether each epoch visits the examples in a fresh permutation (else in index order).
  DataLoaderOptions& shuffle(bool value) {
    shuffle_ = value;
    return *this;
  }
  bool shuffle() const { return shuffle_; }
  // With `epoch`, the one input of the permutation: independent of td::manual_seed on purpose,
  // so that initialising a model differently does not change the data order.
  DataLoaderOptions& seed(uint64_t value) {
    seed_ = value;
    return *this;
  }
  uint64_t seed() const { return seed_; }
  // Leave out an epoch's last batch when it would be smaller than batch_size.
  DataLoaderOptions& drop_last(bool value) {
    drop_last_ = value;
    return *this;
  }
  bool drop_last() const { return drop_last_; }
  // Background threads assembling batches (0: the caller assembles each batch in next()).
  DataLoaderOptions& num_workers(int64_t value) {
    num_workers_ = value;
    return *this;
  }
  int64_t num_workers() const { return num_workers_; }
  // Batches each worker may have ready ahead of the consumer (PyTorch's prefetch_factor): the
  // queue holds at most num_workers * prefetch_factor batches, which bounds the memory used.
  DataLoaderOptions& prefetch_factor(int64_t value) {
    prefetch_factor_ = value;
    return *this;
  }
  int64_t prefetch_factor() const { return prefetch_factor_; }
  // Batches in page-locked ("pinned") memory, for fast asynchronous copies to a GPU; without a
  // CUDA device it does nothing, as in PyTorch.
  DataLoaderOptions& pin_memory(bool value) {
    pin_memory_ = value;
    return *this;
  }
  bool pin_memory() const { return pin_memory_; }

 private:
  int64_t batch_size_ = 1;  // PyTorch's and LibTorch's default
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  bool drop_last_ = false;
  int64_t num_workers_ = 0;
  int64_t prefetch_factor_ = 2;
  bool pin_memory_ = false;
};

// Yields Example batches: data stacked along a new dim 0, targets too. Typical use:
//
//   td::data::DataLoader loader(dataset, td::data::DataLoaderOptions().batch_size(64).shuffle(true));
//   for (int epoch = 0; epoch < 10; ++epoch)
//     for (td::data::Example& batch : loader) train_step(batch.data, batch.target);
//
// Each range-for (each begin()) runs the epoch after the last one started: 0, 1, 2, ... To
// resume a run saved at (epoch(), batch_index()), call start_epoch(epoch, batch) first: the next
// range-for (or next()) continues exactly there, and later ones go on with epoch + 1.
//
// One thread consumes a loader (next(), begin()); only the workers run concurrently with it.
// Errors, a dataset's exceptions included (thrown in a worker or not), reach the consumer as
// tandem::Error naming the epoch, the batch and its dataset indices, and end the epoch:
// start_epoch(epoch(), batch_index()) retries the failed batch.
class DataLoader {
 public:
  class Iterator;
  struct Sentinel {};

  DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  // Stops the workers and joins them, in the middle of an epoch too.
  ~DataLoader();
  // Workers point into the loader's epoch state: it stays where it was made.
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  const DataLoaderOptions& options() const { return options_; }
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  // ceil(size / batch_size), or floor with drop_last.
  int64_t batches_per_epoch() const;
  // The order in which `epoch` visits the dataset's indices: a Fisher-Yates shuffle driven by
  // std::mt19937_64 seeded from (seed, epoch) through std::seed_seq (both fully specified by the
  // C++ standard, unlike std::uniform_int_distribution, so the order is the same everywhere).
  std::vector<int64_t> epoch_order(int64_t epoch) const;

  // Starts `epoch` at batch `skip_batches` (0 <= skip_batches <= batches_per_epoch()), ending any
  // epoch in progress; workers start assembling at once.
  void start_epoch(int64_t epoch, int64_t skip_batches = 0);
  // The next batch of the current epoch; nullopt once the epoch is over (or none was started).
  std::optional<Example> next();
  // The epoch started last (-1 before any), and how many of its batches were handed out
  // (skipped ones included): the pair to save for resuming.
  int64_t epoch() const { return epoch_; }
  int64_t batch_index() const { return position_; }

  // Continues an epoch that start_epoch() began and nothing was taken from yet, else starts
  // epoch() + 1.
  Iterator begin();
  Sentinel end() { return {}; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using pointer = Example*;
    using reference = Example&;

    Iterator() = default;
    Example& operator*() { return *current_; }
    Example* operator->() { return &*current_; }
    Iterator& operator++() {
      current_ = loader_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, Sentinel) { return !it.current_.has_value(); }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader) : loader_(loader), current_(loader->next()) {}
    DataLoader* loader_ = nullptr;
    std::optional<Example> current_;
  };

 private:
  struct Run;  // one epoch in progress: its order, and its workers and queue if any
  void stop_run();

  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  std::unique_ptr<Run> run_;
  int64_t epoch_ = -1;
  int64_t position_ = 0;
  bool fresh_ = false;  // run_ was started by start_epoch() and nothing was taken from it yet
};

}  // namespace tandem::data
