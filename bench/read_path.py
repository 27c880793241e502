"""Read-path throughput: `GET /runs/{id}`, a poll page and a run list, beside a bare endpoint.

A real `wopeval serve` (one uvicorn process, the store at `--database-url`, SQLite
in a fresh data dir by default) holds one completed eval run. Each read is loaded
for `--seconds` by the same load generator with `--connections` open connections:

- `get-run`: `GET /runs/{id}` (the key checked, the run read, its snapshot built);
- `poll`: `GET /runs/{id}/events/poll?afterSequence=S` (a page of stored events);
- `list`: `GET /runs?limit=50`.

The **anchor**, measured in the same run under the same uvicorn settings (its
access log included) and the same load generator: a bare FastAPI app answering
each path with the very JSON document the host answered (fetched from it
first), so both sides send the same bytes. The figure is host req/s ÷ bare req/s.

The load generator is `wrk` when it is on PATH (Debian's `wrk`), else a Python
one (asyncio + raw sockets, keep-alive) in the bench's own process, far slower than
wrk and so understates the bare endpoint: the ratio is only comparable between runs
with the same generator, which the output names.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from queue_throughput import (  # noqa: E402  (the benches' shared helpers)
    Processes,
    free_port,
    fresh_database,
    wait_ready,
)
from reporting import finish  # noqa: E402

KEY = "bench_" + "r" * 24
TENANT = "bench"
AGENT = "conformance.scripted-agent"
TASKS = 20
TARGET_RATIO = 0.5


@dataclass
class Figure:
    read: str
    path: str
    host_rps: float
    bare_rps: float
    ratio: float
    body_bytes: int


@dataclass
class Report:
    store: str
    generator: str
    connections: int
    seconds: float
    cpu_count: int | None
    load_average: list[float] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


def _suite() -> dict[str, Any]:
    tasks = [
        {
            "taskId": f"t{index:03d}",
            "input": {
                "calls": [{"tool": "bench:lookup", "args": {"i": index}}],
                "answer": f"a{index}",
            },
            "expected": {"kind": "golden", "match": {"strategy": "exact", "value": f"a{index}"}},
            "fixtures": {
                "toolResponses": [
                    {"tool": "bench:lookup", "args": {"i": index}, "response": {"v": index}}
                ],
                "onMiss": "fail",
            },
        }
        for index in range(TASKS)
    ]
    return {
        "suiteId": "bench.evals.read",
        "version": "1.0.0",
        "modes": ["golden"],
        "targetAgentId": AGENT,
        "tasks": tasks,
    }


def _recorded_run(http: httpx.Client) -> str:
    """An eval run of the seeded scripted agent, completed (its log is what is read)."""
    assert http.put("/host/wopeval/suites", json=_suite()).status_code == 201
    created = http.post(
        "/runs",
        json={"mode": "eval", "evalSuiteRef": "bench.evals.read@1.0.0", "agentId": AGENT},
    )
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    path = "/runs/" + run_id.replace("/", "~2F")
    deadline = time.monotonic() + 60
    while (status := http.get(path).json()["status"]) != "completed":
        if status != "running" or time.monotonic() > deadline:
            raise SystemExit(f"the recorded run ended {status} or never ended")
        time.sleep(0.05)
    return run_id


# ── the anchor: a bare FastAPI endpoint ──────────────────────────────


def serve_bare(port: int, bodies_file: Path) -> None:
    """A FastAPI app answering each bench path (its query ignored) with its stored JSON body."""
    import uvicorn
    from fastapi import FastAPI
    from fastapi.responses import Response

    from wopeval.hosting.loopback import HTTP_PROTOCOL

    bodies: dict[str, str] = json.loads(bodies_file.read_text())
    app = FastAPI()

    @app.get("/{path:path}")
    async def answer(path: str) -> Response:
        return Response(bodies["/" + path], media_type="application/json")

    # The same uvicorn settings as `wopeval serve` (cli/serve.py): its access log included.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info", http=HTTP_PROTOCOL)


# ── load generators ──────────────────────────────────────────────────


def _wrk(url: str, connections: int, seconds: float) -> float:
    script = f'wrk.headers["Authorization"] = "Bearer {KEY}"\n'
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(script)
    try:
        done = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "-s", lua.name, url],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        os.unlink(lua.name)
    if "Non-2xx" in done.stdout:
        raise SystemExit(f"the load got error answers: {done.stdout}")
    found = re.search(r"Requests/sec:\s+([0-9.]+)", done.stdout)
    if found is None:
        raise RuntimeError(done.stdout)
    return float(found.group(1))


def _python_load(url: str, connections: int, seconds: float) -> float:
    return asyncio.run(_python_generator(url, connections, seconds))


async def _python_connection(host: str, port: int, request: bytes, until: float) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    answered = 0
    try:
        while time.perf_counter() < until:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head.split(b" ", 2)[1]
            if status != b"200":
                raise SystemExit(f"the load got {status.decode()}")
            length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
            assert length is not None
            await reader.readexactly(int(length.group(1)))
            answered += 1
    finally:
        writer.close()
    return answered


async def _python_generator(url: str, connections: int, seconds: float) -> float:
    parsed = httpx.URL(url)
    target = parsed.raw_path.decode()
    request = (
        f"GET {target} HTTP/1.1\r\nHost: {parsed.host}:{parsed.port}\r\n"
        f"Authorization: Bearer {KEY}\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    until = started + seconds
    counts = await asyncio.gather(
        *(_python_connection(parsed.host, parsed.port or 80, request, until)
          for _ in range(connections))
    )  # fmt: skip
    return sum(counts) / (time.perf_counter() - started)


# ── the bench ────────────────────────────────────────────────────────


@contextlib.contextmanager
def _store(url: str) -> Iterator[str | None]:
    if url == "sqlite":
        yield None
        return
    with fresh_database(url) as database:
        yield database


def measure(options: argparse.Namespace) -> Report:
    generator = "wrk" if shutil.which("wrk") and not options.python_load else "python"
    load = _wrk if generator == "wrk" else _python_load
    report = Report(
        options.database_url,
        generator,
        options.connections,
        options.seconds,
        os.cpu_count(),
        [os.getloadavg()[0]],
    )
    with _store(options.database_url) as database, tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        processes = Processes(directory)
        host_port, bare_port = free_port(), free_port()
        serve = ["serve", "--port", str(host_port), "--data-dir", str(directory / "host"),
                 "--api-key", f"{TENANT}={KEY}"]  # fmt: skip
        if database is not None:
            serve += ["--database-url", database]
        try:
            processes.start("host", serve)
            host = f"http://127.0.0.1:{host_port}"
            wait_ready(host + "/host/wopeval/health")
            headers = {"Authorization": f"Bearer {KEY}", "OpenWOP-Version": "2.0"}
            with httpx.Client(base_url=host, headers=headers, trust_env=False) as http:
                run_id = _recorded_run(http)
                segment = run_id.replace("/", "~2F")
                last = http.get(f"/runs/{segment}").json()
                middle = max(0, int(last.get("lastSequence", 40)) // 2)
                reads = {
                    "get-run": f"/runs/{segment}",
                    "poll": f"/runs/{segment}/events/poll?afterSequence={middle}",
                    "list": "/runs?limit=50",
                }
                bodies = {}
                for path in reads.values():
                    answer = http.get(path)
                    assert answer.status_code == 200, answer.text
                    bodies[path.split("?")[0]] = answer.text
            bodies_file = directory / "bodies.json"
            bodies_file.write_text(json.dumps(bodies))
            bare = subprocess.Popen(
                [sys.executable, __file__, "--serve-bare", str(bare_port), str(bodies_file)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            processes.started.append(bare)
            bare_url = f"http://127.0.0.1:{bare_port}"
            wait_ready(bare_url + reads["list"])
            for name, path in reads.items():
                host_rps = load(host + path, options.connections, options.seconds)
                bare_rps = load(bare_url + path, options.connections, options.seconds)
                figure = Figure(
                    name,
                    path.split("?")[0].replace(segment, "{id}"),
                    round(host_rps, 1),
                    round(bare_rps, 1),
                    round(host_rps / bare_rps, 3),
                    len(bodies[path.split("?")[0]]),
                )
                report.figures.append(figure)
                print(
                    f"{name:8} host {figure.host_rps:8.1f} req/s  bare {figure.bare_rps:8.1f}"
                    f" req/s  ratio {figure.ratio:.2f} (target >= {TARGET_RATIO})"
                    f"  [{generator}, -c{options.connections}, {figure.body_bytes} B]",
                    flush=True,
                )
        finally:
            processes.stop()
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", default="sqlite", help="sqlite, or a PostgreSQL URL")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0, help="per figure")
    parser.add_argument("--python-load", action="store_true", help="use the Python generator")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--serve-bare", nargs=2, metavar=("PORT", "BODIES"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve_bare:
        serve_bare(int(options.serve_bare[0]), Path(options.serve_bare[1]))
        return
    finish(measure(options), options.json)


if __name__ == "__main__":
    main()
