#!/usr/bin/env bash
# Builds and runs every test twice: optimised, then under AddressSanitizer and
# UndefinedBehaviorSanitizer (--config=asan); the dry run of the [cuda] cases optimised only.
# Prints one line per run and, last, one line counting test cases over all test binaries of both
# runs: "N passed, N failed, N skipped".
#   tools/test.sh            both runs (what CI runs)
#   tools/test.sh --quick    the optimised run only
# Exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

configs=("" "--config=asan")
if [ "${1:-}" = "--quick" ]; then configs=(""); fi

total_passed=0 total_failed=0 total_skipped=0 ok=1

# Runs bazel test with the given flags and adds its counts to the totals.
run() {
  local summary
  summary=$(mktemp)
  bazel test //... "$@" 2>&1 | tee "$summary"
  local status=${PIPESTATUS[0]}
  # Bazel's verdict per target: one that ran (PASSED or FAILED, cached or not) left a log with its
  # counts; one that did not build or run counts as one failure.
  local passed=0 failed=0 skipped=0 target verdict path line p f s
  while read -r target verdict; do
    case "$verdict" in
      PASSED|FAILED)
        path=${target#//}
        line=$(grep -h '^tandem-tests: [0-9]* passed' "bazel-testlogs/${path/://}/test.log" 2>/dev/null | tail -n 1)
        if [ -n "$line" ]; then
          read -r p f s <<<"$(sed -E 's/^tandem-tests: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/' <<<"$line")"
          passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
          if [ "$verdict" = FAILED ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); fi  # crashed after its tests
          continue
        fi
        echo "no counts from $target ($verdict: it crashed or timed out): counted as 1 failed";;
      *) echo "$target did not run ($verdict): counted as 1 failed";;
    esac
    failed=$((failed + 1))
  done < <(sed -nE 's#^(//[^ ]+)[[:space:]]+(\(cached\)[[:space:]]+)?(PASSED|FAILED TO BUILD|FAILED|NO STATUS|TIMEOUT|FLAKY|INCOMPLETE|SKIPPED)( in .*)?$#\1 \3#p' "$summary" |
             sed -E 's/ (FAILED TO BUILD|NO STATUS)$/ NOT_RUN/')
  rm -f "$summary"
  echo "tests ${*:-(optimised)}: $passed passed, $failed failed, $skipped skipped"
  total_passed=$((total_passed + passed)) total_failed=$((total_failed + failed)) total_skipped=$((total_skipped + skipped))
  if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ]; then ok=0; fi
}

for config in "${configs[@]}"; do
  # Before each run: the sanitizer run's objects alone add gigabytes to the cache, and a full disk
  # fails the tests that write after it.
  tools/prune_disk_cache.sh || echo "tools/test.sh: could not prune the disk cache; going on"
  # The dry runs of the [cuda] cases (td_dry_run, tests/defs.bzl) run optimised only: under the
  # sanitizers their 160 s would take several times as long, and one case holds 6 GiB.
  if [ -n "$config" ]; then run "$config" --build_tag_filters=-dry_run --test_tag_filters=-dry_run; else run; fi
done

echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$ok" -eq 1 ]
