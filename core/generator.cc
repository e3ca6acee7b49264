#include "core/generator.h"

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

thread_local int discarding_draws = 0;  // DiscardRandomDraws alive on this thread

}  // namespace

uint64_t device_seed(uint64_t seed, Device device) {
  const uint64_t code = static_cast<uint64_t>(device.index()) + (device.is_cuda() ? Device::kMaxIndex + 1 : 0);
  if (code == 0) return seed;  // cpu:0
  // splitmix64's finaliser over the seed plus a multiple of the golden ratio: nearby seeds and
  // devices give unrelated keys.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * code;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

DiscardRandomDraws::DiscardRandomDraws() { ++discarding_draws; }
DiscardRandomDraws::~DiscardRandomDraws() { --discarding_draws; }

Generator& default_generator(Device device) {
  if (discarding_draws > 0) {
    thread_local Generator scratch;
    return scratch;
  }
  Generators& g = generators();
  std::lock_guard lock(g.mutex);
  std::unique_ptr<Generator>& generator = g.by_device[device];
  if (!generator) {
    generator = std::make_unique<Generator>();
    generator->manual_seed(device_seed(g.seed, device));
  }
  return *generator;
}

Generator& default_generator() { return default_generator(Device(kCPU, 0)); }

void manual_seed(uint64_t seed) {
  Generators& g = generators();
  std::lock_guard lock(g.mutex);
  g.seed = seed;
  for (auto& [device, generator] : g.by_device) generator->manual_seed(device_seed(seed, device));
}

std::vector<std::pair<Device, PhiloxState>> generator_states() {
  Generators& g = generators();
  std::lock_guard lock(g.mutex);
  std::vector<std::pair<Device, PhiloxState>> states;
  for (const auto& [device, generator] : g.by_device) states.emplace_back(device, generator->state());
  return states;
}

}  // namespace tandem
