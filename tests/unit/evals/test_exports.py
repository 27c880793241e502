"""The evals layer's front: `__all__` lists every public name, isort-style sorted (G1)."""

from __future__ import annotations

import re
import types

from wopeval import evals


def _isort_key(name: str) -> tuple[int, list[int | str]]:
    """Ruff RUF022 order: CONSTANTS, then Classes, then the rest; natural sort inside."""
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    natural: list[int | str] = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
    return kind, natural


def test_all_is_complete() -> None:
    # dir(), not vars(): the lazy front (wopeval/_lazy.py) holds a name once it is read.
    public = {
        name
        for name in dir(evals)
        if not name.startswith("_") and not isinstance(getattr(evals, name), types.ModuleType)
    }
    assert set(evals.__all__) == public


def test_all_is_sorted() -> None:
    assert evals.__all__ == sorted(evals.__all__, key=_isort_key)


def test_all_has_no_duplicates() -> None:
    assert len(evals.__all__) == len(set(evals.__all__))
