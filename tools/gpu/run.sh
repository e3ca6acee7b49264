#!/usr/bin/env bash
# The GPU suite, run on a machine with an NVIDIA GPU and driver (built by tools/gpu/build.sh on
# any machine with the CUDA toolkit). In one run, in under 8 minutes on an H200:
#   1. the GPU and the driver;
#   2. every [cuda] test case, then the multi-device cases again on two logical devices of GPU 0;
#   3. compute-sanitizer memcheck, then racecheck, over the CUDA test program;
#   4. the GPU benchmarks beside PyTorch (the machine's python3 with torch);
#   5. one summary table, printed last and written as RESULTS_DIR/summary.json.
#   bash run.sh [RESULTS_DIR]      (default: ./gpu-results)
# Each stage has a time limit (570 s in all), so one that hangs cannot take the others' time, and
# the whole run fits a 10-minute lease of a GPU machine.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-gpu-results}
mkdir -p "$results"
results=$(cd "$results" && pwd)
export PYTHONUNBUFFERED=1

# Programs and libraries, unpacked once; then cuBLAS/cuDNN/NCCL from the system's CUDA or from
# the NVIDIA packages PyTorch installed.
bin=$(mktemp -d) libs=$(mktemp -d)
for f in "$here"/bin/*.xz; do xz -dc "$f" >"$bin/$(basename "${f%.xz}")" && chmod +x "$bin/$(basename "${f%.xz}")"; done
for f in "$here"/lib/*.xz; do [ -e "$f" ] && xz -dc "$f" >"$libs/$(basename "${f%.xz}")"; done
# The system's CUDA first (the first folder with cuBLAS 13), then every NVIDIA package folder, so a
# library the system lacks (cuDNN often) still comes from PyTorch's.
cuda_libs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
  if ls "$d"/libcublas.so.13* >/dev/null 2>&1; then cuda_libs="$d"; break; fi
done
pip_libs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
dirs = []
for root in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib")))
    dirs += sorted(glob.glob(os.path.join(root, "nvidia", "cu13", "lib")))
print(":".join(dict.fromkeys(dirs)))
PY
)
cuda_libs="$cuda_libs${pip_libs:+${cuda_libs:+:}$pip_libs}"
export LD_LIBRARY_PATH="$libs${cuda_libs:+:$cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

stage() { echo; echo "=== $* ==="; }

stage "GPU and driver"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee "$results/gpu.txt"
"$bin/tandem" devices 2>&1 | tee -a "$results/gpu.txt"
echo "libraries: $LD_LIBRARY_PATH"

stage "tests: every [cuda] case"
timeout 150 "$bin/cuda_tests" 2>&1 | tee "$results/tests.log" | grep -v "^\s*$" | tail -n 60
echo "exit status: ${PIPESTATUS[0]}" | tee -a "$results/tests.log"

stage "tests: two logical devices on GPU 0 (TANDEM_VISIBLE_DEVICES=0,0)"
TANDEM_VISIBLE_DEVICES=0,0 timeout 60 "$bin/cuda_tests" "[devices]" 2>&1 | tee "$results/tests_logical.log" | tail -n 30

for tool in memcheck racecheck; do
  stage "compute-sanitizer --tool $tool"
  if command -v compute-sanitizer >/dev/null 2>&1; then
    # The large-size cases make the sanitizers crawl; every kernel still runs in the others.
    timeout 90 compute-sanitizer --tool "$tool" --print-limit 20 "$bin/cuda_tests" "~[large]" \
      >"$results/sanitizer_$tool.log" 2>&1
    echo "exit status: $?" >>"$results/sanitizer_$tool.log"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|tandem-tests:|exit status" "$results/sanitizer_$tool.log" | tail -n 5
  else
    echo "compute-sanitizer not found" | tee "$results/sanitizer_$tool.log"
  fi
done

stage "benchmarks beside PyTorch"
# With one GPU, two logical devices on it give the data-parallel benchmarks their second device.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" = 1 ] && export TANDEM_VISIBLE_DEVICES=0,0
TANDEM_ROOT="$here" timeout 180 "$bin/tandem" bench --filter '^cuda_' --python python3 --min-time 0.2 \
  --repetitions 5 --json "$results/bench.json" 2>&1 | tee "$results/bench.log"

stage "summary"
python3 "$here/summary.py" "$results"
