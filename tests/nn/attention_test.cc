// Attention and the Transformer against PyTorch 2.15 (float64, the same parameter values set by
// name; PyTorch in training mode with dropout 0, its step-by-step path): outputs, attention
// weights and gradients with masks of every kind, batch first or not, other key and value sizes
// and appended keys, post- and pre-norm encoder and decoder layers, an encoder of two layers with
// a final norm, and a whole Transformer; names, printing and errors.
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

TEST_CASE("MultiheadAttention with kdim, vdim, add_bias_kv and add_zero_attn as PyTorch", "[cpu]") {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(6).add_bias_kv(true).add_zero_attn(true));
  std::vector<std::string> names;
  for (const auto& [name, p] : mha->named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                                          "bias_v", "out_proj.weight", "out_proj.bias"});
  CHECK_FALSE(mha->in_proj_weight.defined());
  td::testing::set_sine_parameters(*mha);
  Tensor query = sine_ramp({4, 3, 8}, 0.3).requires_grad_(true), key = sine_ramp({6, 3, 5}, 0.5).requires_grad_(true);
  const Tensor value = sine_ramp({6, 3, 6}, 0.7);
  Tensor padding = td::zeros({3, 6}, td::kBool);
  padding[0][5].fill_(true);
  padding[2].narrow(0, 0, 2).fill_(true);
  Tensor blocked = td::zeros({4, 6}, td::kBool);  // true: may not attend
  blocked[1].narrow(0, 0, 3).fill_(true);
  blocked[3][4].fill_(true);
  auto [out, weights] = mha(query, key, value, padding, true, blocked);
  CHECK(weights.sizes() == Shape{3, 4, 8});  // the bias key and the zero key appended
  (out * sine_ramp(out.sizes(), 0.11)).sum().backward();
  same_as_pytorch(out,
                  {0.3266534707142502, 0.5069677166459602, 0.466477431528917, 0.15067980241023585, -0.31104847784371664,
                   -0.6866306924645816, -0.7925848625999306, -0.6130680470767915},
                  19.36529835995318, "kv out");
  same_as_pytorch(weights,
                  {0.47083418233871555, 0.4092924389584608, 0.01966799785173879, 0.0026026720532985404,
                   0.013543222066941592, 0.0, 0.0396856556810658, 0.04437383104977895},
                  12.000000000000002, "kv weights");
  same_as_pytorch(query.grad(),
                  {-0.029147735058256085, -0.0343230561920726, -0.03872755547993386, -0.04226231736337158,
                   -0.044847958710978214, -0.0464264115923985, -0.04696222735885825, -0.04644337274339305},
                  0.21794244923799078, "kv gq");
  same_as_pytorch(key.grad(),
                  {-0.012186976758885696, -0.02007741480376307, -0.02671953643952076, -0.031700366713440675,
                   -0.034710221723349886, -0.019860978510104127, -0.025287998174388492, -0.029142732592618112},
                  0.08354040119430861, "kv gk");
  same_as_pytorch(mha->k_proj_weight.grad(),
                  {-0.010002894436163404, -0.08276767635782667, -0.13526804448346613, -0.1546500776815755,
                   -0.13616837825321826, 0.06661949214903773, -0.04083598824849294, -0.13829339451791292},
                  0.4322969217964422, "kv gkw");
  same_as_pytorch(mha->bias_k.grad(),
                  {-0.08338077638117043, -0.17765987047262227, -0.056977781479759265, 0.11546656076253523,
                   -0.10328851408815848, -0.015043399261820016, 0.09432200257395275, 0.0844632435476256},
                  -0.14209853479941686, "kv gbias_k");
  same_as_pytorch(mha->bias_v.grad(),
                  {0.6601144625398581, 0.4422419367826297, -0.01294745755375748, -0.4611889579272313,
                   -0.4411321226813938, -0.4482356465011702, -0.2148059436733405, 0.13389341059372997},
                  -0.3420603184206755, "kv gbias_v");
}

TEST_CASE("TransformerDecoderLayer (post-norm relu, pre-norm gelu; causal, memory padding) as PyTorch", "[cpu]") {
  struct Expected {
    std::vector<double> out;
    double out_sum;
    std::vector<double> tgt;
    double tgt_sum;
    std::vector<double> memory;
    double memory_sum;
    std::vector<double> cross;  // multihead_attn.in_proj_weight's gradient
    double cross_sum;
  };
  const Expected post{{0.0, 1.1001276544844658, -0.3069152328771412, -0.3015301054270364, 0.2604565480931934,
                       0.14782348634979495, -0.1616189919775044, 0.3836992163494509},
                      14.193372045813597,
                      {-0.01050085189031882, -0.03214420259546202, -0.0072263020241730225, -0.0338973470859875,
                       0.02361761388359824, 0.046684881090231146, -0.020164403975260897, 0.0035137301461800087},
                      -0.03472854623157695,
                      {-0.01293933441458447, -0.009712024015025073, -0.0036201428486948746, 0.003539502911283722,
                       0.009655168904235574, 0.012923033599690673, 0.012379237182035065, 0.008184172924460754},
                      0.11768860717161278,
                      {0.0, 0.028776063727432348, 0.0020373309502994385, -0.02584367080333911, -0.008770719286068176,
                       0.014881826175243485, 0.012444641345056068, -0.010767367493086315},
                      0.001742778503011841};
  const Expected pre{{-0.9772968948617549, 1.7474815441740834, 1.3748525611638454, 1.6072264702051873,
                      1.3937047782153675, 0.8556680938561918, 2.058122305608865, 0.4056146941635302},
                     27.361529978066624,
                     {-0.10590350164713086, 0.3611909937926705, 0.10934714727806415, -0.4560836831564343,
                      0.5385839587812434, 0.40778822964178063, 0.9843661901393079, 1.0706404020808602},
                     13.366923634121598,
                     {-0.5535433382527708, -0.7477113319567044, -0.7213411535769623, -0.48221071243339475,
                      -0.1008517607215551, 0.31025351421738745, 0.6298492185724857, 0.7636702938487312},
                     -1.5509408219160212,
                     {0.0, 2.1077852651482893, -0.20047110050261535, -1.6271493683873304, 0.313699486851806,
                      0.7200613471247284, -0.39474007530781746, 0.17865382214733677},
                     -11.68482175490172};
  for (const bool first : {false, true}) {
    const std::string name = first ? "decoder layer pre gelu" : "decoder layer post relu";
    auto options = nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16).dropout(0).batch_first(true);
    if (first) options.norm_first(true).activation(nn::TransformerActivation::gelu);
    nn::TransformerDecoderLayer layer(options);
    td::testing::set_sine_parameters(*layer);
    Tensor tgt = sine_ramp({3, 4, 8}, 0.3).requires_grad_(true),
           memory = sine_ramp({3, 5, 8}, 0.5).requires_grad_(true);
    const Tensor causal = nn::Transformer::generate_square_subsequent_mask(4, td::kFloat64);
    Tensor memory_padding = td::zeros({3, 5}, td::kBool);
    memory_padding[1].narrow(0, 3, 2).fill_(true);
    const Tensor y = layer(tgt, memory, causal, Tensor(), Tensor(), memory_padding, true);
    (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
    const Expected& e = first ? pre : post;
    same_as_pytorch(y, e.out, e.out_sum, name + " out");
    same_as_pytorch(tgt.grad(), e.tgt, e.tgt_sum, name + " gtgt");
    same_as_pytorch(memory.grad(), e.memory, e.memory_sum, name + " gmemory");
    same_as_pytorch(layer->multihead_attn->in_proj_weight.grad(), e.cross, e.cross_sum, name + " gcross");
  }
}

TEST_CASE("Transformer: two encoder layers, one decoder layer, masks and padding: PyTorch's results", "[cpu]") {
  nn::Transformer model(
      nn::TransformerOptions(8, 2).num_encoder_layers(2).num_decoder_layers(1).dim_feedforward(16).dropout(0));
  const auto named = model->named_parameters();
  CHECK(named.size() == 46);
  CHECK(named.front().first == "encoder.layers.0.self_attn.in_proj_weight");
  CHECK(named[12].first == "encoder.layers.1.self_attn.in_proj_weight");
  CHECK(named[25].first == "encoder.norm.bias");
  CHECK(named[26].first == "decoder.layers.0.self_attn.in_proj_weight");
  CHECK(named.back().first == "decoder.norm.bias");
  td::testing::set_sine_parameters(*model);
  Tensor src = sine_ramp({5, 3, 8}, 0.3).requires_grad_(true), tgt = sine_ramp({4, 3, 8}, 0.5).requires_grad_(true);
  Tensor padding = td::zeros({3, 5}, td::kBool);
  padding[2][4].fill_(true);
  const Tensor y = model(src, tgt, Tensor(), nn::Transformer::generate_square_subsequent_mask(4, td::kFloat64),
                         Tensor(), padding, Tensor(), padding);
  CHECK(y.sizes() == Shape{4, 3, 8});
  (y * sine_ramp(y.sizes(), 0.11)).sum().backward();
  same_as_pytorch(y,
                  {0.0, -0.5092092047114648, 0.27280205990015055, 0.5836432517358139, -0.12939456598390214,
                   -0.26333959469998636, 0.20998075556871848, 0.018957322252007858},
                  2.453512765570843, "transformer out");
  same_as_pytorch(src.grad(),
                  {-8.402406412431535e-07, -1.9503061621492895e-06, 1.3198472624591473e-06, -7.479324467185892e-07,
                   -3.8052163667223206e-07, -1.4155014044001823e-06, 5.071860302661515e-07, 2.0624868628303668e-07},
                  -5.138868655490758e-05, "transformer gsrc");
  same_as_pytorch(tgt.grad(),
                  {0.02579302831739908, -0.028699804003484028, -0.004256723471771098, 0.08624913612792187,
                   -0.12113753546473435, 0.0795385522552178, -0.055736093173242435, 0.06201449465982585},
                  0.021175715255443386, "transformer gtgt");
  auto first = std::dynamic_pointer_cast<nn::TransformerEncoderLayerImpl>((*model->encoder->layers)[0]);
  REQUIRE(first != nullptr);
  same_as_pytorch(first->self_attn->in_proj_weight.grad(),
                  {-3.7042192215389115e-05, -2.922911179137012e-05, -1.880508186266572e-05, -6.701249977427158e-06,
                   6.001184610289091e-06, 1.8167551249803567e-05, 2.8711064643704584e-05, 3.6689904141746505e-05},
                  0.0004401383125697397, "transformer genc");
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

TEST_CASE("Transformer prints, starts and masks as PyTorch's, clones, learns, refuses bad input", "[cpu]") {
  nn::Transformer model(nn::TransformerOptions(8, 2).num_encoder_layers(1).num_decoder_layers(1).dim_feedforward(16));
  CHECK(model->str() ==
        "Transformer(\n"
        "  (encoder): TransformerEncoder(\n"
        "    (layers): ModuleList(\n"
        "      (0): TransformerEncoderLayer(\n"
        "        (self_attn): MultiheadAttention(\n"
        "          (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        "        )\n"
        "        (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
        "        (dropout): Dropout(p=0.1, inplace=False)\n"
        "        (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
        "        (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "        (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "        (dropout1): Dropout(p=0.1, inplace=False)\n"
        "        (dropout2): Dropout(p=0.1, inplace=False)\n"
        "      )\n"
        "    )\n"
        "    (norm): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "  )\n"
        "  (decoder): TransformerDecoder(\n"
        "    (layers): ModuleList(\n"
        "      (0): TransformerDecoderLayer(\n"
        "        (self_attn): MultiheadAttention(\n"
        "          (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        "        )\n"
        "        (multihead_attn): MultiheadAttention(\n"
        "          (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
        "        )\n"
        "        (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
        "        (dropout): Dropout(p=0.1, inplace=False)\n"
        "        (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
        "        (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "        (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "        (norm3): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "        (dropout1): Dropout(p=0.1, inplace=False)\n"
        "        (dropout2): Dropout(p=0.1, inplace=False)\n"
        "        (dropout3): Dropout(p=0.1, inplace=False)\n"
        "      )\n"
        "    )\n"
        "    (norm): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "  )\n"
        ")");
  // Every parameter of two or more dims Xavier-uniform (its bound), the biases as their layers'.
  for (const auto& [name, p] : model->named_parameters()) {
    INFO(name);
    if (p.dim() < 2) continue;
    CHECK(p.abs().max().item<double>() <= std::sqrt(6.0 / static_cast<double>(p.size(0) + p.size(1))));
  }
  check_close(nn::Transformer::generate_square_subsequent_mask(3), {0, -INFINITY, -INFINITY, 0, 0, -INFINITY, 0, 0, 0},
              0, 0);
  CHECK(nn::Transformer::generate_square_subsequent_mask(2).dtype() == td::kFloat32);
  auto copy = std::dynamic_pointer_cast<nn::TransformerImpl>(model->clone());
  REQUIRE(copy != nullptr);
  CHECK(copy->str() == model->str());
  CHECK_FALSE(copy->decoder->norm->weight.is_alias_of(model->decoder->norm->weight));
  // A custom encoder is used as a copy.
  nn::TransformerEncoder encoder(
      nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(4)), 3);
  nn::Transformer custom(
      nn::TransformerOptions(8, 2).num_decoder_layers(1).dim_feedforward(16).custom_encoder(encoder));
  CHECK(custom->encoder->layers->size() == 3);
  CHECK(custom->encoder.get() != encoder.get());
  // It learns to copy its source: Adam over a few steps (teacher forcing, no dropout).
  td::manual_seed(3);
  nn::Transformer small(
      nn::TransformerOptions(8, 2).num_encoder_layers(1).num_decoder_layers(1).dim_feedforward(16).dropout(0));
  td::optim::Adam adam(small->parameters(), td::optim::AdamOptions(0.01));
  const Tensor src = td::randn({6, 4, 8});
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < 60; ++step) {
    adam.zero_grad();
    Tensor loss = td::nn::functional::mse_loss(small(src, src), src);
    loss.backward();
    adam.step();
    (step == 0 ? first_loss : last_loss) = loss.item<double>();
  }
  CHECK(last_loss < 0.25 * first_loss);
  const Tensor x = td::ones({5, 3, 8});
  check_error([&] { model(x, td::ones({4, 2, 8})); }, {"Transformer", "batch size", "[5, 3, 8]", "[4, 2, 8]"});
  check_error([&] { model(x, td::ones({4, 3, 6})); }, {"Transformer", "d_model 8", "[4, 3, 6]"});
  check_error([&] { model(x, td::ones({4, 8})); }, {"Transformer", "3-D", "[4, 8]"});
  check_error([] { nn::TransformerDecoder(nn::TransformerDecoderLayer(8, 2), 0); },
              {"TransformerDecoder", "num_layers", "0"});
  check_error([] { nn::Transformer(nn::TransformerOptions(8, 2).num_encoder_layers(0)); },
              {"Transformer", "num_encoder_layers (0)"});
  check_error([] { nn::Transformer::generate_square_subsequent_mask(3, td::kInt64); },
              {"generate_square_subsequent_mask", "floating", "int64"});
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(8, 2).kdim(5));
  const Snapshot before(mha->q_proj_weight);
  check_error(
      [&] {
        mha(td::ones({4, 2, 8}), td::ones({6, 2, 8}), td::ones({6, 2, 8}));
      },
      {"MultiheadAttention", "kdim 5", "[6, 2, 8]"});
  check_error(
      [&] {
        mha(td::ones({4, 2, 8}), td::ones({6, 2, 5}), td::ones({6, 2, 8}), Tensor(), false, Tensor(), true, true);
      },
      {"MultiheadAttention", "is_causal", "attn_mask"});
  before.check_unchanged(mha->q_proj_weight);
  check_error([] { nn::MultiheadAttention(nn::MultiheadAttentionOptions(8, 2).vdim(0)); },
              {"MultiheadAttention", "vdim (0)"});
}
