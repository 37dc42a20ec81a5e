#!/usr/bin/env python3
"""The GPU duel benchmark: `showdown duel --backend cuda` and the PyTorch peers (the reference
scripts anchor_graph.py and anchor_train.py … eager), in the same call on the same GPU,
printed side by side with ratios. One JSON document goes to --json-out.

Usage: duel_side_by_side.py SHOWDOWN DATA_DIR REFERENCE_DIR [--epochs 5] [--json-out F] [--skip-eager]
DATA_DIR holds Fashion-MNIST under the standard IDX names.
"""
import argparse, json, subprocess, sys


def lines_of_json(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("showdown")
    ap.add_argument("data")
    ap.add_argument("reference")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--json-out")
    ap.add_argument("--skip-eager", action="store_true")
    a = ap.parse_args()
    ours = subprocess.run([a.showdown, "duel", "--backend", "cuda", "--data-dir", a.data, "--dataset", "fashion-mnist",
                           "--epochs", str(a.epochs), "--precisions", "fp32,fp16,bf16", "--json"],
                          capture_output=True, text=True)
    if ours.returncode != 0:
        print(ours.stderr, file=sys.stderr)
        return 1
    ours = json.loads(ours.stdout)
    env_args = dict(capture_output=True, text=True)
    peers = lines_of_json(subprocess.run([sys.executable, f"{a.reference}/anchor_graph.py", a.data], **env_args).stdout)
    if not a.skip_eager:
        peers += lines_of_json(subprocess.run([sys.executable, f"{a.reference}/anchor_train.py", a.data, "eager"], **env_args).stdout)
    peers = [p for p in peers if "variant" in p and "epoch_ms_median" in p and not p.get("data", "").startswith("mnist10k")]
    # The ratio is against the fastest PyTorch variant at the same batch size (128).
    best = min((p["epoch_ms_median"] for p in peers if p.get("batch", 128) == 128), default=float("nan"))
    print(f"GPU duel, Fashion-MNIST 60k/10k, batch 128, {a.epochs} epochs, median of epochs 2-{a.epochs}; {ours['device']}")
    print(f"{'contestant':<34} | {'epoch ms':>9} | {'peak MB':>8} | {'test acc':>8} | {'vs best PyTorch bs128':>21}")
    print("-" * 92)
    rows = []
    for r in ours["runs"]:
        ms = r["epoch_ms_median"]
        row = dict(name=f"showdown {r['precision']}", epoch_ms=ms, peak_mb=r["peak_memory_bytes"] / 1e6, test_acc=r["test_accuracy"],
                   speedup_vs_best_pytorch=best / ms)
        rows.append(row)
        print(f"{row['name']:<34} | {ms:>9.1f} | {row['peak_mb']:>8.1f} | {row['test_acc']:>8.4f} | {best / ms:>20.2f}x")
    for p in peers:
        row = dict(name=f"pytorch {p['variant']}", epoch_ms=p["epoch_ms_median"], peak_mb=p.get("max_mem_alloc_mb", float("nan")) * 1.048576,
                   test_acc=p.get("test_acc", float("nan")))
        rows.append(row)
        print(f"{row['name']:<34} | {row['epoch_ms']:>9.1f} | {row['peak_mb']:>8.1f} | {row['test_acc']:>8.4f} |")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(dict(ours=ours, peers=peers, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
