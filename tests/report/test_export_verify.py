"""The publication bundle: contents, no secret survives, and verify catches any tampering."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_campaign import CATALOG, V4, build_campaign

from quaere import __version__
from quaere.jsonl import append_line
from quaere.records import Evaluation
from quaere.report.export import ExportError, export_bundle
from quaere.report.secrets import redact_data, secret_values
from quaere.report.verify import (
    FileIssue,
    ManifestFinding,
    RerunStatus,
    check_manifest,
    rerun_final_kernel,
)

ENV = {
    "MY_SERVICE_TOKEN": "tok-3f9a8b7c6d5e4f3a2b1c",
    "DB_PASSWORD": "hunter2-but-longer",
    "ANTHROPIC_API_KEY": "ak-0123456789abcdef0123",
    "HOME_DIR_NAME": "not-a-secret-value",
}
PATTERN_SECRET = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX"  # in no variable: only redact's patterns can catch it
SECRETS = (*[v for k, v in ENV.items() if k != "HOME_DIR_NAME"], PATTERN_SECRET)


def _plant_secrets(root: Path):
    """A campaign whose trace and ledger hold secrets, written raw (as a trace from before they were known)."""
    campaign = build_campaign(root)
    ws = campaign.workspace
    append_line(ws.trace, {"type": "message", "ts": 1.0, "session": 1, "role": "assistant",
                           "text": f"export MY_SERVICE_TOKEN={ENV['MY_SERVICE_TOKEN']} and {PATTERN_SECRET}"})
    append_line(ws.trace, {"type": "tool_result", "ts": 2.0, "session": 1, "call_id": "c0", "is_error": False,
                           "output": f"DB_PASSWORD is {ENV['DB_PASSWORD']}", "output_sha256": "0" * 64})
    append_line(ws.trace, {"type": "question", "ts": 3.0, "session": 1, "moment": "plateau", "source": "human",
                           "entry_id": None, "text": f"try the key {ENV['ANTHROPIC_API_KEY']}"})
    first = json.loads(ws.ledger.read_text().splitlines()[0])
    first["note"] = f"built with {ENV['ANTHROPIC_API_KEY']}"
    append_line(ws.ledger, first)
    return campaign


def _bundle_bytes(bundle: Path) -> dict[str, bytes]:
    return {p.relative_to(bundle).as_posix(): p.read_bytes() for p in bundle.rglob("*") if p.is_file()}


def test_secret_names(tmp_path):
    assert secret_values(ENV) == {k: v for k, v in ENV.items() if k != "HOME_DIR_NAME"}
    assert secret_values({"SHORT_TOKEN": "abc"}) == {}  # too short to scrub without mangling the bundle


def test_redact_data_reaches_nested_strings_and_keys():
    data = {"a": [{"b": "x tok-3f9a8b7c6d5e4f3a2b1c y"}], "tok-3f9a8b7c6d5e4f3a2b1c": 1, "n": 2.5}
    expected = {"a": [{"b": "x [REDACTED] y"}], "[REDACTED]": 1, "n": 2.5}
    assert redact_data(data, ("tok-3f9a8b7c6d5e4f3a2b1c",)) == expected


def test_no_secret_survives_export(tmp_path):
    campaign = _plant_secrets(tmp_path)
    bundle = tmp_path / "bundle"
    export_bundle(campaign.workspace, bundle, CATALOG, secret_values(ENV), k=2)
    files = _bundle_bytes(bundle)
    for rel, data in files.items():
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} survived in {rel}"
    assert b"[REDACTED]" in files["trace.jsonl"] and b"[REDACTED]" in files["ledger.jsonl"]
    assert ENV["HOME_DIR_NAME"].encode() not in files["trace.jsonl"]  # it was never there; nothing else broke


def test_bundle_contents(tmp_path, campaign):
    bundle = tmp_path / "bundle"
    manifest = export_bundle(campaign.workspace, bundle, CATALOG, {}, k=2)
    assert (bundle / "kernel" / "kernel.cu").read_bytes() == V4
    assert sorted(p.name for p in (bundle / "candidates").iterdir()) == sorted(
        f"{h}.cu" for h in campaign.hashes.values())
    ledger = [Evaluation.model_validate_json(line) for line in (bundle / "ledger.jsonl").read_text().splitlines()]
    assert len(ledger) == 6
    questions = [json.loads(line) for line in (bundle / "questions.jsonl").read_text().splitlines()]
    assert [q["group"] for q in questions] == ["levels", "human", "limits", "profiling", "not-in-bank"]
    assert (bundle / "task" / "task.toml").read_text() == (campaign.task_folder / "task.toml").read_text()
    assert json.loads((bundle / "tool.json").read_text()) == {"quaere_version": __version__}
    assert json.loads((bundle / "report.json").read_text())["churn"]["readded"] == 2
    assert manifest["final_candidate_hash"] == campaign.hashes["V4"]
    listed = manifest["files"]
    on_disk = {rel: hashlib.sha256(data).hexdigest() for rel, data in _bundle_bytes(bundle).items()
               if rel != "manifest.json"}
    assert listed == on_disk


def test_a_secret_in_a_verbatim_file_stops_the_export(tmp_path, campaign):
    (campaign.task_folder / "notes.txt").write_text(f"token {ENV['MY_SERVICE_TOKEN']}\n")
    out = tmp_path / "bundle"
    with pytest.raises(ExportError, match=r"task/notes.txt holds the value of \$MY_SERVICE_TOKEN"):
        export_bundle(campaign.workspace, out, CATALOG, secret_values(ENV))
    assert not out.exists() and not any(p.name.endswith(".partial") for p in tmp_path.iterdir())


def test_export_refuses_a_non_empty_folder(tmp_path, campaign):
    out = tmp_path / "full"
    out.mkdir()
    (out / "x").write_text("x")
    with pytest.raises(ExportError, match="not an empty folder"):
        export_bundle(campaign.workspace, out, CATALOG, {})


@pytest.fixture
def bundle(tmp_path, campaign) -> Path:
    out = tmp_path / "bundle"
    export_bundle(campaign.workspace, out, CATALOG, {}, k=2)
    return out


def test_verify_accepts_an_untouched_bundle(bundle):
    assert check_manifest(bundle) == ()


def test_verify_names_each_tampered_file(bundle):
    trace = bundle / "trace.jsonl"
    original = trace.read_bytes()
    trace.write_bytes(original.replace(b'"correct": false', b'"correct": true'))
    assert trace.read_bytes() != original
    candidate = next((bundle / "candidates").iterdir())
    candidate.unlink()
    (bundle / "kernel" / "extra.cu").write_text("// slipped in\n")
    assert check_manifest(bundle) == (
        ManifestFinding(f"candidates/{candidate.name}", FileIssue.MISSING),
        ManifestFinding("kernel/extra.cu", FileIssue.UNLISTED),
        ManifestFinding("trace.jsonl", FileIssue.CHANGED),
    )


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "quaere", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_cli_export_then_verify_then_tamper(tmp_path):
    campaign = _plant_secrets(tmp_path)
    out = tmp_path / "published"
    done = _cli("export", str(campaign.workspace.root), str(out), env=ENV)
    assert done.returncode == 0, done.stderr
    for rel, data in _bundle_bytes(out).items():
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret} survived in {rel}"
    assert _cli("verify", str(out), "--no-rerun").returncode == 0
    kernel = out / "kernel" / "kernel.cu"
    kernel.write_bytes(kernel.read_bytes() + b"// faster now\n")
    tampered = _cli("verify", str(out), "--no-rerun")
    assert tampered.returncode == 1
    assert "changed: kernel/kernel.cu" in tampered.stderr


def test_cli_verify_without_a_manifest_names_the_file(tmp_path):
    done = _cli("verify", str(tmp_path))
    assert done.returncode == 2
    assert "manifest.json: no such file" in done.stderr


class _FakeEvaluator:
    """Stands in for the evaluator in these unit tests: returns a stored evaluation of the kernel."""

    def __init__(self, evaluation: Evaluation, device: bool) -> None:
        self.evaluation, self.device, self.calls = evaluation, device, []

    def device_present(self) -> bool:
        return self.device

    def evaluate(self, task_folder: Path, kernel: Path, workdir: Path) -> Evaluation:
        self.calls.append((task_folder, kernel))
        return self.evaluation


def _ledger(bundle: Path) -> list[Evaluation]:
    return [Evaluation.model_validate_json(line) for line in (bundle / "ledger.jsonl").read_text().splitlines()]


def test_rerun_on_a_cpu_task_runs_even_without_a_gpu(bundle):
    final = _ledger(bundle)[-1]
    fake = _FakeEvaluator(final, device=False)
    outcome = rerun_final_kernel(bundle, fake)
    assert outcome.status is RerunStatus.PASSED
    assert fake.calls == [(bundle / "task", bundle / "kernel" / "kernel.cu")]


def test_rerun_fails_on_a_wrong_or_different_kernel(bundle):
    ledger = _ledger(bundle)
    wrong = ledger[-1].model_copy(update={"correctness": ledger[2].correctness})
    assert rerun_final_kernel(bundle, _FakeEvaluator(wrong, device=True)).status is RerunStatus.FAILED
    other = rerun_final_kernel(bundle, _FakeEvaluator(ledger[0], device=True))
    assert other.status is RerunStatus.FAILED and "manifest says" in other.detail


def test_rerun_of_a_cuda_task_without_a_gpu_is_skipped_not_passed(bundle):
    toml = bundle / "task" / "task.toml"
    toml.write_text(toml.read_text().replace('device = "cpu"', 'device = "cuda"'))
    fake = _FakeEvaluator(_ledger(bundle)[-1], device=False)
    assert rerun_final_kernel(bundle, fake).status is RerunStatus.NO_DEVICE
    assert fake.calls == []


def test_rerun_of_a_task_that_does_not_load_fails_with_its_reason(bundle):
    from quaere.report.rerun import QuaereEvaluator

    outcome = rerun_final_kernel(bundle, QuaereEvaluator())
    assert outcome.status is RerunStatus.FAILED
    assert "task.py: missing required function" in outcome.detail
