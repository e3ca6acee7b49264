// svd_lowrank and pca_lowrank (autograd/lowrank_ops.cc): exact on matrices of rank at most q, tall, wide
// and batched, with M; close on nearly low-rank ones; q past min(m, n) and q = 0; centring; gradients;
// PyTorch's errors.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

Tensor mT(const Tensor& x) { return x.transpose(-2, -1); }

// A random [*, m, n] float64 matrix of rank r (a product of Gaussian factors).
Tensor low_rank(td::Shape batch, int64_t m, int64_t n, int64_t r) {
  td::Shape left = batch, right = batch;
  left.insert(left.end(), {m, r});
  right.insert(right.end(), {r, n});
  return td::matmul(td::randn(left, td::kFloat64), td::randn(right, td::kFloat64));
}

double max_abs(const Tensor& t) { return td::abs(t).max().item<double>(); }

// U diag(S) V^T equals want to rtol of want's largest entry; U and V have orthonormal columns.
void check_decomposition(const Tensor& u, const Tensor& s, const Tensor& v, const Tensor& want, double rtol,
                         const std::string& what) {
  INFO(what);
  const Tensor rebuilt = td::matmul(u * s.unsqueeze(-2), mT(v));
  CHECK(max_abs(rebuilt - want) <= rtol * max_abs(want));
  const Tensor eye = td::eye(s.size(-1), -1, u.dtype());
  CHECK(max_abs(td::matmul(mT(u), u) - eye) <= rtol * 10);
  CHECK(max_abs(td::matmul(mT(v), v) - eye) <= rtol * 10);
}

}  // namespace

TEST_CASE("svd_lowrank is exact on matrices of rank at most q: tall, wide, batched, with M", "[cpu]") {
  td::testing::reseed(701);
  struct Case {
    td::Shape batch;
    int64_t m, n, rank, q, niter;
  };
  for (const Case& c : std::vector<Case>{{{}, 30, 20, 4, 6, 2}, {{}, 20, 30, 4, 6, 2}, {{2, 3}, 25, 12, 3, 3, 1},
                                         {{}, 15, 15, 5, 5, 0}, {{4}, 9, 40, 2, 4, 3}}) {
    const std::string what =
        "[" + std::to_string(c.m) + ", " + std::to_string(c.n) + "] rank " + std::to_string(c.rank);
    const Tensor a = low_rank(c.batch, c.m, c.n, c.rank);
    auto [u, s, v] = td::svd_lowrank(a, c.q, c.niter);
    td::Shape u_shape = c.batch, s_shape = c.batch, v_shape = c.batch;
    u_shape.insert(u_shape.end(), {c.m, c.q});
    s_shape.push_back(c.q);
    v_shape.insert(v_shape.end(), {c.n, c.q});
    REQUIRE(u.sizes() == u_shape);
    REQUIRE(s.sizes() == s_shape);
    REQUIRE(v.sizes() == v_shape);
    check_decomposition(u, s, v, a, 1e-12, what);
    // The singular values: the exact SVD's leading ones, in descending order, then zeros.
    const Tensor exact = td::linalg::svdvals(a).narrow(-1, 0, c.q);
    check_close(s, values(exact), 0, 1e-12 * max_abs(exact), what + " singular values");
    // With M: the decomposition of A - M, M a row broadcast over A's rows and batch.
    const Tensor row = td::randn({c.n}, td::kFloat64);
    auto [um, sm, vm] = td::svd_lowrank(a + row, c.q, c.niter, row);
    check_decomposition(um, sm, vm, a, 1e-11, what + " with M");
    // M of a whole matrix, shared by the batch.
    const Tensor offset = td::randn({c.m, c.n}, td::kFloat64);
    auto [uo, so, vo] = td::svd_lowrank(a + offset, c.q, c.niter, offset);
    check_decomposition(uo, so, vo, a, 1e-11, what + " with a matrix M");
  }
}

TEST_CASE("svd_lowrank of a nearly low-rank matrix finds its leading singular values; float32 too", "[cpu]") {
  td::testing::reseed(702);
  // Rank 5 with singular values 10, 5, 3, 2, 1, plus noise of 1e-9 per entry.
  const Tensor q_left = std::get<0>(td::linalg::qr(td::randn({40, 5}, td::kFloat64)));
  const Tensor q_right = std::get<0>(td::linalg::qr(td::randn({30, 5}, td::kFloat64)));
  const Tensor sigma = td::tensor({10.0, 5.0, 3.0, 2.0, 1.0}, td::kFloat64);
  const Tensor a = td::matmul(q_left * sigma, mT(q_right)) + td::randn({40, 30}, td::kFloat64) * 1e-9;
  auto [u, s, v] = td::svd_lowrank(a, 8, 2);
  check_close(s.narrow(0, 0, 5), values(td::linalg::svdvals(a).narrow(0, 0, 5)), 1e-10, 0, "leading values");
  CHECK(s[5].item<double>() < 1e-7);
  // float32: the same to float32's rounding.
  auto [u32, s32, v32] = td::svd_lowrank(a.to(td::kFloat32), 5, 2);
  CHECK(s32.dtype() == td::kFloat32);
  check_decomposition(u32.to(td::kFloat64), s32.to(td::kFloat64), v32.to(td::kFloat64), a, 1e-5, "float32");
}

TEST_CASE("svd_lowrank with q past min(m, n) gives min(m, n) columns; q = 0 gives none", "[cpu]") {
  td::testing::reseed(703);
  const Tensor a = td::randn({5, 4}, td::kFloat64);
  auto [u, s, v] = td::svd_lowrank(a, 6);
  REQUIRE(u.sizes() == td::Shape{5, 4});
  REQUIRE(s.sizes() == td::Shape{4});
  REQUIRE(v.sizes() == td::Shape{4, 4});
  check_decomposition(u, s, v, a, 1e-12, "q past min(m, n): the whole SVD");
  auto [u0, s0, v0] = td::svd_lowrank(a, 0);
  CHECK(u0.sizes() == td::Shape{5, 0});
  CHECK(s0.sizes() == td::Shape{0});
  CHECK(v0.sizes() == td::Shape{4, 0});
}

TEST_CASE("pca_lowrank centres each column: the principal directions and variances of the data", "[cpu]") {
  td::testing::reseed(704);
  // 50 samples of 8 features: a mean, then 3 directions of spread.
  const Tensor mean = td::randn({8}, td::kFloat64) * 5;
  const Tensor data = low_rank({}, 50, 8, 3) + mean;
  const Tensor centred = data - data.mean({0}, true);
  auto [u, s, v] = td::pca_lowrank(data, 3);
  check_decomposition(u, s, v, centred, 1e-12, "centred");
  check_close(s, values(td::linalg::svdvals(centred).narrow(0, 0, 3)), 1e-12, 0, "singular values");
  // The directions span the centred data's leading right singular subspace: equal projectors.
  const Tensor exact_v = std::get<2>(td::linalg::svd(centred, false)).narrow(0, 0, 3).t();
  CHECK(max_abs(td::matmul(v, v.t()) - td::matmul(exact_v, exact_v.t())) < 1e-12);
  // The default q is min(6, m, n); without centring it is svd_lowrank of the data itself.
  CHECK(std::get<1>(td::pca_lowrank(data)).sizes() == td::Shape{6});
  CHECK(std::get<1>(td::pca_lowrank(data.narrow(1, 0, 4))).sizes() == td::Shape{4});
  const Tensor raw = low_rank({}, 20, 8, 3);
  auto [ur, sr, vr] = td::pca_lowrank(raw, 3, false);
  check_decomposition(ur, sr, vr, raw, 1e-12, "not centred");
}

TEST_CASE("svd_lowrank and pca_lowrank are differentiable: gradcheck where the result is exact", "[cpu]") {
  td::testing::reseed(705);
  // With q = min(m, n) the result is the whole SVD whatever the random test matrix: the singular values
  // and the rebuilt matrix are smooth functions of A.
  const Tensor a = td::randn({6, 4}, td::kFloat64).requires_grad_();
  auto values_of = [](const std::vector<Tensor>& in) { return std::get<1>(td::svd_lowrank(in[0], 4)); };
  auto rebuilt = [](const std::vector<Tensor>& in) {
    auto [u, s, v] = td::svd_lowrank(in[0], 4, 1);
    return td::matmul(u * s, v.t());
  };
  auto pca_values = [](const std::vector<Tensor>& in) { return std::get<1>(td::pca_lowrank(in[0], 4)); };
  for (const auto& [name, fn] : std::vector<std::pair<std::string, td::autograd::TestedFn>>{
           {"svd_lowrank S", values_of}, {"svd_lowrank U S V^T", rebuilt}, {"pca_lowrank S", pca_values}}) {
    const auto result = td::autograd::gradcheck(fn, {a});
    INFO(name << ": " << result.report);
    CHECK(result.ok);
  }
  // A wide matrix (decomposed as its transpose) less a row M: gradients in both.
  const Tensor wide = td::randn({4, 6}, td::kFloat64).requires_grad_();
  const Tensor row = td::randn({6}, td::kFloat64).requires_grad_();
  auto wide_values = [](const std::vector<Tensor>& in) { return std::get<1>(td::svd_lowrank(in[0], 4, 1, in[1])); };
  const auto result = td::autograd::gradcheck(wide_values, {wide, row});
  INFO("wide with M: " << result.report);
  CHECK(result.ok);
}

TEST_CASE("svd_lowrank and pca_lowrank refuse what PyTorch's refuse, naming the op and the values", "[cpu]") {
  const Tensor a = td::randn({5, 4}, td::kFloat64);
  check_error([&] { td::pca_lowrank(a, 5); }, {"pca_lowrank", "q(=5)", "min(m, n)=4"});
  check_error([&] { td::pca_lowrank(a, -1); }, {"pca_lowrank", "q(=-1)"});
  check_error([&] { td::pca_lowrank(a, 2, true, -1); }, {"pca_lowrank", "niter(=-1)"});
  check_error([&] { td::svd_lowrank(a, -1); }, {"svd_lowrank", "q must be non-negative", "-1"});
  check_error([&] { td::svd_lowrank(td::ones({5, 4}, td::kInt64)); }, {"svd_lowrank", "float32 or float64", "int64"});
  check_error([&] { td::svd_lowrank(td::ones({5}, td::kFloat64)); }, {"svd_lowrank", "[5]"});
  check_error([&] { td::svd_lowrank(Tensor()); }, {"svd_lowrank"});
  check_error([&] { td::svd_lowrank(a, 2, 2, td::ones({3}, td::kFloat64)); }, {"svd_lowrank", "[3]", "[5, 4]"});
  check_error([&] { td::svd_lowrank(a, 2, 2, td::ones({4}, td::kFloat32)); }, {"svd_lowrank", "float32", "float64"});
  check_error([&] { td::pca_lowrank(td::ones({5, 4}, td::kInt32)); }, {"pca_lowrank", "int32"});
}
