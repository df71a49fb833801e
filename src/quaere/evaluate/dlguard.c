/* quaere dlguard: an LD_PRELOAD shim that records every dlopen, dlmopen, dlsym and dlvsym of the process.
 *
 * One line per call is appended to the file named by QUAERE_DLGUARD_LOG:
 *     <pid> TAB <kind> TAB <requested library or symbol> TAB <caller object path> TAB <target> LF
 * kind is dlopen, dlmopen, dlsym or dlvsym (its name field is "symbol@version"), or "error" when the
 * shim could not find the real dlsym (every lookup then fails). target is, for the
 * symbol lookups, the object the handle names (its path, "(main)", RTLD_DEFAULT or RTLD_NEXT), so a
 * lookup in a renamed copy of a banned library can be identified by that file's content; "-" otherwise.
 * One line "<pid> TAB loaded TAB dlguard TAB ? TAB -" is written when the shim is loaded, so a missing
 * line proves the guard was not active (an empty log would otherwise look like a clean run).
 * The caller is the object containing the call's return address (found with dladdr; "?" when the
 * address lies in no object, e.g. code copied into anonymous memory), so the evaluator can tell the
 * candidate's calls from the harness's.
 *
 * Transparency matters as much as logging: glibc's dl* functions use their own return address to pick
 * the caller's RUNPATH, $ORIGIN, namespace and RTLD_NEXT. Each wrapper therefore logs in a separate
 * function and then tail-calls the real function, so the real one sees the original caller's return
 * address. Compile with -O2 (sibling calls) and without a stack protector (it could block them).
 *
 * Finding the real functions: every dl* lookup function is interposed here, so the first one (dlsym)
 * is found without any of them, by walking the loaded objects (dl_iterate_phdr) and reading the first
 * other object's GNU hash table; the others then come from the real dlsym(RTLD_NEXT, ...).
 * This is a guard against a candidate that loads a banned library, not a sandbox: code running in the
 * process can always unset it, or reach the loader without these entry points.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*dlopen_fn)(const char *, int);
typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlvsym_fn)(void *, const char *, const char *);

static dlsym_fn real_dlsym_ptr;
static dlvsym_fn real_dlvsym_ptr;
static dlopen_fn real_dlopen_ptr;
static dlmopen_fn real_dlmopen_ptr;
static int log_fd = -2; /* -2: not opened yet, -1: no log */

struct lookup {
    const char *name;
    const char *skip; /* path of this shim: its own definitions must not be found */
    void *found;
};

static uint32_t gnu_hash(const char *s) {
    uint32_t h = 5381;
    for (; *s; ++s) h = h * 33 + (unsigned char)*s;
    return h;
}

/* glibc relocates the dynamic section's pointers in place on most targets, not on all: an unrelocated
 * value is smaller than the load address. */
static ElfW(Addr) dyn_ptr(ElfW(Addr) base, ElfW(Addr) value) { return value < base ? base + value : value; }

static int lookup_in_object(struct dl_phdr_info *info, size_t size, void *data) {
    struct lookup *want = data;
    (void)size;
    if (want->skip && info->dlpi_name && strcmp(info->dlpi_name, want->skip) == 0) return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; ++i)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn) return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL;
    for (; dyn->d_tag != DT_NULL; ++dyn) {
        if (dyn->d_tag == DT_SYMTAB) symtab = (const ElfW(Sym) *)dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_STRTAB) strtab = (const char *)dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_GNU_HASH) gnu = (const uint32_t *)dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
    }
    if (!symtab || !strtab || !gnu || gnu[0] == 0) return 0;
    uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t hash = gnu_hash(want->name);
    for (uint32_t i = buckets[hash % nbuckets]; i >= symoffset; ++i) {
        uint32_t entry = chain[i - symoffset];
        if ((entry | 1) == (hash | 1) && symtab[i].st_shndx != SHN_UNDEF &&
            strcmp(strtab + symtab[i].st_name, want->name) == 0) {
            want->found = (void *)(info->dlpi_addr + symtab[i].st_value);
            return 1;
        }
        if (entry & 1) break;
    }
    return 0;
}

static void record(const char *kind, const char *name, void *return_address, const char *target);

static void *no_symbol(void *handle, const char *symbol) {
    (void)handle;
    (void)symbol;
    return NULL;
}

static dlsym_fn real_dlsym(void) {
    if (!real_dlsym_ptr) {
        Dl_info self;
        struct lookup want = {"dlsym", NULL, NULL};
        if (dladdr((void *)&lookup_in_object, &self)) want.skip = self.dli_fname;
        dl_iterate_phdr(lookup_in_object, &want);
        if (!want.found) {
            /* Say so in the log (the evaluator reports a broken guard) rather than jump to address 0. */
            record("error", "the real dlsym was not found", NULL, "-");
            return no_symbol;
        }
        real_dlsym_ptr = (dlsym_fn)want.found;
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

/* The object a dlsym/dlvsym handle names. glibc's handles are link maps; a bogus handle would crash the
 * real lookup just the same. */
static const char *handle_target(void *handle) {
    if (handle == RTLD_DEFAULT) return "RTLD_DEFAULT";
    if (handle == RTLD_NEXT) return "RTLD_NEXT";
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return "?";
    return map->l_name[0] ? map->l_name : "(main)";
}

static __attribute__((noinline)) void record(const char *kind, const char *name, void *return_address,
                                             const char *target) {
    if (log_fd == -2) {
        const char *path = getenv("QUAERE_DLGUARD_LOG");
        log_fd = (path && *path) ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    }
    if (log_fd < 0) return;
    Dl_info info;
    const char *caller = "?";
    if (return_address && dladdr(return_address, &info) && info.dli_fname) caller = info.dli_fname;
    char clean_name[1024], clean_caller[2048], clean_target[2048], line[5200];
    copy_clean(clean_name, sizeof clean_name, name);
    copy_clean(clean_caller, sizeof clean_caller, caller);
    copy_clean(clean_target, sizeof clean_target, target);
    int n = snprintf(line, sizeof line, "%ld\t%s\t%s\t%s\t%s\n", (long)getpid(), kind, clean_name, clean_caller,
                     clean_target);
    if (n > 0) {
        /* One write per line: O_APPEND keeps lines from several threads or processes whole. */
        ssize_t ignored = write(log_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)ignored;
    }
}

static __attribute__((noinline)) void record_lookup(const char *kind, void *handle, const char *symbol,
                                                    const char *version, void *return_address) {
    char name[1024];
    if (version) snprintf(name, sizeof name, "%s@%s", symbol ? symbol : "(null)", version);
    else snprintf(name, sizeof name, "%s", symbol ? symbol : "(null)");
    record(kind, name, return_address, handle_target(handle));
}

__attribute__((constructor)) static void announce(void) { record("loaded", "dlguard", NULL, "-"); }

void *dlopen(const char *file, int mode) {
    record("dlopen", file, __builtin_return_address(0), "-");
    if (!real_dlopen_ptr) real_dlopen_ptr = (dlopen_fn)real_dlsym()(RTLD_NEXT, "dlopen");
    if (!real_dlopen_ptr) return NULL;
    return real_dlopen_ptr(file, mode); /* tail call: the real dlopen sees our caller's address */
}

void *dlmopen(Lmid_t lmid, const char *file, int mode) {
    record("dlmopen", file, __builtin_return_address(0), "-");
    if (!real_dlmopen_ptr) real_dlmopen_ptr = (dlmopen_fn)real_dlsym()(RTLD_NEXT, "dlmopen");
    if (!real_dlmopen_ptr) return NULL;
    return real_dlmopen_ptr(lmid, file, mode);
}

void *dlsym(void *handle, const char *symbol) {
    record_lookup("dlsym", handle, symbol, NULL, __builtin_return_address(0));
    return real_dlsym()(handle, symbol);
}

void *dlvsym(void *handle, const char *symbol, const char *version) {
    record_lookup("dlvsym", handle, symbol, version, __builtin_return_address(0));
    if (!real_dlvsym_ptr) real_dlvsym_ptr = (dlvsym_fn)real_dlsym()(RTLD_NEXT, "dlvsym");
    if (!real_dlvsym_ptr) return NULL;
    return real_dlvsym_ptr(handle, symbol, version);
}
