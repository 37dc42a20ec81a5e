#!/usr/bin/env python3
"""PyTorch peer of the precision crossover (`showdown bench crossover --peer`, the `crossover`
lab job with include_peer): square products N×N×N at the same sizes, `torch.matmul` per dtype
(fp32 with TF32 off, tf32 with it on, bf16, fp16) and `torch._scaled_mm` for FP8 E4M3 (unit
per-tensor scales, the first operand row-major, the second column-major, bf16 output), timed
with CUDA events over rotating operand sets larger than the L2, median of many after warm-up.

Rows (JSON lines on stdout):
  {"precision": "bf16", "n": 4096, "ms": 0.21, "reps": 50}
  {"skip": "fp8", "reason": "..."}     a precision this GPU or this torch cannot run

Usage: crossover_peer.py --sizes 64,128,...,16384 [--precisions fp32,tf32,bf16,fp16,fp8]
                         [--budget-ms 200] [--max-reps 200]
"""
import argparse, json, statistics, sys

import torch

L2_BYTES = 128 << 20  # more than any GPU's L2 (H200: 50 MiB)


def operand_sets(n, dtype, fp8):
    """Enough (a, b) pairs that one pass over them spills the L2."""
    elem = 1 if fp8 else torch.empty((), dtype=dtype).element_size()
    per_set = 2 * n * n * elem
    count = max(2, min(16, -(-2 * L2_BYTES // per_set)))
    sets = []
    for _ in range(count):
        if fp8:
            a = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.float8_e4m3fn)
            b = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.float8_e4m3fn).t()
        else:
            a = torch.rand(n, n, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype)
            b = torch.rand(n, n, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype)
        sets.append((a, b))
    return sets


def timed(fn, sets, budget_ms, max_reps):
    for i in range(3):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*sets[0])
    end.record()
    torch.cuda.synchronize()
    first = max(start.elapsed_time(end), 1e-3)
    reps = int(max(10, min(max_reps, budget_ms / first)))
    times = []
    for i in range(reps):
        a, b = sets[i % len(sets)]
        start.record()
        fn(a, b)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--precisions", default="fp32,tf32,bf16,fp16,fp8")
    ap.add_argument("--budget-ms", type=float, default=200.0)
    ap.add_argument("--max-reps", type=int, default=200)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch sees no CUDA GPU")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    precisions = [p for p in args.precisions.split(",") if p]
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
              "fp16": torch.float16}
    one = torch.ones((), device="cuda", dtype=torch.float32)
    for p in precisions:
        if p == "fp8":
            cc = torch.cuda.get_device_capability()
            if cc < (8, 9) or not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
                print(json.dumps({"skip": "fp8", "reason": f"sm_{cc[0]}{cc[1]} or this torch has no FP8 matmul"}), flush=True)
                continue
        for n in sizes:
            if p == "fp8" and n % 16:
                print(json.dumps({"skip": "fp8", "n": n, "reason": "torch._scaled_mm needs dimensions that are multiples of 16"}), flush=True)
                continue
            torch.backends.cuda.matmul.allow_tf32 = p == "tf32"
            try:
                if p == "fp8":
                    sets = operand_sets(n, None, True)
                    fn = lambda a, b: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                else:
                    sets = operand_sets(n, dtypes[p], False)
                    fn = torch.matmul
                ms, reps = timed(fn, sets, args.budget_ms, args.max_reps)
            except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
                print(json.dumps({"skip": p, "n": n, "reason": str(e).splitlines()[0][:200]}), flush=True)
                continue
            finally:
                sets = None
                torch.cuda.empty_cache()
            print(json.dumps({"precision": p, "n": n, "ms": ms, "reps": reps}), flush=True)


if __name__ == "__main__":
    main()
