"""HTTP tools: the agent's args go out as JSON; a credential is added only at egress.

The credential never passes through the tool boundary's record or events: the
boundary hands this tool the args the agent passed, and only the outgoing
request carries the secret (RFC 0252 §D, SR-1). An error answer's body (its
first `ERROR_BODY_CHARS`) is the tool error's `details.body`, so the agent and
the record say why; a server that echoes the request's headers there has its
echo of the credential cut by the boundary (engine/recording/redaction.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import httpx
from pydantic import JsonValue

from wopeval.tools.base import Secret, ToolContext, ToolFailure

ERROR_BODY_CHARS = 2000
"""Characters of an error answer's body kept in the tool error (`details.body`)."""


@dataclass(frozen=True)
class Credential:
    header: str
    secret: Secret
    template: str = "{secret}"

    def render(self) -> str:
        return self.template.replace("{secret}", self.secret.reveal())


class HttpTool:
    def __init__(
        self,
        name: str,
        url: str,
        *,
        client: httpx.AsyncClient,
        method: Literal["GET", "POST", "PUT"] = "POST",
        credential: Credential | None = None,
    ) -> None:
        self.name = name
        self._url = url
        self._method = method
        self._client = client
        self._credential = credential

    async def call(self, args: JsonValue, context: ToolContext) -> JsonValue:
        headers = {"Accept": "application/json"}
        if self._credential is not None:
            headers[self._credential.header] = self._credential.render()
        try:
            if self._method == "GET":
                params = args if isinstance(args, dict) else {}
                response = await self._client.get(
                    self._url, params={k: str(v) for k, v in params.items()}, headers=headers
                )
            else:
                response = await self._client.request(
                    self._method, self._url, json=args, headers=headers
                )
        except httpx.TimeoutException as exc:
            raise ToolFailure("tool_timeout", f"{self.name} timed out", retryable=True) from exc
        except httpx.HTTPError as exc:
            raise ToolFailure(
                "tool_unreachable", f"{self.name} could not be reached", retryable=True
            ) from exc
        if response.status_code >= 400:
            raise ToolFailure(
                f"http_{response.status_code}",
                f"{self.name} answered HTTP {response.status_code}",
                details={"body": response.text[:ERROR_BODY_CHARS]} if response.text else None,
                retryable=response.status_code == 429 or response.status_code >= 500,
            )
        try:
            body: JsonValue = response.json()
        except ValueError:
            body = response.text
        return body
