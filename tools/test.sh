#!/usr/bin/env bash
# Builds and runs every test (bazel test //...), then prints one line counting test cases over
# all test binaries: "N passed, N failed, N skipped". Extra arguments go to bazel, e.g.
# `tools/test.sh --config=asan`. Exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
bazel test //... "$@" 2>&1 | tee "$summary"
status=${PIPESTATUS[0]}

# Bazel's per-target verdicts: a target that ran (PASSED or FAILED, cached or not) has a log
# with its counts; one that did not build or run counts as one failure.
passed=0 failed=0 skipped=0
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
      echo "no counts from $target ($verdict, it crashed or timed out): counted as 1 failed";;
    *) echo "$target: $verdict: counted as 1 failed";;
  esac
  failed=$((failed + 1))
done < <(sed -nE 's#^(//[^ ]+)[[:space:]]+(\(cached\)[[:space:]]+)?(PASSED|FAILED TO BUILD|FAILED|NO STATUS|TIMEOUT|FLAKY|INCOMPLETE|SKIPPED)( in .*)?$#\1 \3#p' "$summary" |
           sed -E 's/ (FAILED TO BUILD|NO STATUS)$/ NOT_RUN/')

echo "$passed passed, $failed failed, $skipped skipped"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
