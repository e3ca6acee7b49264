#include "core/generator.h"

#include <algorithm>
#include <map>
#include <memory>

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

namespace {

struct Generators {
  std::mutex mutex;
  uint64_t seed = Generator::kDefaultSeed;  // the last manual_seed's
  std::map<Device, std::unique_ptr<Generator>> by_device;
};

Generators& generators() {
  static Generators g;
  return g;
}

}  // namespace

uint64_t device_seed(uint64_t seed, int index) {
  if (index == 0) return seed;
  // splitmix64's finaliser over the seed plus a multiple of the golden ratio: nearby seeds and
  // indices give unrelated keys.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(index);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Generator& default_generator(Device device) {
  Generators& g = generators();
  std::lock_guard lock(g.mutex);
  std::unique_ptr<Generator>& generator = g.by_device[device];
  if (!generator) {
    generator = std::make_unique<Generator>();
    generator->manual_seed(device_seed(g.seed, device.index()));
  }
  return *generator;
}

Generator& default_generator() { return default_generator(Device(kCPU, 0)); }

void manual_seed(uint64_t seed) {
  Generators& g = generators();
  std::lock_guard lock(g.mutex);
  g.seed = seed;
  for (auto& [device, generator] : g.by_device) generator->manual_seed(device_seed(seed, device.index()));
}

std::vector<std::pair<Device, PhiloxState>> generator_states() {
  Generators& g = generators();
  std::lock_guard lock(g.mutex);
  std::vector<std::pair<Device, PhiloxState>> states;
  for (const auto& [device, generator] : g.by_device) states.emplace_back(device, generator->state());
  return states;
}

RandomStateGuard::~RandomStateGuard() {
  Generators& g = generators();
  std::lock_guard lock(g.mutex);
  for (auto& [device, generator] : g.by_device) {
    auto it = std::find_if(saved_.begin(), saved_.end(), [&](const auto& s) { return s.first == device; });
    if (it != saved_.end()) {
      generator->set_state(it->second);
    } else {
      generator->manual_seed(device_seed(g.seed, device.index()));
    }
  }
}

}  // namespace tandem
