"""Reports of an eval run: pure functions from a summary (and why its tasks failed) to text."""

from wopeval.reports._age import age_text, parse_instant
from wopeval.reports._why import (
    SERVED_LABELS,
    ChangeRow,
    RunWhy,
    TraceRow,
    actual_text,
    change_rows,
    cut,
    decisions_text,
    detail_text,
    expected_text,
    explained_task_ids,
    json_text,
    marks,
    miss_headline,
    more_trials_text,
    needs_explaining,
    paired,
    tools_changed_text,
    trace_rows,
)
from wopeval.reports.html import BaselineFacts, RunFacts, html_report
from wopeval.reports.junit import cost_text, junit_xml
from wopeval.reports.markdown import markdown_report

__all__ = [
    "SERVED_LABELS",
    "BaselineFacts",
    "ChangeRow",
    "RunFacts",
    "RunWhy",
    "TraceRow",
    "actual_text",
    "age_text",
    "change_rows",
    "cost_text",
    "cut",
    "decisions_text",
    "detail_text",
    "expected_text",
    "explained_task_ids",
    "html_report",
    "json_text",
    "junit_xml",
    "markdown_report",
    "marks",
    "miss_headline",
    "more_trials_text",
    "needs_explaining",
    "paired",
    "parse_instant",
    "tools_changed_text",
    "trace_rows",
]
