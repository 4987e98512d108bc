#!/bin/bash
# Record a Quake 3 lab session in which client 1's clock runs fast, as a speed hack makes it:
# its ioquake3 runs under libfaketime (`faketime -f "+0 xRATE"`: every clock the process
# reads runs RATE times as fast), with ../shared/lab/q3/scenario.sh's defaults otherwise
# (2 real clients, 2 bots, oa_dm1, the default script). `timescale` cannot stand in: the
# server's systeminfo overrides the client's.
# Needs the lab's Debian packages (see scenario.sh) and `faketime`.
# QuakeWorld (GAME=qw): ../shared/lab/qw's `basic` scenario (mvdsv + KTX, one ezQuake client,
# the client under libfaketime); needs that lab's packages (see its README).
# Usage: [GAME=qw] scripts/lab_fastclock.sh OUTDIR [RATE]      (RATE 1.3 by default)
set -eu
OUT=${1:?usage: [GAME=qw] lab_fastclock.sh OUTDIR [RATE]}
RATE=${2:-1.3}
command -v faketime >/dev/null || { echo "needs faketime (Debian package faketime)" >&2; exit 2; }
if [ "${GAME:-q3}" = qw ]; then
  QWLAB=$(realpath "$(dirname "$0")/../../shared/lab/qw")
  WORK=$(mktemp -d /tmp/fastclock-qw.XXXX)
  trap 'rm -rf "$WORK"' EXIT
  cp -r "$QWLAB/." "$WORK/" && chmod -R u+w "$WORK"
  printf '#!/bin/bash\nexec faketime -f "+0 x%s" /usr/lib/games/ezquake/ezquake "$@"\n' "$RATE" > "$WORK/ezquake-fast"
  chmod +x "$WORK/ezquake-fast"
  sed -i "s#\[\"/usr/lib/games/ezquake/ezquake\"#[\"$WORK/ezquake-fast\"#" "$WORK/qwlab.py"
  grep -q ezquake-fast "$WORK/qwlab.py" || { echo "qwlab.py changed: the client line was not found" >&2; exit 2; }
  (cd "$WORK" && sh setup.sh && python3 run_capture.py basic "$(realpath -m "$OUT")")
  # ezQuake under a faked clock may not quit when told: end what is left of it.
  pkill -9 -f "ezquake -basedir /tmp/qwlab/cli" || true
  echo "FASTCLOCK: client 1 under faketime -f '+0 x$RATE'" >> "$OUT/SETTINGS"
  exit 0
fi
LAB=$(realpath "$(dirname "$0")/../../shared/lab/q3")
[ -f "$LAB/scenario.sh" ] || { echo "no $LAB/scenario.sh" >&2; exit 2; }
WORK=$(mktemp -d /tmp/fastclock.XXXX)
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/ioquake3-fast" <<EOF
#!/bin/bash
exec faketime -f "+0 x$RATE" /usr/lib/ioquake3/ioquake3 "\$@"
EOF
chmod +x "$WORK/ioquake3-fast"
# The lab script, with client 1's engine wrapped and its own paths made absolute.
sed -e "s#\$(dirname \$(realpath \$0))#$LAB#g" \
    -e "s#xvfb-run -a -s \"-screen 0 640x480x24\" /usr/lib/ioquake3/ioquake3#xvfb-run -a -s \"-screen 0 640x480x24\" \$( [ \"\$c\" = 1 ] \&\& echo $WORK/ioquake3-fast || echo /usr/lib/ioquake3/ioquake3 )#" \
    "$LAB/scenario.sh" > "$WORK/scenario.sh"
grep -q ioquake3-fast "$WORK/scenario.sh" || { echo "scenario.sh changed: the client line was not found" >&2; exit 2; }
CLIENTS=${CLIENTS:-2} BOTS=${BOTS:-2} bash "$WORK/scenario.sh" "$OUT"
echo "FASTCLOCK: client 1 under faketime -f '+0 x$RATE'" >> "$OUT/SETTINGS"
