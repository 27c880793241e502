"""A host process loads no model provider's SDK until an agent of its lane talks to a model.

The openai and anthropic SDKs build a few thousand pydantic models when imported: every
`wopeval serve` and every embedded CLI command paid about a second of CPU for them, though
most projects have no LLM-lane agent (agents/_chat_lane.py, agents/_messages_lane.py). Checked
in a fresh interpreter: this test process has imported them for other tests.
"""

from __future__ import annotations

import subprocess
import sys

SDKS = ("openai", "anthropic")


def test_the_host_and_the_cli_load_no_model_sdk() -> None:
    probe = (
        "import sys, wopeval.hosting.app, wopeval.cli.main\n"
        f"print(','.join(name for name in {SDKS!r} if name in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "", f"loaded at start-up: {done.stdout.strip()}"
