"""The command lane: an agent that runs as a process, one process per invocation.

The contract (docs/agents.md): the host starts `command` in `cwd` with the
invocation on stdin as one JSON document `{"agentId", "invocationId",
"input"}` and `WOPEVAL_MCP_URL` / `WOPEVAL_INVOCATION_ID` in its environment,
with `OPENAI_BASE_URL` (and `OPENAI_API_BASE`), `ANTHROPIC_BASE_URL` and their keys
naming its recording model proxy (`model_proxy_env`); the agent reaches its
tools through that MCP endpoint. Its decision is the
JSON it writes to the file `WOPEVAL_DECISION_FILE` names (in a directory only
the host's user can enter, made for this invocation and removed after it): a
channel nothing else writes to, so a framework that prints to stdout cannot
corrupt it. An agent that writes no such file decides with the last line it
prints on stdout. A nonzero exit, a timeout, or a decision that is not JSON
fails the invocation. Whatever ends the invocation (its end, a timeout, the
run's cancel) ends the process group with it; what the process wrote to
stderr goes to the host either way (`AgentContext.keep_output`).

The process inherits only a few neutral variables (PATH, HOME, locale, …)
plus `env`: the host's own settings and the credentials it injects at egress
stay out of the agent's reach.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from wopeval.agents.base import AgentContext, AgentFailed, AgentOutput

INHERITED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
DECISION_FILE_ENV = "WOPEVAL_DECISION_FILE"
STDERR_READ_BYTES = 64 * 1024
"""Bytes of stderr handed to the host (the last ones), which keeps the last 16 KiB of them
once redacted: the margin lets a secret cut by this bound fall outside what is kept."""
DECISION_LIMIT_BYTES = 16 * 1024 * 1024
"""Bytes of stdout kept (the last ones: the fallback decision is its last line), and the
largest decision file read."""
_READ_CHUNK = 64 * 1024


@dataclass
class _Tail:
    """The last `keep` bytes a stream gave, and how many it gave in all."""

    keep: int
    data: bytearray = field(default_factory=bytearray)
    total: int = 0


@dataclass(frozen=True)
class ProcessLaunch:
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    cwd: Path


class CommandAgent:
    def __init__(self, launch: ProcessLaunch, timeout_seconds: float) -> None:
        self._launch = launch
        self._timeout = timeout_seconds

    async def invoke(self, context: AgentContext) -> JsonValue:
        # A directory of the host's user alone (mkdtemp makes it 0700), removed with its file.
        with tempfile.TemporaryDirectory(
            prefix="wopeval-decision-", ignore_cleanup_errors=True
        ) as private:
            decision_file = Path(private) / "decision.json"
            stderr = _Tail(STDERR_READ_BYTES)
            try:
                stdout = await self._run(context, decision_file, stderr)
            finally:
                context.keep_output(AgentOutput(bytes(stderr.data), stderr.total))
            return await asyncio.to_thread(_decision, stdout, decision_file)

    async def _run(self, context: AgentContext, decision_file: Path, stderr: _Tail) -> bytes:
        """Run the process to its end; its stdout's tail, or AgentFailed."""
        request = {
            "agentId": context.agent_id,
            "invocationId": context.invocation_id,
            "input": context.input,
        }
        env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
        env.update(self._launch.env)
        env["WOPEVAL_MCP_URL"] = context.mcp_url
        env["WOPEVAL_INVOCATION_ID"] = context.invocation_id
        env[DECISION_FILE_ENV] = str(decision_file)
        # Any OpenAI or Anthropic client then talks to the recording model proxy (docs/llm.md).
        env.update(model_proxy_env(context))
        try:
            process = await asyncio.create_subprocess_exec(
                *self._launch.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._launch.cwd,
                env=env,
                start_new_session=True,  # its own process group, ended as one
            )
        except OSError as exc:
            raise AgentFailed(f"the agent's command could not be started: {exc}") from exc
        stdout = _Tail(DECISION_LIMIT_BYTES)
        readers = asyncio.gather(_collect(process.stdout, stdout), _collect(process.stderr, stderr))
        try:
            async with asyncio.timeout(self._timeout):
                await _send(process, json.dumps(request).encode())
                await readers
                code = await process.wait()
        except TimeoutError:
            await _end(process, readers)
            raise AgentFailed(f"the agent's process did not finish in {self._timeout:g}s") from None
        except BaseException:
            await _end(process, readers)
            raise
        _kill_group(process.pid)  # what it left running ends with the invocation
        if code != 0:
            raise AgentFailed(f"the agent's process exited with status {code}")
        return bytes(stdout.data)


def model_proxy_env(context: AgentContext) -> dict[str, str]:
    """The variables OpenAI and Anthropic clients read, naming the recording model proxy.

    `OPENAI_API_BASE` is the older name some frameworks (LlamaIndex, LiteLLM) still read.
    The keys are the invocation's token, never a real key (docs/llm.md).
    """
    return {
        "OPENAI_BASE_URL": context.openai_base_url,
        "OPENAI_API_BASE": context.openai_base_url,
        "OPENAI_API_KEY": context.openai_api_key,
        "ANTHROPIC_BASE_URL": context.anthropic_base_url,
        "ANTHROPIC_API_KEY": context.anthropic_api_key,
    }


def _decision(stdout: bytes, decision_file: Path) -> JsonValue:
    """The decision: the decision file's JSON when the agent wrote one, else stdout's last line."""
    written = _read_decision_file(decision_file)
    if written is not None:
        try:
            from_file: JsonValue = json.loads(written)
        except ValueError:
            raise AgentFailed(f"the agent's {DECISION_FILE_ENV} does not hold JSON") from None
        return from_file
    lines = [line for line in stdout.decode("utf-8", errors="replace").splitlines() if line.strip()]
    if not lines:
        raise AgentFailed("the agent's process printed no decision")
    try:
        decision: JsonValue = json.loads(lines[-1])
    except ValueError:
        raise AgentFailed("the last line the agent's process printed is not JSON") from None
    return decision


def _read_decision_file(path: Path) -> bytes | None:
    """The decision file's bytes; None when the agent wrote none (or only whitespace)."""
    try:
        # Not through a link the agent left in its place, and not waiting on a pipe it left
        # there (no one will write to it): only a regular file it wrote is read.
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AgentFailed(
            f"the agent's {DECISION_FILE_ENV} cannot be read: {exc.strerror}"
        ) from None
    with os.fdopen(descriptor, "rb") as opened:
        found = os.fstat(opened.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise AgentFailed(f"the agent's {DECISION_FILE_ENV} is not a regular file")
        if found.st_size > DECISION_LIMIT_BYTES:
            raise AgentFailed(
                f"the agent's {DECISION_FILE_ENV} is larger than {DECISION_LIMIT_BYTES} bytes"
            )
        written = opened.read(DECISION_LIMIT_BYTES + 1)
    return written if written.strip() else None


async def _send(process: asyncio.subprocess.Process, payload: bytes) -> None:
    stdin = process.stdin
    if stdin is None:
        return
    # An agent that exits without reading its input fails on its exit status, not here.
    with suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(payload + b"\n")
        await stdin.drain()
    stdin.close()


async def _collect(stream: asyncio.StreamReader | None, tail: _Tail) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_READ_CHUNK):
        tail.total += len(chunk)
        tail.data.extend(chunk)
        if len(tail.data) > tail.keep:
            del tail.data[: -tail.keep]


async def _end(
    process: asyncio.subprocess.Process, readers: asyncio.Future[tuple[None, None]]
) -> None:
    """Kill the process group and reap it; shielded, so a second cancel cannot leave a zombie."""
    _kill_group(process.pid)

    async def reap() -> None:
        await process.wait()
        # The readers end at the pipes' EOF, or were cancelled with the timeout's cancel.
        with suppress(Exception, asyncio.CancelledError):
            await readers

    await asyncio.shield(reap())


def _kill_group(pid: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
