"""Helpers of the CLI tier: run `wopeval` in a subprocess, talk to the served host."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from _processes import WOPEVAL, child_env

PROJECT = Path(__file__).parent / "project"
COMMAND_TIMEOUT_SECONDS = 120.0
START_DEADLINE_SECONDS = 60.0


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json_file(self, path: Path) -> Any:
        return json.loads(path.read_text(encoding="utf-8"))


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    umask: int = -1,
    timeout: float = COMMAND_TIMEOUT_SECONDS,
) -> Result:
    """`wopeval ARGS` in a subprocess (`umask` -1: the parent's)."""
    done = subprocess.run(
        [WOPEVAL, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=child_env(env),
        check=False,
        umask=umask,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class ServedHost:
    url: str
    api_key: str

    def remote(self) -> list[str]:
        return ["--url", self.url, "--api-key", self.api_key]

    def cli(self, *args: str, cwd: Path | None = None) -> Result:
        """`wopeval ARGS --url URL --api-key KEY`."""
        return run_cli(*args, *self.remote(), cwd=cwd)

    def http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.api_key}", "OpenWOP-Version": "2.0"},
            trust_env=False,
            timeout=30.0,
        )
