"""Conformance self-tests: a real wopeval host per test module, proxies per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._servers import Host, wopeval_host


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    with wopeval_host(tmp_path_factory.mktemp("conformance-host")) as running:
        yield running
