"""`wopeval runs events RUN` of a finished run ends, with the whole log to its terminal event,
on both stores: a log longer than one poll page (the host's 1,000 events) included."""

from __future__ import annotations

import json
from pathlib import Path

from _backends import Backend

from ._support import PROJECT, run_cli

CALLS = 520
"""Tool calls of the recorded run: two events each, so its log spans two poll pages."""
EVENTS_DEADLINE_SECONDS = 60.0


def test_the_events_of_a_finished_run_end_at_its_terminal_event(
    backend: Backend, tmp_path: Path
) -> None:
    host = ["--project", str(PROJECT), "--data-dir", str(tmp_path / "data")]
    if (database := backend.new_database()) is not None:
        host += ["--database-url", database]
    calls = [
        {"tool": "conformance.eval:counter", "args": {"op": "read", "key": f"k{n}"}}
        for n in range(CALLS)
    ]
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"calls": calls, "answer": "done"}), encoding="utf-8")
    recorded = run_cli("run", "conformance-agent-counter", "--input", f"@{inputs}", *host)
    assert recorded.code == 0, recorded.stderr
    run_id, status, decision = recorded.stdout.split()
    assert (status, decision) == ("completed", 'decision="done"')  # read from run.completed

    listed = run_cli("runs", "events", run_id, "--json", *host, timeout=EVENTS_DEADLINE_SECONDS)
    assert listed.code == 0, listed.stderr
    events = json.loads(listed.stdout)["events"]
    assert [event["sequence"] for event in events] == list(range(len(events)))
    assert len(events) > 2 * CALLS
    assert events[-1]["type"] == "run.completed"

    shown = run_cli(
        "runs", "events", run_id, *host, timeout=EVENTS_DEADLINE_SECONDS, env={"COLUMNS": "200"}
    )
    assert shown.code == 0, shown.stderr
    rows = [line.split("│")[1:3] for line in shown.stdout.splitlines() if line.startswith("│")]
    assert [int(sequence) for sequence, _ in rows] == list(range(len(events)))
    assert rows[-1][1].strip() == "run.completed"
