// sync_batchnorm: the BatchNorm layers at one position in every replica meet at a SyncPoint
// during forward; each replica then computes the whole batch's per-channel mean and variance
// from every replica's own (gathered differentiably onto its device), so DataParallel with
// BatchNorm in training mode computes what one device computes on the whole batch. PyTorch
// offers this only for DistributedDataParallel (SyncBatchNorm).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "nn/functional.h"
#include "nn/module.h"

namespace tandem::parallel {

// Where the replicas' calls of one BatchNorm layer meet. Calls pair up in rounds: every
// replica's first call, then every replica's second (a layer used twice in a forward).
class BatchNormSyncPoint {
 public:
  static constexpr std::chrono::milliseconds kDefaultTimeout{300000};
  explicit BatchNormSyncPoint(size_t replicas, std::chrono::milliseconds timeout = kDefaultTimeout)
      : timeout_(timeout), slots_(replicas), filled_(replicas, false) {}
  // Replica `rank`'s statistics in, the whole batch's out. Waits for every replica; throws
  // ReplicaAborted if another replica failed first, and tandem::Error if the others have not
  // come within `timeout` (a replica that skipped the layer: every replica must run the same
  // BatchNorm layers the same number of times).
  nn::functional::BatchStats combine(size_t rank, const nn::functional::BatchStats& local);
  void abort();

 private:
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<nn::functional::BatchStats> slots_;
  std::vector<bool> filled_;
  size_t arrived_ = 0, left_ = 0;
  uint64_t round_ = 0;     // the round being filled
  uint64_t complete_ = 0;  // rounds whose slots are all filled
  bool aborted_ = false;
};

// Joins the BatchNorm layers of `replicas` (replica i has rank i) through fresh sync points,
// one per BatchNorm position; returns them, so that a failing replica can abort them.
std::vector<std::shared_ptr<BatchNormSyncPoint>> sync_batchnorm(
    const std::vector<std::shared_ptr<nn::Module>>& replicas,
    std::chrono::milliseconds timeout = BatchNormSyncPoint::kDefaultTimeout);

}  // namespace tandem::parallel
