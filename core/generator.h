// Random generators: a seed and an offset into a Philox stream, one generator per device.
// Each random op reserves the words it will use, so results do not depend on thread count.
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "core/device.h"

namespace tandem {

struct PhiloxState {
  uint64_t seed;
  uint64_t offset;  // first block of the words reserved
};

class Generator {
 public:
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const;
  // Reserves `words` 32-bit words of the stream (rounded up to whole blocks).
  PhiloxState reserve(uint64_t words);
  PhiloxState state() const;
  void set_state(PhiloxState state);

 private:
  mutable std::mutex mutex_;
  uint64_t seed_ = kDefaultSeed;
  uint64_t offset_ = 0;
};

// The generator of a tensor's device: random ops draw from it. Each device has its own (PyTorch
// has one for the CPU and one per GPU), so that replicas running at once on several devices each
// draw from their own stream, in their own order: a data-parallel run with dropout is the same on
// every run, whichever replica gets there first. cpu:i and cuda:i are seeded alike: index 0 with
// the seed itself (so cuda:0 draws what cpu:0 draws), every other index with a key mixed from the
// seed and the index, so that two replicas do not drop the same units.
Generator& default_generator(Device device);
Generator& default_generator();  // cpu:0's
// The key manual_seed(seed) gives the generators of devices with this index.
uint64_t device_seed(uint64_t seed, int index);
// Seeds every device's generator, those made later included (PyTorch's manual_seed, which seeds
// the CPU's and every GPU's).
void manual_seed(uint64_t seed);
// The state of every generator used so far, by device (what a checkpoint keeps).
std::vector<std::pair<Device, PhiloxState>> generator_states();

// Puts every generator back where it was when the guard was made: a generator first used
// meanwhile starts afresh from the seed again.
class RandomStateGuard {
 public:
  RandomStateGuard() : saved_(generator_states()) {}
  ~RandomStateGuard();
  RandomStateGuard(const RandomStateGuard&) = delete;
  RandomStateGuard& operator=(const RandomStateGuard&) = delete;

 private:
  std::vector<std::pair<Device, PhiloxState>> saved_;
};

}  // namespace tandem
