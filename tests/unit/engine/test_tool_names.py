"""Provider-safe tool names (engine/recording/tool_names.py): the documented mapping, its
round trip, and the refusal of two tools that would be offered by one name, at start, naming
both."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.project import ProjectError, connect_mcp_servers, load_project
from wopeval.engine.recording.tool_names import SAFE_NAME, ToolNameClash, ToolNames, offered_name
from wopeval.tools import McpServers

PROVIDER_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI and Anthropic accept as a function name, written out here on its own."""


DOTTED = "conformance.eval:counter"


def _digest(canonical: str) -> str:
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


@pytest.mark.parametrize(
    ("canonical", "offered"),
    [
        ("orders:refund", "orders__refund"),
        ("count-http:lookup", "count-http__lookup"),
        ("lookup", "lookup"),
        (DOTTED, f"conformance_eval__counter_{_digest(DOTTED)}"),
        ("a:b/c", f"a__b_c_{_digest('a:b/c')}"),
        ("s:" + "t" * 70, ("s__" + "t" * 70)[:55] + "_" + _digest("s:" + "t" * 70)),
    ],
    ids=["server-tool", "hyphen", "plain", "dot", "slash", "too-long"],
)  # fmt: skip
def test_a_canonical_name_is_offered_by_the_documented_rule(canonical: str, offered: str) -> None:
    assert offered_name(canonical) == offered
    assert PROVIDER_PATTERN.match(offered)


@given(st.text(min_size=1, max_size=200))
def test_every_offered_name_is_one_every_provider_accepts(canonical: str) -> None:
    assert PROVIDER_PATTERN.match(offered_name(canonical))
    assert SAFE_NAME.pattern == PROVIDER_PATTERN.pattern


@given(st.sets(st.text(alphabet="ab:._-/", min_size=1, max_size=80), min_size=1, max_size=8))
def test_the_names_of_a_set_map_back_to_their_tools(canonical: set[str]) -> None:
    offered = [offered_name(name) for name in canonical]
    if len(set(offered)) < len(offered):
        # Refused exactly when two of them share an offered name.
        with pytest.raises(ToolNameClash):
            ToolNames.of(canonical)
        return
    names = ToolNames.of(canonical)
    for name in canonical:
        assert names.canonical(names.offered(name)) == name
    assert names.canonical("x" * 65) is None, "a name no tool is offered by maps to none"


def test_two_tools_offered_by_one_name_are_refused_naming_both() -> None:
    with pytest.raises(ToolNameClash) as refused:
        ToolNames.of(["orders:refund", "orders__refund", "orders:lookup"])
    assert str(refused.value) == (
        "tools 'orders:refund' and 'orders__refund' would both be offered as 'orders__refund'"
    )


CLASHING = """
[[tools]]
name = "orders__refund"
kind = "http"
url = "http://127.0.0.1:1/x"

[[tools]]
name = "orders:refund"
kind = "http"
url = "http://127.0.0.1:1/y"
"""


@pytest.mark.parametrize("offline", [False, True], ids=["online", "offline"])
async def test_a_project_whose_tools_clash_does_not_load(tmp_path: Path, offline: bool) -> None:
    (tmp_path / "wopeval.toml").write_text(CLASHING)
    catalog = Catalog()
    async with httpx.AsyncClient() as http:
        servers = load_project(tmp_path, catalog, http, tool_timeout=7)
        with pytest.raises(ProjectError) as refused:
            await connect_mcp_servers(servers, catalog, McpServers(), offline=offline)
    assert "'orders:refund' and 'orders__refund'" in str(refused.value)
