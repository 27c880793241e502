"""What a run must be to travel, in either direction: ended, whole, unerased, of one tenant.

The store has checked a read bundle as rows (their tables' shapes, the run each
belongs to, once each); these checks read what the rows say. A run travels once it
has ended, and with no erased content (a bundle is outside the origin's erasure,
docs/recordings.md); a bundle's run carries a whole log that ends with the event of
its status, and names no run outside its origin tenant (recordings/_retenant.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from wopeval.recordings._retenant import Retenant
from wopeval.store import bundle
from wopeval.wire import events, json_text
from wopeval.wire.runs import RunStatus

_ENDED = frozenset(status for status in RunStatus if status.is_terminal)

_ENDING_EVENT = {
    RunStatus.COMPLETED: events.RunCompleted.TYPE,
    RunStatus.FAILED: events.RunFailed.TYPE,
    RunStatus.CANCELLED: events.RunCancelled.TYPE,
}
"""The event a run's log ends with, by the terminal status the run ended in."""


def ended(status: object) -> bool:
    """A run in this status has ended: only such runs travel."""
    return status in _ENDED


def erased(records: bundle.Records) -> bool:
    """Some of the run's content was erased: such a run never travels."""
    return any(row.get("erased_at") is not None for rows in records.values() for row in rows)


def check_bundle(read: bundle.Bundle) -> None:
    """Every run of the read bundle may travel; `BundleError` says why one may not."""
    origin = read.manifest.origin.tenant
    names_origin_runs = Retenant(origin, origin)
    for run in read.runs:
        run_id = f"{origin}/{run.hex_id}"
        for kind in bundle.RUN_RECORDS:
            for index, row in enumerate(run.records[kind.name]):
                _check_row(
                    kind, row, bundle.placed(run.hex_id, kind, index), run, names_origin_runs
                )
        row = run.records["runs"][0]
        if not ended(row["status"]):
            raise bundle.BundleError(f"run {run_id} has not ended (status {row['status']!r})")
        _check_log(run_id, row, run.records["events"])


def _check_row(
    kind: bundle.RecordKind,
    row: dict[str, Any],
    where: str,
    run: bundle.BundledRun,
    names_origin_runs: Retenant,
) -> None:
    if row.get("erased_at") is not None:
        raise bundle.BundleError(
            f"{where}: erased tool content of run {names_origin_runs.origin}/{run.hex_id}"
        )
    try:
        names_origin_runs.row(kind, row, run.hex_id)
    except bundle.BundleError as error:
        raise bundle.BundleError(f"{where}: {error}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise bundle.BundleError(
            f"{where}: this {kind.name} row is not one this host reads ({exc!r})"
        ) from None


def _event_doc(text: str) -> events.EventDoc:
    try:
        return events.EventDoc.model_validate_json(text)
    except ValidationError as refused:
        # pydantic's JSON reader stops at 200 levels and refuses a lone surrogate's escape,
        # and its JsonValue at some 255 levels: all legal in a recorded tool answer the host
        # wrote. The store's codec reads the text; its payload, read from JSON text, is
        # JSON, and the envelope around it is checked. Only a refused event pays.
        try:
            value = json_text.parse(text)
        except (ValueError, RecursionError):
            raise refused from None
        if not isinstance(value, dict) or "payload" not in value:
            raise
    envelope = events.EventDoc.model_validate({**value, "payload": None})
    return envelope.model_copy(update={"payload": value["payload"]})


def _check_log(run_id: str, run: dict[str, Any], logged: list[dict[str, Any]]) -> None:
    """The run's log is whole: sequences 0 to its last with no gap, each event the one its
    row says, and one terminal event, last, the one its status says it ended with."""
    where = f"the log of run {run_id}"
    if [event["sequence"] for event in logged] != list(range(len(logged))):
        raise bundle.BundleError(f"{where} is not gapless from sequence 0")
    if run["last_sequence"] != len(logged) - 1:
        raise bundle.BundleError(
            f"{where} ends at {len(logged) - 1}; its run row says {run['last_sequence']}"
        )
    for event in logged:
        try:
            doc = _event_doc(event["doc"])
        except ValidationError:
            raise bundle.BundleError(f"{where}: event {event['sequence']} is no event") from None
        if (doc.runId, doc.sequence, doc.type) != (run_id, event["sequence"], event["type"]):
            raise bundle.BundleError(
                f"{where}: event {event['sequence']} is not the one its row names"
            )
    ending = _ENDING_EVENT[RunStatus(run["status"])]
    terminal = [event["type"] for event in logged if event["type"] in events.TERMINAL_TYPES]
    if terminal != [ending] or logged[-1]["type"] != ending:
        raise bundle.BundleError(
            f"{where} must end with one {ending} event, its status; it has {terminal}"
        )
