#include "core/generator.h"

namespace tandem {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::initial_seed() const {
  std::lock_guard lock(mutex_);
  return seed_;
}

PhiloxState Generator::reserve(uint64_t words) {
  std::lock_guard lock(mutex_);
  PhiloxState s{seed_, offset_};
  offset_ += (words + 3) / 4;
  return s;
}

PhiloxState Generator::state() const {
  std::lock_guard lock(mutex_);
  return {seed_, offset_};
}

void Generator::set_state(PhiloxState state) {
  std::lock_guard lock(mutex_);
  seed_ = state.seed;
  offset_ = state.offset;
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace tandem
