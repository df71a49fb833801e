from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the scripted campaign module beside these tests

from scripted_campaign import CATALOG, Campaign, build_campaign  # noqa: E402

from quaere.report.campaign_report import CampaignReport  # noqa: E402
from quaere.report.inputs import load_inputs, load_report  # noqa: E402


@pytest.fixture
def campaign(tmp_path: Path) -> Campaign:
    return build_campaign(tmp_path)


@pytest.fixture
def events(campaign: Campaign) -> tuple:
    return load_inputs(campaign.workspace).events


@pytest.fixture
def report(campaign: Campaign) -> CampaignReport:
    return load_report(campaign.workspace, CATALOG, k=2)
