"""Debian's Chromium for the browser tier, driven by Playwright; `playwright install` is never used.

A module that imports this is skipped only on a developer machine without
/usr/bin/chromium; under CI (`CI` set) a missing browser fails it instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Skip the calling module when there is no Chromium (fail under CI)."""
    if not CHROMIUM.exists() and not os.environ.get("CI"):
        pytest.skip("no /usr/bin/chromium (apt-get install -y chromium)", allow_module_level=True)
