"""`/_stats`: every request the stand-in received, by path, so a test can assert that a
replay reached no model at all; `/_stats/reset` starts the count again."""

from __future__ import annotations

import httpx

from _model_server import ModelServer

from .conftest import OPENAI_HEADERS, question


def test_every_request_counts_refused_or_not_and_a_reset_zeroes_the_count(
    server: ModelServer, http: httpx.Client
) -> None:
    assert http.post("/_stats/reset").json() == {"requests": 0, "by_path": {}}
    asked = question("counted")
    server.script.add(asked, [{"content": "ok"}])

    answered = http.post(
        "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": asked}]},
        headers=OPENAI_HEADERS,
    )
    unauthenticated = http.post("/v1/messages", json={})
    unknown = http.get("/v1/models")

    statuses = [answered.status_code, unauthenticated.status_code, unknown.status_code]
    assert statuses == [200, 401, 404]
    expected = {
        "requests": 3,
        "by_path": {"/v1/chat/completions": 1, "/v1/messages": 1, "/v1/models": 1},
    }
    assert http.get("/_stats").json() == expected, "reading the stats is not a request"
    assert server.stats.snapshot() == expected
    assert server.stats.requests == 3
    assert http.post("/_stats/reset").json() == {"requests": 0, "by_path": {}}
    assert http.get("/_stats").json()["requests"] == 0
