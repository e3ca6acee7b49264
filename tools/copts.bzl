"""Compiler flags for tandem's own code (not for the system packages it builds against)."""

# -O3: GCC vectorizes the element-wise and reduction loops only at -O3 (they need alias checks).
# -fno-math-errno and -fno-trapping-math let it vectorize sqrt and the NaN-aware selects
# (relu, max, clamp, exp's range clamp); tandem never reads errno or floating-point traps.
TD_BASE_COPTS = ["-Wall", "-Wextra", "-Werror", "-O3", "-fno-math-errno", "-fno-trapping-math"]

# x86-64-v3 (AVX2, FMA, F16C; every x86 server CPU since 2015) doubles the vector width of the
# CPU kernels. core/cpu_check.cc, built without it, stops with a clear message on older CPUs.
TD_COPTS = TD_BASE_COPTS + ["-march=x86-64-v3"]

# The tests' own code (cases, references, helpers, Catch2's runner) at -O1: the library under test
# keeps -O3, and the cases compile in half the time (under the sanitizers, data_parallel_test.cc
# took 166 s instead of 328 s and test_main.cc 121 s instead of 225 s on the 2-core machine).
TD_TEST_COPTS = TD_COPTS + ["-O1"]
