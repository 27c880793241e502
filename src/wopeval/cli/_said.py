"""What a run's agents did and said, rendered: idle warnings, the invocations, their stderr.

Wire values in, Rich renderables out (G13): the idle agents from the snapshot's
`wopeval.run` extension, the invocations and what each agent said from the
host's invocation routes (`client.fetch_invocations`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wopeval import client, evals
from wopeval.cli._render import run_facts

if TYPE_CHECKING:
    # An annotation only: a listing reads no invocation models (issue 28).
    from wopeval.wire.invocations import InvocationLine

RUN_STDERR_LINES = 40
"""Lines of a failed agent's stderr `wopeval run` prints (`runs show` prints all it kept)."""


def idle_warnings(snapshot: client.RunSnapshot) -> list[str]:
    """One line per idle agent of a completed workflow run (docs/recordings.md)."""
    lines = []
    listed = run_facts(snapshot).get("idle")
    for idle in listed if isinstance(listed, list) else []:
        if not isinstance(idle, dict):
            continue
        reasons = idle.get("reasons")
        said = evals.describe_idle(
            str(idle.get("agentId")), [str(r) for r in reasons] if isinstance(reasons, list) else []
        )
        lines.append(
            f"warning: {said} (node {idle.get('nodeId')}): the run recorded nothing a replay "
            "could test; `suites from-runs` leaves it out unless --include-idle"
        )
    return lines


def said_blocks(
    invocations: client.RunInvocations, *, last_lines: int | None = None
) -> list[RenderableType]:
    """What each agent said, under a line naming its invocation; `last_lines` cuts each to
    its end."""
    blocks: list[RenderableType] = []
    for line in invocations.lines:
        text = invocations.said.get(line.invocationId)
        if text is None:
            continue
        rows = text.splitlines()
        header = f"stderr of agent {line.agentId} (invocation {line.invocationId}"
        if last_lines is not None and len(rows) > last_lines:
            header += f", its last {last_lines} lines; `wopeval runs show` has more"
            rows = rows[-last_lines:]
        blocks.append(Text(header + "):", style="bold"))
        blocks.append(Text("\n".join(rows), style="dim"))
    return blocks


def invocations_table(lines: Sequence[InvocationLine]) -> Table:
    table = Table(title="Invocations", title_justify="left", header_style="bold")
    for name in ("Invocation", "Agent", "Where", "Outcome", "Idle", "Error", "Stderr"):
        table.add_column(name, overflow="fold")
    for line in lines:
        where = line.nodeId or ""
        if line.taskId is not None:
            where = f"{line.taskId} #{line.trial}"
        error = line.error
        table.add_row(
            line.invocationId,
            line.agentId + (" (delegate)" if line.delegate else ""),
            where,
            Text(line.outcome, style="red" if line.outcome == "failed" else "green"),
            Text(", ".join(line.idle or ()), style="yellow"),
            "" if error is None else error.type + (f": {error.message}" if error.message else ""),
            line.stderr or "",
        )
    return table


def invocations_section(invocations: client.RunInvocations, *, eval_run: bool) -> Group:
    """`runs show`'s part: the invocations (an eval run's failed ones only) and what each
    agent said."""
    shown = [line for line in invocations.lines if not eval_run or line.outcome == "failed"]
    if not shown:
        return Group()
    return Group(invocations_table(shown), *said_blocks(invocations))
