#!/usr/bin/env python3
"""Writes a large Nsight Compute raw-page export for the import and reply benchmarks: the real
export compute/core/tests/data/ncu/ours_raw.csv (2,238 columns) with its kernel rows repeated
under fresh IDs.

    python3 bench/make_big_ncu_raw.py /tmp/raw100.csv [MEGABYTES]
    /usr/bin/time -f "%e s, %M KB" target/release/showdown ncu import /tmp/raw100.csv

    # 60,000 kernels with only the identity columns and the metrics the seven panels read
    # (about 20 MiB: the import of issue 38's reply-budget check)
    python3 bench/make_big_ncu_raw.py /tmp/raw60k.csv --kernels 60000 --narrow
"""
import argparse
import csv
import pathlib

# Key metrics of the seven panels (compute/core/src/ncu/panel.rs): with --narrow only these
# columns and the identity columns are kept.
PANEL_METRICS = [
    "gpu__time_duration.sum", "launch__block_size", "launch__grid_size",
    "launch__registers_per_thread", "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic", "launch__waves_per_multiprocessor",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_warps",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
]
IDENTITY = 11  # ID … CC

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("out")
ap.add_argument("megabytes", nargs="?", type=float, default=100.0)
ap.add_argument("--kernels", type=int, help="write this many kernels (not MEGABYTES)")
ap.add_argument("--narrow", action="store_true", help="only the columns the panels read")
a = ap.parse_args()

src = pathlib.Path(__file__).resolve().parent.parent / "compute/core/tests/data/ncu/ours_raw.csv"
with open(src, newline="") as f:
    rows = list(csv.reader(f))
head, body = rows[:2], rows[2:]
keep = range(len(head[0]))
if a.narrow:
    keep = [i for i, name in enumerate(head[0])
            if i < IDENTITY or name in PANEL_METRICS]
with open(a.out, "w", newline="") as f:
    w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in head:
        w.writerow([r[i] for i in keep])
    i = 0
    while (i < a.kernels) if a.kernels is not None else (f.tell() < a.megabytes * 1024 * 1024):
        r = body[i % len(body)]
        r = [str(i) if c == 0 else r[c] for c in keep]
        w.writerow(r)
        i += 1
    size = f.tell()
print(f"{a.out}: {i} kernels, {len(keep)} columns, {size / 2**20:.1f} MiB")
