"""What an approver needs beside the call: the facts a tool's `context=` function reads (the
order's total, the customer's refunds this month), gathered when the approval is asked and
again right before the approved call runs, and the agent's stated reason for the call.

A context function that fails or runs past its timeout leaves "context unavailable: why" on
the card and never holds up the ask. Right before the call runs the facts are read again: if
they changed (their digest differs from the one approved), the call does not run and is asked
again, showing what changed ("order total was $25.00, now $40.00").
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from runtime.tools import Tool
from store import Message
from store.digest import args_digest

REASON_LIMIT = 280
"""Characters of the agent's stated reason kept (the model's text, shortened)."""


@dataclass(frozen=True, slots=True)
class Context:
    """The facts a context function read, or why it could not."""

    facts: dict[str, Any] | None = None
    unavailable: str | None = None

    @property
    def digest(self) -> str | None:
        return None if self.facts is None else args_digest(self.facts)


async def gather(tool: Tool, args: dict[str, Any]) -> Context | None:
    """Run the tool's context function on the call's arguments (None: it has none)."""
    if tool.context is None:
        return None
    try:
        async with asyncio.timeout(tool.context_timeout):
            if inspect.iscoroutinefunction(tool.context):
                found = await tool.context(**args)
            else:
                found = await asyncio.to_thread(tool.context, **args)
    except TimeoutError:
        return Context(unavailable=f"it took longer than {tool.context_timeout:g}s")
    except Exception as exc:
        return Context(unavailable=f"{type(exc).__name__}: {str(exc)[:200]}")
    facts = to_jsonable_python(found, fallback=repr)
    if not isinstance(facts, dict):
        return Context(unavailable=f"it returned {type(facts).__name__}, not facts by name")
    return Context(facts=facts)


def stated_reason(messages: Sequence[Message], call_id: str) -> str | None:
    """The text of the model's turn that made the call, shortened; None if it said nothing."""
    for message in reversed(messages):
        if message.role == "assistant" and any(c.id == call_id for c in message.tool_calls):
            text = " ".join(message.content.split())
            if not text:
                return None
            return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 1] + "…"
    return None


def changes(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What changed, in words: "order total was $25.00, now $40.00"."""
    names = sorted(set(before) | set(after))
    said = [
        f"{name.replace('_', ' ')} was {_value(before.get(name))}, now {_value(after.get(name))}"
        for name in names
        if before.get(name) != after.get(name)
    ]
    return "; ".join(said) or "the facts changed"


def _value(value: Any) -> str:
    return "none" if value is None else str(value)
