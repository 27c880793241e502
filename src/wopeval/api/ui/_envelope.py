"""The dashboard's refusal pages for what is refused before any page runs.

Kept apart from the pages (api/ui/_route.py): this middleware wraps the host from its
start, while the pages are built on the first request under `/ui`.
"""

from __future__ import annotations

import json

from starlette.datastructures import MutableHeaders
from starlette.types import Message, Send

from wopeval.api.ui._security import UnderDashboard


class EnvelopePages(UnderDashboard):
    """Outside the host's other middleware: a JSON error envelope answered under
    `/ui` becomes its refusal page.

    The routes answer with pages themselves; what reaches here is refused before any page
    runs (a body over the limit or a NUL in the target, by the request guard; another
    major's `OpenWOP-Version`; a missing static file), where a browser would otherwise
    show raw JSON.
    """

    def wrapped(self, path: str, send: Send) -> Send:
        held: Message | None = None
        body = bytearray()

        async def send_as_page(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if message["status"] >= 400 and headers.get("content-type") == "application/json":
                    held = message
                    return
            elif held is not None and message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    await _send_page(held, bytes(body), send)
                return
            await send(message)

        return send_as_page


async def _send_page(start: Message, envelope: bytes, send: Send) -> None:
    """The refusal page of `envelope`, with the status and headers it was answered with."""
    # Imported on the first refusal: the pages' modules and templates are built on the first
    # request under /ui (api/ui/__init__.py), not at the host's start.
    from wopeval.api.ui._render import Chrome, Refusal, render
    from wopeval.api.ui._route import Advice

    status: int = start["status"]
    advice = {400: Advice.INPUT, 404: Advice.PAGE, 413: Advice.SHORTER}.get(status, Advice.OTHER)
    try:
        said = json.loads(envelope)
        code, message = str(said["error"]), str(said["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "error", "The host could not answer this request."
    refusal = Refusal(status, code, message, advice.value)
    page = render("refusal.html", Chrome(None, "none", f"{status} {code}"), refusal, status=status)
    headers = MutableHeaders(scope=start)
    del headers["content-type"]
    del headers["content-length"]
    headers["content-type"] = page.headers["content-type"]
    headers["content-length"] = str(len(page.body))
    await send(start)
    await send({"type": "http.response.body", "body": page.body, "more_body": False})
