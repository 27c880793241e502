"""Imports point one way (docs/design.md §1): each layer may use only the layers listed here.

`evals` holds the RFC rules as pure functions, so it sees nothing but `wire`;
`conformance` speaks only the wire through openwop-client, so it sees none of
the host's own layers at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import wopeval

PACKAGE = Path(wopeval.__file__).parent

ALLOWED: dict[str, set[str]] = {
    "wire": set(),
    "evals": {"wire"},
    "settings": {"wire"},
    "store": {"wire", "evals"},
    # Model wire API adapters, beside the tools: the lanes build requests for them.
    "models": {"wire", "evals"},
    "agents": {"wire", "models"},
    "tools": {"wire", "evals", "store"},
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
    },
}


def _layer(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _imported_layers(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "wopeval" and len(parts) > 1:
                found.add(parts[1])
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
