import json, sys, statistics as st
for f in sys.argv[1:]:
    rows = [json.loads(l) for l in open(f)]
    for run in (0, 1):
        out = {}
        for n in ("candidate", "initial"):
            r = [x for x in rows if x["impl"] == n and (x["index"] >= 1 << 40) == bool(run) and x.get("cpu_ms") is not None]
            if not r: continue
            d = [x["cpu_ms"] + x["queued_ms"] - x["device_ms"] for x in r]
            w = sorted(x["wall_ms"] - x["device_ms"] for x in r)
            out[n] = (len(r), st.median(d), w[len(w)//4], st.median([x["device_ms"] for x in r]), sorted(d))
        if len(out) == 2:
            c, i = out["candidate"], out["initial"]
            print(f, run, "n", c[0], i[0], "cpu ex %+.3f" % (c[1]-i[1]), "wall ex %+.3f" % (c[2]-i[2]), "claim %.2f" % c[3])
            print("   cand d:", " ".join("%.2f" % v for v in c[4])); print("   ref  d:", " ".join("%.2f" % v for v in i[4]))
