"""FlashAttention-task candidates that attack the timing, built around the shipped kernel.

The shipped kernel's source is taken as it is, its entry point renamed ``honest_forward``; one wrapper per
attack becomes the new ``attention_forward``. The result is one self-contained .cu file, as a candidate is.
"""

from __future__ import annotations

from pathlib import Path

from .candidates import forged_claims

KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "flash_attention_hopper.cu"
ENTRY = 'extern "C" int attention_forward('
SIGNATURE = """extern "C" int attention_forward(const void* q, const void* k, const void* v, void* o, float* lse,
    int batch, int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim, float softmax_scale,
    int causal, void* workspace, size_t workspace_bytes, void* stream)"""
CALL = ("honest_forward(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, softmax_scale, "
        "causal, workspace, workspace_bytes, stream)")
# The output sizes: one C statement, shared by the memo_* attacks.
OUTPUT_BYTES = ("const size_t o_bytes = (size_t)batch * seqlen_q * heads_q * head_dim * 2, "
                "lse_bytes = (size_t)batch * heads_q * seqlen_q * 4;")

# A private non-blocking stream, made to wait for everything the caller's stream has so far.
SIDE_STREAM = """static cudaStream_t side = nullptr;
    static cudaEvent_t mark = nullptr;
    if (!side) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        cudaEventCreateWithFlags(&mark, cudaEventDisableTiming);
    }
    cudaEventRecord(mark, (cudaStream_t)stream);
    cudaStreamWaitEvent(side, mark, 0);"""

ATTACKS = {
    # The second half of the batch runs on a private stream after the first: outside the caller's stream.
    "private_stream": f"""
{SIGNATURE} {{
    if (batch < 2) return {CALL};
    const int half = batch / 2;
    const size_t q_step = (size_t)seqlen_q * heads_q * head_dim, kv_step = (size_t)seqlen_k * heads_kv * head_dim;
    int status = honest_forward(q, k, v, o, lse, half, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim,
                                softmax_scale, causal, workspace, workspace_bytes, stream);
    {SIDE_STREAM}
    const __nv_bfloat16* qb = (const __nv_bfloat16*)q;
    const __nv_bfloat16* kb = (const __nv_bfloat16*)k;
    const __nv_bfloat16* vb = (const __nv_bfloat16*)v;
    return status | honest_forward(qb + half * q_step, kb + half * kv_step, vb + half * kv_step,
                                   (__nv_bfloat16*)o + half * q_step, lse + (size_t)half * heads_q * seqlen_q,
                                   batch - half, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, softmax_scale,
                                   causal, workspace, workspace_bytes, side);
}}
""",
    # Returns the output cached for the same q pointer and shape, whatever q holds now.
    "memo_pointer": f"""
#include <map>
#include <tuple>
{SIGNATURE} {{
    static std::map<std::tuple<const void*, int, int, int, int>, std::pair<void*, void*>> cache;
    {OUTPUT_BYTES}
    auto key = std::make_tuple(q, batch, seqlen_q, heads_q, head_dim);
    auto hit = cache.find(key);
    cudaStream_t s = (cudaStream_t)stream;
    if (hit != cache.end()) {{
        cudaMemcpyAsync(o, hit->second.first, o_bytes, cudaMemcpyDeviceToDevice, s);
        cudaMemcpyAsync(lse, hit->second.second, lse_bytes, cudaMemcpyDeviceToDevice, s);
        return 0;
    }}
    int status = {CALL};
    void *oc = nullptr, *lc = nullptr;
    cudaMalloc(&oc, o_bytes);
    cudaMalloc(&lc, lse_bytes);
    cudaMemcpyAsync(oc, o, o_bytes, cudaMemcpyDeviceToDevice, s);
    cudaMemcpyAsync(lc, lse, lse_bytes, cudaMemcpyDeviceToDevice, s);
    cache[key] = {{oc, lc}};
    return status;
}}
""",
    # Returns the output cached for a fingerprint of the first values of q, k and v (read back to the host).
    "memo_content": f"""
#include <array>
#include <map>
{SIGNATURE} {{
    static std::map<std::array<unsigned long long, 7>, std::pair<void*, void*>> cache;
    {OUTPUT_BYTES}
    std::array<unsigned long long, 7> key{{}};
    cudaMemcpy(&key[0], q, 16, cudaMemcpyDeviceToHost);
    cudaMemcpy(&key[2], k, 16, cudaMemcpyDeviceToHost);
    cudaMemcpy(&key[4], v, 16, cudaMemcpyDeviceToHost);
    key[6] = ((unsigned long long)batch << 40) ^ ((unsigned long long)seqlen_q << 20) ^ (unsigned long long)head_dim;
    cudaStream_t s = (cudaStream_t)stream;
    auto hit = cache.find(key);
    if (hit != cache.end()) {{
        cudaMemcpyAsync(o, hit->second.first, o_bytes, cudaMemcpyDeviceToDevice, s);
        cudaMemcpyAsync(lse, hit->second.second, lse_bytes, cudaMemcpyDeviceToDevice, s);
        return 0;
    }}
    int status = {CALL};
    if (cache.size() < 16) {{
        void *oc = nullptr, *lc = nullptr;
        cudaMalloc(&oc, o_bytes);
        cudaMalloc(&lc, lse_bytes);
        cudaMemcpyAsync(oc, o, o_bytes, cudaMemcpyDeviceToDevice, s);
        cudaMemcpyAsync(lc, lse, lse_bytes, cudaMemcpyDeviceToDevice, s);
        cache[key] = {{oc, lc}};
    }}
    return status;
}}
""",
    # Rewrites the runner's Python so that every timed call claims half its device time.
    "forge_time": forged_claims(0.5) + f"{SIGNATURE} {{ return {CALL}; }}\n",
    # Claims 10% less than its device time: on a 0.1-0.3 ms call that is 10-30 us, inside the host clock's
    # 50 us slack, so only a bound on a finer clock sees it.
    "forge_small": forged_claims(0.9) + f"{SIGNATURE} {{ return {CALL}; }}\n",
    # 15 us of device work on a private stream that outlasts the caller's stream: a drain under the 30 us
    # drain slack and a wall time under the host clock's 50 us (a model of a small share of the real work
    # moved off the timed stream).
    "hidden_tail": f"""
__global__ void hidden_spin(unsigned long long ns) {{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {{ asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); }} while (now - start < ns);
}}
{SIGNATURE} {{
    const int status = {CALL};
    {SIDE_STREAM}
    hidden_spin<<<1, 32, 0, side>>>(15000ull);
    return status;
}}
""",
}


def write_gpu_candidate(folder: Path, attack: str) -> Path:
    source = KERNEL.read_text()
    if source.count(ENTRY) != 1:
        raise ValueError(f"{KERNEL}: expected one '{ENTRY}'")
    honest = source.replace(ENTRY, 'static int honest_forward(')
    path = folder / f"{attack}.cu"
    path.write_text(honest + "\n" + ATTACKS[attack])
    return path
