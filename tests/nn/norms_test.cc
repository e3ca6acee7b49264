// InstanceNorm1d/2d/3d, BatchNorm3d, LocalResponseNorm, Bilinear, Softmax2d and ChannelShuffle
// against PyTorch 2.15 (float64, the same parameter values set by name; outputs, gradients of
// sum(y * sin(0.11 i)) and running statistics), their printing and errors.
#include "tests/nn/pytorch_reference.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::same_as_pytorch;
using td::testing::sine_ramp;
using td::testing::Snapshot;
using td::testing::values;

namespace {

// sum(t * sin(0.23 i)) against PyTorch's: every value counts, each with its own weight (the first
// values and the plain sum alone can miss a wrong normalization).
void weighted_as_pytorch(const Tensor& t, double expected, const std::string& what) {
  INFO(what);
  const double got = (t.detach().to(td::kFloat64) * sine_ramp(t.sizes(), 0.23)).sum().item<double>();
  CHECK(std::abs(got - expected) <= 1e-12 * (1 + std::abs(expected)));
}

// y = m(sin(scale i)) and its gradient of sum(y * sin(0.11 i)).
template <typename Module>
std::pair<Tensor, Tensor> run(Module& m, const Shape& shape, double scale = 0.37) {
  Tensor x = sine_ramp(shape, scale).requires_grad_(true);
  const Tensor y = m(x);
  (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
  return {y, x.grad()};
}

}  // namespace

TEST_CASE("InstanceNorm1d, 2d and 3d give PyTorch's outputs, gradients and running statistics", "[cpu]") {
  nn::InstanceNorm2d in2d(nn::InstanceNormOptions(3).affine(true).track_running_stats(true));
  td::testing::set_sine_parameters(*in2d);
  auto [y, gx] = run(in2d, {2, 3, 4, 5});
  same_as_pytorch(y, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, 11.629271965739616, "in2d out");
  weighted_as_pytorch(y, -0.06319251027588069, "in2d out");
  same_as_pytorch(gx, {-0.0, -0.0, -0.0, -0.0, -0.0, 0.0, 0.0, 0.0}, -5.551115123125783e-16, "in2d gx0");
  weighted_as_pytorch(gx, 0.4883347873866303, "in2d gx0");
  same_as_pytorch(in2d->weight.grad(), {-1.1028724075620002, 0.1785980910080165, -0.8547859023402218},
                  -1.7790602188942055, "in2d gweight");
  weighted_as_pytorch(in2d->weight.grad(), -0.3387642327086353, "in2d gweight");
  same_as_pytorch(in2d->bias.grad(), {29.881321155721913, -8.287323518122374, -20.12712285677887}, 1.466874780820671,
                  "in2d gbias");
  weighted_as_pytorch(in2d->bias.grad(), -10.824721583325887, "in2d gbias");
  same_as_pytorch(in2d->running_mean, {-0.0013330535789108826, 3.5802303893870714e-05, 0.0013644555882981872},
                  6.720431328117527e-05, "in2d running_mean");
  weighted_as_pytorch(in2d->running_mean, 0.0006139095960420837, "in2d running_mean");
  same_as_pytorch(in2d->running_var, {0.9484641075219004, 0.956863959288694, 0.9480634159962669}, 2.8533914828068614,
                  "in2d running_var");
  weighted_as_pytorch(in2d->running_var, 0.6390344346135186, "in2d running_var");
  in2d->eval();  // now normalized with the running statistics
  const Tensor eval_out = in2d(sine_ramp({2, 3, 4, 5}, 0.37));
  same_as_pytorch(eval_out, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, 11.68969276614825, "in2d eval out");
  weighted_as_pytorch(eval_out, -0.14152356490704873, "in2d eval out");
  nn::InstanceNorm1d in1d(4);
  in1d->to(td::kFloat64);
  auto [y1, gx1] = run(in1d, {4, 7});  // unbatched
  CHECK(y1.sizes() == Shape{4, 7});
  same_as_pytorch(y1,
                  {-1.9773360353027802, -0.9090540864785868, 0.014640912109423214, 0.6687311756514881,
                   0.9646886554533278, 0.8624568950230643, 0.37587248354406605, 1.685685113533111},
                  2.220446049250313e-15, "in1d unbatched out");
  weighted_as_pytorch(y1, -0.37527025855858565, "in1d unbatched out");
  same_as_pytorch(gx1,
                  {0.07732548142271858, -0.14490275332273123, -0.2970802488121867, -0.31912049281696914,
                   -0.1695109750961942, 0.16860255244216688, 0.6846864361831954, -0.009643855303069238},
                  4.440892098500626e-16, "in1d unbatched gx0");
  weighted_as_pytorch(gx1, 0.30285354887233573, "in1d unbatched gx0");
  nn::InstanceNorm3d in3d(nn::InstanceNormOptions(2).affine(true));
  td::testing::set_sine_parameters(*in3d);
  auto [y3, gx3] = run(in3d, {2, 2, 3, 2, 4});
  same_as_pytorch(y3, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, 4.75015601768684, "in3d out");
  weighted_as_pytorch(y3, 0.9655853094741328, "in3d out");
  same_as_pytorch(gx3, {-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, 0.0, 0.0}, 9.71445146547012e-17, "in3d gx0");
  weighted_as_pytorch(gx3, -0.7394072607899679, "in3d gx0");
  same_as_pytorch(in3d->weight.grad(), {-5.393878811023363, -4.443119461364971}, -9.836998272388335, "in3d gweight");
  weighted_as_pytorch(in3d->weight.grad(), -1.0129313715729864, "in3d gweight");
  same_as_pytorch(in3d->bias.grad(), {21.365501800770353, -7.998578166648758}, 13.366923634121594, "in3d gbias");
  weighted_as_pytorch(in3d->bias.grad(), -1.8234960422352113, "in3d gbias");
}

TEST_CASE("BatchNorm3d, LocalResponseNorm and Bilinear give PyTorch's outputs and gradients", "[cpu]") {
  nn::BatchNorm3d bn3d(nn::BatchNormOptions(3));
  td::testing::set_sine_parameters(*bn3d);
  auto [y, gx] = run(bn3d, {2, 3, 2, 3, 4});
  same_as_pytorch(y, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, 13.95512635888754, "bn3d out");
  weighted_as_pytorch(y, 0.8060028564733001, "bn3d out");
  same_as_pytorch(gx, {-0.0, -0.0, -0.0, -0.0, 0.0, 0.0, 0.0, 0.0}, 6.938893903907228e-17, "bn3d gx0");
  weighted_as_pytorch(gx, 0.6671543485851761, "bn3d gx0");
  same_as_pytorch(bn3d->weight.grad(), {-4.8545254373489275, -5.608016896553979, -3.6237572527315263},
                  -14.086299586634432, "bn3d gweight");
  weighted_as_pytorch(bn3d->weight.grad(), -2.887261976472603, "bn3d gweight");
  same_as_pytorch(bn3d->bias.grad(), {20.989329484047204, -24.083594624226563, 21.244523779003572}, 18.150258638824212,
                  "bn3d gbias");
  weighted_as_pytorch(bn3d->bias.grad(), 3.9409478548160575, "bn3d gbias");
  same_as_pytorch(bn3d->running_mean, {0.015215746069846051, -0.01541989355663484, 0.011159746824259058},
                  0.01095559933747027, "bn3d running_mean");
  weighted_as_pytorch(bn3d->running_mean, 0.0014389593306264607, "bn3d running_mean");
  same_as_pytorch(bn3d->running_var, {0.9488599869427459, 0.9488056829038758, 0.9497888668984907}, 2.8474545367451123,
                  "bn3d running_var");
  weighted_as_pytorch(bn3d->running_var, 0.6379633393810499, "bn3d running_var");
  nn::LocalResponseNorm lrn4d(3, 0.1, 0.75, 2.0);
  auto [y4, gx4] = run(lrn4d, {2, 5, 4, 3});
  same_as_pytorch(y4,
                  {0.0, 0.21205261383022372, 0.39477428272669834, 0.5244118144538671, 0.5840117110224456,
                   0.565062982827751, 0.469132981030408, 0.3087620550769037},
                  0.015783208964455175, "lrn4d out");
  weighted_as_pytorch(y4, -2.0537986147839136, "lrn4d out");
  same_as_pytorch(gx4,
                  {0.0, 0.06929141195115301, 0.13496045350817562, 0.19449064249787895, 0.24861225180200133,
                   0.3001709675372011, 0.3516363031385361, 0.4029779330884615},
                  0.8795852615808282, "lrn4d gx0");
  weighted_as_pytorch(gx4, 2.2199415433153242, "lrn4d gx0");
  nn::LocalResponseNorm lrn3d(4);
  auto [y5, gx5] = run(lrn3d, {2, 6, 7}, 1.3);
  same_as_pytorch(y5,
                  {0.0, 0.9635290314453211, 0.5154931913465247, -0.6877577827931045, -0.8834255987243758,
                   0.2151197545990588, 0.9985085158481041, 0.3190955644048213},
                  0.7934344810465443, "lrn3d out");
  weighted_as_pytorch(y5, 0.16831850948130977, "lrn3d out");
  same_as_pytorch(gx5,
                  {0.0, 0.10977240033172024, 0.21821866689321331, 0.32404031410802087, 0.42591358105505983,
                   0.5226878495769587, 0.6130839033077803, 0.6961263949437638},
                  17.916385329380233, "lrn3d gx0");
  weighted_as_pytorch(gx5, -2.167071568997952, "lrn3d gx0");
  nn::Bilinear bilinear(3, 4, 5);
  td::testing::set_sine_parameters(*bilinear);
  Tensor x1 = sine_ramp({2, 6, 3}, 0.3).requires_grad_(true), x2 = sine_ramp({2, 6, 4}, 0.5).requires_grad_(true);
  const Tensor yb = bilinear(x1, x2);
  CHECK(yb.sizes() == Shape{2, 6, 5});
  (yb * sine_ramp(yb.sizes(), 0.11)).sum().backward();
  same_as_pytorch(yb,
                  {0.7386397304456953, 0.10769914110290917, -0.5508398976920761, 0.6013630930967542, 0.929832401492563,
                   0.7523417494806025, 0.9243654384885547, -0.9356385035895161},
                  11.550452454056455, "bilinear out");
  weighted_as_pytorch(yb, 3.9930902773186014, "bilinear out");
  same_as_pytorch(x1.grad(),
                  {0.15894176298326013, 0.2344867403854649, 0.2281187531451475, 0.18198199848343805,
                   0.37758128042434175, 0.44128055803137783, -0.9771017586351518, -1.4954602450891197},
                  -0.6462758137336628, "bilinear gx0");
  weighted_as_pytorch(x1.grad(), -1.4833688021320919, "bilinear gx0");
  same_as_pytorch(x2.grad(),
                  {0.08526876130809052, 0.08679717566705891, 0.0863763125841531, 0.08401562373688831,
                   0.7140991877808152, 0.7616122312414717, 0.7920211059269927, 0.804642894069586},
                  -3.8946596733359606, "bilinear gx1");
  weighted_as_pytorch(x2.grad(), 0.7809572346869886, "bilinear gx1");
  same_as_pytorch(bilinear->weight.grad(),
                  {0.028140166799780045, 0.03156039739132632, 0.02725354199413693, 0.016274069016276954,
                   0.02990427596244951, 0.018481072744168298, 0.0025330583681694996, -0.014035137039855955},
                  2.169526752945787, "bilinear gweight");
  weighted_as_pytorch(bilinear->weight.grad(), 0.11913948905454279, "bilinear gweight");
  same_as_pytorch(
      bilinear->bias.grad(),
      {-0.06757707505160121, -0.003829743745633274, 0.05996388075243325, 0.12303267360769254, 0.18461427160813018},
      0.29620400717102147, "bilinear gbias");
  weighted_as_pytorch(bilinear->bias.grad(), 0.2509420408041828, "bilinear gbias");
}

TEST_CASE("the normalization layers print as PyTorch's; Softmax2d and ChannelShuffle; errors", "[cpu]") {
  CHECK(nn::InstanceNorm2d(3)->str() ==
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)");
  // momentum None: PyTorch passes 0, so the running statistics stay where they start.
  nn::InstanceNorm1d frozen(nn::InstanceNormOptions(3).momentum(std::nullopt).track_running_stats(true));
  CHECK(frozen->str() ==
        "InstanceNorm1d(3, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)");
  frozen(sine_ramp({2, 3, 5}, 0.7) * 3 + 2);
  td::testing::check_equal(frozen->running_mean, {0, 0, 0});
  td::testing::check_equal(frozen->running_var, {1, 1, 1});
  CHECK(nn::LocalResponseNorm(3)->str() == "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)");
  CHECK(nn::Bilinear(3, 4, 5)->str() == "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)");
  CHECK(nn::Softmax2d()->str() == "Softmax2d()");
  CHECK(nn::ChannelShuffle(2)->str() == "ChannelShuffle(groups=2)");
  CHECK(nn::BatchNorm3d(nn::BatchNormOptions(4))->str() ==
        "BatchNorm3d(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)");
  // PyTorch's initial Bilinear values lie within 1 / sqrt(in1_features).
  nn::Bilinear fresh(16, 4, 3);
  CHECK(fresh->weight.abs().max().item<double>() <= 0.25);
  CHECK(fresh->bias.abs().max().item<double>() <= 0.25);
  // F.channel_shuffle(arange(12).view(1, 6, 2), 3) in PyTorch 2.15.
  check_close(nn::ChannelShuffle(3)(td::arange(12, td::kFloat64).view({1, 6, 2})),
              {0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11}, 0, 0);
  const Tensor image = sine_ramp({2, 3, 4, 5}, 0.3);
  check_close(nn::Softmax2d()(image), values(image.softmax(1)), 0, 0);
  check_close(nn::Softmax2d()(image[0]), values(image[0].softmax(0)), 0, 0);
  // Without affine parameters or running statistics, InstanceNorm is group_norm with a group per channel.
  check_close(nn::InstanceNorm2d(3)(image.to(td::kFloat32)), values(F::group_norm(image, 3).to(td::kFloat32)), 1e-5,
              1e-5);
  const Snapshot before(image);
  check_error([&] { nn::InstanceNorm2d(nn::InstanceNormOptions(4).affine(true))(image); },
              {"InstanceNorm2d", "4 channels", "[2, 3, 4, 5]"});
  // Without affine parameters or running statistics PyTorch only warns, and so normalizes here.
  CHECK(nn::InstanceNorm2d(4)(image).sizes() == image.sizes());
  check_error([&] { nn::InstanceNorm1d(3)(image); }, {"InstanceNorm1d", "2-D or 3-D", "[2, 3, 4, 5]"});
  check_error([&] { F::local_response_norm(image[0][0], 2); }, {"local_response_norm", "[4, 5]"});
  check_error([&] { F::channel_shuffle(image, 2); }, {"channel_shuffle", "3 channels", "2 groups"});
  check_error([&] { F::bilinear(image, image, td::ones({2, 3, 3})); }, {"bilinear", "end in 3 and 3"});
  check_error([&] { nn::Softmax2d()(image[0][0]); }, {"Softmax2d", "3-D or 4-D", "[4, 5]"});
  check_error([&] { nn::BatchNorm3d(nn::BatchNormOptions(3))(image); }, {"BatchNorm3d", "5 dims", "[2, 3, 4, 5]"});
  before.check_unchanged(image);
}
