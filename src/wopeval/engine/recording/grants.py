"""Capabilities for the endpoints of running invocations: MCP and the model proxy.

An agent that runs outside the host (a process, a service) reaches its tools
through an MCP endpoint the host serves for that one invocation
(`/host/wopeval/mcp/{token}`), and its model through a recording model
proxy: OpenAI's APIs at `/host/wopeval/openai/{token}/v1`, Anthropic's at
`/host/wopeval/anthropic/{token}`. The token in
their URLs is the capability: 32 random bytes, bound to the invocation and
its tenant, valid from the agent's first use until the invocation ends. It is
never logged, never put on an event or in a record, and an ended or unknown
token is refused exactly like a token of another tenant.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Generic, TypeVar

Holder = TypeVar("Holder")
"""What a token names: the running invocation (generic, so this module needs not import it)."""

MCP_PATH = "/host/wopeval/mcp/"
OPENAI_PATH = "/host/wopeval/openai/"
ANTHROPIC_PATH = "/host/wopeval/anthropic/"
CAPABILITY_PATHS = (MCP_PATH, OPENAI_PATH, ANTHROPIC_PATH)
"""Every path whose next segment is a token (the access log hides it)."""


@dataclass(frozen=True, slots=True)
class Grant(Generic[Holder]):
    tenant: str
    invocation: Holder


class InvocationGrants(Generic[Holder]):
    """The tokens of the invocations running in this process."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        """Where agents reach this host; the embedded host sets it once its port is known."""
        self._grants: dict[str, Grant[Holder]] = {}

    def grant(self, tenant: str, invocation: Holder) -> str:
        token = secrets.token_urlsafe(32)
        self._grants[token] = Grant(tenant, invocation)
        return token

    def revoke(self, token: str) -> None:
        self._grants.pop(token, None)

    def resolve(self, token: str, tenant: str | None) -> Holder | None:
        """The invocation `token` names, if it runs and (with `tenant` given) is that tenant's."""
        grant = self._grants.get(token)
        if grant is None or (tenant is not None and tenant != grant.tenant):
            return None
        return grant.invocation

    def url(self, token: str) -> str:
        return f"{self.base_url}{MCP_PATH}{token}"

    def openai_base_url(self, token: str) -> str:
        """The model proxy's base URL, as OpenAI clients take it (`OPENAI_BASE_URL`)."""
        return f"{self.base_url}{OPENAI_PATH}{token}/v1"

    def anthropic_base_url(self, token: str) -> str:
        """The Anthropic proxy's base URL, as Anthropic's SDK takes it (`ANTHROPIC_BASE_URL`;
        the SDK adds `/v1/messages`)."""
        return f"{self.base_url}{ANTHROPIC_PATH}{token}"

    def __len__(self) -> int:
        return len(self._grants)
