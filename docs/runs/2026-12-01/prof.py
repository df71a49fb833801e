"""Runs one benchmark configuration 3 times through a built kernel (for ncu: profile launch 3)."""
import math, sys
sys.path.insert(0, __import__("os").path.dirname(__file__))
import run_bench as rb
import torch
lib, b, s, hq, hkv, d, causal = sys.argv[1], *map(int, sys.argv[2:8])
f = rb.load_lib(lib)
q = torch.randn(b, s, hq, d, device="cuda").to(torch.bfloat16)
k = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
v = torch.randn(b, s, hkv, d, device="cuda").to(torch.bfloat16)
o = torch.empty_like(q); lse = torch.empty(b, hq, s, device="cuda", dtype=torch.float32)
ws = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
for _ in range(3):
    rb.call(f, q, k, v, o, lse, 1.0 / math.sqrt(d), causal, ws)
torch.cuda.synchronize()
print("prof ok")
