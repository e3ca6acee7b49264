// torch.linalg's factorizations and what is built on them (autograd/linalg.h): values and first
// derivatives against PyTorch 2.15 (float64, CPU) on deterministic inputs a PyTorch script makes
// the same way, factors checked where they are unique only up to signs by what is unique (the
// reconstruction, orthonormality, sign-normalized vectors), float32, batches, empty matrices, the
// backward that qr refuses, and the errors.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autograd/linalg.h"
#include "tests/testing.h"

namespace td = tandem;
namespace la = td::linalg;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::sine_ramp;
using td::testing::Snapshot;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// float64 results of well-conditioned inputs (condition numbers below 30) against PyTorch's.
constexpr double kRtol = 1e-12, kAtol = 1e-13;
// float32 results against the float64 ones.
constexpr double kRtol32 = 1e-5, kAtol32 = 1e-5;

// Of `shape`, float64, and within tolerance of `want` (row-major).
void check_is(const Tensor& got, const Shape& shape, const std::vector<double>& want, const std::string& what,
              double rtol = kRtol, double atol = kAtol) {
  INFO(what);
  CHECK(got.sizes() == shape);
  CHECK(got.dtype() == td::kFloat64);
  check_close(got, want, rtol, atol, what);
}

// sin(scale * i) in row-major order: torch.sin(torch.arange(n, dtype=torch.float64) * scale).view(shape).
Tensor sine(const Shape& shape, double scale) { return sine_ramp(shape, scale); }
Tensor f64(const std::vector<double>& v, const Shape& shape) { return td::tensor(v, td::kFloat64).view(shape); }

// sine plus `shift` on the diagonal of each [m, n] matrix: full rank, singular values apart (a sine
// ramp alone has rank 2).
Tensor matrix(const Shape& shape, double scale, double shift) {
  const int64_t m = shape[shape.size() - 2], n = shape.back();
  return sine(shape, scale) + td::eye(m, n, td::kFloat64) * shift;
}

// A A^T + n I for A = sine([n, n], scale): symmetric positive-definite.
Tensor spd(int64_t n, double scale) {
  const Tensor a = sine({n, n}, scale);
  return td::matmul(a, a.t()) + td::eye(n, n, td::kFloat64) * static_cast<double>(n);
}

Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

Tensor identity(int64_t n, td::DType dtype = td::kFloat64) { return td::eye(n, n, dtype); }

// Each column times the sign of its largest-magnitude entry: vectors unique up to sign made unique,
// the same way on PyTorch's side.
Tensor normalize_columns(const Tensor& v) {
  const Tensor at = td::argmax(td::abs(v), -2, true);
  return v * td::sign(td::gather(v, -2, at));
}

// Q and R with R's diagonal made positive (Q's columns and R's rows flipped together): unique for
// a full-rank input.
std::tuple<Tensor, Tensor> normalize_qr(const Tensor& q, const Tensor& r) {
  const Tensor d = td::sign(td::diagonal(r, 0, -2, -1));
  return {q * d.unsqueeze(-2), r * d.unsqueeze(-1)};
}

// Orthonormal columns: Q^T Q = I.
void check_orthonormal(const Tensor& q, const std::string& what, double tol = 1e-13) {
  check_close(td::matmul(mT(q), q), values(identity(q.size(-1))), 0, tol, what + ": orthonormal columns");
}

// Zero below the diagonal, exactly.
void check_upper(const Tensor& r, const std::string& what) {
  check_close(td::tril(r, -1), std::vector<double>(static_cast<size_t>(r.numel()), 0.0), 0, 0,
              what + ": upper triangular");
}

bool ascending(const std::vector<double>& v) { return std::is_sorted(v.begin(), v.end()); }

// The gradient d(loss)/d(x) of the loss f makes of a copy of x.
Tensor grad_of(const Tensor& x, const std::function<Tensor(const Tensor&)>& f) {
  Tensor leaf = x.detach().clone().requires_grad_();
  f(leaf).backward();
  return leaf.grad();
}

// Both gradients of a loss of two inputs.
std::pair<Tensor, Tensor> grads_of(const Tensor& x, const Tensor& y,
                                   const std::function<Tensor(const Tensor&, const Tensor&)>& f) {
  Tensor a = x.detach().clone().requires_grad_(), b = y.detach().clone().requires_grad_();
  f(a, b).backward();
  return {a.grad(), b.grad()};
}

// The inputs the cases share, as the reference script makes them.
Tensor A() { return matrix({3, 3}, 1.3, 2); }      // det 2.78, condition number 3.4
Tensor Ab() { return matrix({2, 3, 3}, 1.3, 2); }  // a batch of two; its first matrix is A
Tensor Nd() { return matrix({3, 3}, 1.7, -2); }    // det -5.90
Tensor S() { return spd(3, 0.6); }                 // symmetric positive-definite, eigenvalues 3, 3.85, 6.71
// Singular, with an exact zero pivot under partial pivoting: row 0 is half of row 1.
Tensor singular() { return td::tensor({{1.0, 2.0, 3.0}, {2.0, 4.0, 6.0}, {1.0, 0.0, 1.0}}, td::kFloat64); }
// Full rank, singular values 3.25, 2.60, 1.25 (tall); 3.15, 2.46, 1.23 (square); 3.39, 1.45, 1.26 (wide).
Tensor tall() { return matrix({4, 3}, 0.9, 2); }
Tensor square() { return matrix({3, 3}, 0.9, 2); }
Tensor wide() { return matrix({3, 4}, 0.9, 2); }

}  // namespace

TEST_CASE("inv, solve and solve_triangular as PyTorch's: vectors, batches, broadcasting, left=false", "[cpu]") {
  const Tensor B = sine({3, 2}, 0.4), b = sine({3}, 0.9), Bv = sine({2, 3}, 0.5);
  check_is(la::inv(A()), {3, 3},
           {0.44670664040267966, -0.347585485274407, -0.13266406071830503, 0.3677664726392224, 0.6590325643847933,
            -0.28268442326702936, -0.48065376618377675, 0.11669173346098657, 1.04308357020575},
           "inv");
  check_close(td::matmul(la::inv(A()), A()), values(identity(3)), 0, 1e-14, "inv(A) A");
  check_is(la::solve(A(), B), {3, 2},
           {-0.38195005813617544, -0.270638587630156, 0.19019713667382898, 0.5004149003832942, 1.1263483282998206,
            0.8700590700954468},
           "solve");
  check_is(la::solve(A(), b), {3}, {-0.4014676452445728, 0.24094638611865019, 1.1072122386039076}, "solve for a 1-D b");
  check_is(la::solve(Ab(), b), {2, 3},
           {-0.4014676452445728, 0.24094638611865019, 1.1072122386039076, -0.4876019239559351, 0.9077558620035712,
            0.22522943873201362},
           "a batch of A with a 1-D b");
  check_is(la::solve(Ab(), Bv), {2, 3},
           {-0.2782743163099326, 0.0780863021015292, 0.9336695562231606, 0.7872450246824741, 0.6311954180329317,
            -0.24558337149607606},
           "a batch of vectors: B [2, 3] with A [2, 3, 3]");
  check_is(la::solve(A(), Bv, false), {2, 3},
           {-0.22813955875665992, 0.4141497500122456, 0.742198427178155, 0.49233885150836887, 0.32237858793546864,
            0.23488050659118825},
           "left=false: X A = B");
  check_is(la::solve(matrix({2, 1, 3, 3}, 0.5, 2), sine({3, 3, 2}, 0.3)), {2, 3, 3, 2},
           {-0.38973062683371135, -0.2667296857697409,  0.1553651265594989,  0.17902772696071512,  0.8377891298857643,
            0.8831547696766412,   0.4365193002479415,   0.5051928130045651,  0.06554473260839887,  0.010951705867600484,
            0.08245704593688692,  -0.18114324747544783, 0.1913744280531257,  0.037167955092680505, -0.18514892764895202,
            -0.18400422798787788, -0.8752579570038939,  -0.8008425191447813, 0.33209672476215296,  0.6883078686576369,
            0.25809079990419903,  0.4503842285383929,   0.1304948316335692,  -0.03349278559885171, 1.1472723744326612,
            0.9161545797158628,   0.6130252039298156,   0.46506048496576374, -0.5508415552298487,  -0.5278602456144633,
            -0.8534220980713773,  -1.1046123478058547,  -0.5366520207692209, -0.6617096612248018,  0.1198098787508695,
            0.27335469261647855},
           "A [2, 1, 3, 3] with B [3, 3, 2]");

  // Only the named triangle is read: the other one holds anything.
  const Tensor T = matrix({3, 3}, 0.8, 3);
  check_is(la::solve_triangular(T, B, true), {3, 2},
           {-0.18490812331169032, -0.06111969364317502, 0.32637938210892675, 0.3919080816282307, 0.3207308909115897,
            0.29176418116886504},
           "upper");
  check_is(la::solve_triangular(td::triu(T), B, true), {3, 2},
           {-0.18490812331169032, -0.06111969364317502, 0.32637938210892675, 0.3919080816282307, 0.3207308909115897,
            0.29176418116886504},
           "upper of triu(T)");
  check_is(la::solve_triangular(T, B, false), {3, 2},
           {0.0, 0.1298061141028835, 0.24386381065312826, 0.2870384870304868, 0.3701262566610348, 0.3913955545623065},
           "lower");
  check_is(la::solve_triangular(T, Bv, true, false), {2, 3},
           {0.0, 0.16297978124343432, 0.3095778139604094, 0.3324983288680181, 0.22802958571348908, 0.1407611181948654},
           "upper, X T = B");
  check_is(la::solve_triangular(T, Bv, false, false, true), {2, 3},
           {0.15560829959578848, 1.0106180980509945, 0.8414709848078965, 0.7242878750853546, 1.2870929250944254,
            0.5984721441039565},
           "lower, X T = B, unitriangular");
  check_is(la::solve_triangular(T, B, true, true, true), {3, 2},
           {-2.0564125390868755, -1.6817500138024, 1.4738358879252704, 1.6201976475659805, 0.9995736030415051,
            0.9092974268256817},
           "upper, unitriangular");
  check_is(
      la::solve_triangular(matrix({2, 1, 3, 3}, 0.8, 3), sine({3, 3, 2}, 0.3) + 1, false), {2, 3, 3, 2},
      {0.3333333333333333,    0.4318400688871132,   0.4553563726961374,   0.5070783695604368,   0.8187084734724096,
       0.8816740108323236,    0.6579492102927317,   0.6210697888829579,   0.41849058117816346,  0.34262348593341685,
       0.6612200650383783,    0.5381685688035989,   0.18582651890171598,  0.1040779469386754,   0.0009876361712755062,
       -0.016260034777251096, 0.060827743116473425, 0.053777321155880235, 0.2635971402581812,   0.34149542162261703,
       0.7414667803809714,    0.8483938695752422,   0.49280683715467577,  0.5141843644561186,   0.5203005908048783,
       0.4911366607509002,    0.8130867459153405,   0.6965365022223904,   0.31925627975046844,  0.2447500101214676,
       0.14695001689987555,   0.08230394753093269,  0.07091585862773504,  0.016949688441520484, 0.01717136406392706,
       0.02964979781743815},
      "lower, batch dims broadcast");
}

TEST_CASE("det, slogdet and logdet as PyTorch's: a negative determinant, singular matrices", "[cpu]") {
  check_is(la::det(A()), {}, {2.7761854213878148}, "det");
  check_is(la::det(Ab()), {2}, {2.7761854213878148, 2.4223331523011207}, "det of a batch");
  check_is(la::det(Nd()), {}, {-5.901597203981479}, "a negative det");
  auto [sign, logabsdet] = la::slogdet(A());
  check_is(sign, {}, {1.0}, "slogdet's sign");
  check_is(logabsdet, {}, {1.0210778348619682}, "slogdet's logabsdet");
  std::tie(sign, logabsdet) = la::slogdet(Nd());
  check_is(sign, {}, {-1.0}, "slogdet's sign of a negative det");
  check_is(logabsdet, {}, {1.7752230268148796}, "slogdet's logabsdet of a negative det");
  std::tie(sign, logabsdet) = la::slogdet(Ab());
  check_is(sign, {2}, {1.0, 1.0}, "slogdet's signs of a batch");
  check_is(logabsdet, {2}, {1.0210778348619682, 0.884731188231745}, "slogdet's logabsdets of a batch");
  check_is(td::logdet(A()), {}, {1.0210778348619682}, "logdet");
  check_is(td::logdet(Nd()), {}, {kNaN}, "logdet of a negative det is NaN");
  // A singular matrix: det 0, sign 0, log|det| -inf, logdet -inf; not an error.
  for (const Tensor& z : {singular(), td::diag(td::tensor({1.0, 2.0, 0.0}, td::kFloat64))}) {
    check_is(la::det(z), {}, {0.0}, "det of a singular matrix", 0, 0);
    std::tie(sign, logabsdet) = la::slogdet(z);
    check_is(sign, {}, {0.0}, "slogdet's sign of a singular matrix", 0, 0);
    check_is(logabsdet, {}, {-kInf}, "slogdet's logabsdet of a singular matrix");
    check_is(td::logdet(z), {}, {-kInf}, "logdet of a singular matrix");
  }
}

TEST_CASE("cholesky, cholesky_solve and cholesky_inverse as PyTorch's; cholesky reads the triangle it returns",
          "[cpu]") {
  const Tensor L = la::cholesky(S());
  check_is(L, {3, 3},
           {2.0463425863066735, 0.0, 0.0, 0.25065429792146077, 2.088472407300529, 0.0, -0.6942107645538473,
            -0.47222873092565293, 2.0598262154257547},
           "cholesky");
  check_upper(mT(L), "cholesky's L");
  check_close(td::matmul(L, mT(L)), values(S()), kRtol, kAtol, "L L^T");
  check_is(la::cholesky(S(), true), {3, 3},
           {2.0463425863066735, 0.25065429792146077, -0.6942107645538473, 0.0, 2.088472407300529, -0.47222873092565293,
            0.0, 0.0, 2.0598262154257547},
           "cholesky upper");
  // Anything above the diagonal: the lower triangle alone is read.
  check_is(la::cholesky(td::tril(S()) + td::triu(sine({3, 3}, 2.1), 1)), {3, 3},
           {2.0463425863066735, 0.0, 0.0, 0.25065429792146077, 2.088472407300529, 0.0, -0.6942107645538473,
            -0.47222873092565293, 2.0598262154257547},
           "cholesky of the lower triangle");
  // upper = true reads the upper triangle only, as PyTorch's.
  check_is(la::cholesky(td::triu(S()) + td::tril(sine({3, 3}, 2.1), -1), true), {3, 3},
           {2.0463425863066735, 0.25065429792146077, -0.6942107645538473, 0.0, 2.088472407300529, -0.47222873092565293,
            0.0, 0.0, 2.0598262154257547},
           "cholesky upper of the upper triangle");
  const Tensor B = sine({3, 2}, 0.4);
  check_is(td::cholesky_solve(B, L), {3, 2},
           {0.06516213352975607, 0.15931189521577285, 0.22637990468164593, 0.2689052668835208, 0.27381762806604054,
            0.29257583645418156},
           "cholesky_solve");
  check_is(td::cholesky_solve(B, mT(L), true), {3, 2},
           {0.06516213352975607, 0.15931189521577285, 0.22637990468164593, 0.2689052668835208, 0.27381762806604054,
            0.29257583645418156},
           "cholesky_solve upper");
  check_close(td::matmul(S(), td::cholesky_solve(B, L)), values(B), kRtol, kAtol, "cholesky_solve solves");
  check_is(td::cholesky_inverse(L), {3, 3},
           {0.26512128825755193, -0.011479673119216747, 0.07342845663393739, -0.011479673119216747, 0.24131748673618886,
            0.05329205930287474, 0.07342845663393739, 0.05329205930287474, 0.23568874169115334},
           "cholesky_inverse");
  check_is(td::cholesky_inverse(mT(L), true), {3, 3},
           {0.26512128825755193, -0.011479673119216747, 0.07342845663393739, -0.011479673119216747, 0.24131748673618886,
            0.05329205930287474, 0.07342845663393739, 0.05329205930287474, 0.23568874169115334},
           "cholesky_inverse upper");
}

TEST_CASE("qr in modes reduced, complete and r on tall, square and wide matrices", "[cpu]") {
  struct Case {
    std::string name;
    Tensor a;
    std::vector<double> q, r;  // PyTorch's, R's diagonal made positive
  };
  const std::vector<Case> cases = {
      {"tall",
       tall(),
       {0.8362051154311623, -0.09332770516773825, 0.4259041404674365, 0.17868862104194294, 0.9604499123683065,
        -0.199625569003345, -0.3230948087589286, 0.261378989104083, 0.8777753326803704, 0.4055134106166117,
        -0.02251509126705511, -0.09091622886289392},
       {2.391757671763063, 1.0950129317410986, -0.4484936631323364, 0.0, 1.4178909158846558, -0.2892481358699639, 0.0,
        0.0, 3.103715920752344}},
      {"square",
       square(),
       {0.9147960739264678, -0.10249603474487791, 0.39069515736734833, 0.1954827182565358, 0.9587882677258304,
        -0.2061833274887606, -0.353460959643008, 0.2649898498676476, 0.8971319465247938},
       {2.186279605918774, 1.0151016615013413, -0.28767077932879337, 0.0, 1.4174607370109837, -0.29676630095519485, 0.0,
        0.0, 3.0883166544171985}},
      {"wide",
       wide(),
       {0.9104337526451414, 0.0018524753043346663, -0.4136507589497842, -0.201442773905562, 0.8753883983934797,
        -0.4394496112176356, 0.3612910058190188, 0.48341671495030586, 0.7973563123352924},
       {2.1967551117138093, 0.8576105538414739, 1.9137682887216463, 0.22041042615218764, 0.0, 1.3653703126805312,
        0.49139335579587085, -0.20567009465127306, 0.0, 0.0, 1.8600761423132175, -0.5489940068712134}}};
  for (const Case& c : cases) {
    const int64_t m = c.a.size(0), n = c.a.size(1), k = std::min(m, n);
    auto [q, r] = la::qr(c.a);
    CHECK(q.sizes() == Shape{m, k});
    CHECK(r.sizes() == Shape{k, n});
    check_close(td::matmul(q, r), values(c.a), kRtol, kAtol, c.name + ": Q R");
    check_orthonormal(q, c.name);
    check_upper(r, c.name);
    auto [qn, rn] = normalize_qr(q, r);
    check_is(qn, {m, k}, c.q, c.name + ": Q");
    check_is(rn, {k, n}, c.r, c.name + ": R");

    auto [qc, rc] = la::qr(c.a, "complete");
    CHECK(qc.sizes() == Shape{m, m});
    CHECK(rc.sizes() == Shape{m, n});
    check_close(td::matmul(qc, rc), values(c.a), kRtol, kAtol, c.name + ": complete Q R");
    check_orthonormal(qc, c.name + " complete");
    check_upper(rc, c.name + " complete");
    check_close(td::abs(rc.narrow(0, 0, k)), values(td::abs(r)), kRtol, kAtol, c.name + ": complete R's first rows");

    auto [q0, r_only] = la::qr(c.a, "r");
    CHECK(q0.numel() == 0);
    CHECK(r_only.sizes() == Shape{k, n});
    check_close(td::abs(r_only), values(td::abs(r)), kRtol, kAtol, c.name + ": mode r");
  }
}

TEST_CASE("eigh and eigvalsh: ascending eigenvalues as PyTorch's, orthonormal vectors, uplo picks the triangle",
          "[cpu]") {
  auto [L, V] = la::eigh(S());
  check_is(L, {3}, {2.9999999999999996, 3.8495613621889913, 6.710313789154743}, "eigenvalues");
  CHECK(ascending(values(L)));
  CHECK(V.sizes() == Shape{3, 3});
  check_orthonormal(V, "eigenvectors");
  check_close(td::matmul(V * L.unsqueeze(0), mT(V)), values(S()), kRtol, kAtol, "V diag(L) V^T");
  check_is(normalize_columns(V), {3, 3},
           {0.6732086548179022, -0.5422768729037395, -0.5027185098959589, 0.30590883308028627, 0.8231882805220483,
            -0.47831040199290276, 0.6732086548179024, 0.16821666958091852, 0.7200647603885194},
           "sign-normalized eigenvectors", 1e-11, 1e-12);
  auto [LU, VU] = la::eigh(S(), "U");
  check_close(LU, {2.9999999999999996, 3.8495613621889913, 6.710313789154743}, kRtol, kAtol,
              "eigenvalues from the upper triangle");
  check_close(td::matmul(VU * LU.unsqueeze(0), mT(VU)), values(S()), kRtol, kAtol, "V diag(L) V^T from uplo U");
  check_is(la::eigvalsh(S()), {3}, {2.9999999999999996, 3.8495613621889913, 6.710313789154743}, "eigvalsh");

  // Not symmetric: "L" reads the lower triangle, "U" the upper one.
  const Tensor N = sine({3, 3}, 0.7);
  check_is(la::eigvalsh(N), {3}, {-1.3526807359352409, -0.7093271276906108, 1.7657293759094346},
           "eigvalsh of the lower triangle");
  check_is(la::eigvalsh(N, "L"), {3}, {-1.3526807359352409, -0.7093271276906108, 1.7657293759094346},
           "eigvalsh with uplo L");
  check_is(la::eigvalsh(N, "U"), {3}, {-1.5846659349110912, 0.3376563360337939, 0.9507311111608805},
           "eigvalsh of the upper triangle");
  auto [LN, VN] = la::eigh(N, "L");
  check_close(LN, {-1.3526807359352409, -0.7093271276906108, 1.7657293759094346}, kRtol, kAtol,
              "eigh of the lower triangle");
  check_close(td::matmul(VN * LN.unsqueeze(0), mT(VN)), values(td::tril(N) + mT(td::tril(N, -1))), kRtol, kAtol,
              "eigh reconstructs the lower triangle's symmetric matrix");
  auto [LN_up, VN_up] = la::eigh(N, "U");
  check_close(td::matmul(VN_up * LN_up.unsqueeze(0), mT(VN_up)), values(td::triu(N) + mT(td::triu(N, 1))), kRtol, kAtol,
              "eigh reconstructs the upper triangle's symmetric matrix");
}

TEST_CASE("svd and svdvals on tall and wide matrices; pinv and matrix_rank with their tolerances", "[cpu]") {
  struct Case {
    std::string name;
    Tensor a;
    std::vector<double> s, u, v;  // PyTorch's S, and sign-normalized U and V = Vh^T of the reduced svd
  };
  const std::vector<Case> cases = {
      {"tall",
       tall(),
       {3.2451791679601474, 2.6001169929604497, 1.2474133588860643},
       {0.015876485041958988, 0.895737624290366, -0.29452578519679606, -0.4298694672869733, 0.2624095806483476,
        0.8605797338634229, 0.8654275342812472, 0.20196937435790246, 0.3917171438468505, -0.2568956232110758,
        0.2966541626812052, -0.13861732479829736},
       {-0.3296880228904891, 0.7827612830085353, -0.5278168066530202, -0.23061797617883595, 0.47536534043981943,
        0.8490248183485051, 0.915489572101036, 0.4016373574897707, 0.02379656367830918}},
      {"wide",
       wide(),
       {3.3901181531075752, 1.45326299173411, 1.2556773750002699},
       {0.6228177333207958, 0.7749053162706093, -0.10779527761777435, -0.15140329521624984, 0.25455431181580335,
        0.9551330506969403, 0.7675774314418106, -0.5785532414147636, 0.2758641578561143},
       {0.5668935339455843, 0.6729587390305939, -0.33393286182067694, 0.3178444119007556, 0.21066070749756421,
        0.923576147219556, 0.7595653776197242, -0.5763649105479958, -0.14147905119108634, -0.025828049007924125,
        0.41297952947813354, -0.12441712967836585}}};
  for (const Case& c : cases) {
    const int64_t m = c.a.size(0), n = c.a.size(1), k = std::min(m, n);
    auto [U, Sv, Vh] = la::svd(c.a);
    CHECK(U.sizes() == Shape{m, m});
    CHECK(Vh.sizes() == Shape{n, n});
    check_is(Sv, {k}, c.s, c.name + ": S");
    const std::vector<double> descending = values(Sv);
    CHECK(std::is_sorted(descending.rbegin(), descending.rend()));
    check_orthonormal(U, c.name + ": full U");
    check_orthonormal(mT(Vh), c.name + ": full V");
    check_close(td::matmul(U.narrow(1, 0, k) * Sv.unsqueeze(0), Vh.narrow(0, 0, k)), values(c.a), kRtol, kAtol,
                c.name + ": full U diag(S) Vh");

    auto [u, s, vh] = la::svd(c.a, false);
    CHECK(u.sizes() == Shape{m, k});
    CHECK(vh.sizes() == Shape{k, n});
    check_is(s, {k}, c.s, c.name + ": reduced S");
    check_orthonormal(u, c.name + ": reduced U");
    check_orthonormal(mT(vh), c.name + ": reduced V");
    check_close(td::matmul(u * s.unsqueeze(0), vh), values(c.a), kRtol, kAtol, c.name + ": reduced U diag(S) Vh");
    check_is(normalize_columns(u), {m, k}, c.u, c.name + ": sign-normalized U", 1e-11, 1e-12);
    check_is(normalize_columns(mT(vh)), {n, k}, c.v, c.name + ": sign-normalized V", 1e-11, 1e-12);
    check_is(la::svdvals(c.a), {k}, c.s, c.name + ": svdvals");
  }
  // Rank 2: the third singular value is rounding.
  const Tensor rank2 = sine({4, 3}, 0.9);
  const Tensor sv = la::svdvals(rank2);
  check_close(sv.narrow(0, 0, 2), {1.9936647653250992, 1.2118363827083378}, kRtol, kAtol, "svdvals of a rank-2 matrix");
  CHECK(sv.select(0, 2).item<double>() < 1e-15);

  check_is(la::pinv(tall()), {3, 4},
           {0.3926699231815701, -0.24146646287612347, -0.19286584383527983, 0.174059140280923, -0.03782797004813457,
            0.6642584197432752, 0.2420373122177506, -0.021854961249748006, 0.13722394424686915, -0.06431824757820147,
            0.28281432808051327, -0.029292703064413863},
           "pinv of a tall matrix");
  check_close(td::matmul(la::pinv(tall()), tall()), values(identity(3)), 0, 1e-14, "pinv(A) A");
  check_is(la::pinv(wide()), {4, 3},
           {0.4916475186235782, -0.16144833908219663, -0.21291819418864447, 0.09143536384346727, 0.7252241593385611,
            0.1910034105378642, -0.15563838277798628, -0.2424949818150789, 0.37035036229193197, 0.22614366416091664,
            -0.0211468958530784, -0.19759129932443875},
           "pinv of a wide matrix");
  check_is(la::pinv(rank2), {3, 4},
           {0.2195471747497795, 0.040559780419406236, -0.29288510987680794, 0.48901875688304997, 0.4288155161971297,
            -0.18201778659753942, -0.09970109576824604, 0.3622917530228322, 0.31356482408475317, -0.26684792152259235,
            0.1689347199227084, -0.03861042668055814},
           "pinv of a rank-2 matrix");
  check_is(la::pinv(tall(), 1.3), {3, 4},
           {0.26804751288578205, 0.12266980659891433, -0.027118948066007495, 0.1154061258646292, 0.16263461077508432,
            0.07852350916778758, -0.024576456609896172, 0.07249191115502285, 0.1428425321451087, -0.08073529192942666,
            0.27534164719968557, -0.026648338249028847},
           "pinv with atol");
  check_is(la::pinv(tall(), std::nullopt, 0.5), {3, 4},
           {0.26804751288578205, 0.12266980659891433, -0.027118948066007495, 0.1154061258646292, 0.16263461077508432,
            0.07852350916778758, -0.024576456609896172, 0.07249191115502285, 0.1428425321451087, -0.08073529192942666,
            0.27534164719968557, -0.026648338249028847},
           "pinv with rtol");

  const Tensor rank = la::matrix_rank(rank2);
  CHECK(rank.dtype() == td::kInt64);
  CHECK(rank.dim() == 0);
  CHECK(rank.item<int64_t>() == 2);
  CHECK(la::matrix_rank(tall()).item<int64_t>() == 3);
  CHECK(la::matrix_rank(tall(), 1.3).item<int64_t>() == 2);
  CHECK(la::matrix_rank(tall(), std::nullopt, 0.85).item<int64_t>() == 1);
  CHECK(values(la::matrix_rank(td::stack({tall(), rank2}))) == std::vector<double>{3, 2});
}

TEST_CASE("matrix_power, multi_dot, vector_norm, matrix_norm, cond and vecdot as PyTorch's", "[cpu]") {
  check_is(la::matrix_power(A(), 0), {3, 3}, values(identity(3)), "A^0", 0, 0);
  check_is(la::matrix_power(A(), 1), {3, 3}, values(A()), "A^1", 0, 0);
  check_is(la::matrix_power(A(), 3), {3, 3},
           {7.365474401499963, 7.836245894340939, 4.8268987936009005, -4.168538202696922, -1.0857165885014999,
            -0.6922988865813466, 6.686678683760205, 5.35498446245972, 4.178225458261473},
           "A^3");
  check_is(la::matrix_power(A(), -2), {3, 3},
           {0.13548201514137445, -0.3998196972961833, -0.09938461651690687, 0.5425271396883742, 0.27350669768618674,
            -0.5299511114965997, -0.6731579683515603, 0.36569115486524384, 1.1188018794812111},
           "A^-2");
  check_is(la::matrix_power(Ab(), 3), {2, 3, 3},
           {7.365474401499963, 7.836245894340939, 4.8268987936009005, -4.168538202696922, -1.0857165885014999,
            -0.6922988865813466, 6.686678683760205, 5.35498446245972, 4.178225458261473, 4.612593509227363,
            5.566484640658096, 6.365462732638229, -1.0980358244791046, -0.9397239459778993, -3.6846955430734267,
            4.981605843089452, 7.4127841653756885, 6.984216319080301},
           "A^3 of a batch");
  check_is(la::matrix_power(Ab(), 0), {2, 3, 3}, values(identity(3).expand({2, 3, 3})), "A^0 of a batch", 0, 0);

  const Tensor v1 = sine({3}, 0.2), M1 = sine({3, 4}, 0.3), M2 = sine({4, 2}, 0.4), v2 = sine({2}, 0.5);
  check_is(la::multi_dot({v1, M1, M2, v2}), {}, {0.37257474369918825}, "multi_dot of a row, two matrices, a column");
  check_is(la::multi_dot({sine({2, 3}, 0.6), M1, M2}), {2, 2},
           {1.6008113056800264, 2.0799373224017845, 2.854187589951321, 2.7943575756445274},
           "multi_dot of three matrices");
  check_is(la::multi_dot({v1, M1}), {4},
           {0.44820533354470726, 0.3646012259567838, 0.24842837672818374, 0.11006416048856926},
           "multi_dot of a row and a matrix");

  const Tensor x = sine({2, 3}, 1.1);  // x[0, 0] = 0
  check_is(la::vector_norm(x), {}, {1.695916966031775}, "vector_norm");
  check_is(la::vector_norm(x, 2, {1}, true), {2, 1}, {1.2032942257057841, 1.1950804835062523},
           "vector_norm over dim 1");
  check_is(la::vector_norm(x, kInf), {}, {0.951602073889516}, "vector_norm inf");
  check_is(la::vector_norm(x, kInf, {1}, true), {2, 1}, {0.8912073600614354, 0.951602073889516},
           "vector_norm inf over dim 1");
  check_is(la::vector_norm(x, -kInf), {}, {0.0}, "vector_norm -inf");
  check_is(la::vector_norm(x, -kInf, {1}, true), {2, 1}, {0.0, 0.15774569414324865}, "vector_norm -inf over dim 1");
  check_is(la::vector_norm(x, 0), {}, {5.0}, "vector_norm 0");
  check_is(la::vector_norm(x, 0, {1}, true), {2, 1}, {2.0, 3.0}, "vector_norm 0 over dim 1");
  check_is(la::vector_norm(x, 3), {}, {1.3486833152952178}, "vector_norm 3");
  check_is(la::vector_norm(x, 3, {1}, true), {2, 1}, {1.0732758098610247, 1.0676105119806962},
           "vector_norm 3 over dim 1");
  check_is(la::vector_norm(x, 2, {0}), {3}, {0.15774569414324865, 1.3037626569504515, 1.0730580534133205},
           "vector_norm over dim 0");

  check_is(la::matrix_norm(Ab()), {2}, {3.071328997336986, 3.002290378424383}, "matrix_norm fro");
  check_is(la::matrix_norm(Ab(), "fro"), {2}, {3.071328997336986, 3.002290378424383}, "matrix_norm 'fro'");
  check_is(la::matrix_norm(Ab(), "nuc"), {2}, {4.770205319495947, 4.613023352810072}, "matrix_norm nuc");
  check_is(la::matrix_norm(Ab(), 1.0), {2}, {3.6863095045585794, 3.482968191256818}, "matrix_norm 1");
  check_is(la::matrix_norm(Ab(), -1.0), {2}, {1.9027948908236259, 1.9513099381000112}, "matrix_norm -1");
  check_is(la::matrix_norm(Ab(), kInf), {2}, {3.4790595572386573, 3.4256985083727614}, "matrix_norm inf");
  check_is(la::matrix_norm(Ab(), -kInf), {2}, {2.0194314915516363, 1.7834624619713564}, "matrix_norm -inf");
  check_is(la::matrix_norm(Ab(), 2.0), {2}, {2.6556592404388124, 2.63327210978001}, "matrix_norm 2");
  check_is(la::matrix_norm(Ab(), -2.0), {2}, {0.7881232222083508, 0.74501033192214}, "matrix_norm -2");
  check_is(la::matrix_norm(Ab(), "nuc", {0, 2}, true), {1, 3, 1},
           {3.3174390613191234, 2.4299257685544386, 3.197131530526058}, "matrix_norm nuc over dims 0, 2");
  check_is(la::matrix_norm(Ab(), 1.0, {-1, -2}), {2}, {3.4790595572386573, 3.4256985083727614},
           "matrix_norm 1 over dims -1, -2");

  check_is(la::cond(A()), {}, {3.36959902411904}, "cond");
  check_is(la::cond(Ab()), {2}, {3.36959902411904, 3.534544417640653}, "cond of a batch");
  check_is(la::vecdot(sine({2, 3}, 0.4), sine({2, 3}, 0.7)), {2}, {0.9577885499325263, 0.8204238950055331}, "vecdot");
  check_is(la::vecdot(sine({2, 3}, 0.4), sine({2, 3}, 0.7), 0), {3},
           {0.8045448690897649, 0.5857154960775611, 0.3879520797707335}, "vecdot along dim 0");
}

TEST_CASE("lstsq: the least-squares solution and residuals of a tall system, the least-norm solution of a wide one",
          "[cpu]") {
  const la::LstsqResult t = la::lstsq(tall(), sine({4, 2}, 0.35), std::nullopt, "gels");
  check_is(t.solution, {3, 2},
           {-0.19536707974964887, -0.15357646659896831, 0.6475772196087627, 0.7874450440815022, 0.21197861488213626,
            0.2508661201950357},
           "tall solution");
  check_is(t.residuals, {2}, {0.9426154978736714, 0.40264574261585484}, "tall residuals");
  const Tensor B = sine({2, 2}, 0.45);
  const la::LstsqResult w = la::lstsq(matrix({2, 4}, 0.6, 2), B);
  check_is(w.solution, {4, 2},
           {0.03452488348297754, 0.1807244734742426, 0.2767898157119075, 0.35227038110802233, -0.08759663097706052,
            -0.032745820489519004, -0.14755241445813735, -0.09741754718451237},
           "wide least-norm solution");
  check_close(td::matmul(matrix({2, 4}, 0.6, 2), w.solution), values(B), kRtol, kAtol, "wide solution solves");
  CHECK(w.residuals.numel() == 0);
  CHECK(la::lstsq(square(), sine({3, 2}, 0.35), std::nullopt, "gels").residuals.numel() == 0);

  // The drivers' outputs, as PyTorch's: gelsy (the CPU default) gives the rank and no residuals,
  // gelsd and gelss the singular values too, gels neither.
  const la::LstsqResult gelsy = la::lstsq(tall(), sine({4, 2}, 0.35));
  check_close(gelsy.solution, values(t.solution), 1e-14, 1e-15, "gelsy's solution");
  CHECK(gelsy.residuals.numel() == 0);
  CHECK(gelsy.rank.dtype() == td::kInt64);
  CHECK(gelsy.rank.dim() == 0);
  CHECK(gelsy.rank.item<int64_t>() == 3);
  CHECK(gelsy.singular_values.numel() == 0);
  for (const char* driver : {"gelsd", "gelss"}) {
    INFO(driver);
    const la::LstsqResult r = la::lstsq(tall(), sine({4, 2}, 0.35), std::nullopt, driver);
    check_close(r.residuals, values(t.residuals), 1e-13, 1e-15, "residuals");
    check_close(r.singular_values, values(la::svdvals(tall())), 1e-15, 0, "singular values");
    CHECK(r.rank.item<int64_t>() == 3);
  }
  CHECK(t.rank.numel() == 0);
  CHECK(t.singular_values.numel() == 0);
}

TEST_CASE("lstsq of a rank-deficient matrix: the least-norm solution, its rank, PyTorch's gradients", "[cpu]") {
  // The third column is the sum of the first two: rank 2. PyTorch 2.15 (gelsd).
  const Tensor a = f64({1, 2, 3, 2, 4, 6, 1, 0, 1, 0, 1, 1}, {4, 3}).requires_grad_(true);
  const Tensor b = f64({1, 2, 3, 4}, {4, 1}).requires_grad_(true);
  for (const char* driver : {"gelsy", "gelsd", "gelss"}) {
    INFO(driver);
    const la::LstsqResult r = la::lstsq(a, b, std::nullopt, driver);
    check_close(r.solution, {0.6666666666666667, -0.25641025641025655, 0.41025641025641013}, 1e-14, 0, "solution");
    CHECK(r.rank.item<int64_t>() == 2);
    CHECK(r.residuals.numel() == 0);  // not of full rank
    if (std::string(driver) != "gelsy") {
      check_close(r.singular_values, {8.539934920503985, 1.0341719168284527, 0}, 1e-14, 1e-14, "singular values");
    }
  }
  td::autograd::backward({(la::lstsq(a, b, std::nullopt, "gelsd").solution * f64({0.3, -0.7, 1.1}, {3, 1})).sum()});
  check_close(a.grad(),
              {-0.24398422090729732, 0.18441814595660766, -0.05069033530571999, -0.4879684418145958, 0.3688362919132151,
               -0.10138067061143996, 0.35325443786982325, -1.0502958579881656, 0.2585798816568059, 2.7013806706114405,
               -1.7672583826429995, 0.4607495069033536},
              1e-12, 1e-14, "A's gradient");
  check_close(b.grad(), {0.015384615384614869, 0.030769230769230785, 0.7230769230769233, -0.3538461538461539}, 1e-12,
              1e-14, "B's gradient");

  // rcond: singular values at or below rcond times the largest count as zero.
  const Tensor d = td::diag(f64({1, 1e-3, 1e-9}, {3}));
  const la::LstsqResult cut = la::lstsq(d, td::ones({3, 1}, td::kFloat64), 1e-5, "gelsd");
  check_close(cut.solution, {1, 1000, 0}, 1e-12, 0, "rcond");
  CHECK(cut.rank.item<int64_t>() == 2);
  // A batch: one rank per matrix.
  const Tensor batch = td::stack({a.detach(), f64({1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {4, 3})});
  const la::LstsqResult both = la::lstsq(batch, td::ones({2, 4, 1}, td::kFloat64), std::nullopt, "gelsd");
  check_equal(both.rank, {2, 3});
  CHECK(both.singular_values.sizes() == Shape{2, 3});
  CHECK(both.residuals.numel() == 0);  // one matrix is rank-deficient

  // rcond as LAPACK reads it (PyTorch 2.15): gelsd takes one outside (0, 1) as its epsilon, gelss a
  // negative one as the machine precision; gelsy keeps a rank of at least 1 (its rank-1 solution,
  // from a pivoted QR, is not the SVD's, so only the rank is compared); gelss cuts everything at 1.
  const std::vector<double> least_norm = {0.6666666666666667, -0.25641025641025655, 0.41025641025641013};
  for (const auto& [driver, r, rank] : std::vector<std::tuple<const char*, double, int64_t>>{
           {"gelsd", -1.0, 2}, {"gelsd", 0.0, 2}, {"gelsd", 1.0, 2}, {"gelss", -1.0, 2}, {"gelss", 1.0, 0},
           {"gelsy", 1.0, 1}, {"gelsy", 0.5, 1}}) {
    INFO(driver << " rcond " << r);
    const la::LstsqResult o = la::lstsq(a.detach(), b.detach(), r, driver);
    CHECK(o.rank.item<int64_t>() == rank);
    if (rank == 2) check_close(o.solution, least_norm, 1e-14, 0, "solution");
    if (rank == 0) check_equal(o.solution, {0, 0, 0});
  }
  const Tensor tiny = td::diag(f64({1, 1.5e-16, 3e-17}, {3}));
  CHECK(la::lstsq(tiny, td::ones({3, 1}, td::kFloat64), -1.0, "gelsd").rank.item<int64_t>() == 2);  // cut 2^-53
  CHECK(la::lstsq(tiny, td::ones({3, 1}, td::kFloat64), -1.0, "gelss").rank.item<int64_t>() == 1);  // cut 2^-52
  // gels does not read rcond, a NaN one included.
  check_close(la::lstsq(tall(), sine({4, 2}, 0.35), std::nan(""), "gels").solution,
              values(la::lstsq(tall(), sine({4, 2}, 0.35), std::nullopt, "gels").solution), 0, 0, "gels");

  const Snapshot before(a);
  check_error([&] { la::lstsq(a, b, std::nullopt, "foo"); }, {"linalg.lstsq", "driver", "gels, gelsy, gelsd, gelss"});
  check_error([&] { la::lstsq(a, b, std::nan(""), "gelsd"); }, {"linalg.lstsq", "rcond"});
  before.check_unchanged(a);
}

TEST_CASE("float32 in gives float32 out; a batch gives each matrix's own result; empty matrices and batches", "[cpu]") {
  // float32: the float64 results to float32's precision.
  const Tensor a32 = A().to(td::kFloat32), s32 = S().to(td::kFloat32), t32 = tall().to(td::kFloat32);
  auto check32 = [](const Tensor& got, const Tensor& want64, const std::string& what) {
    INFO(what);
    CHECK(got.dtype() == td::kFloat32);
    check_close(got, want64, kRtol32, kAtol32, what + " in float32");
  };
  check32(la::inv(a32), la::inv(A()), "inv");
  check32(la::solve(a32, sine({3, 2}, 0.4).to(td::kFloat32)), la::solve(A(), sine({3, 2}, 0.4)), "solve");
  check32(la::det(a32), la::det(A()), "det");
  check32(std::get<1>(la::slogdet(a32)), std::get<1>(la::slogdet(A())), "slogdet");
  check32(la::cholesky(s32), la::cholesky(S()), "cholesky");
  check32(std::get<0>(la::eigh(s32)), std::get<0>(la::eigh(S())), "eigh's eigenvalues");
  check32(la::svdvals(t32), la::svdvals(tall()), "svdvals");
  check32(la::pinv(t32), la::pinv(tall()), "pinv");
  check32(la::lstsq(t32, sine({4, 2}, 0.35).to(td::kFloat32)).solution, la::lstsq(tall(), sine({4, 2}, 0.35)).solution,
          "lstsq");
  auto [q32, r32] = la::qr(t32);
  CHECK(q32.dtype() == td::kFloat32);
  check32(td::matmul(q32, r32), tall(), "qr's Q R");
  auto [l32, v32] = la::eigh(s32);
  CHECK(v32.dtype() == td::kFloat32);
  check32(td::matmul(v32 * l32.unsqueeze(0), mT(v32)), S(), "eigh's V diag(L) V^T");
  auto [u32, sv32, vh32] = la::svd(t32, false);
  CHECK(u32.dtype() == td::kFloat32);
  CHECK(vh32.dtype() == td::kFloat32);
  check32(td::matmul(u32 * sv32.unsqueeze(0), vh32), tall(), "svd's U diag(S) Vh");

  // A batch: each matrix's result as when it comes alone.
  const Tensor batch_spd = td::stack({S(), spd(3, 1.1)});
  const Tensor batch_tall = td::stack({tall(), matrix({4, 3}, 0.6, 2)});
  for (int64_t i = 0; i < 2; ++i) {
    INFO("batch element " << i);
    const Tensor a = Ab().select(0, i), s = batch_spd.select(0, i), t = batch_tall.select(0, i);
    check_close(la::inv(Ab()).select(0, i), la::inv(a), kRtol, kAtol, "inv");
    check_close(la::det(Ab()).select(0, i), la::det(a), kRtol, kAtol, "det");
    check_close(std::get<1>(la::slogdet(Ab())).select(0, i), std::get<1>(la::slogdet(a)), kRtol, kAtol, "slogdet");
    check_close(la::cholesky(batch_spd).select(0, i), la::cholesky(s), kRtol, kAtol, "cholesky");
    auto [bl, bv] = la::eigh(batch_spd);
    auto [l, v] = la::eigh(s);
    check_close(bl.select(0, i), l, kRtol, kAtol, "eigh's eigenvalues");
    check_close(normalize_columns(bv.select(0, i)), normalize_columns(v), 1e-11, 1e-12, "eigh's eigenvectors");
    auto [bq, br] = la::qr(batch_tall);
    auto [q, r] = la::qr(t);
    auto [bqn, brn] = normalize_qr(bq.select(0, i), br.select(0, i));
    auto [qn, rn] = normalize_qr(q, r);
    check_close(bqn, qn, kRtol, kAtol, "qr's Q");
    check_close(brn, rn, kRtol, kAtol, "qr's R");
    auto [bu, bs, bvh] = la::svd(batch_tall, false);
    auto [u, sv, vh] = la::svd(t, false);
    check_close(bs.select(0, i), sv, kRtol, kAtol, "svd's S");
    check_close(normalize_columns(bu.select(0, i)), normalize_columns(u), 1e-11, 1e-12, "svd's U");
    check_close(normalize_columns(mT(bvh.select(0, i))), normalize_columns(mT(vh)), 1e-11, 1e-12, "svd's V");
    check_close(la::pinv(batch_tall).select(0, i), la::pinv(t), kRtol, kAtol, "pinv");
  }

  // Empty: the determinant of a 0 by 0 matrix is 1 and its inverse is 0 by 0; a batch of none.
  const Tensor none = td::zeros({0, 0}, td::kFloat64);
  check_is(la::det(none), {}, {1.0}, "det of a 0 by 0 matrix", 0, 0);
  CHECK(la::inv(none).sizes() == Shape{0, 0});
  auto [sign0, log0] = la::slogdet(none);
  check_is(sign0, {}, {1.0}, "slogdet's sign of a 0 by 0 matrix", 0, 0);
  check_is(log0, {}, {0.0}, "slogdet's logabsdet of a 0 by 0 matrix", 0, 0);
  const Tensor no_matrices = td::zeros({0, 3, 3}, td::kFloat64);
  CHECK(la::inv(no_matrices).sizes() == Shape{0, 3, 3});
  CHECK(la::det(no_matrices).sizes() == Shape{0});
  CHECK(std::get<1>(la::slogdet(no_matrices)).sizes() == Shape{0});
  CHECK(la::solve(no_matrices, td::zeros({0, 3, 2}, td::kFloat64)).sizes() == Shape{0, 3, 2});
  CHECK(la::cholesky(no_matrices).sizes() == Shape{0, 3, 3});
  auto [l0, v0] = la::eigh(no_matrices);
  CHECK(l0.sizes() == Shape{0, 3});
  CHECK(v0.sizes() == Shape{0, 3, 3});
  auto [q0, r0] = la::qr(td::zeros({0, 4, 3}, td::kFloat64));
  CHECK(q0.sizes() == Shape{0, 4, 3});
  CHECK(r0.sizes() == Shape{0, 3, 3});
  auto [u0, s0, vh0] = la::svd(td::zeros({0, 4, 3}, td::kFloat64));
  CHECK(u0.sizes() == Shape{0, 4, 4});
  CHECK(s0.sizes() == Shape{0, 3});
  CHECK(vh0.sizes() == Shape{0, 3, 3});
}

TEST_CASE("gradients of the solvers and determinants as PyTorch's; det's at a singular matrix is the cofactor matrix",
          "[cpu]") {
  const Tensor W = sine({3, 3}, 0.37), B = sine({3, 2}, 0.4), Bv = sine({2, 3}, 0.5);
  check_is(grad_of(A(), [&](const Tensor& a) { return (la::inv(a) * W).sum(); }), {3, 3},
           {0.19512678148762802, -0.0016223785307284966, -0.6502913030387292, -0.04377070239947116, -0.5224882226281572,
            -0.1789675140685705, -0.20551088137313522, -0.4043996877444849, 0.4325887649232334},
           "inv");
  auto [ga, gb] = grads_of(A(), B, [](const Tensor& a, const Tensor& b) {
    return (la::solve(a, b) * sine({3, 2}, 0.21)).sum();
  });
  check_is(ga, {3, 3},
           {-0.1084251793679541, 0.09316794381393725, 0.32744963144808964, 0.2486936621363781, -0.27632567555558085,
            -0.7633931672207326, 0.4449588878508126, -0.481401011213705, -1.3632935238925081},
           "solve's A");
  check_is(gb, {3, 2},
           {-0.20795489657334212, -0.1071421292357969, 0.3556211135137506, 0.41702906501117765, 0.6614574756041054,
            0.7105977321017761},
           "solve's B");
  std::tie(ga, gb) = grads_of(Ab(), sine({3}, 0.9), [](const Tensor& a, const Tensor& b) {
    return (la::solve(a, b) * sine({2, 3}, 0.21)).sum();
  });
  check_is(ga, {2, 3, 3},
           {-0.04790594392037353, 0.028751417948474797, 0.13212035400311523, 0.07425711632384092, -0.04456644024432395,
            -0.2047945556038607, 0.14709769005747986, -0.08828272276875393, -0.40568241209771005, 0.12562061750237474,
            -0.23386464721290623, -0.058025737354936546, 0.11951096079697489, -0.22249045770159218,
            -0.055203610363643435, 0.19630414812222047, -0.3654543438792228, -0.09067534587154209},
           "solve's A, a batch with a 1-D b");
  check_is(gb, {3}, {0.13830241872102317, 0.4300635811728146, 0.7689908666129583},
           "solve's 1-D b, summed over the batch");
  std::tie(ga, gb) = grads_of(A(), Bv, [](const Tensor& a, const Tensor& b) {
    return (la::solve(a, b, false) * sine({2, 3}, 0.21)).sum();
  });
  check_is(ga, {3, 3},
           {0.02564407291518666, -0.22251618671210488, -0.2462451375930398, 0.0881081928986247, -0.15816355086088194,
            -0.4146337305182525, 0.1199351683541954, -0.12497610262931982, -0.5001484444714305},
           "solve's A, left=false");
  check_is(gb, {2, 3},
           {-0.1265527929514792, 0.022114333862724985, 0.4496537762362356, -0.11072815214875115, 0.46220472015273467,
            0.7085139647788105},
           "solve's B, left=false");
  // solve_triangular: nothing reaches the triangle it does not read (nor the diagonal, unitriangular).
  const Tensor T = matrix({3, 3}, 0.8, 3);
  std::tie(ga, gb) = grads_of(T, B, [](const Tensor& t, const Tensor& b) {
    return (la::solve_triangular(t, b, true) * sine({3, 2}, 0.21)).sum();
  });
  check_is(ga, {3, 3},
           {0.0042470017384935175, -0.027232373148365994, -0.020273710661713615, 0.0, -0.11709167129032305,
            -0.09794897634829672, 0.0, 0.0, -0.17512190767673552},
           "solve_triangular's A, upper");
  check_is(gb, {3, 2},
           {0.0, 0.06948663328203318, 0.13861737452046072, 0.18333334170161641, 0.27259287085176376, 0.300561066135624},
           "solve_triangular's B, upper");
  std::tie(ga, gb) = grads_of(T, Bv, [](const Tensor& t, const Tensor& b) {
    return (la::solve_triangular(t, b, false, false, true) * sine({2, 3}, 0.21)).sum();
  });
  check_is(ga, {3, 3}, {0.0, 0.0, 0.0, -0.7582840498039629, 0.0, 0.0, -0.3525867264733165, -0.3829017701338878, 0.0},
           "solve_triangular's A, lower, right, unitriangular");
  check_is(gb, {2, 3},
           {0.0, 0.20845989984609956, 0.5393542331666181, 0.5891447579422695, 0.3466975279661362, 1.6731669657750916},
           "solve_triangular's B, lower, right, unitriangular");

  check_is(grad_of(A(), [](const Tensor& a) { return la::det(a); }), {3, 3},
           {1.2401404627230483, 1.02098791981623, -1.3343839784145484, -0.9649617569048178, 1.8295965974648896,
            0.3239578892308636, -0.36830003130826633, -0.7847843747273494, 2.895793400894356},
           "det");
  check_is(grad_of(Ab(),
                   [](const Tensor& a) {
                     return (la::det(a) * td::tensor({0.5, -2.0}, td::kFloat64)).sum();
                   }),
           {2, 3, 3},
           {0.6200702313615242, 0.510493959908115, -0.6671919892072742, -0.4824808784524089, 0.9147982987324448,
            0.1619789446154318, -0.18415001565413316, -0.3923921873636747, 1.447896700447178, -5.17436299203553,
            1.140103406301206, 1.0967540542090817, -0.2436410805525719, -3.4880183538999483, 1.7908717084498276,
            2.6216824324291284, -1.710242492521698, -2.560975038055718},
           "det of a batch");
  check_is(grad_of(Nd(), [](const Tensor& a) { return std::get<1>(la::slogdet(a)); }), {3, 3},
           {-0.37473711489195277, 0.2736624687586665, 0.08161375930527734, -0.21846433718353306, -0.35631534119611014,
            0.3270835431778911, -0.06896703101600865, -0.31068842316189094, -0.6658995867315651},
           "slogdet's logabsdet");
  check_is(grad_of(A(), [](const Tensor& a) { return td::logdet(a); }), {3, 3},
           {0.44670664040267966, 0.36776647263922235, -0.4806537661837767, -0.347585485274407, 0.6590325643847933,
            0.11669173346098657, -0.13266406071830505, -0.28268442326702936, 1.04308357020575},
           "logdet");
  // At a singular matrix det's gradient is the cofactor matrix (PyTorch 2.15 gives zeros there):
  // for diag(1, 2, 0), 2 at [2, 2] and zeros elsewhere.
  check_is(grad_of(td::diag(td::tensor({1.0, 2.0, 0.0}, td::kFloat64)), [](const Tensor& a) { return la::det(a); }),
           {3, 3}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0}, "det at diag(1, 2, 0)", 0, 1e-14);
  check_is(grad_of(singular(), [](const Tensor& a) { return la::det(a); }), {3, 3},
           {4.0, 4.0, -4.0, -2.0, -2.0, 2.0, 0.0, 0.0, 0.0}, "det at a singular matrix of rank 2", 0, 1e-13);
}

TEST_CASE("gradients of cholesky, qr, eigh and svd as PyTorch's, through losses blind to the vectors' signs", "[cpu]") {
  const Tensor W = sine({3, 3}, 0.37), L = la::cholesky(S());
  check_is(grad_of(S(), [&](const Tensor& a) { return (la::cholesky(a) * W).sum(); }), {3, 3},
           {0.0370516206362367, 0.23182471227108456, 0.19292148225450828, 0.23182471227108456, 0.2690328250106427,
            0.135373401145479, 0.19292148225450825, 0.135373401145479, 0.04383774382075837},
           "cholesky");
  check_is(grad_of(S(), [&](const Tensor& a) { return (la::cholesky(a, true) * W).sum(); }), {3, 3},
           {0.03455607870591929, 0.1339396987300624, 0.1502225864902942, 0.1339396987300624, 0.2927015975300758,
            0.24005059481096047, 0.15022258649029419, 0.2400505948109605, 0.04383774382075837},
           "cholesky upper");
  auto [gb, gl] = grads_of(sine({3, 2}, 0.4), L, [](const Tensor& b, const Tensor& f) {
    return (td::cholesky_solve(b, f) * sine({3, 2}, 0.21)).sum();
  });
  check_is(gb, {3, 2},
           {0.04999703833047249, 0.11219751665996122, 0.13808329303170988, 0.18600465078077816, 0.19723439420072403,
            0.2511455146479368},
           "cholesky_solve's B");
  // The factor's triangle only: PyTorch's formula also puts a gradient in the triangle that is
  // never read, which a triangular solve's gradient (and finite differences) leave at zero.
  check_is(td::tril(gl), {3, 3},
           {-0.037580175081356984, 0.0, 0.0, -0.06278987136913419, -0.24295884588795924, 0.0, -0.07759746614259383,
            -0.30650925035989174, -0.5251953856341658},
           "cholesky_solve's factor, lower triangle");
  check_is(td::tril(grad_of(L, [&](const Tensor& f) { return (td::cholesky_inverse(f) * W).sum(); })), {3, 3},
           {-0.04572496289689737, 0.0, 0.0, -0.1865751566827489, -0.23874064149153945, 0.0, -0.20215014071598914,
            -0.23839003492153538, -0.2549713509335691},
           "cholesky_inverse, lower triangle");

  // qr (reduced): Q * Q and R * R do not see the signs of Q's columns and R's rows.
  const std::vector<std::pair<Tensor, std::vector<double>>> qr_cases = {
      {tall(),
       {0.17683537050936732, 0.2930811694952021, 2.259910259956761, -0.7920213654356726, 2.22089440756753,
        -1.7739590547215158, -0.09691370006967097, 0.5854716941460204, 5.246660914241801, -0.09286437436559779,
        0.11470645442129476, -0.6801480199042802}},
      {square(),
       {0.05706611641754163, 0.2662465018911585, 2.1481340825421387, -0.7477849203216519, 2.2139317922838124,
        -1.7970095113543163, -0.265871426755701, 0.6040438915275645, 5.288397673896816}},
      {wide(),
       {0.3356719060431718, 0.12846770188277437, 0.40129787335047906, 0.515484823074096, -0.6187849295663319,
        1.8565162852017287, -0.7166822153106227, -0.13928633164089793, -1.19088706557716, 1.7937128474837363,
        3.2923654796686086, -0.5999987274355608}}};
  for (const auto& [a, want] : qr_cases) {
    const Tensor g = grad_of(a, [](const Tensor& x) {
      auto [q, r] = la::qr(x);
      return (q * q * sine(q.sizes(), 0.37)).sum() + (r * r * sine(r.sizes(), 0.23)).sum();
    });
    check_is(g, a.sizes(), want, "qr of a " + std::to_string(a.size(0)) + " by " + std::to_string(a.size(1)));
  }

  check_is(grad_of(S(),
                   [&](const Tensor& a) {
                     auto [l, v] = la::eigh(a);
                     return (l * sine({3}, 0.5)).sum() + (v * v * W).sum();
                   }),
           {3, 3},
           {0.5807070998633846, -0.008896699436096112, -0.33819873302494075, -0.008896699436096112, 0.46233247416556833,
            -0.29659174379073117, -0.33819873302494075, -0.2965917437907312, 0.277856949383148},
           "eigh");
  check_is(grad_of(S(),
                   [&](const Tensor& a) {
                     auto [l, v] = la::eigh(a);
                     return (td::matmul(v * l.unsqueeze(0), mT(v)) * W).sum();
                   }),
           {3, 3},
           {7.771561172376096e-16, 0.6286570588225062, 0.7354266919321177, 0.6286570588225066, 0.9958808445376419,
            0.74265977233129, 0.735426691932118, 0.7426597723312898, 0.18059626789423322},
           "eigh through V diag(L) V^T");
  check_is(grad_of(S(), [](const Tensor& a) { return (la::eigvalsh(a) * sine({3}, 0.5)).sum(); }), {3, 3},
           {0.3536434028916978, -0.011677306579846669, -0.34833718586106865, -0.011677306579846669, 0.5173898555671617,
            -0.2234268113357798, -0.34833718586106865, -0.22342681133577974, 0.4498632649532415},
           "eigvalsh");

  // svd (reduced): U Vh, U * U and Vh * Vh do not see the signs of the singular vectors.
  const std::vector<std::pair<Tensor, std::vector<double>>> svd_cases = {
      {tall(),
       {0.3995204593424212, -0.16793884827271718, 0.29153707589728106, -0.08161326345892372, 0.7738033879375512,
        0.3328069908306149, 0.21623394555495806, 0.3056618755465932, 0.17836336300031924, 0.2584168442450221,
        -0.44134252486706205, -0.20712672700587154}},
      {wide(),
       {-0.12915937852786544, -0.056364360484442586, 0.18297185183775688, 0.7050384195871705, 0.12263789373254315,
        1.0403405821248315, -0.06500216218199559, 0.4530858444529245, -0.12546882997952263, -0.12517682147645948,
        0.1805405391345647, -0.643705775565173}}};
  for (const auto& [a, want] : svd_cases) {
    const Tensor g = grad_of(a, [](const Tensor& x) {
      auto [u, s, vh] = la::svd(x, false);
      return (s * sine({3}, 0.5)).sum() + (td::matmul(u, vh) * sine(x.sizes(), 0.37)).sum() +
             (u * u * sine(u.sizes(), 0.23)).sum() + (vh * vh * sine(vh.sizes(), 0.29)).sum();
    });
    check_is(g, a.sizes(), want, "svd of a " + std::to_string(a.size(0)) + " by " + std::to_string(a.size(1)), 1e-11,
             1e-12);
  }
  check_is(grad_of(tall(), [](const Tensor& a) { return (la::svdvals(a) * sine({3}, 0.5)).sum(); }), {4, 3},
           {0.4669600353201654, -0.006277332317567247, 0.16658132412006124, -0.2837441065156979, 0.674627507009514,
            0.06776068100344514, -0.09818403418571606, 0.3258836629476415, 0.046734044835093164, 0.17289296237659557,
            -0.03142417936023288, 0.05434661388474108},
           "svdvals");
}

TEST_CASE("gradients of pinv, matrix_power, the norms, cond and lstsq as PyTorch's", "[cpu]") {
  check_is(grad_of(tall(),
                   [](const Tensor& a) {
                     return (la::pinv(a) * sine({3, 4}, 0.37)).sum();
                   }),
           {4, 3},
           {-0.04870931615840653, -0.054169725468739015, -0.006225776749884292, -0.08885165330831368, -0.4347713410235,
            -0.1548536278349091, -0.010506041963143503, -0.07104213831396114, -0.03510101157601947, 0.19459314468911446,
            -0.14906882670117003, -0.09247886919376516},
           "pinv of a tall matrix");
  check_is(grad_of(wide(),
                   [](const Tensor& a) {
                     return (la::pinv(a) * sine({4, 3}, 0.37)).sum();
                   }),
           {3, 4},
           {0.03599103946350205, -0.07411391368339969, -0.026466777526939246, 0.22528220262881643, 0.09351452995591605,
            -0.5599900241672547, -0.09146706478369847, -0.2800289003603688, -0.03161260817537477, -0.40642089504161916,
            0.006964508296185848, -0.30018806851545826},
           "pinv of a wide matrix");
  check_is(grad_of(A(),
                   [](const Tensor& a) {
                     return (la::matrix_power(a, -2) * sine({3, 3}, 0.37)).sum();
                   }),
           {3, 3},
           {0.34384524045902004, 0.2560169648802214, -1.3365190283144754, 0.0651482398752504, -0.7008057601124449,
            -0.06804364572720588, -0.2365066351328089, -0.7382868375875974, 1.0909035586527271},
           "matrix_power -2");
  check_is(grad_of(tall(), [](const Tensor& a) { return la::matrix_norm(a, "nuc"); }), {4, 3},
           {0.8513701044841566, 0.1720815165906741, 0.3672877473193396, -0.10710157220523558, 0.9545295984241655,
            -0.26766868367710694, -0.3339821781078389, 0.22900367081324774, 0.8827298508120007, 0.3900693568176644,
            0.08257430674314965, -0.11933648617699646},
           "matrix_norm nuc");
  check_is(grad_of(tall(), [](const Tensor& a) { return la::matrix_norm(a, 2.0); }), {4, 3},
           {-0.005234286963933883, -0.003661402849210143, 0.014534756497531533, 0.14172281477083, 0.0991356265667961,
            -0.39354101466585145, -0.2853210927321754, -0.1995831464853814, 0.7922898830435936, 0.08469541010567962,
            0.05924474871413909, -0.23518526416813673},
           "matrix_norm 2");
  check_is(grad_of(tall(), [](const Tensor& a) { return la::matrix_norm(a, -2.0); }), {4, 3},
           {0.15545565941954628, -0.25005970127566063, -0.007008701602339569, -0.4542284469980979, 0.7306535522177975,
            0.02047884043714331, -0.20675489197648642, 0.3325775768985675, 0.009321521957436974, 0.07316455372182182,
            -0.11768954900683014, -0.003298615996479549},
           "matrix_norm -2");
  check_is(grad_of(A(), [](const Tensor& a) { return la::cond(a); }), {3, 3},
           {0.28808332500024936, -0.4469966525315301, 2.4779364011588494, -0.07645044957463544, -0.06470032394422268,
            0.09907069994973404, 1.5446009989024851, 1.5368375548772641, -2.9494298920480673},
           "cond");
  auto [ga, gb] = grads_of(tall(), sine({4, 2}, 0.35), [](const Tensor& a, const Tensor& b) {
    const la::LstsqResult r = la::lstsq(a, b, std::nullopt, "gels");
    return (r.solution * sine({3, 2}, 0.3)).sum() + (r.residuals * sine({2}, 0.8)).sum();
  });
  check_is(ga, {4, 3},
           {0.06462262275540777, -0.17755701167677385, -0.06370578203512858, 0.12283344515598768, -0.4917460063871258,
            -0.15993939749110536, 0.1350681741901098, -0.6339470866082557, -0.19955258606075948, -0.032973798334510834,
            -0.16220537967712612, -0.03358805774958523},
           "lstsq's A, tall: solution and residuals");
  check_is(gb, {4, 2},
           {0.10653880099717754, -0.07955081467661423, 0.3151213964135198, 0.3157467310371941, 0.40025855446711395,
            0.6316772267934125, -0.03964218356567603, 0.8328943714540142},
           "lstsq's B, tall: solution and residuals");
  std::tie(ga, gb) = grads_of(matrix({2, 4}, 0.6, 2), sine({2, 2}, 0.45), [](const Tensor& a, const Tensor& b) {
    return (la::lstsq(a, b).solution * sine({4, 2}, 0.3)).sum();
  });
  check_is(ga, {2, 4},
           {-0.09888169995567159, -0.2582829593502151, 0.05322569099842315, 0.09928243297313478, -0.18817980528837056,
            0.16992059853356786, 0.1580956170785948, 0.12963885291037533},
           "lstsq's A, wide");
  check_is(gb, {2, 2}, {0.36675544541076677, 0.45361419909037515, -0.08814936154662709, 0.015668918090290057},
           "lstsq's B, wide");
}

TEST_CASE("qr's backward refuses mode='r' and mode='complete' on a tall matrix, as PyTorch's", "[cpu]") {
  Tensor x = tall().requires_grad_();
  auto [q_none, r] = la::qr(x, "r");
  check_error([&] { r.sum().backward(); }, {"qr", "mode='r'"});
  auto [q, r_complete] = la::qr(x, "complete");
  check_error([&] { (q.sum() + r_complete.sum()).backward(); }, {"qr", "complete"});
  // Complete on a wide (or square) matrix is the reduced form: differentiable.
  Tensor w = wide().requires_grad_();
  auto [qw, rw] = la::qr(w, "complete");
  ((qw * qw).sum() + (rw * rw).sum()).backward();
  CHECK(w.grad().defined());
}

TEST_CASE("linalg errors name the op, the shapes and the dtypes, and leave the inputs unchanged", "[cpu]") {
  const Tensor rect = sine({2, 3}, 0.5), vec = sine({3}, 0.5);
  const Snapshot rect_before(rect), vec_before(vec);
  check_error([&] { la::inv(rect); }, {"linalg.inv", "square", "2 by 3"});
  check_error([&] { la::det(rect); }, {"linalg.det", "square", "2 by 3"});
  check_error([&] { la::cholesky(rect); }, {"linalg.cholesky", "square", "2 by 3"});
  check_error([&] { la::inv(vec); }, {"linalg.inv", "2 dimensions"});
  check_error([&] { la::det(vec); }, {"linalg.det", "2 dimensions"});
  rect_before.check_unchanged(rect);
  vec_before.check_unchanged(vec);
  check_error([] { la::inv(td::tensor({{1, 2}, {3, 4}})); }, {"linalg.inv", "floating point", "int64"});
  check_error([] { la::inv(identity(3, td::kFloat16)); }, {"linalg.inv", "Low precision", "float16"});
  check_error([] { la::inv(identity(3, td::kBFloat16)); }, {"linalg.inv", "Low precision", "bfloat16"});

  const Tensor a = A(), b = sine({4, 2}, 0.5);
  const Snapshot a_before(a), b_before(b);
  check_error([&] { la::solve(a, b); }, {"linalg.solve", "shapes"});
  check_error([&] { la::solve(a, b.to(td::kFloat32).narrow(0, 0, 3)); }, {"linalg.solve", "float64", "float32"});
  check_error([&] { la::solve(a, b.narrow(0, 0, 3).to(td::Device("cpu:1"))); }, {"linalg.solve", "cpu:0", "cpu:1"});
  check_error([&] { la::qr(a, "bogus"); }, {"qr", "bogus"});
  check_error([&] { la::eigh(a, "upper"); }, {"eigh", "upper"});
  check_error([&] { la::eigvalsh(a, "upper"); }, {"eigvalsh", "upper"});
  check_error([&] { la::multi_dot({a}); }, {"multi_dot", "at least 2"});
  check_error([&] { la::matrix_norm(a, "spectral"); }, {"matrix_norm", "spectral"});
  a_before.check_unchanged(a);
  b_before.check_unchanged(b);
}

TEST_CASE("singular and non-positive-definite inputs are errors naming the element; the inputs stay unchanged",
          "[cpu]") {
  const Tensor z = td::diag(td::tensor({1.0, 2.0, 0.0}, td::kFloat64));
  const Tensor batch = td::stack({A(), z});
  const Snapshot z_before(z), batch_before(batch);
  check_error([&] { la::inv(z); }, {"linalg.inv", "singular"});
  check_error([&] { la::inv(batch); }, {"linalg.inv", "Batch element 1", "singular"});
  check_error([&] { la::inv(singular()); }, {"linalg.inv", "singular"});
  check_error([&] { la::solve(z, sine({3, 2}, 0.4)); }, {"linalg.solve", "singular"});
  check_error([&] { la::solve(batch, sine({3, 2}, 0.4)); }, {"linalg.solve", "Batch element 1", "singular"});
  check_error([&] { la::matrix_power(z, -1); }, {"singular"});
  z_before.check_unchanged(z);
  batch_before.check_unchanged(batch);
  // Leading minor of order 2: 1 - 4 < 0.
  const Tensor not_pd = td::tensor({{1.0, 2.0}, {2.0, 1.0}}, td::kFloat64);
  const Snapshot not_pd_before(not_pd);
  check_error([&] { la::cholesky(not_pd); }, {"linalg.cholesky", "positive-definite", "order 2"});
  check_error(
      [&] {
        la::cholesky(td::stack({identity(2), not_pd}));
      },
      {"linalg.cholesky", "Batch element 1", "positive-definite", "order 2"});
  not_pd_before.check_unchanged(not_pd);
}

TEST_CASE("the _ex forms return LAPACK's info per matrix instead of raising, as PyTorch's", "[cpu]") {
  // PyTorch 2.15: a positive-definite matrix, one whose second leading minor is negative, and an
  // indefinite diagonal one.
  const Tensor a = f64({4, 2, 0, 2, 3, 1, 0, 1, 2, 1, 2, 3, 2, 1, 0, 3, 0, 1, 1, 0, 0, 0, -1, 0, 0, 0, 1}, {3, 3, 3});
  const auto [l, cholesky_info] = la::cholesky_ex(a);
  CHECK(cholesky_info.dtype() == td::kInt32);
  check_equal(cholesky_info, {0, 2, 2});
  check_close(l.select(0, 0), values(la::cholesky(a.select(0, 0))), 0, 0, "the positive-definite one's factor");
  const Snapshot before(a);
  check_error([&] { la::cholesky_ex(a, false, true); },
              {"linalg.cholesky_ex", "(Batch element 1)", "leading minor of order 2 is not positive-definite"});
  before.check_unchanged(a);

  // A singular matrix and a regular one.
  const Tensor s = f64({1, 2, 2, 4, 2, 1, 1, 3}, {2, 2, 2});
  const auto [inverse, inv_info] = la::inv_ex(s);
  check_equal(inv_info, {2, 0});
  check_close(inverse.select(0, 1), {0.6, -0.2, -0.2, 0.4}, 1e-15, 1e-16, "the regular one's inverse");
  check_error([&] { la::inv_ex(s, true); }, {"linalg.inv_ex", "(Batch element 0)", "singular"});
  const auto [x, solve_info] = la::solve_ex(s, td::ones({2, 2, 1}, td::kFloat64));
  check_equal(solve_info, {2, 0});
  check_close(x.select(0, 1), {0.4, 0.2}, 1e-15, 1e-16, "the regular one's solution");
  // info has A's batch shape, B broadcasting or not, as PyTorch's.
  CHECK(std::get<1>(la::solve_ex(s.select(0, 1), td::ones({3, 2, 1}, td::kFloat64))).dim() == 0);
  check_equal(std::get<1>(la::solve_ex(s, td::ones({2, 1, 2}, td::kFloat64), false)), {2, 0});  // X A = B
  const auto [lu, pivots, lu_info] = la::lu_factor_ex(s);
  check_equal(lu_info, {2, 0});
  check_equal(pivots, {2, 2, 1, 2});
  CHECK(std::get<2>(la::lu_factor_ex(td::zeros({2, 2}, td::kFloat64))).item<int32_t>() == 1);
  check_error([&] { la::lu_factor_ex(s, true, true); }, {"linalg.lu_factor_ex: (Batch element 0)", "U[2,2] is zero"});
  check_error([&] { la::lu_factor_ex(s, false); }, {"linalg.lu_factor_ex", "pivot = false", "always pivots"});

  // X A = B with a matrix A whose transpose factors without a zero pivot: info and X are A's own
  // LU's, as PyTorch's (x = [inf, -inf], info 2), and check_errors raises.
  const Tensor lean = f64({0.1, 0.3, 0.03, 0.09}, {2, 2});
  const auto [lean_x, lean_info] = la::solve_ex(lean, td::ones({1, 2}, td::kFloat64), false);
  CHECK(lean_info.item<int32_t>() == 2);
  check_equal(lean_x, {kInf, -kInf});
  check_error([&] { la::solve_ex(lean, td::ones({1, 2}, td::kFloat64), false, true); },
              {"linalg.solve_ex", "singular"});
  // The batch element named is A's, B broadcasting over more.
  const Tensor pair = td::stack({s.select(0, 1), s.select(0, 0)}).unsqueeze(1);  // [2, 1, 2, 2], the second singular
  check_error([&] { la::solve_ex(pair, td::ones({2, 3, 2, 1}, td::kFloat64), true, true); },
              {"linalg.solve_ex: (Batch element 1)", "singular"});

  // A failed matrix leaves the others' gradients right, as PyTorch's: the backward does not raise.
  const Tensor mixed = s.clone().requires_grad_(true);
  td::autograd::backward({std::get<0>(la::inv_ex(mixed)).select(0, 1).sum()});
  check_close(mixed.grad().select(0, 1), {-0.16, -0.08, -0.08, -0.04}, 1e-14, 1e-15, "inv_ex's gradient");
  mixed.grad().zero_();
  td::autograd::backward({std::get<0>(la::solve_ex(mixed, td::ones({2, 2, 1}, td::kFloat64))).select(0, 1).sum()});
  CHECK(std::isfinite(mixed.grad().select(0, 1).sum().item<double>()));

  // Where nothing fails, the results and gradients are the checked forms'.
  const Tensor spd = f64({4, 2, 0, 2, 3, 1, 0, 1, 2}, {3, 3}).requires_grad_(true);
  td::autograd::backward({(std::get<0>(la::cholesky_ex(spd, true)) * sine({3, 3}, 0.4)).sum()});
  const Tensor ex_grad = spd.grad().clone();
  spd.grad().zero_();
  td::autograd::backward({(la::cholesky(spd, true) * sine({3, 3}, 0.4)).sum()});
  check_equal(ex_grad, values(spd.grad()));
  const auto [inv_ok, ok_info] = la::inv_ex(spd.detach());
  check_equal(ok_info, {0});
  check_equal(inv_ok, values(la::inv(spd.detach())));
}
