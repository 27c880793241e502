"""A strict local stand-in for the model providers, playing scripted conversations.

No test reaches a model beyond loopback: this server speaks three real wire APIs,
whole and streamed (SSE), and the official `openai` and `anthropic` SDKs talk to it:

    POST /v1/chat/completions   OpenAI Chat Completions (chat.py)
    POST /v1/responses          OpenAI Responses, `previous_response_id` included (responses.py)
    POST /v1/messages           Anthropic Messages (messages.py)

It refuses what the providers refuse, in each one's error shape (the *_checks.py
modules): a missing credential (401), a missing required field, a function name
outside `^[a-zA-Z0-9_-]{1,64}$`, a tool result naming a call the conversation
never made (or a call left unanswered), an unknown `previous_response_id`, an
Anthropic conversation that opens with the assistant or lacks `anthropic-version`.
`GET /_stats` answers `{"requests": N, "by_path": {...}}` (every request but its
own), `POST /_stats/reset` zeroes it.

A conversation is found by its first user message (and, optionally, a phrase its
system prompt contains); its N-th answer is the script's N-th turn, N being the
number of model turns the request already carries (each API module says how it
counts). A turn is one of

    {"content": "text"}                      a plain answer
    {"json": {...}}                          a JSON answer (its compact text)
    {"tool_calls": [{"name", "arguments"}]}  one or several tool calls
    {"refusal": "text"}                      a refusal
    {"finish_reason": "length", ...}         any turn may name its finish reason
    {"usage": {"prompt_tokens": N, ...}, ...} and the token counts it reports (Chat Completions)

and may carry `"fail_first": [{"status": 429, "retry_after": "0"}, ...]` (those
answers come first, once each, then the turn) or `"fail_always": {"status": 500}`.
A turn that calls a tool the request does not offer is not played (400
`unoffered_tool`): a real model calls only what it is offered. A turn with
`"unoffered": true` plays it anyway: a model the host must not trust, for the
tests of the host's own refusal.

A script file is `{"conversations": [{"user", "turns", "system_contains"?}, ...]}`.
Run it by hand for the examples (any non-empty key is accepted):
    python tests/_model_server --port 8792 --script examples/llm-agent/model-script.json
"""

from .app import ModelServer, RequestStats
from .chat import REPORTED_SUFFIX
from .script import ModelScript, Received, reply

__all__ = [
    "REPORTED_SUFFIX",
    "ModelScript",
    "ModelServer",
    "Received",
    "RequestStats",
    "reply",
]
