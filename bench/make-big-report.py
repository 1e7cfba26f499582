#!/usr/bin/env python3
"""Builds a large .ncu-rep by repeating a real report's blocks after its file header: each copy
repeats its block headers (so its string table too: every result names strings that exist).
usage: bench/make-big-report.py data/h200/decode_eager_full.ncu-rep.zst OUT.ncu-rep [COPIES=11]"""
import struct
import subprocess
import sys

source, out = sys.argv[1], sys.argv[2]
copies = int(sys.argv[3]) if len(sys.argv) > 3 else 11
if source.endswith(".zst"):
    data = subprocess.run(["zstd", "-dc", source], check=True, capture_output=True).stdout
else:
    data = open(source, "rb").read()
assert data[:4] == b"NVR\0", "not an Nsight Compute report"
(header_size,) = struct.unpack_from("<I", data, 4)
head_end = 8 + header_size  # magic, file header length, file header
with open(out, "wb") as f:
    f.write(data[:head_end])
    for _ in range(copies):
        f.write(data[head_end:])
