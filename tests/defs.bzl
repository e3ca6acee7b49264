"""td_test: one Catch2 binary per unit, linked with the shared test main and helpers.

Each test's cases are also a library, `<name>_cases`, so that other binaries can gather them
(the GPU suite links every [cuda] case into one binary: tools/gpu/BUILD)."""

load("//tools:copts.bzl", "TD_TEST_COPTS")

def td_test(name, srcs = None, size = "small", deps = [], **kwargs):
    native.cc_library(
        name = name + "_cases",
        linkstatic = True,
        testonly = True,
        srcs = srcs or [name + ".cc"],
        copts = TD_TEST_COPTS,
        alwayslink = True,
        visibility = ["//visibility:public"],
        deps = deps + ["//tests:testing", "//:tandem", "@catch2"],
    )
    # The cases are linked in whole; the library as its shared objects (see //:BUILD).
    native.cc_test(
        name = name,
        size = size,
        linkstatic = False,
        deps = [":" + name + "_cases"],
        **kwargs
    )

def td_dry_run(name):
    """The dry run of td_test `name`'s [cuda] cases on a machine without a GPU: the device under
    test is cpu:1 (tests/cuda/cuda_testing.h), so each case's inputs, CPU references and checks run,
    every "device" result being the CPU kernels' own. It proves the tests, and that ops keep their
    results and gradients on their operands' device. tools/test.sh runs it optimised only."""
    native.cc_test(
        name = name + "_dry_run",
        size = "large",
        args = ["[cuda]"],
        env = {"TANDEM_TEST_DEVICE": "cpu:1"},
        linkstatic = False,
        tags = ["dry_run"],
        deps = [":" + name + "_cases"],
    )
