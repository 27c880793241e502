"""The eval options a host is configured with as well as asked for on the wire.

Kept apart from the run and task models that use them: the settings read these types,
and a command that only reads its settings (a listing through a running serve) should
not load those models (issue 28; docs/decisions.md, "Imported where used").
"""

from __future__ import annotations

from typing import Literal

EvalMode = Literal["golden", "rubric", "adversarial", "regression", "live-shadow"]
"""RFC 0251's eval modes (`evalModes`)."""

ToolsChangedPolicy = Literal["report", "fail"]
"""What an eval task whose MCP tools changed since its recording comes to: `report` it (the
task's `toolsChanged`), or `fail` it closed, unrun (docs/agents.md, "Tool contracts")."""
