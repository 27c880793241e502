"""Idempotent creates survive `kill -9`: a retry gets the run made under its key, or one new run.

A real `wopeval serve` takes many concurrent creates, each with its own
Idempotency-Key and a tag naming that key, and is killed outright (SIGKILL: no
shutdown code runs) while creates are in flight, at a moment it is caught with a
key claimed but unanswered in the database, the window this test is about: it is
stopped (SIGSTOP) now and then and its database read until it is caught so, then
killed. (A kill at a random moment seldom lands there on SQLite, where a claim's
answer follows it within one turn of the event loop.) Then a new serve starts on
the same data directory and database and every key is sent again with the same
body: each answer is a 201 naming the run its first answer named, if it had one,
and every key ends with exactly one run.
"""

from __future__ import annotations

import itertools
import os
import random
import secrets
import signal
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from _backends import Backend
from _processes import ServeOptions, ServeProcess
from e2e._support import list_all_runs, table_rows

TENANT = "crash"
KEYS_PER_ROUND = 96
SENDERS = 24
KILL_AFTER_ANSWERS = 24
MAX_ROUNDS = 5
PROBES = 200
PROBE_GAP_SECONDS = 0.003
Answer = tuple[int, dict[str, Any]] | None
"""Status and body, or None when the host died before answering."""


def _body(key: str) -> dict[str, Any]:
    return {"workflowId": "conformance-noop", "tags": [key]}


def _kill_inside_the_window(serve: ServeProcess, database_url: str) -> None:
    """SIGKILL the host at a moment it has a key claimed but unanswered, if it has one
    before the senders are done: it is stopped, its database read, and let go on a little
    until then."""
    for _ in range(PROBES):
        os.kill(serve.pid, signal.SIGSTOP)
        if table_rows(database_url, "idempotency", status_code=None):
            break
        os.kill(serve.pid, signal.SIGCONT)
        time.sleep(random.uniform(0, PROBE_GAP_SECONDS))
    serve.kill()


def _send_all(
    serve: ServeProcess,
    api_key: str,
    keys: list[str],
    *,
    kill_after: int | None,
    database_url: str = "",
) -> dict[str, Answer]:
    """Send one create per key from `SENDERS` threads; after `kill_after` answers, kill the
    host inside the window while the other senders' requests are in flight."""
    answered = itertools.count(1)
    lock = threading.Lock()
    local = threading.local()
    clients: list[httpx.Client] = []

    def send(key: str) -> tuple[str, Answer]:
        if not hasattr(local, "http"):
            local.http = serve.http(api_key)
            with lock:
                clients.append(local.http)
        http: httpx.Client = local.http
        try:
            response = http.post("/runs", json=_body(key), headers={"Idempotency-Key": key})
        except httpx.TransportError:
            return key, None
        with lock:
            if kill_after is not None and next(answered) == kill_after:
                _kill_inside_the_window(serve, database_url)
        return key, (response.status_code, response.json())

    try:
        with ThreadPoolExecutor(SENDERS) as pool:
            return dict(pool.map(send, keys))
    finally:
        for client in clients:
            client.close()


def test_a_crash_between_claim_and_answer_never_blocks_a_key(
    backend: Backend, tmp_path: Path
) -> None:
    api_key = "crash_" + secrets.token_urlsafe(24)
    options = ServeOptions(tmp_path / "data", backend.new_database(), (f"{TENANT}={api_key}",))
    first: dict[str, Answer] = {}
    unanswered_at_crash = 0
    for round_number in range(MAX_ROUNDS):
        serve = ServeProcess(options, tmp_path / f"round-{round_number}.log")
        serve.wait_up()
        keys = [f"crash-{uuid.uuid4().hex}" for _ in range(KEYS_PER_ROUND)]
        try:
            first.update(
                _send_all(
                    serve,
                    api_key,
                    keys,
                    kill_after=KILL_AFTER_ANSWERS,
                    database_url=options.resolved_database_url(),
                )
            )
        finally:
            serve.kill()
        unanswered_at_crash = len(
            table_rows(options.resolved_database_url(), "idempotency", status_code=None)
        )
        if unanswered_at_crash:
            break
    assert unanswered_at_crash > 0, "no kill landed between a claim and its answer"
    before_crash = {key: answer for key, answer in first.items() if answer is not None}
    assert before_crash, "the host was killed before it answered anything"
    assert {answer[0] for answer in before_crash.values()} == {201}

    serve = ServeProcess(options, tmp_path / "after.log")
    serve.wait_up()
    try:
        retried = _send_all(serve, api_key, list(first), kill_after=None)
        with serve.http(api_key) as http:
            runs = list_all_runs(http)
    finally:
        serve.stop()

    refused = {key: answer for key, answer in retried.items() if answer is None or answer[0] != 201}
    assert not refused, refused
    for key, answer in before_crash.items():
        again = retried[key]
        assert again is not None
        assert again[1]["runId"] == answer[1]["runId"], key
    runs_per_key = Counter(tag for run in runs for tag in run.get("tags", []))
    assert {key: runs_per_key[key] for key in first} == dict.fromkeys(first, 1)
    run_of_key = {run["tags"][0]: run["runId"] for run in runs}
    for key, again in retried.items():
        assert again is not None
        assert again[1]["runId"] == run_of_key[key], key
