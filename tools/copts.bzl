"""Compiler flags for tandem's own code (not for the system packages it builds against)."""

# -O3: GCC vectorizes the element-wise and reduction loops only at -O3 (they need alias checks).
# -fno-math-errno lets it vectorize sqrt and friends; tandem never reads errno.
TD_COPTS = ["-Wall", "-Wextra", "-Werror", "-O3", "-fno-math-errno"]
