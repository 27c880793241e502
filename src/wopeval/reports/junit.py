"""JUnit XML of an eval run: summary in, XML string out (pure, no I/O).

The shape is the common Jenkins / Surefire one (`testsuites > testsuite >
testcase`): one `testsuite` per run, one `testcase` per task the run scored,
`classname` = the suiteId. A task that failed, or that regressed against the
baseline, carries a `<failure>`; a task whose only news is an inconclusive
difference is `<skipped>` (a CI server shows it without failing the build), its
message saying how many more trials would decide it when the host's task routes
said so.
`errors` is always 0: an eval that hit an infrastructure error produces no
summary, hence no report (exit code 4). A testcase's `time` is its trials'
wall time; a run whose model calls were priced adds `totalCostUsd` to the
properties.

With the host's task details (`RunWhy`), a failure's `message` is the host's
reason line (a regression's adds the score movement), its body the expected /
actual diff and the tool trace, and the testcase's `<system-out>` the decision and,
for a task whose MCP tools changed since its recording, which (docs/agents.md).
Without them (a host that serves no task routes) the message names the score
and the verdict only. A task's cost and mean latency, where priced, join its
`<system-out>`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass

from wopeval.reports._why import (
    RunWhy,
    decisions_text,
    detail_text,
    more_trials_text,
    tools_changed_text,
)
from wopeval.wire.summary import EvalSummary, TaskRegression, TaskSummary, Verdict
from wopeval.wire.task_detail import TaskDetail, TaskLine

TESTSUITES_NAME = "wopeval"


def junit_xml(
    summary: EvalSummary,
    *,
    run_id: str | None = None,
    timestamp: str | None = None,
    why: RunWhy | None = None,
    revision: str | None = None,
) -> str:
    """The report as a UTF-8 XML document string (with declaration); `revision` is the
    judged code's (a `revision` property)."""
    paired: Mapping[str, TaskRegression] = {}
    if summary.regression is not None:
        paired = {t.taskId: t for t in summary.regression.tasks or []}
    cases = [
        _testcase(summary.suiteId, task, paired.get(task.taskId), _Why.of(why, task.taskId))
        for task in summary.tasks
    ]
    failures = sum(1 for case in cases if case.find("failure") is not None)
    skipped = sum(1 for case in cases if case.find("skipped") is not None)
    total_time = sum(float(case.get("time", "0")) for case in cases)

    root = ET.Element(
        "testsuites",
        {
            "name": TESTSUITES_NAME,
            "tests": str(len(cases)),
            "failures": str(failures),
            "errors": "0",
            "time": _seconds(total_time),
        },
    )
    suite_attrs = {
        "name": f"{summary.suiteId}@{summary.suiteVersion}",
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": "0",
        "skipped": str(skipped),
        "time": _seconds(total_time),
    }
    if run_id:
        suite_attrs["id"] = run_id
    if timestamp:
        suite_attrs["timestamp"] = timestamp
    suite = ET.SubElement(root, "testsuite", suite_attrs)
    properties = ET.SubElement(suite, "properties")
    for name, value in _properties(summary, run_id, revision).items():
        ET.SubElement(properties, "property", {"name": name, "value": value})
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _properties(summary: EvalSummary, run_id: str | None, revision: str | None) -> dict[str, str]:
    props = {
        "suiteId": summary.suiteId,
        "suiteVersion": summary.suiteVersion,
        "aggregateScore": f"{summary.aggregateScore:.4f}",
        "passed": str(summary.passed).lower(),
        "fixtureMissCount": str(summary.fixtureMissCount),
    }
    if summary.totalCostUsd is not None:
        props["totalCostUsd"] = cost_text(summary.totalCostUsd)
    notes = summary.advisory_notes()
    if notes:
        props["advisory"] = "; ".join(notes)
    if run_id:
        props["runId"] = run_id
    if revision:
        props["revision"] = revision
    regression = summary.regression
    if regression is not None:
        props["baselineRunId"] = regression.baselineRunId
        props["scoreDelta"] = f"{regression.scoreDelta:+.4f}"
        if regression.verdict is not None:
            props["verdict"] = regression.verdict.value
        if regression.baselineOnlyTaskIds:
            props["baselineOnlyTaskIds"] = ",".join(regression.baselineOnlyTaskIds)
    return props


@dataclass(frozen=True)
class _Why:
    """What the task routes said about one task, if anything."""

    line: TaskLine | None
    detail: TaskDetail | None

    @classmethod
    def of(cls, why: RunWhy | None, task_id: str) -> _Why:
        if why is None:
            return cls(None, None)
        return cls(why.line(task_id), why.details.get(task_id))

    @property
    def reason(self) -> str | None:
        return self.line.reason if self.line is not None else None


def _testcase(
    suite_id: str, task: TaskSummary, pair: TaskRegression | None, why: _Why
) -> ET.Element:
    trials = task.trials or 1
    seconds = (task.latencyMs or 0) * trials / 1000
    case = ET.Element(
        "testcase", {"name": task.taskId, "classname": suite_id, "time": _seconds(seconds)}
    )
    body = _body(task, pair, why)
    reason = why.reason
    if task.advisory is not None:
        # docs/graders.md, "Calibration": shown, never counted — so never a <failure>.
        outcome = "passed" if task.passed else f"failed: score {task.score:.2f}"
        message = f"{task.advisory.text()}; {outcome}"
        _child(case, "skipped", {"message": message}, body)
    elif pair is not None and pair.verdict is Verdict.REGRESSED:
        message = f"regressed: {_movement(pair)}"
        if reason is not None:
            message = f"regressed: {reason} ({_movement(pair)})"
        _child(case, "failure", {"type": "regressed", "message": message}, body)
    elif not task.passed:
        verdict = f" (verdict {pair.verdict.value}, {_movement(pair)})" if pair else ""
        message = reason if reason is not None else f"failed: score {task.score:.2f}{verdict}"
        _child(case, "failure", {"type": "failed", "message": message}, body)
    elif pair is not None and pair.verdict is Verdict.INCONCLUSIVE:
        message = f"inconclusive: {_movement(pair)}"
        more = more_trials_text(why.line)
        if more is not None:
            message += f"; {more}"
        _child(case, "skipped", {"message": message}, body)
    out = [] if why.detail is None else [decisions_text(why.detail)]
    changed = None if why.line is None else tools_changed_text(why.line)
    if changed is not None:
        out.append(changed)
    if task.costUsd is not None:
        out += _spend(task)
    if out:
        _child(case, "system-out", {}, "\n".join(out))
    return case


def _child(parent: ET.Element, tag: str, attributes: dict[str, str], text: str) -> None:
    clean = {name: _xml_safe(value) for name, value in attributes.items()}
    ET.SubElement(parent, tag, clean).text = _xml_safe(text)


_NOT_XML = re.compile(r"[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_safe(text: str) -> str:
    """`text` with the characters XML 1.0 cannot hold (most control characters) as `\\uXXXX`:
    agent content may carry them, and one would make the whole file unreadable."""
    return _NOT_XML.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def cost_text(value: float) -> str:
    """USD with enough digits for a model call's fraction of a cent."""
    return f"{value:.6f}"


def _spend(task: TaskSummary) -> list[str]:
    lines = []
    if task.costUsd is not None:
        lines.append(f"cost: ${cost_text(task.costUsd)}")
    if task.latencyMs is not None:
        lines.append(f"latency: {task.latencyMs} ms (mean of its trials)")
    return lines


def _movement(pair: TaskRegression) -> str:
    text = f"score {pair.baselineScore:.2f} -> {pair.score:.2f}, delta {pair.delta:+.2f}"
    if pair.pValue is not None:
        text += f", p={pair.pValue:.3g}"
    return text


def _body(task: TaskSummary, pair: TaskRegression | None, why: _Why) -> str:
    lines = [] if why.reason is None else [f"reason: {why.reason}"]
    lines.append(f"score: {task.score:.2f}")
    if task.trials is not None:
        lines.append(f"trials passed: {task.passedTrials}/{task.trials}")
    if task.fixtureMissCount is not None:
        lines.append(f"fixture misses: {task.fixtureMissCount}")
    lines.extend(_spend(task))
    if pair is not None:
        lines.append(f"verdict: {pair.verdict.value}")
        lines.append(f"baseline score: {pair.baselineScore:.2f}")
        lines.append(f"delta: {pair.delta:+.2f}")
        if pair.pValue is not None:
            lines.append(f"p-value (Holm-adjusted): {pair.pValue:.3g}")
        if pair.flaky:
            lines.append("flaky: a side passed some trials and failed others")
        more = more_trials_text(why.line)
        if more is not None:
            lines.append(f"more trials: {more}")
    if why.detail is not None:
        lines.extend(["", detail_text(why.detail)])
    return "\n".join(lines)


def _seconds(value: float) -> str:
    # SUREFIRE_TIME: digits and a decimal point, no exponent and no thousands separator.
    return f"{value:.3f}"
