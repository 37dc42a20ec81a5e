"""Drives every lab job of Act III through `showdown serve --http` exactly as the UI sends it
(POST /api/job with the request's JSON, reading the Server-Sent Events), saves each report under
OUT, and compares the jobs' numbers with the CLI benchmarks run in the same call.

Usage: python3 bench/lab_jobs.py URL OUT [CLI_DIR]
  URL      the server (http://127.0.0.1:8799)
  OUT      folder for lab_<job>.json, lab_<job>.events.jsonl and lab_summary.txt
  CLI_DIR  folder with the same-call CLI outputs: kernels_cli.json, conv_cli.json,
           infer_cli.json, anatomy_cli.json (optional: without it, no comparison)
Prints a short table last.
"""
import json, os, statistics, sys, time

import serve_client  # bench/serve_client.py, beside this script

URL, OUT = sys.argv[1], sys.argv[2]
CLI = sys.argv[3] if len(sys.argv) > 3 else None
PEERS = os.environ.get("LAB_PEERS", "1") == "1"


def call(body):
    return serve_client.call(URL, body)


def job(name, body):
    """Runs one job; returns (final message, events, seconds)."""
    t0 = time.time()
    final, events = serve_client.job(URL, body)
    secs = time.time() - t0
    with open(os.path.join(OUT, f"lab_{name}.events.jsonl"), "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    with open(os.path.join(OUT, f"lab_{name}.json"), "w") as f:
        json.dump(final, f, indent=1)
    return final, events, secs


lines = []


def say(s):
    print(s, flush=True)
    lines.append(s)


status = call({"op": "peer_status"})
say(f"peer: ready={status['ready']} {status['note']}")
say(f"gpu at rest: {json.dumps(call({'op': 'gpu_state'}))[:200]}")

jobs = [
    ("kernels", {"op": "kernel_bench", "peers": PEERS}),
    ("ladder", {"op": "conv_ladder", "batch": 10000, "peers": PEERS, "dataset": os.environ.get("LAB_DATASET", "mnist-sample")}),
    ("infer", {"op": "infer_bench", "batches": [1, 32, 128, 1024], "peers": PEERS}),
    ("anatomy", {"op": "step_anatomy", "backend": "cuda", "precisions": ["fp32", "tf32", "fp16", "bf16"], "batch": 128, "steps": 20}),
    ("profile", {"op": "profile", "what": {"target": "kernel", "op": "gelu_erf", "dtype": "f16", "rows": 8192, "cols": 4096}}),
    ("profile_step", {"op": "profile", "what": {"target": "step", "precision": "fp16", "batch": 128}}),
]
results = {}
for name, body in jobs:
    final, events, secs = job(name, body)
    kinds = {}
    for e in events:
        k = e.get("stream")
        kinds[k] = kinds.get(k, 0) + 1
    if final is None or "ok" not in final:
        say(f"{name:<12} FAILED after {secs:.0f} s: {final}")
        continue
    r = final["ok"]
    results[name] = r
    say(f"{name:<12} ok in {secs:5.0f} s; events {kinds}; saved_run {r.get('saved_run')}")

k = results.get("kernels")
if k:
    say(f"kernels: {len(k['ours']['checks'])} checks, {sum(c['ok'] for c in k['ours']['checks'])} ok; "
        f"{len(k['ours']['bench'])} timings; {len(k['peers'])} PyTorch rows; peer_failure {k.get('peer_failure')}")
l = results.get("ladder")
if l:
    say(f"ladder: {len(l['ours']['rows'])} rows, {len(l['peers'])} PyTorch rows; ceilings {l['ours']['ceilings']}")
i = results.get("infer")
if i:
    say(f"infer: {sum(len(v['rows']) for v in i['variants'])} rows, {len(i['peers'])} PyTorch rows, checks "
        + ", ".join(f"{v['activation']} {v['check']['ok']}" for v in i['variants']))
a = results.get("anatomy")
if a:
    for c in a["contestants"]:
        g = c.get("graph_step_ms")
        say(f"anatomy {c['precision']}: {len(c['launches'])} launches, sum {c['sum_ms']:.4f} ms, launched {c['launched_step_ms']:.4f} ms, "
            f"graph {g if g is None else round(g, 4)} ms")
for p in ("profile", "profile_step"):
    r = results.get(p)
    if r:
        imp = r["import"]
        panels = call({"op": "ncu_panels", "import": imp["id"]})
        say(f"{p}: import {imp['id']} with {len(panels)} kernel(s) of panels; command: {r['command']}")
runs = call({"op": "lab_runs"})
say(f"lab runs kept: {len(runs['runs'])} ({', '.join(x['kind'] for x in runs['runs'])})")


def rel(a, b):
    return abs(a - b) / b if b else float("inf")


if CLI:
    say("job vs CLI (same call): p50 ms, largest relative difference")
    try:
        c = json.load(open(os.path.join(CLI, "kernels_cli.json")))
        pairs = [(r, next(x for x in c["ours"]["bench"] if x["op"] == r["op"] and x["dtype"] == r["dtype"]))
                 for r in k["ours"]["bench"]]
        worst = max(pairs, key=lambda p: rel(p[0]["ms_p50"], p[1]["ms_p50"]))
        say(f"  kernels: {len(pairs)} rows, worst {worst[0]['op']} {worst[0]['dtype']} job {worst[0]['ms_p50']:.4f} cli {worst[1]['ms_p50']:.4f} ({rel(worst[0]['ms_p50'], worst[1]['ms_p50']) * 100:.1f} %)")
    except Exception as e:  # noqa: BLE001
        say(f"  kernels: no comparison ({e})")
    try:
        c = json.load(open(os.path.join(CLI, "conv_cli.json")))
        key = lambda r: (r["layer"], r["implementation"])
        cm = {key(r): r for r in c["ours"]["rows"] if not r["implementation"].startswith("cpu")}
        pairs = [(r, cm[key(r)]) for r in l["ours"]["rows"] if key(r) in cm]
        worst = max(pairs, key=lambda p: rel(p[0]["ms_p50"], p[1]["ms_p50"]))
        say(f"  ladder: {len(pairs)} GPU rows, worst {key(worst[0])} job {worst[0]['ms_p50']:.4f} cli {worst[1]['ms_p50']:.4f} ({rel(worst[0]['ms_p50'], worst[1]['ms_p50']) * 100:.1f} %); "
            f"median {statistics.median(rel(a['ms_p50'], b['ms_p50']) for a, b in pairs) * 100:.1f} %")
    except Exception as e:  # noqa: BLE001
        say(f"  ladder: no comparison ({e})")
    try:
        c = json.load(open(os.path.join(CLI, "infer_cli.json")))
        key = lambda r: (r["implementation"], r["activation"], r["batch"])
        cm = {key(r): r for v in c["variants"] for r in v["rows"]}
        pairs = [(r, cm[key(r)]) for v in i["variants"] for r in v["rows"] if key(r) in cm]
        worst = max(pairs, key=lambda p: rel(p[0]["p50_ms"], p[1]["p50_ms"]))
        say(f"  infer: {len(pairs)} rows, worst {key(worst[0])} job {worst[0]['p50_ms']:.4f} cli {worst[1]['p50_ms']:.4f} ({rel(worst[0]['p50_ms'], worst[1]['p50_ms']) * 100:.1f} %); "
            f"median {statistics.median(rel(a['p50_ms'], b['p50_ms']) for a, b in pairs) * 100:.1f} %")
    except Exception as e:  # noqa: BLE001
        say(f"  infer: no comparison ({e})")
    try:
        c = json.load(open(os.path.join(CLI, "anatomy_cli.json")))
        for ja, ca in zip(a["contestants"], c["contestants"]):
            say(f"  anatomy {ja['precision']}: sum job {ja['sum_ms']:.4f} cli {ca['sum_ms']:.4f} ({rel(ja['sum_ms'], ca['sum_ms']) * 100:.1f} %), "
                f"graph job {ja.get('graph_step_ms')} cli {ca.get('graph_step_ms')}")
    except Exception as e:  # noqa: BLE001
        say(f"  anatomy: no comparison ({e})")

open(os.path.join(OUT, "lab_summary.txt"), "w").write("\n".join(lines) + "\n")
