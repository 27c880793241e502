"""The LLM parts of a project: the LLM lanes, model upstreams and the price table.

[[agents]]
id = "support.llm"
lane = "openai"                         # Chat Completions; or "anthropic" (Messages)
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:8000/v1"   # default: $OPENAI_BASE_URL, else OpenAI's
api_key_env = "OPENAI_API_KEY"          # read at start, sent at egress only
system_prompt_file = "prompts/support.md"
tools = ["orders:*"]

[models."gpt-4.1-mini"]
input_per_mtok = 0.40
output_per_mtok = 1.60

A command, http or python agent's `base_url` / `api_key_env` name the OpenAI
upstream its recording model proxy forwards to, and `anthropic_base_url` /
`anthropic_api_key_env` the Anthropic one (docs/llm.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from wopeval import evals
from wopeval.agents import DEFAULT_MAX_TURNS, DEFAULT_RETRIES, LLM_LANES, LlmLane
from wopeval.models import Endpoint, ModelUpstream, Provider
from wopeval.tools import Secret


@dataclass(frozen=True)
class ProviderDefaults:
    """Where a provider's requests go when the entry does not say."""

    base_url_env: str
    base_url: str
    key_env: str


DEFAULTS: dict[Provider, ProviderDefaults] = {
    "openai": ProviderDefaults("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ProviderDefaults(
        "ANTHROPIC_BASE_URL", "https://api.anthropic.com", "ANTHROPIC_API_KEY"
    ),
}
LANE_PROVIDERS: dict[str, Provider] = {"openai": "openai", "anthropic": "anthropic"}
"""The provider whose API each LLM lane speaks."""


class LlmFields(BaseModel):
    """The `[[agents]]` fields of the LLM lanes and of model upstreams."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, min_length=1)
    """LLM lanes (required there): the model, sent as the request's `model`."""
    base_url: str | None = None
    """An LLM lane's server (OpenAI's `/v1` URL; Anthropic's without `/v1`), or the
    OpenAI upstream of another lane's model proxy; default: `$OPENAI_BASE_URL`
    (`$ANTHROPIC_BASE_URL`), else the provider's own."""
    api_key_env: str | None = None
    """The variable the key for `base_url` is read from at start and sent at egress only
    (default `OPENAI_API_KEY`, or `ANTHROPIC_API_KEY` for the `anthropic` lane); a
    variable named here must be set."""
    anthropic_base_url: str | None = None
    """`python`, `command`, `http` lanes: the Anthropic upstream of the model proxy
    (default: `$ANTHROPIC_BASE_URL`, else Anthropic's)."""
    anthropic_api_key_env: str | None = None
    """`python`, `command`, `http` lanes: the variable holding the Anthropic key (default
    `ANTHROPIC_API_KEY`)."""
    system_prompt: str | None = None
    """LLM lanes: the system message (give it or `system_prompt_file`)."""
    system_prompt_file: str | None = None
    """LLM lanes: a file holding the system message, relative to the project, read at start."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """LLM lanes: sent as given (at most 1 for `anthropic`); absent, not sent."""
    max_tokens: int | None = Field(default=None, gt=0)
    """LLM lanes: sent as given; absent, not sent (`anthropic`: 4096)."""
    max_turns: int = Field(default=DEFAULT_MAX_TURNS, ge=1, le=1000)
    """LLM lanes: model requests per invocation at most."""
    parallel_tool_calls: bool | None = None
    """LLM lanes: whether the model may ask for several tool calls at once; absent, not
    sent."""
    response_format: Literal["text", "json"] = "text"
    """LLM lanes: `text` (the decision is the final answer's text) or `json` (the answer
    parsed as JSON)."""
    retries: int = Field(default=DEFAULT_RETRIES, ge=0, le=10)
    """LLM lanes: extra attempts of a model request after a 429, a 5xx, a timeout or a
    connection error."""
    record_model: bool = True
    """Record each model exchange's content (false: listed, without content)."""
    model_replay: Literal["off", "recorded"] = "off"
    """`recorded`: in an eval task with a source run, answer the agent's model requests
    from the source's recorded exchanges (docs/llm.md); `off`: they run live."""


_LLM_LANE_ONLY = (
    "model",
    "system_prompt",
    "system_prompt_file",
    "temperature",
    "max_tokens",
    "parallel_tool_calls",
)
_PROXY_ONLY = ("anthropic_base_url", "anthropic_api_key_env")
"""An LLM lane's own server is `base_url` / `api_key_env`, whichever its provider."""


class ModelPriceEntry(BaseModel):
    """`[models."<model id>"]`: USD per million input (prompt) and output tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float = Field(ge=0)
    """USD per million input (prompt) tokens."""
    output_per_mtok: float = Field(ge=0)
    """USD per million output tokens."""


def prices(entries: dict[str, ModelPriceEntry]) -> dict[str, evals.ModelPrice]:
    return {
        model: evals.ModelPrice(entry.input_per_mtok, entry.output_per_mtok)
        for model, entry in entries.items()
    }


def model_upstream(where: str, fields: LlmFields, timeout_seconds: float) -> ModelUpstream:
    """Where the agent's model proxy forwards, each key read now and revealed at egress."""
    return ModelUpstream(
        {
            "openai": endpoint_of(where, "openai", fields.base_url, fields.api_key_env),
            "anthropic": endpoint_of(
                where, "anthropic", fields.anthropic_base_url, fields.anthropic_api_key_env
            ),
        },
        timeout_seconds,
    )


def endpoint_of(
    where: str, provider: Provider, base_url: str | None, key_env: str | None
) -> Endpoint:
    """A provider's server: the URL given, else its variable, else the provider's own; the
    key from the variable named (which must be set), else from the default one if set."""
    defaults = DEFAULTS[provider]
    url = base_url or os.environ.get(defaults.base_url_env) or defaults.base_url
    variable = key_env or defaults.key_env
    found = os.environ.get(variable)
    if key_env and not found:
        raise ValueError(f"{where}: environment variable {variable} is not set")
    secret = Secret(found) if found else None
    return Endpoint(url.rstrip("/"), None if secret is None else secret.reveal)


def llm_lane(
    where: str, lane: str, fields: LlmFields, directory: Path, timeout_seconds: float
) -> LlmLane:
    """An `openai` or `anthropic` lane entry, resolved (its prompt file read)."""
    provider = LANE_PROVIDERS[lane]
    if not fields.model:
        raise ValueError(f"{where}: the {lane} lane needs `model`")
    if provider == "anthropic" and fields.temperature is not None and fields.temperature > 1:
        raise ValueError(f"{where}: Anthropic's `temperature` is at most 1")
    prompt = read_prompt(
        where, "system_prompt", fields.system_prompt, fields.system_prompt_file, directory
    )
    endpoint = endpoint_of(where, provider, fields.base_url, fields.api_key_env)
    return LlmLane(
        provider=provider,
        model=fields.model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        system_prompt=prompt,
        temperature=fields.temperature,
        max_tokens=fields.max_tokens,
        max_turns=fields.max_turns,
        parallel_tool_calls=fields.parallel_tool_calls,
        response_format=fields.response_format,
        timeout_seconds=timeout_seconds,
        retries=fields.retries,
    )


def read_prompt(
    where: str, name: str, inline: str | None, file: str | None, directory: Path
) -> str | None:
    """A prompt given inline as `name`, or read from the file `name_file` names (relative to
    the project); giving both is refused."""
    if inline is not None and file is not None:
        raise ValueError(f"{where}: give `{name}` or `{name}_file`, not both")
    if file is None:
        return inline
    path = directory / file
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{where}: `{name}_file` {path}: {exc.strerror}") from exc


def check_lane_fields(where: str, lane: str, fields: LlmFields) -> None:
    """An LLM lane's own fields belong to the LLM lanes; the Anthropic upstream's to the
    lanes with a model proxy."""
    if lane in LLM_LANES:
        wrong = [name for name in _PROXY_ONLY if getattr(fields, name) is not None]
        if wrong:
            raise ValueError(
                f"{where}: {', '.join(wrong)} only apply to lanes with a model proxy; "
                f"an LLM lane's server is `base_url` / `api_key_env`"
            )
        return
    given = [name for name in _LLM_LANE_ONLY if getattr(fields, name) is not None]
    if given:
        raise ValueError(f'{where}: {", ".join(given)} only apply to lanes "openai", "anthropic"')
