"""The fronts of client, reports and demo: `__all__` lists every public name, sorted (G1)."""

from __future__ import annotations

import re
import types

import pytest

from wopeval import client, demo, reports


def _isort_key(name: str) -> tuple[int, list[int | str]]:
    """Ruff RUF022 order: CONSTANTS, then Classes, then the rest; natural sort inside."""
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    natural: list[int | str] = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
    return kind, natural


@pytest.mark.parametrize("package", [client, demo, reports], ids=["client", "demo", "reports"])
def test_all_is_complete_and_sorted(package: types.ModuleType) -> None:
    # dir(), not vars(): a lazy front (wopeval/_lazy.py) holds a name once it is read.
    public = {
        name
        for name in dir(package)
        if not name.startswith("_") and not isinstance(getattr(package, name), types.ModuleType)
    }
    assert set(package.__all__) == public
    assert package.__all__ == sorted(package.__all__, key=_isort_key)
