"""Which tasks of an eval may reach a live tool (`wopeval eval --offline` refuses them).

RFC 0252 §B/§D: a task named in `fixtureRuns` is served its source's recorded
calls under `onMiss: fail`, so none of its calls runs live. RFC 0244 §D: a task
whose own fixtures say `onMiss: live` runs a call no entry answers live; a task
with no `fixtures` at all runs every call live; and `live-shadow` ignores
fixtures altogether (RFC 0081 §D).
"""

from __future__ import annotations

from collections.abc import Collection

from wopeval.wire.suite import Suite


def tasks_reaching_live_tools(
    suite: Suite, fixture_runs: Collection[str], modes: Collection[str]
) -> list[str]:
    """The suite's tasks, in order, whose calls a live tool could answer."""
    if "live-shadow" in modes:
        return [task.taskId for task in suite.tasks]
    return [
        task.taskId
        for task in suite.tasks
        if task.taskId not in fixture_runs
        and (task.fixtures is None or task.fixtures.on_miss == "live")
    ]
