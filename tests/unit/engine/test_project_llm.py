"""`wopeval.toml` entries of the openai lane, model upstreams and the price table."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from wopeval import evals
from wopeval.agents import OpenAIAgent
from wopeval.engine.catalog import Catalog
from wopeval.engine.project import ProjectError, connect_mcp_servers, load_project
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
         'model only apply to lane "openai"'),
        ('[[agents]]\nid = "a"\nlane = "openai"\nmodel = "m"\nmax_turns = 0\n', "max_turns"),
        ('[models."m"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n', "input_per_mtok"),
    ],
    ids=["no-model", "two-prompts", "missing-prompt-file", "unset-key", "lane-only-field",
         "no-turns", "negative-price"],
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
    assert isinstance(spec.agent, OpenAIAgent)
    assert (spec.lane, spec.tools, spec.model_replay, spec.record_model) == (
        "openai", (), "recorded", False
    )  # fmt: skip
    assert spec.model_upstream is None
    command = catalog.agents.get("c")
    assert command is not None
    assert command.model_upstream is not None
    assert command.model_upstream.base_url == "http://127.0.0.1:9/v1"
    assert command.model_upstream.headers() == {}
    assert catalog.prices == {"m": evals.ModelPrice(0.5, 2.0)}
