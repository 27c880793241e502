"""Project files the tests write: one workflow per agent, as docs/agents.md shows them."""

from __future__ import annotations

import json
from pathlib import Path


def write_agent_workflow(directory: Path, agent_id: str, workflow_id: str | None = None) -> str:
    """Write `workflows/<id>.json` under `directory`: one `core.agent` node running `agent_id`.
    The id defaults to the agent's with dots as dashes; returns it."""
    workflow_id = workflow_id or agent_id.replace(".", "-")
    workflow = {
        "id": workflow_id,
        "nodes": [{"id": "agent", "type": "core.agent", "agentId": agent_id}],
    }
    (directory / "workflows" / f"{workflow_id}.json").write_text(json.dumps(workflow))
    return workflow_id
