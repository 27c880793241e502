"""Fixtures of the LLM tests: the scripted model server and one host per backend.

The host's project has an order desk: two python tools (`shop:lookup`,
`shop:refund`), the counting MCP server over stdio (`count:lookup`), two
openai-lane agents (`llm.desk` with its model live in evals, `llm.pinned`
with `model_replay = "recorded"`), and a command-lane agent on the plain
`openai` client (`llm.proxy-agent`), whose model calls go through the proxy.
`llm.hashed` is the desk with `wire_content = "hash"`. Every model call goes
to the local model server; the API key is a random
secret read from the host's environment, so a test can look for it anywhere.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from _backends import Backend
from _model_server import ModelServer

from .._server import ServerHandle, host_settings, running_host
from ..mcp.conftest import COUNTING_SERVER, CallLog

HERE = Path(__file__).parent
KEY_ENV = "LLM_TEST_API_KEY"
MODEL = "gpt-test-mini"
PRICES = {"input": 0.4, "output": 1.6}
DESK_PROMPT = "You are the order desk. Refund delivered orders."
WORKFLOWS = {"llm-desk": "llm.desk", "llm-pinned": "llm.pinned", "llm-proxy": "llm.proxy-agent"}


@pytest.fixture(scope="package")
def model_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture(scope="package")
def api_key() -> Iterator[str]:
    key = "sk-test-" + secrets.token_hex(20)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, key)
        yield key


@dataclass
class LlmProject:
    """The project directory; `write()` renders it with the agents' current prompts."""

    directory: Path
    model_url: str
    calls: CallLog
    prompts: dict[str, str] = field(
        default_factory=lambda: {"llm.desk": DESK_PROMPT, "llm.pinned": DESK_PROMPT}
    )

    def write(self) -> None:
        python = json.dumps(sys.executable)
        (self.directory / "workflows").mkdir(exist_ok=True)
        for workflow, agent in WORKFLOWS.items():
            document = {
                "id": workflow,
                "nodes": [{"id": "agent", "type": "core.agent", "agentId": agent}],
            }
            (self.directory / "workflows" / f"{workflow}.json").write_text(json.dumps(document))
        tools = '["shop:lookup", "shop:refund", "count:lookup"]'
        openai = f"""lane = "openai"
model = "{MODEL}"
base_url = "{self.model_url}"
api_key_env = "{KEY_ENV}"
response_format = "json"
max_turns = 4
timeout_seconds = 10
tools = {tools}
"""
        (self.directory / "wopeval.toml").write_text(
            f"""workflows = ["workflows/*.json"]

[[tools]]
name = "shop:lookup"
kind = "python"
callable = "llm_shop_tools:lookup"
description = "Look an order up."

[[tools]]
name = "shop:refund"
kind = "python"
callable = "llm_shop_tools:refund"

[[mcp_servers]]
name = "count"
command = [{python}, {json.dumps(str(COUNTING_SERVER))}]
env = {{ CALL_LOG = {json.dumps(str(self.calls.path))} }}
tools = ["lookup"]

[[agents]]
id = "llm.desk"
system_prompt = {json.dumps(self.prompts["llm.desk"])}
{openai}
[[agents]]
id = "llm.pinned"
model_replay = "recorded"
system_prompt = {json.dumps(self.prompts["llm.pinned"])}
{openai}
[[agents]]
id = "llm.hashed"
wire_content = "hash"
system_prompt = {json.dumps(DESK_PROMPT)}
{openai}
[[agents]]
id = "llm.proxy-agent"
lane = "command"
command = [{python}, {json.dumps(str(HERE / "_proxy_agent.py"))}]
base_url = "{self.model_url}"
api_key_env = "{KEY_ENV}"
model_replay = "recorded"
timeout_seconds = 60

[models."{MODEL}"]
input_per_mtok = {PRICES["input"]}
output_per_mtok = {PRICES["output"]}
"""
        )


@dataclass
class LlmHost:
    handle: ServerHandle
    project: LlmProject
    server: ModelServer

    def prompt(self, agent_id: str, prompt: str) -> None:
        """Change an agent's system prompt: the project is rewritten and the host restarted."""
        if self.project.prompts[agent_id] != prompt:
            self.project.prompts[agent_id] = prompt
            self.project.write()
            self.handle.restart()


@pytest.fixture(scope="package")
def llm_host(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ModelServer,
    api_key: str,
) -> Iterator[LlmHost]:
    directory = tmp_path_factory.mktemp(f"llm-project-{backend.name}")
    (directory / "llm_shop_tools.py").write_text((HERE / "llm_shop_tools.py").read_text())
    calls = CallLog(tmp_path_factory.mktemp("llm-mcp-calls") / "calls.log")
    project = LlmProject(directory, model_server.base_url, calls)
    project.write()
    data_dir = tmp_path_factory.mktemp(f"llm-host-{backend.name}")
    with running_host(host_settings(backend, data_dir, project=directory), backend) as handle:
        host = LlmHost(handle, project, model_server)
        yield host
        # Leave the prompts as written for the next module.
        for agent_id in host.project.prompts:
            host.prompt(agent_id, DESK_PROMPT)
