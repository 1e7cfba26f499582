#!/usr/bin/env python3
"""Writes the two captures of issue 43's renamed-kernel diff: ncu raw CSV exports (`ncu --import
R --csv --page raw`, `--set basic`) of two variants of one program on the H200.

Each variant runs three iterations of [kernel under test, helper]. The kernel under test is
`vectorize` in the baseline and `warp_tile` in the candidate — renamed, same grid (5120, 1, 1) and
block (256, 1, 1), 17.5 % slower (median 12.800 us -> 15.040 us) — and the helper `clear_flags`
(grid 1, block 128, median 1.408 us) is the same in both. Compared by name alone only the helper
matches: it holds 9.9 % of the baseline's GPU time and 8.6 % of the candidate's.

The header and units rows, and every column this script does not set, are those of a real export
in the repository (data/h200/multi_process_basic_raw.csv: `--set basic` on the H200, the first
kernel's row as the template), so the files have exactly the shape ncu writes. The columns set
here are the identity columns, the launch configuration and its occupancy limits, the durations
and elapsed cycles, and the throughputs: the kernel under test moves the same DRAM bytes in both
variants, so its DRAM throughput falls as its time grows (memory-bound at 86.4 % of the peak,
then 73.5 %), and the helper is a one-block latency-bound kernel. Durations are multiples of
32 ns, as ncu's are on the H200.

Run from the repository root: python3 tests/analysis/data/renamed_kernel/make_captures.py
"""
import csv
import io
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "..", "..", "data", "h200", "multi_process_basic_raw.csv")

SM_CLOCK_GHZ = 1.98  # the H200's SM clock under ncu's clock control (device__attribute_clock_rate)
DRAM_CLOCK_GHZ = 3.2
SMS = 132


def kernel(name, grid, block, durations_us, dram_pct, sm_pct, l1_pct, warps_pct, registers):
    return dict(name=name, grid=grid, block=block, durations_us=durations_us, dram_pct=dram_pct,
                sm_pct=sm_pct, l1_pct=l1_pct, warps_pct=warps_pct, registers=registers)


# The kernel under test moves the same bytes in both variants: 86.4 % of the DRAM peak at
# 12.8 us (memory-bound), 73.5 % at 15.04 us (under the 80 % memory threshold: latency-bound).
VECTORIZE = kernel("vectorize(const float4 *, float4 *, int)", (5120, 1, 1), (256, 1, 1),
                   [12.800, 12.864, 12.768], 86.4, 21.4, 38.2, 86.5, 24)
WARP_TILE = kernel("warp_tile(const float4 *, float4 *, int)", (5120, 1, 1), (256, 1, 1),
                   [15.040, 15.104, 14.976], 73.5, 18.2, 32.5, 84.1, 32)
HELPER_BASE = kernel("clear_flags(int *, int)", (1, 1, 1), (128, 1, 1),
                     [1.408, 1.376, 1.440], 0.03, 0.01, 0.9, 6.1, 16)
HELPER_CAND = kernel("clear_flags(int *, int)", (1, 1, 1), (128, 1, 1),
                     [1.408, 1.440, 1.376], 0.03, 0.01, 0.9, 6.1, 16)


def fmt(value, decimals=6):
    return f"{value:.{decimals}f}"


def grouped(value):
    return f"{value:,}"


def row_for(template, header, k, launch, launch_id):
    row = list(template)
    col = {name: i for i, name in enumerate(header)}

    def put(name, value):
        row[col[name]] = value

    grid, block = k["grid"], k["block"]
    blocks = grid[0] * grid[1] * grid[2]
    threads_per_block = block[0] * block[1] * block[2]
    duration = k["durations_us"][launch]
    put("ID", str(launch_id))
    put("Process Name", "bench")
    put("Kernel Name", k["name"])
    put("Block Size", f"({block[0]}, {block[1]}, {block[2]})")
    put("Grid Size", f"({grid[0]}, {grid[1]}, {grid[2]})")
    for stat in ("avg", "max", "min", "sum"):
        put(f"gpu__time_duration.{stat}", fmt(duration))
    # Elapsed cycles follow the duration (avg/max/min per unit; sum over the units).
    for unit, clock, count in (("gpc", SM_CLOCK_GHZ, 8), ("sm", SM_CLOCK_GHZ, SMS),
                               ("l1tex", SM_CLOCK_GHZ, SMS), ("smsp", SM_CLOCK_GHZ, 4 * SMS),
                               ("dram", DRAM_CLOCK_GHZ, 48), ("lts", 1.7, 94)):
        cycles = duration * 1000 * clock
        for stat in ("avg", "max", "min"):
            put(f"{unit}__cycles_elapsed.{stat}", fmt(cycles))
        put(f"{unit}__cycles_elapsed.sum", fmt(cycles * count))
    # Launch configuration and what limits its occupancy (2048 threads and 65536 registers per SM).
    for axis, value in zip("xyz", grid):
        put(f"launch__grid_dim_{axis}", str(value))
    for axis, value in zip("xyz", block):
        put(f"launch__block_dim_{axis}", str(value))
    # As ncu prints them: the grid size with thousands separators, the thread count without.
    put("launch__grid_size", grouped(blocks))
    put("launch__block_size", str(threads_per_block))
    put("launch__thread_count", str(blocks * threads_per_block))
    put("launch__registers_per_thread", str(k["registers"]))
    put("launch__registers_per_thread_allocated", fmt(k["registers"]))
    by_warps = 2048 // threads_per_block
    by_registers = 65536 // (k["registers"] * threads_per_block)
    put("launch__occupancy_limit_warps", fmt(min(by_warps, 32)))
    put("launch__occupancy_limit_registers", fmt(min(by_registers, 32)))
    per_sm = min(by_warps, by_registers, 32)
    put("launch__waves_per_multiprocessor", f"{blocks / (per_sm * SMS):.2f}")
    # Throughputs: DRAM (and the memory side's other units with it), SM, L1, occupancy.
    spread = {"avg": 1.0, "sum": 1.0, "max": 1.04, "min": 0.96}
    for stat, factor in spread.items():
        for name in ("gpu__dram_throughput", "gpu__compute_memory_throughput", "lts__throughput",
                     "dram__cycles_active", "fbpa__dram_sectors",
                     "gpu__compute_memory_access_throughput_internal_activity"):
            put(f"{name}.{stat}.pct_of_peak_sustained_elapsed", fmt(k["dram_pct"] * factor))
        put(f"sm__throughput.{stat}.pct_of_peak_sustained_elapsed", fmt(k["sm_pct"] * factor))
        put(f"l1tex__throughput.{stat}.pct_of_peak_sustained_active", fmt(k["l1_pct"] * factor))
        put(f"sm__warps_active.{stat}.pct_of_peak_sustained_active",
            fmt(k["warps_pct"] * factor))
    return row


def write(path, sequence, header, units, template):
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerow(units)
    for launch_id, (k, launch) in enumerate(sequence):
        writer.writerow(row_for(template, header, k, launch, launch_id))
    with open(path, "w", newline="") as f:
        f.write(out.getvalue())


def main():
    with open(SOURCE, newline="") as f:
        rows = list(csv.reader(f))
    header, units = rows[0], rows[1]
    template = next(r for r in rows[2:] if r[header.index("Kernel Name")].startswith("k_first"))
    for path, under_test, helper in (("vectorize_raw.csv", VECTORIZE, HELPER_BASE),
                                     ("warp_tile_raw.csv", WARP_TILE, HELPER_CAND)):
        sequence = [(k, i) for i in range(3) for k in (under_test, helper)]
        write(os.path.join(HERE, path), sequence, header, units, template)


if __name__ == "__main__":
    main()
