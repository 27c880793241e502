"""Agent lanes behind one interface."""

from __future__ import annotations

from wopeval.agents._dialect import DEFAULT_MAX_TURNS, DEFAULT_RETRIES, LlmLane
from wopeval.agents._retry import (
    Refusal,
    retried,
    shown_url,
    status_refusal,
    transport_refusal,
)
from wopeval.agents.base import (
    LLM_LANES,
    Agent,
    AgentContext,
    AgentFailed,
    AgentOutput,
    AgentSpec,
    Lane,
    ModelReplay,
    NamedBy,
    ToolCallError,
    ToolSpec,
    WireContent,
)
from wopeval.agents.command import CommandAgent, ProcessLaunch
from wopeval.agents.http import HttpAgent
from wopeval.agents.llm import LlmAgent
from wopeval.agents.python import AgentFunction, PythonAgent
from wopeval.agents.scripted import SCRIPTED_AGENT_ID, ScriptedAgent


class AgentRegistry:
    def __init__(self) -> None:
        self._agents: dict[str, AgentSpec] = {}

    def add(self, spec: AgentSpec) -> None:
        if spec.agent_id in self._agents:
            raise ValueError(f"agent {spec.agent_id!r} is registered twice")
        self._agents[spec.agent_id] = spec

    def get(self, agent_id: str) -> AgentSpec | None:
        return self._agents.get(agent_id)

    def all(self) -> list[AgentSpec]:
        return [self._agents[k] for k in sorted(self._agents)]


__all__ = [
    "DEFAULT_MAX_TURNS",
    "DEFAULT_RETRIES",
    "LLM_LANES",
    "SCRIPTED_AGENT_ID",
    "Agent",
    "AgentContext",
    "AgentFailed",
    "AgentFunction",
    "AgentOutput",
    "AgentRegistry",
    "AgentSpec",
    "CommandAgent",
    "HttpAgent",
    "Lane",
    "LlmAgent",
    "LlmLane",
    "ModelReplay",
    "NamedBy",
    "ProcessLaunch",
    "PythonAgent",
    "Refusal",
    "ScriptedAgent",
    "ToolCallError",
    "ToolSpec",
    "WireContent",
    "retried",
    "shown_url",
    "status_refusal",
    "transport_refusal",
]
