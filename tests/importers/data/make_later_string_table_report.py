#!/usr/bin/env python3
"""Writes later_string_table.ncu-rep: a report whose only kernel result names metric ids that
block headers AFTER it add to the string table, the shape of a public ncu 2023.3 report of an
H800 (flyinglandlord/sglang @ 16ab0c9, profile.ncu-rep: its first result names ids 967-969, three
later block headers add one name each). The container as the reference material describes it:
"NVR\\0", a length-prefixed FileHeader, then length-prefixed BlockHeaders each followed by its
payload; the field numbers are those of kprof's own wire schema
(src/importers/ncu_rep/ncu_report_wire.proto). Rerun to regenerate; the bytes do not change."""
import os
import struct


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    if isinstance(value, float):
        return varint(number << 3 | 1) + struct.pack("<d", value)
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def framed(message):
    return struct.pack("<I", len(message)) + message


def metric(name_id, value):  # MetricResult{name_id = 1, value = 2 {double_value = 3}}
    return field(13, field(1, name_id) + field(2, field(3, value)))


def block(names, results=(), session=b""):
    payload = b"".join(framed(r) for r in results)
    header = field(1, 0) + field(2, len(results))
    if session:
        header += field(3, session)
    header += field(4, b"".join(field(1, n) for n in names))  # StringTable{strings = 1}
    header += field(5, len(payload))
    header += field(6, field(1, 406854) + field(2, "127.0.0.1") + field(3, "python"))
    return framed(header) + payload


def attribute(name, value):  # DeviceAttribute{name = 1, value = 2 {uint64_value = 5 | string_value = 1}}
    inner = field(1, value) if isinstance(value, str) else field(5, value)
    return field(3, field(1, name) + field(2, inner))


device = field(1, 0) + field(2, "NVIDIA H800")
for name, value in [("device__attribute_display_name", "NVIDIA H800"),
                    ("device__attribute_compute_capability_major", 9),
                    ("device__attribute_compute_capability_minor", 0),
                    ("device__attribute_multiprocessor_count", 132)]:
    device += attribute(name, value)
session = field(6, device)  # SessionDetails{devices = 6}

names = ["gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
         "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
result = (field(6, "pod_attention_kernel") + field(10, field(1, 132) + field(2, 1) + field(3, 1))
          + field(11, field(1, 128) + field(2, 1) + field(3, 1))
          + metric(0, 1500.0) + metric(1, 12.5) + metric(2, 81.0)
          + metric(3, 0.0) + metric(4, 0.0) + metric(5, 7.0))
report = (b"NVR\0" + framed(field(1, 7))
          + block(names, [result], session)
          + block(["nvlrx__bytes.sum.per_second"])
          + block(["nvltx__bytes.sum.per_second"])
          + block(["lts__gcomp_input_sectors.sum"]))
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "later_string_table.ncu-rep"),
          "wb") as out:
    out.write(report)
