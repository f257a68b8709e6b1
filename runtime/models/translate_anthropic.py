"""Signoff's transcript to Anthropic Messages content blocks and back; pure functions.

The system prompt goes in the request's `system` field; tool results are `tool_result`
blocks of the next user turn, consecutive messages of one role share a turn, and a result
that says the call did not happen (an error, a decline, "did not happen, according to ...")
is marked `is_error`. A request is a function of the transcript alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from runtime.models import readback
from runtime.models.pricing import Tokens
from runtime.tools import ToolSpec
from store import Message
from store import ToolCall

Block = dict[str, Any]


def tools(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}
        for spec in specs
    ]


def system(transcript: Sequence[Message]) -> str:
    return "\n\n".join(m.content for m in transcript if m.role == "system" and m.content)


def messages(transcript: Sequence[Message]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in transcript:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[Block]:
    if message.role == "tool":
        result: Block = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if did_not_run(message.content):
            result["is_error"] = True
        return [result]
    blocks: list[Block] = [{"type": "text", "text": message.content}] if message.content else []
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
        for c in message.tool_calls
    )
    return blocks


def did_not_run(content: str) -> bool:
    """Whether a tool message says the call failed or was not executed."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and ("error" in value or value.get("executed") is False)


def reply(message: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...]]:
    """The text (its blocks joined) and tool calls of a Messages response."""
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in message.get("content") or ():
        if block.get("type") == "text":
            text.append(block.get("text") or "")
        elif block.get("type") == "tool_use":
            arguments = block.get("input")
            calls.append(
                ToolCall(
                    id=block.get("id") or "",
                    name=block.get("name") or "",
                    arguments=arguments if isinstance(arguments, dict) else {},
                )
            )
    return "".join(text), tuple(calls)


def tokens(message: Mapping[str, Any]) -> Tokens:
    """`input_tokens` excludes cache reads and writes, which are reported (and billed) apart."""
    usage = message.get("usage") or {}
    return Tokens(
        input=usage.get("input_tokens") or 0,
        output=usage.get("output_tokens") or 0,
        cached_input=usage.get("cache_read_input_tokens") or 0,
        cache_write=usage.get("cache_creation_input_tokens") or 0,
    )


def transcript(system_prompt: str, turns: Sequence[Mapping[str, Any]]) -> list[Message]:
    """A Messages request as a Signoff transcript (the inverse of `system` + `messages`)."""
    out = [Message(role="system", content=system_prompt)] if system_prompt else []
    names: dict[str, str] = {}
    for turn in turns:
        content = turn["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if turn["role"] == "assistant":
            text, calls = reply({"content": content})
            names.update({c.id: c.name for c in calls})
            out.append(Message(role="assistant", content=text, tool_calls=calls))
            continue
        for block in content:
            if block.get("type") == "tool_result":
                call_id = block["tool_use_id"]
                out.append(readback.tool_result(call_id, names, block.get("content")))
            elif block.get("type") == "text":
                out.append(Message(role="user", content=block.get("text") or ""))
    return out
