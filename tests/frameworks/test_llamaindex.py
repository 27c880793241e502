"""LlamaIndex's FunctionAgent with McpToolSpec (`examples/frameworks/llamaindex_desk.py`): Chat
Completions, its base URL from `OPENAI_API_BASE`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._loop import CHAT, TIER_TIMEOUT, Tier, run_the_loop

pytestmark = [pytest.mark.postgres, TIER_TIMEOUT]


def test_llamaindex_is_recorded_and_replayed_offline(tier: Tier, tmp_path: Path) -> None:
    run_the_loop(tier, "llamaindex", tmp_path, api=CHAT, streamed=True)
