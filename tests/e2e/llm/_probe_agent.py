"""A command-lane agent that sends its model proxy what each API refuses, and notes the answers.

It posts, with the token its environment hands it, a body that is not JSON
(declared JSON, and declared text), a Responses request without `model`, a Messages request without
`max_tokens`, and a request presenting a key that is neither the token nor a
host key; it writes each `[status, body]` to the file its input names and
decides `"probed"`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx


def main() -> None:
    request = json.loads(sys.stdin.read())["input"]
    openai_url, anthropic_url = os.environ["OPENAI_BASE_URL"], os.environ["ANTHROPIC_BASE_URL"]
    token = {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
    sent: dict[str, tuple[str, dict[str, str], Any]] = {
        "not-json": (openai_url + "/chat/completions", token, b"{not json"),
        "not-json-text": (
            openai_url + "/chat/completions",
            {**token, "Content-Type": "text/plain"},
            b"{not json",
        ),
        "responses-no-model": (openai_url + "/responses", token, {"input": "hi"}),
        "messages-no-max-tokens": (
            anthropic_url + "/v1/messages",
            {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"},
            {"model": "claude-test", "messages": [{"role": "user", "content": "hi"}]},
        ),
        "foreign-key": (
            anthropic_url + "/v1/messages",
            {"x-api-key": "sk-ant-not-the-token"},
            {"model": "claude-test", "max_tokens": 8, "messages": []},
        ),
    }
    answers: dict[str, Any] = {}
    with httpx.Client(timeout=30) as http:
        for name, (url, headers, body) in sent.items():
            if isinstance(body, bytes):
                answer = http.post(url, headers=headers, content=body)
            else:
                answer = http.post(url, headers=headers, json=body)
            answers[name] = [answer.status_code, answer.json()]
    Path(request["answersFile"]).write_text(json.dumps(answers))
    print(json.dumps("probed"))


if __name__ == "__main__":
    main()
