// The Philox generator and the random factories: known-answer vectors for the bijection,
// streams that do not depend on the thread count, seeds that repeat, and distributions with
// the right moments.
#include <cmath>
#include <set>
#include <thread>

#include "core/philox.h"
#include "tests/testing.h"

namespace td = tandem;
using td::testing::check_error;
using td::testing::values;

namespace {

// Runs f with the pool at `threads`, restoring the previous size.
template <typename F>
auto with_threads(int threads, F f) {
  int before = td::num_threads();
  td::set_num_threads(threads);
  auto result = f();
  td::set_num_threads(before);
  return result;
}

void check_identical(const td::Tensor& a, const td::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  REQUIRE(a.dtype() == b.dtype());
  CHECK(std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}

}  // namespace

TEST_CASE("philox4x32-10 reproduces the Random123 known-answer vectors", "[cpu]") {
  auto zero = td::philox4x32_10(td::PhiloxBlock{{0, 0, 0, 0}}, 0, 0);
  CHECK(zero.w[0] == 0x6627e8d5u);
  CHECK(zero.w[1] == 0xe169c58du);
  CHECK(zero.w[2] == 0xbc57ac4cu);
  CHECK(zero.w[3] == 0x9b00dbd8u);
  auto ones = td::philox4x32_10(td::PhiloxBlock{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu,
                                0xffffffffu);
  CHECK(ones.w[0] == 0x408f276du);
  CHECK(ones.w[1] == 0x41c83b0eu);
  CHECK(ones.w[2] == 0xa20bc7c6u);
  CHECK(ones.w[3] == 0x6d5451fdu);
  auto pi = td::philox4x32_10(td::PhiloxBlock{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u,
                              0x299f31d0u);
  CHECK(pi.w[0] == 0xd16cfe09u);
  CHECK(pi.w[1] == 0x94fdccebu);
  CHECK(pi.w[2] == 0x5001e420u);
  CHECK(pi.w[3] == 0x24126ea1u);
}

TEST_CASE("random tensors are the same at 1 and 2 threads for a fixed seed", "[cpu]") {
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16}) {
    INFO(td::dtype_name(dtype));
    auto draw = [dtype] {
      td::manual_seed(1234);
      return std::vector<td::Tensor>{td::rand({1000003}, dtype), td::randn({100001}, dtype),
                                     td::bernoulli(td::full({70001}, 0.3, dtype))};
    };
    auto one = with_threads(1, draw);
    auto two = with_threads(2, draw);
    for (size_t i = 0; i < one.size(); ++i) check_identical(one[i], two[i]);
  }
  auto ints = [] {
    td::manual_seed(99);
    return td::randint(-5, 1000, {300007});
  };
  check_identical(with_threads(1, ints), with_threads(2, ints));
}

TEST_CASE("manual_seed repeats a stream and consecutive draws continue it", "[cpu]") {
  td::manual_seed(7);
  td::Tensor a = td::rand({5});
  td::Tensor b = td::rand({5});
  td::manual_seed(7);
  td::Tensor a2 = td::rand({5});
  td::Tensor b2 = td::rand({5});
  check_identical(a, a2);
  check_identical(b, b2);
  CHECK(values(a) != values(b));
  // Element i of a float draw is word i of the stream: a longer draw starts with a shorter one.
  td::manual_seed(7);
  td::Tensor longer = td::rand({9});
  CHECK(values(longer.narrow(0, 0, 5)) == values(a));
  CHECK(td::default_generator().initial_seed() == 7);
}

TEST_CASE("a random fill of a non-contiguous view follows its logical order", "[cpu]") {
  td::manual_seed(3);
  td::Tensor dense = td::rand({4, 3});
  td::manual_seed(3);
  td::Tensor storage = td::zeros({3, 4});
  td::Tensor view = storage.t();
  td::uniform_(view, 0, 1);
  CHECK(values(view) == values(dense));
}

TEST_CASE("uniform, normal, randint and bernoulli have the right moments", "[cpu]") {
  td::testing::reseed(1);
  const int64_t n = 1000000;
  // Bounds are 6 standard errors of the estimate: a correct generator fails with p < 1e-8.
  td::Tensor u = td::rand({n}, td::kFloat64);
  CHECK(td::amin(u).item<double>() >= 0);
  CHECK(td::amax(u).item<double>() < 1);
  CHECK(std::abs(u.mean().item<double>() - 0.5) < 6 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(u.var().item<double>() - 1.0 / 12) < 6 * std::sqrt(1.0 / 180 / n));
  td::Tensor g = td::randn({n});
  CHECK(std::abs(g.mean().item<double>()) < 6 * std::sqrt(1.0 / n));
  CHECK(std::abs(g.var().item<double>() - 1) < 6 * std::sqrt(2.0 / n));
  double tail = (g.abs() > 3).sum().item<double>() / n;  // P(|z| > 3) = 0.0026998
  CHECK(std::abs(tail - 0.0026998) < 6 * std::sqrt(0.0027 / n));
  td::Tensor r = td::randint(3, 9, {n});
  CHECK(r.dtype() == td::kInt64);
  CHECK(td::amin(r).item<int64_t>() == 3);
  CHECK(td::amax(r).item<int64_t>() == 8);
  CHECK(std::abs(r.to(td::kFloat64).mean().item<double>() - 5.5) < 6 * std::sqrt(35.0 / 12 / n));
  td::Tensor b = td::bernoulli(td::full({n}, 0.25));
  CHECK(b.dtype() == td::kFloat32);
  CHECK(std::abs(b.mean().item<double>() - 0.25) < 6 * std::sqrt(0.25 * 0.75 / n));
  td::Tensor scaled = td::empty({n}, td::kFloat64);
  td::normal_(scaled, 5, 2);
  CHECK(std::abs(scaled.mean().item<double>() - 5) < 6 * 2 * std::sqrt(1.0 / n));
  CHECK(std::abs(scaled.std().item<double>() - 2) < 6 * 2 * std::sqrt(0.5 / n));
}

TEST_CASE("bernoulli with p of 0 and 1 is exact", "[cpu]") {
  td::Tensor p = td::tensor({0.0, 1.0, 0.0, 1.0});
  CHECK(values(td::bernoulli(p)) == std::vector<double>{0, 1, 0, 1});
  td::Tensor like = td::zeros({1000}, td::kInt64);
  CHECK(td::bernoulli(like, 1.0).sum().item<int64_t>() == 1000);
}

TEST_CASE("random factories reject bad arguments without drawing", "[cpu]") {
  td::manual_seed(11);
  td::PhiloxState before = td::default_generator().state();
  check_error([] { td::randint(5, 5, {3}); }, {"randint", "low < high"});
  // As PyTorch 2.15: the values drawn must fit the dtype; at its edges they do.
  check_error([] { td::randint(0, 300, {3}, td::kUInt8); }, {"randint: high - 1 = 299 is out of bounds for uint8"});
  check_error([] { td::randint(-1, 3, {3}, td::kUInt8); }, {"randint: low=-1 is out of bounds for uint8"});
  check_error([] { td::randint(0, 3, {3}, td::kBool); }, {"randint", "bool"});
  check_error([] { td::randint(0, (int64_t{1} << 31) + 1, {3}, td::kInt32); }, {"randint", "int32"});
  check_error([] { td::randint(0, 70000, {3}, td::kFloat16); }, {"randint", "float16"});
  check_error([] { td::bernoulli(td::full({3}, 1.5)); }, {"bernoulli", "[0, 1]"});
  check_error([] { td::rand({2}, td::kInt64); }, {"uniform_", "floating", "int64"});
  td::Tensor t = td::zeros({2});
  check_error([&] { td::normal_(t, 0, -1); }, {"normal_", "non-negative"});
  check_error([&] { td::uniform_(t, 2, 1); }, {"uniform_", "from <= to"});
  CHECK(td::default_generator().state().offset == before.offset);
  // At the dtypes' edges the values fit.
  CHECK(td::randint(0, 256, {3}, td::kUInt8).dtype() == td::kUInt8);
  CHECK(td::randint(0, 2, {3}, td::kBool).dtype() == td::kBool);
  CHECK(td::randint(0, int64_t{1} << 31, {3}, td::kInt32).dtype() == td::kInt32);
}

TEST_CASE("each device has its own generator: draws on one do not move another's stream", "[cpu]") {
  const td::Device cpu0("cpu:0"), cpu1("cpu:1"), cpu2("cpu:2");
  td::manual_seed(21);
  td::Tensor first = td::rand({6});
  td::manual_seed(21);
  td::Tensor on_cpu1 = td::rand({6}, cpu1);
  td::Tensor on_cpu0 = td::rand({6});  // cpu:0's stream is where the seed left it
  check_identical(on_cpu0, first);
  CHECK(on_cpu1.device() == cpu1);
  // Another index, another key: replicas on cpu:0 and cpu:1 do not draw the same numbers.
  CHECK(values(on_cpu1) != values(first));
  CHECK(td::default_generator(cpu1).initial_seed() == td::device_seed(21, cpu1));
  CHECK(td::default_generator(cpu0).initial_seed() == 21);
  CHECK(td::device_seed(21, cpu0) == 21);
  CHECK(td::device_seed(21, cpu1) != td::device_seed(21, cpu2));
  CHECK(td::device_seed(21, cpu1) != td::device_seed(22, cpu1));
  // manual_seed restarts every device's stream, in any order of draws afterwards.
  td::manual_seed(21);
  td::Tensor again_cpu0 = td::rand({6});
  td::Tensor again_cpu1 = td::rand({6}, cpu1);
  check_identical(again_cpu0, first);
  check_identical(again_cpu1.cpu(), on_cpu1.cpu());
  // A generator first used after the seed is seeded from it too.
  td::manual_seed(22);
  td::Tensor fresh = td::randn({4}, cpu2);
  td::manual_seed(22);
  check_identical(td::randn({4}, cpu2).cpu(), fresh.cpu());
  // What a checkpoint saves: every generator used, with its offset.
  bool listed = false;
  for (const auto& [device, state] : td::generator_states()) {
    if (device != cpu2) continue;
    listed = true;
    CHECK(state.seed == td::device_seed(22, cpu2));
    CHECK(state.offset == 1);  // 4 normals: 2 pairs of 2 words, one block of 4
  }
  CHECK(listed);
}

TEST_CASE("DiscardRandomDraws keeps this thread's draws out of every stream, and not other threads'", "[cpu]") {
  const td::Device cpu5("cpu:5");
  td::manual_seed(23);
  td::rand({3});
  const td::PhiloxState before = td::default_generator().state();
  {
    td::DiscardRandomDraws discard;
    td::rand({1000});
    td::rand({10}, cpu5);
    CHECK(td::default_generator().state().offset != before.offset);  // the scratch generator's
    // Another thread draws from the real streams meanwhile, and keeps what it drew.
    std::thread other([] { td::rand({8}); });
    other.join();
  }
  CHECK(td::default_generator().state().seed == before.seed);
  CHECK(td::default_generator().state().offset == before.offset + 2);  // the other thread's 8 words
  for (const auto& [device, state] : td::generator_states()) CHECK(device != cpu5);  // never made
}

TEST_CASE("every device's key differs, cpu:0's is the seed, and cuda:0's is not cpu:0's", "[cpu]") {
  // cuda:i and cpu:i run the same Philox: with one key, noise drawn on the CPU would be the mask
  // of the GPU's dropout.
  const uint64_t seed = 99;
  std::set<uint64_t> keys;
  for (int i = 0; i < 4; ++i) {
    keys.insert(td::device_seed(seed, td::Device(td::kCPU, i)));
    keys.insert(td::device_seed(seed, td::Device(td::kCUDA, i)));
  }
  CHECK(keys.size() == 8);
  CHECK(td::device_seed(seed, td::Device(td::kCPU, 0)) == seed);
  CHECK(td::device_seed(seed, td::Device(td::kCUDA, 0)) != seed);
}
