"""The floor under an embedded host's start: the frameworks alone, no wopeval code.

FastAPI, SQLAlchemy (with its asyncio extension, as the store has), uvicorn and
httpx (the host's outbound client) imported, one route reading an SQLite
database, served by uvicorn in a thread on a loopback port. When it is ready it
prints `bare host ready` on stderr, serves one request, and exits. `cli_latency.py`
times it from spawn to that line beside the embedded host's own readiness: what
wopeval adds to the start of the stack it is built on.
"""

from __future__ import annotations

import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import sqlalchemy.ext.asyncio  # noqa: F401  (imported as the store imports it)
import uvicorn
from fastapi import FastAPI
from sqlalchemy import create_engine, text


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="wopeval-bare-host-") as scratch:
        engine = create_engine(f"sqlite:///{Path(scratch) / 'bare.sqlite'}")
        app = FastAPI()

        @app.get("/runs")
        def runs() -> list[int]:
            with engine.connect() as connection:
                return [row[0] for row in connection.execute(text("select 1"))]

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="error"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        print("bare host ready", file=sys.stderr, flush=True)
        answer = httpx.get(f"http://127.0.0.1:{sock.getsockname()[1]}/runs")
        server.should_exit = True
        thread.join()
        engine.dispose()
        answer.raise_for_status()


if __name__ == "__main__":
    main()
