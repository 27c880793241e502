"""A start-up that fails for a reason the user can fix is reported as that reason alone.

A project that does not load (`ProjectError`: the file, the field, what is
wrong), a database that cannot be reached (`DatabaseUnreachable`: the
database's own message) or one another process owns (`LeaseHeld`, which the
hosts raise as `hosting/ownership.py`'s `DatabaseOwned`) is an
expected failure, not a bug: `wopeval serve` and the CLI's embedded host print
its message, not a Python traceback. Anything else still logs its traceback.

Starlette reports a failed lifespan to the server as the formatted traceback
(`lifespan.startup.failed`), and uvicorn logs that message as it is. So the
app's lifespan notes an expected failure in a `StartupFailure`, and the
`ExpectedStartupFailures` middleware replaces the traceback in that message by
the noted failure's own text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wopeval.engine.catalog.project import ProjectError
from wopeval.store import DatabaseUnreachable, LeaseHeld

EXPECTED = (ProjectError, DatabaseUnreachable, LeaseHeld)
"""The start-up failures whose message says everything a user needs."""


class StartupFailure:
    """The expected failure of this app's start-up, once there is one."""

    def __init__(self) -> None:
        self.cause: BaseException | None = None

    @contextlib.contextmanager
    def noting(self) -> Iterator[None]:
        """Note an expected failure raised in the block (it is re-raised unchanged)."""
        try:
            yield
        except EXPECTED as exc:
            self.cause = exc
            raise


class ExpectedStartupFailures:
    """Pure ASGI: a lifespan start-up failure that was expected is reported by its message."""

    def __init__(self, app: ASGIApp, *, failure: StartupFailure) -> None:
        self.app = app
        self.failure = failure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def reporting(message: Message) -> None:
            cause = self.failure.cause
            if message["type"] == "lifespan.startup.failed" and cause is not None:
                message = {**message, "message": str(cause)}
            await send(message)

        await self.app(scope, receive, reporting)
