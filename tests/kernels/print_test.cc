// Printed forms compared with what PyTorch 2.15 prints for the same tensors (repr(t), with
// "torch." dropped from dtype names): the format, the padding, the line wrapping at 80 columns
// and the summary of tensors over 1000 elements.
#include <cmath>
#include <functional>

#include "tests/testing.h"

namespace td = tandem;

namespace {

struct PrintCase {
  std::function<td::Tensor()> make;
  const char* expected;
};

const PrintCase kCases[] = {
  {[] { return td::tensor({{1., 2.}, {3., 4.}}); },
      "tensor([[1., 2.],\n"
      "        [3., 4.]])"},
  {[] { return td::tensor({1.5, 2.25, -3.125}); },
      "tensor([ 1.5000,  2.2500, -3.1250])"},
  {[] { return td::tensor({1e-5, 1.0}); },
      "tensor([1.0000e-05, 1.0000e+00])"},
  {[] { return td::tensor({1, 2, 3}); },
      "tensor([1, 2, 3])"},
  {[] { return td::tensor({-1000, 5}); },
      "tensor([-1000,     5])"},
  {[] { return td::tensor({true, false}); },
      "tensor([ True, False])"},
  {[] { return td::tensor(3.5); },
      "tensor(3.5000)"},
  {[] { return td::tensor(3.0); },
      "tensor(3.)"},
  {[] { return td::tensor(7); },
      "tensor(7)"},
  {[] { return td::zeros({0}); },
      "tensor([])"},
  {[] { return td::zeros({2, 0}); },
      "tensor([], size=(2, 0))"},
  {[] { return td::zeros({0}, td::kInt64); },
      "tensor([], dtype=int64)"},
  {[] { return td::tensor({1.5, 2.0}, td::kFloat64); },
      "tensor([1.5000, 2.0000], dtype=float64)"},
  {[] { return td::tensor({0.1, 2.0}, td::kFloat16); },
      "tensor([0.1000, 2.0000], dtype=float16)"},
  {[] { return td::tensor({0.1, 2.0}, td::kBFloat16); },
      "tensor([0.1001, 2.0000], dtype=bfloat16)"},
  {[] { return td::tensor({1, 2}, td::kUInt8); },
      "tensor([1, 2], dtype=uint8)"},
  {[] { return td::tensor({1, 2}, td::kInt32); },
      "tensor([1, 2], dtype=int32)"},
  {[] { return td::arange(2000.0); },
      "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
      "        1.9990e+03])"},
  {[] { return td::arange(3000.0).view({30, 100}); },
      "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n"
      "         9.9000e+01],\n"
      "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,\n"
      "         1.9900e+02],\n"
      "        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,\n"
      "         2.9900e+02],\n"
      "        ...,\n"
      "        [2.7000e+03, 2.7010e+03, 2.7020e+03,  ..., 2.7970e+03, 2.7980e+03,\n"
      "         2.7990e+03],\n"
      "        [2.8000e+03, 2.8010e+03, 2.8020e+03,  ..., 2.8970e+03, 2.8980e+03,\n"
      "         2.8990e+03],\n"
      "        [2.9000e+03, 2.9010e+03, 2.9020e+03,  ..., 2.9970e+03, 2.9980e+03,\n"
      "         2.9990e+03]])"},
  {[] { return td::arange(24).view({2, 3, 4}); },
      "tensor([[[ 0,  1,  2,  3],\n"
      "         [ 4,  5,  6,  7],\n"
      "         [ 8,  9, 10, 11]],\n"
      "\n"
      "        [[12, 13, 14, 15],\n"
      "         [16, 17, 18, 19],\n"
      "         [20, 21, 22, 23]]])"},
  {[] { return td::arange(2.0 * 3 * 4 * 2).view({2, 3, 4, 2}) / 8; },
      "tensor([[[[0.0000, 0.1250],\n"
      "          [0.2500, 0.3750],\n"
      "          [0.5000, 0.6250],\n"
      "          [0.7500, 0.8750]],\n"
      "\n"
      "         [[1.0000, 1.1250],\n"
      "          [1.2500, 1.3750],\n"
      "          [1.5000, 1.6250],\n"
      "          [1.7500, 1.8750]],\n"
      "\n"
      "         [[2.0000, 2.1250],\n"
      "          [2.2500, 2.3750],\n"
      "          [2.5000, 2.6250],\n"
      "          [2.7500, 2.8750]]],\n"
      "\n"
      "\n"
      "        [[[3.0000, 3.1250],\n"
      "          [3.2500, 3.3750],\n"
      "          [3.5000, 3.6250],\n"
      "          [3.7500, 3.8750]],\n"
      "\n"
      "         [[4.0000, 4.1250],\n"
      "          [4.2500, 4.3750],\n"
      "          [4.5000, 4.6250],\n"
      "          [4.7500, 4.8750]],\n"
      "\n"
      "         [[5.0000, 5.1250],\n"
      "          [5.2500, 5.3750],\n"
      "          [5.5000, 5.6250],\n"
      "          [5.7500, 5.8750]]]])"},
  {[] { return td::tensor({std::nan(""), INFINITY, 1.5}); },
      "tensor([   nan,    inf, 1.5000])"},
  {[] { return td::tensor({std::nan(""), -INFINITY}); },
      "tensor([nan, -inf])"},
  {[] { return td::tensor({1e10, 1.0}); },
      "tensor([1.0000e+10, 1.0000e+00])"},
  {[] { return td::tensor({0.0, 100.0, -5.0}); },
      "tensor([  0., 100.,  -5.])"},
  {[] { return td::arange(40) * 1.25; },
      "tensor([ 0.0000,  1.2500,  2.5000,  3.7500,  5.0000,  6.2500,  7.5000,  8.7500,\n"
      "        10.0000, 11.2500, 12.5000, 13.7500, 15.0000, 16.2500, 17.5000, 18.7500,\n"
      "        20.0000, 21.2500, 22.5000, 23.7500, 25.0000, 26.2500, 27.5000, 28.7500,\n"
      "        30.0000, 31.2500, 32.5000, 33.7500, 35.0000, 36.2500, 37.5000, 38.7500,\n"
      "        40.0000, 41.2500, 42.5000, 43.7500, 45.0000, 46.2500, 47.5000, 48.7500])"},
  {[] { return td::arange(5000).view({50, 100}); },
      "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n"
      "        [ 100,  101,  102,  ...,  197,  198,  199],\n"
      "        [ 200,  201,  202,  ...,  297,  298,  299],\n"
      "        ...,\n"
      "        [4700, 4701, 4702,  ..., 4797, 4798, 4799],\n"
      "        [4800, 4801, 4802,  ..., 4897, 4898, 4899],\n"
      "        [4900, 4901, 4902,  ..., 4997, 4998, 4999]])"},
  {[] { return td::arange(1.0, 4.0).view({3, 1}) / 3; },
      "tensor([[0.3333],\n"
      "        [0.6667],\n"
      "        [1.0000]])"},
  {[] { return td::tensor({0.0, 0.0}); },
      "tensor([0., 0.])"},
  {[] { return td::tensor({123456789.0, 0.5}); },
      "tensor([1.2346e+08, 5.0000e-01])"},
  {[] { return td::tensor({-0.5, 0.25}, td::kFloat64).view({1, 2, 1}); },
      "tensor([[[-0.5000],\n"
      "         [ 0.2500]]], dtype=float64)"},
  {[] { return td::zeros({3, 0, 2}, td::kBool); },
      "tensor([], size=(3, 0, 2), dtype=bool)"},
};

}  // namespace

TEST_CASE("tensors print exactly as PyTorch prints them", "[cpu]") {
  for (const PrintCase& c : kCases) {
    td::Tensor t = c.make();
    CHECK(t.str() == c.expected);
    std::ostringstream out;
    out << t;
    CHECK(out.str() == t.str());
  }
}

TEST_CASE("a tensor on another device says so, as PyTorch does for cuda tensors", "[cpu]") {
  td::Tensor t = td::tensor({1, 2}).to(td::Device("cpu:1"));
  CHECK(t.str() == "tensor([1, 2], device='cpu:1')");
}

TEST_CASE("a non-contiguous view prints its logical order", "[cpu]") {
  td::Tensor t = td::arange(6).view({2, 3}).t();
  CHECK(t.str() == "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
}

TEST_CASE("an undefined tensor prints as undefined instead of failing", "[cpu]") {
  CHECK(td::Tensor().str() == "tensor(undefined)");
}
