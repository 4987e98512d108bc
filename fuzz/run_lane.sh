#!/usr/bin/env bash
# Fuzz the given targets one after another: run_lane.sh SECONDS TARGET...
# Each run stops at 10 million executions, SECONDS, or the first crash.
cd "$(dirname "$0")"
secs=$1; shift
B=target/x86_64-unknown-linux-gnu/release
for t in "$@"; do
  mkdir -p corpus-work/$t artifacts/$t logs
  "$B/$t" -runs=10000000 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix=artifacts/$t/ corpus-work/$t \
    > logs/$t.log 2>&1
  echo "$t rc=$? $(date -u +%T)" >> logs/lanes.txt
done
