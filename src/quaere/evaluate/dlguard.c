/* quaere dlguard: an LD_PRELOAD shim that records every dlopen, dlmopen and dlsym of the process.
 *
 * One line per call is appended to the file named by QUAERE_DLGUARD_LOG:
 *     <pid> TAB <dlopen|dlmopen|dlsym> TAB <requested library or symbol> TAB <caller object path> LF
 * and one line "<pid> TAB loaded TAB dlguard TAB ?" when the shim is loaded, so a missing line proves
 * the guard was not active (an empty log would otherwise look like a clean run).
 * The caller is the object containing the call's return address (found with dladdr), so the evaluator
 * can keep only the calls made by the candidate (PyTorch itself preloads cuBLAS and dlopens cuDNN).
 *
 * Transparency matters as much as logging: glibc's dlopen/dlsym use their own return address to pick
 * the caller's RUNPATH, $ORIGIN, namespace and RTLD_NEXT. Each wrapper therefore logs in a separate
 * function and then tail-calls the real function, so the real one sees the original caller's return
 * address. Compile with -O2 (sibling calls) and without a stack protector (it could block them).
 *
 * dlvsym is not interposed: it is how the shim finds the real dlsym without calling itself.
 * This is a guard against a candidate that loads a banned library, not a sandbox: code running in the
 * process can always unset it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn real_dlsym_ptr;
static dlopen_fn real_dlopen_ptr;
static dlmopen_fn real_dlmopen_ptr;
static int log_fd = -2; /* -2: not opened yet, -1: no log */

static dlsym_fn real_dlsym(void) {
    if (!real_dlsym_ptr) {
        /* glibc >= 2.34 versions dlsym GLIBC_2.34; older ones GLIBC_2.2.5 (x86-64) or GLIBC_2.17 (aarch64). */
        static const char *versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", NULL};
        for (const char **v = versions; *v && !real_dlsym_ptr; ++v)
            real_dlsym_ptr = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", *v);
    }
    return real_dlsym_ptr;
}

static void copy_clean(char *out, size_t cap, const char *text) {
    size_t n = 0;
    if (!text) text = "(null)";
    for (; *text && n + 1 < cap; ++text, ++n)
        out[n] = (*text == '\t' || *text == '\n' || *text == '\r') ? '?' : *text;
    out[n] = '\0';
}

static __attribute__((noinline)) void record(const char *kind, const char *name, void *return_address) {
    if (log_fd == -2) {
        const char *path = getenv("QUAERE_DLGUARD_LOG");
        log_fd = (path && *path) ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    }
    if (log_fd < 0) return;
    Dl_info info;
    const char *caller = "?";
    if (return_address && dladdr(return_address, &info) && info.dli_fname) caller = info.dli_fname;
    char clean_name[1024], clean_caller[2048], line[3200];
    copy_clean(clean_name, sizeof clean_name, name);
    copy_clean(clean_caller, sizeof clean_caller, caller);
    int n = snprintf(line, sizeof line, "%ld\t%s\t%s\t%s\n", (long)getpid(), kind, clean_name, clean_caller);
    if (n > 0) {
        /* One write per line: O_APPEND keeps lines from several threads or processes whole. */
        ssize_t ignored = write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)ignored;
    }
}

__attribute__((constructor)) static void announce(void) { record("loaded", "dlguard", NULL); }

void *dlopen(const char *file, int mode) {
    record("dlopen", file, __builtin_return_address(0));
    if (!real_dlopen_ptr) real_dlopen_ptr = (dlopen_fn)real_dlsym()(RTLD_NEXT, "dlopen");
    return real_dlopen_ptr(file, mode); /* tail call: the real dlopen sees our caller's address */
}

void *dlmopen(Lmid_t lmid, const char *file, int mode) {
    record("dlmopen", file, __builtin_return_address(0));
    if (!real_dlmopen_ptr) real_dlmopen_ptr = (dlmopen_fn)real_dlsym()(RTLD_NEXT, "dlmopen");
    return real_dlmopen_ptr(lmid, file, mode);
}

void *dlsym(void *handle, const char *symbol) {
    record("dlsym", symbol, __builtin_return_address(0));
    return real_dlsym()(handle, symbol);
}
