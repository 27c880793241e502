"""The http lane: an agent that runs as a service, one POST per invocation.

The contract (docs/agents.md): the host POSTs `{"agentId", "invocationId",
"input", "mcpUrl", "openaiBaseUrl", "openaiApiKey", "anthropicBaseUrl",
"anthropicApiKey"}` to `url` (with the lane's credential, if any, added at
egress) and reads `{"decision": …}` from a 2xx JSON answer. The agent reaches
its tools through the MCP endpoint at `mcpUrl` and its model through the
recording proxy at `openaiBaseUrl` or `anthropicBaseUrl` (presenting the
matching key, the invocation's token). An HTTP error, a timeout or an answer
without `decision` fails the invocation with the reason; an error answer's
body is what the agent said (`AgentContext.keep_output`), kept with the
invocation like a process's stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from pydantic import JsonValue

from wopeval.agents.base import AgentContext, AgentFailed, AgentOutput

ERROR_BODY_BYTES = 64 * 1024
"""Bytes of an error answer's body handed to the host (its last ones), as for stderr."""

EgressHeaders = Callable[[], dict[str, str]]
"""Renders the lane's credential header at egress (the secret stays with the tools layer)."""


class HttpAgent:
    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient,
        timeout_seconds: float,
        credential: EgressHeaders | None = None,
    ) -> None:
        self._url = url
        self._http = http
        self._timeout = timeout_seconds
        self._credential = credential

    async def invoke(self, context: AgentContext) -> JsonValue:
        body = {
            "agentId": context.agent_id,
            "invocationId": context.invocation_id,
            "input": context.input,
            "mcpUrl": context.mcp_url,
            "openaiBaseUrl": context.openai_base_url,
            "openaiApiKey": context.openai_api_key,
            "anthropicBaseUrl": context.anthropic_base_url,
            "anthropicApiKey": context.anthropic_api_key,
        }
        headers = {"Accept": "application/json"}
        if self._credential is not None:
            headers.update(self._credential())
        try:
            response = await self._http.post(
                self._url, json=body, headers=headers, timeout=self._timeout
            )
        except httpx.TimeoutException:
            raise AgentFailed(f"the agent service did not answer in {self._timeout:g}s") from None
        except httpx.HTTPError as exc:
            raise AgentFailed(
                f"the agent service could not be reached ({type(exc).__name__})"
            ) from None
        if response.status_code >= 400:
            said = response.content
            context.keep_output(AgentOutput(said[-ERROR_BODY_BYTES:], len(said)))
            raise AgentFailed(f"the agent service answered HTTP {response.status_code}")
        try:
            document: Any = response.json()
        except ValueError:
            raise AgentFailed("the agent service's answer is not JSON") from None
        if not isinstance(document, dict) or "decision" not in document:
            raise AgentFailed("the agent service's answer has no `decision`")
        decision: JsonValue = document["decision"]
        return decision
