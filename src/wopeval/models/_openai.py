"""What OpenAI's two APIs (Chat Completions, Responses) share: the key's header and the
error shape `{"error": {"message", "type", "code"}}`, which OpenAI clients read."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from wopeval.models._api import ModelApi, Provider, json_object


class OpenAIApi(ModelApi):
    provider: Provider = "openai"

    def error_body(self, status: int, message: str, code: str) -> dict[str, JsonValue]:
        kind = "invalid_request_error" if status < 500 else "api_error"
        return {"error": {"message": message, "type": kind, "code": code}}

    def error_fields(self, body: object) -> dict[str, JsonValue]:
        found = json_object(json_object(body).get("error"))
        return {k: found[k] for k in ("type", "code") if isinstance(found.get(k), str)}

    def egress_headers(self, key: str | None, sent: Mapping[str, str]) -> dict[str, str]:
        return {} if key is None else {"Authorization": f"Bearer {key}"}
