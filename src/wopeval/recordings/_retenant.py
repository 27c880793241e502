"""A bundle's runs moved to the importing tenant: every field that names a run, and only those.

Import keeps each run's hex id and swaps its tenant part: `prod/4f3a…` becomes
`dev/4f3a…`. A row's own run (its run column, an event's `runId`) and its tenant
are written from the manifest's hex id and the importing tenant, never from the
row: the reader has checked the row says the same, and the writer does not ask
it again. Every other run a bundle names must be of its origin tenant: a run is
created, replayed, sourced and paired only within one tenant, so a name outside
it is not a recording but an attempt to reach another tenant's runs, and the
bundle is refused. The same walk over the rows checks that (at read, before
anything is written) and renames (at import).
"""

from __future__ import annotations

from typing import Any

from wopeval.store import bundle
from wopeval.wire import events, ids, json_text
from wopeval.wire.annotations import Annotation, LabelSignal

_RUN_COLUMNS = ("run_id", "eval_run_id", "source_run_id", "parent_run_id")
"""Columns of the run records that name a run."""


class Retenant:
    """Renames a run id of the `origin` tenant to the same hex id under `tenant`."""

    def __init__(self, origin: str, tenant: str) -> None:
        self.origin = origin
        self.tenant = tenant
        self._prefix = f"{origin}/"

    def __call__(self, value: Any) -> Any:
        if value is None:
            return None
        if not (isinstance(value, str) and value.startswith(self._prefix) and ids.is_run_id(value)):
            raise bundle.BundleError(
                f"names {str(value)[:80]!r}, not a run of the bundle's tenant {self.origin!r}"
            )
        return f"{self.tenant}/{value[len(self._prefix) :]}"

    def row(self, kind: bundle.RecordKind, row: dict[str, Any], hex_id: str) -> dict[str, Any]:
        """A row of the run `hex_id`, under `tenant`: recorded content (an agent's input, a
        tool's result) is never rewritten, even where it holds a string that looks like a
        run id."""
        row = dict(row)
        table = kind.name
        own = f"{self.tenant}/{hex_id}"
        for column in _RUN_COLUMNS:
            if column not in row:
                continue
            row[column] = own if column == kind.run_column else self(row[column])
        if "tenant" in row:
            row["tenant"] = self._tenant(row["tenant"])
        if table == "runs":
            row["owner"] = self._owner(row["owner"])
            row["request"] = self._eval_refs(row["request"])
            if "tenantId" in row["request"]:
                row["request"]["tenantId"] = self.tenant
            row["summary"] = self._summary_refs(row.get("summary"))
            outputs = row.get("outputs")
            if isinstance(outputs, dict) and "evalSummary" in outputs:
                row["outputs"] = {
                    **outputs,
                    "evalSummary": self._summary_refs(outputs["evalSummary"]),
                }
        elif table == "run_plans":
            row["plan"] = self._eval_refs(row["plan"])
        elif table == "events":
            row["doc"] = self._event(row["doc"], own)
        elif table == "annotations":
            row["doc"] = _annotation(row, own)
        return row

    def _tenant(self, value: Any) -> str:
        if value != self.origin:
            raise bundle.BundleError(f"a row of tenant {str(value)[:80]!r}, not {self.origin!r}")
        return self.tenant

    def _event(self, stored: str, own: str) -> str:
        # The store's codec, as the log writer's: a lone surrogate in a recorded answer is
        # written escaped (no UTF-8 holds one raw), integers beyond 64 bits are kept.
        doc = json_text.parse(stored)
        doc["runId"] = own
        payload = doc["payload"]
        if doc["type"] == events.RunStarted.TYPE:
            payload["owner"] = self._owner(payload["owner"])
            if "sourceRunId" in payload:
                payload["sourceRunId"] = self(payload["sourceRunId"])
        elif doc["type"] == events.EvalStarted.TYPE:
            doc["payload"] = self._eval_refs(payload)
        elif doc["type"] == events.RunCompleted.TYPE and "evalSummary" in payload.get(
            "outputs", {}
        ):
            summary = payload["outputs"]["evalSummary"]
            payload["outputs"]["evalSummary"] = self._summary_refs(summary)
        return json_text.compact(doc)

    def _eval_refs(self, document: Any) -> Any:
        """`baselineRunId` and `fixtureRuns` of a create request, a stored plan or
        `eval.started`."""
        if not isinstance(document, dict):
            return document
        moved = dict(document)
        if "baselineRunId" in moved:
            moved["baselineRunId"] = self(moved["baselineRunId"])
        if isinstance(moved.get("fixtureRuns"), dict):
            moved["fixtureRuns"] = {task: self(run) for task, run in moved["fixtureRuns"].items()}
        return moved

    def _summary_refs(self, summary: Any) -> Any:
        """An EvalSummary's one run id: `regression.baselineRunId`."""
        if not isinstance(summary, dict) or not isinstance(summary.get("regression"), dict):
            return summary
        regression = dict(summary["regression"])
        regression["baselineRunId"] = self(regression.get("baselineRunId"))
        return {**summary, "regression": regression}

    def _owner(self, owner: Any) -> Any:
        """The owner block moved to `tenant` (identity.md: a run's tenant is its owner's)."""
        if not isinstance(owner, dict):
            return owner
        moved = {**owner, "tenant": self.tenant}
        if isinstance(owner.get("subject"), dict):
            moved["subject"] = {**owner["subject"], "tenant": self.tenant}
        return moved


def _annotation(row: dict[str, Any], own: str) -> dict[str, Any]:
    """An annotation row's document under the run `own`: a whole `annotation.schema.json`
    object that says what the row's columns say (the label reads go by the columns, the
    wire by the document), or the bundle is refused."""
    doc = row["doc"]
    moved = Annotation.model_validate({**doc, "target": {**doc["target"], "runId": own}})
    signal = moved.signal
    label = signal.label if isinstance(signal, LabelSignal) else None
    said = (moved.annotationId, moved.target.nodeId, signal.kind, label)
    if said != (row["annotation_id"], row["node_id"], row["kind"], row["label"]):
        raise bundle.BundleError("an annotation row whose columns are not what its document says")
    return moved.to_wire()
