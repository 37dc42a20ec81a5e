#!/usr/bin/env python3
"""Activation/norm kernels: `showdown bench kernels --json` and the PyTorch peers
(anchor_kernels.py: eager and torch.compile/Triton) in the same call, side by side.

Usage: kernels_side_by_side.py SHOWDOWN REFERENCE_DIR [--json-out F] [--peer-log F]
(--peer-log: a saved anchor_kernels.py output from the same device call, instead of running it again)
"""
import argparse, json, subprocess, sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("showdown")
    ap.add_argument("reference")
    ap.add_argument("--json-out")
    ap.add_argument("--peer-log")
    a = ap.parse_args()
    ours = subprocess.run([a.showdown, "bench", "kernels", "--json"], capture_output=True, text=True)
    if ours.returncode != 0:
        print(ours.stderr, file=sys.stderr)
    ours = json.loads(ours.stdout)
    peers = []
    if a.peer_log:
        text = open(a.peer_log).read()
    else:
        text = subprocess.run([sys.executable, f"{a.reference}/anchor_kernels.py"], capture_output=True, text=True).stdout
    for line in text.splitlines():
        if line.startswith("{"):
            peers.append(json.loads(line))
    name = {"layernorm_gelu": "ln_gelu"}
    dt = {"f32": "float32", "f16": "float16"}
    copy = next((b for b in ours["bench"] if b["op"] == "copy"), None)
    peer_copy = next((q for q in peers if q.get("name") == "d2d_copy_1GiB"), None)
    print(f"{ours['device']}: 8192x4096, GB/s = (read + write) / median time")
    print(f"copy ceiling: ours {copy['gbps']:.0f} GB/s (same-size dtod); PyTorch's 1 GiB copy {peer_copy['gbps'] if peer_copy else float('nan'):.0f} GB/s")
    print(f"{'op':<15} {'type':<4} | {'ours':>6} {'p99 ms':>7} | {'eager':>6} {'compile':>7} | {'vs eager':>8} {'vs compile':>10}")
    rows = []
    for b in ours["bench"]:
        if b["op"] == "copy":
            continue
        get = lambda impl: next((q["gbps"] for q in peers if q.get("kind") == "op" and q["impl"] == impl
                                 and q["op"] == name.get(b["op"], b["op"]) and q["dtype"] == dt[b["dtype"]]), float("nan"))
        e, c = get("torch-eager"), get("torch-compile-triton")
        rows.append(dict(op=b["op"], dtype=b["dtype"], ours_gbps=b["gbps"], ours_p99_ms=b["ms_p99"], eager_gbps=e, compile_gbps=c))
        print(f"{b['op']:<15} {b['dtype']:<4} | {b['gbps']:>6.0f} {b['ms_p99']:>7.4f} | {e:>6.0f} {c:>7.0f} | {b['gbps'] / e:>7.2f}x {b['gbps'] / c:>9.2f}x")
    bad = [c for c in ours["checks"] if not c["ok"]]
    print(f"correctness: {len(ours['checks']) - len(bad)}/{len(ours['checks'])} checks within bounds")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(dict(ours=ours, peers=peers, rows=rows), f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
