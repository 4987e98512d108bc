#!/bin/sh
# Follow soak (issue 42): an hour of capture time (q3-netquality replayed back to back, 25
# sessions of two players) followed by `events --replay 60` and `net --replay 60` at once, in
# about a minute; the resident memory of each is sampled every 2 s. Prints the peak RSS
# after the first minute of capture time (1 s of wall time at 60x) and at the end.
#
#   scripts/soak_follow.sh [SECONDS_OF_CAPTURE] [SPEED]
set -eu
cd "$(dirname "$0")/.."
secs=${1:-3600}
speed=${2:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo build -q --release --bin quakecap --example mksoak
target/release/examples/mksoak captures/q3-netquality/capture.pcapng "$tmp/soak.pcapng" "$secs"
bin=target/release/quakecap
$bin events --replay "$speed" --json "$tmp/soak.pcapng" >"$tmp/events.jsonl" &
ev=$!
$bin net --replay "$speed" --json "$tmp/soak.pcapng" >"$tmp/net.jsonl" &
net=$!
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
: >"$tmp/rss"
t=0
while kill -0 $ev 2>/dev/null || kill -0 $net 2>/dev/null; do
    echo "$t $(rss $ev) $(rss $net)" >>"$tmp/rss"
    sleep 2
    t=$((t + 2))
done
wait $ev
wait $net
# Peak after the first minute of capture time (wall >= 60/speed s, rounded up to a sample).
awk -v first=2 '
    $1 <= first { if ($2 > e1) e1 = $2; if ($3 > n1) n1 = $3 }
    { if ($2 > e) e = $2; if ($3 > n) n = $3; last = $1 }
    END {
        printf "events: peak RSS %d KB after the first minute, %d KB over %d s\n", e1, e, last
        printf "net:    peak RSS %d KB after the first minute, %d KB over %d s\n", n1, n, last
    }' "$tmp/rss"
echo "events: $(wc -l <"$tmp/events.jsonl") lines; net: $(grep -c '"type":"end"' "$tmp/net.jsonl") connections ended, $(grep -c '"type":"lag"' "$tmp/net.jsonl") lag lines"
