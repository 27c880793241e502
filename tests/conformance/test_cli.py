"""`wopeval conformance` in a subprocess against a `wopeval serve` subprocess."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from wopeval.cli.main import app
from wopeval.conformance.runner import leg_ids

WOPEVAL = str(Path(sys.executable).with_name("wopeval"))
CROSS_TENANT = {
    "openwop.requirement.0252.source-uniform",
    "openwop.requirement.0251.baseline-uniform",
    "openwop.scenario.v2-eval-recorded-fixtures",
    "openwop.scenario.v2-eval-regression-baseline",
}


@dataclass(frozen=True)
class Served:
    base_url: str
    key_a: str
    key_b: str


def _env(**extra: str) -> dict[str, str]:
    """The caller's environment without any host or suite variable, plus `extra`."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("WOPEVAL_", "OPENWOP_"))}
    return {**kept, "COLUMNS": "200", **extra}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    port, key_a, key_b = _free_port(), secrets.token_hex(16), secrets.token_hex(16)
    data_dir = tmp_path_factory.mktemp("served")
    command = [WOPEVAL, "serve", "--port", str(port), "--data-dir", str(data_dir)]
    command += ["--api-key", f"tenant-a={key_a}", "--api-key", f"tenant-b={key_b}"]
    log = (data_dir / "serve.log").open("wb")
    process = subprocess.Popen(command, env=_env(), stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base_url}/.well-known/openwop", trust_env=False).is_success:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((data_dir / "serve.log").read_text())
            time.sleep(0.1)
        yield Served(base_url, key_a, key_b)
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def _conformance(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [WOPEVAL, "conformance", *args],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_leg_passes_and_the_report_is_written(served: Served, tmp_path: Path) -> None:
    report_file = tmp_path / "report.json"
    done = _conformance(
        "--base-url", served.base_url,
        "--api-key", served.key_a,
        "--tenant-b-api-key", served.key_b,
        "--report", str(report_file),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "executed-pass" in done.stdout
    report = json.loads(report_file.read_text())
    assert set(report) == {"host", "suiteVersion", "startedAt", "results"}
    assert report["host"] == served.base_url
    assert [r["id"] for r in report["results"]] == leg_ids()
    assert all(set(r) == {"id", "disposition", "detail"} for r in report["results"])
    assert {r["disposition"] for r in report["results"]} == {"executed-pass"}


def test_without_tenant_b_the_run_is_blocked_and_exits_non_zero(served: Served) -> None:
    # The suite's own variables drive the command too.
    done = _conformance("--json", OPENWOP_BASE_URL=served.base_url, OPENWOP_API_KEY=served.key_a)
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads(done.stdout)["results"]
    blocked = {r["id"] for r in results if r["disposition"] == "blocked"}
    assert blocked == CROSS_TENANT
    assert {r["disposition"] for r in results if r["id"] not in blocked} == {"executed-pass"}


def test_only_must_match_a_leg_and_list_shows_the_selection() -> None:
    # In process: neither needs a host.
    runner = CliRunner()
    refused = runner.invoke(app, ["conformance", "--base-url", "http://h", "--api-key", "k",
                                  "--only", "*nothing*"])  # fmt: skip
    assert refused.exit_code == 4  # the CLI's usage-error code (cli/_exit.py)
    assert "matches no leg id" in refused.output
    listed = runner.invoke(app, ["conformance", "--list", "--only", "*0251*"])
    assert listed.exit_code == 0
    assert listed.output.split() == [i for i in leg_ids() if "0251" in i]
