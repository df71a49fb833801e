"""Run the campaign story with the ``mini`` backend (executed by a Python that has mini-swe-agent, not by
pytest): ``python mini_driver.py WORKSPACE BASE_URL``. Prints the campaign's result as JSON."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).parent))
from story import campaign_config  # noqa: E402 - the story's config, beside this file

from quaere.agents.config import MiniSettings  # noqa: E402
from quaere.agents.mini import MiniAgent  # noqa: E402
from quaere.campaign import run_campaign  # noqa: E402


def main(workspace: str, base_url: str) -> None:
    settings = MiniSettings(model="openai/fake-model", base_url=base_url, api_key=SecretStr("test-mini-key-0123"))
    config = campaign_config(Path(workspace), "mini", mini=settings)
    result = run_campaign(config, MiniAgent(settings, config.secret_values()))
    print(json.dumps(dataclasses.asdict(result), default=str))


if __name__ == "__main__":
    main(*sys.argv[1:3])
