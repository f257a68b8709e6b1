"""What one call counts against the limits of its tool: each limit's key and the call's
amount, worked out from the call by the limit's CEL expressions (pure functions).

An expression that fails, a key missing from the call, or an amount that is not a whole
number of at least 0 never lets the call through: its limit's state is an `error`, and the
call is asked (`runtime.spend.admission`), with the reason on the card. A plain path
(`args.customer_id`, `run.agent`) is read straight from the call, as CEL would read it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from runtime.approvals import Facts
from runtime.approvals import rule_activation
from runtime.approvals import rule_program
from runtime.spend.config import ALL
from runtime.spend.config import LimitConfig
from store.records import LimitState

MAX_KEY = 200
"""A key longer than this is kept as its digest (one counter per value all the same)."""
_PATH = re.compile(r"^(args|run)((?:\.[A-Za-z_][A-Za-z0-9_]*)+)$")
_NUMBER = re.compile(r"^\d+$")


class LimitEvaluationError(Exception):
    """A limit's key or amount could not be worked out for a call."""


def applying(limits: Mapping[str, LimitConfig], tool: str) -> list[tuple[str, LimitConfig]]:
    return [(name, limit) for name, limit in limits.items() if tool in limit.tools]


def states(
    limits: Mapping[str, LimitConfig], tool: str, args: Mapping[str, Any], facts: Facts
) -> tuple[LimitState, ...]:
    """Each limit of `tool` as this call counts against it (`used` not read yet)."""
    found = []
    call = CallValues(tool, args, facts)
    for name, limit in applying(limits, tool):
        base = state_of(name, limit)
        try:
            key, amount = call.key(limit.key), call.amount(limit.amount)
        except LimitEvaluationError as exc:
            found.append(base.model_copy(update={"outcome": "error", "error": str(exc)}))
            continue
        found.append(base.model_copy(update={"key": key, "amount": amount}))
    return tuple(found)


def state_of(name: str, limit: LimitConfig) -> LimitState:
    return LimitState(
        name=name,
        mode=limit.mode,
        window=limit.spend_window,
        max=limit.max,
        over="deny" if limit.deny is not None else "ask",
        money=limit.money,
        each=limit.each,
    )


def amounts(
    limits: Mapping[str, LimitConfig], tool: str, args: Mapping[str, Any], facts: Facts
) -> dict[str, int]:
    """Each limit's amount for these arguments (an edit's), where it can be worked out."""
    return {s.name: s.amount for s in states(limits, tool, args, facts) if s.outcome != "error"}


class CallValues:
    """One call's values as expressions see them; CEL's activation made once, if needed."""

    def __init__(self, tool: str, args: Mapping[str, Any], facts: Facts) -> None:
        self.tool, self.args, self.facts = tool, args, facts
        self._context: dict[str, Any] | None = None

    def key(self, expression: str) -> str:
        if expression == ALL:
            return ALL
        value = self.value(expression)
        if isinstance(value, bool) or not isinstance(value, str | int):
            text = json.dumps(value, sort_keys=True, default=str)
        else:
            text = str(value)
        if not text:
            raise LimitEvaluationError(f"`{expression}` is empty for this call")
        if len(text) > MAX_KEY:
            from store.digest import canonical_digest

            text = f"sha256:{canonical_digest(text)}"
        return text

    def amount(self, expression: str) -> int:
        if _NUMBER.match(expression):
            return int(expression)
        value = self.value(expression)
        if isinstance(value, bool) or not isinstance(value, int):
            raise LimitEvaluationError(
                f"`{expression}` gave {value!r}, not a whole number (count in cents)"
            )
        if value < 0:
            raise LimitEvaluationError(f"`{expression}` gave {value}, less than 0")
        return int(value)

    def value(self, expression: str) -> Any:
        path = _PATH.match(expression)
        if path is not None:
            return self._path(path[1], path[2].split(".")[1:], expression)
        if self._context is None:
            self._context = rule_activation(self.tool, self.args, self.facts)
        try:
            value = rule_program(expression).evaluate(dict(self._context))
        except Exception as exc:  # cel-python raises CELEvalError and, rarely, Python's own
            raise LimitEvaluationError(f"`{expression}` failed: {_one_line(exc)}") from None
        return _plain(value)

    def _path(self, root: str, names: list[str], expression: str) -> Any:
        facts = self.facts
        value: Any = dict(self.args) if root == "args" else _run(facts)
        for name in names:
            if not isinstance(value, Mapping) or name not in value:
                raise LimitEvaluationError(f"`{expression}`: the call has no {name!r}")
            value = value[name]
        return value


def _run(facts: Facts) -> dict[str, Any]:
    return {
        "id": facts.run_id,
        "agent": facts.agent,
        "task": facts.task,
        "requested_by": facts.requested_by,
        "usage": dict(facts.usage),
    }


def _plain(value: Any) -> Any:
    """A CEL value as plain JSON-like Python (its types subclass Python's; a CEL bool is an
    int to Python, so it is asked first)."""
    from celpy import celtypes

    if isinstance(value, celtypes.BoolType | bool):
        return bool(value)
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _one_line(exc: BaseException) -> str:
    text = str(exc.args[0] if exc.args else exc)
    return " ".join(text.split())[:200]
