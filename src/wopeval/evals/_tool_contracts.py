"""Tool contracts: an MCP server's `tools/list` as a run was offered it, and what changed since.

No RFC covers this: it is this host's own rule (docs/agents.md, "Tool
contracts"). A run keeps, per MCP server it used, the listing the server gave
(each tool's name, description and input schema), identified by its digest.
An eval task replaying that run compares the tools its agent is offered now
with the recorded ones, tool by tool, under the tools' canonical
`<server>:<tool>` names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from wopeval.evals._canonical import args_hash, json_equal
from wopeval.wire.task_detail import ToolChange, ToolField


@dataclass(frozen=True)
class ListedTool:
    """One `tools/list` entry: the name the server lists it by, what it does, what it takes."""

    name: str
    description: str
    input_schema: dict[str, JsonValue]

    def document(self) -> dict[str, JsonValue]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }


@dataclass(frozen=True)
class ServerListing:
    """An MCP server's listing, its tools by name; `digest` identifies it across runs."""

    server: str
    tools: tuple[ListedTool, ...]
    digest: str = field(compare=False)

    @classmethod
    def of(cls, server: str, tools: Iterable[ListedTool]) -> ServerListing:
        ordered = tuple(sorted(tools, key=lambda tool: tool.name))
        return cls(server, ordered, listing_digest(ordered))

    @classmethod
    def from_document(cls, server: str, document: list[Any]) -> ServerListing:
        """A stored listing (`document()`) read back."""
        return cls.of(
            server,
            (
                ListedTool(entry["name"], entry["description"], entry["inputSchema"])
                for entry in document
            ),
        )

    def document(self) -> list[JsonValue]:
        """The listing as stored: `[{name, description, inputSchema}]` by name."""
        return [tool.document() for tool in self.tools]

    def canonical(self) -> dict[str, ListedTool]:
        """Its tools by the host's canonical name, `<server>:<tool>`."""
        return {f"{self.server}:{tool.name}": tool for tool in self.tools}


def listing_digest(tools: Iterable[ListedTool]) -> str:
    """`sha256:` + hex of the JCS `[{name, description, inputSchema}]`, in the order given.

    The server's name is not part of it: a listing is stored once per tenant,
    whichever servers gave it.
    """
    return args_hash([tool.document() for tool in tools])


def tools_changed(
    recorded: Mapping[str, ListedTool], offered: Mapping[str, ListedTool]
) -> list[ToolChange]:
    """Each tool, by canonical name, that the agent is offered otherwise than recorded.

    `added`: offered now and not in the recording; `removed`: recorded and not
    offered now; `changed`: offered both times, with another description or
    another input schema (compared as JSON values). Sorted by tool name.
    """
    changes: list[ToolChange] = []
    for name in sorted(recorded.keys() | offered.keys()):
        before, now = recorded.get(name), offered.get(name)
        if before is None:
            changes.append(ToolChange(tool=name, kind="added"))
        elif now is None:
            changes.append(ToolChange(tool=name, kind="removed"))
        else:
            fields: list[ToolField] = []
            if before.description != now.description:
                fields.append("description")
            if not json_equal(before.input_schema, now.input_schema):
                fields.append("inputSchema")
            if fields:
                changes.append(ToolChange(tool=name, kind="changed", fields=fields))
    return changes


def describe_tool_changes(changes: Iterable[ToolChange]) -> str:
    """One line: `orders:refund changed (inputSchema), orders:export added`."""
    return ", ".join(
        f"{change.tool} {change.kind}" + (f" ({', '.join(change.fields)})" if change.fields else "")
        for change in changes
    )
