"""Dashboard sessions: an API key exchanged once for a session cookie, held server-side.

The key is checked by the host's `Authenticator` at sign-in and never kept:
the browser holds only an opaque session token (an HttpOnly, SameSite=Strict
cookie, Secure when the request came over TLS), and this process holds the
token's hash with the principal it stands for and the session's CSRF token.
Sessions live in memory: a restarted host signs everyone out. Each tenant has
its own cap, so however often one tenant signs in it ends only its own oldest
sessions, never another tenant's.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from wopeval.settings import DashboardSettings
from wopeval.wire.principal import Principal

COOKIE = "wopeval_session"
COOKIE_PATH = "/ui"

Clock = Callable[[], float]
"""Seconds on a clock that never goes back (`time.monotonic`); tests pass one they move."""


@dataclass(frozen=True)
class Session:
    principal: Principal
    csrf: str
    """The token every state-changing form of this session carries."""
    expires_at: float
    """On the sessions' clock."""

    def csrf_matches(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented, self.csrf)


class Sessions:
    def __init__(self, settings: DashboardSettings, clock: Clock) -> None:
        self.lifetime = settings.session_seconds
        self._per_tenant = settings.sessions_per_tenant
        self._clock = clock
        self._by_hash: dict[str, Session] = {}
        # Each tenant's token hashes, oldest first: sessions all live as long, so the
        # oldest is also the first to expire.
        self._tenants: dict[str, OrderedDict[str, None]] = {}

    def open(self, principal: Principal) -> tuple[str, Session]:
        """A new session for `principal`: the token for the cookie, and the session."""
        now = self._clock()
        token = secrets.token_urlsafe(32)
        session = Session(principal, secrets.token_urlsafe(32), now + self.lifetime)
        owned = self._tenants.get(principal.tenant, OrderedDict())
        while owned:
            oldest = next(iter(owned))
            if self._by_hash[oldest].expires_at > now and len(owned) < self._per_tenant:
                break
            self._forget(oldest)
        key = _digest(token)
        self._by_hash[key] = session
        self._tenants.setdefault(principal.tenant, owned)[key] = None
        return token, session

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        key = _digest(token)
        session = self._by_hash.get(key)
        if session is not None and session.expires_at <= self._clock():
            self._forget(key)
            return None
        return session

    def close(self, token: str | None) -> None:
        if token:
            self._forget(_digest(token))

    def _forget(self, key: str) -> None:
        session = self._by_hash.pop(key, None)
        if session is None:
            return
        owned = self._tenants[session.principal.tenant]
        del owned[key]
        if not owned:
            del self._tenants[session.principal.tenant]


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
