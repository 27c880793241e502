"""Agent lanes behind one interface."""

from __future__ import annotations

from wopeval.agents.base import (
    Agent,
    AgentContext,
    AgentFailed,
    AgentSpec,
    Lane,
    ModelReplay,
    ToolCallError,
    ToolSpec,
    WireContent,
)
from wopeval.agents.command import CommandAgent, ProcessLaunch
from wopeval.agents.exchange import (
    LiveAnswer,
    LiveModelCall,
    ModelAnswer,
    ModelCallFailed,
    ModelReplayMiss,
    ModelRequest,
    ModelUpstream,
    ToolCallRequest,
    normalised_answer,
)
from wopeval.agents.http import HttpAgent
from wopeval.agents.llm import OpenAIAgent, OpenAILane
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
    "SCRIPTED_AGENT_ID",
    "Agent",
    "AgentContext",
    "AgentFailed",
    "AgentFunction",
    "AgentRegistry",
    "AgentSpec",
    "CommandAgent",
    "HttpAgent",
    "Lane",
    "LiveAnswer",
    "LiveModelCall",
    "ModelAnswer",
    "ModelCallFailed",
    "ModelReplay",
    "ModelReplayMiss",
    "ModelRequest",
    "ModelUpstream",
    "OpenAIAgent",
    "OpenAILane",
    "ProcessLaunch",
    "PythonAgent",
    "ScriptedAgent",
    "ToolCallError",
    "ToolCallRequest",
    "ToolSpec",
    "WireContent",
    "normalised_answer",
]
