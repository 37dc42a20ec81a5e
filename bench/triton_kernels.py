"""Hand-written Triton kernels for the lab's activation and norm ops: a peer of ours.

The ops are the ones of kernels/cuda/activations.cu, activation_ops.cuh and norm.cu, written
out again with ``@triton.jit`` (no torch.compile), computing the same thing in the same way:

- relu:      max(x, 0) (``x > 0 ? x : 0``, so NaN gives 0 as ours does);
- gelu_erf:  0.5·x·(1 + erf(x / √2));
- gelu_tanh: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)));
- swish:     x / (1 + exp(−x));
- layernorm: per row over the last dim, (x − mean)·rstd·γ + β with rstd = 1/√(var + ε),
  ε = 1e-5, biased variance; γ and β are float32 for float16 inputs too (ours take
  ``const float*``); statistics in float32;
- ln_gelu:   gelu_erf of the layernorm output (fused), one read and one write.

Inputs and outputs are float32 or float16 (math in float32, one rounding on the store).
Elementwise ops run on a 1-D grid, BLOCK = 4096 elements a program (16-byte vector accesses);
the norms run one program per row, the whole row in registers (BLOCK = next power of two of
cols) up to 8192 columns, else two passes over the row in blocks of 4096 (shifted sums, as
ours do for rows that do not fit).

Checked before timed. Each kernel runs on fresh random inputs of awkward shapes (CHECK_SHAPES,
plus NORM_SHAPES for the norms, which take both the in-registers and the looping path) drawn as
ours are (compute/src/cuda/lab.rs ``KernelLab::check``): x uniform in [−4, 4) (+3 for the norms),
γ uniform in [0.5, 1.5), β uniform in [−0.5, 0.5); the output is poisoned with NaN first.
The reference is computed in float64 on the GPU from the inputs *as stored* (rounded to the
dtype). The tolerance rule is ours:

    max_rel = max over elements of |y − ref| / max(|ref|, 1)   (a non-finite y counts as ∞)
    ok      = max_rel ≤ 2e-5 for float32, ≤ 2e-3 for float16

A kernel whose check fails (or that fails to compile or run) prints a line with
``"check": "failed"`` and its errors and is NOT timed.

Timing is anchor_kernels.py's: ``triton.testing.do_bench(fn, warmup=50, rep=200,
return_mode="median")`` on a rows × cols matrix (8192 × 4096 by default), GB/s = (one read +
one write of the matrix) / median. Run on its own, the script first prints the same
device-to-device copy ceiling row anchor_kernels.py prints; run from anchor_kernels.py, it
prints only its op rows (anchor_kernels.py printed the ceiling).

One JSON line per (op, dtype), the shape of anchor_kernels.py's eager/compile rows with
``impl: "triton"`` and the check's fields added:

    {"kind": "op", "impl": "triton", "op": "relu", "dtype": "float32", "shape": [8192, 4096],
     "ms": 0.096, "gbps": 2795.1, "check": "ok", "max_abs": 0.0, "max_rel": 0.0,
     "bound": 2e-05, "worst_shape": [1, 1], "checked_shapes": 6}
    {"kind": "op", "impl": "triton", "op": "gelu_erf", "dtype": "float16", "shape": [8192, 4096],
     "check": "failed", "max_abs": 0.02, "max_rel": 0.01, "bound": 0.002,
     "worst_shape": [7, 4097], "checked_shapes": 6}

(a failed line has no ms/gbps; max_abs/max_rel are null when the output was not finite or the
kernel did not run, and then "error" says why).

Usage: triton_kernels.py [--rows R] [--cols C] [--ops relu,gelu_erf,gelu_tanh,swish,layernorm,ln_gelu]
[--dtypes float32,float16] [--check-only]
"""
import argparse
import json
import math
import random

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

try:  # Triton ≥ 3.1: the backend-neutral libdevice
    from triton.language.extra import libdevice
except ImportError:
    try:  # Triton 3.0
        from triton.language.extra.cuda import libdevice
    except ImportError:  # Triton 2.x: libdevice through tl.math
        from triton.language import math as libdevice

OPS = ("relu", "gelu_erf", "gelu_tanh", "swish", "layernorm", "ln_gelu")
DTYPES = {"float32": torch.float32, "float16": torch.float16}
EPS = 1e-5
BOUND = {"float32": 2e-5, "float16": 2e-3}
CHECK_SHAPES = [(1, 1), (3, 1000), (7, 4097), (33, 4099), (2, 7), (64, 4096)]
# The norms also on the widest in-registers row and rows that take the looping path.
NORM_SHAPES = [(4, 8191), (5, 20001), (1, 8193)]
ELEMENTWISE_BLOCK = 4096
NORM_MAX_FUSED = 8192
NORM_LOOP_BLOCK = 4096
# Our op codes of the elementwise kernel (constexpr).
ACT = {"relu": 0, "gelu_erf": 1, "gelu_tanh": 2, "swish": 3}


@triton.jit
def _gelu_erf(v):
    return 0.5 * v * (1.0 + libdevice.erf(v * 0.70710678118654752))


@triton.jit
def _activation_kernel(x_ptr, y_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    if OP == 0:
        y = tl.where(x > 0.0, x, 0.0)
    elif OP == 1:
        y = _gelu_erf(x)
    elif OP == 2:
        y = 0.5 * x * (1.0 + libdevice.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    else:
        y = x / (1.0 + tl.exp(-x))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_kernel(x_ptr, y_ptr, g_ptr, b_ptr, cols, eps,
                      GELU: tl.constexpr, BLOCK: tl.constexpr, IN_REGS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * cols
    yr = y_ptr + row * cols
    if IN_REGS:
        # The whole row in registers: one read, two-pass statistics (mean, then the sum of
        # squared deviations), one write.
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(xr + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / cols
        d = tl.where(mask, x - mean, 0.0)
        var = tl.sum(d * d, axis=0) / cols
        rstd = libdevice.rsqrt(var + eps)
        g = tl.load(g_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        y = d * rstd * g + b
        if GELU:
            y = _gelu_erf(y)
        tl.store(yr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # Pass 1: sums of (x − x₀) and its square (shifted, as ours); pass 2 re-reads the row.
        shift = tl.load(xr).to(tl.float32)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        acc2 = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < cols
            x = tl.load(xr + offs, mask=mask, other=0.0).to(tl.float32)
            d = tl.where(mask, x - shift, 0.0)
            acc += d
            acc2 += d * d
        mean_d = tl.sum(acc, axis=0) / cols
        var = tl.maximum(tl.sum(acc2, axis=0) / cols - mean_d * mean_d, 0.0)
        mean = shift + mean_d
        rstd = libdevice.rsqrt(var + eps)
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < cols
            x = tl.load(xr + offs, mask=mask, other=0.0).to(tl.float32)
            g = tl.load(g_ptr + offs, mask=mask, other=0.0)
            b = tl.load(b_ptr + offs, mask=mask, other=0.0)
            y = (x - mean) * rstd * g + b
            if GELU:
                y = _gelu_erf(y)
            tl.store(yr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def canonical_op(op):
    """The peer's op name (`layernorm_gelu` is `ln_gelu` here, as in anchor_kernels.py)."""
    return "ln_gelu" if op == "layernorm_gelu" else op


def launch(op, x, y, gamma=None, beta=None):
    """Runs Triton kernel `op` on contiguous `x` (rows × cols) into `y` (same shape and dtype);
    the norms take float32 `gamma` and `beta` of cols elements."""
    op = canonical_op(op)
    rows, cols = x.shape
    if op in ACT:
        n = x.numel()
        grid = (triton.cdiv(n, ELEMENTWISE_BLOCK),)
        _activation_kernel[grid](x, y, n, OP=ACT[op], BLOCK=ELEMENTWISE_BLOCK, num_warps=8)
        return y
    if op not in ("layernorm", "ln_gelu"):
        raise ValueError(f"unknown op {op}")
    in_regs = cols <= NORM_MAX_FUSED
    block = max(triton.next_power_of_2(cols), 32) if in_regs else NORM_LOOP_BLOCK
    warps = min(max(block // 256, 1), 8)
    _layernorm_kernel[(rows,)](x, y, gamma, beta, cols, EPS, GELU=(op == "ln_gelu"),
                               BLOCK=block, IN_REGS=in_regs, num_warps=warps)
    return y


def reference(op, x, gamma, beta):
    """The float64 reference of `op` on the stored `x` (and float32 γ, β), on x's device."""
    op = canonical_op(op)
    v = x.double()
    gelu = lambda t: 0.5 * t * (1.0 + torch.erf(t / math.sqrt(2.0)))
    if op == "relu":
        return torch.where(v > 0, v, torch.zeros_like(v))
    if op == "gelu_erf":
        return gelu(v)
    if op == "gelu_tanh":
        return 0.5 * v * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))
    if op == "swish":
        return v / (1.0 + torch.exp(-v))
    mean = v.mean(dim=1, keepdim=True)
    var = ((v - mean) ** 2).mean(dim=1, keepdim=True)
    o = (v - mean) / torch.sqrt(var + EPS) * gamma.double() + beta.double()
    return gelu(o) if op == "ln_gelu" else o


def inputs(op, dt, rows, cols, gen):
    """x, γ, β drawn as ours are (KernelLab::check)."""
    norm = canonical_op(op) in ("layernorm", "ln_gelu")
    x = torch.rand(rows, cols, device="cuda", dtype=torch.float32, generator=gen) * 8.0 - 4.0
    if norm:
        x += 3.0
    g = torch.rand(cols, device="cuda", dtype=torch.float32, generator=gen) + 0.5
    b = torch.rand(cols, device="cuda", dtype=torch.float32, generator=gen) - 0.5
    return x.to(dt).contiguous(), g, b


def fresh_generator():
    """A CUDA generator with a fresh random seed (fresh inputs each run, as ours)."""
    return torch.Generator(device="cuda").manual_seed(random.getrandbits(63))


def _finite(v):
    return v if math.isfinite(v) else None


def check(op, dtype_name, gen=None):
    """Checks `op` in `dtype_name` on every check shape against the float64 reference; a dict of
    the check's fields (check, max_abs, max_rel, bound, worst_shape, checked_shapes[, error])."""
    dt = DTYPES[dtype_name]
    bound = BOUND[dtype_name]
    gen = gen or fresh_generator()
    shapes = list(CHECK_SHAPES)
    if canonical_op(op) in ("layernorm", "ln_gelu"):
        shapes += NORM_SHAPES
    worst = None
    for (r, c) in shapes:
        try:
            x, g, b = inputs(op, dt, r, c, gen)
            y = torch.full_like(x, float("nan"))  # poisoned
            launch(op, x, y, g, b)
            torch.cuda.synchronize()
        except Exception as e:  # a kernel that does not compile or run fails its check
            return dict(check="failed", max_abs=None, max_rel=None, bound=bound,
                        worst_shape=[r, c], checked_shapes=len(shapes),
                        error=f"{type(e).__name__}: {e}".splitlines()[0][:500])
        want = reference(op, x, g, b)
        got = y.double()
        d = torch.where(torch.isfinite(got), (got - want).abs(),
                        torch.full_like(got, float("inf")))
        max_abs = d.max().item()
        max_rel = (d / want.abs().clamp_min(1.0)).max().item()
        if worst is None or max_rel > worst[0]:
            worst = (max_rel, max_abs, [r, c])
    max_rel, max_abs, shape = worst
    return dict(check="ok" if max_rel <= bound else "failed", max_abs=_finite(max_abs),
                max_rel=_finite(max_rel), bound=bound, worst_shape=shape,
                checked_shapes=len(shapes))


def default_bench(fn, rep=200):
    """anchor_kernels.py's timing: do_bench's median, ms."""
    return do_bench(fn, warmup=50, rep=rep, return_mode="median")


def default_emit(**kw):
    print(json.dumps(kw), flush=True)


def copy_ceiling(emit=default_emit, bench=default_bench):
    """The device-to-device copy ceiling row, as anchor_kernels.py prints it."""
    x = torch.empty(2**28, dtype=torch.float32, device="cuda").uniform_()  # 1 GiB
    y = torch.empty_like(x)
    t = bench(lambda: y.copy_(x))
    emit(kind="ceiling", name="d2d_copy_1GiB", ms=t, gbps=2 * x.numel() * 4 / t / 1e6)
    del x, y


def run(ops, dtypes, rows, cols, emit=default_emit, bench=default_bench, time_them=True):
    """Checks, then times, each Triton kernel of `ops` × `dtypes` (names as anchor_kernels.py's
    --ops/--dtypes) on a `rows` × `cols` matrix; one JSON line per (op, dtype) through `emit`."""
    if isinstance(ops, str):
        ops = ops.split(",")
    if isinstance(dtypes, str):
        dtypes = dtypes.split(",")
    ops = [canonical_op(o) for o in ops if canonical_op(o) in OPS]
    dtypes = [d for d in dtypes if d in DTYPES]
    gen = fresh_generator()
    for dname in dtypes:
        dt = DTYPES[dname]
        x, g, b = (None, None, None)
        for op in ops:
            row = dict(kind="op", impl="triton", op=op, dtype=dname, shape=[rows, cols])
            c = check(op, dname, gen)
            if c["check"] != "ok" or not time_them:
                emit(**row, **c)
                continue
            if x is None:
                x = torch.randn(rows, cols, device="cuda", dtype=dt)
                g = torch.randn(cols, device="cuda", dtype=torch.float32)
                b = torch.randn(cols, device="cuda", dtype=torch.float32)
                y = torch.empty_like(x)
            nbytes = x.numel() * x.element_size()
            try:
                t = bench(lambda: launch(op, x, y, g, b))
            except Exception as e:
                emit(**row, **dict(c, check="failed",
                                   error=f"timing: {type(e).__name__}: {e}".splitlines()[0][:500]))
                continue
            emit(**row, ms=t, gbps=2 * nbytes / t / 1e6, **c)
        del x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--check-only", action="store_true", help="check every kernel, time none")
    args = ap.parse_args()
    if not args.check_only:
        copy_ceiling()
    run(args.ops, args.dtypes, args.rows, args.cols, time_them=not args.check_only)


if __name__ == "__main__":
    main()
