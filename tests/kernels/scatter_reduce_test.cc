// scatter_reduce and index_reduce: values and gradients against PyTorch 2.15 for every reduction with
// and without self (ties, zeros, NaN, integers and bool), the in-place forms, and errors.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/testing.h"

namespace td = tandem;
using td::Shape;
using td::Tensor;
using td::testing::check_close;
using td::testing::check_equal;
using td::testing::check_error;
using td::testing::values;

namespace {

Tensor f64(const std::vector<double>& v, const Shape& shape) { return td::tensor(v, td::kFloat64).view(shape); }
Tensor i64(const std::vector<int64_t>& v, const Shape& shape) { return td::tensor(v).view(shape); }

const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TEST_CASE("scatter_reduce as PyTorch's: each reduction with and without self, values and gradients", "[cpu]") {
  const Tensor x = f64({1, 2, 0, 4, 5, 2, 2, -1, 0, 3, 3, 3}, {3, 4});
  const Tensor index = i64({0, 1, 0, 2, 0, 0, 2, 2}, {2, 4});
  const Tensor src = f64({2, 2, 0, 3, 1, -2, 3, 3}, {2, 4});
  const Tensor weights = td::sin(td::arange(12.0).to(td::kFloat64) * 0.7).view({3, 4});
  struct Case {
    std::string reduce;
    bool include_self;
    std::vector<double> y, grad_x, grad_src;
  };
  // Without self, amax's and amin's src gradients are shared among the src elements equal to the
  // result only: x's own element there does not take part. PyTorch's also count it where it equals
  // the result (here at [1][1], [0][2], [2][2] and [2][3]), halving or thirding those gradients.
  const std::vector<Case> cases{
      {"sum",
       true,
       {4.0, 0.0, 0.0, 4.0, 5.0, 4.0, 2.0, -1.0, 0.0, 3.0, 6.0, 9.0},
       {0.0, 0.644217687237691, 0.9854497299884601, 0.8632093666488739, 0.3349881501559051, -0.35078322768961984,
        -0.8715757724135877, -0.9824526126243326, -0.6312666378723216, 0.016813900484349713, 0.6569865987187891,
        0.9881682338770003},
       {0.0, -0.35078322768961984, 0.9854497299884601, 0.9881682338770003, 0.0, 0.644217687237691, 0.6569865987187891,
        0.9881682338770003}},
      {"sum",
       false,
       {3.0, -2.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 6.0},
       {0.0, 0.0, 0.0, 0.8632093666488739, 0.3349881501559051, 0.0, -0.8715757724135877, -0.9824526126243326,
        -0.6312666378723216, 0.016813900484349713, 0.0, 0.0},
       {0.0, -0.35078322768961984, 0.9854497299884601, 0.9881682338770003, 0.0, 0.644217687237691, 0.6569865987187891,
        0.9881682338770003}},
      {"prod",
       true,
       {2.0, -4.0, 0.0, 4.0, 5.0, 4.0, 2.0, -1.0, 0.0, 3.0, 9.0, 27.0},
       {0.0, -1.288435374475382, 0.0, 0.8632093666488739, 0.3349881501559051, -0.7015664553792397, -0.8715757724135877,
        -0.9824526126243326, -0.6312666378723216, 0.016813900484349713, 1.9709597961563672, 8.893514104893002},
       {0.0, -0.7015664553792397, 0.0, 8.893514104893002, 0.0, 1.288435374475382, 1.9709597961563672,
        8.893514104893002}},
      {"prod",
       false,
       {2.0, -2.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 9.0},
       {0.0, 0.0, 0.0, 0.8632093666488739, 0.3349881501559051, 0.0, -0.8715757724135877, -0.9824526126243326,
        -0.6312666378723216, 0.016813900484349713, 0.0, 0.0},
       {0.0, -0.35078322768961984, 0.9854497299884601, 2.9645047016310007, 0.0, 0.644217687237691, 0.6569865987187891,
        2.9645047016310007}},
      {"mean",
       true,
       {1.3333333333333333, 0.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 3.0},
       {0.0, 0.3221088436188455, 0.49272486499423007, 0.8632093666488739, 0.3349881501559051, -0.17539161384480992,
        -0.8715757724135877, -0.9824526126243326, -0.6312666378723216, 0.016813900484349713, 0.32849329935939453,
        0.3293894112923334},
       {0.0, -0.17539161384480992, 0.49272486499423007, 0.3293894112923334, 0.0, 0.3221088436188455,
        0.32849329935939453, 0.3293894112923334}},
      {"mean",
       false,
       {1.5, -2.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 3.0},
       {0.0, 0.0, 0.0, 0.8632093666488739, 0.3349881501559051, 0.0, -0.8715757724135877, -0.9824526126243326,
        -0.6312666378723216, 0.016813900484349713, 0.0, 0.0},
       {0.0, -0.35078322768961984, 0.9854497299884601, 0.49408411693850013, 0.0, 0.644217687237691, 0.6569865987187891,
        0.49408411693850013}},
      {"amax",
       true,
       {2.0, 2.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 3.0},
       {0.0, 0.644217687237691, 0.49272486499423007, 0.8632093666488739, 0.3349881501559051, -0.17539161384480992,
        -0.8715757724135877, -0.9824526126243326, -0.6312666378723216, 0.016813900484349713, 0.32849329935939453,
        0.3293894112923334},
       {0.0, -0.17539161384480992, 0.49272486499423007, 0.3293894112923334, 0.0, 0.0, 0.32849329935939453,
        0.3293894112923334}},
      {"amax",
       false,
       {2.0, -2.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 3.0},
       {0.0, 0.0, 0.0, 0.8632093666488739, 0.3349881501559051, 0.0, -0.8715757724135877, -0.9824526126243326,
        -0.6312666378723216, 0.016813900484349713, 0.0, 0.0},
       {0.0, -0.35078322768961984, 0.9854497299884601, 0.49408411693850013, 0.0, 0.644217687237691, 0.6569865987187891,
        0.49408411693850013}},
      {"amin",
       true,
       {1.0, -2.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 3.0},
       {0.0, 0.0, 0.49272486499423007, 0.8632093666488739, 0.3349881501559051, -0.17539161384480992,
        -0.8715757724135877, -0.9824526126243326, -0.6312666378723216, 0.016813900484349713, 0.32849329935939453,
        0.3293894112923334},
       {0.0, -0.17539161384480992, 0.49272486499423007, 0.3293894112923334, 0.0, 0.644217687237691, 0.32849329935939453,
        0.3293894112923334}},
      {"amin",
       false,
       {1.0, -2.0, 0.0, 4.0, 5.0, 2.0, 2.0, -1.0, 0.0, 3.0, 3.0, 3.0},
       {0.0, 0.0, 0.0, 0.8632093666488739, 0.3349881501559051, 0.0, -0.8715757724135877, -0.9824526126243326,
        -0.6312666378723216, 0.016813900484349713, 0.0, 0.0},
       {0.0, -0.35078322768961984, 0.9854497299884601, 0.49408411693850013, 0.0, 0.644217687237691, 0.6569865987187891,
        0.49408411693850013}},
  };
  for (const Case& c : cases) {
    const std::string what = c.reduce + (c.include_self ? " with self" : " without self");
    Tensor xs = x.clone().requires_grad_(true), ss = src.clone().requires_grad_(true);
    const Tensor y = td::scatter_reduce(xs, 0, index, ss, c.reduce, c.include_self);
    check_close(y, c.y, 1e-15, 0, what + ": values");
    (y * weights).sum().backward();
    check_close(xs.grad(), c.grad_x, 1e-14, 1e-15, what + ": x's gradient");
    check_close(ss.grad(), c.grad_src, 1e-14, 1e-15, what + ": src's gradient");
    check_close(x.scatter_reduce(0, index, src, c.reduce, c.include_self), c.y, 1e-15, 0, what + ": method");
    Tensor in_place = x.clone();
    in_place.scatter_reduce_(0, index, src, c.reduce, c.include_self);
    check_close(in_place, c.y, 1e-15, 0, what + ": in place");
  }
  // src larger than index: only its leading corner is read.
  const Tensor wide = f64({2, 2, 0, 3, 9, 1, -2, 3, 3, 9}, {2, 5});
  check_close(td::scatter_reduce(x, 0, index, wide, "prod"),
              {2.0, -4.0, 0.0, 4.0, 5.0, 4.0, 2.0, -1.0, 0.0, 3.0, 9.0, 27.0}, 0, 0, "src wider than index");
  check_close(
      td::scatter_reduce(x, 1, i64({3, 3, 0, 1, 2, 2}, {3, 2}), f64({7, -7, 1, 1, 0.5, 4}, {3, 2}), "amax", false),
      {1.0, 2.0, 0.0, 7.0, 1.0, 1.0, 2.0, -1.0, 0.0, 3.0, 4.0, 3.0}, 0, 0, "along dim 1 without self");
}

TEST_CASE("scatter_reduce on integers, bool and NaN as PyTorch's", "[cpu]") {
  const Tensor xi = td::tensor({1, 2, 3});
  check_equal(td::scatter_reduce(xi, 0, td::tensor({0, 0, 1}), td::tensor({-4, -4, 5}), "mean"), {-3.0, 3.0, 3.0},
             "integer mean, floored");
  check_equal(td::scatter_reduce(xi, 0, td::tensor({0, 0}), td::tensor({-4, -9}), "amax", false), {-4.0, 2.0, 3.0},
             "integer amax without self starts from the lowest");
  const Tensor bools = td::tensor({true, true, false});
  check_equal(td::scatter_reduce(bools, 0, td::tensor({0, 0, 2}), td::tensor({true, false, true}), "prod"), {0, 1, 0},
             "bool prod is and");
  check_equal(
      td::scatter_reduce(td::tensor({true, false, false}), 0, td::tensor({1, 1}), td::tensor({false, true}), "sum"),
      {1, 1, 0}, "bool sum is or");
  check_equal(td::scatter_reduce(f64({1, 2, 3}, {3}), 0, td::tensor({0, 0, 2}), f64({kNaN, 5, -1}, {3}), "amax"),
             {kNaN, 2.0, 3.0}, "NaN wins amax");
  check_equal(td::scatter_reduce(f64({1, kNaN, 3}, {3}), 0, td::tensor({1, 2}), f64({0, -1}, {2}), "amin"),
             {1.0, kNaN, -1.0}, "NaN wins amin");
  const Tensor half = td::scatter_reduce(f64({1, 2, 3}, {3}).to(td::kFloat16), 0, td::tensor({0, 0}),
                                         f64({2, 4}, {2}).to(td::kFloat16), "prod");
  check_equal(half, {8, 2, 3}, "float16 prod");
}

TEST_CASE("index_reduce as PyTorch's: each reduction, values and gradients", "[cpu]") {
  const Tensor m = td::full({3, 2}, 2.0, td::TensorOptions(td::kFloat64));
  const Tensor index = td::tensor({0, 2, 0});
  const Tensor source = f64({2, 3, 4, 5, -1, 0.5}, {3, 2});
  const Tensor weights = td::sin(td::arange(6.0).to(td::kFloat64) * 0.9).view({3, 2});
  struct Case {
    std::string reduce;
    std::vector<double> y, grad_x, grad_source;
  };
  const std::vector<Case> cases{
      {"prod",
       {-2.0, 1.5, 2.0, 2.0, 4.0, 5.0},
       {0.0, 0.0, 0.9738476308781951, 0.4273798802338298, 0.0, 0.0},
       {-0.0, 0.3916634548137417, -0.44252044329485246, -0.977530117665097, 0.0, 2.3499807288824504}},
      {"mean",
       {0.5, 1.75, 2.0, 2.0, 4.0, 5.0},
       {0.0, 0.0, 0.9738476308781951, 0.4273798802338298, 0.0, 0.0},
       {0.0, 0.3916634548137417, -0.44252044329485246, -0.977530117665097, 0.0, 0.3916634548137417}},
      {"amax",
       {2.0, 3.0, 2.0, 2.0, 4.0, 5.0},
       {0.0, 0.0, 0.9738476308781951, 0.4273798802338298, 0.0, 0.0},
       {0.0, 0.7833269096274834, -0.44252044329485246, -0.977530117665097, 0.0, 0.0}},
      {"amin",
       {-1.0, 0.5, 2.0, 2.0, 4.0, 5.0},
       {0.0, 0.0, 0.9738476308781951, 0.4273798802338298, 0.0, 0.0},
       {0.0, 0.0, -0.44252044329485246, -0.977530117665097, 0.0, 0.7833269096274834}},
  };
  for (const Case& c : cases) {
    Tensor ms = m.clone().requires_grad_(true), ss = source.clone().requires_grad_(true);
    const Tensor y = td::index_reduce(ms, 0, index, ss, c.reduce, false);
    check_close(y, c.y, 1e-15, 0, c.reduce + ": values");
    (y * weights).sum().backward();
    check_close(ms.grad(), c.grad_x, 1e-14, 1e-15, c.reduce + ": x's gradient");
    check_close(ss.grad(), c.grad_source, 1e-14, 1e-15, c.reduce + ": source's gradient");
  }
  Tensor in_place = m.clone();
  in_place.index_reduce_(1, td::tensor({1}), f64({3, 4, 5}, {3, 1}), "prod");
  check_close(in_place, {2.0, 6.0, 2.0, 8.0, 2.0, 10.0}, 0, 0, "index_reduce_ with self along dim 1");
}

TEST_CASE("scatter_reduce and index_reduce errors name the op and leave the input unchanged", "[cpu]") {
  Tensor x = f64({1, 2, 3}, {3});
  const std::vector<double> before = values(x);
  check_error([&] { td::scatter_reduce(x, 0, td::tensor({0}), f64({1}, {1}), "max"); },
              {"scatter_reduce", "sum, prod, mean, amax or amin", "max"});
  check_error([&] { x.scatter_reduce_(0, td::tensor({0}), f64({1}, {1}), "average"); }, {"scatter_reduce", "average"});
  check_error([&] { td::scatter_reduce(x, 0, td::tensor({3}), f64({1}, {1}), "sum"); }, {"scatter_reduce", "3"});
  check_error([&] { td::scatter_reduce(x, 0, td::tensor({0}), td::tensor({1}), "sum"); },
              {"scatter_reduce", "float64", "int64"});
  check_error([&] { td::scatter_reduce(td::tensor({true}), 0, td::tensor({0}), td::tensor({true}), "mean"); },
              {"scatter_reduce", "mean", "bool"});
  check_error([&] { td::index_reduce(x, 0, td::tensor({0}), f64({1}, {1}), "sum"); },
              {"index_reduce", "prod, mean, amax or amin", "sum"});
  check_error(
      [&] {
        td::index_reduce(x, 0, td::tensor({0, 1}), f64({1}, {1}), "prod");
      },
      {"index_reduce", "slice shapes"});
  check_error([&] { x.index_reduce_(0, td::tensor({5}), f64({1}, {1}), "amax"); }, {"5"});
  CHECK(values(x) == before);
}

TEST_CASE("scatter_reduce's gradient goes to the NaN that wins amax; index_reduce checks under its own name", "[cpu]") {
  // The NaN that wins takes the gradient of its place (PyTorch's gives NaN there, and none to anything).
  Tensor x = f64({1, 2, 3}, {3}).requires_grad_(true), src = f64({kNaN, 5, 1}, {3}).requires_grad_(true);
  td::scatter_reduce(x, 0, td::tensor({0, 0, 2}), src, "amax").sum().backward();
  check_equal(x.grad(), {0, 1, 1}, "x's gradient");
  check_equal(src.grad(), {1, 0, 0}, "src's gradient: the NaN's");

  const Tensor self = td::ones({3, 4}, td::kFloat64);
  check_error(
      [&] {
        td::index_reduce(self, 0, td::tensor({0, 5}), td::ones({2, 4}, td::kFloat64), "prod");
      },
      {"index_reduce", "index 5", "position 1", "dim 0"});
  check_error(
      [&] {
        td::index_reduce(self, 0, td::tensor({0}), td::ones({1, 4}), "prod");
      },
      {"index_reduce", "float64", "float32"});
  check_error(
      [&] { td::index_reduce(td::ones({2}, td::kFloat64), 0, td::tensor({0}), td::ones({}, td::kFloat64), "prod"); },
      {"index_reduce", "slice shapes"});
  check_error(
      [&] {
        td::index_reduce(td::ones({}, td::kFloat64), 0, td::tensor({0, 0}), td::ones({2}, td::kFloat64), "prod");
      },
      {"index_reduce", "slice shapes"});
  check_error(
      [&] { td::index_reduce(td::ones({}, td::kFloat64), 5, td::tensor({0}), td::ones({}, td::kFloat64), "prod"); },
      {"index_reduce", "5"});
  check_equal(td::index_reduce(td::full({}, 2.0, td::TensorOptions(td::kFloat64)), 0, td::tensor({0}),
                              td::full({}, 3.0, td::TensorOptions(td::kFloat64)), "prod"),
             {6}, "0-dim self and source");
}
