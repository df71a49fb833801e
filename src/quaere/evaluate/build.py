"""Run a task's one build command on a source file; a compile error is a verdict, never a traceback.

Builds live in ``<cache>/<key>/`` where the key hashes the command template and the source bytes; a
cached build is reused only while every header it read (from the ``-MD`` depfile) is unchanged and its
``kernel.so`` still has the sha256 recorded when it was built (an overwritten one is rebuilt, and the
build log says so). Where the agent can write the cache (same-user mode) it could rewrite both the
artifact and its record: the check catches a swapped file, the evaluator service's own cache the rest.
The full compiler output is kept in ``build.log`` beside the artifact; the record carries its tail.
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

from quaere.evaluate import isolation
from quaere.evaluate.options import process_environment
from quaere.evaluate.preprocess import PREPROCESSED_NAME, NotPreprocessable, preprocess_command
from quaere.messages import printable
from quaere.records import BuildResult, BuildStatus
from quaere.task.spec import TaskSpec

LOG_TAIL_LINES = 40
ARTIFACT_NAME = "kernel.so"
DEPFILE_NAME = "kernel.d"
LOG_NAME = "build.log"
RECORD_NAME = "build.json"


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


def build_key(template: str, source_bytes: bytes) -> str:
    digest = hashlib.sha256(template.encode() + b"\0" + source_bytes)
    return digest.hexdigest()[:32]


def _file_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _for_source(result: BuildResult, saved: dict, template: str, source: Path, folder: Path) -> BuildResult:
    """A cached build's record as the build of ``source``: the same bytes may have been built first from
    another file (the cache is shared), and the record must name the file that was evaluated."""
    command = render_command(template, source, folder / ARTIFACT_NAME, folder / DEPFILE_NAME)
    first = saved.get("source")
    log_tail = result.log_tail.replace(first, str(source)) if isinstance(first, str) and first else result.log_tail
    return result.model_copy(update={"command": command, "log_tail": log_tail})


def _cached(folder: Path, template: str, source: Path) -> tuple[BuildResult | None, str]:
    """A previous successful build in ``folder`` whose headers are unchanged and whose artifact still has
    the sha256 recorded when it was built, recorded as the build of ``source``; else None and, when the
    artifact was changed, why."""
    try:
        saved = json.loads((folder / RECORD_NAME).read_text())
        result = BuildResult.model_validate(saved["result"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, ""
    if not Path(result.artifact).exists() or _headers_digest(result.included_headers) != saved.get("headers"):
        return None, ""
    # A build cached before the audit read the preprocessed source, or whose translation unit is gone: built again,
    # so that the text rules never silently lose it.
    if "preprocessed" not in saved["result"] or (result.preprocessed and not Path(result.preprocessed).exists()):
        return None, ""
    if _file_sha256(Path(result.artifact)) != saved.get("artifact_sha256"):
        return None, f"[quaere] the cached {result.artifact} no longer had the sha256 recorded at its build: rebuilt"
    return _for_source(result, saved, template, source, folder), ""


def _toolchain_folders(path: str) -> list[str]:
    """Where the build's programs may live besides the system folders: each ``PATH`` entry and, for one named
    ``bin``, the prefix above it (a toolkit keeps ``include``, ``lib`` and the like beside its ``bin``), unless that is
    the root folder."""
    folders = []
    for entry in filter(None, path.split(os.pathsep)):
        folders.append(entry)
        prefix = os.path.dirname(os.path.normpath(entry))
        if os.path.basename(os.path.normpath(entry)) == "bin" and prefix != os.path.dirname(prefix):  # never "/"
            folders.append(prefix)
    return folders


def _confined(command: str, source: Path, workdir: Path, scratch: Path, unreadable: Iterable[str],
              env: Mapping[str, str]) -> list[str]:
    """The build command under Landlock: it reads the system, toolchain (``PATH``) and Python folders, the task folder
    and the source's folder (less ``unreadable``), and writes only its scratch folder (its TMPDIR too) and ``/dev``'s
    plain nodes (``landlock.dev_entries``). A candidate's ``#include`` of another file (the service's signing key,
    which a compiler error would quote into the record) then fails. The wrapper starts in the scratch folder (nothing
    there shadows a module) and changes to ``workdir`` before the command."""
    reads = isolation.read_roots([str(source)], env, str(scratch), unreadable,
                                 folders=[str(workdir), *_toolchain_folders(env.get("PATH", ""))])
    return isolation.confined_command(f"cd {shlex.quote(str(workdir))} && {command}", reads, (str(scratch), "/dev"))


def _run_confined(command: str, what: str, source: Path, workdir: Path, scratch: Path, unreadable: Iterable[str],
                  env: Mapping[str, str], timeout_s: float) -> tuple[int, str]:
    """``command`` run confined (:func:`_confined`) from ``scratch`` with ``TMPDIR`` there: its status and output
    (-1 and a line saying ``what`` timed out, past ``timeout_s``)."""
    try:
        run = subprocess.run(
            _confined(command, source, workdir, scratch, unreadable, env), cwd=scratch, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, timeout=timeout_s, check=False, env={**env, "TMPDIR": str(scratch)},
        )
    except subprocess.TimeoutExpired as exc:
        return -1, (exc.stdout or b"").decode(errors="replace") + f"\n[quaere] {what} timed out after {timeout_s:.0f} s"
    return run.returncode, run.stdout.decode(errors="replace")


def _preprocess(command: str, source: Path, workdir: Path, scratch: Path, unreadable: Iterable[str],
                env: Mapping[str, str], timeout_s: float) -> str:
    """Write the source's translation unit after the preprocessor to ``scratch`` (:mod:`.preprocess`), confined as
    the build was; '' when it did, else why not."""
    output = scratch / PREPROCESSED_NAME
    try:
        command = preprocess_command(command, output)
    except NotPreprocessable as exc:
        return f"the source was not preprocessed for the audit: {exc}"
    code, log = _run_confined(command, "the preprocessor", source, workdir, scratch, unreadable, env, timeout_s)
    if code != 0 or not output.exists():
        last = log.strip().splitlines()[-1:]
        return f"the source was not preprocessed for the audit (status {code}): {' '.join(last)}"
    return ""


def build_source(
    spec: TaskSpec, source: Path, cache_dir: Path, workdir: Path, timeout_s: float = 900.0,
    unreadable: Iterable[str] = (), env: Mapping[str, str] | None = None,
) -> BuildResult:
    """Build ``source`` with the task's command (run in ``workdir``, the task folder, confined: see
    :func:`_confined`), in ``env`` (None: :func:`~quaere.evaluate.options.process_environment`) less the compilers'
    switches (:func:`~quaere.evaluate.isolation.build_environment`, named in the log) with ``TMPDIR`` set
    to its scratch folder; never raises on a compile error, a missing compiler or a timeout: those are
    ``BUILD_FAILED`` with the log's tail."""
    env, dropped = isolation.build_environment(process_environment() if env is None else env)
    source = source.resolve()
    source_bytes = source.read_bytes()
    key = build_key(spec.build, source_bytes)
    final = cache_dir / key
    cached, stale = _cached(final, spec.build, source)
    if cached is not None:
        return cached
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache_dir))
    # The record names the final location: the scratch folder is renamed there on success.
    command = render_command(spec.build, source, scratch / ARTIFACT_NAME, scratch / DEPFILE_NAME)
    shown = command.replace(str(scratch), str(final))
    started = time.monotonic()
    code, log = _run_confined(command, "build", source, workdir, scratch, unreadable, env, timeout_s)
    if dropped:
        log = f"{log}\n[quaere] left out of the build's environment: {', '.join(dropped)}"
    duration = time.monotonic() - started
    if source.read_bytes() != source_bytes:  # never cache (or record) an artifact of other bytes than hashed
        code, log = -1, f"{log}\n[quaere] {source} changed while it was being built; evaluate it again"
    if code != 0 or not (scratch / ARTIFACT_NAME).exists():
        reason = f"[quaere] build failed (status {code})" if code else "[quaere] no artifact written"
        shutil.rmtree(scratch, ignore_errors=True)
        return BuildResult(
            status=BuildStatus.BUILD_FAILED, command=shown, artifact="", log_tail=_tail(f"{log}\n{reason}"),
            included_headers=(), duration_s=duration,
        )
    depfile = scratch / DEPFILE_NAME
    prerequisites = parse_depfile(depfile.read_text()) if depfile.exists() else ()
    headers = tuple(os.path.normpath(os.path.join(workdir, p)) for p in prerequisites)
    headers = tuple(h for h in headers if h != str(source))
    why = _preprocess(command, source, workdir, scratch, unreadable, env, timeout_s)
    log = f"{log}\n[quaere] {why}" if why else log
    (scratch / LOG_NAME).write_text(f"$ {shown}\n{log}")
    result = BuildResult(
        status=BuildStatus.OK, command=shown, artifact=str(final / ARTIFACT_NAME), log_tail=_tail(log),
        included_headers=headers, duration_s=duration, preprocessed="" if why else str(final / PREPROCESSED_NAME),
    )
    record = {"result": result.model_dump(mode="json"), "headers": _headers_digest(headers), "source": str(source),
              "artifact_sha256": _file_sha256(scratch / ARTIFACT_NAME)}
    (scratch / RECORD_NAME).write_text(json.dumps(record))
    shutil.rmtree(final, ignore_errors=True)
    try:
        scratch.rename(final)
    except OSError:  # another evaluation of the same source won the race: use its build
        shutil.rmtree(scratch, ignore_errors=True)
    return result.model_copy(update={"log_tail": _tail(f"{log}\n{stale}")}) if stale else result
