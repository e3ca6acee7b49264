// The default random generator: a seed and an offset into its Philox stream.
// Each random op reserves the words it will use, so results do not depend on thread count.
#pragma once

#include <cstdint>
#include <mutex>

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

Generator& default_generator();
// Seeds the default generator (and, once the CUDA backend exists, each device's).
void manual_seed(uint64_t seed);

}  // namespace tandem
