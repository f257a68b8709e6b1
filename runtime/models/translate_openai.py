"""Signoff's transcript to OpenAI Chat Completions messages and back; pure functions.

A request is a function of the transcript alone, so a run resumed from its checkpoints in a
fresh process sends byte for byte the request it would have sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from runtime.model import UNPARSED_ARGUMENTS
from runtime.model import unparsed_arguments
from runtime.models import readback
from runtime.models.pricing import Tokens
from runtime.tools import ToolSpec
from store import Message
from store import ToolCall


def tools(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            },
        }
        for spec in specs
    ]


def messages(transcript: Sequence[Message]) -> list[dict[str, Any]]:
    return [_message(m) for m in transcript]


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role != "assistant":
        return {"role": message.role, "content": message.content}
    out: dict[str, Any] = {"role": "assistant", "content": message.content or None}
    if message.tool_calls:
        out["tool_calls"] = [_call(c) for c in message.tool_calls]
    elif out["content"] is None:
        out["content"] = ""
    return out


def _call(call: ToolCall) -> dict[str, Any]:
    raw = unparsed_arguments(call)
    arguments = raw if raw is not None else arguments_json(call.arguments)
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def arguments_json(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def parse_arguments(raw: str) -> dict[str, Any]:
    """A call's arguments; text that is not a JSON object is kept whole for the driver to
    send back to the model as an error."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {UNPARSED_ARGUMENTS: raw}
    return value if isinstance(value, dict) else {UNPARSED_ARGUMENTS: raw}


def reply(completion: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of a chat completion's first choice."""
    choices = completion.get("choices") or []
    if not choices:
        raise ValueError("the completion has no choices")
    message = choices[0].get("message") or {}
    content = message.get("content") or message.get("refusal") or ""
    calls = tuple(
        ToolCall(
            id=c.get("id") or "",
            name=(c.get("function") or {}).get("name") or "",
            arguments=parse_arguments((c.get("function") or {}).get("arguments") or ""),
        )
        for c in message.get("tool_calls") or ()
        if c.get("type", "function") == "function"
    )
    return content, calls


def tokens(completion: Mapping[str, Any]) -> Tokens:
    """Prompt tokens include the cached ones, which are billed apart."""
    usage = completion.get("usage") or {}
    prompt = usage.get("prompt_tokens") or 0
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return Tokens(
        input=prompt - cached, output=usage.get("completion_tokens") or 0, cached_input=cached
    )


def transcript(request_messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Chat Completions messages as a Signoff transcript (the inverse of `messages`)."""
    names: dict[str, str] = {}
    out: list[Message] = []
    for m in request_messages:
        role = m["role"]
        if role == "tool":
            call_id = m["tool_call_id"]
            out.append(readback.tool_result(call_id, names, m.get("content")))
        elif role == "assistant":
            content, calls = reply({"choices": [{"message": m}]})
            names.update({c.id: c.name for c in calls})
            out.append(Message(role="assistant", content=content, tool_calls=calls))
        else:
            kind = "system" if role in ("system", "developer") else "user"
            out.append(Message(role=kind, content=readback.text(m.get("content"))))
    return out
