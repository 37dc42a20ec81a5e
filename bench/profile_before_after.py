"""Act IV's before/after of LayerNorm+GELU FP16 (issue 27): the kernel as shipped now, profiled
by the app's own Profile job through `showdown serve --http` (POST /api/job `profile`, the
lab's 8192x4096 launch), and the kernel shipped before, profiled with the same ncu options from
its verbatim copy in bench/ln_variants.cu (`ln_before<F16, 8, 4, true>`, the lab's grid). Both
CSVs are imported back through the app (`ncu_import`, `ncu_panels`) and their registers,
achieved occupancy, its limiter and duration are printed side by side.

    python3 bench/profile_before_after.py URL LN_BINARY OUT
"""
import json, os, shlex, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(__file__))
from serve_client import call, job  # noqa: E402

url, ln, out = sys.argv[1], sys.argv[2], sys.argv[3]
what = {"target": "kernel", "op": "layernorm_gelu", "dtype": "f16", "rows": 8192, "cols": 4096}
final, _ = job(url, {"op": "profile", "what": what})
if "ok" not in final:
    print("profile after: FAILED", json.dumps(final)[:400]); sys.exit(1)
cmd = shlex.split(final["ok"]["command"])
after_id = final["ok"]["import"]["id"]
# The same ncu options on the standalone copy of the kernel shipped before: every option up to
# the NVTX filter (ncu, --csv, the sections, the stall metrics), then that kernel by name.
if "--nvtx" not in cmd:
    print("profile after: the job's ncu command has no --nvtx filter:", final["ok"]["command"]); sys.exit(1)
ncu_opts = cmd[:cmd.index("--nvtx")]
before_cmd = ncu_opts + ["--kernel-name-base", "demangled", "--kernel-name", "regex:ln_before<F16.*\\(bool\\)1>",
                         "--launch-count", "1", ln]
print("before:", " ".join(shlex.quote(a) for a in before_cmd))
r = subprocess.run(before_cmd, capture_output=True, text=True, timeout=600)
csv_text = r.stdout[r.stdout.find('"ID"'):] if '"ID"' in r.stdout else r.stdout
open(os.path.join(out, "ln_gelu_f16_before.csv"), "w").write(csv_text)
if r.returncode != 0:
    print("ncu before: exit", r.returncode, r.stderr[-600:])
before = call(url, {"op": "ncu_import", "file_name": "ln_gelu_f16_before_h100.csv", "text": csv_text})
rows = {}
for name, imp in (("before", before["id"]), ("after", after_id)):
    for k in call(url, {"op": "ncu_panels", "import": imp}):
        vals = {}
        for p in k["panels"]:
            for m in p["metrics"]:
                vals[m.get("label") or m.get("name")] = m.get("shown") or m.get("value")
        rows[name] = (k["short_name"], vals)
        break
json.dump(rows, open(os.path.join(out, "ln_gelu_before_after.json"), "w"), indent=1)
want = ("Registers Per Thread", "Achieved Occupancy", "Theoretical Occupancy", "Block Limit Registers", "Duration",
        "DRAM Throughput", "Memory Throughput")
for name, (short, vals) in rows.items():
    picked = {w: vals.get(w) for w in want}
    print(f"{name:<6} {short[:40]:40} " + "; ".join(f"{k}: {v}" for k, v in picked.items()))
