"""What a model provider that did not answer is called, from the error the transport raised
to the two lines the CLI prints (client/_outage.py; the lanes' `_retry.transport_cause`)."""

from __future__ import annotations

import socket

import httpx
import pytest

from _processes import free_port
from wopeval.agents import shown_url
from wopeval.agents._retry import transport_cause


def _closed_port() -> int:
    port = free_port()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    return port


def _cause_of(url: str) -> str:
    with pytest.raises(httpx.TransportError) as failed:
        httpx.get(url, timeout=5.0)
    return transport_cause(failed.value)


def test_a_failed_connection_says_why() -> None:
    assert _cause_of(f"http://127.0.0.1:{_closed_port()}/v1") == "connection refused"
    assert _cause_of("http://wopeval-no-such-host.invalid/v1") == "name not resolved"
    assert transport_cause(RuntimeError("something else")) == "no connection"


def test_a_shown_url_keeps_no_credential_or_query() -> None:
    assert shown_url("https://user:sk-secret@api.example.com:8443/v1/?key=sk-2") == (
        "https://api.example.com:8443/v1"
    )
    assert shown_url("http://[::1]:9/v1") == "http://[::1]:9/v1"
