#!/usr/bin/env python3
"""PyTorch CPU peer of `showdown duel --backend cpu`: the lab CNN (the reference script's Net),
Adam 1e-3, batch 128, on IDX files, printing one JSON line per (precision, seed) with the
per-epoch time and test accuracy, so both can be compared epoch by epoch.

Usage: python3 torch_cpu_peer.py DIR [PREFIX] [--epochs N] [--seeds 0,1,2] [--precisions fp32,bf16]
DIR holds PREFIX{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (the embedded sample is
compute/data with PREFIX mnist10k-). Like `showdown`, every epoch trains on every image (the last
batch holds the remainder).
"""
import argparse, gzip, json, os, struct, sys, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    nd = struct.unpack(">I", raw[:4])[0] & 0xFF
    dims = struct.unpack(">" + "I" * nd, raw[4:4 + 4 * nd])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3)
        self.c2 = nn.Conv2d(32, 64, 3)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(1600, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("prefix", nargs="?", default="")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--precisions", default="fp32")
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count())
    p = lambda n: os.path.join(a.dir, a.prefix + n)
    xtr = torch.from_numpy(idx(p("train-images-idx3-ubyte.gz")).copy())
    ytr = torch.from_numpy(idx(p("train-labels-idx1-ubyte.gz")).astype(np.int64))
    xte = torch.from_numpy(idx(p("t10k-images-idx3-ubyte.gz")).copy())
    yte = torch.from_numpy(idx(p("t10k-labels-idx1-ubyte.gz")).astype(np.int64))
    norm = lambda x: (x.unsqueeze(1).float() / 255 - 0.1307) / 0.3081
    n, bs = xtr.shape[0], 128
    for prec in a.precisions.split(","):
        dt = {"fp32": None, "bf16": torch.bfloat16}[prec]
        for seed in [int(s) for s in a.seeds.split(",")]:
            torch.manual_seed(seed)
            m = Net()
            opt = torch.optim.Adam(m.parameters(), 1e-3)
            epochs = []
            for ep in range(a.epochs):
                perm = torch.randperm(n)
                m.train()
                t0 = time.perf_counter()
                for i in range(0, n, bs):
                    b = perm[i:i + bs]
                    with torch.autocast("cpu", dtype=dt or torch.float32, enabled=dt is not None):
                        loss = F.cross_entropy(m(norm(xtr[b])), ytr[b])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                ms = (time.perf_counter() - t0) * 1e3
                m.eval()
                with torch.no_grad():
                    acc = (m(norm(xte)).argmax(1) == yte).float().mean().item()
                epochs.append({"epoch": ep + 1, "ms": round(ms, 1), "test_accuracy": round(acc, 4)})
            print(json.dumps({"peer": f"pytorch-{torch.__version__}-cpu", "precision": prec, "seed": seed,
                              "threads": torch.get_num_threads(), "train": n, "epochs": epochs,
                              "samples_per_s": round(n / (min(e["ms"] for e in epochs) / 1e3), 1)}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
