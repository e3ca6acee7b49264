// rms_norm and RMSNorm, pdist, gumbel_softmax, and the initialisers trunc_normal_, eye_, dirac_
// and orthogonal_: values, gradients and printing against PyTorch 2.15, and the properties of the
// random ones.
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
namespace F = td::nn::functional;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::values;

namespace {

// sin(scale * i), i in row-major order, float64.
Tensor sine(int64_t n, const td::Shape& shape, double scale) {
  return td::sin(td::arange(static_cast<double>(n)).to(td::kFloat64) * scale).view(shape);
}

}  // namespace

TEST_CASE("rms_norm and RMSNorm as PyTorch's: values, weight, gradients, float16, printing", "[cpu]") {
  const Tensor x = sine(24, {2, 3, 4}, 0.8);
  check_close(F::rms_norm(x, {4}),
              {0.0,
               1.0221907131302057,
               1.4243342561403558,
               0.9624957520817738,
               -0.08324313755674084,
               -1.0792212188665293,
               -1.4205581905515328,
               -0.9002036258841141,
               0.16631016420258507,
               1.1325262401265412,
               1.4117670958131756,
               0.8346489752506622,
               -0.24888681345728522,
               -1.181890071857546,
               -1.3979746720906274,
               -0.7660665952283422,
               0.330657942012582,
               1.22711283390087,
               1.379217546996917,
               0.694707403383313,
               -0.41130968365829984,
               -1.2680121925536743,
               -1.3555555205140082,
               -0.6208370595157217},
              1e-14, 1e-15, "rms_norm over the last dim");
  check_close(F::rms_norm(x, {3, 4}, sine(12, {3, 4}, 0.3), 1e-3),
              {0.0,
               0.30198977723718634,
               0.8040047080749495,
               0.75372860312393,
               -0.07750414255786045,
               -1.075383940974914,
               -1.3819501907693108,
               -0.7762457791273868,
               0.11214534862455242,
               0.4831957865571997,
               0.19888976769322994,
               -0.1314383717261264,
               -0.0,
               -0.34903890623396605,
               -0.7888281843830787,
               -0.5996794188078068,
               0.30785832414074654,
               1.2227369519201243,
               1.3417191027019013,
               0.5990400907726164,
               -0.2774570071769042,
               -0.5412059777842538,
               -0.19104293646962225,
               0.09780481346084478},
              1e-14, 1e-15, "rms_norm over two dims with a weight and eps");
  const Tensor half = F::rms_norm(x.to(td::kFloat16), {4});
  CHECK(half.dtype() == td::kFloat16);
  check_close(
      half,
      {0.0,           1.0224609375,    1.4248046875,  0.96240234375, -0.083251953125, -1.0791015625,    -1.4208984375,
       -0.900390625,  0.1663818359375, 1.1328125,     1.412109375,   0.8349609375,    -0.2489013671875, -1.181640625,
       -1.3974609375, -0.76611328125,  0.33056640625, 1.2275390625,  1.37890625,      0.6943359375,     -0.4111328125,
       -1.2685546875, -1.35546875,     -0.62060546875},
      0, 0, "float16 in float32, rounded once");

  Tensor gx = x.clone().requires_grad_(), gw = sine(4, {4}, 0.6).requires_grad_();
  (F::rms_norm(gx, {4}, gw) * sine(24, {2, 3, 4}, 0.25)).sum().backward();
  check_close(gx.grad(),
              {0.0,
               -0.3173546653747063,
               -0.08284908903869792,
               0.45964024918088503,
               -0.08195555723835822,
               -0.29840977891935294,
               -0.07280143468562605,
               0.4802147702457573,
               -0.09464552839948383,
               -0.017602367864097856,
               -0.007469971210088189,
               0.05537838995225819,
               0.08489568789650265,
               0.31592398703616453,
               0.010073016052881745,
               -0.5333722483594522,
               0.30139916492245944,
               0.3967563429970712,
               -0.044113776141055716,
               -0.756696029641654,
               0.2664355998223053,
               0.12850842790461503,
               -0.06136663976184986,
               -0.304994531979633},
              1e-13, 1e-15, "rms_norm's gradient to x");
  check_close(gw.grad(), {0.19022789476036436, 0.22867924207706872, 0.20932428542957393, 0.14803607234386318}, 1e-13,
              1e-15, "rms_norm's gradient to the weight");

  td::nn::RMSNorm norm(td::nn::RMSNormOptions({4}));
  CHECK(norm->str() == "RMSNorm((4,), eps=None, elementwise_affine=True)");
  CHECK(norm->named_parameters().size() == 1);
  CHECK(values(norm->weight) == std::vector<double>{1, 1, 1, 1});
  check_close(norm(x.to(td::kFloat32)), values(F::rms_norm(x, {4})), 1e-6, 1e-6, "the module");
  td::nn::RMSNorm plain(td::nn::RMSNormOptions({4}).eps(1e-5).elementwise_affine(false));
  CHECK(plain->str() == "RMSNorm((4,), eps=1e-05, elementwise_affine=False)");
  CHECK(plain->parameters().empty());

  check_error([&] { F::rms_norm(x, {3}); }, {"rms_norm", "[2, 3, 4]", "[3]"});
  check_error([&] { F::rms_norm(x, {4}, td::ones({3})); }, {"rms_norm", "weight", "[3]"});
  check_error([&] { F::rms_norm(td::tensor({1, 2}), {2}); }, {"rms_norm", "floating", "int64"});
}

TEST_CASE("pdist is cdist's upper triangle, values and gradients as PyTorch's", "[cpu]") {
  const Tensor p = sine(12, {4, 3}, 1.1);
  check_close(F::pdist(p),
              {2.390217047010852, 0.3955339375957055, 2.317087249874226, 2.376598366643409, 0.39711047770986585,
               2.369510042670922},
              1e-14, 1e-15, "pdist");
  check_close(F::pdist(p, 1),
              {3.514591857484182, 0.6320814482567721, 3.6068773287416502, 3.6995148838852976, 0.6040711933290521,
               3.7918003551427653},
              1e-14, 1e-15, "pdist p = 1");
  Tensor g = p.clone().requires_grad_();
  (F::pdist(g) * td::arange(1.0, 7.0).to(td::kFloat64)).sum().backward();
  check_close(g.grad(),
              {-0.9169138668062052, 2.729289839073618, 3.3929044373062665, 2.9188017686816288, -3.4265115566638396,
               -6.027306472926916, 4.312575502990123, 8.78941606114003, 3.66111456686746, -6.314463404865546,
               -8.092194343549806, -1.0267125312468106},
              1e-13, 1e-15, "pdist's gradient");
  CHECK(F::pdist(td::ones({1, 3})).sizes() == td::Shape{0});
  check_error([] { F::pdist(td::ones({3})); }, {"pdist", "2-D", "[3]"});
}

TEST_CASE("gumbel_softmax samples rows of the simplex; hard ones are one-hot with the soft gradient", "[cpu]") {
  td::manual_seed(3);
  const Tensor logits = sine(40, {8, 5}, 0.9) * 3;
  const Tensor soft = F::gumbel_softmax(logits, 0.5);
  check_close(soft.sum({1}), std::vector<double>(8, 1.0), 1e-12, 1e-12, "rows sum to 1");
  CHECK(td::all(soft >= 0).item<bool>());
  Tensor leaf = logits.clone().requires_grad_();
  const Tensor hard = F::gumbel_softmax(leaf, 1.0, true);
  for (double v : values(hard)) CHECK((v == 0 || v == 1));
  check_close(hard.sum({1}), std::vector<double>(8, 1.0), 0, 0, "one 1 per row");
  (hard * sine(40, {8, 5}, 0.3)).sum().backward();
  CHECK(td::any(leaf.grad() != 0).item<bool>());  // the soft sample's gradient reaches the logits
  // Along dim 0, and with a very large logit the argmax is certain.
  const Tensor certain = F::gumbel_softmax(td::tensor({0.0, 100.0, 0.0}, td::kFloat64).view({3, 1}), 1.0, true, 0);
  CHECK(values(certain) == std::vector<double>{0, 1, 0});
  // Over many draws, a category is picked in proportion to its softmax weight.
  td::manual_seed(4);
  const Tensor weights = td::tensor({0.2, 0.3, 0.5}, td::kFloat64);
  const Tensor picks = F::gumbel_softmax(td::log(weights).expand({20000, 3}).contiguous(), 1.0, true).sum({0});
  const std::vector<double> counts = values(picks);
  for (int k = 0; k < 3; ++k) {
    const double share = values(weights)[k], sd = std::sqrt(share * (1 - share) / 20000);
    CHECK(std::abs(counts[k] / 20000 - share) <= 4 * sd);
  }
  check_error([&] { F::gumbel_softmax(logits, 0); }, {"gumbel_softmax", "tau", "positive"});
}

TEST_CASE("trunc_normal_, eye_, dirac_ and orthogonal_ fill as PyTorch's initialisers", "[cpu]") {
  td::manual_seed(5);
  Tensor t = td::empty({200, 100});
  td::nn::init::trunc_normal_(t, 1.0, 2.0, -1.0, 2.5);
  const std::vector<double> v = values(t);
  CHECK(*std::min_element(v.begin(), v.end()) >= -1.0);
  CHECK(*std::max_element(v.begin(), v.end()) <= 2.5);
  // The truncated normal's mean: mu + sigma (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)).
  const auto phi = [](double z) { return std::exp(-z * z / 2) / std::sqrt(2 * M_PI); };
  const auto Phi = [](double z) { return (1 + std::erf(z / std::sqrt(2.0))) / 2; };
  const double alpha = (-1.0 - 1.0) / 2, beta = (2.5 - 1.0) / 2;
  const double mean = 1.0 + 2.0 * (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha));
  CHECK(std::abs(t.mean().item<double>() - mean) < 0.03);
  CHECK_FALSE(t.requires_grad());

  Tensor e = td::full({3, 4}, 7.0);
  td::nn::init::eye_(e);
  CHECK(values(e) == std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0});

  Tensor w = td::full({4, 2, 3}, 5.0);
  td::nn::init::dirac_(w, 2);
  std::vector<double> want(24, 0);
  want[0 * 6 + 0 * 3 + 1] = 1;  // group 0: output 0 takes channel 0
  want[1 * 6 + 1 * 3 + 1] = 1;  // output 1 takes channel 1
  want[2 * 6 + 0 * 3 + 1] = 1;  // group 1: output 2 takes channel 0
  want[3 * 6 + 1 * 3 + 1] = 1;
  CHECK(values(w) == want);
  // A dirac convolution passes its input through.
  Tensor conv_w = td::empty({3, 3, 3, 3});
  td::nn::init::dirac_(conv_w);
  const Tensor image = sine(75, {1, 3, 5, 5}, 0.4).to(td::kFloat32);
  check_close(F::conv2d(image, conv_w, Tensor(), 1, 1), values(image), 1e-6, 1e-6, "dirac convolution");

  for (const td::Shape& shape : {td::Shape{6, 4}, td::Shape{3, 8}, td::Shape{4, 2, 3}}) {
    Tensor q = td::empty(shape, td::kFloat64);
    td::nn::init::orthogonal_(q, 2.0);
    const Tensor m = q.reshape({shape[0], -1});
    const bool tall = m.size(0) >= m.size(1);
    const Tensor gram = tall ? m.t().matmul(m) : m.matmul(m.t());
    const int64_t n = gram.size(0);
    check_close(gram, values(td::eye(n, n, td::kFloat64) * 4), 1e-12, 1e-12, "orthogonal columns or rows, gain 2");
  }
  check_error(
      [] {
        Tensor bad = td::empty({3});
        td::nn::init::eye_(bad);
      },
      {"eye_", "2-D"});
  check_error(
      [] {
        Tensor bad = td::empty({3, 2, 2});
        td::nn::init::dirac_(bad, 2);
      },
      {"dirac_", "2 groups"});
  check_error(
      [] {
        Tensor bad = td::empty({3});
        td::nn::init::trunc_normal_(bad, 0, 1, 2, 1);
      },
      {"trunc_normal_", "a < b"});
}

TEST_CASE("sparse_ zeroes ceil(sparsity * rows) entries of each column and draws the rest from N(0, std)", "[cpu]") {
  td::manual_seed(11);
  Tensor t = td::full({10, 400}, 5.0);
  td::nn::init::sparse_(t, 0.25, 0.5);
  const Tensor zero = t == 0;
  // ceil(0.25 * 10) = 3 zeros in every column, at rows drawn afresh for each column.
  check_close(zero.sum(0), values(td::full({400}, 3.0)), 0, 0);
  const Tensor per_row = zero.sum(1).to(td::kFloat64);  // 1200 zeros over 10 rows: 120 each on average
  CHECK(per_row.min().item<double>() > 80);
  CHECK(per_row.max().item<double>() < 160);
  const Tensor kept = t.masked_select(t != 0);
  CHECK(kept.numel() == 2800);
  CHECK(std::abs(kept.mean().item<double>()) < 0.05);
  CHECK(std::abs(kept.std().item<double>() - 0.5) < 0.03);
  Tensor none = td::ones({4, 3});
  td::nn::init::sparse_(none, 0.0);
  CHECK((none == 0).sum().item<int64_t>() == 0);
  Tensor bad = td::ones({2, 3, 4});
  const td::testing::Snapshot before(bad);
  check_error([&] { td::nn::init::sparse_(bad, 0.5); }, {"sparse_", "2-D", "[2, 3, 4]"});
  Tensor flat = td::ones({3, 4});
  check_error([&] { td::nn::init::sparse_(flat, 1.5); }, {"sparse_", "sparsity", "1.5"});
  before.check_unchanged(bad);
}
