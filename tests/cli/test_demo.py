"""`wopeval demo` from an empty directory: the README's main-job command, end to end."""

from __future__ import annotations

import time
from pathlib import Path

from ._support import run_cli

DEMO_DEADLINE_SECONDS = 30.0


def test_demo_records_replays_and_compares(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_cli("demo", cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert result.code == 0, result.stdout + result.stderr
    assert elapsed < DEMO_DEADLINE_SECONDS, f"the demo took {elapsed:.1f} s"
    out = result.stdout

    # The verdict table: one row per customer case, the one regression v2 introduced.
    rows = {
        line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
        for line in out.splitlines()
        if line.startswith("│")
    }
    assert list(rows) == [
        "double-charge", "password-reset", "api-outage", "plan-change", "account-deletion",
    ]  # fmt: skip
    # Baseline, Candidate, Δ, Trials, Misses, Passed, Verdict
    assert rows["plan-change"] == ["1.00", "0.00", "-1.00", "0/1", "0", "no", "regressed"]
    assert rows["api-outage"] == ["1.00", "1.00", "+0.00", "1/1", "0", "yes", "unchanged"]
    assert "Paired verdict   REGRESSED  (1 regressed · 4 unchanged)" in out
    assert "Fixture misses   0" in out
    # Zero live calls during the replays, by the host's record and by the CRM's own count.
    assert (
        "Live tool calls  0 during the replays (CRM requests: 5 in production, 0 in replay)" in out
    )

    report = tmp_path / ".wopeval-demo" / "report.html"
    assert f"HTML report      {report}" in out
    html = report.read_text(encoding="utf-8")
    assert 'id="delta-chart"' in html
    assert html.count("<tr data-task-id=") == 5
    # The CRM credential is injected at egress: it never reaches the record or the report.
    assert "crm_" not in html
