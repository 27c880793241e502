"""`wopeval ui` as a user runs it: a real process that serves the dashboard until Ctrl-C,
or that points at the `wopeval serve` already owning the data directory.

`$BROWSER` names a script that writes down the URL it was asked to open, so the
test sees what a real browser would have been given (never the key).
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from _processes import WOPEVAL, ServeOptions, ServeProcess, child_env

from ._support import START_DEADLINE_SECONDS, run_cli

_URL = re.compile(r"the dashboard is at (http://127\.0\.0\.1:\d+/ui/)")
STOP_DEADLINE_SECONDS = 30.0


@dataclass
class UiProcess:
    process: subprocess.Popen[str]
    output: Path

    def printed(self) -> str:
        return self.output.read_text()

    def dashboard_url(self) -> str:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            found = _URL.search(self.printed())
            if found:
                return found.group(1)
            assert self.process.poll() is None, self.printed()
            time.sleep(0.05)
        raise AssertionError(f"wopeval ui printed no URL: {self.printed()}")


@pytest.fixture
def browser_script(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in browser: `$BROWSER URL` appends the URL to a file."""
    opened = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> "{opened}"\n')
    script.chmod(0o755)
    return script, opened


def _start_ui(data_dir: Path, output: Path, browser: Path, *extra: str) -> UiProcess:
    with output.open("w") as sink:
        process = subprocess.Popen(
            [WOPEVAL, "ui", "--data-dir", str(data_dir), *extra],
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            env=child_env({"BROWSER": f"{browser} %s"}),
        )
    return UiProcess(process, output)


@contextmanager
def _sign_in(url: str, key: str) -> Iterator[httpx.Client]:
    """A cookie-keeping client signed in to the dashboard at `url`."""
    with httpx.Client(base_url=url.removesuffix("/ui/"), trust_env=False, timeout=30.0) as client:
        signed = client.post("/ui/sign-in", data={"key": key})
        assert signed.status_code == 303, signed.text
        yield client


def _wait_for(path: Path) -> str:
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.05)
    return path.read_text().strip()


def test_ui_serves_the_dashboard_opens_it_and_stops_on_ctrl_c(
    tmp_path: Path, browser_script: tuple[Path, Path]
) -> None:
    browser, opened = browser_script
    data_dir = tmp_path / "data"
    ui = _start_ui(data_dir, tmp_path / "ui.log", browser)
    try:
        url = ui.dashboard_url()
        assert _wait_for(opened) == url
        key_file = data_dir / "dev-api-key"
        assert f"sign in with the API key of tenant 'dev', in {key_file}" in ui.printed()
        key = key_file.read_text().strip()
        assert key not in url
        with _sign_in(url, key) as client:
            assert client.get("/ui/runs").status_code == 200
        # It announced itself: a command next to it uses it instead of starting a host.
        listed = run_cli("runs", "list", "--data-dir", str(data_dir))
        assert listed.code == 0, listed.stderr
        assert "using the host that owns" in listed.stderr
    finally:
        ui.process.send_signal(signal.SIGINT)
        code = ui.process.wait(STOP_DEADLINE_SECONDS)
    assert code == 0, ui.printed()
    assert not (data_dir / "serve.json").exists()


def test_ui_next_to_a_live_serve_opens_that_hosts_dashboard(
    tmp_path: Path, browser_script: tuple[Path, Path]
) -> None:
    browser, opened = browser_script
    data_dir = tmp_path / "data"
    serve = ServeProcess(ServeOptions(data_dir, None), tmp_path / "serve.log")
    try:
        serve.wait_up()
        shown = run_cli("ui", "--data-dir", str(data_dir), env={"BROWSER": f"{browser} %s"})
        assert shown.code == 0, shown.stderr
        assert f"the dashboard is at {serve.url}/ui/" in shown.stdout
        assert _wait_for(opened) == f"{serve.url}/ui/"
        quiet = run_cli("ui", "--no-open", "--data-dir", str(data_dir))
        assert quiet.code == 0, quiet.stderr
        assert f"{serve.url}/ui/" in quiet.stdout
        assert opened.read_text().count("\n") == 1  # --no-open opened nothing
        with _sign_in(f"{serve.url}/ui/", (data_dir / "dev-api-key").read_text().strip()) as c:
            assert c.get("/ui/suites").status_code == 200
    finally:
        serve.stop()
