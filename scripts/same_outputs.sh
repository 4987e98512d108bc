#!/usr/bin/env bash
# Every output of every stored capture, demo and cut, as one manifest of hashes: to show
# that a change that must not change behaviour (a restructure) changes no output.
#
#   scripts/same_outputs.sh record OUT.txt [QUAKECAP]   write the manifest
#   scripts/same_outputs.sh compare A.txt B.txt         differences (exit 1 when any)
#
# A typical check: build the old commit's binary (`git worktree add`), record with it, record
# with the new one, compare. Outputs: flows --json, decode --json, decode --shownet,
# events --json, net --json, check --json, cheats --json, the demos `demo` writes (each
# file), the HTML report, diff --json of each capture against each client demo beside it,
# and export's summary line (Parquet files carry the writer's metadata; their rows are read
# by the tests). Cuts: each capture at 30 % and 60 % of its packets (pcapng blocks, by
# scripts/cut.py).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
compare)
  diff <(sort "$2") <(sort "$3") && echo "same: $(wc -l <"$2") outputs" ;
  exit $? ;;
record) ;;
*) sed -n 2,12p "$0"; exit 2 ;;
esac

OUT=$(realpath -m "$2")
Q=$(realpath "${3:-target/release/quakecap}")
SHARED=../shared
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

inputs=()
for f in "$SHARED"/captures/*/*.pcapng captures/*/*.pcapng "$SHARED"/demos/q3/*.dm_6? \
  "$SHARED"/demos/qw/*.mvd "$SHARED"/demos/qw/*.qwd "$SHARED"/captures/*/*.dm_6? \
  "$SHARED"/captures/*/*.dm_71 "$SHARED"/captures/*/*.qwd "$SHARED"/captures/*/*.mvd; do
  [ -e "$f" ] && inputs+=("$f")
done
for f in "$SHARED"/captures/*/capture.pcapng "$SHARED"/captures/*/server-side.pcapng; do
  [ -e "$f" ] || continue
  name=$(echo "$f" | tr '/.' '__')
  for pct in 30 60; do
    python3 scripts/cut.py "$f" "0.$pct" "$WORK/cut-$pct-$name.pcapng"
    inputs+=("$WORK/cut-$pct-$name.pcapng")
  done
done

h() { sha256sum | cut -c1-16; }
: >"$OUT"
for f in "${inputs[@]}"; do
  label=${f#"$WORK/"}
  for cmd in "flows --json" "decode --json" "decode --shownet" "events --json" "net --json" "check --json" \
    "cheats --json"; do
    # shellcheck disable=SC2086
    # From the input's folder: outputs name the file as given, and a cut's folder is temporary.
    out=$(cd "$(dirname "$f")" && "$Q" $cmd "$(basename "$f")" 2>/dev/null | h; echo "rc=${PIPESTATUS[0]}")
    echo "$label | $cmd | $(echo "$out" | tr '\n' ' ')" >>"$OUT"
  done
  d="$WORK/demo"; rm -rf "$d"; mkdir -p "$d"
  rc=0; "$Q" demo --out-dir "$d" "$f" >/dev/null 2>&1 || rc=$?
  for w in $(cd "$d" && ls | sort); do
    echo "$label | demo $w | $(h <"$d/$w")" >>"$OUT"
  done
  echo "$label | demo | rc=$rc" >>"$OUT"
  rc=0; (cd "$(dirname "$f")" && "$Q" report -o "$WORK/r.html" "$(basename "$f")") >/dev/null 2>&1 || rc=$?
  [ -f "$WORK/r.html" ] && echo "$label | report | $(h <"$WORK/r.html") rc=$rc" >>"$OUT"
  rm -f "$WORK/r.html"
  rm -rf "$WORK/x"
  echo "$label | export | $("$Q" export -o "$WORK/x" "$f" 2>&1 | sed "s|$WORK/||g" | h)" >>"$OUT"
done
for c in "$SHARED"/captures/*/capture.pcapng; do
  for dm in "$(dirname "$c")"/client*-demo*.*; do
    [ -e "$dm" ] || continue
    echo "$c~$dm | diff --json | $("$Q" diff --json "$c" "$dm" 2>/dev/null | h)" >>"$OUT"
  done
done
echo "$(wc -l <"$OUT") outputs recorded in $OUT"
