"""What both providers' wire formats read back the same way into a Signoff transcript: a
content field's text, and a tool's result answering a call named earlier in the transcript."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from store import Message


def text(content: Any) -> str:
    """A content field's text: the string itself, or its text parts joined."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if part.get("type") == "text")


def tool_result(call_id: str, names: Mapping[str, str], content: Any) -> Message:
    """The tool message answering call `call_id` (named by the call it answers, if seen)."""
    name = names.get(call_id)
    return Message(role="tool", tool_call_id=call_id, name=name, content=text(content))
