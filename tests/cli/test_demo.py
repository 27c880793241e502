"""`wopeval demo` from an empty directory: the README's main-job command, end to end."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from _processes import ServeOptions, ServeProcess

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

    # The key the docs say to sign in to the dashboard with is there, private, before any
    # `serve` or `ui` has run, and a host on the demo's data serves it (and makes no other).
    key_file = tmp_path / ".wopeval-demo" / "dev-api-key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    key = key_file.read_text(encoding="utf-8").strip()
    assert key.startswith("wop_")
    assert key not in out  # said once, on stderr, where a generated key is said
    serve = ServeProcess(ServeOptions(tmp_path / ".wopeval-demo", None), tmp_path / "serve.log")
    try:
        serve.wait_up()
        with httpx.Client(base_url=serve.url, trust_env=False, timeout=30.0) as browser:
            signed_in = browser.post("/ui/sign-in", data={"key": key, "next": "/ui/runs"})
            assert signed_in.status_code == 303, signed_in.text
            assert browser.get("/ui/runs").status_code == 200
            listed = browser.get("/runs", headers={"Authorization": f"Bearer {key}"})
            assert listed.status_code == 200, listed.text
            assert len(listed.json()["runs"]) >= 5  # the demo's recorded runs, as tenant dev
    finally:
        serve.stop()
    assert "generated the API key" not in serve.output()
