"""`python tests/_model_server --port P --script FILE`: the server in the foreground."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import uvicorn

from .app import app
from .script import ModelScript


def main() -> None:
    parser = argparse.ArgumentParser(
        description="A strict local stand-in for the OpenAI and Anthropic model APIs."
    )
    parser.add_argument("--port", type=int, default=8792)
    parser.add_argument("--script", type=Path, required=True, help="the conversations to play")
    options = parser.parse_args()
    script = ModelScript()
    script.load(json.loads(options.script.read_text(encoding="utf-8")))
    config = uvicorn.Config(app(script), host="127.0.0.1", port=options.port, log_level="info")
    uvicorn.Server(config).run()
