"""A run as people may read it: the arguments its tools mark sensitive masked in the model's
tool calls, and the result fields its policies mark sensitive (`sensitive_results`) masked in
every result shown. Which arguments are sensitive is read from what the run recorded (its
effects and approvals carry their tool's list), so no agent needs to be loaded; which result
fields are, from the policies of the process showing them. Both are masked only when shown:
the store keeps them whole, for the run's model and for replay."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from runtime.approvals.policy import Policies
from runtime.records import (
    SENSITIVE_MASK,
    Approval,
    AuditEvent,
    Checkpoint,
    Effect,
    Message,
    masked,
)


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


def masked_fields(value: Any, fields: Sequence[str]) -> Any:
    """`value` with the value of every key named in `fields` masked, at any depth."""
    if isinstance(value, Mapping):
        return {
            key: SENSITIVE_MASK if key in fields else masked_fields(item, fields)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [masked_fields(item, fields) for item in value]
    return value


class ResultMasks:
    """The policies' `sensitive_results`, applied to what shows a tool's result: an effect's
    `result`, a tool message of the transcript (JSON text), an audit event's `result`."""

    def __init__(self, policies: Policies) -> None:
        self.policies = policies

    def any(self) -> bool:
        every = [self.policies.default, *self.policies.tools.values()]
        return any(policy.sensitive_results for policy in every)

    def result(self, tool: str, value: Any) -> Any:
        fields = self.policies.sensitive_results(tool)
        return masked_fields(value, fields) if fields else value

    def effect(self, effect: Effect) -> Effect:
        shown = self.result(effect.tool, effect.result)
        return effect if shown is effect.result else effect.model_copy(update={"result": shown})

    def effects(self, effects: Iterable[Effect]) -> list[Effect]:
        return [self.effect(effect) for effect in effects]

    def message(self, message: Message) -> Message:
        """A tool message with its result's sensitive fields masked (a result that is not
        JSON has no fields, and is shown as it is)."""
        if message.role != "tool" or not message.name or not message.content:
            return message
        fields = self.policies.sensitive_results(message.name)
        if not fields:
            return message
        try:
            value = json.loads(message.content)
        except ValueError:
            return message
        shown = masked_fields(value, fields)
        if shown == value:
            return message
        text = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
        return message.model_copy(update={"content": text})

    def events(self, events: Iterable[AuditEvent], tools: Mapping[str, str]) -> list[AuditEvent]:
        """Audit events with the `result` they carry (a fenced-off worker's late result)
        masked; `tools` names the tool of each call id."""
        return [self._event(event, tools) for event in events]

    def _event(self, event: AuditEvent, tools: Mapping[str, str]) -> AuditEvent:
        if event.detail.get("result") is None:
            return event
        tool = tools.get(str(event.detail.get("call_id")), "")  # unknown: the default's fields
        detail = event.detail | {"result": self.result(tool, event.detail["result"])}
        return event.model_copy(update={"detail": detail})


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
