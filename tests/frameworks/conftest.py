"""The framework tier: examples/frameworks/ through the whole production → CI loop.

One orders MCP server, one strict model server and one production `wopeval
serve` (on PostgreSQL) are shared by every framework's test of a pytest worker:
each test records under its own tag and replays in its own SQLite store, so
sharing them changes nothing a test proves and saves a host start per
framework. The frameworks run from the virtualenvs `make frameworks` builds;
without them a developer's run skips the tier, and CI (`CI` set) fails it.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from _backends import PostgresDatabases
from _model_server import ModelScript, ModelServer
from _processes import ServeOptions, ServeProcess

from ._loop import EXAMPLE, PRODUCTION_TENANT, VENVS, Tier, checkout
from ._orders import CountingOrdersServer


@pytest.fixture(scope="session")
def framework_venvs() -> None:
    missing = [str(venv) for venv in VENVS if not (venv / "bin" / "python").exists()]
    if missing:
        message = f"the framework virtualenvs are missing ({', '.join(missing)}): make frameworks"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def orders() -> Iterator[CountingOrdersServer]:
    server = CountingOrdersServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def model() -> Iterator[ModelServer]:
    script = ModelScript()
    script.load(json.loads((EXAMPLE / "model-script.json").read_text(encoding="utf-8")))
    with ModelServer(script) as server:
        yield server


@pytest.fixture(scope="session")
def tier(
    framework_venvs: None,
    orders: CountingOrdersServer,
    model: ModelServer,
    postgres_databases: PostgresDatabases,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Tier]:
    root = tmp_path_factory.mktemp("production")
    calls = root / "orders-calls.log"
    key = "wop_prod_" + secrets.token_hex(12)
    options = ServeOptions(
        root / "data",
        postgres_databases.create(),
        (f"{PRODUCTION_TENANT}={key}",),
        project=checkout(root, orders, model),
        env=(
            ("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"),
            # Production's own provider keys, added by the proxy at egress: the strict model
            # server refuses a request without one, as the providers do.
            ("OPENAI_API_KEY", "sk-prod-" + secrets.token_hex(16)),
            ("ANTHROPIC_API_KEY", "sk-ant-prod-" + secrets.token_hex(16)),
        ),
    )
    with pytest.MonkeyPatch.context() as patch:
        # The in-process orders server appends each tools/call it receives here.
        patch.setenv("ORDERS_CALL_LOG", str(calls))
        serve = ServeProcess(options, root / "serve.log")
        try:
            serve.wait_up()
            yield Tier(serve, key, options, orders, model, calls)
        finally:
            serve.stop()
