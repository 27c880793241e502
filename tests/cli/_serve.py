"""A live `wopeval serve` holding a run: the gate project, its gated run, the announcement.

`GATE_PROJECT`'s workflow keeps a run active until the test releases it, so a
test can hold a live host with an active run while it starts other processes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from openwop_client.wire_id import project_id

from _processes import START_DEADLINE_SECONDS

GATE_PROJECT = Path(__file__).parent / "gate_project"
GATE_WORKFLOW = "cli-gate"


@dataclass
class GatedRun:
    """A run of `GATE_WORKFLOW`: active from `entered` until `release()`."""

    run_id: str
    entered: Path
    gate: Path

    @classmethod
    def start(cls, http: httpx.Client, directory: Path) -> GatedRun:
        entered, gate = directory / "entered", directory / "gate"
        body = {"workflowId": GATE_WORKFLOW, "inputs": {"entered": str(entered), "gate": str(gate)}}
        response = http.post("/runs", json=body)
        assert response.status_code == 201, response.text
        run = cls(response.json()["runId"], entered, gate)
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while not entered.exists():
            assert time.monotonic() < deadline, "the gate agent never started"
            time.sleep(0.02)
        return run

    def release(self) -> None:
        self.gate.touch()

    def status(self, http: httpx.Client) -> str:
        return str(self.snapshot(http)["status"])

    def snapshot(self, http: httpx.Client) -> dict[str, Any]:
        response = http.get(f"/runs/{project_id(self.run_id)}")
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    def wait_terminal(self, http: httpx.Client) -> dict[str, Any]:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while True:
            snapshot = self.snapshot(http)
            if snapshot["status"] not in ("pending", "running"):
                return snapshot
            assert time.monotonic() < deadline, f"run {self.run_id} never ended: {snapshot}"
            time.sleep(0.05)


def announcement(data_dir: Path) -> dict[str, Any] | None:
    path = data_dir / "serve.json"
    if not path.exists():
        return None
    document: dict[str, Any] = json.loads(path.read_text())
    return document
