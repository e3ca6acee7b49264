// Attention and the Transformer encoder against PyTorch 2.15 (float64, the same parameter values
// set by name; PyTorch in training mode with dropout 0, its step-by-step path): outputs, attention
// weights and gradients with masks of every kind, batch first or not, post- and pre-norm layers,
// and an encoder of two layers with a final norm; names, printing and errors.
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
using td::testing::values;

TEST_CASE("scaled_dot_product_attention gives PyTorch's outputs and gradients, every kind of mask", "[cpu]") {
  Tensor q = sine_ramp({2, 3, 4, 5}, 0.3).requires_grad_(true), k = sine_ramp({2, 3, 6, 5}, 0.5).requires_grad_(true);
  Tensor v = sine_ramp({2, 3, 6, 7}, 0.7).requires_grad_(true);
  // Query 1 may attend nowhere (zeros, PyTorch's safe softmax), query 2 to every other key.
  Tensor mask = td::ones({4, 6}, td::kBool);
  mask.select(0, 1).fill_(false);
  mask.select(0, 2).narrow(0, 0, 6).copy_(td::tensor({false, true, false, true, false, true}));
  auto run = [&](const std::string& name, const Tensor& out) {
    q.mutable_grad() = Tensor();
    k.mutable_grad() = Tensor();
    (out * sine_ramp(out.sizes(), 0.11)).sum().backward();
    return name;
  };
  {
    const Tensor out = F::scaled_dot_product_attention(q, k, v);
    run("sdpa plain", out);
    same_as_pytorch(out,
                    {-0.10025666652142712, 0.16056385655932356, 0.34586868902075907, 0.36850607268838825,
                     0.21782929230444847, -0.03529600792685597, -0.2718210441148221, 0.06544068346063614},
                    2.5249288808287917, "sdpa plain out");
    same_as_pytorch(q.grad(),
                    {-0.08238346985080777, -0.05637286584827831, -0.016560218213660965, 0.02730694839746191,
                     0.06448842167776661, -0.2462580927557636, -0.15079209061409402, -0.01840692563208016},
                    -0.14007595153001193, "sdpa plain gq");
    same_as_pytorch(k.grad(),
                    {0.10369218994998783, 0.08433809152087655, 0.05745032255622863, 0.025430687379125603,
                     -0.008860595362579186, 0.09008685531238456, 0.07681958022257983, 0.05669024081949995},
                    -2.7755575615628914e-16, "sdpa plain gk");
  }
  {
    const Tensor out = F::scaled_dot_product_attention(q, k, v, mask);
    run("sdpa bool", out);
    same_as_pytorch(out,
                    {-0.10025666652142712, 0.16056385655932356, 0.34586868902075907, 0.36850607268838825,
                     0.21782929230444847, -0.03529600792685597, -0.2718210441148221, 0.0},
                    1.6612829392891726, "sdpa bool out");
    same_as_pytorch(q.grad(),
                    {-0.08238346985080777, -0.05637286584827831, -0.016560218213660965, 0.02730694839746191,
                     0.06448842167776661, 0.0, 0.0, 0.0},
                    -1.757217976184707, "sdpa bool gq");
    same_as_pytorch(k.grad(),
                    {-0.015024855114821893, -0.020464953690108072, -0.02407697890203003, -0.025538279295925243,
                     -0.024718321259726717, 0.055477962643617124, 0.024866979326433208, -0.007965297193869661},
                    -2.7755575615628914e-16, "sdpa bool gk");
  }
  {
    const Tensor out = F::scaled_dot_product_attention(q, k, v, sine_ramp({4, 6}, 0.9));
    run("sdpa float", out);
    same_as_pytorch(out,
                    {-0.05556582086732259, -0.06108393062749783, -0.037873313350815924, 0.0031497149815998826,
                     0.04269138314251549, 0.062154626740243066, 0.05238557818920171, 0.41100328997229085},
                    0.4337579151028226, "sdpa float out");
    same_as_pytorch(q.grad(),
                    {-0.1214390794762614, -0.12404257651037982, -0.09627612467866198, -0.04493791977837441,
                     0.017402655148402276, -0.24023796057523344, -0.1842570948565785, -0.08316366612619365},
                    -1.309714512683503, "sdpa float gq");
    same_as_pytorch(k.grad(),
                    {0.07566756663506082, 0.06802849275259341, 0.05431263621847782, 0.035745193647640255,
                     0.01398473938642532, 0.07956234272658731, 0.08526634376625564, 0.083353756261876},
                    -2.220446049250313e-16, "sdpa float gk");
  }
  {
    const Tensor out = F::scaled_dot_product_attention(q, k, v, Tensor(), 0, false, 0.3);
    run("sdpa scale", out);
    same_as_pytorch(out,
                    {-0.0863395013706729, 0.12809140486929635, 0.2822789219158242, 0.30370625125551626,
                     0.18229578508865912, -0.024851237255610795, -0.22031033440727282, 0.006786119556200371},
                    1.2508458681738055, "sdpa scale out");
    same_as_pytorch(q.grad(),
                    {-0.048761640644019326, -0.03402509871281131, -0.010958025949904195, 0.014791953740055068,
                     0.036920347267027004, -0.12550161140756289, -0.07615527631342421, -0.008163473569645089},
                    0.060993139027637894, "sdpa scale gq");
    same_as_pytorch(k.grad(),
                    {0.050395221299897326, 0.03475924531020983, 0.016018329458725753, -0.004153456056697167,
                     -0.02395422571261085, 0.06699283632282718, 0.06167598772862703, 0.05084980683721384},
                    -1.6653345369377348e-16, "sdpa scale gk");
  }
  Tensor square = sine_ramp({2, 3, 6, 5}, 0.3).requires_grad_(true);
  const Tensor causal = F::scaled_dot_product_attention(square, k, v, Tensor(), 0, true);
  (causal * sine_ramp(causal.sizes(), 0.11)).sum().backward();
  same_as_pytorch(causal,
                  {0.0, 0.644217687237691, 0.9854497299884601, 0.8632093666488739, 0.3349881501559051,
                   -0.35078322768961984, -0.8715757724135877, -0.22200943379657315},
                  2.619195759109454, "sdpa causal out");
  same_as_pytorch(square.grad(),
                  {0.0, 0.0, 0.0, 0.0, 0.0, 0.013908956194003506, -0.007862482574816304, -0.02770891139565491},
                  -1.4048104832031894, "sdpa causal gq");
}

TEST_CASE("MultiheadAttention between sequences with a padding mask and an added mask: PyTorch's results", "[cpu]") {
  nn::MultiheadAttention mha(8, 2);
  td::testing::set_sine_parameters(*mha);
  std::vector<std::string> names;
  for (const auto& [name, p] : mha->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
  Tensor query = sine_ramp({4, 3, 8}, 0.3).requires_grad_(true);
  const Tensor key = sine_ramp({6, 3, 8}, 0.5), value = sine_ramp({6, 3, 8}, 0.7);
  Tensor padding = td::zeros({3, 6}, td::kBool);
  padding[0][5].fill_(true);
  padding[2].narrow(0, 0, 2).fill_(true);
  const Tensor added = sine_ramp({4, 6}, 0.9) * 0.5;
  auto [out, weights] = mha(query, key, value, padding, true, added);
  CHECK(out.sizes() == Shape{4, 3, 8});
  CHECK(weights.sizes() == Shape{3, 4, 6});
  (out * sine_ramp(out.sizes(), 0.11)).sum().backward();
  same_as_pytorch(out,
                  {-0.7370555286192382, 0.7659732455263888, -0.06518052118027312, 0.5115858891520904,
                   0.5394737063678802, -0.09261082857599479, 0.7820316404478311, -0.751068660208221},
                  11.456885749299662, "mha out");
  same_as_pytorch(weights,
                  {0.009202566902018539, 0.01631097713304159, 0.053346523783546346, 0.20836464898924106,
                   0.7127752831921526, 0.0, 0.002837542404926608, 0.006172578114520785},
                  12.0, "mha weights");
  same_as_pytorch(query.grad(),
                  {0.0020571214906343845, 0.001135838822659187, 0.0001890476634502699, -0.0007619890987171578,
                   -0.0016959132284784261, -0.002591750803300059, -0.0034293832425627765, -0.004189999127509131},
                  0.04931578270436164, "mha gq");
  same_as_pytorch(mha->in_proj_weight.grad(),
                  {0.011502108887502102, -0.0015589770830688136, -0.014480804273834599, -0.026109104346291614,
                   -0.03540515588696605, -0.041538570297706245, -0.04396146793604966, -0.04245741857196098},
                  1.256655663194104, "mha gw");
  same_as_pytorch(mha->out_proj->weight.grad(),
                  {-0.3099360183670581, -0.5794717032650606, -0.9627399835923754, -1.049607573191746,
                   -0.9632958117856251, -0.6691375295964368, -0.340010215784808, -0.24949463482928277},
                  -34.44599654651747, "mha gow");
  auto [out2, per_head] = mha(query, key, value, padding, true, added, false);
  CHECK(per_head.sizes() == Shape{3, 2, 4, 6});
  same_as_pytorch(per_head,
                  {0.01146113249031517, 0.017594998140615152, 0.0513834517991771, 0.19578949271157264,
                   0.7237709248583201, 0.0, 0.004307826647754509, 0.008312438978139573},
                  24.0, "mha weights per head");
  check_close(per_head.mean({1}), values(weights), 1e-15, 0);
  CHECK_FALSE(std::get<1>(mha(query, key, value, padding, false, added)).defined());
}

TEST_CASE("MultiheadAttention as self-attention (batch first, no bias, causal bool mask) as PyTorch", "[cpu]") {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 4).bias(false).batch_first(true));
  CHECK(mha->parameters().size() == 2);
  td::testing::set_sine_parameters(*mha);
  Tensor x = sine_ramp({3, 5, 8}, 0.3).requires_grad_(true);
  const Tensor future = td::triu(td::ones({5, 5}, td::kBool), 1);  // true: may not attend
  auto [out, weights] = mha(x, x, x, Tensor(), true, future);
  (out * sine_ramp(out.sizes(), 0.11)).sum().backward();
  same_as_pytorch(out,
                  {0.4848817630284702, 0.32166691233486056, -0.7526030990085485, 0.30471988532110605,
                   0.49898666638977607, -0.7200233307157252, 0.100284196245196, 0.6365574286695032},
                  3.7939282774899157, "self out");
  same_as_pytorch(weights, {1.0, 0.0, 0.0, 0.0, 0.0, 0.8587943258992463, 0.14120567410075371, 0.0}, 15.0,
                  "self weights");
  same_as_pytorch(x.grad(),
                  {0.44477271602784246, 0.4551003918621642, 0.4552074940334923, 0.44509161725795643, 0.4249799423194018,
                   0.3953241340787446, 0.3567901980549455, 0.310243523376861},
                  -2.275562630453339, "self gx");
  // One sequence, unbatched: the same as a batch of one.
  auto [one, one_weights] = mha(x[1], x[1], x[1], Tensor(), true, future);
  check_close(one, values(out[1]), 1e-14, 1e-15);
  check_close(one_weights, values(weights[1]), 1e-14, 1e-15);
}

TEST_CASE("TransformerEncoderLayer (post-norm relu, pre-norm gelu; batch first, padding) as PyTorch", "[cpu]") {
  for (const bool pre : {false, true}) {
    const std::string name = pre ? "layer pre gelu" : "layer post relu";
    auto options = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0).batch_first(true);
    if (pre) options.norm_first(true).activation(nn::TransformerActivation::gelu);
    nn::TransformerEncoderLayer layer(options);
    td::testing::set_sine_parameters(*layer);
    Tensor x = sine_ramp({3, 5, 8}, 0.3).requires_grad_(true);
    Tensor padding = td::zeros({3, 5}, td::kBool);
    padding[1][4].fill_(true);
    const Tensor y = layer(x, Tensor(), padding);
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    if (pre) {
      same_as_pytorch(y,
                      {-0.26424350707655525, 1.9147039536080275, 1.4565653435625898, 1.8254903389177437,
                       1.3887869147142569, 0.2430722999259083, 0.8473968871005055, -0.5827667873334604},
                      25.88353386635049, "layer pre gelu out");
      same_as_pytorch(x.grad(),
                      {-0.01731761860222709, 0.11136239112873719, 0.24056472324294034, 0.3336521691853118,
                       0.39933324727844216, 0.49825394454843003, 0.6274252348227425, 0.7166556453059848},
                      1.4668747808206644, "layer pre gelu gx");
      same_as_pytorch(layer->linear1->weight.grad(),
                      {0.0, -0.07323188242118371, -0.10473785697831585, 0.02683110536696052, 0.004412255134230429,
                       -0.014336943491554194, 0.08588827605003099, 0.11309840003544695},
                      -0.18678886055445953, "layer pre gelu glinear1");
    } else {
      same_as_pytorch(y,
                      {0.0, 0.898287611933338, 0.607185867814873, -0.307817265844587, -0.11938277481942727,
                       0.19696428752716838, 0.06450733585886827, -0.03187362132187562},
                      19.587638691006163, "layer post relu out");
      same_as_pytorch(x.grad(),
                      {-0.02423555737663549, -0.008813587590060661, 0.003791260713463187, -0.011796788565771772,
                       0.03772774548595732, 0.024416714813105735, -0.03747625460708836, 0.01907117552929928},
                      -0.07125069856932405, "layer post relu gx");
      same_as_pytorch(layer->linear1->weight.grad(),
                      {0.0, 0.03502838881532483, 0.0589772771271818, 0.03147776769653937, 0.022349998282273503,
                       -0.10351671483003945, 0.11636825458328834, -0.0012123548389520091},
                      0.02257432508527049, "layer post relu glinear1");
    }
  }
}

TEST_CASE("TransformerEncoder: two copies of a layer and a final norm, a causal mask: PyTorch's results", "[cpu]") {
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0));
  nn::TransformerEncoder encoder(layer, 2, nn::LayerNorm(nn::LayerNormOptions({8})));
  const auto named = encoder->named_parameters();
  CHECK(named.size() == 2 * 12 + 2);
  CHECK(named[0].first == "layers.0.self_attn.in_proj_weight");
  CHECK(named[12].first == "layers.1.self_attn.in_proj_weight");
  CHECK(named.back().first == "norm.bias");
  // The copies have parameters of their own, with the layer's values.
  CHECK_FALSE(named[0].second.is_alias_of(named[12].second));
  check_close(named[12].second, values(layer->self_attn->in_proj_weight), 0, 0);
  td::testing::set_sine_parameters(*encoder);
  Tensor x = sine_ramp({5, 3, 8}, 0.3).requires_grad_(true);
  const Tensor causal = td::triu(td::full({5, 5}, -INFINITY, td::kFloat64), 1);
  const Tensor y = encoder(x, causal);
  (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
  auto second = std::dynamic_pointer_cast<nn::TransformerEncoderLayerImpl>((*encoder->layers)[1]);
  REQUIRE(second != nullptr);
  same_as_pytorch(y,
                  {0.0, 0.5246678770853921, -0.24996838394073684, 0.62730115276263, -0.1206459310480028,
                   0.29442672086006233, 0.04768320196671186, 0.499371136038795},
                  24.327885899911337, "encoder out");
  same_as_pytorch(x.grad(),
                  {-0.004195891444086226, -0.012164506813243877, 0.002199554036995446, -0.0018573786069234865,
                   -0.0055997348830578615, 0.007693835438996743, -0.0018559341726621216, 0.0006435827390471993},
                  0.005601634759996499, "encoder gx");
  same_as_pytorch(
      second->linear2->weight.grad(),
      {0.0005085668311105125, -0.008646522029218492, 0.0, 0.0, -0.000537088849433403, -0.004203158793102916, 0.0, 0.0},
      5.139118297581291e-16, "encoder g last");
}

TEST_CASE("attention modules print as PyTorch's, clone, train and refuse bad input", "[cpu]") {
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  CHECK(layer->str() ==
        "TransformerEncoderLayer(\n"
        "  (self_attn): MultiheadAttention(\n"
        "    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        "  )\n"
        "  (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
        "  (dropout): Dropout(p=0.1, inplace=False)\n"
        "  (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
        "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "  (dropout1): Dropout(p=0.1, inplace=False)\n"
        "  (dropout2): Dropout(p=0.1, inplace=False)\n"
        ")");
  // PyTorch's initial values: zero projection biases, Xavier bounds for in_proj_weight.
  nn::MultiheadAttention mha(16, 4);
  CHECK(mha->in_proj_bias.abs().max().item<double>() == 0);
  CHECK(mha->out_proj->bias.abs().max().item<double>() == 0);
  CHECK(mha->in_proj_weight.abs().max().item<double>() <= std::sqrt(6.0 / (16 + 48)));
  auto copy = std::dynamic_pointer_cast<nn::TransformerEncoderLayerImpl>(layer->clone());
  REQUIRE(copy != nullptr);
  CHECK(copy->str() == layer->str());
  CHECK_FALSE(copy->self_attn->in_proj_weight.is_alias_of(layer->self_attn->in_proj_weight));
  // Dropout acts in training mode only.
  const Tensor x = td::randn({5, 2, 8});
  layer->eval();
  check_close(layer(x), values(layer(x)), 0, 0);
  layer->train();
  CHECK(values(layer(x)) != values(layer(x)));
  check_error([] { nn::MultiheadAttention(8, 3); }, {"MultiheadAttention", "embed_dim (8)", "num_heads (3)"});
  check_error(
      [&] {
        mha(td::ones({4, 2, 8}), td::ones({4, 2, 8}), td::ones({4, 2, 8}));
      },
      {"MultiheadAttention", "embed_dim 16", "[4, 2, 8]"});
  check_error(
      [&] {
        mha(td::ones({4, 2, 16}), td::ones({5, 2, 16}), td::ones({6, 2, 16}));
      },
      {"MultiheadAttention", "[5, 2, 16]", "[6, 2, 16]"});
  check_error(
      [&] {
        mha(td::ones({4, 2, 16}), td::ones({5, 2, 16}), td::ones({5, 2, 16}), td::zeros({2, 4}, td::kBool));
      },
      {"MultiheadAttention", "key_padding_mask", "[2, 5]", "[2, 4]"});
  check_error(
      [&] {
        mha(td::ones({4, 2, 16}), td::ones({5, 2, 16}), td::ones({5, 2, 16}), Tensor(), true, td::zeros({4, 4}));
      },
      {"MultiheadAttention", "attn_mask", "[4, 5]", "[8, 4, 5]", "[4, 4]"});
  check_error(
      [] {
        F::scaled_dot_product_attention(td::ones({2, 3}), td::ones({4, 5}), td::ones({4, 5}));
      },
      {"scaled_dot_product_attention", "[2, 3]", "[4, 5]", "embedding size"});
  check_error(
      [] {
        F::scaled_dot_product_attention(td::ones({2, 3}), td::ones({4, 3}), td::ones({4, 3}),
                                        td::ones({2, 4}, td::kBool), 0, true);
      },
      {"scaled_dot_product_attention", "is_causal"});
  check_error([] { nn::TransformerEncoder(nn::TransformerEncoderLayer(8, 2), 0); },
              {"TransformerEncoder", "num_layers", "0"});
}
