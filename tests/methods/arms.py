"""Three scripted campaigns on the quick CPU task, one per method, with the same budgets and kernels.

Each script evaluates the initial kernel, a wrong one and the fast one, and tries to stop twice; the tooled
script also calls every tool of its arm (profile, search, lessons add/list, lineage list/show/checkout)
and evaluates the wrong kernel three times so that its supervisor speaks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from quaere.agents.config import Budgets, CampaignConfig
from quaere.agents.scripted import Action, ScriptedAgent
from quaere.campaign import CampaignResult, run_campaign
from quaere.methods.arms import make_method
from quaere.questions.moments import MomentsConfig, PlateauConfig
from quaere.records import MethodKind

FIXTURES = Path(__file__).parents[1] / "campaign" / "fixtures"
TASK = FIXTURES / "quick_softmax"
KERNELS = FIXTURES / "kernels"
EVAL = "quaere eval"
BLAME = "The 0.1% mismatch is only floating-point rounding noise; the tolerance of the check is too strict."
CLAIM = "I believe this kernel is optimal now: it is at the hardware limit and cannot be improved further."
DONE = "The fast kernel passes every scenario and is much faster than the initial one."
LESSON = "Scaling the normalization by anything but 1/sum fails the wrong-output check"

TOOL_COMMANDS = (
    "quaere tool profile",
    "quaere tool search softmax exponential vectorization",
    f"quaere tool lessons add '{LESSON}' --tag correctness",
    "quaere tool lineage",
    "quaere tool lineage show v2",
    "quaere tool lineage checkout v1",
    "quaere tool lessons list normalization",
)


def _bash(command: str) -> Action:
    return Action("bash", command)


# On a loaded machine one timing of the fast kernel can fail the judge's clock bound (hidden_work): evaluate
# again and stop again, as an agent would. Once the goal holds the campaign ends and these never run.
RETRIES = [_bash(EVAL), Action("stop", DONE)] * 2


def plain_script() -> list[Action]:
    """The questions and goal-only arms' script: the same actions, so only the method differs."""
    return [
        _bash(EVAL),
        _bash(f"cp {KERNELS / 'wrong.cpp'} kernel.cpp && {EVAL}"),
        Action("say", BLAME),
        _bash(EVAL),
        _bash(EVAL),
        Action("stop", CLAIM),
        _bash(f"cp {KERNELS / 'fast.cpp'} kernel.cpp && {EVAL}"),
        Action("stop", DONE),
        *RETRIES,
    ]


def tooled_script() -> list[Action]:
    profile, search, lesson, lineage, show, checkout, lessons = (_bash(c) for c in TOOL_COMMANDS)
    return [
        _bash(EVAL),
        profile,
        search,
        _bash(f"cp {KERNELS / 'wrong.cpp'} kernel.cpp && {EVAL}"),
        _bash(EVAL),
        _bash(f"echo '// try again' >> kernel.cpp && {EVAL}"),  # third failure in a row: the supervisor
        lesson,
        lineage,
        show,
        Action("stop", CLAIM),
        checkout,
        lessons,
        _bash(f"cp {KERNELS / 'fast.cpp'} kernel.cpp && {EVAL}"),
        Action("stop", DONE),
        *RETRIES,
    ]


def arm_config(workspace: Path, method: MethodKind, **fields: object) -> CampaignConfig:
    return CampaignConfig(
        task=str(TASK),
        workspace=workspace,
        agent="scripted",
        method=method,
        budgets=Budgets(sessions=2, tool_calls=40, wall_min=15),
        moments=MomentsConfig(plateau=PlateauConfig(evaluations=2)),
        **fields,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class Arm:
    method: MethodKind
    workspace: Path
    result: CampaignResult


def run_arm(root: Path, method: MethodKind) -> Arm:
    workspace = root / method.value
    config = arm_config(workspace, method)
    script = tooled_script() if method is MethodKind.TOOLED else plain_script()
    result = run_campaign(config, ScriptedAgent(script), method=make_method(config, dict(os.environ)))
    return Arm(method, workspace, result)
