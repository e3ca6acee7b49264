// geqrf, linalg::householder_product (orgqr) and ormqr: LAPACK's QR factors and the products of their
// Householder reflectors, against PyTorch 2.15 and against linalg::qr; batches, views, gradients
// (gradcheck: tests/autograd/gradcheck_cases.cc) and errors.
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;

namespace {

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

const Tensor& matrix() {
  static const Tensor a = f64({2, -1, 0, 1, 3, 1, 0, 1, 4, 1, 0, 1, 3, 2, 1}).view({5, 3});
  return a;
}

const Tensor& other() {
  static const Tensor c = f64({1, 2, 0, 1, -1, 3, 2, 2, 0.5, -1}).view({5, 2});
  return c;
}

}  // namespace

TEST_CASE("geqrf, householder_product and ormqr equal PyTorch's", "[cpu]") {
  auto [factors, tau] = td::geqrf(matrix());
  check_close(factors,
              {-3.8729833462074175, -1.8073922282301274, -1.2909944487358052, 0.17027121329158332, -3.425395354310701,
               -1.9462473604038082, 0.0, 0.15903510981521687, -3.68041499636312, 0.17027121329158332,
               -0.02186345577898665, 0.11588397060415788, 0.5108136398747499, 0.2524798522934738, -0.04799703726687818},
              1e-14, 1e-15, "geqrf's factors");
  check_close(tau, {1.5163977794943222, 1.8356770677856813, 1.9690217544004895}, 1e-14, 0, "geqrf's tau");
  const std::vector<double> q = {-0.5163977794943222, 0.5644117345171041,   -0.11732866599144175, -0.25819888974716104,
                                 -0.7395739969534469, 0.20995656019521158,  -0.0,                 -0.2919371040605711,
                                 -0.932454134984616,  -0.25819888974716104, 0.13623731522826646,  -0.2531829108236375,
                                 -0.7745966692414832, -0.17516226243634292, 0.09262789420376984};
  check_close(td::linalg::householder_product(factors, tau), q, 1e-14, 1e-15, "householder_product");
  check_close(td::orgqr(factors, tau), q, 1e-14, 1e-15, "orgqr");
  check_close(factors.orgqr(tau), q, 1e-14, 1e-15, "the method");
  // The same Q as linalg::qr's.
  check_close(td::linalg::householder_product(factors, tau), values(std::get<0>(td::linalg::qr(matrix()))), 1e-14,
              1e-15, "qr's Q");
  // Fewer reflectors than columns.
  check_close(td::linalg::householder_product(factors, tau.slice(0, 0, 2)),
              {-0.5163977794943222, 0.5644117345171041, 0.1308239709650315, -0.25819888974716104, -0.7395739969534469,
               -0.26966154779673235, -0.0, -0.2919371040605711, 0.9535717505965907, -0.25819888974716104,
               0.13623731522826646, 0.028658310228712503, -0.7745966692414832, -0.17516226243634292,
               -0.006881568120681136},
              1e-14, 1e-15, "two reflectors");
  // ormqr: Q C, Q^T C, D Q and D Q^T for D = C^T.
  const std::vector<double> qc = {-1.2864476752680343, -0.8752581807585313, -0.6622888121494787, 0.05429328989409943,
                                  0.5165070152497868,  -3.530469755455759,  1.7974215399274018,  0.7720285378421715,
                                  -0.8117402411497565, -2.2739240528780136};
  const std::vector<double> qtc = {-1.420093893609386, -1.0327955589886444, 1.041242337816037,  -0.038924947208076155,
                                   0.3550735944477841, -3.421056892592565,  1.6864004672734159, 0.7605588790773473,
                                   -0.4232303554551146, -2.3769177753804813};
  check_close(td::ormqr(factors, tau, other()), qc, 1e-14, 1e-15, "Q C");
  check_close(td::ormqr(factors, tau, other(), true, true), qtc, 1e-14, 1e-15, "Q^T C");
  check_close(td::ormqr(factors, tau, other().t(), false, false), values(f64(qtc).view({5, 2}).t()),
              1e-14, 1e-15, "D Q");
  check_close(factors.ormqr(tau, other().t(), false, true), values(f64(qc).view({5, 2}).t()), 1e-14, 1e-15,
              "D Q^T");
}

TEST_CASE("geqrf and householder_product over batches, views and float32; Q is orthogonal", "[cpu]") {
  td::manual_seed(3);
  const Tensor a = td::randn({2, 3, 6, 4}, td::kFloat64).transpose(-2, -1).transpose(-2, -1);
  const Tensor strided = td::randn({2, 3, 4, 6}, td::kFloat64).transpose(-2, -1);  // a view
  for (const Tensor& x : {a, strided}) {
    auto [factors, tau] = td::geqrf(x);
    REQUIRE(factors.sizes() == td::Shape{2, 3, 6, 4});
    REQUIRE(tau.sizes() == td::Shape{2, 3, 4});
    const Tensor q = td::linalg::householder_product(factors, tau);
    check_close(td::matmul(q.transpose(-2, -1), q), values(td::eye(4, 4, td::kFloat64).expand({2, 3, 4, 4})), 1e-14,
                1e-14, "Q^T Q = I");
    // Q R = A with R the upper triangle of the factors.
    check_close(td::matmul(q, td::triu(factors.slice(-2, 0, 4))), values(x), 1e-13, 1e-13, "Q R = A");
    // ormqr agrees with multiplying by Q (Q completed to m columns by the same reflectors).
    const Tensor c = td::randn({2, 3, 6, 2}, td::kFloat64);
    const Tensor full_q = td::linalg::householder_product(td::cat({factors, td::zeros({2, 3, 6, 2}, td::kFloat64)}, -1), tau);
    check_close(td::ormqr(factors, tau, c), values(td::matmul(full_q, c)), 1e-13, 1e-13, "ormqr = Q C");
  }
  auto [f32, tau32] = td::geqrf(matrix().to(td::kFloat32));
  CHECK(f32.dtype() == td::kFloat32);
  check_close(td::linalg::householder_product(f32, tau32), values(std::get<0>(td::linalg::qr(matrix()))), 1e-5, 1e-6,
              "float32");
  // Empty batches and a wide geqrf.
  CHECK(td::linalg::householder_product(td::empty({0, 4, 3}, td::kFloat64), td::empty({0, 3}, td::kFloat64)).sizes() ==
        td::Shape{0, 4, 3});
  auto [wide, wide_tau] = td::geqrf(matrix().t());
  CHECK(wide.sizes() == td::Shape{3, 5});
  CHECK(wide_tau.sizes() == td::Shape{3});
}

TEST_CASE("householder_product and ormqr are differentiable, the same values with and without gradients; geqrf is not",
          "[cpu]") {
  auto [factors, tau] = td::geqrf(matrix());
  Tensor a = factors.clone().requires_grad_(), t = tau.clone().requires_grad_();
  const Tensor q = td::linalg::householder_product(a, t);
  check_close(q, values(td::linalg::householder_product(factors, tau)), 1e-14, 1e-15, "recorded and kernel's Q");
  q.sum().backward();
  CHECK(a.grad().defined());
  CHECK(t.grad().defined());
  // No reflector at all: the identity's columns, batched, still in the graph.
  Tensor batch = td::zeros({2, 5, 3}, td::kFloat64).requires_grad_();
  const Tensor none = td::linalg::householder_product(batch, td::zeros({2, 0}, td::kFloat64));
  REQUIRE(none.sizes() == td::Shape{2, 5, 3});
  check_close(none, values(td::eye(5, 3, td::kFloat64).expand({2, 5, 3})), 0, 0, "k = 0");
  none.sum().backward();
  check_close(batch.grad(), std::vector<double>(30, 0.0), 0, 0, "k = 0's gradient");
  Tensor x = matrix().clone().requires_grad_();
  auto [fx, tx] = td::geqrf(x);
  check_error([&] { fx.sum().backward(); }, {"geqrf", "not implemented"});
}

TEST_CASE("geqrf, householder_product and ormqr refuse bad shapes and dtypes, naming the op", "[cpu]") {
  auto [factors, tau] = td::geqrf(matrix());
  const Snapshot before(factors);
  check_error([] { td::geqrf(f64({1, 2})); }, {"geqrf", "at least 2 dimensions"});
  check_error([] { td::geqrf(td::tensor({1, 2, 3, 4}).view({2, 2})); }, {"geqrf", "floating", "int64"});
  check_error([&] { td::linalg::householder_product(factors.t(), tau); },
              {"householder_product", "input.shape[-2] (3)", "input.shape[-1] (5)"});
  check_error([&] { td::linalg::householder_product(factors, f64({1, 2, 3, 4})); },
              {"householder_product", "input.shape[-1] (3)", "tau.shape[-1] (4)"});
  check_error([&] { td::linalg::householder_product(factors, tau.view({1, 3})); },
              {"householder_product", "one dimension less", "[1, 3]"});
  check_error([&] { td::linalg::householder_product(factors, tau.to(td::kFloat32)); },
              {"householder_product", "float32", "float64"});
  check_error([&] { td::ormqr(factors, tau, td::zeros({4, 2}, td::kFloat64)); },
              {"ormqr", "other.shape[-2] (4)", "input.shape[-2] (5)"});
  check_error([&] { td::ormqr(factors, tau, td::zeros({2, 4}, td::kFloat64), false); },
              {"ormqr", "other.shape[-1] (4)", "input.shape[-2] (5)"});
  check_error([&] { td::ormqr(factors, tau, td::zeros({5, 2}, td::kFloat32)); }, {"ormqr", "float32", "float64"});
  check_error([&] { td::ormqr(factors, tau, td::zeros({5}, td::kFloat64)); }, {"ormqr", "as many dims"});
  check_error([&] { td::ormqr(factors, tau.slice(0, 0, 2), other()); }, {"ormqr", "tau.shape[-1] (2)", "min", "(3)"});
  check_error([&] { td::ormqr(factors.slice(0, 0, 2), tau, td::zeros({2, 2}, td::kFloat64)); },
              {"ormqr", "tau.shape[-1] (3)", "(2)"});
  before.check_unchanged(factors);
}
