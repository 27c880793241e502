"""Idle recordings (evals/_idle.py): when a run recorded nothing a replay could test, and the
note an eval trial's reason carries when its agent skipped the model its source asked."""

from __future__ import annotations

import pytest

from wopeval import evals


@pytest.mark.parametrize(
    ("tools", "models", "handed", "reasons"),
    [(1, 1, True, ()),
     (3, 0, False, ()),
     (0, 2, True, ("no_tool_calls",)),
     (0, 0, False, ("no_tool_calls",)),
     (2, 0, True, ("no_model_calls",)),
     (0, 0, True, ("no_tool_calls", "no_model_calls"))],
)  # fmt: skip
def test_idle_reasons(tools: int, models: int, handed: bool, reasons: tuple[str, ...]) -> None:
    assert (
        evals.idle_reasons(tool_calls=tools, model_calls=models, model_proxy_handed=handed)
        == reasons
    )


def test_an_idle_agent_is_described_in_one_line() -> None:
    assert evals.describe_idle("a", ["no_tool_calls", "no_model_calls"]) == (
        "agent a made no tool call and made no model call though it was handed the model proxy"
    )
    assert evals.describe_idle("a", ["newer_reason"]) == "agent a newer_reason"


@pytest.mark.parametrize(
    ("source", "made", "note"),
    [(None, 0, None),
     (0, 0, None),
     (2, 1, None),
     (1, 0, "the agent made no model call where its source run made 1 model call"),
     (3, 0, "the agent made no model call where its source run made 3 model calls")],
)  # fmt: skip
def test_missing_model_calls(source: int | None, made: int, note: str | None) -> None:
    assert evals.missing_model_calls(source, made) == note
