"""What the model boundary hands back and forth besides requests and answers.

An exchange asked live (`LiveModelCall`) ends in a `LiveAnswer` or raises
`ModelCallFailed`; under model replay a request the source never made raises
`ModelReplayMiss` and reaches no upstream. `ModelUpstream` is where an agent's
model requests go — an OpenAI and an Anthropic base URL, each with its key —
and renders the real key at egress only, in the header of the request's API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from pydantic import JsonValue

from wopeval.models._api import ModelAnswer, ModelRequest, Provider


class ModelCallFailed(Exception):
    """The model could not be asked or did not answer: an API error, a timeout, no upstream.

    `error` is what is recorded and shown: the HTTP status and the error's
    `type` and `code` when the server gave them — never its message text, which
    may quote a fragment of the key.
    """

    def __init__(self, reason: str, error: dict[str, JsonValue], attempts: int = 1) -> None:
        super().__init__(reason)
        self.error = error
        self.attempts = attempts


class ModelReplayMiss(Exception):
    """Model replay: the source run never made this request; nothing reached the upstream.

    The message names the nearest recorded request and how this one differs from it.
    """


@dataclass(frozen=True)
class LiveAnswer:
    answer: ModelAnswer
    attempts: int = 1


LiveModelCall = Callable[[], Awaitable[LiveAnswer]]
"""Asks the upstream model; raises `ModelCallFailed`. Called only when no recording serves."""


@dataclass(frozen=True)
class Endpoint:
    """One provider's server: its base URL and, at egress only, its key (`api_key()` reveals
    it; None: the server needs none)."""

    base_url: str
    """OpenAI's includes `/v1` (`https://api.openai.com/v1`); Anthropic's does not
    (`https://api.anthropic.com`): each API's path is added as its SDK adds it."""
    api_key: Callable[[], str] | None


@dataclass(frozen=True)
class UpstreamRequest:
    url: str
    headers: dict[str, str]


@dataclass(frozen=True)
class ModelUpstream:
    """Where an agent's model proxy forwards: one endpoint per provider."""

    endpoints: Mapping[Provider, Endpoint]
    timeout_seconds: float

    def endpoint(self, provider: Provider) -> Endpoint:
        return self.endpoints[provider]

    def request(self, request: ModelRequest, sent: Mapping[str, str]) -> UpstreamRequest:
        """The upstream URL of `request`'s API and its headers, the real key rendered now."""
        api = request.api
        endpoint = self.endpoints[api.provider]
        key = None if endpoint.api_key is None else endpoint.api_key()
        headers = {"Accept": "application/json", **api.egress_headers(key, sent)}
        return UpstreamRequest(endpoint.base_url + api.upstream_path, headers)
