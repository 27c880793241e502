"""The LLM parts of a project: the openai lane, model upstreams and the price table.

[[agents]]
id = "support.llm"
lane = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:8000/v1"   # default: $OPENAI_BASE_URL, else OpenAI's
api_key_env = "OPENAI_API_KEY"          # read at start, sent at egress only
system_prompt_file = "prompts/support.md"
tools = ["orders:*"]

[models."gpt-4.1-mini"]
input_per_mtok = 0.40
output_per_mtok = 1.60

A command or http agent's `base_url` / `api_key_env` name the upstream its
recording model proxy forwards to (docs/llm.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wopeval import evals
from wopeval.agents import ModelUpstream, OpenAILane
from wopeval.agents.llm import DEFAULT_MAX_TURNS, DEFAULT_RETRIES
from wopeval.tools import Secret

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class LlmFields(BaseModel):
    """The `[[agents]]` fields of the openai lane and of model upstreams."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, min_length=1)
    base_url: str | None = None
    api_key_env: str | None = None
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1, le=1000)
    parallel_tool_calls: bool | None = None
    response_format: Literal["text", "json"] = "text"
    retries: int = Field(default=DEFAULT_RETRIES, ge=0, le=10)
    record_model: bool = True
    model_replay: Literal["off", "recorded"] = "off"


_LANE_ONLY = (
    "model",
    "system_prompt",
    "system_prompt_file",
    "temperature",
    "max_tokens",
    "parallel_tool_calls",
)


class ModelPriceEntry(BaseModel):
    """`[models."<model id>"]`: USD per million input (prompt) and output tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


def prices(entries: dict[str, ModelPriceEntry]) -> dict[str, evals.ModelPrice]:
    return {
        model: evals.ModelPrice(entry.input_per_mtok, entry.output_per_mtok)
        for model, entry in entries.items()
    }


def model_upstream(where: str, fields: LlmFields, timeout_seconds: float) -> ModelUpstream:
    """Where the agent's model calls go, with its key read now and revealed at egress."""
    base_url = fields.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
    key_env = fields.api_key_env or DEFAULT_KEY_ENV
    found = os.environ.get(key_env)
    if fields.api_key_env and not found:
        raise ValueError(f"{where}: environment variable {key_env} is not set")
    secret = Secret(found) if found else None
    return ModelUpstream(
        base_url.rstrip("/"), None if secret is None else secret.reveal, timeout_seconds
    )


def openai_lane(
    where: str, fields: LlmFields, directory: Path, timeout_seconds: float
) -> OpenAILane:
    if not fields.model:
        raise ValueError(f"{where}: the openai lane needs `model`")
    if fields.system_prompt is not None and fields.system_prompt_file is not None:
        raise ValueError(f"{where}: give `system_prompt` or `system_prompt_file`, not both")
    prompt = fields.system_prompt
    if fields.system_prompt_file is not None:
        path = directory / fields.system_prompt_file
        try:
            prompt = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{where}: `system_prompt_file` {path}: {exc.strerror}") from exc
    upstream = model_upstream(where, fields, timeout_seconds)
    return OpenAILane(
        model=fields.model,
        base_url=upstream.base_url,
        api_key=upstream.api_key,
        system_prompt=prompt,
        temperature=fields.temperature,
        max_tokens=fields.max_tokens,
        max_turns=fields.max_turns,
        parallel_tool_calls=fields.parallel_tool_calls,
        response_format=fields.response_format,
        timeout_seconds=timeout_seconds,
        retries=fields.retries,
    )


def check_lane_fields(where: str, lane: str, fields: LlmFields) -> None:
    """The openai lane's own fields belong to it alone."""
    if lane == "openai":
        return
    given = [name for name in _LANE_ONLY if getattr(fields, name) is not None]
    if given:
        raise ValueError(f'{where}: {", ".join(given)} only apply to lane "openai"')
