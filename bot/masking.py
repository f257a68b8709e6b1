"""A run as people may read it: the arguments its tools mark sensitive masked in the model's
tool calls, and the result fields its policies mark sensitive (`sensitive_results`) masked in
every result shown. Which arguments are sensitive is read from what the run recorded (its
effects and approvals carry their tool's list), so no agent needs to be loaded; which result
fields are, from the policies of the process showing them (`runtime.result_masks`, which the
runtime's own words about a result use too). Both are masked only when shown: the store keeps
them whole, for the run's model and for replay."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Protocol

from runtime.records import Approval
from runtime.records import AuditEvent
from runtime.records import Checkpoint
from runtime.records import Effect
from runtime.records import Message
from runtime.records import masked
from runtime.result_masks import ResultMasks as ResultMasks
from runtime.result_masks import masked_fields as masked_fields


def sensitive_by_tool(records: Iterable[Effect | Approval]) -> dict[str, tuple[str, ...]]:
    """Each tool's sensitive argument names, as the run's records carry them."""
    found: dict[str, set[str]] = {}
    for record in records:
        if record.sensitive:
            found.setdefault(record.tool, set()).update(record.sensitive)
    return {tool: tuple(sorted(names)) for tool, names in found.items()}


def masked_history(
    checkpoints: Sequence[Checkpoint],
    sensitive: Mapping[str, Sequence[str]],
    results: ResultMasks | None = None,
) -> list[Checkpoint]:
    """The checkpoints with sensitive arguments masked in their tool calls and, given
    `results`, sensitive result fields in their tool results."""
    if not sensitive and (results is None or not results.any()):
        return list(checkpoints)
    return [
        cp.model_copy(
            update={"messages": tuple(_masked(m, sensitive, results) for m in cp.messages)}
        )
        for cp in checkpoints
    ]


def _masked(
    message: Message, sensitive: Mapping[str, Sequence[str]], results: ResultMasks | None
) -> Message:
    if results is not None:
        message = results.message(message)
    if not any(call.name in sensitive for call in message.tool_calls):
        return message
    calls = tuple(
        call.model_copy(update={"arguments": masked(call.arguments, sensitive[call.name])})
        if call.name in sensitive
        else call
        for call in message.tool_calls
    )
    return message.model_copy(update={"tool_calls": calls})


class EffectsOf(Protocol):
    """The one query `masked_events` makes (`runtime.queries.Queries` has it)."""

    async def effects(self, run_id: str) -> list[Effect]: ...


async def masked_events(
    queries: EffectsOf, events: Sequence[AuditEvent], masks: ResultMasks
) -> list[AuditEvent]:
    """Audit events as people and exports may read them: a result an event carries (a
    fenced-off worker's late result) with its tool's sensitive fields masked."""
    if not masks.any():
        return list(events)
    runs = {e.run_id for e in events if e.run_id and e.detail.get("result") is not None}
    tools = {
        effect.call_id: effect.tool for run_id in runs for effect in await queries.effects(run_id)
    }
    return masks.events(events, tools)
