"""quaere's agent hooks: the goal behind Stop, questions after tools and on the first prompt.

:mod:`.handlers` answers the three events in-process (the campaign calls it directly; ``quaere hook``
wraps it for agents that run command hooks); :mod:`.answers` speaks each dialect; :mod:`.state` is what
the short-lived hook processes remember; :mod:`.wiring` builds the handlers' dependencies; :mod:`.install`
writes and removes the agents' settings. One module per hook dialect (:mod:`.claude_code`, :mod:`.codex`,
:mod:`.openhands`) holds what differs between agents; :mod:`.dialect` names them.

The handlers' public names are re-exported here.
"""

from typing import Any

_HANDLER_NAMES = frozenset({"HookDeps", "MomentDetector", "QuestionPicker", "current_goal",
                            "handle_post_tool", "handle_prompt", "handle_stop"})


def __getattr__(name: str) -> Any:
    """The handlers' names, imported on first use: ``quaere.hooks.state`` (which the store imports) must
    load without the handlers (which import the goal, which imports the store)."""
    if name in _HANDLER_NAMES:
        from quaere.hooks import handlers

        return getattr(handlers, name)
    raise AttributeError(f"module 'quaere.hooks' has no attribute {name!r}")


__all__ = [
    "HookDeps",
    "MomentDetector",
    "QuestionPicker",
    "current_goal",
    "handle_post_tool",
    "handle_prompt",
    "handle_stop",
]
