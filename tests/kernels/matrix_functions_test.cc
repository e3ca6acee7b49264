// matrix_exp, vander, tensorinv, tensorsolve and linalg::norm against PyTorch 2.15, and the edges
// of the factorizations' compositions that a review found: tolerances with atol, lstsq's residuals
// for a vector, non-finite input to the SVD, solve's XA = B with a vector, cond of no matrix,
// slogdet's gradient at a singular matrix, qr's refused Q, matrix_power's 0; the LU decomposition.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "autograd/linalg.h"
#include "tests/testing.h"

namespace td = tandem;
namespace la = tandem::linalg;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::sine_ramp;
using td::testing::values;

namespace {

Tensor f64(std::initializer_list<double> v, const Shape& shape) {
  return td::tensor(std::vector<double>(v), td::kFloat64).view(shape);
}

Tensor eye(int64_t n) { return td::eye(n, n, td::TensorOptions(td::kFloat64)); }

}  // namespace

TEST_CASE("matrix_exp as PyTorch's: values, a batch of small and large norms, float32, gradients", "[cpu]") {
  const Tensor a = f64({1, 2, 3, 4}, {2, 2});
  check_close(la::matrix_exp(a), {51.96895619870503, 74.73656456700323, 112.10484685050488, 164.07380304920986}, 1e-14,
              0, "exp of [[1, 2], [3, 4]]");
  const Tensor batch = td::stack({sine_ramp({3, 3}, 0.7) * 0.1, sine_ramp({3, 3}, 1.3) * 9});
  check_close(la::matrix_exp(batch),
              {0.9985005293795208, 0.060723098916166146, 0.09438664620794471, 0.08930307028143131, 1.0385289591506617,
               -0.030365923500257564, -0.08866914370029677, -0.09962548879916344, 0.93627359017542, 0.8175696295462361,
               1.187274023155945, 0.8176191913549965, -0.437810541432056, -0.6351000693477411, -0.4369641650369492,
               0.8180720007435293, 1.1866698987228839, 0.8167936150013283},
              1e-13, 1e-15, "a batch: one norm below theta, one far above");
  const Tensor single = la::matrix_exp(a.to(td::kFloat32));
  CHECK(single.dtype() == td::kFloat32);
  check_close(single, {51.968955993652344, 74.73655700683594, 112.10485076904297, 164.0738067626953}, 1e-6, 0,
              "float32");
  check_close(la::matrix_exp(td::zeros({3, 3}, td::kFloat64)), values(eye(3)), 0, 1e-15, "exp(0) = I");
  CHECK(la::matrix_exp(td::zeros({0, 2, 2}, td::kFloat64)).sizes() == Shape{0, 2, 2});

  Tensor x = sine_ramp({3, 3}, 0.9).requires_grad_(true);
  (la::matrix_exp(x * 3) * sine_ramp({3, 3}, 0.4)).sum().backward();
  check_close(x.grad(),
              {7.187791366843699, -1.8347127737082856, 7.151312097642174, 6.817705814471417, 2.9666333571204557,
               0.637578031492434, -1.6342610878918002, 2.677119952312777, -3.9663376771310372},
              1e-12, 1e-14, "gradient");
  const Tensor rect = sine_ramp({2, 3}, 0.5);
  check_error([&] { la::matrix_exp(rect); }, {"linalg.matrix_exp", "square", "2 by 3"});
}

TEST_CASE("vander, tensorinv and tensorsolve as PyTorch's", "[cpu]") {
  check_close(la::vander(f64({1.5, -2, 3}, {3}), 4), {1, 1.5, 2.25, 3.375, 1, -2, 4, -8, 1, 3, 9, 27}, 0, 0, "vander");
  CHECK(la::vander(td::arange(3)).dtype() == td::kInt64);
  Tensor v = f64({0.5, 2, -1}, {3}).requires_grad_(true);
  la::vander(v).sum().backward();
  check_close(v.grad(), {2.0, 5.0, -1.0}, 0, 0, "vander's gradient");
  check_error([] { la::vander(td::ones({}, td::kFloat64)); }, {"linalg.vander", "one dimension"});

  const Tensor square = sine_ramp({6, 6}, 0.37) + eye(6) * 3;
  const Tensor inverse = la::tensorinv(square.view({6, 2, 3}), 1);
  CHECK(inverse.sizes() == Shape{2, 3, 6});
  check_close(inverse.reshape({-1}).narrow(0, 0, 6),
              {0.31709696360820244, -0.05889944111593609, -0.09359074946146835, -0.11561498892144435,
               -0.12199128200533416, -0.11185662735677644},
              1e-14, 1e-15, "tensorinv");
  check_error([&] { la::tensorinv(square.view({6, 2, 3}), 2); }, {"linalg.tensorinv", "prod"});

  const std::vector<double> solution{-0.40018660265323286, 0.3431961292942832, 0.45894213093379355,
                                     -0.06665617270860093, 0.6072668604730145, 0.2308746466399768};
  const Tensor x = la::tensorsolve(square.view({2, 3, 6}), sine_ramp({2, 3}, 0.5));
  CHECK(x.sizes() == Shape{6});
  check_close(x, solution, 1e-14, 1e-15, "tensorsolve");
  const Tensor moved = square.view({6, 2, 3}).permute({1, 0, 2});
  check_close(la::tensorsolve(moved, sine_ramp({6}, 0.5), std::vector<int64_t>{0}).reshape({-1}),
              {-0.40018660265323286, -0.06665617270860087, 0.34319612929428317, 0.6072668604730144, 0.4589421309337936,
               0.23087464663997675},
              1e-14, 1e-15, "tensorsolve with dims");
  check_error([&] { la::tensorsolve(square, sine_ramp({3}, 0.5)); }, {"linalg.tensorsolve", "shape"});
}

TEST_CASE("linalg::norm picks the vector or the matrix norm as PyTorch's", "[cpu]") {
  const Tensor t = sine_ramp({2, 3, 4}, 0.8);
  check_close(la::norm(t), {3.432853645159917}, 1e-15, 0, "every element");
  CHECK(la::norm(t, std::nullopt, std::nullopt, true).sizes() == Shape{1, 1, 1});
  check_close(la::norm(t, 3, std::vector<int64_t>{1}),
              {0.12123909869806332, 1.092105514161478, 1.43511081885227, 0.9125225907483883, 0.3464116866133324,
               1.2387161737813106, 1.3913662763096168, 0.7058191807378966},
              1e-14, 0, "ord 3 over one dim");
  check_close(la::norm(t, std::nullopt, std::vector<int64_t>{0, 2}),
              {1.9830238698755278, 1.9818762581623859, 1.980976268894677}, 1e-14, 0, "Frobenius over two dims");
  check_close(la::norm(t.select(0, 0), std::numeric_limits<double>::infinity()), {2.48449250821479}, 1e-15, 0,
              "inf of a matrix: its largest row sum");
  check_close(la::norm(t.select(0, 0).select(0, 0), 1), {2.3923928744921783}, 1e-15, 0, "1 of a vector");
  check_close(la::norm(t, "nuc", std::vector<int64_t>{1, 2}), {2.544135646284899, 2.5405149868053054}, 1e-14, 0,
              "nuclear over two dims");
  check_error([&] { la::norm(t, 2); }, {"linalg.norm", "1D or 2D", "3D"});
  check_error([&] { la::norm(t, "fro"); }, {"linalg.norm", "fro"});
}

TEST_CASE("pinv and matrix_rank: an atol that is not positive leaves the default rtol, as PyTorch's", "[cpu]") {
  const Tensor d = td::diag(f64({1, 1e-17}, {2}));
  CHECK(la::matrix_rank(d, 0.0).item<int64_t>() == 1);
  CHECK(la::matrix_rank(d, -1.0).item<int64_t>() == 1);
  CHECK(la::matrix_rank(d, 0.5).item<int64_t>() == 1);
  CHECK(la::matrix_rank(d, 0.0, 0.0).item<int64_t>() == 2);
  check_close(la::pinv(d, 0.0), {1.0, 0.0, 0.0, 0.0}, 0, 0, "pinv with atol 0");
}

TEST_CASE("lstsq keeps a vector's residuals as [*, 1]; bad batches are lstsq's errors", "[cpu]") {
  const Tensor a = sine_ramp({4, 2}, 0.6) + f64({1, 0, 0, 1, 0, 0, 1, 1}, {4, 2});
  const la::LstsqResult r = la::lstsq(a, sine_ramp({4}, 0.3), std::nullopt, "gels");
  CHECK(r.solution.sizes() == Shape{2});
  CHECK(r.residuals.sizes() == Shape{1});
  check_close(r.residuals, {0.5133335067226218}, 1e-13, 0, "residual of a vector");
  const Tensor batch = sine_ramp({3, 4, 2}, 0.6) + f64({1, 0, 0, 1, 0, 0, 1, 1}, {4, 2});
  CHECK(la::lstsq(batch, sine_ramp({3, 4}, 0.3), std::nullopt, "gelsd").residuals.sizes() == Shape{3, 1});
  check_error([&] { la::lstsq(batch, sine_ramp({2, 4, 1}, 0.3)); }, {"linalg.lstsq", "[3]", "[2]"});
}

TEST_CASE("the SVD of a non-finite matrix, solve's XA = B with a vector and cond of no matrix as PyTorch's", "[cpu]") {
  Tensor bad = eye(3);
  bad.select(0, 1).select(0, 2).fill_(std::numeric_limits<double>::quiet_NaN());
  check_error([&] { la::svd(bad); }, {"linalg.svd", "non-finite"});
  check_error([&] { la::svdvals(td::stack({eye(3), bad})); }, {"linalg.svdvals", "Batch element 1", "non-finite"});
  check_error([&] { la::solve(eye(3) * 2, td::ones({3}, td::kFloat64), false); }, {"linalg.solve", "XA = B"});
  check_close(la::cond(td::zeros({0, 0}, td::kFloat64)), {0.0}, 0, 0, "cond of a 0 x 0 matrix");
  CHECK(la::cond(td::zeros({2, 0, 0}, td::kFloat64)).sizes() == Shape{2});
  check_error([] { td::cholesky_solve(td::ones({3}, td::kFloat64), eye(3)); },
              {"cholesky_solve", "at least 2 dimensions"});
}

TEST_CASE(
    "slogdet's gradient at a singular matrix is infinite, not an error; qr's Q and matrix_power(A, 0) "
    "stay in the graph",
    "[cpu]") {
  Tensor s = f64({1, 2, 2, 4}, {2, 2}).requires_grad_(true);
  std::get<1>(la::slogdet(s)).backward();
  const std::vector<double> grad = values(s.grad());
  CHECK(std::none_of(grad.begin(), grad.end(), [](double g) { return std::isfinite(g); }));

  Tensor tall = sine_ramp({4, 2}, 0.7).requires_grad_(true);
  auto [q, r] = la::qr(tall, "complete");
  CHECK(q.requires_grad());
  check_error([&] { q.sum().backward(); }, {"linalg.qr", "complete"});

  Tensor m = sine_ramp({3, 3}, 0.4).requires_grad_(true);
  const Tensor id = la::matrix_power(m, 0);
  CHECK(id.requires_grad());
  id.sum().backward();
  check_close(m.grad(), std::vector<double>(9, 0.0), 0, 0, "matrix_power(A, 0)'s gradient");
}

TEST_CASE("lu_factor, lu, lu_unpack and lu_solve as PyTorch's: square, wide and tall, with gradients", "[cpu]") {
  struct Case {
    std::string name;
    Shape shape;
    std::vector<double> lu, pivots, grad;
  };
  const std::vector<Case> cases{
      {"square",
       {4, 4},
       {1.0, 0.6961352386273567, 0.9995258306054791, 0.7390052780594708, -0.12287399510655005, 0.6881844863265671,
        2.1109839658956884, 0.9069899994398224, 0.06155371742991315, 0.44541130649362315, -1.997515829839923,
        -1.2285447953234314, 0.183728278586583, -0.9885201251693939, -0.4637035911148847, 0.3409181496460336},
       {1.0, 3.0, 3.0, 4.0},
       {-0.22959164740354024, 0.6462513305958478, 0.5684732197850544, 1.0498850394007848, 0.7522208837238322,
        -0.20404820839491022, 0.5424497844582314, -0.7279975732524165, 0.43287517017152166, -1.9990944814819005,
        1.7846073641336861, 0.1634464446043573, 1.2871113747026415, -3.125645645535696, 1.0801493273336509,
        -0.9980544387588794}},
      {"wide",
       {3, 5},
       {1.0, 0.6961352386273567, 0.9995258306054791, 0.7390052780594708, 0.06155371742991315, -0.6506251370651673,
        0.45718791198557157, -0.12875604209353753, 0.3579414152227752, 0.6426959642616802, 0.9881682338770004,
        0.28059958687170555, 0.23215749606140748, -1.383084239188302, -1.21801936062944},
       {1.0, 2.0, 3.0},
       {-1.0850991541862665, -0.45629773577179955, 1.7583410914191848, 2.1099163711324644, 2.260347288342594,
        -1.0673265922257285, 0.626525735882963, 0.97918627505971, 0.8321387097709134, 0.6057609811727408,
        0.3953473006244518, 1.1829865856064925, -0.5466910470692868, -0.7760683270883323, -0.9314607937532425}},
      {"tall",
       {5, 3},
       {1.0, 0.6961352386273567, 0.9995258306054791, 0.183728278586583, -0.6802842145631732, -1.1604948705921885,
        0.7390052780594708, -0.8042316580760547, -2.3225867154045052, 0.6026475684219723, -0.8358918417510456,
        0.3255958249376951, -0.9957351730622453, 0.12628005836829034, -0.869262007491696},
       {1.0, 5.0, 5.0},
       {-2.987399815235585, 3.2670491984144907, -0.10133757003309819, 1.9775584201677316, -2.793219084810643,
        0.9258100878631301, -1.2654421331351597, 0.4566593674850939, 0.40104457137180255, 0.4084101391465911,
        -0.2559041637096058, 0.1141813754952036, 0.10777375426278768, -1.5721863907928328, 1.7891488945902965}},
  };
  for (const Case& c : cases) {
    Tensor a = (sine_ramp(c.shape, 0.77) + td::eye(c.shape[0], c.shape[1], td::TensorOptions(td::kFloat64)))
                   .requires_grad_(true);
    auto [lu, pivots] = la::lu_factor(a);
    check_close(lu, c.lu, 1e-14, 1e-15, c.name + ": LU");
    CHECK(pivots.dtype() == td::kInt32);
    check_close(pivots.to(td::kFloat64), c.pivots, 0, 0, c.name + ": pivots");
    (lu * sine_ramp(c.shape, 0.31)).sum().backward();
    check_close(a.grad(), c.grad, 1e-13, 1e-14, c.name + ": gradient");
    auto [p, l, u] = la::lu(a.detach());
    check_close(td::matmul(p, td::matmul(l, u)), values(a), 1e-14, 1e-15, c.name + ": P L U");
    auto [pu, lu_l, lu_u] = la::lu_unpack(lu.detach(), pivots);
    check_close(pu, p, 0, 0, c.name + ": lu_unpack's P");
    check_close(lu_l, l, 0, 0, c.name + ": lu_unpack's L");
    check_close(lu_u, u, 0, 0, c.name + ": lu_unpack's U");
  }

  const Tensor a = sine_ramp({4, 4}, 0.77) + eye(4);
  auto [lu, pivots] = la::lu_factor(a);
  const Tensor b = sine_ramp({4, 2}, 0.5);
  check_close(la::lu_solve(lu, pivots, b),
              {-3.0634103218154327, -1.3689979353830952, 4.063836990815322, 2.866199897482403, -2.459803582693247,
               -1.2834272228695505, 3.644178854393254, 1.5371735751914803},
              1e-14, 1e-15, "lu_solve");
  check_close(la::lu_solve(lu, pivots, b, true, true),
              {0.03233872502120051, 0.6230139965931389, 0.9191081109124679, 0.41415700313643156, 0.9884317441812852,
               -0.38268543852645676, 0.17710562347922834, -1.1762122385021057},
              1e-14, 1e-15, "lu_solve adjoint");
  check_close(la::lu_solve(lu, pivots, b.transpose(0, 1), false),
              {0.03233872502120051, 0.9191081109124679, 0.9884317441812852, 0.17710562347922834, 0.6230139965931389,
               0.41415700313643156, -0.38268543852645676, -1.1762122385021057},
              1e-14, 1e-15, "lu_solve XA = B");
  check_close(la::lu_solve(lu, pivots, b.transpose(0, 1), false, true),
              {-3.0634103218154327, 4.063836990815322, -2.459803582693247, 3.644178854393254, -1.3689979353830952,
               2.866199897482403, -1.2834272228695505, 1.5371735751914803},
              1e-14, 1e-15, "lu_solve XA^T = B");
  Tensor lu_leaf = lu.detach().requires_grad_(true), b_leaf = b.detach().requires_grad_(true);
  (la::lu_solve(lu_leaf, pivots, b_leaf) * sine_ramp({4, 2}, 0.2)).sum().backward();
  check_close(lu_leaf.grad(),
              {0.27197790368238, -0.5694260155577021, 0.2549776274916575, -0.3053892454991431, -0.9799526215032447,
               -4.07523477241423, 2.187017105828971, -3.0144116933979865, -0.6067047305786961, -1.9300675865376757,
               1.014806934968139, -1.3821959704795395, -0.964243051465461, -3.2219632348681806, -2.2698539082946034,
               -10.70546862410745},
              1e-13, 1e-14, "lu_solve's gradient in LU");
  check_close(b_leaf.grad(),
              {-0.20099675477154472, 0.002407458327948475, 1.2077051670187144, 1.2654827115490184, 2.093266530193897,
               2.0440142266018473, 2.0893138308541848, 2.0112467397392964},
              1e-13, 1e-14, "lu_solve's gradient in B");
  // A batch of B against one factorization broadcasts.
  const Tensor bs = td::stack({b, b * 2});
  check_close(la::lu_solve(lu, pivots, bs).select(0, 1), la::lu_solve(lu, pivots, b) * 2, 1e-14, 1e-15,
              "lu_solve over a batch of B");

  // A zero on U's diagonal: lu_factor refuses it, lu gives the factors.
  const Tensor singular = f64({1, 2, 2, 4}, {2, 2});
  const std::vector<double> before = values(singular);
  check_error([&] { la::lu_factor(singular); }, {"linalg.lu_factor", "U[2,2] is zero"});
  check_error([&] { la::lu_factor(td::stack({eye(2), singular})); }, {"linalg.lu_factor", "Batch element 1"});
  CHECK(values(singular) == before);
  auto [sp, sl, su] = la::lu(singular);
  check_close(td::matmul(sp, td::matmul(sl, su)), before, 0, 1e-15, "lu of a singular matrix");
  check_error([&] { la::lu_unpack(lu, pivots.to(td::kInt64)); }, {"lu_unpack", "int32"});
  check_error([&] { la::lu_unpack(lu, pivots.narrow(0, 0, 3)); }, {"lu_unpack", "[3]", "[4, 4]"});
  check_error([&] { la::lu_solve(lu, pivots, sine_ramp({3, 2}, 0.5)); }, {"linalg.lu_solve", "AX = B"});
  check_error([&] { la::lu_solve(lu, pivots, b.to(td::kFloat32)); }, {"linalg.lu_solve", "float32"});
}

TEST_CASE("lu_unpack and lu_solve take any pivots in range, and check them under their own names", "[cpu]") {
  const Tensor lu = f64({4, 1, 0.5, 2.5}, {2, 2});
  // Row 1 swapped with row 2, then back: the identity permutation.
  const Tensor round_trip = td::tensor(std::vector<int32_t>{2, 1});
  check_close(std::get<0>(la::lu_unpack(lu, round_trip)), values(eye(2)), 0, 0, "P of pivots [2, 1]");
  const Tensor b = f64({1, 2}, {2, 1});
  check_close(la::lu_solve(lu, round_trip, b), {0.09999999999999998, 0.6000000000000001}, 1e-15, 0,
              "lu_solve with pivots [2, 1]");
  const Tensor pivots = td::tensor(std::vector<int32_t>{1, 2});
  check_error([&] { la::lu_solve(lu, pivots.to(td::kInt64), b); }, {"linalg.lu_solve", "int32", "int64"});
  check_error([&] { la::lu_solve(lu, pivots.narrow(0, 0, 1), b); }, {"linalg.lu_solve", "pivots.shape", "[1]"});
  check_error([&] { la::lu_solve(lu.unsqueeze(0), pivots, b); }, {"linalg.lu_solve", "[1, 2, 2]", "[2]"});
  check_error(
      [&] {
        la::lu_solve(lu, td::tensor(std::vector<int32_t>{3, 2}), b);
      },
      {"linalg.lu_solve", "between 1 and the 2 rows", "3"});
  check_error([&] { la::lu_unpack(lu, td::tensor(std::vector<int32_t>{0, 2})); }, {"lu_unpack", "between 1", "0"});
}
