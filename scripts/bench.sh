#!/usr/bin/env bash
# Benchmark of full decoding (issue 6). One command:
#
#   scripts/bench.sh            # 400 MB capture
#   BENCH_MB=1024 scripts/bench.sh
#
# Builds bench-out/bench.pcapng (git-ignored) from the stored captures with
# examples/mkbench.rs, then measures on it, in this run:
#   quakecap flows FILE        full decode of every message, both directions
#   quakecap cheats FILE       the cheat signals (every frame and usercmd), against flows
#   quakecap annotate FILE     the capture copied with a comment per game datagram
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
QL_DEMOS=${BENCH_QL_DEMOS:-$(dirname "$DEMOS")/ql}
OUT=bench-out
mkdir -p "$OUT"
for tool in tshark valgrind /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 1; }
done

# The binary alone first: built with the examples, it would get their `testkit` feature.
cargo build --profile dist --quiet --bin quakecap
cargo build --profile dist --quiet --example mkbench
Q=target/dist/quakecap
BIG=$OUT/bench.pcapng
SMALL=$OUT/bench-cg.pcapng
target/dist/examples/mkbench "$BIG" "$MB" "$LANES"
target/dist/examples/mkbench "$SMALL" "$CG_MB" "$LANES"

# best_of CMD...: "wall_s cpu_s max_rss_kb" of the fastest of $RUNS runs, by CPU time (on a
# loaded shared machine wall time mostly measures the other tenants), or by wall time with
# BEST_BY=wall (a multi-threaded run, whose point is the wall time).
best_of() {
    local best="" wall="" cpu="" rss=0 i w u s m c k
    for ((i = 0; i < RUNS; i++)); do
        /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >/dev/null 2>"$OUT/stderr.txt"
        read -r w u s m <"$OUT/time.txt"
        c=$(awk "BEGIN{print $u + $s}")
        k=$c
        [ "${BEST_BY:-cpu}" = wall ] && k=$w
        if [ -z "$best" ] || awk "BEGIN{exit !($k < $best)}"; then best=$k; wall=$w; cpu=$c; fi
        ((m > rss)) && rss=$m
    done
    echo "$wall $cpu $rss"
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
read -r t_cat c_cat m_cat < <(best_of cat "$BIG")
read -r t_q c_q m_q < <(BEST_BY=wall best_of "$Q" flows "$BIG")
read -r t_q1 c_q1 m_q1 < <(QUAKECAP_THREADS=1 best_of "$Q" flows "$BIG")
# `cheats` decodes every frame and usercmd in capture order (one thread): its cost against
# `flows` on one thread.
read -r t_ch c_ch m_ch < <(best_of "$Q" cheats "$BIG")
# `annotate` decodes every message in capture order and writes the capture again.
read -r t_an c_an m_an < <(best_of "$Q" annotate "$BIG" -o "$OUT/annotated.pcapng")
rm -f "$OUT/annotated.pcapng"
read -r t_ts c_ts m_ts < <(RUNS=1 best_of tshark -r "$BIG" -q -z conv,udp)
uptime

# Per packet = (instructions on the sample - instructions on an empty capture) / frames:
# tshark alone spends ~10^8 instructions starting up.
EMPTY=$OUT/empty.pcapng
target/dist/examples/mkbench "$EMPTY" 0 "$LANES"
i_q=$(($(instructions "$Q" flows "$SMALL") - $(instructions "$Q" flows "$EMPTY")))
i_q1=$(($(QUAKECAP_THREADS=1 instructions "$Q" flows "$SMALL") - $(instructions "$Q" flows "$EMPTY")))
i_ts=$(($(instructions tshark -r "$SMALL" -q -z conv,udp) - $(instructions tshark -r "$EMPTY" -q -z conv,udp)))
i_cat=$(($(instructions cat "$SMALL") - $(instructions cat "$EMPTY")))
i_ch=$(($(instructions "$Q" cheats "$SMALL") - $(instructions "$Q" cheats "$EMPTY")))
i_an=$(($(instructions "$Q" annotate "$SMALL" -o "$OUT/an.pcapng") - $(instructions "$Q" annotate "$EMPTY" -o "$OUT/an.pcapng")))
rm -f "$OUT/an.pcapng"

# Work per thread (router = capture, net, routing, netchan; then one per decode worker).
rm -f "$OUT"/cgt.*
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$OUT/cgt.out" \
    "$Q" flows "$SMALL" >/dev/null 2>&1
split=$(for f in "$OUT"/cgt.out-*; do awk '/^summary:/ {print $2; exit}' "$f"; done |
    awk '{v[NR] = $1; t += $1} END {for (i = 1; i <= NR; i++) printf "%s%s %.0f%%", (i > 1 ? ", " : ""), (i == 1 ? "router" : "worker " i - 1), 100 * v[i] / t}')
rm -f "$OUT"/cgt.*

# Peak memory against file size: the same layout at 1/8 of BENCH_MEM_MB and at BENCH_MEM_MB.
MEM_MB=${BENCH_MEM_MB:-1024}
mem_rows=""
for mb in $((MEM_MB / 8)) "$MEM_MB"; do
    f=$OUT/mem-$mb.pcapng
    target/dist/examples/mkbench "$f" "$mb" "$LANES"
    read -r t c m < <(RUNS=1 best_of "$Q" flows "$f")
    mem_rows+="| $(($(stat -c %s "$f") / 1048576)) MB | $t | $c | $((m / 1024)) |"$'\n'
    mem_big_mb=$(($(stat -c %s "$f") / 1048576)) mem_big_rss=$((m / 1024))
    rm -f "$f"
done

# Demo benchmark: every .dm_68 in the set, one process.
mapfile -t demo_files < <(ls "$DEMOS"/*.dm_6* 2>/dev/null)
demo_bytes=$(cat "${demo_files[@]}" | wc -c)
read -r t_demo c_demo m_demo < <(RUNS=$((RUNS * 2)) best_of "$Q" flows "${demo_files[@]}")
i_demo=$(instructions "$Q" flows "${demo_files[@]}")
# Quake Live's demos (.dm_73/90/91): the same decoders with their own field tables.
mapfile -t ql_files < <(ls "$QL_DEMOS"/*.dm_* 2>/dev/null)
ql_bytes=$(cat "${ql_files[@]}" /dev/null | wc -c)
i_ql=0
[ "${#ql_files[@]}" -gt 0 ] && i_ql=$(instructions "$Q" flows "${ql_files[@]}")

# Where the instructions go (one thread), by layer of the pipeline; the whole profiles stay
# in bench-out/ for callgrind_annotate.
QUAKECAP_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$OUT/profile-capture.out" \
    "$Q" flows "$SMALL" >/dev/null 2>&1
valgrind --tool=callgrind --callgrind-out-file="$OUT/profile-demos.out" \
    "$Q" flows "${demo_files[@]}" >/dev/null 2>&1
layers() { callgrind_annotate --inclusive=no --auto=no --threshold=100 "$1" | awk "${@:2}" -f scripts/profile-layers.awk; }
layers_capture=$(layers "$OUT/profile-capture.out" -v per="$cg_frames" -v unit=packet)
layers_demos=$(layers "$OUT/profile-demos.out" -v per="$demo_bytes" -v unit="demo byte" -v dec=1)

awk -v bytes="$bytes" -v frames="$frames" -v flows="$flows" -v cgf="$cg_frames" \
    -v tc="$t_cat" -v tq="$t_q" -v tq1="$t_q1" -v tt="$t_ts" \
    -v cc="$c_cat" -v cq="$c_q" -v cq1="$c_q1" -v ct="$c_ts" \
    -v mc="$m_cat" -v mq="$m_q" -v mq1="$m_q1" -v mt="$m_ts" \
    -v iq="$i_q" -v iq1="$i_q1" -v it="$i_ts" -v ic="$i_cat" \
    -v tch="$t_ch" -v cch="$c_ch" -v ich="$i_ch" -v mch="$m_ch" \
    -v tan="$t_an" -v can="$c_an" -v ian="$i_an" -v man="$m_an" \
    -v cores="$(nproc)" -v db="$demo_bytes" -v nd="${#demo_files[@]}" -v td="$t_demo" -v cd="$c_demo" -v md="$m_demo" -v id="$i_demo" '
function r(n, d) { return d > 0 ? n / d : 0 }
function row(name, w, c, i, m) {
    printf "| %s | %.2f | %.2f | %.0f | %.0f | %.1fx | %.1fx | %s | %s | %.1f |\n", name, w, c, r(bytes/1048576, w), r(frames, w), r(tt, w), r(ct, c), \
        (i == "" ? "" : sprintf("%.0f", i/cgf)), (i == "" ? "" : sprintf("%.1fx", r(it, i))), m/1024
}
BEGIN {
    printf "capture: %.0f MB, %d frames, %d flows; instruction counts on a %d-frame capture built the same way, startup excluded\n\n", bytes/1048576, frames, flows, cgf
    printf "| command | wall s | CPU s | MB/s (wall) | packets/s (wall) | speed vs tshark (wall) | speed vs tshark (CPU) | instructions/packet | vs tshark (instructions) | max RSS MB |\n"
    printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    row("`quakecap flows` (" cores " decode threads + reader)", tq, cq, iq, mq)
    row("`quakecap flows` (QUAKECAP_THREADS=1)", tq1, cq1, iq1, mq1)
    row("`quakecap cheats` (" sprintf("%.2f", r(cch, cq1)) "x the CPU of one-thread `flows`)", tch, cch, ich, mch)
    row("`quakecap annotate` (" sprintf("%.2f", r(can, cq1)) "x the CPU of one-thread `flows`)", tan, can, ian, man)
    row("`tshark -r FILE -q -z conv,udp`", tt, ct, it, mt)
    row("`cat FILE > /dev/null`", tc, cc, ic, mc)
    printf "\ndemos: %d files, %.1f MB\n\n", nd, db/1048576
    printf "| demo decode | wall s | CPU s | MB/s (wall) | MB/s (CPU) | instructions/demo byte | max RSS MB |\n|---|---:|---:|---:|---:|---:|---:|\n"
    printf "| `quakecap flows DEMOS...` | %.3f | %.3f | %.1f | %.1f | %.1f | %.1f |\n", td, cd, r(db/1048576, td), r(db/1048576, cd), r(id, db), md/1024
}'
printf "\ninstructions per thread (quakecap flows, sample capture): %s\n" "$split"
printf "\n| capture size | quakecap flows wall s | CPU s | max RSS MB |\n|---:|---:|---:|---:|\n%s" "$mem_rows"
printf "\nwhere the instructions go, capture (one thread):\n\n%s\n" "$layers_capture"
printf "\nwhere the instructions go, demos:\n\n%s\n" "$layers_demos"

# Issue 6's targets, said plainly, so that a regression shows in the output (a demo decode
# that crept from 48.9 to 54.1 instructions per byte went unnoticed for a day).
awk -v iq1="$i_q1" -v it="$i_ts" -v id="$i_demo" -v db="$demo_bytes" \
    -v iql="$i_ql" -v qlb="$ql_bytes" -v nql="${#ql_files[@]}" -v qld="$QL_DEMOS" \
    -v mb="$mem_big_mb" -v rss="$mem_big_rss" '
function verdict(ok) { return ok ? "met" : "NOT MET" }
BEGIN {
    x = it / iq1; d = id / db
    printf "\ntargets (issue 6):\n"
    printf "- full decode, one thread: %.1fx tshark by instructions (goal >= 10x): %s\n", x, verdict(x >= 10)
    printf "- demo decoding: %.1f instructions per demo byte (goal <= 50): %s\n", d, verdict(d <= 50)
    if (nql > 0) { q = iql / qlb; printf "- Quake Live demo decoding (%d files, %.1f MB): %.1f instructions per demo byte (goal <= 50): %s\n", nql, qlb / 1048576, q, verdict(q <= 50) }
    else printf "- Quake Live demo decoding: no demos in %s (BENCH_QL_DEMOS)\n", qld
    printf "- peak memory on the %d MB capture: %d MB (goal: flat, under 100 MB at 1 GB): %s\n", mb, rss, verdict(rss < 100)
}'

# Issue 13's goal: `net` at most 1.2x the CPU of `flows` on this capture, one thread; issue
# 45's: `report` (game events, the page's data and summaries) at most 1.3x. Taken in turn, least of RUNS each: the VM's speed drifts between runs, and a ratio
# of two best-of-3 measured minutes apart moves by 10 %.
rm -f "$OUT/nq.txt"
for ((i = 0; i < RUNS; i++)); do
    for c in flows net report; do
        a=("$c")
        [ "$c" = report ] && a=(report -o "$OUT/report.html")
        QUAKECAP_THREADS=1 /usr/bin/time -f "$c %U %S %M" -a -o "$OUT/nq.txt" "$Q" "${a[@]}" "$BIG" >/dev/null 2>&1
    done
done
awk '
function verdict(ok) { return ok ? "met" : "NOT MET" }
{ c = $2 + $3; if (!($1 in m) || c < m[$1]) m[$1] = c; if ($4 > r[$1]) r[$1] = $4 }
END {
    printf "\ntargets (issues 13 and 45, one thread, least CPU of %d runs each):\n", NR / 3
    goal["net"] = 1.2; goal["report"] = 1.3
    for (k in m) if (k != "flows")
        printf "- %s: %.2f s CPU against flows %.2f s = %.2fx (goal <= %.1fx), peak RSS %d MB: %s\n", k, m[k], m["flows"], m[k] / m["flows"], goal[k], r[k] / 1024, verdict(m[k] <= goal[k] * m["flows"])
}' "$OUT/nq.txt"
# The same by instructions (callgrind, the small capture, one thread): stable from run to run,
# where the CPU times above move by 10 % on a shared machine.
i_net=$(($(QUAKECAP_THREADS=1 instructions "$Q" net "$SMALL") - $(instructions "$Q" net "$EMPTY")))
i_rep=$(($(QUAKECAP_THREADS=1 instructions "$Q" report -o "$OUT/report-cg.html" "$SMALL") - $(instructions "$Q" report -o "$OUT/report-cg.html" "$EMPTY")))
awk -v q="$i_q1" -v n="$i_net" -v r="$i_rep" -v mb="$CG_MB" 'BEGIN {
    printf "- by instructions on the %d MB capture, one thread: flows %.1f M, net %.1f M (%.2fx), report %.1f M (%.2fx, goal <= 1.3x): %s\n", mb, q / 1e6, n / 1e6, n / q, r / 1e6, r / q, (r <= 1.3 * q) ? "met" : "NOT MET"
}'
