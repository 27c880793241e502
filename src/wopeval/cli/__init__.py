"""The `wopeval` command."""

from wopeval.cli.main import app, main

__all__ = ["app", "main"]
