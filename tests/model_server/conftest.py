"""The strict model stand-in (tests/_model_server) on a loopback port, for one module.

Happy paths go through the official `openai` and `anthropic` SDKs; each refusal
is one raw request (httpx), so the test shows exactly what the provider refuses.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from _model_server import ModelServer

KEY = "sk-stand-in"
OPENAI_HEADERS = {"Authorization": f"Bearer {KEY}"}
ANTHROPIC_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
ADD_PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
ADD_TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
    {"content": "The sum is 5."},
]


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        yield running


@pytest.fixture
def http(server: ModelServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.root_url, trust_env=False) as client:
        yield client


def question(topic: str) -> str:
    """A first user message no other test uses: each test scripts its own conversation."""
    return f"{topic} {uuid.uuid4().hex[:8]}?"
