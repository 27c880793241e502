"""Packages whose names are imported when first read (PEP 562), not when the package is.

A package that gathers the names of its modules (`wopeval.client`, `reports`,
`evals`) would otherwise import every one of them the moment any one is used:
`wopeval runs list --url` needs the wire client, not the baselines, the HTML
report or the verdict statistics (issue 28: a listing against a running host in
≤ 0.5 s). Such a package lists its names once, as the imports of an
`if TYPE_CHECKING:` block, which type checkers read as usual; at run time
`exports` reads that block from the package's source and imports each name's
module on its first use, as lazy_loader's `attach_stub` does with a stub file.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

_GUARDS = ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def exports(package: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The package's `__getattr__` and `__dir__`: each name imported in its
    `if TYPE_CHECKING:` block is imported from its module when first read, then kept."""
    module = sys.modules[package]
    origins = _type_checking_imports(Path(str(module.__file__)))

    def __getattr__(name: str) -> object:
        try:
            source, original = origins[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(source), original)
        setattr(module, name, value)  # read once: the next use finds it without this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(module), *origins})

    return __getattr__, __dir__


def _type_checking_imports(source: Path) -> dict[str, tuple[str, str]]:
    """Each name the `if [typing.]TYPE_CHECKING:` block at the module's top level imports,
    with the module and the name it comes from."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) in _GUARDS):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                for alias in statement.names:
                    found[alias.asname or alias.name] = (statement.module, alias.name)
    return found
