"""The digest of what a host can run: its catalog and the project's files.

A run records the digest of the catalog it was created under, and a queue
worker runs only the work of runs whose digest is its own (worker/queues.py):
a fleet whose processes load different projects, or different versions of
one, fails visibly instead of grading a run with code it was not created for.

The digest covers what the catalog declares (agents and how the boundary
treats them, every tool's listing, graders, workflows, suites), the wopeval
version, and the bytes of every file in the project's directory (hidden
entries and `__pycache__` left out), so a changed agent's source changes it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import JsonValue

from wopeval import __version__, evals
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.project import manifest_path


def catalog_digest(catalog: Catalog, project: Path | None) -> str:
    """`sha256:` + hex of the JCS document of the catalog and the project's files."""
    document: JsonValue = {
        "wopeval": __version__,
        "agents": [
            {
                "id": spec.agent_id,
                "lane": spec.lane,
                "record": spec.record,
                "wireContent": spec.wire_content,
                "tools": [name for name in spec.tools] if spec.tools is not None else None,
            }
            for spec in sorted(catalog.agents.all(), key=lambda spec: spec.agent_id)
        ],
        "tools": catalog.tools.offered(None).digest,
        "graders": [name for name in sorted(catalog.graders)],
        "judges": {name: catalog.judges[name].rules.digest for name in sorted(catalog.judges)},
        "workflows": [
            catalog.workflows[name].model_dump(mode="json") for name in sorted(catalog.workflows)
        ],
        "suites": [suite.document for suite in catalog.suites],
        "files": _files(project),
    }
    return evals.args_hash(document)


def _files(project: Path | None) -> dict[str, JsonValue]:
    if project is None:
        return {}
    root = manifest_path(project).parent.resolve()
    found: dict[str, JsonValue] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if path.is_file():
            found[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found
