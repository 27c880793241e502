"""`wopeval serve --max-body-bytes` (and `WOPEVAL_MAX_BODY_BYTES`) set the 413 limit."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from _processes import ServeOptions, ServeProcess
from wopeval.cli._exit import ExitCode

from ._support import ServedHost, run_cli

LIMIT = 4096


def _body(size: int) -> bytes:
    body = json.dumps({"workflowId": "conformance-noop"}).encode()
    return body + b" " * (size - len(body))


@pytest.mark.parametrize("how", ["option", "environment"])
def test_the_configured_limit_is_enforced(tmp_path: Path, how: str) -> None:
    key = "cli_" + secrets.token_urlsafe(24)
    limit = ("--max-body-bytes", str(LIMIT))
    options = ServeOptions(
        tmp_path,
        None,
        (f"cli={key}",),
        extra=limit if how == "option" else (),
        env=(("WOPEVAL_MAX_BODY_BYTES", str(LIMIT)),) if how == "environment" else (),
    )
    serve = ServeProcess(options, tmp_path / "serve.log")
    try:
        serve.wait_up()
        _check_limit(ServedHost(serve.url, key))
    finally:
        serve.stop()


def _check_limit(host: ServedHost) -> None:
    with host.http() as http:
        headers = {"Content-Type": "application/json"}
        refused = http.post("/runs", content=_body(LIMIT + 1), headers=headers)
        assert refused.status_code == 413
        assert refused.json()["details"] == {"maxBodyBytes": LIMIT}
        accepted = http.post("/runs", content=_body(LIMIT), headers=headers)
        assert accepted.status_code == 201, accepted.text


def test_a_limit_below_one_byte_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("serve", "--data-dir", str(tmp_path), "--max-body-bytes", "0")
    assert done.code == ExitCode.ERROR
    assert "--max-body-bytes" in done.stderr
