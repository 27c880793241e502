"""A project's rubric judges: `[[judges]]` entries of `wopeval.toml` (docs/graders.md, "The judge").

[[judges]]
id = "support-judge"
model = "gpt-4.1-mini"
api = "chat"                        # or "responses", "messages" (any the model boundary speaks)
base_url = "http://127.0.0.1:8000/v1"   # default: the API's provider's, as for the LLM lanes
api_key_env = "OPENAI_API_KEY"      # read at start, sent at egress only
prompt_file = "prompts/judge.md"    # or `prompt`; default: evals.DEFAULT_TEMPLATE
scale = 5                           # points 0..5; or choices = ["fail", "partial", "pass"]
threshold = 0.7                     # a criterion, and the trial, pass at score >= threshold
suites = ["acme.support.evals.refunds"]   # optional: the suites it judges
gate = false                        # stored and shown; calibrated gates use it (issue 27 item 4)

A judge with `suites` judges those suites; one without judges every other suite;
two judges claiming one suite, or two without `suites`, are refused at load.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

import httpx
from pydantic import BaseModel, ConfigDict, Field

from wopeval import evals
from wopeval.engine.catalog.project_llm import endpoint_of, read_prompt
from wopeval.models import APIS, ApiName, Endpoint, ModelApi

DEFAULT_JUDGE_MAX_TOKENS = 1024
DEFAULT_JUDGE_TIMEOUT_SECONDS = 60.0


class JudgeEntry(BaseModel):
    """A `[[judges]]` entry as written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    """The judge's id; its exchanges are recorded as agent `judge:<id>`."""
    model: str = Field(min_length=1)
    """The judge model, sent as the request's `model`."""
    api: ApiName = "chat"
    """The API it is asked through: `chat` (Chat Completions), `responses`, `messages`
    (Anthropic)."""
    base_url: str | None = None
    """The server; default: the API's provider's, as for the LLM lanes."""
    api_key_env: str | None = None
    """The variable holding the key (default: the provider's); read at start, sent at
    egress only."""
    prompt: str | None = None
    """The prompt template (`$input`, `$criteria`, `$scale`; `$$` for a dollar sign);
    default: a built-in template. Give it or `prompt_file`."""
    prompt_file: str | None = None
    """A file holding the prompt template, relative to the project."""
    scale: int | None = Field(default=None, ge=1, le=100)
    """Each criterion is scored 0..scale (default 1); give `scale` or `choices`."""
    choices: list[str] | None = Field(default=None, min_length=2)
    """Each criterion is one of these words, worst first (read as 0..1 evenly)."""
    threshold: float = Field(default=0.5, ge=0, le=1)
    """A criterion, and a trial, pass at a score (0..1) at least this."""
    suites: list[str] | None = None
    """The suiteIds it judges; absent, every suite no other judge names."""
    gate: bool = False
    """May fail a run, once its latest calibration clears `[calibration]`; otherwise its
    rubric tasks are advisory."""
    temperature: float = Field(default=0.0, ge=0, le=1)
    """At most 1, which every API the judge may speak accepts (Anthropic's bound)."""
    max_tokens: int = Field(default=DEFAULT_JUDGE_MAX_TOKENS, gt=0)
    """Sent as the request's `max_tokens`."""
    timeout_seconds: float = Field(default=DEFAULT_JUDGE_TIMEOUT_SECONDS, gt=0)
    """A judge request taking longer fails."""
    retries: int = Field(default=2, ge=0, le=10)
    """Extra attempts after a 429, a 5xx, a timeout or a connection error."""


@dataclass(frozen=True)
class Judge:
    """A declared judge: its grading rules (which its digest covers) and where it is asked."""

    rules: evals.JudgeRules
    api: ModelApi
    endpoint: Endpoint
    suites: tuple[str, ...] | None
    temperature: float
    max_tokens: int
    timeout_seconds: float
    retries: int
    http: httpx.AsyncClient
    """The host's outbound client (hosting/outbound.py): judgements share its kept
    connections instead of each opening its own (and loading the CA store)."""

    @property
    def judge_id(self) -> str:
        return self.rules.judge_id


def load_judge(entry: JudgeEntry, directory: Path, http: httpx.AsyncClient) -> Judge:
    """An entry resolved: its prompt file read, its template and scale checked, its key read."""
    where = f"judges {entry.id}"
    if entry.scale is not None and entry.choices is not None:
        raise ValueError(f"{where}: give `scale` or `choices`, not both")
    if entry.choices is not None and len(set(entry.choices)) != len(entry.choices):
        raise ValueError(f"{where}: `choices` are not distinct")
    read = read_prompt(where, "prompt", entry.prompt, entry.prompt_file, directory)
    template = evals.DEFAULT_TEMPLATE if read is None else read
    parsed = Template(template)
    unknown = set(parsed.get_identifiers()) - evals.TEMPLATE_FIELDS
    if unknown or not parsed.is_valid():
        raise ValueError(
            f"{where}: the prompt may use $input, $criteria and $scale only "
            f"(found {', '.join(sorted(unknown)) or 'a stray $'}; write $$ for a dollar sign)"
        )
    scale = evals.JudgeScale(
        points=None if entry.choices is not None else (entry.scale or 1),
        choices=None if entry.choices is None else tuple(entry.choices),
    )
    api = APIS[entry.api]
    return Judge(
        rules=evals.JudgeRules(
            judge_id=entry.id,
            model=entry.model,
            api=entry.api,
            template=template,
            scale=scale,
            threshold=entry.threshold,
            gate=entry.gate,
        ),
        api=api,
        endpoint=endpoint_of(where, api.provider, entry.base_url, entry.api_key_env),
        suites=None if entry.suites is None else tuple(entry.suites),
        temperature=entry.temperature,
        max_tokens=entry.max_tokens,
        timeout_seconds=entry.timeout_seconds,
        retries=entry.retries,
        http=http,
    )


def check_judges(judges: dict[str, Judge]) -> None:
    """Each suite has at most one judge: no suite claimed twice, at most one catch-all."""
    catch_all = [j.judge_id for j in judges.values() if j.suites is None]
    if len(catch_all) > 1:
        raise ValueError(f"judges {', '.join(catch_all)} all judge every suite: give `suites`")
    claimed: dict[str, str] = {}
    for judge in judges.values():
        for suite_id in judge.suites or ():
            if suite_id in claimed:
                raise ValueError(
                    f"suite {suite_id!r} is claimed by judges {claimed[suite_id]} "
                    f"and {judge.judge_id}"
                )
            claimed[suite_id] = judge.judge_id


def judge_for(judges: dict[str, Judge], suite_id: str) -> Judge | None:
    """The judge of a suite: the one naming it in `suites`, else the one without `suites`."""
    named = next((j for j in judges.values() if j.suites and suite_id in j.suites), None)
    return named or next((j for j in judges.values() if j.suites is None), None)
