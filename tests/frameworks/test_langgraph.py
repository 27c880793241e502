"""LangGraph with langchain-mcp-adapters (`examples/frameworks/langgraph_desk.py`): Chat
Completions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._loop import CHAT, TIER_TIMEOUT, Tier, run_the_loop

pytestmark = [pytest.mark.postgres, TIER_TIMEOUT]


def test_langgraph_is_recorded_and_replayed_offline(tier: Tier, tmp_path: Path) -> None:
    run_the_loop(tier, "langgraph", tmp_path, api=CHAT, streamed=False)
