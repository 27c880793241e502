"""Tenant-bound ids and their one-segment path projection (identity.md §5, RFC 0184)."""

from __future__ import annotations

import random
import re
import uuid

from wopeval.wire import errors

_TENANT = re.compile(r"^(anon:)?[A-Za-z0-9._~-]{1,128}$")
_RUN_ID = re.compile(r"^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$")
_PASSTHROUGH = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
# Hosts emit uppercase escapes; a client's lowercase one still names the same byte.
_ESCAPE = re.compile(r"~([0-9A-Fa-f]{2})")
AUTHOR_ID_PATTERN = r"^[A-Za-z0-9._~:-]{1,128}$"
"""agentId, workflowId and nodeId grammar (ids.schema.json)."""
_PROJECTED_BYTE = r"(?:[A-Za-z0-9._-]|~[0-7][0-9A-Fa-f])"

PROJECTED_RUN_ID_PATTERN = rf"^{_PROJECTED_BYTE}+~2[Ff]{_PROJECTED_BYTE}+$"
"""A `{runId}` segment as `/openapi.json` describes it: the projection of `<tenant>/<id>`.

Escapes are of ASCII bytes only (every byte of the id grammar is ASCII), so a
segment of this shape always decodes to a tenant-bound id, whose answer is then
the run, 403 or 404. The legacy `%2F` form is accepted too, though not described.
"""


def is_tenant_id(value: str) -> bool:
    return bool(_TENANT.match(value))


def is_run_id(value: str) -> bool:
    return bool(_RUN_ID.match(value))


def mint_run_id(tenant: str) -> str:
    # The opaque part never contains `~`: a host must not mint one (identity.md §5).
    return f"{tenant}/{uuid.uuid4().hex}"


def mint_local_id() -> str:
    """An opaque id unique within a run (events, invocations, tool calls); not a secret.

    `uuid4` makes a system call per id; these are minted tens of thousands of
    times per eval run (three or four a tool call), where a PRNG draw of the same width
    serves as well (the draw bound once). Its 16 bytes, most significant first, in hex:
    the zero-padded `%032x` of the draw, at half the cost of formatting the integer.
    """
    return _draw(128).to_bytes(16, "big").hex()


_draw = random.getrandbits


def project(bound_id: str) -> str:
    """Render a bound id as one path segment: bytes outside [A-Za-z0-9._-] become ~XX."""
    return "".join(chr(b) if b in _PASSTHROUGH else f"~{b:02X}" for b in bound_id.encode("utf-8"))


def unproject(segment: str) -> str:
    """Decode a path segment's ~XX escapes; a `~` not followed by two hex digits is refused.

    Legacy `%2F` never reaches this function: the ASGI layer has already
    percent-decoded the path, and the path-id middleware keeps such a slash
    inside one segment.
    """
    out = bytearray()
    pos = 0
    while pos < len(segment):
        char = segment[pos]
        if char == "~":
            match = _ESCAPE.match(segment, pos)
            if match is None:
                raise errors.ValidationFailed(
                    "A `~` in a path id must be followed by two hex digits."
                )
            out.append(int(match.group(1), 16))
            pos = match.end()
        else:
            out += char.encode("utf-8")
            pos += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.ValidationFailed("A path id does not decode to UTF-8.") from exc


def run_id_from_path(segment: str, tenant: str, field: str = "runId") -> str:
    """Decode a `{runId}` path segment (or a run id in that form named `field`) for the caller.

    A segment that decodes to no tenant-bound id (a bare opaque id, or one
    projected twice, `~7E2F` decoding to `~2F`) is 400: this host serves no 1.x
    major, so identity.md §5 refuses the bare form with `validation_error`. A
    foreign tenant segment is 403 `id_tenant_mismatch` whether or not such a
    run exists (runs.md §Identity); an id that does not fit the grammar is 404,
    as no run can have it.
    """
    run_id = unproject(segment)
    owner, sep, _ = run_id.partition("/")
    if not sep:
        twice = " (it is projected twice)" if _ESCAPE.search(run_id) else ""
        raise errors.ValidationFailed(
            f"A run id in a path must be tenant-bound, <tenant>/<id>{twice}.",
            details={"field": field},
        )
    if owner != tenant:
        raise errors.IdTenantMismatch()
    if not is_run_id(run_id):
        raise errors.NotFound("No such run.")
    return run_id


def run_id_from_body(value: str, tenant: str) -> str:
    """A bound run id named in a request body, checked as a path id is (identity.md §5)."""
    owner, sep, _ = value.partition("/")
    if sep and owner != tenant:
        raise errors.IdTenantMismatch()
    if not is_run_id(value):
        raise errors.NotFound("No such run.")
    return value
