"""The JSON answer every route gives: Starlette's, except for content no UTF-8 holds.

A run's outputs, an annotation, a summary are what an agent or a tool gave, and may hold
a lone surrogate (`"\\ud800"`, legal JSON text an agent may decide). Starlette's
`JSONResponse` writes its text unescaped and encodes it as UTF-8, which raises for one:
the route answered 500. The answer is then written escaped (`json_text.dumped`), the same
value in ASCII; ordinary content is rendered as Starlette renders it, with no extra work.
Routes import this class, never Starlette's or FastAPI's (ruff's banned-api, pyproject).
"""

from __future__ import annotations

from typing import Any

from starlette import responses

from wopeval.wire import json_text


class JSONResponse(responses.JSONResponse):
    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json_text.dumped(content, separators=(",", ":")).encode("utf-8")
