import json, sys, statistics as st
from pathlib import Path
sys.path.insert(0, "tests")
from quaere.evaluate import EvalOptions, run_evaluation
from quaere.task.loader import load_task
from adversarial.candidates import write_candidate
tmp = Path(sys.argv[1]); tmp.mkdir(exist_ok=True, parents=True)
one = tmp / "one.json"; one.write_text(json.dumps([{"id": "a", "params": {"rows": 3, "cols": 7}}]))
task = load_task("cpu_softmax")
for i in range(int(sys.argv[2])):
    log = tmp / f"c{i}.jsonl"
    opts = EvalOptions(seed=11 + i, cache_dir=tmp / "cache", scenarios_file=one, call_log=log, benchmark_ids=frozenset({"bench-r2048-c512"}))
    ev = run_evaluation(task, write_candidate(tmp, sys.argv[3]), opts)
    rows = [json.loads(l) for l in log.read_text().splitlines()]
    t = ev.benchmarks[0].timing("candidate")
    idle = {n: [x["idle_cpu_ms"] for x in rows if x["impl"] == n and x.get("idle_cpu_ms") is not None] for n in ("candidate", "initial")}
    print(i, t.status.value, "idle cand min %.2f med %.2f max %.2f | init min %.2f med %.2f max %.2f" % (min(idle["candidate"]), st.median(idle["candidate"]), max(idle["candidate"]), min(idle["initial"]), st.median(idle["initial"]), max(idle["initial"])), "|", t.detail[90:135], flush=True)
