#include "parallel/sync_batchnorm.h"

#include "autograd/ops.h"
#include "kernels/factory.h"
#include "nn/layers.h"
#include "parallel/functions.h"
#include "parallel/parallel_apply.h"

namespace tandem::parallel {

nn::functional::BatchStats BatchNormSyncPoint::combine(size_t rank, const nn::functional::BatchStats& local) {
  std::vector<nn::functional::BatchStats> all;
  {
    std::unique_lock lock(mutex_);
    TD_CHECK(rank < slots_.size(), "sync_batchnorm: replica ", rank, " of ", slots_.size());
    auto wait = [&](auto ready) {
      if (!changed_.wait_for(lock, timeout_, [&] { return aborted_ || ready(); })) {
        TD_FAIL("sync_batchnorm: replica ", rank, " waited ", timeout_.count(), " ms for the other replicas' batch "
                "statistics; every replica must run the same BatchNorm layers, the same number of times");
      }
      if (aborted_) throw ReplicaAborted("sync_batchnorm: another replica failed before sharing its batch statistics");
    };
    // A second call of this layer waits until every replica has read the first round.
    wait([&] { return !filled_[rank]; });
    const uint64_t round = round_;
    slots_[rank] = local;
    filled_[rank] = true;
    if (++arrived_ == slots_.size()) {
      complete_ = round + 1;
      changed_.notify_all();
    }
    wait([&] { return complete_ > round; });
    all = slots_;
    if (++left_ == slots_.size()) {  // the last to read opens the next round
      arrived_ = left_ = 0;
      for (auto& s : slots_) s = {};
      filled_.assign(slots_.size(), false);
      ++round_;
      changed_.notify_all();
    }
  }
  // Every replica combines all replicas' statistics on its own device: the chunk means and
  // variances, weighted by chunk size, give the batch's (law of total variance).
  const Device device = local.mean.device();
  const Shape shape = local.mean.sizes();
  std::vector<Tensor> means, vars;
  std::vector<double> shares;
  int64_t total = 0;
  for (const auto& s : all) total += s.count;
  for (const auto& s : all) {
    means.push_back(s.mean.reshape({1, -1}));
    vars.push_back(s.var.reshape({1, -1}));
    shares.push_back(static_cast<double>(s.count) / static_cast<double>(total));
  }
  Tensor m = Gather::apply(means, device, 0), v = Gather::apply(vars, device, 0);  // [replicas, C]
  Tensor w = tensor(shares, TensorOptions(kFloat64).device(device)).to(m.dtype()).reshape({-1, 1});
  Tensor mean = (m * w).sum({0}, true);
  Tensor var = ((v + (m - mean) * (m - mean)) * w).sum({0}, true);
  return {mean.reshape(shape), var.reshape(shape), total};
}

void BatchNormSyncPoint::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  changed_.notify_all();
}

std::vector<std::shared_ptr<BatchNormSyncPoint>> sync_batchnorm(
    const std::vector<std::shared_ptr<nn::Module>>& replicas, std::chrono::milliseconds timeout) {
  std::vector<std::shared_ptr<BatchNormSyncPoint>> points;
  std::vector<std::vector<nn::AnyBatchNorm*>> layers;  // [replica][position]
  for (const auto& replica : replicas) {
    layers.emplace_back();
    for (const auto& m : replica->modules()) {
      if (auto* bn = dynamic_cast<nn::AnyBatchNorm*>(m.get())) layers.back().push_back(bn);
    }
  }
  if (layers.empty()) return points;
  for (size_t position = 0; position < layers[0].size(); ++position) {
    auto point = std::make_shared<BatchNormSyncPoint>(replicas.size(), timeout);
    for (size_t rank = 0; rank < replicas.size(); ++rank) {
      layers[rank][position]->sync = [point, rank](const nn::functional::BatchStats& local) {
        return point->combine(rank, local);
      };
    }
    points.push_back(std::move(point));
  }
  return points;
}

}  // namespace tandem::parallel
