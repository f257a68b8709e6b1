"""The policies' `sensitive_results` applied to a tool's result wherever it is shown: by the
surfaces (`bot.masking`) and by the runtime's own words about a result (a fenced-off worker's
late result, kept as evidence on a page and in the log). Only what is shown is masked: the
store keeps every result whole, for the run's model and for replay."""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from runtime.approvals import Policies
from runtime.records import SENSITIVE_MASK
from runtime.records import AuditEvent
from runtime.records import Effect
from runtime.records import Message


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
