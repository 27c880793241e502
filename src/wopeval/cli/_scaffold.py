"""What `wopeval init` writes: a project's files, rendered from the templates in `scaffold/`.

Pure: the choices in, `{relative path: text}` out; nothing here touches the disk
or asks anything. The kinds are the lanes of docs/agents.md (an `llm` agent is a
`command`-lane program on one framework of docs/frameworks.md), the tool kinds its
tool sources.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined

KINDS = {
    "python": "an in-process python agent (the python lane)",
    "command": "a program of its own, any language, stdin/stdout (the command lane)",
    "llm": "an LLM agent on a framework, in its own process (the command lane)",
    "http": "a service wopeval POSTs each invocation to (the http lane)",
}
FRAMEWORKS = {
    "openai": ("the plain openai SDK", "agent_openai.py.j2", ""),
    "openai-agents": ("the OpenAI Agents SDK", "agent_openai_agents.py.j2", "openai-agents"),
    "pydantic-ai": ("PydanticAI", "agent_pydantic_ai.py.j2", "pydantic-ai-slim[mcp,openai]"),
}
"""Each framework `init` scaffolds: its title, its agent's template, what CI installs beside
wopeval (the plain SDK and `mcp` come with it)."""
MATRIX_ONLY = ("anthropic", "langgraph", "smolagents", "llamaindex", "adk", "crewai")
"""Frameworks docs/frameworks.md runs that `init` does not scaffold (yet): named in the
refusal, so a user learns where their recipe is."""
TOOLS = {
    "python": "an async python callable",
    "http": "an HTTP endpoint",
    "mcp": "an MCP server over stdio (the official mcp package)",
}
AGENT_FILES = {
    "python": ("agent.py", "agent_python.py.j2"),
    "command": ("agent.py", "agent_command.py.j2"),
    "http": ("agent_service.py", "agent_service.py.j2"),
}
TOOL_FILES = {
    "python": ("tools.py", "tools.py.j2"),
    "http": ("tool_service.py", "tool_service.py.j2"),
    "mcp": ("mcp_server.py", "mcp_server.py.j2"),
}
THE_ORDER = {"order_id": "A-1001", "status": "delivered", "total": 40.0}
"""What the scaffold's tool answers for the smoke task's order (the suite's fixture)."""


class ScaffoldError(ValueError):
    """A choice `init` cannot scaffold; the message lists the known ones."""


@dataclass(frozen=True)
class Choices:
    kind: str
    tool: str
    framework: str | None = None
    agent_port: int = 8800
    tool_port: int = 8801

    def checked(self) -> Choices:
        """These choices, or a `ScaffoldError` naming what is known instead."""
        if self.kind not in KINDS:
            raise ScaffoldError(f"unknown kind {self.kind!r}; known: {', '.join(KINDS)}")
        if self.tool not in TOOLS:
            raise ScaffoldError(f"unknown tool {self.tool!r}; known: {', '.join(TOOLS)}")
        if self.kind != "llm" and self.framework is not None:
            raise ScaffoldError("--framework is for --kind llm only")
        if self.kind == "llm" and self.framework not in FRAMEWORKS:
            known = ", ".join(FRAMEWORKS)
            if self.framework in MATRIX_ONLY:
                raise ScaffoldError(
                    f"init does not scaffold {self.framework} yet (docs/frameworks.md has its "
                    f"recipe for a command agent); it scaffolds: {known}"
                )
            raise ScaffoldError(f"unknown framework {self.framework!r}; known: {known}")
        return self

    @property
    def agent_package(self) -> str:
        """What the agent imports that wopeval does not install (pip's spelling), or ""."""
        return FRAMEWORKS[self.framework][2] if self.framework else ""


def render(choices: Choices) -> dict[str, str]:
    """The project's files by path (relative, `/`-separated), each rendered for `choices`."""
    choices = choices.checked()
    templates = Environment(
        loader=PackageLoader("wopeval.cli", "scaffold"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # the output is source code and TOML, not HTML
    )
    mcp = choices.tool == "mcp"
    tool_name = "orders:lookup_order" if mcp else "lookup_order"
    title, agent_template, _ = FRAMEWORKS.get(choices.framework or "", ("", "", ""))
    extra = choices.agent_package
    values = {
        "kind": choices.kind,
        "tool": choices.tool,
        "framework": choices.framework,
        "framework_title": title,
        "summary": f"{KINDS[choices.kind]}, with {TOOLS[choices.tool]}",
        "tool_name": tool_name,
        # docs/agents.md, "Tool names": how the MCP endpoint and a model are offered it.
        "offered_name": tool_name.replace(":", "__"),
        "tool_glob": "orders:*" if mcp else tool_name,
        "agent_port": choices.agent_port,
        "tool_port": choices.tool_port,
        # An MCP tool's result as the boundary records it: content blocks and the object.
        "fixture_response": (
            {
                "content": [{"type": "text", "text": json.dumps(THE_ORDER)}],
                "structuredContent": THE_ORDER,
            }
            if mcp
            else THE_ORDER
        ),
        "extra_install": f' "{extra}"' if extra else "",
    }
    files = {
        "wopeval.toml": "wopeval.toml.j2",
        "workflows/my-agent.json": "workflow.json.j2",
        "suites/smoke.json": "smoke.json.j2",
        ".github/workflows/wopeval.yml": "wopeval.yml.j2",
        ".gitignore": "gitignore.j2",
        TOOL_FILES[choices.tool][0]: TOOL_FILES[choices.tool][1],
    }
    if choices.kind == "llm":
        files["agent.py"] = agent_template
        files["prompt.md"] = "prompt.md.j2"
    else:
        files[AGENT_FILES[choices.kind][0]] = AGENT_FILES[choices.kind][1]
    return {path: templates.get_template(name).render(values) for path, name in files.items()}
