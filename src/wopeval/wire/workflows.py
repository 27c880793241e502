"""Workflow documents: nodes and edges, with the node types this host executes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

NodeType = Literal["core.noop", "core.agent"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Node(_Closed):
    """One step of a workflow: an agent's invocation, or nothing."""

    id: str = Field(pattern=r"^[A-Za-z0-9._~:-]{1,128}$")
    """The nodeId, unique in the workflow."""
    type: NodeType
    """`core.noop` does nothing; `core.agent` invokes an agent."""
    agentId: str | None = None
    """For `core.agent`: the agent to invoke."""
    inputs: JsonValue | None = None
    """For `core.agent`: the agent's input; the run's `inputs` when absent."""


class Edge(_Closed):
    """`from` runs before `to`; nothing passes along an edge."""

    from_: str = Field(alias="from")
    """The upstream nodeId."""
    to: str
    """The downstream nodeId."""


class Workflow(_Closed):
    """A workflow document: its nodes, run in dependency order, and the edges that order them."""

    id: str = Field(pattern=r"^[A-Za-z0-9._~:-]{1,128}$")
    """The workflowId."""
    name: str | None = None
    """A human name."""
    version: str | None = None
    """The author's version label."""
    nodes: list[Node] = Field(min_length=1)
    """The nodes, executed in dependency order."""
    edges: list[Edge] = Field(default_factory=list)
    """Dependencies between nodes."""

    @model_validator(mode="after")
    def _check_graph(self) -> Workflow:
        ids = [node.id for node in self.nodes]
        if len(set(ids)) != len(ids):
            raise ValueError("node ids must be unique")
        for edge in self.edges:
            if edge.from_ not in ids or edge.to not in ids:
                raise ValueError(f"edge {edge.from_}->{edge.to} names an unknown node")
        for node in self.nodes:
            if node.type == "core.agent" and not node.agentId:
                raise ValueError(f"node {node.id}: core.agent needs agentId")
        self.order()
        return self

    def order(self) -> list[Node]:
        """Nodes in a dependency order (stable by declaration); a cycle is refused."""
        remaining = {node.id: node for node in self.nodes}
        upstream = {
            node.id: {e.from_ for e in self.edges if e.to == node.id} for node in self.nodes
        }
        done: set[str] = set()
        ordered: list[Node] = []
        while remaining:
            ready = [n for n in remaining.values() if upstream[n.id] <= done]
            if not ready:
                raise ValueError("the workflow's edges form a cycle")
            for node in ready:
                ordered.append(node)
                done.add(node.id)
                del remaining[node.id]
        return ordered
