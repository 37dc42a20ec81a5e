"""Drives the visual explainer through `showdown serve --http` exactly as the UI does: a GPU duel
(POST /api/job, all four precisions), then Act I's forward pass of its FP32 and FP16 models on
real digits checked on the CUDA and on the CPU kernels (POST /api/call {"op":"explain"}), and
prints what Act II draws from the duel: gradient histograms against FP16 with and without the
loss scale, the loss scale's history, and the memory split against the peak.

Usage: python3 bench/explainer_jobs.py URL OUT [EPOCHS]
Saves explainer_duel.json and explainer_explain_<backend>.json under OUT; prints a short
table last.
"""
import json, os, sys, time

import serve_client  # bench/serve_client.py, beside this script

URL, OUT = sys.argv[1], sys.argv[2]
EPOCHS = int(sys.argv[3]) if len(sys.argv) > 3 else 2


def call(body):
    return serve_client.call(URL, body)


def job(body):
    final, events = serve_client.job(URL, body)
    return final, len(events)


def against_fp16(h, scale):
    """(flush, subnormal, overflow) of a log2 histogram's nonzero values times `scale`."""
    shift = int(round(__import__("math").log2(scale))) if scale > 0 else 0
    flush = sub = over = 0
    for i, c in enumerate(h["counts"]):
        e = -64 + i + shift
        if e < -24:
            flush += c
        elif e < -14:
            sub += c
        elif e > 15:
            over += c
    return flush, sub, over


t0 = time.time()
# EXPLAINER_BACKEND=cpu EXPLAINER_LIMIT=512 try the script on a machine without a GPU.
BACKEND = os.environ.get("EXPLAINER_BACKEND", "cuda")
config = {"backend": BACKEND, "epochs": EPOCHS,
          "precisions": ["fp32", "tf32", "fp16", "bf16"] if BACKEND == "cuda" else ["fp32", "fp16", "bf16"]}
if os.environ.get("EXPLAINER_LIMIT"):
    config["train_limit"] = int(os.environ["EXPLAINER_LIMIT"])
final, events = job({"op": "duel", "config": config})
if "ok" not in final:
    print("duel failed:", json.dumps(final)[:2000])
    sys.exit(1)
outcome = final["ok"]
report = outcome  # the report's fields, flattened, plus saved_run
run_id = outcome.get("saved_run")
with open(os.path.join(OUT, "explainer_duel.json"), "w") as f:
    json.dump(outcome, f)
print(f"duel: {report['device']} {report['dataset']['name']} {EPOCHS} epochs, {events} events, "
      f"{time.time() - t0:.1f} s, saved as {run_id}")
rows = []
for run in report["runs"]:
    p = run["precision"]
    mem = run.get("memory") or {}
    total = sum(mem.values())
    samples = run.get("grad_samples", [])
    first = samples[0] if samples else None
    flush_raw = flush_scaled = 0
    if first:
        for layer in first["layers"]:
            for kind in ("activations", "weights"):
                flush_raw += against_fp16(layer[kind], 1.0)[0]
                flush_scaled += against_fp16(layer[kind], first["loss_scale"])[0]
    rows.append((p, run["peak_memory_bytes"], total, mem.get("dataset", 0), mem.get("activations", 0),
                 mem.get("workspace", 0), len(samples), len(run.get("scale_history", [])),
                 first["loss_scale"] if first else None, flush_raw, flush_scaled,
                 run["skipped_steps"], run.get("model") is not None))

checks = []
for backend in (("cuda", "cpu") if BACKEND == "cuda" else ("cpu",)):
    worst, same, n = 0.0, 0, 0
    for index in range(16):
        r = call({"op": "explain", "run": run_id, "precisions": ["fp32", "fp16"], "backend": backend,
                  "digit": {"from": "dataset", "dataset": report["dataset"]["name"], "index": index}})
        if index == 0:
            with open(os.path.join(OUT, f"explainer_explain_{backend}.json"), "w") as f:
                json.dump(r, f)
        for m in r["models"]:
            c = m.get("backend_check")
            if c:
                worst = max(worst, c["max_abs_diff"])
                same += c["same_prediction"]
                n += 1
    checks.append((backend, worst, same, n))

print()
print("precision  peak B      split sum B  dataset B   activ. B   workspace B  samples  scale pts  "
      "scale@1  flush@1 raw→scaled  skipped  model")
for r in rows:
    print(f"{r[0]:<9}  {r[1]:<10}  {r[2]:<11}  {r[3]:<10}  {r[4]:<9}  {r[5]:<11}  {r[6]:<7}  {r[7]:<9}  "
          f"{r[8]!s:<7}  {r[9]:>8} → {r[10]:<8}  {r[11]:<7}  {r[12]}")
print()
for backend, worst, same, n in checks:
    print(f"explain fp32+fp16 models, 16 digits, checked on {backend}: max |Δ| {worst:.3e}, "
          f"same prediction {same}/{n}")
ok = all(r[1] == r[2] and r[6] > 0 and r[12] for r in rows) and all(n > 0 and same == n for _, _, same, n in checks)
print("explainer checks:", "ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
