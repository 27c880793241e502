"""Fixture-runs maps (`{taskId: runId}`, RFC 0252 §B `fixtureRuns`) read from a file.

`wopeval suites from-runs` writes one beside the suite it makes; `wopeval
recordings import` keeps each run's hex id under the importing tenant. So a
map made on production names `prod/<hex>` while CI's host knows `dev/<hex>`:
the CLI moves each id to the caller's tenant, keeping its hex part.
"""

from __future__ import annotations

import json
from pathlib import Path

from wopeval.client._wire import ClientError


def read_fixture_map(path: Path) -> dict[str, str]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ClientError(f"{path} is not JSON: {exc}") from None
    if not isinstance(document, dict) or not all(
        isinstance(task, str) and isinstance(run, str) for task, run in document.items()
    ):
        raise ClientError(f"{path} is not a {{taskId: runId}} map")
    return document


def under_tenant(runs: dict[str, str], tenant: str) -> dict[str, str]:
    """Each run id moved to `tenant`, its hex part kept (an id without a tenant gets one)."""
    return {task: f"{tenant}/{run.rpartition('/')[2]}" for task, run in runs.items()}
