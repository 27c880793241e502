"""CrewAI with crewai-tools' MCPServerAdapter (`examples/frameworks/crewai_desk.py`): Chat
Completions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._loop import CHAT, TIER_TIMEOUT, Tier, run_the_loop

pytestmark = [pytest.mark.postgres, TIER_TIMEOUT]


def test_crewai_is_recorded_and_replayed_offline(tier: Tier, tmp_path: Path) -> None:
    run_the_loop(tier, "crewai", tmp_path, api=CHAT, streamed=False)
