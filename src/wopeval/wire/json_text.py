"""Compact JSON text for what the host stores and serves: event documents, JSON columns.

orjson writes the same compact, unescaped UTF-8 text as `json.dumps(value,
separators=(",", ":"), ensure_ascii=False)` several times faster; that is the
hot path of every event and every recorded call. orjson refuses integers
beyond 64 bits (an agent may return one), which the standard library writes.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def compact(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse(text: str | bytes) -> Any:
    return orjson.loads(text)
