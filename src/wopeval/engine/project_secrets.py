"""The secrets a project names, for the one redaction of what its agents say (redaction.py).

Every credential the manifest configures (tools', MCP servers' and http agents'
`credential`), the API key each model upstream reads (`api_key_env`, by
default `OPENAI_API_KEY`), and the values of `env` and `headers` entries whose
name says they are secret (`API_KEY`, `TOKEN`, `Authorization`, …). A secret
named by an environment variable is read when text is redacted, as egress reads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from wopeval.engine.project_llm import DEFAULT_KEY_ENV
from wopeval.engine.redaction import SecretSource, is_secret_name

if TYPE_CHECKING:
    from wopeval.engine.project import ProjectFile

MODEL_LANES = frozenset({"python", "command", "http", "openai"})
"""The lanes whose agents have a model upstream (the openai lane's, or the model proxy's)."""


def configured_secrets(project: ProjectFile) -> tuple[SecretSource, ...]:
    return tuple(dict.fromkeys(_secrets(project)))


def _secrets(project: ProjectFile) -> Iterator[SecretSource]:
    credentials = [
        *(agent.credential for agent in project.agents),
        *(tool.credential for tool in project.tools),
        *(server.credential for server in project.mcp_servers),
    ]
    for credential in credentials:
        if credential is not None:
            yield SecretSource(credential.value, credential.env)
    for agent in project.agents:
        if agent.lane in MODEL_LANES:
            yield SecretSource(env=agent.api_key_env or DEFAULT_KEY_ENV)
        yield from _named_secrets(agent.env)
    for server in project.mcp_servers:
        yield from _named_secrets(server.env)
        yield from _named_secrets(server.headers)


def _named_secrets(values: Mapping[str, str]) -> Iterator[SecretSource]:
    for name, value in values.items():
        if is_secret_name(name):
            yield SecretSource(value=value)
