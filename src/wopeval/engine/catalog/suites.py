"""Publishing a tenant's suite versions (docs/design.md §3): a version once published never
changes, and the version parsed here is kept for its first eval run (`ParsedSuites`)."""

from __future__ import annotations

from typing import Any

from wopeval import evals
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.runlog.steps import now
from wopeval.store import Store
from wopeval.wire import errors, json_text
from wopeval.wire.principal import Principal
from wopeval.wire.suite import parse_suite


async def publish_suite(
    store: Store, catalog: Catalog, principal: Principal, document: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """Publish a suite version for the caller's tenant: its stored document, and whether
    it is new (publishing the same document again is no change; another is refused).

    The version parsed here is kept (`ParsedSuites`), so its first eval run does not
    validate the document a second time."""
    suite = parse_suite(document)
    evals.check_known_graders(suite, catalog.graders)
    stored = suite.to_document()
    # Written once here, for the store and for every eval run of this version while it is
    # kept (`KeptSuite.text`): each run's plan embeds the same text rather than writing
    # the suite again (a 1,000-task suite is ~2 MB of JSON).
    text = json_text.written(stored)
    async with store.transaction() as uow:
        created = await uow.suites.put(
            principal.tenant,
            suite.suiteId,
            suite.version,
            stored if text is None else json_text.embedded(text),
            now(),
        )
        if not created:
            existing = await uow.suites.get(principal.tenant, suite.suiteId, suite.version)
            if existing != stored:
                raise errors.SuiteVersionExists()
    catalog.parsed_suites.keep(principal.tenant, suite, stored, text)
    return stored, created
