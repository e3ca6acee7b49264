#include "nn/data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>

#include "core/cuda.h"

namespace tandem::data {

namespace {

// A uniform integer in [0, bound): rejection of the 2^64 mod bound lowest outputs, so that the
// remaining range divides evenly (no modulo bias), in terms the standard fixes exactly.
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

std::string indices_str(std::span<const int64_t> indices) {
  constexpr size_t kShown = 8;
  std::ostringstream out;
  for (size_t i = 0; i < std::min(indices.size(), kShown); ++i) out << (i ? ", " : "") << indices[i];
  if (indices.size() > kShown) out << ", ... (" << indices.size() << " in all)";
  return out.str();
}

}  // namespace

// The epoch in progress. With workers, batch k is claimed by whichever worker is free, but only
// while k - consumed < capacity (the queue bound); finished batches wait in `ready` under their
// number, and next() takes them by number, so the order out never depends on scheduling.
struct DataLoader::Run {
  struct Result {
    Example batch;
    std::exception_ptr error;
  };

  std::shared_ptr<Dataset> dataset;
  int64_t epoch = 0;
  int64_t batch_size = 1;
  bool pin_memory = false;  // and a GPU is there to copy to
  int64_t num_batches = 0;
  std::vector<int64_t> order;

  std::mutex mutex;
  std::condition_variable room;    // workers wait here for the queue to have room
  std::condition_variable filled;  // the consumer waits here for its batch
  int64_t capacity = 0;
  int64_t next_claim = 0;
  int64_t consumed = 0;
  bool stopping = false;
  std::map<int64_t, Result> ready;
  std::vector<std::thread> workers;

  // Assembles batch k; every failure becomes a tandem::Error that names the batch.
  Example make_batch(int64_t k) const {
    int64_t begin = k * batch_size;
    int64_t end = std::min<int64_t>(begin + batch_size, static_cast<int64_t>(order.size()));
    std::span<const int64_t> indices(order.data() + begin, static_cast<size_t>(end - begin));
    auto fail = [&](const std::string& what) {
      TD_FAIL("DataLoader: epoch ", epoch, ", batch ", k, " (dataset indices ", indices_str(indices), "): ", what);
    };
    Example batch;
    try {
      batch = dataset->get_batch(indices);
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (...) {
      fail("the dataset threw an exception that is not a std::exception");
    }
    if (!batch.data.defined() || !batch.target.defined()) fail("the dataset's get_batch returned an undefined tensor");
    if (batch.data.dim() == 0 || batch.data.size(0) != end - begin || batch.target.dim() == 0 ||
        batch.target.size(0) != end - begin) {
      fail("the dataset's get_batch returned data of shape " + shape_str(batch.data.sizes()) +
           " and targets of shape " + shape_str(batch.target.sizes()) + " for " + std::to_string(end - begin) +
           " examples; both need that many along dim 0");
    }
    if (pin_memory) {
      batch.data = batch.data.pin_memory();
      batch.target = batch.target.pin_memory();
    }
    return batch;
  }

  void work() {
    std::unique_lock lock(mutex);
    for (;;) {
      room.wait(lock, [&] { return stopping || next_claim >= num_batches || next_claim - consumed < capacity; });
      if (stopping || next_claim >= num_batches) return;
      int64_t k = next_claim++;
      lock.unlock();
      Result result;
      try {
        result.batch = make_batch(k);
      } catch (...) {
        result.error = std::current_exception();
      }
      lock.lock();
      ready.emplace(k, std::move(result));
      filled.notify_all();
    }
  }

  Example take(int64_t k) {
    Result result;
    {
      std::unique_lock lock(mutex);
      filled.wait(lock, [&] { return ready.count(k) != 0; });
      auto it = ready.find(k);
      result = std::move(it->second);
      ready.erase(it);
      consumed = k + 1;
    }
    room.notify_all();
    if (result.error) std::rethrow_exception(result.error);
    return std::move(result.batch);
  }

  void stop() {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    room.notify_all();
    for (auto& worker : workers) worker.join();
    workers.clear();
  }
};

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  TD_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  TD_CHECK(options_.batch_size() >= 1, "DataLoader: batch_size must be at least 1, got ", options_.batch_size());
  TD_CHECK(options_.num_workers() >= 0, "DataLoader: num_workers must be 0 or more, got ", options_.num_workers());
  TD_CHECK(options_.prefetch_factor() >= 1, "DataLoader: prefetch_factor must be at least 1, got ",
           options_.prefetch_factor());
  TD_CHECK(dataset_->size() >= 0, "DataLoader: the dataset reports a negative size, ", dataset_->size());
  // As PyTorch's random sampler: shuffling nothing is a mistake (a wrong data path, say), not an empty epoch.
  TD_CHECK(!options_.shuffle() || dataset_->size() > 0, "DataLoader: shuffle=true over an empty dataset");
}

DataLoader::~DataLoader() { stop_run(); }

int64_t DataLoader::batches_per_epoch() const {
  int64_t n = dataset_->size(), b = options_.batch_size();
  return n / b + (!options_.drop_last() && n % b != 0);
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  TD_CHECK(epoch >= 0, "DataLoader: epoch must be 0 or more, got ", epoch);
  std::vector<int64_t> order(static_cast<size_t>(dataset_->size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!options_.shuffle()) return order;
  uint64_t seed = options_.seed(), e = static_cast<uint64_t>(epoch);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(e),
                    static_cast<uint32_t>(e >> 32)};
  std::mt19937_64 rng(seq);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[uniform_below(rng, i)]);
  return order;
}

void DataLoader::stop_run() {
  if (!run_) return;
  run_->stop();
  run_.reset();
  fresh_ = false;
}

void DataLoader::start_epoch(int64_t epoch, int64_t skip_batches) {
  TD_CHECK(epoch >= 0, "DataLoader::start_epoch: epoch must be 0 or more, got ", epoch);
  int64_t num_batches = batches_per_epoch();
  TD_CHECK(skip_batches >= 0 && skip_batches <= num_batches, "DataLoader::start_epoch: cannot skip ", skip_batches,
           " batches of an epoch of ", num_batches, " batches");
  stop_run();
  auto run = std::make_unique<Run>();
  run->dataset = dataset_;
  run->epoch = epoch;
  run->batch_size = options_.batch_size();
  run->pin_memory = options_.pin_memory() && cuda::is_available();
  run->num_batches = num_batches;
  run->order = epoch_order(epoch);
  run->next_claim = run->consumed = skip_batches;
  // No more than the epoch's batches: huge num_workers or prefetch_factor do not overflow.
  int64_t capacity = 0;
  if (__builtin_mul_overflow(options_.num_workers(), options_.prefetch_factor(), &capacity)) capacity = num_batches;
  run->capacity = std::min(capacity, num_batches);
  epoch_ = epoch;
  position_ = skip_batches;
  run_ = std::move(run);
  fresh_ = true;
  int64_t workers = std::min(options_.num_workers(), num_batches - skip_batches);
  try {
    for (int64_t i = 0; i < workers; ++i) run_->workers.emplace_back([run = run_.get()] { run->work(); });
  } catch (...) {
    stop_run();  // joins those that did start
    throw;
  }
}

std::optional<Example> DataLoader::next() {
  if (!run_) return std::nullopt;
  fresh_ = false;
  if (position_ >= run_->num_batches) {
    stop_run();
    return std::nullopt;
  }
  Example batch;
  try {
    batch = options_.num_workers() > 0 ? run_->take(position_) : run_->make_batch(position_);
  } catch (...) {
    stop_run();
    throw;
  }
  ++position_;
  return batch;
}

DataLoader::Iterator DataLoader::begin() {
  if (!(run_ && fresh_)) start_epoch(epoch_ + 1);
  return Iterator(this);
}

}  // namespace tandem::data
