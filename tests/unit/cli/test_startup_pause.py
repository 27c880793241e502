"""Where a command pauses the collector (hosting/collector.py `paused_for_startup`), and the
line an embedded host logs once it is ready (bench/cli_latency.py times a start by it).

Each site is probed from inside: what it calls while it should be paused records
whether the collector ran, so a site that loses its pause fails here.
"""

from __future__ import annotations

import gc
import logging
from pathlib import Path

import pytest

import wopeval.client
from wopeval.cli._options import Target, connect
from wopeval.cli.main import Deferred
from wopeval.client import ClientError
from wopeval.client._embedded import EmbeddedHost, embedded_settings
from wopeval.store import DatabaseUnreachable

pytestmark = pytest.mark.usefixtures("collector_on")


class _Probed(Exception):
    """Raised by a probe once it has looked: the site goes no further."""


def test_a_command_s_module_is_imported_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pause_probe_command.py").write_text(
        'import gc\n\nPAUSED = not gc.isenabled()\n\n\ndef probe() -> None:\n    """Probe."""\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    Deferred("probe", "pause_probe_command:probe", "Probe.").load()
    import pause_probe_command  # type: ignore[import-not-found]

    assert pause_probe_command.PAUSED
    assert gc.isenabled()


def test_an_embedded_command_loads_its_client_side_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def probe(**_: object) -> None:
        seen.append(gc.isenabled())
        raise _Probed

    monkeypatch.setattr(wopeval.client, "embedded_settings", probe)
    target = Target(url=None, api_key=None, data_dir=tmp_path, project=None, database_url=None)
    with pytest.raises(_Probed), connect(target):
        pass
    assert seen == [False]
    assert gc.isenabled()


def test_an_embedded_host_starts_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def claim(_: object) -> None:
        seen.append(gc.isenabled())
        raise DatabaseUnreachable("wopeval.sqlite", "probed")

    monkeypatch.setattr("wopeval.hosting.ownership.claim", claim)
    host = EmbeddedHost(embedded_settings(data_dir=tmp_path, project=None, database_url=None))
    with pytest.raises(ClientError, match="probed"):
        host.start()
    assert seen == [False]
    assert gc.isenabled()


def test_an_embedded_host_says_where_it_is_once_ready(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="wopeval.embedded")
    settings = embedded_settings(data_dir=tmp_path, project=None, database_url=None)
    with EmbeddedHost(settings) as host:
        said = [r.getMessage() for r in caplog.records if r.name == "wopeval.embedded"]
        assert said == [f"embedded host ready at {host.base_url}"]
        assert host.base_url.startswith("http://127.0.0.1:")
