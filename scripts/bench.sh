#!/usr/bin/env bash
# Benchmark of full decoding (issue 6). One command:
#
#   scripts/bench.sh            # 400 MB capture
#   BENCH_MB=1024 scripts/bench.sh
#
# Builds bench-out/bench.pcapng (git-ignored) from the stored captures with
# examples/mkbench.rs, then measures on it, in this run:
#   quakecap flows FILE        full decode of every message, both directions
#   tshark -r FILE -q -z conv,udp
#   cat FILE > /dev/null
# and a demo benchmark over ../shared/demos/q3 (quakecap flows DEMO... = full decode).
# Wall times are the best of BENCH_RUNS runs (the machine is shared and noisy); peak memory
# is /usr/bin/time's maximum RSS. Instruction counts come from callgrind on a smaller
# capture built the same way (BENCH_CG_MB, default 8 MB) and on the demo set, so they are
# stable from run to run. Needs: cargo, tshark, valgrind, GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${BENCH_MB:-400}
CG_MB=${BENCH_CG_MB:-8}
RUNS=${BENCH_RUNS:-3}
LANES=${BENCH_LANES:-16}
DEMOS=${BENCH_DEMOS:-../shared/demos/q3}
[ -d "$DEMOS" ] || DEMOS=/work/shared/demos/q3
OUT=bench-out
mkdir -p "$OUT"
for tool in tshark valgrind /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done

cargo build --release --quiet --bin quakecap --example mkbench
Q=target/release/quakecap
BIG=$OUT/bench.pcapng
SMALL=$OUT/bench-cg.pcapng
target/release/examples/mkbench "$BIG" "$MB" "$LANES"
target/release/examples/mkbench "$SMALL" "$CG_MB" "$LANES"

# best_of CMD...: prints "seconds max_rss_kb" of the fastest of $RUNS runs.
best_of() {
    local best="" rss=0 i t m
    for ((i = 0; i < RUNS; i++)); do
        /usr/bin/time -f "%e %M" -o "$OUT/time.txt" "$@" >/dev/null 2>"$OUT/stderr.txt"
        read -r t m <"$OUT/time.txt"
        if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
        ((m > rss)) && rss=$m
    done
    echo "$best $rss"
}

# instructions CMD...: total instructions executed (all threads), from callgrind.
instructions() {
    valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.%p.out" "$@" \
        2>&1 >/dev/null | awk '/Collected :/ {print $4}'
    rm -f "$OUT"/cg.*.out
}

bytes=$(stat -c %s "$BIG")
frames=$(capinfos -c -M "$BIG" | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')
cg_frames=$(capinfos -c -M "$SMALL" | awk -F: '/Number of packets/ {gsub(/ /,"",$2); print $2}')
flows=$($Q flows --json "$BIG" | grep -c '"id"')

cat "$BIG" >/dev/null # warm the page cache
read -r t_cat m_cat < <(best_of cat "$BIG")
read -r t_q m_q < <(best_of "$Q" flows "$BIG")
read -r t_q1 m_q1 < <(QUAKECAP_THREADS=1 best_of "$Q" flows "$BIG")
read -r t_ts m_ts < <(RUNS=1 best_of tshark -r "$BIG" -q -z conv,udp)

i_q=$(instructions "$Q" flows "$SMALL")
i_ts=$(instructions tshark -r "$SMALL" -q -z conv,udp)
i_cat=$(instructions cat "$SMALL")

# Demo benchmark: every .dm_68 in the set, one process.
mapfile -t demo_files < <(ls "$DEMOS"/*.dm_6* 2>/dev/null)
demo_bytes=$(cat "${demo_files[@]}" | wc -c)
read -r t_demo m_demo < <(RUNS=$((RUNS * 2)) best_of "$Q" flows "${demo_files[@]}")
i_demo=$(instructions "$Q" flows "${demo_files[@]}")

awk -v bytes="$bytes" -v frames="$frames" -v flows="$flows" -v cgf="$cg_frames" \
    -v tc="$t_cat" -v tq="$t_q" -v tq1="$t_q1" -v tt="$t_ts" \
    -v mc="$m_cat" -v mq="$m_q" -v mq1="$m_q1" -v mt="$m_ts" \
    -v iq="$i_q" -v it="$i_ts" -v ic="$i_cat" \
    -v db="$demo_bytes" -v nd="${#demo_files[@]}" -v td="$t_demo" -v md="$m_demo" -v id="$i_demo" '
function mbs(t) { return t > 0 ? bytes / 1048576 / t : 0 }
function pps(t) { return t > 0 ? frames / t : 0 }
BEGIN {
    printf "capture: %.0f MB, %d frames, %d flows (instruction counts: %d-frame sample)\n\n", bytes/1048576, frames, flows, cgf
    printf "| tool | wall s | MB/s | packets/s | vs tshark (wall) | instructions/packet | vs tshark (instr.) | max RSS MB |\n"
    printf "|---|---:|---:|---:|---:|---:|---:|---:|\n"
    printf "| `quakecap flows` (2 threads) | %.2f | %.0f | %.0f | %.1fx | %.0f | %.1fx | %.1f |\n", tq, mbs(tq), pps(tq), tt/tq, iq/cgf, it/iq, mq/1024
    printf "| `quakecap flows` (1 thread) | %.2f | %.0f | %.0f | %.1fx | | | %.1f |\n", tq1, mbs(tq1), pps(tq1), tt/tq1, mq1/1024
    printf "| `tshark -q -z conv,udp` | %.2f | %.1f | %.0f | 1.0x | %.0f | 1.0x | %.1f |\n", tt, mbs(tt), pps(tt), it/cgf, mt/1024
    printf "| `cat FILE > /dev/null` | %.2f | %.0f | %.0f | %.0fx | %.0f | | %.1f |\n\n", tc, mbs(tc), pps(tc), tt/tc, ic/cgf, mc/1024
    printf "demos: %d files, %.1f MB\n\n", nd, db/1048576
    printf "| demo decode | wall s | MB/s | instructions/demo byte | max RSS MB |\n|---|---:|---:|---:|---:|\n"
    printf "| `quakecap flows DEMOS...` | %.3f | %.1f | %.1f | %.1f |\n", td, (td > 0 ? db/1048576/td : 0), id/db, md/1024
}'
