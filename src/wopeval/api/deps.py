"""Dependencies as named aliases (G11)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from wopeval.api.host import Host
from wopeval.engine.host import Engine
from wopeval.wire import ids
from wopeval.wire.principal import Principal


def get_host(request: Request) -> Host:
    host: Host = request.app.state.host
    return host


def get_engine(request: Request) -> Engine:
    return get_host(request).engine


def get_principal(
    request: Request, authorization: Annotated[str | None, Header()] = None
) -> Principal:
    return get_host(request).auth.authenticate(authorization)


HostDep = Annotated[Host, Depends(get_host)]
EngineDep = Annotated[Engine, Depends(get_engine)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]


def path_run_id(segment: str, principal: Principal) -> str:
    """The bound run id of a `{runId}` path segment, checked against the caller's tenant."""
    return ids.run_id_from_path(segment, principal.tenant)
