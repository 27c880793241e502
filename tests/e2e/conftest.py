"""End-to-end fixtures: the real host under uvicorn on loopback, once per backend per session.

`server` is the plain two-tenant host. `project_server` also loads a
`--project` directory written here: python agents, python tools that raise or
hang, and http tools (with injected credentials) pointing at `loopback_api`.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from _backends import Backend

from ._loopback import LoopbackApi
from ._server import TENANT_A, TENANT_B, ServerHandle, host_settings

PROJECT_MODULE = "wopeval_e2e_project"
CRM_ENV_VARIABLE = "E2E_CRM_TOKEN"
TOOL_TIMEOUT_SECONDS = 1.0
PATIENT_TOOL_TIMEOUT_SECONDS = 120.0


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


async def stepping_agent(context):
    for _ in range(context.input["steps"]):
        await context.call_tool("e2e:waits", {"dir": context.input["dir"]})
    return "stepped"


async def waiting_tool(args):
    """Each call takes the next index: it touches `entered-<i>` and waits for `gate-<i>`."""
    base = Path(args["dir"])
    index = len(list(base.glob("entered-*")))
    (base / f"entered-{index}").touch()
    while not (base / f"gate-{index}").exists():
        await asyncio.sleep(0.01)
    return {"index": index}


async def counting_agent(context):
    for _ in range(context.input["calls"]):
        await context.call_tool(
            "conformance.eval:counter", {"op": "inc", "key": context.input["key"]}
        )
    return "counted"


async def raising_tool(args):
    raise RuntimeError("the tool broke")


async def sleeping_tool(args):
    await asyncio.sleep(3600)
    return "never"


WEI = 123456789012345678901234567890


async def wei_tool(args):
    """An amount in wei, beyond 64 bits, and the args it was called with."""
    return {"wei": WEI, "args": args}


async def wei_agent(context):
    """Calls `e2e:wei` with an amount beyond 64 bits and says whether the answer it got is
    the tool's, exactly: integers, not floats."""
    answer = await context.call_tool("e2e:wei", {"wei": -2 * WEI})
    return {
        "types": [type(answer["wei"]).__name__, type(answer["args"]["wei"]).__name__],
        "exact": answer == {"wei": WEI, "args": {"wei": -2 * WEI}},
    }


def _nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


ODD = {
    "nul": "a\\u0000b",
    "surrogate": "\\ud800",
    "deep": _nested(300),
    "keys": {"": 1, "a\\u0000b": 2},
}
"""Odd but legal JSON content a live tool may answer (the text a JSON parser would read
it from: a NUL character, a lone surrogate, 300 levels of lists, an empty key and a key
with a NUL)."""


async def odd_tool(args):
    return {"odd": ODD[args["kind"]]}


async def odd_agent(context):
    """Calls `e2e:odd` for the content its input names and says whether the answer it got
    is the tool's, exactly."""
    kind = context.input["kind"]
    try:
        answer = await context.call_tool("e2e:odd", {"kind": kind})
    except Exception as error:
        return {"exact": False, "refused": type(error).__name__}
    return {"exact": answer == {"odd": ODD[kind]}}


async def odd_output_agent(context):
    """Decides the odd content its input names (a big integer under `wei`), calling no tool."""
    kind = context.input["kind"]
    return {"odd": WEI if kind == "wei" else ODD[kind]}
'''

ODD_COMMAND_AGENT = """\
import json, sys
sys.path.insert(0, sys.argv[1])
from wopeval_e2e_project import ODD, WEI
kind = json.loads(sys.stdin.read())["input"]["kind"]
print(json.dumps({"odd": WEI if kind == "wei" else ODD[kind]}))
"""


MCP_STEPPING_AGENT = """\
import json, os, sys
from pathlib import Path
import httpx
# An agent outside the host: `steps` calls of e2e:waits through its MCP endpoint, each
# answer written to `seen-<i>.json` whatever it is, and done, as an agent that goes on.
given = json.loads(sys.stdin.read())["input"]
base = Path(given["dir"])
for index in range(given["steps"]):
    call = {"name": "e2e__waits", "arguments": {"dir": str(base)}}
    answer = httpx.post(
        os.environ["WOPEVAL_MCP_URL"],
        json={"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": call},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=120,
    )
    (base / f"seen-{index}.json").write_text(answer.text)
print(json.dumps("stepped"))
"""


def write_project(directory: Path, api: LoopbackApi, secret: str) -> None:
    (directory / "workflows").mkdir()
    (directory / f"{PROJECT_MODULE}.py").write_text(PROJECT_CODE)
    (directory / "odd_command_agent.py").write_text(ODD_COMMAND_AGENT)
    (directory / "mcp_stepping_agent.py").write_text(MCP_STEPPING_AGENT)
    for workflow, agent in (
        ("e2e-crm", "e2e.crm-agent"),
        ("e2e-gate", "e2e.gate-agent"),
        ("e2e-stepper", "e2e.stepping-agent"),
        ("e2e-mcp-stepper", "e2e.mcp-stepping-agent"),
        ("e2e-counting", "e2e.counting-agent"),
        ("e2e-wei", "e2e.wei-agent"),
        ("e2e-wei-hashed", "e2e.wei-hashed-agent"),
        ("e2e-odd", "e2e.odd-agent"),
        ("e2e-odd-output", "e2e.odd-output-agent"),
        ("e2e-odd-command", "e2e.odd-command-agent"),
    ):
        document = (
            f'{{"id": "{workflow}", "nodes": '
            f'[{{"id": "agent", "type": "core.agent", "agentId": "{agent}"}}]}}'
        )
        (directory / "workflows" / f"{workflow}.json").write_text(document)
    (directory / "workflows" / "e2e-two-steps.json").write_text(
        '{"id": "e2e-two-steps", "nodes": ['
        '{"id": "first", "type": "core.agent", "agentId": "e2e.stepping-agent"},'
        '{"id": "second", "type": "core.agent", "agentId": "e2e.stepping-agent"}],'
        ' "edges": [{"from": "first", "to": "second"}]}'
    )
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

[[agents]]
id = "e2e.stepping-agent"
lane = "python"
callable = "{PROJECT_MODULE}:stepping_agent"

[[agents]]
id = "e2e.mcp-stepping-agent"
lane = "command"
command = ["{sys.executable}", "{directory / "mcp_stepping_agent.py"}"]

[[agents]]
id = "e2e.counting-agent"
lane = "python"
callable = "{PROJECT_MODULE}:counting_agent"

[[agents]]
id = "e2e.wei-agent"
lane = "python"
callable = "{PROJECT_MODULE}:wei_agent"

[[agents]]
id = "e2e.wei-hashed-agent"
lane = "python"
callable = "{PROJECT_MODULE}:wei_agent"
wire_content = "hash"

[[agents]]
id = "e2e.odd-agent"
lane = "python"
callable = "{PROJECT_MODULE}:odd_agent"

[[agents]]
id = "e2e.odd-output-agent"
lane = "python"
callable = "{PROJECT_MODULE}:odd_output_agent"

[[agents]]
id = "e2e.odd-command-agent"
lane = "command"
command = ["{sys.executable}", "{directory / "odd_command_agent.py"}", "{directory}"]

[[tools]]
name = "e2e:waits"
kind = "python"
callable = "{PROJECT_MODULE}:waiting_tool"

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

[[tools]]
name = "e2e:wei"
kind = "python"
callable = "{PROJECT_MODULE}:wei_tool"

[[tools]]
name = "e2e:odd"
kind = "python"
callable = "{PROJECT_MODULE}:odd_tool"
"""
    )


@contextmanager
def _project_host(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
    tool_timeout: float,
) -> Iterator[ServerHandle]:
    project = tmp_path_factory.mktemp(f"project-{backend.name}")
    write_project(project, loopback_api, credentials["value"])
    loopback_api.expect("/crm", "Authorization", f"Bearer {credentials['value']}")
    loopback_api.expect("/crm-env", "X-Api-Key", credentials["env"])
    data_dir = tmp_path_factory.mktemp(f"project-host-{backend.name}")
    settings = host_settings(backend, data_dir, project=project, tool_timeout_seconds=tool_timeout)
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


@pytest.fixture(scope="session")
def project_server(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
) -> Iterator[ServerHandle]:
    with _project_host(
        backend, tmp_path_factory, loopback_api, credentials, TOOL_TIMEOUT_SECONDS
    ) as handle:
        yield handle


@pytest.fixture(scope="session")
def patient_server(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
) -> Iterator[ServerHandle]:
    """The project host with tools given time to wait at a test's gates."""
    with _project_host(
        backend, tmp_path_factory, loopback_api, credentials, PATIENT_TOOL_TIMEOUT_SECONDS
    ) as handle:
        yield handle
