"""The paired verdict's vocabulary, apart from the summary that carries it.

A listing names a run's verdict without reading a summary: `wopeval runs list`
styles it, and needs neither the summary's models nor the suite's they import
(issue 28: a listing against a running host in ≤ 0.5 s).
"""

from __future__ import annotations

import enum


class Verdict(enum.StrEnum):
    """RFC 0244 §F paired verdict vocabulary (docs/design.md §3)."""

    IMPROVED = "improved"
    REGRESSED = "regressed"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"
