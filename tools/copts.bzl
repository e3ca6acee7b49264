"""Compiler flags for tandem's own code (not for the system packages it builds against)."""

# -fno-math-errno lets the compiler vectorize sqrt and friends; tandem never reads errno.
TD_COPTS = ["-Wall", "-Wextra", "-Werror", "-fno-math-errno"]
