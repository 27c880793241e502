"""The secrets a project names, for the one redaction of what its agents say
(engine/recording/redaction.py).

Every credential the manifest configures (tools', MCP servers' and http agents'
`credential`), the API key each model upstream reads (`api_key_env` and
`anthropic_api_key_env`, by default `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`), and
the values of `env` and `headers` entries whose name says they are secret (`API_KEY`,
`TOKEN`, `Authorization`, …). A secret
named by an environment variable is read when text is redacted, as egress reads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from wopeval.engine.catalog.project_file import ProjectFile
from wopeval.engine.catalog.project_llm import DEFAULTS, LANE_PROVIDERS
from wopeval.engine.recording.redaction import SecretSource, is_secret_name
from wopeval.models import APIS

PROXY_LANES = frozenset({"python", "command", "http"})
"""The lanes whose agents get the model proxy, with an OpenAI and an Anthropic upstream."""


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
        provider = LANE_PROVIDERS.get(agent.lane)
        if provider is not None:
            yield SecretSource(env=agent.api_key_env or DEFAULTS[provider].key_env)
        if agent.lane in PROXY_LANES:
            yield SecretSource(env=agent.api_key_env or DEFAULTS["openai"].key_env)
            yield SecretSource(env=agent.anthropic_api_key_env or DEFAULTS["anthropic"].key_env)
        yield from _named_secrets(agent.env)
    for judge in project.judges:
        # A judge's key is redacted like an agent's: it must never reach a record or a page.
        yield SecretSource(env=judge.api_key_env or DEFAULTS[APIS[judge.api].provider].key_env)
    for server in project.mcp_servers:
        yield from _named_secrets(server.env)
        yield from _named_secrets(server.headers)


def _named_secrets(values: Mapping[str, str]) -> Iterator[SecretSource]:
    for name, value in values.items():
        if is_secret_name(name):
            yield SecretSource(value=value)
