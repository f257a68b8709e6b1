"""A run's transcript as people may read it: the arguments its tools mark sensitive masked
in the model's tool calls. Which arguments are sensitive is read from what the run recorded
(its effects and approvals carry their tool's list), so no agent needs to be loaded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from runtime.records import Approval, Checkpoint, Effect, Message, masked


def sensitive_by_tool(records: Iterable[Effect | Approval]) -> dict[str, tuple[str, ...]]:
    """Each tool's sensitive argument names, as the run's records carry them."""
    found: dict[str, set[str]] = {}
    for record in records:
        if record.sensitive:
            found.setdefault(record.tool, set()).update(record.sensitive)
    return {tool: tuple(sorted(names)) for tool, names in found.items()}


def masked_history(
    checkpoints: Sequence[Checkpoint], sensitive: Mapping[str, Sequence[str]]
) -> list[Checkpoint]:
    if not sensitive:
        return list(checkpoints)
    return [
        cp.model_copy(update={"messages": tuple(_masked(m, sensitive) for m in cp.messages)})
        for cp in checkpoints
    ]


def _masked(message: Message, sensitive: Mapping[str, Sequence[str]]) -> Message:
    if not any(call.name in sensitive for call in message.tool_calls):
        return message
    calls = tuple(
        call.model_copy(update={"arguments": masked(call.arguments, sensitive[call.name])})
        if call.name in sensitive
        else call
        for call in message.tool_calls
    )
    return message.model_copy(update={"tool_calls": calls})
