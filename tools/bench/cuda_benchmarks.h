// The GPU half of `tandem bench` (tools/bench/cuda_benchmarks.cc): registered only when a CUDA
// device is present, so a machine without one runs the CPU benchmarks alone.
#pragma once

#include <string>

namespace tandem::bench {

// min_time: seconds each benchmark runs per repetition.
void register_cuda_benchmarks(double min_time);
// Bytes a memory-bound GPU benchmark must read and write per call; 0 for the others.
double cuda_bytes_per_call(const std::string& name);

}  // namespace tandem::bench
