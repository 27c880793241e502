"""PydanticAI (`examples/frameworks/pydantic_ai_desk.py`): `openai:` models speak the Responses
API.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._loop import RESPONSES, TIER_TIMEOUT, Tier, run_the_loop

pytestmark = [pytest.mark.postgres, TIER_TIMEOUT]


def test_pydantic_ai_is_recorded_and_replayed_offline(tier: Tier, tmp_path: Path) -> None:
    run_the_loop(tier, "pydantic-ai", tmp_path, api=RESPONSES, streamed=False)
