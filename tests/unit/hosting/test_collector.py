"""A host collects the youngest generation less often, and never more often than its process;
a command loads its modules and starts its host with the collector paused."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from wopeval.hosting.collector import (
    YOUNG_COLLECTION_THRESHOLD,
    collect_less_often,
    paused_for_startup,
)


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


@pytest.mark.usefixtures("collector_on")
def test_a_start_runs_with_the_collector_paused_and_freezes_what_it_loaded() -> None:
    frozen = gc.get_freeze_count()
    with paused_for_startup():
        assert not gc.isenabled()
        loaded = [object() for _ in range(10)], {"kept": [1, 2, 3]}
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen
    assert loaded


@pytest.mark.usefixtures("collector_on")
def test_nested_pauses_resume_at_the_outermost_only() -> None:
    with paused_for_startup():
        with paused_for_startup():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_start_that_fails_resumes_the_collector() -> None:
    with pytest.raises(RuntimeError), paused_for_startup():
        raise RuntimeError("the start failed")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_on")
def test_a_collector_the_caller_switched_off_stays_off() -> None:
    gc.disable()
    with paused_for_startup():
        pass
    assert not gc.isenabled()
