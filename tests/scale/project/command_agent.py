"""The scale tier's agent in its own process (the command lane).

Input `{"args": {...}, "question": "..."}`: it calls `scale:lookup` with `args`
over MCP (where it is offered as `scale__lookup`), asks its model `question`
through the OpenAI SDK (whose base URL and key the host sets), and answers
`{"tool": <the tool's answer>, "model": <the reply>}`. With `"http10": true` it also asks
the same question streamed, as an HTTP/1.0 client (nginx's default towards a server it
proxies) reads a stream, and adds `"http10": {"chunked": <framed in chunks>, "text": <the
deltas' text>}`.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from urllib.parse import urlsplit

from mcp import Client
from openai import OpenAI


async def main() -> None:
    given = json.loads(sys.stdin.read())["input"]
    async with Client(os.environ["WOPEVAL_MCP_URL"]) as client:
        found = await client.call_tool("scale__lookup", given["args"])
    reply = OpenAI().chat.completions.create(
        model="scale-model", messages=[{"role": "user", "content": given["question"]}]
    )
    answer = {"tool": found.structured_content, "model": reply.choices[0].message.content}
    if given.get("http10"):
        answer["http10"] = streamed_as_http_1_0(given["question"])
    print(json.dumps(answer))


def streamed_as_http_1_0(question: str) -> dict[str, object]:
    """The question streamed from the model proxy over HTTP/1.0, the body read to the close."""
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    body = json.dumps(
        {
            "model": "scale-model",
            "stream": True,
            "messages": [{"role": "user", "content": question}],
        }
    )
    request = (
        f"POST {base.path.rstrip('/')}/chat/completions HTTP/1.0\r\nHost: {base.netloc}\r\n"
        f"Authorization: Bearer {os.environ['OPENAI_API_KEY']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
    )
    received = bytearray()
    with socket.create_connection((base.hostname, base.port), timeout=30) as connection:
        connection.sendall(request.encode())
        while chunk := connection.recv(65536):
            received += chunk
    head, _, answer = bytes(received).partition(b"\r\n\r\n")
    chunked = b"transfer-encoding: chunked" in head.lower()
    if chunked:
        return {"chunked": True, "text": None}
    events = [line.removeprefix(b"data: ") for line in answer.split(b"\n\n") if line]
    deltas = [json.loads(event)["choices"] for event in events if event != b"[DONE]"]
    text = "".join(c[0]["delta"].get("content") or "" for c in deltas if c)
    return {"chunked": False, "text": text}


if __name__ == "__main__":
    asyncio.run(main())
