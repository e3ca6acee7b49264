#!/usr/bin/env bash
# Builds the GPU suite on a machine with the CUDA toolkit (no GPU needed): one self-contained
# folder (default .gpu-suite/) with the [cuda] test program, the `tandem` command for the
# benchmarks, PyTorch's side of the benchmarks, the shared libraries the programs need that a
# bare Linux lacks, compute-sanitizer, and run.sh, which proves everything on a GPU in one run. Programs and
# libraries are xz-compressed (their GPU code is most of their size); run.sh unpacks them.
#   tools/gpu/build.sh [FOLDER]
# Then, on the GPU machine: bash FOLDER/run.sh RESULTS_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.gpu-suite}

[ -x /usr/local/cuda/bin/nvcc ] || { echo "tools/gpu/build.sh: the CUDA toolkit (nvcc) is needed to build the suite" >&2; exit 1; }
# cudart is linked statically everywhere, libstdc++ and libgcc for the suite too (--config=gpu_suite).
bazel build --config=gpu_suite //tools/gpu:cuda_tests //tools:tandem

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/tools/bench"
cp bazel-bin/tools/gpu/cuda_tests bazel-bin/tools/tandem "$out/bin/"
chmod u+w "$out"/bin/*
strip --strip-debug "$out"/bin/*
programs=("$out"/bin/cuda_tests "$out"/bin/tandem)
cp tools/bench/torch_bench.py "$out/tools/bench/"
cp tools/gpu/run.sh tools/gpu/summary.py "$out/"

# Shared libraries from this machine's packages (OpenBLAS, fmt, Google Benchmark, ...), but not
# glibc's, which every Linux has, nor CUDA's libraries, which run.sh finds on the GPU machine.
system='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+)\.'
cuda='^lib(cuda|cublas|cublasLt|cudnn|nccl|cudart)'
for bin in "${programs[@]}"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ "$name" =~ $system || "$name" =~ $cuda ]]; then continue; fi
  xz -T0 -6 -c "$path" >"$out/lib/$name.xz"
done
for bin in "${programs[@]}"; do xz -T0 -6 "$bin"; done

# compute-sanitizer, which a GPU machine with the driver but no toolkit lacks: the one of NVIDIA's
# PyPI package for this toolkit's CUDA (13.0), fetched once into ~/.cache/tandem. Without a package
# index the suite goes without it, and run.sh looks for one on the GPU machine.
sanitizer_wheel_version=13.0.85
cache=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache/tandem
wheels=$cache/wheels
pip=${TANDEM_VENV:-$cache/venv}/bin/pip  # the venv tools/setup.sh makes
find_wheel() { ls "$wheels"/nvidia_cuda_sanitizer_api-"$sanitizer_wheel_version"-*.whl 2>/dev/null | head -n 1 || true; }
wheel=$(find_wheel)
if [ -z "$wheel" ]; then
  if [ -x "$pip" ]; then
    mkdir -p "$wheels"
    timeout 300 "$pip" download --quiet --no-deps --dest "$wheels" "nvidia-cuda-sanitizer-api==$sanitizer_wheel_version" ||
      true
    wheel=$(find_wheel)
  fi
  [ -n "$wheel" ] || echo "tools/gpu/build.sh: could not fetch compute-sanitizer $sanitizer_wheel_version" \
    "(${pip} and a package index are needed); the suite goes without it" >&2
fi
if [ -n "$wheel" ]; then
  unpacked=$(mktemp -d)
  trap 'rm -rf "$unpacked"' EXIT
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$unpacked"
  root=$unpacked/nvidia/cu13
  chmod +x "$root/bin/compute-sanitizer"  # zip keeps no modes
  # The program finds its libraries beside it and in ../lib. The package has the largest of them
  # in both: one file under two names, which tar stores once.
  for lib in "$root"/bin/*.so; do
    twin=$root/lib/$(basename "$lib")
    if cmp -s "$lib" "$twin"; then ln -f "$lib" "$twin"; fi
  done
  tar -C "$root" -cf - bin lib | xz -T0 -6 >"$out/sanitizer.tar.xz"
fi

size=$(du -sm "$out" | cut -f1)
echo "GPU suite in $out: ${size} MiB"
ls -la "$out" "$out/bin" "$out/lib"
if [ "$size" -ge 50 ]; then echo "tools/gpu/build.sh: the suite is ${size} MiB, over the 50 MiB it should fit in" >&2; exit 1; fi
