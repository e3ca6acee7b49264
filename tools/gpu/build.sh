#!/usr/bin/env bash
# Builds the GPU suite on a machine with the CUDA toolkit (no GPU needed): one self-contained
# folder (default .gpu-suite/) with the [cuda] test program, the `tandem` command for the
# benchmarks, PyTorch's side of the benchmarks, the shared libraries the programs need that a
# bare Linux lacks, and run.sh, which proves everything on a GPU in one run. Programs and
# libraries are xz-compressed (their GPU code is most of their size); run.sh unpacks them.
# The GPU machine brings glibc 2.35 or newer, libstdc++ of GCC 12 or newer (every library of the
# suite and these programs were built with Debian 12's), the CUDA libraries and compute-sanitizer.
#   tools/gpu/build.sh [FOLDER]
# Then, on the GPU machine: bash FOLDER/run.sh RESULTS_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.gpu-suite}

cuda=${CUDA_PATH:-/usr/local/cuda}  # where Bazel finds the toolkit too (third_party/repositories.bzl)
[ -x "$cuda/bin/nvcc" ] || { echo "tools/gpu/build.sh: the CUDA toolkit (nvcc) is needed to build the suite; none at $cuda" >&2; exit 1; }
# cudart is linked statically everywhere. libstdc++ comes from the GPU machine: the libraries
# copied below need it too, so one linked into the programs would be a second copy in the process.
bazel build //tools/gpu:cuda_tests //tools:tandem

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/tools/bench"
cp bazel-bin/tools/gpu/cuda_tests bazel-bin/tools/tandem "$out/bin/"
chmod u+w "$out"/bin/*
strip --strip-debug "$out"/bin/*
programs=("$out"/bin/cuda_tests "$out"/bin/tandem)
cp tools/bench/torch_bench.py "$out/tools/bench/"
cp tools/gpu/run.sh tools/gpu/summary.py "$out/"

# Shared libraries from this machine's packages (OpenBLAS, fmt, Google Benchmark, ...), but not
# glibc, libstdc++ and libgcc, which every Linux has, nor CUDA's libraries, which run.sh finds on
# the GPU machine.
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+)\.'
cuda='^lib(cuda|cublas|cublasLt|cudnn|nccl|cudart|cusolver|cusparse|nvJitLink)'
for bin in "${programs[@]}"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ "$name" =~ $system || "$name" =~ $cuda ]]; then continue; fi
  xz -T0 -6 -c "$path" >"$out/lib/$name.xz"
done
for bin in "${programs[@]}"; do xz -T0 -6 "$bin"; done

size=$(du -sm "$out" | cut -f1)
echo "GPU suite in $out: ${size} MiB"
ls -la "$out" "$out/bin" "$out/lib"
if [ "$size" -ge 50 ]; then echo "tools/gpu/build.sh: the suite is ${size} MiB, over the 50 MiB it should fit in" >&2; exit 1; fi
