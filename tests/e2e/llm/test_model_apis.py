"""OpenAI Responses and Anthropic Messages at the model proxy, and the anthropic lane.

Command agents on the official `openai` SDK's Responses API and on the
official `anthropic` SDK, and an anthropic-lane agent, run in production
against the strict stand-in, whole and streamed; each exchange is recorded
with its API, usage and cost. The host then stops and `wopeval eval
--replay-model` replays each run from its recording: the stand-in receives no
request. A request the source never made is a model miss that names the
nearest recorded request and the diff — in the answer the agent's SDK gets
and in the trial's record.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openwop_client.types import CreateRunRequest

from _backends import Backend
from _model_server import REPORTED_SUFFIX, ModelServer, Received
from cli._support import Result, run_cli

from .._server import TENANT_A, ServerHandle, host_settings, running_host
from .._support import table_rows, unique, wait_terminal, whole_store
from ..evals._evals import golden, new_suite_id, suite

HERE = Path(__file__).parent
OPENAI_KEY_ENV = "APIS_TEST_OPENAI_KEY"
ANTHROPIC_KEY_ENV = "APIS_TEST_ANTHROPIC_KEY"
PRICE = {"input": 1.0, "output": 2.0}
ADD_TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
    {"content": "The sum is 5."},
]
ANSWER = {"answer": "The sum is 5."}
ORDER = "C-1000"
DESK_INPUT = {"question": f"Refund order {ORDER}"}
DESK_DECISION = {"action": "refund", "order": ORDER}
DESK_TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "shop__lookup", "arguments": {"order": ORDER}}]},
    {"tool_calls": [{"name": "shop__refund", "arguments": {"order": ORDER, "amount": 42.0}}]},
    {"json": DESK_DECISION},
]
AGENTS = {
    "responses": "apis.responses",
    "anthropic": "apis.anthropic",
    "desk": "apis.claude-desk",
    "probe": "apis.probe",
}


@dataclass(frozen=True)
class Keys:
    openai: str
    anthropic: str


@dataclass
class Recorded:
    """The production runs, recorded before the host stopped, and where to replay them."""

    settings_args: list[str]
    database_url: str
    project: Path
    runs: dict[str, dict[str, str]]
    """Per agent: task id → its source run."""
    inputs: dict[str, dict[str, dict[str, Any]]]
    env_file: Path
    probed: Path
    """What the proxy answered the probe agent's refused requests."""


@pytest.fixture(scope="module")
def keys() -> Iterator[Keys]:
    found = Keys("sk-openai-" + secrets.token_hex(16), "sk-ant-" + secrets.token_hex(16))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(OPENAI_KEY_ENV, found.openai)
        patch.setenv(ANTHROPIC_KEY_ENV, found.anthropic)
        yield found


@pytest.fixture(scope="module")
def stand_in() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


def _project(directory: Path, server: ModelServer) -> None:
    python = json.dumps(sys.executable)
    (directory / "llm_shop_tools.py").write_text((HERE / "llm_shop_tools.py").read_text())
    (directory / "workflows").mkdir()
    for agent in AGENTS.values():
        document = {"id": agent, "nodes": [{"id": "agent", "type": "core.agent", "agentId": agent}]}
        (directory / "workflows" / f"{agent}.json").write_text(json.dumps(document))
    upstream = f"""base_url = "{server.base_url}"
api_key_env = "{OPENAI_KEY_ENV}"
anthropic_base_url = "{server.root_url}"
anthropic_api_key_env = "{ANTHROPIC_KEY_ENV}"
timeout_seconds = 60
"""
    (directory / "wopeval.toml").write_text(
        f"""workflows = ["workflows/*.json"]

[[tools]]
name = "shop:lookup"
kind = "python"
callable = "llm_shop_tools:lookup"
description = "Look an order up."

[[tools]]
name = "shop:refund"
kind = "python"
callable = "llm_shop_tools:refund"

[[agents]]
id = "apis.responses"
lane = "command"
command = [{python}, {json.dumps(str(HERE / "_responses_agent.py"))}]
{upstream}
[[agents]]
id = "apis.anthropic"
lane = "command"
command = [{python}, {json.dumps(str(HERE / "_anthropic_agent.py"))}]
{upstream}
[[agents]]
id = "apis.probe"
lane = "command"
command = [{python}, {json.dumps(str(HERE / "_probe_agent.py"))}]
{upstream}
[[agents]]
id = "apis.claude-desk"
lane = "anthropic"
model = "claude-test"
base_url = "{server.root_url}"
api_key_env = "{ANTHROPIC_KEY_ENV}"
system_prompt = "You are the order desk."
max_tokens = 512
response_format = "json"
tools = ["shop:lookup", "shop:refund"]

[models."gpt-test-mini"]
input_per_mtok = {PRICE["input"]}
output_per_mtok = {PRICE["output"]}

[models."claude-test"]
input_per_mtok = {PRICE["input"]}
output_per_mtok = {PRICE["output"]}
"""
    )


def _produce(host: ServerHandle, agent: str, inputs: dict[str, Any]) -> str:
    client = host.client()
    request = CreateRunRequest(workflowId=agent, inputs=inputs)
    run_id: str = client.runs_create(request).runId
    events = wait_terminal(client, run_id)
    assert events[-1].type == "run.completed", [(e.type, e.payload) for e in events]
    return run_id


@pytest.fixture(scope="module")
def recorded(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    stand_in: ModelServer,
    keys: Keys,
) -> Recorded:
    directory = tmp_path_factory.mktemp(f"apis-project-{backend.name}")
    _project(directory, stand_in)
    env_file = tmp_path_factory.mktemp("apis-env") / "env.json"
    probed = env_file.parent / "probed.json"
    inputs: dict[str, dict[str, dict[str, Any]]] = {
        "apis.responses": {
            "whole": {"question": unique("r-whole"), "stream": False, "envFile": str(env_file)},
            "streamed": {"question": unique("r-streamed"), "stream": True},
            "chained": {"question": unique("r-chained"), "stream": True, "chain": True},
        },
        "apis.anthropic": {
            "whole": {"question": unique("a-whole"), "stream": False},
            "streamed": {"question": unique("a-streamed"), "stream": True},
            "raw": {"question": unique("a-raw"), "stream": False, "raw": True},
        },
        "apis.claude-desk": {"refund": DESK_INPUT},
        "apis.probe": {"probe": {"answersFile": str(probed)}},
    }
    script = stand_in.script
    for agent in ("apis.responses", "apis.anthropic"):
        for task in inputs[agent].values():
            script.add(task["question"], ADD_TURNS)
    script.add(json.dumps(DESK_INPUT, separators=(",", ":")), DESK_TURNS)
    data_dir = tmp_path_factory.mktemp(f"apis-host-{backend.name}")
    settings = host_settings(backend, data_dir, project=directory)
    with running_host(settings, backend) as host:
        runs = {
            agent: {task: _produce(host, agent, given) for task, given in tasks.items()}
            for agent, tasks in inputs.items()
        }
    return Recorded(
        settings_args=[
            "--project", str(directory), "--data-dir", str(data_dir),
            "--database-url", settings.resolved_database_url(),
            "--api-key", settings.api_keys[TENANT_A],
        ],
        database_url=settings.resolved_database_url(),
        project=directory,
        runs=runs,
        inputs=inputs,
        env_file=env_file,
        probed=probed,
    )  # fmt: skip


def _rows(recorded: Recorded, run_id: str) -> list[dict[str, Any]]:
    rows = table_rows(recorded.database_url, "model_calls", run_id=run_id)
    return sorted(rows, key=lambda row: row["ordinal"])


def _replay(
    recorded: Recorded, tmp_path: Path, agent: str, tasks: dict[str, dict[str, Any]]
) -> tuple[Result, dict[str, Any]]:
    """`wopeval eval SUITE_FILE --agent A --replay-model --from-run …` on the stopped host's
    store; returns the CLI's result and its JSON report."""
    expected = DESK_DECISION if agent == AGENTS["desk"] else ANSWER
    document = suite(
        new_suite_id("apis"),
        [{"taskId": task, "input": given, "expected": golden(expected, "json-match")}
         for task, given in tasks.items()],
        target=agent,
    )  # fmt: skip
    suite_file = tmp_path / "suite.json"
    suite_file.write_text(json.dumps(document))
    report = tmp_path / "report.json"
    result = run_cli(
        "eval", str(suite_file), "--agent", agent, "--replay-model", "--json", str(report),
        *[f"--from-run={task}={recorded.runs[agent][task]}" for task in tasks],
        *recorded.settings_args,
    )  # fmt: skip
    assert report.exists(), result.stdout + result.stderr
    found: dict[str, Any] = json.loads(report.read_text())
    return result, found


def _received(stand_in: ModelServer, recorded: Recorded, agent: str) -> list[Received]:
    """What reached the stand-in for the agent's conversations."""
    firsts = {
        given.get("question")
        if agent != AGENTS["desk"]
        else json.dumps(given, separators=(",", ":"))
        for given in recorded.inputs[agent].values()
    } - {None}
    return [r for r in stand_in.script.received if r.first_user in firsts]


def _trials(recorded: Recorded, run_id: str) -> dict[str, dict[str, Any]]:
    rows = table_rows(recorded.database_url, "task_trials", run_id=run_id)
    return {row["task_id"]: row["detail"] for row in rows}


def test_a_responses_agent_is_recorded_through_the_proxy_and_replayed_with_no_request(
    recorded: Recorded, stand_in: ModelServer, keys: Keys, tmp_path: Path
) -> None:
    agent = AGENTS["responses"]
    for task, run_id in recorded.runs[agent].items():
        rows = _rows(recorded, run_id)
        streamed = recorded.inputs[agent][task]["stream"]
        assert [(r["api"], r["via"], r["served_by"], r["status"], r["stream"]) for r in rows] == [
            ("responses", "proxy", "live", "ok", streamed)
        ] * 2, task
        first, second = rows
        assert first["response"]["output"][0]["type"] == "function_call"
        assert first["response_model"] == "gpt-test-mini" + REPORTED_SUFFIX
        assert first["prompt_tokens"] > 0
        assert first["cost_usd"] == pytest.approx(
            (first["prompt_tokens"] * PRICE["input"] + first["completion_tokens"] * PRICE["output"])
            / 1_000_000
        )
        assert "stream" not in first["request"], "transport keys are not part of the request"
        call_id = first["response"]["output"][0]["call_id"]
        # The function's output goes back by its call id, with the conversation or by reference.
        sent = second["request"]["input"]
        assert {"type": "function_call_output", "call_id": call_id,
                "output": json.dumps({"sum": 5})} in sent  # fmt: skip
        if task == "chained":
            assert second["request"]["previous_response_id"] == first["response"]["id"]
        assert second["response"]["output"][0]["content"][0]["text"] == "The sum is 5."
    received = _received(stand_in, recorded, agent)
    assert {r.path for r in received} == {"/v1/responses"}
    assert {r.headers.get("authorization") for r in received} == {f"Bearer {keys.openai}"}
    assert not any("x-api-key" in r.headers for r in received)

    before = stand_in.stats.requests
    result, report = _replay(recorded, tmp_path, agent, recorded.inputs[agent])
    assert result.code == 0, result.stdout + result.stderr
    assert report["summary"]["passed"] is True
    assert stand_in.stats.requests == before, "a replayed answer reached the model"
    for task, detail in _trials(recorded, report["runId"]).items():
        assert [(m["api"], m["via"], m["servedBy"]) for m in detail["modelCalls"]] == [
            ("responses", "proxy", "replay")
        ] * 2, task


def test_an_anthropic_agent_is_recorded_through_the_proxy_and_replayed_with_no_request(
    recorded: Recorded, stand_in: ModelServer, keys: Keys, tmp_path: Path
) -> None:
    agent = AGENTS["anthropic"]
    for task, run_id in recorded.runs[agent].items():
        rows = _rows(recorded, run_id)
        streamed = recorded.inputs[agent][task]["stream"]
        assert [(r["api"], r["via"], r["served_by"], r["status"], r["stream"]) for r in rows] == [
            ("messages", "proxy", "live", "ok", streamed)
        ] * 2, task
        first, second = rows
        (use,) = first["response"]["content"]
        assert (use["type"], use["name"], use["input"]) == ("tool_use", "add", {"a": 2, "b": 3})
        assert first["response"]["stop_reason"] == "tool_use"
        assert first["response_model"] == "claude-test" + REPORTED_SUFFIX
        assert first["cost_usd"] == pytest.approx(
            (first["prompt_tokens"] * PRICE["input"] + first["completion_tokens"] * PRICE["output"])
            / 1_000_000
        )
        assert second["request"]["messages"][2] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use["id"],
                         "content": json.dumps({"sum": 5})}],
        }  # fmt: skip
        assert second["response"]["content"] == [{"type": "text", "text": "The sum is 5."}]
    received = _received(stand_in, recorded, agent)
    assert {r.path for r in received} == {"/v1/messages"}
    # The real key at egress only, in Anthropic's header; the agent's own token went nowhere.
    assert {r.headers.get("x-api-key") for r in received} == {keys.anthropic}
    assert not any(keys.openai in json.dumps(r.headers) for r in received)
    assert all(r.headers.get("anthropic-version") for r in received)
    assert all("authorization" not in r.headers for r in received)

    before = stand_in.stats.requests
    result, report = _replay(recorded, tmp_path, agent, recorded.inputs[agent])
    assert result.code == 0, result.stdout + result.stderr
    assert stand_in.stats.requests == before, "a replayed answer reached the model"
    for task, detail in _trials(recorded, report["runId"]).items():
        assert [(m["api"], m["servedBy"]) for m in detail["modelCalls"]] == [
            ("messages", "replay")
        ] * 2, task


def test_the_anthropic_lane_records_its_tool_loop_and_replays_it_with_no_request(
    recorded: Recorded, stand_in: ModelServer, keys: Keys, tmp_path: Path
) -> None:
    run_id = recorded.runs[AGENTS["desk"]]["refund"]
    calls = table_rows(recorded.database_url, "tool_calls", run_id=run_id)
    assert [(c["tool"], c["served_by"], c["status"]) for c in calls] == [
        ("shop:lookup", "live", "ok"), ("shop:refund", "live", "ok")
    ]  # fmt: skip
    rows = _rows(recorded, run_id)
    assert [(r["api"], r["via"], r["served_by"], r["status"]) for r in rows] == [
        ("messages", "lane", "live", "ok")
    ] * 3
    first, second, third = (row["request"] for row in rows)
    assert first["system"] == "You are the order desk."
    assert [tool["name"] for tool in first["tools"]] == ["shop__lookup", "shop__refund"]
    use = rows[0]["response"]["content"][0]
    assert second["messages"][1] == {"role": "assistant", "content": [use]}
    (result,) = second["messages"][2]["content"]
    assert (result["type"], result["tool_use_id"]) == ("tool_result", use["id"])
    assert json.loads(result["content"])["total"] == 42.0
    assert len(third["messages"]) == 5
    assert all(row["cost_usd"] and row["prompt_tokens"] for row in rows)
    # The lane's SDK presents the key itself (this SDK as a bearer token).
    (credential,) = {
        r.headers.get("x-api-key") or r.headers.get("authorization")
        for r in _received(stand_in, recorded, AGENTS["desk"])
    }
    assert credential in (keys.anthropic, f"Bearer {keys.anthropic}")
    store = json.dumps(whole_store(recorded.database_url), default=str)
    assert keys.anthropic not in store
    assert keys.openai not in store

    before = stand_in.stats.requests
    replayed, report = _replay(recorded, tmp_path, AGENTS["desk"], {"refund": DESK_INPUT})
    assert replayed.code == 0, replayed.stdout + replayed.stderr
    assert report["liveCalls"] == 0
    assert stand_in.stats.requests == before, "a replayed answer reached the model"
    detail = _trials(recorded, report["runId"])["refund"]
    assert [(m["api"], m["via"], m["servedBy"]) for m in detail["modelCalls"]] == [
        ("messages", "lane", "replay")
    ] * 3


def test_a_request_the_source_never_made_is_a_miss_naming_the_nearest_one_and_the_diff(
    recorded: Recorded, stand_in: ModelServer, tmp_path: Path
) -> None:
    agent = AGENTS["responses"]
    changed = {**recorded.inputs[agent]["whole"], "instructions": "Be terse."}
    del changed["envFile"]
    before = stand_in.stats.requests

    result, report = _replay(recorded, tmp_path, agent, {"whole": changed})

    assert result.code == 1, result.stdout + result.stderr
    assert stand_in.stats.requests == before, "a model miss reached the model"
    assert report["summary"]["fixtureMissCount"] == 1
    nearest = "nearest recorded request: exchange 0, 1 path differs: $.instructions"
    detail = _trials(recorded, report["runId"])["whole"]
    (miss,) = detail["modelCalls"]
    assert (miss["api"], miss["servedBy"], miss["status"]) == ("responses", "miss", "error")
    assert miss["error"]["code"] == "model_replay_miss"
    assert miss["error"]["nearestReason"] == nearest
    assert miss["error"]["diff"] == [
        {"path": "$.instructions", "kind": "added", "actual": "Be terse."}
    ]
    (line,) = [task for task in report["tasks"] if task["taskId"] == "whole"]
    assert nearest in json.dumps(line)
    # The agent's SDK raised the proxy's 400, which shows the values.
    tail = detail["stderr"]
    assert "openai.BadRequestError" in tail
    assert 'path differs: $.instructions: recorded (absent), sent "Be terse."' in tail


def test_the_agent_is_handed_both_proxies_and_only_its_token(
    recorded: Recorded, keys: Keys
) -> None:
    handed = json.loads(recorded.env_file.read_text())
    token = handed["OPENAI_API_KEY"]
    assert handed["ANTHROPIC_API_KEY"] == token
    assert len(token) >= 40
    assert token not in (keys.openai, keys.anthropic)
    assert handed["OPENAI_BASE_URL"].endswith(f"/host/wopeval/openai/{token}/v1")
    assert handed["OPENAI_API_BASE"] == handed["OPENAI_BASE_URL"]
    # Anthropic's SDK adds `/v1/messages` itself.
    assert handed["ANTHROPIC_BASE_URL"].endswith(f"/host/wopeval/anthropic/{token}")
    assert token not in json.dumps(whole_store(recorded.database_url), default=str)


def test_what_an_api_refuses_is_a_4xx_in_its_own_shape_and_reaches_no_model(
    recorded: Recorded, stand_in: ModelServer
) -> None:
    answers = json.loads(recorded.probed.read_text())
    # A body declared JSON that is not is refused by the host's request guard, before any
    # route, in the host's envelope; one declared otherwise reaches the route.
    assert answers["not-json"][0] == 400
    assert answers["not-json"][1]["error"] == "validation_error"
    assert answers["not-json-text"] == [
        400,
        {"error": {"message": "The request body is not JSON.", "type": "invalid_request_error",
                   "code": "invalid_json"}},
    ]  # fmt: skip
    assert answers["responses-no-model"][0] == 400
    assert answers["responses-no-model"][1]["error"]["message"] == "A response needs `model`."
    assert answers["messages-no-max-tokens"] == [
        400,
        {"type": "error",
         "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"}},
    ]  # fmt: skip
    # A key that is neither the token nor one of its tenant's: the one refusal of every
    # token endpoint, in the host's envelope.
    assert answers["foreign-key"][0] == 404
    assert answers["foreign-key"][1]["error"] == "not_found"
    assert _rows(recorded, recorded.runs[AGENTS["probe"]]["probe"]) == []
    assert _received(stand_in, recorded, AGENTS["probe"]) == []
