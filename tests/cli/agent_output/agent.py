"""Command-lane agents of the agent-output tests: what each says on stderr and how it decides.

Run by the host in the test's project directory, one process per invocation, as
`agent.py MODE`:

`noisy`: writes 40 KiB of numbered filler lines to stderr, then every secret it
can find: its token (`OPENAI_API_KEY`) and MCP URL, the project's configured
keys (`secrets.json`, which the test wrote), a `Bearer` header and a
provider-shaped key of its own (all but the configured keys also written to the
file its input's `tokenFile` names, for the test to look for); then its
`LAST_WORDS`. Exits 1 when its input says `fail`, else decides through its
decision file.
`chatty`: like smolagents, writes its decision to `WOPEVAL_DECISION_FILE`, then
prints a final answer of its own and a progress line to stdout; says on stderr
where the file was and its directory's mode.
`plain`: prints its decision as the last line of stdout, and writes no file.
`link`: leaves a symbolic link to a JSON file where its decision file goes.
`fifo`: leaves a named pipe there, which no one will ever write to.
`idle`: decides at once: no tool call, no model call.
`tools`: calls `out__lookup` (the offered name of `out:lookup`) through its MCP endpoint,
then decides (no model call).
`model`: asks the model through its proxy and calls `out__lookup`; with a file
`skip-model` in its working directory it does not ask the model, and decides the same.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

FILLER_LINES = 1000
LAST_WORDS = "the agent gave up: these are its last words"
MODEL = "gpt-test-mini"
QUESTION = "agent-output: may I look the key up?"


def decide(decision: Any) -> None:
    Path(os.environ["WOPEVAL_DECISION_FILE"]).write_text(json.dumps(decision))


def noisy(request: dict[str, Any]) -> None:
    token, mcp_url = os.environ["OPENAI_API_KEY"], os.environ["WOPEVAL_MCP_URL"]
    bearer, provider_key = "bt-" + secrets.token_hex(16), "sk-proj-" + secrets.token_hex(20)
    said = {"token": token, "mcpUrl": mcp_url, "bearer": bearer, "providerKey": provider_key}
    Path(request["tokenFile"]).write_text(json.dumps(said))
    for number in range(FILLER_LINES):
        print(f"filler line {number:04d} " + "." * 24, file=sys.stderr)
    configured = json.loads(Path("secrets.json").read_text())
    print(f"connecting to {mcp_url} with key {token}", file=sys.stderr)
    for name, value in configured.items():
        print(f"using the {name} {value}", file=sys.stderr)
    print(f"Authorization: Bearer {bearer}", file=sys.stderr)
    print(f"provider key {provider_key}", file=sys.stderr)
    print(LAST_WORDS, file=sys.stderr)
    if request.get("fail"):
        sys.exit(1)
    decide({"said": "everything"})


def chatty() -> None:
    where = Path(os.environ["WOPEVAL_DECISION_FILE"])
    mode = stat.S_IMODE(where.parent.stat().st_mode)
    print(f"decision file {where} in a directory of mode {mode:o}", file=sys.stderr)
    decide({"answer": 42})
    print("Final answer: 42")
    print("[Step 3: Duration 0.41 seconds | Input tokens: 1,204 | Output tokens: 12]")


def link() -> None:
    target = Path("secrets.json").resolve()
    Path(os.environ["WOPEVAL_DECISION_FILE"]).symlink_to(target)


async def tools(request: dict[str, Any], *, ask_model: bool) -> None:
    from mcp import Client

    if ask_model and not os.path.exists("skip-model"):  # noqa: ASYNC240 (before any await)
        from openai import AsyncOpenAI

        model = AsyncOpenAI(max_retries=0)
        await model.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": QUESTION}]
        )
    async with Client(os.environ["WOPEVAL_MCP_URL"]) as client:
        found = await client.call_tool("out__lookup", {"key": request["key"]})
    decide({"looked": found.structured_content})


def main() -> None:
    request = json.loads(sys.stdin.read())["input"]
    mode = sys.argv[1]
    if mode == "noisy":
        noisy(request)
    elif mode == "chatty":
        chatty()
    elif mode == "plain":
        print("thinking…")
        print(json.dumps({"answer": "plain"}))
    elif mode == "link":
        link()
    elif mode == "fifo":
        os.mkfifo(os.environ["WOPEVAL_DECISION_FILE"])
    elif mode == "idle":
        decide({"answer": "nothing to do"})
    else:
        asyncio.run(tools(request, ask_model=mode == "model"))


if __name__ == "__main__":
    main()
