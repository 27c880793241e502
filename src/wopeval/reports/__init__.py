"""Reports of an eval run: pure functions from a summary (and why its tasks failed) to text."""

import typing

if typing.TYPE_CHECKING:
    from wopeval.reports._age import age_text, parse_instant
    from wopeval.reports._why import (
        SERVED_LABELS,
        ChangeRow,
        CriterionRow,
        RunWhy,
        TraceRow,
        actual_text,
        change_rows,
        criterion_rows,
        cut,
        decisions_text,
        detail_text,
        expected_text,
        explained_task_ids,
        json_text,
        judge_headline,
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
else:
    # Each name's module is imported when the name is first read (wopeval/_lazy.py).
    from wopeval import _lazy

    __getattr__, __dir__ = _lazy.exports(__name__)

__all__ = [
    "SERVED_LABELS",
    "BaselineFacts",
    "ChangeRow",
    "CriterionRow",
    "RunFacts",
    "RunWhy",
    "TraceRow",
    "actual_text",
    "age_text",
    "change_rows",
    "cost_text",
    "criterion_rows",
    "cut",
    "decisions_text",
    "detail_text",
    "expected_text",
    "explained_task_ids",
    "html_report",
    "json_text",
    "judge_headline",
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
