"""A run travels once it has ended, and its log must end with the event of its status."""

from __future__ import annotations

from wopeval.recordings import _checks
from wopeval.wire import events
from wopeval.wire.runs import RunStatus


def test_only_a_terminal_status_has_ended() -> None:
    assert {status for status in RunStatus if _checks.ended(status.value)} == {
        status for status in RunStatus if status.is_terminal
    }
    assert not _checks.ended("done")


def test_each_terminal_status_has_the_terminal_event_that_ends_its_log() -> None:
    ending = _checks._ENDING_EVENT
    assert set(ending) == {status for status in RunStatus if status.is_terminal}
    assert set(ending.values()) == events.TERMINAL_TYPES
    assert all(event == f"run.{status.value}" for status, event in ending.items())
