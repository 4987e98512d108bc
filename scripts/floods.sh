#!/usr/bin/env bash
# CPU and memory of `quakecap flows` under each kind of flood (issue 11): 400,000 spoofed
# datagrams merged into a stored capture by examples/mkflood.rs. Prints, per kind, the best
# user+sys CPU of FLOOD_RUNS runs, the peak RSS, and the CPU as a multiple of the random-UDP
# flood's (the goal: no kind above 3x, RSS under 150 MB). Not a test: timings belong here.
#
#   scripts/floods.sh              # 400,000 datagrams per flood
#   FLOOD_COUNT=100000 scripts/floods.sh
#
# Needs: cargo, GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${FLOOD_COUNT:-400000}
RUNS=${FLOOD_RUNS:-3}
OUT=bench-out/floods
mkdir -p "$OUT"
[ -x /usr/bin/time ] || { echo "floods: GNU time (/usr/bin/time) is required" >&2; exit 1; }
# The binary alone first: built with the examples, it would get their `testkit` feature.
cargo build --profile dist --quiet --bin quakecap
cargo build --profile dist --quiet --example mkflood
Q=target/dist/quakecap

# best CAPTURE: "cpu_s rss_kb" of the run with the least CPU.
best() {
    local best_cpu="" best_rss=""
    for _ in $(seq "$RUNS"); do
        read -r cpu rss < <(/usr/bin/time -f "%U %S %M" "$Q" flows --json "$1" 2>&1 >/dev/null \
            | tail -1 | awk '{printf "%.3f %d\n", $1 + $2, $3}')
        if [ -z "$best_cpu" ] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN{exit !(a < b)}'; then
            best_cpu=$cpu; best_rss=$rss
        fi
    done
    echo "$best_cpu $best_rss"
}

declare -A CPU RSS
for spec in q3-basic:random-udp q3-basic:q3-getinfo q3-basic:q3-connect \
            q3-basic:client-netchan q3-basic:server-netchan q3-basic:ip-fragments \
            qw-basic:qw-status qw-basic:qw-connect qw-basic:client-netchan; do
    base=${spec%%:*}; kind=${spec#*:}
    f="$OUT/$base-$kind.pcapng"
    [ -f "$f" ] || target/dist/examples/mkflood "captures/$base/capture.pcapng" "$kind" "$COUNT" "$f"
    read -r c r < <(best "$f")
    CPU[$spec]=$c; RSS[$spec]=$r
done
ref=${CPU[q3-basic:random-udp]}
printf '%-28s %9s %9s %8s\n' flood "cpu (s)" "rss (MB)" "x random"
for spec in q3-basic:random-udp q3-basic:q3-getinfo q3-basic:q3-connect \
            q3-basic:client-netchan q3-basic:server-netchan q3-basic:ip-fragments \
            qw-basic:qw-status qw-basic:qw-connect qw-basic:client-netchan; do
    awk -v s="$spec" -v c="${CPU[$spec]}" -v r="${RSS[$spec]}" -v ref="$ref" \
        'BEGIN { printf "%-28s %9.3f %9.1f %8.2f\n", s, c, r / 1024, c / ref }'
done
