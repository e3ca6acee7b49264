#!/usr/bin/env bash
# Keeps Bazel's disk cache (~/.cache/tandem/bazel-disk-cache, see .bazelrc) from filling the disk:
# Bazel 4 never deletes from it, and every optimised and sanitizer build adds to it. Above
# TANDEM_DISK_CACHE_GB (default 24) GiB it deletes the least recently used entries until the
# cache is down to three quarters of that. tools/test.sh runs it before each of its runs.
# One clean CI (both runs) writes a few GiB now that the tests link the library as shared objects
# (21 GB before): the limit keeps more than one such build, so that one run does not evict what
# the other needs.
# "Used" is the access time: a cache hit reads an entry but leaves its modification time alone, so
# pruning by modification time deleted the library's objects that every build still hit (written
# once, long ago) and kept what the last build wrote. The root filesystem's relatime updates the
# access time on the first read after a write and then at most daily: fine for this purpose.
set -euo pipefail
cache="${HOME}/.cache/tandem/bazel-disk-cache"
[ -d "$cache" ] || exit 0
limit_gb="${TANDEM_DISK_CACHE_GB:-24}"
limit=$((limit_gb * 1024 * 1024 * 1024))
size=$(du -sb "$cache" | cut -f1)
[ "$size" -gt "$limit" ] || exit 0
target=$((limit * 3 / 4))
echo "prune_disk_cache: $((size / 1024 / 1024)) MiB in $cache, over ${limit_gb} GiB; deleting the least recently used entries"
find "$cache" -type f -printf '%A@ %s %p\n' | sort -n | while read -r _ bytes path; do
  [ "$size" -le "$target" ] && break
  rm -f -- "$path"
  size=$((size - bytes))
done || true  # sort stops early (SIGPIPE) once enough is deleted
echo "prune_disk_cache: now $(($(du -sb "$cache" | cut -f1) / 1024 / 1024)) MiB"
