"""The revision of the agent code an eval run judges: a label, or the project's git commit.

Recorded in the run's metadata and shown in every report, so a verdict says
which code it is about. A commit with uncommitted changes to tracked files
under the project is marked `-dirty`: its verdict is about code no commit holds.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DIRTY = "-dirty"


def project_revision(directory: Path, label: str | None) -> str | None:
    """`label` when given, else the git commit of `directory`; None outside a repository
    (or without git)."""
    if label:
        return label
    commit = _git(directory, "rev-parse", "HEAD")
    if commit is None:
        return None
    changed = _git(directory, "status", "--porcelain", "--untracked-files=no", "--", ".")
    return commit + (DIRTY if changed else "")


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
