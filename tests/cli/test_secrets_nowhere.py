"""Credentials and tokens reach no error, event, record, answer, log line or page.

A real `wopeval serve` per backend, its stdout and stderr (uvicorn's access log
among them) kept in a file. Its project has an http tool with a credential whose
server echoes the request's headers in its answer, failing and succeeding, and
a stdio MCP server started with its own credential that answers with it, fails
with it and fails with its whole environment. A python agent calls them all; a
held invocation's token is used on its endpoints and pasted into malformed
URLs. Then every surface is searched for the three secrets: the events, the
run's API answers, every stored row, the dashboard's pages, the host's output.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import MetaData, create_engine, select

from _backends import Backend
from _processes import ServeOptions, ServeProcess
from _projects import write_agent_workflow
from wopeval.wire import ids

HERE = Path(__file__).parent
LEAKY_SERVER = HERE.parent / "e2e" / "mcp" / "_leaky_server.py"
MODULE = "secrets_project"
DEADLINE_SECONDS = 60.0
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')

PROJECT_CODE = '''\
"""An agent that calls every tool its input names, and one that holds its invocation open."""

import asyncio
import json
import os
from pathlib import Path

from wopeval.agents import ToolCallError


async def calling_agent(context):
    seen = []
    for call in context.input["calls"]:
        try:
            seen.append({"ok": await context.call_tool(call["tool"], call.get("args", {}))})
        except ToolCallError as failure:
            seen.append({"error": failure.error})
    return seen


async def holding_agent(context):
    urls = Path(context.input["urls"])
    written = urls.with_suffix(".tmp")
    written.write_text(json.dumps({"mcp": context.mcp_url, "openai": context.openai_base_url}))
    os.replace(written, urls)
    gate = Path(context.input["gate"])
    while not gate.exists():
        await asyncio.sleep(0.02)
    return "released"
'''


class EchoApi:
    """An HTTP API that answers each request with the headers it received: `/fail` with a
    500, `/ok` with a 200."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.dumps({"youSent": dict(self.headers.items())}).encode()
                self.send_response(500 if self.path == "/fail" else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> EchoApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _project(directory: Path, api: EchoApi, http_secret: str, mcp_secret: str) -> None:
    python = json.dumps(sys.executable)
    (directory / f"{MODULE}.py").write_text(PROJECT_CODE)
    (directory / "workflows").mkdir()
    credential = (
        f'{{ header = "Authorization", template = "Bearer {{secret}}", value = "{http_secret}" }}'
    )
    toml = f"""workflows = ["workflows/*.json"]

[[tools]]
name = "leak:http-fails"
kind = "http"
url = "{api.url}/fail"
credential = {credential}

[[tools]]
name = "leak:http-echo"
kind = "http"
url = "{api.url}/ok"
credential = {credential}

[[mcp_servers]]
name = "leaky"
command = [{python}, {json.dumps(str(LEAKY_SERVER))}]
credential = {{ value = "{mcp_secret}", server_env = "LEAKY_TOKEN" }}

[[agents]]
id = "leak.python"
lane = "python"
callable = "{MODULE}:calling_agent"

[[agents]]
id = "leak.holder"
lane = "python"
callable = "{MODULE}:holding_agent"
tools = ["leaky:*"]
"""
    for agent_id in ("leak.python", "leak.holder"):
        write_agent_workflow(directory, agent_id)
    (directory / "wopeval.toml").write_text(toml)


@dataclass(frozen=True)
class LeakyHost:
    serve: ServeProcess
    database_url: str
    api_key: str
    secrets: dict[str, str]

    def http(self) -> httpx.Client:
        return self.serve.http(self.api_key)


@pytest.fixture(scope="module")
def leaky_host(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LeakyHost]:
    project = tmp_path_factory.mktemp(f"secrets-project-{backend.name}")
    data_dir = tmp_path_factory.mktemp(f"secrets-host-{backend.name}")
    found = {
        "http credential": "hc-" + secrets.token_hex(16),
        "mcp credential": "mc-" + secrets.token_hex(16),
    }
    key = "sec_" + secrets.token_urlsafe(24)
    with EchoApi() as api:
        _project(project, api, found["http credential"], found["mcp credential"])
        options = ServeOptions(data_dir, backend.new_database(), (f"sec={key}",), project)
        serve = ServeProcess(options, data_dir / "serve.log")
        try:
            serve.wait_up()
            yield LeakyHost(serve, options.resolved_database_url(), key, found)
        finally:
            serve.stop()


def _finish(http: httpx.Client, workflow: str, inputs: dict[str, Any]) -> str:
    created = http.post("/runs", json={"workflowId": workflow, "inputs": inputs})
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    _wait_terminal(http, run_id)
    return run_id


def _wait_terminal(http: httpx.Client, run_id: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while http.get(f"/runs/{ids.project(run_id)}").json()["status"] in ("pending", "running"):
        assert time.monotonic() < deadline, f"run {run_id} never ended"
        time.sleep(0.05)


def _events(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    answer = http.get(f"/runs/{ids.project(run_id)}/events/poll", params={"afterSequence": -1})
    events: list[dict[str, Any]] = answer.json()["events"]
    return events


def _answers(http: httpx.Client, run_id: str) -> str:
    """Every API answer about the run, as text."""
    segment = ids.project(run_id)
    paths = [
        f"/runs/{segment}",
        f"/runs/{segment}/events/poll?afterSequence=-1",
        f"/runs/{segment}/events?streamMode=debug",
        f"/runs/{segment}/invocations",
        "/runs?limit=200",
    ]
    texts = [http.get(path).text for path in paths]
    invocations = http.get(f"/runs/{segment}/invocations").json()
    for invocation in invocations.get("invocations", []):
        stderr = f"/runs/{segment}/invocations/{invocation['invocationId']}/stderr"
        texts.append(http.get(stderr).text)
    return "\n".join(texts)


def _pages(host: LeakyHost, run_id: str) -> str:
    """The dashboard's pages of the run, as a signed-in browser gets them."""
    with httpx.Client(base_url=host.serve.url, trust_env=False, timeout=60.0) as browser:
        signed = browser.post("/ui/sign-in", data={"key": host.api_key})
        assert signed.status_code == 303, signed.text
        run_page = browser.get(f"/ui/runs/{ids.project(run_id)}")
        assert run_page.status_code == 200, run_page.text
        linked = set(re.findall(r'href="(/ui/runs/[^"#?]+)"', run_page.text))
        pages = [run_page.text, browser.get("/ui/runs").text]
        pages += [browser.get(href).text for href in sorted(linked)]
    return "\n".join(pages)


def _whole_store(database_url: str) -> str:
    engine = create_engine(database_url)
    try:
        metadata = MetaData()
        metadata.reflect(engine)
        with engine.connect() as connection:
            rows = {
                name: [dict(row) for row in connection.execute(select(table)).mappings()]
                for name, table in metadata.tables.items()
            }
    finally:
        engine.dispose()
    return json.dumps(rows, default=str)


def _leaks(text: str, values: dict[str, str]) -> list[str]:
    return [name for name, value in values.items() if value in text]


def test_echoing_tools_and_servers_leak_no_credential_anywhere(leaky_host: LeakyHost) -> None:
    calls = [
        {"tool": "leak:http-fails"},
        {"tool": "leak:http-echo"},
        {"tool": "leaky:whoami"},
        {"tool": "leaky:leak", "args": {"reason": "no"}},
        {"tool": "leaky:dump"},
    ]
    with leaky_host.http() as http:
        run_id = _finish(http, "leak-python", {"calls": calls})
        events = _events(http, run_id)
        answers = _answers(http, run_id)
    seen = next(e["payload"]["decision"] for e in events if e["type"] == "agent.decided")
    # The tools did answer with their credentials: what the agent got has them cut out.
    failed = seen[0]["error"]
    assert failed["code"] == "http_500"
    assert "[redacted]" in failed["details"]["body"]
    assert "[redacted]" in seen[1]["ok"]["youSent"]["Authorization"]
    assert seen[2]["ok"]["content"] == [{"type": "text", "text": "I am [redacted]"}]
    assert [entry["error"]["code"] for entry in seen[3:]] == ["mcp_tool_error"] * 2
    assert "refused with key [redacted]" in seen[3]["error"]["message"]

    everywhere = {
        "events": json.dumps(events),
        "API answers": answers,
        "store": _whole_store(leaky_host.database_url),
        "dashboard": _pages(leaky_host, run_id),
        "host output": leaky_host.serve.output(),
    }
    found = {where: _leaks(text, leaky_host.secrets) for where, text in everywhere.items()}
    assert [where for where, leaked in found.items() if leaked] == [], found


def test_an_invocation_token_reaches_no_log_line_even_in_a_malformed_url(
    leaky_host: LeakyHost, tmp_path: Path
) -> None:
    urls, gate = tmp_path / "urls.json", tmp_path / "gate"
    with leaky_host.http() as http:
        created = http.post(
            "/runs",
            json={"workflowId": "leak-holder", "inputs": {"urls": str(urls), "gate": str(gate)}},
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not urls.exists():
            snapshot = http.get(f"/runs/{ids.project(run_id)}").json()
            assert snapshot["status"] in ("pending", "running"), snapshot.get("error")
            assert time.monotonic() < deadline, "the holding agent never started"
            time.sleep(0.05)
        held = json.loads(urls.read_text())
        token = held["mcp"].rsplit("/", 1)[-1]
        base = leaky_host.serve.url
        mcp_call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "leaky__leak", "arguments": {"reason": token}},
        }
        with httpx.Client(trust_env=False, timeout=30.0) as agent:
            answered = agent.post(
                held["mcp"],
                json=mcp_call,
                headers={"Accept": "application/json, text/event-stream"},
            )
            assert answered.status_code == 200, answered.text
            malformed = [
                f"{base}/host/wopeval/openai//{token}/v1/chat/completions",
                f"{base}/host//wopeval/mcp/{token}",
                f"{base}/HOST/wopeval/mcp/{token}",
                f"{base}/host/wopeval/openai/{token}/chat/completions",
                f"{base}/{token}",
                f"{base}/v1/chat/completions?api_key={token}",
            ]
            statuses = {agent.post(url, content=b"{}").status_code for url in malformed}
        gate.touch()
        _wait_terminal(http, run_id)
        answers = _answers(http, run_id)
    assert statuses <= {404, 405}
    # The agent passed its own token as an argument: the server, the record and the
    # answer all have it cut out.
    assert token not in answered.text
    assert "[redacted]" in answered.text
    output = leaky_host.serve.output()
    assert "/host/wopeval/mcp/…" in output, "the access log is on"
    everywhere = {
        "host output": output,
        "API answers": answers,
        "store": _whole_store(leaky_host.database_url),
        "dashboard": _pages(leaky_host, run_id),
    }
    assert [where for where, text in everywhere.items() if token in text] == []
