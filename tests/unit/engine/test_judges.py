"""`[[judges]]` entries as the catalog loads them (engine/catalog/judges.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from wopeval.engine.catalog.judges import JudgeEntry, check_judges, judge_for, load_judge

HTTP = httpx.AsyncClient()
"""Loading never calls out; a judge only keeps the host's client."""


def entry(**fields: Any) -> JudgeEntry:
    return JudgeEntry.model_validate({"id": "j", "model": "m", **fields})


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"prompt": "Grade $output"}, "may use \\$input, \\$criteria and \\$scale only"),
        ({"prompt": "Costs 5$"}, "a stray \\$"),
        ({"prompt": "p", "prompt_file": "f.md"}, "not both"),
        ({"scale": 5, "choices": ["no", "yes"]}, "not both"),
        ({"choices": ["yes", "yes"]}, "not distinct"),
        ({"prompt_file": "missing.md"}, "prompt_file"),
        ({"api": "messages", "temperature": 1.5}, None),
        ({"api_key_env": "RUBRIC_UNIT_UNSET_KEY"}, "RUBRIC_UNIT_UNSET_KEY is not set"),
    ],
)
def test_a_judge_entry_that_cannot_judge_is_refused_at_load(
    tmp_path: Path, fields: dict[str, Any], why: str | None
) -> None:
    if why is None:
        with pytest.raises(ValueError, match="less than or equal to 1"):
            entry(**fields)
        return
    with pytest.raises(ValueError, match=why):
        load_judge(entry(**fields), tmp_path, HTTP)


def test_a_prompt_file_is_read_and_a_dollar_sign_is_written_twice(tmp_path: Path) -> None:
    (tmp_path / "judge.md").write_text("Grade $criteria at $$0.", encoding="utf-8")
    judge = load_judge(entry(prompt_file="judge.md", choices=["no", "yes"]), tmp_path, HTTP)
    assert judge.rules.template == "Grade $criteria at $$0."
    assert judge.rules.scale.choices == ("no", "yes")


def test_each_suite_has_at_most_one_judge(tmp_path: Path) -> None:
    named = load_judge(entry(id="named", suites=["a.evals.x"]), tmp_path, HTTP)
    anything = load_judge(entry(id="any"), tmp_path, HTTP)
    judges = {"named": named, "any": anything}
    check_judges(judges)
    assert judge_for(judges, "a.evals.x") is named
    assert judge_for(judges, "b.evals.y") is anything
    assert judge_for({"named": named}, "b.evals.y") is None
    with pytest.raises(ValueError, match="all judge every suite"):
        check_judges({**judges, "other": load_judge(entry(id="other"), tmp_path, HTTP)})
    twice = load_judge(entry(id="twice", suites=["a.evals.x"]), tmp_path, HTTP)
    with pytest.raises(ValueError, match="claimed by judges named and twice"):
        check_judges({"named": named, "twice": twice})
