#!/usr/bin/env bash
# Makes the Nsight Compute exports the importer's tests read, on a GPU machine with ncu and CuPy.
# Usage: make_exports.sh OUTDIR
set -euo pipefail
out=${1:?OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ncu --set full -f -o "$out/ours" python3 "$here/profile_target.py" > "$out/run.log" 2>&1
ncu --import "$out/ours.ncu-rep" --csv --page details > "$out/ours_details.csv"
ncu --import "$out/ours.ncu-rep" --csv --page details --print-units base > "$out/ours_details_base.csv"
ncu --import "$out/ours.ncu-rep" --csv --page raw > "$out/ours_raw.csv"
ncu --import "$out/ours.ncu-rep" --csv --page details --print-summary per-kernel > "$out/ours_summary.csv"
# A live run with the program's own output and ==PROF== lines mixed into the CSV.
ncu --csv --page details --section SpeedOfLight --section LaunchStats --section Occupancy python3 "$here/profile_target.py" > "$out/ours_mixed_stdout.csv" 2>&1
ls -la "$out"
