"""PyTorch beside our duel (Act II's "with PyTorch"): the lab's CNN trained in PyTorch on the
same images and settings as our contestants, one variant per precision, streaming one JSON line
per event so the app shows its epochs as they end.

The network is the first seed's (the PyTorch AMP script): Conv(1->32,3x3)+act -> MaxPool2 ->
Conv(32->64,3x3)+act -> MaxPool2 -> Flatten -> Dropout(p) -> Linear(1600->10); Adam; inputs
normalised with MNIST's mean and standard deviation as ours are. The variants come from that
seed:
  fp32  FP32, TF32 off (strict, as our fp32)      tf32  FP32 with TF32 allowed (cuDNN, cuBLAS)
  fp16  AMP autocast float16 + GradScaler          bf16  AMP autocast bfloat16 (no scaler)
  fp8   both convolutions as im2col GEMMs through torch._scaled_mm with FP8 operands: E4M3
        inputs and weights, E5M2 output gradients, one scale per tensor (delayed scaling from a
        1,024-step amax history, margin 0, or current scaling: the recipe ours follows), FP32
        master weights and Adam, the rest under bf16 autocast
each eager, and on a CUDA GPU also with the whole step (forward, backward, Adam) captured once
as a CUDA graph and replayed per batch (fp16 there keeps a static loss scale of 1024: GradScaler's
dynamic skip cannot be captured). Eager runs take every image per epoch (the last batch may be
short, as ours); a graph needs a fixed batch, so it drops the last partial one.

Usage: duel_peer.py --data DIR --device cuda|cpu --precisions fp32,fp16 --epochs N --batch B
       --lr LR --seed S --dropout P --activation relu|gelu|swish [--no-graph] [--threads T]
       [--cuda-device N] [--fp8-scaling delayed|current]
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
    def __init__(self, dropout, act, fp8=None):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3)
        self.c2 = nn.Conv2d(32, 64, 3)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(1600, 10)
        self.act = ACT[act]
        # FP8: the convolutions' operands cast per tensor (None: PyTorch's own convolutions).
        self.fp8 = fp8

    def conv(self, i, layer, x):
        if self.fp8 is None:
            return layer(x)
        return Fp8Conv.apply(x, layer.weight, layer.bias, self.fp8, i)

    def forward(self, x):
        x = F.max_pool2d(self.act(self.conv(0, self.c1, x)), 2)
        x = F.max_pool2d(self.act(self.conv(1, self.c2, x)), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


# --- FP8: per-tensor scaled casts and the convolutions as im2col GEMMs on torch._scaled_mm.

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
FP8_MAX = {E4M3: 448.0, E5M2: 57344.0}
AMAX_HISTORY = 1024  # Transformer Engine's default window, as ours
MARGIN = 0
MAX_SCALE_EXP = 100  # the scale's exponent stays within +-100, as ours


class Fp8Scales:
    """Six tensors' scales, as our trainer casts them: per convolution its input and weight
    (E4M3) and the gradient of its output (E5M2). Delayed scaling keeps each tensor's amaxes of
    the last 1,024 steps (newest first) and, at the end of a step, sets the scale that puts the
    largest of them at or just below the format's maximum, rounded down to a power of two: the
    step's casts use the scale of the steps before it. Current scaling takes the tensor's own
    amax for its cast. Every update is a tensor operation on the device (no host sync), so a
    CUDA graph captures it."""

    FORMATS = (E4M3, E4M3, E4M3, E4M3, E5M2, E5M2)  # x1, w1, x2, w2, dy1, dy2
    NAMES = ("x1", "w1", "x2", "w2", "dy1", "dy2")  # short: the result table's scaler column

    def __init__(self, dev, scaling):
        self.current = scaling == "current"
        self.scale = torch.ones(6, device=dev)
        self.history = torch.zeros(6, AMAX_HISTORY, device=dev)
        self.fmax = torch.tensor([FP8_MAX[f] for f in self.FORMATS], device=dev)
        self.record = True  # False while evaluating

    @staticmethod
    def scale_from(amax, fmax, previous):
        """2^(floor(log2(fmax / amax)) - margin), the previous scale where amax is 0 or not
        finite; the ratio in float64, as ours (a tiny amax would overflow it in float32)."""
        ok = torch.isfinite(amax) & (amax > 0)
        ratio = fmax.double() / torch.where(ok, amax, torch.ones_like(amax)).double()
        _, e = torch.frexp(ratio)
        e = (e - 1 - MARGIN).clamp(-MAX_SCALE_EXP, MAX_SCALE_EXP)
        return torch.where(ok, torch.ldexp(torch.ones_like(amax), e), previous)

    def cast(self, t, k):
        """Tensor `t` as tensor k's FP8 format at its scale (saturating), and the scale."""
        amax = t.detach().abs().amax().float()
        if self.current:
            scale = self.scale_from(amax, self.fmax[k], self.scale[k])
            if self.record:
                self.scale[k:k + 1].copy_(scale)
        else:
            scale = self.scale[k].clone()
            if self.record:
                self.history[k, 0:1].copy_(torch.maximum(self.history[k, 0], amax))
        fmax = FP8_MAX[self.FORMATS[k]]
        # Saturating, as ours; an infinity saturates too (ours keeps it for FP16's loss scaler,
        # which this peer does not run: E4M3 has no infinity).
        return (t.float() * scale).clamp(-fmax, fmax).to(self.FORMATS[k]), scale

    def end_step(self):
        if self.current:
            return
        # The largest finite amax of each history (a NaN or inf step must not freeze the scale
        # for the whole window), as ours.
        h = self.history
        amax = torch.where(torch.isfinite(h), h, torch.zeros_like(h)).amax(dim=1)
        self.scale.copy_(self.scale_from(amax, self.fmax, self.scale))
        self.history.copy_(self.history.roll(1, dims=1))
        self.history[:, 0].zero_()

    def describe(self):
        exps = torch.frexp(self.scale.cpu())[1] - 1
        final = ", ".join(f"{n} 2^{int(e)}" for n, e in zip(self.NAMES, exps))
        how = "current scaling" if self.current else f"delayed scaling, history {AMAX_HISTORY}"
        return f"{how}; final scales {final} (conv inputs x, weights w, output grads dy)"


def pad_dim(t, dim, mult):
    """`t` zero-padded along `dim` to a multiple of `mult` (torch._scaled_mm wants 16)."""
    extra = -t.shape[dim] % mult
    if extra == 0:
        return t
    shape = list(t.shape)
    shape[dim] = extra
    return torch.cat([t, t.new_zeros(shape)], dim=dim)


def scaled_mm(a, sa, b, sb, out_dtype):
    """a @ b.T for FP8 `a` (M x K) and `b` (N x K) cast at scales sa and sb: torch._scaled_mm
    takes a row-major and b column-major, and the inverse scales."""
    return torch._scaled_mm(a, b.t(), scale_a=(1.0 / sa).reshape(()), scale_b=(1.0 / sb).reshape(()),
                            out_dtype=out_dtype)


class Fp8Conv(torch.autograd.Function):
    """A 3x3 valid convolution as im2col GEMMs with FP8 operands: forward X (E4M3) by W (E4M3),
    backward dY (E5M2) by W for dX and by X for dW; FP32 accumulation, bf16 or FP32 out."""

    @staticmethod
    def forward(ctx, x, w, b, scales, i):
        n, c, h, wd = x.shape
        oc = w.shape[0]
        ho, wo = h - 2, wd - 2
        cols = F.unfold(x, 3).transpose(1, 2).reshape(n * ho * wo, c * 9)  # (M, K)
        k = cols.shape[1]
        cols8, sx = scales.cast(pad_dim(cols, 1, 16), 2 * i)
        w8, sw = scales.cast(pad_dim(w.reshape(oc, k), 1, 16), 2 * i + 1)
        out_dtype = torch.bfloat16 if torch.is_autocast_enabled(x.device.type) else torch.float32
        y = scaled_mm(cols8, sx, w8, sw, out_dtype) + b.to(out_dtype)
        ctx.save_for_backward(cols8, sx, w8, sw)
        ctx.meta = (scales, i, (n, c, h, wd), k, x.dtype, x.requires_grad)
        return y.reshape(n, ho, wo, oc).permute(0, 3, 1, 2)

    @staticmethod
    def backward(ctx, dy):
        cols8, sx, w8, sw = ctx.saved_tensors
        scales, i, (n, c, h, wd), k, x_dtype, need_dx = ctx.meta
        oc = w8.shape[0]
        g = dy.permute(0, 2, 3, 1).reshape(-1, oc)  # (M, OC)
        db = g.float().sum(0)
        g8, sg = scales.cast(g, 4 + i)
        # dW = dY^T X: dY^T (OC x M) by X^T (K x M) as its column-major operand; M padded to 16.
        dw = scaled_mm(pad_dim(g8.t().contiguous().view(torch.uint8), 1, 16).view(g8.dtype), sg,
                       pad_dim(cols8.t().contiguous().view(torch.uint8), 1, 16).view(cols8.dtype), sx,
                       torch.float32)[:, :k].reshape(oc, c, 3, 3)
        dx = None
        if need_dx:
            # dX = fold(dY W): dY (M x OC) by W^T (K x OC).
            wt = w8.t().contiguous()
            dcols = scaled_mm(g8, sg, wt, sw, torch.float32)[:, :k]
            dcols = dcols.reshape(n, -1, k).transpose(1, 2)
            dx = F.fold(dcols, (h, wd), 3).to(x_dtype)
        return dx, dw, db, None, None


LABELS = {
    "fp32": "PyTorch FP32 (TF32 off)",
    "tf32": "PyTorch FP32 with TF32",
    "fp16": "PyTorch AMP fp16 + GradScaler",
    "bf16": "PyTorch AMP bf16",
    "fp8": "PyTorch FP8 (im2col + torch._scaled_mm, per-tensor scales), bf16 elsewhere",
}


def settings(precision):
    """(autocast dtype or None, TF32 allowed)."""
    return {
        "fp32": (None, False),
        "tf32": (None, True),
        "fp16": (torch.float16, False),
        "bf16": (torch.bfloat16, False),
        "fp8": (torch.bfloat16, False),
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
    if model.fp8 is not None:
        model.fp8.record = False  # evaluation's casts leave the amax histories alone
    correct = 0
    with torch.no_grad(), torch.autocast(dev, dtype=dtype or torch.float32, enabled=dtype is not None):
        for i in range(0, xte.shape[0], 1000):
            x = (xte[i:i + 1000].unsqueeze(1).float() / 255.0 - MEAN) / STD
            correct += (model(x).argmax(1) == yte[i:i + 1000]).sum().item()
    model.train()
    if model.fp8 is not None:
        model.fp8.record = True
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
    if precision == "fp8":
        label = label.replace("per-tensor scales", f"{a.fp8_scaling} scaling")

    def started():
        emit(kind="started", variant=variant, label=label, precision=precision,
             mode="graph" if graph else "eager", epochs=a.epochs)

    torch.manual_seed(a.seed)
    fp8 = Fp8Scales(dev, a.fp8_scaling) if precision == "fp8" else None
    model = Net(a.dropout, a.activation, fp8).to(dev)
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
            if fp8 is not None:
                fp8.end_step()
            return loss

        started()
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
            if fp8 is not None:
                fp8.end_step()
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

        started()
        train_epochs(a, variant, model, data, dtype, gen, replay, full_batches_only=True)
    peak = int(torch.cuda.max_memory_allocated()) if dev == "cuda" else None
    scaling = None
    if scaler is not None:
        scaling = f"GradScaler, final scale {scaler.get_scale():g}"
    elif graph and precision == "fp16":
        scaling = "static loss scale 1024"
    elif fp8 is not None:
        scaling = fp8.describe()
    emit(kind="finished", variant=variant, peak_memory_bytes=peak, scaling=scaling)
    del model, opt
    if dev == "cuda":
        torch.cuda.empty_cache()


def check_fp8(dev):
    """The FP8 peer's convolution against PyTorch's own on the same FP8-rounded operands:
    forward, input gradient and weight gradient, conv1's and conv2's shapes (their K of 9 and
    288 padded to 16's multiples; a batch of 5 leaves M unaligned). Each must equal F.conv2d and
    its gradients on the dequantised operands within the accumulation's bound (relative), and the
    unrounded convolution within 10 %. Prints one JSON line; exits 1 on a mismatch.

    The bound is the accumulator's: on the CPU `_scaled_mm` sums in IEEE FP32 like F.conv2d, so
    the two agree to 1e-4. Hopper's FP8 tensor cores (cuBLASLt behind `_scaled_mm` on a GPU) add
    their products in an accumulator of about 14 significant bits, not FP32's 24 (DeepSeek-V3's
    report measured it on H800s; their recipe promotes partial sums to FP32 every 128 products),
    so each addition rounds at about 2^-14 relative: on the H200 the three GEMMs landed 1.0e-4 to
    1.2e-4 from FP32 sums (2026-11-28). A GPU is therefore held to 2^-11 (4.9e-4): four times that
    measurement, and still 35 times below what the FP8 rounding itself moves (1.8 % / 3.6 %)."""
    why = fp8_missing(dev)
    if why:
        emit(kind="fp8_check", device=str(dev), skipped=why)
        sys.exit(2)
    # The references in strict FP32: cuDNN's TF32 would differ from FP32 sums by about 1e-3.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)

    def rel(a, b):
        a, b = a.detach().float(), b.detach().float()
        return float((a - b).norm() / b.norm().clamp_min(1e-30))
    q = Fp8Scales(dev, "current")

    def dq(t, k):  # t rounded to tensor k's FP8 format at its own (current) scale, in FP32
        t8, s = q.cast(t, k)
        return t8.float() / s

    worst = {}
    for i, (n, c, hw, oc) in enumerate(((5, 1, 28, 32), (5, 32, 13, 64))):
        x = torch.randn(n, c, hw, hw, device=dev, requires_grad=i == 1)
        w = (torch.randn(oc, c, 3, 3, device=dev) * 0.2).requires_grad_()
        b = torch.randn(oc, device=dev).requires_grad_()
        scales = Fp8Scales(dev, "current")
        y = Fp8Conv.apply(x, w, b, scales, i)
        g = torch.randn_like(y)
        y.backward(g)
        xq, wq, gq = dq(x.detach(), 2 * i), dq(w.detach(), 2 * i + 1), dq(g, 4 + i)
        ref_y = F.conv2d(xq, wq, b.detach())
        ref_dw = torch.nn.grad.conv2d_weight(xq, w.shape, gq)
        got = {"forward": rel(y, ref_y), "weight grad": rel(w.grad, ref_dw),
               "bias grad": rel(b.grad, g.sum((0, 2, 3))),
               "forward vs unrounded": rel(y, F.conv2d(x.detach(), w.detach(), b.detach()))}
        if i == 1:
            got["input grad"] = rel(x.grad, torch.nn.grad.conv2d_input(x.shape, wq, gq))
        for k, v in got.items():
            worst[f"conv{i + 1} {k}"] = v
    gemm_bound = 2.0 ** -11 if str(dev).startswith("cuda") else 1e-4
    bad = {k: v for k, v in worst.items() if not v <= (0.1 if "unrounded" in k else gemm_bound)}
    emit(kind="fp8_check", device=str(dev), relative_errors=worst, bound=gemm_bound,
         bound_unrounded=0.1, failed=sorted(bad))
    sys.exit(1 if bad else 0)


def fp8_missing(dev):
    """Why this PyTorch cannot run the FP8 peer here, or None."""
    if not (hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")):
        return f"PyTorch {torch.__version__} has no torch._scaled_mm or float8 dtypes"
    major, minor = (int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if (major, minor) < (2, 5):
        # Before 2.5 _scaled_mm returned (out, amax) and is_autocast_enabled took no device.
        return f"PyTorch {torch.__version__} is older than 2.5, whose torch._scaled_mm this peer calls"
    if dev == "cuda" and torch.cuda.get_device_capability() < (8, 9):
        major, minor = torch.cuda.get_device_capability()
        return (f"this GPU (sm_{major}{minor}) has no FP8 tensor cores: torch._scaled_mm "
                "needs sm_89 (Ada) or sm_90 (Hopper) and later")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=False)
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
    ap.add_argument("--fp8-scaling", choices=("delayed", "current"), default="delayed")
    ap.add_argument("--check-fp8", action="store_true",
                    help="check the FP8 convolution against F.conv2d on the rounded operands, then exit")
    a = ap.parse_args()
    if a.check_fp8:
        check_fp8(a.device if a.device == "cpu" or torch.cuda.is_available() else "cpu")
    if not a.data:
        ap.error("--data DIR is required (the folder of the duel's IDX files)")
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
            why = fp8_missing(dev)
            if why:
                emit(kind="skipped", variant="eager-fp8", reason=why)
                continue
            for graph in (False, True) if dev == "cuda" and not a.no_graph else (False,):
                try:
                    run(a, data, precision, graph)
                except Exception as e:  # noqa: BLE001 - any failure becomes the row's reason
                    # What torch._scaled_mm refused on this device, in its own first line.
                    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
                    emit(kind="skipped", variant=f"{'graph' if graph else 'eager'}-fp8",
                         reason=f"PyTorch {torch.__version__} failed: {first[:300]}")
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
