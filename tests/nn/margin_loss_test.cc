// The margin and likelihood losses against PyTorch 2.15 in float64: each loss without reduction
// (first values and sum), its mean and sum, and its inputs' gradients of sum(loss * probe); the
// modules; errors naming the loss with the inputs unchanged.
#include <cmath>

#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::sine_ramp;
using td::testing::Snapshot;
using td::testing::values;
using V = const std::vector<Tensor>&;
using R = td::Reduction;

namespace {

// The reference script's inputs.
Tensor a() { return sine_ramp({4, 5}, 0.3); }
Tensor b() { return sine_ramp({4, 5}, 0.5); }
Tensor c() { return sine_ramp({4, 5}, 0.7); }
Tensor signs() { return td::where(sine_ramp({4, 5}, 0.9) + 0.1 >= 0, 1.0, -1.0); }
Tensor counts() {  // round(4 |sin(0.4 i)|)
  return td::tensor(std::vector<double>{0, 2, 3, 4, 4, 4, 3, 1, 0, 2, 3, 4, 4, 4, 3, 1, 0, 2, 3, 4}).view({4, 5});
}
Tensor row_variances() {  // |sin(0.2 i)| + 0.05, the third below eps
  Tensor v = sine_ramp({4}, 0.2).abs() + 0.05;
  v[2].fill_(1e-8);
  return v;
}
Tensor class_weights() { return sine_ramp({5}, 0.3).abs() + 0.5; }

struct Case {
  const char* name;
  std::vector<Tensor> inputs;
  std::vector<bool> requires_grad;
  std::function<Tensor(V, R)> loss;
  std::vector<double> first;  // without reduction
  double sum, mean_reduced, sum_reduced;
  std::vector<std::vector<double>> grad_first;  // of each input requiring grad
  std::vector<double> grad_sum;
};

}  // namespace

TEST_CASE("margin and likelihood losses give PyTorch's values and gradients", "[cpu]") {
  const std::vector<Case> cases = {
      {"margin_ranking_loss margin 0.2",
       {a(), b(), signs()},
       {true, true, false},
       [](V x, R r) { return F::margin_ranking_loss(x[0], x[1], x[2], 0.2, r); },
       {0.2, 0.38390533194286347, 0.47682851141286114, 0.41416807697657115, 0.2227416591415446, 0.5990228425000979,
        1.032727622818328, 0.0},
       12.068000847106141,
       0.6034000423553071,
       12.068000847106141,
       {{-1.5, -1.6097783008371749, -1.7182296230808694, -1.8240430283948683, 1.9259394650659996, 2.022687228930659,
         2.113116851973434, -0.0},
        {1.5, 1.6097783008371749, 1.7182296230808694, 1.8240430283948683, -1.9259394650659996, -2.022687228930659,
         -2.113116851973434, 0.0}},
       {-5.6200929977211285, 5.6200929977211285}},
      {"hinge_embedding_loss margin 0.5",
       {a(), signs()},
       {true, false},
       [](V x, R r) { return F::hinge_embedding_loss(x[0], x[1], 0.5, r); },
       {0.0, 0.29552020666133955, 0.5646424733950354, 0.7833269096274833, 0.0, 0.0, 0.0, 0.8632093666488737},
       5.091059170711022,
       0.2545529585355511,
       5.091059170711022,
       {{1.5, 1.6097783008371749, 1.7182296230808694, 1.8240430283948683, 0.0, 0.0, 0.0, 2.196135238627357}},
       {13.600186900814903}},
      {"soft_margin_loss",
       {a() * 3, signs()},
       {true, false},
       [](V x, R r) { return F::soft_margin_loss(x[0], x[1], r); },
       {0.6931471805599453, 0.3450571276382061, 0.1687264435308307, 0.09109311876433646, 2.855373066978587,
        3.0414299973203343, 2.973993527739763, 0.07236526079983831},
       23.76708467047012,
       1.188354233523506,
       23.76708467047012,
       {{-0.75, -0.4697656717027933, -0.2667724071198967, -0.15881450926996904, 1.81513178412374, 1.926070469393213,
         2.0051390369253728, -0.15330984802981557}},
       {-4.814486667844079}},
      {"cosine_embedding_loss margin 0.1",
       {a(), b(), td::tensor(std::vector<double>{1, -1, -1, 1})},
       {true, true, false},
       [](V x, R r) { return F::cosine_embedding_loss(x[0], x[1], x[2], 0.1, r); },
       {0.01630599420206802, 0.0, 0.0, 1.927660930125477},
       1.943966924327545,
       0.48599173108188626,
       1.943966924327545,
       {{0.0, -0.0841061307451377, -0.11171265937568647, -0.04336056582912673, 0.13078665187314575, 0.0, 0.0, 0.0},
        {0.0, 0.06215866367904169, 0.07890311088610069, 0.01863539292738814, -0.12623354786638136, 0.0, 0.0, 0.0}},
       {0.04444916102624538, 0.5418191848568084}},
      {"triplet_margin_loss",
       {a(), b(), c()},
       {true, true, true},
       [](V x, R r) { return F::triplet_margin_loss(x[0], x[1], x[2], 1.0, 2, 1e-6, false, r); },
       {0.5826907821107294, 0.2789373649432285, 1.0367594426877376, 2.997040001357373},
       4.895427591099068,
       1.223856897774767,
       4.895427591099068,
       {{1.943349540211741e-06, -0.053472311355908686, -0.27243966992120305, -0.6638578816254275, -1.0149735308874597,
         -0.41474445369174545, -0.3846246745444606, -0.14121376187292978},
        {-3.787600556345662e-06, 0.696556149981167, 1.0485120362391382, 0.8111793399073852, -0.08614010841729403,
         -0.25487271157132535, -0.5318975446954918, -0.7754269451184372},
        {1.844251016133921e-06, -0.6430838386252583, -0.7760723663179352, -0.1473214582819578, 1.1011136393047538,
         0.6696171652630708, 0.9165222192399524, 0.916640706991367}},
       {0.051656583133588785, 3.64940727463494, -3.7010638577685286}},
      {"triplet_margin_loss p 1 swap",
       {a(), b() * 0.2 + c(), c()},
       {true, true, true},
       [](V x, R r) { return F::triplet_margin_loss(x[0], x[1], x[2], 0.7, 1, 1e-6, true, r); },
       {1.7827131592722154, 7.160828534166086, 4.393304995384309, 3.1190731988552876},
       16.455919887677897,
       4.113979971919474,
       16.455919887677897,
       {{1.5, -1.5, -1.5, -1.5, 1.5, 1.6097783008371749, 1.6097783008371749, 1.6097783008371749},
        {-3.0, 0.0, 0.0, 0.0, -3.0, -3.2195566016743498, -3.2195566016743498, 0.0},
        {1.5, 1.5, 1.5, 1.5, 1.5, 1.6097783008371749, 1.6097783008371749, -1.6097783008371749}},
       {-11.162471753192815, 1.5183505919262537, 9.644121161266561}},
      {"poisson_nll_loss full",
       {a(), counts()},
       {true, false},
       [](V x, R r) { return F::poisson_nll_loss(x[0], x[1], true, true, 1e-8, r); },
       {1.0, 1.4045913150135103, 1.8289729691249432, 2.21269743233886, 1.968789346756055, 1.8787642295101215,
        1.4906524982992546, 1.5075477595214388},
       55.60310025399389,
       2.7801550126996943,
       55.60310025399389,
       {{1.5, -1.0562958841979064, -2.132634226812858, -3.3038126869373787, -2.8124830424130955, -2.6062708897690268,
         -0.7435765590546302, 3.0103680283821896}},
       {-59.12868525253319}},
      {"poisson_nll_loss of rates",
       {a().abs() + 0.1, counts()},
       {true, false},
       [](V x, R r) { return F::poisson_nll_loss(x[0], x[1], false, false, 1e-8, r); },
       {0.1, 2.250626959390209, 1.89016047894505, 1.3795665476091394, 0.9058928858433266, 0.7253737583885113,
        0.8601032569471279, 1.0006938362309041},
       34.39750508181907,
       1.7198752540909534,
       34.39750508181907,
       {{1.5, -6.53027741831476, -6.037351757922846, -6.435834431986862, -5.538659395933585, -5.349327168180578,
         -3.790281651315138, -0.08388330341382089}},
       {-148.0987004120028}},
      {"gaussian_nll_loss full",
       {a(), b(), sine_ramp({4, 5}, 0.2).abs() + 0.05},
       {true, true, true},
       [](V x, R r) { return F::gaussian_nll_loss(x[0], x[1], x[2], true, 1e-6, r); },
       {-0.5789276035723228, 0.2911272134627837, 0.594986237435502, 0.7128939912005273, 0.786873363058959,
        0.9507987471759745, 1.2629353562901602, 1.6480172856875428},
       53.38989903799151,
       2.6694949518995754,
       53.38989903799151,
       {{0.0, -1.1905240257145497, -1.082464938363577, -0.635575647019719, 0.057077879958490736, 0.9053557786297216,
         1.7918337447313284, 2.574815404982649},
        {-0.0, 1.1905240257145497, 1.082464938363577, 0.635575647019719, -0.057077879958490736, -0.9053557786297216,
         -1.7918337447313284, -2.574815404982649},
        {15.0, 2.7965543242814115, 1.6141479871823952, 1.3730933732712236, 1.2540732016079568, 0.9318472619868612,
         0.31618262761202187, -0.448921646259258}},
       {-93.30999572546976, 93.30999572546976, -556.8981921518681}},
      {"gaussian_nll_loss one var per row, clamped",
       {a(), b(), row_variances()},
       {true, true, true},
       [](V x, R r) { return F::gaussian_nll_loss(x[0], x[1], x[2], false, 1e-6, r); },
       {-1.4978661367769954, -1.1596544256068475, -0.7315258894663896, -1.0391864848185703, -1.4926943061718934,
        -0.3756731543338095, 0.6984763261424852, 2.2675132532317277},
       2344220.5134718637,
       117211.02567359319,
       2344220.5134718637,
       {{0.0, -5.920936255397588, -9.513098976459169, -7.813035754277002, 0.8759811768355933, 3.2456692789418464,
         7.07626777799707, 10.721434393759838},
        {-0.0, 5.920936255397588, 9.513098976459169, 7.813035754277002, -0.8759811768355933, -3.2456692789418464,
         -7.07626777799707, -10.721434393759838},
        {31.623775331603767, -93.57588615285889, -5780112785810.538, -29.99902916847465}},
       {-2506974.560913532, 2506974.560913532, -5780112785902.489}},
      {"multilabel_soft_margin_loss weighted",
       {a() * 2, (sine_ramp({4, 5}, 0.45) > 0).to(td::kFloat64), class_weights()},
       {true, false, false},
       [](V x, R r) { return F::multilabel_soft_margin_loss(x[0], x[1], x[2], r); },
       {0.2890089449112166, 1.1886090330558332, 0.8484030555113191, 1.8153117289386533},
       4.141332762417022,
       1.0353331906042555,
       4.141332762417022,
       {{0.075, -0.08505610663470228, -0.07802543846007462, -0.06648683394335342, -0.05766610125975944,
         -0.01927386707308533, -0.031965305609172934, 0.29099390377735246}},
       {-0.8594176402623415}},
      {"multi_margin_loss",
       {a(), td::tensor({1, 4, 0, 2})},
       {true, false},
       [](V x, R r) { return F::multi_margin_loss(x[0], x[1], 1, 1.0, Tensor(), r); },
       {1.0195855284688773, 1.1600991287493907, 0.25772153583966484, 0.8812227945312735},
       3.3186289875892063,
       0.8296572468973016,
       3.3186289875892063,
       {{0.30000000000000004, -1.2000000000000002, 0.30000000000000004, 0.30000000000000004, 0.30000000000000004,
         0.321955660167435, 0.321955660167435, 0.321955660167435}},
       {-6.661338147750939e-16}},
      {"multi_margin_loss p 2 weighted",
       {a() * 2, td::tensor({1, 4, 0, 2}), class_weights()},
       {true, false, false},
       [](V x, R r) { return F::multi_margin_loss(x[0], x[1], 2, 0.7, x[2], r); },
       {1.311921011411504, 3.007852436213226, 0.001045886564472189, 0.8057636798365154},
       5.126583014025718,
       1.2816457535064294,
       5.126583014025718,
       {{0.052007731746765866, -2.3845822971154558, 0.5910291282967519, 0.7997905937830588, 0.9417548432888787,
         1.6968876492443503, 1.653276903598846, 1.4492364495243661}},
       {-1.3322676295501878e-15}},
      {"multilabel_margin_loss",
       {a() * 0.4, td::tensor({{3, 0, -1, 1, 1}, {1, 2, 4, -1, 0}, {-1, 1, 2, 3, 4}, {0, 1, 2, 3, 4}})},
       {true, false},
       [](V x, R r) { return F::multilabel_margin_loss(x[0], x[1], r); },
       {1.2987538242531804, 1.2392000596755055, 0.0, 0.0},
       2.5379538839286857,
       0.6344884709821714,
       2.5379538839286857,
       {{-0.9000000000000001, 0.6000000000000001, 0.6000000000000001, -0.9000000000000001, 0.6000000000000001,
         0.965866980502305, -0.64391132033487, -0.64391132033487}},
       {0.0}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < c.inputs.size(); ++k)
      inputs.push_back(c.inputs[k].detach().requires_grad_(c.requires_grad[k]));
    const Tensor loss = c.loss(inputs, td::kNone);
    const int64_t n = std::min<int64_t>(8, loss.numel());
    check_close(loss.detach().flatten().narrow(0, 0, n), c.first, 1e-12, 1e-14, std::string(c.name) + " loss");
    CHECK(std::abs(loss.sum().item<double>() - c.sum) <= 1e-12 * (1 + std::abs(c.sum)));
    CHECK(std::abs(c.loss(inputs, td::kMean).item<double>() - c.mean_reduced) <= 1e-12 * (1 + std::abs(c.sum)));
    CHECK(std::abs(c.loss(inputs, td::kSum).item<double>() - c.sum_reduced) <= 1e-12 * (1 + std::abs(c.sum)));
    (loss * (sine_ramp(loss.sizes(), 0.11) + 1.5)).sum().backward();
    size_t g = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (!c.requires_grad[k]) continue;
      const std::string what = std::string(c.name) + " gradient of input " + std::to_string(k);
      check_close(inputs[k].grad().flatten().narrow(0, 0, static_cast<int64_t>(c.grad_first[g].size())),
                  c.grad_first[g], 1e-12, 1e-14, what);
      CHECK(std::abs(inputs[k].grad().sum().item<double>() - c.grad_sum[g]) <= 1e-12 * (1 + std::abs(c.grad_sum[g])));
      ++g;
    }
  }
}

TEST_CASE("margin and likelihood losses pass gradcheck in every input that takes a gradient", "[cpu]") {
  td::testing::reseed(301);
  const Tensor y = signs(), labels = td::tensor({1, 4, 0, 2});
  const Tensor listed = td::tensor({{3, 0, -1, 1, 1}, {1, 2, 4, -1, 0}, {-1, 1, 2, 3, 4}, {0, 1, 2, 3, 4}});
  auto random = [](double lo, double hi) { return td::rand({4, 5}, td::kFloat64) * (hi - lo) + lo; };
  auto check = [](const char* name, const td::autograd::TestedFn& fn, const std::vector<Tensor>& inputs) {
    std::vector<Tensor> leaves;
    for (const Tensor& t : inputs) leaves.push_back(t.detach().requires_grad_(true));
    auto r = td::autograd::gradcheck(fn, leaves);
    INFO(name << ": " << r.report);
    CHECK(r.ok);
  };
  check("margin_ranking_loss", [&](V in) { return F::margin_ranking_loss(in[0], in[1], y, 0.3); },
        {random(-2, 2), random(-2, 2)});
  check("hinge_embedding_loss", [&](V in) { return F::hinge_embedding_loss(in[0], y, 0.7, td::kSum); },
        {random(-2, 2)});
  check("soft_margin_loss", [&](V in) { return F::soft_margin_loss(in[0], y); }, {random(-2, 2)});
  check("cosine_embedding_loss",
        [&](V in) {
          return F::cosine_embedding_loss(in[0], in[1], td::tensor(std::vector<double>{1, -1, -1, 1}), 0.1);
        },
        {random(-2, 2), random(-2, 2)});
  check("triplet_margin_loss swap", [&](V in) { return F::triplet_margin_loss(in[0], in[1], in[2], 2, 3, 1e-6, true); },
        {random(-2, 2), random(-2, 2), random(-2, 2)});
  check("poisson_nll_loss full", [&](V in) { return F::poisson_nll_loss(in[0], counts(), true, true); },
        {random(-2, 2)});
  check("gaussian_nll_loss", [&](V in) { return F::gaussian_nll_loss(in[0], in[1], in[2], true); },
        {random(-2, 2), random(-2, 2), random(0.5, 2)});
  check("multilabel_soft_margin_loss", [&](V in) { return F::multilabel_soft_margin_loss(in[0], in[1]); },
        {random(-2, 2), random(0, 1)});
  check("multi_margin_loss p 2", [&](V in) { return F::multi_margin_loss(in[0], labels, 2, 0.8, in[1]); },
        {random(-2, 2), td::rand({5}, td::kFloat64) + 0.5});
  check("multilabel_margin_loss", [&](V in) { return F::multilabel_margin_loss(in[0], listed, td::kSum); },
        {random(-2, 2)});
}

TEST_CASE("the margin and likelihood loss modules call their functional forms with their options", "[cpu]") {
  const Tensor x = a(), z = b(), y = signs();
  auto same = [](const Tensor& module, const Tensor& functional) { check_close(module, values(functional), 0, 0); };
  same(nn::MarginRankingLoss(nn::MarginRankingLossOptions().margin(0.2))(x, z, y),
       F::margin_ranking_loss(x, z, y, 0.2));
  same(nn::HingeEmbeddingLoss()(x, y), F::hinge_embedding_loss(x, y, 1.0));
  same(nn::SoftMarginLoss(td::kSum)(x, y), F::soft_margin_loss(x, y, td::kSum));
  const Tensor pairs = td::tensor(std::vector<double>{1, -1, -1, 1});
  same(nn::CosineEmbeddingLoss(nn::CosineEmbeddingLossOptions().margin(0.1).reduction(td::kNone))(x, z, pairs),
       F::cosine_embedding_loss(x, z, pairs, 0.1, td::kNone));
  same(nn::TripletMarginLoss(nn::TripletMarginLossOptions().p(1).swap(true))(x, z, c()),
       F::triplet_margin_loss(x, z, c(), 1.0, 1, 1e-6, true));
  // A distance of one's own: the squared Euclidean one.
  auto squared = [](const Tensor& u, const Tensor& v) { return ((u - v) * (u - v)).sum({-1}); };
  nn::TripletMarginWithDistanceLoss with_distance(
      nn::TripletMarginWithDistanceLossOptions().distance_function(squared).margin(0.5));
  same(with_distance(x, z, c()), td::clamp(0.5 + squared(x, z) - squared(x, c()), 0).mean());
  same(nn::TripletMarginWithDistanceLoss()(x, z, c()), F::triplet_margin_loss(x, z, c(), 1.0, 2, 1e-6));
  same(nn::PoissonNLLLoss(nn::PoissonNLLLossOptions().full(true))(x, counts()),
       F::poisson_nll_loss(x, counts(), true, true));
  same(nn::GaussianNLLLoss(nn::GaussianNLLLossOptions().full(true))(x, z, row_variances()),
       F::gaussian_nll_loss(x, z, row_variances(), true));
  nn::MultiMarginLoss multi(nn::MultiMarginLossOptions().p(2).weight(class_weights()));
  CHECK(multi->named_buffers().size() == 1);
  same(multi(x, td::tensor({1, 4, 0, 2})), F::multi_margin_loss(x, td::tensor({1, 4, 0, 2}), 2, 1.0, class_weights()));
  nn::MultiLabelSoftMarginLoss soft(nn::MultiLabelSoftMarginLossOptions().weight(class_weights()));
  const Tensor present = (sine_ramp({4, 5}, 0.45) > 0).to(td::kFloat64);
  same(soft(x, present), F::multilabel_soft_margin_loss(x, present, class_weights()));
  const Tensor listed = td::tensor({{3, 0, -1, 1, 1}, {1, 2, 4, -1, 0}, {-1, 1, 2, 3, 4}, {0, 1, 2, 3, 4}});
  same(nn::MultiLabelMarginLoss()(x, listed), F::multilabel_margin_loss(x, listed));
  same(nn::PairwiseDistance(nn::PairwiseDistanceOptions().p(1).keepdim(true))(x, z),
       F::pairwise_distance(x, z, 1, 1e-6, true));
  CHECK(F::pairwise_distance(x, z, 1, 1e-6, true).sizes() == Shape{4, 1});
  CHECK(nn::MarginRankingLoss()->str() == "MarginRankingLoss()");
  CHECK(nn::TripletMarginLoss()->str() == "TripletMarginLoss()");
  CHECK(nn::PairwiseDistance()->str() == "PairwiseDistance()");
  // The same losses in float32 give the float64 values to float32's rounding.
  check_close(F::triplet_margin_loss(x.to(td::kFloat32), z.to(td::kFloat32), c().to(td::kFloat32)),
              values(F::triplet_margin_loss(x, z, c())), 1e-6, 1e-7);
}

TEST_CASE("margin and likelihood losses refuse bad input, naming the loss; the inputs are unchanged", "[cpu]") {
  const Tensor x = a(), z = b(), y = signs();
  const Snapshot before(x);
  check_error([&] { F::margin_ranking_loss(x, z.narrow(1, 0, 4), y); }, {"margin_ranking_loss", "[4, 5]", "[4, 4]"});
  check_error([&] { F::cosine_embedding_loss(x, z, y); }, {"cosine_embedding_loss", "[4, 5]", "target [N]"});
  check_error([&] { F::triplet_margin_loss(x, z, c()[0]); }, {"triplet_margin_loss", "one number of dims"});
  check_error([&] { F::triplet_margin_loss(x, z, c(), 1.0, -1); }, {"triplet_margin_loss", "p must not be negative"});
  check_error([&] { F::triplet_margin_loss(x, z, c(), 0); }, {"triplet_margin_loss", "margin", "positive"});
  check_error([&] { F::gaussian_nll_loss(x, z, td::ones({5})); }, {"gaussian_nll_loss", "var [5]", "[4, 5]"});
  check_error([&] { F::gaussian_nll_loss(x, z, td::ones({2, 5}, td::kFloat64)); }, {"gaussian_nll_loss", "var [2, 5]"});
  check_error(
      [&] {
        F::gaussian_nll_loss(x, z.narrow(1, 0, 2), td::ones({4, 5}, td::kFloat64));
      },
      {"gaussian_nll_loss", "[4, 5]", "[4, 2]"});
  check_error([&] { F::gaussian_nll_loss(x, z, -td::ones({4, 5}, td::kFloat64)); }, {"gaussian_nll_loss", "negative"});
  check_error([&] { F::multi_margin_loss(x, td::tensor({1, 5, 0, 2})); }, {"multi_margin_loss", "outside [0, 5)"});
  check_error([&] { F::multi_margin_loss(x, td::tensor({1, 4, 0, 2}), 3); }, {"multi_margin_loss", "p must be 1 or 2"});
  check_error([&] { F::multi_margin_loss(x, td::tensor({1, 4, 0})); }, {"multi_margin_loss", "target must be [4]"});
  check_error(
      [&] {
        F::multi_margin_loss(x, td::tensor(std::vector<double>{1, 4, 0, 2}));
      },
      {"multi_margin_loss", "int64", "float64"});
  check_error(
      [&] {
        F::multilabel_margin_loss(x, td::zeros({4, 5}, td::kInt64) - 2);
      },
      {"multilabel_margin_loss", "outside [0, 5)", "-1"});
  check_error([&] { F::multilabel_soft_margin_loss(x, y, td::ones({4})); },
              {"multilabel_soft_margin_loss", "weight must be [5]", "[4]"});
  check_error([] { nn::MultiMarginLoss(nn::MultiMarginLossOptions().p(3)); }, {"MultiMarginLoss", "p must be 1 or 2"});
  before.check_unchanged(x);
}

TEST_CASE("margin and likelihood losses take what PyTorch takes: NaN scores, broadcast targets, other dims", "[cpu]") {
  // PyTorch 2.15 gives each of these.
  const Tensor nan_scores = td::tensor(std::vector<double>{NAN, 0.5, 0.2}).view({1, 3});
  CHECK(F::multi_margin_loss(nan_scores, td::tensor({1})).item<double>() == Approx(0.7 / 3).epsilon(1e-12));
  CHECK(F::multilabel_margin_loss(nan_scores, td::tensor({{1, -1, 0}})).item<double>() ==
        Approx(0.7 / 3).epsilon(1e-12));
  CHECK(
      F::multilabel_margin_loss(td::tensor(std::vector<double>{INFINITY, 0, 0}).view({1, 3}), td::tensor({{0, -1, 0}}))
          .item<double>() == 0);
  CHECK(nn::HingeEmbeddingLoss(nn::HingeEmbeddingLossOptions().reduction(td::kSum))(
            td::tensor(std::vector<double>{0.2}), td::tensor(std::vector<double>{-1}))
            .item<double>() == Approx(0.8).epsilon(1e-12));
  const Tensor input = sine_ramp({4, 3, 2, 2}, 0.3);
  CHECK(F::gaussian_nll_loss(input, sine_ramp({4, 1, 2, 2}, 0.5), sine_ramp({4, 3, 2, 2}, 0.2).abs() + 0.1)
            .item<double>() == Approx(0.694763429176061).epsilon(1e-12));
  CHECK(F::gaussian_nll_loss(input, sine_ramp({4, 3, 2, 2}, 0.5), sine_ramp({4, 1, 2, 2}, 0.2).abs() + 0.1)
            .item<double>() == Approx(0.8375659289197528).epsilon(1e-12));
  CHECK(F::pairwise_distance(td::full({}, 1.0, td::kFloat64), td::full({}, -1.0, td::kFloat64)).item<double>() ==
        Approx(2.000001).epsilon(1e-12));
  const Tensor one = F::multi_margin_loss(sine_ramp({5}, 0.3), td::tensor({2}), 1, 1.0, Tensor(), td::kNone);
  CHECK(one.sizes() == Shape{1});
  CHECK(one.item<double>() == Approx(0.7504632617351816).epsilon(1e-12));
  check_close(F::triplet_margin_loss(sine_ramp({2, 3, 4}, 0.3), sine_ramp({2, 3, 4}, 0.5), sine_ramp({2, 3, 4}, 0.7),
                                     1.0, 2, 1e-6, false, td::kNone),
              {0.8430638551222893, 0.0, 1.4938751675682653, 1.8960327840013782, 2.4285485390026946, 1.374517988520212},
              1e-12, 1e-14);
  check_close(F::triplet_margin_loss(sine_ramp({2, 4}, 0.3), sine_ramp({2, 4}, 0.5), sine_ramp({2, 4}, 0.7), 1.0, 0,
                                     1e-6, false, td::kNone),
              {1, 1}, 0, 0);
  CHECK(F::poisson_nll_loss(sine_ramp({2, 3}, 0.3), td::tensor({{0, 1, 2}, {3, 4, 5}})).item<double>() ==
        Approx(-0.1579779345094733).epsilon(1e-12));
  check_close(F::multilabel_soft_margin_loss(sine_ramp({2, 3, 4}, 0.3), (sine_ramp({2, 3, 4}, 0.45) > 0).to(td::kInt64),
                                             Tensor(), td::kNone),
              {0.5189677482577207, 0.5453584995500372, 0.8499827417052281, 0.8553358926472749, 1.1820875002462727,
               0.8571985107791655},
              1e-12, 1e-14);
  CHECK(nn::TripletMarginWithDistanceLoss()->str() ==
        "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)");
}

TEST_CASE("ctc_loss gives PyTorch's losses and, through log_softmax, its gradients", "[cpu]") {
  // PyTorch 2.15: log_probs = log_softmax(2 sin(0.37 i)) [8, 3, 5], padded targets
  // [[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 4, 1]], input lengths [8, 6, 5], target lengths [3, 2, 4]:
  // the third target cannot fit (4 labels and 2 repeats in 5 frames).
  Tensor logits = sine_ramp({8, 3, 5}, 0.37) * 2;
  const Tensor log_probs = logits.log_softmax(2);
  const Tensor targets = td::tensor({{1, 2, 2, 0}, {3, 1, 0, 0}, {4, 4, 4, 1}});
  const Tensor in_lengths = td::tensor({8, 6, 5}), out_lengths = td::tensor({3, 2, 4});
  const Tensor none = F::ctc_loss(log_probs, targets, in_lengths, out_lengths, 0, td::kNone);
  check_close(none, {9.032335936998924, 6.984984207334776, INFINITY}, 1e-12, 0);
  CHECK(std::isinf(F::ctc_loss(log_probs, targets, in_lengths, out_lengths).item<double>()));
  check_close(F::ctc_loss(log_probs, targets, in_lengths, out_lengths, 0, td::kNone, true),
              {9.032335936998924, 6.984984207334776, 0.0}, 1e-12, 0);
  // 1-D targets one after another, blank 4.
  check_close(
      F::ctc_loss(log_probs, td::tensor({1, 2, 2, 3, 1, 0, 0, 1}), in_lengths, td::tensor({3, 2, 3}), 4, td::kNone),
      {9.764324689057448, 5.916257151782397, 6.07299823309085}, 1e-12, 0);
  // Empty targets (no frames at all for the second) and a one-label target.
  check_close(F::ctc_loss(log_probs, targets, td::tensor({8, 0, 3}), td::tensor({0, 0, 1}), 0, td::kNone),
              {14.48200280274503, 0.0, 2.795328586332774}, 1e-12, 1e-15);
  // One sequence, unbatched.
  CHECK(F::ctc_loss(log_probs.select(1, 0), td::tensor({1, 2, 2}), td::tensor(std::vector<int64_t>{8}).view({}),
                    td::tensor(std::vector<int64_t>{3}).view({}))
            .item<double>() == Approx(3.010778645666308).epsilon(1e-12));
  // Gradients with respect to the logits, for two sequences that fit, losses weighted 1 and 0.5.
  Tensor leaf = (sine_ramp({8, 2, 5}, 0.37) * 2).requires_grad_(true);
  const Tensor two = F::ctc_loss(leaf.log_softmax(2), td::tensor({{1, 2, 2}, {3, 1, 0}}), td::tensor({8, 6}),
                                 td::tensor({3, 2}), 0, td::kNone);
  check_close(two, {8.777511336626064, 5.266908084588281}, 1e-12, 0);
  (two * td::tensor(std::vector<double>{1.0, 0.5})).sum().backward();
  check_close(leaf.grad().flatten().narrow(0, 0, 8),
              {-0.25753331073512, -0.5912220872119937, 0.19031982243412157, 0.2963459379223284, 0.3620896375906637,
               -0.2075382799129248, 0.1469948454076306, 0.08523015130706926},
              1e-11, 1e-14);
  CHECK((leaf.grad() * sine_ramp({8, 2, 5}, 0.11)).sum().item<double>() == Approx(0.2553503854969635).epsilon(1e-11));
  CHECK(F::ctc_loss(leaf.detach().log_softmax(2), td::tensor({{1, 2, 2}, {3, 1, 0}}), td::tensor({8, 6}),
                    td::tensor({3, 2}))
            .item<double>() == Approx(2.779645577251414).epsilon(1e-12));
  // A class of probability 0 in every frame of sequence 0 (a masked logit): no path, an infinite
  // loss, and under zero_infinity 0 with no gradient, as PyTorch's.
  Tensor masked = sine_ramp({6, 2, 4}, 0.37) * 2;
  masked.select(1, 0).select(1, 2).fill_(-INFINITY);
  const Tensor pair = td::tensor({{1, 2}, {3, 1}}), six = td::tensor({6, 6}), lengths = td::tensor({2, 2});
  check_close(F::ctc_loss(masked.log_softmax(2), pair, six, lengths, 0, td::kNone), {INFINITY, 3.8904641345410176},
              1e-12, 0);
  masked.requires_grad_(true);
  const Tensor zeroed = F::ctc_loss(masked.log_softmax(2), pair, six, lengths, 0, td::kNone, true);
  check_close(zeroed, {0.0, 3.8904641345410176}, 1e-12, 0);
  zeroed.sum().backward();
  CHECK(masked.grad().select(1, 0).abs().max().item<double>() == 0);
  CHECK((masked.grad().select(1, 1) * sine_ramp({6, 4}, 0.23)).sum().item<double>() ==
        Approx(-0.08112474474277742).epsilon(1e-11));
  nn::CTCLoss module(nn::CTCLossOptions().reduction(td::kSum).zero_infinity(true));
  CHECK(module(log_probs, targets, in_lengths, out_lengths).item<double>() ==
        Approx(9.032335936998924 + 6.984984207334776).epsilon(1e-12));
  CHECK(module->str() == "CTCLoss()");
  const td::testing::Snapshot before(log_probs);
  check_error(
      [&] {
        F::ctc_loss(log_probs, td::tensor({{1, 0, 2, 0}}), td::tensor({8}), td::tensor({3}));
      },
      {"ctc_loss", "one length per sequence (3)"});
  check_error(
      [&] {
        F::ctc_loss(log_probs, targets, td::tensor({8, 9, 5}), out_lengths);
      },
      {"ctc_loss", "input length 9", "[0, 8]"});
  check_error(
      [&] {
        F::ctc_loss(log_probs, td::tensor({{1, 0, 2, 0}, {3, 1, 0, 0}, {4, 4, 4, 1}}), in_lengths, out_lengths);
      },
      {"ctc_loss", "label 0", "blank 0"});
  check_error([&] { F::ctc_loss(log_probs, targets, in_lengths, out_lengths, 5); }, {"ctc_loss", "blank 5"});
  before.check_unchanged(log_probs);
}
