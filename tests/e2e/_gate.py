"""Runs that stay active until the test lets them go.

The project's gate agent touches `entered` when it starts and then waits
until the test creates `gate`, so a run stays active exactly as long as the
test needs it to. `Gate` is the pair of files itself, for a gate agent whose
input a test writes (an eval task's input, a workflow's inputs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openwop_client.types import CreateRunRequest

from ._server import ServerHandle

GATE_WORKFLOW = "e2e-gate"
DEADLINE_SECONDS = 30.0


@dataclass
class GatedRun:
    run_id: str
    entered: Path
    gate: Path

    def wait_entered(self) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not self.entered.exists():
            assert time.monotonic() < deadline, "the gate agent never started"
            time.sleep(0.02)

    def release(self) -> None:
        self.gate.touch()


def start_gated_run(server: ServerHandle, directory: Path) -> GatedRun:
    entered, gate = directory / "entered", directory / "gate"
    request = CreateRunRequest(
        workflowId=GATE_WORKFLOW, inputs={"entered": str(entered), "gate": str(gate)}
    )
    run = GatedRun(server.client().runs_create(request).runId, entered, gate)
    run.wait_entered()
    return run


@dataclass(frozen=True)
class Gate:
    """Two files: the gate agent touches `entered` when it waits, and returns once `gate` exists."""

    entered: Path
    gate: Path

    def inputs(self, answer: str = "released", calls: list[Any] | None = None) -> dict[str, Any]:
        return {
            "calls": calls or [],
            "entered": str(self.entered),
            "gate": str(self.gate),
            "answer": answer,
        }

    def wait_entered(self) -> None:
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not self.entered.exists():
            assert time.monotonic() < deadline, "the gate agent never started waiting"
            time.sleep(0.02)

    def release(self) -> None:
        self.gate.touch()
