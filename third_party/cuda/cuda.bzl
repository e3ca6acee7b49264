"""cuda_library: .cu files compiled by nvcc (C++20) and linked like any cc_library."""

load("@bazel_skylib//rules:common_settings.bzl", "BuildSettingInfo")
load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("@local_cuda//:defs.bzl", "CUDA_ENABLED", "CUDA_PATH")

def _gencode_flags(archs):
    flags = []
    numbers = []
    for arch in archs.split(","):
        arch = arch.strip()
        if not arch.startswith("sm_"):
            fail("--//third_party/cuda:archs takes sm_XY entries, got '{}'".format(arch))
        numbers.append(arch[3:])
        flags += ["-gencode", "arch=compute_{0},code=sm_{0}".format(arch[3:])]
    newest = numbers[0]
    for n in numbers:
        if int(n) > int(newest):
            newest = n
    flags += ["-gencode", "arch=compute_{0},code=compute_{0}".format(newest)]
    return flags

def _nvcc_objects_impl(ctx):
    compilation = cc_common.merge_cc_infos(cc_infos = [d[CcInfo] for d in ctx.attr.deps]).compilation_context
    # The host code is built for the x86-64 level of the rest of tandem (tools/copts.bzl), so that
    # inline host functions shared with it, such as Half's F16C conversions, are the same.
    common = ["-std=c++20", "-O3", "-Xcompiler", "-fPIC", "-Xcompiler", "-Wall,-Wextra,-Werror",
              "-Xcompiler", "-march=x86-64-v3", "--expt-relaxed-constexpr", "-Werror", "all-warnings"]
    common += _gencode_flags(ctx.attr._archs[BuildSettingInfo].value)
    # The host compiler is the C++ toolchain's, not whichever gcc the actions' fixed PATH finds.
    common += ["-ccbin", find_cpp_toolchain(ctx).compiler_executable]
    for d in compilation.defines.to_list():
        common.append("-D" + d)
    for i in compilation.quote_includes.to_list() + compilation.includes.to_list():
        common += ["-I", i]
    for i in compilation.system_includes.to_list():
        common += ["-isystem", i]
    objects = []
    for src in ctx.files.srcs:
        obj = ctx.actions.declare_file("_nvcc/{}/{}.o".format(ctx.label.name, src.basename[:-len(".cu")]))
        ctx.actions.run(
            executable = CUDA_PATH + "/bin/nvcc",
            arguments = common + ["-c", src.path, "-o", obj.path],
            inputs = depset([src] + ctx.files.hdrs, transitive = [compilation.headers]),
            outputs = [obj],
            mnemonic = "Nvcc",
            progress_message = "nvcc {}".format(src.short_path),
            use_default_shell_env = True,
        )
        objects.append(obj)
    return [DefaultInfo(files = depset(objects))]

_nvcc_objects = rule(
    implementation = _nvcc_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "_archs": attr.label(default = "//third_party/cuda:archs"),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
)

def cuda_objects(name, srcs, hdrs = [], deps = []):
    """Objects of the .cu `srcs` compiled by nvcc, to list in a cc_library's srcs (with its other
    sources, so one library holds both and they may call each other); [] without a CUDA toolkit."""
    if not CUDA_ENABLED:
        return []
    _nvcc_objects(name = name, srcs = srcs, hdrs = hdrs, deps = deps + ["@local_cuda//:headers"])
    return [":" + name]

def if_cuda(with_cuda, without_cuda = []):
    """`with_cuda` in a build with the CUDA toolkit, else `without_cuda`."""
    return with_cuda if CUDA_ENABLED else without_cuda

def cuda_library(name, srcs, hdrs = [], deps = [], without_cuda_srcs = [], **kwargs):
    """A cc_library whose .cu `srcs` are compiled by nvcc.

    Without a CUDA toolkit the library is built from `without_cuda_srcs` instead (plain C++ that
    reports "no CUDA devices"), so the rest of tandem builds and runs CPU-only.
    """
    if not CUDA_ENABLED:
        native.cc_library(name = name, srcs = without_cuda_srcs, hdrs = hdrs, deps = deps, **kwargs)
        return
    _nvcc_objects(name = name + "_nvcc", srcs = srcs, hdrs = hdrs, deps = deps + ["@local_cuda//:headers"])
    native.cc_library(
        name = name,
        srcs = [":" + name + "_nvcc"],
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        **kwargs
    )
