#!/usr/bin/env python3
"""A capture cut mid-session: `cut.py SRC.pcapng FRACTION OUT.pcapng` drops the first FRACTION
of the packets (pcapng enhanced/simple packet blocks; section and interface blocks kept), so
the rest starts in the middle of every connection (scripts/same_outputs.sh)."""
import struct
import sys

src, frac, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
data = open(src, "rb").read()
blocks, i = [], 0
while i + 8 <= len(data):
    kind, length = struct.unpack_from("<II", data, i)
    if length < 12:
        break
    blocks.append((kind, data[i : i + length]))
    i += length
packets = sum(1 for k, _ in blocks if k in (3, 6))
skip, seen = int(packets * frac), 0
with open(out, "wb") as o:
    for kind, block in blocks:
        if kind in (3, 6):
            seen += 1
            if seen <= skip:
                continue
        o.write(block)
