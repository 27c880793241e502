"""`wopeval.toml` entries of the LLM lanes, model upstreams and the price table."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from wopeval import evals
from wopeval.agents import LlmAgent, LlmLane
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.project import ProjectError, connect_mcp_servers, load_project
from wopeval.tools import McpServers


async def _load(directory: Path, toml: str) -> Catalog:
    (directory / "wopeval.toml").write_text(toml)
    catalog = Catalog()
    async with httpx.AsyncClient() as http:
        servers = load_project(directory, catalog, http, tool_timeout=7)
        await connect_mcp_servers(servers, catalog, McpServers())
    return catalog


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[agents]]\nid = "a"\nlane = "openai"\n', "the openai lane needs `model`"),
        ('[[agents]]\nid = "a"\nlane = "openai"\nmodel = "m"\nsystem_prompt = "x"\n'
         'system_prompt_file = "p.md"\n', "not both"),
        ('[[agents]]\nid = "a"\nlane = "openai"\nmodel = "m"\nsystem_prompt_file = "none.md"\n',
         "`system_prompt_file`"),
        ('[[agents]]\nid = "a"\nlane = "openai"\nmodel = "m"\napi_key_env = "OPENAI_UNSET_KEY"\n',
         "OPENAI_UNSET_KEY is not set"),
        ('[[agents]]\nid = "a"\nlane = "command"\ncommand = ["x"]\nmodel = "m"\n',
         'model only apply to lanes "openai", "anthropic"'),
        ('[[agents]]\nid = "a"\nlane = "anthropic"\n', "the anthropic lane needs `model`"),
        ('[[agents]]\nid = "a"\nlane = "anthropic"\nmodel = "m"\ntemperature = 1.5\n',
         "Anthropic's `temperature` is at most 1"),
        ('[[agents]]\nid = "a"\nlane = "anthropic"\nmodel = "m"\n'
         'anthropic_base_url = "http://127.0.0.1:9"\n', "only apply to lanes with a model proxy"),
        ('[[agents]]\nid = "a"\nlane = "command"\ncommand = ["x"]\n'
         'anthropic_api_key_env = "ANTHROPIC_UNSET_KEY"\n', "ANTHROPIC_UNSET_KEY is not set"),
        ('[[agents]]\nid = "a"\nlane = "openai"\nmodel = "m"\nmax_turns = 0\n', "max_turns"),
        ('[models."m"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n', "input_per_mtok"),
    ],
    ids=["no-model", "two-prompts", "missing-prompt-file", "unset-key", "lane-only-field",
         "anthropic-no-model", "anthropic-temperature", "anthropic-lane-proxy-field",
         "unset-anthropic-key", "no-turns", "negative-price"],
)  # fmt: skip
async def test_an_incomplete_llm_entry_is_refused_with_what_it_lacks(
    tmp_path: Path, toml: str, message: str
) -> None:
    with pytest.raises(ProjectError, match=message.replace("(", r"\(").replace("*", r"\*")):
        await _load(tmp_path, toml)


async def test_an_openai_agent_gets_its_prompt_prices_and_no_tools_unless_given(
    tmp_path: Path,
) -> None:
    (tmp_path / "prompt.md").write_text("Be brief.")
    catalog = await _load(
        tmp_path,
        '[[agents]]\nid = "a"\nlane = "openai"\nmodel = "m"\nsystem_prompt_file = "prompt.md"\n'
        'base_url = "http://127.0.0.1:9/v1/"\nmodel_replay = "recorded"\nrecord_model = false\n'
        '[[agents]]\nid = "c"\nlane = "command"\ncommand = ["x"]\n'
        'base_url = "http://127.0.0.1:9/v1"\n'
        '[models."m"]\ninput_per_mtok = 0.5\noutput_per_mtok = 2\n',
    )
    spec = catalog.agents.get("a")
    assert spec is not None
    assert isinstance(spec.agent, LlmAgent)
    assert (spec.lane, spec.tools, spec.model_replay, spec.record_model) == (
        "openai", (), "recorded", False
    )  # fmt: skip
    assert spec.model_upstream is None
    command = catalog.agents.get("c")
    assert command is not None
    assert command.model_upstream is not None
    assert command.model_upstream.endpoint("openai").base_url == "http://127.0.0.1:9/v1"
    assert catalog.prices == {"m": evals.ModelPrice(0.5, 2.0)}


async def test_a_proxy_upstream_names_both_providers_and_reads_each_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ANTHROPIC_KEY", "sk-ant-test")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    catalog = await _load(
        tmp_path,
        '[[agents]]\nid = "c"\nlane = "command"\ncommand = ["x"]\n'
        'anthropic_api_key_env = "MY_ANTHROPIC_KEY"\n'
        '[[agents]]\nid = "d"\nlane = "http"\nurl = "http://127.0.0.1:9/agent"\n'
        'anthropic_base_url = "http://127.0.0.1:9/"\n',
    )
    command = catalog.agents.get("c")
    assert command is not None
    assert command.model_upstream is not None
    anthropic = command.model_upstream.endpoint("anthropic")
    assert anthropic.base_url == "https://api.anthropic.com"
    assert anthropic.api_key is not None
    assert anthropic.api_key() == "sk-ant-test"
    assert command.model_upstream.endpoint("openai").api_key is None
    service = catalog.agents.get("d")
    assert service is not None
    assert service.model_upstream is not None
    assert service.model_upstream.endpoint("anthropic").base_url == "http://127.0.0.1:9"


async def test_an_anthropic_agent_reads_its_own_server_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-default")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:7")
    catalog = await _load(
        tmp_path,
        '[[agents]]\nid = "a"\nlane = "anthropic"\nmodel = "claude-test"\nmax_tokens = 64\n',
    )
    spec = catalog.agents.get("a")
    assert spec is not None
    assert isinstance(spec.agent, LlmAgent)
    assert (spec.lane, spec.tools, spec.model_upstream) == ("anthropic", (), None)
    lane = spec.agent.lane
    assert isinstance(lane, LlmLane)
    assert (lane.provider, lane.model, lane.base_url, lane.max_tokens) == (
        "anthropic", "claude-test", "http://127.0.0.1:7", 64
    )  # fmt: skip
    assert lane.api_key is not None
    assert lane.api_key() == "sk-ant-default"
