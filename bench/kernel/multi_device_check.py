"""One build of the kernel file called on every GPU of one process in turn: device 0, each other device, device 0 again.

Usage: python bench/kernel/multi_device_check.py LIB.so
Stage 22: the host side kept per-process what holds per device (the kernels' shared-memory attribute, the SM
count, the clusters that fit), so a call on a second device could be refused. Each device runs a few of run_bench's
checks (a kernel of each head dim, cluster and not); prints one line per case and exits 1 if any failed or was
refused, 2 with fewer than two devices.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_bench import check_case, load_lib  # noqa: E402

# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal): D=128 causal and not, D=64 non-causal (2-CTA
# clusters), D=64 causal, D=256 non-causal (clusters) and causal
CASES = [(2, 1000, 1000, 4, 2, 128, 1), (2, 700, 900, 4, 4, 128, 0), (1, 1000, 1000, 4, 4, 64, 0),
         (1, 3000, 3000, 2, 2, 64, 1), (1, 500, 800, 2, 1, 256, 0), (1, 900, 900, 2, 2, 256, 1)]


def main() -> int:
    import torch
    f = load_lib(sys.argv[1])
    n = torch.cuda.device_count()
    if n < 2:
        print(f"MULTI-DEVICE not run: {n} device(s)")
        return 2
    failed = 0
    for dev in [0, *range(1, n), 0]:
        torch.cuda.set_device(dev)
        ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
        for b, sq, sk, hq, hkv, d, causal in CASES:
            try:
                ok, line = check_case(f, ws, b, sq, sk, hq, hkv, d, causal)
            except RuntimeError as e:  # the entry point's nonzero status
                ok, line = False, f"REFUSED B={b} Sq={sq} Sk={sk} Hq={hq} Hkv={hkv} D={d} causal={causal}: {e}"
            failed += not ok
            print(f"device {dev}: {line}", flush=True)
    print(f"MULTI-DEVICE {'ok' if not failed else f'{failed} failed'} over {n} devices")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
