"""`client._answers`: a host's run documents read as models and given back as they came."""

from __future__ import annotations

import json

from wopeval import client

SNAPSHOT = {
    "runId": "t/r",
    "workflowId": "w",
    "status": "completed",
    "owner": {"tenant": "t", "subject": {"subjectId": "k"}},
    "eventLogSchemaVersion": 3,
    "startedAt": "2026-01-01T00:00:00.000Z",
    "completedAt": "2026-01-01T00:00:01.000Z",
    "inputs": {"x": None},
    "tags": ["nightly"],
    "extensions": {"wopeval.run": {"kind": "workflow", "agentIds": ["a"]}},
    "x-newer-host": {"kept": True},
}
"""A snapshot as this host writes it, with a member a newer host might add."""


def test_a_snapshot_is_given_back_as_the_host_sent_it() -> None:
    snapshot = client.RunSnapshot.model_validate(SNAPSHOT)
    # Same members, same order, nothing added for the ones the host left out.
    assert json.dumps(snapshot.document()) == json.dumps(SNAPSHOT)
    assert snapshot.extension("wopeval.run")["agentIds"] == ["a"]
    assert snapshot.extension("other.ext") == {}


def test_a_page_keeps_what_a_newer_host_adds() -> None:
    page = client.RunPage.model_validate({"runs": [SNAPSHOT], "x-total": 1})
    assert page.nextCursor is None
    assert page.document() == {"runs": [SNAPSHOT], "x-total": 1}


def test_a_failed_runs_error_reads_as_one_line() -> None:
    failed = client.RunSnapshot.model_validate(
        {**SNAPSHOT, "status": "failed", "error": {"code": "boom", "message": "it broke"}}
    )
    assert failed.error_line() == "boom: it broke"
    assert client.RunSnapshot.model_validate(SNAPSHOT).error_line() == ""
