"""A plain tool loop on the Anthropic SDK (`examples/frameworks/anthropic_desk.py`): the Messages
API.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._loop import MESSAGES, TIER_TIMEOUT, Tier, run_the_loop

pytestmark = [pytest.mark.postgres, TIER_TIMEOUT]


def test_anthropic_is_recorded_and_replayed_offline(tier: Tier, tmp_path: Path) -> None:
    run_the_loop(tier, "anthropic", tmp_path, api=MESSAGES, streamed=False)
