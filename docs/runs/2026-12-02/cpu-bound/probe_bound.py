import json, sys, statistics as st
from pathlib import Path
sys.path.insert(0, "tests")
from quaere.evaluate import EvalOptions, run_evaluation
from quaere.task.loader import load_task
from adversarial.candidates import write_candidate
tmp = Path(sys.argv[1]); tmp.mkdir(exist_ok=True, parents=True)
one = tmp / "one.json"; one.write_text(json.dumps([{"id": "a", "params": {"rows": 3, "cols": 7}}]))
task = load_task("cpu_softmax")
kind = sys.argv[3]
for i in range(int(sys.argv[2])):
    log = tmp / f"calls-{kind}-{i}.jsonl"
    opts = EvalOptions(seed=5 + i, cache_dir=tmp / "cache", scenarios_file=one, call_log=log,
                       benchmark_ids=frozenset({"bench-r2048-c512"}))
    cand = task.initial_kernel if kind == "honest" else write_candidate(tmp, kind)
    ev = run_evaluation(task, cand, opts)
    rows = [json.loads(l) for l in log.read_text().splitlines()]
    out = []
    for n in ("candidate", "initial"):
        r = [x for x in rows if x["impl"] == n and x.get("cpu_ms") is not None and x.get("idle_cpu_ms") is not None]
        d_old = [x["cpu_ms"] - x["device_ms"] for x in r]
        d_new = [x["cpu_ms"] + x["idle_cpu_ms"] + x["queued_ms"] - x["device_ms"] for x in r]; idle = [x["idle_cpu_ms"] for x in r]
        q = [x["queued_ms"] for x in r]
        out.append((n, len(r), st.median(d_old), max(d_old), st.median(d_new), st.median(q), max(q)))
    t = ev.benchmarks[0].timing("candidate"); print("speed", ev.benchmarks[0].timing("initial").median_ms / t.median_ms)
    c, ini = out
    print(f"{kind} {i} {t.status.value:12s} n={c[1]}/{ini[1]} old: cand_med {c[2]:.3f} ref_max {ini[3]:.3f} ex {c[2]-ini[3]:+.3f} | new: cand {c[4]:.3f} ref {ini[4]:.3f} ex {c[4]-ini[4]:+.3f} | idle med {st.median(idle):.3f} max {max(idle):.3f}", flush=True)
