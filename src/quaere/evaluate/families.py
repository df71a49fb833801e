"""The banned library families and how each one shows itself in a build.

One table, read by the static audit (``audit.py``) and the run-time guard (``runtime_guard.py``), so a
family is described once. The names are those a task's ``banned`` field accepts (see
``quaere.task.spec.TaskSpec.banned``).

Each pattern is deliberately narrow: cuBLASLt is its own family, so ``cublas`` patterns exclude ``Lt``
names, and CuTe's namespace is matched as a whole identifier so ``execute::`` never reads as ``cute::``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Family:
    """How one banned library is recognised in headers, symbols, shared objects and strings."""

    name: str
    header: re.Pattern[str] | None = None
    """Matches an included header path that belongs to the library."""
    namespace: re.Pattern[str] | None = None
    """Matches a (demangled or mangled) C++ symbol name inside the library's namespace."""
    symbol: re.Pattern[str] | None = None
    """Matches the start of an API symbol of the library: prefix then a capital (``cublasGemmEx``), so a
    candidate's own ``cudnn_like_softmax`` is not taken for cuDNN."""
    library: re.Pattern[str] | None = None
    """Matches the file name (basename) of the library's shared or static object."""
    markers: tuple[str, ...] = ()
    """Strings only the library's own binary is expected to carry (status names, its env variables)."""
    fingerprint: re.Pattern[bytes] | None = None
    """Matches the library's names in raw bytes (any section, inside device code, inside an embedded
    blob): an API symbol, a SONAME or a mangled namespace, whatever the file or symbol table says."""

    def names_library(self, path: str) -> bool:
        return self.library is not None and bool(self.library.search(PurePosixPath(path).name))

    def names_symbol(self, name: str) -> bool:
        bare = name.split("@", 1)[0]  # drop ELF symbol versions: cublasCreate_v2@libcublas.so.13
        return (self.symbol is not None and bool(self.symbol.match(bare))) or (
            self.namespace is not None and bool(self.namespace.search(bare))
        )


def _namespace(word: str) -> re.Pattern[str]:
    # Demangled 'word::' as a whole identifier, or the Itanium-mangled length-prefixed '<len>word' (as in
    # '_ZN7cutlass...' or nvcc's '__device_stub__ZN7cutlass...'), not preceded by another digit.
    return re.compile(rf"(?<![A-Za-z0-9_]){word}::|(?<![0-9]){len(word)}{word}(?![a-z])")


def _namespace_bytes(word: str) -> re.Pattern[bytes]:
    # The same two spellings in raw bytes: a demangled name in a string table, or a mangled one.
    return re.compile(_namespace(word).pattern.encode())


FAMILIES: tuple[Family, ...] = (
    Family(
        name="cutlass",
        header=re.compile(r"(^|/)cutlass/", re.IGNORECASE),
        namespace=_namespace("cutlass"),
        fingerprint=_namespace_bytes("cutlass"),
    ),
    Family(
        name="cute",
        header=re.compile(r"(^|/)cute/", re.IGNORECASE),
        namespace=_namespace("cute"),
        fingerprint=_namespace_bytes("cute"),
    ),
    Family(
        name="cublas",
        symbol=re.compile(r"cublas(?!Lt)[A-Z]"),
        library=re.compile(r"^libcublas(?!lt)", re.IGNORECASE),
        markers=("CUBLAS_STATUS_", "CUBLAS_WORKSPACE_CONFIG"),
        fingerprint=re.compile(rb"cublas(?:Create_v2|Destroy_v2|SetStream_v2|GemmEx)\b|libcublas\.so|CUBLAS_STATUS_"),
    ),
    Family(
        name="cublaslt",
        symbol=re.compile(r"cublasLt[A-Z]"),
        library=re.compile(r"^libcublaslt", re.IGNORECASE),
        markers=("CUBLASLT_LOG_LEVEL", "CUBLASLT_LOG_MASK"),
        fingerprint=re.compile(rb"cublasLt(?:Create|Destroy|Matmul)\b|libcublasLt\.so|CUBLASLT_LOG_"),
    ),
    Family(
        name="cudnn",
        symbol=re.compile(r"cudnn(?:[A-Z]|_frontend::)"),
        library=re.compile(r"^libcudnn", re.IGNORECASE),
        markers=("CUDNN_STATUS_", "CUDNN_LOGLEVEL_DBG", "CUDNN_LOGDEST_DBG"),
        fingerprint=re.compile(rb"cudnn(?:Create|Destroy|SetStream|GetVersion)\b|libcudnn(?:_\w+)?\.so|CUDNN_STATUS_"),
    ),
)

# Strings worth keeping from an artifact's data sections: anything that could name a banned library,
# one of its symbols or one of its markers. Everything else is dropped to keep the facts small.
MENTIONS_LIBRARY = re.compile(r"cublas|cudnn|cutlass|(?<![A-Za-z0-9_])cute::", re.IGNORECASE)


class UnknownFamily(ValueError):
    """A banned name that no family describes."""


def families(banned: tuple[str, ...]) -> tuple[Family, ...]:
    """The families named in ``banned``, in table order; an unknown name raises :class:`UnknownFamily`."""
    known = {f.name for f in FAMILIES}
    unknown = sorted(set(banned) - known)
    if unknown:
        raise UnknownFamily(f"unknown banned library {unknown}; expected some of {sorted(known)}")
    return tuple(f for f in FAMILIES if f.name in banned)
