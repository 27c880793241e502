"""API keys → tenants: stored and held only as SHA-256 hashes, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac

from wopeval.wire import errors
from wopeval.wire.principal import Principal


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_id(key: str) -> str:
    """A short, non-secret name for a key, used as the owner's subjectId."""
    return "key-" + hashlib.sha256(b"wopeval-key-id:" + key.encode("utf-8")).hexdigest()[:16]


class Authenticator:
    def __init__(self, entries: list[tuple[str, str, str]]) -> None:
        self._entries = [(bytes.fromhex(h), kid, tenant) for h, kid, tenant in entries]

    def authenticate(self, authorization: str | None) -> Principal:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise errors.Unauthenticated()
        presented = hashlib.sha256(token.strip().encode("utf-8")).digest()
        found: Principal | None = None
        # Every stored hash is compared, so timing does not depend on which one matches.
        for stored, kid, tenant in self._entries:
            if hmac.compare_digest(presented, stored):
                found = Principal(tenant=tenant, key_id=kid)
        if found is None:
            raise errors.Unauthenticated()
        return found
