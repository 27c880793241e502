"""Fixtures shared by the unit tests of more than one room."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture
def collector_on() -> Iterator[None]:
    """The collector running when the test starts, and again however it ends."""
    gc.enable()
    try:
        yield
    finally:
        gc.enable()
