"""td_test: one Catch2 binary per unit, linked with the shared test main and helpers."""

load("//tools:copts.bzl", "TD_COPTS")

def td_test(name, srcs = None, size = "small", deps = [], **kwargs):
    native.cc_test(
        name = name,
        srcs = srcs or [name + ".cc"],
        size = size,
        linkstatic = True,
        copts = TD_COPTS,
        deps = deps + ["//tests:testing", "//:tandem", "@catch2"],
        **kwargs
    )
