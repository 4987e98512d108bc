#!/usr/bin/env bash
# Rebuild fuzz/corpus/<target> from the work corpus: libFuzzer's merge keeps the inputs that
# add coverage, then the smallest of those are kept up to BUDGET bytes per target (the
# committed corpus must stay small). Crash inputs in artifacts/<target>/ are always kept.
# Usage: minimize.sh [BUDGET] TARGET...
cd "$(dirname "$0")"
budget=${1:-30000}; shift
B=target/x86_64-unknown-linux-gnu/release
for t in "$@"; do
  tmp=$(mktemp -d)
  # libFuzzer's merge fails on a missing folder (a new target has no committed corpus yet).
  mkdir -p corpus/$t
  "$B/$t" -merge=1 -timeout=10 -rss_limit_mb=2048 "$tmp" corpus-work/$t corpus/$t >/dev/null 2>&1
  rm -rf corpus/$t && mkdir -p corpus/$t
  total=0
  while read -r size f; do
    [ $((total + size)) -gt "$budget" ] && break
    cp "$f" corpus/$t/ && total=$((total + size))
  done < <(find "$tmp" -type f -printf '%s %p\n' | sort -n)
  find artifacts/$t -type f -name 'crash-*' -o -type f -name 'timeout-*' -o -type f -name 'oom-*' 2>/dev/null |
    while read -r f; do cp "$f" corpus/$t/; done
  echo "$t: $(ls corpus/$t | wc -l) files, $(du -sb corpus/$t | cut -f1) bytes"
  rm -rf "$tmp"
done
