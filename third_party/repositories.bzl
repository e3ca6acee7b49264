"""Repository rules for the system packages tandem builds against (all found locally, never fetched)."""

def _system_library_impl(ctx):
    for header in ctx.attr.headers:
        if not any([ctx.path(d + "/" + header).exists for d in ctx.attr.include_dirs]):
            fail("tandem needs {} (header <{}> not found in {}). Install the Debian package {} (tools/setup.sh does).".format(
                ctx.attr.description,
                header,
                ", ".join(ctx.attr.include_dirs),
                ctx.attr.package,
            ))
    ctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(ctx.name))
    ctx.file("BUILD", """# {description}: Debian package {package}, headers in the system include path.
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "{name}",
    linkopts = {linkopts},
)
""".format(
        description = ctx.attr.description,
        package = ctx.attr.package,
        name = ctx.name,
        linkopts = repr(ctx.attr.linkopts),
    ))

system_library = repository_rule(
    implementation = _system_library_impl,
    attrs = {
        "description": attr.string(mandatory = True),
        "package": attr.string(mandatory = True),
        "headers": attr.string_list(mandatory = True),
        "include_dirs": attr.string_list(default = ["/usr/include", "/usr/include/x86_64-linux-gnu"]),
        "linkopts": attr.string_list(default = []),
    },
    local = True,
)

_CUDA_BUILD = """# The CUDA toolkit found at {path}.
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "headers",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.cuh", "include/cccl/**"]),
    includes = ["include"],
)

# The runtime: static in static binaries (they run on machines that have a driver but no toolkit),
# shared in the tests, which link tandem's libraries as shared objects (a shared object's
# undefined symbols are not looked up in a static archive).
cc_import(
    name = "cudart_library",
    static_library = "lib64/libcudart_static.a",
    shared_library = "lib64/libcudart.so",
)

cc_library(
    name = "cudart",
    linkopts = ["-ldl", "-lrt", "-lpthread"],
    deps = [":cudart_library", ":headers"],
)

cc_library(
    name = "cublas",
    srcs = ["lib64/libcublas.so", "lib64/libcublasLt.so"],
    deps = [":headers"],
)

cc_library(
    name = "cudnn",
    srcs = ["lib64/libcudnn.so"],
    deps = [":headers"],
)

cc_library(
    name = "cusolver",
    srcs = ["lib64/libcusolver.so"],
    deps = [":headers"],
)

cc_library(
    name = "nccl",
    srcs = ["lib64/libnccl.so"],
    deps = [":headers"],
)

exports_files(["bin/nvcc"])
"""

_NO_CUDA_BUILD = """# No CUDA toolkit was found: tandem builds CPU-only.
package(default_visibility = ["//visibility:public"])

[cc_library(name = n) for n in ["headers", "cudart", "cublas", "cudnn", "cusolver", "nccl"]]
"""

def _cuda_configure_impl(ctx):
    path = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    found = ctx.path(path + "/bin/nvcc").exists and ctx.path(path + "/include/cuda_runtime.h").exists
    ctx.file("WORKSPACE", "workspace(name = \"{}\")\n".format(ctx.name))
    if found:
        for entry in ["bin", "include", "lib64"]:
            ctx.symlink(path + "/" + entry, entry)
        ctx.file("BUILD", _CUDA_BUILD.format(path = path))
    else:
        ctx.file("BUILD", _NO_CUDA_BUILD)
    ctx.file("defs.bzl", "CUDA_ENABLED = {}\nCUDA_PATH = {}\n".format(found, repr(path if found else "")))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
)
