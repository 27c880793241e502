"""The conformance scripted agent (docs/design.md §4): it makes the listed calls, then decides."""

from __future__ import annotations

from pydantic import JsonValue

from wopeval.agents.base import AgentContext, ToolCallError

SCRIPTED_AGENT_ID = "conformance.scripted-agent"


class ScriptedAgent:
    """Input `{"calls": [{"tool", "args"}], "answer": X}` → decides X, or `{"error": code}`."""

    async def invoke(self, context: AgentContext) -> JsonValue:
        script = context.input if isinstance(context.input, dict) else {}
        calls = script.get("calls") or []
        if not isinstance(calls, list):
            return {"error": "invalid_script"}
        for call in calls:
            tool = call.get("tool") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(tool, str):
                return {"error": "invalid_script"}
            try:
                await context.call_tool(tool, call.get("args"))
            except ToolCallError as failure:
                return {"error": failure.code}
        return script.get("answer")
