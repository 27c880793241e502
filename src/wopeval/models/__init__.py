"""Model wire APIs behind one interface (docs/llm.md): Chat Completions, Responses, Messages.

The model recorder (engine/recording/models.py), model replay, the cost of an exchange
and the recording model proxy (api/routes/model_proxy.py) take a `ModelApi`
and never ask which provider is behind it; the in-host LLM lanes build their
requests for one. Each adapter's module says what it records and replays.
"""

from __future__ import annotations

from collections.abc import Mapping

from wopeval.models._api import (
    ApiName,
    InvalidModelRequest,
    ModelAnswer,
    ModelApi,
    ModelRequest,
    Provider,
    StreamAssembler,
    Usage,
)
from wopeval.models._exchange import (
    Endpoint,
    LiveAnswer,
    LiveModelCall,
    ModelCallFailed,
    ModelReplayMiss,
    ModelUpstream,
    UpstreamRequest,
)
from wopeval.models._sse import SseLines
from wopeval.models.chat import ChatAnswer, ChatCompletions, ToolCallRequest
from wopeval.models.messages import Messages
from wopeval.models.responses import Responses

CHAT = ChatCompletions()
RESPONSES = Responses()
MESSAGES = Messages()
APIS: Mapping[ApiName, ModelApi] = {api.name: api for api in (CHAT, RESPONSES, MESSAGES)}
"""Every adapter by the name recorded with its exchanges."""

__all__ = [
    "APIS",
    "CHAT",
    "MESSAGES",
    "RESPONSES",
    "ApiName",
    "ChatAnswer",
    "ChatCompletions",
    "Endpoint",
    "InvalidModelRequest",
    "LiveAnswer",
    "LiveModelCall",
    "Messages",
    "ModelAnswer",
    "ModelApi",
    "ModelCallFailed",
    "ModelReplayMiss",
    "ModelRequest",
    "ModelUpstream",
    "Provider",
    "Responses",
    "SseLines",
    "StreamAssembler",
    "ToolCallRequest",
    "UpstreamRequest",
    "Usage",
]
