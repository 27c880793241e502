"""`wopeval worker --max-body-bytes` (and `WOPEVAL_MAX_BODY_BYTES`) hold the worker's own
HTTP server, where its agents reach their MCP endpoints and model proxy, to a body limit
and strict JSON, as an API process's routes are held (tests/unit/api/test_worker_app.py
has each refusal on every endpoint; here, the option reaching a real worker)."""

from __future__ import annotations

import httpx
import pytest

from wopeval.engine.recording.grants import MCP_PATH, OPENAI_PATH

from .conftest import Fleet

LIMIT = 4096
TOKEN = "t" * 43


@pytest.mark.parametrize("how", ["option", "environment"])
def test_the_configured_limit_holds_the_worker_s_endpoints(fleet: Fleet, how: str) -> None:
    fleet.serve()
    if how == "option":
        worker = fleet.worker(extra=("--max-body-bytes", str(LIMIT)))
    else:
        worker = fleet.worker(env=(("WOPEVAL_MAX_BODY_BYTES", str(LIMIT)),))
    assert worker.health_url is not None
    base = worker.health_url.split("/host/", 1)[0]
    padded = b'{"model": "m"}' + b" " * (LIMIT - 14)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=base, trust_env=False, timeout=10.0) as http:
        for path in (MCP_PATH + TOKEN, OPENAI_PATH + TOKEN + "/v1/chat/completions"):
            refused = http.post(path, content=padded + b" ", headers=headers)
            assert refused.status_code == 413, refused.text
            assert refused.json()["details"] == {"maxBodyBytes": LIMIT}
            # At the limit the body passes the guard, and the token (granted to no
            # invocation) is what the worker refuses.
            unknown = http.post(path, content=padded, headers=headers)
            assert unknown.status_code == 404, unknown.text
            not_strict = http.post(path, content=b'{"n": NaN}', headers=headers)
            assert not_strict.status_code == 400, not_strict.text
