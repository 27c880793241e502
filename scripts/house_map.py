"""Print the map of the house: rooms, modules per room, the largest module and function,
import circles and the count of `Any` (docs/design.md §1).

    python scripts/house_map.py [--json]

A room is a package under `src/wopeval/` (its sub-packages are rooms of their own). An import
circle is a set of modules that reach each other through imports made when a module loads,
those under `if TYPE_CHECKING:` included (they are still a knot a reader has to untie); imports
inside functions are left out. `Any` is counted where code uses it, not where it is imported.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "wopeval"


@dataclass(frozen=True)
class Room:
    name: str
    modules: int
    lines: int


@dataclass(frozen=True)
class HouseMap:
    rooms: list[Room]
    largest_module: tuple[str, int]
    largest_function: tuple[str, int]
    circles: list[list[str]]
    any_count: int


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _load_time_imports(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    """Modules named by imports that run when the module loads (top level, `if` blocks)."""
    found: set[str] = set()
    statements: list[ast.stmt] = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.If | ast.Try):
            statements.extend(node.body + node.orelse)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _any_uses(tree: ast.Module) -> int:
    return sum(
        1
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
    )


def house_map() -> HouseMap:
    trees = {
        path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.rglob("*.py"))
    }
    names = {path: _module_name(path) for path in trees}
    known = set(names.values())
    room_modules: dict[str, int] = defaultdict(int)
    room_lines: dict[str, int] = defaultdict(int)
    graph: dict[str, set[str]] = {}
    largest_module = ("", 0)
    largest_function = ("", 0)
    any_count = 0
    for path, tree in trees.items():
        name = names[path]
        lines = len(path.read_text(encoding="utf-8").splitlines())
        room = _module_name(path.parent)
        room_modules[room] += 1
        room_lines[room] += lines
        largest_module = max(largest_module, (name, lines), key=lambda pair: pair[1])
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                length = node.end_lineno - node.lineno + 1
                where = f"{name}.{node.name}"
                largest_function = max(largest_function, (where, length), key=lambda pair: pair[1])
        imported = _load_time_imports(tree, name, path.name == "__init__.py")
        graph[name] = {module for module in imported if module in known and module != name}
        any_count += _any_uses(tree)
    rooms = [
        Room(name=room, modules=room_modules[room], lines=room_lines[room])
        for room in sorted(room_modules)
    ]
    return HouseMap(rooms, largest_module, largest_function, _circles(graph), any_count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the map as JSON")
    found = house_map()
    if parser.parse_args().json:
        print(json.dumps(asdict(found), indent=2))
        return
    print(f"{'room':32} {'modules':>7} {'lines':>6}")
    for room in found.rooms:
        print(f"{room.name:32} {room.modules:>7} {room.lines:>6}")
    print(f"largest module: {found.largest_module[0]} ({found.largest_module[1]} lines)")
    print(f"largest function: {found.largest_function[0]} ({found.largest_function[1]} lines)")
    print(f"import circles: {len(found.circles)}")
    for circle in found.circles:
        print("  " + " ↔ ".join(circle))
    print(f"uses of Any: {found.any_count}")


if __name__ == "__main__":
    main()
