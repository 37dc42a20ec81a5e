#!/usr/bin/env bash
# One device-tool call on the GPU machine (no Rust there): the GPU tests, our duel, per-kernel
# times from Nsight Compute, and (with `bench`) `showdown bench duel`: our duel and the PyTorch
# reference scripts in the same call, side by side.
# Expects, carried in .gpu/: showdown and compute-tests (release builds, `cargo test --release
# -p compute --features cuda --lib --no-run`) and, optionally, fashion/ (the Fashion-MNIST IDX
# files; without it the embedded MNIST sample). The PyTorch peers are the repo's own copies in
# bench/ (anchor_graph.py, anchor_train.py, anchor_kernels.py), so a comparison is reproducible
# from the repo alone. Writes everything under $OUT; prints a short table last.
#
#   bash bench/gpu_session.sh [fp8] [tests] [steps] [serve] [profile] [lab] [anatomy] [explainer] [duel] [pytorch] [lnstudy] [lnprofile] [variants] [ablation] [ncu] [bench] [sanitizer] [peers] [conv] [kernels] [infer] [nonvrtc]
# `peers` runs anchor_kernels.py once (PyTorch/cuDNN/Triton) into $OUT/anchor_kernels.jsonl; `conv`
# (`showdown bench conv`) and `kernels` (`showdown bench kernels`) then print ours beside it. `infer`
# (`showdown bench infer`) trains the three CNN variants on the CPU, times their GPU inference and
# runs bench/infer_peer.py (PyTorch, same weights) itself.
# `nonvrtc` (in a private mount namespace: root, else --map-root-user) proves training needs no NVRTC: the same duel on the
# NVRTC path (SHOWDOWN_KERNELS=nvrtc), then with every libnvrtc on the loader's paths covered by
# /dev/null (dlopen fails: doctor says NVRTC "no") on the embedded cubin, and on the embedded PTX
# (SHOWDOWN_KERNELS=ptx: the driver's JIT); doctor for each, epoch times and ratios last.
# `ablation` times fp32/fp16 duels with each speed-up switched off in turn: SHOWDOWN_CUDA_GRAPHS=off
# (every launch from the host) and SHOWDOWN_CONV=cuda-cores (no tensor-core convolutions).
set -uo pipefail
G=.gpu
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
# NVRTC and cuBLAS from the toolkit; cuDNN from PyTorch's pip wheel (nvidia-cudnn-cu13).
CUDNN_LIB=$(python3 -c 'import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
# CUPTI (the step anatomy's kernel clock) from the toolkit's extras, else PyTorch's wheel.
CUPTI_LIB=$(ls -d /usr/local/cuda/extras/CUPTI/lib64 2>/dev/null || python3 -c 'import nvidia.cuda_cupti as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH=/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/lib64:${CUDNN_LIB:+$CUDNN_LIB:}${CUPTI_LIB:+$CUPTI_LIB:}${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
want() { [[ " $* " == *" $STEP "* ]]; }
# A duel through browser mode's door, as Act II sends it: `showdown serve --http` on PORT, the
# job BODY posted, its event stream into $OUT/NAME_duel.sse, the server's output beside it.
served_duel() {
  local port=$1 name=$2 body=$3
  "$G/showdown" serve --http "127.0.0.1:$port" > "$OUT/${name}_serve.out" 2> "$OUT/${name}_serve.err" &
  local serve=$!; sleep 2
  curl -sS -N -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$port/api/job" -d "$body" \
    > "$OUT/${name}_duel.sse"
  kill $serve; wait $serve 2>/dev/null
}
# The step anatomy of every precision from the CLI, with its trace file.
anatomy_cli() {
  "$G/showdown" bench anatomy --backend cuda --precisions fp32,tf32,fp16,bf16 --batch 128 --steps 20 \
    --json-out "$OUT/anatomy_cli.json" --trace-out "$OUT/anatomy_trace.json" > "$OUT/anatomy_cli.txt" 2>&1
}
# ncu's gpu__time_duration of one step per precision against the anatomy, launch by launch
# (bench/anatomy_vs_ncu.py), and the trace file checked.
anatomy_vs_ncu() {
  for P in ${ANATOMY_NCU:-fp16 fp32}; do
    ncu --csv --print-units base --metrics gpu__time_duration.sum --clock-control none --cache-control none \
      --nvtx --nvtx-include "profile/" "$G/showdown" profile-target --what "{\"target\":\"step\",\"precision\":\"$P\",\"batch\":128}" \
      > "$OUT/anatomy_ncu_$P.csv" 2> "$OUT/anatomy_ncu_$P.err"
    python3 bench/anatomy_vs_ncu.py "$OUT/anatomy_cli.json" "$OUT/anatomy_ncu_$P.csv" "$P" "$OUT/anatomy_trace.json" | tee "$OUT/anatomy_vs_ncu_$P.txt" | tail -3
  done
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee "$OUT/gpu.txt"
# Fashion-MNIST when carried (.gpu/fashion), else the embedded MNIST sample.
# Carried as .gpu/fx/*.xz (raw IDX, xz: smaller than the .gz files) when the carry limit is tight.
if [ -d "$G/fx" ] && [ ! -d "$G/fashion" ]; then mkdir -p "$G/fashion" && for f in "$G"/fx/*.xz; do b="$G/fashion/$(basename "$f" .xz)"; xz -dc "$f" > "$b"; gzip -1 -k "$b"; done; fi  # the PyTorch peers read .gz
# anchor_train.py (the eager peers) also trains on the MNIST sample it expects beside the files.
[ -d "$G/fashion" ] && cp -n compute/data/mnist10k-*-ubyte.gz "$G/fashion/" 2>/dev/null
if [ -d "$G/fashion" ]; then DATA=(--data-dir "$G/fashion" --dataset fashion-mnist); else DATA=(--dataset mnist-sample); fi
DUEL=("$G/showdown" duel --backend cuda "${DATA[@]}")
for STEP in "$@"; do
  case $STEP in
    tests)
      # The GPU tests are #[ignore]d where there is no GPU; here they run, and fail without one.
      SHOWDOWN_REQUIRE_GPU=1 "$G/compute-tests" cuda:: --include-ignored --test-threads 1 > "$OUT/gpu_tests.log" 2>&1
      echo "gpu tests: exit $? — $(grep -E '^test result' "$OUT/gpu_tests.log")"
      grep -E 'FAILED|panicked' "$OUT/gpu_tests.log" | head -5 ;;
    serve)
      # Browser mode's door on the GPU: `serve --http` runs the compute in a supervised child;
      # a GPU duel through POST /api/job, exactly as the UI sends it, then the child's state.
      "$G/showdown" serve --http 127.0.0.1:8799 > "$OUT/serve.out" 2> "$OUT/serve.err" &
      SERVE=$!; sleep 2
      curl -sS -N -X POST -H 'Content-Type: application/json' http://127.0.0.1:8799/api/job \
        -d '{"op":"duel","config":{"backend":"cuda","dataset":"mnist-sample","epochs":2,"precisions":["fp32","fp16"]}}' \
        > "$OUT/serve_duel.sse"
      curl -sS http://127.0.0.1:8799/api/compute > "$OUT/serve_compute.json"
      kill $SERVE; wait $SERVE 2>/dev/null
      python3 - "$OUT/serve_duel.sse" "$OUT/serve_compute.json" <<'PY'
import json, sys
lines = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
last = lines[-1]
if "ok" not in last:
    print("serve duel: FAILED", last); sys.exit(0)
r = last["ok"]
print(f"serve duel ({r['backend']}, {r['device']}): {len(lines) - 1} events, saved_run {r.get('saved_run')},",
      "  ".join(f"{x['precision']} {x['epoch_ms_median']:.1f} ms acc {x['test_accuracy']:.4f}" for x in r["runs"]))
print("compute process:", open(sys.argv[2]).read())
PY
      ;;
    profile)
      # Act IV's Profile button as the app sends it (default sections): every panel filled?
      SHOWDOWN_DATA_HOME="$OUT/phome" "$G/showdown" serve --http 127.0.0.1:8798 > "$OUT/profile_serve.out" 2> "$OUT/profile_serve.err" &
      SERVE=$!; sleep 2
      timeout 600 python3 bench/profile_panels.py http://127.0.0.1:8798 "$OUT/phome" "$OUT" 2>&1 | tee "$OUT/profile_panels.txt"
      kill $SERVE; wait $SERVE 2>/dev/null ;;
    duel)
      "${DUEL[@]}" --epochs 5 --precisions fp32,tf32,fp16,bf16 --json > "$OUT/duel.json" 2> "$OUT/duel.err"
      echo "duel: exit $?"; tail -2 "$OUT/duel.err" ;;
    variants)
      # GELU and Swish train on the GPU too: a duel of each in all four precisions (5 epochs).
      for act in gelu swish; do
        "${DUEL[@]}" --epochs 5 --precisions fp32,tf32,fp16,bf16 --activation $act --json > "$OUT/duel_$act.json" 2> "$OUT/duel_$act.err"
        echo "duel $act: exit $?"
        python3 - "$OUT/duel_$act.json" "$act" <<'PY' || tail -3 "$OUT/duel_$act.err"
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<6}", "  ".join(f"{r['precision']} {r['epoch_ms_median']:.1f} ms {r['peak_memory_bytes']/1e6:.1f} MB acc {r['test_accuracy']:.4f}" for r in d["runs"]))
PY
      done ;;
    ablation)
      for cfg in "default" "SHOWDOWN_CUDA_GRAPHS=off" "SHOWDOWN_CONV=cuda-cores" "SHOWDOWN_CUDA_GRAPHS=off SHOWDOWN_CONV=cuda-cores"; do
        tag=$(echo "$cfg" | tr -c "A-Za-z0-9_\n" "_")
        env ${cfg/default/} "${DUEL[@]}" --epochs 3 --precisions fp32,fp16 --json > "$OUT/ablation_$tag.json" 2>> "$OUT/ablation.err"
        python3 - "$OUT/ablation_$tag.json" "$cfg" <<'PY' || tail -3 "$OUT/ablation.err"
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<52}", "  ".join(f"{r['precision']} {r['epoch_ms_median']:.1f} ms acc {r['test_accuracy']:.4f}" for r in d["runs"]))
PY
      done ;;
    ncu)
      ncu --metrics gpu__time_duration.sum --launch-skip 400 --launch-count 60 --csv \
        "${DUEL[@]}" --epochs 1 --train-limit 12800 --test-limit 1000 --precisions "${NCU_PRECISION:-fp32}" \
        > "$OUT/ncu_times.csv" 2> "$OUT/ncu.err"
      echo "ncu: exit $?" ;;
    lnstudy)
      # The LayerNorm family's standalone studies (nvcc, no Rust): the shipped kernels in the lab's
      # launch, the kernel shipped before, and the variants, each against a copy of the same bytes.
      nvcc -O3 -arch=sm_90 bench/ln_variants.cu -o "$OUT/ln" > "$OUT/ln_build.txt" 2>&1 && "$OUT/ln" > "$OUT/ln_variants.txt" 2>&1
      nvcc -O3 -arch=sm_90 bench/act_variants.cu -o "$OUT/act" > "$OUT/act_build.txt" 2>&1 && "$OUT/act" > "$OUT/act_variants.txt" 2>&1
      grep -E "^best|S  shipped" "$OUT/ln_variants.txt"; grep -E "^best" "$OUT/act_variants.txt" ;;
    lnprofile)
      # LayerNorm+GELU FP16 before/after in Act IV: the app's Profile job (after) and the same ncu
      # options on the kernel shipped before (bench/ln_variants.cu's copy), both imported back.
      [ -x "$OUT/ln" ] || nvcc -O3 -arch=sm_90 bench/ln_variants.cu -o "$OUT/ln" > "$OUT/ln_build.txt" 2>&1
      mkdir -p "$OUT/lnhome"
      SHOWDOWN_DATA_HOME="$OUT/lnhome" "$G/showdown" serve --http 127.0.0.1:8797 > "$OUT/lnprof_serve.out" 2> "$OUT/lnprof_serve.err" &
      SERVE=$!; sleep 2
      python3 bench/profile_before_after.py http://127.0.0.1:8797 "$OUT/ln" "$OUT" | tee "$OUT/ln_before_after.txt"
      for d in "$OUT"/lnhome/imports/*/; do [ -f "$d/source.csv" ] && cp "$d/source.csv" "$OUT/ln_gelu_f16_after_$(basename "$d").csv"; done
      kill $SERVE; wait $SERVE 2>/dev/null ;;
    pytorch)
      # Act II's "with PyTorch" through browser mode's door, exactly as the UI sends it
      # (Fashion-MNIST, 5 epochs, batch 128), then `showdown bench duel` in the same call:
      # bench/duel_pytorch_check.py compares our speed-up over PyTorch in both.
      export SHOWDOWN_FASHION_MNIST_DIR="$G/fashion" SHOWDOWN_PYTHON=python3
      served_duel 8798 pytorch '{"op":"duel","config":{"backend":"cuda","dataset":"fashion-mnist","epochs":5,"batch":128,"precisions":["fp32","fp16","bf16"],"pytorch":true}}'
      "$G/showdown" bench duel --backend cuda --dataset fashion-mnist --data-dir "$G/fashion" --epochs 5 \
        --precisions fp32,fp16,bf16 --reference bench --json-out "$OUT/pytorch_bench_duel.json" \
        > "$OUT/pytorch_bench_duel.txt" 2> "$OUT/pytorch_bench_duel.err"
      echo "bench duel: exit $?"
      python3 bench/duel_pytorch_check.py "$OUT/pytorch_duel.sse" "$OUT/pytorch_bench_duel.json" | tee "$OUT/pytorch_check.txt" ;;
    bench)
      "$G/showdown" bench duel --backend cuda --dataset fashion-mnist --data-dir "$G/fashion" --epochs 5 \
        --precisions ${BENCH_PRECISIONS:-fp32,tf32,fp16,bf16} --reference bench --json-out "$OUT/duel_bench.json" \
        > "$OUT/duel_bench.txt" 2> "$OUT/duel_bench.err"
      echo "bench duel: exit $?"; cat "$OUT/duel_bench.txt" ;;
    peers)
      python3 bench/anchor_kernels.py > "$OUT/anchor_kernels.jsonl" 2> "$OUT/anchor_kernels.err"
      echo "anchor_kernels.py: exit $? — $(grep -c '"conv"' "$OUT/anchor_kernels.jsonl") conv rows" ;;
    conv)
      PEER=(); [ -s "$OUT/anchor_kernels.jsonl" ] && PEER=(--peer-log "$OUT/anchor_kernels.jsonl")
      SHOWDOWN_FASHION_MNIST_DIR="$G/fashion" "$G/showdown" bench conv --dataset fashion-mnist "${PEER[@]}" \
        --json-out "$OUT/conv_bench.json" > "$OUT/conv_bench.txt" 2> "$OUT/conv_bench.err"
      echo "bench conv: exit $?"; cat "$OUT/conv_bench.txt"; tail -3 "$OUT/conv_bench.err" ;;
    kernels)
      PEER=(); [ -s "$OUT/anchor_kernels.jsonl" ] && PEER=(--peer-log "$OUT/anchor_kernels.jsonl")
      [ ${#PEER[@]} -eq 0 ] && PEER=(--peer)
      "$G/showdown" bench kernels "${PEER[@]}" --json-out "$OUT/kernels_bench.json" > "$OUT/kernels_bench.txt" 2> "$OUT/kernels_bench.err"
      echo "bench kernels: exit $?"; sed -n '/^timings/,$p' "$OUT/kernels_bench.txt"; grep -E "^correctness" "$OUT/kernels_bench.txt"; tail -3 "$OUT/kernels_bench.err" ;;
    infer)
      "$G/showdown" bench infer --dataset fashion-mnist --data-dir "$G/fashion" --epochs ${INFER_EPOCHS:-2} \
        --peer --compile-batches ${INFER_COMPILE:-1,10000} --weights-out "$OUT/infer_weights.json" \
        --json-out "$OUT/infer_bench.json" > "$OUT/infer_bench.txt" 2> "$OUT/infer_bench.err"
      echo "bench infer: exit $?"; cat "$OUT/infer_bench.txt"; tail -3 "$OUT/infer_bench.err" ;;
    lab)
      # Act III's jobs through browser mode's door, exactly as the UI sends them, and the CLI
      # benchmarks in the same call (bench/lab_jobs.py compares them); then the step anatomy
      # against ncu's gpu__time_duration of the same step (bench/anatomy_vs_ncu.py).
      export SHOWDOWN_FASHION_MNIST_DIR="$G/fashion" SHOWDOWN_PYTHON=python3
      "$G/showdown" bench kernels --json-out "$OUT/kernels_cli.json" > "$OUT/kernels_cli.txt" 2>&1
      "$G/showdown" bench conv --batch 10000 --json-out "$OUT/conv_cli.json" > "$OUT/conv_cli.txt" 2>&1
      "$G/showdown" bench infer --batches 1,32,128,1024 --json-out "$OUT/infer_cli.json" > "$OUT/infer_cli.txt" 2>&1
      anatomy_cli
      echo "cli benches: $(ls "$OUT"/*_cli.json | wc -l) reports"
      SHOWDOWN_DATA_HOME="$OUT/home" "$G/showdown" serve --http 127.0.0.1:8799 > "$OUT/lab_serve.out" 2> "$OUT/lab_serve.err" &
      SERVE=$!; sleep 2
      timeout 900 python3 bench/lab_jobs.py http://127.0.0.1:8799 "$OUT" "$OUT"
      kill $SERVE; wait $SERVE 2>/dev/null
      anatomy_vs_ncu ;;
    steps)
      # The step anatomy alone (CUPTI, every precision), no ncu: the kernel table, quick.
      anatomy_cli
      echo "bench anatomy: exit $?"; sed -n '/^contestant/,$p' "$OUT/anatomy_cli.txt" ;;
    crossover)
      # Issue 39: the precision crossover as the app sends it (serve --http, POST /api/job),
      # PyTorch's rows from the same call; then `showdown bench crossover` on the CLI's door.
      SHOWDOWN_DATA_HOME="$OUT/xhome" "$G/showdown" serve --http 127.0.0.1:8796 > "$OUT/crossover_serve.out" 2> "$OUT/crossover_serve.err" &
      SERVE=$!; sleep 2
      timeout 500 python3 bench/crossover_job.py http://127.0.0.1:8796 "$OUT" ${CROSSOVER_SIZES:-}
      kill $SERVE; wait $SERVE 2>/dev/null ;;
    anatomy)
      # The step anatomy (CUPTI's kernel records where libcupti loads) against ncu's
      # gpu__time_duration of the same step, launch by launch, and its trace file checked.
      anatomy_cli
      echo "bench anatomy: exit $? — clock: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["clock"])' "$OUT/anatomy_cli.json" 2>&1)"
      anatomy_vs_ncu ;;
    explainer)
      # The visual explainer on the GPU through browser mode's door: a four-precision duel, Act
      # I's forward pass of its models checked on the CUDA and CPU kernels, Act II's histograms,
      # loss-scale history and memory split (bench/explainer_jobs.py).
      SHOWDOWN_DATA_HOME="$OUT/home-explainer" "$G/showdown" serve --http 127.0.0.1:8798 > "$OUT/explainer_serve.out" 2> "$OUT/explainer_serve.err" &
      SERVE=$!; sleep 2
      timeout 900 python3 bench/explainer_jobs.py http://127.0.0.1:8798 "$OUT" 2 | tee "$OUT/explainer.txt"
      kill $SERVE; wait $SERVE 2>/dev/null ;;
    nonvrtc)
      NV=(--epochs 3 --precisions fp32,fp16 --json)
      SHOWDOWN_KERNELS=nvrtc "$G/showdown" doctor > "$OUT/doctor_nvrtc.txt" 2>&1
      SHOWDOWN_KERNELS=nvrtc "${DUEL[@]}" "${NV[@]}" > "$OUT/duel_nvrtc.json" 2> "$OUT/duel_nvrtc.err"
      echo "duel on NVRTC: exit $?"
      # Every libnvrtc the loader could find (ldconfig's cache, LD_LIBRARY_PATH, the toolkit),
      # symlinks resolved: the mounts cover the files themselves.
      HIDE=$( { ldconfig -p | awk '/libnvrtc/{print $NF}'
                for d in ${LD_LIBRARY_PATH//:/ } /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /usr/lib/x86_64-linux-gnu; do
                  ls "$d"/libnvrtc* 2>/dev/null; done; } | xargs -r readlink -f | sort -u | tr '\n' ' ')
      echo "hiding: $HIDE"
      U=(); [ "$(id -u)" = 0 ] || U=(--map-root-user)  # not root: a user namespace may mount
      HIDE="$HIDE" OUT="$OUT" unshare --mount "${U[@]}" -- bash -c '
        for f in $HIDE; do mount --bind /dev/null "$f" || exit 3; done
        python3 -c "import ctypes
for n in (\"libnvrtc.so\", \"libnvrtc.so.12\", \"libnvrtc.so.13\"):
    try: ctypes.CDLL(n); print(\"still loads:\", n); raise SystemExit(4)
    except OSError: pass" || exit 4
        "$0" doctor > "$OUT/doctor_nonvrtc.txt" 2>&1
        "$0" "$@" > "$OUT/duel_nonvrtc.json" 2> "$OUT/duel_nonvrtc.err"
        echo "duel without NVRTC: exit $?"
        SHOWDOWN_KERNELS=ptx "$0" doctor > "$OUT/doctor_ptx.txt" 2>&1
        SHOWDOWN_KERNELS=ptx "$0" "$@" > "$OUT/duel_ptx.json" 2> "$OUT/duel_ptx.err"
        echo "duel without NVRTC, embedded PTX: exit $?"' "$G/showdown" duel --backend cuda "${DATA[@]}" "${NV[@]}"
      echo "namespace: exit $?"
      for t in nvrtc nonvrtc ptx; do echo "--- doctor ($t)"; grep -E "^(NVRTC|kernels|GPU|auto)" "$OUT/doctor_$t.txt"; done
      python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(tag):
    p = os.path.join(out, f"duel_{tag}.json")
    try:
        return {r["precision"]: r for r in json.load(open(p))["runs"]}
    except Exception as e:
        print(f"{tag}: no result ({e}): see duel_{tag}.err"); return {}
base, runs = load("nvrtc"), {t: load(t) for t in ("nonvrtc", "ptx")}
print(f"{'precision':<9} {'NVRTC ms':>9} {'cubin ms':>9} {'ratio':>7} {'PTX ms':>9} {'ratio':>7}   test acc (NVRTC / cubin / PTX)")
for p, b in base.items():
    c, x = runs["nonvrtc"].get(p, {}), runs["ptx"].get(p, {})
    cm, xm, bm = c.get("epoch_ms_median", float("nan")), x.get("epoch_ms_median", float("nan")), b["epoch_ms_median"]
    print(f"{p:<9} {bm:>9.1f} {cm:>9.1f} {cm / bm:>7.3f} {xm:>9.1f} {xm / bm:>7.3f}   "
          f"{b['test_accuracy']:.4f} / {c.get('test_accuracy', float('nan')):.4f} / {x.get('test_accuracy', float('nan')):.4f}")
PY
      ;;
    ncu_conv)
      ncu --set full -k regex:conv_tc_opt --launch-skip 1 --launch-count 1 -o "$OUT/conv_tc_opt" \
        "$G/showdown" bench conv --layers ${NCU_LAYER:-lab_conv2} --reps 5 > "$OUT/ncu_conv.txt" 2>&1
      echo "ncu conv: exit $?"
      ncu --import "$OUT/conv_tc_opt.ncu-rep" --page details --csv > "$OUT/conv_tc_opt_details.csv" 2>/dev/null
      ncu --import "$OUT/conv_tc_opt.ncu-rep" --print-summary per-kernel > "$OUT/conv_tc_opt_summary.txt" 2>/dev/null
      grep -E "conv_tc_opt|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per" "$OUT/conv_tc_opt_summary.txt" | head -40 ;;
    fp8)
      # FP8 (issue 28) on the GPU: its GPU tests, a 5-epoch duel fp32/fp16/bf16/fp8 at batch 128 (and FP8
      # with current scaling), then memcheck and racecheck on a short FP8 duel (the cast and scaling kernels).
      SHOWDOWN_REQUIRE_GPU=1 "$G/compute-tests" cuda::gpu_tests::fp8 cuda::gpu_tests::gpu_fp8 cuda::gpu_tests::a_gpu_duel_trains_fp8 cuda::gpu_tests::a_replayed_step_graph cuda::fp8 --include-ignored --test-threads 1 > "$OUT/fp8_tests.log" 2>&1
      echo "fp8 gpu tests: exit $? — $(grep -E '^test result' "$OUT/fp8_tests.log")"
      grep -E 'FAILED|panicked' "$OUT/fp8_tests.log" | head -5
      # The PyTorch FP8 peer's convolution (im2col + torch._scaled_mm) against F.conv2d on the GPU.
      python3 bench/duel_peer.py --check-fp8 --device cuda > "$OUT/fp8_peer_check.json" 2> "$OUT/fp8_peer_check.err"
      echo "fp8 peer check: exit $? — $(tail -c 600 "$OUT/fp8_peer_check.json")"
      # Through browser mode's door, as Act II sends it (saved in $OUT/home's run history, to render
      # in the app elsewhere), with PyTorch's side in the same reply; the report into fp8_duel.json.
      DS=mnist-sample; [ -d "$G/fashion" ] && DS=fashion-mnist
      SHOWDOWN_DATA_HOME="$OUT/home" SHOWDOWN_FASHION_MNIST_DIR="$G/fashion" SHOWDOWN_PYTHON=python3 \
        served_duel 8797 fp8 "{\"op\":\"duel\",\"config\":{\"backend\":\"cuda\",\"dataset\":\"$DS\",\"epochs\":${FP8_EPOCHS:-5},\"batch\":128,\"precisions\":[\"fp32\",\"fp16\",\"bf16\",\"fp8\"],\"pytorch\":${FP8_PYTORCH:-false}}}"
      python3 -c 'import json,sys; l=[json.loads(x[6:]) for x in open(sys.argv[1]) if x.startswith("data: ")]; json.dump(l[-1].get("ok", l[-1]), open(sys.argv[2], "w"))' "$OUT/fp8_duel.sse" "$OUT/fp8_duel.json"
      echo "fp8 duel: exit $?"
      "${DUEL[@]}" --epochs ${FP8_EPOCHS:-5} --batch 128 --precisions fp8 --fp8-scaling current --json > "$OUT/fp8_duel_current.json" 2> "$OUT/fp8_duel_current.err"
      echo "fp8 duel (current scaling): exit $?"
      python3 - "$OUT/fp8_duel.json" "$OUT/fp8_duel_current.json" <<'PY'
import json, sys
for p in sys.argv[1:]:
    try:
        d = json.load(open(p))
    except Exception as e:
        print(p, "unreadable:", e); continue
    print(f"{d['device']} {d['dataset']['name']} batch {d['config']['batch']} {d['config']['epochs']} epochs")
    for r in d["runs"]:
        f = r.get("fp8")
        extra = f" fp8 {f['recipe']['scaling']} sat {sum(t['total']['overflow'] for t in f['tensors'])} flushed {sum(t['total']['underflow'] for t in f['tensors'])} on {f['device']}" if f else ""
        print(f"  {r['precision']:<5} {r['epoch_ms_median']:8.2f} ms  peak {r['peak_memory_bytes']/1e6:7.2f} MB  acc {r['test_accuracy']:.4f}{extra}")
    peer = d.get("peer") or {}
    for r in peer.get("runs", []):
        ms = sorted(e["ms"] for e in r["epochs"][1:]) or [r["epochs"][0]["ms"]]
        med = ms[len(ms) // 2] if len(ms) % 2 else (ms[len(ms) // 2 - 1] + ms[len(ms) // 2]) / 2
        peak = f"{r['peak_memory_bytes']/1e6:7.2f} MB" if r.get("peak_memory_bytes") else "      -   "
        print(f"  PyTorch {r['variant']:<12} {med:8.2f} ms  peak {peak}  acc {r['epochs'][-1]['test_accuracy']:.4f}  {r.get('scaling') or ''}")
    for s in peer.get("skipped", []):
        print("  PyTorch skipped:", s[:200])
PY
      # FP8_SANITIZE: all (default), memcheck (the delayed-scaling memcheck alone), none.
      [ "${FP8_SANITIZE:-all}" = none ] && continue
      compute-sanitizer --tool memcheck --print-limit 5 "${DUEL[@]}" --epochs 1 --train-limit 1024 --test-limit 256 --precisions fp8 > "$OUT/memcheck_fp8.txt" 2>&1
      echo "memcheck fp8: exit $? — $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_fp8.txt")"
      [ "${FP8_SANITIZE:-all}" = memcheck ] && continue
      compute-sanitizer --tool memcheck --print-limit 5 "${DUEL[@]}" --epochs 1 --train-limit 1024 --test-limit 256 --precisions fp8 --fp8-scaling current > "$OUT/memcheck_fp8_current.txt" 2>&1
      echo "memcheck fp8 current: exit $? — $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_fp8_current.txt")"
      compute-sanitizer --tool racecheck --print-limit 5 "${DUEL[@]}" --epochs 1 --train-limit 512 --test-limit 256 --precisions fp8 > "$OUT/racecheck_fp8.txt" 2>&1
      echo "racecheck fp8: exit $? — $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_fp8.txt" | tail -1)" ;;
    sanitizer)
      compute-sanitizer --tool memcheck --print-limit 5 "${DUEL[@]}" --epochs 1 --train-limit 2048 --test-limit 512 --precisions fp16,tf32 > "$OUT/memcheck.txt" 2>&1
      echo "memcheck: exit $? — $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt")"
      for p in fp32 tf32 fp16; do
        compute-sanitizer --tool racecheck --print-limit 5 "${DUEL[@]}" --epochs 1 --train-limit 512 --test-limit 256 --precisions $p > "$OUT/racecheck_$p.txt" 2>&1
        echo "racecheck $p: exit $? — $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_$p.txt" | tail -1)"
      done
      # The GELU/Swish path (act_route, the activation in the forward epilogues) in every dtype.
      compute-sanitizer --tool memcheck --print-limit 5 "${DUEL[@]}" --epochs 1 --train-limit 1024 --test-limit 256 --precisions fp32,fp16,bf16,tf32 --activation gelu > "$OUT/memcheck_gelu.txt" 2>&1
      echo "memcheck gelu: exit $? — $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_gelu.txt")"
      for p in fp32 fp16; do
        compute-sanitizer --tool racecheck --print-limit 5 "${DUEL[@]}" --epochs 1 --train-limit 512 --test-limit 256 --precisions $p --activation swish > "$OUT/racecheck_swish_$p.txt" 2>&1
        echo "racecheck swish $p: exit $? — $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck_swish_$p.txt" | tail -1)"
      done ;;
  esac
done
python3 - "$OUT" <<'PY'
import csv, json, os, sys, collections
out = sys.argv[1]
p = os.path.join(out, "duel.json")
if os.path.exists(p) and os.path.getsize(p):
    d = json.load(open(p))
    print(f"{'precision':<6} {'epoch ms':>9} {'peak MB':>8} {'acc':>7} {'p50 ms':>7} {'p90':>7} {'p99':>7}  epochs ms")
    for r in d["runs"]:
        st = r.get("step_times") or {}
        print(f"{r['precision']:<6} {r['epoch_ms_median']:>9.1f} {r['peak_memory_bytes']/1e6:>8.1f} {r['test_accuracy']:>7.4f} "
              f"{st.get('p50_ms', 0):>7.3f} {st.get('p90_ms', 0):>7.3f} {st.get('p99_ms', 0):>7.3f}  "
              + " ".join(f"{e['ms']:.0f}" for e in r["epochs"]))
p = os.path.join(out, "ncu_times.csv")
if os.path.exists(p):
    rows = [l for l in open(p) if l.startswith('"')]
    t = collections.defaultdict(list)
    for r in csv.DictReader(rows):
        if r.get("Metric Name") == "gpu__time_duration.sum":
            v = float(r["Metric Value"].replace(",", ""))
            t[r["Kernel Name"].split("(")[0]].append(v / (1000.0 if r["Metric Unit"] in ("ns", "nsecond") else 1.0))
    print("kernel (us, median of launches)")
    for k, v in sorted(t.items(), key=lambda kv: -sorted(kv[1])[len(kv[1]) // 2]):
        print(f"  {k:<32} {sorted(v)[len(v)//2]:8.1f} x{len(v)}")
PY
