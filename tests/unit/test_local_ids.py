"""wire/ids.py `mint_local_id`: 128 random bits as 32 lowercase hex digits, always."""

from __future__ import annotations

import re

import pytest

from wopeval.wire import ids


def test_a_local_id_is_32_lowercase_hex_digits_and_ids_differ() -> None:
    minted = {ids.mint_local_id() for _ in range(1000)}
    assert len(minted) == 1000
    assert all(re.fullmatch(r"[0-9a-f]{32}", local_id) for local_id in minted)


@pytest.mark.parametrize(
    ("bits", "text"),
    [(0, "0" * 32), (0xAB, "0" * 30 + "ab"), (2**128 - 1, "f" * 32)],
)
def test_a_small_draw_is_padded_to_the_full_width(
    monkeypatch: pytest.MonkeyPatch, bits: int, text: str
) -> None:
    monkeypatch.setattr(ids, "_draw", lambda width: bits if width == 128 else -1)
    assert ids.mint_local_id() == text
