"""The model proxy's upstream connections run on whichever event loop serves the host:
`wopeval serve` leaves the choice to uvicorn, which takes uvloop whenever it is installed
(as `uvicorn[standard]` and many agent stacks install it), so every test here runs on
asyncio's own loop and on uvloop's, whose transports are not `asyncio.Transport`s."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
import uvloop
from pytest_asyncio.plugin import LoopFactory


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
