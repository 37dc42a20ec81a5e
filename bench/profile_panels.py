"""Act IV's Profile button on a GPU, as the app sends it: `profile` jobs through
`showdown serve --http` (POST /api/job, no sections named: the default set), then the seven
panels of each import through POST /api/call `ncu_panels`. Prints, per kernel, which panels have
rows and whether the warp-state panel ranks the stall reasons; copies each import's CSV out.

    python3 bench/profile_panels.py URL DATA_HOME OUT
"""
import json, os, shutil, sys

sys.path.insert(0, os.path.dirname(__file__))
from serve_client import call, job  # noqa: E402

url, home, out = sys.argv[1], sys.argv[2], sys.argv[3]
targets = {
    "kernel": {"target": "kernel", "op": "gelu_erf", "dtype": "f16", "rows": 8192, "cols": 4096},
    "step": {"target": "step", "precision": "fp16", "batch": 128},
}
summary = {}
for name, what in targets.items():
    final, events = job(url, {"op": "profile", "what": what})
    if "ok" not in final:
        print(f"profile {name}: FAILED {final}")
        summary[name] = {"error": final}
        continue
    imp = final["ok"]["import"]
    src = os.path.join(home, "imports", imp["id"], "source.csv")
    if os.path.exists(src):
        shutil.copy(src, os.path.join(out, f"profile_{name}.csv"))
    kernels = call(url, {"op": "ncu_panels", "import": imp["id"]})
    rows = []
    for k in kernels:
        filled = {p["id"]: len(p["metrics"]) for p in k["panels"]}
        warp = next(p for p in k["panels"] if p["id"] == "warp_state")
        stalls = len((warp.get("chart") or {}).get("bars") or [])
        rows.append({"kernel": k["short_name"], "rows": filled, "stall_bars": stalls})
        empty = [p for p, n in filled.items() if n == 0]
        print(f"profile {name}: {k['short_name'][:40]:40} panels with rows {7 - len(empty)}/7"
              f"{' (empty: ' + ', '.join(empty) + ')' if empty else ''}; stall reasons {stalls}")
    summary[name] = {"command": final["ok"]["command"], "kernels": rows}
json.dump(summary, open(os.path.join(out, "profile_panels.json"), "w"), indent=1)
