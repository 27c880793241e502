"""Dashboard sessions: an API key exchanged once for a session cookie, held server-side.

The key is checked by the host's `Authenticator` at sign-in and never kept:
the browser holds only an opaque session token (an HttpOnly, SameSite=Strict
cookie, Secure when the request came over TLS), and this process holds the
token's hash with the principal it stands for and the session's CSRF token.
Sessions live in memory: a restarted host signs everyone out.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

from wopeval.wire.principal import Principal

COOKIE = "wopeval_session"
COOKIE_PATH = "/ui"
LIFETIME_SECONDS = 12 * 3600
"""A session ends this long after sign-in, used or not."""
MAX_SESSIONS = 10_000
"""Beyond this, the oldest sessions end first (memory stays bounded)."""


@dataclass(frozen=True)
class Session:
    principal: Principal
    csrf: str
    """The token every state-changing form of this session carries."""
    expires_at: float
    """On the monotonic clock."""

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented, self.csrf)


class Sessions:
    def __init__(self, *, lifetime: float = LIFETIME_SECONDS, limit: int = MAX_SESSIONS) -> None:
        self._lifetime = lifetime
        self._limit = limit
        self._by_hash: OrderedDict[str, Session] = OrderedDict()

    def open(self, principal: Principal) -> tuple[str, Session]:
        """A new session for `principal`: the token for the cookie, and the session."""
        token = secrets.token_urlsafe(32)
        session = Session(principal, secrets.token_urlsafe(32), time.monotonic() + self._lifetime)
        self._by_hash[_digest(token)] = session
        while len(self._by_hash) > self._limit:
            self._by_hash.popitem(last=False)
        return token, session

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        key = _digest(token)
        session = self._by_hash.get(key)
        if session is not None and session.expires_at <= time.monotonic():
            del self._by_hash[key]
            return None
        return session

    def close(self, token: str | None) -> None:
        if token:
            self._by_hash.pop(_digest(token), None)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
