#!/usr/bin/env bash
# Mid-session lock-on sweep (issue 17): cut captures every STEP % of their frames (editcap -r,
# as `tests/mid_session.rs` cuts them) and print, per cut and connection, the packet and the
# seconds of its traffic after which quakecap locked on and from which side (c2s: the
# client-message search; s2c: the server-message guess or the message ends), then every
# connection over 2 s or without a lock-on. The tests cut at 10/30/50/80 %; this finds the
# points between them where a lock-on comes late.
#
#   scripts/lock_sweep.sh                      # the stored protocol-68 captures, every 5 %
#   STEP=10 scripts/lock_sweep.sh captures/q3-ctf/capture.pcapng my.pcapng
#
# Needs: cargo, editcap and capinfos (Debian's wireshark-common, with tshark), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
STEP=${STEP:-5}
for tool in editcap capinfos python3; do
    command -v "$tool" >/dev/null || { echo "lock_sweep: $tool is required" >&2; exit 1; }
done
if [ $# -eq 0 ]; then
    set --
    for c in q3-basic q3-two-clients q3-events q3-impaired q3-mapchange q3-download q3-ctf; do
        for root in captures ../shared/captures; do
            if [ -f "$root/$c/capture.pcapng" ]; then set -- "$@" "$root/$c/capture.pcapng"; break; fi
        done
    done
fi
# One line per connection of a cut, from the mid_session error `flows --json` gives.
PARSE='
import json, re, sys
name, pct = sys.argv[1], sys.argv[2]
for f in json.load(sys.stdin):
    fid = f["id"]
    for e in f.get("error_details", []):
        if e.get("kind") != "mid_session":
            continue
        m = re.search(r"locked on at packet (\d+) of the connection \(([\d.]+) s\)(, from client messages)?", e["message"])
        if m:
            side = "c2s" if m.group(3) else "s2c"
            print(f"{name} {pct}% flow {fid}: packet {m.group(1)}, {m.group(2)} s, {side}")
        else:
            print(f"{name} {pct}% flow {fid}: NO lock-on")
'
cargo build --profile dist --quiet --bin quakecap
Q=target/dist/quakecap
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for cap in "$@"; do
    name=$(basename "$(dirname "$cap")")
    n=$(capinfos -c -M "$cap" | awk '/Number of packets/ {print $NF}')
    for ((p = STEP; p < 100; p += STEP)); do
        skip=$((n * p / 100))
        editcap -r "$cap" "$TMP/cut.pcapng" "$((skip + 1))-$n" >/dev/null
        "$Q" flows --json "$TMP/cut.pcapng" | python3 -c "$PARSE" "$name" "$p"
    done
done | tee "$TMP/all.txt"
echo "--- over 2 s or not locked on:"
awk '/NO lock-on/ || ($7 + 0 > 2.0)' "$TMP/all.txt"
