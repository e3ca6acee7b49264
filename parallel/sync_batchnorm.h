// sync_batchnorm: the BatchNorm layers at one position in every replica meet at a SyncPoint
// during forward; each replica then computes the whole batch's per-channel mean and variance
// from every replica's own (gathered differentiably onto its device), so DataParallel with
// BatchNorm in training mode computes what one device computes on the whole batch. PyTorch
// offers this only for DistributedDataParallel (SyncBatchNorm).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "nn/functional.h"
#include "nn/module.h"

namespace tandem::parallel {

class BatchNormSyncPoint {
 public:
  explicit BatchNormSyncPoint(size_t replicas) : slots_(replicas) {}
  // Replica `rank`'s statistics in, the whole batch's out. Waits for every replica; throws
  // ReplicaAborted if another replica failed first.
  nn::functional::BatchStats combine(size_t rank, const nn::functional::BatchStats& local);
  void abort();

 private:
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  std::vector<nn::functional::BatchStats> slots_;
  size_t arrived_ = 0, left_ = 0;
  bool aborted_ = false;
};

// Joins the BatchNorm layers of `replicas` (replica i has rank i) through fresh sync points,
// one per BatchNorm position; returns them, so that a failing replica can abort them.
std::vector<std::shared_ptr<BatchNormSyncPoint>> sync_batchnorm(
    const std::vector<std::shared_ptr<nn::Module>>& replicas);

}  // namespace tandem::parallel
