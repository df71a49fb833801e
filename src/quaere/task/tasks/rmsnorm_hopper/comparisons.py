"""Comparison implementations of the rmsnorm_hopper task: PyTorch's fused RMSNorm and a Triton kernel.

Each takes (scenario, inputs, outputs) and returns a zero-argument callable that only launches the work;
imports, checks and Triton's compilation happen here, outside the timed region. Each raises
:class:`ComparisonUnavailable` when it cannot run the scenario here rather than timing something else.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quaere.records import Scenario
from quaere.task.contract import Arrays, ComparisonUnavailable

TRITON_INSTALL_HINT = "Triton not installed: pip install triton"


def pytorch(scenario: Scenario, inputs: Arrays, outputs: Arrays) -> Callable[[], Any]:
    """``torch.nn.functional.rms_norm`` over the last dimension (PyTorch >= 2.4)."""
    import torch

    rms_norm = getattr(torch.nn.functional, "rms_norm", None)
    if rms_norm is None:
        raise ComparisonUnavailable(f"torch.nn.functional.rms_norm needs PyTorch >= 2.4 (this is {torch.__version__})")
    x, weight, eps = inputs["x"], inputs["weight"], float(scenario.params["eps"])
    shape = (x.shape[-1],)
    return lambda: rms_norm(x, shape, weight, eps)


def _triton_module() -> Any:
    """``triton_rmsnorm.py`` beside this file, imported once per process (it imports triton at its top)."""
    name = f"{__name__}__triton_rmsnorm"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("triton_rmsnorm.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except ImportError as exc:
            raise ComparisonUnavailable(f"{TRITON_INSTALL_HINT} ({exc})") from exc
        sys.modules[name] = module
    return sys.modules[name]


def triton(scenario: Scenario, inputs: Arrays, outputs: Arrays) -> Callable[[], Any]:
    """A one-program-per-row Triton RMSNorm writing the task's output buffer (compiled here, untimed)."""
    return _triton_module().launcher(inputs["x"], inputs["weight"], outputs["y"], float(scenario.params["eps"]))
