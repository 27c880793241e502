"""Dependencies as named aliases (G11)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from wopeval.api.auth import Authenticator
from wopeval.api.served import ServedHost
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.host import Engine
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation
from wopeval.wire import ids
from wopeval.wire.principal import Principal


def host_of(request: Request) -> ServedHost:
    host: ServedHost = request.app.state.host
    return host


# The dependencies are `async def` although none awaits: FastAPI runs a plain `def`
# dependency in a worker thread, a thread hop on every request.


async def get_host(request: Request) -> ServedHost:
    return host_of(request)


async def get_engine(request: Request) -> Engine:
    return host_of(request).engine


# Declares the scheme in /openapi.json; the key itself is checked by the Authenticator.
_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`.")


async def get_principal(
    request: Request,
    _scheme: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> Principal:
    return host_of(request).auth.authenticate(request.headers.get("authorization"))


@dataclass(frozen=True)
class InvocationAccess:
    """What the per-invocation endpoints (MCP, model proxy) need; an API process and a
    queue worker each serve them for the invocations they run."""

    grants: InvocationGrants[Invocation]
    auth: Authenticator
    """Checks a key a request also carries (it must be of the token's tenant)."""
    upstreams: UpstreamPools
    """The model proxy's connections to the agents' model servers."""


HostDep = Annotated[ServedHost, Depends(get_host)]
EngineDep = Annotated[Engine, Depends(get_engine)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]


def path_run_id(segment: str, principal: Principal) -> str:
    """The bound run id of a `{runId}` path segment, checked against the caller's tenant."""
    return ids.run_id_from_path(segment, principal.tenant)
