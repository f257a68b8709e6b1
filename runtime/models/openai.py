"""`OpenAIModel`: Chat Completions with tools, through the official `openai` package.

Chat Completions rather than the Responses API: a Signoff run keeps its whole transcript
itself and sends it every turn, which is what Chat Completions is; the Responses API's
server-side conversation state would be a second copy of the run that a resumed or forked
run could not rebuild byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from runtime.models import translate_openai as translate
from runtime.models.hosted import HostedModel
from runtime.models.pricing import Tokens
from runtime.tools import ToolSpec
from store import Message
from store import ToolCall


class OpenAIModel(HostedModel):
    """`OpenAIModel("gpt-5.5")`; the key comes from `OPENAI_API_KEY` and the base URL
    from `base_url` or `OPENAI_BASE_URL` (proxies, gateways, compatible servers)."""

    provider = "openai"
    package = "openai"
    key_env = "OPENAI_API_KEY"
    client_class = "AsyncOpenAI"
    example = "gpt-5.5"

    def request(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": translate.messages(messages)}
        if tools:
            body["tools"] = translate.tools(tools)
        if self.max_tokens is not None:
            body["max_completion_tokens"] = self.max_tokens
        return body

    async def send(self, body: dict[str, Any]) -> Mapping[str, Any]:
        completion = await self.client.chat.completions.create(**body)
        answer: Mapping[str, Any] = completion.model_dump(mode="json")
        return answer

    def parse(self, data: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...], Tokens]:
        content, calls = translate.reply(data)
        return content, calls, translate.tokens(data)
