#!/usr/bin/env python3
"""Writes a large Nsight Compute raw-page export (default 100 MB) for the import benchmark:
the real export compute/core/tests/data/ncu/ours_raw.csv (2,238 columns) with its kernel rows
repeated under fresh IDs.

    python3 bench/make_big_ncu_raw.py /tmp/raw100.csv [MEGABYTES]
    /usr/bin/time -f "%e s, %M KB" target/release/showdown ncu import /tmp/raw100.csv
"""
import csv
import pathlib
import sys

out_path = sys.argv[1]
megabytes = float(sys.argv[2]) if len(sys.argv) > 2 else 100
src = pathlib.Path(__file__).resolve().parent.parent / "compute/core/tests/data/ncu/ours_raw.csv"
with open(src, newline="") as f:
    rows = list(csv.reader(f))
head, body = rows[:2], rows[2:]
with open(out_path, "w", newline="") as f:
    w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in head:
        w.writerow(r)
    i = 0
    while f.tell() < megabytes * 1024 * 1024:
        r = list(body[i % len(body)])
        r[0] = str(i)
        w.writerow(r)
        i += 1
print(f"{out_path}: {i} kernels")
