"""Rendering the dashboard's pages: one Jinja2 environment, autoescaped, templates in the package.

Everything a run, an agent or a tool produced reaches a page as data and is
escaped by the template engine; nothing here marks content safe. JSON values
are shown as indented text (`json_text`), which the engine escapes like any
other string.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined

from wopeval.api.ui.sessions import Session
from wopeval.reports import criterion_rows, judge_headline
from wopeval.wire import ids
from wopeval.wire.json_text import dumped

_ENVIRONMENT = Environment(
    loader=PackageLoader("wopeval.api.ui", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def json_text(value: Any) -> str:
    """A JSON value as indented text; a string stays a JSON string (quoted)."""
    return dumped(value, indent=2)


CELL_CHARACTERS = 2000
"""A table cell shows this much of a JSON value (the run's events hold it whole)."""


def json_line(value: Any) -> str:
    """A JSON value on as few lines as the cell's width allows (tables), cut if very long."""
    text = dumped(value, separators=(", ", ": "))
    if len(text) <= CELL_CHARACTERS:
        return text
    return f"{text[:CELL_CHARACTERS]}… ({len(text) - CELL_CHARACTERS} more characters)"


def expected_value(expected: Any) -> Any:
    """What a golden task expects the decision to be; any other `expected` block as it is."""
    if isinstance(expected, dict) and expected.get("kind") == "golden":
        match = expected.get("match")
        if isinstance(match, dict) and "value" in match:
            return match["value"]
    return expected


def when(at: datetime | str | None) -> str:
    """A time as people read it, in UTC to the second."""
    if at is None:
        return "—"
    if isinstance(at, str):
        at = datetime.fromisoformat(at.replace("Z", "+00:00"))
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")


def millis(value: int | float | None) -> str:
    if value is None:
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def short_id(run_id: str) -> str:
    """A run id short enough for a table cell: the tenant and the first 12 characters."""
    tenant, _, opaque = run_id.partition("/")
    return f"{tenant}/{opaque[:12]}…" if len(opaque) > 12 else run_id


def run_path(run_id: str) -> str:
    """The dashboard page of a run: its id as one path segment (the wire's projection)."""
    return f"/ui/runs/{ids.project(run_id)}"


def eval_path(run_id: str) -> str:
    return f"/ui/evals/{ids.project(run_id)}"


def task_path(run_id: str, task_id: str) -> str:
    return f"{eval_path(run_id)}/tasks/{quote(task_id, safe='')}"


def segment(run_id: str) -> str:
    return ids.project(run_id)


_ENVIRONMENT.filters.update(
    json_text=json_text,
    json_line=json_line,
    expected_value=expected_value,
    when=when,
    millis=millis,
    score=score,
    signed=signed,
    run_path=run_path,
    short_id=short_id,
    eval_path=eval_path,
    segment=segment,
    criterion_rows=criterion_rows,
    judge_headline=judge_headline,
)
_ENVIRONMENT.globals.update(task_path=task_path)


@dataclass(frozen=True)
class Chrome:
    """What every page shows around its content: who is signed in, and where they are."""

    session: Session | None
    section: str
    """The navigation entry to mark current: runs, compare, suites, or none."""
    title: str


class Page(HTMLResponse):
    """A page's HTML as UTF-8; a lone surrogate in it (an agent may decide `"\\ud800"`, and a
    grader's reason quotes the decision) is no UTF-8's to hold, and is shown as its JSON
    escape, `\\ud800`, where Starlette's encoding raised and the page answered 500."""

    def render(self, content: Any) -> bytes | memoryview:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return str(content).encode("utf-8", "backslashreplace")


def render(template: str, chrome: Chrome, view: object = None, *, status: int = 200) -> Page:
    """The page `template` for `view` (a typed view object the template reads)."""
    html = _ENVIRONMENT.get_template(template).render(chrome=chrome, view=view)
    return Page(html, status_code=status)


@dataclass(frozen=True)
class Refusal:
    """An error page: the status and code the wire would answer, its message, and what to do
    next (`_route.Advice`)."""

    status: int
    code: str
    message: str
    advice: str
