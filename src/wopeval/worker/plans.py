"""A queued eval's plan, made again from the store where the run executes."""

from __future__ import annotations

from collections import OrderedDict

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.eval_runs.eval_plan import EvalPlan, rebuild_plan
from wopeval.store import RunHandle, UnitOfWork


async def load_plan(uow: UnitOfWork, run: RunHandle, catalog: Catalog) -> EvalPlan | None:
    """The plan of an eval run (None for a workflow run), from its row and derived copies."""
    stored = await uow.runs.plan(run)
    if stored is None:
        return None
    listings = await uow.tool_listings.by_digests(run.tenant, stored.served_digests())
    return rebuild_plan(stored, await uow.derived_fixtures.rows(run), catalog, listings)


class Plans:
    """Plans already made in this process, by run: every job of a run shares one."""

    def __init__(self, catalog: Catalog, limit: int = 64) -> None:
        self._catalog = catalog
        self._limit = limit
        self._plans: OrderedDict[str, EvalPlan] = OrderedDict()

    async def get(self, uow: UnitOfWork, run: RunHandle) -> EvalPlan | None:
        run_id = run.run_id
        plan = self._plans.get(run_id)
        if plan is not None:
            self._plans.move_to_end(run_id)
            return plan
        plan = await load_plan(uow, run, self._catalog)
        if plan is not None:
            self._plans[run_id] = plan
            if len(self._plans) > self._limit:
                self._plans.popitem(last=False)
        return plan
