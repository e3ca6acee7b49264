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

  // This generator's key, from offset 0. td::manual_seed seeds every device's generator instead
  // (and those made later).
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
// every run, whichever replica gets there first.
Generator& default_generator(Device device);
Generator& default_generator();  // cpu:0's
// The key td::manual_seed(seed) gives a device's generator: cpu:0's is the seed itself, every
// other device's a key mixed from the seed, the device type and the index, so that two replicas do
// not drop the same units, and noise drawn on the CPU is not the GPU's dropout mask.
uint64_t device_seed(uint64_t seed, Device device);
// Seeds every device's generator, those made later included (PyTorch's manual_seed, which seeds
// the CPU's and every GPU's).
void manual_seed(uint64_t seed);
// The state of every generator used so far, by device (what a checkpoint keeps).
std::vector<std::pair<Device, PhiloxState>> generator_states();

// While one lives, random ops on this thread draw from a scratch generator of the thread's own:
// code whose draws are overwritten anyway (a clone's reset()) leaves every device's stream where
// it was, without touching what other threads draw meanwhile.
class DiscardRandomDraws {
 public:
  DiscardRandomDraws();
  ~DiscardRandomDraws();
  DiscardRandomDraws(const DiscardRandomDraws&) = delete;
  DiscardRandomDraws& operator=(const DiscardRandomDraws&) = delete;
};

}  // namespace tandem
