"""The one token check of an invocation's endpoints (MCP, model proxy), and the access log's
masking of every token.

An invocation's token (engine/recording/grants.py) is in the path of each of its
endpoints: `/host/wopeval/mcp/{token}`, `/host/wopeval/openai/{token}/v1/…`,
`/host/wopeval/anthropic/{token}/v1/messages`. Both endpoints resolve it here,
the same way: token → the running invocation → its tenant. The token alone
suffices; a client may present it again as its key (`Authorization: Bearer`,
`x-api-key`, as the model SDKs do); any other key it presents, in either
header, must be an API key of the token's tenant. An unknown or ended token,
a key that is no key, a key of another tenant: one 404, the endpoint's own,
whatever the reason, so a refusal says nothing of what exists.
"""

from __future__ import annotations

import logging
import re

from starlette.datastructures import Headers

from wopeval.api.deps import InvocationAccess
from wopeval.engine.recording.grants import CAPABILITY_PATHS
from wopeval.engine.recording.invocation import Invocation
from wopeval.wire import errors


def invocation_for(
    token: str, headers: Headers, access: InvocationAccess, refused: str
) -> Invocation:
    """The running invocation `token` names, if every key presented with it (in the
    request's `headers`) is the token itself or of its tenant; else `NotFound(refused)`."""
    invocation = access.grants.resolve(token, None)
    if invocation is None:
        raise errors.NotFound(refused)
    for key in _presented_keys(headers, token):
        try:
            tenant = access.auth.authenticate(key).tenant
        except errors.Unauthenticated:
            raise errors.NotFound(refused) from None
        if access.grants.resolve(token, tenant) is None:
            raise errors.NotFound(refused)
    return invocation


def _presented_keys(headers: Headers, token: str) -> set[str]:
    """The keys presented besides the token, as `Authorization` values."""
    api_key = headers.get("x-api-key")
    presented = {headers.get("authorization"), api_key and f"Bearer {api_key}"}
    return {key for key in presented if key} - {f"Bearer {token}"}


class RedactTokens(logging.Filter):
    """Keeps invocation tokens out of the access log, for any request target, malformed
    ones included: whatever follows a token path's prefix (`/host/wopeval/mcp/…`, in any
    case, after any number of slashes) and any run of the token's alphabet as long as a
    token (a token pasted anywhere else) are logged as `…`."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple):
            masked = tuple(
                mask_tokens(arg) if isinstance(arg, str) and len(arg) >= _SHORTEST else arg
                for arg in args
            )
            if masked != args:
                record.args = masked
        return True


TOKEN_CHARS = 43
"""The length of `secrets.token_urlsafe(32)`: 32 bytes in unpadded URL-safe base64."""
_AFTER_PREFIX = re.compile(
    "(?i)("
    + "|".join(re.escape(path).replace("/", "/+") for path in CAPABILITY_PATHS)
    + r")[^/?#\s\"]+"
)
_TOKEN_SHAPED = re.compile(rf"[A-Za-z0-9_-]{{{TOKEN_CHARS},}}")
_SHORTEST = min(min(len(path) for path in CAPABILITY_PATHS) + 1, TOKEN_CHARS)
"""The shortest text either pattern can match (a prefix and one character, or a token's
length): a shorter argument of a line (its client, method, HTTP version) is not searched,
which leaves a proxied exchange's line two searches instead of eight (issue 29)."""


def mask_tokens(text: str) -> str:
    """`text` with every token, where a request target can carry one, replaced by `…`."""
    return _TOKEN_SHAPED.sub("…", _AFTER_PREFIX.sub(r"\1…", text))


REDACT_TOKENS = RedactTokens()
