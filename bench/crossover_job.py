"""Issue 39's GPU run: the precision crossover through `showdown serve --http` exactly as the app
sends it (POST /api/job, the body of Act II's Run with every precision, the CNN's GEMMs and
PyTorch beside it), the reply saved as OUT/crossover.json (and its events), then the issue's
"Done when" facts read from the numbers, never asserted: each line says what the machine gave.

Usage: python3 bench/crossover_job.py URL OUT [SIZES]
  URL    the server (http://127.0.0.1:8799)
  OUT    folder for crossover.json, crossover.events.jsonl, crossover.txt
  SIZES  comma-separated N (default: the GPU defaults, 64 to 16384)
"""
import json, os, sys

import serve_client  # bench/serve_client.py, beside this script

URL, OUT = sys.argv[1], sys.argv[2]
body = {"op": "crossover", "precisions": ["fp32", "tf32", "bf16", "fp16", "fp8"],
        "include_cnn": True, "include_peer": True}
if len(sys.argv) > 3:
    body["sizes"] = [int(s) for s in sys.argv[3].split(",") if s]
final, events = serve_client.job(URL, body)
with open(os.path.join(OUT, "crossover.events.jsonl"), "w") as f:
    for e in events:
        f.write(json.dumps(e) + "\n")
with open(os.path.join(OUT, "crossover.json"), "w") as f:
    json.dump(final, f, indent=1)
lines = []


def say(s):
    print(s, flush=True)
    lines.append(s)


if final is None or "ok" not in final:
    say(f"crossover FAILED: {final}")
    sys.exit(1)
r = final["ok"]
say(f"crossover on {r['device']} ({r['backend']}, {r['library']}): {len(r['points'])} points, "
    f"{len(events)} events, saved_run {r.get('saved_run')}")
say(f"ceilings: {json.dumps(r['ceilings'])}")
for s in r.get("skipped", []):
    say(f"skipped {s['precision']}: {s['reason']}")
if r.get("peer_failure"):
    say(f"PyTorch: {r['peer_failure']}")
say(f"PyTorch rows: {len(r.get('peers', []))}")
sq = {(p["precision"], p["shape"]["n"]): p for p in r["points"] if not p.get("label")}
sizes = sorted({n for (_, n) in sq})
for n in sizes:
    say(f"N={n:>6}: " + "  ".join(
        f"{pr} {sq[(pr, n)]['tflops']:.1f} TFLOP/s ({sq[(pr, n)]['regime']})" for pr in
        ["fp32", "tf32", "bf16", "fp16", "fp8"] if (pr, n) in sq))
top = sizes[-1] if sizes else None


def up(a, b, n):
    pa, pb = sq.get((a, n)), sq.get((b, n))
    return pb["ms_p50"] / pa["ms_p50"] if pa and pb else None


if top:
    say(f"FP8 over BF16 at the largest size N={top}: {up('fp8', 'bf16', top)}× (issue: >= 1.5)")
for pr in ("bf16", "fp16"):
    say(f"{pr} over FP32 at 8192: {up(pr, 'fp32', 8192)}× (issue: >= 4)")
cnn = [p for p in r["points"] if p.get("label")]
for p in cnn:
    if p["precision"] == "fp8":
        b = next((x for x in cnn if x["precision"] == "bf16" and x["label"] == p["label"]), None)
        if b:
            say(f"CNN {p['label']} {p['shape']['m']}x{p['shape']['n']}x{p['shape']['k']}: FP8 {p['ms_p50']:.4f} ms, "
                f"BF16 {b['ms_p50']:.4f} ms ({'slower' if p['ms_p50'] > b['ms_p50'] else 'FASTER'}), {p['regime']}")
bad = [p for p in r["points"] if not p["check"]["ok"]]
say(f"f64 checks: {len(r['points']) - len(bad)}/{len(r['points'])} pass"
    + "".join(f"; FAILED {p['precision']} {p.get('label') or p['shape']['n']} err {p['check']['max_rel_err']:.2e}" for p in bad[:5]))
for s in r["sentences"]:
    say(s)
with open(os.path.join(OUT, "crossover.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
