"""Every layer front that curates names lists them sorted, and each one resolves (G1)."""

from __future__ import annotations

import importlib

import pytest

FRONTS = [
    "wopeval.agents",
    "wopeval.evals",
    "wopeval.models",
    "wopeval.recordings",
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
