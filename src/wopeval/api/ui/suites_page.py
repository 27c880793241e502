"""The suites page: each suiteId's versions, their documents, and the eval runs of each.

The tenant's own suites (`SuitesRepo.list`) come first, then the host's
(seeded and project suites), as `GET /host/wopeval/suites` lists them; a
version's document is the one `find_suite` resolves for the tenant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Response

from wopeval.api.deps import HostDep
from wopeval.api.ui._render import Chrome, render
from wopeval.api.ui._route import Advice, Refused, UiRoute
from wopeval.api.ui.deps import SessionDep
from wopeval.engine.eval_runs.eval_plan import find_suite
from wopeval.store import RunFilter, RunRecord
from wopeval.wire import errors
from wopeval.wire.runs import RunKind

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

RUNS_PER_VERSION = 20


@dataclass(frozen=True)
class Version:
    version: str
    scope: str
    """`tenant` (published by this tenant) or `host` (seeded or from the project)."""
    task_count: int


@dataclass(frozen=True)
class SuiteEntry:
    suite_id: str
    href: str
    versions: list[Version]


@dataclass(frozen=True)
class VersionDetail:
    version: Version
    document: dict[str, Any]
    runs: list[RunRecord]
    """The newest eval runs of this version."""
    more_href: str
    """The runs page filtered to this suite."""


@dataclass(frozen=True)
class SuitesView:
    suites: list[SuiteEntry]


@dataclass(frozen=True)
class SuiteView:
    suite_id: str
    versions: list[VersionDetail]


@router.get("/suites")
async def suites_page(session: SessionDep, host: HostDep) -> Response:
    known = await _known(host, session.principal.tenant)
    entries = [
        SuiteEntry(suite_id, f"/ui/suites/{quote(suite_id, safe='')}", versions)
        for suite_id, versions in known.items()
    ]
    return render("suites.html", Chrome(session, "suites", "Suites"), SuitesView(entries))


@router.get("/suites/{suiteId}")
async def suite_page(suiteId: str, session: SessionDep, host: HostDep) -> Response:
    tenant = session.principal.tenant
    versions = (await _known(host, tenant)).get(suiteId)
    if not versions:
        raise Refused(errors.NotFound("No such suite."), Advice.SUITE)
    details = []
    async with host.store.reading() as uow:
        for version in versions:
            document = await find_suite(f"{suiteId}@{version.version}", tenant, host.catalog, uow)
            runs = await uow.runs.page(
                tenant,
                limit=RUNS_PER_VERSION,
                before_seq=None,
                where=RunFilter(
                    kind=RunKind.EVAL.value, suite_id=suiteId, suite_version=version.version
                ),
            )
            details.append(
                VersionDetail(
                    version,
                    document or {},
                    runs,
                    "/ui/runs?" + urlencode({"kind": "eval", "suite": suiteId}),
                )
            )
    return render(
        "suite.html", Chrome(session, "suites", f"Suite {suiteId}"), SuiteView(suiteId, details)
    )


async def _known(host: HostDep, tenant: str) -> dict[str, list[Version]]:
    """Every suiteId the tenant can run, with its versions (the tenant's own first)."""
    async with host.store.reading() as uow:
        own = await uow.suites.list(tenant)
    found: dict[str, list[Version]] = {}
    listed = [(document, "tenant") for document in own]
    listed += [(suite.document, "host") for suite in host.catalog.suites]
    for document, scope in listed:
        versions = found.setdefault(str(document["suiteId"]), [])
        version = str(document["version"])
        if all(known.version != version for known in versions):
            versions.append(Version(version, scope, len(document.get("tasks") or ())))
    return dict(sorted(found.items()))
