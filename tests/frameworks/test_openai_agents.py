"""The OpenAI Agents SDK (`examples/frameworks/openai_agents_desk.py`) on its default Responses
API, whole and streamed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._loop import RESPONSES, TIER_TIMEOUT, Tier, run_the_loop

pytestmark = [pytest.mark.postgres, TIER_TIMEOUT]


@pytest.mark.parametrize(
    ("framework", "streamed"), [("openai-agents", False), ("openai-agents-streamed", True)]
)
def test_openai_agents_is_recorded_and_replayed_offline(
    tier: Tier, tmp_path: Path, framework: str, streamed: bool
) -> None:
    run_the_loop(tier, framework, tmp_path, api=RESPONSES, streamed=streamed)
