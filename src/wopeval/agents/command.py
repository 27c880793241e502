"""The command lane: an agent that runs as a process, one process per invocation.

The contract (docs/agents.md): the host starts `command` in `cwd` with the
invocation on stdin as one JSON document `{"agentId", "invocationId",
"input"}` and `WOPEVAL_MCP_URL` / `WOPEVAL_INVOCATION_ID` in its environment,
with `OPENAI_BASE_URL` (and `OPENAI_API_BASE`), `ANTHROPIC_BASE_URL` and their keys
naming its recording model proxy (`model_proxy_env`);
the agent reaches its tools through that MCP endpoint and prints its decision
as the last JSON line on stdout. A nonzero exit, a timeout or a last line that
is not JSON fails the invocation, with the end of its stderr kept for the task
detail. Whatever ends the invocation (its end, a timeout, the run's cancel)
ends the process group with it.

The process inherits only a few neutral variables (PATH, HOME, locale, …)
plus `env`: the host's own settings and the credentials it injects at egress
stay out of the agent's reach.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from wopeval.agents.base import AgentContext, AgentFailed

INHERITED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
STDERR_TAIL_CHARS = 4000
STDOUT_LIMIT_BYTES = 16 * 1024 * 1024
"""Bytes of stdout kept (the last ones): the decision is its last line."""
_READ_CHUNK = 64 * 1024


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
        request = {
            "agentId": context.agent_id,
            "invocationId": context.invocation_id,
            "input": context.input,
        }
        env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
        env.update(self._launch.env)
        env["WOPEVAL_MCP_URL"] = context.mcp_url
        env["WOPEVAL_INVOCATION_ID"] = context.invocation_id
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
        stdout, stderr = bytearray(), bytearray()
        readers = asyncio.gather(
            _collect(process.stdout, stdout, STDOUT_LIMIT_BYTES),
            _collect(process.stderr, stderr, STDERR_TAIL_CHARS * 4),
        )
        try:
            async with asyncio.timeout(self._timeout):
                await _send(process, json.dumps(request).encode())
                await readers
                code = await process.wait()
        except TimeoutError:
            await _end(process, readers)
            raise AgentFailed(
                f"the agent's process did not finish in {self._timeout:g}s", _tail(stderr)
            ) from None
        except BaseException:
            await _end(process, readers)
            raise
        _kill_group(process.pid)  # what it left running ends with the invocation
        if code != 0:
            raise AgentFailed(f"the agent's process exited with status {code}", _tail(stderr))
        return _decision(bytes(stdout), stderr)


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


def _decision(stdout: bytes, stderr: bytearray) -> JsonValue:
    lines = [line for line in stdout.decode("utf-8", errors="replace").splitlines() if line.strip()]
    if not lines:
        raise AgentFailed("the agent's process printed no decision", _tail(stderr))
    try:
        decision: JsonValue = json.loads(lines[-1])
    except ValueError:
        raise AgentFailed(
            "the last line the agent's process printed is not JSON", _tail(stderr)
        ) from None
    return decision


async def _send(process: asyncio.subprocess.Process, payload: bytes) -> None:
    stdin = process.stdin
    if stdin is None:
        return
    # An agent that exits without reading its input fails on its exit status, not here.
    with suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(payload + b"\n")
        await stdin.drain()
    stdin.close()


async def _collect(stream: asyncio.StreamReader | None, sink: bytearray, keep: int) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_READ_CHUNK):
        sink.extend(chunk)
        if len(sink) > keep:
            del sink[:-keep]


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


def _tail(stderr: bytearray) -> str | None:
    text = stderr.decode("utf-8", errors="replace")[-STDERR_TAIL_CHARS:]
    return text or None
