// The differentiable collectives: gradients by finite differences (float64), double backward,
// and each function's backward being its partner (Broadcast <-> ReduceAddCoalesced,
// Scatter <-> Gather), with gradients landing on the right devices.
#include "parallel/replicate.h"
#include "parallel/sync_batchnorm.h"
#include "tests/testing.h"

namespace td = tandem;
namespace par = td::parallel;
using td::autograd::gradcheck;
using td::autograd::gradgradcheck;

namespace {

const td::Device cpu0("cpu:0"), cpu1("cpu:1"), cpu2("cpu:2");

td::Tensor leaf(const td::Shape& shape, td::Device device = cpu0) {
  return td::testing::random_tensor(shape, td::kFloat64).to(device).requires_grad_();
}

}  // namespace

TEST_CASE("Scatter then Gather: gradients by finite differences, once and twice", "[cpu]") {
  td::testing::reseed(11);
  td::Tensor x = leaf({7, 3});
  auto fn = [](const std::vector<td::Tensor>& in) {
    auto chunks = par::Scatter::apply(in[0], {cpu1, cpu0, cpu2}, std::vector<int64_t>{2, 4, 1});
    // Different work per device, so that every chunk's gradient differs.
    std::vector<td::Tensor> worked = {chunks[0] * chunks[0], td::sin(chunks[1]), chunks[2] * 3.0};
    return par::Gather::apply(worked, cpu1).pow(2).sum();
  };
  auto once = gradcheck(fn, {x});
  INFO(once.report);
  CHECK(once);
  auto twice = gradgradcheck(fn, {x});
  INFO(twice.report);
  CHECK(twice);
}

TEST_CASE("Gather of tensors from several devices, along dim 1: gradient back to each device", "[cpu]") {
  td::testing::reseed(12);
  td::Tensor a = leaf({3, 2}, cpu2), b = leaf({3, 4}, cpu0), c = leaf({3, 1}, cpu2);
  auto fn = [](const std::vector<td::Tensor>& in) {
    td::Tensor g = par::Gather::apply(in, cpu1, 1);
    return (g * g * g).sum();
  };
  auto once = gradcheck(fn, {a, b, c});
  INFO(once.report);
  CHECK(once);
  auto twice = gradgradcheck(fn, {a, b, c});
  INFO(twice.report);
  CHECK(twice);
  fn({a, b, c}).backward();
  CHECK(a.grad().device() == cpu2);
  CHECK(b.grad().device() == cpu0);
  td::testing::check_close(a.grad(), (3 * a * a).detach(), 1e-12, 1e-12);
}

TEST_CASE("Broadcast's gradient is the sum of its copies' gradients; ReduceAddCoalesced's is a broadcast", "[cpu]") {
  td::testing::reseed(13);
  td::Tensor w = leaf({4, 3}), v = leaf({5});
  auto fn = [](const std::vector<td::Tensor>& in) {
    auto copies = par::Broadcast::apply(in, {cpu0, cpu1, cpu2});
    td::Tensor total = td::zeros({}, td::kFloat64);
    for (int d = 0; d < 3; ++d) {
      // Each device uses its copy differently; the sums travel back to cpu:0.
      td::Tensor local = (copies[d][0] * (d + 1.0)).tanh().sum() + (copies[d][1] * copies[d][1]).sum() * (d + 2.0);
      total = total + local.to(cpu0);
    }
    return total;
  };
  auto once = gradcheck(fn, {w, v});
  INFO(once.report);
  CHECK(once);
  auto twice = gradgradcheck(fn, {w, v});
  INFO(twice.report);
  CHECK(twice);

  auto reduce = [](const std::vector<td::Tensor>& in) {
    auto sums = par::ReduceAddCoalesced::apply({{in[0], in[1]}, {in[2], in[3]}}, cpu2);
    return (sums[0] * sums[0]).sum() + sums[1].exp().sum();
  };
  td::Tensor a0 = leaf({2, 2}, cpu0), b0 = leaf({3}, cpu0), a1 = leaf({2, 2}, cpu1), b1 = leaf({3}, cpu1);
  auto reduced = gradcheck(reduce, {a0, b0, a1, b1});
  INFO(reduced.report);
  CHECK(reduced);
  auto reduced_twice = gradgradcheck(reduce, {a0, b0, a1, b1});
  INFO(reduced_twice.report);
  CHECK(reduced_twice);
}

TEST_CASE("the collectives' backward nodes are each other's", "[cpu]") {
  td::Tensor x = leaf({4, 2});
  // The gradient of each function, computed with create_graph, is the output of its partner.
  auto grad_fn_of_gradient = [&](const td::Tensor& out, const td::Tensor& input) {
    td::Tensor g = td::autograd::grad({(out * out).sum().to(cpu0)}, {input}, {}, std::nullopt, true)[0];
    return g.grad_fn() ? g.grad_fn()->name() : std::string("none");
  };
  auto chunks = par::Scatter::apply(x, {cpu0, cpu1});
  CHECK(chunks[1].grad_fn()->name() == "ScatterBackward");
  CHECK(grad_fn_of_gradient(chunks[1], x) == "GatherBackward");
  td::Tensor a = leaf({2, 2}, cpu1), b = leaf({3, 2}, cpu2);
  td::Tensor g = par::Gather::apply({a, b}, cpu0);
  CHECK(g.grad_fn()->name() == "GatherBackward");
  CHECK(grad_fn_of_gradient(g, b) == "ScatterBackward");
  auto copies = par::Broadcast::apply({x}, {cpu0, cpu1});
  CHECK(copies[1][0].grad_fn()->name() == "BroadcastBackward");
  CHECK(grad_fn_of_gradient(copies[1][0], x) == "ReduceAddCoalescedBackward");
  CHECK(copies[0][0].is_alias_of(x));  // on x's own device: x's memory, its own autograd state
  CHECK_FALSE(copies[0][0].is_same(x));
  CHECK(x.is_leaf());
  td::Tensor c = leaf({4, 2}, cpu1);
  auto sums = par::ReduceAddCoalesced::apply({{x}, {c}}, cpu2);
  CHECK(sums[0].grad_fn()->name() == "ReduceAddCoalescedBackward");
  CHECK(grad_fn_of_gradient(sums[0], c) == "BroadcastBackward");
  td::testing::check_error([&] { par::ReduceAddCoalesced::apply({{x, c}, {c, x}}, cpu2); },
                           {"ReduceAddCoalesced", "list 0", "cpu:0", "cpu:1"});
  // With grad mode off nothing is recorded.
  td::NoGradGuard no_grad;
  CHECK_FALSE(par::Scatter::apply(x, {cpu0, cpu1})[1].requires_grad());
  CHECK_FALSE(par::Broadcast::apply({x}, {cpu0, cpu1})[1][0].requires_grad());
}

TEST_CASE("Broadcast, Replicator, sync points and device lists reject bad input with the facts", "[cpu]") {
  td::Tensor a = td::ones({3}).requires_grad_();
  td::testing::check_error([&] { par::Broadcast::apply({a}, {}); }, {"expected at least one device"});
  td::testing::check_error([&] { par::Broadcast::apply({a}, {cpu0, cpu1, cpu1}); }, {"device cpu:1 is listed twice"});
  td::testing::check_error([&] { par::Broadcast::apply({td::Tensor()}, {cpu0, cpu1}); }, {"tensor 0 is undefined"});
  td::testing::check_error([&] { par::Broadcast::apply({a, td::ones({2}).to(cpu1)}, {cpu0, cpu1}); },
              {"all tensors must be on one device", "tensor 1 on cpu:1"});
  // connect: each list holds one output per input, like it, on one device; nothing changes otherwise.
  td::Tensor copy = td::ones({3}).to(cpu1), other = td::ones({3}).to(cpu1);
  td::Tensor connected = td::ones({3}).to(cpu1);
  par::Broadcast::connect({a}, {{connected}});
  REQUIRE(connected.grad_fn() != nullptr);
  td::testing::check_error([&] { par::Broadcast::connect({a}, {{connected}, {copy, other}}); }, {"2 outputs on a device for 1"});
  td::testing::check_error([&] { par::Broadcast::connect({a}, {{connected}, {td::ones({4}).to(cpu1)}}); },
              {"Broadcast: output 0 in list 1 is float32[4] but its input is float32[3]"});
  td::testing::check_error([&] { par::Broadcast::connect({a}, {{connected}, {td::ones({3}, td::kFloat64).to(cpu1)}}); },
              {"Broadcast: output 0 in list 1", "float64"});
  td::testing::check_error([&] { par::Broadcast::connect({a, a}, {{connected, td::ones({3})}}); },
              {"Broadcast: the outputs in list 0 are on several devices (cpu:1, cpu:0)"});
  CHECK(connected.grad_fn() != nullptr);  // the first list kept its node
  auto linear = std::make_shared<td::nn::LinearImpl>(2, 2);
  td::testing::check_error([&] { par::Replicator r(nullptr, {cpu0}); }, {"replicate: the module is null"});
  td::testing::check_error([&] { par::Replicator r(linear, {}); }, {"replicate: expected at least one device"});
  td::testing::check_error([&] { par::Replicator r(linear, {cpu0, cpu0}); }, {"replicate: device cpu:0 is listed twice"});
  par::Replicator replicator(linear, {cpu0, cpu1});
  td::testing::check_error([&] { replicator.refresh({}); }, {"replicate: no replicas asked for"});
  td::testing::check_error([&] { replicator.refresh({2}); }, {"replicate: replica 2 asked of 2 devices"});
  CHECK(replicator.refresh({0, 1}).size() == 2);  // and then it serves
  par::BatchNormSyncPoint point(2);
  td::testing::check_error([&] { point.combine(2, {}); }, {"sync_batchnorm: replica 2 of 2"});
  td::testing::check_error([&] { par::parse_devices(""); }, {"devices: '' names no device"});
  td::testing::check_error([&] { par::parse_devices(","); }, {"devices: ',' has an empty entry"});
  td::testing::check_error([&] { par::parse_devices("cpu:0,cpu:0"); }, {"devices: cpu:0 is listed twice"});
}
