"""Every layer front that curates names lists them sorted, and each one resolves (G1); a
lazy front (wopeval/_lazy.py) imports none of its modules until one of its names is read."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LAZY_FRONTS = ["wopeval.client", "wopeval.evals", "wopeval.reports"]
FRONTS = [
    "wopeval.agents",
    "wopeval.client",
    "wopeval.evals",
    "wopeval.models",
    "wopeval.recordings",
    "wopeval.reports",
    "wopeval.store",
    "wopeval.tools",
    "wopeval.cli",
]


def _isort_style(name: str) -> tuple[int, str]:
    """CONSTANTS, then Classes, then functions, each alphabetical (ruff RUF022's order)."""
    if name.isupper():
        return 0, name
    return (1, name) if name[:1].isupper() else (2, name)


@pytest.mark.parametrize("name", FRONTS)
def test_a_front_lists_its_names_sorted_and_each_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_style)
    assert len(set(exported)) == len(exported)
    missing = [member for member in exported if not hasattr(module, member)]
    assert not missing


@pytest.mark.parametrize("name", LAZY_FRONTS)
def test_a_lazy_front_defers_each_name_it_lists_and_lists_each_name_it_defers(name: str) -> None:
    module = importlib.import_module(name)
    assert sorted(dir(module)) == sorted({*vars(module), *module.__all__})
    with pytest.raises(AttributeError, match="has no attribute 'not_a_member'"):
        _ = module.not_a_member
    # In a fresh interpreter: importing the front, and reading one name, loads that name's
    # module only.
    first = module.__all__[-1]
    code = (
        "import sys, importlib; front = importlib.import_module(sys.argv[1]); "
        "before = sorted(m for m in sys.modules if m.startswith(sys.argv[1] + '.')); "
        "getattr(front, sys.argv[2]); "
        "after = sorted(m for m in sys.modules if m.startswith(sys.argv[1] + '.')); "
        "print(before, len(after) < len(front.__all__), sep='\\n')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, name, first], capture_output=True, text=True, check=True
    )
    assert done.stdout.split("\n")[:2] == ["[]", "True"], done.stdout + done.stderr
