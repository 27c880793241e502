"""A host that cannot start says why in full, with no traceback: `serve` and embedded commands.

A project that does not load names its file, the field path and pydantic's
message; a database that cannot be reached gives the database's own message.
`serve` exits 3 (it could not start), an embedded command 4 (a host error).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from _backends import PostgresDatabases
from _processes import ServeOptions, ServeProcess, free_port
from wopeval.cli._exit import ExitCode
from wopeval.cli.serve import STARTUP_FAILED

from ._support import run_cli

EMBEDDED_ERROR = 4
BAD_LANE = (
    "agents[0].lane: Input should be 'scripted', 'python', 'command', 'http', 'openai' or "
    "'anthropic'"
)
PYDANTIC_NOISE = ("Traceback", "errors.pydantic.dev", "sqlalche.me", "input_value")


def _bad_project(tmp_path: Path) -> Path:
    project = tmp_path / "bad"
    project.mkdir()
    (project / "wopeval.toml").write_text(
        '[[agents]]\nid = "x"\nlane = "pythn"\ncallable = "m:f"\n', encoding="utf-8"
    )
    return project


def _serve(tmp_path: Path, *, project: Path | None = None, database_url: str | None = None) -> str:
    """Start `wopeval serve`, expect it to exit STARTUP_FAILED; its whole output."""
    key = f"t=start_{secrets.token_urlsafe(16)}"
    options = ServeOptions(tmp_path / "data", database_url, (key,), project)
    serve = ServeProcess(options, tmp_path / "serve.log")
    try:
        assert serve.outcome() == STARTUP_FAILED, serve.output()
    finally:
        serve.stop()
    return serve.output()


def _clean(text: str) -> None:
    for noise in PYDANTIC_NOISE:
        assert noise not in text, text


def test_serve_names_the_file_and_field_of_a_project_that_does_not_load(tmp_path: Path) -> None:
    output = _serve(tmp_path, project=_bad_project(tmp_path))
    assert f"ERROR:    {tmp_path / 'bad' / 'wopeval.toml'}: {BAD_LANE}" in output
    _clean(output)


def test_an_embedded_command_names_them_too(tmp_path: Path) -> None:
    project = _bad_project(tmp_path)
    result = run_cli("runs", "list", "--project", str(project), "--data-dir", str(tmp_path / "d"))
    assert result.code == EMBEDDED_ERROR, result.stderr
    assert f"the embedded host did not start: {project / 'wopeval.toml'}: {BAD_LANE}" in (
        result.stderr
    )
    _clean(result.stderr)


def test_an_mcp_servers_unset_credential_is_named_not_called_unreachable(
    tmp_path: Path,
) -> None:
    """The README's MCP example needs ORDERS_TOKEN to run live; without it the user must
    learn that variable, not that the server "could not be started or reached"."""
    project = tmp_path / "needs-a-secret"
    project.mkdir()
    # child_env drops every WOPEVAL_* variable: this one is unset in the command.
    (project / "wopeval.toml").write_text(
        '[[mcp_servers]]\nname = "orders"\ncommand = ["python", "orders_server.py"]\n'
        'credential = { env = "WOPEVAL_TEST_ORDERS_TOKEN", server_env = "ORDERS_API_TOKEN" }\n',
        encoding="utf-8",
    )
    result = run_cli("run", "anything", "--project", str(project),
                     "--data-dir", str(tmp_path / "d"))  # fmt: skip
    assert result.code == EMBEDDED_ERROR, result.stderr
    said = " ".join(result.stderr.split())
    assert "MCP server 'orders': the environment variable WOPEVAL_TEST_ORDERS_TOKEN is not set" in (
        said
    )
    _clean(result.stderr)


def test_a_workflow_file_of_the_project_names_its_own_path_and_field(tmp_path: Path) -> None:
    project = tmp_path / "workflow-bad"
    (project / "workflows").mkdir(parents=True)
    (project / "wopeval.toml").write_text('workflows = ["workflows/*.json"]\n', encoding="utf-8")
    workflow = project / "workflows" / "w.json"
    workflow.write_text('{"id": "w", "nodes": [{"id": "a", "type": "core.nop"}]}', "utf-8")
    result = run_cli("runs", "list", "--project", str(project), "--data-dir", str(tmp_path / "d"))
    assert result.code == EMBEDDED_ERROR, result.stderr
    expected = f"{workflow}: nodes[0].type: Input should be 'core.noop' or 'core.agent'"
    assert expected in result.stderr
    _clean(result.stderr)


def _refused_url() -> str:
    return f"postgresql+psycopg://wopeval:secret-pw@127.0.0.1:{free_port()}/nowhere"


REFUSED = "Connection refused"


def test_serve_on_an_unreachable_database_prints_the_databases_message(tmp_path: Path) -> None:
    url = _refused_url()
    output = _serve(tmp_path, database_url=url)
    said = "wopeval serve: cannot connect to the database postgresql+psycopg://wopeval:***@"
    assert said in output
    assert REFUSED in output
    assert "secret-pw" not in output
    _clean(output)


def test_an_embedded_command_on_it_prints_the_same(tmp_path: Path) -> None:
    result = run_cli(
        "runs", "list", "--database-url", _refused_url(), "--data-dir", str(tmp_path / "d")
    )
    assert result.code == EMBEDDED_ERROR, result.stderr
    assert "the embedded host did not start: cannot connect to the database" in result.stderr
    assert REFUSED in result.stderr
    assert "secret-pw" not in result.stderr
    _clean(result.stderr)


@pytest.mark.postgres
def test_a_database_the_server_does_not_have_is_named_by_the_server(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    missing = f"{postgres_databases.prefix}_absent"
    server = make_url(postgres_databases.admin_url)
    url = server.set(drivername="postgresql+psycopg", database=missing).render_as_string(False)
    result = run_cli("runs", "list", "--database-url", url, "--data-dir", str(tmp_path / "d"))
    assert result.code == EMBEDDED_ERROR, result.stderr
    assert f'database "{missing}" does not exist' in result.stderr
    _clean(result.stderr)


BAD_URL = "mysql://wopeval:secret-pw@127.0.0.1/runs"
SAID_OF_BAD_URL = "wopeval stores runs in SQLite or PostgreSQL, not 'mysql'"


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (("serve",), ExitCode.ERROR),
        (("worker",), ExitCode.ERROR),
        (("purge", "--older-than-days", "1"), ExitCode.ERROR),
        (("recordings", "export", "--tag", "t", "-o", "bundle.tgz"), ExitCode.ERROR),
        (("runs", "list"), EMBEDDED_ERROR),
    ],
)
def test_a_database_url_no_store_opens_is_named_before_anything_starts(
    tmp_path: Path, command: tuple[str, ...], code: int
) -> None:
    result = run_cli(
        *command, "--database-url", BAD_URL, "--data-dir", str(tmp_path / "d"), cwd=tmp_path
    )
    assert result.code == code, result.stderr
    assert SAID_OF_BAD_URL in " ".join(result.stderr.split()), result.stderr
    assert "secret-pw" not in result.stderr
    assert not (tmp_path / "d").exists()
    _clean(result.stderr)
