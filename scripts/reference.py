"""Write docs/reference.md: every table and field of `wopeval.toml`, of workflow files and of
suite files, read off the models the host validates them with, so the page cannot drift.

    python scripts/reference.py            # rewrite docs/reference.md (`make reference`)
    python scripts/reference.py --check    # exit 1 when docs/reference.md is out of date

Types and constraints come from each model's JSON schema; defaults from its fields; each
field's description from its `Field(description=...)`, else its attribute docstring (the
house style, docs/design.md); each field's example from its `Field(examples=[...])`, else
from the format's whole example below, which the models validate before anything is written.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
import textwrap
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from wopeval.engine.catalog.project_file import ProjectFile
from wopeval.wire.suite import Suite, parse_suite
from wopeval.wire.workflows import Workflow

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference.md"
REGENERATE = "make reference"
ITEM = "[]"
KEY = "<key>"
"""Path segments past a field: an array's items, a table's (object's) values by key."""

PROJECT_EXAMPLE = """\
# Every table of wopeval.toml; a project needs only what it uses (`agents`, most often).
workflows = ["workflows/*.json"]
suites = ["suites/*.json"]

[[agents]]
id = "support.triage"
lane = "python"
callable = "support.agent:decide"
tools = ["support:*", "orders:*"]
record = true
wire_content = "full"
description = "Sorts a support ticket: refund, wait or escalate"
# Its model calls go through the recording model proxy to these upstreams.
base_url = "https://api.openai.com/v1"
api_key_env = "OPENAI_API_KEY"
anthropic_base_url = "https://api.anthropic.com"
anthropic_api_key_env = "ANTHROPIC_API_KEY"
record_model = true
model_replay = "off"

[[agents]]
id = "support.cli"
lane = "command"
command = ["python", "agent.py"]
cwd = "agents"
env = { LOG_LEVEL = "info" }
timeout_seconds = 120

[[agents]]
id = "support.service"
lane = "http"
url = "http://127.0.0.1:9200/invoke"
credential = { header = "Authorization", template = "Bearer {secret}", env = "AGENT_TOKEN" }

[[agents]]
id = "support.llm"
lane = "openai"
model = "gpt-4.1-mini"
system_prompt_file = "prompts/support.md"
temperature = 0.0
max_tokens = 800
max_turns = 10
parallel_tool_calls = true
response_format = "json"
retries = 2
tools = ["support:lookup", "orders:*"]

[[agents]]
id = "support.claude"
lane = "anthropic"
model = "claude-sonnet-4-5"
system_prompt = "You sort support tickets. Answer with JSON."

[[tools]]
name = "support:lookup"
kind = "python"
callable = "support.tools:lookup"
description = "Finds a customer's tickets"
input_schema = { type = "object", properties = { query = { type = "string" } } }

[[tools]]
name = "support:crm"
kind = "http"
url = "http://127.0.0.1:9100/crm"
method = "POST"
credential = { header = "X-Api-Key", template = "{secret}", value = "local-dev-key" }

[[mcp_servers]]
name = "orders"
command = ["python", "orders_server.py"]
env = { ORDERS_CALL_LOG = "orders-calls.log" }
cwd = "."
credential = { env = "ORDERS_TOKEN", server_env = "ORDERS_API_TOKEN" }
tools = ["lookup_order", "refund"]
timeout_seconds = 10.0

[[mcp_servers]]
name = "tickets"
url = "https://mcp.example.com/mcp"
headers = { "X-Team" = "support" }
credential = { env = "TICKETS_TOKEN", header = "Authorization", template = "Bearer {secret}" }

[[graders]]
id = "refund-check"
callable = "support.graders:refund_check"
timeout_seconds = 60.0

[[judges]]
id = "support.judge"
model = "gpt-4.1-mini"
api = "chat"
base_url = "https://api.openai.com/v1"
api_key_env = "OPENAI_API_KEY"
prompt_file = "prompts/judge.md"
scale = 4
threshold = 0.7
suites = ["support.evals.replies"]
gate = true
temperature = 0.0
max_tokens = 1024
timeout_seconds = 60.0
retries = 2

[[judges]]
id = "support.catch-all"
model = "claude-sonnet-4-5"
api = "messages"
prompt = "Judge this answer to $input against: $criteria. Score each on $scale."
choices = ["fail", "partial", "pass"]

[calibration]
kappa_min = 0.6
min_labels = 30

[[evals]]
name = "ci-triage"
suite = "support.evals.triage@1.0.0"
agent = "support.triage"
fixture_runs = "suites/triage.fixture-runs.json"
baseline = "latest:main"
modes = ["golden", "regression"]
trials = 3
offline = true
tools_changed = "fail"
tags = ["pr"]

[models."gpt-4.1-mini"]
input_per_mtok = 0.40
output_per_mtok = 1.60
"""

WORKFLOW_EXAMPLE = """\
{
  "id": "support.triage",
  "name": "Support triage",
  "version": "1.2.0",
  "nodes": [
    {"id": "classify", "type": "core.agent", "agentId": "support.triage"},
    {"id": "digest", "type": "core.agent", "agentId": "support.llm", "inputs": {"report": "daily"}},
    {"id": "done", "type": "core.noop"}
  ],
  "edges": [{"from": "classify", "to": "digest"}, {"from": "digest", "to": "done"}]
}
"""

SUITE_EXAMPLE = """\
{
  "suiteId": "support.evals.triage",
  "version": "1.0.0",
  "targetAgentId": "support.triage",
  "modes": ["golden", "rubric", "regression"],
  "allowedModels": ["general"],
  "thresholds": {"passScore": 0.9, "maxCostUsd": 0.5, "maxP95LatencyMs": 20000},
  "trials": 1,
  "passPolicy": "all",
  "tasks": [
    {
      "taskId": "refund-small",
      "input": {"order_id": "A-1001"},
      "expected": {
        "kind": "golden",
        "match": {"strategy": "exact", "value": {"action": "refund", "amount": 40}}
      },
      "fixtures": {
        "toolResponses": [
          {
            "tool": "orders:lookup_order",
            "args": {"order_id": "A-1001"},
            "argsMatch": "subset",
            "response": {"status": "delivered", "total": 40}
          },
          {"tool": "orders:refund", "response": {"code": "over_limit"}, "isError": true}
        ],
        "memorySeed": [{"key": "customer_tier", "value": "gold"}],
        "onMiss": "fail"
      },
      "trials": 3,
      "passPolicy": "majority"
    },
    {
      "taskId": "priority",
      "input": "My order never arrived and I need it today",
      "expected": {
        "kind": "golden",
        "match": {"strategy": "json-path", "paths": [{"path": "$.priority", "value": "urgent"}]}
      }
    },
    {
      "taskId": "refund-rule",
      "input": {"order_id": "A-1003"},
      "expected": {
        "kind": "golden",
        "match": {"strategy": "custom", "grader": "refund-check", "value": {"maxAmount": 50}}
      }
    },
    {
      "taskId": "reply-tone",
      "input": "Where is my parcel?",
      "expected": {
        "kind": "rubric",
        "rubric": [
          {"criterion": "Names the order's status", "weight": 0.6},
          {"criterion": "Polite and short", "weight": 0.4}
        ]
      }
    },
    {
      "taskId": "lookup-first",
      "input": {"order_id": "A-1002"},
      "expected": {
        "kind": "trajectory",
        "calls": [
          {"tool": "orders:lookup_order", "args": {"order_id": "A-1002"}, "argsMatch": "exact"},
          {"tool": "orders:refund"}
        ],
        "order": "subset"
      }
    }
  ]
}
"""


@dataclass(frozen=True)
class Format:
    """One file format: its root model, its whole example and how the host reads it."""

    key: str
    title: str
    one: str
    """The format's whole example, as the heading names it."""
    language: str
    model: type[BaseModel]
    example: str
    intro: str
    validate: Callable[[object], object]
    """How the host checks a document of this format (the example must pass it)."""


FORMATS = (
    Format(
        key="project",
        title="`wopeval.toml`",
        one="`wopeval.toml`",
        language="toml",
        model=ProjectFile,
        example=PROJECT_EXAMPLE,
        intro=(
            "The project's manifest: `wopeval serve --project DIR` (and every command's "
            "`--project`, or `WOPEVAL_PROJECT`) reads `DIR/wopeval.toml`, or the `.toml` "
            "file it names. An unknown table or field stops the host at start, naming the "
            "file and the field (`agents[0].lane: …`). Relative paths are relative to the "
            "project directory, whose modules are importable by their dotted names "
            '(`callable = "support.agent:decide"`).'
        ),
        validate=ProjectFile.model_validate,
    ),
    Format(
        key="workflow",
        title="Workflow files",
        one="a workflow file",
        language="json",
        model=Workflow,
        example=WORKFLOW_EXAMPLE,
        intro=(
            "A workflow is what `wopeval run WORKFLOW_ID --input JSON` and `POST /runs` "
            "(`workflowId`, `inputs`) start. The project's `workflows` globs name its "
            "workflow files (JSON, one workflow each). Its nodes run one at a time in "
            "dependency order (declaration order where the edges leave a choice): a "
            "`core.agent` node invokes the agent of `[[agents]]` its `agentId` names, with "
            "the node's `inputs`, else the run's `inputs`, and its output is "
            '`{"decision": …}`; a `core.noop` node does nothing. Edges order the nodes '
            "and pass nothing: a node does not see another's output. The run's outputs are "
            "each node's output by node id; an agent that fails fails the run "
            "(`agent_failed`), as does an `agentId` the project does not declare "
            "(`agent_not_found`). A repeated node id, an edge naming an unknown node, a "
            "cycle, or a `core.agent` node without `agentId` stops the host at start."
        ),
        validate=Workflow.model_validate,
    ),
    Format(
        key="suite",
        title="Suite files",
        one="a suite file",
        language="json",
        model=Suite,
        example=SUITE_EXAMPLE,
        intro=(
            "An eval suite (RFC 0081 `AgentEvalSuite` plus this host's additions): the "
            "tasks `wopeval eval` runs and how each is graded ([graders.md](graders.md)). "
            "The project's `suites` globs name its suite files (JSON, one suite each); "
            "`wopeval suites from-runs` writes one from recorded runs. A suite is taken "
            'as written: `"5"` is not `5`, and `null` is refused wherever the type is '
            "not *any JSON value* (an absent field and `[]` differ)."
        ),
        validate=parse_suite,
    ),
)


@dataclass(frozen=True)
class Row:
    name: str
    type: str
    default: str
    required: bool
    description: str
    example: str


@dataclass(frozen=True)
class Section:
    """One table of a format: a model, and the paths at which the format holds it."""

    model: type[BaseModel]
    paths: tuple[tuple[str, ...], ...]
    rows: tuple[Row, ...]


def models_of(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model a format's root model holds, by the name its JSON schema gives it."""
    found: dict[str, type[BaseModel]] = {}

    def visit(annotation: object) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation.__name__ in found:
                return
            found[annotation.__name__] = annotation
            for field in annotation.model_fields.values():
                visit(field.annotation)
        for argument in get_args(annotation):
            visit(argument)

    visit(model)
    return found


def attribute_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """The docstrings written under a model's fields, its bases' included."""
    docstrings: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, BaseModel)) or klass is BaseModel:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        assert isinstance(body, ast.ClassDef)
        for statement, after in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docstrings[statement.target.id] = inspect.cleandoc(after.value.value)
    return docstrings


def sections_of(fmt: Format) -> list[Section]:
    """The format's tables, breadth first from its root, each with the paths that hold it."""
    schema = fmt.model.model_json_schema()
    definitions: dict[str, Any] = schema.get("$defs", {})
    models = models_of(fmt.model)
    schemas = {**definitions, fmt.model.__name__: schema}
    paths: dict[str, list[tuple[str, ...]]] = {fmt.model.__name__: [()]}
    order = [fmt.model.__name__]
    for name in order:  # grows as it goes: breadth first
        for prop, node in schemas[name]["properties"].items():
            for suffix, target in _references(node, definitions):
                if target not in paths:
                    order.append(target)
                    paths[target] = []
                paths[target] += [(*base, prop, *suffix) for base in paths[name]]
    places = {name: paths[name][0] for name in order}
    return [
        Section(
            models[name],
            tuple(paths[name]),
            tuple(_rows(fmt, models[name], schemas[name], paths[name], places, definitions)),
        )
        for name in order
    ]


def _references(
    node: dict[str, Any], definitions: dict[str, Any]
) -> Iterator[tuple[tuple[str, ...], str]]:
    """The tables a field's schema holds, each with the path segments that lead to it."""
    if "$ref" in node:
        target = node["$ref"].rsplit("/", 1)[1]
        if "properties" in definitions[target]:
            yield (), target
    for option in node.get("anyOf", ()):
        yield from _references(option, definitions)
    if isinstance(node.get("items"), dict):
        for suffix, target in _references(node["items"], definitions):
            yield (ITEM, *suffix), target
    if isinstance(node.get("additionalProperties"), dict):
        for suffix, target in _references(node["additionalProperties"], definitions):
            yield (KEY, *suffix), target


def _rows(
    fmt: Format,
    model: type[BaseModel],
    schema: dict[str, Any],
    paths: list[tuple[str, ...]],
    places: dict[str, tuple[str, ...]],
    definitions: dict[str, Any],
) -> Iterator[Row]:
    docstrings = attribute_docstrings(model)
    by_alias = {field.alias or name: (name, field) for name, field in model.model_fields.items()}
    document = _example_document(fmt)
    instances = [found for path in paths for found in _instances(document, path)]
    own = model.__annotations__
    # Required fields first, then the model's own, then what it inherits (an agent's
    # lane fields before the LLM fields every lane shares).
    properties = sorted(
        schema["properties"].items(),
        key=lambda item: _rank(by_alias[item[0]], own),
    )
    for prop, node in properties:
        name, field = by_alias[prop]
        description = field.description or docstrings.get(name)
        if not description:
            raise ValueError(f"{model.__name__}.{name} has no description: write its docstring")
        tables = [places[target] for _, target in _references(node, definitions)]
        if tables:
            example = f"see {_link(fmt, tables[0])}"
        else:
            example = _code(_render(fmt, _example(fmt, model, name, field, prop, instances)))
        yield Row(
            name=prop,
            type=_type(fmt, node, definitions, places),
            default="—" if field.is_required() else _default(fmt, field),
            required=field.is_required(),
            description=_prose(description),
            example=example,
        )


def _prose(text: str) -> str:
    """A docstring as one line of the page, its `docs/x.md` citations made links."""
    return re.sub(r"\bdocs/([\w-]+\.md)\b", r"[\1](\1)", " ".join(text.split()))


def _rank(named: tuple[str, FieldInfo], own: dict[str, Any]) -> tuple[bool, bool]:
    name, field = named
    return not field.is_required(), not field.is_required() and name not in own


def _example_document(fmt: Format) -> Any:
    if fmt.language == "toml":
        return tomllib.loads(fmt.example)
    return json.loads(fmt.example)


def _instances(document: Any, path: tuple[str, ...]) -> list[Any]:
    """Where the example holds the table at `path` (every array item, every key's value)."""
    found = [document]
    for segment in path:
        if segment == ITEM:
            found = [item for value in found for item in value]
        elif segment == KEY:
            found = [item for value in found for item in value.values()]
        else:
            found = [value[segment] for value in found if segment in value]
    return found


def _example(
    fmt: Format,
    model: type[BaseModel],
    name: str,
    field: FieldInfo,
    prop: str,
    instances: list[Any],
) -> Any:
    if field.examples:
        return field.examples[0]
    for instance in instances:
        if prop in instance:
            return instance[prop]
    raise ValueError(
        f"{model.__name__}.{name}: no example; give it in {fmt.key}'s whole example or as "
        "Field(examples=[...])"
    )


def _type(
    fmt: Format,
    node: dict[str, Any],
    definitions: dict[str, Any],
    places: dict[str, tuple[str, ...]],
) -> str:
    """A field's schema in words: `integer, ≥ 1, ≤ 100`, `array of strings`, `one of …`."""
    if "$ref" in node:
        target = node["$ref"].rsplit("/", 1)[1]
        if "properties" in definitions[target]:
            return f"[{_table(fmt)}](#{anchor(fmt, places[target])})"
        return _type(fmt, definitions[target], definitions, places)
    if "anyOf" in node:
        options = [option for option in node["anyOf"] if option.get("type") != "null"]
        return " or ".join(_type(fmt, option, definitions, places) for option in options)
    if "enum" in node:
        choices = ", ".join(_code(_render(fmt, value)) for value in node["enum"])
        return f"one of {choices}" if len(node["enum"]) > 1 else choices
    if "const" in node:
        return _code(_render(fmt, node["const"]))
    kind = node.get("type")
    if kind is None:
        return f"any {fmt.language.upper()} value"
    if kind == "array":
        items = _type(fmt, node["items"], definitions, places)
        text = (
            f"array, each {items}" if items.startswith("one of") else f"array of {_plural(items)}"
        )
    elif kind == "object":
        values = node.get("additionalProperties")
        text = _table(fmt)
        if isinstance(values, dict):
            text += f" of {_plural(_type(fmt, values, definitions, places))} by key"
    else:
        text = str(kind)
    return text + _constraints(node)


def _constraints(node: dict[str, Any]) -> str:
    words = {
        "minimum": "≥ {}",
        "exclusiveMinimum": "> {}",
        "maximum": "≤ {}",
        "exclusiveMaximum": "< {}",
        "minLength": "at least {} character(s)",
        "minItems": "at least {} item(s)",
        "pattern": "matching `{}`",
    }
    said = [text.format(node[key]) for key, text in words.items() if key in node]
    said = [
        text.replace("1 character(s)", "1 character").replace("1 item(s)", "1 item")
        for text in said
    ]
    said = [text.replace("(s)", "s") for text in said]
    return f", {', '.join(said)}" if said else ""


def _plural(text: str) -> str:
    for word in ("string", "integer", "number", "boolean", "table", "object"):
        if text == word or text.startswith((f"{word},", f"{word} ")):
            return text.replace(word, f"{word}s", 1)
        if text.startswith(f"[{word}]"):
            return text.replace(f"[{word}]", f"[{word}s]", 1)
    return text


def _table(fmt: Format) -> str:
    return "table" if fmt.language == "toml" else "object"


def _default(fmt: Format, field: FieldInfo) -> str:
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        return "each field's default"
    return _code(_render(fmt, value))


def _render(fmt: Format, value: Any) -> str:
    """A value as the format writes it: an inline TOML value, or compact JSON."""
    if fmt.language == "json":
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_render(fmt, item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = [f"{_toml_key(key)} = {_render(fmt, item)}" for key, item in value.items()]
        return "{ " + ", ".join(pairs) + " }" if pairs else "{}"
    return json.dumps(value, ensure_ascii=False)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _code(text: str) -> str:
    # A table cell ends at a bare `|`, even inside a code span.
    return f"`{text.replace('|', chr(92) + '|')}`"


def heading(fmt: Format, path: tuple[str, ...]) -> str:
    """A table's path as the format writes it: `[[agents]]`, `[agents.credential]`,
    `tasks[].expected.match`."""
    if not path:
        return "top level" if fmt.language == "toml" else "the document"
    if fmt.language == "toml":
        keys = ".".join('"<key>"' if part == KEY else part for part in path if part != ITEM)
        return f"`[[{keys}]]`" if path[-1] == ITEM else f"`[{keys}]`"
    text = ""
    for part in path:
        text += part if part == ITEM or not text else f".{part}"
    return f"`{text}`"


def _link(fmt: Format, path: tuple[str, ...]) -> str:
    return f"[{heading(fmt, path)}](#{anchor(fmt, path)})"


def anchor(fmt: Format, path: tuple[str, ...]) -> str:
    words = [part for part in path if part not in (ITEM, KEY)] or ["top-level"]
    return "-".join([fmt.key, *words]).lower().replace("_", "-")


def render() -> str:
    """The whole page."""
    out = [
        "# Reference: `wopeval.toml`, workflow files and suite files",
        "",
        "<!-- Generated by scripts/reference.py from the models the host validates with: do "
        f"not edit by hand; run `{REGENERATE}`. -->",
        "",
        "Every table and field the host reads from a project: its manifest `wopeval.toml`, the "
        "workflow files and the suite files it names. Each table below lists its fields with "
        "their type, default, whether they are required, what they mean and an example; each "
        "format ends with one whole example, which the models themselves validate. *none* as a "
        "default means the field is absent unless written.",
        "",
        "- [`wopeval.toml`](#project): agents, tools, MCP servers, graders, judges, evals, "
        "prices, and the workflow and suite files",
        "- [Workflow files](#workflow): nodes (`core.agent`, `core.noop`) and edges",
        "- [Suite files](#suite): tasks, expectations, fixtures, thresholds",
        "",
    ]
    for fmt in FORMATS:
        fmt.validate(_example_document(fmt))
        out += [f'<a id="{fmt.key}"></a>', "", f"## {fmt.title}", "", fmt.intro, ""]
        for section in sections_of(fmt):
            out += _section(fmt, section)
        out += [
            f'<a id="{fmt.key}-example"></a>',
            "",
            f"### Whole example: {fmt.one}",
            "",
            f"```{fmt.language}",
            fmt.example.rstrip("\n"),
            "```",
            "",
        ]
    return "\n".join(out).rstrip("\n") + "\n"


def _section(fmt: Format, section: Section) -> list[str]:
    model = section.model
    title = ", ".join(heading(fmt, path) for path in section.paths)
    out = [
        f'<a id="{anchor(fmt, section.paths[0])}"></a>',
        "",
        f"### {title[0].upper() + title[1:]}",
        "",
        f"<!-- reference: {fmt.language} {model.__module__}.{model.__qualname__} -->",
        "",
    ]
    doc = model.__dict__.get("__doc__")
    if doc:
        out += [_prose(inspect.cleandoc(doc).split("\n\n")[0]), ""]
    out += [
        "| Field | Type | Default | Required | Description | Example |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in section.rows:
        cells = [
            f"`{row.name}`",
            row.type,
            row.default,
            "yes" if row.required else "no",
            row.description.replace("|", "\\|"),
            row.example,
        ]
        out.append("| " + " | ".join(cells) + " |")
    return [*out, ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if REFERENCE.read_text(encoding="utf-8") != page:
            print(f"{REFERENCE} is out of date: run `{REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    REFERENCE.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
