"""Summarises compute-sanitizer racecheck output: hazards grouped by kind, kernel, PCs and address."""
import re, sys, collections
for path in sys.argv[1:]:
    txt = open(path, errors="replace").read()
    groups = collections.Counter()
    for blk in txt.split("========= Error: ")[1:]:
        kind = re.match(r"Potential (\w+) hazard", blk)
        addr = re.search(r"__shared__ (0x[0-9a-f]+)", blk)
        rd = re.search(r"(Read|Write) Thread \(\d+,\d+,\d+\) at (.+?) in (\S+)", blk)
        wr = re.search(r"Write Thread \(\d+,\d+,\d+\) at (.+?) in (\S+)", blk)
        if not kind:
            continue
        kern = re.search(r"launch<([^>]*)>", blk)
        groups[(kind.group(1) if kind else "?", kern.group(1) if kern else "?", rd.group(2) if rd else "?",
                wr.group(1) if wr else "?", int(addr.group(1), 16) & ~0xf if addr else 0)] += 1
    summ = re.findall(r"RACECHECK SUMMARY: .*", txt)
    print(f"== {path}: {summ[-1] if summ else 'no summary'}")
    for k, n in sorted(groups.items(), key=lambda x: -x[1]):
        print(f"  {n:5d}x {k[0]} kernel<{k[1]}> first={k[2]} write={k[3]} addr16={k[4]:#x}")
    for line in re.findall(r"(?m)^(?:mode|B=|rc_driver).*$", txt):
        print("  ", line)
