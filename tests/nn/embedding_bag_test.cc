// EmbeddingBag and F::embedding_bag against PyTorch 2.15 (float64): sum, mean and max bags from
// offsets with a padding index and an empty bag, per-sample weights with include_last_offset, 2-D
// bags; the weight's (and weights') gradients; printing and errors.
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
using Mode = F::EmbeddingBagMode;

TEST_CASE("embedding_bag sums, averages and maxes bags as PyTorch, padding left out, empty bags 0", "[cpu]") {
  // PyTorch 2.15: weight sin(0.37 i) [10, 3], input [1, 2, 4, 5, 4, 3, 2, 9, 0, 2], offsets
  // [0, 4, 4, 7] (bag 1 empty), padding_idx 2; gradients of sum(y * sin(0.11 i)).
  const Tensor input = td::tensor({1, 2, 4, 5, 4, 3, 2, 9, 0, 2}), offsets = td::tensor({0, 4, 4, 7});
  struct Expected {
    Mode mode;
    std::vector<double> y, grad;
  };
  const std::vector<Expected> expected = {
      {Mode::sum,
       {-0.7366721021695308, -0.3546125412195653, 0.07544216362183542, 0.0, 0.0, 0.0, -1.1504255941162196,
        -1.525075966677656, -1.6933144616040523, -0.5356033346142913, -0.44311547729850514, -0.2906540188790422},
       {0.8360259786005205,
        0.8912073600614354,
        0.9356160015533859,
        0.0,
        0.10977830083717481,
        0.21822962308086932,
        0.0,
        0.0,
        0.0,
        0.6131168519734338,
        0.6961352386273567,
        0.7707388788989693,
        0.6131168519734338,
        0.8059135394645315,
        0.9889685019798387,
        0.0,
        0.10977830083717481,
        0.21822962308086932,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.8360259786005205,
        0.8912073600614354,
        0.9356160015533859}},
      {Mode::mean,
       {-0.2455573673898436, -0.11820418040652177, 0.025147387873945142, 0.0, 0.0, 0.0, -0.5752127970581098,
        -0.762537983338828, -0.8466572308020262, -0.26780166730714566, -0.22155773864925257, -0.1453270094395211},
       {0.41801298930026026,
        0.4456036800307177,
        0.46780800077669293,
        0.0,
        0.036592766945724935,
        0.07274320769362311,
        0.0,
        0.0,
        0.0,
        0.3065584259867169,
        0.34806761931367836,
        0.38536943944948465,
        0.3065584259867169,
        0.3846603862594033,
        0.45811264714310773,
        0.0,
        0.036592766945724935,
        0.07274320769362311,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.41801298930026026,
        0.4456036800307177,
        0.46780800077669293}},
      {Mode::max,
       {0.8956986856800476, 0.99588084453764, 0.9612752029752999, 0.0, 0.0, 0.0, -0.18729466354290317,
        -0.5298361409084934, -0.8006667821758177, 0.0, 0.361615431964962, 0.674287911628145},
       {0.8360259786005205,
        0.8912073600614354,
        0.9356160015533859,
        0.0,
        0.10977830083717481,
        0.21822962308086932,
        0.0,
        0.0,
        0.0,
        0.6131168519734338,
        0.6961352386273567,
        0.7707388788989693,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0}},
  };
  for (const Expected& e : expected) {
    INFO(F::embedding_bag_mode_name(e.mode));
    Tensor weight = sine_ramp({10, 3}, 0.37).requires_grad_(true);
    const Tensor y = F::embedding_bag(input, weight, offsets, e.mode, Tensor(), false, 2);
    REQUIRE(y.sizes() == Shape{4, 3});
    check_close(y, e.y, 1e-14, 1e-15);
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    check_close(weight.grad(), e.grad, 1e-14, 1e-15);
  }
  // Per-sample weights with the last offset closing the last bag.
  Tensor weight = sine_ramp({10, 3}, 0.37).requires_grad_(true), scale = sine_ramp({10}, 0.5).requires_grad_(true);
  const Tensor y = F::embedding_bag(input, weight, td::tensor({0, 4, 4, 7, 10}), Mode::sum, scale, true);
  check_close(
      y,
      {-1.0961163045568614, -0.9405888406054246, -0.6577570895797642, 0.0, 0.0, 0.0, -0.8754517898741229,
       -1.1481080421969754, -1.2653732570267708, -0.5907860733255709, -0.5036544824711873, -0.34835562016431487},
      1e-14, 1e-15);
  (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
  check_close(scale.grad(),
              {0.31910483217191865, 0.09694015286613517, -0.30405790362406093, -0.03751197584689579, -1.971331589488905,
               -1.100776140953415, 0.9923860126300481, -2.0677755219194878, 0.9531488942522772, 1.3019503608184766},
              1e-14, 1e-15);
  // A 2-D input is a bag per row.
  check_close(F::embedding_bag(td::tensor({{1, 2, 3}, {4, 4, 0}}), sine_ramp({10, 3}, 0.37), Tensor(), Mode::max),
              {0.8956986856800476, 0.99588084453764, 0.9612752029752999, 0.0, 0.361615431964962, 0.674287911628145},
              1e-15, 0);
}

TEST_CASE("EmbeddingBag prints, starts and bags as PyTorch's; bad input is refused", "[cpu]") {
  CHECK(nn::EmbeddingBag(10, 3)->str() == "EmbeddingBag(10, 3, mode='mean')");
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(10, 3).mode(Mode::sum).padding_idx(2));
  CHECK(bag->str() == "EmbeddingBag(10, 3, mode='sum', padding_idx=2)");
  CHECK(bag->weight[2].abs().sum().item<double>() == 0);
  const Tensor input = td::tensor({1, 2, 4, 5, 2, 1}), offsets = td::tensor({0, 3});  // 2 is padding
  check_close(
      bag(input, offsets),
      td::testing::values(F::embedding_bag(td::tensor({1, 4, 5, 1}), bag->weight, td::tensor({0, 2}), Mode::sum)), 0,
      0);
  const Snapshot before(bag->weight);
  check_error([&] { bag(input); }, {"embedding_bag", "1-D input needs offsets"});
  check_error([&] { bag(td::tensor({{1, 2}}), offsets); }, {"embedding_bag", "2-D input", "no offsets"});
  check_error([&] { bag(input, td::tensor({1, 2})); }, {"embedding_bag", "offsets must start at 0"});
  check_error([&] { bag(input, td::tensor({0, 7})); }, {"embedding_bag", "must not decrease nor pass", "6"});
  check_error(
      [&] {
        F::embedding_bag(input, bag->weight, td::tensor({0, 2, 3}), Mode::sum, Tensor(), true);
      },
      {"embedding_bag", "include_last_offset", "last offset (3)", "6"});
  check_error([&] { bag(td::tensor({1, 10}), td::tensor({0})); }, {"embedding_bag", "index 10", "10 rows"});
  check_error([&] { F::embedding_bag(input, bag->weight, offsets, Mode::max, td::ones({4})); },
              {"embedding_bag", "per_sample_weights", "'sum' only", "'max'"});
  before.check_unchanged(bag->weight);
}

TEST_CASE("embedding_bag's max lets a NaN win only as a bag's first entry, as PyTorch's scan", "[cpu]") {
  // PyTorch 2.15: rows [nan, 0], [3, nan], [1, 2]; bags [0, 1] -> [nan, 0], [1, 0] -> [3, nan],
  // [2, 0, 1] -> [3, 2].
  const Tensor weight = td::tensor(std::vector<double>{NAN, 0, 3, NAN, 1, 2}).view({3, 2});
  const Tensor first = F::embedding_bag(td::tensor({0, 1}), weight, td::tensor({0}), Mode::max);
  CHECK(std::isnan(first[0][0].item<double>()));
  CHECK(first[0][1].item<double>() == 0);
  const Tensor second = F::embedding_bag(td::tensor({1, 0}), weight, td::tensor({0}), Mode::max);
  CHECK(second[0][0].item<double>() == 3);
  CHECK(std::isnan(second[0][1].item<double>()));
  check_close(F::embedding_bag(td::tensor({2, 0, 1}), weight, td::tensor({0}), Mode::max), {3, 2}, 0, 0);
}

TEST_CASE("embedding's max_norm renorms the named rows in place and scale_grad_by_freq divides by the count", "[cpu]") {
  // PyTorch 2.15: weight = 2 sin(0.7 i) [6, 4], indices [[1, 3, 1], [5, 1, 0]], max_norm 1.2: the
  // table after the lookup (rows 0, 1, 3 and 5 scaled, row 2 and 4 untouched), the output, and
  // with scale_grad_by_freq the weight's gradient of sum(y * sin(0.11 i)) (row 1 named 3 times).
  Tensor weight = (sine_ramp({6, 4}, 0.7) * 2).requires_grad_(true);
  const Tensor indices = td::tensor({{1, 3, 1}, {5, 1, 0}});
  const Tensor y = F::embedding(indices, weight, std::nullopt, 1.2, 2, true);
  check_close(weight,
              {0.0,
               0.5295364520641659,
               0.8100236364872487,
               0.7095440477019195,
               0.28712365172899373,
               -0.300661862972323,
               -0.7470414055465546,
               -0.8420757022482883,
               -1.2625332757446432,
               0.033627800968699426,
               1.3139731974375781,
               1.9763364677540005,
               0.7773689337462205,
               0.29026149150433533,
               -0.3333604656529518,
               -0.8001977869126948,
               -1.9583554583026348,
               -1.2362742244740694,
               0.06724609444227339,
               1.339139524393202,
               0.8546809636668306,
               0.7296975057815577,
               0.26152590908917467,
               -0.32964540910290024},
              1e-15, 1e-15);
  CHECK(y.sum().item<double>() == Approx(-1.3085306787416104).epsilon(1e-14));
  (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
  check_close(weight.grad(),
              {0.8084964038195901,
               0.7390052780594708,
               0.6605812012792007,
               0.5741721483545726,
               0.5842977320121959,
               0.6337919320968798,
               0.6756249794747048,
               0.7092912044646222,
               0.0,
               0.0,
               0.0,
               0.0,
               0.4259394650659996,
               0.5226872289306592,
               0.6131168519734338,
               0.6961352386273567,
               0.0,
               0.0,
               0.0,
               0.0,
               0.9687151001182652,
               0.9901045603371778,
               0.9995258306054791,
               0.9968650284539189},
              1e-14, 1e-15);
  // float32 and the 1-norm (PyTorch 2.15: rows 1, 3 and 5 named, max_norm 1.2 and 2).
  Tensor single = (sine_ramp({6, 4}, 0.7) * 2).to(td::kFloat32);
  F::embedding_renorm_(single, td::tensor({1, 3, 1, 5}), 1.2, 2);
  check_close(single.narrow(0, 1, 1),
              {0.2871236503124237, -0.3006618618965149, -0.7470414042472839, -0.842075765132904}, 0, 0);
  Tensor one_norm = sine_ramp({6, 4}, 0.7) * 2;
  F::embedding(td::tensor({1, 3, 1, 5}), one_norm, std::nullopt, 2.0, 1.0);
  check_close(one_norm.narrow(0, 5, 1),
              {0.7857149044115606, 0.6708166326119396, 0.24042281669590213, -0.3030456066223567}, 1e-15, 0);
}

TEST_CASE("embedding_bag's max_norm and scale_grad_by_freq, and from_pretrained tables, as PyTorch's", "[cpu]") {
  // PyTorch 2.15: weight = 2 sin(0.7 i) [6, 4], 2-D bags [[1, 3, 1], [5, 1, 0]], mode mean, max_norm
  // 1.5 in the 1-norm, scale_grad_by_freq; then 1-D bags [1, 3, 1 | 5, 1, 0] summed with padding 3.
  Tensor weight = (sine_ramp({6, 4}, 0.7) * 2).requires_grad_(true);
  const Tensor bags = F::embedding_bag(td::tensor({{1, 3, 1}, {5, 1, 0}}), weight, Tensor(), Mode::mean, Tensor(),
                                       false, std::nullopt, 1.5, 1.0, true);
  check_close(bags,
              {0.3084748404430396, -0.07218162292612205, -0.41888994116415784, -0.5685877747368088, 0.26237647294038435,
               0.22785859500977598, 0.08617525945731093, -0.09603764714350005},
              1e-14, 1e-15);
  (bags * sine_ramp(bags.sizes(), 0.11)).sum().backward();
  check_close(weight.grad(),
              {0.14197982168866652,
               0.17422907631021972,
               0.2043722839911446,
               0.23204507954245224,
               0.04732660722955551,
               0.08247153673388986,
               0.1166195664594636,
               0.14935792171301038,
               0.0,
               0.0,
               0.0,
               0.0,
               0.0,
               0.036592766945724935,
               0.07274320769362311,
               0.10801434279828945,
               0.0,
               0.0,
               0.0,
               0.0,
               0.14197982168866652,
               0.17422907631021972,
               0.2043722839911446,
               0.23204507954245224},
              1e-14, 1e-15);
  Tensor table = (sine_ramp({6, 4}, 0.7) * 2).requires_grad_(true);
  const Tensor summed = F::embedding_bag(td::tensor({1, 3, 1, 5, 1, 0}), table, td::tensor({0, 2}), Mode::sum, Tensor(),
                                         false, 3, std::nullopt, 2, true);
  (summed * sine_ramp(summed.sizes(), 0.11)).sum().backward();
  check_close(table.grad().narrow(0, 0, 2),
              {0.4259394650659996, 0.5226872289306592, 0.6131168519734338, 0.6961352386273567, 0.28395964337733304,
               0.3850509195661644, 0.4814877756759123, 0.5721045018831938},
              1e-14, 1e-15);
  check_error(
      [&] {
        F::embedding_bag(td::tensor({{1, 2}}), table, Tensor(), Mode::max, Tensor(), false, {}, {}, 2, true);
      },
      {"embedding_bag", "max", "scale_grad_by_freq"});

  // from_pretrained: the table itself is the weight, frozen unless asked; printing as PyTorch's.
  const Tensor pretrained = sine_ramp({5, 3}, 0.3);
  nn::Embedding lookup =
      nn::Embedding::from_pretrained(pretrained, nn::EmbeddingFromPretrainedOptions().padding_idx(1).max_norm(0.9));
  CHECK(lookup->str() == "Embedding(5, 3, padding_idx=1, max_norm=0.9)");
  CHECK_FALSE(lookup->weight.requires_grad());
  CHECK(lookup->weight.data_ptr<double>() == pretrained.data_ptr<double>());
  const std::vector<double> renormed = td::testing::values(pretrained[4] * 0.9 / (pretrained[4].norm() + 1e-7));
  check_close(lookup(td::tensor({4})), renormed, 1e-15, 0);
  // A clone has a table of its own, still frozen; the caller's tensor keeps its flags.
  auto copy = std::dynamic_pointer_cast<nn::EmbeddingImpl>(lookup->clone());
  CHECK(copy->weight.data_ptr<double>() != pretrained.data_ptr<double>());
  CHECK_FALSE(copy->weight.requires_grad());
  CHECK(lookup->weight.data_ptr<double>() == pretrained.data_ptr<double>());
  Tensor trainable = sine_ramp({5, 3}, 0.3).requires_grad_(true);
  nn::Embedding::from_pretrained(trainable);
  CHECK(trainable.requires_grad());
  nn::Embedding ints = nn::Embedding::from_pretrained(td::arange(6).view({3, 2}));
  CHECK(ints(td::tensor({2})).dtype() == td::kInt64);
  nn::EmbeddingBag bag = nn::EmbeddingBag::from_pretrained(
      sine_ramp({5, 3}, 0.3), nn::EmbeddingBagFromPretrainedOptions().freeze(false).mode(Mode::sum));
  CHECK(bag->str() == "EmbeddingBag(5, 3, mode='sum')");
  CHECK(bag->weight.requires_grad());
  CHECK(nn::EmbeddingBag(
            nn::EmbeddingBagOptions(10, 3).max_norm(1.5).norm_type(1.0).scale_grad_by_freq(true).padding_idx(2))
            ->str() ==
        "EmbeddingBag(10, 3, max_norm=1.5, norm_type=1.0, scale_grad_by_freq=True, mode='mean', padding_idx=2)");
  CHECK(nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(0).max_norm(2.5).norm_type(3).scale_grad_by_freq(true))
            ->str() == "Embedding(10, 3, padding_idx=0, max_norm=2.5, norm_type=3.0, scale_grad_by_freq=True)");
  CHECK(nn::Embedding(0, 3)->weight.sizes() == Shape{0, 3});
  check_error(
      [] {
        nn::Embedding(nn::EmbeddingOptions(4, 3)._weight(td::ones({3, 3})));
      },
      {"Embedding", "_weight", "[4, 3]", "[3, 3]"});
  check_error([] { nn::Embedding::from_pretrained(td::ones({3})); }, {"from_pretrained", "2-D", "[3]"});
  check_error([&] { F::embedding(td::tensor({7}), table, std::nullopt, 1.0); }, {"embedding", "7", "6 rows"});
  // Refused before any row is renormed.
  const td::testing::Snapshot before(table);
  check_error([&] { F::embedding(td::tensor({1.5}), table, std::nullopt, 0.1); }, {"embedding", "int64", "float32"});
  check_error([&] { F::embedding(td::tensor({1}), table, 7, 0.1); }, {"embedding", "padding_idx 7", "6 rows"});
  check_error(
      [&] { F::embedding_bag(td::tensor({1, 2}), table, td::tensor({{0}}), Mode::sum, Tensor(), false, {}, 0.1); },
      {"embedding_bag", "offsets"});
  before.check_unchanged(table);
}
