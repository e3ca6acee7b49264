// `tandem bench`: runs the Google Benchmark suite of tandem and the same operations in PyTorch,
// in one run on the same machine and thread count, and prints each figure side by side with
// the ratio tandem time / PyTorch time (below 1: tandem is faster).
#pragma once

#include <string>

namespace tandem::bench {

struct Options {
  std::string filter = ".";  // regex on benchmark names
  int threads = 0;           // 0: tandem's default (TANDEM_NUM_THREADS or the hardware)
  std::string python;        // the interpreter with PyTorch; default: tools/setup.sh's venv
  double min_time = 0.5;     // seconds per benchmark and side
  int repetitions = 5;       // the figure is the median of this many batches
  std::string json;          // also write the results here
};

int run(const Options& options, const char* argv0);

}  // namespace tandem::bench
