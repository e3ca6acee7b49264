// torch.special's orthogonal polynomials (kernels/polynomials.h): chebyshev_polynomial_t/u/v/w, their
// shifted forms, hermite_polynomial_h/he, laguerre_polynomial_l and legendre_polynomial_p. Values against
// mpmath at 40 digits (make_polynomial_table.py prints the tables), on both sides of the degree where
// Chebyshev's switch to closed forms; PyTorch 2.15's edges, overflow with the true sign, dtypes, the
// number forms, broadcasting, no gradient, errors.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Scalar;
using td::Tensor;
using td::testing::check_error;
using td::testing::check_values;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

struct Row {
  double x, n, value, scale;  // scale: the largest |P_k(x)| for k <= n
};

const std::vector<Row> kT = {
    {-1.5, 2, 3.5, 3.5},
    {-1.5, 5, -61.5, 61.5},
    {-1.5, 17, -6376021.5, 6376021.5},
    {-1.5, 64, 2.814413830623058e+26, 2.814413830623058e+26},
    {-1.5, 100, 3.136881076690529e+41, 3.136881076690529e+41},
    {-0.75, 2, 0.125, 1.0},
    {-0.75, 5, 0.890625, 1.0},
    {-0.75, 17, -0.9610862731933594, 1.0},
    {-0.75, 64, -0.6456684889424519, 1.0},
    {-0.75, 100, -0.9998589883151928, 1.0},
    {0.3125, 2, -0.8046875, 1.0},
    {0.3125, 5, 0.9998321533203125, 1.0},
    {0.3125, 17, -0.7708550444836237, 1.0},
    {0.3125, 64, 0.07955105235624968, 1.0},
    {0.3125, 100, 0.9336074039511384, 1.0},
    {0.96875, 2, 0.876953125, 1.0},
    {0.96875, 5, 0.3122096061706543, 1.0},
    {0.96875, 17, -0.43608420217947963, 1.0},
    {0.96875, 64, -0.9447388945153635, 1.0},
    {0.96875, 100, 0.9977446083251729, 1.0},
    {2.5, 2, 11.5, 11.5},
    {2.5, 5, 1262.5, 1262.5},
    {2.5, 17, 184781493542.5, 184781493542.5},
    {2.5, 64, 1.7697618454334085e+43, 1.7697618454334085e+43},
    {2.5, 100, 5.548764476230407e+67, 5.548764476230407e+67},
};
const std::vector<Row> kU = {
    {-1.5, 2, 8.0, 8.0},
    {-1.5, 5, -144.0, 144.0},
    {-1.5, 17, -14930352.0, 14930352.0},
    {-1.5, 64, 6.590346215876301e+26, 6.590346215876301e+26},
    {-1.5, 100, 7.34544867157818e+41, 7.34544867157818e+41},
    {-0.75, 2, 1.25, 1.5},
    {-0.75, 5, 1.40625, 1.5},
    {-0.75, 17, -0.6478500366210938, 1.5048828125},
    {-0.75, 64, 0.22019275212507108, 1.5118045936902949},
    {-0.75, 100, -1.018900414461782, 1.5118045936902949},
    {0.3125, 2, -0.609375, 1.0},
    {0.3125, 5, 0.993804931640625, 1.005859375},
    {0.3125, 17, -0.5612939435583519, 1.0165632904590893},
    {0.3125, 64, -0.24838220259731347, 1.0493864158514021},
    {0.3125, 100, 0.8157361266265065, 1.0527015116885892},
    {0.96875, 2, 2.75390625, 2.75390625},
    {0.96875, 5, 4.022612571716309, 4.022612571716309},
    {0.96875, 17, -3.950786150376819, 4.022612571716309},
    {0.96875, 64, -2.2250981742234672, 4.029389313716458},
    {0.96875, 100, 0.7355810100540408, 4.031620848395906},
    {2.5, 2, 24.0, 24.0},
    {2.5, 5, 2640.0, 2640.0},
    {2.5, 17, 386394631920.0, 386394631920.0},
    {2.5, 64, 3.7007303260865826e+43, 3.7007303260865826e+43},
    {2.5, 100, 1.160296286332751e+68, 1.160296286332751e+68},
};
const std::vector<Row> kV = {
    {-1.5, 2, 11.0, 11.0},
    {-1.5, 5, -199.0, 199.0},
    {-1.5, 17, -20633239.0, 20633239.0},
    {-1.5, 64, 9.107634472711796e+26, 9.107634472711796e+26},
    {-1.5, 100, 1.0151160401503283e+42, 1.0151160401503283e+42},
    {-0.75, 2, 2.75, 2.75},
    {-0.75, 5, 2.09375, 2.75},
    {-0.75, 17, -0.23020172119140625, 2.828125},
    {-0.75, 64, 1.3746744068817685, 2.828125},
    {-0.75, 100, -1.0442889826572341, 2.828125},
    {0.3125, 2, -1.234375, 1.234375},
    {0.3125, 5, 1.013092041015625, 1.234375},
    {0.3125, 17, -1.2318894665192217, 1.234375},
    {0.3125, 64, 0.8010042132540887, 1.234375},
    {0.3125, 100, 1.1929242140653282, 1.234375},
    {0.96875, 2, 0.81640625, 1.0},
    {0.96875, 5, 0.1925191879272461, 1.0},
    {0.96875, 17, -0.32270671997956546, 1.0078697291268632},
    {0.96875, 64, -0.903436982266715, 1.0078697291268632},
    {0.96875, 100, 1.0062014985919836, 1.0078697291268632},
    {2.5, 2, 19.0, 19.0},
    {2.5, 5, 2089.0, 2089.0},
    {2.5, 17, 305749376569.0, 305749376569.0},
    {2.5, 64, 2.928342933825313e+43, 2.928342933825313e+43},
    {2.5, 100, 9.181283508488669e+67, 9.181283508488669e+67},
};
const std::vector<Row> kW = {
    {-1.5, 2, 5.0, 5.0},
    {-1.5, 5, -89.0, 89.0},
    {-1.5, 17, -9227465.0, 9227465.0},
    {-1.5, 64, 4.073057959040806e+26, 4.073057959040806e+26},
    {-1.5, 100, 4.53973694165308e+41, 4.53973694165308e+41},
    {-0.75, 2, -0.25, 1.0},
    {-0.75, 5, 0.71875, 1.0625},
    {-0.75, 17, -1.0654983520507812, 1.0654983520507812},
    {-0.75, 64, -0.9342889026316262, 1.069024291253134},
    {-0.75, 100, -0.9935118462663297, 1.069024291253134},
    {0.3125, 2, 0.015625, 1.625},
    {0.3125, 5, 0.974517822265625, 1.625},
    {0.3125, 17, 0.10930157940251783, 1.6510116683697653},
    {0.3125, 64, -1.2977686184487156, 1.6988859834568126},
    {0.3125, 100, 0.43854803918768487, 1.7055989746278017},
    {0.96875, 2, 4.69140625, 4.69140625},
    {0.96875, 5, 7.852705955505371, 7.852705955505371},
    {0.96875, 17, -7.578865580774072, 7.986331045627594},
    {0.96875, 64, -3.5467593661802193, 7.997524471960015},
    {0.96875, 100, 0.4649605215160979, 7.999738582191682},
    {2.5, 2, 29.0, 29.0},
    {2.5, 5, 3191.0, 3191.0},
    {2.5, 17, 467039887271.0, 467039887271.0},
    {2.5, 64, 4.473117718347852e+43, 4.473117718347852e+43},
    {2.5, 100, 1.402464221816635e+68, 1.402464221816635e+68},
};
const std::vector<Row> kH = {
    {-1.5, 2, 7.0, 7.0},
    {-1.5, 5, 117.0, 117.0},
    {-1.5, 17, -5611538979.0, 5611538979.0},
    {-1.5, 64, -4.286505592967493e+53, 4.286505592967493e+53},
    {-1.5, 100, -6.840215189716951e+93, 6.840215189716951e+93},
    {-0.75, 2, 0.25, 1.5},
    {-0.75, 5, -30.09375, 30.09375},
    {-0.75, 17, 3804577861.417946, 3804577861.417946},
    {-0.75, 64, -3.912582533914518e+53, 3.912582533914518e+53},
    {-0.75, 100, -1.4611185395125104e+93, 1.4611185395125104e+93},
    {0.3125, 2, -1.609375, 1.609375},
    {0.3125, 5, 32.712554931640625, 32.712554931640625},
    {0.3125, 17, 3013170596.69947, 3013170596.69947},
    {0.3125, 64, -4.650094109815479e+53, 4.650094109815479e+53},
    {0.3125, 100, -8.975667753593077e+92, 8.975667753593077e+92},
    {0.96875, 2, 1.75390625, 1.9375},
    {0.96875, 5, -1.9109811782836914, 18.955062866210938},
    {0.96875, 17, -2616084474.29687, 2616084474.29687},
    {0.96875, 64, -4.540036596467821e+51, 6.825029860301345e+52},
    {0.96875, 100, 1.9730079129378273e+93, 1.9730079129378273e+93},
    {2.5, 2, 23.0, 23.0},
    {2.5, 5, 925.0, 925.0},
    {2.5, 17, 69793217125.0, 69793217125.0},
    {2.5, 64, -1.1044820656367663e+55, 1.1044820656367663e+55},
    {2.5, 100, -5.375876171333766e+94, 5.375876171333766e+94},
};
const std::vector<Row> kHE = {
    {-1.5, 2, 1.25, 1.5},
    {-1.5, 5, 3.65625, 5.4375},
    {-1.5, 17, 592643.2712173462, 3499206.428237915},
    {-1.5, 64, 1.6969199662588319e+44, 1.6969199662588319e+44},
    {-1.5, 100, -3.71106101644768e+78, 3.71106101644768e+78},
    {-0.75, 2, -0.4375, 1.0},
    {-0.75, 5, -7.2685546875, 7.2685546875},
    {-0.75, 17, -72933.82091290149, 2326698.3594761044},
    {-0.75, 64, 1.2489006115086475e+44, 1.2489006115086475e+44},
    {-0.75, 100, 1.0374925498625577e+78, 1.0374925498625577e+78},
    {0.3125, 2, -0.90234375, 1.0},
    {0.3125, 5, 4.3853044509887695, 4.3853044509887695},
    {0.3125, 17, 8150679.588116595, 8150679.588116595},
    {0.3125, 64, -9.28392020199334e+43, 9.28392020199334e+43},
    {0.3125, 100, -2.7928079916482545e+78, 2.7928079916482545e+78},
    {0.96875, 2, -0.0615234375, 1.0},
    {0.96875, 5, 6.29297348856926, 6.29297348856926},
    {0.96875, 17, -8202455.065780183, 8202455.065780183},
    {0.96875, 64, 1.1124342358436112e+43, 1.7659616013001266e+43},
    {0.96875, 100, -3.3107326125496387e+78, 3.3107326125496387e+78},
    {2.5, 2, 5.25, 5.25},
    {2.5, 5, -21.09375, 21.09375},
    {2.5, 17, -30948730.94844818, 30948730.94844818},
    {2.5, 64, 2.2144051259498506e+44, 2.2144051259498506e+44},
    {2.5, 100, 1.2933934590302481e+79, 1.2933934590302481e+79},
};
const std::vector<Row> kL = {
    {-1.5, 2, 5.125, 5.125},
    {-1.5, 5, 26.49296875, 26.49296875},
    {-1.5, 17, 1735.7031932465568, 1735.7031932465568},
    {-1.5, 64, 15217873.286701048, 15217873.286701048},
    {-1.5, 100, 1791316916.4329796, 1791316916.4329796},
    {-0.75, 2, 2.78125, 2.78125},
    {-0.75, 5, 8.3335205078125, 8.3335205078125},
    {-0.75, 17, 147.06650218946237, 147.06650218946237},
    {-0.75, 64, 82090.65192927596, 82090.65192927596},
    {-0.75, 100, 2315203.707334234, 2315203.707334234},
    {0.3125, 2, 0.423828125, 1.0},
    {0.3125, 5, -0.12311939398447673, 1.0},
    {0.3125, 17, -0.32354912562265514, 1.0},
    {0.3125, 64, -0.09910709305147146, 1.0},
    {0.3125, 100, -0.15387315814961994, 1.0},
    {0.96875, 2, -0.46826171875, 1.0},
    {0.96875, 5, -0.49023879344264665, 1.0},
    {0.96875, 17, 0.1919465343049878, 1.0},
    {0.96875, 64, -0.24894576622501122, 1.0},
    {0.96875, 100, 0.29061180469952513, 1.0},
    {2.5, 2, -0.875, 1.5},
    {2.5, 5, 1.0325520833333333, 1.5},
    {2.5, 17, 0.755283930232362, 1.5},
    {2.5, 64, 0.467176265931761, 1.5},
    {2.5, 100, 0.42579494003236756, 1.5},
};
const std::vector<Row> kP = {
    {-1.5, 2, 2.875, 2.875},
    {-1.5, 5, -33.08203125, 33.08203125},
    {-1.5, 17, -1879184.698027244, 1879184.698027244},
    {-1.5, 64, 4.289857062842986e+25, 4.289857062842986e+25},
    {-1.5, 100, 3.826855904368437e+40, 3.826855904368437e+40},
    {-0.75, 2, 0.34375, 1.0},
    {-0.75, 5, 0.4163818359375, 1.0},
    {-0.75, 17, -0.17746350559615287, 1.0},
    {-0.75, 64, -0.03324883805640982, 1.0},
    {-0.75, 100, -0.08980236304263117, 1.0},
    {0.3125, 2, -0.353515625, 1.0},
    {0.3125, 5, 0.34237802028656006, 1.0},
    {0.3125, 17, -0.12885053162872653, 1.0},
    {0.3125, 64, -0.008137126891007375, 1.0},
    {0.3125, 100, 0.0706312996505889, 1.0},
    {0.96875, 2, 0.90771484375, 1.0},
    {0.96875, 5, 0.5804206170141697, 1.0},
    {0.96875, 17, -0.3466671054730286, 1.0},
    {0.96875, 64, -0.18843552770037922, 1.0},
    {0.96875, 100, 0.11884850344888243, 1.0},
    {2.5, 2, 8.875, 8.875},
    {2.5, 5, 637.01171875, 637.01171875},
    {2.5, 17, 51365093746.916115, 51365093746.916115},
    {2.5, 64, 2.547891414608851e+42, 2.547891414608851e+42},
    {2.5, 100, 6.394837504874429e+66, 6.394837504874429e+66},
};

using TensorFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using ScalarNFn = std::function<Tensor(const Tensor&, Scalar)>;
using ScalarXFn = std::function<Tensor(Scalar, const Tensor&)>;

struct Kind {
  std::string name;
  TensorFn fn;
  ScalarNFn with_number_n;
  ScalarXFn with_number_x;
  const std::vector<Row>* rows;
  bool shifted;
};

#define TD_KIND(f, table, shifted)                                                  \
  Kind {                                                                           \
    #f, [](const Tensor& x, const Tensor& n) { return td::special::f(x, n); },     \
        [](const Tensor& x, Scalar n) { return td::special::f(x, n); },            \
        [](Scalar x, const Tensor& n) { return td::special::f(x, n); }, &table, shifted \
  }

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {
      TD_KIND(chebyshev_polynomial_t, kT, false),         TD_KIND(chebyshev_polynomial_u, kU, false),
      TD_KIND(chebyshev_polynomial_v, kV, false),         TD_KIND(chebyshev_polynomial_w, kW, false),
      TD_KIND(shifted_chebyshev_polynomial_t, kT, true),  TD_KIND(shifted_chebyshev_polynomial_u, kU, true),
      TD_KIND(shifted_chebyshev_polynomial_v, kV, true),  TD_KIND(shifted_chebyshev_polynomial_w, kW, true),
      TD_KIND(hermite_polynomial_h, kH, false),           TD_KIND(hermite_polynomial_he, kHE, false),
      TD_KIND(laguerre_polynomial_l, kL, false),          TD_KIND(legendre_polynomial_p, kP, false),
  };
  return all;
}
#undef TD_KIND

}  // namespace

TEST_CASE("The orthogonal polynomials equal mpmath's to 2e-16 n of their scale, degrees 2 to 100", "[cpu]") {
  // The recurrences' rounding grows about linearly with the degree, relative to the largest |P_k(x)| on the
  // way; the Chebyshev closed forms (degree 64 on) carry n times the angle's rounding.
  for (const Kind& kind : kinds()) {
    INFO(kind.name);
    std::vector<double> x, n;
    for (const Row& row : *kind.rows) {
      x.push_back(kind.shifted ? (row.x + 1) / 2 : row.x);
      n.push_back(row.n);
    }
    const std::vector<double> got = values(kind.fn(f64(x), f64(n)));
    for (size_t i = 0; i < got.size(); ++i) {
      const Row& row = (*kind.rows)[i];
      INFO("x " << row.x << " n " << row.n << ": " << got[i] << " against " << row.value);
      CHECK(std::abs(got[i] - row.value) <= 2e-16 * (row.n + 4) * row.scale);
    }
  }
}

TEST_CASE("The orthogonal polynomials' edges: degrees below 0 or NaN give 0, degree 0 gives 1, x = +-1, +-inf",
          "[cpu]") {
  namespace sp = td::special;
  const Tensor x = f64({0.3, kNaN, kInf, -kInf, 0.3, 0.3, 2.0, -2.0});
  // PyTorch 2.15's: n < 0 and NaN give 0 (its int64 conversion), n = 0 gives 1 for any x, n = 2.7 is 2.
  const Tensor n = f64({-1, 0, 0, 0, kNaN, 2.7, 3.9, 3.0});
  check_values(sp::chebyshev_polynomial_t(x, n), {0, 1, 1, 1, 0, -0.82, 26, -26}, 1e-15, "t");
  check_values(sp::legendre_polynomial_p(f64({0.3, 0.3}), f64({-0.5, -1})), {1, 0}, 0,
               "degrees in (-1, 0) truncate to 0; -1 is below");
  // Near -1 the closed forms reflect to +1 (the angle near pi lost U_100's digits: 2.4e-9 off).
  check_values(sp::chebyshev_polynomial_u(f64({-0.9999999999999999}), f64({100})), {100.99999999996187}, 1e-14, "u");
  check_values(sp::chebyshev_polynomial_v(f64({-0.9999999999999999}), f64({100})), {200.99999999992488}, 1e-14, "v");
  check_values(sp::hermite_polynomial_h(x, n), {0, 1, 1, 1, 0, -1.64, 40, -40}, 1e-15, "h");
  check_values(sp::laguerre_polynomial_l(x, n), {0, 1, 1, 1, 0, 0.445, -0.3333333333333333, 14.333333333333334},
               1e-15, "l");
  // At x = +-1 the Chebyshev values in closed form, any degree: T = 1, U = n + 1, V = 1, W = 2n + 1 at 1,
  // and at -1 times (-1)^n with V and W swapped. Legendre: 1 and (-1)^n.
  const Tensor ends = f64({1, -1, 1, -1});
  const Tensor degrees = f64({1000, 1000, 1001, 1001});
  check_values(sp::chebyshev_polynomial_t(ends, degrees), {1, 1, 1, -1}, 0, "t at +-1");
  check_values(sp::chebyshev_polynomial_u(ends, degrees), {1001, 1001, 1002, -1002}, 0, "u at +-1");
  check_values(sp::chebyshev_polynomial_v(ends, degrees), {1, 2001, 1, -2003}, 0, "v at +-1");
  check_values(sp::chebyshev_polynomial_w(ends, degrees), {2001, 1, 2003, -1}, 0, "w at +-1");
  check_values(sp::legendre_polynomial_p(ends, degrees), {1, 1, 1, -1}, 0, "p at +-1");
  // At +-inf the leading coefficient's sign and n's parity (PyTorch gives NaN from inf - inf): positive for
  // all but Laguerre's, (-1)^n / n!.
  const Tensor infinities = f64({kInf, -kInf, kInf, -kInf});
  const Tensor parities = f64({3, 3, 4, 4});
  for (const Kind& kind : kinds()) {
    INFO(kind.name);
    const bool laguerre = kind.name == "laguerre_polynomial_l";
    check_values(kind.fn(infinities, parities),
                 laguerre ? std::vector<double>{-kInf, kInf, kInf, kInf} : std::vector<double>{kInf, -kInf, kInf, kInf},
                 0, kind.name + " at infinities");
  }
}

TEST_CASE("Past double's range the polynomials are +-inf with their true sign, not NaN", "[cpu]") {
  namespace sp = td::special;
  // H_1000(0.3) is about +2.3e1433 (PyTorch 2.15 gives NaN: inf - inf in its recurrence); He_400(1.5) about
  // +1.5e433; T_2000(2) and T_2001(-2) overflow through the closed form; L_400(-800) is about +1.8e354.
  // H_250(0.3) is finite, -1.6e283, though the terms on the way pass 2^512 (the rescaling).
  check_values(sp::hermite_polynomial_h(f64({0.3, 0.3}), f64({1000, 250})), {kInf, -1.6316072822191784e+283}, 1e-13,
               "hermite_h");
  // Past 2^600 every kind overflows from degree 2 (the recurrence gave NaN from inf - inf at 1e160); below,
  // values within a factor 2 of the largest double stay finite.
  check_values(sp::chebyshev_polynomial_t(f64({1e160, -1e160}), f64({4, 5})), {kInf, -kInf}, 0, "t of huge x");
  check_values(sp::hermite_polynomial_h(f64({1e300}), f64({5})), {kInf}, 0, "h of huge x");
  check_values(sp::laguerre_polynomial_l(f64({1e200, 1e200, std::ldexp(1.0, 512)}), f64({4, 5, 2})),
               {kInf, -kInf, 8.98846567431158e+307}, 1e-15, "l of huge x");
  check_values(sp::legendre_polynomial_p(f64({1.09e154}), f64({2})), {1.7821500000000002e+308}, 1e-15,
               "p near the largest");
  check_values(sp::hermite_polynomial_he(f64({1.5}), f64({400})), {kInf}, 0, "hermite_he");
  check_values(sp::chebyshev_polynomial_t(f64({2, -2}), f64({2000, 2001})), {kInf, -kInf}, 0, "chebyshev_t");
  check_values(sp::laguerre_polynomial_l(f64({-800, -800}), f64({400, 300})), {kInf, 3.8648102839261150e+293}, 1e-13,
               "laguerre_l");
}

TEST_CASE("The orthogonal polynomials' dtypes, number forms and broadcasting; no gradient; errors", "[cpu]") {
  namespace sp = td::special;
  for (const Kind& kind : kinds()) {
    INFO(kind.name);
    const Tensor x = f64({-0.4, 0.25, 0.7}), n = f64({3, 5, 66});
    const Tensor want = kind.fn(x, n);
    // Each floating dtype computes in double from its rounded operands and rounds once.
    for (td::DType dtype : {td::kFloat32, td::kFloat16, td::kBFloat16}) {
      const Tensor got = kind.fn(x.to(dtype), n.to(dtype));
      REQUIRE(got.dtype() == dtype);
      td::testing::check_close(got, values(kind.fn(x.to(dtype).to(td::kFloat64), n).to(dtype)), 0, 0, "dtype");
    }
    // Integer degrees with floating x keep x's dtype; integers alone give float32.
    CHECK(kind.fn(x, td::tensor({3, 5, 66})).dtype() == td::kFloat64);
    td::testing::check_close(kind.fn(x, td::tensor({3, 5, 66})), values(want), 0, 0, "int64 degrees");
    CHECK(kind.fn(td::tensor({0, 1, 2}), td::tensor({3, 5, 66})).dtype() == td::kFloat32);
    // The number forms: a number n keeps x's dtype; a number x takes n's floating dtype, or float32.
    const Tensor by_number = kind.with_number_n(x, 5);
    CHECK(by_number.dtype() == td::kFloat64);
    td::testing::check_close(by_number, values(kind.fn(x, f64({5, 5, 5}))), 0, 0, "number n");
    const Tensor at_number = kind.with_number_x(0.25, n);
    CHECK(at_number.dtype() == td::kFloat64);
    td::testing::check_close(at_number, values(kind.fn(f64({0.25, 0.25, 0.25}), n)), 0, 0, "number x");
    CHECK(kind.with_number_x(0.25, td::tensor({3, 5})).dtype() == td::kFloat32);
    // Broadcasting: x down a column, n along a row.
    const Tensor grid = kind.fn(x.view({3, 1}), n);
    REQUIRE(grid.sizes() == td::Shape{3, 3});
    td::testing::check_close(grid.diagonal(), values(want), 0, 0, "broadcast");
    // Not differentiable, as in PyTorch.
    CHECK_FALSE(kind.fn(x.clone().requires_grad_(), n).requires_grad());
    check_error([&] { kind.fn(Tensor(), n); }, {kind.name});
    check_error([&] { kind.with_number_x(1.0, Tensor()); }, {kind.name});
    check_error([&] { kind.fn(x, f64({1, 2})); }, {kind.name, "[3]", "[2]"});
  }
}
