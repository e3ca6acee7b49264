// F::interpolate and the Upsample layers against PyTorch 2.15: values and gradients in float64
// and float32 for every mode, align_corners, scale factors with and without recomputing, up and
// down; bicubic, area and antialias against every value of tests/nn/interpolate_fixtures.json
// (written by tests/nn/make_interpolate_fixtures.py); 16-bit inputs; printing; errors with the
// input unchanged.
#include <cmath>
#include <string>

#include "tests/nn/json_fixture.h"
#include "tests/testing.h"

namespace td = tandem;
namespace nn = td::nn;
namespace F = td::nn::functional;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_error;
using td::testing::Snapshot;
using td::testing::values;
using td::testing::sine_ramp;  // the inputs the PyTorch reference values were computed on

namespace {

struct Case {
  const char* name;
  td::DType dtype;
  Shape input;
  F::InterpolateOptions options;
  Shape output;
  std::vector<double> first;  // the output's first values
  double sum;
  std::vector<double> grad_first;  // of sum(output * probe) with respect to the input
  double grad_sum;
};

}  // namespace

TEST_CASE("interpolate gives PyTorch's values and gradients in every mode", "[cpu]") {
  // PyTorch 2.15: y = F.interpolate(x, ...) for x = sin(0.7 i), and x's gradient of
  // sum(y * sin(0.37 i)).
  const std::vector<Case> cases = {
      {"nearest x2",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({2}),
       {1, 2, 6, 8},
       {0.0, 0.0, 0.644217687237691, 0.644217687237691, 0.9854497299884601, 0.9854497299884601, 0.8632093666488739,
        0.8632093666488739, 0.0, 0.0, 0.644217687237691, 0.644217687237691},
       9.778227568616531,
       {0.3549170363162918, 0.23948367422388184, -0.0012147088295392239, -0.2412777227811338, 0.34367877138813785,
        0.3176774668490111, 0.1255108707815732, -0.1323058031470824, 0.2876041574792745, 0.3544270419293106,
        0.2358622961773824, -0.006073262095784404},
       4.609000214701471},
      {"nearest x2",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({2}),
       {1, 2, 6, 8},
       {0.0, 0.0, 0.6442176699638367, 0.6442176699638367, 0.9854497313499451, 0.9854497313499451, 0.8632093667984009,
        0.8632093667984009, 0.0, 0.0, 0.6442176699638367, 0.6442176699638367},
       9.778227344155312,
       {0.3549169898033142, 0.23948359489440918, -0.001214742660522461, -0.2412777543067932, 0.3436788022518158,
        0.31767743825912476, 0.12551099061965942, -0.13230586051940918, 0.2876041531562805, 0.3544270396232605,
        0.2358623743057251, -0.006073355674743652},
       4.608999967575073},
      {"nearest 5x7",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({5, 7}),
       {1, 2, 5, 7},
       {0.0, 0.0, 0.644217687237691, 0.644217687237691, 0.9854497299884601, 0.9854497299884601, 0.8632093666488739, 0.0,
        0.0, 0.644217687237691, 0.644217687237691, 0.9854497299884601},
       4.2546627962099475,
       {1.066256041546471, 0.8528557928567962, 0.1933583347638057, -0.19867435353307594, 0.39396291192896804,
        0.9622164559162326, 1.027170286843736, 0.3631047611973356, -1.7696728397706543, -1.884107806948475,
        -1.0130359136061569, 0.013628963678619457},
       0.40151230739357985},
      {"nearest 5x7",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({5, 7}),
       {1, 2, 5, 7},
       {0.0, 0.0, 0.6442176699638367, 0.6442176699638367, 0.9854497313499451, 0.9854497313499451, 0.8632093667984009,
        0.0, 0.0, 0.6442176699638367, 0.6442176699638367, 0.9854497313499451},
       4.254662565886974,
       {1.066256046295166, 0.8528557419776917, 0.19335830211639404, -0.19867438077926636, 0.3939629793167114,
        0.9622164964675903, 1.0271703004837036, 0.36310476064682007, -1.7696728706359863, -1.8841078281402588,
        -1.0130358934402466, 0.013628963381052017},
       0.40151235833764076},
      {"nearest-exact 5x7",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({5, 7}).mode(td::kNearestExact),
       {1, 2, 5, 7},
       {0.0, 0.0, 0.644217687237691, 0.9854497299884601, 0.9854497299884601, 0.8632093666488739, 0.8632093666488739,
        0.0, 0.0, 0.644217687237691, 0.9854497299884601, 0.9854497299884601},
       12.62328533519903,
       {1.066256041546471, 0.4869932480852419, 0.5610766071333767, -0.2005300811310925, -1.5618875367044966,
        -0.35525355998804264, 0.37477515064715483, 1.5780127479564419, 0.18617760886281032, -0.20212541829546082,
        -0.8615982509631707, -1.064833922275631},
       0.4015123073935791},
      {"nearest-exact 5x7",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({5, 7}).mode(td::kNearestExact),
       {1, 2, 5, 7},
       {0.0, 0.0, 0.6442176699638367, 0.9854497313499451, 0.9854497313499451, 0.8632093667984009, 0.8632093667984009,
        0.0, 0.0, 0.6442176699638367, 0.9854497313499451, 0.9854497313499451},
       12.623285181820393,
       {1.066256046295166, 0.4869932532310486, 0.5610766410827637, -0.20053017139434814, -1.561887502670288,
        -0.35525354743003845, 0.37477514147758484, 1.5780127048492432, 0.18617767095565796, -0.2021254301071167,
        -0.8615982532501221, -1.0648338794708252},
       0.4015122540295124},
      {"nearest 0.5 2.5",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({0.5, 2.5}),
       {1, 2, 1, 10},
       {0.0, 0.0, 0.0, 0.644217687237691, 0.644217687237691, 0.9854497299884601, 0.9854497299884601, 0.9854497299884601,
        0.8632093666488739, 0.8632093666488739, 0.8545989080882814, 0.8545989080882814},
       6.314367839002939,
       {1.035903343593107, 1.8915795302176877, 2.281885016898663, -0.006698395648670252, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0},
       1.0507345217334276},
      {"nearest 0.5 2.5",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({0.5, 2.5}),
       {1, 2, 1, 10},
       {0.0, 0.0, 0.0, 0.6442176699638367, 0.6442176699638367, 0.9854497313499451, 0.9854497313499451,
        0.9854497313499451, 0.8632093667984009, 0.8632093667984009, 0.854598879814148, 0.854598879814148},
       6.3143676817417145,
       {1.0359033346176147, 1.891579508781433, 2.2818849086761475, -0.006698399782180786, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0},
       1.0507342517375946},
      {"bilinear 1.5",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({1.5}).mode(td::kBilinear),
       {1, 2, 4, 6},
       {0.0, 0.32210884361884545, 0.7010896943628192, 0.928577722863332, 0.9243295483186671, 0.8632093666488739,
        0.16749407507795253, 0.15710565242599406, 0.13175385460960243, 0.07190035395186949, -0.0013423221001464818,
        -0.05962162298772926},
       3.409175591141307,
       {0.7101015375223434, 1.0826490650351173, 1.1612885228947367, 0.9264231989290875, -0.5700630752342539,
        -0.7277666529283658, -0.6888884437586785, -0.4631167784385813, 0.3462188899610106, 0.8200403477622495,
        1.0692068252831233, 1.0316267990592585},
       1.8782898182913228},
      {"bilinear 1.5",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({1.5}).mode(td::kBilinear),
       {1, 2, 4, 6},
       {0.0, 0.32210883498191833, 0.7010896801948547, 0.928577721118927, 0.9243295192718506, 0.8632093667984009,
        0.16749407351016998, 0.15710565447807312, 0.1317538321018219, 0.07190033793449402, -0.0013423413038253784,
        -0.05962163209915161},
       3.4091761931777,
       {0.7101015448570251, 1.0826489925384521, 1.1612886190414429, 0.926423192024231, -0.5700629949569702,
        -0.7277665138244629, -0.6888884902000427, -0.463116854429245, 0.3462188243865967, 0.820040225982666,
        1.069206953048706, 1.03162682056427},
       1.8782899081707},
      {"bilinear 1.5 recompute",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({1.5}).mode(td::kBilinear).recompute_scale_factor(true),
       {1, 2, 4, 6},
       {0.0, 0.32210884361884545, 0.7010896943628192, 0.928577722863332, 0.9243295483186671, 0.8632093666488739,
        0.2093675938474407, 0.11585485462778121, -0.010580105328701834, -0.14226898827599618, -0.23276028970484994,
        -0.29032937039688017},
       5.560138370294572,
       {0.5777780821373778, 1.0349861545978238, 1.2101507202394404, 1.0596213055078456, -0.2513520002363582,
        -0.607331044868212, -0.7968742831582744, -0.7727481203433222, 0.15983127034808048, 0.747267650139389,
        1.1283304673380157, 1.2080600343852415},
       1.8782898182913224},
      {"bilinear 1.5 recompute",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({1.5}).mode(td::kBilinear).recompute_scale_factor(true),
       {1, 2, 4, 6},
       {0.0, 0.32210883498191833, 0.7010896801948547, 0.928577721118927, 0.9243295192718506, 0.8632093667984009,
        0.20936758816242218, 0.11585485190153122, -0.010580116882920265, -0.1422690451145172, -0.23276028037071228,
        -0.29032933712005615},
       5.560138234868646,
       {0.5777780413627625, 1.0349860191345215, 1.2101507186889648, 1.0596213340759277, -0.2513520121574402,
        -0.6073309779167175, -0.7968743443489075, -0.7727481722831726, 0.15983125567436218, 0.7472676038742065,
        1.1283305883407593, 1.2080600261688232},
       1.8782897889614105},
      {"bilinear corners 5x7",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({5, 7}).mode(td::kBilinear).align_corners(true),
       {1, 2, 5, 7},
       {0.0, 0.3221088436188455, 0.644217687237691, 0.8148337086130756, 0.9854497299884601, 0.9243295483186671,
        0.8632093666488739, 0.16749407507795255, 0.15710565242599406, 0.1467172297740356, 0.10182710428073588,
        0.0569369787874362},
       4.174135074382521,
       {0.48797895379967726, 1.121987670425633, 1.1507926299069524, 0.5388004281958263, -0.18201485440565304,
        -0.10180912370608089, 0.10545070158080254, 0.18366001873550392, -0.5491203586735445, -1.1561868179221013,
        -1.1153702240783823, -0.4771063889850314},
       0.40151230739357996},
      {"bilinear corners 5x7",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({5, 7}).mode(td::kBilinear).align_corners(true),
       {1, 2, 5, 7},
       {0.0, 0.32210883498191833, 0.6442176699638367, 0.8148337006568909, 0.9854497313499451, 0.9243295192718506,
        0.8632093667984009, 0.16749407351016998, 0.15710565447807312, 0.14671722054481506, 0.10182709991931915,
        0.05693697929382324},
       4.174134869128466,
       {0.4879789352416992, 1.1219875812530518, 1.1507924795150757, 0.5388004183769226, -0.18201486766338348,
        -0.10180909931659698, 0.10545066744089127, 0.18366000056266785, -0.549120306968689, -1.156186819076538,
        -1.115370273590088, -0.47710639238357544},
       0.4015118107199669},
      {"bilinear 2x3",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({2, 3}).mode(td::kBilinear),
       {1, 2, 2, 3},
       {0.13570044103345746, 0.45833040644690576, 0.421693785590135, -0.3372666809809112, 0.09988031218827609,
        0.45873518619900494, 0.3442605395991107, -0.09083204571545275, -0.45472508038027865, 0.4950968779524265,
        0.3577601873312521, -0.06001018038828465},
       1.8286237488756414,
       {0.0, 0.13560578698686074, 0.219891775940379, 0.4214299447675905, 0.18660389285000992, 0.20700781313282723,
        0.23783549767130227, 0.34074231554238427, 0.5598116785500298, 0.48541765241162094, 0.4936147170735277,
        0.6007970018595622},
       3.872166571976476},
      {"bilinear 2x3",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().size({2, 3}).mode(td::kBilinear),
       {1, 2, 2, 3},
       {0.13570044934749603, 0.4583303928375244, 0.4216937720775604, -0.3372666835784912, 0.09988032281398773,
        0.45873522758483887, 0.344260573387146, -0.09083204716444016, -0.4547251760959625, 0.49509692192077637,
        0.3577601909637451, -0.060010213404893875},
       1.8286237306892872,
       {0.0, 0.13560578227043152, 0.21989169716835022, 0.4214300215244293, 0.18660388886928558, 0.20700782537460327,
        0.23783543705940247, 0.3407423794269562, 0.5598116517066956, 0.4854176640510559, 0.4936146140098572,
        0.6007971167564392},
       3.8721665665507317},
      {"bilinear 1.7",
       td::kFloat64,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({1.7}).mode(td::kBilinear),
       {1, 2, 5, 6},
       {0.0, 0.24631852747323482, 0.6252701082012884, 0.8349061817160619, 0.9674732059679327, 0.8955671098858232,
        0.1280837044713755, 0.1799661142983616, 0.25978520633987867, 0.2702777409685435, 0.25807299570986136,
        0.18872270932801033},
       5.489687278788083,
       {0.8911971412151384, 1.3235093411523848, 1.1098846839174012, 0.4401340042081632, -0.7674534896506173,
        -0.6914153774321191, -0.24996007696247227, 0.018566166570180356, 1.0747871368335715, 0.5201771400629073,
        -0.3554397793937082, -0.42340949877121586},
       5.389206800622814},
      {"bilinear 1.7",
       td::kFloat32,
       {1, 2, 3, 4},
       F::InterpolateOptions().scale_factor({1.7}).mode(td::kBilinear),
       {1, 2, 5, 6},
       {0.0, 0.24631854891777039, 0.6252701282501221, 0.8349062204360962, 0.9674732089042664, 0.8955670595169067,
        0.1280837208032608, 0.17996612191200256, 0.2597852051258087, 0.2702776789665222, 0.25807294249534607,
        0.1887226104736328},
       5.4896863284520805,
       {0.891197144985199, 1.3235095739364624, 1.1098843812942505, 0.4401342272758484, -0.767453670501709,
        -0.6914156079292297, -0.24996022880077362, 0.01856611855328083, 1.0747872591018677, 0.5201773643493652,
        -0.3554394841194153, -0.4234096109867096},
       5.389206746593118},
      {"linear 7 corners",
       td::kFloat64,
       {2, 2, 4},
       F::InterpolateOptions().size({7}).mode(td::kLinear).align_corners(true),
       {2, 2, 7},
       {0.0, 0.3221088436188455, 0.644217687237691, 0.8148337086130756, 0.9854497299884601, 0.9243295483186671,
        0.8632093666488739, 0.3349881501559051, -0.007897538766857365, -0.35078322768961984, -0.6111795000516038,
        -0.8715757724135877},
       2.8887807712996203,
       {0.180807715982481, 1.30294497045065, 1.9243677888653137, 1.2772030737237368, 0.6143424756343926,
        -0.3619146000500334, -1.5471503179167225, -1.476805291055821, -1.2272676080663656, -0.6864661685887886,
        0.7110201566821772, 1.2383604218840343},
       4.660250231520269},
      {"linear 7 corners",
       td::kFloat32,
       {2, 2, 4},
       F::InterpolateOptions().size({7}).mode(td::kLinear).align_corners(true),
       {2, 2, 7},
       {0.0, 0.32210883498191833, 0.6442176699638367, 0.8148337006568909, 0.9854497313499451, 0.9243295192718506,
        0.8632093667984009, 0.33498814702033997, -0.007897540926933289, -0.35078322887420654, -0.6111794710159302,
        -0.8715757727622986},
       2.8887805305421352,
       {0.1808077096939087, 1.3029448986053467, 1.9243676662445068, 1.27720308303833, 0.614342451095581,
        -0.36191457509994507, -1.5471503734588623, -1.476805329322815, -1.2272676229476929, -0.6864661574363708,
        0.7110201716423035, 1.2383604049682617},
       4.660250008106232},
      {"linear 0.6",
       td::kFloat64,
       {2, 2, 5},
       F::InterpolateOptions().scale_factor({0.6}).mode(td::kLinear),
       {2, 2, 3},
       {0.21473922907923038, 0.9854497299884601, 0.5110618889868945, -0.5243807425976091, -0.9824526126243326,
        -0.19921294563454053, 0.7673804771048595, 0.8545989080882814, -0.13795329871816736, -0.9128564163648858,
        -0.6181371122370347, 0.45758752387144647},
       0.41582462894260247,
       {0.0, 0.0, 0.361615431964962, 0.22476263720938147, 0.44952527441876355, 0.5971324571200317, 0.2985662285600159,
        0.99588084453764, 0.32042506765843304, 0.6408501353168669, 0.5310436481573911, 0.2655218240786956},
       3.8721665719764746},
      {"linear 0.6",
       td::kFloat32,
       {2, 2, 5},
       F::InterpolateOptions().scale_factor({0.6}).mode(td::kLinear),
       {2, 2, 3},
       {0.21473920345306396, 0.9854497313499451, 0.51106196641922, -0.5243807435035706, -0.9824526309967041,
        -0.19921305775642395, 0.7673804759979248, 0.854598879814148, -0.13795319199562073, -0.91285640001297,
        -0.6181371212005615, 0.45758745074272156},
       0.4158245623111725,
       {0.0, 0.0, 0.3616154193878174, 0.22476275265216827, 0.4495251774787903, 0.5971324443817139, 0.29856619238853455,
        0.9958808422088623, 0.32042521238327026, 0.6408500075340271, 0.5310436487197876, 0.2655217945575714},
       3.872166469693184},
      {"trilinear 2",
       td::kFloat64,
       {1, 1, 2, 3, 2},
       F::InterpolateOptions().scale_factor({2}).mode(td::kTrilinear),
       {1, 1, 4, 6, 4},
       {0.0, 0.16105442180942275, 0.48316326542826826, 0.644217687237691, 0.24636243249711504, 0.359513226145458,
        0.5858148134421438, 0.6989656070904867, 0.7390872974913452, 0.7564308348175284, 0.7911179094698948,
        0.8084614467960782},
       13.230043332089656,
       {1.0797284835246532, 1.0161042229870165, -0.7074049705138318, -0.7667813602539912, 0.8822093421428236,
        1.1105098345963562, 0.9203458222763546, 0.3551926639420503, -0.7259873459380147, -0.3987456322506639,
        1.0931289118877872, 0.7507002423009301},
       4.609000214701471},
      {"trilinear 2",
       td::kFloat32,
       {1, 1, 2, 3, 2},
       F::InterpolateOptions().scale_factor({2}).mode(td::kTrilinear),
       {1, 1, 4, 6, 4},
       {0.0, 0.16105441749095917, 0.4831632375717163, 0.6442176699638367, 0.24636243283748627, 0.35951322317123413,
        0.5858148336410522, 0.6989656090736389, 0.7390872836112976, 0.7564308047294617, 0.7911179065704346,
        0.8084614872932434},
       13.230043176561594,
       {1.079728603363037, 1.0161038637161255, -0.7074049711227417, -0.7667812705039978, 0.8822097778320312,
        1.1105098724365234, 0.9203457832336426, 0.35519224405288696, -0.7259870767593384, -0.39874565601348877,
        1.0931288003921509, 0.7507002949714661},
       4.609000265598297},
      {"nearest 3d",
       td::kFloat64,
       {1, 1, 2, 3, 2},
       F::InterpolateOptions().size({3, 4, 5}),
       {1, 1, 3, 4, 5},
       {0.0, 0.0, 0.0, 0.644217687237691, 0.644217687237691, 0.0, 0.0, 0.0, 0.644217687237691, 0.644217687237691,
        0.9854497299884601, 0.9854497299884601},
       8.053932400887986,
       {5.616648694449108, 1.4258636706278685, -4.841902384126198, -2.2231337316048396, 0.9425753398721645,
        3.0017191830530807, -1.3014702486442462, -2.287482898811752, 0.05856114569980447, 1.5938448318566318,
        2.737007185997745, 0.6669760122534507},
       5.3892068006228175},
      {"nearest 3d",
       td::kFloat32,
       {1, 1, 2, 3, 2},
       F::InterpolateOptions().size({3, 4, 5}),
       {1, 1, 3, 4, 5},
       {0.0, 0.0, 0.0, 0.6442176699638367, 0.6442176699638367, 0.0, 0.0, 0.0, 0.6442176699638367, 0.6442176699638367,
        0.9854497313499451, 0.9854497313499451},
       8.05393212288618,
       {5.6166486740112305, 1.42586350440979, -4.841902732849121, -2.2231338024139404, 0.9425752758979797,
        3.0017192363739014, -1.3014702796936035, -2.287482976913452, 0.05856114625930786, 1.5938448905944824,
        2.7370071411132812, 0.6669760346412659},
       5.389206111431122},
  };
  for (const Case& c : cases) {
    INFO(c.name << " " << td::dtype_name(c.dtype));
    Tensor x = sine_ramp(c.input, 0.7, c.dtype).requires_grad_(true);
    const Tensor y = F::interpolate(x, c.options);
    REQUIRE(y.sizes() == c.output);
    CHECK(y.dtype() == c.dtype);
    (y * sine_ramp(c.output, 0.37, c.dtype)).sum().backward();
    // float64 within rounding; float32 within two ulps of PyTorch's float32.
    const double tol = c.dtype == td::kFloat64 ? 1e-14 : 2.4e-7;
    const int64_t n = static_cast<int64_t>(c.first.size());
    check_close(y.flatten().narrow(0, 0, n).to(td::kFloat64), c.first, tol, tol);
    check_close(x.grad().flatten().narrow(0, 0, n).to(td::kFloat64), c.grad_first, tol, 4 * tol);
    CHECK(std::abs(y.to(td::kFloat64).sum().item<double>() - c.sum) <= 4 * tol * (1 + std::abs(c.sum)));
    CHECK(std::abs(x.grad().to(td::kFloat64).sum().item<double>() - c.grad_sum) <=
          4 * tol * (1 + std::abs(c.grad_sum)));
  }
}

TEST_CASE("bicubic, area and antialias give every value and gradient of PyTorch's", "[cpu]") {
  using nlohmann::json;
  const json data = td::testing::load_json_fixture("tests/nn/interpolate_fixtures.json");
  const std::vector<std::pair<std::string, td::InterpolateMode>> modes = {
      {"bilinear", td::kBilinear}, {"bicubic", td::kBicubic}, {"area", td::kArea}};
  int checked = 0;
  for (const json& c : data["cases"]) {
    const td::DType dtype = td::parse_dtype(c["dtype"]);
    const std::string name = c["name"].get<std::string>() + " " + td::dtype_name(dtype);
    INFO(name);
    const json& given = c["options"];
    F::InterpolateOptions options;
    for (const auto& [mode_name, mode] : modes) {
      if (given["mode"] == mode_name) options.mode(mode);
    }
    REQUIRE(F::interpolate_mode_name(options.mode_) == given["mode"].get<std::string>());
    if (given.contains("size")) options.size(given["size"].get<std::vector<int64_t>>());
    if (given.contains("scale_factor")) options.scale_factor(given["scale_factor"].get<std::vector<double>>());
    if (given.contains("align_corners")) options.align_corners(given["align_corners"].get<bool>());
    if (given.contains("recompute_scale_factor")) options.recompute_scale_factor(true);
    options.antialias(given["antialias"].get<bool>());
    // "bicubic antialias keeps a size" has a scale_factor of 1.1 on a dim of 6, which stays 6: the
    // gradient is the one of a copy there, where PyTorch's backward resamples (its gradcheck fails).
    Tensor x = sine_ramp(c["input_shape"].get<Shape>(), 0.7, dtype).requires_grad_(true);
    const Tensor y = F::interpolate(x, options);
    REQUIRE(y.sizes() == c["output_shape"].get<Shape>());
    REQUIRE(y.dtype() == dtype);
    (y * sine_ramp(y.sizes(), 0.37, dtype)).sum().backward();
    const std::vector<double> want = td::testing::fixture_numbers(c["output"]);
    const std::vector<double> want_grad = td::testing::fixture_numbers(c["grad"]);
    if (td::is_16bit_float(dtype)) {
      // The same weights, rounded where PyTorch rounds them, in the same order: the same bits. The
      // gradients differ by up to an ulp or two: PyTorch's backward weighs with the float32 weights,
      // tandem's with the rounded ones its forward used.
      check_close(y, values(td::tensor(want).to(dtype)), 0, 0, name);
      const double ulp = dtype == td::kBFloat16 ? 0x1p-8 : 0x1p-11;
      check_close(x.grad(), want_grad, 2 * ulp, 2 * ulp, name + " gradient");
    } else {
      // float64 within rounding; float32 within a few ulps (the fixture keeps nine digits).
      const double tol = dtype == td::kFloat64 ? 1e-14 : 4e-7;
      check_close(y, want, tol, tol, name);
      check_close(x.grad(), want_grad, 4 * tol, 4 * tol, name + " gradient");
    }
    ++checked;
  }
  CHECK(checked == 38);
}

TEST_CASE("bicubic rounds its source point down in float, float64 inputs too, as PyTorch's", "[cpu]") {
  // PyTorch 2.15: the source point 2.999999999 is 3 in float, so the output is x[3] = 9 exactly
  // (rounded down in double it would weigh x[2..5] and give 8.999999991).
  const Tensor x = td::arange(8).to(td::kFloat64).pow(2).view({1, 1, 1, 8});
  const Tensor y =
      F::interpolate(x, F::InterpolateOptions().scale_factor({1, 0.5 / (3.5 - 1e-9)}).mode(td::kBicubic));
  REQUIRE(y.sizes() == Shape{1, 1, 1, 1});
  CHECK(y.item<double>() == 9.0);
}

TEST_CASE("antialias reads only the inputs under each output's filter, as PyTorch's", "[cpu]") {
  // PyTorch 2.15: [[[[0.5849, -0.3155, inf]]]]. An infinity outside an output's filter leaves that
  // output finite (a zero weight on it would make NaN).
  std::vector<double> ramp = values(sine_ramp({12}, 0.7));
  ramp[11] = INFINITY;
  const Tensor x = td::tensor(ramp).view({1, 1, 1, 12});
  const std::vector<double> got =
      values(F::interpolate(x, F::InterpolateOptions().size({1, 3}).mode(td::kBilinear).antialias(true)));
  CHECK(std::isfinite(got[0]));
  CHECK(std::isfinite(got[1]));
  CHECK(got[2] == INFINITY);
}

TEST_CASE("interpolate copies a dim whose size does not change, as PyTorch, whatever the scale", "[cpu]") {
  // PyTorch 2.15: F.interpolate(x, scale_factor=1.2, mode='linear') of 4 values gives them back.
  const Tensor x = sine_ramp({1, 2, 4}, 0.7);
  // A copy, not the input: writing to it leaves the input alone, and it has a gradient function.
  Tensor leaf = sine_ramp({1, 2, 3, 4}, 0.7).requires_grad_(true);
  for (td::InterpolateMode mode : {td::kBilinear, td::kBicubic}) {
    const Tensor same = F::interpolate(leaf, F::InterpolateOptions().size({3, 4}).mode(mode).antialias(true));
    CHECK(!same.is_same(leaf));
    CHECK(same.requires_grad());
    CHECK(!same.is_leaf());
    check_close(same, values(leaf), 0, 0);
  }
  const Tensor plain = sine_ramp({1, 2, 4}, 0.7);
  Tensor copy = F::interpolate(plain, F::InterpolateOptions().size({4}).mode(td::kLinear));
  copy.fill_(0);
  check_close(plain, values(x), 0, 0);
  check_close(F::interpolate(x, F::InterpolateOptions().scale_factor({1.2}).mode(td::kLinear)), values(x), 0, 0);
  check_close(F::interpolate(x.view({1, 2, 1, 4}), F::InterpolateOptions().scale_factor({1.1, 1.2}).mode(td::kBilinear)),
              values(x), 0, 0);
}

TEST_CASE("interpolate's nearest modes read where PyTorch's 3-D, 4-D and 5-D kernels read", "[cpu]") {
  // PyTorch 2.15: F.interpolate(arange(in), ...) along one dim, whose values are the indices read.
  // Where the rules part: 4-D inputs take shortcuts at the same and at twice the size; 3-D and
  // 5-D inputs do not, and round nearest-exact's centre in one fused step; float64 inputs index
  // in double and round to float before the floor.
  struct NearestCase {
    const char* name;
    td::DType dtype;
    Shape input;
    int64_t spatial_dim;  // the one whose size changes
    F::InterpolateOptions options;
    std::vector<double> read;
  };
  const std::vector<NearestCase> cases = {
      {"1-D nearest, same size by a factor",
       td::kFloat32,
       {1, 1, 4},
       0,
       F::InterpolateOptions().scale_factor({1.1}).mode(td::kNearest),
       {0, 0, 1, 2}},
      {"2-D nearest, same size by a factor",
       td::kFloat32,
       {1, 1, 1, 4},
       1,
       F::InterpolateOptions().scale_factor({1.0, 1.1}).mode(td::kNearest),
       {0, 1, 2, 3}},
      {"1-D nearest, twice the size by a factor",
       td::kFloat32,
       {1, 1, 3},
       0,
       F::InterpolateOptions().scale_factor({2.2}).mode(td::kNearest),
       {0, 0, 0, 1, 1, 2}},
      {"2-D nearest, twice the size by a factor",
       td::kFloat32,
       {1, 1, 3, 1},
       0,
       F::InterpolateOptions().scale_factor({2.2, 1.0}).mode(td::kNearest),
       {0, 0, 1, 1, 2, 2}},
      {"3-D nearest, twice the size by a factor",
       td::kFloat64,
       {1, 1, 1, 3, 1},
       1,
       F::InterpolateOptions().scale_factor({1.0, 2.2, 1.0}).mode(td::kNearest),
       {0, 0, 0, 1, 1, 2}},
      {"1-D nearest-exact, fused rounding",
       td::kFloat32,
       {1, 1, 2},
       0,
       F::InterpolateOptions().size({41}).mode(td::kNearestExact),
       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {"3-D nearest-exact, fused rounding",
       td::kBFloat16,
       {1, 1, 1, 1, 4},
       2,
       F::InterpolateOptions().size({1, 1, 50}).mode(td::kNearestExact),
       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}},
      {"2-D nearest-exact",
       td::kFloat32,
       {1, 1, 1, 2},
       1,
       F::InterpolateOptions().size({1, 41}).mode(td::kNearestExact),
       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {"1-D float64 nearest, rounded to float",
       td::kFloat64,
       {1, 1, 2},
       0,
       F::InterpolateOptions().size({98}).mode(td::kNearest),
       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {"1-D float64 nearest-exact, rounded to float",
       td::kFloat64,
       {1, 1, 2},
       0,
       F::InterpolateOptions().size({61}).mode(td::kNearestExact),
       {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {"1-D float64 nearest-exact by a factor, in double",
       td::kFloat64,
       {1, 1, 16},
       0,
       F::InterpolateOptions().scale_factor({2.3}).mode(td::kNearestExact),
       {0, 0, 1, 1, 1, 2,  2,  3,  3,  4,  4,  5,  5,  5,  6,  6,  7,  7,
        8, 8, 8, 9, 9, 10, 10, 11, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15}},
      {"1-D float64 nearest by a factor, in double",
       td::kFloat64,
       {1, 1, 189},
       0,
       F::InterpolateOptions().scale_factor({0.24}).mode(td::kNearest),
       {0,  4,   8,   12,  16,  20,  25,  29,  33,  37,  41,  45,  50,  54,  58,  62,  66,  70,  75,  79,  83,  87, 91,
        95, 100, 104, 108, 112, 116, 120, 125, 129, 133, 137, 141, 145, 150, 154, 158, 162, 166, 170, 175, 179, 183}},
      {"2-D float64 nearest, in double",
       td::kFloat64,
       {1, 1, 1, 75},
       1,
       F::InterpolateOptions().size({1, 145}).mode(td::kNearest),
       {0,  0,  1,  1,  2,  2,  3,  3,  4,  4,  5,  5,  6,  6,  7,  7,  8,  8,  9,  9,  10, 10, 11, 11, 12,
        12, 13, 13, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25,
        25, 26, 26, 27, 27, 28, 28, 29, 30, 30, 31, 31, 32, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37, 38,
        38, 39, 39, 40, 40, 41, 41, 42, 42, 43, 43, 44, 45, 45, 46, 46, 47, 47, 48, 48, 49, 49, 50, 50, 51,
        51, 52, 52, 53, 53, 54, 54, 55, 55, 56, 56, 57, 57, 58, 58, 59, 60, 60, 61, 61, 62, 62, 63, 63, 64,
        64, 65, 65, 66, 66, 67, 67, 68, 68, 69, 69, 70, 70, 71, 71, 72, 72, 73, 73, 74}},
  };
  for (const NearestCase& c : cases) {
    INFO(c.name);
    const int64_t dim = 2 + c.spatial_dim;
    const Tensor x = td::arange(c.input[dim], td::kFloat64).view(c.input).to(c.dtype);
    check_close(F::interpolate(x, c.options).flatten(), c.read, 0, 0);
  }
}

TEST_CASE("interpolate of 16-bit inputs runs in float32 and rounds once", "[cpu]") {
  const Tensor x = sine_ramp({2, 3, 5, 4}, 0.3, td::kFloat32);
  const auto options = F::InterpolateOptions().scale_factor({1.7, 0.8}).mode(td::kBilinear);
  for (td::DType dtype : {td::kFloat16, td::kBFloat16}) {
    INFO(td::dtype_name(dtype));
    const Tensor y = F::interpolate(x.to(dtype), options);
    CHECK(y.dtype() == dtype);
    check_close(y, values(F::interpolate(x.to(dtype).to(td::kFloat32), options).to(dtype)), 0, 0);
  }
  CHECK(F::interpolate(x.to(td::kFloat16), F::InterpolateOptions().size({7, 9})).dtype() == td::kFloat16);
}

TEST_CASE("linear and trilinear of 16-bit inputs round their weights to the dtype, as PyTorch's", "[cpu]") {
  // PyTorch 2.15: y = F.interpolate(x, size, mode) for x = sin(0.7 i) in the dtype; the sums of y
  // and of y * sin(0.37 i) in float64, which any changed value moves (weights kept in float32
  // give 0.013671875 and 0.739544768362095 for the first).
  struct Case {
    td::DType dtype;
    Shape input, size;
    td::InterpolateMode mode;
    double sum, weighted_sum;
  };
  const std::vector<Case> cases = {
      {td::kBFloat16, {1, 2, 5}, {13}, td::kLinear, 0.01318359375, 0.7377899614158581},
      {td::kBFloat16, {1, 1, 2, 3, 4}, {3, 5, 9}, td::kTrilinear, 11.386680603027344, 0.7998296950531357},
      {td::kFloat16, {1, 2, 5}, {13}, td::kLinear, 0.02093505859375, 0.7447066456329554},
      {td::kFloat16, {1, 1, 2, 3, 4}, {3, 5, 9}, td::kTrilinear, 11.38010025024414, 0.815527528389637},
  };
  for (const Case& c : cases) {
    INFO(td::dtype_name(c.dtype) << " " << F::interpolate_mode_name(c.mode));
    const Tensor y =
        F::interpolate(sine_ramp(c.input, 0.7, c.dtype), F::InterpolateOptions().size(c.size).mode(c.mode));
    REQUIRE(y.dtype() == c.dtype);
    const Tensor wide = y.to(td::kFloat64);
    CHECK(std::abs(wide.sum().item<double>() - c.sum) < 1e-12);
    CHECK(std::abs((wide * sine_ramp(y.sizes(), 0.37)).sum().item<double>() - c.weighted_sum) < 1e-12);
  }
}

TEST_CASE("Upsample, UpsamplingNearest2d and UpsamplingBilinear2d interpolate and print as PyTorch's", "[cpu]") {
  CHECK(nn::Upsample(nn::UpsampleOptions().scale_factor({2}))->str() == "Upsample(scale_factor=2.0, mode='nearest')");
  CHECK(nn::Upsample(nn::UpsampleOptions().size({4, 5}).mode(td::kBilinear).align_corners(true))->str() ==
        "Upsample(size=(4, 5), mode='bilinear')");
  CHECK(nn::Upsample(nn::UpsampleOptions().scale_factor({2, 3}).mode(td::kBilinear))->str() ==
        "Upsample(scale_factor=(2.0, 3.0), mode='bilinear')");
  CHECK(nn::Upsample(nn::UpsampleOptions().size({5}))->str() == "Upsample(size=5, mode='nearest')");
  CHECK(nn::Upsample(nn::UpsampleOptions().scale_factor({2}).mode(td::kBicubic))->str() ==
        "Upsample(scale_factor=2.0, mode='bicubic')");
  CHECK(nn::Upsample(nn::UpsampleOptions().size({2, 3}).mode(td::kArea))->str() ==
        "Upsample(size=(2, 3), mode='area')");
  CHECK(nn::UpsamplingNearest2d(nn::UpsampleOptions().scale_factor({2}))->str() ==
        "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')");
  CHECK(nn::UpsamplingBilinear2d(nn::UpsampleOptions().size({4}))->str() ==
        "UpsamplingBilinear2d(size=4, mode='bilinear')");
  const Tensor x = sine_ramp({1, 2, 3, 4}, 0.7, td::kFloat32);
  nn::Upsample up(nn::UpsampleOptions().scale_factor({1.5}).mode(td::kBilinear));
  check_close(up(x), values(F::interpolate(x, F::InterpolateOptions().scale_factor({1.5}).mode(td::kBilinear))), 0, 0);
  nn::UpsamplingBilinear2d corners(nn::UpsampleOptions().size({5, 7}));
  check_close(corners(x),
              values(F::interpolate(x, F::InterpolateOptions().size({5, 7}).mode(td::kBilinear).align_corners(true))),
              0, 0);
  nn::UpsamplingNearest2d nearest(nn::UpsampleOptions().scale_factor({2}));
  check_close(nearest(x), values(F::interpolate(x, F::InterpolateOptions().scale_factor({2}))), 0, 0);
  nn::Upsample cubic(nn::UpsampleOptions().size({5, 7}).mode(td::kBicubic).align_corners(true));
  check_close(cubic(x),
              values(F::interpolate(x, F::InterpolateOptions().size({5, 7}).mode(td::kBicubic).align_corners(true))),
              0, 0);
  nn::Upsample recomputed(nn::UpsampleOptions().scale_factor({1.7}).recompute_scale_factor(true));
  check_close(recomputed(x),
              values(F::interpolate(x, F::InterpolateOptions().scale_factor({1.7}).recompute_scale_factor(true))), 0,
              0);
  nn::Sequential decoder(nn::Upsample(nn::UpsampleOptions().scale_factor({2})), nn::Conv2d(2, 1, 3));
  CHECK(decoder(x).sizes() == Shape{1, 1, 4, 6});
  CHECK(decoder->clone()->str() == decoder->str());
  check_error([] { nn::Upsample(nn::UpsampleOptions()); }, {"Upsample", "exactly one", "size", "scale_factor"});
  check_error([] { nn::UpsamplingNearest2d(nn::UpsampleOptions().scale_factor({2}).mode(td::kBilinear)); },
              {"UpsamplingNearest2d", "'nearest'", "mode 'bilinear'", "Upsample"});
  check_error([] { nn::UpsamplingBilinear2d(nn::UpsampleOptions().size({4}).align_corners(false)); },
              {"UpsamplingBilinear2d", "'bilinear' and align_corners", "set align_corners"});
}

TEST_CASE("interpolate's errors name interpolate and the shapes; the input is unchanged", "[cpu]") {
  const Tensor x = td::ones({1, 2, 3, 4});
  const Snapshot before(x);
  check_error(
      [&] {
        F::interpolate(x, F::InterpolateOptions().size({5, 7}).scale_factor({2}));
      },
      {"interpolate", "exactly one"});
  check_error([&] { F::interpolate(x, F::InterpolateOptions()); }, {"interpolate", "exactly one"});
  check_error(
      [&] {
        F::interpolate(x, F::InterpolateOptions().size({5, 7}).recompute_scale_factor(true));
      },
      {"interpolate", "recompute_scale_factor", "not a size", "[5, 7]"});
  check_error(
      [&] {
        F::interpolate(x, F::InterpolateOptions().size({5, 7}).mode(td::kLinear));
      },
      {"interpolate", "'linear'", "3-D", "[1, 2, 3, 4]"});
  check_error(
      [&] {
        F::interpolate(x, F::InterpolateOptions().size({5, 7}).align_corners(true));
      },
      {"interpolate", "align_corners", "'nearest'"});
  check_error([&] { F::interpolate(x, F::InterpolateOptions().size({5, 7}).mode(td::kArea).align_corners(false)); },
              {"interpolate", "align_corners", "bicubic", "'area'"});
  check_error([&] { F::interpolate(x, F::InterpolateOptions().size({2, 2}).antialias(true)); },
              {"interpolate", "antialias", "'bilinear' and 'bicubic'", "'nearest'"});
  check_error([&] { F::interpolate(x, F::InterpolateOptions().size({2, 2}).mode(td::kArea).antialias(true)); },
              {"interpolate", "antialias", "'area'"});
  check_error([&] { F::interpolate(x.view({1, 2, 12}), F::InterpolateOptions().size({5}).mode(td::kBicubic)); },
              {"interpolate", "'bicubic'", "4-D", "[1, 2, 12]"});
  check_error(
      [&] {
        F::interpolate(x, F::InterpolateOptions().size({5, 7, 2}));
      },
      {"interpolate", "size", "one value or 2", "3"});
  check_error([&] { F::interpolate(x, F::InterpolateOptions().scale_factor({0.3})); },
              {"interpolate", "positive", "[3, 4]", "[0, 1]"});
  check_error([&] { F::interpolate(x, F::InterpolateOptions().scale_factor({-1})); },
              {"interpolate", "scale_factor", "positive", "-1"});
  check_error(
      [&] {
        F::interpolate(td::ones({1, 2, 3}, td::kInt64), F::InterpolateOptions().size({5}));
      },
      {"interpolate", "floating", "int64"});
  check_error(
      [&] {
        F::interpolate(td::ones({3, 4}), F::InterpolateOptions().size({5}));
      },
      {"interpolate", "3-D, 4-D or 5-D", "[3, 4]"});
  before.check_unchanged(x);
}
