"""Google's ADK with a LiteLLM model (`examples/frameworks/adk_desk.py`): Chat Completions through
LiteLLM.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._loop import CHAT, TIER_TIMEOUT, Tier, run_the_loop

pytestmark = [pytest.mark.postgres, TIER_TIMEOUT]


def test_adk_is_recorded_and_replayed_offline(tier: Tier, tmp_path: Path) -> None:
    run_the_loop(tier, "adk", tmp_path, api=CHAT, streamed=False)
