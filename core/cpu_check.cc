// Runs before main: tandem's code is compiled for x86-64-v3 (AVX2, FMA), so on an older CPU it
// would die of an illegal instruction somewhere. Say so plainly instead. This file is compiled
// without those instructions.
#include <cstdio>
#include <cstdlib>

namespace {

[[gnu::constructor]] void check_cpu_features() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c")) {
    std::fprintf(stderr,
                 "tandem: this CPU lacks AVX2, FMA or F16C, which this build of tandem requires "
                 "(x86-64-v3, any x86 server CPU since 2015)\n");
    std::abort();
  }
}

}  // namespace
