"""The fuzz tier: a fresh host per backend, and finished runs for the fuzzer to aim at."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from _backends import Backend
from e2e._server import ServerHandle, host_settings
from e2e._support import run_to_end, unique


@pytest.fixture(scope="session")
def fuzzed_host(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    data_dir = tmp_path_factory.mktemp(f"fuzzed-{backend.name}")
    handle = ServerHandle(host_settings(backend, data_dir), backend=backend.name)
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="session")
def finished_run_ids(fuzzed_host: ServerHandle) -> list[str]:
    """Runs of the fuzzing tenant that exist and are terminal, so a stream of one ends."""
    return [run_to_end(fuzzed_host.client(), unique("fuzz"))[0] for _ in range(2)]
