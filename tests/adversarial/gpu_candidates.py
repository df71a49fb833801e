"""FlashAttention-task candidates that attack the timing, built around the shipped kernel.

The shipped kernel's source is taken as it is, its entry point renamed ``honest_forward``; one wrapper per
attack becomes the new ``attention_forward``. The result is one self-contained .cu file, as a candidate is.
"""

from __future__ import annotations

from pathlib import Path

from .candidates import (
    PYTHON_IN_RUNNER,
    c_lines,
    call_rewrite,
    forged_claims,
    forged_majority,
    forged_shave,
    wait_rewrite,
)

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

CALL_ONLY = f"{SIGNATURE} {{ return {CALL}; }}\n"
# Python run in the runner at load time (the constructor's route: PYTHON_IN_RUNNER): claims 10% short, and the
# runner's write of the close word replaced by ``write``.
CLAIMS_TENTH_SHORT = """import quaere.runner.serve as s
_real_call = s._call
def _call(*args):
    reply = _real_call(*args)
    if 'device_ms' in reply: reply['device_ms'] = reply['device_ms'] * 0.9
    return reply
s._call = _call
"""
WORD_REWRITE = """import quaere.runner.cuda as c
_real_write, _side = c.Driver.write_value, []
def write_value(self, stream, address, value):
    if not _side: _side.append(self.stream())
    {write}
c.Driver.write_value = write_value
"""


def python_at_load(python: str) -> str:
    """C++ whose load-time constructor runs ``python`` in the runner's interpreter (PYTHON_IN_RUNNER's route)."""
    literal = c_lines(python, "    ")
    return PYTHON_IN_RUNNER + f"""
__attribute__((constructor)) static void rewrite_at_load() {{
    run_python(
{literal}    "");
}}
"""


# A private non-blocking stream, made to wait for everything the caller's stream has so far.
SIDE_STREAM = """static cudaStream_t side = nullptr;
    static cudaEvent_t mark = nullptr;
    if (!side) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        cudaEventCreateWithFlags(&mark, cudaEventDisableTiming);
    }
    cudaEventRecord(mark, (cudaStream_t)stream);
    cudaStreamWaitEvent(side, mark, 0);"""

# Computes the next call's output ahead, while the runner waits: a rewritten wait (Python from a constructor)
# polls a fingerprint of the inputs the last call was given; as soon as it changed, the work runs into private
# buffers, and a message that came meanwhile waits until the inputs have been looked at once more and done.
# The call then checks the fingerprint and only copies.
# Its claim is honest (the copy); the work is off the claimed interval, wherever the inputs first appear.
# Against the judge as it was before the gated call (inputs written before the request), an earlier form of
# it (which waited for the inputs to hold still) was `measured` at up to 7.3x FA3 (docs/security.md).
PRECOMPUTE = PYTHON_IN_RUNNER + r"""
#include <cstdio>
#include <cstdint>
#include <array>
namespace {
struct Seen {
    const void *q = nullptr, *k = nullptr, *v = nullptr;
    int batch, sq, sk, hq, hkv, d, causal;
    float scale;
};
Seen seen;
void *o_ahead = nullptr, *lse_ahead = nullptr;
size_t o_cap = 0, lse_cap = 0;
cudaStream_t own = nullptr;
using Key = std::array<unsigned long long, 18>;
Key done{};
bool have_done = false;
Key fingerprint(const Seen& s) {  // 16 bytes at the start, middle and end of q, k and v
    Key key{};
    const size_t nq = (size_t)s.batch * s.sq * s.hq * s.d * 2, nk = (size_t)s.batch * s.sk * s.hkv * s.d * 2;
    const void* bufs[3] = {s.q, s.k, s.v};
    const size_t sizes[3] = {nq, nk, nk};
    for (int b = 0; b < 3; ++b) {
        const size_t at[3] = {0, (sizes[b] / 2) & ~(size_t)15, sizes[b] - 16};
        for (int j = 0; j < 3; ++j)
            cudaMemcpy(&key[6 * b + 2 * j], (const char*)bufs[b] + at[j], 16, cudaMemcpyDeviceToHost);
    }
    return key;
}
}
extern "C" void forget() { seen.q = nullptr; have_done = false; }  // before the judge unmaps a buffer
extern "C" int ahead() {
    if (seen.q == nullptr) return 0;
    const Key now = fingerprint(seen);
    if (have_done && now == done) return 0;
    if (!own) cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    const size_t ob = (size_t)seen.batch * seen.sq * seen.hq * seen.d * 2;
    const size_t lb = (size_t)seen.batch * seen.hq * seen.sq * 4;
    if (ob > o_cap) { cudaFree(o_ahead); cudaMalloc(&o_ahead, ob); o_cap = ob; }
    if (lb > lse_cap) { cudaFree(lse_ahead); cudaMalloc(&lse_ahead, lb); lse_cap = lb; }
    honest_forward(seen.q, seen.k, seen.v, o_ahead, (float*)lse_ahead, seen.batch, seen.sq, seen.sk, seen.hq, seen.hkv,
                   seen.d, seen.scale, seen.causal, nullptr, 0, own);
    cudaStreamSynchronize(own);
    done = now;
    have_done = fingerprint(seen) == now;  // the inputs did not move while it ran
    return 1;
}
""" + wait_rewrite(r"""        "    while not select.select([channel], [], [], 0.0002)[0]:\n"
        "        _ahead()\n"
        "    while _ahead():\n"
        "        pass\n"
""") + f"""{SIGNATURE} {{
    const Seen now{{q, k, v, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal, softmax_scale}};
    const bool same = seen.q == q && seen.k == k && seen.v == v && seen.batch == batch && seen.sq == seqlen_q &&
                      seen.sk == seqlen_k && seen.hq == heads_q && seen.d == head_dim && seen.causal == causal;
    seen = now;
    {OUTPUT_BYTES}
    if (same && have_done && fingerprint(now) == done) {{
        cudaMemcpyAsync(o, o_ahead, o_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
        cudaMemcpyAsync(lse, lse_ahead, lse_bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)stream);
        return 0;
    }}
    if (!same) have_done = false;
    return {CALL};
}}
"""

# Device work left queued after each reply: the runner's Python is rewritten so that, once its call has drained
# and before the reply goes out, a one-block spin of LEFT_WORK_NS starts on a private stream. The runner is then
# stopped, but its queued kernel runs on into whatever the judge times next; contexts of different processes
# time-slice, so a single block of it can hold back the whole device for a comparison (FA3) or the initial
# kernel, while in its own context it takes one SM of 132 from the candidate's next call.
LEFT_WORK_NS = 2_000_000
LEFT_WORK = r"""
#include <cstdio>
#include <cstdint>
__global__ void left_spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
extern "C" void leave_work() {
    static cudaStream_t side = nullptr;
    if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    left_spin<<<1, 32, 0, side>>>(@NS@ull);
}
""".replace("@NS@", str(LEFT_WORK_NS)) + call_rewrite("    _leave()\n", {"_leave": "leave_work"}) + \
    f"{SIGNATURE} {{ return {CALL}; }}\n"

# Host code that writes "escaped" to the path it is given (the attacks below replace @TARGET@ by a path outside the
# runner's scratch folder).
ESCAPE = """#include <fcntl.h>
#include <unistd.h>
static void CUDART_CB escape(void* path) {
    const int fd = open(static_cast<const char*>(path), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        if (write(fd, "escaped\\n", 8) != 8) {}
        close(fd);
    }
}"""

# The start of an attack through a graph of its own: the honest call, then an empty graph and its parts.
GRAPH_START = f"""    const int status = {CALL};
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaGraphNode_t node;
"""

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
    # Three calls in five claim 70% of their time, the others the truth: the median claim (the reported time) is
    # 30% short while the lowest quarter of (span - claim) over all calls is the honest calls' (forged_majority).
    "forge_majority": forged_majority(0.7, 3, 5) + CALL_ONLY,
    # 6 us less on every call (4.5% of a D=128 S=512 call): inside the close span's 8 us slack, over the runner's
    # turn's 3 us (TimingRule.slot_abs_ms).
    "forge_shave": forged_shave(6.0) + CALL_ONLY,
    # The work done ahead of the call, on inputs seen as soon as they exist (see PRECOMPUTE).
    "precompute": PRECOMPUTE,
    # The close word (quaere.evaluate.close_word) written at once on an idle private stream instead of behind the
    # work, so that the judge's close mark need not wait for the work, with claims 10% short (forge_small's).
    "early_word": python_at_load(CLAIMS_TENTH_SHORT + WORD_REWRITE.format(write="_real_write(self, _side[0], address, "
                                                                               "value)")) + CALL_ONLY,
    # The close word never written, with claims 10% short: the judge's stream would wait for it forever.
    "no_word": python_at_load(CLAIMS_TENTH_SHORT + WORD_REWRITE.format(write="pass")) + CALL_ONLY,
    # Work queued after each reply, into the next implementation's window (see LEFT_WORK).
    "left_work": LEFT_WORK,
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
    # A host function queued on the caller's stream: the CUDA driver runs it on a thread of its own, which may have
    # been started before the runner locked itself in (seccomp and Landlock bind the thread that installs them and
    # the threads it starts later). It writes a file outside the runner's scratch folder.
    "host_callback": f"""
{ESCAPE}
{SIGNATURE} {{
    const int status = {CALL};
    cudaLaunchHostFunc((cudaStream_t)stream, escape, (void*)"@TARGET@");
    return status;
}}
""",
    # The same host code reached through the driver's other ways of calling the host back: a stream callback,
    # a graph's host node, and a user object's destructor (run when the graph that owns it is done with it).
    "stream_callback": f"""
{ESCAPE}
static void CUDART_CB escape_cb(cudaStream_t, cudaError_t, void* path) {{ escape(path); }}
{SIGNATURE} {{
    const int status = {CALL};
    cudaStreamAddCallback((cudaStream_t)stream, escape_cb, (void*)"@TARGET@", 0);
    return status;
}}
""",
    "graph_host_node": f"""
{ESCAPE}
{SIGNATURE} {{
{GRAPH_START}    cudaHostNodeParams params = {{}};
    params.fn = escape;
    params.userData = (void*)"@TARGET@";
    if (cudaGraphCreate(&graph, 0) == cudaSuccess && cudaGraphAddHostNode(&node, graph, nullptr, 0, &params) ==
        cudaSuccess && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) {{
        cudaGraphLaunch(exec, (cudaStream_t)stream);
    }}
    return status;
}}
""",
    "user_object_destructor": f"""
{ESCAPE}
{SIGNATURE} {{
{GRAPH_START}    cudaUserObject_t object;
    if (cudaGraphCreate(&graph, 0) == cudaSuccess && cudaGraphAddEmptyNode(&node, graph, nullptr, 0) == cudaSuccess &&
        cudaUserObjectCreate(&object, (void*)"@TARGET@", escape, 1, cudaUserObjectNoDestructorSync) == cudaSuccess &&
        cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove) == cudaSuccess &&
        cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) {{
        cudaGraphLaunch(exec, (cudaStream_t)stream);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
    }}
    return status;
}}
""",
}
# The attacks that write a file outside the scratch folder from host code the CUDA driver calls back.
HOST_CALLBACKS = ("host_callback", "stream_callback", "graph_host_node", "user_object_destructor")


def write_gpu_candidate(folder: Path, attack: str, target: Path | None = None) -> Path:
    """``folder/<attack>.cu``: the shipped kernel plus the attack, ``@TARGET@`` replaced by ``target``."""
    source = KERNEL.read_text()
    if source.count(ENTRY) != 1:
        raise ValueError(f"{KERNEL}: expected one '{ENTRY}'")
    honest = source.replace(ENTRY, 'static int honest_forward(')
    attack_source = ATTACKS[attack] if target is None else ATTACKS[attack].replace("@TARGET@", str(target))
    path = folder / f"{attack}.cu"
    path.write_text(honest + "\n" + attack_source)
    return path
