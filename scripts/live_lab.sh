#!/usr/bin/env bash
# Follow a real Quake 3 match live: records a lab session (../shared/lab/q3/scenario.sh: a real
# ioq3ded server with bots and real ioquake3 clients on loopback) and, while it plays, runs
#
#   tcpdump -i lo -U -w - 'udp port 27960' | quakecap events --follow -
#
# Every line quakecap writes is printed with the wall clock at which it arrived, next to the
# session's own clock (when it started, when the match ended), so the output shows the events
# arriving during the match, not after it. At the end the live events are compared with the
# batch `events --json` of the capture the session recorded itself: the same kills and chat.
#
# Needs the lab's Debian packages (../shared/lab/README.md: ioquake3 ioquake3-server openarena
# openarena-server xvfb xauth libgl1-mesa-dri tshark) and tcpdump.
# Usage: scripts/live_lab.sh [OUTDIR]   (settings: CLIENTS, BOTS, PLAY, ACTIONS as scenario.sh;
# QUAKECAP: the binary, default target/release/quakecap, built when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
LAB=${LAB:-$(realpath -m ../shared/lab/q3)}
OUT=$(realpath -m "${1:-$(mktemp -d /tmp/live_lab.XXXX)}")
mkdir -p "$OUT"
Q=${QUAKECAP:-target/release/quakecap}
[ -x "$Q" ] || cargo build --release --quiet
for tool in tcpdump tshark /usr/lib/ioquake3/ioq3ded /usr/lib/ioquake3/ioquake3 xvfb-run; do
  command -v "$tool" >/dev/null || [ -x "$tool" ] || {
    echo "live_lab.sh: $tool is missing (see ../shared/lab/README.md; apt-get install tcpdump)" >&2
    exit 2
  }
done
export CLIENTS=${CLIENTS:-2} BOTS=${BOTS:-2} PLAY=${PLAY:-1}
export ACTIONS=${ACTIONS:-$LAB/fight.cfg}
stamp() { date +%H:%M:%S.%3N; }

# The live pipe starts first: tcpdump sees the session from its first packet.
tcpdump -i lo -U -w - 'udp port 27960' 2>"$OUT/tcpdump.log" \
  | "$Q" events --follow - 2>"$OUT/quakecap.stderr" \
  | while IFS= read -r line; do printf '%s  %s\n' "$(stamp)" "$line"; done >"$OUT/live.txt" &
pipe=$!
sleep 1
echo "$(stamp)  session starts (scenario.sh, $CLIENTS clients, $BOTS bots)"
"$LAB/scenario.sh" "$OUT/session" >"$OUT/scenario.log" 2>&1 || true
echo "$(stamp)  session over (the clients quit; the server is stopped)"
sleep 2
# Ctrl-C's signal to the follower's pipe: tcpdump ends, quakecap flushes and prints its summary.
pkill -INT -f "tcpdump -i lo -U -w - udp port 27960" || true
wait "$pipe" || true
cat "$OUT/live.txt"

# The same session's own capture, read whole: the events the live view had to give.
"$Q" events --json "$OUT/session/capture.pcapng" >"$OUT/batch.jsonl"
# Timeline lines: arrival clock, game clock, kind, what.
live_kills=$(awk '$3 == "kill"' "$OUT/live.txt" | wc -l)
live_chat=$(awk '$3 == "chat"' "$OUT/live.txt" | wc -l)
batch_kills=$(grep -c '"kind":"kill"' "$OUT/batch.jsonl" || true)
batch_chat=$(grep -c '"kind":"chat"' "$OUT/batch.jsonl" || true)
echo
echo "live: $live_kills kills, $live_chat chat lines; the recorded capture read whole: $batch_kills kills, $batch_chat chat lines"
echo "files in $OUT (live.txt, session/, batch.jsonl)"
[ "$live_kills" = "$batch_kills" ] && [ "$live_chat" = "$batch_chat" ]
