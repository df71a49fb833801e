"""Run a task's one build command on a source file; a compile error is a verdict, never a traceback.

The command compiles the evaluator's own copy of the source's bytes, written into a folder made for that build
(``<build>/source/candidate<suffix>``), never the source's own path: the bytes read once are the ones hashed, cached
and built, and nothing beside the source is found by an ``#include``. Builds live in ``<cache>/<key>/`` where the
key hashes the command template and the source bytes; a cached build is reused only while every header it read
(from the ``-MD`` depfile) is unchanged, its copy of the source still holds the bytes, and its ``kernel.so`` still
has the sha256 recorded when it was built (an overwritten one is rebuilt, and the build log says so). Where the
agent can write the cache (same-user mode) it could rewrite the artifact, the copy and the record together: the
checks catch a swapped file, the evaluator service's own cache the rest. The full compiler output is kept in
``build.log`` beside the artifact; the record carries its tail.

The key also holds the identity of every program the command runs (:mod:`.toolchain`: each one's path on the build's
``PATH`` and sha256), and the record names them: a source built by another ``c++`` (the agent's, first on its
``PATH`` in same-user mode) is another build, never reused by a build with the evaluator's own compilers.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from quaere.evaluate import build_reads, isolation, toolchain
from quaere.evaluate.options import process_environment
from quaere.evaluate.preprocess import PREPROCESSED_NAME, NotPreprocessable, preprocess_command
from quaere.evaluate.source_file import SourceFile, read_source, source_suffix
from quaere.messages import printable
from quaere.records import BuildResult, BuildStatus
from quaere.task.spec import TaskSpec

LOG_TAIL_LINES = 40
ARTIFACT_NAME = "kernel.so"
DEPFILE_NAME = "kernel.d"
LOG_NAME = "build.log"
RECORD_NAME = "build.json"
SNAPSHOT_FOLDER = "source"
SNAPSHOT_STEM = "candidate"


def render_command(template: str, source: Path, output: Path, depfile: Path) -> str:
    """The template with its placeholders replaced by shell-quoted absolute paths."""
    return (
        template.replace("{source}", shlex.quote(str(source)))
        .replace("{output}", shlex.quote(str(output)))
        .replace("{depfile}", shlex.quote(str(depfile)))
    )


def parse_depfile(text: str) -> tuple[str, ...]:
    """Prerequisites of a make-style depfile (``out: a.h b.h \\``), in order, without duplicates.

    Handles line continuations, several rules (nvcc writes one per phase) and escaped spaces.
    """
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ")
    found: list[str] = []
    for line in joined.splitlines():
        if ":" not in line:
            continue
        # The target ends at the first ': ' (a Windows-style 'C:\' never appears on Linux paths).
        _, _, prerequisites = line.partition(": ") if ": " in line else line.partition(":")
        token = ""
        index = 0
        while index < len(prerequisites):
            char = prerequisites[index]
            if char == "\\" and index + 1 < len(prerequisites) and prerequisites[index + 1] == " ":
                token += " "
                index += 2
                continue
            if char.isspace():
                if token:
                    found.append(token)
                token = ""
            else:
                token += char
            index += 1
        if token:
            found.append(token)
    return tuple(dict.fromkeys(found))


def _tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    """The log's last lines, control bytes removed (a binary file's diagnostics quote its raw bytes)."""
    return "\n".join(printable(text).rstrip().splitlines()[-lines:])


def _headers_digest(headers: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for header in headers:
        digest.update(header.encode() + b"\0")
        try:
            digest.update(Path(header).read_bytes())
        except OSError:
            digest.update(b"<missing>")
    return digest.hexdigest()


def build_key(template: str, source_bytes: bytes, programs: tuple[toolchain.Program, ...]) -> str:
    """The cache folder's name: the command template, the source bytes and the programs that build them
    (:func:`~quaere.evaluate.toolchain.resolve`): a cached build is one of the same bytes by the same compilers."""
    digest = hashlib.sha256(template.encode() + b"\0" + source_bytes + b"\0" + toolchain.identity(programs))
    return digest.hexdigest()[:32]


def _file_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _cached(folder: Path, source: Path, data: bytes) -> tuple[BuildResult | None, str]:
    """A previous successful build in ``folder`` whose headers are unchanged, whose copy of the source still holds
    ``data`` and whose artifact still has the sha256 recorded when it was built, recorded as the build of ``source``
    (the same bytes may have been built first from another file: the cache is shared); else None and, when the
    artifact was changed, why."""
    try:
        saved = json.loads((folder / RECORD_NAME).read_text())
        result = BuildResult.model_validate(saved["result"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, ""
    if not Path(result.artifact).exists() or _headers_digest(result.included_headers) != saved.get("headers"):
        return None, ""
    # A build cached before the audit read the preprocessed source, or whose translation unit is gone: built again,
    # so that the text rules never silently lose it. One cached before builds compiled their own copy of the bytes
    # (it may have compiled other bytes than its key's), or whose copy no longer holds them: built again.
    if "preprocessed" not in saved["result"] or (result.preprocessed and not Path(result.preprocessed).exists()):
        return None, ""
    if not result.snapshot or _read(Path(result.snapshot)) != data:
        return None, ""
    if _file_sha256(Path(result.artifact)) != saved.get("artifact_sha256"):
        return None, f"[quaere] the cached {result.artifact} no longer had the sha256 recorded at its build: rebuilt"
    first = saved.get("source")
    log_tail = result.log_tail.replace(first, str(source)) if isinstance(first, str) and first else result.log_tail
    return result.model_copy(update={"log_tail": log_tail}), ""


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _run_confined(command: str, what: str, workdir: Path, scratch: Path, reads: tuple[str, ...],
                  env: Mapping[str, str], timeout_s: float) -> tuple[int, str]:
    """``command`` run under Landlock from ``scratch`` with ``TMPDIR`` there, reading only ``reads``
    (:func:`~quaere.evaluate.build_reads.read_roots`) and writing only ``scratch`` and ``/dev``'s plain nodes
    (``landlock.dev_entries``); it changes to ``workdir`` first (the wrapper starts in the scratch folder, where
    nothing shadows a module). Its status and output (-1 and a line saying ``what`` timed out, past ``timeout_s``)."""
    confined = isolation.confined_command(f"cd {shlex.quote(str(workdir))} && {command}", reads, (str(scratch), "/dev"))
    try:
        run = subprocess.run(confined, cwd=scratch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=timeout_s, check=False, env={**env, "TMPDIR": str(scratch)})
    except subprocess.TimeoutExpired as exc:
        return -1, (exc.stdout or b"").decode(errors="replace") + f"\n[quaere] {what} timed out after {timeout_s:.0f} s"
    return run.returncode, run.stdout.decode(errors="replace")


def _preprocess(command: str, workdir: Path, scratch: Path, reads: tuple[str, ...], env: Mapping[str, str],
                timeout_s: float) -> str:
    """Write the source's translation unit after the preprocessor to ``scratch`` (:mod:`.preprocess`), confined as
    the build was; '' when it did, else why not."""
    output = scratch / PREPROCESSED_NAME
    try:
        command = preprocess_command(command, output)
    except NotPreprocessable as exc:
        return f"the source was not preprocessed for the audit: {exc}"
    code, log = _run_confined(command, "the preprocessor", workdir, scratch, reads, env, timeout_s)
    if code != 0 or not output.exists():
        last = log.strip().splitlines()[-1:]
        return f"the source was not preprocessed for the audit (status {code}): {' '.join(last)}"
    return ""


def _failed(command: str, log: str, reason: str, duration_s: float) -> BuildResult:
    """A failed build's record, ``reason`` as the log's last line (the goal shows that line)."""
    return BuildResult(status=BuildStatus.BUILD_FAILED, command=command, artifact="", included_headers=(),
                       log_tail=_tail(f"{log}\n{reason}" if log else reason), duration_s=duration_s)


def _write_snapshot(scratch: Path, data: bytes, suffix: str) -> Path:
    """The evaluator's own copy of the bytes to build, alone in a folder of the build's scratch folder (made for this
    build, mode 0700): nothing sits beside it for an ``#include "impl.h"`` to find, and nothing the agent can
    write is compiled in its place."""
    folder = scratch / SNAPSHOT_FOLDER
    folder.mkdir(mode=0o700)
    path = folder / f"{SNAPSHOT_STEM}{suffix}"
    with path.open("xb") as handle:
        handle.write(data)
    return path


def build_source(
    spec: TaskSpec, source: Path, cache_dir: Path, workdir: Path, timeout_s: float = 900.0,
    unreadable: Iterable[str] = (), env: Mapping[str, str] | None = None, read: SourceFile | None = None,
) -> BuildResult:
    """Build the bytes of ``source`` with the task's command (run in ``workdir``, the task folder, confined: see
    :mod:`.build_reads`), in ``env`` (None: :func:`~quaere.evaluate.options.process_environment`) less the
    compilers' switches (:func:`~quaere.evaluate.isolation.build_environment`, named in the log) with ``TMPDIR`` set
    to its scratch folder; never raises on a compile error, a missing compiler or a timeout: those are
    ``BUILD_FAILED`` with the log's tail.

    ``read`` holds ``source``'s bytes as the caller read them (:func:`~quaere.evaluate.source_file.read_source`),
    so that what it hashed is what is built; None: they are read here, once. The command compiles the evaluator's
    own copy of those bytes (:func:`_write_snapshot`, named in the record's ``command`` and ``snapshot``), never
    ``source``, which the agent may swap while the compiler reads it. ``BUILD_FAILED``, the log's last line saying
    why, without a build: a candidate that is not kernel source (``read.problem``) or a
    command whose program is not on ``env``'s ``PATH`` (:func:`~quaere.evaluate.toolchain.resolve`: the message
    names both); after it, and never cached: a
    build that read a header beside ``source`` or where anyone may write (:func:`.build_reads.refused_header`).
    Raises ``OSError`` only when ``source`` cannot be read."""
    env, dropped = isolation.build_environment(process_environment() if env is None else env)
    suffix = source_suffix(spec)
    read = read or read_source(source, suffix)
    if read.problem:
        return _failed("", "", f"[quaere] refused, nothing was built: {read.problem}", 0.0)
    try:  # resolved once: the programs hashed into the key are the ones whose folders the build may read
        programs = toolchain.resolve(spec.build, env.get("PATH", ""))
    except toolchain.Unresolved as exc:
        return _failed("", "", f"[quaere] nothing was built: {exc}", 0.0)
    key = build_key(spec.build, read.data, programs)
    final = cache_dir / key
    cached, stale = _cached(final, source, read.data)
    if cached is not None:
        return cached
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache_dir))
    snapshot = _write_snapshot(scratch, read.data, suffix)
    result = _build(spec.build, source, snapshot, workdir, scratch, final, unreadable, env, timeout_s, dropped,
                    programs)
    if result.status is not BuildStatus.OK:
        shutil.rmtree(scratch, ignore_errors=True)
        return result
    record = {"result": result.model_dump(mode="json"), "headers": _headers_digest(result.included_headers),
              "source": str(source), "artifact_sha256": _file_sha256(scratch / ARTIFACT_NAME)}
    (scratch / RECORD_NAME).write_text(json.dumps(record))
    shutil.rmtree(final, ignore_errors=True)
    try:
        scratch.rename(final)
    except OSError:  # another evaluation of the same source won the race: use its build
        shutil.rmtree(scratch, ignore_errors=True)
    return result.model_copy(update={"log_tail": _tail(f"{result.log_tail}\n{stale}")}) if stale else result


def _build(template: str, source: Path, snapshot: Path, workdir: Path, scratch: Path, final: Path,
           unreadable: Iterable[str], env: Mapping[str, str], timeout_s: float, dropped: tuple[str, ...],
           programs: tuple[toolchain.Program, ...]) -> BuildResult:
    """Compile ``snapshot`` (the copy of ``source``'s bytes) in ``scratch``. The result names the files where they
    will be once :func:`build_source` renames ``scratch`` to ``final``; its log names ``source`` where the compiler
    named the copy, so that the agent reads its diagnostics against its own file."""
    command = render_command(template, snapshot, scratch / ARTIFACT_NAME, scratch / DEPFILE_NAME)
    shown = command.replace(str(scratch), str(final))
    shared = build_reads.shared_places(workdir, scratch, env, programs)
    reads = build_reads.read_roots(snapshot, workdir, scratch, unreadable, shared, env, programs)
    started = time.monotonic()
    code, log = _run_confined(command, "build", workdir, scratch, reads, env, timeout_s)
    log = log.replace(str(snapshot), str(source))
    if dropped:
        log = f"{log}\n[quaere] left out of the build's environment: {', '.join(dropped)}"
    duration = time.monotonic() - started
    if code != 0 or not (scratch / ARTIFACT_NAME).exists():
        reason = f"[quaere] build failed (status {code})" if code else "[quaere] no artifact written"
        return _failed(shown, log, reason, duration)
    depfile = scratch / DEPFILE_NAME
    prerequisites = parse_depfile(depfile.read_text()) if depfile.exists() else ()
    headers = tuple(os.path.normpath(os.path.join(workdir, p)) for p in prerequisites)
    headers = tuple(h for h in headers if h != str(snapshot))
    refused = build_reads.refused_header(headers, source, workdir, shared)
    if refused:
        return _failed(shown, log, f"[quaere] refused: {refused}", duration)
    why = _preprocess(command, workdir, scratch, reads, env, timeout_s)
    log = f"{log}\n[quaere] {why}" if why else log
    (scratch / LOG_NAME).write_text(f"$ {shown}\n{log}")
    return BuildResult(status=BuildStatus.OK, command=shown, artifact=str(final / ARTIFACT_NAME),
                       log_tail=_tail(log), included_headers=headers, duration_s=duration,
                       snapshot=str(final / snapshot.relative_to(scratch)),
                       preprocessed="" if why else str(final / PREPROCESSED_NAME),
                       toolchain=tuple(program.described() for program in programs))
