"""End-to-end fixtures: the real host under uvicorn on loopback, once per backend per session.

`server` is the plain two-tenant host. `project_server` also loads a
`--project` directory written here: python agents, python tools that raise or
hang, and http tools (with injected credentials) pointing at `loopback_api`.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from _backends import Backend

from ._loopback import LoopbackApi
from ._server import TENANT_A, TENANT_B, ServerHandle, host_settings

PROJECT_MODULE = "wopeval_e2e_project"
CRM_ENV_VARIABLE = "E2E_CRM_TOKEN"
TOOL_TIMEOUT_SECONDS = 1.0


@pytest.fixture(scope="session")
def server(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerHandle]:
    data_dir = tmp_path_factory.mktemp(f"host-{backend.name}")
    handle = ServerHandle(host_settings(backend, data_dir), backend=backend.name)
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture
def http_a(server: ServerHandle) -> Iterator[httpx.Client]:
    with server.http(TENANT_A) as client:
        yield client


@pytest.fixture
def http_b(server: ServerHandle) -> Iterator[httpx.Client]:
    with server.http(TENANT_B) as client:
        yield client


@pytest.fixture
def http_anonymous(server: ServerHandle) -> Iterator[httpx.Client]:
    with server.http(None) as client:
        yield client


# ── the project host ─────────────────────────────────────────────────


@pytest.fixture(scope="session")
def loopback_api() -> Iterator[LoopbackApi]:
    api = LoopbackApi()
    api.start()
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture(scope="session")
def credentials() -> dict[str, str]:
    """The secrets the project's http tools inject (one from the toml, one from the env)."""
    return {
        "value": "sk-value-" + secrets.token_hex(12),
        "env": "sk-env-" + secrets.token_hex(12),
    }


PROJECT_CODE = '''\
"""Agents and tools of the end-to-end project."""

import asyncio
from pathlib import Path


async def crm_agent(context):
    found = await context.call_tool(
        context.input.get("tool", "e2e:crm"), {"customer": context.input["customer"]}
    )
    return {"customer": found["customer"], "tier": found["tier"]}


async def gate_agent(context):
    Path(context.input["entered"]).touch()
    gate = Path(context.input["gate"])
    while not gate.exists():
        await asyncio.sleep(0.02)
    return "released"


async def raising_tool(args):
    raise RuntimeError("the tool broke")


async def sleeping_tool(args):
    await asyncio.sleep(3600)
    return "never"
'''


def write_project(directory: Path, api: LoopbackApi, secret: str) -> None:
    (directory / "workflows").mkdir()
    (directory / f"{PROJECT_MODULE}.py").write_text(PROJECT_CODE)
    for workflow, agent in (("e2e-crm", "e2e.crm-agent"), ("e2e-gate", "e2e.gate-agent")):
        document = (
            f'{{"id": "{workflow}", "nodes": '
            f'[{{"id": "agent", "type": "core.agent", "agentId": "{agent}"}}]}}'
        )
        (directory / "workflows" / f"{workflow}.json").write_text(document)
    (directory / "wopeval.toml").write_text(
        f"""\
workflows = ["workflows/*.json"]

[[agents]]
id = "e2e.crm-agent"
lane = "python"
callable = "{PROJECT_MODULE}:crm_agent"

[[agents]]
id = "e2e.gate-agent"
lane = "python"
callable = "{PROJECT_MODULE}:gate_agent"

[[tools]]
name = "e2e:crm"
kind = "http"
url = "{api.url}/crm"
credential = {{ header = "Authorization", template = "Bearer {{secret}}", value = "{secret}" }}

[[tools]]
name = "e2e:crm-env"
kind = "http"
url = "{api.url}/crm-env"
credential = {{ header = "X-Api-Key", template = "{{secret}}", env = "{CRM_ENV_VARIABLE}" }}

[[tools]]
name = "e2e:fails"
kind = "http"
url = "{api.url}/fail"

[[tools]]
name = "e2e:raises"
kind = "python"
callable = "{PROJECT_MODULE}:raising_tool"

[[tools]]
name = "e2e:sleeps"
kind = "python"
callable = "{PROJECT_MODULE}:sleeping_tool"
"""
    )


@pytest.fixture(scope="session")
def project_server(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
) -> Iterator[ServerHandle]:
    project = tmp_path_factory.mktemp(f"project-{backend.name}")
    write_project(project, loopback_api, credentials["value"])
    loopback_api.expect("/crm", "Authorization", f"Bearer {credentials['value']}")
    loopback_api.expect("/crm-env", "X-Api-Key", credentials["env"])
    data_dir = tmp_path_factory.mktemp(f"project-host-{backend.name}")
    settings = host_settings(
        backend, data_dir, project=project, tool_timeout_seconds=TOOL_TIMEOUT_SECONDS
    )
    handle = ServerHandle(settings, backend=backend.name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CRM_ENV_VARIABLE, credentials["env"])
        handle.start()
        try:
            yield handle
        finally:
            handle.stop()
            patch.setattr(sys, "path", [p for p in sys.path if p != str(project.resolve())])
            sys.modules.pop(PROJECT_MODULE, None)
