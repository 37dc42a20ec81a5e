#!/usr/bin/env python3
"""PyTorch peer of `showdown bench infer`: the lab CNN with the weights showdown trained (one set
per activation), run forward on the same test images at the same batch sizes, timed the same way
(CUDA events around each pass, warm-up, p50/p90/p99).

Rows (JSON lines on stdout):
  {"kind": "accuracy", "activation": ..., "accuracy": ..., "images": ...}   FP16 eager, whole test split
  {"kind": "latency", "impl": ..., "activation": ..., "batch": ..., "reps": ..., "p50_ms": ..., ...}
Implementations: pytorch_eager_fp16 (cuDNN benchmark mode, NCHW), pytorch_eager_fp16_channels_last,
pytorch_graph_fp16 (the eager pass captured once as a CUDA graph and replayed) and, for the
batches named by --compile-batches, pytorch_compile_fp16 (torch.compile, default mode).

Usage: infer_peer.py --weights W.json --data-dir DIR [--batches 1,32,128,1024,10000]
                     [--budget-ms 300] [--max-reps 2000] [--compile-batches 1,10000]
"""
import argparse, gzip, json, os, struct, sys

import torch
import torch.nn as nn


def read_idx_images(data_dir):
    for name in ("t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"):
        path = os.path.join(data_dir, name)
        if os.path.isfile(path):
            raw = (gzip.open if name.endswith(".gz") else open)(path, "rb").read()
            magic, n, rows, cols = struct.unpack(">IIII", raw[:16])
            if magic != 2051:
                sys.exit(f"{path}: not an IDX image file (magic {magic})")
            return torch.frombuffer(bytearray(raw[16:16 + n * rows * cols]), dtype=torch.uint8).view(n, 1, rows, cols)
    sys.exit(f"{data_dir}: no t10k-images-idx3-ubyte[.gz]")


def read_idx_labels(data_dir):
    for name in ("t10k-labels-idx1-ubyte", "t10k-labels-idx1-ubyte.gz"):
        path = os.path.join(data_dir, name)
        if os.path.isfile(path):
            raw = (gzip.open if name.endswith(".gz") else open)(path, "rb").read()
            n = struct.unpack(">II", raw[:8])[1]
            return torch.frombuffer(bytearray(raw[8:8 + n]), dtype=torch.uint8).long()
    sys.exit(f"{data_dir}: no t10k-labels-idx1-ubyte[.gz]")


ACTS = {"relu": nn.ReLU, "gelu": nn.GELU, "swish": nn.SiLU}


def model(act, params):
    m = nn.Sequential(
        nn.Conv2d(1, 32, 3), ACTS[act](), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), ACTS[act](), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1600, 10))
    w1, b1, w2, b2, w3, b3 = (torch.tensor(p, dtype=torch.float32) for p in params)
    with torch.no_grad():
        m[0].weight.copy_(w1.view(32, 1, 3, 3)); m[0].bias.copy_(b1)
        m[3].weight.copy_(w2.view(64, 32, 3, 3)); m[3].bias.copy_(b2)
        m[7].weight.copy_(w3.view(10, 1600)); m[7].bias.copy_(b3)
    return m.cuda().half().eval()


def timed(fn, budget_ms, max_reps):
    for _ in range(3):
        fn()
    probe = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); probe.append(a.elapsed_time(b))
    reps = int(min(max(budget_ms / max(min(probe), 1e-3), 20), max(max_reps, 20)))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in ev)
    at = lambda q: t[round((len(t) - 1) * q)]
    return reps, at(0.5), at(0.9), at(0.99)


def row(impl, act, batch, r):
    reps, p50, p90, p99 = r
    print(json.dumps({"kind": "latency", "impl": impl, "activation": act, "batch": batch, "reps": reps,
                      "p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "images_per_s": batch / (p50 * 1e-3)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--batches", default="1,32,128,1024,10000")
    ap.add_argument("--budget-ms", type=float, default=300.0)
    ap.add_argument("--max-reps", type=int, default=2000)
    ap.add_argument("--compile-batches", default="")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    w = json.load(open(a.weights))
    mean, std = w["mean"], w["std"]
    images = read_idx_images(a.data_dir)
    labels = read_idx_labels(a.data_dir)
    x_all = ((images.float() / 255.0 - mean) / std).cuda().half()
    batches = [int(b) for b in a.batches.split(",") if b]
    compile_batches = {int(b) for b in a.compile_batches.split(",") if b}
    for v in w["variants"]:
        act = v["activation"]
        m = model(act, v["params"])
        with torch.no_grad():
            pred = torch.cat([m(x_all[i:i + 1000]).argmax(1) for i in range(0, len(x_all), 1000)])
        acc = (pred.cpu() == labels[:len(pred)]).float().mean().item()
        print(json.dumps({"kind": "accuracy", "activation": act, "accuracy": acc, "images": len(pred)}), flush=True)
        m_cl = model(act, v["params"]).to(memory_format=torch.channels_last)
        for n in batches:
            if n > len(x_all):
                continue
            x = x_all[:n].contiguous()
            x_cl = x.to(memory_format=torch.channels_last)
            with torch.no_grad():
                row("pytorch_eager_fp16", act, n, timed(lambda: m(x), a.budget_ms, a.max_reps))
                row("pytorch_eager_fp16_channels_last", act, n, timed(lambda: m_cl(x_cl), a.budget_ms, a.max_reps))
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        m(x)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = m(x)
                row("pytorch_graph_fp16", act, n, timed(g.replay, a.budget_ms, a.max_reps))
                del g, out
                if n in compile_batches:
                    torch._dynamo.reset()
                    mc = torch.compile(m)
                    row("pytorch_compile_fp16", act, n, timed(lambda: mc(x), a.budget_ms, a.max_reps))


if __name__ == "__main__":
    main()
