"""What the model-proxy and MCP-endpoint benches share: a real `wopeval serve`, and
http-lane agents held open so their invocations' endpoints stay live while measured.

A production agent outside the host (the command and http lanes) reaches its model
through the invocation's recording proxy and its tools through the invocation's MCP
endpoint, both named by a capability token valid while the invocation runs. The
benches play that agent from their own process: the project's agent is an http-lane
agent whose URL is this process (`HeldAgents`); each `POST /runs` makes the host
invoke it, the invocation's endpoints and tokens arrive in the POST, and the POST is
answered only when the bench releases it. Meanwhile the bench's clients use those
endpoints, and the same servers directly, as the agent would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from starlette.types import Receive, Scope, Send

from queue_throughput import Processes, free_port, fresh_database, wait_ready
from wopeval.hosting.loopback import loopback_socket, quiet_server

TENANT = "bench"
KEY = "bench_" + "h" * 24
AGENT = "bench.held-agent"
WORKFLOW = "bench-held"
HEADERS = {"Authorization": f"Bearer {KEY}", "OpenWOP-Version": "2.0"}
HELD_SECONDS = 3600.0
"""The agent's timeout in the host: longer than any measurement."""


@dataclass(frozen=True)
class Invocation:
    """What the host handed one held agent: its endpoints and the token they take."""

    invocation_id: str
    mcp_url: str
    openai_base_url: str
    openai_api_key: str
    anthropic_base_url: str
    anthropic_api_key: str


class HeldAgents:
    """The http-lane agent: each invocation POST is noted and answered once released."""

    def __init__(self) -> None:
        self.arrived: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.release = asyncio.Event()
        self._socket = loopback_socket()
        self._server = quiet_server(self)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/invoke"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await self.arrived.put(json.loads(body))
        await self.release.wait()
        answer = json.dumps({"decision": "held"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": answer})

    @contextlib.asynccontextmanager
    async def serving(self) -> Any:
        serving = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started:
            if serving.done():
                serving.result()
            await asyncio.sleep(0.01)
        try:
            yield self
        finally:
            self.release.set()
            self._server.should_exit = True
            await serving
            self._socket.close()


@dataclass
class Host:
    """A running `wopeval serve` with the held agent's project, and its process ids."""

    url: str
    pid: int
    data_dir: Path
    database_url: str | None
    run_ids: list[str] = field(default_factory=list)


def write_project(directory: Path, agent_url: str, agent_fields: str, extra: str = "") -> Path:
    """The project: the held agent (plus `agent_fields`), its workflow, and `extra` tables."""
    project = directory / "project"
    (project / "workflows").mkdir(parents=True)
    (project / "wopeval.toml").write_text(
        f'workflows = ["workflows/*.json"]\n\n{extra}\n'
        f'[[agents]]\nid = "{AGENT}"\nlane = "http"\nurl = "{agent_url}"\n'
        f"timeout_seconds = {HELD_SECONDS}\n{agent_fields}\n"
    )
    workflow = {"id": WORKFLOW, "nodes": [{"id": "held", "type": "core.agent", "agentId": AGENT}]}
    (project / "workflows" / f"{WORKFLOW}.json").write_text(json.dumps(workflow))
    return project


@contextlib.contextmanager
def serving_host(
    directory: Path, project: Path, database_url: str, env: dict[str, str] | None = None
) -> Iterator[tuple[Host, Processes]]:
    """`wopeval serve` on the project (SQLite in `directory`, or a fresh PostgreSQL database)."""
    with contextlib.ExitStack() as stack:
        database = None
        if database_url != "sqlite":
            database = stack.enter_context(fresh_database(database_url))
        processes = Processes(directory)
        stack.callback(processes.stop)
        port = free_port()
        data_dir = directory / "host"
        serve = ["serve", "--port", str(port), "--data-dir", str(data_dir),
                 "--api-key", f"{TENANT}={KEY}", "--project", str(project)]  # fmt: skip
        if database is not None:
            serve += ["--database-url", database]
        processes.start("host", serve, env)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_ready(url + "/host/wopeval/health")
        except RuntimeError:
            raise SystemExit((directory / "host.log").read_text()) from None
        yield Host(url, processes.started[0].pid, data_dir, database), processes


async def hold(host: Host, agents: HeldAgents, count: int) -> list[Invocation]:
    """Start `count` workflow runs; once each one's agent is invoked, its endpoints."""
    async with httpx.AsyncClient(base_url=host.url, headers=HEADERS, trust_env=False) as http:
        for _ in range(count):
            created = await http.post("/runs", json={"workflowId": WORKFLOW, "inputs": {}})
            if created.status_code != 201:
                raise SystemExit(f"POST /runs: {created.status_code} {created.text}")
            host.run_ids.append(created.json()["runId"])
    held = []
    for _ in range(count):
        posted = await asyncio.wait_for(agents.arrived.get(), 60)
        held.append(posted)
    return [
        Invocation(
            invocation_id=posted["invocationId"],
            mcp_url=posted["mcpUrl"],
            openai_base_url=posted["openaiBaseUrl"],
            openai_api_key=posted["openaiApiKey"],
            anthropic_base_url=posted["anthropicBaseUrl"],
            anthropic_api_key=posted["anthropicApiKey"],
        )
        for posted in held
    ]


async def release(host: Host, agents: HeldAgents) -> None:
    """Let every held agent answer, and wait for each of the host's runs to complete."""
    agents.release.set()
    async with httpx.AsyncClient(base_url=host.url, headers=HEADERS, trust_env=False) as http:
        deadline = time.monotonic() + 120
        for run_id in host.run_ids:
            path = "/runs/" + run_id.replace("/", "~2F")
            while (run := (await http.get(path)).json())["status"] in ("running", "pending"):
                if time.monotonic() > deadline:
                    raise SystemExit(f"run {run_id} never ended")
                await asyncio.sleep(0.05)
            if run["status"] != "completed":
                raise SystemExit(f"run {run_id} ended {run['status']}: {run.get('error')}")


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds so far."""
    used = psutil.Process(pid).cpu_times()
    return float(used.user + used.system)


def python_child(arguments: list[str], log: Path, env: dict[str, str] | None = None) -> Any:
    """A Python child process of the benches' interpreter, logging to `log`."""
    import subprocess

    handle = log.open("wb")
    return subprocess.Popen(
        [sys.executable, *arguments],
        stdout=handle,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )


def serve_quietly(app: Any, port: int) -> None:
    """An ASGI app on a loopback port in the foreground, as the benches' servers run."""
    server = quiet_server(app)
    server.run(sockets=[loopback_socket(port)])
