"""PyTorch beside our duel (Act II's "with PyTorch"): the lab's CNN trained in PyTorch on the
same images and settings as our contestants, one variant per precision, streaming one JSON line
per event so the app shows its epochs as they end.

The network is the first seed's (the PyTorch AMP script): Conv(1->32,3x3)+act -> MaxPool2 ->
Conv(32->64,3x3)+act -> MaxPool2 -> Flatten -> Dropout(p) -> Linear(1600->10); Adam; inputs
normalised with MNIST's mean and standard deviation as ours are. The variants come from that
seed:
  fp32  FP32, TF32 off (strict, as our fp32)      tf32  FP32 with TF32 allowed (cuDNN, cuBLAS)
  fp16  AMP autocast float16 + GradScaler          bf16  AMP autocast bfloat16 (no scaler)
each eager, and on a CUDA GPU also with the whole step (forward, backward, Adam) captured once
as a CUDA graph and replayed per batch (fp16 there keeps a static loss scale of 1024: GradScaler's
dynamic skip cannot be captured). Eager runs take every image per epoch (the last batch may be
short, as ours); a graph needs a fixed batch, so it drops the last partial one.

Usage: duel_peer.py --data DIR --device cuda|cpu --precisions fp32,fp16 --epochs N --batch B
       --lr LR --seed S --dropout P --activation relu|gelu|swish [--no-graph] [--threads T]
       [--cuda-device N]
DIR holds train-images.idx, train-labels.idx, test-images.idx, test-labels.idx (uncompressed
IDX, written by the service from the duel's own data set, limits applied).

Lines: {"kind":"env",...}, then per variant "started", one "epoch" per epoch, "finished";
"skipped" with a reason where a variant cannot run here.
"""
import argparse
import json
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN, STD = 0.1307, 0.3081


def emit(**kw):
    print(json.dumps(kw), flush=True)


def idx(path):
    with open(path, "rb") as f:
        raw = f.read()
    nd = raw[3]
    dims = struct.unpack(">" + "I" * nd, raw[4:4 + 4 * nd])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


ACT = {"relu": F.relu, "gelu": F.gelu, "swish": F.silu}


class Net(nn.Module):
    def __init__(self, dropout, act):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3)
        self.c2 = nn.Conv2d(32, 64, 3)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(1600, 10)
        self.act = ACT[act]

    def forward(self, x):
        x = F.max_pool2d(self.act(self.c1(x)), 2)
        x = F.max_pool2d(self.act(self.c2(x)), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


LABELS = {
    "fp32": "PyTorch FP32 (TF32 off)",
    "tf32": "PyTorch FP32 with TF32",
    "fp16": "PyTorch AMP fp16 + GradScaler",
    "bf16": "PyTorch AMP bf16",
}


def settings(precision):
    """(autocast dtype or None, TF32 allowed)."""
    return {
        "fp32": (None, False),
        "tf32": (None, True),
        "fp16": (torch.float16, False),
        "bf16": (torch.bfloat16, False),
    }[precision]


class Timer:
    def __init__(self, dev):
        self.cuda = dev == "cuda"

    def start(self):
        if self.cuda:
            self.a = torch.cuda.Event(enable_timing=True)
            self.b = torch.cuda.Event(enable_timing=True)
            self.a.record()
        else:
            self.t = time.perf_counter()

    def stop_ms(self):
        if self.cuda:
            self.b.record()
            torch.cuda.synchronize()
            return self.a.elapsed_time(self.b)
        return (time.perf_counter() - self.t) * 1e3


def evaluate(model, xte, yte, dtype, dev):
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast(dev, dtype=dtype or torch.float32, enabled=dtype is not None):
        for i in range(0, xte.shape[0], 1000):
            x = (xte[i:i + 1000].unsqueeze(1).float() / 255.0 - MEAN) / STD
            correct += (model(x).argmax(1) == yte[i:i + 1000]).sum().item()
    model.train()
    return correct / max(1, xte.shape[0])


def train_epochs(a, variant, model, data, dtype, gen, step, full_batches_only):
    """The epochs of one variant: each a fresh shuffle, `step(batch indices)` per batch (the
    last, short batch too unless `full_batches_only`), timed around the steps alone; then the
    test accuracy, and one `epoch` line."""
    xtr, _, xte, yte = data
    dev, n, bs = a.device, xtr.shape[0], a.batch
    timer = Timer(dev)
    for ep in range(1, a.epochs + 1):
        perm = torch.randperm(n, device=dev, generator=gen)
        losses = torch.zeros((), device=dev)
        steps = 0
        timer.start()
        for i in range(0, n - bs + 1 if full_batches_only else n, bs):
            losses += step(perm[i:i + bs]).detach().float()
            steps += 1
        ms = timer.stop_ms()
        acc = evaluate(model, xte, yte, dtype, dev)
        emit(kind="epoch", variant=variant, epoch=ep, ms=round(ms, 3),
             train_loss=float(losses) / max(1, steps), test_accuracy=acc)


def run(a, data, precision, graph):
    dev = a.device
    dtype, tf32 = settings(precision)
    if dev == "cuda":
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = True
    variant = f"{'graph' if graph else 'eager'}-{precision}"
    label = LABELS[precision] + (", CUDA graph" if graph else ", eager")
    if graph and precision == "fp16":
        label = "PyTorch AMP fp16, static loss scale 1024, CUDA graph"
    xtr, ytr, xte, yte = data
    n, bs = xtr.shape[0], a.batch
    if graph and n < bs:
        emit(kind="skipped", variant=variant, reason=f"a CUDA graph needs a full batch of {bs}; the training set has {n} images")
        return
    emit(kind="started", variant=variant, label=label, precision=precision,
         mode="graph" if graph else "eager", epochs=a.epochs)
    torch.manual_seed(a.seed)
    model = Net(a.dropout, a.activation).to(dev)
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    scaler = None
    if dev == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    if not graph:
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
        if precision == "fp16":
            scaler = torch.amp.GradScaler(dev)

        def step(b):
            x = (xtr[b].unsqueeze(1).float() / 255.0 - MEAN) / STD
            with torch.autocast(dev, dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = F.cross_entropy(model(x), ytr[b])
            opt.zero_grad(set_to_none=True)
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            return loss

        train_epochs(a, variant, model, data, dtype, gen, step, full_batches_only=False)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=a.lr, capturable=True)
        sidx = torch.zeros(bs, dtype=torch.long, device=dev)
        static = 1024.0 if precision == "fp16" else None

        def step():
            x = (xtr[sidx].unsqueeze(1).float() / 255.0 - MEAN) / STD
            with torch.autocast(dev, dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = F.cross_entropy(model(x), ytr[sidx])
            opt.zero_grad(set_to_none=False)
            (loss * static if static else loss).backward()
            if static:
                for p in model.parameters():
                    p.grad.div_(static)
            opt.step()
            return loss

        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                sidx.copy_(torch.randint(0, n, (bs,), device=dev, generator=gen))
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=False)
        with torch.cuda.graph(g):
            sloss = step()

        def replay(b):
            sidx.copy_(b)
            g.replay()
            return sloss

        train_epochs(a, variant, model, data, dtype, gen, replay, full_batches_only=True)
    peak = int(torch.cuda.max_memory_allocated()) if dev == "cuda" else None
    scaling = None
    if scaler is not None:
        scaling = f"GradScaler, final scale {scaler.get_scale():g}"
    elif graph and precision == "fp16":
        scaling = "static loss scale 1024"
    emit(kind="finished", variant=variant, peak_memory_bytes=peak, scaling=scaling)
    del model, opt
    if dev == "cuda":
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--precisions", default="fp32,fp16")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--activation", choices=tuple(ACT), default="relu")
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--cuda-device", type=int, default=0, help="the GPU ours trained on (its ordinal)")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        print("this PyTorch sees no CUDA GPU", file=sys.stderr)
        sys.exit(2)
    if a.device == "cuda":
        if not 0 <= a.cuda_device < torch.cuda.device_count():
            print(f"--cuda-device {a.cuda_device}: this PyTorch sees {torch.cuda.device_count()} GPU(s)", file=sys.stderr)
            sys.exit(2)
        torch.cuda.set_device(a.cuda_device)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = a.device
    where = torch.cuda.get_device_name() if dev == "cuda" else "CPU"
    emit(kind="env", torch=torch.__version__, device=where)
    data = (
        torch.from_numpy(idx(f"{a.data}/train-images.idx").copy()).to(dev),
        torch.from_numpy(idx(f"{a.data}/train-labels.idx").astype(np.int64)).to(dev),
        torch.from_numpy(idx(f"{a.data}/test-images.idx").copy()).to(dev),
        torch.from_numpy(idx(f"{a.data}/test-labels.idx").astype(np.int64)).to(dev),
    )
    for precision in a.precisions.split(","):
        if precision == "fp8":
            have = hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")
            emit(kind="skipped", variant="fp8",
                 reason=("this peer has no FP8 variant yet: PyTorch " + torch.__version__
                         + (" has torch._scaled_mm and the float8 dtypes, but no FP8 convolution; an im2col + _scaled_mm peer is not written"
                            if have else " has no torch._scaled_mm or float8 dtypes")))
            continue
        if precision not in LABELS:
            emit(kind="skipped", variant=precision, reason="PyTorch has no such precision here")
            continue
        if dev == "cpu" and precision == "tf32":
            emit(kind="skipped", variant="eager-tf32", reason="TF32 is a GPU tensor-core format; the CPU has none")
            continue
        if dev == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
            emit(kind="skipped", variant="eager-bf16", reason="this GPU has no bf16")
            continue
        run(a, data, precision, graph=False)
        if dev == "cuda" and not a.no_graph:
            run(a, data, precision, graph=True)


if __name__ == "__main__":
    main()
