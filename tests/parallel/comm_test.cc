// The collectives on CPU devices against naive references: each output read back element by
// element and compared with sums and slices computed here, over awkward shapes and layouts.
#include "tests/testing.h"

namespace td = tandem;
namespace comm = td::parallel::comm;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

// What a sum of a few random values near 1 may be off by, beside rtol_for: 16-bit sums round in
// their own dtype; float32 and float64 only by their last bits; integers not at all.
double sum_atol(td::DType dtype) {
  if (td::is_16bit_float(dtype)) return 1e-2;
  if (dtype == td::kFloat32) return 1e-6;
  return dtype == td::kFloat64 ? 1e-14 : 0;
}

std::vector<td::Device> cpus(int n) {
  std::vector<td::Device> devices;
  for (int i = 0; i < n; ++i) devices.emplace_back(td::kCPU, i);
  return devices;
}

// A random tensor on `device` (contiguous there: to() copies it so).
td::Tensor on(td::Device device, const td::Shape& shape, td::DType dtype, td::testing::Layout layout) {
  return td::testing::random_tensor(shape, dtype, layout).to(device);
}

// A random tensor on `device`, stored there in `layout`.
td::Tensor in_layout(td::Device device, const td::Shape& shape, td::DType dtype, td::testing::Layout layout) {
  return td::testing::same_layout_on(td::testing::random_tensor(shape, dtype, layout), device);
}

}  // namespace

TEST_CASE("broadcast gives every device a copy, and the source device the tensor itself", "[cpu]") {
  td::testing::reseed(1);
  for (auto layout : td::testing::all_layouts()) {
    td::Tensor t = td::testing::random_tensor({7, 33}, td::kFloat32, layout).to(td::Device("cpu:1"));
    auto out = comm::broadcast(t, cpus(3));
    REQUIRE(out.size() == 3);
    for (int d = 0; d < 3; ++d) {
      CHECK(out[d].device() == td::Device(td::kCPU, d));
      td::testing::check_equal(out[d], values(t), td::testing::layout_name(layout));
    }
    CHECK(out[1].is_same(t));
    CHECK_FALSE(out[0].is_alias_of(t));
  }
}

TEST_CASE("broadcast_coalesced copies many tensors of mixed dtypes to each device", "[cpu]") {
  td::testing::reseed(2);
  std::vector<td::Tensor> tensors = {on(td::Device("cpu:0"), {1}, td::kFloat64, td::testing::Layout::Contiguous),
                                     on(td::Device("cpu:0"), {5, 3}, td::kFloat32, td::testing::Layout::Permuted),
                                     on(td::Device("cpu:0"), {4}, td::kInt64, td::testing::Layout::Strided),
                                     td::zeros({0, 3})};
  // On CPU devices nothing is staged, so even a buffer smaller than one tensor gives the result.
  auto out = comm::broadcast_coalesced(tensors, cpus(4), 8);
  for (int d = 0; d < 4; ++d) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      CHECK(out[d][i].device() == td::Device(td::kCPU, d));
      CHECK(out[d][i].dtype() == tensors[i].dtype());
      CHECK(out[d][i].sizes() == tensors[i].sizes());
      td::testing::check_equal(out[d][i], values(tensors[i]));
      if (d == 0) CHECK(out[d][i].is_same(tensors[i]));  // the source device gets the tensor itself
      if (d != 0) CHECK_FALSE(out[d][i].is_alias_of(tensors[i]));
    }
  }
}

TEST_CASE("scatter splits into chunks evenly or by chunk_sizes, along any dim", "[cpu]") {
  td::testing::reseed(3);
  CHECK(comm::even_chunk_sizes(10, 3) == std::vector<int64_t>{4, 3, 3});
  CHECK(comm::even_chunk_sizes(2, 3) == std::vector<int64_t>{1, 1});
  CHECK(comm::even_chunk_sizes(0, 3) == std::vector<int64_t>{0});
  for (auto layout : td::testing::all_layouts()) {
    td::Tensor t = td::testing::random_tensor({10, 6}, td::kFloat64, layout);
    auto even = comm::scatter(t, cpus(3));
    REQUIRE(even.size() == 3);
    std::vector<int64_t> rows = {4, 3, 3};
    int64_t start = 0;
    for (int d = 0; d < 3; ++d) {
      CHECK(even[d].device() == td::Device(td::kCPU, d));
      td::testing::check_equal(even[d], values(t.narrow(0, start, rows[d])));
      start += rows[d];
    }
    CHECK(even[0].is_alias_of(t));  // already on cpu:0: a view, not a copy

    auto sized = comm::scatter(t, cpus(3), std::vector<int64_t>{2, 4, 4});
    td::testing::check_equal(sized[1], values(t.narrow(0, 2, 4)));
    auto by_column = comm::scatter(t, cpus(2), std::nullopt, -1);
    td::testing::check_equal(by_column[1], values(t.narrow(1, 3, 3)));
  }
  auto few = comm::scatter(td::ones({2, 5}), cpus(3));
  CHECK(few.size() == 2);  // 2 rows over 3 devices: 2 chunks
}

TEST_CASE("gather joins tensors from several devices on the destination", "[cpu]") {
  td::testing::reseed(4);
  std::vector<td::Tensor> parts = {on(td::Device("cpu:2"), {3, 7}, td::kFloat32, td::testing::Layout::Permuted),
                                   on(td::Device("cpu:0"), {1, 7}, td::kFloat32, td::testing::Layout::Contiguous),
                                   on(td::Device("cpu:1"), {0, 7}, td::kFloat32, td::testing::Layout::Contiguous),
                                   on(td::Device("cpu:3"), {2, 7}, td::kFloat32, td::testing::Layout::Offset)};
  td::Tensor out = comm::gather(parts, 0, td::Device("cpu:1"));
  CHECK(out.device() == td::Device("cpu:1"));
  CHECK(out.sizes() == td::Shape{6, 7});
  std::vector<double> expected;
  for (const auto& p : parts) {
    auto v = values(p);
    expected.insert(expected.end(), v.begin(), v.end());
  }
  td::testing::check_equal(out, expected);
  td::Tensor wide = comm::gather({td::ones({2, 1}), td::zeros({2, 3}).to(td::Device("cpu:1"))}, 1, td::Device("cpu:0"));
  td::testing::check_equal(wide, {1, 0, 0, 0, 1, 0, 0, 0});
}

TEST_CASE("reduce_add, reduce_add_coalesced and all_reduce sum across devices", "[cpu]") {
  td::testing::reseed(5);
  for (td::DType dtype : {td::kFloat32, td::kFloat64, td::kFloat16, td::kBFloat16, td::kInt64, td::kInt32}) {
    for (int64_t n : {1, 7, 33, 100003}) {
      std::vector<td::Tensor> parts;
      for (int d = 0; d < 3; ++d) {
        auto layout = td::testing::all_layouts()[static_cast<size_t>(d) % 4];
        parts.push_back(on(td::Device(td::kCPU, d), {n}, dtype, layout == td::testing::Layout::Permuted
                                                                   ? td::testing::Layout::Strided
                                                                   : layout));
      }
      std::vector<double> expected(static_cast<size_t>(n), 0.0);
      for (const auto& p : parts) {
        auto v = values(p);
        for (size_t i = 0; i < v.size(); ++i) expected[i] += v[i];
      }
      td::Tensor sum = comm::reduce_add(parts, td::Device("cpu:2"));
      CHECK(sum.device() == td::Device("cpu:2"));
      CHECK(sum.dtype() == dtype);
      // Half and bfloat16 add in float32 and round once.
      check_close(sum, expected, td::testing::rtol_for(dtype), sum_atol(dtype));
    }
  }
  std::vector<std::vector<td::Tensor>> per_device;
  for (int d = 0; d < 2; ++d) {
    per_device.push_back({td::full({2, 2}, d + 1.0).to(td::Device(td::kCPU, d)),
                          td::full({3}, 10.0 * (d + 1), td::kFloat64).to(td::Device(td::kCPU, d))});
  }
  auto sums = comm::reduce_add_coalesced(per_device, td::Device("cpu:0"));
  td::testing::check_equal(sums[0], {3, 3, 3, 3});
  td::testing::check_equal(sums[1], {30, 30, 30});

  std::vector<td::Tensor> all = {td::full({4}, 1.0), td::full({4}, 2.0).to(td::Device("cpu:1")),
                                 td::full({4}, 4.0).to(td::Device("cpu:2"))};
  uint32_t version = all[1].version();
  comm::all_reduce(all);
  for (const auto& t : all) td::testing::check_equal(t, {7, 7, 7, 7});
  CHECK(all[1].device() == td::Device("cpu:1"));
  CHECK(all[1].version() > version);  // an in-place write
}

TEST_CASE("all_gather and reduce_scatter give each device its share", "[cpu]") {
  td::testing::reseed(6);
  std::vector<td::Tensor> parts;
  for (int d = 0; d < 3; ++d) parts.push_back(on(td::Device(td::kCPU, d), {6, 2}, td::kFloat64, td::testing::Layout::Permuted));
  auto gathered = comm::all_gather(parts, 0);
  std::vector<double> joined;
  for (const auto& p : parts) {
    auto v = values(p);
    joined.insert(joined.end(), v.begin(), v.end());
  }
  for (int d = 0; d < 3; ++d) {
    CHECK(gathered[d].device() == td::Device(td::kCPU, d));
    td::testing::check_equal(gathered[d], joined);
  }
  auto scattered = comm::reduce_scatter(parts, 0);
  td::Tensor total = parts[0].cpu() + parts[1].to(td::Device("cpu:0")) + parts[2].to(td::Device("cpu:0"));
  for (int d = 0; d < 3; ++d) {
    CHECK(scattered[d].device() == td::Device(td::kCPU, d));
    CHECK(scattered[d].sizes() == td::Shape{2, 2});
    check_close(scattered[d], values(total.narrow(0, 2 * d, 2)), 1e-12, 1e-12);
  }
}

TEST_CASE("buffer groups hold tensors of one dtype up to buffer_size bytes; a larger tensor has its own", "[cpu]") {
  std::vector<td::Tensor> tensors = {td::zeros({100}), td::zeros({100}, td::kFloat64), td::zeros({100}),
                                     td::zeros({500}), td::zeros({25}), td::zeros({0}, td::kInt64)};
  // float32 400 B, float64 800 B, float32 400 B, float32 2000 B, float32 100 B, int64 0 B.
  auto groups = comm::detail::buffer_groups(tensors, 1000);
  using Groups = std::vector<std::vector<size_t>>;
  CHECK(groups == Groups{{0, 2}, {1}, {3}, {4}, {5}});
  CHECK(comm::detail::buffer_groups(tensors, 1 << 20) == Groups{{0, 2, 3, 4}, {1}, {5}});
  CHECK(comm::detail::buffer_groups({}, 1000).empty());
}

TEST_CASE("the buffered broadcast (the GPUs' form) gives every device exact copies through small buffers", "[cpu]") {
  td::testing::reseed(41);
  const td::Device source("cpu:1");
  std::vector<td::Tensor> tensors = {in_layout(source, {7, 5}, td::kFloat32, td::testing::Layout::Permuted),
                                     in_layout(source, {33}, td::kFloat64, td::testing::Layout::Strided),
                                     in_layout(source, {3, 4}, td::kFloat32, td::testing::Layout::Offset),
                                     in_layout(source, {0, 3}, td::kFloat32, td::testing::Layout::Contiguous),
                                     in_layout(source, {1000}, td::kInt64, td::testing::Layout::Contiguous),
                                     in_layout(source, {2, 2}, td::kBFloat16, td::testing::Layout::Contiguous)};
  REQUIRE_FALSE(tensors[1].is_contiguous());
  const std::vector<double> first_values = values(tensors[0]);
  const uint32_t first_version = tensors[0].version();
  for (int64_t buffer_size : {int64_t{1}, int64_t{200}, comm::kDefaultBufferSize}) {
    std::vector<std::vector<td::Tensor>> outputs;
    for (int d : {0, 1, 2}) {
      std::vector<td::Tensor> list;
      for (const td::Tensor& t : tensors) {
        // On the source device, the first output is the tensor itself and the others separate tensors.
        const bool itself = d == 1 && &t == &tensors[0];
        list.push_back(itself ? t : td::zeros(t.sizes(), td::TensorOptions(t.dtype()).device(td::Device(td::kCPU, d))));
      }
      outputs.push_back(list);
    }
    std::vector<uint32_t> versions;
    for (const td::Tensor& o : outputs[2]) versions.push_back(o.version());
    comm::detail::broadcast_coalesced_into_buffered(tensors, outputs, buffer_size);
    for (size_t d = 0; d < outputs.size(); ++d) {
      for (size_t i = 0; i < tensors.size(); ++i) {
        CHECK(outputs[d][i].device() == td::Device(td::kCPU, static_cast<int>(d)));
        td::testing::check_equal(outputs[d][i], values(tensors[i]), "buffer " + std::to_string(buffer_size));
      }
    }
    for (size_t i = 0; i < tensors.size(); ++i) CHECK(outputs[2][i].version() > versions[i]);  // written in place
    CHECK(tensors[0].version() == first_version);  // the source's own output is left alone
    CHECK(values(tensors[0]) == first_values);
  }
}

TEST_CASE("the buffered reduce (the GPUs' form) gives the same sums, bit for bit, as one tensor at a time", "[cpu]") {
  td::testing::reseed(42);
  std::vector<std::vector<td::Tensor>> per_device;
  for (int d = 0; d < 3; ++d) {
    const td::Device device(td::kCPU, d);
    per_device.push_back({in_layout(device, {7, 33}, td::kFloat32, td::testing::all_layouts()[static_cast<size_t>(d) + 1]),
                          in_layout(device, {1}, td::kFloat64, td::testing::Layout::Contiguous),
                          in_layout(device, {0}, td::kFloat32, td::testing::Layout::Contiguous),
                          in_layout(device, {5, 2}, td::kFloat16, td::testing::Layout::Strided),
                          in_layout(device, {1001}, td::kFloat32, td::testing::Layout::Offset),
                          in_layout(device, {6}, td::kInt32, td::testing::Layout::Contiguous)});
  }
  REQUIRE_FALSE(per_device[0][0].is_contiguous());  // permuted, read through its strides
  REQUIRE_FALSE(per_device[1][0].is_contiguous());  // strided
  for (int64_t buffer_size : {int64_t{1}, int64_t{1000}, comm::kDefaultBufferSize}) {
    for (const td::Device destination : {td::Device("cpu:0"), td::Device("cpu:2"), td::Device("cpu:3")}) {
      auto expected = comm::reduce_add_coalesced(per_device, destination);  // CPU devices: one tensor at a time
      auto sums = comm::detail::reduce_add_coalesced_buffered(per_device, destination, buffer_size);
      REQUIRE(sums.size() == expected.size());
      for (size_t i = 0; i < sums.size(); ++i) {
        INFO("tensor " << i << ", buffer " << buffer_size << ", on " << destination);
        CHECK(sums[i].device() == destination);
        CHECK(sums[i].dtype() == expected[i].dtype());
        CHECK(sums[i].sizes() == expected[i].sizes());
        CHECK(td::testing::values(sums[i]) == td::testing::values(expected[i]));
      }
    }
  }
  // Both are also the sums computed here, element by element (16-bit floats add in float32 and
  // round once).
  const auto sums = comm::reduce_add_coalesced(per_device, td::Device("cpu:1"));
  for (size_t i = 0; i < sums.size(); ++i) {
    const td::DType dtype = per_device[0][i].dtype();
    INFO("tensor " << i << ", " << td::dtype_name(dtype));
    std::vector<double> expected(static_cast<size_t>(per_device[0][i].numel()), 0.0);
    for (const auto& tensors : per_device) {
      const std::vector<double> v = values(tensors[i]);
      for (size_t k = 0; k < v.size(); ++k) expected[k] += v[k];
    }
    check_close(sums[i], expected, td::testing::rtol_for(dtype), sum_atol(dtype));
  }
}

TEST_CASE("comm_stats counts calls and the bytes that crossed devices", "[cpu]") {
  comm::reset_comm_stats();
  td::Tensor t = td::ones({256});  // 1 KiB
  comm::broadcast(t, cpus(3));     // two copies leave cpu:0
  comm::reduce_add({t, t.to(td::Device("cpu:1"))}, td::Device("cpu:0"));
  auto stats = comm::comm_stats();
  CHECK(stats.at("broadcast").calls == 1);
  CHECK(stats.at("broadcast").bytes == 2 * 1024);
  CHECK(stats.at("reduce_add").bytes == 1024);
  CHECK(stats.at("broadcast").seconds > 0);
  CHECK(stats.at("reduce_add").seconds > 0);
  comm::reset_comm_stats();
  CHECK(comm::comm_stats().empty());

  // Over three devices, 96 bytes each: all_reduce brings two tensors to cpu:0 and the sum back
  // to both; all_gather sends each tensor to the two other devices; reduce_scatter sends each
  // device's third (32 bytes) of the two other tensors.
  std::vector<td::Tensor> parts;
  for (const td::Device& d : cpus(3)) parts.push_back(td::ones({6, 4}).to(d));
  comm::all_reduce(parts);
  comm::all_gather(parts, 0);
  comm::reduce_scatter(parts, 0);
  stats = comm::comm_stats();
  CHECK(stats.size() == 3);
  for (const char* name : {"all_reduce", "all_gather", "reduce_scatter"}) {
    CHECK(stats.at(name).calls == 1);
    CHECK(stats.at(name).nccl_calls == 0);  // NCCL serves GPUs only
  }
  CHECK(stats.at("all_reduce").bytes == 4 * 96);
  CHECK(stats.at("all_gather").bytes == 6 * 96);
  CHECK(stats.at("reduce_scatter").bytes == 6 * 32);
}

TEST_CASE("the collectives reject bad input with the facts, leaving the inputs unchanged", "[cpu]") {
  td::Tensor a = td::ones({4, 3}), b = td::ones({4, 2}).to(td::Device("cpu:1"));
  td::testing::Snapshot before(a);
  check_error([&] { comm::reduce_add({a, b}); }, {"reduce_add", "tensor 1 on cpu:1", "[4, 2]", "[4, 3]"});
  check_error([&] { comm::reduce_add({a, a}); }, {"reduce_add", "both on cpu:0"});
  check_error([&] { comm::reduce_add({a, a.to(td::kFloat64).to(td::Device("cpu:1"))}); }, {"dtype", "float64"});
  check_error([&] { comm::broadcast(a, {td::Device("cpu:0"), td::Device("cpu:0")}); }, {"broadcast", "cpu:0", "twice"});
  check_error([&] { comm::broadcast(a, {}); }, {"broadcast", "at least one device"});
  check_error([&] { comm::scatter(a, cpus(2), std::vector<int64_t>{1, 2}); }, {"scatter", "add up to 3", "4 along dim 0"});
  check_error([&] { comm::scatter(a, cpus(2), std::vector<int64_t>{5, -1}); }, {"scatter", "negative"});
  check_error([&] { comm::scatter(a, cpus(2), std::vector<int64_t>{4}); }, {"scatter", "1 chunk sizes for 2 devices"});
  check_error([&] { comm::scatter(a, cpus(2), std::nullopt, 2); }, {"scatter", "dim"});
  check_error([&] { comm::scatter(td::ones({}), cpus(2)); }, {"scatter", "0-dim"});
  check_error([&] { comm::gather({a, b}, 0, td::Device("cpu:0")); }, {"gather", "tensor 1", "[4, 2]", "only along dim 0"});
  check_error([&] { comm::gather({}, 0, td::Device("cpu:0")); }, {"gather", "at least one tensor"});
  check_error([&] { comm::reduce_scatter({a, a.to(td::Device("cpu:1"))}, 1); }, {"reduce_scatter", "3", "2 chunks"});
  td::Tensor c = a.to(td::kFloat64).to(td::Device("cpu:1"));
  td::testing::Snapshot c_before(c);
  check_error([&] { comm::all_reduce({a, c}); }, {"all_reduce", "dtype"});
  before.check_unchanged(a);
  c_before.check_unchanged(c);
}

TEST_CASE("the in-place and coalesced broadcasts reject bad outputs and write none of them", "[cpu]") {
  const td::Device cpu1("cpu:1"), cpu2("cpu:2");
  td::Tensor a = td::testing::random_tensor({4, 3}, td::kFloat32);
  td::Tensor out1 = td::zeros({4, 3}).to(cpu1), out2 = td::zeros({4, 3}).to(cpu2);
  td::testing::Snapshot one(out1), two(out2);
  check_error([&] { comm::broadcast_into(td::Tensor(), {out1}); }, {"broadcast_into: the tensor is undefined"});
  check_error([&] { comm::broadcast_into(a, {out1, td::zeros({3, 4}).to(cpu2)}); },
              {"broadcast_into: output 1 on cpu:2", "[3, 4]", "[4, 3]"});
  check_error([&] { comm::broadcast_into(a, {out1, td::zeros({4, 3}, td::kFloat64).to(cpu2)}); },
              {"broadcast_into: output 1", "float64"});
  check_error([&] { comm::broadcast_into(a, {out1, out1}); }, {"broadcast_into", "cpu:1"});
  check_error([&] { comm::broadcast_coalesced_into({a}, {{out1}, {out2}}, 0); },
              {"broadcast_coalesced: buffer_size must be positive, got 0"});
  check_error([&] { comm::broadcast_coalesced_into({a}, {{out1}, {out2, out2}}); },
              {"broadcast_coalesced: 2 outputs in list 1 for 1 tensors"});
  check_error([&] { comm::broadcast_coalesced_into({a, a}, {{out1, out2}}); },
              {"broadcast_coalesced: the outputs in list 0 are on several devices (cpu:1, cpu:2)"});
  check_error([&] { comm::broadcast_coalesced_into({a}, {{td::zeros({4}).to(cpu1)}}); },
              {"broadcast_coalesced: output 0 in list 0", "[4]", "[4, 3]"});
  check_error([&] { comm::broadcast_coalesced({a, a.to(cpu1)}, {cpu1, cpu2}); },
              {"broadcast_coalesced: all tensors must be on one device"});
  check_error([&] { comm::broadcast_coalesced({a}, {cpu1, cpu2}, -1); }, {"buffer_size must be positive, got -1"});
  one.check_unchanged(out1);
  two.check_unchanged(out2);
  // And the same calls, corrected, write every output: into non-contiguous outputs too.
  comm::broadcast_coalesced_into({a}, {{out1}, {out2}});
  CHECK(values(out1) == values(a));
  CHECK(values(out2) == values(a));
  td::Tensor columns = td::zeros({3, 4}).to(cpu2).t();
  comm::broadcast_into(a, {out1.zero_(), columns});
  CHECK(values(out1) == values(a));
  CHECK(values(columns) == values(a));
}

TEST_CASE("reduce_add_coalesced rejects lists that do not match and leaves its inputs alone", "[cpu]") {
  const td::Device cpu1("cpu:1");
  td::Tensor a = td::ones({3}), b = td::ones({3}).to(cpu1);
  td::testing::Snapshot before(a);
  check_error([] { comm::reduce_add_coalesced({}); }, {"reduce_add_coalesced: expected tensors from at least one device"});
  check_error([&] { comm::reduce_add_coalesced({{a}, {b}}, std::nullopt, 0); }, {"buffer_size must be positive, got 0"});
  check_error([&] { comm::reduce_add_coalesced({{a, a}, {b}}); },
              {"reduce_add_coalesced: device list 1 has 1 tensors but list 0 has 2"});
  check_error([&] { comm::reduce_add_coalesced({{a}, {td::ones({4}).to(cpu1)}}); }, {"reduce_add_coalesced", "[4]", "[3]"});
  before.check_unchanged(a);
}

TEST_CASE("all_gather, reduce_scatter and all_reduce along any dim, over random non-contiguous tensors", "[cpu]") {
  td::testing::reseed(7);
  for (td::DType dtype : {td::kFloat64, td::kFloat32, td::kBFloat16, td::kInt64}) {
    for (int64_t dim : {1, -1, 0}) {
      INFO(td::dtype_name(dtype) << " dim " << dim);
      std::vector<td::Tensor> parts;
      for (int d = 0; d < 3; ++d) {
        auto layout = td::testing::all_layouts()[static_cast<size_t>(d + 1) % 4];
        parts.push_back(in_layout(td::Device(td::kCPU, d), {6, 9, 3}, dtype, layout));
      }
      // References from cpu:0 copies, by slices and sums written out here.
      std::vector<td::Tensor> local;
      for (const auto& p : parts) local.push_back(p.cpu());
      const int64_t d = dim < 0 ? dim + 3 : dim;
      auto gathered = comm::all_gather(parts, dim);
      for (int r = 0; r < 3; ++r) {
        CHECK(gathered[r].device() == td::Device(td::kCPU, r));
        REQUIRE(gathered[r].size(d) == 3 * parts[0].size(d));
        for (int k = 0; k < 3; ++k) {
          const int64_t n = parts[0].size(d);
          td::testing::check_equal(gathered[r].narrow(d, k * n, n), values(local[k]), "all_gather");
        }
      }
      td::Tensor total = (local[0].to(td::kFloat64) + local[1].to(td::kFloat64) + local[2].to(td::kFloat64));
      const double tol = td::testing::rtol_for(dtype);
      auto scattered = comm::reduce_scatter(parts, dim);
      for (int r = 0; r < 3; ++r) {
        const int64_t n = total.size(d) / 3;
        CHECK(scattered[r].device() == td::Device(td::kCPU, r));
        CHECK(scattered[r].size(d) == n);
        check_close(scattered[r], values(total.narrow(d, r * n, n)), tol, tol, "reduce_scatter");
      }
      std::vector<td::Tensor> all = parts;
      comm::all_reduce(all);
      for (int r = 0; r < 3; ++r) {
        CHECK(all[r].is_same(parts[r]));  // in place, in each tensor's own layout
        check_close(all[r], values(total), tol, tol, "all_reduce");
      }
    }
  }
}

TEST_CASE("all_gather, gather, reduce_add, reduce_scatter and all_reduce reject bad lists with the facts", "[cpu]") {
  const td::Device cpu0("cpu:0"), cpu1("cpu:1");
  td::Tensor a = td::ones({4, 3}), b = td::ones({4, 2}).to(cpu1), wide = a.to(td::kFloat64).to(cpu1);
  td::Tensor scalar = td::ones({}), other_scalar = td::ones({}).to(cpu1);
  td::Tensor expanded = td::ones({1}).expand({3}), three = td::ones({3}).to(cpu1);
  td::testing::Snapshot sa(a), sb(b), sw(wide), se(expanded), st(three);
  check_error([&] { comm::all_gather({}); }, {"all_gather: expected at least one tensor"});
  check_error([&] { comm::all_gather({a, b}); }, {"all_gather: tensor 1 on cpu:1", "[4, 2]", "[4, 3]", "dim 0"});
  check_error([&] { comm::all_gather({a, a}); }, {"all_gather: device cpu:0 is listed twice"});
  check_error([&] { comm::all_gather({scalar, other_scalar}); }, {"all_gather: 0-dim tensors"});
  check_error([&] { comm::all_gather({a, wide}); }, {"all_gather: tensor 1 on cpu:1 has dtype float64", "float32"});
  check_error([&] { comm::gather({scalar, other_scalar}, 0, cpu0); }, {"gather: 0-dim tensors"});
  check_error([&] { comm::gather({a, wide}, 0, cpu0); }, {"gather: tensor 1 on cpu:1 has dtype float64"});
  check_error([&] { comm::reduce_add({a > 0, (a > 0).to(cpu1)}); }, {"reduce_add: bool tensors cannot be added"});
  check_error([&] { comm::reduce_scatter({scalar, other_scalar}); }, {"reduce_scatter: 0-dim tensors"});
  check_error([&] { comm::reduce_scatter({a, a}); }, {"reduce_scatter: tensors 0 and 1 are both on cpu:0"});
  check_error([&] { comm::reduce_scatter({a, b}); }, {"reduce_scatter: tensor 1 on cpu:1", "[4, 2]", "[4, 3]"});
  check_error([&] { comm::all_reduce({}); }, {"all_reduce: expected at least one tensor"});
  check_error([&] { comm::all_reduce({expanded, three}); }, {"all_reduce", "single memory location", "strides [0]"});
  check_error([&] { comm::all_reduce({a, a}); }, {"all_reduce: tensors 0 and 1 are both on cpu:0"});
  check_error([&] { comm::even_chunk_sizes(4, 0); }, {"number of chunks must be at least 1, got 0"});
  sa.check_unchanged(a);
  sb.check_unchanged(b);
  sw.check_unchanged(wide);
  se.check_unchanged(expanded);
  st.check_unchanged(three);
}
