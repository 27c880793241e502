"""A run's read is answered from what was kept until the run changes (engine/read_cache.py).

The host's store is watched for reads of the runs table while a gated run is read over
the wire: while it waits, repeated reads answer the same snapshot without reading the
store; once it is let go and ends, the next reads show it ended (the change dropped
what was kept) and their repeats again read nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event

from ._gate import start_gated_run
from ._server import TENANT_B, ServerHandle
from ._support import RUN_DEADLINE_SECONDS

_RUNS_READ = re.compile(r"\s*SELECT\b.*\bFROM runs\b", re.DOTALL | re.IGNORECASE)


@contextmanager
def _run_reads(server: ServerHandle) -> Iterator[list[str]]:
    """The statements that read the runs table while the block runs, as they are sent."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if _RUNS_READ.match(statement):
            seen.append(statement)

    engine = server.host.store.engine.sync_engine
    event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", note)


def _read(http: httpx.Client, segment: str) -> httpx.Response:
    answer = http.get(f"/runs/{segment}")
    assert answer.status_code == 200, answer.text
    return answer


def test_repeated_reads_are_answered_from_what_was_kept_until_the_run_changes(
    project_server: ServerHandle, tmp_path: Path
) -> None:
    run = start_gated_run(project_server, tmp_path)
    segment = run.run_id.replace("/", "~2F")
    with project_server.http() as http, project_server.http(TENANT_B) as other:
        with _run_reads(project_server) as reads:
            first = _read(http, segment)
            assert len(reads) <= 1  # the first read may find nothing kept yet
            before_repeats = len(reads)
            repeats = [_read(http, segment) for _ in range(5)]
            assert len(reads) == before_repeats  # not one store read for the repeats
        assert first.json()["status"] == "running"
        assert {answer.content for answer in repeats} == {first.content}
        assert {answer.headers["content-type"] for answer in repeats} == {"application/json"}
        # Another tenant is refused as before: the kept answer is the caller's alone.
        assert other.get(f"/runs/{segment}").status_code == 403

        run.release()
        deadline = time.monotonic() + RUN_DEADLINE_SECONDS
        with _run_reads(project_server) as reads:
            while (latest := _read(http, segment)).json()["status"] == "running":
                assert time.monotonic() < deadline, "the run never showed it ended"
                time.sleep(0.02)
            after_change = len(reads)
            assert after_change >= 1  # the change dropped what was kept
            ended = [_read(http, segment) for _ in range(5)]
            assert len(reads) == after_change
    assert latest.json()["status"] == "completed"
    assert "completedAt" in latest.json()
    assert {answer.content for answer in ended} == {latest.content}
