// torch.special's functions (autograd/special.h) and the special Tensor methods: lgamma, digamma,
// polygamma, mvlgamma, zeta, erfcx, the Bessel functions i0, i0e, i1 and i1e, ndtri, ndtr, log_ndtr,
// entr, xlog1py and the aliases. Values over each function's whole range (signed zeros, poles,
// infinities, NaN, tiny and huge arguments), dtypes, first and second derivatives, in-place forms and
// errors, against PyTorch 2.15 in float64; where PyTorch's own value is the less accurate one, against
// mpmath at 50 digits, each such place said.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::rtol_for;
using td::testing::Snapshot;
using td::testing::check_values;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

// A float32 result within `ulps` float32 ulps of the float64 reference rounded to float32 (NaN,
// infinities and zeros exactly).
void check_ulps(const Tensor& got, const std::vector<double>& want64, int ulps, const std::string& what) {
  INFO(what);
  REQUIRE(got.dtype() == td::kFloat32);
  const std::vector<double> v = values(got);
  REQUIRE(v.size() == want64.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const float want = static_cast<float>(want64[i]);
    INFO("element " << i << ": " << v[i] << " against " << want);
    if (std::isnan(want)) {
      CHECK(std::isnan(v[i]));
    } else if (std::isinf(want) || want == 0) {
      CHECK(v[i] == want);
    } else {
      const float ulp = std::nextafter(std::abs(want), std::numeric_limits<float>::infinity()) - std::abs(want);
      CHECK(std::abs(v[i] - want) <= ulps * static_cast<double>(ulp));
    }
  }
}

// An argument and a function's value there.
struct Point {
  double x, want;
};

// One column of a table of rows.
template <typename Row>
std::vector<double> column(const std::vector<Row>& rows, double Row::*field) {
  std::vector<double> out;
  for (const Row& row : rows) out.push_back(row.*field);
  return out;
}

// d f(x).sum() / dx at float64 values.
Tensor grad_of(const std::function<Tensor(const Tensor&)>& f, const std::vector<double>& at) {
  Tensor x = f64(at).requires_grad_();
  f(x).sum().backward();
  return x.grad();
}

// d^2 f(x).sum() / dx^2 (element-wise functions: the diagonal), through a recorded first derivative.
Tensor second_derivative_of(const std::function<Tensor(const Tensor&)>& f, const std::vector<double>& at) {
  Tensor x = f64(at).requires_grad_();
  const Tensor first = td::autograd::grad({f(x).sum()}, {x}, {}, true, true)[0];
  return td::autograd::grad({first.sum()}, {x})[0];
}

}  // namespace

TEST_CASE(
    "lgamma, digamma and polygamma at poles, signed zeros, infinities, NaN, negative non-integers, tiny and "
    "huge arguments, as PyTorch's",
    "[cpu]") {
  struct GammaRow {
    double x, lgamma, digamma;
  };
  const std::vector<GammaRow> gammas = {
      // digamma: -inf at +0 and +inf at -0 (the limits from each side), NaN at the negative integers and -inf.
      {0.0, kInf, -kInf},
      {-0.0, kInf, kInf},
      {1.0, 0.0, -0.5772156649015328},
      {2.0, 0.0, 0.422784335098467},
      {0.5, 0.5723649429247001, -1.9635100260214229},
      {-0.5, 1.2655121234846454, 0.03648997397857639},
      {-2.5, -0.05624371649767405, 1.1031566406452433},
      {-2.0, kInf, kNaN},
      {-1e-300, 690.7755278982137, 1e+300},
      {1e-300, 690.7755278982137, -9.999999999999999e+299},
      {1e-20, 46.051701859880914, -1e+20},
      {3.7, 1.428072326665388, 1.1671535393615111},
      {9.99, 12.779315214350193, 2.2507003728312007},
      {10.0, 12.801827480081469, 2.251752589066721},
      {10.5, 13.940625219403763, 2.3030010342976865},
      {30.0, 71.25703896716801, 3.384438132685525},
      {171.5, 709.1431630309282, 5.141664981434},
      {1e10, 220258509288.81058, 23.025850929890456},
      {1e+300, 6.897755278982137e+302, 690.7755278982137},
      {-100.25, -363.4009232278215, 7.754238959208646},
      {-1000000000000000.5, -3.353877639491072e+16, 34.538776394910684},
      {kInf, kInf, kInf},
      {-kInf, kInf, kNaN},
      {kNaN, kNaN, kNaN},
  };
  const Tensor x = f64(column(gammas, &GammaRow::x));
  check_values(td::lgamma(x), column(gammas, &GammaRow::lgamma), 1e-14, "lgamma");
  check_values(td::digamma(x), column(gammas, &GammaRow::digamma), 1e-14, "digamma");
  check_values(td::polygamma(0, x), column(gammas, &GammaRow::digamma), 1e-14, "polygamma 0");
  // Next to lgamma's root between -3 and -2 glibc's lgamma, which the CPU kernel calls, is exact: mpmath's
  // 7.292550612674704e-16, where PyTorch gives 7.307955396550774e-16 (0.2% off).
  check_values(td::lgamma(f64({-2.4570247382208})), {7.292550612674704e-16}, 1e-14, "lgamma next to its root");

  // polygamma(1, x): mpmath's values. PyTorch's trigamma adds six terms and a short asymptotic series, 5e-10 off
  // at x = 1 (1.6449340676383375 for pi^2 / 6 = 1.6449340668482264); tandem's is zeta(2, x).
  struct PolygammaRow {
    double x, n1, n2, n3;
  };
  const std::vector<PolygammaRow> polygamma = {
      {0.0, kInf, -kInf, kInf},
      {-0.0, kInf, -kInf, kInf},
      {1.0, 1.6449340668482264, -2.404113806319188, 6.493939402266829},
      {0.5, 4.934802200544679, -16.828796644234316, 97.40909103400242},
      {-0.5, 8.934802200544679, -0.82879664423432, 193.40909103400242},
      {-2.5, 9.539246644989124, -0.1082040516417282, 194.74787621918756},
      {-1.5, 9.379246644989124, -0.23620405164172825, 194.59427621918758},
      {-2.0, kInf, -kInf, kInf},  // n = 1: PyTorch's sin(pi x) leaves 1.6451975368302367e+32 at this pole
      {1e-300, kInf, -kInf, kInf},
      {-1e-300, kInf, kInf, kInf},
      {1e-05, 10000000001.644909, -2000000000000001.8, 5.999999999999997e+20},
      {3.7, 0.3100378576700383, -0.09539530872855405, 0.05827921795656364},
      {9.5, 0.11099728846909904, -0.012307845807709338, 0.0027267288350372497},
      {10.5, 0.09991695605912673, -0.009975144247715168, 0.001990086237144355},
      {25.0, 0.04081066325722558, -0.0016652793184224685, 0.0001358846365082737},
      {1000.0, 0.0010005001666666333, -1.0010004999998335e-06, 2.003001999999e-09},
      {1e10, 1.00000000005e-10, -1.0000000001e-20, 2.0000000003000003e-30},
      {1e+300, 1e-300, -0.0, 0.0},
      {-100.25, 19.729283325349364, 124.0250082069177, 1558.5454545884686},
      {kInf, 0.0, -0.0, 0.0},      // n = 2, 3: the limits, where PyTorch's zeta gives NaN
      {-kInf, kInf, -kInf, kInf},  // n = 1: PyTorch gives NaN
      {kNaN, kNaN, kNaN, kNaN},
  };
  const Tensor p = f64(column(polygamma, &PolygammaRow::x));
  check_values(td::polygamma(1, p), column(polygamma, &PolygammaRow::n1), 1e-14, "polygamma 1");
  check_values(td::polygamma(2, p), column(polygamma, &PolygammaRow::n2), 1e-14, "polygamma 2");
  check_values(td::polygamma(3, p), column(polygamma, &PolygammaRow::n3), 1e-14, "polygamma 3");
}

TEST_CASE("mvlgamma and zeta as PyTorch's: every operand form, poles, x < 1, x == 1 and infinities", "[cpu]") {
  check_values(td::mvlgamma(f64({0.5, 1.0, 2.5, 7.25, 1e-05, 100.5, 1e10, 1e+300, kInf}), 1),
               {0.5723649429247001, 0.0, 0.2846828704729192, 7.0521854507385395, 11.512919692895826, 361.4355404677776,
                220258509288.81058, 6.897755278982137e+302, kInf},
               1e-14, "mvlgamma p = 1");
  check_values(td::mvlgamma(f64({1.0000001, 1.5, 2.5, 7.25, 100.5, 1e10, kInf}), 3),
               {18.407555110279162, 2.1686775340635553, 1.8809954616117743, 20.104800157934413, 1079.1222234897402,
                660775527833.61, kInf},
               1e-14, "mvlgamma p = 3");

  struct ZetaRow {
    double x, q, zeta;
  };
  // inf at x == 1 and at q a non-positive integer (either zero); NaN for x < 1 and for q < 0 with x no integer.
  const std::vector<ZetaRow> zeta = {
      {2.0, 1.0, 1.6449340668482266},
      {3.0, 0.5, 8.414398322117158},
      {1.0, 2.0, kInf},
      {0.5, 2.0, kNaN},
      {-1.0, 1.0, kNaN},
      {1.0000001, 1.0, 10000000.571377},
      {1.5, 1.0, 2.612375348685488},
      {1.5, 1e-05, 31622779.214039013},
      {1.5, 1e10, 2.00000000005e-05},
      {2.0, -2.0, kInf},
      {2.0, 0.0, kInf},
      {2.0, -0.0, kInf},
      {3.0, -2.5, 0.0541020258208641},
      {2.5, -2.5, kNaN},
      {4.0, -1.5, 32.4323793698646},
      {30.0, 1.0, 1.0000000009313275},
      {30.0, 0.9, 23.589824880264747},
      {100.0, 2.0, 7.888609052210118e-31},
      {7.5, 1e+300, 0.0},
      {1.01, 1e-300, 1.0000000000000061e+303},
      {12.0, 3.5, 3.119511988435483e-07},
      {1.1, 10.0, 7.983726107059943},
      {5.0, 9.5, 3.7717725974390105e-05},
      {4.0, -3.7, 128.16577490681092},
      {10.0, 10.0, 1.6926861254407484e-10},  // x and q both about 10
      {10.5, 10.5, 3.195883095200609e-11},
      {2.0, -kInf, kInf},
      {kNaN, 1.0, kNaN},
      {2.0, kNaN, kNaN},
      {2.0, kInf, 0.0},  // the limit, where PyTorch gives NaN
      {kInf, 1.0, 1.0},  // x = inf: PyTorch's values, the limits
      {kInf, 0.5, kInf},
  };
  check_values(td::special::zeta(f64(column(zeta, &ZetaRow::x)), f64(column(zeta, &ZetaRow::q))),
               column(zeta, &ZetaRow::zeta), 1e-14, "zeta of two tensors");
  check_values(td::special::zeta(f64({2.0, 3.0, 1.0, 0.5, 4.0, 1.5, 50.0}), 2.5),
               {0.4903577561002349, 0.11810202582086368, kInf, kNaN, 0.037317641469542015, 1.4037797688568259,
                1.267650662831828e-20},
               1e-14, "zeta by a number");
  check_values(
      td::special::zeta(3.0, f64({0.5, 1.0, -2.0, -2.5, 100.0, 0.001})),
      {8.414398322117158, 1.202056903159594, kInf, 0.0541020258208641, 5.0502499916675004e-05, 1000000001.1988161},
      1e-14, "zeta of a number");
  const Tensor broadcast = td::special::zeta(f64({2.0, 3.5}).view({2, 1}), f64({1.0, 2.0, 0.25}));
  const td::Shape broadcast_shape = {2, 3};
  CHECK(broadcast.sizes() == broadcast_shape);
  check_values(broadcast,
               {1.6449340668482266, 0.6449340668482266, 17.197329154507113, 1.1267338673170566, 0.12673386731705663,
                128.54695896428433},
               1e-14, "zeta broadcast");
}

TEST_CASE("erfcx, i0, i0e, i1, i1e, ndtri, ndtr and log_ndtr over their whole ranges as PyTorch's", "[cpu]") {
  // exp(x^2) erfc(x): 1 / (x sqrt(pi)) far right, inf once exp(x^2) overflows on the left.
  const std::vector<Point> erfcx = {
      {0.0, 1.0},
      {-0.0, 1.0},
      {1e-10, 0.9999999998871619},
      {0.5, 0.6156903441929258},
      {1.0, 0.427583576155807},
      {3.9, 0.14031418160068973},
      {4.0, 0.1369994576250614},
      {4.1, 0.13383411641865198},
      {5.0, 0.11070463773306861},
      {10.0, 0.05614099274382259},
      {26.0, 0.02168358485056291},
      {50.0, 0.011281536265323772},
      {1000.0, 0.0005641893014533876},
      {1e6, 5.641895835474742e-07},
      {5e7, 1.1283791670955123e-08},
      {6e7, 9.403159725795938e-09},
      {1e10, 5.641895835477563e-11},
      {1e+300, 5.641895835477562e-301},
      {kInf, 0.0},
      {-0.5, 1.952360489182557},
      {-1.0, 5.008980080762283},
      {-3.0, 16205.988853999586},
      {-6.0, 8622463094230390.0},
      {-10.0, 5.376234283632271e+43},
      {-26.0, 7.657724931490568e+293},
      {-26.6, 3.8943377196055206e+307},
      {-26.7, kInf},
      {-30.0, kInf},
      {-kInf, kInf},
      {kNaN, kNaN},
  };
  check_values(td::special::erfcx(f64(column(erfcx, &Point::x))), column(erfcx, &Point::want), 1e-14, "erfcx");

  struct BesselRow {
    double x, i0, i0e, i1, i1e;
  };
  const std::vector<BesselRow> bessel = {
      {0.0, 1.0, 1.0, 0.0, 0.0},
      {-0.0, 1.0, 1.0, -0.0, -0.0},  // i1 and i1e are odd: -0, where PyTorch gives +0
      {1e-05, 1.0000000000249998, 0.9999900000749995, 5.000000000062501e-06, 4.9999500003125e-06},
      {-1e-05, 1.0000000000249998, 0.9999900000749995, -5.000000000062501e-06, -4.9999500003125e-06},
      {0.5, 1.0634833707413236, 0.6450352704491501, 0.25789430539089636, 0.15642080318487173},
      {1.0, 1.2660658777520082, 0.46575960759364043, 0.5651591039924851, 0.2079104153497085},
      {3.0, 4.880792585865024, 0.24300035416182536, 3.9533702174026093, 0.19682671329730084},
      {-3.0, 4.880792585865024, 0.24300035416182536, -3.9533702174026093, -0.19682671329730084},
      {10.0, 2815.716628466254, 0.1278333371634286, 2670.988303701255, 0.1212626813844555},
      {24.9, 5235629675.804421, 0.0803593326115322, 5129395695.925742, 0.07872879488210313},
      {-24.9, 5235629675.804421, 0.0803593326115322, -5129395695.925742, -0.07872879488210313},
      {25.0, 5774560606.4663105, 0.08019677354743669, 5657865129.878702, 0.07857611331929278},
      {25.1, 6369018573.803502, 0.08003519725429624, 6240828249.8739805, 0.07842431517836843},
      {-25.1, 6369018573.803502, 0.08003519725429624, -6240828249.8739805, -0.07842431517836843},
      {30.0, 781672297823.9775, 0.0731459464822373, 768532038938.9569, 0.07191633059864755},
      {100.0, 1.0737517071310738e+42, 0.03994437929909668, 1.0683693903381625e+42, 0.03974415302513025},
      {-100.0, 1.0737517071310738e+42, 0.03994437929909668, -1.0683693903381625e+42, -0.03974415302513025},
      {700.0, 1.5295933476718735e+302, 0.015081295651531355, 1.5285003902339006e+302, 0.015070519444716846},
      {-700.0, 1.5295933476718735e+302, 0.015081295651531355, -1.5285003902339006e+302, -0.015070519444716846},
      // I0 and I1 take exp(|x|) in two halves and stay finite here (mpmath's values): PyTorch's exp(x)
      // overflows first and gives inf.
      {712.0, 2.4684110577627523e+307, 0.014953620962177634, 2.4666770135246153e+307, 0.014943116131474008},
      {720.0, kInf, 0.014870284185509173, kInf, 0.014859954008658149},
      {-720.0, kInf, 0.014870284185509173, -kInf, -0.014859954008658149},
      {1e10, kInf, 3.9894228040641945e-06, kInf, 3.989422803864723e-06},
      {kInf, kNaN, 0.0, kNaN, 0.0},  // NaN as PyTorch's (the limits are inf)
      {-kInf, kNaN, 0.0, kNaN, -0.0},
      {kNaN, kNaN, kNaN, kNaN, kNaN},
  };
  const Tensor b = f64(column(bessel, &BesselRow::x));
  check_values(td::i0(b), column(bessel, &BesselRow::i0), 1e-14, "i0");
  check_values(td::special::i0e(b), column(bessel, &BesselRow::i0e), 1e-14, "i0e");
  check_values(td::special::i1(b), column(bessel, &BesselRow::i1), 1e-14, "i1");
  check_values(td::special::i1e(b), column(bessel, &BesselRow::i1e), 1e-14, "i1e");

  const std::vector<Point> ndtri = {
      {0.0, -kInf},
      {-0.0, -kInf},
      {1.0, kInf},
      {0.5, 0.0},
      {1e-300, -37.0470962993612},
      {1e-20, -9.262340089798409},
      {0.9999999999, 6.361340889697422},
      {0.975, 1.959963984540054},
      {0.025, -1.9599639845400545},
      {0.3, -0.5244005127080409},
      {0.7, 0.5244005127080407},
      {0.1, -1.2815515655446004},
      {0.9, 1.2815515655446004},
      {0.49, -0.02506890825871106},
      {0.51, 0.02506890825871106},
      {1e-05, -4.264890793922825},
      {-0.1, kNaN},
      {1.5, kNaN},
      {-kInf, kNaN},
      {kInf, kNaN},
      {kNaN, kNaN},
  };
  check_values(td::special::ndtri(f64(column(ndtri, &Point::x))), column(ndtri, &Point::want), 1e-14, "ndtri");
  // Near p = 1/2, where ndtri is small: its relative accuracy, as PyTorch's (and mpmath's).
  check_values(td::special::ndtri(f64({0.4999, 0.5000009536743164})), {-0.0002506628300880075, 2.390507006295574e-06},
               1e-14, "ndtri near 1/2");

  struct NdtrRow {
    double x, ndtr, log_ndtr;
  };
  // ndtr: mpmath's values. PyTorch's (1 + erf(x / sqrt 2)) / 2 loses the left tail (0 at -38 and -10, 3.9e-11
  // off at -5); tandem's erfc(-x / sqrt 2) / 2 keeps it, down to the subnormal ndtr(-38).
  const std::vector<NdtrRow> ndtr = {
      {-40.0, 0.0, -804.6084420137539},
      {-38.0, 2.88542835e-316, -726.5572160188201},
      {-10.0, 7.619853024160525e-24, -53.23128515051248},
      {-5.0, 2.866515718791939e-07, -15.064998393988727},
      {-1.0, 0.15865525393145705, -1.841021645009264},
      {-0.5, 0.3085375387259869, -1.1759117615936185},
      {0.0, 0.5, -0.6931471805599453},
      {-0.0, 0.5, -0.6931471805599453},
      {0.5, 0.6914624612740131, -0.36894641528865635},
      {1.0, 0.8413447460685429, -0.17275377902344985},
      {5.0, 0.9999997133484281, -2.866516129637633e-07},
      {8.0, 0.9999999999999993, -6.220960574271758e-16},
      {10.0, 1.0, -7.619853024160498e-24},
      {40.0, 1.0, -0.0},
      {kInf, 1.0, -0.0},
      {-kInf, 0.0, -kInf},
      {kNaN, kNaN, kNaN},
  };
  const Tensor n = f64(column(ndtr, &NdtrRow::x));
  check_values(td::special::ndtr(n), column(ndtr, &NdtrRow::ndtr), 1e-14, "ndtr");
  check_values(td::special::log_ndtr(n), column(ndtr, &NdtrRow::log_ndtr), 1e-14, "log_ndtr");
}

TEST_CASE("entr, xlog1py and xlogy at zeros, poles, infinities and NaN as PyTorch's; the aliases equal their targets",
          "[cpu]") {
  // 0 at 0, -inf below it, NaN for NaN.
  check_values(td::special::entr(f64({0.0, -0.0, 1e-300, 0.5, 1.0, 2.0, 1e+300, kInf, -1.0, -1e-300, -kInf, kNaN})),
               {0.0, 0.0, 6.907755278982137e-298, 0.34657359027997264, -0.0, -1.3862943611198906,
                -6.907755278982137e+302, -kInf, -kInf, -kInf, -kInf, kNaN},
               1e-14, "entr");
  // 0 wherever x is 0 (+0, as PyTorch's: also for -1 < y < 0 and for x = -0), NaN wherever y is.
  check_values(
      td::special::xlog1py(f64({0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0, 2.0, 2.0, 2.0, 1.5, -3.0, kNaN, 2.0}),
                           f64({-1.0, kNaN, -5.0, kInf, -0.5, 3.0, 3.0, -1.0, -5.0, 0.5, 1e-20, 2.0, 1.0, kInf})),
      {0.0, kNaN, 0.0, 0.0, 0.0, 0.0, 0.0, -kInf, kNaN, 0.8109302162163288, 1.4999999999999998e-20, -3.2958368660043287,
       kNaN, kInf},
      1e-14, "xlog1py");
  check_values(
      td::special::xlogy(f64({0.0, 0.0, 0.0, 2.0, 3.0, 0.0, 1.5}), f64({0.0, kNaN, -1.0, 3.0, 0.0, kInf, 1e+300})),
      {0.0, kNaN, 0.0, 2.1972245773362196, -kInf, 0.0, 1036.1632918473206}, 1e-14, "xlogy");

  // The aliases and the methods: exactly their targets' values.
  const Tensor x = f64({0.3, -0.6, 2.5, 7.0, -2.5, 0.0, kInf, kNaN});
  const Tensor pos = f64({1.3, 2.5, 7.0, 100.5});
  const Tensor prob = f64({0.0, 0.05, 0.5, 0.9, 1.0});
  auto same = [](const Tensor& a, const Tensor& target, const std::string& what) {
    CHECK(a.dtype() == target.dtype());
    CHECK(a.sizes() == target.sizes());
    check_close(a, values(target), 0, 0, what);
  };
  same(td::special::gammaln(x), td::lgamma(x), "gammaln");
  same(td::special::psi(x), td::digamma(x), "psi");
  same(td::special::digamma(x), td::digamma(x), "special.digamma");
  same(td::special::polygamma(2, x), td::polygamma(2, x), "special.polygamma");
  same(td::special::multigammaln(pos, 3), td::mvlgamma(pos, 3), "multigammaln");
  same(td::special::i0(x), td::i0(x), "special.i0");
  same(td::special::expit(x), td::sigmoid(x), "expit");
  same(td::special::logit(prob), td::logit(prob), "special.logit");
  same(td::special::logit(prob, 0.1), td::logit(prob, 0.1), "special.logit with eps");
  same(td::special::exp2(x), td::exp2(x), "special.exp2");
  same(td::special::expm1(x), td::expm1(x), "special.expm1");
  same(td::special::log1p(x), td::log1p(x), "special.log1p");
  same(td::special::sinc(x), td::sinc(x), "special.sinc");
  same(td::special::round(x), td::round(x), "special.round");
  same(td::special::erf(x), td::erf(x), "special.erf");
  same(td::special::erfc(x), td::erfc(x), "special.erfc");
  same(td::special::erfinv(prob), td::erfinv(prob), "special.erfinv");
  same(td::special::xlogy(pos, x.narrow(0, 0, 4)), td::xlogy(pos, x.narrow(0, 0, 4)), "special.xlogy");
  const Tensor m = f64({0.3, -0.6, 2.5, 7.0, -2.5, 0.0}).view({2, 3});
  same(td::special::logsumexp(m, {1}), td::logsumexp(m, {1}), "special.logsumexp");
  same(td::special::logsumexp(m, {0}, true), td::logsumexp(m, {0}, true), "special.logsumexp keepdim");
  same(td::special::softmax(m, 1), td::softmax(m, 1), "special.softmax");
  same(td::special::softmax(m, 0, td::kFloat32), td::softmax(m, 0, td::kFloat32), "special.softmax to float32");
  same(td::special::log_softmax(m, 1), td::log_softmax(m, 1), "special.log_softmax");
  same(x.lgamma(), td::lgamma(x), "lgamma method");
  same(x.digamma(), td::digamma(x), "digamma method");
  same(x.polygamma(3), td::polygamma(3, x), "polygamma method");
  same(pos.mvlgamma(3), td::mvlgamma(pos, 3), "mvlgamma method");
  same(x.i0(), td::i0(x), "i0 method");
  // polygamma(0, x) is digamma; multigammaln of dimension 1 is lgamma.
  same(td::polygamma(0, x), td::digamma(x), "polygamma 0");
  check_close(td::mvlgamma(pos, 1), values(td::lgamma(pos)), 0, 0, "mvlgamma p = 1");
}

TEST_CASE(
    "special functions of integers give float32; float32, float16 and bfloat16 give their own dtype close to "
    "float64",
    "[cpu]") {
  // Integers give float32: the float64 reference rounded, within 2 ulps (8 for the composed ones).
  const Tensor ints = td::tensor({1, 2, 5, 0, -3, 10});
  check_ulps(td::lgamma(ints), {0.0, 0.0, 3.1780538303479458, kInf, kInf, 12.801827480081469}, 2, "lgamma of int64");
  check_ulps(td::digamma(ints),
             {-0.5772156649015328, 0.422784335098467, 1.5061176684318003, -kInf, kNaN, 2.251752589066721}, 2,
             "digamma of int64");
  const Tensor positive = td::tensor({1, 2, 5, 10});
  check_ulps(td::polygamma(1, positive),
             {1.6449340668482264, 0.6449340668482264, 0.22132295573711533, 0.10516633568168575}, 2,
             "polygamma 1 of int64");
  check_ulps(td::polygamma(2, positive),
             {-2.404113806319188, -0.4041138063191886, -0.04878973224511449, -0.011049834970802069}, 2,
             "polygamma 2 of int64");
  check_ulps(td::mvlgamma(td::tensor({2, 3, 5}), 3), {1.5963125911388552, 2.694924879806965, 9.140644699192542}, 8,
             "mvlgamma of int64");
  const Tensor small = td::tensor({0, 1, -3, 10});
  check_ulps(td::i0(small), {1.0, 1.2660658777520082, 4.880792585865024, 2815.716628466254}, 2, "i0 of int64");
  check_ulps(td::special::erfcx(small), {1.0, 0.427583576155807, 16205.988853999586, 0.05614099274382259}, 2,
             "erfcx of int64");
  check_ulps(td::special::i0e(small), {1.0, 0.46575960759364043, 0.24300035416182536, 0.1278333371634286}, 2,
             "i0e of int64");
  check_ulps(td::special::i1(small), {0.0, 0.5651591039924851, -3.9533702174026093, 2670.988303701255}, 2,
             "i1 of int64");
  check_ulps(td::special::i1e(small), {0.0, 0.2079104153497085, -0.19682671329730084, 0.1212626813844555}, 2,
             "i1e of int64");
  check_ulps(td::special::ndtri(td::tensor({0, 1, 2, -1})), {-kInf, kInf, kNaN, kNaN}, 2, "ndtri of int64");
  check_ulps(td::special::ndtr(td::tensor({0, 1, -2})), {0.5, 0.841344746068543, 0.02275013194817921}, 8,
             "ndtr of int64");
  check_ulps(td::special::log_ndtr(td::tensor({0, 1, -2, -5})),
             {-0.6931471805599453, -0.17275377902344985, -3.7831843336820317, -15.064998393988727}, 8,
             "log_ndtr of int64");
  check_ulps(td::special::entr(td::tensor({0, 1, 2, -1})), {0.0, -0.0, -1.3862943611198906, -kInf}, 8, "entr of int64");
  check_ulps(td::special::zeta(td::tensor({2, 3, 4}), td::tensor({1, 2, -1})),
             {1.6449340668482266, 0.2020569031595943, kInf}, 2, "zeta of int64");
  check_ulps(td::special::zeta(td::tensor({2, 3}), 2), {0.6449340668482266, 0.2020569031595943}, 2,
             "zeta of int64 by an int");
  check_ulps(td::special::xlog1py(td::tensor({0, 2, 3}), td::tensor({-1, 3, 0})), {0.0, 2.772588722239781, 0.0}, 8,
             "xlog1py of int64");

  // float32: each kernel computes in double and rounds once, within 2 ulps of the float64 reference rounded
  // to float32 (PyTorch's float64 at the same float32 inputs); polygamma multiplies zeta's float32 by n! in
  // float32, within 2 too. The composed ones (mvlgamma, ndtr, log_ndtr, entr, xlog1py) run float32 ops, each
  // input's rounding amplified by the function's condition number: within 8 ulps.
  const std::vector<double> gamma_at = {0.5, 1.5, 3.25, -2.5, 10.0, 100.0, 1e-3, 30.5};
  const Tensor g32 = td::tensor(gamma_at, td::kFloat32);
  check_ulps(td::lgamma(g32),
             {0.5723649429247001, -0.12078223763524522, 0.9358019311087253, -0.05624371649767405, 12.801827480081469,
              359.1342053695754, 6.907178837859066, 72.9534711841694},
             2, "lgamma float32");
  const Tensor d32 = td::tensor({0.5, 1.5, 3.25, -2.5, 10.0, 100.0, 1e-3, -0.75}, td::kFloat32);
  check_ulps(td::digamma(d32),
             {-1.9635100260214229, 0.036489973978576194, 1.016990911068179, 1.1031566406452433, 2.251752589066721,
              4.600161852738088, -1000.5755244342834, -2.8941202000429316},
             2, "digamma float32");
  check_ulps(td::polygamma(1, d32),
             {4.934802202073678, 0.9348022009716718, 0.35979829037509636, 9.53924664493752, 0.10516633568216657,
              0.010050166663333571, 1000001.547538299, 18.97510693196625},
             2, "polygamma 1 float32");
  check_ulps(td::polygamma(2, d32),
             {-16.828796644234316, -0.8287966442343201, -0.12815694713911513, -0.1082040516417282,
              -0.011049834970802069, -0.00010100499983335001, -1999999717.4129517, -124.5869991967962},
             2, "polygamma 2 float32");
  check_ulps(td::polygamma(3, d32),
             {97.40909103400242, 1.4090910340024367, 0.09043335532465575, 194.74787621918756, 0.0023199013042898686,
              2.030199990001333e-06, 5999998860067.771, 1557.7451069721521},
             2, "polygamma 3 float32");
  check_ulps(td::mvlgamma(td::tensor({1.5, 2.5, 7.25, 100.5}, td::kFloat32), 3),
             {2.1686775340635553, 1.8809954616117743, 20.104800157934413, 1079.1222234897402}, 8, "mvlgamma float32");
  check_ulps(td::special::erfcx(td::tensor({-3.0, -0.5, 0.0, 0.5, 3.0, 10.0, 1e4}, td::kFloat32)),
             {16205.988853999586, 1.952360489182557, 1.0, 0.6156903441929258, 0.17900115118138998, 0.05614099274382259,
              5.641895807268084e-05},
             2, "erfcx float32");
  const Tensor b32 = td::tensor({-3.0, 0.5, 1e-3, 10.0, 24.5, 30.0, 80.0, -0.0}, td::kFloat32);
  check_ulps(td::i0(b32),
             {4.880792585865024, 1.0634833707413236, 1.0000002500000393, 2815.716628466254, 3538383451.217241,
              781672297823.9775, 2.4751784043341698e+33, 1.0},
             2, "i0 float32");
  check_ulps(td::special::i0e(b32),
             {0.24300035416182536, 0.6450352704491501, 0.9990007495360894, 0.1278333371634286, 0.08101959885507688,
              0.0731459464822373, 0.04467329178227527, 1.0},
             2, "i0e float32");
  check_ulps(td::special::i1(b32),
             {-3.9533702174026093, 0.25789430539089636, 0.0005000000862487372, 2670.988303701255, 3465402511.4814854,
              768532038938.9569, 2.4596595795675403e+33, 0.0},
             2, "i1 float32");
  check_ulps(td::special::i1e(b32),
             {-0.19682671329730084, 0.15642080318487173, 0.0004995003360554941, 0.1212626813844555, 0.0793485288472677,
              0.07191633059864755, 0.04439320005809746, 0.0},
             2, "i1e float32");
  check_ulps(td::special::ndtri(td::tensor({0.025, 0.3, 0.75, 1e-6, 0.999}, td::kFloat32)),
             {-1.9599639781660518, -0.5244004784222137, 0.6744897501960817, -4.7534243093331225, 3.0902361298491052}, 2,
             "ndtri float32");
  check_ulps(td::special::ndtr(td::tensor({-3.0, -1.0, 0.0, 0.5, 2.0}, td::kFloat32)),
             {0.0013498980316301035, 0.15865525393145702, 0.5, 0.6914624612740131, 0.9772498680518208}, 8,
             "ndtr float32");
  check_ulps(td::special::log_ndtr(td::tensor({-10.0, -2.0, -1.0, 0.0, 1.0, 3.0}, td::kFloat32)),
             {-53.23128515051248, -3.7831843336820317, -1.841021645009264, -0.6931471805599453, -0.17275377902344985,
              -0.0013508099647481923},
             8, "log_ndtr float32");
  check_ulps(td::special::entr(td::tensor({0.25, 0.5, 2.0, 10.0, 1e-3}, td::kFloat32)),
             {0.34657359027997264, 0.34657359027997264, -1.3862943611198906, -23.02585092994046, 0.006907755559585455},
             8, "entr float32");
  check_ulps(
      td::special::xlog1py(td::tensor({2.0, -1.5, 0.5}, td::kFloat32), td::tensor({0.5, 3.0, -0.75}, td::kFloat32)),
      {0.8109302162163288, -2.0794415416798357, -0.6931471805599453}, 8, "xlog1py float32");
  check_ulps(td::special::zeta(td::tensor({2.0, 3.5, 1.5, 4.0}, td::kFloat32),
                               td::tensor({0.75, 2.0, 10.0, -1.5}, td::kFloat32)),
             {2.541879647671607, 0.12673386731705663, 0.6486616319415703, 32.4323793698646}, 2, "zeta float32");

  // float16 and bfloat16 keep their dtype; their values are the float64 function's at the same (rounded)
  // inputs within twice testing::rtol_for (float16 4e-3, bfloat16 3.2e-2: half an ulp each rounding, a few
  // roundings in the composed ones).
  using Fn = std::function<Tensor(const Tensor&)>;
  struct Low {
    const char* name;
    Fn fn;
    std::vector<double> at;
  };
  const std::vector<Low> lows = {
      {"lgamma", [](const Tensor& t) { return td::lgamma(t); }, {0.5, 1.5, 3.25, -2.5, 10.0, 7.5}},
      {"digamma", [](const Tensor& t) { return td::digamma(t); }, {0.5, 1.5, 3.25, -2.5, 10.0, -0.75}},
      {"polygamma 2", [](const Tensor& t) { return td::polygamma(2, t); }, {0.5, 1.5, 3.25, -2.5, 10.0, -0.75}},
      {"mvlgamma", [](const Tensor& t) { return td::mvlgamma(t, 3); }, {1.5, 2.5, 7.25, 20.5}},
      {"erfcx", [](const Tensor& t) { return td::special::erfcx(t); }, {-3.0, -0.5, 0.0, 0.5, 3.0, 10.0}},
      {"i0", [](const Tensor& t) { return td::i0(t); }, {-3.0, 0.5, 1e-3, 10.0}},
      {"i0e", [](const Tensor& t) { return td::special::i0e(t); }, {-3.0, 0.5, 1e-3, 10.0, 30.0}},
      {"i1", [](const Tensor& t) { return td::special::i1(t); }, {-3.0, 0.5, 1e-3, 10.0}},
      {"i1e", [](const Tensor& t) { return td::special::i1e(t); }, {-3.0, 0.5, 1e-3, 10.0, 30.0}},
      {"ndtri", [](const Tensor& t) { return td::special::ndtri(t); }, {0.025, 0.3, 0.75, 0.999}},
      {"ndtr", [](const Tensor& t) { return td::special::ndtr(t); }, {-1.0, 0.0, 0.5, 1.0}},
      {"log_ndtr", [](const Tensor& t) { return td::special::log_ndtr(t); }, {-10.0, -2.0, -1.0, 0.0, 1.0}},
      {"entr", [](const Tensor& t) { return td::special::entr(t); }, {0.25, 0.5, 2.0, 10.0}},
      {"zeta", [](const Tensor& t) { return td::special::zeta(t, t * 0.5 + 0.25); }, {2.0, 3.5, 1.5, 4.0}},
      {"xlog1py", [](const Tensor& t) { return td::special::xlog1py(t, t * 0.25); }, {2.0, -1.5, 0.5}},
  };
  for (td::DType dtype : {td::kFloat16, td::kBFloat16}) {
    for (const Low& c : lows) {
      const std::string what = std::string(c.name) + " " + td::dtype_name(dtype);
      INFO(what);
      const Tensor x = f64(c.at).to(dtype);
      const Tensor got = c.fn(x);
      CHECK(got.dtype() == dtype);
      check_close(got, values(c.fn(x.to(td::kFloat64))), 2 * rtol_for(dtype), 0, what);
    }
  }
}

TEST_CASE("gradients of the special functions equal PyTorch's, at their edges too", "[cpu]") {
  using T = const Tensor&;
  const std::vector<double> g = {0.3, -0.6, 2.5, 7.0, -2.5, 1e-5, 30.0, 1e10};
  check_close(grad_of([](T x) { return td::lgamma(x); }, g),
              {-3.502524222200133, -0.8947178779184491, 0.7031566406452431, 1.872784335098467, 1.1031566406452433,
               -100000.57719921567, 3.384438132685525, 23.025850929890456},
              1e-14, 0, "lgamma");
  // polygamma(1, x): mpmath's values; PyTorch's trigamma is 1e-10 off (12.245364544940365 at 0.3).
  check_close(grad_of([](T x) { return td::digamma(x); }, g),
              {12.245364546107732, 10.053134368307374, 0.49035775610023485, 0.15354517795933756, 9.539246644989124,
               10000000001.644909, 0.033895060357739946, 1.00000000005e-10},
              1e-14, 0, "digamma");
  check_close(grad_of([](T x) { return td::polygamma(2, x); }, g),
              {743.1417646550497, 282.49155533024333, 0.2239058488172521, 0.007198198563125444, 194.74787621918756,
               5.999999999999997e+20, 7.786003664736127e-05, 2.0000000003000003e-30},
              1e-14, 0, "polygamma 2");
  check_close(grad_of([](T x) { return td::mvlgamma(x, 3); }, {1.3, 2.5, 7.0, 100.5}),
              {-4.636723677773071, 1.1624309497222862, 5.3718133339302, 13.800460306645498}, 1e-14, 0, "mvlgamma");

  // zeta: -x zeta(x + 1, q) in q; in x nothing, as PyTorch: backward refuses.
  Tensor q = f64({0.7, 2.0, 10.0, -1.5}).requires_grad_();
  td::special::zeta(f64({2.0, 3.5, 1.5, 4.0}), q).sum().backward();
  check_close(q.grad(), {-6.434992874190923, -0.1914762876650899, -0.03409304879180181, -0.05229266658444346}, 1e-14, 0,
              "zeta in q");
  Tensor q3 = f64({0.7, 2.0}).requires_grad_();
  td::special::zeta(3.0, q3).sum().backward();
  check_close(q3.grad(), {-12.939574839213872, -0.24696970113341465}, 1e-14, 0, "zeta of a number in q");
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Tensor x = f64({2.0, 3.0}).requires_grad_();
    Tensor other = f64({1.5, 2.0}).requires_grad_(form == 2);
    Tensor y;
    CHECK_NOTHROW(y = form == 1 ? td::special::zeta(x, 2.5) : td::special::zeta(x, other));
    check_error([&] { y.sum().backward(); }, {"zeta", "no derivative with respect to x"});
  }

  // 2 x erfcx(x) - 2 / sqrt(pi), i1e(x) - sgn(x) i0e(x) and i0e(x) - i1e(x) (sgn(x) + 1/x) cancel (200-fold at
  // x = 10 and x = -100): an ulp of their terms shows as up to 4e-14 of the result, so these are checked to
  // 1e-15 absolute (a few ulps of the terms, which are below 1.2) as well as 1e-14 relative.
  check_close(grad_of([](T x) { return td::special::erfcx(x); }, {-3.0, -0.5, 0.0, 0.5, 3.0, 10.0}),
              {-97237.06150316462, -3.0807396562780696, -1.1283791670955126, -0.5126888229025868, -0.05437226000717277,
               -0.005559312219060919},
              1e-14, 1e-15, "erfcx");
  // i1 and i1e's gradient at exactly 0 is 1/2 (their formulas divide by x elsewhere).
  const std::vector<double> bg = {0.0, 1e-5, -1e-5, 0.5, -3.0, 24.9, 25.1, -100.0};
  check_close(grad_of([](T x) { return td::i0(x); }, bg),
              {0.0, 5.000000000062501e-06, -5.000000000062501e-06, 0.25789430539089636, -3.9533702174026093,
               5129395695.925742, 6240828249.8739805, -1.0683693903381625e+42},
              1e-14, 0, "i0");
  check_close(grad_of([](T x) { return td::special::i0e(x); }, bg),
              {0.0, -0.9999850001249991, 0.9999850001249991, -0.4886144672642784, 0.04617364086452452,
               -0.001630537729429074, -0.0016108820759278136, 0.00020022627396643067},
              1e-14, 1e-15, "i0e");
  check_close(grad_of([](T x) { return td::special::i1(x); }, bg),
              {0.5, 0.5000000000187498, 0.5000000000187498, 0.5476947599595309, 3.563002513397487, 5029629848.65881,
               6120379998.111312, 1.0630680132276922e+42},
              1e-14, 0, "i1");
  check_close(grad_of([](T x) { return td::special::i1e(x); }, bg),
              {0.5, 0.4999900000937492, 0.4999900000937492, 0.17577286089453492, -0.01943526356790909,
               -0.0015312612618200577, -0.001513592632373717, -0.0001972152562848689},
              1e-14, 1e-15, "i1e");

  check_close(grad_of([](T x) { return td::special::ndtri(x); }, {0.025, 0.3, 0.5, 0.9, 1e-10, 0.9999999999}),
              {17.110083080332725, 2.876103659264292, 2.5066282746310002, 5.698059856117003, 1535723698.1963818,
               1535723574.061949},
              1e-14, 0, "ndtri");
  check_close(
      grad_of([](T x) { return td::special::ndtr(x); }, {-10.0, -1.0, 0.0, 0.5, 5.0}),
      {7.694598626706365e-23, 0.2419707245191433, 0.3989422804014327, 0.35206532676429947, 1.4867195147342951e-06},
      1e-14, 0, "ndtr");
  // Finite in both tails. At -40 mpmath's 40.02496884720726: PyTorch's exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi)
  // subtracts two numbers near 800 and gives 40.024968847212364 (1.3e-13 off).
  const Tensor log_ndtr_grad =
      grad_of([](T x) { return td::special::log_ndtr(x); }, {-40.0, -10.0, -1.5, -1.0, 0.0, 5.0, 40.0});
  check_close(log_ndtr_grad,
              {40.02496884720726, 10.098093233962576, 1.9386771666225433, 1.525135276160982, 0.7978845608028654,
               1.4867199409049054e-06, 0.0},
              1e-14, 0, "log_ndtr");
  CHECK(td::isfinite(log_ndtr_grad).all().item<bool>());

  // -(1 + log x): +inf at 0, as PyTorch's.
  check_close(grad_of([](T x) { return td::special::entr(x); }, {0.0, 1e-300, 0.5, 1.0, 2.0}),
              {kInf, 689.7755278982137, -0.3068528194400547, -1.0, -1.6931471805599454}, 1e-14, 0, "entr");

  // xlog1py: x's gradient is log1p(y), 0 where x is 0 and y <= -1 (PyTorch's); y's is x / (1 + y).
  // Where x is 0 and y = -1 tandem's y gradient is 0, PyTorch's 0 / 0 = NaN; where x is 0 and y = +inf
  // tandem's x gradient is 0 (y is replaced there, as xlogy does), PyTorch's inf.
  Tensor xs = f64({0.0, 0.0, 0.0, 0.0, 1.5, 0.0, 2.0}).requires_grad_();
  Tensor ys = f64({2.0, -1.0, -5.0, kInf, 0.5, -0.5, -0.9}).requires_grad_();
  td::special::xlog1py(xs, ys).sum().backward();
  check_close(xs.grad(),
              {1.0986122886681096, 0.0, 0.0, 0.0, 0.4054651081081644, -0.6931471805599453, -2.302585092994046}, 1e-14,
              0, "xlog1py in x");
  check_close(ys.grad(), {0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 20.000000000000004}, 1e-14, 0, "xlog1py in y");
}

TEST_CASE("second derivatives of lgamma, digamma and polygamma equal PyTorch's", "[cpu]") {
  using T = const Tensor&;
  const std::vector<double> at = {0.3, -0.6, 2.5, 7.0, -2.5};
  // polygamma(1, x): mpmath's values (PyTorch's trigamma is 1e-10 off).
  check_close(second_derivative_of([](T x) { return td::lgamma(x); }, at),
              {12.245364546107732, 10.053134368307374, 0.49035775610023485, 0.15354517795933756, 9.539246644989124},
              1e-14, 0, "lgamma");
  check_close(
      second_derivative_of([](T x) { return td::digamma(x); }, at),
      {-75.27253658872601, -22.97986936431909, -0.23620405164172736, -0.023530472985855234, -0.1082040516417282}, 1e-14,
      0, "digamma");
  check_close(
      second_derivative_of([](T x) { return td::polygamma(2, x); }, at),
      {-9883.46855549699, -2039.9492981793474, -0.3137559995067314, -0.003296771589026381, -0.06799599950675606}, 1e-14,
      0, "polygamma 2");
}

TEST_CASE("lgamma_, digamma_, polygamma_, mvlgamma_ and i0_ give the out-of-place values; integers refuse them",
          "[cpu]") {
  const std::vector<double> v = {0.5, 2.5, -1.5, 7.0, 1e-3, -0.25};
  struct InPlace {
    const char* name;
    std::function<Tensor&(Tensor&)> in_place;
    std::function<Tensor(const Tensor&)> out_of_place;
  };
  const std::vector<InPlace> cases = {
      {"lgamma_", [](Tensor& t) -> Tensor& { return t.lgamma_(); }, [](const Tensor& t) { return td::lgamma(t); }},
      {"digamma_", [](Tensor& t) -> Tensor& { return t.digamma_(); }, [](const Tensor& t) { return td::digamma(t); }},
      {"polygamma_", [](Tensor& t) -> Tensor& { return t.polygamma_(2); },
       [](const Tensor& t) { return td::polygamma(2, t); }},
      {"i0_", [](Tensor& t) -> Tensor& { return t.i0_(); }, [](const Tensor& t) { return td::i0(t); }},
  };
  for (const InPlace& c : cases) {
    INFO(c.name);
    Tensor x = f64(v);
    const Tensor want = c.out_of_place(x);
    CHECK(&c.in_place(x) == &x);
    check_close(x, values(want), 0, 0, c.name);
    // Through a transposed view: the view's elements, in its order.
    Tensor base = f64(v).view({2, 3});
    Tensor view = base.t();
    c.in_place(view);
    check_close(view, values(c.out_of_place(f64(v).view({2, 3}).t())), 0, 0, std::string(c.name) + " of a view");
    check_close(base, values(c.out_of_place(f64(v).view({2, 3}))), 0, 0, std::string(c.name) + " of a view's base");
  }
  Tensor m = f64({1.5, 2.5, 7.0, 100.5});
  const Tensor want = td::mvlgamma(m, 3);
  CHECK(&m.mvlgamma_(3) == &m);
  check_close(m, values(want), 0, 0, "mvlgamma_");

  // The result, float32, can't be cast to int64: an error, and the tensor unchanged (PyTorch refuses them all).
  Tensor ints = td::tensor({1, 2, 5});
  const Snapshot before(ints);
  check_error([&] { ints.lgamma_(); }, {"lgamma_", "float32", "int64"});
  before.check_unchanged(ints);
  check_error([&] { ints.digamma_(); }, {"digamma_", "float32", "int64"});
  before.check_unchanged(ints);
  check_error([&] { ints.i0_(); }, {"i0_", "float32", "int64"});
  before.check_unchanged(ints);
  check_error([&] { ints.polygamma_(1); }, {"polygamma_", "float32", "int64"});
  before.check_unchanged(ints);
  check_error([&] { ints.mvlgamma_(1); }, {"mvlgamma_", "float32", "int64"});
  before.check_unchanged(ints);
}

TEST_CASE("lgamma_, digamma_, i0_, mvlgamma_ and polygamma_ record the out-of-place gradients", "[cpu]") {
  // PyTorch 2.15's gradients at [1.3, 2.5] (digamma_'s, polygamma(1, x), mpmath's).
  struct InPlace {
    const char* name;
    std::function<void(Tensor&)> in_place;
    std::vector<double> grad;
  };
  const std::vector<InPlace> cases = {
      {"lgamma_", [](Tensor& t) { t.lgamma_(); }, {-0.16919088886680006, 0.7031566406452431}},
      {"digamma_", [](Tensor& t) { t.digamma_(); }, {1.1342534349966193, 0.49035775610023485}},
      {"i0_", [](Tensor& t) { t.i0_(); }, {0.7973293149792692, 2.5167162452886984}},
      {"mvlgamma_", [](Tensor& t) { t.mvlgamma_(3); }, {-4.636723677773071, 1.1624309497222862}},
      {"polygamma_", [](Tensor& t) { t.polygamma_(1); }, {-1.1984625146519565, -0.23620405164172736}},
  };
  for (const InPlace& c : cases) {
    INFO(c.name);
    Tensor leaf = f64({1.3, 2.5}).requires_grad_();
    Tensor y = leaf * 1;
    c.in_place(y);
    REQUIRE_NOTHROW(y.sum().backward());
    check_close(leaf.grad(), c.grad, 1e-14, 0, c.name);
  }
}

TEST_CASE("special functions refuse a negative n, mvlgamma's p and domain, and undefined inputs, changing nothing",
          "[cpu]") {
  Tensor x = f64({0.5, 2.5, 3.0});
  const Snapshot before(x);
  check_error([&] { td::polygamma(-1, x); }, {"polygamma", "negative"});
  check_error([&] { td::special::polygamma(-2, x); }, {"polygamma", "negative"});
  check_error([&] { x.polygamma(-1); }, {"polygamma", "negative"});
  check_error([&] { x.polygamma_(-1); }, {"polygamma", "negative"});
  before.check_unchanged(x);
  check_error([&] { td::mvlgamma(x, 0); }, {"mvlgamma", "p has to be greater than or equal to 1"});
  check_error([&] { x.mvlgamma_(-1); }, {"mvlgamma", "p has to be greater than or equal to 1"});
  before.check_unchanged(x);
  // Every element must exceed (p - 1) / 2: 1 for p = 3. PyTorch 2.15 no longer checks and sums the lgammas
  // (inf at x = 1, 4.949110218939416 at 0.9); tandem keeps the check torch.mvlgamma documents.
  Tensor low = f64({1.5, 1.0, 7.0});
  const Snapshot low_before(low);
  check_error([&] { td::mvlgamma(low, 3); }, {"mvlgamma", "greater than (p-1)/2"});
  check_error([&] { td::special::multigammaln(f64({2.0, 0.9}), 3); }, {"mvlgamma", "greater than (p-1)/2"});
  check_error([&] { td::mvlgamma(f64({2.0, kNaN}), 1); }, {"mvlgamma", "greater than (p-1)/2"});
  check_error([&] { low.mvlgamma_(3); }, {"mvlgamma", "greater than (p-1)/2"});
  low_before.check_unchanged(low);
  CHECK(td::mvlgamma(td::empty({0}, td::kFloat64), 3).numel() == 0);

  const Tensor u;
  check_error([&] { td::lgamma(u); }, {"lgamma", "undefined"});
  check_error([&] { td::digamma(u); }, {"digamma", "undefined"});
  check_error([&] { td::polygamma(1, u); }, {"polygamma", "undefined"});
  check_error([&] { td::polygamma(0, u); }, {"polygamma", "undefined"});
  check_error([&] { td::mvlgamma(u, 2); }, {"mvlgamma", "undefined"});
  check_error([&] { td::i0(u); }, {"i0", "undefined"});
  check_error([&] { td::special::erfcx(u); }, {"erfcx", "undefined"});
  check_error([&] { td::special::i0e(u); }, {"i0e", "undefined"});
  check_error([&] { td::special::i1(u); }, {"i1", "undefined"});
  check_error([&] { td::special::i1e(u); }, {"i1e", "undefined"});
  check_error([&] { td::special::ndtri(u); }, {"ndtri", "undefined"});
  check_error([&] { td::special::ndtr(u); }, {"ndtr", "undefined"});
  check_error([&] { td::special::log_ndtr(u); }, {"log_ndtr", "undefined"});
  check_error([&] { td::special::entr(u); }, {"entr", "undefined"});
  check_error([&] { td::special::xlog1py(u, x); }, {"xlog1py", "input", "undefined"});
  check_error([&] { td::special::xlog1py(x, u); }, {"xlog1py", "other", "undefined"});
  check_error([&] { td::special::zeta(u, x); }, {"zeta", "input", "undefined"});
  check_error([&] { td::special::zeta(x, u); }, {"zeta", "other", "undefined"});
  check_error([&] { td::special::zeta(u, 2.0); }, {"zeta", "undefined"});
  check_error([&] { td::special::zeta(2.0, u); }, {"zeta", "undefined"});
  before.check_unchanged(x);
}
