// What tools/bench/parallel_benchmarks.cc leaves for `tandem bench` to print.
#pragma once

#include <string>

namespace tandem::bench {

// The per-device phase table of the last data-parallel step benchmarked.
std::string& last_data_parallel_table();

}  // namespace tandem::bench
