"""Imports point one way (docs/design.md §1): each layer may use only the layers listed here,
each room of the engine only the rooms listed for it, and no module reaches itself again
through the imports made when it loads.

`evals` holds the RFC rules as pure functions, so it sees nothing but `wire`;
`conformance` speaks only the wire through openwop-client, so it sees none of
the host's own layers at all.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import wopeval

PACKAGE = Path(wopeval.__file__).parent

ALLOWED: dict[str, set[str]] = {
    "_lazy": set(),
    "wire": set(),
    "evals": {"wire"},
    "settings": {"wire"},
    "store": {"wire", "evals"},
    # Model wire API adapters, beside the tools: the lanes build requests for them.
    "models": {"wire", "evals"},
    "agents": {"wire", "models"},
    "tools": {"wire", "evals", "store"},
    # Carrying recorded runs between stores: the store's rows, read for what the wire says.
    "recordings": {"wire", "store"},
    "engine": {"wire", "evals", "settings", "store", "agents", "tools", "models"},
    # Serves HTTP from a host it is handed; what builds one is `hosting`'s.
    "api": {"wire", "evals", "settings", "store", "agents", "engine", "reports", "models"},
    # Assembles each role's process (lease, keys, catalog, engine, background tasks) and
    # hands `api` the host it serves from.
    "hosting": {"wire", "evals", "settings", "store", "tools", "engine", "api"},
    "reports": {"wire", "evals"},
    "client": {"wire", "evals", "settings", "reports", "hosting"},
    "conformance": set(),
    "demo": {"wire", "evals", "agents", "tools", "reports", "client"},
    # The queue worker role: only the CLI's row lists it, so only queue mode loads
    # Procrastinate.
    "worker": {
        "wire",
        "evals",
        "settings",
        "store",
        "agents",
        "tools",
        "engine",
        "hosting",
        "models",
    },
    "cli": {
        "wire",
        "evals",
        "settings",
        "store",
        "engine",
        "hosting",
        "client",
        "reports",
        "demo",
        "conformance",
        "worker",
        "recordings",
    },
}


ENGINE = PACKAGE / "engine"
FACADE = ""
"""The engine's own modules beside its rooms (the `Engine` facade, health): they wire the rooms."""

ENGINE_ROOMS: dict[str, set[str]] = {
    "live": set(),
    "runlog": {"live"},
    "recording": {"runlog"},
    "catalog": {"recording", "runlog"},
    "runs": {"catalog", "recording", "runlog", "live"},
    "eval_runs": {"runs", "catalog", "recording", "runlog", "live"},
    FACADE: {"eval_runs", "runs", "catalog", "recording", "runlog", "live"},
}


def _layer(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _imported_modules(path: Path) -> set[str]:
    """Every module an import statement of `path` names, `from wopeval.x import y` as `wopeval.x.y`
    too (y may be a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _imported_layers(path: Path) -> set[str]:
    found: set[str] = set()
    for module in _imported_modules(path):
        parts = module.split(".")
        # `from wopeval import __version__` names the package's own version, not a layer, and
        # `wopeval._lazy` (how a package defers its names' imports) lies beneath every layer.
        if parts[0] == "wopeval" and len(parts) > 1 and not parts[1].startswith("_"):
            found.add(parts[1])
    return found


def _engine_room(path: Path) -> str:
    parts = path.relative_to(ENGINE).parts
    return parts[0] if len(parts) > 1 else FACADE


def _imported_engine_rooms(path: Path) -> set[str]:
    found: set[str] = set()
    for module in _imported_modules(path):
        parts = module.split(".")
        if parts[:2] == ["wopeval", "engine"] and len(parts) > 2 and (ENGINE / parts[2]).is_dir():
            found.add(parts[2])
    return found


MODULES = sorted(
    path for path in PACKAGE.rglob("*.py") if _layer(path) not in ("__init__", "__main__")
)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_imports_only_the_layers_below_it(path: Path) -> None:
    layer = _layer(path)
    assert layer in ALLOWED, f"{layer} is a new layer: give it a row in ALLOWED"
    outside = _imported_layers(path) - ALLOWED[layer] - {layer}
    assert not outside, f"{path.relative_to(PACKAGE)} imports {sorted(outside)}"


ENGINE_MODULES = sorted(ENGINE.rglob("*.py"))


@pytest.mark.parametrize("path", ENGINE_MODULES, ids=lambda p: str(p.relative_to(ENGINE)))
def test_an_engine_module_imports_only_the_rooms_below_its_own(path: Path) -> None:
    room = _engine_room(path)
    assert room in ENGINE_ROOMS, f"engine/{room} is a new room: give it a row in ENGINE_ROOMS"
    outside = _imported_engine_rooms(path) - ENGINE_ROOMS[room] - {room}
    assert not outside, f"engine/{path.relative_to(ENGINE)} imports rooms {sorted(outside)}"


def test_no_module_reaches_itself_through_the_imports_made_at_load() -> None:
    """The load-time import graph (TYPE_CHECKING imports included) has no circle; the graph and
    its circles are scripts/house_map.py's, the map the house is measured by."""
    house_map = Path(__file__).resolve().parents[2] / "scripts" / "house_map.py"
    printed = subprocess.run(
        [sys.executable, str(house_map), "--json"], check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(printed)["circles"] == []


DESIGN = PACKAGE.parents[1] / "docs" / "design.md"
_MAPPED_ROOM = re.compile(r"^  ([a-z_]+)/ ", re.MULTILINE)
_ENGINE_ORDER = re.compile(r"`(live ← [a-z_ ←\n]+) ← host\.py`")


def _design_maps() -> list[str]:
    """The fenced blocks of docs/design.md §1: the map of the layers, then the engine's."""
    section = DESIGN.read_text(encoding="utf-8").split("## 1.", 1)[1].split("\n## 2.", 1)[0]
    return section.split("```")[1::2]


def test_the_design_map_names_every_room_and_no_other() -> None:
    layers, engine_rooms = _design_maps()
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert set(_MAPPED_ROOM.findall(layers)) == packages
    assert set(_MAPPED_ROOM.findall(engine_rooms)) == set(ENGINE_ROOMS) - {FACADE}


def test_the_design_map_orders_the_engine_rooms_as_their_imports_do() -> None:
    written = _ENGINE_ORDER.search(DESIGN.read_text(encoding="utf-8"))
    assert written is not None, "docs/design.md §1 lost the engine rooms' import order"
    order = [room.strip() for room in written.group(1).split("←")]
    assert order == [room for room in ENGINE_ROOMS if room != FACADE]
    # Down the list only: each room may import rooms written before it, never after.
    for index, room in enumerate(order):
        assert ENGINE_ROOMS[room] <= set(order[:index]), room
