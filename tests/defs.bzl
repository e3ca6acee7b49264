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
