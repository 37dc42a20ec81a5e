"""Act II's duel with PyTorch (served as the app sends it) against `showdown bench duel` in the
same call: our speed-up over each PyTorch variant in both, and whether they agree within 10 %.

Usage: duel_pytorch_check.py SERVED.sse BENCH_DUEL.json
Pairs (served variant <- bench duel's reference-script variant): eager-fp32 <- eager-fp32-strict,
graph-fp32 <- graph-fp32-strict, eager-fp16 <- eager-amp-fp16,
graph-fp16 <- graph-amp-fp16-static-scale-1024, graph-bf16 <- graph-amp-bf16.
"""
import json
import sys

PAIRS = {
    "eager-fp32": "eager-fp32-strict",
    "graph-fp32": "graph-fp32-strict",
    "eager-fp16": "eager-amp-fp16",
    "graph-fp16": "graph-amp-fp16-static-scale-1024",
    "graph-bf16": "graph-amp-bf16",
}


def median_of_timed(epochs):
    ms = sorted(e["ms"] for e in (epochs[1:] if len(epochs) > 1 else epochs))
    n = len(ms)
    return ms[n // 2] if n % 2 else (ms[n // 2 - 1] + ms[n // 2]) / 2


lines = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
last = lines[-1]
if "ok" not in last:
    print("served duel with PyTorch: FAILED", json.dumps(last)[:400])
    sys.exit(1)
served = last["ok"]["report"] if "report" in last["ok"] else last["ok"]
peer = served.get("peer") or {}
ours = {r["precision"]: r["epoch_ms_median"] for r in served["runs"]}
print(f"served: {served['device']}; {len(lines) - 1} events; saved_run {last['ok'].get('saved_run')}; "
      f"PyTorch {peer.get('torch')} on {peer.get('device')}; note {peer.get('note')}; skipped {peer.get('skipped')}")
bench = json.load(open(sys.argv[2]))
b_ours = {r["precision"]: r["epoch_ms_median"] for r in bench["ours"]["runs"]}
b_peer = {p["variant"]: p["epoch_ms_median"] for p in bench.get("peers", [])}
print(f"{'variant':<12} {'prec':<5} {'ours ms':>8} {'torch ms':>9} {'speed-up':>9} | {'bench: ours':>11} {'torch':>8} {'speed-up':>9} | agree")
worst = 0.0
pairs = 0
if not peer.get("runs"):
    print("served duel: PyTorch gave no run", peer.get("note"))
    sys.exit(1)
for r in peer.get("runs", []):
    p, v = r["precision"], r["variant"]
    t = median_of_timed(r["epochs"])
    s = t / ours[p]
    acc = r["epochs"][-1]["test_accuracy"]
    row = f"{v:<12} {p:<5} {ours[p]:>8.1f} {t:>9.1f} {s:>8.2f}x"
    ref = PAIRS.get(v)
    if ref in b_peer and p in b_ours:
        bs = b_peer[ref] / b_ours[p]
        d = abs(s / bs - 1)
        worst = max(worst, d)
        pairs += 1
        row += f" | {b_ours[p]:>11.1f} {b_peer[ref]:>8.1f} {bs:>8.2f}x | {d * 100:.1f} % ({ref})"
    else:
        row += " | (no bench duel row)"
    print(row + f"  acc {acc:.4f}  peak {r.get('peak_memory_bytes')}")
if pairs == 0:
    print("no PyTorch variant of the served duel has a bench duel row to compare with")
    sys.exit(1)
print(f"largest disagreement of our speed-up between the served duel and bench duel over {pairs} pairs: "
      f"{worst * 100:.1f} % ({'within' if worst <= 0.10 else 'OUTSIDE'} 10 %)")
status = 0 if worst <= 0.10 else 2
# The comparison `bench duel` prints: each of ours against PyTorch's fastest run at batch 128
# (any precision, any mode), served and bench duel side by side.
best_served = min(median_of_timed(r["epochs"]) for r in peer["runs"])
bench_best = bench.get("best_peer_ms")
if bench_best:
    for p, ms in ours.items():
        s, b = best_served / ms, bench_best / b_ours[p]
        print(f"vs fastest PyTorch at batch 128 (any precision): {p:<5} served {s:.2f}x (of {best_served:.1f} ms), "
              f"bench duel {b:.2f}x (of {bench_best:.1f} ms): {abs(s / b - 1) * 100:.1f} % apart")
sys.exit(status)
