"""CPU-task candidates that attack the evaluator, built from one honest row softmax plus one attack each.

Each is a self-contained C++ source (the audit refuses headers outside the toolchain and the task), written
into a test's temporary folder with the paths it targets baked in at compile time: the runner's
environment is rebuilt by the judge, so a path cannot reach it through a variable.
"""

from __future__ import annotations

from pathlib import Path

HONEST = r"""
#include <cmath>
#include <cstring>
static int honest_softmax(const float* x, float* y, int rows, int cols) {
    for (int r = 0; r < rows; ++r) {
        const float* in = x + static_cast<long>(r) * cols;
        float* out = y + static_cast<long>(r) * cols;
        float m = in[0];
        for (int c = 1; c < cols; ++c) m = in[c] > m ? in[c] : m;
        double sum = 0.0;
        for (int c = 0; c < cols; ++c) { out[c] = std::exp(in[c] - m); sum += out[c]; }
        for (int c = 0; c < cols; ++c) out[c] = static_cast<float>(out[c] / sum);
    }
    return 0;
}
"""

ENTRY = 'extern "C" int softmax_rows(const float* x, float* y, int rows, int cols)'

# Python run inside the runner by a load-time constructor: libpython's symbols are global there, so weak
# references resolve to them when the library is loaded (no dlopen or dlsym in the source).
PYTHON_IN_RUNNER = r"""
extern "C" {
__attribute__((weak)) int PyGILState_Ensure();
__attribute__((weak)) void PyGILState_Release(int);
__attribute__((weak)) int PyRun_SimpleString(const char*);
}
static void run_python(const char* code) {
    if (!PyGILState_Ensure || !PyGILState_Release || !PyRun_SimpleString) return;
    int state = PyGILState_Ensure();
    PyRun_SimpleString(code);
    PyGILState_Release(state);
}
"""



def forged_claims(factor: float) -> str:
    """C++ whose constructor rewrites the runner's Python so that every timed call claims ``factor`` of its time."""
    return PYTHON_IN_RUNNER + f"""
__attribute__((constructor)) static void forge() {{
    run_python(
        "import quaere.runner.serve as s\\n"
        "_real = s._call\\n"
        "def _call(state, request):\\n"
        "    reply = _real(state, request)\\n"
        "    if 'device_ms' in reply: reply['device_ms'] = reply['device_ms'] * {factor}\\n"
        "    return reply\\n"
        "s._call = _call\\n");
}}
"""


ATTACKS = {
    # A second thread computes half the rows (joined): candidate code must not start threads.
    "thread": r"""
#include <thread>
ENTRY {
    int half = rows / 2;
    std::thread t([=] { honest_softmax(x + static_cast<long>(half) * cols, y + static_cast<long>(half) * cols,
                                       rows - half, cols); });
    honest_softmax(x, y, half, cols);
    t.join();
    return 0;
}
""",
    # At load time, a detached session child that edits a file after the evaluation ends.
    "fork_setsid": r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void escape() {
    if (fork() == 0) {
        setsid();
        sleep(1);
        int fd = open("@TARGET@", O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) { (void)!write(fd, "forged\n", 7); close(fd); }
        _exit(0);
    }
}
ENTRY { return honest_softmax(x, y, rows, cols); }
""",
    # Appends to a file outside the runner's scratch folder (say, a ledger); reports whether it could.
    "write_outside": r"""
#include <fcntl.h>
#include <unistd.h>
ENTRY {
    int fd = open("@TARGET@", O_WRONLY | O_APPEND);
    if (fd >= 0) { (void)!write(fd, "forged\n", 7); close(fd); return 77; }
    return honest_softmax(x, y, rows, cols);
}
""",
    # Reads a secret (say, the evaluator's signing key); reports whether it could.
    "read_secret": r"""
#include <fcntl.h>
#include <unistd.h>
ENTRY {
    int fd = open("@TARGET@", O_RDONLY);
    if (fd >= 0) { close(fd); return 78; }
    return honest_softmax(x, y, rows, cols);
}
""",
    # Kills the process that started it (the judge) on every call.
    "kill_parent": r"""
#include <signal.h>
#include <unistd.h>
ENTRY {
    kill(getppid(), SIGKILL);
    return honest_softmax(x, y, rows, cols);
}
""",
    # Rewrites the runner's Python at load time so that every timed call claims half its time.
    "forge_time": forged_claims(0.5) + "ENTRY { return honest_softmax(x, y, rows, cols); }\n",
    # The same, by 8%: inside the judge's wall-clock slack on a CPU task (10%), not its CPU-time bound.
    "forge_small": forged_claims(0.92) + "ENTRY { return honest_softmax(x, y, rows, cols); }\n",
    # Rewrites the runner's Python at load time so that calls say 'done, status 0' without running.
    "skip_call": PYTHON_IN_RUNNER + r"""
__attribute__((constructor)) static void forge() {
    run_python(
        "import quaere.runner.serve as s\n"
        "s._call = lambda state, request: {'ok': True, 'code': 0, 'device_ms': 0.001, 'host_ms': 0.001,"
        " 'drain_ms': 0.0}\n");
}
ENTRY { return honest_softmax(x, y, rows, cols); }
""",
    # Returns the output it computed for the same input pointer before, whatever the contents now.
    "memo_pointer": r"""
#include <vector>
ENTRY {
    static const float* last = nullptr;
    static std::vector<float> cache;
    const size_t n = static_cast<size_t>(rows) * cols;
    if (x == last && cache.size() == n) { std::memcpy(y, cache.data(), n * sizeof(float)); return 0; }
    honest_softmax(x, y, rows, cols);
    last = x;
    cache.assign(y, y + n);
    return 0;
}
""",
    # Returns a cached output when a fingerprint of a few input values was seen before.
    "memo_content": r"""
#include <map>
#include <vector>
ENTRY {
    static std::map<std::vector<float>, std::vector<float>> cache;
    const size_t n = static_cast<size_t>(rows) * cols;
    std::vector<float> key(x, x + (n < 8 ? n : 8));
    key.push_back(static_cast<float>(rows));
    key.push_back(static_cast<float>(cols));
    auto hit = cache.find(key);
    if (hit != cache.end()) { std::memcpy(y, hit->second.data(), n * sizeof(float)); return 0; }
    honest_softmax(x, y, rows, cols);
    cache[key] = std::vector<float>(y, y + n);
    return 0;
}
""",
}


def write_candidate(folder: Path, attack: str, target: Path | None = None) -> Path:
    """``folder/<attack>.cpp``: the honest softmax plus the attack, ``@TARGET@`` replaced by ``target``."""
    body = ATTACKS[attack].replace("ENTRY", ENTRY)
    if target is not None:
        body = body.replace("@TARGET@", str(target))
    path = folder / f"{attack}.cpp"
    path.write_text(HONEST + body)
    return path
