"""quaere's agent hooks: the goal behind Stop, questions after tools and on the first prompt.

:mod:`.handlers` answers the three events in-process (the campaign calls it directly; ``quaere hook``
wraps it for agents that run command hooks); :mod:`.answers` speaks each dialect; :mod:`.state` is what
the short-lived hook processes remember; :mod:`.wiring` builds the handlers' dependencies; :mod:`.install`
writes and removes the agents' settings. One module per hook dialect (:mod:`.claude_code`, :mod:`.codex`,
:mod:`.openhands`) holds what differs between agents; :mod:`.dialect` names them.

The handlers' public names are re-exported here.
"""

from quaere.hooks.handlers import (
    HookDeps,
    MomentDetector,
    PickedQuestion,
    QuestionPicker,
    current_goal,
    handle_post_tool,
    handle_prompt,
    handle_stop,
)

__all__ = [
    "HookDeps",
    "MomentDetector",
    "PickedQuestion",
    "QuestionPicker",
    "current_goal",
    "handle_post_tool",
    "handle_prompt",
    "handle_stop",
]
