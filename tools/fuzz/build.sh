#!/usr/bin/env bash
# Builds the libFuzzer binary for the safetensors reader, with AddressSanitizer and
# UndefinedBehaviorSanitizer, by compiling the sources it needs directly with clang (Bazel's
# toolchain here is GCC, which has no libFuzzer). The reader needs only core/ and nn/state_dict.cc.
#
#   tools/fuzz/build.sh [OUTPUT]          (OUTPUT defaults to ./safetensors_fuzz)
#   ./safetensors_fuzz -max_total_time=30 -dict=tools/fuzz/safetensors.dict \
#       NEW_INPUTS_DIR tools/fuzz/corpus/safetensors
#
# libFuzzer adds the inputs it finds to the first corpus directory it is given: name a scratch
# directory first to keep the committed seed corpus as make_corpus.py wrote it. Crashes are
# written to ./crash-* (reproduce with ./safetensors_fuzz crash-...).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
output="$(realpath -m "${1:-safetensors_fuzz}")"
cxx="${CXX:-/usr/bin/clang++}"
command -v "$cxx" >/dev/null || { echo "build.sh: $cxx not found (install clang)" >&2; exit 1; }

# Every core source except the CPU-feature check (it exists for the -march=x86-64-v3 builds) and
# CUDA discovery (the reader never asks about devices).
sources=(tools/fuzz/safetensors_fuzz.cc nn/serialize/safetensors.cc nn/state_dict.cc)
for f in "$root"/core/*.cc; do
  case "$(basename "$f")" in
    cpu_check.cc | cuda_absent.cc) ;;
    *) sources+=("core/$(basename "$f")") ;;
  esac
done

# -Wno-unknown-warning-option: tandem's headers silence GCC-only warnings clang does not know.
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -Wno-unknown-warning-option
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$root")

objects="$(mktemp -d)"
trap 'rm -rf "$objects"' EXIT
echo "build.sh: compiling ${#sources[@]} sources with $cxx"
# Compile in parallel; libFuzzer's main comes from -fsanitize=fuzzer at the link.
printf '%s\n' "${sources[@]}" | (cd "$root" && xargs -P "$(nproc)" -I{} sh -c \
  'exec "$0" "$@" -c {} -o "'"$objects"'/$(echo {} | tr / _).o"' "$cxx" "${flags[@]}")
mkdir -p "$(dirname "$output")"
"$cxx" "${flags[@]}" "$objects"/*.o -lpthread -o "$output"
echo "build.sh: built $output"
