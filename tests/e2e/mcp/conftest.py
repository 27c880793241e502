"""Fixtures of the MCP tests: a counting MCP server (stdio and HTTP), agents that run outside
the host, and one host per backend whose project wires them together.

The MCP server processes start once per package (the HTTP one here, the stdio
one by each host); tests count the calls it received through its call log.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from _projects import write_agent_workflow

from .._server import ServerHandle, free_port, host_settings, running_host
from ._agent_service import AgentService

HERE = Path(__file__).parent
COUNTING_SERVER = HERE / "_counting_server.py"
AGENTS = HERE / "_agents.py"
MCP_TIMEOUT_SECONDS = 2
START_DEADLINE_SECONDS = 60.0


@dataclass(frozen=True)
class CallLog:
    """The counting server's record of every `tools/call` it received, one JSON line each."""

    path: Path

    def lines(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]

    def count(self) -> int:
        return len(self.lines())


class HttpMcpServer:
    """The counting server over Streamable HTTP, as a subprocess on a fixed loopback port."""

    def __init__(self, log: CallLog) -> None:
        self.port = free_port()
        self._log = log
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(COUNTING_SERVER), "--http", str(self.port)],
            env={"CALL_LOG": str(self._log.path), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, self._process)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Return once `process` accepts connections on loopback `port`."""
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    while True:
        assert process.poll() is None, "the server process exited"
        assert time.monotonic() < deadline, "the server process did not start listening"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)


@pytest.fixture(scope="package")
def call_log(tmp_path_factory: pytest.TempPathFactory) -> CallLog:
    return CallLog(tmp_path_factory.mktemp("mcp-calls") / "calls.log")


@pytest.fixture(scope="package")
def mcp_secret() -> str:
    return "mcp-secret-" + secrets.token_hex(12)


def token_hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@pytest.fixture(scope="package")
def http_mcp_server(call_log: CallLog) -> Iterator[HttpMcpServer]:
    server = HttpMcpServer(call_log)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="package")
def agent_service() -> Iterator[AgentService]:
    service = AgentService()
    service.start()
    try:
        yield service
    finally:
        service.stop()


def write_project(
    directory: Path,
    log: CallLog,
    secret: str,
    http_server: HttpMcpServer | None = None,
    service: AgentService | None = None,
    extra_env: str = "",
) -> None:
    python = json.dumps(sys.executable)
    (directory / "workflows").mkdir(exist_ok=True)
    toml = f"""\
workflows = ["workflows/*.json"]

[[mcp_servers]]
name = "count"
command = [{python}, {json.dumps(str(COUNTING_SERVER))}]
env = {{ CALL_LOG = {json.dumps(str(log.path))} {extra_env} }}
credential = {{ value = "{secret}", server_env = "COUNTING_TOKEN" }}
timeout_seconds = {MCP_TIMEOUT_SECONDS}
"""
    if http_server is not None:
        toml += f"""
[[mcp_servers]]
name = "count-http"
url = "{http_server.url}"
credential = {{ value = "{secret}" }}
timeout_seconds = {MCP_TIMEOUT_SECONDS}
"""
    allowed = '["count:*", "count-http:lookup"]' if http_server is not None else '["count:*"]'
    agents = {
        "lanes.probe": ("command", f'command = [{python}, "{AGENTS}", "probe"]\n'
                        f"tools = {allowed}"),
        "lanes.misbehave": ("command", f'command = [{python}, "{AGENTS}", "misbehave"]'),
        "lanes.impatient": ("command", f'command = [{python}, "{AGENTS}", "misbehave"]\n'
                            "timeout_seconds = 2"),
    }  # fmt: skip
    if service is not None:
        credential = f'{{ value = "{secret}", header = "X-Agent-Key", template = "{{secret}}" }}'
        agents["lanes.service"] = (
            "http",
            f'url = "{service.url}/agent"\ncredential = {credential}',
        )
        agents["lanes.broken-service"] = ("http", f'url = "{service.url}/broken"')
        agents["lanes.hanging-service"] = (
            "http",
            f'url = "{service.url}/hang"\ntimeout_seconds = 1',
        )
    for agent_id, (lane, lines) in agents.items():
        toml += f'\n[[agents]]\nid = "{agent_id}"\nlane = "{lane}"\n{lines}\n'
        write_agent_workflow(directory, agent_id)
    (directory / "wopeval.toml").write_text(toml)


@pytest.fixture(scope="package")
def mcp_host(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    call_log: CallLog,
    mcp_secret: str,
    http_mcp_server: HttpMcpServer,
    agent_service: AgentService,
) -> Iterator[ServerHandle]:
    project = tmp_path_factory.mktemp(f"mcp-project-{backend.name}")
    write_project(project, call_log, mcp_secret, http_mcp_server, agent_service)
    data_dir = tmp_path_factory.mktemp(f"mcp-host-{backend.name}")
    with running_host(host_settings(backend, data_dir, project=project), backend) as handle:
        yield handle
