"""Run one OpenHands SDK conversation with quaere's hooks (executed by the OpenHands environment's Python
>= 3.12, not by pytest): ``python openhands_driver.py WORKSPACE BASE_URL PROMPT``. Prints the questions the
relay sent to the model, one JSON list on the last line."""

from __future__ import annotations

import json
import sys

from openhands.sdk import LLM, Agent, Tool
from openhands.tools.terminal import TerminalTool

from quaere.agents.openhands_sdk import QuestionRelay, quaere_conversation, trace_words


def main(workspace: str, base_url: str, prompt: str) -> None:
    llm = LLM(model="openai/fake-model", base_url=base_url, api_key="test", usage_id="agent", num_retries=0)
    agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name)])
    relay = QuestionRelay(trace_words(workspace))
    conversation = quaere_conversation(agent, workspace, relay=relay, visualizer=None)
    conversation.send_message(prompt)
    conversation.run()
    print(json.dumps(relay.relayed))


if __name__ == "__main__":
    main(*sys.argv[1:4])
