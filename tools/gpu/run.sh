#!/usr/bin/env bash
# The GPU suite, run on a machine with an NVIDIA GPU and driver (built by tools/gpu/build.sh on
# any machine with the CUDA toolkit). Its stages, in order, each under a time limit (470 s in
# all, with finding the libraries and compute-sanitizer, so that a whole run ends inside 8
# minutes; a 15-minute lease of a GPU, the machine's start included, then leaves room only for a
# second, shorter run of chosen stages, made at once while the machine is still held):
#   gpu        the GPU, the driver, and the devices tandem sees (and why none, if it sees none);
#   tests      every [cuda] case but the [large] ones, with each case's duration;
#   logical    the [devices] cases on two logical devices of GPU 0 (TANDEM_VISIBLE_DEVICES=0,0),
#              and with two or more GPUs, over them with the collectives in NCCL (TANDEM_COMM=nccl),
#              or with one, the DataParallel case asking for NCCL there (the kernels must serve it);
#   large      the [large] cases;
#   train      the main job on the GPU: `tandem train --devices all` (data parallel over two
#              logical devices of GPU 0 where the machine has one GPU), then the CNN on cuda:0
#              with float16 autocast and loss scaling (--amp fp16);
#   memcheck   compute-sanitizer memcheck over the light cases: [cuda]~[large]~[heavy]~[devices];
#   racecheck  racecheck over the cases of the kernels that share memory in a block: [shared]
#              (both with the machine's compute-sanitizer, from its CUDA toolkit);
#   bench      the GPU benchmarks beside PyTorch (the machine's python3 with torch, run with the
#              machine's library path, not the suite's);
# then one summary table, printed last and written as RESULTS_DIR/summary.json.
#   bash run.sh [RESULTS_DIR [STAGE,...]]     (default: ./gpu-results, every stage)
# A second run names only the stages it needs, and SUITE_TESTS narrows the tests stage to a Catch2
# test spec: SUITE_TESTS='conv2d*' bash run.sh RESULTS gpu,tests. Every stage draws its random
# inputs from one seed, printed and kept in the summary; TANDEM_TEST_SEED=<seed> repeats a run's.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-gpu-results}
stages=${2:-gpu,tests,logical,large,train,memcheck,racecheck,bench}
mkdir -p "$results"
results=$(cd "$results" && pwd)
export PYTHONUNBUFFERED=1
# Set, it would make the [cuda] cases a dry run on a CPU device (tests/cuda/cuda_testing.h).
unset TANDEM_TEST_DEVICE
# NCCL says why it failed (a socket, a sysfs file) only with its warnings on.
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
# The summary reports these stages only: logs of other stages may be an earlier run's.
echo "$stages" >"$results/stages.txt"

for s in ${stages//,/ }; do
  case "$s" in
    gpu | tests | logical | large | train | memcheck | racecheck | bench) ;;
    *) echo "run.sh: unknown stage '$s' (gpu, tests, logical, large, train, memcheck, racecheck, bench)" >&2; exit 2 ;;
  esac
done
want() { [[ ",$stages," == *",$1,"* ]]; }

export TANDEM_TEST_SEED=${TANDEM_TEST_SEED:-$(( $(date +%s%N) % 4294967296 ))}
echo "$TANDEM_TEST_SEED" >"$results/seed.txt"
# The summary is written at the end, after an error, and when the run is stopped by TERM or INT
# (the stage running is stopped first); a KILL leaves only the logs written so far.
running="" running_log=""
summarize() {
  trap - EXIT
  rm -rf "${work:-}"  # the unpacked programs
  echo; echo "=== summary ==="
  if command -v python3 >/dev/null 2>&1; then
    python3 "$here/summary.py" "$results"  # its exit status is run.sh's: 0 only if the run passed
  else
    echo '{"error": "python3 is missing: no summary; read the logs"}' >"$results/summary.json"
    cat "$results/summary.json"
    false
  fi
  exit $?  # the summary's verdict (an EXIT trap that does not exit keeps the last command's status)
}
trap summarize EXIT
# A stop marks the stage it cut short: its log ends with the signal's exit status, which the
# summary reports as a kill, instead of reading like a program that ended without its counts.
stop() {
  if [ -n "$running" ]; then
    kill -TERM "$running" 2>/dev/null && wait "$running" 2>/dev/null
    printf '\nrun.sh was stopped during this stage\nexit status: %d\n' "$1" >>"$running_log"
  fi
  exit "$1"
}
trap 'stop 143' TERM
trap 'stop 130' INT

# Programs and libraries, unpacked once into the suite's folder (not /tmp, which may not allow
# running programs, nor RESULTS_DIR, which is brought back), with xz or, where it is missing,
# Python's lzma; then cuBLAS/cuSOLVER/cuDNN/NCCL from the system's CUDA or from the NVIDIA packages PyTorch
# installed. A killed run's folder is removed by the next run.
rm -rf "$here"/work.*
work=$(mktemp -d -p "$here" work.XXXX)
bin="$work/bin" libs="$work/lib"
mkdir -p "$bin" "$libs"
unxz_to() {
  if command -v xz >/dev/null 2>&1; then
    xz -dc "$1" >"$2"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
  fi
}
for f in "$here"/bin/*.xz; do
  unxz_to "$f" "$bin/$(basename "${f%.xz}")" && chmod +x "$bin/$(basename "${f%.xz}")" ||
    echo "run.sh: could not unpack $f (neither xz nor python3?)" | tee -a "$results/unpack.txt"
done
for f in "$here"/lib/*.xz; do [ -e "$f" ] && unxz_to "$f" "$libs/$(basename "${f%.xz}")"; done
# The system's CUDA first (the first folder with cuBLAS 13), then every NVIDIA package folder, so a
# library the system lacks (cuDNN often) still comes from PyTorch's.
cuda_libs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
  if ls "$d"/libcublas.so.13* >/dev/null 2>&1; then cuda_libs="$d"; break; fi
done
pip_libs=$(timeout 20 python3 - <<'PY' 2>/dev/null
import glob, os, site
dirs = []
for root in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib")))
    dirs += sorted(glob.glob(os.path.join(root, "nvidia", "cu13", "lib")))
print(":".join(dict.fromkeys(dirs)))
PY
)
cuda_libs="$cuda_libs${pip_libs:+${cuda_libs:+:}$pip_libs}"
# PyTorch keeps the machine's library path: ahead of its own NVIDIA packages, the suite's folders
# could give it a cuBLAS of another version than it was built with. Its python3 is run through this.
machine_library_path=${LD_LIBRARY_PATH-}
python="$work/python3"
printf '#!/usr/bin/env bash\nexport LD_LIBRARY_PATH=%q\nexec python3 "$@"\n' "$machine_library_path" >"$python"
chmod +x "$python"
export LD_LIBRARY_PATH="$libs${cuda_libs:+:$cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# A library no folder has (cuBLAS 13 when PyTorch ships CUDA 12's, cuDNN or NCCL without PyTorch)
# stops every program at start-up: said once here, and in the summary.
missing=$(for b in "$bin"/*; do ldd "$b" 2>/dev/null; done | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
[ -n "$missing" ] && echo "run.sh: libraries not found: $missing" | tee "$results/missing_libraries.txt"
[ -z "$missing" ] && rm -f "$results/missing_libraries.txt"
# The GPUs tandem sees: CUDA_VISIBLE_DEVICES applies (nvidia-smi -L would list every GPU of the
# machine), TANDEM_VISIBLE_DEVICES does not (it may make two logical devices of one GPU).
gpus=$(timeout 20 env -u TANDEM_VISIBLE_DEVICES "$bin/tandem" devices 2>/dev/null |
  sed -n 's/^cuda *\([0-9][0-9]*\) devices*\b.*/\1/p')
gpus=${gpus:-0}
# With one GPU, two logical devices on it give data parallelism its second device.
visible=()
[ "$gpus" = 1 ] && visible=(TANDEM_VISIBLE_DEVICES=0,0)

stage() { echo; echo "=== $* ==="; }
# Runs a command under a limit (killed 10 s after the limit if it ignores the first signal), its
# output in LOG, and appends "exit status: N" to LOG (124 or 137: the limit was reached).
limited() {
  : >"$2"
  limited_adding "$@"
}
# As limited, the output added to what LOG holds already.
limited_adding() {
  local limit=$1 log=$2
  shift 2
  # In the background and waited for, so that a TERM or INT reaches the traps at once.
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1 &
  running=$! running_log=$log
  wait "$running"
  local status=$?
  running="" running_log=""
  printf '\nexit status: %d\n' "$status" >>"$log"  # on a line of its own, also after a cut-off line
}
# Runs the test cases SPEC matches, as `limited` runs a command: PREFIX (env VAR=..., a sanitizer)
# then the test binary, under LIMIT seconds, the output in LOG. A case after which the GPU's
# context is lost (a kernel faulted) ends its process (tests/test_main.cc) and would fail every
# case after it: those cases run on in a new process, their output added to LOG, while the limit
# lasts. The list of cases is the binary's own, in the order it runs them.
cases() {
  local limit=$1 log=$2 spec=$3
  shift 3
  local end=$((SECONDS + limit)) list="$work/cases.txt" rest="$work/rest.txt"
  : >"$log"
  timeout 20 "$bin/cuda_tests" --list-test-names-only "$spec" 2>/dev/null | grep -v '^tandem-tests:' >"$list"
  local selection=("$spec") culprit from
  while :; do
    from=$(wc -l <"$log")
    limited_adding $((end - SECONDS > 1 ? end - SECONDS : 1)) "$log" "$@" "$bin/cuda_tests" -d yes "${selection[@]}"
    culprit=$(tail -n +$((from + 1)) "$log" | sed -n 's/^tandem-tests: lost the GPU context in: //p' | tail -n 1)
    [ -n "$culprit" ] && [ $((end - SECONDS)) -gt 1 ] || break
    culprit=$culprit awk 'after { print } $0 == ENVIRON["culprit"] { after = 1 }' "$list" >"$rest"
    [ -s "$rest" ] || break
    mv "$rest" "$list"
    # Catch2 reads each line of the file as a test spec: a name's commas, brackets, stars, quotes
    # and backslashes are escaped.
    sed 's/[][\\,*"]/\\&/g' "$list" >"$work/selection.txt"
    selection=(-f "$work/selection.txt")
    printf 'run.sh: the cases after "%s" run on in a new process\n' "$culprit" >>"$log"
  done
}
# The end of a test log without the per-case durations ("0.123 s: name").
show() { grep -v -E '^[0-9]+\.[0-9]+ s: ' "$1" | grep -v '^\s*$' | tail -n "$2"; }

if want gpu; then
  stage "GPU and driver"
  timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
    >"$results/gpu.txt" 2>&1
  timeout 15 "$bin/tandem" devices >>"$results/gpu.txt" 2>&1
  cat "$results/gpu.txt"
  echo "libraries: $LD_LIBRARY_PATH"
  echo "test seed: $TANDEM_TEST_SEED"
fi

if want tests; then
  stage "tests: ${SUITE_TESTS:-every [cuda] case but the [large] ones}"
  cases 85 "$results/tests.log" "${SUITE_TESTS:-[cuda]~[large]}"
  show "$results/tests.log" 60
fi

if want logical; then
  stage "tests: two logical devices on GPU 0 (TANDEM_VISIBLE_DEVICES=0,0)"
  # The stage's 40 s are shared with a second run: with several GPUs, the same cases over distinct
  # GPUs with the collectives in NCCL; with one, the DataParallel case asking for NCCL
  # (TANDEM_COMM=nccl), which must fall back to the kernels on logical devices of one GPU.
  limit=32
  [ "$gpus" -ge 2 ] && limit=20
  cases $limit "$results/tests_logical.log" "[devices]" env TANDEM_VISIBLE_DEVICES=0,0
  show "$results/tests_logical.log" 30
  if [ "$gpus" -ge 2 ]; then
    stage "tests: the [devices] cases over distinct GPUs, collectives through NCCL (TANDEM_COMM=nccl)"
    cases 20 "$results/tests_nccl.log" "[devices]" env TANDEM_COMM=nccl
  else
    stage "tests: TANDEM_COMM=nccl on two logical devices of GPU 0 (NCCL cannot serve them: the kernels do)"
    cases 8 "$results/tests_nccl.log" "DataParallel over CUDA devices trains as one device does*" \
      env TANDEM_VISIBLE_DEVICES=0,0 TANDEM_COMM=nccl
  fi
  show "$results/tests_nccl.log" 30
fi

if want large; then
  stage "tests: the [large] cases"
  cases 60 "$results/tests_large.log" "[cuda][large]"
  show "$results/tests_large.log" 40
fi

if want train; then
  stage "the main job: tandem train --devices all${visible[*]:+ (${visible[*]})}"
  limited 20 "$results/train_dp.log" env ${visible[@]+"${visible[@]}"} "$bin/tandem" train --devices all --epochs 2
  tail -n 16 "$results/train_dp.log"
  stage "tandem train --model cnn --devices cuda:0 --amp fp16"
  limited 20 "$results/train_amp.log" "$bin/tandem" train --model cnn --devices cuda:0 --amp fp16 --epochs 1
  tail -n 6 "$results/train_amp.log"
fi

# The sanitizers slow every kernel down many times: each takes the cases that cover every kernel
# in few launches. A run cut short by its limit still reports the errors it found. CUDA API calls
# that return an error are not reported (--report-api-errors no): the out-of-memory case fails on
# purpose, and tandem checks every call itself, so a failed call fails its test case instead.
# memcheck runs with TANDEM_NO_CUDA_MEMORY_CACHING=1, so that each tensor is its own cudaMalloc,
# whose bounds are all memcheck knows: in the pool's segments, a read past a tensor goes unseen.
# compute-sanitizer comes from the machine's CUDA toolkit (NVIDIA's PyPI package lacks the helper
# programs it starts its target with). A candidate is taken only once memcheck has run one small
# case (it allocates, launches and copies) to the end with the case passed: in some sandboxes the
# tool refuses the device, which a program that only asks for the devices would not show (run as
# the stages run it: a failed API call the program handles is not an error). All the candidates
# share 15 s.
probe_case="item() reads one element of every dtype back from the device"
sanitizer="" sanitizer_why="compute-sanitizer is not installed"
if want memcheck || want racecheck; then
  tried=" " probe_end=$((SECONDS + 15))
  for candidate in $(command -v compute-sanitizer) /usr/local/cuda/bin/compute-sanitizer \
    /usr/local/cuda/compute-sanitizer/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer \
    /opt/nvidia/*/compute-sanitizer/compute-sanitizer; do
    [ -x "$candidate" ] || continue
    real=$(readlink -f "$candidate")
    [[ "$tried" == *" $real "* ]] && continue  # one file under several names is tried once
    tried="$tried$real "
    left=$((probe_end - SECONDS))
    if [ "$left" -le 0 ]; then
      sanitizer_why="$sanitizer_why; no time left to try $candidate"
      break
    fi
    probe_log="$results/sanitizer_probe.log"
    if timeout "$left" "$candidate" --tool memcheck --report-api-errors no "$bin/cuda_tests" "$probe_case" \
      >"$probe_log" 2>&1 &&
      grep -q 'ERROR SUMMARY: 0 errors' "$probe_log" && grep -q 'tandem-tests: 1 passed' "$probe_log" &&
      ! grep -q 'Device not supported' "$probe_log"; then
      sanitizer=$candidate
      break
    fi
    sanitizer_why="compute-sanitizer could not run a program here: $candidate (sanitizer_probe.log: $(
      grep -v '^\s*$' "$probe_log" | tail -n 1))"
  done
fi
sanitize() {
  local tool=$1 limit=$2 spec=$3
  shift 3
  stage "compute-sanitizer --tool $tool over $spec"
  local log="$results/sanitizer_$tool.log"
  if [ -z "$sanitizer" ]; then
    echo "$sanitizer_why" | tee "$log"
    return
  fi
  "$sanitizer" --version 2>&1 | grep -i '^version'
  cases "$limit" "$log" "$spec" env "$@" "$sanitizer" --tool "$tool" --report-api-errors no --print-limit 20
  grep -E "^========= (ERROR|RACECHECK) SUMMARY|tandem-tests:|exit status" "$log" | tail -n 5
}
want memcheck && sanitize memcheck 60 "[cuda]~[large]~[heavy]~[devices]" TANDEM_NO_CUDA_MEMORY_CACHING=1
want racecheck && sanitize racecheck 40 "[shared]"

if want bench; then
  stage "benchmarks beside PyTorch"
  rm -f "$results/bench.json"  # an earlier run's must not pass for this one's
  limited 60 "$results/bench.log" env ${visible[@]+"${visible[@]}"} TANDEM_ROOT="$here" "$bin/tandem" bench \
    --filter '^cuda_' --python "$python" --min-time 0.2 --repetitions 5 --json "$results/bench.json"
  tail -n 40 "$results/bench.log"
fi

