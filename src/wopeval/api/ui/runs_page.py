"""The runs page: a tenant's workflow and eval runs, newest first, filtered and paged.

It lists through the same repository call as `GET /runs` (`RunsRepo.page`),
always in the signed-in tenant. While it lists active runs, the page follows
them live (`live.py`) and refreshes its table when one changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Response
from fastapi.responses import RedirectResponse

from wopeval.api.deps import HostDep
from wopeval.api.ui._render import Chrome, render
from wopeval.api.ui._route import UiRoute
from wopeval.api.ui.deps import SessionDep
from wopeval.api.ui.live import stream_url
from wopeval.store import RunFilter, RunRecord, decode_cursor, encode_cursor
from wopeval.wire import errors
from wopeval.wire.runs import RunKind, RunStatus

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

PAGE_SIZE = 50
KINDS = tuple(kind.value for kind in RunKind)
STATUSES = tuple(status.value for status in RunStatus)


@dataclass(frozen=True)
class RunRow:
    run_id: str
    kind: str
    workflow_id: str
    suite_id: str | None
    status: str
    active: bool
    agent: str
    tags: tuple[str, ...]
    created_at: datetime
    duration_ms: int | None
    score: float | None
    passed: bool | None
    verdict: str | None


@dataclass(frozen=True)
class RunsView:
    filters: dict[str, str]
    """The filter form's values, as given."""
    kinds: tuple[str, ...]
    statuses: tuple[str, ...]
    agents: tuple[str, ...]
    """The host's agents, offered as suggestions."""
    rows: list[RunRow]
    first_href: str | None
    """The first page, when this is a later one."""
    next_href: str | None
    stream: str | None
    """The live stream of the active runs listed, if any."""


@router.get("")
@router.get("/")
async def home(_session: SessionDep) -> Response:
    return RedirectResponse("/ui/runs", status_code=303)


@router.get("/runs")
async def runs_page(
    session: SessionDep,
    host: HostDep,
    kind: str = "",
    status: str = "",
    tag: str = "",
    agent: str = "",
    suite: str = "",
    created_from: Annotated[str, Query(alias="from")] = "",
    created_to: Annotated[str, Query(alias="to")] = "",
    cursor: str = "",
) -> Response:
    filters = {
        "kind": kind,
        "status": status,
        "tag": tag,
        "agent": agent,
        "suite": suite,
        "from": created_from,
        "to": created_to,
    }
    where = _run_filter(filters)
    before = decode_cursor(cursor) if cursor else None
    async with host.store.reading() as uow:
        page = await uow.runs.page(
            session.principal.tenant, limit=PAGE_SIZE + 1, before_seq=before, where=where
        )
    shown = page[:PAGE_SIZE]
    given = {name: value for name, value in filters.items() if value}
    next_href = None
    if len(page) > PAGE_SIZE:
        next_href = "/ui/runs?" + urlencode(
            {**given, "cursor": encode_cursor(shown[-1].created_seq)}
        )
    view = RunsView(
        filters=filters,
        kinds=KINDS,
        statuses=STATUSES,
        agents=tuple(sorted(spec.agent_id for spec in host.catalog.agents.all())),
        rows=[_row(record) for record in shown],
        first_href=("/ui/runs?" + urlencode(given)) if cursor else None,
        next_href=next_href,
        stream=stream_url([r for r in shown if not r.status.is_terminal]),
    )
    return render("runs.html", Chrome(session, "runs", "Runs"), view)


def _run_filter(filters: dict[str, str]) -> RunFilter:
    kind, status = filters["kind"], filters["status"]
    if kind and kind not in KINDS:
        raise errors.ValidationFailed(f"kind must be one of {', '.join(KINDS)}.")
    if status and status not in STATUSES:
        raise errors.ValidationFailed(f"status must be one of {', '.join(STATUSES)}.")
    return RunFilter(
        kind=kind or None,
        status=status or None,
        tag=filters["tag"] or None,
        agent_id=filters["agent"] or None,
        suite_id=filters["suite"] or None,
        created_from=_instant(filters["from"], "from"),
        created_before=_instant(filters["to"], "to"),
    )


def _instant(value: str, name: str) -> datetime | None:
    """A `datetime-local` (or ISO 8601) value; one without a zone is UTC."""
    if not value:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise errors.ValidationFailed(
            f"'{name}' must be a date and time, such as 2026-01-31T09:30."
        ) from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _row(record: RunRecord) -> RunRow:
    summary = record.summary
    regression = None if summary is None else summary.regression
    verdict = None if regression is None else regression.verdict
    agent = record.request.agentId or ", ".join(record.agent_ids)
    duration = None
    if record.completed_at is not None and record.started_at is not None:
        duration = int((record.completed_at - record.started_at).total_seconds() * 1000)
    return RunRow(
        run_id=record.run_id,
        kind=record.kind.value,
        workflow_id=record.workflow_id,
        suite_id=record.suite_id,
        status=record.status.value,
        active=not record.status.is_terminal,
        agent=agent,
        tags=tuple(record.request.tags or ()),
        created_at=record.created_at,
        duration_ms=duration,
        score=None if summary is None else summary.aggregateScore,
        passed=None if summary is None else summary.passed,
        verdict=None if verdict is None else verdict.value,
    )
