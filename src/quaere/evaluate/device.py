"""Is the task's device here, and what is it (name, driver, clocks)? Never imports torch."""

from __future__ import annotations

import math
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from quaere.evaluate.options import cuda_visible_devices
from quaere.records import DeviceInfo

NVIDIA_SMI_FIELDS = "name,driver_version,clocks.applications.graphics,clocks.applications.memory,clocks.sm,clocks.mem"


@dataclass(frozen=True)
class DeviceProbe:
    info: DeviceInfo
    available: bool
    reason: str = ""
    """Why no GPU is usable, e.g. 'nvidia-smi not found' ('' when the device is available)."""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def parse_nvidia_smi(output: str, visible: str | None) -> DeviceInfo | None:
    """The GPU the worker will use (the first of CUDA_VISIBLE_DEVICES when it names indices)."""
    rows = [[cell.strip() for cell in line.split(",")] for line in output.strip().splitlines() if line.strip()]
    rows = [row for row in rows if len(row) >= 6]
    if not rows:
        return None
    index = 0
    first = (visible or "").split(",")[0].strip()
    if first.isdigit() and int(first) < len(rows):
        index = int(first)
    name, driver, app_sm, app_mem, sm, mem = rows[index][:6]
    sm_clock = _number(app_sm) if math.isfinite(_number(app_sm)) else _number(sm)
    mem_clock = _number(app_mem) if math.isfinite(_number(app_mem)) else _number(mem)
    return DeviceInfo(name=name, driver=driver, sm_clock_mhz=sm_clock, mem_clock_mhz=mem_clock)


def probe_device(kind: str) -> DeviceProbe:
    """``kind`` is the task's device: 'cpu' is always here; 'cuda' needs nvidia-smi to list a GPU."""
    if kind == "cpu":
        return DeviceProbe(info=DeviceInfo(name=f"cpu:{_cpu_model()}"), available=True)
    no_gpu = DeviceInfo(name="none")
    visible = cuda_visible_devices()
    if visible is not None and visible.strip() in ("", "-1"):
        return DeviceProbe(no_gpu, False, "CUDA_VISIBLE_DEVICES hides every GPU")
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return DeviceProbe(no_gpu, False, "nvidia-smi not found")
    try:
        run = subprocess.run(
            [smi, f"--query-gpu={NVIDIA_SMI_FIELDS}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DeviceProbe(no_gpu, False, f"nvidia-smi failed: {exc}")
    info = parse_nvidia_smi(run.stdout, visible) if run.returncode == 0 else None
    if info is None:
        return DeviceProbe(no_gpu, False, f"nvidia-smi lists none: {run.stderr.strip()[:200]}")
    return DeviceProbe(info=info, available=True)


def gpu_present() -> bool:
    """Whether a CUDA task could run here (used to pick the default task)."""
    return probe_device("cuda").available


def default_task_name(gpu: bool) -> str:
    """The task ``quaere eval`` runs when none is named and no workspace says: the GPU one where a GPU is."""
    return "flash_attention_hopper" if gpu else "cpu_softmax"
