"""docs/reference.md: what scripts/reference.py writes from the models now, every field of every
model in it, and each of its examples accepted by the model the host reads that format with.

The page is read as committed, so a field added to a model without `make reference` fails
here; the models are walked here on their own (annotations, not the generator's JSON schema),
so a table the generator skipped fails too.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic.fields import FieldInfo

from _processes import child_env
from wopeval.engine.catalog.project_file import AgentEntry, ProjectFile
from wopeval.wire.suite import Suite, parse_suite
from wopeval.wire.workflows import Workflow

REPOSITORY = Path(__file__).resolve().parents[2]
PAGE = REPOSITORY / "docs" / "reference.md"
SCRIPT = REPOSITORY / "scripts" / "reference.py"
MARKER = re.compile(r"^<!-- reference: (toml|json) ([\w.]+) -->$")
CELL = re.compile(r"(?<!\\)\|")
WHOLE = re.compile(r"^### Whole example: ([^\n]+)\n\n```(toml|json)\n(.*?)\n```$", re.S | re.M)
READERS: dict[str, Callable[[object], object]] = {
    "`wopeval.toml`": ProjectFile.model_validate,
    "a workflow file": Workflow.model_validate,
    "a suite file": parse_suite,
}
"""Each whole example's heading, and how the host reads that format."""


@dataclass(frozen=True)
class Table:
    language: str
    model: type[BaseModel]
    rows: dict[str, list[str]]
    """Each field's cells by its name: type, default, required, description, example."""


def tables(page: str) -> Iterator[Table]:
    lines = page.splitlines()
    for index, line in enumerate(lines):
        if (marker := MARKER.match(line)) is None:
            continue
        module, _, name = marker.group(2).rpartition(".")
        model = getattr(importlib.import_module(module), name)
        rows: dict[str, list[str]] = {}
        for row in lines[index + 1 :]:
            if row.startswith("### ") or row.startswith("<a id="):
                break
            if row.startswith("| `"):
                cells = [cell.strip() for cell in CELL.split(row)[1:-1]]
                rows[cells[0].strip("`")] = cells[1:]
        yield Table(marker.group(1), model, rows)


def models_held(root: object) -> set[type[BaseModel]]:
    """Every model an annotation is or holds, through lists, unions and mappings alike."""
    found: set[type[BaseModel]] = set()
    pending: list[object] = [root]
    while pending:
        annotation = pending.pop()
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in found:
                continue
            found.add(annotation)
            pending += [field.annotation for field in annotation.model_fields.values()]
        pending += get_args(annotation)
    return found


def value_of(cell: str, language: str) -> Any:
    text = cell.removeprefix("`").removesuffix("`").replace("\\|", "|")
    return tomllib.loads(f"v = {text}")["v"] if language == "toml" else json.loads(text)


PAGE_TEXT = PAGE.read_text(encoding="utf-8")
TABLES = list(tables(PAGE_TEXT))


def test_the_committed_page_is_what_the_models_give_now() -> None:
    # Run as `make reference` runs it (a child process), so the page is compared with what a
    # regeneration would write, not with an import of the script.
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"],
        env=child_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, (
        f"docs/reference.md differs from what the models give now: run `make reference` "
        f"(python scripts/reference.py) and commit it\n{done.stderr}"
    )


def test_the_check_fails_on_a_page_that_drifted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("reference_under_test", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up while they are built.
    monkeypatch.setitem(sys.modules, spec.name, script)
    spec.loader.exec_module(script)
    drifted = tmp_path / "reference.md"
    drifted.write_text(PAGE_TEXT.replace("| `lane` |", "| `lanes` |"), encoding="utf-8")
    monkeypatch.setattr(script, "REFERENCE", drifted)
    assert script.main(["--check"]) == 1
    assert script.main([]) == 0
    assert drifted.read_text(encoding="utf-8") == PAGE_TEXT


@pytest.mark.parametrize("root", [ProjectFile, Workflow, Suite], ids=lambda m: m.__name__)
def test_every_field_of_every_model_has_its_row(root: type[BaseModel]) -> None:
    documented = {table.model: table for table in TABLES}
    for model in models_held(root):
        assert model in documented, f"{model.__name__} has no table in docs/reference.md"
        names = {field.alias or name for name, field in model.model_fields.items()}
        rows = documented[model].rows
        assert set(rows) == names, (
            f"{model.__name__}: rows {sorted(rows)} != fields {sorted(names)}"
        )
        for name, (kind, default, required, description, example) in rows.items():
            where = f"{model.__name__}.{name}"
            assert "" not in (kind, default, description, example), f"{where}: an empty cell"
            assert required in ("yes", "no"), where


def field_named(model: type[BaseModel], name: str) -> FieldInfo:
    """A field by the name a document gives it (its alias: an edge's `from`)."""
    return next(f for n, f in model.model_fields.items() if (f.alias or n) == name)


def accepts(model: type[BaseModel], name: str, value: Any) -> None:
    """Validate `value` as the one field `name` of `model`: its type, bounds and strictness."""
    field = field_named(model, name)
    config = ConfigDict(strict=bool(model.model_config.get("strict")))
    annotation: Any = field.annotation
    probe = create_model("Probe", __config__=config, probe=(annotation, field))
    probe.model_validate({field.alias or "probe": value})


def test_each_field_example_is_accepted_by_its_field() -> None:
    checked = 0
    for table in TABLES:
        for name, cells in table.rows.items():
            example = cells[-1]
            if example.startswith("see ["):
                # A table's example is its own section's rows (and the whole example).
                held = models_held(field_named(table.model, name).annotation)
                assert held, f"{table.model.__name__}.{name} links a table but holds none"
                continue
            accepts(table.model, name, value_of(example, table.language))
            checked += 1
    assert checked > 100


def test_an_example_outside_its_field_is_refused() -> None:
    # The check above is real: a value its field refuses does not pass it.
    with pytest.raises(ValidationError, match="less than or equal to 1000"):
        accepts(AgentEntry, "max_turns", 1001)
    with pytest.raises(ValidationError, match="valid integer"):
        accepts(Suite, "trials", "3")  # a suite is strict: "3" is not 3


def whole_examples() -> dict[str, tuple[str, str]]:
    return {title: (language, text) for title, language, text in WHOLE.findall(PAGE_TEXT)}


@pytest.mark.parametrize("title", READERS)
def test_each_whole_example_is_read_by_the_host_model(title: str) -> None:
    language, text = whole_examples()[title]
    document = tomllib.loads(text) if language == "toml" else json.loads(text)
    READERS[title](document)


def test_the_whole_examples_fit_together() -> None:
    # One project: the workflow's agents and the suite's target are the manifest's agents,
    # and its eval names the suite.
    examples = whole_examples()
    project = ProjectFile.model_validate(tomllib.loads(examples["`wopeval.toml`"][1]))
    workflow = Workflow.model_validate(json.loads(examples["a workflow file"][1]))
    suite = parse_suite(json.loads(examples["a suite file"][1]))
    agents = {agent.id for agent in project.agents}
    assert {node.agentId for node in workflow.nodes if node.agentId} <= agents
    assert suite.targetAgentId in agents
    assert f"{suite.suiteId}@{suite.version}" in {entry.suite for entry in project.evals}
