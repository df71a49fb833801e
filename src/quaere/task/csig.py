"""The C signature of a kernel file's entry point: every ``extern "C"`` host function, parsed into typed
parameters (pointers with their element type and ``const``-ness, scalars of a C type, the stream, a
workspace and its size).

This is not a C parser: it reads the declarations the C ABI allows (no templates, no overloads), after
comments and preprocessor lines are blanked. Anything it cannot map raises :class:`SignatureError` with
one line naming the file, the parameter and what was expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from quaere.task.contract import ArgKind
from quaere.task.spec import TaskError


class SignatureError(TaskError):
    """The kernel file has no usable entry point; the message names the file, the parameter and the expectation."""


class ParamRole(str, Enum):
    POINTER = "pointer"  # an input or output buffer
    SCALAR = "scalar"  # a value of a C type (an axis of the scenarios)
    STREAM = "stream"  # the CUDA stream to launch on
    WORKSPACE = "workspace"  # scratch memory the judge hands over
    WORKSPACE_BYTES = "workspace_bytes"  # its size


@dataclass(frozen=True)
class CParam:
    """One parameter of the entry point, in order."""

    name: str
    ctype: str
    """The type as written, qualifiers included, spaces normalized (``const float*``)."""
    role: ParamRole
    const: bool = False
    """For a pointer: the pointee is ``const`` (the kernel only reads it: an input)."""
    dtype: str | None = None
    """For a pointer: the element type (``float32``, ``bfloat16``...); None where C does not say (``void*``)."""
    scalar: ArgKind | None = None
    """For a scalar: its argument kind (``i32``, ``i64``, ``u64``, ``f32``, ``f64``)."""
    boolean: bool = False
    """A scalar declared ``bool``: its axis takes 0 and 1."""


@dataclass(frozen=True)
class CSignature:
    file: Path
    name: str
    params: tuple[CParam, ...]
    text: str
    """The declaration on one line, as a docstring shows it."""

    def pointers(self) -> tuple[CParam, ...]:
        return tuple(p for p in self.params if p.role is ParamRole.POINTER)

    def scalars(self) -> tuple[CParam, ...]:
        return tuple(p for p in self.params if p.role is ParamRole.SCALAR)


POINTEE_DTYPES = {
    "float": "float32", "double": "float64", "__half": "float16", "half": "float16",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "int": "int32", "int32_t": "int32",
    "long long": "int64", "long": "int64", "int64_t": "int64", "short": "int16", "int16_t": "int16",
    "int8_t": "int8", "signed char": "int8", "uint8_t": "uint8", "unsigned char": "uint8",
}
# Element types C leaves open: raw 16-bit words are bf16 or fp16 bits as often as integers.
UNTYPED_POINTEES = ("void", "uint16_t", "unsigned short")
SCALAR_KINDS: dict[str, ArgKind] = {
    "int": "i32", "int32_t": "i32", "unsigned": "i32", "unsigned int": "i32", "uint32_t": "i32", "bool": "i32",
    "long long": "i64", "long": "i64", "int64_t": "i64", "ptrdiff_t": "i64", "size_t": "u64", "uint64_t": "u64",
    "unsigned long": "u64", "unsigned long long": "u64", "float": "f32", "double": "f64",
}
STREAM_TYPES = ("cudaStream_t", "CUstream")
QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__const__"}
TYPE_WORDS = {"void", "int", "long", "short", "char", "signed", "unsigned", "float", "double", "bool"}
WORKSPACE_NAME = re.compile(r"^(workspace|scratch|ws)(_ptr)?$")
WORKSPACE_BYTES_NAME = re.compile(r"^(workspace|scratch|ws)_?(bytes|nbytes|size)$")
DEVICE_QUALIFIERS = ("__global__", "__device__")
EXPECTED_TYPES = ("a pointer to float, double, __half, __nv_bfloat16, an integer or void; or int, long long, "
                  "size_t, float, double, bool; or cudaStream_t")


def strip_source(text: str) -> str:
    """``text`` with comments and preprocessor lines blanked (newlines kept), string literals kept."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        two = text[i:i + 2]
        if two == "//":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif two == "/*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif text[i] in "\"'":
            end = i + 1
            while end < n and text[end] != text[i]:
                end += 2 if text[end] == "\\" else 1
            out.append(text[i:end + 1])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    lines = "".join(out).split("\n")
    blanked, continued = [], False
    for line in lines:
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        blanked.append("" if directive else line)
    return "\n".join(blanked)


def _matching(text: str, start: int, opening: str, closing: str) -> int:
    """Index just past the bracket that closes the one at ``start``."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == opening:
            depth += 1
        elif text[index] == closing:
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


ATTRIBUTE = re.compile(r"\b(__attribute__|__declspec|noexcept)\b\s*")


def _without_attributes(text: str) -> str:
    """``text`` less every ``__attribute__((...))``, ``__declspec(...)`` and ``noexcept``."""
    while match := ATTRIBUTE.search(text):
        end = _matching(text, match.end(), "(", ")") if text.startswith("(", match.end()) else match.end()
        text = text[:match.start()] + " " + text[end:]
    return text
HEADER = re.compile(r"(?P<head>[^;{}()]*?)\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^;{}]*)\)\s*$", re.S)


def _declarations(text: str, start: int, end: int) -> list[tuple[str, str, str]]:
    """(leading words, name, parameter text) of every function declared or defined in text[start:end]
    at brace depth 0."""
    found: list[tuple[str, str, str]] = []
    statement_start, index = start, start
    while index < end:
        char = text[index]
        if char in ";{":
            statement = _without_attributes(text[statement_start:index]).strip()
            match = HEADER.match(statement)
            if match:
                found.append((match["head"], match["name"], match["params"]))
            if char == "{":
                index = _matching(text, index, "{", "}") - 1
            statement_start = index + 1
        elif char == "(":
            index = _matching(text, index, "(", ")") - 1
        index += 1
    return found


EXTERN_C = re.compile(r'\bextern\s*"C"\s*')


def extern_c_functions(text: str) -> list[tuple[str, str, str]]:
    """Every function with C linkage in (stripped) ``text``: (leading words, name, parameter text)."""
    found: list[tuple[str, str, str]] = []
    for match in EXTERN_C.finditer(text):
        after = match.end()
        if text.startswith("{", after):
            found.extend(_declarations(text, after + 1, _matching(text, after, "{", "}") - 1))
        else:
            stop = min((i for i in (text.find(";", after), text.find("{", after)) if i >= 0), default=len(text))
            found.extend(_declarations(text, after, stop + 1))
    return found


TOKEN = re.compile(r"::|[A-Za-z_]\w*|\d+|[*&\[\]()<>=,]")


def _base_type(words: list[str]) -> str:
    return " ".join(words).replace("std :: ", "").replace(" :: ", "::")


def parse_param(text: str, index: int, file: Path, entry: str) -> CParam:
    """One parameter's text (``const float* __restrict__ x``) as a :class:`CParam`."""
    shown = " ".join(text.split())
    tokens = TOKEN.findall(text.split("=")[0])
    where = f"{file}: entry '{entry}', parameter {index + 1} ('{shown}')"
    if any(t in "()&<>" for t in tokens):
        raise SignatureError(f"{where}: type cannot be mapped; expected {EXPECTED_TYPES}")
    named = [t for t in tokens if re.match(r"[A-Za-z_]", t) and t not in QUALIFIERS]
    if len(named) < 2 or named[-1] in TYPE_WORDS:
        raise SignatureError(f"{where}: has no name; expected a named parameter (the name becomes the buffer's "
                             "or the axis's name)")
    name = named[-1]
    at = max(i for i, t in enumerate(tokens) if t == name)
    kept = [("*" if t == "[" else t) for t in tokens[:at] + tokens[at + 1:] if t not in "]" and not t.isdigit()]
    stars = kept.count("*")
    first = kept.index("*") if stars else len(kept)
    base = _base_type([t for t in kept[:first] if t not in QUALIFIERS])
    const = "const" in kept[:first]
    ctype = ("const " if const else "") + base + "*" * stars
    if stars > 1:
        raise SignatureError(f"{where}: is a pointer to a pointer; expected {EXPECTED_TYPES}")
    if base in STREAM_TYPES or (stars == 1 and base == "void" and name == "stream"):
        return CParam(name=name, ctype=ctype, role=ParamRole.STREAM)
    if stars == 1:
        if base == "void" and not const and WORKSPACE_NAME.match(name):
            return CParam(name=name, ctype=ctype, role=ParamRole.WORKSPACE)
        if base in POINTEE_DTYPES or base in UNTYPED_POINTEES:
            return CParam(name=name, ctype=ctype, role=ParamRole.POINTER, const=const, dtype=POINTEE_DTYPES.get(base))
        raise SignatureError(f"{where}: type '{ctype}' cannot be mapped; expected {EXPECTED_TYPES}")
    if base in SCALAR_KINDS:
        kind = SCALAR_KINDS[base]
        if kind in ("u64", "i64") and WORKSPACE_BYTES_NAME.match(name):
            return CParam(name=name, ctype=ctype, role=ParamRole.WORKSPACE_BYTES, scalar=kind)
        return CParam(name=name, ctype=ctype, role=ParamRole.SCALAR, scalar=kind, boolean=base == "bool")
    raise SignatureError(f"{where}: type '{ctype}' cannot be mapped; expected {EXPECTED_TYPES}")


def _split_params(text: str) -> list[str]:
    """Parameters at bracket depth 0 (a function-pointer parameter stays one piece, to be refused)."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "(<[":
            depth += 1
        elif char in ")>]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    stripped = [p.strip() for p in parts]
    return [] if stripped in ([""], ["void"]) else stripped


def _signature(file: Path, head: str, name: str, params_text: str) -> CSignature:
    words = head.split()
    returns = " ".join(w for w in words if w not in ("inline", "__host__", "extern"))
    if returns.split()[-1:] != ["int"]:
        raise SignatureError(f"{file}: entry '{name}' returns '{returns or '?'}'; expected int (0 on success, "
                             "nonzero for arguments it does not support)")
    params = tuple(parse_param(text, i, file, name) for i, text in enumerate(_split_params(params_text)))
    if not any(p.role is ParamRole.POINTER for p in params):
        raise SignatureError(f"{file}: entry '{name}' has no pointer parameter; expected at least one output buffer")
    names = [p.name for p in params]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise SignatureError(f"{file}: entry '{name}': parameter '{repeated[0]}' is named twice; expected unique names")
    text = f"int {name}({', '.join(f'{p.ctype} {p.name}' for p in params)})"
    return CSignature(file=file, name=name, params=params, text=text)


def read_signature(file: Path, entry: str | None = None) -> CSignature:
    """The entry point of kernel ``file``: its only ``extern "C"`` host function, or the one named ``entry``."""
    try:
        text = strip_source(file.read_text(errors="replace"))
    except OSError as exc:
        raise SignatureError(f"{file}: cannot be read ({exc.strerror}); expected a kernel source file") from None
    functions: dict[str, tuple[str, str]] = {}
    kernels: list[str] = []
    for head, name, params in extern_c_functions(text):
        if any(q in head.split() for q in DEVICE_QUALIFIERS):
            kernels.append(name)
        elif "static" not in head.split():  # internal linkage: not a symbol the runner can find
            functions.setdefault(name, (head, params))
    if entry is not None:
        if entry not in functions:
            found = ", ".join(functions) or "none"
            raise SignatureError(f"{file}: no extern \"C\" host function '{entry}' (--entry); found: {found}")
        return _signature(file, functions[entry][0], entry, functions[entry][1])
    if not functions:
        hint = (f" ({kernels[0]} is a __global__ kernel)" if len(kernels) == 1
                else f" ({', '.join(kernels)} are __global__ kernels)" if kernels else "")
        raise SignatureError(f"{file}: no extern \"C\" host function{hint}; expected the entry point declared as "
                             "extern \"C\" int NAME(...) that launches the kernel")
    if len(functions) > 1:
        raise SignatureError(f"{file}: {len(functions)} extern \"C\" functions ({', '.join(functions)}); expected one, "
                             "or --entry NAME to choose")
    (name, (head, params)), = functions.items()
    return _signature(file, head, name, params)
