"""The limits on what a client may hand Signoff, in one place: the HTTP API's request models
(`bot.requests`) and the CLI check against these numbers, so both refuse the same input.

Plain Python only (no pydantic, no aiohttp): anything may import it cheaply.
"""

from __future__ import annotations

from typing import Any

MAX_ID = 128
ID_PATTERN = rf"^[A-Za-z0-9_.:\-]{{1,{MAX_ID}}}$"
"""Ids chosen by clients (runs, approvals): safe in URLs, Slack messages and shells."""

MAX_AGENT = 200
"""An agent's name, in characters."""
MAX_TASK = 20_000
"""A run's task, in characters."""
MAX_REQUESTER = 64
"""Who asked for a run or an approval (a Slack user id), in characters."""
MAX_TOOL = 200
"""A tool's (or a policy's) name, in characters."""
MAX_REASON = 3_000
"""Why a decision or a cancellation was made, in characters."""
MAX_ARGS_BYTES = 64 * 1024
"""Arguments (of an approval, or edited in a decision) as JSON, in bytes."""
MAX_RESUME_STATE = 512 * 1024
"""What a client keeps with an approval to resume from (`resume_state`), in characters:
room for a paused agent's transcript, well inside the API's 1 MiB body."""
MAX_DEPTH = 32
"""Arguments nest at most this many objects and arrays deep, the arguments object itself
counted as the first level: far past any real tool's arguments, far below where encoding
them for storage runs out of stack (about 250 levels)."""


def nesting_depth(value: Any) -> int:
    """How many objects and arrays deep `value` nests (a scalar is 0, `{}` is 1). Iterative,
    so a hostile value cannot exhaust the stack; it stops counting past `MAX_DEPTH + 1`."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        todo.extend((child, level + 1) for child in children)
    return deepest


def check_args(args: Any) -> None:
    """Refuse arguments nested deeper than `MAX_DEPTH` or larger than `MAX_ARGS_BYTES` as
    JSON, with a reason a client can act on (ValueError)."""
    import json

    if nesting_depth(args) > MAX_DEPTH:
        raise ValueError(f"the arguments nest deeper than the limit of {MAX_DEPTH} levels")
    try:
        size = len(json.dumps(args).encode())
    except ValueError as exc:  # an integer too long to write out in decimal
        raise ValueError(f"the arguments cannot be written as JSON: {plain_reason(exc)}") from None
    if size > MAX_ARGS_BYTES:
        raise ValueError(f"the arguments are over the limit of {MAX_ARGS_BYTES} bytes as JSON")


def plain_reason(exc: BaseException) -> str:
    """An error's message without advice meant for Python programmers (the interpreter's limit
    on integer digits names `sys.set_int_max_str_digits()`)."""
    text = str(exc)
    if "int_max_str_digits" in text or "integer string conversion" in text:
        return "a number has too many digits"
    return text
