"""Compares a step anatomy's per-kernel times with Nsight Compute's gpu__time_duration for the
same kernels, and checks the anatomy's Chrome trace file.

Usage: python3 bench/anatomy_vs_ncu.py ANATOMY_JSON NCU_CSV PRECISION [TRACE_JSON]
  ANATOMY_JSON  `showdown bench anatomy --json-out` (or a step_anatomy job's reply)
  NCU_CSV       `ncu --csv --print-units base --metrics gpu__time_duration.sum ...` of one step
                of the same precision (`showdown profile-target`, launches in issue order)
Prints one row per launch (ours, ncu, difference, difference in µs) and the share within 15 %;
then the median of ncu − ours over the launches, and the share within 15 % once that constant
is taken off: ncu's gpu__time_duration counts about a microsecond more than the kernel's own
execution as CUPTI records it, the same for a one-thread kernel as for a 100 µs one.
"""
import csv, io, json, sys

an = json.load(open(sys.argv[1]))
if "ok" in an:
    an = an["ok"]
prec = sys.argv[3]
c = next(x for x in an["contestants"] if x["precision"] == prec)
text = open(sys.argv[2]).read()
# ncu prints its own lines (==PROF==) before the CSV.
start = text.find('"ID"')
rows = list(csv.DictReader(io.StringIO(text[start:])))
ncu = []
for r in rows:
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "ns")
    scale = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0}.get(unit, 1e-6)
    ncu.append((r["Kernel Name"], v * scale))
ours = c["launches"]
print(f"{prec}: {len(ours)} launches in the anatomy, {len(ncu)} kernels in ncu")
print(f"clock: {an.get('clock', '?')}")
print(f"{'#':>3} {'kernel':<34} {'ours µs':>9} {'ncu µs':>9} {'diff':>7} {'ncu-ours µs':>12}")
within = 0
n = min(len(ours), len(ncu))
gaps = []
for i in range(n):
    o, (name, ms) = ours[i], ncu[i]
    same = o["name"] == name or name.startswith(o["name"])
    d = (o["ms"] - ms) / ms if ms else float("inf")
    within += abs(d) <= 0.15
    gaps.append((ms - o["ms"]) * 1e3)
    print(f"{i:>3} {o['name']:<34} {o['ms'] * 1e3:9.2f} {ms * 1e3:9.2f} {d * 100:6.1f}% {gaps[-1]:12.2f}{'' if same else '  name differs: ' + name}")
so, sn = sum(o["ms"] for o in ours[:n]), sum(ms for _, ms in ncu[:n])
print(f"sum: ours {so * 1e3:.1f} µs, ncu {sn * 1e3:.1f} µs ({(so - sn) / sn * 100:+.1f} %); {within}/{n} launches within 15 %")
if gaps:
    off = sorted(gaps)[len(gaps) // 2]
    within_off = sum(abs(o["ms"] * 1e3 + off - ms * 1e3) <= 0.15 * ms * 1e3 for o, (_, ms) in zip(ours[:n], ncu[:n]))
    print(f"ncu - ours: median {off:.2f} µs (min {min(gaps):.2f}, max {max(gaps):.2f}); "
          f"ours + {off:.2f} µs within 15 % of ncu: {within_off}/{n} launches")
if len(sys.argv) > 4:
    t = json.load(open(sys.argv[4]))
    ev = t["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    assert all("ts" in e and "dur" in e and "name" in e for e in xs)
    print(f"trace: valid JSON, {len(ev)} events ({len(xs)} complete events)")
