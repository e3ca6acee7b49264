#include "tools/demo.h"

#include <fmt/core.h>

#include <iostream>

#include "tandem.h"

namespace tandem::demo {

namespace {

void show(const char* code, const Tensor& t) { std::cout << ">>> " << code << "\n" << t << "\n\n"; }

}  // namespace

int run() {
  namespace td = tandem;
  std::cout << "tandem demo: the tensor library in a few lines (the training job comes with `tandem train`)\n\n";
  td::manual_seed(0);
  td::Tensor x = td::arange(12.0).view({3, 4});
  show("td::arange(12.0).view({3, 4})", x);
  show("x.t()            // a view: no data moves", x.t());
  show("x.sum(1)", x.sum(1));
  show("x.softmax(1)", x.softmax(1));
  show("x.matmul(x.t())  // OpenBLAS", x.matmul(x.t()));
  show("td::randn({2, 3}) // Philox, seed 0", td::randn({2, 3}));
  td::Tensor h = td::linspace(0, 1, 5, td::kFloat16);
  show("td::linspace(0, 1, 5, td::kFloat16)", h);
  td::Tensor ints = td::tensor({1, 2, 3});
  show("ints + 0.5        // int64 and a float promote to float32", ints + 0.5);
  td::Tensor on_cpu1 = x.to(td::Device("cpu:1"));
  show("x.to(td::Device(\"cpu:1\"))  // a second CPU device, for data parallelism", on_cpu1);
  try {
    x + on_cpu1;
  } catch (const td::Error& e) {
    std::cout << ">>> x + x.to(\"cpu:1\")\ntandem::Error: " << e.what() << "\n\n";
  }
  try {
    x.view({5, 5});
  } catch (const td::Error& e) {
    std::cout << ">>> x.view({5, 5})\ntandem::Error: " << e.what() << "\n\n";
  }
  fmt::print("{} intra-op threads; set TANDEM_NUM_THREADS to change.\n", td::num_threads());
  return 0;
}

}  // namespace tandem::demo
