// torch.special's Bessel functions of kernels/bessel.h: bessel_j0, bessel_j1, bessel_y0, bessel_y1,
// modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1, spherical_bessel_j0 and airy_ai. Values
// against mpmath at 40 digits (the tables are printed by make_bessel_table.py), Wronskians at random
// points, PyTorch 2.15's edges, dtypes, gradients (none for the four PyTorch does not differentiate)
// and errors.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Tensor;
using td::testing::check_error;
using td::testing::check_values;
using td::testing::values;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

Tensor f64(const std::vector<double>& v) { return td::tensor(v, td::kFloat64); }

template <typename Row>
std::vector<double> column(const std::vector<Row>& rows, double Row::*field) {
  std::vector<double> out;
  for (const Row& row : rows) out.push_back(row.*field);
  return out;
}

// |got - want| <= rtol * scale (+ a few subnormal steps: values below double's normal range keep fewer
// digits), scale being each reference's magnitude or, for a function that oscillates, its envelope.
void check_scaled(const Tensor& got, const std::vector<double>& want, const std::vector<double>& scale,
                  const std::vector<double>& rtol, const std::string& what) {
  INFO(what);
  const std::vector<double> v = values(got);
  REQUIRE(v.size() == want.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i << ": " << v[i] << " against " << want[i] << " (scale " << scale[i] << ")");
    CHECK(std::abs(v[i] - want[i]) <= rtol[i] * scale[i] + 2e-323);
  }
}

struct JYRow {
  double x, j0, j1, y0, y1;
};
// PyTorch 2.15 is off at many of these, relative to the envelope min(1, sqrt(2 / (pi x))): by 2.8e-8 in
// J0 at 5, 3.7e-8 in J1 at 7.5, 3.5e-8 in Y0 at 5, 3e-7 in J0 at 1e10, 3% at 1e15 and 40% or more at 1e300.
const std::vector<JYRow> kJY = {
    {1e-300, 1.0, 5e-301, -439.8351636227653, -6.366197723675813e+299},
    {1e-20, 1.0, 5e-21, -29.391228250285796, -6.3661977236758135e+19},
    {1e-06, 0.99999999999975, 4.999999999999375e-07, -8.869031481659444, -636619.772372175},
    {9.99e-06, 0.99999999997505, 4.994999999937687e-06, -7.403797221996975, -63725.702978269765},
    {1e-05, 0.999999999975, 4.9999999999375e-06, -7.40316028370197, -63661.97727536548},
    {1.0001e-05, 0.999999999974995, 5.000499999937481e-06, -7.403096624907581, -63655.61171420147},
    {0.1, 0.99750156206604, 0.049937526036242, -1.5342386513503667, -6.4589510947020266},
    {0.5, 0.9384698072408129, 0.2422684576748739, -0.44451873350670656, -1.471472392670243},
    {0.8935769662791675, 0.8101238593535642, 0.4036537406955804, -2.3389279284062102e-17, -0.8794208024971948},
    {1.0, 0.7651976865579666, 0.4400505857449335, 0.08825696421567696, -0.7812128213002887},
    {2.0, 0.22389077914123567, 0.5767248077568734, 0.5103756726497451, -0.10703243154093754},
    {2.197141326031017, 0.11195216419049153, 0.5563684384218895, 0.5207864124022675, 2.513306678922122e-17},
    {2.404825557695773, -6.10876525973673e-17, 0.5191474972894667, 0.509924383448479, 0.1027466824382596},
    {3.8317059702075125, -0.402759395702553, -6.149807356994906e-17, 0.0513976730994109, 0.41251739515882574},
    {5.0, -0.1775967713143383, -0.32757913759146523, -0.30851762524903376, 0.14786314339122683},
    {7.5, 0.2663396578803784, 0.1352484275797055, 0.11731328614820863, -0.25912851048611624},
    {10.0, -0.24593576445134835, 0.04347274616886144, 0.055671167283599395, 0.24901542420695388},
    {15.0, -0.014224472826780772, 0.20510403861352275, 0.20546429603891828, 0.02107362803687351},
    {20.0, 0.16702466434058316, 0.06683312417585005, 0.06264059680938383, -0.1655116143625213},
    {24.999, 0.09614138240616853, -0.12545146980669455, -0.12734820056741034, -0.098706616767517},
    {25.0, 0.09626678327595811, -0.1253502495802899, -0.12724943226800614, -0.09882996478323741},
    {25.001, 0.09639208286496326, -0.1252489082554375, -0.12715054067237816, -0.09895320919528061},
    {30.0, -0.08636798358104021, -0.11875106261662294, -0.11729573168666403, 0.08442557066174723},
    {30.634606468431976, 7.771064981615525e-17, -0.1441659776863732, -0.1441468099486305, -0.0023520547411523683},
    {50.0, 0.055812327669251816, -0.09751182812517514, -0.09806499547007708, -0.05679566856201477},
    {100.0, 0.019985850304223122, -0.07714535201411216, -0.07724431336508315, -0.020372312002759792},
    {1000.0, 0.024786686152420176, 0.004728311907089524, 0.0047159179776228135, -0.024784331292351778},
    {100000.0, -0.0017192011162359723, 0.0018467575628825677, 0.001846766158865064, 0.0017192103500882562},
    {10000000000.0, 2.175591750246892e-06, -7.676508175684158e-06, -7.676508175792937e-06, -2.175591750630717e-06},
    {1000000000000000.0, 6.156638646885021e-09, 2.4468665123771328e-08, 2.4468665123771324e-08, -6.15663864688501e-09},
    {1e+300, -7.860673062724093e-151, -1.3681360450342481e-151, -1.3681360450342481e-151, 7.860673062724093e-151},
};

struct KRow {
  double x, k0, k1, k0e, k1e;
};
// PyTorch 2.15 agrees with all of these to 1e-14.
const std::vector<KRow> kK = {
    {1e-300, 690.8914594138721, 9.999999999999999e+299, 690.8914594138721, 9.999999999999999e+299},
    {1e-10, 23.14178244559887, 10000000000.0, 23.141782447913048, 10000000001.0},
    {1e-05, 11.628856980944363, 99999.99993935571, 11.628973270095617, 100000.99994435512},
    {0.1, 2.4270690247020164, 9.853844780870606, 2.6823261022628944, 10.890182683049696},
    {0.5, 0.9244190712276659, 1.656441120003301, 1.5241093857739094, 2.731009708211786},
    {0.999, 0.42162685730813515, 0.602931276323012, 1.144955096845731, 1.6372990143017028},
    {1.0, 0.42102443824070834, 0.6019072301972346, 1.144463079806895, 1.6361534862632583},
    {1.001, 0.42042304210549164, 0.6008854108196824, 1.1439717155411275, 1.6350100860707517},
    {2.0, 0.11389387274953344, 0.13986588181652243, 0.8415682150707714, 1.0334768470686886},
    {5.0, 0.0036910983340425942, 0.004044613445452165, 0.547807564313519, 0.6002738587883126},
    {10.0, 1.778006231616765e-05, 1.8648773453825585e-05, 0.39163193443659866, 0.41076657059578875},
    {50.0, 3.4101677497894956e-23, 3.4441022267175555e-23, 0.17680715585742934, 0.17856655855881556},
    {100.0, 4.656628229175902e-45, 4.6798537356369095e-45, 0.12517562165912657, 0.12579995047957854},
    {700.0, 4.669776431685377e-306, 4.6731107967079664e-306, 0.04736236945461357, 0.04739618765349454},
    {705.0, 3.135297023712879e-308, 3.137519851223379e-308, 0.04719417862735435, 0.04722763782365853},
    {720.0, 9.49054983e-315, 9.497138207e-315, 0.04670015738977616, 0.046732576809588595},
    {745.0, 0.0, 0.0, 0.04591017865413021, 0.045940980528754366},
    {10000.0, 0.0, 0.0, 0.012532984717699286, 0.012533611351270506},
    {10000000000.0, 0.0, 0.0, 1.2533141372998339e-05, 1.2533141373624996e-05},
    {1e+300, 0.0, 0.0, 1.2533141373155002e-150, 1.2533141373155002e-150},
};

struct AiRow {
  double x, ai;
};
// PyTorch 2.15 gives 6.6e-7 at the first zero (-2.3381), where Ai is 2.7e-17, and 0 at 104 and 105.
const std::vector<AiRow> kAi = {
    {-10000.0, 0.02705738360464258},
    {-1000.0, 0.05597189577301992},
    {-100.0, 0.1767533932395529},
    {-30.0, -0.08796818845684216},
    {-11.3, 0.2544398251150477},
    {-11.2, 0.18370367405125296},
    {-10.0, 0.04024123848644319},
    {-5.0, 0.35076100902411433},
    {-2.338107410459767, 2.743319340666283e-17},
    {-1.0001, 0.5355618966711684},
    {-1.0, 0.5355608832923521},
    {-0.5, 0.4757280916105396},
    {-1e-10, 0.3550280539136992},
    {0.0, 0.3550280538878172},
    {1e-10, 0.3550280538619353},
    {0.5, 0.23169360648083348},
    {1.0, 0.13529241631288141},
    {1.0001, 0.13527650224520985},
    {1.5, 0.07174949700810541},
    {2.0, 0.03492413042327438},
    {5.0, 0.00010834442813607442},
    {10.0, 1.1047532552898686e-10},
    {50.0, 4.5849417240748285e-104},
    {100.0, 2.6344821520881846e-291},
    {104.0, 7.448752158292227e-309},
    {105.0, 2.70062041745e-313},
};

}  // namespace

TEST_CASE("bessel_j0, j1, y0 and y1 equal mpmath's to 4e-15 of the envelope, from 1e-300 to 1e300", "[cpu]") {
  const Tensor x = f64(column(kJY, &JYRow::x));
  // Near a zero the value is as exact as the envelope allows; elsewhere relative (Y0, Y1 near 0 are large).
  std::vector<double> scale, rtol(kJY.size(), 4e-15);
  for (const JYRow& row : kJY) scale.push_back(std::min(1.0, std::sqrt(2 / (kPi * row.x))));
  auto envelope_or_value = [&](double JYRow::*field) {
    std::vector<double> s = scale;
    for (size_t i = 0; i < kJY.size(); ++i) s[i] = std::max(s[i], std::abs(kJY[i].*field));
    return s;
  };
  check_scaled(td::special::bessel_j0(x), column(kJY, &JYRow::j0), envelope_or_value(&JYRow::j0), rtol, "j0");
  check_scaled(td::special::bessel_j1(x), column(kJY, &JYRow::j1), envelope_or_value(&JYRow::j1), rtol, "j1");
  check_scaled(td::special::bessel_y0(x), column(kJY, &JYRow::y0), envelope_or_value(&JYRow::y0), rtol, "y0");
  check_scaled(td::special::bessel_y1(x), column(kJY, &JYRow::y1), envelope_or_value(&JYRow::y1), rtol, "y1");
  // Odd and even: J0(-x) = J0(x), J1(-x) = -J1(x).
  check_scaled(td::special::bessel_j0(-x), column(kJY, &JYRow::j0), envelope_or_value(&JYRow::j0), rtol, "j0(-x)");
  std::vector<double> minus_j1 = column(kJY, &JYRow::j1);
  for (double& v : minus_j1) v = -v;
  check_scaled(td::special::bessel_j1(-x), minus_j1, envelope_or_value(&JYRow::j1), rtol, "j1(-x)");
}

TEST_CASE("modified_bessel_k0, k1 and the scaled ones equal mpmath's to 2e-15, into the subnormals", "[cpu]") {
  const Tensor x = f64(column(kK, &KRow::x));
  const std::vector<double> rtol(kK.size(), 2e-15);
  auto magnitude = [&](double KRow::*field) {
    std::vector<double> s = column(kK, field);
    for (double& v : s) v = std::abs(v);
    return s;
  };
  check_scaled(td::special::modified_bessel_k0(x), column(kK, &KRow::k0), magnitude(&KRow::k0), rtol, "k0");
  check_scaled(td::special::modified_bessel_k1(x), column(kK, &KRow::k1), magnitude(&KRow::k1), rtol, "k1");
  check_scaled(td::special::scaled_modified_bessel_k0(x), column(kK, &KRow::k0e), magnitude(&KRow::k0e), rtol, "k0e");
  check_scaled(td::special::scaled_modified_bessel_k1(x), column(kK, &KRow::k1e), magnitude(&KRow::k1e), rtol, "k1e");
}

TEST_CASE("airy_ai equals mpmath's within its condition number, both sides and through each method's ends",
          "[cpu]") {
  // An argument rounded to double moves Ai by about zeta = (2/3) |x|^(3/2) of its rounding, relative to
  // the value on the right and to the envelope |x|^(-1/4) / sqrt(pi) on the left: so does any method's.
  const Tensor x = f64(column(kAi, &AiRow::x));
  std::vector<double> scale, rtol;
  for (const AiRow& row : kAi) {
    const double ax = std::abs(row.x), zeta = 2.0 / 3 * ax * std::sqrt(ax);
    scale.push_back(row.x < -1 ? std::max(std::abs(row.ai), 1 / std::sqrt(kPi) / std::pow(ax, 0.25))
                               : std::abs(row.ai));
    rtol.push_back(4e-15 + 1e-15 * zeta);
  }
  check_scaled(td::special::airy_ai(x), column(kAi, &AiRow::ai), scale, rtol, "airy_ai");
}

TEST_CASE("Bessel Wronskians hold at random points: J1 Y0 - J0 Y1 = 2 / (pi x), I0 K1 + I1 K0 = 1 / x", "[cpu]") {
  td::testing::reseed(601);
  // log-uniform over [1e-3, 1e4]: Miller's recurrence and Hankel's expansions, K's series and integral.
  const Tensor x = td::exp(td::rand({4000}, td::kFloat64) * std::log(1e7) + std::log(1e-3));
  namespace sp = td::special;
  const Tensor jy = sp::bessel_j1(x) * sp::bessel_y0(x) - sp::bessel_j0(x) * sp::bessel_y1(x);
  const Tensor ik =
      td::special::i0e(x) * sp::scaled_modified_bessel_k1(x) + td::special::i1e(x) * sp::scaled_modified_bessel_k0(x);
  const std::vector<double> xs = values(x), jyv = values(jy), ikv = values(ik);
  double worst_jy = 0, worst_ik = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    worst_jy = std::max(worst_jy, std::abs(jyv[i] * kPi * xs[i] / 2 - 1));
    worst_ik = std::max(worst_ik, std::abs(ikv[i] * xs[i] - 1));
  }
  CHECK(worst_jy < 1e-14);
  CHECK(worst_ik < 1e-14);
}

TEST_CASE("The Bessel functions' edges as PyTorch's: signed zeros, poles, infinities, NaN, subnormals", "[cpu]") {
  const Tensor x = f64({-kInf, -2, -0.0, 0, 1e-310, kInf, kNaN});
  namespace sp = td::special;
  // PyTorch gives NaN at the infinities where the limits are 0 (J, Y, Ai), as here. J1(2), I0(2), I1(2) and
  // Ai(-2) are mpmath's (PyTorch: 0.5767248077568801, 0.22740742820168564 for J1 and Ai).
  check_values(sp::bessel_j0(x), {kNaN, 0.22389077914123567, 1, 1, 1, kNaN, kNaN}, 1e-15, "j0");
  check_values(sp::bessel_j1(x), {kNaN, -0.5767248077568734, -0.0, 0, 5e-311, kNaN, kNaN}, 1e-15, "j1");
  check_values(sp::bessel_y0(x), {kNaN, kNaN, -kInf, -kInf, -454.4938756003539, kNaN, kNaN}, 1e-15, "y0");
  check_values(sp::bessel_y1(x), {kNaN, kNaN, -kInf, -kInf, -kInf, kNaN, kNaN}, 1e-15, "y1");
  // I1 is odd at -0 too (PyTorch's gives +0), as special::i1.
  check_values(sp::modified_bessel_i0(x), {kNaN, 2.2795853023360673, 1, 1, 1, kNaN, kNaN}, 1e-15, "i0");
  check_values(sp::modified_bessel_i1(x), {kNaN, -1.590636854637329, -0.0, 0, 5e-311, kNaN, kNaN}, 1e-15, "i1");
  check_values(sp::modified_bessel_k0(x), {kNaN, kNaN, kInf, kInf, 713.9173103438126, 0, kNaN}, 1e-15, "k0");
  check_values(sp::modified_bessel_k1(x), {kNaN, kNaN, kInf, kInf, kInf, 0, kNaN}, 1e-15, "k1");
  check_values(sp::scaled_modified_bessel_k0(x), {kNaN, kNaN, kInf, kInf, 713.9173103438126, 0, kNaN}, 1e-15, "k0e");
  check_values(sp::scaled_modified_bessel_k1(x), {kNaN, kNaN, kInf, kInf, kInf, 0, kNaN}, 1e-15, "k1e");
  check_values(sp::spherical_bessel_j0(x), {0, 0.45464871341284085, 1, 1, 1, 0, kNaN}, 1e-15, "spherical_bessel_j0");
  const double ai0 = 0.3550280538878172;
  check_values(sp::airy_ai(x), {kNaN, 0.22740742820168558, ai0, ai0, ai0, kNaN, kNaN}, 1e-15, "airy_ai");
  // K0(1e-310) is log's: finite; K1 = 1/x overflows. Far right K underflows to 0, its scaled form does not.
  check_values(sp::scaled_modified_bessel_k0(f64({1e300})), {1.2533141373155002e-150}, 1e-14, "k0e far");
  // The ends of double's range: log(x / 2) would lose a subnormal x's digits (Y0 gave -inf at 5e-324), and
  // pi x, 2 x overflow past 5.7e307 (J0 gave -0, e^x K0 a value 5 times too small).
  check_values(sp::bessel_y0(f64({5e-324, 1.5e-323})), {-473.9990734230043, -473.2996751178722}, 1e-15, "y0 subnormal");
  check_values(sp::modified_bessel_k0(f64({5e-324})), {744.5560034370396}, 1e-15, "k0 subnormal");
  check_values(sp::bessel_j0(f64({8e307})), {-6.655978889084617e-155}, 1e-14, "j0 near the largest double");
  check_values(sp::bessel_y1(f64({8e307})), {6.655978889084617e-155}, 1e-14, "y1 near the largest double");
  check_values(sp::scaled_modified_bessel_k0(f64({1e308})), {1.2533141373155003e-154}, 1e-14, "k0e near the largest");
}

TEST_CASE("The Bessel functions take every floating dtype and views; integers give float32", "[cpu]") {
  namespace sp = td::special;
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> fns = {
      {"bessel_j0", sp::bessel_j0},
      {"bessel_j1", sp::bessel_j1},
      {"bessel_y0", sp::bessel_y0},
      {"bessel_y1", sp::bessel_y1},
      {"modified_bessel_i0", sp::modified_bessel_i0},
      {"modified_bessel_i1", sp::modified_bessel_i1},
      {"modified_bessel_k0", sp::modified_bessel_k0},
      {"modified_bessel_k1", sp::modified_bessel_k1},
      {"scaled_modified_bessel_k0", sp::scaled_modified_bessel_k0},
      {"scaled_modified_bessel_k1", sp::scaled_modified_bessel_k1},
      {"spherical_bessel_j0", sp::spherical_bessel_j0},
      {"airy_ai", sp::airy_ai},
  };
  td::testing::reseed(602);
  const Tensor base = td::rand({6, 5}, td::kFloat64) * 30 + 0.01;
  // Dense enough to hold most float16 values of the range: rounding the double result to float
  // on the way to float16 is off by one in about 1 of 8000 of them.
  const Tensor grid = td::linspace(0.01, 30, 60000, td::kFloat64);
  for (const auto& [name, fn] : fns) {
    INFO(name);
    const Tensor want = fn(base);
    // Computed in double from the rounded argument and rounded once.
    for (td::DType dtype : {td::kFloat32, td::kFloat16, td::kBFloat16}) {
      const Tensor rounded = grid.to(dtype);
      const Tensor got = fn(rounded);
      REQUIRE(got.dtype() == dtype);
      td::testing::check_close(got, fn(rounded.to(td::kFloat64)).to(dtype).to(td::kFloat64), 0, 0, name);
    }
    // A transposed view: the same values in the view's order.
    td::testing::check_close(fn(base.t()), values(want.t().contiguous()), 0, 0, name + " of a view");
    const Tensor from_int = fn(td::tensor({1, 2, 3}));
    CHECK(from_int.dtype() == td::kFloat32);
    td::testing::check_close(from_int, values(fn(f64({1, 2, 3})).to(td::kFloat32)), 0, 0, name + " of int64");
    check_error([&] { fn(Tensor()); }, {name});
  }
}

TEST_CASE("The Bessel functions' gradients: PyTorch's nodes, the limits at 0, none for the four without", "[cpu]") {
  namespace sp = td::special;
  const Tensor x = f64({0, 0.5, 2, 30}).requires_grad_();
  struct Grad {
    std::string node;
    std::function<Tensor(const Tensor&)> fn;
    std::vector<double> want;    // d/dx at 0, 0.5, 2, 30
    std::vector<double> second;  // d2/dx2 at 0 and 0.5, PyTorch 2.15's (Y1's NaN at 0 too)
  };
  // The derivatives by their closed forms at 0.5, 2, 30 (mpmath's values); at 0 the limits.
  const std::vector<Grad> grads = {
      {"SpecialBesselJ0Backward0",
       sp::bessel_j0,
       {-0.0, -0.2422684576748739, -0.5767248077568734, 0.11875106261662294},
       {-0.5, -0.4539328918910652}},
      {"SpecialBesselJ1Backward0",
       sp::bessel_j1,
       {0.5, 0.4539328918910651, -0.06447162473720103, -0.08240961482715278},
       {0.0, -0.1810604107575089}},
      {"SpecialBesselY0Backward0",
       sp::bessel_y0,
       {kInf, 1.471472392670243, 0.10703243154093754, -0.08442557066174723},
       {-kInf, -2.49842605183378}},
      {"SpecialBesselY1Backward0",
       sp::bessel_y1,
       {kInf, 2.4984260518337797, 0.5638918884202139, -0.12010991737538894},
       {kNaN, -9.41126928167829}},
      {"SpecialModifiedBesselI0Backward0",
       sp::modified_bessel_i0,
       {0.0, 0.2578943053908963, 1.590636854637329, 768532038938.957},
       {0.5, 0.5476947599595309}},
      {"SpecialModifiedBesselI1Backward0",
       sp::modified_bessel_i1,
       {0.5, 0.5476947599595309, 1.4842668750174028, 756054563192.679},
       {0.0, 0.1940820070354201}},
      {"SpecialModifiedBesselK0Backward0",
       sp::modified_bessel_k0,
       {-kInf, -1.656441120003301, -0.13986588181652243, -2.1677320018915495e-14},
       {kInf, 4.237301311234267}},
      {"SpecialModifiedBesselK1Backward0",
       sp::modified_bessel_k1,
       {-kInf, -4.237301311234267, -0.18382681365779466, -2.2047352298594412e-14},
       {kInf, 16.756808222485038}},
  };
  for (const Grad& g : grads) {
    INFO(g.node);
    const Tensor y = g.fn(x);
    REQUIRE(y.requires_grad());
    CHECK(y.grad_fn()->name() == g.node);
    const Tensor dx = td::autograd::grad({y.sum()}, {x})[0];
    check_values(dx, g.want, 1e-13, g.node);
    const Tensor near = f64({0, 0.5}).requires_grad_();
    const Tensor first = td::autograd::grad({g.fn(near).sum()}, {near}, {}, std::nullopt, true)[0];
    check_values(td::autograd::grad({first.sum()}, {near})[0], g.second, 1e-13, g.node + " second");
  }
  for (const auto& fn :
       {sp::scaled_modified_bessel_k0, sp::scaled_modified_bessel_k1, sp::spherical_bessel_j0, sp::airy_ai}) {
    CHECK_FALSE(fn(x).requires_grad());
  }
}
