"""`AnthropicModel`: the Messages API with tools, through the official `anthropic` package."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from runtime.models import translate_anthropic as translate
from runtime.models.hosted import HostedModel
from runtime.models.pricing import Tokens
from runtime.tools import ToolSpec
from store import Message
from store import ToolCall

DEFAULT_MAX_TOKENS = 4096
"""The Messages API requires a cap on the reply's length."""


class AnthropicModel(HostedModel):
    """`AnthropicModel("claude-sonnet-5")`; the key comes from `ANTHROPIC_API_KEY` and the
    base URL from `base_url` or `ANTHROPIC_BASE_URL`."""

    provider = "anthropic"
    package = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    client_class = "AsyncAnthropic"
    example = "claude-sonnet-5"

    def request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": translate.messages(messages),
        }
        if system := translate.system(messages):
            body["system"] = system
        if tools:
            body["tools"] = translate.tools(tools)
        return body

    async def send(self, body: dict[str, Any]) -> Mapping[str, Any]:
        message = await self.client.messages.create(**body)
        answer: Mapping[str, Any] = message.model_dump(mode="json")
        return answer

    def parse(self, data: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...], Tokens]:
        content, calls = translate.reply(data)
        return content, calls, translate.tokens(data)
