"""quaere's hooks in an OpenHands SDK conversation (``openhands-sdk``, Python >= 3.12; verified with 1.58.2).

The SDK reads no hook settings by itself, and shows the model only two of the three hook outputs quaere
uses: a Stop hook's refusal (sent back as feedback) and a UserPromptSubmit hook's ``additionalContext``
(added to the prompt). A PostToolUse hook's ``additionalContext`` is only logged, in a
``HookExecutionEvent``: the questions quaere asks after an evaluation would be lost. This module closes
both gaps with the SDK's public API:

* :func:`quaere_conversation` builds the ``Conversation`` with ``hook_config=HookConfig.load(working_dir=
  workspace)`` (the settings ``quaere hooks install --agent openhands`` wrote);
* :class:`QuestionRelay`, one of its callbacks, takes a PostToolUse hook's context from that event and,
  once the tool's observation is in the conversation, sends it to the model as a user message
  (``Conversation.send_message``), so it is in the model's next request;
* the same callback writes the model's words (an action's thought, an agent message) to quaere's trace:
  OpenHands' hook payload names no transcript, and the explained-failure detector needs those words.

Use (the user's own agent and LLM, any model the SDK supports)::

    from quaere.agents.openhands_sdk import quaere_conversation
    conversation = quaere_conversation(agent, workspace="path/to/workspace")
    conversation.send_message("Make the kernel meet the goal.")
    conversation.run()

Only the standard library is imported at module level; openhands is imported when used, and of quaere
only its trace and hook state (pydantic, which the SDK has too): ``PYTHONPATH=<quaere>/src`` in the
OpenHands environment is enough.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

POST_TOOL_USE = "PostToolUse"


class QuestionRelay:
    """A conversation callback that shows the model what PostToolUse hooks asked.

    The hook runs before the tool's observation is recorded; a message sent then would sit between the
    tool call and its result. So the question waits for the observation of the same action.
    """

    def __init__(self, words: Callable[[str, str], None] | None = None) -> None:
        self.conversation: Any = None  # set once the conversation exists (it takes the callbacks first)
        self.words = words  # (conversation id, text): where the model's words go; None: nowhere
        self.pending: dict[str, list[str]] = {}  # action id -> questions waiting for its observation
        self.relayed: list[str] = []

    def __call__(self, event: Any) -> None:
        from openhands.sdk.event import HookExecutionEvent, ObservationEvent

        said = _agent_words(event)
        if said and self.words is not None and self.conversation is not None:
            self.words(str(self.conversation.id), said)
        if isinstance(event, HookExecutionEvent):
            if event.hook_event_type == POST_TOOL_USE and event.additional_context and event.action_id:
                self.pending.setdefault(event.action_id, []).append(event.additional_context)
        elif isinstance(event, ObservationEvent) and event.action_id in self.pending:
            text = "\n\n".join(self.pending.pop(event.action_id))
            if self.conversation is not None:
                self.relayed.append(text)
                self.conversation.send_message(text)


def _agent_words(event: Any) -> str:
    """What the model said in an event: an action's thought, or an agent message's text ("" otherwise)."""
    from openhands.sdk.event import ActionEvent, MessageEvent

    if isinstance(event, ActionEvent):
        parts = event.thought
    elif isinstance(event, MessageEvent) and event.source == "agent":
        parts = event.llm_message.content
    else:
        return ""
    return "\n".join(getattr(p, "text", "") for p in parts if getattr(p, "text", "")).strip()


def trace_words(workspace: str | Path) -> Callable[[str, str], None]:
    """Writes the model's words to the workspace's trace, in the session the hooks gave the conversation."""
    from quaere.hooks.state import read_state
    from quaere.trace import AgentMessage, TraceWriter, cut
    from quaere.workspace import open_workspace

    opened = open_workspace(Path(workspace))

    def write(conversation_id: str, text: str) -> None:
        sessions = read_state(opened.state).sessions
        session = sessions.index(conversation_id) + 1 if conversation_id in sessions else 0
        TraceWriter(opened.trace).write(AgentMessage(session=session, role="assistant", text=cut(text)[0]))

    return write


def quaere_conversation(
    agent: Any,
    workspace: str | Path,
    callbacks: Sequence[Callable[[Any], None]] = (),
    relay: QuestionRelay | None = None,
    **kwargs: Any,
) -> Any:
    """An OpenHands ``Conversation`` in ``workspace`` with its hook settings loaded and post-tool questions
    relayed to the model (through ``relay`` when given, to see what it sent). ``kwargs`` go to
    ``Conversation`` unchanged."""
    from openhands.sdk import Conversation
    from openhands.sdk.hooks import HookConfig

    relay = relay if relay is not None else QuestionRelay(trace_words(workspace))
    conversation = Conversation(
        agent=agent,
        workspace=str(workspace),
        hook_config=HookConfig.load(working_dir=str(workspace)),
        callbacks=[*callbacks, relay],
        **kwargs,
    )
    relay.conversation = conversation
    return conversation
