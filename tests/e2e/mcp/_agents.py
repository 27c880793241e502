"""Command-lane agents of the MCP end-to-end tests, one process per invocation.

`probe`: writes its `WOPEVAL_MCP_URL` to the file `urlFile` (never into its
decision: the token is a capability), lists its tools there, makes the calls
its input names and decides what it saw; with `foreignKey` in its input it
first asks its own endpoint with that API key (another tenant's).

`misbehave`: fails the way its input says: `exit` (status 3 after writing to
stderr), `garbage` (a last line that is not JSON), `silent` (no output),
`hang` (writes its pid and its child's pid to `pids`, then waits forever).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


async def probe(invocation: dict[str, Any]) -> dict[str, Any]:
    # Imported here: `misbehave` must start fast, without the MCP stack.
    import httpx
    from mcp import Client

    url = os.environ["WOPEVAL_MCP_URL"]
    Path(invocation["input"]["urlFile"]).write_text(url)  # noqa: ASYNC240 (a one-line file)
    request = invocation["input"]
    seen: dict[str, Any] = {
        "sameInvocationId": os.environ["WOPEVAL_INVOCATION_ID"] == invocation["invocationId"],
    }
    if "foreignKey" in request:
        probe_body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        async with httpx.AsyncClient() as http:
            foreign = await http.post(
                url, json=probe_body, headers={"Authorization": f"Bearer {request['foreignKey']}"}
            )
        seen["foreignStatus"] = foreign.status_code
    async with Client(url) as client:
        listed = await client.list_tools()
        seen["tools"] = sorted(tool.name for tool in listed.tools)
        results = []
        for call in request.get("calls", []):
            result = await client.call_tool(call["tool"], call["args"])
            results.append({"isError": result.is_error, "structured": result.structured_content})
        seen["results"] = results
    return seen


def misbehave(invocation: dict[str, Any]) -> None:
    mode = invocation["input"]["mode"]
    if mode == "exit":
        print("step 1 done")
        print("Traceback: the agent gave up on order A-1001", file=sys.stderr)
        sys.exit(3)
    if mode == "garbage":
        print('{"almost": "json"')
        return
    if mode == "silent":
        return
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    Path(invocation["input"]["pids"]).write_text(json.dumps([os.getpid(), child.pid]))
    while True:
        time.sleep(1)


def main() -> None:
    invocation = json.loads(sys.stdin.read())
    if sys.argv[1] == "probe":
        print("probing", file=sys.stderr)
        print(json.dumps(asyncio.run(probe(invocation))))
    else:
        misbehave(invocation)


if __name__ == "__main__":
    main()
