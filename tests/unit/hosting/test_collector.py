"""A host collects the youngest generation less often, and never more often than its process."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from wopeval.hosting.collector import YOUNG_COLLECTION_THRESHOLD, collect_less_often


@pytest.fixture
def thresholds() -> Iterator[None]:
    """The process's own thresholds, restored however the test ends."""
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*before)


@pytest.mark.usefixtures("thresholds")
def test_python_s_default_is_raised_and_the_older_generations_kept() -> None:
    gc.set_threshold(700, 10, 10)
    collect_less_often()
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10)


@pytest.mark.usefixtures("thresholds")
def test_a_higher_threshold_the_process_set_is_kept() -> None:
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD * 5, 20, 30)
    collect_less_often()
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD * 5, 20, 30)
