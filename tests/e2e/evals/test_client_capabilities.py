"""RFC 0251 §A and RFC 0252 §A bind the client: `wopeval eval` reads discovery first.

"A client MUST NOT send" `evalModes`/`baselineRunId` to a host without
`baselineSelection`, nor `fixtureRuns` to one without `recordedFixtures`. The
real command runs in a subprocess against a real host with the member switched
off: it exits 4 naming the member, and the host's request log shows that it
read discovery and received nothing else — no run-create, no suite publish.
Where the member is advertised the same command runs.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from wopeval.settings import EvalFeatures

from .._server import TENANT_A, RequestLog, ServerHandle, host_settings, running_host
from ._evals import (
    RECORDED_REPLAY,
    RECORDED_SOURCE,
    REGRESSION_BASE,
    REGRESSION_CANDIDATE,
    SCRIPTED_AGENT,
    run_eval,
)

WOPEVAL = Path(sys.executable).with_name("wopeval")
DISCOVERY = ("GET", "/.well-known/openwop")
COMMAND_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class LoggedHost:
    handle: ServerHandle
    log: RequestLog


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


def _host(
    backend: Backend, factory: pytest.TempPathFactory, name: str, **features: Any
) -> Iterator[LoggedHost]:
    log = RequestLog()
    settings = host_settings(
        backend, factory.mktemp(f"{name}-{backend.name}"), eval=EvalFeatures(**features)
    )
    with running_host(settings, backend, log) as handle:
        yield LoggedHost(handle, log)


@pytest.fixture(scope="module")
def no_baseline(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedHost]:
    yield from _host(backend, tmp_path_factory, "cli-no-baseline", baseline_selection=False)


@pytest.fixture(scope="module")
def no_recorded(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoggedHost]:
    yield from _host(backend, tmp_path_factory, "cli-no-recorded", recorded_fixtures=False)


def wopeval_eval(host: LoggedHost, cwd: Path, *args: str) -> tuple[Result, list[tuple[str, str]]]:
    """`wopeval eval ARGS --url … --api-key …`, and the requests the host received meanwhile."""
    before = len(host.log.seen)
    done = subprocess.run(
        [str(WOPEVAL), "eval", *args, "--url", host.handle.base_url,
         "--api-key", host.handle.keys[TENANT_A]],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS, cwd=cwd, check=False,
    )  # fmt: skip
    return Result(done.returncode, done.stdout, done.stderr), host.log.seen[before:]


def assert_refused_unsent(result: Result, received: list[tuple[str, str]], member: str) -> None:
    assert result.code == 4, result.stdout + result.stderr
    assert f"the host does not advertise {member}" in result.stderr, result.stderr
    assert "no eval run was requested" in result.stderr
    assert received == [DISCOVERY], received


def test_without_baseline_selection_the_cli_sends_neither_property(
    no_baseline: LoggedHost, tmp_path: Path
) -> None:
    host = no_baseline.handle
    with host.http(TENANT_A) as http:
        base = run_eval(host.client(), http, REGRESSION_BASE).run_id
        source = run_eval(host.client(), http, RECORDED_SOURCE).run_id
    member = "agents.evalSuite.baselineSelection"
    for extra in (["--baseline", base], ["--modes", "golden"],
                  ["--modes", "golden,regression", "--baseline", base],
                  ["--baseline", base, "--trials", "2"]):  # fmt: skip
        result, received = wopeval_eval(
            no_baseline, tmp_path, REGRESSION_CANDIDATE, "--agent", SCRIPTED_AGENT, *extra
        )
        assert_refused_unsent(result, received, member)
        assert base not in result.stderr

    # Naming neither, the command sends no evalModes (the host would refuse it) and runs.
    plain, received = wopeval_eval(no_baseline, tmp_path, REGRESSION_CANDIDATE,
                                   "--agent", SCRIPTED_AGENT)  # fmt: skip
    assert plain.code == 0, plain.stdout + plain.stderr
    assert received[0] == DISCOVERY
    assert received.count(("POST", "/runs")) == 1
    # The member this host does advertise is still used.
    replay, received = wopeval_eval(no_baseline, tmp_path, RECORDED_REPLAY, "--agent",
                                    SCRIPTED_AGENT, "--from-run", f"record={source}")  # fmt: skip
    assert replay.code == 0, replay.stdout + replay.stderr
    assert received.count(("POST", "/runs")) == 1


def test_without_recorded_fixtures_the_cli_sends_no_fixture_runs(
    no_recorded: LoggedHost, tmp_path: Path
) -> None:
    host = no_recorded.handle
    with host.http(TENANT_A) as http:
        base = run_eval(host.client(), http, REGRESSION_BASE).run_id
        source = run_eval(host.client(), http, RECORDED_SOURCE).run_id
    member = "agents.evalSuite.recordedFixtures"
    for extra in (["--from-run", f"record={source}"],
                  ["--from-run", f"record={source}", "--trials", "2"]):  # fmt: skip
        result, received = wopeval_eval(
            no_recorded, tmp_path, RECORDED_REPLAY, "--agent", SCRIPTED_AGENT, *extra
        )
        assert_refused_unsent(result, received, member)
        assert source not in result.stderr

    # This host advertises baselineSelection: the baseline and its modes go through.
    compared, received = wopeval_eval(no_recorded, tmp_path, REGRESSION_CANDIDATE, "--agent",
                                      SCRIPTED_AGENT, "--baseline", base)  # fmt: skip
    assert compared.code == 0, compared.stdout + compared.stderr
    assert "UNCHANGED" in compared.stdout
    assert received.count(("POST", "/runs")) == 1
